//! Content negotiation: reading request bodies in the formats a real server reads (JSON,
//! YAML, Kubernetes protobuf), choosing the response format from `Accept` (406 when
//! nothing acceptable can be served), and the `fieldValidation` check of unknown and
//! duplicate fields.

use std::cell::RefCell;
use std::fmt;

use http::{HeaderMap, header};
use serde::Deserialize as _;
use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

use super::protobuf;
use super::resource::ResourceType;
use super::schema::Schema;
use super::status::{ApiError, StatusReason};

const JSON: &str = "application/json";
const YAML: &str = "application/yaml";
const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

/// The media types request bodies may have (for the 415 message).
const ACCEPTED_BODIES: &str =
    "application/json, application/yaml, application/vnd.kubernetes.protobuf";

/// A decoded request body, with the fields that appeared twice in one object (the last
/// occurrence is kept, as Go's decoder keeps it).
#[derive(Debug)]
pub(crate) struct Body {
    pub value: Value,
    pub duplicates: Vec<String>,
}

fn media_type(value: &str) -> String {
    value
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

/// `NewUnsupportedMediaTypeError`: the accepted types, not the one sent.
fn unsupported_media_type(_content_type: &str) -> ApiError {
    ApiError::new(
        StatusReason::UnsupportedMediaType,
        format!(
            "the body of the request was in an unknown format - accepted media types include: {ACCEPTED_BODIES}"
        ),
    )
}

/// Whether an object body is JSON by its `Content-Type` (also when absent, as the real
/// server defaults).
pub(crate) fn is_json(headers: &HeaderMap) -> bool {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    matches!(media_type(content_type).as_str(), "" | JSON)
}

/// Reads an object body by its `Content-Type`: JSON (also when absent, as the real server
/// defaults), YAML, or Kubernetes protobuf; anything else is 415.
pub(crate) fn decode_object(headers: &HeaderMap, body: &[u8]) -> Result<Body, ApiError> {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    match media_type(content_type).as_str() {
        "" | JSON => decode_json(body),
        YAML | "application/x-yaml" | "text/yaml" => decode_yaml(body),
        PROTOBUF => {
            let value = protobuf::decode(body).map_err(|err| match err {
                protobuf::DecodeError::UnsupportedType { .. } => {
                    ApiError::new(StatusReason::UnsupportedMediaType, err.to_string())
                }
                protobuf::DecodeError::Malformed(_) => ApiError::bad_request(err.to_string()),
            })?;
            Ok(Body {
                value,
                duplicates: Vec::new(),
            })
        }
        _ => Err(unsupported_media_type(content_type)),
    }
}

fn empty_body() -> ApiError {
    ApiError::bad_request("the request body is empty; an object was expected")
}

/// Parses JSON, noting duplicate fields.
pub(crate) fn decode_json(body: &[u8]) -> Result<Body, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(empty_body());
    }
    let duplicates = RefCell::new(Vec::new());
    let body = go_lenient_strings(body);
    let mut deserializer = serde_json::Deserializer::from_slice(&body);
    let value = Checked {
        path: String::new(),
        duplicates: &duplicates,
    }
    .deserialize(&mut deserializer)
    .and_then(|value| deserializer.end().map(|()| value))
    .map_err(|err| ApiError::bad_request(format!("the request body is not valid JSON: {err}")))?;
    Ok(Body {
        value,
        duplicates: duplicates.into_inner(),
    })
}

