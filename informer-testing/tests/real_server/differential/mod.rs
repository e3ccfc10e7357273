//! The differential test of the in-process `TestApiServer` against the real API server: one
//! script of requests ([`steps`]) runs against both, through a raw HTTP layer
//! (`kube::Client::send`), so that exact status codes, headers and bodies are seen. Each
//! answer is normalised ([`normalize`]: uids, timestamps, resource versions as their order,
//! continue tokens, generated suffixes) and the two are compared path by path ([`diff`]).
//!
//! Every difference must be listed in [`known`] (what differs and where in the fake it comes
//! from), and every listed difference must still be there, so the list stays true. The test
//! prints each step's differences; run it with `--nocapture` to read them.

mod diff;
mod known;
mod normalize;
mod steps;

use std::time::Duration;

use http_body_util::BodyExt;
use informer_testing::TestApiServer;
use informer_testing::envtest::EnvTest;
use informer_testing::wait::eventually_within;
use kube::client::Body;
use serde_json::{Value, json};

use diff::{Difference, covers, differences};
use known::{KNOWN, Known};
use normalize::Normalizer;
use steps::{CRDS, Context, Request, Step, WIDGETS};

/// How long the real server's controllers may take to act on a write.
const SETTLE_WITHIN: Duration = Duration::from_secs(60);

/// How long one request (watches included) may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// One server under test, with its own context and normaliser.
struct Side {
    name: &'static str,
    client: kube::Client,
    context: Context,
    normalizer: Normalizer,
}

impl Side {
    fn new(name: &'static str, mut config: kube::Config) -> Self {
        // Exact status codes: no retries of 429, 503 and 504 by the client.
        config.default_retry = false;
        Self {
            name,
            client: kube::Client::try_from(config).expect("a client"),
            context: Context::default(),
            normalizer: Normalizer::default(),
        }
    }

