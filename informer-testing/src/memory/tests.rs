use super::*;
use k8s_openapi::api::core::v1::ConfigMap;

fn cm(ns: &str, name: &str, labels: &[(&str, &str)]) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.to_owned());
    cm.metadata.namespace = Some(ns.to_owned());
    if !labels.is_empty() {
        cm.metadata.labels = Some(
            labels
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        );
    }
    cm
}

fn key(ns: &str, name: &str) -> ObjectKey {
    ObjectKey::new(Some(ns), name)
}

fn names(list: &ObjectList<Arc<ConfigMap>>) -> Vec<String> {
    list.items
        .iter()
        .map(|o| o.metadata.name.clone().unwrap_or_default())
        .collect()
}

fn lp() -> ListParams {
    ListParams::default()
}

/// Drains what is ready in a watch stream, as `TYPE name@rv` strings.
fn ready(stream: &mut WatchStream<ConfigMap>) -> Vec<String> {
    let mut out = Vec::new();
    while let Some(Some(item)) = stream.next().now_or_never() {
        out.push(match item {
            Ok(WatchEvent::Added(o)) => format!(
                "ADDED {}@{}",
                o.metadata.name.clone().unwrap_or_default(),
                o.metadata.resource_version.clone().unwrap_or_default()
            ),
            Ok(WatchEvent::Modified(o)) => format!(
                "MODIFIED {}@{}",
                o.metadata.name.clone().unwrap_or_default(),
                o.metadata.resource_version.clone().unwrap_or_default()
            ),
            Ok(WatchEvent::Deleted(o)) => format!(
                "DELETED {}@{}",
                o.metadata.name.clone().unwrap_or_default(),
                o.metadata.resource_version.clone().unwrap_or_default()
            ),
            Ok(WatchEvent::Bookmark(b)) => format!(
                "BOOKMARK {}{}",
                b.metadata.resource_version,
                if b.metadata
                    .annotations
                    .contains_key(INITIAL_EVENTS_END_ANNOTATION)
                {
                    " end"
                } else {
                    ""
                }
            ),
            Ok(WatchEvent::Error(s)) => format!("ERROR {}", s.code),
            Err(e) => format!("ERR {e}"),
        });
    }
    out
}

fn ended(stream: &mut WatchStream<ConfigMap>) -> bool {
    matches!(stream.next().now_or_never(), Some(None))
}

use futures::FutureExt;

#[tokio::test]
async fn list_returns_current_objects_in_key_order_at_the_current_rv() {
    let lw = MemoryListerWatcher::<ConfigMap>::new();
    assert_eq!(lw.resource_version(), "1");
    lw.create(cm("ns", "b", &[]));
    let rv = lw.create(cm("ns", "a", &[]));
    let list = lw.list(&lp()).await.unwrap();
    assert_eq!(names(&list), ["a", "b"]);
    assert_eq!(list.metadata.resource_version.as_deref(), Some(rv.as_str()));
    assert_eq!(rv, "3");
    assert_eq!(
        list.items[0].metadata.resource_version.as_deref(),
        Some("3")
    );
}

#[tokio::test]
async fn list_paginates_over_a_consistent_snapshot() {
    let lw = MemoryListerWatcher::<ConfigMap>::new();
    for n in ["a", "b", "c", "d", "e"] {
        lw.create(cm("ns", n, &[]));
    }
    let first = lw
        .list(&ListParams {
            limit: Some(2),
            ..lp()
        })
        .await
        .unwrap();
    assert_eq!(names(&first), ["a", "b"]);
    let rv = first.metadata.resource_version.clone();
    // Changes after the first page do not show in later pages.
    lw.delete(&key("ns", "c"));
    lw.create(cm("ns", "f", &[]));
    let mut token = first.metadata.continue_.clone();
    let mut all = names(&first);
    while let Some(t) = token {
        let page = lw
            .list(&ListParams {
                limit: Some(2),
                continue_token: Some(t),
                ..lp()
            })
            .await
            .unwrap();
        assert_eq!(page.metadata.resource_version, rv);
        all.extend(names(&page));
        token = page.metadata.continue_;
    }
    assert_eq!(all, ["a", "b", "c", "d", "e"]);
}

