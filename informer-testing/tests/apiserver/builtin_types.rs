//! The built-in kinds served beside the workloads: Endpoints, ReplicationControllers,
//! PersistentVolumes, ResourceQuotas, LimitRanges, PodTemplates, EndpointSlices,
//! NetworkPolicies, IngressClasses, HorizontalPodAutoscalers, StorageClasses, PriorityClasses
//! and ControllerRevisions: discovery, typed create/get/list, defaults and the status a create
//! starts from, Table columns, the Service field selectors, and `kubectl apply --prune`.

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::{
    Endpoints, LimitRange, PersistentVolume, PodTemplate, ReplicationController, ResourceQuota,
    Service,
};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::networking::v1::{IngressClass, NetworkPolicy};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::api::storage::v1::StorageClass;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::common::{column_names, names, raw, server, within};
use super::kubectl::started;

fn typed<K: DeserializeOwned>(value: Value) -> K {
    serde_json::from_value(value).expect("a valid object")
}

/// `(group/version, plural, namespaced, short names, categories, subresources)`.
type Expected<'a> = (
    &'a str,
    &'a str,
    bool,
    &'a [&'a str],
    &'a [&'a str],
    &'a [&'a str],
);

#[tokio::test]
async fn discovery_lists_the_new_kinds_with_their_scope_names_and_subresources() {
    let server = server().await;
    let client = server.client();
    let expected: &[Expected] = &[
        ("v1", "endpoints", true, &["ep"], &[], &[]),
        (
            "v1",
            "replicationcontrollers",
            true,
            &["rc"],
            &["all"],
            &["status", "scale"],
        ),
        ("v1", "persistentvolumes", false, &["pv"], &[], &["status"]),
        ("v1", "resourcequotas", true, &["quota"], &[], &["status"]),
        ("v1", "limitranges", true, &["limits"], &[], &[]),
        ("v1", "podtemplates", true, &[], &[], &[]),
        ("discovery.k8s.io/v1", "endpointslices", true, &[], &[], &[]),
        (
            "networking.k8s.io/v1",
            "networkpolicies",
            true,
            &["netpol"],
            &[],
            &[],
        ),
        (
            "networking.k8s.io/v1",
            "ingressclasses",
            false,
            &[],
            &[],
            &[],
        ),
        (
            "autoscaling/v2",
            "horizontalpodautoscalers",
            true,
            &["hpa"],
            &["all"],
            &["status"],
        ),
        (
            "autoscaling/v1",
            "horizontalpodautoscalers",
            true,
            &["hpa"],
            &["all"],
            &["status"],
        ),
        (
            "storage.k8s.io/v1",
            "storageclasses",
            false,
            &["sc"],
            &[],
            &[],
        ),
        (
            "scheduling.k8s.io/v1",
            "priorityclasses",
            false,
            &["pc"],
            &[],
            &[],
        ),
        ("apps/v1", "controllerrevisions", true, &[], &[], &[]),
    ];
    for (group_version, plural, namespaced, short, categories, subresources) in expected {
        let list = if *group_version == "v1" {
            within(client.list_core_api_resources("v1")).await.unwrap()
        } else {
            within(client.list_api_group_resources(group_version))
                .await
                .unwrap()
        };
        let resource = list
            .resources
            .iter()
            .find(|r| r.name == *plural)
            .unwrap_or_else(|| panic!("{group_version} {plural} missing"));
        assert_eq!(resource.namespaced, *namespaced, "{plural}");
        assert_eq!(
            resource.short_names.clone().unwrap_or_default(),
            *short,
            "{plural}"
        );
        assert_eq!(
            resource.categories.clone().unwrap_or_default(),
            *categories,
            "{plural}"
        );
        assert_eq!(
            resource.verbs,
            [
                "create",
                "delete",
                "deletecollection",
                "get",
                "list",
                "patch",
                "update",
                "watch"
            ],
            "{plural}"
        );
        let mut found: Vec<&str> = list
            .resources
            .iter()
            .filter_map(|r| r.name.strip_prefix(&format!("{plural}/")))
            .collect();
        found.sort_unstable();
        let mut want = subresources.to_vec();
        want.sort_unstable();
        assert_eq!(found, want, "{plural} subresources");
    }
    // HorizontalPodAutoscalers are served as autoscaling/v2, and as autoscaling/v1 (the same
    // objects, converted: `autoscaling.rs`), v2 preferred.
    let autoscaling = within(client.list_api_groups()).await.unwrap();
    let group = autoscaling
        .groups
        .iter()
        .find(|g| g.name == "autoscaling")
        .unwrap();
    let versions: Vec<&str> = group.versions.iter().map(|v| v.version.as_str()).collect();
    assert_eq!(versions, ["v2", "v1"]);
}

