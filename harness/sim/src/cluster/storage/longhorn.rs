//! Simulated Longhorn and the storage controllers around it: the `longhorn-system` components
//! (DaemonSets whose pods the kubelets run, so `kubectl get pods -n longhorn-system -o wide`
//! shows a csi-plugin per node), CSIDriver `driver.longhorn.io`, the default StorageClass
//! `longhorn`, dynamic provisioning (PV `pvc-<uid>` bound to the claim), the attach/detach
//! controller with the CSI attacher (VolumeAttachments), and PVC/PV protection and reclaim.

use crate::cluster::node::volumes::{unique_name, DRIVER};
use crate::events::{EventKind, EventRecorder};
use crate::internal::Internal;
use crate::meta;
use crate::timing::Timing;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::collections::{HashMap, HashSet};
use std::time::Duration;
use tokio::time::Instant;

pub const NAMESPACE: &str = "longhorn-system";
pub const VERSION: &str = "v1.9.1";
pub const STORAGE_CLASS: &str = "longhorn";

/// Create the Longhorn objects a fresh install leaves in the cluster.
pub fn install(client: &Internal) {
    let _ = client.create("", "namespaces", "", json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}));
    let _ = client.create(
        "storage.k8s.io",
        "csidrivers",
        "",
        json!({"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": DRIVER},
               "spec": {"attachRequired": true, "podInfoOnMount": true, "fsGroupPolicy": "ReadWriteOnceWithFSType", "volumeLifecycleModes": ["Persistent"], "requiresRepublish": false, "storageCapacity": false, "seLinuxMount": false}}),
    );
    let _ = client.create(
        "storage.k8s.io",
        "storageclasses",
        "",
        json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
               "metadata": {"name": STORAGE_CLASS, "annotations": {"storageclass.kubernetes.io/is-default-class": "true", "longhorn.io/last-applied-configmap": "longhorn-storageclass"}},
               "provisioner": DRIVER, "allowVolumeExpansion": true, "reclaimPolicy": "Delete", "volumeBindingMode": "Immediate",
               "parameters": {"numberOfReplicas": "3", "staleReplicaTimeout": "30", "fromBackup": "", "fsType": "ext4", "dataLocality": "disabled", "unmapMarkSnapChainRemoved": "ignored", "disableRevisionCounter": "true", "dataEngine": "v1"}}),
    );
    let image = |n: &str| format!("longhornio/{}:{}", n, VERSION);
    daemonset(client, "longhorn-manager", json!([{"name": "longhorn-manager", "image": image("longhorn-manager")}]));
    daemonset(
        client,
        "longhorn-csi-plugin",
        json!([
            {"name": "node-driver-registrar", "image": "longhornio/csi-node-driver-registrar:v2.14.0"},
            {"name": "longhorn-liveness-probe", "image": "longhornio/livenessprobe:v2.16.0"},
            {"name": "longhorn-csi-plugin", "image": image("longhorn-manager")}
        ]),
    );
    daemonset(client, "engine-image-ei-db6c2b6f", json!([{"name": "engine-image-ei-db6c2b6f", "image": image("longhorn-engine")}]));
    for (name, img) in [
        ("csi-attacher", "longhornio/csi-attacher:v4.9.0"),
        ("csi-provisioner", "longhornio/csi-provisioner:v5.3.0"),
        ("csi-resizer", "longhornio/csi-resizer:v1.14.0"),
        ("csi-snapshotter", "longhornio/csi-snapshotter:v8.3.0"),
        ("longhorn-ui", "longhornio/longhorn-ui:v1.9.1"),
        ("longhorn-driver-deployer", "longhornio/longhorn-manager:v1.9.1"),
    ] {
        let _ = client.create(
            "apps",
            "deployments",
            NAMESPACE,
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"app": name}},
                   "spec": {"replicas": if name.starts_with("csi-") { 3 } else { 1 }, "selector": {"matchLabels": {"app": name}},
                            "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{"name": name, "image": img}]}}}}),
        );
    }
}

fn daemonset(client: &Internal, name: &str, containers: Value) {
    let _ = client.create(
        "apps",
        "daemonsets",
        NAMESPACE,
        json!({"apiVersion": "apps/v1", "kind": "DaemonSet",
               "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"app": name, "app.kubernetes.io/name": "longhorn", "app.kubernetes.io/version": VERSION}},
               "spec": {"selector": {"matchLabels": {"app": name}},
                        "template": {"metadata": {"labels": {"app": name, "app.kubernetes.io/name": "longhorn"}},
                                     "spec": {"serviceAccountName": "longhorn-service-account", "containers": containers, "priorityClassName": "longhorn-critical"}}}}),
    );
}

