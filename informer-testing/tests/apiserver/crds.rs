//! CustomResourceDefinitions served through the API, as a cluster serves them: created with
//! `Api<CustomResourceDefinition>` (and kube's `CustomResource` derive), established and
//! discoverable at once, their schemas pruning, defaulting and validating objects, their
//! subresources and printer columns, several versions, updates, and deletion.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use kube::discovery::{Discovery, Scope};
use kube::{CustomResource, CustomResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::common::{column_names, namespace, raw, server, status, within};
use informer_testing::{CustomResourceSpec, TestApiServer};

/// A namespaced `Gadget` with a structural schema, status and scale subresources, a
/// printer column, a short name and a category, served as `v1` (stored) and `v1beta1`.
fn gadget_crd() -> CustomResourceDefinition {
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "gadgets", "kind": "Gadget", "shortNames": ["gd"], "categories": ["toys"]},
            "versions": [
                {"name": "v1", "served": true, "storage": true,
                 "subresources": {"status": {}, "scale": {
                    "specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}},
                 "additionalPrinterColumns": [{"name": "Mode", "type": "string", "jsonPath": ".spec.mode"}],
                 "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "required": ["mode"], "properties": {
                        "mode": {"type": "string", "enum": ["fast", "slow"]},
                        "replicas": {"type": "integer", "minimum": 0, "default": 1},
                        "ports": {"type": "array", "x-kubernetes-list-type": "map",
                            "x-kubernetes-list-map-keys": ["port"],
                            "items": {"type": "object", "required": ["port"], "properties": {
                                "port": {"type": "integer"}, "name": {"type": "string"}}}}}},
                    "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}}}}}},
                {"name": "v1beta1", "served": true, "storage": false,
                 "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}
            ]
        }
    }))
    .expect("a CRD")
}

fn gadgets(server: &TestApiServer, version: &str) -> Api<DynamicObject> {
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.com", version, "Gadget"),
        "gadgets",
    );
    Api::namespaced_with(server.client(), "default", &resource)
}

fn gadget(name: &str, spec: Value) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "example.com/v1", "kind": "Gadget",
        "metadata": {"name": name}, "spec": spec
    }))
    .expect("a gadget")
}

/// Creates a `v1` Gadget in `default` and returns what the server stored.
async fn create_gadget(server: &TestApiServer, name: &str, spec: Value) -> DynamicObject {
    within(gadgets(server, "v1").create(&PostParams::default(), &gadget(name, spec)))
        .await
        .unwrap()
}

fn condition<'a>(crd: &'a CustomResourceDefinition, kind: &str) -> (&'a str, &'a str) {
    crd.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == kind))
        .map(|c| (c.status.as_str(), c.reason.as_deref().unwrap_or("")))
        .unwrap_or(("", ""))
}

async fn install(server: &TestApiServer) -> Api<CustomResourceDefinition> {
    let crds: Api<CustomResourceDefinition> = Api::all(server.client());
    within(crds.create(&PostParams::default(), &gadget_crd()))
        .await
        .expect("the CRD is created");
    crds
}

#[tokio::test]
async fn a_crd_created_through_the_api_is_established_and_served_at_once() {
    let server = server().await;
    let crds = install(&server).await;
    let crd = within(crds.get("gadgets.example.com")).await.unwrap();
    assert_eq!(condition(&crd, "NamesAccepted"), ("True", "NoConflicts"));
    assert_eq!(
        condition(&crd, "Established"),
        ("True", "InitialNamesAccepted")
    );
    let status = crd.status.as_ref().unwrap();
    assert_eq!(status.accepted_names.as_ref().unwrap().plural, "gadgets");
    assert_eq!(
        status.stored_versions.as_deref(),
        Some(&["v1".to_string()][..])
    );
    assert_eq!(
        crd.spec.names.list_kind.as_deref(),
        Some("GadgetList"),
        "defaulted"
    );
    // kube-aggregator's crdregistration: each served version's Local APIService, available.
    for version in ["v1", "v1beta1"] {
        let path = format!("/apis/apiregistration.k8s.io/v1/apiservices/{version}.example.com");
        let apiservice = raw(&server, "GET", &path, &[], b"").await.json();
        assert_eq!(
            apiservice["spec"]["groupPriorityMinimum"], 1000,
            "{apiservice}"
        );
        assert_eq!(apiservice["spec"]["service"], Value::Null, "Local");
        let available = &apiservice["status"]["conditions"][0];
        assert_eq!(
            (&available["type"], &available["status"]),
            (&json!("Available"), &json!("True"))
        );
    }

    let api = gadgets(&server, "v1");
    let created = within(api.create(
        &PostParams::default(),
        &gadget("g1", json!({"mode": "fast"})),
    ))
    .await
    .expect("the type is served");
    assert_eq!(created.metadata.generation, Some(1));
    let list = within(api.list(&ListParams::default())).await.unwrap();
    assert_eq!(list.items.len(), 1);
}