#[tokio::test]
async fn namespaced_kinds_create_get_and_list_through_typed_apis() {
    let server = server().await;
    let client = server.client();
    let post = PostParams::default();

    let endpoints: Api<Endpoints> = Api::default_namespaced(client.clone());
    let created = within(endpoints.create(
        &post,
        &typed(json!({
            "metadata": {"name": "web"},
            "subsets": [{"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 80}]}]
        })),
    ))
    .await
    .unwrap();
    let port = &created.subsets.unwrap()[0].ports.clone().unwrap()[0];
    assert_eq!(port.protocol.as_deref(), Some("TCP"), "defaulted");

    let quotas: Api<ResourceQuota> = Api::default_namespaced(client.clone());
    let quota = within(quotas.create(
        &post,
        &typed(json!({
            "metadata": {"name": "compute"},
            "spec": {"hard": {"pods": "10"}},
            "status": {"hard": {"pods": "99"}}
        })),
    ))
    .await
    .unwrap();
    assert_eq!(
        quota.status,
        Some(Default::default()),
        "a create starts from an empty status"
    );

    let limits: Api<LimitRange> = Api::default_namespaced(client.clone());
    let limit = within(limits.create(
        &post,
        &typed(json!({
            "metadata": {"name": "defaults"},
            "spec": {"limits": [{"type": "Container", "max": {"cpu": "2"}, "min": {"memory": "64Mi"}}]}
        })),
    ))
    .await
    .unwrap();
    let item = &limit.spec.unwrap().limits[0];
    let default = item.default.clone().unwrap();
    assert_eq!(default["cpu"].0, "2", "the default limit is the max");
    let request = item.default_request.clone().unwrap();
    assert_eq!(request["cpu"].0, "2", "the default request is the default");
    assert_eq!(request["memory"].0, "64Mi", "or the min");

    let templates: Api<PodTemplate> = Api::default_namespaced(client.clone());
    let template = within(templates.create(
        &post,
        &typed(json!({
            "metadata": {"name": "tpl"},
            "template": {"metadata": {"labels": {"app": "tpl"}},
                         "spec": {"containers": [{"name": "app", "image": "nginx"}]}}
        })),
    ))
    .await
    .unwrap();
    assert_eq!(template.metadata.generation, Some(1));
    let pod_spec = template.template.unwrap().spec.unwrap();
    assert_eq!(pod_spec.restart_policy.as_deref(), Some("Always"));

    let slices: Api<EndpointSlice> = Api::default_namespaced(client.clone());
    let slice = within(slices.create(
        &post,
        &typed(json!({
            "metadata": {"name": "web-abc", "labels": {"kubernetes.io/service-name": "web"}},
            "addressType": "IPv4",
            "endpoints": [{"addresses": ["10.0.0.1"]}],
            "ports": [{"port": 80}]
        })),
    ))
    .await
    .unwrap();
    assert_eq!(slice.metadata.generation, Some(1));
    let port = &slice.ports.unwrap()[0];
    assert_eq!(port.name.as_deref(), Some(""));
    assert_eq!(port.protocol.as_deref(), Some("TCP"));

    let policies: Api<NetworkPolicy> = Api::default_namespaced(client.clone());
    let policy = within(policies.create(
        &post,
        &typed(json!({
            "metadata": {"name": "deny"},
            "spec": {"podSelector": {"matchLabels": {"app": "web"}},
                     "egress": [{"ports": [{"port": 53}]}]}
        })),
    ))
    .await
    .unwrap();
    let spec = policy.spec.unwrap();
    assert_eq!(spec.policy_types.unwrap(), ["Ingress", "Egress"]);
    assert_eq!(
        spec.egress.unwrap()[0].ports.clone().unwrap()[0]
            .protocol
            .as_deref(),
        Some("TCP")
    );

    let autoscalers: Api<HorizontalPodAutoscaler> = Api::default_namespaced(client.clone());
    let hpa = within(autoscalers.create(
        &post,
        &typed(json!({
            "metadata": {"name": "web"},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                     "maxReplicas": 5},
            "status": {"desiredReplicas": 3}
        })),
    ))
    .await
    .unwrap();
    let spec = hpa.spec.unwrap();
    assert_eq!(spec.min_replicas, Some(1));
    let metric = &spec.metrics.unwrap()[0];
    assert_eq!(metric.type_, "Resource");
    assert_eq!(
        metric.resource.as_ref().unwrap().target.average_utilization,
        Some(80)
    );
    let status = hpa.status.unwrap();
    assert_eq!(status.desired_replicas, 0, "a create's status is dropped");
    assert_eq!(hpa.metadata.generation, Some(1));

    let revisions: Api<ControllerRevision> = Api::default_namespaced(client.clone());
    within(revisions.create(
        &post,
        &typed(json!({
            "metadata": {"name": "web-1"}, "revision": 1, "data": {"spec": {}}
        })),
    ))
    .await
    .unwrap();

    let list = ListParams::default();
    // Beside the kubernetes Service's, which a cluster has.
    assert_eq!(
        names(&within(endpoints.list(&list)).await.unwrap().items),
        ["kubernetes", "web"]
    );
    assert_eq!(
        names(&within(quotas.list(&list)).await.unwrap().items),
        ["compute"]
    );
    assert_eq!(
        names(&within(limits.list(&list)).await.unwrap().items),
        ["defaults"]
    );
    assert_eq!(
        names(&within(templates.list(&list)).await.unwrap().items),
        ["tpl"]
    );
    assert_eq!(
        names(&within(slices.list(&list)).await.unwrap().items),
        ["kubernetes", "web-abc"]
    );
    assert_eq!(
        names(&within(policies.list(&list)).await.unwrap().items),
        ["deny"]
    );
    assert_eq!(
        names(&within(autoscalers.list(&list)).await.unwrap().items),
        ["web"]
    );
    assert_eq!(
        names(&within(revisions.list(&list)).await.unwrap().items),
        ["web-1"]
    );
    within(endpoints.get("web")).await.unwrap();
    within(revisions.get("web-1")).await.unwrap();
}

#[tokio::test]
async fn cluster_scoped_kinds_create_get_and_list_through_typed_apis() {
    let server = server().await;
    let client = server.client();
    let post = PostParams::default();

    let volumes: Api<PersistentVolume> = Api::all(client.clone());
    let volume = within(volumes.create(
        &post,
        &typed(json!({
            "metadata": {"name": "pv1"},
            "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                     "hostPath": {"path": "/data"}},
            "status": {"phase": "Bound"}
        })),
    ))
    .await
    .unwrap();
    let spec = volume.spec.unwrap();
    assert_eq!(
        spec.persistent_volume_reclaim_policy.as_deref(),
        Some("Retain")
    );
    assert_eq!(spec.volume_mode.as_deref(), Some("Filesystem"));
    let status = volume.status.unwrap();
    assert_eq!(status.phase.as_deref(), Some("Pending"), "not the client's");
    assert!(status.last_phase_transition_time.is_some());
    assert_eq!(volume.metadata.namespace, None);

    // The status strategy keeps the phase's transition time, or sets it when the phase
    // changes.
    let set_status = async |status: Value| {
        let mut pv = serde_json::to_value(within(volumes.get("pv1")).await.unwrap()).unwrap();
        pv["status"] = status;
        within(volumes.replace_status("pv1", &post, &typed::<PersistentVolume>(pv)))
            .await
            .unwrap()
            .status
            .unwrap()
    };
    let long_ago = "2020-01-01T00:00:00Z";
    let status =
        set_status(json!({"phase": "Available", "lastPhaseTransitionTime": long_ago})).await;
    assert_eq!(
        status.last_phase_transition_time.unwrap().0.to_string(),
        long_ago
    );
    let status = set_status(json!({"phase": "Available"})).await;
    assert_eq!(
        status.last_phase_transition_time.unwrap().0.to_string(),
        long_ago,
        "the phase did not change"
    );
    let status = set_status(json!({"phase": "Released"})).await;
    assert_ne!(
        status.last_phase_transition_time.unwrap().0.to_string(),
        long_ago,
        "the phase changed"
    );

    let classes: Api<StorageClass> = Api::all(client.clone());
    let class = within(classes.create(
        &post,
        &typed(json!({"metadata": {"name": "fast"}, "provisioner": "example.com/fast"})),
    ))
    .await
    .unwrap();
    assert_eq!(class.reclaim_policy.as_deref(), Some("Delete"));
    assert_eq!(class.volume_binding_mode.as_deref(), Some("Immediate"));

    let priorities: Api<PriorityClass> = Api::all(client.clone());
    let priority = within(priorities.create(
        &post,
        &typed(json!({"metadata": {"name": "high"}, "value": 1000})),
    ))
    .await
    .unwrap();
    assert_eq!(
        priority.preemption_policy.as_deref(),
        Some("PreemptLowerPriority")
    );

    let ingress_classes: Api<IngressClass> = Api::all(client.clone());
    let ingress_class = within(ingress_classes.create(
        &post,
        &typed(json!({
            "metadata": {"name": "nginx"},
            "spec": {"controller": "k8s.io/ingress-nginx",
                     "parameters": {"kind": "Params", "name": "p", "apiGroup": "example.com"}}
        })),
    ))
    .await
    .unwrap();
    assert_eq!(ingress_class.metadata.generation, Some(1));
    assert_eq!(
        ingress_class
            .spec
            .unwrap()
            .parameters
            .unwrap()
            .scope
            .as_deref(),
        Some("Cluster")
    );

    let list = ListParams::default();
    assert_eq!(
        names(&within(volumes.list(&list)).await.unwrap().items),
        ["pv1"]
    );
    assert_eq!(
        names(&within(classes.list(&list)).await.unwrap().items),
        ["fast"]
    );
    assert_eq!(
        names(&within(priorities.list(&list)).await.unwrap().items),
        ["high", "system-cluster-critical", "system-node-critical"],
        "with the two system classes every cluster has"
    );
    assert_eq!(
        names(&within(ingress_classes.list(&list)).await.unwrap().items),
        ["nginx"]
    );
    within(volumes.get("pv1")).await.unwrap();

    // The Table of PersistentVolumes, as `kubectl get pv` asks for it.
    let table = raw(
        &server,
        "GET",
        "/api/v1/persistentvolumes",
        &[(
            "Accept",
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
        )],
        b"",
    )
    .await
    .json();
    let columns = column_names(&table);
    assert_eq!(
        columns,
        [
            "Name",
            "Capacity",
            "Access Modes",
            "Reclaim Policy",
            "Status",
            "Claim",
            "StorageClass",
            "VolumeAttributesClass",
            "Reason",
            "Age",
            "VolumeMode"
        ]
    );
    let cells = &table["rows"][0]["cells"];
    assert_eq!(cells[0], "pv1");
    assert_eq!(cells[1], "1Gi");
    assert_eq!(cells[2], "RWO");
    assert_eq!(cells[3], "Retain");
    assert_eq!(cells[4], "Released");
    assert_eq!(cells[7], "<unset>");
    assert_eq!(cells[10], "Filesystem");
}

#[tokio::test]
async fn replication_controllers_default_track_generation_and_scale() {
    let server = server().await;
    let controllers: Api<ReplicationController> = Api::default_namespaced(server.client());
    let created = within(controllers.create(
        &PostParams::default(),
        &typed(json!({
            "metadata": {"name": "web"},
            "spec": {"template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "app", "image": "nginx"}]}}},
            "status": {"replicas": 7}
        })),
    ))
    .await
    .unwrap();
    assert_eq!(created.metadata.generation, Some(1));
    assert_eq!(
        created.metadata.labels.clone().unwrap()["app"],
        "web",
        "labels from the template"
    );
    let spec = created.spec.clone().unwrap();
    assert_eq!(spec.replicas, Some(1));
    assert_eq!(spec.selector.unwrap()["app"], "web");
    assert_eq!(created.status.unwrap().replicas, 0);

    let scale = within(controllers.get_scale("web")).await.unwrap();
    assert_eq!(scale.spec.unwrap().replicas, Some(1));
    assert_eq!(scale.status.unwrap().selector.as_deref(), Some("app=web"));
    let patch = json!({"spec": {"replicas": 3}});
    within(controllers.patch_scale("web", &PatchParams::default(), &Patch::Merge(&patch)))
        .await
        .unwrap();
    let web = within(controllers.get("web")).await.unwrap();
    assert_eq!(web.spec.unwrap().replicas, Some(3));
    assert_eq!(web.metadata.generation, Some(2));

    // `status.replicas` is a selectable field.
    let zero = ListParams::default().fields("status.replicas=0");
    assert_eq!(
        names(&within(controllers.list(&zero)).await.unwrap().items),
        ["web"]
    );
    let two = ListParams::default().fields("status.replicas=2");
    assert!(
        within(controllers.list(&two))
            .await
            .unwrap()
            .items
            .is_empty()
    );
}

#[tokio::test]
async fn services_select_by_type_and_cluster_ip() {
    let server = server().await;
    let services: Api<Service> = Api::default_namespaced(server.client());
    for (name, spec) in [
        ("plain", json!({"ports": [{"port": 80}]})),
        (
            "nodes",
            json!({"type": "NodePort", "ports": [{"port": 80}]}),
        ),
        (
            "headless",
            json!({"clusterIP": "None", "ports": [{"port": 80}]}),
        ),
    ] {
        within(services.create(
            &PostParams::default(),
            &typed(json!({"metadata": {"name": name}, "spec": spec})),
        ))
        .await
        .unwrap();
    }
    let select = async |selector: &str| {
        let list = ListParams::default().fields(selector);
        names(&within(services.list(&list)).await.unwrap().items)
    };
    // The `kubernetes` Service every cluster has is a ClusterIP one.
    assert_eq!(
        select("spec.type=ClusterIP").await,
        ["headless", "kubernetes", "plain"]
    );
    assert_eq!(select("spec.type=NodePort").await, ["nodes"]);
    assert_eq!(
        select("spec.type!=NodePort").await,
        ["headless", "kubernetes", "plain"]
    );
    assert_eq!(select("spec.clusterIP=10.96.0.1").await, ["kubernetes"]);
    assert_eq!(select("spec.clusterIP=None").await, ["headless"]);
    let plain = within(services.get("plain")).await.unwrap();
    let ip = plain.spec.unwrap().cluster_ip.unwrap();
    assert_eq!(select(&format!("spec.clusterIP={ip}")).await, ["plain"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_apply_prune_and_get_the_new_kinds() {
    let Some((_server, kubectl)) = started().await else {
        return;
    };
    let dir = std::env::temp_dir().join(format!(
        "informer-prune-test-{}-{}",
        std::process::id(),
        _server.address().port()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let config_map = |name: &str| {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: default\n  labels:\n    app: demo\ndata:\n  k: v\n"
        )
    };
    std::fs::write(dir.join("a.yaml"), config_map("a")).unwrap();
    std::fs::write(dir.join("b.yaml"), config_map("b")).unwrap();
    std::fs::write(
        dir.join("rc.yaml"),
        "apiVersion: v1\nkind: ReplicationController\nmetadata:\n  name: web\n  namespace: default\n  labels:\n    app: demo\nspec:\n  replicas: 2\n  selector:\n    app: web\n  template:\n    metadata:\n      labels:\n        app: web\n    spec:\n      containers:\n      - name: app\n        image: nginx\n",
    )
    .unwrap();
    let dir_arg = dir.to_str().unwrap();
    let out = kubectl
        .ok(&["apply", "--prune", "-l", "app=demo", "-f", dir_arg])
        .await;
    assert!(out.contains("configmap/b created"), "{out}");
    assert!(out.contains("replicationcontroller/web created"), "{out}");

    std::fs::remove_file(dir.join("b.yaml")).unwrap();
    let out = kubectl
        .ok(&["apply", "--prune", "-l", "app=demo", "-f", dir_arg])
        .await;
    assert!(out.contains("configmap/b pruned"), "{out}");
    let out = kubectl
        .ok(&["get", "configmaps", "-l", "app=demo", "-o", "name"])
        .await;
    assert_eq!(out.trim(), "configmap/a");

    // The printers' columns, and short names.
    let out = kubectl.ok(&["get", "rc", "web"]).await;
    assert!(out.starts_with("NAME"), "{out}");
    assert!(out.contains("DESIRED"), "{out}");
    let row = out.lines().nth(1).unwrap();
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(&cells[..4], ["web", "2", "0", "0"], "{out}");
    kubectl.ok(&["scale", "rc", "web", "--replicas=4"]).await;
    let out = kubectl
        .ok(&["get", "rc", "web", "-o", "jsonpath={.spec.replicas}"])
        .await;
    assert_eq!(out, "4");

    kubectl
        .ok(&[
            "create",
            "priorityclass",
            "high",
            "--value=1000",
            "--description=important",
        ])
        .await;
    let out = kubectl.ok(&["get", "pc"]).await;
    assert!(out.contains("PREEMPTIONPOLICY"), "{out}");
    assert!(out.contains("PreemptLowerPriority"), "{out}");
    let out = kubectl.ok(&["get", "all", "-o", "name"]).await;
    assert!(out.contains("replicationcontroller/web"), "{out}");

    let _ = std::fs::remove_dir_all(&dir);
    kubectl.cleanup();
}

/// kube-apiserver 1.33+ warns on every request of core v1 Endpoints, whatever its verb or
/// outcome (`deprecation.WarningMessage`, `staging/src/k8s.io/apiserver/pkg/endpoints/
/// deprecation/deprecation.go`, added for all of the resource's handlers in
/// `endpoints/installer.go`): `kubectl get endpoints` prints `Warning: v1 Endpoints is
/// deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice`. EndpointSlices get none.
#[tokio::test]
async fn core_endpoints_requests_carry_the_deprecation_warning() {
    let server = server().await;
    let expected =
        "299 - \"v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice\"";
    let list = raw(
        &server,
        "GET",
        "/api/v1/namespaces/default/endpoints",
        &[],
        b"",
    )
    .await;
    assert_eq!(list.status, 200);
    assert_eq!(list.header("warning"), Some(expected));
    let created = raw(
        &server,
        "POST",
        "/api/v1/namespaces/default/endpoints",
        &[("Content-Type", "application/json")],
        br#"{"apiVersion":"v1","kind":"Endpoints","metadata":{"name":"web"}}"#,
    )
    .await;
    assert_eq!(created.status, 201);
    assert_eq!(created.header("warning"), Some(expected));
    let missing = raw(&server, "GET", "/api/v1/endpoints?limit=abc", &[], b"").await;
    assert_eq!(missing.status, 400);
    assert_eq!(missing.header("warning"), Some(expected));
    let missing = raw(
        &server,
        "GET",
        "/api/v1/namespaces/default/endpoints/nope",
        &[],
        b"",
    )
    .await;
    missing.assert_status(404, "NotFound");
    assert_eq!(missing.header("warning"), Some(expected));
    let slices = raw(
        &server,
        "GET",
        "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices",
        &[],
        b"",
    )
    .await;
    assert_eq!(slices.status, 200);
    assert_eq!(slices.header("warning"), None);
}

/// A cluster's `kubernetes` Service comes with the Endpoints and the EndpointSlice that
/// kube-apiserver's endpoint reconciler keeps (`pkg/controlplane/reconcilers/
/// endpointsadapter.go`): the server's address and port, named `https`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_kubernetes_service_has_its_endpoints_and_endpoint_slice() {
    let Some((server, kubectl)) = started().await else {
        return;
    };
    let client = server.client();
    let port = i32::from(server.address().port());
    let ip = server.address().ip().to_string();
    let services: Api<Service> = Api::default_namespaced(client.clone());
    let service = within(services.get("kubernetes")).await.unwrap();
    let service_port = &service.spec.unwrap().ports.unwrap()[0];
    assert_eq!(
        (service_port.name.as_deref(), service_port.port),
        (Some("https"), 443)
    );

    let endpoints: Api<Endpoints> = Api::default_namespaced(client.clone());
    let kubernetes = within(endpoints.get("kubernetes")).await.unwrap();
    assert_eq!(
        kubernetes.metadata.labels.unwrap()["endpointslice.kubernetes.io/skip-mirror"],
        "true"
    );
    let subset = &kubernetes.subsets.unwrap()[0];
    assert_eq!(subset.addresses.as_ref().unwrap()[0].ip, ip);
    let endpoint_port = &subset.ports.as_ref().unwrap()[0];
    assert_eq!(
        (
            endpoint_port.name.as_deref(),
            endpoint_port.port,
            endpoint_port.protocol.as_deref()
        ),
        (Some("https"), port, Some("TCP"))
    );

    let slices: Api<EndpointSlice> = Api::default_namespaced(client.clone());
    let listed =
        within(slices.list(&ListParams::default().labels("kubernetes.io/service-name=kubernetes")))
            .await
            .unwrap();
    assert_eq!(names(&listed.items), ["kubernetes"]);
    let slice = &listed.items[0];
    assert_eq!(slice.address_type, "IPv4");
    assert_eq!(slice.endpoints[0].addresses, std::slice::from_ref(&ip));
    assert_eq!(
        slice.endpoints[0].conditions.as_ref().unwrap().ready,
        Some(true)
    );
    let slice_port = &slice.ports.as_ref().unwrap()[0];
    assert_eq!(
        (slice_port.name.as_deref(), slice_port.port),
        (Some("https"), Some(port))
    );
    let labels = slice.metadata.labels.clone().unwrap();
    assert_eq!(labels.len(), 1, "{labels:?}");

    let out = kubectl
        .ok(&["get", "endpoints,endpointslices", "-n", "default"])
        .await;
    let address = format!("{ip}:{port}");
    assert!(
        out.lines()
            .any(|l| l.starts_with("endpoints/kubernetes") && l.contains(&address)),
        "{out}"
    );
    assert!(
        out.lines().any(|l| {
            let cells: Vec<&str> = l.split_whitespace().collect();
            cells.len() > 4
                && cells[..4]
                    == [
                        "endpointslice.discovery.k8s.io/kubernetes",
                        "IPv4",
                        &port.to_string(),
                        &ip,
                    ]
        }),
        "{out}"
    );
    kubectl.cleanup();
}

#[tokio::test]
async fn a_headless_service_without_a_selector_defaults_to_both_ip_families() {
    // `initIPFamilyFields`: a headless Service without a selector defaults to
    // `RequireDualStack` and gets both families even on a single-stack cluster; any other
    // Service is `SingleStack`, and one asking for dual-stack or IPv6 here is refused.
    let server = server().await;
    let services: Api<Service> = Api::default_namespaced(server.client());
    let create = async |name: &str, spec: Value| {
        within(services.create(
            &PostParams::default(),
            &typed(json!({"metadata": {"name": name}, "spec": spec})),
        ))
        .await
    };
    let families = |service: &Service| {
        let spec = service.spec.clone().unwrap();
        (
            spec.ip_family_policy.unwrap(),
            spec.ip_families.unwrap_or_default(),
        )
    };
    let headless = create(
        "external",
        json!({"clusterIP": "None", "ports": [{"port": 9092}]}),
    )
    .await
    .unwrap();
    assert_eq!(
        families(&headless),
        (
            "RequireDualStack".into(),
            vec!["IPv4".into(), "IPv6".into()]
        )
    );
    let single = create(
        "external-single",
        json!({"clusterIP": "None", "ipFamilyPolicy": "SingleStack", "ports": [{"port": 1}]}),
    )
    .await
    .unwrap();
    assert_eq!(
        families(&single),
        ("SingleStack".into(), vec!["IPv4".into()])
    );
    let selected = create(
        "governing",
        json!({"clusterIP": "None", "selector": {"app": "db"}, "ports": [{"port": 5432}]}),
    )
    .await
    .unwrap();
    assert_eq!(
        families(&selected),
        ("SingleStack".into(), vec!["IPv4".into()])
    );
    let err = create(
        "dual",
        json!({"ipFamilyPolicy": "RequireDualStack", "ipFamilies": ["IPv4", "IPv6"], "ports": [{"port": 80}]}),
    )
    .await
    .unwrap_err();
    let kube::Error::Api(status) = err else {
        panic!("{err}")
    };
    assert_eq!(status.code, 422);
    assert_eq!(
        status.message,
        "Service \"dual\" is invalid: [spec.ipFamilyPolicy: Invalid value: \"RequireDualStack\": this cluster is not configured for dual-stack services, spec.ipFamilies[1]: Invalid value: \"IPv6\": not configured on this cluster]"
    );
    // A replace that leaves the policy out keeps the one the Service has.
    let mut replaced = headless.clone();
    replaced.spec.as_mut().unwrap().ip_family_policy = None;
    replaced.spec.as_mut().unwrap().ip_families = None;
    let replaced = within(services.replace("external", &PostParams::default(), &replaced))
        .await
        .unwrap();
    assert_eq!(families(&replaced), families(&headless));
}
