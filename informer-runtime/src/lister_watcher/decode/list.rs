//! Decoding a list response as it arrives: items found by [`ListScanner`], decoded on the
//! decode pool in runs, handed over in the server's order.

use std::sync::Arc;

use bytes::{Buf, Bytes, BytesMut};
use futures::{Stream, StreamExt};
use informer_core::lister_watcher::{ListMeta, ListWatchError};
use kube::core::TypeMeta;
use serde::de::DeserializeOwned;

use super::scan::{Field, ListScanner, Token};
use super::{BATCH_BYTES, BodyDecoder, panicked, window, with_decoder};
use crate::lister_watcher::json::{DecodeError, item_types};
use crate::pool::Ordered;

/// The fields of a list response around its items.
#[derive(Default)]
pub(crate) struct Head {
    metadata: Option<BytesMut>,
    kind: Option<BytesMut>,
    api_version: Option<BytesMut>,
    /// What items without `kind` and `apiVersion` take, once the list's are known.
    item_types: Option<Arc<TypeMeta>>,
}

impl Head {
    fn set(&mut self, field: Field, value: BytesMut) {
        match field {
            Field::Metadata => self.metadata = Some(value),
            Field::Kind => self.kind = Some(value),
            Field::ApiVersion => self.api_version = Some(value),
            Field::Other | Field::Items => {}
        }
        if self.item_types.is_none()
            && let (Some(kind), Some(api_version)) = (&self.kind, &self.api_version)
        {
            let text = |v: &[u8]| serde_json::from_slice::<String>(v).unwrap_or_default();
            self.item_types = item_types(&TypeMeta {
                kind: text(kind),
                api_version: text(api_version),
            })
            .map(Arc::new);
        }
    }

    /// The `kind` and `apiVersion` the list's items take when they have neither (see
    /// [`item_types`]): none until the list's own have been read. kube-apiserver writes a
    /// built-in type's list (whose items have neither) with its `kind` and `apiVersion`
    /// first; a custom resource's list (`apiVersion`, `items`, `kind`) has items that carry
    /// theirs. Items without either, read before the list's `kind` and `apiVersion`, are
    /// decoded without them.
    fn item_types(&self) -> Option<Arc<TypeMeta>> {
        self.item_types.clone()
    }

    /// The list's type and metadata.
    pub(crate) fn decode(self) -> Result<(TypeMeta, ListMeta), DecodeError> {
        fn field<T: DeserializeOwned + Default>(
            value: Option<BytesMut>,
            what: &str,
        ) -> Result<T, DecodeError> {
            match value {
                None => Ok(T::default()),
                Some(bytes) => serde_json::from_slice::<Option<T>>(&bytes)
                    .map(Option::unwrap_or_default)
                    .map_err(|e| DecodeError::new(format!("malformed list {what}: {e}"))),
            }
        }
        let types = TypeMeta {
            kind: field(self.kind, "kind")?,
            api_version: field(self.api_version, "apiVersion")?,
        };
        Ok((types, field(self.metadata, "metadata")?))
    }
}

/// Items found, not yet submitted.
#[derive(Default)]
struct Batch {
    items: Vec<BytesMut>,
    bytes: usize,
}

/// The scanner over the bytes received so far.
#[derive(Default)]
pub(crate) struct Splitter {
    buffer: BytesMut,
    scanner: ListScanner,
    head: Head,
}

impl Splitter {
    /// Takes `bytes` and moves every complete item found to `items`.
    fn feed(&mut self, bytes: &[u8], items: &mut Batch) -> Result<(), DecodeError> {
        self.buffer.extend_from_slice(bytes);
        while let Some(token) = self.scanner.next(&self.buffer)? {
            let (field, range) = match token {
                Token::Item(range) => (None, range),
                Token::Field(field, range) => (Some(field), range),
            };
            let mut taken = self.buffer.split_to(range.end);
            self.scanner.shift(range.end);
            let value = taken.split_off(range.start);
            match field {
                None => {
                    items.bytes += value.len();
                    items.items.push(value);
                }
                Some(field) => self.head.set(field, value),
            }
        }
        let done = self.scanner.keep_from();
        self.buffer.advance(done);
        self.scanner.shift(done);
        Ok(())
    }

