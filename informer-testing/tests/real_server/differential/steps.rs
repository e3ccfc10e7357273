//! The script: one named step per request, run in order against both servers. A step's
//! request may use earlier answers *of the same server* (a resource version, a continue
//! token), through [`Context`].

mod edges;

use std::collections::HashMap;

use serde_json::{Value, json};

pub const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
pub const WIDGETS: &str = "/apis/example.com/v1/namespaces/default/widgets";
pub const GADGETS: &str = "/apis/example.com/v1/namespaces/default/gadgets";
const GADGETS_CRD: &str =
    "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.example.com";
const GIZMOS_CRD: &str =
    "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gizmos.example.com";

const MERGE: &str = "application/merge-patch+json";
const JSON_PATCH: &str = "application/json-patch+json";
const STRATEGIC: &str = "application/strategic-merge-patch+json";
const APPLY: &str = "application/apply-patch+yaml";
const AGGREGATED: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";
const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";
const PARTIAL: &str = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";

/// One request.
#[derive(Clone, Debug)]
pub struct Request {
    pub method: http::Method,
    pub path: String,
    pub content_type: Option<&'static str>,
    pub accept: Option<&'static str>,
    pub body: Option<Vec<u8>>,
    /// The answer is a stream of watch events (read until the server ends it).
    pub watch: bool,
}

impl Request {
    fn new(method: http::Method, path: impl Into<String>) -> Self {
        Self {
            method,
            path: path.into(),
            content_type: None,
            accept: None,
            body: None,
            watch: false,
        }
    }

    fn get(path: impl Into<String>) -> Self {
        Self::new(http::Method::GET, path)
    }

    /// A watch that the server ends after a second (`timeoutSeconds=1`).
    fn watch(path: impl Into<String>) -> Self {
        let path = path.into();
        let sep = if path.contains('?') { '&' } else { '?' };
        Self {
            watch: true,
            ..Self::get(format!("{path}{sep}watch=1&timeoutSeconds=1"))
        }
    }

    fn post(path: impl Into<String>, body: Value) -> Self {
        Self::new(http::Method::POST, path).json(body)
    }

    fn put(path: impl Into<String>, body: Value) -> Self {
        Self::new(http::Method::PUT, path).json(body)
    }

    fn patch(path: impl Into<String>, content_type: &'static str, body: Value) -> Self {
        Self {
            content_type: Some(content_type),
            ..Self::new(http::Method::PATCH, path).json(body)
        }
    }

    fn delete(path: impl Into<String>) -> Self {
        Self::new(http::Method::DELETE, path)
    }

    fn json(mut self, body: Value) -> Self {
        self.body = Some(body.to_string().into_bytes());
        self.content_type.get_or_insert("application/json");
        self
    }

    fn raw(mut self, body: &str) -> Self {
        self.body = Some(body.as_bytes().to_vec());
        self.content_type.get_or_insert("application/json");
        self
    }

    fn accept(mut self, accept: &'static str) -> Self {
        self.accept = Some(accept);
        self
    }
}

/// Earlier answers of one server, by step name (raw: before normalising).
#[derive(Default)]
pub struct Context {
    pub answers: HashMap<&'static str, Value>,
}

impl Context {
    /// The body of an earlier step's answer.
    fn body(&self, step: &str) -> &Value {
        match self.answers.get(step) {
            Some(answer) => &answer["body"],
            None => panic!("the script refers to step {step:?}, which has not run"),
        }
    }

    /// `metadata.resourceVersion` of an earlier answer ("" if it has none).
    fn rv(&self, step: &str) -> String {
        self.body(step)["metadata"]["resourceVersion"]
            .as_str()
            .unwrap_or("")
            .to_string()
    }

    /// `metadata.continue` of an earlier list answer ("" if it has none).
    fn continue_token(&self, step: &str) -> String {
        self.body(step)["metadata"]["continue"]
            .as_str()
            .unwrap_or("")
            .to_string()
    }
}

/// Picks the part of an answer's body that is compared (`None`: all of it).
pub type Pick = fn(&Value) -> Value;

/// One step of the script.
pub struct Step {
    pub name: &'static str,
    pub request: Box<dyn Fn(&Context) -> Request + Send + Sync>,
    pub pick: Option<Pick>,
    /// After this step, wait until this path answers this status (a created CRD's type is
    /// served, a deleted object or type is gone).
    pub then_wait_until: Option<(&'static str, u16)>,
}

impl Step {
    fn new(
        name: &'static str,
        request: impl Fn(&Context) -> Request + Send + Sync + 'static,
    ) -> Self {
        Self {
            name,
            request: Box::new(request),
            pick: None,
            then_wait_until: None,
        }
    }

    fn fixed(name: &'static str, request: Request) -> Self {
        Self::new(name, move |_| request.clone())
    }

    fn pick(mut self, pick: Pick) -> Self {
        self.pick = Some(pick);
        self
    }

    fn then_wait_until(mut self, path: &'static str, status: u16) -> Self {
        self.then_wait_until = Some((path, status));
        self
    }
}

/// The CRD of the script: namespaced `Widget` with a structural schema, a status
/// subresource, a printer column and a short name (as `shared/apiserver/examples`).
pub fn widget_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {
                "plural": "widgets", "singular": "widget", "kind": "Widget",
                "listKind": "WidgetList", "shortNames": ["wd"]
            },
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "additionalPrinterColumns": [{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}],
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "spec": {"type": "object", "properties": {
                            "size": {"type": "integer"},
                            "color": {"type": "string"}
                        }},
                        "status": {"type": "object", "properties": {
                            "ready": {"type": "boolean"}
                        }}
                    }
                }}
            }]
        }
    })
}

