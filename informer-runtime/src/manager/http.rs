//! The manager's HTTP endpoints: `/metrics`, and the probes `/healthz` (`/livez`) and
//! `/readyz` with a path per check, on one address or on two (the probes on
//! [`Manager::health_probe_address`](super::Manager::health_probe_address)).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, Uri, header};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use prometheus_client::registry::Registry;
use tokio::net::TcpListener;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::health::{self, NamedCheck, ProbeQuery};

/// The OpenMetrics text format, as prometheus-client writes it.
pub(crate) const METRICS_CONTENT_TYPE: &str =
    "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The checks behind `/healthz` and `/readyz`: the user's and the manager's own, in one list
/// each (names unique within a list).
pub(crate) struct Probes {
    pub(crate) health: Vec<NamedCheck>,
    pub(crate) ready: Vec<NamedCheck>,
}

/// What one endpoint serves: `/metrics` when it has the registry, the probes when it has
/// them.
pub(crate) struct HttpState {
    pub(crate) registry: Option<Registry>,
    pub(crate) probes: Option<Arc<Probes>>,
}

/// Serves `listener` until `stop` is cancelled; then open connections are closed.
pub(crate) async fn serve(listener: TcpListener, state: Arc<HttpState>, stop: CancellationToken) {
    let mut connections = JoinSet::new();
    loop {
        let accepted = tokio::select! {
            biased;
            _ = stop.cancelled() => break,
            accepted = listener.accept() => accepted,
        };
        while connections.try_join_next().is_some() {}
        match accepted {
            Ok((stream, _peer)) => {
                let state = state.clone();
                connections.spawn(async move {
                    let service = service_fn(move |request: Request<Incoming>| {
                        let state = state.clone();
                        async move {
                            let response = respond(&state, request.method(), request.uri()).await;
                            Ok::<_, Infallible>(response)
                        }
                    });
                    if let Err(e) = http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await
                    {
                        tracing::debug!(error = %e, "HTTP connection ended with an error");
                    }
                });
            }
            Err(e) => {
                // Say, too many open files: back off a little instead of spinning.
                tracing::warn!(error = %e, "the manager's HTTP endpoint failed to accept a connection");
                tokio::select! {
                    _ = stop.cancelled() => break,
                    _ = tokio::time::sleep(Duration::from_millis(100)) => {}
                }
            }
        }
    }
    connections.abort_all();
    while connections.join_next().await.is_some() {}
}

fn text(status: StatusCode, body: impl Into<Bytes>) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(body.into()));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        header::HeaderValue::from_static("nosniff"),
    );
    response
}

/// Which probe a path asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Probe {
    Health,
    Ready,
}

impl Probe {
    fn endpoint(self) -> &'static str {
        match self {
            Probe::Health => "healthz",
            Probe::Ready => "readyz",
        }
    }
}

/// The status of a failed probe, `/healthz` and `/readyz` alike: 500, as controller-runtime's
/// healthz and kube-apiserver's answer (kubelet counts any status from 400 as a failure).
const PROBE_FAILED: StatusCode = StatusCode::INTERNAL_SERVER_ERROR;

/// What a request asks for.
enum Route<'a> {
    Metrics,
    /// A probe, and the rest of the path after its prefix (`""`, `/`, or `/<name>`).
    Probe(Probe, &'a str),
}

fn route<'a>(state: &HttpState, path: &'a str) -> Option<Route<'a>> {
    if path == "/metrics" && state.registry.is_some() {
        return Some(Route::Metrics);
    }
    state.probes.as_ref()?;
    [
        ("/healthz", Probe::Health),
        ("/livez", Probe::Health),
        ("/readyz", Probe::Ready),
    ]
    .into_iter()
    .find_map(|(prefix, probe)| {
        let rest = path.strip_prefix(prefix)?;
        (rest.is_empty() || rest.starts_with('/')).then_some(Route::Probe(probe, rest))
    })
}

/// The response to `method uri`.
pub(crate) async fn respond(
    state: &HttpState,
    method: &Method,
    uri: &Uri,
) -> Response<Full<Bytes>> {
    let Some(route) = route(state, uri.path()) else {
        return text(StatusCode::NOT_FOUND, "not found\n");
    };
    if method != Method::GET && method != Method::HEAD {
        let mut response = text(StatusCode::METHOD_NOT_ALLOWED, "method not allowed\n");
        response
            .headers_mut()
            .insert(header::ALLOW, header::HeaderValue::from_static("GET, HEAD"));
        return response;
    }
    match route {
        Route::Metrics => metrics(state.registry.as_ref()),
        Route::Probe(probe, rest) => {
            let Some(probes) = &state.probes else {
                return text(StatusCode::NOT_FOUND, "not found\n");
            };
            let checks = match probe {
                Probe::Health => &probes.health,
                Probe::Ready => &probes.ready,
            };
            // As Go's `path.Clean` leaves it: `/readyz/` is `/readyz`, `/readyz/x/` is `x`.
            let name = rest.trim_matches('/');
            if name.is_empty() {
                let query = ProbeQuery::parse(uri.query());
                let answer = health::aggregate(probe.endpoint(), checks, &query).await;
                let status = if answer.passed {
                    StatusCode::OK
                } else {
                    PROBE_FAILED
                };
                return text(status, answer.body);
            }
            match checks.iter().find(|c| c.name == name) {
                None => text(StatusCode::NOT_FOUND, "not found\n"),
                Some(check) => match check.check.run().await {
                    Ok(()) => text(StatusCode::OK, "ok\n"),
                    Err(error) => text(PROBE_FAILED, format!("internal server error: {error}\n")),
                },
            }
        }
    }
}

fn metrics(registry: Option<&Registry>) -> Response<Full<Bytes>> {
    let Some(registry) = registry else {
        return text(StatusCode::NOT_FOUND, "not found\n");
    };
    let mut body = String::new();
    match prometheus_client::encoding::text::encode(&mut body, registry) {
        Ok(()) => {
            let mut response = Response::new(Full::new(Bytes::from(body)));
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                header::HeaderValue::from_static(METRICS_CONTENT_TYPE),
            );
            response
        }
        Err(_) => text(
            StatusCode::INTERNAL_SERVER_ERROR,
            "failed to encode metrics\n",
        ),
    }
}
