//! ObjectMeta and label rules: apimachinery's `pkg/api/validation/objectmeta.go` and
//! `generic.go`, and `pkg/apis/meta/v1/validation/validation.go` (labels, label selectors).

use super::access::{arr, get, int, map, s, string_map};
use super::content::{self, NameRule};
use super::field::{self, BadValue, ErrorList, Path};
use serde_json::{json, Value};

/// `TotalAnnotationSizeLimitB`: 256 KiB.
pub const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;
pub const IS_NEGATIVE_ERROR_MSG: &str = "must be greater than or equal to 0";
pub const FIELD_IMMUTABLE_ERROR_MSG: &str = "field is immutable";

/// `ValidateNonnegativeField`.
pub fn nonnegative(value: i64, path: &Path) -> ErrorList {
    if value < 0 {
        vec![field::invalid(
            path,
            BadValue::Int(value),
            IS_NEGATIVE_ERROR_MSG,
        )]
    } else {
        vec![]
    }
}

/// `ValidateNonnegativeField` of an optional integer at `at` under `v`.
pub fn nonnegative_at(v: &Value, at: &str, path: &Path) -> ErrorList {
    int(v, at).map(|n| nonnegative(n, path)).unwrap_or_default()
}

/// `ValidateImmutableField` (Semantic.DeepEqual: absent, null and empty are equal).
pub fn immutable(new: &Value, old: &Value, path: &Path, value: BadValue) -> ErrorList {
    if semantic_eq(new, old) {
        vec![]
    } else {
        vec![field::invalid(path, value, FIELD_IMMUTABLE_ERROR_MSG)]
    }
}

/// `apiequality.Semantic.DeepEqual` over decoded JSON: nil and empty slices and maps are
/// equal, and a member absent equals its zero value ("" / 0 / false / empty).
pub fn semantic_eq(a: &Value, b: &Value) -> bool {
    fn zero(v: &Value) -> bool {
        match v {
            Value::Null => true,
            Value::Array(a) => a.is_empty(),
            Value::Object(m) => m.is_empty(),
            _ => false,
        }
    }
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            x.iter().all(|(k, v)| {
                y.get(k)
                    .map(|w| semantic_eq(v, w))
                    .unwrap_or_else(|| zero(v))
            }) && y.iter().all(|(k, w)| x.contains_key(k) || zero(w))
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(v, w)| semantic_eq(v, w))
        }
        (x, y) if zero(x) && zero(y) => true,
        (x, y) => x == y,
    }
}

/// `ValidateLabelName`.
pub fn validate_label_name(name: &str, path: &Path) -> ErrorList {
    content::is_qualified_name(name)
        .into_iter()
        .map(|m| field::invalid(path, BadValue::str(name), &m))
        .collect()
}

/// `ValidateLabels` over the map at `at` of `v`.
pub fn validate_labels(v: &Value, at: &str, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    for (k, val) in string_map(v, at) {
        errs.extend(validate_label_name(k, path));
        for m in content::is_valid_label_value(val) {
            errs.push(field::invalid(path, BadValue::str(val), &m));
        }
    }
    errs
}

/// `ValidateAnnotations`: keys are qualified names (checked lower-cased), 256 KiB in all.
pub fn validate_annotations(v: &Value, at: &str, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let mut total = 0usize;
    for (k, val) in string_map(v, at) {
        for m in content::is_qualified_name(&k.to_lowercase()) {
            errs.push(field::invalid(path, BadValue::str(k), &m));
        }
        total += k.len() + val.len();
    }
    if total > TOTAL_ANNOTATION_SIZE_LIMIT {
        errs.push(field::too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT as i64));
    }
    errs
}

