//! The definitions as kube-apiserver 1.35 has them. The schemas come from k8s-openapi, whose
//! types follow a newer Kubernetes; the structured-merge-diff schema generated from 1.35's own
//! OpenAPI definitions (`patch::smd::schema`, `upstream/smdschema`) says which definitions and
//! which properties 1.35 has: those it lacks are dropped, those k8s-openapi lacks are added with
//! the type 1.35 gives them (without a description).

use super::{Definitions, REF_PREFIX};
use crate::apiserver::patch::smd::schema::{Relationship, Scalar, Schema, TypeRef};
use serde_json::{json, Map, Value};

/// A property schema for a field of type `ty` (a reference when it names a definition).
fn schema_of(smd: &Schema, ty: &TypeRef, defs: &Definitions) -> Value {
    if let Some(name) = smd.name_of(ty) {
        if defs.contains_key(name) || is_struct(smd, ty) {
            return json!({"$ref": format!("{REF_PREFIX}{name}")});
        }
    }
    let Some(r) = smd.resolve(ty) else {
        return json!({});
    };
    if let Some(l) = &r.atom.list {
        return json!({"type": "array", "items": schema_of(smd, &l.element, defs)});
    }
    if let Some(m) = &r.atom.map {
        if m.fields.is_empty() {
            return json!({"type": "object", "additionalProperties": schema_of(smd, &m.element, defs)});
        }
    }
    match r.atom.scalar {
        Some(Scalar::String) => json!({"type": "string"}),
        Some(Scalar::Numeric) => json!({"type": "integer"}),
        Some(Scalar::Boolean) => json!({"type": "boolean"}),
        _ => json!({}),
    }
}

/// A struct type: a map with named fields.
fn is_struct(smd: &Schema, ty: &TypeRef) -> bool {
    smd.resolve(ty)
        .and_then(|r| r.atom.map.as_ref())
        .is_some_and(|m| !m.fields.is_empty() || m.er != Relationship::Unset)
}

/// A definition for a 1.35 struct type k8s-openapi does not know.
fn synthesize(smd: &Schema, ty: &TypeRef, defs: &Definitions) -> Option<Value> {
    let m = smd.resolve(ty)?.atom.map.as_ref()?;
    let props: Map<String, Value> = m
        .fields
        .iter()
        .map(|f| (f.name.clone(), schema_of(smd, &f.ty, defs)))
        .collect();
    Some(json!({"type": "object", "properties": props}))
}

fn refs_of(v: &Value, out: &mut Vec<String>) {
    super::refs(v, out);
}

/// Keep what 1.35 serves: definitions it has, with the properties it has.
pub fn to_1_35(defs: &mut Definitions) {
    let smd = Schema::builtins();
    defs.retain(|name, _| smd.named(name).is_some());
    let names: Vec<String> = defs.keys().cloned().collect();
    for name in names {
        let Some(ty) = smd.named(&name) else { continue };
        let Some(m) = smd.resolve(&ty).and_then(|r| r.atom.map.as_ref()) else {
            continue;
        };
        if m.fields.is_empty() {
            continue;
        }
        let missing: Vec<(String, Value)> = {
            let def = &defs[&name];
            let props = def.get("properties").and_then(Value::as_object);
            m.fields
                .iter()
                .filter(|f| props.is_none_or(|p| !p.contains_key(&f.name)))
                .map(|f| (f.name.clone(), schema_of(smd, &f.ty, defs)))
                .collect()
        };
        let Some(def) = defs.get_mut(&name).and_then(Value::as_object_mut) else {
            continue;
        };
        let props = def
            .entry("properties")
            .or_insert_with(|| json!({}))
            .as_object_mut();
        if let Some(props) = props {
            props.retain(|k, _| m.field(k).is_some());
            for (k, v) in missing {
                props.insert(k, v);
            }
        }
        if let Some(Value::Array(required)) = def.get_mut("required") {
            required.retain(|r| r.as_str().is_some_and(|r| m.field(r).is_some()));
        }
    }
    // Definitions the kept ones refer to that k8s-openapi lacks.
    loop {
        let mut wanted = Vec::new();
        for d in defs.values() {
            refs_of(d, &mut wanted);
        }
        let new: Vec<(String, Value)> = wanted
            .into_iter()
            .filter(|n| !defs.contains_key(n))
            .filter_map(|n| {
                let ty = smd.named(&n)?;
                synthesize(smd, &ty, defs).map(|d| (n, d))
            })
            .collect();
        if new.is_empty() {
            break;
        }
        defs.extend(new);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn properties_and_definitions_follow_1_35() {
        let defs = super::super::builtin();
        let pod_spec = &defs["io.k8s.api.core.v1.PodSpec"]["properties"];
        // a 1.35 field (workloadRef, alpha) is there, newer ones are not
        assert!(pod_spec.get("containers").is_some());
        assert!(pod_spec.get("workloadRef").is_some(), "{pod_spec}");
        assert!(defs.contains_key("io.k8s.api.core.v1.WorkloadReference"));
        assert!(!defs.contains_key("io.k8s.api.core.v1.EvictionResponder"));
        assert!(defs.contains_key("io.k8s.apimachinery.pkg.apis.meta.v1.APIResourceList"));
    }
}
