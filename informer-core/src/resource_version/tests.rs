use std::cmp::Ordering;

use super::*;

#[test]
fn comparable_versions_are_decimal_integers_without_leading_zeros() {
    for rv in ["0", "1", "10", "18446744073709551616"] {
        assert!(is_comparable(rv), "{rv}");
    }
    for rv in ["", "01", "00", "-1", "+1", "1.5", "1e3", " 1", "abc", "12a"] {
        assert!(!is_comparable(rv), "{rv:?}");
    }
}

#[test]
fn comparable_versions_are_ordered_as_integers_of_any_length() {
    assert_eq!(compare("9", "10"), Some(Ordering::Less));
    assert_eq!(compare("10", "9"), Some(Ordering::Greater));
    assert_eq!(compare("123", "123"), Some(Ordering::Equal));
    assert_eq!(compare("124", "123"), Some(Ordering::Greater));
    // Beyond u64: ordered all the same.
    assert_eq!(
        compare("18446744073709551616", "18446744073709551615"),
        Some(Ordering::Greater)
    );
    assert_eq!(
        compare("99999999999999999999999999", "100000000000000000000000000"),
        Some(Ordering::Less)
    );
}

#[test]
fn opaque_versions_are_never_ordered() {
    assert_eq!(compare("abc", "abd"), None);
    assert_eq!(compare("10", "abc"), None);
    assert_eq!(compare("", "1"), None);
    assert_eq!(compare("010", "9"), None);
    assert!(!is_older("abc", "10"));
    assert!(!is_older("10", "abc"));
    let a = ResourceVersion::new("abc");
    assert_eq!(a.partial_cmp(&ResourceVersion::new("abc")), None);
    assert_eq!(
        a,
        ResourceVersion::new("abc"),
        "equality is string equality"
    );
}

#[test]
fn as_u64_is_the_integer_when_it_fits() {
    assert_eq!(as_u64("42"), Some(42));
    assert_eq!(as_u64("18446744073709551615"), Some(u64::MAX));
    assert_eq!(as_u64("18446744073709551616"), None);
    assert_eq!(as_u64("042"), None);
    assert_eq!(ResourceVersion::from("7").as_u64(), Some(7));
}

#[test]
fn is_older_is_strict() {
    assert!(is_older("9", "10"));
    assert!(!is_older("10", "10"));
    assert!(!is_older("11", "10"));
}
