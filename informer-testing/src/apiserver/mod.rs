//! An in-process Kubernetes API server for tests and demos.
//!
//! [`TestApiServer`] listens on `127.0.0.1` and speaks the real protocol closely enough
//! that `kube::Client`, `kube::runtime::watcher`, `kubectl`, the Python `kubernetes`
//! client and Node's `@kubernetes/client-node` work against it as against a cluster:
//!
//! - **connection**: HTTPS with a serving certificate signed by a CA made at start-up, and a
//!   bearer token per server; [`TestApiServer::kubeconfig`] carries both
//!   (`certificate-authority-data`, `token`), [`TestApiServer::client`] uses them, and
//!   requests without the token get `401 Unauthorized`.
//!   [`TestApiServerBuilder::plain_http`] serves plain HTTP without authentication instead;
//!   [`TestApiServer::user_config`] hands out more tokens, one per named user, whose requests
//!   the server attributes to that user (counts, [`RequestMatch::user`], the author of each
//!   change); `Impersonate-User`/`-Group`/`-Uid`/`-Extra-*` (`kubectl --as`) make a request
//!   the impersonated user's (always allowed);
//! - **discovery** (`/api`, `/api/v1`, `/apis`, `/apis/<group>[/<version>]`, `/version`,
//!   `/openapi/v3`, an empty `/openapi/v2`) for core v1 Pods, ConfigMaps, Secrets, Services,
//!   Namespaces, Events, ServiceAccounts, PersistentVolumeClaims, Nodes, Endpoints,
//!   ReplicationControllers, PersistentVolumes, ResourceQuotas, LimitRanges and
//!   PodTemplates, apps/v1 Deployments, ReplicaSets, StatefulSets, DaemonSets and
//!   ControllerRevisions, batch/v1 Jobs and CronJobs, coordination.k8s.io/v1 Leases, the
//!   rbac.authorization.k8s.io/v1 kinds, networking.k8s.io/v1 Ingresses, IngressClasses and
//!   NetworkPolicies, policy/v1 PodDisruptionBudgets, discovery.k8s.io/v1 EndpointSlices,
//!   autoscaling/v2 HorizontalPodAutoscalers (and autoscaling/v1, the same objects
//!   converted), storage.k8s.io/v1 StorageClasses,
//!   scheduling.k8s.io/v1 PriorityClasses, certificates.k8s.io/v1 CertificateSigningRequests
//!   (with `status` and `approval`, validated as upstream; no signer runs), events.k8s.io/v1 Events (the core Events, converted
//!   field by field), admissionregistration.k8s.io/v1 ValidatingWebhookConfigurations,
//!   MutatingWebhookConfigurations, ValidatingAdmissionPolicies and their bindings (stored,
//!   defaulted and validated; no webhook is called, no policy evaluated),
//!   apiextensions.k8s.io/v1 CustomResourceDefinitions, apiregistration.k8s.io/v1
//!   APIServices, and every custom resource a CRD serves (with its short names, categories, verbs in the real
//!   order, `storageVersionHash`, and versions in Kubernetes' priority order);
//! - **CustomResourceDefinitions** as a cluster serves them: a CRD created through the API
//!   (`Api<CustomResourceDefinition>`, `kubectl apply -f crd.yaml`, kube's
//!   `CustomResource::crd()`) is validated (422 with causes: name `<plural>.<group>`, one
//!   storage version, structural schemas (value validations only under junctors, list and
//!   map types, root `metadata`), `default`s valid against their schema, printer columns,
//!   `selectableFields`, conversion, ...), defaulted, and served when the create
//!   returns: `NamesAccepted` and `Established` set (a name another CRD of the group holds
//!   leaves `NamesAccepted` `False`), every served version with its scope, names, `status`
//!   and `scale` subresources, `additionalPrinterColumns` (Table output) and
//!   `selectableFields` (field selectors of lists and watches), objects stored
//!   in the storage version and read through any served one. Updates of a CRD take effect
//!   (a write of its `status` may set any `storedVersions`, as a storage migrator does);
//!   deleting one adds the `customresourcecleanup.apiextensions.k8s.io` finalizer, refuses
//!   new objects, deletes every object (waiting for their finalizers), then the CRD, and the
//!   type is no longer served. [`TestApiServer::register_custom_resource`] and
//!   [`TestApiServerBuilder::custom_resource`] create a CRD ([`CustomResourceSpec::to_crd`])
//!   the same way;
//! - **APIServices** as the aggregator keeps them (see `apiservices`): validated and
//!   defaulted as upstream does, a Local APIService (`Available`) for every built-in group
//!   version served and for every group version a CRD serves (gone with the CRD), and an
//!   APIService backed by a Service marked `Available=False` with upstream's reason and
//!   message (`ServiceNotFound`, `EndpointsNotFound`, ...; `FailedDiscoveryCheck` when
//!   the Service has ready endpoints, since nothing answers behind it). Its group is never
//!   served: nothing is aggregated or proxied;
//! - **structural schemas** of custom resources: unknown fields pruned (kept under
//!   `x-kubernetes-preserve-unknown-fields`; `ObjectMeta` fields only in the `metadata` of
//!   objects and `x-kubernetes-embedded-resource`s) and reported as `fieldValidation` says
//!   (`unknown field "spec.foo"`), `default`s applied, and values validated (types,
//!   `required`, `enum`, bounds, `pattern`, lengths, item counts, set and map list
//!   uniqueness, the formats kube-openapi checks (`email`, `uri`, `uuid`, `date-time`,
//!   `duration`, `cidr`, `mac`, ...), `anyOf`/`oneOf`/`not`) with the real server's field
//!   paths and wording (a `status` write checks only `status`, worded relative to it:
//!   `status.replicas: ... replicas in body must be ...`);
//!   `x-kubernetes-embedded-resource`s' `apiVersion`, `kind` and `metadata` checked as
//!   objects' (a `metadata` Go cannot decode is a 400); a CRD using a format the real server
//!   does not know is taken with its `unrecognized format` warning;
//! - **bodies** in JSON, YAML and Kubernetes protobuf (what kubectl's typed `create`
//!   subcommands send; decoded for the built-in types above, 415 for others); responses in
//!   JSON or YAML, as a `meta.k8s.io` `Table` (`kubectl get`) or as `PartialObjectMetadata`
//!   (metadata-only clients), by `Accept`; 406 when nothing acceptable can be served; JSON
//!   indented for `?pretty=true` and for `curl`, `Wget` and browsers (`isPrettyPrint`), and
//!   always for `/version` and `/` (`WriteRawJSON`);
//! - **list** with label and field selectors, `limit`/`continue` pagination over
//!   consistent snapshots, and the real `resourceVersion`/`resourceVersionMatch` semantics;
//! - **watch** (also on the deprecated `/watch/` paths) from a resource version with
//!   bookmarks, `timeoutSeconds`, `sendInitialEvents` (streaming lists) and `410 Gone` for
//!   compacted history;
//! - **writes**: create, get, update (409 on stale `resourceVersion`), JSON merge patch,
//!   strategic merge patch (common subset), JSON patch (any document: 400 or 422, never a
//!   crash), server-side apply, delete with finalizers, the `status` subresource, the
//!   `scale` subresource (Deployments, ReplicaSets, StatefulSets, ReplicationControllers and
//!   custom resources that declare one), `metadata.generation` for the types that have it (Pods, workloads, custom
//!   resources; one more when deletion starts); custom resources and CRDs refuse updates
//!   without a `resourceVersion`, and no object takes new finalizers while it is deleted;
//!   finalizer names are qualified names (built-in types': standard or with a `/`; custom
//!   resources' without a domain come with upstream's warning);
//! - **field ownership and server-side apply**: `metadata.managedFields` on every write, one
//!   entry per manager, operation (`Apply`, `Update`), API version and subresource, in
//!   `FieldsV1` (`f:`, `k:{...}`, `v:`, `i:`), the manager from `fieldManager` or the first
//!   word of the `User-Agent` (`unknown` without one); an apply changing a field another
//!   manager owns fails with `409 Conflict`, one `FieldManagerConflict` cause per field
//!   (`conflict with "m1": .spec.replicas`), unless `force=true`, which takes the fields;
//!   fields a manager stops applying are removed unless another manager owns them; lists
//!   merge as their schema says (`x-kubernetes-list-type` `map` by its keys, `set` by value,
//!   `atomic` whole; built-in types as their OpenAPI says); `managedFields: [{}]` resets the
//!   ownership; more than ten `Update` managers merge into `ancient-changes`;
//! - **admission and validation** as a cluster answers: `fieldValidation=Strict|Warn|Ignore`
//!   for unknown and duplicate fields of built-in types and custom resources (unknown fields
//!   are dropped, as decoding drops them), `422 Invalid` with one `details.causes` entry per
//!   failed rule (object names, labels, annotations, container names, replicas, Service
//!   types and ports, immutable ConfigMaps and Secrets), `404 namespaces "x" not found` for
//!   creates in a missing namespace and `403` (`NamespaceTerminating`) in a terminating one,
//!   `default`, `kube-system` and `kube-public` undeletable, `404` for types the server does
//!   not serve;
//! - **garbage collection** of `ownerReferences`, as kube-controller-manager's collector does
//!   it, running inside the server: background, foreground and orphan propagation
//!   (`propagationPolicy`, `orphanDependents`, `kubectl delete --cascade`), dangling and
//!   cross-namespace owners, dependents' finalizers honoured (see
//!   [`TestApiServerBuilder::garbage_collector`]); it acts within milliseconds of a change,
//!   sooner than a cluster's, unless given a delay
//!   ([`TestApiServerBuilder::garbage_collection_delay`]);
//! - **namespace lifecycle**: the namespaces a cluster starts with, the
//!   `kubernetes.io/metadata.name` label and the `kubernetes` finalizer; deleting a namespace
//!   marks it `Terminating`, and the server's namespace controller deletes its content,
//!   reports what remains in its conditions, then removes it;
//! - errors as `Status` objects, written in the Go struct's field order with a trailing
//!   newline as kube-apiserver writes them (clients that print the body show the same text);
//!   DELETE answers with the deleted object for the types whose registry says so (Pods,
//!   Services, ServiceAccounts, StorageClasses), a `Status` for the others;
//! - **load**: reads (get, list, a watch's initial events) work on immutable snapshots and
//!   wait neither for writes nor for each other; a page costs in proportion to the page;
//!   long requests run off the async workers, so `/version` and small requests stay quick
//!   during a list of 20,000 objects; the history, each watch's backlog, request bodies and
//!   request time are bounded (see [`TestApiServerBuilder`]); [`TestApiServer::stats`] gives
//!   the server's own accounting.
//!
//! Objects are stored as JSON, so any type works; one revision counter is
//! shared by all types, like etcd's. [`Faults`] makes the server misbehave on
//! command: drop watches, fail or stall requests, send malformed events,
//! compact history and restart.
//!
//! Not served: other built-in types, API aggregation (an APIService's group is not served and
//! nothing is proxied), protobuf responses, calls to admission webhooks and
//! the evaluation of admission policies, RBAC (one token can do everything; the bootstrap
//! `cluster-admin`, `system:discovery`, `system:basic-user` and `system:public-info-viewer`
//! ClusterRoles and bindings and the two system PriorityClasses exist from the start, the
//! aggregated `admin`/`edit`/`view` and the controllers' roles do not), the defaults of
//! kinds and fields `defaults` does not list, controllers other than the garbage collector,
//! the namespace, service account and (when asked for) root CA publisher controllers, the CRD
//! controllers and the aggregator's
//! APIService controllers (autoregistration, availability), and Go's
//! distinction between a zero value and an unset pointer in protobuf bodies (zero numbers
//! and `false` are kept as sent). For
//! CRDs and field ownership: the parts of CEL rules (`x-kubernetes-validations`) that
//! `structural::cel_rules` lists as missing (type checking, costs), conversion webhooks
//! (versions convert with the `None` strategy; the storage version's schema prunes and
//! validates writes through other versions), defaults applied when stored objects are read
//! (they are applied on writes), server-side apply's merging with the
//! client-side apply annotation, and the conversion of managed fields between versions. The
//! crate documentation's table lists everything a cluster does that this server does not.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use informer_testing::TestApiServer;
//! use kube::api::{Api, ListParams};
//! use kube::core::DynamicObject;
//! use kube::discovery::ApiResource;
//!
//! let server = TestApiServer::start().await?;
//! server.create_json(serde_json::json!({
//!     "apiVersion": "v1",
//!     "kind": "ConfigMap",
//!     "metadata": {"name": "settings", "namespace": "default"},
//!     "data": {"mode": "fast"}
//! }))?;
//! let resource = ApiResource::erase::<k8s_openapi::api::core::v1::ConfigMap>(&());
//! let api: Api<DynamicObject> = Api::namespaced_with(server.client(), "default", &resource);
//! assert_eq!(api.list(&ListParams::default()).await?.items.len(), 1);
//! # Ok(()) }
//! ```

