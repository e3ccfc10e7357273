//! The manager's HTTP endpoint: `/metrics`, `/healthz`, `/readyz`.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use prometheus_client::registry::Registry;
use tokio::net::TcpListener;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// The OpenMetrics text format, as prometheus-client writes it.
pub(crate) const METRICS_CONTENT_TYPE: &str =
    "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// A readiness check: `Ok` when ready, otherwise what is missing.
pub(crate) type ReadyFn = Box<dyn Fn() -> Result<(), String> + Send + Sync>;

/// What the endpoint serves.
pub(crate) struct HttpState {
    pub(crate) registry: Registry,
    pub(crate) ready: ReadyFn,
    pub(crate) shutting_down: AtomicBool,
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
                        let response = respond(&state, request.method(), request.uri().path());
                        async move { Ok::<_, Infallible>(response) }
                    });
                    if let Err(e) = http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await
                    {
                        tracing::debug!(error = %e, "metrics connection ended with an error");
                    }
                });
            }
            Err(e) => {
                // Say, too many open files: back off a little instead of spinning.
                tracing::warn!(error = %e, "the metrics endpoint failed to accept a connection");
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
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// The response to `method path`.
pub(crate) fn respond(state: &HttpState, method: &Method, path: &str) -> Response<Full<Bytes>> {
    let known = matches!(path, "/metrics" | "/healthz" | "/livez" | "/readyz");
    if !known {
        return text(StatusCode::NOT_FOUND, "not found\n");
    }
    if method != Method::GET && method != Method::HEAD {
        let mut response = text(StatusCode::METHOD_NOT_ALLOWED, "method not allowed\n");
        response
            .headers_mut()
            .insert(header::ALLOW, header::HeaderValue::from_static("GET, HEAD"));
        return response;
    }
    match path {
        "/metrics" => {
            let mut body = String::new();
            match prometheus_client::encoding::text::encode(&mut body, &state.registry) {
                Ok(()) => {
                    let mut response = text(StatusCode::OK, body);
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
        "/healthz" | "/livez" => text(StatusCode::OK, "ok\n"),
        _ => {
            if state.shutting_down.load(Ordering::Acquire) {
                return text(StatusCode::SERVICE_UNAVAILABLE, "shutting down\n");
            }
            match (state.ready)() {
                Ok(()) => text(StatusCode::OK, "ok\n"),
                Err(missing) => text(
                    StatusCode::SERVICE_UNAVAILABLE,
                    format!("not ready: {missing}\n"),
                ),
            }
        }
    }
}
