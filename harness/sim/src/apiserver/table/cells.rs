//! The cells that need more than one field: one function per column, with the logic of the
//! matching `print<Kind>` function of the real server's printers.

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};

use super::access::*;
use super::human_duration;

// ----- Pod -----------------------------------------------------------------

pub(super) fn pod_row_conditions(pod: &Value) -> Option<Value> {
    let (reason, message) = match str_at(pod, &["status", "phase"]) {
        "Succeeded" => ("Succeeded", "The pod has completed successfully."),
        "Failed" => ("Failed", "The pod failed."),
        _ => return None,
    };
    let mut c = Map::new();
    c.insert("type".into(), s("Completed"));
    c.insert("status".into(), s("True"));
    c.insert("reason".into(), s(reason));
    c.insert("message".into(), s(message));
    Some(Value::Array(vec![Value::Object(c)]))
}

fn has_condition(conditions: &[Value], type_: &str, status: &str) -> bool {
    conditions
        .iter()
        .any(|c| str_at(c, &["type"]) == type_ && str_at(c, &["status"]) == status)
}

/// Keep the later of two "last restart" times (None = Go zero time).
fn later(cur: Option<DateTime<Utc>>, cand: Option<DateTime<Utc>>) -> Option<DateTime<Utc>> {
    match (cur, cand) {
        (Some(a), Some(b)) => Some(if b > a { b } else { a }),
        (None, b) => b,
        (a, None) => a,
    }
}

fn last_termination_finished(status: &Value) -> Option<DateTime<Utc>> {
    object_at(status, &["lastState", "terminated"]).and_then(|t| time_at(t, &["finishedAt"]))
}

/// Ready, Status and Restarts of a pod, computed together as `printPod` does.
struct PodSummary {
    ready: String,
    reason: String,
    restarts: String,
}

fn pod_summary(pod: &Value, now: DateTime<Utc>) -> PodSummary {
    let status = at(pod, &["status"]).unwrap_or(&Value::Null);
    let containers = arr_at(pod, &["spec", "containers"]);
    let init_specs = arr_at(pod, &["spec", "initContainers"]);
    let conditions = arr_at(status, &["conditions"]);

    let mut restarts: i64 = 0;
    let mut restartable_init_restarts: i64 = 0;
    let mut total_containers = containers.len() as i64;
    let mut ready_containers: i64 = 0;
    let mut last_restart: Option<DateTime<Utc>> = None;
    let mut last_restartable_init_restart: Option<DateTime<Utc>> = None;

    let phase = str_at(status, &["phase"]);
    let status_reason = str_at(status, &["reason"]);
    let mut reason = if status_reason.is_empty() {
        phase.to_string()
    } else {
        status_reason.to_string()
    };

    for c in conditions {
        if str_at(c, &["type"]) == "PodScheduled" && str_at(c, &["reason"]) == "SchedulingGated" {
            reason = "SchedulingGated".to_string();
        }
    }

    // Sidecars (init containers with restartPolicy Always) count as containers.
    let is_restartable_init = |name: &str| -> bool {
        init_specs
            .iter()
            .find(|c| str_at(c, &["name"]) == name)
            .is_some_and(|c| str_at(c, &["restartPolicy"]) == "Always")
    };
    for c in init_specs {
        if str_at(c, &["restartPolicy"]) == "Always" {
            total_containers += 1;
        }
    }

    let mut initializing = false;
    for (i, cs) in arr_at(status, &["initContainerStatuses"])
        .iter()
        .enumerate()
    {
        let restart_count = int_at(cs, &["restartCount"]);
        restarts = restarts.saturating_add(restart_count);
        let finished = last_termination_finished(cs);
        last_restart = later(last_restart, finished);
        let restartable = is_restartable_init(str_at(cs, &["name"]));
        if restartable {
            restartable_init_restarts = restartable_init_restarts.saturating_add(restart_count);
            last_restartable_init_restart = later(last_restartable_init_restart, finished);
        }
        let terminated = object_at(cs, &["state", "terminated"]);
        let waiting = object_at(cs, &["state", "waiting"]);
        if let Some(t) = terminated {
            if int_at(t, &["exitCode"]) == 0 {
                continue;
            }
        }
        if restartable && opt_bool_at(cs, &["started"]) == Some(true) {
            if bool_at(cs, &["ready"]) {
                ready_containers += 1;
            }
            continue;
        }
        if let Some(t) = terminated {
            // Initialization failed.
            let r = str_at(t, &["reason"]);
            reason = if !r.is_empty() {
                format!("Init:{}", r)
            } else if int_at(t, &["signal"]) != 0 {
                format!("Init:Signal:{}", int_at(t, &["signal"]))
            } else {
                format!("Init:ExitCode:{}", int_at(t, &["exitCode"]))
            };
        } else if let Some(w) = waiting.filter(|w| {
            let r = str_at(w, &["reason"]);
            !r.is_empty() && r != "PodInitializing"
        }) {
            reason = format!("Init:{}", str_at(w, &["reason"]));
        } else {
            reason = format!("Init:{}/{}", i, init_specs.len());
        }
        initializing = true;
        break;
    }

    if !initializing || has_condition(conditions, "Initialized", "True") {
        // Note: the real printer checks the *first* Initialized condition only;
        // pods never carry duplicates so `any` is equivalent.
        restarts = restartable_init_restarts;
        last_restart = last_restartable_init_restart;
        let mut has_running = false;
        for cs in arr_at(status, &["containerStatuses"]).iter().rev() {
            restarts = restarts.saturating_add(int_at(cs, &["restartCount"]));
            last_restart = later(last_restart, last_termination_finished(cs));
            let waiting_reason =
                object_at(cs, &["state", "waiting"]).map(|w| str_at(w, &["reason"]));
            let terminated = object_at(cs, &["state", "terminated"]);
            if let Some(r) = waiting_reason.filter(|r| !r.is_empty()) {
                reason = r.to_string();
            } else if let Some(t) = terminated {
                let r = str_at(t, &["reason"]);
                reason = if !r.is_empty() {
                    r.to_string()
                } else if int_at(t, &["signal"]) != 0 {
                    format!("Signal:{}", int_at(t, &["signal"]))
                } else {
                    format!("ExitCode:{}", int_at(t, &["exitCode"]))
                };
            } else if bool_at(cs, &["ready"]) && object_at(cs, &["state", "running"]).is_some() {
                has_running = true;
                ready_containers += 1;
            }
        }
        // A pod whose containers finished except for some still running ones
        // is shown as Running / NotReady rather than Completed.
        if reason == "Completed" && has_running {
            reason = if has_condition(conditions, "Ready", "True") {
                "Running".to_string()
            } else {
                "NotReady".to_string()
            };
        }
    }

    if is_deleting(pod) && status_reason == "NodeLost" {
        reason = "Unknown".to_string();
    } else if is_deleting(pod) && phase != "Succeeded" && phase != "Failed" {
        reason = "Terminating".to_string();
    }

    let restarts_text = match last_restart {
        Some(t) if restarts != 0 => format!("{} ({} ago)", restarts, since(Some(t), now)),
        _ => restarts.to_string(),
    };

    PodSummary {
        ready: format!("{}/{}", ready_containers, total_containers),
        reason,
        restarts: restarts_text,
    }
}