#![warn(missing_docs)]

mod apiservices;
mod certificates;
mod codec;
mod conditions;
mod controllers;
mod crd;
mod default_classes;
mod defaults;
mod discovery;
pub(crate) mod events;
mod eviction;
mod faults;
mod fields;
mod gc;
mod go_json;
pub(crate) mod hpa_v1;
mod impersonation;
pub(crate) mod intercept;
mod json_patch;
mod namespaces;
mod openapi;
mod patch;
mod pod_security;
mod pod_subresources;
mod pods;
mod protobuf;
mod resource;
mod reviews;
mod root_ca;
mod scale;
mod schema;
mod selector;
mod server;
mod service_accounts;
mod services;
mod status;
mod storage;
mod strategy;
mod structural;
mod table;
mod time;
mod tls;
mod validation;
mod watch;

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use kube::config::{
    AuthInfo, Cluster, Context, Kubeconfig, NamedAuthInfo, NamedCluster, NamedContext,
};
use secrecy::SecretString;
use serde::Serialize;
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

pub(crate) use faults::RequestInfo;
pub use faults::{FailureCode, Faults, RequestMatch, RestartMode, Verb};
pub use resource::{CustomResourceSpec, ScaleSubresource};
pub use status::{ApiError, FieldError, FieldErrorKind, StatusReason};
pub use storage::ServerStats;

