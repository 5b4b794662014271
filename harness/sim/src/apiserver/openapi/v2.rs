//! The `/openapi/v2` (Swagger 2.0) document: every served path and every definition, built-in and
//! custom. Custom resource schemas are reduced to what v2 can say, as the apiextensions apiserver
//! does, so that kubectl's client-side validation never rejects what the server would accept.

use super::definitions::{self, REF_PREFIX};
use super::paths::{self, Operation, Param, PathItem};
use crate::apiserver::resources::{Registry, ResourceType};
use serde_json::{json, Map, Value};

pub const PRODUCES: &[&str] = &[
    "application/json",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
];

fn param(p: &Param) -> Value {
    let mut v = json!({"name": p.name, "in": p.location, "type": p.ty, "uniqueItems": true});
    if p.location == "path" {
        v["required"] = json!(true);
    }
    v
}

fn operation(o: &Operation, tag: &str) -> Value {
    let mut params: Vec<Value> = o.params.iter().map(param).collect();
    if let Some(body) = &o.body {
        params.insert(0, json!({"name": "body", "in": "body", "required": true, "schema": {"$ref": format!("{REF_PREFIX}{body}")}}));
    }
    let mut responses = Map::new();
    for (code, def) in &o.responses {
        let description = paths::response_description(*code);
        let schema = if def.is_empty() {
            json!({"type": "string"})
        } else {
            json!({"$ref": format!("{REF_PREFIX}{def}")})
        };
        responses.insert(
            code.to_string(),
            json!({"description": description, "schema": schema}),
        );
    }
    responses.insert("401".into(), json!({"description": "Unauthorized"}));
    let mut op = json!({
        "operationId": o.id,
        "produces": PRODUCES,
        "schemes": ["https"],
        "tags": [tag],
        "responses": responses,
    });
    // Discovery and other non-resource operations carry neither.
    if !o.action.is_empty() {
        op["x-kubernetes-action"] = json!(o.action);
    }
    if !o.gvk.is_null() {
        op["x-kubernetes-group-version-kind"] = o.gvk.clone();
    }
    if !o.consumes.is_empty() {
        op["consumes"] = json!(o.consumes);
    }
    if !params.is_empty() {
        op["parameters"] = json!(params);
    }
    op
}

/// Upstream's tag of a group-version's operations: `core_v1`, `apps_v1`, `rbacAuthorization_v1`.
pub fn tag(t: &ResourceType) -> String {
    let g = if t.group.is_empty() {
        "core"
    } else {
        t.group.strip_suffix(".k8s.io").unwrap_or(&t.group)
    };
    let mut parts = g.split('.');
    let mut out = parts.next().unwrap_or_default().to_string();
    for p in parts {
        let mut c = p.chars();
        if let Some(f) = c.next() {
            out.extend(f.to_uppercase());
            out.push_str(c.as_str());
        }
    }
    format!("{out}_{}", t.version)
}

pub fn path_item(item: &PathItem, tag: &str) -> Value {
    let mut v = Map::new();
    for o in &item.operations {
        v.insert(o.method.into(), operation(o, tag));
    }
    v.insert(
        "parameters".into(),
        json!(item.params.iter().map(param).collect::<Vec<_>>()),
    );
    Value::Object(v)
}

/// The members of go-openapi's `spec.Parameter` in the order its MarshalJSON writes them
/// (CommonValidations, SimpleSchema, Refable, then ParamProps; vendor extensions between).
const PARAMETER_KEYS: &[&str] = &[
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "multipleOf",
    "enum",
    "type",
    "format",
    "items",
    "collectionFormat",
    "default",
    "example",
    "$ref",
    "description",
    "name",
    "in",
    "required",
    "schema",
    "allowEmptyValue",
];

/// `json.Marshal` of a parameter: its members in Go's order, compact, HTML characters escaped.
fn go_parameter_json(p: &Value) -> String {
    let Some(m) = p.as_object() else {
        return p.to_string();
    };
    let mut out = Map::new();
    for k in PARAMETER_KEYS {
        if *k == "description" {
            for (ek, ev) in m.iter().filter(|(ek, _)| ek.starts_with("x-")) {
                out.insert(ek.clone(), ev.clone());
            }
        }
        if let Some(v) = m.get(*k) {
            out.insert((*k).to_string(), v.clone());
        }
    }
    Value::Object(out)
        .to_string()
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
}

