//! A minimal OpenAPI v3 surface: enough for kubectl to see, per group-version-kind, which
//! operations exist and that they take `fieldValidation` (so it validates server-side).
//! Schemas are not published (see docs/fidelity.md); kubectl then falls back to its built-in
//! types for client-side strategic merge, as it does against older servers.

use crate::resources::{Registry, ResourceType};
use serde_json::{json, Map, Value};

fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{}", version)
    } else {
        format!("apis/{}/{}", group, version)
    }
}

fn hash(s: &str) -> String {
    // FNV-1a: stable across runs, changes when the document changes (clients cache by it).
    let mut h: u64 = 0xcbf29ce484222325;
    for b in s.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    format!("{:016X}", h)
}

pub fn root(reg: &Registry) -> Value {
    let mut paths = Map::new();
    let mut gvs: Vec<(String, String)> = reg.all().iter().map(|t| (t.group.clone(), t.version.clone())).collect();
    gvs.sort();
    gvs.dedup();
    for (g, v) in gvs {
        if let Some(doc) = group_version(reg, &gv_path(&g, &v)) {
            let p = gv_path(&g, &v);
            paths.insert(p.clone(), json!({"serverRelativeURL": format!("/openapi/v3/{}?hash={}", p, hash(&doc.to_string()))}));
        }
    }
    json!({"paths": paths})
}

fn params() -> Value {
    json!([
        {"name": "dryRun", "in": "query", "schema": {"type": "string", "uniqueItems": true}},
        {"name": "fieldManager", "in": "query", "schema": {"type": "string", "uniqueItems": true}},
        {"name": "fieldValidation", "in": "query", "schema": {"type": "string", "uniqueItems": true}},
        {"name": "pretty", "in": "query", "schema": {"type": "string", "uniqueItems": true}}
    ])
}

fn operation(t: &ResourceType, action: &str, id: &str) -> Value {
    json!({
        "operationId": id,
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": {"group": t.group, "version": t.version, "kind": t.kind},
        "parameters": params(),
        "responses": {"200": {"description": "OK"}},
    })
}

/// The document for one group-version path such as `api/v1` or `apis/apps/v1`.
pub fn group_version(reg: &Registry, path: &str) -> Option<Value> {
    let parts: Vec<&str> = path.split('/').collect();
    let (group, version) = match parts.as_slice() {
        ["api", v] => ("", *v),
        ["apis", g, v] => (*g, *v),
        _ => return None,
    };
    let mut types = reg.resources_in(group, version);
    if types.is_empty() {
        return None;
    }
    types.sort_by(|a, b| a.plural.cmp(&b.plural));
    let mut paths = Map::new();
    for t in &types {
        let base = format!("/{}", gv_path(group, version));
        let coll = if t.namespaced { format!("{}/namespaces/{{namespace}}/{}", base, t.plural) } else { format!("{}/{}", base, t.plural) };
        let item = format!("{}/{{name}}", coll);
        let id = format!("{}{}", t.kind, t.version);
        paths.insert(coll, json!({"post": operation(t, "post", &format!("create{}", id)), "get": operation(t, "list", &format!("list{}", id)), "parameters": params()}));
        paths.insert(item.clone(), json!({
            "get": operation(t, "get", &format!("read{}", id)),
            "put": operation(t, "put", &format!("replace{}", id)),
            "patch": operation(t, "patch", &format!("patch{}", id)),
            "delete": operation(t, "delete", &format!("delete{}", id)),
            "parameters": params(),
        }));
        if t.has_status() {
            paths.insert(format!("{}/status", item), json!({
                "get": operation(t, "get", &format!("read{}Status", id)),
                "put": operation(t, "put", &format!("replace{}Status", id)),
                "patch": operation(t, "patch", &format!("patch{}Status", id)),
                "parameters": params(),
            }));
        }
    }
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": super::discovery::GIT_VERSION},
        "paths": paths,
        "components": {"schemas": {}},
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_lists_group_versions_and_docs_carry_field_validation() {
        let reg = Registry::with_builtins();
        let r = root(&reg);
        assert!(r["paths"]["api/v1"]["serverRelativeURL"].as_str().unwrap().starts_with("/openapi/v3/api/v1?hash="));
        let doc = group_version(&reg, "api/v1").unwrap();
        let p = &doc["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"]["patch"];
        assert_eq!(p["x-kubernetes-group-version-kind"]["kind"], "Pod");
        assert!(p["parameters"].as_array().unwrap().iter().any(|x| x["name"] == "fieldValidation"));
        assert!(group_version(&reg, "apis/nope/v1").is_none());
    }
}
