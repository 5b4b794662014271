//! Custom resources against their CRD version's structural schema, as apiextensions-apiserver
//! handles them: decoding prunes what the schema does not declare (unless
//! `x-kubernetes-preserve-unknown-fields`) and applies its defaults
//! (pkg/apiserver/schema/pruning, schema/defaulting); the strategy validates the object with
//! kube-openapi's validator (pkg/apiserver/validation: each failure mapped to a `field.Error`
//! by its code) and, with a scale subresource, the replicas its paths point at
//! (registry/customresource/validator.go).

use super::field::{self, BadValue, ErrorList, FieldError, Path};
use crate::apiserver::resources::ResourceType;
use serde_json::{Map, Value};

fn props(schema: &Value) -> Option<&Map<String, Value>> {
    schema.get("properties").and_then(Value::as_object)
}

fn preserves_unknown(schema: &Value) -> bool {
    schema.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true))
}

fn additional(schema: &Value) -> Option<&Value> {
    schema.get("additionalProperties").filter(|a| a.is_object())
}

/// Prune `v` by `schema`, appending the dotted paths of what went to `pruned`.
fn prune(v: &mut Value, schema: &Value, path: &str, pruned: &mut Vec<String>) {
    let child = |k: &str| {
        if path.is_empty() {
            k.to_string()
        } else {
            format!("{path}.{k}")
        }
    };
    match v {
        Value::Object(m) => {
            if let Some(add) = additional(schema) {
                for (k, val) in m.iter_mut() {
                    prune(val, add, &child(k), pruned);
                }
                return;
            }
            let declared = props(schema);
            let keep_unknown = preserves_unknown(schema);
            let keys: Vec<String> = m.keys().cloned().collect();
            for k in keys {
                match declared.and_then(|p| p.get(&k)) {
                    Some(s) => {
                        if let Some(val) = m.get_mut(&k) {
                            prune(val, s, &child(&k), pruned);
                        }
                    }
                    None if keep_unknown => {}
                    None => {
                        m.shift_remove(&k);
                        pruned.push(child(&k));
                    }
                }
            }
        }
        Value::Array(items) => {
            if let Some(s) = schema.get("items") {
                for (i, item) in items.iter_mut().enumerate() {
                    prune(item, s, &format!("{path}[{i}]"), pruned);
                }
            }
        }
        _ => {}
    }
}

/// Structural defaulting: absent properties with a `default` get it, then their children.
fn default(v: &mut Value, schema: &Value) {
    match v {
        Value::Object(m) => {
            if let Some(add) = additional(schema) {
                for val in m.values_mut() {
                    default(val, add);
                }
                return;
            }
            if let Some(p) = props(schema) {
                for (k, s) in p {
                    if !m.contains_key(k) {
                        if let Some(d) = s.get("default") {
                            m.insert(k.clone(), d.clone());
                        }
                    }
                    if let Some(val) = m.get_mut(k) {
                        default(val, s);
                    }
                }
            }
        }
        Value::Array(items) => {
            if let Some(s) = schema.get("items") {
                for item in items {
                    default(item, s);
                }
            }
        }
        _ => {}
    }
}

/// The object as the custom resource decoder leaves it: unknown fields pruned (their dotted
/// paths returned, sorted as the strict decoder reports them), defaults applied. `apiVersion`,
/// `kind` and `metadata` at the root are the object's own.
pub fn prune_and_default(rt: &ResourceType, obj: &mut Value) -> Vec<String> {
    let Some(schema) = rt.schema.as_ref() else {
        return vec![];
    };
    let mut pruned = Vec::new();
    if let Value::Object(m) = obj {
        let keys: Vec<String> = m.keys().cloned().collect();
        for k in keys {
            if matches!(k.as_str(), "apiVersion" | "kind" | "metadata") {
                continue;
            }
            match props(schema).and_then(|p| p.get(&k)) {
                Some(s) => {
                    if let Some(val) = m.get_mut(&k) {
                        prune(val, s, &k, &mut pruned);
                    }
                }
                None if preserves_unknown(schema) => {}
                None => {
                    m.shift_remove(&k);
                    pruned.push(k);
                }
            }
        }
    }
    default(obj, schema);
    pruned.sort();
    pruned
}

/// go-openapi's name of a decoded value's type (`swag`'s view of unstructured JSON).
fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// A value as `err.Value` prints in a field error (`%v` of the Go value).
fn bad_value(v: &Value) -> BadValue {
    match v {
        Value::String(s) => BadValue::Str(s.clone()),
        Value::Bool(b) => BadValue::Bool(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => BadValue::Int(i),
            None => BadValue::Json(v.clone()),
        },
        other => BadValue::Json(other.clone()),
    }
}

