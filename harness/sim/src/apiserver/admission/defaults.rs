//! Scheme defaulting: what kube-apiserver's decoder does to every body it reads (and to every
//! object it reads back from etcd), per group as `pkg/apis/<group>/v1/defaults.go` (the
//! `SetDefaults_*` functions) and the generated `zz_generated.defaults.go` (which of them run
//! where, and the declarative `+default` markers) have it. Idempotent: applied to creates,
//! updates and patches alike.

use serde_json::{json, Map, Value};

/// `obj[key]` as an object, created (replacing a non-object) when missing.
pub(super) fn object_at<'a>(obj: &'a mut Value, key: &str) -> &'a mut Map<String, Value> {
    if !obj.get(key).map(Value::is_object).unwrap_or(false) {
        obj[key] = json!({});
    }
    obj[key].as_object_mut().expect("object")
}

fn set_if_absent(m: &mut Map<String, Value>, key: &str, v: Value) {
    if m.get(key).map(Value::is_null).unwrap_or(true) {
        m.insert(key.into(), v);
    }
}

fn set_if_empty_str(m: &mut Map<String, Value>, key: &str, v: &str) {
    if m.get(key).and_then(Value::as_str).unwrap_or("").is_empty() {
        m.insert(key.into(), json!(v));
    }
}

fn each_mut<'a>(v: &'a mut Value, key: &str) -> impl Iterator<Item = &'a mut Value> {
    v.get_mut(key)
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
}

/// The image's tag as `parsers.ParseImageName` reads it: `latest` when there is neither tag
/// nor digest.
fn image_tag(image: &str) -> String {
    let (name, digest) = match image.split_once('@') {
        Some((n, d)) => (n, Some(d)),
        None => (image, None),
    };
    let last = name.rsplit('/').next().unwrap_or("");
    match last.split_once(':') {
        Some((_, tag)) => tag.to_string(),
        None if digest.is_some() => String::new(),
        None => "latest".to_string(),
    }
}

/// `SetDefaults_Probe` and the probe handlers' (httpGet path and scheme, grpc service).
fn probe(p: &mut Value) {
    let Some(m) = p.as_object_mut() else { return };
    for (k, d) in [
        ("timeoutSeconds", 1),
        ("periodSeconds", 10),
        ("successThreshold", 1),
        ("failureThreshold", 3),
    ] {
        if m.get(k).and_then(Value::as_i64).unwrap_or(0) == 0 {
            m.insert(k.into(), json!(d));
        }
    }
    handler(p);
}

/// `SetDefaults_HTTPGetAction` and the GRPC service default of a handler.
fn handler(h: &mut Value) {
    if let Some(g) = h.get_mut("httpGet").and_then(Value::as_object_mut) {
        set_if_empty_str(g, "path", "/");
        set_if_empty_str(g, "scheme", "HTTP");
    }
    if let Some(g) = h.get_mut("grpc").and_then(Value::as_object_mut) {
        set_if_absent(g, "service", json!(""));
    }
}

/// `SetDefaults_Container` and what the generated defaulter runs for a container's members.
fn container(c: &mut Value) {
    let Some(m) = c.as_object_mut() else { return };
    if m.get("imagePullPolicy")
        .and_then(Value::as_str)
        .unwrap_or("")
        .is_empty()
    {
        let image = m.get("image").and_then(Value::as_str).unwrap_or("");
        let policy = if image_tag(image) == "latest" {
            "Always"
        } else {
            "IfNotPresent"
        };
        m.insert("imagePullPolicy".into(), json!(policy));
    }
    set_if_empty_str(m, "terminationMessagePath", "/dev/termination-log");
    set_if_empty_str(m, "terminationMessagePolicy", "File");
    // `resources` is a struct, not a pointer: it is always written.
    set_if_absent(m, "resources", json!({}));
    for p in each_mut(c, "ports") {
        if let Some(pm) = p.as_object_mut() {
            set_if_empty_str(pm, "protocol", "TCP");
        }
    }
    for e in each_mut(c, "env") {
        if let Some(f) = e
            .pointer_mut("/valueFrom/fieldRef")
            .and_then(Value::as_object_mut)
        {
            set_if_empty_str(f, "apiVersion", "v1");
        }
        if let Some(f) = e
            .pointer_mut("/valueFrom/fileKeyRef")
            .and_then(Value::as_object_mut)
        {
            set_if_absent(f, "optional", json!(false));
        }
    }
    for k in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(p) = c.get_mut(k).filter(|p| p.is_object()) {
            probe(p);
        }
    }
    for k in ["postStart", "preStop"] {
        if let Some(h) = c.pointer_mut(&format!("/lifecycle/{k}")) {
            handler(h);
        }
    }
}

