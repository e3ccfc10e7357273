#!/usr/bin/env python3
"""Generates informer-testing/src/apiserver/fields/builtin.txt: the shape of every built-in
type the test API server serves, as server-side apply sees it (structured-merge-diff's
schema): which JSON fields a struct declares, which lists merge by key (`map`, with their
key fields), by value (`set`) or as a whole (`atomic`), and which maps and structs are atomic.

The data comes from k8s-openapi (Apache-2.0), read from the local cargo registry (build the
workspace once so it is unpacked): its structs give the fields and their JSON names, its
`DeepMerge` impls the list and map merge strategies of the Kubernetes OpenAPI
(`x-kubernetes-list-type`, `x-kubernetes-list-map-keys`, `x-kubernetes-map-type`, or the
`patchStrategy`/`patchMergeKey` they fall back to). Two things k8s-openapi does not carry are
listed below: lists keyed by more than one field, and structs that are atomic.

Usage: tools/gen_fields.py [REGISTRY_SRC_DIR] > src/apiserver/fields/builtin.txt
"""

import re
import sys

from k8s_openapi import K8S_OPENAPI, OPENAPI_VERSION, registry_dir, sources


# The types the server serves (and what writes to them carry).
ROOTS = [
    "api.core.v1.Pod",
    "api.core.v1.ConfigMap",
    "api.core.v1.Secret",
    "api.core.v1.Service",
    "api.core.v1.Namespace",
    "api.core.v1.Event",
    "api.apps.v1.Deployment",
    "api.apps.v1.ReplicaSet",
    "api.apps.v1.StatefulSet",
    "api.coordination.v1.Lease",
    "api.core.v1.ServiceAccount",
    "api.core.v1.PersistentVolumeClaim",
    "api.core.v1.Node",
    "api.apps.v1.DaemonSet",
    "api.batch.v1.Job",
    "api.batch.v1.CronJob",
    "api.rbac.v1.Role",
    "api.rbac.v1.RoleBinding",
    "api.rbac.v1.ClusterRole",
    "api.rbac.v1.ClusterRoleBinding",
    "api.networking.v1.Ingress",
    "api.policy.v1.PodDisruptionBudget",
    "api.core.v1.Endpoints",
    "api.core.v1.ReplicationController",
    "api.core.v1.PersistentVolume",
    "api.core.v1.ResourceQuota",
    "api.core.v1.LimitRange",
    "api.core.v1.PodTemplate",
    "api.discovery.v1.EndpointSlice",
    "api.networking.v1.NetworkPolicy",
    "api.networking.v1.IngressClass",
    "api.autoscaling.v2.HorizontalPodAutoscaler",
    "api.autoscaling.v1.HorizontalPodAutoscaler",
    "api.storage.v1.StorageClass",
    "api.scheduling.v1.PriorityClass",
    "api.certificates.v1.CertificateSigningRequest",
    "api.admissionregistration.v1.ValidatingWebhookConfiguration",
    "api.admissionregistration.v1.MutatingWebhookConfiguration",
    "api.admissionregistration.v1.ValidatingAdmissionPolicy",
    "api.admissionregistration.v1.ValidatingAdmissionPolicyBinding",
    "api.apps.v1.ControllerRevision",
    "api.events.v1.Event",
    "api.autoscaling.v1.Scale",
    "apiextensions_apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition",
]

# Types whose JSON form is a scalar (a string, a number or raw JSON): leaves.
LEAVES = {
    "apimachinery.pkg.apis.meta.v1.Time",
    "apimachinery.pkg.apis.meta.v1.MicroTime",
    "apimachinery.pkg.apis.meta.v1.FieldsV1",
    "apimachinery.pkg.runtime.RawExtension",
    "apimachinery.pkg.util.intstr.IntOrString",
    "apimachinery.pkg.api.resource.Quantity",
    "apiextensions_apiserver.pkg.apis.apiextensions.v1.JSON",
    "apiextensions_apiserver.pkg.apis.apiextensions.v1.CustomResourceSubresourceStatus",
    "apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps",
    "apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrArray",
    "apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrBool",
    "apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrStringArray",
}

# Lists keyed by several fields (`x-kubernetes-list-map-keys`); k8s-openapi merges them by
# their patch merge key alone.
MAP_KEYS = {
    ("api.core.v1.Container", "ports"): ["containerPort", "protocol"],
    ("api.core.v1.EphemeralContainer", "ports"): ["containerPort", "protocol"],
    ("api.core.v1.ServiceSpec", "ports"): ["port", "protocol"],
    ("api.core.v1.PodSpec", "topologySpreadConstraints"): ["topologyKey", "whenUnsatisfiable"],
}

