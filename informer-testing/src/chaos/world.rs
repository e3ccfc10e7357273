//! The world a controller lives in: its users' creates, updates and deletes, described step
//! by step ([`World::scripted`]) or generated from a few seed objects ([`World::generated`]).

use std::fmt;

use serde::Serialize;
use serde_json::{Map, Value};

use super::rng::Rng;

/// Which object a world step touches: `apiVersion`, `kind`, namespace and name.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ObjectId {
    /// The object's `apiVersion`, e.g. `apps/v1`.
    pub api_version: String,
    /// The object's `kind`, e.g. `Deployment`.
    pub kind: String,
    /// The namespace (`None` for cluster-scoped objects).
    pub namespace: Option<String>,
    /// The name.
    pub name: String,
}

impl ObjectId {
    /// The identity of `object` (namespaced objects without a namespace go to `default`,
    /// as the server puts them), or an error naming what is missing.
    pub(crate) fn of(object: &Value) -> Result<Self, String> {
        let field = |pointer: &str| object.pointer(pointer).and_then(Value::as_str);
        let (Some(api_version), Some(kind), Some(name)) = (
            field("/apiVersion"),
            field("/kind"),
            field("/metadata/name"),
        ) else {
            return Err(format!(
                "a world object needs apiVersion, kind and metadata.name: {object}"
            ));
        };
        Ok(Self {
            api_version: api_version.to_string(),
            kind: kind.to_string(),
            namespace: field("/metadata/namespace").map(str::to_string),
            name: name.to_string(),
        })
    }
}

impl ObjectId {
    /// The smallest object with this identity (what [`WorldStep::set`] and
    /// [`WorldStep::delete`] take).
    fn as_object(&self) -> Value {
        let mut metadata = serde_json::Map::new();
        metadata.insert("name".into(), Value::from(self.name.as_str()));
        if let Some(namespace) = &self.namespace {
            metadata.insert("namespace".into(), Value::from(namespace.as_str()));
        }
        serde_json::json!({"apiVersion": self.api_version, "kind": self.kind, "metadata": metadata})
    }
}

impl fmt::Display for ObjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.namespace {
            Some(namespace) => write!(f, "{} {namespace}/{}", self.kind, self.name),
            None => write!(f, "{} {}", self.kind, self.name),
        }
    }
}

/// One change the world makes, as a user of the cluster would (`kubectl apply`, `edit`,
/// `delete`). Steps are robust to the steps before them being left out (as shrinking does):
/// a create of an object that exists, and an update or delete of one that does not, do
/// nothing.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum WorldStep {
    /// Creates the object unless one with its name exists.
    Create(Value),
    /// Sets the field at a JSON pointer (e.g. `/spec/replicas`) of the object, if it
    /// exists, creating missing parent objects on the way.
    Set {
        /// The object.
        target: ObjectId,
        /// Where, as a JSON pointer.
        pointer: String,
        /// The new value.
        value: Value,
    },
    /// Deletes the object (with finalizers, it is only marked for deletion).
    Delete(ObjectId),
    /// Deletes the object and creates it again from this template at once: the same name,
    /// a new UID. The create is skipped while the old object is still there (finalizers).
    Recreate(Value),
}

fn to_value(object: impl Serialize) -> Value {
    match serde_json::to_value(object) {
        Ok(value) => value,
        Err(err) => panic!("a world object must serialize to JSON: {err}"),
    }
}

impl WorldStep {
    /// Creates `object` (typed, like a `k8s_openapi` Deployment, or JSON).
    ///
    /// # Panics
    /// If `object` does not serialize to JSON.
    ///
    /// ```
    /// use informer_testing::chaos::WorldStep;
    /// let step = WorldStep::create(serde_json::json!({
    ///     "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}
    /// }));
    /// # let _ = step;
    /// ```
    pub fn create(object: impl Serialize) -> Self {
        WorldStep::Create(to_value(object))
    }