/// The body as Go's JSON decoder reads its strings: each byte that is not UTF-8 is U+FFFD,
/// and so is a `\u` escape of a surrogate that is not half of a pair (`"\ud800"`); serde
/// refuses both, the real server stores the replacement character.
fn go_lenient_strings(body: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    let surrogate_escape = body
        .windows(3)
        .any(|w| w[0] == b'\\' && w[1] == b'u' && matches!(w[2], b'd' | b'D'));
    if std::str::from_utf8(body).is_ok() && !surrogate_escape {
        return std::borrow::Cow::Borrowed(body);
    }
    let mut text = Vec::with_capacity(body.len());
    for chunk in body.utf8_chunks() {
        text.extend_from_slice(chunk.valid().as_bytes());
        for _ in chunk.invalid() {
            text.extend_from_slice("\u{fffd}".as_bytes());
        }
    }
    let hex4 = |at: usize| -> Option<u32> {
        let digits = std::str::from_utf8(text.get(at..at + 4)?).ok()?;
        u32::from_str_radix(digits, 16).ok()
    };
    let escape_at = |at: usize| -> Option<u32> {
        (text.get(at) == Some(&b'\\') && text.get(at + 1) == Some(&b'u'))
            .then(|| hex4(at + 2))
            .flatten()
    };
    let mut out = Vec::with_capacity(text.len());
    let (mut i, mut in_string) = (0, false);
    while i < text.len() {
        let b = text[i];
        if !in_string || b != b'\\' {
            if b == b'"' {
                in_string = !in_string;
            }
            out.push(b);
            i += 1;
            continue;
        }
        match escape_at(i) {
            Some(0xD800..=0xDBFF) => {
                if escape_at(i + 6).is_some_and(|low| (0xDC00..=0xDFFF).contains(&low)) {
                    out.extend_from_slice(&text[i..i + 12]);
                    i += 12;
                } else {
                    out.extend_from_slice(b"\\ufffd");
                    i += 6;
                }
            }
            Some(0xDC00..=0xDFFF) => {
                out.extend_from_slice(b"\\ufffd");
                i += 6;
            }
            _ => {
                let end = (i + 2).min(text.len());
                out.extend_from_slice(&text[i..end]);
                i = end;
            }
        }
    }
    std::borrow::Cow::Owned(out)
}

/// The first document of a YAML stream: what `yaml.Unmarshal` (sigs.k8s.io/yaml) reads of
/// a body, ignoring the documents after it. A document ends at a `---` or `...` line once it
/// has content (a leading `---` starts the first).
fn first_yaml_document(body: &[u8]) -> &[u8] {
    let mut offset = 0;
    let mut content = false;
    for line in body.split_inclusive(|b| *b == b'\n') {
        let marker = |m: &[u8]| {
            line.starts_with(m)
                && line
                    .get(3)
                    .is_none_or(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
        };
        if marker(b"---") || marker(b"...") {
            if content {
                return &body[..offset];
            }
        } else if line
            .iter()
            .find(|b| !b.is_ascii_whitespace())
            .is_some_and(|b| *b != b'#' && *b != b'%')
        {
            content = true;
        }
        offset += line.len();
    }
    body
}

/// Parses YAML (one document), noting duplicate fields.
pub(crate) fn decode_yaml(body: &[u8]) -> Result<Body, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(empty_body());
    }
    let duplicates = RefCell::new(Vec::new());
    let mut options = serde_saphyr::Options::default();
    options.duplicate_keys = serde_saphyr::DuplicateKeyPolicy::PassThrough;
    let body = first_yaml_document(body);
    let value = serde_saphyr::with_deserializer_from_slice_with_options(body, options, |de| {
        Checked {
            path: String::new(),
            duplicates: &duplicates,
        }
        .deserialize(de)
    })
    .map_err(|err| ApiError::bad_request(format!("the request body is not valid YAML: {err}")))?;
    Ok(Body {
        value,
        duplicates: duplicates.into_inner(),
    })
}

/// Builds a `Value`, recording the path of every key seen twice in one object.
struct Checked<'a> {
    path: String,
    duplicates: &'a RefCell<Vec<String>>,
}

impl Checked<'_> {
    fn child(&self, segment: &str) -> String {
        if self.path.is_empty() {
            segment.to_string()
        } else {
            format!("{}.{segment}", self.path)
        }
    }
}

impl<'de> DeserializeSeed<'de> for Checked<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

/// A map key of any scalar type, as a string (YAML allows `1: x`; JSON only has strings).
struct Key;

impl<'de> DeserializeSeed<'de> for Key {
    type Value = String;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<String, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Ok(match value {
            Value::String(s) => s,
            other => other.to_string(),
        })
    }
}

