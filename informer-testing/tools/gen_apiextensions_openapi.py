#!/usr/bin/env python3
"""Generates informer-testing/src/apiserver/openapi/apiextensions.json: the OpenAPI v3
component schemas of the apiextensions.k8s.io/v1 types (CustomResourceDefinition and what it
holds), as kube-apiserver's document for that group version gives them (what `kubectl explain
crd` reads). The server's schema table has no messages for these types.

The data comes from k8s-openapi (Apache-2.0, the server's Kubernetes version): each type's
`JsonSchema` implementation is its upstream OpenAPI definition, written as a `json_schema!`
block whose references to other types are Rust expressions; they become `allOf` references
into `#/components/schemas/`, with the field's description beside them, as kube-openapi writes
them. `metadata` is not required (k8s-openapi keeps it outside `Option`; the API does not).

Usage: tools/gen_apiextensions_openapi.py [REGISTRY_SRC_DIR] > src/apiserver/openapi/apiextensions.json
"""

import json
import re

from k8s_openapi import K8S_OPENAPI, OPENAPI_VERSION, registry_dir, sources

MODULE = ["apiextensions_apiserver", "pkg", "apis", "apiextensions", "v1"]

# `crate::a::b::C` -> the component name (`io.k8s.a.b.C`, `apiextensions_apiserver` written
# as Kubernetes writes it).
def component(rust_path):
    parts = rust_path.split("::")[1:]
    parts = ["apiextensions-apiserver" if p == "apiextensions_apiserver" else p for p in parts]
    return "io.k8s." + ".".join(parts)


def reference(rust_path, description=None):
    out = {"allOf": [{"$ref": f"#/components/schemas/{component(rust_path)}"}]}
    if description is not None:
        out["description"] = description
    return json.dumps(out)


STRING = r'"((?:[^"\\]|\\.)*)"'
DESCRIBED = re.compile(
    r"\(\{\s*let mut schema_obj = __gen\.subschema_for::<([\w:]+)>\(\);\s*"
    r'schema_obj\.ensure_object\(\)\.insert\("description"\.into\(\), ' + STRING + r"\.into\(\)\);\s*"
    r"schema_obj\s*\}\)",
    re.S,
)
PLAIN = re.compile(r"\(?__gen\.subschema_for::<([\w:]+)>\(\)\)?")


def to_json(block):
    text = DESCRIBED.sub(lambda m: reference(m.group(1), json.loads('"' + m.group(2) + '"')), block)
    text = PLAIN.sub(lambda m: reference(m.group(1)), text)
    text = re.sub(r",(\s*[}\]])", r"\1", text)
    return json.loads(text)


def main():
    schemas = {}
    for module, text in sources(registry_dir()):
        if module != MODULE:
            continue
        name = re.search(r'fn schema_name\(\) -> std::borrow::Cow<\'static, str> \{\s*"([^"]+)"', text)
        block = re.search(r"json_schema!\((\{\n.*?\n        \})\)\n", text, re.S)
        if not name or not block:
            continue
        schema = to_json(block.group(1))
        required = [r for r in schema.get("required", []) if r != "metadata"]
        if "required" in schema:
            if required:
                schema["required"] = required
            else:
                del schema["required"]
        schemas[name.group(1)] = schema
    print(json.dumps(
        {"generated": f"by tools/gen_apiextensions_openapi.py from {K8S_OPENAPI} {OPENAPI_VERSION}; do not edit",
         "schemas": dict(sorted(schemas.items()))},
        indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
