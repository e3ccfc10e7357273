//! `KubeListerWatcher` against both servers: list then watch and resume, bookmarks, the
//! streaming list and its end bookmark, paging and expired continue tokens, a watch from a
//! compacted version, and a too-large resource version.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use informer_core::{ListWatchError, ListerWatcher, WatchStream};
use informer_runtime::KubeListerWatcher;
use informer_runtime::lister_watcher::INITIAL_EVENTS_END_ANNOTATION;
use kube::api::{ListParams, VersionMatch, WatchEvent, WatchParams};
use kube::core::DynamicObject;

use super::server::{
    Options, Server, create, delete, name_of, on_both_servers, rv_of, update, value_of,
};

fn lister_watcher(server: &Server) -> KubeListerWatcher<DynamicObject> {
    KubeListerWatcher::new(server.widgets())
}

/// The next item of a watch within 20 s, skipping bookmarks unless `bookmarks`; `None` when
/// the watch ends.
async fn next(
    stream: &mut WatchStream<DynamicObject>,
    bookmarks: bool,
) -> Option<Result<WatchEvent<Arc<DynamicObject>>, ListWatchError>> {
    loop {
        let item = tokio::time::timeout(Duration::from_secs(20), stream.next())
            .await
            .expect("a watch event within 20 s")?;
        if bookmarks || !matches!(item, Ok(WatchEvent::Bookmark(_))) {
            return Some(item);
        }
    }
}

/// What an event says, for comparisons: `ADDED a 1`.
fn describe(event: &WatchEvent<Arc<DynamicObject>>) -> String {
    match event {
        WatchEvent::Added(o) => format!("ADDED {} {}", name_of(o), value_of(o)),
        WatchEvent::Modified(o) => format!("MODIFIED {} {}", name_of(o), value_of(o)),
        WatchEvent::Deleted(o) => format!("DELETED {}", name_of(o)),
        WatchEvent::Bookmark(b) => format!("BOOKMARK {}", b.metadata.resource_version),
        WatchEvent::Error(e) => format!("ERROR {} {}", e.code, e.message),
    }
}

fn event_rv(event: &WatchEvent<Arc<DynamicObject>>) -> u64 {
    match event {
        WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) => rv_of(o),
        WatchEvent::Bookmark(b) => b.metadata.resource_version.parse().unwrap_or(0),
        WatchEvent::Error(_) => 0,
    }
}

async fn list_then_watch_and_resume(server: &Server) {
    let api = server.widgets();
    create(&api, "a", &[], 1).await;
    create(&api, "b", &[], 1).await;
    let lw = lister_watcher(server);
    let list = lw.list(&ListParams::default()).await.expect("list");
    let mut names: Vec<String> = list.items.iter().map(|o| name_of(o)).collect();
    names.sort();
    assert_eq!(names, ["a", "b"], "{}", server.name());
    let rv = list.metadata.resource_version.expect("a list version");

    let params = WatchParams::default().timeout(60);
    let mut watch = lw.watch(&params, &rv).await.expect("watch");
    create(&api, "c", &[], 1).await;
    update(&api, "a", 2).await;
    delete(&api, "b").await;
    let mut seen = Vec::new();
    let mut last = 0;
    for _ in 0..3 {
        let event = next(&mut watch, false)
            .await
            .expect("an event")
            .expect("no error");
        last = event_rv(&event);
        seen.push(describe(&event));
    }
    assert_eq!(
        seen,
        ["ADDED c 1", "MODIFIED a 2", "DELETED b"],
        "{}",
        server.name()
    );
    drop(watch);

    // Changes while no watch is open are delivered by the next watch from the last version
    // seen: nothing lost, nothing repeated.
    update(&api, "c", 2).await;
    create(&api, "d", &[], 1).await;
    let mut watch = lw.watch(&params, &last.to_string()).await.expect("resume");
    let mut resumed = Vec::new();
    for _ in 0..2 {
        let event = next(&mut watch, false)
            .await
            .expect("an event")
            .expect("no error");
        resumed.push(describe(&event));
    }
    assert_eq!(resumed, ["MODIFIED c 2", "ADDED d 1"], "{}", server.name());
}
on_both_servers!(
    list_then_watch_and_resume_from_the_last_version_seen,
    Options::DEFAULT,
    list_then_watch_and_resume
);

/// A watch that sees none of the changes (its label selector matches nothing) still learns
/// how far the server got, from bookmarks. The real server sends one two seconds before the
/// watch's timeout (and about every minute); the fake every 200 ms here.
async fn bookmarks(server: &Server) {
    let api = server.widgets();
    let lw = lister_watcher(server);
    let selected = ListParams::default().labels("app=watched");
    let rv = lw
        .list(&selected)
        .await
        .expect("list")
        .metadata
        .resource_version
        .expect("a version");
    // kube's WatchParams ask for bookmarks by default.
    let params = WatchParams::default().labels("app=watched").timeout(5);
    assert!(params.bookmarks);
    let mut watch = lw.watch(&params, &rv).await.expect("watch");
    let unseen = create(&api, "other", &[("app", "other")], 1).await;
    loop {
        match next(&mut watch, true).await {
            Some(Ok(WatchEvent::Bookmark(b))) => {
                let at: u64 = b.metadata.resource_version.parse().expect("a number");
                if at >= rv_of(&unseen) {
                    break;
                }
            }
            Some(other) => panic!("{}: unexpected {other:?}", server.name()),
            None => panic!(
                "{}: the watch ended without a bookmark at or after the unseen change",
                server.name()
            ),
        }
    }
}
on_both_servers!(
    bookmarks_advance_past_changes_the_watch_does_not_see,
    Options::DEFAULT,
    bookmarks
);