/// `%v` of a schema limit (a float64 in go-openapi's spec).
fn limit(v: &Value) -> String {
    match v.as_f64() {
        Some(f) if f.fract() == 0.0 && f.abs() < 1e21 => format!("{}", f as i64),
        Some(f) => format!("{f}"),
        None => v.to_string(),
    }
}

fn type_ok(v: &Value, ty: &str) -> bool {
    match ty {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "boolean" => v.is_boolean(),
        "integer" => v.as_i64().is_some() || v.as_u64().is_some(),
        "number" => v.is_number(),
        _ => true,
    }
}

fn validate_node(v: &Value, schema: &Value, path: &Path, name: &str, errs: &mut ErrorList) {
    let in_body = |what: &str| format!("{name} in body {what}");
    if v.is_null() {
        let nullable = schema.get("nullable") == Some(&Value::Bool(true));
        if let Some(ty) = schema.get("type").and_then(Value::as_str) {
            if !nullable {
                errs.push(type_invalid(
                    path,
                    "null",
                    &in_body(&format!("must be of type {ty}: \"null\"")),
                ));
            }
        }
        return;
    }
    let int_or_string = schema.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true));
    if let Some(ty) = schema.get("type").and_then(Value::as_str) {
        if !int_or_string && !type_ok(v, ty) {
            let actual = type_name(v);
            errs.push(type_invalid(
                path,
                actual,
                &in_body(&format!("must be of type {ty}: \"{actual}\"")),
            ));
        }
    }
    match v {
        // go-openapi's stringValidator stops at its first failure.
        Value::String(s) => {
            let len = s.chars().count() as i64;
            let max = schema.get("maxLength").and_then(Value::as_i64);
            let min = schema.get("minLength").and_then(Value::as_i64);
            let pattern = schema.get("pattern").and_then(Value::as_str);
            if let Some(max) = max.filter(|m| len > *m) {
                errs.push(field::too_long(path, max));
            } else if let Some(min) = min.filter(|m| len < *m) {
                errs.push(field::invalid(
                    path,
                    BadValue::Str(s.clone()),
                    &in_body(&format!("should be at least {min} chars long")),
                ));
            } else if let Some(p) =
                pattern.filter(|p| regex::Regex::new(p).is_ok_and(|re| !re.is_match(s)))
            {
                errs.push(field::invalid(
                    path,
                    BadValue::Str(s.clone()),
                    &in_body(&format!("should match '{p}'")),
                ));
            }
        }
        // The numberValidator checks multipleOf, maximum, minimum, and reports each.
        Value::Number(n) => {
            let x = n.as_f64().unwrap_or(0.0);
            let exclusive = |k: &str| schema.get(k) == Some(&Value::Bool(true));
            if let Some(mult) = schema
                .get("multipleOf")
                .filter(|m| m.as_f64().is_some_and(|m| m > 0.0))
            {
                let m = mult.as_f64().unwrap_or(1.0);
                if (x / m).fract() != 0.0 {
                    errs.push(field::invalid(
                        path,
                        bad_value(v),
                        &in_body(&format!("should be a multiple of {}", limit(mult))),
                    ));
                }
            }
            if let Some(max) = schema.get("maximum") {
                let m = max.as_f64().unwrap_or(f64::MAX);
                if (exclusive("exclusiveMaximum") && x >= m) || x > m {
                    let how = if exclusive("exclusiveMaximum") {
                        "less than"
                    } else {
                        "less than or equal to"
                    };
                    errs.push(field::invalid(
                        path,
                        bad_value(v),
                        &in_body(&format!("should be {how} {}", limit(max))),
                    ));
                }
            }
            if let Some(min) = schema.get("minimum") {
                let m = min.as_f64().unwrap_or(f64::MIN);
                if (exclusive("exclusiveMinimum") && x <= m) || x < m {
                    let how = if exclusive("exclusiveMinimum") {
                        "greater than"
                    } else {
                        "greater than or equal to"
                    };
                    errs.push(field::invalid(
                        path,
                        bad_value(v),
                        &in_body(&format!("should be {how} {}", limit(min))),
                    ));
                }
            }
        }
        // The sliceValidator validates the items, then the item counts.
        Value::Array(items) => {
            if let Some(s) = schema.get("items") {
                for (i, item) in items.iter().enumerate() {
                    validate_node(item, s, &path.index(i), &format!("{name}[{i}]"), errs);
                }
            }
            let n = items.len() as i64;
            if let Some(min) = schema.get("minItems").and_then(Value::as_i64) {
                if n < min {
                    errs.push(field::invalid(
                        path,
                        BadValue::Int(n),
                        &in_body(&format!("should have at least {min} items")),
                    ));
                }
            }
            if let Some(max) = schema.get("maxItems").and_then(Value::as_i64) {
                if n > max {
                    errs.push(field::too_many(path, n, max));
                }
            }
            if schema.get("uniqueItems") == Some(&Value::Bool(true)) {
                let dup = items
                    .iter()
                    .enumerate()
                    .any(|(i, a)| items[..i].contains(a));
                if dup {
                    errs.push(field::invalid(
                        path,
                        BadValue::Json(v.clone()),
                        &in_body("shouldn't contain duplicates"),
                    ));
                }
            }
        }
        _ => {}
    }
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array) {
        if !allowed.contains(v) {
            let values: Vec<String> = allowed
                .iter()
                .map(|a| match a {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect();
            let refs: Vec<&str> = values.iter().map(String::as_str).collect();
            errs.push(field::not_supported(path, bad_value(v), &refs));
        }
    }
    if let Value::Object(m) = v {
        let n = m.len() as i64;
        if let Some(min) = schema.get("minProperties").and_then(Value::as_i64) {
            if n < min {
                errs.push(field::invalid(
                    path,
                    BadValue::Int(n),
                    &in_body(&format!("should have at least {min} properties")),
                ));
            }
        }
        if let Some(max) = schema.get("maxProperties").and_then(Value::as_i64) {
            if n > max {
                errs.push(field::too_many(path, n, max));
            }
        }
        let child_name = |k: &str| {
            if name.is_empty() {
                k.to_string()
            } else {
                format!("{name}.{k}")
            }
        };
        if let Some(add) = additional(schema) {
            for (k, val) in m {
                validate_node(val, add, &path.child(k), &child_name(k), errs);
            }
        }
        if let Some(p) = props(schema) {
            for (k, s) in p {
                if let Some(val) = m.get(k) {
                    validate_node(val, s, &path.child(k), &child_name(k), errs);
                }
            }
        }
        for k in schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            if !m.contains_key(k) {
                errs.push(field::required(&path.child(k), ""));
            }
        }
    }
}

