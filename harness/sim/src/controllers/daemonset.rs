//! The DaemonSet controller: one pod per eligible node, recreated when deleted (so deleting a
//! `longhorn-csi-plugin` pod restarts that node's plugin, as in the runbook), with status counts.

use super::changes::{self, Changes};
use crate::apiserver::meta;
use crate::apiserver::resources::ResourceKey;
use crate::apiserver::store::{EventType, StoreEvent};
use crate::internal::Internal;
use crate::timing::Timing;
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

pub async fn run(client: Internal, timing: Timing) {
    let mut changes = Changes::new(
        &client.api.store,
        timing
            .s(Duration::from_secs(5))
            .max(Duration::from_millis(100)),
    );
    // Which DaemonSets to sync (upstream's workqueue of DaemonSet keys): a pod change queues
    // its owner, a DaemonSet change itself, a node change or the resync every one.
    let mut dirty = Dirty::All;
    loop {
        let woke = changes
            .wait(|ev| {
                let Some(what) = what_to_sync(ev) else {
                    return false;
                };
                dirty.add(what);
                true
            })
            .await;
        if !woke {
            return;
        }
        let _pass = client.clock().pass().await;
        // A resync tick wakes the loop without an event: sync every DaemonSet then.
        let now = std::mem::replace(&mut dirty, Dirty::Some(HashSet::new()));
        reconcile(
            &client,
            match &now {
                Dirty::Some(uids) if !uids.is_empty() => Some(uids),
                _ => None,
            },
        );
    }
}

/// DaemonSets waiting for a sync.
enum Dirty {
    All,
    Some(HashSet<String>),
}

impl Dirty {
    fn add(&mut self, what: Option<String>) {
        match (self, what) {
            (Dirty::Some(uids), Some(uid)) => {
                uids.insert(uid);
            }
            (this, None) => *this = Dirty::All,
            (Dirty::All, Some(_)) => {}
        }
    }
}

/// Does a change call for a sync: `Some(Some(uid))` of one DaemonSet, `Some(None)` of all.
fn what_to_sync(ev: &StoreEvent) -> Option<Option<String>> {
    match (ev.key.group.as_str(), ev.key.plural.as_str()) {
        ("apps", "daemonsets") => Some(Some(meta::uid(&ev.object).to_string())),
        ("", "pods") => {
            let owner = daemonset_owner(&ev.object)?;
            // The controller reads of its pods only the node, deletion and readiness: the
            // kubelet's other status writes (container states, IPs) need no sync.
            let unchanged = |prev: &Value| {
                meta::str_at(prev, "/spec/nodeName") == meta::str_at(&ev.object, "/spec/nodeName")
                    && meta::is_deleting(prev) == meta::is_deleting(&ev.object)
                    && is_ready(prev) == is_ready(&ev.object)
            };
            match (&ev.event_type, &ev.prev) {
                (EventType::Modified, Some(prev)) if unchanged(prev) => None,
                _ => Some(Some(owner.to_string())),
            }
        }
        // Node heartbeats change only status: like the real controller's
        // shouldIgnoreNodeUpdate, only labels, taints and (un)schedulability matter.
        ("", "nodes") => {
            changes::node_fields_changed(ev, &["/metadata/labels", "/spec"]).then_some(None)
        }
        _ => None,
    }
}

/// The uid of the DaemonSet that owns a pod.
fn daemonset_owner(pod: &Value) -> Option<&str> {
    pod.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)?
        .iter()
        .find(|r| r["kind"] == "DaemonSet")
        .and_then(|r| r["uid"].as_str())
}

/// Tolerations the DaemonSet controller adds to every daemon pod.
fn daemon_tolerations(template: &Value) -> Value {
    let mut ts: Vec<Value> = template
        .pointer("/spec/tolerations")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for (key, effect) in [
        ("node.kubernetes.io/not-ready", "NoExecute"),
        ("node.kubernetes.io/unreachable", "NoExecute"),
        ("node.kubernetes.io/disk-pressure", "NoSchedule"),
        ("node.kubernetes.io/memory-pressure", "NoSchedule"),
        ("node.kubernetes.io/pid-pressure", "NoSchedule"),
        ("node.kubernetes.io/unschedulable", "NoSchedule"),
    ] {
        if !ts.iter().any(|t| t["key"] == key && t["effect"] == effect) {
            ts.push(json!({"key": key, "operator": "Exists", "effect": effect}));
        }
    }
    json!(ts)
}

/// What placement reads of a DaemonSet's pod template, once per reconcile (not per node).
struct Placement<'a> {
    node_selector: Option<&'a serde_json::Map<String, Value>>,
    tolerations: Value,
}

impl<'a> Placement<'a> {
    fn of(ds: &'a Value) -> Self {
        let tolerations = daemon_tolerations(ds.pointer("/spec/template").unwrap_or(&Value::Null));
        Placement {
            node_selector: ds
                .pointer("/spec/template/spec/nodeSelector")
                .and_then(Value::as_object),
            tolerations,
        }
    }
}

/// May a daemon pod run on `node`? New pods need every NoSchedule and NoExecute taint
/// tolerated; running pods only NoExecute ones (as the real controller decides).
fn eligible(placement: &Placement, node: &Value, new_pod: bool) -> bool {
    if let Some(sel) = placement.node_selector {
        let labels = node.pointer("/metadata/labels");
        if !sel
            .iter()
            .all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v))
        {
            return false;
        }
    }
    let tolerations = &placement.tolerations;
    node.pointer("/spec/taints")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .all(|taint| {
            let effect = taint["effect"].as_str().unwrap_or("");
            if effect != "NoExecute" && !(new_pod && effect == "NoSchedule") {
                return true;
            }
            tolerations.as_array().into_iter().flatten().any(|t| {
                (t["operator"] == "Exists" && (t.get("key").is_none() || t["key"] == taint["key"]))
                    && (t.get("effect").is_none() || t["effect"] == taint["effect"])
            })
        })
}

