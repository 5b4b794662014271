//! What the workload loops share, as upstream's `controller_utils.go` does: controller
//! references, pods from templates, pod readiness, status conditions and int-or-percent values.

use crate::apiserver::meta;
use crate::apiserver::resources::ResourceKey;
use crate::apiserver::store::Store;
use serde_json::{json, Value};
use std::sync::Arc;

/// The ownerReference with `controller: true`, if any.
pub fn controller_of(obj: &Value) -> Option<&Value> {
    obj.pointer("/metadata/ownerReferences")?
        .as_array()?
        .iter()
        .find(|r| r.get("controller") == Some(&json!(true)))
}

/// The ownerReference a controller writes into what it creates.
pub fn controller_ref(owner: &Value, api_version: &str, kind: &str) -> Value {
    json!({"apiVersion": api_version, "kind": kind, "name": meta::name(owner), "uid": meta::uid(owner), "controller": true, "blockOwnerDeletion": true})
}

/// The objects of resource `key` whose controller is the object with `uid` (the store's owner index).
pub fn controlled_by(store: &Store, uid: &str, key: &ResourceKey) -> Vec<Arc<Value>> {
    store
        .dependents_of(uid)
        .into_iter()
        .filter(|(k, o)| k == key && controller_of(o).map(|r| r["uid"] == uid).unwrap_or(false))
        .map(|(_, o)| o)
        .collect()
}

/// A pod from a template, owned by `owner`, as the workload controllers create them.
pub fn pod_from_template(
    template: &Value,
    owner_ref: Value,
    ns: &str,
    generate_name: &str,
) -> Value {
    let spec = template.get("spec").cloned().unwrap_or_else(|| json!({}));
    let mut metadata = json!({"namespace": ns, "ownerReferences": [owner_ref]});
    if !generate_name.is_empty() {
        metadata["generateName"] = json!(generate_name);
    }
    for f in ["labels", "annotations", "finalizers"] {
        if let Some(v) = template
            .pointer(&format!("/metadata/{f}"))
            .filter(|v| !v.is_null())
        {
            metadata[f] = v.clone();
        }
    }
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec})
}

/// Running (or about to run): not finished and not being deleted.
pub fn is_pod_active(pod: &Value) -> bool {
    let phase = meta::str_at(pod, "/status/phase").unwrap_or("");
    phase != "Succeeded" && phase != "Failed" && !meta::is_deleting(pod)
}

pub fn is_pod_ready(pod: &Value) -> bool {
    meta::condition_status(pod, "Ready") == Some("True")
}

/// Condition `ctype` of an object's status, if present.
pub fn condition<'a>(obj: &'a Value, ctype: &str) -> Option<&'a Value> {
    obj.pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c["type"] == ctype)
}

/// An IntOrString such as maxSurge ("25%" or 1) resolved against `total`, rounding percentages
/// up or down as the caller's field requires. Invalid values count as 0.
pub fn int_or_percent(v: Option<&Value>, default: &str, total: i64, round_up: bool) -> i64 {
    let v = v.cloned().unwrap_or_else(|| json!(default));
    match &v {
        Value::Number(n) => n.as_i64().unwrap_or(0),
        Value::String(s) => match s.strip_suffix('%').and_then(|p| p.parse::<i64>().ok()) {
            Some(p) if round_up => (p * total + 99) / 100,
            Some(p) => p * total / 100,
            None => s.parse().unwrap_or(0),
        },
        _ => 0,
    }
}

pub fn i64_at(obj: &Value, pointer: &str) -> Option<i64> {
    obj.pointer(pointer).and_then(Value::as_i64)
}

/// A short, stable hash of a value (FNV-1a over its JSON), printed as Kubernetes' safe
/// alphabet: what `pod-template-hash` and `controller-revision-hash` look like.
pub fn template_hash(v: &Value) -> String {
    let mut h: u32 = 0x811c9dc5;
    for b in serde_json::to_vec(v).unwrap_or_default() {
        h ^= b as u32;
        h = h.wrapping_mul(0x01000193);
    }
    // rand.SafeEncodeString's alphabet: no vowels, no 0/1/3 look-alikes.
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    h.to_string()
        .bytes()
        .map(|d| ALPHABET[(d - b'0') as usize % ALPHABET.len()] as char)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn int_or_percent_rounds_like_the_fenceposts() {
        // maxSurge rounds up, maxUnavailable down (deployment util ResolveFenceposts).
        assert_eq!(int_or_percent(None, "25%", 10, true), 3);
        assert_eq!(int_or_percent(None, "25%", 10, false), 2);
        assert_eq!(int_or_percent(Some(&json!(2)), "25%", 10, false), 2);
        assert_eq!(int_or_percent(Some(&json!("50%")), "25%", 3, true), 2);
        assert_eq!(int_or_percent(Some(&json!("x%")), "25%", 3, true), 0);
    }

    #[test]
    fn template_hashes_are_stable_and_distinct() {
        let a = template_hash(&json!({"spec": {"containers": [{"image": "a"}]}}));
        assert_eq!(
            a,
            template_hash(&json!({"spec": {"containers": [{"image": "a"}]}}))
        );
        assert_ne!(
            a,
            template_hash(&json!({"spec": {"containers": [{"image": "b"}]}}))
        );
        assert!(a.chars().all(|c| "bcdfghjklmnpqrstvwxz2456789".contains(c)));
    }
}
