//! Helpers shared by the API server tests.

use std::future::Future;
use std::time::Duration;

use informer_testing::TestApiServer;
use k8s_openapi::api::core::v1::{Container, Pod, PodSpec};
use kube::Client;
use kube::core::ObjectMeta;
use serde_json::Value;
use std::sync::Arc;

use base64::Engine as _;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

/// A server with a short bookmark interval.
pub async fn server() -> TestApiServer {
    TestApiServer::builder()
        .bookmark_interval(Duration::from_millis(200))
        .start()
        .await
        .expect("the test API server starts")
}

/// Creates a namespace (objects can only be created in namespaces that exist).
/// A fresh server serving `widgets.example.com/v1` (namespaced `Widget`, with a status
/// subresource).
pub async fn server_with_widgets() -> TestApiServer {
    let server = server().await;
    server
        .register_custom_resource(
            informer_testing::CustomResourceSpec::namespaced(
                "example.com",
                "v1",
                "Widget",
                "widgets",
            )
            .with_status_subresource(),
        )
        .unwrap();
    server
}

pub fn namespace(server: &TestApiServer, name: &str) {
    server
        .create_json(serde_json::json!({
            "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}
        }))
        .expect("namespace created");
}

/// A client that does not retry 429/503/504 responses by itself.
pub fn client_without_retries(server: &TestApiServer) -> Client {
    let mut config = server.config();
    config.default_retry = false;
    Client::try_from(config).expect("client")
}

/// A pod with one container and the given labels.
pub fn pod(name: &str, labels: &[(&str, &str)]) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            labels: (!labels.is_empty()).then(|| {
                labels
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect()
            }),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "app".into(),
                image: Some("nginx:1.27".into()),
                ..Container::default()
            }],
            ..PodSpec::default()
        }),
        ..Pod::default()
    }
}

/// Fails the test if `future` takes more than 10 seconds.
pub async fn within<F: Future>(future: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(10), future)
        .await
        .expect("timed out")
}

/// Polls `check` until it holds, failing the test after 30 seconds (a generous bound: the
/// server's controllers act within milliseconds, but the machine may be loaded).
pub async fn eventually(what: &str, mut check: impl AsyncFnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while tokio::time::Instant::now() < deadline {
        if check().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("timed out waiting until {what}");
}

/// The `Status` of an API error.
pub fn status(err: kube::Error) -> kube::core::Status {
    match err {
        kube::Error::Api(status) => *status,
        other => panic!("expected an API error, got {other:?}"),
    }
}

/// Sorted names of objects.
pub fn names<K: kube::Resource>(items: &[K]) -> Vec<String> {
    let mut names: Vec<String> = items
        .iter()
        .map(|o| o.meta().name.clone().unwrap_or_default())
        .collect();
    names.sort();
    names
}

/// The names of a `meta.k8s.io/v1` Table's columns, in order.
pub fn column_names(table: &Value) -> Vec<&str> {
    table["columnDefinitions"]
        .as_array()
        .expect("a Table's columnDefinitions")
        .iter()
        .map(|c| c["name"].as_str().expect("a column's name"))
        .collect()
}

/// A response read off a raw connection.
#[derive(Debug)]
pub struct RawResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl RawResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "body is not JSON ({e}): {}",
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    /// Asserts the response is a `Status` error with this code and reason.
    pub fn assert_status(&self, code: u16, reason: &str) {
        assert_eq!(self.status, code, "{}", String::from_utf8_lossy(&self.body));
        let status = self.json();
        assert_eq!(status["kind"], "Status");
        assert_eq!(status["status"], "Failure");
        assert_eq!(status["code"], code);
        assert_eq!(status["reason"], reason, "{status}");
    }
}

/// A TLS client configuration trusting the server's CA.
pub fn tls_config(server: &TestApiServer) -> Arc<rustls::ClientConfig> {
    let pem = server.certificate_authority_pem().expect("a TLS server");
    let base64: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
    let der = base64::engine::general_purpose::STANDARD
        .decode(base64)
        .expect("PEM");
    let mut roots = rustls::RootCertStore::empty();
    roots.add(CertificateDer::from(der)).expect("CA");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Arc::new(
        rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("TLS versions")
            .with_root_certificates(roots)
            .with_no_client_auth(),
    )
}