pub(super) fn pod_ready(pod: &Value, now: DateTime<Utc>) -> Value {
    Value::String(pod_summary(pod, now).ready)
}

pub(super) fn pod_status(pod: &Value, now: DateTime<Utc>) -> Value {
    Value::String(pod_summary(pod, now).reason)
}

pub(super) fn pod_restarts(pod: &Value, now: DateTime<Utc>) -> Value {
    Value::String(pod_summary(pod, now).restarts)
}

fn or_none(x: &str) -> Value {
    Value::String(if x.is_empty() {
        "<none>".to_string()
    } else {
        x.to_string()
    })
}

pub(super) fn pod_ip(pod: &Value, _: DateTime<Utc>) -> Value {
    let ip = arr_at(pod, &["status", "podIPs"])
        .first()
        .map(|ip| str_at(ip, &["ip"]))
        .unwrap_or("");
    // podIPs is derived from podIP by the server; accept either.
    or_none(if ip.is_empty() {
        str_at(pod, &["status", "podIP"])
    } else {
        ip
    })
}

pub(super) fn pod_node(pod: &Value, _: DateTime<Utc>) -> Value {
    or_none(str_at(pod, &["spec", "nodeName"]))
}

pub(super) fn pod_nominated_node(pod: &Value, _: DateTime<Utc>) -> Value {
    or_none(str_at(pod, &["status", "nominatedNodeName"]))
}

pub(super) fn pod_readiness_gates(pod: &Value, _: DateTime<Utc>) -> Value {
    let gates = arr_at(pod, &["spec", "readinessGates"]);
    if gates.is_empty() {
        return s("<none>");
    }
    let conditions = arr_at(pod, &["status", "conditions"]);
    let true_count = gates
        .iter()
        .filter(|g| {
            let t = str_at(g, &["conditionType"]);
            conditions
                .iter()
                .find(|c| str_at(c, &["type"]) == t)
                .is_some_and(|c| str_at(c, &["status"]) == "True")
        })
        .count();
    Value::String(format!("{}/{}", true_count, gates.len()))
}

// ----- Node ----------------------------------------------------------------

pub(super) fn node_status(node: &Value, _: DateTime<Utc>) -> Value {
    // The last Ready condition wins (the real printer builds a map by type).
    let ready = arr_at(node, &["status", "conditions"])
        .iter()
        .rev()
        .find(|c| str_at(c, &["type"]) == "Ready");
    let mut status: Vec<&str> = Vec::new();
    match ready {
        Some(c) if str_at(c, &["status"]) == "True" => status.push("Ready"),
        Some(_) => status.push("NotReady"),
        None => status.push("Unknown"),
    }
    if bool_at(node, &["spec", "unschedulable"]) {
        status.push("SchedulingDisabled");
    }
    Value::String(status.join(","))
}

pub(super) fn node_roles(node: &Value, _: DateTime<Utc>) -> Value {
    let mut roles = BTreeSet::new();
    if let Some(labels) = map_at(node, &["metadata", "labels"]) {
        for (k, v) in labels {
            if let Some(role) = k.strip_prefix("node-role.kubernetes.io/") {
                if !role.is_empty() {
                    roles.insert(role.to_string());
                }
            } else if k == "kubernetes.io/role" {
                let v = plain_string(v);
                if !v.is_empty() {
                    roles.insert(v);
                }
            }
        }
    }
    Value::String(if roles.is_empty() {
        "<none>".to_string()
    } else {
        roles.into_iter().collect::<Vec<_>>().join(",")
    })
}

fn node_address(node: &Value, type_: &str) -> Value {
    Value::String(
        arr_at(node, &["status", "addresses"])
            .iter()
            .find(|a| str_at(a, &["type"]) == type_)
            .map(|a| str_at(a, &["address"]).to_string())
            .unwrap_or_else(|| "<none>".to_string()),
    )
}

pub(super) fn node_internal_ip(node: &Value, _: DateTime<Utc>) -> Value {
    node_address(node, "InternalIP")
}

pub(super) fn node_external_ip(node: &Value, _: DateTime<Utc>) -> Value {
    node_address(node, "ExternalIP")
}

fn node_info(node: &Value, field: &str) -> Value {
    s(match str_at(node, &["status", "nodeInfo", field]) {
        "" => "<unknown>",
        x => x,
    })
}

pub(super) fn node_os_image(node: &Value, _: DateTime<Utc>) -> Value {
    node_info(node, "osImage")
}

pub(super) fn node_kernel(node: &Value, _: DateTime<Utc>) -> Value {
    node_info(node, "kernelVersion")
}

pub(super) fn node_runtime(node: &Value, _: DateTime<Utc>) -> Value {
    node_info(node, "containerRuntimeVersion")
}

// ----- Namespace, PersistentVolumeClaim, PersistentVolume ----------------------

pub(super) fn namespace_phase(ns: &Value, _: DateTime<Utc>) -> Value {
    // Defaulted to Active by the server.
    s(match str_at(ns, &["status", "phase"]) {
        "" => "Active",
        p => p,
    })
}

const BETA_STORAGE_CLASS_ANNOTATION: &str = "volume.beta.kubernetes.io/storage-class";

/// Phase with the server's default (`Pending`), or `Terminating` while being deleted.
pub(super) fn volume_phase(obj: &Value, _: DateTime<Utc>) -> Value {
    if is_deleting(obj) {
        return s("Terminating");
    }
    s(match str_at(obj, &["status", "phase"]) {
        "" => "Pending",
        p => p,
    })
}

