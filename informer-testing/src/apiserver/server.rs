//! The HTTP side: connection handling, routing and request handlers.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::{FutureExt as _, StreamExt as _};
use http::{HeaderMap, Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt as _, Full, Limited, StreamBody, combinators::UnsyncBoxBody};
use hyper::body::{Frame, Incoming};
use hyper_util::rt::{TokioIo, TokioTimer};
use parking_lot::{Mutex, RwLock};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::task::AbortHandle;
use tokio_rustls::TlsAcceptor;

use super::codec::{self, FieldValidation};
use super::crd;
use super::discovery;
use super::events;
use super::eviction;
use super::faults::{self, FaultState, RequestInfo, RestartMode, Verb};
use super::fields;
use super::gc::{self, Propagation};
use super::go_json;
use super::hpa_v1;
use super::impersonation;
use super::intercept::{self, Interceptor};
use super::namespaces;
use super::openapi;
use super::patch::{self, PatchKind};
use super::pod_subresources;
use super::pods;
use super::resource::{Registry, ResourceType};
use super::reviews;
use super::scale;
use super::selector::{FieldSelector, LabelSelector};
use super::service_accounts;
use super::services;
use super::status::{ApiError, FieldError, StatusReason, created_status, success_status};
use super::storage::queue::Queue;
use super::storage::{
    ContinueToken, DeleteOptions, DeleteOutcome, Filter, Limits, ListRequest, Object, ReadVersion,
    Storage, Store, Subresource, WatchMessage, WatchStart, WriteOptions,
};
use super::str_at;
use super::strategy;
use super::table;
use super::tls;
use super::watch::WatchStream;

/// Response bodies: a full buffer or a watch stream.
pub(crate) type Body = UnsyncBoxBody<Bytes, Infallible>;

/// Namespaces that exist from the start, as in a fresh cluster.
const DEFAULT_NAMESPACES: [&str; 4] = ["default", "kube-system", "kube-public", "kube-node-lease"];

/// State shared by the server task, its connections and the test's handles.
pub(crate) struct Shared {
    pub(crate) store: Storage,
    pub(crate) registry: RwLock<Registry>,
    pub(crate) faults: Mutex<FaultState>,
    connections: Mutex<HashMap<u64, AbortHandle>>,
    next_connection: AtomicU64,
    pub(crate) address: SocketAddr,
    settings: Settings,
    /// Accepts TLS connections; `None` serves plain HTTP.
    tls: Option<TlsAcceptor>,
    /// The bearer token every request must carry; `None` lets every request in.
    pub(crate) token: Option<String>,
    /// More bearer tokens, each of a named user (`TestApiServer::user_config`).
    pub(crate) users: RwLock<HashMap<String, Arc<str>>>,
    /// The tokens issued to ServiceAccounts (TokenRequests), checked each time they are
    /// presented ([`service_accounts::IssuedToken::check`]).
    pub(crate) issued_tokens: RwLock<HashMap<String, service_accounts::IssuedToken>>,
    /// Sees every resource request before and after its handler.
    pub(crate) interceptor: RwLock<Option<Arc<dyn Interceptor>>>,
    /// Serializes the CRD controllers' work (see [`crd::reconcile`]).
    pub(crate) crd_lock: Mutex<()>,
    /// The CRDs the server was started with, created again when a restart loses all data.
    seed_crds: Mutex<Vec<Value>>,
    /// What `pods/log` returns, by namespace, Pod and container
    /// (`TestApiServer::set_pod_log`).
    pub(crate) pod_logs: RwLock<HashMap<(String, String, String), String>>,
    /// The revision the built-in types' watch caches start at: the server's state once it
    /// started. As kube-apiserver's watch cache, filled by a list when the server starts, a
    /// watch of a built-in type from an older version gets `410 Gone` (custom resources
    /// start at [`ResourceType::served_since`](super::resource::ResourceType)).
    watch_cache_start: AtomicU64,
    /// The OpenAPI v3 documents, made as the registry changes.
    pub(crate) openapi: openapi::Documents,
}

/// How the server serves requests, and how much it keeps.
#[derive(Clone, Debug)]
pub(crate) struct Settings {
    pub bookmark_interval: Duration,
    pub max_body_bytes: usize,
    /// How long a request other than a watch's stream may take, from its headers to its
    /// response (reading the body included): kube-apiserver's `--request-timeout`.
    pub request_timeout: Duration,
    pub limits: Limits,
    /// Whether lists at any version are served as from kube-apiserver's watch cache (one
    /// page, whatever the limit).
    pub watch_cache: bool,
    /// The CA bundle each namespace's `kube-root-ca.crt` holds; `None`: no such ConfigMaps.
    pub root_ca: Option<Arc<str>>,
}

/// How the server is reached and who may use it.
pub(crate) struct Security {
    pub tls: Option<TlsAcceptor>,
    pub token: Option<String>,
}

impl Shared {
    pub(crate) fn new(
        address: SocketAddr,
        registry: Registry,
        settings: Settings,
        security: Security,
    ) -> Self {
        let store = Storage::new(settings.limits);
        seed(
            &mut store.lock(),
            &registry,
            address,
            settings.root_ca.as_deref(),
        );
        let watch_cache_start = AtomicU64::new(store.revision());
        Self {
            store,
            registry: RwLock::new(registry),
            faults: Mutex::new(FaultState::default()),
            connections: Mutex::new(HashMap::new()),
            next_connection: AtomicU64::new(0),
            address,
            settings,
            tls: security.tls,
            token: security.token,
            users: RwLock::new(HashMap::new()),
            issued_tokens: RwLock::new(HashMap::new()),
            interceptor: RwLock::new(None),
            crd_lock: Mutex::new(()),
            seed_crds: Mutex::new(Vec::new()),
            pod_logs: RwLock::new(HashMap::new()),
            watch_cache_start,
            openapi: openapi::Documents::default(),
        }
    }

    /// Marks the server started: the built-in types' watch caches start at the current
    /// revision (what the server was started with is in their first list, not in a watch).
    pub(crate) fn start_watch_caches(&self) {
        self.watch_cache_start
            .store(self.store.revision(), Ordering::Relaxed);
    }

    /// Who sent a request: `Ok(None)` for the server's own token (or any request to a
    /// plain-HTTP server without a user's token), `Ok(Some(user))` for a user's token, `Err`
    /// for a missing or unknown token on a server that requires one.
    fn authenticate(&self, authorization: Option<&str>) -> Result<Option<Arc<str>>, ()> {
        let user = self
            .users
            .read()
            .iter()
            .find(|(token, _)| tls::authorized(authorization, token))
            .map(|(_, user)| user.clone());
        let issued = match user {
            Some(_) => None,
            None => self
                .issued_tokens
                .read()
                .iter()
                .find(|(token, _)| tls::authorized(authorization, token))
                .map(|(_, issued)| issued.clone()),
        };
        if let Some(issued) = issued {
            // A service account's token: valid for the API server, for as long as it lives.
            return match issued.check(&[], &|plural, namespace, name| {
                self.core_object(plural, namespace, name).ok()
            }) {
                Ok(_) => Ok(Some(Arc::from(issued.user()))),
                Err(_) => Err(()),
            };
        }
        match (&self.token, user) {
            (_, Some(user)) => Ok(Some(user)),
            (Some(token), None) if !tls::authorized(authorization, token) => Err(()),
            _ => Ok(None),
        }
    }

    /// What a TokenReview of `token` for the audiences `targets` answers: a service
    /// account's token checked as it is on each request ([`service_accounts::IssuedToken`]),
    /// a user's token or the server's own (valid for the API server's audience only, as a
    /// static token is).
    fn review_token(&self, token: &str, targets: &[String]) -> reviews::TokenAnswer {
        let issued = self.issued_tokens.read().get(token).cloned();
        if let Some(issued) = issued {
            let live = |plural: &str, namespace: Option<&str>, name: &str| {
                self.core_object(plural, namespace, name).ok()
            };
            return match issued.check(targets, &live) {
                Ok(audiences) => {
                    let (uid, extra) = issued.user_details();
                    let user = reviews::UserInfo::of(Some(&issued.user())).with_details(uid, extra);
                    reviews::TokenAnswer::User(user, audiences)
                }
                Err(why) => reviews::TokenAnswer::Refused(Some(why)),
            };
        }
        let user = match self.users.read().get(token) {
            Some(user) => Some(Some(user.to_string())),
            None => (self.token.as_deref() == Some(token)).then_some(None),
        };
        let api = service_accounts::DEFAULT_AUDIENCE;
        match user {
            Some(user) if targets.is_empty() || targets.iter().any(|t| t == api) => {
                reviews::TokenAnswer::User(
                    reviews::UserInfo::of(user.as_deref()),
                    vec![api.to_owned()],
                )
            }
            _ => reviews::TokenAnswer::Refused(None),
        }
    }

    /// The stored core v1 object `plural`/`namespace`/`name`, or the `404` a read of it
    /// answers.
    fn core_object(
        &self,
        plural: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Object, ApiError> {
        let resource = self
            .registry
            .read()
            .by_path("", "v1", plural)
            .ok_or_else(|| ApiError::not_found(plural, name))?;
        self.store.get(&resource, namespace, name)
    }

    /// Creates a CRD (or updates the one with its name), then serves it, as a client's
    /// create or update of it would. `seed`: created again after a restart that loses data.
    pub(crate) fn install_crd(&self, crd: Value, seed: bool) -> Result<(), ApiError> {
        let definitions = crd::definition_type();
        let name = crd
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let options = WriteOptions::by(strategy::DEFAULT_MANAGER);
        {
            let mut store = self.store.lock();
            match store.get(&definitions, None, &name) {
                Ok(existing) => {
                    let mut updated = crd.clone();
                    updated["metadata"] = existing["metadata"].clone();
                    updated["status"] = existing["status"].clone();
                    store.update(
                        &definitions,
                        None,
                        &name,
                        updated,
                        Subresource::Main,
                        options,
                    )?;
                }
                Err(_) => {
                    store.create(&definitions, None, crd.clone(), options)?;
                }
            }
        }
        crd::reconcile(self, &name);
        if seed {
            let mut seeds = self.seed_crds.lock();
            seeds.retain(|c| c["metadata"]["name"] != name.as_str());
            seeds.push(crd);
        }
        Ok(())
    }

    /// What follows a write, as the real server's controllers would do it: a CRD is
    /// reconciled (names, conditions, serving, deletion); an object of a terminating CRD may
    /// let the CRD go.
    pub(crate) fn after_write(&self, resource: &ResourceType, name: &str) {
        if crd::is_definition(resource) {
            crd::reconcile(self, name);
        } else if resource.terminating
            && let Some(definition) = &resource.crd
        {
            crd::reconcile(self, definition);
        }
    }

    /// Closes all connections and watches; optionally loses all data.
    pub(crate) fn restart(&self, mode: RestartMode) {
        {
            let mut store = self.store.lock();
            store.drop_watches();
            if mode == RestartMode::ResetData {
                store.reset();
                seed(
                    &mut store,
                    &self.registry.read(),
                    self.address,
                    self.settings.root_ca.as_deref(),
                );
            }
        }
        if mode == RestartMode::ResetData {
            // The CRDs went with the data: stop serving them, then create the seeds again.
            let mut registry = self.registry.write();
            let crds: Vec<String> = registry
                .types()
                .iter()
                .filter_map(|t| t.crd.clone())
                .collect();
            for name in crds {
                registry.uninstall(&name);
            }
            drop(registry);
            let seeds = self.seed_crds.lock().clone();
            for crd in seeds {
                if let Err(err) = self.install_crd(crd, false) {
                    tracing::warn!(%err, "failed to create a CRD again after a restart");
                }
            }
        }
        self.close_connections();
        tracing::debug!(?mode, "test API server restarted");
    }

    /// Closes all connections and watches.
    pub(crate) fn close_connections(&self) {
        self.store.lock().drop_watches();
        let connections: Vec<AbortHandle> =
            self.connections.lock().drain().map(|(_, h)| h).collect();
        for connection in connections {
            connection.abort();
        }
    }
}

/// What a fresh cluster holds: the default namespaces and their ServiceAccounts, the
/// bootstrap RBAC policy, the built-in Local APIServices, and the `kubernetes` Service in
/// `default` that kube-apiserver keeps (its port `443` targets the server's own port), with
/// its Endpoints and EndpointSlice.
fn seed(store: &mut Store, registry: &Registry, address: SocketAddr, root_ca: Option<&str>) {
    seed_namespaces(store, registry, root_ca);
    seed_bootstrap_policy(store, registry);
    // The built-in Local APIServices (kube-apiserver is ready once they are registered).
    super::apiservices::register(store, registry, true);
    let port = address.port();
    let Some(services) = registry.by_path("", "v1", "services") else {
        return;
    };
    let body = json!({
        "metadata": {
            "name": "kubernetes",
            "namespace": "default",
            "labels": {"component": "apiserver", "provider": "kubernetes"},
        },
        "spec": {
            "clusterIP": services::KUBERNETES_SERVICE_IP,
            "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": port}],
        },
    });
    if let Err(err) = store.create(&services, Some("default"), body, false) {
        tracing::warn!(%err, "failed to create the kubernetes Service");
    }
    seed_endpoints(store, registry, address);
}

/// The `kubernetes` Service's Endpoints and EndpointSlice, as kube-apiserver's endpoint
/// reconciler writes them (`pkg/controlplane/reconcilers/endpointsadapter.go`): the server's
/// address (loopback when it listens on all addresses) and its port, named `https`; the
/// Endpoints labelled `endpointslice.kubernetes.io/skip-mirror: "true"` (no mirrored slice),
/// the slice `kubernetes.io/service-name: kubernetes` (and no `managed-by` label: no
/// controller owns it), its endpoint ready.
fn seed_endpoints(store: &mut Store, registry: &Registry, address: SocketAddr) {
    let ip = match address.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    let address_type = if ip.is_ipv4() { "IPv4" } else { "IPv6" };
    let ports = json!([{"name": "https", "port": address.port(), "protocol": "TCP"}]);
    let endpoints = json!({
        "metadata": {
            "name": "kubernetes",
            "namespace": "default",
            "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"},
        },
        "subsets": [{"addresses": [{"ip": ip.to_string()}], "ports": ports}],
    });
    let slice = json!({
        "metadata": {
            "name": "kubernetes",
            "namespace": "default",
            "labels": {"kubernetes.io/service-name": "kubernetes"},
        },
        "addressType": address_type,
        "endpoints": [{"addresses": [ip.to_string()], "conditions": {"ready": true}}],
        "ports": ports,
    });
    for ((group, plural), body) in [
        (("", "endpoints"), endpoints),
        (("discovery.k8s.io", "endpointslices"), slice),
    ] {
        let Some(resource) = registry.by_path(group, "v1", plural) else {
            continue;
        };
        if let Err(err) = store.create(&resource, Some("default"), body, false) {
            tracing::warn!(%err, plural, "failed to create the kubernetes Service's endpoints");
        }
    }
}

fn seed_namespaces(store: &mut Store, registry: &Registry, root_ca: Option<&str>) {
    let Some(namespaces) = registry.by_path("", "v1", "namespaces") else {
        return;
    };
    for name in DEFAULT_NAMESPACES {
        let body = json!({"metadata": {"name": name}});
        if let Err(err) = store.create(&namespaces, None, body, false) {
            tracing::warn!(%err, name, "failed to create a default namespace");
        }
    }
    // Their default ServiceAccounts and root CA bundles too, so that a fresh server has no
    // write pending.
    service_accounts::create_defaults(store, registry, &DEFAULT_NAMESPACES);
    if let Some(ca) = root_ca {
        super::root_ca::publish(store, registry, &DEFAULT_NAMESPACES, ca);
    }
}

