//! [`ControllerScope`]: how a controller gets an informer (and an `Api`) for a resource,
//! whether it is namespaced or cluster scoped.

use super::ControllerResource;
use crate::factory::{InformerFactory, InformerHandle, InformerParams, namespaced_api};
use kube::core::{ClusterResourceScope, DynamicResourceScope, NamespaceResourceScope};
use kube::{Api, Client, Resource};

mod sealed {
    pub trait Sealed {}
    impl Sealed for kube::core::NamespaceResourceScope {}
    impl Sealed for kube::core::ClusterResourceScope {}
    impl Sealed for kube::core::DynamicResourceScope {}
}

/// The scopes a controller can watch: namespaced, cluster-scoped and dynamic resources.
///
/// Implemented for the three scopes of `kube` (`NamespaceResourceScope`,
/// `ClusterResourceScope`, `DynamicResourceScope`) and sealed; every `k8s-openapi` type and
/// every `#[derive(CustomResource)]` type has one of them, so a bound
/// `K::Scope: ControllerScope` is always met. It lets one builder take Pods and Nodes alike:
/// for a cluster-scoped resource the namespace of the controller is ignored.
///
/// ```
/// use informer_runtime::controller::ControllerScope;
/// use k8s_openapi::api::core::v1::{Node, Pod};
/// use kube::Resource;
///
/// fn namespaced<K: Resource>() -> bool where K::Scope: ControllerScope {
///     <K::Scope as ControllerScope>::NAMESPACED
/// }
/// assert!(namespaced::<Pod>());
/// assert!(!namespaced::<Node>());
/// ```
pub trait ControllerScope: sealed::Sealed + Sized {
    /// Whether objects of this scope live in a namespace (`true` for dynamic resources,
    /// whose scope is only known at run time).
    const NAMESPACED: bool;

    /// The factory's shared informer for `K` with `params` (namespace dropped for
    /// cluster-scoped resources), its cache as the factory's
    /// [`CachePolicy`](crate::factory::CachePolicy) says.
    #[doc(hidden)]
    fn informer<K>(factory: &InformerFactory, params: InformerParams) -> InformerHandle<K>
    where
        K: ControllerResource<Scope = Self>;

    /// An `Api<K>` over `namespace` (every namespace when `None`; ignored for cluster-scoped
    /// resources).
    #[doc(hidden)]
    fn api<K>(client: Client, namespace: Option<&str>) -> Api<K>
    where
        K: Resource<Scope = Self>,
        K::DynamicType: Default;
}

impl ControllerScope for NamespaceResourceScope {
    const NAMESPACED: bool = true;

    fn informer<K>(factory: &InformerFactory, params: InformerParams) -> InformerHandle<K>
    where
        K: ControllerResource<Scope = Self>,
    {
        factory.informer_by_policy::<K>(params)
    }

    fn api<K>(client: Client, namespace: Option<&str>) -> Api<K>
    where
        K: Resource<Scope = Self>,
        K::DynamicType: Default,
    {
        namespaced_api(client, &K::DynamicType::default(), namespace)
    }
}

impl ControllerScope for DynamicResourceScope {
    const NAMESPACED: bool = true;

    fn informer<K>(factory: &InformerFactory, params: InformerParams) -> InformerHandle<K>
    where
        K: ControllerResource<Scope = Self>,
    {
        factory.informer_by_policy::<K>(params)
    }

    fn api<K>(client: Client, namespace: Option<&str>) -> Api<K>
    where
        K: Resource<Scope = Self>,
        K::DynamicType: Default,
    {
        namespaced_api(client, &K::DynamicType::default(), namespace)
    }
}

impl ControllerScope for ClusterResourceScope {
    const NAMESPACED: bool = false;

    fn informer<K>(factory: &InformerFactory, mut params: InformerParams) -> InformerHandle<K>
    where
        K: ControllerResource<Scope = Self>,
    {
        params.namespace = None;
        factory.cluster_informer_by_policy::<K>(params)
    }

    fn api<K>(client: Client, _namespace: Option<&str>) -> Api<K>
    where
        K: Resource<Scope = Self>,
        K::DynamicType: Default,
    {
        Api::all_with(client, &K::DynamicType::default())
    }
}
