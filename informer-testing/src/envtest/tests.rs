//! Unit tests of envtest's pieces that need no binaries: finding the assets, the CRD made
//! from a spec, readiness parsing, the kubeconfig, ports and the process keeper.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::json;

use super::crd::{Served, is_established};
use super::process::{Keeper, Launch, State};
use super::*;

/// A fresh scratch directory for one test, removed when dropped.
struct Scratch(PathBuf);

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn scratch(name: &str) -> Scratch {
    let dir = std::env::temp_dir().join(format!(
        "informer-envtest-unit-{}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    Scratch(dir)
}

fn executable(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, "#!/bin/sh\nexit 0\n").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    path
}

fn lookup(vars: &[(&str, &Path)]) -> impl Fn(&str) -> Option<OsString> {
    let vars: HashMap<String, OsString> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.as_os_str().to_owned()))
        .collect();
    move |name| vars.get(name).cloned()
}

#[test]
fn assets_come_from_the_assets_directory() {
    let dir = scratch("assets-dir");
    let apiserver = executable(&dir, APISERVER_FILE);
    let etcd = executable(&dir, ETCD_FILE);
    let assets = Assets::from_lookup(lookup(&[(ASSETS_ENV, &*dir)])).unwrap();
    assert_eq!(assets, Assets { apiserver, etcd });
}

#[test]
fn assets_binary_variables_override_the_directory() {
    let dir = scratch("assets-override");
    executable(&dir, APISERVER_FILE);
    let etcd = executable(&dir, ETCD_FILE);
    let other = executable(&dir, "my-apiserver");
    let assets =
        Assets::from_lookup(lookup(&[(ASSETS_ENV, &*dir), (APISERVER_BIN_ENV, &other)])).unwrap();
    assert_eq!(
        assets,
        Assets {
            apiserver: other,
            etcd
        }
    );
}

#[test]
fn assets_missing_variables_say_what_to_set() {
    let err = Assets::from_lookup(|_| None).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, Error::MissingAssets(_)));
    for name in [ASSETS_ENV, APISERVER_BIN_ENV, ETCD_BIN_ENV] {
        assert!(text.contains(name), "{text}");
    }
}

#[test]
fn assets_empty_variables_count_as_unset() {
    let err = Assets::from_lookup(|_| Some(OsString::new())).unwrap_err();
    assert!(err.to_string().contains(ASSETS_ENV), "{err}");
}

#[test]
fn assets_a_missing_binary_is_named() {
    let dir = scratch("assets-missing");
    executable(&dir, APISERVER_FILE);
    let err = Assets::from_lookup(lookup(&[(ASSETS_ENV, &*dir)])).unwrap_err();
    let text = err.to_string();
    assert!(
        matches!(err, Error::WrongAssets(_)),
        "set but wrong is not a skip"
    );
    assert!(
        text.contains("INFORMER_TEST_ASSETS/etcd") && text.contains("does not exist"),
        "{text}"
    );
}

#[cfg(unix)]
#[test]
fn assets_a_binary_that_is_not_executable_is_refused() {
    let dir = scratch("assets-mode");
    executable(&dir, APISERVER_FILE);
    let etcd = dir.join(ETCD_FILE);
    std::fs::write(&etcd, "data").unwrap();
    let err = Assets::from_lookup(lookup(&[(ASSETS_ENV, &*dir)])).unwrap_err();
    assert!(err.to_string().contains("is not executable"), "{err}");
}

#[test]
fn assets_a_directory_is_not_a_binary() {
    let dir = scratch("assets-dir-not-file");
    executable(&dir, ETCD_FILE);
    std::fs::create_dir(dir.join(APISERVER_FILE)).unwrap();
    let err = Assets::from_lookup(lookup(&[(ASSETS_ENV, &*dir)])).unwrap_err();
    assert!(err.to_string().contains("is not a file"), "{err}");
}

#[test]
fn crd_from_a_spec_declares_scope_names_version_and_subresources() {
    let spec = CustomResourceSpec::cluster_scoped("example.com", "v2", "Zone", "zones")
        .with_status_subresource()
        .with_short_names(["zn"]);
    let crd = custom_resource_definition(&spec);
    assert_eq!(crd["apiVersion"], "apiextensions.k8s.io/v1");
    assert_eq!(crd["metadata"]["name"], "zones.example.com");
    assert_eq!(crd["spec"]["scope"], "Cluster");
    assert_eq!(
        crd["spec"]["names"],
        json!({"plural": "zones", "singular": "zone", "kind": "Zone", "listKind": "ZoneList", "shortNames": ["zn"]})
    );
    let version = &crd["spec"]["versions"][0];
    assert_eq!(version["name"], "v2");
    assert_eq!(version["served"], true);
    assert_eq!(version["storage"], true);
    assert_eq!(version["subresources"], json!({"status": {}}));
    assert_eq!(
        version["schema"]["openAPIV3Schema"]["x-kubernetes-preserve-unknown-fields"],
        true
    );
}

