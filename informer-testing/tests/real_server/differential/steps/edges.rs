//! The edges of the script, run after the other steps: dry runs, YAML, metadata-only answers,
//! resource versions and continue tokens of lists, generation and no-op writes, what a client
//! may set on create, the status subresource, odd verbs and parameters, and a CRD with
//! several versions (deprecated ones, conversion `None`, one with a looser schema) and a
//! schema with int-or-string, nullable, preserved unknown fields and defaults in arrays.

use serde_json::{Value, json};

use super::{APPLY, CRDS, MERGE, PARTIAL, Request, Step, TABLE, WIDGETS, at, probe, widget};

const YAML: &str = "application/yaml";
const PARTIAL_LIST: &str = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
const DOODADS_CRD: &str =
    "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/doodads.example.com";
const DOODADS: &str = "/apis/example.com/v1/namespaces/default/doodads";
const DOODADS_BETA: &str = "/apis/example.com/v1beta1/namespaces/default/doodads";
const DOODADS_ALPHA: &str = "/apis/example.com/v1alpha1/namespaces/default/doodads";

/// The themes, in order (later ones use objects of earlier ones).
pub fn steps() -> Vec<Step> {
    let mut steps = dry_run_steps();
    steps.extend(yaml_steps());
    steps.extend(metadata_steps());
    steps.extend(list_version_steps());
    steps.extend(generation_steps());
    steps.extend(create_metadata_steps());
    steps.extend(status_steps());
    steps.extend(verb_steps());
    steps.extend(doodad_steps());
    steps
}

fn dry(name: &str, size: i64) -> Value {
    widget(name, json!({"dry": "yes"}), json!({"size": size}))
}

/// A YAML answer twice: `parsed`, the document it reads as (normalised as JSON answers are),
/// and `text`, its lines with the values that differ between servers (uids, times, resource
/// versions) left out, so that the text itself (key order, quoting, folding) is compared.
fn yaml_document(body: &Value) -> Value {
    let Some(text) = body.as_str() else {
        return body.clone();
    };
    let parsed = serde_saphyr::from_str::<Value>(text)
        .unwrap_or_else(|err| Value::String(format!("not YAML: {err}")));
    json!({"parsed": parsed, "text": yaml_lines(text)})
}

fn yaml_lines(text: &str) -> Value {
    const KEYS: [&str; 5] = [
        "uid",
        "creationTimestamp",
        "time",
        "resourceVersion",
        "continue",
    ];
    text.lines()
        .map(|line| {
            let trimmed = line.trim_start().trim_start_matches("- ");
            let indent = &line[..line.len() - trimmed.len()];
            match trimmed.split_once(':') {
                Some((key, value)) if KEYS.contains(&key) && !value.trim().is_empty() => {
                    Value::String(format!("{indent}{key}: <redacted>"))
                }
                _ => Value::String(line.to_string()),
            }
        })
        .collect()
}

/// A request with a raw body of the given content type.
fn raw(
    method: http::Method,
    path: impl Into<String>,
    content_type: &'static str,
    body: &str,
) -> Request {
    Request {
        content_type: Some(content_type),
        ..Request::new(method, path)
    }
    .raw(body)
}

