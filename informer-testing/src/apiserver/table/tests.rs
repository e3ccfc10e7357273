use super::*;
use crate::apiserver::resource::Registry;
use crate::apiserver::time::format_time;

/// A `Table` of objects with list metadata when given, rows holding their metadata.
fn table<T: Borrow<Value>>(
    resource: &ResourceType,
    objects: &[T],
    revision: Option<u64>,
    continue_token: Option<&str>,
) -> Value {
    let mut metadata = json!({});
    if let Some(revision) = revision {
        metadata["resourceVersion"] = json!(revision.to_string());
    }
    if let Some(token) = continue_token {
        metadata["continue"] = json!(token);
    }
    table_of(resource, objects, metadata, IncludeObject::Metadata, true)
}

#[test]
fn printer_columns_replace_age_and_type_their_cells() {
    let mut registry = Registry::builtin();
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "additionalPrinterColumns": [
                    {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
                    {"name": "First", "type": "string", "jsonPath": ".spec.items[0].name",
                        "description": "the first item"}],
                "schema": {"openAPIV3Schema": {"type": "object",
                    "x-kubernetes-preserve-unknown-fields": true}}}]}
    });
    registry.install(
        "widgets.example.com",
        crate::apiserver::crd::served_types(&crd, 0).unwrap(),
    );
    let widgets = registry.by_path("example.com", "v1", "widgets").unwrap();
    let widget = json!({"metadata": {"name": "w"},
        "spec": {"size": 2.0, "items": [{"name": "a"}]}});
    let table = table(&widgets, &[widget], None, None);
    let names: Vec<&str> = table["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Name", "Size", "First"]);
    assert_eq!(
        table["columnDefinitions"][1]["description"],
        "Custom resource definition column (in JSONPath format): .spec.size"
    );
    assert_eq!(
        table["columnDefinitions"][2]["description"],
        "the first item"
    );
    assert_eq!(table["rows"][0]["cells"], json!(["w", 2, "a"]));
    assert_eq!(printer_cell("integer", Some(&json!("x"))), Value::Null);
    assert_eq!(printer_cell("boolean", None), Value::Null);
    assert_eq!(
        printer_cell("date", Some(&json!("bad"))),
        json!("<invalid>")
    );
}

/// As apimachinery's `duration.HumanDuration` (its own test cases among them).
#[test]
fn durations() {
    let day = 86_400;
    for (seconds, printed) in [
        (-2, "<invalid>"),
        (-1, "0s"),
        (0, "0s"),
        (5, "5s"),
        (119, "119s"),
        (130, "2m10s"),
        (300, "5m"),
        (599, "9m59s"),
        (600, "10m"),
        (3600, "60m"),
        (3 * 3600, "3h"),
        (4 * 3600 + 60, "4h1m"),
        (8 * 3600, "8h"),
        (47 * 3600 + 59 * 60, "47h"),
        (2 * day, "2d"),
        (3 * day, "3d"),
        (3 * day + 4 * 3600, "3d4h"),
        (8 * day, "8d"),
        (729 * day, "729d"),
        (730 * day, "2y"),
        (936 * day, "2y206d"),
        (8 * 365 * day - 1, "7y364d"),
        (8 * 365 * day, "8y"),
        (20 * 365 * day, "20y"),
    ] {
        assert_eq!(human_duration(seconds), printed, "{seconds} s");
    }
}

/// As the CRD table convertor writes its cells: a `number` is a float64, written without a
/// fraction when it has none; a `string` column prints maps and lists as `json.Marshal`.
#[test]
fn number_and_string_printer_cells_are_written_as_go_writes_them() {
    assert_eq!(
        serde_json::to_string(&printer_cell("number", Some(&json!(100_000_000)))).unwrap(),
        "100000000"
    );
    assert_eq!(printer_cell("number", Some(&json!(0.5))), json!(0.5));
    assert_eq!(
        printer_cell("string", Some(&json!({"b": 1, "a": "x<y"}))),
        json!("{\"a\":\"x\\u003cy\",\"b\":1}")
    );
    assert_eq!(
        printer_cell("string", Some(&json!([1, "two"]))),
        json!("[1,\"two\"]")
    );
}

#[test]
fn date_printer_cells_of_an_unset_time_are_unknown() {
    assert_eq!(printer_cell("date", Some(&json!(""))), json!("<unknown>"));
    assert_eq!(
        printer_cell("date", Some(&json!("null"))),
        json!("<unknown>")
    );
    let future = jiff::Timestamp::now()
        .checked_add(jiff::SignedDuration::from_hours(1))
        .unwrap();
    assert_eq!(
        printer_cell("date", Some(&json!(future.to_string()))),
        json!("<invalid>")
    );
}

