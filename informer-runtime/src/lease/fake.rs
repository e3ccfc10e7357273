//! Test fixtures of leader election and sharding: an in-memory Lease store with
//! resourceVersion checks, per-replica views of it with their own faults, for tests under
//! paused tokio time.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use k8s_openapi::api::coordination::v1::Lease;
use kube::core::Status;
use parking_lot::Mutex;

use super::api::LeaseApi;

#[derive(Default)]
pub(crate) struct FakeLeases {
    leases: Mutex<BTreeMap<String, Lease>>,
    revision: AtomicU64,
    /// Successful writes so far.
    pub(crate) writes: AtomicU64,
    /// When the last successful write happened (tokio time).
    pub(crate) last_write: Mutex<Option<tokio::time::Instant>>,
}

fn error(code: u16, reason: &str) -> kube::Error {
    kube::Error::Api(Status::failure(reason, reason).with_code(code).boxed())
}

impl FakeLeases {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    pub(crate) fn lease(&self, name: &str) -> Option<Lease> {
        self.leases.lock().get(name).cloned()
    }

    /// Stores `lease` as is (a new resourceVersion), bypassing all checks.
    pub(crate) fn put(&self, mut lease: Lease) {
        let rv = self.revision.fetch_add(1, Ordering::SeqCst) + 1;
        lease.metadata.resource_version = Some(rv.to_string());
        let name = lease.metadata.name.clone().unwrap_or_default();
        self.leases.lock().insert(name, lease);
    }
}

#[async_trait]
impl LeaseApi for FakeLeases {
    async fn get(&self, name: &str) -> Result<Option<Lease>, kube::Error> {
        Ok(self.lease(name))
    }

    async fn create(&self, lease: &Lease) -> Result<Lease, kube::Error> {
        let name = lease.metadata.name.clone().unwrap_or_default();
        let mut leases = self.leases.lock();
        if leases.contains_key(&name) {
            return Err(error(409, "AlreadyExists"));
        }
        let mut stored = lease.clone();
        let rv = self.revision.fetch_add(1, Ordering::SeqCst) + 1;
        stored.metadata.resource_version = Some(rv.to_string());
        leases.insert(name, stored.clone());
        self.writes.fetch_add(1, Ordering::SeqCst);
        *self.last_write.lock() = Some(tokio::time::Instant::now());
        Ok(stored)
    }

    async fn replace(&self, name: &str, lease: &Lease) -> Result<Lease, kube::Error> {
        let mut leases = self.leases.lock();
        let Some(current) = leases.get(name) else {
            return Err(error(404, "NotFound"));
        };
        if current.metadata.resource_version != lease.metadata.resource_version {
            return Err(error(409, "Conflict"));
        }
        let mut stored = lease.clone();
        let rv = self.revision.fetch_add(1, Ordering::SeqCst) + 1;
        stored.metadata.resource_version = Some(rv.to_string());
        leases.insert(name.to_owned(), stored.clone());
        self.writes.fetch_add(1, Ordering::SeqCst);
        *self.last_write.lock() = Some(tokio::time::Instant::now());
        Ok(stored)
    }

    async fn list(&self) -> Result<Vec<Lease>, kube::Error> {
        Ok(self.leases.lock().values().cloned().collect())
    }

    async fn delete(&self, name: &str, resource_version: &str) -> Result<(), kube::Error> {
        let mut leases = self.leases.lock();
        let Some(current) = leases.get(name) else {
            return Err(error(404, "NotFound"));
        };
        if current.metadata.resource_version.as_deref() != Some(resource_version) {
            return Err(error(409, "Conflict"));
        }
        leases.remove(name);
        Ok(())
    }
}

/// One replica's view of a shared [`FakeLeases`], with its own faults (a network
/// partition, a slow link, lost responses) on top of the shared store's.
pub(crate) struct Partition {
    store: Arc<FakeLeases>,
    /// Every call fails with 500 (without reaching the store) while set.
    pub(crate) fail: AtomicBool,
    /// Every call is delayed this long before it reaches the store.
    pub(crate) delay_request: Mutex<Option<Duration>>,
    /// Every response is delayed this long after the store applied the call.
    pub(crate) delay_response: Mutex<Option<Duration>>,
}

impl Partition {
    pub(crate) fn new(store: &Arc<FakeLeases>) -> Arc<Self> {
        Arc::new(Self {
            store: store.clone(),
            fail: AtomicBool::new(false),
            delay_request: Mutex::new(None),
            delay_response: Mutex::new(None),
        })
    }

    pub(crate) fn heal(&self) {
        self.fail.store(false, Ordering::SeqCst);
        *self.delay_request.lock() = None;
        *self.delay_response.lock() = None;
    }

    async fn call<T>(
        &self,
        op: impl std::future::Future<Output = Result<T, kube::Error>>,
    ) -> Result<T, kube::Error> {
        let before = *self.delay_request.lock();
        if let Some(d) = before {
            tokio::time::sleep(d).await;
        }
        if self.fail.load(Ordering::SeqCst) {
            return Err(error(500, "InternalError"));
        }
        let result = op.await;
        let after = *self.delay_response.lock();
        if let Some(d) = after {
            tokio::time::sleep(d).await;
        }
        result
    }
}

#[async_trait]
impl LeaseApi for Partition {
    async fn get(&self, name: &str) -> Result<Option<Lease>, kube::Error> {
        self.call(self.store.get(name)).await
    }
    async fn create(&self, lease: &Lease) -> Result<Lease, kube::Error> {
        self.call(self.store.create(lease)).await
    }
    async fn replace(&self, name: &str, lease: &Lease) -> Result<Lease, kube::Error> {
        self.call(self.store.replace(name, lease)).await
    }
    async fn list(&self) -> Result<Vec<Lease>, kube::Error> {
        self.call(self.store.list()).await
    }
    async fn delete(&self, name: &str, resource_version: &str) -> Result<(), kube::Error> {
        self.call(self.store.delete(name, resource_version)).await
    }
}