/// `csi-<sha256(volumeHandle + attacher + node)>`, the name the attach/detach controller uses.
pub fn attachment_name(pv: &str, node: &str) -> String {
    let digest = Sha256::digest(format!("{}{}{}", pv, DRIVER, node).as_bytes());
    format!("csi-{}", digest.iter().map(|b| format!("{:02x}", b)).collect::<String>())
}

/// The provisioner, PV binder, attach/detach controller, CSI attacher and protection controllers.
pub async fn run(client: Internal, timing: Timing) {
    let provisioner = EventRecorder::new(client.clone(), "driver.longhorn.io_csi-provisioner-6f6c5f4b8-2x7kq_3c2d1b0a-9f8e-4d7c-b6a5-41e3f2d1c0b9", None);
    let binder = EventRecorder::new(client.clone(), "persistentvolume-controller", None);
    let adc = EventRecorder::new(client.clone(), "attachdetach-controller", None);
    let tick = timing.s(Duration::from_millis(500)).max(Duration::from_millis(20));
    let mut ticker = tokio::time::interval(tick);
    let mut first_seen: HashMap<String, Instant> = HashMap::new();
    let mut attach_errors: HashSet<String> = HashSet::new();
    loop {
        ticker.tick().await;
        provision(&client, &provisioner, &binder, &timing, &mut first_seen);
        protect_and_reclaim(&client);
        attach_detach(&client, &adc, &timing, &mut first_seen, &mut attach_errors);
    }
}

fn default_class(client: &Internal) -> Option<String> {
    client
        .list("storage.k8s.io", "storageclasses", None, &|sc| meta::str_at(sc, "/metadata/annotations/storageclass.kubernetes.io~1is-default-class") == Some("true"))
        .first()
        .map(|sc| meta::name(sc).to_string())
}

fn provision(client: &Internal, provisioner: &EventRecorder, binder: &EventRecorder, timing: &Timing, first_seen: &mut HashMap<String, Instant>) {
    let default_sc = default_class(client);
    for pvc in client.list("", "persistentvolumeclaims", None, &|p| meta::str_at(p, "/spec/volumeName").unwrap_or("").is_empty() && !meta::is_deleting(p)) {
        let ns = meta::namespace(&pvc).to_string();
        let name = meta::name(&pvc).to_string();
        let sc_name = meta::str_at(&pvc, "/spec/storageClassName").map(String::from).or_else(|| default_sc.clone());
        let Some(sc_name) = sc_name else { continue };
        let Some(sc) = client.get("storage.k8s.io", "storageclasses", "", &sc_name) else { continue };
        if meta::str_at(&sc, "/provisioner") != Some(DRIVER) {
            continue;
        }
        let key = format!("pvc/{}", meta::uid(&pvc));
        let seen = *first_seen.entry(key.clone()).or_insert_with(|| {
            let _ = client.merge(
                "",
                "persistentvolumeclaims",
                &ns,
                &name,
                &json!({"metadata": {"annotations": {"volume.beta.kubernetes.io/storage-provisioner": DRIVER, "volume.kubernetes.io/storage-provisioner": DRIVER}},
                        "spec": {"storageClassName": sc_name}}),
            );
            binder.record(&pvc, EventKind::Normal, "ExternalProvisioning", &format!("Waiting for a volume to be created either by the external provisioner '{}' or manually by the system administrator. If volume creation is delayed, please verify that the provisioner is running and correctly registered.", DRIVER));
            provisioner.record(&pvc, EventKind::Normal, "Provisioning", &format!("External provisioner is provisioning volume for claim \"{}/{}\"", ns, name));
            Instant::now()
        });
        if seen.elapsed() < timing.s(timing.provision) {
            continue;
        }
        let pv_name = format!("pvc-{}", meta::uid(&pvc));
        let size = pvc.pointer("/spec/resources/requests/storage").cloned().unwrap_or(json!("1Gi"));
        let modes = pvc.pointer("/spec/accessModes").cloned().unwrap_or(json!(["ReadWriteOnce"]));
        let volume_mode = pvc.pointer("/spec/volumeMode").cloned().unwrap_or(json!("Filesystem"));
        if client.get("", "persistentvolumes", "", &pv_name).is_none() {
            let pv = json!({
                "apiVersion": "v1", "kind": "PersistentVolume",
                "metadata": {"name": pv_name, "annotations": {"pv.kubernetes.io/provisioned-by": DRIVER, "volume.kubernetes.io/provisioner-deletion-secret-name": "", "volume.kubernetes.io/provisioner-deletion-secret-namespace": ""},
                             "finalizers": ["external-provisioner.volume.kubernetes.io/finalizer", "kubernetes.io/pv-protection"]},
                "spec": {
                    "capacity": {"storage": size}, "accessModes": modes, "persistentVolumeReclaimPolicy": sc.get("reclaimPolicy").cloned().unwrap_or(json!("Delete")),
                    "storageClassName": sc_name, "volumeMode": volume_mode,
                    "claimRef": {"kind": "PersistentVolumeClaim", "namespace": ns, "name": name, "uid": meta::uid(&pvc), "apiVersion": "v1", "resourceVersion": meta::resource_version(&pvc)},
                    "csi": {"driver": DRIVER, "volumeHandle": pv_name, "fsType": "ext4",
                            "volumeAttributes": {"dataEngine": "v1", "dataLocality": "disabled", "disableRevisionCounter": "true", "fromBackup": "", "fsType": "ext4", "numberOfReplicas": "3", "staleReplicaTimeout": "30", "storage.kubernetes.io/csiProvisionerIdentity": "1733140000000-8081-driver.longhorn.io", "unmapMarkSnapChainRemoved": "ignored"}}
                }
            });
            if client.create("", "persistentvolumes", "", pv).is_ok() {
                provisioner.record(&pvc, EventKind::Normal, "ProvisioningSucceeded", &format!("Successfully provisioned volume {}", pv_name));
            }
        }
        // The binder completes the two-way binding.
        let _ = client.merge_status("", "persistentvolumes", "", &pv_name, &json!({"status": {"phase": "Bound"}}));
        let _ = client.merge(
            "",
            "persistentvolumeclaims",
            &ns,
            &name,
            &json!({"metadata": {"annotations": {"pv.kubernetes.io/bind-completed": "yes", "pv.kubernetes.io/bound-by-controller": "yes"}}, "spec": {"volumeName": pv_name}}),
        );
        let _ = client.merge_status("", "persistentvolumeclaims", &ns, &name, &json!({"status": {"phase": "Bound", "accessModes": modes, "capacity": {"storage": size}}}));
        first_seen.remove(&key);
    }
}

