//! [`check_store`]: a store of your own against [`ThreadSafeStore`], write by write.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::Arc;

use kube_core::Resource;

use crate::error::{IndexError, StoreError};
use crate::key::ObjectKey;
use crate::store::{Indexer, Indexers, ReplaceDiff, Store, StoreOp, ThreadSafeStore, index_fn};

/// The seed [`check_store`] uses.
const SEED: u64 = 0x5eed_0fc0_ffee;
/// Writes per run.
const STEPS: usize = 1_500;

const NAMESPACES: [Option<&str>; 3] = [None, Some("a"), Some("b")];
const NAMES: usize = 6;
const TEAM_INDEX: &str = "conformance/team";
const TAGS_INDEX: &str = "conformance/tags";
/// Registered half-way, with objects already stored.
const LATE_INDEX: &str = "conformance/late";
const TEAMS: [&str; 3] = ["red", "blue", "green"];
const TAGS: [&str; 4] = ["x", "y", "z", "x.y"];

/// Checks that the stores `make` returns behave as [`ThreadSafeStore`] does for everything
/// the [`Store`] and [`Indexer`] traits promise, with a fixed seed; see the
/// [module](super). Panics at the first difference, saying at which step, after which write,
/// and what differed.
///
/// `K` is any resource type whose `Default` value can be given a name, a namespace, labels
/// and a resource version (k8s-openapi's types, views). The store's keys must be those of
/// [`resource_key`](crate::resource_key), as the library's informers require.
///
/// ```
/// use informer_core::ThreadSafeStore;
/// use informer_core::conformance::check_store;
/// use k8s_openapi::api::core::v1::Pod;
///
/// check_store(|| ThreadSafeStore::<Pod>::new());
/// ```
///
/// # Panics
/// When the store differs from [`ThreadSafeStore`] (a failed check).
pub fn check_store<K, S>(make: impl Fn() -> S)
where
    K: Resource + Default + Send + Sync + 'static,
    S: Indexer<K>,
{
    check_store_with_seed(make, SEED);
}

/// [`check_store`] with another seed (a different sequence of writes), for a test that runs
/// several.
///
/// # Panics
/// When the store differs from [`ThreadSafeStore`] (a failed check).
pub fn check_store_with_seed<K, S>(make: impl Fn() -> S, seed: u64)
where
    K: Resource + Default + Send + Sync + 'static,
    S: Indexer<K>,
{
    let subject = make();
    let model = ThreadSafeStore::<K>::new();
    let mut run = Run {
        rng: Rng(seed | 1),
        version: 0,
        seed,
        step: 0,
        write: String::new(),
    };
    run.write = "add_indexers(team, tags) on an empty store".into();
    run.same(
        "add_indexers",
        subject.add_indexers(indexers::<K>(&[TEAM_INDEX, TAGS_INDEX])),
        model.add_indexers(indexers::<K>(&[TEAM_INDEX, TAGS_INDEX])),
    );
    let mut indexes = vec![TEAM_INDEX, TAGS_INDEX];
    run.observe(&subject, &model, &indexes);
    for step in 1..=STEPS {
        run.step = step;
        if step == STEPS / 2 {
            run.write = format!(
                "add_indexers({LATE_INDEX}) with {} objects stored",
                model.len()
            );
            run.same(
                "add_indexers",
                subject.add_indexers(indexers::<K>(&[LATE_INDEX])),
                model.add_indexers(indexers::<K>(&[LATE_INDEX])),
            );
            indexes.push(LATE_INDEX);
        } else {
            run.write_once(&subject, &model);
        }
        run.observe(&subject, &model, &indexes);
    }
    run.step += 1;
    run.write = format!("add_indexers({TEAM_INDEX}, conformance/new): a name taken");
    let conflict = subject.add_indexers(indexers::<K>(&[TEAM_INDEX, "conformance/new"]));
    run.check(
        "add_indexers of a registered name",
        &Err::<(), _>(IndexError::Conflict(TEAM_INDEX.into())),
        &conflict,
    );
    run.check(
        "an index named in a refused add_indexers",
        &false,
        &subject.index_names().iter().any(|n| n == "conformance/new"),
    );
    run.observe(&subject, &model, &indexes);
}

/// The index functions of the check, by name.
fn indexers<K: Resource>(names: &[&str]) -> Indexers<K> {
    names
        .iter()
        .map(|&name| {
            let f = match name {
                TEAM_INDEX => index_fn(|o: &K| label(o, "team").into_iter().collect()),
                // Several values, a repeated one, or none.
                TAGS_INDEX => index_fn(|o: &K| {
                    label(o, "tags")
                        .map(|t| t.split('.').map(str::to_owned).collect())
                        .unwrap_or_default()
                }),
                _ => index_fn(|o: &K| {
                    let rv = o.meta().resource_version.clone().unwrap_or_default();
                    vec![format!("parity-{}", rv.len() % 2)]
                }),
            };
            (name.to_owned(), f)
        })
        .collect()
}