/// What kube-apiserver's `rbac/bootstrap-roles` and
/// `scheduling/bootstrap-system-priority-classes` post-start hooks create: the ClusterRoles
/// and ClusterRoleBindings every cluster has (`cluster-admin` for `system:masters`, the
/// discovery, basic-user and public-info roles; labelled `kubernetes.io/bootstrapping:
/// rbac-defaults`, annotated for auto-update), and the two system PriorityClasses. The
/// roles are stored, not enforced (one token can do everything); the aggregated `admin`,
/// `edit` and `view` roles and the controllers' roles are not made.
fn seed_bootstrap_policy(store: &mut Store, registry: &Registry) {
    let group = "rbac.authorization.k8s.io";
    let meta = |name: &str| {
        json!({
            "name": name,
            "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"},
            "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"},
        })
    };
    let discovery_urls = [
        "/api",
        "/api/*",
        "/apis",
        "/apis/*",
        "/healthz",
        "/livez",
        "/openapi",
        "/openapi/*",
        "/readyz",
        "/version",
        "/version/",
    ];
    let roles = [
        (
            "cluster-admin",
            json!([
                {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
                {"nonResourceURLs": ["*"], "verbs": ["*"]},
            ]),
        ),
        (
            "system:discovery",
            json!([{"nonResourceURLs": discovery_urls, "verbs": ["get"]}]),
        ),
        (
            "system:basic-user",
            json!([
                {"apiGroups": ["authorization.k8s.io"],
                 "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                 "verbs": ["create"]},
                {"apiGroups": ["authentication.k8s.io"], "resources": ["selfsubjectreviews"],
                 "verbs": ["create"]},
            ]),
        ),
        (
            "system:public-info-viewer",
            json!([{
                "nonResourceURLs": ["/healthz", "/livez", "/readyz", "/version", "/version/"],
                "verbs": ["get"],
            }]),
        ),
    ];
    let group_subject = |name: &str| json!({"apiGroup": group, "kind": "Group", "name": name});
    let bindings = [
        ("cluster-admin", vec![group_subject("system:masters")]),
        (
            "system:discovery",
            vec![group_subject("system:authenticated")],
        ),
        (
            "system:basic-user",
            vec![group_subject("system:authenticated")],
        ),
        (
            "system:public-info-viewer",
            vec![
                group_subject("system:authenticated"),
                group_subject("system:unauthenticated"),
            ],
        ),
    ];
    let mut objects = Vec::new();
    if let Some(cluster_roles) = registry.by_path(group, "v1", "clusterroles") {
        for (name, rules) in roles {
            objects.push((
                cluster_roles.clone(),
                json!({"metadata": meta(name), "rules": rules}),
            ));
        }
    }
    if let Some(cluster_role_bindings) = registry.by_path(group, "v1", "clusterrolebindings") {
        for (name, subjects) in bindings {
            let body = json!({
                "metadata": meta(name),
                "roleRef": {"apiGroup": group, "kind": "ClusterRole", "name": name},
                "subjects": subjects,
            });
            objects.push((cluster_role_bindings.clone(), body));
        }
    }
    if let Some(priority_classes) = registry.by_path("scheduling.k8s.io", "v1", "priorityclasses") {
        for (name, value, description) in super::pods::SYSTEM_PRIORITY_CLASSES {
            let body = json!({
                "metadata": {"name": name},
                "value": value,
                "description": description,
            });
            objects.push((priority_classes.clone(), body));
        }
    }
    for (resource, body) in objects {
        if let Err(err) = store.create(&resource, None, body, false) {
            tracing::warn!(%err, "failed to create a bootstrap object");
        }
    }
}

/// Accepts connections until the task is aborted.
pub(crate) async fn serve(listener: TcpListener, shared: Arc<Shared>) {
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(err) => {
                tracing::warn!(%err, "test API server failed to accept a connection");
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        // As Go's net package does for every TCP connection: no Nagle delay, so a watch
        // event written right after another is not held for the client's delayed ACK.
        if let Err(err) = stream.set_nodelay(true) {
            tracing::debug!(%err, %peer, "could not set TCP_NODELAY");
        }
        let id = shared.next_connection.fetch_add(1, Ordering::Relaxed);
        let conn_shared = shared.clone();
        // Hold the lock while spawning so the task cannot deregister before it is registered.
        let mut connections = shared.connections.lock();
        let task = tokio::spawn(async move {
            match conn_shared.tls.clone() {
                Some(acceptor) => {
                    match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                        Ok(Ok(stream)) => serve_connection(stream, &conn_shared, peer).await,
                        Ok(Err(err)) => tracing::debug!(%err, %peer, "TLS handshake failed"),
                        Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
                    }
                }
                None => serve_connection(stream, &conn_shared, peer).await,
            }
            conn_shared.connections.lock().remove(&id);
        });
        connections.insert(id, task.abort_handle());
    }
}

/// How long a client may take to complete the TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Serves HTTP/1.1 on one (plain or TLS) connection until it closes.
async fn serve_connection<I>(io: I, shared: &Arc<Shared>, peer: SocketAddr)
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let svc_shared = shared.clone();
    let service = hyper::service::service_fn(move |request| {
        let shared = svc_shared.clone();
        async move { Ok::<_, Infallible>(handle(shared, request).await) }
    });
    let result = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        // Clients may shut down their write side while waiting for a response.
        .half_close(true)
        .serve_connection(TokioIo::new(io), service)
        .await;
    if let Err(err) = result {
        tracing::debug!(%err, %peer, "connection ended with an error");
    }
}

/// Handles one request ([`answer`]) and gives the answer the headers every answer of
/// kube-apiserver has: `Audit-Id` and `Cache-Control`.
async fn handle(shared: Arc<Shared>, request: Request<Incoming>) -> Response<Body> {
    let audit_id = audit_id(&request);
    let mut response = answer(shared, request).await;
    // kube-apiserver's filters: `WithAuditInit` names every request (the client's
    // `Audit-ID`, or a new UUID) in the response, and `WithCacheControl` keeps clients and
    // proxies from caching API answers unless the handler says otherwise.
    let headers = response.headers_mut();
    if let Ok(value) = header::HeaderValue::from_str(&audit_id) {
        headers.insert("audit-id", value);
    }
    if !headers.contains_key(header::CACHE_CONTROL) {
        headers.insert(
            header::CACHE_CONTROL,
            header::HeaderValue::from_static("no-cache, private"),
        );
    }
    response
}

/// The request's `Audit-ID` when the client sent a valid one (kube-apiserver keeps it), a
/// new UUID otherwise.
fn audit_id(request: &Request<Incoming>) -> String {
    request
        .headers()
        .get("audit-id")
        .and_then(|value| value.to_str().ok())
        .filter(|id| !id.is_empty())
        .map_or_else(super::storage::new_uid, str::to_owned)
}

/// Handles one request; never fails and never lets a panic escape. A request that takes
/// longer than the request timeout (reading its body included; a watch's stream excluded)
/// gets `504 Timeout`, as from kube-apiserver's timeout filter.
async fn answer(shared: Arc<Shared>, request: Request<Incoming>) -> Response<Body> {
    let timeout = shared.settings.request_timeout;
    let deadline = Instant::now() + timeout;
    let pretty = wants_pretty(&request);
    match AssertUnwindSafe(tokio::time::timeout(
        timeout,
        dispatch(shared, request, deadline),
    ))
    .catch_unwind()
    .await
    {
        Ok(Ok(mut response)) => {
            let gzip = response.extensions_mut().remove::<Gzip>().is_some();
            if pretty {
                response = pretty_json(response).await;
            }
            // After indenting: the gzip is of what the client reads.
            if gzip {
                response = gzipped(response).await;
            }
            response
        }
        Ok(Err(_)) => {
            let mut response = error_response(&timeout_error());
            // The body may be unread: the connection cannot serve another request.
            response.headers_mut().insert(
                header::CONNECTION,
                header::HeaderValue::from_static("close"),
            );
            response
        }
        Err(_) => {
            tracing::error!("test API server handler panicked");
            error_response(&ApiError::internal(
                "an internal error occurred while handling the request",
            ))
        }
    }
}

/// Whether a response is written indented (`isPrettyPrint`): as `?pretty` says when it is a
/// boolean (`strconv.ParseBool`), else when the `User-Agent` is a human's (`curl`, `Wget`, a
/// browser's `Mozilla/5.0`). The OpenAPI documents (kube-openapi's handlers) never are.
fn wants_pretty(request: &Request<Incoming>) -> bool {
    if request.uri().path().starts_with("/openapi/") {
        return false;
    }
    let pretty = Query::parse(request.uri().query())
        .get("pretty")
        .filter(|v| !v.is_empty())
        .map(|v| matches!(v, "1" | "t" | "T" | "true" | "TRUE" | "True"));
    pretty.unwrap_or_else(|| {
        request
            .headers()
            .get(header::USER_AGENT)
            .and_then(|agent| agent.to_str().ok())
            .is_some_and(|agent| {
                ["curl", "Wget", "Mozilla/5.0"]
                    .iter()
                    .any(|human| agent.starts_with(human))
            })
    })
}

/// A whole `application/json` response (not a watch's stream) indented as the JSON
/// serializer's pretty variant writes it (`json.MarshalIndent`, no final newline).
async fn pretty_json(response: Response<Body>) -> Response<Body> {
    use hyper::body::Body as _;
    let json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|value| value == "application/json");
    if !json || response.body().size_hint().exact().is_none() {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let Ok(collected) = body.collect().await;
    let bytes = go_json::indent(&collected.to_bytes());
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, full_body(bytes))
}

/// The parsed query string.
struct Query(Vec<(String, String)>);

impl Query {
    /// As Go's `URL.Query()`: a pair with a malformed `%` escape (or a `;`) is dropped, the
    /// others kept.
    fn parse(query: Option<&str>) -> Self {
        let well_formed = |pair: &&str| {
            let bytes = pair.as_bytes();
            !pair.contains(';')
                && bytes.iter().enumerate().all(|(i, b)| {
                    *b != b'%'
                        || bytes
                            .get(i + 1..i + 3)
                            .is_some_and(|hex| hex.iter().all(u8::is_ascii_hexdigit))
                })
        };
        Self(
            query
                .unwrap_or("")
                .split('&')
                .filter(well_formed)
                .flat_map(|pair| form_urlencoded::parse(pair.as_bytes()))
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect(),
        )
    }

    fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// A non-empty string parameter.
    fn string(&self, name: &str) -> Option<&str> {
        self.get(name).filter(|v| !v.is_empty())
    }

    /// A boolean parameter, converted as kube-apiserver converts query parameters
    /// (`runtime.Convert_Slice_string_To_bool`): `None` when absent; `0` and `false` (in any
    /// case) are false; every other value is true, the empty one too (`?watch`).
    fn bool(&self, name: &str) -> Option<bool> {
        self.get(name)
            .map(|v| !(v == "0" || v.eq_ignore_ascii_case("false")))
    }

    /// An integer parameter, converted as kube-apiserver converts query parameters
    /// (`strconv.ParseInt`, a present but empty value included): `400` with Go's error.
    fn i64(&self, name: &str) -> Result<Option<i64>, ApiError> {
        self.get(name)
            .map(|v| go_parse_int(v).map_err(ApiError::bad_request))
            .transpose()
    }

    /// `dryRun`, refused as the handlers refuse it, in the name of the request's options
    /// (`CreateOptions`, `UpdateOptions`, `PatchOptions`, `DeleteOptions`).
    /// Every value counts (`?dryRun=All&dryRun=All` is a dry run); an empty one is refused
    /// like any other that is not `All`, the values quoted as a JSON list
    /// (`dryRun: Unsupported value: [""]: supported values: "All"`).
    fn dry_run(&self, options: &str) -> Result<bool, ApiError> {
        let values: Vec<&str> = self
            .0
            .iter()
            .filter(|(k, _)| k == "dryRun")
            .map(|(_, v)| v.as_str())
            .collect();
        dry_run_values(options, &values)
    }
}

/// `ValidateDryRun` of a request's options: `true` for `["All", ...]`, a 422 naming the values
/// for anything else.
fn dry_run_values(options: &str, values: &[&str]) -> Result<bool, ApiError> {
    if values.is_empty() {
        return Ok(false);
    }
    if values.iter().all(|v| *v == "All") {
        return Ok(true);
    }
    let quoted: Vec<String> = values.iter().map(|v| go_json::go_string(v)).collect();
    Err(ApiError::invalid(
        &format!("{options}.meta.k8s.io"),
        "",
        &format!(
            "dryRun: Unsupported value: [{}]: supported values: \"All\"",
            quoted.join(",")
        ),
    ))
}

