//! The admission plugins a cluster runs by default that fill a new object in from other
//! objects: `DefaultStorageClass` (a PersistentVolumeClaim without a class gets the default
//! StorageClass), `DefaultIngressClass` (the same for an Ingress and IngressClasses) and
//! `TaintNodesByCondition` (a new Node starts tainted not-ready, until its kubelet reports).

use serde_json::{Value, json};

/// The annotation that makes a StorageClass the default (`storageutil.IsDefaultAnnotation`),
/// and its beta form, still honoured.
const DEFAULT_STORAGE_CLASS: [&str; 2] = [
    "storageclass.kubernetes.io/is-default-class",
    "storageclass.beta.kubernetes.io/is-default-class",
];
/// The annotation that makes an IngressClass the default.
const DEFAULT_INGRESS_CLASS: [&str; 1] = ["ingressclass.kubernetes.io/is-default-class"];
/// The annotation an Ingress named its class with before `ingressClassName`.
const INGRESS_CLASS_ANNOTATION: &str = "kubernetes.io/ingress.class";

/// The name of the default class among `classes`: those with one of `annotations` set to
/// `"true"`; of several, the newest, then the first by name (`GetDefaultClass`).
fn default_class<'a>(
    classes: impl Iterator<Item = &'a Value>,
    annotations: &[&str],
) -> Option<String> {
    classes
        .filter(|class| {
            annotations.iter().any(|annotation| {
                class
                    .pointer("/metadata/annotations")
                    .and_then(|a| a.get(*annotation))
                    .and_then(Value::as_str)
                    == Some("true")
            })
        })
        .filter_map(|class| {
            let name = class.pointer("/metadata/name")?.as_str()?;
            let created = class
                .pointer("/metadata/creationTimestamp")
                .and_then(Value::as_str)
                .unwrap_or("");
            Some((created, name))
        })
        .min_by(|(a_created, a_name), (b_created, b_name)| {
            b_created.cmp(a_created).then(a_name.cmp(b_name))
        })
        .map(|(_, name)| name.to_string())
}

/// `DefaultStorageClass` on a new PersistentVolumeClaim: without `spec.storageClassName`
/// (an empty one is a choice: no class), it gets the default StorageClass's name, if one is
/// marked.
pub(crate) fn default_storage_class<'a>(
    claim: &mut Value,
    classes: impl Iterator<Item = &'a Value>,
) {
    let Some(spec) = claim.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    if spec.get("storageClassName").is_some_and(|c| !c.is_null()) {
        return;
    }
    if let Some(class) = default_class(classes, &DEFAULT_STORAGE_CLASS) {
        spec.insert("storageClassName".into(), json!(class));
    }
}

/// `DefaultIngressClass` on a new Ingress: without `spec.ingressClassName` nor the older
/// `kubernetes.io/ingress.class` annotation, it gets the default IngressClass's name, if one
/// is marked.
pub(crate) fn default_ingress_class<'a>(
    ingress: &mut Value,
    classes: impl Iterator<Item = &'a Value>,
) {
    let annotated = ingress
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(INGRESS_CLASS_ANNOTATION))
        .is_some();
    let Some(spec) = ingress.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    if annotated || spec.get("ingressClassName").is_some_and(|c| !c.is_null()) {
        return;
    }
    if let Some(class) = default_class(classes, &DEFAULT_INGRESS_CLASS) {
        spec.insert("ingressClassName".into(), json!(class));
    }
}

/// `TaintNodesByCondition` on a new Node: tainted `node.kubernetes.io/not-ready:NoSchedule`
/// (unless it already is), which the node lifecycle controller takes off once the kubelet
/// reports it ready.
pub(crate) fn taint_new_node(node: &mut Value) {
    const KEY: &str = "node.kubernetes.io/not-ready";
    let Some(object) = node.as_object_mut() else {
        return;
    };
    let spec = object
        .entry("spec")
        .or_insert_with(|| json!({}))
        .as_object_mut();
    let Some(spec) = spec else {
        return;
    };
    let taints = spec.entry("taints").or_insert_with(|| json!([]));
    if taints.is_null() {
        *taints = json!([]);
    }
    let Some(taints) = taints.as_array_mut() else {
        return;
    };
    let tainted = taints.iter().any(|t| {
        t.get("key").and_then(Value::as_str) == Some(KEY)
            && t.get("effect").and_then(Value::as_str) == Some("NoSchedule")
    });
    if !tainted {
        taints.push(json!({"key": KEY, "effect": "NoSchedule"}));
    }
}

#[cfg(test)]
mod tests;