#[test]
fn pod_rows() {
    let pods = Registry::builtin().by_path("", "v1", "pods").unwrap();
    let pod = json!({
        "metadata": {"name": "web", "creationTimestamp": format_time(jiff::Timestamp::UNIX_EPOCH)},
        "spec": {"containers": [{"name": "a"}, {"name": "b"}]},
        "status": {"phase": "Running", "containerStatuses": [{"ready": true, "restartCount": 2}]}
    });
    let table = table(&pods, &[pod], Some(5), None);
    assert_eq!(table["rows"][0]["cells"][0], "web");
    assert_eq!(table["rows"][0]["cells"][1], "1/2");
    assert_eq!(table["rows"][0]["cells"][2], "Running");
    assert_eq!(table["rows"][0]["cells"][3], 2);
    assert_eq!(table["rows"][0]["cells"][5], "<none>", "no IP yet");
    assert_eq!(table["rows"][0]["cells"][8], "<none>", "no readiness gates");
    assert_eq!(table["metadata"]["resourceVersion"], "5");
    let event = event_as_table(
        &pods,
        Bytes::from_static(b"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"x\"}}}\n"),
        IncludeObject::Metadata,
        &mut true,
    );
    let event: Value = serde_json::from_slice(&event).unwrap();
    assert_eq!(event["object"]["kind"], "Table");
    assert_eq!(event["object"]["rows"][0]["cells"][0], "x");
}