async fn streaming_list(server: &Server) {
    let api = server.widgets();
    for name in ["a", "b", "c"] {
        create(&api, name, &[], 1).await;
    }
    let lw = lister_watcher(server);
    let params = WatchParams::streaming_lists().timeout(60);
    let mut watch = lw.watch(&params, "").await.expect("streaming list");
    let mut initial = Vec::new();
    let end = loop {
        match next(&mut watch, true)
            .await
            .expect("an event")
            .expect("no error")
        {
            WatchEvent::Added(o) => initial.push(name_of(&o)),
            WatchEvent::Bookmark(b)
                if b.metadata.annotations.get(INITIAL_EVENTS_END_ANNOTATION)
                    == Some(&"true".to_string()) =>
            {
                break b.metadata.resource_version;
            }
            WatchEvent::Bookmark(_) => {}
            other => panic!(
                "{}: unexpected {other:?} among the initial events",
                server.name()
            ),
        }
    };
    initial.sort();
    assert_eq!(initial, ["a", "b", "c"], "{}", server.name());
    let current = lw
        .list(&ListParams::default())
        .await
        .expect("list")
        .metadata
        .resource_version
        .expect("a version");
    assert_eq!(
        end,
        current,
        "{}: the end bookmark is at the current version",
        server.name()
    );
    create(&api, "d", &[], 1).await;
    let event = next(&mut watch, false)
        .await
        .expect("an event")
        .expect("no error");
    assert_eq!(describe(&event), "ADDED d 1", "{}", server.name());
}
on_both_servers!(
    streaming_list_sends_the_objects_then_the_end_bookmark_then_changes,
    Options::DEFAULT,
    streaming_list
);

async fn paging(server: &Server) {
    let api = server.widgets();
    for i in 0..5 {
        create(&api, &format!("p{i}"), &[], 1).await;
    }
    let lw = lister_watcher(server);
    let first = lw
        .list(&ListParams::default().limit(2))
        .await
        .expect("page 1");
    assert_eq!(
        first.items.iter().map(|o| name_of(o)).collect::<Vec<_>>(),
        ["p0", "p1"]
    );
    assert_eq!(
        first.metadata.remaining_item_count,
        Some(3),
        "{}",
        server.name()
    );
    let rv = first.metadata.resource_version.clone();
    let token = first.metadata.continue_.clone().expect("a continue token");
    // A change after the first page is not in the later pages: they are a snapshot.
    create(&api, "p5", &[], 1).await;
    let mut params = ListParams::default().limit(2);
    params.continue_token = Some(token);
    let second = lw.list(&params).await.expect("page 2");
    assert_eq!(
        second.items.iter().map(|o| name_of(o)).collect::<Vec<_>>(),
        ["p2", "p3"]
    );
    assert_eq!(second.metadata.resource_version, rv, "{}", server.name());
    let token = second.metadata.continue_.clone().expect("a continue token");

    // The history the snapshot needs is compacted away: the token has expired.
    update(&api, "p0", 2).await;
    server.compact().await;
    params.continue_token = Some(token);
    let err = lw
        .list(&params)
        .await
        .expect_err("an expired continue token");
    assert!(err.is_gone(), "{}: {err}", server.name());
    assert_eq!(err.code(), Some(410), "{}: {err}", server.name());
}
on_both_servers!(
    paging_with_continue_tokens_that_expire_after_compaction,
    Options::COMPACTABLE,
    paging
);

async fn watch_from_a_compacted_version(server: &Server) {
    let api = server.widgets();
    let old = create(&api, "a", &[], 1).await;
    update(&api, "a", 2).await;
    update(&api, "a", 3).await;
    server.compact().await;
    let lw = lister_watcher(server);
    let params = WatchParams::default().timeout(30);
    // 410 either as the answer to the request or as an ERROR event in the stream.
    let err = match lw.watch(&params, &rv_of(&old).to_string()).await {
        Err(err) => err,
        Ok(mut stream) => match next(&mut stream, false).await {
            Some(Err(err)) => err,
            Some(Ok(WatchEvent::Error(status))) => {
                ListWatchError::status(status.code, &status.reason, status.message)
            }
            other => panic!("{}: expected 410 Gone, got {other:?}", server.name()),
        },
    };
    assert!(err.is_gone(), "{}: {err}", server.name());
}
on_both_servers!(
    watch_from_a_compacted_version_is_gone,
    Options::COMPACTABLE,
    watch_from_a_compacted_version
);

async fn too_large_resource_version(server: &Server) {
    let api = server.widgets();
    let current = create(&api, "a", &[], 1).await;
    let lw = lister_watcher(server);
    let ahead = (rv_of(&current) + 1_000_000).to_string();
    let params = ListParams::default()
        .at(&ahead)
        .matching(VersionMatch::NotOlderThan);
    let err = lw
        .list(&params)
        .await
        .expect_err("a version the server has not reached");
    assert!(
        err.is_too_large_resource_version(),
        "{}: {err}",
        server.name()
    );
    assert_eq!(err.code(), Some(504), "{}: {err}", server.name());
}
on_both_servers!(
    a_list_at_a_version_the_server_has_not_reached_is_too_large,
    Options::DEFAULT,
    too_large_resource_version
);
