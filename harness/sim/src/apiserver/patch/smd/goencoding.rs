//! What kube-apiserver's round trip through Go structs does to a JSON object: it decodes a body
//! into the versioned Go type and writes it back with encoding/json, so members tagged
//! `omitempty` that hold their zero value (`0`, `""`, `false`, an empty list or map, null) are
//! left out, `omitzero` members that are zero too (a null `creationTimestamp`), and members
//! without either are written even when the body left them out (a container's `resources: {}`,
//! an Event's `firstTimestamp: null`); an empty list or map without `omitempty` comes back from
//! storage (protobuf) as nil, written as null. The tags come from the Go types themselves
//! (`builtins.json`'s `go` section, written by `upstream/smdschema`).

use super::schema::{GoMember, Omit, Schema, TypeRef};
use serde_json::{Map, Value};

fn is_zero_number(v: &Value) -> bool {
    v.as_f64().is_some_and(|f| f == 0.0)
}

fn omitted(m: &GoMember, v: &Value) -> bool {
    match m.omit {
        Omit::Never | Omit::Nil => false,
        Omit::Null => v.is_null(),
        Omit::Empty => {
            v.is_null()
                || v.as_array().is_some_and(Vec::is_empty)
                || v.as_object().is_some_and(Map::is_empty)
        }
        Omit::EmptyString => v.as_str() == Some(""),
        Omit::ZeroNumber => is_zero_number(v),
        Omit::False => v == &Value::Bool(false),
        Omit::Zero => v.is_null() || *v == m.zero,
    }
}

/// `obj` (an object of built-in `kind` at `api_version`) as the apiserver writes it back: as
/// decoded from a request (`stored` false) or as read back from storage. Objects of other kinds
/// are left alone.
pub(crate) fn round_trip(api_version: &str, kind: &str, obj: &mut Value, stored: bool) {
    let schema = Schema::builtins();
    if let Some(k) = schema.kind(api_version, kind) {
        walk(schema, &k.ty, obj, stored);
    }
}

/// What decoding a body of built-in `kind` into its Go type refuses before anything else looks
/// at it: a quantity that does not parse (`resource.ParseQuantity`). The error text, if any.
pub(crate) fn decode_error(api_version: &str, kind: &str, obj: &Value) -> Option<String> {
    let schema = Schema::builtins();
    let k = schema.kind(api_version, kind)?;
    let mut err = None;
    visit(schema, &k.ty, obj, &mut |ty, v| {
        if err.is_none() && schema.is_quantity(ty) {
            let ok = match v {
                Value::String(s) => crate::apiserver::table::canonical_quantity(s).is_some(),
                Value::Number(n) => {
                    crate::apiserver::table::canonical_quantity(&n.to_string()).is_some()
                }
                _ => true,
            };
            if !ok {
                err = Some(
                    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
                        .to_string(),
                );
            }
        }
    });
    err
}

/// Calls `f` with every value of `v` and its type.
fn visit(schema: &Schema, ty: &TypeRef, v: &Value, f: &mut dyn FnMut(&TypeRef, &Value)) {
    f(ty, v);
    let Some(r) = schema.resolve(ty) else { return };
    match v {
        Value::Array(items) => {
            if let Some(l) = &r.atom.list {
                for item in items {
                    visit(schema, &l.element, item, f);
                }
            }
        }
        Value::Object(m) => {
            if let Some(map) = &r.atom.map {
                for (k, child) in m {
                    visit(schema, map.member_type(k), child, f);
                }
            }
        }
        _ => {}
    }
}

