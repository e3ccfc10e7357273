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

#[test]
fn malformed_selectors_are_errors_with_a_position() {
    for bad in [
        "app in (web",
        "app in web",
        ",",
        "app=web,",
        "app>1",
        "=web",
        "a/b/c=1",
        "app web",
        "!",
    ] {
        let err = parse_label_selector(bad).expect_err(bad);
        assert!(err.position <= bad.len(), "{bad:?}: {err}");
        assert_eq!(err.selector, bad);
    }
}
