//! Views: a resource seen through a struct of your own that holds only the fields you read.
//!
//! A k8s-openapi `Pod` decoded from the API server takes about 27 KB of memory (every
//! optional field of every container, volume and status is held inline, present or not), a
//! tenth of which a typical controller reads. A *view* is a struct with the same JSON shape
//! as the resource, holding only the fields you declare: decoding it skips everything else
//! (as `managedFields` are skipped), so a cache of views costs what those fields cost.
//!
//! ```
//! use informer_derive::View;
//! use k8s_openapi::api::core::v1::Pod;
//! use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
//! use kube::Resource;
//! use serde::{Deserialize, Serialize};
//!
//! /// The fields of a Pod this controller reads.
//! #[derive(Clone, Debug, View)]
//! #[view(of = Pod, metadata(uid, owner_references))]
//! # #[view(crate = informer_runtime)] // only inside informer-runtime itself
//! struct PodView {
//!     metadata: ObjectMeta,
//!     spec: Option<PodSpecView>,
//! }
//!
//! #[derive(Clone, Debug, Deserialize, Serialize)]
//! #[serde(rename_all = "camelCase")]
//! struct PodSpecView {
//!     node_name: Option<String>,
//! }
//!
//! // A Pod as far as informers, listers and controllers are concerned...
//! assert_eq!(PodView::kind(&()), "Pod");
//! assert_eq!(PodView::plural(&()), "pods");
//! // ...decoded from a Pod's JSON, keeping only what it declares.
//! let mut json = br#"{"metadata":{"name":"web-1","namespace":"shop","labels":{"app":"shop"}},
//!     "spec":{"nodeName":"node-7","containers":[{"name":"app","image":"shop:1"}]}}"#.to_vec();
//! let pod: PodView = informer_runtime::lister_watcher::decode_json(&mut json).unwrap();
//! assert_eq!(pod.spec.unwrap().node_name.as_deref(), Some("node-7"));
//! assert_eq!(pod.metadata.name.as_deref(), Some("web-1"));
//! assert!(pod.metadata.labels.is_none()); // not in `metadata(...)`
//! ```
//!
//! The derive implements `kube::Resource`, [`View`], `Deserialize` and `Serialize` (derive
//! `View` instead of them; the struct's `#[serde(...)]` attributes apply as ever; the types
//! of its fields derive both as usual, as controllers need their resources to serialize). `#[view(metadata(...))]` lists the `ObjectMeta`
//! fields the view keeps (Rust names; `name`, `namespace` and `resource_version`, which key
//! and order objects in the cache, are always kept); without it the whole `ObjectMeta` is
//! decoded (labels and annotations are maps: about 600 bytes each). Managed fields are
//! skipped when the informer drops them (derived controllers do by default).
//!
//! Use the view type wherever the full type would go: `InformerFactory::informer::<PodView>`,
//! `Lister<PodView>`, `#[controller(for = PodView)]`, `owns(PodView)`. Requests go to the
//! full type's endpoint (`/api/v1/pods`), objects come back as views, and reading a field the
//! view does not declare is a compile error (it is plain field access). Label selectors of
//! listers and informers read `metadata.labels`: keep `labels` to use them.
//!
//! What the library reads of a view's metadata, and so what to keep in `metadata(...)`:
//!
//! | use | keep |
//! | --- | --- |
//! | `owns(View)`, `ByControllerUid` (mapping a child to its owner) | `owner_references` (without it nothing is mapped: the owner is never reconciled for its children) |
//! | a view as the parent of declared children | `uid` (to own them: without it the children step fails, terminally) |
//! | the `finalizer` helper on a view | `finalizers` and `deletion_timestamp` (without them the helper's guarded patch fails on every reconcile and the cleanup never runs) |
//! | label selectors, `labels = "..."` | `labels` |
//! | an `#[indexer]` of a metadata field | that field |
//!
//! An update that changes only fields the view does not declare still reaches the
//! controller (the object's resource version changed): a view narrows what is cached, not
//! which changes are seen.
//!
//! A view is cached compressed by derived controllers and `Manager::new` (a
//! [`CompactStore`](crate::compact_store::CompactStore)), which encodes it and decodes it
//! again: its `Serialize` and `Deserialize` must round-trip (no field serialized under
//! another name than it reads, no `skip_serializing` of a field it needs).
//!
//! # Which representation to cache
//!
//! | representation | memory per cached Pod | reads | when |
//! | --- | --- | --- | --- |
//! | the full type (`Pod`) | about 27 KB (37 KB with managed fields) | an `Arc` clone | you read much of the object, or pass it on whole |
//! | a view (`PodView`) | what its fields cost (about 1 KB for the metadata and a few fields) | an `Arc` clone | you read a known handful of fields: the smallest and fastest |
//! | the full type in a [`CompactStore`](crate::compact_store::CompactStore) | about 1.5 KB, plus the hot objects | decoded on a miss (11–18 µs for a Pod) | you need the full type but not its memory; reads are rare next to API calls (a reconcile) |
//!
//! Writes go through `kube::Api<Pod>` as ever: a view is for reading. A replace (`PUT`)
//! through an `Api` of the view would send only the view's fields, and remove the others.