fn walk(schema: &Schema, ty: &TypeRef, v: &mut Value, stored: bool) {
    // `Quantity.MarshalJSON` writes the canonical form (`0.5` is `500m`), a string.
    if schema.is_quantity(ty) {
        let text = match v {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        };
        if let Some(c) = text.and_then(|t| crate::apiserver::table::canonical_quantity(&t)) {
            *v = Value::String(c);
        }
        return;
    }
    if let (Some(go), Value::Object(m)) = (schema.go_struct(ty), &mut *v) {
        let def = schema.resolve(ty).and_then(|r| r.atom.map.as_ref());
        let keys: Vec<String> = m.keys().cloned().collect();
        for k in keys {
            let Some(member) = go.member(&k) else {
                continue;
            };
            let child = m.get_mut(&k).expect("present");
            // A null decodes to the member's zero value (a non-pointer keeps it).
            if child.is_null() && !member.zero.is_null() {
                *child = member.zero.clone();
            }
            if omitted(member, child) {
                m.shift_remove(&k);
                continue;
            }
            if stored
                && member.omit == Omit::Nil
                && (child.as_array().is_some_and(Vec::is_empty)
                    || child.as_object().is_some_and(Map::is_empty))
            {
                *child = Value::Null;
                continue;
            }
            if let Some(f) = def.and_then(|d| d.field(&k)) {
                walk(schema, &f.ty, child, stored);
            }
        }
        for member in &go.members {
            if !m.contains_key(&member.name) && !omitted(member, &member.zero) {
                m.insert(member.name.clone(), member.zero.clone());
            }
        }
        return;
    }
    let Some(r) = schema.resolve(ty) else { return };
    match v {
        Value::Array(items) => {
            if let Some(l) = &r.atom.list {
                for item in items {
                    walk(schema, &l.element, item, stored);
                }
            }
        }
        Value::Object(m) => {
            if let Some(map) = &r.atom.map {
                for (k, child) in m.iter_mut() {
                    walk(schema, map.member_type(k), child, stored);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn zero_members_go_and_required_ones_come() {
        let mut d = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "creationTimestamp": null, "generation": 0, "labels": {}},
            "spec": {"replicas": 0, "paused": false, "template": {"metadata": {"creationTimestamp": null},
                     "spec": {"containers": [{"name": "c", "image": "i", "tty": false, "args": []}]}}},
            "status": {"readyReplicas": 0, "replicas": 2, "conditions": []}});
        round_trip("apps/v1", "Deployment", &mut d, true);
        assert_eq!(
            d,
            json!({"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "d"},
                // replicas is a pointer: its 0 stays; selector has no omitempty: null
                "spec": {"replicas": 0, "template": {"metadata": {},
                         "spec": {"containers": [{"name": "c", "image": "i", "resources": {}}]}},
                         "selector": null, "strategy": {}},
                "status": {"replicas": 2}})
        );
        let mut e = json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e"}, "involvedObject": {"kind": "Pod"}, "count": 1});
        round_trip("v1", "Event", &mut e, true);
        assert_eq!(e["firstTimestamp"], Value::Null);
        assert!(e.get("firstTimestamp").is_some());
        assert_eq!(e["reportingComponent"], json!(""));
        assert_eq!(e["source"], json!({}));
        // an empty list without omitempty is stored as nil
        let mut r = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "r"}, "rules": []});
        let mut decoded = r.clone();
        round_trip("rbac.authorization.k8s.io/v1", "Role", &mut decoded, false);
        assert_eq!(decoded["rules"], json!([]));
        round_trip("rbac.authorization.k8s.io/v1", "Role", &mut r, true);
        assert_eq!(r["rules"], Value::Null);
        // quantities are written canonically
        let mut p = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "0.5", "memory": 1024}}}]}});
        assert_eq!(decode_error("v1", "Pod", &p), None);
        round_trip("v1", "Pod", &mut p, true);
        assert_eq!(
            p["spec"]["containers"][0]["resources"]["requests"],
            json!({"cpu": "500m", "memory": "1024"})
        );
        let bad = json!({"apiVersion": "v1", "kind": "Pod", "spec": {"containers": [{"name": "c", "resources": {"limits": {"cpu": "lots"}}}]}});
        assert!(decode_error("v1", "Pod", &bad)
            .unwrap()
            .starts_with("quantities must match"));
        // unknown kinds are left alone
        let mut w = json!({"apiVersion": "x/v1", "kind": "W", "spec": {"n": 0}});
        round_trip("x/v1", "W", &mut w, true);
        assert_eq!(w["spec"]["n"], 0);
    }
}