/// An OwnerReference as Go marshals `metav1.OwnerReference` (declaration order).
fn owner_ref_struct(r: &Value) -> Value {
    let mut m = serde_json::Map::new();
    for k in ["apiVersion", "kind", "name", "uid"] {
        m.insert(k.into(), json!(s(r, k)));
    }
    for k in ["controller", "blockOwnerDeletion"] {
        if let Some(b) = get(r, k) {
            m.insert(k.into(), b.clone());
        }
    }
    Value::Object(m)
}

/// `ValidateOwnerReferences`.
fn validate_owner_references(md: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let refs = arr(md, "ownerReferences");
    let mut first_controller = String::new();
    for r in refs {
        let api_version = s(r, "apiVersion");
        let version = api_version.rsplit('/').next().unwrap_or("");
        let group = api_version.rsplit_once('/').map(|(g, _)| g).unwrap_or("");
        if version.is_empty() {
            errs.push(field::invalid(
                &path.child("apiVersion"),
                BadValue::str(api_version),
                "version must not be empty",
            ));
        }
        if s(r, "kind").is_empty() {
            errs.push(field::invalid(
                &path.child("kind"),
                BadValue::str(""),
                "must not be empty",
            ));
        }
        if s(r, "name").is_empty() {
            errs.push(field::invalid(
                &path.child("name"),
                BadValue::str(""),
                "must not be empty",
            ));
        }
        if s(r, "uid").is_empty() {
            errs.push(field::invalid(
                &path.child("uid"),
                BadValue::named(""),
                "must not be empty",
            ));
        }
        if group.is_empty() && version == "v1" && s(r, "kind") == "Event" {
            errs.push(field::invalid(
                path,
                BadValue::Struct(owner_ref_struct(r)),
                "/v1, Kind=Event is disallowed from being an owner",
            ));
        }
        if get(r, "controller").and_then(Value::as_bool) == Some(true) {
            let name = format!("{}/{}", s(r, "kind"), s(r, "name"));
            if !first_controller.is_empty() {
                errs.push(field::invalid(
                    path,
                    BadValue::Struct(Value::Array(refs.iter().map(owner_ref_struct).collect())),
                    &format!("Only one reference can have Controller set to true. Found \"true\" in references for {} and {}", first_controller, name),
                ));
            } else {
                first_controller = name;
            }
        }
    }
    errs
}

/// `ValidateFinalizers`.
fn validate_finalizers(md: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let fins: Vec<&str> = arr(md, "finalizers")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for f in &fins {
        for m in content::is_qualified_name(f) {
            errs.push(field::invalid(path, BadValue::str(f), &m));
        }
    }
    if fins.contains(&"orphan") && fins.contains(&"foregroundDeletion") {
        errs.push(field::invalid(
            path,
            BadValue::Json(json!(fins)),
            "finalizer orphan and foregroundDeletion cannot be both set",
        ));
    }
    errs
}

/// `ValidateObjectMeta(meta, requiresNamespace, nameFn, "metadata")` of the object `obj`.
pub fn validate_object_meta(obj: &Value, namespaced: bool, name_rule: NameRule) -> ErrorList {
    let path = Path::new("metadata");
    let md = get(obj, "metadata").cloned().unwrap_or_else(|| json!({}));
    let mut errs = ErrorList::new();
    let generate = s(&md, "generateName");
    if !generate.is_empty() {
        for m in name_rule.check(generate, true) {
            errs.push(field::invalid(
                &path.child("generateName"),
                BadValue::str(generate),
                &m,
            ));
        }
    }
    let name = s(&md, "name");
    if name.is_empty() {
        errs.push(field::required(
            &path.child("name"),
            "name or generateName is required",
        ));
    } else {
        for m in name_rule.check(name, false) {
            errs.push(field::invalid(&path.child("name"), BadValue::str(name), &m));
        }
    }
    errs.extend(common(&md, namespaced, &path));
    errs
}

