//! [`ControllerBuilder::build`], step by step: name the controller, make its queue, get the
//! primary informer (the factory's, or a private one over a custom store), register the
//! indexes, put the controller's handler on every informer, and assemble the runner.

use std::sync::Arc;

use informer_core::{Indexer, Indexers, ListerWatcher, ObjectKey, PriorityQueue, Queue, WorkQueue};
use kube::api::ListParams;

use super::wiring::{Primary, Related, RelatedContext, RelatedFn, TypedIndex, ensure_indexes};
use super::{BuildError, ControllerBuilder, QueueChoice};
use crate::controller::children::{NoReconcile, WithChildren};
use crate::controller::consistency::{Gate, ReconcileClient};
use crate::controller::enqueue::{EnqueueHandler, Mapping};
use crate::controller::finalizer::{FinalizerStep, OwnFinalizer, finalizer_name_problem};
use crate::controller::owner::OwnerMatcher;
use crate::controller::probe::Probe;
use crate::controller::reconciler::KeyReconciler;
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
        reconciler: impl KeyReconciler<K> + 'static,
    ) -> Result<Controller<K>, BuildError> {
        if let Some((_, name)) = self
            .child_types
            .iter()
            .enumerate()
            .find(|(i, (id, _))| self.child_types[..*i].iter().any(|(other, _)| other == id))
            .map(|(_, t)| *t)
        {
            return Err(BuildError::ChildrenTwice(name));
        }
        if let Some(finalizer) = &self.finalizer
            && let Some(problem) = finalizer_name_problem(finalizer)
        {
            return Err(BuildError::Finalizer {
                name: finalizer.clone(),
                problem,
            });
        }
        if let Some(error) = self.malformed_selector {
            return Err(error);
        }
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
                params: &self.params,
                resync: self.resync,
                gate,
            },
        );
        let reconcile_client = Arc::new(ReconcileClient::new(
            self.factory.client().cloned(),
            gate.cloned(),
        ));
        let owner = OwnerMatcher::of::<K>();
        let parents = informer.lister();
        let ctx = RelatedContext {
            factory: &self.factory,
            namespace: self.params.namespace.as_deref(),
            queue: &queue,
            controller: &name,
            owner: &owner,
            gate,
            client: &reconcile_client,
            parents: &parents,
            parent_view: &self.params,
        };
        let mut related = Vec::new();
        let mut listers = Vec::new();
        let mut children = Vec::new();
        for wired in wire_related(self.related, &ctx)? {
            related.push(wired.source);
            listers.push(wired.lister);
            children.extend(wired.children);
        }
        let sources = Arc::new(Sources::new([primary].into_iter().chain(related).collect()));
        // The primary's cache first: a write to a primary object holds its own reconcile.
        self.gate
            .set_caches(sources.list().iter().map(|s| s.cache()).collect());
        let gate = self.read_your_writes.then_some(self.gate);
        // Namespaces first: the other children may be in them.
        children.sort_by_key(|set| !set.makes_namespaces());
        if let Some(make) = self.status {
            children.push(make(reconcile_client.clone(), name.to_string()));
        }
        let reconciler: Arc<dyn KeyReconciler<K>> =
            if children.is_empty() && self.validate.is_none() && self.finalizer.is_none() {
                Arc::new(reconciler)
            } else {
                // Children, status and finalizer are written during reconciles: attribute
                // their writes.
                reconcile_client.handed_out();
                let finalizer = self.finalizer.map(|finalizer| {
                    Arc::new(FinalizerStep {
                        name: finalizer,
                        client: reconcile_client.clone(),
                    }) as Arc<dyn OwnFinalizer<K>>
                });
                Arc::new(WithChildren {
                    controller: name.clone(),
                    validate: self.validate,
                    finalizer,
                    children,
                    inner: reconciler,
                })
            };

        let state = Arc::new(RunnerState::new(name, queue, self.hooks, self.workers));
        let probe = Arc::new(Probe {
            state: state.clone(),
            sources: sources.clone(),
        });
        let runner = Arc::new(Runner {
            state,
            reconciler,
            cache: informer.store(),
            gate,
            timeout: self.timeout,
            shutdown_timeout: self.shutdown_timeout,
        });
        Ok(Controller {
            runner,
            sources,
            probe,
            lister: parents,
            listers,
            factory: self.factory,
            reconcile_client,
            used: false,
        })
    }

    /// Builds a controller whose only work is its declared
    /// [`children`](Self::children): as [`build`](Self::build) with a reconciler that does
    /// nothing more.
    ///
    /// # Errors
    /// See [`BuildError`].
    ///
    /// # Panics
    /// As [`build`](Self::build).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use informer_runtime::controller::Controller;
    /// # use informer_runtime::factory::{InformerFactory, InformerParams};
    /// # use informer_testing::MemoryListerWatcher;
    /// use k8s_openapi::api::core::v1::{ConfigMap, Secret};
    /// # let factory = InformerFactory::without_client();
    /// # let _s = factory.informer_from(InformerParams::all(), || Arc::new(MemoryListerWatcher::<Secret>::new()));
    /// # let _c = factory.informer_from(InformerParams { label_selector: Some("informer.dev/controller=secret".into()), ..InformerParams::all() }, || Arc::new(MemoryListerWatcher::<ConfigMap>::new()));
    /// let controller = Controller::<Secret>::builder(&factory)
    ///     .children(|_: &Secret| None::<ConfigMap>)
    ///     .build_children_only()
    ///     .unwrap();
    /// assert!(controller.lister_of::<ConfigMap>().is_some(), "children are watched");
    /// ```
    pub fn build_children_only(self) -> Result<Controller<K>, BuildError> {
        self.build(NoReconcile)
    }
}

/// The given name, or the kind of `K` in lowercase.
pub(super) fn controller_name<K: ControllerResource>(name: Option<String>) -> Arc<str> {
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
    params: &'a InformerParams,
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
        params,
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
            params.clone(),
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

/// Wires every owned, watched and child type, in the order they were added.
fn wire_related<K>(
    related: Vec<RelatedFn<K>>,
    ctx: &RelatedContext<'_, K>,
) -> Result<Vec<Related<K>>, BuildError> {
    related.into_iter().map(|wire| wire(ctx)).collect()
}
