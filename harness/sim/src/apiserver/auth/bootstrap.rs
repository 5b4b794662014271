//! The default ClusterRoles and ClusterRoleBindings every cluster starts with
//! (`bootstrap.yaml`), labelled and annotated as the apiserver's bootstrap policy writes them.

use super::rbac::{self, GROUP};
use crate::apiserver::{ApiServer, WriteOptions};
use anyhow::{Context, Result};
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;

const POLICY: &str = include_str!("bootstrap.yaml");

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Policy {
    cluster_roles: Vec<Role>,
    cluster_role_bindings: Vec<Binding>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Role {
    name: String,
    #[serde(default)]
    labels: BTreeMap<String, String>,
    #[serde(default)]
    rules: Vec<Value>,
    aggregation_rule: Option<Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Binding {
    name: String,
    role: String,
    groups: Vec<String>,
    /// Created by kubeadm rather than the apiserver (no bootstrapping label).
    #[serde(default)]
    kubeadm: bool,
}

fn policy() -> Result<Policy> {
    serde_yaml::from_str(POLICY).context("auth/bootstrap.yaml")
}

/// Create the default roles and bindings, then fill in the aggregated roles' rules.
pub fn create_defaults(api: &ApiServer) -> Result<()> {
    let p = policy()?;
    let opts = WriteOptions {
        field_manager: Some("kube-apiserver".into()),
        ..Default::default()
    };
    let roles = api
        .resource(GROUP, "v1", "clusterroles")
        .map_err(anyhow::Error::msg)?;
    let bindings = api
        .resource(GROUP, "v1", "clusterrolebindings")
        .map_err(anyhow::Error::msg)?;
    let defaults_meta = |name: &str, mut labels: BTreeMap<String, String>| {
        labels.insert("kubernetes.io/bootstrapping".into(), "rbac-defaults".into());
        json!({"name": name, "labels": labels, "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"}})
    };
    for r in &p.cluster_roles {
        let mut o = json!({"apiVersion": format!("{}/v1", GROUP), "kind": "ClusterRole", "metadata": defaults_meta(&r.name, r.labels.clone()), "rules": r.rules});
        if let Some(a) = &r.aggregation_rule {
            o["aggregationRule"] = a.clone();
        }
        api.create(&roles, "", o, &opts)
            .map_err(anyhow::Error::msg)
            .with_context(|| format!("ClusterRole {}", r.name))?;
    }
    for b in &p.cluster_role_bindings {
        let subjects: Vec<Value> = b
            .groups
            .iter()
            .map(|g| json!({"apiGroup": GROUP, "kind": "Group", "name": g}))
            .collect();
        let meta = if b.kubeadm {
            json!({"name": b.name})
        } else {
            defaults_meta(&b.name, BTreeMap::new())
        };
        let o = json!({"apiVersion": format!("{}/v1", GROUP), "kind": "ClusterRoleBinding", "metadata": meta,
                       "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": b.role}, "subjects": subjects});
        api.create(&bindings, "", o, &opts)
            .map_err(anyhow::Error::msg)
            .with_context(|| format!("ClusterRoleBinding {}", b.name))?;
    }
    // What the clusterrole-aggregation controller writes (view before edit before admin).
    for r in p
        .cluster_roles
        .iter()
        .rev()
        .filter(|r| r.aggregation_rule.is_some())
    {
        let stored = api.get(&roles, "", &r.name).map_err(anyhow::Error::msg)?;
        let mut o = stored.clone();
        o["rules"] = json!(rbac::cluster_role_rules(api, &stored));
        api.update(
            &roles,
            "",
            &r.name,
            None,
            o,
            &WriteOptions {
                field_manager: Some("clusterrole-aggregation-controller".into()),
                ..Default::default()
            },
        )
        .map_err(anyhow::Error::msg)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    #[test]
    fn a_system_masters_member_reviews_the_rules_of_its_bindings() {
        let api = crate::apiserver::ApiServer::new(100);
        create_defaults(&api).unwrap();
        let (rules, errors) = crate::apiserver::auth::rbac::rules_for(
            &api,
            &crate::apiserver::auth::UserInfo::admin(),
            "",
        );
        assert!(errors.is_empty(), "{errors:?}");
        let has = |r: Value| rules.contains(&r);
        assert!(
            has(json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]})),
            "{rules:?}"
        );
        assert!(
            rules.iter().any(|r| r["resources"]
                .as_array()
                .is_some_and(|a| a.contains(&json!("selfsubjectreviews")))),
            "system:basic-user's, through system:authenticated: {rules:?}"
        );
        assert!(rules.len() > 2, "{rules:?}");
    }

    #[test]
    fn the_policy_file_parses() {
        let p = policy().expect("bootstrap.yaml");
        assert!(p.cluster_roles.iter().any(|r| r.name == "cluster-admin"));
        for b in &p.cluster_role_bindings {
            assert!(
                p.cluster_roles.iter().any(|r| r.name == b.role),
                "binding {} names a missing role",
                b.name
            );
        }
    }
}