/// The column names of `table` and the cells of its first row.
fn columns_and_cells(plural: &str, group: &str, object: Value) -> (Vec<String>, Vec<Value>) {
    let version = "v1";
    let resource = Registry::builtin().by_path(group, version, plural).unwrap();
    let table = table(&resource, &[object], None, None);
    let names = table["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap().to_string())
        .collect();
    (names, table["rows"][0]["cells"].as_array().unwrap().clone())
}

#[test]
fn deployment_rows_show_ready_of_desired_then_the_template_with_wide_output() {
    let (names, cells) = columns_and_cells(
        "deployments",
        "apps",
        json!({"metadata": {"name": "web"},
            "spec": {"replicas": 3,
                "selector": {"matchLabels": {"tier": "front", "app": "web"},
                    "matchExpressions": [{"key": "env", "operator": "In", "values": ["prod", "dev"]}]},
                "template": {"spec": {"containers": [
                    {"name": "a", "image": "nginx:1.27"}, {"name": "b", "image": "busybox"}]}}},
            "status": {"readyReplicas": 2, "updatedReplicas": 3}}),
    );
    assert_eq!(
        names,
        [
            "Name",
            "Ready",
            "Up-to-date",
            "Available",
            "Age",
            "Containers",
            "Images",
            "Selector"
        ]
    );
    assert_eq!(cells[1], "2/3");
    assert_eq!(cells[2], 3);
    assert_eq!(cells[3], 0, "a missing count is Go's zero");
    assert_eq!(cells[5], "a,b");
    assert_eq!(cells[6], "nginx:1.27,busybox");
    assert_eq!(cells[7], "app=web,env in (dev,prod),tier=front");
}

#[test]
fn a_deployment_without_replicas_wants_one() {
    let (_, cells) = columns_and_cells("deployments", "apps", json!({"metadata": {"name": "d"}}));
    assert_eq!(cells[1], "0/1");
    assert_eq!(cells[7], "<none>");
}

#[test]
fn replica_set_and_stateful_set_rows() {
    let (names, cells) = columns_and_cells(
        "replicasets",
        "apps",
        json!({"metadata": {"name": "rs"}, "spec": {"replicas": 2},
            "status": {"replicas": 2, "readyReplicas": 1}}),
    );
    assert_eq!(names[..5], ["Name", "Desired", "Current", "Ready", "Age"]);
    assert_eq!(cells[1..4], [json!(2), json!(2), json!(1)]);
    let (names, cells) = columns_and_cells(
        "statefulsets",
        "apps",
        json!({"metadata": {"name": "db"}, "spec": {"replicas": 3},
            "status": {"readyReplicas": 3}}),
    );
    assert_eq!(names, ["Name", "Ready", "Age", "Containers", "Images"]);
    assert_eq!(cells[1], "3/3");
}

#[test]
fn service_rows_print_ports_node_ports_and_external_addresses() {
    let (names, cells) = columns_and_cells(
        "services",
        "",
        json!({"metadata": {"name": "lb"},
            "spec": {"type": "LoadBalancer", "clusterIP": "10.96.0.7", "selector": {"app": "web"},
                "ports": [{"port": 80, "nodePort": 30080, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}]}}),
    );
    assert_eq!(
        names,
        [
            "Name",
            "Type",
            "Cluster-IP",
            "External-IP",
            "Port(s)",
            "Age",
            "Selector"
        ]
    );
    assert_eq!(cells[1], "LoadBalancer");
    assert_eq!(cells[2], "10.96.0.7");
    assert_eq!(cells[3], "<pending>", "a load balancer with no ingress yet");
    assert_eq!(cells[4], "80:30080/TCP,53/UDP");
    assert_eq!(cells[6], "app=web");
    let (_, cells) = columns_and_cells(
        "services",
        "",
        json!({"metadata": {"name": "ext"},
            "spec": {"type": "ExternalName", "externalName": "example.com"}}),
    );
    assert_eq!(cells[2], "<none>");
    assert_eq!(cells[3], "example.com");
    assert_eq!(cells[4], "<none>");
}

#[test]
fn config_map_secret_and_lease_rows() {
    let (names, cells) = columns_and_cells(
        "configmaps",
        "",
        json!({"metadata": {"name": "c"}, "data": {"a": "1", "b": "2"}, "binaryData": {"c": "AA=="}}),
    );
    assert_eq!(names, ["Name", "Data", "Age"]);
    assert_eq!(cells[1], 3);
    let (names, cells) = columns_and_cells(
        "secrets",
        "",
        json!({"metadata": {"name": "s"}, "type": "Opaque", "data": {"a": "MQ=="}}),
    );
    assert_eq!(names, ["Name", "Type", "Data", "Age"]);
    assert_eq!(cells[1..3], [json!("Opaque"), json!(1)]);
    let (names, cells) = columns_and_cells(
        "leases",
        "coordination.k8s.io",
        json!({"metadata": {"name": "l"}, "spec": {"holderIdentity": "pod-a"}}),
    );
    assert_eq!(names, ["Name", "Holder", "Age"]);
    assert_eq!(cells[1], "pod-a");
}

#[test]
fn pod_wide_columns_show_the_ip_the_node_and_readiness_gates() {
    let (names, cells) = columns_and_cells(
        "pods",
        "",
        json!({"metadata": {"name": "p"},
            "spec": {"nodeName": "node-1", "containers": [{"name": "a"}],
                "readinessGates": [{"conditionType": "example.com/lb"}, {"conditionType": "example.com/dns"}]},
            "status": {"podIP": "10.0.0.5", "conditions": [
                {"type": "example.com/lb", "status": "True"},
                {"type": "example.com/dns", "status": "False"},
                {"type": "Ready", "status": "True"}]}}),
    );
    assert_eq!(
        names[5..],
        ["IP", "Node", "Nominated Node", "Readiness Gates"]
    );
    assert_eq!(
        cells[5..],
        [
            json!("10.0.0.5"),
            json!("node-1"),
            json!("<none>"),
            json!("1/2")
        ]
    );
}

#[test]
fn event_rows_say_when_what_and_who_as_kubectl_get_events() {
    let long_ago = format_time(jiff::Timestamp::UNIX_EPOCH);
    let (names, cells) = columns_and_cells(
        "events",
        "",
        json!({"metadata": {"name": "web.17"},
            "involvedObject": {"kind": "Pod", "name": "web", "fieldPath": "spec.containers{app}"},
            "reason": "Pulled", "type": "Normal", "message": " pulled \n",
            "source": {"component": "kubelet", "host": "node-1"},
            "firstTimestamp": long_ago, "lastTimestamp": long_ago, "count": 3}),
    );
    assert_eq!(
        names,
        [
            "Last Seen",
            "Type",
            "Reason",
            "Object",
            "Subobject",
            "Source",
            "Message",
            "First Seen",
            "Count",
            "Name"
        ]
    );
    // Over eight years ago: `HumanDuration` counts years alone.
    assert!(cells[0].as_str().unwrap().ends_with('y'), "{cells:?}");
    assert_eq!(
        cells[1..7],
        [
            json!("Normal"),
            json!("Pulled"),
            json!("pod/web"),
            json!("spec.containers{app}"),
            json!("kubelet, node-1"),
            json!("pulled")
        ]
    );
    assert_eq!(cells[8], 3);
    assert_eq!(cells[9], "web.17");
    // A new-style event: no timestamps but eventTime, no count, a reporting controller.
    let (_, cells) = columns_and_cells(
        "events",
        "",
        json!({"metadata": {"name": "e"}, "involvedObject": {"kind": "Node"},
            "eventTime": "2020-01-01T00:00:00.000000Z", "reportingComponent": "scheduler"}),
    );
    assert_eq!(cells[0], cells[7], "last seen falls back to first seen");
    assert_ne!(cells[0], "<unknown>");
    assert_eq!(cells[3], "node");
    assert_eq!(cells[5], "scheduler");
    assert_eq!(cells[8], 1);
}

#[test]
fn job_rows_show_status_completions_and_duration() {
    let (names, cells) = columns_and_cells(
        "jobs",
        "batch",
        json!({"metadata": {"name": "once"},
            "spec": {"completions": 3, "selector": {"matchLabels": {"a": "b"}},
                "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}},
            "status": {"succeeded": 3, "startTime": "2026-01-01T00:00:00Z",
                "completionTime": "2026-01-01T00:01:30Z",
                "conditions": [{"type": "Complete", "status": "True"}]}}),
    );
    assert_eq!(
        names,
        [
            "Name",
            "Status",
            "Completions",
            "Duration",
            "Age",
            "Containers",
            "Images",
            "Selector"
        ]
    );
    assert_eq!(cells[1..4], [json!("Complete"), json!("3/3"), json!("90s")]);
    assert_eq!(cells[5..], [json!("c"), json!("busybox"), json!("a=b")]);
    let (_, running) = columns_and_cells(
        "jobs",
        "batch",
        json!({"metadata": {"name": "many"}, "spec": {"parallelism": 4}}),
    );
    assert_eq!(
        running[1..4],
        [json!("Running"), json!("0/1 of 4"), json!("")]
    );
}

#[test]
fn cron_job_and_daemon_set_rows() {
    let (names, cells) = columns_and_cells(
        "cronjobs",
        "batch",
        json!({"metadata": {"name": "nightly"},
            "spec": {"schedule": "0 3 * * *", "suspend": true,
                "jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}}},
            "status": {"active": [{"name": "nightly-1"}]}}),
    );
    assert_eq!(
        names[1..6],
        ["Schedule", "Timezone", "Suspend", "Active", "Last Schedule"]
    );
    assert_eq!(
        cells[1..6],
        [
            json!("0 3 * * *"),
            json!("<none>"),
            json!("True"),
            json!(1),
            json!("<none>")
        ]
    );
    assert_eq!(cells[7..9], [json!("c"), json!("i")]);
    let (names, cells) = columns_and_cells(
        "daemonsets",
        "apps",
        json!({"metadata": {"name": "agent"},
            "spec": {"template": {"spec": {"nodeSelector": {"zone": "a", "os": "linux"}}}},
            "status": {"desiredNumberScheduled": 3, "numberReady": 2}}),
    );
    assert_eq!(names[6], "Node Selector");
    assert_eq!(
        cells[1..7],
        [
            json!(3),
            json!(0),
            json!(2),
            json!(0),
            json!(0),
            json!("os=linux,zone=a")
        ]
    );
}

#[test]
fn binding_rows_name_their_role_and_subjects_by_kind() {
    let (names, cells) = columns_and_cells(
        "rolebindings",
        "rbac.authorization.k8s.io",
        json!({"metadata": {"name": "b"},
            "roleRef": {"kind": "Role", "name": "reader"},
            "subjects": [{"kind": "User", "name": "alice"}, {"kind": "User", "name": "bob"},
                {"kind": "Group", "name": "devs"},
                {"kind": "ServiceAccount", "name": "bot", "namespace": "ci"}]}),
    );
    assert_eq!(
        names,
        ["Name", "Role", "Age", "Users", "Groups", "ServiceAccounts"]
    );
    assert_eq!(cells[1], "Role/reader");
    assert_eq!(
        cells[3..],
        [json!("alice, bob"), json!("devs"), json!("ci/bot")]
    );
}

#[test]
fn node_claim_ingress_and_budget_rows() {
    let (_, node) = columns_and_cells(
        "nodes",
        "",
        json!({"metadata": {"name": "n", "labels": {"node-role.kubernetes.io/worker": "", "kubernetes.io/role": "infra"}},
            "spec": {"unschedulable": true},
            "status": {"conditions": [{"type": "Ready", "status": "True"}],
                "nodeInfo": {"kubeletVersion": "v1.36.3"},
                "addresses": [{"type": "InternalIP", "address": "10.0.0.5"}]}}),
    );
    assert_eq!(
        node[1..6],
        [
            json!("Ready,SchedulingDisabled"),
            json!("infra,worker"),
            node[3].clone(),
            json!("v1.36.3"),
            json!("10.0.0.5")
        ]
    );
    let (_, claim) = columns_and_cells(
        "persistentvolumeclaims",
        "",
        json!({"metadata": {"name": "data"},
            "spec": {"volumeName": "pv-1", "storageClassName": "fast"},
            "status": {"phase": "Bound", "capacity": {"storage": "10Gi"},
                "accessModes": ["ReadWriteMany", "ReadWriteOnce"]}}),
    );
    assert_eq!(
        claim[1..7],
        [
            json!("Bound"),
            json!("pv-1"),
            json!("10Gi"),
            json!("RWO,RWX"),
            json!("fast"),
            json!("<unset>")
        ]
    );
    let (_, ingress) = columns_and_cells(
        "ingresses",
        "networking.k8s.io",
        json!({"metadata": {"name": "web"},
            "spec": {"ingressClassName": "nginx", "tls": [{}],
                "rules": [{"host": "a"}, {"host": "b"}, {"host": "c"}, {"host": "d"}, {}]},
            "status": {"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}, {"hostname": "lb.example"}]}}}),
    );
    assert_eq!(
        ingress[1..5],
        [
            json!("nginx"),
            json!("a,b,c + 1 more..."),
            json!("1.2.3.4,lb.example"),
            json!("80, 443")
        ]
    );
    let (_, budget) = columns_and_cells(
        "poddisruptionbudgets",
        "policy",
        json!({"metadata": {"name": "pdb"}, "spec": {"maxUnavailable": "25%"}, "status": {"disruptionsAllowed": 2}}),
    );
    assert_eq!(budget[1..4], [json!("N/A"), json!("25%"), json!(2)]);
}

/// The cells of the first row of `object` served at `group/version/plural`.
fn cells_of(group: &str, version: &str, plural: &str, object: Value) -> Vec<Value> {
    let resource = Registry::builtin().by_path(group, version, plural).unwrap();
    let table = table(&resource, &[object], None, None);
    let columns = table["columnDefinitions"].as_array().unwrap().len();
    let cells = table["rows"][0]["cells"].as_array().unwrap().clone();
    assert_eq!(cells.len(), columns, "{plural}: a cell per column");
    cells
}

#[test]
fn rows_of_the_kinds_served_beside_the_workloads() {
    let endpoints = json!({"metadata": {"name": "web"}, "subsets": [
        {"addresses": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}], "ports": [{"port": 80}, {"port": 443}]},
    ]});
    assert_eq!(
        cells_of("", "v1", "endpoints", endpoints)[1],
        "10.0.0.1:80,10.0.0.2:80,10.0.0.1:443 + 1 more..."
    );
    assert_eq!(
        cells_of("", "v1", "endpoints", json!({"metadata": {"name": "e"}}))[1],
        "<none>"
    );

    let quota = json!({"metadata": {"name": "q"}, "status": {
        "hard": {"pods": "10", "limits.cpu": "4", "requests.cpu": "2"},
        "used": {"pods": "3"}
    }});
    let cells = cells_of("", "v1", "resourcequotas", quota);
    assert_eq!(cells[1], "pods: 3/10, requests.cpu: 0/2");
    assert_eq!(cells[2], "limits.cpu: 0/4");

    let hpa = json!({"metadata": {"name": "h"}, "spec": {
    "scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 5, "minReplicas": 2,
    "metrics": [
        {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}},
        {"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "10"}}},
        {"type": "External", "external": {"metric": {"name": "q"}, "target": {"type": "Value", "value": "1"}}}
    ]}, "status": {"currentReplicas": 3, "currentMetrics": [
        {"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 42}}}
    ]}});
    let cells = cells_of("autoscaling", "v2", "horizontalpodautoscalers", hpa);
    assert_eq!(cells[1], "Deployment/web");
    assert_eq!(cells[2], "cpu: 42%/80%, <unknown>/10 + 1 more...");
    assert_eq!(cells[3], "2");
    assert_eq!((cells[4].clone(), cells[5].clone()), (json!(5), json!(3)));

    let revision = json!({"metadata": {"name": "web-1", "ownerReferences": [
        {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "uid": "u", "controller": true}
    ]}, "revision": 3});
    let cells = cells_of("apps", "v1", "controllerrevisions", revision);
    assert_eq!(cells[1], "statefulset.apps/web");
    assert_eq!(cells[2], 3);

    let class = json!({"metadata": {"name": "fast", "annotations": {
        "storageclass.kubernetes.io/is-default-class": "true"}}, "provisioner": "p"});
    let cells = cells_of("storage.k8s.io", "v1", "storageclasses", class);
    assert_eq!(
        cells[..5],
        [
            json!("fast (default)"),
            json!("p"),
            json!("Delete"),
            json!("Immediate"),
            json!(false)
        ]
    );

    let slice = json!({"metadata": {"name": "s"}, "addressType": "IPv4",
        "ports": [{"port": 80}, {"name": "dns"}], "endpoints": []});
    let cells = cells_of("discovery.k8s.io", "v1", "endpointslices", slice);
    assert_eq!(
        cells[1..4],
        [json!("IPv4"), json!("80,dns"), json!("<unset>")]
    );

    let template = json!({"metadata": {"name": "t"}, "template": {
        "metadata": {"labels": {"b": "2", "a": "1"}},
        "spec": {"containers": [{"name": "app", "image": "nginx"}]}}});
    let cells = cells_of("", "v1", "podtemplates", template);
    assert_eq!(
        cells,
        [json!("t"), json!("app"), json!("nginx"), json!("a=1,b=2")]
    );

    let limits = json!({"metadata": {"name": "l", "creationTimestamp": "2025-01-01T00:00:00Z"}});
    assert_eq!(
        cells_of("", "v1", "limitranges", limits),
        [json!("l"), json!("2025-01-01T00:00:00Z")]
    );
    for (group, plural, object) in [
        (
            "",
            "replicationcontrollers",
            json!({"metadata": {"name": "rc"}, "spec": {"selector": {"app": "web"}}}),
        ),
        ("", "persistentvolumes", json!({"metadata": {"name": "pv"}})),
        (
            "networking.k8s.io",
            "networkpolicies",
            json!({"metadata": {"name": "np"}, "spec": {}}),
        ),
        (
            "networking.k8s.io",
            "ingressclasses",
            json!({"metadata": {"name": "ic"}, "spec": {}}),
        ),
        (
            "scheduling.k8s.io",
            "priorityclasses",
            json!({"metadata": {"name": "pc"}, "value": 1}),
        ),
    ] {
        cells_of(group, "v1", plural, object);
    }
}

#[test]
fn a_tables_rows_hold_what_include_object_says_and_one_objects_table_its_version() {
    let pods = Registry::builtin().by_path("", "v1", "pods").unwrap();
    let pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web", "resourceVersion": "7"}, "spec": {}});
    let table = object_table(&pods, &pod, IncludeObject::Metadata, true);
    assert_eq!(table["metadata"]["resourceVersion"], "7");
    assert_eq!(table["rows"][0]["object"]["kind"], "PartialObjectMetadata");
    let table = object_table(&pods, &pod, IncludeObject::Object, true);
    assert_eq!(table["rows"][0]["object"], pod);
    let table = object_table(&pods, &pod, IncludeObject::None, false);
    assert_eq!(table["rows"][0]["object"], Value::Null);
    assert_eq!(table["columnDefinitions"], Value::Null);
    assert_eq!(IncludeObject::parse(Some("Object")), IncludeObject::Object);
    assert_eq!(IncludeObject::parse(None), IncludeObject::Metadata);
}

#[test]
fn a_watch_as_tables_sends_column_definitions_in_its_first_table_only() {
    let pods = Registry::builtin().by_path("", "v1", "pods").unwrap();
    let mut first = true;
    let event = |first: &mut bool| {
        let chunk = Bytes::from_static(
            b"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"x\",\"resourceVersion\":\"3\"}}}\n",
        );
        let event = event_as_table(&pods, chunk, IncludeObject::Metadata, first);
        serde_json::from_slice::<Value>(&event).unwrap()
    };
    let one = event(&mut first);
    assert!(one["object"]["columnDefinitions"].is_array());
    assert_eq!(one["object"]["metadata"]["resourceVersion"], "3");
    let two = event(&mut first);
    assert_eq!(two["object"]["columnDefinitions"], Value::Null);
}
