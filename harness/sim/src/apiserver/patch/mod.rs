//! Patch and apply semantics of the Kubernetes API server, as pure functions
//! over `serde_json::Value`.
//!
//! * `application/merge-patch+json`: [`merge_patch`] (RFC 7386).
//! * `application/json-patch+json`: [`json_patch()`] (RFC 6902), with the
//!   quirks and error messages of the library the apiserver uses.
//! * `application/strategic-merge-patch+json`:
//!   [`strategic::strategic_merge_patch`].
//! * `application/apply-patch+yaml`: [`apply::server_side_apply`], and
//!   [`apply::record_update`] for the `metadata.managedFields` bookkeeping of
//!   every other write, both by structured-merge-diff's mechanism (`smd`).

pub mod apply;
mod jsonpatch;
pub(crate) mod schema;
pub(crate) mod smd;
pub mod strategic;

use serde_json::Value;
use std::fmt;

#[derive(Debug, Clone, PartialEq)]
pub enum PatchError {
    /// A strategic merge patch the library cannot apply: the apiserver passes the error on as
    /// is, a 500 without reason carrying this message.
    Internal(String),
    /// The patch does not decode (HTTP 400, reason BadRequest, the message as given).
    BadRequest(String),
    /// A JSON patch that decodes but does not apply (or a strategic merge patch with a list of
    /// lists): the apiserver answers its generic 422
    /// (`NewGenericServerResponse`: "the server rejected our request due to an error in our
    /// request", empty details) and drops this message, kept here for logs and tests.
    Rejected(String),
}

impl fmt::Display for PatchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PatchError::Internal(msg) | PatchError::BadRequest(msg) | PatchError::Rejected(msg) => {
                f.write_str(msg)
            }
        }
    }
}

impl std::error::Error for PatchError {}

/// RFC 7386 JSON merge patch.
pub fn merge_patch(original: &Value, patch: &Value) -> Value {
    let mut doc = original.clone();
    json_patch::merge(&mut doc, patch);
    doc
}

