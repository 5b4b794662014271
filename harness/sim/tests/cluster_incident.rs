//! The incident's symptoms and the runbook's remediations, observed only through the Kubernetes
//! API, events and node logs (what a person with kubectl and talosctl would see). Time runs at
//! 1/100 of real time: a 2m2s backoff takes 1.22 s, but every text says 2m2s, as a 1.35 node
//! would (the exact texts are compared with the upstream components' format strings).

mod common;

use common::{eventually, TestCluster};
use faultline_sim::cluster::nodeops::{Holder, NodeOp, OtherVolumes};
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
            let n = l
                .items
                .iter()
                .filter(|c| {
                    c.spec
                        .drivers
                        .iter()
                        .any(|d| d.name == "driver.longhorn.io")
                })
                .count();
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
    p.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == t)
        .map(|c| c.status.clone())
}

async fn wait_running(client: &kube::Client, name: &str, secs: u64) -> Pod {
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    eventually(secs, &format!("{name} Running and Ready"), || {
        let pods = pods.clone();
        async move {
            let p = pods.get(name).await.ok()?;
            (p.status.as_ref()?.phase.as_deref() == Some("Running")
                && condition(&p, "Ready").as_deref() == Some("True"))
            .then_some(p)
        }
    })
    .await
}

fn stale_mount(pv: &str, holder: Holder) -> NodeOp {
    stale_mount_with(pv, holder, OtherVolumes::Unaffected)
}

fn stale_mount_with(pv: &str, holder: Holder, other_volumes: OtherVolumes) -> NodeOp {
    NodeOp::StaleDeviceMount {
        pv: pv.into(),
        deleted_pv: true,
        holder,
        other_volumes,
    }
}

/// The klog header's time of day (`E1203 17:14:07.123456 ...`) in microseconds.
fn klog_micros(line: &str) -> i64 {
    let t = line.split_whitespace().nth(1).expect("klog time");
    let (hms, frac) = t.split_once('.').unwrap();
    let p: Vec<i64> = hms.split(':').map(|x| x.parse().unwrap()).collect();
    ((p[0] * 60 + p[1]) * 60 + p[2]) * 1_000_000 + frac.parse::<i64>().unwrap()
}

/// Go's duration text ("500ms", "1m4s", "2m2s") in microseconds.
fn go_micros(d: &str) -> i64 {
    let d = faultline_sim::timing::parse_duration(d)
        .unwrap_or_else(|| panic!("not a Go duration: {d:?}"));
    d.as_micros() as i64
}

fn kubelet_log(sim: &SimCluster, node: &str) -> Vec<String> {
    sim.nodes[node].kubelet_log.snapshot()
}

/// `durationBeforeRetry` values of the failed operation on `pv`, in order.
fn backoffs(sim: &SimCluster, node: &str, pv: &str) -> Vec<String> {
    kubelet_log(sim, node)
        .iter()
        .filter(|l| {
            l.contains("nestedpendingoperations.go")
                && l.contains(&format!("driver.longhorn.io^{pv} podName: nodeName:"))
        })
        .filter_map(|l| {
            l.split("durationBeforeRetry ")
                .nth(1)
                .and_then(|r| r.split(')').next())
                .map(String::from)
        })
        .collect()
}