#[tokio::test]
async fn a_served_crd_is_in_discovery_with_its_names_scope_and_subresources() {
    let server = server().await;
    install(&server).await;
    let discovery = within(Discovery::new(server.client()).run()).await.unwrap();
    let group = discovery
        .get("example.com")
        .expect("the group is discovered");
    assert_eq!(group.preferred_version_or_latest(), "v1");
    let (resource, capabilities) = group
        .recommended_resources()
        .into_iter()
        .find(|(r, _)| r.plural == "gadgets")
        .expect("gadgets are discovered");
    assert_eq!(resource.kind, "Gadget");
    assert_eq!(capabilities.scope, Scope::Namespaced);
    let subresources: Vec<&str> = capabilities
        .subresources
        .iter()
        .map(|(r, _)| r.plural.as_str())
        .collect();
    assert!(
        ["status", "scale"]
            .iter()
            .all(|want| subresources.iter().any(|s| s.ends_with(want))),
        "{subresources:?}"
    );

    let document = raw(&server, "GET", "/apis/example.com/v1", &[], b"")
        .await
        .json();
    // As the CRD discovery controller lists them: the resource, its status, its scale.
    let names: Vec<&str> = document["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["gadgets", "gadgets/status", "gadgets/scale"]);
    let gadgets = &document["resources"][0];
    assert_eq!(gadgets["shortNames"], json!(["gd"]));
    assert_eq!(gadgets["categories"], json!(["toys"]));
    assert_eq!(gadgets["singularName"], "gadget");
    let versions = raw(&server, "GET", "/apis/example.com", &[], b"")
        .await
        .json();
    assert_eq!(versions["versions"][1]["version"], "v1beta1");
}

#[tokio::test]
async fn objects_are_pruned_defaulted_and_validated_by_the_schema() {
    let server = server().await;
    install(&server).await;
    let path = "/apis/example.com/v1/namespaces/default/gadgets";
    let body = json!({"apiVersion": "example.com/v1", "kind": "Gadget",
        "metadata": {"name": "g1"}, "spec": {"mode": "fast", "bogus": 1}});
    let created = raw(
        &server,
        "POST",
        path,
        &[("Content-Type", "application/json")],
        body.to_string().as_bytes(),
    )
    .await;
    assert_eq!(created.status, 201);
    assert_eq!(
        created.header("warning"),
        Some(r#"299 - "unknown field \"spec.bogus\"""#)
    );
    let stored = created.json();
    assert!(stored["spec"].get("bogus").is_none(), "pruned");
    assert_eq!(stored["spec"]["replicas"], 1, "defaulted");

    let strict = raw(
        &server,
        "POST",
        &format!("{path}?fieldValidation=Strict"),
        &[("Content-Type", "application/json")],
        json!({"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g2"},
            "spec": {"mode": "fast", "bogus": 1}})
        .to_string()
        .as_bytes(),
    )
    .await;
    strict.assert_status(400, "BadRequest");
    assert_eq!(
        strict.json()["message"],
        "Gadget in version \"v1\" cannot be handled as a Gadget: strict decoding error: unknown field \"spec.bogus\""
    );

    let api = gadgets(&server, "v1");
    let invalid = status(
        within(api.create(
            &PostParams::default(),
            &gadget("g3", json!({"mode": "medium", "replicas": -1})),
        ))
        .await
        .unwrap_err(),
    );
    assert_eq!((invalid.code, invalid.reason.as_str()), (422, "Invalid"));
    let causes: Vec<(String, String)> = invalid
        .details
        .unwrap()
        .causes
        .into_iter()
        .map(|c| (c.field, c.reason))
        .collect();
    assert!(
        causes.contains(&("spec.mode".into(), "FieldValueNotSupported".into())),
        "{causes:?}"
    );
    assert!(causes.contains(&("spec.replicas".into(), "FieldValueInvalid".into())));
    let missing = status(
        within(api.create(&PostParams::default(), &gadget("g4", json!({}))))
            .await
            .unwrap_err(),
    );
    assert_eq!(
        missing.message,
        "Gadget.example.com \"g4\" is invalid: spec.mode: Required value"
    );
}

#[tokio::test]
async fn status_scale_and_printer_columns_come_from_the_crd() {
    let server = server().await;
    install(&server).await;
    let api = gadgets(&server, "v1");
    within(api.create(
        &PostParams::default(),
        &gadget("g1", json!({"mode": "slow", "replicas": 2})),
    ))
    .await
    .unwrap();
    let scale = within(api.get_scale("g1")).await.unwrap();
    assert_eq!(scale.spec.unwrap().replicas, Some(2));
    let patched = within(api.patch_scale(
        "g1",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"replicas": 4}})),
    ))
    .await
    .unwrap();
    assert_eq!(patched.spec.unwrap().replicas, Some(4));
    let status = within(api.patch_status(
        "g1",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"replicas": 4}, "spec": {"mode": "fast"}})),
    ))
    .await
    .unwrap();
    assert_eq!(status.data["status"]["replicas"], 4);
    assert_eq!(
        status.data["spec"]["mode"], "slow",
        "the status subresource ignores spec"
    );

    let table = raw(
        &server,
        "GET",
        "/apis/example.com/v1/namespaces/default/gadgets",
        &[("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")],
        b"",
    )
    .await
    .json();
    let columns = column_names(&table);
    assert_eq!(columns, ["Name", "Mode"]);
    assert_eq!(table["rows"][0]["cells"], json!(["g1", "slow"]));
}

#[tokio::test]
async fn every_served_version_reads_and_writes_the_same_objects() {
    let server = server().await;
    install(&server).await;
    within(gadgets(&server, "v1").create(
        &PostParams::default(),
        &gadget("g1", json!({"mode": "fast"})),
    ))
    .await
    .unwrap();
    let beta = gadgets(&server, "v1beta1");
    let read = within(beta.get("g1")).await.unwrap();
    assert_eq!(read.types.unwrap().api_version, "example.com/v1beta1");
    assert_eq!(read.data["spec"]["mode"], "fast");
    let mut written: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "example.com/v1beta1", "kind": "Gadget",
        "metadata": {"name": "g2"}, "spec": {"mode": "slow", "anything": true}
    }))
    .unwrap();
    written = within(beta.create(&PostParams::default(), &written))
        .await
        .unwrap();
    assert_eq!(written.types.unwrap().api_version, "example.com/v1beta1");
    let stored = server
        .get_json("example.com/v1", "Gadget", Some("default"), "g2")
        .expect("stored in the storage version");
    assert_eq!(stored["apiVersion"], "example.com/v1");
    assert!(
        stored["spec"].get("anything").is_none(),
        "the storage version's schema prunes"
    );
}

#[tokio::test]
async fn a_name_another_crd_holds_is_not_accepted_and_not_served() {
    let server = server().await;
    install(&server).await;
    let crds: Api<CustomResourceDefinition> = Api::all(server.client());
    let mut clash = gadget_crd();
    clash.metadata.name = Some("gizmos.example.com".into());
    clash.spec.names.plural = "gizmos".into();
    clash.spec.names.short_names = None;
    within(crds.create(&PostParams::default(), &clash))
        .await
        .unwrap();
    let clash = within(crds.get("gizmos.example.com")).await.unwrap();
    assert_eq!(
        condition(&clash, "NamesAccepted"),
        ("False", "ListKindConflict")
    );
    assert_eq!(condition(&clash, "Established"), ("False", "NotAccepted"));
    let missing = raw(&server, "GET", "/apis/example.com/v1/gizmos", &[], b"").await;
    assert_eq!(missing.status, 404);

    // Once the holder goes, the names are free.
    within(crds.delete("gadgets.example.com", &DeleteParams::default()))
        .await
        .unwrap();
    let accepted = within(crds.get("gizmos.example.com")).await.unwrap();
    assert_eq!(
        condition(&accepted, "NamesAccepted"),
        ("True", "NoConflicts")
    );
}

