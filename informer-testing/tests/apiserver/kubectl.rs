//! `kubectl` against the server: get, apply -f (then --server-side), delete, get -w,
//! get --chunk-size, the typed create subcommands (protobuf), scale,
//! delete --cascade=orphan|foreground|background,
//! delete ns, drain, auth can-i and whoami, create token, explain, get --raw through the
//! proxy subresources and the health endpoints, the legacy `bindings` resource, and the errors
//! a cluster gives.
//! Skips (with a printed reason) when kubectl is not installed.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use informer_testing::{RequestMatch, TestApiServer, Verb};
use serde_json::json;

use super::common::server;

fn find_kubectl() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join("kubectl"))
        .find(|candidate| candidate.is_file())
}

/// A fresh server and kubectl configured for it; `None` (the reason printed) without kubectl.
pub(super) async fn started() -> Option<(TestApiServer, Kubectl)> {
    let Some(binary) = find_kubectl() else {
        println!("skipping: kubectl not found");
        return None;
    };
    let server = server().await;
    let kubectl = Kubectl::new(binary, &server);
    Some((server, kubectl))
}

pub(super) struct Kubectl {
    binary: PathBuf,
    kubeconfig: PathBuf,
    cache_dir: PathBuf,
}

impl Kubectl {
    fn new(binary: PathBuf, server: &TestApiServer) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "informer-kubectl-test-{}-{}",
            std::process::id(),
            server.address().port()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let kubeconfig = dir.join("kubeconfig");
        server.write_kubeconfig(&kubeconfig).unwrap();
        Self {
            binary,
            kubeconfig,
            cache_dir: dir.join("cache"),
        }
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(&self.binary);
        command
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--cache-dir")
            .arg(&self.cache_dir)
            .args(args)
            .env_remove("KUBECONFIG")
            .stdin(Stdio::null());
        command
    }

    /// Runs kubectl to completion (killing it after 30 s) off the async runtime.
    pub(super) async fn run(&self, args: &[&str]) -> Output {
        let mut command = self.command(args);
        let description = format!("kubectl {}", args.join(" "));
        tokio::task::spawn_blocking(move || {
            let mut child = command
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("kubectl starts");
            let deadline = Instant::now() + Duration::from_secs(30);
            while child.try_wait().expect("wait").is_none() {
                if Instant::now() > deadline {
                    let _ = child.kill();
                    panic!("{description} timed out");
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            child.wait_with_output().expect("output")
        })
        .await
        .unwrap()
    }

    pub(super) async fn ok(&self, args: &[&str]) -> String {
        let output = self.run(args).await;
        assert!(
            output.status.success(),
            "kubectl {args:?} failed: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).unwrap()
    }

    pub(super) fn cleanup(&self) {
        if let Some(dir) = self.kubeconfig.parent() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

fn manifest(dir: &Path, image: &str) -> PathBuf {
    let path = dir.join("pod.yaml");
    std::fs::write(
        &path,
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  labels:\n    app: web\nspec:\n  containers:\n  - name: app\n    image: {image}\n    ports:\n    - containerPort: 80\n"
        ),
    )
    .unwrap();
    path
}

/// Creates [`pod`] `name` in `default` through the API; returns the Pods' API.
async fn created_pod(
    server: &TestApiServer,
    name: &str,
) -> kube::Api<k8s_openapi::api::core::v1::Pod> {
    let pods = kube::Api::namespaced(server.client(), "default");
    let created: k8s_openapi::api::core::v1::Pod = serde_json::from_value(pod(name)).unwrap();
    pods.create(&Default::default(), &created).await.unwrap();
    pods
}

fn pod(name: &str) -> serde_json::Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "app", "image": "busybox"}]}
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_get_apply_watch_chunk_and_delete() {
    let Some((server, kubectl)) = started().await else {
        return;
    };
    let dir = kubectl.kubeconfig.parent().unwrap().to_path_buf();

    // get on an empty namespace.
    let output = kubectl.run(&["get", "pods"]).await;
    assert!(output.status.success(), "{output:?}");
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("No resources found in default namespace")
    );

    // apply -f: create, configure, unchanged.
    let file = manifest(&dir, "nginx:1.27");
    let file = file.to_str().unwrap();
    assert_eq!(
        kubectl.ok(&["apply", "-f", file]).await.trim(),
        "pod/web created"
    );
    let stored = server
        .get_json("v1", "Pod", Some("default"), "web")
        .unwrap();
    assert!(
        stored["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
            .is_string()
    );
    manifest(&dir, "nginx:1.28");
    assert_eq!(
        kubectl.ok(&["apply", "-f", file]).await.trim(),
        "pod/web configured"
    );
    let stored = server
        .get_json("v1", "Pod", Some("default"), "web")
        .unwrap();
    assert_eq!(stored["spec"]["containers"][0]["image"], "nginx:1.28");
    assert_eq!(
        stored["spec"]["containers"][0]["ports"][0]["containerPort"],
        80
    );
    assert_eq!(
        kubectl.ok(&["apply", "-f", file]).await.trim(),
        "pod/web unchanged"
    );

    // get prints a table.
    let table = kubectl.ok(&["get", "pods"]).await;
    let mut lines = table.lines();
    let header: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]);
    assert!(lines.next().unwrap().starts_with("web "));
    let json_out: serde_json::Value =
        serde_json::from_str(&kubectl.ok(&["get", "pod", "web", "-o", "json"]).await).unwrap();
    assert_eq!(json_out["metadata"]["name"], "web");

    // get --chunk-size=2 pages through five pods in three requests.
    for name in ["p1", "p2", "p3", "p4"] {
        server.create_json(pod(name)).unwrap();
    }
    server.faults().reset_request_counts();
    let chunked = kubectl.ok(&["get", "pods", "--chunk-size=2"]).await;
    let listed: Vec<&str> = chunked
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(listed, ["p1", "p2", "p3", "p4", "web"]);
    assert_eq!(
        server
            .faults()
            .request_count(RequestMatch::verb(Verb::List).resource("pods")),
        3
    );

    // get -w prints the list, then changes as they happen.
    let mut watch = kubectl
        .command(&["get", "pods", "-w"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("kubectl get -w starts");
    let stdout = watch.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let wait_for = |rx: mpsc::Receiver<String>, prefix: &'static str| {
        tokio::task::spawn_blocking(move || {
            let deadline = Instant::now() + Duration::from_secs(20);
            let mut seen = Vec::new();
            while let Some(left) = deadline.checked_duration_since(Instant::now()) {
                match rx.recv_timeout(left) {
                    Ok(line) => {
                        let found = line.starts_with(prefix);
                        seen.push(line);
                        if found {
                            return (rx, seen);
                        }
                    }
                    Err(_) => break,
                }
            }
            panic!("kubectl get -w never printed {prefix:?}; printed {seen:?}");
        })
    };
    let (rx, seen) = wait_for(rx, "web ").await.unwrap();
    assert!(seen[0].starts_with("NAME"), "{seen:?}");
    server.create_json(pod("late")).unwrap();
    let (rx, _) = wait_for(rx, "late ").await.unwrap();
    let _ = watch.kill();
    let _ = watch.wait();
    drop(rx);
    let _ = reader.join();

    // delete.
    let deleted = kubectl.ok(&["delete", "pod", "web"]).await;
    assert_eq!(deleted.trim(), "pod \"web\" deleted");
    assert!(
        server
            .get_json("v1", "Pod", Some("default"), "web")
            .is_none()
    );
    let missing = kubectl.run(&["get", "pod", "web"]).await;
    assert!(!missing.status.success());
    assert!(
        String::from_utf8_lossy(&missing.stderr).contains("pods \"web\" not found"),
        "{missing:?}"
    );
    let missing = kubectl.run(&["delete", "pod", "web"]).await;
    assert!(!missing.status.success());

    kubectl.cleanup();
}

