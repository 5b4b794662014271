//! The default scheduler: binds Pending pods to Ready, schedulable nodes that pass the filters
//! the real scheduler applies first (taints/tolerations, nodeSelector, required node affinity,
//! cpu/memory requests against allocatable, PVC binding and PV node affinity), scoring by the
//! fewest pods. Pods that fit nowhere get PodScheduled=False/Unschedulable with the real
//! message shape and a FailedScheduling event; they are retried when nodes change.

use crate::apiserver::meta;
use crate::controllers::changes::Changes;
use crate::events::{EventKind, EventRecorder};
use crate::internal::Internal;
use crate::timing::Timing;
use cache::SchedulerCache;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

mod cache;

pub async fn run(client: Internal, timing: Timing) {
    let recorder = EventRecorder::new(client.clone(), "default-scheduler", None);
    let retry = timing
        .s(timing.scheduler_retry)
        .max(Duration::from_millis(50));
    // Subscribe before listing: the cache then misses nothing (see SchedulerCache::listed).
    let mut changes = Changes::new(&client.api.store, retry);
    let mut cache = SchedulerCache::listed(&client.api.store);
    let mut next_start = 0;
    let clock = client.clock().clone();
    while changes.wait(|ev| cache.apply(ev)).await {
        // A large backlog is scheduled a batch at a time, yielding in between, so one pass does
        // not hold a runtime thread while thousands of pods wait (the real scheduler binds
        // asynchronously, one pod per scheduling cycle). Each batch sees the last one's writes.
        // Each batch is a pass: none runs while the cluster is frozen.
        while {
            let _pass = clock.pass().await;
            schedule_batch(&client, &recorder, &mut cache, &mut next_start)
        } {
            tokio::task::yield_now().await;
            if changes.drain(|ev| cache.apply(ev)).is_none() {
                return;
            }
        }
    }
}

/// Pods one pass schedules before it yields.
const BATCH: usize = 1000;

/// How many feasible nodes the scheduler looks for before it stops filtering
/// (`numFeasibleNodesToFind` with the default adaptive `percentageOfNodesToScore`): every node in
/// clusters under 100 nodes, else 50 % minus 1 % per 125 nodes, at least 5 % and 100 nodes.
pub fn feasible_nodes_to_find(all: usize) -> usize {
    const MIN_FEASIBLE: usize = 100;
    if all < MIN_FEASIBLE {
        return all;
    }
    let percentage = (50 - (all / 125) as i64).max(5) as usize;
    (all * percentage / 100).max(MIN_FEASIBLE)
}

fn unscheduled(pod: &Value) -> bool {
    meta::str_at(pod, "/spec/nodeName").unwrap_or("").is_empty()
        && !meta::is_deleting(pod)
        && meta::str_at(pod, "/spec/schedulerName").unwrap_or("default-scheduler")
            == "default-scheduler"
        && !matches!(
            meta::str_at(pod, "/status/phase"),
            Some("Succeeded" | "Failed")
        )
}

