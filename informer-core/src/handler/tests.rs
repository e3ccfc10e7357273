use super::*;
use k8s_openapi::api::core::v1::ConfigMap;
use std::sync::Mutex;

#[test]
fn handler_is_object_safe() {
    fn _obj_safe(_: Arc<dyn Handler<String>>) {}
    let h: Arc<dyn Handler<String>> = Arc::new(HandlerFns::<String>::new());
    _obj_safe(h);
}

#[test]
fn closure_handler_receives_every_kind_of_notification() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let h = move |n: &Notification<String>| {
        s.lock().unwrap().push(match n {
            Notification::Add { .. } => "add",
            Notification::Update { .. } => "update",
            Notification::Delete(Deleted::Object(_)) => "delete",
            Notification::Delete(Deleted::FinalStateUnknown { .. }) => "unknown",
        })
    };
    let o = Arc::new("x".to_string());
    h.on_add(&o, false);
    h.on_update(&o, &o);
    h.on_delete(&Deleted::Object(o.clone()));
    h.on_delete(&Deleted::FinalStateUnknown {
        key: ObjectKey::cluster("x"),
        last_known: Some(o),
    });
    assert_eq!(
        *seen.lock().unwrap(),
        ["add", "update", "delete", "unknown"]
    );
}

#[test]
fn handler_fns_route_each_kind_of_change_to_its_closure_with_its_arguments() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (a, u, d) = (seen.clone(), seen.clone(), seen.clone());
    let handler = HandlerFns::<String>::new()
        .on_add(move |obj, initial| a.lock().unwrap().push(format!("add {obj} {initial}")))
        .on_update(move |old, new| u.lock().unwrap().push(format!("update {old}>{new}")))
        .on_delete(move |deleted| {
            d.lock().unwrap().push(match deleted {
                Deleted::Object(obj) => format!("delete {obj}"),
                Deleted::FinalStateUnknown { key, last_known } => {
                    format!("unknown {key} {last_known:?}")
                }
            })
        });
    let (x, y) = (Arc::new("x".to_owned()), Arc::new("y".to_owned()));
    handler.notify(&Notification::Add {
        object: x.clone(),
        is_initial_list: true,
    });
    Handler::on_add(&handler, &y, false);
    handler.notify(&Notification::Update {
        old: x.clone(),
        new: y.clone(),
    });
    Handler::on_delete(&handler, &Deleted::Object(y));
    handler.notify(&Notification::Delete(Deleted::FinalStateUnknown {
        key: ObjectKey::cluster("x"),
        last_known: Some(x),
    }));
    assert_eq!(
        *seen.lock().unwrap(),
        [
            "add x true",
            "add y false",
            "update x>y",
            "delete y",
            "unknown x Some(\"x\")"
        ]
    );
    // Missing closures ignore the change.
    let empty = HandlerFns::<String>::new();
    Handler::on_add(&empty, &Arc::new("z".to_owned()), true);
    empty.flush();
}

#[test]
fn final_state_unknown_exposes_last_known_object() {
    let d = Deleted::FinalStateUnknown {
        key: ObjectKey::cluster("x"),
        last_known: Some(Arc::new(1u8)),
    };
    assert!(!d.is_observed());
    assert_eq!(d.object().map(|o| **o), Some(1));
}

fn pod(ns: &str, name: &str) -> Arc<k8s_openapi::api::core::v1::Pod> {
    let mut pod = k8s_openapi::api::core::v1::Pod::default();
    pod.metadata.namespace = Some(ns.into());
    pod.metadata.name = Some(name.into());
    Arc::new(pod)
}

#[tokio::test]
async fn enqueue_keys_queues_the_key_of_every_change_in_order_once_flushed() {
    use crate::queue::WorkQueue;
    let queue = Arc::new(WorkQueue::<ObjectKey>::new());
    let handler = EnqueueKeys::new(queue.clone());
    let (a, b, c) = (pod("ns", "a"), pod("ns", "b"), pod("other", "c"));
    handler.on_add(&a, true);
    handler.on_update(&b, &b);
    handler.on_delete(&Deleted::Object(c));
    handler.on_delete(&Deleted::FinalStateUnknown {
        key: ObjectKey::new(Some("ns"), "gone"),
        last_known: None,
    });
    handler.on_update(&a, &a);
    assert_eq!(queue.len(), 0);
    handler.flush();
    let mut keys = Vec::new();
    while !queue.is_empty() {
        let key = queue.get().await.unwrap();
        keys.push(key.to_string());
        queue.done(&key);
    }
    assert_eq!(keys, ["ns/a", "ns/b", "other/c", "ns/gone"]);
    handler.flush(); // nothing pending: nothing happens
    assert_eq!(queue.len(), 0);
}

