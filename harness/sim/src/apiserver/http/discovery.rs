//! Discovery documents: `/version`, `/api`, `/apis`, per group and group-version, and the
//! aggregated discovery (apidiscovery.k8s.io v2) form client-go and kubectl prefer.

use crate::apiserver::builtins;
use crate::apiserver::resources::{Registry, ResourceType};
use crate::apiserver::GIT_VERSION;
use serde_json::{json, Value};

pub fn version() -> Value {
    json!({
        "major": "1", "minor": "35", "emulationMajor": "1", "emulationMinor": "35",
        "minCompatibilityMajor": "1", "minCompatibilityMinor": "34",
        "gitVersion": GIT_VERSION, "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.25.0", "compiler": "gc", "platform": "linux/amd64"
    })
}

pub fn core_versions(server_address: &str) -> Value {
    json!({
        "kind": "APIVersions", "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}]
    })
}

fn group_json(reg: &Registry, group: &str) -> Value {
    let versions = reg.versions(group);
    let gv = |v: &String| json!({"groupVersion": format!("{}/{}", group, v), "version": v});
    json!({
        "name": group,
        "versions": versions.iter().map(gv).collect::<Vec<_>>(),
        "preferredVersion": versions.first().map(gv).unwrap_or(Value::Null),
    })
}

pub fn groups(reg: &Registry) -> Value {
    let groups: Vec<Value> = reg
        .groups()
        .iter()
        .filter(|g| !g.is_empty())
        .map(|g| group_json(reg, g))
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

pub fn group(reg: &Registry, group: &str) -> Option<Value> {
    if group.is_empty() || reg.versions(group).is_empty() {
        return None;
    }
    let mut g = group_json(reg, group);
    g["kind"] = json!("APIGroup");
    g["apiVersion"] = json!("v1");
    Some(g)
}

/// responseKind of a subresource, as the real server advertises it.
fn sub_kind(t: &ResourceType, sub: &str) -> (String, String, String) {
    match builtins::subresource_kind(sub) {
        Some((g, v, k)) => (g.into(), v.into(), k.into()),
        None => (t.group.clone(), t.version.clone(), t.kind.clone()),
    }
}

fn sub_verbs(sub: &str) -> &'static [&'static str] {
    builtins::subresource_verbs(sub)
}

fn sorted(mut types: Vec<std::sync::Arc<ResourceType>>) -> Vec<std::sync::Arc<ResourceType>> {
    types.sort_by(|a, b| a.plural.cmp(&b.plural));
    types
}

pub fn resource_list(reg: &Registry, group: &str, version: &str) -> Option<Value> {
    let types = sorted(reg.resources_in(group, version));
    if types.is_empty() {
        return None;
    }
    let mut resources = Vec::new();
    for t in &types {
        let mut r = json!({
            "name": t.plural, "singularName": t.singular, "namespaced": t.namespaced, "kind": t.kind, "verbs": t.verbs,
        });
        if !t.short_names.is_empty() {
            r["shortNames"] = json!(t.short_names);
        }
        if !t.categories.is_empty() {
            r["categories"] = json!(t.categories);
        }
        resources.push(r);
        for sub in &t.subresources {
            let (g, v, k) = sub_kind(t, sub);
            let mut r = json!({"name": format!("{}/{}", t.plural, sub), "singularName": "", "namespaced": t.namespaced, "kind": k, "verbs": sub_verbs(sub)});
            if g != t.group || v != t.version {
                r["group"] = json!(g);
                r["version"] = json!(v);
            }
            resources.push(r);
        }
    }
    let gv = if group.is_empty() {
        version.to_string()
    } else {
        format!("{}/{}", group, version)
    };
    Some(
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}),
    )
}

/// Aggregated discovery for `/api` (core only) or `/apis` (every named group).
pub fn aggregated(reg: &Registry, core: bool, api_version: &str) -> Value {
    let groups: Vec<String> = if core {
        vec![String::new()]
    } else {
        reg.groups().into_iter().filter(|g| !g.is_empty()).collect()
    };
    let items: Vec<Value> = groups
        .iter()
        .map(|g| {
            let versions: Vec<Value> = reg
                .versions(g)
                .iter()
                .map(|v| {
                    let resources: Vec<Value> = sorted(reg.resources_in(g, v))
                        .iter()
                        .map(|t| {
                            let subs: Vec<Value> = t
                                .subresources
                                .iter()
                                .map(|s| {
                                    let (sg, sv, sk) = sub_kind(t, s);
                                    json!({"subresource": s, "responseKind": {"group": sg, "version": sv, "kind": sk}, "verbs": sub_verbs(s)})
                                })
                                .collect();
                            let mut r = json!({
                                "resource": t.plural,
                                "responseKind": {"group": t.group, "version": t.version, "kind": t.kind},
                                "scope": if t.namespaced { "Namespaced" } else { "Cluster" },
                                "singularResource": t.singular,
                                "verbs": t.verbs,
                            });
                            if !t.short_names.is_empty() {
                                r["shortNames"] = json!(t.short_names);
                            }
                            if !t.categories.is_empty() {
                                r["categories"] = json!(t.categories);
                            }
                            if !subs.is_empty() {
                                r["subresources"] = json!(subs);
                            }
                            r
                        })
                        .collect();
                    json!({"version": v, "resources": resources, "freshness": "Current"})
                })
                .collect();
            json!({"metadata": {"name": g, "creationTimestamp": null}, "versions": versions})
        })
        .collect();
    json!({"kind": "APIGroupDiscoveryList", "apiVersion": format!("apidiscovery.k8s.io/{}", api_version), "metadata": {}, "items": items})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_resource_list_has_subresources() {
        let reg = Registry::with_builtins();
        let l = resource_list(&reg, "", "v1").unwrap();
        let names: Vec<&str> = l["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["name"].as_str().unwrap())
            .collect();
        for n in [
            "pods",
            "pods/status",
            "pods/log",
            "pods/eviction",
            "pods/binding",
            "nodes",
            "namespaces/finalize",
        ] {
            assert!(names.contains(&n), "{} missing from {:?}", n, names);
        }
        let ev = l["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == "pods/eviction")
            .unwrap();
        assert_eq!(
            (ev["group"].as_str(), ev["kind"].as_str()),
            (Some("policy"), Some("Eviction"))
        );
    }

    #[test]
    fn aggregated_lists_every_group() {
        let reg = Registry::with_builtins();
        let a = aggregated(&reg, false, "v2");
        let names: Vec<&str> = a["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["metadata"]["name"].as_str().unwrap())
            .collect();
        assert!(
            names.contains(&"apps") && names.contains(&"storage.k8s.io") && !names.contains(&"")
        );
        let core = aggregated(&reg, true, "v2");
        assert_eq!(core["items"][0]["versions"][0]["version"], "v1");
    }
}
