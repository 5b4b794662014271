//! The node lifecycle controller and the taint eviction controller of kube-controller-manager.
//! A node whose kubelet stops renewing its Lease goes Ready=Unknown ("Kubelet stopped posting
//! node status."); on that transition, which the controller makes itself, the node gets a
//! `NodeNotReady` event and its pods are marked not Ready (with a per-pod `NodeNotReady` event).
//! A Ready=False that the kubelet posts itself (PLEG) marks nothing: `monitorNodeHealth` in
//! node_lifecycle_controller.go calls MarkPodsNotReady only when the Ready condition it observed
//! was True and the one after its own update is not. Taints follow the node's state: `unschedulable:NoSchedule` while
//! cordoned, `not-ready` while Ready=False and `unreachable` while Unknown (NoSchedule, and
//! NoExecute with timeAdded). Taint eviction marks a pod whose toleration of a NoExecute taint
//! (any, `node.kubernetes.io/out-of-service` included) ran out with the `DisruptionTarget`
//! condition, then deletes it.

use super::queue::{Key, Reconciler, Watches};
use crate::apiserver::meta;
use crate::apiserver::store::StoreEvent;
use crate::events::{EventKind, EventRecorder};
use crate::internal::Internal;
use crate::timing::SimInstant;
use crate::timing::{self, Timing};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::time::Duration;

const UNREACHABLE: &str = "node.kubernetes.io/unreachable";
const NOT_READY: &str = "node.kubernetes.io/not-ready";
const UNSCHEDULABLE: &str = "node.kubernetes.io/unschedulable";
/// The taint keys this controller owns; others (control-plane, user taints) are left alone.
const MANAGED: [&str; 3] = [UNREACHABLE, NOT_READY, UNSCHEDULABLE];

/// `nodeConditionToTaintKeyStatusMap` (node_lifecycle_controller.go): the NoSchedule taint a
/// node condition in a given status calls for.
const CONDITION_TAINTS: [(&str, &str, &str); 6] = [
    ("Ready", "False", NOT_READY),
    ("Ready", "Unknown", UNREACHABLE),
    (
        "MemoryPressure",
        "True",
        "node.kubernetes.io/memory-pressure",
    ),
    ("DiskPressure", "True", "node.kubernetes.io/disk-pressure"),
    (
        "NetworkUnavailable",
        "True",
        "node.kubernetes.io/network-unavailable",
    ),
    ("PIDPressure", "True", "node.kubernetes.io/pid-pressure"),
];

/// The node lifecycle controller's `doNoScheduleTaintingPass`, run for every node added or
/// changed (its node update queue; node_lifecycle_controller.go): the NoSchedule taints of the
/// node's conditions and of `spec.unschedulable`, no others of those keys. Among others it takes
/// off the `not-ready` taint admission gives a new node when the node has no Ready=False
/// condition (an API-only node without conditions included). The health monitor (`run`) needs
/// kubelets and runs with the cluster; this pass runs wherever kube-controller-manager does.
pub struct NoScheduleTaints {
    client: Internal,
}

impl NoScheduleTaints {
    pub fn new(client: Internal) -> Self {
        NoScheduleTaints { client }
    }
}

/// The NoSchedule taints (keys) `doNoScheduleTaintingPass` wants on a node.
fn no_schedule_wanted(node: &Value) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = node
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| {
            CONDITION_TAINTS
                .iter()
                .find(|(t, s, _)| c["type"] == *t && c["status"] == *s)
                .map(|(_, _, key)| *key)
        })
        .collect();
    if node.pointer("/spec/unschedulable") == Some(&json!(true)) {
        out.push(UNSCHEDULABLE);
    }
    out
}

/// The node's taints after the pass, when they change: the kept ones in their order, then the
/// added ones (`SwapNodeControllerTaint`).
fn swap_no_schedule(node: &Value) -> Option<Vec<Value>> {
    let current: Vec<Value> = node
        .pointer("/spec/taints")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let wanted = no_schedule_wanted(node);
    let owned = |t: &Value| {
        t["effect"] == "NoSchedule"
            && (t["key"] == UNSCHEDULABLE
                || CONDITION_TAINTS.iter().any(|(_, _, k)| t["key"] == *k))
    };
    let kept: Vec<Value> = current
        .iter()
        .filter(|t| !owned(t) || wanted.iter().any(|k| t["key"] == *k))
        .cloned()
        .collect();
    let added: Vec<Value> = wanted
        .iter()
        .filter(|k| !current.iter().any(|t| owned(t) && t["key"] == **k))
        .map(|k| json!({"key": k, "effect": "NoSchedule"}))
        .collect();
    if kept.len() == current.len() && added.is_empty() {
        return None;
    }
    Some(kept.into_iter().chain(added).collect())
}