use resource::{Registry, ResourceType};
pub(crate) use server::Shared;
use storage::queue::Backlog;
pub(crate) use storage::{Change, EventType, Subscription};
use storage::{
    DeleteOptions, DeleteOutcome, Filter, Limits, ListRequest, ReadVersion, Subresource,
};
pub(crate) use time::format_micro_time;

/// Errors from starting or driving the test server (as opposed to the
/// [`ApiError`]s it returns to clients).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The listener could not be bound.
    #[error("failed to bind the test API server to {address}: {source}")]
    Bind {
        /// The address that was tried.
        address: SocketAddr,
        /// The cause.
        source: std::io::Error,
    },
    /// The kubeconfig could not be written.
    #[error("failed to write kubeconfig {path}: {source}")]
    WriteKubeconfig {
        /// The path that was tried.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A custom resource spec was rejected.
    #[error("invalid custom resource: {0}")]
    InvalidCustomResource(String),
    /// No registered resource type has this `apiVersion` and `kind`.
    #[error("no resource type is registered for apiVersion {api_version:?}, kind {kind:?}")]
    UnknownKind {
        /// The object's `apiVersion`.
        api_version: String,
        /// The object's `kind`.
        kind: String,
    },
    /// The TLS identity (CA and serving certificate) could not be made.
    #[error("failed to make the TLS identity: {0}")]
    Tls(String),
    /// `kube` could not build a client for the server.
    #[error("failed to build a kube client: {0}")]
    Client(#[source] kube::Error),
    /// The request was refused, as it would be over HTTP.
    #[error(transparent)]
    Api(#[from] ApiError),
}

/// Configures a [`TestApiServer`] before starting it.
///
/// # Bounds
///
/// The server stays small and responsive under load within these bounds, each a setting:
///
/// | bound | default | past it |
/// | --- | --- | --- |
/// | [history length](Self::history_limit) | 10,000 changes | the oldest changes are compacted: watches and continue tokens from before them get `410 Gone` |
/// | [history size](Self::history_bytes_limit) | 128 MiB of object states | the same |
/// | [watch backlog](Self::watch_backlog_limit) | the history length in events, 64 MiB | the watch is closed (its stream ends, as kube-apiserver ends a slow watcher's); the client watches again from its last resource version |
/// | [request body](Self::max_body_bytes) | 3 MiB, as kube-apiserver's `--max-request-body-bytes` | `413 RequestEntityTooLarge` |
/// | [request time](Self::request_timeout) | 60 s, reading the body included | `504 Timeout` (a watch's stream is not limited) |
///
/// ```no_run
/// # async fn demo() -> Result<(), informer_testing::Error> {
/// use std::time::Duration;
/// use informer_testing::TestApiServer;
/// let server = TestApiServer::builder()
///     .bookmark_interval(Duration::from_millis(200))
///     .history_limit(100)
///     .start()
///     .await?;
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct TestApiServerBuilder {
    port: u16,
    bookmark_interval: Duration,
    history_limit: usize,
    history_bytes_limit: usize,
    watch_backlog: Option<Backlog>,
    max_body_bytes: usize,
    request_timeout: Duration,
    custom_resources: Vec<CustomResourceSpec>,
    /// CRDs given whole ([`TestApiServerBuilder::crd`]), or why one could not be encoded.
    crds: Vec<Result<Value, String>>,
    plain_http: bool,
    garbage_collector: bool,
    gc_delay: Duration,
    watch_cache: bool,
    root_ca_config_maps: bool,
}

impl Default for TestApiServerBuilder {
    fn default() -> Self {
        Self {
            port: 0,
            bookmark_interval: Duration::from_secs(1),
            history_limit: Limits::default().history_changes,
            history_bytes_limit: Limits::default().history_bytes,
            watch_backlog: None,
            max_body_bytes: 3 * 1024 * 1024,
            request_timeout: Duration::from_secs(60),
            custom_resources: Vec::new(),
            crds: Vec::new(),
            plain_http: false,
            watch_cache: true,
            garbage_collector: true,
            gc_delay: Duration::ZERO,
            root_ca_config_maps: false,
        }
    }
}

impl TestApiServerBuilder {
    /// The port to listen on (default 0: any free port). The address is always 127.0.0.1.
    ///
    /// ```
    /// let builder = informer_testing::TestApiServer::builder().port(0);
    /// # let _ = builder;
    /// ```
    pub fn port(mut self, port: u16) -> Self {
        self.port = port;
        self
    }

    /// How often watches that allow bookmarks get one (default 1 s; the real
    /// server sends them about once a minute).
    ///
    /// ```
    /// # use std::time::Duration;
    /// let builder = informer_testing::TestApiServer::builder()
    ///     .bookmark_interval(Duration::from_millis(100));
    /// # let _ = builder;
    /// ```
    pub fn bookmark_interval(mut self, interval: Duration) -> Self {
        self.bookmark_interval = interval;
        self
    }

    /// Whether lists are served as with kube-apiserver's watch cache (its `--watch-cache`,
    /// on by default, as here). With it, a list at any version (`resourceVersion=0`)
    /// ignores its `limit` and answers everything in one page, as the watch cache does;
    /// without it, such a list is paginated as a list from etcd is, which is what a
    /// client's pager must handle against a server run with `--watch-cache=false`. With it,
    /// too, a get, a list or a streaming watch at a version the server has not reached yet
    /// waits up to 3 s for it (`waitUntilFreshAndBlock`) before it answers `504 Too large
    /// resource version`; without it, the `504` comes at once, as from etcd.
    ///
    /// ```
    /// let builder = informer_testing::TestApiServer::builder().watch_cache(false);
    /// # let _ = builder;
    /// ```
    pub fn watch_cache(mut self, on: bool) -> Self {
        self.watch_cache = on;
        self
    }

    /// How many changes the history keeps for watch resumption and paginated
    /// snapshots (default 10 000). Older changes are compacted away.
    ///
    /// ```
    /// let builder = informer_testing::TestApiServer::builder().history_limit(50);
    /// # let _ = builder;
    /// ```
    pub fn history_limit(mut self, changes: usize) -> Self {
        self.history_limit = changes;
        self
    }

    /// How many bytes of object states the history may hold (default 128 MiB): each retained
    /// change counts its object before and after. Past it, the oldest changes are compacted
    /// as when the history is longer than [`history_limit`](Self::history_limit), so watches
    /// and continue tokens from before them get `410 Gone`. A single change larger than the
    /// limit is compacted at once.
    ///
    /// ```
    /// let builder = informer_testing::TestApiServer::builder().history_bytes_limit(16 << 20);
    /// # let _ = builder;
    /// ```
    pub fn history_bytes_limit(mut self, bytes: usize) -> Self {
        self.history_bytes_limit = bytes;
        self
    }

    /// How far a watch may fall behind: at most `events` events holding `bytes` bytes of
    /// objects waiting to be sent to its client (default: the history length in events, and
    /// 64 MiB). A watch further behind is closed: its stream ends and what it had queued is
    /// dropped, as kube-apiserver terminates a watcher that does not keep up. Clients (kube's
    /// `watcher`, client-go's reflector, this library's) then watch again from the last
    /// resource version they saw, which gets `410 Gone` only if the history no longer reaches
    /// back to it. An event always fits an empty backlog, whatever its size.
    /// [`ServerStats::slow_watches_closed`] counts the watches closed so.
    ///
    /// ```
    /// let builder = informer_testing::TestApiServer::builder().watch_backlog_limit(1_000, 8 << 20);
    /// # let _ = builder;
    /// ```
    pub fn watch_backlog_limit(mut self, events: usize, bytes: usize) -> Self {
        self.watch_backlog = Some(Backlog { events, bytes });
        self
    }

    /// How long a request may take from its headers to its response, reading its body
    /// included (default 60 s, kube-apiserver's `--request-timeout`): a body that trickles in
    /// or a handler that takes longer gets `504 Timeout` and the connection is closed. A
    /// watch's stream is not limited (its `timeoutSeconds` is).
    ///
    /// ```
    /// # use std::time::Duration;
    /// let builder = informer_testing::TestApiServer::builder().request_timeout(Duration::from_secs(5));
    /// # let _ = builder;
    /// ```
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// The largest request body accepted (default 3 MiB, kube-apiserver's default); larger ones
    /// get 413 (`Request entity too large: limit is <bytes>`).
    ///
    /// ```
    /// let builder = informer_testing::TestApiServer::builder().max_body_bytes(1 << 20);
    /// # let _ = builder;
    /// ```
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.max_body_bytes = bytes;
        self
    }

    /// Serves plain HTTP without authentication instead of the default HTTPS with a bearer
    /// token (for clients that cannot do TLS; kubectl and kube-rs can, and the Node client
    /// refuses `http://` servers).
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), informer_testing::Error> {
    /// let server = informer_testing::TestApiServer::builder().plain_http().start().await?;
    /// assert!(server.url().starts_with("http://"));
    /// assert!(server.token().is_none());
    /// # Ok(()) }
    /// ```
    pub fn plain_http(mut self) -> Self {
        self.plain_http = true;
        self
    }

    /// Whether the garbage collector runs (default: it does). Without it, deleting an owner
    /// leaves its dependents, and objects whose owner references point nowhere stay, as on a
    /// cluster without kube-controller-manager (envtest): for fixtures that carry made-up
    /// owner references. The namespace and service account controllers run either way.
    ///
    /// ```
    /// let builder = informer_testing::TestApiServer::builder().garbage_collector(false);
    /// # let _ = builder;
    /// ```
    pub fn garbage_collector(mut self, enabled: bool) -> Self {
        self.garbage_collector = enabled;
        self
    }

    /// Whether every namespace holds the `kube-root-ca.crt` ConfigMap a cluster's root CA
    /// publisher keeps there (default: no, as in envtest, so that a test's ConfigMaps are
    /// all a namespace holds). On, each namespace that is not terminating gets it (`ca.crt`:
    /// [`certificate_authority_pem`](TestApiServer::certificate_authority_pem), annotated
    /// `kubernetes.io/description`) from the start or when made, again when it is deleted,
    /// and its data put back when changed, as kube-controller-manager's publisher does: to
    /// test that a controller of ConfigMaps leaves it alone, or to serve clients as a
    /// cluster would (the standalone `apiserver` example turns it on).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube::Api;
    ///
    /// let server = informer_testing::TestApiServer::builder()
    ///     .root_ca_config_maps(true)
    ///     .start()
    ///     .await?;
    /// let config_maps: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    /// let bundle = config_maps.get("kube-root-ca.crt").await?;
    /// let ca = bundle.data.unwrap_or_default().remove("ca.crt").unwrap_or_default();
    /// assert_eq!(Some(ca.as_str()), server.certificate_authority_pem());
    /// # Ok(()) }
    /// ```
    pub fn root_ca_config_maps(mut self, enabled: bool) -> Self {
        self.root_ca_config_maps = enabled;
        self
    }

    /// How long after a change the garbage collector acts on it (default: at once, within
    /// a few milliseconds). A cluster's collector acts later (its informers and queue, and
    /// under load seconds later): dependents outlive their owner for a while, and a new
    /// owner of the same name may meet the old one's dependents. Give a delay to test that
    /// a controller copes, in a chaos test through
    /// [`Chaos::server`](crate::chaos::Chaos::server).
    ///
    /// ```
    /// let builder = informer_testing::TestApiServer::builder()
    ///     .garbage_collection_delay(std::time::Duration::from_secs(2));
    /// # let _ = builder;
    /// ```
    pub fn garbage_collection_delay(mut self, delay: Duration) -> Self {
        self.gc_delay = delay;
        self
    }

    /// Registers a custom resource type from the start.
    ///
    /// ```
    /// use informer_testing::{CustomResourceSpec, TestApiServer};
    /// let builder = TestApiServer::builder()
    ///     .custom_resource(CustomResourceSpec::namespaced("example.com", "v1", "Widget", "widgets"));
    /// # let _ = builder;
    /// ```
    pub fn custom_resource(mut self, spec: CustomResourceSpec) -> Self {
        self.custom_resources.push(spec);
        self
    }

    /// Installs a CustomResourceDefinition from the start, as `kubectl apply -f crd.yaml`
    /// would before the test: its objects are validated, pruned and defaulted against its
    /// schema, and its subresources, printer columns and selectable fields are served. Takes
    /// anything that serializes to a CRD: kube's `CustomResourceExt::crd()`, a k8s-openapi
    /// `CustomResourceDefinition` or a `serde_json::Value`. The CRD is checked as the API
    /// server checks one on create; an invalid one makes [`start`](Self::start) fail with
    /// [`Error::InvalidCustomResource`] and the server's message. Like the CRDs of
    /// [`custom_resource`](Self::custom_resource), it is installed again after a restart
    /// that loses data.
    ///
    /// ```
    /// use informer_testing::TestApiServer;
    /// use kube::{CustomResource, CustomResourceExt};
    /// use schemars::JsonSchema;
    /// use serde::{Deserialize, Serialize};
    ///
    /// #[derive(CustomResource, Clone, Debug, Deserialize, Serialize, JsonSchema)]
    /// #[kube(group = "example.com", version = "v1", kind = "Widget", namespaced)]
    /// struct WidgetSpec {
    ///     size: u32,
    /// }
    ///
    /// let builder = TestApiServer::builder().crd(Widget::crd());
    /// # let _ = builder;
    /// ```
    pub fn crd(mut self, crd: impl Serialize) -> Self {
        self.crds
            .push(serde_json::to_value(crd).map_err(|e| e.to_string()));
        self
    }

    /// Binds 127.0.0.1 and starts serving on the current tokio runtime.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), informer_testing::Error> {
    /// let server = informer_testing::TestApiServer::builder().start().await?;
    /// # Ok(()) }
    /// ```
    pub async fn start(self) -> Result<TestApiServer, Error> {
        let registry = Registry::builtin();
        let requested = SocketAddr::from((Ipv4Addr::LOCALHOST, self.port));
        let listener = TcpListener::bind(requested)
            .await
            .map_err(|source| Error::Bind {
                address: requested,
                source,
            })?;
        let address = listener.local_addr().map_err(|source| Error::Bind {
            address: requested,
            source,
        })?;
        let (identity, security) = if self.plain_http {
            let security = server::Security {
                tls: None,
                token: None,
            };
            (None, security)
        } else {
            let identity = tls::identity().map_err(Error::Tls)?;
            let security = server::Security {
                tls: Some(identity.acceptor.clone()),
                token: Some(tls::new_token()),
            };
            (Some(identity), security)
        };
        let limits = Limits {
            history_changes: self.history_limit,
            history_bytes: self.history_bytes_limit,
            watch_backlog: self.watch_backlog.unwrap_or(Backlog {
                events: self.history_limit.max(1),
                ..Limits::default().watch_backlog
            }),
        };
        let root_ca = self.root_ca_config_maps.then(root_ca::process_ca).flatten();
        let root_ca_publisher = root_ca
            .clone()
            .map(|ca| root_ca::RootCaPublisher::new(&registry, Some(ca)));
        let settings = server::Settings {
            bookmark_interval: self.bookmark_interval,
            max_body_bytes: self.max_body_bytes,
            request_timeout: self.request_timeout,
            limits,
            watch_cache: self.watch_cache,
            root_ca,
        };
        let namespace_controller = namespaces::NamespaceController::new(&registry);
        let account_controller = service_accounts::ServiceAccountController::new(&registry);
        let apiservice_controller = apiservices::ApiServiceController::new(&registry);
        let shared = Arc::new(Shared::new(address, registry, settings, security));
        for spec in &self.custom_resources {
            shared
                .install_crd(spec.to_crd(), true)
                .map_err(|err| Error::InvalidCustomResource(err.message().to_string()))?;
        }
        for crd in self.crds {
            let crd = crd.map_err(Error::InvalidCustomResource)?;
            shared
                .install_crd(crd, true)
                .map_err(|err| Error::InvalidCustomResource(err.message().to_string()))?;
        }
        // The Local APIServices of the CRDs' group versions, before the server is ready.
        apiservices::register(&mut shared.store.lock(), &shared.registry.read(), true);
        shared.start_watch_caches();
        let task = tokio::spawn(server::serve(listener, shared.clone()));
        let mut controllers = vec![
            tokio::spawn(controllers::run(shared.clone(), namespace_controller)),
            tokio::spawn(controllers::run(shared.clone(), account_controller)),
            tokio::spawn(controllers::run(shared.clone(), apiservice_controller)),
            tokio::spawn(crd::finish_deletions(shared.clone())),
        ];
        if let Some(publisher) = root_ca_publisher {
            controllers.push(tokio::spawn(controllers::run(shared.clone(), publisher)));
        }
        if self.garbage_collector {
            controllers.push(tokio::spawn(controllers::run_lagging(
                shared.clone(),
                gc::GarbageCollector::default(),
                self.gc_delay,
            )));
        }
        tracing::info!(%address, "test API server listening");
        Ok(TestApiServer {
            shared,
            task,
            controllers,
            address,
            identity,
        })
    }
}

/// A running in-process API server. Dropping it (or [`TestApiServer::shutdown`])
/// stops it and closes every connection.
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use informer_testing::TestApiServer;
/// use k8s_openapi::api::core::v1::Pod;
/// use kube::api::{Api, PostParams};
///
/// let server = TestApiServer::start().await?;
/// let pods: Api<Pod> = Api::namespaced(server.client(), "default");
/// let mut pod = Pod::default();
/// pod.metadata.name = Some("web".into());
/// pods.create(&PostParams::default(), &pod).await?;
/// println!("listening on {}", server.url());
/// # Ok(()) }
/// ```
pub struct TestApiServer {
    shared: Arc<Shared>,
    task: JoinHandle<()>,
    /// The garbage collector, the namespace, service account and (when asked for) root CA
    /// publisher controllers, and the CRD and APIService controllers.
    controllers: Vec<JoinHandle<()>>,
    address: SocketAddr,
    identity: Option<&'static tls::Identity>,
}

impl std::fmt::Debug for TestApiServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestApiServer")
            .field("address", &self.address)
            .finish_non_exhaustive()
    }
}

