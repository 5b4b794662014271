//! What the apiserver does to an object before it is stored: name generation, defaulting
//! (the subset of the real defaulters that clients and controllers observe) and validation.

use crate::apiserver::meta;
use crate::apiserver::resources::ResourceType;
use crate::apiserver::status::{ApiError, ApiResult};
use rand::Rng;
use serde_json::{json, Value};

/// Characters the apiserver uses for `generateName` suffixes (no vowels, no look-alikes).
const NAME_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

pub fn generate_name_suffix() -> String {
    let mut rng = rand::rng();
    (0..5)
        .map(|_| NAME_ALPHABET[rng.random_range(0..NAME_ALPHABET.len())] as char)
        .collect()
}

/// Check `apiVersion`/`kind` of a request body against the endpoint it was sent to.
pub fn check_type(rt: &ResourceType, obj: &Value) -> ApiResult<()> {
    if !obj.is_object() {
        return Err(ApiError::bad_request(
            "the body of the request must be a JSON object",
        ));
    }
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
    let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    if !kind.is_empty() && kind != rt.kind {
        return Err(ApiError::bad_request(format!(
            "the kind of the object ({}) does not match the kind of the endpoint ({})",
            kind, rt.kind
        )));
    }
    if !api_version.is_empty() && api_version != rt.api_version() {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({}) does not match the expected API version ({})",
            api_version,
            rt.api_version()
        )));
    }
    Ok(())
}