    /// Sets the field at `pointer` of `object` (identified by its `apiVersion`, `kind`,
    /// namespace and name) to `value`. A `null` value removes the field (a label, an
    /// annotation, an optional field), as a JSON merge patch does; written as `null`, a
    /// label would be stored as `""`.
    ///
    /// # Panics
    /// If `object` or `value` do not serialize, or `object` lacks `apiVersion`, `kind` or
    /// a name.
    ///
    /// ```
    /// use informer_testing::chaos::WorldStep;
    /// let web = serde_json::json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}});
    /// let step = WorldStep::set(&web, "/spec/replicas", 3);
    /// # let _ = step;
    /// ```
    pub fn set(object: impl Serialize, pointer: &str, value: impl Serialize) -> Self {
        WorldStep::Set {
            target: id_of(&to_value(object)),
            pointer: pointer.to_string(),
            value: to_value(value),
        }
    }

    /// Deletes `object`.
    ///
    /// # Panics
    /// If `object` does not serialize or lacks `apiVersion`, `kind` or a name.
    ///
    /// ```
    /// use informer_testing::chaos::WorldStep;
    /// let web = serde_json::json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}});
    /// let step = WorldStep::delete(&web);
    /// # let _ = step;
    /// ```
    pub fn delete(object: impl Serialize) -> Self {
        WorldStep::Delete(id_of(&to_value(object)))
    }

    /// Deletes `object` and creates it again at once.
    ///
    /// # Panics
    /// If `object` does not serialize.
    ///
    /// ```
    /// use informer_testing::chaos::WorldStep;
    /// let web = serde_json::json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}});
    /// let step = WorldStep::recreate(&web);
    /// # let _ = step;
    /// ```
    pub fn recreate(object: impl Serialize) -> Self {
        WorldStep::Recreate(to_value(object))
    }

    /// The Rust expression that makes this step (see [`Step::code`](super::Step)).
    pub(crate) fn code(&self) -> String {
        match self {
            WorldStep::Create(object) => format!("WorldStep::create({})", json_code(object)),
            WorldStep::Set {
                target,
                pointer,
                value,
            } => format!(
                "WorldStep::set({}, {pointer:?}, {})",
                json_code(&target.as_object()),
                json_code(value)
            ),
            WorldStep::Delete(target) => {
                format!("WorldStep::delete({})", json_code(&target.as_object()))
            }
            WorldStep::Recreate(object) => format!("WorldStep::recreate({})", json_code(object)),
        }
    }

    /// The object the step touches.
    pub(crate) fn target(&self) -> Result<ObjectId, String> {
        match self {
            WorldStep::Create(object) | WorldStep::Recreate(object) => ObjectId::of(object),
            WorldStep::Set { target, .. } | WorldStep::Delete(target) => Ok(target.clone()),
        }
    }
}

fn id_of(object: &Value) -> ObjectId {
    match ObjectId::of(object) {
        Ok(id) => id,
        Err(err) => panic!("{err}"),
    }
}

/// `serde_json::json!(...)` of `value`, as Rust source: JSON is the macro's own syntax, but
/// for `\u` escapes, which Rust writes `\u{..}`.
fn json_code(value: &Value) -> String {
    let json = value.to_string();
    let mut code = String::with_capacity(json.len() + 20);
    let mut rest = json.as_str();
    while let Some(at) = rest.find("\\u") {
        // An escaped backslash before it (`\\u`) is not an escape of `u`.
        let backslashes = rest[..at].chars().rev().take_while(|c| *c == '\\').count();
        code.push_str(&rest[..at]);
        let hex = rest.get(at + 2..at + 6).unwrap_or("");
        if backslashes % 2 == 0 && hex.len() == 4 && hex.chars().all(|c| c.is_ascii_hexdigit()) {
            code.push_str(&format!("\\u{{{hex}}}"));
            rest = &rest[at + 6..];
        } else {
            code.push_str("\\u");
            rest = &rest[at + 2..];
        }
    }
    code.push_str(rest);
    format!("serde_json::json!({code})")
}

impl fmt::Display for WorldStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let target = self.target().map_or_else(|e| e, |t| t.to_string());
        match self {
            WorldStep::Create(_) => write!(f, "create {target}"),
            WorldStep::Set { pointer, value, .. } => write!(f, "set {target} {pointer} = {value}"),
            WorldStep::Delete(_) => write!(f, "delete {target}"),
            WorldStep::Recreate(_) => write!(f, "delete and re-create {target}"),
        }
    }
}

