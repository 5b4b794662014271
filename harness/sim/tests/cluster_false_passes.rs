//! Node and storage failures a real cluster does not let through (issue #33): each test drives
//! the simulated cluster into the failure and checks, through the API, events and node logs,
//! that the sim holds where upstream's components hold.

mod common;

use common::{events_for, eventually, TestCluster};
use faultline_sim::cluster::nodeops::NodeOp;
use faultline_sim::{SimCluster, SimOptions, Timing};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Event, Node, PersistentVolumeClaim, Pod};
use k8s_openapi::api::storage::v1::VolumeAttachment;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

const SCALE: f64 = 0.01;

async fn cluster(workers: usize) -> (TestCluster, Arc<SimCluster>, kube::Client) {
    let c = TestCluster::start_with(SimOptions::full(workers, Timing::scaled(SCALE))).await;
    let sim = c.server.cluster.clone().expect("full cluster");
    let client = c.client().await;
    (c, sim, client)
}

/// A one-replica StatefulSet with a Longhorn claim template, its pod pinned to `node`.
async fn statefulset(client: &kube::Client, name: &str, node: &str) {
    statefulset_with(client, name, node, "ReadWriteOnce").await
}

/// `statefulset` with the claim's access mode.
async fn statefulset_with(client: &kube::Client, name: &str, node: &str, access: &str) {
    let sets: Api<k8s_openapi::api::apps::v1::StatefulSet> =
        Api::namespaced(client.clone(), "default");
    let set = serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "replicas": 1, "serviceName": name,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": {
                "nodeSelector": {"kubernetes.io/hostname": node},
                "containers": [{"name": "db", "image": "postgres:17", "volumeMounts": [{"name": "data", "mountPath": "/data"}]}]}},
            "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {"accessModes": [access], "storageClassName": "longhorn", "resources": {"requests": {"storage": "1Gi"}}}}]
        }
    }))
    .unwrap();
    sets.create(&PostParams::default(), &set).await.unwrap();
}

async fn running(client: &kube::Client, name: &str, secs: u64) -> Pod {
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    eventually(secs, &format!("{name} Running"), || {
        let pods = pods.clone();
        async move {
            let p = pods.get(name).await.ok()?;
            (p.metadata.deletion_timestamp.is_none()
                && p.status.as_ref()?.phase.as_deref() == Some("Running"))
            .then_some(p)
        }
    })
    .await
}

fn kubelet_log(sim: &SimCluster, node: &str) -> Vec<String> {
    sim.nodes[node].kubelet_log.snapshot()
}

/// Item 1: `UnmountVolume.TearDown failed ... input/output error` keeps the pod Terminating (its
/// kubelet deletes the pod object only after SyncTerminatedPod has seen its volumes unmounted;
/// the pod's own status writes do not remove it: the registry removes an object on update only
/// when its grace period is 0), so its StatefulSet replacement does not start until the
/// volume comes off.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_whose_volume_cannot_be_torn_down_stays_terminating() {
    let (_c, sim, client) = cluster(2).await;
    statefulset(&client, "db", "worker-01").await;
    let first = running(&client, "db-0", 30).await;
    let uid = first.metadata.uid.clone().unwrap();
    sim.node_op("worker-01", &NodeOp::IoErrors).unwrap();
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    pods.delete("db-0", &DeleteParams::default()).await.unwrap();
    // The kubelet stops the container and reports the pod terminal; the pod stays Terminating.
    let stopped = eventually(10, "db-0 terminal and Terminating", || {
        let pods = pods.clone();
        async move {
            let p = pods.get("db-0").await.ok()?;
            (p.metadata.deletion_timestamp.is_some()
                && p.status.as_ref()?.phase.as_deref() == Some("Succeeded"))
            .then_some(p)
        }
    })
    .await;
    assert_eq!(stopped.metadata.uid.as_deref(), Some(uid.as_str()));
    // Two and a half nominal minutes later it is still there, and the StatefulSet has not
    // replaced it.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let still = pods.get("db-0").await.unwrap();
    assert_eq!(still.metadata.uid.as_deref(), Some(uid.as_str()));
    assert!(still.metadata.deletion_timestamp.is_some());
    let log = kubelet_log(&sim, "worker-01");
    let pvc: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), "default");
    let pv = pvc
        .get("data-db-0")
        .await
        .unwrap()
        .spec
        .unwrap()
        .volume_name
        .unwrap();
    // A mounted volume's messages name it by its unique name (MountedVolume.GenerateError).
    let un = format!("kubernetes.io/csi/driver.longhorn.io^{pv}");
    let wanted = format!(
        "Error: UnmountVolume.TearDown failed for volume \"{un}\" (UniqueName: \"{un}\") pod \"{uid}\" (UID: \"{uid}\") : unmount failed: input/output error"
    );
    assert!(
        log.iter()
            .any(|l| l.contains("nestedpendingoperations.go:348]")
                && l.contains(&format!("podName:{uid} nodeName:}}\" failed."))
                && l.ends_with(&wanted)),
        "{wanted}\n{}",
        log.join("\n")
    );
    assert!(
        !log.iter().any(|l| l.contains("\"SyncLoop DELETE\"")),
        "the kubelet did not delete the pod object"
    );
    // The disk recovers: the volume is torn down, the kubelet deletes the pod, and the
    // StatefulSet's replacement starts.
    sim.node_op("worker-01", &NodeOp::ClearIoErrors).unwrap();
    let replacement = running(&client, "db-0", 30).await;
    assert_ne!(replacement.metadata.uid.as_deref(), Some(uid.as_str()));
    let log = kubelet_log(&sim, "worker-01");
    let torn_down = log
        .iter()
        .position(|l| l.contains("UnmountVolume.TearDown succeeded") && l.contains(&uid))
        .expect("TearDown succeeded");
    let deleted = log
        .iter()
        .position(|l| l.contains("\"SyncLoop DELETE\" source=\"api\" pods=[\"default/db-0\"]"))
        .expect("the kubelet deleted the pod");
    assert!(torn_down < deleted, "{}", log.join("\n"));
}