/// `dryRun=All` on every write: the answers, and that nothing is stored or watched.
fn dry_run_steps() -> Vec<Step> {
    vec![
        Step::fixed("dry: create d1", Request::post(WIDGETS, dry("d1", 1))),
        Step::fixed("dry: create d2", Request::post(WIDGETS, dry("d2", 2))),
        Step::fixed("dry: create d3", Request::post(WIDGETS, dry("d3", 3))),
        Step::fixed(
            "dry: create with dryRun=All",
            Request::post(format!("{WIDGETS}?dryRun=All"), dry("d-new", 1)),
        ),
        Step::fixed(
            "dry: the dry-run create stored nothing",
            Request::get(at("d-new")),
        ),
        Step::fixed(
            "dry: create with generateName and dryRun=All",
            Request::post(
                format!("{WIDGETS}?dryRun=All"),
                json!({"apiVersion": "example.com/v1", "kind": "Widget",
                       "metadata": {"generateName": "dry-", "labels": {"dry": "yes"}}}),
            ),
        ),
        Step::new("dry: update with dryRun=All", |cx| {
            let mut d1 = cx.body("dry: create d1").clone();
            d1["spec"]["size"] = json!(100);
            Request::put(format!("{}?dryRun=All", at("d1")), d1)
        }),
        Step::fixed(
            "dry: merge patch with dryRun=All",
            Request::patch(
                format!("{}?dryRun=All", at("d1")),
                MERGE,
                json!({"spec": {"color": "pink"}}),
            ),
        ),
        Step::fixed(
            "dry: status patch with dryRun=All",
            Request::patch(
                format!("{}/status?dryRun=All", at("d1")),
                MERGE,
                json!({"status": {"ready": true}}),
            ),
        ),
        Step::fixed(
            "dry: apply that would create, with dryRun=All",
            Request::patch(
                format!("{}?dryRun=All&fieldManager=a", at("d-applied")),
                APPLY,
                dry("d-applied", 4),
            ),
        ),
        Step::fixed(
            "dry: delete with dryRun=All",
            Request::delete(format!("{}?dryRun=All", at("d1"))),
        ),
        Step::fixed(
            "dry: deletecollection with dryRun=All",
            Request::delete(format!("{WIDGETS}?labelSelector=dry%3Dyes&dryRun=All")),
        ),
        Step::fixed(
            "dry: an unsupported dryRun value",
            Request::post(format!("{WIDGETS}?dryRun=Some"), dry("d-some", 1)),
        ),
        Step::fixed(
            "dry: the objects are unchanged",
            Request::get(format!("{WIDGETS}?labelSelector=dry%3Dyes")),
        ),
        Step::new("dry: no events for dry runs", |cx| {
            Request::watch(format!(
                "{WIDGETS}?labelSelector=dry%3Dyes&resourceVersion={}",
                cx.rv("dry: create d1")
            ))
        }),
    ]
}

const Y1: &str = "apiVersion: example.com/v1
kind: Widget
metadata:
  name: y1
  labels:
    yaml: \"yes\"
  annotations:
    note: |
      two
      lines
spec:
  size: 7   # a comment
  color: green
";

/// YAML request bodies and answers.
fn yaml_steps() -> Vec<Step> {
    vec![
        Step::fixed(
            "yaml: create from a YAML body",
            raw(http::Method::POST, WIDGETS, YAML, Y1),
        ),
        Step::fixed("yaml: get as YAML", Request::get(at("y1")).accept(YAML)).pick(yaml_document),
        Step::fixed(
            "yaml: list as YAML",
            Request::get(format!("{WIDGETS}?labelSelector=yaml%3Dyes")).accept(YAML),
        )
        .pick(yaml_document),
        Step::fixed(
            "yaml: a missing object as YAML",
            Request::get(at("nope")).accept(YAML),
        )
        .pick(yaml_document),
        Step::fixed(
            "yaml: apply a YAML configuration",
            raw(
                http::Method::PATCH,
                format!("{}?fieldManager=y", at("y2")),
                APPLY,
                "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: y2\n  labels:\n    yaml: \"yes\"\nspec:\n  size: 8\n",
            ),
        ),
        Step::fixed(
            "yaml: an unquoted yes in YAML",
            raw(
                http::Method::POST,
                WIDGETS,
                YAML,
                "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: y-bool\n  labels:\n    probe: \"yes\"\n  annotations:\n    flag: yes\n",
            ),
        ),
        Step::fixed(
            "yaml: malformed YAML",
            raw(
                http::Method::POST,
                WIDGETS,
                YAML,
                "apiVersion: [example.com/v1\nkind: Widget\n",
            ),
        ),
        Step::fixed(
            "yaml: a merge patch as YAML",
            raw(http::Method::PATCH, at("y1"), YAML, "spec:\n  size: 9\n"),
        ),
        Step::fixed(
            "yaml: an unsupported content type",
            raw(http::Method::POST, WIDGETS, "text/plain", "hello"),
        ),
        Step::fixed(
            "yaml: watch with Accept YAML",
            Request::watch(format!(
                "{WIDGETS}?labelSelector=yaml%3Dyes&resourceVersion=0"
            ))
            .accept(YAML),
        )
        .pick(yaml_document),
        Step::fixed(
            "yaml: an unsupported Accept",
            Request::get(at("y1")).accept("text/html"),
        ),
    ]
}