fn pods_using_claim(client: &Internal, ns: &str, claim: &str) -> usize {
    client
        .list("", "pods", Some(ns), &|p| {
            !matches!(meta::str_at(p, "/status/phase"), Some("Succeeded" | "Failed"))
                && p.pointer("/spec/volumes").and_then(Value::as_array).map(|vs| vs.iter().any(|v| v.pointer("/persistentVolumeClaim/claimName").and_then(Value::as_str) == Some(claim))).unwrap_or(false)
        })
        .len()
}

fn drop_finalizer(client: &Internal, plural: &str, ns: &str, obj: &Value, fin: &str) {
    let fins: Vec<String> = meta::finalizers(obj).into_iter().filter(|f| f != fin).collect();
    let v = if fins.is_empty() { Value::Null } else { json!(fins) };
    let _ = client.merge("", plural, ns, meta::name(obj), &json!({"metadata": {"finalizers": v}}));
}

/// pvc-protection and pv-protection, and the Delete reclaim policy.
fn protect_and_reclaim(client: &Internal) {
    for pvc in client.list("", "persistentvolumeclaims", None, &|p| meta::is_deleting(p)) {
        if meta::finalizers(&pvc).iter().any(|f| f == "kubernetes.io/pvc-protection") && pods_using_claim(client, meta::namespace(&pvc), meta::name(&pvc)) == 0 {
            drop_finalizer(client, "persistentvolumeclaims", meta::namespace(&pvc), &pvc, "kubernetes.io/pvc-protection");
        }
    }
    for pv in client.list("", "persistentvolumes", None, &|_| true) {
        let claim_ns = meta::str_at(&pv, "/spec/claimRef/namespace").unwrap_or("").to_string();
        let claim = meta::str_at(&pv, "/spec/claimRef/name").unwrap_or("").to_string();
        let claim_uid = meta::str_at(&pv, "/spec/claimRef/uid").unwrap_or("").to_string();
        if claim.is_empty() {
            continue;
        }
        let bound = client.get("", "persistentvolumeclaims", &claim_ns, &claim).map(|c| meta::uid(&c) == claim_uid).unwrap_or(false);
        if bound {
            continue;
        }
        if meta::str_at(&pv, "/status/phase") != Some("Released") && !meta::is_deleting(&pv) {
            let _ = client.merge_status("", "persistentvolumes", "", meta::name(&pv), &json!({"status": {"phase": "Released"}}));
        }
        if meta::str_at(&pv, "/spec/persistentVolumeReclaimPolicy") == Some("Delete") {
            let attached = !client.list("storage.k8s.io", "volumeattachments", None, &|va| meta::str_at(va, "/spec/source/persistentVolumeName") == Some(meta::name(&pv))).is_empty();
            if attached {
                continue;
            }
            if !meta::is_deleting(&pv) {
                let _ = client.delete("", "persistentvolumes", "", meta::name(&pv), None);
            } else {
                let _ = client.merge("", "persistentvolumes", "", meta::name(&pv), &json!({"metadata": {"finalizers": null}}));
            }
        }
    }
}