/// `SetDefaults_Volume` and the volume sources' defaults.
fn volume(v: &mut Value) {
    const SOURCES: &[&str] = &[
        "hostPath",
        "emptyDir",
        "gcePersistentDisk",
        "awsElasticBlockStore",
        "gitRepo",
        "secret",
        "nfs",
        "iscsi",
        "glusterfs",
        "persistentVolumeClaim",
        "rbd",
        "flexVolume",
        "cinder",
        "cephfs",
        "flocker",
        "downwardAPI",
        "fc",
        "azureFile",
        "configMap",
        "vsphereVolume",
        "quobyte",
        "azureDisk",
        "photonPersistentDisk",
        "projected",
        "portworxVolume",
        "scaleIO",
        "storageos",
        "csi",
        "ephemeral",
        "image",
    ];
    let Some(m) = v.as_object_mut() else { return };
    if !SOURCES
        .iter()
        .any(|s| m.get(*s).map(|x| !x.is_null()).unwrap_or(false))
    {
        m.insert("emptyDir".into(), json!({}));
    }
    if let Some(h) = m.get_mut("hostPath").and_then(Value::as_object_mut) {
        set_if_absent(h, "type", json!(""));
    }
    for k in ["secret", "configMap", "downwardAPI", "projected"] {
        if let Some(s) = m.get_mut(k).and_then(Value::as_object_mut) {
            set_if_absent(s, "defaultMode", json!(420));
        }
    }
    for k in ["downwardAPI"] {
        if let Some(s) = m.get_mut(k) {
            for item in each_mut(s, "items") {
                if let Some(f) = item.get_mut("fieldRef").and_then(Value::as_object_mut) {
                    set_if_empty_str(f, "apiVersion", "v1");
                }
            }
        }
    }
    if let Some(p) = m.get_mut("projected") {
        for src in each_mut(p, "sources") {
            if let Some(t) = src
                .get_mut("serviceAccountToken")
                .and_then(Value::as_object_mut)
            {
                set_if_absent(t, "expirationSeconds", json!(3600));
            }
            if let Some(d) = src.get_mut("downwardAPI") {
                for item in each_mut(d, "items") {
                    if let Some(f) = item.get_mut("fieldRef").and_then(Value::as_object_mut) {
                        set_if_empty_str(f, "apiVersion", "v1");
                    }
                }
            }
        }
    }
    if let Some(i) = m.get_mut("iscsi").and_then(Value::as_object_mut) {
        set_if_empty_str(i, "iscsiInterface", "default");
    }
    if let Some(spec) = m
        .get_mut("ephemeral")
        .and_then(|e| e.pointer_mut("/volumeClaimTemplate/spec"))
        .and_then(Value::as_object_mut)
    {
        set_if_absent(spec, "volumeMode", json!("Filesystem"));
    }
    if let Some(i) = m.get_mut("image").and_then(Value::as_object_mut) {
        if i.get("pullPolicy")
            .and_then(Value::as_str)
            .unwrap_or("")
            .is_empty()
        {
            let reference = i.get("reference").and_then(Value::as_str).unwrap_or("");
            let p = if image_tag(reference) == "latest" {
                "Always"
            } else {
                "IfNotPresent"
            };
            i.insert("pullPolicy".into(), json!(p));
        }
    }
}

/// `SetDefaults_PodSpec` and the generated defaults of a pod spec's volumes and containers:
/// what pod templates get. Pods get `pod` on top.
pub fn pod_spec(spec: &mut Value) {
    let Some(m) = spec.as_object_mut() else {
        return;
    };
    set_if_empty_str(m, "dnsPolicy", "ClusterFirst");
    set_if_empty_str(m, "restartPolicy", "Always");
    set_if_absent(m, "securityContext", json!({}));
    set_if_absent(m, "terminationGracePeriodSeconds", json!(30));
    set_if_empty_str(m, "schedulerName", "default-scheduler");
    for v in each_mut(spec, "volumes") {
        volume(v);
    }
    for k in ["initContainers", "containers", "ephemeralContainers"] {
        for c in each_mut(spec, k) {
            container(c);
        }
    }
}

/// `SetDefaults_Pod` (requests from limits, enableServiceLinks, host-network ports) then the
/// pod spec's.
pub fn pod(obj: &mut Value) {
    let spec = object_at(obj, "spec");
    let host_network = spec
        .get("hostNetwork")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    set_if_absent(spec, "enableServiceLinks", json!(true));
    let spec = &mut obj["spec"];
    for k in ["containers", "initContainers"] {
        for c in each_mut(spec, k) {
            if let Some(limits) = c
                .pointer("/resources/limits")
                .and_then(Value::as_object)
                .cloned()
            {
                let res = object_at(c, "resources");
                let req = res
                    .entry("requests")
                    .or_insert_with(|| json!({}))
                    .as_object_mut();
                if let Some(req) = req {
                    for (k, v) in limits {
                        req.entry(k).or_insert(v);
                    }
                }
            }
            if host_network {
                for p in each_mut(c, "ports") {
                    let cp = p.get("containerPort").cloned();
                    if p.get("hostPort").and_then(Value::as_i64).unwrap_or(0) == 0 {
                        if let Some(cp) = cp {
                            p["hostPort"] = cp;
                        }
                    }
                }
            }
        }
    }
    pod_spec(&mut obj["spec"]);
}

