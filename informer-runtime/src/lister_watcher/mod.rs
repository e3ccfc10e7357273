//! Sources a reflector lists and watches: the kube-backed [`KubeListerWatcher`] and its
//! metadata-only sibling [`MetadataListerWatcher`]. (An in-memory one for tests and
//! benchmarks is `informer_testing::MemoryListerWatcher`.)
//!
//! Both implement [`informer_core::ListerWatcher`], as any source of a reflector does.

mod decode;
mod json;
mod kube;

pub use self::decode::BodyDecoder;
pub(crate) use self::decode::with_decoder;
pub use self::json::{DecodeError, JsonDecoder, MAX_DEPTH, decode_json};
pub use self::kube::{KubeListerWatcher, MetadataListerWatcher, map_kube_error};

pub use informer_core::lister_watcher::INITIAL_EVENTS_END_ANNOTATION;