impl<'de> Visitor<'de> for Checked<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Value, E> {
        Number::from_f64(v)
            .map(Value::Number)
            .ok_or_else(|| E::custom(format!("{v} is not a JSON number")))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(Checked {
            path: format!("{}[{}]", self.path, items.len()),
            duplicates: self.duplicates,
        })? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Value, A::Error> {
        let mut map = Map::new();
        while let Some(key) = access.next_key_seed(Key)? {
            let path = self.child(&key);
            let value = access.next_value_seed(Checked {
                path: path.clone(),
                duplicates: self.duplicates,
            })?;
            if map.insert(key, value).is_some() {
                self.duplicates.borrow_mut().push(path);
            }
        }
        Ok(Value::Object(map))
    }
}

/// The `fieldValidation` directive of a write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FieldValidation {
    /// Unknown and duplicate fields are dropped silently.
    Ignore,
    /// They are dropped, with one `Warning` header each (the default).
    Warn,
    /// They fail the request with 400.
    Strict,
}

impl FieldValidation {
    /// Reads the `fieldValidation` query parameter; an unknown value is a 422 about the
    /// request's options (`CreateOptions`, `UpdateOptions`, `PatchOptions`).
    pub(crate) fn parse(value: Option<&str>, options: &str) -> Result<Self, ApiError> {
        match value {
            None | Some("") | Some("Warn") => Ok(Self::Warn),
            Some("Ignore") => Ok(Self::Ignore),
            Some("Strict") => Ok(Self::Strict),
            Some(other) => Err(ApiError::invalid(
                &format!("{options}.meta.k8s.io"),
                "",
                &format!(
                    "fieldValidation: Unsupported value: \"{other}\": supported values: \"\", \"Ignore\", \"Strict\", \"Warn\""
                ),
            )),
        }
    }
}

/// What a write's body holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BodyKind {
    /// A whole object (a create or an update), in any format the headers name.
    Object,
    /// A JSON merge patch.
    MergePatch,
    /// A strategic merge patch, whose `$`-keys are directives.
    StrategicPatch,
}

/// Drops the fields of an object or patch that the type does not have (a built-in type's Go
/// struct, a custom resource's structural schema; a strategic merge patch keeps its
/// `$`-directives), and applies the directive to them and to duplicate fields: returns the
/// warnings to send, or the 400. A whole object of a built-in type that Go's decoder
/// refuses is a 400 before anything else is looked at (a patch's values are checked once it
/// is applied).
pub(crate) fn check_fields(
    resource: &ResourceType,
    body: &mut Body,
    validation: FieldValidation,
    kind: BodyKind,
) -> Result<Vec<String>, ApiError> {
    let directives = kind == BodyKind::StrategicPatch;
    let cannot_handle = |error: &str| {
        ApiError::bad_request(format!(
            "{kind} in version \"{version}\" cannot be handled as a {kind}: {error}",
            kind = resource.kind,
            version = resource.version,
        ))
    };
    let unknown = match &resource.schema {
        Some(schema) => {
            go_unstructured_numbers(&mut body.value);
            let unknown = schema.prune(&mut body.value);
            // The object's own metadata, then embedded resources' type fields and metadata,
            // are coerced into Go's types.
            if kind == BodyKind::Object
                && let Some(error) = schema.root_metadata_error(&body.value)
            {
                return Err(cannot_handle(&error));
            }
            if kind == BodyKind::Object
                && let Some(error) = schema.coerce_error(&body.value)
            {
                return Err(cannot_handle(&error));
            }
            unknown
        }
        None => {
            let schema = Schema::builtin();
            if kind == BodyKind::Object
                && let Some(error) = go_decode_error(resource, &body.value)
            {
                return Err(cannot_handle(&error));
            }
            match schema.message_name_for(&resource.api_version(), &resource.kind) {
                Some(message) => schema.prune_unknown(&message, &mut body.value, directives),
                None => Vec::new(),
            }
        }
    };
    let problems: Vec<String> = unknown
        .iter()
        .map(|path| format!("unknown field \"{path}\""))
        .chain(
            body.duplicates
                .iter()
                .map(|path| format!("duplicate field \"{path}\"")),
        )
        .collect();
    match validation {
        _ if problems.is_empty() => Ok(Vec::new()),
        FieldValidation::Ignore => Ok(Vec::new()),
        FieldValidation::Warn => Ok(problems),
        FieldValidation::Strict => Err(cannot_handle(&format!(
            "strict decoding error: {}",
            problems.join(", ")
        ))),
    }
}