/// Prepare an object for creation in namespace `ns` (empty for cluster-scoped).
pub fn prepare_create(rt: &ResourceType, ns: &str, mut obj: Value) -> ApiResult<Value> {
    check_type(rt, &obj)?;
    obj["apiVersion"] = json!(rt.api_version());
    obj["kind"] = json!(rt.kind);
    let body_ns = meta::namespace(&obj).to_string();
    {
        let md = meta::metadata_mut(&mut obj);
        if rt.namespaced {
            if !body_ns.is_empty() && body_ns != ns {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
            md.insert("namespace".into(), json!(ns));
        } else {
            md.remove("namespace");
        }
        let name = md
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if name.is_empty() {
            match md.get("generateName").and_then(Value::as_str) {
                Some(prefix) if !prefix.is_empty() => {
                    md.insert(
                        "name".into(),
                        json!(format!("{}{}", prefix, generate_name_suffix())),
                    );
                }
                _ => {
                    return Err(ApiError::invalid(
                        &rt.group,
                        &rt.kind,
                        "",
                        vec![(
                            "metadata.name".into(),
                            "Required value: name or generateName is required".into(),
                            "FieldValueRequired",
                        )],
                    ))
                }
            }
        }
        md.remove("managedFields");
        // The uid is assigned before the strategies run (a Job's generated selector names it).
        md.insert("uid".into(), json!(uuid::Uuid::new_v4().to_string()));
    }
    validate_name(rt, &obj)?;
    // Status is the server's and controllers' to write: creates reset it (kubelets register
    // Nodes with their status, the one exception).
    if rt.has_status() && !(rt.group.is_empty() && rt.plural == "nodes") {
        if let Some(m) = obj.as_object_mut() {
            m.remove("status");
        }
    }
    apply_defaults(rt, &mut obj);
    Ok(obj)
}

/// Names must be DNS-1123 subdomains (labels for namespaces), at most 253 characters.
pub fn validate_name(rt: &ResourceType, obj: &Value) -> ApiResult<()> {
    let name = meta::name(obj);
    // RBAC objects only need to be valid path segments (`system:discovery`, `kubeadm:...`).
    if rt.group == "rbac.authorization.k8s.io" {
        let why = match name {
            "." => Some("may not be '.'"),
            ".." => Some("may not be '..'"),
            n if n.contains('/') => Some("may not contain '/'"),
            n if n.contains('%') => Some("may not contain '%'"),
            _ => None,
        };
        return match why {
            None => Ok(()),
            Some(w) => Err(ApiError::invalid(
                &rt.group,
                &rt.kind,
                name,
                vec![(
                    "metadata.name".into(),
                    format!("Invalid value: {:?}: {}", name, w),
                    "FieldValueInvalid",
                )],
            )),
        };
    }
    let label_only = rt.group.is_empty() && (rt.plural == "namespaces" || rt.plural == "services");
    let ok = if label_only {
        is_dns1123_label(name)
    } else {
        is_dns1123_subdomain(name)
    };
    // Custom resources and nodes follow subdomain rules; events and some others allow more, but
    // real clients never rely on that.
    if !ok {
        let what = if label_only {
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
        } else {
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
        };
        return Err(ApiError::invalid(
            &rt.group,
            &rt.kind,
            name,
            vec![(
                "metadata.name".into(),
                format!("Invalid value: {:?}: {}", name, what),
                "FieldValueInvalid",
            )],
        ));
    }
    Ok(())
}

pub fn is_dns1123_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

/// The subdomain regex has no per-label length limit (only 253 overall), unlike labels.
pub fn is_dns1123_subdomain(s: &str) -> bool {
    let part_ok = |p: &str| {
        !p.is_empty()
            && p.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !p.starts_with('-')
            && !p.ends_with('-')
    };
    !s.is_empty() && s.len() <= 253 && s.split('.').all(part_ok)
}

/// The defaults real clients observe after a create. Not the whole of the Go defaulters: only
/// what controllers and kubectl read back (see docs/fidelity.md).
pub fn apply_defaults(rt: &ResourceType, obj: &mut Value) {
    if !rt.group.is_empty() {
        match rt.group.as_str() {
            "apps" => default_workload(obj),
            "batch" if rt.kind == "Job" => default_job(obj),
            "batch" if rt.kind == "CronJob" => default_cron_job(obj),
            _ => {}
        }
        return;
    }
    match rt.plural.as_str() {
        "namespaces" => {
            let name = meta::name(obj).to_string();
            let md = meta::metadata_mut(obj);
            let labels = md.entry("labels").or_insert_with(|| json!({}));
            if labels.is_object() {
                labels["kubernetes.io/metadata.name"] = json!(name);
            }
            if obj.pointer("/spec/finalizers").is_none() {
                obj["spec"] = json!({"finalizers": ["kubernetes"]});
            }
            obj["status"] = json!({"phase": "Active"});
        }
        "pods" => default_pod(obj),
        "replicationcontrollers" => {
            // An RC without selector or labels takes its template's labels.
            let tpl_labels = obj.pointer("/spec/template/metadata/labels").cloned();
            if let Some(l) =
                tpl_labels.filter(|l| l.as_object().map(|m| !m.is_empty()).unwrap_or(false))
            {
                let md = meta::metadata_mut(obj);
                md.entry("labels").or_insert_with(|| l.clone());
                ensure_object(obj, "spec").entry("selector").or_insert(l);
            }
            default_workload(obj);
        }
        "persistentvolumeclaims" => {
            let spec = ensure_object(obj, "spec");
            spec.entry("volumeMode")
                .or_insert_with(|| json!("Filesystem"));
            if obj.pointer("/status/phase").is_none() {
                obj["status"] = json!({"phase": "Pending"});
            }
        }
        "persistentvolumes" => {
            let spec = ensure_object(obj, "spec");
            spec.entry("persistentVolumeReclaimPolicy")
                .or_insert_with(|| json!("Retain"));
            spec.entry("volumeMode")
                .or_insert_with(|| json!("Filesystem"));
            if obj.pointer("/status/phase").is_none() {
                obj["status"] = json!({"phase": "Pending"});
            }
        }
        "services" => {
            obj["status"] = json!({"loadBalancer": {}});
            let spec = ensure_object(obj, "spec");
            spec.entry("type").or_insert_with(|| json!("ClusterIP"));
            spec.entry("sessionAffinity")
                .or_insert_with(|| json!("None"));
            if let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) {
                for p in ports {
                    if p.get("protocol").is_none() {
                        p["protocol"] = json!("TCP");
                    }
                    if p.get("targetPort").is_none() {
                        if let Some(port) = p.get("port").cloned() {
                            p["targetPort"] = port;
                        }
                    }
                }
            }
        }
        "secrets" if obj.get("type").is_none() => {
            obj["type"] = json!("Opaque");
        }
        _ => {}
    }
}

