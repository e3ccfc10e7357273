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

#[test]
fn went_back_error_names_both_versions() {
    let err = ReflectorError::WentBack {
        what: "watch event",
        resource_version: "7".into(),
        cache: "12".into(),
    };
    let text = err.to_string();
    assert!(
        text.contains("watch event") && text.contains('7') && text.contains("12"),
        "{text}"
    );
    assert_eq!(err.code(), None);
    assert!(!err.is_gone());
}
