//! Rate limiters: how long a failed item waits before it is retried.
//!
//! The same limiters as client-go's `util/workqueue/default_rate_limiters.go`:
//!
//! | limiter | delay |
//! | --- | --- |
//! | [`ItemExponentialFailureRateLimiter`] | per item: `base * 2^failures`, capped |
//! | [`BucketRateLimiter`] | overall: a token bucket (`qps`, `burst`) |
//! | [`ItemFastSlowRateLimiter`] | per item: `fast` for the first attempts, then `slow` |
//! | [`MaxOfRateLimiter`] | the largest delay of several limiters |
//! | [`WithMaxWaitRateLimiter`] | another limiter's delay, capped |
//!
//! [`default_controller_rate_limiter`] is client-go's `DefaultControllerRateLimiter`: the
//! max of a per-item exponential backoff (5 ms doubling to 1000 s) and an overall bucket of
//! 10 retries per second with a burst of 100. [`default_item_based_rate_limiter`] is its
//! `DefaultItemBasedRateLimiter`: the per-item backoff alone, from 1 ms to 1000 s.
//!
//! client-go's `Typed*` names (`NewTypedItemExponentialFailureRateLimiter[T]`, ...) are the
//! same limiters: every limiter here is generic over the item type.
//!
//! Every limiter is `Send + Sync` and [`RateLimiter`] is object safe, so a queue takes any of
//! them (or a user's own) as `Arc<dyn RateLimiter<T>>`.

use std::fmt;
use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::Instant;

type FastMap<K, V> = hashbrown::HashMap<K, V, foldhash::fast::RandomState>;

/// Decides how long an item waits before it is retried.
///
/// [`when`](RateLimiter::when) is called once per failure (by
/// [`Queue::add_rate_limited`](crate::queue::Queue::add_rate_limited)) and records it;
/// [`forget`](RateLimiter::forget) is called when the item succeeded, resetting its history.
/// Implementations are shared between workers, hence `Send + Sync` and `&self`.
///
/// The trait is object safe; `Arc<R>` and `Box<R>` implement it for any implementation `R`,
/// including `dyn RateLimiter<T>`.
///
/// ```
/// use std::time::Duration;
/// use informer_core::queue::RateLimiter;
///
/// /// Always waits one second.
/// struct OneSecond;
///
/// impl<T: ?Sized> RateLimiter<T> for OneSecond {
///     fn when(&self, _: &T) -> Duration { Duration::from_secs(1) }
///     fn forget(&self, _: &T) {}
///     fn num_requeues(&self, _: &T) -> u32 { 0 }
/// }
///
/// let limiter: Box<dyn RateLimiter<str>> = Box::new(OneSecond);
/// assert_eq!(limiter.when("default/web-0"), Duration::from_secs(1));
/// ```
pub trait RateLimiter<T: ?Sized>: Send + Sync {
    /// Records a failure of `item` and returns how long it should wait before its retry.
    fn when(&self, item: &T) -> Duration;

    /// Stops tracking `item`: its next failure counts as its first.
    fn forget(&self, item: &T);

    /// How many failures of `item` were recorded since it was last forgotten (0 for limiters
    /// that do not track items).
    fn num_requeues(&self, item: &T) -> u32;
}

impl<T: ?Sized, R: RateLimiter<T> + ?Sized> RateLimiter<T> for Arc<R> {
    #[inline]
    fn when(&self, item: &T) -> Duration {
        (**self).when(item)
    }

    #[inline]
    fn forget(&self, item: &T) {
        (**self).forget(item)
    }

    #[inline]
    fn num_requeues(&self, item: &T) -> u32 {
        (**self).num_requeues(item)
    }
}

impl<T: ?Sized, R: RateLimiter<T> + ?Sized> RateLimiter<T> for Box<R> {
    #[inline]
    fn when(&self, item: &T) -> Duration {
        (**self).when(item)
    }

    #[inline]
    fn forget(&self, item: &T) {
        (**self).forget(item)
    }

    #[inline]
    fn num_requeues(&self, item: &T) -> u32 {
        (**self).num_requeues(item)
    }
}

