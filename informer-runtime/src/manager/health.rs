//! Named health and readiness checks ([`Manager::add_healthz_check`],
//! [`Manager::add_readyz_check`]) and how `/healthz` and `/readyz` answer them, in
//! controller-runtime's `pkg/healthz` format.
//!
//! | request | answer |
//! | --- | --- |
//! | `/readyz`, `/healthz` (`/livez`) | every check, at once; `ok` when all pass, else the list below |
//! | `...?verbose` | the list even when all pass |
//! | `...?exclude=a&exclude=b` | `a` and `b` not run, listed as `[+]a excluded: ok` |
//! | `/readyz/<name>`, `/healthz/<name>` | that check alone: `ok`, or `internal server error: <its error>` |
//!
//! The list, one line per check in name order, then a verdict:
//!
//! ```text
//! [+]informer-sync ok
//! [-]database failed: reason withheld
//! [+]shutdown ok
//! healthz check failed
//! ```
//!
//! [`Manager::add_healthz_check`]: super::Manager::add_healthz_check
//! [`Manager::add_readyz_check`]: super::Manager::add_readyz_check

use std::collections::BTreeSet;
use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;
use futures::future::{BoxFuture, join_all};

use crate::controller::BoxError;

/// A check's answer: `Ok` when healthy (or ready), otherwise why not.
///
/// ```
/// use informer_runtime::manager::CheckResult;
/// let ready: CheckResult = Ok(());
/// let not_yet: CheckResult = Err("the index is still loading".into());
/// assert_eq!(not_yet.unwrap_err().to_string(), "the index is still loading");
/// # let _ = ready;
/// ```
pub type CheckResult = Result<(), BoxError>;

/// A health or readiness check, type-erased: what [`IntoCheck`] makes of a closure. Cheap to
/// clone (one `Arc`).
///
/// ```
/// use informer_runtime::manager::{Check, IntoCheck};
/// let check: Check = (|| Ok(())).into_check();
/// let _again = check.clone();
/// ```
#[derive(Clone)]
pub struct Check {
    run: Arc<dyn Fn() -> BoxFuture<'static, CheckResult> + Send + Sync>,
}

impl fmt::Debug for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Check").finish_non_exhaustive()
    }
}

impl Check {
    /// Runs the check once; a panic is caught and answered as a failure.
    pub(crate) async fn run(&self) -> CheckResult {
        let run = self.run.clone();
        match AssertUnwindSafe(async move { run().await })
            .catch_unwind()
            .await
        {
            Ok(result) => result,
            Err(payload) => {
                Err(format!("check panicked: {}", crate::panic::message(&*payload)).into())
            }
        }
    }

    /// A check from a future-returning function (for the manager's own checks).
    pub(crate) fn from_async<F, Fut>(f: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = CheckResult> + Send + 'static,
    {
        Self {
            run: Arc::new(move || f().boxed()),
        }
    }
}

/// Marks a [`IntoCheck`] made from a plain closure `|| -> Result<(), BoxError>`; inferred,
/// never written.
///
/// ```
/// use informer_runtime::manager::{IntoCheck, SyncCheck};
/// fn sync_only(_: impl IntoCheck<SyncCheck>) {}
/// sync_only(|| Ok(()));
/// ```
#[derive(Debug)]
pub enum SyncCheck {}

/// Marks a [`IntoCheck`] made from a closure returning a future, `|| async { .. }`;
/// inferred, never written.
///
/// ```
/// use informer_runtime::manager::{AsyncCheck, IntoCheck};
/// fn async_only(_: impl IntoCheck<AsyncCheck>) {}
/// async_only(|| async { Ok(()) });
/// ```
#[derive(Debug)]
pub enum AsyncCheck {}

mod sealed {
    pub trait Sealed<M> {}
}

/// What [`Manager::add_healthz_check`](super::Manager::add_healthz_check) and
/// [`add_readyz_check`](super::Manager::add_readyz_check) take: a closure answering
/// `Result<(), BoxError>`, either directly (`|| Ok(())`) or through a future
/// (`|| async { Ok(()) }`). `M` is [`SyncCheck`] or [`AsyncCheck`], inferred: never name it.
/// Sealed: implemented for those closures only.
///
/// The closure is called once per probe request (requests may overlap), so keep it cheap;
/// a panic in it is caught and counts as a failure. `?` converts any error into
/// [`BoxError`], and `Err("why".into())` makes one from a string.
///
/// ```
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicBool, Ordering};
/// use informer_runtime::manager::{Check, IntoCheck};
///
/// fn check<M>(c: impl IntoCheck<M>) -> Check {
///     c.into_check()
/// }
/// let warm = Arc::new(AtomicBool::new(false));
/// let _sync = check(move || {
///     if warm.load(Ordering::Acquire) { Ok(()) } else { Err("cache not warm yet".into()) }
/// });
/// let _async = check(|| async {
///     let port: u16 = "8443".parse()?; // any error converts
///     let _ = port;
///     Ok(())
/// });
/// ```
pub trait IntoCheck<M>: sealed::Sealed<M> {
    /// The type-erased check.
    fn into_check(self) -> Check;
}

impl<F> sealed::Sealed<SyncCheck> for F where F: Fn() -> CheckResult + Send + Sync + 'static {}