/// Writes a manifest into the kubectl test's directory.
/// ConfigMap `settings` as `kubectl get -o json --show-managed-fields` prints it, and the
/// names of its field managers in order.
async fn settings_and_managers(kubectl: &Kubectl) -> (serde_json::Value, Vec<String>) {
    let stored: serde_json::Value = serde_json::from_str(
        &kubectl
            .ok(&[
                "get",
                "configmap",
                "settings",
                "-o",
                "json",
                "--show-managed-fields",
            ])
            .await,
    )
    .unwrap();
    let managers = stored["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["manager"].as_str().unwrap().to_owned())
        .collect();
    (stored, managers)
}

pub(super) fn write_manifest(kubectl: &Kubectl, name: &str, text: &str) -> String {
    let path = kubectl.kubeconfig.parent().unwrap().join(name);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

/// Runs kubectl expecting it to fail, and returns its standard error.
pub(super) async fn fails(kubectl: &Kubectl, args: &[&str]) -> String {
    let output = kubectl.run(args).await;
    assert!(!output.status.success(), "kubectl {args:?} succeeded");
    String::from_utf8(output.stderr).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_create_subcommands_scale_and_server_errors() {
    let Some((server, kubectl)) = started().await else {
        return;
    };

    // The typed create subcommands send protobuf.
    for (args, printed) in [
        (
            &["create", "namespace", "team"][..],
            "namespace/team created",
        ),
        (
            &[
                "create",
                "configmap",
                "settings",
                "-n",
                "team",
                "--from-literal=mode=fast",
            ],
            "configmap/settings created",
        ),
        (
            &[
                "create",
                "secret",
                "generic",
                "creds",
                "--from-literal=user=admin",
            ],
            "secret/creds created",
        ),
        (
            &[
                "create",
                "deployment",
                "web",
                "--image=nginx:1.27",
                "--replicas=2",
            ],
            "deployment.apps/web created",
        ),
        (
            &[
                "create",
                "service",
                "clusterip",
                "frontend",
                "--tcp=80:8080",
            ],
            "service/frontend created",
        ),
    ] {
        assert_eq!(kubectl.ok(args).await.trim(), printed);
    }
    let settings = server
        .get_json("v1", "ConfigMap", Some("team"), "settings")
        .unwrap();
    assert_eq!(settings["data"]["mode"], "fast");
    let creds = server
        .get_json("v1", "Secret", Some("default"), "creds")
        .unwrap();
    assert_eq!(creds["data"]["user"], "YWRtaW4=");
    let frontend = server
        .get_json("v1", "Service", Some("default"), "frontend")
        .unwrap();
    assert_eq!(frontend["spec"]["ports"][0]["targetPort"], 8080);
    let yaml = kubectl
        .ok(&["get", "configmap", "settings", "-n", "team", "-o", "yaml"])
        .await;
    assert!(yaml.contains("mode: fast"), "{yaml}");
    // Stored as a real server stores it: the zeros protobuf carries for Go's non-pointer
    // omitempty fields are gone, a pointer's zero would stay.
    let web = server
        .get_json("apps/v1", "Deployment", Some("default"), "web")
        .unwrap();
    let container = &web["spec"]["template"]["spec"]["containers"][0];
    assert!(container.get("stdin").is_none(), "{container}");
    assert!(web["spec"].get("paused").is_none(), "{web}");
    assert!(web["spec"].get("minReadySeconds").is_none(), "{web}");

    // kubectl get prints each kind's own columns.
    let printed = kubectl.ok(&["get", "deployments"]).await;
    let header: Vec<&str> = printed.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"],
        "{printed}"
    );
    assert!(printed.contains("0/2"), "{printed}");
    let wide = kubectl
        .ok(&["get", "deployment", "web", "-o", "wide"])
        .await;
    assert!(
        wide.contains("nginx:1.27") && wide.contains("app=web"),
        "{wide}"
    );
    let services = kubectl.ok(&["get", "service", "frontend"]).await;
    assert!(
        services.contains("CLUSTER-IP") && services.contains("80/TCP"),
        "{services}"
    );
    let secrets = kubectl.ok(&["get", "secret", "creds"]).await;
    assert!(
        secrets.lines().next().unwrap().contains("DATA"),
        "{secrets}"
    );

    // kubectl scale goes through the scale subresource.
    assert_eq!(
        kubectl
            .ok(&["scale", "deployment", "web", "--replicas=4"])
            .await
            .trim(),
        "deployment.apps/web scaled"
    );
    let web = server
        .get_json("apps/v1", "Deployment", Some("default"), "web")
        .unwrap();
    assert_eq!(web["spec"]["replicas"], 4);
    let sts = write_manifest(
        &kubectl,
        "sts.yaml",
        "apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: db\nspec:\n  replicas: 1\n  serviceName: db\n  selector:\n    matchLabels:\n      app: db\n  template:\n    metadata:\n      labels:\n        app: db\n    spec:\n      containers:\n      - name: db\n        image: postgres\n",
    );
    assert_eq!(
        kubectl.ok(&["apply", "-f", &sts]).await.trim(),
        "statefulset.apps/db created"
    );
    assert_eq!(
        kubectl
            .ok(&["scale", "sts", "db", "--replicas=3"])
            .await
            .trim(),
        "statefulset.apps/db scaled"
    );

    // Invalid objects: the causes are listed.
    let bad = write_manifest(
        &kubectl,
        "bad.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: bad\nspec:\n  containers:\n  - name: app\n    image: nginx\n  - name: app\n    image: nginx\n",
    );
    let stderr = fails(&kubectl, &["create", "-f", &bad]).await;
    assert!(stderr.contains("The Pod \"bad\" is invalid"), "{stderr}");
    assert!(
        stderr.contains("spec.containers[1].name: Duplicate value: \"app\""),
        "{stderr}"
    );

    // Unknown fields: kubectl asks for Strict validation, or Warn.
    let unknown = write_manifest(
        &kubectl,
        "unknown.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: typo\ndatax:\n  a: b\n",
    );
    let stderr = fails(&kubectl, &["create", "-f", &unknown]).await;
    assert!(
        stderr.contains("strict decoding error: unknown field \"datax\""),
        "{stderr}"
    );
    let output = kubectl
        .run(&["create", "--validate=warn", "-f", &unknown])
        .await;
    assert!(output.status.success(), "{output:?}");
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("Warning: unknown field \"datax\""),
        "{output:?}"
    );

    // Creates a cluster refuses.
    let stderr = fails(
        &kubectl,
        &[
            "create",
            "configmap",
            "x",
            "-n",
            "nope",
            "--from-literal=a=b",
        ],
    )
    .await;
    assert!(stderr.contains("namespaces \"nope\" not found"), "{stderr}");
    let widget = write_manifest(
        &kubectl,
        "widget.yaml",
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n",
    );
    let stderr = fails(&kubectl, &["create", "-f", &widget]).await;
    assert!(
        stderr.contains("no matches for kind \"Widget\" in version \"example.com/v1\""),
        "{stderr}"
    );

    kubectl.cleanup();
}

/// A ReplicaSet owned by the Deployment `owner` in `namespace`, created directly.
fn owned_replica_set(server: &TestApiServer, namespace: &str, owner: &serde_json::Value) {
    server
        .create_json(json!({
            "apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {
                "name": "web-rs", "namespace": namespace,
                "ownerReferences": [{
                    "apiVersion": "apps/v1", "kind": "Deployment",
                    "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"],
                    "controller": true, "blockOwnerDeletion": true,
                }],
            },
            "spec": {"selector": {"matchLabels": {"app": "web"}}},
        }))
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_cascades_and_deletes_namespaces() {
    let Some((server, kubectl)) = started().await else {
        return;
    };
    kubectl.ok(&["create", "namespace", "team"]).await;
    let deployment = || async {
        kubectl
            .ok(&["create", "deployment", "web", "-n", "team", "--image=nginx"])
            .await;
        server
            .get_json("apps/v1", "Deployment", Some("team"), "web")
            .unwrap()
    };
    let replica_set = || server.get_json("apps/v1", "ReplicaSet", Some("team"), "web-rs");
    // Creates the Deployment and a ReplicaSet it owns, deletes the Deployment with kubectl.
    let delete_web = async |cascade: &[&str]| {
        let web = deployment().await;
        owned_replica_set(&server, "team", &web);
        let mut args = vec!["delete", "deployment", "web", "-n", "team"];
        args.extend_from_slice(cascade);
        let deleted = kubectl.ok(&args).await;
        assert_eq!(deleted.trim(), "deployment.apps \"web\" deleted");
    };

    // --cascade=orphan: the ReplicaSet stays, without its owner reference.
    delete_web(&["--cascade=orphan"]).await;
    let orphan = replica_set().expect("orphaned, not deleted");
    assert!(
        orphan["metadata"]["ownerReferences"]
            .as_array()
            .is_none_or(Vec::is_empty),
        "{orphan}"
    );
    server
        .delete_json("apps/v1", "ReplicaSet", Some("team"), "web-rs")
        .unwrap();

    // --cascade=foreground: kubectl waits until the Deployment is gone, after its ReplicaSet.
    delete_web(&["--cascade=foreground"]).await;
    assert!(replica_set().is_none());
    assert!(
        server
            .get_json("apps/v1", "Deployment", Some("team"), "web")
            .is_none()
    );

    // The default (background): the ReplicaSet follows its Deployment.
    delete_web(&[]).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    while replica_set().is_some() {
        assert!(
            Instant::now() < deadline,
            "the ReplicaSet was never collected"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // kubectl delete ns waits until the namespace and its content are gone.
    kubectl
        .ok(&[
            "create",
            "configmap",
            "settings",
            "-n",
            "team",
            "--from-literal=a=b",
        ])
        .await;
    assert_eq!(
        kubectl.ok(&["delete", "ns", "team"]).await.trim(),
        "namespace \"team\" deleted"
    );
    let stderr = fails(&kubectl, &["get", "namespace", "team"]).await;
    assert!(stderr.contains("namespaces \"team\" not found"), "{stderr}");
    assert!(
        server
            .get_json("v1", "ConfigMap", Some("team"), "settings")
            .is_none()
    );

    let stderr = fails(&kubectl, &["delete", "namespace", "default"]).await;
    assert!(
        stderr.contains(
            "Error from server (Forbidden): namespaces \"default\" is forbidden: this namespace may not be deleted"
        ),
        "{stderr}"
    );
    kubectl.cleanup();
}

const WIDGET_CRD: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names:
    plural: widgets
    kind: Widget
    shortNames: [wd]
  versions:
  - name: v1
    served: true
    storage: true
    additionalPrinterColumns:
    - name: Size
      type: integer
      jsonPath: .spec.size
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size:
                type: integer
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_apply_a_crd_then_use_its_short_name_and_delete_it() {
    let Some((server, kubectl)) = started().await else {
        return;
    };
    let crd = write_manifest(&kubectl, "crd.yaml", WIDGET_CRD);
    assert_eq!(
        kubectl.ok(&["apply", "-f", &crd]).await.trim(),
        "customresourcedefinition.apiextensions.k8s.io/widgets.example.com created"
    );
    let widget = write_manifest(
        &kubectl,
        "widget.yaml",
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w1\nspec:\n  size: 3\n",
    );
    assert_eq!(
        kubectl.ok(&["apply", "-f", &widget]).await.trim(),
        "widget.example.com/w1 created"
    );
    let table = kubectl.ok(&["get", "wd"]).await;
    let rows: Vec<Vec<&str>> = table
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows, [vec!["NAME", "SIZE"], vec!["w1", "3"]], "{table}");
    let crds = kubectl.ok(&["get", "crd"]).await;
    assert!(crds.contains("widgets.example.com"), "{crds}");

    // Applying the CRD again with a new version of its schema takes effect.
    let changed = WIDGET_CRD.replace(
        "              size:\n                type: integer\n",
        "              size:\n                type: integer\n              color:\n                type: string\n                default: red\n",
    );
    let crd = write_manifest(&kubectl, "crd.yaml", &changed);
    assert_eq!(
        kubectl.ok(&["apply", "-f", &crd]).await.trim(),
        "customresourcedefinition.apiextensions.k8s.io/widgets.example.com configured"
    );
    let second = write_manifest(
        &kubectl,
        "widget2.yaml",
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w2\nspec:\n  size: 1\n",
    );
    kubectl.ok(&["apply", "-f", &second]).await;
    let color = kubectl
        .ok(&["get", "wd", "w2", "-o", "jsonpath={.spec.color}"])
        .await;
    assert_eq!(color, "red");

    assert_eq!(
        kubectl
            .ok(&["delete", "crd", "widgets.example.com"])
            .await
            .trim(),
        "customresourcedefinition.apiextensions.k8s.io \"widgets.example.com\" deleted"
    );
    assert!(
        server
            .get_json("example.com/v1", "Widget", Some("default"), "w1")
            .is_none()
    );
    // kubectl's cached discovery may still know the type: either way it is not served.
    let stderr = fails(&kubectl, &["get", "wd"]).await;
    assert!(
        stderr.contains("the server doesn't have a resource type \"wd\"")
            || stderr.contains("the server could not find the requested resource"),
        "{stderr}"
    );
    kubectl.cleanup();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_server_side_apply_with_two_managers_conflicts_and_forces() {
    let Some((_server, kubectl)) = started().await else {
        return;
    };
    let config = |mode: &str| {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  mode: {mode}\n"
        )
    };
    let first = write_manifest(&kubectl, "a.yaml", &config("fast"));
    assert_eq!(
        kubectl
            .ok(&[
                "apply",
                "--server-side",
                "--field-manager=team-a",
                "-f",
                &first
            ])
            .await
            .trim(),
        "configmap/settings serverside-applied"
    );
    let second = write_manifest(&kubectl, "b.yaml", &config("slow"));
    let stderr = fails(
        &kubectl,
        &[
            "apply",
            "--server-side",
            "--field-manager=team-b",
            "-f",
            &second,
        ],
    )
    .await;
    assert!(
        stderr.contains("Apply failed with 1 conflict: conflict with \"team-a\": .data.mode"),
        "{stderr}"
    );
    assert_eq!(
        kubectl
            .ok(&[
                "apply",
                "--server-side",
                "--field-manager=team-b",
                "--force-conflicts",
                "-f",
                &second
            ])
            .await
            .trim(),
        "configmap/settings serverside-applied"
    );
    let (stored, managers) = settings_and_managers(&kubectl).await;
    assert_eq!(stored["data"]["mode"], "slow");
    assert_eq!(managers, ["team-b"], "team-a lost its only field");
    kubectl.cleanup();
}

/// Moving from `kubectl apply` to `kubectl apply --server-side`, as the Kubernetes docs
/// describe it: no conflict with `kubectl-client-side-apply`, kubectl's migration of the
/// managed fields afterwards is accepted, and a later client-side apply still works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_apply_then_server_side_apply_upgrades_without_conflicts() {
    let Some((_server, kubectl)) = started().await else {
        return;
    };
    let config = |mode: &str| {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  mode: {mode}\n"
        )
    };
    let first = write_manifest(&kubectl, "csa.yaml", &config("fast"));
    assert_eq!(
        kubectl.ok(&["apply", "-f", &first]).await.trim(),
        "configmap/settings created"
    );
    let second = write_manifest(&kubectl, "ssa.yaml", &config("slow"));
    assert_eq!(
        kubectl
            .ok(&["apply", "--server-side", "-f", &second])
            .await
            .trim(),
        "configmap/settings serverside-applied"
    );
    let (stored, managers) = settings_and_managers(&kubectl).await;
    assert_eq!(stored["data"]["mode"], "slow");
    let annotation =
        stored["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
            .as_str()
            .unwrap();
    let last: serde_json::Value = serde_json::from_str(annotation).unwrap();
    assert_eq!(
        last["data"]["mode"], "slow",
        "the annotation follows the apply"
    );
    assert!(
        !managers.iter().any(|m| m == "kubectl-client-side-apply"),
        "kubectl migrated the ownership: {managers:?}"
    );
    let third = write_manifest(&kubectl, "csa2.yaml", &config("medium"));
    assert_eq!(
        kubectl.ok(&["apply", "-f", &third]).await.trim(),
        "configmap/settings configured"
    );
    kubectl.cleanup();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_creates_jobs_rbac_and_the_other_kinds_a_controller_makes() {
    let Some((server, kubectl)) = started().await else {
        return;
    };
    // The typed create subcommands send protobuf.
    for (args, printed) in [
        (
            &["create", "serviceaccount", "bot"][..],
            "serviceaccount/bot created",
        ),
        (
            &[
                "create",
                "role",
                "reader",
                "--verb=get,list",
                "--resource=pods",
            ],
            "role.rbac.authorization.k8s.io/reader created",
        ),
        (
            &[
                "create",
                "rolebinding",
                "bot-reads",
                "--role=reader",
                "--serviceaccount=default:bot",
            ],
            "rolebinding.rbac.authorization.k8s.io/bot-reads created",
        ),
        (
            &[
                "create",
                "clusterrole",
                "node-reader",
                "--verb=get",
                "--resource=nodes",
            ],
            "clusterrole.rbac.authorization.k8s.io/node-reader created",
        ),
        (
            &[
                "create",
                "clusterrolebinding",
                "alice",
                "--clusterrole=node-reader",
                "--user=alice",
            ],
            "clusterrolebinding.rbac.authorization.k8s.io/alice created",
        ),
        (
            &[
                "create",
                "job",
                "once",
                "--image=busybox:1.36",
                "--",
                "echo",
                "hi",
            ],
            "job.batch/once created",
        ),
        (
            &[
                "create",
                "cronjob",
                "nightly",
                "--image=busybox:1.36",
                "--schedule=0 3 * * *",
            ],
            "cronjob.batch/nightly created",
        ),
        (
            &["create", "ingress", "web", "--rule=example.com/=web:80"],
            "ingress.networking.k8s.io/web created",
        ),
        (
            &[
                "create",
                "poddisruptionbudget",
                "web",
                "--selector=app=web",
                "--min-available=1",
            ],
            "poddisruptionbudget.policy/web created",
        ),
    ] {
        assert_eq!(kubectl.ok(args).await.trim(), printed);
    }
    let job = server
        .get_json("batch/v1", "Job", Some("default"), "once")
        .unwrap();
    let uid = job["metadata"]["uid"].as_str().unwrap();
    assert_eq!(
        job["spec"]["selector"]["matchLabels"]["batch.kubernetes.io/controller-uid"],
        uid
    );
    assert_eq!(
        job["spec"]["template"]["metadata"]["labels"]["job-name"],
        "once"
    );
    assert_eq!(job["spec"]["backoffLimit"], 6);

    let jobs = kubectl.ok(&["get", "jobs"]).await;
    let header: Vec<&str> = jobs.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"],
        "{jobs}"
    );
    assert!(jobs.contains("Running") && jobs.contains("0/1"), "{jobs}");
    let bindings = kubectl.ok(&["get", "rolebindings", "-o", "wide"]).await;
    assert!(
        bindings.contains("Role/reader") && bindings.contains("default/bot"),
        "{bindings}"
    );
    let all = kubectl.ok(&["get", "all"]).await;
    assert!(
        all.contains("job.batch/once") && all.contains("cronjob.batch/nightly"),
        "{all}"
    );
    let accounts = kubectl.ok(&["get", "sa"]).await;
    assert!(
        accounts.lines().next().unwrap().contains("SECRETS"),
        "{accounts}"
    );
    kubectl.cleanup();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_auth_can_i_and_whoami() {
    let Some((_server, kubectl)) = started().await else {
        return;
    };
    assert_eq!(
        kubectl
            .ok(&["auth", "can-i", "create", "pods"])
            .await
            .trim(),
        "yes"
    );
    assert_eq!(
        kubectl
            .ok(&["auth", "can-i", "delete", "nodes", "--all-namespaces"])
            .await
            .trim(),
        "yes"
    );
    assert_eq!(
        kubectl
            .ok(&["auth", "can-i", "get", "/healthz"])
            .await
            .trim(),
        "yes"
    );
    let list = kubectl.ok(&["auth", "can-i", "--list"]).await;
    assert!(list.contains("*.*"), "{list}");
    let whoami = kubectl.ok(&["auth", "whoami", "-o", "json"]).await;
    let whoami: serde_json::Value = serde_json::from_str(&whoami).unwrap();
    assert_eq!(whoami["status"]["userInfo"]["username"], "admin");
    let resources = kubectl
        .ok(&[
            "api-resources",
            "--api-group=authorization.k8s.io",
            "-o",
            "name",
        ])
        .await;
    assert!(
        resources
            .lines()
            .any(|l| l == "selfsubjectaccessreviews.authorization.k8s.io"),
        "{resources}"
    );
    // `kubectl create token`: a token that authenticates as the service account.
    let token = kubectl.ok(&["create", "token", "default"]).await;
    let token_flag = format!("--token={}", token.trim());
    let account = kubectl
        .ok(&["auth", "whoami", "-o", "json", &token_flag])
        .await;
    let account: serde_json::Value = serde_json::from_str(&account).unwrap();
    assert_eq!(
        account["status"]["userInfo"]["username"],
        "system:serviceaccount:default:default"
    );
    kubectl.cleanup();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_explain_reads_the_schemas_of_built_in_and_custom_kinds() {
    let Some((_server, kubectl)) = started().await else {
        return;
    };
    let pods = kubectl.ok(&["explain", "pods"]).await;
    assert!(pods.contains("KIND:       Pod"), "{pods}");
    assert!(pods.contains("spec\t<PodSpec>"), "{pods}");
    let ports = kubectl.ok(&["explain", "pod.spec.containers.ports"]).await;
    assert!(
        ports.contains("containerPort\t<integer> -required-"),
        "{ports}"
    );
    let deployments = kubectl.ok(&["explain", "deployment.spec.replicas"]).await;
    assert!(deployments.contains("<integer>"), "{deployments}");
    // The descriptions kube-apiserver's OpenAPI documents give.
    assert!(
        deployments.contains("Number of desired pods."),
        "{deployments}"
    );
    let crd_kind = kubectl.ok(&["explain", "crd.spec.names.kind"]).await;
    assert!(
        crd_kind.contains("kind is the serialized kind of the resource."),
        "{crd_kind}"
    );

    let dir = kubectl.kubeconfig.parent().unwrap().to_path_buf();
    let crd = dir.join("crd.yaml");
    std::fs::write(
        &crd,
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: backups.example.dev\nspec:\n  group: example.dev\n  scope: Namespaced\n  names: {plural: backups, singular: backup, kind: Backup}\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n        description: A database backup.\n        properties:\n          spec:\n            type: object\n            required: [database]\n            properties:\n              database: {type: string, description: The database to back up.}\n",
    )
    .unwrap();
    kubectl.ok(&["apply", "-f", crd.to_str().unwrap()]).await;
    let backup = kubectl.ok(&["explain", "backup"]).await;
    assert!(backup.contains("A database backup."), "{backup}");
    assert!(backup.contains("metadata\t<ObjectMeta>"), "{backup}");
    let database = kubectl.ok(&["explain", "backup.spec"]).await;
    assert!(
        database.contains("database\t<string> -required-")
            && database.contains("The database to back up."),
        "{database}"
    );
    kubectl.cleanup();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_drain_cordons_the_node_and_evicts_its_pods() {
    let Some((_server, kubectl)) = started().await else {
        return;
    };
    let dir = kubectl.kubeconfig.parent().unwrap().to_path_buf();
    let manifests = dir.join("node.yaml");
    std::fs::write(
        &manifests,
        "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: on-n1}\nspec:\n  nodeName: n1\n  containers: [{name: c, image: nginx}]\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: elsewhere}\nspec:\n  nodeName: n2\n  containers: [{name: c, image: nginx}]\n",
    )
    .unwrap();
    kubectl
        .ok(&["apply", "-f", manifests.to_str().unwrap()])
        .await;
    let drained = kubectl
        .ok(&[
            "drain",
            "n1",
            "--force",
            "--ignore-daemonsets",
            "--timeout=20s",
        ])
        .await;
    assert!(drained.contains("pod/on-n1 evicted"), "{drained}");
    let pods = kubectl.ok(&["get", "pods", "-o", "name"]).await;
    assert_eq!(pods.trim(), "pod/elsewhere");
    let node = kubectl
        .ok(&["get", "node", "n1", "-o", "jsonpath={.spec.unschedulable}"])
        .await;
    assert_eq!(node, "true");
    kubectl.cleanup();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_logs_exec_and_a_schedulers_binding() {
    let Some((server, kubectl)) = started().await else {
        return;
    };
    let pods = created_pod(&server, "web").await;
    // No node, nothing set: empty logs, as a real server answers for an unscheduled Pod.
    assert_eq!(kubectl.ok(&["logs", "web"]).await, "");
    server.set_pod_log("default", "web", "app", "one\ntwo\nthree\n");
    assert_eq!(kubectl.ok(&["logs", "web"]).await, "one\ntwo\nthree\n");
    assert_eq!(kubectl.ok(&["logs", "web", "--tail=1"]).await, "three\n");
    let params = kube::api::LogParams {
        container: Some("app".into()),
        tail_lines: Some(2),
        ..Default::default()
    };
    assert_eq!(pods.logs("web", &params).await.unwrap(), "two\nthree\n");
    let err = fails(&kubectl, &["logs", "web", "-c", "db"]).await;
    assert!(
        err.contains("container db is not valid for pod web"),
        "{err}"
    );
    let err = fails(&kubectl, &["exec", "web", "--", "true"]).await;
    assert!(err.contains("does not have a host assigned"), "{err}");
    // A scheduler binds the Pod to a node.
    let binding = json!({
        "apiVersion": "v1", "kind": "Binding",
        "metadata": {"name": "web"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "node-1"}
    });
    let response = super::common::raw(
        &server,
        "POST",
        "/api/v1/namespaces/default/pods/web/binding",
        &[("Content-Type", "application/json")],
        binding.to_string().as_bytes(),
    )
    .await;
    assert_eq!(response.status, 201);
    let bound = pods.get("web").await.unwrap();
    assert_eq!(bound.spec.unwrap().node_name.as_deref(), Some("node-1"));
    let again = super::common::raw(
        &server,
        "POST",
        "/api/v1/namespaces/default/pods/web/binding",
        &[("Content-Type", "application/json")],
        binding.to_string().as_bytes(),
    )
    .await;
    assert_eq!(again.status, 409);
    // The node it is bound to does not exist: the kubelet cannot even be looked up.
    let err = fails(&kubectl, &["exec", "web", "--", "true"]).await;
    assert!(err.contains("nodes \"node-1\" not found"), "{err}");
    // Logs set for the container are its kubelet's; without them, the logs of a bound Pod
    // fail as its exec does (the API server looks the Node up first).
    assert_eq!(kubectl.ok(&["logs", "web"]).await, "one\ntwo\nthree\n");
    let mut db = pod("db");
    db["spec"]["nodeName"] = json!("node-1");
    server.create_json(db).unwrap();
    let err = fails(&kubectl, &["logs", "db"]).await;
    assert!(err.contains("nodes \"node-1\" not found"), "{err}");
    // With the Node and its address, the kubelet is dialed, and nobody answers.
    server
        .create_json(
            json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1"},
            "status": {"addresses": [{"type": "InternalIP", "address": "10.0.0.7"}]}}),
        )
        .unwrap();
    let err = fails(&kubectl, &["exec", "web", "--", "true"]).await;
    assert!(
        err.contains("error dialing backend: dial tcp 10.0.0.7:10250"),
        "{err}"
    );
    assert_eq!(
        kubectl.ok(&["logs", "db"]).await,
        "",
        "a Node with an address: no logs set"
    );
    let resources = kubectl.ok(&["get", "--raw", "/api/v1"]).await;
    for sub in [
        "pods/log",
        "pods/binding",
        "pods/exec",
        "pods/attach",
        "pods/portforward",
    ] {
        assert!(
            resources.contains(&format!("\"{sub}\"")),
            "{sub} in discovery"
        );
    }
    kubectl.cleanup();
}

/// `kubectl diff -f` of a manifest with `annotations: {}` and `data: {}` shows no difference
/// from the ConfigMap `kubectl create` just made (with `kubectl create configmap`, or with
/// `kubectl create -f` of that manifest): a real server does not store empty `omitempty`
/// maps, so the dry-run patch of the diff does not add them either.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_diff_of_a_just_created_config_map_with_empty_maps_shows_no_difference() {
    let Some((_server, kubectl)) = started().await else {
        return;
    };
    for (name, create) in [
        (
            "typed",
            &["create", "configmap", "typed", "-n", "default"][..],
        ),
        ("from-file", &[][..]),
    ] {
        let manifest = write_manifest(
            &kubectl,
            &format!("{name}.yaml"),
            &format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: default\n  annotations: {{}}\ndata: {{}}\n"
            ),
        );
        if create.is_empty() {
            kubectl.ok(&["create", "-f", &manifest]).await;
        } else {
            kubectl.ok(create).await;
        }
        let output = kubectl.run(&["diff", "-f", &manifest]).await;
        assert!(
            output.status.success(),
            "kubectl diff of {name} found a difference (or failed): {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    kubectl.cleanup();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_debug_adds_an_ephemeral_container_that_stays() {
    let Some((server, kubectl)) = started().await else {
        return;
    };
    let pods = created_pod(&server, "web").await;
    kubectl
        .ok(&["debug", "web", "--image=busybox", "--container=debugger"])
        .await;
    let spec = pods.get("web").await.unwrap().spec.unwrap();
    let ephemeral = spec.ephemeral_containers.unwrap_or_default();
    assert_eq!(ephemeral.len(), 1);
    assert_eq!(ephemeral[0].name, "debugger");
    assert_eq!(ephemeral[0].image.as_deref(), Some("busybox"));
    // Only additions: removing it is refused.
    let response = super::common::raw(
        &server,
        "PATCH",
        "/api/v1/namespaces/default/pods/web/ephemeralcontainers",
        &[("Content-Type", "application/merge-patch+json")],
        br#"{"spec": {"ephemeralContainers": null}}"#,
    )
    .await;
    assert_eq!(response.status, 422);
    let status: serde_json::Value = serde_json::from_slice(&response.body).unwrap();
    assert!(
        status["message"]
            .as_str()
            .unwrap()
            .contains("existing ephemeral containers \"debugger\" may not be removed"),
        "{status}"
    );
    // The subresource writes nothing else of the Pod.
    let response = super::common::raw(
        &server,
        "PATCH",
        "/api/v1/namespaces/default/pods/web/ephemeralcontainers",
        &[("Content-Type", "application/merge-patch+json")],
        br#"{"metadata": {"labels": {"x": "y"}}}"#,
    )
    .await;
    assert_eq!(response.status, 200);
    assert!(pods.get("web").await.unwrap().metadata.labels.is_none());
    kubectl.cleanup();
}

/// A scheduler written with Python's client binds through the legacy `bindings` resource
/// (`CoreV1Api.create_namespaced_binding`): a `POST` of a `Binding` to
/// `/api/v1/namespaces/<ns>/bindings` binds the Pod it names (`LegacyBindingREST`), copies
/// its annotations, and is listed in discovery as kube-apiserver lists it (`kubectl
/// api-resources`). A gated Pod is refused; `pods/<name>/binding` checks the URL's name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_binding_posted_to_the_legacy_bindings_resource_binds_the_pod() {
    let Some((server, kubectl)) = started().await else {
        return;
    };
    let pods = created_pod(&server, "web").await;
    let post = |path: &'static str, body: serde_json::Value| {
        let server = &server;
        async move {
            let response = super::common::raw(
                server,
                "POST",
                path,
                &[("Content-Type", "application/json")],
                body.to_string().as_bytes(),
            )
            .await;
            let status: serde_json::Value =
                serde_json::from_slice(&response.body).unwrap_or_default();
            (response.status, status)
        }
    };
    let (code, status) = post(
        "/api/v1/namespaces/default/bindings",
        json!({
            "apiVersion": "v1", "kind": "Binding",
            "metadata": {"name": "web", "annotations": {"scheduler": "py"}},
            "target": {"apiVersion": "v1", "kind": "Node", "name": "node-1"}
        }),
    )
    .await;
    assert_eq!(
        (code, &status["status"]),
        (201, &json!("Success")),
        "{status}"
    );
    let bound = pods.get("web").await.unwrap();
    assert_eq!(bound.spec.unwrap().node_name.as_deref(), Some("node-1"));
    assert_eq!(
        bound.metadata.annotations.unwrap()["scheduler"],
        "py",
        "the Binding's annotations are copied"
    );
    let (code, status) = post(
        "/api/v1/namespaces/default/bindings",
        json!({"metadata": {"name": "web"}, "target": {"name": "node-2"}}),
    )
    .await;
    assert_eq!(code, 409, "{status}");

    let gated: k8s_openapi::api::core::v1::Pod = serde_json::from_value(json!({
        "metadata": {"name": "gated"},
        "spec": {"schedulingGates": [{"name": "wait"}],
                 "containers": [{"name": "app", "image": "busybox"}]}
    }))
    .unwrap();
    pods.create(&Default::default(), &gated).await.unwrap();
    let (code, status) = post(
        "/api/v1/namespaces/default/pods/gated/binding",
        json!({"metadata": {"name": "other"}, "target": {"name": "node-1"}}),
    )
    .await;
    assert_eq!(
        (code, status["message"].as_str().unwrap_or("")),
        (400, "name in URL does not match name in Binding object")
    );
    let (code, status) = post(
        "/api/v1/namespaces/default/pods/gated/binding",
        json!({"metadata": {"name": "gated"}, "target": {"name": "node-1"}}),
    )
    .await;
    assert_eq!(code, 409);
    assert_eq!(
        status["message"],
        "Operation cannot be fulfilled on pods/binding \"gated\": pod gated has non-empty .spec.schedulingGates"
    );

    let resources = kubectl.ok(&["api-resources", "--api-group="]).await;
    let bindings = resources
        .lines()
        .find(|l| l.starts_with("bindings "))
        .expect("bindings listed");
    assert_eq!(
        bindings.split_whitespace().collect::<Vec<_>>(),
        ["bindings", "v1", "true", "Binding"]
    );
    kubectl.cleanup();
}

