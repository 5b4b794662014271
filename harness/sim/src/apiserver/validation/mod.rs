//! Validation of request bodies, as kube-apiserver's does it: the schema checks of built-in
//! bodies through each type's k8s-openapi decoding (a body that does not decode is a 400;
//! unknown fields per `fieldValidation`), then the strategies' `Validate` / `ValidateUpdate`:
//! one rule set per kind, each in the file of its API group as upstream's
//! `pkg/apis/<group>/validation` (`KINDS` names the upstream function of each), errors typed
//! as apimachinery's `field.ErrorList` (`field`) and rendered in one place.

pub mod access;
pub mod apps;
pub mod batch;
pub mod content;
pub mod coordination;
pub mod core;
pub mod customresource;
pub mod field;
pub mod networking;
pub mod objectmeta;
pub mod options;
pub mod pod;
pub mod policy;
pub mod rbac;
pub mod storage;
pub mod structural;

use crate::apiserver::resources::ResourceType;
use crate::apiserver::status::{ApiError, ApiResult};
use content::NameRule;
use field::{ErrorList, FieldError};
use serde_json::Value;

/// The built-in type's decoding (`None` for custom resources, which pass through unchanged).
fn typed_round_trip(rt: &ResourceType, obj: &Value) -> Option<Result<Value, String>> {
    rt.round_trip.map(|decode| decode(obj))
}

/// Decode a built-in object through its type, as the apiserver's decoder does: a body that does
/// not decode is a 400, and fields the type does not know are dropped (custom resources pass
/// through unchanged).
pub fn prune_typed(rt: &ResourceType, mut obj: Value) -> ApiResult<Value> {
    if let (true, Some(schema)) = (rt.custom, rt.schema.as_ref()) {
        // A custom resource: pruned by its version's structural schema.
        structural::prune(&mut obj, schema);
        return Ok(obj);
    }
    match typed_round_trip(rt, &obj) {
        Some(Err(e)) => Err(cannot_handle(
            rt,
            &rt.kind,
            &rt.version,
            &go_decode_error(&e),
        )),
        Some(Ok(pruned)) => Ok(pruned),
        None => Ok(obj),
    }
}

/// `prune_typed` for a write of the status subresource. When the written object is the stored
/// one but for its status (every status patch), only the status can be new, and only it is
/// decoded (a status alone decodes for every built-in type whose other parts are optional; for
/// the others the whole object is). Otherwise the whole object is, as the apiserver decodes
/// the whole body.
pub fn prune_typed_status(rt: &ResourceType, current: &Value, mut obj: Value) -> ApiResult<Value> {
    if rt.round_trip.is_none() || !crate::apiserver::meta::identical_outside_status(&obj, current) {
        return prune_typed(rt, obj);
    }
    let Some(status) = obj
        .as_object_mut()
        .and_then(|m| m.get_mut("status"))
        .map(std::mem::take)
    else {
        return Ok(obj);
    };
    let mut alone = serde_json::Map::new();
    for k in ["apiVersion", "kind"] {
        if let Some(v) = obj.get(k) {
            alone.insert(k.into(), v.clone());
        }
    }
    alone.insert("metadata".into(), Value::Object(Default::default()));
    alone.insert("status".into(), status);
    let alone = Value::Object(alone);
    match typed_round_trip(rt, &alone) {
        Some(Ok(mut pruned)) => {
            match pruned.as_object_mut().and_then(|m| m.remove("status")) {
                Some(s) => obj["status"] = s,
                None => {
                    obj.as_object_mut().map(|m| m.shift_remove("status"));
                }
            }
            Ok(obj)
        }
        // The type needs more than its status to decode: decode it whole.
        _ => {
            let Value::Object(mut alone) = alone else {
                unreachable!("built as an object")
            };
            obj["status"] = alone.remove("status").unwrap_or(Value::Null);
            prune_typed(rt, obj)
        }
    }
}

/// The decoder's 400 (`transformDecodeError` with the body's kind): `<Kind> in version "<v>"
/// cannot be handled as a <resource's Kind>: <why>`.
fn cannot_handle(rt: &ResourceType, kind: &str, version: &str, why: &str) -> ApiError {
    ApiError::bad_request(format!(
        "{kind} in version {version:?} cannot be handled as a {}: {why}",
        rt.kind
    ))
}

