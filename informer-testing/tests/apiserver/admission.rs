//! The admission configurations of `admissionregistration.k8s.io/v1`, stored and validated
//! as kube-apiserver stores them (never called): an operator bundle's webhook
//! configurations applied with kubectl, typed creates through kube, their defaults,
//! generation, 422s, Table columns and the `api-extensions` category.

use k8s_openapi::api::admissionregistration::v1::{
    ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding, ValidatingWebhookConfiguration,
};
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use super::common::{server, status};
use super::kubectl::{Kubectl, fails, started, write_manifest};

async fn kubectl_ok_json(kubectl: &Kubectl, name: &str) -> Value {
    let text = kubectl
        .ok(&["get", "validatingwebhookconfiguration", name, "-o", "json"])
        .await;
    serde_json::from_str(&text).unwrap()
}

fn webhook_configuration(name: &str, hook: &str) -> ValidatingWebhookConfiguration {
    serde_json::from_value(json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": name},
        "webhooks": [{
            "name": hook,
            "admissionReviewVersions": ["v1"],
            "sideEffects": "None",
            "clientConfig": {"service": {"name": "webhook-service", "namespace": "system", "path": "/validate-widget"}},
            "rules": [{
                "operations": ["CREATE", "UPDATE"],
                "apiGroups": ["example.com"],
                "apiVersions": ["v1"],
                "resources": ["widgets"],
            }],
        }],
    }))
    .unwrap()
}

#[tokio::test]
async fn a_webhook_configuration_reads_back_with_its_defaults_and_counts_generations() {
    let server = server().await;
    let api: Api<ValidatingWebhookConfiguration> = Api::all(server.client());
    let created = api
        .create(
            &PostParams::default(),
            &webhook_configuration("widgets", "vwidget.example.com"),
        )
        .await
        .unwrap();
    assert_eq!(created.metadata.generation, Some(1));
    let hook = serde_json::to_value(&created.webhooks.unwrap()[0]).unwrap();
    assert_eq!(hook["failurePolicy"], "Fail");
    assert_eq!(hook["matchPolicy"], "Equivalent");
    assert_eq!(hook["namespaceSelector"], json!({}));
    assert_eq!(hook["objectSelector"], json!({}));
    assert_eq!(hook["timeoutSeconds"], 10);
    assert_eq!(hook["rules"][0]["scope"], "*");
    assert_eq!(hook["clientConfig"]["service"]["port"], 443);

    let patch = json!({"webhooks": [{"name": "vwidget.example.com", "timeoutSeconds": 5}]});
    let patched = api
        .patch(
            "widgets",
            &PatchParams::default(),
            &Patch::Strategic(&patch),
        )
        .await
        .unwrap();
    assert_eq!(patched.metadata.generation, Some(2));
    assert_eq!(patched.webhooks.unwrap()[0].timeout_seconds, Some(5));
}

#[tokio::test]
async fn a_webhook_configuration_kube_apiserver_refuses_is_refused() {
    let server = server().await;
    let api: Api<ValidatingWebhookConfiguration> = Api::all(server.client());
    let mut invalid = webhook_configuration("widgets", "widget");
    invalid.webhooks.as_mut().unwrap()[0].side_effects = "Some".into();
    let err = api
        .create(&PostParams::default(), &invalid)
        .await
        .unwrap_err();
    let status = status(err);
    assert_eq!(status.code, 422);
    assert_eq!(
        status.message,
        "ValidatingWebhookConfiguration.admissionregistration.k8s.io \"widgets\" is invalid: [webhooks[0].name: Invalid value: \"widget\": should be a domain with at least three segments separated by dots, webhooks[0].sideEffects: Unsupported value: \"Some\": supported values: \"None\", \"NoneOnDryRun\"]"
    );
}

