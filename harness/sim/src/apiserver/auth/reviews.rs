//! The create-only review APIs: authorization.k8s.io/v1 SelfSubjectAccessReview,
//! SubjectAccessReview, LocalSubjectAccessReview, SelfSubjectRulesReview, and
//! authentication.k8s.io/v1 SelfSubjectReview and TokenReview. Nothing is stored: each answer
//! is the request with its status filled in, as the apiserver's REST handlers do.

use super::attributes::Attributes;
use super::{authentication, rbac, Auth, UserInfo};
use crate::apiserver::status::{ApiError, ApiResult};
use crate::apiserver::ApiServer;
use serde_json::{json, Value};

pub const AUTHORIZATION: &str = "authorization.k8s.io";
pub const AUTHENTICATION: &str = "authentication.k8s.io";

/// Is `(group, plural)` one of the review resources this module answers?
pub fn is_review(group: &str, plural: &str) -> bool {
    matches!(
        (group, plural),
        (
            AUTHORIZATION,
            "selfsubjectaccessreviews"
                | "subjectaccessreviews"
                | "localsubjectaccessreviews"
                | "selfsubjectrulesreviews"
        ) | (AUTHENTICATION, "selfsubjectreviews" | "tokenreviews")
    )
}

/// Answer a POST of a review. `namespace` is the path's (LocalSubjectAccessReview only).
pub fn create(
    auth: &Auth,
    api: &ApiServer,
    caller: &UserInfo,
    group: &str,
    plural: &str,
    namespace: &str,
    body: &Value,
) -> ApiResult<Value> {
    // A review is never stored: its metadata stays empty (creationTimestamp is `omitzero`),
    // but a SelfSubjectReview's REST stamps its creation time (pkg/registry/authentication/
    // selfsubjectreview/rest.go).
    let mut out =
        json!({"kind": kind_of(plural), "apiVersion": format!("{}/v1", group), "metadata": {}});
    if plural == "selfsubjectreviews" {
        out["metadata"]["creationTimestamp"] = json!(api.clock().now_rfc3339());
    }
    if plural == "localsubjectaccessreviews" {
        out["metadata"]["namespace"] = json!(namespace);
    }
    let spec = body.get("spec").cloned().unwrap_or_else(|| json!({}));
    let status = match plural {
        "selfsubjectaccessreviews" => access_status(api, caller, &spec, plural)?,
        "subjectaccessreviews" | "localsubjectaccessreviews" => {
            let subject = UserInfo::from_review_spec(&spec);
            if subject.name.is_empty() && subject.groups.is_empty() {
                return Err(invalid(
                    plural,
                    "spec.user",
                    "Invalid value: \"\": at least one of user or group must be specified",
                ));
            }
            if plural == "localsubjectaccessreviews" {
                if spec
                    .get("nonResourceAttributes")
                    .is_some_and(|v| !v.is_null())
                {
                    return Err(invalid(
                        plural,
                        "spec.nonResourceAttributes",
                        "Invalid value: \"null\": disallowed on this kind of request",
                    ));
                }
                let ns = spec
                    .pointer("/resourceAttributes/namespace")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                if ns != namespace {
                    return Err(invalid(
                        plural,
                        "spec.resourceAttributes.namespace",
                        &format!("Invalid value: {:?}: must match metadata.namespace", ns),
                    ));
                }
            }
            access_status(api, &subject, &spec, plural)?
        }
        "selfsubjectrulesreviews" => rules_status(
            api,
            caller,
            spec.get("namespace").and_then(Value::as_str).unwrap_or(""),
        ),
        "selfsubjectreviews" => json!({"userInfo": caller.to_json()}),
        "tokenreviews" => token_status(auth, api, &spec)?,
        _ => return Err(ApiError::not_found_path()),
    };
    match plural {
        "selfsubjectreviews" => {}
        // The rules review answers with a new object: its status only.
        "selfsubjectrulesreviews" => out["spec"] = json!({}),
        _ => out["spec"] = spec,
    }
    out["status"] = status;
    Ok(out)
}

pub fn kind_of(plural: &str) -> &'static str {
    match plural {
        "selfsubjectaccessreviews" => "SelfSubjectAccessReview",
        "subjectaccessreviews" => "SubjectAccessReview",
        "localsubjectaccessreviews" => "LocalSubjectAccessReview",
        "selfsubjectrulesreviews" => "SelfSubjectRulesReview",
        "selfsubjectreviews" => "SelfSubjectReview",
        _ => "TokenReview",
    }
}