/// What a path addresses.
enum Route {
    Root,
    Version,
    /// `/healthz`, `/livez` or `/readyz`, or one of their checks (`/livez/ping`).
    Health(&'static str, Option<String>),
    CoreVersions,
    Groups,
    Group(String),
    GroupVersion(String, String),
    OpenApiRoot,
    OpenApiV2,
    OpenApiGroupVersion(String),
    Resource(ResourcePath),
    /// A `POST` of a review (create-only, nothing stored), with its namespace.
    Review(reviews::Review, Option<String>),
    NotFound,
}

struct ResourcePath {
    resource: Arc<ResourceType>,
    namespace: Option<String>,
    name: Option<String>,
    subresource: Option<String>,
}

fn route(registry: &Registry, path: &str) -> Route {
    // An empty segment (`/apis//apps/v1`, `//api/v1`) is no path the real server serves: its
    // muxes and `RequestInfoFactory` do not collapse slashes (only a trailing one is trimmed).
    if path.contains("//") {
        return Route::NotFound;
    }
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    match segments.as_slice() {
        [] => Route::Root,
        ["version"] => Route::Version,
        // The health checks are exact paths: `/healthz/` is none.
        ["healthz" | "livez" | "readyz", ..] if path.ends_with('/') => Route::NotFound,
        [endpoint @ ("healthz" | "livez" | "readyz"), rest @ ..] => {
            let endpoint = match *endpoint {
                "healthz" => "healthz",
                "livez" => "livez",
                _ => "readyz",
            };
            match rest {
                [] => Route::Health(endpoint, None),
                checks => Route::Health(endpoint, Some(checks.join("/"))),
            }
        }
        ["api"] => Route::CoreVersions,
        ["api", version] => Route::GroupVersion(String::new(), version.to_string()),
        ["api", version, rest @ ..] => resource_route(registry, "", version, rest),
        ["apis"] => Route::Groups,
        ["apis", group] => Route::Group(group.to_string()),
        ["apis", group, version] => Route::GroupVersion(group.to_string(), version.to_string()),
        ["apis", group, version, rest @ ..] => match reviews::route(group, version, rest) {
            Some((review, namespace)) => Route::Review(review, namespace),
            None => resource_route(registry, group, version, rest),
        },
        ["openapi", "v3"] => Route::OpenApiRoot,
        ["openapi", "v2"] => Route::OpenApiV2,
        ["openapi", "v3", rest @ ..] => Route::OpenApiGroupVersion(rest.join("/")),
        _ => Route::NotFound,
    }
}

/// The deprecated watch paths (`/api/v1/watch/...`, `/apis/<group>/<version>/watch/...`),
/// which the real server still serves: the path without its `watch` segment.
fn legacy_watch_path(path: &str) -> Option<String> {
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let at = match segments.as_slice() {
        ["api", _, "watch", _, ..] => 2,
        ["apis", _, _, "watch", _, ..] => 3,
        _ => return None,
    };
    let mut rest = segments;
    rest.remove(at);
    Some(format!("/{}", rest.join("/")))
}

/// A deprecated watch path's request: a watch whatever `?watch` says, of the collection or,
/// when the path names an object, of that object (a `metadata.name` field selector, added to
/// the request's own), as `ListResource` with `forceWatch` serves it. Subresources are not
/// watched.
fn legacy_watch_route(route: &mut Route, query: &mut Query) {
    let Route::Resource(path) = route else {
        return;
    };
    if path.subresource.is_some() {
        *route = Route::NotFound;
        return;
    }
    query.0.retain(|(key, _)| key != "watch");
    query.0.push(("watch".to_string(), "true".to_string()));
    if let Some(name) = path.name.take() {
        let by_name = format!("metadata.name={name}");
        let selector = match query.string("fieldSelector") {
            Some(own) => format!("{own},{by_name}"),
            None => by_name,
        };
        query.0.retain(|(key, _)| key != "fieldSelector");
        query.0.push(("fieldSelector".to_string(), selector));
    }
}

fn resource_route(registry: &Registry, group: &str, version: &str, rest: &[&str]) -> Route {
    // The legacy `bindings` resource: a `Binding` posted to it binds the Pod it names.
    if let (true, ["namespaces", namespace, "bindings"]) =
        (group.is_empty() && version == "v1", rest)
        && let Some(pods) = registry.by_path("", "v1", "pods")
    {
        return Route::Resource(ResourcePath {
            resource: pods,
            namespace: Some(namespace.to_string()),
            name: None,
            subresource: Some("binding".to_string()),
        });
    }
    let (resource, namespace, tail) = match rest {
        ["namespaces", namespace, plural, tail @ ..]
            if registry.is_namespaced_plural(group, version, plural) =>
        {
            let Some(resource) = registry.by_path(group, version, plural) else {
                return Route::NotFound;
            };
            (resource, Some(namespace.to_string()), tail)
        }
        [plural, tail @ ..] => {
            let Some(resource) = registry.by_path(group, version, plural) else {
                return Route::NotFound;
            };
            if resource.namespaced && !tail.is_empty() {
                return Route::NotFound;
            }
            (resource, None, tail)
        }
        [] => return Route::NotFound,
    };
    let (name, subresource) = match tail {
        [] => (None, None),
        [name] => (Some(name.to_string()), None),
        [name, "status"] if resource.status_subresource => {
            (Some(name.to_string()), Some("status".to_string()))
        }
        [name, "scale"] if resource.scale.is_some() => {
            (Some(name.to_string()), Some("scale".to_string()))
        }
        [name, "finalize"] if namespaces::is_namespace(&resource) => {
            (Some(name.to_string()), Some("finalize".to_string()))
        }
        [name, "token"] if service_accounts::is_service_account(&resource) => {
            (Some(name.to_string()), Some("token".to_string()))
        }
        [name, "approval"] if super::certificates::is_csr(&resource) => {
            (Some(name.to_string()), Some("approval".to_string()))
        }
        [
            name,
            sub @ ("eviction"
            | "log"
            | "binding"
            | "exec"
            | "attach"
            | "portforward"
            | "ephemeralcontainers"),
        ] if pods::is_pod(&resource) => (Some(name.to_string()), Some(sub.to_string())),
        // `[scheme:]name[:port]/proxy[/path]` of a Pod, Service or Node.
        [name, "proxy", ..] if is_proxied(&resource) => {
            (Some(name.to_string()), Some("proxy".to_string()))
        }
        // The CRD handler routes every subresource of a custom resource, answering those
        // its CRD does not declare 404 NotFound for the object (`crdHandler.ServeHTTP`).
        [name, sub, ..] if resource.custom => (Some(name.to_string()), Some(sub.to_string())),
        _ => return Route::NotFound,
    };
    Route::Resource(ResourcePath {
        resource,
        namespace,
        name,
        subresource,
    })
}

/// Whether `resource` has a `proxy` subresource (Pods, Services and Nodes).
fn is_proxied(resource: &ResourceType) -> bool {
    resource.group.is_empty() && matches!(resource.plural.as_str(), "pods" | "services" | "nodes")
}

fn request_info(method: &Method, route: &Route, query: &Query) -> RequestInfo {
    let (verb, resource) = match route {
        Route::Resource(path) => {
            // Custom resources are served by the CRD handler, which takes the verb of
            // `RequestInfoFactory` as is: HEAD is a get (or list), a POST that names an
            // object creates the body's object, a PUT or PATCH without a name is an update
            // or patch of "" (400 `name must be provided`).
            let custom = path.resource.custom;
            let method = if custom && method == Method::HEAD {
                &Method::GET
            } else {
                method
            };
            let verb = match (method, path.name.is_some()) {
                (&Method::GET, false) if query.bool("watch") == Some(true) => Verb::Watch,
                (&Method::GET, false) => Verb::List,
                (&Method::GET, true) => Verb::Get,
                (&Method::POST, false) => Verb::Create,
                (&Method::POST, true) if custom && path.subresource.is_none() => Verb::Create,
                (&Method::PUT, false) if custom => Verb::Update,
                (&Method::PATCH, false) if custom => Verb::Patch,
                (&Method::PUT, true) => Verb::Update,
                (&Method::PATCH, true) => Verb::Patch,
                (&Method::DELETE, true) => Verb::Delete,
                (&Method::DELETE, false) => Verb::DeleteCollection,
                _ => Verb::Other,
            };
            (verb, Some(path.resource.clone()))
        }
        Route::Review(review, namespace) => {
            let verb = if method == Method::POST {
                Verb::Create
            } else {
                Verb::Other
            };
            return RequestInfo {
                verb,
                resource: Some(review.plural.to_string()),
                kind: Some(review.kind.to_string()),
                subresource: None,
                api_version: Some(review.api_version()),
                user: None,
                namespace: namespace.clone(),
                name: None,
            };
        }
        Route::NotFound => (Verb::Other, None),
        _ => (Verb::Discovery, None),
    };
    let (namespace, name, subresource) = match route {
        Route::Resource(path) => (
            path.namespace.clone(),
            path.name.clone(),
            path.subresource.clone(),
        ),
        _ => (None, None, None),
    };
    RequestInfo {
        verb,
        resource: resource.as_ref().map(|r| r.plural.clone()),
        kind: resource.as_ref().map(|r| r.kind.clone()),
        subresource,
        api_version: resource.as_ref().map(|r| r.api_version()),
        user: None,
        namespace,
        name,
    }
}

/// What kube-apiserver answers a request that outlived its timeout.
fn timeout_error() -> ApiError {
    ApiError::new(
        StatusReason::Timeout,
        "Timeout: request did not complete within requested timeout - context deadline exceeded",
    )
}

/// Requests whose bodies are larger than this are handled off the async workers.
const HEAVY_BODY_BYTES: usize = 256 * 1024;

async fn dispatch(
    shared: Arc<Shared>,
    request: Request<Incoming>,
    deadline: Instant,
) -> Response<Body> {
    let (parts, body) = request.into_parts();
    let authorization = parts
        .headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    let Ok(user) = shared.authenticate(authorization) else {
        // As kube-apiserver answers a missing or invalid token (anonymous access off).
        return error_response(&ApiError::new(StatusReason::Unauthorized, "Unauthorized"));
    };
    // `Impersonate-*` headers: the request acts as that user (every impersonation is
    // allowed, as every request is).
    let impersonated = match impersonation::from_headers(&parts.headers) {
        Ok(impersonated) => impersonated,
        Err(why) => {
            let uri = parts.uri.path_and_query().map_or("", |p| p.as_str());
            let (status, text) = impersonation::refusal(uri, &why);
            return text_response(status, &text);
        }
    };
    let mut query = Query::parse(parts.uri.query());
    let path = match percent_decode(parts.uri.path()) {
        Ok(path) => path,
        Err(err) => return error_response(&err),
    };
    let legacy_watch = (parts.method == Method::GET)
        .then(|| legacy_watch_path(&path))
        .flatten();
    let mut route = route(
        &shared.registry.read(),
        legacy_watch.as_deref().unwrap_or(&path),
    );
    if legacy_watch.is_some() {
        legacy_watch_route(&mut route, &mut query);
    }
    let mut info = request_info(&parts.method, &route, &query);
    info.user = match &impersonated {
        Some(impersonated) => Some(Arc::from(impersonated.username.as_str())),
        None => user,
    };
    tracing::debug!(method = %parts.method, uri = %parts.uri, verb = %info.verb, "request");

    let (stall, failure) = shared.faults.lock().on_request(&info);
    if let Some(delay) = stall {
        tokio::time::sleep(delay).await;
    }
    if let Some(err) = failure {
        return error_response(&err);
    }
    let interceptor = match &route {
        Route::Resource(_) => shared.interceptor.read().clone(),
        _ => None,
    };
    let ticket = match &interceptor {
        Some(interceptor) => match interceptor.before(&info).await {
            Ok(ticket) => Some(ticket),
            Err(err) => return error_response(&err),
        },
        None => None,
    };
    let body = match read_body(body, shared.settings.max_body_bytes).await {
        Ok(body) => body,
        Err(err) => return error_response(&err),
    };
    let negotiated = match (&route, info.verb) {
        // An unknown path is 404 whatever the client accepts.
        (Route::NotFound, _) => Ok(codec::Output::Json),
        (Route::OpenApiV2, _) => return openapi_v2(&parts.method, &parts.headers),
        (Route::Resource(path), verb) => {
            let route = match verb {
                Verb::Watch => codec::Route::Watch,
                Verb::Get | Verb::List => codec::Route::Read,
                _ => codec::Route::Other,
            };
            codec::negotiate(&parts.headers, route)
                .map_err(|_| not_acceptable(&parts.headers, path, verb))
        }
        (Route::Groups | Route::CoreVersions, _) => {
            codec::negotiate(&parts.headers, codec::Route::Discovery)
        }
        _ => codec::negotiate(&parts.headers, codec::Route::Other),
    };
    let output = match negotiated {
        Ok(output) => output,
        Err(err) => {
            // A watch asking for YAML is refused in YAML, the format its Accept chose first.
            let output = match (&route, info.verb) {
                (Route::Resource(_), Verb::Watch) => {
                    codec::negotiate(&parts.headers, codec::Route::Read).unwrap_or_default()
                }
                _ => codec::Output::Json,
            };
            return error_response_as(&err, output);
        }
    };
    let deprecation = match &route {
        Route::Resource(path) => deprecation_warning(&path.resource),
        _ => None,
    };
    let gzip = matches!(route, Route::Resource(_))
        && info.verb != Verb::Watch
        && accepts_gzip(&parts.headers);
    // A read at a version not reached yet waits for it first, as the watch cache does.
    if let Route::Resource(path) = &route {
        fresh::wait_until_fresh(&shared, info.verb, path, &query).await;
    }
    let result = match route {
        // Lists, collection deletes and large bodies may take long: they run on the blocking
        // pool, so the async workers keep serving everything else.
        Route::Resource(path)
            if matches!(info.verb, Verb::List | Verb::DeleteCollection)
                || body.len() > HEAVY_BODY_BYTES =>
        {
            let shared = shared.clone();
            let info = info.clone();
            let impersonated = impersonated.clone();
            let work = tokio::task::spawn_blocking(move || {
                let request = ResourceRequest {
                    shared: &shared,
                    method: &parts.method,
                    headers: &parts.headers,
                    query: &query,
                    verb: info.verb,
                    info: &info,
                    output,
                    deadline,
                };
                intercept::with_actor(info.user.clone(), || {
                    impersonation::with_requester(impersonated, || {
                        handle_resource(&request, path, body)
                    })
                })
            });
            work.await.unwrap_or_else(|err| {
                tracing::error!(%err, "test API server handler failed");
                Err(ApiError::internal(
                    "an internal error occurred while handling the request",
                ))
            })
        }
        Route::Resource(path) => {
            let request = ResourceRequest {
                shared: &shared,
                method: &parts.method,
                headers: &parts.headers,
                query: &query,
                verb: info.verb,
                info: &info,
                output,
                deadline,
            };
            intercept::with_actor(info.user.clone(), || {
                impersonation::with_requester(impersonated.clone(), || {
                    handle_resource(&request, path, body)
                })
            })
        }
        Route::Review(review, namespace) => {
            impersonation::with_requester(impersonated.clone(), || {
                handle_review(
                    &shared,
                    &parts,
                    review,
                    namespace.as_deref(),
                    &info,
                    &body,
                    output,
                )
            })
        }
        // The health handlers answer whatever the method (`DELETE /healthz` is `ok`).
        Route::Health(endpoint, check) => health(endpoint, check.as_deref(), &query),
        other => handle_non_resource(&shared, &parts.method, other, output),
    };
    let mut response = result.unwrap_or_else(|err| error_response_as(&err, output));
    if gzip {
        response.extensions_mut().insert(Gzip);
    }
    if let Some(warning) = deprecation
        && let Ok(value) = header::HeaderValue::from_str(&format!(
            "299 - {}",
            serde_json::to_string(&warning).unwrap_or_default()
        ))
    {
        response.headers_mut().append(header::WARNING, value);
    }
    if let (Some(interceptor), Some(ticket)) = (interceptor, ticket)
        && info.verb != Verb::Watch
    {
        interceptor.after(&info, response.status(), ticket).await;
    }
    response
}

/// Marks a response [`handle`] gzips once it is otherwise final (indented, if it is to be).
#[derive(Clone, Copy)]
struct Gzip;

/// Whether the client takes gzip (`negotiateContentEncoding`: a `gzip` token of
/// `Accept-Encoding`, parameters not understood).
fn accepts_gzip(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|token| token.trim() == "gzip"))
}

/// kube-apiserver's response compression (`deferredResponseWriter`): a resource's answer
/// of more than 128 KiB to a client that takes gzip is gzipped (`Content-Encoding: gzip`,
/// `Vary: Accept-Encoding`).
async fn gzipped(response: Response<Body>) -> Response<Body> {
    const THRESHOLD: u64 = 128 * 1024;
    if hyper::body::Body::size_hint(response.body())
        .exact()
        .is_none_or(|n| n <= THRESHOLD)
    {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let Ok(collected) = body.collect().await;
    let bytes = collected.to_bytes();
    parts.headers.remove(header::CONTENT_LENGTH);
    parts.headers.insert(
        header::CONTENT_ENCODING,
        header::HeaderValue::from_static("gzip"),
    );
    parts.headers.insert(
        header::VARY,
        header::HeaderValue::from_static("Accept-Encoding"),
    );
    Response::from_parts(parts, full_body(gzip(&bytes)))
}

/// `data` as a gzip member at Go's `gzip.BestSpeed`, the level kube-apiserver's compression
/// uses.
fn gzip(data: &[u8]) -> Vec<u8> {
    use std::io::Write as _;
    let mut encoder = flate2::write::GzEncoder::new(
        Vec::with_capacity(data.len() / 4),
        flate2::Compression::fast(),
    );
    encoder
        .write_all(data)
        .and_then(|()| encoder.finish())
        .expect("writing to memory cannot fail")
}

/// The warning kube-apiserver adds to every request of a deprecated built-in type
/// (`deprecation.WarningMessage` in `staging/src/k8s.io/apiserver/pkg/endpoints/deprecation`,
/// wired for all of a resource's handlers in `installer.go`): core v1 Endpoints are
/// deprecated since 1.33 in favour of EndpointSlices (KEP-4974).
///
/// A deprecated version of a custom resource gets its CRD's warning (the CRD handler adds it
/// to every request it serves of the version: `crdInfo.warnings`).
fn deprecation_warning(resource: &ResourceType) -> Option<String> {
    if resource.custom {
        return resource.deprecation_warning.clone();
    }
    (resource.group.is_empty() && resource.version == "v1" && resource.plural == "endpoints").then(
        || "v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice".into(),
    )
}

fn openapi_v2(method: &Method, headers: &HeaderMap) -> Response<Body> {
    if method != Method::GET && method != Method::HEAD {
        return error_response(&method_not_allowed(method));
    }
    let accepts = |media: &str| {
        headers
            .get_all(header::ACCEPT)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .any(|range| range.split(';').next().unwrap_or("").trim() == media)
    };
    let protobuf = accepts(openapi::V2_PROTOBUF);
    if !protobuf && codec::negotiate(headers, codec::Route::Other).is_err() {
        return error_response(&ApiError::new(
            StatusReason::NotAcceptable,
            format!(
                "only the following media types are accepted: application/json, {}",
                openapi::V2_PROTOBUF
            ),
        ));
    }
    let (bytes, content_type) = openapi::v2(protobuf);
    let mut response = Response::new(full_body(bytes));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static(content_type),
    );
    response
}

