//! The catalogue's node-off and driver-unregistered faults on the simulated cluster (issue #33,
//! item 6): a node powered off and left off (its pods evicted but Terminating, their volumes
//! attached, until the out-of-service taint), and a CSI driver whose registration the kubelet
//! lost while its plugin runs (CSINode, the 1.35 texts of every volume operation, the heal).

mod common;

use common::{events_for, eventually, TestCluster};
use faultline_faults::{NodeOperation, NodeTarget, Phase};
use faultline_sim::cluster::faults::{effect, Effect};
use faultline_sim::cluster::nodeops::NodeOp;
use faultline_sim::{SimCluster, SimOptions, Timing};
use k8s_openapi::api::core::v1::{Node, PersistentVolumeClaim, Pod};
use k8s_openapi::api::storage::v1::{CSINode, VolumeAttachment};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

const SCALE: f64 = 0.01;
const DRIVER: &str = "driver.longhorn.io";
const NOT_REGISTERED: &str =
    "driver name driver.longhorn.io not found in the list of registered CSI drivers";

async fn cluster(workers: usize) -> (TestCluster, Arc<SimCluster>, kube::Client) {
    let c = TestCluster::start_with(SimOptions::full(workers, Timing::scaled(SCALE))).await;
    let sim = c.server.cluster.clone().expect("full cluster");
    let client = c.client().await;
    (c, sim, client)
}

/// The sim's primitives of a catalogue operation, as the runner's sim providers apply them.
fn apply(sim: &SimCluster, op: &NodeOperation, phase: Phase) {
    let Effect::Node(prims) = effect(op, phase, None) else {
        panic!("{} is a node operation", op.key())
    };
    assert!(!prims.is_empty(), "{} does something", op.key());
    for p in prims {
        sim.node_op(op.node().unwrap(), &p).unwrap();
    }
}

async fn pod_where(
    client: &kube::Client,
    name: &str,
    secs: u64,
    what: &str,
    f: impl Fn(&Pod) -> bool,
) -> Pod {
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    eventually(secs, &format!("{name}: {what}"), || {
        let pods = pods.clone();
        let ok = &f;
        async move {
            let p = pods.get(name).await.ok()?;
            ok(&p).then_some(p)
        }
    })
    .await
}

fn phase(p: &Pod) -> Option<&str> {
    p.status.as_ref()?.phase.as_deref()
}

fn node_of(p: &Pod) -> Option<&str> {
    p.spec.as_ref()?.node_name.as_deref()
}

async fn ready_status(client: &kube::Client, node: &str) -> Option<String> {
    let nodes: Api<Node> = Api::all(client.clone());
    let n = nodes.get(node).await.ok()?;
    n.status?
        .conditions?
        .into_iter()
        .find(|c| c.type_ == "Ready")
        .map(|c| c.status)
}

async fn wait_ready(client: &kube::Client, node: &str, status: &str) {
    eventually(20, &format!("{node} Ready={status}"), || async move {
        (ready_status(client, node).await.as_deref() == Some(status)).then_some(())
    })
    .await;
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

async fn cordon(client: &kube::Client, node: &str, on: bool) {
    let nodes: Api<Node> = Api::all(client.clone());
    nodes
        .patch(
            node,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"unschedulable": on}})),
        )
        .await
        .unwrap();
}

