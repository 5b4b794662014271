//! CustomResourceDefinitions: validate them, serve their resources once established, and stop
//! serving them when the CRD goes away.

use crate::apiserver::meta;
use crate::apiserver::resources::{Registry, ResourceType};
use crate::apiserver::status::{ApiError, ApiResult};
use serde_json::{json, Value};

pub const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

/// Validate a CRD before it is written, the checks the real apiextensions-apiserver makes that
/// users actually hit. Adds the cleanup finalizer on create.
pub fn prepare(crd: &mut Value) -> ApiResult<()> {
    let name = meta::name(crd).to_string();
    let group = meta::str_at(crd, "/spec/group").unwrap_or("").to_string();
    let plural = meta::str_at(crd, "/spec/names/plural")
        .unwrap_or("")
        .to_string();
    let kind = meta::str_at(crd, "/spec/names/kind")
        .unwrap_or("")
        .to_string();
    let scope = meta::str_at(crd, "/spec/scope").unwrap_or("").to_string();
    let mut causes: Vec<(String, String, &'static str)> = Vec::new();
    if group.is_empty() {
        causes.push((
            "spec.group".into(),
            "Required value".into(),
            "FieldValueRequired",
        ));
    }
    if plural.is_empty() {
        causes.push((
            "spec.names.plural".into(),
            "Required value".into(),
            "FieldValueRequired",
        ));
    }
    if kind.is_empty() {
        causes.push((
            "spec.names.kind".into(),
            "Required value".into(),
            "FieldValueRequired",
        ));
    }
    if scope != "Namespaced" && scope != "Cluster" {
        causes.push((
            "spec.scope".into(),
            format!(
                "Unsupported value: {:?}: supported values: \"Cluster\", \"Namespaced\"",
                scope
            ),
            "FieldValueNotSupported",
        ));
    }
    if !group.is_empty() && !plural.is_empty() && name != format!("{}.{}", plural, group) {
        causes.push((
            "metadata.name".into(),
            format!(
                "Invalid value: {:?}: must be spec.names.plural+\".\"+spec.group",
                name
            ),
            "FieldValueInvalid",
        ));
    }
    let versions = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if versions.is_empty() {
        causes.push((
            "spec.versions".into(),
            "Invalid value: null: must have exactly one version marked as storage version".into(),
            "FieldValueInvalid",
        ));
    } else {
        let storage = versions
            .iter()
            .filter(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
            .count();
        if storage != 1 {
            causes.push((
                "spec.versions".into(),
                format!(
                    "Invalid value: {}: must have exactly one version marked as storage version",
                    storage
                ),
                "FieldValueInvalid",
            ));
        }
        for (i, v) in versions.iter().enumerate() {
            if v.get("name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .is_empty()
            {
                causes.push((
                    format!("spec.versions[{}].name", i),
                    "Required value".into(),
                    "FieldValueRequired",
                ));
            }
        }
    }
    if !causes.is_empty() {
        return Err(ApiError::invalid(
            "apiextensions.k8s.io",
            "CustomResourceDefinition",
            &name,
            causes,
        ));
    }
    Ok(())
}

/// The status a new CRD is stored with (the CRD strategy's `PrepareForCreate`): only its stored
/// version; the naming and establishing controllers fill in the rest right after.
pub fn initial_status(crd: &mut Value) {
    crd["status"] = json!({"storedVersions": stored_versions(crd)});
}

fn stored_versions(crd: &Value) -> Vec<Value> {
    crd.pointer("/spec/versions")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter(|v| v["storage"] == true)
                .map(|v| v["name"].clone())
                .collect()
        })
        .unwrap_or_default()
}

/// The resource types a CRD defines, one per served version.
pub fn resource_types(crd: &Value) -> Vec<ResourceType> {
    let group = meta::str_at(crd, "/spec/group").unwrap_or("").to_string();
    let names = crd
        .pointer("/spec/names")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let plural = names
        .get("plural")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let kind = names
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let singular = names
        .get("singular")
        .and_then(Value::as_str)
        .map(String::from)
        .unwrap_or_else(|| kind.to_lowercase());
    let strings = |v: Option<&Value>| -> Vec<String> {
        v.and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    };
    let short_names = strings(names.get("shortNames"));
    let categories = strings(names.get("categories"));
    let namespaced = meta::str_at(crd, "/spec/scope") == Some("Namespaced");
    let versions = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    versions
        .iter()
        .filter(|v| v.get("served").and_then(Value::as_bool).unwrap_or(true))
        .map(|v| {
            let mut subresources = Vec::new();
            if v.pointer("/subresources/status").is_some() {
                subresources.push("status".to_string());
            }
            if v.pointer("/subresources/scale").is_some() {
                subresources.push("scale".to_string());
            }
            let selectable_fields = v
                .get("selectableFields")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|f| {
                            f.get("jsonPath")
                                .and_then(Value::as_str)
                                .map(|p| p.trim_start_matches('.').to_string())
                        })
                        .collect()
                })
                .unwrap_or_default();
            ResourceType {
                group: group.clone(),
                version: v
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                kind: kind.clone(),
                plural: plural.clone(),
                singular: singular.clone(),
                namespaced,
                short_names: short_names.clone(),
                categories: categories.clone(),
                subresources,
                storage_version: v.get("storage").and_then(Value::as_bool).unwrap_or(false),
                printer_columns: v.get("additionalPrinterColumns").cloned(),
                selectable_fields,
                custom: true,
                verbs: crate::apiserver::resources::CRUD_VERBS,
                round_trip: None,
                scale: v
                    .pointer("/subresources/scale")
                    .map(crate::apiserver::scale::ScalePaths::from_crd),
                schema: v.pointer("/schema/openAPIV3Schema").cloned(),
            }
        })
        .collect()
}

