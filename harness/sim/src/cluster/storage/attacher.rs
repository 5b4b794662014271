//! Attaching volumes to nodes: the attach/detach controller (VolumeAttachments for the volumes
//! that pods on a node use, `node.status.volumesAttached`) and the external CSI attacher that
//! marks them attached once the driver is registered on the node.

use crate::apiserver::meta;
use crate::apiserver::store::{EventType, Informer};
pub use crate::cluster::node::volumes::attachment_name;
use crate::cluster::node::volumes::{unique_name, DRIVER};
use crate::controllers::podgc::OUT_OF_SERVICE;
use crate::events::{EventKind, EventRecorder};
use crate::internal::Internal;
use crate::timing::SimInstant;
use crate::timing::Timing;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

/// The pods that name a PersistentVolumeClaim, by namespace and name (store order): the attach/detach controller's view of
/// the pod informer (upstream's desired-state-of-world populator), kept from the store's events
/// so a pass reads only these pods instead of scanning every pod in the cluster.
pub(super) struct ClaimPods {
    informer: Informer,
    pods: BTreeMap<(String, String), Arc<Value>>,
}

/// The external attacher's finalizer on what it attached: `external-attacher/` and the driver's
/// name with every non-alphanumeric character a `-` (external-attacher's GetFinalizerName).
const ATTACHER_FINALIZER: &str = "external-attacher/driver-longhorn-io";

fn key_of(pod: &Value) -> (String, String) {
    (
        meta::namespace(pod).to_string(),
        meta::name(pod).to_string(),
    )
}

fn names_a_claim(pod: &Value) -> bool {
    pod.pointer("/spec/volumes")
        .and_then(Value::as_array)
        .is_some_and(|vs| vs.iter().any(|v| v.get("persistentVolumeClaim").is_some()))
}

impl ClaimPods {
    pub fn new(client: &Internal) -> Self {
        // Follow first, then list: a pod created in between is seen twice, never missed.
        let informer = client.api.store.informer();
        let pods = client
            .list("", "pods", None, &names_a_claim)
            .into_iter()
            .map(|p| (key_of(&p), p))
            .collect();
        ClaimPods { informer, pods }
    }

    /// Take in every change since the last pass.
    fn refresh(&mut self) {
        let pods = &mut self.pods;
        let _ = self.informer.drain(|ev| {
            if !(ev.key.group.is_empty() && ev.key.plural == "pods") {
                return;
            }
            let key = key_of(&ev.object);
            if ev.event_type != EventType::Deleted && names_a_claim(&ev.object) {
                pods.insert(key, ev.object.clone());
            } else {
                pods.remove(&key);
            }
        });
    }
}

/// What the attach/detach controller remembers between passes (its actual state of world's
/// timers and its desired state's reported errors).
#[derive(Default)]
pub(super) struct AttachState {
    /// When each VolumeAttachment (by name) was first found no longer desired: its
    /// detachRequestedTime, cleared when it is desired again.
    detach_requested: HashMap<String, SimInstant>,
    /// (pv, node) whose Multi-Attach error was reported (MultiAttachErrorReported), while the
    /// node still wants the volume.
    multi_attach_reported: HashSet<(String, String)>,
}

/// `IsPodTerminated` (pkg/volume/util): a pod whose volumes the controller no longer wants on
/// its node: terminal, or deleted with no container running.
fn is_pod_terminated(pod: &Value) -> bool {
    if matches!(
        meta::str_at(pod, "/status/phase"),
        Some("Succeeded" | "Failed")
    ) {
        return true;
    }
    let not_running = |field: &str| {
        pod.pointer(&format!("/status/{}", field))
            .and_then(Value::as_array)
            .is_none_or(|cs| {
                cs.iter().all(|c| {
                    c.pointer("/state/terminated").is_some()
                        || c.pointer("/state/waiting").is_some()
                })
            })
    };
    meta::is_deleting(pod)
        && not_running("initContainerStatuses")
        && not_running("containerStatuses")
        && not_running("ephemeralContainerStatuses")
}

