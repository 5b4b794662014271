//! The cluster's one clock (issue #33, items 8 and 14): every timestamp a client can see, the
//! API's and the node logs' alike, reads the same clock, so an Event and the kubelet line
//! behind it agree and order as they happened; and a frozen cluster (what `--pause-on-failure`
//! holds) writes nothing until it thaws, then goes on as if no time had passed.

mod common;

use chrono::{DateTime, Datelike, Utc};
use common::{eventually, TestCluster};
use faultline_sim::cluster::nodeops::NodeOp;
use faultline_sim::{SimCluster, SimOptions, Timing};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Event, Node, PersistentVolumeClaim, Pod};
use kube::api::{Api, ListParams, LogParams, PostParams};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

/// What every packaged scenario runs at.
const SCALE: f64 = 0.05;

async fn cluster() -> (TestCluster, Arc<SimCluster>, kube::Client) {
    let c = TestCluster::start_with(SimOptions::full(1, Timing::scaled(SCALE))).await;
    let sim = c.server.cluster.clone().expect("full cluster");
    let client = c.client().await;
    (c, sim, client)
}

async fn claim_and_pod(client: &kube::Client, name: &str, annotations: serde_json::Value) {
    let pvcs: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), "default");
    let pvc = serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "longhorn", "resources": {"requests": {"storage": "1Gi"}}}
    }))
    .unwrap();
    pvcs.create(&PostParams::default(), &pvc).await.unwrap();
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let pod = serde_json::from_value(json!({
        "metadata": {"name": name, "annotations": annotations},
        "spec": {
            "nodeSelector": {"kubernetes.io/hostname": "worker-01"},
            "containers": [{"name": "db", "image": "postgres:17"}],
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": name}}]
        }
    }))
    .unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
}

/// A klog header's time (`E0102 03:04:05.123456 ...`, no year: the year is `year`'s).
fn klog_time(line: &str, year: i32) -> DateTime<Utc> {
    let mut parts = line.split_whitespace();
    let md = &parts.next().expect("klog severity and date")[1..];
    let time = parts.next().expect("klog time");
    let text = format!("{year}-{}-{} {time}", &md[..2], &md[2..]);
    chrono::NaiveDateTime::parse_from_str(&text, "%Y-%m-%d %H:%M:%S%.6f")
        .unwrap_or_else(|e| panic!("{line}: {e}"))
        .and_utc()
}

async fn event(client: &kube::Client, pod: &str, reason: &str) -> Option<Event> {
    let events: Api<Event> = Api::namespaced(client.clone(), "default");
    let lp = ListParams::default().fields(&format!("involvedObject.name={pod}"));
    events
        .list(&lp)
        .await
        .ok()?
        .items
        .into_iter()
        .find(|e| e.reason.as_deref() == Some(reason))
}

fn seconds(d: chrono::Duration) -> f64 {
    d.num_milliseconds() as f64 / 1000.0
}

/// Item 8: a FailedMount Event and the kubelet line that failed the mount read one clock: the
/// Event's time is the line's time to its resolution (metav1.Time has whole seconds), and the
/// Started Event of the pod after the heal comes after every failure line. On separate clocks
/// (node logs 20 times faster than the API at 1/20) the line was half a minute ahead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_mount_event_and_its_kubelet_line_read_one_clock() {
    let (c, sim, client) = cluster().await;
    // Let the cluster run a while first: two clocks that started together drift apart.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    sim.node_op("worker-01", &NodeOp::CsiPluginDown).unwrap();
    claim_and_pod(
        &client,
        "db",
        json!({"sim.faultline.dev/log": "ready to accept connections\ncheckpoint complete"}),
    )
    .await;
    let failed = eventually(30, "a FailedMount event", || {
        let client = client.clone();
        async move {
            event(&client, "db", "FailedMount")
                .await
                .filter(|e| e.message.as_deref().unwrap_or("").contains("MountDevice"))
        }
    })
    .await;
    let first_event = failed.first_timestamp.clone().expect("firstTimestamp").0;
    let first_event = DateTime::<Utc>::from_timestamp(first_event.as_second(), 0).unwrap();
    let message = failed.message.clone().unwrap();
    let year = first_event.year();
    let failures: Vec<String> = sim.nodes["worker-01"]
        .kubelet_log
        .snapshot()
        .into_iter()
        .filter(|l| {
            l.contains("nestedpendingoperations.go:348]")
                && l.contains("Error: MountVolume.MountDevice failed")
        })
        .collect();
    let line = failures.first().expect("the failure's kubelet line");
    // The Event carries the line's error (the event text is the short form of its detail).
    assert!(
        message.starts_with("MountVolume.MountDevice failed for volume ")
            && line.contains("MountVolume.MountDevice failed for volume "),
        "{message} / {line}"
    );
    let off = seconds(klog_time(line, year) - first_event);
    assert!(
        (-0.1..1.0).contains(&off),
        "the first FailedMount Event ({first_event}) and its kubelet line disagree by {off} s: {line}"
    );
    // After the heal the pod starts: its Started Event comes after every failure line.
    sim.node_op("worker-01", &NodeOp::CsiPluginUp).unwrap();
    let started = eventually(30, "the Started event", || {
        let client = client.clone();
        async move { event(&client, "db", "Started").await }
    })
    .await;
    let started = started.first_timestamp.expect("firstTimestamp").0;
    let started = DateTime::<Utc>::from_timestamp(started.as_second() + 1, 0).unwrap();
    let failures: Vec<String> = sim.nodes["worker-01"]
        .kubelet_log
        .snapshot()
        .into_iter()
        .filter(|l| l.contains("Error: MountVolume.MountDevice failed"))
        .collect();
    for l in &failures {
        assert!(
            klog_time(l, year) < started,
            "a failure line after the pod's Started event ({started}): {l}"
        );
    }
    // The API's other times read the same clock: the node's Lease renewal and the pod's Ready
    // transition are not ahead of the cluster's now, nor far behind.
    let now = c.server.clock().now();
    let leases: Api<Lease> = Api::namespaced(client.clone(), "kube-node-lease");
    let renew = leases
        .get("worker-01")
        .await
        .unwrap()
        .spec
        .unwrap()
        .renew_time
        .unwrap()
        .0;
    let renew = DateTime::<Utc>::from_timestamp_micros(renew.as_microsecond()).unwrap();
    let lag = seconds(now - renew);
    assert!(
        (0.0..2.0).contains(&lag),
        "Lease renewed {lag} s before the clock's now"
    );
    let log_end = klog_time(
        sim.nodes["worker-01"]
            .kubelet_log
            .snapshot()
            .last()
            .unwrap(),
        year,
    );
    assert!(
        seconds(now - log_end) > -0.01,
        "the last kubelet line ({log_end}) is ahead of the clock ({now})"
    );
    // `kubectl logs --timestamps`: each line led by its time on the same clock (the container's
    // start); without it, the lines alone.
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let text = eventually(20, "the container's log", || {
        let pods = pods.clone();
        async move {
            let lp = LogParams {
                timestamps: true,
                ..Default::default()
            };
            pods.logs("db", &lp).await.ok().filter(|t| !t.is_empty())
        }
    })
    .await;
    let plain = pods.logs("db", &LogParams::default()).await.unwrap();
    assert_eq!(plain, "ready to accept connections\ncheckpoint complete\n");
    let first = text.lines().next().unwrap();
    let (at, rest) = first.split_once(' ').unwrap();
    assert_eq!(rest, "ready to accept connections", "{text}");
    let at = faultline_sim::timing::parse_time(at).unwrap_or_else(|| panic!("{first}"));
    let after_started = seconds(at - started);
    assert!(
        (-1.5..=0.5).contains(&after_started),
        "the log line's time {at} is not the container's start ({started} rounded up)"
    );
}