/// Every Event the kubelet of `node` wrote: (name, count).
async fn kubelet_events(client: &kube::Client, node: &str) -> Vec<(String, i32)> {
    let events: Api<Event> = Api::all(client.clone());
    let mut out: Vec<(String, i32)> = events
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|e| {
            e.source.as_ref().and_then(|s| s.host.as_deref()) == Some(node)
                || e.reporting_instance.as_deref() == Some(node)
        })
        .map(|e| (e.metadata.name.unwrap_or_default(), e.count.unwrap_or(1)))
        .collect();
    out.sort();
    out
}

/// Item 3: a partitioned node writes nothing to the API (no Event of its kubelet, no pod or
/// node status, no Lease renewal) and hears nothing from it (a pod deleted meanwhile is not
/// killed) until the partition heals; then the kubelet catches up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partitioned_node_writes_nothing_to_the_api() {
    let (_c, sim, client) = cluster(2).await;
    statefulset(&client, "db", "worker-01").await;
    running(&client, "db-0", 30).await;
    // Let the start-up events settle.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let leases: Api<Lease> = Api::namespaced(client.clone(), "kube-node-lease");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    sim.node_op("worker-01", &NodeOp::PartitionNetwork).unwrap();
    // Whatever was in flight lands within a tick.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let events_before = kubelet_events(&client, "worker-01").await;
    let lease_before = leases
        .get("worker-01")
        .await
        .unwrap()
        .spec
        .unwrap()
        .renew_time;
    pods.delete("db-0", &DeleteParams::default()).await.unwrap();
    let deleted = pods.get("db-0").await.unwrap();
    // 100 nominal seconds: ten Lease periods, the pod's graceful deletion, the node Unknown.
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert_eq!(
        kubelet_events(&client, "worker-01").await,
        events_before,
        "the partitioned kubelet recorded an Event"
    );
    assert_eq!(
        leases
            .get("worker-01")
            .await
            .unwrap()
            .spec
            .unwrap()
            .renew_time,
        lease_before,
        "the partitioned kubelet renewed its Lease"
    );
    // What the kubelet owns in the pod's status is as it was (the node lifecycle controller
    // marks it not Ready: its write, not the kubelet's).
    let still = pods.get("db-0").await.unwrap();
    assert_eq!(still.metadata.uid, deleted.metadata.uid);
    let (now, then) = (still.status.unwrap(), deleted.status.unwrap());
    assert_eq!(
        (now.phase, now.container_statuses),
        (then.phase, then.container_statuses),
        "the partitioned kubelet wrote the pod's status"
    );
    let log = kubelet_log(&sim, "worker-01");
    assert!(
        !log.iter().any(|l| l.contains("pods=[\"default/db-0\"]")
            && l.contains("SyncLoop")
            && !l.contains("SyncLoop ADD")),
        "the partitioned kubelet heard of the deletion:\n{}",
        log.join("\n")
    );
    // The node lifecycle controller saw the Lease go stale.
    let nodes: Api<Node> = Api::all(client.clone());
    let ready = nodes
        .get("worker-01")
        .await
        .unwrap()
        .status
        .unwrap()
        .conditions
        .unwrap();
    assert!(ready
        .iter()
        .any(|c| c.type_ == "Ready" && c.status == "Unknown"));
    // Healed: the kubelet hears of the deletion, kills the container (its Killing event
    // arrives now) and deletes the pod; the StatefulSet replaces it.
    sim.node_op("worker-01", &NodeOp::HealNetwork).unwrap();
    let client2 = client.clone();
    eventually(20, "Killing recorded after the heal", || {
        let client = client2.clone();
        async move {
            common::events_for(&client, "db-0")
                .await
                .iter()
                .any(|(r, m)| r == "Killing" && m == "Stopping container db")
                .then_some(())
        }
    })
    .await;
    eventually(5, "the Lease renewed after the heal", || {
        let (leases, before) = (leases.clone(), lease_before.clone());
        async move {
            (leases.get("worker-01").await.ok()?.spec?.renew_time != before).then_some(())
        }
    })
    .await;
    let replacement = running(&client, "db-0", 30).await;
    assert_ne!(replacement.metadata.uid, deleted.metadata.uid);
}