    /// The response ended: its head, if it was complete.
    fn finish(self) -> Result<Head, DecodeError> {
        self.scanner.finish(&self.buffer)?;
        Ok(self.head)
    }
}

/// Decodes a list response body; see [`BodyDecoder::list_in_parts`].
pub(crate) async fn decode_list<K, B>(
    body: B,
    options: BodyDecoder,
    part: &mut (dyn FnMut(Vec<Arc<K>>) + Send),
) -> Result<(TypeMeta, ListMeta), ListWatchError>
where
    K: DeserializeOwned + Send + Sync + 'static,
    B: Stream<Item = Result<Bytes, ListWatchError>> + Send,
{
    let mut body = std::pin::pin!(body);
    let mut splitter = Splitter::default();
    let mut batch = Batch::default();
    let mut jobs: Ordered<Result<Vec<Arc<K>>, DecodeError>> = Ordered::default();
    let window = window();
    let skip = options.skip_managed_fields;
    let submit = |jobs: &mut Ordered<_>, batch: &mut Batch, types: Option<Arc<TypeMeta>>| {
        let items = std::mem::take(&mut batch.items);
        batch.bytes = 0;
        if !items.is_empty() {
            jobs.submit(move || decode_items::<K>(items, skip, types.as_deref()));
        }
    };
    let hand_over = |done: Option<Result<Vec<Arc<K>>, DecodeError>>,
                     part: &mut (dyn FnMut(Vec<Arc<K>>) + Send)|
     -> Result<(), ListWatchError> {
        let objects = done
            .ok_or_else(panicked)?
            .map_err(|e| ListWatchError::Decode(e.to_string()))?;
        part(objects);
        Ok(())
    };
    while let Some(bytes) = body.next().await {
        splitter
            .feed(&bytes?, &mut batch)
            .map_err(|e| ListWatchError::Decode(e.to_string()))?;
        if batch.bytes >= BATCH_BYTES {
            submit(&mut jobs, &mut batch, splitter.head.item_types());
        }
        while let Some(done) = jobs.try_front() {
            hand_over(done, part)?;
        }
        while jobs.len() >= window {
            let done = jobs.front().await.expect("jobs are in flight");
            hand_over(done, part)?;
        }
    }
    let types = splitter.head.item_types();
    let head = splitter
        .finish()
        .map_err(|e| ListWatchError::Decode(e.to_string()))?;
    submit(&mut jobs, &mut batch, types);
    while let Some(done) = jobs.front().await {
        hand_over(done, part)?;
    }
    head.decode()
        .map_err(|e| ListWatchError::Decode(e.to_string()))
}

/// Decodes the items of a list one by one, on the calling thread (`decode` is given the
/// types items without theirs take); see
/// [`JsonDecoder::decode_list`](crate::lister_watcher::JsonDecoder::decode_list).
pub(crate) fn decode_list_now<K: DeserializeOwned>(
    json: &[u8],
    mut decode: impl FnMut(&mut [u8], Option<&TypeMeta>) -> Result<K, DecodeError>,
) -> Result<(TypeMeta, ListMeta, Vec<K>), DecodeError> {
    let mut splitter = Splitter::default();
    let mut batch = Batch::default();
    splitter.feed(json, &mut batch)?;
    let head = splitter.finish()?;
    let types = head.item_types();
    let items = batch
        .items
        .into_iter()
        .map(|mut item| decode(&mut item, types.as_deref()))
        .collect::<Result<Vec<_>, _>>()?;
    let (types, metadata) = head.decode()?;
    Ok((types, metadata, items))
}

/// Decodes a run of items on a decode thread, each into its `Arc` (those without `kind`
/// and `apiVersion` with `types`, if known).
fn decode_items<K: DeserializeOwned>(
    items: Vec<BytesMut>,
    skip_managed_fields: bool,
    types: Option<&TypeMeta>,
) -> Result<Vec<Arc<K>>, DecodeError> {
    with_decoder(skip_managed_fields, |decoder| {
        items
            .into_iter()
            .map(|mut item| decoder.decode_item::<K>(&mut item, types).map(Arc::new))
            .collect()
    })
}