/// A pod template (`PodTemplateSpec`): the pod spec defaults; its ObjectMeta is a struct,
/// always written.
pub fn pod_template(tpl: Option<&mut Value>) {
    let Some(tpl) = tpl.filter(|t| t.is_object()) else {
        return;
    };
    object_at(tpl, "metadata");
    object_at(tpl, "spec");
    pod_spec(&mut tpl["spec"]);
}

/// `SetDefaults_Service`.
pub fn service(obj: &mut Value) {
    let spec = object_at(obj, "spec");
    set_if_empty_str(spec, "sessionAffinity", "None");
    match spec.get("sessionAffinity").and_then(Value::as_str) {
        Some("None") => {
            spec.remove("sessionAffinityConfig");
        }
        Some("ClientIP") => {
            let has_timeout = spec
                .get("sessionAffinityConfig")
                .and_then(|c| c.pointer("/clientIP/timeoutSeconds"))
                .map(|t| !t.is_null())
                .unwrap_or(false);
            if !has_timeout {
                spec.insert(
                    "sessionAffinityConfig".into(),
                    json!({"clientIP": {"timeoutSeconds": 10800}}),
                );
            }
        }
        _ => {}
    }
    set_if_empty_str(spec, "type", "ClusterIP");
    let ty = spec
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) {
        for p in ports {
            let Some(pm) = p.as_object_mut() else {
                continue;
            };
            set_if_empty_str(pm, "protocol", "TCP");
            let target_unset = match pm.get("targetPort") {
                None | Some(Value::Null) => true,
                Some(Value::String(s)) => s.is_empty(),
                Some(v) => v.as_i64() == Some(0),
            };
            if target_unset {
                let port = pm.get("port").cloned().unwrap_or(json!(0));
                pm.insert("targetPort".into(), port);
            }
        }
    }
    let external_ips = spec
        .get("externalIPs")
        .and_then(Value::as_array)
        .map(|a| !a.is_empty())
        .unwrap_or(false);
    if ty == "NodePort" || ty == "LoadBalancer" || external_ips {
        set_if_empty_str(spec, "externalTrafficPolicy", "Cluster");
    }
    if matches!(ty.as_str(), "NodePort" | "LoadBalancer" | "ClusterIP") {
        set_if_absent(spec, "internalTrafficPolicy", json!("Cluster"));
    }
    if ty == "LoadBalancer" {
        set_if_absent(spec, "allocateLoadBalancerNodePorts", json!(true));
    }
}

/// `SetDefaults_Secret`, and the v1 -> internal conversion's `stringData` (merged into `data`,
/// base64-encoded, winning over `data`'s keys; the field itself is never stored).
pub fn secret(obj: &mut Value) {
    use base64::Engine;
    let Some(m) = obj.as_object_mut() else { return };
    if let Some(Value::Object(sd)) = m.remove("stringData") {
        if !sd.is_empty() {
            let data = m.entry("data").or_insert_with(|| json!({}));
            if !data.is_object() {
                *data = json!({});
            }
            for (k, v) in sd {
                let s = v.as_str().unwrap_or("");
                data[k.as_str()] = json!(base64::engine::general_purpose::STANDARD.encode(s));
            }
        }
    }
    set_if_empty_str(m, "type", "Opaque");
}

/// `SetDefaults_PersistentVolumeClaim(Spec)`: volumeMode, status phase (also for the claim
/// templates of StatefulSets).
pub fn pvc(obj: &mut Value) {
    set_if_absent(object_at(obj, "spec"), "volumeMode", json!("Filesystem"));
    set_if_empty_str(object_at(obj, "status"), "phase", "Pending");
}

/// `SetDefaults_PersistentVolume`.
pub fn pv(obj: &mut Value) {
    let spec = object_at(obj, "spec");
    set_if_empty_str(spec, "persistentVolumeReclaimPolicy", "Retain");
    set_if_absent(spec, "volumeMode", json!("Filesystem"));
    if let Some(h) = spec.get_mut("hostPath").and_then(Value::as_object_mut) {
        set_if_absent(h, "type", json!(""));
    }
    set_if_empty_str(object_at(obj, "status"), "phase", "Pending");
}

/// `SetDefaults_Namespace` (the name label) and `SetDefaults_NamespaceStatus`.
pub fn namespace(obj: &mut Value) {
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if !name.is_empty() {
        let md = object_at(obj, "metadata");
        let labels = md.entry("labels").or_insert_with(|| json!({}));
        if !labels.is_object() {
            *labels = json!({});
        }
        labels["kubernetes.io/metadata.name"] = json!(name);
    }
    set_if_empty_str(object_at(obj, "status"), "phase", "Active");
}

/// `SetDefaults_ReplicationController`: selector and labels from the template's labels;
/// replicas 1 (declarative).
pub fn replication_controller(obj: &mut Value) {
    let tpl_labels = obj.pointer("/spec/template/metadata/labels").cloned();
    if let Some(l) = tpl_labels.filter(Value::is_object) {
        let spec = object_at(obj, "spec");
        if spec
            .get("selector")
            .and_then(Value::as_object)
            .map(|s| s.is_empty())
            .unwrap_or(true)
        {
            spec.insert("selector".into(), l.clone());
        }
        let md = object_at(obj, "metadata");
        if md
            .get("labels")
            .and_then(Value::as_object)
            .map(|s| s.is_empty())
            .unwrap_or(true)
        {
            md.insert("labels".into(), l);
        }
    }
    set_if_absent(object_at(obj, "spec"), "replicas", json!(1));
    pod_template(obj.pointer_mut("/spec/template"));
}

