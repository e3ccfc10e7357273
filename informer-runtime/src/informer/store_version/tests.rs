use super::*;

#[test]
fn store_version_follows_integer_versions_and_gives_up_on_opaque_ones() {
    let v = StoreVersion::tracked();
    assert_eq!(v.get(), Reached::Nothing);
    v.set("41");
    assert_eq!(v.get(), Reached::At(41));
    assert_eq!(v.value(), Some(41));
    v.set("opaque");
    assert_eq!(v.get(), Reached::Untracked);
    v.set("42");
    assert_eq!(v.get(), Reached::At(42));
    assert_eq!(StoreVersion::untracked().get(), Reached::Untracked);
}