/// Numbers as a custom resource's JSON decodes into an `Unstructured` (`int64` when the
/// literal is one, else `float64`) and is written back: an integer beyond `int64` is a float
/// (so `type: integer` refuses it), a float with no fraction is written as an integer (`1.0`
/// comes back `1`).
fn go_unstructured_numbers(value: &mut Value) {
    match value {
        Value::Number(n) => {
            if let Some(u) = n.as_u64()
                && u > i64::MAX as u64
                && let Some(f) = Number::from_f64(u as f64)
            {
                *n = f;
            } else if let Some(f) = n.as_f64()
                && n.is_f64()
                && f.fract() == 0.0
                && f.abs() < 9.0e15
            {
                *n = Number::from(f as i64);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(go_unstructured_numbers),
        Value::Object(map) => map.values_mut().for_each(go_unstructured_numbers),
        _ => {}
    }
}

/// What decoding a custom resource's create or update body into an `Unstructured` refuses
/// (400): a body without `kind` (`the object provided is unrecognized ...: Object 'Kind' is
/// missing in '<body>' (<its first 30 bytes> ...)`), then one whose `apiVersion` is not the
/// request's (an unset one included). Built-in types take both from the URL instead.
pub(crate) fn check_custom_type_meta(
    resource: &ResourceType,
    body: &[u8],
    object: &Value,
) -> Result<(), ApiError> {
    if !resource.custom {
        return Ok(());
    }
    // `SimpleMetaFactory.Interpret` decodes the body into a struct of `apiVersion` and
    // `kind` first: a body that is no object, or whose `apiVersion` or `kind` (the first in
    // the document) is no string, fails there, with Go's type error.
    let go_kind = |value: &Value| match value {
        Value::Array(_) => Some("array"),
        Value::String(_) => Some("string"),
        Value::Number(_) => Some("number"),
        Value::Bool(_) => Some("bool"),
        Value::Object(_) => Some("object"),
        Value::Null => None,
    };
    let interpret_error = match object {
        Value::Object(map) => map.iter().find_map(|(key, value)| {
            (matches!(key.as_str(), "apiVersion" | "kind") && !value.is_string())
                .then(|| go_kind(value))
                .flatten()
                .map(|t| format!("json: cannot unmarshal {t} into Go struct field .{key} of type string"))
        }),
        Value::Null => None,
        other => go_kind(other).map(|t| format!(
            "json: cannot unmarshal {t} into Go value of type struct {{ APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string \"json:\\\"kind,omitempty\\\"\" }}"
        )),
    };
    if let Some(error) = interpret_error {
        return Err(ApiError::bad_request(format!(
            "the object provided is unrecognized (must be of type {}): couldn't get version/kind; json parse error: {error} ({})",
            resource.kind,
            summarize_body(body)
        )));
    }
    let text = |field: &str| object.get(field).and_then(Value::as_str).unwrap_or("");
    if text("kind").is_empty() {
        return Err(ApiError::bad_request(format!(
            "the object provided is unrecognized (must be of type {}): Object 'Kind' is missing in '{}' ({})",
            resource.kind,
            String::from_utf8_lossy(body),
            summarize_body(body)
        )));
    }
    let expected = resource.api_version();
    if text("apiVersion") != expected {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({}) does not match the expected API version ({expected})",
            text("apiVersion")
        )));
    }
    Ok(())
}

/// `summarizeData(body, 30)`: a JSON object's first 30 bytes as text, anything else's in hex.
fn summarize_body(body: &[u8]) -> String {
    const MAX: usize = 30;
    let (shown, more) = if body.len() > MAX {
        (&body[..MAX], " ...")
    } else {
        (body, "")
    };
    match body.first() {
        None => "<empty>".to_string(),
        Some(b'{') => format!("{}{more}", String::from_utf8_lossy(shown)),
        Some(_) => {
            let hex: String = shown.iter().map(|b| format!("{b:02x}")).collect();
            format!("{hex}{more}")
        }
    }
}

/// The field manager's version check (`versionCheckManager`, the first step of every
/// server-side apply, of built-in types and custom resources alike): an apply configuration
/// must name the request's group, version and kind, or it is a 400
/// `invalid object type: <group>/<version>, Kind=<kind>` (as Go prints the configuration's).
pub(crate) fn check_apply_type(resource: &ResourceType, config: &Value) -> Result<(), ApiError> {
    check_apply_gvk(&resource.api_version(), &resource.kind, config)
}