/// The second CRD: a structural schema with every kind of rule, defaults, a map list with a
/// defaulted key, an embedded resource, int-or-string, status and scale subresources, a
/// selectable field and a category.
pub fn gadget_crd() -> Value {
    let mut crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "gadgets", "kind": "Gadget", "categories": ["toys"]},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}, "scale": {
                    "specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}},
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "required": ["mode"], "properties": {
                        "mode": {"type": "string", "enum": ["fast", "slow"]},
                        "replicas": {"type": "integer", "minimum": 0, "maximum": 10, "default": 1},
                        "name": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 5},
                        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3,
                            "x-kubernetes-list-type": "set"},
                        "ports": {"type": "array", "x-kubernetes-list-type": "map",
                            "x-kubernetes-list-map-keys": ["port", "protocol"],
                            "items": {"type": "object", "required": ["port"], "properties": {
                                "port": {"type": "integer"},
                                "protocol": {"type": "string", "default": "TCP"},
                                "name": {"type": "string"}}}},
                        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                        "nested": {"type": "object", "default": {}, "properties": {
                            "a": {"type": "string", "default": "x"}}},
                        "template": {"type": "object", "x-kubernetes-embedded-resource": true,
                            "x-kubernetes-preserve-unknown-fields": true},
                        "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
                    }},
                    "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}}
                }}}
            }]
        }
    });
    let version = &mut crd["spec"]["versions"][0];
    version["selectableFields"] = json!([{"jsonPath": ".spec.mode"}]);
    // Printer columns through JSONPath's filters, indexes, slices, unions and descent, and
    // paths that fail (an index out of range, a comparison of different types): the cell of
    // a failing path is empty.
    version["additionalPrinterColumns"] = json!([
        {"name": "TCP", "type": "string", "jsonPath": ".spec.ports[?(@.protocol==\"TCP\")].name"},
        {"name": "High", "type": "string", "jsonPath": ".spec.ports[?(@.port>1)].name"},
        {"name": "Named", "type": "string", "jsonPath": ".spec.ports[?(@.name)].port"},
        {"name": "First", "type": "integer", "jsonPath": ".spec.ports[0].port"},
        {"name": "Last tag", "type": "string", "jsonPath": ".spec.tags[-1]"},
        {"name": "Tags", "type": "string", "jsonPath": ".spec.tags[*]"},
        {"name": "Some", "type": "string", "jsonPath": ".spec.tags[0:2]"},
        {"name": "Union", "type": "string", "jsonPath": ".spec['name','mode']"},
        {"name": "Deep", "type": "string", "jsonPath": "..protocol"},
        {"name": "Label", "type": "string", "jsonPath": ".spec.labels['a']"},
        {"name": "Ports", "type": "string", "jsonPath": ".spec.ports"},
        {"name": "Beyond", "type": "string", "jsonPath": ".spec.tags[5]"},
        {"name": "Mismatch", "type": "string", "jsonPath": ".spec.ports[?(@.port==\"1\")].name"},
        {"name": "Replicas", "type": "integer", "jsonPath": ".status.replicas", "priority": 1}
    ]);
    version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["size"] =
        json!({"x-kubernetes-int-or-string": true});
    crd
}

fn gadget(name: &str, spec: Value) -> Value {
    json!({
        "apiVersion": "example.com/v1",
        "kind": "Gadget",
        "metadata": {"name": name},
        "spec": spec,
    })
}

fn gadget_at(name: &str) -> String {
    format!("{GADGETS}/{name}")
}

fn widget(name: &str, labels: Value, spec: Value) -> Value {
    json!({
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": name, "labels": labels},
        "spec": spec,
    })
}

/// The label of objects made only to probe an error: lists that follow leave them out, so
/// that a probe one server accepts and the other refuses does not change later answers.
fn probe() -> Value {
    json!({"probe": "yes"})
}

fn at(name: &str) -> String {
    format!("{WIDGETS}/{name}")
}

/// `/apis`: only the `example.com` group (the fake also serves built-in groups).
fn example_group(body: &Value) -> Value {
    body["groups"]
        .as_array()
        .and_then(|groups| groups.iter().find(|g| g["name"] == "example.com"))
        .cloned()
        .unwrap_or(Value::Null)
}

/// Aggregated `/apis`: the kind of document and the `example.com` item.
fn example_group_discovery(body: &Value) -> Value {
    let item = body["items"]
        .as_array()
        .and_then(|items| {
            items
                .iter()
                .find(|i| i["metadata"]["name"] == "example.com")
        })
        .cloned()
        .unwrap_or(Value::Null);
    json!({"apiVersion": body["apiVersion"], "kind": body["kind"], "example.com": item})
}

