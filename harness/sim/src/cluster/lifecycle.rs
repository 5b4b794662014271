//! The node lifecycle controller: a node whose kubelet stops renewing its Lease goes
//! Ready=Unknown ("Kubelet stopped posting node status.") with the `unreachable` taints, its pods
//! are marked not Ready, and taint-based eviction deletes pods whose toleration ran out. When the
//! kubelet posts Ready again the taints go.

use crate::events::{EventKind, EventRecorder};
use crate::internal::Internal;
use crate::meta;
use crate::timing::Timing;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::time::Duration;
use tokio::time::Instant;

const UNREACHABLE: &str = "node.kubernetes.io/unreachable";

pub async fn run(client: Internal, timing: Timing) {
    let recorder = EventRecorder::new(client.clone(), "node-controller", None);
    let grace = timing.s(timing.node_monitor_grace);
    let period = (grace / 5).max(Duration::from_millis(20));
    let mut ticker = tokio::time::interval(period);
    // When each pod's eviction clock started (the taint's arrival).
    let mut tainted_since: HashMap<String, Instant> = HashMap::new();
    loop {
        ticker.tick().await;
        let now = chrono::Utc::now();
        for node in client.list("", "nodes", None, &|_| true) {
            let name = meta::name(&node).to_string();
            let renew = client
                .get("coordination.k8s.io", "leases", "kube-node-lease", &name)
                .and_then(|l| meta::str_at(&l, "/spec/renewTime").and_then(meta::parse_time));
            let stale = renew.map(|r| (now - r).to_std().unwrap_or_default() > grace).unwrap_or(false);
            let ready = ready_status(&node);
            let has_taint = node.pointer("/spec/taints").and_then(Value::as_array).map(|ts| ts.iter().any(|t| t["key"] == UNREACHABLE)).unwrap_or(false);
            if stale && ready.as_deref() != Some("Unknown") {
                mark_unknown(&client, &node);
                recorder.record(&node, EventKind::Normal, "NodeNotReady", &format!("Node {} status is now: NodeNotReady", name));
                for pod in client.pods_on_node(&name, &|_| true) {
                    mark_pod_not_ready(&client, &pod);
                }
            }
            let ready = ready_status(&client.get("", "nodes", "", &name).unwrap_or(node.clone()));
            if ready.as_deref() == Some("Unknown") && !has_taint {
                set_unreachable_taints(&client, &name, true);
                tainted_since.insert(name.clone(), Instant::now());
            } else if ready.as_deref() == Some("True") && has_taint {
                set_unreachable_taints(&client, &name, false);
                tainted_since.remove(&name);
            }
            if let Some(since) = tainted_since.get(&name).copied() {
                evict_expired(&client, &recorder, &name, since, &timing);
            }
        }
    }
}

fn ready_status(node: &Value) -> Option<String> {
    meta::condition_status(node, "Ready").map(String::from)
}

fn mark_unknown(client: &Internal, node: &Value) {
    let now = meta::now_rfc3339();
    let conds: Vec<Value> = node
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|mut c| {
            c["status"] = json!("Unknown");
            c["reason"] = json!("NodeStatusUnknown");
            c["message"] = json!("Kubelet stopped posting node status.");
            c["lastTransitionTime"] = json!(now);
            c
        })
        .collect();
    let _ = client.merge_status("", "nodes", "", meta::name(node), &json!({"status": {"conditions": conds}}));
}

fn mark_pod_not_ready(client: &Internal, pod: &Value) {
    let Some(conds) = pod.pointer("/status/conditions").and_then(Value::as_array) else { return };
    let now = meta::now_rfc3339();
    let next: Vec<Value> = conds
        .iter()
        .cloned()
        .map(|mut c| {
            if c["type"] == "Ready" && c["status"] != "False" {
                c["status"] = json!("False");
                c["lastTransitionTime"] = json!(now);
                c["reason"] = json!("NodeNotReady");
                c["message"] = json!("");
            }
            c
        })
        .collect();
    let _ = client.merge_status("", "pods", meta::namespace(pod), meta::name(pod), &json!({"status": {"conditions": next}}));
}

fn set_unreachable_taints(client: &Internal, name: &str, on: bool) {
    let Some(node) = client.get("", "nodes", "", name) else { return };
    let mut taints: Vec<Value> = node.pointer("/spec/taints").and_then(Value::as_array).cloned().unwrap_or_default();
    taints.retain(|t| t["key"] != UNREACHABLE);
    if on {
        let now = meta::now_rfc3339();
        taints.push(json!({"key": UNREACHABLE, "effect": "NoSchedule", "timeAdded": now}));
        taints.push(json!({"key": UNREACHABLE, "effect": "NoExecute", "timeAdded": now}));
    }
    let taints = if taints.is_empty() { Value::Null } else { json!(taints) };
    let _ = client.merge("", "nodes", "", name, &json!({"spec": {"taints": taints}}));
}

/// Taint-based eviction: delete pods whose unreachable toleration has expired.
fn evict_expired(client: &Internal, recorder: &EventRecorder, node: &str, since: Instant, timing: &Timing) {
    for pod in client.pods_on_node(node, &|p| !meta::is_deleting(p)) {
        let tolerations = pod.pointer("/spec/tolerations").and_then(Value::as_array).cloned().unwrap_or_default();
        let t = tolerations.iter().find(|t| {
            (t["key"] == UNREACHABLE || (t.get("key").is_none() && t["operator"] == "Exists"))
                && (t.get("effect").is_none() || t["effect"] == "NoExecute")
        });
        let limit = match t {
            None => Duration::ZERO,
            Some(t) => match t.get("tolerationSeconds").and_then(Value::as_i64) {
                Some(s) => timing.s(Duration::from_secs(s.max(0) as u64)),
                None => continue, // tolerates forever (DaemonSet pods)
            },
        };
        if since.elapsed() >= limit {
            recorder.record(&pod, EventKind::Normal, "TaintManagerEviction", &format!("Marking for deletion Pod {}/{}", meta::namespace(&pod), meta::name(&pod)));
            let _ = client.delete("", "pods", meta::namespace(&pod), meta::name(&pod), None);
        }
    }
}