/// (source component, reason, message) of the Events about `name`.
async fn events_by_source(client: &kube::Client, name: &str) -> Vec<(String, String, String)> {
    let events: Api<Event> = Api::all(client.clone());
    events
        .list(&ListParams::default().fields(&format!("involvedObject.name={name}")))
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|e| {
            (
                e.source.and_then(|s| s.component).unwrap_or_default(),
                e.reason.unwrap_or_default(),
                e.message.unwrap_or_default(),
            )
        })
        .collect()
}

/// How many times `component` recorded `reason` about `name` (aggregated repeats included).
async fn occurrences(client: &kube::Client, name: &str, component: &str, reason: &str) -> i32 {
    let events: Api<Event> = Api::all(client.clone());
    events
        .list(&ListParams::default().fields(&format!("involvedObject.name={name}")))
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|e| {
            e.reason.as_deref() == Some(reason)
                && e.source.as_ref().and_then(|s| s.component.as_deref()) == Some(component)
        })
        .map(|e| e.count.unwrap_or(1))
        .sum()
}

fn ready_condition(node: &Node) -> Option<(String, Option<String>)> {
    node.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "Ready")
        .map(|c| (c.status.clone(), c.reason.clone()))
}

/// Item 4: a Ready=False the kubelet posts itself (PLEG is not healthy) is the kubelet's
/// NodeNotReady event on the node, nothing more: the node lifecycle controller marks pods not
/// Ready (with their `NodeNotReady` events) only on the Ready -> Unknown transition it makes
/// itself, and a node already False that then goes Unknown is not that transition.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kubelet_reported_not_ready_marks_no_pod() {
    let (_c, sim, client) = cluster(2).await;
    statefulset(&client, "db", "worker-01").await;
    running(&client, "db-0", 30).await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    eventually(10, "db-0 Ready", || {
        let pods = pods.clone();
        async move {
            let p = pods.get("db-0").await.ok()?;
            p.status?
                .conditions?
                .iter()
                .any(|c| c.type_ == "Ready" && c.status == "True")
                .then_some(())
        }
    })
    .await;
    // Only what happens from here on counts (a loaded machine may have delayed a heartbeat
    // at start-up).
    let controller_not_ready_before =
        occurrences(&client, "worker-01", "node-controller", "NodeNotReady").await;
    sim.node_op(
        "worker-01",
        &NodeOp::SaturateWorkers {
            count: Some(2),
            namespace: "snapshots".into(),
        },
    )
    .unwrap();
    let nodes: Api<Node> = Api::all(client.clone());
    eventually(20, "worker-01 Ready=False (PLEG)", || {
        let nodes = nodes.clone();
        async move {
            let n = nodes.get("worker-01").await.ok()?;
            (ready_condition(&n)? == ("False".into(), Some("KubeletNotReady".into()))).then_some(())
        }
    })
    .await;
    // Thirty nominal seconds later (before the not-ready taint's 300 s toleration runs out):
    // the pod is as the kubelet last posted it, Ready, with no NodeNotReady of its own.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let p = pods.get("db-0").await.unwrap();
    assert!(
        p.status
            .unwrap()
            .conditions
            .unwrap()
            .iter()
            .any(|c| c.type_ == "Ready" && c.status == "True"),
        "the pod was marked not Ready"
    );
    let pod_events = events_by_source(&client, "db-0").await;
    assert!(
        !pod_events.iter().any(|(_, r, _)| r == "NodeNotReady"),
        "{pod_events:?}"
    );
    // The node's NodeNotReady is the kubelet's own, not the node lifecycle controller's.
    assert_eq!(
        occurrences(&client, "worker-01", "node-controller", "NodeNotReady").await,
        controller_not_ready_before,
        "the node lifecycle controller recorded NodeNotReady"
    );
    let node_events = events_by_source(&client, "worker-01").await;
    assert!(
        node_events.contains(&(
            "kubelet".to_string(),
            "NodeNotReady".to_string(),
            "Node worker-01 status is now: NodeNotReady".to_string()
        )),
        "{node_events:?}"
    );
    // The kubelet stops: the controller turns False into Unknown, still without marking pods.
    sim.node_op("worker-01", &NodeOp::KubeletStop).unwrap();
    eventually(20, "worker-01 Unknown", || {
        let nodes = nodes.clone();
        async move {
            let n = nodes.get("worker-01").await.ok()?;
            (ready_condition(&n)?.0 == "Unknown").then_some(())
        }
    })
    .await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let pod_events = events_by_source(&client, "db-0").await;
    assert!(
        !pod_events.iter().any(|(_, r, _)| r == "NodeNotReady"),
        "{pod_events:?}"
    );
}

