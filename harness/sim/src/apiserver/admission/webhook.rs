//! Admission webhooks: kube-apiserver's MutatingAdmissionWebhook and ValidatingAdmissionWebhook
//! plugins (k8s.io/apiserver/pkg/admission/plugin/webhook): the configurations in the store, the
//! webhooks whose rules, scope, namespaceSelector and objectSelector match a request
//! (`predicates/rules`, `predicates/namespace`, `predicates/object`), the AdmissionReview sent
//! (`request/admissionreview.go`), and the answer: a JSON patch applied and the object
//! defaulted again (`mutating/dispatcher.go`, called in order, IfNeeded ones once more when a
//! later one changed the object), a denial as `errors/statuserror.go` words it
//! (`validating/dispatcher.go`, called in parallel), a failed call as the failurePolicy says.
//!
//! Differences (docs/fidelity.md): matchConditions (CEL) are not evaluated (a webhook with
//! some is called as if they held); matchPolicy Equivalent matches only the version asked
//! (rules with `*` or every served version match as upstream); `service` client configs are not
//! reachable from the sim (the call fails, then the failurePolicy applies); mutating webhooks
//! see the object after the sim's create strategy (a generated name, reset status).

pub mod client;

use crate::apiserver::auth::UserInfo;
use crate::apiserver::meta;
use crate::apiserver::resources::{ResourceKey, ResourceType};
use crate::apiserver::selectors::LabelSelector;
use crate::apiserver::status::{ApiError, ApiResult};
use crate::apiserver::store::Store;
use base64::Engine;
use serde_json::{json, Value};
use std::time::Duration;

/// `admission.Operation`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    Create,
    Update,
    Delete,
}

impl Operation {
    fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
        }
    }

    fn options_kind(self) -> &'static str {
        match self {
            Operation::Create => "CreateOptions",
            Operation::Update => "UpdateOptions",
            Operation::Delete => "DeleteOptions",
        }
    }
}

/// One admission request's attributes (`admission.Attributes`).
pub struct Attributes<'a> {
    pub operation: Operation,
    /// The resource as requested; the object is in its version.
    pub rt: &'a ResourceType,
    pub subresource: &'a str,
    pub namespace: &'a str,
    pub name: &'a str,
    pub old_object: Option<&'a Value>,
    pub user: &'a UserInfo,
    pub dry_run: bool,
    pub field_manager: Option<&'a str>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Flavor {
    Mutating,
    Validating,
}

/// One webhook of a configuration, as the dispatcher reads it.
#[derive(Debug, Clone)]
struct Hook {
    name: String,
    url: Option<String>,
    ca_bundle: Vec<u8>,
    rules: Vec<Value>,
    fail_closed: bool,
    namespace_selector: LabelSelector,
    object_selector: LabelSelector,
    side_effects_on_dry_run: bool,
    timeout: Duration,
    review_version: &'static str,
    reinvoke_if_needed: bool,
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect()
        })
        .unwrap_or_default()
}

fn selector(v: Option<&Value>) -> LabelSelector {
    match v {
        // v1 defaults an absent selector to `{}`: everything.
        None | Some(Value::Null) => LabelSelector::everything(),
        Some(s) => LabelSelector::from_json(s).unwrap_or_else(|_| LabelSelector::nothing()),
    }
}

