//! Decoding API responses as they arrive, on the decode pool, in order.
//!
//! - [`BodyDecoder::watch`]: a watch response (one event per line) as a [`WatchStream`]:
//!   lines are decoded in runs on the decode pool while the reader goes on reading, and
//!   come out in the order they were received, so every event of a key (and the resource
//!   versions the reflector checks) stays in order.
//! - [`BodyDecoder::list_in_parts`]: a list response (`{"metadata":..,"items":[..]}`), item
//!   by item as its bytes arrive: the response is never held whole, nor parsed whole (a
//!   list of 100,000 pods is half a gigabyte of JSON); decoded items are handed over in
//!   runs, in the server's order.
//!
//! `KubeListerWatcher` decodes every response this way; a source of your own that reads
//! JSON (from a file, a proxy, a test fixture) can too.
//!
//! The decode pool is a few threads shared by the process (one per core, at most eight;
//! `INFORMER_DECODE_THREADS` sets another number, `0` decodes on the reading task).

mod list;
mod scan;
mod watch;

use std::cell::RefCell;
use std::sync::Arc;

use bytes::Bytes;
use futures::{Stream, StreamExt};
use informer_core::lister_watcher::{ListMeta, ListWatchError, ObjectList, WatchStream};
use serde::de::DeserializeOwned;

use super::json::JsonDecoder;

pub(crate) use list::decode_list_now;

/// How many bytes of lines or items are decoded in one job: about a dozen pods, a few
/// hundred microseconds of decoding, so that handing a job over costs next to nothing.
const BATCH_BYTES: usize = 64 * 1024;

/// How many jobs of one response may be in flight: two per decode thread keep every
/// thread busy while the oldest job's result is taken, and bound the memory held.
fn window() -> usize {
    (2 * crate::pool::threads()).max(2)
}

/// The error of a job that panicked (a `Deserialize` implementation that panics).
fn panicked() -> ListWatchError {
    ListWatchError::Decode("decoding panicked (see the log)".to_owned())
}

thread_local! {
    /// The decoder of each decode thread: its buffers grow to the largest item and are
    /// reused.
    static DECODER: RefCell<JsonDecoder> = RefCell::new(JsonDecoder::new());
}

/// Runs `f` with this thread's decoder (every thread has one, its buffers reused).
pub(crate) fn with_decoder<T>(
    skip_managed_fields: bool,
    f: impl FnOnce(&mut JsonDecoder) -> T,
) -> T {
    DECODER.with_borrow_mut(|decoder| {
        decoder.set_skip_managed_fields(skip_managed_fields);
        f(decoder)
    })
}

/// Decodes API response bodies (watches and lists) as they arrive, on the decode pool, in
/// order.
///
/// - [`watch`](Self::watch): a watch response (one event per line) as a [`WatchStream`]:
///   lines are decoded in runs on the decode pool while the reader goes on reading, and
///   come out in the order they were received, so every event of a key (and the resource
///   versions the reflector checks) stays in order.
/// - [`list_in_parts`](Self::list_in_parts): a list response
///   (`{"metadata":..,"items":[..]}`), item by item as its bytes arrive: the response is
///   never held whole, nor parsed whole (a list of 100,000 pods is half a gigabyte of
///   JSON); decoded items are handed over in runs, in the server's order.
///
/// `KubeListerWatcher` decodes every response this way; a source of your own that reads
/// JSON (from a file, a proxy, a test fixture) can too.
///
/// The decode pool is a few threads shared by the process, started on first use: one per
/// core (at most eight); the environment variable `INFORMER_DECODE_THREADS` sets another
/// number (`0`: decode on the task that reads the response). Objects are decoded straight
/// into their `Arc`s there, with exact-capacity vectors (see [`JsonDecoder`]).
///
/// The body is a stream of byte chunks cut anywhere (HTTP frames, file blocks); a chunk
/// error ends the response with that error, after the events received before it.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use bytes::Bytes;
/// use futures::{StreamExt, stream};
/// use informer_core::lister_watcher::WatchEvent;
/// use informer_runtime::lister_watcher::BodyDecoder;
/// use k8s_openapi::api::core::v1::ConfigMap;
///
/// let body = stream::iter([
///     Ok(Bytes::from_static(br#"{"type":"ADDED","object":{"metadata":{"name":"a"}}}"#)),
///     Ok(Bytes::from_static(b"\n{\"type\":\"DELETED\",\"object\":{\"metadata\":{\"name\":\"a\"}}}\n")),
/// ]);
/// let events: Vec<_> = BodyDecoder::new().watch::<ConfigMap>(body).collect().await;
/// assert!(matches!(&events[0], Ok(WatchEvent::Added(cm)) if cm.metadata.name.as_deref() == Some("a")));
/// assert!(matches!(&events[1], Ok(WatchEvent::Deleted(_))));
///
/// let list = stream::iter([
///     Ok(Bytes::from_static(br#"{"kind":"ConfigMapList","metadata":{"resourceVersion":"7"},"items":[{"metadata":{"na"#)),
///     Ok(Bytes::from_static(br#"me":"a"}},{"metadata":{"name":"b"}}]}"#)),
/// ]);
/// let list = BodyDecoder::new().list::<ConfigMap>(list).await.unwrap();
/// assert_eq!(list.metadata.resource_version.as_deref(), Some("7"));
/// assert_eq!(list.items.len(), 2);
/// # }
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct BodyDecoder {
    skip_managed_fields: bool,
}

