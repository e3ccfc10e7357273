#!/usr/bin/env python3
"""Generates informer-testing/src/apiserver/schema/builtin.txt: the fields of the
Kubernetes types the test API server serves, for decoding protobuf request bodies and
for finding unknown fields in JSON and YAML ones.

The data comes from two crates on crates.io, both Apache-2.0, read from the local cargo
registry (build the workspace once, and add k8s-pb to a scratch project or fetch it with
`cargo info k8s-pb`, so both are unpacked):

- k8s-pb: the protobuf messages (field numbers, scalar kinds, nested message types);
- k8s-openapi (the server's Kubernetes version): the JSON names of the fields and which
  fields are required (not `Option`).

Usage: tools/gen_schema.py [REGISTRY_SRC_DIR] > src/apiserver/schema/builtin.txt
"""

import glob
import os
import re
import sys

from k8s_openapi import JSON_FORM, K8S_OPENAPI, OPENAPI_VERSION, registry_dir, sources

K8S_PB = "k8s-pb-0.9.0"

# The kinds the server registers (and what their bodies may wrap), as protobuf messages.
ROOTS = [
    "k8s.io.api.core.v1.Pod",
    "k8s.io.api.core.v1.ConfigMap",
    "k8s.io.api.core.v1.Secret",
    "k8s.io.api.core.v1.Service",
    "k8s.io.api.core.v1.Namespace",
    "k8s.io.api.core.v1.Event",
    "k8s.io.api.apps.v1.Deployment",
    "k8s.io.api.apps.v1.ReplicaSet",
    "k8s.io.api.apps.v1.StatefulSet",
    "k8s.io.api.coordination.v1.Lease",
    "k8s.io.api.core.v1.ServiceAccount",
    "k8s.io.api.core.v1.PersistentVolumeClaim",
    "k8s.io.api.core.v1.Node",
    "k8s.io.api.apps.v1.DaemonSet",
    "k8s.io.api.batch.v1.Job",
    "k8s.io.api.batch.v1.CronJob",
    "k8s.io.api.rbac.v1.Role",
    "k8s.io.api.rbac.v1.RoleBinding",
    "k8s.io.api.rbac.v1.ClusterRole",
    "k8s.io.api.rbac.v1.ClusterRoleBinding",
    "k8s.io.api.networking.v1.Ingress",
    "k8s.io.api.policy.v1.PodDisruptionBudget",
    "k8s.io.api.core.v1.Endpoints",
    "k8s.io.api.core.v1.ReplicationController",
    "k8s.io.api.core.v1.PersistentVolume",
    "k8s.io.api.core.v1.ResourceQuota",
    "k8s.io.api.core.v1.LimitRange",
    "k8s.io.api.core.v1.PodTemplate",
    "k8s.io.api.discovery.v1.EndpointSlice",
    "k8s.io.api.networking.v1.NetworkPolicy",
    "k8s.io.api.networking.v1.IngressClass",
    "k8s.io.api.autoscaling.v2.HorizontalPodAutoscaler",
    "k8s.io.api.autoscaling.v1.HorizontalPodAutoscaler",
    "k8s.io.api.storage.v1.StorageClass",
    "k8s.io.api.scheduling.v1.PriorityClass",
    "k8s.io.api.certificates.v1.CertificateSigningRequest",
    "k8s.io.api.admissionregistration.v1.ValidatingWebhookConfiguration",
    "k8s.io.api.admissionregistration.v1.MutatingWebhookConfiguration",
    "k8s.io.api.admissionregistration.v1.ValidatingAdmissionPolicy",
    "k8s.io.api.admissionregistration.v1.ValidatingAdmissionPolicyBinding",
    "k8s.io.api.apps.v1.ControllerRevision",
    "k8s.io.api.events.v1.Event",
    "k8s.io.api.policy.v1.Eviction",
    "k8s.io.api.authorization.v1.SelfSubjectAccessReview",
    "k8s.io.api.authorization.v1.SelfSubjectRulesReview",
    "k8s.io.api.authorization.v1.SubjectAccessReview",
    "k8s.io.api.authorization.v1.LocalSubjectAccessReview",
    "k8s.io.api.authentication.v1.SelfSubjectReview",
    "k8s.io.api.authentication.v1.TokenReview",
    "k8s.io.api.authentication.v1.TokenRequest",
    "k8s.io.api.autoscaling.v1.Scale",
    "k8s.io.apimachinery.pkg.apis.meta.v1.DeleteOptions",
    # Lists' metadata (in the OpenAPI documents' list schemas).
    "k8s.io.apimachinery.pkg.apis.meta.v1.ListMeta",
    "k8s.io.apimachinery.pkg.runtime.Unknown",
]

