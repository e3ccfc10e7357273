//! Watch streams: newline-delimited JSON events over a chunked response.

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::time::{Instant, Interval, Sleep};

use super::resource::ResourceType;
use super::server::Shared;
use super::storage::WatchMessage;

pub(crate) use informer_core::lister_watcher::INITIAL_EVENTS_END_ANNOTATION;

fn line(event_type: &str, object: &Value) -> Bytes {
    let mut out = format!("{{\"type\":\"{event_type}\",\"object\":").into_bytes();
    // Serializing a `Value` cannot fail.
    let _ = serde_json::to_writer(&mut out, object);
    out.extend_from_slice(b"}\n");
    Bytes::from(out)
}

fn bookmark(resource: &ResourceType, revision: u64, initial_events_end: bool) -> Value {
    let mut metadata = json!({"resourceVersion": revision.to_string(), "creationTimestamp": null});
    if initial_events_end {
        metadata["annotations"] = json!({ INITIAL_EVENTS_END_ANNOTATION: "true" });
    }
    json!({"kind": resource.kind, "apiVersion": resource.api_version(), "metadata": metadata})
}

/// The state of one watch response body.
pub(crate) struct WatchStream {
    shared: Arc<Shared>,
    id: Option<u64>,
    resource: Arc<ResourceType>,
    rx: mpsc::UnboundedReceiver<WatchMessage>,
    bookmarks: Option<Interval>,
    deadline: Option<Pin<Box<Sleep>>>,
    done: bool,
}

impl WatchStream {
    /// A stream for the registered watch `id` (or `None` for a stream that only
    /// drains what was queued, e.g. an error event).
    pub(crate) fn new(
        shared: Arc<Shared>,
        id: Option<u64>,
        resource: Arc<ResourceType>,
        rx: mpsc::UnboundedReceiver<WatchMessage>,
        bookmark_interval: Option<Duration>,
        timeout: Option<Duration>,
    ) -> Self {
        let bookmarks = bookmark_interval.filter(|d| !d.is_zero()).map(|period| {
            let mut interval = tokio::time::interval_at(Instant::now() + period, period);
            interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            interval
        });
        Self {
            shared,
            id,
            resource,
            rx,
            bookmarks,
            deadline: timeout.map(|t| Box::pin(tokio::time::sleep(t))),
            done: false,
        }
    }

    fn encode(&mut self, message: WatchMessage) -> Bytes {
        match message {
            WatchMessage::Event(event, object) => line(event.as_str(), &object),
            WatchMessage::Bookmark {
                revision,
                initial_events_end,
            } => line(
                "BOOKMARK",
                &bookmark(&self.resource, revision, initial_events_end),
            ),
            WatchMessage::Error(status) => {
                self.done = true;
                line("ERROR", &status)
            }
            WatchMessage::Raw(raw) => Bytes::from(format!("{raw}\n")),
        }
    }

    /// The next chunk, or `None` when the watch ends.
    pub(crate) async fn next_chunk(&mut self) -> Option<Bytes> {
        if self.done {
            return None;
        }
        loop {
            if self.deadline.as_ref().is_some_and(|d| d.is_elapsed()) {
                return None;
            }
            if let Ok(message) = self.rx.try_recv() {
                return Some(self.encode(message));
            }
            // A stream without a registered watch only drains what was queued.
            let id = self.id?;
            let deadline = async {
                match self.deadline.as_mut() {
                    Some(d) => d.as_mut().await,
                    None => std::future::pending().await,
                }
            };
            let tick = async {
                match self.bookmarks.as_mut() {
                    Some(i) => {
                        i.tick().await;
                    }
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                message = self.rx.recv() => match message {
                    Some(message) => return Some(self.encode(message)),
                    None => return None,
                },
                () = deadline => return None,
                () = tick => {
                    if !self.shared.store.lock().bookmark(id) {
                        return None;
                    }
                }
            }
        }
    }

    /// Turns the stream into a body stream of chunks.
    pub(crate) fn into_stream(self) -> impl futures::Stream<Item = Bytes> + Send + 'static {
        futures::stream::unfold(self, |mut state| async move {
            state.next_chunk().await.map(|chunk| (chunk, state))
        })
    }
}

impl Drop for WatchStream {
    fn drop(&mut self) {
        if let Some(id) = self.id {
            self.shared.store.lock().remove_watcher(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apiserver::resource::Registry;

    #[test]
    fn lines_are_json_events() {
        let bytes = line("ADDED", &json!({"a": 1}));
        assert_eq!(&bytes[..], b"{\"type\":\"ADDED\",\"object\":{\"a\":1}}\n");
        let pods = Registry::builtin().by_path("", "v1", "pods").unwrap();
        let bm = bookmark(&pods, 7, true);
        assert_eq!(bm["metadata"]["resourceVersion"], "7");
        assert_eq!(
            bm["metadata"]["annotations"][INITIAL_EVENTS_END_ANNOTATION],
            "true"
        );
        assert_eq!(bm["kind"], "Pod");
    }
}
