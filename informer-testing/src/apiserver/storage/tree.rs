//! A persistent ordered map from string keys, with subtree sizes.
//!
//! A treap whose nodes are shared through `Arc`: cloning a [`Tree`] is O(1) and gives an
//! immutable snapshot; an insert or removal copies only the O(log n) nodes on the path to
//! its key, so snapshots taken before it keep their contents. Each node knows the size of its
//! subtree, so counting the keys in a range is O(log n) as well (a list's
//! `remainingItemCount` without walking the rest of the collection).
//!
//! A node's priority is a hash of its key, so the shape of a tree depends only on its set of
//! keys: replacing a value never restructures it.

use std::cmp::Ordering;
use std::hash::{Hash as _, Hasher as _};
use std::ops::Bound;
use std::sync::Arc;

type Link<V> = Option<Arc<Node<V>>>;

struct Node<V> {
    key: Arc<str>,
    value: V,
    priority: u64,
    size: usize,
    left: Link<V>,
    right: Link<V>,
}

/// A persistent ordered map; see the module docs.
pub(crate) struct Tree<V> {
    root: Link<V>,
}

impl<V> Clone for Tree<V> {
    fn clone(&self) -> Self {
        Self {
            root: self.root.clone(),
        }
    }
}

impl<V> Default for Tree<V> {
    fn default() -> Self {
        Self { root: None }
    }
}

impl<V> std::fmt::Debug for Tree<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tree").field("len", &self.len()).finish()
    }
}

fn priority(key: &str) -> u64 {
    // SipHash with fixed keys: the same key always gets the same priority.
    let mut hasher = std::hash::DefaultHasher::new();
    key.hash(&mut hasher);
    hasher.finish()
}

fn size<V>(link: &Link<V>) -> usize {
    link.as_ref().map_or(0, |n| n.size)
}

/// Whether `a` belongs above `b` (a max-heap on priority, ties broken by key).
fn above<V>(a: &Node<V>, b: &Node<V>) -> bool {
    (a.priority, &a.key) > (b.priority, &b.key)
}

impl<V: Clone> Node<V> {
    /// A copy of this node with other children.
    fn with_children(&self, left: Link<V>, right: Link<V>) -> Arc<Self> {
        Arc::new(Node {
            key: self.key.clone(),
            value: self.value.clone(),
            priority: self.priority,
            size: 1 + size(&left) + size(&right),
            left,
            right,
        })
    }
}

impl<V> Tree<V> {
    /// The number of keys.
    pub(crate) fn len(&self) -> usize {
        size(&self.root)
    }

    /// Whether there are no keys.
    pub(crate) fn is_empty(&self) -> bool {
        self.root.is_none()
    }

    /// The value at a key.
    pub(crate) fn get(&self, key: &str) -> Option<&V> {
        let mut link = &self.root;
        while let Some(node) = link {
            match key.cmp(&node.key) {
                Ordering::Less => link = &node.left,
                Ordering::Greater => link = &node.right,
                Ordering::Equal => return Some(&node.value),
            }
        }
        None
    }

    /// How many keys lie before a lower bound (`Excluded(k)`: the keys up to and including `k`).
    fn keys_before(&self, bound: Bound<&str>) -> usize {
        let (key, or_equal) = match bound {
            Bound::Unbounded => return 0,
            Bound::Included(key) => (key, false),
            Bound::Excluded(key) => (key, true),
        };
        let mut before = 0;
        let mut link = &self.root;
        while let Some(node) = link {
            match key.cmp(&node.key) {
                Ordering::Less => link = &node.left,
                Ordering::Equal => return before + size(&node.left) + usize::from(or_equal),
                Ordering::Greater => {
                    before += size(&node.left) + 1;
                    link = &node.right;
                }
            }
        }
        before
    }

    /// The number of keys within bounds, in O(log n).
    pub(crate) fn count(&self, lower: Bound<&str>, upper: Bound<&str>) -> usize {
        let end = match upper {
            Bound::Unbounded => self.len(),
            Bound::Included(key) => self.keys_before(Bound::Excluded(key)),
            Bound::Excluded(key) => self.keys_before(Bound::Included(key)),
        };
        end.saturating_sub(self.keys_before(lower))
    }

    /// The entries within bounds, in key order. Building the iterator is O(log n); each step
    /// is amortized O(1).
    pub(crate) fn range<'a>(&'a self, lower: Bound<&str>, upper: Bound<&'a str>) -> Range<'a, V> {
        let mut stack = Vec::new();
        let mut link = &self.root;
        while let Some(node) = link {
            let inside = match lower {
                Bound::Unbounded => true,
                Bound::Included(key) => *node.key >= *key,
                Bound::Excluded(key) => *node.key > *key,
            };
            if inside {
                stack.push(node.as_ref());
                link = &node.left;
            } else {
                link = &node.right;
            }
        }
        Range { stack, upper }
    }

    /// Every entry, in key order.
    #[cfg(test)]
    pub(crate) fn iter(&self) -> Range<'_, V> {
        self.range(Bound::Unbounded, Bound::Unbounded)
    }

    /// Whether a key is present.
    pub(crate) fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }
}