# Structs with `x-kubernetes-map-type: atomic` (Go's `+structType=atomic`).
ATOMIC_STRUCTS = {
    "apimachinery.pkg.apis.meta.v1.LabelSelector",
    "api.core.v1.ObjectReference",
    "api.core.v1.LocalObjectReference",
    "api.core.v1.TypedLocalObjectReference",
    "api.core.v1.TypedObjectReference",
    "api.core.v1.ConfigMapKeySelector",
    "api.core.v1.SecretKeySelector",
    "api.core.v1.ObjectFieldSelector",
    "api.core.v1.ResourceFieldSelector",
    "api.core.v1.NodeSelector",
    "api.core.v1.NodeSelectorTerm",
    "api.core.v1.TopologySelectorTerm",
    "api.core.v1.FileKeySelector",
    "api.core.v1.SecretReference",
    "api.core.v1.EndpointAddress",
    "api.core.v1.EndpointPort",
    "api.core.v1.ScopeSelector",
    "api.discovery.v1.EndpointPort",
    "api.networking.v1.ServiceBackendPort",
}

PRIMITIVES = {"std::string::String", "String", "bool", "i32", "i64", "f64",
              "crate::ByteString", "serde_json::Value", "crate::serde_json::Value"}


def parse_structs(root):
    """type name -> {rust field: (json name, rust type)}, merge strategies, is resource"""
    types = {}
    for module, text in sources(root):
        m = re.search(r"pub struct (\w+) \{(.*?)\n\}", text, re.S)
        if not m:
            continue
        name = ".".join(module + [m.group(1)])
        rust_fields = dict(re.findall(r"pub (\w+): ([^\n]*),", m.group(2)))
        json_names = {key: json for json, key in re.findall(r'"([^"]+)" => Field::Key_(\w+)', text)}
        fields = {}
        for key, ty in rust_fields.items():
            if key in json_names:
                fields[key] = (json_names[key], ty)
        strategies = {}
        for kind, field in re.findall(r"merge_strategies::(list::atomic|list::set|map::atomic|map::granular)\(\s*&mut self\.(\w+)", text):
            strategies[field] = kind
        for field, keys in re.findall(r"merge_strategies::list::map\(\s*&mut self\.(\w+),\s*other\.\w+,\s*&\[(.*?)\],", text, re.S):
            strategies[field] = ("list::map", re.findall(r"lhs\.(\w+) ==", keys))
        resource = f"impl crate::Resource for {m.group(1)}" in text
        types[name] = (fields, strategies, resource)
    return types


def strip(ty, prefix):
    ty = ty.strip()
    if ty.startswith(prefix) and ty.endswith(">"):
        return ty[len(prefix):-1].strip()
    return None


def shape(types, owner, field_json, ty, strategy, needed):
    """The shape text of a Rust type."""
    for wrapper in ("Option<", "std::boxed::Box<"):
        inner = strip(ty, wrapper)
        if inner is not None:
            return shape(types, owner, field_json, inner, strategy, needed)
    inner = strip(ty, "std::vec::Vec<")
    if inner is not None:
        elem = shape(types, owner, field_json, inner, None, needed)
        # A list keyed by a nested field (StatefulSetSpec.volumeClaimTemplates by
        # metadata.name) is atomic in the Kubernetes OpenAPI.
        if isinstance(strategy, tuple) and strategy[1]:
            keys = MAP_KEYS.get((owner, field_json))
            if keys is None:
                elem_type = inner.replace("crate::", "").replace("::", ".")
                elem_fields = types[elem_type][0]
                keys = [elem_fields[k][0] for k in strategy[1]]
            return f"list map {','.join(keys)} {elem}"
        if strategy == "list::set":
            return f"list set {elem}"
        return f"list atomic {elem}"
    inner = strip(ty, "std::collections::BTreeMap<")
    if inner is not None:
        value = inner.split(",", 1)[1]
        elem = shape(types, owner, field_json, value, None, needed)
        kind = "atomic" if strategy == "map::atomic" else "granular"
        return f"map {kind} {elem}"
    ty = ty.strip()
    if ty in PRIMITIVES:
        return "scalar"
    if ty.startswith("crate::"):
        name = ty[len("crate::"):].replace("::", ".")
        if name in LEAVES:
            return "scalar"
        if name not in types:
            sys.exit(f"{owner}.{field_json}: unknown type {ty}")
        needed.append(name)
        return f"struct {name}"
    sys.exit(f"{owner}.{field_json}: cannot read type {ty!r}")


def main():
    types = parse_structs(registry_dir())
    print(f"# Generated by tools/gen_fields.py from {K8S_OPENAPI} {OPENAPI_VERSION}. Do not edit.")
    print("# type <name> [atomic] [resource]")
    print("#   <json name> <shape>; shape: scalar | struct <type> | list <atomic|set|map <keys>> <shape>")
    print("#                               | map <granular|atomic> <shape>")
    seen, queue = set(), list(ROOTS)
    while queue:
        name = queue.pop(0)
        if name in seen:
            continue
        seen.add(name)
        fields, strategies, resource = types[name]
        flags = ""
        if name in ATOMIC_STRUCTS:
            flags += " atomic"
        if resource:
            flags += " resource"
        print(f"type {name}{flags}")
        lines = []
        if resource:
            lines += ["apiVersion scalar", "kind scalar"]
        for key, (json, ty) in fields.items():
            needed = []
            lines.append(f"{json} {shape(types, name, json, ty, strategies.get(key), needed)}")
            queue.extend(needed)
        for line in sorted(lines):
            print(f"  {line}")


if __name__ == "__main__":
    main()
