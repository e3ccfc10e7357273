use super::*;

/// (plural, namespace, name, subresource)
type Parts = (String, Option<String>, Option<String>, Option<String>);

fn resource_of(route: Route) -> Option<Parts> {
    match route {
        Route::Resource(p) => Some((
            p.resource.plural.clone(),
            p.namespace,
            p.name,
            p.subresource,
        )),
        _ => None,
    }
}

#[test]
fn routes() {
    let registry = Registry::builtin();
    let r = |path| resource_of(route(&registry, path));
    assert_eq!(
        r("/api/v1/namespaces/ns/pods"),
        Some(("pods".into(), Some("ns".into()), None, None))
    );
    assert_eq!(
        r("/api/v1/namespaces/ns/pods/p/status"),
        Some((
            "pods".into(),
            Some("ns".into()),
            Some("p".into()),
            Some("status".into())
        ))
    );
    assert_eq!(r("/api/v1/pods"), Some(("pods".into(), None, None, None)));
    assert_eq!(
        r("/api/v1/namespaces/kube-system"),
        Some(("namespaces".into(), None, Some("kube-system".into()), None))
    );
    assert_eq!(
        r("/api/v1/namespaces/x/status"),
        Some((
            "namespaces".into(),
            None,
            Some("x".into()),
            Some("status".into())
        ))
    );
    assert_eq!(
        r("/apis/apps/v1/namespaces/a/deployments/d"),
        Some((
            "deployments".into(),
            Some("a".into()),
            Some("d".into()),
            None
        ))
    );
    assert_eq!(
        r("/api/v1/pods/p"),
        None,
        "namespaced items need a namespace"
    );
    assert_eq!(r("/api/v1/namespaces/ns/configmaps/c/status"), None);
    assert_eq!(
        r("/api/v1/namespaces/ns/pods/p/exec"),
        Some((
            "pods".into(),
            Some("ns".into()),
            Some("p".into()),
            Some("exec".into())
        ))
    );
    assert_eq!(r("/api/v1/namespaces/ns/configmaps/c/exec"), None);
    assert_eq!(r("/apis/apps/v2/deployments"), None);
    assert_eq!(r("/api/v1/widgets"), None);
    assert!(matches!(route(&registry, "/apis/apps"), Route::Group(_)));
    assert!(matches!(route(&registry, "/nope"), Route::NotFound));
}

#[test]
fn list_read_versions() {
    // A list's options, read and validated as kube-apiserver does, then what it reads.
    let read_version = |query: &str| {
        let query = Query::parse(Some(query));
        ListOptions::parse(&query, false).and_then(|options| options.read_version())
    };
    assert_eq!(read_version("").unwrap(), ReadVersion::MostRecent);
    assert_eq!(read_version("resourceVersion=0").unwrap(), ReadVersion::Any);
    assert_eq!(
        read_version("resourceVersion=5").unwrap(),
        ReadVersion::NotOlderThan(5)
    );
    assert_eq!(
        read_version("resourceVersion=5&limit=1").unwrap(),
        ReadVersion::Exact(5)
    );
    assert_eq!(
        read_version("resourceVersion=5&resourceVersionMatch=Exact").unwrap(),
        ReadVersion::Exact(5)
    );
    assert_eq!(
        read_version("resourceVersion=5&resourceVersionMatch=NotOlderThan&limit=1").unwrap(),
        ReadVersion::NotOlderThan(5)
    );
    assert_eq!(
        read_version("resourceVersion=0&resourceVersionMatch=NotOlderThan").unwrap(),
        ReadVersion::Any
    );
    assert_eq!(
        read_version("resourceVersionMatch=Exact")
            .unwrap_err()
            .code(),
        422
    );
    assert_eq!(
        read_version("resourceVersion=0&resourceVersionMatch=Exact")
            .unwrap_err()
            .code(),
        422
    );
    assert_eq!(read_version("resourceVersion=x").unwrap_err().code(), 400);
    assert_eq!(
        read_version("resourceVersion=3&limit=1&continue=x")
            .unwrap_err()
            .code(),
        400
    );
    assert_eq!(
        read_version("resourceVersion=0&continue=x").unwrap(),
        ReadVersion::MostRecent
    );
}

