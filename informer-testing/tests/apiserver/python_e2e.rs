//! What the official clients' own end-to-end suites (kubernetes-client/python
//! `kubernetes/e2e_test`, kubernetes-client/javascript `src/test/integration`) found the
//! server doing differently from a cluster, each rule checked through a real client.

use k8s_openapi::api::core::v1::{Service, ServiceAccount};
use k8s_openapi::api::storage::v1::StorageClass;
use kube::api::{Api, DeleteParams, PostParams};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use kube::discovery::Discovery;
use serde_json::{Value, json};

use super::common::{column_names, eventually, namespace, raw, server, status};

fn apiservices(client: kube::Client) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("apiregistration.k8s.io", "v1", "APIService");
    Api::all_with(
        client,
        &ApiResource::from_gvk_with_plural(&gvk, "apiservices"),
    )
}

fn object(value: Value) -> DynamicObject {
    serde_json::from_value(value).expect("a valid object")
}

/// The APIService the Python suite creates (`test_yaml/api-service.yaml`).
fn wardle() -> DynamicObject {
    object(json!({
        "apiVersion": "apiregistration.k8s.io/v1",
        "kind": "APIService",
        "metadata": {"name": "v1alpha1.wardle.k8s.io"},
        "spec": {
            "insecureSkipTLSVerify": true,
            "group": "wardle.k8s.io",
            "groupPriorityMinimum": 1000,
            "versionPriority": 15,
            "service": {"name": "api", "namespace": "wardle"},
            "version": "v1alpha1"
        }
    }))
}

fn available(apiservice: &DynamicObject) -> Value {
    apiservice.data["status"]["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == "Available"))
        .cloned()
        .unwrap_or(Value::Null)
}

async fn wait_for_condition(api: &Api<DynamicObject>, name: &str, reason: &str) -> DynamicObject {
    let mut last = None;
    eventually(&format!("{name} to be {reason}"), async || {
        last = api.get_opt(name).await.ok().flatten();
        last.as_ref()
            .is_some_and(|a| available(a)["reason"] == reason)
    })
    .await;
    last.expect("the APIService")
}

/// kube-apiserver's JSON encoder writes a `Status` in its Go struct's field order and ends
/// the document with a newline; Python's `FailToCreateError` prints the body as it came
/// (`test_create_from_multi_resource_yaml_with_conflict` compares it whole).
#[tokio::test]
async fn a_status_error_is_written_in_go_field_order_ending_in_a_newline() {
    let server = server().await;
    let body = br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"twice"}}"#;
    let path = "/api/v1/namespaces/default/configmaps";
    let headers = [("Content-Type", "application/json")];
    let first = raw(&server, "POST", path, &headers, body).await;
    assert_eq!(first.status, 201);
    let second = raw(&server, "POST", path, &headers, body).await;
    assert_eq!(
        String::from_utf8_lossy(&second.body),
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\
         \"message\":\"configmaps \\\"twice\\\" already exists\",\"reason\":\"AlreadyExists\",\
         \"details\":{\"name\":\"twice\",\"kind\":\"configmaps\"},\"code\":409}\n"
    );
    // A kube client reads it as before.
    let api: Api<DynamicObject> = Api::namespaced_with(
        server.client(),
        "default",
        &ApiResource::erase::<k8s_openapi::api::core::v1::ConfigMap>(&()),
    );
    let err = api
        .create(
            &PostParams::default(),
            &object(
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "twice"}}),
            ),
        )
        .await
        .expect_err("a second create conflicts");
    assert_eq!(status(err).reason, "AlreadyExists");
}

/// `ReturnDeletedObject: true` in the Service, ServiceAccount and StorageClass registries: a
/// delete answers with the object (Python's `delete_namespaced_service` reads a `V1Service`
/// and failed on a `Status`).
#[tokio::test]
async fn deleting_a_service_a_service_account_or_a_storage_class_returns_it() {
    let server = server().await;
    let client = server.client();
    let services: Api<Service> = Api::namespaced(client.clone(), "default");
    let service: Service = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {"ports": [{"port": 80}], "selector": {"app": "web"}}
    }))
    .unwrap();
    services
        .create(&PostParams::default(), &service)
        .await
        .unwrap();
    let deleted = services
        .delete("web", &DeleteParams::default())
        .await
        .unwrap();
    let gone = deleted.left().expect("the Service, not a Status");
    assert_eq!(gone.metadata.name.as_deref(), Some("web"));

    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), "default");
    let account: ServiceAccount =
        serde_json::from_value(json!({"metadata": {"name": "robot"}})).unwrap();
    accounts
        .create(&PostParams::default(), &account)
        .await
        .unwrap();
    let deleted = accounts
        .delete("robot", &DeleteParams::default())
        .await
        .unwrap();
    assert!(deleted.left().is_some(), "the ServiceAccount, not a Status");

    let classes: Api<StorageClass> = Api::all(client);
    let class: StorageClass = serde_json::from_value(
        json!({"metadata": {"name": "fast"}, "provisioner": "example.com/fast"}),
    )
    .unwrap();
    classes
        .create(&PostParams::default(), &class)
        .await
        .unwrap();
    let deleted = classes
        .delete("fast", &DeleteParams::default())
        .await
        .unwrap();
    assert!(deleted.left().is_some(), "the StorageClass, not a Status");
}