/// Decodes `%XX` escapes in a request path, as Go's `URL.Path` is decoded before routing
/// (an escaped `/` separates segments there too).
fn percent_decode(path: &str) -> Result<String, ApiError> {
    let bytes = path.as_bytes();
    if bytes
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'%')
        .any(|(i, _)| {
            !bytes
                .get(i + 1..i + 3)
                .is_some_and(|hex| hex.iter().all(u8::is_ascii_hexdigit))
        })
    {
        return Err(ApiError::bad_request(format!(
            "invalid URL escape in path {path:?}"
        )));
    }
    percent_encoding::percent_decode_str(path)
        .decode_utf8()
        .map(|p| p.into_owned())
        .map_err(|_| ApiError::bad_request(format!("the path {path:?} is not UTF-8")))
}

async fn read_body(body: Incoming, limit: usize) -> Result<Bytes, ApiError> {
    match Limited::new(body, limit).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(err) if err.is::<http_body_util::LengthLimitError>() => Err(ApiError::new(
            StatusReason::RequestEntityTooLarge,
            // `NewRequestEntityTooLargeError` of the handlers' `limitedReadBody`.
            format!("Request entity too large: limit is {limit}"),
        )),
        Err(err) => Err(ApiError::bad_request(format!(
            "failed to read the request body: {err}"
        ))),
    }
}

/// The checks kube-apiserver's `/livez` and `/healthz` run (the fake's are always healthy);
/// `/readyz` runs these and [`READY_CHECKS`], then `shutdown`.
const HEALTH_CHECKS: &[&str] = &[
    "ping",
    "log",
    "etcd",
    "poststarthook/start-apiserver-admission-initializer",
    "poststarthook/generic-apiserver-start-informers",
    "poststarthook/start-apiextensions-informers",
    "poststarthook/start-apiextensions-controllers",
    "poststarthook/crd-informer-synced",
    "poststarthook/start-system-namespaces-controller",
    "poststarthook/bootstrap-controller",
    "poststarthook/rbac/bootstrap-roles",
    "poststarthook/scheduling/bootstrap-system-priority-classes",
];

/// The checks only `/readyz` runs, after the first three of [`HEALTH_CHECKS`].
const READY_CHECKS: &[&str] = &["etcd-readiness", "informer-sync"];

/// `/healthz`, `/livez`, `/readyz` and their checks, as the apiserver's `healthz` package
/// answers them: `ok`; with `verbose`, one `[+]<check> ok` line per check (`excluded: ok`
/// for those named by `exclude`, then a warning naming the excludes that match none) and
/// `<endpoint> check passed`; a single check's path answers `ok`, an unknown one 404.
fn health(
    endpoint: &'static str,
    check: Option<&str>,
    query: &Query,
) -> Result<Response<Body>, ApiError> {
    let mut checks: Vec<&str> = HEALTH_CHECKS[..3].to_vec();
    if endpoint == "readyz" {
        checks.extend(READY_CHECKS);
    }
    checks.extend(&HEALTH_CHECKS[3..]);
    if endpoint == "readyz" {
        checks.push("shutdown");
    }
    if let Some(check) = check {
        return if checks.contains(&check) {
            Ok(text_response(StatusCode::OK, "ok"))
        } else {
            Err(ApiError::unknown_path())
        };
    }
    if query.get("verbose").is_none() {
        return Ok(text_response(StatusCode::OK, "ok"));
    }
    let mut excluded: Vec<String> = query
        .0
        .iter()
        .filter(|(k, _)| k == "exclude")
        .map(|(_, v)| v.clone())
        .collect();
    let mut text = String::new();
    for check in checks {
        if excluded.iter().any(|e| e == check) {
            excluded.retain(|e| e != check);
            text.push_str(&format!("[+]{check} excluded: ok\n"));
        } else {
            text.push_str(&format!("[+]{check} ok\n"));
        }
    }
    if !excluded.is_empty() {
        excluded.sort();
        excluded.dedup();
        let quoted: Vec<String> = excluded.iter().map(|e| format!("{e:?}")).collect();
        text.push_str(&format!(
            "warn: some health checks cannot be excluded: no matches for {}\n",
            quoted.join(",")
        ));
    }
    text.push_str(&format!("{endpoint} check passed\n"));
    Ok(text_response(StatusCode::OK, &text))
}

fn handle_non_resource(
    shared: &Shared,
    method: &Method,
    route: Route,
    output: codec::Output,
) -> Result<Response<Body>, ApiError> {
    if !matches!(route, Route::NotFound) && method != Method::GET && method != Method::HEAD {
        return Err(method_not_allowed(method));
    }
    let registry = shared.registry.read();
    let document = match route {
        // Both written by `WriteRawJSON`: indented whatever the request, and JSON whatever
        // it accepts; `/version` in `version.Info`'s field order.
        Route::Root => {
            let paths = serde_json::to_vec(&discovery::root_paths(&registry)).unwrap_or_default();
            return Ok(raw_json(go_json::indent(&paths)));
        }
        Route::Version => return Ok(raw_json(go_json::indent(&discovery::version_json()))),
        Route::Health(..) => return Err(method_not_allowed(method)),
        Route::CoreVersions if output == codec::Output::AggregatedDiscovery => {
            discovery::aggregated(&registry, true)
        }
        Route::Groups if output == codec::Output::AggregatedDiscovery => {
            discovery::aggregated(&registry, false)
        }
        Route::CoreVersions => discovery::core_versions(shared.address),
        Route::Groups => discovery::group_list(&registry),
        Route::Group(group) => {
            discovery::group(&registry, &group).ok_or_else(ApiError::unknown_path)?
        }
        Route::GroupVersion(group, version) => {
            discovery::resource_list(&registry, &group, &version)
                .ok_or_else(ApiError::unknown_path)?
        }
        Route::OpenApiRoot => shared.openapi.root(&registry),
        Route::OpenApiGroupVersion(path) => {
            let document = shared
                .openapi
                .group_version(&registry, &path)
                .ok_or_else(ApiError::unknown_path)?;
            return Ok(respond(StatusCode::OK, &document, output));
        }
        Route::Resource(_) | Route::Review(..) | Route::NotFound | Route::OpenApiV2 => {
            return Err(ApiError::unknown_path());
        }
    };
    Ok(respond(StatusCode::OK, &document, output))
}

/// A review: decoded, answered and returned `201 Created` (see [`reviews`]).
fn handle_review(
    shared: &Shared,
    parts: &http::request::Parts,
    review: reviews::Review,
    namespace: Option<&str>,
    info: &RequestInfo,
    body: &[u8],
    output: codec::Output,
) -> Result<Response<Body>, ApiError> {
    if parts.method != Method::POST {
        return Err(method_not_allowed(&parts.method));
    }
    let object = codec::decode_object(&parts.headers, body)?.value;
    let requester = impersonation::impersonated()
        .unwrap_or_else(|| reviews::UserInfo::of(info.user.as_deref()));
    let token_user = |token: &str, targets: &[String]| shared.review_token(token, targets);
    let answered = reviews::create(review, namespace, object, &requester, token_user)?;
    Ok(respond(StatusCode::CREATED, &answered, output))
}

/// The 405 of a route that does not take the method: go-restful's, turned into a `Status` by
/// the apiserver's `serviceErrorHandler` (`NewGenericServerResponse`: the reason's stock
/// message, empty details).
fn method_not_allowed(_method: &Method) -> ApiError {
    ApiError::new(
        StatusReason::MethodNotAllowed,
        "the server does not allow this method on the requested resource",
    )
    .with_details(json!({}))
}

/// The verb `RequestInfoFactory` gives a resource request's method (before `list` becomes
/// `watch`): "" for a method it has none for.
fn request_info_verb(method: &Method, named: bool) -> &'static str {
    match *method {
        Method::POST => "create",
        Method::GET | Method::HEAD if named => "get",
        Method::GET | Method::HEAD => "list",
        Method::PUT => "update",
        Method::PATCH => "patch",
        Method::DELETE if named => "delete",
        Method::DELETE => "deletecollection",
        _ => "",
    }
}

/// The type objects of `resource` are stored as: `storage`, the storage version's. A custom
/// resource written through another version is pruned, defaulted and validated by that
/// version's schema (and rules) and strategy (its status and scale subresources), as the
/// real server's handler for that version does before it converts the object to the
/// storage version (with the `None` strategy, its `apiVersion` alone), whose schema then
/// prunes and defaults it (`stored_schema`).
fn written_as(resource: &ResourceType, storage: Arc<ResourceType>) -> Arc<ResourceType> {
    if !resource.custom || !storage.custom || resource.version == storage.version {
        return storage;
    }
    Arc::new(ResourceType {
        schema: resource.schema.clone(),
        stored_schema: storage.schema.clone(),
        status_subresource: resource.status_subresource,
        scale: resource.scale.clone(),
        ..(*storage).clone()
    })
}

/// Write options naming the version a custom resource is written through, when it is not
/// its storage version (managed fields entries carry the request's version).
fn written_through(resource: &ResourceType, mut options: WriteOptions) -> WriteOptions {
    if resource.custom && resource.version != resource.storage_version {
        options.api_version = Some(resource.api_version());
    }
    options
}

/// What every resource handler needs to know about its request.
struct ResourceRequest<'a> {
    shared: &'a Arc<Shared>,
    method: &'a Method,
    headers: &'a HeaderMap,
    query: &'a Query,
    verb: Verb,
    /// Who asked what, for the interceptor.
    info: &'a RequestInfo,
    output: codec::Output,
    /// When the request times out; long loops stop there.
    deadline: Instant,
}

