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
    // CRDs and discovery.
    Known {
        step: "crd: create",
        path: WHOLE,
        what: "real: 201 with the CRD; fake: 404 (it serves no apiextensions.k8s.io; types are registered with TestApiServerBuilder::custom_resource)",
        fake: "server.rs route / resource.rs Registry::builtin (no customresourcedefinitions resource)",
    },
    Known {
        step: "crd: get",
        path: WHOLE,
        what: "real: 200 with the CRD and its NamesAccepted/Established conditions; fake: 404",
        fake: "server.rs route / resource.rs Registry::builtin",
    },
    Known {
        step: "list: empty",
        path: "/body/metadata/resourceVersion",
        what: "real: the list's revision is after the CRD's writes (creation, status conditions); fake: before any write (its CRD POST wrote nothing)",
        fake: "consequence of the CRD 404 above",
    },
    Known {
        step: "discovery: /apis/example.com/v1",
        path: "/body/resources/0/verbs",
        what: "real: custom resource verbs in the apiserver's order [delete deletecollection get list patch create update watch]; fake: sorted [create delete ...]",
        fake: "discovery.rs resource_docs",
    },
    Known {
        step: "discovery: /apis/example.com/v1",
        path: "/body/resources/0/storageVersionHash",
        what: "real: storageVersionHash (\"gIwvi5rymmg=\" for widgets.example.com/v1); fake: absent",
        fake: "discovery.rs resource_docs",
    },
    Known {
        step: "discovery: aggregated /apis, the example.com group",
        path: WHOLE,
        what: "real: Accept ...as=APIGroupDiscoveryList gets apidiscovery.k8s.io/v2 APIGroupDiscoveryList (content type with g=apidiscovery.k8s.io;v=v2); fake: ignores the Accept parameters and answers the legacy APIGroupList as application/json",
        fake: "server.rs handle_non_resource Route::Groups -> discovery.rs group_list (no aggregated discovery)",
    },
    // Status objects of errors.
    Known {
        step: "create: w1 again (already exists)",
        path: "/body",
        what: "real: message 'widgets.example.com \"w1\" already exists', details.group example.com; fake: 'widgets \"w1\" already exists', no details.group",
        fake: "status.rs ApiError::already_exists, called with resource.plural from storage.rs Store::create",
    },
    Known {
        step: "get: missing (not found)",
        path: "/body",
        what: "real: message 'widgets.example.com \"nope\" not found', details.group example.com; fake: 'widgets \"nope\" not found', no details.group",
        fake: "status.rs ApiError::not_found, called with resource.plural from storage.rs Store::get",
    },
    Known {
        step: "patch: missing object (not found)",
        path: "/body",
        what: "as get: missing (not found)",
        fake: "status.rs ApiError::not_found via storage.rs Store::get",
    },
    Known {
        step: "get: w3 is gone",
        path: "/body",
        what: "as get: missing (not found)",
        fake: "status.rs ApiError::not_found via storage.rs Store::get",
    },
    Known {
        step: "delete: missing (not found)",
        path: "/body",
        what: "as get: missing (not found)",
        fake: "status.rs ApiError::not_found via storage.rs Store::get",
    },
    Known {
        step: "get: invalid namespace name",
        path: "/body",
        what: "both 404 (real does not validate the namespace in the path either); the not-found message and details.group differ as in get: missing",
        fake: "status.rs ApiError::not_found via storage.rs Store::get",
    },
    Known {
        step: "update: w1 at a stale version",
        path: "/body/details",
        what: "real: details {group: example.com, kind: widgets}; fake: {kind: widgets.example.com} (message equal)",
        fake: "storage.rs prepare_update -> status.rs ApiError::conflict(plural+group)",
    },
    Known {
        step: "delete: w1 with a wrong uid precondition",
        path: "/body",
        what: "real: 'Operation cannot be fulfilled on Widget.example.com \"w1\": the UID in the precondition (0000...) does not match the UID in record (<uid>). The object might have been deleted and then recreated', details {group, kind: Widget}; fake: 'Operation cannot be fulfilled on widgets \"w1\": Precondition failed: UID in precondition: ..., UID in object meta: ...', details {kind: widgets}",
        fake: "storage/delete.rs check_preconditions (uid precondition)",
    },
    // Updates and patches.
    Known {
        step: "update: probe without a resourceVersion",
        path: WHOLE,
        what: "real: 422 Invalid 'widgets.example.com \"probe\" is invalid: metadata.resourceVersion: Invalid value: 0: must be specified for an update' (custom resources do not allow unconditional updates); fake: 200, updated",
        fake: "storage.rs prepare_update (a missing resourceVersion is accepted)",
    },
    Known {
        step: "patch: json test operation fails",
        path: "/body",
        what: "both 422 Invalid; real: message 'the server rejected our request due to an error in our request', details {}; fake: 'Widget \"w2\" is invalid: operation '/0' failed at path '/spec/size': value did not match', details {kind, name}",
        fake: "storage.rs Store::patch (PatchKind::Json error mapped by ApiError::invalid)",
    },
    Known {
        step: "patch: strategic merge on a custom resource",
        path: "/body/message",
        what: "both 415; real: 'the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml'; fake: 'strategic merge patch is not supported for custom resources'",
        fake: "storage.rs Store::patch (PatchKind::Strategic && resource.custom)",
    },
    // Server-side apply.
    Known {
        step: "apply: manager b conflicts on spec.color",
        path: WHOLE,
        what: "real: 409 Conflict 'Apply failed with 1 conflict: conflict with \"a\": .spec.color', details.causes [{reason FieldManagerConflict, field .spec.color}]; fake: 200, applied (no field ownership)",
        fake: "storage.rs Store::patch PatchKind::Apply (an approximation: merge, no managed fields, no conflicts)",
    },
    Known {
        step: "apply: manager b forces spec.color",
        path: "/body/metadata/resourceVersion",
        what: "real: a new revision; fake: unchanged (the conflicting apply already wrote the same object)",
        fake: "consequence of the missing conflict above",
    },
    Known {
        step: "apply: without a fieldManager",
        path: "/body/details",
        what: "both 422 with the same message; real: details {group: meta.k8s.io, kind: PatchOptions, causes [{reason FieldValueRequired, field fieldManager, message 'Required value: is required for apply patch'}]}; fake: details {kind: PatchOptions.meta.k8s.io, name: \"\"}, no causes",
        fake: "server.rs handle_resource Verb::Patch (fieldManager check) -> status.rs ApiError::invalid",
    },
    // Finalizers and deletion.
    Known {
        step: "finalizers: no new ones while deleting",
        path: WHOLE,
        what: "real: 422 Invalid 'Widget.example.com \"w3\" is invalid: metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{\"example.com/more\"}' (the cause listed twice); fake: 200, finalizer added",
        fake: "storage.rs prepare_update / Store::write (no check of finalizers added during deletion)",
    },
    Known {
        step: "finalizers: removing the last one deletes w3",
        path: "/body/metadata/resourceVersion",
        what: "real: answers with the object's last stored resourceVersion (the update that deletes is never stored); fake: the revision of the deletion",
        fake: "storage.rs Store::write (deleting branch commits the new object and returns it)",
    },
    Known {
        step: "delete: w2",
        path: "/body",
        what: "real: deleting a custom resource answers 200 with a Status {status: Success, details {name, group, kind: widgets, uid}}; fake: 200 with the deleted object",
        fake: "resource.rs ResourceType::from_custom (returns_deleted_object: true) / server.rs handle_resource Verb::Delete",
    },
    // Lists.
    Known {
        step: "list: as a Table",
        path: "/body/columnDefinitions",
        what: "real: columns Name (long description) and the CRD's printer column Size (integer, .spec.size); fake: Name (short description) and Age",
        fake: "table.rs columns (no additionalPrinterColumns: CustomResourceSpec has none)",
    },
    Known {
        step: "list: as a Table",
        path: "/body/rows",
        what: "real: cells [name, spec.size]; fake: [name, age]",
        fake: "table.rs cells",
    },
    Known {
        step: "page: malformed continue token",
        path: "/body/message",
        what: "both 400; real: 'invalid continue token: continue key is not valid: invalid character 'o' in literal null (expecting 'u')'; fake: 'continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)'",
        fake: "storage.rs ContinueToken::decode",
    },
    Known {
        step: "page: limit with resourceVersion=0",
        path: "/body/items",
        what: "real: resourceVersion=0 is served whole from the watch cache, limit ignored (all 5 items); fake: 2 items",
        fake: "server.rs read_version (ReadVersion::Any) + storage.rs Store::list (pages RV=0 reads)",
    },
    Known {
        step: "page: limit with resourceVersion=0",
        path: "/body/metadata/continue",
        what: "real: \"\" (no more pages); fake: a continue token",
        fake: "server.rs list / storage.rs Store::list",
    },
    Known {
        step: "list: resourceVersionMatch without resourceVersion",
        path: "/body/details",
        what: "both 422 with the same message; real: details {group: meta.k8s.io, kind: ListOptions, causes [{reason FieldValueForbidden, field resourceVersionMatch}]}; fake: details {kind: ListOptions.meta.k8s.io, name: \"\"}, no causes",
        fake: "server.rs read_version -> status.rs ApiError::invalid",
    },
    Known {
        step: "list: malformed resourceVersion",
        path: "/body/message",
        what: "both 400 BadRequest; real: 'invalid resource version: resourceVersion: Invalid value: \"abc\": strconv.ParseUint: parsing \"abc\": invalid syntax'; fake: 'invalid resource version \"abc\": not a decimal integer'",
        fake: "server.rs parse_revision",
    },
    Known {
        step: "list: too large resourceVersion",
        path: "/body/message",
        what: "both 504 Timeout after about 3 s; real: 'Timeout: Too large resource version: N, current: M'; fake: without the 'Timeout: ' prefix",
        fake: "status.rs ApiError::too_large_resource_version",
    },
    Known {
        step: "deletecollection: page=yes",
        path: "/body/items",
        what: "real: the deleted items as listed before deletion (their last resourceVersions); fake: each item with the revision of its deletion",
        fake: "server.rs handle_resource Verb::DeleteCollection (collects Store::delete's results)",
    },
    Known {
        step: "deletecollection: page=yes",
        path: "/body/metadata/resourceVersion",
        what: "real: the revision of the list taken before deleting; fake: the revision after the last deletion",
        fake: "server.rs handle_resource Verb::DeleteCollection (store.revision() after deleting)",
    },
    // Watches.
    Known {
        step: "watch: from resourceVersion 1 (older than the server keeps)",
        path: WHOLE,
        what: "real: 200 with one ERROR event, Status 410 Expired 'too old resource version: 1 (N)' (the watch cache starts when the CRD is served); fake: replays its whole history from revision 1 (as the real server does with --watch-cache=false before etcd compacts)",
        fake: "storage.rs history (history_limit 10 000) and Store watch-from-revision; no watch-cache window",
    },
    Known {
        step: "watch: streaming list",
        path: "/events/5/object/metadata/creationTimestamp",
        what: "the initial-events-end BOOKMARK object; real: no creationTimestamp; fake: creationTimestamp: null",
        fake: "watch.rs bookmark object (metadata with \"creationTimestamp\": null)",
    },
    Known {
        step: "watch: streaming list without resourceVersionMatch",
        path: "/body",
        what: "both 422; real: 'ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan', details {group meta.k8s.io, kind ListOptions, causes [{FieldValueForbidden, resourceVersionMatch}]}; fake: '... sendInitialEvents: Forbidden: sendInitialEvents is forbidden for watch unless resourceVersionMatch is set to NotOlderThan', details {kind: ListOptions.meta.k8s.io, name: \"\"}",
        fake: "server.rs watch (sendInitialEvents checks)",
    },
    Known {
        step: "watch: malformed resourceVersion",
        path: WHOLE,
        what: "real: 500 (Status without reason) 'resourceVersion: Invalid value: \"abc\": strconv.ParseUint: parsing \"abc\": invalid syntax'; fake: 400 BadRequest 'invalid resource version \"abc\": not a decimal integer'",
        fake: "server.rs watch -> parse_revision",
    },
    // Validation.
    Known {
        step: "validation: Strict refuses an unknown field",
        path: WHOLE,
        what: "real: 400 BadRequest 'Widget in version \"v1\" cannot be handled as a Widget: strict decoding error: unknown field \"spec.bogus\"'; fake: 201, stored with spec.bogus (no schema, no fieldValidation)",
        fake: "server.rs handle_resource Verb::Create (fieldValidation ignored) / resource.rs CustomResourceSpec (no schema)",
    },
    Known {
        step: "validation: Warn accepts an unknown field with a warning",
        path: "/warnings",
        what: "real: Warning header '299 - \"unknown field \\\"spec.bogus\\\"\"'; fake: none",
        fake: "server.rs handle_resource Verb::Create (fieldValidation ignored)",
    },
    Known {
        step: "validation: Warn accepts an unknown field with a warning",
        path: "/body/spec/bogus",
        what: "real: the unknown field is pruned (structural schema); fake: stored",
        fake: "storage.rs Store::create (no schema pruning)",
    },
    Known {
        step: "validation: an unknown field by default",
        path: "/warnings",
        what: "real: without fieldValidation the default is Warn: the same 299 warning; fake: none",
        fake: "server.rs handle_resource Verb::Create",
    },
    Known {
        step: "validation: an unknown field by default",
        path: "/body/spec/bogus",
        what: "real: pruned; fake: stored",
        fake: "storage.rs Store::create (no schema pruning)",
    },
    Known {
        step: "validation: Strict refuses a duplicate field",
        path: WHOLE,
        what: "real: 400 BadRequest '... strict decoding error: duplicate field \"spec.size\"'; fake: 201, the last value wins",
        fake: "server.rs parse_json (serde_json keeps the last duplicate) / no fieldValidation",
    },
    Known {
        step: "validation: a field of the wrong type",
        path: WHOLE,
        what: "real: 422 Invalid 'Widget.example.com \"v-type\" is invalid: spec.size: Invalid value: \"string\": spec.size in body must be of type integer: \"string\"', causes [{FieldValueTypeInvalid, spec.size}]; fake: 201 (no schema)",
        fake: "resource.rs CustomResourceSpec (no openAPIV3Schema) / storage.rs Store::create",
    },
    Known {
        step: "list: malformed label selector",
        path: "/body/message",
        what: "both 400 BadRequest; real: Go's selector parser wording 'unable to parse requirement: found '', expected: ',' or ')''; fake: the shared parser's wording '... invalid label selector \"app in (a\" at byte 9: expected ',' or ')' in a value set'",
        fake: "selector.rs (informer_core::selector errors worded in the server's message)",
    },
    Known {
        step: "validation: wrong kind in the body",
        path: WHOLE,
        what: "real: 422 Invalid 'Gadget.example.com \"v-kind\" is invalid: kind: Invalid value: \"Gadget\": must be Widget', causes [{FieldValueInvalid, kind}]; fake: 400 BadRequest 'the kind of the object (Gadget) does not match the expected kind (Widget)'",
        fake: "storage.rs check_body",
    },
    Known {
        step: "validation: malformed JSON",
        path: "/body/message",
        what: "both 400; real: 'the object provided is unrecognized (must be of type Widget): couldn't get version/kind; json parse error: invalid character 'n' looking for beginning of object key string ({not json)'; fake: 'the request body is not valid JSON: key must be a string at line 1 column 2'",
        fake: "server.rs parse_json",
    },
    Known {
        step: "validation: unknown fieldValidation value",
        path: WHOLE,
        what: "real: 422 Invalid 'CreateOptions.meta.k8s.io \"\" is invalid: fieldValidation: Unsupported value: \"Loud\": supported values: \"\", \"Ignore\", \"Strict\", \"Warn\"'; fake: 201 (the parameter is ignored)",
        fake: "server.rs handle_resource Verb::Create (fieldValidation not read)",
    },
    Known {
        step: "get: unknown resource in a served group",
        path: WHOLE,
        what: "real: 404 text/plain '404 page not found'; fake: 404 application/json Status NotFound 'the server could not find the requested resource'. The harness's doing, not the fake's: the standalone server's delegation chain ends in genericapiserver.NewEmptyDelegate (main.go), while kube-apiserver's ends in notfoundhandler, which answers the fake's Status",
        fake: "server.rs handle_non_resource Route::NotFound -> ApiError::unknown_path (matches kube-apiserver: keep)",
    },
    // In every step.
    Known {
        step: "*",
        path: "/body/metadata/managedFields",
        what: "real: managedFields on every write (manager \"unknown\", operation Update; Apply entries per field manager); fake: none",
        fake: "storage.rs (no field ownership tracking)",
    },
    Known {
        step: "*",
        path: "/body/items/*/metadata/managedFields",
        what: "as /body/metadata/managedFields, in lists",
        fake: "storage.rs (no field ownership tracking)",
    },
    Known {
        step: "*",
        path: "/events/*/object/metadata/managedFields",
        what: "as /body/metadata/managedFields, in watch events",
        fake: "storage.rs (no field ownership tracking)",
    },
    Known {
        step: "*",
        path: "/body/metadata/continue",
        what: "real: lists of custom resources carry metadata.continue \"\" when there is no next page; fake: omits it",
        fake: "server.rs list / handle_resource Verb::DeleteCollection",
    },
];