/// What Go's decoding says where the typed (serde) decoding failed, as far as the two speak of
/// the same thing: base64 of `[]byte` fields (`illegal base64 data at input byte N`).
fn go_decode_error(e: &str) -> String {
    if let Some(rest) = e.strip_prefix("Invalid symbol ") {
        if let Some(offset) = rest.split("offset ").nth(1) {
            return format!(
                "illegal base64 data at input byte {}",
                offset.trim_end_matches('.')
            );
        }
    }
    e.to_string()
}

/// The serializer's view of a built-in body's kind: a kind its apiVersion does not register,
/// or another kind than the resource's (no conversion between them). Missing parts are the
/// resource's own (the decoder's defaults).
fn check_body_kind(rt: &ResourceType, obj: &Value) -> ApiResult<()> {
    let kind = obj
        .get("kind")
        .and_then(Value::as_str)
        .filter(|k| !k.is_empty())
        .unwrap_or(&rt.kind);
    let api_version = obj
        .get("apiVersion")
        .and_then(Value::as_str)
        .filter(|v| !v.is_empty())
        .map(String::from)
        .unwrap_or_else(|| rt.api_version());
    if kind == rt.kind && api_version == rt.api_version() {
        return Ok(());
    }
    let version = api_version.rsplit('/').next().unwrap_or("");
    let registered = crate::apiserver::patch::smd::schema::Schema::builtins()
        .kind(&api_version, kind)
        .is_some();
    if !registered {
        return Err(cannot_handle(
            rt,
            kind,
            version,
            &format!(
                "no kind {kind:?} is registered for version {api_version:?} in scheme \"pkg/runtime/scheme.go:111\""
            ),
        ));
    }
    if kind != rt.kind {
        // The internal package of the resource's group (core for the legacy group and events).
        let internal = match rt.group.as_str() {
            "" | "events.k8s.io" => "core",
            g => g.split('.').next().unwrap_or(g),
        };
        return Err(cannot_handle(
            rt,
            kind,
            version,
            &format!(
                "converting ({version}.{kind}) to ({internal}.{}): unknown conversion",
                rt.kind
            ),
        ));
    }
    Ok(())
}

/// A custom resource status write: the schema and the scale status replicas
/// (`ValidateStatusUpdate`'s custom resource checks).
pub fn validate_custom_status(rt: &ResourceType, obj: &Value) -> ApiResult<()> {
    let errs = customresource::validate(rt, obj, true);
    if errs.is_empty() {
        Ok(())
    } else {
        Err(invalid(rt, obj, &errs))
    }
}

/// Unknown-field handling per `fieldValidation`. Returns warnings for `Warn`.
pub fn check_fields(rt: &ResourceType, obj: &Value, mode: Option<&str>) -> ApiResult<Vec<String>> {
    if !rt.custom && obj.is_object() {
        check_body_kind(rt, obj)?;
    }
    if !rt.custom {
        if let Some(e) =
            crate::apiserver::patch::smd::goencoding::decode_error(&rt.api_version(), &rt.kind, obj)
        {
            return Err(ApiError::bad_request(format!(
                "{kind} in version {version:?} cannot be handled as a {kind}: {e}",
                kind = rt.kind,
                version = rt.version
            )));
        }
    }
    let mode = mode.unwrap_or("Warn");
    if !matches!(mode, "Strict" | "Warn" | "Ignore") {
        return Err(ApiError::bad_request(format!(
            "fieldValidation: Unsupported value: {:?}: supported values: \"Ignore\", \"Strict\", \"Warn\"",
            mode
        )));
    }
    if mode == "Ignore" {
        return Ok(vec![]);
    }
    if rt.custom {
        // The custom resource decoder reports what its schema prunes.
        let unknown = customresource::prune_and_default(rt, &mut obj.clone());
        let list: Vec<String> = unknown
            .iter()
            .map(|f| format!("unknown field {:?}", f))
            .collect();
        if mode == "Strict" && !list.is_empty() {
            return Err(cannot_handle(
                rt,
                &rt.kind,
                &rt.version,
                &format!("strict decoding error: {}", list.join(", ")),
            ));
        }
        return Ok(list);
    }
    let known = match typed_round_trip(rt, obj) {
        Some(Ok(v)) => v,
        Some(Err(e)) => {
            return Err(cannot_handle(
                rt,
                &rt.kind,
                &rt.version,
                &go_decode_error(&e),
            ))
        }
        None => return Ok(vec![]),
    };
    let mut unknown = Vec::new();
    unknown_fields(obj, &known, String::new(), &mut unknown);
    if unknown.is_empty() {
        return Ok(vec![]);
    }
    if mode == "Strict" {
        let list: Vec<String> = unknown
            .iter()
            .map(|f| format!("unknown field {:?}", f))
            .collect();
        return Err(cannot_handle(
            rt,
            &rt.kind,
            &rt.version,
            &format!("strict decoding error: {}", list.join(", ")),
        ));
    }
    Ok(unknown
        .iter()
        .map(|f| format!("unknown field {:?}", f))
        .collect())
}

