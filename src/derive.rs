//! `#[derive(ControllerSpec)]` and `#[indexer]`: a controller from an annotated struct.
//!
//! A struct, its attributes and, where children cannot say it all, a `reconcile` function
//! are a whole controller: the derive wires informers (shared through the factory), handlers
//! (primary → its own key, owned and child → the owner's key, watched → the mapper's keys),
//! the workqueue and the workers, the children it declares, and a struct `<Name>Listers`
//! with a typed lister per resource, which the reconcile's `ctx: &Context<Self>` reaches.
//! The generated code only calls the public
//! [`ControllerBuilder`](crate::runtime::controller::ControllerBuilder); see
//! [`ControllerSpec`](crate::runtime::controller::ControllerSpec) for what it implements.
//!
//! ```
//! use informer::prelude::*;
//! use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
//!
//! /// ReplicaSets by the UID of their controlling owner.
//! #[indexer(ReplicaSet)]
//! fn by_owner(rs: &ReplicaSet) -> Option<String> {
//!     let refs = rs.metadata.owner_references.as_ref()?;
//!     refs.iter().find(|r| r.controller == Some(true)).map(|r| r.uid.clone())
//! }
//!
//! #[derive(ControllerSpec)]
//! #[controller(for = Deployment, owns(ReplicaSet, index = [ByOwner]), workers = 4, resync = "10m")]
//! struct Deployments;
//!
//! impl Reconcile for Deployments {
//!     async fn reconcile(
//!         &self,
//!         ctx: &Context<Self>,
//!         key: &ObjectKey,
//!         deployment: Option<Arc<Deployment>>,
//!     ) -> Result<Action, ReconcileError> {
//!         let Some(deployment) = deployment else { return Ok(Action::Done) };
//!         let uid = deployment.metadata.uid.as_deref().unwrap_or_default();
//!         let owned = ctx.replica_sets().by_index::<ByOwner>(uid);
//!         println!("{key}: {} replica sets", owned.len());
//!         Ok(Action::Done)
//!     }
//! }
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let client = kube::Client::try_default().await?;
//! Deployments.run(client).await?; // until Ctrl-C or SIGTERM
//! # Ok(()) }
//! ```
//!
//! # Children
//! `children(T, from = f)` declares the children of each primary object: `f` returns the
//! `T`s it wants, and before each reconcile the controller makes the cluster match. It
//! applies each child with server-side apply (field manager: the controller's name), owns
//! it (an owner reference in the parent's namespace, and from a cluster-scoped parent to
//! any child; labels and an annotation from a namespaced parent to a child in another
//! namespace or a cluster-scoped one, where owner references cannot go), skips children whose cached object already holds
//! what is wanted, deletes those no longer wanted (and, across namespaces, those of a
//! parent that is gone, even one deleted while the controller was down; in any namespace,
//! those of a parent that leaves the controller's `labels` or `fields`), watches them (a
//! child that changes reconciles its parent) and logs what it did. It never takes over an
//! object that is not the parent's: if a child's name is taken by one (made by hand, or
//! controlled by another owner), that object is left alone, the reconcile fails (tried
//! again every 15 s) and a Warning Event `ErrResourceExists` on the parent says why; an
//! object controlled by the parent (made by the operator this one replaces) is adopted.
//! What makes an object the controller's is its label `informer.dev/controller=<name>`
//! ([`CONTROLLER_LABEL`](crate::runtime::controller::CONTROLLER_LABEL)): never put it on an
//! object by hand, or the controller treats it as its own (adopts it, deletes it when no
//! parent wants it). Namespace children are brought in line first, and a child in a
//! namespace that is a `Namespace` child of the same parent is written only once that
//! namespace is in line: a refused namespace (someone else's) gets nothing written in it.
//! Replacing another operator, give this one its field manager with `name = "..."`. A
//! child write the server refuses (a field that cannot change, such as a Job's pod
//! template) is retried and reported on the parent as a Warning Event `FailedUpdate` (or
//! `FailedCreate`): name such a child after what it is made from (a hash of the spec), so
//! that a change makes a new one and the old one goes. A `reconcile` written
//! beside the children runs after them and reads what they did with
//! [`ctx.children_report()`](crate::runtime::controller::Context::children_report) (the
//! children created, updated and deleted: say, to record an Event for each one created
//! with [`ctx.recorder()`](crate::runtime::controller::Context::recorder)).
//! The full rules are on
//! [`ControllerBuilder::children`](crate::runtime::controller::ControllerBuilder::children).
//!
//! ```
//! use informer::prelude::*;
//! use k8s_openapi::api::core::v1::ConfigMap;
//!
//! /// Every ConfigMap labelled `mirror=true`, copied into namespace `mirror`.
//! fn copy(source: &ConfigMap) -> Option<ConfigMap> {
//!     let mut copy = ConfigMap::default();
//!     copy.metadata.name = Some(format!("{}.{}", source.metadata.namespace.as_deref()?, source.metadata.name.as_deref()?));
//!     copy.data = source.data.clone();
//!     Some(copy)
//! }
//!
//! #[derive(ControllerSpec)]
//! #[controller(for = ConfigMap, labels = "mirror=true", children(ConfigMap, from = copy, namespace = "mirror", lister = copies))]
//! struct Mirror;
//!
//! impl Reconcile for Mirror {} // the children are all it does
//! ```
//!
//! With `status = g` beside it, a controller declares all it writes: the Deployment example
//! (`examples/deployment_controller.rs`) has no `reconcile` body.
//!
//! A cluster-scoped parent (a `Namespace`, a `Node`, a cluster-scoped custom resource) has
//! no namespace to give its children: `f` names each namespaced child's namespace in its
//! `metadata.namespace` (a child without one, whose watch is not limited to one namespace,
//! fails the reconcile with a terminal error that says so), and `all_namespaces` lets the
//! controller watch them wherever they are. Here, the `Namespace`s labelled
//! `defaults=true` each get a `ConfigMap` inside them:
//!
//! ```
//! use informer::prelude::*;
//! use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
//!
//! fn defaults(ns: &Namespace) -> Option<ConfigMap> {
//!     let mut cm = ConfigMap::default();
//!     cm.metadata.name = Some("defaults".into());
//!     cm.metadata.namespace = ns.metadata.name.clone(); // inside the parent
//!     cm.data = Some([("owner".to_string(), ns.metadata.name.clone()?)].into());
//!     Some(cm)
//! }
//!
//! #[derive(ControllerSpec)]
//! #[controller(for = Namespace, labels = "defaults=true", children(ConfigMap, from = defaults, all_namespaces))]
//! struct NamespaceDefaults;
//!
//! impl Reconcile for NamespaceDefaults {}
//! ```
//!
//! A child edited by someone else is put back as `f` wants it, field by field: server-side
//! apply restores the fields the controller applies and leaves alone what others added
//! (another key in a `ConfigMap`'s data stays). A parent that leaves the controller's
//! `labels` or `fields` loses its children; the status the controller wrote on it stays as
//! it was (the controller no longer reads that object, nor writes to it).
//!
//! With `create_only` (`children(Secret, from = f, create_only)`), a missing child is
//! created and an existing one is never changed (java-operator-sdk's creator-only
//! dependents): for what is made once and kept, such as a generated password. Without it,
//! children are applied with `force`, so a function that computes a new value each time
//! would overwrite the child whenever the cache does not hold it yet (after a restart).
//! See [`WatchOptions::create_only`](crate::runtime::controller::WatchOptions::create_only).
//!
//! `f` is `fn(&Parent) -> R`, or `fn(&Parent, &Context<Self>) -> R` to read the context's
//! listers and the controller's own fields (`ctx.spec()`), where `R` is `Vec<T>`, `Option<T>` (at most one), or a `Result` of either (an
//! error fails the reconcile and leaves the existing children as they are; it is retried,
//! unless it is a [`ReconcileError::terminal`](crate::runtime::ReconcileError::terminal),
//! say for a spec only its author can fix, which waits for the parent's next change). An
//! empty `Vec` or `None` deletes the existing children. A `reconcile`, if written, runs after
//! the children are in line (say, to write the parent's status); a controller whose
//! children are all it does writes `impl Reconcile for Name {}`. In that same pass the
//! listers may not hold yet the children just written (their watch events come after):
//! read what was applied from `ctx.children_report()`; the writes' events reconcile the
//! parent again, and that pass sees them.
//!
//! A function that spreads children over namespaces (one copy per namespace a watched
//! lister holds: `watches(Namespace, mapper = every_parent, labels = "team")` and
//! `children(Secret, from = f, all_namespaces, lister = copies)`, `f` reading
//! `ctx.namespaces()`) leaves out namespaces being deleted (`deletionTimestamp` set): the
//! API server refuses new objects there, and the reconcile fails and is retried until the
//! cache no longer holds the namespace. The mapper returns every parent's key
//! (`ctx.lister().list()`), so that a namespace that comes or goes reconciles them all.
//!
//! # Entry points
//! On the struct (traits [`RunController`](crate::runtime::manager::RunController) and
//! [`ControllerSpec`](crate::runtime::controller::ControllerSpec), in the prelude):
//! - `run(client).await` (until a signal) and `run_until(client, cancel).await` (until the
//!   token is cancelled): `Result<(), BuildError>`
//!   ([`BuildError`](crate::runtime::controller::BuildError): the declaration cannot be
//!   built; errors while running are logged, counted and retried);
//! - `add_to(&mut manager)`, beside other controllers, with metrics, health and leader
//!   election: `Result<Listers, ManagerError>` ([`ManagerError`](crate::runtime::manager::ManagerError)),
//!   the controller's listers (its caches and typed indexes, as `ctx` reads them) for a task
//!   or a handler beside it;
//! - `into_controller(&factory)`: `Result<Controller<_>, BuildError>`, a
//!   [`Controller`](crate::runtime::Controller) to run yourself.
//!
//! # `#[controller(...)]`
//!
//! | attribute | meaning | builder call |
//! | --- | --- | --- |
//! | `for = Deployment` | the primary resource (required) | `Controller::<Deployment>::builder` |
//! | `owns(ReplicaSet, ...)` | reconcile the controlling owner when one changes (repeatable) | `owns_with` |
//! | `watches(ConfigMap, mapper = f, ...)` | reconcile the keys `f` returns: `fn(&ConfigMap) -> Vec<ObjectKey>` or `-> Option<ObjectKey>`, or `fn(&ConfigMap, &Context<Self>) -> ...` to read the controller's listers and indexes (the parents an index files under the ConfigMap); on an update it runs for the old and the new object and both sets of keys are reconciled (a parent the ConfigMap stopped naming too); keep it quick: no API calls | `watches_with` |
//! | `children(ReplicaSet, from = f, ...)` | the children `f` wants, applied, owned, watched and deleted for you (see above; one per type); `create_only`: created when missing, never changed | `children_with` |
//! | `status = f` | the status `f` computes for each primary object (`fn(&T) -> S` or `fn(&T, &Context<Self>) -> S`, `S` its status type or an `Option` of it; for a resource whose status type is known, one that declares it as kube's `#[kube(status = "...")]` does or a k8s-openapi type with a status (`Deployment`, `Pod`, `Job`, ...), any other return type is a compile error), written with server-side apply after `reconcile` succeeded and the children are in line (not while one of them fails, nor after a failed reconcile: `on_error` reports failures) when the cached object does not hold it, or holds fields the function stopped returning (which the apply removes) | `status` |
//! | `validate = f` | a check of each live primary object before anything else: `fn(&T) -> Result<(), E>` or `fn(&T, &Context<Self>) -> Result<(), E>` (`E` a `ReconcileError` or any error); an `Err` writes no child, skips `reconcile` and the status, and goes to `on_error` (a [terminal](crate::runtime::ReconcileError::terminal) one waits for the object's next change); an object being deleted is not checked | `validate` |
//! | `finalizer = "example.com/cleanup"` | a finalizer the controller manages: put on each live object (after `validate`) before any child is written; once the object is being deleted, its children in other namespaces are deleted, [`Reconcile::cleanup`](crate::runtime::controller::Reconcile::cleanup) runs instead of `reconcile`, and the finalizer goes when it answers `Action::Done` (see "Finalizers"); a domain-qualified name, checked at compile time | `finalizer` |
//! | `index = [ByOwner]` | typed indexes of the primary resource, registered up front | `indexed_by` |
//! | `workers = 4` | reconciles at once (at least 1; default 1) | `workers` |
//! | `resync = "10m"` | queue every object again this often (at least 1s), whatever its `*_changed` filters (java-operator-sdk's `maxReconciliationInterval`) | `resync` |
//! | `timeout = "30s"` | a reconcile running longer is dropped and retried | `timeout` |
//! | `namespace = "shop"` | watch one namespace (default: all), and `owns`, `watches` and `children` there too unless they say otherwise; for a cluster-scoped resource, only the latter | `namespace` |
//! | `namespace = f` | the namespace `f` names when the controller is built, say the operator's own from `POD_NAMESPACE`: `fn() -> String` or `fn(&Self) -> String` (a field of the struct), any `Into<String>` ([`MakeNamespace`](crate::runtime::controller::MakeNamespace)) | `namespace` |
//! | `labels = "app=web"`, `fields = "..."` | selectors of the primary resource | `label_selector`, `field_selector` |
//! | `filter = f` | which changes of the primary queue its key: `fn() -> Filter<Resource>` (controller-runtime's predicates; `Filter::generation_changed()` for java-operator-sdk's generation-aware processing: status-only changes do not reconcile, and a `resync` still reconciles every object) | `filter` |
//! | `metadata` | watch only metadata; the resource becomes `PartialObjectMeta<T>` | `metadata_only` |
//! | `queue = "priority"` / `"plain"` | initial list and resyncs wait behind real changes / plain FIFO (default) | `priority_queue` |
//! | `queue = my_queue` | your queue: `fn(Arc<dyn QueueMetrics>) -> Arc<dyn Queue<ObjectKey>>`, or `fn(&Self, Arc<dyn QueueMetrics>) -> ...` to use the struct's state; either may return `Arc<MyQueue>` | `queue` ([`MakeQueue`](crate::runtime::controller::MakeQueue)) |
//! | `store = my_store` | your cache **of the primary resource** (owned, watched and child types keep the factory's shared caches): `fn() -> Arc<dyn Indexer<T>>`, or `fn(&Self) -> Arc<dyn Indexer<T>>` to use the struct's state; either may return `Arc<MyStore>` to keep a handle of your store's type | `store` ([`MakeStore`](crate::runtime::controller::MakeStore)) |
//! | `keep_managed_fields` | keep `metadata.managedFields` in caches (see below) | factory setting |
//! | `read_your_writes = false` | turn off the read-your-own-writes gate (on by default: a reconcile waits until the caches hold the writes its key's last reconcile made through `ctx.client()`) | `read_your_writes` |
//! | `name = "deployments"` | metrics and log name, and the field manager and label of its children (default: the struct's name, snake_case) | `name` |
//! | `lister = name` | the primary accessor's name (default: the type's plural, `ctx.deployments()`) | |
//! | `crate = path` | where `informer_runtime` is (default `::informer::runtime`) | |
//!
//! A `status = f` with conditions starts from the object's current conditions and sets each
//! with [`set_status_condition`](crate::runtime::conditions::set_status_condition), so that
//! a condition's `lastTransitionTime` moves only when its `status` does. Built afresh, every
//! condition would take a new time, and the status a write, each time it is computed after
//! another change:
//!
//! ```
//! use informer::prelude::*;
//! use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
//! use kube::CustomResource;
//! use schemars::JsonSchema;
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(CustomResource, Clone, Debug, Deserialize, Serialize, JsonSchema)]
//! #[kube(group = "example.com", version = "v1", kind = "Website", namespaced)]
//! #[kube(status = "WebsiteStatus")]
//! pub struct WebsiteSpec {
//!     pub replicas: i32,
//! }
//!
//! #[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
//! #[serde(rename_all = "camelCase")]
//! pub struct WebsiteStatus {
//!     pub observed_generation: Option<i64>,
//!     // The `schemars` feature of `informer`: the schema of `[]metav1.Condition`.
//!     #[schemars(schema_with = "informer::runtime::conditions::schema")]
//!     pub conditions: Vec<Condition>,
//! }
//!
//! /// `status = status`, beside `children(Deployment, ...)` read through `ctx`.
//! fn status(site: &Website, available: i32) -> WebsiteStatus {
//!     let mut status = site.status.clone().unwrap_or_default();
//!     let ready = available == site.spec.replicas;
//!     set_status_condition(&mut status.conditions, Condition {
//!         type_: "Ready".into(),
//!         status: if ready { CONDITION_TRUE } else { CONDITION_FALSE }.into(),
//!         reason: if ready { "Available" } else { "Progressing" }.into(),
//!         message: format!("{available} of {} replicas available", site.spec.replicas),
//!         observed_generation: site.metadata.generation,
//!         last_transition_time: UNSET_TIME, // now, when the status changes
//!     });
//!     status.observed_generation = site.metadata.generation;
//!     status
//! }
//! # let site = Website::new("blog", WebsiteSpec { replicas: 2 });
//! # let first = status(&site, 1);
//! # let mut site = site;
//! # site.status = Some(first.clone());
//! # let again = status(&site, 1);
//! # assert_eq!(first.conditions[0].last_transition_time, again.conditions[0].last_transition_time);
//! ```
//!
//! Inside `owns(T, ...)`, `watches(T, ...)` and `children(T, ...)`: `namespace = "..."` (or
//! `namespace = f`, as above) or `all_namespaces` (default: the controller's namespace; a cluster-scoped `T` such as
//! `Namespace` or `Node` is watched cluster-wide whatever the namespace), `filter = f`,
//! `index = [..]`, `lister = name`; `labels`, `fields` and `metadata` in `owns` and
//! `watches`; `mapper = f` in `watches` only; `from = f` and `create_only` in `children`
//! only.
//!
//! `filter = f` there chooses which changes of `T` queue keys, as the top-level `filter`
//! does for the primary: `fn() -> Filter<T>`, or `fn() -> Filter<PartialObjectMeta<T>>`
//! with `metadata` (controller-runtime's `Owns(&T{}, builder.WithPredicates(...))` and
//! `Watches(..., builder.WithPredicates(...))`;
//! [`WatchOptions::filter`](crate::runtime::controller::WatchOptions::filter)). Say,
//! `owns(Deployment, filter = spec_changes)` with `Filter::generation_changed()`: a child's
//! status updates no longer reconcile its parent. The cache still holds every change, but
//! on `children` a rejected change (a child edited by hand) is not undone until the
//! parent's next reconcile. Adds and deletes pass the built-in filters; a filter of your
//! own that rejects them leaves the parent unaware of a child created or deleted.
//!
//! # One kind, watched twice
//! A kind may be watched more than once (the primary's own kind included: a controller that
//! copies ConfigMaps watches its sources and its copies) when the watches differ: another
//! `namespace` (or `all_namespaces`), other `labels` or `fields`, `metadata` against full
//! objects, or `children` (watched through the controller's label), or when they do
//! different things: a kind both owned and watched through a mapper (`owns(ConfigMap)` and
//! `watches(ConfigMap, mapper = source_of, lister = sources)`), or the primary kind owned too,
//! share one informer that feeds each handler. Each needs its own accessor:
//! `lister = copies`. The same watch twice (two `owns`, two `watches` of one kind in one
//! place) is an error that says so: merge them.
//!
//! # The context
//! `ctx: &Context<Self>` ([`Context`](crate::runtime::controller::Context)) has
//! `client()` (the controller's `kube::Client`), `api::<T>(namespace)` (a typed
//! `kube::Api` over it, in one call: `ctx.api::<ReplicaSet>(key.namespace())`), `queue()`,
//! `name()`, `lister()` and `recorder()` (Kubernetes Events reported as the controller, an
//! [`EventRecorder`](crate::runtime::events::EventRecorder)), and through `Deref` the
//! generated `<Name>Listers`: one accessor
//! per resource, named after the Rust type's plural in snake_case (`ctx.deployments()`,
//! `ctx.replica_sets()`, `ctx.network_policies()`; a view `PodView` is `ctx.pod_views()`,
//! unless named with `lister = pods`), each a
//! [`Lister`](crate::runtime::Lister). Only declared kinds are cached: there is no
//! `ctx.config_maps()` until the attribute names ConfigMaps (`owns(ConfigMap)`,
//! `watches(ConfigMap, mapper = f)`, `children(ConfigMap, ..)`); read any other kind live
//! with `ctx.api::<ConfigMap>(namespace).get(name)`. Writes made through `ctx.client()` or `ctx.api()`
//! (and by declared children) are recorded for read-your-own-writes (on by default, see
//! [`ControllerBuilder::read_your_writes`](crate::runtime::controller::ControllerBuilder::read_your_writes)):
//! the next reconcile of the same key runs only once every cache the writes touched holds
//! them, so it never acts on a cache from before its own write. Writes through another
//! client are not covered.
//!
//! The struct itself may hold state (a client of an external system, settings, a clock a
//! test can set, counters behind an `Arc` or atomics): `reconcile` and `on_error` get
//! `&self`, shared by every worker, and `Name { .. }.run(client)` takes the value. The
//! functions named in the attributes that take `&Context<Self>` (children, status, mappers)
//! read it with [`ctx.spec()`](crate::runtime::controller::Context::spec), an `Option`
//! that is always `Some` in a derived controller (`ctx.spec().expect("derived")`, or
//! `let Some(me) = ctx.spec() else { .. }`).
//!
//! # Finalizers
//! A controller that must clean up before its object goes (state outside the cluster,
//! objects no owner reference reaches) declares a finalizer and writes
//! [`Reconcile::cleanup`](crate::runtime::controller::Reconcile::cleanup):
//!
//! ```no_run
//! use informer::prelude::*;
//! use k8s_openapi::api::core::v1::ConfigMap;
//!
//! #[derive(ControllerSpec)]
//! #[controller(for = ConfigMap, finalizer = "example.com/export")]
//! struct Exporter;
//!
//! impl Reconcile for Exporter {
//!     async fn reconcile(
//!         &self,
//!         _ctx: &Context<Self>,
//!         _key: &ObjectKey,
//!         cm: Option<Arc<ConfigMap>>,
//!     ) -> Result<Action, ReconcileError> {
//!         let Some(cm) = cm else { return Ok(Action::Done) }; // gone: cleaned up before
//!         let _ = cm; // write it to the external system
//!         Ok(Action::Done)
//!     }
//!
//!     async fn cleanup(
//!         &self,
//!         _ctx: &Context<Self>,
//!         _key: &ObjectKey,
//!         cm: Arc<ConfigMap>,
//!     ) -> Result<Action, ReconcileError> {
//!         let _ = cm; // remove it from the external system (idempotent: it may run again)
//!         Ok(Action::Done) // the finalizer goes, and the API server deletes the object
//!     }
//! }
//! ```
//!
//! The order, for each object:
//! - **live**: an object the cache holds with the finalizer is read from the API server
//!   first (one GET): a cache can go back in time (a restart against a lagging API server
//!   lists an object whose cleanup ran and which is gone), and an outside write made for
//!   such an object would never be cleaned up; gone, it is left to the cache's next
//!   events, being deleted, it is cleaned up (below). Then `validate` (an object it refuses
//!   gets no finalizer: nothing was written for it), the finalizer added if missing (a JSON
//!   patch testing the finalizers it read; `reconcile` sees the object with it), the
//!   declared children, `reconcile`, the declared status, all given the object as read;
//! - **being deleted, with the finalizer**: nothing is applied; the declared children in
//!   other namespaces are deleted; `cleanup` runs instead of `reconcile`; `Action::Done`
//!   removes the finalizer (a patch testing the `uid`, so that an object made again under the
//!   name keeps its own), `RequeueAfter`/`Requeue` keep it and run `cleanup` again later (an
//!   outside deletion still in progress), an error keeps it and goes to `on_error`. The
//!   children with owner references go with the object, through the garbage collector;
//! - **gone**: `reconcile(None)`, as without a finalizer.
//!
//! So a deletion while the controller is down waits for it, and is cleaned up when it
//! starts. Without `cleanup` (the provided one does nothing), the finalizer still holds the
//! object until its children in other namespaces are gone.
//!
//! In a reconcile of your own (a [`KeyReconciler`](crate::runtime::controller::KeyReconciler),
//! or a finalizer the controller does not own), the
//! [`finalizer`](crate::runtime::controller::finalizer) helper does the same inside
//! `reconcile` (kube-runtime's `finalizer`): it adds the finalizer, calls you with `Apply`
//! while the object lives and `Cleanup` once it is being deleted, then removes the
//! finalizer. Beside declared children it runs after them (the finalizer is added after the
//! first children are written, and not while their step fails): prefer `finalizer = ".."`.
//!
//! Declared children are brought in line before `reconcile` runs, and the declared status
//! is written after it, only when the children are in line and `reconcile` succeeded (as
//! java-operator-sdk patches the status its reconcile returns): after a failure, `on_error`
//! is where the status says so.
//!
//! # Failures
//! An error of `reconcile`, of the declared children before it, or of the declared status
//! after it, is logged and
//! counted; then `on_error` decides what happens to the key (kube-runtime's
//! `error_policy`). Unless you write it, a transient error is retried after the key's
//! backoff and a [terminal](crate::runtime::ReconcileError::terminal) one is not. Write it
//! to record the failure (an Event, or a `Ready=False` condition in the status with
//! [`set_status_condition`](crate::runtime::conditions::set_status_condition), as
//! java-operator-sdk's `updateErrorStatus`) or to choose another retry:
//!
//! ```no_run
//! use informer::prelude::*;
//! use informer::runtime::events::EventType;
//! use k8s_openapi::api::core::v1::ConfigMap;
//!
//! #[derive(ControllerSpec)]
//! #[controller(for = ConfigMap)]
//! struct Exporter;
//!
//! impl Reconcile for Exporter {
//!     async fn reconcile(
//!         &self,
//!         _ctx: &Context<Self>,
//!         _key: &ObjectKey,
//!         _cm: Option<Arc<ConfigMap>>,
//!     ) -> Result<Action, ReconcileError> {
//!         Err(ReconcileError::transient("the export service is down"))
//!     }
//!
//!     async fn on_error(
//!         &self,
//!         ctx: &Context<Self>,
//!         _key: &ObjectKey,
//!         cm: Option<Arc<ConfigMap>>,
//!         error: &ReconcileError,
//!     ) -> Action {
//!         if let Some(cm) = cm {
//!             let event = Event {
//!                 type_: EventType::Warning,
//!                 reason: "ExportFailed".into(),
//!                 action: "Export".into(),
//!                 note: Some(error.to_string()),
//!                 related: None,
//!             };
//!             let _ = ctx.recorder().publish_for(&*cm, &event).await; // best effort
//!         }
//!         // Terminal: not retried; transient: again after the key's growing backoff. (A
//!         // fixed `Action::requeue_after(..)` here would retry every failure at that pace.)
//!         error.default_action()
//!     }
//! }
//! ```
//!
//! It runs on the reconcile's worker, inside its timeout, and its writes through the
//! context's client are the key's own (read-your-own-writes waits for them). A reconcile
//! that panicked or timed out is retried after the backoff without it. Worth knowing:
//!
//! - **Its own writes reconcile the object again.** A status it writes is a change of the
//!   object, so the object is reconciled (and fails) once more: write, and record an Event,
//!   only when something changed ([`set_status_condition`](crate::runtime::conditions::set_status_condition)
//!   says whether it did), or give the primary `filter = f` with
//!   `Filter::generation_changed()`, which status writes do not pass.
//! - **`RequeueAfter(d)` is the latest time.** Any change queues the key sooner: the watch
//!   events of children written before the failure, too. Each child type is applied even
//!   when another failed (in declaration order, Namespaces first), except the children in
//!   a `Namespace` child that failed; the declared status waits until they all succeed,
//!   and `reconcile` too.
//! - **A spec that cannot be served writes no child** with `validate = f`, which runs
//!   before the children step and returns a
//!   [terminal](crate::runtime::ReconcileError::terminal) error (not retried until the
//!   spec changes). Child types are applied independently, so an error of one children
//!   function alone leaves the others applied.
//! - **Errors of the children step arrive wrapped**, as `computing the StatefulSet children
//!   failed: <yours>` or `applying Secret ns/name failed: <the API's>`; `error.as_error()`
//!   is a [`ChildrenError`](crate::runtime::controller::ChildrenError) and its `source()` is
//!   the error underneath (yours, for a children function): match on it to write your own
//!   message into a status. When several child types fail, the error is the first one's in
//!   declaration order (but a terminal one gives way to a later transient one, so that the
//!   key is retried); the others are logged as warnings.
//! - **Write a failure status with [`ctx.apply_status(&obj, &status)`](crate::runtime::controller::Context::apply_status)**,
//!   which writes it as a declared `status = f` is written: server-side apply as the
//!   controller's field manager (`ctx.name()`, forced), with the resource version of the
//!   object you reconciled as a precondition. A status computed from a stale cache then
//!   fails with a 409 instead of landing on a newer object, or on an object made since
//!   under the same name: answer `Action::Requeue` then (the newer version's own event
//!   may not pass your filter: a change of metadata alone does not pass
//!   `Filter::generation_changed()`); a declared status does the same by itself. Beside a
//!   declared `status = f`, give the whole status `f` would give, with the failed
//!   condition set: a field that an apply of the same manager leaves out is removed. Start
//!   from the object's current conditions, so that transition times are kept. If the write
//!   fails for another reason than a 404, answer `Action::Requeue`: answered
//!   `Done`, the failure never shows and the object looks healthy. `f` is not
//!   applied after a failed reconcile, so the failure stays until a reconcile succeeds,
//!   whose status `f` computes (clearing what the failure set, if `f` leaves it out).
//!
//! # Testing a controller
//! Against the in-process API server (the `testing` feature's `informer::testing`, or the
//! `informer-testing` crate as a dev-dependency), through the controller's real entry
//! point: start the server (with your CRDs: `TestApiServer::builder().crd(Widget::crd())`),
//! run the controller until a token is cancelled, write what a user would, and wait with
//! `informer::testing::eventually` for what the controller should do. The
//! server runs the garbage collector and namespace lifecycle but no kubelet or workload
//! controllers: a test writes a Pod's or a Deployment's status itself.
//!
//! A test of a schedule (a `resync`, a `requeue_after`) can run in virtual time: tokio's
//! paused clock needs the current-thread runtime, `#[tokio::test(start_paused = true)]`,
//! and the controller and the server then run in virtual time (see `informer::testing::wait`).
//! Otherwise use `#[tokio::test(flavor = "multi_thread", worker_threads = 2)]`, as below.
//!
//! ```
//! use informer::prelude::*;
//! // In a controller's crate: `informer::testing::{...}` (the `testing` feature).
//! use informer_testing::{TestApiServer, eventually};
//! use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
//! use kube::api::{Api, DeleteParams, PostParams};
//!
//! fn copy(source: &ConfigMap) -> Option<ConfigMap> {
//!     let mut copy = ConfigMap::default();
//!     copy.metadata.name = Some(format!("{}.{}", source.metadata.namespace.as_deref()?, source.metadata.name.as_deref()?));
//!     copy.data = source.data.clone();
//!     Some(copy)
//! }
//!
//! #[derive(ControllerSpec)]
//! #[controller(for = ConfigMap, labels = "mirror=true", children(ConfigMap, from = copy, namespace = "mirror", lister = copies))]
//! struct Mirror;
//!
//! impl Reconcile for Mirror {}
//!
//! # #[tokio::main(flavor = "multi_thread", worker_threads = 2)]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let server = TestApiServer::start().await?;
//! let client = server.client();
//! let ns: Namespace = serde_json::from_value(serde_json::json!({"metadata": {"name": "mirror"}}))?;
//! Api::<Namespace>::all(client.clone()).create(&PostParams::default(), &ns).await?;
//!
//! let cancel = CancellationToken::new();
//! let controller = tokio::spawn(Mirror.run_until(client.clone(), cancel.clone()));
//!
//! let sources = Api::<ConfigMap>::namespaced(client.clone(), "default");
//! let copies = Api::<ConfigMap>::namespaced(client.clone(), "mirror");
//! let source: ConfigMap = serde_json::from_value(serde_json::json!({
//!     "metadata": {"name": "settings", "labels": {"mirror": "true"}},
//!     "data": {"mode": "fast"},
//! }))?;
//! sources.create(&PostParams::default(), &source).await?;
//! eventually("the copy holds the source's data", async || {
//!     let copy = copies.get_opt("default.settings").await.unwrap();
//!     copy.and_then(|c| c.data).is_some_and(|d| d["mode"] == "fast")
//! })
//! .await;
//!
//! sources.delete("settings", &DeleteParams::default()).await?;
//! eventually("the copy is gone", async || {
//!     copies.get_opt("default.settings").await.unwrap().is_none()
//! })
//! .await;
//!
//! cancel.cancel();
//! controller.await??;
//! # Ok(()) }
//! ```
//!
//! For faults on top (crashes after writes, stale watches, failing requests), run the same
//! controller under `informer::testing::chaos::Chaos`: seeded schedules, invariants
//! checked at every state, a convergence check, a replayable seed.
//!
//! # Old names
//! `#[derive(Controller)]` still works and warns: it is `#[derive(ControllerSpec)]` now, after
//! the trait it implements (and `Controller` is the struct a builder makes). The generated
//! `<Name>Context` is a deprecated alias of `Context<Name>`. The builder's reconciler trait
//! is [`KeyReconciler`](crate::runtime::KeyReconciler) (it was `Reconciler`, too close to
//! `Reconcile`).
//!
//! # Errors are visible
//! A controller started through `run`, `run_until` or a manager reports failed reconciles:
//! through `tracing` when a subscriber is installed, otherwise on stderr, so that a
//! controller failing over and over is never silent.
//!
//! # Memory
//! When the controller runs with its own factory (`run`, `run_until`) or in a
//! [`Manager::new`](crate::runtime::Manager::new), its caches cost no more than client-go's,
//! by default:
//!
//! - **Compact caches** ([`ControllerSpec::CACHE_POLICY`](crate::runtime::controller::ControllerSpec::CACHE_POLICY),
//!   [`CachePolicy::COMPACT`](crate::runtime::factory::CachePolicy::COMPACT)): every cache
//!   (the primary resource's, and those of `owns` and `watches`) keeps its objects as
//!   compressed JSON in a [`CompactStore`](crate::runtime::compact_store::CompactStore),
//!   with the 256 objects most recently read or written kept decoded beside. A cached Pod
//!   costs about 1.5 KB instead of 27 KB decoded (client-go: about 15 KB). The cost: reading
//!   an object that is not hot decodes it (11–18 µs for a Pod, next to the milliseconds
//!   of the API call a reconcile makes), `list` and `by_index` decode what they return, and
//!   every change is encoded as it enters the cache, and the object it replaces decoded (on
//!   the decode threads when many come at once). The object an event was about is hot when
//!   its reconcile reads it soon after. In the benchmark's informer pipeline (I1: 10,000
//!   pods, 200,000 events, every event's key read by a worker) this runs at about 21,000
//!   events/s, 1.2× client-go's rate and a third of a decoded cache's: choose decoded
//!   caches or a view for a controller that must keep up with more.
//! - **No managed fields**: `metadata.managedFields` are skipped while decoding
//!   (`k8s-openapi` keeps them as a JSON value tree, about 10 KB per pod, where Go keeps about
//!   1 KB of raw bytes), so they cost neither memory nor decoding time. Add
//!   `keep_managed_fields` to keep them.
//!
//! To change the default: cache decoded objects (every read an `Arc` clone, 27 KB per Pod)
//! by building the controller over a factory of your own,
//! `Deployments.into_controller(&InformerFactory::new(client).cache_policy(CachePolicy::Decoded))`
//! (or `add_to` a [`Manager`](crate::runtime::Manager) made with such a factory,
//! `Manager::with_factory`); with `add_to` and `into_controller` the factory given decides
//! both settings (a controller with `keep_managed_fields` added to a manager whose factory
//! drops them is an error)
//! ([`InformerFactory::cache_policy`](crate::runtime::InformerFactory::cache_policy),
//! [`InformerFactory::drop_managed_fields`](crate::runtime::InformerFactory::drop_managed_fields)).
//! Or read a *view* of the resource: `#[controller(for = PodView)]` with a struct holding
//! only the fields the controller reads (`#[derive(View)]`, see [`crate::view`]): about
//! 1.2 KB per Pod decoded. Under the compact policy (the default of `run` and
//! [`Manager::new`](crate::runtime::Manager::new)) a view is kept compressed too, and a read
//! that is not hot decodes the view's few fields; to keep views decoded (every read an `Arc`
//! clone), use a factory with `cache_policy(CachePolicy::Decoded)` as above. A store of your
//! own is one attribute away (`store = ...`, above).
//!
//! # `#[indexer(T)]`
//! On a function from `&T` to the values an object is filed under (`Vec<String>`,
//! `Option<String>`, `String`, or a set), it adds a unit struct named after the function in
//! CamelCase (`by_owner` → `ByOwner`; or `#[indexer(T, name = Other)]`) implementing
//! [`Index<T>`](crate::runtime::lister::Index). Read it with
//! `lister.by_index::<ByOwner>(value)`; using it with another resource's lister, or listing
//! it beside another resource, does not compile. Values are not scoped by namespace: an
//! object of any namespace filed under `value` is returned, unless the read is through one
//! namespace (`lister.namespaced(ns).by_index::<ByOwner>(value)`). The index most controllers need, objects
//! by the UID of their controlling owner, comes ready-made for every resource:
//! [`ByControllerUid`](crate::runtime::lister::ByControllerUid), registered on a cache the
//! first time it is read (no need to list it in `index = [...]`).
//!
//! On a view (`#[indexer(PodView)]`), the function reads the view: a spec or status field the
//! view does not declare does not compile, but its `metadata` holds only the fields its
//! `metadata(...)` lists, so an index of an annotation, a label or an owner reference the
//! view does not keep compiles and files nothing. List in `metadata(...)` every metadata
//! field an index reads.
//!
//! # Mistakes are compile errors
//! Every mistake in the attributes is reported at once, on the tokens at fault, with what to
//! write instead: unknown keys (with "did you mean"), a missing `for` (and nothing more
//! about the code written for it), `workers = 0`, a malformed duration, a type that is not
//! a Kubernetes resource, an index listed beside the wrong resource or twice, a mapper or a
//! children function with the wrong signature, `children` without `from` or declared twice
//! for one type, one kind watched twice in the same place or read through one name, a
//! `status` function that returns another type than the resource's declared status, a
//! malformed `labels` selector (its syntax; `fields` selectors are
//! the server's to check), a misspelt resource type (one error, not one per use), a
//! missing `Reconcile` impl.
//!
//! ```compile_fail
//! use informer::prelude::*;
//! use k8s_openapi::api::apps::v1::Deployment;
//!
//! #[derive(ControllerSpec)]
//! #[controller(for = Deployment, workers = 0)] // error: a controller needs at least one worker
//! struct Deployments;
//! ```
