use super::*;

/// The request of kubectl's own `hack/testdata/csr.yml` (RSA 2048, SHA-256).
const KUBECTL_REQUEST: &str = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0KTUlJQ2d6Q0NBV3NDQVFBd0ZURVRNQkVHQTFVRUF4TUthM1ZpWlMxaFpHMXBiakNDQVNJd0RRWUpLb1pJaHZjTgpBUUVCQlFBRGdnRVBBRENDQVFvQ2dnRUJBTlJ5dFhkcWV6ZTFBdXFjZkpWYlFBY1BJejZWY2pXSTZ5WmlQa3lrCjAzUW9GaHJGRXhUQXNPTGVFUHlrQXc1YndUOWZiajRXMzZmR2k4RGxsd1FzVGoyYzVUTnBnQkkwbElDbzI4aGcKbHYvTDJsMnRsWUVKdDdTbVhjblNvaGJ5S0h4TERRUHVmTVBBTkZsaEFmTUdCWEhRcmZMajhrTk1MUDA4UlBsbAp0N3V4RDVRdFA0cHlGL1Nhbm1XVEtRNU56WlJ4TC82UmhJMEpxSHJmNFFjQmg2dlR5bnFaRGVmMWVxNjBnQXllClNPRkpKYWRuK3h2VEFqLzgxZk1TbjdOSlNnaktDYkNEeXQ1eS9UZHd0SzZnVUQzM01paE5uNXhKTVF0MUZXUVAKRzY3eTA1QVh6b0pqTm5sWVA1MnJsTlhvNzh6aVMrN1E4RklxQzY0c05vWWhxeGNDQXdFQUFhQXBNQ2NHQ1NxRwpTSWIzRFFFSkRqRWFNQmd3Q1FZRFZSMFRCQUl3QURBTEJnTlZIUThFQkFNQ0JlQXdEUVlKS29aSWh2Y05BUUVMCkJRQURnZ0VCQU5CazlwaHpWYUJBci9xZHN4bXdPR1NQa094UkZlR1lyemRvaW5LTzVGUGZER2JkU0VWQ0o1K0wKeWJTNUtmaUZYU1EvNmk0RE9WRWtxcnFrVElIc1JNSlJwbTZ5Zjk1TU4zSWVLak9jQlV2b2VWVlpxMUNOUU8zagp2dklmK1A1NStLdXpvK0NIT1F5RWlvTlRPaUtGWTJseStEZEEwMXMxbU9FMTZSWGlWeFhGcFhGeGRJVmRPK0oxClZ1MW5yWG5ZVFJQRmtyaG80MTlpaDQzNjRPcGZqYXFXVCtmd20ySVZQSlBoaUJpYi9RRzRhUGJJcFh3amlCUUMKemV6WlM2L01nQkt1bUdMZ3Z5MitXNU9UWTJ5ZFFMZFVxbERFNEU2MFhmdVZ6bk5zWjZDS0tYY1pVaW1ZTkkwNgpKa0t4bGRjd0V2cmI0SmN3M2RFQjdOOUwvSW9ZNXFBPQotLS0tLUVORCBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0K";

fn pem() -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(KUBECTL_REQUEST)
        .unwrap()
}

fn csr(conditions: Value) -> Value {
    json!({
        "metadata": {"name": "x"},
        "spec": {"request": KUBECTL_REQUEST, "signerName": "example.com/x", "usages": ["client auth"]},
        "status": {"conditions": conditions},
    })
}

#[test]
fn kubectl_fixture_request_parses_and_verifies() {
    assert_eq!(validate_csr(&pem()), Ok(()));
}

#[test]
fn a_changed_request_fails_its_signature() {
    let mut der = pem_decode(&pem()).unwrap().bytes;
    // A byte of the subject's common name ("kube-admin").
    let at = der.windows(10).position(|w| w == b"kube-admin").unwrap();
    der[at] = b'K';
    let text = format!(
        "-----BEGIN CERTIFICATE REQUEST-----\n{}\n-----END CERTIFICATE REQUEST-----\n",
        base64::engine::general_purpose::STANDARD.encode(&der)
    );
    assert_eq!(
        validate_csr(text.as_bytes()),
        Err("crypto/rsa: verification error".to_string())
    );
}

#[test]
fn request_must_be_a_certificate_request_block() {
    let message = Err("PEM block type must be CERTIFICATE REQUEST".to_string());
    assert_eq!(validate_csr(b""), message);
    assert_eq!(validate_csr(b"hello"), message);
    let certificate = pem().replace_all_for_test();
    assert_eq!(validate_csr(&certificate), message);
    let truncated =
        "-----BEGIN CERTIFICATE REQUEST-----\nMAMCAQ==\n-----END CERTIFICATE REQUEST-----\n";
    assert!(
        validate_csr(truncated.as_bytes())
            .unwrap_err()
            .starts_with("asn1: ")
    );
}

trait ReplaceAll {
    fn replace_all_for_test(&self) -> Vec<u8>;
}