/// Paths present in `input` but absent from its typed re-encoding `known`.
fn unknown_fields(input: &Value, known: &Value, path: String, out: &mut Vec<String>) {
    match (input, known) {
        (Value::Object(i), Value::Object(k)) => {
            for (key, v) in i {
                let p = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{}.{}", path, key)
                };
                match k.get(key) {
                    Some(kv) => unknown_fields(v, kv, p, out),
                    // Empty and null values re-encode as absent; they are not unknown.
                    None if is_empty_value(v) => {}
                    None if is_free_form(&path) => {}
                    None => out.push(p),
                }
            }
        }
        (Value::Array(i), Value::Array(k)) => {
            for (n, (iv, kv)) in i.iter().zip(k.iter()).enumerate() {
                unknown_fields(iv, kv, format!("{}[{}]", path, n), out);
            }
        }
        _ => {}
    }
}

/// `null` decodes to an absent optional field: not unknown. (Empty maps and lists re-encode.)
fn is_empty_value(v: &Value) -> bool {
    v.is_null()
}

/// Maps whose keys are data, not schema (labels, annotations, data, ...): re-encoding keeps them,
/// so they never reach here; kept as a guard for JSON-typed fields.
fn is_free_form(path: &str) -> bool {
    path.ends_with("openAPIV3Schema") || path.contains("x-kubernetes")
}

/// One built-in kind's validation: its strategy's `Validate` and `ValidateUpdate`.
pub struct KindRules {
    pub group: &'static str,
    pub kind: &'static str,
    /// The upstream functions, in `pkg/apis/<group>/validation/validation.go` unless named.
    pub upstream: &'static str,
    pub create: fn(&Value) -> ErrorList,
    pub update: fn(&Value, &Value) -> ErrorList,
}