/// RFC 6902 JSON patch.
///
/// Behaves like the apiserver (which uses evanphx/json-patch v4), including
/// its quirks: `replace` of a missing object member adds it, negative array
/// indices count from the end, `copy` of a missing member copies `null`, and
/// a `test` of a missing member against `null` succeeds. Errors carry the
/// same text the library returns (e.g. `testing value /spec/replicas
/// failed: test failed`). The apiserver answers 400 for a patch that is not
/// a list of operations ([`PatchError::BadRequest`], with the library's
/// message) and its generic 422 for one that fails to apply
/// ([`PatchError::Rejected`]: the message is not shown to clients).
pub fn json_patch(original: &Value, patch: &Value) -> Result<Value, PatchError> {
    jsonpatch::apply(original, patch)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merge_patch_sets_replaces_and_deletes() {
        let original = json!({
            "metadata": {"name": "a", "labels": {"x": "1", "y": "2"}},
            "spec": {"list": [1, 2, 3], "keep": true}
        });
        let patch = json!({
            "metadata": {"labels": {"x": null, "z": "3"}},
            "spec": {"list": [9]}
        });
        assert_eq!(
            merge_patch(&original, &patch),
            json!({
                "metadata": {"name": "a", "labels": {"y": "2", "z": "3"}},
                "spec": {"list": [9], "keep": true}
            })
        );
    }

    #[test]
    fn merge_patch_non_object_replaces_document() {
        assert_eq!(merge_patch(&json!({"a": 1}), &json!([1])), json!([1]));
        assert_eq!(merge_patch(&json!({"a": 1}), &json!({})), json!({"a": 1}));
    }

    #[test]
    fn merge_patch_null_leaves_are_not_added() {
        assert_eq!(
            merge_patch(&json!({}), &json!({"a": {"b": null, "c": 1}})),
            json!({"a": {"c": 1}})
        );
    }

    /// Every entry point must return (not panic) on arbitrary shapes.
    #[test]
    fn no_panics_on_odd_inputs() {
        let values = [
            Value::Null,
            json!(1),
            json!("s"),
            json!([]),
            json!({}),
            json!([null, 1, "x", [1], {"a": 1}]),
            json!({"$patch": 5}),
            json!({"$patch": "delete"}),
            json!({"spec": {"$retainKeys": [1, "a"], "$setElementOrder/containers": [1, {"name": 2}, null]}}),
            json!({"spec": {"containers": [null, {"name": null}, {"$patch": "delete", "name": "a"}], "tolerations": {"a": 1}}}),
            json!({"metadata": {"finalizers": [{"a": 1}, 1], "$deleteFromPrimitiveList/finalizers": [1], "managedFields": [{"fieldsV1": {"k:{": {}, "v:": 1}}]}}),
            json!({"spec": {"containers": [{"name": "a", "ports": [{"containerPort": "x"}, {"protocol": "UDP"}]}]}}),
            json!({"status": {"conditions": [{"type": "A"}, {"type": "A"}], "podIPs": "x"}}),
            json!([{"op": "add", "path": "/-/x"}, {"op": "move", "from": "/a", "path": "/a/b"}]),
            json!([{"op": "copy", "from": "/spec", "path": "/spec/containers/-1"}, {"op": "remove", "path": "/spec/containers/-9"}]),
            json!([{"op": "test", "path": "/spec/containers/0/name"}, {"op": "replace", "path": "/spec/containers/99999999999999999999"}]),
        ];
        for (api_version, kind) in [
            ("v1", "Pod"),
            ("v1", "Service"),
            ("apps/v1", "Deployment"),
            ("v1", "Node"),
            ("x/v1", "Unknown"),
        ] {
            let t = apply::Target {
                group: "",
                api_version,
                kind,
                subresource: None,
                custom_with_status: false,
            };
            for a in &values {
                for b in &values {
                    let _ = merge_patch(a, b);
                    let _ = json_patch(a, b);
                    let _ = strategic::strategic_merge_patch(kind, a, b);
                    let _ = apply::server_side_apply(&t, Some(a), b, "m", false, "t");
                    let _ = apply::server_side_apply(&t, Some(a), b, "m", true, "t");
                    let _ = apply::server_side_apply(&t, None, b, "m", false, "t");
                    let mut new = b.clone();
                    apply::record_update(&t, Some(a), &mut new, "m", "t");
                }
            }
        }
    }

    #[test]
    fn json_patch_applies_operations_in_order() {
        let original = json!({"spec": {"replicas": 1, "list": ["a", "b"]}});
        let patch = json!([
            {"op": "test", "path": "/spec/replicas", "value": 1},
            {"op": "replace", "path": "/spec/replicas", "value": 3},
            {"op": "add", "path": "/spec/list/1", "value": "x"},
            {"op": "add", "path": "/spec/list/-", "value": "z"},
            {"op": "copy", "from": "/spec/replicas", "path": "/spec/copied"},
            {"op": "move", "from": "/spec/list/0", "path": "/spec/first"},
            {"op": "remove", "path": "/spec/list/0"}
        ]);
        assert_eq!(
            json_patch(&original, &patch).unwrap(),
            json!({"spec": {"replicas": 3, "list": ["b", "z"], "copied": 3, "first": "a"}})
        );
    }

    #[test]
    fn json_patch_error_messages_match_apiserver() {
        let original =
            json!({"metadata": {"name": "a", "labels": {"x": "1"}}, "spec": {"list": [1]}});
        let cases = [
            (json!([{"op": "test", "path": "/metadata/name", "value": "b"}]),
             "testing value /metadata/name failed: test failed"),
            (json!([{"op": "remove", "path": "/metadata/labels/y"}]),
             "error in remove for path: '/metadata/labels/y': Unable to remove nonexistent key: y: missing value"),
            (json!([{"op": "add", "path": "/spec/missing/x", "value": 1}]),
             "add operation does not apply: doc is missing path: \"/spec/missing/x\": missing value"),
            (json!([{"op": "remove", "path": "/nope/x"}]),
             "remove operation does not apply: doc is missing path: \"/nope/x\": missing value"),
            (json!([{"op": "replace", "path": "/nope/x", "value": 1}]),
             "replace operation does not apply: doc is missing path: /nope/x: missing value"),
            (json!([{"op": "replace", "path": "/spec/list/5", "value": 1}]),
             "replace operation does not apply: doc is missing key: /spec/list/5: missing value"),
            (json!([{"op": "add", "path": "/spec/list/7", "value": 1}]),
             "error in add for path: '/spec/list/7': Unable to access invalid index: 7: invalid index referenced"),
            (json!([{"op": "add", "path": "/spec/list/x", "value": 1}]),
             "error in add for path: '/spec/list/x': value was not a proper array index: 'x': strconv.Atoi: parsing \"x\": invalid syntax"),
            (json!([{"op": "move", "from": "/spec/nope", "path": "/spec/x"}]),
             "error in move for path: 'nope': Unable to remove nonexistent key: nope: missing value"),
            (json!([{"op": "copy", "from": "/a/b", "path": "/spec/x"}]),
             "copy operation does not apply: doc is missing from path: /a/b: missing value"),
            (json!([{"op": "bogus", "path": "/a"}]), "Unexpected kind: bogus"),
            (json!([{"path": "/a"}]), "Unexpected kind: unknown"),
            (json!([{"op": "add", "value": 1}]), "add operation failed to decode path: missing value"),
            (json!([{"op": "replace", "value": 1}]),
             "replace operation failed to decode path: operation missing path field: missing value"),
            (json!([{"op": "move", "path": "/a"}]),
             "move operation failed to decode from: operation, missing from field: missing value"),
            (json!({"op": "add"}), "json: cannot unmarshal object into Go value of type jsonpatch.Patch"),
            (json!(["x"]), "json: cannot unmarshal string into Go value of type jsonpatch.Operation"),
        ];
        for (patch, message) in cases {
            let want = if message.starts_with("json: cannot unmarshal") {
                PatchError::BadRequest(message.to_owned())
            } else {
                PatchError::Rejected(message.to_owned())
            };
            assert_eq!(json_patch(&original, &patch), Err(want), "patch {patch}");
        }
    }

    #[test]
    fn json_patch_quirks_of_the_apiserver_library() {
        let original = json!({"a": {"b": 1}, "list": [1, 2, 3]});
        // replace of a missing member behaves like add
        assert_eq!(
            json_patch(
                &original,
                &json!([{"op": "replace", "path": "/a/c", "value": 2}])
            )
            .unwrap(),
            json!({"a": {"b": 1, "c": 2}, "list": [1, 2, 3]})
        );
        // negative indices count from the end
        assert_eq!(
            json_patch(&original, &json!([{"op": "remove", "path": "/list/-1"}])).unwrap(),
            json!({"a": {"b": 1}, "list": [1, 2]})
        );
        // test of a missing member against null succeeds
        assert!(json_patch(
            &original,
            &json!([{"op": "test", "path": "/a/zz", "value": null}])
        )
        .is_ok());
        // escaped pointer segments
        let doc = json!({"metadata": {"labels": {"app.kubernetes.io/name": "x", "t~x": "y"}}});
        assert_eq!(
            json_patch(
                &doc,
                &json!([
                    {"op": "remove", "path": "/metadata/labels/app.kubernetes.io~1name"},
                    {"op": "remove", "path": "/metadata/labels/t~0x"}
                ])
            )
            .unwrap(),
            json!({"metadata": {"labels": {}}})
        );
        // a null patch is an empty patch
        assert_eq!(json_patch(&original, &Value::Null).unwrap(), original);
    }
}
