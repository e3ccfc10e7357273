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
//! decoded (labels and annotations are maps: about 600 bytes each).
//! `metadata(annotations("example.com/ttl"), labels("app"))` keeps only those keys of the
//! two maps, the others skipped undecoded: a controller reading one annotation does not cache
//! every annotation of every object (`kubectl.kubernetes.io/last-applied-configuration` holds
//! a copy of the whole object). Managed fields are skipped when the informer drops them
//! (derived controllers do by default).
//!
//! Each top-level field must be one of the viewed type's (by its name, or the snake case of
//! the name `#[serde(rename = "...")]` gives it): a misspelt `stats` is rustc's `no field
//! stats on type Pod` with its "a field with a similar name exists: status", not a field
//! that is always `None`. A field the JSON has but the type does not declare (newer than its
//! crate), or declares under another Rust name (a custom resource's `#[serde(rename)]`),
//! takes `#[view(unchecked)]`. The fields of nested structs are not checked; give
//! each field the resource's own type (a `Quantity`, not an `f64`): a type that does not
//! match fails the decode of every object, and the informer never syncs (its error names
//! the type and the first object).
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
//! | label selectors, `labels = "..."` | `labels` (with keys listed, `labels("app")`, a selector sees only those) |
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

use std::collections::BTreeMap;
use std::fmt;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use serde::Deserialize;
use serde::de::value::{BorrowedStrDeserializer, MapAccessDeserializer};
use serde::de::{
    self, DeserializeSeed, Deserializer, IgnoredAny, IntoDeserializer, MapAccess, Visitor,
};

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
    deserialize_metadata_keys(deserializer, keep, None, None)
}

/// As [`deserialize_metadata`], keeping of `annotations` and `labels` only the keys listed
/// (`None`: every key, if the field is kept at all); the values of the others are skipped
/// without being decoded. What `#[view(metadata(annotations("example.com/ttl")))]` decodes
/// with: a controller that reads one annotation does not cache every annotation of every
/// object (`kubectl.kubernetes.io/last-applied-configuration` holds a copy of the object).
///
/// ```
/// use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
/// use serde::Deserialize;
///
/// #[derive(Deserialize)]
/// struct Slim {
///     #[serde(deserialize_with = "ttl_only")]
///     metadata: ObjectMeta,
/// }
/// fn ttl_only<'de, D: serde::Deserializer<'de>>(d: D) -> Result<ObjectMeta, D::Error> {
///     informer_runtime::view::deserialize_metadata_keys(
///         d,
///         &["name", "annotations"],
///         Some(&["example.com/ttl"]),
///         None,
///     )
/// }
///
/// let json = r#"{"metadata":{"name":"a","annotations":{"example.com/ttl":"1h","big":"..."}}}"#;
/// let slim: Slim = serde_json::from_str(json).unwrap();
/// let annotations = slim.metadata.annotations.unwrap();
/// assert_eq!(annotations.len(), 1);
/// assert_eq!(annotations["example.com/ttl"], "1h");
/// ```
///
/// # Errors
/// As `ObjectMeta`'s own `Deserialize`, for the fields kept.
pub fn deserialize_metadata_keys<'de, D: Deserializer<'de>>(
    deserializer: D,
    keep: &'static [&'static str],
    annotations: Option<&'static [&'static str]>,
    labels: Option<&'static [&'static str]>,
) -> Result<ObjectMeta, D::Error> {
    deserializer.deserialize_map(Projected {
        keep,
        annotations,
        labels,
    })
}

/// Visits a metadata map, handing `ObjectMeta` the kept fields only.
struct Projected {
    keep: &'static [&'static str],
    annotations: Option<&'static [&'static str]>,
    labels: Option<&'static [&'static str]>,
}

impl<'de> Visitor<'de> for Projected {
    type Value = ObjectMeta;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object's metadata")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<ObjectMeta, A::Error> {
        ObjectMeta::deserialize(MapAccessDeserializer::new(Kept {
            map,
            keep: self.keep,
            annotations: self.annotations,
            labels: self.labels,
            current: None,
        }))
    }
}

/// A map with only the keys in `keep`; the values of the others are skipped. The values of
/// `annotations` and `labels`, when their keys are listed, keep only those keys.
struct Kept<A> {
    map: A,
    keep: &'static [&'static str],
    annotations: Option<&'static [&'static str]>,
    labels: Option<&'static [&'static str]>,
    /// The key whose value comes next.
    current: Option<&'static str>,
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
                    self.current = Some(key);
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
        let keys = match self.current.take() {
            Some("annotations") => self.annotations,
            Some("labels") => self.labels,
            _ => None,
        };
        let Some(keys) = keys else {
            return self.map.next_value_seed(seed);
        };
        match self.map.next_value_seed(StringsIn(keys))? {
            Some(kept) => seed.deserialize(Present::<A::Error>(kept, std::marker::PhantomData)),
            None => seed.deserialize(IntoDeserializer::<'de, A::Error>::into_deserializer(())),
        }
    }
}

/// A map of strings (`null`: `None`) keeping only the keys in `.0`; the other values are
/// skipped without being decoded.
struct StringsIn(&'static [&'static str]);

impl<'de> DeserializeSeed<'de> for StringsIn {
    type Value = Option<BTreeMap<String, String>>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_option(self)
    }
}

impl<'de> Visitor<'de> for StringsIn {
    type Value = Option<BTreeMap<String, String>>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a map of strings")
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_map(self)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut kept = BTreeMap::new();
        while let Some(key) = map.next_key_seed(KeyIn(self.0))? {
            match key {
                Some(key) => {
                    kept.insert(key.to_owned(), map.next_value::<String>()?);
                }
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Some(kept))
    }
}

/// A present map of strings, for `ObjectMeta`'s `Option<BTreeMap<String, String>>`, failing
/// with `E` (the metadata's own error type).
struct Present<E>(BTreeMap<String, String>, std::marker::PhantomData<E>);

impl<'de, E: de::Error> Deserializer<'de> for Present<E> {
    type Error = E;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, E> {
        IntoDeserializer::<'de, E>::into_deserializer(self.0).deserialize_any(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, E> {
        visitor.visit_some(IntoDeserializer::<'de, E>::into_deserializer(self.0))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        unit unit_struct newtype_struct seq tuple tuple_struct map struct enum identifier
        ignored_any
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
    pub use super::{deserialize_metadata, deserialize_metadata_keys};
    pub use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    pub use serde;
    pub use serde::{Deserialize, Deserializer, Serialize, Serializer};
    pub use std::borrow::Cow;
    pub use std::result::Result;
}

#[cfg(test)]
mod tests;