/// `SetDefaults_Endpoints`.
pub fn endpoints(obj: &mut Value) {
    for ss in each_mut(obj, "subsets") {
        for p in each_mut(ss, "ports") {
            if let Some(pm) = p.as_object_mut() {
                set_if_empty_str(pm, "protocol", "TCP");
            }
        }
    }
}

/// apps/v1 `SetDefaults_Deployment`.
pub fn deployment(obj: &mut Value) {
    let spec = object_at(obj, "spec");
    set_if_absent(spec, "replicas", json!(1));
    let strategy = spec.entry("strategy").or_insert_with(|| json!({}));
    if let Some(st) = strategy.as_object_mut() {
        set_if_empty_str(st, "type", "RollingUpdate");
        if st.get("type").and_then(Value::as_str) == Some("RollingUpdate") {
            let ru = st.entry("rollingUpdate").or_insert_with(|| json!({}));
            if ru.is_null() {
                *ru = json!({});
            }
            if let Some(ru) = ru.as_object_mut() {
                set_if_absent(ru, "maxUnavailable", json!("25%"));
                set_if_absent(ru, "maxSurge", json!("25%"));
            }
        }
    }
    set_if_absent(spec, "revisionHistoryLimit", json!(10));
    set_if_absent(spec, "progressDeadlineSeconds", json!(600));
    pod_template(obj.pointer_mut("/spec/template"));
}

/// apps/v1 `SetDefaults_DaemonSet`.
pub fn daemon_set(obj: &mut Value) {
    let spec = object_at(obj, "spec");
    let st = spec.entry("updateStrategy").or_insert_with(|| json!({}));
    if let Some(st) = st.as_object_mut() {
        set_if_empty_str(st, "type", "RollingUpdate");
        if st.get("type").and_then(Value::as_str) == Some("RollingUpdate") {
            let ru = st.entry("rollingUpdate").or_insert_with(|| json!({}));
            if ru.is_null() {
                *ru = json!({});
            }
            if let Some(ru) = ru.as_object_mut() {
                set_if_absent(ru, "maxUnavailable", json!(1));
                set_if_absent(ru, "maxSurge", json!(0));
            }
        }
    }
    set_if_absent(spec, "revisionHistoryLimit", json!(10));
    pod_template(obj.pointer_mut("/spec/template"));
}

/// apps/v1 `SetDefaults_StatefulSet` (MaxUnavailableStatefulSet is off in 1.35: no
/// maxUnavailable default), and the claim templates' PVC defaults.
pub fn stateful_set(obj: &mut Value) {
    let spec = object_at(obj, "spec");
    set_if_empty_str(spec, "podManagementPolicy", "OrderedReady");
    let st = spec.entry("updateStrategy").or_insert_with(|| json!({}));
    if let Some(st) = st.as_object_mut() {
        if st
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("")
            .is_empty()
        {
            st.insert("type".into(), json!("RollingUpdate"));
            set_if_absent(st, "rollingUpdate", json!({}));
        }
        if st.get("type").and_then(Value::as_str) == Some("RollingUpdate") {
            if let Some(ru) = st.get_mut("rollingUpdate").and_then(Value::as_object_mut) {
                set_if_absent(ru, "partition", json!(0));
            }
        }
    }
    let p = spec
        .entry("persistentVolumeClaimRetentionPolicy")
        .or_insert_with(|| json!({}));
    if let Some(p) = p.as_object_mut() {
        set_if_empty_str(p, "whenDeleted", "Retain");
        set_if_empty_str(p, "whenScaled", "Retain");
    }
    set_if_absent(spec, "replicas", json!(1));
    set_if_absent(spec, "revisionHistoryLimit", json!(10));
    pod_template(obj.pointer_mut("/spec/template"));
    if let Some(spec) = obj.get_mut("spec") {
        for t in each_mut(spec, "volumeClaimTemplates") {
            pvc(t);
        }
    }
}

/// apps/v1 `SetDefaults_ReplicaSet`.
pub fn replica_set(obj: &mut Value) {
    set_if_absent(object_at(obj, "spec"), "replicas", json!(1));
    pod_template(obj.pointer_mut("/spec/template"));
}

