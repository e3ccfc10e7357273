//! Errors of the core building blocks, one enum per concern.

use thiserror::Error;

/// An object's key could not be computed or parsed.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum KeyError {
    /// The object has no `metadata.name`; it cannot be cached. Fix the producer of the object
    /// (a malformed watch event or list item), it is never given a made-up key.
    #[error("{kind} object has no metadata.name, so it has no key; it was not stored")]
    MissingName {
        /// The Rust type name of the object.
        kind: &'static str,
    },
    /// A key string is not `name` or `namespace/name`.
    #[error("malformed object key {0:?}: expected \"name\" or \"namespace/name\"")]
    Malformed(String),
}

/// An index operation failed.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum IndexError {
    /// `by_index` and friends were given a name no index was registered under.
    #[error("no index named {0:?}; register it with add_indexers first")]
    UnknownIndex(String),
    /// `add_indexers` was given a name that is already registered.
    #[error("an index named {0:?} already exists; index names must be unique")]
    Conflict(String),
}

/// A store operation failed; the store is left unchanged by the failed operation.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum StoreError {
    /// An object had no key.
    #[error(transparent)]
    Key(#[from] KeyError),
    /// An index function failed or named an unknown index.
    #[error(transparent)]
    Index(#[from] IndexError),
}

/// The FIFO between reflector and cache refused an operation.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum FifoError {
    /// An object had no key.
    #[error(transparent)]
    Key(#[from] KeyError),
    /// The FIFO was closed; no more items are accepted or handed out.
    #[error("the FIFO is closed")]
    Closed,
    /// The FIFO does not do what was asked (such as taking a list in parts: see
    /// `Fifo::takes_list_parts`); push the whole list with `Fifo::replace` instead.
    #[error("this FIFO does not support {0}")]
    Unsupported(&'static str),
}