impl Hook {
    fn from_json(w: &Value) -> Hook {
        let cc = w.get("clientConfig").cloned().unwrap_or_else(|| json!({}));
        let ca_bundle = cc
            .get("caBundle")
            .and_then(Value::as_str)
            .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
            .unwrap_or_default();
        let versions = strings(w.get("admissionReviewVersions"));
        Hook {
            name: meta::str_at(w, "/name").unwrap_or("").to_string(),
            url: cc.get("url").and_then(Value::as_str).map(String::from),
            ca_bundle,
            rules: w
                .get("rules")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default(),
            fail_closed: meta::str_at(w, "/failurePolicy").unwrap_or("Fail") != "Ignore",
            namespace_selector: selector(w.get("namespaceSelector")),
            object_selector: selector(w.get("objectSelector")),
            side_effects_on_dry_run: !matches!(
                meta::str_at(w, "/sideEffects"),
                Some("None") | Some("NoneOnDryRun")
            ),
            timeout: Duration::from_secs(
                w.get("timeoutSeconds")
                    .and_then(Value::as_u64)
                    .unwrap_or(10)
                    .clamp(1, 30),
            ),
            // The first version the apiserver speaks, in its order of preference.
            review_version: if versions.iter().any(|v| v == "v1") || versions.is_empty() {
                "v1"
            } else {
                "v1beta1"
            },
            reinvoke_if_needed: meta::str_at(w, "/reinvocationPolicy") == Some("IfNeeded"),
        }
    }

    /// `rules.Matcher.Matches` for one rule.
    fn rule_matches(rule: &Value, a: &Attributes) -> bool {
        let any_or = |key: &str, v: &str| {
            let list = strings(rule.get(key));
            list.iter().any(|x| x == "*" || x == v)
        };
        let scope = match meta::str_at(rule, "/scope").unwrap_or("*") {
            "Cluster" => a.rt.plural == "namespaces" || a.namespace.is_empty(),
            "Namespaced" => a.rt.plural != "namespaces" && !a.namespace.is_empty(),
            _ => true,
        };
        let resource = strings(rule.get("resources")).iter().any(|r| {
            let (res, sub) = r.split_once('/').unwrap_or((r.as_str(), ""));
            (res == "*" || res == a.rt.plural) && (sub == "*" || sub == a.subresource)
        });
        scope
            && any_or("operations", a.operation.as_str())
            && any_or("apiGroups", &a.rt.group)
            && any_or("apiVersions", &a.rt.version)
            && resource
    }

    /// The namespace's labels decide, except for cluster-scoped objects other than
    /// namespaces, which always match (`namespace.Matcher.MatchNamespaceSelector`).
    fn namespace_matches(&self, store: &Store, a: &Attributes, object: Option<&Value>) -> bool {
        if self.namespace_selector.is_empty() {
            return true;
        }
        if a.rt.plural == "namespaces" && a.rt.group.is_empty() {
            let obj = if a.operation == Operation::Delete {
                a.old_object
            } else {
                object
            };
            return obj.is_some_and(|o| self.namespace_selector.matches_object(o));
        }
        if a.namespace.is_empty() {
            return true;
        }
        store
            .get(&ResourceKey::new("", "namespaces"), "", a.namespace)
            .is_some_and(|ns| self.namespace_selector.matches_object(&ns))
    }

    /// Either the object's or the old object's labels (`object.Matcher.MatchObjectSelector`).
    fn object_matches(&self, a: &Attributes, object: Option<&Value>) -> bool {
        self.object_selector.is_empty()
            || [object, a.old_object]
                .into_iter()
                .flatten()
                .any(|o| self.object_selector.matches_object(o))
    }

    fn matches(&self, store: &Store, a: &Attributes, object: Option<&Value>) -> bool {
        self.rules.iter().any(|r| Self::rule_matches(r, a))
            && self.namespace_matches(store, a, object)
            && self.object_matches(a, object)
    }
}

/// The webhooks of every configuration of this flavor, configurations by name, webhooks in
/// their order (the dispatchers' order).
fn hooks(store: &Store, flavor: Flavor) -> Vec<Hook> {
    let plural = match flavor {
        Flavor::Mutating => "mutatingwebhookconfigurations",
        Flavor::Validating => "validatingwebhookconfigurations",
    };
    let key = ResourceKey::new("admissionregistration.k8s.io", plural);
    let mut configs = store.list(&key, None, None, None, &|_| true).items;
    if configs.is_empty() {
        return vec![];
    }
    configs.sort_by(|a, b| meta::name(a).cmp(meta::name(b)));
    configs
        .iter()
        .flat_map(|c| {
            c.get("webhooks")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        })
        .map(|w| Hook::from_json(&w))
        .collect()
}