/// [`check_apply_type`] against a type given by its `apiVersion` and kind (a subresource's,
/// such as `autoscaling/v1` `Scale`).
pub(crate) fn check_apply_gvk(
    expected_version: &str,
    expected_kind: &str,
    config: &Value,
) -> Result<(), ApiError> {
    let text = |field: &str| config.get(field).and_then(Value::as_str).unwrap_or("");
    let (api_version, kind) = (text("apiVersion"), text("kind"));
    if api_version == expected_version && kind == expected_kind {
        return Ok(());
    }
    // `schema.ParseGroupVersion`: "v1" is the core group's; more than one '/' is no
    // version at all, and then no kind either (`Unstructured.GroupVersionKind`).
    let (group, version, kind) = match api_version.split('/').collect::<Vec<_>>()[..] {
        [""] => ("", "", kind),
        [version] => ("", version, kind),
        [group, version] => (group, version, kind),
        _ => ("", "", ""),
    };
    Err(ApiError::bad_request(format!(
        "invalid object type: {group}/{version}, Kind={kind}"
    )))
}

/// What Go's JSON decoder refuses in `object` as a built-in type (see
/// [`Schema::go_decode_error`]); `None` for custom resources, whose schemas validate them.
pub(crate) fn go_decode_error(resource: &ResourceType, object: &Value) -> Option<String> {
    Schema::builtin().go_decode_error(&builtin_message(resource)?, object)
}

/// What kube-apiserver's unstructured converter refuses in a strategically patched built-in
/// `object` (see [`Schema::go_convert_error`]); `None` for custom resources.
pub(crate) fn go_convert_error(resource: &ResourceType, object: &Value) -> Option<String> {
    Schema::builtin().go_convert_error(&builtin_message(resource)?, object)
}

/// The message of a built-in type in the builtin schema; `None` for custom resources.
fn builtin_message(resource: &ResourceType) -> Option<String> {
    if resource.schema.is_some() {
        return None;
    }
    Schema::builtin().message_name_for(&resource.api_version(), &resource.kind)
}

/// The format a response body is written in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Output {
    #[default]
    Json,
    Yaml,
    /// A `meta.k8s.io/v1` `Table` (what `kubectl get` asks for).
    Table,
    /// `PartialObjectMetadata` / `PartialObjectMetadataList` (metadata-only clients).
    Metadata,
    /// `apidiscovery.k8s.io/v2` `APIGroupDiscoveryList` (aggregated discovery of `/api` and
    /// `/apis`).
    AggregatedDiscovery,
}

/// The media type of an aggregated discovery document.
pub(crate) const AGGREGATED_DISCOVERY: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// Where a response goes: what the route can produce beyond plain objects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Route {
    /// A get, list or watch of a resource: Tables and metadata can be served.
    Read,
    /// A watch: JSON streams only (no YAML).
    Watch,
    /// `/api` or `/apis`: aggregated discovery can be served.
    Discovery,
    /// Anything else: JSON or YAML.
    Other,
}

/// Chooses the response format from `Accept`, as kube-apiserver negotiates: media ranges in
/// order of preference (`q`), the first one the server can produce wins; none is 406.
pub(crate) fn negotiate(headers: &HeaderMap, route: Route) -> Result<Output, ApiError> {
    let ranges = accepted_ranges(headers);
    if ranges.is_empty() {
        return Ok(Output::Json);
    }
    ranges
        .iter()
        .find_map(|range| servable(range, route))
        .ok_or_else(|| {
            let mut supported = vec![JSON];
            if route != Route::Watch {
                supported.push(YAML);
            }
            ApiError::new(
                StatusReason::NotAcceptable,
                format!(
                    "only the following media types are accepted: {}",
                    supported.join(", ")
                ),
            )
        })
}