/// batch/v1 `SetDefaults_Job` (JobPodReplacementPolicy is on). The Job's labels default to its
/// template's: the same map in Go, so the labels the strategy generates later show on both
/// (see `super::generate_job_selector`).
pub fn job(obj: &mut Value) {
    let spec = object_at(obj, "spec");
    if spec.get("completions").map(Value::is_null).unwrap_or(true)
        && spec.get("parallelism").map(Value::is_null).unwrap_or(true)
    {
        spec.insert("completions".into(), json!(1));
        spec.insert("parallelism".into(), json!(1));
    }
    set_if_absent(spec, "parallelism", json!(1));
    let per_index = spec
        .get("backoffLimitPerIndex")
        .map(|v| !v.is_null())
        .unwrap_or(false);
    set_if_absent(
        spec,
        "backoffLimit",
        json!(if per_index { i32::MAX as i64 } else { 6 }),
    );
    set_if_absent(spec, "completionMode", json!("NonIndexed"));
    set_if_absent(spec, "suspend", json!(false));
    let pfp = spec
        .get("podFailurePolicy")
        .map(|v| !v.is_null())
        .unwrap_or(false);
    set_if_absent(
        spec,
        "podReplacementPolicy",
        json!(if pfp { "Failed" } else { "TerminatingOrFailed" }),
    );
    set_if_absent(spec, "manualSelector", json!(false));
    if let Some(rules) = spec
        .get_mut("podFailurePolicy")
        .and_then(|p| p.get_mut("rules"))
        .and_then(Value::as_array_mut)
    {
        for r in rules {
            for c in each_mut(r, "onPodConditions") {
                if let Some(cm) = c.as_object_mut() {
                    set_if_empty_str(cm, "status", "True");
                }
            }
        }
    }
    let tpl_labels = obj.pointer("/spec/template/metadata/labels").cloned();
    if let Some(l) = tpl_labels.filter(Value::is_object) {
        let md = object_at(obj, "metadata");
        if md
            .get("labels")
            .and_then(Value::as_object)
            .map(|m| m.is_empty())
            .unwrap_or(true)
        {
            md.insert("labels".into(), l);
        }
    }
    pod_template(obj.pointer_mut("/spec/template"));
}

/// batch/v1 `SetDefaults_CronJob`; the job template's ObjectMeta and its pod template's.
pub fn cron_job(obj: &mut Value) {
    let spec = object_at(obj, "spec");
    set_if_empty_str(spec, "concurrencyPolicy", "Allow");
    set_if_absent(spec, "suspend", json!(false));
    set_if_absent(spec, "successfulJobsHistoryLimit", json!(3));
    set_if_absent(spec, "failedJobsHistoryLimit", json!(1));
    let jt = spec.entry("jobTemplate").or_insert_with(|| json!({}));
    if jt.is_object() {
        object_at(jt, "metadata");
        let js = object_at(jt, "spec");
        js.entry("template").or_insert_with(|| json!({}));
    }
    pod_template(obj.pointer_mut("/spec/jobTemplate/spec/template"));
}

/// networking/v1 `SetDefaults_NetworkPolicy` and `SetDefaults_NetworkPolicyPort`.
pub fn network_policy(obj: &mut Value) {
    let spec = object_at(obj, "spec");
    let empty = spec
        .get("policyTypes")
        .and_then(Value::as_array)
        .map(Vec::is_empty)
        .unwrap_or(true);
    if empty {
        let egress = spec
            .get("egress")
            .and_then(Value::as_array)
            .map(|e| !e.is_empty())
            .unwrap_or(false);
        let mut types = vec![json!("Ingress")];
        if egress {
            types.push(json!("Egress"));
        }
        spec.insert("policyTypes".into(), Value::Array(types));
    }
    let spec = &mut obj["spec"];
    for dir in ["ingress", "egress"] {
        for rule in each_mut(spec, dir) {
            for p in each_mut(rule, "ports") {
                if let Some(pm) = p.as_object_mut() {
                    set_if_absent(pm, "protocol", json!("TCP"));
                }
            }
        }
    }
}

/// networking/v1 `SetDefaults_IngressClass`.
pub fn ingress_class(obj: &mut Value) {
    if let Some(p) = obj
        .pointer_mut("/spec/parameters")
        .and_then(Value::as_object_mut)
    {
        set_if_absent(p, "scope", json!("Cluster"));
    }
}

/// rbac/v1 `SetDefaults_RoleBinding` / `ClusterRoleBinding` and `SetDefaults_Subject`.
pub fn role_binding(obj: &mut Value) {
    set_if_empty_str(
        object_at(obj, "roleRef"),
        "apiGroup",
        "rbac.authorization.k8s.io",
    );
    for s in each_mut(obj, "subjects") {
        let Some(sm) = s.as_object_mut() else {
            continue;
        };
        if sm
            .get("apiGroup")
            .and_then(Value::as_str)
            .unwrap_or("")
            .is_empty()
        {
            match sm.get("kind").and_then(Value::as_str) {
                Some("User") | Some("Group") => {
                    sm.insert("apiGroup".into(), json!("rbac.authorization.k8s.io"));
                }
                _ => {}
            }
        }
    }
}

/// storage/v1 `SetDefaults_StorageClass`.
pub fn storage_class(obj: &mut Value) {
    let Some(m) = obj.as_object_mut() else { return };
    set_if_absent(m, "reclaimPolicy", json!("Delete"));
    set_if_absent(m, "volumeBindingMode", json!("Immediate"));
}