/// Whether any webhook configuration exists (the common case: none, and nothing to do).
pub fn any_configured(store: &Store) -> bool {
    [
        "mutatingwebhookconfigurations",
        "validatingwebhookconfigurations",
    ]
    .iter()
    .any(|p| {
        !store
            .list(
                &ResourceKey::new("admissionregistration.k8s.io", p),
                None,
                None,
                None,
                &|_| true,
            )
            .items
            .is_empty()
    })
}

/// The AdmissionReview for one webhook call.
fn review(hook: &Hook, a: &Attributes, object: Option<&Value>, uid: &str) -> Value {
    let gvk = json!({"group": a.rt.group, "version": a.rt.version, "kind": a.rt.kind});
    let gvr = json!({"group": a.rt.group, "version": a.rt.version, "resource": a.rt.plural});
    let mut options = json!({"kind": a.operation.options_kind(), "apiVersion": "meta.k8s.io/v1"});
    if a.dry_run {
        options["dryRun"] = json!(["All"]);
    }
    if let (Some(m), Operation::Create | Operation::Update) = (a.field_manager, a.operation) {
        options["fieldManager"] = json!(m);
    }
    let mut req = json!({
        "uid": uid,
        "kind": gvk, "resource": gvr,
        "requestKind": gvk, "requestResource": gvr,
        "operation": a.operation.as_str(),
        "userInfo": a.user.to_json(),
        "object": object.cloned().unwrap_or(Value::Null),
        "oldObject": a.old_object.cloned().unwrap_or(Value::Null),
        "dryRun": a.dry_run,
        "options": options,
    });
    if !a.subresource.is_empty() {
        req["subResource"] = json!(a.subresource);
        req["requestSubResource"] = json!(a.subresource);
    }
    if !a.name.is_empty() {
        req["name"] = json!(a.name);
    }
    if !a.namespace.is_empty() {
        req["namespace"] = json!(a.namespace);
    }
    json!({
        "apiVersion": format!("admission.k8s.io/{}", hook.review_version),
        "kind": "AdmissionReview",
        "request": req,
    })
}

/// The URL with its path cleaned as client-go's rest client joins it (`path.Join`): envtest
/// writes `https://host:port/` + a path that starts with `/`, and Go servers answer `//path`
/// with a redirect.
fn clean_url_path(url: &str) -> String {
    let Some(scheme_end) = url.find("://") else {
        return url.to_string();
    };
    let rest = &url[scheme_end + 3..];
    let (authority, path_query) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => return url.to_string(),
    };
    let (path, query) = match path_query.find('?') {
        Some(i) => path_query.split_at(i),
        None => (path_query, ""),
    };
    let mut parts: Vec<&str> = vec![];
    for seg in path.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            s => parts.push(s),
        }
    }
    format!(
        "{}://{authority}/{}{query}",
        &url[..scheme_end],
        parts.join("/")
    )
}

/// A webhook's verdict.
struct Answer {
    allowed: bool,
    status: Option<Value>,
    patch: Option<Value>,
    warnings: Vec<String>,
}

/// Call one webhook; `Err` is a failed call (the failurePolicy decides).
fn call_start(
    hook: &Hook,
    a: &Attributes,
    object: Option<&Value>,
) -> Result<(String, client::Call), String> {
    let url = hook
        .url
        .as_deref()
        .ok_or("the simulated API server cannot reach in-cluster services: use clientConfig.url")?;
    let url = format!(
        "{}{}timeout={}s",
        clean_url_path(url),
        if url.contains('?') { '&' } else { '?' },
        hook.timeout.as_secs()
    );
    let uid = uuid::Uuid::new_v4().to_string();
    let body = serde_json::to_vec(&review(hook, a, object, &uid)).map_err(|e| e.to_string())?;
    Ok((
        uid,
        client::spawn_post(&url, &hook.ca_bundle, body, hook.timeout),
    ))
}