/// One pass over at most `BATCH` pending pods; true when more are waiting.
fn schedule_batch(
    client: &Internal,
    recorder: &EventRecorder,
    cache: &mut SchedulerCache,
    next_start: &mut usize,
) -> bool {
    let waiting = cache.active.len() + cache.unschedulable.len();
    if waiting == 0 {
        return false;
    }
    // The active queue before the unschedulable pods, so a batch of pods already found
    // unschedulable cannot hold back pods that fit. Another batch follows only if this one
    // has pods not yet tried (each is bound or marked unschedulable now).
    let more = waiting > BATCH && !cache.active.is_empty();
    let pending: Vec<Arc<Value>> = cache
        .active
        .values()
        .chain(cache.unschedulable.values())
        .take(BATCH)
        .cloned()
        .collect();
    // Node facts come from the cache, read when each node last changed.
    let nodes: Vec<Arc<NodeInfo>> = cache.nodes.values().cloned().collect();
    let to_find = feasible_nodes_to_find(nodes.len());
    for pod in pending {
        let mut reasons: BTreeMap<Unfit, usize> = BTreeMap::new();
        let mut best: Option<(usize, String)> = None;
        let needs = PodNeeds::of(&pod, client);
        // Filter from where the last pod stopped, round the ring, until enough nodes fit.
        let (mut feasible, mut visited) = (0, 0);
        for i in 0..nodes.len() {
            if needs.volume_problem.is_some() || feasible >= to_find {
                break;
            }
            let node = &nodes[(*next_start + i) % nodes.len()];
            visited += 1;
            let usage = cache.usage(&node.name);
            match fits(&pod, &needs, node, (usage.cpu, usage.memory)) {
                Ok(()) => {
                    feasible += 1;
                    let c = usage.pods;
                    if best
                        .as_ref()
                        .map(|(bc, bn)| (c, node.name.as_str()) < (*bc, bn.as_str()))
                        .unwrap_or(true)
                    {
                        best = Some((c, node.name.to_string()));
                    }
                }
                Err(r) => *reasons.entry(r).or_default() += 1,
            }
        }
        if !nodes.is_empty() {
            *next_start = (*next_start + visited) % nodes.len();
        }
        let ns = meta::namespace(&pod).to_string();
        let pname = meta::name(&pod).to_string();
        match best {
            Some((_, node)) => {
                let binding = json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": pname, "namespace": ns}, "target": {"apiVersion": "v1", "kind": "Node", "name": node}});
                if client.api.bind_pod(&ns, &pname, &binding).is_ok() {
                    cache.assume(&pod, &node);
                    recorder.record(
                        &pod,
                        EventKind::Normal,
                        "Scheduled",
                        &format!("Successfully assigned {}/{} to {}", ns, pname, node),
                    );
                }
            }
            None => {
                let msg =
                    unschedulable_message(nodes.len(), needs.volume_problem.as_deref(), &reasons);
                let already = meta::at(&pod, "/status/conditions")
                    .and_then(Value::as_array)
                    .and_then(|cs| cs.iter().find(|c| c["type"] == "PodScheduled"))
                    .map(|c| c["message"] == json!(msg) && c["status"] == "False")
                    .unwrap_or(false);
                if !already {
                    let mut next = (*pod).clone();
                    meta::set_condition(
                        &mut next,
                        "PodScheduled",
                        "False",
                        Some("Unschedulable"),
                        Some(&msg),
                        &client.clock().now_rfc3339(),
                    );
                    let conds = next["status"]["conditions"].clone();
                    let _ = client.merge_status(
                        "",
                        "pods",
                        &ns,
                        &pname,
                        &json!({"status": {"conditions": conds}}),
                    );
                    recorder.record(&pod, EventKind::Warning, "FailedScheduling", &msg);
                }
            }
        }
    }
    more
}

fn marked_unschedulable(pod: &Value) -> bool {
    meta::condition_status(pod, "PodScheduled") == Some("False")
}

/// Why a node does not fit, and whether evicting lower-priority pods could change that.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Unfit {
    reason: &'static str,
    /// Preemption could help (resources); otherwise the node is UnschedulableAndUnresolvable.
    resolvable: bool,
}

const fn unresolvable(reason: &'static str) -> Unfit {
    Unfit {
        reason,
        resolvable: false,
    }
}

/// The scheduler's FitError text (1.35, framework/types.go `FitError.Error`): "<count>
/// <reason>" entries sorted as whole strings, then the PostFilter plugins' messages joined by
/// ", ": DynamicResources' "no new claims to deallocate" (DRA is GA and on; a pod without
/// claims), then DefaultPreemption's diagnosis in the same form. A PreFilter rejection has no
/// count, and its PostFilter message is "not found": DynamicResources' PreFilter never ran, so
/// its PostFilter fails reading its cycle state and ends the PostFilter pass before preemption
/// (seen from a v1.35.4 kube-scheduler).
fn unschedulable_message(
    total: usize,
    prefilter: Option<&str>,
    reasons: &BTreeMap<Unfit, usize>,
) -> String {
    if total == 0 {
        return "no nodes available to schedule pods".into();
    }
    let sorted = |items: Vec<String>| {
        let mut items = items;
        items.sort();
        items.join(", ")
    };
    let (filter, preemption) = match prefilter {
        Some(p) => return format!("0/{} nodes are available: {}. not found", total, p),
        None => {
            let mut merged: BTreeMap<&str, usize> = BTreeMap::new();
            let (mut helpless, mut victimless) = (0, 0);
            for (u, n) in reasons {
                *merged.entry(u.reason).or_default() += n;
                if u.resolvable {
                    victimless += n;
                } else {
                    helpless += n;
                }
            }
            let mut pre = Vec::new();
            if helpless > 0 {
                pre.push(format!(
                    "{} Preemption is not helpful for scheduling",
                    helpless
                ));
            }
            if victimless > 0 {
                pre.push(format!(
                    "{} No preemption victims found for incoming pod",
                    victimless
                ));
            }
            (
                sorted(merged.iter().map(|(r, n)| format!("{} {}", n, r)).collect()),
                sorted(pre),
            )
        }
    };
    format!(
        "0/{} nodes are available: {}. no new claims to deallocate, preemption: 0/{} nodes are available: {}.",
        total, filter, total, preemption
    )
}

