//! Authentication and authorization, as kube-apiserver's filter chain does them before a
//! request reaches its handler: who is calling (`authentication`: the admin bearer token, or a
//! ServiceAccount token that `tokens` signed; `impersonation` for `kubectl --as`), what the
//! request asks (`attributes`), may they
//! (`rbac`, over the Roles and bindings in the store, seeded by `bootstrap`), and the APIs that
//! ask those questions themselves (`reviews`, TokenRequest in `tokens`). Client certificates
//! name their user as kube-apiserver's x509 authenticator reads them (`x509`).

pub mod attributes;
pub mod authentication;
pub mod bootstrap;
pub mod impersonation;
pub mod rbac;
pub mod reviews;
pub mod tokens;
pub mod x509;

use crate::apiserver::status::{ApiError, ApiResult};
use crate::apiserver::ApiServer;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// The authenticated caller (`user.Info`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct UserInfo {
    pub name: String,
    pub uid: String,
    pub groups: Vec<String>,
    pub extra: BTreeMap<String, Vec<String>>,
}

/// The group whose members every authorizer allows (kube-apiserver's privileged-group authorizer).
pub const SYSTEM_MASTERS: &str = "system:masters";
pub const AUTHENTICATED: &str = "system:authenticated";
pub const UNAUTHENTICATED: &str = "system:unauthenticated";
pub const ANONYMOUS: &str = "system:anonymous";

impl UserInfo {
    /// The holder of the cluster's admin token: kubeadm's `kubernetes-admin` in `system:masters`,
    /// which keeps full access whatever the RBAC objects say.
    pub fn admin() -> UserInfo {
        UserInfo {
            name: "kubernetes-admin".into(),
            groups: vec![SYSTEM_MASTERS.into(), AUTHENTICATED.into()],
            ..Default::default()
        }
    }

    /// The apiserver's own loopback client (`system:apiserver`), which the sim's components'
    /// writes are attributed to.
    pub fn loopback() -> UserInfo {
        UserInfo {
            name: "system:apiserver".into(),
            groups: vec![SYSTEM_MASTERS.into(), AUTHENTICATED.into()],
            ..Default::default()
        }
    }

    /// Who a request without credentials is when anonymous authentication is on.
    pub fn anonymous() -> UserInfo {
        UserInfo {
            name: ANONYMOUS.into(),
            groups: vec![UNAUTHENTICATED.into()],
            ..Default::default()
        }
    }

    /// `system:serviceaccount:<ns>:<name>` with the groups the ServiceAccount authenticator adds.
    pub fn service_account(namespace: &str, name: &str, uid: &str) -> UserInfo {
        UserInfo {
            name: service_account_username(namespace, name),
            uid: uid.into(),
            groups: vec![
                "system:serviceaccounts".into(),
                format!("system:serviceaccounts:{}", namespace),
                AUTHENTICATED.into(),
            ],
            extra: BTreeMap::new(),
        }
    }

    pub fn is_privileged(&self) -> bool {
        self.groups.iter().any(|g| g == SYSTEM_MASTERS)
    }

    /// `authentication.k8s.io/v1 UserInfo` (what SelfSubjectReview and TokenReview answer).
    pub fn to_json(&self) -> Value {
        let mut v = json!({"username": self.name});
        if !self.uid.is_empty() {
            v["uid"] = json!(self.uid);
        }
        if !self.groups.is_empty() {
            v["groups"] = json!(self.groups);
        }
        if !self.extra.is_empty() {
            v["extra"] = json!(self.extra);
        }
        v
    }

    /// The user a SubjectAccessReview's spec names (`user`, `groups`, `uid`, `extra`).
    pub fn from_review_spec(spec: &Value) -> UserInfo {
        let strings = |v: Option<&Value>| -> Vec<String> {
            v.and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(String::from)
                        .collect()
                })
                .unwrap_or_default()
        };
        let extra = spec
            .get("extra")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.clone(), strings(Some(v))))
                    .collect()
            })
            .unwrap_or_default();
        UserInfo {
            name: spec
                .get("user")
                .and_then(Value::as_str)
                .unwrap_or("")
                .into(),
            uid: spec.get("uid").and_then(Value::as_str).unwrap_or("").into(),
            groups: strings(spec.get("groups")),
            extra,
        }
    }
}

pub fn service_account_username(namespace: &str, name: &str) -> String {
    format!("system:serviceaccount:{}:{}", namespace, name)
}

