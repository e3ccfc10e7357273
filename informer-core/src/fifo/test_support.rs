//! A tiny known-objects store and a cheap test object for the FIFOs' unit tests.

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::Mutex;

use super::{Delta, Fifo};
use crate::error::{FifoError, KeyError, StoreError};
use crate::handler::Deleted;
use crate::key::ObjectKey;
use crate::store::{ReplaceDiff, Store, StoreOp};

/// A test object: a name (its key, in namespace `ns`) and a version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Obj {
    pub name: String,
    pub v: u32,
}

/// `Arc<Obj>` named `name` at version `v`.
pub(crate) fn obj(name: &str, v: u32) -> Arc<Obj> {
    Arc::new(Obj {
        name: name.to_owned(),
        v,
    })
}

/// The key function of [`Obj`]: `ns/<name>`; an empty name has no key.
pub(crate) fn obj_key(o: &Obj) -> Result<ObjectKey, KeyError> {
    if o.name.is_empty() {
        Err(KeyError::MissingName { kind: "Obj" })
    } else {
        Ok(ObjectKey::new(Some("ns"), &o.name))
    }
}

/// A one-line description of a delta, for readable assertions: `Added(a@1)`,
/// `Deleted(a@1)`, `Gone(a, a@1)` (a tombstone), `ReplacedAll[a@1,b@2]@rv`, `Bookmark(rv)`.
pub(crate) fn show(delta: &Delta<Obj>) -> String {
    let o = |o: &Arc<Obj>| format!("{}@{}", o.name, o.v);
    match delta {
        Delta::Added(x) => format!("Added({})", o(x)),
        Delta::Updated(x) => format!("Updated({})", o(x)),
        Delta::Replaced(x) => format!("Replaced({})", o(x)),
        Delta::Sync(x) => format!("Sync({})", o(x)),
        Delta::Deleted(Deleted::Object(x)) => format!("Deleted({})", o(x)),
        Delta::Deleted(Deleted::FinalStateUnknown { key, last_known }) => format!(
            "Gone({}, {})",
            key.name(),
            last_known.as_ref().map_or("-".to_owned(), o)
        ),
        Delta::ReplacedAll {
            objects,
            resource_version,
        } => format!(
            "ReplacedAll[{}]@{resource_version}",
            objects.iter().map(o).collect::<Vec<_>>().join(",")
        ),
        Delta::Bookmark { resource_version } => format!("Bookmark({resource_version})"),
        Delta::ListPart(objects) => format!(
            "ListPart[{}]",
            objects.iter().map(o).collect::<Vec<_>>().join(",")
        ),
        Delta::ListEnd {
            listed,
            resource_version,
        } => {
            let mut names: Vec<&str> = listed.iter().map(|k| k.name()).collect();
            names.sort_unstable();
            format!("ListEnd[{}]@{resource_version}", names.join(","))
        }
    }
}

/// Pops one batch if one is ready, without waiting: `None` if `pop` would wait.
pub(crate) fn try_pop(fifo: &dyn Fifo<Obj>) -> Option<Result<Vec<Delta<Obj>>, FifoError>> {
    use futures::FutureExt;
    let mut out = None;
    let result = fifo.pop(&mut |batch| out = Some(batch)).now_or_never()?;
    Some(result.map(|()| out.expect("process is called on success")))
}

/// Pops one ready batch and describes it with [`show_all`]; panics if none is ready.
pub(crate) fn pop_now(fifo: &dyn Fifo<Obj>) -> Vec<String> {
    let batch = try_pop(fifo)
        .expect("a batch is ready")
        .expect("the FIFO is open");
    show_all(&batch)
}

/// Pops until the FIFO is empty; every batch described with [`show_all`].
pub(crate) fn drain(fifo: &dyn Fifo<Obj>) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    while !fifo.is_empty() {
        out.push(pop_now(fifo));
    }
    out
}

/// [`show`] for every delta of a batch.
pub(crate) fn show_all(batch: &[Delta<Obj>]) -> Vec<String> {
    batch.iter().map(show).collect()
}

/// A known-objects store over a mutex-guarded ordered map (so `list_keys` is sorted and
/// tests are deterministic).
pub(crate) struct MapStore {
    map: Mutex<BTreeMap<ObjectKey, Arc<Obj>>>,
    rv: Mutex<Option<String>>,
}

impl MapStore {
    pub(crate) fn with(objs: &[Arc<Obj>]) -> Arc<Self> {
        let map = objs
            .iter()
            .map(|o| (obj_key(o).expect("test object has a key"), o.clone()))
            .collect();
        Arc::new(Self {
            map: Mutex::new(map),
            rv: Mutex::new(None),
        })
    }
}

impl Store<Obj> for MapStore {
    fn add(&self, obj: Arc<Obj>) -> Result<Option<Arc<Obj>>, StoreError> {
        let key = obj_key(&obj)?;
        Ok(self.map.lock().insert(key, obj))
    }
    fn key_of(&self, obj: &Obj) -> Result<ObjectKey, KeyError> {
        obj_key(obj)
    }
    fn delete(&self, key: &ObjectKey) -> Option<Arc<Obj>> {
        self.map.lock().remove(key)
    }
    fn get(&self, key: &ObjectKey) -> Option<Arc<Obj>> {
        self.map.lock().get(key).cloned()
    }
    fn list(&self) -> Vec<Arc<Obj>> {
        self.map.lock().values().cloned().collect()
    }
    fn list_keys(&self) -> Vec<ObjectKey> {
        self.map.lock().keys().cloned().collect()
    }
    fn len(&self) -> usize {
        self.map.lock().len()
    }
    fn replace(
        &self,
        objects: Vec<Arc<Obj>>,
        resource_version: &str,
    ) -> Result<ReplaceDiff<Obj>, StoreError> {
        let mut new = BTreeMap::new();
        for o in objects {
            new.insert(obj_key(&o)?, o);
        }
        let mut map = self.map.lock();
        let mut diff = ReplaceDiff::default();
        for (k, o) in map.iter() {
            if !new.contains_key(k) {
                diff.deleted.push((k.clone(), o.clone()));
            }
        }
        for (k, o) in &new {
            match map.get(k) {
                Some(old) => diff.updated.push((old.clone(), o.clone())),
                None => diff.added.push(o.clone()),
            }
        }
        *map = new;
        *self.rv.lock() = Some(resource_version.to_owned());
        Ok(diff)
    }
    fn resource_version(&self) -> Option<String> {
        self.rv.lock().clone()
    }
    fn set_resource_version(&self, resource_version: &str) {
        *self.rv.lock() = Some(resource_version.to_owned());
    }
    fn apply(&self, batch: Vec<StoreOp<Obj>>) -> Result<Vec<Option<Arc<Obj>>>, StoreError> {
        let mut map = self.map.lock();
        let mut out = Vec::with_capacity(batch.len());
        for op in batch {
            out.push(match op {
                StoreOp::Upsert(o) => map.insert(obj_key(&o)?, o),
                StoreOp::Delete(k) => map.remove(&k),
            });
        }
        Ok(out)
    }
}
