//! client-go, controller-runtime, kube-runtime and java-operator-sdk names, and what they are
//! here.
//!
//! Use it to port a controller or a test: find the name you know, then follow the link. The
//! tables hold the names people use, not all 577 exported names of client-go v0.36's
//! `tools/cache`, `util/workqueue` and `tools/leaderelection`. A `stopCh` or `ctx` is a
//! `CancellationToken` (tokio-util's, in the prelude) everywhere, and a call that blocks in
//! Go is an `async fn` here.
//!
//! # Stores and indexers
//!
//! | client-go | here | note |
//! | --- | --- | --- |
//! | `cache.NewStore(cache.MetaNamespaceKeyFunc)` | [`ThreadSafeStore::new`] | keys are `namespace/name` |
//! | `cache.NewIndexer(keyFunc, indexers)` | [`ThreadSafeStore::with_key_fn`], [`ThreadSafeStore::with_indexers`] | |
//! | `Store`, `Indexer`, `ThreadSafeStore` | [`Store`], [`Indexer`], [`ThreadSafeStore`] | traits and a struct |
//! | `Store.Add`, `Update` | [`Store::add`], [`Store::update`] | return the replaced object |
//! | `Store.Delete(obj)` | [`Store::delete`] | by key |
//! | `Store.Get(obj)` | [`Store::key_of`], then [`Store::get`] | |
//! | `Store.GetByKey(key)` | [`Store::get`] | an `Option` |
//! | `Store.List`, `ListKeys` | [`Store::list`], [`Store::list_keys`] | |
//! | `Store.Replace(list, rv)` | [`Store::replace`] | returns a [`ReplaceDiff`] |
//! | `Indexer.ByIndex`, `IndexKeys` | [`Indexer::by_index`], [`Indexer::index_keys`] | |
//! | `AddIndexers`, `GetIndexers` | [`Indexer::add_indexers`], [`Indexer::index_names`] | names, not functions |
//! | `cache.Indexers`, `IndexFunc` | [`Indexers`], [`IndexFn`], [`index_fn`] | returns `Vec<String>`, no error |
//! | `cache.NamespaceIndex`, `MetaNamespaceIndexFunc` | [`NAMESPACE_INDEX`] | built into every store: leave `Indexers{NamespaceIndex: MetaNamespaceIndexFunc}` out (adding it again is [`IndexError::Conflict`]) |
//! | `KeyFunc` | [`KeyFn`] | a plain `fn` |
//! | `MetaNamespaceKeyFunc` | [`resource_key`], [`ObjectKey::from_resource`] | |
//! | `ObjectName`, `NewObjectName` | [`ObjectKey`], [`ObjectKey::new`] | namespace is an `Option` |
//! | `SplitMetaNamespaceKey`, `ParseObjectName` | `key.parse::<`[`ObjectKey`]`>()`, [`ObjectKey::namespace`], [`ObjectKey::name`] | an empty name is refused |
//! | `DeletionHandlingMetaNamespaceKeyFunc` | [`Deleted::key`], [`Notification::key`] | `None` where Go errs |
//!
//! # FIFOs
//!
//! | client-go | here | note |
//! | --- | --- | --- |
//! | `NewRealFIFOWithOptions` | [`RealFifo::new`], [`RealFifo::with_batch_size`] | the informer's default |
//! | `NewDeltaFIFOWithOptions` | [`DeltaFifo::new`], [`DeltaFifo::with_key_fn`] | `KnownObjects` is the argument |
//! | `NewFIFO` | [`ObjectFifo::new`] | latest object per key |
//! | `cache.Queue`, `ReflectorStore` | [`Fifo`] | the FIFO trait |
//! | `Delta`, `DeltaType` (`Added` … `Bookmark`) | [`Delta`] | one enum: type and object |
//! | `Deltas.Oldest`, `Newest` | `first()`, `last()` of the `Vec<`[`Delta`]`>` | |
//! | `Pop(process)`, `PopBatch` | [`Fifo::pop`] | async; hands over a batch |
//! | `Add`, `Update`, `Delete`, `Replace`, `Resync` | [`Fifo::add`], [`Fifo::update`], [`Fifo::delete`], [`Fifo::replace`], [`Fifo::resync`] | |
//! | `HasSynced`, `Close`, `IsClosed` | [`Fifo::has_synced`], [`Fifo::close`], [`Fifo::is_closed`] | |
//! | `ErrFIFOClosed` | [`FifoError::Closed`] | |
//! | `EmitDeltaTypeReplaced` | [`Delta::Replaced`] | always on |
//!
//! # Reflector and ListerWatcher
//!
//! | client-go | here | note |
//! | --- | --- | --- |
//! | `ListerWatcher`, `ListerWatcherWithContext` | [`ListerWatcher`] | async `list` and `watch` |
//! | `NewListWatchFromClient`, `NewFilteredListWatchFromClient` | [`KubeListerWatcher::new`] on a `kube::Api` | selectors: [`ReflectorConfig::list_params`] |
//! | `metadatainformer` | [`KubeListerWatcher::metadata`], [`MetadataListerWatcher`] | |
//! | `NewReflectorWithOptions`, `ReflectorOptions` | [`Reflector::new`], [`ReflectorConfig`], [`Reflector::with_name`] | |
//! | `Reflector.Run`, `RunWithContext` | [`Reflector::run`] | until cancelled |
//! | `Reflector.ListAndWatch` | [`Reflector::run`], [`Reflector::last_error`] | loops; keeps the last error |
//! | `Reflector.LastSyncResourceVersion` | [`Reflector::last_sync_resource_version`] | |
//! | `WatchErrorHandler`, `SetWatchErrorHandler` | [`WatchErrorHandler`], [`Reflector::with_watch_error_handler`], [`InformerBuilder::watch_error_handler`]; on a factory's informer, [`SharedIndexInformer::set_watch_error_handler`] | before the informer starts |
//! | `WatchListClient` (streaming lists) | [`ReflectorConfig::streaming_list`] | opt-in |
//!
//! # Shared informers and handlers
//!
//! | client-go | here | note |
//! | --- | --- | --- |
//! | `NewSharedIndexInformer(lw, obj, resync, indexers)` | [`SharedIndexInformer::new`], or [`SharedIndexInformer::builder`] … [`InformerBuilder::build`]; [`SharedIndexInformer::add_indexers`] | |
//! | `SharedIndexInformerOptions`, `NewInformerWithOptions` | [`InformerBuilder`] | store, FIFO, transform, resync |
//! | `ResyncPeriod` | [`InformerBuilder::default_resync`] | |
//! | `SetTransform`, `TransformFunc` | [`InformerBuilder::transform`]; on a built informer (a factory's), [`SharedIndexInformer::set_transform`] | before the informer starts; once |
//! | `Run(stopCh)`, `RunWithContext` | [`SharedIndexInformer::run`] | |
//! | `HasSynced`, `InformerSynced` | [`SharedIndexInformer::has_synced`], [`SharedIndexInformer::wait_for_sync`] | the wait is a future |
//! | `GetStore`, `GetIndexer` | [`SharedIndexInformer::store`], [`SharedIndexInformer::indexer`] | |
//! | `AddEventHandler` | [`SharedIndexInformer::add_handler`] with [`SharedIndexInformer::default_resync`] | `None` is no resync, not the informer's default |
//! | `AddEventHandlerWithResyncPeriod` | [`SharedIndexInformer::add_handler`]`(h, Some(d))` | at least [`MIN_RESYNC_PERIOD`] (1 s) |
//! | `AddEventHandlerWithOptions`, `HandlerOptions` | [`SharedIndexInformer::add_handler_with`], [`HandlerOptions`] | |
//! | `RemoveEventHandler(reg)` | [`HandlerRegistration::remove`] | |
//! | `ResourceEventHandlerRegistration.HasSynced` | [`HandlerRegistration::has_synced`], [`HandlerRegistration::wait_synced`] | |
//! | `ResourceEventHandler` | [`Handler`] | any `Fn(&Notification<K>)` is one |
//! | `ResourceEventHandlerFuncs`, `ResourceEventHandlerDetailedFuncs` | [`HandlerFns::new`], [`HandlerFns::on_add`], [`HandlerFns::on_update`], [`HandlerFns::on_delete`] | `on_add` gets `is_initial_list` |
//! | `DeletedFinalStateUnknown` | [`Deleted::FinalStateUnknown`] (else [`Deleted::Object`]) | an enum, not a type switch |
//! | `FilteringResourceEventHandler` | [`FilteringHandler::new`] | filters on `&K` |
//! | `cache.WaitForCacheSync(stopCh, synced...)` | [`wait_for_cache_sync`] | futures in, `bool` out |
//! | `cache.WaitForNamedCacheSync` | [`wait_for_named_cache_sync`] | logs as Go does |
//! | `informers.NewSharedInformerFactory(client, resync)` | [`InformerFactory::new`], [`InformerFactory::default_resync`] | |
//! | `WithNamespace`, `WithTweakListOptions` | [`InformerParams::namespaced`], [`InformerParams::labels`], [`InformerParams::fields`] | per informer |
//! | `factory.Core().V1().Pods().Informer()` | [`InformerFactory::informer`] | keep the [`InformerHandle`] |
//! | `factory.Start`, `Shutdown` | [`InformerFactory::start`], [`InformerFactory::shutdown`] | |
//! | `factory.WaitForCacheSync` | [`InformerFactory::wait_for_sync`] | a timeout; says which did not sync |
//! | `dynamicinformer.NewDynamicSharedInformerFactory` | [`InformerFactory::dynamic_informer`] | `DynamicObject`s |
//! | `factory.InformerFor(obj, newFunc)` with a custom `Indexer` | [`InformerFactory::informer_with_store`], [`InformerFactory::cluster_informer_with_store`] | the first caller's store is the cache |
//!
//! # Listers
//!
//! | client-go | here | note |
//! | --- | --- | --- |
//! | `informer.Lister()` | [`SharedIndexInformer::lister`], [`Lister::new`] | |
//! | `lister.Pods(ns).Get(name)` | [`Lister::namespaced`], [`NamespacedLister::get`] | `None`, not NotFound |
//! | `lister.List(selector)` | [`Lister::list_matching`], [`Lister::list_by_labels`], [`Lister::list`] | |
//! | `lister.Pods(ns).List(selector)` | [`NamespacedLister::list_matching`], [`NamespacedLister::list_by_labels`], [`NamespacedLister::list`] | `""` (`metav1.NamespaceAll`) lists every namespace, as in Go |
//! | `cache.ListAll`, `ListAllByNamespace` | the same methods | `""` is cluster-scoped here |
//! | `GetIndexer().ByIndex(name, value)` | [`Lister::by_index_name`], or typed [`Lister::by_index`] with an [`Index`] | |
//! | `GenericLister`, `NewGenericLister` | [`Lister`] of `DynamicObject` from [`InformerFactory::dynamic_informer`] | |
//!
//! # Workqueues and rate limiters
//!
//! | client-go | here | note |
//! | --- | --- | --- |
//! | `workqueue.NewTyped`, `NewTypedDelayingQueue` | [`WorkQueue::new`] | one type: delaying and rate-limited |
//! | `NewTypedRateLimitingQueue(limiter)` | [`WorkQueue::with_rate_limiter`] | with `DefaultTypedControllerRateLimiter()`: [`WorkQueue::new`] |
//! | `NewTypedRateLimitingQueueWithConfig(limiter, config)` | [`WorkQueue::builder`], [`QueueBuilder::rate_limiter`], [`QueueBuilder::build`] | |
//! | `TypedRateLimitingQueueConfig.Name`, `MetricsProvider` | [`QueueBuilder::name`], [`QueueBuilder::metrics`] | `Clock`: tokio's |
//! | `TypedRateLimitingInterface` | [`Queue`] | all the methods below |
//! | `Add`, `Len` | [`Queue::add`], [`Queue::len`] | `len` counts ready items |
//! | `Get() (item, shutdown)` | [`Queue::get`] | `None` once shut down |
//! | `Done` | [`Queue::done`] | |
//! | `key, _ := q.Get(); defer q.Done(key)` | [`take`]`(&queue).await` | a guard that calls `done` when dropped, also when the worker's future is (a task's term ended, a timeout) |
//! | `AddAfter` | [`Queue::add_after`] | the earlier time wins; an `add` makes it ready now (see below) |
//! | the `waitingForDepth` gauge (items waiting for their time) | [`QueueStats::delayed`] | |
//! | `AddRateLimited`, `Forget`, `NumRequeues` | [`Queue::add_rate_limited`], [`Queue::forget`], [`Queue::num_requeues`] | |
//! | `ShutDown`, `ShuttingDown` | [`Queue::shut_down`], [`Queue::is_shutting_down`] | |
//! | `ShutDownWithDrain` | [`Queue::shut_down_with_drain`] | `false` is v0.36's behaviour |
//! | `TypedRateLimiter` (`When`, `Forget`, `NumRequeues`) | [`RateLimiter`] | |
//! | `DefaultTypedControllerRateLimiter` | [`default_controller_rate_limiter`] | 5 ms to 1000 s, 10 qps, burst 100 |
//! | `DefaultTypedItemBasedRateLimiter` | [`default_item_based_rate_limiter`] | 1 ms to 1000 s |
//! | `NewTypedItemExponentialFailureRateLimiter` | [`ItemExponentialFailureRateLimiter::new`] | |
//! | `NewTypedItemFastSlowRateLimiter` | [`ItemFastSlowRateLimiter::new`] | |
//! | `TypedBucketRateLimiter` | [`BucketRateLimiter::new`] | qps and burst |
//! | `NewTypedMaxOfRateLimiter` | [`MaxOfRateLimiter::new`] | |
//! | `workqueue.MetricsProvider`, `SetProvider` | [`QueueMetrics`], [`Metrics`] | per queue, no global provider; a queue of your own under client-go's `workqueue_*` names, beside a manager's controllers: [`Metrics::work_queue`] (`manager.metrics().work_queue("foos", WorkQueue::builder())`) |
//!
//! # Leader election
//!
//! | client-go | here | note |
//! | --- | --- | --- |
//! | `LeaderElectionConfig` | [`LeaderElectionConfig::new`], [`LeaderElectionConfig::for_client`] | client-go's default timings |
//! | `Lock` (a `resourcelock.LeaseLock`) | [`lease_name`], [`namespace`], [`identity`] | a Lease is the only lock |
//! | `LeaseDuration`, `RenewDeadline`, `RetryPeriod` | [`timings`] ([`LeaseTimings`]), [`LeaderElectionConfig::with_timings`] | |
//! | `ReleaseOnCancel` | [`release_on_cancel`] | on by default |
//! | `Name` | [`lease_name`] | names the health check's error |
//! | `Callbacks.OnStartedLeading(ctx)` | [`LeaderElector::subscribe`], [`LeaderState::Leading`] | its `term` token is the `ctx` |
//! | `Callbacks.OnStoppedLeading` | [`LeaderState::Leading`]'s `term` is cancelled | the usual `klog.Fatal` there: [`Manager::exit_on_leader_loss`] (a manager's default keeps the replica on as a warm standby) |
//! | `Callbacks.OnNewLeader(identity)` | [`LeaderState::Standby`] | its `holder` |
//! | `WatchDog`, `NewLeaderHealthzAdaptor` | [`HealthzAdaptor::new`], [`HealthzAdaptor::set_leader_elector`] | a [`Manager`] wires it |
//! | `NewLeaderElector` | [`LeaderElector::try_new`] | the same config checks |
//! | `RunOrDie` | [`LeaderElector::new`], then [`LeaderElector::run`]; the callbacks: a loop over [`LeaderElector::subscribe`] (the example in [`leader`](crate::runtime::leader)) | `new` panics on a bad config; the loop ends on the shutdown token, not on the channel |
//! | `IsLeader`, `GetLeader` | [`LeaderElector::is_leader`], [`LeaderElector::leader`] | `None` for Go's `""` |
//! | `Check(maxTolerableExpiredLease)` | [`LeaderElector::check`], [`HealthzAdaptor::check`] | |
//!
//! # Utilities
//!
//! | client-go and apimachinery | here | note |
//! | --- | --- | --- |
//! | `workqueue.ParallelizeUntil(ctx, workers, pieces, f, opts)` | [`parallelize_until`] | returns the pieces run |
//! | `workqueue.WithChunkSize(n)` | [`ParallelizeOptions::with_chunk_size`] | |
//! | `retry.RetryOnConflict(retry.DefaultRetry, f)` | [`retry_on_conflict`], [`RetryBackoff::DEFAULT_RETRY`] | async |
//! | `retry.OnError(backoff, retriable, f)` | [`on_error`] | |
//! | `wait.Backoff`, `retry.DefaultBackoff` | [`RetryBackoff`], [`RetryBackoff::DEFAULT_BACKOFF`] | |
//! | `apierrors.IsConflict` | [`is_conflict`] | |
//! | `events.NewBroadcaster`, `NewRecorder(scheme, name)` | [`EventRecorder::new`], [`Reporter::new`] | |
//! | `recorder.Eventf(obj, related, type, reason, action, note)` | [`EventRecorder::record_for`] with an [`Event`] (in the background, 12 tries as client-go's broadcaster), or [`EventRecorder::publish_for`] to await it and see its error | `events.k8s.io/v1`, with series |
//! | `corev1.EventTypeNormal`, `EventTypeWarning` | [`EventType`] | |
//! | `tools/record`: `record.NewBroadcaster()`, `recorder.Event(obj, type, reason, message)` (core v1 Events) | [`EventRecorder::publish_for`] with an [`Event`] whose `note` is the message | written as `events.k8s.io/v1` Events (`kubectl describe` and `get events` show them as any Event); `action` is required (what the controller did: `Sync`, `Create`); a repeat about a changed object starts a new Event, as `tools/events` does (the reference carries the `resourceVersion`), where `tools/record` counts it in one: [`EventRecorder::publish`] with a reference without `resourceVersion` counts every repeat on an object in one series |
//! | `meta.SetStatusCondition`, `RemoveStatusCondition` | [`set_status_condition`], [`remove_status_condition`] | |
//! | `meta.FindStatusCondition`, `IsStatusConditionTrue`, `False`, `PresentAndEqual` | [`find_status_condition`], [`is_status_condition_true`], [`is_status_condition_false`], [`is_status_condition_present_and_equal`] | |
//! | `metav1.GetControllerOf` | [`controller_owner`] | the owner's key |
//! | `metav1.IsControlledBy` | [`is_controlled_by`] | compares UIDs |
//! | `metav1.NewControllerRef` | kube's `Resource::controller_owner_ref` | |
//!
//! # Deliberately different
//!
//! - **Tombstones are an enum**, [`Deleted`]: a delete handler cannot forget
//!   `DeletedFinalStateUnknown`.
//! - **Panics and `Option`s instead of some errors.** A bad config is a programmer error and
//!   panics where Go's `…OrDie` does, with a `try_` form that returns a `Result`
//!   ([`LeaderElector::try_new`]); a lookup returns an `Option`, not `exists` or NotFound.
//! - **Async.** What blocks in Go (`Get`, `Pop`, `Run`, cache syncs) is a future here. A
//!   dropped future is cancelled, so there are no `…WithContext` variants.
//! - **An informer that ran stops with its last [`InformerHandle`]**, so that dynamic
//!   watches can end; listers do not keep it running. During setup, client-go's idiom
//!   works: an informer whose handle was dropped before it started, with a handler
//!   registered or a lister taken, is kept by the factory until it shuts down.
//! - **[`KeyFn`] is a plain `fn`**, so a key function holds no state and
//!   `IndexFuncToKeyFuncAdapter` has no counterpart.
//! - **No `MutationCache`.** A controller reads its own writes instead
//!   ([`ControllerBuilder::read_your_writes`]): a key waits until the caches have seen its
//!   last write.
//! - **No `MutationDetector`.** Cached objects are `Arc<K>`, which a reader cannot change.
//! - **`ShutDownWithDrain` takes a flag.** `false` waits for the items in flight, as
//!   v0.36 does; `true` also drains the queued ones.
//! - **An item waits for one time only.** In client-go, `Add` leaves a pending `AddAfter`
//!   in place: the item is processed now and again when its time comes. Here an `add` (or
//!   an earlier `add_after`) makes the delayed item ready and its later time is dropped, as
//!   in controller-runtime's priority queue, so a key is not reconciled twice for one
//!   change. A wake-up that must survive other events belongs in the reconcile's answer
//!   ([`Action::RequeueAfter`], given again by each reconcile), not in a handler's
//!   `add_after`.
//! - **No `resyncCheckPeriod`.** Each handler's resync runs on its own schedule, so nothing
//!   informer-wide is adjusted when handlers come and go;
//!   [`HandlerRegistration::resync_period`] is a handler's period (at least 1 s).
//! - **Stores have no `Resync`.** It is a no-op on every Go store; resync is a FIFO
//!   operation ([`Fifo::resync`]).
//! - **Indexers may be added after an informer started** ([`SharedIndexInformer::add_indexers`]
//!   indexes what is cached already); client-go refuses ("informer has already started").
//! - **A handler added to a stopped informer** gets a registration that never syncs
//!   ([`HandlerRegistration::wait_synced`] answers `false`) instead of an error.
//!
//! # Not here
//!
//! - `ListWatch` with `ListFunc` and `WatchFunc`: implement [`ListerWatcher`]; in tests,
//!   `informer::testing::MemoryListerWatcher` (feature `testing`), which is also
//!   client-go's `FakeControllerSource` (`Add`, `Modify`, `Delete` are `create`, `update`,
//!   `delete`; `AddDropWatch`, `ModifyDropWatch`, `DeleteDropWatch` are
//!   `create_dropping_watch`, `update_dropping_watch`, `delete_dropping_watch`).
//! - A pluggable workqueue backend (`workqueue.Queue`, `DefaultQueue`) and custom clocks:
//!   the order is sealed, [`QueueWrapper`] is the extension point, and time is tokio's (pause
//!   it in tests).
//! - Locks other than a Lease (`resourcelock.Interface`), and coordinated leader election
//!   (`LeaseCandidate`, `CoordinatedLeaderElection`).
//! - Global metrics providers (`SetReflectorMetricsProvider`, `SetInformerMetricsProvider`):
//!   [`Metrics`] is registered per manager or registry.
//! - `FakeCustomStore` and `FakeExpirationPolicy`: implement [`Store`]; an expiration
//!   policy can be a closure, and a [`FakeClock`] stands in for time.
//! - `synctrack`, `GetController`, `TypeDescription`, `VeryShortWatchError`,
//!   `NamespacedName` conversions: internal to Go, or one line of the API above.
//!
//! # controller-runtime and kube-runtime
//!
//! | controller-runtime; kube-runtime | here | note |
//! | --- | --- | --- |
//! | `reconcile.Reconciler`; the `reconcile` fn | [`KeyReconciler`], [`reconciler_fn`]; with the derive, [`Reconcile`] | |
//! | `reconcile.Request`; `ObjectRef` | [`ObjectKey`] | with the cached object |
//! | `reconcile.Result{}`; `Action::await_change()` | [`Action::Done`], [`Action::await_change`] | |
//! | `Result{RequeueAfter: d}`; `Action::requeue(d)` | [`Action::RequeueAfter`], [`Action::requeue_after`], [`Action::requeue`] | |
//! | `Result{Requeue: true}` | [`Action::Requeue`], [`Action::requeue_rate_limited`] | after the rate-limited backoff |
//! | `reconcile.TerminalError(err)` | [`ReconcileError::terminal`] | not retried |
//! | a returned error; `error_policy` | [`ReconcileError::transient`]; [`KeyReconciler::on_error`], [`Reconcile::on_error`], [`ReconcilerFn::error_policy`] | `Action::requeue(d)` there is a fixed delay; a growing backoff is [`Action::Requeue`] (see `on_error`) |
//! | `NewControllerManagedBy(mgr).For(&T{})`; `Controller::new(api, config)` | [`Manager::controller`], [`Controller::builder`], [`Controller::with_client`]; or `#[derive(`[`ControllerSpec`]`)]` | |
//! | `.Owns(&C{})`; `.owns(api, config)` | [`ControllerBuilder::owns`], [`ControllerBuilder::owns_with`] | |
//! | `.Watches(obj, EnqueueRequestsFromMapFunc(f))`; `.watches(api, config, f)` | [`ControllerBuilder::watches`], [`ControllerBuilder::watches_with`] | the mapper returns keys |
//! | `WithEventFilter`, `WithPredicates`; `predicate_filter` | [`ControllerBuilder::filter`], [`WatchOptions::filter`], [`Filter`] | `filter` is the primary's only (`WithEventFilter` applies to every watch): give `owns`/`watches` their own |
//! | `predicate.GenerationChangedPredicate`; `predicates::generation` | [`Filter::generation_changed`] | also labels, annotations |
//! | `MaxConcurrentReconciles`; `Config::concurrency` | [`ControllerBuilder::workers`] | |
//! | `Options.RateLimiter` | [`ControllerBuilder::queue_with`] | |
//! | `UsePriorityQueue` | [`ControllerBuilder::priority_queue`] | |
//! | `.Complete(r)`; `.run(reconcile, error_policy, ctx)` | [`ControllerBuilder::build`], then [`Manager::add`] or [`Controller::run`] | |
//! | `.shutdown_on_signal()` | [`RunController::run`], [`Manager::handle_signals`] | |
//! | `controllerutil.AddFinalizer`, `RemoveFinalizer`; `finalizer(api, name, obj, f)`; java-operator-sdk's `Cleaner` | [`ControllerBuilder::finalizer`] (derive: `finalizer = "example.com/x"`) with [`KeyReconciler::cleanup`] / [`Reconcile::cleanup`]; or [`finalizer`], [`FinalizerEvent`] inside a reconcile | managed: added before any child is written, the cleanup run instead of the reconcile once the object is being deleted, removed when it answers `Done` (`RequeueAfter` keeps it: JOSDK's `noFinalizerRemoval`); the helper (kube-runtime's) adds, runs and removes from inside `reconcile`, after the declared children (see [`derive`](crate::derive), "Finalizers") |
//! | `controllerutil.SetControllerReference` (an object a reconcile creates itself) | [`set_controller_reference`] | `AlreadyOwnedError` is [`OwnerReferenceError::AlreadyOwned`] |
//! | `r.Status().Update(ctx, obj)`, `Status().Patch`; `Api::patch_status` | [`ControllerBuilder::status`] (derive: `status = f`), or [`Context::apply_status`] in a reconcile or `on_error` | declared: applied only when it changes; both are server-side applies as the controller, with the object's resource version as a precondition |
//! | `controllerutil.CreateOrUpdate`, `SetControllerReference` | [`ControllerBuilder::children`] | server-side apply, owned; an object of the child's name that is not the parent's is refused (sample-controller's `ErrResourceExists`); one controlled by the parent is adopted |
//! | `meta.SetStatusCondition` and the other condition helpers | [`conditions`] | see Utilities |
//! | `mgr.GetEventRecorderFor(name)`; `events::Recorder` | [`Context::recorder`], [`ControllerBuilder::event_recorder`] | |
//! | the cached client's `Get`, `List`; `reflector::Store` | [`Context::lister`], [`Controller::lister`], [`Lister`] | |
//! | kube-runtime's `watcher(api, watcher::Config::default().labels(s))` | [`InformerFactory::informer`] with [`InformerParams::namespaced`] or [`InformerParams::all`] and [`InformerParams::labels`], then [`SharedIndexInformer::add_handler`] | handlers are callbacks, not a stream: send to a channel for async work |
//! | `reflector::store()`, `Store::wait_until_ready`, `Store::state` | [`SharedIndexInformer::lister`], [`InformerFactory::wait_for_sync`], [`Lister::list`] | |
//! | `watcher::Event::Init`, `InitApply`, `InitDone`; `Apply`; `Delete` | [`Notification`]`::Add { is_initial_list: true, .. }`, then [`HandlerRegistration::wait_synced`]; `Add` or `Update { old, new }`; `Delete` | a handler sees the old object too |
//! | `WatchStreamExt::modify`; `.default_backoff()` | [`InformerBuilder::transform`], [`InformerFactory::drop_managed_fields`]; backoff is built in | |
//! | `Api::all_with(client, &ar)` with `watcher` | [`InformerFactory::dynamic_informer`] | |
//! | `mgr.GetFieldIndexer().IndexField` | [`ControllerBuilder::index`], [`ControllerBuilder::indexed_by`], [`#[indexer]`](crate::indexer) | |
//! | `Cache.DefaultNamespaces`; `Api::namespaced` | [`ControllerBuilder::namespace`] | |
//! | `manager.New(config, options)` | [`Manager::new`] | |
//! | `mgr.Start(ctx)` | [`Manager::run`] | also stops on SIGTERM |
//! | `mgr.Add(runnable)`, `NeedLeaderElection` | [`Manager::add_task`], [`Task::new`], [`Task::needs_leader_election`] | |
//! | `LeaderElection`, `LeaderElectionID` | [`Manager::leader_election`], [`LeaderElectionConfig::for_client`] | |
//! | `AddHealthzCheck`, `AddReadyzCheck` | [`Manager::add_healthz_check`], [`Manager::add_readyz_check`] | |
//! | `HealthProbeBindAddress`, `Metrics.BindAddress` | [`Manager::health_probe_address`], [`Manager::metrics_address`] | |
//! | `envtest.Environment` | `informer::testing::envtest::EnvTest` | feature `testing`; a real API server of custom resources only (upstream apiextensions-apiserver): a suite that needs built-in types (Jobs, Deployments) runs on the in-process server |
//! | Gomega's `Eventually`, `Consistently` | `informer::testing::eventually`, `informer::testing::consistently` | feature `testing`; tokio time, so paused time works |
//! | the fake client | `informer::testing::TestApiServer` | feature `testing`; in process |
//!
//! # java-operator-sdk
//!
//! A java-operator-sdk operator maps onto a derived controller (`#[derive(`[`ControllerSpec`]`)]`;
//! the keys are those of its `#[controller(...)]`, see [`derive`](crate::derive)).
//!
//! | java-operator-sdk | here | note |
//! | --- | --- | --- |
//! | `Reconciler<P>.reconcile(resource, context)` | [`Reconcile`] | returns an [`Action`] |
//! | `UpdateControl.patchStatus(resource)` | `status = f`, or [`Context::apply_status`] from a reconcile | `f` is applied after a reconcile that succeeded, when it changes |
//! | `UpdateControl.rescheduleAfter(d)` | [`Action::requeue_after`] | |
//! | `ErrorStatusHandler.updateErrorStatus` | [`Reconcile::on_error`] with [`Context::apply_status`] | the declared status is not applied after a failed reconcile, so the failure stays until one succeeds |
//! | `maxReconciliationInterval` | `resync = "10m"` | passes the built-in `*_changed` filters |
//! | `generationAwareEventProcessing` | `filter = f`, `f` returning [`Filter::generation_changed`] | |
//! | `@Workflow`, `@Dependent`, `KubernetesDependentResource.desired()` | `children(T, from = f)` | server-side apply, owned; deleted when `f` stops returning it |
//! | `dependsOn` | declaration order | each type is applied even when another failed: return a child only once what it needs is ready |
//! | `reconcilePrecondition` | a `from` function that returns `None`, or leaves the child out | the child is deleted |
//! | `activationCondition` | no equivalent for a type the cluster may not serve: a declared child type is always watched, and while its list fails (`404`) the controller waits for its caches; declare such a child only where it is served (a builder step you add when discovery lists the type) | a `from` that returns `None` deletes the child, as `reconcilePrecondition` |
//! | `readyPostcondition` of a dependent that another `dependsOn` | the other's `from` with `fn(&T, &Context<Self>)` reads the first child through the context's listers, checks it is the parent's ([`is_controlled_by`]) and ready for its current spec (`observedGeneration`), and returns its own child only then | written by hand; `None` deletes the existing child, so to keep it while the first one is briefly not ready, return it again when the lister holds it |
//! | `readyPostcondition` reported on the primary | `status = f` with `fn(&T, &Context<Self>)`, reading the children through the context's listers | check ownership and `observedGeneration` as above |
//! | `GenericRetry` (`maxAttempts`, intervals) | [`Reconcile::on_error`]: `ctx.queue().num_requeues(key)` to give up (`Action::Done`) after a number of attempts; the intervals are the queue's rate limiter (`queue = f` with an `ItemExponentialFailureRateLimiter`) | the default limiter: 5 ms doubling to 1000 s per key, with an overall 10 qps bucket (client-go's) |
//! | `Cleaner.cleanup` | [`finalizer`], [`FinalizerEvent`] | the children step runs before it, see [`derive`](crate::derive) |
//! | `InformerEventSource` with a `SecondaryToPrimaryMapper` | `watches(T, mapper = f)` | |
//! | `Context.getSecondaryResource(T.class)` | the context's listers (`ctx.config_maps()`) | typed, from the cache |
//! | `@ControllerConfiguration(namespaces, labelSelector)` | `namespace = "..."` (one namespace, or all), `labels = "..."` | several namespaces: one controller per namespace (`namespace = f`, distinct `name`s); a parent that leaves `labels` loses its declared children here, where JOSDK leaves them |
//! | `LocallyRunOperatorExtension` | `informer::testing::TestApiServer` | feature `testing`; in process |
//!
//!
//! [`ThreadSafeStore::new`]: crate::ThreadSafeStore::new
//! [`ThreadSafeStore::with_key_fn`]: crate::ThreadSafeStore::with_key_fn
//! [`ThreadSafeStore::with_indexers`]: crate::ThreadSafeStore::with_indexers
//! [`ThreadSafeStore`]: crate::ThreadSafeStore
//! [`Store`]: crate::Store
//! [`Indexer`]: crate::Indexer
//! [`Store::add`]: crate::Store::add
//! [`Store::update`]: crate::Store::update
//! [`Store::delete`]: crate::Store::delete
//! [`Store::key_of`]: crate::Store::key_of
//! [`Store::get`]: crate::Store::get
//! [`Store::list`]: crate::Store::list
//! [`Store::list_keys`]: crate::Store::list_keys
//! [`Store::replace`]: crate::Store::replace
//! [`ReplaceDiff`]: crate::store::ReplaceDiff
//! [`Indexer::by_index`]: crate::Indexer::by_index
//! [`Indexer::index_keys`]: crate::Indexer::index_keys
//! [`Indexer::add_indexers`]: crate::Indexer::add_indexers
//! [`Indexer::index_names`]: crate::Indexer::index_names
//! [`Indexers`]: crate::Indexers
//! [`IndexFn`]: crate::IndexFn
//! [`index_fn`]: crate::index_fn
//! [`NAMESPACE_INDEX`]: crate::NAMESPACE_INDEX
//! [`KeyFn`]: crate::KeyFn
//! [`resource_key`]: crate::resource_key
//! [`ObjectKey`]: crate::ObjectKey
//! [`ObjectKey::from_resource`]: crate::ObjectKey::from_resource
//! [`ObjectKey::new`]: crate::ObjectKey::new
//! [`ObjectKey::namespace`]: crate::ObjectKey::namespace
//! [`ObjectKey::name`]: crate::ObjectKey::name
//! [`Deleted`]: crate::Deleted
//! [`Deleted::key`]: crate::Deleted::key
//! [`Deleted::FinalStateUnknown`]: crate::Deleted::FinalStateUnknown
//! [`Deleted::Object`]: crate::Deleted::Object
//! [`Notification::key`]: crate::Notification::key
//! [`FakeClock`]: crate::store::FakeClock
//! [`RealFifo::new`]: crate::RealFifo::new
//! [`RealFifo::with_batch_size`]: crate::RealFifo::with_batch_size
//! [`DeltaFifo::new`]: crate::DeltaFifo::new
//! [`DeltaFifo::with_key_fn`]: crate::DeltaFifo::with_key_fn
//! [`ObjectFifo::new`]: crate::ObjectFifo::new
//! [`Fifo`]: crate::Fifo
//! [`Delta`]: crate::Delta
//! [`Delta::Replaced`]: crate::Delta::Replaced
//! [`Fifo::pop`]: crate::Fifo::pop
//! [`Fifo::add`]: crate::Fifo::add
//! [`Fifo::update`]: crate::Fifo::update
//! [`Fifo::delete`]: crate::Fifo::delete
//! [`Fifo::replace`]: crate::Fifo::replace
//! [`Fifo::resync`]: crate::Fifo::resync
//! [`Fifo::has_synced`]: crate::Fifo::has_synced
//! [`Fifo::close`]: crate::Fifo::close
//! [`Fifo::is_closed`]: crate::Fifo::is_closed
//! [`FifoError::Closed`]: crate::FifoError::Closed
//! [`ListerWatcher`]: crate::ListerWatcher
//! [`KubeListerWatcher::new`]: crate::runtime::KubeListerWatcher::new
//! [`KubeListerWatcher::metadata`]: crate::runtime::KubeListerWatcher::metadata
//! [`MetadataListerWatcher`]: crate::runtime::MetadataListerWatcher
//! [`Reflector::new`]: crate::runtime::Reflector::new
//! [`Reflector::with_name`]: crate::runtime::Reflector::with_name
//! [`Reflector::run`]: crate::runtime::Reflector::run
//! [`Reflector::last_error`]: crate::runtime::Reflector::last_error
//! [`Reflector::last_sync_resource_version`]: crate::runtime::Reflector::last_sync_resource_version
//! [`Reflector::with_watch_error_handler`]: crate::runtime::Reflector::with_watch_error_handler
//! [`ReflectorConfig`]: crate::runtime::ReflectorConfig
//! [`ReflectorConfig::list_params`]: crate::runtime::ReflectorConfig::list_params
//! [`ReflectorConfig::streaming_list`]: crate::runtime::ReflectorConfig::streaming_list
//! [`WatchErrorHandler`]: crate::runtime::reflector::WatchErrorHandler
//! [`SharedIndexInformer::new`]: crate::runtime::SharedIndexInformer::new
//! [`SharedIndexInformer::builder`]: crate::runtime::SharedIndexInformer::builder
//! [`SharedIndexInformer::add_indexers`]: crate::runtime::SharedIndexInformer::add_indexers
//! [`SharedIndexInformer::run`]: crate::runtime::SharedIndexInformer::run
//! [`SharedIndexInformer::has_synced`]: crate::runtime::SharedIndexInformer::has_synced
//! [`SharedIndexInformer::wait_for_sync`]: crate::runtime::SharedIndexInformer::wait_for_sync
//! [`SharedIndexInformer::store`]: crate::runtime::SharedIndexInformer::store
//! [`SharedIndexInformer::indexer`]: crate::runtime::SharedIndexInformer::indexer
//! [`SharedIndexInformer::add_handler`]: crate::runtime::SharedIndexInformer::add_handler
//! [`IndexError::Conflict`]: crate::core::IndexError::Conflict
//! [`SharedIndexInformer::set_watch_error_handler`]: crate::runtime::informer::SharedIndexInformer::set_watch_error_handler
//! [`SharedIndexInformer::set_transform`]: crate::runtime::informer::SharedIndexInformer::set_transform
//! [`SharedIndexInformer::add_handler_with`]: crate::runtime::SharedIndexInformer::add_handler_with
//! [`SharedIndexInformer::lister`]: crate::runtime::SharedIndexInformer::lister
//! [`InformerBuilder`]: crate::runtime::informer::InformerBuilder
//! [`InformerBuilder::build`]: crate::runtime::informer::InformerBuilder::build
//! [`InformerBuilder::default_resync`]: crate::runtime::informer::InformerBuilder::default_resync
//! [`InformerBuilder::transform`]: crate::runtime::informer::InformerBuilder::transform
//! [`InformerBuilder::watch_error_handler`]: crate::runtime::informer::InformerBuilder::watch_error_handler
//! [`HandlerOptions`]: crate::runtime::informer::HandlerOptions
//! [`HandlerRegistration::remove`]: crate::runtime::informer::HandlerRegistration::remove
//! [`HandlerRegistration::has_synced`]: crate::runtime::informer::HandlerRegistration::has_synced
//! [`HandlerRegistration::wait_synced`]: crate::runtime::informer::HandlerRegistration::wait_synced
//! [`Handler`]: crate::Handler
//! [`HandlerFns::new`]: crate::HandlerFns::new
//! [`HandlerFns::on_add`]: crate::HandlerFns::on_add
//! [`HandlerFns::on_update`]: crate::HandlerFns::on_update
//! [`HandlerFns::on_delete`]: crate::HandlerFns::on_delete
//! [`FilteringHandler::new`]: crate::FilteringHandler::new
//! [`wait_for_cache_sync`]: crate::runtime::wait_for_cache_sync
//! [`wait_for_named_cache_sync`]: crate::runtime::informer::wait_for_named_cache_sync
//! [`InformerFactory::new`]: crate::runtime::InformerFactory::new
//! [`InformerFactory::default_resync`]: crate::runtime::InformerFactory::default_resync
//! [`InformerFactory::informer`]: crate::runtime::InformerFactory::informer
//! [`InformerFactory::start`]: crate::runtime::InformerFactory::start
//! [`InformerFactory::shutdown`]: crate::runtime::InformerFactory::shutdown
//! [`InformerFactory::wait_for_sync`]: crate::runtime::InformerFactory::wait_for_sync
//! [`InformerFactory::dynamic_informer`]: crate::runtime::InformerFactory::dynamic_informer
//! [`InformerFactory::informer_with_store`]: crate::runtime::InformerFactory::informer_with_store
//! [`InformerFactory::cluster_informer_with_store`]: crate::runtime::InformerFactory::cluster_informer_with_store
//! [`InformerParams::all`]: crate::runtime::InformerParams::all
//! [`InformerParams::namespaced`]: crate::runtime::InformerParams::namespaced
//! [`InformerParams::labels`]: crate::runtime::InformerParams::labels
//! [`InformerParams::fields`]: crate::runtime::InformerParams::fields
//! [`InformerHandle`]: crate::runtime::factory::InformerHandle
//! [`Lister`]: crate::runtime::Lister
//! [`Lister::new`]: crate::runtime::Lister::new
//! [`Lister::namespaced`]: crate::runtime::Lister::namespaced
//! [`Lister::list`]: crate::runtime::Lister::list
//! [`Notification`]: crate::Notification
//! [`InformerFactory::drop_managed_fields`]: crate::runtime::InformerFactory::drop_managed_fields
//! [`Lister::list_matching`]: crate::runtime::Lister::list_matching
//! [`Lister::list_by_labels`]: crate::runtime::Lister::list_by_labels
//! [`Lister::by_index_name`]: crate::runtime::Lister::by_index_name
//! [`Lister::by_index`]: crate::runtime::Lister::by_index
//! [`NamespacedLister::get`]: crate::runtime::NamespacedLister::get
//! [`NamespacedLister::list`]: crate::runtime::NamespacedLister::list
//! [`NamespacedLister::list_matching`]: crate::runtime::NamespacedLister::list_matching
//! [`NamespacedLister::list_by_labels`]: crate::runtime::NamespacedLister::list_by_labels
//! [`Index`]: crate::runtime::lister::Index
//! [`WorkQueue::new`]: crate::WorkQueue::new
//! [`WorkQueue::with_rate_limiter`]: crate::WorkQueue::with_rate_limiter
//! [`WorkQueue::builder`]: crate::WorkQueue::builder
//! [`QueueBuilder::rate_limiter`]: crate::queue::QueueBuilder::rate_limiter
//! [`QueueBuilder::build`]: crate::queue::QueueBuilder::build
//! [`QueueBuilder::name`]: crate::queue::QueueBuilder::name
//! [`QueueBuilder::metrics`]: crate::queue::QueueBuilder::metrics
//! [`Queue`]: crate::Queue
//! [`Queue::add`]: crate::Queue::add
//! [`Queue::len`]: crate::Queue::len
//! [`Queue::get`]: crate::Queue::get
//! [`Queue::done`]: crate::Queue::done
//! [`take`]: crate::core::queue::take
//! [`Queue::add_after`]: crate::Queue::add_after
//! [`Queue::add_rate_limited`]: crate::Queue::add_rate_limited
//! [`Queue::forget`]: crate::Queue::forget
//! [`Queue::num_requeues`]: crate::Queue::num_requeues
//! [`Queue::shut_down`]: crate::Queue::shut_down
//! [`Queue::is_shutting_down`]: crate::Queue::is_shutting_down
//! [`Queue::shut_down_with_drain`]: crate::Queue::shut_down_with_drain
//! [`RateLimiter`]: crate::RateLimiter
//! [`default_controller_rate_limiter`]: crate::queue::default_controller_rate_limiter
//! [`default_item_based_rate_limiter`]: crate::queue::default_item_based_rate_limiter
//! [`ItemExponentialFailureRateLimiter::new`]: crate::queue::ItemExponentialFailureRateLimiter::new
//! [`ItemFastSlowRateLimiter::new`]: crate::queue::ItemFastSlowRateLimiter::new
//! [`BucketRateLimiter::new`]: crate::queue::BucketRateLimiter::new
//! [`MaxOfRateLimiter::new`]: crate::queue::MaxOfRateLimiter::new
//! [`QueueWrapper`]: crate::QueueWrapper
//! [`QueueMetrics`]: crate::queue::QueueMetrics
//! [`Metrics`]: crate::runtime::metrics::Metrics
//! [`Metrics::work_queue`]: crate::runtime::metrics::Metrics::work_queue
//! [`LeaderElectionConfig::new`]: crate::runtime::leader::LeaderElectionConfig::new
//! [`LeaderElectionConfig::for_client`]: crate::runtime::leader::LeaderElectionConfig::for_client
//! [`LeaderElectionConfig::with_timings`]: crate::runtime::leader::LeaderElectionConfig::with_timings
//! [`lease_name`]: crate::runtime::leader::LeaderElectionConfig::lease_name
//! [`namespace`]: crate::runtime::leader::LeaderElectionConfig::namespace
//! [`identity`]: crate::runtime::leader::LeaderElectionConfig::identity
//! [`timings`]: crate::runtime::leader::LeaderElectionConfig::timings
//! [`release_on_cancel`]: crate::runtime::leader::LeaderElectionConfig::release_on_cancel
//! [`LeaseTimings`]: crate::runtime::lease::LeaseTimings
//! [`LeaderElector::subscribe`]: crate::runtime::leader::LeaderElector::subscribe
//! [`LeaderElector::try_new`]: crate::runtime::leader::LeaderElector::try_new
//! [`LeaderElector::new`]: crate::runtime::leader::LeaderElector::new
//! [`LeaderElector::run`]: crate::runtime::leader::LeaderElector::run
//! [`LeaderElector::is_leader`]: crate::runtime::leader::LeaderElector::is_leader
//! [`LeaderElector::leader`]: crate::runtime::leader::LeaderElector::leader
//! [`LeaderElector::check`]: crate::runtime::leader::LeaderElector::check
//! [`LeaderState::Leading`]: crate::runtime::leader::LeaderState::Leading
//! [`LeaderState::Standby`]: crate::runtime::leader::LeaderState::Standby
//! [`HealthzAdaptor::new`]: crate::runtime::leader::HealthzAdaptor::new
//! [`HealthzAdaptor::set_leader_elector`]: crate::runtime::leader::HealthzAdaptor::set_leader_elector
//! [`HealthzAdaptor::check`]: crate::runtime::leader::HealthzAdaptor::check
//! [`parallelize_until`]: crate::runtime::parallelize_until
//! [`ParallelizeOptions::with_chunk_size`]: crate::runtime::ParallelizeOptions::with_chunk_size
//! [`retry_on_conflict`]: crate::runtime::retry::retry_on_conflict
//! [`on_error`]: crate::runtime::retry::on_error
//! [`is_conflict`]: crate::runtime::retry::is_conflict
//! [`RetryBackoff`]: crate::runtime::retry::RetryBackoff
//! [`RetryBackoff::DEFAULT_RETRY`]: crate::runtime::retry::RetryBackoff::DEFAULT_RETRY
//! [`RetryBackoff::DEFAULT_BACKOFF`]: crate::runtime::retry::RetryBackoff::DEFAULT_BACKOFF
//! [`EventRecorder::new`]: crate::runtime::events::EventRecorder::new
//! [`EventRecorder::publish_for`]: crate::runtime::events::EventRecorder::publish_for
//! [`EventRecorder::record_for`]: crate::runtime::events::EventRecorder::record_for
//! [`EventRecorder::publish`]: crate::runtime::events::EventRecorder::publish
//! [`Reporter::new`]: crate::runtime::events::Reporter::new
//! [`Event`]: crate::runtime::events::Event
//! [`EventType`]: crate::runtime::events::EventType
//! [`conditions`]: crate::runtime::conditions
//! [`set_status_condition`]: crate::runtime::conditions::set_status_condition
//! [`remove_status_condition`]: crate::runtime::conditions::remove_status_condition
//! [`find_status_condition`]: crate::runtime::conditions::find_status_condition
//! [`is_status_condition_true`]: crate::runtime::conditions::is_status_condition_true
//! [`is_status_condition_false`]: crate::runtime::conditions::is_status_condition_false
//! [`is_status_condition_present_and_equal`]: crate::runtime::conditions::is_status_condition_present_and_equal
//! [`controller_owner`]: crate::runtime::controller::controller_owner
//! [`is_controlled_by`]: crate::runtime::controller::is_controlled_by
//! [`set_controller_reference`]: crate::runtime::controller::set_controller_reference
//! [`OwnerReferenceError::AlreadyOwned`]: crate::runtime::controller::OwnerReferenceError::AlreadyOwned
//! [`ControllerBuilder::read_your_writes`]: crate::runtime::controller::ControllerBuilder::read_your_writes
//! [`KeyReconciler`]: crate::runtime::controller::KeyReconciler
//! [`KeyReconciler::on_error`]: crate::runtime::controller::KeyReconciler::on_error
//! [`KeyReconciler::cleanup`]: crate::runtime::controller::KeyReconciler::cleanup
//! [`reconciler_fn`]: crate::runtime::controller::reconciler_fn
//! [`ReconcilerFn::error_policy`]: crate::runtime::controller::ReconcilerFn::error_policy
//! [`Reconcile`]: crate::runtime::controller::Reconcile
//! [`Reconcile::on_error`]: crate::runtime::controller::Reconcile::on_error
//! [`Reconcile::cleanup`]: crate::runtime::controller::Reconcile::cleanup
//! [`Action`]: crate::runtime::controller::Action
//! [`Action::Done`]: crate::runtime::controller::Action::Done
//! [`Action::await_change`]: crate::runtime::controller::Action::await_change
//! [`Action::RequeueAfter`]: crate::runtime::controller::Action::RequeueAfter
//! [`Action::requeue_after`]: crate::runtime::controller::Action::requeue_after
//! [`Action::Requeue`]: crate::runtime::controller::Action::Requeue
//! [`Action::requeue`]: crate::runtime::controller::Action::requeue
//! [`Action::requeue_rate_limited`]: crate::runtime::controller::Action::requeue_rate_limited
//! [`ReconcileError::terminal`]: crate::runtime::controller::ReconcileError::terminal
//! [`ReconcileError::transient`]: crate::runtime::controller::ReconcileError::transient
//! [`Manager`]: crate::runtime::Manager
//! [`Manager::exit_on_leader_loss`]: crate::runtime::Manager::exit_on_leader_loss
//! [`Manager::controller`]: crate::runtime::Manager::controller
//! [`Manager::add`]: crate::runtime::Manager::add
//! [`Manager::new`]: crate::runtime::Manager::new
//! [`Manager::run`]: crate::runtime::Manager::run
//! [`Manager::handle_signals`]: crate::runtime::Manager::handle_signals
//! [`Manager::add_task`]: crate::runtime::Manager::add_task
//! [`Manager::leader_election`]: crate::runtime::Manager::leader_election
//! [`Manager::add_healthz_check`]: crate::runtime::Manager::add_healthz_check
//! [`Manager::add_readyz_check`]: crate::runtime::Manager::add_readyz_check
//! [`Manager::health_probe_address`]: crate::runtime::Manager::health_probe_address
//! [`Manager::metrics_address`]: crate::runtime::Manager::metrics_address
//! [`Task::new`]: crate::runtime::manager::Task::new
//! [`Task::needs_leader_election`]: crate::runtime::manager::Task::needs_leader_election
//! [`RunController::run`]: crate::runtime::manager::RunController::run
//! [`Controller::builder`]: crate::runtime::Controller::builder
//! [`Controller::with_client`]: crate::runtime::Controller::with_client
//! [`Controller::run`]: crate::runtime::Controller::run
//! [`Controller::lister`]: crate::runtime::Controller::lister
//! [`ControllerSpec`]: derive@crate::ControllerSpec
//! [`ControllerBuilder::owns`]: crate::runtime::controller::ControllerBuilder::owns
//! [`ControllerBuilder::owns_with`]: crate::runtime::controller::ControllerBuilder::owns_with
//! [`ControllerBuilder::watches`]: crate::runtime::controller::ControllerBuilder::watches
//! [`ControllerBuilder::watches_with`]: crate::runtime::controller::ControllerBuilder::watches_with
//! [`ControllerBuilder::filter`]: crate::runtime::controller::ControllerBuilder::filter
//! [`ControllerBuilder::finalizer`]: crate::runtime::controller::ControllerBuilder::finalizer
//! [`ControllerBuilder::workers`]: crate::runtime::controller::ControllerBuilder::workers
//! [`ControllerBuilder::queue_with`]: crate::runtime::controller::ControllerBuilder::queue_with
//! [`ControllerBuilder::priority_queue`]: crate::runtime::controller::ControllerBuilder::priority_queue
//! [`ControllerBuilder::build`]: crate::runtime::controller::ControllerBuilder::build
//! [`ControllerBuilder::children`]: crate::runtime::controller::ControllerBuilder::children
//! [`ControllerBuilder::status`]: crate::runtime::controller::ControllerBuilder::status
//! [`ControllerBuilder::event_recorder`]: crate::runtime::controller::ControllerBuilder::event_recorder
//! [`ControllerBuilder::index`]: crate::runtime::controller::ControllerBuilder::index
//! [`ControllerBuilder::indexed_by`]: crate::runtime::controller::ControllerBuilder::indexed_by
//! [`ControllerBuilder::namespace`]: crate::runtime::controller::ControllerBuilder::namespace
//! [`WatchOptions::filter`]: crate::runtime::controller::WatchOptions::filter
//! [`Filter`]: crate::runtime::controller::Filter
//! [`Filter::generation_changed`]: crate::runtime::controller::Filter::generation_changed
//! [`finalizer`]: crate::runtime::controller::finalizer
//! [`FinalizerEvent`]: crate::runtime::controller::FinalizerEvent
//! [`Context::apply_status`]: crate::runtime::controller::Context::apply_status
//! [`Context::recorder`]: crate::runtime::controller::Context::recorder
//! [`Context::lister`]: crate::runtime::controller::Context::lister
//! [`MIN_RESYNC_PERIOD`]: crate::runtime::informer::MIN_RESYNC_PERIOD
//! [`QueueStats::delayed`]: crate::queue::QueueStats::delayed
//! [`SharedIndexInformer::default_resync`]: crate::runtime::SharedIndexInformer::default_resync
//! [`HandlerRegistration::resync_period`]: crate::runtime::informer::HandlerRegistration::resync_period