/// `validateObjectMetaAccessorWithOptsCommon`.
fn common(md: &Value, namespaced: bool, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let ns = s(md, "namespace");
    if namespaced {
        if ns.is_empty() {
            errs.push(field::required(&path.child("namespace"), ""));
        } else {
            for m in NameRule::Label.check(ns, false) {
                errs.push(field::invalid(
                    &path.child("namespace"),
                    BadValue::str(ns),
                    &m,
                ));
            }
        }
    } else if !ns.is_empty() {
        errs.push(field::forbidden(
            &path.child("namespace"),
            "not allowed on this type",
        ));
    }
    errs.extend(nonnegative_at(md, "generation", &path.child("generation")));
    errs.extend(validate_labels(md, "labels", &path.child("labels")));
    errs.extend(validate_annotations(
        md,
        "annotations",
        &path.child("annotations"),
    ));
    errs.extend(validate_owner_references(
        md,
        &path.child("ownerReferences"),
    ));
    errs.extend(validate_finalizers(md, &path.child("finalizers")));
    errs
}

/// `ValidateObjectMetaUpdate(new, old, "metadata")`, after BeforeUpdate carried the server's
/// fields (uid, creationTimestamp, deletion state) over from the stored object.
pub fn validate_object_meta_update(new: &Value, old: &Value) -> ErrorList {
    let path = Path::new("metadata");
    let empty = json!({});
    let nmd = get(new, "metadata").unwrap_or(&empty);
    let omd = get(old, "metadata").unwrap_or(&empty);
    let mut errs = ErrorList::new();
    if get(omd, "deletionTimestamp").is_some() {
        let old_f: Vec<&str> = arr(omd, "finalizers")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        let mut extra: Vec<&str> = arr(nmd, "finalizers")
            .iter()
            .filter_map(Value::as_str)
            .filter(|f| !old_f.contains(f))
            .collect();
        extra.sort();
        extra.dedup();
        if !extra.is_empty() {
            errs.push(field::forbidden(
                &path.child("finalizers"),
                &format!(
                    "no new finalizers can be added if the object is being deleted, found new finalizers []string{{{}}}",
                    extra
                        .iter()
                        .map(|f| field::go_quote(f))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
    }
    let (ng, og) = (int(nmd, "generation"), int(omd, "generation"));
    if let (Some(n), Some(o)) = (ng, og) {
        if n < o {
            errs.push(field::invalid(
                &path.child("generation"),
                BadValue::Int(n),
                "must not be decremented",
            ));
        }
    }
    for k in ["name", "namespace"] {
        if s(nmd, k) != s(omd, k) {
            errs.push(field::invalid(
                &path.child(k),
                BadValue::str(s(nmd, k)),
                FIELD_IMMUTABLE_ERROR_MSG,
            ));
        }
    }
    errs.extend(validate_labels(nmd, "labels", &path.child("labels")));
    errs.extend(validate_annotations(
        nmd,
        "annotations",
        &path.child("annotations"),
    ));
    errs.extend(validate_owner_references(
        nmd,
        &path.child("ownerReferences"),
    ));
    errs
}

/// `validateKubeFinalizerName`: a finalizer without a '/' must be a standard one.
fn kube_finalizer_names(md: &Value) -> ErrorList {
    let mut errs = ErrorList::new();
    for (i, f) in arr(md, "finalizers").iter().enumerate() {
        let f = f.as_str().unwrap_or("");
        if !f.contains('/') && !["kubernetes", "orphan", "foregroundDeletion"].contains(&f) {
            errs.push(field::invalid(
                &Path::new("metadata.finalizers").index(i),
                BadValue::str(f),
                "name is neither a standard finalizer name nor is it fully qualified",
            ));
        }
    }
    errs
}

/// The core group's `ValidateObjectMeta` (pkg/apis/core/validation), which the built-in groups
/// call: apimachinery's, then the finalizers' names checked as Kubernetes finalizers.
pub fn core_object_meta(obj: &Value, namespaced: bool, name_rule: NameRule) -> ErrorList {
    let mut errs = validate_object_meta(obj, namespaced, name_rule);
    errs.extend(kube_finalizer_names(
        get(obj, "metadata").unwrap_or(&json!({})),
    ));
    errs
}

/// The core group's `ValidateObjectMetaUpdate`.
pub fn core_object_meta_update(new: &Value, old: &Value) -> ErrorList {
    let mut errs = validate_object_meta_update(new, old);
    errs.extend(kube_finalizer_names(
        get(new, "metadata").unwrap_or(&json!({})),
    ));
    errs
}

/// `validateCommonFields` of `rest.BeforeUpdate`: the generic ObjectMeta checks (names as
/// path segments) and `ValidateObjectMetaAccessorUpdate`, before the kind's own update rules.
pub fn validate_common_update(new: &Value, old: &Value, namespaced: bool) -> ErrorList {
    let mut errs = validate_object_meta(new, namespaced, NameRule::PathSegment);
    errs.extend(validate_object_meta_update(new, old));
    errs
}

/// A LabelSelector as Go marshals `*metav1.LabelSelector`: matchLabels (a map, sorted), then
/// matchExpressions (key, operator, values).
pub fn label_selector_value(sel: Option<&Value>) -> BadValue {
    let Some(sel) = sel else {
        return BadValue::Struct(Value::Null);
    };
    let mut m = serde_json::Map::new();
    if let Some(ml) = map(sel, "matchLabels").filter(|m| !m.is_empty()) {
        let mut keys: Vec<&String> = ml.keys().collect();
        keys.sort();
        let sorted: serde_json::Map<String, Value> = keys
            .into_iter()
            .map(|k| (k.clone(), ml[k].clone()))
            .collect();
        m.insert("matchLabels".into(), Value::Object(sorted));
    }
    let exprs = arr(sel, "matchExpressions");
    if !exprs.is_empty() {
        let list: Vec<Value> = exprs
            .iter()
            .map(|e| {
                let mut x = serde_json::Map::new();
                x.insert("key".into(), json!(s(e, "key")));
                x.insert("operator".into(), json!(s(e, "operator")));
                if !arr(e, "values").is_empty() {
                    x.insert("values".into(), json!(arr(e, "values")));
                }
                Value::Object(x)
            })
            .collect();
        m.insert("matchExpressions".into(), Value::Array(list));
    }
    BadValue::Struct(Value::Object(m))
}

/// `ValidateLabelSelector` of the selector `sel` at `path`.
pub fn validate_label_selector(sel: &Value, allow_invalid_values: bool, path: &Path) -> ErrorList {
    let mut errs = validate_labels(sel, "matchLabels", &path.child("matchLabels"));
    for (i, e) in arr(sel, "matchExpressions").iter().enumerate() {
        let p = path.child("matchExpressions").index(i);
        let values = arr(e, "values");
        match s(e, "operator") {
            "In" | "NotIn" => {
                if values.is_empty() {
                    errs.push(field::required(
                        &p.child("values"),
                        "must be specified when `operator` is 'In' or 'NotIn'",
                    ));
                }
            }
            "Exists" | "DoesNotExist" => {
                if !values.is_empty() {
                    errs.push(field::forbidden(
                        &p.child("values"),
                        "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                    ));
                }
            }
            op => errs.push(field::invalid(
                &p.child("operator"),
                BadValue::named(op),
                "not a valid selector operator",
            )),
        }
        errs.extend(validate_label_name(s(e, "key"), &p.child("key")));
        if !allow_invalid_values {
            for (j, v) in values.iter().enumerate() {
                let v = v.as_str().unwrap_or("");
                for m in content::is_valid_label_value(v) {
                    errs.push(field::invalid(
                        &p.child("values").index(j),
                        BadValue::str(v),
                        &m,
                    ));
                }
            }
        }
    }
    errs
}

/// `metav1.LabelSelectorAsSelector(sel)`: `None` when it does not convert (an unknown
/// operator, In/NotIn without values, Exists with values), `Some(true)` for the empty
/// selector (`selector.Empty()`), `Some(false)` otherwise (a nil selector converts to
/// `labels.Nothing()`, which is not Empty and matches nothing: see `selector_matches_opt`).
pub fn selector_converts(sel: Option<&Value>) -> Option<bool> {
    let Some(sel) = sel else {
        return Some(false);
    };
    let ml = map(sel, "matchLabels").map(|m| m.len()).unwrap_or(0);
    let exprs = arr(sel, "matchExpressions");
    for e in exprs {
        let n = arr(e, "values").len();
        match s(e, "operator") {
            "In" | "NotIn" if n == 0 => return None,
            "Exists" | "DoesNotExist" if n > 0 => return None,
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            _ => return None,
        }
        if !content::is_qualified_name(s(e, "key")).is_empty() {
            return None;
        }
    }
    for (k, v) in string_map(sel, "matchLabels") {
        if !content::is_qualified_name(k).is_empty() || !content::is_valid_label_value(v).is_empty()
        {
            return None;
        }
    }
    Some(ml + exprs.len() == 0)
}

/// `selector_matches` of an optional selector: nil matches nothing.
pub fn selector_matches_opt(sel: Option<&Value>, obj: &Value, labels_at: &str) -> bool {
    sel.map(|s| selector_matches(s, obj, labels_at))
        .unwrap_or(false)
}

/// Whether the label selector `sel` matches the labels at `labels_at` of `obj`.
pub fn selector_matches(sel: &Value, obj: &Value, labels_at: &str) -> bool {
    let labels = map(obj, labels_at);
    let label = |k: &str| labels.and_then(|m| m.get(k)).and_then(Value::as_str);
    for (k, v) in string_map(sel, "matchLabels") {
        if label(k) != Some(v) {
            return false;
        }
    }
    for e in arr(sel, "matchExpressions") {
        let key = s(e, "key");
        let values: Vec<&str> = arr(e, "values").iter().filter_map(Value::as_str).collect();
        let ok = match s(e, "operator") {
            "In" => label(key).map(|l| values.contains(&l)).unwrap_or(false),
            "NotIn" => label(key).map(|l| !values.contains(&l)).unwrap_or(true),
            "Exists" => label(key).is_some(),
            "DoesNotExist" => label(key).is_none(),
            _ => false,
        };
        if !ok {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn semantic_equality_treats_empty_as_absent() {
        assert!(semantic_eq(&json!({"a": []}), &json!({})));
        assert!(semantic_eq(&json!({"a": {"b": null}}), &json!({"a": {}})));
        assert!(!semantic_eq(&json!({"a": 1}), &json!({})));
    }

    #[test]
    fn object_meta_reports_in_upstream_order() {
        let obj = json!({"metadata": {"generateName": "Bad-", "name": "Bad-x", "namespace": "d", "labels": {"a": "-b"}}});
        let errs = validate_object_meta(&obj, true, NameRule::Subdomain);
        let fields: Vec<&str> = errs.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(
            fields,
            ["metadata.generateName", "metadata.name", "metadata.labels"]
        );
        assert!(
            validate_object_meta(&json!({"metadata": {"name": "a"}}), false, NameRule::Label)
                .is_empty()
        );
    }

    #[test]
    fn selectors_match_like_labels_selector() {
        let sel = json!({"matchLabels": {"app": "a"}, "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["db"]}]});
        let obj = json!({"metadata": {"labels": {"app": "a", "tier": "web"}}});
        assert!(selector_matches(&sel, &obj, "metadata.labels"));
        let obj = json!({"metadata": {"labels": {"app": "a", "tier": "db"}}});
        assert!(!selector_matches(&sel, &obj, "metadata.labels"));
        assert_eq!(selector_converts(Some(&json!({}))), Some(true));
        assert_eq!(selector_converts(Some(&sel)), Some(false));
    }
}