impl ResourceRequest<'_> {
    /// The object or patch in the body (an object in any format the server reads, a patch
    /// in JSON or YAML), with unknown and duplicate fields handled as `fieldValidation`
    /// says. Returns it and the warnings to send.
    fn object(
        &self,
        resource: &ResourceType,
        body: &[u8],
        kind: codec::BodyKind,
    ) -> Result<(Value, Vec<String>), ApiError> {
        let validation =
            FieldValidation::parse(self.query.get("fieldValidation"), self.options_kind())?;
        json_syntax(resource, self.headers, body, kind, validation)?;
        if kind == codec::BodyKind::Object
            && resource.custom
            && body.iter().all(u8::is_ascii_whitespace)
        {
            // An empty YAML body decodes to nothing, which has no kind.
            codec::check_custom_type_meta(resource, body, &Value::Null)?;
        }
        let mut decoded = if kind == codec::BodyKind::Object {
            codec::decode_object(self.headers, body)?
        } else {
            codec::decode_yaml(body)?
        };
        if kind == codec::BodyKind::Object {
            codec::check_custom_type_meta(resource, body, &decoded.value)?;
        }
        let warnings = codec::check_fields(resource, &mut decoded, validation, kind)?;
        Ok((decoded.value, warnings))
    }

    /// Creates `object` (to be named `name`, or generated from it) as a POST does: the
    /// namespace admits it, the store creates it, the server's controllers see it; `201`
    /// with the object as `resource` (the version requested; `storage` the stored one)
    /// serves it.
    #[allow(clippy::too_many_arguments)]
    fn create_in(
        &self,
        mut store: parking_lot::MutexGuard<'_, Store>,
        (resource, storage): (&ResourceType, &ResourceType),
        namespace: Option<&str>,
        name: &str,
        object: Value,
        options: WriteOptions,
        warnings: &[String],
    ) -> Result<Response<Body>, ApiError> {
        let dry_run = options.dry_run;
        namespaces::admit_create(
            &store,
            &self.shared.registry.read(),
            resource,
            namespace,
            name,
        )?;
        let created = store.create(storage, namespace, object, options)?;
        let admission_warnings =
            store.pod_security_warnings(storage, None, &created, Subresource::Main);
        drop(store);
        if !dry_run {
            self.shared.after_write(storage, name_of(&created));
        }
        let warnings = [
            warnings,
            &super::validation::write_warnings(resource, None, &created),
            &admission_warnings,
        ]
        .concat();
        Ok(self.respond(StatusCode::CREATED, &resource.present(&created), &warnings))
    }

    /// A server-side apply configuration (YAML or JSON) and the warnings for its duplicate
    /// fields: `fieldValidation=Strict` refuses them (as the real server's strict YAML
    /// decoding of the patch); unknown fields are the apply's business (a 500, as the real
    /// server's typed conversion answers).
    fn apply_configuration(&self, body: &[u8]) -> Result<(Value, Vec<String>), ApiError> {
        let validation =
            FieldValidation::parse(self.query.get("fieldValidation"), self.options_kind())?;
        if body.iter().all(u8::is_ascii_whitespace) {
            // An empty configuration decodes to an object of no type, which the field
            // manager's version check refuses.
            return Err(ApiError::bad_request("invalid object type: /, Kind="));
        }
        let decoded = codec::decode_yaml(body)?;
        let problems: Vec<String> = decoded
            .duplicates
            .iter()
            .map(|path| format!("duplicate field \"{path}\""))
            .collect();
        match validation {
            _ if problems.is_empty() => Ok((decoded.value, Vec::new())),
            FieldValidation::Ignore => Ok((decoded.value, Vec::new())),
            FieldValidation::Warn => Ok((decoded.value, problems)),
            FieldValidation::Strict => Err(ApiError::bad_request(format!(
                "error strict decoding YAML: {}",
                problems.join(", ")
            ))),
        }
    }

    /// The `meta.k8s.io` kind of the request's options (`CreateOptions`, `UpdateOptions`,
    /// `PatchOptions`), as errors in them name it.
    fn options_kind(&self) -> &'static str {
        match self.verb {
            Verb::Update => "UpdateOptions",
            Verb::Patch => "PatchOptions",
            _ => "CreateOptions",
        }
    }

    /// The options of a write: dry run, the field manager (`fieldManager`, else the first
    /// word of the `User-Agent`, as the real server derives it), `force` for apply.
    fn write_options(&self, dry_run: bool, apply: bool) -> Result<WriteOptions, ApiError> {
        let options = format!("{}.meta.k8s.io", self.options_kind());
        let manager = match self.query.get("fieldManager").filter(|m| !m.is_empty()) {
            Some(manager) => {
                let errors = fields::validate_manager(manager);
                if !errors.is_empty() {
                    return Err(ApiError::invalid_fields(&options, "", errors));
                }
                manager.to_string()
            }
            None => fields::manager_from_user_agent(
                self.headers
                    .get(header::USER_AGENT)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or(""),
            ),
        };
        let force = self.query.bool("force");
        if force.is_some() && !apply && self.verb == Verb::Patch {
            return Err(ApiError::invalid(
                &options,
                "",
                "force: Forbidden: may not be specified for non-apply patch",
            ));
        }
        Ok(WriteOptions {
            dry_run,
            manager: Some(manager),
            force: force.unwrap_or(false),
            ..WriteOptions::default()
        })
    }

    /// The `meta.k8s.io` version of a negotiated Table or metadata answer.
    fn meta_version(&self) -> &'static str {
        let route = if self.verb == Verb::Watch {
            codec::Route::Watch
        } else {
            codec::Route::Read
        };
        codec::meta_version(self.headers, route)
    }

    /// A response with an object in the negotiated format and `Warning` headers.
    fn respond(&self, status: StatusCode, value: &Value, warnings: &[String]) -> Response<Body> {
        with_warnings(respond(status, value, self.output), warnings)
    }

    /// A response with a stored object: its stored JSON when JSON was negotiated.
    fn respond_object(
        &self,
        resource: &ResourceType,
        status: StatusCode,
        object: &Object,
    ) -> Response<Body> {
        let object = &resource.present(object);
        if self.output != codec::Output::Json {
            let document = match self.output {
                codec::Output::Table => table::object_table(
                    resource,
                    object,
                    table::IncludeObject::parse(self.query.string("includeObject")),
                    true,
                ),
                codec::Output::Metadata => codec::partial_metadata(object),
                codec::Output::Json | codec::Output::Yaml | codec::Output::AggregatedDiscovery => {
                    object.as_ref().clone()
                }
            };
            let mut document = document;
            codec::set_meta_version(&mut document, self.meta_version());
            return self.respond(status, &document, &[]);
        }
        // The stored JSON, ended as Go's `json.Encoder` ends a document.
        let json = object.json();
        let mut bytes = Vec::with_capacity(json.len() + 1);
        bytes.extend_from_slice(json);
        bytes.push(b'\n');
        let mut response = Response::new(full_body(bytes));
        *response.status_mut() = status;
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            header::HeaderValue::from_static("application/json"),
        );
        response
    }

    /// A list of stored objects (`<Kind>List`, or a `Table` or `PartialObjectMetadataList` as
    /// negotiated). JSON is written around the items' stored JSON, not serialized again. A
    /// built-in type's items have no `kind` or `apiVersion` (see [`codec::list_item`]).
    fn respond_list(
        &self,
        resource: &ResourceType,
        metadata: Value,
        items: &[Object],
    ) -> Response<Body> {
        let list_kind = resource.list_kind.clone();
        let presented: Vec<Object>;
        // A custom resource's objects may be stored in a former storage version.
        let as_stored = !resource.custom
            && resource.version == resource.storage_version
            && resource.stored_as().is_none();
        let items = if as_stored {
            items
        } else {
            presented = items.iter().map(|o| resource.present(o)).collect();
            &presented
        };
        match self.output {
            // (Aggregated discovery is negotiated for discovery routes only.)
            codec::Output::Json | codec::Output::AggregatedDiscovery => {
                let mut out =
                    Vec::with_capacity(items.iter().map(|o| o.bytes() + 1).sum::<usize>() + 256);
                let write_items = |out: &mut Vec<u8>| {
                    out.extend_from_slice(b"\"items\":[");
                    for (i, item) in items.iter().enumerate() {
                        if i > 0 {
                            out.push(b',');
                        }
                        codec::write_list_item(out, resource, item, item.json());
                    }
                    out.push(b']');
                };
                if resource.custom {
                    // An unstructured list: its keys sorted, as Go writes a map's.
                    out.extend_from_slice(b"{\"apiVersion\":");
                    let _ = serde_json::to_writer(&mut out, &resource.api_version());
                    out.push(b',');
                    write_items(&mut out);
                    out.extend_from_slice(b",\"kind\":");
                    let _ = serde_json::to_writer(&mut out, &list_kind);
                    out.extend_from_slice(b",\"metadata\":");
                    let _ = serde_json::to_writer(&mut out, &metadata);
                } else {
                    // A typed list: the Go struct's fields in order (`kind`, `apiVersion`,
                    // `metadata`, `items`), so a client reading it as it arrives knows the
                    // list's type before its items (which have none of their own).
                    out.extend_from_slice(b"{\"kind\":");
                    let _ = serde_json::to_writer(&mut out, &list_kind);
                    out.extend_from_slice(b",\"apiVersion\":");
                    let _ = serde_json::to_writer(&mut out, &resource.api_version());
                    out.extend_from_slice(b",\"metadata\":");
                    let _ = serde_json::to_writer(&mut out, &metadata);
                    out.push(b',');
                    write_items(&mut out);
                }
                // As Go's `json.Encoder` ends a document.
                out.extend_from_slice(b"}\n");
                let mut response = Response::new(full_body(out));
                response.headers_mut().insert(
                    header::CONTENT_TYPE,
                    header::HeaderValue::from_static("application/json"),
                );
                response
            }
            codec::Output::Table => {
                let mut table_metadata = json!({});
                for field in ["resourceVersion", "continue"] {
                    if let Some(value) = metadata[field].as_str().filter(|v| !v.is_empty()) {
                        table_metadata[field] = json!(value);
                    }
                }
                let mut table = table::table_of(
                    resource,
                    items,
                    table_metadata,
                    table::IncludeObject::parse(self.query.string("includeObject")),
                    true,
                );
                codec::set_meta_version(&mut table, self.meta_version());
                self.respond(StatusCode::OK, &table, &[])
            }
            codec::Output::Metadata => {
                let mut list = json!({
                    "kind": "PartialObjectMetadataList",
                    "apiVersion": "meta.k8s.io/v1",
                    // A typed `ListMeta`: an empty `continue` is left out (`omitempty`),
                    // where an unstructured list of custom resources keeps it.
                    "metadata": without_empty_continue(metadata),
                    "items": items.iter().map(|o| codec::partial_metadata(o)).collect::<Vec<Value>>(),
                });
                codec::set_meta_version(&mut list, self.meta_version());
                self.respond(StatusCode::OK, &list, &[])
            }
            codec::Output::Yaml => self.respond(
                StatusCode::OK,
                &json!({
                    "kind": list_kind,
                    "apiVersion": resource.api_version(),
                    "metadata": metadata,
                    "items": items.iter().map(|o| codec::list_item(resource, o)).collect::<Vec<Value>>(),
                }),
                &[],
            ),
        }
    }
}

fn handle_resource(
    request: &ResourceRequest<'_>,
    path: ResourcePath,
    body: Bytes,
) -> Result<Response<Body>, ApiError> {
    let shared = request.shared;
    let (query, headers, method) = (request.query, request.headers, request.method);
    // kube-apiserver's custom resource handler serves a namespaced type across namespaces
    // for list and watch only: a create or deletecollection there is not routed (404).
    if path.resource.custom
        && path.resource.namespaced
        && path.namespace.is_none()
        && !matches!(request.verb, Verb::List | Verb::Watch)
    {
        return Err(ApiError::unknown_path());
    }
    // A built-in namespaced type's path without a namespace has go-restful routes for list
    // and watch only (`registerResourceHandlers`): a create or deletecollection there is
    // the router's 405, not a create in no namespace or a delete across all of them.
    if !path.resource.custom
        && path.resource.namespaced
        && path.namespace.is_none()
        && !matches!(request.verb, Verb::List | Verb::Watch)
    {
        return Err(method_not_allowed(method));
    }
    if path.resource.custom
        && let Some(sub) = path.subresource.as_deref()
        && !(sub == "status" && path.resource.status_subresource
            || sub == "scale" && path.resource.scale.is_some())
    {
        return Err(ApiError::not_found(
            &path.resource.qualified_resource(),
            path.name.as_deref().unwrap_or(""),
        ));
    }
    // The CRD handler's `serveStatus` and `serveScale` take get, update and patch only; its
    // `serveResource` every verb `RequestInfoFactory` names. Anything else is
    // `NewMethodNotSupported` of the verb `RequestInfoFactory` found ("" for a method it has
    // no verb for, `create` for a POST to a subresource, `delete` for a DELETE of one).
    if path.resource.custom
        && (request.verb == Verb::Other
            || path.subresource.is_some()
                && !matches!(request.verb, Verb::Get | Verb::Update | Verb::Patch))
    {
        return Err(ApiError::new(
            StatusReason::MethodNotAllowed,
            format!(
                "{} is not supported on resources of kind {}",
                request_info_verb(method, path.name.is_some()),
                go_quote(&path.resource.qualified_resource())
            ),
        )
        .with_details(json!({"group": path.resource.group, "kind": path.resource.plural})));
    }
    if path.resource.custom
        && matches!(request.verb, Verb::Update | Verb::Patch)
        && path.name.is_none()
    {
        return Err(ApiError::bad_request("name must be provided"));
    }
    // `IsValidPathSegmentName` of the name a read or write addresses.
    if let Some(name) = path.name.as_deref()
        && matches!(
            request.verb,
            Verb::Get | Verb::Update | Verb::Patch | Verb::Delete
        )
    {
        let problems = super::validation::path_segment_errors(name);
        if !problems.is_empty() {
            return Err(ApiError::bad_request(format!(
                "Name parameter invalid: {}: {}",
                go_quote(name),
                problems.join(";")
            )));
        }
    }
    if path.subresource.as_deref() == Some("scale") {
        return handle_scale(request, &path, &body);
    }
    if matches!(path.subresource.as_deref(), Some("token" | "eviction")) {
        return handle_posted_subresource(request, &path, &body);
    }
    if matches!(
        path.subresource.as_deref(),
        Some("log" | "binding" | "exec" | "attach" | "portforward")
    ) {
        return handle_pod_subresource(request, &path, &body);
    }
    if path.subresource.as_deref() == Some("proxy") {
        return handle_proxy(request, &path);
    }
    let subresource = match path.subresource.as_deref() {
        Some("status") => Subresource::Status,
        Some("finalize") => Subresource::Finalize,
        Some("ephemeralcontainers") => Subresource::EphemeralContainers,
        Some("approval") => Subresource::Approval,
        _ => Subresource::Main,
    };
    if path.subresource.is_some() && request.verb == Verb::Delete
        || subresource == Subresource::Finalize && request.verb != Verb::Update
        || subresource == Subresource::EphemeralContainers
            && !matches!(request.verb, Verb::Get | Verb::Update | Verb::Patch)
        || namespaces::is_namespace(&path.resource) && request.verb == Verb::DeleteCollection
    {
        return Err(method_not_allowed(method));
    }
    // The version requested, and the one objects are stored in (the same but for other
    // versions of a multi-version custom resource).
    let resource = path.resource.clone();
    let storage = written_as(&resource, resource.storage(&shared.registry.read()));
    let namespace = path.namespace.as_deref();
    let name = path.name.as_deref().unwrap_or("");
    let present = |object: &Object| resource.present(object);
    // A view of another group's objects (events.k8s.io's of core Events) names its own
    // resource in errors, as the real server does.
    let renamed = |err: ApiError| {
        if resource.group == storage.group {
            err
        } else {
            err.renamed(
                &storage.qualified_resource(),
                &resource.qualified_resource(),
            )
        }
    };
    // The warnings of decoding the request's object (unknown or duplicate fields) go with
    // whatever the write answers, its errors too: the real server records them as it
    // decodes, before it finds the object, validates it or stores it.
    let decoded_warnings = std::cell::RefCell::new(Vec::<String>::new());
    let outcome = (|| -> Result<Response<Body>, ApiError> {
        match request.verb {
            Verb::List => list(request, &path),
            Verb::Watch => watch(request, &path),
            Verb::Get => {
                if let Some(requested) = query.string("resourceVersion").filter(|rv| *rv != "0") {
                    let requested = read_revision(requested)?;
                    let current = shared.store.revision();
                    if requested > current {
                        return Err(ApiError::too_large_resource_version(requested, current));
                    }
                }
                let object = shared.store.get(&storage, namespace, name)?;
                codec::check_transform(
                    request.headers,
                    request.output,
                    query.get("includeObject"),
                    &resource,
                    false,
                )?;
                Ok(request.respond_object(&resource, StatusCode::OK, &object))
            }
            Verb::Create => {
                let dry_run = query.dry_run("CreateOptions")?;
                let (mut object, warnings) =
                    request.object(&resource, &body, codec::BodyKind::Object)?;
                decoded_warnings.replace(warnings.clone());
                let options = written_through(&resource, request.write_options(dry_run, false)?);
                resource.to_storage(&mut object);
                events::prepare_create(&resource, namespace, &mut object)?;
                let store = shared.store.lock();
                let new_name = ["name", "generateName"]
                    .iter()
                    .find_map(|field| {
                        object
                            .get("metadata")?
                            .get(*field)?
                            .as_str()
                            .filter(|n| !n.is_empty())
                    })
                    .unwrap_or("");
                let new_name = new_name.to_string();
                let target = (&*resource, &*storage);
                request.create_in(
                    store, target, namespace, &new_name, object, options, &warnings,
                )
            }
            Verb::Update => {
                let dry_run = query.dry_run("UpdateOptions")?;
                let (mut object, warnings) =
                    request.object(&resource, &body, codec::BodyKind::Object)?;
                decoded_warnings.replace(warnings.clone());
                let options = written_through(&resource, request.write_options(dry_run, false)?);
                let unconditional = (resource.custom || crd::is_definition(&resource))
                    && matches!(super::storage::resource_version(&object).as_str(), "" | "0");
                resource.to_storage(&mut object);
                let mut store = shared.store.lock();
                if unconditional && store.get(&storage, namespace, name).is_ok() {
                    // Custom resources and CRDs do not allow unconditional updates (`0`
                    // is an unset version to the generic store); the generic store checks
                    // this once it has found the object (a missing one is a 404 first).
                    return Err(ApiError::invalid_fields(
                        &resource.qualified_resource(),
                        name,
                        vec![FieldError::invalid(
                            "metadata.resourceVersion",
                            0,
                            "must be specified for an update",
                        )],
                    ));
                }
                events::prepare_update(&resource, &store, &storage, namespace, name, &mut object)?;
                if subresource == Subresource::Main
                    && resource.creates_on_update()
                    && store.get(&storage, namespace, name).is_err()
                {
                    // An update of a missing object creates it, for the types whose strategy
                    // allows it (`AllowCreateOnUpdate`): Services, Endpoints, Events, Leases...
                    let body_name = object
                        .pointer("/metadata/name")
                        .and_then(Value::as_str)
                        .unwrap_or("");
                    if body_name != name {
                        return Err(ApiError::name_mismatch(body_name, name));
                    }
                    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
                        // The version it was read at means nothing for an object that is gone.
                        meta.remove("resourceVersion");
                    }
                    let target = (&*resource, &*storage);
                    return request
                        .create_in(store, target, namespace, name, object, options, &warnings);
                }
                let old = store.get(&storage, namespace, name).ok();
                let updated =
                    store.update(&storage, namespace, name, object, subresource, options)?;
                let admission_warnings =
                    store.pod_security_warnings(&storage, old.as_deref(), &updated, subresource);
                drop(store);
                if !dry_run {
                    shared.after_write(&storage, name);
                }
                let warnings = [
                    warnings,
                    super::validation::write_warnings(&resource, old.as_deref(), &updated),
                    admission_warnings,
                ]
                .concat();
                Ok(request.respond(StatusCode::OK, &present(&updated), &warnings))
            }
            Verb::Patch => {
                let kind = patch_kind(headers, &resource)?;
                let dry_run = query.dry_run("PatchOptions")?;
                if kind == PatchKind::Apply {
                    require_field_manager(query)?;
                }
                let options = written_through(
                    &resource,
                    request.write_options(dry_run, kind == PatchKind::Apply)?,
                );
                let (mut patch, warnings) = match kind {
                    // A JSON patch is a list of operations, not an object of the type.
                    PatchKind::Json => {
                        let validation =
                            FieldValidation::parse(query.get("fieldValidation"), "PatchOptions")?;
                        if let Some(why) = go_json::syntax_error(&body) {
                            // Decoded strictly (`error decoding patch: ...`) unless told to
                            // ignore unknown fields, then by `jsonpatch.DecodePatch`.
                            return Err(ApiError::bad_request(match validation {
                                FieldValidation::Ignore => why,
                                _ => format!("error decoding patch: {why}"),
                            }));
                        }
                        (codec::decode_json(&body)?.value, Vec::new())
                    }
                    PatchKind::Apply => {
                        let (config, warnings) = request.apply_configuration(&body)?;
                        codec::check_apply_type(&resource, &config)?;
                        (config, warnings)
                    }
                    PatchKind::Merge => {
                        match request.object(&resource, &body, codec::BodyKind::MergePatch) {
                            Err(refused)
                                if resource.custom
                                    && refused.code() == 400
                                    && go_json::syntax_error(&body).is_none() =>
                            {
                                // Strict decoding refuses the patched object (a 422), once
                                // the object is found.
                                let current = shared.store.get(&storage, namespace, name)?;
                                let patch = codec::decode_json(&body)?.value;
                                let current = resource.present(&current);
                                return Err(patch::strict_merge_error(&current, &patch, refused));
                            }
                            decoded => decoded?,
                        }
                    }
                    PatchKind::Strategic => {
                        request.object(&resource, &body, codec::BodyKind::StrategicPatch)?
                    }
                };
                let validation =
                    codec::FieldValidation::parse(query.get("fieldValidation"), "PatchOptions")?;
                if let Some(err) = patch::decode_error(kind, &patch, &body, validation) {
                    return Err(err);
                }
                // An autoscaling/v1 configuration is converted against the stored object
                // (`hpa_v1::patch`), an events.k8s.io one renamed here.
                if kind == PatchKind::Apply && !hpa_v1::is_view(&resource) {
                    resource.to_storage(&mut patch);
                }
                let mut store = shared.store.lock();
                let old = store.get(&storage, namespace, name).ok();
                let existed = old.is_some();
                // A patch's warnings come from decoding the patched object, once the object
                // is found (an apply's, once it is applied).
                if existed && kind != PatchKind::Apply {
                    decoded_warnings.replace(warnings.clone());
                }
                if !existed && kind == PatchKind::Apply {
                    namespaces::admit_create(
                        &store,
                        &shared.registry.read(),
                        &resource,
                        namespace,
                        name,
                    )?;
                }
                // The two views patch in their own shapes; every other type as stored.
                let patch_as_served = if hpa_v1::is_view(&resource) {
                    hpa_v1::patch
                } else if events::is_view(&resource) {
                    events::patch
                } else {
                    patch_stored
                };
                let patched = patch_as_served(
                    &mut store,
                    &resource,
                    &storage,
                    namespace,
                    name,
                    kind,
                    &patch,
                    subresource,
                    options,
                )?;
                let admission_warnings =
                    store.pod_security_warnings(&storage, old.as_deref(), &patched, subresource);
                drop(store);
                if !dry_run {
                    shared.after_write(&storage, name);
                }
                let status = if existed {
                    StatusCode::OK
                } else {
                    StatusCode::CREATED
                };
                let warnings = [
                    warnings,
                    super::validation::write_warnings(&resource, old.as_deref(), &patched),
                    admission_warnings,
                ]
                .concat();
                Ok(request.respond(status, &present(&patched), &warnings))
            }
            Verb::Delete => {
                let (options, dry_run) = delete_options(headers, query, &body)?;
                let warnings = gc::delete_warnings(&resource, &options);
                namespaces::admit_delete(&resource, name)?;
                let outcome = shared
                    .store
                    .lock()
                    .delete(&storage, namespace, name, &options, dry_run)?;
                if !dry_run {
                    shared.after_write(&storage, name);
                }
                Ok(match outcome {
                    // Like kube-apiserver: 202 when the object stays and the request asked for
                    // its dependents to be deleted with the legacy `orphanDependents: false`.
                    DeleteOutcome::Pending(object) if options.orphan_dependents == Some(false) => {
                        request.respond(StatusCode::ACCEPTED, &present(&object), &warnings)
                    }
                    DeleteOutcome::Pending(object) => {
                        request.respond(StatusCode::OK, &present(&object), &warnings)
                    }
                    DeleteOutcome::Deleted(object) if resource.returns_deleted_object => {
                        request.respond(StatusCode::OK, &present(&object), &warnings)
                    }
                    DeleteOutcome::Deleted(object) => {
                        let uid = object.pointer("/metadata/uid").and_then(Value::as_str);
                        let status = success_status(&resource.plural, &resource.group, name, uid);
                        request.respond(StatusCode::OK, &status, &warnings)
                    }
                })
            }
            Verb::DeleteCollection => {
                // The list options first, read and validated as a list's (`limit=abc` is a
                // 400 before anything is deleted).
                ListOptions::parse(query, false)?;
                let (options, dry_run) = delete_options(headers, query, &body)?;
                let warnings = gc::delete_warnings(&resource, &options);
                let filter = filter(&path, query)?;
                // As the real server: list, then delete what was listed one object at a time
                // (other requests, writes included, go on meanwhile, and the request timeout
                // stops the loop), answering with the list.
                let listed = shared.store.list(&ListRequest {
                    filter: Filter {
                        resource: storage.clone(),
                        ..filter
                    },
                    version: ReadVersion::MostRecent,
                    limit: None,
                    continue_token: None,
                })?;
                for object in &listed.items {
                    if Instant::now() >= request.deadline {
                        return Err(timeout_error());
                    }
                    let ns = object
                        .pointer("/metadata/namespace")
                        .and_then(Value::as_str);
                    let object_name = name_of(object);
                    let outcome =
                        shared
                            .store
                            .lock()
                            .delete(&storage, ns, object_name, &options, dry_run);
                    match outcome {
                        Ok(_) => {
                            if !dry_run {
                                shared.after_write(&storage, object_name);
                            }
                        }
                        // Deleted by someone else since the list.
                        Err(err) if err.code() == 404 => {}
                        Err(err) => return Err(err),
                    }
                }
                let metadata = list_metadata(&resource, listed.revision, None, None);
                if request.output == codec::Output::Json {
                    let response = request.respond_list(&resource, metadata, &listed.items);
                    return Ok(with_warnings(response, &warnings));
                }
                let list = json!({
                    "kind": resource.list_kind,
                    "apiVersion": resource.api_version(),
                    "metadata": metadata,
                    "items": listed.items.iter().map(|o| codec::list_item(&resource, &present(o))).collect::<Vec<Value>>(),
                });
                Ok(request.respond(StatusCode::OK, &list, &warnings))
            }
            Verb::Discovery | Verb::Other => Err(method_not_allowed(method)),
        }
    })();
    match outcome {
        Err(err) if !decoded_warnings.borrow().is_empty() => Ok(with_warnings(
            error_response_as(&renamed(err), request.output),
            &decoded_warnings.borrow(),
        )),
        outcome => outcome.map_err(renamed),
    }
}

