//! rbac.authorization.k8s.io/v1: `pkg/apis/rbac/validation/validation.go` ValidateRole,
//! ValidateClusterRole, ValidateRoleBinding, ValidateClusterRoleBinding and their updates.
//! RBAC names are path segments (`ValidateRBACName`).

use super::access::{arr, get, s};
use super::content::NameRule;
use super::field::{self, BadValue, ErrorList, Path};
use super::objectmeta::{self, label_selector_value, selector_converts, validate_label_selector};
use serde_json::{json, Value};

/// `ValidatePolicyRule`.
fn policy_rule(rule: &Value, namespaced: bool, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    if arr(rule, "verbs").is_empty() {
        errs.push(field::required(
            &path.child("verbs"),
            "verbs must contain at least one value",
        ));
    }
    let urls = arr(rule, "nonResourceURLs");
    if !urls.is_empty() {
        if namespaced {
            errs.push(field::invalid(
                &path.child("nonResourceURLs"),
                BadValue::Json(json!(urls)),
                "namespaced rules cannot apply to non-resource URLs",
            ));
        }
        if !arr(rule, "apiGroups").is_empty()
            || !arr(rule, "resources").is_empty()
            || !arr(rule, "resourceNames").is_empty()
        {
            errs.push(field::invalid(
                &path.child("nonResourceURLs"),
                BadValue::Json(json!(urls)),
                "rules cannot apply to both regular resources and non-resource URLs",
            ));
        }
        return errs;
    }
    if arr(rule, "apiGroups").is_empty() {
        errs.push(field::required(
            &path.child("apiGroups"),
            "resource rules must supply at least one api group",
        ));
    }
    if arr(rule, "resources").is_empty() {
        errs.push(field::required(
            &path.child("resources"),
            "resource rules must supply at least one resource",
        ));
    }
    errs
}

fn role(obj: &Value, namespaced: bool) -> ErrorList {
    let mut errs = objectmeta::core_object_meta(obj, namespaced, NameRule::PathSegment);
    for (i, r) in arr(obj, "rules").iter().enumerate() {
        errs.extend(policy_rule(r, namespaced, &Path::new("rules").index(i)));
    }
    errs
}

/// `ValidateRole`.
pub fn validate_role(obj: &Value) -> ErrorList {
    role(obj, true)
}

/// `ValidateRoleUpdate`.
pub fn validate_role_update(new: &Value, old: &Value) -> ErrorList {
    let mut errs = validate_role(new);
    errs.extend(objectmeta::core_object_meta_update(new, old));
    errs
}

/// `ValidateClusterRole`.
pub fn validate_cluster_role(obj: &Value) -> ErrorList {
    let mut errs = role(obj, false);
    if let Some(ag) = get(obj, "aggregationRule") {
        let p = Path::new("aggregationRule.clusterRoleSelectors");
        let sels = arr(ag, "clusterRoleSelectors");
        if sels.is_empty() {
            errs.push(field::required(
                &p,
                "at least one clusterRoleSelector required if aggregationRule is non-nil",
            ));
        }
        for (i, sel) in sels.iter().enumerate() {
            errs.extend(validate_label_selector(sel, false, &p.index(i)));
            if selector_converts(Some(sel)).is_none() {
                errs.push(field::invalid(
                    &p.index(i),
                    label_selector_value(Some(sel)),
                    "invalid label selector.",
                ));
            }
        }
    }
    errs
}

/// `ValidateClusterRoleUpdate`.
pub fn validate_cluster_role_update(new: &Value, old: &Value) -> ErrorList {
    let mut errs = validate_cluster_role(new);
    errs.extend(objectmeta::core_object_meta_update(new, old));
    errs
}

/// `ValidateRoleBindingSubject`.
fn subject(sub: &Value, namespaced: bool, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let name = s(sub, "name");
    let group = s(sub, "apiGroup");
    if name.is_empty() {
        errs.push(field::required(&path.child("name"), ""));
    }
    match s(sub, "kind") {
        "ServiceAccount" => {
            if !name.is_empty() {
                for m in NameRule::Subdomain.check(name, false) {
                    errs.push(field::invalid(&path.child("name"), BadValue::str(name), &m));
                }
            }
            if !group.is_empty() {
                errs.push(field::not_supported(
                    &path.child("apiGroup"),
                    BadValue::str(group),
                    &[""],
                ));
            }
            if !namespaced && s(sub, "namespace").is_empty() {
                errs.push(field::required(&path.child("namespace"), ""));
            }
        }
        "User" | "Group" => {
            if group != "rbac.authorization.k8s.io" {
                errs.push(field::not_supported(
                    &path.child("apiGroup"),
                    BadValue::str(group),
                    &["rbac.authorization.k8s.io"],
                ));
            }
        }
        other => errs.push(field::not_supported(
            &path.child("kind"),
            BadValue::str(other),
            &["ServiceAccount", "User", "Group"],
        )),
    }
    errs
}

fn binding(obj: &Value, namespaced: bool) -> ErrorList {
    let mut errs = objectmeta::core_object_meta(obj, namespaced, NameRule::PathSegment);
    let rr = Path::new("roleRef");
    let group = s(obj, "roleRef.apiGroup");
    if group != "rbac.authorization.k8s.io" {
        errs.push(field::not_supported(
            &rr.child("apiGroup"),
            BadValue::str(group),
            &["rbac.authorization.k8s.io"],
        ));
    }
    let kind = s(obj, "roleRef.kind");
    let kinds: &[&str] = if namespaced {
        &["Role", "ClusterRole"]
    } else {
        &["ClusterRole"]
    };
    if !kinds.contains(&kind) {
        errs.push(field::not_supported(
            &rr.child("kind"),
            BadValue::str(kind),
            kinds,
        ));
    }
    let name = s(obj, "roleRef.name");
    if name.is_empty() {
        errs.push(field::required(&rr.child("name"), ""));
    } else {
        for m in NameRule::PathSegment.check(name, false) {
            errs.push(field::invalid(&rr.child("name"), BadValue::str(name), &m));
        }
    }
    for (i, sub) in arr(obj, "subjects").iter().enumerate() {
        errs.extend(subject(sub, namespaced, &Path::new("subjects").index(i)));
    }
    errs
}

fn binding_update(new: &Value, old: &Value, namespaced: bool) -> ErrorList {
    let mut errs = binding(new, namespaced);
    errs.extend(objectmeta::core_object_meta_update(new, old));
    let rr = |v: &Value| {
        (
            s(v, "roleRef.apiGroup").to_string(),
            s(v, "roleRef.kind").to_string(),
            s(v, "roleRef.name").to_string(),
        )
    };
    if rr(new) != rr(old) {
        let (g, k, n) = rr(new);
        errs.push(field::invalid(
            &Path::new("roleRef"),
            BadValue::Struct(json!({"APIGroup": g, "Kind": k, "Name": n})),
            "cannot change roleRef",
        ));
    }
    errs
}

/// `ValidateRoleBinding`.
pub fn validate_role_binding(obj: &Value) -> ErrorList {
    binding(obj, true)
}

/// `ValidateRoleBindingUpdate`.
pub fn validate_role_binding_update(new: &Value, old: &Value) -> ErrorList {
    binding_update(new, old, true)
}

/// `ValidateClusterRoleBinding`.
pub fn validate_cluster_role_binding(obj: &Value) -> ErrorList {
    binding(obj, false)
}

/// `ValidateClusterRoleBindingUpdate`.
pub fn validate_cluster_role_binding_update(new: &Value, old: &Value) -> ErrorList {
    binding_update(new, old, false)
}
