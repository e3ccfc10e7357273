use super::*;

fn info(verb: Verb, resource: &str, kind: &str) -> RequestInfo {
    RequestInfo {
        verb,
        resource: Some(resource.to_string()),
        kind: Some(kind.to_string()),
        ..RequestInfo::default()
    }
}

#[test]
fn failures_are_consumed_in_order() {
    let mut state = FaultState::default();
    state.failures.push(FailRule {
        matcher: RequestMatch::verb(Verb::List).resource("pods"),
        remaining: 2,
        code: FailureCode::InternalError,
    });
    let list_pods = info(Verb::List, "pods", "Pod");
    let list_cms = info(Verb::List, "configmaps", "ConfigMap");
    assert!(state.on_request(&list_cms).1.is_none());
    assert_eq!(state.on_request(&list_pods).1.unwrap().code(), 500);
    assert_eq!(state.on_request(&list_pods).1.unwrap().code(), 500);
    assert!(state.on_request(&list_pods).1.is_none());
    assert_eq!(state.count(&RequestMatch::verb(Verb::List)), 4);
    assert_eq!(state.count(&RequestMatch::any().resource("Pod")), 3);
    assert_eq!(state.count(&Verb::Watch.into()), 0);
}

#[tokio::test(start_paused = true)]
async fn delayed_watch_chunks_arrive_late_in_order_without_adding_up() {
    use futures::StreamExt;
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<Bytes>();
    let inner = tokio_stream_from(rx);
    let mut delayed = Delayed {
        inner: Some(inner),
        delay: Duration::from_millis(100),
        pending: VecDeque::new(),
        timer: None,
    };
    let start = Instant::now();
    tx.send(Bytes::from_static(b"a")).unwrap();
    tx.send(Bytes::from_static(b"b")).unwrap();
    assert_eq!(delayed.next().await.unwrap(), "a");
    assert_eq!(start.elapsed(), Duration::from_millis(100));
    assert_eq!(delayed.next().await.unwrap(), "b");
    assert_eq!(
        start.elapsed(),
        Duration::from_millis(100),
        "not 200: delays do not add up"
    );
    tokio::time::sleep(Duration::from_millis(30)).await;
    tx.send(Bytes::from_static(b"c")).unwrap();
    drop(tx);
    assert_eq!(delayed.next().await.unwrap(), "c");
    assert_eq!(start.elapsed(), Duration::from_millis(230));
    assert_eq!(delayed.next().await, None);
}

fn tokio_stream_from(
    mut rx: tokio::sync::mpsc::UnboundedReceiver<Bytes>,
) -> BoxStream<'static, Bytes> {
    Box::pin(futures::stream::poll_fn(move |cx| rx.poll_recv(cx)))
}

#[test]
fn stalls_expire() {
    let mut state = FaultState::default();
    state.stalls.push(StallRule {
        matcher: RequestMatch::verb(Verb::Get),
        remaining: Some(1),
        delay: Duration::from_millis(5),
    });
    let get = info(Verb::Get, "pods", "Pod");
    assert_eq!(state.on_request(&get).0, Some(Duration::from_millis(5)));
    assert_eq!(state.on_request(&get).0, None);
}

#[test]
fn a_subresource_matcher_tells_status_writes_from_writes_of_the_object() {
    let spec = info(Verb::Patch, "pods", "Pod");
    let status = RequestInfo {
        subresource: Some("status".into()),
        ..info(Verb::Patch, "pods", "Pod")
    };
    let any = RequestMatch::verb(Verb::Patch).resource("pods");
    let of_status = any.clone().subresource("status");
    let of_object = any.clone().subresource("");
    assert!(any.matches(&spec) && any.matches(&status));
    assert!(of_status.matches(&status) && !of_status.matches(&spec));
    assert!(of_object.matches(&spec) && !of_object.matches(&status));
}