/// The version of `meta.k8s.io` a negotiated `Table` or `PartialObjectMetadata[List]` is
/// written in: the one its media range names (`transformObject` converts to the target's
/// group version, `v1beta1` or `v1`).
pub(crate) fn meta_version(headers: &HeaderMap, route: Route) -> &'static str {
    accepted_ranges(headers)
        .iter()
        .find_map(|range| Some((range, servable(range, route)?)))
        .filter(|(range, output)| {
            matches!(output, Output::Table | Output::Metadata)
                && range_param(range, "v") == Some("v1beta1")
        })
        .map_or("v1", |_| "v1beta1")
}

/// A `Table` or metadata answer (or watch event object) in `meta.k8s.io/<version>`: its
/// own `apiVersion`, its items' and its rows' `PartialObjectMetadata` objects'.
pub(crate) fn set_meta_version(value: &mut Value, version: &str) {
    if version == "v1" {
        return;
    }
    let target = Value::String(format!("meta.k8s.io/{version}"));
    let fix = |v: &mut Value| {
        if v.get("apiVersion").and_then(Value::as_str) == Some("meta.k8s.io/v1") {
            v["apiVersion"] = target.clone();
        }
    };
    fix(value);
    if let Some(items) = value.get_mut("items").and_then(Value::as_array_mut) {
        items.iter_mut().for_each(fix);
    }
    if let Some(rows) = value.get_mut("rows").and_then(Value::as_array_mut) {
        for row in rows {
            if let Some(object) = row.get_mut("object") {
                fix(object);
            }
        }
    }
}

/// A watch event line whose object is a `Table` or `PartialObjectMetadata`, in
/// `meta.k8s.io/<version>` (see [`set_meta_version`]).
pub(crate) fn event_meta_version(chunk: bytes::Bytes, version: &str) -> bytes::Bytes {
    if version == "v1" {
        return chunk;
    }
    let Ok(mut event) = serde_json::from_slice::<Value>(&chunk) else {
        return chunk;
    };
    if let Some(object) = event.get_mut("object") {
        set_meta_version(object, version);
    }
    let mut out = serde_json::to_vec(&event).unwrap_or_default();
    out.push(b'\n');
    bytes::Bytes::from(out)
}

/// The media ranges of `Accept` that are not refused (`q=0`), most preferred first (by `q`,
/// then in the order given).
fn accepted_ranges(headers: &HeaderMap) -> Vec<String> {
    let values: Vec<&str> = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    let mut ranges: Vec<(f32, usize, &str)> = values
        .iter()
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .enumerate()
        .map(|(i, range)| (quality(range), i, range))
        .filter(|(q, _, _)| *q > 0.0)
        .collect();
    ranges.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    ranges.into_iter().map(|(_, _, r)| r.to_string()).collect()
}

/// Whether `Accept` names one of kube-apiserver's serializers' media types, parameters aside
/// (`application/json`, `application/yaml`, `application/vnd.kubernetes.protobuf`, or a
/// wildcard): go-restful lets such a request through to the handler, which may still refuse
/// its parameters.
pub(crate) fn accepts_a_serializer(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter(|range| quality(range) > 0.0)
        .map(|range| {
            range
                .split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        })
        .any(|media| {
            matches!(
                media.as_str(),
                JSON | YAML | "application/vnd.kubernetes.protobuf" | "application/*" | "*/*"
            )
        })
}

fn quality(range: &str) -> f32 {
    range
        .split(';')
        .skip(1)
        .filter_map(|p| p.trim().strip_prefix("q="))
        .find_map(|q| q.trim().parse().ok())
        .unwrap_or(1.0)
}

/// The value of a media range's parameter (its name in any case), trimmed.
fn range_param<'a>(range: &'a str, name: &str) -> Option<&'a str> {
    range
        .split(';')
        .skip(1)
        .filter_map(|p| p.split_once('='))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case(name))
        .map(|(_, v)| v.trim())
}

