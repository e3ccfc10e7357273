use super::*;

#[test]
fn first_list_at_rv_0_asks_for_pages_of_500_as_client_go() {
    // A server with its watch cache on ignores the limit and answers whole.
    assert_eq!(page_size(None, "0", false), Some(500));
    assert_eq!(page_size(Some(10), "0", false), Some(10));
    assert_eq!(page_size(Some(0), "0", false), None);
}

#[test]
fn consistent_list_is_paginated_by_500_by_default() {
    assert_eq!(page_size(None, "", false), Some(500));
    assert_eq!(page_size(Some(7), "", false), Some(7));
    assert_eq!(page_size(Some(0), "", false), None);
}

#[test]
fn list_at_a_resource_version_is_paginated_only_when_configured() {
    assert_eq!(page_size(None, "42", false), None);
    assert_eq!(page_size(Some(7), "42", false), Some(7));
}

#[test]
fn once_a_list_came_back_paginated_later_relists_page_too() {
    assert_eq!(page_size(None, "42", true), Some(500));
    assert_eq!(page_size(Some(7), "42", true), Some(7));
    assert_eq!(page_size(Some(0), "42", true), None);
}

#[test]
fn classify_relists_on_gone_and_too_large() {
    let s = ListWatchError::status;
    assert_eq!(classify(&s(410, "Expired", "too old")), Class::Gone);
    assert_eq!(
        classify(&s(
            504,
            "Timeout",
            "Too large resource version: 9, current: 3"
        )),
        Class::Gone
    );
}

#[test]
fn error_status_that_is_not_gone_nor_a_throttle_ends_the_watch_cycle() {
    let s = ListWatchError::status;
    assert_eq!(classify(&s(403, "Forbidden", "no")), Class::Fatal);
    assert_eq!(classify(&s(404, "NotFound", "no")), Class::Fatal);
    assert_eq!(
        classify(&s(500, "StorageReadError", "corrupt object")),
        Class::Fatal
    );
    assert_eq!(classify(&s(503, "ServiceUnavailable", "x")), Class::Fatal);
    assert_eq!(classify(&s(504, "Timeout", "slow")), Class::Fatal);
    assert_eq!(classify(&s(500, "InternalError", "boom")), Class::Internal);
}

#[test]
fn classify_backs_off_on_429_transport_and_decode_errors() {
    let s = ListWatchError::status;
    assert_eq!(
        classify(&s(429, "TooManyRequests", "slow down")),
        Class::Retriable
    );
    assert_eq!(
        classify(&ListWatchError::Transport("refused".into())),
        Class::Retriable
    );
    assert_eq!(
        classify(&ListWatchError::Decode("bad".into())),
        Class::Retriable
    );
}

#[test]
fn internal_errors_are_retried_only_within_the_window() {
    let t0 = Instant::now();
    let s = Duration::from_secs;
    // Off (client-go's default): never.
    let mut off = InternalErrorRetry::default();
    assert!(!off.retry(t0, Duration::ZERO));
    // A 10 s window opens at the first error.
    let mut r = InternalErrorRetry::default();
    assert!(r.retry(t0, s(10)));
    assert!(r.retry(t0 + s(5), s(10)));
    assert!(r.retry(t0 + s(10), s(10)));
    assert!(!r.retry(t0 + s(11), s(10)), "past the window: relist");
    // After the window closed, the next error opens a new one.
    assert!(r.retry(t0 + s(12), s(10)));
    // A minute without an internal error starts the window again.
    let mut r = InternalErrorRetry::default();
    assert!(r.retry(t0, s(30)));
    assert!(r.retry(t0 + s(20), s(30)));
    assert!(r.retry(t0 + s(85), s(30)), "quiet for 65 s: a new window");
}

#[test]
fn temp_store_keeps_the_latest_state_per_key_and_forgets_deleted_keys() {
    let mut t = TempStore::default();
    let k = |n: &str| ObjectKey::new(Some("ns"), n);
    t.upsert(k("a"), Arc::new(1));
    t.upsert(k("b"), Arc::new(2));
    t.upsert(k("c"), Arc::new(3));
    t.upsert(k("a"), Arc::new(10));
    t.remove(&k("a"));
    t.remove(&k("zz"));
    t.upsert(k("d"), Arc::new(4));
    t.remove(&k("c"));
    let mut got: Vec<i32> = t.into_objects().into_iter().map(|o| *o).collect();
    got.sort();
    assert_eq!(got, [2, 4]);
}