/// Serve the CRD's resources and report it Established (as the apiextensions controllers do).
/// Serve a written CRD's versions, and the status its naming and establishing controllers (run
/// by kube-apiserver, as `kube-apiserver` through the status subresource) give it: None when
/// it already has it.
pub fn establish(registry: &Registry, crd: &Value, now: &str) -> Option<Value> {
    let group = meta::str_at(crd, "/spec/group").unwrap_or("").to_string();
    let plural = meta::str_at(crd, "/spec/names/plural")
        .unwrap_or("")
        .to_string();
    // Versions may have been removed by an update: start from a clean slate for this resource.
    registry.remove_resource(&group, &plural);
    for t in resource_types(crd) {
        registry.insert(t);
    }
    let established = crd
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .map(|c| {
            c.iter()
                .any(|c| c["type"] == "Established" && c["status"] == "True")
        })
        .unwrap_or(false);
    let accepted_same = crd.pointer("/status/acceptedNames") == crd.pointer("/spec/names");
    if established && accepted_same {
        return None;
    }
    let mut next = crd.clone();
    // apiextensions-apiserver's naming controller (status/naming_controller.go).
    meta::set_condition(
        &mut next,
        "NamesAccepted",
        "True",
        Some("NoConflicts"),
        Some("no conflicts found"),
        now,
    );
    meta::set_condition(
        &mut next,
        "Established",
        "True",
        Some("InitialNamesAccepted"),
        Some("the initial names have been accepted"),
        now,
    );
    next["status"]["acceptedNames"] = crd
        .pointer("/spec/names")
        .cloned()
        .unwrap_or_else(|| json!({}));
    next["status"]["storedVersions"] = json!(stored_versions(crd));
    Some(next)
}

pub fn withdraw(registry: &Registry, crd: &Value) {
    let group = meta::str_at(crd, "/spec/group").unwrap_or("");
    let plural = meta::str_at(crd, "/spec/names/plural").unwrap_or("");
    registry.remove_resource(group, plural);
}

/// The CRD storage's Delete: the `Terminating` condition, a CustomResourceDefinitionCondition,
/// which has no `lastProbeTime` (staging/src/k8s.io/apiextensions-apiserver/pkg/registry/
/// customresourcedefinition/etcd.go; apiextensions/v1 types.go).
pub fn mark_terminating(crd: &mut Value, now: &str) {
    meta::set_condition(
        crd,
        "Terminating",
        "True",
        Some("InstanceDeletionPending"),
        Some(
            "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
        ),
        now,
    );
    for c in crd
        .pointer_mut("/status/conditions")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        if let Some(c) = c.as_object_mut() {
            c.shift_remove("lastProbeTime");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deleted_crds_terminating_condition_has_no_probe_time() {
        let mut crd = serde_json::json!({"metadata": {"name": "w.example.com"}, "status": {"conditions": [
            {"type": "Established", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}});
        mark_terminating(&mut crd, "2026-01-02T00:00:00Z");
        let conds = crd["status"]["conditions"].as_array().unwrap();
        assert_eq!(conds[1]["type"], "Terminating");
        assert_eq!(conds[1]["reason"], "InstanceDeletionPending");
        assert!(
            conds.iter().all(|c| c.get("lastProbeTime").is_none()),
            "{conds:?}"
        );
    }

    fn workspace_crd() -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "workspaces.llmsafespaces.dev"},
            "spec": {"group": "llmsafespaces.dev", "scope": "Namespaced",
                "names": {"plural": "workspaces", "singular": "workspace", "kind": "Workspace", "shortNames": ["ws"]},
                "versions": [{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
                    "additionalPrinterColumns": [{"name": "Phase", "type": "string", "jsonPath": ".status.phase"}]}]}
        })
    }

    #[test]
    fn valid_crd_gets_types_and_no_finalizer_before_its_delete() {
        let mut c = workspace_crd();
        prepare(&mut c).unwrap();
        assert!(meta::finalizers(&c).is_empty());
        let types = resource_types(&c);
        assert_eq!(types.len(), 1);
        assert!(types[0].has_status() && types[0].namespaced && types[0].custom);
        assert_eq!(types[0].short_names, vec!["ws"]);
    }

    #[test]
    fn wrong_name_and_scope_are_invalid() {
        let mut c = workspace_crd();
        c["metadata"]["name"] = json!("workspaces.example.com");
        c["spec"]["scope"] = json!("Global");
        let e = prepare(&mut c).unwrap_err();
        assert_eq!(e.code, 422);
        assert!(
            e.message
                .contains("spec.scope: Unsupported value: \"Global\""),
            "{}",
            e.message
        );
        assert!(e.message.contains("metadata.name"), "{}", e.message);
    }
}