/// Metadata-only answers (`PartialObjectMetadata`) and Tables with metadata.
fn metadata_steps() -> Vec<Step> {
    vec![
        Step::fixed(
            "metadata: get as PartialObjectMetadata",
            Request::get(at("d1")).accept(PARTIAL),
        ),
        Step::fixed(
            "metadata: list as PartialObjectMetadataList",
            Request::get(format!("{WIDGETS}?labelSelector=dry%3Dyes")).accept(PARTIAL_LIST),
        ),
        Step::fixed(
            "metadata: watch as PartialObjectMetadata",
            Request::watch(format!(
                "{WIDGETS}?labelSelector=dry%3Dyes&resourceVersion=0"
            ))
            .accept(PARTIAL),
        ),
        Step::fixed(
            "metadata: a list kind on a get",
            Request::get(at("d1")).accept(PARTIAL_LIST),
        ),
        Step::fixed(
            "metadata: PartialObjectMetadata of meta.k8s.io/v1beta1",
            Request::get(at("d1"))
                .accept("application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1beta1"),
        ),
        Step::fixed(
            "metadata: Table with includeObject=Metadata",
            Request::get(format!(
                "{WIDGETS}?labelSelector=dry%3Dyes&includeObject=Metadata"
            ))
            .accept(TABLE),
        ),
        Step::fixed(
            "metadata: Table of meta.k8s.io/v1beta1 with includeObject=Metadata",
            Request::get(format!(
                "{WIDGETS}?labelSelector=dry%3Dyes&includeObject=Metadata"
            ))
            .accept("application/json;as=Table;v=v1beta1;g=meta.k8s.io"),
        ),
        Step::fixed(
            "metadata: PartialObjectMetadataList of meta.k8s.io/v1beta1",
            Request::get(format!("{WIDGETS}?labelSelector=dry%3Dyes"))
                .accept("application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1beta1"),
        ),
        Step::fixed(
            "metadata: a Table with an unknown includeObject",
            Request::get(format!(
                "{WIDGETS}?labelSelector=dry%3Dyes&includeObject=All"
            ))
            .accept(TABLE),
        ),
    ]
}

/// `resourceVersionMatch` with and without `limit`, and continue tokens after changes.
fn list_version_steps() -> Vec<Step> {
    let dry = format!("{WIDGETS}?labelSelector=dry%3Dyes");
    vec![
        Step::new("lists: NotOlderThan an earlier version", {
            let dry = dry.clone();
            move |cx| {
                Request::get(format!(
                    "{dry}&resourceVersion={}&resourceVersionMatch=NotOlderThan",
                    cx.rv("dry: create d1")
                ))
            }
        }),
        Step::new("lists: NotOlderThan with a limit", {
            let dry = dry.clone();
            move |cx| {
                Request::get(format!(
                    "{dry}&resourceVersion={}&resourceVersionMatch=NotOlderThan&limit=1",
                    cx.rv("dry: create d1")
                ))
            }
        }),
        Step::new("lists: Exact with a limit", {
            let dry = dry.clone();
            move |cx| {
                Request::get(format!(
                    "{dry}&resourceVersion={}&resourceVersionMatch=Exact&limit=1",
                    cx.rv("dry: create d2")
                ))
            }
        }),
        Step::new("lists: the next page of an Exact list", {
            let dry = dry.clone();
            move |cx| {
                Request::get(format!(
                    "{dry}&limit=1&continue={}",
                    cx.continue_token("lists: Exact with a limit")
                ))
            }
        }),
        Step::fixed(
            "lists: Exact at resourceVersion 0",
            Request::get(format!(
                "{dry}&resourceVersion=0&resourceVersionMatch=Exact"
            )),
        ),
        Step::fixed(
            "lists: an unknown resourceVersionMatch",
            Request::get(format!(
                "{dry}&resourceVersion=1&resourceVersionMatch=Newest"
            )),
        ),
        Step::fixed(
            "lists: page 1 before changes",
            Request::get(format!("{dry}&limit=1")),
        ),
        Step::fixed("lists: delete d2", Request::delete(at("d2"))),
        Step::fixed(
            "lists: patch d3",
            Request::patch(at("d3"), MERGE, json!({"spec": {"size": 33}})),
        ),
        Step::new(
            "lists: page 2 after changes is of the first page's snapshot",
            {
                let dry = dry.clone();
                move |cx| {
                    Request::get(format!(
                        "{dry}&limit=1&continue={}",
                        cx.continue_token("lists: page 1 before changes")
                    ))
                }
            },
        ),
        Step::new("lists: a continue token with a resourceVersion", {
            let dry = dry.clone();
            move |cx| {
                Request::get(format!(
                    "{dry}&limit=1&resourceVersion=1&continue={}",
                    cx.continue_token("lists: page 1 before changes")
                ))
            }
        }),
        Step::new("lists: a continue token with another selector", move |cx| {
            Request::get(format!(
                "{WIDGETS}?labelSelector=yaml%3Dyes&limit=1&continue={}",
                cx.continue_token("lists: page 1 before changes")
            ))
        }),
        Step::fixed(
            "lists: deletecollection by label selector",
            Request::delete(format!("{WIDGETS}?labelSelector=yaml%3Dyes")),
        ),
        Step::fixed(
            "lists: the YAML objects are gone",
            Request::get(format!("{WIDGETS}?labelSelector=yaml%3Dyes")),
        ),
        Step::new("lists: watch with a field selector", |cx| {
            Request::watch(format!(
                "{WIDGETS}?fieldSelector=metadata.name%3Dd3&resourceVersion={}",
                cx.rv("dry: create d1")
            ))
        }),
        Step::new("lists: watch with a label selector sees deletions", |cx| {
            Request::watch(format!(
                "{WIDGETS}?labelSelector=dry%3Dyes&resourceVersion={}&allowWatchBookmarks=true",
                cx.rv("dry: create d3")
            ))
        }),
    ]
}