async fn exchange<S>(mut stream: S, bytes: &[u8], wait: Duration) -> Vec<u8>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let _ = stream.write_all(bytes).await;
    let _ = stream.flush().await;
    let _ = stream.shutdown().await;
    let mut out = Vec::new();
    let _ = tokio::time::timeout(wait, stream.read_to_end(&mut out)).await;
    out
}

/// Sends raw bytes on a new connection (TLS when the server serves it) and returns
/// everything the server sends back before closing (or within `wait`).
pub async fn send_bytes(server: &TestApiServer, bytes: &[u8], wait: Duration) -> Vec<u8> {
    let stream = TcpStream::connect(server.address()).await.expect("connect");
    if server.certificate_authority_pem().is_none() {
        return exchange(stream, bytes, wait).await;
    }
    let connector = tokio_rustls::TlsConnector::from(tls_config(server));
    let name = ServerName::try_from("127.0.0.1").expect("server name");
    let stream = connector
        .connect(name, stream)
        .await
        .expect("TLS handshake");
    exchange(stream, bytes, wait).await
}

/// Sends one HTTP/1.1 request with `Connection: close` and the server's bearer token, and
/// parses the response.
pub async fn raw(
    server: &TestApiServer,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> RawResponse {
    let authorization = server.token().map(|t| format!("Bearer {t}"));
    let mut all: Vec<(&str, &str)> = authorization
        .iter()
        .map(|a| ("Authorization", a.as_str()))
        .collect();
    all.extend_from_slice(headers);
    raw_without_token(server, method, path, &all, body).await
}

/// Like [`raw`], without adding the bearer token.
pub async fn raw_without_token(
    server: &TestApiServer,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> RawResponse {
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nContent-Length: {}\r\n",
        server.address(),
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    let mut bytes = request.into_bytes();
    bytes.extend_from_slice(body);
    let response = send_bytes(server, &bytes, Duration::from_secs(5)).await;
    parse_response(&response).unwrap_or_else(|| {
        panic!(
            "not an HTTP response: {:?}",
            String::from_utf8_lossy(&response)
        )
    })
}

/// Parses an HTTP/1.1 response (content-length, chunked or close-delimited).
pub fn parse_response(bytes: &[u8]) -> Option<RawResponse> {
    let split = bytes.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&bytes[..split]).ok()?;
    let mut lines = head.split("\r\n");
    let status: u16 = lines.next()?.split(' ').nth(1)?.parse().ok()?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    let rest = &bytes[split + 4..];
    let chunked = headers.iter().any(|(k, v)| {
        k.eq_ignore_ascii_case("transfer-encoding") && v.eq_ignore_ascii_case("chunked")
    });
    let body = if chunked {
        let mut body = Vec::new();
        let mut rest = rest;
        while let Some(end) = rest.windows(2).position(|w| w == b"\r\n") {
            let size =
                usize::from_str_radix(std::str::from_utf8(&rest[..end]).ok()?.trim(), 16).ok()?;
            rest = &rest[end + 2..];
            if size == 0 || rest.len() < size {
                break;
            }
            body.extend_from_slice(&rest[..size]);
            rest = rest.get(size + 2..).unwrap_or_default();
        }
        body
    } else {
        rest.to_vec()
    };
    Some(RawResponse {
        status,
        headers,
        body,
    })
}

/// Runs a request until it succeeds (at most five tries). After a simulated
/// restart a client's pooled connection may fail once, as with a real server.
pub async fn retrying<T>(mut request: impl AsyncFnMut() -> Result<T, kube::Error>) -> T {
    let mut tries = 0;
    loop {
        match within(request()).await {
            Ok(value) => return value,
            Err(err) if tries < 4 => {
                tries += 1;
                let _ = err;
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(err) => panic!("request failed after retries: {err}"),
        }
    }
}