/// `response` with a `Warning` header (`299 - "<text>"`) for each of `warnings`.
fn with_warnings(mut response: Response<Body>, warnings: &[String]) -> Response<Body> {
    for warning in warnings {
        let text = format!(
            "299 - {}",
            serde_json::to_string(warning).unwrap_or_default()
        );
        if let Ok(value) = header::HeaderValue::from_str(&text) {
            response.headers_mut().append(header::WARNING, value);
        }
    }
    response
}

fn name_of(object: &Value) -> &str {
    object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// List metadata as a typed `ListMeta` serializes it: no empty `continue`.
fn without_empty_continue(mut metadata: Value) -> Value {
    if let Value::Object(map) = &mut metadata
        && map.get("continue").is_some_and(|c| c == "")
    {
        map.remove("continue");
    }
    metadata
}

/// A list's `metadata`: its revision, the continue token and remaining count when there is
/// a next page; lists of custom resources carry `continue: ""` without one, as the real
/// server's unstructured lists do.
fn list_metadata(
    resource: &ResourceType,
    revision: u64,
    continue_token: Option<String>,
    remaining: Option<usize>,
) -> Value {
    let mut metadata = json!({"resourceVersion": revision.to_string()});
    match continue_token {
        Some(token) => metadata["continue"] = json!(token),
        None if resource.custom => metadata["continue"] = json!(""),
        None => {}
    }
    if let Some(remaining) = remaining {
        metadata["remainingItemCount"] = json!(remaining);
    }
    metadata
}

/// The create-only subresources: a ServiceAccount's `token` (a TokenRequest, answered with a
/// token the server then authenticates as the account: [`service_accounts::token_request`])
/// and a Pod's `eviction` (an Eviction, answered with a `Status` once the Pod is deleted:
/// [`eviction::evict`]). Each is a `POST`, answered `201`.
fn handle_posted_subresource(
    request: &ResourceRequest<'_>,
    path: &ResourcePath,
    body: &[u8],
) -> Result<Response<Body>, ApiError> {
    if request.method != Method::POST {
        return Err(method_not_allowed(request.method));
    }
    let shared = request.shared;
    let namespace = path.namespace.as_deref().unwrap_or("");
    let name = path.name.as_deref().unwrap_or("");
    let posted = codec::decode_object(request.headers, body)?.value;
    let answer = if path.subresource.as_deref() == Some("token") {
        let account = shared.store.get(&path.resource, Some(namespace), name)?;
        let lookup = |plural: &str, namespace: Option<&str>, name: &str| {
            Ok(shared
                .core_object(plural, namespace, name)?
                .as_ref()
                .clone())
        };
        let (answer, token, issued) = service_accounts::token_request(&account, posted, &lookup)?;
        shared.issued_tokens.write().insert(token, issued);
        answer
    } else {
        let (options, body_dry_run) = match posted.get("deleteOptions") {
            Some(options) if !options.is_null() => delete_options_of(options)?,
            _ => (DeleteOptions::default(), false),
        };
        let dry_run = request.query.dry_run("CreateOptions")? || body_dry_run;
        let status = {
            let registry = shared.registry.read();
            let mut store = shared.store.lock();
            eviction::evict(
                &mut store, &registry, namespace, name, &posted, &options, dry_run,
            )?
        };
        if !dry_run {
            shared.after_write(&path.resource, name);
        }
        status
    };
    Ok(respond(StatusCode::CREATED, &answer, request.output))
}

/// A Pod's `log`, `exec`, `attach`, `portforward` (what a kubelet would answer) and
/// `binding` (see [`pod_subresources`]).
fn handle_pod_subresource(
    request: &ResourceRequest<'_>,
    path: &ResourcePath,
    body: &[u8],
) -> Result<Response<Body>, ApiError> {
    let shared = request.shared;
    let namespace = path.namespace.as_deref();
    let subresource = path.subresource.as_deref().unwrap_or("");
    let allowed = match subresource {
        "log" => request.method == Method::GET,
        "binding" => request.method == Method::POST,
        _ => matches!(*request.method, Method::GET | Method::POST),
    };
    if !allowed {
        return Err(method_not_allowed(request.method));
    }
    if subresource == "binding" {
        return bind_pod(request, path, body);
    }
    let name = path.name.as_deref().unwrap_or("");
    let pod = shared.store.get(&path.resource, namespace, name)?;
    match subresource {
        "log" => {
            let container = pod_subresources::container(&pod, request.query.string("container"))?;
            let number = |key: &str| -> Result<Option<usize>, ApiError> {
                match request.query.string(key) {
                    None => Ok(None),
                    Some(v) => v.parse().map(Some).map_err(|_| {
                        ApiError::bad_request(format!(
                            "{key}: Invalid value: \"{v}\": must be a non-negative integer"
                        ))
                    }),
                }
            };
            let (tail, limit) = (number("tailLines")?, number("limitBytes")?);
            let key = (
                namespace.unwrap_or("").to_string(),
                name.to_string(),
                container,
            );
            let logs = shared.pod_logs.read();
            let text = logs.get(&key);
            // Logs set for the container are its kubelet's answer. Without them, a Pod bound
            // to a Node is looked up as `LogLocation` looks it up (a missing Node is a 404,
            // one without an address a 500, as for `exec`); an unbound Pod's logs are empty.
            let node_name = str_at(&pod, "/spec/nodeName");
            if text.is_none() && !node_name.is_empty() {
                let node = shared.core_object("nodes", None, node_name);
                let node = node.as_deref().map_err(Clone::clone)?;
                pod_subresources::kubelet_address(node)?;
            }
            let text = text.map_or("", String::as_str);
            Ok(text_response(
                StatusCode::OK,
                pod_subresources::log_text(text, tail, limit),
            ))
        }
        _ => {
            pod_subresources::container(&pod, request.query.string("container"))?;
            let node = shared.core_object("nodes", None, str_at(&pod, "/spec/nodeName"));
            Err(pod_subresources::stream_error(
                &pod,
                node.as_deref().map_err(Clone::clone),
            ))
        }
    }
}

/// A `Binding` posted to a Pod's `binding` subresource or to the legacy `bindings` resource
/// (`BindingREST` and `LegacyBindingREST`): checked, the Node's topology labels added (the
/// subresource only, as the `PodTopologyLabels` admission plugin does), then the Pod bound
/// ([`pod_subresources::bind`]); answered with a `Status` (`201`).
fn bind_pod(
    request: &ResourceRequest<'_>,
    path: &ResourcePath,
    body: &[u8],
) -> Result<Response<Body>, ApiError> {
    let shared = request.shared;
    let namespace = path.namespace.as_deref();
    let mut binding = codec::decode_object(request.headers, body)?.value;
    // `EnsureObjectNamespaceMatchesRequestNamespace`.
    match binding
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
    {
        Some(posted) if !posted.is_empty() && Some(posted) != namespace => {
            return Err(ApiError::namespace_mismatch());
        }
        _ => {}
    }
    let subresource = path.name.is_some();
    pod_subresources::check_binding(&binding, path.name.as_deref())?;
    let name = str_at(&binding, "/metadata/name").to_string();
    if subresource {
        let target = str_at(&binding, "/target/name");
        let node = shared.core_object("nodes", None, target).ok();
        pod_subresources::add_topology_labels(&mut binding, node.as_deref());
    }
    let dry_run = request.query.dry_run("CreateOptions")?;
    {
        let mut store = shared.store.lock();
        let pod = store.get(&path.resource, namespace, &name)?;
        let bound = pod_subresources::bind(&pod, &binding, subresource)?;
        if !dry_run {
            store.replace_whole(&path.resource, namespace, &name, bound)?;
        }
    }
    if !dry_run {
        shared.after_write(&path.resource, &name);
    }
    Ok(respond(
        StatusCode::CREATED,
        &created_status(),
        request.output,
    ))
}

/// The `proxy` subresource of Pods, Services and Nodes, for any method the real one takes:
/// the object is looked up as `ResourceLocation` looks it up, then answered as a cluster
/// whose Pod and node network cannot be reached (see [`pod_subresources`]).
fn handle_proxy(
    request: &ResourceRequest<'_>,
    path: &ResourcePath,
) -> Result<Response<Body>, ApiError> {
    if !matches!(
        *request.method,
        Method::GET
            | Method::POST
            | Method::PUT
            | Method::PATCH
            | Method::DELETE
            | Method::HEAD
            | Method::OPTIONS
    ) {
        return Err(method_not_allowed(request.method));
    }
    let shared = request.shared;
    let namespace = path.namespace.as_deref();
    let id = path.name.as_deref().unwrap_or("");
    let kind = path.resource.singular.as_str();
    let Some((_, name, port)) = pod_subresources::split_scheme_name_port(id) else {
        return Err(ApiError::bad_request(format!(
            "invalid {kind} request {id:?}"
        )));
    };
    let object = shared.store.get(&path.resource, namespace, name)?;
    Err(match path.resource.plural.as_str() {
        "pods" => pod_subresources::pod_proxy_error(&object, port),
        "nodes" => pod_subresources::node_proxy_error(&object, port),
        _ => {
            let endpoints = shared
                .registry
                .read()
                .by_path("", "v1", "endpoints")
                .and_then(|endpoints| shared.store.get(&endpoints, namespace, name).ok());
            pod_subresources::service_proxy_error(&object, endpoints.as_deref(), port)
        }
    })
}

/// The `scale` subresource: get, update (PUT a `Scale`) and patch (a patch of the `Scale`).
/// A change writes the replicas into the object, as an update of the object would.
fn handle_scale(
    request: &ResourceRequest<'_>,
    path: &ResourcePath,
    body: &[u8],
) -> Result<Response<Body>, ApiError> {
    let resource = &path.resource;
    let namespace = path.namespace.as_deref();
    let name = path.name.as_deref().unwrap_or("");
    if request.verb == Verb::Get {
        let object = request.shared.store.get(resource, namespace, name)?;
        scale::has_spec_replicas(resource, &object)?;
        let scale = scale::scale(resource, &object)?;
        // Tables and metadata of the `Scale`, as the handler transforms any object it gets.
        let mut document = match request.output {
            codec::Output::Table => {
                let include_object = request.query.get("includeObject");
                codec::check_transform(
                    request.headers,
                    request.output,
                    include_object,
                    resource,
                    false,
                )?;
                let include = table::IncludeObject::parse(request.query.string("includeObject"));
                table::scale_table(&scale, include, resource.custom)
            }
            codec::Output::Metadata => codec::partial_metadata(&scale),
            _ => return Ok(request.respond(StatusCode::OK, &scale, &[])),
        };
        codec::set_meta_version(&mut document, request.meta_version());
        return Ok(request.respond(StatusCode::OK, &document, &[]));
    }
    if !matches!(request.verb, Verb::Update | Verb::Patch) {
        return Err(method_not_allowed(request.method));
    }
    let options = match request.verb {
        Verb::Patch => "PatchOptions",
        _ => "UpdateOptions",
    };
    if request.verb == Verb::Patch && patch_kind(request.headers, resource)? == PatchKind::Apply {
        return apply_scale(request, path, body);
    }
    let dry_run = request.query.dry_run(options)?;
    let patch = match request.verb {
        Verb::Patch => {
            let kind = patch_kind(request.headers, resource)?;
            let document = match kind {
                PatchKind::Apply => codec::decode_yaml(body)?.value,
                _ => codec::decode_json(body)?.value,
            };
            Some((kind, document))
        }
        _ => None,
    };
    let mut store = request.shared.store.lock();
    let object = store.get(resource, namespace, name)?;
    let desired = match patch {
        None => codec::decode_object(request.headers, body)?.value,
        Some((kind, document)) => {
            let mut current = scale::scale(resource, &object)?;
            match kind {
                PatchKind::Merge => patch::merge_patch(&mut current, &document),
                PatchKind::Json => patch::json_patch(&mut current, &document)
                    .map_err(patch::JsonPatchError::into_api_error)?,
                PatchKind::Strategic => {
                    patch::strategic_merge_patch("Scale", &mut current, &document)
                        .map_err(patch::SmpError::into_api_error)?;
                }
                PatchKind::Apply => unreachable!("an apply of a Scale is apply_scale's"),
            }
            current
        }
    };
    if let Some(rv) = desired
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .filter(|rv| !rv.is_empty())
        && object
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            != Some(rv)
    {
        return Err(ApiError::modified(&resource.qualified_resource(), name));
    }
    let replicas = scale::requested_replicas(resource, name, &desired)?;
    let resized = scale::with_replicas(resource, &object, replicas)?;
    let options = WriteOptions {
        subresource: Some("scale".into()),
        ..request.write_options(dry_run, false)?
    };
    let storage = written_as(resource, resource.storage(&request.shared.registry.read()));
    let updated = store.update(
        &storage,
        namespace,
        name,
        resized,
        Subresource::Main,
        options,
    )?;
    drop(store);
    if !dry_run {
        request.shared.after_write(&storage, name);
    }
    Ok(request.respond(StatusCode::OK, &scale::scale(resource, &updated)?, &[]))
}

/// A server-side apply of a `Scale` (an autoscaler's write, `fieldManager` required): its
/// replicas are applied to the object's replicas path as the manager's `Apply` entry with
/// subresource `scale`, as kube-apiserver's `ScaleHandler` maps the `Scale`'s managed fields
/// onto the object's. Another manager owning the replicas is a conflict (named as the
/// `Scale` sees it: `using autoscaling/v1`, `.spec.replicas`) unless `force` takes them
/// over; the same manager's next apply moves them without one.
fn apply_scale(
    request: &ResourceRequest<'_>,
    path: &ResourcePath,
    body: &[u8],
) -> Result<Response<Body>, ApiError> {
    let resource = &path.resource;
    let namespace = path.namespace.as_deref();
    let name = path.name.as_deref().unwrap_or("");
    let dry_run = request.query.dry_run("PatchOptions")?;
    require_field_manager(request.query)?;
    let options = written_through(
        resource,
        WriteOptions {
            subresource: Some("scale".into()),
            ..request.write_options(dry_run, true)?
        },
    );
    let (config, warnings) = request.apply_configuration(body)?;
    codec::check_apply_gvk("autoscaling/v1", "Scale", &config)?;
    let replicas = scale::requested_replicas(resource, name, &config)?;
    let sets_replicas = config
        .pointer("/spec/replicas")
        .is_some_and(|r| !r.is_null());
    let mut parent = json!({
        "apiVersion": resource.api_version(),
        "kind": resource.kind,
        "metadata": {"name": name},
    });
    if let Some(namespace) = namespace {
        parent["metadata"]["namespace"] = json!(namespace);
    }
    if sets_replicas {
        parent = scale::with_replicas(resource, &parent, replicas)?;
    }
    resource.to_storage(&mut parent);
    let storage = written_as(resource, resource.storage(&request.shared.registry.read()));
    let mut store = request.shared.store.lock();
    // The object must exist: an apply of its `Scale` does not create it (a 404).
    let object = store.get(&storage, namespace, name)?;
    // Whether the apply changes a custom resource's replicas, where kube-apiserver fails
    // it past its conflicts (`custom_apply_error`); it fails it at once when no entry owns
    // them.
    let changes = if resource.custom {
        if !scale::replicas_owned(resource, &object) {
            return Err(scale::custom_apply_error(true));
        }
        sets_replicas
            && scale::scale(resource, &object)?.pointer("/spec/replicas") != Some(&json!(replicas))
    } else {
        false
    };
    let mut apply = |options: WriteOptions| {
        store
            .patch(
                &storage,
                namespace,
                name,
                PatchKind::Apply,
                &parent,
                Subresource::Main,
                options,
            )
            .map_err(|err| scale::as_scale_conflict(resource, err))
    };
    if changes {
        // Past the conflicts (a dry run finds them), the new `Scale` fails to convert.
        if !options.force {
            apply(WriteOptions {
                dry_run: true,
                ..options
            })?;
        }
        return Err(scale::custom_apply_error(false));
    }
    let updated = apply(options)?;
    drop(store);
    if !dry_run {
        request.shared.after_write(&storage, name);
    }
    Ok(request.respond(
        StatusCode::OK,
        &scale::scale(resource, &updated)?,
        &warnings,
    ))
}

/// An apply names its field manager (`fieldManager`), or it is a 422.
fn require_field_manager(query: &Query) -> Result<(), ApiError> {
    match query.string("fieldManager") {
        Some(_) => Ok(()),
        None => Err(ApiError::invalid(
            "PatchOptions.meta.k8s.io",
            "",
            "fieldManager: Required value: is required for apply patch",
        )),
    }
}

/// The patch format a PATCH's `Content-Type` names; 415 for any other.
/// Checked first, before the body is read or the options are: the handler's
/// `NewUnsupportedMediaTypeError(patchTypes)`, whose list is the installer's for built-in
/// types and the CRD handler's (no strategic merge patch) for custom resources.
fn patch_kind(headers: &HeaderMap, resource: &ResourceType) -> Result<PatchKind, ApiError> {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let kind = PatchKind::from_content_type(content_type)
        .filter(|kind| !(resource.custom && *kind == PatchKind::Strategic));
    kind.ok_or_else(|| {
        let accepted = if resource.custom {
            "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
        } else {
            "application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml"
        };
        ApiError::new(
            StatusReason::UnsupportedMediaType,
            format!("the body of the request was in an unknown format - accepted media types include: {accepted}"),
        )
    })
}

/// Reads `DeleteOptions` from the body in any format the server reads or, when the body is
/// empty, from the query (`gracePeriodSeconds`, `propagationPolicy`, `orphanDependents`,
/// `dryRun`), as kube-apiserver reads them: one or the other, never both (a body's request
/// ignores its query). Validated as it validates them. Returns the options and whether the
/// request is a dry run.
fn delete_options(
    headers: &HeaderMap,
    query: &Query,
    body: &[u8],
) -> Result<(DeleteOptions, bool), ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        // `DecodeParameters`: a malformed integer is a 400 before any validation.
        query.i64("gracePeriodSeconds")?;
        let options = DeleteOptions {
            propagation: query
                .string("propagationPolicy")
                .map(parse_propagation)
                .transpose()?,
            orphan_dependents: query.bool("orphanDependents"),
            ..DeleteOptions::default()
        };
        let dry_run = query.dry_run("DeleteOptions")?;
        return checked_delete_options(options, dry_run);
    }
    if codec::is_json(headers)
        && let Some(why) = go_json::syntax_error(body)
    {
        return Err(ApiError::bad_request(format!(
            "couldn't get version/kind; json parse error: {why}"
        )));
    }
    let value = codec::decode_object(headers, body)?.value;
    // The body decodes in the meta.k8s.io scheme, where `DeleteOptions` is the one kind.
    if let (Some(kind), Some(version)) = (
        value.get("kind").and_then(Value::as_str),
        value.get("apiVersion").and_then(Value::as_str),
    ) && !kind.is_empty()
        && !version.is_empty()
        && kind != "DeleteOptions"
    {
        return Err(ApiError::bad_request(format!(
            "no kind {} is registered for version {} in scheme \"k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme/register.go:27\"",
            go_quote(kind),
            go_quote(version)
        )));
    }
    delete_options_of(&value)
}