fn call_finish(uid: &str, handle: client::Call) -> Result<Answer, String> {
    let body = client::wait(handle).map_err(|e| format!("failed to call webhook: {e}"));
    tracing::debug!(
        uid,
        ok = body.is_ok(),
        "admission webhook answered: {:?}",
        body.as_ref().map(|b| String::from_utf8_lossy(b))
    );
    let body = body?;
    let v: Value = serde_json::from_slice(&body)
        .map_err(|e| format!("received invalid webhook response: {e}"))?;
    let r = v
        .get("response")
        .filter(|r| r.is_object())
        .ok_or("webhook response was absent")?;
    let got = meta::str_at(r, "/uid").unwrap_or("");
    if got != uid {
        return Err(format!("expected response.uid={uid:?}, got {got:?}"));
    }
    let patch = match r.get("patch").and_then(Value::as_str) {
        None => None,
        Some(p) => {
            if meta::str_at(r, "/patchType") != Some("JSONPatch") {
                return Err(format!(
                    "webhook returned response.patch but not response.patchType {:?}",
                    "JSONPatch"
                ));
            }
            let raw = base64::engine::general_purpose::STANDARD
                .decode(p)
                .map_err(|e| format!("decoding response.patch: {e}"))?;
            Some(serde_json::from_slice(&raw).map_err(|e| format!("response.patch: {e}"))?)
        }
    };
    Ok(Answer {
        allowed: r.get("allowed").and_then(Value::as_bool).unwrap_or(false),
        status: r.get("result").or_else(|| r.get("status")).cloned(),
        patch,
        warnings: strings(r.get("warnings")),
    })
}

/// Reasons a webhook may give, kept once each for `ApiError`'s static reason.
fn intern_reason(reason: &str) -> &'static str {
    static SEEN: parking_lot::Mutex<Vec<&'static str>> = parking_lot::Mutex::new(Vec::new());
    let mut seen = SEEN.lock();
    if let Some(r) = seen.iter().find(|r| **r == reason) {
        return r;
    }
    let leaked: &'static str = Box::leak(reason.to_string().into_boxed_str());
    seen.push(leaked);
    leaked
}

/// A denial as `webhookerrors.ToStatusErr` words it.
fn denied(name: &str, status: Option<&Value>) -> ApiError {
    let status = status.cloned().unwrap_or_else(|| json!({}));
    let code = status
        .get("code")
        .and_then(Value::as_u64)
        .map(|c| c as u16)
        .filter(|c| *c >= 400)
        .unwrap_or(400);
    let by = format!("admission webhook {name:?} denied the request");
    let message = meta::str_at(&status, "/message").unwrap_or("");
    let reason = meta::str_at(&status, "/reason").unwrap_or("");
    let message = if !message.is_empty() {
        format!("{by}: {message}")
    } else if !reason.is_empty() {
        format!("{by}: {reason}")
    } else {
        format!("{by} without explanation")
    };
    let mut e = ApiError::new(code, intern_reason(reason), message);
    e.details = status.get("details").cloned();
    e
}

/// A failed call under failurePolicy Fail.
fn failed(name: &str, why: &str) -> ApiError {
    ApiError::internal(format!("failed calling webhook {name:?}: {why}"))
}

fn dry_run_unsupported(name: &str) -> ApiError {
    ApiError::bad_request(format!(
        "admission webhook {name:?} does not support dry run"
    ))
}

