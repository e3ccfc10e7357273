//! [`StoreVersion`]: the resource version an informer's cache has reached, readable without
//! a lock (what the read-your-own-writes gate of controllers and the
//! `store_resource_version` metric read).

use std::sync::atomic::{AtomicU64, Ordering};

use informer_core::resource_version::as_u64;

/// Nothing applied yet.
const NONE: u64 = 0;
/// Not tracked: the cache is filled out of order (a `DeltaFifo`), or the server's resource
/// versions are not integers.
const UNTRACKED: u64 = u64::MAX;

/// Where an informer's cache stands, as [`StoreVersion::get`] reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reached {
    /// Nothing applied yet.
    Nothing,
    /// Every change up to this resource version is in the cache.
    At(u64),
    /// Unknown, for good: the cache is filled out of order, or versions are opaque.
    Untracked,
}

/// The resource version of the last batch an informer applied in order (an integer; see
/// [`Reached`]). Written by the informer loop once per batch, after the batch is in the
/// cache and before its notifications reach any handler; read by anyone.
#[derive(Debug)]
pub(crate) struct StoreVersion(AtomicU64);

impl StoreVersion {
    /// A version the informer keeps up to date (it applies batches in order).
    pub(crate) fn tracked() -> Self {
        Self(AtomicU64::new(NONE))
    }

    /// A version that is never known (the informer applies batches out of order).
    pub(crate) fn untracked() -> Self {
        Self(AtomicU64::new(UNTRACKED))
    }

    /// The cache has applied everything up to `rv`. An opaque (or out of range) version makes
    /// the version untracked until the next integer one.
    pub(crate) fn set(&self, rv: &str) {
        let value = match as_u64(rv) {
            Some(n) if n != UNTRACKED => n.max(1),
            _ => UNTRACKED,
        };
        self.0.store(value, Ordering::Release);
    }

    pub(crate) fn get(&self) -> Reached {
        match self.0.load(Ordering::Acquire) {
            NONE => Reached::Nothing,
            UNTRACKED => Reached::Untracked,
            n => Reached::At(n),
        }
    }

    /// The version as a number, for metrics (`None` unless [`Reached::At`]).
    pub(crate) fn value(&self) -> Option<u64> {
        match self.get() {
            Reached::At(n) => Some(n),
            Reached::Nothing | Reached::Untracked => None,
        }
    }
}

#[cfg(test)]
mod tests;
