use serde_json::{Value, json};

use super::JsonPath;

fn object() -> Value {
    json!({
        "metadata": {"name": "nightly", "labels": {"app.kubernetes.io/name": "backup", "tier": "db"}},
        "spec": {"retain": 3, "ratio": 0.5, "paused": false, "targets": ["a", "b", "c", "d"]},
        "status": {
            "conditions": [
                {"type": "Ready", "status": "True", "observedGeneration": 2},
                {"type": "Degraded", "status": "False", "observedGeneration": 1}
            ],
            "replicas": [{"name": "r0", "size": 1}, {"name": "r1", "size": 5}, {"name": "r2"}]
        }
    })
}

fn find(path: &str) -> Result<Vec<Value>, String> {
    let parsed = JsonPath::parse(path)?;
    Ok(parsed.find(&object())?.into_iter().cloned().collect())
}

#[test]
fn fields_and_indexes_walk_the_object() {
    assert_eq!(find(".spec.retain").unwrap(), [json!(3)]);
    assert_eq!(find("{.spec.retain}").unwrap(), [json!(3)]);
    assert_eq!(
        find(".status.conditions[0].type").unwrap(),
        [json!("Ready")]
    );
    assert_eq!(find(".spec.targets[-1]").unwrap(), [json!("d")]);
    assert_eq!(find("$.spec.ratio").unwrap(), [json!(0.5)]);
}

#[test]
fn a_missing_key_finds_nothing_without_an_error() {
    assert_eq!(find(".spec.nothing.deeper").unwrap(), Vec::<Value>::new());
    assert_eq!(
        find(".status.replicas[*].size").unwrap(),
        [json!(1), json!(5)]
    );
}

#[test]
fn an_escaped_dot_is_part_of_the_key() {
    assert_eq!(
        find(r".metadata.labels.app\.kubernetes\.io/name").unwrap(),
        [json!("backup")]
    );
    assert_eq!(find(".metadata.labels['tier']").unwrap(), [json!("db")]);
}

#[test]
fn a_filter_keeps_the_items_whose_comparison_holds() {
    assert_eq!(
        find(r#".status.conditions[?(@.type=="Ready")].status"#).unwrap(),
        [json!("True")]
    );
    assert_eq!(
        find(".status.conditions[?(@.type == 'Degraded')].status").unwrap(),
        [json!("False")]
    );
    assert_eq!(
        find(r#".status.conditions[?(@.type!="Ready")].type"#).unwrap(),
        [json!("Degraded")]
    );
    assert_eq!(
        find(".status.replicas[?(@.size>1)].name").unwrap(),
        [json!("r1")]
    );
    assert_eq!(
        find(".status.replicas[?(@.size<=1)].name").unwrap(),
        [json!("r0")]
    );
}

#[test]
fn an_existence_filter_keeps_the_items_that_have_the_path() {
    assert_eq!(
        find(".status.replicas[?(@.size)].name").unwrap(),
        [json!("r0"), json!("r1")]
    );
}

#[test]
fn a_quote_in_a_filter_may_hold_a_parenthesis() {
    let object = json!({"items": [{"n": "a)b"}, {"n": "c"}]});
    let path = JsonPath::parse(r#".items[?(@.n=="a)b")].n"#).unwrap();
    assert_eq!(path.find(&object).unwrap(), [&json!("a)b")]);
}

#[test]
fn comparing_values_of_different_types_is_an_error() {
    let err = find(r#".status.conditions[?(@.observedGeneration=="2")].type"#).unwrap_err();
    assert_eq!(err, "incompatible types for comparison");
    let err = find(".status.replicas[?(@.size>1.5)].name").unwrap_err();
    assert_eq!(err, "incompatible types for comparison");
    assert_eq!(
        find(".spec.targets[?(@ == 'b')]").unwrap(),
        [json!("b")],
        "`@` alone is the item"
    );
}

#[test]
fn booleans_compare_for_equality_only() {
    let object = json!({"items": [{"on": true, "n": 1}, {"on": false, "n": 2}]});
    let path = JsonPath::parse(".items[?(@.on==true)].n").unwrap();
    assert_eq!(path.find(&object).unwrap(), [&json!(1)]);
    let path = JsonPath::parse(".items[?(@.on<true)].n").unwrap();
    assert!(path.find(&object).is_err());
}

#[test]
fn a_filter_over_a_map_is_an_error() {
    assert!(
        find(".metadata.labels[?(@=='db')]")
            .unwrap_err()
            .contains("cannot be filtered")
    );
}

#[test]
fn slices_and_unions_pick_items_in_order() {
    assert_eq!(
        find(".spec.targets[1:3]").unwrap(),
        [json!("b"), json!("c")]
    );
    assert_eq!(
        find(".spec.targets[::2]").unwrap(),
        [json!("a"), json!("c")]
    );
    assert_eq!(
        find(".spec.targets[0,3]").unwrap(),
        [json!("a"), json!("d")]
    );
    assert_eq!(find(".spec.targets[*]").unwrap().len(), 4);
    assert_eq!(
        find(".spec['retain','paused']").unwrap(),
        [json!(3), json!(false)]
    );
    assert_eq!(find(".spec.targets[2:2]").unwrap(), Vec::<Value>::new());
}

#[test]
fn an_index_out_of_range_or_into_a_map_is_an_error() {
    assert!(
        find(".spec.targets[9]")
            .unwrap_err()
            .contains("out of bounds")
    );
    assert!(
        find(".spec.targets[3:1]")
            .unwrap_err()
            .contains("greater than")
    );
    assert!(find(".spec.targets[::0]").unwrap_err().contains("step"));
    assert!(find(".spec[0]").unwrap_err().contains("not array or slice"));
}

#[test]
fn recursive_descent_finds_a_field_at_any_depth() {
    assert_eq!(
        find("..name").unwrap(),
        [json!("nightly"), json!("r0"), json!("r1"), json!("r2")]
    );
    assert_eq!(find(".status..size").unwrap(), [json!(1), json!(5)]);
    assert!(JsonPath::parse("....name").is_err());
}

#[test]
fn a_wildcard_takes_every_value_of_a_map() {
    assert_eq!(
        find(".metadata.labels.*").unwrap(),
        [json!("backup"), json!("db")]
    );
}

#[test]
fn malformed_paths_do_not_parse() {
    for path in [
        ".spec.targets[",
        ".status.conditions[?(@.type==\"Ready\"]",
        ".spec.targets[a]",
        "spec",
        ".spec.targets[?(@.x=~'y')]",
        "{.spec",
    ] {
        assert!(JsonPath::parse(path).is_err(), "{path} parsed");
    }
}
