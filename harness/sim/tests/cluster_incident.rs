//! The incident's symptoms and the runbook's remediations, observed only through the Kubernetes
//! API, events and node logs (what a person with kubectl and talosctl would see). Time runs at
//! 1/100 of real time: a 2m2s backoff takes 1.22 s.

mod common;

use common::{eventually, TestCluster};
use faultline_sim::cluster::nodeops::{Holder, NodeOp};
use faultline_sim::{SimCluster, SimOptions, Timing};
use k8s_openapi::api::core::v1::{Node, PersistentVolumeClaim, Pod};
use k8s_openapi::api::storage::v1::{CSINode, VolumeAttachment};
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::ResourceExt;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

const SCALE: f64 = 0.01;

async fn cluster() -> (TestCluster, Arc<SimCluster>, kube::Client) {
    let c = TestCluster::start_with(SimOptions::full(4, Timing::scaled(SCALE))).await;
    let sim = c.server.cluster.clone().expect("full cluster");
    let client = c.client().await;
    // Longhorn's plugin registers on every worker before the test starts.
    let csinodes: Api<CSINode> = Api::all(client.clone());
    eventually(20, "CSI plugin registered on all workers", || {
        let csinodes = csinodes.clone();
        async move {
            let l = csinodes.list(&ListParams::default()).await.ok()?;
            let n = l.items.iter().filter(|c| c.spec.drivers.iter().any(|d| d.name == "driver.longhorn.io")).count();
            (n == 4).then_some(())
        }
    })
    .await;
    (c, sim, client)
}

/// A workspace-shaped pod (two init containers, a Longhorn PVC) pinned to `node`.
async fn workspace(client: &kube::Client, name: &str, node: &str) {
    let pvcs: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), "default");
    let pvc: PersistentVolumeClaim = serde_json::from_value(json!({
        "metadata": {"name": format!("workspace-{name}")},
        "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "longhorn", "resources": {"requests": {"storage": "1Gi"}}}
    }))
    .unwrap();
    pvcs.create(&PostParams::default(), &pvc).await.unwrap();
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"app": "llmsafespaces"}},
        "spec": {
            "nodeSelector": {"kubernetes.io/hostname": node},
            "initContainers": [{"name": "workspace-dirs", "image": "busybox:1.36"}, {"name": "workspace-setup", "image": "busybox:1.36"}],
            "containers": [{"name": "workspace", "image": "python:3.12"}],
            "volumes": [{"name": "workspace", "persistentVolumeClaim": {"claimName": format!("workspace-{name}")}}]
        }
    }))
    .unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
}

fn condition(p: &Pod, t: &str) -> Option<String> {
    p.status.as_ref()?.conditions.as_ref()?.iter().find(|c| c.type_ == t).map(|c| c.status.clone())
}

async fn wait_running(client: &kube::Client, name: &str, secs: u64) -> Pod {
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    eventually(secs, &format!("{name} Running and Ready"), || {
        let pods = pods.clone();
        async move {
            let p = pods.get(name).await.ok()?;
            (p.status.as_ref()?.phase.as_deref() == Some("Running") && condition(&p, "Ready").as_deref() == Some("True")).then_some(p)
        }
    })
    .await
}

fn stale_mount(pv: &str, holder: Holder) -> NodeOp {
    NodeOp::StaleDeviceMount { pv: pv.into(), deleted_pv: true, holder, blocks_queue: true }
}

fn kubelet_log(sim: &SimCluster, node: &str) -> Vec<String> {
    sim.nodes[node].kubelet_log.snapshot()
}

