//! [`ResourceVersion`]: a `metadata.resourceVersion`, comparable where the server makes it so.
//!
//! The Kubernetes API long called resource versions opaque strings. KEP-5504 (Kubernetes 1.35)
//! made them comparable for built-in types: a resource version is a decimal integer without
//! leading zeros, and a larger one is newer. etcd-backed servers (every kube-apiserver, the
//! in-process test server of `informer-testing`) have always given integers; an aggregated API
//! server may give anything. So a version is [comparable](ResourceVersion::is_comparable) when
//! it has that form, and opaque otherwise; two versions can be ordered only when both are
//! comparable. That is client-go's `resourceversion.CompareResourceVersion`, which orders
//! integers of any length (by length, then digit by digit), not only those that fit a `u64`.

use std::cmp::Ordering;
use std::fmt;

/// A resource version, as a server sent it.
///
/// Guarantees: [`partial_cmp`](PartialOrd::partial_cmp) (and so `<`, `>`) orders two versions
/// exactly when both are [comparable](Self::is_comparable) (decimal integers without leading
/// zeros, any length), and says nothing (`None`) otherwise; equality is string equality.
/// Nothing here ever fails: an opaque version is a valid version that cannot be ordered.
///
/// ```
/// use informer_core::ResourceVersion;
///
/// let old = ResourceVersion::new("998");
/// let new = ResourceVersion::new("1001");
/// assert!(old < new); // 998 < 1001, although "998" > "1001" as strings
/// assert!(ResourceVersion::new("99999999999999999999999") > new); // beyond u64
/// let opaque = ResourceVersion::new("v7-abc");
/// assert!(!opaque.is_comparable());
/// assert_eq!(opaque.partial_cmp(&new), None);
/// assert_eq!(new.as_u64(), Some(1001));
/// ```
#[derive(Clone, PartialEq, Eq, Hash, Default)]
pub struct ResourceVersion(String);

impl ResourceVersion {
    /// The version `rv` (any string).
    pub fn new(rv: impl Into<String>) -> Self {
        Self(rv.into())
    }

    /// The version as the server sent it.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether the version is a decimal integer without leading zeros (KEP-5504's form), so
    /// that it can be ordered against another such version.
    ///
    /// ```
    /// use informer_core::ResourceVersion;
    /// assert!(ResourceVersion::new("42").is_comparable());
    /// assert!(!ResourceVersion::new("042").is_comparable());
    /// assert!(!ResourceVersion::new("").is_comparable());
    /// ```
    pub fn is_comparable(&self) -> bool {
        is_comparable(&self.0)
    }

    /// The version as an integer, if it is comparable and fits a `u64` (every etcd revision
    /// does).
    pub fn as_u64(&self) -> Option<u64> {
        as_u64(&self.0)
    }
}

impl PartialOrd for ResourceVersion {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        compare(&self.0, &other.0)
    }
}

impl fmt::Debug for ResourceVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl fmt::Display for ResourceVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for ResourceVersion {
    fn from(rv: &str) -> Self {
        Self::new(rv)
    }
}

impl From<String> for ResourceVersion {
    fn from(rv: String) -> Self {
        Self(rv)
    }
}

/// Whether `rv` is a decimal integer without leading zeros (see [`ResourceVersion`]).
pub fn is_comparable(rv: &str) -> bool {
    let bytes = rv.as_bytes();
    match bytes {
        [] => false,
        [b'0'] => true,
        [b'0', ..] => false,
        _ => bytes.iter().all(u8::is_ascii_digit),
    }
}

/// Orders two resource versions given as strings: `None` unless both are comparable (see
/// [`ResourceVersion`]).
///
/// ```
/// use std::cmp::Ordering;
/// use informer_core::resource_version::compare;
/// assert_eq!(compare("10", "9"), Some(Ordering::Greater));
/// assert_eq!(compare("10", "x"), None);
/// ```
pub fn compare(a: &str, b: &str) -> Option<Ordering> {
    if !is_comparable(a) || !is_comparable(b) {
        return None;
    }
    // Without leading zeros, the longer integer is the larger; of two as long, the first
    // differing digit decides, which is byte order.
    Some(a.len().cmp(&b.len()).then_with(|| a.cmp(b)))
}

/// `rv` as an integer, if it is comparable and fits a `u64`.
pub fn as_u64(rv: &str) -> Option<u64> {
    if is_comparable(rv) {
        rv.parse().ok()
    } else {
        None
    }
}

/// Whether `candidate` is older than `current`: `true` only when both are comparable and
/// `candidate < current` (an opaque version is never "older").
///
/// ```
/// use informer_core::resource_version::is_older;
/// assert!(is_older("9", "10"));
/// assert!(!is_older("10", "10"));
/// assert!(!is_older("abc", "10"));
/// ```
pub fn is_older(candidate: &str, current: &str) -> bool {
    compare(candidate, current) == Some(Ordering::Less)
}

#[cfg(test)]
mod tests;