/// client-go's default controller rate limiter: the max of a per-item exponential backoff
/// (5 ms, doubling on every failure, capped at 1000 s) and an overall token bucket (10
/// retries per second, burst of 100).
///
/// The bucket only slows retries down once more than 100 items failed in quick succession;
/// the per-item backoff keeps one failing item from spinning.
///
/// ```
/// use std::time::Duration;
/// use informer_core::queue::{RateLimiter, default_controller_rate_limiter};
///
/// let limiter = default_controller_rate_limiter::<String>();
/// let key = "default/web-0".to_string();
/// assert_eq!(limiter.when(&key), Duration::from_millis(5));
/// assert_eq!(limiter.when(&key), Duration::from_millis(10));
/// assert_eq!(limiter.num_requeues(&key), 2);
/// limiter.forget(&key);
/// assert_eq!(limiter.num_requeues(&key), 0);
/// ```
pub fn default_controller_rate_limiter<T>() -> MaxOfRateLimiter<T>
where
    T: Hash + Eq + Clone + Send + Sync + 'static,
{
    MaxOfRateLimiter::new(vec![
        Box::new(ItemExponentialFailureRateLimiter::<T>::default()),
        Box::new(BucketRateLimiter::default()),
    ])
}

/// client-go's `DefaultItemBasedRateLimiter`: a per-item exponential backoff from 1 ms,
/// doubling on every failure, capped at 1000 s, with no overall bucket (so many items
/// failing at once are not slowed down together).
///
/// Unlike [`default_controller_rate_limiter`], whose per-item part starts at 5 ms, and
/// unlike [`ItemExponentialFailureRateLimiter::default`] (that same 5 ms part).
///
/// ```
/// use std::time::Duration;
/// use informer_core::queue::{RateLimiter, default_item_based_rate_limiter};
///
/// let limiter = default_item_based_rate_limiter::<&str>();
/// assert_eq!(limiter.when(&"a"), Duration::from_millis(1));
/// assert_eq!(limiter.when(&"a"), Duration::from_millis(2));
/// assert_eq!(limiter.when(&"b"), Duration::from_millis(1)); // per item
/// limiter.forget(&"a");
/// assert_eq!(limiter.when(&"a"), Duration::from_millis(1));
/// ```
pub fn default_item_based_rate_limiter<T>() -> ItemExponentialFailureRateLimiter<T> {
    ItemExponentialFailureRateLimiter::new(Duration::from_millis(1), Duration::from_secs(1000))
}

/// `base * 2^failures` per item, capped at `max` (client-go's
/// `ItemExponentialFailureRateLimiter`).
///
/// The first failure of an item waits `base`, the second `2 * base`, and so on; the delay
/// never exceeds `max` and never overflows, however many failures are recorded. Items are
/// tracked until [`forget`](RateLimiter::forget): forgetting items that succeeded is what
/// keeps the map small.
///
/// ```
/// use std::time::Duration;
/// use informer_core::queue::{ItemExponentialFailureRateLimiter, RateLimiter};
///
/// let limiter = ItemExponentialFailureRateLimiter::new(
///     Duration::from_millis(1),
///     Duration::from_millis(3),
/// );
/// assert_eq!(limiter.when(&"a"), Duration::from_millis(1));
/// assert_eq!(limiter.when(&"a"), Duration::from_millis(2));
/// assert_eq!(limiter.when(&"a"), Duration::from_millis(3)); // capped
/// assert_eq!(limiter.when(&"b"), Duration::from_millis(1)); // per item
/// ```
pub struct ItemExponentialFailureRateLimiter<T> {
    failures: Mutex<FastMap<T, u32>>,
    base: Duration,
    max: Duration,
}

impl<T> ItemExponentialFailureRateLimiter<T> {
    /// A limiter starting at `base` and capped at `max`.
    pub fn new(base: Duration, max: Duration) -> Self {
        Self {
            failures: Mutex::new(FastMap::default()),
            base,
            max,
        }
    }
}

impl<T> Default for ItemExponentialFailureRateLimiter<T> {
    /// 5 ms doubling to 1000 s, as client-go's default controller limiter.
    fn default() -> Self {
        Self::new(Duration::from_millis(5), Duration::from_secs(1000))
    }
}