impl BodyDecoder {
    /// A decoder that keeps every field.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether to leave `metadata.managedFields` out of every object, skipping them while
    /// decoding (see [`JsonDecoder::skip_managed_fields`]); default `false`.
    pub fn skip_managed_fields(mut self, skip: bool) -> Self {
        self.skip_managed_fields = skip;
        self
    }

    /// The events of a watch response body, one JSON document per line, in order.
    ///
    /// A line that is not an event is a [`ListWatchError::Decode`] item, a bare `Status`
    /// line a [`ListWatchError::Api`] item; the stream goes on after either. A last line
    /// without a newline is an event if it is whole, and dropped if the body was cut in its
    /// middle. At most a few runs of lines (a few hundred kilobytes) are read ahead of the
    /// events taken.
    pub fn watch<K>(
        &self,
        body: impl Stream<Item = Result<Bytes, ListWatchError>> + Send + 'static,
    ) -> WatchStream<K>
    where
        K: DeserializeOwned + Send + Sync + 'static,
    {
        watch::DecodedWatch::<K, _>::new(body.boxed(), *self).boxed()
    }

    /// Decodes a list response body as it arrives, handing its items to `part` in runs, in
    /// the server's order, and returns the list's metadata.
    ///
    /// Memory: the items decoded, and a bounded window of the body (a few hundred
    /// kilobytes), never the whole response.
    ///
    /// # Errors
    /// [`ListWatchError::Decode`] if the body is not a list of `K` (then the parts handed
    /// over so far are only a prefix); a chunk's error as it is.
    pub async fn list_in_parts<K>(
        &self,
        body: impl Stream<Item = Result<Bytes, ListWatchError>> + Send,
        part: &mut (dyn FnMut(Vec<Arc<K>>) + Send),
    ) -> Result<ListMeta, ListWatchError>
    where
        K: DeserializeOwned + Send + Sync + 'static,
    {
        list::decode_list(body, *self, part)
            .await
            .map(|(_, metadata)| metadata)
    }

    /// Decodes a whole list response body (as [`list_in_parts`](Self::list_in_parts), the
    /// items collected).
    ///
    /// # Errors
    /// As [`list_in_parts`](Self::list_in_parts).
    pub async fn list<K>(
        &self,
        body: impl Stream<Item = Result<Bytes, ListWatchError>> + Send,
    ) -> Result<ObjectList<Arc<K>>, ListWatchError>
    where
        K: DeserializeOwned + Clone + Send + Sync + 'static,
    {
        let mut items = Vec::new();
        let (types, metadata) =
            list::decode_list(body, *self, &mut |part: Vec<Arc<K>>| items.extend(part)).await?;
        Ok(ObjectList {
            types,
            metadata,
            items,
        })
    }
}

#[cfg(test)]
mod tests;