#[test]
fn crd_from_a_spec_without_status_or_short_names_declares_neither() {
    let spec = CustomResourceSpec::namespaced("example.com", "v1", "Widget", "widgets");
    let crd = custom_resource_definition(&spec);
    assert_eq!(crd["spec"]["scope"], "Namespaced");
    assert!(crd["spec"]["names"].get("shortNames").is_none());
    assert!(crd["spec"]["versions"][0].get("subresources").is_none());
}

#[test]
fn served_lists_the_collection_of_every_served_version() {
    let crd = json!({
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "names": {"plural": "widgets"}, "versions": [
            {"name": "v1", "served": true},
            {"name": "v2", "served": false},
            {"name": "v3", "served": true},
        ]},
    });
    let served = Served::of(&crd).unwrap();
    assert_eq!(served.name, "widgets.example.com");
    assert_eq!(
        served.collections,
        [
            "/apis/example.com/v1/widgets",
            "/apis/example.com/v3/widgets"
        ]
    );
    assert_eq!(
        served.crd_path(),
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com"
    );
}

#[test]
fn served_says_which_field_a_crd_lacks() {
    let err = Served::of(&json!({"metadata": {"name": "w.example.com"}})).unwrap_err();
    assert_eq!(err, "/spec/group is missing");
    let none_served = json!({
        "metadata": {"name": "w.example.com"},
        "spec": {"group": "example.com", "names": {"plural": "w"}, "versions": [{"name": "v1", "served": false}]},
    });
    assert_eq!(
        Served::of(&none_served).unwrap_err(),
        "no version is served"
    );
}

#[test]
fn established_needs_the_established_condition_true() {
    let with = |status: &str| {
        json!({"status": {"conditions": [
            {"type": "NamesAccepted", "status": "True"},
            {"type": "Established", "status": status},
        ]}})
    };
    assert!(is_established(&with("True")));
    assert!(!is_established(&with("False")));
    assert!(!is_established(&json!({"status": {}})));
}

#[test]
fn kubeconfig_embeds_the_certificate_and_points_at_the_url() {
    let kubeconfig = kubeconfig_for("https://127.0.0.1:1234", b"PEM").unwrap();
    assert_eq!(kubeconfig.current_context.as_deref(), Some("envtest"));
    let cluster = kubeconfig.clusters[0].cluster.as_ref().unwrap();
    assert_eq!(cluster.server.as_deref(), Some("https://127.0.0.1:1234"));
    assert_eq!(cluster.certificate_authority_data.as_deref(), Some("UEVN"));
    let context = kubeconfig.contexts[0].context.as_ref().unwrap();
    assert_eq!(context.namespace.as_deref(), Some("default"));
}

#[test]
fn free_ports_are_three_distinct_nonzero_ports() {
    let ports = Ports::free().unwrap();
    let all = [ports.apiserver, ports.etcd_client, ports.etcd_peer];
    assert!(all.iter().all(|p| *p != 0));
    assert!(all[0] != all[1] && all[1] != all[2] && all[0] != all[2]);
}

#[test]
fn a_port_clash_is_recognised_in_the_log_tail() {
    let exited = |tail: &str| Error::NotReady {
        component: Component::ApiServer,
        waited: Duration::ZERO,
        last: String::new(),
        log: PathBuf::new(),
        tail: tail.to_string(),
    };
    assert!(exited("listen tcp 127.0.0.1:6443: bind: address already in use").is_port_clash());
    assert!(!exited("etcd: connection refused").is_port_clash());
    assert!(!Error::MissingAssets(String::new()).is_port_clash());
}

#[tokio::test]
async fn etcd_health_fails_with_the_reason_when_nothing_listens() {
    let port = Ports::free().unwrap().etcd_client;
    let why = etcd_health(port).await.unwrap_err();
    assert!(why.starts_with("/health:"), "{why}");
    let why = etcd_compact(port).await.unwrap_err();
    assert!(why.starts_with("/v3/kv/range:"), "{why}");
}

#[tokio::test]
async fn etcd_health_needs_status_200_and_health_true() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    async fn answer_with(body: &'static str) -> Result<(), String> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut request = [0u8; 256];
            let _ = socket.read(&mut request).await.unwrap();
            socket.write_all(body.as_bytes()).await.unwrap();
        });
        let result = etcd_health(port).await;
        server.await.unwrap();
        result
    }
    answer_with("HTTP/1.0 200 OK\r\n\r\n{\"health\":\"true\",\"reason\":\"\"}")
        .await
        .unwrap();
    assert!(
        answer_with("HTTP/1.0 503 Service Unavailable\r\n\r\n{\"health\":\"false\"}")
            .await
            .is_err()
    );
    assert!(
        answer_with("HTTP/1.0 200 OK\r\n\r\n{\"health\":\"false\"}")
            .await
            .is_err()
    );
}

#[cfg(unix)]
fn sh(dir: &Path, script: &str) -> Launch {
    Launch {
        program: PathBuf::from("/bin/sh"),
        args: vec!["-c".into(), script.into()],
        log: dir.join("out.log"),
        dir: dir.to_path_buf(),
    }
}

