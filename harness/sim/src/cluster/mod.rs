//! The simulated cluster around the API server: scheduler, node lifecycle,
//! Longhorn and its storage controllers, and one kubelet per node, plus the node primitives
//! (faults and remediations) that act on nodes from outside the API.

pub mod control;
pub mod faults;
pub mod node;
pub mod scheduler;
pub mod storage;

pub use node::{kubelet, nodeops, volumes};
pub use storage::longhorn;

use crate::apiserver::meta;
use crate::apiserver::resources::ResourceKey;
use crate::apiserver::status::{ApiError, ApiResult};
use crate::apiserver::store::{EventType, StoreEvent};
use crate::apiserver::{ApiServer, PodLogSource};
use crate::controllers::{nodelifecycle, podgc};
use crate::internal::Internal;
use crate::timing::Timing;
use kubelet::{Kubelet, PodEvent};
use node::state::{KubeletProcess, SimNode};
use parking_lot::Mutex;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

#[derive(Debug, Clone)]
pub struct ClusterOptions {
    pub timing: Timing,
    /// Install simulated Longhorn (namespace, DaemonSets, CSIDriver, StorageClass, controllers).
    pub longhorn: bool,
    /// The incident RCA's bounded pool of pod workers per kubelet (`Some(8)` reproduces its
    /// reading). Off by default: a kubelet runs one worker per pod.
    pub pod_worker_pool: Option<usize>,
}

impl Default for ClusterOptions {
    fn default() -> Self {
        ClusterOptions {
            timing: Timing::default(),
            longhorn: true,
            pod_worker_pool: None,
        }
    }
}

pub struct SimCluster {
    pub api: Arc<ApiServer>,
    pub timing: Timing,
    pub nodes: BTreeMap<String, Arc<SimNode>>,
    kubelets: BTreeMap<String, Arc<Mutex<Kubelet>>>,
    tasks: Mutex<Vec<JoinHandle<()>>>,
}

/// A node is the control plane when so named (kind's `<cluster>-control-plane` convention).
pub fn is_control_plane(name: &str) -> bool {
    name == "control-plane" || name.ends_with("-control-plane")
}

impl SimCluster {
    pub fn start(
        api: Arc<ApiServer>,
        node_names: &[String],
        opts: ClusterOptions,
    ) -> Arc<SimCluster> {
        // One clock: the API server's.
        let timing = Timing {
            clock: api.clock().clone(),
            ..opts.timing.clone()
        };
        let mut nodes = BTreeMap::new();
        let mut kubelets = BTreeMap::new();
        let mut senders = BTreeMap::new();
        for (i, name) in node_names.iter().enumerate() {
            let node = SimNode::new(name, i, is_control_plane(name));
            let (tx, rx) = mpsc::unbounded_channel();
            // A partitioned node's kubelet reaches nothing: no status, Lease or Event of its
            // own arrives while the partition lasts.
            let link = node.clone();
            let client = Internal::new(api.clone(), "kubelet")
                .with_well_typed_bodies()
                .with_reachability(Arc::new(move || !link.state.lock().faults.partitioned));
            let k = Kubelet::new(
                node.clone(),
                client,
                timing.clone(),
                rx,
                opts.pod_worker_pool,
            );
            nodes.insert(name.clone(), node);
            kubelets.insert(name.clone(), Arc::new(Mutex::new(k)));
            senders.insert(name.clone(), tx);
        }
        let cluster = Arc::new(SimCluster {
            api: api.clone(),
            timing: timing.clone(),
            nodes,
            kubelets,
            tasks: Mutex::new(vec![]),
        });
        api.set_log_source(Arc::new(ClusterLogs {
            cluster: Arc::downgrade(&cluster),
        }));
        let mut tasks = vec![];
        // Route pod events to the kubelet of the pod's node, before any kubelet registers.
        tasks.push(tokio::spawn(route_pods(api.clone(), senders)));
        for (name, k) in &cluster.kubelets {
            let node = cluster.nodes[name].clone();
            tasks.push(tokio::spawn(run_kubelet(k.clone(), node, timing.clone())));
            tasks.push(tokio::spawn(run_pleg(k.clone(), timing.clone())));
        }
        tasks.push(tokio::spawn(scheduler::run(
            Internal::new(api.clone(), "default-scheduler").with_well_typed_bodies(),
            timing.clone(),
        )));
        tasks.push(tokio::spawn(nodelifecycle::run(
            Internal::new(api.clone(), "kube-controller-manager"),
            timing.clone(),
        )));
        tasks.push(tokio::spawn(podgc::run(
            Internal::new(api.clone(), "kube-controller-manager"),
            timing.clone(),
        )));
        if opts.longhorn {
            longhorn::install(&Internal::new(api.clone(), "longhorn-manager"));
            tasks.push(tokio::spawn(longhorn::run(
                Internal::new(api.clone(), "csi-provisioner"),
                timing.clone(),
            )));
        }
        *cluster.tasks.lock() = tasks;
        cluster
    }

