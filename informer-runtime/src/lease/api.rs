//! The five Lease calls leader election and sharding make, behind a small trait so
//! the election logic can also be tested against an in-memory fake with paused time
//! (`fake.rs`).

use std::sync::Arc;

use async_trait::async_trait;
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, DeleteParams, ListParams, PostParams, Preconditions};

/// Lease calls in one namespace. Writes carry the Lease's `resourceVersion`, so a
/// concurrent change makes them fail with 409 Conflict instead of overwriting it.
#[async_trait]
pub(crate) trait LeaseApi: Send + Sync {
    async fn get(&self, name: &str) -> Result<Option<Lease>, kube::Error>;
    async fn create(&self, lease: &Lease) -> Result<Lease, kube::Error>;
    /// Replaces the Lease; `lease.metadata.resourceVersion` must be the observed one.
    async fn replace(&self, name: &str, lease: &Lease) -> Result<Lease, kube::Error>;
    async fn list(&self) -> Result<Vec<Lease>, kube::Error>;
    /// Deletes the Lease if it still has `resource_version`.
    async fn delete(&self, name: &str, resource_version: &str) -> Result<(), kube::Error>;
}

/// The real thing: `kube::Api<Lease>` in one namespace.
pub(crate) struct KubeLeases(Api<Lease>);

impl KubeLeases {
    /// The Leases of `namespace`, through `client`.
    pub(crate) fn in_namespace(client: kube::Client, namespace: &str) -> Arc<dyn LeaseApi> {
        Arc::new(Self(Api::namespaced(client, namespace)))
    }
}

#[async_trait]
impl LeaseApi for KubeLeases {
    async fn get(&self, name: &str) -> Result<Option<Lease>, kube::Error> {
        self.0.get_opt(name).await
    }

    async fn create(&self, lease: &Lease) -> Result<Lease, kube::Error> {
        self.0.create(&PostParams::default(), lease).await
    }

    async fn replace(&self, name: &str, lease: &Lease) -> Result<Lease, kube::Error> {
        self.0.replace(name, &PostParams::default(), lease).await
    }

    async fn list(&self) -> Result<Vec<Lease>, kube::Error> {
        Ok(self.0.list(&ListParams::default()).await?.items)
    }

    async fn delete(&self, name: &str, resource_version: &str) -> Result<(), kube::Error> {
        let params = DeleteParams::default().preconditions(Preconditions {
            resource_version: Some(resource_version.to_owned()),
            uid: None,
        });
        self.0.delete(name, &params).await.map(|_| ())
    }
}

/// A 409 (Conflict or AlreadyExists): someone else wrote first.
pub(crate) fn is_conflict(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(status) if status.code == 409)
}

/// A 404: the Lease is gone.
pub(crate) fn is_not_found(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(status) if status.code == 404)
}
