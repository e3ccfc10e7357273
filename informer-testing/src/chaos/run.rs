//! One run of a schedule: a fresh server, the controller's replicas, the checker, the steps
//! in order, then the wait for convergence.

use std::collections::HashSet;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::FutureExt as _;
use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::Settings;
use super::checker::{Checker, HARNESS, Observed, WORLD, panic_message};
use super::interceptor::{ChaosInterceptor, Control};
use super::outside::{self, RunShared};
use super::report::{Failure, Trace, TraceEvent};
use super::schedule::Step;
use super::world::{ObjectId, WorldStep, set_pointer};
use crate::apiserver::intercept::with_actor;
use crate::apiserver::{Shared, format_micro_time, register_user};
use crate::{Error, TestApiServer};

/// What a run ended with.
pub(crate) struct RunResult {
    pub failure: Option<Failure>,
    pub trace: Vec<TraceEvent>,
}

/// The holder identity the harness writes when it takes a Lease over.
const USURPER: &str = "informer-chaos";
/// Controller changes after the expected state was reached that count as thrash at once.
const THRASH_LIMIT: u64 = 1000;
/// How long writes may go on after the expected state was reached before they count as
/// thrash (at least; ten quiet periods if longer). A burst that ends by itself (a controller
/// fighting the garbage collector while one of its caches relists) is not thrash.
const THRASH_AFTER: Duration = Duration::from_secs(5);

/// Runs `steps` (each with its index in the seed's schedule) once.
/// `seed` is the seed the steps come from (`None`: a written scenario).
pub(crate) async fn run(
    settings: &Arc<Settings>,
    seed: Option<u64>,
    steps: &[(usize, Step)],
) -> RunResult {
    let trace = Arc::new(Trace::new());
    let failure = match Run::start(settings, trace.clone(), seed).await {
        Err(message) => Some(Failure::Harness { message }),
        Ok(mut run) => run.execute(steps).await,
    };
    if let Some(failure) = &failure {
        trace.record("check", format!("FAILED: {failure}"));
    }
    RunResult {
        failure,
        trace: trace.events(),
    }
}

/// A controller process: its user, its stop signal and its task.
struct Incarnation {
    user: Arc<str>,
    stop: CancellationToken,
    task: JoinHandle<()>,
}

#[derive(Default)]
struct Slot {
    current: Option<Incarnation>,
    incarnations: u32,
    /// Steps to stay down before restarting (`Some(0)`: restart at the next chance).
    down: Option<u32>,
}

/// The controller's replicas, each a series of incarnations.
struct Replicas {
    settings: Arc<Settings>,
    shared: Arc<Shared>,
    base: kube::Config,
    control: Arc<Control>,
    trace: Arc<Trace>,
    slots: Vec<Slot>,
    /// Incarnations the harness ended: their exits are expected.
    killed: HashSet<Arc<str>>,
    exits: mpsc::UnboundedSender<(Arc<str>, String)>,
    /// How long the next asynchronous crash keeps its replica down.
    crash_down: u32,
    /// What the run shares with every incarnation: its state outside the cluster, its trace.
    run: Arc<RunShared>,
}

impl Replicas {
    fn start(&mut self, index: usize) -> Result<(), String> {
        let slot = &mut self.slots[index];
        slot.incarnations += 1;
        slot.down = None;
        let user: Arc<str> = Arc::from(format!("replica-{index}.{}", slot.incarnations));
        let mut config = self.base.clone();
        config.auth_info.token = Some(register_user(&self.shared, &user).into());
        let client = kube::Client::try_from(config)
            .map_err(|e| format!("cannot build a client for {user}: {e}"))?;
        let stop = CancellationToken::new();
        let future = outside::starting(&self.run, || {
            (self.settings.start)(client, stop.clone(), user.to_string())
        });
        let future = outside::running(self.run.clone(), future);
        let exits = self.exits.clone();
        let exiting = user.clone();
        let task = tokio::spawn(async move {
            let outcome = match AssertUnwindSafe(future).catch_unwind().await {
                Ok(Ok(())) => "returned Ok".to_string(),
                Ok(Err(message)) => format!("returned an error: {message}"),
                Err(panic) => format!("panicked: {}", panic_message(&*panic)),
            };
            let _ = exits.send((exiting, outcome));
        });
        self.trace.record(user.to_string(), "started");
        slot.current = Some(Incarnation { user, stop, task });
        Ok(())
    }