impl ReplaceAll for Vec<u8> {
    /// The same PEM labelled `CERTIFICATE`.
    fn replace_all_for_test(&self) -> Vec<u8> {
        String::from_utf8(self.clone())
            .unwrap()
            .replace("CERTIFICATE REQUEST", "CERTIFICATE")
            .into_bytes()
    }
}

#[test]
fn signer_names_follow_validate_signer_name() {
    assert!(validate_signer_name("f", "kubernetes.io/kube-apiserver-client").is_empty());
    let messages = |name: &str| -> Vec<String> {
        validate_signer_name("f", name)
            .iter()
            .map(|e| e.to_string())
            .collect()
    };
    assert_eq!(messages(""), ["f: Required value"]);
    assert_eq!(
        messages("a/b/c"),
        [
            "f: Invalid value: \"a/b/c\": must be a fully qualified domain and path of the form 'example.com/signer-name'"
        ]
    );
    assert_eq!(
        messages("example/x"),
        [
            "f: Invalid value: \"example\": should be a domain with at least two segments separated by dots"
        ]
    );
    assert_eq!(
        messages("Example.com/x"),
        [format!(
            "f: Invalid value: \"Example.com\": validating label \"Example\": {DNS1123_LABEL}"
        )]
    );
    assert_eq!(
        messages("example.com/X"),
        [format!(
            "f: Invalid value: \"X\": validating label \"X\": {DNS1123_SUBDOMAIN}"
        )]
    );
}

#[test]
fn bytes_print_as_json_base64() {
    assert_eq!(json_bytes(None), "null");
    assert_eq!(json_bytes(Some(b"")), "\"\"");
    assert_eq!(json_bytes(Some(b"-\n")), "\"LQo=\"");
}

#[test]
fn condition_column_orders_denied_approved_pending() {
    assert_eq!(condition_summary(&csr(json!([]))), "Pending");
    assert_eq!(
        condition_summary(&csr(json!([{"type": "Approved"}, {"type": "Failed"}]))),
        "Approved,Failed"
    );
    let mut issued = csr(json!([{"type": "Approved"}]));
    issued["status"]["certificate"] = json!("LS0t");
    assert_eq!(condition_summary(&issued), "Approved,Issued");
    assert_eq!(
        condition_summary(&csr(json!([{"type": "Approved"}, {"type": "Denied"}]))),
        "Denied"
    );
}

#[test]
fn status_writes_keep_the_stored_approval_conditions() {
    let old = csr(json!([{"type": "Approved", "status": "True", "reason": "A",
        "lastUpdateTime": "2024-01-01T00:00:00Z", "lastTransitionTime": "2024-01-01T00:00:00Z"}]));
    let mut new = csr(json!([
        {"type": "Approved", "status": "True", "reason": "changed"},
        {"type": "Failed", "status": "True"},
    ]));
    finish_update(&old, Subresource::Status, &mut new);
    assert_eq!(
        new["status"]["conditions"][0],
        old["status"]["conditions"][0]
    );
    assert!(new["status"]["conditions"][1]["lastUpdateTime"].is_string());
    assert!(validate_update(&old, &new, Subresource::Status).is_empty());
}

#[test]
fn approval_keeps_a_transition_time_of_the_same_type_and_status() {
    let old = csr(json!([{"type": "Custom", "status": "True",
        "lastTransitionTime": "2024-01-01T00:00:00Z"}]));
    let mut new = csr(json!([{"type": "Custom", "status": "True"}]));
    finish_update(&old, Subresource::Approval, &mut new);
    let condition = &new["status"]["conditions"][0];
    assert_eq!(condition["lastTransitionTime"], "2024-01-01T00:00:00Z");
    assert!(condition["lastUpdateTime"].is_string());
}

#[test]
fn the_object_itself_keeps_its_spec_and_may_not_approve() {
    let old = csr(json!([]));
    let mut new = csr(json!([]));
    new["spec"]["signerName"] = json!("example.com/other");
    finish_update(&old, Subresource::Main, &mut new);
    assert_eq!(new["spec"], old["spec"]);
    let approved = csr(json!([{"type": "Approved", "status": "True"}]));
    let errors: Vec<String> = validate_update(&old, &approved, Subresource::Main)
        .iter()
        .map(|e| e.to_string())
        .collect();
    assert_eq!(
        errors,
        ["status.conditions: Forbidden: updates may not add a condition of type \"Approved\""]
    );
    assert!(validate_update(&old, &approved, Subresource::Approval).is_empty());
}

#[test]
fn stored_objects_breaking_a_rule_may_keep_breaking_it() {
    let mut old = csr(json!([{"type": "Approved", "status": "True"},
        {"type": "Denied", "status": "True"}]));
    old["spec"]["usages"] = json!(["flying", "flying"]);
    let new = old.clone();
    assert!(validate_update(&old, &new, Subresource::Main).is_empty());
    assert!(!validate_create(&new).is_empty());
}