/// A Longhorn ReadWriteOnce claim and a pod using it, pinned to `node`.
async fn claim(client: &kube::Client, name: &str) {
    let pvcs: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), "default");
    let pvc = serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "longhorn", "resources": {"requests": {"storage": "1Gi"}}}
    }))
    .unwrap();
    pvcs.create(&PostParams::default(), &pvc).await.unwrap();
}

async fn pod_with_claim(client: &kube::Client, name: &str, claim: &str, node: &str) {
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let pod = serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "nodeSelector": {"kubernetes.io/hostname": node},
            "containers": [{"name": "db", "image": "postgres:17"}],
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]
        }
    }))
    .unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
}

/// (node, attached) of the VolumeAttachments of `pv`.
async fn attachments(client: &kube::Client, pv: &str) -> Vec<(String, bool)> {
    let vas: Api<VolumeAttachment> = Api::all(client.clone());
    let mut out: Vec<(String, bool)> = vas
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|va| va.spec.source.persistent_volume_name.as_deref() == Some(pv))
        .map(|va| {
            (
                va.spec.node_name,
                va.status.map(|s| s.attached).unwrap_or(false),
            )
        })
        .collect();
    out.sort();
    out
}

async fn bound_pv(client: &kube::Client, claim: &str) -> String {
    let pvcs: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), "default");
    eventually(10, "claim bound", || {
        let pvcs = pvcs.clone();
        async move { pvcs.get(claim).await.ok()?.spec?.volume_name }
    })
    .await
}

async fn wait_ready(client: &kube::Client, node: &str, status: &'static str) {
    let nodes: Api<Node> = Api::all(client.clone());
    eventually(20, &format!("{node} Ready={status}"), || {
        let nodes = nodes.clone();
        async move {
            let n = nodes.get(node).await.ok()?;
            (ready_condition(&n)?.0 == status).then_some(())
        }
    })
    .await;
}

/// Item 2: after a node is lost, its ReadWriteOnce volume is not attached to a second node.
/// While a pod on the lost node still uses it, the new pod gets `Multi-Attach error ... Volume
/// is already used by pod(s) <old>`; once that pod is force-deleted, the volume stays attached
/// (the lost node still reports it in use) until maxWaitForUnmountDuration, 6 minutes after the
/// detach was requested, force-detaches it from the node that is not Ready; only then does the
/// new pod's volume attach and the pod run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_nodes_rwo_volume_is_not_attached_elsewhere() {
    let (_c, sim, client) = cluster(2).await;
    claim(&client, "data").await;
    pod_with_claim(&client, "old", "data", "worker-01").await;
    running(&client, "old", 30).await;
    let pv = bound_pv(&client, "data").await;
    assert_eq!(
        attachments(&client, &pv).await,
        vec![("worker-01".into(), true)]
    );
    // The node is lost: its kubelet posts nothing more (its Lease goes stale).
    sim.node_op("worker-01", &NodeOp::KubeletStop).unwrap();
    wait_ready(&client, "worker-01", "Unknown").await;
    pod_with_claim(&client, "new", "data", "worker-02").await;
    let wanted =
        format!("Multi-Attach error for volume \"{pv}\" Volume is already used by pod(s) old");
    let client2 = client.clone();
    eventually(10, "Multi-Attach error", || {
        let (client, wanted) = (client2.clone(), wanted.clone());
        async move {
            let ev = events_by_source(&client, "new").await;
            ev.iter()
                .any(|(src, r, m)| {
                    src == "attachdetach-controller" && r == "FailedAttachVolume" && *m == wanted
                })
                .then_some(())
        }
    })
    .await;
    // Reported once, not on every pass.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let events: Vec<_> = events_by_source(&client, "new")
        .await
        .into_iter()
        .filter(|(_, r, _)| r == "FailedAttachVolume")
        .collect();
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(
        attachments(&client, &pv).await,
        vec![("worker-01".into(), true)]
    );
    // The old pod is force-deleted: the volume is no longer wanted on worker-01, but that node
    // still reports it in use; the controller waits maxWaitForUnmountDuration (6 min).
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    pods.delete("old", &DeleteParams::default().grace_period(0))
        .await
        .unwrap();
    let forced = tokio::time::Instant::now();
    // Five nominal minutes on: still attached to worker-01 alone, the new pod not running.
    tokio::time::sleep(Duration::from_millis(3000)).await;
    assert_eq!(
        attachments(&client, &pv).await,
        vec![("worker-01".into(), true)]
    );
    let new = pods.get("new").await.unwrap();
    assert_ne!(new.status.unwrap().phase.as_deref(), Some("Running"));
    running(&client, "new", 30).await;
    assert!(
        forced.elapsed() >= Duration::from_millis(3600),
        "force-detached after {:?}",
        forced.elapsed()
    );
    assert_eq!(
        attachments(&client, &pv).await,
        vec![("worker-02".into(), true)]
    );
}

