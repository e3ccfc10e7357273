use super::*;
use bytes::Bytes;
use futures::{StreamExt, stream};
use http_body_util::StreamBody;
use hyper::body::Frame;
use informer_core::lister_watcher::WatchEvent;
use k8s_openapi::api::core::v1::ConfigMap;

type Chunk = Result<Frame<Bytes>, kube::Error>;

fn event(name: &str) -> String {
    format!(r#"{{"type":"ADDED","object":{{"metadata":{{"name":"{name}"}}}}}}"#)
}

fn data(text: &str) -> Chunk {
    Ok(Frame::data(Bytes::copy_from_slice(text.as_bytes())))
}

async fn read(chunks: Vec<Chunk>) -> Vec<Result<String, ListWatchError>> {
    let body = StreamBody::new(stream::iter(chunks));
    BodyDecoder::new()
        .watch::<ConfigMap>(BodyBytes::new(body, true))
        .map(|item| {
            item.map(|event| match event {
                WatchEvent::Added(cm) => cm.metadata.name.clone().unwrap_or_default(),
                other => format!("{other:?}"),
            })
        })
        .collect()
        .await
}

fn names(items: Vec<Result<String, ListWatchError>>) -> Vec<String> {
    items.into_iter().map(|i| i.expect("an event")).collect()
}

fn io_error(kind: std::io::ErrorKind) -> Chunk {
    Err(kube::Error::Service(Box::new(std::io::Error::new(
        kind, "cut",
    ))))
}

#[tokio::test]
async fn events_are_split_at_newlines_whatever_the_chunks() {
    let (a, b, c) = (event("a"), event("b"), event("c"));
    let text = format!("{a}\n{b}\r\n\n{c}\n");
    // One chunk, and one byte per chunk.
    assert_eq!(names(read(vec![data(&text)]).await), ["a", "b", "c"]);
    let bytes: Vec<Chunk> = text.chars().map(|ch| data(&ch.to_string())).collect();
    assert_eq!(names(read(bytes).await), ["a", "b", "c"]);
}

#[tokio::test]
async fn a_last_event_without_a_newline_is_kept_a_truncated_one_dropped() {
    let (a, b) = (event("a"), event("b"));
    assert_eq!(
        names(read(vec![data(&format!("{a}\n{b}"))]).await),
        ["a", "b"]
    );
    let cut = &b[..b.len() / 2];
    assert_eq!(names(read(vec![data(&format!("{a}\n{cut}"))]).await), ["a"]);
}

#[tokio::test]
async fn a_connection_cut_or_read_timeout_ends_the_watch_quietly() {
    for kind in [
        std::io::ErrorKind::UnexpectedEof,
        std::io::ErrorKind::TimedOut,
    ] {
        let chunks = vec![
            data(&format!("{}\n", event("a"))),
            io_error(kind),
            data(&event("b")),
        ];
        assert_eq!(names(read(chunks).await), ["a"], "{kind:?}");
    }
}

#[tokio::test]
async fn another_read_error_is_a_transport_error_and_ends_the_watch() {
    let chunks = vec![
        data(&format!("{}\n", event("a"))),
        io_error(std::io::ErrorKind::ConnectionReset),
        data(&event("b")),
    ];
    let items = read(chunks).await;
    assert_eq!(items.len(), 2, "{items:?}");
    assert_eq!(items[0].as_deref().ok(), Some("a"));
    assert!(
        matches!(items[1], Err(ListWatchError::Transport(_))),
        "{:?}",
        items[1]
    );
}

#[tokio::test]
async fn a_bare_status_line_is_an_api_error_and_garbage_a_decode_error() {
    let status = r#"{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Expired","code":410,"message":"too old"}"#;
    let items = read(vec![data(&format!("{status}\nnot json\n{}\n", event("a")))]).await;
    assert!(matches!(&items[0], Err(e) if e.is_gone()), "{:?}", items[0]);
    assert!(
        matches!(items[1], Err(ListWatchError::Decode(_))),
        "{:?}",
        items[1]
    );
    assert_eq!(items[2].as_deref().ok(), Some("a"));
}

#[test]
fn an_error_body_that_is_not_a_status_keeps_the_code_and_the_text() {
    let status = error_status(
        http::StatusCode::BAD_GATEWAY,
        b"<html>upstream down</html>\n",
    );
    assert_eq!(status.code, 502);
    assert_eq!(status.message, "<html>upstream down</html>");
    let status = error_status(
        http::StatusCode::FORBIDDEN,
        br#"{"kind":"Status","status":"Failure","reason":"Forbidden","code":403,"message":"no"}"#,
    );
    assert_eq!((status.code, status.reason.as_str()), (403, "Forbidden"));
}

fn list_uri(params: &ListParams) -> String {
    let request = Request::new("/api/v1/pods").list(params);
    with_resource_version_zero(request, params)
        .unwrap()
        .uri()
        .to_string()
}

#[test]
fn a_first_page_at_resource_version_0_keeps_both_the_limit_and_the_version() {
    let uri = list_uri(&ListParams {
        resource_version: Some("0".into()),
        limit: Some(500),
        ..ListParams::default()
    });
    assert!(uri.contains("limit=500"), "{uri}");
    assert!(uri.contains("resourceVersion=0"), "{uri}");
    // Other lists are as kube builds them.
    let uri = list_uri(&ListParams {
        resource_version: Some("0".into()),
        ..ListParams::default()
    });
    assert_eq!(uri.matches("resourceVersion=0").count(), 1, "{uri}");
    let uri = list_uri(&ListParams {
        limit: Some(500),
        continue_token: Some("t".into()),
        ..ListParams::default()
    });
    assert!(!uri.contains("resourceVersion"), "{uri}");
    let uri = list_uri(&ListParams {
        resource_version: Some("12".into()),
        limit: Some(500),
        ..ListParams::default()
    });
    assert!(uri.contains("resourceVersion=12"), "{uri}");
}