/// The attach/detach controller and the CSI attacher.
fn attach_detach(client: &Internal, adc: &EventRecorder, timing: &Timing, first_seen: &mut HashMap<String, Instant>, attach_errors: &mut HashSet<String>) {
    // Desired: (pv, node) for scheduled, non-terminal pods using bound Longhorn claims.
    let mut desired: HashMap<(String, String), Vec<Value>> = HashMap::new();
    for pod in client.list("", "pods", None, &|p| !meta::str_at(p, "/spec/nodeName").unwrap_or("").is_empty() && !matches!(meta::str_at(p, "/status/phase"), Some("Succeeded" | "Failed"))) {
        let node = meta::str_at(&pod, "/spec/nodeName").unwrap_or("").to_string();
        for v in pod.pointer("/spec/volumes").and_then(Value::as_array).into_iter().flatten() {
            let Some(claim) = v.pointer("/persistentVolumeClaim/claimName").and_then(Value::as_str) else { continue };
            let Some(pvc) = client.get("", "persistentvolumeclaims", meta::namespace(&pod), claim) else { continue };
            let Some(pv) = meta::str_at(&pvc, "/spec/volumeName") else { continue };
            let Some(pvobj) = client.get("", "persistentvolumes", "", pv) else { continue };
            if meta::str_at(&pvobj, "/spec/csi/driver") != Some(DRIVER) {
                continue;
            }
            desired.entry((pv.to_string(), node.clone())).or_default().push((*pod).clone());
        }
    }
    // Volumes a kubelet still reports in use stay attached.
    let mut in_use: HashSet<(String, String)> = HashSet::new();
    for node in client.list("", "nodes", None, &|_| true) {
        for v in node.pointer("/status/volumesInUse").and_then(Value::as_array).into_iter().flatten() {
            if let Some(handle) = v.as_str().and_then(|s| s.rsplit('^').next()) {
                in_use.insert((handle.to_string(), meta::name(&node).to_string()));
            }
        }
    }
    for ((pv, node), _) in desired.iter() {
        let name = attachment_name(pv, node);
        if client.get("storage.k8s.io", "volumeattachments", "", &name).is_none() {
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
        let pv = meta::str_at(&va, "/spec/source/persistentVolumeName").unwrap_or("").to_string();
        let node = meta::str_at(&va, "/spec/nodeName").unwrap_or("").to_string();
        let name = meta::name(&va).to_string();
        let wanted = desired.contains_key(&(pv.clone(), node.clone())) || in_use.contains(&(pv.clone(), node.clone()));
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
            .and_then(|c| c.pointer("/spec/drivers").and_then(Value::as_array).map(|ds| ds.iter().any(|d| d["name"] == DRIVER)))
            .unwrap_or(false);
        if !registered {
            let msg = format!("CSINode {} does not contain driver {}", node, DRIVER);
            if va.pointer("/status/attachError/message").and_then(Value::as_str) != Some(msg.as_str()) {
                let _ = client.merge_status("storage.k8s.io", "volumeattachments", "", &name, &json!({"status": {"attached": false, "attachError": {"time": meta::now_rfc3339(), "message": msg}}}));
            }
            if attach_errors.insert(name.clone()) {
                for pod in desired.get(&(pv.clone(), node.clone())).into_iter().flatten() {
                    adc.record(pod, EventKind::Warning, "FailedAttachVolume", &format!("AttachVolume.Attach failed for volume \"{}\" : {}", pv, msg));
                }
            }
            first_seen.remove(&format!("va/{}", name));
            continue;
        }
        let seen = *first_seen.entry(format!("va/{}", name)).or_insert_with(Instant::now);
        if seen.elapsed() < timing.s(timing.attach) {
            continue;
        }
        attach_errors.remove(&name);
        let _ = client.merge_status("storage.k8s.io", "volumeattachments", "", &name, &json!({"status": {"attached": true, "attachError": null, "attachmentMetadata": null}}));
        for pod in desired.get(&(pv.clone(), node.clone())).into_iter().flatten() {
            adc.record(pod, EventKind::Normal, "SuccessfulAttachVolume", &format!("AttachVolume.Attach succeeded for volume \"{}\" ", pv));
        }
        let attached: Vec<Value> = client
            .list("storage.k8s.io", "volumeattachments", None, &|v| meta::str_at(v, "/spec/nodeName") == Some(node.as_str()) && (v.pointer("/status/attached") == Some(&json!(true)) || meta::name(v) == name))
            .iter()
            .map(|v| json!({"name": unique_name(meta::str_at(v, "/spec/source/persistentVolumeName").unwrap_or("")), "devicePath": ""}))
            .collect();
        let _ = client.merge_status("", "nodes", "", &node, &json!({"status": {"volumesAttached": attached}}));
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
