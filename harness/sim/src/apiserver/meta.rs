//! Small helpers for reading and writing `metadata` on untyped objects.

use serde_json::{json, Map, Value};

/// `Value::pointer` without its per-token allocations (it unescapes every token into a new
/// String); pointers with `~` escapes go the general way. Same results, including array indices.
pub fn at<'a>(obj: &'a Value, pointer: &str) -> Option<&'a Value> {
    if pointer.is_empty() {
        return Some(obj);
    }
    if pointer.contains('~') || !pointer.starts_with('/') {
        return obj.pointer(pointer);
    }
    let mut cur = obj;
    for tok in pointer[1..].split('/') {
        cur = match cur {
            Value::Object(m) => m.get(tok)?,
            Value::Array(a) => {
                if tok.starts_with('+') || (tok.starts_with('0') && tok.len() != 1) {
                    return None;
                }
                a.get(tok.parse::<usize>().ok()?)?
            }
            _ => return None,
        };
    }
    Some(cur)
}

pub fn str_at<'a>(obj: &'a Value, pointer: &str) -> Option<&'a str> {
    at(obj, pointer).and_then(Value::as_str)
}

pub fn name(obj: &Value) -> &str {
    str_at(obj, "/metadata/name").unwrap_or("")
}

pub fn namespace(obj: &Value) -> &str {
    str_at(obj, "/metadata/namespace").unwrap_or("")
}

pub fn uid(obj: &Value) -> &str {
    str_at(obj, "/metadata/uid").unwrap_or("")
}

pub fn resource_version(obj: &Value) -> &str {
    str_at(obj, "/metadata/resourceVersion").unwrap_or("")
}

pub fn is_deleting(obj: &Value) -> bool {
    at(obj, "/metadata/deletionTimestamp")
        .map(|v| !v.is_null())
        .unwrap_or(false)
}

pub fn finalizers(obj: &Value) -> Vec<String> {
    at(obj, "/metadata/finalizers")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|f| f.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

pub fn set_finalizers(obj: &mut Value, fins: &[String]) {
    let m = metadata_mut(obj);
    if fins.is_empty() {
        m.remove("finalizers");
    } else {
        m.insert("finalizers".into(), Value::from(fins.to_vec()));
    }
}

/// The object's `metadata` map, created if absent or not an object.
pub fn metadata_mut(obj: &mut Value) -> &mut Map<String, Value> {
    if !obj.is_object() {
        *obj = Value::Object(Map::new());
    }
    let map = obj.as_object_mut().expect("object");
    let md = map
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !md.is_object() {
        *md = Value::Object(Map::new());
    }
    md.as_object_mut().expect("metadata object")
}

/// `status` of the condition of type `ctype` in `status.conditions`, e.g. "True".
pub fn condition_status<'a>(obj: &'a Value, ctype: &str) -> Option<&'a str> {
    obj.pointer("/status/conditions")
        .and_then(Value::as_array)?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(ctype))
        .and_then(|c| c.get("status").and_then(Value::as_str))
}

/// Set (or replace) a condition by type, keeping lastTransitionTime when the status is unchanged.
/// `now`: the cluster clock's time (`SimClock::now_rfc3339`).
pub fn set_condition(
    obj: &mut Value,
    ctype: &str,
    status: &str,
    reason: Option<&str>,
    message: Option<&str>,
    now: &str,
) {
    if !obj.get("status").map(Value::is_object).unwrap_or(false) {
        obj["status"] = json!({});
    }
    let conds = obj["status"]
        .as_object_mut()
        .expect("status")
        .entry("conditions")
        .or_insert_with(|| json!([]));
    if !conds.is_array() {
        *conds = json!([]);
    }
    let arr = conds.as_array_mut().expect("array");
    let mut c =
        json!({"type": ctype, "status": status, "lastProbeTime": null, "lastTransitionTime": now});
    if let Some(r) = reason {
        c["reason"] = json!(r);
    }
    if let Some(m) = message {
        c["message"] = json!(m);
    }
    match arr
        .iter_mut()
        .find(|x| x.get("type").and_then(Value::as_str) == Some(ctype))
    {
        Some(existing) => {
            if existing.get("status").and_then(Value::as_str) == Some(status) {
                c["lastTransitionTime"] = existing
                    .get("lastTransitionTime")
                    .cloned()
                    .unwrap_or(json!(now));
            }
            *existing = c;
        }
        None => arr.push(c),
    }
}

