use super::valid_namespace;

#[test]
fn namespaces_must_be_dns_labels() {
    assert!(valid_namespace("default"));
    assert!(valid_namespace("team-a1"));
    assert!(!valid_namespace("Team"));
    assert!(!valid_namespace("-a"));
    assert!(!valid_namespace(""));
    assert!(!valid_namespace(&"a".repeat(64)));
}