/// The option `otherVolumes: pluginHangs` (not upstream's default: see
/// `a_stale_mount_holds_back_only_its_own_volume`): the node plugin's calls hang behind the stale
/// device, so another volume's MountDevice on the node runs to the CSI deadline.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_mount_with_hanging_plugin_calls_blocks_the_node_and_kubelet_restart_recovers() {
    let (_c, sim, client) = cluster().await;
    sim.node_op(
        "worker-04",
        &stale_mount_with("pvc-81b676e6", Holder::Kubelet, OtherVolumes::PluginHangs),
    )
    .unwrap();
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
            let attached = vas
                .list(&ListParams::default())
                .await
                .ok()?
                .items
                .into_iter()
                .any(|va| {
                    va.spec.source.persistent_volume_name.as_deref() == Some(pv.as_str())
                        && va.spec.node_name == "worker-04"
                        && va.status.map(|s| s.attached).unwrap_or(false)
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
    for cs in init
        .iter()
        .chain(st.container_statuses.clone().unwrap().iter())
    {
        assert_eq!(
            cs.state
                .as_ref()
                .unwrap()
                .waiting
                .as_ref()
                .unwrap()
                .reason
                .as_deref(),
            Some("PodInitializing"),
            "{cs:?}"
        );
        assert!(
            cs.container_id.is_none()
                && cs
                    .last_state
                    .as_ref()
                    .map(|l| l.terminated.is_none())
                    .unwrap_or(true)
        );
    }
    let log = kubelet_log(&sim, "worker-04");
    assert!(
        !log.iter()
            .any(|l| l.contains("MountVolume.MountDevice succeeded") && l.contains(&pv)),
        "no MountDevice for {pv}"
    );
    // The stale volume's UnmountDevice backs off with the real durations, whatever the scale.
    let seq = backoffs(&sim, "worker-04", "pvc-81b676e6");
    assert!(seq.len() >= 6, "backoff sequence: {seq:?}");
    assert_eq!(&seq[..6], &["500ms", "1s", "2s", "4s", "8s", "16s"]);
    // Each line's "No retries permitted until" is its own time plus its durationBeforeRetry on
    // the cluster's clock (the nominal duration times the scale): when the retry may run.
    for l in log
        .iter()
        .filter(|l| l.contains("nestedpendingoperations.go:348]"))
    {
        let until = l.split("No retries permitted until ").nth(1).unwrap();
        assert!(until.contains(" +0000 UTC m=+"), "{l}");
        let clock = until.split_whitespace().nth(1).unwrap();
        let until_us = klog_micros(&format!("E {}", &clock[..15]));
        let d = l
            .split("durationBeforeRetry ")
            .nth(1)
            .unwrap()
            .split(')')
            .next()
            .unwrap();
        let scaled = (go_micros(d) as f64 * SCALE).round().max(1_000.0) as i64;
        let diff = (until_us - klog_micros(l) - scaled).rem_euclid(86_400_000_000);
        assert!(
            !(2_000..=86_400_000_000 - 2_000).contains(&diff),
            "timestamps disagree with the duration by {diff} µs: {l}"
        );
    }
    // GetDeviceMountRefs names the OTHER reference (the deleted pod's mount), never the globalmount.
    let refs = log
        .iter()
        .find(|l| l.contains("GetDeviceMountRefs check failed for volume \"pvc-81b676e6\""))
        .expect("GetDeviceMountRefs line");
    let other = refs
        .split("is still mounted by other references [")
        .nth(1)
        .unwrap()
        .trim_end_matches(']');
    assert!(
        other.starts_with("/var/lib/kubelet/pods/")
            && other.ends_with("/volumes/kubernetes.io~csi/pvc-81b676e6/mount"),
        "{refs}"
    );
    assert!(!other.contains("globalmount"), "{refs}");
    assert!(refs.contains("Operation for \"{volumeName:kubernetes.io/csi/driver.longhorn.io^pvc-81b676e6 podName: nodeName:}\" failed."), "{refs}");
    // The reconciler's lines before each try.
    assert!(log.iter().any(|l| l.contains("reconciler_common.go") && l.contains("\"operationExecutor.UnmountDevice started for volume \\\"pvc-81b676e6\\\" (UniqueName: \\\"kubernetes.io/csi/driver.longhorn.io^pvc-81b676e6\\\") on node \\\"worker-04\\\" \"")));
    assert!(log.iter().any(|l| l.contains(&format!("\"operationExecutor.MountVolume started for volume \\\"{pv}\\\" (UniqueName: \\\"kubernetes.io/csi/driver.longhorn.io^{pv}\\\") pod \\\"ws-stuck\\\""))));
    // The new volume is not blocked by a node-wide lock: its own MountDevice runs, keyed with an
    // empty pod name, and (this option) the node plugin's call hangs behind the stale device
    // until the kubelet's 2 min CSI deadline.
    let mount_fail = log
        .iter()
        .find(|l| {
            l.contains(&format!(
                "{{volumeName:kubernetes.io/csi/driver.longhorn.io^{pv} podName: nodeName:}}"
            )) && l.contains("MountVolume.MountDevice failed")
        })
        .unwrap_or_else(|| panic!("MountDevice failure for {pv} in {log:#?}"));
    assert!(mount_fail.ends_with(&format!("MountVolume.MountDevice failed for volume \"{pv}\" (UniqueName: \"kubernetes.io/csi/driver.longhorn.io^{pv}\") pod \"ws-stuck\" (UID: \"{}\") : rpc error: code = DeadlineExceeded desc = context deadline exceeded", p.uid().unwrap())), "{mount_fail}");
    // podAttachAndMountTimeout: the pod worker's error line, and no event for it (1.35).
    let sync_err = log
        .iter()
        .find(|l| l.contains("Error syncing pod, skipping") && l.contains("ws-stuck"))
        .expect("pod worker error");
    assert!(sync_err.contains("pod_workers.go:1324] \"Error syncing pod, skipping\" err=\"unmounted volumes=[workspace], unattached volumes=[], failed to process volumes=[]: context deadline exceeded\" pod=\"default/ws-stuck\""), "{sync_err}");
    let events = common::events_for(&client, "ws-stuck").await;
    assert!(
        !events
            .iter()
            .any(|(_, m)| m.contains("timed out waiting for the condition")
                || m.starts_with("Unable to attach or mount volumes")),
        "{events:?}"
    );
    assert!(
        events.iter().any(|(r, m)| r == "FailedMount" && m == &format!("MountVolume.MountDevice failed for volume \"{pv}\" : rpc error: code = DeadlineExceeded desc = context deadline exceeded")),
        "{events:?}"
    );
    assert!(
        !events.iter().any(|(r, _)| r == "Started"),
        "no container ever started"
    );
    // volumesInUse lists what the node's pods want, mounted or not.
    let nodes: Api<Node> = Api::all(client.clone());
    let in_use = nodes
        .get("worker-04")
        .await
        .unwrap()
        .status
        .unwrap()
        .volumes_in_use
        .unwrap_or_default();
    assert!(
        in_use.contains(&format!("kubernetes.io/csi/driver.longhorn.io^{pv}")),
        "{in_use:?}"
    );
    // `talosctl mounts | grep longhorn` shows the stale mount and the reference that holds it.
    let mounts = sim.mounts("worker-04").unwrap();
    assert!(
        mounts.iter().any(|m| m.contains("pvc-81b676e6")
            && m.contains("globalmount")
            && m.ends_with("type ext4 (rw,relatime)")),
        "{mounts:?}"
    );
    assert!(mounts.iter().any(|m| m.contains(other)), "{mounts:?}");

    // Runbook option 1: kubelet restart clears the kubelet-held stale mount and the queue.
    sim.node_op("worker-04", &NodeOp::KubeletRestart).unwrap();
    wait_running(&client, "ws-stuck", 20).await;
    let log = kubelet_log(&sim, "worker-04");
    assert!(log
        .iter()
        .any(|l| l.contains("MountVolume.MountDevice succeeded") && l.contains(&pv)));
    assert!(!sim
        .mounts("worker-04")
        .unwrap()
        .iter()
        .any(|m| m.contains("pvc-81b676e6")));
}

/// Upstream's default (issue #33 item 7; observed on a real 1.35.4 kubelet, docs/kind.md): the
/// stale volume's UnmountDevice keeps failing on GetDeviceMountRefs and backing off, while another
/// volume's pod on the same node is staged, published and Running: nestedpendingoperations keys
/// operations per volume, and nothing hangs in the node plugin.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_mount_holds_back_only_its_own_volume() {
    let (_c, sim, client) = cluster().await;
    sim.node_op("worker-04", &stale_mount("pvc-81b676e6", Holder::Kubelet))
        .unwrap();
    let refused = |l: &String| {
        l.contains("GetDeviceMountRefs check failed for volume \"pvc-81b676e6\"")
            && l.contains("nestedpendingoperations.go:348]")
    };
    eventually(10, "the stale volume's UnmountDevice fails", || {
        let log = kubelet_log(&sim, "worker-04");
        async move { log.iter().any(refused).then_some(()) }
    })
    .await;
    workspace(&client, "ws-beside", "worker-04").await;
    // Well within the scaled 2 min CSI deadline (1.2 s) plus podAttachAndMountTimeout.
    let p = wait_running(&client, "ws-beside", 20).await;
    let pvcs: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), "default");
    let pv = pvcs
        .get("workspace-ws-beside")
        .await
        .unwrap()
        .spec
        .unwrap()
        .volume_name
        .unwrap();
    // The stale volume is still refused after the other volume has mounted: its UnmountDevice
    // retries (backoff doubling from 500ms, at 1/100: a few seconds cover it) and fails again.
    let mounted_at = |log: &[String]| {
        log.iter()
            .position(|l| l.contains("MountVolume.MountDevice succeeded") && l.contains(&pv))
    };
    let log = eventually(10, "a refusal after the other volume mounted", || {
        let log = kubelet_log(&sim, "worker-04");
        let pv = pv.clone();
        async move {
            let at = log
                .iter()
                .position(|l| l.contains("MountVolume.MountDevice succeeded") && l.contains(&pv))?;
            log[at..].iter().any(refused).then_some(log)
        }
    })
    .await;
    let at = mounted_at(&log).expect("MountDevice succeeded");
    assert!(log[..at].iter().any(refused), "refused before too");
    assert!(
        log.iter()
            .any(|l| l.contains("MountVolume.SetUp succeeded") && l.contains(&pv)),
        "SetUp of {pv}"
    );
    assert!(
        !log.iter().any(|l| l.contains("DeadlineExceeded")),
        "no call ran to the CSI deadline: {log:#?}"
    );
    let events = common::events_for(&client, "ws-beside").await;
    assert!(
        !events.iter().any(|(r, _)| r == "FailedMount"),
        "{events:?}"
    );
    assert!(events.iter().any(|(r, _)| r == "Started"), "{events:?}");
    assert_eq!(p.spec.unwrap().node_name.as_deref(), Some("worker-04"));
    // The stale device mount is still there, and still attached in the node's view.
    assert!(sim
        .mounts("worker-04")
        .unwrap()
        .iter()
        .any(|m| m.contains("pvc-81b676e6") && m.contains("globalmount")));
}