/// The autoregister controller: a Local APIService per built-in group version served
/// (`apiVersionPriorities`), labelled `onstart`, marked available.
#[tokio::test]
async fn a_local_apiservice_is_registered_for_each_served_group_version() {
    let server = server().await;
    let api = apiservices(server.client());
    let apps = wait_for_condition(&api, "v1.apps", "Local").await;
    assert_eq!(
        apps.data["spec"],
        json!({"group": "apps", "version": "v1", "groupPriorityMinimum": 17800, "versionPriority": 15})
    );
    assert_eq!(
        apps.metadata.labels.as_ref().unwrap()["kube-aggregator.kubernetes.io/automanaged"],
        "onstart"
    );
    let condition = available(&apps);
    assert_eq!(condition["status"], "True");
    assert_eq!(
        condition["message"],
        "Local APIServices are always available"
    );
    let core = wait_for_condition(&api, "v1.", "Local").await;
    assert_eq!(core.data["spec"]["groupPriorityMinimum"], 18000);
    assert!(core.data["spec"].get("group").is_none(), "{:?}", core.data);
    let autoscaling = wait_for_condition(&api, "v2.autoscaling", "Local").await;
    assert_eq!(autoscaling.data["spec"]["versionPriority"], 30);
}

/// The crd-autoregistration controller: a CRD's served group version gets a Local
/// APIService (priority 1000/100, labelled `"true"`), removed with the CRD.
#[tokio::test]
async fn a_crd_group_version_has_a_local_apiservice_while_the_crd_serves_it() {
    let server = server().await;
    let api = apiservices(server.client());
    server
        .register_custom_resource(informer_testing::CustomResourceSpec::namespaced(
            "example.com",
            "v1",
            "Widget",
            "widgets",
        ))
        .expect("the CRD is served");
    let widgets = wait_for_condition(&api, "v1.example.com", "Local").await;
    assert_eq!(
        widgets.data["spec"],
        json!({"group": "example.com", "version": "v1", "groupPriorityMinimum": 1000, "versionPriority": 100})
    );
    assert_eq!(
        widgets.metadata.labels.as_ref().unwrap()["kube-aggregator.kubernetes.io/automanaged"],
        "true"
    );
    let crds: Api<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition> =
        Api::all(server.client());
    crds.delete("widgets.example.com", &DeleteParams::default())
        .await
        .unwrap();
    eventually("the APIService to go with the CRD", async || {
        api.get_opt("v1.example.com").await.unwrap().is_none()
    })
    .await;
}

/// `test_create_apiservice_from_yaml_with_conflict`: an APIService is stored (its service
/// port defaulted to 443), a second create is `409 AlreadyExists` in the group's name, and
/// the remote availability controller reports the missing Service as upstream words it.
#[tokio::test]
async fn an_apiservice_whose_service_is_missing_is_not_available() {
    let server = server().await;
    let api = apiservices(server.client());
    let created = api.create(&PostParams::default(), &wardle()).await.unwrap();
    assert_eq!(created.data["spec"]["service"]["port"], 443);
    let err = api
        .create(&PostParams::default(), &wardle())
        .await
        .expect_err("a second create conflicts");
    let s = status(err);
    assert_eq!(s.reason, "AlreadyExists");
    assert_eq!(
        s.message,
        "apiservices.apiregistration.k8s.io \"v1alpha1.wardle.k8s.io\" already exists"
    );
    let details = s.details.expect("details");
    assert_eq!(details.group, "apiregistration.k8s.io");
    assert_eq!(details.kind, "apiservices");

    let missing = wait_for_condition(&api, "v1alpha1.wardle.k8s.io", "ServiceNotFound").await;
    let condition = available(&missing);
    assert_eq!(condition["status"], "False");
    assert_eq!(
        condition["message"],
        "service/api in \"wardle\" is not present"
    );

    // The Service appears, without EndpointSlices.
    namespace(&server, "wardle");
    let services: Api<Service> = Api::namespaced(server.client(), "wardle");
    let service: Service = serde_json::from_value(
        json!({"metadata": {"name": "api"}, "spec": {"ports": [{"port": 443}]}}),
    )
    .unwrap();
    services
        .create(&PostParams::default(), &service)
        .await
        .unwrap();
    let no_endpoints =
        wait_for_condition(&api, "v1alpha1.wardle.k8s.io", "EndpointsNotFound").await;
    assert_eq!(
        available(&no_endpoints)["message"],
        "cannot find endpointslices for service/api in \"wardle\""
    );
}

