//! A [`StoreWrapper`] for unit tests that records the batches of writes it is given.

use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::ConfigMap;

use super::StoreWrapper;
use crate::error::{KeyError, StoreError};
use crate::store::{Indexer, ReplaceDiff, Store, StoreOp, ThreadSafeStore};

/// Records the size of every batch of writes and counts the replaces it sees; it changes
/// nothing else, unless made [`refusing`](Self::refusing).
pub(crate) struct Recording {
    pub(crate) inner: ThreadSafeStore<ConfigMap>,
    batches: Mutex<Vec<usize>>,
    replaces: Mutex<usize>,
    refuse: bool,
}

impl Recording {
    pub(crate) fn new() -> Self {
        Self {
            inner: ThreadSafeStore::new(),
            batches: Mutex::new(Vec::new()),
            replaces: Mutex::new(0),
            refuse: false,
        }
    }

    /// One that refuses every batch of more than one write (and so changes nothing then).
    pub(crate) fn refusing() -> Self {
        Self {
            refuse: true,
            ..Self::new()
        }
    }

    /// The size of each batch given, in order.
    pub(crate) fn batches(&self) -> Vec<usize> {
        self.batches.lock().unwrap().clone()
    }

    /// How many replaces it was given.
    pub(crate) fn replaces(&self) -> usize {
        *self.replaces.lock().unwrap()
    }
}

impl StoreWrapper for Recording {
    type Object = ConfigMap;

    fn inner(&self) -> &dyn Indexer<ConfigMap> {
        &self.inner
    }

    fn apply(
        &self,
        batch: Vec<StoreOp<ConfigMap>>,
    ) -> Result<Vec<Option<Arc<ConfigMap>>>, StoreError> {
        self.batches.lock().unwrap().push(batch.len());
        if self.refuse && batch.len() > 1 {
            return Err(StoreError::Key(KeyError::Malformed("refused".into())));
        }
        self.inner.apply(batch)
    }

    fn replace(
        &self,
        objects: Vec<Arc<ConfigMap>>,
        resource_version: &str,
    ) -> Result<ReplaceDiff<ConfigMap>, StoreError> {
        *self.replaces.lock().unwrap() += 1;
        self.inner.replace(objects, resource_version)
    }
}