fn tolerates(pod: &Value, taint: &Value) -> bool {
    let tolerations = meta::at(pod, "/spec/tolerations")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    tolerations.iter().any(|t| {
        let key_ok = match t.get("key").and_then(Value::as_str) {
            None | Some("") => t.get("operator").and_then(Value::as_str) == Some("Exists"),
            Some(k) => Some(k) == taint.get("key").and_then(Value::as_str),
        };
        let op_ok = match t.get("operator").and_then(Value::as_str).unwrap_or("Equal") {
            "Exists" => true,
            _ => {
                t.get("value").and_then(Value::as_str).unwrap_or("")
                    == taint.get("value").and_then(Value::as_str).unwrap_or("")
            }
        };
        let effect_ok = match t.get("effect").and_then(Value::as_str) {
            None | Some("") => true,
            Some(e) => Some(e) == taint.get("effect").and_then(Value::as_str),
        };
        key_ok && op_ok && effect_ok
    })
}

/// What the filters read of a node, kept in the cache and rebuilt only when the node changes
/// (upstream's scheduler cache keeps a NodeInfo per node the same way).
pub(crate) struct NodeInfo {
    node: Arc<Value>,
    name: String,
    unschedulable: bool,
    /// The NoSchedule and NoExecute taints.
    taints: Vec<Value>,
    allocatable: (f64, f64),
}

impl NodeInfo {
    pub(crate) fn of(node: Arc<Value>) -> Self {
        let taints = meta::at(&node, "/spec/taints")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|t| {
                matches!(
                    t.get("effect").and_then(Value::as_str),
                    Some("NoSchedule" | "NoExecute")
                )
            })
            .cloned()
            .collect();
        NodeInfo {
            name: meta::name(&node).to_string(),
            unschedulable: meta::at(&node, "/spec/unschedulable") == Some(&json!(true)),
            taints,
            allocatable: (
                meta::at(&node, "/status/allocatable/cpu")
                    .and_then(Value::as_str)
                    .map(parse_cpu)
                    .unwrap_or(0.0),
                meta::at(&node, "/status/allocatable/memory")
                    .and_then(Value::as_str)
                    .map(parse_bytes)
                    .unwrap_or(0.0),
            ),
            node,
        }
    }
}

/// What the filters read of a pod beyond its spec, once per pass: its requests, whether its
/// claims keep it from any node, and the node affinity of the PVs its claims are bound to
/// (Longhorn PVs usually have none).
struct PodNeeds {
    requests: (f64, f64),
    /// Claims must exist and be bound before the pod can be placed (Immediate binding).
    volume_problem: Option<String>,
    pv_terms: Vec<Vec<Value>>,
}

impl PodNeeds {
    fn of(pod: &Value, client: &Internal) -> Self {
        let ns = meta::namespace(pod);
        let mut needs = PodNeeds {
            requests: requests(pod),
            volume_problem: None,
            pv_terms: Vec::new(),
        };
        for v in meta::at(pod, "/spec/volumes")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let Some(claim) =
                meta::at(v, "/persistentVolumeClaim/claimName").and_then(Value::as_str)
            else {
                continue;
            };
            let pvc = match client.get("", "persistentvolumeclaims", ns, claim) {
                None => {
                    needs.volume_problem =
                        Some(format!("persistentvolumeclaim \"{}\" not found", claim));
                    break;
                }
                Some(pvc) if meta::str_at(&pvc, "/status/phase") != Some("Bound") => {
                    needs.volume_problem =
                        Some("pod has unbound immediate PersistentVolumeClaims".into());
                    break;
                }
                Some(pvc) => pvc,
            };
            let Some(pv_name) = meta::str_at(&pvc, "/spec/volumeName") else {
                continue;
            };
            let Some(pv) = client.get("", "persistentvolumes", "", pv_name) else {
                continue;
            };
            if let Some(terms) = meta::at(&pv, "/spec/nodeAffinity/required/nodeSelectorTerms")
                .and_then(Value::as_array)
            {
                needs.pv_terms.push(terms.clone());
            }
        }
        needs
    }
}