    /// A node by name or by InternalIP (`talosctl --nodes <NODE_IP>`).
    pub fn node(&self, name_or_ip: &str) -> ApiResult<&Arc<SimNode>> {
        self.nodes
            .get(name_or_ip)
            .or_else(|| self.nodes.values().find(|n| n.internal_ip() == name_or_ip))
            .ok_or_else(|| ApiError::not_found("", "nodes", name_or_ip))
    }

    pub fn kubelet(&self, name_or_ip: &str) -> ApiResult<&Arc<Mutex<Kubelet>>> {
        let name = self.node(name_or_ip)?.name.clone();
        self.kubelets
            .get(&name)
            .ok_or_else(|| ApiError::not_found("", "nodes", name_or_ip))
    }

    /// The node's mount table (`mount | grep longhorn` style lines), stale mounts included.
    pub fn mounts(&self, name: &str) -> ApiResult<Vec<String>> {
        // A machine that is off has no mounts (the kubelet learns that when it boots).
        if self.node(name)?.state.lock().kubelet == KubeletProcess::PoweredOff {
            return Ok(vec![]);
        }
        let mut lines = self.kubelet(name)?.lock().mount_lines();
        lines.extend(self.node(name)?.stale_mount_lines());
        lines.sort();
        lines.dedup();
        Ok(lines)
    }

    pub fn stop(&self) {
        for t in self.tasks.lock().drain(..) {
            t.abort();
        }
    }
}

impl Drop for SimCluster {
    fn drop(&mut self) {
        self.stop();
    }
}

async fn run_kubelet(k: Arc<Mutex<Kubelet>>, node: Arc<SimNode>, timing: Timing) {
    k.lock().register();
    let tick = timing
        .s(timing.volume_reconcile)
        .max(std::time::Duration::from_millis(10));
    let mut interval = tokio::time::interval(tick);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = interval.tick() => {}
            _ = node.wake.notified() => {}
        }
        // One pass of the sync loop: none while the cluster is frozen.
        let _pass = timing.clock.pass().await;
        if !k.lock().step() {
            return;
        }
    }
}

/// A kubelet's PLEG: it relists on its own ticker (pleg/generic.go runs `Relist` in a goroutine
/// of its own), whatever the sync loop does.
async fn run_pleg(k: Arc<Mutex<Kubelet>>, timing: Timing) {
    let period = timing
        .s(node::pleg::RELIST_PERIOD)
        .max(std::time::Duration::from_millis(10));
    let mut interval = tokio::time::interval(period);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        interval.tick().await;
        let _pass = timing.clock.pass().await;
        k.lock().relist_pleg();
    }
}

/// The kubelets' pod source: every pod bound to a node, sent to that node's kubelet (the
/// `spec.nodeName` field selector each real kubelet watches with).
async fn route_pods(
    api: Arc<ApiServer>,
    senders: BTreeMap<String, mpsc::UnboundedSender<PodEvent>>,
) {
    let mut rx = api.store.informer();
    let key = ResourceKey::new("", "pods");
    for p in api.store.list(&key, None, None, None, &|_| true).items {
        if let Some(tx) = meta::str_at(&p, "/spec/nodeName").and_then(|n| senders.get(n)) {
            let _ = tx.send(PodEvent::Upsert(p.clone()));
        }
    }
    let route = |ev: &StoreEvent| {
        if ev.key != key {
            return;
        }
        let node = meta::str_at(&ev.object, "/spec/nodeName").unwrap_or("");
        let Some(tx) = senders.get(node) else { return };
        let _ = match ev.event_type {
            EventType::Deleted => tx.send(PodEvent::Deleted(meta::uid(&ev.object).to_string())),
            _ => tx.send(PodEvent::Upsert(ev.object.clone())),
        };
    };
    while let Some(ev) = rx.recv().await {
        route(&ev);
        if rx.drain(route).is_err() {
            return;
        }
    }
}

/// `pods/log` served from the kubelet that runs the pod.
struct ClusterLogs {
    cluster: std::sync::Weak<SimCluster>,
}

impl PodLogSource for ClusterLogs {
    fn logs(&self, pod: &Value, container: &str, previous: bool) -> ApiResult<String> {
        let name = meta::name(pod);
        let Some(cluster) = self.cluster.upgrade() else {
            return Err(ApiError::service_unavailable("cluster stopped"));
        };
        let node = meta::str_at(pod, "/spec/nodeName").unwrap_or("");
        let Ok(k) = cluster.kubelet(node).cloned() else {
            return Err(ApiError::bad_request(format!(
                "container {:?} in pod {:?} is waiting to start: ContainerCreating",
                container, name
            )));
        };
        let logs = k.lock().container_logs(meta::uid(pod), container, previous);
        match logs {
            Some(Ok(text)) => Ok(text),
            Some(Err(msg)) => Err(ApiError::bad_request(msg)),
            None => Err(ApiError::bad_request(format!(
                "container {} is not valid for pod {}",
                container, name
            ))),
        }
    }
}