/// A mutation the generator may make: a field and the values it may take.
#[derive(Clone, Debug)]
struct Mutation {
    pointer: String,
    values: Vec<Value>,
}

/// How the world changes during a chaos test: a fixed script of [`WorldStep`]s, or steps
/// generated from a few seed objects (creates, mutations of the fields you name, deletes and
/// re-creates with the same name), interleaved with faults by the seed.
///
/// ```
/// use informer_testing::chaos::{World, WorldStep};
/// use serde_json::json;
///
/// let web = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "web"}, "data": {"size": "1"}});
/// // Generated: `web` is created first, then changed, deleted and re-created at random.
/// let generated = World::generated([web.clone()]).mutate("/data/size", ["1", "2", "3"]);
/// // Scripted: these steps in this order, faults in between.
/// let scripted = World::scripted([
///     WorldStep::create(&web),
///     WorldStep::set(&web, "/data/size", "2"),
///     WorldStep::delete(&web),
/// ]);
/// # let _ = (generated, scripted);
/// ```
#[derive(Clone, Debug)]
pub struct World {
    seeds: Vec<Value>,
    mutations: Vec<Mutation>,
    script: Option<Vec<WorldStep>>,
    deletes: bool,
    recreates: bool,
}

impl Default for World {
    fn default() -> Self {
        Self {
            seeds: Vec::new(),
            mutations: Vec::new(),
            script: None,
            deletes: true,
            recreates: true,
        }
    }
}

impl World {
    /// A world generated from seed objects (typed or JSON): each is created at the start,
    /// then the seed's schedule changes the fields named by [`mutate`](Self::mutate),
    /// deletes objects and re-creates them (deleted ones come back later, too).
    ///
    /// # Panics
    /// If an object does not serialize to JSON or lacks `apiVersion`, `kind` or a name.
    ///
    /// ```
    /// use informer_testing::chaos::World;
    /// let world = World::generated([serde_json::json!({
    ///     "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}
    /// })]);
    /// # let _ = world;
    /// ```
    pub fn generated(seeds: impl IntoIterator<Item = impl Serialize>) -> Self {
        let seeds: Vec<Value> = seeds.into_iter().map(to_value).collect();
        for seed in &seeds {
            id_of(seed);
        }
        Self {
            seeds,
            ..Self::default()
        }
    }

    /// A world that makes exactly these steps, in order (faults come in between).
    ///
    /// ```
    /// use informer_testing::chaos::{World, WorldStep};
    /// let cm = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}});
    /// let world = World::scripted([WorldStep::create(&cm), WorldStep::delete(&cm)]);
    /// # let _ = world;
    /// ```
    pub fn scripted(steps: impl IntoIterator<Item = WorldStep>) -> Self {
        Self {
            script: Some(steps.into_iter().collect()),
            ..Self::default()
        }
    }

    /// Lets the generator set the field at `pointer` (a JSON pointer such as
    /// `/spec/replicas`) of seed objects that have a value there, to one of `values`. A
    /// `null` among them removes the field (`.mutate("/metadata/labels/tenant", [json!("a"),
    /// json!(null)])` takes the label off and puts it back), as a JSON merge patch does.
    /// A pointer under `/status` is written through the status subresource (as kubelet or
    /// another controller would write it), anything else through the main resource. In a
    /// pointer, a `/` inside a key is written `~1` (and `~` is `~0`), as JSON pointers
    /// escape them: the label `example.com/enabled` is
    /// `/metadata/labels/example.com~1enabled`.
    ///
    /// # Panics
    /// If a value does not serialize to JSON.
    ///
    /// ```
    /// use informer_testing::chaos::World;
    /// use serde_json::json;
    /// # let seeds: Vec<serde_json::Value> = Vec::new();
    /// let world = World::generated(seeds)
    ///     .mutate("/spec/replicas", [1, 2, 5])
    ///     .mutate("/metadata/labels/example.com~1enabled", [json!("true"), json!(null)]);
    /// # let _ = world;
    /// ```
    pub fn mutate(
        mut self,
        pointer: &str,
        values: impl IntoIterator<Item = impl Serialize>,
    ) -> Self {
        self.mutations.push(Mutation {
            pointer: pointer.to_string(),
            values: values.into_iter().map(to_value).collect(),
        });
        self
    }

