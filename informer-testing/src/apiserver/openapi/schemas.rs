//! The `components.schemas` of an OpenAPI v3 document: what `kubectl explain` reads.
//!
//! - A built-in type's schemas are written from the server's protobuf schema table
//!   ([`Schema::builtin`]): each message is an object with its fields' JSON names, JSON types
//!   and required fields, and references to the messages it holds, named as kube-apiserver
//!   names them (`io.k8s.api.core.v1.Pod`), and the descriptions of the type and its fields
//!   that kube-apiserver's documents give ([`descriptions`]).
//! - A custom resource's schema is its CRD's `openAPIV3Schema`, with `apiVersion`, `kind` and
//!   `metadata` as every object has them, and a schema of its list, as apiextensions-apiserver
//!   publishes them (`com.example.v1.Widget` for group `example.com`).
//!
//! The kinds a document serves carry `x-kubernetes-group-version-kind`, which is how clients
//! find a kind's schema.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use super::descriptions::{self, Described};
use crate::apiserver::resource::ResourceType;
use crate::apiserver::schema::{self, Cardinality, Field, Kind, Schema};

const OBJECT_META: &str = "k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta";
const LIST_META: &str = "k8s.io.apimachinery.pkg.apis.meta.v1.ListMeta";

/// The component schemas of a document serving `types`.
pub(super) fn components(types: &[&ResourceType]) -> Map<String, Value> {
    let table = Schema::builtin();
    let mut out = Map::new();
    let mut messages = Messages::default();
    for t in types {
        if let Some(crd_schema) = &t.openapi_schema {
            custom_resource(t, crd_schema, &mut out);
            messages.want(OBJECT_META);
            messages.want(LIST_META);
        } else if let Some(root) = table.message_name_for(&t.api_version(), &t.kind) {
            messages.want(&root);
            messages
                .roots
                .push((root, gvk(&t.group, &t.version, &t.kind)));
        }
    }
    while let Some(name) = messages.next() {
        let described = descriptions::of(&name);
        if let Some(mut scalar) = scalar_component(&name) {
            describe(&mut scalar, described.and_then(|d| d.of_type.as_deref()));
            out.insert(component_name(&name), scalar);
            continue;
        }
        let Some(message) = table.message(&name) else {
            continue;
        };
        let mut object = message_schema(table, message, described, &mut messages);
        if let Some((_, gvk)) = messages.roots.iter().find(|(root, _)| *root == name) {
            object["x-kubernetes-group-version-kind"] = gvk.clone();
        }
        out.insert(component_name(&name), object);
    }
    out
}

/// The messages to write: those wanted, each once; the kinds' own with their
/// `x-kubernetes-group-version-kind`.
#[derive(Default)]
struct Messages {
    roots: Vec<(String, Value)>,
    wanted: Vec<String>,
    seen: BTreeSet<String>,
}

impl Messages {
    fn want(&mut self, name: &str) {
        if self.seen.insert(name.to_string()) {
            self.wanted.push(name.to_string());
        }
    }

    fn next(&mut self) -> Option<String> {
        self.wanted.pop()
    }
}

/// `k8s.io.api.core.v1.Pod` -> `io.k8s.api.core.v1.Pod`.
fn component_name(message: &str) -> String {
    match message.strip_prefix("k8s.io.") {
        Some(rest) => format!("io.k8s.{rest}"),
        None => message.to_string(),
    }
}

fn reference(message: &str) -> Value {
    json!({"$ref": format!("#/components/schemas/{}", component_name(message))})
}

fn gvk(group: &str, version: &str, kind: &str) -> Value {
    json!([{"group": group, "version": version, "kind": kind}])
}

/// A schema's `description`, if there is one.
fn describe(schema: &mut Value, description: Option<&str>) {
    if let (Some(description), Some(schema)) = (description, schema.as_object_mut()) {
        schema.insert("description".into(), json!(description));
    }
}

/// An object with the message's fields (those of embedded messages inline), described.
fn message_schema(
    table: &Schema,
    message: &schema::Message,
    described: Option<&Described>,
    messages: &mut Messages,
) -> Value {
    let mut properties = Map::new();
    let mut required = Vec::new();
    add_fields(
        table,
        message,
        described,
        messages,
        &mut properties,
        &mut required,
    );
    let mut object = json!({"type": "object", "properties": properties});
    describe(&mut object, described.and_then(|d| d.of_type.as_deref()));
    if !required.is_empty() {
        object["required"] = json!(required);
    }
    object
}

/// The properties of `message`'s fields; `described` is the message's descriptions, or the
/// one's that embeds it.
fn add_fields(
    table: &Schema,
    message: &schema::Message,
    described: Option<&Described>,
    messages: &mut Messages,
    properties: &mut Map<String, Value>,
    required: &mut Vec<String>,
) {
    for field in &message.fields {
        if field.cardinality == Cardinality::Inline {
            if let Some(inner) = field.message.as_deref().and_then(|m| table.message(m)) {
                add_fields(table, inner, described, messages, properties, required);
            }
            continue;
        }
        let value = value_schema(field, messages);
        let mut property = match field.cardinality {
            Cardinality::Repeated => json!({"type": "array", "items": value}),
            Cardinality::Map => json!({"type": "object", "additionalProperties": value}),
            Cardinality::Optional | Cardinality::Inline => value,
        };
        let description = described.and_then(|d| d.fields.get(field.json.as_str()));
        describe(&mut property, description.map(String::as_str));
        properties.insert(field.json.clone(), property);
        // k8s-openapi (where `required` comes from) keeps an object's metadata, apiVersion
        // and kind outside `Option`; the API requires none of them.
        let envelope =
            field.kind == Kind::JsonOnly || field.message.as_deref() == Some(OBJECT_META);
        if field.required && !envelope {
            required.push(field.json.clone());
        }
    }
}

