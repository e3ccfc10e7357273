use std::sync::Arc;

use futures::StreamExt;
use kube_core::{ListMeta, TypeMeta};

use super::*;

/// A user's own source: a fixed list, and a watch replaying fixed events.
struct Fixed {
    items: Vec<String>,
    events: Vec<WatchEvent<String>>,
}

#[async_trait]
impl ListerWatcher<String> for Fixed {
    async fn list(&self, params: &ListParams) -> Result<ObjectList<Arc<String>>, ListWatchError> {
        let limit = params.limit.map_or(self.items.len(), |l| l as usize);
        Ok(ObjectList {
            types: TypeMeta::default(),
            metadata: ListMeta {
                resource_version: Some("7".into()),
                ..ListMeta::default()
            },
            items: self
                .items
                .iter()
                .take(limit)
                .map(|s| Arc::new(s.clone()))
                .collect(),
        })
    }

    async fn watch(
        &self,
        _params: &WatchParams,
        resource_version: &str,
    ) -> Result<WatchStream<String>, ListWatchError> {
        if resource_version == "1" {
            return Err(ListWatchError::status(
                410,
                "Expired",
                "too old resource version: 1 (7)",
            ));
        }
        let events = self.events.clone().into_iter().map(|e| Ok(shared(e)));
        Ok(futures::stream::iter(events).boxed())
    }
}

#[tokio::test]
async fn lister_watcher_is_object_safe() {
    let lw: Arc<dyn ListerWatcher<String>> = Arc::new(Fixed {
        items: vec!["a".into(), "b".into()],
        events: vec![
            WatchEvent::Added("c".into()),
            WatchEvent::Deleted("a".into()),
        ],
    });
    let list = lw.list(&ListParams::default().limit(1)).await.unwrap();
    assert_eq!(list.items, [Arc::new("a".to_owned())]);
    assert_eq!(list.metadata.resource_version.as_deref(), Some("7"));
    let events: Vec<_> = lw
        .watch(&WatchParams::default(), "7")
        .await
        .unwrap()
        .collect()
        .await;
    assert_eq!(events.len(), 2);
    assert!(
        lw.watch(&WatchParams::default(), "1")
            .await
            .err()
            .is_some_and(|e| e.is_gone())
    );
}

#[test]
fn errors_say_whether_to_relist_back_off_or_read_consistently() {
    let gone = ListWatchError::status(410, "Gone", "gone");
    let expired = ListWatchError::status(500, "Expired", "expired");
    let too_old = ListWatchError::status(500, "InternalError", "too old resource version: 3 (9)");
    assert!(gone.is_gone() && expired.is_gone() && too_old.is_gone());
    let busy = ListWatchError::status(429, "TooManyRequests", "slow down");
    assert!(busy.is_too_many_requests() && !busy.is_gone());
    assert_eq!(busy.code(), Some(429));
    let ahead =
        ListWatchError::status(504, "Timeout", "Too large resource version: 12, current: 9");
    assert!(ahead.is_too_large_resource_version() && !ahead.is_gone());
    let decode = ListWatchError::Decode("bad".into());
    assert_eq!(decode.code(), None);
    assert!(
        !decode.is_gone()
            && !decode.is_too_many_requests()
            && !decode.is_too_large_resource_version()
    );
}

fn cause(reason: &str, message: &str) -> StatusCause {
    StatusCause {
        reason: reason.into(),
        message: message.into(),
        field: String::new(),
    }
}

fn with_cause(code: u16, reason: &str, message: &str, cause: StatusCause) -> ListWatchError {
    let mut status = Status::failure(message, reason).with_code(code);
    status.details = Some(StatusDetails {
        name: String::new(),
        group: String::new(),
        kind: String::new(),
        uid: String::new(),
        causes: vec![cause],
        retry_after_seconds: 0,
    });
    ListWatchError::Api(Box::new(status))
}

#[test]
fn too_large_resource_version_is_recognised_from_cause_type_cause_message_and_message() {
    // Servers since 1.18.6: the cause type.
    let by_type = with_cause(
        504,
        "Timeout",
        "Timeout: Too large resource version: 20, current: 10",
        cause(
            CAUSE_RESOURCE_VERSION_TOO_LARGE,
            "Too large resource version",
        ),
    );
    assert!(by_type.is_too_large_resource_version());
    let type_only = with_cause(
        504,
        "Timeout",
        "request did not complete",
        cause(CAUSE_RESOURCE_VERSION_TOO_LARGE, ""),
    );
    assert!(type_only.is_too_large_resource_version());
    // 1.17.0 to 1.18.5: the cause message, on a timeout.
    let by_cause_message = with_cause(
        504,
        "Timeout",
        "request did not complete",
        cause("", "Too large resource version"),
    );
    assert!(by_cause_message.is_too_large_resource_version());
    // Before 1.17: the message text.
    assert!(
        ListWatchError::status(
            504,
            "Timeout",
            "Too large resource version: 20, current: 10"
        )
        .is_too_large_resource_version()
    );
    // Anything else is not.
    let other_cause = with_cause(
        504,
        "Timeout",
        "request did not complete",
        cause("FieldValueInvalid", "too slow"),
    );
    assert!(!other_cause.is_too_large_resource_version());
    assert!(!ListWatchError::status(410, "Expired", "too old").is_too_large_resource_version());
    assert!(!ListWatchError::Decode("x".into()).is_too_large_resource_version());
}

#[test]
fn internal_error_is_reason_internal_error_or_a_500_with_an_unknown_reason() {
    assert!(ListWatchError::status(500, "InternalError", "boom").is_internal_error());
    assert!(ListWatchError::status(0, "InternalError", "boom").is_internal_error());
    assert!(ListWatchError::status(500, "", "boom").is_internal_error());
    assert!(ListWatchError::status(500, "SomethingNew", "boom").is_internal_error());
    assert!(!ListWatchError::status(500, "StorageReadError", "corrupt").is_internal_error());
    assert!(!ListWatchError::status(504, "Timeout", "slow").is_internal_error());
    assert!(!ListWatchError::status(503, "ServiceUnavailable", "later").is_internal_error());
    assert!(!ListWatchError::Transport("refused".into()).is_internal_error());
}