/// Item 5: the `node.kubernetes.io/out-of-service` taint on a node that is shut down: its pods
/// are evicted (NoExecute), the pod GC force-deletes them as they stay Terminating on a node
/// that is not Ready, and the attach/detach controller detaches their volumes at once, without
/// the 6-minute wait, so a StatefulSet's replacement runs on another node.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_out_of_service_taint_moves_a_statefulset_off_a_shut_down_node() {
    // At 0.05 the 6-minute force detach lies 18 s of wall time after the taint, far past the
    // budget below: a replacement within it can only have come through the taint, however
    // loaded the machine (at 0.01 the two paths were 3.6 s apart and a slow CI run mixed them).
    let scale = 0.05;
    let c = TestCluster::start_with(SimOptions::full(2, Timing::scaled(scale))).await;
    let sim = c.server.cluster.clone().expect("full cluster");
    let client = c.client().await;
    let nodes: Api<Node> = Api::all(client.clone());
    let cordon = |on: bool| {
        let nodes = nodes.clone();
        async move {
            nodes
                .patch(
                    "worker-02",
                    &PatchParams::default(),
                    &Patch::Merge(json!({"spec": {"unschedulable": on}})),
                )
                .await
                .unwrap();
        }
    };
    cordon(true).await;
    let sets: Api<k8s_openapi::api::apps::v1::StatefulSet> =
        Api::namespaced(client.clone(), "default");
    let set = serde_json::from_value(json!({
        "metadata": {"name": "db"},
        "spec": {
            "replicas": 1, "serviceName": "db",
            "selector": {"matchLabels": {"app": "db"}},
            "template": {"metadata": {"labels": {"app": "db"}}, "spec": {
                "containers": [{"name": "db", "image": "postgres:17"}]}},
            "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "longhorn", "resources": {"requests": {"storage": "1Gi"}}}}]
        }
    }))
    .unwrap();
    sets.create(&PostParams::default(), &set).await.unwrap();
    let first = running(&client, "db-0", 30).await;
    assert_eq!(
        first.spec.as_ref().unwrap().node_name.as_deref(),
        Some("worker-01")
    );
    cordon(false).await;
    let pv = bound_pv(&client, "data-db-0").await;
    // worker-01 is shut down (its kubelet is gone for good) and goes Unknown.
    sim.node_op("worker-01", &NodeOp::KubeletStop).unwrap();
    wait_ready(&client, "worker-01", "Unknown").await;
    nodes
        .patch(
            "worker-01",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"taints": [
                {"key": "node.kubernetes.io/out-of-service", "value": "nodeshutdown", "effect": "NoExecute"},
                {"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule"},
                {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute", "timeAdded": "2026-01-01T00:00:00Z"}]}})),
        )
        .await
        .unwrap();
    let tainted = tokio::time::Instant::now();
    let max_wait_for_unmount = Duration::from_secs_f64(360.0 * scale);
    // The replacement runs on worker-02 well within the 6 minutes.
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let replacement = eventually(12, "db-0 replaced on worker-02", || {
        let pods = pods.clone();
        async move {
            let p = pods.get("db-0").await.ok()?;
            (p.spec.as_ref()?.node_name.as_deref() == Some("worker-02")
                && p.status.as_ref()?.phase.as_deref() == Some("Running"))
            .then_some(p)
        }
    })
    .await;
    assert!(
        tainted.elapsed() < max_wait_for_unmount * 2 / 3,
        "replaced after {:?}, the force detach comes at {max_wait_for_unmount:?}",
        tainted.elapsed()
    );
    assert_ne!(replacement.metadata.uid, first.metadata.uid);
    assert_eq!(
        attachments(&client, &pv).await,
        vec![("worker-02".into(), true)]
    );
    // The old pod went through taint eviction before the pod GC force-deleted it.
    let events = events_by_source(&client, "db-0").await;
    assert!(
        events
            .iter()
            .any(|(src, r, m)| src == "taint-eviction-controller"
                && r == "TaintManagerEviction"
                && m == "Marking for deletion Pod default/db-0"),
        "{events:?}"
    );
}

/// The message of a klog line (what follows `file:line] `).
fn message(line: &str) -> &str {
    line.split_once("] ").map(|(_, m)| m).unwrap_or("")
}

/// Item 11: the volume manager's lines as a 1.35 kubelet writes them (operation_generator.go,
/// reconciler_common.go): `Controller attach succeeded`, `MountVolume.WaitForAttach
/// entering/succeeded` (device path: the VolumeAttachment's name), `MountVolume.SetUp succeeded`
/// with its trailing space, the unmount side naming the volume by its unique name and no
/// OuterVolumeSpecName; and the first MountDevice failure after the attach was verified prints
/// `durationBeforeRetry 500ms` (a new operation on the key, not the verification's backoff).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn volume_manager_lines_are_1_35s() {
    let (_c, sim, client) = cluster(2).await;
    claim(&client, "web-data").await;
    pod_with_claim(&client, "web", "web-data", "worker-01").await;
    let web = running(&client, "web", 30).await;
    let uid = web.metadata.uid.clone().unwrap();
    let pv = bound_pv(&client, "web-data").await;
    let un = format!("kubernetes.io/csi/driver.longhorn.io^{pv}");
    let va = faultline_sim::cluster::storage::attacher::attachment_name(&pv, "worker-01");
    let log = kubelet_log(&sim, "worker-01");
    let line = |file: &str, msg: String| {
        let found = log
            .iter()
            .position(|l| l.contains(&format!(" {file}] ")) && message(l) == msg);
        found.unwrap_or_else(|| panic!("no `{file}] {msg}` in:\n{}", log.join("\n")))
    };
    let vol = format!(
        "for volume \\\"{pv}\\\" (UniqueName: \\\"{un}\\\") pod \\\"web\\\" (UID: \\\"{uid}\\\")"
    );
    let verify = line(
        "reconciler_common.go:251",
        format!("\"operationExecutor.VerifyControllerAttachedVolume started {vol} \" pod=\"default/web\""),
    );
    let attached = line(
        "operation_generator.go:1463",
        format!("\"Controller attach succeeded {vol} device path: \\\"\\\"\" pod=\"default/web\""),
    );
    let entering = line(
        "operation_generator.go:515",
        format!(
            "\"MountVolume.WaitForAttach entering {vol} DevicePath \\\"\\\"\" pod=\"default/web\""
        ),
    );
    let waited = line(
        "operation_generator.go:525",
        format!("\"MountVolume.WaitForAttach succeeded {vol} DevicePath \\\"{va}\\\"\" pod=\"default/web\""),
    );
    let setup = line(
        "operation_generator.go:614",
        format!("\"MountVolume.SetUp succeeded {vol} \" pod=\"default/web\""),
    );
    assert!(verify < attached && attached < entering && entering < waited && waited < setup);
    // The unmount side.
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    pods.delete("web", &DeleteParams::default()).await.unwrap();
    let sim2 = sim.clone();
    eventually(10, "UnmountDevice succeeded", || {
        let log = kubelet_log(&sim2, "worker-01");
        async move {
            log.iter()
                .any(|l| l.contains("UnmountDevice succeeded"))
                .then_some(())
        }
    })
    .await;
    let log = kubelet_log(&sim, "worker-01");
    let line = |file: &str, msg: String| {
        let found = log
            .iter()
            .position(|l| l.contains(&format!(" {file}] ")) && message(l) == msg);
        found.unwrap_or_else(|| panic!("no `{file}] {msg}` in:\n{}", log.join("\n")))
    };
    line(
        "reconciler_common.go:163",
        format!("\"operationExecutor.UnmountVolume started for volume \\\"{un}\\\" (UniqueName: \\\"{un}\\\") pod \\\"{uid}\\\" (UID: \\\"{uid}\\\") \""),
    );
    line(
        "operation_generator.go:779",
        format!("UnmountVolume.TearDown succeeded for volume \"{un}\" pod \"{uid}\" (UID: \"{uid}\"). InnerVolumeSpecName \"{pv}\". PluginName \"kubernetes.io/csi\", VolumeGIDValue \"\""),
    );
    line(
        "operation_generator.go:892",
        format!("UnmountDevice succeeded for volume \"{pv}\" (UniqueName: \"{un}\") on node \"worker-01\" "),
    );
    assert!(!log.iter().any(|l| l.contains("OuterVolumeSpecName")));
    // A crash-looping plugin: the verification fails while the attach is under way, then
    // MountDevice fails to dial; its first failure starts at 500ms.
    sim.node_op("worker-02", &NodeOp::CsiPluginDown).unwrap();
    claim(&client, "api-data").await;
    pod_with_claim(&client, "api", "api-data", "worker-02").await;
    let sim2 = sim.clone();
    let failures = eventually(20, "two MountDevice failures", || {
        let log = kubelet_log(&sim2, "worker-02");
        async move {
            let f: Vec<String> = log
                .into_iter()
                .filter(|l| {
                    l.contains("nestedpendingoperations.go:348]")
                        && l.contains("Error: MountVolume.MountDevice failed")
                })
                .collect();
            (f.len() >= 2).then_some(f)
        }
    })
    .await;
    assert!(
        failures[0].contains("(durationBeforeRetry 500ms)")
            && failures[1].contains("(durationBeforeRetry 1s)"),
        "{failures:#?}"
    );
    assert!(kubelet_log(&sim, "worker-02")
        .iter()
        .any(|l| l.contains("Error: Volume not attached according to node status")));
}

