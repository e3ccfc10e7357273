//! What a controller publishes to the metrics: a [`ControllerProbe`] over its runner's
//! counters and its informers.

use std::sync::Arc;

use super::runner::RunnerState;
use super::source::Sources;
use crate::metrics::{ControllerProbe, ControllerSample, InformerSample};

/// Reads one controller for the metrics.
pub(crate) struct Probe {
    pub(crate) state: Arc<RunnerState>,
    pub(crate) sources: Arc<Sources>,
}

impl ControllerProbe for Probe {
    fn sample(&self) -> ControllerSample {
        let state = &self.state;
        let (unfinished_work, longest_running) = state.in_flight();
        let informers = self
            .sources
            .list()
            .iter()
            .map(|source| {
                let reflector = source.reflector_stats();
                InformerSample {
                    informer: source.informer_label().to_owned(),
                    handler: source.handler_name().to_owned(),
                    relists: reflector.relists(),
                    watch_restarts: reflector.watches.saturating_sub(1),
                    stale_refusals: reflector.stale_refusals,
                    pending: source.handler_stats().map(|h| h.pending),
                    store_resource_version: source.cache().version.value(),
                }
            })
            .collect();
        ControllerSample {
            name: state.name.clone(),
            workers: state.workers(),
            stats: state.stats(),
            hooks: state.hooks.clone(),
            work_duration: state.work_duration.clone(),
            reconcile_time: state.reconcile_time.clone(),
            unfinished_work,
            longest_running,
            informers,
        }
    }
}