/// Discovery serves `apiregistration.k8s.io/v1`, and an APIService backed by a Service adds
/// nothing: its group is not served.
#[tokio::test]
async fn apiregistration_is_discovered_and_an_aggregated_group_is_not() {
    let server = server().await;
    let api = apiservices(server.client());
    api.create(&PostParams::default(), &wardle()).await.unwrap();
    let discovery = Discovery::new(server.client()).run().await.unwrap();
    assert!(discovery.has_group("apiregistration.k8s.io"));
    assert!(!discovery.has_group("wardle.k8s.io"));
}

/// `ValidateAPIService`: the name is `<version>.<group>`, priorities are in range, a local
/// APIService may not skip TLS verification.
#[tokio::test]
async fn an_apiservice_is_validated_as_upstream_validates_it() {
    let server = server().await;
    let api = apiservices(server.client());
    let mut wrong = wardle();
    wrong.metadata.name = Some("wardle".into());
    let s = status(
        api.create(&PostParams::default(), &wrong)
            .await
            .expect_err("a wrong name is refused"),
    );
    assert_eq!(s.code, 422);
    assert!(
        s.message.contains(
            "metadata.name: Invalid value: \"wardle\": must be `spec.version+\".\"+spec.group`: \"v1alpha1.wardle.k8s.io\""
        ),
        "{}",
        s.message
    );
    let local = object(json!({
        "apiVersion": "apiregistration.k8s.io/v1",
        "kind": "APIService",
        "metadata": {"name": "v1.local.example.com"},
        "spec": {"group": "local.example.com", "version": "v1", "groupPriorityMinimum": 0,
            "versionPriority": 15, "insecureSkipTLSVerify": true}
    }));
    let s = status(
        api.create(&PostParams::default(), &local)
            .await
            .expect_err("a bad local APIService is refused"),
    );
    assert!(
        s.message.contains(
            "spec.groupPriorityMinimum: Invalid value: 0: must be positive and less than 20000"
        ),
        "{}",
        s.message
    );
    assert!(
        s.message.contains(
            "spec.insecureSkipTLSVerify: Invalid value: true: local APIServices may not have insecureSkipTLSVerify"
        ),
        "{}",
        s.message
    );
}

/// `kubectl get apiservices`: `NAME`, `SERVICE` (`Local` or `<namespace>/<name>`),
/// `AVAILABLE` (`True`, or `False (<reason>)`), `AGE`.
#[tokio::test]
async fn apiservices_print_their_service_and_availability() {
    let server = server().await;
    let api = apiservices(server.client());
    api.create(&PostParams::default(), &wardle()).await.unwrap();
    wait_for_condition(&api, "v1alpha1.wardle.k8s.io", "ServiceNotFound").await;
    wait_for_condition(&api, "v1.apps", "Local").await;
    let table = raw(
        &server,
        "GET",
        "/apis/apiregistration.k8s.io/v1/apiservices",
        &[("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")],
        b"",
    )
    .await
    .json();
    let columns = column_names(&table);
    assert_eq!(columns, ["Name", "Service", "Available", "Age"]);
    let row = |name: &str| {
        table["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["cells"][0] == name)
            .map(|r| r["cells"].clone())
            .unwrap_or_else(|| panic!("no row {name}: {table}"))
    };
    assert_eq!(row("v1.apps")[1], "Local");
    assert_eq!(row("v1.apps")[2], "True");
    assert_eq!(row("v1alpha1.wardle.k8s.io")[1], "wardle/api");
    assert_eq!(row("v1alpha1.wardle.k8s.io")[2], "False (ServiceNotFound)");
}
