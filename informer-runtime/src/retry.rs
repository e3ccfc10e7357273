//! Retrying a write that lost a race: client-go's `util/retry` ([`retry_on_conflict`],
//! [`on_error`]) and the `wait.Backoff` it takes ([`RetryBackoff`]).
//!
//! A controller that reads an object, changes it and writes it back with its
//! `resourceVersion` gets `409 Conflict` when someone wrote in between. Inside a reconcile
//! the usual answer is to return the error and let the workqueue retry the key later;
//! [`retry_on_conflict`] is for the places where the write should land now (a status update
//! at the end of a long reconcile, a command-line tool, a task), re-reading the object on
//! every attempt.
//!
//! Delays are slept with `tokio::time`, so tests with paused time see them instantly.

use std::error::Error as StdError;
use std::future::Future;
use std::time::Duration;

use kube::core::response::reason;

use crate::controller::ReconcileError;
use crate::jitter::{jitter, scale};

/// How often and how far apart [`on_error`] tries: client-go's `wait.Backoff` as
/// `wait.ExponentialBackoff` uses it.
///
/// Attempts: at most [`steps`](Self::steps) (at least one). Between two attempts it sleeps
/// the current `duration`, stretched by up to `jitter × duration`, and then multiplies
/// `duration` by `factor` (when `factor` is not zero). Growth stops at `cap`: as in client-go,
/// when the delay after the current one would pass `cap`, the attempt just made is the last.
///
/// ```
/// use std::time::Duration;
/// use informer_runtime::retry::RetryBackoff;
///
/// // client-go's retry.DefaultRetry: 5 attempts, 10 ms apart (+ up to 10% jitter).
/// let b = RetryBackoff::DEFAULT_RETRY;
/// assert_eq!((b.steps, b.duration, b.factor), (5, Duration::from_millis(10), 1.0));
/// let no_jitter = RetryBackoff { jitter: 0.0, ..RetryBackoff::DEFAULT_BACKOFF };
/// // client-go's retry.DefaultBackoff: 4 attempts, 10, 50 and 250 ms apart.
/// assert_eq!(
///     no_jitter.delays().collect::<Vec<_>>(),
///     [10, 50, 250].map(Duration::from_millis),
/// );
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryBackoff {
    /// The most attempts (client-go's `Steps`); 0 is treated as 1 (see [`on_error`]).
    pub steps: u32,
    /// The first delay (client-go's `Duration`).
    pub duration: Duration,
    /// Each delay is the previous one times this; 0 keeps it as it is. Negative or not
    /// finite values are treated as 0.
    pub factor: f64,
    /// Each sleep is stretched by a random amount of up to `jitter × delay`; 0 (or a
    /// negative or not finite value) sleeps the delay exactly. The next delay grows from the
    /// delay before jitter.
    pub jitter: f64,
    /// The largest delay (`None` or zero: no limit). Retrying ends before the first delay
    /// whose successor would pass it, as with client-go's `Cap` (which sleeps that delay
    /// and then stops without another attempt).
    pub cap: Option<Duration>,
}

impl RetryBackoff {
    /// client-go's `retry.DefaultRetry`, for a conflict between clients writing the same
    /// object: 5 attempts, 10 ms apart, jitter 0.1.
    pub const DEFAULT_RETRY: Self = Self {
        steps: 5,
        duration: Duration::from_millis(10),
        factor: 1.0,
        jitter: 0.1,
        cap: None,
    };

    /// client-go's `retry.DefaultBackoff`, for a change to an object other controllers are
    /// busy with: 4 attempts, 10 ms first, times 5 each time, jitter 0.1.
    pub const DEFAULT_BACKOFF: Self = Self {
        steps: 4,
        duration: Duration::from_millis(10),
        factor: 5.0,
        jitter: 0.1,
        cap: None,
    };

    /// The delays slept between attempts, before jitter, in order: one fewer than the
    /// attempts [`on_error`] makes when every attempt fails with a retriable error.
    ///
    /// ```
    /// use std::time::Duration;
    /// use informer_runtime::retry::RetryBackoff;
    ///
    /// let b = RetryBackoff {
    ///     steps: 10,
    ///     duration: Duration::from_secs(1),
    ///     factor: 2.0,
    ///     jitter: 0.0,
    ///     cap: Some(Duration::from_secs(5)),
    /// };
    /// // 1 s, 2 s; the delay after 4 s (8 s) would pass the cap, so client-go sleeps 4 s and
    /// // stops without another attempt: here the third attempt is the last, without that sleep.
    /// assert_eq!(b.delays().collect::<Vec<_>>(), [1, 2].map(Duration::from_secs));
    /// ```
    pub fn delays(&self) -> impl Iterator<Item = Duration> + use<> {
        let factor = if self.factor.is_finite() && self.factor > 0.0 {
            self.factor
        } else {
            0.0
        };
        let cap = self.cap.filter(|c| !c.is_zero());
        let mut remaining = self.steps.max(1);
        let mut duration = self.duration;
        std::iter::from_fn(move || {
            // client-go: no sleep after the last attempt.
            if remaining <= 1 {
                return None;
            }
            remaining -= 1;
            let this = duration;
            if factor != 0.0 {
                let next = scale(duration, factor);
                match cap {
                    // client-go sets Steps to 0 here and its loop ends without another
                    // attempt (after sleeping this delay): end without the useless sleep.
                    Some(cap) if next > cap => {
                        remaining = 0;
                        return None;
                    }
                    _ => duration = next,
                }
            }
            Some(this)
        })
    }
}