/// The script.
pub fn steps() -> Vec<Step> {
    let mut steps = vec![
        // CRD creation and discovery.
        Step {
            then_wait_until: Some((WIDGETS, 200)),
            ..Step::fixed("crd: create", Request::post(CRDS, widget_crd()))
        },
        Step::fixed(
            "crd: get",
            Request::get(format!("{CRDS}/widgets.example.com")),
        ),
        Step::fixed(
            "discovery: /apis/example.com/v1",
            Request::get("/apis/example.com/v1"),
        ),
        Step::fixed(
            "discovery: /apis/example.com",
            Request::get("/apis/example.com"),
        ),
        Step::fixed(
            "discovery: /apis, the example.com group",
            Request::get("/apis"),
        )
        .pick(example_group),
        Step::fixed(
            "discovery: aggregated /apis, the example.com group",
            Request::get("/apis").accept(AGGREGATED),
        )
        .pick(example_group_discovery),
        // Create and get.
        Step::fixed("list: empty", Request::get(WIDGETS)),
        Step::fixed(
            "create: w1",
            Request::post(
                WIDGETS,
                widget(
                    "w1",
                    json!({"app": "a", "tier": "front"}),
                    json!({"size": 1, "color": "red"}),
                ),
            ),
        ),
        Step::fixed(
            "create: w2",
            Request::post(
                WIDGETS,
                widget("w2", json!({"app": "b"}), json!({"size": 2})),
            ),
        ),
        Step::fixed(
            "create: w3",
            Request::post(
                WIDGETS,
                widget(
                    "w3",
                    json!({"app": "a", "tier": "back"}),
                    json!({"size": 3}),
                ),
            ),
        ),
        Step::fixed(
            "create: generateName",
            Request::post(
                WIDGETS,
                json!({
                    "apiVersion": "example.com/v1", "kind": "Widget",
                    "metadata": {"generateName": "gen-"}, "spec": {"size": 9}
                }),
            ),
        ),
        Step::fixed(
            "create: w1 again (already exists)",
            Request::post(WIDGETS, widget("w1", json!({}), json!({"size": 1}))),
        ),
        Step::fixed("get: w1", Request::get(at("w1"))),
        Step::fixed("get: missing (not found)", Request::get(at("nope"))),
        // Updates.
        Step::new("update: w1 at its version", |cx| {
            let mut w1 = cx.body("create: w1").clone();
            w1["spec"]["size"] = json!(2);
            Request::put(at("w1"), w1)
        }),
        Step::new("update: w1 at a stale version", |cx| {
            let mut w1 = cx.body("create: w1").clone();
            w1["spec"]["size"] = json!(5);
            Request::put(at("w1"), w1)
        }),
        Step::fixed(
            "create: probe",
            Request::post(
                WIDGETS,
                widget("probe", json!({"probe": "yes"}), json!({"size": 1})),
            ),
        ),
        Step::fixed(
            "update: probe without a resourceVersion",
            Request::put(
                at("probe"),
                widget("probe", json!({"probe": "yes"}), json!({"size": 20})),
            ),
        ),
        Step::new("update: name differs from the URL", |cx| {
            let mut w1 = cx.body("update: w1 at its version").clone();
            w1["metadata"]["name"] = json!("w9");
            Request::put(at("w1"), w1)
        }),
        // Patches.
        Step::fixed(
            "patch: merge",
            Request::patch(
                at("w1"),
                MERGE,
                json!({"spec": {"color": "blue"}, "metadata": {"labels": {"tier": null}}}),
            ),
        ),
        Step::fixed(
            "patch: json",
            Request::patch(
                at("w2"),
                JSON_PATCH,
                json!([
                    {"op": "replace", "path": "/spec/size", "value": 5},
                    {"op": "add", "path": "/metadata/labels/extra", "value": "x"}
                ]),
            ),
        ),
        Step::fixed(
            "patch: json test operation fails",
            Request::patch(
                at("w2"),
                JSON_PATCH,
                json!([{"op": "test", "path": "/spec/size", "value": 99}]),
            ),
        ),
        Step::fixed(
            "patch: json replace of a missing key sets it",
            Request::patch(
                at("w2"),
                JSON_PATCH,
                json!([
                    {"op": "replace", "path": "/metadata/annotations", "value": {"a": "1"}},
                    {"op": "replace", "path": "/metadata/annotations/b", "value": "2"},
                    {"op": "test", "path": "/spec/missing", "value": null}
                ]),
            ),
        ),
        Step::fixed(
            "patch: empty metadata collections are left out",
            Request::patch(
                at("w2"),
                JSON_PATCH,
                json!([
                    {"op": "replace", "path": "/metadata/annotations", "value": {}},
                    {"op": "add", "path": "/metadata/finalizers", "value": []},
                    {"op": "add", "path": "/metadata/ownerReferences", "value": []}
                ]),
            ),
        ),
        Step::fixed(
            "patch: metadata.uid cannot change",
            Request::patch(
                at("w2"),
                MERGE,
                json!({"metadata": {"uid": "00000000-0000-0000-0000-000000000000"}}),
            ),
        ),
        Step::fixed(
            "patch: json replace under a missing parent fails",
            Request::patch(
                at("w2"),
                JSON_PATCH,
                json!([{"op": "replace", "path": "/spec/nested/x", "value": 1}]),
            ),
        ),
        Step::fixed(
            "patch: json unknown operation fails",
            Request::patch(
                at("w2"),
                JSON_PATCH,
                json!([{"op": "frob", "path": "/spec/size", "value": 1}]),
            ),
        ),
        Step::fixed(
            "patch: strategic merge on a custom resource",
            Request::patch(at("w2"), STRATEGIC, json!({"spec": {"size": 6}})),
        ),
        Step::fixed(
            "patch: missing object (not found)",
            Request::patch(at("nope"), MERGE, json!({"spec": {"size": 1}})),
        ),
        Step::fixed(
            "patch: a merge patch that is a list",
            Request::patch(at("w2"), MERGE, json!([{"op": "add"}])),
        ),
        Step::fixed(
            "patch: a merge patch that is a list, fieldValidation=Ignore",
            Request::patch(
                format!("{}?fieldValidation=Ignore", at("w2")),
                MERGE,
                json!([]),
            ),
        ),
        Step::fixed(
            "patch: a null merge patch",
            Request::patch(at("w2"), MERGE, Value::Null),
        ),
        Step::fixed(
            "patch: a null JSON patch",
            Request::patch(at("w2"), JSON_PATCH, Value::Null),
        ),
        Step::fixed(
            "patch: a JSON patch that is an object",
            Request::patch(at("w2"), JSON_PATCH, json!({"op": "add"})),
        ),
        Step::fixed(
            "patch: a JSON patch that is an object, fieldValidation=Ignore",
            Request::patch(
                format!("{}?fieldValidation=Ignore", at("w2")),
                JSON_PATCH,
                json!({"op": "add"}),
            ),
        ),
        // Server-side apply with two managers.
        Step::fixed(
            "apply: manager a creates w4",
            Request::patch(
                format!("{}?fieldManager=a", at("w4")),
                APPLY,
                widget(
                    "w4",
                    json!({"app": "c"}),
                    json!({"size": 1, "color": "red"}),
                ),
            ),
        ),
        Step::fixed(
            "apply: manager b conflicts on spec.color",
            Request::patch(
                format!("{}?fieldManager=b", at("w4")),
                APPLY,
                json!({"apiVersion": "example.com/v1", "kind": "Widget",
                       "metadata": {"name": "w4"}, "spec": {"color": "green"}}),
            ),
        ),
        Step::fixed(
            "apply: manager b forces spec.color",
            Request::patch(
                format!("{}?fieldManager=b&force=true", at("w4")),
                APPLY,
                json!({"apiVersion": "example.com/v1", "kind": "Widget",
                       "metadata": {"name": "w4"}, "spec": {"color": "green"}}),
            ),
        ),
        Step::fixed(
            "apply: manager a no longer sets spec.color",
            Request::patch(
                format!("{}?fieldManager=a", at("w4")),
                APPLY,
                json!({"apiVersion": "example.com/v1", "kind": "Widget",
                       "metadata": {"name": "w4", "labels": {"app": "c"}}, "spec": {"size": 2}}),
            ),
        ),
        Step::fixed(
            "apply: creating, the body names another object",
            Request::patch(
                format!("{}?fieldManager=a", at("w5")),
                APPLY,
                json!({"apiVersion": "example.com/v1", "kind": "Widget",
                       "metadata": {"name": "w6"}, "spec": {"size": 1}}),
            ),
        ),
        Step::fixed(
            "apply: creating, the body names no object",
            Request::patch(
                format!("{}?fieldManager=a", at("w5")),
                APPLY,
                json!({"apiVersion": "example.com/v1", "kind": "Widget", "spec": {"size": 1}}),
            ),
        ),
        Step::fixed("get: w5 was not created", Request::get(at("w5"))),
        Step::fixed(
            "apply: without a fieldManager",
            Request::patch(
                at("w4"),
                APPLY,
                json!({"apiVersion": "example.com/v1", "kind": "Widget",
                       "metadata": {"name": "w4"}, "spec": {"size": 3}}),
            ),
        ),
        Step::fixed("get: w4 with its managed fields", Request::get(at("w4"))),
        // The status subresource.
        Step::new("status: the main resource ignores status", |cx| {
            let mut w1 = cx.body("patch: merge").clone();
            w1["status"] = json!({"ready": true});
            Request::put(at("w1"), w1)
        }),
        Step::fixed(
            "status: merge patch of status",
            Request::patch(
                format!("{}/status", at("w1")),
                MERGE,
                json!({"status": {"ready": true}}),
            ),
        ),
        Step::fixed(
            "status: the status subresource ignores spec",
            Request::patch(
                format!("{}/status", at("w1")),
                MERGE,
                json!({"spec": {"size": 100}}),
            ),
        ),
        Step::fixed("status: get", Request::get(format!("{}/status", at("w1")))),
        // Finalizers and deletion.
        Step::fixed(
            "finalizers: add one to w3",
            Request::patch(
                at("w3"),
                MERGE,
                json!({"metadata": {"finalizers": ["example.com/keep"]}}),
            ),
        ),
        Step::fixed(
            "delete: w3, which has a finalizer",
            Request::delete(at("w3")),
        ),
        Step::fixed("get: w3 while it terminates", Request::get(at("w3"))),
        Step::fixed(
            "patch: w3's spec while it terminates",
            Request::patch(at("w3"), MERGE, json!({"spec": {"size": 33}})),
        ),
        Step::fixed(
            "finalizers: no new ones while deleting",
            Request::patch(
                at("w3"),
                MERGE,
                json!({"metadata": {"finalizers": ["example.com/keep", "example.com/more"]}}),
            ),
        ),
        Step::fixed(
            "finalizers: removing the last one deletes w3",
            Request::patch(at("w3"), MERGE, json!({"metadata": {"finalizers": null}})),
        ),
        Step::fixed("get: w3 is gone", Request::get(at("w3"))),
        Step::fixed("delete: w2", Request::delete(at("w2"))),
        Step::fixed("delete: missing (not found)", Request::delete(at("nope"))),
        Step::fixed(
            "delete: w1 with a wrong uid precondition",
            Request::delete(at("w1")).json(json!({
                "apiVersion": "v1", "kind": "DeleteOptions",
                "preconditions": {"uid": "00000000-0000-0000-0000-000000000000"}
            })),
        ),
        Step::fixed(
            "delete: w1 with a stale resourceVersion precondition",
            Request::delete(at("w1")).json(json!({
                "apiVersion": "v1", "kind": "DeleteOptions",
                "preconditions": {"resourceVersion": "1"}
            })),
        )
        // The record's version differs between the servers: compared up to it.
        .pick(|body| {
            let message = body["message"].as_str().unwrap_or("");
            json!({
                "code": body["code"], "reason": body["reason"], "details": body["details"],
                "message": message.split(" in record (").next(),
            })
        }),
    ];
    // Objects for the selectors and pages.
    for (name, step) in [
        ("p0", "create: p0"),
        ("p1", "create: p1"),
        ("p2", "create: p2"),
        ("p3", "create: p3"),
        ("p4", "create: p4"),
    ] {
        steps.push(Step::fixed(
            step,
            Request::post(
                WIDGETS,
                widget(name, json!({"page": "yes"}), json!({"size": 10})),
            ),
        ));
    }
    let pages = format!("{WIDGETS}?labelSelector=page%3Dyes&limit=2");
    steps.extend([
        // Selectors.
        Step::fixed(
            "list: label selector app=a",
            Request::get(format!("{WIDGETS}?labelSelector=app%3Da")),
        ),
        Step::fixed(
            "list: set-based label selector",
            Request::get(format!("{WIDGETS}?labelSelector=app%20in%20(a%2Cc)%2C!tier")),
        ),
        Step::fixed(
            "list: field selector metadata.name=w1",
            Request::get(format!("{WIDGETS}?fieldSelector=metadata.name%3Dw1")),
        ),
        Step::fixed(
            "list: field selector metadata.namespace!=default",
            Request::get(format!("{WIDGETS}?fieldSelector=metadata.namespace!%3Ddefault")),
        ),
        Step::fixed(
            "list: unsupported field selector",
            Request::get(format!("{WIDGETS}?fieldSelector=spec.size%3D1")),
        ),
        Step::fixed(
            "list: malformed label selector",
            Request::get(format!("{WIDGETS}?labelSelector=app%20in%20(a")),
        ),
        Step::fixed(
            "list: all namespaces",
            Request::get("/apis/example.com/v1/widgets?labelSelector=!probe"),
        ),
        Step::fixed(
            "list: as a Table",
            Request::get(format!("{WIDGETS}?labelSelector=page%3Dyes")).accept(TABLE),
        ),
        Step::fixed(
            "list: as a Table with whole objects",
            Request::get(format!("{WIDGETS}?labelSelector=page%3Dyes&includeObject=Object"))
                .accept(TABLE),
        ),
        Step::fixed(
            "list: as a Table without objects",
            Request::get(format!("{WIDGETS}?labelSelector=page%3Dyes&includeObject=None"))
                .accept(TABLE),
        ),
        Step::fixed("get: one object as a Table", Request::get(at("p1")).accept(TABLE)),
        Step::fixed(
            "watch: as Tables",
            Request::watch(format!("{WIDGETS}?labelSelector=page%3Dyes")).accept(TABLE),
        ),
        // Pages.
        Step::fixed("page: 1 of 3", Request::get(pages.clone())),
        Step::new("page: 2 of 3", {
            let pages = pages.clone();
            move |cx| Request::get(format!("{pages}&continue={}", cx.continue_token("page: 1 of 3")))
        }),
        Step::new("page: 3 of 3", {
            let pages = pages.clone();
            move |cx| Request::get(format!("{pages}&continue={}", cx.continue_token("page: 2 of 3")))
        }),
        Step::fixed(
            "page: malformed continue token",
            Request::get(format!("{pages}&continue=bm90LWEtdG9rZW4")),
        ),
        Step::fixed(
            "page: limit with resourceVersion=0",
            Request::get(format!("{pages}&resourceVersion=0")),
        ),
        // Resource versions of lists.
        Step::new("list: exact resourceVersion of create: p1", |cx| {
            Request::get(format!(
                "{WIDGETS}?labelSelector=page%3Dyes&resourceVersion={}&resourceVersionMatch=Exact",
                cx.rv("create: p1")
            ))
        }),
        Step::fixed(
            "list: resourceVersionMatch without resourceVersion",
            Request::get(format!("{WIDGETS}?resourceVersionMatch=NotOlderThan")),
        ),
        Step::fixed(
            "list: malformed resourceVersion",
            Request::get(format!("{WIDGETS}?resourceVersion=abc")),
        ),
        Step::fixed(
            "list: too large resourceVersion",
            Request::get(format!(
                "{WIDGETS}?resourceVersion=99999999999&resourceVersionMatch=NotOlderThan"
            )),
        ),
        // Watches.
        Step::fixed(
            "watch: from 0",
            Request::watch(format!("{WIDGETS}?resourceVersion=0&labelSelector=!probe")),
        ),
        Step::new("watch: from the version of create: p2", |cx| {
            Request::watch(format!(
                "{WIDGETS}?resourceVersion={}&labelSelector=!probe",
                cx.rv("create: p2")
            ))
        }),
        Step::new("watch: from a list's version", |cx| {
            Request::watch(format!("{WIDGETS}?resourceVersion={}", cx.rv("list: all namespaces")))
        }),
        Step::fixed(
            "watch: from resourceVersion 1 (older than the server keeps)",
            Request::watch(format!("{WIDGETS}?resourceVersion=1")),
        ),
        Step::fixed(
            "watch: streaming list",
            Request::watch(format!(
                "{WIDGETS}?labelSelector=page%3Dyes&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"
            )),
        ),
        Step::fixed(
            "watch: streaming list without resourceVersionMatch",
            Request::watch(format!("{WIDGETS}?sendInitialEvents=true&allowWatchBookmarks=true")),
        ),
        Step::fixed(
            "watch: from 0 with bookmarks ends its initial events with the bookmark",
            Request::watch(format!(
                "{WIDGETS}?resourceVersion=0&labelSelector=page%3Dyes&allowWatchBookmarks=true"
            )),
        ),
        Step::fixed(
            "watch: unset resourceVersion with bookmarks ends its initial events with the bookmark",
            Request::watch(format!("{WIDGETS}?labelSelector=page%3Dyes&allowWatchBookmarks=true")),
        ),
        Step::fixed(
            "watch: streaming list without bookmarks",
            Request::watch(format!(
                "{WIDGETS}?labelSelector=page%3Dyes&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
            )),
        ),
        Step::fixed(
            "list: sendInitialEvents is forbidden",
            Request::get(format!(
                "{WIDGETS}?sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
            )),
        ),
        Step::fixed(
            "list: a negative limit is no limit",
            Request::get(format!("{WIDGETS}?labelSelector=page%3Dyes&limit=-1")),
        ),
        Step::fixed(
            "watch: label selector from 0",
            Request::watch(format!("{WIDGETS}?resourceVersion=0&labelSelector=app%3Da")),
        ),
        Step::fixed(
            "watch: malformed resourceVersion",
            Request::watch(format!("{WIDGETS}?resourceVersion=abc")),
        ),
        Step::fixed(
            "watch: from a resourceVersion not reached yet",
            Request::watch(format!("{WIDGETS}?resourceVersion=99999999999")),
        ),
        // Validation and malformed requests.
        Step::fixed(
            "validation: Strict refuses an unknown field",
            Request::post(
                format!("{WIDGETS}?fieldValidation=Strict"),
                widget("v-strict", probe(), json!({"size": 1, "bogus": true})),
            ),
        ),
        Step::fixed(
            "validation: Warn accepts an unknown field with a warning",
            Request::post(
                format!("{WIDGETS}?fieldValidation=Warn"),
                widget("v-warn", probe(), json!({"size": 1, "bogus": true})),
            ),
        ),
        Step::fixed(
            "validation: an unknown field by default",
            Request::post(WIDGETS, widget("v-default", probe(), json!({"size": 1, "bogus": true}))),
        ),
        Step::fixed(
            "validation: Strict refuses a duplicate field",
            Request::new(http::Method::POST, format!("{WIDGETS}?fieldValidation=Strict")).raw(
                r#"{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"v-dup","labels":{"probe":"yes"}},"spec":{"size":1,"size":2}}"#,
            ),
        ),
        Step::fixed(
            "validation: a field of the wrong type",
            Request::post(WIDGETS, widget("v-type", probe(), json!({"size": "big"}))),
        ),
        Step::fixed(
            "validation: invalid name",
            Request::post(WIDGETS, widget("Bad_Name", probe(), json!({"size": 1}))),
        ),
        Step::fixed(
            "validation: wrong kind in the body",
            Request::post(
                WIDGETS,
                json!({"apiVersion": "example.com/v1", "kind": "Gadget",
                       "metadata": {"name": "v-kind", "labels": {"probe": "yes"}}}),
            ),
        ),
        Step::fixed(
            "validation: wrong apiVersion in the body",
            Request::post(
                WIDGETS,
                json!({"apiVersion": "example.com/v2", "kind": "Widget",
                       "metadata": {"name": "v-version", "labels": {"probe": "yes"}}}),
            ),
        ),
        Step::fixed(
            "validation: no kind in the body",
            Request::post(
                WIDGETS,
                json!({"apiVersion": "example.com/v1",
                       "metadata": {"name": "v-nokind", "labels": {"probe": "yes"}}}),
            ),
        ),
        Step::fixed(
            "validation: no apiVersion in the body",
            Request::post(
                WIDGETS,
                json!({"kind": "Widget",
                       "metadata": {"name": "v-noversion", "labels": {"probe": "yes"}}}),
            ),
        ),
        Step::fixed(
            "validation: v-typemeta created",
            Request::post(WIDGETS, widget("v-typemeta", probe(), json!({"size": 1}))),
        ),
        Step::fixed(
            "validation: a patch to another kind",
            Request::patch(at("v-typemeta"), MERGE, json!({"kind": "Gadget"})),
        ),
        Step::fixed(
            "validation: an update without kind",
            Request::put(
                at("v-typemeta"),
                json!({"apiVersion": "example.com/v1",
                       "metadata": {"name": "v-typemeta", "labels": {"probe": "yes"}}}),
            ),
        ),
        Step::fixed(
            "validation: an update of another kind at a stale version",
            Request::put(
                at("v-typemeta"),
                json!({"apiVersion": "example.com/v1", "kind": "Gadget",
                       "metadata": {"name": "v-typemeta", "resourceVersion": "1",
                                    "labels": {"probe": "yes"}}}),
            ),
        ),
        Step::fixed(
            "validation: an update of another kind at no version",
            Request::put(
                at("v-typemeta"),
                json!({"apiVersion": "example.com/v1", "kind": "Gadget",
                       "metadata": {"name": "v-typemeta", "labels": {"probe": "yes"}}}),
            ),
        ),
        Step::fixed(
            "validation: apply of another kind",
            Request::patch(
                format!("{}?fieldManager=a", at("v-typemeta")),
                APPLY,
                json!({"apiVersion": "example.com/v1", "kind": "Gadget",
                       "metadata": {"name": "v-typemeta"}}),
            ),
        ),
        Step::fixed(
            "validation: apply without apiVersion",
            Request::patch(
                format!("{}?fieldManager=a", at("v-typemeta")),
                APPLY,
                json!({"kind": "Widget", "metadata": {"name": "v-typemeta"}}),
            ),
        ),
        Step::fixed(
            "validation: namespace differs from the URL",
            Request::post(
                WIDGETS,
                json!({"apiVersion": "example.com/v1", "kind": "Widget",
                       "metadata": {"name": "v-ns", "namespace": "other", "labels": {"probe": "yes"}}}),
            ),
        ),
        Step::fixed(
            "validation: malformed JSON",
            Request::new(http::Method::POST, WIDGETS).raw("{not json"),
        ),
        Step::fixed(
            "validation: unknown fieldValidation value",
            Request::post(
                format!("{WIDGETS}?fieldValidation=Loud"),
                widget("v-loud", probe(), json!({"size": 1})),
            ),
        ),
        Step::fixed(
            "get: unknown resource in a served group",
            Request::get("/apis/example.com/v1/namespaces/default/gadgets"),
        ),
        Step::fixed(
            "get: invalid namespace name",
            Request::get("/apis/example.com/v1/namespaces/Bad_NS/widgets/w1"),
        ),
        // Collections.
        Step::fixed(
            "deletecollection: page=yes",
            Request::delete(format!("{WIDGETS}?labelSelector=page%3Dyes")),
        ),
        Step::fixed(
            "list: after the deletecollection",
            Request::get(format!("{WIDGETS}?labelSelector=!probe")),
        ),
    ]);
    steps.extend(gadget_steps());
    steps.extend(edges::steps());
    steps
}