pub(super) fn pvc_capacity(pvc: &Value, _: DateTime<Utc>) -> Value {
    if str_at(pvc, &["spec", "volumeName"]).is_empty() {
        return s("");
    }
    Value::String(quantity_string(at(pvc, &["status", "capacity", "storage"])))
}

pub(super) fn pvc_access_modes(pvc: &Value, _: DateTime<Utc>) -> Value {
    if str_at(pvc, &["spec", "volumeName"]).is_empty() {
        return s("");
    }
    Value::String(access_modes(arr_at(pvc, &["status", "accessModes"])))
}

/// The beta annotation wins over `spec.storageClassName` (PVCs and PVs alike).
pub(super) fn volume_storage_class(obj: &Value, _: DateTime<Utc>) -> Value {
    s(match annotation(obj, BETA_STORAGE_CLASS_ANNOTATION) {
        Some(c) => c,
        None => str_at(obj, &["spec", "storageClassName"]),
    })
}

pub(super) fn pv_claim(pv: &Value, _: DateTime<Utc>) -> Value {
    Value::String(match object_at(pv, &["spec", "claimRef"]) {
        Some(r) => format!("{}/{}", str_at(r, &["namespace"]), str_at(r, &["name"])),
        None => String::new(),
    })
}

pub(super) fn pv_capacity(pv: &Value, _: DateTime<Utc>) -> Value {
    Value::String(quantity_string(at(pv, &["spec", "capacity", "storage"])))
}

pub(super) fn pv_access_modes(pv: &Value, _: DateTime<Utc>) -> Value {
    Value::String(access_modes(arr_at(pv, &["spec", "accessModes"])))
}

// ----- storage.k8s.io --------------------------------------------------------

pub(super) fn storage_class_name(sc: &Value, _: DateTime<Utc>) -> Value {
    let is_default = annotation(sc, "storageclass.kubernetes.io/is-default-class") == Some("true")
        || annotation(sc, "storageclass.beta.kubernetes.io/is-default-class") == Some("true");
    let mut name = name_of(sc).to_string();
    if is_default {
        name.push_str(" (default)");
    }
    Value::String(name)
}

pub(super) fn csi_token_requests(d: &Value, _: DateTime<Utc>) -> Value {
    let token_requests = arr_at(d, &["spec", "tokenRequests"]);
    if token_requests.is_empty() {
        return s("<unset>");
    }
    Value::String(
        token_requests
            .iter()
            .map(|t| str_at(t, &["audience"]))
            .collect::<Vec<_>>()
            .join(","),
    )
}

pub(super) fn csi_modes(d: &Value, _: DateTime<Utc>) -> Value {
    let modes: Vec<&str> = arr_at(d, &["spec", "volumeLifecycleModes"])
        .iter()
        .map(|m| m.as_str().unwrap_or(""))
        .collect();
    // An empty list is defaulted to [Persistent] by the server.
    Value::String(if modes.is_empty() {
        "Persistent".to_string()
    } else {
        modes.join(",")
    })
}

// ----- Event (core/v1 and events.k8s.io/v1: one object, two sets of field names) ---------

/// Field names of the two Event versions.
struct EventFields {
    regarding: &'static str,
    message: &'static str,
    source: &'static str,
    first: &'static str,
    last: &'static str,
    count: &'static str,
    controller: &'static str,
}

const CORE_EVENT: EventFields = EventFields {
    regarding: "involvedObject",
    message: "message",
    source: "source",
    first: "firstTimestamp",
    last: "lastTimestamp",
    count: "count",
    controller: "reportingComponent",
};

const EVENTS_API_EVENT: EventFields = EventFields {
    regarding: "regarding",
    message: "note",
    source: "deprecatedSource",
    first: "deprecatedFirstTimestamp",
    last: "deprecatedLastTimestamp",
    count: "deprecatedCount",
    controller: "reportingController",
};

fn event_first_seen(ev: &Value, f: &EventFields, now: DateTime<Utc>) -> String {
    match time_at(ev, &[f.first]) {
        Some(t) => since(Some(t), now),
        None => since(time_at(ev, &["eventTime"]), now),
    }
}

fn event_last_seen(ev: &Value, f: &EventFields, now: DateTime<Utc>) -> String {
    if let Some(series) = object_at(ev, &["series"]) {
        return since(time_at(series, &["lastObservedTime"]), now);
    }
    match time_at(ev, &[f.last]) {
        Some(t) => since(Some(t), now),
        None => event_first_seen(ev, f, now),
    }
}

fn event_count(ev: &Value, f: &EventFields) -> i64 {
    if let Some(series) = object_at(ev, &["series"]) {
        return int_at(series, &["count"]);
    }
    // Singleton events don't have a count set in the new API.
    match int_at(ev, &[f.count]) {
        0 => 1,
        n => n,
    }
}

fn event_object(ev: &Value, f: &EventFields) -> String {
    let kind = str_at(ev, &[f.regarding, "kind"]).to_lowercase();
    match str_at(ev, &[f.regarding, "name"]) {
        "" => kind,
        name => format!("{}/{}", kind, name),
    }
}

fn event_source(ev: &Value, f: &EventFields) -> String {
    let first_non_empty = |a: &str, b: &str| {
        if a.is_empty() {
            b.to_string()
        } else {
            a.to_string()
        }
    };
    let component = first_non_empty(
        str_at(ev, &[f.source, "component"]),
        str_at(ev, &[f.controller]),
    );
    let instance = first_non_empty(
        str_at(ev, &[f.source, "host"]),
        str_at(ev, &["reportingInstance"]),
    );
    if instance.is_empty() {
        component
    } else {
        format!("{}, {}", component, instance)
    }
}

/// The cells of one Event version: (Last Seen, Object, Subobject, Source, Message, First Seen, Count).
macro_rules! event_cells {
    ($f:expr, $last:ident, $object:ident, $subobject:ident, $source:ident, $message:ident, $first:ident, $count:ident) => {
        pub(super) fn $last(ev: &Value, now: DateTime<Utc>) -> Value {
            Value::String(event_last_seen(ev, &$f, now))
        }
        pub(super) fn $object(ev: &Value, _: DateTime<Utc>) -> Value {
            Value::String(event_object(ev, &$f))
        }
        pub(super) fn $subobject(ev: &Value, _: DateTime<Utc>) -> Value {
            s(str_at(ev, &[$f.regarding, "fieldPath"]))
        }
        pub(super) fn $source(ev: &Value, _: DateTime<Utc>) -> Value {
            Value::String(event_source(ev, &$f))
        }
        pub(super) fn $message(ev: &Value, _: DateTime<Utc>) -> Value {
            s(str_at(ev, &[$f.message]).trim())
        }
        pub(super) fn $first(ev: &Value, now: DateTime<Utc>) -> Value {
            Value::String(event_first_seen(ev, &$f, now))
        }
        pub(super) fn $count(ev: &Value, _: DateTime<Utc>) -> Value {
            int(event_count(ev, &$f))
        }
    };
}