/// `metadata.generation` and the resource version of writes that change nothing or little.
fn generation_steps() -> Vec<Step> {
    let gen_ = |spec: Value| widget("gen", json!({"gen": "yes"}), spec);
    vec![
        Step::fixed(
            "generation: create",
            Request::post(WIDGETS, gen_(json!({"size": 1}))),
        ),
        Step::fixed(
            "generation: a spec patch",
            Request::patch(at("gen"), MERGE, json!({"spec": {"size": 2}})),
        ),
        Step::fixed(
            "generation: a label patch",
            Request::patch(
                at("gen"),
                MERGE,
                json!({"metadata": {"labels": {"more": "x"}}}),
            ),
        ),
        Step::fixed(
            "generation: a status patch",
            Request::patch(
                format!("{}/status", at("gen")),
                MERGE,
                json!({"status": {"ready": true}}),
            ),
        ),
        Step::fixed(
            "generation: a patch that changes nothing",
            Request::patch(at("gen"), MERGE, json!({"spec": {"size": 2}})),
        ),
        Step::new("generation: an update that changes nothing", |cx| {
            Request::put(
                at("gen"),
                cx.body("generation: a patch that changes nothing").clone(),
            )
        }),
        Step::new("generation: an update that changes only labels", |cx| {
            let mut body = cx.body("generation: a patch that changes nothing").clone();
            body["metadata"]["labels"]["more"] = json!("y");
            Request::put(at("gen"), body)
        }),
        Step::fixed(
            "generation: a client-set generation is ignored",
            Request::patch(at("gen"), MERGE, json!({"metadata": {"generation": 42}})),
        ),
        Step::fixed(
            "generation: an apply that changes nothing",
            Request::patch(
                format!("{}?fieldManager=g", at("gen")),
                APPLY,
                json!({"apiVersion": "example.com/v1", "kind": "Widget",
                       "metadata": {"name": "gen"}, "spec": {"size": 2}}),
            ),
        ),
        Step::new("generation: the events", |cx| {
            Request::watch(format!(
                "{WIDGETS}?labelSelector=gen%3Dyes&resourceVersion={}",
                cx.rv("generation: create")
            ))
        }),
    ]
}

