//! The example of docs/library.md: a kube-rs `Controller` tested against node faults, in plain
//! `#[tokio::test]`s. The controller cordons a node when one of its pods stays scheduled but not
//! running for longer than a threshold (a stuck volume mount is the usual cause). Each test
//! injects a fault on worker-01, keeps worker-02 healthy, and checks that only worker-01 gets
//! cordoned, all in under 2 s of wall-clock time at 1/100 of real time.

use faultline_testing::{Cluster, Holder, LogSource, NodeOp, OtherVolumes};
use futures::StreamExt;
use k8s_openapi::api::core::v1::{Node, PersistentVolumeClaim, Pod};
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;
use kube::ResourceExt;
use serde_json::json;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

// ---- the controller under test -------------------------------------------------------------

struct Ctx {
    client: kube::Client,
    /// How long a scheduled pod may stay un-started before its node is cordoned.
    stuck_for: Duration,
    /// When each pod (by uid) was first seen scheduled and not running.
    first_seen: Mutex<HashMap<String, Instant>>,
}

fn stuck_on(pod: &Pod) -> Option<String> {
    let node = pod.spec.as_ref()?.node_name.clone()?;
    let phase = pod.status.as_ref()?.phase.as_deref();
    (phase == Some("Pending")).then_some(node)
}

async fn reconcile(pod: Arc<Pod>, ctx: Arc<Ctx>) -> Result<Action, kube::Error> {
    let uid = pod.uid().unwrap_or_default();
    let Some(node) = stuck_on(&pod) else {
        ctx.first_seen.lock().unwrap().remove(&uid);
        return Ok(Action::await_change());
    };
    let since = *ctx
        .first_seen
        .lock()
        .unwrap()
        .entry(uid)
        .or_insert_with(Instant::now);
    if since.elapsed() < ctx.stuck_for {
        return Ok(Action::requeue(ctx.stuck_for - since.elapsed()));
    }
    let nodes: Api<Node> = Api::all(ctx.client.clone());
    nodes
        .patch(
            &node,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"unschedulable": true}})),
        )
        .await?;
    Ok(Action::await_change())
}

fn error_policy(_pod: Arc<Pod>, _err: &kube::Error, _ctx: Arc<Ctx>) -> Action {
    Action::requeue(Duration::from_millis(50))
}

fn run_controller(client: kube::Client, stuck_for: Duration) -> tokio::task::JoinHandle<()> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let ctx = Arc::new(Ctx {
        client,
        stuck_for,
        first_seen: Mutex::new(HashMap::new()),
    });
    tokio::spawn(
        Controller::new(pods, watcher::Config::default().labels("app=demo"))
            .run(reconcile, error_policy, ctx)
            .for_each(|_| async {}),
    )
}

// ---- the tests -----------------------------------------------------------------------------

/// A pod with a Longhorn volume, pinned to `node`.
async fn pod_with_volume(client: &kube::Client, name: &str, node: &str) {
    let pvc: PersistentVolumeClaim = serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "longhorn", "resources": {"requests": {"storage": "1Gi"}}}
    }))
    .unwrap();
    Api::<PersistentVolumeClaim>::namespaced(client.clone(), "default")
        .create(&PostParams::default(), &pvc)
        .await
        .unwrap();
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"app": "demo"}},
        "spec": {
            "nodeSelector": {"kubernetes.io/hostname": node},
            "containers": [{"name": "app", "image": "busybox:1.36"}],
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": name}}]
        }
    }))
    .unwrap();
    Api::<Pod>::namespaced(client.clone(), "default")
        .create(&PostParams::default(), &pod)
        .await
        .unwrap();
}

fn cordoned(node: Option<&Node>) -> bool {
    node.and_then(|n| n.spec.as_ref()?.unschedulable)
        .unwrap_or(false)
}

/// Start a cluster with `fault` on worker-01, the controller, and a pod on each worker; return
/// once worker-01 is cordoned, after checking that worker-02's pod runs and its node does not.
async fn cordons_only_the_faulty_node(fault: NodeOp) -> Cluster {
    let cluster = Cluster::full()
        .workers(2)
        .time_scale(0.01)
        .seed(17)
        .start()
        .await
        .expect("cluster");
    let client = cluster.client();
    cluster.inject("worker-01", fault).expect("inject");
    let controller = run_controller(client.clone(), Duration::from_millis(400));
    let created = Instant::now();
    pod_with_volume(&client, "stuck", "worker-01").await;
    pod_with_volume(&client, "fine", "worker-02").await;

    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let running =
        |p: Option<&Pod>| p.and_then(|p| p.status.as_ref()?.phase.as_deref()) == Some("Running");
    cluster
        .wait_for_object(&pods, "fine", running, Duration::from_secs(1))
        .await
        .expect("the pod on the healthy node runs");
    let nodes: Api<Node> = Api::all(client.clone());
    let took = cluster
        .wait_for_object(&nodes, "worker-01", cordoned, Duration::from_millis(1500))
        .await
        .expect("worker-01 cordoned");
    // Not before the threshold: 400 ms of wall-clock time, 40 s on the cluster's nominal clock.
    let since_created = cluster.timing().to_nominal(created.elapsed());
    assert!(
        since_created >= Duration::from_secs(40),
        "cordoned {since_created:?} (nominal) after the pod was created; the wait took {:?}",
        took.wall
    );
    assert!(
        !running(pods.get_opt("stuck").await.unwrap().as_ref()),
        "the pod on the faulty node never started"
    );
    assert!(
        !cordoned(nodes.get_opt("worker-02").await.unwrap().as_ref()),
        "the healthy node stays schedulable"
    );
    controller.abort();
    cluster
}

#[tokio::test]
async fn dead_csi_plugin_gets_the_node_cordoned() {
    let t = Instant::now();
    let cluster = cordons_only_the_faulty_node(NodeOp::CsiPluginDown).await;
    // What the node says: calls to the crashing plugin are refused (its registration stays).
    let refused = cluster
        .wait_for_log(
            "worker-01",
            LogSource::Kubelet,
            Duration::from_millis(500),
            |l| l.contains("pod \"stuck\"") && l.contains("connect: connection refused"),
        )
        .await
        .expect("the kubelet's failed call to the CSI plugin");
    assert!(
        refused.value.contains("MountVolume.MountDevice failed"),
        "{}",
        refused.value
    );
    assert!(
        t.elapsed() < Duration::from_secs(2),
        "took {:?}",
        t.elapsed()
    );
}

#[tokio::test]
async fn stale_device_mount_gets_the_node_cordoned() {
    let t = Instant::now();
    // The incident as its RCA tells it: the node's volume operations wait behind the stale
    // device (by default, as upstream, only the stale volume waits and the new pod would run).
    let stale = NodeOp::StaleDeviceMount {
        pv: "pvc-81b676e6".into(),
        deleted_pv: true,
        holder: Holder::Kubelet,
        other_volumes: OtherVolumes::QueueBlocked,
    };
    let cluster = cordons_only_the_faulty_node(stale).await;
    let mounts = cluster.mounts("worker-01").unwrap();
    assert!(mounts.iter().any(|m| m.starts_with("/dev/longhorn/pvc-81b676e6 on ") && m.contains("/globalmount ")), "{mounts:#?}");
    assert!(
        t.elapsed() < Duration::from_secs(2),
        "took {:?}",
        t.elapsed()
    );
}
