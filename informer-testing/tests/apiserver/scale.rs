//! The `scale` subresource of Deployments, ReplicaSets, StatefulSets and custom resources.

use informer_testing::{CustomResourceSpec, ScaleSubresource};
use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::autoscaling::v1::{Scale, ScaleSpec};
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use serde_json::json;

use super::common::{server, status, within};

fn deployment(name: &str, replicas: i32) -> Deployment {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                         "spec": {"containers": [{"name": "app", "image": "nginx"}]}}
        }
    }))
    .unwrap()
}

#[tokio::test]
async fn deployments_scale_through_get_patch_and_replace() {
    let server = server().await;
    let deployments: Api<Deployment> = Api::default_namespaced(server.client());
    within(deployments.create(&PostParams::default(), &deployment("web", 2)))
        .await
        .unwrap();
    server
        .update_status_json({
            let mut web = server
                .get_json("apps/v1", "Deployment", Some("default"), "web")
                .unwrap();
            web["status"] = json!({"replicas": 2});
            web
        })
        .unwrap();

    let scale = within(deployments.get_scale("web")).await.unwrap();
    assert_eq!(scale.spec.as_ref().unwrap().replicas, Some(2));
    let scale_status = scale.status.as_ref().unwrap();
    assert_eq!(scale_status.replicas, 2);
    assert_eq!(scale_status.selector.as_deref(), Some("app=web"));
    assert_eq!(scale.metadata.name.as_deref(), Some("web"));

    let patch = json!({"spec": {"replicas": 5}});
    let scaled =
        within(deployments.patch_scale("web", &PatchParams::default(), &Patch::Merge(&patch)))
            .await
            .unwrap();
    assert_eq!(scaled.spec.unwrap().replicas, Some(5));
    let web = within(deployments.get("web")).await.unwrap();
    assert_eq!(web.spec.unwrap().replicas, Some(5));
    assert_eq!(web.metadata.generation, Some(2), "a spec change");

    let replace = Scale {
        metadata: scale.metadata.clone(),
        spec: Some(ScaleSpec { replicas: Some(1) }),
        status: None,
    };
    let err = status(
        within(deployments.replace_scale("web", &PostParams::default(), &replace))
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 409, "a stale resourceVersion conflicts");
    let current = within(deployments.get_scale("web")).await.unwrap();
    let replace = Scale {
        metadata: current.metadata,
        spec: Some(ScaleSpec { replicas: Some(1) }),
        status: None,
    };
    let replaced = within(deployments.replace_scale("web", &PostParams::default(), &replace))
        .await
        .unwrap();
    assert_eq!(replaced.spec.unwrap().replicas, Some(1));

    let negative = json!({"spec": {"replicas": -1}});
    let err = status(
        within(deployments.patch_scale("web", &PatchParams::default(), &Patch::Merge(&negative)))
            .await
            .unwrap_err(),
    );
    assert_eq!(
        err.message,
        "Scale.autoscaling \"web\" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0"
    );
    let missing = status(within(deployments.get_scale("missing")).await.unwrap_err());
    assert_eq!(missing.code, 404);
}

/// A server-side apply of a Deployment's `Scale` (an autoscaler's write): the replicas are
/// the applier's (`Apply`, subresource `scale`, no time, as `ScaleHandler` records them on
/// the Deployment), another owner's replicas conflict (named as the `Scale` sees them) unless
/// forced, and `fieldManager` is required.
#[tokio::test]
async fn a_deployments_scale_is_applied_with_its_conflicts() {
    let server = server().await;
    let deployments: Api<Deployment> = Api::default_namespaced(server.client());
    within(deployments.create(
        &PostParams {
            field_manager: Some("creator".into()),
            ..PostParams::default()
        },
        &deployment("web", 2),
    ))
    .await
    .unwrap();
    let scale = |replicas: i32| json!({"apiVersion": "autoscaling/v1", "kind": "Scale", "spec": {"replicas": replicas}});

    let err = status(
        within(deployments.patch_scale("web", &PatchParams::default(), &Patch::Apply(scale(4))))
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 422);
    assert!(
        err.message.contains("fieldManager: Required value"),
        "{}",
        err.message
    );

    let hpa = PatchParams::apply("hpa");
    let err = status(
        within(deployments.patch_scale("web", &hpa, &Patch::Apply(scale(4))))
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 409);
    assert_eq!(
        err.message,
        "Apply failed with 1 conflict: conflict with \"creator\" using autoscaling/v1: .spec.replicas"
    );
    let web = within(deployments.get("web")).await.unwrap();
    assert_eq!(
        web.spec.as_ref().unwrap().replicas,
        Some(2),
        "a conflict writes nothing"
    );

    let applied =
        within(deployments.patch_scale("web", &hpa.clone().force(), &Patch::Apply(scale(4))))
            .await
            .unwrap();
    assert_eq!(applied.spec.unwrap().replicas, Some(4));
    let web = within(deployments.get("web")).await.unwrap();
    assert_eq!(web.spec.as_ref().unwrap().replicas, Some(4));
    let managed = serde_json::to_value(web.metadata.managed_fields.unwrap()).unwrap();
    let entry = managed
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["manager"] == "hpa")
        .expect("the applier's entry");
    assert_eq!(entry["operation"], "Apply");
    assert_eq!(entry["subresource"], "scale");
    assert_eq!(entry["apiVersion"], "apps/v1");
    assert_eq!(entry["fieldsV1"], json!({"f:spec": {"f:replicas": {}}}));
    assert!(
        entry.get("time").is_none(),
        "ScaleHandler gives the entry no time: {entry}"
    );
    let creator = managed
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["manager"] == "creator")
        .unwrap();
    assert!(
        creator["fieldsV1"]["f:spec"].get("f:replicas").is_none(),
        "forced: the replicas are no longer the creator's"
    );

    // Now the replicas are the applier's alone: its next apply moves them.
    let applied = within(deployments.patch_scale("web", &hpa, &Patch::Apply(scale(6))))
        .await
        .unwrap();
    assert_eq!(applied.spec.unwrap().replicas, Some(6));
}