/// What a client sets in metadata on create: versions, uids, times, names.
fn create_metadata_steps() -> Vec<Step> {
    let long_prefix = format!("{}-", "g".repeat(70));
    vec![
        Step::fixed(
            "create: with a resourceVersion",
            Request::post(
                WIDGETS,
                json!({"apiVersion": "example.com/v1", "kind": "Widget",
                       "metadata": {"name": "c-rv", "resourceVersion": "5", "labels": probe()}}),
            ),
        ),
        Step::fixed(
            "create: with a resourceVersion and dryRun=All",
            Request::post(
                format!("{WIDGETS}?dryRun=All"),
                json!({"apiVersion": "example.com/v1", "kind": "Widget",
                       "metadata": {"name": "c-rv-dry", "resourceVersion": "5", "labels": probe()}}),
            ),
        )
        // The version answered, as is (not a position in the run: nothing was written).
        .pick(|body| {
            let mut body = body.clone();
            if let Some(rv) = body["metadata"]["resourceVersion"].as_str() {
                body["metadata"]["resourceVersion"] = json!(format!("as sent: {rv}"));
            }
            body
        }),
        Step::fixed(
            "create: with a resourceVersion that is no number",
            Request::post(
                WIDGETS,
                json!({"apiVersion": "example.com/v1", "kind": "Widget",
                       "metadata": {"name": "c-rv-abc", "resourceVersion": "abc", "labels": probe()}}),
            ),
        ),
        Step::fixed(
            "create: with a resourceVersion, of an existing name",
            Request::post(
                WIDGETS,
                json!({"apiVersion": "example.com/v1", "kind": "Widget",
                       "metadata": {"name": "gen", "resourceVersion": "5", "labels": probe()}}),
            ),
        ),
        Step::fixed(
            "create: with a uid, creationTimestamp, generation and deletionTimestamp",
            Request::post(
                WIDGETS,
                json!({"apiVersion": "example.com/v1", "kind": "Widget",
                       "metadata": {"name": "c-sys", "labels": probe(),
                           "uid": "00000000-0000-0000-0000-000000000001",
                           "creationTimestamp": "2001-01-01T00:00:00Z",
                           "generation": 7,
                           "selfLink": "/x"}}),
            ),
        )
        .pick(|body| json!({"metadata": body["metadata"], "kind": body["kind"]})),
        Step::fixed(
            "create: with a deletionTimestamp",
            Request::post(
                WIDGETS,
                json!({"apiVersion": "example.com/v1", "kind": "Widget",
                       "metadata": {"name": "c-del", "labels": probe(),
                           "deletionTimestamp": "2001-01-01T00:00:00Z",
                           "deletionGracePeriodSeconds": 5}}),
            ),
        ),
        Step::fixed(
            "create: with a name and a generateName",
            Request::post(
                WIDGETS,
                json!({"apiVersion": "example.com/v1", "kind": "Widget",
                       "metadata": {"name": "c-both", "generateName": "c-gen-", "labels": probe()}}),
            ),
        ),
        Step::fixed(
            "create: a name of 254 characters",
            Request::post(WIDGETS, widget(&"n".repeat(254), probe(), json!({}))),
        ),
        Step::fixed(
            "create: a name of 253 characters",
            Request::post(WIDGETS, widget(&"n".repeat(253), probe(), json!({}))),
        ),
        Step::fixed(
            "create: a long generateName is cut",
            Request::post(
                WIDGETS,
                json!({"apiVersion": "example.com/v1", "kind": "Widget",
                       "metadata": {"generateName": long_prefix, "labels": probe()}}),
            ),
        )
        .pick(|body| {
            let name = body["metadata"]["name"].as_str().unwrap_or("");
            json!({
                "kind": body["kind"], "message": body["message"],
                "name length": name.len(), "name start": name.get(..58),
            })
        }),
        Step::fixed(
            "create: an invalid generateName",
            Request::post(
                WIDGETS,
                json!({"apiVersion": "example.com/v1", "kind": "Widget",
                       "metadata": {"generateName": "Bad_", "labels": probe()}}),
            ),
        )
        // The generated name's random suffix is left out.
        .pick(|body| {
            let name = body["details"]["name"].as_str().unwrap_or("").to_string();
            let text = body.to_string();
            let text = if name.len() > 4 {
                text.replace(&name, "Bad_<random>")
            } else {
                text
            };
            serde_json::from_str(&text).unwrap_or(Value::Null)
        }),
        Step::fixed(
            "create: a name with a dot and a dash",
            Request::post(WIDGETS, widget("a.b-c", probe(), json!({}))),
        ),
        Step::fixed(
            "create: a name with a percent sign",
            Request::post(WIDGETS, widget("a%b", probe(), json!({}))),
        ),
    ]
}