event_cells!(
    CORE_EVENT,
    ev_last,
    ev_object,
    ev_subobject,
    ev_source,
    ev_message,
    ev_first,
    ev_count
);
event_cells!(
    EVENTS_API_EVENT,
    evapi_last,
    evapi_object,
    evapi_subobject,
    evapi_source,
    evapi_message,
    evapi_first,
    evapi_count
);

// ----- ConfigMap / Secret ----------------------------------------------------------

pub(super) fn config_map_data(cm: &Value, _: DateTime<Utc>) -> Value {
    int((map_len(cm, &["data"]) + map_len(cm, &["binaryData"])) as i64)
}

pub(super) fn secret_data(secret: &Value, _: DateTime<Utc>) -> Value {
    // stringData is write-only and merged into data by the server.
    let mut keys: BTreeSet<&str> = BTreeSet::new();
    for field in ["data", "stringData"] {
        if let Some(m) = map_at(secret, &[field]) {
            keys.extend(m.keys().map(String::as_str));
        }
    }
    int(keys.len() as i64)
}

// ----- Service ---------------------------------------------------------------

fn service_type(svc: &Value) -> &str {
    match str_at(svc, &["spec", "type"]) {
        "" => "ClusterIP",
        t => t,
    }
}

pub(super) fn svc_type(svc: &Value, _: DateTime<Utc>) -> Value {
    s(service_type(svc))
}

pub(super) fn svc_cluster_ip(svc: &Value, _: DateTime<Utc>) -> Value {
    Value::String(match arr_at(svc, &["spec", "clusterIPs"]).first() {
        Some(ip) => ip.as_str().unwrap_or("").to_string(),
        None => match str_at(svc, &["spec", "clusterIP"]) {
            "" => "<none>".to_string(),
            ip => ip.to_string(),
        },
    })
}

/// IPs, else hostnames, of load-balancer ingress points, sorted and unique.
fn load_balancer_addresses(ingress: &[Value]) -> Vec<String> {
    let mut lb: BTreeSet<String> = BTreeSet::new();
    for ing in ingress {
        let ip = str_at(ing, &["ip"]);
        let host = str_at(ing, &["hostname"]);
        if !ip.is_empty() {
            lb.insert(ip.to_string());
        } else if !host.is_empty() {
            lb.insert(host.to_string());
        }
    }
    lb.into_iter().collect()
}

pub(super) fn svc_external_ip(svc: &Value, _: DateTime<Utc>) -> Value {
    let external_ips: Vec<String> = arr_at(svc, &["spec", "externalIPs"])
        .iter()
        .map(plain_string)
        .collect();
    Value::String(match service_type(svc) {
        "ClusterIP" | "NodePort" if external_ips.is_empty() => "<none>".to_string(),
        "ClusterIP" | "NodePort" => external_ips.join(","),
        "LoadBalancer" => {
            let mut all =
                load_balancer_addresses(arr_at(svc, &["status", "loadBalancer", "ingress"]));
            if !external_ips.is_empty() {
                all.extend(external_ips);
                all.join(",")
            } else if !all.is_empty() {
                all.join(",")
            } else {
                "<pending>".to_string()
            }
        }
        "ExternalName" => str_at(svc, &["spec", "externalName"]).to_string(),
        _ => "<unknown>".to_string(),
    })
}

pub(super) fn svc_ports(svc: &Value, _: DateTime<Utc>) -> Value {
    let ports: Vec<String> = arr_at(svc, &["spec", "ports"])
        .iter()
        .map(|p| {
            let protocol = match str_at(p, &["protocol"]) {
                "" => "TCP",
                x => x,
            };
            let port = int_at(p, &["port"]);
            match int_at(p, &["nodePort"]) {
                n if n > 0 => format!("{}:{}/{}", port, n, protocol),
                _ => format!("{}/{}", port, protocol),
            }
        })
        .collect();
    Value::String(if ports.is_empty() {
        "<none>".to_string()
    } else {
        ports.join(",")
    })
}

pub(super) fn svc_selector(svc: &Value, _: DateTime<Utc>) -> Value {
    Value::String(format_labels(map_at(svc, &["spec", "selector"])))
}

// ----- Workloads (apps, batch, core ReplicationController) ------------------------

/// `spec.replicas`, defaulted to 1 by the server when unset.
fn desired_replicas(obj: &Value) -> i64 {
    opt_int_at(obj, &["spec", "replicas"]).unwrap_or(1)
}

pub(super) fn desired(obj: &Value, _: DateTime<Utc>) -> Value {
    int(desired_replicas(obj))
}

/// `ready/desired`, as Deployments and StatefulSets print it.
pub(super) fn ready_of_desired(obj: &Value, _: DateTime<Utc>) -> Value {
    Value::String(format!(
        "{}/{}",
        int_at(obj, &["status", "readyReplicas"]),
        desired_replicas(obj)
    ))
}

fn pod_template_spec(obj: &Value) -> &Value {
    let t = match str_at(obj, &["kind"]) {
        "CronJob" => at(obj, &["spec", "jobTemplate", "spec", "template", "spec"]),
        "PodTemplate" => at(obj, &["template", "spec"]),
        _ => at(obj, &["spec", "template", "spec"]),
    };
    t.unwrap_or(&Value::Null)
}

pub(super) fn template_containers(obj: &Value, _: DateTime<Utc>) -> Value {
    Value::String(container_cells(arr_at(pod_template_spec(obj), &["containers"])).0)
}

pub(super) fn template_images(obj: &Value, _: DateTime<Utc>) -> Value {
    Value::String(container_cells(arr_at(pod_template_spec(obj), &["containers"])).1)
}