fn invalid(plural: &str, field: &str, message: &str) -> ApiError {
    let group = if plural == "tokenreviews" {
        AUTHENTICATION
    } else {
        AUTHORIZATION
    };
    // The access reviews' REST storage names the kind from the decoded object's TypeMeta,
    // which decoding has cleared: `authorizationapi.Kind("")`.
    let kind = if plural.ends_with("subjectaccessreviews") {
        ""
    } else {
        kind_of(plural)
    };
    ApiError::invalid(
        group,
        kind,
        "",
        vec![(field.to_string(), message.to_string(), "FieldValueInvalid")],
    )
}

/// `SubjectAccessReviewStatus` for the attributes in `spec` asked on behalf of `user`.
fn access_status(api: &ApiServer, user: &UserInfo, spec: &Value, plural: &str) -> ApiResult<Value> {
    let resource = spec.get("resourceAttributes").filter(|v| v.is_object());
    let non_resource = spec.get("nonResourceAttributes").filter(|v| v.is_object());
    let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let attrs = match (resource, non_resource) {
        (Some(r), None) => Attributes {
            user: user.clone(),
            verb: s(r, "verb"),
            resource_request: true,
            api_group: s(r, "group"),
            api_version: match s(r, "version") {
                v if v.is_empty() => "*".into(),
                v => v,
            },
            resource: s(r, "resource"),
            subresource: s(r, "subresource"),
            namespace: s(r, "namespace"),
            name: s(r, "name"),
            path: String::new(),
        },
        (None, Some(n)) => Attributes {
            user: user.clone(),
            verb: s(n, "verb"),
            path: s(n, "path"),
            ..Default::default()
        },
        _ => {
            return Err(invalid(plural, "spec.resourceAttributes", "Invalid value: \"null\": exactly one of nonResourceAttributes or resourceAttributes must be specified"));
        }
    };
    let d = rbac::authorize(api, &attrs);
    let mut status = json!({"allowed": d.allowed});
    if !d.reason.is_empty() {
        status["reason"] = json!(d.reason);
    }
    Ok(status)
}

/// `SubjectRulesReviewStatus`: the caller's rules in a namespace, split into resource and
/// non-resource rules.
fn rules_status(api: &ApiServer, user: &UserInfo, namespace: &str) -> Value {
    let (rules, errors) = rbac::rules_for(api, user, namespace);
    let mut resource_rules = Vec::new();
    let mut non_resource_rules = Vec::new();
    for r in rules {
        let has = |k: &str| {
            r.get(k)
                .and_then(Value::as_array)
                .is_some_and(|a| !a.is_empty())
        };
        if has("resources") {
            let mut rr = json!({"verbs": r.get("verbs").cloned().unwrap_or(json!([]))});
            for k in ["apiGroups", "resources", "resourceNames"] {
                if has(k) {
                    rr[k] = r[k].clone();
                }
            }
            resource_rules.push(rr);
        }
        if has("nonResourceURLs") {
            non_resource_rules.push(json!({"verbs": r.get("verbs").cloned().unwrap_or(json!([])), "nonResourceURLs": r["nonResourceURLs"].clone()}));
        }
    }
    let mut status = json!({"resourceRules": resource_rules, "nonResourceRules": non_resource_rules, "incomplete": !errors.is_empty()});
    if !errors.is_empty() {
        status["evaluationError"] = json!(errors.join(", "));
    }
    status
}

fn token_status(auth: &Auth, api: &ApiServer, spec: &Value) -> ApiResult<Value> {
    let token = spec.get("token").and_then(Value::as_str).unwrap_or("");
    if token.is_empty() {
        return Err(invalid(
            "tokenreviews",
            "spec.token",
            "Required value: token must be specified",
        ));
    }
    // Without spec.audiences the token must be meant for the apiserver itself.
    let requested: Vec<&str> = spec
        .get("audiences")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let targets = if requested.is_empty() {
        vec![auth.signer.issuer()]
    } else {
        requested
    };
    Ok(
        match authentication::authenticate_token(auth, api, token, &targets) {
            Ok((user, audiences)) => {
                json!({"authenticated": true, "user": user.to_json(), "audiences": audiences})
            }
            // A token no authenticator recognises is just invalid; one the service account
            // authenticator rejects adds its reason to the aggregate.
            Err(e) if e == "invalid bearer token" => json!({"user": {}, "error": e}),
            Err(e) => json!({"user": {}, "error": format!("[invalid bearer token, {}]", e)}),
        },
    )
}
