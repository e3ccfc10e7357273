use super::*;

#[test]
fn the_identity_is_made_once_and_is_a_pem_ca() {
    let first = identity().expect("identity");
    let second = identity().expect("identity");
    assert!(std::ptr::eq(first, second));
    assert!(first.ca_pem.starts_with("-----BEGIN CERTIFICATE-----"));
    assert!(!first.ca_der.is_empty());
}

#[test]
fn tokens_are_random_and_url_safe() {
    let token = new_token();
    assert_eq!(token.len(), 43);
    assert!(
        token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    );
    assert_ne!(token, new_token());
}

#[test]
fn only_the_bearer_token_authorizes() {
    assert!(authorized(Some("Bearer abc"), "abc"));
    assert!(authorized(Some("bearer abc"), "abc"));
    assert!(!authorized(Some("Bearer abd"), "abc"));
    assert!(!authorized(Some("Bearer ab"), "abc"));
    assert!(!authorized(Some("Basic abc"), "abc"));
    assert!(!authorized(Some("abc"), "abc"));
    assert!(!authorized(None, "abc"));
}
