use http::{HeaderMap, HeaderValue};

use super::*;

fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in pairs {
        map.append(*name, HeaderValue::from_str(value).unwrap());
    }
    map
}

#[test]
fn no_headers_no_impersonation() {
    assert_eq!(from_headers(&HeaderMap::new()), Ok(None));
}

#[test]
fn a_user_gets_system_authenticated_after_the_groups_asked_for() {
    let user = from_headers(&headers(&[
        ("Impersonate-User", "user1"),
        ("Impersonate-Group", "group2"),
        ("Impersonate-Group", ",,,chameleon"),
    ]))
    .unwrap()
    .unwrap();
    assert_eq!(user.username, "user1");
    assert_eq!(
        user.groups,
        ["group2", ",,,chameleon", "system:authenticated"]
    );
    let alone = from_headers(&headers(&[("Impersonate-User", "user1")]))
        .unwrap()
        .unwrap();
    assert_eq!(alone.groups, ["system:authenticated"]);
}

#[test]
fn a_service_account_without_groups_gets_its_own() {
    let user = from_headers(&headers(&[(
        "Impersonate-User",
        "system:serviceaccount:team:robot",
    )]))
    .unwrap()
    .unwrap();
    assert_eq!(
        user.groups,
        [
            "system:serviceaccounts",
            "system:serviceaccounts:team",
            "system:authenticated"
        ]
    );
}

#[test]
fn uid_and_extras_are_kept_keys_lower_cased_and_unescaped() {
    let user = from_headers(&headers(&[
        ("Impersonate-User", "u"),
        ("Impersonate-Uid", "1234"),
        ("Impersonate-Extra-Scopes%2Fa", "view"),
        ("Impersonate-Extra-Scopes%2Fa", "edit"),
    ]))
    .unwrap()
    .unwrap();
    assert_eq!(user.uid, "1234");
    assert_eq!(user.extra["scopes/a"], serde_json::json!(["view", "edit"]));
}

#[test]
fn groups_without_a_user_are_refused() {
    let why = from_headers(&headers(&[("Impersonate-Group", "foo")])).unwrap_err();
    assert_eq!(
        why,
        "requested [{Group  foo    }] without impersonating a user"
    );
}

#[test]
fn requester_is_the_impersonated_user_while_set() {
    let user = from_headers(&headers(&[("Impersonate-User", "bob")]))
        .unwrap()
        .unwrap();
    let seen = with_requester(Some(user), || requester().username);
    assert_eq!(seen, "bob");
    assert_eq!(requester().username, "admin");
}