fn type_invalid(path: &Path, actual: &str, detail: &str) -> FieldError {
    let mut e = field::invalid(path, BadValue::Str(actual.to_string()), detail);
    e.kind = field::ErrorType::TypeInvalid;
    e
}

/// `ValidateCustomResource`: the object against the version's schema (metadata is validated
/// as ObjectMeta elsewhere).
pub fn validate_schema(rt: &ResourceType, obj: &Value) -> ErrorList {
    let Some(schema) = rt.schema.as_ref() else {
        return vec![];
    };
    let mut errs = Vec::new();
    let Some(m) = obj.as_object() else {
        return errs;
    };
    for (k, s) in props(schema).into_iter().flatten() {
        if matches!(k.as_str(), "apiVersion" | "kind" | "metadata") {
            continue;
        }
        if let Some(v) = m.get(k) {
            validate_node(v, s, &Path::new(k), k, &mut errs);
        }
    }
    for k in schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        if !m.contains_key(k) {
            errs.push(field::required(&Path::new(k), ""));
        }
    }
    errs
}

/// The replicas a scale subresource reads (`ValidateScaleSpec` / `ValidateScaleStatus`): an
/// int64 at the path, not negative, at most MaxInt32.
fn validate_replicas(obj: &Value, pointer: &str) -> ErrorList {
    let json_path: String = pointer.replace('/', ".");
    let fld = Path::new(&json_path);
    let mut cur = obj;
    let parts: Vec<&str> = pointer.trim_start_matches('/').split('/').collect();
    for (i, p) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        let Some(m) = cur.as_object() else {
            return vec![field::invalid(
                &fld,
                BadValue::Int(0),
                &format!(
                    "{json_path} accessor error: {} is of the type {}, expected map[string]interface{{}}",
                    go_value(cur),
                    go_type(cur)
                ),
            )];
        };
        match m.get(*p) {
            None => return vec![],
            Some(v) if last => {
                let Some(n) = v.as_i64() else {
                    return vec![field::invalid(
                        &fld,
                        BadValue::Int(0),
                        &format!(
                            "{json_path} accessor error: {} is of the type {}, expected int64",
                            go_value(v),
                            go_type(v)
                        ),
                    )];
                };
                if n < 0 {
                    return vec![field::invalid(
                        &fld,
                        BadValue::Int(n),
                        "should be a non-negative integer",
                    )];
                }
                if n > i64::from(i32::MAX) {
                    return vec![field::invalid(
                        &fld,
                        BadValue::Int(n),
                        &format!("should be less than or equal to {}", i32::MAX),
                    )];
                }
                return vec![];
            }
            Some(v) => cur = v,
        }
    }
    vec![]
}

/// `%v` of an unstructured value.
fn go_value(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "<nil>".into(),
        other => other.to_string(),
    }
}