# Messages with a JSON form of their own: not expanded.
SPECIAL = set(JSON_FORM) | {
    # `[]string` in JSON (a user's extra attributes, in reviews).
    "k8s.io.api.authorization.v1.ExtraValue",
    "k8s.io.api.authentication.v1.ExtraValue",
    "k8s.io.api.certificates.v1.ExtraValue",
}

# runtime.Unknown and runtime.TypeMeta have no k8s-openapi type; their JSON names.
EXTRA_JSON_NAMES = {
    "k8s.io.apimachinery.pkg.runtime.Unknown": {
        "type_meta": "typeMeta", "raw": "raw",
        "content_encoding": "contentEncoding", "content_type": "contentType",
    },
    "k8s.io.apimachinery.pkg.runtime.TypeMeta": {"api_version": "apiVersion", "kind": "kind"},
}


def strip_comments(text):
    return re.sub(r"^\s*///.*$", "", text, flags=re.M)


def resolve(module, rust_path):
    """Resolves `super::super::x::Y` relative to a module (list of path parts)."""
    parts = rust_path.split("::")
    base = list(module)
    while parts and parts[0] == "super":
        base.pop()
        parts.pop(0)
    return ".".join(["k8s.io"] + base + parts)


FIELD = re.compile(
    r"#\[prost\((?P<attr>[^\]]*)\)\]\s*pub\s+(?:r#)?(?P<name>\w+):\s*(?P<ty>[^;]*?),\s*(?=#\[prost|\}$|$)",
    re.S,
)


def message_type(module, ty):
    """The message named in a Rust field type, if any."""
    candidates = re.findall(r"((?:super::)*[A-Za-z_][\w:]*)", ty)
    for c in reversed(candidates):
        last = c.split("::")[-1]
        if last and last[0].isupper() and last not in ("Option", "Vec", "BTreeMap", "String"):
            if "::" not in c:
                return ".".join(["k8s.io"] + module + [c])
            if c.startswith("super::"):
                return resolve(module, c)
    return None


def parse_pb(root):
    messages = {}
    src = os.path.join(root, K8S_PB, "src")
    for path in glob.glob(os.path.join(src, "**", "mod.rs"), recursive=True):
        rel = os.path.relpath(os.path.dirname(path), src)
        module = rel.split(os.sep)
        text = strip_comments(open(path).read())
        for m in re.finditer(r"pub struct (\w+) \{(.*?)\n\}", text, re.S):
            name, body = m.group(1), m.group(2).strip() + "\n"
            full = ".".join(["k8s.io"] + module + [name])
            fields = []
            for f in FIELD.finditer(body):
                attr, fname, ty = f.group("attr"), f.group("name"), " ".join(f.group("ty").split())
                tag = int(re.search(r'tag\s*=\s*"(\d+)"', attr).group(1))
                if attr.startswith("btree_map") or attr.startswith("map"):
                    key, value = re.search(r'map\s*=\s*"(\w+),\s*(\w+)"', attr).groups()
                    card, kind = "map", value
                    target = message_type(module, ty.split(",", 1)[1]) if value == "message" else None
                else:
                    kind = attr.split(",")[0].split("=")[0].strip()
                    card = "rep" if "repeated" in attr else "opt"
                    target = message_type(module, ty) if kind == "message" else None
                fields.append((tag, fname, card, kind, target))
            messages[full] = fields
    return messages


