//! Dynamic provisioning for `driver.longhorn.io` claims: the external provisioner (csi-provisioner
//! sidecar: PV `pvc-<uid>` from the claim's StorageClass, or the default one) and the PV
//! controller around it (binding, PVC/PV protection, the Delete reclaim policy).

use crate::apiserver::meta;
use crate::cluster::node::volumes::DRIVER;
use crate::events::{EventKind, EventRecorder};
use crate::internal::Internal;
use crate::timing::SimInstant;
use crate::timing::Timing;
use serde_json::json;
use std::collections::HashMap;

fn default_class(client: &Internal) -> Option<String> {
    client
        .list("storage.k8s.io", "storageclasses", None, &|sc| {
            meta::str_at(
                sc,
                "/metadata/annotations/storageclass.kubernetes.io~1is-default-class",
            ) == Some("true")
        })
        .first()
        .map(|sc| meta::name(sc).to_string())
}

pub(super) fn provision(
    client: &Internal,
    provisioner: &EventRecorder,
    binder: &EventRecorder,
    timing: &Timing,
    first_seen: &mut HashMap<String, SimInstant>,
) {
    let default_sc = default_class(client);
    for pvc in client.list("", "persistentvolumeclaims", None, &|p| {
        meta::str_at(p, "/spec/volumeName").unwrap_or("").is_empty() && !meta::is_deleting(p)
    }) {
        let ns = meta::namespace(&pvc).to_string();
        let name = meta::name(&pvc).to_string();
        let sc_name = meta::str_at(&pvc, "/spec/storageClassName")
            .map(String::from)
            .or_else(|| default_sc.clone());
        let Some(sc_name) = sc_name else { continue };
        let Some(sc) = client.get("storage.k8s.io", "storageclasses", "", &sc_name) else {
            continue;
        };
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
            timing.clock.instant()
        });
        if timing.clock.since(seen) < timing.s(timing.provision) {
            continue;
        }
        let pv_name = format!("pvc-{}", meta::uid(&pvc));
        let size = pvc
            .pointer("/spec/resources/requests/storage")
            .cloned()
            .unwrap_or(json!("1Gi"));
        let modes = pvc
            .pointer("/spec/accessModes")
            .cloned()
            .unwrap_or(json!(["ReadWriteOnce"]));
        let volume_mode = pvc
            .pointer("/spec/volumeMode")
            .cloned()
            .unwrap_or(json!("Filesystem"));
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
                provisioner.record(
                    &pvc,
                    EventKind::Normal,
                    "ProvisioningSucceeded",
                    &format!("Successfully provisioned volume {}", pv_name),
                );
            }
        }
        // The binder completes the two-way binding.
        let _ = client.merge_status(
            "",
            "persistentvolumes",
            "",
            &pv_name,
            &json!({"status": {"phase": "Bound"}}),
        );
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

/// The Delete reclaim policy (the protection finalizers are kube-controller-manager's:
/// `controllers::storageprotection`).
pub(super) fn protect_and_reclaim(client: &Internal) {
    for pv in client.list("", "persistentvolumes", None, &|_| true) {
        let claim_ns = meta::str_at(&pv, "/spec/claimRef/namespace")
            .unwrap_or("")
            .to_string();
        let claim = meta::str_at(&pv, "/spec/claimRef/name")
            .unwrap_or("")
            .to_string();
        let claim_uid = meta::str_at(&pv, "/spec/claimRef/uid")
            .unwrap_or("")
            .to_string();
        if claim.is_empty() {
            continue;
        }
        let bound = client
            .get("", "persistentvolumeclaims", &claim_ns, &claim)
            .map(|c| meta::uid(&c) == claim_uid)
            .unwrap_or(false);
        if bound {
            continue;
        }
        if meta::str_at(&pv, "/status/phase") != Some("Released") && !meta::is_deleting(&pv) {
            let _ = client.merge_status(
                "",
                "persistentvolumes",
                "",
                meta::name(&pv),
                &json!({"status": {"phase": "Released"}}),
            );
        }
        if meta::str_at(&pv, "/spec/persistentVolumeReclaimPolicy") == Some("Delete") {
            let attached = !client
                .list("storage.k8s.io", "volumeattachments", None, &|va| {
                    meta::str_at(va, "/spec/source/persistentVolumeName") == Some(meta::name(&pv))
                })
                .is_empty();
            if attached {
                continue;
            }
            if !meta::is_deleting(&pv) {
                let _ = client.delete("", "persistentvolumes", "", meta::name(&pv), None);
            } else {
                let _ = client.merge(
                    "",
                    "persistentvolumes",
                    "",
                    meta::name(&pv),
                    &json!({"metadata": {"finalizers": null}}),
                );
            }
        }
    }
}