/// storage/v1 `SetDefaults_CSIDriver` (SELinuxMountReadWriteOncePod is beta, on: seLinuxMount).
pub fn csi_driver(obj: &mut Value) {
    let spec = object_at(obj, "spec");
    set_if_absent(spec, "attachRequired", json!(true));
    set_if_absent(spec, "podInfoOnMount", json!(false));
    set_if_absent(spec, "storageCapacity", json!(false));
    set_if_absent(spec, "fsGroupPolicy", json!("ReadWriteOnceWithFSType"));
    let empty = spec
        .get("volumeLifecycleModes")
        .and_then(Value::as_array)
        .map(Vec::is_empty)
        .unwrap_or(true);
    if empty {
        spec.insert("volumeLifecycleModes".into(), json!(["Persistent"]));
    }
    set_if_absent(spec, "requiresRepublish", json!(false));
    set_if_absent(spec, "seLinuxMount", json!(false));
}

/// core/v1 `SetDefaults_LimitRangeItem`: a Container item's default limit from its max, its
/// default request from the default limit, then from its min.
pub fn limit_range(obj: &mut Value) {
    let Some(limits) = obj
        .pointer_mut("/spec/limits")
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    for item in limits {
        if item.get("type").and_then(Value::as_str) != Some("Container") {
            continue;
        }
        let Some(m) = item.as_object_mut() else {
            continue;
        };
        let max = m
            .get("max")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let min = m
            .get("min")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let default = m.entry("default").or_insert_with(|| json!({}));
        if let Some(d) = default.as_object_mut() {
            for (k, v) in max {
                d.entry(k).or_insert(v);
            }
        }
        let default = m
            .get("default")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let request = m.entry("defaultRequest").or_insert_with(|| json!({}));
        if let Some(r) = request.as_object_mut() {
            for (k, v) in default.into_iter().chain(min) {
                r.entry(k).or_insert(v);
            }
        }
        for k in ["default", "defaultRequest"] {
            if m.get(k).and_then(Value::as_object).map(|o| o.is_empty()) == Some(true) {
                m.remove(k);
            }
        }
    }
}

/// scheduling/v1 `SetDefaults_PriorityClass`.
pub fn priority_class(obj: &mut Value) {
    if let Some(m) = obj.as_object_mut() {
        set_if_absent(m, "preemptionPolicy", json!("PreemptLowerPriority"));
    }
}

/// discovery/v1 `SetDefaults_EndpointPort`, and each endpoint's conditions (a struct, always
/// written).
pub fn endpoint_slice(obj: &mut Value) {
    for p in each_mut(obj, "ports") {
        if let Some(pm) = p.as_object_mut() {
            set_if_absent(pm, "name", json!(""));
            set_if_absent(pm, "protocol", json!("TCP"));
        }
    }
    for e in each_mut(obj, "endpoints") {
        if let Some(em) = e.as_object_mut() {
            set_if_absent(em, "conditions", json!({}));
        }
    }
}

/// The defaults of one built-in kind (`group`, `kind`), if it has any.
/// `SetDefaults_Rule` (admissionregistration/v1): a rule's scope is `*`.
fn admission_rule(rule: &mut Value) {
    if let Some(m) = rule.as_object_mut() {
        set_if_absent(m, "scope", json!("*"));
    }
}

/// `SetDefaults_ValidatingWebhook` / `SetDefaults_MutatingWebhook` with the generated
/// defaulter's calls for the webhook's service and rules.
fn webhook(w: &mut Value, mutating: bool) {
    let Some(m) = w.as_object_mut() else { return };
    set_if_absent(m, "failurePolicy", json!("Fail"));
    set_if_absent(m, "matchPolicy", json!("Equivalent"));
    set_if_absent(m, "namespaceSelector", json!({}));
    set_if_absent(m, "objectSelector", json!({}));
    set_if_absent(m, "timeoutSeconds", json!(10));
    if mutating {
        set_if_absent(m, "reinvocationPolicy", json!("Never"));
    }
    if let Some(svc) = w
        .pointer_mut("/clientConfig/service")
        .and_then(Value::as_object_mut)
    {
        set_if_absent(svc, "port", json!(443));
    }
    for r in each_mut(w, "rules") {
        admission_rule(r);
    }
}

/// `SetDefaults_MatchResources` and its rules' scope.
fn match_resources(mr: Option<&mut Value>) {
    let Some(mr) = mr.filter(|v| v.is_object()) else {
        return;
    };
    if let Some(m) = mr.as_object_mut() {
        set_if_absent(m, "matchPolicy", json!("Equivalent"));
        set_if_absent(m, "namespaceSelector", json!({}));
        set_if_absent(m, "objectSelector", json!({}));
    }
    for key in ["resourceRules", "excludeResourceRules"] {
        for r in each_mut(mr, key) {
            admission_rule(r);
        }
    }
}

