use std::collections::BTreeMap;

use kube_core::SelectorExt;

use super::*;

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn sel(s: &str) -> Selector {
    parse_label_selector(s).unwrap_or_else(|e| panic!("{s:?}: {e}"))
}

#[test]
fn empty_selector_selects_everything() {
    assert!(sel("").selects_all());
    assert!(sel("   ").matches(&labels(&[])));
}

#[test]
fn equality_operators_match_present_equal_labels() {
    let l = labels(&[("app", "web")]);
    assert!(sel("app=web").matches(&l));
    assert!(sel("app==web").matches(&l));
    assert!(sel("app = web").matches(&l));
    assert!(!sel("app=db").matches(&l));
    assert!(!sel("other=web").matches(&l));
}

#[test]
fn not_equal_matches_absent_or_different_labels() {
    assert!(sel("app!=web").matches(&labels(&[])));
    assert!(sel("app!=web").matches(&labels(&[("app", "db")])));
    assert!(!sel("app!=web").matches(&labels(&[("app", "web")])));
}

#[test]
fn set_operators_follow_kubernetes_semantics() {
    let l = labels(&[("tier", "edge")]);
    assert!(sel("tier in (front, edge)").matches(&l));
    assert!(!sel("tier in (front)").matches(&l));
    assert!(sel("tier notin (front)").matches(&l));
    assert!(!sel("tier notin (front,edge)").matches(&l));
    assert!(sel("tier notin (front)").matches(&labels(&[])));
    assert!(!sel("tier in (front)").matches(&labels(&[])));
}

#[test]
fn existence_operators_check_presence_only() {
    let l = labels(&[("canary", "")]);
    assert!(sel("canary").matches(&l));
    assert!(!sel("!canary").matches(&l));
    assert!(sel("!stable").matches(&l));
}

#[test]
fn requirements_are_anded() {
    let s = sel("app=web,tier in (edge),!canary,env");
    assert!(s.matches(&labels(&[
        ("app", "web"),
        ("tier", "edge"),
        ("env", "prod")
    ])));
    assert!(!s.matches(&labels(&[("app", "web"), ("tier", "edge")])));
}

#[test]
fn prefixed_keys_and_empty_values_parse() {
    let s = sel("app.kubernetes.io/name=web,empty=");
    assert!(s.matches(&labels(&[("app.kubernetes.io/name", "web"), ("empty", "")])));
    assert_eq!(sel("instance in (a)").to_string(), "instance in (a)");
}

/// Selectors the API server refuses.
const MALFORMED: [&str; 16] = [
    "app in (web",
    "app in web",
    ",",
    "app=web,",
    "app>1",
    "=web",
    "a/b/c=1",
    "/a=1",
    "a/=1",
    "app web",
    "!",
    "app==web=",
    "app: web",
    "in (a)",
    "app=wéb",
    "tier in (a b)",
];

#[test]
fn malformed_selectors_are_errors_with_a_position() {
    for bad in MALFORMED {
        let err = parse_label_selector(bad).expect_err(bad);
        assert!(err.position <= bad.len(), "{bad:?}: {err}");
        assert_eq!(err.selector, bad);
    }
}

#[test]
fn the_compile_time_check_accepts_exactly_what_the_parser_accepts() {
    let valid = [
        "",
        "  ",
        "app",
        "!app",
        "! app",
        "app=web",
        "app = web",
        "app==web",
        "app!=web",
        "empty=",
        "app.kubernetes.io/name=web",
        "tier in (a, b)",
        "tier notin(a)",
        "tier in ()",
        "a,b=c,!d,e in (f),g notin (h,i)",
    ];
    for selector in valid.into_iter().chain(MALFORMED) {
        let parsed = parse_label_selector(selector);
        let checked = std::panic::catch_unwind(|| assert_label_selector(selector));
        assert_eq!(
            parsed.is_ok(),
            checked.is_ok(),
            "{selector:?}: the parser says {parsed:?}"
        );
        assert_eq!(parsed.is_ok(), valid.contains(&selector), "{selector:?}");
    }
}

#[test]
fn a_bad_key_is_named_in_the_error() {
    let err = parse_label_selector("x=1,a/b/c=1").unwrap_err();
    assert_eq!(err.position, 4);
    assert_eq!(err.reason, "\"a/b/c\" is not a valid label key");
}