impl TestApiServer {
    /// Starts a server with the default settings on a free port.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), informer_testing::Error> {
    /// let server = informer_testing::TestApiServer::start().await?;
    /// # Ok(()) }
    /// ```
    pub async fn start() -> Result<Self, Error> {
        Self::builder().start().await
    }

    /// A builder for non-default settings.
    ///
    /// ```
    /// let builder = informer_testing::TestApiServer::builder();
    /// # let _ = builder;
    /// ```
    pub fn builder() -> TestApiServerBuilder {
        TestApiServerBuilder::default()
    }

    /// The socket address the server listens on (always on 127.0.0.1).
    ///
    /// ```no_run
    /// # async fn demo(server: informer_testing::TestApiServer) {
    /// assert!(server.address().ip().is_loopback());
    /// # }
    /// ```
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// The base URL, e.g. `https://127.0.0.1:41234` (`http://` with
    /// [`TestApiServerBuilder::plain_http`]).
    ///
    /// ```no_run
    /// # async fn demo(server: informer_testing::TestApiServer) {
    /// assert!(server.url().starts_with("https://127.0.0.1:"));
    /// # }
    /// ```
    pub fn url(&self) -> String {
        let scheme = if self.identity.is_some() {
            "https"
        } else {
            "http"
        };
        format!("{scheme}://{}", self.address)
    }