/// `IsMultiAttachAllowed` (pkg/volume/util): a PersistentVolume with no access modes, or
/// ReadWriteMany / ReadOnlyMany among them.
fn multi_attach_allowed(pv: &Value) -> bool {
    let modes: Vec<&str> = pv
        .pointer("/spec/accessModes")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    modes.is_empty()
        || modes
            .iter()
            .any(|m| *m == "ReadWriteMany" || *m == "ReadOnlyMany")
}

/// The node state the reconciler reads: `volumesInUse` (MountedByNode), Ready (for the force
/// detach after maxWaitForUnmountDuration) and the out-of-service taint.
struct NodeView {
    in_use: HashSet<String>,
    ready: bool,
    out_of_service: bool,
}

fn node_views(client: &Internal) -> HashMap<String, NodeView> {
    client
        .list("", "nodes", None, &|_| true)
        .iter()
        .map(|node| {
            let in_use = node
                .pointer("/status/volumesInUse")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|v| v.as_str().and_then(|s| s.rsplit('^').next()))
                .map(String::from)
                .collect();
            let out_of_service = node
                .pointer("/spec/taints")
                .and_then(Value::as_array)
                .is_some_and(|ts| ts.iter().any(|t| t["key"] == OUT_OF_SERVICE));
            (
                meta::name(node).to_string(),
                NodeView {
                    in_use,
                    ready: meta::condition_status(node, "Ready") == Some("True"),
                    out_of_service,
                },
            )
        })
        .collect()
}

/// `node.status.volumesAttached` as the node status updater writes it: the node's attached
/// VolumeAttachments, without those being detached (the controller stops reporting a volume
/// when it starts its detach: RemoveVolumeFromReportAsAttached).
fn report_attached(client: &Internal, node: &str) {
    let attached: Vec<Value> = client
        .list("storage.k8s.io", "volumeattachments", None, &|v| {
            meta::str_at(v, "/spec/nodeName") == Some(node)
                && v.pointer("/status/attached") == Some(&json!(true))
                && !meta::is_deleting(v)
        })
        .iter()
        .map(|v| json!({"name": unique_name(meta::str_at(v, "/spec/source/persistentVolumeName").unwrap_or("")), "devicePath": ""}))
        .collect();
    let _ = client.merge_status(
        "",
        "nodes",
        "",
        node,
        &json!({"status": {"volumesAttached": attached}}),
    );
}

/// The Multi-Attach error of reconciler.go `reportMultiAttachError` for a pod in `ns` that
/// wants volume `pv` on a new node, given the (namespace, name) of the pods that use it on the
/// other nodes: those of its own namespace by name, the others counted; none at all (deleted
/// already): the plain message.
pub fn multi_attach_message(pv: &str, ns: &str, others: &[(String, String)]) -> String {
    let suffix = if others.is_empty() {
        "Volume is already exclusively attached to one node and can't be attached to another"
            .to_string()
    } else {
        let local: Vec<&str> = others
            .iter()
            .filter(|(n, _)| n == ns)
            .map(|(_, name)| name.as_str())
            .collect();
        let elsewhere = others.len() - local.len();
        if local.is_empty() {
            format!(
                "Volume is already used by {} pod(s) in different namespaces",
                elsewhere
            )
        } else if elsewhere > 0 {
            format!(
                "Volume is already used by pod(s) {} and {} pod(s) in different namespaces",
                local.join(", "),
                elsewhere
            )
        } else {
            format!("Volume is already used by pod(s) {}", local.join(", "))
        }
    };
    // VolumeToAttach.GenerateMsg: `<prefix> for volume %q <suffix>`.
    format!("Multi-Attach error for volume {:?} {}", pv, suffix)
}

fn report_multi_attach(
    adc: &EventRecorder,
    pv: &str,
    scheduled: &[Arc<Value>],
    others: &[Arc<Value>],
) {
    let others: Vec<(String, String)> = others
        .iter()
        .map(|o| (meta::namespace(o).to_string(), meta::name(o).to_string()))
        .collect();
    for pod in scheduled {
        adc.record(
            pod,
            EventKind::Warning,
            "FailedAttachVolume",
            &multi_attach_message(pv, meta::namespace(pod), &others),
        );
    }
}