/// kube-openapi's `base64Hash`: FNV-1 (64 bit) of the text, the first 6 bytes of its big-endian
/// sum in URL-safe base64 (8 characters).
fn base64_hash(s: &str) -> String {
    use base64::Engine as _;
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
        h ^= u64::from(b);
    }
    base64::engine::general_purpose::URL_SAFE.encode(&h.to_be_bytes()[..6])
}

/// The parameter lists of a path item: its own and each operation's.
fn for_each_parameter_list(item: &mut Value, f: &mut dyn FnMut(&mut Vec<Value>)) {
    let Some(m) = item.as_object_mut() else {
        return;
    };
    for (k, v) in m.iter_mut() {
        let list = if k == "parameters" {
            v.as_array_mut()
        } else {
            v.get_mut("parameters").and_then(Value::as_array_mut)
        };
        if let Some(l) = list {
            f(l);
        }
    }
}

/// kube-openapi's `deduplicateParameters` (pkg/builder/parameters.go): every parameter but the
/// endpoint-specific ones (`name`, `fieldValidation`, `dryRun`, bodies of the kind's own
/// schema) moves to the document's `parameters`, named `<name>-<hash of its JSON>`, and the
/// operations and paths refer to it.
fn deduplicate_parameters(paths: &mut Map<String, Value>) -> Map<String, Value> {
    let shared = |p: &Value| -> Option<String> {
        let name = p.get("name").and_then(Value::as_str).unwrap_or("");
        let location = p.get("in").and_then(Value::as_str).unwrap_or("");
        if p.get("$ref").is_some()
            || (matches!(location, "query" | "path") && name == "name")
            || (location == "query" && matches!(name, "fieldValidation" | "dryRun"))
        {
            return None;
        }
        if let Some(r) = p.pointer("/schema/$ref").and_then(Value::as_str) {
            if location == "body"
                && name == "body"
                && !r.starts_with("#/definitions/io.k8s.apimachinery")
            {
                return None;
            }
        }
        Some(go_parameter_json(p))
    };
    let mut by_json: std::collections::BTreeMap<String, Value> = Default::default();
    for item in paths.values_mut() {
        for_each_parameter_list(item, &mut |list| {
            for p in list.iter() {
                if let Some(k) = shared(p) {
                    by_json.entry(k).or_insert_with(|| p.clone());
                }
            }
        });
    }
    let mut names: std::collections::HashMap<String, String> = Default::default();
    let mut params: std::collections::BTreeMap<String, Value> = Default::default();
    for (k, p) in &by_json {
        let base = p.get("name").and_then(Value::as_str).unwrap_or("param");
        let mut name = format!("{base}-{}", base64_hash(k));
        let mut i = 0;
        while params.contains_key(&name) {
            i += 1;
            name = format!("{base}-{i}");
        }
        params.insert(name.clone(), p.clone());
        names.insert(k.clone(), name);
    }
    for item in paths.values_mut() {
        for_each_parameter_list(item, &mut |list| {
            for p in list.iter_mut() {
                if let Some(n) = shared(p).and_then(|k| names.get(&k)) {
                    *p = json!({"$ref": format!("#/parameters/{n}")});
                }
            }
        });
    }
    params.into_iter().collect()
}

/// Reduce a structural v3 schema to what kubectl's v2 validation copes with: no `nullable`,
/// `oneOf`/`anyOf`/`allOf`/`not`; subtrees that preserve unknown fields or may be null are untyped.
pub fn structural_to_v2(schema: &mut Value) {
    let Some(s) = schema.as_object_mut() else {
        return;
    };
    for k in ["allOf", "oneOf", "anyOf", "not"] {
        s.remove(k);
    }
    let nullable = s.remove("nullable") == Some(json!(true));
    if nullable {
        s.remove("type");
    }
    if nullable || s.get("x-kubernetes-preserve-unknown-fields") == Some(&json!(true)) {
        s.remove("items");
        s.remove("properties");
    }
    if s.get("type") == Some(&json!("array")) && !s.contains_key("items") {
        s.remove("type");
    }
    if let Some(Value::Object(props)) = s.get_mut("properties") {
        let nullable_fields: Vec<String> = props
            .iter()
            .filter(|(_, p)| p.get("nullable") == Some(&json!(true)))
            .map(|(k, _)| k.clone())
            .collect();
        props.values_mut().for_each(structural_to_v2);
        if let Some(Value::Array(required)) = s.get_mut("required") {
            required.retain(|r| !nullable_fields.iter().any(|f| r == f));
        }
    }
    if let Some(items) = s.get_mut("items") {
        structural_to_v2(items);
    }
    if let Some(extra @ Value::Object(_)) = s.get_mut("additionalProperties") {
        if extra.get("nullable") == Some(&json!(true)) {
            s.remove("type");
            s.remove("additionalProperties");
        } else {
            structural_to_v2(extra);
        }
    }
}