/// Set a condition in `status.conditions`, keeping `lastTransitionTime` while the status stays,
/// as the apps/batch/policy helpers do. `extra` adds fields such as lastUpdateTime.
pub fn set_status_condition(
    status: &mut Value,
    ctype: &str,
    cstatus: &str,
    reason: &str,
    message: &str,
    extra: &[(&str, Value)],
    now: &str,
) {
    if !status.is_object() {
        *status = json!({});
    }
    let conds = status
        .as_object_mut()
        .expect("object")
        .entry("conditions")
        .or_insert_with(|| json!([]));
    if !conds.is_array() {
        *conds = json!([]);
    }
    let arr = conds.as_array_mut().expect("array");
    let mut c = json!({"type": ctype, "status": cstatus});
    for (k, v) in extra {
        c[*k] = v.clone();
    }
    c["lastTransitionTime"] = json!(now);
    c["reason"] = json!(reason);
    c["message"] = json!(message);
    match arr.iter_mut().find(|x| x["type"] == ctype) {
        Some(existing) => {
            if existing["status"] == cstatus {
                c["lastTransitionTime"] = existing["lastTransitionTime"].clone();
            }
            *existing = c;
        }
        None => arr.push(c),
    }
}

pub fn labels(obj: &Value) -> Option<&Value> {
    at(obj, "/metadata/labels")
}

pub fn owner_uids(obj: &Value) -> Vec<String> {
    at(obj, "/metadata/ownerReferences")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|r| r.get("uid").and_then(Value::as_str).map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// Would a JSON merge patch of `patch` leave `target` as it is? Every field the patch sets
/// holds the same value already (objects recursively, anything else whole; a null, which
/// deletes, changes a present field).
pub fn merge_is_noop(target: Option<&Value>, patch: &Value) -> bool {
    match (target, patch) {
        (t, Value::Null) => t.is_none() || t == Some(&Value::Null),
        (Some(Value::Object(t)), Value::Object(p)) => {
            p.iter().all(|(k, v)| merge_is_noop(t.get(k), v))
        }
        (Some(t), p) => t == p,
        (None, _) => false,
    }
}

/// Compare two objects member by member without copying either: members named in `skip` are
/// left out, `metadata` is compared leaving out `metadata_skip` (as any member when None), and
/// with `ordered` the members must also come in the same order (what a response shows).
fn same_members(
    a: &Map<String, Value>,
    b: &Map<String, Value>,
    skip: &[&str],
    metadata_skip: Option<&[&str]>,
    ordered: bool,
) -> bool {
    fn kept<'a>(
        m: &'a Map<String, Value>,
        skip: &'a [&str],
    ) -> impl Iterator<Item = (&'a String, &'a Value)> + 'a {
        m.iter().filter(move |(k, _)| !skip.contains(&k.as_str()))
    }
    let same_value = |k: &str, va: &Value, vb: &Value| match (metadata_skip, k, va, vb) {
        (Some(inner), "metadata", Value::Object(ma), Value::Object(mb)) => {
            same_members(ma, mb, inner, None, ordered)
        }
        _ if ordered => identical(va, vb),
        _ => va == vb,
    };
    if ordered {
        let (mut i, mut j) = (kept(a, skip), kept(b, skip));
        loop {
            match (i.next(), j.next()) {
                (None, None) => return true,
                (Some((ka, va)), Some((kb, vb))) if ka == kb && same_value(ka, va, vb) => {}
                _ => return false,
            }
        }
    }
    kept(a, skip).count() == kept(b, skip).count()
        && kept(a, skip).all(|(k, va)| b.get(k).is_some_and(|vb| same_value(k, va, vb)))
}