/// The kinds with their own rules, one per line: group, kind, the upstream functions (in
/// `pkg/apis/<group>/validation/validation.go`), create and update rules. Kinds not listed get
/// the ObjectMeta rules (`objectmeta::validate_object_meta`, names as DNS subdomains; RBAC
/// names as path segments).
#[rustfmt::skip]
pub const KINDS: &[KindRules] = &[
    k("", "Pod", "core: ValidatePodCreate, ValidatePodUpdate", pod::validate_pod_create, pod::validate_pod_update),
    k("", "Service", "core: ValidateServiceCreate, ValidateServiceUpdate", core::validate_service_create, core::validate_service_update),
    k("", "ConfigMap", "core: ValidateConfigMap, ValidateConfigMapUpdate", core::validate_config_map, core::validate_config_map_update),
    k("", "Secret", "core: ValidateSecret, ValidateSecretUpdate", core::validate_secret, core::validate_secret_update),
    k("", "Namespace", "core: ValidateNamespace, ValidateNamespaceUpdate", core::validate_namespace, core::validate_namespace_update),
    k("", "ServiceAccount", "core: ValidateServiceAccount, ValidateServiceAccountUpdate", core::validate_service_account, core::validate_service_account_update),
    k("", "PersistentVolumeClaim", "core: ValidatePersistentVolumeClaim, ValidatePersistentVolumeClaimUpdate", core::validate_pvc, core::validate_pvc_update),
    k("", "PersistentVolume", "core: ValidatePersistentVolume, ValidatePersistentVolumeUpdate", core::validate_pv, core::validate_pv_update),
    k("", "Node", "core: ValidateNode, ValidateNodeUpdate", core::validate_node, core::validate_node_update),
    k("", "ReplicationController", "core: ValidateReplicationController, ValidateReplicationControllerUpdate", core::validate_rc, core::validate_rc_update),
    k("apps", "Deployment", "apps: ValidateDeployment, ValidateDeploymentUpdate", apps::validate_deployment, apps::validate_deployment_update),
    k("apps", "ReplicaSet", "apps: ValidateReplicaSet, ValidateReplicaSetUpdate", apps::validate_replica_set, apps::validate_replica_set_update),
    k("apps", "StatefulSet", "apps: ValidateStatefulSet, ValidateStatefulSetUpdate", apps::validate_stateful_set, apps::validate_stateful_set_update),
    k("apps", "DaemonSet", "apps: ValidateDaemonSet, ValidateDaemonSetUpdate", apps::validate_daemon_set, apps::validate_daemon_set_update),
    k("batch", "Job", "batch: ValidateJob, ValidateJobUpdate", batch::validate_job, batch::validate_job_update),
    k("batch", "CronJob", "batch: ValidateCronJobCreate, ValidateCronJobUpdate", batch::validate_cron_job_create, batch::validate_cron_job_update),
    k("networking.k8s.io", "Ingress", "networking: ValidateIngressCreate, ValidateIngressUpdate", networking::validate_ingress_create, networking::validate_ingress_update),
    k("networking.k8s.io", "NetworkPolicy", "networking: ValidateNetworkPolicy, ValidateNetworkPolicyUpdate", networking::validate_network_policy, networking::validate_network_policy_update),
    k("policy", "PodDisruptionBudget", "policy: ValidatePodDisruptionBudget (the spec; metadata by rest.BeforeCreate)", policy::validate_pdb, policy::validate_pdb_update),
    k("rbac.authorization.k8s.io", "Role", "rbac: ValidateRole, ValidateRoleUpdate", rbac::validate_role, rbac::validate_role_update),
    k("rbac.authorization.k8s.io", "ClusterRole", "rbac: ValidateClusterRole, ValidateClusterRoleUpdate", rbac::validate_cluster_role, rbac::validate_cluster_role_update),
    k("rbac.authorization.k8s.io", "RoleBinding", "rbac: ValidateRoleBinding, ValidateRoleBindingUpdate", rbac::validate_role_binding, rbac::validate_role_binding_update),
    k("rbac.authorization.k8s.io", "ClusterRoleBinding", "rbac: ValidateClusterRoleBinding, ValidateClusterRoleBindingUpdate", rbac::validate_cluster_role_binding, rbac::validate_cluster_role_binding_update),
    k("storage.k8s.io", "StorageClass", "storage: ValidateStorageClass, ValidateStorageClassUpdate", storage::validate_storage_class, storage::validate_storage_class_update),
    k("coordination.k8s.io", "Lease", "coordination: ValidateLease, ValidateLeaseUpdate", coordination::validate_lease, coordination::validate_lease_update),
];

const fn k(
    group: &'static str,
    kind: &'static str,
    upstream: &'static str,
    create: fn(&Value) -> ErrorList,
    update: fn(&Value, &Value) -> ErrorList,
) -> KindRules {
    KindRules {
        group,
        kind,
        upstream,
        create,
        update,
    }
}

fn rules_for(rt: &ResourceType) -> Option<&'static KindRules> {
    if rt.custom {
        return None;
    }
    KINDS
        .iter()
        .find(|k| k.group == rt.group && k.kind == rt.kind)
}

/// The name rule of kinds without their own rules.
fn default_name_rule(rt: &ResourceType) -> NameRule {
    if rt.group == "rbac.authorization.k8s.io" {
        NameRule::PathSegment
    } else {
        NameRule::Subdomain
    }
}

/// The 422 of a failed validation of `obj`.
fn invalid(rt: &ResourceType, obj: &Value, errs: &[FieldError]) -> ApiError {
    field::invalid_status(&rt.group, &rt.kind, crate::apiserver::meta::name(obj), errs)
}