/// The schema of one value of `field`: a scalar, a message with a JSON form of its own, or a
/// reference to another message's schema (wanted in turn).
fn value_schema(field: &Field, messages: &mut Messages) -> Value {
    match field.kind {
        Kind::String | Kind::JsonOnly => json!({"type": "string"}),
        Kind::Bool => json!({"type": "boolean"}),
        Kind::Int32 => json!({"type": "integer", "format": "int32"}),
        Kind::Int64 => json!({"type": "integer", "format": "int64"}),
        Kind::Double => json!({"type": "number", "format": "double"}),
        Kind::Bytes => json!({"type": "string", "format": "byte"}),
        Kind::Message => {
            let Some(message) = field.message.as_deref() else {
                return json!({"type": "object"});
            };
            match message {
                extra if schema::is_extra_value(extra) => {
                    json!({"type": "array", "items": {"type": "string"}})
                }
                message => {
                    messages.want(message);
                    json!({"allOf": [reference(message)]})
                }
            }
        }
    }
}

/// The component schema of a type with a JSON form of its own, as kube-openapi writes it in
/// OpenAPI v3 (`OpenAPISchemaType`, `OpenAPIV3OneOfTypes`). Fields refer to these by name, as
/// in kube-apiserver's documents, so `kubectl explain` shows `<IntOrString>`, `<Quantity>`,
/// `<FieldsV1>`, `<RawExtension>` (and `<string>` for times and durations, whose schemas
/// have a type).
fn scalar_component(message: &str) -> Option<Value> {
    Some(match message {
        schema::TIME | schema::MICRO_TIME => json!({"type": "string", "format": "date-time"}),
        schema::DURATION => json!({"type": "string"}),
        schema::QUANTITY => json!({"oneOf": [{"type": "string"}, {"type": "number"}]}),
        schema::INT_OR_STRING => json!({
            "format": "int-or-string",
            "oneOf": [{"type": "integer"}, {"type": "string"}],
        }),
        schema::FIELDS_V1 | schema::RAW_EXTENSION => json!({"type": "object"}),
        _ => return None,
    })
}

/// `example.com` -> `com.example`.
fn reversed(group: &str) -> String {
    group.split('.').rev().collect::<Vec<_>>().join(".")
}

/// `TypeMeta`'s field descriptions (apimachinery's `map_TypeMeta`).
const API_VERSION_DESCRIPTION: &str = "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources";
const KIND_DESCRIPTION: &str = "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";

/// `apiVersion` and `kind`, as apiextensions-apiserver's builder adds them from `TypeMeta`.
fn type_meta_properties() -> [(&'static str, Value); 2] {
    [
        (
            "apiVersion",
            json!({"type": "string", "description": API_VERSION_DESCRIPTION}),
        ),
        (
            "kind",
            json!({"type": "string", "description": KIND_DESCRIPTION}),
        ),
    ]
}

/// A custom resource's schema and its list's, with the envelope's properties and
/// descriptions that apiextensions-apiserver's OpenAPI builder adds (`buildKubeNative`,
/// `buildListSchema`).
fn custom_resource(t: &ResourceType, crd_schema: &Value, out: &mut Map<String, Value>) {
    let name = format!("{}.{}.{}", reversed(&t.group), t.version, t.kind);
    let mut object = match crd_schema {
        Value::Object(schema) => schema.clone(),
        _ => Map::new(),
    };
    let properties = object.entry("properties").or_insert_with(|| json!({}));
    if let Value::Object(properties) = properties {
        properties.extend(type_meta_properties().map(|(k, v)| (k.to_string(), v)));
        properties.insert(
            "metadata".into(),
            json!({
                "allOf": [reference(OBJECT_META)],
                "description": "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata",
            }),
        );
    }
    object.insert("type".into(), json!("object"));
    object.insert(
        "x-kubernetes-group-version-kind".into(),
        gvk(&t.group, &t.version, &t.kind),
    );
    out.insert(name.clone(), Value::Object(object));
    let mut list = json!({
        "type": "object",
        "description": format!("{} is a list of {}", t.list_kind, t.kind),
        "required": ["items"],
        "properties": {
            "items": {
                "type": "array",
                "description": format!("List of {}. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md", t.plural),
                "items": {"allOf": [{"$ref": format!("#/components/schemas/{name}")}]},
            },
            "metadata": {
                "allOf": [reference(LIST_META)],
                "description": "Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds",
            },
        },
        "x-kubernetes-group-version-kind": gvk(&t.group, &t.version, &t.list_kind),
    });
    for (key, property) in type_meta_properties() {
        list["properties"][key] = property;
    }
    out.insert(
        format!("{}.{}.{}", reversed(&t.group), t.version, t.list_kind),
        list,
    );
}
