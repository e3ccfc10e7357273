//! Test a Kubernetes controller without a cluster.
//!
//! | area | what [`TestApiServer`] serves | what a real cluster does that it does not |
//! | --- | --- | --- |
//! | connection | HTTPS on `127.0.0.1` with a CA made at start-up and a bearer token, both in [`TestApiServer::kubeconfig`]; plain HTTP on request | client certificates, other authentication, RBAC (the one token may do everything), API priority and fairness |
//! | types | core v1 Pods, ConfigMaps, Secrets, Services, Namespaces, Events; apps/v1 Deployments, ReplicaSets, StatefulSets; coordination.k8s.io/v1 Leases; custom resources registered in Rust ([`TestApiServer::register_custom_resource`]) | every other built-in type (404); CustomResourceDefinitions through the API (`apiextensions.k8s.io`), so `kubectl apply -f crd.yaml` is not served; several versions of one type, conversion |
//! | discovery | `/api`, `/apis`, `/version`, OpenAPI v3, an empty OpenAPI v2, short names and categories (`kubectl get all`) | aggregated discovery (`apidiscovery.k8s.io`), `storageVersionHash`, aggregated API servers |
//! | encodings | JSON, YAML and Kubernetes protobuf bodies (the built-in types above); JSON and YAML responses, `Table` (`kubectl get`) and `PartialObjectMetadata`; 415 and 406 as a cluster answers | protobuf and CBOR responses; Go's zero-versus-unset distinction in protobuf bodies; printer columns of custom resources (their tables show name and age) |
//! | reads | get; list with label and field selectors, `limit`/`continue` over consistent snapshots, the `resourceVersion`/`resourceVersionMatch` rules; watch from a version, bookmarks, `timeoutSeconds`, streaming lists (`sendInitialEvents`), `410 Gone` past the history | the watch cache: `resourceVersion=0` is served from the latest state and paginated; the history is bounded by count and bytes (see [`TestApiServerBuilder`]) rather than by etcd's compaction and the watch cache's window |
//! | writes | create, update (409 on a stale version), merge, strategic merge (the common subset) and JSON patch, the `status` and `scale` subresources, `generation` for the types that have it, finalizers, `uid` and `resourceVersion` preconditions, `dryRun` | server-side apply's field ownership: apply merges without `managedFields`, conflicts or removal of fields a manager stopped applying; defaulting beyond a Pod's and a Namespace's phase and the namespace label (no `imagePullPolicy`, Service `clusterIP`, Deployment strategy ...); graceful deletion of Pods (they go at once, as unscheduled Pods do) |
//! | admission and validation | `fieldValidation=Strict\|Warn\|Ignore` for built-in types, `422 Invalid` with `details.causes` (metadata, and the rules listed in the validation module), NamespaceLifecycle (404 in a missing namespace, 403 `NamespaceTerminating`, `default`, `kube-system` and `kube-public` undeletable) | admission webhooks and policies, quotas and limit ranges, the full validation of every field, schemas of custom resources (no pruning, defaults or type checks) |
//! | garbage collection | kube-controller-manager's collector, in the server: background (default), foreground (`foregroundDeletion`, `blockOwnerDeletion`) and orphan propagation from `propagationPolicy` (body or query), `orphanDependents`, `kubectl delete --cascade`, deletecollection; dangling and cross-namespace owners are collected (with an `OwnerRefInvalidNamespace` event); dependents' finalizers are honoured; [`TestApiServerBuilder::garbage_collector`] turns it off | the collector's other events; it does not look again at an unresolvable owner reference (an owner of a kind not served yet) until the dependent changes |
//! | namespaces | `default`, `kube-system`, `kube-public`, `kube-node-lease` from the start; the `kubernetes` finalizer and the `kubernetes.io/metadata.name` label; deletion marks a namespace `Terminating`, the namespace controller deletes its content, reports what remains in `status.conditions` and removes it; the `finalize` subresource | the controller's graceful-termination estimates for Pods; its discovery conditions are always `False` (the server's own types are always discovered) |
//! | other controllers | none besides the two above | kubelet, scheduler, and the workload controllers: Pods never run, Deployments make no ReplicaSets, ReplicaSets no Pods, Services no endpoints, no ServiceAccount tokens |
//! | operations | [`Faults`]: dropped watches, failed or stalled requests, malformed events, compaction, restarts, a lagging cache; [`TestApiServer::stats`]; bounded history, watch backlogs, bodies and request time | high availability, several API servers behind a load balancer, etcd's own failures |
//!
//! The differential test runs one script against the fake and against a real API server
//! (upstream apiextensions-apiserver on etcd, through [`EnvTest`]) and compares every answer;
//! the differences it still finds are listed in
//! `informer-testing/tests/real_server/differential/known.rs`, each asserted to still differ
//! (`the_fake_answers_the_script_as_the_real_server_does_but_for_the_known_differences`, run
//! with `INFORMER_TEST_ASSETS=<dir of the binaries> cargo test -p informer-testing --test
//! real_server`; a difference that disappears fails it until its entry goes). In short:
//!
//! | area | the known differences |
//! | --- | --- |
//! | CustomResourceDefinitions | the fake serves no `apiextensions.k8s.io` (404 for a CRD), so everything the real server writes for one (its conditions, the revisions) is missing |
//! | discovery | custom resource verbs sorted rather than in the real server's order; no `storageVersionHash`; aggregated discovery answered with the legacy `APIGroupList` |
//! | error statuses | not-found and already-exists messages name `widgets` rather than `widgets.example.com` and lack `details.group`; conflict and 422 `details` shaped differently (no `causes` for invalid list, patch and delete options); the wording of UID preconditions, JSON-patch test failures, strategic merge on custom resources, malformed continue tokens, resource versions and label selectors, and malformed JSON; no `Timeout: ` prefix on a too-large resource version; a malformed watch `resourceVersion` is 400 rather than 500 |
//! | writes | custom resources accept updates without `resourceVersion` (real: 422); server-side apply has no field ownership (no `managedFields`, no 409 conflicts); new finalizers may be added to an object being deleted (real: 422); the update that removes the last finalizer answers with the deletion's revision; deleting a custom resource answers with the object rather than a `Status` |
//! | validation of custom resources | no schema: unknown fields are kept (neither pruned nor refused by `Strict`), no warnings, no type checks, duplicate fields accepted, an unknown `fieldValidation` value ignored, a wrong `kind` is 400 rather than 422 |
//! | lists and watches | `resourceVersion=0` with `limit` is paginated (real: the whole list from the watch cache); no `metadata.continue: ""` on a last page; deletecollection answers with the deleted objects at their deletion revisions; a watch from a very old version replays the history (real: 410 past the watch cache's window); the initial-events-end bookmark carries `creationTimestamp: null`; tables show age rather than the CRD's printer columns |
//!
//! Namespaces, the garbage collector and the core types are not in the comparison: the real
//! server used there serves no core v1; `tests/apiserver/` checks them against what
//! kube-apiserver and kube-controller-manager do.
//!
//! | item | what it is |
//! | --- | --- |
//! | [`TestApiServer`] | an in-process Kubernetes API server on `127.0.0.1`, spoken to through a real `kube::Client` (or kubectl), with [`Faults`] to make it misbehave |
//! | [`EnvTest`] | a real Kubernetes API server (upstream apiextensions-apiserver on etcd) started as child processes, like controller-runtime's envtest; tests skip without its binaries |
//! | [`MemoryListerWatcher`] | an API server's list and watch semantics over memory, for a reflector or informer under test (no HTTP) |
//!
//! This crate is a dev-dependency: it is what the library's own tests run against, and what a
//! controller's tests use. With the facade, enable its `testing` feature and use
//! `informer::testing`.

pub mod apiserver;
pub mod envtest;
mod memory;

pub use apiserver::{
    ApiError, CustomResourceSpec, Error, FailureCode, Faults, FieldError, FieldErrorKind,
    RequestMatch, RestartMode, ScaleSubresource, StatusReason, TestApiServer, TestApiServerBuilder,
    Verb,
};
pub use envtest::{EnvTest, EnvTestBuilder};
pub use informer_core::lister_watcher::INITIAL_EVENTS_END_ANNOTATION;
pub use memory::{MemoryListerWatcher, RecordedRequest, StreamingSupport};
