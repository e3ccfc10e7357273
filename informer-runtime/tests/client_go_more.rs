//! More of client-go's own `tools/cache` unit tests (v0.36), ported onto this library's API to
//! find behaviour that differs from client-go: the ones `client_go_informer.rs` and
//! `client_go_watchlist.rs` leave out.
//!
//! Each test is named after the Go test it ports (`<go file>_<go test>` in snake case, table
//! cases with their name appended) and says which one in its first comment. Where this
//! library deliberately differs and documents it, the test asserts the documented behaviour
//! and says so.
//!
//! Sources: `wait_test.go` (`TestWaitFor`: client-go's `WaitFor(ctx, what, checkers...)` is
//! [`wait_for_named_cache_sync`] here, or [`wait_for_cache_sync`] where `what` is empty, and
//! each `DoneChecker` is a future that resolves to `true` when it is done).
//!
//! Adaptations:
//! - Go runs the test in a `synctest` bubble whose clock starts at the epoch; here tokio's
//!   clock is paused, so delays cost nothing and the time `WaitFor` returned at is exact.
//! - The Go test compares the log lines `WaitFor` writes ("Waiting", "Done waiting" per
//!   checker, "Timed out waiting" with the cause and the checkers not done). This library
//!   logs through `tracing` and names no checker (a future has no name), so the ports check
//!   what the lines prove: the result, and the time `WaitFor` returned at (the time of its
//!   last line: when the last checker was done, or when the context ended).
//! - `context.WithTimeout` / `WithCancel` / `WithCancelCause` are a [`CancellationToken`]
//!   cancelled by a task after the timeout (or before the call).
//!
//! Not ported (no counterpart):
//! - `TestSyncResult` (`wait_test.go`): client-go's `SyncResult` (which informer types have
//!   synced, and the cause otherwise) and its `AsError`; the waits here return a `bool`.
//! - `TestRetryWithDeadline` (`retry_with_deadline_test.go`): client-go's exported
//!   `RetryWithDeadline`; the reflector's counterpart is private (`InternalErrorRetry` in
//!   `reflector/run.rs`), and its rule is ported through the reflector as
//!   `TestRetryInternalError` in `client_go_informer.rs`.
//! - `TestToListWatcherWithWatchListSemantics` (`listwatch_test.go`): a Go type assertion on
//!   the client telling whether it supports streaming lists; here a streaming list is a
//!   [`ReflectorConfig`](informer_runtime::reflector::ReflectorConfig) setting, and a server
//!   that refuses one makes the reflector fall back to list and watch.
//! - `processor_listener_test.go`: only a benchmark in v0.36.

use std::time::Duration;

use futures::future::BoxFuture;
use informer_runtime::informer::{
    CancellationToken, wait_for_cache_sync, wait_for_named_cache_sync,
};
use tokio::time::Instant;

const SEC: Duration = Duration::from_secs(1);

/// client-go's `newMockChecker(name, delay)`: done after `delay`, at once for a zero delay,
/// never for a negative one (`None` here).
fn checker(delay: Option<Duration>) -> BoxFuture<'static, bool> {
    Box::pin(async move {
        match delay {
            Some(delay) => {
                tokio::time::sleep(delay).await;
                true
            }
            None => std::future::pending().await,
        }
    })
}

/// The three checkers most cases use: `first` after 10 s, `second` after `second`, `last` at
/// once.
fn first_second_last(second: Option<Duration>) -> Vec<BoxFuture<'static, bool>> {
    vec![
        checker(Some(10 * SEC)),
        checker(second),
        checker(Some(Duration::ZERO)),
    ]
}

/// How a case's context ends: never, after a timeout, or before the call.
enum Ctx {
    Background,
    Timeout(Duration),
    Canceled,
}

fn context(ctx: Ctx) -> CancellationToken {
    let cancel = CancellationToken::new();
    match ctx {
        Ctx::Background => {}
        Ctx::Timeout(after) => {
            let cancel = cancel.clone();
            tokio::spawn(async move {
                tokio::time::sleep(after).await;
                cancel.cancel();
            });
        }
        Ctx::Canceled => cancel.cancel(),
    }
    cancel
}

