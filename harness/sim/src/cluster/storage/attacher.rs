//! Attaching volumes to nodes: the attach/detach controller (VolumeAttachments for the volumes
//! that pods on a node use, `node.status.volumesAttached`) and the external CSI attacher that
//! marks them attached once the driver is registered on the node.

use crate::apiserver::meta;
use crate::apiserver::store::{EventType, Informer};
use crate::cluster::node::volumes::{unique_name, DRIVER};
use crate::events::{EventKind, EventRecorder};
use crate::internal::Internal;
use crate::timing::{self, Timing};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use tokio::time::Instant;

/// The pods that name a PersistentVolumeClaim, by namespace and name (store order): the attach/detach controller's view of
/// the pod informer (upstream's desired-state-of-world populator), kept from the store's events
/// so a pass reads only these pods instead of scanning every pod in the cluster.
pub(super) struct ClaimPods {
    informer: Informer,
    pods: BTreeMap<(String, String), Arc<Value>>,
}

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

/// `csi-<sha256(volumeHandle + attacher + node)>`, the name the attach/detach controller uses.
pub fn attachment_name(pv: &str, node: &str) -> String {
    let digest = Sha256::digest(format!("{}{}{}", pv, DRIVER, node).as_bytes());
    format!(
        "csi-{}",
        digest
            .iter()
            .map(|b| format!("{:02x}", b))
            .collect::<String>()
    )
}

/// The attach/detach controller and the CSI attacher.
pub(super) fn attach_detach(
    client: &Internal,
    adc: &EventRecorder,
    timing: &Timing,
    claim_pods: &mut ClaimPods,
    first_seen: &mut HashMap<String, Instant>,
    attach_errors: &mut HashSet<String>,
) {
    // Desired: (pv, node) for scheduled, non-terminal pods using bound Longhorn claims.
    claim_pods.refresh();
    let mut desired: HashMap<(String, String), Vec<Arc<Value>>> = HashMap::new();
    let scheduled = claim_pods.pods.values().filter(|p| {
        !meta::str_at(p, "/spec/nodeName").unwrap_or("").is_empty()
            && !matches!(
                meta::str_at(p, "/status/phase"),
                Some("Succeeded" | "Failed")
            )
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
            desired
                .entry((pv.to_string(), node.clone()))
                .or_default()
                .push(pod.clone());
        }
    }
    // Volumes a kubelet still reports in use stay attached.
    let mut in_use: HashSet<(String, String)> = HashSet::new();
    for node in client.list("", "nodes", None, &|_| true) {
        for v in node
            .pointer("/status/volumesInUse")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(handle) = v.as_str().and_then(|s| s.rsplit('^').next()) {
                in_use.insert((handle.to_string(), meta::name(&node).to_string()));
            }
        }
    }
    for ((pv, node), _) in desired.iter() {
        let name = attachment_name(pv, node);
        if client
            .get("storage.k8s.io", "volumeattachments", "", &name)
            .is_none()
        {
            let _ = client.create(
                "storage.k8s.io",
                "volumeattachments",
                "",
                json!({"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment", "metadata": {"name": name},
                       "spec": {"attacher": DRIVER, "nodeName": node, "source": {"persistentVolumeName": pv}}}),
            );
        }
    }
    for va in client.list("storage.k8s.io", "volumeattachments", None, &|_| true) {
        let pv = meta::str_at(&va, "/spec/source/persistentVolumeName")
            .unwrap_or("")
            .to_string();
        let node = meta::str_at(&va, "/spec/nodeName")
            .unwrap_or("")
            .to_string();
        let name = meta::name(&va).to_string();
        let wanted = desired.contains_key(&(pv.clone(), node.clone()))
            || in_use.contains(&(pv.clone(), node.clone()));
        if !wanted {
            let _ = client.delete("storage.k8s.io", "volumeattachments", "", &name, None);
            first_seen.remove(&format!("va/{}", name));
            continue;
        }
        if va.pointer("/status/attached") == Some(&json!(true)) {
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
                let _ = client.merge_status("storage.k8s.io", "volumeattachments", "", &name, &json!({"status": {"attached": false, "attachError": {"time": timing::now_rfc3339(), "message": msg}}}));
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
            .or_insert_with(Instant::now);
        if seen.elapsed() < timing.s(timing.attach) {
            continue;
        }
        attach_errors.remove(&name);
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
        let attached: Vec<Value> = client
            .list("storage.k8s.io", "volumeattachments", None, &|v| meta::str_at(v, "/spec/nodeName") == Some(node.as_str()) && (v.pointer("/status/attached") == Some(&json!(true)) || meta::name(v) == name))
            .iter()
            .map(|v| json!({"name": unique_name(meta::str_at(v, "/spec/source/persistentVolumeName").unwrap_or("")), "devicePath": ""}))
            .collect();
        let _ = client.merge_status(
            "",
            "nodes",
            "",
            &node,
            &json!({"status": {"volumesAttached": attached}}),
        );
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
}