fn label<K: Resource>(o: &K, key: &str) -> Option<String> {
    o.meta().labels.as_ref()?.get(key).cloned()
}

/// A xorshift generator: the same seed, the same writes.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// What a reader sees of an object: its key and resource version.
type Seen = (String, String);

/// Its key as [`resource_key`](crate::resource_key) makes it (empty for an object without
/// a name) and its resource version.
fn seen<K: Resource>(o: &Arc<K>) -> Seen {
    let key = ObjectKey::from_resource(&**o)
        .map(|k| k.to_string())
        .unwrap_or_default();
    (key, o.meta().resource_version.clone().unwrap_or_default())
}

fn sorted<T: Ord>(mut v: Vec<T>) -> Vec<T> {
    v.sort();
    v
}

/// An error as the check compares it: its kind, not its words.
fn kind_of(e: &StoreError) -> &'static str {
    match e {
        StoreError::Key(_) => "Key",
        StoreError::Index(_) => "Index",
    }
}

type Outcome<T> = Result<T, &'static str>;

fn outcome<T, U>(r: Result<T, StoreError>, f: impl FnOnce(T) -> U) -> Outcome<U> {
    r.map(f).map_err(|e| kind_of(&e))
}

struct Run {
    rng: Rng,
    version: u64,
    seed: u64,
    step: usize,
    write: String,
}

impl Run {
    /// A new object of a random key, with a fresh resource version (or no name, rarely).
    fn object<K: Resource + Default>(&mut self) -> Arc<K> {
        let mut o = K::default();
        self.version += 1;
        let meta = o.meta_mut();
        meta.namespace = NAMESPACES[self.rng.below(NAMESPACES.len())].map(str::to_owned);
        meta.name = if self.rng.below(40) == 0 {
            None
        } else {
            Some(format!("n{}", self.rng.below(NAMES)))
        };
        meta.resource_version = Some(format!("v{}", self.version));
        let mut labels = BTreeMap::new();
        if self.rng.below(4) != 0 {
            labels.insert("team".into(), TEAMS[self.rng.below(TEAMS.len())].into());
        }
        if self.rng.below(2) == 0 {
            labels.insert("tags".into(), TAGS[self.rng.below(TAGS.len())].into());
        }
        meta.labels = Some(labels);
        Arc::new(o)
    }

    fn key(&mut self) -> ObjectKey {
        let ns = NAMESPACES[self.rng.below(NAMESPACES.len())];
        ObjectKey::new(ns, &format!("n{}", self.rng.below(NAMES)))
    }

    /// One random write, to both stores, with their results compared.
    fn write_once<K, S>(&mut self, subject: &S, model: &ThreadSafeStore<K>)
    where
        K: Resource + Default + Send + Sync + 'static,
        S: Indexer<K>,
    {
        match self.rng.below(9) {
            0 | 1 => {
                let o = self.object::<K>();
                self.write = format!("add({:?})", seen(&o));
                let got = outcome(subject.add(o.clone()), |old| old.as_ref().map(seen));
                let want = outcome(model.add(o), |old| old.as_ref().map(seen));
                self.same("add", got, want);
            }
            2 => {
                let o = self.object::<K>();
                self.write = format!("update({:?})", seen(&o));
                let got = outcome(subject.update(o.clone()), |old| old.as_ref().map(seen));
                let want = outcome(model.update(o), |old| old.as_ref().map(seen));
                self.same("update", got, want);
            }
            3 => {
                let o = self.object::<K>();
                let Ok(key) = model.key_of(&o) else {
                    return;
                };
                self.write = format!("update_with_key({key}, {:?})", seen(&o));
                let got = outcome(subject.update_with_key(key.clone(), o.clone()), |old| {
                    old.as_ref().map(seen)
                });
                let want = outcome(model.update_with_key(key, o), |old| old.as_ref().map(seen));
                self.same("update_with_key", got, want);
            }
            4 | 5 => {
                let key = self.key();
                self.write = format!("delete({key})");
                let got = subject.delete(&key).as_ref().map(seen);
                let want = model.delete(&key).as_ref().map(seen);
                self.same("delete", got, want);
            }
            6 => {
                let ops: Vec<(bool, Arc<K>, ObjectKey)> = (0..=self.rng.below(5))
                    .map(|_| (self.rng.below(3) == 0, self.object::<K>(), self.key()))
                    .collect();
                let batch = |ops: &[(bool, Arc<K>, ObjectKey)]| -> Vec<StoreOp<K>> {
                    ops.iter()
                        .map(|(delete, o, key)| match delete {
                            true => StoreOp::Delete(key.clone()),
                            false => StoreOp::Upsert(o.clone()),
                        })
                        .collect()
                };
                let shown: Vec<String> = ops
                    .iter()
                    .map(|(delete, o, key)| match delete {
                        true => format!("Delete({key})"),
                        false => format!("Upsert({:?})", seen(o)),
                    })
                    .collect();
                self.write = format!("apply([{}])", shown.join(", "));
                let olds = |r: Vec<Option<Arc<K>>>| -> Vec<Option<Seen>> {
                    r.iter().map(|o| o.as_ref().map(seen)).collect()
                };
                let got = outcome(subject.apply(batch(&ops)), olds);
                let want = outcome(model.apply(batch(&ops)), olds);
                self.same("apply", got, want);
            }
            7 => {
                let objects: Vec<Arc<K>> =
                    (0..self.rng.below(8)).map(|_| self.object::<K>()).collect();
                self.version += 1;
                let rv = format!("list-{}", self.version);
                self.write = format!(
                    "replace({:?}, {rv:?})",
                    objects.iter().map(seen).collect::<Vec<_>>()
                );
                let diff = |d: ReplaceDiff<K>| {
                    (
                        sorted(d.added.iter().map(seen).collect::<Vec<_>>()),
                        sorted(
                            d.updated
                                .iter()
                                .map(|(old, new)| (seen(old), seen(new)))
                                .collect::<Vec<_>>(),
                        ),
                        sorted(
                            d.deleted
                                .iter()
                                .map(|(key, last)| (key.to_string(), seen(last)))
                                .collect::<Vec<_>>(),
                        ),
                    )
                };
                let got = outcome(subject.replace(objects.clone(), &rv), diff);
                let want = outcome(model.replace(objects, &rv), diff);
                self.same("replace (added, updated, deleted)", got, want);
            }
            _ => {
                self.version += 1;
                let rv = format!("rv-{}", self.version);
                self.write = format!("set_resource_version({rv:?})");
                subject.set_resource_version(&rv);
                model.set_resource_version(&rv);
            }
        }
    }