/// Lists the first of the objects, lets `invalidate` act on the source, then asks for the
/// rest with the list's continue token: the error of that second list.
async fn continue_after(
    lw: &MemoryListerWatcher<ConfigMap>,
    invalidate: impl FnOnce(&MemoryListerWatcher<ConfigMap>),
) -> ListWatchError {
    let first = lw
        .list(&ListParams {
            limit: Some(1),
            ..lp()
        })
        .await
        .unwrap();
    invalidate(lw);
    lw.list(&ListParams {
        limit: Some(1),
        continue_token: first.metadata.continue_,
        ..lp()
    })
    .await
    .unwrap_err()
}

#[tokio::test]
async fn continue_token_expires_on_compaction_with_410() {
    let lw = MemoryListerWatcher::<ConfigMap>::new();
    for n in ["a", "b", "c"] {
        lw.create(cm("ns", n, &[]));
    }
    let err = continue_after(&lw, MemoryListerWatcher::compact).await;
    assert!(err.is_gone(), "{err}");
    let err = continue_after(&lw, MemoryListerWatcher::expire_continue_tokens).await;
    assert!(err.is_gone(), "{err}");
}

#[tokio::test]
async fn continue_with_a_resource_version_is_rejected() {
    let lw = MemoryListerWatcher::<ConfigMap>::new();
    lw.create(cm("ns", "a", &[]));
    lw.create(cm("ns", "b", &[]));
    let first = lw
        .list(&ListParams {
            limit: Some(1),
            ..lp()
        })
        .await
        .unwrap();
    let err = lw
        .list(&ListParams {
            limit: Some(1),
            continue_token: first.metadata.continue_,
            resource_version: Some("2".into()),
            ..lp()
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(400));
}

#[tokio::test]
async fn exact_list_of_an_older_version_is_that_versions_state() {
    let lw = MemoryListerWatcher::<ConfigMap>::new();
    lw.create(cm("ns", "a", &[]));
    let rv = lw.create(cm("ns", "b", &[]));
    lw.delete(&key("ns", "a"));
    lw.update(cm("ns", "b", &[("x", "1")]));
    lw.create(cm("ns", "c", &[]));
    let exact = ListParams {
        resource_version: Some(rv.clone()),
        version_match: Some(VersionMatch::Exact),
        ..lp()
    };
    let list = lw.list(&exact).await.unwrap();
    assert_eq!(names(&list), ["a", "b"]);
    assert_eq!(list.metadata.resource_version, Some(rv.clone()));
    assert!(list.items[1].metadata.labels.is_none());
    // A version with a limit and no match is exact too.
    let paged = lw
        .list(&ListParams {
            resource_version: Some(rv),
            limit: Some(10),
            ..lp()
        })
        .await
        .unwrap();
    assert_eq!(names(&paged), ["a", "b"]);
}

#[tokio::test]
async fn not_older_than_list_is_the_current_state() {
    let lw = MemoryListerWatcher::<ConfigMap>::new();
    let rv = lw.create(cm("ns", "a", &[]));
    let now = lw.create(cm("ns", "b", &[]));
    for vm in [None, Some(VersionMatch::NotOlderThan)] {
        let list = lw
            .list(&ListParams {
                resource_version: Some(rv.clone()),
                version_match: vm,
                ..lp()
            })
            .await
            .unwrap();
        assert_eq!(names(&list), ["a", "b"]);
        assert_eq!(list.metadata.resource_version, Some(now.clone()));
    }
}

#[tokio::test]
async fn exact_list_of_a_compacted_version_is_410() {
    let lw = MemoryListerWatcher::<ConfigMap>::new();
    let rv = lw.create(cm("ns", "a", &[]));
    lw.create(cm("ns", "b", &[]));
    lw.compact();
    let err = lw
        .list(&ListParams {
            resource_version: Some(rv),
            limit: Some(5),
            ..lp()
        })
        .await
        .unwrap_err();
    assert!(err.is_gone(), "{err}");
}

#[tokio::test]
async fn list_and_watch_of_a_future_version_are_too_large() {
    let lw = MemoryListerWatcher::<ConfigMap>::new();
    let err = lw
        .list(&ListParams {
            resource_version: Some("99".into()),
            ..lp()
        })
        .await
        .unwrap_err();
    assert!(err.is_too_large_resource_version(), "{err}");
    let err = lw.watch(&WatchParams::default(), "99").await.err().unwrap();
    assert!(err.is_too_large_resource_version(), "{err}");
}

#[tokio::test]
async fn label_selector_supports_equality_set_and_existence_requirements() {
    let lw = MemoryListerWatcher::<ConfigMap>::new();
    lw.create(cm("ns", "a", &[("app", "web"), ("tier", "fe")]));
    lw.create(cm("ns", "b", &[("app", "db")]));
    lw.create(cm("ns", "c", &[]));
    let cases = [
        ("app=web", vec!["a"]),
        ("app==web", vec!["a"]),
        ("app!=web", vec!["b", "c"]),
        ("app in (web, db)", vec!["a", "b"]),
        ("app notin (web)", vec!["b", "c"]),
        ("app", vec!["a", "b"]),
        ("!app", vec!["c"]),
        ("app,tier=fe", vec!["a"]),
        ("app in (web,db),!tier", vec!["b"]),
    ];
    for (selector, want) in cases {
        let list = lw.list(&lp().labels(selector)).await.unwrap();
        assert_eq!(names(&list), want, "selector {selector:?}");
    }
    let err = lw.list(&lp().labels("app in web")).await.unwrap_err();
    assert_eq!(err.code(), Some(400));
}

#[tokio::test]
async fn field_selector_supports_name_and_namespace_only() {
    let lw = MemoryListerWatcher::<ConfigMap>::new();
    lw.create(cm("ns1", "a", &[]));
    lw.create(cm("ns2", "a", &[]));
    lw.create(cm("ns2", "b", &[]));
    let list = lw
        .list(&lp().fields("metadata.namespace=ns2"))
        .await
        .unwrap();
    assert_eq!(names(&list), ["a", "b"]);
    let list = lw
        .list(&lp().fields("metadata.namespace=ns2,metadata.name!=a"))
        .await
        .unwrap();
    assert_eq!(names(&list), ["b"]);
    let err = lw.list(&lp().fields("spec.nodeName=x")).await.unwrap_err();
    assert_eq!(err.code(), Some(400));
}

#[tokio::test]
async fn watch_from_a_version_replays_later_events_then_streams_live() {
    let lw = MemoryListerWatcher::<ConfigMap>::new();
    let rv = lw.create(cm("ns", "a", &[]));
    lw.create(cm("ns", "b", &[]));
    lw.update(cm("ns", "a", &[("x", "1")]));
    let mut w = lw.watch(&WatchParams::default(), &rv).await.unwrap();
    assert_eq!(ready(&mut w), ["ADDED b@3", "MODIFIED a@4"]);
    lw.delete(&key("ns", "b"));
    assert_eq!(ready(&mut w), ["DELETED b@5"]);
}

#[tokio::test]
async fn watch_from_0_or_empty_starts_with_synthetic_adds() {
    let lw = MemoryListerWatcher::<ConfigMap>::new();
    lw.create(cm("ns", "a", &[]));
    lw.create(cm("ns", "b", &[]));
    for rv in ["0", ""] {
        let mut w = lw.watch(&WatchParams::default(), rv).await.unwrap();
        assert_eq!(ready(&mut w), ["ADDED a@2", "ADDED b@3"], "from {rv:?}");
    }
}

#[tokio::test]
async fn watch_from_a_compacted_version_gets_a_410_error_event() {
    let lw = MemoryListerWatcher::<ConfigMap>::new();
    let rv = lw.create(cm("ns", "a", &[]));
    lw.create(cm("ns", "b", &[]));
    lw.compact();
    let mut w = lw.watch(&WatchParams::default(), &rv).await.unwrap();
    assert_eq!(ready(&mut w), ["ERROR 410"]);
    // Watching from the compaction point itself still works.
    let mut w = lw
        .watch(&WatchParams::default(), &lw.resource_version())
        .await
        .unwrap();
    assert!(ready(&mut w).is_empty());
    assert!(!ended(&mut w));
}

#[tokio::test]
async fn history_limit_compacts_the_oldest_events() {
    let lw = MemoryListerWatcher::<ConfigMap>::new();
    lw.set_history_limit(2);
    lw.create(cm("ns", "a", &[]));
    let rv = lw.create(cm("ns", "b", &[]));
    lw.create(cm("ns", "c", &[]));
    lw.create(cm("ns", "d", &[]));
    let mut w = lw.watch(&WatchParams::default(), "2").await.unwrap();
    assert_eq!(ready(&mut w), ["ERROR 410"]);
    let mut w = lw.watch(&WatchParams::default(), &rv).await.unwrap();
    assert_eq!(ready(&mut w), ["ADDED c@4", "ADDED d@5"]);
}

#[tokio::test]
async fn objects_entering_or_leaving_a_selector_are_added_or_deleted_for_the_watch() {
    let lw = MemoryListerWatcher::<ConfigMap>::new();
    let rv = lw.create(cm("ns", "a", &[]));
    let params = WatchParams::default().labels("app=web");
    let mut w = lw.watch(&params, &rv).await.unwrap();
    lw.update(cm("ns", "a", &[("app", "web")]));
    lw.update(cm("ns", "a", &[("app", "web"), ("x", "y")]));
    lw.update(cm("ns", "a", &[("app", "db")]));
    lw.update(cm("ns", "a", &[]));
    assert_eq!(ready(&mut w), ["ADDED a@3", "MODIFIED a@4", "DELETED a@5"]);
}

#[tokio::test]
async fn delete_emits_the_last_state_with_the_deletions_version() {
    let lw = MemoryListerWatcher::<ConfigMap>::new();
    let rv = lw.create(cm("ns", "a", &[("k", "v")]));
    let mut w = lw.watch(&WatchParams::default(), &rv).await.unwrap();
    assert_eq!(lw.delete(&key("ns", "a")).as_deref(), Some("3"));
    assert_eq!(lw.delete(&key("ns", "a")), None);
    match w.next().await {
        Some(Ok(WatchEvent::Deleted(o))) => {
            assert_eq!(o.metadata.resource_version.as_deref(), Some("3"));
            assert_eq!(o.metadata.labels.as_ref().unwrap()["k"], "v");
        }
        other => panic!("{other:?}"),
    }
    assert!(lw.is_empty());
}

#[tokio::test]
async fn create_of_an_existing_key_is_409_and_update_of_a_missing_key_is_404() {
    let lw = MemoryListerWatcher::<ConfigMap>::new();
    lw.create(cm("ns", "a", &[]));
    assert_eq!(
        lw.try_create(cm("ns", "a", &[])).unwrap_err().code(),
        Some(409)
    );
    assert_eq!(
        lw.try_update(cm("ns", "b", &[])).unwrap_err().code(),
        Some(404)
    );
    assert_eq!(
        lw.try_create(ConfigMap::default()).unwrap_err().code(),
        Some(400)
    );
    assert_eq!(lw.resource_version(), "2");
    assert_eq!(lw.len(), 1);
    assert!(lw.get(&key("ns", "a")).is_some());
}

#[tokio::test]
async fn streaming_list_sends_initial_adds_then_the_annotated_bookmark_then_changes() {
    let lw = MemoryListerWatcher::<ConfigMap>::new();
    lw.create(cm("ns", "a", &[]));
    lw.create(cm("ns", "b", &[]));
    let params = WatchParams {
        send_initial_events: true,
        ..WatchParams::default()
    };
    let mut w = lw.watch(&params, "").await.unwrap();
    assert_eq!(ready(&mut w), ["ADDED a@2", "ADDED b@3", "BOOKMARK 3 end"]);
    lw.create(cm("ns", "c", &[]));
    assert_eq!(ready(&mut w), ["ADDED c@4"]);
}

#[tokio::test]
async fn streaming_list_requires_bookmarks() {
    let lw = MemoryListerWatcher::<ConfigMap>::new();
    let params = WatchParams {
        send_initial_events: true,
        bookmarks: false,
        ..WatchParams::default()
    };
    assert_eq!(lw.watch(&params, "").await.err().unwrap().code(), Some(422));
}

#[tokio::test]
async fn streaming_list_support_can_be_rejected_or_ignored() {
    let lw = MemoryListerWatcher::<ConfigMap>::new();
    lw.create(cm("ns", "a", &[]));
    let params = WatchParams {
        send_initial_events: true,
        ..WatchParams::default()
    };
    lw.set_streaming_support(StreamingSupport::Rejected);
    assert_eq!(lw.watch(&params, "").await.err().unwrap().code(), Some(422));
    lw.set_streaming_support(StreamingSupport::Ignored);
    let mut w = lw.watch(&params, "").await.unwrap();
    assert_eq!(ready(&mut w), ["ADDED a@2"]);
}

#[tokio::test]
async fn bookmarks_go_only_to_watches_that_asked_for_them() {
    let lw = MemoryListerWatcher::<ConfigMap>::new();
    let rv = lw.resource_version();
    let mut with = lw.watch(&WatchParams::default(), &rv).await.unwrap();
    let mut without = lw
        .watch(
            &WatchParams {
                bookmarks: false,
                ..WatchParams::default()
            },
            &rv,
        )
        .await
        .unwrap();
    lw.bookmark();
    assert_eq!(ready(&mut with), ["BOOKMARK 1"]);
    assert!(ready(&mut without).is_empty());
}

#[tokio::test]
async fn close_watches_ends_every_stream_after_what_was_sent() {
    let lw = MemoryListerWatcher::<ConfigMap>::new();
    let mut w = lw.watch(&WatchParams::default(), "1").await.unwrap();
    lw.create(cm("ns", "a", &[]));
    assert_eq!(lw.open_watches(), 1);
    lw.close_watches();
    assert_eq!(lw.open_watches(), 0);
    assert_eq!(ready(&mut w), ["ADDED a@2"]);
    assert!(ended(&mut w));
}

#[tokio::test]
async fn send_error_event_ends_streams_after_the_error() {
    let lw = MemoryListerWatcher::<ConfigMap>::new();
    let mut w = lw.watch(&WatchParams::default(), "1").await.unwrap();
    lw.send_error_event(Status::failure("too old", "Expired").with_code(410));
    assert_eq!(ready(&mut w), ["ERROR 410"]);
    assert!(ended(&mut w));
}

#[tokio::test]
async fn send_stream_error_keeps_streams_open() {
    let lw = MemoryListerWatcher::<ConfigMap>::new();
    let mut w = lw.watch(&WatchParams::default(), "1").await.unwrap();
    lw.send_stream_error(|| ListWatchError::Decode("bad".into()));
    lw.create(cm("ns", "a", &[]));
    let got = ready(&mut w);
    assert_eq!(got.len(), 2);
    assert!(got[0].starts_with("ERR malformed"), "{got:?}");
    assert_eq!(got[1], "ADDED a@2");
}

#[tokio::test]
async fn injected_failures_fail_one_call_each_in_order() {
    let lw = MemoryListerWatcher::<ConfigMap>::new();
    lw.fail_next_list(ListWatchError::status(500, "InternalError", "x"));
    lw.fail_next_list(ListWatchError::status(429, "TooManyRequests", "y"));
    lw.fail_next_watch(ListWatchError::status(403, "Forbidden", "z"));
    assert_eq!(lw.list(&lp()).await.unwrap_err().code(), Some(500));
    assert_eq!(lw.list(&lp()).await.unwrap_err().code(), Some(429));
    assert!(lw.list(&lp()).await.is_ok());
    assert_eq!(
        lw.watch(&WatchParams::default(), "1")
            .await
            .err()
            .unwrap()
            .code(),
        Some(403)
    );
    assert!(lw.watch(&WatchParams::default(), "1").await.is_ok());
    assert_eq!((lw.list_calls(), lw.watch_calls()), (3, 2));
}

#[tokio::test]
async fn every_request_is_recorded_in_order() {
    let lw = MemoryListerWatcher::<ConfigMap>::new();
    lw.list(&lp().labels("a=b")).await.unwrap();
    let _w = lw.watch(&WatchParams::default(), "1").await.unwrap();
    let requests = lw.requests();
    assert_eq!(requests.len(), 2);
    assert!(requests[0].is_list());
    assert_eq!(requests[0].resource_version(), None);
    assert_eq!(requests[1].resource_version(), Some("1"));
}

#[tokio::test(start_paused = true)]
async fn watch_timeout_ends_the_stream_like_a_server() {
    let lw = MemoryListerWatcher::<ConfigMap>::new();
    let params = WatchParams::default().timeout(60);
    let mut w = lw.watch(&params, "1").await.unwrap();
    let start = tokio::time::Instant::now();
    assert!(w.next().await.is_none());
    assert_eq!(start.elapsed(), Duration::from_secs(60));
}

mod model {
    use proptest::prelude::*;

    use super::*;

    #[derive(Clone, Debug)]
    enum Op {
        Create(u8, bool),
        Update(u8, bool),
        Delete(u8),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (0u8..5, any::<bool>()).prop_map(|(i, l)| Op::Create(i, l)),
            (0u8..5, any::<bool>()).prop_map(|(i, l)| Op::Update(i, l)),
            (0u8..5).prop_map(Op::Delete),
        ]
    }

    fn obj(i: u8, web: bool) -> ConfigMap {
        cm(
            "ns",
            &format!("o{i}"),
            if web { &[("app", "web")] } else { &[] },
        )
    }

    /// name -> resource version
    fn state(items: &[Arc<ConfigMap>]) -> BTreeMap<String, String> {
        items
            .iter()
            .map(|o| {
                (
                    o.metadata.name.clone().unwrap_or_default(),
                    o.metadata.resource_version.clone().unwrap_or_default(),
                )
            })
            .collect()
    }

    proptest! {
        /// For every retained version `r` and selector: the exact list at `r` plus the
        /// events of a watch from `r` give the current list; and pages concatenate to
        /// the whole list.
        #[test]
        fn list_at_a_version_plus_the_watch_from_it_is_the_current_state(
            ops in proptest::collection::vec(op(), 0..30),
            history in 0usize..20,
            limit in 1u32..4,
            pick in any::<proptest::sample::Index>(),
        ) {
            let lw = MemoryListerWatcher::<ConfigMap>::new();
            lw.set_history_limit(history);
            for op in ops {
                match op {
                    Op::Create(i, web) => { let _ = lw.try_create(obj(i, web)); }
                    Op::Update(i, web) => { let _ = lw.try_update(obj(i, web)); }
                    Op::Delete(i) => { lw.delete(&key("ns", &format!("o{i}"))); }
                }
            }
            let (oldest, current) = {
                let st = lw.lock();
                (st.oldest_servable, st.rv)
            };
            let r = oldest + pick.index((current - oldest + 1) as usize) as u64;
            for selector in [None, Some("app=web")] {
                let mut lp = ListParams {
                    resource_version: Some(r.to_string()),
                    version_match: Some(VersionMatch::Exact),
                    ..ListParams::default()
                };
                lp.label_selector = selector.map(str::to_owned);
                let at_r = lw.list(&lp).now_or_never().unwrap().unwrap();
                prop_assert_eq!(at_r.metadata.resource_version.clone(), Some(r.to_string()));
                let mut model = state(&at_r.items);
                let wp = WatchParams { label_selector: lp.label_selector.clone(), ..WatchParams::default() };
                let mut watch = lw.watch(&wp, &r.to_string()).now_or_never().unwrap().unwrap();
                while let Some(Some(item)) = watch.next().now_or_never() {
                    match item.unwrap() {
                        WatchEvent::Added(o) | WatchEvent::Modified(o) => {
                            model.insert(o.metadata.name.clone().unwrap(), o.metadata.resource_version.clone().unwrap());
                        }
                        WatchEvent::Deleted(o) => {
                            prop_assert!(model.remove(o.metadata.name.as_ref().unwrap()).is_some());
                        }
                        other => prop_assert!(false, "unexpected {:?}", other),
                    }
                }
                let now_lp = ListParams { label_selector: lp.label_selector.clone(), ..ListParams::default() };
                let now = lw.list(&now_lp).now_or_never().unwrap().unwrap();
                prop_assert_eq!(&model, &state(&now.items));
                // Pages concatenate to the whole list.
                let mut paged = Vec::new();
                let mut token = None;
                loop {
                    let page_lp = ListParams {
                        limit: Some(limit),
                        continue_token: token.clone(),
                        ..now_lp.clone()
                    };
                    let page = lw.list(&page_lp).now_or_never().unwrap().unwrap();
                    paged.extend(page.items);
                    token = page.metadata.continue_;
                    if token.is_none() { break; }
                }
                prop_assert_eq!(state(&paged), state(&now.items));
            }
        }
    }
}

#[tokio::test]
async fn changes_dropping_the_watch_reach_lists_and_later_watches_but_not_open_ones() {
    let lw = MemoryListerWatcher::<ConfigMap>::new();
    lw.create(cm("ns", "a", &[]));
    let before = lw.resource_version();
    let mut open = lw.watch(&WatchParams::default(), &before).await.unwrap();
    lw.create_dropping_watch(cm("ns", "b", &[]));
    let mut changed = cm("ns", "a", &[("k", "v")]);
    changed.metadata.resource_version = None;
    lw.update_dropping_watch(changed);
    lw.delete_dropping_watch(&key("ns", "b"));
    assert!(ready(&mut open).is_empty(), "the open watch missed them");
    lw.create(cm("ns", "c", &[]));
    assert_eq!(ready(&mut open), ["ADDED c@6"], "and goes on with the next");

    assert_eq!(names(&lw.list(&lp()).await.unwrap()), ["a", "c"]);
    let mut later = lw.watch(&WatchParams::default(), &before).await.unwrap();
    assert_eq!(
        ready(&mut later),
        ["ADDED b@3", "MODIFIED a@4", "DELETED b@5", "ADDED c@6"]
    );
}