fn servable(range: &str, route: Route) -> Option<Output> {
    let media = range
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let param = |name: &str| range_param(range, name);
    let plain = match media.as_str() {
        JSON | "application/*" | "*/*" => Output::Json,
        YAML if route != Route::Watch => Output::Yaml,
        _ => return None,
    };
    match (param("as"), param("g"), param("v")) {
        (None, None, None) => Some(plain),
        (Some("Table"), Some("meta.k8s.io"), Some("v1" | "v1beta1"))
            if matches!(route, Route::Read | Route::Watch) && plain == Output::Json =>
        {
            Some(Output::Table)
        }
        (
            Some("PartialObjectMetadata" | "PartialObjectMetadataList"),
            Some("meta.k8s.io"),
            Some("v1" | "v1beta1"),
        ) if matches!(route, Route::Read | Route::Watch) && plain == Output::Json => {
            Some(Output::Metadata)
        }
        (Some("APIGroupDiscoveryList"), Some("apidiscovery.k8s.io"), Some("v2"))
            if route == Route::Discovery && plain == Output::Json =>
        {
            Some(Output::AggregatedDiscovery)
        }
        _ => None,
    }
}

/// What the real server's `transformObject` refuses once the object or list is read: a
/// `Table` with an unknown `includeObject` (400), and metadata asked for as
/// `PartialObjectMetadata` of a list or as `PartialObjectMetadataList` of one object (406, or
/// 500 for one custom resource;
/// negotiation accepts either for any endpoint).
pub(crate) fn check_transform(
    headers: &HeaderMap,
    output: Output,
    include_object: Option<&str>,
    resource: &ResourceType,
    list: bool,
) -> Result<(), ApiError> {
    // The Go type of what was read: unstructured for custom resources, the internal type
    // (`*core.PodList`) for built-in ones.
    let go_type = |list: bool| {
        let suffix = if list { "List" } else { "" };
        if resource.custom {
            format!("*unstructured.Unstructured{suffix}")
        } else {
            let package = match resource.group.split('.').next() {
                None | Some("") => "core",
                Some(first) => first,
            };
            format!("*{package}.{}{suffix}", resource.kind)
        }
    };
    match output {
        Output::Table => match include_object {
            None | Some("" | "Metadata" | "Object" | "None") => Ok(()),
            Some(other) => Err(ApiError::bad_request(format!(
                "Unable to convert to Table as requested: includeObject: Invalid value: {other:?}: must be 'Metadata', 'Object', 'None', or empty"
            ))),
        },
        Output::Metadata => {
            let asked_list = accepted_ranges(headers)
                .iter()
                .find(|range| servable(range, Route::Read).is_some())
                .is_some_and(|range| range.contains("PartialObjectMetadataList"));
            match (asked_list, list) {
                (false, true) => Err(ApiError::new(
                    StatusReason::NotAcceptable,
                    format!(
                        "you requested PartialObjectMetadata, but the requested object is a list ({})",
                        go_type(true)
                    ),
                )),
                // A custom resource is read as an `*unstructured.Unstructured`, which is a
                // `metav1.ListInterface`: `asPartialObjectMetadataList` takes it for a list
                // and fails in `EachListItem` (a plain error: 500 without a reason).
                (true, false) if resource.custom => Err(ApiError::new(
                    StatusReason::Unknown,
                    "content is not a list",
                )),
                (true, false) => Err(ApiError::new(
                    StatusReason::NotAcceptable,
                    format!(
                        "you requested PartialObjectMetadataList, but the requested object is not a list ({})",
                        go_type(false)
                    ),
                )),
                _ => Ok(()),
            }
        }
        _ => Ok(()),
    }
}

/// Writes a value in a negotiated format: the body and its `Content-Type`.
pub(crate) fn encode(value: &Value, output: Output) -> (Vec<u8>, &'static str) {
    match output {
        Output::Yaml => match serde_saphyr::to_string(value) {
            Ok(text) => (text.into_bytes(), YAML),
            Err(err) => {
                tracing::warn!(%err, "failed to write YAML; answering JSON");
                (serde_json::to_vec(value).unwrap_or_default(), JSON)
            }
        },
        Output::Json | Output::Table | Output::Metadata => (super::status::to_json(value), JSON),
        Output::AggregatedDiscovery => {
            let mut out = serde_json::to_vec(value).unwrap_or_default();
            out.push(b'\n');
            (out, AGGREGATED_DISCOVERY)
        }
    }
}

/// An object as `PartialObjectMetadata`.
pub(crate) fn partial_metadata(object: &Value) -> Value {
    serde_json::json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": object.get("metadata").cloned().unwrap_or_else(|| serde_json::json!({})),
    })
}