/// Sync the DaemonSets with these uids, or every one.
fn reconcile(client: &Internal, only: Option<&HashSet<String>>) {
    let pods_key = ResourceKey::new("", "pods");
    let nodes = client.list("", "nodes", None, &|_| true);
    let wanted =
        |d: &Value| !meta::is_deleting(d) && only.is_none_or(|uids| uids.contains(meta::uid(d)));
    for ds in client.list("apps", "daemonsets", None, &wanted) {
        let ns = meta::namespace(&ds).to_string();
        let uid = meta::uid(&ds).to_string();
        // Its pods through the store's owner index (the informer index upstream keeps), not a
        // scan of the namespace: every daemon pod's status change brings the loop here.
        let pods: Vec<Arc<Value>> = client
            .api
            .store
            .dependents_of(&uid)
            .into_iter()
            .filter(|(k, p)| *k == pods_key && meta::namespace(p) == ns)
            .map(|(_, p)| p)
            .collect();
        let mut by_node: HashMap<&str, Vec<&Arc<Value>>> = HashMap::new();
        for p in &pods {
            by_node
                .entry(meta::str_at(p, "/spec/nodeName").unwrap_or(""))
                .or_default()
                .push(p);
        }
        let placement = Placement::of(&ds);
        let mut desired = 0;
        let mut ready = 0;
        for node in &nodes {
            let nname = meta::name(node);
            let mine: Vec<&Arc<Value>> = by_node.get(nname).cloned().unwrap_or_default();
            if !eligible(&placement, node, mine.is_empty()) {
                for p in mine {
                    let _ = client.delete("", "pods", &ns, meta::name(p), None);
                }
                continue;
            }
            desired += 1;
            let live: Vec<_> = mine.iter().filter(|p| !meta::is_deleting(p)).collect();
            if live.is_empty() {
                create_pod(client, &ds, nname);
            } else if live.iter().any(|p| is_ready(p)) {
                ready += 1;
            }
        }
        let current = pods.iter().filter(|p| !meta::is_deleting(p)).count();
        let status = json!({"status": {
            "desiredNumberScheduled": desired, "currentNumberScheduled": current, "numberMisscheduled": 0,
            "numberReady": ready, "numberAvailable": ready, "updatedNumberScheduled": current,
            "numberUnavailable": if desired > ready { Value::from(desired - ready) } else { Value::Null },
            "observedGeneration": ds.pointer("/metadata/generation").cloned().unwrap_or(json!(1)),
        }});
        // `storeDaemonSetStatus` (pkg/controller/daemon/daemon_controller.go): written when a
        // count differs or the generation is unobserved (a new DaemonSet on no nodes included).
        let count = |v: &Value, f: &str| {
            v.pointer(&format!("/status/{f}"))
                .and_then(Value::as_i64)
                .unwrap_or(0)
        };
        let counts_differ = [
            "desiredNumberScheduled",
            "currentNumberScheduled",
            "numberMisscheduled",
            "numberReady",
            "updatedNumberScheduled",
            "numberAvailable",
            "numberUnavailable",
        ]
        .iter()
        .any(|f| count(&ds, f) != count(&status, f));
        let unobserved = count(&ds, "observedGeneration")
            < ds.pointer("/metadata/generation")
                .and_then(Value::as_i64)
                .unwrap_or(0);
        if counts_differ || unobserved {
            let _ = client.merge_status("apps", "daemonsets", &ns, meta::name(&ds), &status);
        }
    }
}

fn is_ready(pod: &Value) -> bool {
    meta::condition_status(pod, "Ready") == Some("True")
}

fn create_pod(client: &Internal, ds: &Value, node: &str) {
    let template = ds
        .pointer("/spec/template")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let mut labels = template
        .pointer("/metadata/labels")
        .cloned()
        .unwrap_or_else(|| json!({}));
    // The revision's hash: controller.ComputeHash of the template and the collision count
    // (daemon_controller.go constructHistory).
    let collisions = ds.pointer("/status/collisionCount").and_then(Value::as_i64);
    labels["controller-revision-hash"] = json!(super::gohash::compute_hash(&template, collisions)
        .unwrap_or_else(|| super::util::template_hash(&template)));
    labels["pod-template-generation"] = json!(ds
        .pointer("/metadata/generation")
        .and_then(Value::as_i64)
        .unwrap_or(1)
        .to_string());
    let mut spec = template.get("spec").cloned().unwrap_or_else(|| json!({}));
    spec["tolerations"] = daemon_tolerations(&template);
    spec["affinity"] = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]}}});
    // Daemon pods are placed by the controller itself (see docs/fidelity.md).
    spec["nodeName"] = json!(node);
    let pod = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "generateName": format!("{}-", meta::name(ds)),
            "namespace": meta::namespace(ds),
            "labels": labels,
            "annotations": template.pointer("/metadata/annotations").cloned().unwrap_or(Value::Null),
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": meta::name(ds), "uid": meta::uid(ds), "controller": true, "blockOwnerDeletion": true}],
        },
        "spec": spec,
    });
    let _ = client.create("", "pods", meta::namespace(ds), pod);
}