    /// The PEM certificate of the CA that signed the serving certificate (valid for
    /// `127.0.0.1` and `localhost`), or `None` for a plain-HTTP server. One CA serves every
    /// server of a process.
    ///
    /// ```no_run
    /// # async fn demo(server: informer_testing::TestApiServer) {
    /// assert!(server.certificate_authority_pem().unwrap().contains("BEGIN CERTIFICATE"));
    /// # }
    /// ```
    pub fn certificate_authority_pem(&self) -> Option<&str> {
        self.identity.map(|identity| identity.ca_pem.as_str())
    }

    /// The bearer token requests must carry (`Authorization: Bearer <token>`; without it
    /// the server answers `401 Unauthorized`), or `None` for a plain-HTTP server.
    ///
    /// ```no_run
    /// # async fn demo(server: informer_testing::TestApiServer) {
    /// let header = format!("Bearer {}", server.token().unwrap());
    /// # let _ = header; }
    /// ```
    pub fn token(&self) -> Option<&str> {
        self.shared.token.as_deref()
    }

    /// A `kube::Config` for the server (default namespace `default`; the CA as the only
    /// root and the bearer token), for clients that need tweaks such as disabling retries.
    ///
    /// ```no_run
    /// # async fn demo(server: informer_testing::TestApiServer) -> Result<(), kube::Error> {
    /// let mut config = server.config();
    /// config.default_retry = false;
    /// let client = kube::Client::try_from(config)?;
    /// # Ok(()) }
    /// ```
    pub fn config(&self) -> kube::Config {
        let uri = self
            .url()
            .parse()
            .unwrap_or_else(|_| http::Uri::from_static("http://127.0.0.1"));
        let mut config = kube::Config::new(uri);
        if let Some(identity) = self.identity {
            config.root_cert = Some(vec![identity.ca_der.clone()]);
        }
        config.auth_info.token = self.token().map(|t| SecretString::from(t.to_string()));
        config
    }

