//! What a request asks for, in the terms authorizers use (`authorizer.Attributes`), derived
//! from the method, path and query as the apiserver's RequestInfoFactory does, and the 403 a
//! denied request gets.

use super::UserInfo;
use crate::apiserver::selectors::FieldSelector;
use crate::apiserver::status::ApiError;
use serde_json::json;
use std::collections::HashMap;

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Attributes {
    pub user: UserInfo,
    pub verb: String,
    /// False for discovery, OpenAPI, health and other non-resource paths.
    pub resource_request: bool,
    pub path: String,
    pub api_group: String,
    pub api_version: String,
    pub resource: String,
    pub subresource: String,
    pub namespace: String,
    pub name: String,
}

/// `RequestInfoFactory.NewRequestInfo` over a decoded path.
pub fn from_request(
    user: &UserInfo,
    method: &str,
    path: &str,
    query: &HashMap<String, String>,
) -> Attributes {
    let mut a = Attributes {
        user: user.clone(),
        path: path.to_string(),
        verb: method.to_ascii_lowercase(),
        ..Default::default()
    };
    let parts: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let rest: &[&str] = match parts.as_slice() {
        ["api", version, rest @ ..] if !rest.is_empty() => {
            a.api_version = version.to_string();
            rest
        }
        ["apis", group, version, rest @ ..] if !rest.is_empty() => {
            a.api_group = group.to_string();
            a.api_version = version.to_string();
            rest
        }
        _ => return a,
    };
    a.resource_request = true;
    let mut rest = rest;
    let via_method = rest[0] != "watch" && rest[0] != "proxy";
    if via_method {
        a.verb = match method {
            "POST" => "create",
            "GET" | "HEAD" => "get",
            "PUT" => "update",
            "PATCH" => "patch",
            "DELETE" => "delete",
            _ => "",
        }
        .to_string();
    } else {
        if rest.len() < 2 {
            return a;
        }
        a.verb = rest[0].to_string();
        rest = &rest[1..];
    }
    if rest[0] == "namespaces" && rest.len() > 1 {
        a.namespace = rest[1].to_string();
        if rest.len() > 2 && rest[2] != "status" && rest[2] != "finalize" {
            rest = &rest[2..];
        }
    }
    if rest.len() >= 3 && a.verb != "proxy" {
        a.subresource = rest[2].to_string();
    }
    if rest.len() >= 2 {
        a.name = rest[1].to_string();
    }
    a.resource = rest[0].to_string();
    if a.name.is_empty() && a.verb == "get" {
        let watch = matches!(
            query.get("watch").map(String::as_str),
            Some("true" | "1" | "True")
        );
        a.verb = if watch { "watch" } else { "list" }.to_string();
        if let Some(fs) = query
            .get("fieldSelector")
            .and_then(|s| FieldSelector::parse(s).ok())
        {
            if let Some(name) = fs.requires_exact_match("metadata.name") {
                if !name.is_empty()
                    && name != "."
                    && name != ".."
                    && !name.contains('/')
                    && !name.contains('%')
                {
                    a.name = name.to_string();
                }
            }
        }
    }
    if a.name.is_empty() && a.verb == "delete" {
        a.verb = "deletecollection".into();
    }
    a
}

/// The apiserver's `Forbidden` response: `<resource>[ "<name>"] is forbidden: User "<u>" cannot
/// <verb> resource "<r>[/<sub>]" in API group "<g>" (in the namespace "<ns>"|at the cluster
/// scope)[: <reason>]`, or `forbidden: User "<u>" cannot <verb> path "<p>"`, with details
/// naming the group, resource and object.
pub fn forbidden(a: &Attributes, reason: &str) -> ApiError {
    let sanitize = |s: String| {
        s.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
    };
    let mut msg = sanitize(forbidden_message(a));
    if !reason.is_empty() {
        msg = format!("{}: {}", msg, reason);
    }
    let resource = if a.resource_request {
        a.resource.as_str()
    } else {
        ""
    };
    let qualified = crate::apiserver::status::qualified(&a.api_group, resource);
    let message = if resource.is_empty() && a.api_group.is_empty() {
        format!("forbidden: {}", msg)
    } else if a.name.is_empty() {
        format!("{} is forbidden: {}", qualified, msg)
    } else {
        format!("{} {:?} is forbidden: {}", qualified, a.name, msg)
    };
    let mut details = serde_json::Map::new();
    if !a.name.is_empty() {
        details.insert("name".into(), json!(a.name));
    }
    if !a.api_group.is_empty() {
        details.insert("group".into(), json!(a.api_group));
    }
    if !resource.is_empty() {
        details.insert("kind".into(), json!(resource));
    }
    let mut e = ApiError::forbidden(message);
    e.details = Some(details.into());
    e
}