/// Item 15: a node stuck in `Rebooting` (hung NFS) has stopped its services before it hangs on
/// unmounting, so its kubelet writes nothing, as a stopped kubelet does; after the power cycle
/// a new kubelet process starts and logs again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_stuck_rebooting_has_a_silent_kubelet() {
    let (_c, sim, client) = cluster(1).await;
    statefulset(&client, "db", "worker-01").await;
    running(&client, "db-0", 30).await;
    sim.node_op("worker-01", &NodeOp::HungNfs).unwrap();
    sim.node_op("worker-01", &NodeOp::Reboot).unwrap();
    // Let anything already under way land, then watch 200 s of nominal time.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let before = kubelet_log(&sim, "worker-01").len();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let during = kubelet_log(&sim, "worker-01");
    assert_eq!(
        during.len(),
        before,
        "a stuck reboot logged: {:?}",
        &during[before..]
    );
    sim.node_op("worker-01", &NodeOp::PowerCycle).unwrap();
    let booted = eventually(20, "the booted kubelet's pods", || {
        let log = kubelet_log(&sim, "worker-01");
        let new = log[during.len()..].to_vec();
        async move {
            new.iter()
                .any(|l| message(l).starts_with("\"SyncLoop ADD\""))
                .then_some(new)
        }
    })
    .await;
    // Item 11: the new process logs its start, then gets every pod of the node as one ADD.
    let version = booted
        .iter()
        .position(|l| message(l).starts_with("\"Kubelet version\""))
        .expect("the kubelet's start");
    let add = booted
        .iter()
        .position(|l| message(l).starts_with("\"SyncLoop ADD\" source=\"api\" pods=["))
        .unwrap();
    assert!(version < add, "{booted:#?}");
    assert!(booted[add].contains("\"default/db-0\""), "{}", booted[add]);
}

