//! The `/openapi/v3` documents: one per group-version, holding that group-version's paths and the
//! schemas they reach, and a root index naming each with the hash clients cache by.

use super::definitions::{self, DELETE_OPTIONS, REF_PREFIX, STATUS, WATCH_EVENT};
use super::paths::{self, Operation, Param, PathItem};
use crate::apiserver::resources::{Registry, ResourceType};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

const V3_PREFIX: &str = "#/components/schemas/";

/// A v2-style schema in v3 form: references point into `components/schemas`, and a reference with
/// sibling keywords (a field's description) is wrapped in `allOf` as upstream writes it.
pub fn to_v3(schema: &Value) -> Value {
    match schema {
        Value::Object(m) => {
            let mut out: Map<String, Value> =
                m.iter().map(|(k, v)| (k.clone(), to_v3(v))).collect();
            if let Some(Value::String(r)) = out.get("$ref").cloned() {
                let r = r.replacen(REF_PREFIX, V3_PREFIX, 1);
                if out.len() == 1 {
                    out.insert("$ref".into(), json!(r));
                } else {
                    out.remove("$ref");
                    out.insert("allOf".into(), json!([{"$ref": r}]));
                }
            }
            Value::Object(out)
        }
        Value::Array(a) => Value::Array(a.iter().map(to_v3).collect()),
        v => v.clone(),
    }
}

fn schema_ref(def: &str) -> Value {
    json!({"$ref": format!("{V3_PREFIX}{def}")})
}

fn param(p: &Param) -> Value {
    let mut v =
        json!({"name": p.name, "in": p.location, "schema": {"type": p.ty, "uniqueItems": true}});
    if p.location == "path" {
        v["required"] = json!(true);
    }
    v
}

fn operation(o: &Operation, tag: &str) -> Value {
    let mut responses = Map::new();
    for (code, def) in &o.responses {
        let description = paths::response_description(*code);
        let content: Map<String, Value> = super::v2::PRODUCES
            .iter()
            .map(|m| {
                let schema = if def.is_empty() {
                    json!({"type": "string"})
                } else {
                    schema_ref(def)
                };
                (m.to_string(), json!({"schema": schema}))
            })
            .collect();
        responses.insert(
            code.to_string(),
            json!({"description": description, "content": content}),
        );
    }
    responses.insert("401".into(), json!({"description": "Unauthorized"}));
    let mut op = json!({
        "operationId": o.id,
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
    if !o.params.is_empty() {
        op["parameters"] = json!(o.params.iter().map(param).collect::<Vec<_>>());
    }
    if let Some(body) = &o.body {
        let content: Map<String, Value> = o
            .consumes
            .iter()
            .map(|m| (m.to_string(), json!({"schema": schema_ref(body)})))
            .collect();
        op["requestBody"] = json!({"content": content, "required": true});
    }
    op
}

fn path_item(item: &PathItem, tag: &str) -> Value {
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

/// `api/v1` or `apis/<group>/<version>`: how the root index and the URL name a group-version.
pub fn gv_key(group: &str, version: &str) -> String {
    paths::base_path(group, version)
        .trim_start_matches('/')
        .to_string()
}

/// The document of one group-version.
fn group_version_doc(types: &[std::sync::Arc<ResourceType>]) -> Value {
    let mut custom: BTreeMap<String, Value> = BTreeMap::new();
    let mut items = Vec::new();
    let mut out_paths = Map::new();
    for t in types {
        if t.custom {
            let Some(schema) = definitions::custom(t) else {
                continue;
            };
            let name = definitions::name_of(t);
            custom.insert(format!("{name}List"), definitions::custom_list(t));
            custom.insert(name, schema);
        }
        let tag = super::v2::tag(t);
        for item in paths::of(t) {
            out_paths.insert(item.path.clone(), path_item(&item, &tag));
            items.push(item);
        }
    }
    // The group-version's own discovery document.
    if let Some(t) = types.first() {
        let item = paths::discovery(&t.group, &t.version);
        out_paths.insert(item.path.clone(), path_item(&item, &super::v2::tag(t)));
        items.push(item);
    }
    document_of(out_paths, &items, &custom)
}

/// A document of some paths with the schemas they reach.
fn document_of(
    out_paths: Map<String, Value>,
    items: &[PathItem],
    custom: &BTreeMap<String, Value>,
) -> Value {
    let builtin = definitions::builtin();
    let roots = paths::named_definitions(items)
        .into_iter()
        .chain([STATUS, DELETE_OPTIONS, WATCH_EVENT].map(String::from));
    let schemas = definitions::closure(roots, |n| custom.get(n).or_else(|| builtin.get(n)));
    let schemas: Map<String, Value> = schemas.iter().map(|(k, v)| (k.clone(), to_v3(v))).collect();
    json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": crate::apiserver::GIT_VERSION},
        "paths": out_paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {"BearerToken": {"type": "apiKey", "description": "Bearer Token authentication", "name": "authorization", "in": "header"}},
        },
    })
}