impl<T> fmt::Debug for ItemExponentialFailureRateLimiter<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ItemExponentialFailureRateLimiter")
            .field("base", &self.base)
            .field("max", &self.max)
            .field("tracked_items", &self.failures.lock().len())
            .finish()
    }
}

/// `base * 2^exp`, or `max` if that is larger or does not fit.
fn exponential_backoff(base: Duration, max: Duration, exp: u32) -> Duration {
    if base.is_zero() {
        return Duration::ZERO;
    }
    if exp >= 64 {
        return max;
    }
    match base.as_nanos().checked_mul(1u128 << exp) {
        Some(nanos) if nanos < max.as_nanos() => {
            // Fits: `nanos < max.as_nanos()`, so the seconds fit in a u64.
            let secs = (nanos / 1_000_000_000) as u64;
            let sub = (nanos % 1_000_000_000) as u32;
            Duration::new(secs, sub)
        }
        _ => max,
    }
}

impl<T> RateLimiter<T> for ItemExponentialFailureRateLimiter<T>
where
    T: Hash + Eq + Clone + Send + Sync,
{
    fn when(&self, item: &T) -> Duration {
        let exp = {
            let mut failures = self.failures.lock();
            match failures.get_mut(item) {
                Some(count) => {
                    let exp = *count;
                    *count = count.saturating_add(1);
                    exp
                }
                None => {
                    failures.insert(item.clone(), 1);
                    0
                }
            }
        };
        exponential_backoff(self.base, self.max, exp)
    }

    fn forget(&self, item: &T) {
        self.failures.lock().remove(item);
    }

    fn num_requeues(&self, item: &T) -> u32 {
        self.failures.lock().get(item).copied().unwrap_or(0)
    }
}

/// `fast` for the first `max_fast_attempts` failures of an item, then `slow` (client-go's
/// `ItemFastSlowRateLimiter`).
///
/// ```
/// use std::time::Duration;
/// use informer_core::queue::{ItemFastSlowRateLimiter, RateLimiter};
///
/// let limiter = ItemFastSlowRateLimiter::new(Duration::from_millis(5), Duration::from_secs(10), 2);
/// assert_eq!(limiter.when(&"a"), Duration::from_millis(5));
/// assert_eq!(limiter.when(&"a"), Duration::from_millis(5));
/// assert_eq!(limiter.when(&"a"), Duration::from_secs(10));
/// assert_eq!(limiter.num_requeues(&"a"), 3);
/// ```
pub struct ItemFastSlowRateLimiter<T> {
    failures: Mutex<FastMap<T, u32>>,
    fast: Duration,
    slow: Duration,
    max_fast_attempts: u32,
}

impl<T> ItemFastSlowRateLimiter<T> {
    /// A limiter that waits `fast` for the first `max_fast_attempts` failures, then `slow`.
    pub fn new(fast: Duration, slow: Duration, max_fast_attempts: u32) -> Self {
        Self {
            failures: Mutex::new(FastMap::default()),
            fast,
            slow,
            max_fast_attempts,
        }
    }
}

impl<T> fmt::Debug for ItemFastSlowRateLimiter<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ItemFastSlowRateLimiter")
            .field("fast", &self.fast)
            .field("slow", &self.slow)
            .field("max_fast_attempts", &self.max_fast_attempts)
            .field("tracked_items", &self.failures.lock().len())
            .finish()
    }
}

impl<T> RateLimiter<T> for ItemFastSlowRateLimiter<T>
where
    T: Hash + Eq + Clone + Send + Sync,
{
    fn when(&self, item: &T) -> Duration {
        let count = {
            let mut failures = self.failures.lock();
            match failures.get_mut(item) {
                Some(count) => {
                    *count = count.saturating_add(1);
                    *count
                }
                None => {
                    failures.insert(item.clone(), 1);
                    1
                }
            }
        };
        if count <= self.max_fast_attempts {
            self.fast
        } else {
            self.slow
        }
    }

    fn forget(&self, item: &T) {
        self.failures.lock().remove(item);
    }

    fn num_requeues(&self, item: &T) -> u32 {
        self.failures.lock().get(item).copied().unwrap_or(0)
    }
}