/// An item of a list of `resource` as kube-apiserver encodes it: a built-in type's list is a
/// typed Go list (`ConfigMapList`, `CustomResourceDefinitionList`) whose items' `TypeMeta`
/// is empty, so they have no `kind` or `apiVersion`; a custom resource's list is
/// unstructured, and its items keep both. (Watch events, single objects, `Table` rows and
/// `PartialObjectMetadataList` items carry theirs.)
pub(crate) fn list_item(resource: &ResourceType, object: &Value) -> Value {
    let mut item = object.clone();
    if !resource.custom
        && let Value::Object(map) = &mut item
    {
        map.retain(|key, _| key != "apiVersion" && key != "kind");
    }
    item
}

/// Appends the JSON of an item of a list of `resource` (see [`list_item`]) to `out`, from
/// the object's JSON as `serde_json` wrote it (`json`) when it can: the top-level
/// `apiVersion` and `kind` members are cut out of the bytes, nothing is serialized again.
pub(crate) fn write_list_item(
    out: &mut Vec<u8>,
    resource: &ResourceType,
    object: &Value,
    json: &[u8],
) {
    if resource.custom {
        out.extend_from_slice(json);
    } else if !write_without_type_meta(out, json) {
        // Not an object as `serde_json` writes one (never for stored objects).
        let _ = serde_json::to_writer(&mut *out, &list_item(resource, object));
    }
}

/// Appends `json`, one object as `serde_json` writes it (no whitespace), to `out` without
/// its top-level `apiVersion` and `kind` members. `false` (and `out` unchanged) when `json`
/// is not such an object.
fn write_without_type_meta(out: &mut Vec<u8>, json: &[u8]) -> bool {
    /// The index just past the string starting at `at`.
    fn string_end(json: &[u8], at: usize) -> Option<usize> {
        if json.get(at) != Some(&b'"') {
            return None;
        }
        let mut i = at + 1;
        while let Some(&byte) = json.get(i) {
            match byte {
                b'\\' => i += 2,
                b'"' => return Some(i + 1),
                _ => i += 1,
            }
        }
        None
    }
    /// The index of the `,` or `}` ending the member whose value starts at `at`.
    fn value_end(json: &[u8], at: usize) -> Option<usize> {
        let (mut depth, mut i) = (0usize, at);
        while let Some(&byte) = json.get(i) {
            match byte {
                b'"' => {
                    i = string_end(json, i)?;
                    continue;
                }
                b'{' | b'[' => depth += 1,
                b',' if depth == 0 => return Some(i),
                b'}' | b']' if depth == 0 => return (byte == b'}').then_some(i),
                b'}' | b']' => depth -= 1,
                _ => {}
            }
            i += 1;
        }
        None
    }
    let mark = out.len();
    let written = (|| {
        if json.first() != Some(&b'{') {
            return None;
        }
        out.push(b'{');
        let mut at = 1;
        if json.get(at) != Some(&b'}') {
            let mut first = true;
            loop {
                let key_end = string_end(json, at)?;
                if json.get(key_end) != Some(&b':') {
                    return None;
                }
                let end = value_end(json, key_end + 1)?;
                let key = &json[at..key_end];
                if key != b"\"apiVersion\"" && key != b"\"kind\"" {
                    if !first {
                        out.push(b',');
                    }
                    out.extend_from_slice(&json[at..end]);
                    first = false;
                }
                at = end + 1;
                if json[end] == b'}' {
                    break;
                }
            }
        } else {
            at += 1;
        }
        (at == json.len()).then(|| out.push(b'}'))
    })();
    if written.is_none() {
        out.truncate(mark);
    }
    written.is_some()
}

/// Rewrites one watch event line so its object is `PartialObjectMetadata`.
pub(crate) fn event_as_metadata(chunk: bytes::Bytes) -> bytes::Bytes {
    let Ok(mut event) = serde_json::from_slice::<Value>(&chunk) else {
        return chunk;
    };
    if !matches!(
        event["type"].as_str(),
        Some("ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK")
    ) {
        return chunk;
    }
    event["object"] = partial_metadata(&event["object"]);
    let mut out = serde_json::to_vec(&event).unwrap_or_default();
    out.push(b'\n');
    bytes::Bytes::from(out)
}

#[cfg(test)]
mod tests;