pub(super) fn template_node_selector(obj: &Value, _: DateTime<Utc>) -> Value {
    Value::String(format_labels(map_at(
        pod_template_spec(obj),
        &["nodeSelector"],
    )))
}

/// `spec.selector` as a label selector, `<none>` when empty (ReplicaSets, DaemonSets, Jobs).
pub(super) fn spec_selector(obj: &Value, _: DateTime<Utc>) -> Value {
    Value::String(format_label_selector(at(obj, &["spec", "selector"])))
}

/// `spec.selector` of a Deployment: `LabelSelectorAsSelector(...).String()`, `<invalid>` on error.
pub(super) fn deployment_selector(d: &Value, _: DateTime<Utc>) -> Value {
    Value::String(
        label_selector_string(at(d, &["spec", "selector"]))
            .unwrap_or_else(|_| "<invalid>".to_string()),
    )
}

/// `spec.selector` of a ReplicationController: a plain label map.
pub(super) fn map_selector(obj: &Value, _: DateTime<Utc>) -> Value {
    Value::String(format_labels(map_at(obj, &["spec", "selector"])))
}

/// Status of the first condition of `type_` is True (`hasJobCondition`).
fn first_condition_true(conditions: &[Value], type_: &str) -> bool {
    conditions
        .iter()
        .find(|c| str_at(c, &["type"]) == type_)
        .is_some_and(|c| str_at(c, &["status"]) == "True")
}

pub(super) fn job_status(job: &Value, _: DateTime<Utc>) -> Value {
    let conditions = arr_at(job, &["status", "conditions"]);
    s(if first_condition_true(conditions, "Complete") {
        "Complete"
    } else if first_condition_true(conditions, "Failed") {
        "Failed"
    } else if is_deleting(job) {
        "Terminating"
    } else if first_condition_true(conditions, "Suspended") {
        "Suspended"
    } else if first_condition_true(conditions, "FailureTarget") {
        "FailureTarget"
    } else {
        "Running"
    })
}

pub(super) fn job_completions(job: &Value, _: DateTime<Utc>) -> Value {
    let succeeded = int_at(job, &["status", "succeeded"]);
    Value::String(match opt_int_at(job, &["spec", "completions"]) {
        Some(c) => format!("{}/{}", succeeded, c),
        None => match opt_int_at(job, &["spec", "parallelism"]).unwrap_or(0) {
            p if p > 1 => format!("{}/1 of {}", succeeded, p),
            _ => format!("{}/1", succeeded),
        },
    })
}

pub(super) fn job_duration(job: &Value, now: DateTime<Utc>) -> Value {
    // Pointer semantics: a present-but-unparsable time is Go's zero time.
    let start = time_at(job, &["status", "startTime"]).unwrap_or_else(go_zero_time);
    let end = time_at(job, &["status", "completionTime"]).unwrap_or_else(go_zero_time);
    Value::String(if present(job, &["status", "startTime"]).is_none() {
        String::new()
    } else if present(job, &["status", "completionTime"]).is_none() {
        human_duration(now.signed_duration_since(start))
    } else {
        human_duration(end.signed_duration_since(start))
    })
}

fn go_zero_time() -> DateTime<Utc> {
    DateTime::from_timestamp(GO_ZERO_UNIX, 0).unwrap_or_default()
}

pub(super) fn cronjob_timezone(cj: &Value, _: DateTime<Utc>) -> Value {
    s(opt_str_at(cj, &["spec", "timeZone"]).unwrap_or("<none>"))
}

pub(super) fn cronjob_suspend(cj: &Value, _: DateTime<Utc>) -> Value {
    // printBoolPtr: the server defaults `suspend` to false.
    s(if bool_at(cj, &["spec", "suspend"]) {
        "True"
    } else {
        "False"
    })
}

pub(super) fn cronjob_last_schedule(cj: &Value, now: DateTime<Utc>) -> Value {
    match present(cj, &["status", "lastScheduleTime"]) {
        Some(_) => Value::String(since(time_at(cj, &["status", "lastScheduleTime"]), now)),
        None => s("<none>"),
    }
}

pub(super) fn cronjob_job_selector(cj: &Value, _: DateTime<Utc>) -> Value {
    Value::String(format_label_selector(at(
        cj,
        &["spec", "jobTemplate", "spec", "selector"],
    )))
}

/// `kind.group/name` of the controlling owner (`formatResourceName` with kind), `<none>` without one.
pub(super) fn controller_of(obj: &Value, _: DateTime<Utc>) -> Value {
    let owner = arr_at(obj, &["metadata", "ownerReferences"])
        .iter()
        .find(|o| bool_at(o, &["controller"]));
    Value::String(match owner {
        None => "<none>".to_string(),
        Some(o) => {
            let group = str_at(o, &["apiVersion"])
                .split_once('/')
                .map(|(g, _)| g)
                .unwrap_or("");
            let kind = if group.is_empty() {
                str_at(o, &["kind"]).to_string()
            } else {
                format!("{}.{}", str_at(o, &["kind"]), group)
            };
            format!("{}/{}", kind.to_lowercase(), str_at(o, &["name"]))
        }
    })
}

pub(super) fn pod_template_labels(pt: &Value, _: DateTime<Utc>) -> Value {
    Value::String(format_labels(map_at(
        pt,
        &["template", "metadata", "labels"],
    )))
}

// ----- autoscaling -----------------------------------------------------------------

pub(super) fn hpa_reference(hpa: &Value, _: DateTime<Utc>) -> Value {
    Value::String(format!(
        "{}/{}",
        str_at(hpa, &["spec", "scaleTargetRef", "kind"]),
        str_at(hpa, &["spec", "scaleTargetRef", "name"])
    ))
}

pub(super) fn hpa_min_pods(hpa: &Value, _: DateTime<Utc>) -> Value {
    Value::String(match opt_int_at(hpa, &["spec", "minReplicas"]) {
        Some(n) => n.to_string(),
        None => "<unset>".to_string(),
    })
}

