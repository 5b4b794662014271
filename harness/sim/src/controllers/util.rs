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
/// alphabet: what `pod-template-hash` looks like. **Simplified**: upstream hashes the Go dump of
/// the template (`controller.ComputeHash`), so the values differ from a real cluster's.
pub fn template_hash(v: &Value) -> String {
    let mut h: u32 = 0x811c9dc5;
    for b in serde_json::to_vec(v).unwrap_or_default() {
        h ^= b as u32;
        h = h.wrapping_mul(0x01000193);
    }
    safe_encode(&h.to_string())
}

/// `rand.SafeEncodeString` (apimachinery pkg/util/rand): each character's code point picks a
/// letter of an alphabet without vowels or look-alikes.
pub fn safe_encode(s: &str) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    s.chars()
        .map(|c| ALPHABET[c as usize % ALPHABET.len()] as char)
        .collect()
}

/// `history.HashControllerRevision` (pkg/controller/history/controller_history.go): 32-bit
/// FNV-1 over the revision's raw data (the patch as `json.Marshal` writes a decoded map: keys
/// sorted, HTML-safe escapes), then the collision count in decimal, safe-encoded.
pub fn controller_revision_hash(data: &Value, collision_count: Option<i64>) -> String {
    let mut raw = String::new();
    go_marshal_sorted(data, &mut raw);
    if let Some(n) = collision_count {
        raw.push_str(&n.to_string());
    }
    let mut h: u32 = 0x811c9dc5;
    for b in raw.bytes() {
        h = h.wrapping_mul(0x01000193);
        h ^= b as u32;
    }
    safe_encode(&h.to_string())
}

/// `encoding/json.Marshal` of a value decoded into `map[string]interface{}`: objects with sorted
/// keys, no spaces, Go's string escapes (HTML-safe `<`, `>`, `&`, and U+2028/U+2029).
pub fn go_marshal_sorted(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&go_number(n)),
        Value::String(s) => go_string(s, out),
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                go_marshal_sorted(x, out);
            }
            out.push(']');
        }
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                go_string(k, out);
                out.push(':');
                go_marshal_sorted(&m[k], out);
            }
            out.push('}');
        }
    }
}

/// A number as Go writes the float64 it was decoded into: integers plainly, others in the
/// shortest form (exponent notation below 1e-6 or from 1e21, as `strconv.FormatFloat` 'e').
fn go_number(n: &serde_json::Number) -> String {
    if let Some(i) = n.as_i64().filter(|i| i.unsigned_abs() < 1 << 53) {
        return i.to_string();
    }
    let f = n.as_f64().unwrap_or(0.0);
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        // Go: mantissa, 'e', sign, at least two exponent digits.
        let s = format!("{f:e}");
        let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
        let e: i32 = e.parse().unwrap_or(0);
        let sign = if e < 0 { '-' } else { '+' };
        format!("{m}e{sign}{:02}", e.abs())
    } else if f.fract() == 0.0 && abs < 1e21 {
        format!("{f:.0}")
    } else {
        format!("{f}")
    }
}

fn go_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                out.push_str(&format!("\\u{:04x}", c as u32))
            }
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
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

    #[test]
    fn controller_revision_hash_is_upstreams() {
        // A StatefulSet's first revision on kube-apiserver/kube-controller-manager 1.35.4:
        // `ss1-6df89c6f7d`.
        let data = json!({"spec": {"template": {"$patch": "replace", "metadata": {"labels": {"app": "ss"}},
            "spec": {"containers": [{"image": "busybox:1.36", "imagePullPolicy": "IfNotPresent", "name": "c", "resources": {},
                "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"}],
                "dnsPolicy": "ClusterFirst", "restartPolicy": "Always", "schedulerName": "default-scheduler",
                "securityContext": {}, "terminationGracePeriodSeconds": 30}}}});
        assert_eq!(controller_revision_hash(&data, Some(0)), "6df89c6f7d");
        let mut s = String::new();
        go_marshal_sorted(&json!({"b": "<&>", "a": [1, 2.5, "x\ny"]}), &mut s);
        assert_eq!(s, r#"{"a":[1,2.5,"x\ny"],"b":"\u003c\u0026\u003e"}"#);
        assert_eq!(safe_encode("0123456789"), "456789bcdf");
    }
}