/// `rest.BeforeCreate`'s validation: the strategy's `Validate` of the defaulted object.
pub fn validate_create(rt: &ResourceType, obj: &Value) -> ApiResult<()> {
    let mut errs = match rules_for(rt) {
        Some(k) => (k.create)(obj),
        None => objectmeta::validate_object_meta(obj, rt.namespaced, default_name_rule(rt)),
    };
    if rt.custom {
        errs.extend(customresource::validate(rt, obj, false));
    }
    if errs.is_empty() {
        // Then BeforeCreate's own ObjectMeta checks (names as path segments): what kinds whose
        // strategy checks no metadata (PodDisruptionBudget) get.
        errs = objectmeta::validate_object_meta(obj, rt.namespaced, NameRule::PathSegment);
    }
    if errs.is_empty() {
        Ok(())
    } else {
        Err(invalid(rt, obj, &errs))
    }
}

/// `rest.BeforeUpdate`'s validation: the common ObjectMeta checks, then the strategy's
/// `ValidateUpdate` of `next` (what would be stored) against `current`.
pub fn validate_update(rt: &ResourceType, current: &Value, next: &Value) -> ApiResult<()> {
    let mut errs = objectmeta::validate_common_update(next, current, rt.namespaced);
    match rules_for(rt) {
        Some(k) => errs.extend((k.update)(next, current)),
        None => {
            errs.extend(objectmeta::validate_object_meta_update(next, current));
            errs.extend(objectmeta::validate_object_meta(
                next,
                rt.namespaced,
                default_name_rule(rt),
            ));
        }
    }
    if rt.custom {
        errs.extend(customresource::validate(rt, next, false));
    }
    if errs.is_empty() {
        Ok(())
    } else {
        Err(invalid(rt, next, &errs))
    }
}

/// The status strategy's `ValidateUpdate` of a status write, for the kinds whose status rules
/// the sim has (`ValidateDeploymentStatusUpdate` in pkg/apis/apps/validation/validation.go).
pub fn validate_status_update(rt: &ResourceType, current: &Value, next: &Value) -> ApiResult<()> {
    let errs = match (rt.group.as_str(), rt.kind.as_str()) {
        ("apps", "Deployment") => apps::validate_deployment_status_update(next, current),
        _ => return Ok(()),
    };
    if errs.is_empty() {
        Ok(())
    } else {
        Err(invalid(rt, next, &errs))
    }
}