    /// A `kube::Config` for the server as [`config`](Self::config), authenticated as `user`
    /// with a bearer token of its own (a new token per call; every token stays valid while
    /// the server runs). The server attributes the requests to the user, as a cluster's audit
    /// log does: [`RequestMatch::user`] counts them and aims faults at them. Also works with
    /// [`TestApiServerBuilder::plain_http`] (the token is not required there, but identifies
    /// the user when sent).
    ///
    /// ```no_run
    /// # async fn demo(server: informer_testing::TestApiServer) -> Result<(), kube::Error> {
    /// use informer_testing::{RequestMatch, Verb};
    /// let client = kube::Client::try_from(server.user_config("my-controller"))?;
    /// # let _ = client;
    /// let lists = server.faults().request_count(RequestMatch::verb(Verb::List).user("my-controller"));
    /// # let _ = lists; Ok(()) }
    /// ```
    pub fn user_config(&self, user: &str) -> kube::Config {
        let mut config = self.config();
        config.auth_info.token = Some(SecretString::from(register_user(&self.shared, user)));
        config
    }

    /// A `kube::Client` authenticated as `user` (see [`user_config`](Self::user_config)).
    ///
    /// # Panics
    ///
    /// If `kube` cannot build a client for the server's URL and CA, which it always can.
    ///
    /// ```no_run
    /// # async fn demo(server: informer_testing::TestApiServer) {
    /// let client = server.user_client("my-controller");
    /// # let _ = client; }
    /// ```
    pub fn user_client(&self, user: &str) -> kube::Client {
        match kube::Client::try_from(self.user_config(user)) {
            Ok(client) => client,
            Err(err) => panic!("failed to build a kube client for the test API server: {err}"),
        }
    }

    /// The state the server shares with its connections (for the crate's harnesses).
    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// A `kube::Client` for the server, like [`TestApiServer::client`] but
    /// returning the error instead of panicking.
    ///
    /// ```no_run
    /// # async fn demo(server: informer_testing::TestApiServer) -> Result<(), informer_testing::Error> {
    /// let client = server.try_client()?;
    /// # Ok(()) }
    /// ```
    pub fn try_client(&self) -> Result<kube::Client, Error> {
        kube::Client::try_from(self.config()).map_err(Error::Client)
    }

    /// A `kube::Client` for the server (with kube's default retry policy,
    /// which retries 429, 503 and 504 responses).
    ///
    /// # Panics
    ///
    /// If `kube` cannot build a client for the server's URL and CA, which it always can
    /// (use [`TestApiServer::try_client`] to get the error instead).
    ///
    /// ```no_run
    /// # async fn demo(server: informer_testing::TestApiServer) {
    /// let client = server.client();
    /// # let _ = client; }
    /// ```
    pub fn client(&self) -> kube::Client {
        match self.try_client() {
            Ok(client) => client,
            Err(err) => panic!("failed to build a kube client for the test API server: {err}"),
        }
    }

    /// A kubeconfig whose current context points at the server, with the CA
    /// (`certificate-authority-data`) and the bearer token, as a real cluster's has.
    ///
    /// ```no_run
    /// # async fn demo(server: informer_testing::TestApiServer) {
    /// let kubeconfig = server.kubeconfig();
    /// assert_eq!(kubeconfig.current_context.as_deref(), Some("informer-test"));
    /// # }
    /// ```
    pub fn kubeconfig(&self) -> Kubeconfig {
        const NAME: &str = "informer-test";
        Kubeconfig {
            clusters: vec![NamedCluster {
                name: NAME.into(),
                cluster: Some(Cluster {
                    server: Some(self.url()),
                    certificate_authority_data: self
                        .certificate_authority_pem()
                        .map(|pem| base64::engine::general_purpose::STANDARD.encode(pem)),
                    ..Cluster::default()
                }),
                ..NamedCluster::default()
            }],
            auth_infos: vec![NamedAuthInfo {
                name: NAME.into(),
                auth_info: Some(AuthInfo {
                    token: self.token().map(|t| SecretString::from(t.to_string())),
                    ..AuthInfo::default()
                }),
                ..NamedAuthInfo::default()
            }],
            contexts: vec![NamedContext {
                name: NAME.into(),
                context: Some(Context {
                    cluster: NAME.into(),
                    user: Some(NAME.into()),
                    namespace: Some("default".into()),
                    ..Context::default()
                }),
                ..NamedContext::default()
            }],
            current_context: Some(NAME.into()),
            kind: Some("Config".into()),
            api_version: Some("v1".into()),
            ..Kubeconfig::default()
        }
    }