/// The Filter plugins in their order (NodeUnschedulable, TaintToleration, NodeAffinity,
/// NodeResourcesFit, VolumeBinding); the first failure is the node's reason. Node readiness is
/// not checked: the node lifecycle controller's not-ready/unreachable taints do that.
fn fits(pod: &Value, needs: &PodNeeds, node: &NodeInfo, used: (f64, f64)) -> Result<(), Unfit> {
    if node.unschedulable {
        let t = json!({"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"});
        if !tolerates(pod, &t) {
            return Err(unresolvable("node(s) were unschedulable"));
        }
    }
    if node.taints.iter().any(|taint| !tolerates(pod, taint)) {
        return Err(unresolvable("node(s) had untolerated taint(s)"));
    }
    if let Some(sel) = meta::at(pod, "/spec/nodeSelector").and_then(Value::as_object) {
        let labels = meta::at(&node.node, "/metadata/labels");
        let ok = sel
            .iter()
            .all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v));
        if !ok {
            return Err(unresolvable(
                "node(s) didn't match Pod's node affinity/selector",
            ));
        }
    }
    if let Some(terms) = meta::at(pod, "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms").and_then(Value::as_array) {
        if !terms.iter().any(|t| node_selector_term_matches(t, &node.node)) {
            return Err(unresolvable("node(s) didn't match Pod's node affinity/selector"));
        }
    }
    let (cpu, mem) = needs.requests;
    let (alloc_cpu, alloc_mem) = node.allocatable;
    if cpu > 0.0 && used.0 + cpu > alloc_cpu {
        return Err(Unfit {
            reason: "Insufficient cpu",
            resolvable: true,
        });
    }
    if mem > 0.0 && used.1 + mem > alloc_mem {
        return Err(Unfit {
            reason: "Insufficient memory",
            resolvable: true,
        });
    }
    // Bound PVs with node affinity pin the pod.
    for terms in &needs.pv_terms {
        if !terms
            .iter()
            .any(|t| node_selector_term_matches(t, &node.node))
        {
            // volumebinding/binder.go ErrReasonNodeConflict.
            return Err(unresolvable(
                "node(s) didn't match PersistentVolume's node affinity",
            ));
        }
    }
    Ok(())
}