/// The status subresource: verbs it lacks, apply conflicts, managed fields.
fn status_steps() -> Vec<Step> {
    let status = format!("{}/status", at("gen"));
    vec![
        Step::fixed(
            "status sub: POST is not allowed",
            Request::post(status.clone(), json!({})),
        ),
        Step::fixed(
            "status sub: DELETE is not allowed",
            Request::delete(status.clone()),
        ),
        Step::fixed(
            "status sub: manager s1 applies ready",
            Request::patch(
                format!("{status}?fieldManager=s1"),
                APPLY,
                json!({"apiVersion": "example.com/v1", "kind": "Widget",
                       "metadata": {"name": "gen"}, "status": {"ready": false}}),
            ),
        ),
        Step::fixed(
            "status sub: manager s2 conflicts on ready",
            Request::patch(
                format!("{status}?fieldManager=s2&force=false"),
                APPLY,
                json!({"apiVersion": "example.com/v1", "kind": "Widget",
                       "metadata": {"name": "gen"}, "status": {"ready": true}}),
            ),
        ),
        Step::fixed(
            "status sub: an apply of spec through status is ignored",
            Request::patch(
                format!("{status}?fieldManager=s3"),
                APPLY,
                json!({"apiVersion": "example.com/v1", "kind": "Widget",
                       "metadata": {"name": "gen"}, "spec": {"size": 77}}),
            ),
        ),
        Step::fixed("status sub: managed fields", Request::get(at("gen"))),
        Step::fixed(
            "status sub: PUT without a resourceVersion",
            Request::put(
                status.clone(),
                json!({"apiVersion": "example.com/v1", "kind": "Widget",
                       "metadata": {"name": "gen"}, "status": {"ready": true}}),
            ),
        ),
        Step::fixed(
            "status sub: scale of a type without scale",
            Request::get(format!("{}/scale", at("gen"))),
        ),
        Step::fixed(
            "status sub: an unknown subresource",
            Request::get(format!("{}/frobnicate", at("gen"))),
        ),
        Step::fixed(
            "status sub: status of a missing object",
            Request::get(format!("{}/status", at("nope"))),
        ),
    ]
}

/// HEAD, OPTIONS, unknown parameters.
fn verb_steps() -> Vec<Step> {
    vec![
        Step::fixed("verbs: HEAD an object", Request::new(http::Method::HEAD, at("gen"))),
        Step::fixed("verbs: OPTIONS a collection", Request::new(http::Method::OPTIONS, WIDGETS)),
        Step::fixed(
            "verbs: PUT on a collection",
            Request::put(WIDGETS, widget("v-put", probe(), json!({}))),
        ),
        Step::fixed(
            "verbs: POST on an object",
            Request::post(at("gen"), widget("gen", probe(), json!({}))),
        ),
        Step::fixed(
            "verbs: an unknown query parameter on a get",
            Request::get(format!("{}?frob=1", at("gen"))),
        )
        .pick(|body| json!({"kind": body["kind"], "name": body["metadata"]["name"], "message": body["message"]})),
        Step::fixed(
            "verbs: an unknown query parameter on a create",
            Request::post(format!("{WIDGETS}?frob=1"), widget("v-frob", probe(), json!({}))),
        )
        .pick(|body| json!({"kind": body["kind"], "name": body["metadata"]["name"], "message": body["message"]})),
        Step::fixed(
            "verbs: a malformed timeoutSeconds",
            Request::get(format!("{WIDGETS}?timeoutSeconds=abc")),
        ),
        Step::fixed(
            "verbs: a malformed limit",
            Request::get(format!("{WIDGETS}?limit=abc&labelSelector=gen%3Dyes")),
        ),
    ]
}

/// A CRD of three versions: v1 (storage), v1beta1 (deprecated with a warning of its own),
/// v1alpha1 (deprecated, the default warning); conversion `None`.
pub fn doodad_crd() -> Value {
    let schema = json!({"openAPIV3Schema": {"type": "object", "properties": {
        "spec": {"type": "object", "properties": {
            "count": {"x-kubernetes-int-or-string": true},
            "note": {"type": "string", "nullable": true},
            "other": {"type": "string"},
            "withDefault": {"type": "string", "default": "d"},
            "items": {"type": "array", "items": {"type": "object", "properties": {
                "name": {"type": "string"},
                "weight": {"type": "integer", "default": 1}}}},
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                "properties": {"known": {"type": "integer"}}}
        }}
    }}});
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "doodads.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "doodads", "kind": "Doodad"},
            "conversion": {"strategy": "None"},
            "versions": [
                {"name": "v1", "served": true, "storage": true, "schema": schema},
                {"name": "v1beta1", "served": true, "storage": false, "deprecated": true,
                 "deprecationWarning": "example.com/v1beta1 Doodad is old, use v1", "schema": schema},
                {"name": "v1alpha1", "served": true, "storage": false, "deprecated": true,
                 "schema": {"openAPIV3Schema": {"type": "object",
                    "x-kubernetes-preserve-unknown-fields": true}}}
            ]
        }
    })
}