fn invalid_delete_options(error: FieldError) -> ApiError {
    ApiError::invalid_fields("DeleteOptions.meta.k8s.io", "", vec![error])
}

fn parse_propagation(value: &str) -> Result<Propagation, ApiError> {
    Propagation::parse(value).ok_or_else(|| {
        let mut supported: Vec<&str> = Propagation::ALL.iter().map(|p| p.as_str()).collect();
        supported.push("nil");
        invalid_delete_options(FieldError::not_supported(
            "propagationPolicy",
            value,
            &supported,
        ))
    })
}

/// A `DeleteOptions` object (a delete's body, or an Eviction's `deleteOptions`), and whether
/// it asks for a dry run.
fn delete_options_of(value: &Value) -> Result<(DeleteOptions, bool), ApiError> {
    if !value.is_object() {
        return Err(ApiError::bad_request("DeleteOptions must be a JSON object"));
    }
    let string = |pointer: &str| -> Result<Option<String>, ApiError> {
        match value.pointer(pointer) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(ApiError::bad_request(format!(
                "DeleteOptions{} must be a string",
                pointer.replace('/', ".")
            ))),
        }
    };
    let orphan_dependents = match value.get("orphanDependents") {
        None | Some(Value::Null) => None,
        Some(Value::Bool(orphan)) => Some(*orphan),
        Some(_) => {
            return Err(ApiError::bad_request(
                "DeleteOptions.orphanDependents must be a boolean",
            ));
        }
    };
    let options = DeleteOptions {
        uid: string("/preconditions/uid")?,
        resource_version: string("/preconditions/resourceVersion")?,
        propagation: string("/propagationPolicy")?
            .as_deref()
            .map(parse_propagation)
            .transpose()?,
        orphan_dependents,
    };
    let dry_run = match value.get("dryRun") {
        None | Some(Value::Null) => false,
        Some(Value::Array(values)) => {
            let values: Vec<&str> = values.iter().filter_map(Value::as_str).collect();
            dry_run_values("DeleteOptions", &values)?
        }
        Some(_) => return Err(ApiError::bad_request("DeleteOptions.dryRun must be a list")),
    };
    checked_delete_options(options, dry_run)
}

fn checked_delete_options(
    options: DeleteOptions,
    dry_run: bool,
) -> Result<(DeleteOptions, bool), ApiError> {
    if let (Some(_), Some(policy)) = (options.orphan_dependents, options.propagation) {
        return Err(invalid_delete_options(FieldError::invalid(
            "propagationPolicy",
            policy.as_str(),
            "orphanDependents and deletionPropagation cannot be both set",
        )));
    }
    Ok((options, dry_run))
}

/// Refuses a body that is not JSON where kube-apiserver decodes JSON, with its words: an
/// object sent as JSON (`transformDecodeError`: `the object provided is unrecognized (must be
/// of type Widget): couldn't get version/kind; json parse error: ... (<the body's start>)`);
/// a JSON merge patch (`error decoding patch: ...`, or json-patch's `Invalid JSON Patch` when
/// unknown fields are ignored); a strategic merge patch (the decoder's error alone). YAML is
/// no JSON: patches in YAML are refused, as by kube-apiserver.
fn json_syntax(
    resource: &ResourceType,
    headers: &HeaderMap,
    body: &[u8],
    kind: codec::BodyKind,
    validation: FieldValidation,
) -> Result<(), ApiError> {
    if kind == codec::BodyKind::Object && !codec::is_json(headers) {
        return Ok(());
    }
    let Some(why) = go_json::syntax_error(body) else {
        return Ok(());
    };
    Err(ApiError::bad_request(match kind {
        codec::BodyKind::Object => {
            return Err(ApiError::unrecognized(
                &resource.kind,
                &format!("couldn't get version/kind; json parse error: {why}"),
                &go_json::summarize(body),
            ));
        }
        codec::BodyKind::MergePatch if validation == FieldValidation::Ignore => {
            "Invalid JSON Patch".to_string()
        }
        codec::BodyKind::MergePatch => format!("error decoding patch: {why}"),
        codec::BodyKind::StrategicPatch => why,
    }))
}

/// A value as Go's `strconv.Quote` (`%q`) writes it in an error message.
fn go_quote(value: &str) -> String {
    let mut out = String::from("\"");
    for c in value.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Go's `strconv.ParseInt(value, 10, 64)`, with its error text: how kube-apiserver reads the
/// integer query parameters (`limit`, `timeoutSeconds`).
fn go_parse_int(value: &str) -> Result<i64, String> {
    let digits = value.strip_prefix(['+', '-']).unwrap_or(value);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "strconv.ParseInt: parsing {}: invalid syntax",
            go_quote(value)
        ));
    }
    value.parse().map_err(|_| {
        format!(
            "strconv.ParseInt: parsing {}: value out of range",
            go_quote(value)
        )
    })
}

/// A resource version as kube-apiserver's storage parses it
/// (`APIObjectVersioner.ParseResourceVersion`: `strconv.ParseUint`, digits only); the error
/// is the text of the storage's `InvalidError`
/// (`resourceVersion: Invalid value: "abc": strconv.ParseUint: parsing "abc": invalid syntax`).
fn parse_revision(value: &str) -> Result<u64, String> {
    let why = if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        "invalid syntax"
    } else if let Ok(revision) = value.parse() {
        return Ok(revision);
    } else {
        "value out of range"
    };
    let detail = format!("strconv.ParseUint: parsing {}: {why}", go_quote(value));
    Err(FieldError::invalid("resourceVersion", value, &detail).to_string())
}

