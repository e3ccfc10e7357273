use super::*;
use std::collections::BTreeMap;

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn matches(selector: &str, pairs: &[(&str, &str)]) -> bool {
    let set = labels(pairs);
    LabelSelector::parse(selector)
        .unwrap()
        .matches(|k| set.get(k).map(String::as_str))
}

#[test]
fn empty_selector_matches_everything() {
    assert!(LabelSelector::parse("").unwrap().is_empty());
    assert!(LabelSelector::parse("  ").unwrap().is_empty());
    assert!(matches("", &[]));
}

#[test]
fn equality() {
    assert!(matches("app=web", &[("app", "web")]));
    assert!(matches("app==web", &[("app", "web")]));
    assert!(!matches("app=web", &[("app", "db")]));
    assert!(!matches("app=web", &[]));
    assert!(matches("app!=web", &[("app", "db")]));
    assert!(matches("app!=web", &[]));
    assert!(!matches("app!=web", &[("app", "web")]));
    assert!(matches("app=", &[("app", "")]));
    assert!(matches(
        "app = web , tier = fe",
        &[("app", "web"), ("tier", "fe")]
    ));
    assert!(!matches("app=web,tier=fe", &[("app", "web")]));
}

#[test]
fn set_based() {
    assert!(matches("env in (prod, staging)", &[("env", "prod")]));
    assert!(!matches("env in (prod,staging)", &[("env", "dev")]));
    assert!(!matches("env in (prod)", &[]));
    assert!(matches("env notin (prod)", &[("env", "dev")]));
    assert!(matches("env notin (prod)", &[]));
    assert!(!matches("env notin (prod,dev)", &[("env", "dev")]));
    assert!(matches(
        "env in (a,b),tier notin (x),app",
        &[("env", "b"), ("app", "1")]
    ));
}

#[test]
fn existence() {
    assert!(matches("app", &[("app", "x")]));
    assert!(!matches("app", &[]));
    assert!(matches("!app", &[]));
    assert!(!matches("!app", &[("app", "x")]));
    assert!(matches("example.com/role", &[("example.com/role", "x")]));
}

#[test]
fn numeric_comparisons_compare_integer_values() {
    assert!(matches("n>1", &[("n", "2")]));
    assert!(!matches("n>1", &[("n", "1")]));
    assert!(!matches("n>1", &[("n", "x")]));
    assert!(!matches("n>1", &[]));
    assert!(matches("n<1", &[("n", "-3")]));
    assert_eq!(
        LabelSelector::parse("n>x").unwrap_err(),
        "unable to parse requirement: values[0]: Invalid value: \"x\": for 'Gt', 'Lt' operators, the value must be an integer"
    );
}

#[test]
fn malformed_selectors_are_refused_with_go_parser_words() {
    for (selector, message) in [
        (
            "=x",
            "found '=', expected: !, identifier, or 'end of string'",
        ),
        (
            "a in (b",
            "unable to parse requirement: found '', expected: ',' or ')'",
        ),
        (
            "a!",
            "unable to parse requirement: found '!', expected: in, notin, =, ==, !=, gt, lt",
        ),
        (
            "!!a",
            "unable to parse requirement: found '!', expected: identifier",
        ),
        ("a==b==c", "found '==', expected: ',' or 'end of string'"),
        (
            "a b",
            "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt",
        ),
        ("a=b c", "found 'c', expected: ',' or 'end of string'"),
        ("a,", "found '', expected: identifier after ','"),
    ] {
        assert_eq!(
            LabelSelector::parse(selector).unwrap_err(),
            message,
            "{selector:?}"
        );
    }
    assert_eq!(
        LabelSelector::parse(&format!("a={}", "v".repeat(64))).unwrap_err(),
        format!(
            "unable to parse requirement: values[0][a]: Invalid value: \"{}\": must be no more than 63 bytes",
            "v".repeat(64)
        )
    );
}

#[test]
fn keys_and_values_are_validated_on_top_of_the_parser() {
    assert!(LabelSelector::parse("example.com/role=x").is_ok());
    assert!(LabelSelector::parse("Example_Com/role=x").is_err());
    assert!(LabelSelector::parse(&format!("{}=x", "a".repeat(64))).is_err());
    assert!(LabelSelector::parse(&format!("a={}", "v".repeat(64))).is_err());
    assert!(LabelSelector::parse("a in (ok,-bad)").is_err());
}

#[test]
fn malformed_selectors_are_rejected() {
    for bad in [
        "=",
        "app=web=x",
        "app in prod",
        "app in (a",
        "app in (a b)",
        ",",
        "app,",
        "!",
        "!app=x",
        "Bad Key=x",
        "app=in valid",
        "-app=x",
        "app=-x",
        "(app)",
    ] {
        assert!(LabelSelector::parse(bad).is_err(), "{bad:?} should fail");
    }
}

#[test]
fn object_matching_reads_metadata_labels() {
    let obj = serde_json::json!({"metadata": {"labels": {"app": "web"}}});
    assert!(
        LabelSelector::parse("app=web")
            .unwrap()
            .matches_object(&obj)
    );
    assert!(!LabelSelector::parse("app=db").unwrap().matches_object(&obj));
    assert!(
        LabelSelector::parse("!app")
            .unwrap()
            .matches_object(&serde_json::json!({}))
    );
}

#[test]
fn field_selectors() {
    let sel = FieldSelector::parse("metadata.name=a,spec.nodeName!=n1").unwrap();
    assert_eq!(
        sel.fields().collect::<Vec<_>>(),
        ["metadata.name", "spec.nodeName"]
    );
    let get = |name: &'static str, node: &'static str| {
        move |f: &str| match f {
            "metadata.name" => name.to_string(),
            "spec.nodeName" => node.to_string(),
            _ => String::new(),
        }
    };
    assert!(sel.matches(get("a", "n2")));
    assert!(!sel.matches(get("a", "n1")));
    assert!(!sel.matches(get("b", "n2")));
    let sel = FieldSelector::parse("spec.nodeName==").unwrap();
    assert!(sel.matches(get("a", "")));
    assert!(FieldSelector::parse("").unwrap().is_empty());
}

#[test]
fn field_selector_escapes() {
    let sel = FieldSelector::parse(r"metadata.name=a\,b\=c\\d").unwrap();
    assert!(sel.matches(|_| r"a,b=c\d".to_string()));
    assert!(FieldSelector::parse("metadata.name").is_err());
    assert!(FieldSelector::parse(r"metadata.name=a\x").is_err());
    assert!(FieldSelector::parse("=a").is_err());
}