/// `kubectl get --raw` through the `proxy` subresource of a Pod, a Service and a Node gets
/// what a cluster answers when it cannot reach them: `address not allowed` for a Pod
/// without an IP, `error trying to reach service` (503) once it has one, the Service
/// registry's `no endpoints available` and a missing Endpoints' 404, a missing Pod's 404.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_get_raw_through_a_proxy_answers_as_a_cluster_that_cannot_reach_the_pod() {
    let Some((server, kubectl)) = started().await else {
        return;
    };
    let pods = created_pod(&server, "web").await;
    let err = fails(
        &kubectl,
        &[
            "get",
            "--raw",
            "/api/v1/namespaces/default/pods/web:8080/proxy/metrics",
        ],
    )
    .await;
    assert!(
        err.contains("Error from server (BadRequest): address not allowed"),
        "{err}"
    );
    let ip = json!({"status": {"podIP": "10.244.0.5", "podIPs": [{"ip": "10.244.0.5"}]}});
    pods.patch_status("web", &Default::default(), &kube::api::Patch::Merge(&ip))
        .await
        .unwrap();
    let err = fails(
        &kubectl,
        &[
            "get",
            "--raw",
            "/api/v1/namespaces/default/pods/web:8080/proxy/metrics",
        ],
    )
    .await;
    assert!(
        err.contains(
            "Error from server (ServiceUnavailable): error trying to reach service: dial tcp 10.244.0.5:8080"
        ),
        "{err}"
    );
    let err = fails(
        &kubectl,
        &[
            "get",
            "--raw",
            "/api/v1/namespaces/default/pods/nope/proxy/",
        ],
    )
    .await;
    assert!(err.contains("pods \"nope\" not found"), "{err}");

    kubectl
        .ok(&["create", "service", "clusterip", "api", "--tcp=80:8080"])
        .await;
    let err = fails(
        &kubectl,
        &[
            "get",
            "--raw",
            "/api/v1/namespaces/default/services/api:80/proxy/",
        ],
    )
    .await;
    assert!(err.contains("endpoints \"api\" not found"), "{err}");
    let err = fails(
        &kubectl,
        &[
            "get",
            "--raw",
            "/api/v1/namespaces/default/services/kubernetes/proxy/",
        ],
    )
    .await;
    assert!(
        err.contains("no endpoints available for service \"kubernetes\""),
        "{err}"
    );
    let resources = kubectl.ok(&["get", "--raw", "/api/v1"]).await;
    for sub in ["pods/proxy", "services/proxy", "nodes/proxy"] {
        assert!(
            resources.contains(&format!("\"{sub}\"")),
            "{sub} in discovery"
        );
    }
    kubectl.cleanup();
}