impl<F> IntoCheck<SyncCheck> for F
where
    F: Fn() -> CheckResult + Send + Sync + 'static,
{
    fn into_check(self) -> Check {
        Check::from_async(move || std::future::ready(self()))
    }
}

impl<F, Fut> sealed::Sealed<AsyncCheck> for F
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = CheckResult> + Send + 'static,
{
}

impl<F, Fut> IntoCheck<AsyncCheck> for F
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = CheckResult> + Send + 'static,
{
    fn into_check(self) -> Check {
        Check::from_async(self)
    }
}

/// Whether a check's error may be shown in the aggregated answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reason {
    /// A user's check: its error is withheld (the endpoint is public), as controller-runtime
    /// does; `/<endpoint>/<name>` and the debug log show it.
    Withheld,
    /// One of the manager's own checks, whose errors only name caches or the Lease, or say
    /// that shutdown began: shown, as `/readyz` always did.
    Shown,
}

/// One named check.
#[derive(Debug, Clone)]
pub(crate) struct NamedCheck {
    pub(crate) name: String,
    pub(crate) check: Check,
    pub(crate) reason: Reason,
}

/// Why a check name is refused: empty, or more than letters, digits, `-`, `_` and `.` (the
/// name is a path segment, `/healthz/<name>`, and an `exclude=` value).
pub(crate) fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// The query of a probe request: `verbose` (present with any value) and the `exclude`
/// values, percent-decoded as Go's `url.ParseQuery` does.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct ProbeQuery {
    pub(crate) verbose: bool,
    pub(crate) exclude: BTreeSet<String>,
}

impl ProbeQuery {
    pub(crate) fn parse(query: Option<&str>) -> Self {
        let mut parsed = Self::default();
        for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            match decode(key).as_str() {
                "verbose" => parsed.verbose = true,
                "exclude" => {
                    parsed.exclude.insert(decode(value));
                }
                _ => {}
            }
        }
        parsed
    }
}

/// `+` as a space and `%XX` as a byte; a malformed escape is kept as written.
fn decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = |b: u8| (b as char).to_digit(16);
                match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                    (Some(h), Some(l)) => {
                        out.push((h * 16 + l) as u8);
                        i += 3;
                        continue;
                    }
                    _ => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// One check's outcome in an aggregated answer.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Status {
    Ok,
    Excluded,
    /// Failed; the reason if it may be shown.
    Failed(Option<String>),
}

/// An aggregated answer: whether every check passed, and the body.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Aggregate {
    pub(crate) passed: bool,
    pub(crate) body: String,
}

/// Runs `checks` (all at once) except the excluded ones and writes the answer in
/// controller-runtime's format: `ok` when all pass and `verbose` is not asked for; otherwise
/// one line per check in name order, a warning naming excludes that matched no check, and
/// `healthz check passed` or `healthz check failed`. `endpoint` names the checks in the log.
pub(crate) async fn aggregate(
    endpoint: &str,
    checks: &[NamedCheck],
    query: &ProbeQuery,
) -> Aggregate {
    let mut sorted: Vec<&NamedCheck> = checks.iter().collect();
    sorted.sort_by(|a, b| a.name.cmp(&b.name));
    let mut unknown = query.exclude.clone();
    let statuses = join_all(sorted.iter().map(|c| {
        let excluded = unknown.remove(&c.name);
        async move {
            if excluded {
                return Status::Excluded;
            }
            match c.check.run().await {
                Ok(()) => Status::Ok,
                Err(error) => {
                    tracing::debug!(endpoint, check = %c.name, %error, "check failed");
                    Status::Failed(match c.reason {
                        Reason::Shown => Some(error.to_string()),
                        Reason::Withheld => None,
                    })
                }
            }
        }
    }))
    .await;
    for name in &unknown {
        tracing::debug!(
            endpoint,
            check = %name,
            "cannot exclude a check: no check has that name"
        );
    }
    let passed = !statuses.iter().any(|s| matches!(s, Status::Failed(_)));
    if passed && !query.verbose {
        return Aggregate {
            passed,
            body: "ok\n".to_owned(),
        };
    }
    let mut body = String::new();
    for (check, status) in sorted.iter().zip(&statuses) {
        let name = &check.name;
        match status {
            Status::Ok => body.push_str(&format!("[+]{name} ok\n")),
            Status::Excluded => body.push_str(&format!("[+]{name} excluded: ok\n")),
            Status::Failed(None) => body.push_str(&format!("[-]{name} failed: reason withheld\n")),
            Status::Failed(Some(reason)) => {
                body.push_str(&format!("[-]{name} failed: {reason}\n"));
            }
        }
    }
    if !unknown.is_empty() {
        let quoted: Vec<String> = unknown.iter().map(|n| format!("{n:?}")).collect();
        body.push_str(&format!(
            "warn: some health checks cannot be excluded: no matches for {}\n",
            quoted.join(",")
        ));
    }
    if passed {
        body.push_str("healthz check passed\n");
    } else {
        tracing::debug!(endpoint, statuses = %body, "checks failed");
        body.push_str("healthz check failed\n");
    }
    Aggregate { passed, body }
}

#[cfg(test)]
mod tests;