    /// Whether the generator deletes objects (default true).
    ///
    /// ```
    /// # let world = informer_testing::chaos::World::default();
    /// let world = world.deletes(false);
    /// # let _ = world;
    /// ```
    pub fn deletes(mut self, deletes: bool) -> Self {
        self.deletes = deletes;
        self
    }

    /// Whether the generator deletes and re-creates objects in one step (default true):
    /// the same name, a new UID, with no time in between for the controller to see the
    /// object gone.
    ///
    /// ```
    /// # let world = informer_testing::chaos::World::default();
    /// let world = world.recreates(false);
    /// # let _ = world;
    /// ```
    pub fn recreates(mut self, recreates: bool) -> Self {
        self.recreates = recreates;
        self
    }

    /// The scripted steps, if the world is scripted.
    pub(crate) fn script(&self) -> Option<&[WorldStep]> {
        self.script.as_deref()
    }

    /// The steps that create every seed, for the start of a generated schedule.
    pub(crate) fn initial_steps(&self) -> Vec<WorldStep> {
        self.seeds.iter().cloned().map(WorldStep::Create).collect()
    }

    /// A random step over the seeds, given which of them the schedule has created so far
    /// (updated by the step).
    pub(crate) fn random_step(&self, rng: &mut Rng, present: &mut [bool]) -> Option<WorldStep> {
        if self.seeds.is_empty() {
            return None;
        }
        let index = usize::try_from(rng.below(self.seeds.len() as u64)).unwrap_or(0);
        let seed = &self.seeds[index];
        if !present[index] {
            present[index] = true;
            return Some(WorldStep::Create(seed.clone()));
        }
        let applicable: Vec<&Mutation> = self
            .mutations
            .iter()
            .filter(|m| seed.pointer(&m.pointer).is_some() && !m.values.is_empty())
            .collect();
        let roll = rng.below(100);
        if roll < 15 && self.deletes {
            present[index] = false;
            return Some(WorldStep::Delete(id_of(seed)));
        }
        if roll < 30 && self.recreates {
            return Some(WorldStep::Recreate(seed.clone()));
        }
        if applicable.is_empty() {
            return Some(if self.recreates {
                WorldStep::Recreate(seed.clone())
            } else {
                WorldStep::Create(seed.clone())
            });
        }
        let mutation = rng.pick(&applicable);
        Some(WorldStep::Set {
            target: id_of(seed),
            pointer: mutation.pointer.clone(),
            value: rng.pick(&mutation.values).clone(),
        })
    }
}

/// Sets the value at a JSON pointer, creating missing objects on the way (array indexes
/// must exist); `null` removes a map's key instead, as a JSON merge patch does. Returns
/// false if the pointer cannot be followed.
pub(crate) fn set_pointer(target: &mut Value, pointer: &str, value: Value) -> bool {
    if pointer.is_empty() {
        *target = value;
        return true;
    }
    let Some(rest) = pointer.strip_prefix('/') else {
        return false;
    };
    let tokens: Vec<String> = rest
        .split('/')
        .map(|t| t.replace("~1", "/").replace("~0", "~"))
        .collect();
    let mut current = target;
    for (i, token) in tokens.iter().enumerate() {
        let last = i + 1 == tokens.len();
        if current.is_null() {
            *current = Value::Object(Map::new());
        }
        current = match current {
            Value::Object(map) => {
                if last {
                    if value.is_null() {
                        map.remove(token);
                    } else {
                        map.insert(token.clone(), value);
                    }
                    return true;
                }
                map.entry(token.clone()).or_insert(Value::Null)
            }
            Value::Array(items) => {
                let Some(item) = token.parse::<usize>().ok().and_then(|i| items.get_mut(i)) else {
                    return false;
                };
                if last {
                    *item = value;
                    return true;
                }
                item
            }
            _ => return false,
        };
    }
    false
}