    /// Runs one step; returns the normalised answer.
    async fn run(&mut self, step: &Step) -> Value {
        let request = (step.request)(&self.context);
        let answer = match tokio::time::timeout(REQUEST_TIMEOUT, self.send(&request)).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(err)) => json!({"transport error": err.to_string()}),
            Err(_) => json!({"transport error": format!("no answer within {REQUEST_TIMEOUT:?}")}),
        };
        let status = answer["status"].as_u64().unwrap_or(0);
        self.normalizer.learn_uids(&answer);
        if let Some((path, status)) = step.then_wait_until {
            self.wait_until(path, status).await;
        }
        if request.method == http::Method::POST && request.path == CRDS && status == 201 {
            // The real server's CRD controllers write a new CRD's conditions on their own
            // time, possibly after its type is served: the revision the step leaves the
            // server at is read once they are written.
            let name = answer["body"]["metadata"]["name"]
                .as_str()
                .unwrap_or_default();
            self.wait_until_established(&format!("{CRDS}/{name}")).await;
        }
        if request.method != http::Method::GET && (200..300).contains(&status) {
            self.normalizer
                .register_write(step.name, &answer["body"]["metadata"]["resourceVersion"]);
            // The revision the write left the server at: a deletion answers with a Status
            // or with the object as it was, a deletecollection with the list it deleted.
            let current = self.current_revision().await;
            self.normalizer.register_write(step.name, &current);
        }
        let mut compared = answer.clone();
        if let (Some(pick), Some(body)) = (step.pick, answer.get("body")) {
            compared["body"] = pick(body);
        }
        self.context.answers.insert(step.name, answer);
        self.normalizer.normalize(&compared)
    }

    async fn send(&self, request: &Request) -> Result<Value, kube::Error> {
        let mut builder = http::Request::builder()
            .method(request.method.clone())
            .uri(&request.path)
            .header(
                http::header::ACCEPT,
                request.accept.unwrap_or("application/json"),
            );
        if let Some(content_type) = request.content_type {
            builder = builder.header(http::header::CONTENT_TYPE, content_type);
        }
        let http_request = builder
            .body(Body::from(request.body.clone().unwrap_or_default()))
            .expect("a valid request");
        let response = self.client.send(http_request).await?;
        let status = response.status().as_u16();
        let header = |name: &http::header::HeaderName| -> Vec<Value> {
            response
                .headers()
                .get_all(name)
                .iter()
                .map(|v| Value::String(String::from_utf8_lossy(v.as_bytes()).into_owned()))
                .collect()
        };
        let content_type = header(&http::header::CONTENT_TYPE);
        let warnings = header(&http::header::WARNING);
        let bytes = response
            .into_body()
            .collect()
            .await
            .map_err(|e| kube::Error::Service(Box::new(e)))?
            .to_bytes();
        let mut answer = json!({
            "status": status,
            "contentType": content_type.first().cloned().unwrap_or(Value::Null),
        });
        if !warnings.is_empty() {
            answer["warnings"] = Value::Array(warnings);
        }
        if request.watch && status == 200 {
            answer["events"] = Value::Array(watch_events(&bytes));
        } else {
            answer["body"] = serde_json::from_slice(&bytes)
                .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
        }
        Ok(answer)
    }

    /// The server's current revision: the resourceVersion of a consistent list.
    async fn current_revision(&self) -> Value {
        let request = http::Request::get(format!("{WIDGETS}?limit=1"))
            .body(Vec::new())
            .expect("a valid request");
        match self.client.request::<Value>(request).await {
            Ok(list) => list["metadata"]["resourceVersion"].clone(),
            Err(err) => panic!("{}: reading the current revision failed: {err}", self.name),
        }
    }

    /// Until `path` answers `status` (a CRD's type served: 200; an object or a type gone:
    /// 404): the real server's controllers act asynchronously. A type served (200 from its
    /// collection) is also waited for in its group version's discovery document, which the
    /// real server's discovery controller updates on its own time.
    async fn wait_until(&self, path: &str, status: u16) {
        let what = format!("{}: {path} answers {status}", self.name);
        eventually_within(&what, SETTLE_WITHIN, async || {
            let request = http::Request::get(path)
                .body(Body::from(Vec::new()))
                .expect("a valid request");
            self.client
                .send(request)
                .await
                .is_ok_and(|response| response.status().as_u16() == status)
        })
        .await;
        if status == 200 {
            self.wait_until_discovered(path).await;
        }
    }

    /// Until the CRD at `path` is established, or its names are refused (it never will be).
    async fn wait_until_established(&self, path: &str) {
        let condition = |crd: &Value, kind: &str, status: &str| {
            crd["status"]["conditions"].as_array().is_some_and(|cs| {
                cs.iter()
                    .any(|c| c["type"] == kind && c["status"] == status)
            })
        };
        let what = format!("{}: {path} is established or its names refused", self.name);
        eventually_within(&what, SETTLE_WITHIN, async || {
            let request = http::Request::get(path)
                .body(Vec::new())
                .expect("a valid request");
            self.client
                .request::<Value>(request)
                .await
                .is_ok_and(|crd| {
                    condition(&crd, "Established", "True")
                        || condition(&crd, "NamesAccepted", "False")
                })
        })
        .await;
    }

    /// Until `/apis/<group>/<version>` lists the resource whose collection is `path`
    /// (`/apis/<group>/<version>/[namespaces/<ns>/]<plural>`) and has stopped changing;
    /// nothing for other paths.
    async fn wait_until_discovered(&self, path: &str) {
        let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        let (group, version, plural) = match segments.as_slice() {
            ["apis", group, version, plural]
            | ["apis", group, version, "namespaces", _, plural] => (*group, *version, *plural),
            _ => return,
        };
        let document = format!("/apis/{group}/{version}");
        let read = async || {
            let request = http::Request::get(document.as_str())
                .body(Vec::new())
                .expect("a valid request");
            self.client.request::<Value>(request).await.ok()
        };
        // Listed, and then the same in two reads a while apart: the discovery controller
        // may add a type's subresources in a later update than the type itself.
        let mut last: Option<Value> = None;
        for _ in 0..600 {
            let list = read().await;
            let listed = list.as_ref().is_some_and(|list| {
                list["resources"]
                    .as_array()
                    .is_some_and(|r| r.iter().any(|r| r["name"] == *plural))
            });
            if listed && list.is_some() && list == last {
                return;
            }
            last = if listed { list } else { None };
            tokio::time::sleep(Duration::from_millis(if listed { 300 } else { 100 })).await;
        }
        panic!(
            "{}: {document} did not list {plural} within 60 s",
            self.name
        );
    }
}

