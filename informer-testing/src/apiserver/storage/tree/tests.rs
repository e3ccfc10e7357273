use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

use proptest::prelude::*;

use super::Tree;

fn contents(tree: &Tree<u32>) -> Vec<(String, u32)> {
    tree.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

fn bound(b: &Bound<String>) -> Bound<&str> {
    match b {
        Bound::Included(k) => Bound::Included(k.as_str()),
        Bound::Excluded(k) => Bound::Excluded(k.as_str()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

#[derive(Clone, Debug)]
enum Op {
    Insert(String, u32),
    Remove(String),
}

fn key() -> impl Strategy<Value = String> {
    "[a-e]{1,3}"
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (key(), any::<u32>()).prop_map(|(k, v)| Op::Insert(k, v)),
        key().prop_map(Op::Remove),
    ]
}

fn bound_strategy() -> impl Strategy<Value = Bound<String>> {
    prop_oneof![
        Just(Bound::Unbounded),
        key().prop_map(Bound::Included),
        key().prop_map(Bound::Excluded),
    ]
}

proptest! {
    #[test]
    fn behaves_like_a_btree_map(ops in proptest::collection::vec(op(), 0..200)) {
        let mut tree = Tree::default();
        let mut model = BTreeMap::new();
        for op in ops {
            match op {
                Op::Insert(k, v) => {
                    prop_assert_eq!(tree.insert(Arc::from(k.as_str()), v), model.insert(k, v));
                }
                Op::Remove(k) => prop_assert_eq!(tree.remove(&k), model.remove(&k)),
            }
            tree.check();
        }
        prop_assert_eq!(tree.len(), model.len());
        prop_assert_eq!(contents(&tree), model.into_iter().collect::<Vec<_>>());
    }

    #[test]
    fn ranges_and_counts_match_a_btree_map(
        keys in proptest::collection::btree_set(key(), 0..60),
        lower in bound_strategy(),
        upper in bound_strategy(),
    ) {
        let mut tree = Tree::default();
        let model: BTreeMap<String, u32> = keys.iter().enumerate().map(|(i, k)| (k.clone(), i as u32)).collect();
        for (k, v) in &model {
            tree.insert(Arc::from(k.as_str()), *v);
        }
        let invalid = match (&lower, &upper) {
            (Bound::Included(l) | Bound::Excluded(l), Bound::Included(u) | Bound::Excluded(u)) => {
                l > u || (l == u && !matches!((&lower, &upper), (Bound::Included(_), Bound::Included(_))))
            }
            _ => false,
        };
        let expected: Vec<(String, u32)> = if invalid {
            Vec::new()
        } else {
            model.range::<String, _>((lower.clone(), upper.clone())).map(|(k, v)| (k.clone(), *v)).collect()
        };
        let got: Vec<(String, u32)> = tree.range(bound(&lower), bound(&upper)).map(|(k, v)| (k.to_string(), *v)).collect();
        prop_assert_eq!(&got, &expected);
        prop_assert_eq!(tree.count(bound(&lower), bound(&upper)), expected.len());
    }

    #[test]
    fn snapshots_keep_their_contents(
        first in proptest::collection::vec(op(), 0..100),
        second in proptest::collection::vec(op(), 0..100),
    ) {
        let apply = |tree: &mut Tree<u32>, ops: &[Op]| for op in ops {
            match op {
                Op::Insert(k, v) => { tree.insert(Arc::from(k.as_str()), *v); }
                Op::Remove(k) => { tree.remove(k); }
            }
        };
        let mut tree = Tree::default();
        apply(&mut tree, &first);
        let snapshot = tree.clone();
        let before = contents(&snapshot);
        apply(&mut tree, &second);
        prop_assert_eq!(contents(&snapshot), before);
        snapshot.check();
        tree.check();
    }
}

#[test]
fn the_shape_depends_only_on_the_keys() {
    let mut forward = Tree::default();
    let mut backward = Tree::default();
    let keys: Vec<String> = (0..500).map(|i| format!("ns/{i:04}")).collect();
    for k in &keys {
        forward.insert(Arc::from(k.as_str()), 1);
    }
    for k in keys.iter().rev() {
        backward.insert(Arc::from(k.as_str()), 2);
    }
    forward.check();
    backward.check();
    fn depth(link: &super::Link<i32>) -> usize {
        link.as_ref()
            .map_or(0, |n| 1 + depth(&n.left).max(depth(&n.right)))
    }
    assert_eq!(depth(&forward.root), depth(&backward.root));
    assert!(depth(&forward.root) < 40, "a treap of 500 keys is shallow");
}

#[test]
fn replacing_a_value_copies_only_one_path() {
    let mut tree = Tree::default();
    for i in 0..1000 {
        tree.insert(Arc::from(format!("{i:04}").as_str()), i);
    }
    let snapshot = tree.clone();
    tree.insert(Arc::from("0500"), -1);
    assert_eq!(snapshot.get("0500"), Some(&500));
    assert_eq!(tree.get("0500"), Some(&-1));
    // Untouched subtrees are shared between the two versions.
    let shared = |a: &super::Link<i32>, b: &super::Link<i32>| match (a, b) {
        (Some(a), Some(b)) => Arc::ptr_eq(a, b),
        _ => false,
    };
    let (old, new) = (snapshot.root.as_ref().unwrap(), tree.root.as_ref().unwrap());
    assert!(shared(&old.left, &new.left) || shared(&old.right, &new.right));
}