/// `kubectl get --raw '/readyz?verbose'` (the health endpoints page's example) lists the
/// checks as kube-apiserver's `healthz` package does, `exclude` marks one excluded, a
/// single check answers `ok`, and an unknown one is not found.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_get_raw_health_endpoints_verbose_and_single_checks() {
    let Some((_server, kubectl)) = started().await else {
        return;
    };
    assert_eq!(kubectl.ok(&["get", "--raw", "/readyz"]).await, "ok");
    let verbose = kubectl
        .ok(&["get", "--raw", "/readyz?verbose&exclude=etcd"])
        .await;
    let lines: Vec<&str> = verbose.lines().collect();
    assert_eq!(
        lines[..3],
        ["[+]ping ok", "[+]log ok", "[+]etcd excluded: ok"]
    );
    assert!(lines.contains(&"[+]informer-sync ok"), "{verbose}");
    assert_eq!(lines.last(), Some(&"readyz check passed"));
    let live = kubectl.ok(&["get", "--raw", "/livez?verbose"]).await;
    assert!(live.ends_with("livez check passed\n"), "{live}");
    assert!(!live.contains("shutdown"), "{live}");
    assert_eq!(kubectl.ok(&["get", "--raw", "/livez/ping"]).await, "ok");
    let err = fails(&kubectl, &["get", "--raw", "/healthz/nope"]).await;
    assert!(err.contains("NotFound"), "{err}");
    kubectl.cleanup();
}