/// Run the mutating webhooks over `object` (the request's version); warnings for the response.
/// `default` re-applies scheme defaulting after a patch, as the dispatcher decodes the result.
pub fn mutate(
    store: &Store,
    a: &Attributes,
    object: &mut Value,
    default: &dyn Fn(&mut Value),
) -> ApiResult<Vec<String>> {
    let matching: Vec<Hook> = hooks(store, Flavor::Mutating)
        .into_iter()
        .filter(|h| h.matches(store, a, Some(object)))
        .collect();
    let mut warnings = vec![];
    // Round 0 calls each in order; round 1 calls the IfNeeded ones again when a webhook after
    // them changed the object (reinvocation, once).
    let mut changed_after: Vec<bool> = vec![false; matching.len()];
    for (i, h) in matching.iter().enumerate() {
        if call_mutating(store, h, a, object, default, &mut warnings)? {
            for c in changed_after.iter_mut().take(i) {
                *c = true;
            }
        }
    }
    for (i, h) in matching.iter().enumerate() {
        if h.reinvoke_if_needed && changed_after[i] {
            call_mutating(store, h, a, object, default, &mut warnings)?;
        }
    }
    Ok(warnings)
}

/// One mutating call: whether it changed the object.
fn call_mutating(
    _store: &Store,
    h: &Hook,
    a: &Attributes,
    object: &mut Value,
    default: &dyn Fn(&mut Value),
    warnings: &mut Vec<String>,
) -> ApiResult<bool> {
    if a.dry_run && h.side_effects_on_dry_run {
        return Err(dry_run_unsupported(&h.name));
    }
    let answer = call_start(h, a, Some(object)).and_then(|(uid, t)| call_finish(&uid, t));
    let answer = match answer {
        Ok(x) => x,
        Err(why) if h.fail_closed => return Err(failed(&h.name, &why)),
        Err(why) => {
            tracing::warn!(webhook = %h.name, "failed calling webhook, failing open: {why}");
            return Ok(false);
        }
    };
    warnings.extend(answer.warnings);
    if !answer.allowed {
        return Err(denied(&h.name, answer.status.as_ref()));
    }
    let Some(patch) = answer.patch else {
        return Ok(false);
    };
    let mut next = crate::apiserver::patch::json_patch(object, &patch).map_err(|e| {
        use crate::apiserver::patch::PatchError;
        let why = match e {
            PatchError::Internal(m) | PatchError::BadRequest(m) | PatchError::Rejected(m) => m,
        };
        failed(&h.name, &format!("JSONPatch: {why}"))
    })?;
    default(&mut next);
    let changed = next != *object;
    *object = next;
    Ok(changed)
}