    /// Writes [`TestApiServer::kubeconfig`] to a file (as JSON, which is valid
    /// YAML), for `kubectl --kubeconfig` or `KUBECONFIG`.
    ///
    /// ```no_run
    /// # async fn demo(server: informer_testing::TestApiServer) -> Result<(), informer_testing::Error> {
    /// server.write_kubeconfig("/tmp/test-kubeconfig")?;
    /// # Ok(()) }
    /// ```
    pub fn write_kubeconfig(&self, path: impl AsRef<Path>) -> Result<(), Error> {
        let path = path.as_ref();
        let text = serde_json::to_string_pretty(&self.kubeconfig()).map_err(|e| {
            Error::WriteKubeconfig {
                path: path.to_path_buf(),
                source: std::io::Error::other(e),
            }
        })?;
        std::fs::write(path, text).map_err(|source| Error::WriteKubeconfig {
            path: path.to_path_buf(),
            source,
        })
    }

    /// Serves a custom resource type from now on (discovery included).
    /// Registering the same group and plural again replaces the type but keeps its objects.
    ///
    /// ```no_run
    /// # async fn demo(server: informer_testing::TestApiServer) -> Result<(), informer_testing::Error> {
    /// use informer_testing::CustomResourceSpec;
    /// server.register_custom_resource(CustomResourceSpec::namespaced("example.com", "v1", "Widget", "widgets"))?;
    /// # Ok(()) }
    /// ```
    pub fn register_custom_resource(&self, spec: CustomResourceSpec) -> Result<(), Error> {
        self.shared
            .install_crd(spec.to_crd(), false)
            .map_err(|err| Error::InvalidCustomResource(err.message().to_string()))
    }

    /// Installs a CustomResourceDefinition now (or updates the one with its name), as a
    /// client's create of it would, and serves its types at once (discovery included). Takes
    /// what [`TestApiServerBuilder::crd`] takes. Unlike CRDs given to the builder, it is
    /// not installed again after a restart that loses data (as a client's create is not).
    ///
    /// # Errors
    /// [`Error::InvalidCustomResource`] with the API server's message if the CRD is invalid.
    ///
    /// ```no_run
    /// # async fn demo(server: informer_testing::TestApiServer) -> Result<(), informer_testing::Error> {
    /// server.install_crd(serde_json::json!({
    ///     "apiVersion": "apiextensions.k8s.io/v1",
    ///     "kind": "CustomResourceDefinition",
    ///     "metadata": {"name": "widgets.example.com"},
    ///     "spec": {
    ///         "group": "example.com",
    ///         "scope": "Namespaced",
    ///         "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
    ///         "versions": [{"name": "v1", "served": true, "storage": true,
    ///             "schema": {"openAPIV3Schema": {"type": "object",
    ///                 "x-kubernetes-preserve-unknown-fields": true}}}]
    ///     }
    /// }))?;
    /// # Ok(()) }
    /// ```
    pub fn install_crd(&self, crd: impl Serialize) -> Result<(), Error> {
        let crd =
            serde_json::to_value(crd).map_err(|e| Error::InvalidCustomResource(e.to_string()))?;
        self.shared
            .install_crd(crd, false)
            .map_err(|err| Error::InvalidCustomResource(err.message().to_string()))
    }

    /// Sets what `pods/log` (`kubectl logs`) returns for a container of a Pod, as if its
    /// kubelet had collected `text` (the server runs no kubelet). Replaces what was set
    /// before; the Pod need not exist yet. Without it, a Pod not yet bound to a Node has
    /// empty logs, and one bound to a Node gets the API server's answer when it cannot
    /// reach that Node's kubelet: a 404 if the Node does not exist, a 500 if it has no
    /// address, else empty logs.
    ///
    /// ```no_run
    /// # async fn demo(server: informer_testing::TestApiServer) {
    /// server.set_pod_log("default", "web-0", "app", "listening on :8080\n");
    /// # }
    /// ```
    pub fn set_pod_log(&self, namespace: &str, pod: &str, container: &str, text: &str) {
        self.shared.pod_logs.write().insert(
            (
                namespace.to_string(),
                pod.to_string(),
                container.to_string(),
            ),
            text.to_string(),
        );
    }

    /// The fault-injection and request-counting handle.
    ///
    /// ```no_run
    /// # async fn demo(server: informer_testing::TestApiServer) {
    /// server.faults().drop_watches();
    /// # }
    /// ```
    pub fn faults(&self) -> Faults {
        Faults {
            shared: self.shared.clone(),
        }
    }

    /// The latest resource version (the shared revision counter).
    ///
    /// ```no_run
    /// # async fn demo(server: informer_testing::TestApiServer) {
    /// let rv = server.resource_version();
    /// # let _ = rv; }
    /// ```
    pub fn resource_version(&self) -> u64 {
        self.shared.store.revision()
    }

    /// What the server holds, by its own accounting: objects, history, watches and their
    /// backlogs, in counts and bytes (see [`TestApiServerBuilder`]'s bounds).
    ///
    /// ```no_run
    /// # async fn demo(server: informer_testing::TestApiServer) {
    /// let stats = server.stats();
    /// assert!(stats.history_bytes <= 128 << 20);
    /// # }
    /// ```
    pub fn stats(&self) -> ServerStats {
        self.shared.store.stats()
    }

    /// The revision history starts after: watches and continue tokens from
    /// older versions, and `Exact` reads of them, get `410 Gone`.
    ///
    /// ```no_run
    /// # async fn demo(server: informer_testing::TestApiServer) {
    /// server.faults().compact();
    /// assert_eq!(server.compacted_resource_version(), server.resource_version());
    /// # }
    /// ```
    pub fn compacted_resource_version(&self) -> u64 {
        self.shared.store.snapshot().compacted_revision()
    }

    fn resource_for(&self, api_version: &str, kind: &str) -> Result<Arc<ResourceType>, Error> {
        self.shared
            .registry
            .read()
            .by_kind(api_version, kind)
            .ok_or_else(|| Error::UnknownKind {
                api_version: api_version.to_string(),
                kind: kind.to_string(),
            })
    }