/// The plugin-held account (`otherVolumes: pluginHangs`, as
/// scenarios/remediation-csi-plugin-restart.yaml): the plugin's calls hang behind the device it
/// holds, so a new pod on the node stays Pending until a fresh plugin process releases it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn csi_held_mount_needs_the_plugin_pod_deleted() {
    let (_c, sim, client) = cluster().await;
    sim.node_op(
        "worker-04",
        &stale_mount_with("pvc-dead", Holder::CsiPlugin, OtherVolumes::PluginHangs),
    )
    .unwrap();
    workspace(&client, "ws-csi", "worker-04").await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    // Option 1 is not enough when the plugin holds the device.
    sim.node_op("worker-04", &NodeOp::KubeletRestart).unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    assert_eq!(
        pods.get("ws-csi")
            .await
            .unwrap()
            .status
            .unwrap()
            .phase
            .as_deref(),
        Some("Pending")
    );
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
    system
        .delete(&plugin.name_any(), &DeleteParams::default())
        .await
        .unwrap();
    // The DaemonSet brings a new plugin pod, whose fresh process releases the device.
    let replacement = eventually(20, "replacement csi-plugin pod running", || {
        let system = system.clone();
        let old = plugin.name_any();
        async move {
            let l = system
                .list(&ListParams::default().fields("spec.nodeName=worker-04"))
                .await
                .ok()?;
            l.items.into_iter().find(|p| {
                p.name_any().starts_with("longhorn-csi-plugin-")
                    && p.name_any() != old
                    && p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
            })
        }
    })
    .await;
    assert_ne!(replacement.name_any(), plugin.name_any());
    wait_running(&client, "ws-csi", 20).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_looping_plugin_stays_registered_and_mounts_fail_to_dial() {
    let (_c, sim, client) = cluster().await;
    sim.node_op("worker-02", &NodeOp::CsiPluginDown).unwrap();
    let system: Api<Pod> = Api::namespaced(client.clone(), "longhorn-system");
    eventually(20, "csi plugin pod CrashLoopBackOff", || {
        let system = system.clone();
        async move {
            let l = system
                .list(&ListParams::default().fields("spec.nodeName=worker-02"))
                .await
                .ok()?;
            let p = l
                .items
                .into_iter()
                .find(|p| p.name_any().starts_with("longhorn-csi-plugin-"))?;
            let cs = p.status?.container_statuses?;
            cs.iter()
                .any(|c| {
                    c.name == "longhorn-csi-plugin"
                        && c.state
                            .as_ref()
                            .and_then(|s| s.waiting.as_ref())
                            .and_then(|w| w.reason.as_deref())
                            == Some("CrashLoopBackOff")
                        && c.restart_count > 0
                })
                .then_some(())
        }
    })
    .await;
    workspace(&client, "ws-nocsi", "worker-02").await;
    // node-driver-registrar still runs, so the driver stays registered: the attach succeeds and
    // the kubelet's calls to the plugin fail to dial its socket.
    let events = eventually(20, "FailedMount dial error", || {
        let client = client.clone();
        async move {
            let ev = common::events_for(&client, "ws-nocsi").await;
            ev.iter().any(|(r, _)| r == "FailedMount").then_some(ev)
        }
    })
    .await;
    let (_, msg) = events.iter().find(|(r, _)| r == "FailedMount").unwrap();
    assert!(
        msg.starts_with("MountVolume.MountDevice failed for volume \"pvc-"),
        "{msg}"
    );
    assert!(msg.ends_with("\" : rpc error: code = Unavailable desc = connection error: desc = \"transport: Error while dialing: dial unix /var/lib/kubelet/plugins/driver.longhorn.io/csi.sock: connect: connection refused\""), "{msg}");
    let csinodes: Api<CSINode> = Api::all(client.clone());
    assert!(
        csinodes
            .get("worker-02")
            .await
            .unwrap()
            .spec
            .drivers
            .iter()
            .any(|d| d.name == "driver.longhorn.io"),
        "still registered"
    );
    assert!(
        !kubelet_log(&sim, "worker-02")
            .iter()
            .any(|l| l.contains("DeRegisterPlugin")),
        "no deregistration for a crash loop"
    );
    sim.node_op("worker-02", &NodeOp::CsiPluginUp).unwrap();
    wait_running(&client, "ws-nocsi", 30).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_the_plugin_pod_deregisters_the_driver_until_the_new_one_registers() {
    let (_c, sim, client) = cluster().await;
    let system: Api<Pod> = Api::namespaced(client.clone(), "longhorn-system");
    let plugin = system
        .list(&ListParams::default().fields("spec.nodeName=worker-01"))
        .await
        .unwrap()
        .items
        .into_iter()
        .find(|p| p.name_any().starts_with("longhorn-csi-plugin-"))
        .unwrap();
    system
        .delete(&plugin.name_any(), &DeleteParams::default())
        .await
        .unwrap();
    let line = eventually(20, "deregistration", || {
        let sim = sim.clone();
        async move {
            kubelet_log(&sim, "worker-01")
                .into_iter()
                .find(|l| l.contains("DeRegisterPlugin"))
        }
    })
    .await;
    assert!(line.ends_with("csi_plugin.go:271] kubernetes.io/csi: registrationHandler.DeRegisterPlugin request for plugin driver.longhorn.io, endpoint /var/lib/kubelet/plugins/driver.longhorn.io/csi.sock"), "{line}");
    // The log line comes before the CSINode write: wait for the new registration in the log,
    // then for the CSINode that follows it.
    eventually(20, "the new plugin pod's registration", || {
        let sim = sim.clone();
        async move {
            let log = kubelet_log(&sim, "worker-01");
            let dereg = log.iter().position(|l| l.contains("DeRegisterPlugin"))?;
            log[dereg..]
                .iter()
                .any(|l| l.contains("kubernetes.io/csi: Register new plugin with name: driver.longhorn.io at endpoint: /var/lib/kubelet/plugins/driver.longhorn.io/csi.sock"))
                .then_some(())
        }
    })
    .await;
    let csinodes: Api<CSINode> = Api::all(client.clone());
    eventually(20, "registered again by the new plugin pod", || {
        let csinodes = csinodes.clone();
        async move {
            csinodes
                .get("worker-01")
                .await
                .ok()?
                .spec
                .drivers
                .iter()
                .any(|d| d.name == "driver.longhorn.io")
                .then_some(())
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_pods_stall_pleg_so_new_pods_get_no_status_until_force_deleted() {
    let (_c, sim, client) = cluster().await;
    sim.node_op(
        "worker-03",
        &NodeOp::SaturateWorkers {
            count: None,
            namespace: "snapshots".into(),
        },
    )
    .unwrap();
    workspace(&client, "ws-starved", "worker-03").await;
    let nodes: Api<Node> = Api::all(client.clone());
    // PLEG relist hangs on the stale pods' sandboxes: after 3 min the runtime is unhealthy.
    let ready = eventually(20, "worker-03 Ready=False via PLEG", || {
        let nodes = nodes.clone();
        async move {
            let c = nodes
                .get("worker-03")
                .await
                .ok()?
                .status?
                .conditions?
                .into_iter()
                .find(|c| c.type_ == "Ready")?;
            (c.status == "False").then_some(c)
        }
    })
    .await;
    assert_eq!(ready.reason.as_deref(), Some("KubeletNotReady"));
    let msg = ready.message.unwrap();
    assert!(
        msg.starts_with("PLEG is not healthy: pleg was last seen active 3m")
            && msg.ends_with(" ago; threshold is 3m0s"),
        "{msg}"
    );
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let p = pods.get("ws-starved").await.unwrap();
    assert_eq!(condition(&p, "PodScheduled").as_deref(), Some("True"));
    let st = p.status.unwrap();
    // Never synced by the kubelet: no container statuses at all (the other pod shape).
    assert!(
        st.container_statuses.is_none() && st.init_container_statuses.is_none(),
        "{st:?}"
    );
    assert_eq!(st.phase.as_deref(), Some("Pending"));
    // The sync loop logs its skip on its own tick, which may come just after the status post.
    let skip = eventually(5, "sync loop skipping", || {
        let log = kubelet_log(&sim, "worker-03");
        async move {
            log.into_iter()
                .find(|l| l.contains("Skipping pod synchronization"))
        }
    })
    .await;
    let log = kubelet_log(&sim, "worker-03");
    assert!(skip.contains("] \"Skipping pod synchronization\" err=\"PLEG is not healthy: pleg was last seen active 3m") && skip.ends_with("; threshold is 3m0s\""), "{skip}");
    // The stale pods' V(3) line is below the kubelet's verbosity.
    assert!(!log
        .iter()
        .any(|l| l.contains("Pod is terminated, but some volumes have not been cleaned up")));
    // Option 3: list the node's non-running pods and force-delete them.
    let all: Api<Pod> = Api::all(client.clone());
    let stale = all
        .list(&ListParams::default().fields("spec.nodeName=worker-03,status.phase!=Running"))
        .await
        .unwrap();
    let stale: Vec<Pod> = stale
        .items
        .into_iter()
        .filter(|p| p.namespace().as_deref() == Some("snapshots"))
        .collect();
    assert_eq!(stale.len(), 8);
    let snaps: Api<Pod> = Api::namespaced(client.clone(), "snapshots");
    for s in &stale {
        snaps
            .delete(
                &s.name_any(),
                &DeleteParams {
                    grace_period_seconds: Some(0),
                    ..Default::default()
                },
            )
            .await
            .unwrap();
    }
    wait_running(&client, "ws-starved", 30).await;
}

/// The RCA's pool of 8 workers: the stale pods starve a new pod, not the node's Running pods
/// (Longhorn's DaemonSet and Deployment pods): with 7 stale pods one worker is left and a new
/// pod runs; the 8th starves the next one, without a PLEG stall; deleting them lets it run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rca_pool_option_starves_new_pods_without_pleg() {
    let mut opts = SimOptions::full(2, Timing::scaled(SCALE));
    opts.cluster.as_mut().unwrap().pod_worker_pool = Some(8);
    let c = TestCluster::start_with(opts).await;
    let sim = c.server.cluster.clone().unwrap();
    let client = c.client().await;
    // The stale pods of the incident were there long before: the node's own pods run first.
    let on_node: Api<Pod> = Api::all(client.clone());
    let lp = ListParams::default().fields("spec.nodeName=worker-02");
    eventually(15, "worker-02's own pods Running", || {
        let (on_node, lp) = (on_node.clone(), lp.clone());
        async move {
            let pods = on_node.list(&lp).await.ok()?.items;
            (!pods.is_empty()
                && pods
                    .iter()
                    .all(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")))
            .then_some(())
        }
    })
    .await;
    let saturate = |count| NodeOp::SaturateWorkers {
        count: Some(count),
        namespace: "snapshots".into(),
    };
    sim.node_op("worker-02", &saturate(7)).unwrap();
    workspace(&client, "ws-free", "worker-02").await;
    wait_running(&client, "ws-free", 30).await;
    sim.node_op("worker-02", &saturate(8)).unwrap();
    workspace(&client, "ws-pool", "worker-02").await;
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let st = pods.get("ws-pool").await.unwrap().status.unwrap();
    assert!(st.container_statuses.is_none(), "{st:?}");
    // The pool starves the pod without a PLEG stall: the node stays Ready.
    let nodes: Api<Node> = Api::all(client.clone());
    let n = nodes.get("worker-02").await.unwrap();
    assert!(n
        .status
        .unwrap()
        .conditions
        .unwrap()
        .iter()
        .any(|c| c.type_ == "Ready" && c.status == "True"));
    sim.node_op(
        "worker-02",
        &NodeOp::ClearStalePods {
            namespace: "snapshots".into(),
        },
    )
    .unwrap();
    wait_running(&client, "ws-pool", 30).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reboot_stuck_on_hung_nfs_needs_a_power_cycle() {
    let (_c, sim, client) = cluster().await;
    workspace(&client, "ws-r", "worker-02").await;
    let before = wait_running(&client, "ws-r", 20).await;
    let nodes: Api<Node> = Api::all(client.clone());
    let boot = nodes
        .get("worker-02")
        .await
        .unwrap()
        .status
        .unwrap()
        .node_info
        .unwrap()
        .boot_id;
    sim.node_op("worker-02", &NodeOp::HungNfs).unwrap();
    let msg = sim.node_op("worker-02", &NodeOp::Reboot).unwrap();
    assert!(msg.contains("stuck in Rebooting"), "{msg}");
    let ready = |nodes: Api<Node>, want: &'static str| async move {
        let n = nodes.get("worker-02").await.ok()?;
        let c = n
            .status?
            .conditions?
            .into_iter()
            .find(|c| c.type_ == "Ready")?;
        (c.status == want).then_some(())
    };
    eventually(20, "worker-02 NotReady (Unknown)", || {
        ready(nodes.clone(), "Unknown")
    })
    .await;
    // The lifecycle controller taints on a later pass than the one that marks the node Unknown.
    eventually(10, "unreachable NoExecute taint", || {
        let nodes = nodes.clone();
        async move {
            nodes
                .get("worker-02")
                .await
                .ok()?
                .spec?
                .taints?
                .iter()
                .any(|t| t.key == "node.kubernetes.io/unreachable" && t.effect == "NoExecute")
                .then_some(())
        }
    })
    .await;
    // Stuck: after several reboot durations it is still down.
    tokio::time::sleep(Duration::from_millis(2000)).await;
    assert!(ready(nodes.clone(), "Unknown").await.is_some());
    sim.node_op("worker-02", &NodeOp::PowerCycle).unwrap();
    eventually(20, "worker-02 Ready again", || ready(nodes.clone(), "True")).await;
    let n = nodes.get("worker-02").await.unwrap();
    assert_ne!(
        n.status
            .as_ref()
            .unwrap()
            .node_info
            .as_ref()
            .unwrap()
            .boot_id,
        boot,
        "a new boot id"
    );
    eventually(10, "unreachable taints removed", || {
        let nodes = nodes.clone();
        async move {
            nodes
                .get("worker-02")
                .await
                .ok()?
                .spec?
                .taints
                .map(|t| t.iter().all(|t| t.key != "node.kubernetes.io/unreachable"))
                .unwrap_or(true)
                .then_some(())
        }
    })
    .await;
    let after = wait_running(&client, "ws-r", 30).await;
    let restarts = |p: &Pod| {
        p.status
            .as_ref()
            .unwrap()
            .container_statuses
            .as_ref()
            .unwrap()[0]
            .restart_count
    };
    assert!(
        restarts(&after) > restarts(&before),
        "containers restarted after the reboot"
    );
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
            (p.status.as_ref()?.phase.as_deref() == Some("Running")
                && condition(&p, "Ready").as_deref() == Some("False"))
            .then_some(())
        }
    })
    .await;
    sim.node_op("worker-01", &NodeOp::KubeletRestart).unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(
        condition(&pods.get("ws-probe").await.unwrap(), "Ready").as_deref(),
        Some("False")
    );
    sim.node_op("worker-01", &NodeOp::Reboot).unwrap();
    wait_running(&client, "ws-probe", 30).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubelet_stop_and_partition_make_the_node_unreachable() {
    let (_c, sim, client) = cluster().await;
    workspace(&client, "ws-lost", "worker-03").await;
    wait_running(&client, "ws-lost", 20).await;
    let nodes: Api<Node> = Api::all(client.clone());
    let ready = |want: &'static str, node: &'static str| {
        let nodes = nodes.clone();
        async move {
            let c = nodes
                .get(node)
                .await
                .ok()?
                .status?
                .conditions?
                .into_iter()
                .find(|c| c.type_ == "Ready")?;
            (c.status == want).then_some(c)
        }
    };
    sim.node_op("worker-03", &NodeOp::KubeletStop).unwrap();
    let c = eventually(20, "worker-03 Unknown", || ready("Unknown", "worker-03")).await;
    assert_eq!(c.reason.as_deref(), Some("NodeStatusUnknown"));
    assert_eq!(
        c.message.as_deref(),
        Some("Kubelet stopped posting node status.")
    );
    let taints = eventually(10, "unreachable taints", || {
        let nodes = nodes.clone();
        async move {
            let t = nodes.get("worker-03").await.ok()?.spec?.taints?;
            (t.iter()
                .filter(|t| t.key == "node.kubernetes.io/unreachable")
                .count()
                == 2)
                .then_some(t)
        }
    })
    .await;
    assert!(taints
        .iter()
        .any(|t| t.key == "node.kubernetes.io/unreachable"
            && t.effect == "NoExecute"
            && t.time_added.is_some()));
    assert!(taints
        .iter()
        .any(|t| t.key == "node.kubernetes.io/unreachable"
            && t.effect == "NoSchedule"
            && t.time_added.is_none()));
    // The pod: Ready=False and a NodeNotReady event; after its 300 s toleration, DisruptionTarget
    // and a deletion it cannot finish (the kubelet is down).
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let evicted = eventually(20, "taint eviction", || {
        let pods = pods.clone();
        async move {
            pods.get("ws-lost")
                .await
                .ok()
                .filter(|p| p.metadata.deletion_timestamp.is_some())
        }
    })
    .await;
    let conds = evicted.status.unwrap().conditions.unwrap();
    assert!(conds
        .iter()
        .any(|c| c.type_ == "Ready" && c.status == "False"));
    let dt = conds
        .iter()
        .find(|c| c.type_ == "DisruptionTarget")
        .expect("DisruptionTarget before deletion");
    assert_eq!(
        (
            dt.status.as_str(),
            dt.reason.as_deref(),
            dt.message.as_deref()
        ),
        (
            "True",
            Some("DeletionByTaintManager"),
            Some("Taint manager: deleting due to NoExecute taint")
        )
    );
    let events = common::events_for(&client, "ws-lost").await;
    assert!(
        events
            .iter()
            .any(|(r, m)| r == "NodeNotReady" && m == "Node is not ready"),
        "{events:?}"
    );
    assert!(
        events
            .iter()
            .any(|(r, m)| r == "TaintManagerEviction"
                && m == "Marking for deletion Pod default/ws-lost"),
        "{events:?}"
    );
    sim.node_op("worker-03", &NodeOp::KubeletStart).unwrap();
    eventually(20, "worker-03 Ready", || ready("True", "worker-03")).await;
    eventually(10, "taints gone", || {
        let nodes = nodes.clone();
        async move {
            nodes
                .get("worker-03")
                .await
                .ok()?
                .spec?
                .taints
                .unwrap_or_default()
                .is_empty()
                .then_some(())
        }
    })
    .await;
    sim.node_op("worker-01", &NodeOp::PartitionNetwork).unwrap();
    eventually(20, "worker-01 Unknown", || ready("Unknown", "worker-01")).await;
    sim.node_op("worker-01", &NodeOp::HealNetwork).unwrap();
    eventually(20, "worker-01 Ready", || ready("True", "worker-01")).await;
}

/// A hung sync loop alone leaves the node Ready: the Lease and node status run in goroutines of
/// their own, and so does PLEG, whose relist drops the events the stuck sync loop does not take
/// (pleg/generic.go). What does not happen any more is pod work: a new pod gets no status.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_kubelet_keeps_its_lease_and_stays_ready() {
    let (_c, sim, client) = cluster().await;
    let leases: Api<k8s_openapi::api::coordination::v1::Lease> =
        Api::namespaced(client.clone(), "kube-node-lease");
    let renewed = leases
        .get("worker-02")
        .await
        .unwrap()
        .spec
        .unwrap()
        .renew_time;
    sim.node_op("worker-02", &NodeOp::KubeletHang).unwrap();
    workspace(&client, "ws-hung", "worker-02").await;
    // Four nominal minutes: past PLEG's 3-minute threshold and the lifecycle's 50 s grace.
    let nodes: Api<Node> = Api::all(client.clone());
    for _ in 0..24 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let node = nodes.get("worker-02").await.unwrap();
        let ready = node
            .status
            .unwrap()
            .conditions
            .unwrap()
            .into_iter()
            .find(|c| c.type_ == "Ready")
            .unwrap();
        assert_eq!(
            (ready.status.as_str(), ready.reason.as_deref()),
            ("True", Some("KubeletReady")),
            "{ready:?}"
        );
        assert!(node.spec.unwrap().taints.unwrap_or_default().is_empty());
    }
    assert_ne!(
        leases
            .get("worker-02")
            .await
            .unwrap()
            .spec
            .unwrap()
            .renew_time,
        renewed,
        "the Lease is renewed"
    );
    assert!(!kubelet_log(&sim, "worker-02")
        .iter()
        .any(|l| l.contains("PLEG is not healthy")));
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let p = pods.get("ws-hung").await.unwrap();
    assert!(
        p.status.and_then(|s| s.container_statuses).is_none(),
        "a hung sync loop syncs no pod"
    );
    sim.node_op("worker-02", &NodeOp::KubeletStart).unwrap();
    wait_running(&client, "ws-hung", 30).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cordon_adds_the_unschedulable_taint() {
    let (_c, _sim, client) = cluster().await;
    let nodes: Api<Node> = Api::all(client.clone());
    nodes
        .patch(
            "worker-01",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(json!({"spec": {"unschedulable": true}})),
        )
        .await
        .unwrap();
    eventually(10, "unschedulable taint", || {
        let nodes = nodes.clone();
        async move {
            let t = nodes.get("worker-01").await.ok()?.spec?.taints?;
            t.iter()
                .any(|t| {
                    t.key == "node.kubernetes.io/unschedulable"
                        && t.effect == "NoSchedule"
                        && t.time_added.is_none()
                })
                .then_some(())
        }
    })
    .await;
    nodes
        .patch(
            "worker-01",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(json!({"spec": {"unschedulable": null}})),
        )
        .await
        .unwrap();
    eventually(10, "taint removed on uncordon", || {
        let nodes = nodes.clone();
        async move {
            nodes
                .get("worker-01")
                .await
                .ok()?
                .spec?
                .taints
                .unwrap_or_default()
                .is_empty()
                .then_some(())
        }
    })
    .await;
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
            let c = p
                .status?
                .conditions?
                .into_iter()
                .find(|c| c.type_ == "PodScheduled")?;
            (c.reason.as_deref() == Some("Unschedulable")).then_some(c)
        }
    })
    .await;
    let msg = p.message.unwrap();
    assert_eq!(
        msg,
        "0/5 nodes are available: 1 node(s) had untolerated taint(s), 4 Insufficient cpu. no new claims to deallocate, preemption: 0/5 nodes are available: 1 Preemption is not helpful for scheduling, 4 No preemption victims found for incoming pod."
    );
    let logged: Pod = serde_json::from_value(json!({
        "metadata": {"name": "logger", "annotations": {"sim.faultline.dev/log": "line one\nline two"}},
        "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}
    }))
    .unwrap();
    pods.create(&PostParams::default(), &logged).await.unwrap();
    wait_running(&client, "logger", 20).await;
    assert_eq!(
        pods.logs("logger", &Default::default()).await.unwrap(),
        "line one\nline two\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plugin_crash_after_attach_blocks_teardown_with_dial_errors() {
    let (_c, sim, client) = cluster().await;
    workspace(&client, "ws-first", "worker-02").await;
    wait_running(&client, "ws-first", 20).await;
    sim.node_op("worker-02", &NodeOp::CsiPluginDown).unwrap();
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    pods.delete(
        "ws-first",
        &DeleteParams {
            grace_period_seconds: Some(0),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    // The same claim on the same node: still attached, but the plugin is gone.
    let again: Pod = serde_json::from_value(json!({
        "metadata": {"name": "ws-second"},
        "spec": {"nodeSelector": {"kubernetes.io/hostname": "worker-02"}, "containers": [{"name": "workspace", "image": "python:3.12"}],
                 "volumes": [{"name": "workspace", "persistentVolumeClaim": {"claimName": "workspace-ws-first"}}]}
    }))
    .unwrap();
    pods.create(&PostParams::default(), &again).await.unwrap();
    // The old pod's volume cannot be torn down while the plugin crash-loops (still registered,
    // its socket refuses), and the new pod waits behind that volume's operations (same volume).
    let line = eventually(20, "driver-not-registered error in the kubelet log", || {
        let sim = sim.clone();
        async move {
            kubelet_log(&sim, "worker-02").into_iter().find(|l| l.contains("UnmountVolume.TearDown failed") && l.contains("kubernetes.io/csi: Unmounter.TearDownAt failed: rpc error: code = Unavailable desc = connection error: desc = \"transport: Error while dialing: dial unix /var/lib/kubelet/plugins/driver.longhorn.io/csi.sock: connect: connection refused\""))
        }
    })
    .await;
    assert!(
        line.contains("nestedpendingoperations.go") && line.contains("No retries permitted until"),
        "{line}"
    );
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let st = pods.get("ws-second").await.unwrap().status.unwrap();
    assert_eq!(st.phase.as_deref(), Some("Pending"));
    assert!(kubelet_log(&sim, "worker-02")
        .iter()
        .any(|l| l.contains("Error syncing pod, skipping") && l.contains("ws-second")));
    sim.node_op("worker-02", &NodeOp::CsiPluginUp).unwrap();
    wait_running(&client, "ws-second", 30).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_loop_texts_are_1_35_and_nominal_at_any_scale() {
    let (_c, _sim, client) = cluster().await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let crasher: Pod = serde_json::from_value(json!({
        "metadata": {"name": "crasher", "annotations": {"sim.faultline.dev/crash-after": "1s"}},
        "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}
    }))
    .unwrap();
    let uid = pods
        .create(&PostParams::default(), &crasher)
        .await
        .unwrap()
        .uid()
        .unwrap();
    let waiting = eventually(20, "CrashLoopBackOff", || {
        let pods = pods.clone();
        async move {
            let p = pods.get("crasher").await.ok()?;
            let w = p
                .status?
                .container_statuses?
                .first()?
                .state
                .clone()?
                .waiting?;
            (w.reason.as_deref() == Some("CrashLoopBackOff")).then_some(w)
        }
    })
    .await;
    // The real first delay (10s), not the scaled 100ms.
    assert_eq!(
        waiting.message.as_deref(),
        Some(
            format!("back-off 10s restarting failed container=c pod=crasher_default({uid})")
                .as_str()
        )
    );
    let events = common::events_for(&client, "crasher").await;
    assert!(
        events.iter().any(|(r, m)| r == "BackOff"
            && m == &format!(
                "Back-off restarting failed container c in pod crasher_default({uid})"
            )),
        "{events:?}"
    );
    assert!(events.iter().any(|(r, m)| r == "Pulled" && m == "Successfully pulled image \"busybox:1.36\" in 1.5s (1.5s including waiting). Image size: 4269396 bytes."), "{events:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kubelet_that_is_down_writes_nothing() {
    let (_c, sim, client) = cluster().await;
    workspace(&client, "ws-down", "worker-02").await;
    wait_running(&client, "ws-down", 20).await;
    sim.node_op("worker-02", &NodeOp::HungNfs).unwrap();
    sim.node_op("worker-02", &NodeOp::Reboot).unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = kubelet_log(&sim, "worker-02");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    pods.delete(
        "ws-down",
        &DeleteParams {
            grace_period_seconds: Some(0),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert_eq!(
        kubelet_log(&sim, "worker-02"),
        before,
        "a node stuck in Rebooting logs nothing"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodes_are_addressed_by_internal_ip_too() {
    let (_c, sim, client) = cluster().await;
    let nodes: Api<Node> = Api::all(client.clone());
    let ip = nodes
        .get("worker-04")
        .await
        .unwrap()
        .status
        .unwrap()
        .addresses
        .unwrap()
        .into_iter()
        .find(|a| a.type_ == "InternalIP")
        .unwrap()
        .address;
    let msg = sim
        .node_op(&ip, &stale_mount("pvc-by-ip", Holder::Kubelet))
        .unwrap();
    assert_eq!(msg, "stale device mount of pvc-by-ip left on worker-04");
    assert!(sim
        .mounts(&ip)
        .unwrap()
        .iter()
        .any(|m| m.contains("pvc-by-ip")));
    assert!(sim.node_op("10.9.9.9", &NodeOp::KubeletRestart).is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_held_mount_injected_first_holds_from_its_injection() {
    // Injected before the plugin has ever started (the first step of a scenario).
    let c = TestCluster::start_with(SimOptions::full(2, Timing::scaled(SCALE))).await;
    let sim = c.server.cluster.clone().unwrap();
    sim.node_op("worker-02", &stale_mount("pvc-first", Holder::CsiPlugin))
        .unwrap();
    let client = c.client().await;
    let csinodes: Api<CSINode> = Api::all(client.clone());
    eventually(20, "plugin registered", || {
        let csinodes = csinodes.clone();
        async move {
            csinodes
                .get("worker-02")
                .await
                .ok()?
                .spec
                .drivers
                .iter()
                .any(|d| d.name == "driver.longhorn.io")
                .then_some(())
        }
    })
    .await;
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert!(
        sim.mounts("worker-02")
            .unwrap()
            .iter()
            .any(|m| m.contains("pvc-first")),
        "the plugin's first start does not release it"
    );
    assert!(kubelet_log(&sim, "worker-02")
        .iter()
        .any(|l| l.contains("GetDeviceMountRefs check failed for volume \"pvc-first\"")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_kubelet_log_keeps_the_runbook_lines_for_a_whole_saturated_scenario() {
    // The saturated-workers scenario's faults on one node (stale pods and a stale mount), for
    // longer than the scenario runs (it takes about 60 s at 1/20: 20 min nominal), then the
    // runbook's grep.
    let (_c, sim, client) = cluster().await;
    sim.node_op("worker-02", &stale_mount("pvc-keep", Holder::External))
        .unwrap();
    sim.node_op(
        "worker-02",
        &NodeOp::SaturateWorkers {
            count: None,
            namespace: "snapshots".into(),
        },
    )
    .unwrap();
    workspace(&client, "ws-long", "worker-02").await;
    tokio::time::sleep(Duration::from_secs(13)).await;
    let log = kubelet_log(&sim, "worker-02");
    let grep: Vec<&String> = log
        .iter()
        .filter(|l| {
            l.contains("nestedpendingoperations")
                || l.contains("GetDeviceMountRefs")
                || l.contains("context deadline exceeded")
        })
        .collect();
    assert!(
        log[0].contains("\"Kubelet version\""),
        "the log still starts at the kubelet's start: {}",
        log[0]
    );
    assert!(
        grep.len() >= 10
            && grep[0].contains("GetDeviceMountRefs check failed for volume \"pvc-keep\"")
            && grep[0].contains("(durationBeforeRetry 500ms)"),
        "{:?}",
        &grep[..grep.len().min(3)]
    );
    assert!(log.len() < 20_000, "{} lines", log.len());
}

/// "No retries permitted until <date> +0000 UTC m=+<seconds>": the time and Go's monotonic
/// reading in it.
fn retry_until(line: &str) -> (chrono::DateTime<chrono::Utc>, f64) {
    let until = line.split("No retries permitted until ").nth(1).unwrap();
    let (date, rest) = until.split_once(" +0000 UTC m=+").expect("Go time format");
    let mono = rest.split_whitespace().next().unwrap().parse().unwrap();
    let at = chrono::NaiveDateTime::parse_from_str(date, "%Y-%m-%d %H:%M:%S%.9f")
        .unwrap()
        .and_utc();
    (at, mono)
}

/// Issue #33 item 11: Go prints a `time.Now()` value with its monotonic reading, `m=+<seconds>`
/// since the process started (src/time/time.go `Time.String`), so a kubelet's readings count from
/// its own start and begin again near 0 after a restart (docs/kind.md: m=+55.9 about 56 s after
/// the real kubelet started). Exact: the printed time minus the reading is the process's start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn monotonic_readings_count_from_the_kubelet_process_start() {
    let (_c, sim, _client) = cluster().await;
    let node = "worker-02";
    sim.node_op(node, &stale_mount("pvc-mono", Holder::External))
        .unwrap();
    let refused =
        |l: &&String| l.contains("nestedpendingoperations.go:348]") && l.contains("pvc-mono");
    // Two nominal minutes and more of the cluster's life (1.2 s at 1/100) before the restart.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let log = kubelet_log(&sim, node);
    let first = log
        .iter()
        .find(refused)
        .expect("a refusal before the restart");
    let (at, mono) = retry_until(first);
    let start = sim
        .timing
        .clock
        .at(faultline_sim::timing::SimInstant::START);
    let off = (at - chrono::Duration::nanoseconds((mono * 1e9).round() as i64) - start)
        .num_microseconds()
        .unwrap();
    assert!(
        off.abs() <= 1,
        "the first kubelet started with the cluster: {off} µs: {first}"
    );
    let seen = log.len();
    sim.node_op(node, &NodeOp::KubeletRestart).unwrap();
    let line = eventually(10, "a refusal by the restarted kubelet", || {
        let log = kubelet_log(&sim, node);
        async move { log[seen..].iter().find(refused).cloned() }
    })
    .await;
    let started = sim.nodes[node].state.lock().started_at;
    let started = sim.timing.clock.at(started);
    let since_cluster_start = (started - start).num_milliseconds() as f64 / 1000.0;
    assert!(since_cluster_start > 1.5, "{since_cluster_start}");
    let (at, mono) = retry_until(&line);
    let off = (at - chrono::Duration::nanoseconds((mono * 1e9).round() as i64) - started)
        .num_microseconds()
        .unwrap();
    assert!(
        off.abs() <= 1,
        "counted from the new process's start: {off} µs: {line}"
    );
    // Small: its first failure plus 500ms (scaled) after the start, not the cluster's age.
    assert!(mono < 0.5, "m=+{mono} after the restart: {line}");
    assert!(line.contains("(durationBeforeRetry 500ms)"), "{line}");
}