/// The attach/detach controller (reconciler.go) and the CSI attacher. Detaches come first: a
/// VolumeAttachment no pod on its node wants any more is deleted unless its node still has the
/// volume mounted (`volumesInUse`), and a mounted one only once the node is not Ready and
/// maxWaitForUnmountDuration (6 min) has passed since the detach was requested, or at once when
/// the node has the `node.kubernetes.io/out-of-service` taint. Then attaches: a ReadWriteOnce
/// volume attached to another node is not attached again (`Multi-Attach error`, once per volume
/// and node), nor while its attach elsewhere is under way.
pub(super) fn attach_detach(
    client: &Internal,
    adc: &EventRecorder,
    timing: &Timing,
    claim_pods: &mut ClaimPods,
    first_seen: &mut HashMap<String, SimInstant>,
    attach_errors: &mut HashSet<String>,
    state: &mut AttachState,
) {
    // Desired: (pv, node) for scheduled pods that are not terminated and use bound Longhorn
    // claims.
    claim_pods.refresh();
    let mut desired: HashMap<(String, String), Vec<Arc<Value>>> = HashMap::new();
    let mut multi_allowed: HashMap<String, bool> = HashMap::new();
    let scheduled = claim_pods.pods.values().filter(|p| {
        !meta::str_at(p, "/spec/nodeName").unwrap_or("").is_empty() && !is_pod_terminated(p)
    });
    for pod in scheduled {
        let node = meta::str_at(pod, "/spec/nodeName")
            .unwrap_or("")
            .to_string();
        for v in pod
            .pointer("/spec/volumes")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let Some(claim) = v
                .pointer("/persistentVolumeClaim/claimName")
                .and_then(Value::as_str)
            else {
                continue;
            };
            let Some(pvc) = client.get("", "persistentvolumeclaims", meta::namespace(pod), claim)
            else {
                continue;
            };
            let Some(pv) = meta::str_at(&pvc, "/spec/volumeName") else {
                continue;
            };
            let Some(pvobj) = client.get("", "persistentvolumes", "", pv) else {
                continue;
            };
            if meta::str_at(&pvobj, "/spec/csi/driver") != Some(DRIVER) {
                continue;
            }
            multi_allowed.insert(pv.to_string(), multi_attach_allowed(&pvobj));
            desired
                .entry((pv.to_string(), node.clone()))
                .or_default()
                .push(pod.clone());
        }
    }
    state
        .multi_attach_reported
        .retain(|key| desired.contains_key(key));
    let nodes = node_views(client);
    // Detach what no pod on the node wants.
    let mut vas = client.list("storage.k8s.io", "volumeattachments", None, &|_| true);
    let mut detached_from: HashSet<String> = HashSet::new();
    vas.retain(|va| {
        let pv = meta::str_at(va, "/spec/source/persistentVolumeName").unwrap_or("");
        let node = meta::str_at(va, "/spec/nodeName").unwrap_or("");
        let name = meta::name(va).to_string();
        if meta::is_deleting(va) {
            // The external attacher's detach (csi_handler.go): ControllerUnpublishVolume done,
            // its finalizer goes and the object with it, a pass after the delete. Until then
            // the attachment stays (`attached`, deleting, as on a real cluster) and counts.
            let _ = client.merge(
                "storage.k8s.io",
                "volumeattachments",
                "",
                &name,
                &json!({"metadata": {"finalizers": null}}),
            );
            state.detach_requested.remove(&name);
            first_seen.remove(&format!("va/{}", name));
            return false;
        }
        if desired.contains_key(&(pv.to_string(), node.to_string())) {
            state.detach_requested.remove(&name);
            return true;
        }
        let requested = *state
            .detach_requested
            .entry(name.clone())
            .or_insert_with(|| timing.clock.instant());
        let view = nodes.get(node);
        let mounted = view.is_some_and(|n| n.in_use.contains(pv));
        let healthy = view.is_some_and(|n| n.ready);
        let out_of_service = view.is_some_and(|n| n.out_of_service);
        let force =
            !healthy && timing.clock.since(requested) > timing.s(timing.max_wait_for_unmount);
        if mounted && !force && !out_of_service {
            return true;
        }
        // Marked for deletion; held by the external attacher's finalizer until the next pass.
        let gone = client
            .delete("storage.k8s.io", "volumeattachments", "", &name, None)
            .unwrap_or(true);
        detached_from.insert(node.to_string());
        if gone {
            state.detach_requested.remove(&name);
            first_seen.remove(&format!("va/{}", name));
        }
        !gone
    });
    for node in &detached_from {
        report_attached(client, node);
    }
    // Attach what is wanted: never a ReadWriteOnce volume that is on another node.
    for ((pv, node), pods) in desired.iter() {
        if vas.iter().any(|va| {
            meta::str_at(va, "/spec/source/persistentVolumeName") == Some(pv.as_str())
                && meta::str_at(va, "/spec/nodeName") == Some(node.as_str())
        }) {
            continue;
        }
        if !multi_allowed.get(pv).copied().unwrap_or(true) {
            let elsewhere: Vec<&Value> = vas
                .iter()
                .filter(|va| {
                    meta::str_at(va, "/spec/source/persistentVolumeName") == Some(pv.as_str())
                        && meta::str_at(va, "/spec/nodeName") != Some(node.as_str())
                })
                .map(|va| &**va)
                .collect();
            if elsewhere
                .iter()
                .any(|va| va.pointer("/status/attached") == Some(&json!(true)))
            {
                if state
                    .multi_attach_reported
                    .insert((pv.clone(), node.clone()))
                {
                    let others: Vec<Arc<Value>> = desired
                        .iter()
                        .filter(|((p, n), _)| p == pv && n != node)
                        .flat_map(|(_, ps)| ps.iter().cloned())
                        .collect();
                    report_multi_attach(adc, pv, pods, &others);
                }
                continue;
            }
            if !elsewhere.is_empty() {
                // Its attach (or detach) elsewhere is under way: the volume's one operation.
                continue;
            }
        }
        let name = attachment_name(pv, node);
        if let Ok(va) = client.create(
            "storage.k8s.io",
            "volumeattachments",
            "",
            json!({"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment", "metadata": {"name": name},
                   "spec": {"attacher": DRIVER, "nodeName": node, "source": {"persistentVolumeName": pv}}}),
        ) {
            vas.push(va);
        }
    }
    // The external attacher.
    for va in vas {
        let pv = meta::str_at(&va, "/spec/source/persistentVolumeName")
            .unwrap_or("")
            .to_string();
        let node = meta::str_at(&va, "/spec/nodeName")
            .unwrap_or("")
            .to_string();
        let name = meta::name(&va).to_string();
        if va.pointer("/status/attached") == Some(&json!(true)) || meta::is_deleting(&va) {
            continue;
        }

        // The external attacher needs the node plugin registered on the node.
        let registered = client
            .get("storage.k8s.io", "csinodes", "", &node)
            .and_then(|c| {
                c.pointer("/spec/drivers")
                    .and_then(Value::as_array)
                    .map(|ds| ds.iter().any(|d| d["name"] == DRIVER))
            })
            .unwrap_or(false);
        if !registered {
            let msg = format!("CSINode {} does not contain driver {}", node, DRIVER);
            if va
                .pointer("/status/attachError/message")
                .and_then(Value::as_str)
                != Some(msg.as_str())
            {
                let _ = client.merge_status("storage.k8s.io", "volumeattachments", "", &name, &json!({"status": {"attached": false, "attachError": {"time": timing.clock.now_rfc3339(), "message": msg}}}));
            }
            if attach_errors.insert(name.clone()) {
                for pod in desired
                    .get(&(pv.clone(), node.clone()))
                    .into_iter()
                    .flatten()
                {
                    adc.record(
                        pod,
                        EventKind::Warning,
                        "FailedAttachVolume",
                        &format!("AttachVolume.Attach failed for volume \"{}\" : {}", pv, msg),
                    );
                }
            }
            first_seen.remove(&format!("va/{}", name));
            continue;
        }
        let seen = *first_seen
            .entry(format!("va/{}", name))
            .or_insert_with(|| timing.clock.instant());
        if timing.clock.since(seen) < timing.s(timing.attach) {
            continue;
        }
        attach_errors.remove(&name);
        // The external attacher holds what it attached until it has detached it.
        let _ = client.merge(
            "storage.k8s.io",
            "volumeattachments",
            "",
            &name,
            &json!({"metadata": {"finalizers": [ATTACHER_FINALIZER]}}),
        );
        let _ = client.merge_status(
            "storage.k8s.io",
            "volumeattachments",
            "",
            &name,
            &json!({"status": {"attached": true, "attachError": null, "attachmentMetadata": null}}),
        );
        for pod in desired
            .get(&(pv.clone(), node.clone()))
            .into_iter()
            .flatten()
        {
            adc.record(
                pod,
                EventKind::Normal,
                "SuccessfulAttachVolume",
                &format!("AttachVolume.Attach succeeded for volume \"{}\" ", pv),
            );
        }
        report_attached(client, &node);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attachment_names_are_stable_hashes() {
        let a = attachment_name("pvc-1", "worker-04");
        assert!(a.starts_with("csi-") && a.len() == 4 + 64);
        assert_eq!(a, attachment_name("pvc-1", "worker-04"));
        assert_ne!(a, attachment_name("pvc-1", "worker-01"));
    }

    /// reconciler.go `reportMultiAttachError`'s three messages.
    #[test]
    fn multi_attach_messages_are_the_reconcilers() {
        let pod = |ns: &str, name: &str| (ns.to_string(), name.to_string());
        assert_eq!(
            multi_attach_message("pvc-1", "default", &[]),
            "Multi-Attach error for volume \"pvc-1\" Volume is already exclusively attached to one node and can't be attached to another"
        );
        assert_eq!(
            multi_attach_message(
                "pvc-1",
                "default",
                &[pod("default", "db-0"), pod("default", "db-1")]
            ),
            "Multi-Attach error for volume \"pvc-1\" Volume is already used by pod(s) db-0, db-1"
        );
        assert_eq!(
            multi_attach_message("pvc-1", "default", &[pod("default", "db-0"), pod("other", "x"), pod("third", "y")]),
            "Multi-Attach error for volume \"pvc-1\" Volume is already used by pod(s) db-0 and 2 pod(s) in different namespaces"
        );
        assert_eq!(
            multi_attach_message("pvc-1", "default", &[pod("other", "x")]),
            "Multi-Attach error for volume \"pvc-1\" Volume is already used by 1 pod(s) in different namespaces"
        );
    }

    #[test]
    fn only_shared_access_modes_allow_multi_attach() {
        let pv = |modes: serde_json::Value| json!({"spec": {"accessModes": modes}});
        assert!(!multi_attach_allowed(&pv(json!(["ReadWriteOnce"]))));
        assert!(!multi_attach_allowed(&pv(json!(["ReadWriteOncePod"]))));
        assert!(multi_attach_allowed(&pv(json!([
            "ReadWriteOnce",
            "ReadOnlyMany"
        ]))));
        assert!(multi_attach_allowed(&pv(json!(["ReadWriteMany"]))));
        assert!(multi_attach_allowed(&json!({"spec": {}})));
    }

    #[test]
    fn a_deleted_pod_is_terminated_once_nothing_runs() {
        let running = json!({"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"},
            "status": {"phase": "Running", "containerStatuses": [{"state": {"running": {}}}]}});
        assert!(!is_pod_terminated(&running));
        let stopped = json!({"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"},
            "status": {"phase": "Running", "containerStatuses": [{"state": {"terminated": {"exitCode": 0}}}]}});
        assert!(is_pod_terminated(&stopped));
        assert!(is_pod_terminated(&json!({"status": {"phase": "Failed"}})));
        assert!(!is_pod_terminated(&json!({"status": {"phase": "Pending"}})));
    }
}