fn forbidden_message(a: &Attributes) -> String {
    if !a.resource_request {
        return format!("User {:?} cannot {} path {:?}", a.user.name, a.verb, a.path);
    }
    let resource = if a.subresource.is_empty() {
        a.resource.clone()
    } else {
        format!("{}/{}", a.resource, a.subresource)
    };
    if a.namespace.is_empty() {
        format!(
            "User {:?} cannot {} resource {:?} in API group {:?} at the cluster scope",
            a.user.name, a.verb, resource, a.api_group
        )
    } else {
        format!(
            "User {:?} cannot {} resource {:?} in API group {:?} in the namespace {:?}",
            a.user.name, a.verb, resource, a.api_group, a.namespace
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attrs(method: &str, path: &str, query: &[(&str, &str)]) -> Attributes {
        let q = query
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        from_request(
            &UserInfo::service_account("ns", "sa", "u"),
            method,
            path,
            &q,
        )
    }

    #[test]
    fn verbs_and_scopes_follow_request_info() {
        let a = attrs("GET", "/api/v1/namespaces/ns/pods", &[]);
        assert_eq!(
            (
                a.verb.as_str(),
                a.resource.as_str(),
                a.namespace.as_str(),
                a.name.as_str()
            ),
            ("list", "pods", "ns", "")
        );
        assert_eq!(
            attrs("GET", "/api/v1/namespaces/ns/pods", &[("watch", "true")]).verb,
            "watch"
        );
        assert_eq!(
            attrs("GET", "/api/v1/watch/namespaces/ns/pods", &[]).verb,
            "watch"
        );
        assert_eq!(
            attrs("DELETE", "/api/v1/namespaces/ns/pods", &[]).verb,
            "deletecollection"
        );
        let a = attrs(
            "GET",
            "/api/v1/namespaces/ns/pods",
            &[("fieldSelector", "metadata.name=web")],
        );
        assert_eq!((a.verb.as_str(), a.name.as_str()), ("list", "web"));
        let a = attrs(
            "PUT",
            "/apis/apps/v1/namespaces/ns/deployments/web/scale",
            &[],
        );
        assert_eq!(
            (
                a.api_group.as_str(),
                a.resource.as_str(),
                a.name.as_str(),
                a.subresource.as_str()
            ),
            ("apps", "deployments", "web", "scale")
        );
        // A namespace addresses itself: its name is also the request's namespace.
        let a = attrs("GET", "/api/v1/namespaces/kube-system", &[]);
        assert_eq!(
            (a.resource.as_str(), a.name.as_str(), a.namespace.as_str()),
            ("namespaces", "kube-system", "kube-system")
        );
        let a = attrs("PUT", "/api/v1/namespaces/x/finalize", &[]);
        assert_eq!(
            (a.resource.as_str(), a.name.as_str(), a.subresource.as_str()),
            ("namespaces", "x", "finalize")
        );
        let a = attrs("GET", "/apis/apps", &[]);
        assert!(!a.resource_request);
        assert_eq!(a.verb, "get");
    }

    #[test]
    fn forbidden_messages_match_the_apiserver() {
        let e = forbidden(&attrs("GET", "/api/v1/namespaces/ns/pods", &[]), "");
        assert_eq!(
            e.message,
            r#"pods is forbidden: User "system:serviceaccount:ns:sa" cannot list resource "pods" in API group "" in the namespace "ns""#
        );
        assert_eq!(e.details, Some(json!({"kind": "pods"})));
        let e = forbidden(
            &attrs(
                "GET",
                "/apis/storage.k8s.io/v1/storageclasses/longhorn",
                &[],
            ),
            "",
        );
        assert_eq!(
            e.message,
            r#"storageclasses.storage.k8s.io "longhorn" is forbidden: User "system:serviceaccount:ns:sa" cannot get resource "storageclasses" in API group "storage.k8s.io" at the cluster scope"#
        );
        assert_eq!(
            e.details,
            Some(json!({"name": "longhorn", "group": "storage.k8s.io", "kind": "storageclasses"}))
        );
        let e = forbidden(
            &attrs("PATCH", "/api/v1/namespaces/ns/pods/p/status", &[]),
            "RBAC: role.rbac.authorization.k8s.io \"x\" not found",
        );
        assert!(e.message.ends_with(r#"cannot patch resource "pods/status" in API group "" in the namespace "ns": RBAC: role.rbac.authorization.k8s.io "x" not found"#), "{}", e.message);
        let e = forbidden(&attrs("GET", "/metrics", &[]), "");
        assert_eq!(
            e.message,
            r#"forbidden: User "system:serviceaccount:ns:sa" cannot get path "/metrics""#
        );
        assert_eq!(e.details, Some(json!({})));
    }
}