/// The second CRD: structural schema rules (pruning, defaults, validation), server-side
/// apply with a map list between two managers, name conflicts, and deletion.
fn gadget_steps() -> Vec<Step> {
    vec![
        Step::fixed("crd: create gadgets", Request::post(CRDS, gadget_crd()))
            .then_wait_until(GADGETS, 200),
        Step::fixed("crd: get gadgets", Request::get(GADGETS_CRD)),
        Step::fixed(
            "discovery: /apis/apiextensions.k8s.io/v1",
            Request::get("/apis/apiextensions.k8s.io/v1"),
        ),
        Step::fixed(
            "discovery: /apis/example.com/v1 with gadgets",
            Request::get("/apis/example.com/v1"),
        ),
        Step::fixed(
            "crd: a kind another CRD of the group has",
            Request::post(
                CRDS,
                json!({
                    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                    "metadata": {"name": "gizmos.example.com"},
                    "spec": {"group": "example.com", "scope": "Cluster",
                        "names": {"plural": "gizmos", "kind": "Gadget"},
                        "versions": [{"name": "v1", "served": true, "storage": true,
                            "schema": {"openAPIV3Schema": {"type": "object"}}}]}
                }),
            ),
        )
        .then_wait_until(GIZMOS_CRD, 200),
        Step::fixed("crd: gizmos' names are refused", Request::get(GIZMOS_CRD))
            .pick(|body| json!({"status": body["status"]["acceptedNames"], "conditions": body["status"]["conditions"]})),
        Step::fixed(
            "crd: delete gizmos with a wrong uid precondition",
            Request::delete(GIZMOS_CRD).json(json!({
                "apiVersion": "v1", "kind": "DeleteOptions",
                "preconditions": {"uid": "00000000-0000-0000-0000-000000000000"}
            })),
        )
        .pick(|body| json!({"code": body["code"], "reason": body["reason"], "details": body["details"]})),
        Step::fixed(
            "crd: delete gizmos",
            Request::delete(GIZMOS_CRD),
        )
        .then_wait_until(GIZMOS_CRD, 404),
        Step::fixed(
            "crd: invalid (name, storage version, list kind)",
            Request::post(
                CRDS,
                json!({
                    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                    "metadata": {"name": "things.example.org"},
                    "spec": {"group": "example.com", "scope": "Namespaced",
                        "names": {"plural": "things", "kind": "Thing", "listKind": "Thing"},
                        "versions": [{"name": "v1", "served": true, "storage": true,
                            "schema": {"openAPIV3Schema": {"type": "object"}}}]}
                }),
            ),
        ),
        // Pruning and defaults.
        Step::fixed(
            "gadget: create with unknown fields, defaults applied",
            Request::post(
                GADGETS,
                gadget(
                    "g1",
                    json!({"mode": "fast", "bogus": 1, "ports": [{"port": 80, "x": 1}],
                        "template": {"apiVersion": "v1", "kind": "Pod",
                            "metadata": {"name": "t", "bogus": true}, "spec": {}},
                        "extra": {"kept": {"deep": 1}}}),
                ),
            ),
        ),
        Step::fixed(
            "gadget: Strict refuses a nested unknown field",
            Request::post(
                format!("{GADGETS}?fieldValidation=Strict"),
                gadget("g-strict", json!({"mode": "fast", "ports": [{"port": 1, "x": 1}]})),
            ),
        ),
        Step::fixed(
            "gadget: merge patch with an unknown field, Warn",
            Request::patch(gadget_at("g1"), MERGE, json!({"spec": {"bogus": 2, "replicas": 3}})),
        ),
        // Validation, one rule per step (several errors come in no fixed order).
        Step::fixed(
            "gadget: enum",
            Request::post(GADGETS, gadget("g-enum", json!({"mode": "medium"}))),
        ),
        Step::fixed(
            "gadget: required",
            Request::post(GADGETS, gadget("g-required", json!({}))),
        ),
        Step::fixed(
            "gadget: maximum",
            Request::post(GADGETS, gadget("g-max", json!({"mode": "fast", "replicas": 11}))),
        ),
        Step::fixed(
            "gadget: maxLength",
            Request::post(GADGETS, gadget("g-len", json!({"mode": "fast", "name": "abcdefg"}))),
        ),
        Step::fixed(
            "gadget: pattern",
            Request::post(GADGETS, gadget("g-pattern", json!({"mode": "fast", "name": "AB"}))),
        ),
        Step::fixed(
            "gadget: maxItems",
            Request::post(
                GADGETS,
                gadget("g-items", json!({"mode": "fast", "tags": ["a", "b", "c", "d"]})),
            ),
        ),
        Step::fixed(
            "gadget: duplicate in a set",
            Request::post(GADGETS, gadget("g-set", json!({"mode": "fast", "tags": ["a", "a"]}))),
        ),
        Step::fixed(
            "gadget: duplicate key in a map list",
            Request::post(
                GADGETS,
                gadget("g-map", json!({"mode": "fast", "ports": [{"port": 1}, {"port": 1}]})),
            ),
        ),
        Step::fixed(
            "gadget: wrong type of a map value",
            Request::post(GADGETS, gadget("g-type", json!({"mode": "fast", "labels": {"a": 1}}))),
        ),
        // Server-side apply with a map list keyed by port and protocol (defaulted).
        Step::fixed(
            "apply gadgets: a sets ports 1 and 2",
            Request::patch(
                format!("{}?fieldManager=a", gadget_at("g-ssa")),
                APPLY,
                gadget("g-ssa", json!({"mode": "fast",
                    "ports": [{"port": 1, "name": "one"}, {"port": 2, "name": "two"}]})),
            ),
        ),
        Step::fixed(
            "apply gadgets: b adds port 3",
            Request::patch(
                format!("{}?fieldManager=b", gadget_at("g-ssa")),
                APPLY,
                gadget("g-ssa", json!({"ports": [{"port": 3, "name": "three"}]})),
            ),
        ),
        Step::fixed(
            "apply gadgets: b conflicts on two fields",
            Request::patch(
                format!("{}?fieldManager=b", gadget_at("g-ssa")),
                APPLY,
                gadget("g-ssa", json!({"mode": "slow", "ports": [{"port": 1, "name": "uno"}]})),
            ),
        ),
        Step::fixed(
            "apply gadgets: a drops port 1",
            Request::patch(
                format!("{}?fieldManager=a", gadget_at("g-ssa")),
                APPLY,
                gadget("g-ssa", json!({"mode": "fast", "ports": [{"port": 2, "name": "two"}]})),
            ),
        ),
        Step::fixed(
            "apply gadgets: the same configuration again writes nothing",
            Request::patch(
                format!("{}?fieldManager=a", gadget_at("g-ssa")),
                APPLY,
                gadget("g-ssa", json!({"mode": "fast", "ports": [{"port": 2, "name": "two"}]})),
            ),
        ),
        Step::fixed(
            "apply gadgets: an unknown field",
            Request::patch(
                format!("{}?fieldManager=a", gadget_at("g-ssa")),
                APPLY,
                gadget("g-ssa", json!({"mode": "fast", "bogus": 1})),
            ),
        ),
        Step::fixed(
            "apply gadgets: an update by another manager",
            Request::patch(gadget_at("g-ssa"), MERGE, json!({"spec": {"replicas": 4}})),
        ),
        Step::fixed("get: the applied gadget", Request::get(gadget_at("g-ssa"))),
        Step::fixed(
            "scale: the applied gadget",
            Request::patch(
                format!("{}/scale", gadget_at("g-ssa")),
                MERGE,
                json!({"spec": {"replicas": 5}}),
            ),
        ),
        // A write through `scale` is tracked on the `Scale`, whose entries are those that
        // own the replicas (`ScaleHandler`): the writer's entry has no time; replicas of 0
        // are left out of the `Scale`, owned by nobody, and a `Scale` nobody owns the
        // replicas of is not tracked.
        Step::fixed("get: the scaled gadget", Request::get(gadget_at("g-ssa"))),
        Step::fixed(
            "scale: the gadget's Scale as a Table",
            Request::get(format!("{}/scale", gadget_at("g-ssa"))).accept(TABLE),
        ),
        Step::fixed(
            "scale: the gadget's Scale as metadata",
            Request::get(format!("{}/scale", gadget_at("g-ssa"))).accept(PARTIAL),
        ),
        Step::fixed(
            "scale: the gadget to 0",
            Request::patch(
                format!("{}/scale", gadget_at("g-ssa")),
                MERGE,
                json!({"spec": {"replicas": 0}}),
            ),
        ),
        Step::fixed("get: the gadget scaled to 0", Request::get(gadget_at("g-ssa"))),
        Step::fixed(
            "scale: the gadget from 0 to 2",
            Request::patch(
                format!("{}/scale", gadget_at("g-ssa")),
                MERGE,
                json!({"spec": {"replicas": 2}}),
            ),
        ),
        Step::fixed("get: the gadget scaled from 0", Request::get(gadget_at("g-ssa"))),
        // Server-side apply of the `Scale` (an autoscaler's write): its managers are the
        // gadget's, seen through the `ScaleHandler` (`autoscaling/v1`, `.spec.replicas`).
        Step::fixed(
            "scale: apply without a field manager",
            Request::patch(
                format!("{}/scale", gadget_at("g-ssa")),
                APPLY,
                json!({"apiVersion": "autoscaling/v1", "kind": "Scale", "spec": {"replicas": 4}}),
            ),
        ),
        Step::fixed(
            "scale: apply of another version",
            Request::patch(
                format!("{}/scale?fieldManager=hpa", gadget_at("g-ssa")),
                APPLY,
                json!({"apiVersion": "autoscaling/v2", "kind": "Scale", "spec": {"replicas": 4}}),
            ),
        ),
        Step::fixed(
            "scale: apply of other replicas conflicts with their owner",
            Request::patch(
                format!("{}/scale?fieldManager=hpa", gadget_at("g-ssa")),
                APPLY,
                json!({"apiVersion": "autoscaling/v1", "kind": "Scale", "spec": {"replicas": 4}}),
            ),
        ),
        Step::fixed(
            "scale: apply of the same replicas shares them",
            Request::patch(
                format!("{}/scale?fieldManager=hpa", gadget_at("g-ssa")),
                APPLY,
                json!({"apiVersion": "autoscaling/v1", "kind": "Scale", "spec": {"replicas": 2}}),
            ),
        ),
        Step::fixed(
            "scale: a forced apply of other replicas",
            Request::patch(
                format!("{}/scale?fieldManager=hpa&force=true", gadget_at("g-ssa")),
                APPLY,
                json!({"apiVersion": "autoscaling/v1", "kind": "Scale", "spec": {"replicas": 3}}),
            ),
        ),
        Step::fixed("get: the gadget after the Scale apply", Request::get(gadget_at("g-ssa"))),
        Step::fixed(
            "apply gadgets: creator sets replicas",
            Request::patch(
                format!("{}?fieldManager=creator", gadget_at("g-scale")),
                APPLY,
                gadget("g-scale", json!({"mode": "fast", "replicas": 2})),
            ),
        ),
        Step::fixed(
            "create: a gadget with replicas",
            Request::post(GADGETS, gadget("g-made", json!({"mode": "fast", "replicas": 2}))),
        ),
        Step::fixed(
            "scale: apply of other replicas conflicts with an applier",
            Request::patch(
                format!("{}/scale?fieldManager=hpa", gadget_at("g-scale")),
                APPLY,
                json!({"apiVersion": "autoscaling/v1", "kind": "Scale", "spec": {"replicas": 4}}),
            ),
        ),
        Step::fixed(
            "scale: apply of other replicas conflicts with an updater",
            Request::patch(
                format!("{}/scale?fieldManager=hpa", gadget_at("g-made")),
                APPLY,
                json!({"apiVersion": "autoscaling/v1", "kind": "Scale", "spec": {"replicas": 4}}),
            ),
        ),
        Step::fixed(
            "scale: apply of an applier's replicas unchanged",
            Request::patch(
                format!("{}/scale?fieldManager=hpa", gadget_at("g-scale")),
                APPLY,
                json!({"apiVersion": "autoscaling/v1", "kind": "Scale", "spec": {"replicas": 2}}),
            ),
        ),
        Step::fixed(
            "scale: a forced apply over an applier",
            Request::patch(
                format!("{}/scale?fieldManager=hpa&force=true", gadget_at("g-scale")),
                APPLY,
                json!({"apiVersion": "autoscaling/v1", "kind": "Scale", "spec": {"replicas": 4}}),
            ),
        ),
        Step::fixed("get: the applied gadget after the Scale applies", Request::get(gadget_at("g-scale"))),
        Step::fixed(
            "scale: a dry run of an apply of other replicas still conflicts",
            Request::patch(
                format!("{}/scale?fieldManager=hpa&dryRun=All", gadget_at("g-ssa")),
                APPLY,
                json!({"apiVersion": "autoscaling/v1", "kind": "Scale", "spec": {"replicas": 5}}),
            ),
        ),
        Step::fixed(
            "create: a gadget for the JSONPath columns",
            Request::post(
                GADGETS,
                gadget("g-cols", json!({"mode": "slow", "name": "cols", "tags": ["x", "y", "z"],
                    "labels": {"a": "alpha"},
                    "ports": [{"port": 1, "name": "one", "protocol": "UDP"},
                              {"port": 2, "protocol": "TCP"},
                              {"port": 3, "name": "three"}]})),
            ),
        ),
        Step::fixed("list: gadgets as a Table (JSONPath columns)", Request::get(GADGETS).accept(TABLE)),
        // What `kubectl explain` reads: the schema as published (embedded resources' type
        // and object metadata, int-or-string's `anyOf`, the selectable fields).
        Step::fixed(
            "openapi: the gadget's schemas",
            Request::get("/openapi/v3/apis/example.com/v1"),
        )
        .pick(|body| {
            let schemas = &body["components"]["schemas"];
            json!({"Gadget": schemas["com.example.v1.Gadget"],
                   "GadgetList": schemas["com.example.v1.GadgetList"]})
        }),
        // `kubectl get crd`: the default table convertor's columns.
        Step::fixed("crd: list as a Table", Request::get(CRDS).accept(TABLE))
            .pick(|body| body["columnDefinitions"].clone()),
        Step::fixed("watch: gadgets from resourceVersion 1", Request::watch(format!("{GADGETS}?resourceVersion=1"))),
        // Deletion: the instances go, then the CRD. (An object held by a finalizer is not
        // scripted: the harness's real server panics on updates of a terminating CRD's
        // objects, in forbidCreateAdmission, having no admission chain; the integration
        // tests cover it on the fake.)
        Step::fixed("crd: delete gadgets", Request::delete(GADGETS_CRD))
            .then_wait_until(GADGETS_CRD, 404),
        Step::fixed("get: a gadget after its CRD went", Request::get(gadget_at("g1"))),
        Step::fixed("crd: gadgets is gone", Request::get(GADGETS_CRD)),
        Step::fixed(
            "discovery: /apis/example.com/v1 without gadgets",
            Request::get("/apis/example.com/v1"),
        ),
    ]
}
