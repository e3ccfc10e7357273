//! Object keys: `namespace/name`, or `name` for cluster-scoped objects.

use std::fmt;
use std::sync::Arc;

use kube_core::Resource;

use crate::error::KeyError;

/// The identity of an object in a cache: its namespace (if namespaced) and its name.
///
/// `ObjectKey` is what stores are keyed by, what handlers put on workqueues and what
/// reconcilers receive. Cloning is cheap (one reference-counted string, no allocation).
/// It prints as `namespace/name`, or `name` for cluster-scoped objects, which is the
/// same text client-go's `MetaNamespaceKeyFunc` produces.
///
/// Keys compare and sort by namespace (cluster-scoped first), then name.
///
/// ```
/// use informer_core::ObjectKey;
///
/// let key = ObjectKey::new(Some("default"), "web-0");
/// assert_eq!(key.to_string(), "default/web-0");
/// assert_eq!(key.namespace(), Some("default"));
/// assert_eq!("kube-system/dns".parse::<ObjectKey>().unwrap().name(), "dns");
/// assert_eq!(ObjectKey::cluster("node-1").to_string(), "node-1");
/// ```
#[derive(Clone)]
pub struct ObjectKey {
    /// `namespace/name`, or `name` for a cluster-scoped object: one allocation per key.
    text: Arc<str>,
    /// The length of the namespace in `text`; 0 for a cluster-scoped object (an empty
    /// namespace means cluster scoped, so 0 is never a namespace's length).
    ns_len: u32,
}

impl ObjectKey {
    /// A key from an optional namespace and a name. An empty namespace means cluster scoped.
    ///
    /// # Panics
    /// If the namespace is longer than `u32::MAX` bytes.
    #[allow(
        unsafe_code,
        reason = "one allocation per key: namespace/name written in place (see SAFETY below)"
    )]
    pub fn new(namespace: Option<&str>, name: &str) -> Self {
        match namespace.filter(|ns| !ns.is_empty()) {
            None => Self {
                text: Arc::from(name),
                ns_len: 0,
            },
            Some(ns) => {
                let ns_len = u32::try_from(ns.len()).expect("a namespace fits in u32::MAX bytes");
                // One allocation, written in place (an intermediate `String` would cost a
                // second allocation and a copy).
                let len = ns.len() + 1 + name.len();
                let mut bytes = Arc::<[u8]>::new_uninit_slice(len);
                let dst = Arc::get_mut(&mut bytes)
                    .expect("a new Arc is unique")
                    .as_mut_ptr()
                    .cast::<u8>();
                // SAFETY: `dst` is the new allocation of `len` bytes; the three writes fill it
                // exactly, without overlapping each other or the sources. The bytes are two
                // `str`s joined by an ASCII byte, so valid UTF-8, and `str` has the layout of
                // `[u8]`.
                let text = unsafe {
                    std::ptr::copy_nonoverlapping(ns.as_ptr(), dst, ns.len());
                    dst.add(ns.len()).write(b'/');
                    std::ptr::copy_nonoverlapping(name.as_ptr(), dst.add(ns.len() + 1), name.len());
                    Arc::from_raw(Arc::into_raw(bytes.assume_init()) as *const str)
                };
                Self { text, ns_len }
            }
        }
    }

    /// The key of a cluster-scoped object.
    pub fn cluster(name: &str) -> Self {
        Self::new(None, name)
    }

    /// The key of any Kubernetes object, read from its metadata.
    ///
    /// # Errors
    /// [`KeyError::MissingName`] if the object has no `metadata.name` (or an empty one):
    /// such an object cannot be stored, so callers surface the error instead of inventing a key.
    ///
    /// ```
    /// use informer_core::ObjectKey;
    /// use k8s_openapi::api::core::v1::Pod;
    ///
    /// let mut pod = Pod::default();
    /// assert!(ObjectKey::from_resource(&pod).is_err());
    /// pod.metadata.name = Some("web-0".into());
    /// pod.metadata.namespace = Some("default".into());
    /// assert_eq!(ObjectKey::from_resource(&pod).unwrap().to_string(), "default/web-0");
    /// ```
    pub fn from_resource<K: Resource>(obj: &K) -> Result<Self, KeyError> {
        let meta = obj.meta();
        match meta.name.as_deref() {
            Some(name) if !name.is_empty() => Ok(Self::new(meta.namespace.as_deref(), name)),
            _ => Err(KeyError::MissingName {
                kind: short_type_name::<K>(),
            }),
        }
    }

    /// The namespace, or `None` for a cluster-scoped object.
    pub fn namespace(&self) -> Option<&str> {
        match self.ns_len {
            0 => None,
            n => Some(&self.text[..n as usize]),
        }
    }

    /// The name.
    pub fn name(&self) -> &str {
        match self.ns_len {
            0 => &self.text,
            n => &self.text[n as usize + 1..],
        }
    }

    /// Whether this is the key of an object with this namespace and name (an empty namespace
    /// means cluster scoped), compared without building a key.
    ///
    /// ```
    /// use informer_core::ObjectKey;
    ///
    /// let key = ObjectKey::new(Some("default"), "web-0");
    /// assert!(key.is(Some("default"), "web-0"));
    /// assert!(!key.is(None, "web-0"));
    /// assert!(ObjectKey::cluster("n").is(Some(""), "n"));
    /// ```
    pub fn is(&self, namespace: Option<&str>, name: &str) -> bool {
        self.namespace() == namespace.filter(|ns| !ns.is_empty()) && self.name() == name
    }
}

