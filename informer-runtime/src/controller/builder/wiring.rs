//! The machinery of [`build`](super::ControllerBuilder::build) that the primary type and
//! the owned and watched types share: typed indexes registered on a cache, informers taken
//! from the factory, and the handler that wires a related type to the controller's queue.

use std::any::{Any, TypeId};
use std::fmt;
use std::sync::Arc;

use informer_core::{IndexError, Indexer, ObjectKey, Queue, parse_label_selector};
use kube::core::PartialObjectMeta;
use serde::de::DeserializeOwned;

use super::{BuildError, WatchOptions};
use crate::controller::children::SyncChildren;
use crate::controller::consistency::{Gate, ReconcileClient};
use crate::controller::enqueue::{EnqueueHandler, Mapping};
use crate::controller::owner::OwnerMatcher;
use crate::controller::source::{InformerSource, Source};
use crate::controller::{ControllerResource, ControllerScope};
use crate::factory::{InformerFactory, InformerHandle, InformerParams, NamespacedScope};
use crate::informer::HandlerOptions;
use crate::lister::{Index, Lister, ensure_index};

/// Registers a typed index on a cache (idempotent), reporting its name on failure.
pub(super) struct TypedIndex<K> {
    pub(super) name: &'static str,
    ensure: fn(&dyn Indexer<K>) -> Result<(), IndexError>,
}

impl<K: 'static> TypedIndex<K> {
    pub(super) fn of<I: Index<K>>() -> Self {
        Self {
            name: I::NAME,
            ensure: ensure_index::<K, I>,
        }
    }
}

/// Registers every typed index of `indexes` on `indexer`.
pub(super) fn ensure_indexes<K>(
    indexes: &[TypedIndex<K>],
    indexer: &dyn Indexer<K>,
    informer: impl Fn() -> String,
) -> Result<(), BuildError> {
    for index in indexes {
        (index.ensure)(indexer).map_err(|source| BuildError::Index {
            name: index.name.to_owned(),
            informer: informer(),
            source,
        })?;
    }
    Ok(())
}

/// Gets the shared informer of a type from the factory, when the default (a full-object
/// informer of the type's scope) is not the one wanted.
pub(super) type MakeInformer<K> =
    Box<dyn FnOnce(&InformerFactory, InformerParams) -> InformerHandle<K> + Send>;

/// The factory's metadata-only informer of `C`, as a [`MakeInformer`].
pub(super) fn metadata_informer<C>() -> MakeInformer<PartialObjectMeta<C>>
where
    C: kube::Resource + Clone + DeserializeOwned + fmt::Debug + Send + Sync + 'static,
    C::DynamicType: Default,
    C::Scope: NamespacedScope,
{
    Box::new(|factory, params| factory.metadata_informer::<C>(params))
}

/// What wiring an owned, watched or child type needs from the controller of `K` being built.
pub(super) struct RelatedContext<'a, K> {
    pub(super) factory: &'a InformerFactory,
    pub(super) namespace: Option<&'a str>,
    pub(super) queue: &'a Arc<dyn Queue<ObjectKey>>,
    pub(super) controller: &'a str,
    pub(super) owner: &'a OwnerMatcher,
    /// Read-your-own-writes, when on.
    pub(super) gate: Option<&'a Arc<Gate>>,
    /// The client reconciles write through (children are written through it).
    pub(super) client: &'a Arc<ReconcileClient>,
    /// The primary cache.
    pub(super) parents: &'a Lister<K>,
    /// What of the primary resource the primary cache holds (namespace, selectors).
    pub(super) parent_view: &'a InformerParams,
}

/// The lister of a watched type, found by type ([`Controller::lister_of`]).
///
/// [`Controller::lister_of`]: crate::controller::Controller::lister_of
pub(super) type TypedLister = (TypeId, Box<dyn Any + Send + Sync>);

/// An owned, watched or child type, once wired.
pub(super) struct Related<K> {
    pub(super) source: Arc<dyn Source>,
    pub(super) lister: TypedLister,
    /// For declared children: what brings them in line.
    pub(super) children: Option<Arc<dyn SyncChildren<K>>>,
}

/// Wires one owned, watched or child type (set by `owns_with`, `watches_with`,
/// `children_with`).
pub(super) type RelatedFn<K> =
    Box<dyn FnOnce(&RelatedContext<'_, K>) -> Result<Related<K>, BuildError> + Send>;

/// The primary informer before its handler is registered.
pub(super) enum Primary<K: Clone> {
    /// The controller's own informer (custom store), with its label.
    Private(String),
    /// The factory's shared informer.
    Shared(InformerHandle<K>),
}

impl<K: Clone> Primary<K> {
    /// The informer as errors name it.
    pub(super) fn label(&self) -> String {
        match self {
            Primary::Private(label) => label.clone(),
            Primary::Shared(handle) => handle.id().to_string(),
        }
    }
}

/// The build's error if `selector`, the label selector of the watch of `W`, is malformed.
pub(super) fn label_selector_error<W: ControllerResource>(
    selector: Option<&str>,
) -> Option<BuildError> {
    let source = parse_label_selector(selector?).err()?;
    Some(BuildError::LabelSelector {
        kind: W::kind(&W::DynamicType::default()).into_owned(),
        source,
    })
}

/// Wires an owned or watched type: its informer from the factory, the controller's handler.
pub(super) fn related<K, W: ControllerResource>(
    ctx: &RelatedContext<'_, K>,
    role: &str,
    mapping: Mapping<W>,
    options: WatchOptions<W>,
) -> Result<Related<K>, BuildError> {
    if options.create_only {
        return Err(BuildError::CreateOnlyNotChildren(std::any::type_name::<W>()));
    }
    let params = options.params(ctx.namespace);
    related_with(ctx, role, mapping, options, params, |_| Ok(()))
}

/// As [`related`], with the informer's parameters given, and `prepare` run on its cache
/// before the handler is registered (to add an index the mapping reads).
pub(super) fn related_with<K, W: ControllerResource>(
    ctx: &RelatedContext<'_, K>,
    role: &str,
    mapping: Mapping<W>,
    mut options: WatchOptions<W>,
    params: InformerParams,
    prepare: impl FnOnce(&dyn Indexer<W>) -> Result<(), BuildError>,
) -> Result<Related<K>, BuildError> {
    let make = options
        .informer
        .take()
        .and_then(|make| make.downcast::<MakeInformer<W>>().ok());
    let handle = match make {
        Some(make) => make(ctx.factory, params),
        None => <W::Scope as ControllerScope>::informer::<W>(ctx.factory, params),
    };
    ensure_indexes(&options.indexes, &*handle.informer().indexer(), || {
        handle.id().to_string()
    })?;
    prepare(&*handle.informer().indexer())?;
    let handler_name = format!(
        "{}/{role}/{}",
        ctx.controller,
        W::kind(&W::DynamicType::default())
    );
    let handler =
        EnqueueHandler::new(ctx.queue.clone(), mapping, options.filters).with_gate(ctx.gate);
    let registration =
        handle.add_handler_with(handler, HandlerOptions::new().name(handler_name.clone()));
    let lister: Lister<W> = handle.lister();
    Ok(Related {
        source: Arc::new(InformerSource::shared(
            ctx.factory,
            handle,
            handler_name,
            registration,
        )),
        lister: (TypeId::of::<W>(), Box::new(lister)),
        children: None,
    })
}