#[tokio::test]
async fn a_policy_and_its_binding_are_stored_with_their_defaults() {
    let server = server().await;
    let client = server.client();
    let policies: Api<ValidatingAdmissionPolicy> = Api::all(client.clone());
    let policy: ValidatingAdmissionPolicy = serde_json::from_value(json!({
        "metadata": {"name": "max-replicas"},
        "spec": {
            "matchConstraints": {"resourceRules": [{
                "operations": ["CREATE", "UPDATE"],
                "apiGroups": ["apps"],
                "apiVersions": ["v1"],
                "resources": ["deployments"],
            }]},
            "validations": [{"expression": "object.spec.replicas <= 5"}],
        },
    }))
    .unwrap();
    let created = policies
        .create(&PostParams::default(), &policy)
        .await
        .unwrap();
    let spec = serde_json::to_value(created.spec.unwrap()).unwrap();
    assert_eq!(spec["failurePolicy"], "Fail");
    assert_eq!(spec["matchConstraints"]["matchPolicy"], "Equivalent");
    assert_eq!(spec["matchConstraints"]["resourceRules"][0]["scope"], "*");

    let bindings: Api<ValidatingAdmissionPolicyBinding> = Api::all(client);
    let binding: ValidatingAdmissionPolicyBinding = serde_json::from_value(json!({
        "metadata": {"name": "max-replicas"},
        "spec": {"policyName": "max-replicas", "validationActions": ["Deny"]},
    }))
    .unwrap();
    bindings
        .create(&PostParams::default(), &binding)
        .await
        .unwrap();
    let mut without_actions = binding.clone();
    without_actions.metadata.name = Some("other".into());
    without_actions.spec.as_mut().unwrap().validation_actions = None;
    let err = bindings
        .create(&PostParams::default(), &without_actions)
        .await
        .unwrap_err();
    assert!(status(err).message.contains(
        "spec.validationActions: Required value: at least one validation action is required"
    ));
}

/// The webhook configurations `controller-gen` writes for a Kubebuilder project
/// (`config/webhook/manifests.yaml`), as `kubectl apply -k config/default` sends them: a
/// mutating one and a validating one, alike but for their names.
fn bundle() -> String {
    [
        ("Mutating", "mutating", "mutate", "m"),
        ("Validating", "validating", "validate", "v"),
    ]
    .iter()
    .map(|(kind, name, path, prefix)| {
        format!(
            r#"---
apiVersion: admissionregistration.k8s.io/v1
kind: {kind}WebhookConfiguration
metadata:
  name: {name}-webhook-configuration
webhooks:
- admissionReviewVersions:
  - v1
  clientConfig:
    service:
      name: webhook-service
      namespace: system
      path: /{path}-batch-tutorial-kubebuilder-io-v1-cronjob
  failurePolicy: Fail
  name: {prefix}cronjob-v1.kb.io
  rules:
  - apiGroups:
    - batch.tutorial.kubebuilder.io
    apiVersions:
    - v1
    operations:
    - CREATE
    - UPDATE
    resources:
    - cronjobs
  sideEffects: None
"#
        )
    })
    .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_applies_a_kubebuilder_bundles_webhook_configurations() {
    let Some((_server, kubectl)) = started().await else {
        return;
    };
    let applied_file = write_manifest(&kubectl, "webhooks.yaml", &bundle());
    let applied = kubectl.ok(&["apply", "-f", &applied_file]).await;
    assert!(
        applied.contains("mutatingwebhookconfiguration.admissionregistration.k8s.io/mutating-webhook-configuration created"),
        "{applied}"
    );
    let version = |kubectl| async move {
        kubectl_ok_json(kubectl, "validating-webhook-configuration").await["metadata"]
            ["resourceVersion"]
            .clone()
    };
    let before = version(&kubectl).await;
    // The rules list is replaced whole by a strategic merge patch, and it now holds the
    // defaulted `scope`, so kubectl sends it again (and says `configured`, as it does
    // against a cluster); the server finds nothing changed and writes nothing.
    kubectl.ok(&["apply", "-f", &applied_file]).await;
    assert_eq!(version(&kubectl).await, before);

    let table = kubectl
        .ok(&["get", "validatingwebhookconfigurations"])
        .await;
    let mut lines = table.lines();
    let header: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAME", "WEBHOOKS", "AGE"]);
    let row: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(row[..2], ["validating-webhook-configuration", "1"]);

    let extensions = kubectl.ok(&["get", "api-extensions", "-o", "name"]).await;
    assert!(
        extensions.contains("mutatingwebhookconfiguration.admissionregistration.k8s.io/mutating-webhook-configuration"),
        "{extensions}"
    );

    let stored: Value = serde_json::from_str(
        &kubectl
            .ok(&[
                "get",
                "mutatingwebhookconfiguration",
                "mutating-webhook-configuration",
                "-o",
                "json",
            ])
            .await,
    )
    .unwrap();
    assert_eq!(stored["webhooks"][0]["reinvocationPolicy"], "Never");

    let broken = write_manifest(
        &kubectl,
        "broken.yaml",
        &bundle().replace("sideEffects: None", "sideEffects: Unknown"),
    );
    let refused = fails(&kubectl, &["apply", "-f", &broken]).await;
    assert!(
        refused.contains("webhooks[0].sideEffects: Unsupported value: \"Unknown\""),
        "{refused}"
    );
    kubectl.cleanup();
}
