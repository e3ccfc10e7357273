//! [`Cluster`]: the server's state at one revision, as invariants and convergence checks
//! read it.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use serde::de::DeserializeOwned;

use super::outside::Outside;
use serde_json::Value;

/// The object as the server also serves it through a second API over the same storage, as
/// kube-apiserver does: a core Event as an `events.k8s.io/v1` Event, an `autoscaling/v2`
/// HorizontalPodAutoscaler as an `autoscaling/v1` one. Checks read either form.
fn served_view(object: &Value) -> Option<Value> {
    let api_version = object.get("apiVersion")?.as_str()?;
    let kind = object.get("kind")?.as_str()?;
    match (api_version, kind) {
        ("v1", "Event") => Some(crate::apiserver::events::from_core(object)),
        ("autoscaling/v2", "HorizontalPodAutoscaler") => {
            Some(crate::apiserver::hpa_v1::from_v2(object))
        }
        _ => None,
    }
}

/// A type as `(apiVersion, kind)`.
type TypeKey = (String, String);
/// An object's place as `(namespace, name)` (`""` for cluster-scoped objects).
type NameKey = (String, String);

/// The state of the in-process API server at one revision: every object of every type, as
/// the invariants and the convergence check of a [`Chaos`](super::Chaos) test see it. The
/// harness keeps it in step with every change the server commits, so an invariant runs on
/// each committed state in turn, intermediate ones included.
///
/// Types the server serves through two APIs over one storage read through both: Events as
/// `v1` and `events.k8s.io/v1` (what `EventRecorder` writes), HorizontalPodAutoscalers as
/// `autoscaling/v2` and `autoscaling/v1`.
///
/// Typed reads ([`list`](Self::list), [`get`](Self::get), [`controlled_by`](Self::controlled_by))
/// decode objects with serde on each call; an object that does not decode into the type
/// asked for panics with its name, which the harness reports as the check failing.
///
/// ```
/// use informer_testing::chaos::Cluster;
/// use k8s_openapi::api::core::v1::ConfigMap;
///
/// let cluster = Cluster::from_objects([serde_json::json!({
///     "apiVersion": "v1", "kind": "ConfigMap",
///     "metadata": {"name": "settings", "namespace": "default", "uid": "u1"},
/// })]);
/// assert_eq!(cluster.list::<ConfigMap>().len(), 1);
/// assert!(cluster.get::<ConfigMap>(Some("default"), "settings").is_some());
/// ```
#[derive(Clone, Default)]
pub struct Cluster {
    revision: u64,
    objects: BTreeMap<TypeKey, BTreeMap<NameKey, Arc<Value>>>,
    /// The run's state outside the cluster.
    outside: Arc<Outside>,
}

impl fmt::Debug for Cluster {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let counts: Vec<String> = self
            .objects
            .iter()
            .map(|((_, kind), objects)| format!("{kind}: {}", objects.len()))
            .collect();
        f.debug_struct("Cluster")
            .field("revision", &self.revision)
            .field("objects", &counts)
            .finish()
    }
}

fn text<'a>(object: &'a Value, pointer: &str) -> &'a str {
    object
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or("")
}

fn type_key(object: &Value) -> TypeKey {
    (
        text(object, "/apiVersion").to_string(),
        text(object, "/kind").to_string(),
    )
}

fn name_key(object: &Value) -> NameKey {
    (
        text(object, "/metadata/namespace").to_string(),
        text(object, "/metadata/name").to_string(),
    )
}

fn decode<K: DeserializeOwned>(object: &Value) -> K {
    match K::deserialize(object) {
        Ok(decoded) => decoded,
        Err(err) => panic!(
            "{} {}/{} does not decode as {}: {err}",
            text(object, "/kind"),
            text(object, "/metadata/namespace"),
            text(object, "/metadata/name"),
            std::any::type_name::<K>(),
        ),
    }
}

impl Cluster {
    /// A state holding `objects` (each with `apiVersion`, `kind` and `metadata.name`), for
    /// testing checks by hand.
    ///
    /// ```
    /// let cluster = informer_testing::chaos::Cluster::from_objects([]);
    /// assert_eq!(cluster.revision(), 0);
    /// ```
    pub fn from_objects(objects: impl IntoIterator<Item = Value>) -> Self {
        let mut cluster = Self::default();
        for object in objects {
            cluster.put(Arc::new(object));
        }
        cluster
    }