impl Reconciler for NoScheduleTaints {
    fn client(&self) -> &Internal {
        &self.client
    }

    fn watches(&self) -> Watches {
        Watches {
            group: "",
            plural: "nodes",
            kind: "Node",
            children: &[],
            selects_pods: None,
        }
    }

    /// Every node event (the controller's update handler queues them all); the pass itself
    /// writes only when the taints are to change.
    fn keys_of(&self, ev: &StoreEvent, out: &mut Vec<Key>) {
        if ev.key.group.is_empty() && ev.key.plural == "nodes" {
            out.push((String::new(), meta::name(&ev.object).to_string()));
        }
    }

    fn reconcile(&mut self, (_, name): &Key) -> Option<Duration> {
        let node = self.client.get("", "nodes", "", name)?;
        let taints = swap_no_schedule(&node)?;
        let taints = if taints.is_empty() {
            Value::Null
        } else {
            json!(taints)
        };
        // Pinned to the version read, as PatchNodeTaints pins it: a concurrent write is seen
        // by the next pass.
        let rv = meta::resource_version(&node);
        let _ = self.client.merge(
            "",
            "nodes",
            "",
            name,
            &json!({"metadata": {"resourceVersion": rv}, "spec": {"taints": taints}}),
        );
        None
    }
}

pub async fn run(client: Internal, timing: Timing) {
    let recorder = EventRecorder::new(client.clone(), "node-controller", None);
    let eviction = EventRecorder::new(client.clone(), "taint-eviction-controller", None);
    let grace = timing.s(timing.node_monitor_grace);
    let period = (grace / 5).max(Duration::from_millis(20));
    let mut ticker = tokio::time::interval(period);
    // When each NoExecute taint (node, key) arrived, on the cluster's clock.
    let mut taint_since: HashMap<(String, String), SimInstant> = HashMap::new();
    let clock = client.clock().clone();
    loop {
        ticker.tick().await;
        let _pass = clock.pass().await;
        let now = clock.now();
        for node in client.list("", "nodes", None, &|_| true) {
            let name = meta::name(&node).to_string();
            let renew = client
                .get("coordination.k8s.io", "leases", "kube-node-lease", &name)
                .and_then(|l| meta::str_at(&l, "/spec/renewTime").and_then(timing::parse_time));
            let stale = renew
                .map(|r| (now - r).to_std().unwrap_or_default() > grace)
                .unwrap_or(false);
            let mut node = node;
            let observed = ready_status(&node);
            if stale && observed.as_deref() != Some("Unknown") {
                mark_unknown(&client, &node);
                node = client.get("", "nodes", "", &name).unwrap_or(node);
            }
            let ready = ready_status(&node);
            if observed.as_deref() == Some("True") && ready.as_deref() != Some("True") {
                recorder.record(
                    &node,
                    EventKind::Normal,
                    "NodeNotReady",
                    &format!("Node {} status is now: NodeNotReady", name),
                );
                for pod in client.pods_on_node(&name, &|_| true) {
                    mark_pod_not_ready(&client, &recorder, &pod);
                }
            }
            sync_taints(&client, &node, ready.as_deref(), &mut taint_since);
            evict_expired(&client, &eviction, &name, &taint_since, &timing);
        }
    }
}

fn ready_status(node: &Value) -> Option<String> {
    meta::condition_status(node, "Ready").map(String::from)
}

fn mark_unknown(client: &Internal, node: &Value) {
    let now = client.clock().now_rfc3339();
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
    let _ = client.merge_status(
        "",
        "nodes",
        "",
        meta::name(node),
        &json!({"status": {"conditions": conds}}),
    );
}