    /// Crashes replica `index`: its requests are held (its process is gone), its stop
    /// signal cancelled and its task aborted (caches dropped).
    fn kill(&mut self, index: usize, down: u32) {
        let Some(incarnation) = self.slots[index].current.take() else {
            return;
        };
        self.control.kill(&incarnation.user);
        self.killed.insert(incarnation.user.clone());
        incarnation.stop.cancel();
        incarnation.task.abort();
        self.control.release(&incarnation.user);
        self.trace.record(incarnation.user.to_string(), "crashed");
        self.slots[index].down = Some(down);
    }

    fn index_of(&self, user: &str) -> Option<usize> {
        self.slots.iter().position(|slot| {
            slot.current
                .as_ref()
                .is_some_and(|i| i.user.as_ref() == user)
        })
    }

    /// Restarts the replicas whose down time is over; counts a step for the others.
    fn step_done(&mut self) -> Result<(), String> {
        for index in 0..self.slots.len() {
            match self.slots[index].down {
                Some(0) => self.start(index)?,
                Some(n) => self.slots[index].down = Some(n - 1),
                None => {}
            }
        }
        Ok(())
    }

    /// Restarts the replicas due now (down for 0 steps).
    fn restart_due(&mut self) -> Result<(), String> {
        for index in 0..self.slots.len() {
            if self.slots[index].down == Some(0) {
                self.start(index)?;
            }
        }
        Ok(())
    }

    fn start_all_down(&mut self) -> Result<(), String> {
        for index in 0..self.slots.len() {
            if self.slots[index].current.is_none() {
                self.start(index)?;
            }
        }
        Ok(())
    }

    fn stop_all(&mut self) {
        for index in 0..self.slots.len() {
            if let Some(incarnation) = self.slots[index].current.take() {
                self.control.kill(&incarnation.user);
                self.killed.insert(incarnation.user.clone());
                incarnation.stop.cancel();
                incarnation.task.abort();
                self.control.release(&incarnation.user);
            }
        }
    }
}

/// A fault that lasts a number of steps.
enum Effect {
    Lag,
    Delay,
    Pause { relist: bool },
    LeaseHeld { user: Arc<str> },
}

struct Run {
    settings: Arc<Settings>,
    server: Arc<TestApiServer>,
    control: Arc<Control>,
    observed: Arc<Mutex<Observed>>,
    revisions: watch::Receiver<u64>,
    replicas: Arc<Mutex<Replicas>>,
    exits: mpsc::UnboundedReceiver<(Arc<str>, String)>,
    tasks: Vec<JoinHandle<()>>,
    effects: Vec<(Effect, u32)>,
    trace: Arc<Trace>,
    /// What the controllers share of the run ([`outside::RunContext`]).
    context: Arc<RunShared>,
}

impl Drop for Run {
    fn drop(&mut self) {
        self.teardown();
    }
}

