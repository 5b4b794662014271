//! The Longhorn CSI driver as installed: the `longhorn-system` components (DaemonSets whose pods
//! the kubelets run, so `kubectl get pods -n longhorn-system -o wide` shows a csi-plugin per
//! node), CSIDriver `driver.longhorn.io`, the default StorageClass `longhorn`, and the loop that
//! drives its controller side: `provisioner` (dynamic provisioning, PVC/PV protection and
//! reclaim) and `attacher` (the attach/detach controller and the CSI attacher).

use super::{attacher, provisioner};
use crate::cluster::node::volumes::DRIVER;
use crate::events::EventRecorder;
use crate::internal::Internal;
use crate::timing::SimInstant;
use crate::timing::Timing;
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::time::Duration;

pub const NAMESPACE: &str = "longhorn-system";
pub const VERSION: &str = "v1.9.1";
pub const STORAGE_CLASS: &str = "longhorn";

/// Create the Longhorn objects a fresh install leaves in the cluster.
pub fn install(client: &Internal) {
    let _ = client.create(
        "",
        "namespaces",
        "",
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}),
    );
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
    daemonset(
        client,
        "longhorn-manager",
        json!([{"name": "longhorn-manager", "image": image("longhorn-manager")}]),
    );
    daemonset(
        client,
        "longhorn-csi-plugin",
        json!([
            {"name": "node-driver-registrar", "image": "longhornio/csi-node-driver-registrar:v2.14.0"},
            {"name": "longhorn-liveness-probe", "image": "longhornio/livenessprobe:v2.16.0"},
            {"name": "longhorn-csi-plugin", "image": image("longhorn-manager")}
        ]),
    );
    daemonset(
        client,
        "engine-image-ei-db6c2b6f",
        json!([{"name": "engine-image-ei-db6c2b6f", "image": image("longhorn-engine")}]),
    );
    for (name, img) in [
        ("csi-attacher", "longhornio/csi-attacher:v4.9.0"),
        ("csi-provisioner", "longhornio/csi-provisioner:v5.3.0"),
        ("csi-resizer", "longhornio/csi-resizer:v1.14.0"),
        ("csi-snapshotter", "longhornio/csi-snapshotter:v8.3.0"),
        ("longhorn-ui", "longhornio/longhorn-ui:v1.9.1"),
        (
            "longhorn-driver-deployer",
            "longhornio/longhorn-manager:v1.9.1",
        ),
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

/// The provisioner, PV binder, attach/detach controller, CSI attacher and protection controllers.
pub async fn run(client: Internal, timing: Timing) {
    let provisioner = EventRecorder::new(
        client.clone(),
        "driver.longhorn.io_csi-provisioner-6f6c5f4b8-2x7kq_3c2d1b0a-9f8e-4d7c-b6a5-41e3f2d1c0b9",
        None,
    );
    let binder = EventRecorder::new(client.clone(), "persistentvolume-controller", None);
    let adc = EventRecorder::new(client.clone(), "attachdetach-controller", None);
    let tick = timing
        .s(Duration::from_millis(500))
        .max(Duration::from_millis(20));
    let mut ticker = tokio::time::interval(tick);
    let mut first_seen: HashMap<String, SimInstant> = HashMap::new();
    let mut attach_errors: HashSet<String> = HashSet::new();
    let mut claim_pods = attacher::ClaimPods::new(&client);
    let mut attach_state = attacher::AttachState::default();
    loop {
        ticker.tick().await;
        let _pass = timing.clock.pass().await;
        provisioner::provision(&client, &provisioner, &binder, &timing, &mut first_seen);
        provisioner::protect_and_reclaim(&client);
        attacher::attach_detach(
            &client,
            &adc,
            &timing,
            &mut claim_pods,
            &mut first_seen,
            &mut attach_errors,
            &mut attach_state,
        );
    }
}