#[test]
fn enqueue_keys_does_not_hold_more_than_a_batch_without_a_flush() {
    use crate::queue::WorkQueue;
    let queue = Arc::new(WorkQueue::<ObjectKey>::new());
    let handler = EnqueueKeys::new(queue.clone());
    for i in 0..ENQUEUE_BATCH + 10 {
        handler.on_add(&pod("ns", &format!("p{i}")), false);
    }
    assert_eq!(queue.len(), ENQUEUE_BATCH);
    handler.flush();
    assert_eq!(queue.len(), ENQUEUE_BATCH + 10);
}

fn cm(name: &str, resource_version: Option<&str>) -> Arc<ConfigMap> {
    let mut cm = ConfigMap::default();
    cm.metadata.namespace = Some("ns".into());
    cm.metadata.name = (!name.is_empty()).then(|| name.to_owned());
    cm.metadata.resource_version = resource_version.map(str::to_owned);
    Arc::new(cm)
}

fn update(old: &Arc<ConfigMap>, new: &Arc<ConfigMap>) -> Notification<ConfigMap> {
    Notification::Update {
        old: old.clone(),
        new: new.clone(),
    }
}

#[test]
fn an_update_of_the_same_object_is_a_resync() {
    let a = cm("a", Some("5"));
    assert!(update(&a, &a).is_resync());
    let unversioned = cm("a", None);
    assert!(update(&unversioned, &unversioned).is_resync());
}

#[test]
fn an_update_with_equal_resource_versions_is_a_resync() {
    assert!(update(&cm("a", Some("5")), &cm("a", Some("5"))).is_resync());
}

#[test]
fn a_missing_resource_version_counts_as_empty() {
    assert!(update(&cm("a", None), &cm("a", None)).is_resync());
    assert!(update(&cm("a", None), &cm("a", Some(""))).is_resync());
    assert!(update(&cm("a", Some("")), &cm("a", None)).is_resync());
    assert!(!update(&cm("a", None), &cm("a", Some("5"))).is_resync());
}

#[test]
fn an_update_with_different_resource_versions_is_a_real_change() {
    assert!(!update(&cm("a", Some("5")), &cm("a", Some("6"))).is_resync());
}

#[test]
fn adds_and_deletes_are_never_resyncs() {
    let a = cm("a", Some("5"));
    for n in [
        Notification::Add {
            object: a.clone(),
            is_initial_list: true,
        },
        Notification::Delete(Deleted::Object(a.clone())),
        Notification::Delete(Deleted::FinalStateUnknown {
            key: ObjectKey::new(Some("ns"), "a"),
            last_known: Some(a.clone()),
        }),
    ] {
        assert!(!n.is_resync(), "{}", n.kind());
    }
}

#[test]
fn bulk_is_an_initial_list_add_or_a_resync() {
    let (a, b) = (cm("a", Some("5")), cm("a", Some("6")));
    let add = |initial| Notification::Add {
        object: a.clone(),
        is_initial_list: initial,
    };
    assert!(add(true).is_bulk());
    assert!(!add(false).is_bulk());
    assert!(update(&a, &a).is_bulk());
    assert!(!update(&a, &b).is_bulk());
    assert!(!Notification::Delete(Deleted::Object(a)).is_bulk());
}

#[test]
fn objects_are_the_current_state_first_and_the_old_one_only_if_another_object() {
    let (a, b) = (cm("a", Some("5")), cm("a", Some("6")));
    let same =
        |o: Option<&Arc<ConfigMap>>, want: &Arc<ConfigMap>| o.is_some_and(|o| Arc::ptr_eq(o, want));
    let changed = update(&a, &b);
    let (first, second) = changed.objects();
    assert!(same(first, &b) && same(second, &a));
    let resync = update(&a, &a);
    let (first, second) = resync.objects();
    assert!(same(first, &a) && second.is_none(), "one object, once");
    let add = Notification::Add {
        object: a.clone(),
        is_initial_list: false,
    };
    let (first, second) = add.objects();
    assert!(same(first, &a) && second.is_none());
    let gone: Notification<ConfigMap> = Notification::Delete(Deleted::FinalStateUnknown {
        key: ObjectKey::new(Some("ns"), "a"),
        last_known: None,
    });
    assert_eq!(gone.objects(), (None, None));
    let known = Notification::Delete(Deleted::FinalStateUnknown {
        key: ObjectKey::new(Some("ns"), "a"),
        last_known: Some(b.clone()),
    });
    let (first, second) = known.objects();
    assert!(same(first, &b) && second.is_none());
}