impl Default for RetryBackoff {
    /// [`RetryBackoff::DEFAULT_RETRY`].
    fn default() -> Self {
        Self::DEFAULT_RETRY
    }
}

/// Runs `attempt` until it succeeds, fails with an error `retriable` refuses, or `backoff`
/// runs out of attempts; returns the last result. client-go's `retry.OnError`.
///
/// Guarantees: `attempt` runs at least once and at most `backoff.steps` times, one attempt
/// at a time, with the [`delays`](RetryBackoff::delays) (jittered) slept between them. The
/// error returned is the attempt's own, unchanged: after the last retriable failure, that
/// failure (client-go returns the last retriable error too).
///
/// One difference from client-go: a backoff of 0 steps makes one attempt here (client-go's
/// makes none and returns no error, which has no counterpart for a result with a value).
///
/// ```
/// use informer_runtime::retry::{RetryBackoff, on_error};
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// let mut tries = 0;
/// let result: Result<u32, std::io::Error> = on_error(
///     RetryBackoff::DEFAULT_RETRY,
///     |e: &std::io::Error| e.kind() == std::io::ErrorKind::WouldBlock,
///     || {
///         tries += 1;
///         let outcome = if tries < 3 { Err(std::io::ErrorKind::WouldBlock.into()) } else { Ok(tries) };
///         async move { outcome }
///     },
/// )
/// .await;
/// assert_eq!(result.unwrap(), 3);
/// # });
/// ```
pub async fn on_error<T, E, F, Fut>(
    backoff: RetryBackoff,
    mut retriable: impl FnMut(&E) -> bool,
    mut attempt: F,
) -> Result<T, E>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    let mut delays = backoff.delays();
    loop {
        match attempt().await {
            Err(e) if retriable(&e) => match delays.next() {
                Some(delay) => tokio::time::sleep(jitter(delay, backoff.jitter)).await,
                None => return Err(e),
            },
            done => return done,
        }
    }
}

/// Runs `attempt` again after a `409 Conflict` (see [`is_conflict`]), as [`on_error`] does.
/// client-go's `retry.RetryOnConflict`.
///
/// `attempt` should read the object afresh (from the API server, or from a cache that has
/// seen its own writes), change it and write it, and return the write's error as it came:
/// a conflict means someone wrote since the read, so the next attempt must read again.
/// Errors other than conflicts are returned at once; after the last attempt, the last
/// conflict is returned.
///
/// ```no_run
/// use informer_runtime::retry::{RetryBackoff, retry_on_conflict};
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube::api::{Api, PostParams};
///
/// # async fn f(client: kube::Client) -> Result<(), kube::Error> {
/// let api: Api<ConfigMap> = Api::namespaced(client, "default");
/// retry_on_conflict(RetryBackoff::DEFAULT_RETRY, || async {
///     let mut cm = api.get("settings").await?; // read again on every attempt
///     cm.data.get_or_insert_default().insert("mode".into(), "fast".into());
///     api.replace("settings", &PostParams::default(), &cm).await
/// })
/// .await?;
/// # Ok(())
/// # }
/// ```
pub async fn retry_on_conflict<T, E, F, Fut>(backoff: RetryBackoff, attempt: F) -> Result<T, E>
where
    E: ConflictError,
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    on_error(backoff, |e: &E| e.is_conflict(), attempt).await
}

/// An error that may be an API server's `409 Conflict`: what [`retry_on_conflict`] retries.
///
/// Implemented for `kube::Error`, [`ReconcileError`] and boxed errors; for another error
/// type (`anyhow::Error`, your own), call [`on_error`] with [`is_conflict`] on the
/// underlying `std::error::Error`.
pub trait ConflictError {
    /// Whether this is, or wraps, a conflict (see [`is_conflict`]).
    fn is_conflict(&self) -> bool;
}

impl ConflictError for kube::Error {
    fn is_conflict(&self) -> bool {
        is_conflict(self)
    }
}

impl ConflictError for ReconcileError {
    fn is_conflict(&self) -> bool {
        is_conflict(self.as_error())
    }
}

impl ConflictError for Box<dyn StdError + Send + Sync + 'static> {
    fn is_conflict(&self) -> bool {
        is_conflict(&**self)
    }
}

impl ConflictError for Box<dyn StdError + 'static> {
    fn is_conflict(&self) -> bool {
        is_conflict(&**self)
    }
}

/// Whether `error`, or an error in its [`source`](StdError::source) chain, is an API
/// server's conflict (client-go's `errors.IsConflict`): a `kube::Error::Api` whose reason is
/// `Conflict` (an update with a stale `resourceVersion`, a server-side apply conflict), or
/// whose code is 409 and whose reason is none of the API's known reasons. `AlreadyExists`,
/// also a 409, is not a conflict.
///
/// ```
/// use informer_runtime::retry::is_conflict;
/// use kube::core::Status;
///
/// let conflict = kube::Error::Api(Box::new(Status::failure("modified", "Conflict").with_code(409)));
/// let exists = kube::Error::Api(Box::new(Status::failure("exists", "AlreadyExists").with_code(409)));
/// assert!(is_conflict(&conflict));
/// assert!(!is_conflict(&exists));
/// ```
pub fn is_conflict(error: &(dyn StdError + 'static)) -> bool {
    crate::api_error::api_status(error).is_some_and(|status| {
        status.reason == "Conflict" || (status.code == 409 && !reason::is_known(&status.reason))
    })
}

#[cfg(test)]
mod tests;