#[tokio::test]
async fn deleting_a_crd_deletes_its_objects_then_the_crd_and_stops_serving() {
    let server = server().await;
    namespace(&server, "other");
    let crds = install(&server).await;
    let api = gadgets(&server, "v1");
    within(api.create(
        &PostParams::default(),
        &gadget("plain", json!({"mode": "fast"})),
    ))
    .await
    .unwrap();
    let mut kept = gadget("kept", json!({"mode": "fast"}));
    kept.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    within(api.create(&PostParams::default(), &kept))
        .await
        .unwrap();

    let deleting = within(crds.delete("gadgets.example.com", &DeleteParams::default()))
        .await
        .unwrap()
        .left()
        .expect("the CRD is marked, not gone");
    assert!(
        deleting
            .metadata
            .finalizers
            .unwrap()
            .contains(&"customresourcecleanup.apiextensions.k8s.io".to_string())
    );
    let crd = within(crds.get("gadgets.example.com")).await.unwrap();
    assert_eq!(
        condition(&crd, "Terminating"),
        ("True", "InstanceDeletionInProgress")
    );
    assert!(
        within(api.get("plain")).await.is_err(),
        "objects without finalizers are gone"
    );
    let held = within(api.get("kept")).await.unwrap();
    assert!(held.metadata.deletion_timestamp.is_some());
    let refused = status(
        within(api.create(
            &PostParams::default(),
            &gadget("late", json!({"mode": "fast"})),
        ))
        .await
        .unwrap_err(),
    );
    // apiextensions-apiserver's forbidCreateAdmission (1.26 on; a 405 before).
    assert_eq!(
        (
            refused.code,
            refused.reason.as_str(),
            refused.message.as_str()
        ),
        (
            403,
            "Forbidden",
            "gadgets.example.com \"late\" is forbidden: create not allowed while custom resource definition is terminating"
        )
    );
    assert_eq!(refused.details.unwrap().name, "late");

    within(api.patch(
        "kept",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    ))
    .await
    .unwrap();
    assert_eq!(
        status(within(crds.get("gadgets.example.com")).await.unwrap_err()).code,
        404
    );
    assert_eq!(
        gadgets_status(&server).await,
        404,
        "the type is no longer served"
    );
    let groups = raw(&server, "GET", "/apis", &[], b"").await.json();
    assert!(!groups.to_string().contains("example.com"));
    let apiservice = raw(
        &server,
        "GET",
        "/apis/apiregistration.k8s.io/v1/apiservices/v1.example.com",
        &[],
        b"",
    )
    .await;
    assert_eq!(apiservice.status, 404, "its Local APIService went with it");
}

/// What a list of gadgets answers: 404 once the type is no longer served.
async fn gadgets_status(server: &TestApiServer) -> u16 {
    let path = "/apis/example.com/v1/namespaces/default/gadgets";
    raw(server, "GET", path, &[], b"").await.status
}