fn ensure_object<'a>(obj: &'a mut Value, field: &str) -> &'a mut serde_json::Map<String, Value> {
    if !obj.get(field).map(Value::is_object).unwrap_or(false) {
        obj[field] = json!({});
    }
    obj[field].as_object_mut().expect("object")
}

fn default_container(c: &mut Value) {
    let image = c
        .get("image")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if c.get("imagePullPolicy").is_none() {
        // Always for :latest or untagged images, IfNotPresent otherwise (the real rule).
        let last = image.rsplit('/').next().unwrap_or("");
        let tag = last.split_once(':').map(|(_, t)| t);
        let policy = if image.contains('@') {
            "IfNotPresent"
        } else if tag.is_none() || tag == Some("latest") {
            "Always"
        } else {
            "IfNotPresent"
        };
        c["imagePullPolicy"] = json!(policy);
    }
    if c.get("terminationMessagePath").is_none() {
        c["terminationMessagePath"] = json!("/dev/termination-log");
    }
    if c.get("terminationMessagePolicy").is_none() {
        c["terminationMessagePolicy"] = json!("File");
    }
    if c.get("resources").is_none() {
        c["resources"] = json!({});
    }
}

fn default_pod(obj: &mut Value) {
    let spec = ensure_object(obj, "spec");
    spec.entry("restartPolicy")
        .or_insert_with(|| json!("Always"));
    spec.entry("dnsPolicy")
        .or_insert_with(|| json!("ClusterFirst"));
    spec.entry("schedulerName")
        .or_insert_with(|| json!("default-scheduler"));
    spec.entry("terminationGracePeriodSeconds")
        .or_insert_with(|| json!(30));
    spec.entry("securityContext").or_insert_with(|| json!({}));
    spec.entry("enableServiceLinks")
        .or_insert_with(|| json!(true));
    spec.entry("priority").or_insert_with(|| json!(0));
    spec.entry("preemptionPolicy")
        .or_insert_with(|| json!("PreemptLowerPriority"));
    let sa = spec
        .get("serviceAccountName")
        .cloned()
        .unwrap_or_else(|| json!("default"));
    spec.insert("serviceAccountName".into(), sa.clone());
    spec.entry("serviceAccount").or_insert(sa);
    for field in ["containers", "initContainers"] {
        if let Some(cs) = spec.get_mut(field).and_then(Value::as_array_mut) {
            cs.iter_mut().for_each(default_container);
        }
    }
    // The DefaultTolerationSeconds admission plugin.
    let tolerations = spec.entry("tolerations").or_insert_with(|| json!([]));
    if let Some(ts) = tolerations.as_array_mut() {
        for key in [
            "node.kubernetes.io/not-ready",
            "node.kubernetes.io/unreachable",
        ] {
            if !ts
                .iter()
                .any(|t| t.get("key").and_then(Value::as_str) == Some(key))
            {
                ts.push(json!({"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}));
            }
        }
    }
    let qos = qos_class(obj);
    let status = ensure_object(obj, "status");
    status.entry("phase").or_insert_with(|| json!("Pending"));
    status.insert("qosClass".into(), json!(qos));
}

/// QoS class from requests and limits, as the kubelet and apiserver compute it.
pub fn qos_class(pod: &Value) -> &'static str {
    let containers: Vec<&Value> = ["containers", "initContainers"]
        .iter()
        .filter_map(|f| {
            pod.pointer(&format!("/spec/{}", f))
                .and_then(Value::as_array)
        })
        .flatten()
        .collect();
    let mut any = false;
    let mut guaranteed = !containers.is_empty();
    for c in &containers {
        let req = c.pointer("/resources/requests");
        let lim = c.pointer("/resources/limits");
        let has = |v: Option<&Value>, k: &str| v.and_then(|m| m.get(k)).is_some();
        if has(req, "cpu") || has(req, "memory") || has(lim, "cpu") || has(lim, "memory") {
            any = true;
        }
        for k in ["cpu", "memory"] {
            let l = lim.and_then(|m| m.get(k));
            let r = req.and_then(|m| m.get(k)).or(l);
            if l.is_none() || r != l {
                guaranteed = false;
            }
        }
    }
    if guaranteed {
        "Guaranteed"
    } else if any {
        "Burstable"
    } else {
        "BestEffort"
    }
}

fn default_workload(obj: &mut Value) {
    let kind = obj
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let spec = ensure_object(obj, "spec");
    if kind == "Deployment"
        || kind == "ReplicaSet"
        || kind == "StatefulSet"
        || kind == "ReplicationController"
    {
        spec.entry("replicas").or_insert_with(|| json!(1));
    }
    if kind == "StatefulSet" {
        spec.entry("revisionHistoryLimit")
            .or_insert_with(|| json!(10));
        spec.entry("podManagementPolicy")
            .or_insert_with(|| json!("OrderedReady"));
        spec.entry("updateStrategy")
            .or_insert_with(|| json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}));
        spec.entry("persistentVolumeClaimRetentionPolicy")
            .or_insert_with(|| json!({"whenDeleted": "Retain", "whenScaled": "Retain"}));
        for t in spec
            .get_mut("volumeClaimTemplates")
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            if t.pointer("/spec/volumeMode").is_none()
                && t.get("spec").map(Value::is_object).unwrap_or(false)
            {
                t["spec"]["volumeMode"] = json!("Filesystem");
            }
        }
    }
    if kind == "Deployment" || kind == "ReplicaSet" {
        spec.entry("replicas").or_insert_with(|| json!(1));
        spec.entry("revisionHistoryLimit")
            .or_insert_with(|| json!(10));
    }
    if kind == "Deployment" {
        spec.entry("progressDeadlineSeconds")
            .or_insert_with(|| json!(600));
        spec.entry("strategy")
            .or_insert_with(|| json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}}));
    }
    if kind == "DaemonSet" {
        spec.entry("revisionHistoryLimit")
            .or_insert_with(|| json!(10));
        spec.entry("updateStrategy")
            .or_insert_with(|| json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}}));
    }
    default_template(obj.pointer_mut("/spec/template"));
}

