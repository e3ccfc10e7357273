//! Sources a reflector lists and watches: the kube-backed [`KubeListerWatcher`] (and its
//! metadata-only sibling [`MetadataListerWatcher`]) and the in-memory
//! [`MemoryListerWatcher`] for tests and benchmarks.
//!
//! Both implement [`informer_core::ListerWatcher`], so a reflector cannot tell them apart.

mod json;
mod kube;
mod memory;

pub use self::json::{DecodeError, JsonDecoder, MAX_DEPTH, decode_json};
pub use self::kube::{KubeListerWatcher, MetadataListerWatcher, map_kube_error};
pub use self::memory::{MemoryListerWatcher, RecordedRequest, StreamingSupport};

/// The annotation on the bookmark that ends the initial events of a streaming list
/// (`sendInitialEvents=true`); its value is `"true"`.
///
/// ```
/// assert_eq!(informer_runtime::lister_watcher::INITIAL_EVENTS_END_ANNOTATION, "k8s.io/initial-events-end");
/// ```
pub const INITIAL_EVENTS_END_ANNOTATION: &str = "k8s.io/initial-events-end";