/// `kubectl create cronjob` with a schedule the real server's cron parser refuses, a
/// `CRON_TZ=` prefix or `--restart=Always`, and a Job manifest whose pods would restart
/// `Always` (the default), fail as a cluster fails them; good schedules and zones pass.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_create_cronjob_and_job_are_validated_as_a_cluster_validates_them() {
    let Some((_server, kubectl)) = started().await else {
        return;
    };
    let cronjob = |name: &'static str, schedule: &'static str, restart: &'static str| {
        [
            "create",
            "cronjob",
            name,
            "--image=busybox",
            schedule,
            restart,
        ]
    };
    for (args, printed) in [
        (
            cronjob("bad", "--schedule=bad", "--restart=OnFailure"),
            "error: failed to create cronjob: CronJob.batch \"bad\" is invalid: spec.schedule: Invalid value: \"bad\": expected exactly 5 fields, found 1: [bad]",
        ),
        (
            cronjob("minute", "--schedule=60 * * * *", "--restart=OnFailure"),
            "error: failed to create cronjob: CronJob.batch \"minute\" is invalid: spec.schedule: Invalid value: \"60 * * * *\": end of range (60) above maximum (59): 60",
        ),
        (
            cronjob(
                "tz",
                "--schedule=CRON_TZ=UTC 0 * * * *",
                "--restart=OnFailure",
            ),
            "error: failed to create cronjob: CronJob.batch \"tz\" is invalid: spec.schedule: Invalid value: \"CRON_TZ=UTC 0 * * * *\": cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
        ),
        (
            cronjob("always", "--schedule=0 * * * *", "--restart=Always"),
            "error: failed to create cronjob: CronJob.batch \"always\" is invalid: spec.jobTemplate.spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\"",
        ),
    ] {
        assert_eq!(fails(&kubectl, &args).await.trim(), printed);
    }
    for (name, schedule) in [
        ("every", "--schedule=@every 90m"),
        ("named", "--schedule=0 9 * jan-mar mon-fri"),
    ] {
        kubectl
            .ok(&cronjob(name, schedule, "--restart=Never"))
            .await;
    }
    let job = write_manifest(
        &kubectl,
        "job.yaml",
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: always\nspec:\n  template:\n    spec:\n      containers:\n      - name: c\n        image: busybox\n",
    );
    assert_eq!(
        fails(&kubectl, &["create", "-f", &job]).await.trim(),
        "The Job \"always\" is invalid: spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\""
    );
    let zoned = write_manifest(
        &kubectl,
        "zoned.yaml",
        "apiVersion: batch/v1\nkind: CronJob\nmetadata:\n  name: zoned\nspec:\n  schedule: \"0 * * * *\"\n  timeZone: UTC\n  jobTemplate:\n    spec:\n      template:\n        spec:\n          restartPolicy: Never\n          containers:\n          - name: c\n            image: busybox\n",
    );
    kubectl.ok(&["create", "-f", &zoned]).await;
    let err = fails(
        &kubectl,
        &[
            "patch",
            "cronjob",
            "zoned",
            "-p",
            r#"{"spec":{"timeZone":"Local"}}"#,
        ],
    )
    .await;
    assert_eq!(
        err.trim(),
        "The CronJob \"zoned\" is invalid: spec.timeZone: Invalid value: \"Local\": timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"
    );
    kubectl.cleanup();
}