/// A pod template gets the pod defaults, except those the pods get when admitted.
fn default_template(tpl: Option<&mut Value>) {
    if let Some(tpl) = tpl.filter(|t| t.is_object()) {
        let mut pod = json!({"spec": tpl.get("spec").cloned().unwrap_or_else(|| json!({}))});
        default_pod(&mut pod);
        tpl["spec"] = pod["spec"].take();
        if let Some(ts) = tpl
            .pointer_mut("/spec/tolerations")
            .and_then(Value::as_array_mut)
        {
            // Templates are not admitted as pods: the toleration defaults apply to the pods later.
            ts.retain(|t| t.get("tolerationSeconds") != Some(&json!(300)));
        }
    }
}

/// Job defaults, and the selector the Job strategy generates (unless `manualSelector`): the
/// pods carry the Job's uid and name as labels, and the selector matches the uid.
fn default_job(obj: &mut Value) {
    let uid = meta::uid(obj).to_string();
    let name = meta::name(obj).to_string();
    let spec = ensure_object(obj, "spec");
    if spec.get("completions").is_none() && spec.get("parallelism").is_none() {
        spec.insert("completions".into(), json!(1));
        spec.insert("parallelism".into(), json!(1));
    }
    spec.entry("parallelism").or_insert_with(|| json!(1));
    spec.entry("backoffLimit").or_insert_with(|| json!(6));
    spec.entry("completionMode")
        .or_insert_with(|| json!("NonIndexed"));
    spec.entry("suspend").or_insert_with(|| json!(false));
    let replacement = if spec.get("podFailurePolicy").is_some() {
        "Failed"
    } else {
        "TerminatingOrFailed"
    };
    spec.entry("podReplacementPolicy")
        .or_insert_with(|| json!(replacement));
    if spec.get("manualSelector").and_then(Value::as_bool) != Some(true) {
        spec.insert(
            "selector".into(),
            json!({"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}),
        );
        let tpl = spec.entry("template").or_insert_with(|| json!({}));
        if !tpl.get("metadata").map(Value::is_object).unwrap_or(false) {
            tpl["metadata"] = json!({});
        }
        if !tpl["metadata"]
            .get("labels")
            .map(Value::is_object)
            .unwrap_or(false)
        {
            tpl["metadata"]["labels"] = json!({});
        }
        let labels = &mut tpl["metadata"]["labels"];
        for (k, v) in [
            ("batch.kubernetes.io/controller-uid", &uid),
            ("batch.kubernetes.io/job-name", &name),
            ("controller-uid", &uid),
            ("job-name", &name),
        ] {
            labels[k] = json!(v);
        }
    }
    default_template(spec.get_mut("template"));
}

fn default_cron_job(obj: &mut Value) {
    let spec = ensure_object(obj, "spec");
    spec.entry("concurrencyPolicy")
        .or_insert_with(|| json!("Allow"));
    spec.entry("suspend").or_insert_with(|| json!(false));
    spec.entry("successfulJobsHistoryLimit")
        .or_insert_with(|| json!(3));
    spec.entry("failedJobsHistoryLimit")
        .or_insert_with(|| json!(1));
    default_template(obj.pointer_mut("/spec/jobTemplate/spec/template"));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apiserver::resources::Registry;

    #[test]
    fn generate_name_appends_five_safe_characters() {
        let reg = Registry::with_builtins();
        let rt = reg.get("", "v1", "configmaps").unwrap();
        let o = prepare_create(
            &rt,
            "default",
            json!({"metadata": {"generateName": "cfg-"}}),
        )
        .unwrap();
        let name = meta::name(&o);
        assert!(name.starts_with("cfg-") && name.len() == 9, "{}", name);
        assert!(name[4..].bytes().all(|b| NAME_ALPHABET.contains(&b)));
    }

    #[test]
    fn missing_name_is_invalid() {
        let reg = Registry::with_builtins();
        let rt = reg.get("", "v1", "pods").unwrap();
        let e = prepare_create(&rt, "default", json!({"metadata": {}})).unwrap_err();
        assert_eq!(e.code, 422);
        assert!(e.message.contains("metadata.name: Required value"));
        let e =
            prepare_create(&rt, "default", json!({"metadata": {"name": "Bad_Name"}})).unwrap_err();
        assert_eq!(e.reason, "Invalid");
    }

    #[test]
    fn pods_get_real_defaults() {
        let reg = Registry::with_builtins();
        let rt = reg.get("", "v1", "pods").unwrap();
        let p = prepare_create(
            &rt,
            "ns1",
            json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "busybox"}, {"name": "d", "image": "nginx:1.27"}]}}),
        )
        .unwrap();
        assert_eq!(p["metadata"]["namespace"], "ns1");
        assert_eq!(p["status"]["phase"], "Pending");
        assert_eq!(p["status"]["qosClass"], "BestEffort");
        assert_eq!(p["spec"]["containers"][0]["imagePullPolicy"], "Always");
        assert_eq!(
            p["spec"]["containers"][1]["imagePullPolicy"],
            "IfNotPresent"
        );
        assert_eq!(p["spec"]["tolerations"].as_array().unwrap().len(), 2);
        assert_eq!(p["spec"]["serviceAccountName"], "default");
    }

    #[test]
    fn subdomain_parts_may_exceed_63_characters() {
        let long = format!("csi-{}", "a".repeat(64));
        assert!(is_dns1123_subdomain(&long));
        assert!(!is_dns1123_label(&long));
        assert!(!is_dns1123_subdomain("a..b") && !is_dns1123_subdomain("-a"));
    }

    #[test]
    fn namespace_mismatch_is_rejected() {
        let reg = Registry::with_builtins();
        let rt = reg.get("", "v1", "configmaps").unwrap();
        let e = prepare_create(
            &rt,
            "a",
            json!({"metadata": {"name": "x", "namespace": "b"}}),
        )
        .unwrap_err();
        assert_eq!(e.code, 400);
    }

    #[test]
    fn qos_guaranteed_needs_equal_requests_and_limits() {
        let g = json!({"spec": {"containers": [{"resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]}});
        assert_eq!(qos_class(&g), "Guaranteed");
        let b = json!({"spec": {"containers": [{"resources": {"requests": {"cpu": "1"}}}]}});
        assert_eq!(qos_class(&b), "Burstable");
    }
}
