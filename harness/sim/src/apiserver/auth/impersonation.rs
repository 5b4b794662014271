//! `Impersonate-User`, `Impersonate-Group`, `Impersonate-Uid` and `Impersonate-Extra-<key>`
//! headers (`kubectl --as`, `--as-group`): the requester must be allowed to `impersonate` each
//! one, then the request runs as that user, as the apiserver's impersonation filter does.

use super::attributes::{forbidden, Attributes};
use super::{rbac, split_service_account_username, UserInfo, AUTHENTICATED};
use crate::apiserver::status::{ApiError, ApiResult};
use crate::apiserver::ApiServer;
use axum::http::HeaderMap;

const USER: &str = "impersonate-user";
const GROUP: &str = "impersonate-group";
const UID: &str = "impersonate-uid";
const EXTRA_PREFIX: &str = "impersonate-extra-";

/// The user the request acts as: `requester` itself without impersonation headers.
pub fn apply(api: &ApiServer, requester: UserInfo, headers: &HeaderMap) -> ApiResult<UserInfo> {
    let text = |v: &axum::http::HeaderValue| v.to_str().unwrap_or("").to_string();
    let name = headers.get(USER).map(text);
    let groups: Vec<String> = headers.get_all(GROUP).iter().map(text).collect();
    let uid = headers.get(UID).map(text);
    let mut extra = std::collections::BTreeMap::<String, Vec<String>>::new();
    for (k, v) in headers {
        if let Some(key) = k.as_str().strip_prefix(EXTRA_PREFIX) {
            let key = percent_encoding::percent_decode_str(key)
                .decode_utf8_lossy()
                .into_owned();
            extra.entry(key).or_default().push(text(v));
        }
    }
    let Some(name) = name else {
        if groups.is_empty() && uid.is_none() && extra.is_empty() {
            return Ok(requester);
        }
        return Err(ApiError::internal(
            "requested impersonation of groups, uid or extra without impersonating a user",
        ));
    };
    // What the requester must be allowed: impersonate the user (or ServiceAccount), each group,
    // each extra value and the uid.
    let mut asks: Vec<(&str, &str, String, String)> = Vec::new();
    let service_account = split_service_account_username(&name);
    match service_account {
        Some((ns, sa)) => asks.push(("", "serviceaccounts", ns.to_string(), sa.to_string())),
        None => asks.push(("", "users", String::new(), name.clone())),
    }
    asks.extend(
        groups
            .iter()
            .map(|g| ("", "groups", String::new(), g.clone())),
    );
    for (key, values) in &extra {
        asks.extend(values.iter().map(|v| {
            (
                "authentication.k8s.io",
                "userextras",
                String::new(),
                format!("{}\u{0}{}", key, v),
            )
        }));
    }
    if let Some(u) = &uid {
        asks.push(("authentication.k8s.io", "uids", String::new(), u.clone()));
    }
    for (group, resource, namespace, object) in asks {
        let (resource, subresource, object) = match object.split_once('\u{0}') {
            // userextras/<key> with the value as the name.
            Some((key, value)) => (resource, key.to_string(), value.to_string()),
            None => (resource, String::new(), object),
        };
        let a = Attributes {
            user: requester.clone(),
            verb: "impersonate".into(),
            resource_request: true,
            api_group: group.into(),
            resource: resource.into(),
            subresource,
            namespace,
            name: object,
            ..Default::default()
        };
        let d = rbac::authorize(api, &a);
        if !d.allowed {
            return Err(forbidden(&a, &d.reason));
        }
    }
    let mut groups = match (service_account, groups.is_empty()) {
        // A ServiceAccount's groups are a fixed mapping.
        (Some((ns, _)), true) => vec![
            "system:serviceaccounts".to_string(),
            format!("system:serviceaccounts:{}", ns),
        ],
        _ => groups,
    };
    if name != "system:anonymous" && !groups.iter().any(|g| g == AUTHENTICATED) {
        groups.push(AUTHENTICATED.to_string());
    }
    Ok(UserInfo {
        name,
        uid: uid.unwrap_or_default(),
        groups,
        extra,
    })
}
