use super::*;
use crate::apiserver::resource::Registry;

#[test]
fn lines_are_json_events() {
    let bytes = value_line("ADDED", &json!({"a": 1}));
    assert_eq!(&bytes[..], b"{\"type\":\"ADDED\",\"object\":{\"a\":1}}\n");
    let pods = Registry::builtin().by_path("", "v1", "pods").unwrap();
    let bm = bookmark(&pods, 7, true);
    assert_eq!(bm["metadata"]["resourceVersion"], "7");
    assert_eq!(
        bm["metadata"]["annotations"][INITIAL_EVENTS_END_ANNOTATION],
        "true"
    );
    assert_eq!(bm["kind"], "Pod");
}
