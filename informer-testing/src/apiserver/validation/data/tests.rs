use serde_json::json;

use super::*;

fn messages(check: fn(&Value, &mut Vec<FieldError>), object: Value) -> Vec<String> {
    let mut errors = Vec::new();
    check(&object, &mut errors);
    errors.iter().map(ToString::to_string).collect()
}

#[test]
fn config_keys_are_alphanumerics_dashes_underscores_and_dots() {
    assert!(config_key_errors("key.name").is_empty());
    assert!(config_key_errors("KEY_NAME-1").is_empty());
    assert_eq!(config_key_errors("bad key"), [CONFIG_KEY]);
    assert_eq!(config_key_errors(""), [CONFIG_KEY]);
    assert_eq!(config_key_errors(".."), ["must not be '..'"]);
    assert_eq!(config_key_errors("..x"), ["must not start with '..'"]);
    assert_eq!(config_key_errors("."), ["must not be '.'"]);
    assert_eq!(
        config_key_errors(&"a".repeat(254)),
        ["must be no more than 253 characters"]
    );
}

#[test]
fn a_config_map_key_may_not_be_in_both_data_and_binary_data() {
    let errors = messages(
        config_map,
        json!({"data": {"b": "x", "bad key": "y"}, "binaryData": {"b": "AAE="}}),
    );
    assert_eq!(
        errors,
        [
            "data[b]: Invalid value: \"b\": duplicate of key present in binaryData".to_string(),
            format!("data[bad key]: Invalid value: \"bad key\": {CONFIG_KEY}"),
            "binaryData[b]: Invalid value: \"b\": duplicate of key present in data".to_string(),
        ]
    );
}

#[test]
fn config_map_values_hold_at_most_one_mebibyte() {
    let big = "x".repeat(MAX_SIZE / 2 + 1);
    let errors = messages(config_map, json!({"data": {"a": big, "b": big}}));
    assert_eq!(errors, [": Too long: may not be more than 1048576 bytes"]);
    assert!(messages(config_map, json!({"data": {"a": big}})).is_empty());
}

#[test]
fn a_secret_has_what_its_type_needs() {
    let tls = messages(secret, json!({"type": "kubernetes.io/tls", "data": {}}));
    assert_eq!(
        tls,
        [
            "data[tls.crt]: Required value",
            "data[tls.key]: Required value"
        ]
    );
    let basic = messages(secret, json!({"type": "kubernetes.io/basic-auth"}));
    assert_eq!(
        basic,
        [
            "data[username]: Required value",
            "data[password]: Required value"
        ]
    );
    assert!(
        messages(
            secret,
            json!({"type": "kubernetes.io/basic-auth", "data": {"password": ""}})
        )
        .is_empty()
    );
    let ssh = messages(
        secret,
        json!({"type": "kubernetes.io/ssh-auth", "data": {"ssh-privatekey": ""}}),
    );
    assert_eq!(ssh, ["data[ssh-privatekey]: Required value"]);
    let token = messages(
        secret,
        json!({"type": "kubernetes.io/service-account-token"}),
    );
    assert_eq!(
        token,
        ["metadata.annotations[kubernetes.io/service-account.name]: Required value"]
    );
    assert!(messages(secret, json!({"type": "Opaque", "data": {"a": "eA=="}})).is_empty());
    assert!(messages(secret, json!({"type": "example.com/custom"})).is_empty());
}

#[test]
fn a_docker_config_secret_holds_a_json_object() {
    let missing = messages(secret, json!({"type": "kubernetes.io/dockerconfigjson"}));
    assert_eq!(missing, ["data[.dockerconfigjson]: Required value"]);
    // "{}" and "[]" in base64.
    let object =
        json!({"type": "kubernetes.io/dockerconfigjson", "data": {".dockerconfigjson": "e30="}});
    assert!(messages(secret, object).is_empty());
    let list = json!({"type": "kubernetes.io/dockercfg", "data": {".dockercfg": "W10="}});
    assert_eq!(
        messages(secret, list),
        [
            "data[.dockercfg]: Invalid value: \"<secret contents redacted>\": json: cannot unmarshal array into Go value of type map[string]interface {}"
        ]
    );
}

#[test]
fn secret_keys_are_config_keys() {
    let errors = messages(secret, json!({"data": {"no/slash": "eA=="}}));
    assert_eq!(
        errors,
        [format!(
            "data[no/slash]: Invalid value: \"no/slash\": {CONFIG_KEY}"
        )]
    );
}