/// `formatHPAMetrics` over autoscaling/v2 metric specs and their current statuses.
pub(super) fn hpa_targets(hpa: &Value, _: DateTime<Utc>) -> Value {
    // The printer reads the internal object, whatever version was asked for: an autoscaling/v1
    // HPA's targetCPUUtilizationPercentage is a cpu metric there (pkg/printers/internalversion/
    // printers.go, printHorizontalPodAutoscaler; pkg/apis/autoscaling/v1/conversion.go).
    let internal;
    let hpa = if hpa.get("apiVersion").and_then(Value::as_str) == Some("autoscaling/v1") {
        internal = crate::apiserver::hpa_convert::v1_to_v2(hpa);
        &internal
    } else {
        hpa
    };
    let specs = arr_at(hpa, &["spec", "metrics"]);
    if specs.is_empty() {
        return s("<none>");
    }
    let statuses = arr_at(hpa, &["status", "currentMetrics"]);
    let q = |v: Option<&Value>| quantity_string(v);
    let list: Vec<String> = specs
        .iter()
        .enumerate()
        .map(|(i, spec)| {
            let status = statuses.get(i);
            let field = |source: &str| status.and_then(|st| object_at(st, &[source]));
            let avg_or_value = |source: &str| -> String {
                let target = at(spec, &[source, "target"]).unwrap_or(&Value::Null);
                if present(target, &["averageValue"]).is_some() {
                    let current = field(source)
                        .and_then(|c| present(c, &["current", "averageValue"]))
                        .map(|v| q(Some(v)))
                        .unwrap_or_else(|| "<unknown>".into());
                    format!("{}/{} (avg)", current, q(at(target, &["averageValue"])))
                } else {
                    let current = field(source)
                        .map(|c| q(at(c, &["current", "value"])))
                        .unwrap_or_else(|| "<unknown>".into());
                    format!("{}/{}", current, q(at(target, &["value"])))
                }
            };
            let resource = |source: &str| -> String {
                let name = str_at(spec, &[source, "name"]);
                let target = at(spec, &[source, "target"]).unwrap_or(&Value::Null);
                if present(target, &["averageValue"]).is_some() {
                    let current = field(source)
                        .map(|c| q(at(c, &["current", "averageValue"])))
                        .unwrap_or_else(|| "<unknown>".into());
                    format!("{}: {}/{}", name, current, q(at(target, &["averageValue"])))
                } else {
                    let current = field(source)
                        .and_then(|c| opt_int_at(c, &["current", "averageUtilization"]))
                        .map(|u| format!("{}%", u))
                        .unwrap_or_else(|| "<unknown>".into());
                    let target = opt_int_at(target, &["averageUtilization"])
                        .map(|u| format!("{}%", u))
                        .unwrap_or_else(|| "<auto>".into());
                    format!("{}: {}/{}", name, current, target)
                }
            };
            match str_at(spec, &["type"]) {
                "External" => avg_or_value("external"),
                "Object" => avg_or_value("object"),
                "Pods" => {
                    let current = field("pods")
                        .map(|c| q(at(c, &["current", "averageValue"])))
                        .unwrap_or_else(|| "<unknown>".into());
                    format!(
                        "{}/{}",
                        current,
                        q(at(spec, &["pods", "target", "averageValue"]))
                    )
                }
                "Resource" => resource("resource"),
                "ContainerResource" => resource("containerResource"),
                _ => "<unknown type>".to_string(),
            }
        })
        .collect();
    const MAX: usize = 2;
    Value::String(if list.len() > MAX {
        format!("{} + {} more...", list[..MAX].join(", "), list.len() - MAX)
    } else {
        list.join(", ")
    })
}

// ----- networking, discovery ---------------------------------------------------------

pub(super) fn ingress_class(ing: &Value, _: DateTime<Utc>) -> Value {
    s(opt_str_at(ing, &["spec", "ingressClassName"]).unwrap_or("<none>"))
}

pub(super) fn ingress_hosts(ing: &Value, _: DateTime<Utc>) -> Value {
    const MAX: usize = 3;
    let rules = arr_at(ing, &["spec", "rules"]);
    let mut list: Vec<&str> = Vec::new();
    let mut more = false;
    for rule in rules {
        if list.len() == MAX {
            more = true;
        }
        let host = str_at(rule, &["host"]);
        if !more && !host.is_empty() {
            list.push(host);
        }
    }
    Value::String(if list.is_empty() {
        "*".to_string()
    } else if more {
        format!("{} + {} more...", list.join(","), rules.len() - MAX)
    } else {
        list.join(",")
    })
}

pub(super) fn ingress_address(ing: &Value, _: DateTime<Utc>) -> Value {
    // Server-side printing is always wide: the address is not clipped.
    Value::String(
        load_balancer_addresses(arr_at(ing, &["status", "loadBalancer", "ingress"])).join(","),
    )
}

pub(super) fn ingress_ports(ing: &Value, _: DateTime<Utc>) -> Value {
    s(if arr_at(ing, &["spec", "tls"]).is_empty() {
        "80"
    } else {
        "80, 443"
    })
}

pub(super) fn ingress_class_parameters(ic: &Value, _: DateTime<Utc>) -> Value {
    Value::String(match object_at(ic, &["spec", "parameters"]) {
        None => "<none>".to_string(),
        Some(p) => {
            let mut kind = str_at(p, &["kind"]).to_string();
            if let Some(g) = opt_str_at(p, &["apiGroup"]) {
                kind = format!("{}.{}", kind, g);
            }
            format!("{}/{}", kind, str_at(p, &["name"]))
        }
    })
}

pub(super) fn network_policy_pod_selector(np: &Value, _: DateTime<Utc>) -> Value {
    Value::String(format_label_selector(Some(
        at(np, &["spec", "podSelector"]).unwrap_or(&Value::Null),
    )))
}

/// Up to three items, then ` + N more...`; `empty` when there are none.
fn list_with_more(items: Vec<String>, empty: &str) -> String {
    const MAX: usize = 3;
    if items.is_empty() {
        empty.to_string()
    } else if items.len() > MAX {
        format!("{} + {} more...", items[..MAX].join(","), items.len() - MAX)
    } else {
        items.join(",")
    }
}

/// `formatEndpoints`: `ip:port` per address and port (bare IPs without ports).
pub(super) fn endpoints_list(ep: &Value, _: DateTime<Utc>) -> Value {
    let mut items = Vec::new();
    for ss in arr_at(ep, &["subsets"]) {
        let addrs: Vec<&str> = arr_at(ss, &["addresses"])
            .iter()
            .map(|a| str_at(a, &["ip"]))
            .collect();
        let ports = arr_at(ss, &["ports"]);
        if ports.is_empty() {
            items.extend(addrs.iter().map(|a| a.to_string()));
        }
        for p in ports {
            let port = int_at(p, &["port"]);
            items.extend(addrs.iter().map(|a| {
                if a.contains(':') {
                    format!("[{}]:{}", a, port)
                } else {
                    format!("{}:{}", a, port)
                }
            }));
        }
    }
    Value::String(list_with_more(items, "<none>"))
}