/// A token bucket over all items (client-go's `BucketRateLimiter` over
/// `golang.org/x/time/rate`).
///
/// The bucket holds up to `burst` tokens and refills at `qps` tokens per second. Every
/// [`when`](RateLimiter::when) takes a token, borrowing from the future when the bucket is
/// empty: the returned delay is how long until that token exists. So `burst` retries go
/// through at once, then retries are spaced `1 / qps` apart. The bucket does not track
/// items: [`forget`](RateLimiter::forget) does nothing and
/// [`num_requeues`](RateLimiter::num_requeues) is always 0.
///
/// Time is read from [`tokio::time::Instant`], so tests can drive it with tokio's paused
/// clock.
///
/// Degenerate settings: an infinite `qps` never delays; a `qps` that is zero, negative or
/// NaN grants the burst and then answers [`Duration::MAX`] (never) without taking a token,
/// like client-go; a `burst` of 0 is taken as 1.
///
/// ```
/// use std::time::Duration;
/// use informer_core::queue::{BucketRateLimiter, RateLimiter};
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let bucket = BucketRateLimiter::new(10.0, 2);
/// assert_eq!(bucket.when(&"a"), Duration::ZERO);
/// assert_eq!(bucket.when(&"b"), Duration::ZERO);
/// assert_eq!(bucket.when(&"c"), Duration::from_millis(100));
/// assert_eq!(bucket.when(&"d"), Duration::from_millis(200));
/// tokio::time::advance(Duration::from_millis(300)).await;
/// assert_eq!(bucket.when(&"e"), Duration::ZERO);
/// # }
/// ```
pub struct BucketRateLimiter {
    state: Mutex<Bucket>,
    qps: f64,
    burst: f64,
}

#[derive(Debug)]
struct Bucket {
    tokens: f64,
    /// When `tokens` was last brought up to date; `None` until the first `when` (full).
    last: Option<Instant>,
}

impl BucketRateLimiter {
    /// A bucket refilling at `qps` tokens per second and holding at most `burst` tokens.
    /// It starts full.
    pub fn new(qps: f64, burst: u32) -> Self {
        let burst = f64::from(burst.max(1));
        Self {
            state: Mutex::new(Bucket {
                tokens: burst,
                last: None,
            }),
            qps,
            burst,
        }
    }

    fn reserve(&self) -> Duration {
        if self.qps == f64::INFINITY {
            return Duration::ZERO;
        }
        let now = Instant::now();
        let mut bucket = self.state.lock();
        let tokens = match bucket.last {
            None => self.burst,
            Some(last) if self.qps > 0.0 => {
                let elapsed = now.saturating_duration_since(last).as_secs_f64();
                (bucket.tokens + elapsed * self.qps).min(self.burst)
            }
            Some(_) => bucket.tokens,
        };
        bucket.last = Some(bucket.last.map_or(now, |last| last.max(now)));
        let refills = self.qps > 0.0; // false for zero, negative and NaN
        if !refills {
            // No refill: only what is left of the burst is ever granted.
            return if tokens >= 1.0 {
                bucket.tokens = tokens - 1.0;
                Duration::ZERO
            } else {
                bucket.tokens = tokens;
                Duration::MAX
            };
        }
        let tokens = tokens - 1.0;
        bucket.tokens = tokens;
        if tokens >= 0.0 {
            Duration::ZERO
        } else {
            // Saturating float-to-int conversion: absurd waits become ~584 years.
            Duration::from_nanos((-tokens / self.qps * 1e9).round() as u64)
        }
    }
}

impl Default for BucketRateLimiter {
    /// 10 tokens per second, burst of 100, as client-go's default controller limiter.
    fn default() -> Self {
        Self::new(10.0, 100)
    }
}

impl fmt::Debug for BucketRateLimiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BucketRateLimiter")
            .field("qps", &self.qps)
            .field("burst", &self.burst)
            .finish_non_exhaustive()
    }
}

