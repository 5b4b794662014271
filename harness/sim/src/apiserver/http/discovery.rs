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
    if sub == "proxy" {
        // NodeProxyOptions, PodProxyOptions, ServiceProxyOptions.
        return (
            String::new(),
            "v1".into(),
            format!("{}ProxyOptions", t.kind),
        );
    }
    match builtins::subresource_kind(sub) {
        Some((g, v, k)) => (g.into(), v.into(), k.into()),
        None => (t.group.clone(), t.version.clone(), t.kind.clone()),
    }
}

fn sub_verbs(sub: &str) -> &'static [&'static str] {
    builtins::subresource_verbs(sub)
}

/// `storageVersionHash` as `discovery.StorageVersionHash` computes it: the first 8 bytes of the
/// SHA-256 of "group/version/kind" of the version the resource is stored in, base64. Resources
/// without storage (bindings, reviews, componentstatuses) have none.
fn storage_version_hash(reg: &Registry, t: &ResourceType) -> Option<String> {
    use base64::Engine as _;
    use sha2::Digest as _;
    if t.create_only() || (t.group.is_empty() && t.plural == "componentstatuses") {
        return None;
    }
    // The storage versions 1.35 configures apart from the preferred one
    // (pkg/kubeapiserver/default_storage_factory_builder.go, apiextensions' v1beta1 storage).
    let (g, v, k) = match (t.group.as_str(), t.plural.as_str()) {
        ("events.k8s.io", "events") => (String::new(), "v1".to_string(), "Event".to_string()),
        ("autoscaling", "horizontalpodautoscalers") => {
            ("autoscaling".into(), "v2".into(), t.kind.clone())
        }
        ("storage.k8s.io", "volumeattributesclasses") => {
            ("storage.k8s.io".into(), "v1beta1".into(), t.kind.clone())
        }
        ("apiextensions.k8s.io", "customresourcedefinitions") => (
            "apiextensions.k8s.io".into(),
            "v1beta1".into(),
            t.kind.clone(),
        ),
        _ => {
            let stored = reg.storage_type(&t.key());
            let s = stored.as_deref().unwrap_or(t);
            (s.group.clone(), s.version.clone(), s.kind.clone())
        }
    };
    let digest = sha2::Sha256::digest(format!("{}/{}/{}", g, v, k).as_bytes());
    Some(base64::engine::general_purpose::STANDARD.encode(&digest[..8]))
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
        if let Some(h) = storage_version_hash(reg, t) {
            r["storageVersionHash"] = json!(h);
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

/// An aggregated discovery responseKind's group and version: the built-in handlers leave them
/// empty when they are the resource's own (the legacy list's rule); apiextensions fills them in.
fn response_gv(t: &ResourceType, g: String, v: String) -> (String, String) {
    if !t.custom && g == t.group && v == t.version {
        (String::new(), String::new())
    } else {
        (g, v)
    }
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
                                    let (sg, sv) = response_gv(t, sg, sv);
                                    json!({"subresource": s, "responseKind": {"group": sg, "version": sv, "kind": sk}, "verbs": sub_verbs(s)})
                                })
                                .collect();
                            let (rg, rv) = response_gv(t, t.group.clone(), t.version.clone());
                            let mut r = json!({
                                "resource": t.plural,
                                "responseKind": {"group": rg, "version": rv, "kind": t.kind},
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
    fn storage_version_hashes_are_upstreams() {
        // The values kube-apiserver 1.35 publishes.
        let reg = Registry::with_builtins();
        let hash = |g: &str, v: &str, name: &str| {
            resource_list(&reg, g, v).unwrap()["resources"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["name"] == name)
                .unwrap()
                .get("storageVersionHash")
                .cloned()
        };
        assert_eq!(hash("", "v1", "configmaps"), Some(json!("qFsyl6wFWjQ=")));
        assert_eq!(
            hash("events.k8s.io", "v1", "events"),
            Some(json!("r2yiGXH7wu8="))
        );
        assert_eq!(
            hash("autoscaling", "v1", "horizontalpodautoscalers"),
            Some(json!("qwQve8ut294="))
        );
        assert_eq!(
            hash("storage.k8s.io", "v1", "volumeattributesclasses"),
            Some(json!("Bl3MtjZ/n/s="))
        );
        assert_eq!(
            hash("apps", "v1", "controllerrevisions"),
            Some(json!("85nkx63pcBU="))
        );
        assert_eq!(hash("", "v1", "bindings"), None);
        assert_eq!(hash("", "v1", "pods/status"), None);
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
        // a built-in's own group and version are left empty, a subresource's other kind is not
        let apps = a["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["metadata"]["name"] == "apps")
            .unwrap();
        let deploy = apps["versions"][0]["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["resource"] == "deployments")
            .unwrap();
        assert_eq!(
            deploy["responseKind"],
            json!({"group": "", "version": "", "kind": "Deployment"})
        );
        let scale = deploy["subresources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["subresource"] == "scale")
            .unwrap();
        assert_eq!(
            scale["responseKind"],
            json!({"group": "autoscaling", "version": "v1", "kind": "Scale"})
        );
    }
}