pub(super) fn endpoint_slice_ports(eps: &Value, _: DateTime<Utc>) -> Value {
    let items = arr_at(eps, &["ports"])
        .iter()
        .map(
            |p| match (opt_int_at(p, &["port"]), opt_str_at(p, &["name"])) {
                (Some(n), _) => n.to_string(),
                (None, Some(name)) => name.to_string(),
                _ => "*".to_string(),
            },
        )
        .collect();
    Value::String(list_with_more(items, "<unset>"))
}

pub(super) fn endpoint_slice_endpoints(eps: &Value, _: DateTime<Utc>) -> Value {
    let items = arr_at(eps, &["endpoints"])
        .iter()
        .flat_map(|e| arr_at(e, &["addresses"]).iter().map(plain_string))
        .collect();
    Value::String(list_with_more(items, "<unset>"))
}

// ----- policy, scheduling, rbac, certificates, core misc ----------------------------------

/// An IntOrString field printed as Go's `IntOrString.String()`, `N/A` when unset.
fn int_or_string(obj: &Value, path: &[&str]) -> Value {
    Value::String(match present(obj, path) {
        Some(v) => plain_string(v),
        None => "N/A".to_string(),
    })
}

pub(super) fn pdb_min_available(pdb: &Value, _: DateTime<Utc>) -> Value {
    int_or_string(pdb, &["spec", "minAvailable"])
}

pub(super) fn pdb_max_unavailable(pdb: &Value, _: DateTime<Utc>) -> Value {
    int_or_string(pdb, &["spec", "maxUnavailable"])
}

pub(super) fn priority_class_preemption(pc: &Value, _: DateTime<Utc>) -> Value {
    // Defaulted to PreemptLowerPriority by the server.
    s(opt_str_at(pc, &["preemptionPolicy"]).unwrap_or("PreemptLowerPriority"))
}

pub(super) fn role_ref(b: &Value, _: DateTime<Utc>) -> Value {
    Value::String(format!(
        "{}/{}",
        str_at(b, &["roleRef", "kind"]),
        str_at(b, &["roleRef", "name"])
    ))
}

fn subjects_of(b: &Value, kind: &str) -> Value {
    let names: Vec<String> = arr_at(b, &["subjects"])
        .iter()
        .filter(|s| str_at(s, &["kind"]) == kind)
        .map(|s| {
            if kind == "ServiceAccount" {
                format!("{}/{}", str_at(s, &["namespace"]), str_at(s, &["name"]))
            } else {
                str_at(s, &["name"]).to_string()
            }
        })
        .collect();
    Value::String(names.join(", "))
}

pub(super) fn binding_users(b: &Value, _: DateTime<Utc>) -> Value {
    subjects_of(b, "User")
}

pub(super) fn binding_groups(b: &Value, _: DateTime<Utc>) -> Value {
    subjects_of(b, "Group")
}

pub(super) fn binding_service_accounts(b: &Value, _: DateTime<Utc>) -> Value {
    subjects_of(b, "ServiceAccount")
}

pub(super) fn csr_signer(csr: &Value, _: DateTime<Utc>) -> Value {
    s(match str_at(csr, &["spec", "signerName"]) {
        "" => "<none>",
        n => n,
    })
}

pub(super) fn csr_requested_duration(csr: &Value, _: DateTime<Utc>) -> Value {
    Value::String(match opt_int_at(csr, &["spec", "expirationSeconds"]) {
        Some(secs) => human_duration(chrono::Duration::seconds(secs)),
        None => "<none>".to_string(),
    })
}

/// `extractCSRStatus`: Denied, else Approved, else Pending; then `,Failed` and `,Issued`.
pub(super) fn csr_condition(csr: &Value, _: DateTime<Utc>) -> Value {
    let conditions = arr_at(csr, &["status", "conditions"]);
    let has = |t: &str| conditions.iter().any(|c| str_at(c, &["type"]) == t);
    let mut status = if has("Denied") {
        "Denied".to_string()
    } else if has("Approved") {
        "Approved".to_string()
    } else {
        "Pending".to_string()
    };
    if has("Failed") {
        status.push_str(",Failed");
    }
    if !str_at(csr, &["status", "certificate"]).is_empty() {
        status.push_str(",Issued");
    }
    Value::String(status)
}

fn healthy_condition(cs: &Value) -> Option<&Value> {
    arr_at(cs, &["conditions"])
        .iter()
        .find(|c| str_at(c, &["type"]) == "Healthy")
}

pub(super) fn component_status(cs: &Value, _: DateTime<Utc>) -> Value {
    s(match healthy_condition(cs) {
        None => "Unknown",
        Some(c) if str_at(c, &["status"]) == "True" => "Healthy",
        Some(_) => "Unhealthy",
    })
}

pub(super) fn component_message(cs: &Value, _: DateTime<Utc>) -> Value {
    s(healthy_condition(cs)
        .map(|c| str_at(c, &["message"]))
        .unwrap_or(""))
}

pub(super) fn component_error(cs: &Value, _: DateTime<Utc>) -> Value {
    s(healthy_condition(cs)
        .map(|c| str_at(c, &["error"]))
        .unwrap_or(""))
}

/// kube-aggregator's APIService printer: `Local` or `namespace/name` of the backing service.
pub(super) fn api_service_service(a: &Value, _: DateTime<Utc>) -> Value {
    Value::String(match object_at(a, &["spec", "service"]) {
        None => "Local".to_string(),
        Some(svc) => format!("{}/{}", str_at(svc, &["namespace"]), str_at(svc, &["name"])),
    })
}

/// The Available condition's status, with its reason when not True.
pub(super) fn api_service_available(a: &Value, _: DateTime<Utc>) -> Value {
    let cond = arr_at(a, &["status", "conditions"])
        .iter()
        .find(|c| str_at(c, &["type"]) == "Available");
    Value::String(match cond {
        None => "Unknown".to_string(),
        Some(c) if str_at(c, &["status"]) == "True" || str_at(c, &["reason"]).is_empty() => {
            str_at(c, &["status"]).to_string()
        }
        Some(c) => format!("{} ({})", str_at(c, &["status"]), str_at(c, &["reason"])),
    })
}