/// MarkPodsNotReady: the pod's Ready condition goes False (reason and message untouched) and
/// the pod gets `Warning NodeNotReady "Node is not ready"`.
fn mark_pod_not_ready(client: &Internal, recorder: &EventRecorder, pod: &Value) {
    let Some(conds) = pod.pointer("/status/conditions").and_then(Value::as_array) else {
        return;
    };
    let now = client.clock().now_rfc3339();
    let mut changed = false;
    let next: Vec<Value> = conds
        .iter()
        .cloned()
        .map(|mut c| {
            if c["type"] == "Ready" && c["status"] != "False" {
                c["status"] = json!("False");
                c["lastTransitionTime"] = json!(now);
                changed = true;
            }
            c
        })
        .collect();
    if changed
        && client
            .merge_status(
                "",
                "pods",
                meta::namespace(pod),
                meta::name(pod),
                &json!({"status": {"conditions": next}}),
            )
            .is_ok()
    {
        recorder.record(pod, EventKind::Warning, "NodeNotReady", "Node is not ready");
    }
}

/// The taints a node's state calls for: (key, effect).
fn wanted_taints(node: &Value, ready: Option<&str>) -> Vec<(&'static str, &'static str)> {
    let mut out = Vec::new();
    if node.pointer("/spec/unschedulable") == Some(&json!(true)) {
        out.push((UNSCHEDULABLE, "NoSchedule"));
    }
    match ready {
        Some("False") => out.extend([(NOT_READY, "NoSchedule"), (NOT_READY, "NoExecute")]),
        Some("Unknown") => out.extend([(UNREACHABLE, "NoSchedule"), (UNREACHABLE, "NoExecute")]),
        _ => {}
    }
    out
}

fn sync_taints(
    client: &Internal,
    node: &Value,
    ready: Option<&str>,
    since: &mut HashMap<(String, String), SimInstant>,
) {
    let name = meta::name(node).to_string();
    let current: Vec<Value> = node
        .pointer("/spec/taints")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let wanted = wanted_taints(node, ready);
    let is_managed = |t: &Value| MANAGED.iter().any(|k| t["key"] == *k);
    let has = |key: &str, effect: &str| {
        current
            .iter()
            .any(|t| t["key"] == key && t["effect"] == effect)
    };
    let stale = current.iter().filter(|t| is_managed(t)).any(|t| {
        !wanted
            .iter()
            .any(|(k, e)| t["key"] == *k && t["effect"] == *e)
    });
    let missing = wanted.iter().any(|(k, e)| !has(k, e));
    // Taint eviction acts on every NoExecute taint, the ones this controller does not own too
    // (`node.kubernetes.io/out-of-service`, a user's): tainteviction/taint_eviction.go.
    let no_execute: Vec<String> = current
        .iter()
        .filter(|t| !is_managed(t) && t["effect"] == "NoExecute")
        .filter_map(|t| t["key"].as_str().map(String::from))
        .chain(
            wanted
                .iter()
                .filter(|(_, e)| *e == "NoExecute")
                .map(|(k, _)| k.to_string()),
        )
        .collect();
    since.retain(|(n, key), _| n != &name || no_execute.contains(key));
    let arrived = client.clock().instant();
    for k in no_execute {
        since.entry((name.clone(), k)).or_insert(arrived);
    }
    if !stale && !missing {
        return;
    }
    let now = client.clock().now_rfc3339();
    let mut taints: Vec<Value> = current.iter().filter(|t| !is_managed(t)).cloned().collect();
    for (k, e) in &wanted {
        let kept = current
            .iter()
            .find(|t| t["key"] == *k && t["effect"] == *e)
            .cloned();
        taints.push(kept.unwrap_or_else(|| {
            if *e == "NoExecute" {
                json!({"key": k, "effect": e, "timeAdded": now})
            } else {
                json!({"key": k, "effect": e})
            }
        }));
    }
    let taints = if taints.is_empty() {
        Value::Null
    } else {
        json!(taints)
    };
    // The whole list is written, so the patch pins the resourceVersion it was computed from:
    // a taint someone added since (an operator's out-of-service) is not lost; the next pass
    // sees it (PatchNodeTaints sets the old node's resourceVersion for the same reason).
    let rv = meta::resource_version(node);
    let _ = client.merge(
        "",
        "nodes",
        "",
        &name,
        &json!({"metadata": {"resourceVersion": rv}, "spec": {"taints": taints}}),
    );
}