impl PartialEq for ObjectKey {
    /// Equal namespace and name. A key and its clones share one allocation, and compare
    /// without reading the text (a workqueue's `done`).
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.text, &other.text)
            || (self.ns_len == other.ns_len && self.text == other.text)
    }
}

impl Eq for ObjectKey {}

impl std::hash::Hash for ObjectKey {
    /// Hashes the text (equal keys have equal text).
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.text.hash(state);
    }
}

impl PartialOrd for ObjectKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ObjectKey {
    /// By namespace (cluster-scoped first), then by name.
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.namespace(), self.name()).cmp(&(other.namespace(), other.name()))
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl fmt::Debug for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ObjectKey({self})")
    }
}

impl std::str::FromStr for ObjectKey {
    type Err = KeyError;

    /// Parses `namespace/name` or `name`, as client-go's `SplitMetaNamespaceKey`, with one
    /// deliberate difference: a key without a name (`""`, `"ns/"`, `"/"`) is refused with
    /// [`KeyError::Malformed`], where Go returns an empty name. No object has an empty name
    /// (see [`from_resource`](Self::from_resource)), so such a key could never be found. A
    /// leading `/` (an empty namespace) parses as cluster scoped, as in Go.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut parts = s.split('/');
        match (parts.next(), parts.next(), parts.next()) {
            (Some(name), None, None) if !name.is_empty() => Ok(Self::cluster(name)),
            (Some(ns), Some(name), None) if !name.is_empty() => Ok(Self::new(Some(ns), name)),
            _ => Err(KeyError::Malformed(s.to_owned())),
        }
    }
}

impl serde::Serialize for ObjectKey {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for ObjectKey {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

fn short_type_name<K>() -> &'static str {
    let full = std::any::type_name::<K>();
    let base = full.split('<').next().unwrap_or(full);
    base.rsplit("::").next().unwrap_or(base)
}

/// Computes the key of an object.
///
/// Stores and FIFOs take a `KeyFn` so that they work for any object type. The default,
/// [`resource_key`], reads `metadata.namespace` and `metadata.name` of a `kube::Resource`.
pub type KeyFn<K> = fn(&K) -> Result<ObjectKey, KeyError>;

/// The default key function for any `kube::Resource`: `namespace/name` from its metadata.
///
/// ```
/// use informer_core::{resource_key, KeyFn};
/// use k8s_openapi::api::core::v1::ConfigMap;
///
/// let key_fn: KeyFn<ConfigMap> = resource_key::<ConfigMap>;
/// let mut cm = ConfigMap::default();
/// cm.metadata.name = Some("settings".into());
/// assert_eq!(key_fn(&cm).unwrap().to_string(), "settings");
/// ```
pub fn resource_key<K: Resource>(obj: &K) -> Result<ObjectKey, KeyError> {
    ObjectKey::from_resource(obj)
}

#[cfg(test)]
mod tests;
