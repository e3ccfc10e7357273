use super::*;

#[test]
fn empty_namespace_means_cluster_scoped() {
    assert_eq!(ObjectKey::new(Some(""), "a"), ObjectKey::cluster("a"));
    assert_eq!(ObjectKey::new(Some(""), "a").to_string(), "a");
}

#[test]
fn parse_rejects_malformed_keys() {
    for bad in ["", "a/b/c", "ns/", "/"] {
        assert!(
            bad.parse::<ObjectKey>().is_err(),
            "{bad:?} should not parse"
        );
    }
}

#[test]
fn parse_roundtrips_display() {
    for s in ["ns/name", "name"] {
        assert_eq!(s.parse::<ObjectKey>().unwrap().to_string(), s);
    }
}

#[test]
fn keys_sort_by_namespace_then_name() {
    let mut keys = [
        ObjectKey::new(Some("b"), "a"),
        ObjectKey::new(Some("a"), "z"),
        ObjectKey::cluster("zz"),
        ObjectKey::new(Some("a-b"), "c"),
        ObjectKey::new(Some("a"), "b"),
    ];
    keys.sort();
    let shown: Vec<String> = keys.iter().map(ToString::to_string).collect();
    assert_eq!(shown, ["zz", "a/b", "a/z", "a-b/c", "b/a"]);
}

#[test]
fn a_cluster_key_with_a_slash_differs_from_a_namespaced_one() {
    let cluster = ObjectKey::cluster("a/b");
    let namespaced = ObjectKey::new(Some("a"), "b");
    assert_ne!(cluster, namespaced);
    assert_eq!(cluster.namespace(), None);
    assert_eq!(cluster.name(), "a/b");
    assert_eq!(namespaced.namespace(), Some("a"));
    assert_eq!(namespaced.name(), "b");
}

#[test]
fn serde_uses_the_string_form() {
    let key = ObjectKey::new(Some("ns"), "n");
    let json = serde_json::to_string(&key).unwrap();
    assert_eq!(json, "\"ns/n\"");
    assert_eq!(serde_json::from_str::<ObjectKey>(&json).unwrap(), key);
}

#[test]
fn keys_are_equal_by_namespace_and_name_and_hash_alike() {
    use std::hash::BuildHasher;
    let hasher = std::hash::RandomState::new();
    let a = ObjectKey::new(Some("ns"), "web-0");
    let same = ObjectKey::new(Some("ns"), "web-0");
    assert_eq!(a, a.clone());
    assert_eq!(a, same, "another allocation, the same key");
    assert_eq!(hasher.hash_one(&a), hasher.hash_one(&same));
    assert_ne!(a, ObjectKey::new(Some("ns"), "web-1"));
    assert_ne!(a, ObjectKey::new(Some("other"), "web-0"));
    // The same text split differently is another key.
    assert_ne!(
        ObjectKey::new(Some("a"), "b/c"),
        ObjectKey::new(Some("a/b"), "c")
    );
}