#[cfg(unix)]
#[tokio::test]
async fn keeper_reports_running_then_exited_with_the_status_and_logs_output() {
    let dir = scratch("keeper-exit");
    let keeper = Keeper::new().unwrap();
    keeper
        .start(Component::Etcd, sh(&dir, "echo hello; exit 3"))
        .await
        .unwrap();
    let mut state = keeper.state(Component::Etcd).await;
    for _ in 0..500 {
        if state != State::Running {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
        state = keeper.state(Component::Etcd).await;
    }
    let State::Exited(status) = state else {
        panic!("expected an exit, got {state:?}");
    };
    assert_eq!(status.code(), Some(3));
    // Forgotten once reported: it can start again.
    assert_eq!(keeper.state(Component::Etcd).await, State::Stopped);
    assert_eq!(
        std::fs::read_to_string(dir.join("out.log")).unwrap(),
        "hello\n"
    );
}

#[cfg(unix)]
#[tokio::test]
async fn keeper_refuses_a_second_start_of_a_running_process() {
    let dir = scratch("keeper-twice");
    let keeper = Keeper::new().unwrap();
    keeper
        .start(Component::ApiServer, sh(&dir, "sleep 30"))
        .await
        .unwrap();
    let err = keeper
        .start(Component::ApiServer, sh(&dir, "sleep 30"))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
    assert_eq!(keeper.state(Component::ApiServer).await, State::Running);
}

#[cfg(unix)]
#[tokio::test]
async fn keeper_graceful_stop_sends_sigterm_and_kill_sends_sigkill() {
    use std::os::unix::process::ExitStatusExt;
    let dir = scratch("keeper-stop");
    let keeper = Keeper::new().unwrap();
    // Exits 7 on SIGTERM, so a graceful stop is seen as that exit code.
    let trapping = "trap 'exit 7' TERM; while true; do sleep 0.05; done";
    keeper
        .start(Component::Etcd, sh(&dir, trapping))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let status = keeper
        .stop(Component::Etcd, StopMode::Graceful)
        .await
        .unwrap();
    assert_eq!(status.code(), Some(7));
    keeper
        .start(Component::Etcd, sh(&dir, trapping))
        .await
        .unwrap();
    let status = keeper.stop(Component::Etcd, StopMode::Kill).await.unwrap();
    assert_eq!(status.signal(), Some(libc::SIGKILL));
    assert_eq!(keeper.stop(Component::Etcd, StopMode::Kill).await, None);
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn dropping_the_keeper_kills_its_processes() {
    let dir = scratch("keeper-drop");
    let keeper = Keeper::new().unwrap();
    let pid = keeper
        .start(Component::Etcd, sh(&dir, "sleep 30"))
        .await
        .unwrap();
    drop(keeper);
    // Reaped by the keeper before drop returned: the pid names no process of ours.
    let alive = std::path::Path::new(&format!("/proc/{pid}")).exists()
        && std::fs::read_to_string(format!("/proc/{pid}/cmdline"))
            .is_ok_and(|cmdline| cmdline.contains("sleep"));
    assert!(!alive, "process {pid} outlived the keeper");
}

/// Makes `tmp/<name>` look like an envtest directory: etcd data and a log.
fn left_behind(tmp: &Path, name: &str) -> PathBuf {
    let dir = tmp.join(name);
    std::fs::create_dir_all(dir.join("etcd/member/wal")).unwrap();
    std::fs::write(dir.join("etcd/member/wal/0.wal"), b"wal").unwrap();
    std::fs::write(dir.join("apiserver.log"), b"log").unwrap();
    dir
}

#[test]
fn sweep_removes_the_etcd_data_a_dead_process_left_and_keeps_its_recent_logs() {
    let tmp = scratch("sweep-dead");
    let dead = left_behind(&tmp, "informer-envtest-4000001-0");
    sweep_dead(&tmp, |_| false);
    assert!(!dead.join("etcd").exists());
    assert!(dead.join("apiserver.log").exists());
}

#[test]
fn sweep_removes_the_whole_directory_of_a_dead_process_after_a_day() {
    let tmp = scratch("sweep-old");
    let dead = left_behind(&tmp, "informer-envtest-4000002-3");
    let two_days_ago = std::time::SystemTime::now() - Duration::from_secs(48 * 60 * 60);
    std::fs::File::open(&dead)
        .unwrap()
        .set_modified(two_days_ago)
        .unwrap();
    sweep_dead(&tmp, |_| false);
    assert!(!dead.exists());
}

#[test]
fn sweep_leaves_live_processes_and_other_names_alone() {
    let tmp = scratch("sweep-alive");
    let live = left_behind(&tmp, "informer-envtest-4000003-0");
    let mine = left_behind(&tmp, &format!("informer-envtest-{}-7", std::process::id()));
    let unit = left_behind(&tmp, "informer-envtest-unit-1-x");
    let other = left_behind(&tmp, "informer-envtest-12-notanumber");
    sweep_dead(&tmp, |pid| pid == 4_000_003);
    for dir in [live, mine, unit, other] {
        assert!(dir.join("etcd").exists(), "{} was swept", dir.display());
    }
}