/// `kubectl patch svc -p '{"spec":{"type":...}}'` from NodePort or LoadBalancer drops what
/// the new type does not use, as the Service strategy's `dropTypeDependentFields` does (no
/// `80:30000/TCP` left on a ClusterIP Service); a node port asked for on a ClusterIP Service
/// is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_patch_of_a_service_type_drops_what_the_old_type_used() {
    let Some((_server, kubectl)) = started().await else {
        return;
    };
    kubectl
        .ok(&["create", "service", "nodeport", "np", "--tcp=80:8080"])
        .await;
    kubectl
        .ok(&["create", "service", "loadbalancer", "lb", "--tcp=80:8080"])
        .await;
    kubectl
        .ok(&[
            "patch",
            "svc",
            "np",
            "-p",
            r#"{"spec":{"type":"ClusterIP"}}"#,
        ])
        .await;
    let columns = [
        "-o",
        "custom-columns=TYPE:.spec.type,IP:.spec.clusterIP,PORTS:.spec.ports[*].nodePort,ETP:.spec.externalTrafficPolicy",
        "--no-headers",
    ];
    let np = kubectl
        .ok(&[&["get", "svc", "np"][..], &columns[..]].concat())
        .await;
    assert!(np.starts_with("ClusterIP   10.96."), "{np}");
    assert!(np.trim_end().ends_with("<none>   <none>"), "{np}");
    kubectl
        .ok(&[
            "patch",
            "svc",
            "lb",
            "-p",
            r#"{"spec":{"type":"ExternalName","externalName":"example.com"}}"#,
        ])
        .await;
    let lb = kubectl
        .ok(&[&["get", "svc", "lb"][..], &columns[..]].concat())
        .await;
    assert_eq!(
        lb.split_whitespace().collect::<Vec<_>>(),
        ["ExternalName", "<none>", "<none>", "<none>"]
    );
    let err = fails(
        &kubectl,
        &[
            "patch",
            "svc",
            "np",
            "-p",
            r#"{"spec":{"ports":[{"port":80,"nodePort":30500}]}}"#,
        ],
    )
    .await;
    assert_eq!(
        err.trim(),
        "The Service \"np\" is invalid: spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'"
    );
    kubectl.cleanup();
}