/// Every group-version's document, keyed by `gv_key`.
pub fn documents(reg: &Registry) -> BTreeMap<String, Value> {
    let mut by_gv: BTreeMap<String, Vec<std::sync::Arc<ResourceType>>> = BTreeMap::new();
    let mut types = reg.all();
    types.sort_by(|a, b| (&a.group, &a.version, &a.plural).cmp(&(&b.group, &b.version, &b.plural)));
    for t in types {
        by_gv
            .entry(gv_key(&t.group, &t.version))
            .or_default()
            .push(t);
    }
    let groups: Vec<String> = by_gv
        .values()
        .filter_map(|ts| ts.first())
        .map(|t| t.group.clone())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let mut docs: BTreeMap<String, Value> = by_gv
        .into_iter()
        .map(|(k, types)| (k, group_version_doc(&types)))
        .collect();
    // The documents of the paths outside group-versions, keyed by their path as upstream's
    // index names them (`api`, `apis`, `apis/apps`, `version`, ...).
    for item in paths::non_resource(&groups) {
        let key = item.path.trim_matches('/').to_string();
        let tag = match key.as_str() {
            "api" => "core".to_string(),
            "apis" => "apis".to_string(),
            "version" => "version".to_string(),
            k if k.starts_with("apis/") => k.trim_start_matches("apis/").to_string(),
            _ => "WellKnown".to_string(),
        };
        let mut p = Map::new();
        p.insert(item.path.clone(), path_item(&item, &tag));
        docs.insert(
            key,
            document_of(p, std::slice::from_ref(&item), &BTreeMap::new()),
        );
    }
    docs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refs_with_descriptions_become_all_of() {
        let v = to_v3(
            &json!({"properties": {"spec": {"$ref": "#/definitions/a.B", "description": "d"}, "x": {"$ref": "#/definitions/a.C"}}}),
        );
        assert_eq!(
            v["properties"]["spec"],
            json!({"allOf": [{"$ref": "#/components/schemas/a.B"}], "description": "d"})
        );
        assert_eq!(
            v["properties"]["x"],
            json!({"$ref": "#/components/schemas/a.C"})
        );
    }

    #[test]
    fn group_version_docs_hold_their_paths_and_reachable_schemas() {
        let reg = Registry::with_builtins();
        let docs = documents(&reg);
        let apps = &docs["apis/apps/v1"];
        let schemas = apps["components"]["schemas"].as_object().unwrap();
        assert!(
            schemas.contains_key("io.k8s.api.apps.v1.Deployment")
                && schemas.contains_key("io.k8s.api.core.v1.PodSpec")
        );
        assert!(
            !schemas.contains_key("io.k8s.api.core.v1.Node"),
            "apps/v1 reaches no Node schema"
        );
        let patch =
            &apps["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"];
        assert!(patch["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["name"] == "fieldValidation"));
        assert_eq!(
            patch["x-kubernetes-group-version-kind"]["kind"],
            "Deployment"
        );
        assert!(docs.contains_key("api/v1"));
    }
}