#[test]
fn key_is_of_the_new_state_or_the_deleted_object_or_carried_by_an_unknown_delete() {
    let key = |name: &str| Some(ObjectKey::new(Some("ns"), name));
    let (old, new) = (cm("old", Some("1")), cm("new", Some("2")));
    assert_eq!(update(&old, &new).key(), key("new"));
    assert_eq!(
        Notification::Add {
            object: old.clone(),
            is_initial_list: false
        }
        .key(),
        key("old")
    );
    assert_eq!(
        Notification::Delete(Deleted::Object(new.clone())).key(),
        key("new")
    );
    let unknown = Notification::Delete(Deleted::FinalStateUnknown {
        key: ObjectKey::new(Some("ns"), "carried"),
        last_known: Some(old),
    });
    assert_eq!(unknown.key(), key("carried"), "the carried key wins");
    assert_eq!(
        Notification::Delete(Deleted::Object(cm("", None))).key(),
        None,
        "no name, no key"
    );
    // A custom key function sees the same object.
    assert_eq!(
        update(&cm("x", None), &new).key_with(|o: &ConfigMap| o
            .metadata
            .name
            .as_deref()
            .map(ObjectKey::cluster)),
        Some(ObjectKey::cluster("new"))
    );
}

#[test]
fn kind_names_the_variant() {
    let a = cm("a", None);
    let kinds = [
        Notification::Add {
            object: a.clone(),
            is_initial_list: false,
        },
        update(&a, &a),
        Notification::Delete(Deleted::Object(a)),
    ]
    .map(|n| n.kind());
    assert_eq!(kinds, ["add", "update", "delete"]);
}

#[test]
fn enqueue_keys_skips_an_object_without_a_name() {
    use crate::queue::WorkQueue;
    let queue = Arc::new(WorkQueue::<ObjectKey>::new());
    let handler = EnqueueKeys::new(queue.clone());
    handler.on_add(&Arc::new(k8s_openapi::api::core::v1::Pod::default()), false);
    handler.flush();
    assert_eq!(queue.len(), 0);
}

/// A handler that records each call as text, for the filtering handler's rules.
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<String>>>);

impl Recorder {
    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

impl Handler<String> for Recorder {
    fn on_add(&self, obj: &Arc<String>, is_initial_list: bool) {
        self.0
            .lock()
            .unwrap()
            .push(format!("add {obj} {is_initial_list}"));
    }
    fn on_update(&self, old: &Arc<String>, new: &Arc<String>) {
        self.0.lock().unwrap().push(format!("update {old}>{new}"));
    }
    fn on_delete(&self, deleted: &Deleted<String>) {
        self.0.lock().unwrap().push(match deleted {
            Deleted::Object(obj) => format!("delete {obj}"),
            Deleted::FinalStateUnknown { key, last_known } => {
                format!("unknown {key} {last_known:?}")
            }
        });
    }
    fn flush(&self) {
        self.0.lock().unwrap().push("flush".into());
    }
}

/// Passes the names starting with `in`.
fn filtering() -> (FilteringHandler<String, Recorder>, Recorder) {
    let recorder = Recorder::default();
    let handler = FilteringHandler::new(|s: &String| s.starts_with("in"), recorder.clone());
    (handler, recorder)
}

fn s(text: &str) -> Arc<String> {
    Arc::new(text.to_owned())
}

#[test]
fn filtering_handler_passes_on_an_add_only_if_the_filter_accepts_the_object() {
    let (h, rec) = filtering();
    h.on_add(&s("in-a"), true);
    h.on_add(&s("out-a"), true);
    h.on_add(&s("in-b"), false);
    assert_eq!(rec.take(), ["add in-a true", "add in-b false"]);
}

#[test]
fn filtering_handler_passes_on_an_update_both_states_pass_as_an_update() {
    let (h, rec) = filtering();
    h.on_update(&s("in-1"), &s("in-2"));
    assert_eq!(rec.take(), ["update in-1>in-2"]);
}

#[test]
fn filtering_handler_turns_an_update_that_starts_passing_into_an_add_of_the_new_state() {
    let (h, rec) = filtering();
    h.on_update(&s("out-1"), &s("in-2"));
    assert_eq!(rec.take(), ["add in-2 false"]);
}

#[test]
fn filtering_handler_turns_an_update_that_stops_passing_into_an_observed_delete_of_the_old_state() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let inner = HandlerFns::<String>::new().on_delete(move |d| {
        log.lock()
            .unwrap()
            .push((d.is_observed(), d.object().map(|o| o.to_string())))
    });
    let h = FilteringHandler::new(|s: &String| s.starts_with("in"), inner);
    h.on_update(&s("in-1"), &s("out-2"));
    assert_eq!(*seen.lock().unwrap(), [(true, Some("in-1".to_string()))]);
}

