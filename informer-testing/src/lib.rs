//! Test a Kubernetes controller without a cluster.
//!
//! | area | what [`TestApiServer`] serves | what a real cluster does that it does not |
//! | --- | --- | --- |
//! | connection | HTTPS on `127.0.0.1` with a CA made at start-up and a bearer token, both in [`TestApiServer::kubeconfig`] (the user `admin`, in `system:masters`); a token per named user ([`TestApiServer::user_config`]), and per ServiceAccount through its `token` subresource (`kubectl create token`: a JWT-shaped token that authenticates as `system:serviceaccount:<namespace>:<name>` while the server runs; one bound to a Pod, Node or Secret needs it to exist, a Pod to run as the account, and its `uid` if given); plain HTTP on request; the review APIs of `authorization.k8s.io/v1` and `authentication.k8s.io/v1` (`kubectl auth can-i`, `auth can-i --list`, `auth whoami`, TokenReviews of the server's tokens), answered as kube-apiserver with `AlwaysAllow` answers them | client certificates, other authentication, RBAC (every token may do everything, and every access review is allowed), API priority and fairness |
//! | types | core v1 Pods, ConfigMaps, Secrets, Services, Namespaces, Events, ServiceAccounts, PersistentVolumeClaims, Nodes, Endpoints, ReplicationControllers (with `scale`), PersistentVolumes, ResourceQuotas, LimitRanges, PodTemplates; apps/v1 Deployments, ReplicaSets, StatefulSets, DaemonSets, ControllerRevisions; batch/v1 Jobs, CronJobs; coordination.k8s.io/v1 Leases; rbac.authorization.k8s.io/v1 Roles, RoleBindings, ClusterRoles, ClusterRoleBindings; networking.k8s.io/v1 Ingresses, IngressClasses, NetworkPolicies; policy/v1 PodDisruptionBudgets; discovery.k8s.io/v1 EndpointSlices; autoscaling/v2 HorizontalPodAutoscalers, and autoscaling/v1 as a second view of them as kube-apiserver serves it (one storage; `targetCPUUtilizationPercentage` and the `autoscaling.alpha.kubernetes.io/*` annotations converted as `pkg/apis/autoscaling/v1` converts them; `kubectl autoscale`); storage.k8s.io/v1 StorageClasses; scheduling.k8s.io/v1 PriorityClasses; events.k8s.io/v1 Events, the core Events seen through that API as kube-apiserver serves them (one storage: an Event written through either API is read, listed, watched, patched and deleted through both with the same name and resource version; fields converted as `pkg/apis/events/v1` converts them, patches applied to the events.k8s.io shape, the v1 validation's 422s and field selectors such as `regarding.name`; informer-runtime's `EventRecorder` and kube's `Recorder` work) (each with its scope, short names, categories, subresources, selectable fields, defaults and `kubectl get` columns; enough for `kubectl apply --prune`); admissionregistration.k8s.io/v1 ValidatingWebhookConfigurations, MutatingWebhookConfigurations, ValidatingAdmissionPolicies and ValidatingAdmissionPolicyBindings, stored, defaulted and validated as kube-apiserver does (an operator bundle's webhook configurations apply; no webhook is called and no policy evaluated); apiregistration.k8s.io/v1 APIServices (validated; the Local ones of the served group versions and of CRDs registered and `Available`; one backed by a Service `Available=False` with upstream's reason, its group never served); apiextensions.k8s.io/v1 CustomResourceDefinitions and every custom resource they serve, created through the API (`kubectl apply -f crd.yaml`, `Api<CustomResourceDefinition>`, kube's `CustomResource::crd()`) or in Rust ([`TestApiServerBuilder::crd`] and [`TestApiServer::install_crd`] for a whole CRD, [`TestApiServer::register_custom_resource`] for a schemaless one): names accepted or refused, `Established`, several served versions, `status` and `scale` subresources, deletion that deletes the objects first | every other built-in type (404), the objects a real cluster starts with beyond namespaces and the `kubernetes` Service with its Endpoints and EndpointSlice (the bootstrap `cluster-admin`, `system:discovery`, `system:basic-user` and `system:public-info-viewer` ClusterRoles and bindings and the two `system-*` PriorityClasses are there; the aggregated `admin`/`edit`/`view` and the controllers' roles are not), the controllers behind the new kinds (no quota usage, no PersistentVolume binding, no ReplicationController or HorizontalPodAutoscaler controller); conversion webhooks (versions convert with the `None` strategy); `managedFields` of writes through events.k8s.io/v1 and autoscaling/v1 (recorded in the core v1 and autoscaling/v2 shapes and `apiVersion`s); CEL validation rules (`x-kubernetes-validations`) and `selectableFields` |
//! | discovery | `/api`, `/apis` (also as aggregated discovery, `apidiscovery.k8s.io/v2`, which kubectl and client-go ask for first), `/version`, OpenAPI v3 with each kind's schema (`kubectl explain`: field names, types and required fields of built-in types, custom resources' as their CRDs give them), an empty OpenAPI v2, short names and categories (`kubectl get all`), `storageVersionHash`, custom resource verbs in the real order | aggregated API servers, descriptions of built-in types' fields in OpenAPI |
//! | encodings | JSON, YAML and Kubernetes protobuf bodies (the built-in types above; what Go's JSON would write from the decoded structs: zeros of `omitempty` fields left out, pointers' zeros kept; every write of a built-in type reads back with the fields Go always writes, `status: {}`, a container's `resources: {}`, a Node's `nodeInfo` of empty strings; ObjectMeta's `omitzero` `creationTimestamp` left out); JSON and YAML responses, `Table` (`kubectl get`: the real columns of every built-in type above, `-o wide`'s too; a CRD's `additionalPrinterColumns`) and `PartialObjectMetadata`; 415 and 406 as a cluster answers | protobuf and CBOR responses |
//! | reads | get; list with label and field selectors, `limit`/`continue` over consistent snapshots, the `resourceVersion`/`resourceVersionMatch` rules; watch from a version (one not reached yet waits for it, as the watch cache does), bookmarks, `timeoutSeconds`, streaming lists (`sendInitialEvents`), `410 Gone` past the history, from before the server started (a built-in type's watch cache starts then, as kube-apiserver's starts with its first list) and from before a custom type was served | the watch cache: `resourceVersion=0` is served from the latest state and paginated; the history is bounded by count and bytes (see [`TestApiServerBuilder`]) rather than by etcd's compaction and the watch cache's window |
//! | writes | create, update (409 on a stale version; custom resources and CRDs need a version), merge, strategic merge (as apimachinery's `strategicpatch` applies it: merge keys and strategies by type and field, directives, list order, its errors) and JSON patch, server-side apply with field ownership (`managedFields` on every write, 409 conflicts per field, `force`, removal of fields a manager stopped applying, lists merged as their schema or OpenAPI says, `kubectl apply --server-side` taking over what client-side applies set and keeping their annotation), the `status` and `scale` subresources, `generation` for the types that have it, the defaults a real server gives built-in objects on every write (pod specs' `restartPolicy`, `dnsPolicy` and the like, containers' `imagePullPolicy`, probes and volumes; Deployments', StatefulSets', ReplicaSets' and DaemonSets' replicas, strategies and limits; Jobs' completions, parallelism, backoff and selector (the Job strategy's `controller-uid` labels), CronJobs' policy and history limits, claims' volume mode; Services' type, affinity and target ports; Secrets' type, and `stringData` merged into `data` as the conversion from v1 does), a Service's cluster IP, IP family and node ports allocated as the Service registry does (`422` for one another Service holds), a Pod's and a Namespace's phase and the namespace label, the status a create starts from (a client's is dropped; a Pod's QoS class and its `SchedulingGated` condition), the `Priority`, `DefaultTolerationSeconds` and `ServiceAccount` admission plugins' changes to a new Pod (its priority and preemption policy from its PriorityClass or the global default one, `403` for a class that does not exist or a `priority` that is not the class's; tolerations; service account), PriorityClasses validated as upstream (`system-` names and values above 1e9 reserved, value and preemption policy immutable, one global default), finalizers (none added during deletion), `uid` and `resourceVersion` preconditions, `dryRun`; a Pod's `eviction` subresource (`kubectl drain`: a `Pending` Pod, as every Pod here is until a client writes its status, goes at once; another is deleted only as its PodDisruptionBudget's status allows, `429` otherwise); a Pod's `binding` and the legacy `bindings` resource (a scheduler's: its node, `PodScheduled`, the Binding's labels and annotations and the node's topology labels, `409` once bound or while scheduling gates remain, `uid` and `resourceVersion` preconditions) and `log` (`kubectl logs`: what a test set with [`TestApiServer::set_pod_log`], empty otherwise, with the server's `400`s for a missing or ambiguous container); `exec`, `attach` and `portforward` answer as with no reachable kubelet (`400` without a node, `500` with one), and the `proxy` subresources of Pods, Services and Nodes as a server that cannot reach the Pod network (`400`, `404`, `503` as each registry decides); its `ephemeralcontainers` (`kubectl debug`: ephemeral containers added, never removed or changed); an update of a missing Service, Endpoints, Event, Lease or RBAC object creates it (`AllowCreateOnUpdate`) | conversion of managed fields between versions; the `ServiceAccount` admission plugin's token volume and its refusal of a missing account, PriorityClasses other than the two built-in ones; cluster IPs and node ports picked at random (here: the lowest free ones); graceful deletion of Pods (they go at once, as unscheduled Pods do); strategic merge patch's merge keys found by field name rather than by type (an EndpointSlice's or NetworkPolicy's `ports` merge on `port` where the real server replaces them), and a missing merge key or an unknown `$patch` answered `422` (real: `500` with the patch library's message) |
//! | admission and validation | `fieldValidation=Strict\|Warn\|Ignore` for built-in types and custom resources, `422 Invalid` with `details.causes` (metadata, the rules listed in the validation module, among them what an update may not change: a Pod's spec beyond images, a lower deadline and added tolerations, a StatefulSet's spec beyond replicas, template and update settings, a Job's template and selector, a binding's `roleRef`, a Service's cluster IP; CRDs, and custom resources against their structural schema after pruning and defaults), NamespaceLifecycle (404 in a missing namespace, 403 `NamespaceTerminating`, `default`, `kube-system` and `kube-public` undeletable) | calls to admission webhooks and the evaluation of policies (their configurations are stored), quotas and limit ranges, the admission plugins' finalizers (`kubernetes.io/pvc-protection` on a new PersistentVolumeClaim, `kubernetes.io/pv-protection` on a PersistentVolume: such an object is deleted at once here, even in use), the full validation of every built-in field, including the fields a cluster requires (a Pod without containers, a Deployment without a template are stored here, so that tests can make partial objects; a typed client of another language, Python's or Node's, may then fail to read the list holding one, as it would never meet one on a cluster) (and of updates: a PersistentVolumeClaim's or a StorageClass's spec may change here); the Go diff of the two specs a refused Pod update's message ends with |
//! | garbage collection | kube-controller-manager's collector, in the server: background (the default; orphan for batch/v1 Jobs and core/v1 ReplicationControllers, as their registries keep it, with the Job registry's warning), foreground (`foregroundDeletion`, `blockOwnerDeletion`) and orphan propagation from `propagationPolicy` (body or query), `orphanDependents`, `kubectl delete --cascade`, deletecollection; dangling and cross-namespace owners are collected (with an `OwnerRefInvalidNamespace` event); dependents' finalizers are honoured; [`TestApiServerBuilder::garbage_collector`] turns it off | the collector's other events; it does not look again at an unresolvable owner reference (an owner of a kind not served yet) until the dependent changes |
//! | namespaces | `default`, `kube-system`, `kube-public`, `kube-node-lease` from the start; a `default` ServiceAccount in each (the service account controller's, made again if deleted); the `kubernetes` finalizer and the `kubernetes.io/metadata.name` label; deletion marks a namespace `Terminating`, the namespace controller deletes its content, reports what remains in `status.conditions` and removes it; the `finalize` subresource | the `kube-root-ca.crt` ConfigMap a cluster puts in each; the controller's graceful-termination estimates for Pods; its discovery conditions are always `False` (the server's own types are always discovered) |
//! | other controllers | none besides the two above and the CRD controllers (names, establishing, the cleanup finalizer), which run right after each write of a CRD | kubelet, scheduler, and the workload controllers: Pods never run, Deployments make no ReplicaSets, ReplicaSets no Pods, Services no endpoints, no ServiceAccount tokens |
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
//! | the harness | the real server is a standalone binary: its controllers write as `real-apiserver` (the fake as kube-apiserver's `kube-apiserver`), and paths it does not serve answer a plain-text `404 page not found` (the fake: kube-apiserver's `Status`) |
//! | error statuses | the wording of malformed label selectors (the shared parser's, not Go's) |
//! | lists and watches | `resourceVersion=0` with `limit` is paginated (real: the whole list from the watch cache) |
//!
//! The script creates two CRDs (one with a full structural schema) and covers their
//! conditions, discovery, name conflicts, pruning, defaults, validation, strict field
//! validation, server-side apply between two managers (conflicts, force, removal, map lists),
//! JSON patches (the library's leniencies and its bare 422s), metadata rules (empty
//! collections left out, an immutable uid), printer columns and Tables (`includeObject`,
//! one object's, a watch's), streaming lists and watches from `0` or unset (the
//! initial-events-end bookmark) and deletion: none of them differs but for the harness's
//! manager name.
//! (Objects held by a finalizer while their CRD terminates are not scripted: the standalone
//! real server panics on their updates; `tests/apiserver/crds.rs` covers them.)
//!
//! Namespaces, the garbage collector and the core types are not in the comparison: the real
//! server used there serves no core v1; `tests/apiserver/` checks them against what
//! kube-apiserver and kube-controller-manager do.
//!
//! | item | what it is |
//! | --- | --- |
//! | [`TestApiServer`] | an in-process Kubernetes API server on `127.0.0.1`, spoken to through a real `kube::Client` (or kubectl), with [`Faults`] to make it misbehave: built-in types, CustomResourceDefinitions served through the API (structural schemas, subresources, printer columns, deletion), server-side apply with field ownership (see [`apiserver`]) |
//! | [`EnvTest`] | a real Kubernetes API server (upstream apiextensions-apiserver on etcd) started as child processes, like controller-runtime's envtest; tests skip without its binaries |
//! | [`chaos::Chaos`] | a controller under seeded fault schedules (crashes after writes, stale and delayed watches, unobserved states, failing requests, lost leases), with invariants at every committed state, a convergence check, shrinking and a replayable seed |
//! | [`MemoryListerWatcher`] | an API server's list and watch semantics over memory, for a reflector or informer under test (no HTTP) |
//! | [`eventually`], [`consistently`] | waits in a test until what a controller should do is done, failing with what never happened (Gomega's `Eventually`); checks for a while that what it must not do does not happen (`Consistently`); time is tokio's, so paused time works (see [`wait`]) |
//!
//! This crate is a dev-dependency: it is what the library's own tests run against, and what a
//! controller's tests use. With the facade, enable its `testing` feature and use
//! `informer::testing`.
//!
//! The server runs no kubelet, scheduler or workload controller: a test plays their part.
//! A Pod becomes Ready when the test writes its status, as a kubelet would (a create's status
//! is dropped); its logs are what the test sets:
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use informer_testing::TestApiServer;
//! use k8s_openapi::api::core::v1::Pod;
//! use kube::api::{Api, Patch, PatchParams, PostParams};
//!
//! let server = TestApiServer::start().await?;
//! let pods: Api<Pod> = Api::namespaced(server.client(), "default");
//! let pod: Pod = serde_json::from_value(serde_json::json!({
//!     "metadata": {"name": "web-0", "labels": {"app": "web"}},
//!     "spec": {"containers": [{"name": "app", "image": "nginx"}]}
//! }))?;
//! pods.create(&PostParams::default(), &pod).await?;
//! let ready = serde_json::json!({"status": {"phase": "Running",
//!     "conditions": [{"type": "Ready", "status": "True"}]}});
//! pods.patch_status("web-0", &PatchParams::default(), &Patch::Merge(&ready)).await?;
//! server.set_pod_log("default", "web-0", "app", "listening on :80\n");
//! # Ok(()) }
//! ```

pub mod apiserver;
pub mod chaos;
pub mod envtest;
mod memory;
pub mod wait;

pub use apiserver::{
    ApiError, CustomResourceSpec, Error, FailureCode, Faults, FieldError, FieldErrorKind,
    RequestMatch, RestartMode, ScaleSubresource, StatusReason, TestApiServer, TestApiServerBuilder,
    Verb,
};
pub use envtest::{EnvTest, EnvTestBuilder};
pub use informer_core::lister_watcher::INITIAL_EVENTS_END_ANNOTATION;
pub use memory::{MemoryListerWatcher, RecordedRequest, StreamingSupport};
pub use wait::{PATIENCE, POLL, consistently, eventually, eventually_within};