/// `(namespace, name)` of a ServiceAccount username.
pub fn split_service_account_username(user: &str) -> Option<(&str, &str)> {
    let rest = user.strip_prefix("system:serviceaccount:")?;
    let (ns, name) = rest.split_once(':')?;
    (!ns.is_empty() && !name.is_empty() && !name.contains(':')).then_some((ns, name))
}

/// What the server needs to authenticate: the admin token and the ServiceAccount token signer.
pub struct Auth {
    admin_token: String,
    pub signer: tokens::Signer,
    /// `--anonymous-auth` (kube-apiserver's default is true; the sim's clusters keep it off, so
    /// a request without credentials is a 401): a request without credentials is
    /// `system:anonymous` in `system:unauthenticated`, which RBAC lets read `/healthz`,
    /// `/version` and the like (`system:public-info-viewer`).
    pub anonymous: bool,
}

impl Auth {
    pub fn new(admin_token: &str) -> Auth {
        Self::with_issuer(admin_token, tokens::ISSUER)
    }

    /// With `--service-account-issuer` set.
    pub fn with_issuer(admin_token: &str, issuer: &str) -> Auth {
        Auth {
            admin_token: admin_token.to_string(),
            signer: tokens::Signer::with_issuer(issuer),
            anonymous: false,
        }
    }
}

/// Authenticate and authorize one request: the caller, or the 401/403 to answer with.
pub fn check(
    auth: &Auth,
    api: &ApiServer,
    headers: &axum::http::HeaderMap,
    client_cert: Option<&UserInfo>,
    method: &str,
    path: &str,
    query: &std::collections::HashMap<String, String>,
) -> ApiResult<UserInfo> {
    // As kube-apiserver's union.NewFailOnError(..., anonymous): an invalid token is a 401,
    // only a request that carries none is anonymous.
    let user = match authentication::authenticate(auth, api, headers, client_cert) {
        Some(u) => u,
        None if auth.anonymous && !headers.contains_key(axum::http::header::AUTHORIZATION) => {
            UserInfo::anonymous()
        }
        None => return Err(ApiError::unauthorized()),
    };
    let user = impersonation::apply(api, user, headers)?;
    if user.is_privileged() {
        return Ok(user);
    }
    let path = percent_encoding::percent_decode_str(path).decode_utf8_lossy();
    let a = attributes::from_request(&user, method, &path, query);
    let d = rbac::authorize(api, &a);
    if !d.allowed {
        return Err(attributes::forbidden(&a, &d.reason));
    }
    // 1.35 (AuthorizePodWebsocketUpgradeCreatePermission, beta, on by default): a WebSocket
    // exec/attach/portforward is a GET, so `get` alone would open a shell; the pod registry
    // also requires `create` on the subresource.
    if let Some(create) = connect_also_needs_create(&a) {
        let d = rbac::authorize(api, &create);
        if !d.allowed {
            return Err(attributes::forbidden(&create, &d.reason));
        }
    }
    Ok(user)
}

/// The `create` check a GET on a pod's connect subresource needs besides its own, if any.
fn connect_also_needs_create(a: &attributes::Attributes) -> Option<attributes::Attributes> {
    let connect = a.resource_request
        && a.api_group.is_empty()
        && a.resource == "pods"
        && matches!(a.subresource.as_str(), "exec" | "attach" | "portforward");
    (connect && a.verb == "get").then(|| attributes::Attributes {
        verb: "create".into(),
        ..a.clone()
    })
}

#[cfg(test)]
mod connect_tests {
    use super::*;

    fn attrs(method: &str, path: &str) -> attributes::Attributes {
        attributes::from_request(&UserInfo::default(), method, path, &Default::default())
    }

    #[test]
    fn websocket_connects_also_need_create() {
        for sub in ["exec", "attach", "portforward"] {
            let a = attrs("GET", &format!("/api/v1/namespaces/ns/pods/p/{sub}"));
            let c =
                connect_also_needs_create(&a).unwrap_or_else(|| panic!("{sub}: no create check"));
            assert_eq!(
                (
                    c.verb.as_str(),
                    c.resource.as_str(),
                    c.subresource.as_str(),
                    c.name.as_str()
                ),
                ("create", "pods", sub, "p")
            );
        }
        // SPDY is a POST (already `create`); logs and other GETs need nothing more.
        assert!(
            connect_also_needs_create(&attrs("POST", "/api/v1/namespaces/ns/pods/p/exec"))
                .is_none()
        );
        assert!(
            connect_also_needs_create(&attrs("GET", "/api/v1/namespaces/ns/pods/p/log")).is_none()
        );
        assert!(connect_also_needs_create(&attrs("GET", "/api/v1/namespaces/ns/pods/p")).is_none());
    }
}
