//! What the apiserver does to an object before it is validated and stored: name generation,
//! scheme defaulting (`defaults`, per group as `pkg/apis/<group>/v1/defaults.go`), the create
//! and update strategies' preparation and the mutating admission plugins that change what
//! clients read back (ServiceAccount, Priority, DefaultTolerationSeconds).

pub mod defaults;
pub mod storage_protection;
pub mod webhook;

use crate::apiserver::meta;
use crate::apiserver::resources::ResourceType;
use crate::apiserver::status::{ApiError, ApiResult};
use rand::Rng;
use serde_json::{json, Value};

/// Characters the apiserver uses for `generateName` suffixes (no vowels, no look-alikes).
const NAME_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// `maxGeneratedNameLength`: 63 minus the five random characters.
const MAX_GENERATED_PREFIX: usize = 58;

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
/// `now`: the cluster clock's time (`metav1.Time`), for the timestamps the strategies stamp.
pub fn prepare_create(rt: &ResourceType, ns: &str, mut obj: Value, now: &str) -> ApiResult<Value> {
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
        // `SimpleNameGenerator`: the prefix cut to 58 bytes, then five random characters. A
        // body with neither name nor generateName is left to validation ("metadata.name:
        // Required value"), which reports it with the object's other errors.
        if name.is_empty() {
            if let Some(prefix) = md.get("generateName").and_then(Value::as_str) {
                if !prefix.is_empty() {
                    let mut cut = prefix.len().min(MAX_GENERATED_PREFIX);
                    while !prefix.is_char_boundary(cut) {
                        cut -= 1;
                    }
                    let generated = format!("{}{}", &prefix[..cut], generate_name_suffix());
                    md.insert("name".into(), json!(generated));
                }
            }
        }
        md.remove("managedFields");
        // The uid is assigned before the strategies run (a Job's generated selector names it).
        md.insert("uid".into(), json!(uuid::Uuid::new_v4().to_string()));
    }
    // Status is the server's and controllers' to write: creates reset it (kubelets register
    // Nodes with their status, the one exception).
    if rt.has_status() && !(rt.group.is_empty() && rt.plural == "nodes") {
        if let Some(m) = obj.as_object_mut() {
            m.remove("status");
            if let Some(s) = initial_status(rt) {
                m.insert("status".into(), s);
            }
        }
    }
    if rt.group == "apiregistration.k8s.io" && rt.kind == "APIService" {
        local_apiservice_status(&mut obj, now);
    }
    // The decoder's defaulting (and the defaulting of what is read back from etcd), then the
    // create strategy and the mutating admission plugins.
    apply_defaults(rt, &mut obj);
    drop_disabled_fields(rt, &mut obj);
    admit_create(rt, &mut obj, now);
    if rt.group.is_empty() && rt.plural == "pods" {
        let qos = qos_class(&obj);
        let status = defaults::object_at(&mut obj, "status");
        status.entry("phase").or_insert_with(|| json!("Pending"));
        status.insert("qosClass".into(), json!(qos));
    }
    Ok(obj)
}

/// What happens to an update body before it is validated (a main-resource write): the
/// strategies' `PrepareForUpdate` and registry hooks that change what is stored. Services keep
/// their allocated cluster IPs when a client leaves them out, and `clusterIPs` follows a
/// changed `clusterIP` (pkg/registry/core/service/storage: patchAllocatedValues,
/// normalizeClusterIPs).
pub fn prepare_update(rt: &ResourceType, current: &Value, obj: &mut Value) {
    apply_defaults(rt, obj);
    drop_disabled_fields(rt, obj);
    match (rt.group.as_str(), rt.kind.as_str()) {
        ("", "Service") => crate::apiserver::validation::core::prepare_service_update(obj, current),
        ("", "Pod") => admit_pod(obj, Some(current)),
        // The CSR strategy: an update of the main resource changes neither the request nor
        // its requester (pkg/registry/certificates/certificates/strategy.go).
        ("certificates.k8s.io", "CertificateSigningRequest") => match current.get("spec") {
            Some(spec) => obj["spec"] = spec.clone(),
            None => {
                obj.as_object_mut().map(|m| m.shift_remove("spec"));
            }
        },
        // The namespace strategy: finalizers change only through /finalize.
        ("", "Namespace") => match current.pointer("/spec/finalizers") {
            Some(f) => {
                if !obj.get("spec").is_some_and(Value::is_object) {
                    obj["spec"] = json!({});
                }
                obj["spec"]["finalizers"] = f.clone();
            }
            None => {
                if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
                    spec.shift_remove("finalizers");
                }
            }
        },
        ("apps", "DaemonSet") => {
            // The DaemonSet strategy: a changed template is a new template generation.
            let generation = |v: &Value| {
                v.pointer("/metadata/annotations/deprecated.daemonset.template.generation")
                    .and_then(Value::as_str)
                    .and_then(|g| g.parse::<i64>().ok())
            };
            if let Some(g) = generation(current) {
                let changed = !crate::apiserver::validation::objectmeta::semantic_eq(
                    obj.pointer("/spec/template").unwrap_or(&Value::Null),
                    current.pointer("/spec/template").unwrap_or(&Value::Null),
                );
                let next = if changed { g + 1 } else { g };
                let md = meta::metadata_mut(obj);
                let ann = md.entry("annotations").or_insert_with(|| json!({}));
                if ann.is_object() {
                    ann["deprecated.daemonset.template.generation"] = json!(next.to_string());
                }
            }
        }
        _ => {}
    }
}