/// Item 14: a frozen cluster is still: for 2.5 s of wall time nothing is written (no Lease
/// renewal, no retried mount, no Event: the store's resourceVersion stands), its clock stands,
/// and a pod a user creates meanwhile is stored but not scheduled. Thawed, it goes on where it
/// stopped: the pod is scheduled, the node stays Ready (the frozen span, longer than the node
/// monitor grace period of 2.5 s here, does not count against its Lease), and the failing mount
/// retries again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_cluster_writes_nothing_until_it_thaws() {
    let (c, sim, client) = cluster().await;
    sim.node_op("worker-01", &NodeOp::CsiPluginDown).unwrap();
    claim_and_pod(&client, "db", json!({})).await;
    let failing = |sim: &SimCluster| {
        sim.nodes["worker-01"]
            .kubelet_log
            .snapshot()
            .iter()
            .filter(|l| l.contains("Error: MountVolume.MountDevice failed"))
            .count()
    };
    let sim2 = sim.clone();
    eventually(30, "the mount failing", || {
        let n = failing(&sim2);
        async move { (n >= 2).then_some(()) }
    })
    .await;
    c.server.freeze().await;
    let (rv, now, failures) = (
        c.server.api.store.current_rv(),
        c.server.clock().now(),
        failing(&sim),
    );
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let before = pods.get("db").await.unwrap();
    // A user's write is stored; nothing acts on it while frozen.
    let late: Pod = serde_json::from_value(json!({
        "metadata": {"name": "late"},
        "spec": {"containers": [{"name": "app", "image": "busybox"}]}
    }))
    .unwrap();
    pods.create(&PostParams::default(), &late).await.unwrap();
    let rv = rv + 1;
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(
        c.server.api.store.current_rv(),
        rv,
        "no write while frozen but the user's"
    );
    assert_eq!(c.server.clock().now(), now, "the clock stands");
    assert_eq!(failing(&sim), failures, "no mount retried while frozen");
    let after = pods.get("db").await.unwrap();
    assert_eq!(
        after.metadata.resource_version, before.metadata.resource_version,
        "the failing pod as it was"
    );
    let late = pods.get("late").await.unwrap();
    assert!(
        late.spec.unwrap().node_name.is_none(),
        "not scheduled while frozen"
    );
    c.server.thaw();
    eventually(10, "the late pod scheduled after the thaw", || {
        let pods = pods.clone();
        async move {
            pods.get("late")
                .await
                .ok()?
                .spec?
                .node_name
                .is_some()
                .then_some(())
        }
    })
    .await;
    let sim2 = sim.clone();
    eventually(10, "the mount retried after the thaw", || {
        let n = failing(&sim2);
        async move { (n > failures).then_some(()) }
    })
    .await;
    // Two node monitor grace periods after the thaw, the node has stayed Ready throughout.
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let nodes: Api<Node> = Api::all(client.clone());
    let node = nodes.get("worker-01").await.unwrap();
    let ready = node
        .status
        .unwrap()
        .conditions
        .unwrap()
        .into_iter()
        .find(|c| c.type_ == "Ready")
        .unwrap();
    assert_eq!(ready.status, "True", "{ready:?}");
    assert!(
        event(&client, "worker-01", "NodeNotReady").await.is_none(),
        "the freeze did not make the node's Lease stale"
    );
}