    /// The run's value of `T`, state the controller keeps outside the cluster, as
    /// [`outside`](super::outside) handed it to the controller (made with `T::default()` if
    /// the controller has not asked for it yet). It is the live value, not a copy at this
    /// state's revision: read it in the [`converges`](super::Chaos::converges) check, where
    /// the world is quiet. A state made with [`from_objects`](Self::from_objects) has its
    /// own, empty at first.
    ///
    /// It is also where an [`invariant`](super::Chaos::invariant) keeps memory across the
    /// states of one run (each Pod's last state before it went, say, to check that it was
    /// not deleted too early): a value the check's closure captures is shared by every run,
    /// and runs go on at once.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// let cluster = informer_testing::chaos::Cluster::from_objects([]);
    /// cluster.outside::<AtomicUsize>().fetch_add(1, Ordering::Relaxed);
    /// assert_eq!(cluster.outside::<AtomicUsize>().load(Ordering::Relaxed), 1);
    /// ```
    pub fn outside<T: Default + Send + Sync + 'static>(&self) -> Arc<T> {
        self.outside.get::<T>()
    }

    /// Shares `outside` with the run's controllers.
    pub(crate) fn set_outside(&mut self, outside: Arc<Outside>) {
        self.outside = outside;
    }

    /// The revision (resource version) this state is at.
    ///
    /// ```
    /// # let cluster = informer_testing::chaos::Cluster::default();
    /// let revision = cluster.revision();
    /// # let _ = revision;
    /// ```
    pub fn revision(&self) -> u64 {
        self.revision
    }

    pub(crate) fn set_revision(&mut self, revision: u64) {
        self.revision = revision;
    }

    pub(crate) fn put(&mut self, object: Arc<Value>) {
        if let Some(view) = served_view(&object) {
            self.insert(Arc::new(view));
        }
        self.insert(object);
    }

    fn insert(&mut self, object: Arc<Value>) {
        self.objects
            .entry(type_key(&object))
            .or_default()
            .insert(name_key(&object), object);
    }

    pub(crate) fn remove(&mut self, object: &Value) {
        if let Some(view) = served_view(object) {
            self.delete(&view);
        }
        self.delete(object);
    }

    fn delete(&mut self, object: &Value) {
        let key = type_key(object);
        if let Some(objects) = self.objects.get_mut(&key) {
            objects.remove(&name_key(object));
            if objects.is_empty() {
                self.objects.remove(&key);
            }
        }
    }

    /// Every object of a type, by `apiVersion` and `kind`, ordered by namespace and name.
    ///
    /// ```
    /// # let cluster = informer_testing::chaos::Cluster::default();
    /// let deployments = cluster.list_json("apps/v1", "Deployment").count();
    /// # let _ = deployments;
    /// ```
    pub fn list_json<'a>(
        &'a self,
        api_version: &str,
        kind: &str,
    ) -> impl Iterator<Item = &'a Value> + 'a {
        self.objects
            .get(&(api_version.to_string(), kind.to_string()))
            .into_iter()
            .flat_map(|objects| objects.values().map(|o| o.as_ref()))
    }

    /// One object by `apiVersion`, `kind`, namespace (`None` for cluster-scoped types) and
    /// name.
    ///
    /// ```
    /// # let cluster = informer_testing::chaos::Cluster::default();
    /// assert!(cluster.get_json("v1", "ConfigMap", Some("default"), "nope").is_none());
    /// ```
    pub fn get_json(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Option<&Value> {
        self.objects
            .get(&(api_version.to_string(), kind.to_string()))?
            .get(&(namespace.unwrap_or("").to_string(), name.to_string()))
            .map(|o| o.as_ref())
    }

    /// Every object of type `K`, decoded, ordered by namespace and name.
    ///
    /// # Panics
    /// If an object does not decode as `K`.
    ///
    /// ```
    /// # let cluster = informer_testing::chaos::Cluster::default();
    /// use k8s_openapi::api::apps::v1::Deployment;
    /// for deployment in cluster.list::<Deployment>() {
    ///     let _ = deployment.metadata.name;
    /// }
    /// ```
    pub fn list<K>(&self) -> Vec<K>
    where
        K: kube::Resource<DynamicType = ()> + DeserializeOwned,
    {
        self.list_json(&K::api_version(&()), &K::kind(&()))
            .map(decode)
            .collect()
    }

    /// One object of type `K` by namespace (`None` for cluster-scoped types) and name.
    ///
    /// # Panics
    /// If the object does not decode as `K`.
    ///
    /// ```
    /// # let cluster = informer_testing::chaos::Cluster::default();
    /// use k8s_openapi::api::apps::v1::Deployment;
    /// let web = cluster.get::<Deployment>(Some("default"), "web");
    /// # let _ = web;
    /// ```
    pub fn get<K>(&self, namespace: Option<&str>, name: &str) -> Option<K>
    where
        K: kube::Resource<DynamicType = ()> + DeserializeOwned,
    {
        self.get_json(&K::api_version(&()), &K::kind(&()), namespace, name)
            .map(decode)
    }

    /// The objects of type `K` whose controller `ownerReference` (the one with
    /// `controller: true`) names `owner_uid`, ordered by namespace and name.
    ///
    /// # Panics
    /// If an object does not decode as `K`.
    ///
    /// ```
    /// # let cluster = informer_testing::chaos::Cluster::default();
    /// use k8s_openapi::api::apps::v1::ReplicaSet;
    /// assert!(cluster.controlled_by::<ReplicaSet>("some-uid").is_empty());
    /// ```
    pub fn controlled_by<K>(&self, owner_uid: &str) -> Vec<K>
    where
        K: kube::Resource<DynamicType = ()> + DeserializeOwned,
    {
        self.list_json(&K::api_version(&()), &K::kind(&()))
            .filter(|o| controller_uid(o) == Some(owner_uid))
            .map(decode)
            .collect()
    }

    /// Whether an object with this UID exists (of any type).
    ///
    /// ```
    /// # let cluster = informer_testing::chaos::Cluster::default();
    /// assert!(!cluster.has_uid("some-uid"));
    /// ```
    pub fn has_uid(&self, uid: &str) -> bool {
        self.objects
            .values()
            .flat_map(BTreeMap::values)
            .any(|o| text(o, "/metadata/uid") == uid)
    }
}

/// The UID of an object's controller (its `ownerReference` with `controller: true`).
pub(crate) fn controller_uid(object: &Value) -> Option<&str> {
    object
        .pointer("/metadata/ownerReferences")?
        .as_array()?
        .iter()
        .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))?
        .get("uid")?
        .as_str()
}