/// Scheme defaulting of a built-in object (`defaults`); custom resources have none here.
pub fn apply_defaults(rt: &ResourceType, obj: &mut Value) {
    if !rt.custom {
        defaults::apply(&rt.group, &rt.kind, obj);
    }
}

/// The strategies' `dropDisabledFields`: members of features off by default in 1.35 are
/// dropped silently (a Lease's `strategy` and `preferredHolder`: CoordinatedLeaderElection).
fn drop_disabled_fields(rt: &ResourceType, obj: &mut Value) {
    if rt.group == "coordination.k8s.io" && rt.kind == "Lease" {
        if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
            spec.remove("strategy");
            spec.remove("preferredHolder");
        }
    }
}

/// The status a new object is stored with: the strategies reset it (`PrepareForCreate`), and
/// Go writes a status struct's members that have no `omitempty` even when zero.
fn initial_status(rt: &ResourceType) -> Option<Value> {
    Some(match (rt.group.as_str(), rt.kind.as_str()) {
        ("apps", "ReplicaSet") | ("", "ReplicationController") => json!({"replicas": 0}),
        ("apps", "StatefulSet") => json!({"replicas": 0, "availableReplicas": 0}),
        ("apps", "DaemonSet") => {
            json!({"currentNumberScheduled": 0, "numberMisscheduled": 0, "desiredNumberScheduled": 0, "numberReady": 0})
        }
        ("apps", "Deployment")
        | ("batch", "Job")
        | ("batch", "CronJob")
        | ("", "ResourceQuota") => json!({}),
        ("policy", "PodDisruptionBudget") => {
            json!({"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0})
        }
        ("networking.k8s.io", "Ingress") | ("", "Service") => json!({"loadBalancer": {}}),
        _ => return None,
    })
}

/// The APIService strategy marks a local API service (no `spec.service`) available on create
/// (kube-aggregator pkg/registry/apiservice/strategy.go, `NewLocalAvailableAPIServiceCondition`).
fn local_apiservice_status(obj: &mut Value, now: &str) {
    let local = obj.pointer("/spec/service").is_none_or(Value::is_null);
    if local {
        obj["status"] = json!({"conditions": [{
            "type": "Available",
            "status": "True",
            "lastTransitionTime": now,
            "reason": "Local",
            "message": "Local APIServices are always available",
        }]});
    }
}

/// What the create strategies and mutating admission plugins do to a new, defaulted object
/// (`PrepareForCreate`, ServiceAccount, Priority, DefaultTolerationSeconds).
fn admit_create(rt: &ResourceType, obj: &mut Value, now: &str) {
    match (rt.group.as_str(), rt.kind.as_str()) {
        ("", "Pod") => admit_pod(obj, None),
        ("", "Namespace") => {
            // The namespace strategy: the `kubernetes` finalizer, after the client's own.
            let spec = defaults::object_at(obj, "spec");
            let fins = spec.entry("finalizers").or_insert_with(|| json!([]));
            if !fins.is_array() {
                *fins = json!([]);
            }
            if let Some(list) = fins.as_array_mut() {
                if !list.iter().any(|f| f == "kubernetes") {
                    list.push(json!("kubernetes"));
                }
            }
        }
        ("", "Service") => {
            // normalizeClusterIPs on create: a client that sets only `clusterIP` gets `clusterIPs`.
            let ip = meta::str_at(obj, "/spec/clusterIP")
                .unwrap_or("")
                .to_string();
            let ips_empty = obj
                .pointer("/spec/clusterIPs")
                .and_then(Value::as_array)
                .map(Vec::is_empty)
                .unwrap_or(true);
            if !ip.is_empty() && ips_empty {
                obj["spec"]["clusterIPs"] = json!([ip]);
            }
        }
        ("apps", "DaemonSet") => {
            // The DaemonSet strategy starts the template generation at 1, kept as an annotation.
            let md = meta::metadata_mut(obj);
            let ann = md.entry("annotations").or_insert_with(|| json!({}));
            if ann.is_object() {
                ann["deprecated.daemonset.template.generation"] = json!("1");
            }
        }
        ("batch", "Job") => generate_job_selector(obj),
        ("", "PersistentVolume") => {
            // The PV strategy stamps the first phase's transition time.
            let status = defaults::object_at(obj, "status");
            status.insert("lastPhaseTransitionTime".into(), json!(now));
        }
        _ => {}
    }
}

/// The ServiceAccount admission plugin's mutations of a new pod, given its ServiceAccount
/// (when found): the SA's image pull secrets when the pod names none, and, unless the pod or
/// the SA opts out, the projected `kube-api-access-<5>` token volume mounted read-only at
/// /var/run/secrets/kubernetes.io/serviceaccount in every (init) container without a mount
/// there. (Upstream refuses the pod with 403 when the ServiceAccount does not exist; the sim,
/// whose ServiceAccount controller creates `default` asynchronously, admits it.)
pub fn admit_service_account(pod: &mut Value, sa: Option<&Value>) {
    const MOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
    let automount = pod
        .pointer("/spec/automountServiceAccountToken")
        .and_then(Value::as_bool)
        .or_else(|| {
            sa.and_then(|s| s.get("automountServiceAccountToken"))
                .and_then(Value::as_bool)
        })
        .unwrap_or(true);
    if let Some(secrets) = sa
        .and_then(|s| s.get("imagePullSecrets"))
        .and_then(Value::as_array)
        .filter(|a| !a.is_empty())
    {
        let spec = defaults::object_at(pod, "spec");
        let none = spec
            .get("imagePullSecrets")
            .and_then(Value::as_array)
            .map(Vec::is_empty)
            .unwrap_or(true);
        if none {
            let names: Vec<Value> = secrets
                .iter()
                .map(|s| json!({"name": s.get("name").cloned().unwrap_or(json!(""))}))
                .collect();
            spec.insert("imagePullSecrets".into(), Value::Array(names));
        }
    }
    if !automount {
        return;
    }
    let spec = defaults::object_at(pod, "spec");
    let existing = spec
        .get("volumes")
        .and_then(Value::as_array)
        .and_then(|vs| {
            vs.iter()
                .filter_map(|v| v.get("name").and_then(Value::as_str))
                .find(|n| n.starts_with("kube-api-access-"))
                .map(String::from)
        });
    let name = existing
        .clone()
        .unwrap_or_else(|| format!("kube-api-access-{}", generate_name_suffix()));
    let mount = json!({"name": name, "readOnly": true, "mountPath": MOUNT_PATH});
    let mut needs_volume = false;
    for key in ["initContainers", "containers"] {
        for c in spec
            .get_mut(key)
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            let mounts = c
                .as_object_mut()
                .map(|m| m.entry("volumeMounts").or_insert_with(|| json!([])));
            if let Some(Value::Array(ms)) = mounts {
                if !ms
                    .iter()
                    .any(|m| m.get("mountPath").and_then(Value::as_str) == Some(MOUNT_PATH))
                {
                    ms.push(mount.clone());
                    needs_volume = true;
                }
            }
        }
    }
    if existing.is_none() && needs_volume {
        let vols = spec.entry("volumes").or_insert_with(|| json!([]));
        if let Some(vs) = vols.as_array_mut() {
            vs.push(json!({"name": name, "projected": {"sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}
            ], "defaultMode": 420}}));
        }
    }
}