/// Item 4: a hung NFS server reaches what is mounted over NFS (a Longhorn ReadWriteMany volume,
/// served by its share-manager's NFS export) and nothing else. A container on it cannot be
/// stopped: the pod stays Terminating, each StopContainer ends at its deadline with
/// FailedKillPod, and the relist waiting behind the stop turns PLEG unhealthy, so the node goes
/// Ready=False (kubernetes/kubernetes#74135). A ReadWriteOnce volume still mounts meanwhile.
/// Healed, the pod goes and the node is Ready again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_nfs_server_hangs_what_is_mounted_over_nfs() {
    let (_c, sim, client) = cluster(1).await;
    statefulset_with(&client, "shared", "worker-01", "ReadWriteMany").await;
    running(&client, "shared-0", 30).await;
    sim.node_op("worker-01", &NodeOp::HungNfs).unwrap();
    // Not node-wide: a new pod with a block volume mounts and runs.
    statefulset(&client, "db", "worker-01").await;
    running(&client, "db-0", 30).await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    pods.delete("shared-0", &DeleteParams::default())
        .await
        .unwrap();
    let deleted = tokio::time::Instant::now();
    let want = "error killing pod: failed to \"KillContainer\" for \"db\" with KillContainerError: \"rpc error: code = DeadlineExceeded desc = context deadline exceeded\"";
    eventually(20, "FailedKillPod", || {
        let client = client.clone();
        async move {
            events_for(&client, "shared-0")
                .await
                .iter()
                .any(|(r, m)| r == "FailedKillPod" && m == want)
                .then_some(())
        }
    })
    .await;
    // StopContainer's deadline: the runtime request timeout (2m) plus the grace period (30s).
    assert!(deleted.elapsed() >= Duration::from_secs_f64(150.0 * SCALE));
    let nodes: Api<Node> = Api::all(client.clone());
    let not_ready = eventually(20, "worker-01 Ready=False", || {
        let nodes = nodes.clone();
        async move {
            let n = nodes.get("worker-01").await.ok()?;
            let c = n
                .status?
                .conditions?
                .into_iter()
                .find(|c| c.type_ == "Ready")?;
            (c.status == "False").then_some(c.message)
        }
    })
    .await;
    assert!(
        not_ready
            .as_deref()
            .is_some_and(|m| m.starts_with("PLEG is not healthy: pleg was last seen active 3m")),
        "{not_ready:?}"
    );
    // The slow relist completes after 4 minutes: Ready again, until the retried stop hangs the
    // next relist (the flapping of #74135).
    wait_ready(&client, "worker-01", "True").await;
    let p = pods.get("shared-0").await.unwrap();
    assert!(p.metadata.deletion_timestamp.is_some(), "still Terminating");
    wait_ready(&client, "worker-01", "False").await;
    sim.node_op("worker-01", &NodeOp::ClearHungNfs).unwrap();
    eventually(20, "shared-0 replaced", || {
        let pods = pods.clone();
        async move {
            let p = pods.get("shared-0").await.ok()?;
            (p.metadata.deletion_timestamp.is_none()
                && p.status.as_ref()?.phase.as_deref() == Some("Running"))
            .then_some(())
        }
    })
    .await;
    wait_ready(&client, "worker-01", "True").await;
}