fn doodad(version: &str, name: &str, spec: Value) -> Value {
    json!({
        "apiVersion": format!("example.com/{version}"),
        "kind": "Doodad",
        "metadata": {"name": name},
        "spec": spec,
    })
}

fn doodads_steps_crd() -> Vec<Step> {
    vec![
        Step::fixed("doodad: crd create", Request::post(CRDS, doodad_crd()))
            .then_wait_until(DOODADS_ALPHA, 200),
        Step::fixed("doodad: crd get", Request::get(DOODADS_CRD)),
    ]
}

fn doodad_steps() -> Vec<Step> {
    let mut steps = doodads_steps_crd();
    steps.extend([
        Step::fixed(
            "doodad: create through v1beta1 (deprecated)",
            Request::post(DOODADS_BETA, doodad("v1beta1", "dd1", json!({"count": 3}))),
        ),
        Step::fixed(
            "doodad: list through v1alpha1 (deprecated, default warning)",
            Request::get(DOODADS_ALPHA),
        ),
        Step::fixed(
            "doodad: get through v1",
            Request::get(format!("{DOODADS}/dd1")),
        ),
        Step::fixed(
            "doodad: a v1 body to a v1beta1 path",
            Request::post(DOODADS_BETA, doodad("v1", "dd-wrong", json!({}))),
        ),
        Step::fixed(
            "doodad: int-or-string as a string, nullable null",
            Request::post(
                DOODADS,
                doodad("v1", "dd2", json!({"count": "50%", "note": null})),
            ),
        ),
        Step::fixed(
            "doodad: null for a field that is not nullable",
            Request::post(DOODADS, doodad("v1", "dd3", json!({"other": null}))),
        ),
        Step::fixed(
            "doodad: null for a defaulted field",
            Request::post(DOODADS, doodad("v1", "dd4", json!({"withDefault": null}))),
        ),
        Step::fixed(
            "doodad: int-or-string of another type",
            Request::post(DOODADS, doodad("v1", "dd5", json!({"count": true}))),
        ),
        Step::fixed(
            "doodad: defaults inside an array of objects",
            Request::post(
                DOODADS,
                doodad(
                    "v1",
                    "dd6",
                    json!({"items": [{"name": "a"}, {"name": "b", "weight": 3}, {}]}),
                ),
            ),
        ),
        Step::fixed(
            "doodad: preserved unknown fields beside typed ones",
            Request::post(
                DOODADS,
                doodad(
                    "v1",
                    "dd7",
                    json!({"free": {"known": 1, "unknown": {"x": [1, "a"]}}, "bogus": 1}),
                ),
            ),
        ),
        Step::fixed(
            "doodad: a typed field inside preserved fields",
            Request::post(
                DOODADS,
                doodad("v1", "dd8", json!({"free": {"known": "one"}})),
            ),
        ),
        Step::fixed(
            "doodad: apply through v1beta1",
            Request::patch(
                format!("{DOODADS_BETA}/dd9?fieldManager=a"),
                APPLY,
                doodad("v1beta1", "dd9", json!({"items": [{"name": "x"}]})),
            ),
        ),
        Step::fixed(
            "doodad: managed fields through v1",
            Request::get(format!("{DOODADS}/dd9")),
        ),
        // A version with a looser schema: what is written through it is validated by its
        // schema, then pruned and defaulted by the storage version's.
        Step::fixed(
            "doodad: create through v1alpha1, whose schema is looser",
            Request::post(
                DOODADS_ALPHA,
                doodad(
                    "v1alpha1",
                    "dd10",
                    json!({"count": true, "other": 5, "extra": 1, "withDefault": null}),
                ),
            ),
        ),
        Step::fixed(
            "doodad: get through v1 what v1alpha1 wrote",
            Request::get(format!("{DOODADS}/dd10")),
        ),
        Step::fixed(
            "doodad: update through v1alpha1, whose schema is looser",
            Request::patch(
                format!("{DOODADS_ALPHA}/dd10"),
                MERGE,
                json!({"spec": {"other": [1], "more": 2}}),
            ),
        ),
        Step::fixed("doodad: crd delete", Request::delete(DOODADS_CRD))
            .then_wait_until(DOODADS_CRD, 404),
    ]);
    steps
}