impl<V: Clone> Tree<V> {
    /// Sets the value at a key; returns the value it replaced.
    pub(crate) fn insert(&mut self, key: Arc<str>, value: V) -> Option<V> {
        let mut replaced = None;
        let priority = priority(&key);
        self.root = Some(insert_at(&self.root, key, value, priority, &mut replaced));
        replaced
    }

    /// Removes a key; returns its value.
    pub(crate) fn remove(&mut self, key: &str) -> Option<V> {
        let mut removed = None;
        let root = remove_at(&self.root, key, &mut removed);
        if removed.is_some() {
            self.root = root;
        }
        removed
    }

    /// Checks the treap invariants (key order, heap order, sizes); for tests.
    #[cfg(test)]
    pub(crate) fn check(&self) {
        fn walk<V>(link: &Link<V>, low: Option<&str>, high: Option<&str>) -> usize {
            let Some(node) = link else { return 0 };
            assert!(low.is_none_or(|l| *node.key > *l), "key order");
            assert!(high.is_none_or(|h| *node.key < *h), "key order");
            for child in [&node.left, &node.right].into_iter().flatten() {
                assert!(!above(child, node), "heap order");
            }
            assert_eq!(node.priority, priority(&node.key));
            let size = 1
                + walk(&node.left, low, Some(&node.key))
                + walk(&node.right, Some(&node.key), high);
            assert_eq!(node.size, size, "subtree size");
            size
        }
        walk(&self.root, None, None);
    }
}

fn insert_at<V: Clone>(
    link: &Link<V>,
    key: Arc<str>,
    value: V,
    priority: u64,
    replaced: &mut Option<V>,
) -> Arc<Node<V>> {
    let Some(node) = link else {
        return Arc::new(Node {
            key,
            value,
            priority,
            size: 1,
            left: None,
            right: None,
        });
    };
    match key.cmp(&node.key) {
        Ordering::Equal => {
            *replaced = Some(node.value.clone());
            Arc::new(Node {
                key: node.key.clone(),
                value,
                priority: node.priority,
                size: node.size,
                left: node.left.clone(),
                right: node.right.clone(),
            })
        }
        Ordering::Less => {
            let left = insert_at(&node.left, key, value, priority, replaced);
            if above(&left, node) {
                // Rotate right: the new child rises above this node.
                let lowered = node.with_children(left.right.clone(), node.right.clone());
                left.with_children(left.left.clone(), Some(lowered))
            } else {
                node.with_children(Some(left), node.right.clone())
            }
        }
        Ordering::Greater => {
            let right = insert_at(&node.right, key, value, priority, replaced);
            if above(&right, node) {
                // Rotate left.
                let lowered = node.with_children(node.left.clone(), right.left.clone());
                right.with_children(Some(lowered), right.right.clone())
            } else {
                node.with_children(node.left.clone(), Some(right))
            }
        }
    }
}

fn remove_at<V: Clone>(link: &Link<V>, key: &str, removed: &mut Option<V>) -> Link<V> {
    let node = link.as_ref()?;
    match key.cmp(&node.key) {
        Ordering::Equal => {
            *removed = Some(node.value.clone());
            merge(&node.left, &node.right)
        }
        Ordering::Less => {
            let left = remove_at(&node.left, key, removed);
            if removed.is_none() {
                return link.clone();
            }
            Some(node.with_children(left, node.right.clone()))
        }
        Ordering::Greater => {
            let right = remove_at(&node.right, key, removed);
            if removed.is_none() {
                return link.clone();
            }
            Some(node.with_children(node.left.clone(), right))
        }
    }
}

/// Joins two treaps whose keys are all ordered (`a` before `b`).
fn merge<V: Clone>(a: &Link<V>, b: &Link<V>) -> Link<V> {
    match (a, b) {
        (None, _) => b.clone(),
        (_, None) => a.clone(),
        (Some(x), Some(y)) => Some(if above(x, y) {
            x.with_children(x.left.clone(), merge(&x.right, b))
        } else {
            y.with_children(merge(a, &y.left), y.right.clone())
        }),
    }
}

/// An in-order iterator over part of a [`Tree`].
pub(crate) struct Range<'a, V> {
    /// Nodes still to visit, the next on top; each one's right subtree is not yet pushed.
    stack: Vec<&'a Node<V>>,
    upper: Bound<&'a str>,
}

impl<'a, V> Iterator for Range<'a, V> {
    type Item = (&'a Arc<str>, &'a V);

    fn next(&mut self) -> Option<Self::Item> {
        let node = self.stack.pop()?;
        let inside = match self.upper {
            Bound::Unbounded => true,
            Bound::Included(key) => *node.key <= *key,
            Bound::Excluded(key) => *node.key < *key,
        };
        if !inside {
            self.stack.clear();
            return None;
        }
        let mut link = &node.right;
        while let Some(child) = link {
            self.stack.push(child);
            link = &child.left;
        }
        Some((&node.key, &node.value))
    }
}

#[cfg(test)]
mod tests;