/// admissionregistration/v1 (`pkg/apis/admissionregistration/v1/defaults.go` and its generated
/// defaulter).
pub fn admission_registration(kind: &str, obj: &mut Value) {
    match kind {
        "MutatingWebhookConfiguration" | "ValidatingWebhookConfiguration" => {
            let mutating = kind == "MutatingWebhookConfiguration";
            for w in each_mut(obj, "webhooks") {
                webhook(w, mutating);
            }
        }
        "ValidatingAdmissionPolicy" => {
            let spec = object_at(obj, "spec");
            set_if_absent(spec, "failurePolicy", json!("Fail"));
            match_resources(obj.pointer_mut("/spec/matchConstraints"));
        }
        "ValidatingAdmissionPolicyBinding" => {
            match_resources(obj.pointer_mut("/spec/matchResources"));
        }
        _ => {}
    }
}

/// flowcontrol/v1 (`pkg/apis/flowcontrol/v1/defaults.go`).
pub fn flow_control(kind: &str, obj: &mut Value) {
    match kind {
        "FlowSchema" => {
            let spec = object_at(obj, "spec");
            if spec
                .get("matchingPrecedence")
                .and_then(Value::as_i64)
                .unwrap_or(0)
                == 0
            {
                spec.insert("matchingPrecedence".into(), json!(1000));
            }
        }
        "PriorityLevelConfiguration" => {
            if let Some(l) = obj
                .pointer_mut("/spec/limited")
                .and_then(Value::as_object_mut)
            {
                set_if_absent(l, "nominalConcurrencyShares", json!(30));
                set_if_absent(l, "lendablePercent", json!(0));
            }
            if let Some(q) = obj
                .pointer_mut("/spec/limited/limitResponse/queuing")
                .and_then(Value::as_object_mut)
            {
                for (k, d) in [("handSize", 8), ("queues", 64), ("queueLengthLimit", 50)] {
                    if q.get(k).and_then(Value::as_i64).unwrap_or(0) == 0 {
                        q.insert(k.into(), json!(d));
                    }
                }
            }
            if let Some(e) = obj
                .pointer_mut("/spec/exempt")
                .and_then(Value::as_object_mut)
            {
                set_if_absent(e, "nominalConcurrencyShares", json!(0));
                set_if_absent(e, "lendablePercent", json!(0));
            }
        }
        _ => {}
    }
}

/// `SetDefaults_ExactDeviceRequest` / `SetDefaults_DeviceSubRequest` (resource/v1).
fn device_request(r: &mut Value) {
    let Some(m) = r.as_object_mut() else { return };
    set_if_empty_str(m, "allocationMode", "ExactCount");
    if m.get("allocationMode").and_then(Value::as_str) == Some("ExactCount")
        && m.get("count").and_then(Value::as_i64).unwrap_or(0) == 0
    {
        m.insert("count".into(), json!(1));
    }
}

/// The device requests of a claim spec: `exactly` and each `firstAvailable` sub-request.
fn device_claim(spec: Option<&mut Value>) {
    let Some(spec) = spec else { return };
    let Some(devices) = spec.get_mut("devices") else {
        return;
    };
    for req in each_mut(devices, "requests") {
        if let Some(e) = req.get_mut("exactly").filter(|v| v.is_object()) {
            device_request(e);
        }
        for sub in each_mut(req, "firstAvailable") {
            device_request(sub);
        }
    }
}

/// resource.k8s.io/v1 (`pkg/apis/resource/v1/defaults.go` and its generated defaulter).
pub fn resource(kind: &str, obj: &mut Value) {
    match kind {
        "ResourceClaim" => device_claim(obj.get_mut("spec")),
        "ResourceClaimTemplate" => device_claim(obj.pointer_mut("/spec/spec")),
        _ => {}
    }
}

/// apiextensions.k8s.io/v1 `SetDefaults_CustomResourceDefinitionSpec`: no conversion is
/// `None`; a webhook service's port is 443.
pub fn custom_resource_definition(obj: &mut Value) {
    let spec = object_at(obj, "spec");
    set_if_absent(spec, "conversion", json!({"strategy": "None"}));
    if let Some(svc) = obj
        .pointer_mut("/spec/conversion/webhook/clientConfig/service")
        .and_then(Value::as_object_mut)
    {
        set_if_absent(svc, "port", json!(443));
    }
}

/// A Node's pod CIDRs through the v1 <-> internal conversion (pkg/apis/core/v1/conversion.go):
/// `podCIDR` alone becomes `podCIDRs`, and wins when both are given and differ; `podCIDR` is
/// written back as the first of `podCIDRs`.
pub fn node(obj: &mut Value) {
    // SetDefaults_NodeStatus: no allocatable means all of the capacity.
    if let Some(status) = obj.get_mut("status").and_then(Value::as_object_mut) {
        let capacity = status.get("capacity").filter(|c| !c.is_null()).cloned();
        if let (None | Some(Value::Null), Some(c)) = (status.get("allocatable"), capacity) {
            status.insert("allocatable".into(), c);
        }
    }
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let single = spec
        .get("podCIDR")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let first = spec
        .get("podCIDRs")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
        .and_then(Value::as_str)
        .map(str::to_string);
    match first {
        None if !single.is_empty() => {
            spec.insert("podCIDRs".into(), json!([single]));
        }
        Some(f) if !single.is_empty() && f != single => {
            spec.insert("podCIDRs".into(), json!([single]));
        }
        Some(f) if single.is_empty() => {
            spec.insert("podCIDR".into(), json!(f));
        }
        _ => {}
    }
}