#[test]
fn query_parameters_convert_as_go_converts_them() {
    let q = |s: &str| Query::parse(Some(s));
    // `runtime.Convert_Slice_string_To_bool`.
    for (query, expected) in [
        ("", None),
        ("watch", Some(true)),
        ("watch=", Some(true)),
        ("watch=1", Some(true)),
        ("watch=yes", Some(true)),
        ("watch=0", Some(false)),
        ("watch=false", Some(false)),
        ("watch=FaLsE", Some(false)),
    ] {
        assert_eq!(q(query).bool("watch"), expected, "{query}");
    }
    // `strconv.ParseInt`.
    assert_eq!(q("limit=%2B7").i64("limit").unwrap(), Some(7));
    assert_eq!(q("limit=-7").i64("limit").unwrap(), Some(-7));
    assert_eq!(q("").i64("limit").unwrap(), None);
    for (query, message) in [
        ("limit=", r#"strconv.ParseInt: parsing "": invalid syntax"#),
        (
            "limit=-",
            r#"strconv.ParseInt: parsing "-": invalid syntax"#,
        ),
        (
            "limit=1_0",
            r#"strconv.ParseInt: parsing "1_0": invalid syntax"#,
        ),
        (
            "limit=9223372036854775808",
            r#"strconv.ParseInt: parsing "9223372036854775808": value out of range"#,
        ),
    ] {
        let err = q(query).i64("limit").unwrap_err();
        assert_eq!((err.code(), err.message()), (400, message), "{query}");
    }
    assert_eq!(
        q("limit=-9223372036854775808").i64("limit").unwrap(),
        Some(i64::MIN)
    );
    // `strconv.ParseUint` of resource versions: digits only.
    assert_eq!(parse_revision("18446744073709551615"), Ok(u64::MAX));
    assert_eq!(
        parse_revision("+1").unwrap_err(),
        r#"resourceVersion: Invalid value: "+1": strconv.ParseUint: parsing "+1": invalid syntax"#
    );
    assert_eq!(
        parse_revision("18446744073709551616").unwrap_err(),
        r#"resourceVersion: Invalid value: "18446744073709551616": strconv.ParseUint: parsing "18446744073709551616": value out of range"#
    );
    assert_eq!(go_quote("a\"b\\\n\u{1}"), r#""a\"b\\\n\x01""#);
}

#[test]
fn a_gzip_member_unpacks_to_the_bytes() {
    use std::io::Read as _;
    let data = "0123456789".repeat(20_000);
    let member = gzip(data.as_bytes());
    assert_eq!(&member[..3], &[0x1f, 0x8b, 8], "a gzip member, deflate");
    assert!(
        member.len() < data.len() / 10,
        "compressed: {}",
        member.len()
    );
    let mut unpacked = String::new();
    flate2::read::GzDecoder::new(&member[..])
        .read_to_string(&mut unpacked)
        .expect("a valid member");
    assert_eq!(unpacked, data);
}

#[test]
fn query_pairs_with_malformed_escapes_are_dropped() {
    let query = Query::parse(Some("labelSelector=%zz&limit=1&a=%4"));
    assert_eq!(query.get("labelSelector"), None);
    assert_eq!(query.get("limit"), Some("1"));
    assert_eq!(query.get("a"), None);
}

#[test]
fn empty_path_segments_and_health_with_a_trailing_slash_are_no_route() {
    let registry = Registry::builtin();
    assert!(matches!(route(&registry, "/api//v1/pods"), Route::NotFound));
    assert!(matches!(route(&registry, "//api/v1/pods"), Route::NotFound));
    assert!(matches!(route(&registry, "/healthz/"), Route::NotFound));
    assert!(matches!(
        route(&registry, "/healthz"),
        Route::Health("healthz", None)
    ));
}