/// `kubectl get deploy web --subresource=scale` prints the `Scale` as the real server's
/// table convertor does (`printScale`); `--subresource=status` prints the Deployment's row.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_get_subresource_scale_prints_desired_and_available() {
    let Some((_server, kubectl)) = started().await else {
        return;
    };
    kubectl
        .ok(&[
            "create",
            "deployment",
            "web",
            "--image=nginx",
            "--replicas=3",
        ])
        .await;
    let scale = kubectl
        .ok(&["get", "deployment", "web", "--subresource=scale"])
        .await;
    let lines: Vec<Vec<&str>> = scale
        .lines()
        .map(|line| line.split_whitespace().collect())
        .collect();
    assert_eq!(lines[0], ["NAME", "DESIRED", "AVAILABLE", "AGE"], "{scale}");
    assert_eq!(lines[1][..3], ["web", "3", "0"], "{scale}");
    let status = kubectl
        .ok(&["get", "deployment", "web", "--subresource=status"])
        .await;
    assert!(
        status.starts_with("NAME   READY   UP-TO-DATE   AVAILABLE   AGE"),
        "{status}"
    );
    let yaml = kubectl
        .ok(&[
            "get",
            "deployment",
            "web",
            "--subresource=scale",
            "-o",
            "yaml",
        ])
        .await;
    assert!(yaml.contains("kind: Scale"), "{yaml}");
    kubectl.cleanup();
}

