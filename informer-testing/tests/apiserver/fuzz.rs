//! Garbage in, `Status` out: nothing a client sends may crash the server.

use std::time::Duration;

use futures::StreamExt;
use informer_testing::TestApiServer;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};

use super::common::{parse_response, raw, send_bytes, server, within};

/// A small deterministic xorshift generator, so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    fn bytes(&mut self, max: usize) -> Vec<u8> {
        let len = self.below(max + 1);
        (0..len).map(|_| self.next() as u8).collect()
    }

    fn text(&mut self, alphabet: &[u8], max: usize) -> String {
        let len = self.below(max + 1);
        (0..len).map(|_| *self.pick(alphabet) as char).collect()
    }

    /// A random JSON value, biased towards Kubernetes-looking objects.
    fn json(&mut self, depth: usize) -> serde_json::Value {
        use serde_json::{Value, json};
        let keys = [
            "apiVersion",
            "kind",
            "metadata",
            "name",
            "namespace",
            "labels",
            "spec",
            "status",
            "finalizers",
            "resourceVersion",
            "containers",
            "generateName",
            "uid",
            "data",
            "$patch",
            "$setElementOrder/containers",
            "$deleteFromPrimitiveList/finalizers",
            "$retainKeys",
            "deletionTimestamp",
            "op",
            "path",
            "value",
            "preconditions",
            "dryRun",
        ];
        match (self.below(if depth == 0 { 5 } else { 8 }), depth) {
            (0, _) => Value::Null,
            (1, _) => json!(self.below(3) == 0),
            (2, _) => json!(self.next() as i64),
            (3, _) => json!(self.text(b"abc-./=,!()xyz0129", 12)),
            (4, _) => json!(
                self.pick(&[
                    "v1",
                    "Pod",
                    "ConfigMap",
                    "apps/v1",
                    "delete",
                    "replace",
                    "merge",
                    "add",
                    "/metadata/name",
                    "All",
                    ""
                ])
                .to_string()
            ),
            (5 | 6, _) => {
                let mut map = serde_json::Map::new();
                for _ in 0..self.below(5) {
                    map.insert(self.pick(&keys).to_string(), self.json(depth - 1));
                }
                Value::Object(map)
            }
            _ => Value::Array((0..self.below(4)).map(|_| self.json(depth - 1)).collect()),
        }
    }
}

fn assert_well_formed(method: &str, target: &str, response: &[u8]) {
    let Some(response) = parse_response(response) else {
        panic!(
            "{method} {target}: no HTTP response: {:?}",
            String::from_utf8_lossy(response)
        );
    };
    // A strategic merge patch the library refuses is a 500 on a real server too (with the
    // library's message); a caught panic is not.
    let body = String::from_utf8_lossy(&response.body);
    assert!(
        response.status != 500 || !body.contains("an internal error occurred while handling"),
        "{method} {target}: internal error (a caught panic?): {body}"
    );
    if response.status >= 400 && method != "HEAD" {
        let status: serde_json::Value =
            serde_json::from_slice(&response.body).unwrap_or_else(|e| {
                panic!(
                    "{method} {target}: error body is not JSON ({e}): {:?}",
                    String::from_utf8_lossy(&response.body)
                )
            });
        assert_eq!(status["kind"], "Status", "{method} {target}: {status}");
        assert_eq!(
            status["code"], response.status,
            "{method} {target}: {status}"
        );
    }
}