// ----- admissionregistration ---------------------------------------------------------

pub(super) fn admission_policy_param_kind(p: &Value, _: DateTime<Utc>) -> Value {
    Value::String(match object_at(p, &["spec", "paramKind"]) {
        Some(k) => format!("{}/{}", str_at(k, &["apiVersion"]), str_at(k, &["kind"])),
        None => "<unset>".to_string(),
    })
}

/// `namespace/name`, `*/name` (namespace unknown here), or the selector of the binding's paramRef.
pub(super) fn admission_binding_param_ref(b: &Value, _: DateTime<Utc>) -> Value {
    let Some(r) = object_at(b, &["spec", "paramRef"]) else {
        return s("<unset>");
    };
    Value::String(match (str_at(r, &["name"]), str_at(r, &["namespace"])) {
        ("", _) if object_at(r, &["selector"]).is_some() => {
            format_label_selector(at(r, &["selector"]))
        }
        ("", _) => "<unset>".to_string(),
        (name, "") => format!("*/{}", name),
        (name, ns) => format!("{}/{}", ns, name),
    })
}

// ----- ResourceQuota, APF, networking and DRA kinds (1.35 printers) ---------------------------

/// `printResourceQuota`: `name: used/hard` of each hard limit, sorted; `limits.*` in the Limit
/// column, the others in the Request column.
fn quota_column(rq: &Value, limits: bool) -> Value {
    let hard = at(rq, &["status", "hard"]).and_then(Value::as_object);
    let mut names: Vec<&String> = hard.map(|h| h.keys().collect()).unwrap_or_default();
    names.sort();
    let parts: Vec<String> = names
        .into_iter()
        .filter(|n| {
            let pieces: Vec<&str> = n.split('.').collect();
            (pieces.len() > 1 && pieces[0] == "limits") == limits
        })
        .map(|n| {
            let used = at(rq, &["status", "used", n.as_str()]).filter(|v| !v.is_null());
            let used = match used {
                Some(u) => quantity_string(Some(u)),
                None => "0".to_string(),
            };
            let hard = quantity_string(hard.and_then(|h| h.get(n.as_str())));
            format!("{n}: {used}/{hard}")
        })
        .collect();
    Value::String(parts.join(", "))
}

pub(super) fn quota_requests(rq: &Value, _: DateTime<Utc>) -> Value {
    quota_column(rq, false)
}

pub(super) fn quota_limits(rq: &Value, _: DateTime<Utc>) -> Value {
    quota_column(rq, true)
}

/// `printFlowSchema`: the distinguisher's type, `<none>` without one.
pub(super) fn flow_schema_distinguisher(fs: &Value, _: DateTime<Utc>) -> Value {
    match str_at(fs, &["spec", "distinguisherMethod", "type"]) {
        "" => s("<none>"),
        t => s(t),
    }
}

/// `printFlowSchema`'s MissingPL: the Dangling condition's status, `?` without one.
pub(super) fn flow_schema_missing_pl(fs: &Value, _: DateTime<Utc>) -> Value {
    let status = at(fs, &["status", "conditions"])
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|c| c.get("type").and_then(Value::as_str) == Some("Dangling"))
        .and_then(|c| c.get("status").and_then(Value::as_str));
    s(status.unwrap_or("?"))
}

/// `printPriorityLevelConfiguration`: a number of the limited configuration, `<none>` when the
/// level is not limited (or does not queue).
fn plc_number(plc: &Value, path: &[&str]) -> Value {
    match present(plc, path) {
        Some(v) if v.is_number() => v.clone(),
        _ => s("<none>"),
    }
}

pub(super) fn plc_shares(plc: &Value, _: DateTime<Utc>) -> Value {
    if present(plc, &["spec", "limited"]).is_none() {
        return s("<none>");
    }
    match present(plc, &["spec", "limited", "nominalConcurrencyShares"]) {
        Some(v) => v.clone(),
        None => Value::from(0),
    }
}

pub(super) fn plc_queues(plc: &Value, _: DateTime<Utc>) -> Value {
    plc_number(
        plc,
        &["spec", "limited", "limitResponse", "queuing", "queues"],
    )
}

pub(super) fn plc_hand_size(plc: &Value, _: DateTime<Utc>) -> Value {
    plc_number(
        plc,
        &["spec", "limited", "limitResponse", "queuing", "handSize"],
    )
}

pub(super) fn plc_queue_length(plc: &Value, _: DateTime<Utc>) -> Value {
    plc_number(
        plc,
        &[
            "spec",
            "limited",
            "limitResponse",
            "queuing",
            "queueLengthLimit",
        ],
    )
}

/// `printIPAddress`: `resource[.group][/namespace]/name` of the parent, lower case.
pub(super) fn ip_address_parent(ip: &Value, _: DateTime<Utc>) -> Value {
    let Some(parent) = present(ip, &["spec", "parentRef"]) else {
        return s("<none>");
    };
    let text = |k: &str| parent.get(k).and_then(Value::as_str).unwrap_or("");
    let mut out = match text("group") {
        "" => text("resource").to_string(),
        g => format!("{}.{g}", text("resource")),
    }
    .to_lowercase();
    if !text("namespace").is_empty() {
        out = format!("{out}/{}", text("namespace"));
    }
    s(&format!("{out}/{}", text("name")))
}

/// `printServiceCIDR`: the CIDRs, comma separated.
pub(super) fn service_cidrs(sc: &Value, _: DateTime<Utc>) -> Value {
    let cidrs: Vec<&str> = at(sc, &["spec", "cidrs"])
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    s(&cidrs.join(","))
}

/// `resourceClaimState`: deleted, pending or allocated (and reserved or deallocating).
pub(super) fn resource_claim_state(c: &Value, _: DateTime<Utc>) -> Value {
    let deleted = present(c, &["metadata", "deletionTimestamp"]).is_some();
    let mut states = Vec::new();
    if deleted {
        states.push("deleted");
    }
    if present(c, &["status", "allocation"]).is_none() {
        if !deleted {
            states.push("pending");
        }
    } else {
        states.push("allocated");
        let reserved = at(c, &["status", "reservedFor"])
            .and_then(Value::as_array)
            .is_some_and(|r| !r.is_empty());
        if reserved {
            states.push("reserved");
        } else if deleted {
            states.push("deallocating");
        }
    }
    s(&states.join(","))
}
