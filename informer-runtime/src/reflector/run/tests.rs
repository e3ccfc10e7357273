use super::*;

#[test]
fn first_list_at_rv_0_is_not_paginated() {
    assert_eq!(page_size(None, "0"), None);
    assert_eq!(page_size(Some(10), "0"), None);
}

#[test]
fn consistent_list_is_paginated_by_500_by_default() {
    assert_eq!(page_size(None, ""), Some(500));
    assert_eq!(page_size(Some(7), ""), Some(7));
    assert_eq!(page_size(Some(0), ""), None);
}

#[test]
fn list_at_a_resource_version_is_paginated_only_when_configured() {
    assert_eq!(page_size(None, "42"), None);
    assert_eq!(page_size(Some(7), "42"), Some(7));
}

#[test]
fn classify_relists_on_gone_and_too_large_and_client_errors() {
    let s = ListWatchError::status;
    assert_eq!(classify(&s(410, "Expired", "too old")), After::Relist);
    assert_eq!(
        classify(&s(
            504,
            "Timeout",
            "Too large resource version: 9, current: 3"
        )),
        After::Relist
    );
    assert_eq!(classify(&s(403, "Forbidden", "no")), After::Relist);
    assert_eq!(classify(&s(404, "NotFound", "no")), After::Relist);
}

#[test]
fn classify_backs_off_on_429_5xx_transport_and_decode_errors() {
    let s = ListWatchError::status;
    assert_eq!(
        classify(&s(429, "TooManyRequests", "slow down")),
        After::Backoff
    );
    assert_eq!(classify(&s(500, "InternalError", "boom")), After::Backoff);
    assert_eq!(classify(&s(503, "ServiceUnavailable", "x")), After::Backoff);
    assert_eq!(
        classify(&ListWatchError::Transport("refused".into())),
        After::Backoff
    );
    assert_eq!(
        classify(&ListWatchError::Decode("bad".into())),
        After::Backoff
    );
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