def parse_openapi(root):
    """message full name -> {normalized name: (json name, required)}"""
    out = {}
    for module, text in sources(root):
        m = re.search(r"pub struct (\w+) \{(.*?)\n\}", text, re.S)
        if not m:
            continue
        full = ".".join(["k8s.io"] + module + [m.group(1)])
        rust_fields = dict(re.findall(r"pub (\w+): ([^\n]*),", m.group(2)))
        names = {}
        for json_name, key in re.findall(r'"([^"]+)" => Field::Key_(\w+)', text):
            ty = rust_fields.get(key, "")
            names[json_name.lower().replace("_", "")] = (json_name, not ty.startswith("Option<"))
        out[full.lower()] = (full, names)
    return out


def main():
    root = registry_dir(K8S_PB)
    pb = parse_pb(root)
    openapi = parse_openapi(root)
    def openapi_fields_of(target):
        # Inline messages have no k8s-openapi type of their own but their fields are
        # the parent's; accept a message whose protobuf fields all have JSON names there.
        return {target} if target in pb else set()

    seen, order, queue = set(), [], list(ROOTS)
    while queue:
        name = queue.pop(0)
        if name in seen or name in SPECIAL:
            continue
        if name not in pb:
            sys.exit(f"message {name} not found in k8s-pb")
        seen.add(name)
        order.append(name)
        for (_, _, _, _, target) in pb[name]:
            if target:
                queue.append(target)
    print(f"# Generated by tools/gen_schema.py from {K8S_PB} (protobuf field numbers and kinds)")
    print(f"# and {K8S_OPENAPI} {OPENAPI_VERSION} (JSON names, required fields). Do not edit.")
    print("# message <full name>")
    print("#   <number|-> <json name> <opt|rep|map> <string|bool|int32|int64|bytes|double|message> [<message>] [required]")
    def proto_name(name):
        # prost renames messages (PodDNSConfig -> PodDnsConfig); k8s-openapi keeps the
        # Kubernetes name, which is also the protobuf one.
        return openapi.get(name.lower(), (name, {}))[0]

    def json_names_of(name):
        if name.lower() in openapi:
            return openapi[name.lower()][1]
        return json_names_of(inline_parent[name]) if name in inline_parent else {}

    inline_parent = {}
    for name in order:
        names = json_names_of(name)
        for (_, fname, card, kind, target) in pb[name]:
            if kind == "message" and fname.replace("_", "").lower() not in names:
                inline_parent[target] = name

    for name in order:
        json_names = json_names_of(name)
        extra = EXTRA_JSON_NAMES.get(name, {})
        if not json_names and not extra:
            sys.exit(f"no JSON names for {name}")
        print(f"message {proto_name(name)}")
        matched = set()
        for (tag, fname, card, kind, target) in sorted(pb[name]):
            key = fname.replace("_", "").lower()
            if fname in extra:
                json_name, required = extra[fname], False
            elif key in json_names:
                json_name, required = json_names[key]
                matched.add(key)
            elif kind == "message" and card == "opt" and target in openapi_fields_of(target):
                # An embedded Go struct (`json:",inline"`): its fields sit in this object.
                json_name, card, required = "-", "inline", False
            else:
                sys.exit(f"{name}.{fname}: no JSON name")
            parts = [str(tag), json_name, card, kind]
            if target:
                parts.append(proto_name(target))
            if required:
                parts.append("required")
            print("  " + " ".join(parts))
        inlined = set()
        for (tag, fname, card, kind, target) in pb[name]:
            if fname.replace("_", "").lower() not in json_names and kind == "message" and target in pb:
                for (_, inner, _, _, _) in pb[target]:
                    inlined.add(inner.replace("_", "").lower())
        for key, (json_name, required) in sorted(json_names.items()):
            # An inline message borrows its parent's names: the rest are the parent's.
            if key not in matched and key not in inlined and name not in inline_parent:
                print(f"  - {json_name} json" + (" required" if required else ""))


if __name__ == "__main__":
    main()