async fn assert_still_serving(server: &TestApiServer) {
    let version = raw(server, "GET", "/version", &[], b"").await;
    assert_eq!(version.status, 200);
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    within(pods.list(&ListParams::default())).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_bytes_do_not_hurt() {
    let server = server().await;
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut inputs: Vec<Vec<u8>> = (0..60).map(|_| rng.bytes(512)).collect();
    inputs.extend([
        b"GET".to_vec(),
        b"GET / HTTP/1.1\r\n\r\n".to_vec(),
        b"GET /api HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999\r\n\r\n".to_vec(),
        b"POST /api/v1/namespaces/default/pods HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n".to_vec(),
        b"GET /\x00\xff HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
        b"\r\n\r\n\r\n\r\n".to_vec(),
        [b"GET /".as_slice(), &vec![b'a'; 70_000], b" HTTP/1.1\r\n\r\n"].concat(),
        [b"GET / HTTP/1.1\r\nX: ".as_slice(), &vec![b'b'; 70_000], b"\r\n\r\n"].concat(),
    ]);
    futures::stream::iter(inputs)
        .for_each_concurrent(16, |input| {
            let server = &server;
            async move {
                send_bytes(server, &input, Duration::from_secs(2)).await;
            }
        })
        .await;
    assert_still_serving(&server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_requests_get_status_errors() {
    let server = server().await;
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let segments = [
        "api",
        "apis",
        "v1",
        "v2",
        "apps",
        "namespaces",
        "default",
        "kube-system",
        "pods",
        "configmaps",
        "secrets",
        "deployments",
        "leases",
        "coordination.k8s.io",
        "status",
        "scale",
        "x",
        "web",
        "..",
        "%00",
        "%2F",
        "~",
        "watch",
        "openapi",
        "v3",
        "version",
        "Pod",
        "a.b.c",
        "-",
    ];
    let params = [
        "watch",
        "labelSelector",
        "fieldSelector",
        "limit",
        "continue",
        "resourceVersion",
        "resourceVersionMatch",
        "timeoutSeconds",
        "allowWatchBookmarks",
        "sendInitialEvents",
        "dryRun",
        "fieldManager",
        "force",
        "propagationPolicy",
    ];
    let values = [
        "",
        "0",
        "1",
        "-1",
        "true",
        "false",
        "maybe",
        "18446744073709551616",
        "Exact",
        "NotOlderThan",
        "All",
        "app%3Dweb",
        "app+in+(a,b)",
        "metadata.name%3Dx",
        "spec.bogus%3D1",
        "%28%29%21%3D",
        "eyJ2IjoxfQ",
        "!!!",
    ];
    let methods = [
        "GET", "GET", "GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "BREW",
    ];
    let content_types = [
        "application/json",
        "application/merge-patch+json",
        "application/strategic-merge-patch+json",
        "application/json-patch+json",
        "application/apply-patch+yaml",
        "text/plain",
        "",
    ];
    let mut requests = Vec::new();
    for _ in 0..400 {
        let method = *rng.pick(&methods);
        let depth = 1 + rng.below(7);
        let mut path = String::new();
        for _ in 0..depth {
            path.push('/');
            let segment: &&str = rng.pick(&segments);
            path.push_str(segment);
        }
        let mut query: Vec<String> = (0..rng.below(4))
            .map(|_| format!("{}={}", rng.pick(&params), rng.pick(&values)))
            .collect();
        if query.iter().any(|q| q.starts_with("watch=")) {
            query.push("timeoutSeconds=1".into());
        }
        if !query.is_empty() {
            path = format!("{path}?{}", query.join("&"));
        }
        let body = match rng.below(4) {
            0 => Vec::new(),
            1 => rng.bytes(64),
            _ => serde_json::to_vec(&rng.json(4)).unwrap(),
        };
        let content_type = *rng.pick(&content_types);
        requests.push((method, path, content_type, body));
    }
    futures::stream::iter(requests)
        .for_each_concurrent(16, |(method, path, content_type, body)| {
            let server = &server;
            async move {
                let mut request = format!(
                    "{method} {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\nContent-Length: {}\r\n",
                    body.len()
                );
                if !content_type.is_empty() {
                    request.push_str(&format!("Content-Type: {content_type}\r\n"));
                }
                request.push_str("\r\n");
                let mut bytes = request.into_bytes();
                bytes.extend_from_slice(&body);
                let response = send_bytes(server, &bytes, Duration::from_secs(5)).await;
                assert_well_formed(method, &path, &response);
            }
        })
        .await;
    assert_still_serving(&server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_bodies_against_an_existing_object() {
    let server = server().await;
    server
        .create_json(serde_json::json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "target", "finalizers": ["example.com/x"]},
            "spec": {"containers": [{"name": "app", "image": "nginx"}]}
        }))
        .unwrap();
    let mut rng = Rng(0xdead_beef_cafe_f00d);
    let content_types = [
        "application/merge-patch+json",
        "application/strategic-merge-patch+json",
        "application/json-patch+json",
        "application/apply-patch+yaml",
    ];
    let path = "/api/v1/namespaces/default/pods/target";
    for i in 0..300 {
        let body = serde_json::to_vec(&rng.json(5)).unwrap();
        let (method, target, content_type) = match i % 6 {
            0 => ("PUT", path.to_string(), "application/json"),
            1 => ("PUT", format!("{path}/status"), "application/json"),
            2 => (
                "POST",
                "/api/v1/namespaces/default/pods".to_string(),
                "application/json",
            ),
            3 => (
                "PATCH",
                format!("{path}/status?fieldManager=fuzz"),
                *rng.pick(&content_types),
            ),
            _ => (
                "PATCH",
                format!("{path}?fieldManager=fuzz"),
                *rng.pick(&content_types),
            ),
        };
        let response = raw(
            &server,
            method,
            &target,
            &[("Content-Type", content_type)],
            &body,
        )
        .await;
        let mut bytes = format!("HTTP/1.1 {} X\r\n\r\n", response.status).into_bytes();
        bytes.extend_from_slice(&response.body);
        assert_well_formed(method, &target, &bytes);
    }
    assert_still_serving(&server).await;
}

#[tokio::test]
async fn random_label_selectors_are_parsed_or_rejected() {
    let server = server().await;
    server
        .create_json(serde_json::json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "labels": {"a": "b"}}
        }))
        .unwrap();
    let mut rng = Rng(0x1234_5678_9abc_def1);
    for _ in 0..300 {
        let selector = rng.text(b"ab=!,() <>in0t-./_", 16);
        let encoded: String = form_encode(&selector);
        let response = raw(
            &server,
            "GET",
            &format!("/api/v1/configmaps?labelSelector={encoded}"),
            &[],
            b"",
        )
        .await;
        assert!(
            response.status == 200 || response.status == 400,
            "{selector:?} -> {}",
            response.status
        );
        if response.status == 400 {
            response.assert_status(400, "BadRequest");
        }
    }
}

#[tokio::test]
async fn oversized_bodies_are_rejected() {
    let server = TestApiServer::builder()
        .max_body_bytes(1024)
        .start()
        .await
        .unwrap();
    let body = vec![b' '; 4096];
    let response = raw(
        &server,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        &[("Content-Type", "application/json")],
        &body,
    )
    .await;
    response.assert_status(413, "RequestEntityTooLarge");
    // kube-apiserver's words (`NewRequestEntityTooLargeError` of the handlers' read).
    assert_eq!(
        response.json()["message"],
        "Request entity too large: limit is 1024"
    );
}

fn form_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'.' | b'_' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}