/// The TaintNodesByCondition admission plugin (plugin/pkg/admission/nodetaint): a new Node gets
/// the `node.kubernetes.io/not-ready:NoSchedule` taint unless it has one of that key and effect,
/// so nothing schedules there until the node lifecycle controller sees it Ready.
pub fn taint_new_node(node: &mut Value) {
    let spec = defaults::object_at(node, "spec");
    let taints = spec.entry("taints").or_insert_with(|| json!([]));
    if !taints.is_array() {
        *taints = json!([]);
    }
    if let Some(list) = taints.as_array_mut() {
        let has = list.iter().any(|t| {
            t.get("key").and_then(Value::as_str) == Some("node.kubernetes.io/not-ready")
                && t.get("effect").and_then(Value::as_str) == Some("NoSchedule")
        });
        if !has {
            list.push(json!({"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}));
        }
    }
}

/// The ServiceAccount admission plugin's first step (plugin/pkg/admission/serviceaccount): a
/// new pod that names no ServiceAccount gets `default`; its name.
pub fn default_service_account(pod: &mut Value) -> String {
    let spec = defaults::object_at(pod, "spec");
    let sa = spec
        .get("serviceAccountName")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .unwrap_or("default")
        .to_string();
    spec.insert("serviceAccountName".into(), json!(sa));
    spec.insert("serviceAccount".into(), json!(sa));
    sa
}

/// The pod admission plugins: ServiceAccount (create only: `default`, in
/// `default_service_account`), Priority (priority 0
/// and PreemptLowerPriority; on update the old values when left out) and
/// DefaultTolerationSeconds (not-ready and unreachable tolerations, 300 s).
fn admit_pod(obj: &mut Value, old: Option<&Value>) {
    let spec = defaults::object_at(obj, "spec");
    match old {
        None => {
            // The v1 conversion keeps the deprecated `serviceAccount` and `serviceAccountName`
            // equal; `default` for neither is the ServiceAccount plugin's (`default_service_account`).
            let sa = spec
                .get("serviceAccountName")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .or_else(|| {
                    spec.get("serviceAccount")
                        .and_then(Value::as_str)
                        .filter(|s| !s.is_empty())
                })
                .map(String::from);
            if let Some(sa) = sa {
                spec.insert("serviceAccountName".into(), json!(sa));
                spec.insert("serviceAccount".into(), json!(sa));
            }
            if spec.get("priority").map(Value::is_null).unwrap_or(true) {
                spec.insert("priority".into(), json!(0));
            }
            if spec
                .get("preemptionPolicy")
                .map(Value::is_null)
                .unwrap_or(true)
            {
                spec.insert("preemptionPolicy".into(), json!("PreemptLowerPriority"));
            }
        }
        Some(old) => {
            for k in ["priority", "preemptionPolicy"] {
                if spec.get(k).map(Value::is_null).unwrap_or(true) {
                    if let Some(v) = old.pointer(&format!("/spec/{k}")) {
                        spec.insert(k.into(), v.clone());
                    }
                }
            }
        }
    }
    let tolerations = spec.entry("tolerations").or_insert_with(|| json!([]));
    if let Some(ts) = tolerations.as_array_mut() {
        let tolerates = |key: &str, ts: &[Value]| {
            ts.iter().any(|t| {
                let k = t.get("key").and_then(Value::as_str).unwrap_or("");
                let e = t.get("effect").and_then(Value::as_str).unwrap_or("");
                (k == key || k.is_empty()) && (e == "NoExecute" || e.is_empty())
            })
        };
        for key in [
            "node.kubernetes.io/not-ready",
            "node.kubernetes.io/unreachable",
        ] {
            if !tolerates(key, ts) {
                ts.push(json!({"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}));
            }
        }
    }
}

/// The Job strategy's selector generation (unless `manualSelector`): the pods carry the Job's
/// uid and name as labels, and the selector matches the uid. The Job's own labels, defaulted
/// from the template's (the same Go map), show the generated ones too.
fn generate_job_selector(obj: &mut Value) {
    let uid = meta::uid(obj).to_string();
    let name = meta::name(obj).to_string();
    if obj.pointer("/spec/manualSelector").and_then(Value::as_bool) == Some(true) {
        return;
    }
    let aliased = obj.pointer("/metadata/labels") == obj.pointer("/spec/template/metadata/labels")
        && obj.pointer("/metadata/labels").is_some();
    let spec = defaults::object_at(obj, "spec");
    spec.insert(
        "selector".into(),
        json!({"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}),
    );
    let tpl = spec.entry("template").or_insert_with(|| json!({}));
    let md = defaults::object_at(tpl, "metadata");
    let labels = md.entry("labels").or_insert_with(|| json!({}));
    if !labels.is_object() {
        *labels = json!({});
    }
    for (k, v) in [
        ("batch.kubernetes.io/controller-uid", &uid),
        ("batch.kubernetes.io/job-name", &name),
        ("controller-uid", &uid),
        ("job-name", &name),
    ] {
        labels[k] = json!(v);
    }
    // Labels still empty take the template's when the Job is next decoded, which the create's
    // own answer already is (etcd3's store decodes what it wrote; SetDefaults_Job in
    // pkg/apis/batch/v1/defaults.go), after the field manager ran: no manager owns them.
    let unlabelled = obj
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .is_none_or(|m| m.is_empty());
    if aliased || unlabelled {
        let l = obj["spec"]["template"]["metadata"]["labels"].clone();
        meta::metadata_mut(obj).insert("labels".into(), l);
    }
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

/// The CertificateSigningRequest strategy's PrepareForCreate: the requester recorded from the
/// request's user (whatever the body said), no status (no pre-approved requests).
pub fn csr_requester(obj: &mut Value, user: Option<&crate::apiserver::auth::UserInfo>) {
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    for k in ["username", "uid", "groups", "extra"] {
        spec.shift_remove(k);
    }
    if let Some(u) = user {
        if !u.name.is_empty() {
            spec.insert("username".into(), json!(u.name));
        }
        if !u.uid.is_empty() {
            spec.insert("uid".into(), json!(u.uid));
        }
        if !u.groups.is_empty() {
            spec.insert("groups".into(), json!(u.groups));
        }
        if !u.extra.is_empty() {
            spec.insert("extra".into(), json!(u.extra));
        }
    }
    obj["status"] = json!({});
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
            "2026-01-02T03:04:05Z",
        )
        .unwrap();
        let name = meta::name(&o);
        assert!(name.starts_with("cfg-") && name.len() == 9, "{}", name);
        assert!(name[4..].bytes().all(|b| NAME_ALPHABET.contains(&b)));
    }

    #[test]
    fn a_long_generate_name_is_cut_to_58_bytes() {
        let reg = Registry::with_builtins();
        let rt = reg.get("", "v1", "configmaps").unwrap();
        let prefix = "p".repeat(70);
        let o = prepare_create(
            &rt,
            "default",
            json!({"metadata": {"generateName": prefix}}),
            "2026-01-02T03:04:05Z",
        )
        .unwrap();
        assert_eq!(meta::name(&o).len(), 63);
    }

    #[test]
    fn pods_get_real_defaults() {
        let reg = Registry::with_builtins();
        let rt = reg.get("", "v1", "pods").unwrap();
        let p = prepare_create(
            &rt,
            "ns1",
            json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "busybox"}, {"name": "d", "image": "nginx:1.27"}]}}),
            "2026-01-02T03:04:05Z",
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
        // `default` is the ServiceAccount plugin's, which `ApiServer` runs when enabled.
        assert!(p["spec"].get("serviceAccountName").is_none());
    }

    #[test]
    fn a_csr_update_keeps_the_request_and_its_requester() {
        let reg = Registry::with_builtins();
        let rt = reg
            .get("certificates.k8s.io", "v1", "certificatesigningrequests")
            .unwrap();
        let current = json!({"metadata": {"name": "c"}, "spec": {"request": "UkVR",
            "signerName": "example.com/s", "usages": ["digital signature"],
            "username": "kubernetes-admin", "groups": ["system:masters"]}});
        let mut next = json!({"metadata": {"name": "c", "labels": {"l": "1"}}, "spec": {
            "request": "T1RIRVI=", "signerName": "example.com/s", "usages": ["digital signature"]}});
        prepare_update(&rt, &current, &mut next);
        assert_eq!(next["spec"], current["spec"]);
        assert_eq!(next["metadata"]["labels"]["l"], "1");
    }

    #[test]
    fn new_nodes_are_tainted_not_ready_once() {
        let mut n = json!({"metadata": {"name": "n"}});
        taint_new_node(&mut n);
        taint_new_node(&mut n);
        assert_eq!(
            n["spec"]["taints"],
            json!([{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}])
        );
        let mut other = json!({"spec": {"taints": [{"key": "a", "effect": "NoExecute"}]}});
        taint_new_node(&mut other);
        assert_eq!(other["spec"]["taints"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn namespace_mismatch_is_rejected() {
        let reg = Registry::with_builtins();
        let rt = reg.get("", "v1", "configmaps").unwrap();
        let e = prepare_create(
            &rt,
            "a",
            json!({"metadata": {"name": "x", "namespace": "b"}}),
            "2026-01-02T03:04:05Z",
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