use std::fmt;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use serde::Deserialize;
use serde::de::value::{BorrowedStrDeserializer, MapAccessDeserializer};
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};

/// A projection of the resource [`Of`](View::Of): a struct with the same JSON shape holding
/// only some of its fields, and the same kind, group, version and plural (it implements
/// `kube::Resource` like `Of`, with its own fields as the object). Implemented by
/// `#[derive(View)]`; see the [module documentation](self).
pub trait View: Resource<DynamicType = ()> {
    /// The resource this is a view of.
    type Of: Resource<DynamicType = ()>;
}

/// Deserializes an `ObjectMeta` keeping only the fields whose JSON names are in `keep`
/// (say `["name", "namespace", "resourceVersion", "uid"]`): the others are skipped without
/// being decoded, so they cost neither time nor memory. What
/// `#[view(of = ..., metadata(...))]` decodes a view's `metadata` with; usable by hand with
/// `#[serde(deserialize_with = ...)]`.
///
/// ```
/// use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
/// use serde::Deserialize;
///
/// #[derive(Deserialize)]
/// struct Slim {
///     #[serde(deserialize_with = "name_only")]
///     metadata: ObjectMeta,
/// }
/// fn name_only<'de, D: serde::Deserializer<'de>>(d: D) -> Result<ObjectMeta, D::Error> {
///     informer_runtime::view::deserialize_metadata(d, &["name"])
/// }
///
/// let slim: Slim = serde_json::from_str(r#"{"metadata":{"name":"a","labels":{"k":"v"}}}"#).unwrap();
/// assert_eq!(slim.metadata.name.as_deref(), Some("a"));
/// assert!(slim.metadata.labels.is_none());
/// ```
///
/// # Errors
/// As `ObjectMeta`'s own `Deserialize`, for the fields kept.
pub fn deserialize_metadata<'de, D: Deserializer<'de>>(
    deserializer: D,
    keep: &'static [&'static str],
) -> Result<ObjectMeta, D::Error> {
    deserializer.deserialize_map(Projected(keep))
}

/// Visits a metadata map, handing `ObjectMeta` the kept fields only.
struct Projected(&'static [&'static str]);

impl<'de> Visitor<'de> for Projected {
    type Value = ObjectMeta;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object's metadata")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<ObjectMeta, A::Error> {
        ObjectMeta::deserialize(MapAccessDeserializer::new(Kept { map, keep: self.0 }))
    }
}

/// A map with only the keys in `keep`; the values of the others are skipped.
struct Kept<A> {
    map: A,
    keep: &'static [&'static str],
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Kept<A> {
    type Error = A::Error;

    fn next_key_seed<S: DeserializeSeed<'de>>(
        &mut self,
        seed: S,
    ) -> Result<Option<S::Value>, A::Error> {
        loop {
            match self.map.next_key_seed(KeyIn(self.keep))? {
                None => return Ok(None),
                Some(Some(key)) => {
                    return seed
                        .deserialize(BorrowedStrDeserializer::<A::Error>::new(key))
                        .map(Some);
                }
                Some(None) => {
                    self.map.next_value::<IgnoredAny>()?;
                }
            }
        }
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, A::Error> {
        self.map.next_value_seed(seed)
    }
}

/// A key, as the entry of `keep` it equals (without allocating), or `None`.
struct KeyIn(&'static [&'static str]);

impl<'de> DeserializeSeed<'de> for KeyIn {
    type Value = Option<&'static str>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeyIn {
    type Value = Option<&'static str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a field name")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<Self::Value, E> {
        Ok(self.0.iter().find(|k| **k == key).copied())
    }
}

/// What code generated by `#[derive(View)]` names; not an API.
#[doc(hidden)]
pub mod __private {
    pub use super::deserialize_metadata;
    pub use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    pub use serde;
    pub use serde::{Deserialize, Deserializer, Serialize, Serializer};
    pub use std::borrow::Cow;
    pub use std::result::Result;
}

#[cfg(test)]
mod tests;