/// Taint eviction: a pod that does not tolerate a NoExecute taint, or whose tolerationSeconds
/// have run out since the taint arrived, gets DisruptionTarget (DeletionByTaintManager) and is
/// deleted.
fn evict_expired(
    client: &Internal,
    recorder: &EventRecorder,
    node: &str,
    since: &HashMap<(String, String), SimInstant>,
    timing: &Timing,
) {
    let taints: Vec<(&str, SimInstant)> = since
        .iter()
        .filter(|((n, _), _)| n == node)
        .map(|((_, k), t)| (k.as_str(), *t))
        .collect();
    if taints.is_empty() {
        return;
    }
    for pod in client.pods_on_node(node, &|p| !meta::is_deleting(p)) {
        let tolerations = pod
            .pointer("/spec/tolerations")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let expired = taints.iter().any(|(key, arrived)| {
            let t = tolerations.iter().find(|t| {
                (t["key"] == *key || (t.get("key").is_none() && t["operator"] == "Exists"))
                    && (t.get("effect").is_none() || t["effect"] == "NoExecute")
            });
            let limit = match t {
                None => Duration::ZERO,
                Some(t) => match t.get("tolerationSeconds").and_then(Value::as_i64) {
                    Some(s) => timing.s(Duration::from_secs(s.max(0) as u64)),
                    None => return false, // tolerates for ever (DaemonSet pods)
                },
            };
            timing.clock.since(*arrived) >= limit
        });
        if !expired {
            continue;
        }
        let (ns, name) = (
            meta::namespace(&pod).to_string(),
            meta::name(&pod).to_string(),
        );
        let mut next = (*pod).clone();
        meta::set_condition(
            &mut next,
            "DisruptionTarget",
            "True",
            Some("DeletionByTaintManager"),
            Some("Taint manager: deleting due to NoExecute taint"),
            &timing.clock.now_rfc3339(),
        );
        let _ = client.merge_status(
            "",
            "pods",
            &ns,
            &name,
            &json!({"status": {"conditions": next["status"]["conditions"]}}),
        );
        recorder.record(
            &pod,
            EventKind::Normal,
            "TaintManagerEviction",
            &format!("Marking for deletion Pod {}/{}", ns, name),
        );
        let _ = client.delete("", "pods", &ns, &name, None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(taints: &[Value]) -> Vec<String> {
        taints
            .iter()
            .map(|t| {
                format!(
                    "{}:{}",
                    t["key"].as_str().unwrap(),
                    t["effect"].as_str().unwrap()
                )
            })
            .collect()
    }

    #[test]
    fn the_no_schedule_pass_takes_admissions_not_ready_taint_off_a_node_without_conditions() {
        let node = json!({"metadata": {"name": "n"}, "spec": {"taints": [
            {"key": NOT_READY, "effect": "NoSchedule"}]}});
        assert_eq!(swap_no_schedule(&node), Some(vec![]));
    }

    #[test]
    fn the_no_schedule_pass_follows_conditions_and_unschedulable_and_leaves_other_taints() {
        let node = json!({"metadata": {"name": "n"}, "spec": {"unschedulable": true, "taints": [
            {"key": "dedicated", "value": "db", "effect": "NoSchedule"},
            {"key": NOT_READY, "effect": "NoSchedule"},
            {"key": NOT_READY, "effect": "NoExecute", "timeAdded": "2026-01-01T00:00:00Z"}]},
            "status": {"conditions": [{"type": "Ready", "status": "True"},
                                      {"type": "DiskPressure", "status": "True"}]}});
        let next = swap_no_schedule(&node).unwrap();
        assert_eq!(
            keys(&next),
            [
                "dedicated:NoSchedule",
                "node.kubernetes.io/not-ready:NoExecute",
                "node.kubernetes.io/disk-pressure:NoSchedule",
                "node.kubernetes.io/unschedulable:NoSchedule"
            ]
        );
        // Nothing to change: no write.
        let mut settled = node.clone();
        settled["spec"]["taints"] = json!(next);
        assert_eq!(swap_no_schedule(&settled), None);
        // Ready=False wants not-ready.
        let mut not_ready = settled.clone();
        not_ready["status"]["conditions"][0]["status"] = json!("False");
        assert!(keys(&swap_no_schedule(&not_ready).unwrap())
            .contains(&"node.kubernetes.io/not-ready:NoSchedule".to_string()));
    }
}