impl Run {
    async fn start(
        settings: &Arc<Settings>,
        trace: Arc<Trace>,
        seed: Option<u64>,
    ) -> Result<Self, String> {
        let builder = (settings.server)(TestApiServer::builder());
        let server = Arc::new(
            builder
                .start()
                .await
                .map_err(|e| format!("the test API server did not start: {e}"))?,
        );
        (settings.setup)(&server).map_err(|e| format!("the test's setup failed: {e}"))?;
        let shared = server.shared().clone();
        let shared_with_controllers = Arc::new(RunShared::new(trace.clone(), seed));
        let observed = Arc::new(Mutex::new(Observed::new()));
        observed
            .lock()
            .cluster
            .set_outside(shared_with_controllers.outside.clone());
        let (revisions_tx, revisions) = watch::channel(0);
        let subscription = shared
            .store
            .subscribe(Some(0))
            .map_err(|e| format!("cannot follow the server's changes: {e}"))?;
        let checker = Checker {
            observed: observed.clone(),
            invariants: settings.invariants.clone(),
            lease: settings.lease.clone(),
            trace: trace.clone(),
            revisions: revisions_tx,
            traced_after: server.resource_version(),
        };
        let mut tasks = vec![tokio::spawn(checker.follow(subscription))];
        let (crashes_tx, mut crashes) = mpsc::unbounded_channel::<Arc<str>>();
        let control = Control::new(trace.clone(), crashes_tx);
        control.set_touch(touch(Arc::downgrade(&server)));
        *shared.interceptor.write() = Some(Arc::new(ChaosInterceptor(control.clone())));
        let (exits_tx, exits) = mpsc::unbounded_channel();
        let replicas = Arc::new(Mutex::new(Replicas {
            settings: settings.clone(),
            shared: shared.clone(),
            base: server.config(),
            control: control.clone(),
            trace: trace.clone(),
            slots: (0..settings.replicas).map(|_| Slot::default()).collect(),
            killed: HashSet::new(),
            exits: exits_tx,
            crash_down: 0,
            run: shared_with_controllers.clone(),
        }));
        replicas.lock().start_all_down()?;
        // Crashes decided inside the server (right after a write committed) take effect here.
        tasks.push(tokio::spawn({
            let replicas = replicas.clone();
            async move {
                while let Some(user) = crashes.recv().await {
                    let mut replicas = replicas.lock();
                    if let Some(index) = replicas.index_of(&user) {
                        let down = replicas.crash_down;
                        replicas.kill(index, down);
                        if let Err(message) = replicas.restart_due() {
                            tracing::warn!(%message, "chaos: a replica did not restart");
                        }
                    }
                }
            }
        }));
        Ok(Self {
            settings: settings.clone(),
            server,
            control,
            observed,
            revisions,
            replicas,
            exits,
            tasks,
            effects: Vec::new(),
            trace,
            context: shared_with_controllers,
        })
    }

    /// The failure recorded so far: by the checker, or a controller that exited.
    fn failure(&mut self) -> Option<Failure> {
        while let Ok((user, outcome)) = self.exits.try_recv() {
            if !self.replicas.lock().killed.contains(&user) {
                self.observed.lock().fail(Failure::ControllerExited {
                    user: user.to_string(),
                    outcome,
                });
            }
        }
        self.observed.lock().failure.clone()
    }

    async fn execute(&mut self, steps: &[(usize, Step)]) -> Option<Failure> {
        for (index, step) in steps {
            self.trace
                .record("schedule", format!("step {index}: {step}"));
            if let Err(message) = self.step(step).await {
                return Some(Failure::Harness { message });
            }
            if let Err(message) = self.step_done() {
                return Some(Failure::Harness { message });
            }
            if let Some(failure) = self.failure() {
                return Some(failure);
            }
        }
        self.trace
            .record("schedule", "done: faults cleared, every replica running");
        self.context.end_schedule();
        if let Err(message) = self.finish() {
            return Some(Failure::Harness { message });
        }
        self.converge().await
    }

