//! Cache backends beyond the default `informer_core::ThreadSafeStore`.
//!
//! - [`CompactStore`]: keeps objects encoded (compressed JSON) and decodes them on read, with
//!   a small cache of hot objects; several times smaller than decoded objects, at the cost of
//!   a decode on every read that misses the hot cache.
//!
//! Every backend implements [`Store`](informer_core::Store) and
//! [`Indexer`](informer_core::Indexer), so it is chosen per informer with
//! [`InformerBuilder::store`](crate::informer::InformerBuilder::store).

mod compact;

pub use compact::{CompactStore, CompactStoreStats, DEFAULT_HOT_OBJECTS};