#[tokio::test]
async fn stateful_sets_are_served_and_scale() {
    let server = server().await;
    let sets: Api<StatefulSet> = Api::default_namespaced(server.client());
    let set: StatefulSet = serde_json::from_value(json!({
        "metadata": {"name": "db"},
        "spec": {"replicas": 1, "serviceName": "db",
                 "selector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["db"]}]},
                 "template": {"metadata": {"labels": {"app": "db"}}, "spec": {"containers": [{"name": "db", "image": "postgres"}]}}}
    }))
    .unwrap();
    let created = within(sets.create(&PostParams::default(), &set))
        .await
        .unwrap();
    assert_eq!(created.metadata.generation, Some(1));
    let patch = json!({"spec": {"replicas": 3}});
    within(sets.patch_scale("db", &PatchParams::default(), &Patch::Merge(&patch)))
        .await
        .unwrap();
    let scale = within(sets.get_scale("db")).await.unwrap();
    assert_eq!(scale.spec.unwrap().replicas, Some(3));
    assert_eq!(
        scale.status.unwrap().selector.as_deref(),
        Some("app in (db)")
    );
}

#[tokio::test]
async fn custom_resources_scale_through_their_declared_paths() {
    let server = server().await;
    server
        .register_custom_resource(
            CustomResourceSpec::namespaced("example.com", "v1", "Pool", "pools")
                .with_status_subresource()
                .with_scale_subresource(
                    ScaleSubresource::new(".spec.size", ".status.ready")
                        .with_label_selector_path(".status.selector"),
                ),
        )
        .unwrap();
    let gvk = GroupVersionKind::gvk("example.com", "v1", "Pool");
    let resource = ApiResource::from_gvk_with_plural(&gvk, "pools");
    let pools: Api<DynamicObject> = Api::default_namespaced_with(server.client(), &resource);
    let pool = DynamicObject::new("p", &resource).data(json!({"spec": {"size": 2}}));
    within(pools.create(&PostParams::default(), &pool))
        .await
        .unwrap();
    let status_patch = json!({"status": {"ready": 1, "selector": "pool=p"}});
    within(pools.patch_status("p", &PatchParams::default(), &Patch::Merge(&status_patch)))
        .await
        .unwrap();

    let scale = within(pools.get_scale("p")).await.unwrap();
    assert_eq!(scale.spec.unwrap().replicas, Some(2));
    let scale_status = scale.status.unwrap();
    assert_eq!(
        (scale_status.replicas, scale_status.selector.as_deref()),
        (1, Some("pool=p"))
    );
    let patch = json!({"spec": {"replicas": 4}});
    within(pools.patch_scale("p", &PatchParams::default(), &Patch::Merge(&patch)))
        .await
        .unwrap();
    let stored = within(pools.get("p")).await.unwrap();
    assert_eq!(stored.data["spec"]["size"], 4);

    // Without its spec replicas field, a read of the scale fails as kube-apiserver's does,
    // and a patch of the scale creates the field.
    let empty = DynamicObject::new("e", &resource).data(json!({"spec": {}}));
    within(pools.create(&PostParams::default(), &empty))
        .await
        .unwrap();
    let missing = status(within(pools.get_scale("e")).await.unwrap_err());
    assert_eq!(
        (missing.code, missing.reason.as_str()),
        (500, "InternalError")
    );
    assert_eq!(
        missing.message,
        r#"Internal error occurred: the spec replicas field ".spec.size" does not exist"#
    );
    within(pools.patch_scale("e", &PatchParams::default(), &Patch::Merge(&patch)))
        .await
        .unwrap();
    let scale = within(pools.get_scale("e")).await.unwrap();
    assert_eq!(scale.spec.unwrap().replicas, Some(4));

    // Types without a scale subresource have no scale path.
    server
        .register_custom_resource(CustomResourceSpec::namespaced(
            "example.com",
            "v1",
            "Plain",
            "plains",
        ))
        .unwrap();
    let plain_resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.com", "v1", "Plain"),
        "plains",
    );
    let plains: Api<DynamicObject> = Api::default_namespaced_with(server.client(), &plain_resource);
    within(plains.create(
        &PostParams::default(),
        &DynamicObject::new("x", &plain_resource),
    ))
    .await
    .unwrap();
    assert_eq!(
        status(within(plains.get_scale("x")).await.unwrap_err()).code,
        404
    );
}