    async fn step(&mut self, step: &Step) -> Result<(), String> {
        match step {
            Step::World(world) => self.world(world),
            Step::Crash {
                after_writes: 0,
                down_steps,
            } => {
                let index = self.leader_index();
                let mut replicas = self.replicas.lock();
                replicas.kill(index, *down_steps);
                replicas.restart_due()
            }
            Step::Crash {
                after_writes,
                down_steps,
            } => {
                self.replicas.lock().crash_down = *down_steps;
                self.control.crash_after(Some(*after_writes));
                Ok(())
            }
            Step::StaleRestart {
                writes_back,
                for_steps,
            } => {
                let index = self.leader_index();
                let lag = {
                    let observed = self.observed.lock();
                    let current = self.server.resource_version();
                    let writes = observed.replica_writes.get(&index);
                    let back = usize::try_from(*writes_back).unwrap_or(1);
                    match writes.and_then(|w| w.len().checked_sub(back).map(|i| w[i])) {
                        // The view just before that write.
                        Some(write) => current.saturating_sub(write.saturating_sub(1)),
                        None => 1,
                    }
                };
                self.server.faults().lag(lag);
                self.trace
                    .record("fault", format!("lists served {lag} revisions behind"));
                self.effects.push((Effect::Lag, *for_steps + 1));
                let mut replicas = self.replicas.lock();
                replicas.kill(index, 0);
                replicas.restart_due()
            }
            Step::DelayWatches {
                max,
                salt,
                for_steps,
            } => {
                self.control.watches(|w| w.delay = Some((*max, *salt)));
                self.effects.push((Effect::Delay, *for_steps + 1));
                Ok(())
            }
            Step::DropWatches { compact } => {
                if *compact {
                    self.server.faults().compact();
                }
                self.control.watches(|w| w.epoch += 1);
                self.server.faults().drop_watches();
                Ok(())
            }
            Step::PauseWatches { for_steps, relist } => {
                self.control.watches(|w| w.paused = true);
                self.effects
                    .push((Effect::Pause { relist: *relist }, *for_steps + 1));
                Ok(())
            }
            Step::Conflicts { count } => {
                self.control.conflicts(*count);
                Ok(())
            }
            Step::FailRequests { class, code, count } => {
                self.control.fail(*class, *code, *count);
                Ok(())
            }
            Step::LoseLease { for_steps } => self.lose_lease(*for_steps).await,
            Step::Wait(duration) => {
                tokio::time::sleep(*duration).await;
                Ok(())
            }
            Step::Settle => {
                let deadline = Instant::now() + Duration::from_secs(2);
                while self.observed.lock().last_change.elapsed() < Duration::from_millis(100)
                    && Instant::now() < deadline
                {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Ok(())
            }
        }
    }

    /// The replica holding the Lease, or the first.
    fn leader_index(&self) -> usize {
        let holder = self.observed.lock().lease.holder_user.clone();
        let replicas = self.replicas.lock();
        holder
            .and_then(|user| replicas.index_of(&user))
            .unwrap_or(0)
    }

    /// Counts a step for the lasting faults (undoing those that end: a fault "for N steps"
    /// lasts through the N steps after its own) and the replicas that are down.
    fn step_done(&mut self) -> Result<(), String> {
        let mut ended = Vec::new();
        for (effect, remaining) in std::mem::take(&mut self.effects) {
            if remaining <= 1 {
                ended.push(effect);
            } else {
                self.effects.push((effect, remaining - 1));
            }
        }
        for effect in ended {
            self.undo(effect)?;
        }
        self.replicas.lock().step_done()
    }

    fn undo(&mut self, effect: Effect) -> Result<(), String> {
        let still =
            |effects: &[(Effect, u32)], f: fn(&Effect) -> bool| effects.iter().any(|(e, _)| f(e));
        match effect {
            Effect::Lag => {
                if !still(&self.effects, |e| matches!(e, Effect::Lag)) {
                    self.server.faults().lag(0);
                    self.trace
                        .record("fault", "lists served from the current state again");
                }
            }
            Effect::Delay => {
                if !still(&self.effects, |e| matches!(e, Effect::Delay)) {
                    self.control.watches(|w| w.delay = None);
                    self.trace.record("fault", "watch events undelayed");
                }
            }
            Effect::Pause { relist } => {
                if relist {
                    // What happened while paused is never observed: resuming gets 410.
                    self.server.faults().compact();
                    self.control.watches(|w| w.epoch += 1);
                    self.server.faults().drop_watches();
                    self.trace.record(
                        "fault",
                        "history compacted, watches cut: the controller relists",
                    );
                }
                if !still(&self.effects, |e| matches!(e, Effect::Pause { .. })) {
                    self.control.watches(|w| w.paused = false);
                    self.trace.record("fault", "watches flow again");
                }
            }
            Effect::LeaseHeld { user } => {
                self.control.partition(&user, false);
                self.release_lease()?;
            }
        }
        Ok(())
    }

    /// Ends every fault and restarts every replica that is down.
    fn finish(&mut self) -> Result<(), String> {
        for (effect, _) in std::mem::take(&mut self.effects) {
            self.undo(effect)?;
        }
        self.control.clear();
        self.server.faults().lag(0);
        self.release_lease()?;
        self.replicas.lock().start_all_down()
    }

    /// Stops the replicas and the harness's tasks (also when the run is dropped midway: a
    /// test that found a failing seed drops the seeds still running).
    fn teardown(&mut self) {
        self.replicas.lock().stop_all();
        for task in self.tasks.drain(..) {
            task.abort();
        }
        *self.server.shared().interceptor.write() = None;
    }

    /// Applies a world step as the user `world`.
    fn world(&self, step: &WorldStep) -> Result<(), String> {
        let outcome = with_actor(Some(Arc::from(WORLD)), || self.apply_world(step))?;
        self.trace.record(WORLD, format!("{step}: {outcome}"));
        Ok(())
    }

    fn apply_world(&self, step: &WorldStep) -> Result<String, String> {
        let server = &self.server;
        let get = |id: &ObjectId| {
            server.get_json(&id.api_version, &id.kind, id.namespace.as_deref(), &id.name)
        };
        let create = |template: &Value| -> Result<String, String> {
            let id = ObjectId::of(template)?;
            if get(&id).is_some() {
                return Ok("exists: skipped".to_string());
            }
            match server.create_json(fresh(template)) {
                Ok(created) => Ok(format!("created @{}", revision_of(&created))),
                Err(Error::Api(err)) if err.code() == 409 => Ok("exists: skipped".to_string()),
                Err(err) => Err(format!("the world could not create {id}: {err}")),
            }
        };
        let delete = |id: &ObjectId| -> Result<String, String> {
            match server.delete_json(&id.api_version, &id.kind, id.namespace.as_deref(), &id.name) {
                Ok(deleted) if deleted.pointer("/metadata/deletionTimestamp").is_some() => {
                    Ok("marked for deletion (finalizers)".to_string())
                }
                Ok(_) => Ok("deleted".to_string()),
                Err(Error::Api(err)) if err.code() == 404 => Ok("absent: skipped".to_string()),
                Err(err) => Err(format!("the world could not delete {id}: {err}")),
            }
        };
        match step {
            WorldStep::Create(template) => create(template),
            WorldStep::Delete(id) => delete(id),
            WorldStep::Recreate(template) => {
                let id = ObjectId::of(template)?;
                let deleted = delete(&id)?;
                if get(&id).is_some() {
                    return Ok(format!("{deleted}; still there: re-create skipped"));
                }
                Ok(format!("{deleted}; {}", create(template)?))
            }
            WorldStep::Set {
                target,
                pointer,
                value,
            } => {
                for _ in 0..10 {
                    let Some(mut object) = get(target) else {
                        return Ok("absent: skipped".to_string());
                    };
                    if !set_pointer(&mut object, pointer, value.clone()) {
                        return Err(format!("{target} has no place for {pointer}"));
                    }
                    // A status field goes through the status subresource, as a controller
                    // or kubelet writes it (a write of the main resource ignores status).
                    let in_status = pointer == "/status" || pointer.starts_with("/status/");
                    let written = if in_status {
                        server.update_status_json(object)
                    } else {
                        server.update_json(object)
                    };
                    match written {
                        Ok(updated) => return Ok(format!("updated @{}", revision_of(&updated))),
                        Err(Error::Api(err)) if err.code() == 409 => continue,
                        Err(Error::Api(err)) if err.code() == 404 => {
                            return Ok("absent: skipped".to_string());
                        }
                        Err(err) => {
                            return Err(format!("the world could not update {target}: {err}"));
                        }
                    }
                }
                Ok("conflicted ten times: skipped".to_string())
            }
        }
    }

    /// Cuts the leader off its Lease until the Lease has gone unrenewed for one and a half
    /// lease durations, then takes it over (unless a standby did).
    async fn lose_lease(&mut self, for_steps: u32) -> Result<(), String> {
        let Some(lease) = self.settings.lease.clone() else {
            self.trace
                .record("fault", "no leader election: nothing to lose");
            return Ok(());
        };
        let (holder, user) = {
            let observed = self.observed.lock();
            (
                observed.lease.holder.clone(),
                observed.lease.holder_user.clone(),
            )
        };
        let Some(user) = user else {
            self.trace
                .record("fault", "no replica holds the lease: nothing to lose");
            return Ok(());
        };
        let user: Arc<str> = Arc::from(user);
        self.control.partition(&user, true);
        self.trace.record(
            "fault",
            format!("{user} (holder {holder:?}) cut off from the lease"),
        );
        let started = Instant::now();
        loop {
            if self.failure().is_some() {
                break;
            }
            let (holder_now, changed_at, duration, rv, object) = {
                let observed = self.observed.lock();
                let lease = &observed.lease;
                (
                    lease.holder.clone(),
                    lease.changed_at,
                    lease.duration.max(Duration::from_secs(1)),
                    lease.resource_version.clone(),
                    lease.object.clone(),
                )
            };
            if holder_now != holder {
                self.trace
                    .record("fault", format!("the lease passed to {holder_now:?}"));
                break;
            }
            if changed_at.is_some_and(|at| at.elapsed() >= duration * 3 / 2)
                && let Some(mut object) = object
            {
                let transitions = object
                    .pointer("/spec/leaseTransitions")
                    .and_then(Value::as_i64)
                    .unwrap_or(0);
                let now = format_micro_time(jiff::Timestamp::now());
                object["metadata"]["resourceVersion"] = json!(rv);
                object["spec"]["holderIdentity"] = json!(USURPER);
                object["spec"]["leaseDurationSeconds"] = json!(3600);
                object["spec"]["acquireTime"] = json!(now);
                object["spec"]["renewTime"] = json!(now);
                object["spec"]["leaseTransitions"] = json!(transitions + 1);
                let taken =
                    with_actor(Some(Arc::from(HARNESS)), || self.server.update_json(object));
                match taken {
                    Ok(updated) => {
                        self.trace.record(
                            "fault",
                            format!(
                                "lease {}/{} taken over by {USURPER:?} @{}",
                                lease.namespace,
                                lease.name,
                                revision_of(&updated)
                            ),
                        );
                        break;
                    }
                    Err(Error::Api(err)) if err.code() == 409 => continue,
                    Err(err) => return Err(format!("cannot take the lease over: {err}")),
                }
            }
            if started.elapsed() > duration * 4 + Duration::from_secs(5) {
                self.trace
                    .record("fault", "the lease kept changing: not taken over");
                break;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        self.effects
            .push((Effect::LeaseHeld { user }, for_steps + 1));
        Ok(())
    }

    /// Frees the Lease if the harness holds it.
    fn release_lease(&self) -> Result<(), String> {
        for _ in 0..10 {
            let (holder, rv, object) = {
                let observed = self.observed.lock();
                let lease = &observed.lease;
                (
                    lease.holder.clone(),
                    lease.resource_version.clone(),
                    lease.object.clone(),
                )
            };
            let (USURPER, Some(mut object)) = (holder.as_str(), object) else {
                return Ok(());
            };
            object["metadata"]["resourceVersion"] = json!(rv);
            object["spec"]["holderIdentity"] = json!("");
            object["spec"]["leaseDurationSeconds"] = json!(1);
            match with_actor(Some(Arc::from(HARNESS)), || self.server.update_json(object)) {
                Ok(_) => {
                    self.trace.record("fault", "lease released by the harness");
                    return Ok(());
                }
                Err(Error::Api(err)) if err.code() == 409 => {
                    // The checker has not seen the latest version yet.
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(err) => return Err(format!("cannot release the lease: {err}")),
            }
        }
        Err("cannot release the lease: it kept changing".to_string())
    }

    /// Waits for the expected state and a quiet world.
    async fn converge(&mut self) -> Option<Failure> {
        // A crashed leader's Lease must expire before a standby takes over: with leader
        // election, both bounds leave one and a half lease durations (as the Lease says)
        // for it, so production lease timings (15 s) do not fail a run that would converge.
        let takeover = if self.settings.lease.is_some() {
            self.observed.lock().lease.duration.mul_f64(1.5)
        } else {
            Duration::ZERO
        };
        let bound = self.settings.converge_within + takeover;
        let stuck = (self.settings.converge_within / 2).max(Duration::from_secs(1)) + takeover;
        let started = Instant::now();
        // Since when the state has been the expected one (`None` while it is not).
        let mut converged_at: Option<Instant> = None;
        // The controller's changes when the expected state was first reached: a thrash
        // report counts from there, across the times the state left and came back.
        let mut first_reached: Option<u64> = None;
        let thrash_after = THRASH_AFTER.max(self.settings.quiet * 10);
        let mut last_message = String::new();
        loop {
            if let Some(failure) = self.failure() {
                return Some(failure);
            }
            let (result, quiet_for, idle_for, changes, recent) = {
                let observed = self.observed.lock();
                let result = match &self.settings.converges {
                    Some(check) => check.run(&observed.cluster),
                    None => Ok(()),
                };
                (
                    result,
                    observed.last_change.elapsed(),
                    observed.last_any_change.elapsed(),
                    observed.controller_changes,
                    observed.recent_controller_changes.clone(),
                )
            };
            let thrash = |first: u64| Failure::Thrash {
                writes: usize::try_from(changes - first).unwrap_or(usize::MAX),
                last: recent.iter().cloned().collect(),
            };
            match result {
                Ok(()) => {
                    let since = *converged_at.get_or_insert_with(Instant::now);
                    let first = *first_reached.get_or_insert(changes);
                    if quiet_for >= self.settings.quiet {
                        self.trace.record(
                            "check",
                            format!(
                                "converged and quiet for {}ms",
                                self.settings.quiet.as_millis()
                            ),
                        );
                        return None;
                    }
                    if changes - first > THRASH_LIMIT || since.elapsed() >= thrash_after {
                        return Some(thrash(first));
                    }
                }
                Err(message) => {
                    // Left the expected state: what the controller writes from here on may
                    // answer that (an input the checker had not seen when it judged, say), so
                    // the time to thrash starts again when the state is reached again.
                    converged_at = None;
                    // Stuck: nothing changed and no cache was being rebuilt. A reflector
                    // relisting after its backoff (up to 1.6 s, then 3.2 s, ...) has not
                    // given up.
                    let rebuilding = self
                        .control
                        .since_last_list_or_watch()
                        .is_some_and(|since| since < stuck);
                    if idle_for >= stuck && !rebuilding {
                        return Some(Failure::NotConverged {
                            message,
                            waited: started.elapsed(),
                        });
                    }
                    last_message = message;
                }
            }
            if started.elapsed() >= bound {
                return Some(match first_reached {
                    // In the expected state but never quiet; or reached, then left by the
                    // controller's own writes, which go on: it flaps in and out of it.
                    Some(first) if converged_at.is_some() || changes > first => thrash(first),
                    _ => Failure::NotConverged {
                        message: last_message,
                        waited: started.elapsed(),
                    },
                });
            }
            let _ = tokio::time::timeout(Duration::from_millis(50), self.revisions.changed()).await;
        }
    }
}

/// Writes the object a request names as the harness (an annotation counting the writes), so
/// that the request conflicts if it names the resource version it read.
pub(crate) fn touch(server: std::sync::Weak<TestApiServer>) -> super::interceptor::Touch {
    Box::new(move |request| {
        let server = server.upgrade().ok_or("the server is gone")?;
        let (Some(api_version), Some(kind), Some(name)) =
            (&request.api_version, &request.kind, &request.name)
        else {
            return Err("the request names no object".to_string());
        };
        let namespace = request.namespace.as_deref();
        let mut object = server
            .get_json(api_version, kind, namespace, name)
            .ok_or("no such object")?;
        let count = object
            .pointer("/metadata/annotations/chaos.informer.dev~1touched")
            .and_then(Value::as_str)
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or(0);
        if !set_pointer(
            &mut object,
            "/metadata/annotations/chaos.informer.dev~1touched",
            json!((count + 1).to_string()),
        ) {
            return Err("no metadata to annotate".to_string());
        }
        let updated = with_actor(Some(Arc::from(HARNESS)), || server.update_json(object))
            .map_err(|e| e.to_string())?;
        Ok(format!(
            "another client wrote {kind} {} @{}",
            name,
            revision_of(&updated)
        ))
    })
}

/// A world template as a create sends it: without the server-set metadata.
fn fresh(template: &Value) -> Value {
    let mut object = template.clone();
    if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        for field in [
            "resourceVersion",
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "generation",
            "managedFields",
        ] {
            metadata.remove(field);
        }
    }
    if let Some(map) = object.as_object_mut() {
        map.remove("status");
    }
    object
}

fn revision_of(object: &Value) -> &str {
    object
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .unwrap_or("?")
}