/// nodePowerOff: nothing runs on the node, it goes Unknown, its pod is evicted and stays
/// Terminating with its volume attached; the out-of-service taint moves it; powered on, the
/// node boots clean.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_powered_off_node_keeps_its_pod_until_it_is_taken_out_of_service() {
    let (_c, sim, client) = cluster(2).await;
    cordon(&client, "worker-02", true).await;
    let sets: Api<k8s_openapi::api::apps::v1::StatefulSet> =
        Api::namespaced(client.clone(), "default");
    let set = serde_json::from_value(json!({
        "metadata": {"name": "db"},
        "spec": {
            "replicas": 1, "serviceName": "db",
            "selector": {"matchLabels": {"app": "db"}},
            "template": {"metadata": {"labels": {"app": "db"}}, "spec": {
                "containers": [{"name": "db", "image": "postgres:17"}],
                "tolerations": [{"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 10}]}},
            "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "longhorn", "resources": {"requests": {"storage": "1Gi"}}}}]
        }
    }))
    .unwrap();
    sets.create(&PostParams::default(), &set).await.unwrap();
    let first = pod_where(&client, "db-0", 30, "Running on worker-01", |p| {
        phase(p) == Some("Running") && node_of(p) == Some("worker-01")
    })
    .await;
    cordon(&client, "worker-02", false).await;
    let pv = bound_pv(&client, "data-db-0").await;
    assert!(
        sim.mounts("worker-01")
            .unwrap()
            .iter()
            .any(|l| l.contains(&pv)),
        "{:?}",
        sim.mounts("worker-01")
    );

    let off = NodeOperation::NodePowerOff(NodeTarget {
        node: "worker-01".into(),
    });
    apply(&sim, &off, Phase::Inject);
    // Off: no mounts, nothing to start or restart.
    assert_eq!(sim.mounts("worker-01").unwrap(), Vec::<String>::new());
    let e = sim.node_op("worker-01", &NodeOp::KubeletStart).unwrap_err();
    assert!(e.code == 409 && e.message.contains("powered off"), "{e:?}");
    tokio::time::sleep(Duration::from_millis(50)).await;
    let logged = sim.nodes["worker-01"].kubelet_log.snapshot().len();

    wait_ready(&client, "worker-01", "Unknown").await;
    let evicted = pod_where(&client, "db-0", 10, "evicted", |p| {
        p.metadata.deletion_timestamp.is_some()
    })
    .await;
    assert_eq!(evicted.metadata.uid, first.metadata.uid);
    // Two and a half nominal minutes on: Terminating, attached to worker-01, not replaced.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let still = pods.get("db-0").await.unwrap();
    assert_eq!(still.metadata.uid, first.metadata.uid);
    assert!(still.metadata.deletion_timestamp.is_some());
    assert_eq!(
        attachments(&client, &pv).await,
        vec![("worker-01".into(), true)]
    );
    assert_eq!(
        sim.nodes["worker-01"].kubelet_log.snapshot().len(),
        logged,
        "a node that is off logs nothing"
    );

    // Taken out of service: force-deleted, detached at once, replaced on worker-02.
    let nodes: Api<Node> = Api::all(client.clone());
    let mut node = nodes.get("worker-01").await.unwrap();
    let spec = node.spec.get_or_insert_with(Default::default);
    spec.taints
        .get_or_insert_with(Vec::new)
        .push(k8s_openapi::api::core::v1::Taint {
            key: "node.kubernetes.io/out-of-service".into(),
            value: Some("nodeshutdown".into()),
            effect: "NoExecute".into(),
            time_added: None,
        });
    nodes
        .replace("worker-01", &PostParams::default(), &node)
        .await
        .unwrap();
    let replacement = pod_where(&client, "db-0", 5, "Running on worker-02", |p| {
        phase(p) == Some("Running") && node_of(p) == Some("worker-02")
    })
    .await;
    assert_ne!(replacement.metadata.uid, first.metadata.uid);
    assert_eq!(
        attachments(&client, &pv).await,
        vec![("worker-02".into(), true)]
    );

    // The heal powers it on: it boots as after a power cycle.
    apply(&sim, &off, Phase::Heal);
    wait_ready(&client, "worker-01", "True").await;
    let log = sim.nodes["worker-01"].kubelet_log.snapshot();
    assert!(
        log[logged..]
            .iter()
            .any(|l| l.ends_with("\"Starting kubelet main sync loop\"")),
        "{:?}",
        &log[logged..]
    );
    let rebooted = eventually(5, "Rebooted event", || {
        let client = client.clone();
        async move {
            events_for(&client, "worker-01")
                .await
                .into_iter()
                .find(|(r, _)| r == "Rebooted")
        }
    })
    .await;
    assert!(rebooted
        .1
        .starts_with("Node worker-01 has been rebooted, boot id: "));
    assert!(
        !sim.mounts("worker-01")
            .unwrap()
            .iter()
            .any(|l| l.contains(&pv)),
        "{:?}",
        sim.mounts("worker-01")
    );
    // Powering on a node that is on does nothing.
    apply(&sim, &off, Phase::Heal);
}

async fn claim(client: &kube::Client, name: &str) {
    let pvcs: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), "default");
    let pvc = serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "longhorn", "resources": {"requests": {"storage": "1Gi"}}}
    }))
    .unwrap();
    pvcs.create(&PostParams::default(), &pvc).await.unwrap();
}

/// A pod using `claim`, bound to `node` by name (no scheduler).
async fn pod_on(client: &kube::Client, name: &str, claim: &str, node: &str) {
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let pod = serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "nodeName": node,
            "containers": [{"name": "db", "image": "postgres:17"}],
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]
        }
    }))
    .unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
}

async fn csinode_drivers(client: &kube::Client, node: &str) -> Vec<String> {
    let nodes: Api<CSINode> = Api::all(client.clone());
    nodes
        .get(node)
        .await
        .map(|n| n.spec.drivers.into_iter().map(|d| d.name).collect())
        .unwrap_or_default()
}

async fn failed_mount(client: &kube::Client, pod: &str, wanted: &str) {
    eventually(10, &format!("FailedMount {wanted}"), || async move {
        events_for(client, pod)
            .await
            .iter()
            .any(|(r, m)| r == "FailedMount" && m == wanted)
            .then_some(())
    })
    .await;
}