impl<T: ?Sized> RateLimiter<T> for BucketRateLimiter {
    fn when(&self, _item: &T) -> Duration {
        self.reserve()
    }

    fn forget(&self, _item: &T) {}

    fn num_requeues(&self, _item: &T) -> u32 {
        0
    }
}

/// The largest delay of several limiters (client-go's `MaxOfRateLimiter`).
///
/// [`when`](RateLimiter::when) asks every limiter (so each records the failure) and returns
/// the largest answer; [`forget`](RateLimiter::forget) forgets in every limiter;
/// [`num_requeues`](RateLimiter::num_requeues) is the largest count. With no limiter, every
/// delay is zero.
///
/// Caveat (as in client-go): combined with a token bucket, the bucket's burst can appear
/// exceeded when some items were separately delayed longer by another limiter.
///
/// ```
/// use std::time::Duration;
/// use informer_core::queue::{
///     ItemExponentialFailureRateLimiter, ItemFastSlowRateLimiter, MaxOfRateLimiter, RateLimiter,
/// };
///
/// let limiter = MaxOfRateLimiter::<&str>::new(vec![
///     Box::new(ItemFastSlowRateLimiter::new(Duration::from_millis(5), Duration::from_secs(3), 1)),
///     Box::new(ItemExponentialFailureRateLimiter::new(Duration::from_millis(1), Duration::from_secs(1))),
/// ]);
/// assert_eq!(limiter.when(&"a"), Duration::from_millis(5));
/// assert_eq!(limiter.when(&"a"), Duration::from_secs(3));
/// ```
pub struct MaxOfRateLimiter<T> {
    limiters: Vec<Box<dyn RateLimiter<T>>>,
}

impl<T> MaxOfRateLimiter<T> {
    /// The max of `limiters`.
    pub fn new(limiters: Vec<Box<dyn RateLimiter<T>>>) -> Self {
        Self { limiters }
    }
}

impl<T> fmt::Debug for MaxOfRateLimiter<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MaxOfRateLimiter")
            .field("limiters", &self.limiters.len())
            .finish()
    }
}

impl<T> RateLimiter<T> for MaxOfRateLimiter<T> {
    fn when(&self, item: &T) -> Duration {
        self.limiters
            .iter()
            .map(|l| l.when(item))
            .fold(Duration::ZERO, Duration::max)
    }

    fn forget(&self, item: &T) {
        for l in &self.limiters {
            l.forget(item);
        }
    }

    fn num_requeues(&self, item: &T) -> u32 {
        self.limiters
            .iter()
            .map(|l| l.num_requeues(item))
            .max()
            .unwrap_or(0)
    }
}

/// Another limiter's delay, never more than `max_wait` (client-go's
/// `WithMaxWaitRateLimiter`).
///
/// ```
/// use std::time::Duration;
/// use informer_core::queue::{ItemFastSlowRateLimiter, RateLimiter, WithMaxWaitRateLimiter};
///
/// let limiter = WithMaxWaitRateLimiter::new(
///     ItemFastSlowRateLimiter::new(Duration::from_millis(5), Duration::from_secs(1000), 1),
///     Duration::from_secs(60),
/// );
/// assert_eq!(limiter.when(&"a"), Duration::from_millis(5));
/// assert_eq!(limiter.when(&"a"), Duration::from_secs(60));
/// ```
#[derive(Debug)]
pub struct WithMaxWaitRateLimiter<R> {
    inner: R,
    max_wait: Duration,
}

impl<R> WithMaxWaitRateLimiter<R> {
    /// Caps `inner`'s delays at `max_wait`.
    pub fn new(inner: R, max_wait: Duration) -> Self {
        Self { inner, max_wait }
    }
}

impl<T: ?Sized, R: RateLimiter<T>> RateLimiter<T> for WithMaxWaitRateLimiter<R> {
    fn when(&self, item: &T) -> Duration {
        self.inner.when(item).min(self.max_wait)
    }

    fn forget(&self, item: &T) {
        self.inner.forget(item)
    }

    fn num_requeues(&self, item: &T) -> u32 {
        self.inner.num_requeues(item)
    }
}

#[cfg(test)]
mod tests;