/// `%T` of an unstructured value.
fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_i64() || n.is_u64() => "int64",
        Value::Number(_) => "float64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

/// The custom resource strategy's checks of an object written through the main resource (or,
/// `status`, through the status subresource): the schema, then the scale replicas.
pub fn validate(rt: &ResourceType, obj: &Value, status: bool) -> ErrorList {
    let mut errs = validate_schema(rt, obj);
    if let Some(scale) = &rt.scale {
        let pointer = if status {
            &scale.status_replicas
        } else {
            &scale.spec_replicas
        };
        errs.extend(validate_replicas(obj, pointer));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn gadgets() -> ResourceType {
        let reg = crate::apiserver::resources::Registry::with_builtins();
        let mut rt = (*reg.all()[0]).clone();
        rt.group = "ex.dev".into();
        rt.version = "v1".into();
        rt.kind = "Gadget".into();
        rt.plural = "gadgets".into();
        rt.custom = true;
        rt.scale = Some(crate::apiserver::scale::ScalePaths::from_crd(
            &json!({"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}),
        ));
        rt.schema = Some(json!({"type": "object", "properties": {
            "spec": {"type": "object", "required": ["color"], "properties": {
                "replicas": {"type": "integer", "minimum": 0, "maximum": 10},
                "color": {"type": "string", "enum": ["red", "blue"]},
                "name": {"type": "string", "maxLength": 5, "pattern": "^[a-z]+$"},
                "tags": {"type": "array", "maxItems": 2, "items": {"type": "string"}},
                "size": {"type": "number", "default": 1.5},
                "meta": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                "nested": {"type": "object", "properties": {"a": {"type": "boolean"}}}}},
            "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}}}}));
        rt
    }

    fn messages(errs: &ErrorList) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn decoding_prunes_and_defaults() {
        // What kube-apiserver 1.35 stored for this body.
        let rt = gadgets();
        let mut obj = json!({"apiVersion": "ex.dev/v1", "kind": "Gadget", "metadata": {"name": "d"},
            "spec": {"color": "red", "unknown": 1, "meta": {"x": {"y": 1}}, "nested": {"b": 2}}, "extra": {"q": 1}});
        let pruned = prune_and_default(&rt, &mut obj);
        assert_eq!(pruned, vec!["extra", "spec.nested.b", "spec.unknown"]);
        assert_eq!(
            obj["spec"],
            json!({"color": "red", "meta": {"x": {"y": 1}}, "nested": {}, "size": 1.5})
        );
    }

    #[test]
    fn errors_are_apiextensions() {
        // The messages kube-apiserver 1.35 gave (in the order of the schema's properties; the
        // real order follows Go's map iteration).
        let rt = gadgets();
        let obj = json!({"spec": {"color": "red", "replicas": -1, "name": "TOOLONGNAME", "tags": ["a", "b", "c"], "nested": {"a": "x"}}});
        assert_eq!(
            messages(&validate(&rt, &obj, false)),
            vec![
                "spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0",
                "spec.name: Too long: may not be more than 5 bytes",
                "spec.tags: Too many: 3: must have at most 2 items",
                "spec.nested.a: Invalid value: \"string\": spec.nested.a in body must be of type boolean: \"string\"",
                ".spec.replicas: Invalid value: -1: should be a non-negative integer",
            ]
        );
        let obj = json!({"spec": {"replicas": 11}});
        assert_eq!(
            messages(&validate(&rt, &obj, false)),
            vec![
                "spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10",
                "spec.color: Required value",
            ]
        );
        let obj = json!({"spec": {"color": "green", "replicas": 1.5, "name": "Ab1"}});
        assert_eq!(
            messages(&validate(&rt, &obj, false)),
            vec![
                "spec.replicas: Invalid value: \"number\": spec.replicas in body must be of type integer: \"number\"",
                "spec.color: Unsupported value: \"green\": supported values: \"red\", \"blue\"",
                "spec.name: Invalid value: \"Ab1\": spec.name in body should match '^[a-z]+$'",
                ".spec.replicas: Invalid value: 0: .spec.replicas accessor error: 1.5 is of the type float64, expected int64",
            ]
        );
        let obj = json!({"spec": "str"});
        assert_eq!(
            messages(&validate(&rt, &obj, false)),
            vec![
                "spec: Invalid value: \"string\": spec in body must be of type object: \"string\"",
                ".spec.replicas: Invalid value: 0: .spec.replicas accessor error: str is of the type string, expected map[string]interface{}",
            ]
        );
        let causes = validate(
            &rt,
            &json!({"spec": {"color": "red", "replicas": "x"}}),
            false,
        );
        assert_eq!(causes[0].kind.reason(), "FieldValueTypeInvalid");
    }
}
