//! [`DecodedWatch`]: a watch response body (one JSON event per line) as a stream of events,
//! decoded on the decode pool while the reader goes on reading.

use std::collections::VecDeque;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use futures::Stream;
use informer_core::lister_watcher::{ListWatchError, WatchEvent, shared};
use serde::de::DeserializeOwned;

use super::{BATCH_BYTES, BodyDecoder, panicked, window, with_decoder};
use crate::lister_watcher::json::JsonDecoder;
use crate::pool::Ordered;

/// One decoded line.
type Item<K> = Result<WatchEvent<Arc<K>>, ListWatchError>;

/// A watch body decoded line by line, in order; see [`BodyDecoder::watch`].
pub(crate) struct DecodedWatch<K, B> {
    body: B,
    options: BodyDecoder,
    /// Bytes read and not yet split into lines.
    buffer: BytesMut,
    /// How much of `buffer` is known to hold no newline.
    scanned: usize,
    /// Complete lines not yet submitted, and their total length.
    lines: Vec<BytesMut>,
    line_bytes: usize,
    /// Batches of lines being decoded, oldest first.
    jobs: Ordered<Vec<Item<K>>>,
    /// Decoded events not yet handed out.
    ready: VecDeque<Item<K>>,
    /// The body ended (with this error to hand out after every event before it).
    ended: Option<Option<ListWatchError>>,
    /// Decodes on the reader's task (a single line with nothing in flight, the last line).
    decoder: JsonDecoder,
    _events: PhantomData<fn() -> K>,
}

impl<K, B> DecodedWatch<K, B> {
    pub(crate) fn new(body: B, options: BodyDecoder) -> Self {
        Self {
            body,
            options,
            buffer: BytesMut::new(),
            scanned: 0,
            lines: Vec::new(),
            line_bytes: 0,
            jobs: Ordered::default(),
            ready: VecDeque::new(),
            ended: None,
            decoder: JsonDecoder::new().skip_managed_fields(options.skip_managed_fields),
            _events: PhantomData,
        }
    }
}

impl<K, B> DecodedWatch<K, B>
where
    K: DeserializeOwned + Send + Sync + 'static,
{
    /// Moves the complete lines of `buffer` to `lines` (line endings and blank lines
    /// dropped).
    fn split_lines(&mut self) {
        while let Some(n) = memchr::memchr(b'\n', &self.buffer[self.scanned..]) {
            let mut line = self.buffer.split_to(self.scanned + n + 1);
            self.scanned = 0;
            trim_line(&mut line);
            if !line.is_empty() {
                self.line_bytes += line.len();
                self.lines.push(line);
            }
        }
        self.scanned = self.buffer.len();
    }

    /// Hands the pending lines to the decode pool, or decodes a lone line at once when
    /// nothing is in flight (a quiet watch gains nothing from another thread).
    fn submit(&mut self) {
        if self.lines.is_empty() {
            return;
        }
        let lines = std::mem::take(&mut self.lines);
        self.line_bytes = 0;
        let skip = self.options.skip_managed_fields;
        if lines.len() == 1 && self.jobs.is_empty() {
            let decoded = lines
                .into_iter()
                .map(|mut line| decode_line(&mut self.decoder, &mut line))
                .collect();
            self.jobs.push_done(decoded);
        } else {
            self.jobs.submit(move || {
                with_decoder(skip, |decoder| {
                    lines
                        .into_iter()
                        .map(|mut line| decode_line(decoder, &mut line))
                        .collect()
                })
            });
        }
    }

    /// The body ended: a last line without a newline is kept if it is a whole event, and
    /// dropped if it was cut (the reflector resumes from the last event it received, so
    /// nothing is lost).
    fn end(&mut self, error: Option<ListWatchError>) {
        self.submit();
        let mut rest = std::mem::take(&mut self.buffer);
        self.scanned = 0;
        trim_line(&mut rest);
        if error.is_none() && !rest.is_empty() {
            match decode_line(&mut self.decoder, &mut rest) {
                Ok(event) => self.jobs.push_done(vec![Ok(event)]),
                Err(e) => tracing::debug!(error = %e, "watch ended in the middle of an event"),
            }
        }
        self.ended = Some(error);
    }
}

impl<K, B> Stream for DecodedWatch<K, B>
where
    K: DeserializeOwned + Send + Sync + 'static,
    B: Stream<Item = Result<Bytes, ListWatchError>> + Unpin,
{
    type Item = Item<K>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Item<K>>> {
        let this = self.get_mut();
        let window = window();
        loop {
            if let Some(item) = this.ready.pop_front() {
                return Poll::Ready(Some(item));
            }
            // Read what the body has ready, while the window has room.
            while this.ended.is_none() && this.jobs.len() < window {
                match Pin::new(&mut this.body).poll_next(cx) {
                    Poll::Ready(Some(Ok(bytes))) => {
                        this.buffer.extend_from_slice(&bytes);
                        this.split_lines();
                        if this.line_bytes >= BATCH_BYTES {
                            this.submit();
                        }
                    }
                    Poll::Ready(Some(Err(e))) => this.end(Some(e)),
                    Poll::Ready(None) => this.end(None),
                    Poll::Pending => break,
                }
            }
            if this.jobs.len() < window {
                this.submit();
            }
            match this.jobs.poll_front(cx) {
                Poll::Ready(Some(Some(items))) => this.ready.extend(items),
                Poll::Ready(Some(None)) => this.ready.push_back(Err(panicked())),
                Poll::Ready(None) => {
                    return match &mut this.ended {
                        // Everything before the end is out; then the error, once.
                        Some(error) => Poll::Ready(error.take().map(Err)),
                        None => Poll::Pending,
                    };
                }
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

/// Drops a line's ending.
fn trim_line(line: &mut BytesMut) {
    let mut end = line.len();
    while end > 0 && matches!(line[end - 1], b'\n' | b'\r') {
        end -= 1;
    }
    line.truncate(end);
}

/// Decodes one line: an event, an error status sent instead of one, or garbage.
fn decode_line<K: DeserializeOwned>(
    decoder: &mut JsonDecoder,
    line: &mut [u8],
) -> Result<WatchEvent<Arc<K>>, ListWatchError> {
    match decoder.decode_watch_line::<K>(line) {
        Ok(Ok(event)) => Ok(shared(event)),
        Ok(Err(status)) => Err(ListWatchError::Api(Box::new(status))),
        Err(e) => Err(ListWatchError::Decode(e.to_string())),
    }
}
