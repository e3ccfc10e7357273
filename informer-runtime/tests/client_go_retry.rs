//! client-go's unit test of `retry.RetryOnConflict` (`util/retry/util_test.go`, v0.36), ported
//! onto [`retry_on_conflict`] to find behaviour that differs from client-go.
//!
//! The test is named after the Go test it ports (`<go file>_<go test>` in snake case) and says
//! which one in its first comment. Adaptations: Go's `errors.NewConflict` is a
//! `kube::Error::Api` with client-go's status (code 409, reason `Conflict`); Go compares the
//! returned error by identity (`err != conflictErr`), the port by its status, code and reason.

use std::cell::Cell;

use informer_runtime::retry::{RetryBackoff, retry_on_conflict};
use kube::core::Status;

/// `errors.NewConflict(schema.GroupResource{Resource: "test"}, "other", nil)`.
fn new_conflict() -> kube::Error {
    kube::Error::Api(Box::new(
        Status::failure(
            "Operation cannot be fulfilled on test \"other\": <nil>",
            "Conflict",
        )
        .with_code(409),
    ))
}

fn is_conflict_status(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(s) if s.code == 409 && s.reason == "Conflict")
}

#[tokio::test(start_paused = true)]
async fn util_test_retry_on_conflict() {
    // TestRetryOnConflict
    let opts = RetryBackoff {
        steps: 3,
        factor: 1.0,
        duration: std::time::Duration::ZERO,
        jitter: 0.0,
        cap: None,
    };

    // never returns
    let calls = Cell::new(0);
    let err = retry_on_conflict(opts, || {
        calls.set(calls.get() + 1);
        async { Err::<(), _>(new_conflict()) }
    })
    .await
    .unwrap_err();
    assert!(is_conflict_status(&err), "unexpected error: {err}");
    assert_eq!(calls.get(), 3, "one call per step");

    // returns immediately
    let i = Cell::new(0);
    let result = retry_on_conflict(opts, || {
        i.set(i.get() + 1);
        async { Ok::<(), kube::Error>(()) }
    })
    .await;
    assert!(
        result.is_ok() && i.get() == 1,
        "unexpected error: {result:?}"
    );

    // returns immediately on error
    let calls = Cell::new(0);
    let err = retry_on_conflict(opts, || {
        calls.set(calls.get() + 1);
        async {
            Err::<(), _>(kube::Error::Api(Box::new(
                Status::failure("some other error", "").with_code(500),
            )))
        }
    })
    .await
    .unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(s) if s.message == "some other error"),
        "unexpected error: {err}"
    );
    assert_eq!(calls.get(), 1);

    // keeps retrying
    let i = Cell::new(0);
    let result = retry_on_conflict(opts, || {
        let conflict = i.get() < 2;
        if conflict {
            i.set(i.get() + 1);
        }
        async move {
            if conflict {
                Err(new_conflict())
            } else {
                Ok(())
            }
        }
    })
    .await;
    assert!(
        result.is_ok() && i.get() == 2,
        "unexpected error: {result:?}"
    );
}