#[test]
fn filtering_handler_drops_an_update_neither_state_passes() {
    let (h, rec) = filtering();
    h.on_update(&s("out-1"), &s("out-2"));
    assert!(rec.take().is_empty());
}

#[test]
fn filtering_handler_judges_an_observed_delete_by_its_object() {
    let (h, rec) = filtering();
    h.on_delete(&Deleted::Object(s("in-a")));
    h.on_delete(&Deleted::Object(s("out-a")));
    assert_eq!(rec.take(), ["delete in-a"]);
}

#[test]
fn filtering_handler_judges_an_unknown_delete_by_its_last_known_state() {
    let (h, rec) = filtering();
    let unknown = |key: &str, last: &str| Deleted::FinalStateUnknown {
        key: ObjectKey::cluster(key),
        last_known: Some(s(last)),
    };
    h.on_delete(&unknown("k1", "in-a"));
    h.on_delete(&unknown("k2", "out-a"));
    assert_eq!(rec.take(), ["unknown k1 Some(\"in-a\")"]);
}

#[test]
fn filtering_handler_passes_on_an_unknown_delete_without_a_last_known_state() {
    let (h, rec) = filtering();
    h.on_delete(&Deleted::FinalStateUnknown {
        key: ObjectKey::cluster("gone"),
        last_known: None,
    });
    assert_eq!(rec.take(), ["unknown gone None"]);
}

#[test]
fn filtering_handler_applies_its_rules_to_notifications_and_passes_on_flush() {
    let (h, rec) = filtering();
    h.notify(&Notification::Add {
        object: s("out-a"),
        is_initial_list: false,
    });
    h.notify(&Notification::Update {
        old: s("out-a"),
        new: s("in-a"),
    });
    h.flush();
    assert_eq!(rec.take(), ["add in-a false", "flush"]);
    assert!(h.inner().take().is_empty(), "inner() is the recorder");
}

#[test]
fn filtering_handler_of_an_arc_dyn_handler_is_a_handler() {
    let rec = Recorder::default();
    let inner: Arc<dyn Handler<String>> = Arc::new(rec.clone());
    let h: Arc<dyn Handler<String>> = Arc::new(FilteringHandler::new(|_: &String| true, inner));
    h.on_add(&s("x"), false);
    assert_eq!(rec.take(), ["add x false"]);
}

#[test]
fn deleted_key_is_the_observed_objects_key() {
    let deleted = Deleted::Object(pod("ns", "p"));
    assert_eq!(deleted.key(), Some(ObjectKey::new(Some("ns"), "p")));
}

#[test]
fn deleted_key_of_an_unknown_delete_is_the_key_it_carries_whatever_its_last_state() {
    let carried = ObjectKey::new(Some("ns"), "carried");
    for last_known in [None, Some(pod("other", "last"))] {
        let deleted = Deleted::FinalStateUnknown {
            key: carried.clone(),
            last_known,
        };
        assert_eq!(deleted.key(), Some(carried.clone()));
    }
}

#[test]
fn deleted_key_of_an_object_without_a_name_is_none() {
    let deleted = Deleted::Object(Arc::new(k8s_openapi::api::core::v1::Pod::default()));
    assert_eq!(deleted.key(), None);
}

#[test]
fn deleted_key_with_calls_the_key_function_only_for_an_observed_delete() {
    let calls = std::cell::Cell::new(0);
    let key_of = |name: &String| {
        calls.set(calls.get() + 1);
        Some(ObjectKey::cluster(name))
    };
    assert_eq!(
        Deleted::Object(s("a")).key_with(key_of),
        Some(ObjectKey::cluster("a"))
    );
    let unknown: Deleted<String> = Deleted::FinalStateUnknown {
        key: ObjectKey::cluster("b"),
        last_known: Some(s("c")),
    };
    assert_eq!(unknown.key_with(key_of), Some(ObjectKey::cluster("b")));
    assert_eq!(calls.get(), 1);
}