/// The resource version of a get or a watch: a malformed one fails in storage with an error
/// that is no API status, which kube-apiserver answers as a `500` without a reason.
fn read_revision(value: &str) -> Result<u64, ApiError> {
    parse_revision(value).map_err(|why| ApiError::new(StatusReason::Unknown, why))
}

/// The resource version of a list: a malformed one is a `400` (`storage.ValidateListOptions`).
fn list_revision(value: &str) -> Result<u64, ApiError> {
    parse_revision(value)
        .map_err(|why| ApiError::bad_request(format!("invalid resource version: {why}")))
}

fn filter(path: &ResourcePath, query: &Query) -> Result<Filter, ApiError> {
    let labels = LabelSelector::parse(query.get("labelSelector").unwrap_or(""))
        .map_err(ApiError::bad_request)?;
    let fields = FieldSelector::parse(query.get("fieldSelector").unwrap_or(""))
        .map_err(ApiError::bad_request)?;
    if let Some(field) = fields.fields().find(|f| !path.resource.supports_field(f)) {
        return Err(ApiError::bad_request(format!(
            "field label not supported: {field}"
        )));
    }
    Ok(Filter {
        resource: path.resource.clone(),
        namespace: path.namespace.clone(),
        labels,
        fields,
    })
}

/// The options of a list or a watch as kube-apiserver's handlers read them (`listOpts`):
/// each query parameter converted as Go converts them (a `400` with Go's error), then
/// `SetListOptionsDefaults` (a watch from `""` or `"0"` streams its initial events, with
/// `resourceVersionMatch=NotOlderThan`), then `ValidateListOptions` (one `422` listing every
/// rule broken).
struct ListOptions<'q> {
    allow_bookmarks: bool,
    resource_version: Option<&'q str>,
    matching: Option<&'q str>,
    timeout_seconds: Option<i64>,
    limit: i64,
    continue_token: Option<&'q str>,
    send_initial_events: Option<bool>,
}

impl<'q> ListOptions<'q> {
    fn parse(query: &'q Query, watch: bool) -> Result<Self, ApiError> {
        let mut options = Self {
            allow_bookmarks: query.bool("allowWatchBookmarks").unwrap_or(false),
            resource_version: query.string("resourceVersion"),
            matching: query.string("resourceVersionMatch"),
            timeout_seconds: query.i64("timeoutSeconds")?,
            limit: query.i64("limit")?.unwrap_or(0),
            continue_token: query.string("continue"),
            send_initial_events: query.bool("sendInitialEvents"),
        };
        if watch
            && options.send_initial_events.is_none()
            && options.matching.is_none()
            && matches!(options.resource_version, None | Some("0"))
        {
            options.send_initial_events = Some(true);
            options.matching = Some(NOT_OLDER_THAN);
        }
        let errors = if watch {
            options.watch_errors()
        } else {
            options.list_errors()
        };
        if errors.is_empty() {
            Ok(options)
        } else {
            Err(ApiError::invalid_fields(
                "ListOptions.meta.k8s.io",
                "",
                errors,
            ))
        }
    }

    /// `ValidateListOptions` of a list.
    fn list_errors(&self) -> Vec<FieldError> {
        let mut errors = Vec::new();
        if let Some(matching) = self.matching {
            if self.resource_version.is_none() {
                errors.push(FieldError::forbidden(
                    MATCH,
                    "resourceVersionMatch is forbidden unless resourceVersion is provided",
                ));
            }
            if self.continue_token.is_some() {
                errors.push(FieldError::forbidden(
                    MATCH,
                    "resourceVersionMatch is forbidden when continue is provided",
                ));
            }
            if matching != EXACT && matching != NOT_OLDER_THAN {
                errors.push(FieldError::not_supported(
                    MATCH,
                    matching,
                    &[EXACT, NOT_OLDER_THAN, ""],
                ));
            }
            if matching == EXACT && self.resource_version == Some("0") {
                errors.push(FieldError::forbidden(
                    MATCH,
                    "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
                ));
            }
        }
        if self.send_initial_events.is_some() {
            errors.push(FieldError::forbidden(
                "sendInitialEvents",
                "sendInitialEvents is forbidden for list",
            ));
        }
        errors
    }

    /// `ValidateListOptions` of a watch (`validateWatchOptions`).
    fn watch_errors(&self) -> Vec<FieldError> {
        let mut errors = Vec::new();
        if self.send_initial_events.is_some() && self.matching != Some(NOT_OLDER_THAN) {
            errors.push(FieldError::forbidden(
                MATCH,
                "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
            ));
        }
        if let Some(matching) = self.matching {
            if self.send_initial_events.is_none() {
                errors.push(FieldError::forbidden(
                    MATCH,
                    "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
                ));
            }
            if matching != NOT_OLDER_THAN {
                errors.push(FieldError::not_supported(
                    MATCH,
                    matching,
                    &[NOT_OLDER_THAN],
                ));
            }
            if self.continue_token.is_some() {
                errors.push(FieldError::forbidden(
                    MATCH,
                    "resourceVersionMatch is forbidden when continue is provided",
                ));
            }
        }
        errors
    }

    /// What a list reads: the storage's rules for `resourceVersion`, `resourceVersionMatch`,
    /// `limit` and `continue` (`storage.ValidateListOptions`), on options already validated.
    fn read_version(&self) -> Result<ReadVersion, ApiError> {
        let rv = self.resource_version;
        if self.continue_token.is_some() {
            if rv.is_some_and(|rv| rv != "0") {
                return Err(ApiError::bad_request(
                    "specifying resource version is not allowed when using continue",
                ));
            }
            return Ok(ReadVersion::MostRecent);
        }
        Ok(match (self.matching, rv) {
            (_, None) => ReadVersion::MostRecent,
            (None | Some(NOT_OLDER_THAN), Some("0")) => ReadVersion::Any,
            (None, Some(rv)) if self.limit > 0 => ReadVersion::Exact(list_revision(rv)?),
            (Some(EXACT), Some(rv)) => ReadVersion::Exact(list_revision(rv)?),
            (_, Some(rv)) => ReadVersion::NotOlderThan(list_revision(rv)?),
        })
    }
}

const MATCH: &str = "resourceVersionMatch";
const EXACT: &str = "Exact";
const NOT_OLDER_THAN: &str = "NotOlderThan";

fn list(request: &ResourceRequest<'_>, path: &ResourcePath) -> Result<Response<Body>, ApiError> {
    let (shared, query) = (request.shared, request.query);
    let filter = filter(path, query)?;
    let options = ListOptions::parse(query, false)?;
    let continue_token = options
        .continue_token
        .map(ContinueToken::decode)
        .transpose()?;
    let version = options.read_version()?;
    // A list at any version (`resourceVersion=0`) is served from kube-apiserver's watch
    // cache (unless it runs without one), which ignores the limit: one page of everything,
    // as client-go's reflectors and pagers get when they start at 0 with a limit of 500.
    let cached = shared.settings.watch_cache && matches!(version, ReadVersion::Any);
    let paged = options.limit > 0 && !cached;
    let version = faults::lagged_read(shared, version);
    let list_request = ListRequest {
        filter,
        version,
        // A negative limit is no limit, as kube-apiserver reads its int64.
        limit: paged.then(|| usize::try_from(options.limit).unwrap_or(usize::MAX)),
        continue_token,
    };
    let page = shared.store.list(&list_request)?;
    codec::check_transform(
        request.headers,
        request.output,
        query.get("includeObject"),
        &path.resource,
        true,
    )?;
    let continue_token = page.continue_token.as_ref().map(ContinueToken::encode);
    let metadata = list_metadata(
        &path.resource,
        page.revision,
        continue_token,
        page.remaining,
    );
    Ok(request.respond_list(&path.resource, metadata, &page.items))
}

fn watch(request: &ResourceRequest<'_>, path: &ResourcePath) -> Result<Response<Body>, ApiError> {
    let (shared, query) = (request.shared, request.query);
    let filter = filter(path, query)?;
    let options = ListOptions::parse(query, true)?;
    let send_initial_events = options.send_initial_events;
    let bookmarks = options.allow_bookmarks;
    // kube-apiserver's watch ends after `timeoutSeconds`; a negative one has run out already.
    let timeout = options
        .timeout_seconds
        .filter(|t| *t > 0)
        .map(|t| Duration::from_secs(t.unsigned_abs()));
    let expired = options.timeout_seconds.is_some_and(|t| t < 0);
    let revision = match options.resource_version {
        None | Some("0") => None,
        Some(rv) => Some(read_revision(rv)?),
    };
    // The initial-events-end bookmark ends the initial events of every watch that sends
    // them, when the client allows bookmarks: kube-apiserver defaults a watch from "" or
    // "0" to `sendInitialEvents=true` (`SetListOptionsDefaults`), and its watch cache
    // annotates the first bookmark of such a watch. Without `allowWatchBookmarks` the
    // initial events simply end (no 422).
    let end_bookmark = bookmarks && !shared.faults.lock().withhold_initial_events_end;
    let start = match (send_initial_events, revision) {
        (Some(true), _) | (None, None) => WatchStart::Now {
            initial_events: true,
            end_bookmark,
        },
        (Some(false), None) => WatchStart::Now {
            initial_events: false,
            end_bookmark: false,
        },
        (_, Some(revision)) => WatchStart::After(revision),
    };
    let start = faults::lagged_watch(shared, start);
    let output = request.output;
    let resource = path.resource.clone();
    let watch_cache_start = shared.watch_cache_start.load(Ordering::Relaxed);
    let result = {
        let mut store = shared.store.lock();
        match (send_initial_events, revision, start) {
            (Some(true), Some(revision), _) if revision > store.revision() => Err(
                ApiError::too_large_resource_version(revision, store.revision()),
            ),
            // The real server's watch cache of a custom resource starts when the type is
            // served: older versions are gone.
            (_, _, WatchStart::After(after)) if after < resource.served_since => Err(
                ApiError::too_old_resource_version(after, resource.served_since),
            ),
            // A built-in type's starts when the server starts (`getAllEventsSinceLocked`: a
            // version older than the cache's first list is too old).
            (_, Some(requested), WatchStart::After(_))
                if !resource.custom && requested < watch_cache_start =>
            {
                Err(ApiError::too_old_resource_version(
                    requested,
                    watch_cache_start,
                ))
            }
            // A watch whose time ran out before it started ends at once, empty.
            _ if expired => Ok(None),
            _ => store.watch(filter, start).map(Some),
        }
    };
    let interval = bookmarks.then_some(shared.settings.bookmark_interval);
    let stream = match result {
        Ok(Some(registration)) => WatchStream::new(
            shared.clone(),
            registration,
            resource.clone(),
            interval,
            timeout,
        ),
        Ok(None) => WatchStream::finished(shared.clone(), resource.clone(), Queue::finished([])),
        // Like the real server: 200, then an ERROR event, then the end of the stream.
        Err(err) if err.code() == 410 => WatchStream::finished(
            shared.clone(),
            resource.clone(),
            Queue::finished([WatchMessage::Error(err.to_status())]),
        ),
        Err(err) => return Err(err),
    };
    let mut chunks = faults::delayed_watch(shared, stream.into_stream().boxed());
    if let Some(interceptor) = shared.interceptor.read().clone() {
        chunks = interceptor.watch(request.info, chunks);
    }
    let include = table::IncludeObject::parse(query.string("includeObject"));
    let meta_version = request.meta_version();
    let mut first_table = true;
    let body = StreamBody::new(chunks.map(move |chunk| {
        Ok(Frame::data(match output {
            codec::Output::Table => codec::event_meta_version(
                table::event_as_table(&resource, chunk, include, &mut first_table),
                meta_version,
            ),
            codec::Output::Metadata => {
                codec::event_meta_version(codec::event_as_metadata(chunk), meta_version)
            }
            codec::Output::Json | codec::Output::Yaml | codec::Output::AggregatedDiscovery => chunk,
        }))
    }))
    .boxed_unsync();
    Ok(Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::CACHE_CONTROL, "no-cache, private")
        .body(body)
        .unwrap_or_else(|_| error_response(&ApiError::internal("failed to build a response"))))
}

fn full_body(bytes: Vec<u8>) -> Body {
    Full::new(Bytes::from(bytes)).boxed_unsync()
}

/// A response with a document in a negotiated format.
fn respond(status: StatusCode, value: &Value, output: codec::Output) -> Response<Body> {
    let (bytes, content_type) = codec::encode(value, output);
    let mut response = Response::new(full_body(bytes));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static(content_type),
    );
    response
}

pub(crate) fn json_response(status: StatusCode, value: &Value) -> Response<Body> {
    let bytes = super::status::to_json(value);
    let mut response = Response::new(full_body(bytes));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    response
}

/// A `200` of JSON already written.
fn raw_json(bytes: Vec<u8>) -> Response<Body> {
    let mut response = Response::new(full_body(bytes));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    response
}

fn text_response(status: StatusCode, text: &str) -> Response<Body> {
    let mut response = Response::new(full_body(text.as_bytes().to_vec()));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// The `406` of a resource request, worded as kube-apiserver words it: a watch whose
/// `Accept` names a document format but no stream format (YAML) is refused by the watch's own
/// negotiation (`NegotiateOutputMediaTypeStream`); a custom resource by
/// apiextensions-apiserver's handler, listing the serializers' media types; a built-in type
/// by go-restful before any handler, listing every media type of the group's web service.
fn not_acceptable(headers: &HeaderMap, path: &ResourcePath, verb: Verb) -> ApiError {
    const DOCUMENTS: &str =
        "application/json, application/yaml, application/vnd.kubernetes.protobuf";
    const STREAMS: &str =
        "application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch";
    if verb == Verb::Watch && codec::negotiate(headers, codec::Route::Read).is_ok() {
        return ApiError::new(
            StatusReason::NotAcceptable,
            format!("only the following media types are accepted: {STREAMS}"),
        );
    }
    if path.resource.custom || codec::accepts_a_serializer(headers) {
        return ApiError::new(
            StatusReason::NotAcceptable,
            format!("only the following media types are accepted: {DOCUMENTS}"),
        );
    }
    ApiError::new(
        StatusReason::NotAcceptable,
        format!("406: Not Acceptable\n\nAvailable representations: {DOCUMENTS}, {STREAMS}"),
    )
    .with_details(json!({}))
}

/// An error as a `Status` in the format the request negotiated: YAML when it asked for YAML
/// (kube-apiserver's `ErrorNegotiated`), JSON otherwise.
fn error_response_as(err: &ApiError, output: codec::Output) -> Response<Body> {
    if output != codec::Output::Yaml {
        return error_response(err);
    }
    let mut response = error_response(err);
    let (bytes, content_type) = codec::encode(&err.to_status(), output);
    *response.body_mut() = full_body(bytes);
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static(content_type),
    );
    response
}

pub(crate) fn error_response(err: &ApiError) -> Response<Body> {
    tracing::debug!(%err, "request failed");
    let status = StatusCode::from_u16(err.code()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = json_response(status, &err.to_status());
    if let Some(retry_after) = err.retry_after()
        && let Ok(value) = header::HeaderValue::from_str(&retry_after.as_secs().to_string())
    {
        response.headers_mut().insert(header::RETRY_AFTER, value);
    }
    with_warnings(response, err.warnings())
}

/// A patch of a type served as it is stored (what `hpa_v1::patch` and `events::patch` do for
/// their views).
#[allow(clippy::too_many_arguments)]
fn patch_stored(
    store: &mut Store,
    _served: &ResourceType,
    storage: &ResourceType,
    namespace: Option<&str>,
    name: &str,
    kind: PatchKind,
    document: &Value,
    subresource: Subresource,
    options: WriteOptions,
) -> Result<Object, ApiError> {
    store.patch(
        storage,
        namespace,
        name,
        kind,
        document,
        subresource,
        options,
    )
}

mod fresh;
#[cfg(test)]
mod tests;
