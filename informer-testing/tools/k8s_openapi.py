"""What the generators share: where the crates they read are unpacked, and k8s-openapi's
source files for the server's Kubernetes version."""

import glob
import os
import sys

K8S_OPENAPI = "k8s-openapi-0.29.0"
OPENAPI_VERSION = "v1_35"

# The messages with a JSON form of their own (a string, a number or either), which the
# server does not expand into their protobuf fields.
JSON_FORM = [
    "k8s.io.apimachinery.pkg.apis.meta.v1.Time",
    "k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime",
    "k8s.io.apimachinery.pkg.apis.meta.v1.Duration",
    "k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1",
    "k8s.io.apimachinery.pkg.runtime.RawExtension",
    "k8s.io.apimachinery.pkg.util.intstr.IntOrString",
    "k8s.io.apimachinery.pkg.api.resource.Quantity",
]


def registry_dir(crate=K8S_OPENAPI):
    """The cargo registry's source directory holding `crate` (or the first argument)."""
    if len(sys.argv) > 1:
        return sys.argv[1]
    home = os.path.expanduser("~/.cargo/registry/src")
    for d in sorted(glob.glob(os.path.join(home, "*"))):
        if os.path.isdir(os.path.join(d, crate)):
            return d
    sys.exit(f"{crate} not found in the cargo registry")


def sources(root):
    """(module path parts, file text) of each k8s-openapi source file of the version."""
    src = os.path.join(root, K8S_OPENAPI, "src", OPENAPI_VERSION)
    for path in glob.glob(os.path.join(src, "**", "*.rs"), recursive=True):
        module = os.path.relpath(os.path.dirname(path), src).split(os.sep)
        yield module, open(path).read()
