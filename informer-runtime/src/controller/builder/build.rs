//! [`ControllerBuilder::build`], step by step: name the controller, make its queue, get the
//! primary informer (the factory's, or a private one over a custom store), register the
//! indexes, put the controller's handler on every informer, and assemble the runner.

use std::sync::Arc;

use informer_core::{Indexer, Indexers, ListerWatcher, ObjectKey, PriorityQueue, Queue, WorkQueue};
use kube::api::ListParams;

use super::wiring::{Primary, Related, RelatedContext, RelatedFn, TypedIndex, ensure_indexes};
use super::{BuildError, ControllerBuilder, QueueChoice};
use crate::controller::consistency::{Gate, ReconcileClient};
use crate::controller::enqueue::{EnqueueHandler, Mapping};
use crate::controller::owner::OwnerMatcher;
use crate::controller::probe::Probe;
use crate::controller::reconciler::Reconciler;
use crate::controller::runner::{Runner, RunnerState};
use crate::controller::source::{InformerSource, Source, Sources};
use crate::controller::{Controller, ControllerResource, ControllerScope, Filter};
use crate::factory::{InformerFactory, InformerParams};
use crate::informer::{HandlerOptions, SharedIndexInformer};
use crate::lister_watcher::KubeListerWatcher;
use crate::metrics::WorkqueueHooks;
use crate::reflector::ReflectorConfig;

impl<K: ControllerResource> ControllerBuilder<K> {
    /// Builds the controller with `reconciler`. Its handlers are registered at once (keys
    /// start queueing as soon as the informers run); nothing is reconciled before
    /// [`Controller::run`] (or a [`Manager`](crate::manager::Manager)) runs it.
    ///
    /// # Errors
    /// See [`BuildError`].
    ///
    /// # Panics
    /// As [`InformerFactory::informer`]: if an informer must be created by a factory made
    /// with [`InformerFactory::without_client`] (register it first with
    /// [`InformerFactory::informer_from`]).
    pub fn build(
        self,
        reconciler: impl Reconciler<K> + 'static,
    ) -> Result<Controller<K>, BuildError> {
        let name = controller_name::<K>(self.name);
        let queue = self.queue.make(&name, self.hooks.clone());
        let (informer, primary) = match self.store {
            Some(store) => {
                let client = self.client;
                private_informer(
                    &self.factory,
                    &self.params,
                    store,
                    self.source,
                    client,
                    &name,
                )?
            }
            None => shared_informer(&self.factory, &self.params, self.source, self.informer),
        };
        add_indexes(&informer, &primary, self.indexers, &self.typed_indexes)?;
        let gate = self.read_your_writes.then_some(&self.gate);
        let primary = register_primary(
            &self.factory,
            &informer,
            primary,
            PrimaryHandler {
                queue: &queue,
                filters: self.filters,
                name: &name,
                resync: self.resync,
                gate,
            },
        );
        let owner = OwnerMatcher::of::<K>();
        let ctx = RelatedContext {
            factory: &self.factory,
            namespace: self.params.namespace.as_deref(),
            queue: &queue,
            controller: &name,
            owner: &owner,
            gate,
        };
        let (related, listers): (Vec<_>, Vec<_>) = wire_related(self.related, &ctx)?
            .into_iter()
            .map(|r| (r.source, r.lister))
            .unzip();
        let sources = Arc::new(Sources::new([primary].into_iter().chain(related).collect()));
        // The primary's cache first: a write to a primary object holds its own reconcile.
        self.gate
            .set_caches(sources.list().iter().map(|s| s.cache()).collect());
        let gate = self.read_your_writes.then_some(self.gate);
        let reconcile_client = Arc::new(ReconcileClient::new(
            self.factory.client().cloned(),
            gate.clone(),
        ));

        let state = Arc::new(RunnerState::new(name, queue, self.hooks, self.workers));
        let probe = Arc::new(Probe {
            state: state.clone(),
            sources: sources.clone(),
        });
        let runner = Arc::new(Runner {
            state,
            reconciler: Arc::new(reconciler),
            cache: informer.store(),
            gate,
            timeout: self.timeout,
            shutdown_timeout: self.shutdown_timeout,
        });
        Ok(Controller {
            runner,
            sources,
            probe,
            lister: informer.lister(),
            listers,
            factory: self.factory,
            reconcile_client,
        })
    }
}

/// The given name, or the kind of `K` in lowercase.
fn controller_name<K: ControllerResource>(name: Option<String>) -> Arc<str> {
    name.unwrap_or_else(|| K::kind(&K::DynamicType::default()).to_lowercase())
        .into()
}

impl QueueChoice {
    /// The queue, named after the controller, reporting to `hooks`.
    fn make(self, name: &str, hooks: Arc<WorkqueueHooks>) -> Arc<dyn Queue<ObjectKey>> {
        match self {
            QueueChoice::Work => Arc::new(WorkQueue::builder().name(name).metrics(hooks).build()),
            QueueChoice::Priority => {
                Arc::new(PriorityQueue::builder().name(name).metrics(hooks).build())
            }
            QueueChoice::Custom(make) => make(hooks),
        }
    }
}