/// Swagger 2.0 has no untyped int-or-string: upstream's v2 document types these as strings
/// (kubectl's v2 validation accepts numbers for strings; `explain` shows `<string>`).
const STRING_TYPED: &[(&str, Option<&str>)] = &[
    (
        "io.k8s.apimachinery.pkg.util.intstr.IntOrString",
        Some("int-or-string"),
    ),
    ("io.k8s.apimachinery.pkg.api.resource.Quantity", None),
];

/// The whole v2 document for the currently served types.
pub fn document(reg: &Registry) -> Value {
    let mut defs: Map<String, Value> = definitions::builtin()
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    for (name, format) in STRING_TYPED {
        if let Some(Value::Object(d)) = defs.get_mut(*name) {
            d.remove("x-kubernetes-int-or-string");
            d.insert("type".into(), json!("string"));
            if let Some(f) = format {
                d.insert("format".into(), json!(f));
            }
        }
    }
    let mut types = reg.all();
    types.sort_by(|a, b| (&a.group, &a.version, &a.plural).cmp(&(&b.group, &b.version, &b.plural)));
    let mut paths = Map::new();
    for t in &types {
        if t.custom {
            let Some(mut schema) = definitions::custom(t) else {
                continue;
            };
            structural_to_v2(&mut schema);
            let name = definitions::name_of(t);
            defs.insert(format!("{name}List"), definitions::custom_list(t));
            defs.insert(name, schema);
        }
        let tag = tag(t);
        for item in paths::of(t) {
            paths.insert(item.path.clone(), path_item(&item, &tag));
        }
        let discovery = paths::discovery(&t.group, &t.version);
        paths
            .entry(discovery.path.clone())
            .or_insert_with(|| path_item(&discovery, &tag));
    }
    let groups: Vec<String> = types
        .iter()
        .map(|t| t.group.clone())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    for item in paths::non_resource(&groups) {
        paths.insert(item.path.clone(), path_item(&item, "core"));
    }
    let parameters = deduplicate_parameters(&mut paths);
    json!({
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": crate::apiserver::GIT_VERSION},
        "paths": paths,
        "definitions": defs,
        "parameters": parameters,
        "securityDefinitions": {"BearerToken": {"description": "Bearer Token authentication", "type": "apiKey", "name": "authorization", "in": "header"}},
        "security": [{"BearerToken": []}],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nullable_and_open_subtrees_are_untyped_for_v2() {
        let mut s = json!({"type": "object", "required": ["a", "b"], "properties": {
            "a": {"type": "string", "nullable": true},
            "b": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {"x": {"type": "string"}}},
            "c": {"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": true},
        }});
        structural_to_v2(&mut s);
        assert_eq!(s["required"], json!(["b"]));
        assert!(s["properties"]["a"].get("type").is_none());
        assert!(s["properties"]["b"].get("properties").is_none());
        assert!(s["properties"]["c"].get("anyOf").is_none());
    }

    #[test]
    fn document_has_kinds_paths_and_tags() {
        let reg = Registry::with_builtins();
        let doc = document(&reg);
        let op = &doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments"]["post"];
        assert_eq!(op["x-kubernetes-action"], "post");
        assert_eq!(op["tags"], json!(["apps_v1"]));
        assert_eq!(
            op["parameters"][0]["schema"]["$ref"],
            "#/definitions/io.k8s.api.apps.v1.Deployment"
        );
        let crb = &doc["paths"]["/apis/rbac.authorization.k8s.io/v1/clusterroles"]["get"];
        assert_eq!(crb["tags"], json!(["rbacAuthorization_v1"]));
        assert!(
            doc["definitions"]["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
                .is_object()
        );
        let int_or_string = &doc["definitions"]["io.k8s.apimachinery.pkg.util.intstr.IntOrString"];
        assert_eq!(
            (&int_or_string["type"], &int_or_string["format"]),
            (&json!("string"), &json!("int-or-string"))
        );
    }
}