/// autoscaling/v1 and v2 `SetDefaults_HorizontalPodAutoscaler`: minReplicas 1; in v2 also the
/// CPU utilization target (80 %) when no metric is given and the scaling rules' defaults when a
/// behavior is (`GenerateHPAScaleUpRules` / `GenerateHPAScaleDownRules`). v1's CPU target is
/// its conversion's business.
fn horizontal_pod_autoscaler(obj: &mut Value) {
    let v1 = obj.get("apiVersion").and_then(Value::as_str) == Some("autoscaling/v1");
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    if spec.get("minReplicas").is_none_or(Value::is_null) {
        spec.insert("minReplicas".into(), json!(1));
    }
    if v1 {
        return;
    }
    if spec
        .get("metrics")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty)
    {
        spec.insert(
            "metrics".into(),
            json!([{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]),
        );
    }
    if let Some(b) = spec.get_mut("behavior").and_then(Value::as_object_mut) {
        let rules = |given: Option<&Value>, up: bool| -> Value {
            let mut r = if up {
                json!({"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
                       "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15}, {"type": "Percent", "value": 100, "periodSeconds": 15}]})
            } else {
                json!({"selectPolicy": "Max", "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]})
            };
            if let Some(g) = given.and_then(Value::as_object) {
                for k in [
                    "selectPolicy",
                    "stabilizationWindowSeconds",
                    "policies",
                    "tolerance",
                ] {
                    if let Some(v) = g.get(k).filter(|v| !v.is_null()) {
                        r[k] = v.clone();
                    }
                }
            }
            r
        };
        let up = rules(b.get("scaleUp"), true);
        let down = rules(b.get("scaleDown"), false);
        b.insert("scaleUp".into(), up);
        b.insert("scaleDown".into(), down);
    }
}

pub fn apply(group: &str, kind: &str, obj: &mut Value) {
    match (group, kind) {
        ("", "Node") => node(obj),
        ("admissionregistration.k8s.io", k) => admission_registration(k, obj),
        ("flowcontrol.apiserver.k8s.io", k) => flow_control(k, obj),
        ("resource.k8s.io", k) => resource(k, obj),
        ("apiextensions.k8s.io", "CustomResourceDefinition") => custom_resource_definition(obj),
        ("", "Pod") => pod(obj),
        ("", "PodTemplate") => pod_template(obj.get_mut("template")),
        ("", "Service") => service(obj),
        ("", "Secret") => secret(obj),
        ("", "PersistentVolumeClaim") => pvc(obj),
        ("", "PersistentVolume") => pv(obj),
        ("", "Namespace") => namespace(obj),
        ("", "ReplicationController") => replication_controller(obj),
        ("", "Endpoints") => endpoints(obj),
        ("", "LimitRange") => limit_range(obj),
        ("scheduling.k8s.io", "PriorityClass") => priority_class(obj),
        ("discovery.k8s.io", "EndpointSlice") => endpoint_slice(obj),
        ("apps", "Deployment") => deployment(obj),
        ("apps", "DaemonSet") => daemon_set(obj),
        ("apps", "StatefulSet") => stateful_set(obj),
        ("apps", "ReplicaSet") => replica_set(obj),
        ("batch", "Job") => job(obj),
        ("batch", "CronJob") => cron_job(obj),
        ("autoscaling", "HorizontalPodAutoscaler") => horizontal_pod_autoscaler(obj),
        ("networking.k8s.io", "NetworkPolicy") => network_policy(obj),
        ("networking.k8s.io", "IngressClass") => ingress_class(obj),
        ("rbac.authorization.k8s.io", "RoleBinding" | "ClusterRoleBinding") => role_binding(obj),
        ("storage.k8s.io", "StorageClass") => storage_class(obj),
        ("storage.k8s.io", "CSIDriver") => csi_driver(obj),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_tags_as_parse_image_name() {
        assert_eq!(image_tag("busybox"), "latest");
        assert_eq!(image_tag("nginx:1.27"), "1.27");
        assert_eq!(image_tag("registry:5000/app"), "latest");
        assert_eq!(image_tag("app@sha256:abc"), "");
        assert_eq!(image_tag("app:v1@sha256:abc"), "v1");
    }

    #[test]
    fn secrets_take_string_data_into_data() {
        let mut s = json!({"data": {"a": "eA=="}, "stringData": {"a": "b", "c": "d"}});
        secret(&mut s);
        assert_eq!(
            s,
            json!({"data": {"a": "Yg==", "c": "ZA=="}, "type": "Opaque"})
        );
    }

    #[test]
    fn deployment_strategy_fills_in_rolling_update() {
        let mut d = json!({"spec": {"strategy": {"rollingUpdate": {"maxSurge": 1}}}});
        deployment(&mut d);
        assert_eq!(
            d["spec"]["strategy"],
            json!({"rollingUpdate": {"maxSurge": 1, "maxUnavailable": "25%"}, "type": "RollingUpdate"})
        );
    }
}