/// The "Update API Objects in Place Using kubectl patch" task: a strategic merge patch of the
/// strategy's type alone keeps the old `rollingUpdate`, which a `Recreate` Deployment may not
/// have; the same patch with `$retainKeys` drops it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_patch_of_a_deployment_strategy_needs_retain_keys() {
    let Some((_server, kubectl)) = started().await else {
        return;
    };
    let deployment = write_manifest(
        &kubectl,
        "retainkeys-demo.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: retainkeys-demo\nspec:\n  selector:\n    matchLabels:\n      app: nginx\n  strategy:\n    rollingUpdate:\n      maxSurge: 30%\n  template:\n    metadata:\n      labels:\n        app: nginx\n    spec:\n      containers:\n      - name: retainkeys-demo-ctr\n        image: nginx\n",
    );
    kubectl.ok(&["apply", "-f", &deployment]).await;
    let patch = |body: &'static str| {
        [
            "patch",
            "deployment",
            "retainkeys-demo",
            "--type",
            "strategic",
            "-p",
            body,
        ]
    };
    let err = fails(
        &kubectl,
        &patch(r#"{"spec":{"strategy":{"type":"Recreate"}}}"#),
    )
    .await;
    assert_eq!(
        err.trim(),
        "The Deployment \"retainkeys-demo\" is invalid: spec.strategy.rollingUpdate: Forbidden: may not be specified when strategy `type` is 'Recreate'"
    );
    kubectl
        .ok(&patch(
            r#"{"spec":{"strategy":{"$retainKeys":["type"],"type":"Recreate"}}}"#,
        ))
        .await;
    let strategy = kubectl
        .ok(&[
            "get",
            "deployment",
            "retainkeys-demo",
            "-o",
            "jsonpath={.spec.strategy}",
        ])
        .await;
    assert_eq!(strategy, r#"{"type":"Recreate"}"#);
    kubectl.cleanup();
}