/// The object an update would store, as validation sees it: the server's metadata (uid,
/// creationTimestamp, deletion state, generation) carried over from `current` as
/// `rest.BeforeUpdate` does, and the stored status kept (a main-resource write).
pub fn as_stored(rt: &ResourceType, current: &Value, next: &Value) -> Value {
    let mut out = next.clone();
    let md = crate::apiserver::meta::metadata_mut(&mut out);
    if let Some(cur) = current.get("metadata").and_then(Value::as_object) {
        for k in [
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
            "namespace",
            "name",
        ] {
            match cur.get(k) {
                Some(v) => {
                    md.insert(k.into(), v.clone());
                }
                None => {
                    md.shift_remove(k);
                }
            }
        }
    }
    if rt.has_status() {
        match current.get("status") {
            Some(st) => out["status"] = st.clone(),
            None => {
                out.as_object_mut().map(|m| m.shift_remove("status"));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apiserver::resources::Registry;
    use serde_json::json;

    #[test]
    fn unknown_fields_warn_or_fail() {
        let reg = Registry::with_builtins();
        let rt = reg.get("", "v1", "configmaps").unwrap();
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "labels": {"x": "y"}}, "data": {"k": "v"}, "bogus": 1});
        assert_eq!(
            check_fields(&rt, &cm, None).unwrap(),
            vec!["unknown field \"bogus\"".to_string()]
        );
        let e = check_fields(&rt, &cm, Some("Strict")).unwrap_err();
        assert_eq!(
            e.message,
            "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: strict decoding error: unknown field \"bogus\""
        );
        assert!(check_fields(&rt, &cm, Some("Ignore")).unwrap().is_empty());
    }

    #[test]
    fn a_status_write_decodes_as_the_whole_object_would() {
        let reg = Registry::with_builtins();
        let pods = reg.get("", "v1", "pods").unwrap();
        let current = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "d", "resourceVersion": "4"},
            "spec": {"containers": [{"name": "c", "image": "i"}]}, "status": {"phase": "Pending"}});
        // What the store holds was decoded once already (members in the type's order).
        let current = prune_typed(&pods, current).unwrap();
        let mut next = current.clone();
        next["status"] = json!({"phase": "Running", "bogus": 1, "conditions": [{"type": "Ready", "status": "True", "odd": 2}], "podIP": "10.0.0.1"});
        let whole = prune_typed(&pods, next.clone()).unwrap();
        let status_only = prune_typed_status(&pods, &current, next.clone()).unwrap();
        assert!(
            crate::apiserver::meta::identical(&whole, &status_only),
            "{whole}\n{status_only}"
        );
        assert!(status_only["status"].get("bogus").is_none());
        // A status of the wrong type is a 400 either way.
        let mut bad = current.clone();
        bad["status"] = json!({"phase": 3});
        assert_eq!(
            prune_typed_status(&pods, &current, bad).unwrap_err().code,
            400
        );
        // A body whose spec differs from the stored one is decoded whole: its bad spec is a 400.
        let mut bad_spec = next.clone();
        bad_spec["spec"]["containers"] = json!("x");
        assert_eq!(
            prune_typed_status(&pods, &current, bad_spec)
                .unwrap_err()
                .code,
            400
        );
        // No status: the object stays as it is.
        let mut none = current.clone();
        none.as_object_mut().unwrap().remove("status");
        assert!(crate::apiserver::meta::identical(
            &prune_typed_status(&pods, &current, none.clone()).unwrap(),
            &prune_typed(&pods, none).unwrap()
        ));
    }

    #[test]
    fn unknown_fields_are_dropped_from_built_ins() {
        let reg = Registry::with_builtins();
        let rt = reg.get("", "v1", "configmaps").unwrap();
        let cm = json!({"metadata": {"name": "a"}, "data": {"k": "v"}, "dta": {}});
        assert_eq!(
            check_fields(&rt, &cm, None).unwrap(),
            vec!["unknown field \"dta\"".to_string()]
        );
        let pruned = prune_typed(&rt, cm).unwrap();
        assert!(pruned.get("dta").is_none());
        assert_eq!(pruned["data"]["k"], "v");
    }

    #[test]
    fn nested_unknown_fields_have_full_paths() {
        let reg = Registry::with_builtins();
        let rt = reg.get("", "v1", "pods").unwrap();
        let pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i", "imagePullPolcy": "Always"}]}});
        assert_eq!(
            check_fields(&rt, &pod, None).unwrap(),
            vec!["unknown field \"spec.containers[0].imagePullPolcy\"".to_string()]
        );
    }

    #[test]
    fn wrong_types_are_bad_requests() {
        let reg = Registry::with_builtins();
        let rt = reg.get("", "v1", "pods").unwrap();
        let pod = json!({"metadata": {"name": "p"}, "spec": {"containers": "nope"}});
        let e = prune_typed(&rt, pod).unwrap_err();
        assert_eq!(e.code, 400);
    }

    #[test]
    fn pod_spec_is_mostly_immutable() {
        let reg = Registry::with_builtins();
        let rt = reg.get("", "v1", "pods").unwrap();
        let a = json!({"metadata": {"name": "p", "namespace": "d"}, "spec": {"containers": [{"name": "c", "image": "i:1", "imagePullPolicy": "Always", "terminationMessagePolicy": "File"}],
            "restartPolicy": "Always", "dnsPolicy": "ClusterFirst", "terminationGracePeriodSeconds": 30}});
        let mut b = a.clone();
        b["spec"]["containers"][0]["image"] = json!("i:2");
        assert!(validate_update(&rt, &a, &b).is_ok());
        b["spec"]["containers"][0]["name"] = json!("d");
        let e = validate_update(&rt, &a, &b).unwrap_err();
        assert_eq!(e.code, 422);
        assert!(e.message.starts_with("Pod \"p\" is invalid: spec: Forbidden: pod updates may not change fields other than"), "{}", e.message);
    }
}
