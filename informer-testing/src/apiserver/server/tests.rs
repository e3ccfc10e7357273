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
    let q = |s: &str| Query::parse(Some(s));
    assert_eq!(
        read_version(&q(""), false, false).unwrap(),
        ReadVersion::MostRecent
    );
    assert_eq!(
        read_version(&q("resourceVersion=0"), false, false).unwrap(),
        ReadVersion::Any
    );
    assert_eq!(
        read_version(&q("resourceVersion=5"), false, false).unwrap(),
        ReadVersion::NotOlderThan(5)
    );
    assert_eq!(
        read_version(&q("resourceVersion=5"), true, false).unwrap(),
        ReadVersion::Exact(5)
    );
    assert_eq!(
        read_version(
            &q("resourceVersion=5&resourceVersionMatch=Exact"),
            false,
            false
        )
        .unwrap(),
        ReadVersion::Exact(5)
    );
    assert_eq!(
        read_version(
            &q("resourceVersion=5&resourceVersionMatch=NotOlderThan"),
            true,
            false
        )
        .unwrap(),
        ReadVersion::NotOlderThan(5)
    );
    assert_eq!(
        read_version(&q("resourceVersionMatch=Exact"), false, false)
            .unwrap_err()
            .code(),
        422
    );
    assert_eq!(
        read_version(
            &q("resourceVersion=0&resourceVersionMatch=Exact"),
            false,
            false
        )
        .unwrap_err()
        .code(),
        422
    );
    assert_eq!(
        read_version(&q("resourceVersion=x"), false, false)
            .unwrap_err()
            .code(),
        400
    );
    assert_eq!(
        read_version(&q("resourceVersion=3"), true, true)
            .unwrap_err()
            .code(),
        400
    );
}