/// `durationBeforeRetry` values of the failed operation on `pv`, in order.
fn backoffs(sim: &SimCluster, node: &str, pv: &str) -> Vec<String> {
    kubelet_log(sim, node)
        .iter()
        .filter(|l| l.contains("nestedpendingoperations.go") && l.contains(&format!("driver.longhorn.io^{pv} podName: nodeName:")))
        .filter_map(|l| l.split("durationBeforeRetry ").nth(1).and_then(|r| r.split(')').next()).map(String::from))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_mount_blocks_the_node_and_kubelet_restart_recovers() {
    let (_c, sim, client) = cluster().await;
    sim.node_op("worker-04", &stale_mount("pvc-81b676e6", Holder::Kubelet)).unwrap();
    workspace(&client, "ws-stuck", "worker-04").await;
    workspace(&client, "ws-fine", "worker-01").await;
    // The same pod on another node runs.
    wait_running(&client, "ws-fine", 20).await;
    // On worker-04: scheduled, claim bound, volume attached ... and stuck.
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let vas: Api<VolumeAttachment> = Api::all(client.clone());
    let pvcs: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), "default");
    let pv = eventually(20, "claim bound and attached on worker-04", || {
        let (pvcs, vas) = (pvcs.clone(), vas.clone());
        async move {
            let pvc = pvcs.get("workspace-ws-stuck").await.ok()?;
            (pvc.status.as_ref()?.phase.as_deref() == Some("Bound")).then_some(())?;
            let pv = pvc.spec?.volume_name?;
            let attached = vas.list(&ListParams::default()).await.ok()?.items.into_iter().any(|va| {
                va.spec.source.persistent_volume_name.as_deref() == Some(pv.as_str()) && va.spec.node_name == "worker-04" && va.status.map(|s| s.attached).unwrap_or(false)
            });
            attached.then_some(pv)
        }
    })
    .await;
    // Wait past the scaled podAttachAndMountTimeout (2m3s -> 1.23 s) twice.
    tokio::time::sleep(Duration::from_millis(3000)).await;
    let p = pods.get("ws-stuck").await.unwrap();
    let st = p.status.clone().unwrap();
    assert_eq!(st.phase.as_deref(), Some("Pending"));
    assert_eq!(condition(&p, "PodScheduled").as_deref(), Some("True"));
    // Waiting init and main container statuses, as the FailedMount pod shape in facts.md.
    let init = st.init_container_statuses.clone().unwrap();
    assert_eq!(init.len(), 2);
    for cs in init.iter().chain(st.container_statuses.clone().unwrap().iter()) {
        assert_eq!(cs.state.as_ref().unwrap().waiting.as_ref().unwrap().reason.as_deref(), Some("PodInitializing"), "{cs:?}");
        assert!(cs.container_id.is_none() && cs.last_state.as_ref().map(|l| l.terminated.is_none()).unwrap_or(true));
    }
    // No MountDevice progress for the new volume; the stale one backs off 500ms doubling (scaled).
    let log = kubelet_log(&sim, "worker-04");
    assert!(!log.iter().any(|l| l.contains("MountVolume.MountDevice succeeded") && l.contains(&pv)), "no MountDevice for {pv}");
    let seq = backoffs(&sim, "worker-04", "pvc-81b676e6");
    assert!(seq.len() >= 6, "backoff sequence: {seq:?}");
    assert_eq!(&seq[..6], &["5ms", "10ms", "20ms", "40ms", "80ms", "160ms"]);
    assert!(log.iter().any(|l| l.contains("GetDeviceMountRefs check failed for volume \"pvc-81b676e6\"") && l.contains("is still mounted by other references")));
    assert!(log.iter().any(|l| l.contains("context deadline exceeded") && l.contains("ws-stuck")));
    let events = common::events_for(&client, "ws-stuck").await;
    assert!(
        events.iter().any(|(r, m)| r == "FailedMount" && m.starts_with("Unable to attach or mount volumes: unmounted volumes=[workspace]") && m.ends_with("timed out waiting for the condition")),
        "{events:?}"
    );
    assert!(!events.iter().any(|(r, _)| r == "Started"), "no container ever started");
    // `talosctl mounts | grep longhorn` shows the stale mount.
    assert!(sim.mounts("worker-04").unwrap().iter().any(|m| m.contains("pvc-81b676e6") && m.ends_with("type ext4 (rw,relatime)")));

    // Runbook option 1: kubelet restart clears the kubelet-held stale mount and the queue.
    sim.node_op("worker-04", &NodeOp::KubeletRestart).unwrap();
    wait_running(&client, "ws-stuck", 20).await;
    let log = kubelet_log(&sim, "worker-04");
    assert!(log.iter().any(|l| l.contains("MountVolume.MountDevice succeeded") && l.contains(&pv)));
    assert!(!sim.mounts("worker-04").unwrap().iter().any(|m| m.contains("pvc-81b676e6")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn csi_held_mount_needs_the_plugin_pod_deleted() {
    let (_c, sim, client) = cluster().await;
    sim.node_op("worker-04", &stale_mount("pvc-dead", Holder::CsiPlugin)).unwrap();
    workspace(&client, "ws-csi", "worker-04").await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    // Option 1 is not enough when the plugin holds the device.
    sim.node_op("worker-04", &NodeOp::KubeletRestart).unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    assert_eq!(pods.get("ws-csi").await.unwrap().status.unwrap().phase.as_deref(), Some("Pending"));
    // Option 2: kubectl delete pod <csi-plugin-pod> -n longhorn-system.
    let system: Api<Pod> = Api::namespaced(client.clone(), "longhorn-system");
    let plugin = system
        .list(&ListParams::default().fields("spec.nodeName=worker-04"))
        .await
        .unwrap()
        .items
        .into_iter()
        .find(|p| p.name_any().starts_with("longhorn-csi-plugin-"))
        .expect("csi plugin pod on worker-04");
    system.delete(&plugin.name_any(), &DeleteParams::default()).await.unwrap();
    // The DaemonSet brings a new plugin pod, whose fresh process releases the device.
    let replacement = eventually(20, "replacement csi-plugin pod running", || {
        let system = system.clone();
        let old = plugin.name_any();
        async move {
            let l = system.list(&ListParams::default().fields("spec.nodeName=worker-04")).await.ok()?;
            l.items.into_iter().find(|p| p.name_any().starts_with("longhorn-csi-plugin-") && p.name_any() != old && p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
        }
    })
    .await;
    assert_ne!(replacement.name_any(), plugin.name_any());
    wait_running(&client, "ws-csi", 20).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dead_csi_plugin_fails_attach_until_healed() {
    let (_c, sim, client) = cluster().await;
    sim.node_op("worker-02", &NodeOp::CsiPluginDown).unwrap();
    let csinodes: Api<CSINode> = Api::all(client.clone());
    eventually(20, "driver gone from CSINode worker-02", || {
        let csinodes = csinodes.clone();
        async move { csinodes.get("worker-02").await.ok()?.spec.drivers.is_empty().then_some(()) }
    })
    .await;
    let system: Api<Pod> = Api::namespaced(client.clone(), "longhorn-system");
    eventually(20, "csi plugin pod CrashLoopBackOff", || {
        let system = system.clone();
        async move {
            let l = system.list(&ListParams::default().fields("spec.nodeName=worker-02")).await.ok()?;
            let p = l.items.into_iter().find(|p| p.name_any().starts_with("longhorn-csi-plugin-"))?;
            let cs = p.status?.container_statuses?;
            cs.iter().any(|c| c.name == "longhorn-csi-plugin" && c.state.as_ref().and_then(|s| s.waiting.as_ref()).and_then(|w| w.reason.as_deref()) == Some("CrashLoopBackOff") && c.restart_count > 0).then_some(())
        }
    })
    .await;
    workspace(&client, "ws-nocsi", "worker-02").await;
    let vas: Api<VolumeAttachment> = Api::all(client.clone());
    let err = eventually(20, "attach error", || {
        let vas = vas.clone();
        async move {
            vas.list(&ListParams::default()).await.ok()?.items.into_iter().find_map(|va| {
                (va.spec.node_name == "worker-02").then_some(())?;
                va.status?.attach_error?.message
            })
        }
    })
    .await;
    assert_eq!(err, "CSINode worker-02 does not contain driver driver.longhorn.io");
    let events = eventually(10, "FailedAttachVolume event", || {
        let client = client.clone();
        async move {
            let ev = common::events_for(&client, "ws-nocsi").await;
            ev.iter().any(|(r, _)| r == "FailedAttachVolume").then_some(ev)
        }
    })
    .await;
    assert!(events.iter().any(|(r, m)| r == "FailedAttachVolume" && m.contains("CSINode worker-02 does not contain driver driver.longhorn.io")));
    sim.node_op("worker-02", &NodeOp::CsiPluginUp).unwrap();
    wait_running(&client, "ws-nocsi", 30).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn saturated_workers_leave_pods_unsynced_until_stale_pods_are_deleted() {
    let (_c, sim, client) = cluster().await;
    sim.node_op("worker-03", &NodeOp::SaturateWorkers { count: None, namespace: "snapshots".into() }).unwrap();
    workspace(&client, "ws-starved", "worker-03").await;
    tokio::time::sleep(Duration::from_millis(2000)).await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let p = pods.get("ws-starved").await.unwrap();
    assert_eq!(condition(&p, "PodScheduled").as_deref(), Some("True"));
    let st = p.status.unwrap();
    // Never synced by the kubelet: no container statuses at all (the other pod shape).
    assert!(st.container_statuses.is_none() && st.init_container_statuses.is_none(), "{st:?}");
    assert_eq!(st.phase.as_deref(), Some("Pending"));
    // Option 3: list the node's non-running pods and force-delete them.
    let all: Api<Pod> = Api::all(client.clone());
    let stale = all.list(&ListParams::default().fields("spec.nodeName=worker-03,status.phase!=Running")).await.unwrap();
    let stale: Vec<Pod> = stale.items.into_iter().filter(|p| p.namespace().as_deref() == Some("snapshots")).collect();
    assert_eq!(stale.len(), 8);
    let snaps: Api<Pod> = Api::namespaced(client.clone(), "snapshots");
    for s in &stale {
        snaps.delete(&s.name_any(), &DeleteParams { grace_period_seconds: Some(0), ..Default::default() }).await.unwrap();
    }
    wait_running(&client, "ws-starved", 30).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reboot_stuck_on_hung_nfs_needs_a_power_cycle() {
    let (_c, sim, client) = cluster().await;
    workspace(&client, "ws-r", "worker-02").await;
    let before = wait_running(&client, "ws-r", 20).await;
    let nodes: Api<Node> = Api::all(client.clone());
    let boot = nodes.get("worker-02").await.unwrap().status.unwrap().node_info.unwrap().boot_id;
    sim.node_op("worker-02", &NodeOp::HungNfs).unwrap();
    let msg = sim.node_op("worker-02", &NodeOp::Reboot).unwrap();
    assert!(msg.contains("stuck in Rebooting"), "{msg}");
    let ready = |nodes: Api<Node>, want: &'static str| async move {
        let n = nodes.get("worker-02").await.ok()?;
        let c = n.status?.conditions?.into_iter().find(|c| c.type_ == "Ready")?;
        (c.status == want).then_some(())
    };
    eventually(20, "worker-02 NotReady (Unknown)", || ready(nodes.clone(), "Unknown")).await;
    // The lifecycle controller taints on a later pass than the one that marks the node Unknown.
    eventually(10, "unreachable NoExecute taint", || {
        let nodes = nodes.clone();
        async move { nodes.get("worker-02").await.ok()?.spec?.taints?.iter().any(|t| t.key == "node.kubernetes.io/unreachable" && t.effect == "NoExecute").then_some(()) }
    })
    .await;
    // Stuck: after several reboot durations it is still down.
    tokio::time::sleep(Duration::from_millis(2000)).await;
    assert!(ready(nodes.clone(), "Unknown").await.is_some());
    sim.node_op("worker-02", &NodeOp::PowerCycle).unwrap();
    eventually(20, "worker-02 Ready again", || ready(nodes.clone(), "True")).await;
    let n = nodes.get("worker-02").await.unwrap();
    assert_ne!(n.status.as_ref().unwrap().node_info.as_ref().unwrap().boot_id, boot, "a new boot id");
    eventually(10, "unreachable taints removed", || {
        let nodes = nodes.clone();
        async move { nodes.get("worker-02").await.ok()?.spec?.taints.map(|t| t.iter().all(|t| t.key != "node.kubernetes.io/unreachable")).unwrap_or(true).then_some(()) }
    })
    .await;
    let after = wait_running(&client, "ws-r", 30).await;
    let restarts = |p: &Pod| p.status.as_ref().unwrap().container_statuses.as_ref().unwrap()[0].restart_count;
    assert!(restarts(&after) > restarts(&before), "containers restarted after the reboot");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broken_prober_survives_kubelet_restart_but_not_reboot() {
    let (_c, sim, client) = cluster().await;
    sim.node_op("worker-01", &NodeOp::ProberBroken).unwrap();
    workspace(&client, "ws-probe", "worker-01").await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    eventually(20, "running but never ready", || {
        let pods = pods.clone();
        async move {
            let p = pods.get("ws-probe").await.ok()?;
            (p.status.as_ref()?.phase.as_deref() == Some("Running") && condition(&p, "Ready").as_deref() == Some("False")).then_some(())
        }
    })
    .await;
    sim.node_op("worker-01", &NodeOp::KubeletRestart).unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(condition(&pods.get("ws-probe").await.unwrap(), "Ready").as_deref(), Some("False"));
    sim.node_op("worker-01", &NodeOp::Reboot).unwrap();
    wait_running(&client, "ws-probe", 30).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubelet_stop_and_partition_make_the_node_unreachable() {
    let (_c, sim, client) = cluster().await;
    let nodes: Api<Node> = Api::all(client.clone());
    let ready = |want: &'static str, node: &'static str| {
        let nodes = nodes.clone();
        async move {
            let c = nodes.get(node).await.ok()?.status?.conditions?.into_iter().find(|c| c.type_ == "Ready")?;
            (c.status == want).then_some(c)
        }
    };
    sim.node_op("worker-03", &NodeOp::KubeletStop).unwrap();
    let c = eventually(20, "worker-03 Unknown", || ready("Unknown", "worker-03")).await;
    assert_eq!(c.reason.as_deref(), Some("NodeStatusUnknown"));
    assert_eq!(c.message.as_deref(), Some("Kubelet stopped posting node status."));
    sim.node_op("worker-03", &NodeOp::KubeletStart).unwrap();
    eventually(20, "worker-03 Ready", || ready("True", "worker-03")).await;
    sim.node_op("worker-01", &NodeOp::PartitionNetwork).unwrap();
    eventually(20, "worker-01 Unknown", || ready("Unknown", "worker-01")).await;
    sim.node_op("worker-01", &NodeOp::HealNetwork).unwrap();
    eventually(20, "worker-01 Ready", || ready("True", "worker-01")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scheduler_reports_unschedulable_and_pod_logs_work() {
    let (_c, _sim, client) = cluster().await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let big: Pod = serde_json::from_value(json!({
        "metadata": {"name": "too-big"},
        "spec": {"containers": [{"name": "c", "image": "busybox:1.36", "resources": {"requests": {"cpu": "64"}}}]}
    }))
    .unwrap();
    pods.create(&PostParams::default(), &big).await.unwrap();
    let p = eventually(20, "Unschedulable", || {
        let pods = pods.clone();
        async move {
            let p = pods.get("too-big").await.ok()?;
            let c = p.status?.conditions?.into_iter().find(|c| c.type_ == "PodScheduled")?;
            (c.reason.as_deref() == Some("Unschedulable")).then_some(c)
        }
    })
    .await;
    let msg = p.message.unwrap();
    assert!(msg.starts_with("0/5 nodes are available: ") && msg.contains("Insufficient cpu") && msg.contains("untolerated taint {node-role.kubernetes.io/control-plane: }"), "{msg}");
    let logged: Pod = serde_json::from_value(json!({
        "metadata": {"name": "logger", "annotations": {"sim.faultline.dev/log": "line one\nline two"}},
        "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}
    }))
    .unwrap();
    pods.create(&PostParams::default(), &logged).await.unwrap();
    wait_running(&client, "logger", 20).await;
    assert_eq!(pods.logs("logger", &Default::default()).await.unwrap(), "line one\nline two\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plugin_death_after_attach_blocks_teardown_with_driver_not_registered() {
    let (_c, sim, client) = cluster().await;
    workspace(&client, "ws-first", "worker-02").await;
    wait_running(&client, "ws-first", 20).await;
    sim.node_op("worker-02", &NodeOp::CsiPluginDown).unwrap();
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    pods.delete("ws-first", &DeleteParams { grace_period_seconds: Some(0), ..Default::default() }).await.unwrap();
    // The same claim on the same node: still attached, but the plugin is gone.
    let again: Pod = serde_json::from_value(json!({
        "metadata": {"name": "ws-second"},
        "spec": {"nodeSelector": {"kubernetes.io/hostname": "worker-02"}, "containers": [{"name": "workspace", "image": "python:3.12"}],
                 "volumes": [{"name": "workspace", "persistentVolumeClaim": {"claimName": "workspace-ws-first"}}]}
    }))
    .unwrap();
    pods.create(&PostParams::default(), &again).await.unwrap();
    // The old pod's volume cannot be torn down without the plugin, and the new pod waits behind
    // that volume's failed operation (same volume, any pod).
    let line = eventually(20, "driver-not-registered error in the kubelet log", || {
        let sim = sim.clone();
        async move {
            kubelet_log(&sim, "worker-02").into_iter().find(|l| l.contains("UnmountVolume.TearDown failed") && l.contains("driver name driver.longhorn.io not found in the list of registered CSI drivers"))
        }
    })
    .await;
    assert!(line.contains("nestedpendingoperations.go") && line.contains("No retries permitted until"), "{line}");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let st = pods.get("ws-second").await.unwrap().status.unwrap();
    assert_eq!(st.phase.as_deref(), Some("Pending"));
    assert!(kubelet_log(&sim, "worker-02").iter().any(|l| l.contains("Error syncing pod, skipping") && l.contains("ws-second")));
    sim.node_op("worker-02", &NodeOp::CsiPluginUp).unwrap();
    wait_running(&client, "ws-second", 30).await;
}