/// The events of a watch answer, one JSON document per line. Bookmarks are dropped unless
/// they end the initial events: when the others come depends on timing, not semantics.
fn watch_events(bytes: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(bytes)
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).unwrap_or_else(|_| json!({"unparsable line": line})))
        .filter(|event: &Value| {
            event["type"] != "BOOKMARK"
                || event
                    .pointer("/object/metadata/annotations/k8s.io~1initial-events-end")
                    .is_some()
        })
        .collect()
}

/// What one step found.
struct Outcome<'a> {
    step: &'a Step,
    request: String,
    differences: Vec<Difference>,
}

/// Matches the differences found against [`KNOWN`]; returns the report and the failures.
fn judge(outcomes: &[Outcome<'_>], known: &[Known]) -> (String, Vec<String>) {
    let mut report = String::new();
    let mut failures = Vec::new();
    let mut used = vec![false; known.len()];
    for outcome in outcomes {
        if outcome.differences.is_empty() {
            continue;
        }
        report.push_str(&format!(
            "\n== step {:?}: {}\n",
            outcome.step.name, outcome.request
        ));
        for difference in &outcome.differences {
            let matched = known
                .iter()
                .position(|k| k.applies_to(outcome.step.name) && covers(k.path, &difference.path));
            let label = match matched {
                Some(i) => {
                    used[i] = true;
                    format!("known: {}; in the fake: {}", known[i].what, known[i].fake)
                }
                None => {
                    failures.push(format!(
                        "step {:?}: unexpected difference at {}",
                        outcome.step.name, difference.path
                    ));
                    "UNEXPECTED".to_string()
                }
            };
            report.push_str(&format!("  [{label}] {difference}\n"));
        }
    }
    for (k, used) in known.iter().zip(used) {
        if !used {
            let exists = outcomes.iter().any(|o| k.applies_to(o.step.name));
            failures.push(if exists {
                format!(
                    "known difference {:?} at {} of step {:?} no longer differs: remove it from known.rs",
                    k.what, k.path, k.step
                )
            } else {
                format!("known difference {:?} names step {:?}, which the script does not have", k.what, k.step)
            });
        }
    }
    (report, failures)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fake_answers_the_script_as_the_real_server_does_but_for_the_known_differences() {
    let Some(real) = EnvTest::start_or_skip().await else {
        return;
    };
    // The fake serves the Widget type the way the real server does: once the script creates
    // its CRD.
    let fake = TestApiServer::builder()
        .start()
        .await
        .expect("the fake starts");
    let mut sides = (
        Side::new("real", real.config()),
        Side::new("fake", fake.config()),
    );
    let script = steps::steps();
    let mut names: Vec<&str> = script.iter().map(|s| s.name).collect();
    names.sort_unstable();
    let before = names.len();
    names.dedup();
    assert_eq!(before, names.len(), "step names must be unique");

    let mut outcomes = Vec::new();
    for step in &script {
        let request = (step.request)(&sides.0.context);
        let (real_answer, fake_answer) = tokio::join!(sides.0.run(step), sides.1.run(step));
        outcomes.push(Outcome {
            step,
            request: format!("{} {}", request.method, request.path),
            differences: differences(&real_answer, &fake_answer),
        });
    }
    let (report, failures) = judge(&outcomes, KNOWN);
    eprintln!(
        "differential: {} steps, {} with differences{report}",
        outcomes.len(),
        outcomes
            .iter()
            .filter(|o| !o.differences.is_empty())
            .count()
    );
    assert!(
        failures.is_empty(),
        "the fake and the real server differ beyond the known differences (the report above \
         has both answers):\n{}",
        failures.join("\n")
    );
}