/// Until the gadgets CRD is gone; then its object `name` must be too.
async fn until_gadgets_and_gadget_gone(
    server: &TestApiServer,
    crds: &Api<CustomResourceDefinition>,
    name: &str,
) {
    within(async {
        while crds.get_opt("gadgets.example.com").await.unwrap().is_some() {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(
        server
            .get_json("example.com/v1", "Gadget", Some("default"), name)
            .is_none()
    );
}

#[tokio::test]
async fn a_crd_goes_when_another_controller_deletes_its_last_object() {
    let server = server().await;
    let crds = install(&server).await;
    let api = gadgets(&server, "v1");
    // The garbage collector removes the `orphan` finalizer of an object being deleted (it has
    // no dependents to orphan): that deletion is the collector's, not a request's.
    let mut orphaning = gadget("orphaning", json!({"mode": "fast"}));
    orphaning.metadata.finalizers = Some(vec!["orphan".into()]);
    within(api.create(&PostParams::default(), &orphaning))
        .await
        .unwrap();
    within(crds.delete("gadgets.example.com", &DeleteParams::default()))
        .await
        .unwrap();
    until_gadgets_and_gadget_gone(&server, &crds, "orphaning").await;
}

#[tokio::test]
async fn updates_of_a_crd_take_effect() {
    let server = server().await;
    let crds = install(&server).await;
    let mut crd = within(crds.get("gadgets.example.com")).await.unwrap();
    let version = &mut crd.spec.versions[0];
    version.additional_printer_columns = None;
    let schema = version
        .schema
        .as_mut()
        .unwrap()
        .open_api_v3_schema
        .as_mut()
        .unwrap();
    let spec = schema.properties.as_mut().unwrap().get_mut("spec").unwrap();
    spec.properties.as_mut().unwrap().insert(
        "color".into(),
        serde_json::from_value(json!({"type": "string", "default": "red"})).unwrap(),
    );
    crd.spec.names.short_names = Some(vec!["gd".into(), "gdg".into()]);
    within(crds.replace("gadgets.example.com", &PostParams::default(), &crd))
        .await
        .unwrap();
    let created = create_gadget(&server, "g1", json!({"mode": "fast"})).await;
    assert_eq!(
        created.data["spec"]["color"], "red",
        "the new schema's default"
    );
    let document = raw(&server, "GET", "/apis/example.com/v1", &[], b"")
        .await
        .json();
    assert_eq!(document["resources"][0]["shortNames"], json!(["gd", "gdg"]));
}

#[tokio::test]
async fn invalid_crds_are_refused_with_causes() {
    let server = server().await;
    let crds: Api<CustomResourceDefinition> = Api::all(server.client());
    let mut crd = gadget_crd();
    crd.metadata.name = Some("gadgets.example.org".into());
    crd.spec.versions[0].storage = false;
    let err = status(
        within(crds.create(&PostParams::default(), &crd))
            .await
            .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"));
    let details = err.details.unwrap();
    assert_eq!(
        (details.group.as_str(), details.kind.as_str()),
        ("apiextensions.k8s.io", "CustomResourceDefinition")
    );
    let fields: Vec<&str> = details.causes.iter().map(|c| c.field.as_str()).collect();
    assert!(
        fields.contains(&"metadata.name") && fields.contains(&"spec.versions"),
        "{fields:?}"
    );
}

#[tokio::test]
async fn watches_from_before_a_type_was_served_are_gone() {
    let server = server().await;
    let before = server.resource_version();
    install(&server).await;
    let response = raw(
        &server,
        "GET",
        &format!("/apis/example.com/v1/namespaces/default/gadgets?watch=1&resourceVersion={before}&timeoutSeconds=1"),
        &[],
        b"",
    )
    .await;
    let body = String::from_utf8_lossy(&response.body);
    assert!(
        body.contains("\"type\":\"ERROR\"") && body.contains("\"code\":410"),
        "{body}"
    );
}

#[tokio::test]
async fn registered_custom_resources_are_crds_too() {
    let server = server().await;
    server
        .register_custom_resource(
            CustomResourceSpec::namespaced("example.com", "v1", "Widget", "widgets")
                .with_short_names(["wd"]),
        )
        .unwrap();
    let crds: Api<CustomResourceDefinition> = Api::all(server.client());
    let crd = within(crds.get("widgets.example.com")).await.unwrap();
    assert_eq!(condition(&crd, "Established").0, "True");
    let bad =
        server.register_custom_resource(CustomResourceSpec::namespaced("nodot", "v1", "W", "ws"));
    assert!(
        bad.unwrap_err()
            .to_string()
            .contains("should be a domain with at least one dot")
    );
}

/// A type from kube's `CustomResource` derive.
#[derive(CustomResource, Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[kube(
    group = "example.com",
    version = "v1",
    kind = "Doohickey",
    namespaced,
    status = "DoohickeyStatus"
)]
pub struct DoohickeySpec {
    size: u32,
    #[serde(default)]
    labels: std::collections::BTreeMap<String, String>,
}

/// The status of a `Doohickey`.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
pub struct DoohickeyStatus {
    ready: bool,
}

#[tokio::test]
async fn the_crd_of_kubes_custom_resource_derive_is_served() {
    let server = server().await;
    let crds: Api<CustomResourceDefinition> = Api::all(server.client());
    within(crds.create(&PostParams::default(), &Doohickey::crd()))
        .await
        .expect("kube's generated CRD is valid");
    let api: Api<Doohickey> = Api::namespaced(server.client(), "default");
    let mut thing = Doohickey::new(
        "d1",
        DoohickeySpec {
            size: 3,
            labels: Default::default(),
        },
    );
    thing.status = Some(DoohickeyStatus { ready: true });
    let created = within(api.create(&PostParams::default(), &thing))
        .await
        .unwrap();
    assert_eq!(created.spec.size, 3);
    assert!(created.status.is_none(), "a create does not set status");
    let status = within(api.patch_status(
        "d1",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"ready": true}})),
    ))
    .await
    .unwrap();
    assert!(status.status.unwrap().ready);
}