fn node_selector_term_matches(term: &Value, node: &Value) -> bool {
    let labels = meta::at(node, "/metadata/labels");
    let exprs = term
        .get("matchExpressions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let fields = term
        .get("matchFields")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let check = |e: &Value, value: Option<&str>| {
        let vals: Vec<&str> = e
            .get("values")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        match e.get("operator").and_then(Value::as_str).unwrap_or("") {
            "In" => value.map(|v| vals.contains(&v)).unwrap_or(false),
            "NotIn" => value.map(|v| !vals.contains(&v)).unwrap_or(true),
            "Exists" => value.is_some(),
            "DoesNotExist" => value.is_none(),
            "Gt" | "Lt" => {
                let (Some(v), Some(t)) = (
                    value.and_then(|v| v.parse::<i64>().ok()),
                    vals.first().and_then(|t| t.parse::<i64>().ok()),
                ) else {
                    return false;
                };
                if e["operator"] == "Gt" {
                    v > t
                } else {
                    v < t
                }
            }
            _ => false,
        }
    };
    if exprs.is_empty() && fields.is_empty() {
        return false;
    }
    exprs.iter().all(|e| {
        check(
            e,
            e.get("key")
                .and_then(Value::as_str)
                .and_then(|k| labels.and_then(|l| l.get(k)))
                .and_then(Value::as_str),
        )
    }) && fields.iter().all(|f| {
        check(
            f,
            if f["key"] == "metadata.name" {
                Some(meta::name(node))
            } else {
                None
            },
        )
    })
}

/// Summed cpu (cores) and memory (bytes) requests of the pod's containers (init: the max).
fn requests(pod: &Value) -> (f64, f64) {
    let sum = |field: &str| -> Vec<(f64, f64)> {
        meta::at(pod, &format!("/spec/{}", field))
            .and_then(Value::as_array)
            .map(|cs| {
                cs.iter()
                    .map(|c| {
                        let r = meta::at(c, "/resources/requests");
                        let cpu = r
                            .and_then(|r| r.get("cpu"))
                            .and_then(Value::as_str)
                            .map(parse_cpu)
                            .unwrap_or(0.0);
                        let mem = r
                            .and_then(|r| r.get("memory"))
                            .and_then(Value::as_str)
                            .map(parse_bytes)
                            .unwrap_or(0.0);
                        (cpu, mem)
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let main = sum("containers")
        .iter()
        .fold((0.0, 0.0), |a, b| (a.0 + b.0, a.1 + b.1));
    let init = sum("initContainers")
        .iter()
        .fold((0.0f64, 0.0f64), |a, b| (a.0.max(b.0), a.1.max(b.1)));
    (main.0.max(init.0), main.1.max(init.1))
}

pub fn parse_cpu(s: &str) -> f64 {
    match s.strip_suffix('m') {
        Some(m) => m.parse::<f64>().unwrap_or(0.0) / 1000.0,
        None => s.parse().unwrap_or(0.0),
    }
}

pub fn parse_bytes(s: &str) -> f64 {
    const UNITS: &[(&str, f64)] = &[
        ("Ki", 1024.0),
        ("Mi", 1048576.0),
        ("Gi", 1073741824.0),
        ("Ti", 1099511627776.0),
        ("k", 1e3),
        ("M", 1e6),
        ("G", 1e9),
        ("T", 1e12),
    ];
    for (u, f) in UNITS {
        if let Some(n) = s.strip_suffix(u) {
            return n.parse::<f64>().unwrap_or(0.0) * f;
        }
    }
    s.parse().unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scheduler_looks_for_as_many_feasible_nodes_as_upstream() {
        assert_eq!(feasible_nodes_to_find(3), 3);
        assert_eq!(feasible_nodes_to_find(99), 99);
        assert_eq!(
            feasible_nodes_to_find(100),
            100,
            "49 % of 100 is below the 100-node minimum"
        );
        assert_eq!(feasible_nodes_to_find(1000), 420, "50 - 1000/125 = 42 %");
        assert_eq!(feasible_nodes_to_find(5000), 500, "10 %");
        assert_eq!(feasible_nodes_to_find(10000), 500, "never below 5 %");
    }

    #[test]
    fn fit_errors_read_as_in_1_35() {
        let mut reasons = BTreeMap::new();
        reasons.insert(unresolvable("node(s) had untolerated taint(s)"), 1);
        reasons.insert(
            Unfit {
                reason: "Insufficient cpu",
                resolvable: true,
            },
            2,
        );
        assert_eq!(
            unschedulable_message(3, None, &reasons),
            "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu. no new claims to deallocate, preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, 2 No preemption victims found for incoming pod."
        );
        assert_eq!(
            unschedulable_message(
                5,
                Some("pod has unbound immediate PersistentVolumeClaims"),
                &BTreeMap::new()
            ),
            "0/5 nodes are available: pod has unbound immediate PersistentVolumeClaims. not found"
        );
        // Sorted as whole strings: "10 ..." before "2 ...".
        let mut reasons = BTreeMap::new();
        reasons.insert(unresolvable("node(s) were unschedulable"), 2);
        reasons.insert(
            unresolvable("node(s) didn't match Pod's node affinity/selector"),
            10,
        );
        assert!(unschedulable_message(12, None, &reasons).starts_with("0/12 nodes are available: 10 node(s) didn't match Pod's node affinity/selector, 2 node(s) were unschedulable. no new claims to deallocate, preemption: 0/12 nodes are available: 12 Preemption is not helpful"));
        assert_eq!(
            unschedulable_message(
                3,
                Some("persistentvolumeclaim \"nope\" not found"),
                &BTreeMap::new()
            ),
            "0/3 nodes are available: persistentvolumeclaim \"nope\" not found. not found"
        );
    }

    #[test]
    fn quantities() {
        assert_eq!(parse_cpu("250m"), 0.25);
        assert_eq!(parse_cpu("2"), 2.0);
        assert_eq!(parse_bytes("1Gi"), 1073741824.0);
        assert_eq!(parse_bytes("32760852Ki"), 32760852.0 * 1024.0);
    }

    #[test]
    fn tolerations_match_taints() {
        let pod = json!({"spec": {"tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]}});
        assert!(tolerates(
            &pod,
            &json!({"key": "gpu", "value": "a100", "effect": "NoSchedule"})
        ));
        assert!(!tolerates(
            &pod,
            &json!({"key": "other", "effect": "NoSchedule"})
        ));
        let all = json!({"spec": {"tolerations": [{"operator": "Exists"}]}});
        assert!(tolerates(
            &all,
            &json!({"key": "anything", "effect": "NoExecute"})
        ));
    }

    #[test]
    fn node_affinity_terms() {
        let node = json!({"metadata": {"name": "n1", "labels": {"zone": "a"}}});
        assert!(node_selector_term_matches(
            &json!({"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}]}),
            &node
        ));
        assert!(!node_selector_term_matches(
            &json!({"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["a"]}]}),
            &node
        ));
        assert!(node_selector_term_matches(
            &json!({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}),
            &node
        ));
    }
}
