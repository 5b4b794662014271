//! Pruning a custom resource by its CRD version's structural schema, as apiextensions-apiserver
//! does when it decodes one (pkg/apiserver/schema/pruning/algorithm.go): fields the schema does
//! not specify are dropped unless `x-kubernetes-preserve-unknown-fields` keeps them; `apiVersion`,
//! `kind` and `metadata` stay at the root and in `x-kubernetes-embedded-resource` objects. The
//! dropped paths are what `fieldValidation` warns about or refuses (`unknown field "spec.x"`).
//! Value validation (types, formats, enums, CEL) and defaulting are not done here.

use serde_json::Value;

/// Prune `obj` in place by `schema` (an `openAPIV3Schema`); the paths dropped, in order.
pub fn prune(obj: &mut Value, schema: &Value) -> Vec<String> {
    let mut dropped = vec![];
    walk(obj, schema, "", true, &mut dropped);
    dropped
}

fn preserves(schema: &Value) -> bool {
    schema
        .get("x-kubernetes-preserve-unknown-fields")
        .and_then(Value::as_bool)
        == Some(true)
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// `root`: the object's own root or an embedded resource, whose type and metadata are kept.
fn walk(v: &mut Value, schema: &Value, path: &str, root: bool, dropped: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            let props = schema.get("properties").and_then(Value::as_object);
            let additional = schema.get("additionalProperties");
            let embedded = root
                || schema
                    .get("x-kubernetes-embedded-resource")
                    .and_then(Value::as_bool)
                    == Some(true);
            let keep_unknown = preserves(schema) || matches!(additional, Some(Value::Bool(true)));
            let keys: Vec<String> = m.keys().cloned().collect();
            for k in keys {
                if embedded && matches!(k.as_str(), "apiVersion" | "kind" | "metadata") {
                    continue;
                }
                let child_path = join(path, &k);
                let child_schema = props
                    .and_then(|p| p.get(&k))
                    .or(additional.filter(|a| a.is_object()));
                match child_schema {
                    Some(s) => {
                        if let Some(c) = m.get_mut(&k) {
                            walk(c, s, &child_path, false, dropped);
                        }
                    }
                    None if keep_unknown => {}
                    None => {
                        m.shift_remove(&k);
                        dropped.push(child_path);
                    }
                }
            }
        }
        Value::Array(items) => {
            if let Some(s) = schema.get("items") {
                for (i, item) in items.iter_mut().enumerate() {
                    walk(item, s, &format!("{path}[{i}]"), false, dropped);
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
    fn unknown_fields_are_dropped_and_named() {
        let schema = json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {
                "replicas": {"type": "integer"},
                "items": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                "template": {"type": "object", "x-kubernetes-embedded-resource": true, "properties": {"spec": {"type": "object"}}}
            }}
        }});
        let mut o = json!({
            "apiVersion": "x/v1", "kind": "X", "metadata": {"name": "a"},
            "spec": {"replicas": 1, "bogus": true,
                     "items": [{"name": "n", "extra": 1}],
                     "labels": {"a": "b"},
                     "free": {"anything": {"deep": 1}},
                     "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {}, "spec": {}, "other": 2}},
            "status": {"ready": true}
        });
        let dropped = prune(&mut o, &schema);
        assert_eq!(
            dropped,
            vec![
                "spec.bogus",
                "spec.items[0].extra",
                "spec.template.other",
                "status"
            ]
        );
        assert_eq!(
            o,
            json!({
                "apiVersion": "x/v1", "kind": "X", "metadata": {"name": "a"},
                "spec": {"replicas": 1, "items": [{"name": "n"}], "labels": {"a": "b"},
                         "free": {"anything": {"deep": 1}},
                         "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {}, "spec": {}}}
            })
        );
    }

    #[test]
    fn a_preserving_root_keeps_everything() {
        let mut o = json!({"apiVersion": "x/v1", "kind": "X", "spec": {"a": 1}});
        let schema = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
        assert!(prune(&mut o, &schema).is_empty());
        assert_eq!(o["spec"]["a"], 1);
    }
}
