//! The differences between the fake and the real server that the differential test finds
//! today: what differs, and where in the fake (`informer-testing/src/apiserver/`) it comes
//! from. Each must still differ (the test fails otherwise, so that a fix in the fake removes
//! its entry). Entries are matched in order: the step-specific ones come before the ones for
//! every step (`*`).

/// One known difference: every difference at `path` (a JSON pointer into the normalised
/// answer: `/status`, `/contentType`, `/warnings`, `/body/...`, `/events/...`; `*` matches one
/// segment) or under it, in `step` (`*`: in every step).
pub struct Known {
    pub step: &'static str,
    pub path: &'static str,
    /// What differs (real, then fake).
    pub what: &'static str,
    /// Where in the fake the difference comes from.
    pub fake: &'static str,
}

impl Known {
    pub fn applies_to(&self, step: &str) -> bool {
        self.step == "*" || self.step == step
    }
}

/// The Status of a refused request on one side, the object on the other: the whole answer
/// differs.
const WHOLE: &str = "/";

pub const KNOWN: &[Known] = &[
    // The harness.
    Known {
        step: "crd: get",
        path: "/body/metadata/resourceVersion",
        what: "after the CRD's Established status, the fake writes the Local APIService of the CRD's new group version (before the create returns), as kube-apiserver's crd-autoregistration controller does (a moment later); the standalone server has no aggregator. The step's revision is then the APIService's, and the CRD's own version reads as before it",
        fake: "crd/mod.rs reconcile -> apiservices.rs register (matches kube-apiserver: keep)",
    },
    Known {
        step: "crd: get",
        path: "/body/metadata/managedFields/0/manager",
        what: "the manager of the CRD controllers' status writes: real 'real-apiserver' (the standalone binary's user agent), fake 'kube-apiserver' (what kube-apiserver's own controllers write as). The harness's doing, not the fake's",
        fake: "crd/mod.rs MANAGER (matches kube-apiserver: keep)",
    },
    Known {
        step: "crd: get gadgets",
        path: "/body/metadata/managedFields/0/manager",
        what: "as crd: get (real-apiserver vs kube-apiserver)",
        fake: "crd/mod.rs MANAGER",
    },
    Known {
        step: "crd: delete gizmos",
        path: "/body/metadata/managedFields/0/manager",
        what: "as crd: get (real-apiserver vs kube-apiserver)",
        fake: "crd/mod.rs MANAGER",
    },
    Known {
        step: "crd: delete gadgets",
        path: "/body/metadata/managedFields/0/manager",
        what: "as crd: get (real-apiserver vs kube-apiserver)",
        fake: "crd/mod.rs MANAGER",
    },
    Known {
        step: "doodad: crd get",
        path: "/body/metadata/resourceVersion",
        what: "as crd: get: the fake writes the Local APIServices of the CRD's new group versions (example.com/v1beta1 and v1alpha1) after its Established status",
        fake: "crd/mod.rs reconcile -> apiservices.rs register (matches kube-apiserver: keep)",
    },
    Known {
        step: "doodad: crd get",
        path: "/body/metadata/managedFields/0/manager",
        what: "as crd: get (real-apiserver vs kube-apiserver)",
        fake: "crd/mod.rs MANAGER",
    },
    Known {
        step: "doodad: crd delete",
        path: "/body/metadata/managedFields/0/manager",
        what: "as crd: get (real-apiserver vs kube-apiserver)",
        fake: "crd/mod.rs MANAGER",
    },
    Known {
        step: "get: a gadget after its CRD went",
        path: WHOLE,
        what: "both 404 once the type is no longer served; real: text/plain '404 page not found' (the standalone server's empty delegate, as in get: unknown resource in a served group); fake: the Status kube-apiserver's notfoundhandler answers",
        fake: "server.rs route (the type left the registry) -> ApiError::unknown_path (matches kube-apiserver: keep)",
    },
    // YAML.
    Known {
        step: "yaml: get as YAML",
        path: "/body/text",
        what: "the text of a YAML answer: the real server writes it with go-yaml v2 (sigs.k8s.io/yaml), which leaves keys such as `f:metadata` and `.` plain and writes a string that cannot be plain single-quoted, folded at 80 columns; the fake's serde-saphyr quotes such keys and writes long strings double-quoted on one line. The documents read the same: `/body/parsed` matches",
        fake: "codec.rs encode, Output::Yaml (serde_saphyr::to_string); the fake differs: an emitter with go-yaml's quoting and folding would remove it",
    },
    Known {
        step: "yaml: list as YAML",
        path: "/body/text",
        what: "as yaml: get as YAML",
        fake: "codec.rs encode, Output::Yaml",
    },
    Known {
        step: "yaml: watch with Accept YAML",
        path: "/body/text",
        what: "the 406 Status, in YAML: its message single-quoted and folded (real), double-quoted on one line (fake), as in yaml: get as YAML",
        fake: "codec.rs encode, Output::Yaml",
    },
    Known {
        step: "yaml: malformed YAML",
        path: "/body/message",
        what: "both refuse the body with a 400 BadRequest; the message quotes the YAML parser's error: real 'the object provided is unrecognized (must be of type Widget): yaml: line 1: did not find expected ...' (go-yaml's words and a hex dump of the body), fake 'the request body is not valid YAML: ...' (serde-saphyr's)",
        fake: "codec.rs decode of a YAML body; the fake differs: go-yaml's error texts are not reproduced",
    },
    // Status objects of errors.
    Known {
        step: "get: unknown resource in a served group",
        path: WHOLE,
        what: "real: 404 text/plain '404 page not found'; fake: 404 application/json Status NotFound 'the server could not find the requested resource'. The harness's doing, not the fake's: the standalone server's delegation chain ends in genericapiserver.NewEmptyDelegate (main.go), while kube-apiserver's ends in notfoundhandler, which answers the fake's Status",
        fake: "server.rs handle_non_resource Route::NotFound -> ApiError::unknown_path (matches kube-apiserver: keep)",
    },
];
