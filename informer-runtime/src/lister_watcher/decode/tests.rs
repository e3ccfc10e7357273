use std::time::Duration;

use futures::stream;
use k8s_openapi::api::core::v1::ConfigMap;

use super::*;
use informer_core::lister_watcher::WatchEvent;

/// A ConfigMap named `name` at resource version `rv`, padded with `pad` bytes of data so that
/// documents differ in size (and so in decoding time).
fn config_map(name: &str, rv: usize, pad: usize) -> String {
    format!(
        r#"{{"metadata":{{"name":"{name}","namespace":"ns","resourceVersion":"{rv}","managedFields":[{{"manager":"m"}}]}},"data":{{"pad":"{}"}}}}"#,
        "x".repeat(pad)
    )
}

fn event(kind: &str, name: &str, rv: usize, pad: usize) -> String {
    format!(
        r#"{{"type":"{kind}","object":{}}}"#,
        config_map(name, rv, pad)
    )
}

/// `text` as a body of chunks of `chunk` bytes.
fn body(text: String, chunk: usize) -> impl Stream<Item = Result<Bytes, ListWatchError>> + Send {
    let chunks: Vec<_> = text
        .as_bytes()
        .chunks(chunk)
        .map(|c| Ok(Bytes::copy_from_slice(c)))
        .collect();
    stream::iter(chunks)
}

fn rv_of(cm: &ConfigMap) -> usize {
    cm.metadata
        .resource_version
        .as_deref()
        .unwrap()
        .parse()
        .unwrap()
}

/// Events of one key, documents of very different sizes (so that a later run of lines
/// can be decoded before an earlier one), in one body.
fn many_events(n: usize) -> String {
    (0..n)
        .map(|i| {
            event(
                "MODIFIED",
                "a",
                i,
                if i % 7 == 0 { 200_000 } else { i % 50 },
            ) + "\n"
        })
        .collect()
}

