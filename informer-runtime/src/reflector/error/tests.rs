use super::*;

#[test]
fn not_found_error_says_to_check_the_crd() {
    let err = ReflectorError::List(ListWatchError::status(404, "NotFound", "not found"));
    assert!(err.is_not_found());
    assert!(
        err.to_string().contains("CustomResourceDefinition"),
        "{err}"
    );
}

#[test]
fn forbidden_error_says_to_grant_list_and_watch() {
    let err = ReflectorError::Watch(ListWatchError::status(403, "Forbidden", "no"));
    assert!(err.is_forbidden());
    assert!(err.to_string().contains("`list` and `watch`"), "{err}");
}

#[test]
fn transient_errors_have_no_hint() {
    let err = ReflectorError::Watch(ListWatchError::status(500, "InternalError", "boom"));
    assert_eq!(err.hint(), None);
    assert_eq!(err.code(), Some(500));
    assert!(!err.is_gone());
}
