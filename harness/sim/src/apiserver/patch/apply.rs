//! Server-side apply and the `metadata.managedFields` of every write, as the API server's
//! handlers call the field manager (staging/src/k8s.io/apiserver/pkg/endpoints/handlers:
//! `create.go`, `update.go`, `patch.go`): a create and an update record the decoded, defaulted
//! body against the live object (an empty one for a create) before admission; an apply merges
//! the configuration into the live object. The mechanism is `smd` (structured-merge-diff and
//! apimachinery's field manager, ported).

use super::smd::managed::{self, Endpoint};
use super::smd::reset::reset_fields;
use serde_json::Value;

pub use super::smd::managed::{ApplyError, Conflicts};

/// The REST endpoint a write goes through.
#[derive(Clone, Copy, Debug)]
pub struct Target<'a> {
    pub group: &'a str,
    /// The request's group/version (`apps/v1`, `v1`).
    pub api_version: &'a str,
    pub kind: &'a str,
    /// `status`, `scale`, ...; None for the main resource.
    pub subresource: Option<&'a str>,
    /// A custom resource whose CRD version has a status subresource (its strategies reset
    /// `status` / `spec`).
    pub custom_with_status: bool,
}

impl Target<'_> {
    fn with<T>(&self, now: &str, f: impl FnOnce(&Endpoint) -> T) -> T {
        let reset = reset_fields(
            self.group,
            self.kind,
            self.subresource,
            self.custom_with_status,
        );
        let ep = Endpoint {
            api_version: self.api_version,
            kind: self.kind,
            subresource: self.subresource.unwrap_or(""),
            reset: reset.as_ref(),
            now,
        };
        f(&ep)
    }
}

/// `managerOrUserAgent`: the `fieldManager` parameter, else the user agent's program name
/// (`prefixFromUserAgent`: up to the first `/`, unprintable characters dropped, at most 128
/// bytes).
pub fn manager_or_user_agent(field_manager: Option<&str>, user_agent: &str) -> String {
    if let Some(m) = field_manager.filter(|m| !m.is_empty()) {
        return m.to_owned();
    }
    let prefix = user_agent.split('/').next().unwrap_or("");
    let mut out = String::new();
    for c in prefix.chars().filter(|c| !c.is_control()) {
        if out.len() + c.len_utf8() > 128 {
            break;
        }
        out.push(c);
    }
    out
}

/// Record a create (`live` None) or an update of `new` by `manager` in `new`'s managedFields
/// (`FieldManager.UpdateNoErrors`).
pub fn record_update(t: &Target, live: Option<&Value>, new: &mut Value, manager: &str, now: &str) {
    record_update_over(t, live, None, new, manager, now)
}

/// `record_update` over a live object kept without its managedFields, given apart.
pub fn record_update_over(
    t: &Target,
    live: Option<&Value>,
    live_managed: Option<&Value>,
    new: &mut Value,
    manager: &str,
    now: &str,
) {
    t.with(now, |ep| {
        managed::update_over(ep, live, live_managed, new, manager)
    });
}

/// Server-side apply of `applied` by `manager` over `live` (None: the object does not exist
/// yet). The result carries the new managedFields; it is not defaulted yet.
pub fn server_side_apply(
    t: &Target,
    live: Option<&Value>,
    applied: &Value,
    manager: &str,
    force: bool,
    now: &str,
) -> Result<Value, ApplyError> {
    t.with(now, |ep| managed::apply(ep, live, applied, manager, force))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn manager_names_as_upstream() {
        assert_eq!(manager_or_user_agent(Some("m"), "kubectl/v1.35"), "m");
        assert_eq!(
            manager_or_user_agent(None, "kubectl/v1.35.0 (linux/amd64) kubernetes/abc"),
            "kubectl"
        );
        assert_eq!(
            manager_or_user_agent(Some(""), "python\u{7}-client/1"),
            "python-client"
        );
        assert_eq!(manager_or_user_agent(None, ""), "");
        assert_eq!(manager_or_user_agent(None, &"x".repeat(200)).len(), 128);
    }

    #[test]
    fn status_subresource_writes_name_their_subresource() {
        let t = Target {
            group: "",
            api_version: "v1",
            kind: "Service",
            subresource: None,
            custom_with_status: false,
        };
        let mut svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
                             "spec": {"ports": [{"port": 80, "protocol": "TCP"}]}, "status": {"loadBalancer": {}}});
        record_update(&t, None, &mut svc, "kubectl", "2026-01-01T00:00:00Z");
        svc["metadata"]["uid"] = json!("u");
        let mut lb = svc.clone();
        lb["status"]["loadBalancer"] = json!({"ingress": [{"ip": "1.2.3.4"}]});
        let st = Target {
            subresource: Some("status"),
            ..t
        };
        record_update(&st, Some(&svc), &mut lb, "cloud", "2026-01-01T00:01:00Z");
        let entries = lb["metadata"]["managedFields"].as_array().unwrap();
        assert_eq!(entries.len(), 2);
        assert_eq!(
            entries[0]["fieldsV1"],
            json!({"f:spec": {"f:ports": {".": {}, "k:{\"port\":80,\"protocol\":\"TCP\"}": {".": {}, "f:port": {}, "f:protocol": {}}}}})
        );
        assert_eq!(entries[1]["subresource"], "status");
        assert_eq!(
            entries[1]["fieldsV1"],
            json!({"f:status": {"f:loadBalancer": {"f:ingress": {}}}})
        );
    }
}