#[tokio::test]
async fn a_crd_given_to_the_builder_is_served_with_its_schema_and_survives_a_data_loss() {
    let server = TestApiServer::builder()
        .crd(Doohickey::crd())
        .start()
        .await
        .expect("the server starts with the derive's CRD");
    let api: Api<Doohickey> = Api::namespaced(server.client(), "default");
    let thing = Doohickey::new(
        "d1",
        DoohickeySpec {
            size: 3,
            labels: Default::default(),
        },
    );
    within(api.create(&PostParams::default(), &thing))
        .await
        .unwrap();
    // The schema is the derive's: `size` is an unsigned integer.
    let err = status(
        within(
            doohickeys_dynamic(&server).create(
                &PostParams::default(),
                &serde_json::from_value(json!({
                    "apiVersion": "example.com/v1", "kind": "Doohickey",
                    "metadata": {"name": "d2"}, "spec": {"size": "three"}
                }))
                .unwrap(),
            ),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"), "{err:?}");
    server
        .faults()
        .restart(informer_testing::RestartMode::ResetData);
    let crds: Api<CustomResourceDefinition> = Api::all(server.client());
    let crd = within(crds.get("doohickeys.example.com")).await.unwrap();
    assert_eq!(condition(&crd, "Established").0, "True");
    assert!(
        within(api.list(&ListParams::default()))
            .await
            .unwrap()
            .items
            .is_empty()
    );
}

fn doohickeys_dynamic(server: &TestApiServer) -> Api<DynamicObject> {
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.com", "v1", "Doohickey"),
        "doohickeys",
    );
    Api::namespaced_with(server.client(), "default", &resource)
}

#[tokio::test]
async fn an_invalid_crd_given_to_the_builder_fails_the_start_with_the_servers_message() {
    let mut crd = gadget_crd();
    crd.spec.versions[0].storage = false;
    let err = TestApiServer::builder()
        .crd(crd)
        .start()
        .await
        .expect_err("an invalid CRD fails the start");
    assert!(
        matches!(&err, informer_testing::Error::InvalidCustomResource(m) if m.contains("spec.versions")),
        "{err}"
    );
}

#[tokio::test]
async fn a_crd_installed_on_a_running_server_is_served_at_once() {
    let server = server().await;
    server.install_crd(gadget_crd()).unwrap();
    let created = create_gadget(&server, "g1", json!({"mode": "fast"})).await;
    assert_eq!(
        created.data["spec"]["replicas"], 1,
        "defaulted by the schema"
    );
    let mut invalid = gadget_crd();
    invalid.metadata.name = Some("wrong.example.com".into());
    assert!(matches!(
        server.install_crd(invalid),
        Err(informer_testing::Error::InvalidCustomResource(_))
    ));
}

#[tokio::test]
async fn a_namespaced_custom_resource_is_listed_and_watched_across_namespaces_but_not_written() {
    // kube-apiserver's custom resource handler serves `/apis/<group>/<version>/<plural>`
    // of a namespaced type for list and watch only; a create or a deletecollection there
    // is not routed (404), and deletes nothing.
    let server = server().await;
    install(&server).await;
    create_gadget(&server, "g1", json!({"mode": "fast"})).await;
    let all = "/apis/example.com/v1/gadgets";
    assert_eq!(raw(&server, "GET", all, &[], b"").await.status, 200);
    let body = serde_json::to_vec(&gadget("g2", json!({"mode": "fast"}))).unwrap();
    raw(
        &server,
        "POST",
        all,
        &[("Content-Type", "application/json")],
        &body,
    )
    .await
    .assert_status(404, "NotFound");
    raw(&server, "DELETE", all, &[], b"")
        .await
        .assert_status(404, "NotFound");
    let left = within(gadgets(&server, "v1").list(&ListParams::default()))
        .await
        .unwrap();
    assert_eq!(left.items.len(), 1);
}

#[tokio::test]
async fn a_json_patch_replace_of_a_missing_key_sets_it_as_kube_apiserver_does() {
    // kube-apiserver applies JSON patches with evanphx/json-patch v4: `replace` of a key
    // an object lacks adds it, and `test` of a missing key against null passes.
    let server = server().await;
    install(&server).await;
    create_gadget(&server, "g1", json!({"mode": "fast"})).await;
    let patch = json!([
        {"op": "replace", "path": "/metadata/annotations", "value": {"a": "1"}},
        {"op": "replace", "path": "/metadata/annotations/b", "value": "2"},
        {"op": "test", "path": "/spec/ports", "value": null},
        {"op": "replace", "path": "/spec/replicas", "value": 3}
    ]);
    let patched = within(gadgets(&server, "v1").patch(
        "g1",
        &PatchParams::default(),
        &Patch::<()>::Json(serde_json::from_value(patch).unwrap()),
    ))
    .await
    .unwrap();
    assert_eq!(
        patched.metadata.annotations.unwrap_or_default(),
        [
            ("a".to_string(), "1".to_string()),
            ("b".to_string(), "2".to_string())
        ]
        .into()
    );
    assert_eq!(patched.data["spec"]["replicas"], 3);
    // A missing parent still fails, with kube-apiserver's bare 422.
    let patch = json!([{"op": "replace", "path": "/spec/nested/x", "value": 1}]);
    let err = status(
        within(gadgets(&server, "v1").patch(
            "g1",
            &PatchParams::default(),
            &Patch::<()>::Json(serde_json::from_value(patch).unwrap()),
        ))
        .await
        .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"));
    assert_eq!(
        err.message,
        "the server rejected our request due to an error in our request"
    );
}

#[tokio::test]
async fn a_cluster_scoped_custom_resource_has_no_metadata_namespace_field() {
    // apiextensions' field label conversion accepts metadata.namespace for namespaced
    // custom resources only.
    let server = server().await;
    server
        .register_custom_resource(CustomResourceSpec::cluster_scoped(
            "example.com",
            "v1",
            "Realm",
            "realms",
        ))
        .unwrap();
    let path = "/apis/example.com/v1/realms?fieldSelector=metadata.namespace%3Ddefault";
    let response = raw(&server, "GET", path, &[], b"").await;
    response.assert_status(400, "BadRequest");
    assert_eq!(
        response.json()["message"],
        "field label not supported: metadata.namespace"
    );
    let path = "/apis/example.com/v1/realms?fieldSelector=metadata.name%3Dx";
    assert_eq!(raw(&server, "GET", path, &[], b"").await.status, 200);
}

#[tokio::test]
async fn a_custom_resources_empty_metadata_collections_are_left_out() {
    // apiextensions coerces a custom resource's metadata through metav1.ObjectMeta: empty
    // labels, annotations, finalizers and owner references are not stored, nor owned.
    let server = server().await;
    install(&server).await;
    let mut object = gadget("g1", json!({"mode": "fast"}));
    object.metadata.labels = Some(Default::default());
    object.metadata.annotations = Some(Default::default());
    object.metadata.finalizers = Some(Vec::new());
    object.metadata.owner_references = Some(Vec::new());
    within(gadgets(&server, "v1").create(&PostParams::default(), &object))
        .await
        .unwrap();
    let response = raw(
        &server,
        "GET",
        "/apis/example.com/v1/namespaces/default/gadgets/g1",
        &[],
        b"",
    )
    .await;
    let metadata = response.json()["metadata"].clone();
    for field in ["labels", "annotations", "finalizers", "ownerReferences"] {
        assert!(metadata.get(field).is_none(), "{field}: {metadata}");
    }
    let owned = metadata["managedFields"][0]["fieldsV1"].to_string();
    assert!(!owned.contains("f:metadata"), "{owned}");
}

/// A custom resource's `kind` and `apiVersion` as the real server checks them: a create or
/// update body must carry both (the `Unstructured` decoder requires `kind`, the handler the
/// request's `apiVersion`: 400s), a different `kind` (or, through a patch, `apiVersion`) is
/// refused by validation (422, named by the object's own kind), a patch that removes `kind`
/// does not decode (422 on the `patch`), the status subresource ignores both, and server-side
/// apply checks the configuration's group, version and kind first (400).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_custom_resources_kind_and_api_version_are_checked_as_the_real_server_checks_them() {
    let server = server().await;
    install(&server).await;
    let path = "/apis/example.com/v1/namespaces/default/gadgets";
    let json_body = [("Content-Type", "application/json")];
    let post = async |body: &str| raw(&server, "POST", path, &json_body, body.as_bytes()).await;

    let response =
        post(r#"{"apiVersion":"example.com/v1","metadata":{"name":"g"},"spec":{"mode":"fast"}}"#)
            .await;
    response.assert_status(400, "BadRequest");
    assert_eq!(
        response.json()["message"],
        r#"the object provided is unrecognized (must be of type Gadget): Object 'Kind' is missing in '{"apiVersion":"example.com/v1","metadata":{"name":"g"},"spec":{"mode":"fast"}}' ({"apiVersion":"example.com/v1" ...)"#
    );
    let response =
        post(r#"{"kind":"Gadget","metadata":{"name":"g"},"spec":{"mode":"fast"}}"#).await;
    response.assert_status(400, "BadRequest");
    assert_eq!(
        response.json()["message"],
        "the API version in the data () does not match the expected API version (example.com/v1)"
    );
    // YAML is summarised in hex.
    let yaml = "apiVersion: example.com/v1\nmetadata:\n  name: g\n";
    let response = raw(
        &server,
        "POST",
        path,
        &[("Content-Type", "application/yaml")],
        yaml.as_bytes(),
    )
    .await;
    response.assert_status(400, "BadRequest");
    let message = response.json()["message"].as_str().unwrap().to_string();
    assert!(
        message.ends_with("(61706956657273696f6e3a206578616d706c652e636f6d2f76310a6d6574 ...)"),
        "{message}"
    );

    // Another kind: validation's 422, named by the body's kind.
    let response = post(r#"{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"Bad_Name"},"spec":{}}"#).await;
    response.assert_status(422, "Invalid");
    let status = response.json();
    assert_eq!(
        status["message"],
        r#"Widget.example.com "Bad_Name" is invalid: kind: Invalid value: "Widget": must be Gadget"#
    );
    assert_eq!(status["details"]["kind"], "Widget");
    assert_eq!(status["details"]["group"], "example.com");
    assert_eq!(status["details"]["causes"][0]["field"], "kind");

    create_gadget(&server, "g", json!({"mode": "fast"})).await;
    let item = format!("{path}/g");
    let merge = [("Content-Type", "application/merge-patch+json")];
    let patch = async |body: &str| raw(&server, "PATCH", &item, &merge, body.as_bytes()).await;
    let response = patch(r#"{"kind":"Widget"}"#).await;
    response.assert_status(422, "Invalid");
    assert_eq!(response.json()["details"]["kind"], "Widget");
    let response = patch(r#"{"apiVersion":"example.com/v9"}"#).await;
    response.assert_status(422, "Invalid");
    assert_eq!(
        response.json()["message"],
        r#"Gadget.example.com "g" is invalid: apiVersion: Invalid value: "example.com/v9": must be example.com/v1"#
    );
    let response = patch(r#"{"kind":null}"#).await;
    response.assert_status(422, "Invalid");
    let message = response.json()["message"].as_str().unwrap().to_string();
    assert!(
        message.starts_with(r#" "" is invalid: patch: Invalid value: "{"#),
        "{message}"
    );
    assert!(
        message.contains("Object 'Kind' is missing in '{"),
        "{message}"
    );
    let response = patch(r#"{"apiVersion":null}"#).await;
    response.assert_status(500, "InternalError");
    assert_eq!(
        response.json()["message"],
        "Internal error occurred: Object 'apiVersion' is missing in 'object has no apiVersion field'"
    );
    // The status subresource keeps the stored kind.
    let response = raw(
        &server,
        "PATCH",
        &format!("{item}/status"),
        &merge,
        br#"{"kind":"Widget","status":{"replicas":1}}"#,
    )
    .await;
    assert_eq!(
        response.status,
        200,
        "{}",
        String::from_utf8_lossy(&response.body)
    );
    assert_eq!(response.json()["kind"], "Gadget");
    assert_eq!(response.json()["status"]["replicas"], 1);

    // An update without kind is refused before anything else.
    let mut stored = response.json();
    stored.as_object_mut().unwrap().remove("kind");
    let response = raw(
        &server,
        "PUT",
        &item,
        &json_body,
        stored.to_string().as_bytes(),
    )
    .await;
    response.assert_status(400, "BadRequest");

    // An update of another kind: the resourceVersion precondition comes first (409 when
    // stale), the kind's validation after it (422).
    let mut other_kind = response_of_get(&server, &item).await;
    other_kind["kind"] = json!("Widget");
    let current = other_kind["metadata"]["resourceVersion"].clone();
    other_kind["metadata"]["resourceVersion"] = json!("1");
    let put = async |body: &Value| {
        raw(
            &server,
            "PUT",
            &item,
            &json_body,
            body.to_string().as_bytes(),
        )
        .await
    };
    put(&other_kind).await.assert_status(409, "Conflict");
    other_kind["metadata"]["resourceVersion"] = current;
    put(&other_kind).await.assert_status(422, "Invalid");

    // Server-side apply: the field manager's version check.
    let apply = async |name: &str, body: &str| {
        raw(
            &server,
            "PATCH",
            &format!("{path}/{name}?fieldManager=test"),
            &[("Content-Type", "application/apply-patch+yaml")],
            body.as_bytes(),
        )
        .await
    };
    for (body, gvk) in [
        (
            r#"{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"g"}}"#,
            "example.com/v1, Kind=Widget",
        ),
        (
            r#"{"apiVersion":"example.com/v9","kind":"Gadget","metadata":{"name":"g"}}"#,
            "example.com/v9, Kind=Gadget",
        ),
        (
            r#"{"kind":"Gadget","metadata":{"name":"g"}}"#,
            "/, Kind=Gadget",
        ),
        (
            r#"{"apiVersion":"example.com/v1","metadata":{"name":"g"}}"#,
            "example.com/v1, Kind=",
        ),
    ] {
        let response = apply("g", body).await;
        response.assert_status(400, "BadRequest");
        assert_eq!(
            response.json()["message"],
            format!("invalid object type: {gvk}")
        );
    }
    // Also when the apply would create the object.
    let response = apply(
        "new",
        r#"{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"new"}}"#,
    )
    .await;
    response.assert_status(400, "BadRequest");
}

/// The object at `path`, as JSON.
async fn response_of_get(server: &TestApiServer, path: &str) -> Value {
    let response = raw(server, "GET", path, &[], b"").await;
    assert_eq!(response.status, 200);
    response.json()
}

/// The scale subresource's replicas of another type are reported as Go prints the value
/// (`%v`: a string unquoted), after the schema's own type error.
#[tokio::test]
async fn scale_replicas_of_another_type_are_reported_as_go_prints_them() {
    let server = server().await;
    install(&server).await;
    let body = json!({"apiVersion": "example.com/v1", "kind": "Gadget",
        "metadata": {"name": "g"}, "spec": {"mode": "fast", "replicas": "x"}});
    let response = raw(
        &server,
        "POST",
        "/apis/example.com/v1/namespaces/default/gadgets",
        &[("Content-Type", "application/json")],
        body.to_string().as_bytes(),
    )
    .await;
    response.assert_status(422, "Invalid");
    let causes = response.json()["details"]["causes"].clone();
    assert_eq!(
        causes[1]["message"],
        "Invalid value: 0: .spec.replicas accessor error: x is of the type string, expected int64"
    );
}

#[tokio::test]
async fn a_crd_the_garbage_collector_deletes_deletes_its_objects_and_goes() {
    use k8s_openapi::api::rbac::v1::ClusterRole;
    let server = server().await;
    let roles: Api<ClusterRole> = Api::all(server.client());
    let mut owner = ClusterRole::default();
    owner.metadata.name = Some("gadget-owner".into());
    let owner = within(roles.create(&PostParams::default(), &owner))
        .await
        .unwrap();
    let mut crd = gadget_crd();
    crd.metadata.owner_references = Some(vec![
        k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
            api_version: "rbac.authorization.k8s.io/v1".into(),
            kind: "ClusterRole".into(),
            name: "gadget-owner".into(),
            uid: owner.metadata.uid.clone().unwrap(),
            ..Default::default()
        },
    ]);
    let crds: Api<CustomResourceDefinition> = Api::all(server.client());
    within(crds.create(&PostParams::default(), &crd))
        .await
        .unwrap();
    let api = gadgets(&server, "v1");
    within(api.create(
        &PostParams::default(),
        &gadget("g1", json!({"mode": "fast"})),
    ))
    .await
    .unwrap();

    within(roles.delete("gadget-owner", &DeleteParams::default()))
        .await
        .unwrap();
    // The collector marks the CRD deleted; its objects go, then the CRD, then its type.
    until_gadgets_and_gadget_gone(&server, &crds, "g1").await;
    assert_eq!(
        gadgets_status(&server).await,
        404,
        "the type is no longer served"
    );
}

/// A CRD of `v1` (stored) and `v1beta1`/`v1alpha1` (deprecated, with and without a warning of
/// their own), for the tests of what the real server's differential script found.
async fn install_doodads(server: &TestApiServer) {
    let schema = json!({"openAPIV3Schema": {"type": "object",
        "x-kubernetes-preserve-unknown-fields": true}});
    let crd: CustomResourceDefinition = serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "doodads.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "doodads", "kind": "Doodad"},
            "versions": [
                {"name": "v1", "served": true, "storage": true, "schema": schema},
                {"name": "v1beta1", "served": true, "storage": false, "deprecated": true,
                 "deprecationWarning": "v1beta1 is old", "schema": schema},
                {"name": "v1alpha1", "served": true, "storage": false, "deprecated": true,
                 "schema": schema}]}
    }))
    .unwrap();
    let crds: Api<CustomResourceDefinition> = Api::all(server.client());
    within(crds.create(&PostParams::default(), &crd))
        .await
        .expect("the CRD is created");
}

#[tokio::test]
async fn every_request_of_a_deprecated_crd_version_gets_its_warning() {
    let server = server().await;
    install_doodads(&server).await;
    let json_body = [("Content-Type", "application/json")];
    let created = raw(
        &server,
        "POST",
        "/apis/example.com/v1beta1/namespaces/default/doodads",
        &json_body,
        br#"{"apiVersion":"example.com/v1beta1","kind":"Doodad","metadata":{"name":"d1"}}"#,
    )
    .await;
    assert_eq!(created.status, 201);
    assert_eq!(created.header("Warning"), Some("299 - \"v1beta1 is old\""));
    // The default warning names the highest served version that is not deprecated.
    let listed = raw(
        &server,
        "GET",
        "/apis/example.com/v1alpha1/namespaces/default/doodads",
        &[],
        b"",
    )
    .await;
    assert_eq!(
        listed.header("Warning"),
        Some("299 - \"example.com/v1alpha1 Doodad is deprecated; use example.com/v1 Doodad\"")
    );
    // Errors too.
    let missing = raw(
        &server,
        "GET",
        "/apis/example.com/v1beta1/namespaces/default/doodads/nope",
        &[],
        b"",
    )
    .await;
    missing.assert_status(404, "NotFound");
    assert_eq!(missing.header("Warning"), Some("299 - \"v1beta1 is old\""));
    let stable = raw(
        &server,
        "GET",
        "/apis/example.com/v1/namespaces/default/doodads/d1",
        &[],
        b"",
    )
    .await;
    assert_eq!(stable.header("Warning"), None);
}

#[tokio::test]
async fn managed_fields_name_the_version_a_custom_resource_was_written_through() {
    let server = server().await;
    install_doodads(&server).await;
    let applied = raw(
        &server,
        "PATCH",
        "/apis/example.com/v1beta1/namespaces/default/doodads/d1?fieldManager=a",
        &[("Content-Type", "application/apply-patch+yaml")],
        br#"{"apiVersion":"example.com/v1beta1","kind":"Doodad","metadata":{"name":"d1"},"spec":{"x":1}}"#,
    )
    .await;
    assert_eq!(
        applied.status,
        201,
        "{}",
        String::from_utf8_lossy(&applied.body)
    );
    assert_eq!(applied.json()["apiVersion"], "example.com/v1beta1");
    let merged = raw(
        &server,
        "PATCH",
        "/apis/example.com/v1alpha1/namespaces/default/doodads/d1?fieldManager=m",
        &[("Content-Type", "application/merge-patch+json")],
        br#"{"spec":{"y":2}}"#,
    )
    .await;
    assert_eq!(merged.status, 200);
    let read = raw(
        &server,
        "GET",
        "/apis/example.com/v1/namespaces/default/doodads/d1",
        &[],
        b"",
    )
    .await
    .json();
    let versions: Vec<(&str, &str)> = read["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["manager"].as_str().unwrap(),
                e["apiVersion"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        versions,
        [("a", "example.com/v1beta1"), ("m", "example.com/v1alpha1")]
    );
    let stored = server
        .get_json("example.com/v1", "Doodad", Some("default"), "d1")
        .expect("stored");
    assert_eq!(stored["apiVersion"], "example.com/v1");
}

/// The real server's JSON serializer (Go's `json.Encoder`) ends every document with a
/// newline: objects, lists, Tables, metadata and discovery documents alike, so `kubectl get
/// --raw` prints a line, as against a cluster.
#[tokio::test]
async fn json_answers_end_with_a_newline_as_the_real_servers_do() {
    let server = server().await;
    install(&server).await;
    create_gadget(&server, "g1", json!({"mode": "fast", "replicas": 2})).await;
    let table = "application/json;as=Table;v=v1;g=meta.k8s.io";
    let metadata = "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io";
    let aggregated = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
    let gadget = "/apis/example.com/v1/namespaces/default/gadgets/g1";
    for (path, accept) in [
        (gadget, "application/json"),
        (gadget, table),
        (gadget, metadata),
        (
            "/apis/example.com/v1/namespaces/default/gadgets",
            "application/json",
        ),
        (
            "/apis/example.com/v1/namespaces/default/gadgets/g1/scale",
            "application/json",
        ),
        (
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            "application/json",
        ),
        ("/apis", aggregated),
        ("/apis/example.com/v1", "application/json"),
    ] {
        let response = raw(&server, "GET", path, &[("Accept", accept)], b"").await;
        assert_eq!(response.status, 200, "{path}");
        assert!(
            response.body.ends_with(b"}\n"),
            "{path} as {accept}: {}",
            String::from_utf8_lossy(&response.body)
        );
    }
}

/// `kubectl get gadget g1 --subresource=scale`: a custom resource's `Scale` goes through the
/// CRD's scale table convertor (`Name`, `Desired`, `Available`, `Age`), and metadata-only
/// clients get its `PartialObjectMetadata`; replicas of 0 leave `spec` empty, as Go writes a
/// `Scale`.
#[tokio::test]
async fn a_custom_resources_scale_is_served_as_a_table_and_as_metadata() {
    let server = server().await;
    install(&server).await;
    create_gadget(&server, "g1", json!({"mode": "fast", "replicas": 0})).await;
    let scale = "/apis/example.com/v1/namespaces/default/gadgets/g1/scale";
    let table = raw(
        &server,
        "GET",
        scale,
        &[("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")],
        b"",
    )
    .await
    .json();
    assert_eq!(table["kind"], "Table", "{table}");
    assert_eq!(
        column_names(&table),
        ["Name", "Desired", "Available", "Age"]
    );
    assert_eq!(
        table["columnDefinitions"][1]["description"],
        "Number of desired replicas"
    );
    assert_eq!(table["columnDefinitions"][3]["type"], "date");
    let cells = table["rows"][0]["cells"].as_array().expect("cells");
    assert_eq!(
        cells[..3],
        [json!("g1"), Value::Null, json!(0)],
        "{cells:?}"
    );
    assert_eq!(table["rows"][0]["object"]["kind"], "PartialObjectMetadata");
    let metadata = raw(
        &server,
        "GET",
        scale,
        &[(
            "Accept",
            "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io",
        )],
        b"",
    )
    .await
    .json();
    assert_eq!(metadata["kind"], "PartialObjectMetadata", "{metadata}");
    assert_eq!(metadata["metadata"]["name"], "g1");
    let plain = raw(&server, "GET", scale, &[], b"").await.json();
    assert_eq!(plain["spec"], json!({}), "{plain}");
    assert_eq!(plain["status"], json!({"replicas": 0}));
}

/// `kubectl get crd`: the CRD storage's default table convertor, `NAME` and `CREATED AT`
/// (the creation time as RFC 3339), as a cluster prints them.
#[tokio::test]
async fn crds_are_listed_with_the_time_they_were_created_at() {
    let server = server().await;
    install(&server).await;
    let table = raw(
        &server,
        "GET",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        &[("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")],
        b"",
    )
    .await
    .json();
    assert_eq!(column_names(&table), ["Name", "Created At"]);
    assert_eq!(table["columnDefinitions"][1]["type"], "date");
    let row = &table["rows"][0];
    assert_eq!(row["cells"][0], "gadgets.example.com");
    assert_eq!(
        row["cells"][1], row["object"]["metadata"]["creationTimestamp"],
        "{row}"
    );
}

/// An object stored before the CRD's storage version changed is read through either version
/// as that version (the `None` conversion: its `apiVersion`), pruned and defaulted by that
/// version's schema, and written through either; as apiextensions-apiserver does.
#[tokio::test]
async fn objects_stored_in_an_older_storage_version_are_served_as_the_version_asked_for() {
    let server = server().await;
    let crds = install(&server).await;
    create_gadget(
        &server,
        "g",
        json!({"mode": "fast", "extra": "kept by v1beta1 only"}),
    )
    .await;
    // v1 prunes `extra`; write it through v1beta1, whose schema keeps everything.
    let via_beta = gadgets(&server, "v1beta1");
    let patch = Patch::Merge(json!({"spec": {"extra": "x"}}));
    within(via_beta.patch("g", &PatchParams::default(), &patch))
        .await
        .unwrap();
    let mut crd = within(crds.get("gadgets.example.com")).await.unwrap();
    for version in &mut crd.spec.versions {
        version.storage = version.name == "v1beta1";
    }
    within(crds.replace("gadgets.example.com", &PostParams::default(), &crd))
        .await
        .unwrap();
    let read = within(via_beta.get("g")).await.unwrap();
    assert_eq!(
        read.types.as_ref().unwrap().api_version,
        "example.com/v1beta1",
        "read through v1beta1"
    );
    let via_v1 = gadgets(&server, "v1");
    let read = within(via_v1.get("g")).await.unwrap();
    assert_eq!(read.types.as_ref().unwrap().api_version, "example.com/v1");
    assert_eq!(
        read.data["spec"],
        json!({"mode": "fast", "replicas": 1}),
        "v1's schema prunes `extra` and defaults `replicas` on the way out"
    );
    let listed = within(via_beta.list(&ListParams::default())).await.unwrap();
    assert!(
        listed
            .items
            .iter()
            .all(|g| g.types.as_ref().unwrap().api_version == "example.com/v1beta1")
    );
    let patch = Patch::Merge(json!({"spec": {"mode": "slow"}}));
    let written = within(via_v1.patch("g", &PatchParams::default(), &patch))
        .await
        .expect("a write through the old storage version");
    assert_eq!(written.data["spec"]["mode"], "slow");
    let mut replaced = within(via_v1.get("g")).await.unwrap();
    replaced.data["spec"]["mode"] = json!("fast");
    let replaced = within(via_v1.replace("g", &PostParams::default(), &replaced))
        .await
        .expect("a replace through v1");
    assert_eq!(replaced.types.unwrap().api_version, "example.com/v1");
}