    /// Everything a reader sees, compared.
    fn observe<K, S>(&self, subject: &S, model: &ThreadSafeStore<K>, indexes: &[&str])
    where
        K: Resource + Default + Send + Sync + 'static,
        S: Indexer<K>,
    {
        let list = |s: &dyn Store<K>| sorted(s.list().iter().map(seen).collect::<Vec<_>>());
        self.check("list", &list(model), &list(subject));
        let keys = |s: &dyn Store<K>| {
            sorted(
                s.list_keys()
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>(),
            )
        };
        self.check("list_keys", &keys(model), &keys(subject));
        self.check("len", &model.len(), &subject.len());
        self.check(
            "resource_version",
            &model.resource_version(),
            &subject.resource_version(),
        );
        for ns in NAMESPACES {
            for n in 0..NAMES {
                let key = ObjectKey::new(ns, &format!("n{n}"));
                self.check(
                    &format!("get({key})"),
                    &model.get(&key).as_ref().map(seen),
                    &subject.get(&key).as_ref().map(seen),
                );
            }
        }
        let names = subject.index_names();
        for index in indexes {
            self.check(
                &format!("index_names holds {index}"),
                &true,
                &names.iter().any(|n| n == index),
            );
            let values = |s: &dyn Indexer<K>| s.list_index_values(index).map(sorted);
            let want = values(model);
            self.check(
                &format!("list_index_values({index})"),
                &want,
                &values(subject),
            );
            let mut probes = want.unwrap_or_default();
            probes.push("no-such-value".into());
            for value in &probes {
                let by = |s: &dyn Indexer<K>| {
                    s.by_index(index, value)
                        .map(|v| sorted(v.iter().map(seen).collect::<Vec<_>>()))
                };
                self.check(
                    &format!("by_index({index}, {value})"),
                    &by(model),
                    &by(subject),
                );
                let keys = |s: &dyn Indexer<K>| {
                    s.index_keys(index, value)
                        .map(|v| sorted(v.iter().map(ToString::to_string).collect::<Vec<_>>()))
                };
                self.check(
                    &format!("index_keys({index}, {value})"),
                    &keys(model),
                    &keys(subject),
                );
            }
            for o in model.list().iter().take(3) {
                let shared = |s: &dyn Indexer<K>| {
                    s.index(index, o)
                        .map(|v| sorted(v.iter().map(seen).collect::<Vec<_>>()))
                };
                self.check(
                    &format!("index({index}, {:?})", seen(o)),
                    &shared(model),
                    &shared(subject),
                );
            }
        }
        let unknown = subject
            .by_index("conformance/unregistered", "x")
            .map(|v| v.len());
        self.check(
            "by_index of an unregistered index",
            &Err(IndexError::UnknownIndex("conformance/unregistered".into())),
            &unknown,
        );
    }

    fn same<T: PartialEq + Debug>(&self, what: &str, got: T, want: T) {
        self.check(&format!("the result of {what}"), &want, &got);
    }

    fn check<T: PartialEq + Debug>(&self, what: &str, want: &T, got: &T) {
        assert!(
            want == got,
            "store conformance (seed {:#x}), step {} after {}:\n  {what} differs from ThreadSafeStore's\n  expected: {want:?}\n  got:      {got:?}",
            self.seed,
            self.step,
            self.write
        );
    }
}