#[tokio::test]
async fn events_of_one_key_come_out_in_order_under_parallel_decoding() {
    let n = 2_000;
    for chunk in [1_000, 70_000, usize::MAX] {
        let text = many_events(n);
        let chunk = chunk.min(text.len());
        let events: Vec<_> = BodyDecoder::new()
            .watch::<ConfigMap>(body(text, chunk))
            .collect()
            .await;
        let rvs: Vec<usize> = events
            .iter()
            .map(|e| match e {
                Ok(WatchEvent::Modified(cm)) => rv_of(cm),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(rvs, (0..n).collect::<Vec<_>>(), "chunks of {chunk}");
    }
}

#[tokio::test]
async fn a_read_error_comes_after_every_event_received_before_it() {
    let mut chunks: Vec<Result<Bytes, ListWatchError>> = many_events(300)
        .into_bytes()
        .chunks(10_000)
        .map(|c| Ok(Bytes::copy_from_slice(c)))
        .collect();
    let whole_lines = {
        let text: Vec<u8> = chunks
            .iter()
            .flat_map(|c| c.as_ref().unwrap().to_vec())
            .collect();
        text.iter().filter(|b| **b == b'\n').count()
    };
    chunks.push(Err(ListWatchError::Decode("cut".into())));
    chunks.push(Ok(Bytes::from(event("ADDED", "late", 1, 0) + "\n")));
    let events: Vec<_> = BodyDecoder::new()
        .watch::<ConfigMap>(stream::iter(chunks))
        .collect()
        .await;
    assert_eq!(events.len(), whole_lines + 1);
    assert!(events[..whole_lines].iter().all(Result::is_ok));
    assert!(matches!(events.last(), Some(Err(ListWatchError::Decode(m))) if m == "cut"));
}

#[tokio::test]
async fn watch_lines_that_are_not_events_are_errors_in_their_place() {
    let status = r#"{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Expired","code":410,"message":"too old"}"#;
    let mut text = String::new();
    for i in 0..100 {
        text += &event("ADDED", &format!("c{i}"), i, 10);
        text += "\n";
    }
    text += &format!("{status}\nnot json\n");
    text += &event("DELETED", "c0", 100, 0);
    text += "\n";
    let events: Vec<_> = BodyDecoder::new()
        .watch::<ConfigMap>(body(text, 4096))
        .collect()
        .await;
    assert_eq!(events.len(), 103);
    assert!(matches!(&events[100], Err(e) if e.is_gone()));
    assert!(matches!(&events[101], Err(ListWatchError::Decode(_))));
    assert!(matches!(&events[102], Ok(WatchEvent::Deleted(_))));
}

#[tokio::test]
async fn a_watch_reads_a_bounded_window_ahead() {
    // A body that never ends: the decoder stops reading once its window is full.
    let line = Bytes::from(event("ADDED", "a", 1, 100_000) + "\n");
    let read = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = read.clone();
    let endless = stream::repeat_with(move || {
        counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(line.clone())
    });
    let mut watch = BodyDecoder::new().watch::<ConfigMap>(endless);
    assert!(watch.next().await.is_some());
    tokio::time::sleep(Duration::from_millis(50)).await;
    let lines_per_job = BATCH_BYTES / 100_000 + 1;
    let bound = (window() + 1) * lines_per_job + 1;
    assert!(
        read.load(std::sync::atomic::Ordering::Relaxed) <= bound,
        "read {} lines ahead, bound {bound}",
        read.load(std::sync::atomic::Ordering::Relaxed)
    );
}

fn list_text(n: usize) -> String {
    let items: Vec<String> = (0..n)
        .map(|i| config_map(&format!("c{i}"), i, if i % 5 == 0 { 50_000 } else { 10 }))
        .collect();
    format!(
        r#"{{"kind":"ConfigMapList","apiVersion":"v1","metadata":{{"resourceVersion":"77","continue":"next"}},"items":[{}]}}"#,
        items.join(",")
    )
}

#[tokio::test]
async fn a_list_is_handed_over_in_parts_in_the_servers_order() {
    let n = 3_000;
    let mut parts = Vec::new();
    let mut names = Vec::new();
    let meta = BodyDecoder::new()
        .list_in_parts::<ConfigMap>(body(list_text(n), 8192), &mut |part| {
            parts.push(part.len());
            names.extend(part.iter().map(|cm| rv_of(cm)));
        })
        .await
        .unwrap();
    assert_eq!(meta.resource_version.as_deref(), Some("77"));
    assert_eq!(meta.continue_.as_deref(), Some("next"));
    assert_eq!(names, (0..n).collect::<Vec<_>>());
    assert!(parts.len() > 1, "handed over as it is decoded: {parts:?}");
}

#[tokio::test]
async fn list_items_are_decoded_as_asked() {
    let text = list_text(20);
    let kept = BodyDecoder::new()
        .list::<ConfigMap>(body(text.clone(), 100))
        .await
        .unwrap();
    assert_eq!(kept.types.kind, "ConfigMapList");
    assert!(
        kept.items
            .iter()
            .all(|cm| cm.metadata.managed_fields.is_some())
    );
    let skipped = BodyDecoder::new()
        .skip_managed_fields(true)
        .list::<ConfigMap>(body(text, 100))
        .await
        .unwrap();
    assert!(
        skipped
            .items
            .iter()
            .all(|cm| cm.metadata.managed_fields.is_none())
    );
    // Every vector at its final size, as decoded anywhere else.
    let cm: ConfigMap = serde_json::from_str(&config_map("c0", 0, 50_000)).unwrap();
    assert_eq!(*kept.items[0], cm);
}

#[tokio::test]
async fn a_list_that_is_cut_or_malformed_is_an_error() {
    let text = list_text(50);
    let cut = text[..text.len() - 10].to_owned();
    let err = BodyDecoder::new()
        .list::<ConfigMap>(body(cut, 512))
        .await
        .unwrap_err();
    assert!(matches!(err, ListWatchError::Decode(_)), "{err}");
    let bad_item = text.replacen(r#""name":"c3""#, r#""name":3"#, 1);
    let err = BodyDecoder::new()
        .list::<ConfigMap>(body(bad_item, 512))
        .await
        .unwrap_err();
    assert!(matches!(err, ListWatchError::Decode(_)), "{err}");
    let mut chunks: Vec<_> = text
        .as_bytes()
        .chunks(1000)
        .take(3)
        .map(|c| Ok(Bytes::copy_from_slice(c)))
        .collect();
    chunks.push(Err(ListWatchError::status(500, "InternalError", "boom")));
    let err = BodyDecoder::new()
        .list::<ConfigMap>(stream::iter(chunks))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(500));
}

/// kube-apiserver leaves `kind` and `apiVersion` out of the items of a built-in type's list
/// (a watch event's object has them): an item that has neither takes the list's
/// `apiVersion` and its `kind` less `List`, as client-go's unstructured list decoding gives
/// them, so a `DynamicObject` (or `PartialObjectMeta`) is the same listed or watched. Items
/// with their own (a custom resource's list) keep them, whatever the order of the list's
/// fields.
#[tokio::test]
async fn items_of_a_built_in_list_take_the_lists_kind_and_api_version() {
    use kube::core::{DynamicObject, PartialObjectMeta, TypeMeta};

    let types = |kind: &str, api_version: &str| {
        Some(TypeMeta {
            kind: kind.into(),
            api_version: api_version.into(),
        })
    };
    let typed = format!(
        r#"{{"kind":"ConfigMapList","apiVersion":"v1","metadata":{{"resourceVersion":"9"}},"items":[{},{}]}}"#,
        config_map("a", 1, 10),
        config_map("b", 2, 100_000),
    );
    for chunk in [7, 4096, 1 << 20] {
        let list = BodyDecoder::new()
            .skip_managed_fields(true)
            .list::<DynamicObject>(body(typed.clone(), chunk))
            .await
            .unwrap();
        assert_eq!(list.items.len(), 2);
        for item in &list.items {
            assert_eq!(item.types, types("ConfigMap", "v1"));
            assert!(item.metadata.managed_fields.is_none());
            assert_eq!(
                item.data["data"]["pad"]
                    .as_str()
                    .map(str::len)
                    .map(|n| n > 0),
                Some(true)
            );
        }
    }
    let now = JsonDecoder::new()
        .decode_list::<DynamicObject>(&mut typed.clone().into_bytes())
        .unwrap();
    assert_eq!(now.items[1].types, types("ConfigMap", "v1"));
    // Typed objects decode as before.
    let configmaps = BodyDecoder::new()
        .list::<ConfigMap>(body(typed.clone(), 4096))
        .await
        .unwrap();
    assert_eq!(configmaps.items[1].metadata.name.as_deref(), Some("b"));

    // A custom resource's list: sorted keys, items with their own types.
    let custom = r#"{"apiVersion":"example.com/v1","items":[{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"}},{"kind":"Other","metadata":{"name":"o"}}],"kind":"WidgetList","metadata":{}}"#;
    let list = BodyDecoder::new()
        .list::<DynamicObject>(body(custom.to_owned(), 16))
        .await
        .unwrap();
    assert_eq!(list.items[0].types, types("Widget", "example.com/v1"));
    // One of the two is enough for an item to be left as it is (kube's `TypeMeta` wants both).
    let now = JsonDecoder::new()
        .decode_list::<DynamicObject>(&mut custom.as_bytes().to_vec())
        .unwrap();
    assert_eq!(now.items[0].types, types("Widget", "example.com/v1"));
    assert_eq!(now.items[1].types, None);

    // Metadata-only lists' items have their own; a list without types gives none.
    let metadata = r#"{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{},"items":[{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"a"}}]}"#;
    let list = BodyDecoder::new()
        .list::<PartialObjectMeta<ConfigMap>>(body(metadata.to_owned(), 16))
        .await
        .unwrap();
    assert_eq!(
        list.items[0].types,
        types("PartialObjectMetadata", "meta.k8s.io/v1")
    );
    let bare = r#"{"metadata":{},"items":[{"metadata":{"name":"a"}}]}"#;
    let list = BodyDecoder::new()
        .list::<DynamicObject>(body(bare.to_owned(), 16))
        .await
        .unwrap();
    assert_eq!(list.items[0].types, None);
}