/// The controller's own informer filling `store` (which must be empty), listing through
/// `source`, or else through `client`; managed fields dropped if the factory drops them.
fn private_informer<K: ControllerResource>(
    factory: &InformerFactory,
    params: &InformerParams,
    store: Arc<dyn Indexer<K>>,
    source: Option<Arc<dyn ListerWatcher<K>>>,
    client: Option<kube::Client>,
    name: &str,
) -> Result<(SharedIndexInformer<K>, Primary<K>), BuildError> {
    if !store.is_empty() {
        return Err(BuildError::StoreNotEmpty(store.len()));
    }
    let drop_managed_fields = factory.drops_managed_fields();
    // A KubeListerWatcher skips managed fields while decoding; a source of one's own needs
    // the transform.
    let transform_managed_fields = drop_managed_fields && source.is_some();
    let lw: Arc<dyn ListerWatcher<K>> = match (source, client) {
        (Some(lw), _) => lw,
        (None, Some(client)) => Arc::new(
            KubeListerWatcher::new(<K::Scope as ControllerScope>::api::<K>(
                client,
                params.namespace.as_deref(),
            ))
            .dropping_managed_fields(drop_managed_fields),
        ),
        (None, None) => return Err(BuildError::StoreWithoutSource),
    };
    let config = ReflectorConfig {
        list_params: ListParams {
            label_selector: params.label_selector.clone(),
            field_selector: params.field_selector.clone(),
            ..ReflectorConfig::default().list_params
        },
        ..ReflectorConfig::default()
    };
    let mut informer = SharedIndexInformer::builder(lw)
        .store(store)
        .reflector_config(config);
    if transform_managed_fields {
        informer = informer.drop_managed_fields();
    }
    let dt = K::DynamicType::default();
    let label = format!(
        "{}.{} (cache of controller {name})",
        K::plural(&dt),
        K::version(&dt)
    );
    Ok((informer.build(), Primary::Private(label)))
}

/// The factory's informer of `K`: registered from `source` if given, made by `make` (a
/// metadata-only informer) if given, the default informer of `K`'s scope otherwise.
fn shared_informer<K: ControllerResource>(
    factory: &InformerFactory,
    params: &InformerParams,
    source: Option<Arc<dyn ListerWatcher<K>>>,
    make: Option<super::MakeInformer<K>>,
) -> (SharedIndexInformer<K>, Primary<K>) {
    let handle = match (source, make) {
        (Some(lw), _) => factory.informer_from(params.clone(), move || lw),
        (None, Some(make)) => make(factory, params.clone()),
        (None, None) => <K::Scope as ControllerScope>::informer::<K>(factory, params.clone()),
    };
    (handle.informer().clone(), Primary::Shared(handle))
}

/// Adds the named indexes (all or none) and registers the typed ones on the primary cache.
fn add_indexes<K: ControllerResource>(
    informer: &SharedIndexInformer<K>,
    primary: &Primary<K>,
    indexers: Vec<(String, informer_core::IndexFn<K>)>,
    typed: &[TypedIndex<K>],
) -> Result<(), BuildError> {
    if !indexers.is_empty() {
        let names: Vec<String> = indexers.iter().map(|(n, _)| n.clone()).collect();
        let indexers: Indexers<K> = indexers.into_iter().collect();
        informer
            .add_indexers(indexers)
            .map_err(|source| BuildError::Index {
                name: names.join(","),
                informer: primary.label(),
                source,
            })?;
    }
    ensure_indexes(typed, &*informer.indexer(), || primary.label())
}

/// What the handler on the primary informer needs.
struct PrimaryHandler<'a, K> {
    queue: &'a Arc<dyn Queue<ObjectKey>>,
    filters: Vec<Filter<K>>,
    name: &'a str,
    resync: Option<std::time::Duration>,
    gate: Option<&'a Arc<Gate>>,
}

/// Puts the controller's handler (own keys, filtered) on the primary informer.
fn register_primary<K: ControllerResource>(
    factory: &InformerFactory,
    informer: &SharedIndexInformer<K>,
    primary: Primary<K>,
    handler: PrimaryHandler<'_, K>,
) -> Arc<dyn Source> {
    let PrimaryHandler {
        queue,
        filters,
        name,
        resync,
        gate,
    } = handler;
    let registration = informer.add_handler_with(
        EnqueueHandler::new(queue.clone(), Mapping::Own, filters).with_gate(gate),
        HandlerOptions::new().name(name).resync_period(resync),
    );
    match primary {
        Primary::Private(label) => Arc::new(InformerSource::private(
            label,
            informer.clone(),
            name.to_owned(),
            registration,
        )),
        Primary::Shared(handle) => Arc::new(InformerSource::shared(
            factory,
            handle,
            name.to_owned(),
            registration,
        )),
    }
}

/// Wires every owned and watched type, in the order they were added.
fn wire_related(
    related: Vec<RelatedFn>,
    ctx: &RelatedContext<'_>,
) -> Result<Vec<Related>, BuildError> {
    related.into_iter().map(|wire| wire(ctx)).collect()
}
