//! The probes' answers in controller-runtime's `pkg/healthz` format, one rule per test: the
//! short and verbose forms, withheld and shown reasons, excludes, panics, the query.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;

fn user(name: &str, check: Check) -> NamedCheck {
    NamedCheck {
        name: name.to_owned(),
        check,
        reason: Reason::Withheld,
    }
}

fn own(name: &str, check: Check) -> NamedCheck {
    NamedCheck {
        name: name.to_owned(),
        check,
        reason: Reason::Shown,
    }
}

fn ok() -> Check {
    (|| Ok(())).into_check()
}

fn failing(why: &'static str) -> Check {
    (move || Err(why.into())).into_check()
}

fn query(q: &str) -> ProbeQuery {
    ProbeQuery::parse(Some(q))
}

#[tokio::test]
async fn every_check_passing_answers_ok_alone() {
    let checks = [
        user("b", ok()),
        user("a", (|| async { Ok(()) }).into_check()),
    ];
    assert_eq!(
        aggregate("healthz", &checks, &ProbeQuery::default()).await,
        Aggregate {
            passed: true,
            body: "ok\n".into()
        }
    );
}

#[tokio::test]
async fn verbose_lists_every_check_in_name_order_then_passed() {
    let checks = [user("zeta", ok()), user("alpha", ok()), user("mid", ok())];
    let answer = aggregate("healthz", &checks, &query("verbose")).await;
    assert!(answer.passed);
    assert_eq!(
        answer.body,
        "[+]alpha ok\n[+]mid ok\n[+]zeta ok\nhealthz check passed\n"
    );
    // Go looks for the key only: any value, even `false`, asks for the list.
    let answer = aggregate("healthz", &checks, &query("verbose=false")).await;
    assert!(answer.body.ends_with("healthz check passed\n"));
}

#[tokio::test]
async fn a_failure_is_always_verbose_and_withholds_the_users_reason() {
    let checks = [
        user("db", failing("password rejected for admin")),
        user("cache", ok()),
    ];
    let answer = aggregate("readyz", &checks, &ProbeQuery::default()).await;
    assert!(!answer.passed);
    assert_eq!(
        answer.body,
        "[+]cache ok\n[-]db failed: reason withheld\nhealthz check failed\n"
    );
    assert!(!answer.body.contains("password"));
}

#[tokio::test]
async fn the_managers_own_checks_show_their_reason() {
    let checks = [
        own("informer-sync", failing("caches not synced: pods.v1")),
        user("db", ok()),
    ];
    let answer = aggregate("readyz", &checks, &ProbeQuery::default()).await;
    assert_eq!(
        answer.body,
        "[+]db ok\n[-]informer-sync failed: caches not synced: pods.v1\nhealthz check failed\n"
    );
}

#[tokio::test]
async fn an_excluded_check_is_not_run_and_is_listed_as_excluded() {
    let runs = Arc::new(AtomicUsize::new(0));
    let counter = runs.clone();
    let counted = move || {
        counter.fetch_add(1, Ordering::SeqCst);
        Err("down".into())
    };
    let checks = [user("flaky", counted.into_check()), user("other", ok())];
    let answer = aggregate("healthz", &checks, &query("exclude=flaky")).await;
    assert_eq!(runs.load(Ordering::SeqCst), 0, "not run");
    assert!(answer.passed, "an excluded failure does not fail the probe");
    assert_eq!(answer.body, "ok\n", "short when passing and not verbose");
    let answer = aggregate("healthz", &checks, &query("exclude=flaky&verbose")).await;
    assert_eq!(
        answer.body,
        "[+]flaky excluded: ok\n[+]other ok\nhealthz check passed\n"
    );
}

#[tokio::test]
async fn excludes_naming_no_check_are_warned_about_sorted_and_quoted() {
    let checks = [user("a", ok()), user("b", failing("no"))];
    let answer = aggregate(
        "healthz",
        &checks,
        &query("exclude=zz&exclude=a&exclude=nope"),
    )
    .await;
    assert_eq!(
        answer.body,
        "[+]a excluded: ok\n[-]b failed: reason withheld\n\
         warn: some health checks cannot be excluded: no matches for \"nope\",\"zz\"\n\
         healthz check failed\n"
    );
    // Passing, the warning is shown only with the list.
    let checks = [user("a", ok())];
    assert_eq!(
        aggregate("healthz", &checks, &query("exclude=x"))
            .await
            .body,
        "ok\n"
    );
    assert_eq!(
        aggregate("healthz", &checks, &query("exclude=x&verbose"))
            .await
            .body,
        "[+]a ok\nwarn: some health checks cannot be excluded: no matches for \"x\"\nhealthz check passed\n"
    );
}

#[tokio::test]
async fn a_panicking_check_fails_instead_of_ending_the_request() {
    let boom: fn() -> CheckResult = || panic!("poisoned");
    let check = boom.into_check();
    let error = check.run().await.unwrap_err();
    assert_eq!(error.to_string(), "check panicked: poisoned");
    let checks = [user("boom", check), user("fine", ok())];
    let answer = aggregate("healthz", &checks, &ProbeQuery::default()).await;
    assert!(!answer.passed);
    assert!(answer.body.contains("[-]boom failed: reason withheld\n"));
    assert!(answer.body.contains("[+]fine ok\n"), "the others still ran");
}

#[tokio::test]
async fn checks_run_at_once() {
    // Each check waits until both have started: run one after the other, they never end.
    let barrier = Arc::new(tokio::sync::Barrier::new(2));
    let meet = |barrier: Arc<tokio::sync::Barrier>| {
        (move || {
            let barrier = barrier.clone();
            async move {
                barrier.wait().await;
                Ok(())
            }
        })
        .into_check()
    };
    let checks = [user("a", meet(barrier.clone())), user("b", meet(barrier))];
    let answer = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        aggregate("readyz", &checks, &ProbeQuery::default()),
    )
    .await
    .expect("the checks ran concurrently");
    assert!(answer.passed);
}

#[test]
fn the_query_is_decoded_as_gos_parse_query() {
    assert_eq!(ProbeQuery::parse(None), ProbeQuery::default());
    let q = query("exclude=a%2Db&exclude=with+space&exclude=bad%zz&verbose&other=1");
    assert!(q.verbose);
    assert_eq!(
        q.exclude.iter().map(String::as_str).collect::<Vec<_>>(),
        ["a-b", "bad%zz", "with space"]
    );
    assert!(!query("verbosely=1").verbose, "only the exact key");
    assert_eq!(
        query("exclude=").exclude.len(),
        1,
        "an empty name is a name"
    );
}

#[test]
fn check_names_are_path_segments() {
    for good in ["ping", "informer-sync", "db_1", "v1.2"] {
        assert!(valid_name(good), "{good}");
    }
    for bad in ["", "a/b", "two words", "é", "a?b", "a%20"] {
        assert!(!valid_name(bad), "{bad:?}");
    }
}