/// csiDriverUnregistered: the plugin runs, but the kubelet has no driver: CSINode loses it,
/// TearDown, SetUp and MountDevice fail with 1.35's texts, and the heal registers it again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unregistered_csi_driver_fails_every_volume_call_with_1_35s_texts() {
    let (_c, sim, client) = cluster(1).await;
    claim(&client, "data").await;
    pod_on(&client, "a", "data", "worker-01").await;
    pod_where(&client, "a", 30, "Running", |p| phase(p) == Some("Running")).await;
    let pv = bound_pv(&client, "data").await;
    assert_eq!(csinode_drivers(&client, "worker-01").await, [DRIVER]);

    let op = NodeOperation::CsiDriverUnregistered(faultline_faults::CsiDriverUnregistered {
        node: "worker-01".into(),
        driver: DRIVER.into(),
    });
    apply(&sim, &op, Phase::Inject);
    eventually(5, "CSINode without the driver", || {
        let client = client.clone();
        async move {
            csinode_drivers(&client, "worker-01")
                .await
                .is_empty()
                .then_some(())
        }
    })
    .await;
    let log = sim.nodes["worker-01"].kubelet_log.snapshot();
    assert!(
        log.iter().any(|l| l.ends_with(
            "kubernetes.io/csi: registrationHandler.DeRegisterPlugin request for plugin driver.longhorn.io, endpoint /var/lib/kubelet/plugins/driver.longhorn.io/csi.sock"
        )),
        "{log:?}"
    );
    // The plugin itself still runs (unlike csiPluginDown's crash loop).
    let pods: Api<Pod> = Api::namespaced(client.clone(), "longhorn-system");
    let plugin = pods
        .list(&ListParams::default().labels("app=longhorn-csi-plugin"))
        .await
        .unwrap()
        .items;
    assert!(
        plugin.iter().all(|p| phase(p) == Some("Running")
            && p.status
                .as_ref()
                .unwrap()
                .container_statuses
                .as_ref()
                .unwrap()
                .iter()
                .all(|c| c.ready)),
        "{plugin:?}"
    );
    // Only the driver the sim runs can be unregistered.
    let e = sim
        .node_op(
            "worker-01",
            &NodeOp::UnregisterCsiDriver {
                driver: "ebs.csi.aws.com".into(),
            },
        )
        .unwrap_err();
    assert!(
        e.code == 404 && e.message.contains("driver.longhorn.io only"),
        "{e:?}"
    );

    // TearDown of the old pod fails (Unmounter), SetUp for a new pod of the volume fails.
    let default_pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let uid = default_pods.get("a").await.unwrap().metadata.uid.unwrap();
    default_pods
        .delete("a", &DeleteParams::default().grace_period(0))
        .await
        .unwrap();
    let teardown = format!(
        "kubernetes.io/csi: Unmounter.TearDownAt failed to get CSI client: {NOT_REGISTERED}"
    );
    eventually(5, "TearDown failure", || {
        let (sim, teardown, uid) = (sim.clone(), teardown.clone(), uid.clone());
        async move {
            sim.nodes["worker-01"]
                .kubelet_log
                .snapshot()
                .iter()
                .any(|l| {
                    l.contains("Error: UnmountVolume.TearDown failed for volume")
                        && l.contains(&uid)
                        && l.ends_with(&teardown)
                })
                .then_some(())
        }
    })
    .await;
    pod_on(&client, "b", "data", "worker-01").await;
    failed_mount(
        &client,
        "b",
        &format!("MountVolume.SetUp failed for volume \"{pv}\" : kubernetes.io/csi: mounter.SetUpAt failed to get CSI client: {NOT_REGISTERED}"),
    )
    .await;

    // Healed: registered again, the CSINode entry is back, the pod runs.
    apply(&sim, &op, Phase::Heal);
    eventually(5, "CSINode with the driver", || {
        let client = client.clone();
        async move { (csinode_drivers(&client, "worker-01").await == [DRIVER]).then_some(()) }
    })
    .await;
    pod_where(&client, "b", 10, "Running", |p| phase(p) == Some("Running")).await;

    // MountDevice: the socket goes while the kubelet is down, so the restarted kubelet never
    // registers the driver and the CSINode keeps its entry: the volume attaches, and
    // MountDevice finds no driver.
    claim(&client, "more").await;
    let pv2 = bound_pv(&client, "more").await;
    sim.node_op("worker-01", &NodeOp::KubeletStop).unwrap();
    apply(&sim, &op, Phase::Inject);
    pod_on(&client, "c", "more", "worker-01").await;
    eventually(10, "attached while the kubelet is down", || {
        let (client, pv2) = (client.clone(), pv2.clone());
        async move {
            (attachments(&client, &pv2).await == [("worker-01".to_string(), true)]).then_some(())
        }
    })
    .await;
    sim.node_op("worker-01", &NodeOp::KubeletStart).unwrap();
    failed_mount(
        &client,
        "c",
        &format!("MountVolume.MountDevice failed for volume \"{pv2}\" : kubernetes.io/csi: attacher.MountDevice failed to create newCsiDriverClient: {NOT_REGISTERED}"),
    )
    .await;
    assert_eq!(csinode_drivers(&client, "worker-01").await, [DRIVER]);
    apply(&sim, &op, Phase::Heal);
    pod_where(&client, "c", 10, "Running", |p| phase(p) == Some("Running")).await;
}