/// Run the validating webhooks (all at once); the first denial or failure in webhook order.
pub fn validate(store: &Store, a: &Attributes, object: Option<&Value>) -> ApiResult<Vec<String>> {
    let matching: Vec<Hook> = hooks(store, Flavor::Validating)
        .into_iter()
        .filter(|h| h.matches(store, a, object))
        .collect();
    if let Some(h) = matching
        .iter()
        .find(|h| a.dry_run && h.side_effects_on_dry_run)
    {
        return Err(dry_run_unsupported(&h.name));
    }
    let calls: Vec<_> = matching
        .iter()
        .map(|h| (h, call_start(h, a, object)))
        .collect();
    let mut warnings = vec![];
    let mut first_error = None;
    for (h, started) in calls {
        let answer = started.and_then(|(uid, t)| call_finish(&uid, t));
        let err = match answer {
            Ok(x) => {
                warnings.extend(x.warnings);
                (!x.allowed).then(|| denied(&h.name, x.status.as_ref()))
            }
            Err(why) if h.fail_closed => Some(failed(&h.name, &why)),
            Err(why) => {
                tracing::warn!(webhook = %h.name, "failed calling webhook, failing open: {why}");
                None
            }
        };
        if first_error.is_none() {
            first_error = err;
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(warnings),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attrs<'a>(
        rt: &'a ResourceType,
        user: &'a UserInfo,
        op: Operation,
        ns: &'a str,
    ) -> Attributes<'a> {
        Attributes {
            operation: op,
            rt,
            subresource: "",
            namespace: ns,
            name: "x",
            old_object: None,
            user,
            dry_run: false,
            field_manager: None,
        }
    }

    fn rt(group: &str, version: &str, plural: &str, kind: &str) -> ResourceType {
        let reg = crate::apiserver::resources::Registry::with_builtins();
        let mut t = (*reg.get(group, version, plural).expect("a built-in")).clone();
        t.kind = kind.into();
        t
    }

    #[test]
    fn rules_match_like_the_rules_matcher() {
        let deploy = rt("apps", "v1", "deployments", "Deployment");
        let u = UserInfo::admin();
        let a = attrs(&deploy, &u, Operation::Create, "default");
        let rule = |v: Value| Hook::rule_matches(&v, &a);
        assert!(rule(
            json!({"operations": ["CREATE"], "apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["deployments"]})
        ));
        assert!(rule(
            json!({"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"]})
        ));
        assert!(!rule(
            json!({"operations": ["UPDATE"], "apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["deployments"]})
        ));
        assert!(!rule(
            json!({"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["deployments"]})
        ));
        assert!(!rule(
            json!({"operations": ["CREATE"], "apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["deployments/status"]})
        ));
        assert!(!rule(
            json!({"operations": ["CREATE"], "apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["deployments"], "scope": "Cluster"})
        ));
        let status = Attributes {
            subresource: "status",
            ..attrs(&deploy, &u, Operation::Update, "default")
        };
        let sub = |v: Value| Hook::rule_matches(&v, &status);
        assert!(sub(
            json!({"operations": ["UPDATE"], "apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["deployments/*"]})
        ));
        assert!(sub(
            json!({"operations": ["UPDATE"], "apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["*/status"]})
        ));
        assert!(!sub(
            json!({"operations": ["UPDATE"], "apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["*"]})
        ));
    }

    #[test]
    fn url_paths_are_cleaned_like_path_join() {
        assert_eq!(
            clean_url_path("https://127.0.0.1:9443//validate-x"),
            "https://127.0.0.1:9443/validate-x"
        );
        assert_eq!(
            clean_url_path("https://h/a/./b/../c/?x=1"),
            "https://h/a/c?x=1"
        );
        assert_eq!(clean_url_path("https://h"), "https://h");
    }

    #[test]
    fn denials_read_like_status_errors() {
        let e = denied(
            "v.example.com",
            Some(&json!({"code": 403, "reason": "Forbidden", "message": "Always denied"})),
        );
        assert_eq!((e.code, e.reason), (403, "Forbidden"));
        assert_eq!(
            e.message,
            "admission webhook \"v.example.com\" denied the request: Always denied"
        );
        let bare = denied("w", None);
        assert_eq!(bare.code, 400);
        assert_eq!(
            bare.message,
            "admission webhook \"w\" denied the request without explanation"
        );
        let f = failed("w", "failed to call webhook: Post \"https://x\": refused");
        assert_eq!(f.code, 500);
        assert!(f
            .message
            .starts_with("Internal error occurred: failed calling webhook \"w\": "));
    }

    #[test]
    fn reviews_carry_the_request() {
        let cm = rt("", "v1", "configmaps", "ConfigMap");
        let u = UserInfo::admin();
        let a = Attributes {
            dry_run: true,
            field_manager: Some("m"),
            ..attrs(&cm, &u, Operation::Create, "ns")
        };
        let h = Hook::from_json(&json!({"name": "h", "admissionReviewVersions": ["v1beta1"]}));
        let r = review(&h, &a, Some(&json!({"data": {}})), "uid-1");
        assert_eq!(r["apiVersion"], "admission.k8s.io/v1beta1");
        let req = &r["request"];
        assert_eq!(req["uid"], "uid-1");
        assert_eq!(
            req["kind"],
            json!({"group": "", "version": "v1", "kind": "ConfigMap"})
        );
        assert_eq!(req["resource"]["resource"], "configmaps");
        assert_eq!(
            (req["operation"].as_str(), req["namespace"].as_str()),
            (Some("CREATE"), Some("ns"))
        );
        assert_eq!(
            req["options"],
            json!({"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1", "dryRun": ["All"], "fieldManager": "m"})
        );
        assert_eq!(req["oldObject"], Value::Null);
        assert!(req.get("subResource").is_none());
    }
}