/// Compare two objects ignoring the fields the server maintains itself on every write
/// (`metadata.resourceVersion`, `metadata.managedFields`), without copying either: every write
/// asks this of the whole object.
pub fn same_content(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(ma), Value::Object(mb)) => same_members(
            ma,
            mb,
            &[],
            Some(&["resourceVersion", "managedFields"]),
            false,
        ),
        _ => a == b,
    }
}

/// Equal in content and in key order (what a response shows); `Value`'s own `==` ignores the
/// order of object members.
pub fn identical(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y.iter())
                    .all(|((ka, va), (kb, vb))| ka == kb && identical(va, vb))
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| identical(p, q))
        }
        _ => a == b,
    }
}

/// `a` and `b` identical (content and order) except for `status` and
/// `metadata.resourceVersion`: a status write that leaves the rest of the stored object as it is
/// (every patch of the status subresource does) needs neither a copy of the stored object nor a
/// decoding of more than its status.
pub fn identical_outside_status(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => same_members(
            x,
            y,
            &["status"],
            Some(&["resourceVersion", "managedFields"]),
            true,
        ),
        _ => false,
    }
}

/// The members other than metadata, status, apiVersion and kind are equal: a change there bumps
/// `metadata.generation`.
pub fn same_spec_part(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => same_members(
            x,
            y,
            &["metadata", "status", "apiVersion", "kind"],
            None,
            false,
        ),
        _ => a == b,
    }
}

/// Put an object's top-level fields in the order the apiserver writes them: `kind`,
/// `apiVersion`, `metadata`, the type's own fields, `status` last (Go struct order; clients'
/// tests compare response texts).
pub fn canonical_order(obj: &mut Value) {
    let Some(m) = obj.as_object_mut() else { return };
    let head = ["kind", "apiVersion", "metadata"];
    let present: Vec<&str> = head
        .iter()
        .copied()
        .filter(|k| m.contains_key(*k))
        .collect();
    let in_order = m
        .keys()
        .take(present.len())
        .map(String::as_str)
        .eq(present.iter().copied())
        && m.keys()
            .next_back()
            .map(|k| k == "status" || !m.contains_key("status"))
            .unwrap_or(true);
    if in_order {
        return;
    }
    let mut old = std::mem::take(m);
    for k in head {
        if let Some(v) = old.shift_remove(k) {
            m.insert(k.into(), v);
        }
    }
    let status = old.shift_remove("status");
    m.extend(old);
    if let Some(s) = status {
        m.insert("status".into(), s);
    }
}

/// `APIObjectVersioner.ParseResourceVersion`: a resourceVersion is a decimal uint64; the error
/// is the field error storage reports (`Invalid value: "abc": strconv.ParseUint: ...`).
pub fn parse_resource_version(rv: &str) -> Result<u64, String> {
    parse_uint(rv).map_err(|why| format!("Invalid value: {rv:?}: {why}"))
}