    fn namespace_for<'a>(resource: &ResourceType, namespace: Option<&'a str>) -> Option<&'a str> {
        if resource.namespaced {
            Some(namespace.unwrap_or("default"))
        } else {
            None
        }
    }

    /// Creates an object directly (no HTTP request, no faults, not counted),
    /// exactly as a POST would. The type comes from `apiVersion` and `kind`;
    /// namespaced objects without `metadata.namespace` go to `default`.
    ///
    /// ```no_run
    /// # async fn demo(server: informer_testing::TestApiServer) -> Result<(), informer_testing::Error> {
    /// let created = server.create_json(serde_json::json!({
    ///     "apiVersion": "v1", "kind": "Pod",
    ///     "metadata": {"name": "web", "namespace": "default"},
    ///     "spec": {"containers": [{"name": "app", "image": "nginx"}]}
    /// }))?;
    /// assert_eq!(created["metadata"]["resourceVersion"].as_str().is_some(), true);
    /// # Ok(()) }
    /// ```
    pub fn create_json(&self, object: Value) -> Result<Value, Error> {
        let (api_version, kind) = type_of(&object);
        let resource = self.resource_for(&api_version, &kind)?;
        let namespace = object
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .map(str::to_string);
        let namespace = Self::namespace_for(&resource, namespace.as_deref());
        let storage = resource.storage(&self.shared.registry.read());
        let mut object = object;
        resource.to_storage(&mut object);
        events::prepare_create(&resource, namespace, &mut object)?;
        let created = self
            .shared
            .store
            .lock()
            .create(&storage, namespace, object, false)?;
        let name = created
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("");
        self.shared.after_write(&storage, name);
        Ok(resource.present(&created).as_ref().clone())
    }

    /// Replaces an object directly, exactly as a PUT would (a set
    /// `metadata.resourceVersion` must match, or the update fails with 409).
    ///
    /// ```no_run
    /// # async fn demo(server: informer_testing::TestApiServer) -> Result<(), informer_testing::Error> {
    /// let mut pod = server.get_json("v1", "Pod", Some("default"), "web").expect("exists");
    /// pod["metadata"]["labels"] = serde_json::json!({"app": "web"});
    /// server.update_json(pod)?;
    /// # Ok(()) }
    /// ```
    pub fn update_json(&self, object: Value) -> Result<Value, Error> {
        self.write_json(object, Subresource::Main)
    }

    /// Replaces an object's `status` directly, as a PUT to the `status`
    /// subresource would (for types without one, the whole object is replaced).
    ///
    /// ```no_run
    /// # async fn demo(server: informer_testing::TestApiServer) -> Result<(), informer_testing::Error> {
    /// let mut pod = server.get_json("v1", "Pod", Some("default"), "web").expect("exists");
    /// pod["status"] = serde_json::json!({"phase": "Running"});
    /// server.update_status_json(pod)?;
    /// # Ok(()) }
    /// ```
    pub fn update_status_json(&self, object: Value) -> Result<Value, Error> {
        self.write_json(object, Subresource::Status)
    }

    fn write_json(&self, object: Value, subresource: Subresource) -> Result<Value, Error> {
        let (api_version, kind) = type_of(&object);
        let resource = self.resource_for(&api_version, &kind)?;
        let subresource = if resource.status_subresource {
            subresource
        } else {
            Subresource::Main
        };
        let name = object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let namespace = object
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .map(str::to_string);
        let namespace = Self::namespace_for(&resource, namespace.as_deref());
        let storage = resource.storage(&self.shared.registry.read());
        let mut object = object;
        resource.to_storage(&mut object);
        let mut store = self.shared.store.lock();
        events::prepare_update(&resource, &store, &storage, namespace, &name, &mut object)?;
        let updated = store.update(&storage, namespace, &name, object, subresource, false)?;
        drop(store);
        self.shared.after_write(&storage, &name);
        Ok(resource.present(&updated).as_ref().clone())
    }

    /// Reads an object directly.
    ///
    /// ```no_run
    /// # async fn demo(server: informer_testing::TestApiServer) {
    /// let ns = server.get_json("v1", "Namespace", None, "default");
    /// assert!(ns.is_some());
    /// # }
    /// ```
    pub fn get_json(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Option<Value> {
        let resource = self.resource_for(api_version, kind).ok()?;
        let namespace = Self::namespace_for(&resource, namespace);
        self.shared
            .store
            .get(&resource, namespace, name)
            .ok()
            .map(|o| resource.present(&o).as_ref().clone())
    }

    /// Lists objects of a type directly, in one namespace or (with `None`) in all.
    ///
    /// ```no_run
    /// # async fn demo(server: informer_testing::TestApiServer) -> Result<(), informer_testing::Error> {
    /// let namespaces = server.list_json("v1", "Namespace", None)?;
    /// assert!(namespaces.len() >= 1);
    /// # Ok(()) }
    /// ```
    pub fn list_json(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
    ) -> Result<Vec<Value>, Error> {
        let resource = self.resource_for(api_version, kind)?;
        let namespace = namespace
            .filter(|_| resource.namespaced)
            .map(str::to_string);
        let request = ListRequest {
            filter: Filter::all(resource.clone(), namespace),
            version: ReadVersion::MostRecent,
            limit: None,
            continue_token: None,
        };
        let page = self.shared.store.list(&request)?;
        Ok(page
            .items
            .iter()
            .map(|o| resource.present(o).as_ref().clone())
            .collect())
    }

    /// Deletes an object directly, as a DELETE would: objects with finalizers
    /// are only marked. Returns the deleted (or marked) object.
    ///
    /// ```no_run
    /// # async fn demo(server: informer_testing::TestApiServer) -> Result<(), informer_testing::Error> {
    /// server.delete_json("v1", "Pod", Some("default"), "web")?;
    /// # Ok(()) }
    /// ```
    pub fn delete_json(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Value, Error> {
        let resource = self.resource_for(api_version, kind)?;
        let namespace = Self::namespace_for(&resource, namespace);
        let storage = resource.storage(&self.shared.registry.read());
        let outcome = self.shared.store.lock().delete(
            &storage,
            namespace,
            name,
            &DeleteOptions::default(),
            false,
        )?;
        self.shared.after_write(&storage, name);
        Ok(match outcome {
            DeleteOutcome::Deleted(o) | DeleteOutcome::Pending(o) => {
                resource.present(&o).as_ref().clone()
            }
        })
    }

    /// Stops the server: closes the listener and every connection.
    ///
    /// ```no_run
    /// # async fn demo(server: informer_testing::TestApiServer) {
    /// server.shutdown();
    /// # }
    /// ```
    pub fn shutdown(self) {
        // Drop does the work.
    }
}

impl Drop for TestApiServer {
    fn drop(&mut self) {
        self.task.abort();
        for controller in &self.controllers {
            controller.abort();
        }
        self.shared.close_connections();
        tracing::debug!(address = %self.address, "test API server stopped");
    }
}

/// The string at `pointer` in `value`, or `""` (absent, or not a string).
pub(crate) fn str_at<'a>(value: &'a Value, pointer: &str) -> &'a str {
    value.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// The value at `pointer` in `value`, unless it is absent or `null` (a Go pointer left nil).
pub(crate) fn value_at<'a>(value: &'a Value, pointer: &str) -> Option<&'a Value> {
    value.pointer(pointer).filter(|v| !v.is_null())
}

/// A new bearer token for `user`, valid while the server runs.
pub(crate) fn register_user(shared: &Shared, user: &str) -> String {
    let token = tls::new_token();
    shared.users.write().insert(token.clone(), Arc::from(user));
    token
}

fn type_of(object: &Value) -> (String, String) {
    let field = |name: &str| {
        object
            .get(name)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    (field("apiVersion"), field("kind"))
}
