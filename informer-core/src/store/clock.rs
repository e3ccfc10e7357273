//! [`Clock`]: where a store reads the time, so that tests can set it ([`FakeClock`]) instead
//! of waiting for it ([`RealClock`]). client-go's `k8s.io/utils/clock` and its `testing`
//! package.
//!
//! Times are [`std::time::Instant`]s: monotonic, so a wall-clock step (NTP, a changed time
//! zone) never makes an entry of an [`ExpirationCache`](super::ExpirationCache) older or
//! younger. Nothing here needs a tokio runtime.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// A source of the current time.
///
/// Implementations must be cheap to call (a store may read the clock on every read) and must
/// not call back into the store that reads them.
///
/// ```
/// use std::time::Instant;
/// use informer_core::store::Clock;
///
/// /// A clock stopped at one instant.
/// struct Stopped(Instant);
/// impl Clock for Stopped {
///     fn now(&self) -> Instant {
///         self.0
///     }
/// }
///
/// let at = Instant::now();
/// assert_eq!(Stopped(at).now(), at);
/// ```
pub trait Clock: Send + Sync {
    /// The current time.
    fn now(&self) -> Instant;
}

/// The system's monotonic clock: [`Instant::now`]. client-go's `clock.RealClock`.
///
/// ```
/// use informer_core::store::{Clock, RealClock};
///
/// let (a, b) = (RealClock.now(), RealClock.now());
/// assert!(b >= a); // never goes backwards
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct RealClock;

impl Clock for RealClock {
    fn now(&self) -> Instant {
        Instant::now()
    }
}

/// A clock that moves only when told to: client-go's `testingclock.FakeClock`.
///
/// Clones share one time, so a test keeps a clone and moves the time of the store it gave
/// the other to. The time never moves by itself; [`advance`](Self::advance) moves it forward,
/// [`set`](Self::set) anywhere (backwards too, as Go's `SetTime`).
///
/// ```
/// use std::time::Duration;
/// use informer_core::store::{Clock, FakeClock};
///
/// let clock = FakeClock::new();
/// let handed_out = clock.clone();
/// let start = handed_out.now();
/// clock.advance(Duration::from_secs(30));
/// assert_eq!(handed_out.now() - start, Duration::from_secs(30));
/// ```
#[derive(Clone)]
pub struct FakeClock {
    now: Arc<Mutex<Instant>>,
}

impl FakeClock {
    /// A clock stopped at the current time of the system's clock.
    ///
    /// ```
    /// use informer_core::store::{Clock, FakeClock};
    ///
    /// let clock = FakeClock::new();
    /// assert_eq!(clock.now(), clock.now());
    /// ```
    pub fn new() -> Self {
        Self::starting_at(Instant::now())
    }

    /// A clock stopped at `now`.
    ///
    /// ```
    /// use std::time::Instant;
    /// use informer_core::store::{Clock, FakeClock};
    ///
    /// let at = Instant::now();
    /// assert_eq!(FakeClock::starting_at(at).now(), at);
    /// ```
    pub fn starting_at(now: Instant) -> Self {
        Self {
            now: Arc::new(Mutex::new(now)),
        }
    }

    /// Moves the time (of this clock and every clone) forward by `by`. client-go's `Step`.
    ///
    /// # Panics
    /// If the new time cannot be represented (`by` is absurdly large, centuries).
    ///
    /// ```
    /// use std::time::Duration;
    /// use informer_core::store::{Clock, FakeClock};
    ///
    /// let clock = FakeClock::new();
    /// let before = clock.now();
    /// clock.advance(Duration::from_millis(1500));
    /// assert_eq!(clock.now().duration_since(before), Duration::from_millis(1500));
    /// ```
    pub fn advance(&self, by: Duration) {
        let mut now = self.now.lock();
        *now = now
            .checked_add(by)
            .unwrap_or_else(|| panic!("FakeClock::advance({by:?}) goes past the largest Instant"));
    }

    /// Sets the time (of this clock and every clone) to `now`, which may be earlier than the
    /// current one. client-go's `SetTime`.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use informer_core::store::{Clock, FakeClock};
    ///
    /// let start = Instant::now();
    /// let clock = FakeClock::starting_at(start + Duration::from_secs(10));
    /// clock.set(start);
    /// assert_eq!(clock.now(), start);
    /// ```
    pub fn set(&self, now: Instant) {
        *self.now.lock() = now;
    }
}

impl Default for FakeClock {
    /// Same as [`FakeClock::new`].
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for FakeClock {
    fn now(&self) -> Instant {
        *self.now.lock()
    }
}

impl fmt::Debug for FakeClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FakeClock")
            .field("now", &*self.now.lock())
            .finish()
    }
}

#[cfg(test)]
mod tests;