/// Item 11: a kubelet that starts again with a volume mounted logs what a 1.35 kubelet logs
/// (cmd/kubelet/app/server.go, volume_manager.go, reconciler/reconstruct.go, reconciler.go,
/// kubelet_node_status.go, kubelet.go), in that order: its start, the volume manager's start,
/// the volume and its device reconstructed from disk as uncertain, the reconciler's start, the
/// main sync loop, the node "previously registered", its pods as one ADD; then the first pass
/// reads the device paths and mounts the uncertain volume again (MountDevice and SetUp, both
/// idempotent on the node), and the pod keeps running.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_kubelet_reconstructs_its_volumes() {
    let (_c, sim, client) = cluster(1).await;
    statefulset(&client, "db", "worker-01").await;
    let pod = running(&client, "db-0", 30).await;
    let uid = pod.metadata.uid.clone().unwrap();
    let before = kubelet_log(&sim, "worker-01").len();
    sim.node_op("worker-01", &NodeOp::KubeletRestart).unwrap();
    let new = eventually(20, "the remount after the restart", || {
        let log = kubelet_log(&sim, "worker-01");
        let new = log[before..].to_vec();
        async move {
            new.iter()
                .any(|l| message(l).starts_with("\"MountVolume.SetUp succeeded"))
                .then_some(new)
        }
    })
    .await;
    let at = |start: &str| {
        new.iter()
            .position(|l| message(l).starts_with(start))
            .unwrap_or_else(|| panic!("no {start}: {new:#?}"))
    };
    let order = [
        "\"Kubelet version\"",
        "\"Started kubelet\"",
        "\"Starting Kubelet Volume Manager\"",
        "\"Volume is marked as uncertain and added into the actual state\" pod=\"\"",
        "\"Volume is marked device as uncertain and added into the actual state\"",
        "\"Volume reconstruction finished\"",
        "\"Reconciler: start to sync state\"",
        "\"Starting kubelet main sync loop\"",
        "\"Attempting to register node\" node=\"worker-01\"",
        "\"Node was previously registered\" node=\"worker-01\"",
        "\"Successfully registered node\" node=\"worker-01\"",
        "\"SyncLoop ADD\" source=\"api\" pods=[",
        "\"operationExecutor.MountVolume started",
        "\"MountVolume.MountDevice succeeded",
        "\"MountVolume.SetUp succeeded",
    ];
    let positions: Vec<usize> = order.iter().map(|s| at(s)).collect();
    assert!(
        positions.windows(2).all(|w| w[0] < w[1]),
        "{positions:?}: {new:#?}"
    );
    assert!(new[at("\"SyncLoop ADD\"")].contains("\"default/db-0\""));
    // Its first pass reads the reconstructed volumes' device paths from the node's status
    // (upstream at the end of the pass whose mount operations run in goroutines of their own).
    assert!(at("\"DevicePaths of reconstructed volumes updated\"") > at("\"SyncLoop ADD\""));
    let uncertain = &new[at("\"Volume is marked as uncertain")];
    assert!(
        uncertain.contains(&format!("podName=\"{uid}\""))
            && uncertain.contains("volumeName=\"kubernetes.io/csi/driver.longhorn.io^")
            && uncertain.ends_with("seLinuxMountContext=\"\""),
        "{uncertain}"
    );
    let device = &new[at("\"Volume is marked device as uncertain")];
    assert!(
        device.contains(
            "deviceMountPath=\"/var/lib/kubelet/plugins/kubernetes.io/csi/driver.longhorn.io/"
        ) && device.ends_with("/globalmount\""),
        "{device}"
    );
    // The first start's node was not there yet: no "previously registered" before the restart.
    let first = kubelet_log(&sim, "worker-01")[..before].to_vec();
    assert!(
        !first.iter().any(|l| l.contains("previously registered")),
        "{first:#?}"
    );
    // The pod's containers were not restarted by the kubelet's own restart.
    let after = running(&client, "db-0", 5).await;
    assert_eq!(after.metadata.uid.as_deref(), Some(uid.as_str()));
    let restarts: i32 = after
        .status
        .and_then(|s| s.container_statuses)
        .unwrap_or_default()
        .iter()
        .map(|c| c.restart_count)
        .sum();
    assert_eq!(restarts, 0);
}
