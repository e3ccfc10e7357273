//! Exponential backoff with jitter and a quiet-period reset, as client-go's
//! `ExponentialBackoffManager` (`k8s.io/apimachinery/pkg/util/wait`).

use std::time::Duration;

use tokio::time::Instant;

use crate::jitter::{jitter, scale};

/// The parameters of a [`Backoff`]. The default is client-go's reflector backoff: 800 ms,
/// doubling up to 30 s, jitter 1.0 (each delay is stretched by a random factor in `[1, 2)`),
/// reset to 800 ms once 2 minutes have passed since the previous delay was requested.
///
/// ```
/// use std::time::Duration;
/// use informer_runtime::reflector::BackoffConfig;
///
/// let c = BackoffConfig::default();
/// assert_eq!(c.initial, Duration::from_millis(800));
/// assert_eq!(c.max, Duration::from_secs(30));
/// assert_eq!(c.reset_after, Duration::from_secs(120));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct BackoffConfig {
    /// The first delay.
    pub initial: Duration,
    /// The largest delay before jitter.
    pub max: Duration,
    /// Each delay is the previous one times this (values below 1 are treated as 1).
    pub factor: f64,
    /// Each delay `d` becomes `d + d * jitter * r` for a random `r` in `[0, 1)`; 0 disables
    /// jitter (negative values are treated as 0).
    pub jitter: f64,
    /// When more than this has passed since the previous delay was requested, the next delay
    /// starts again at [`initial`](Self::initial).
    pub reset_after: Duration,
}

impl Default for BackoffConfig {
    fn default() -> Self {
        Self {
            initial: Duration::from_millis(800),
            max: Duration::from_secs(30),
            factor: 2.0,
            jitter: 1.0,
            reset_after: Duration::from_secs(120),
        }
    }
}

/// Delays between retries: exponential, capped, jittered, and reset after a quiet period.
///
/// Guarantees: the `n`-th delay since the last reset is `min(initial * factor^n, max)`
/// stretched by the jitter (so it lies in `[base, base * (1 + jitter))`); it never returns
/// zero unless `initial` is zero. Time is read from `tokio::time`, so paused-time tests see
/// the same sequence. Not shared between tasks: each retry loop owns one.
///
/// ```
/// use std::time::Duration;
/// use informer_runtime::reflector::{Backoff, BackoffConfig};
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// let mut b = Backoff::new(BackoffConfig { jitter: 0.0, ..BackoffConfig::default() });
/// assert_eq!(b.next_delay(), Duration::from_millis(800));
/// assert_eq!(b.next_delay(), Duration::from_millis(1600));
/// # });
/// ```
#[derive(Clone, Debug)]
pub struct Backoff {
    config: BackoffConfig,
    current: Duration,
    last: Option<Instant>,
}

impl Backoff {
    /// A backoff at its first delay.
    pub fn new(config: BackoffConfig) -> Self {
        Self {
            current: config.initial,
            config,
            last: None,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &BackoffConfig {
        &self.config
    }

    /// The next delay; advances the sequence.
    pub fn next_delay(&mut self) -> Duration {
        let now = Instant::now();
        if self
            .last
            .is_some_and(|last| now.saturating_duration_since(last) > self.config.reset_after)
        {
            self.current = self.config.initial;
        }
        self.last = Some(now);
        let base = self.current.min(self.config.max);
        let factor = if self.config.factor.is_finite() && self.config.factor > 1.0 {
            self.config.factor
        } else {
            1.0
        };
        self.current = scale(base, factor).min(self.config.max);
        jitter(base, self.config.jitter)
    }

    /// Starts the sequence again at the first delay.
    pub fn reset(&mut self) {
        self.current = self.config.initial;
        self.last = None;
    }
}

#[cfg(test)]
mod tests;