/// Runs `WaitFor(ctx, what, checkers...)`: whether it reported done, and when it returned.
async fn wait_for(
    ctx: Ctx,
    what: &str,
    checkers: Vec<BoxFuture<'static, bool>>,
) -> (bool, Duration) {
    let cancel = context(ctx);
    let start = Instant::now();
    let done = if what.is_empty() {
        wait_for_cache_sync(&cancel, checkers).await
    } else {
        wait_for_named_cache_sync(what, &cancel, checkers).await
    };
    (done, start.elapsed())
}

// Go: TestWaitFor/empty — no checkers, no timeout: done.
#[tokio::test(start_paused = true)]
async fn wait_test_wait_for_empty() {
    let (done, at) = wait_for(Ctx::Background, "", Vec::new()).await;
    assert!(done, "done");
    assert_eq!(at, Duration::ZERO);
}

// Go: TestWaitFor/no-caches — a name but no checkers: done at once (Go logs "Waiting" only).
#[tokio::test(start_paused = true)]
async fn wait_test_wait_for_no_caches() {
    let (done, at) = wait_for(Ctx::Background, "my-caches", Vec::new()).await;
    assert!(done, "done");
    assert_eq!(at, Duration::ZERO);
}

// Go: TestWaitFor/no-logging — checkers done after 10 s, 5 s and at once, no name: done when
// the slowest is, at 10 s.
#[tokio::test(start_paused = true)]
async fn wait_test_wait_for_no_logging() {
    let (done, at) = wait_for(Ctx::Background, "", first_second_last(Some(5 * SEC))).await;
    assert!(done, "done");
    assert_eq!(at, 10 * SEC);
}

// Go: TestWaitFor/with-logging — the same with a name: Go's last line is "Done waiting"
// for `first` at 00:00:10.
#[tokio::test(start_paused = true)]
async fn wait_test_wait_for_with_logging() {
    let (done, at) = wait_for(
        Ctx::Background,
        "my-caches",
        first_second_last(Some(5 * SEC)),
    )
    .await;
    assert!(done, "done");
    assert_eq!(at, 10 * SEC);
}

// Go: TestWaitFor/some-timeout — `second` is never done, the context times out after a
// minute: not done, "Timed out waiting" at 00:01:00.
#[tokio::test(start_paused = true)]
async fn wait_test_wait_for_some_timeout() {
    let (done, at) = wait_for(Ctx::Timeout(60 * SEC), "my-caches", first_second_last(None)).await;
    assert!(!done, "done");
    assert_eq!(at, 60 * SEC);
}

// Go: TestWaitFor/some-canceled — the context is cancelled before the call: not done, at
// 00:00:00 (`last`, done at once, is reported done; `first` and `second` are not).
#[tokio::test(start_paused = true)]
async fn wait_test_wait_for_some_canceled() {
    let (done, at) = wait_for(Ctx::Canceled, "my-caches", first_second_last(None)).await;
    assert!(!done, "done");
    assert_eq!(at, Duration::ZERO);
}

// Go: TestWaitFor/more — the context is cancelled with a cause ("go fish") after 5 s: not
// done, at 00:00:05. (The cause only shows in Go's log line.)
#[tokio::test(start_paused = true)]
async fn wait_test_wait_for_more() {
    let (done, at) = wait_for(Ctx::Timeout(5 * SEC), "my-caches", first_second_last(None)).await;
    assert!(!done, "done");
    assert_eq!(at, 5 * SEC);
}

// Go: TestWaitFor/all — no checker is ever done, the context times out after a minute: not
// done, at 00:01:00.
#[tokio::test(start_paused = true)]
async fn wait_test_wait_for_all() {
    let (done, at) = wait_for(
        Ctx::Timeout(60 * SEC),
        "my-caches",
        vec![checker(None), checker(None), checker(None)],
    )
    .await;
    assert!(!done, "done");
    assert_eq!(at, 60 * SEC);
}