/// `strconv.ParseUint(s, 10, 64)` with Go's error text.
pub fn parse_uint(s: &str) -> Result<u64, String> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("strconv.ParseUint: parsing {s:?}: invalid syntax"));
    }
    s.parse::<u64>()
        .map_err(|_| format!("strconv.ParseUint: parsing {s:?}: value out of range"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions_keep_transition_time_while_status_holds() {
        let mut st = json!({"conditions": [{"type": "Available", "status": "True", "lastTransitionTime": "2020-01-01T00:00:00Z", "reason": "A", "message": "m"}]});
        set_status_condition(
            &mut st,
            "Available",
            "True",
            "B",
            "n",
            &[],
            "2026-01-02T03:04:05Z",
        );
        assert_eq!(
            st["conditions"][0]["lastTransitionTime"],
            "2020-01-01T00:00:00Z"
        );
        assert_eq!(st["conditions"][0]["reason"], "B");
        set_status_condition(
            &mut st,
            "Available",
            "False",
            "C",
            "o",
            &[],
            "2026-01-02T03:04:05Z",
        );
        assert_ne!(
            st["conditions"][0]["lastTransitionTime"],
            "2020-01-01T00:00:00Z"
        );
        set_status_condition(
            &mut st,
            "Progressing",
            "True",
            "D",
            "p",
            &[],
            "2026-01-02T03:04:05Z",
        );
        assert_eq!(st["conditions"].as_array().unwrap().len(), 2);
    }

    use serde_json::json;

    #[test]
    fn identical_outside_status_sees_order_and_every_part_but_status_and_resource_version() {
        let a = json!({"kind": "Pod", "metadata": {"name": "p", "resourceVersion": "1", "labels": {"x": "1", "y": "2"}}, "spec": {"n": [1, 2]}, "status": {"phase": "Pending"}});
        let new_status = json!({"kind": "Pod", "metadata": {"name": "p", "resourceVersion": "7", "labels": {"x": "1", "y": "2"}}, "spec": {"n": [1, 2]}, "status": {"phase": "Running"}});
        assert!(identical_outside_status(&a, &new_status));
        let no_status = json!({"kind": "Pod", "metadata": {"name": "p", "resourceVersion": "1", "labels": {"x": "1", "y": "2"}}, "spec": {"n": [1, 2]}});
        assert!(identical_outside_status(&a, &no_status));
        for other in [
            json!({"kind": "Pod", "metadata": {"name": "p", "resourceVersion": "1", "labels": {"y": "2", "x": "1"}}, "spec": {"n": [1, 2]}}),
            json!({"kind": "Pod", "metadata": {"name": "p", "resourceVersion": "1", "labels": {"x": "1", "y": "2"}}, "spec": {"n": [2, 1]}}),
            json!({"kind": "Pod", "metadata": {"name": "p", "labels": {"x": "1", "y": "2"}, "uid": "u"}, "spec": {"n": [1, 2]}}),
            json!({"metadata": {"name": "p", "resourceVersion": "1", "labels": {"x": "1", "y": "2"}}, "kind": "Pod", "spec": {"n": [1, 2]}}),
            json!({"kind": "Pod", "metadata": {"name": "p", "resourceVersion": "1", "labels": {"x": "1", "y": "2"}}, "spec": {"n": [1, 2]}, "extra": 1}),
        ] {
            assert!(!identical_outside_status(&a, &other), "{other}");
            assert!(!identical_outside_status(&other, &a), "{other}");
        }
        assert!(identical(
            &json!({"a": 1, "b": 2}),
            &json!({"a": 1, "b": 2})
        ));
        assert!(!identical(
            &json!({"a": 1, "b": 2}),
            &json!({"b": 2, "a": 1})
        ));
    }

    #[test]
    fn same_spec_part_agrees_with_comparing_spec_parts() {
        let objs = [
            json!({"metadata": {"name": "a"}, "spec": {"x": 1}, "status": {"p": 1}}),
            json!({"metadata": {"name": "b"}, "spec": {"x": 1}}),
            json!({"metadata": {"name": "a"}, "spec": {"x": 2}}),
            json!({"kind": "ConfigMap", "data": {"k": "v"}}),
            json!({"kind": "ConfigMap", "data": {"k": "v"}, "binaryData": {}}),
            json!({}),
        ];
        for a in &objs {
            for b in &objs {
                assert_eq!(
                    same_spec_part(a, b),
                    spec_part(a) == spec_part(b),
                    "{a} vs {b}"
                );
            }
        }
    }

    #[test]
    fn same_content_ignores_only_what_the_server_keeps() {
        let a = json!({"kind": "Pod", "metadata": {"name": "p", "resourceVersion": "1", "managedFields": [{"manager": "a"}], "labels": {"x": "1"}}, "status": {"phase": "Running"}});
        let reordered = json!({"status": {"phase": "Running"}, "metadata": {"labels": {"x": "1"}, "name": "p", "resourceVersion": "9"}, "kind": "Pod"});
        assert!(same_content(&a, &reordered));
        for changed in [
            json!({"kind": "Pod", "metadata": {"name": "p", "labels": {"x": "2"}}, "status": {"phase": "Running"}}),
            json!({"kind": "Pod", "metadata": {"name": "p", "labels": {"x": "1"}}, "status": {"phase": "Pending"}}),
            json!({"kind": "Pod", "metadata": {"name": "p", "labels": {"x": "1"}}}),
            json!({"kind": "Pod", "metadata": {"name": "p", "labels": {"x": "1"}, "uid": "u"}, "status": {"phase": "Running"}}),
            json!({"kind": "Pod", "metadata": {"name": "p", "labels": {"x": "1"}}, "status": {"phase": "Running"}, "resourceVersion": "1"}),
        ] {
            assert!(!same_content(&a, &changed), "{changed}");
            assert!(!same_content(&changed, &a), "{changed}");
        }
    }

    #[test]
    fn canonical_order_puts_kind_first_and_status_last() {
        let mut o = json!({"apiVersion": "v1", "status": {}, "data": {}, "metadata": {}, "kind": "ConfigMap"});
        canonical_order(&mut o);
        let keys: Vec<&String> = o.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["kind", "apiVersion", "metadata", "data", "status"]);
        assert_eq!(
            serde_json::to_string(&o).unwrap(),
            r#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{},"data":{},"status":{}}"#
        );
    }

    /// Everything but metadata, status, apiVersion and kind, copied: the plain statement of
    /// what `same_spec_part` compares.
    fn spec_part(obj: &Value) -> Value {
        match obj {
            Value::Object(m) => Value::Object(
                m.iter()
                    .filter(|(k, _)| {
                        !matches!(k.as_str(), "metadata" | "status" | "apiVersion" | "kind")
                    })
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
            ),
            other => other.clone(),
        }
    }

    #[test]
    fn spec_part_ignores_metadata_and_status() {
        let a = json!({"metadata": {"name": "a"}, "spec": {"x": 1}, "status": {"p": 1}});
        let b = json!({"metadata": {"name": "b"}, "spec": {"x": 1}, "status": {"p": 2}});
        assert!(same_spec_part(&a, &b));
        let c = json!({"metadata": {"name": "a"}, "spec": {"x": 2}});
        assert!(!same_spec_part(&a, &c));
    }

    #[test]
    fn at_agrees_with_value_pointer() {
        let v = json!({"metadata": {"name": "n", "a/b": 1, "m~n": 2, "labels": {"x": "y"}}, "list": [10, {"k": "v"}], "": {"e": 3}});
        for p in [
            "",
            "/metadata",
            "/metadata/name",
            "/metadata/labels/x",
            "/metadata/a~1b",
            "/metadata/m~0n",
            "/list/0",
            "/list/1/k",
            "/list/01",
            "/list/+1",
            "/list/2",
            "/list/x",
            "/missing",
            "/metadata/name/deeper",
            "nope",
            "//e",
            "/metadata/",
        ] {
            assert_eq!(at(&v, p), v.pointer(p), "pointer {p:?}");
        }
    }

    #[test]
    fn a_merge_patch_is_a_noop_when_every_field_it_sets_is_already_so() {
        let stored = serde_json::json!({"phase": "Running", "qosClass": "BestEffort", "conditions": [{"type": "Ready"}]});
        assert!(merge_is_noop(
            Some(&stored),
            &serde_json::json!({"phase": "Running", "conditions": [{"type": "Ready"}]})
        ));
        assert!(!merge_is_noop(
            Some(&stored),
            &serde_json::json!({"phase": "Pending"})
        ));
        assert!(!merge_is_noop(
            Some(&stored),
            &serde_json::json!({"podIP": "10.0.0.1"})
        ));
        assert!(!merge_is_noop(
            Some(&stored),
            &serde_json::json!({"qosClass": null})
        ));
        assert!(merge_is_noop(
            Some(&stored),
            &serde_json::json!({"podIP": null})
        ));
        assert!(!merge_is_noop(None, &serde_json::json!({})));
    }
}
