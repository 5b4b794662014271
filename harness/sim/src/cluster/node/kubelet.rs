//! One simulated kubelet: pod workers, PLEG, the volume manager (through
//! `volumes::PendingOperations`), the kuberuntime manager over the node's container runtime
//! (`runtime`, scriptable by pod annotation), the status manager, CSI plugin registration, Lease heartbeats and node status, and
//! a kubelet log in klog format (at `--v=2`; nominal timestamps and durations).
//!
//! Everything runs in one task per node that ticks at the volume reconciler period, so the
//! order of effects is deterministic for a given sequence of API events.

use super::log::KubeletLog;
pub use super::runtime::script;
use super::runtime::{container_status, lines, step_container, Container, ContainerState, Step};
use super::state::{KubeletProcess, MountHolder, NodeFaults, ResetKind, SimNode};
use super::volumemanager::operation_executor::{CsiDriver, OperationContext};
use super::volumemanager::populator::PodInfo;
use super::volumemanager::{VolumeManager, VolumesNotReady};
use super::volumes::{CSI_SOCKET, DRIVER};
use crate::apiserver::meta;
use crate::events::{EventKind, EventRecorder};
use crate::internal::Internal;
use crate::timing::{self, go_duration, Timing};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// How many stale pods `saturateWorkers` leaves by default (the incident's backlog).
pub const DEFAULT_STALE_PODS: usize = 8;

#[derive(Debug, Clone)]
pub enum PodEvent {
    Upsert(Arc<Value>),
    Deleted(String),
}

struct PodRuntime {
    uid: String,
    ns: String,
    name: String,
    pod: Arc<Value>,
    /// Holds one of the bounded pool's workers (only with `pod_worker_pool`).
    slot: bool,
    synced: bool,
    /// When the pod worker's current wait for volumes started; a time in the future is a
    /// requeue after a failed sync.
    wait_mark: Option<Instant>,
    init: Vec<Container>,
    main: Vec<Container>,
    phase: String,
    started_time: Option<String>,
    pod_ip: Option<String>,
    dirty: bool,
    killing: bool,
    stopped_at: Option<Instant>,
    stale: bool,
    /// A settled pod (every container running, nothing timed pending) is not synced again
    /// before this instant unless something changes: its pod object, the node's faults, a
    /// restart. Upstream pod workers are event-driven the same way, with a periodic resync.
    quiet_until: Option<Instant>,
}

pub struct Kubelet {
    node: Arc<SimNode>,
    client: Internal,
    recorder: EventRecorder,
    timing: Timing,
    rx: mpsc::UnboundedReceiver<PodEvent>,
    pods: BTreeMap<String, PodRuntime>,
    volume_manager: VolumeManager,
    klog: KubeletLog,
    csi_registered: bool,
    images: HashSet<String>,
    next_lease: Instant,
    next_ip: u32,
    /// The incident RCA's bounded pool of pod workers, off (None) by default: upstream runs
    /// one goroutine per pod.
    pod_worker_pool: Option<usize>,
    volumes_in_use: Vec<String>,
    /// The last PLEG relist that completed (the pod cache's timestamp).
    pleg_active: Instant,
    /// When the sync loop next logs "Skipping pod synchronization", and its backoff (nominal).
    skip_log: (Instant, Duration),
    /// The CSI plugin processes (container ids) running at the last tick: one that exits
    /// releases what it held.
    plugin_processes: HashSet<String>,
    /// The node's faults at the last tick: a change wakes every settled pod.
    faults_seen: NodeFaults,
}

impl PodRuntime {
    /// A deleted pod's containers have all been stopped by its pod worker (what the volume
    /// manager's populator asks before it lets the pod's volumes go).
    fn containers_stopped(&self) -> bool {
        self.killing
            && !self
                .init
                .iter()
                .chain(self.main.iter())
                .any(|c| matches!(c.state, ContainerState::Running { .. }))
    }
}

impl Kubelet {
    pub fn new(
        node: Arc<SimNode>,
        client: Internal,
        timing: Timing,
        rx: mpsc::UnboundedReceiver<PodEvent>,
        pod_worker_pool: Option<usize>,
    ) -> Self {
        let recorder = EventRecorder::new(client.clone(), "kubelet", Some(&node.name));
        let klog = KubeletLog::new(node.clone(), timing.clone());
        let volume_manager = VolumeManager::new(timing.clone());
        Kubelet {
            node,
            client,
            recorder,
            timing,
            rx,
            pods: BTreeMap::new(),
            volume_manager,
            klog,
            csi_registered: false,
            images: HashSet::new(),
            next_lease: Instant::now(),
            next_ip: 2,
            pod_worker_pool,
            volumes_in_use: vec![],
            pleg_active: Instant::now(),
            skip_log: (Instant::now(), Duration::ZERO),
            plugin_processes: HashSet::new(),
            faults_seen: NodeFaults::default(),
        }
    }

    fn log(&self, sev: char, file: &str, msg: &str) {
        self.klog.log(sev, file, msg);
    }

    fn vlog(&self, level: u8, file: &str, msg: &str) {
        self.klog.v(level, file, msg);
    }

    fn csi_log(&self, file: &str, msg: &str) {
        self.klog.csi(file, msg);
    }

    /// Drain pod events and run one tick. Returns false when the event source is gone. A kubelet
    /// that is down reads and writes nothing (its events wait, as a watch would be re-listed);
    /// a hung one only keeps its Lease, node status and PLEG going (goroutines of their own
    /// upstream: pleg/generic.go relists on its own ticker and drops events the stuck sync loop
    /// does not take, so its health does not depend on the sync loop). A partitioned one runs on
    /// what it knows: its pod watch delivers nothing until the partition heals (the events wait
    /// as above) and its writes do not arrive (`Internal::with_reachability`).
    pub fn step(&mut self) -> bool {
        match self.process_state() {
            KubeletProcess::Running => {}
            KubeletProcess::Hung => {
                self.pleg_relist();
                self.heartbeat();
                return true;
            }
            _ => return true,
        }
        if self.node.state.lock().faults.partitioned {
            self.tick();
            return true;
        }
        loop {
            match self.rx.try_recv() {
                Ok(ev) => self.on_event(ev),
                Err(mpsc::error::TryRecvError::Empty) => break,
                Err(mpsc::error::TryRecvError::Disconnected) => return false,
            }
        }
        self.tick();
        true
    }

    /// Register the node (Node, Lease, CSINode), as a kubelet does when it first starts.
    pub fn register(&mut self) {
        self.log(
            'I',
            "server.go:487",
            &format!(
                "\"Kubelet version\" kubeletVersion=\"{}\"",
                crate::nodes::KUBELET_VERSION
            ),
        );
        let mut node_obj =
            crate::nodes::node_object(&self.node.name, self.node.index, self.node.control_plane);
        node_obj["status"]["nodeInfo"]["bootID"] = json!(self.node.state.lock().boot_id.clone());
        if self.client.get("", "nodes", "", &self.node.name).is_none() {
            let _ = self.client.create("", "nodes", "", node_obj);
            self.log(
                'I',
                "kubelet_node_status.go:75",
                &format!(
                    "\"Attempting to register node\" node=\"{}\"",
                    self.node.name
                ),
            );
            self.log(
                'I',
                "kubelet_node_status.go:78",
                &format!(
                    "\"Successfully registered node\" node=\"{}\"",
                    self.node.name
                ),
            );
        }
        if self
            .client
            .get("storage.k8s.io", "csinodes", "", &self.node.name)
            .is_none()
        {
            let node_uid = self
                .client
                .get("", "nodes", "", &self.node.name)
                .map(|n| meta::uid(&n).to_string())
                .unwrap_or_default();
            let _ = self.client.create(
                "storage.k8s.io",
                "csinodes",
                "",
                json!({"apiVersion": "storage.k8s.io/v1", "kind": "CSINode",
                       "metadata": {"name": self.node.name, "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": self.node.name, "uid": node_uid}]},
                       "spec": {"drivers": []}}),
            );
        }
        self.log(
            'I',
            "kubelet.go:2468",
            "\"Starting kubelet main sync loop\"",
        );
        self.renew_lease(true);
    }

    fn on_event(&mut self, ev: PodEvent) {
        match ev {
            PodEvent::Deleted(uid) => {
                if let Some(p) = self.pods.remove(&uid) {
                    self.log(
                        'I',
                        "kubelet.go:2434",
                        &format!(
                            "\"SyncLoop REMOVE\" source=\"api\" pods=[\"{}/{}\"]",
                            p.ns, p.name
                        ),
                    );
                }
            }
            PodEvent::Upsert(obj) => {
                let uid = meta::uid(&obj).to_string();
                match self.pods.get_mut(&uid) {
                    Some(p) => {
                        // The kubelet already holds what its own status writes returned: a
                        // version no newer than that (its own write coming back, or one the
                        // pod source delivers late) is not news. Going back to it would make
                        // the status manager re-post what the apiserver already has.
                        if rv_of(&obj) <= rv_of(&p.pod) {
                            return;
                        }
                        // Someone else (the node lifecycle controller) may have changed the
                        // status: the status manager reconciles it back to the kubelet's view
                        // (and skips the write when that view is already there).
                        let foreign = obj.get("status") != p.pod.get("status");
                        if p.synced && foreign {
                            p.dirty = true;
                        }
                        p.pod = obj;
                        p.quiet_until = None;
                    }
                    None => {
                        let rt = self.new_pod(obj);
                        self.log(
                            'I',
                            "kubelet.go:2418",
                            &format!(
                                "\"SyncLoop ADD\" source=\"api\" pods=[\"{}/{}\"]",
                                rt.ns, rt.name
                            ),
                        );
                        self.pods.insert(uid, rt);
                    }
                }
            }
        }
    }

    fn new_pod(&self, obj: Arc<Value>) -> PodRuntime {
        let ctrs = |field: &str| -> Vec<Container> {
            obj.pointer(&format!("/spec/{}", field))
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .map(|c| Container {
                            name: c.get("name").and_then(Value::as_str).unwrap_or("").into(),
                            image: c.get("image").and_then(Value::as_str).unwrap_or("").into(),
                            state: ContainerState::Waiting(String::new(), None),
                            last: None,
                            ready: false,
                            started_once: false,
                            restarts: 0,
                            next: None,
                            step: Step::Idle,
                            crash_backoff: self.timing.crash_backoff_initial,
                            logs: vec![],
                            prev_logs: vec![],
                            container_id: String::new(),
                        })
                        .collect()
                })
                .unwrap_or_default()
        };
        let stale = obj
            .pointer(&format!(
                "/metadata/annotations/{}",
                script::STALE_VOLUMES.replace('/', "~1")
            ))
            .and_then(Value::as_str)
            == Some("true");
        PodRuntime {
            uid: meta::uid(&obj).into(),
            ns: meta::namespace(&obj).into(),
            name: meta::name(&obj).into(),
            init: ctrs("initContainers"),
            main: ctrs("containers"),
            pod: obj,
            slot: false,
            synced: false,
            wait_mark: None,
            phase: "Pending".into(),
            started_time: None,
            pod_ip: None,
            dirty: false,
            killing: false,
            stopped_at: None,
            stale,
            quiet_until: None,
        }
    }

    fn annotation<'a>(pod: &'a Value, key: &str) -> Option<&'a str> {
        pod.pointer("/metadata/annotations")
            .and_then(|a| a.get(key))
            .and_then(Value::as_str)
    }

    /// Handle process state changes and resets; returns the process state for this tick.
    fn process_state(&mut self) -> KubeletProcess {
        let now = Instant::now();
        let (process, reset) = {
            let mut st = self.node.state.lock();
            if let KubeletProcess::Restarting { until } = st.kubelet {
                if now >= until {
                    st.kubelet = KubeletProcess::Running;
                    st.pid += 1;
                    st.started_at = now;
                }
            }
            if let KubeletProcess::Rebooting { until: Some(until) } = st.kubelet {
                if now >= until {
                    st.kubelet = KubeletProcess::Running;
                    st.pid += 1;
                    st.started_at = now;
                    st.boot_id = uuid::Uuid::new_v4().to_string();
                }
            }
            (
                st.kubelet.clone(),
                if st.kubelet == KubeletProcess::Running {
                    st.reset.take()
                } else {
                    None
                },
            )
        };
        if let Some(kind) = reset {
            self.reset(kind);
        }
        process
    }

    /// A kubelet that starts again: empty operation executor and pod workers; what is mounted
    /// stays mounted (reconstructed from disk). A reboot also loses every mount and container.
    fn reset(&mut self, kind: ResetKind) {
        let pid = self.node.state.lock().pid;
        self.klog.set_pid(pid);
        self.volume_manager.restart(kind);
        self.csi_registered = false;
        {
            let mut st = self.node.state.lock();
            match kind {
                // Reconstruction finds the orphaned device mount of a PV it owns and cleans it up.
                ResetKind::KubeletRestart => st
                    .faults
                    .stale_mounts
                    .retain(|m| m.holder != MountHolder::Kubelet),
                ResetKind::Reboot => {
                    st.faults.stale_mounts.clear();
                    st.faults.prober_broken = false;
                }
            }
        }
        self.log(
            'I',
            "server.go:487",
            &format!(
                "\"Kubelet version\" kubeletVersion=\"{}\"",
                crate::nodes::KUBELET_VERSION
            ),
        );
        self.log(
            'I',
            "kubelet.go:2468",
            "\"Starting kubelet main sync loop\"",
        );
        if kind == ResetKind::Reboot {
            self.images.clear();
        }
        self.pleg_active = Instant::now();
        self.wake_all();
        for p in self.pods.values_mut() {
            p.slot = false;
            p.wait_mark = None;
            if kind == ResetKind::Reboot {
                // Every container died with the node; they start again (restartCount + 1).
                for c in p.init.iter_mut().chain(p.main.iter_mut()) {
                    if let ContainerState::Running { ref started, .. } = c.state {
                        c.last = Some(ContainerState::Terminated {
                            exit: 255,
                            reason: "Unknown".into(),
                            started: started.clone(),
                            finished: timing::now_rfc3339(),
                        });
                        c.restarts += 1;
                    }
                    if !matches!(c.state, ContainerState::Terminated { ref reason, .. } if reason == "Completed")
                    {
                        c.state = ContainerState::Waiting("ContainerCreating".into(), None);
                        c.step = Step::Idle;
                        c.ready = false;
                    }
                }
                p.pod_ip = None;
                p.dirty = true;
            }
        }
        self.renew_lease(true);
    }

    fn tick(&mut self) {
        let (partitioned, changed) = {
            let st = self.node.state.lock();
            let changed = st.faults != self.faults_seen;
            if changed {
                self.faults_seen = st.faults.clone();
            }
            (st.faults.partitioned, changed)
        };
        if changed {
            self.wake_all();
        }
        self.heartbeat();
        self.sync_csi_registration(partitioned);
        self.reconcile_volumes();
        if !self.pleg_relist() {
            self.log_skipping_sync();
        } else {
            let uids: Vec<String> = self.pods.keys().cloned().collect();
            for uid in &uids {
                self.sync_pod(uid);
            }
        }
        if !partitioned {
            self.post_statuses();
            self.post_volumes_in_use();
        }
        self.track_plugin_process();
    }

    /// Sync every pod at the next tick, settled or not.
    fn wake_all(&mut self) {
        for p in self.pods.values_mut() {
            p.quiet_until = None;
        }
    }

    // ----- PLEG -----------------------------------------------------------------------------

    /// Does the PLEG relist hang? It asks the runtime for every pod's sandbox status; the
    /// runtime cannot answer for stale pods whose sandboxes it cannot tear down (their volumes
    /// never unmount). Pod workers wait for a pod cache newer than their last sync, which only a
    /// relist brings, so no pod syncs and new pods get no status at all. (With the RCA's
    /// bounded pool, stale pods hold workers instead.)
    fn pleg_relist_blocked(&self) -> bool {
        self.pod_worker_pool.is_none() && self.pods.values().any(|p| p.stale)
    }

    /// One PLEG relist: it completes (and keeps PLEG healthy) unless the runtime hangs on it.
    /// Returns whether it completed.
    fn pleg_relist(&mut self) -> bool {
        if self.pleg_relist_blocked() {
            return false;
        }
        self.pleg_active = Instant::now();
        true
    }

    /// The runtime's health as the node's Ready condition reports it: `None` when healthy.
    fn pleg_unhealthy(&self) -> Option<String> {
        let since = self.timing.to_nominal(self.pleg_active.elapsed());
        (since > self.timing.pleg_relist_threshold).then(|| {
            format!(
                "PLEG is not healthy: pleg was last seen active {} ago; threshold is {}",
                go_duration(since),
                go_duration(self.timing.pleg_relist_threshold)
            )
        })
    }

    /// The sync loop skips every iteration while the runtime is unhealthy (backoff 100ms
    /// doubling to 5s between the error lines).
    fn log_skipping_sync(&mut self) {
        let Some(err) = self.pleg_unhealthy() else {
            return;
        };
        let now = Instant::now();
        if now < self.skip_log.0 {
            return;
        }
        self.log(
            'E',
            "kubelet.go:2471",
            &format!("\"Skipping pod synchronization\" err=\"{}\"", err),
        );
        let next = if self.skip_log.1.is_zero() {
            Duration::from_millis(100)
        } else {
            (self.skip_log.1 * 2).min(Duration::from_secs(5))
        };
        self.skip_log = (now + self.timing.s(next), next);
    }

    // ----- node heartbeat -------------------------------------------------------------------

    /// The node lease controller and node status updater: both run every 10 s (nominal) in
    /// goroutines of their own, so a kubelet whose sync loop hangs keeps both going.
    fn heartbeat(&mut self) {
        if Instant::now() >= self.next_lease {
            self.renew_lease(false);
        }
    }

    fn renew_lease(&mut self, force_ready: bool) {
        self.next_lease = Instant::now() + self.timing.s(self.timing.lease_renew);
        if self.node.state.lock().faults.partitioned {
            return;
        }
        let now = timing::rfc3339_micro(chrono::Utc::now());
        let name = self.node.name.clone();
        match self
            .client
            .get("coordination.k8s.io", "leases", "kube-node-lease", &name)
        {
            Some(_) => {
                let _ = self.client.merge(
                    "coordination.k8s.io",
                    "leases",
                    "kube-node-lease",
                    &name,
                    &json!({"spec": {"renewTime": now}}),
                );
            }
            None => {
                let node_uid = self
                    .client
                    .get("", "nodes", "", &name)
                    .map(|n| meta::uid(&n).to_string())
                    .unwrap_or_default();
                let _ = self.client.create(
                    "coordination.k8s.io",
                    "leases",
                    "kube-node-lease",
                    json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                           "metadata": {"name": name, "namespace": "kube-node-lease", "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": name, "uid": node_uid}]},
                           "spec": {"holderIdentity": name, "leaseDurationSeconds": 40, "renewTime": now}}),
                );
            }
        }
        self.post_node_status(force_ready);
    }

    /// Post the node's conditions when they differ from what the API has: Ready=True
    /// (KubeletReady), or Ready=False (KubeletNotReady) while PLEG is unhealthy.
    fn post_node_status(&mut self, force: bool) {
        let name = self.node.name.clone();
        let Some(node) = self.client.get("", "nodes", "", &name) else {
            return;
        };
        let boot_id = self.node.state.lock().boot_id.clone();
        let boot_changed = node
            .pointer("/status/nodeInfo/bootID")
            .and_then(Value::as_str)
            != Some(boot_id.as_str());
        let pleg = self.pleg_unhealthy();
        let was = meta::condition_status(&node, "Ready").map(String::from);
        let old_msg = node
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .and_then(|cs| cs.iter().find(|c| c["type"] == "Ready"))
            .and_then(|c| c["message"].as_str().map(String::from));
        let (status, reason, message) = match &pleg {
            None => (
                "True",
                "KubeletReady",
                "kubelet is posting ready status".to_string(),
            ),
            Some(err) => ("False", "KubeletNotReady", err.clone()),
        };
        if !force
            && !boot_changed
            && was.as_deref() == Some(status)
            && old_msg.as_deref() == Some(message.as_str())
        {
            return;
        }
        let mut fresh = crate::nodes::node_object(&name, self.node.index, self.node.control_plane);
        fresh["status"]["nodeInfo"]["bootID"] = json!(boot_id);
        if let Some(conds) = fresh["status"]["conditions"].as_array_mut() {
            for c in conds.iter_mut() {
                if c["type"] == "Ready" {
                    c["status"] = json!(status);
                    c["reason"] = json!(reason);
                    c["message"] = json!(message);
                }
                // Unchanged statuses keep their transition time.
                let old = node
                    .pointer("/status/conditions")
                    .and_then(Value::as_array)
                    .and_then(|cs| {
                        cs.iter()
                            .find(|o| o["type"] == c["type"] && o["status"] == c["status"])
                            .cloned()
                    });
                if let Some(old) = old {
                    c["lastTransitionTime"] = old["lastTransitionTime"].clone();
                }
            }
        }
        let patch = json!({"status": {"conditions": fresh["status"]["conditions"], "nodeInfo": fresh["status"]["nodeInfo"]}});
        let _ = self.client.merge_status("", "nodes", "", &name, &patch);
        if was.as_deref() != Some(status) {
            let event = if status == "True" {
                "NodeReady"
            } else {
                "NodeNotReady"
            };
            self.recorder.record(
                &node,
                EventKind::Normal,
                event,
                &format!("Node {} status is now: {}", name, event),
            );
        }
        if boot_changed && force {
            self.recorder.record(
                &node,
                EventKind::Warning,
                "Rebooted",
                &format!("Node {} has been rebooted, boot id: {}", name, boot_id),
            );
        }
    }

    // ----- CSI registration -----------------------------------------------------------------

    /// The live (not deleting) `longhorn-csi-plugin` pod of this node.
    fn plugin_pod(&self) -> Option<&PodRuntime> {
        self.pods
            .values()
            .find(|p| p.name.starts_with("longhorn-csi-plugin") && !meta::is_deleting(&p.pod))
    }

    fn container_running(p: &PodRuntime, name: &str) -> bool {
        p.main
            .iter()
            .any(|c| c.name == name && matches!(c.state, ContainerState::Running { .. }))
    }

    /// The plugin process answers on its socket: its container runs and is not crashing.
    fn plugin_serving(&self) -> bool {
        self.plugin_pod()
            .map(|p| Self::container_running(p, "longhorn-csi-plugin"))
            .unwrap_or(false)
            && !self.node.state.lock().faults.csi_plugin_down
    }

    /// The kubelet's plugin watcher registers the driver while node-driver-registrar's socket
    /// exists, i.e. while the registrar runs in a plugin pod that is not being deleted (its
    /// preStop removes the socket). A crash-looping plugin container leaves it registered.
    fn sync_csi_registration(&mut self, partitioned: bool) {
        let should = self
            .plugin_pod()
            .map(|p| Self::container_running(p, "node-driver-registrar"))
            .unwrap_or(false);
        if should == self.csi_registered {
            return;
        }
        if should {
            self.log('I', "csi_plugin.go:106", &format!("kubernetes.io/csi: Trying to validate a new CSI Driver with name: {} endpoint: {} versions: 1.0.0", DRIVER, CSI_SOCKET));
            self.log(
                'I',
                "csi_plugin.go:119",
                &format!(
                    "kubernetes.io/csi: Register new plugin with name: {} at endpoint: {}",
                    DRIVER, CSI_SOCKET
                ),
            );
            self.csi_log("main.go:164", "Received GetInfo call: &InfoRequest{}");
            self.csi_log("main.go:90", "Received NotifyRegistrationStatus call: &RegistrationStatus{PluginRegistered:true,Error:,}");
        } else {
            self.log(
                'I',
                "csi_plugin.go:223",
                &format!(
                    "kubernetes.io/csi: registrationHandler.DeRegisterPlugin request for plugin {}",
                    DRIVER
                ),
            );
        }
        if partitioned {
            return;
        }
        self.csi_registered = should;
        let drivers = if should {
            json!([{"name": DRIVER, "nodeID": self.node.name, "topologyKeys": null}])
        } else {
            json!([])
        };
        let _ = self.client.merge(
            "storage.k8s.io",
            "csinodes",
            "",
            &self.node.name,
            &json!({"spec": {"drivers": drivers}}),
        );
    }

    /// The CSI driver as the volume plugin finds it for its node calls.
    fn csi_driver(&self) -> CsiDriver {
        CsiDriver {
            registered: self.csi_registered,
            serving: self.plugin_serving(),
        }
    }

    /// A plugin process that exits releases the devices it kept busy (the fault holds from its
    /// injection until the process holding it goes, whichever process that is).
    fn track_plugin_process(&mut self) {
        let running: HashSet<String> = self
            .pods
            .values()
            .filter(|p| p.name.starts_with("longhorn-csi-plugin"))
            .flat_map(|p| p.main.iter())
            .filter(|c| {
                c.name == "longhorn-csi-plugin" && matches!(c.state, ContainerState::Running { .. })
            })
            .map(|c| c.container_id.clone())
            .collect();
        if self.plugin_processes.difference(&running).next().is_some() {
            self.node
                .state
                .lock()
                .faults
                .stale_mounts
                .retain(|m| m.holder != MountHolder::CsiPlugin);
        }
        for _ in running.difference(&self.plugin_processes) {
            self.csi_log("main.go:135", "Version: v2.14.0");
            self.csi_log(
                "node_register.go:53",
                "Starting Registration Server at: /registration/driver.longhorn.io-reg.sock",
            );
        }
        self.plugin_processes = running;
    }

    // ----- volume manager -------------------------------------------------------------------

    /// One pass of the volume manager; its populator reads the pods as the pod workers have
    /// them.
    fn reconcile_volumes(&mut self) {
        let faults = self.node.state.lock().faults.clone();
        let driver = self.csi_driver();
        let pods: Vec<PodInfo<'_>> = self
            .pods
            .values()
            .map(|p| {
                let deleting = meta::is_deleting(&p.pod);
                let runtime_removed = (deleting && p.containers_stopped())
                    || p.stale
                    || p.phase == "Succeeded"
                    || p.phase == "Failed";
                PodInfo {
                    uid: &p.uid,
                    pod: &p.pod,
                    terminating: deleting || runtime_removed,
                    runtime_removed,
                }
            })
            .collect();
        let ctx = OperationContext {
            node_name: &self.node.name,
            client: &self.client,
            recorder: &self.recorder,
            log: &self.klog,
            timing: &self.timing,
            driver,
            faults: &faults,
        };
        self.volume_manager.sync(&pods, &ctx);
    }

    /// `node.status.volumesInUse`: every volume the desired state wants (as soon as a pod on the
    /// node wants it) plus those still mounted.
    fn post_volumes_in_use(&mut self) {
        let in_use = self.volume_manager.volumes_in_use();
        if in_use != self.volumes_in_use
            && self
                .client
                .merge_status(
                    "",
                    "nodes",
                    "",
                    &self.node.name,
                    &json!({"status": {"volumesInUse": in_use}}),
                )
                .is_ok()
        {
            self.volumes_in_use = in_use;
        }
    }

    /// The node's mount table as `mount` prints it, for `faultline node X mounts`.
    pub fn mount_lines(&self) -> Vec<String> {
        self.volume_manager.mount_lines()
    }

    // ----- pod workers and the container runtime ------------------------------------------

    fn busy_workers(&self) -> usize {
        self.pods.values().filter(|p| p.slot).count()
    }

    fn sync_pod(&mut self, uid: &str) {
        let now = Instant::now();
        let pool = self.pod_worker_pool;
        let Some(p) = self.pods.get(uid) else { return };
        if p.quiet_until.map(|t| now < t).unwrap_or(false) {
            return;
        }
        // A terminated pod whose volumes never clean up stays in SyncTerminatedPod, polling
        // every 100 ms; the line is V(3), below the kubelet's verbosity.
        if p.stale {
            let line = format!("\"Pod is terminated, but some volumes have not been cleaned up\" pod=\"{}/{}\" podUID=\"{}\"", p.ns, p.name, p.uid);
            if let Some(size) = pool {
                // The RCA's reading: the stale pod holds one of the pool's workers for ever.
                if !p.slot && self.busy_workers() < size {
                    self.pods.get_mut(uid).unwrap().slot = true;
                }
            }
            self.vlog(3, "kubelet.go:2291", &line);
            return;
        }
        if meta::is_deleting(&p.pod) {
            self.terminate(uid);
            return;
        }
        if p.phase == "Succeeded" || p.phase == "Failed" {
            if p.slot {
                self.pods.get_mut(uid).unwrap().slot = false;
            }
            return;
        }
        if let Some(size) = pool {
            if !p.slot {
                if self.busy_workers() >= size {
                    // Never synced: the pod keeps whatever status the API has (none from us).
                    return;
                }
                let p = self.pods.get_mut(uid).unwrap();
                p.slot = true;
                p.wait_mark = Some(now);
            }
        }
        // Requeued after a failed sync: the worker waits for its backoff.
        if self.pods[uid].wait_mark.map(|m| m > now).unwrap_or(false) {
            return;
        }
        if self.pods[uid].wait_mark.is_none() {
            self.pods.get_mut(uid).unwrap().wait_mark = Some(now);
        }
        let first = !self.pods[uid].synced;
        if first {
            let p = self.pods.get_mut(uid).unwrap();
            p.synced = true;
            p.dirty = true;
            p.started_time = Some(timing::now_rfc3339());
            let has_init = !p.init.is_empty();
            for c in p.init.iter_mut() {
                c.state = ContainerState::Waiting("PodInitializing".into(), None);
            }
            for c in p.main.iter_mut() {
                c.state = ContainerState::Waiting(
                    if has_init {
                        "PodInitializing"
                    } else {
                        "ContainerCreating"
                    }
                    .into(),
                    None,
                );
            }
        }
        let p = &self.pods[uid];
        if let Err(VolumesNotReady {
            unmounted,
            unattached,
        }) = self.volume_manager.wait_for_attach_and_mount(uid, &p.pod)
        {
            // WaitForAttachAndMount gives up at podAttachAndMountTimeout. A 1.35 kubelet records
            // no event for that (the wait was interrupted); the pod worker logs the error and
            // requeues the pod.
            let timeout = self.timing.s(self.timing.pod_attach_mount_timeout);
            let p = &self.pods[uid];
            if p.wait_mark
                .map(|m| now.duration_since(m) >= timeout)
                .unwrap_or(false)
            {
                let line = format!(
                    "\"Error syncing pod, skipping\" err=\"unmounted volumes=[{}], unattached volumes=[{}], failed to process volumes=[]: context deadline exceeded\" pod=\"{}/{}\" podUID=\"{}\"",
                    unmounted.join(" "), unattached.join(" "), p.ns, p.name, p.uid
                );
                self.log('E', "pod_workers.go:1298", &line);
                self.pods.get_mut(uid).unwrap().wait_mark =
                    Some(now + self.timing.s(self.timing.pod_sync_requeue));
            }
            return;
        }
        self.pods.get_mut(uid).unwrap().wait_mark = None;
        if self.pods[uid].pod_ip.is_none() {
            let ip = format!("10.244.{}.{}", self.node.index, self.next_ip);
            self.next_ip += 1;
            let p = self.pods.get_mut(uid).unwrap();
            p.pod_ip = Some(ip);
            p.dirty = true;
        }
        self.run_containers(uid, now);
    }

    fn run_containers(&mut self, uid: &str, now: Instant) {
        let (csi_down, prober_broken) = {
            let st = self.node.state.lock();
            (st.faults.csi_plugin_down, st.faults.prober_broken)
        };
        let pod = self.pods[uid].pod.clone();
        let restart_policy = meta::str_at(&pod, "/spec/restartPolicy")
            .unwrap_or("Always")
            .to_string();
        let crash_after = Self::annotation(&pod, script::CRASH_AFTER)
            .and_then(timing::parse_duration)
            .map(|d| self.timing.s(d));
        let exit_after = Self::annotation(&pod, script::EXIT_AFTER)
            .and_then(timing::parse_duration)
            .map(|d| self.timing.s(d));
        let never_ready = Self::annotation(&pod, script::NEVER_READY) == Some("true");
        let pull_error = Self::annotation(&pod, script::IMAGE_PULL_ERROR).map(String::from);
        let init_run = Self::annotation(&pod, script::INIT_DURATION)
            .and_then(timing::parse_duration)
            .map(|d| self.timing.s(d))
            .unwrap_or(self.timing.s(self.timing.init_container_run));
        let log_lines: Vec<String> = Self::annotation(&pod, script::LOG)
            .map(|l| l.lines().map(String::from).collect())
            .unwrap_or_default();
        let pull_policy = |name: &str| -> String {
            ["containers", "initContainers"]
                .iter()
                .filter_map(|f| {
                    pod.pointer(&format!("/spec/{}", f))
                        .and_then(Value::as_array)
                })
                .flatten()
                .find(|c| c["name"] == name)
                .and_then(|c| c.get("imagePullPolicy").and_then(Value::as_str))
                .unwrap_or("IfNotPresent")
                .to_string()
        };
        let pull = (
            self.timing.s(self.timing.image_pull),
            self.timing.image_pull,
        );
        let start = self.timing.s(self.timing.container_start);
        let crash_max = self.timing.crash_backoff_max;
        let mut events: Vec<(Option<String>, EventKind, String, String)> = Vec::new();
        let ncount = self.pods[uid].init.len();
        // Init containers, one at a time, in order.
        let mut init_done = true;
        for i in 0..ncount {
            let c = &self.pods[uid].init[i];
            if matches!(c.state, ContainerState::Terminated { exit: 0, .. }) {
                continue;
            }
            init_done = false;
            let field = format!("spec.initContainers{{{}}}", c.name);
            let policy = pull_policy(&c.name);
            let p = self.pods.get_mut(uid).unwrap();
            let images = &mut self.images;
            let c = &mut p.init[i];
            if step_container(
                c,
                now,
                &policy,
                images,
                pull,
                start,
                pull_error.as_deref(),
                &field,
                &mut events,
            ) {
                p.dirty = true;
            }
            if let ContainerState::Running { since, ref started } = c.state {
                if now.duration_since(since) >= init_run {
                    c.state = ContainerState::Terminated {
                        exit: 0,
                        reason: "Completed".into(),
                        started: started.clone(),
                        finished: timing::now_rfc3339(),
                    };
                    p.dirty = true;
                }
            }
            break;
        }
        if init_done {
            let n = self.pods[uid].main.len();
            for i in 0..n {
                let name = self.pods[uid].main[i].name.clone();
                let field = format!("spec.containers{{{}}}", name);
                let policy = pull_policy(&name);
                let is_csi = name == "longhorn-csi-plugin";
                let p = self.pods.get_mut(uid).unwrap();
                let images = &mut self.images;
                let c = &mut p.main[i];
                // CrashLoopBackOff: wait for the backoff, then start again.
                if c.step == Step::BackOff {
                    if c.next.map(|n| now >= n).unwrap_or(true) {
                        c.step = Step::Idle;
                        c.state = ContainerState::Waiting("ContainerCreating".into(), None);
                    } else {
                        continue;
                    }
                }
                if step_container(
                    c,
                    now,
                    &policy,
                    images,
                    pull,
                    start,
                    pull_error.as_deref(),
                    &field,
                    &mut events,
                ) {
                    p.dirty = true;
                    if matches!(c.state, ContainerState::Running { .. }) {
                        c.prev_logs = std::mem::take(&mut c.logs);
                        c.logs = log_lines.clone();
                    }
                }
                if let ContainerState::Running { since, ref started } = c.state.clone() {
                    // Readiness: the prober reports ready unless scripted or broken.
                    let ready_now = !(never_ready || prober_broken || is_csi && csi_down);
                    // A broken prober never makes a container ready.
                    if c.ready != ready_now && (c.ready || !prober_broken) {
                        c.ready = ready_now;
                        p.dirty = true;
                    }
                    let died = if is_csi && csi_down {
                        Some((2, "Error"))
                    } else if let Some(d) = crash_after.filter(|d| now.duration_since(since) >= *d)
                    {
                        let _ = d;
                        Some((1, "Error"))
                    } else if let Some(d) = exit_after.filter(|d| now.duration_since(since) >= *d) {
                        let _ = d;
                        Some((0, "Completed"))
                    } else {
                        None
                    };
                    if let Some((exit, reason)) = died {
                        let term = ContainerState::Terminated {
                            exit,
                            reason: reason.into(),
                            started: started.clone(),
                            finished: timing::now_rfc3339(),
                        };
                        c.ready = false;
                        p.dirty = true;
                        let restart = restart_policy == "Always"
                            || (restart_policy == "OnFailure" && exit != 0);
                        if restart {
                            c.last = Some(term);
                            c.restarts += 1;
                            c.step = Step::BackOff;
                            c.next = Some(now + self.timing.s(c.crash_backoff));
                            let msg = format!(
                                "back-off {} restarting failed container={} pod={}_{}({})",
                                go_duration(c.crash_backoff),
                                c.name,
                                p.name,
                                p.ns,
                                p.uid
                            );
                            c.state = ContainerState::Waiting("CrashLoopBackOff".into(), Some(msg));
                            c.crash_backoff = (c.crash_backoff * 2).min(crash_max);
                            let msg = format!(
                                "Back-off restarting failed container {} in pod {}_{}({})",
                                c.name, p.name, p.ns, p.uid
                            );
                            events.push((
                                Some(field.clone()),
                                EventKind::Warning,
                                "BackOff".into(),
                                msg,
                            ));
                        } else {
                            c.state = term;
                        }
                    }
                }
            }
        }
        let pod_obj = pod.clone();
        for (field, kind, reason, msg) in events {
            self.recorder
                .record_at(&pod_obj, field.as_deref(), kind, &reason, &msg);
        }
        // Phase.
        let p = self.pods.get_mut(uid).unwrap();
        let all_init = p
            .init
            .iter()
            .all(|c| matches!(c.state, ContainerState::Terminated { exit: 0, .. }));
        let phase = if !all_init {
            "Pending"
        } else if p
            .main
            .iter()
            .all(|c| matches!(c.state, ContainerState::Terminated { .. }))
            && !p.main.is_empty()
        {
            if p.main
                .iter()
                .all(|c| matches!(c.state, ContainerState::Terminated { exit: 0, .. }))
            {
                "Succeeded"
            } else {
                "Failed"
            }
        } else if p.main.iter().any(|c| c.started_once) {
            "Running"
        } else {
            "Pending"
        };
        if p.phase != phase {
            p.phase = phase.into();
            p.dirty = true;
        }
        // A pod that is running with every container started no longer needs its worker.
        if p.phase != "Pending" && p.main.iter().all(|c| c.started_once) {
            p.slot = false;
        }
        // Nothing timed is pending (no pull, start or back-off, no scripted exit): the pod
        // worker idles until a change or the periodic resync.
        let settled = p.phase == "Running"
            && crash_after.is_none()
            && exit_after.is_none()
            && p.main.iter().all(|c| {
                matches!(c.state, ContainerState::Running { .. }) && c.step == Step::Started
            });
        if settled {
            p.quiet_until = Some(now + self.timing.s(self.timing.pod_resync));
        }
    }

    fn terminate(&mut self, uid: &str) {
        let now = Instant::now();
        let stop = self.timing.s(self.timing.container_start);
        let p = self.pods.get_mut(uid).unwrap();
        if !p.killing {
            p.killing = true;
            p.stopped_at = Some(now + stop);
            let pod = p.pod.clone();
            let running: Vec<String> = p
                .init
                .iter()
                .chain(p.main.iter())
                .filter(|c| matches!(c.state, ContainerState::Running { .. }))
                .map(|c| c.name.clone())
                .collect();
            for name in running {
                let field = if p.init.iter().any(|c| c.name == name) {
                    format!("spec.initContainers{{{}}}", name)
                } else {
                    format!("spec.containers{{{}}}", name)
                };
                self.recorder.record_at(
                    &pod,
                    Some(&field),
                    EventKind::Normal,
                    "Killing",
                    &format!("Stopping container {}", name),
                );
            }
            return;
        }
        if p.stopped_at.map(|s| now < s).unwrap_or(false) {
            return;
        }
        for c in p.init.iter_mut().chain(p.main.iter_mut()) {
            if let ContainerState::Running { ref started, .. } = c.state {
                c.state = ContainerState::Terminated {
                    exit: 0,
                    reason: "Completed".into(),
                    started: started.clone(),
                    finished: timing::now_rfc3339(),
                };
                c.ready = false;
                p.dirty = true;
            }
        }
        p.slot = false;
        // A terminated pod's phase is terminal (kubelet_pods.go getPhase with podIsTerminal):
        // Succeeded when every container exited 0, else Failed.
        let exits: Option<Vec<i32>> = p
            .main
            .iter()
            .map(|c| match c.state {
                ContainerState::Terminated { exit, .. } => Some(exit),
                _ => None,
            })
            .collect();
        if let Some(exits) = exits.filter(|e| !e.is_empty()) {
            let phase = if exits.iter().all(|e| *e == 0) {
                "Succeeded"
            } else {
                "Failed"
            };
            if p.phase != phase {
                p.phase = phase.into();
                p.dirty = true;
            }
        }
        // The status manager deletes the pod object only once SyncTerminatedPod has finished,
        // and that waits for the pod's volumes to be unmounted (status_manager.go canBeDeleted,
        // kubelet.go SyncTerminatedPod -> volumeManager.WaitForUnmount): a pod whose volume
        // cannot be torn down stays Terminating.
        if !self.volume_manager.pod_volumes_unmounted(uid) {
            return;
        }
        if self.node.state.lock().faults.partitioned {
            return;
        }
        let (ns, name) = (p.ns.clone(), p.name.clone());
        match self.client.delete("", "pods", &ns, &name, Some(0)) {
            Ok(_) => self.log(
                'I',
                "kubelet.go:2450",
                &format!(
                    "\"SyncLoop DELETE\" source=\"api\" pods=[\"{}/{}\"]",
                    ns, name
                ),
            ),
            Err(e) if e.code == 404 => {}
            Err(_) => {}
        }
    }

    /// Kill a running container of the first live pod whose name starts with `pod_prefix`; the
    /// runtime starts it again (restartCount + 1), like `crictl stop`.
    pub fn restart_container(&mut self, pod_prefix: &str, container: &str) -> bool {
        let Some(p) = self
            .pods
            .values_mut()
            .find(|p| p.name.starts_with(pod_prefix) && !meta::is_deleting(&p.pod))
        else {
            return false;
        };
        let Some(c) = p.main.iter_mut().find(|c| c.name == container) else {
            return false;
        };
        let ContainerState::Running { ref started, .. } = c.state else {
            return false;
        };
        c.last = Some(ContainerState::Terminated {
            exit: 137,
            reason: "Error".into(),
            started: started.clone(),
            finished: timing::now_rfc3339(),
        });
        c.restarts += 1;
        c.ready = false;
        c.state = ContainerState::Waiting("ContainerCreating".into(), None);
        c.step = Step::Idle;
        p.dirty = true;
        p.slot = true;
        p.quiet_until = None;
        true
    }

    // ----- status manager -------------------------------------------------------------------

    fn post_statuses(&mut self) {
        let host_ip = self.node.internal_ip();
        let uids: Vec<String> = self
            .pods
            .iter()
            .filter(|(_, p)| p.dirty && p.synced && !p.stale)
            .map(|(u, _)| u.clone())
            .collect();
        for uid in uids {
            let p = &self.pods[&uid];
            let status = pod_status(p, &host_ip);
            // Fields the apiserver or others added (qosClass) do not make it differ.
            if meta::merge_is_noop(p.pod.get("status"), &status) {
                self.pods.get_mut(&uid).unwrap().dirty = false;
                continue;
            }
            let res =
                self.client
                    .merge_status("", "pods", &p.ns, &p.name, &json!({"status": status}));
            if let Err(e) = &res {
                if e.code != 404 {
                    let line = format!(
                        "\"Failed to update status for pod\" pod=\"{}/{}\" err=\"{}\"",
                        p.ns,
                        p.name,
                        e.message.replace('"', "'")
                    );
                    self.log('E', "status_manager.go:914", &line);
                }
            }
            let p = self.pods.get_mut(&uid).unwrap();
            if let Ok(written) = res {
                // The pod as the apiserver now has it (the status manager's cache of what it
                // posted): later comparisons read the fresh status, not the informer's.
                // A change of someone else's that the write's answer carries first (a
                // deletion) wakes the pod, as its event would have: that event is now not news.
                p.dirty = false;
                if !meta::identical_outside_status(&written, &p.pod) {
                    p.quiet_until = None;
                }
                p.pod = written;
            }
        }
    }

    /// Logs of a container for `pods/log`.
    pub fn container_logs(
        &self,
        uid: &str,
        container: &str,
        previous: bool,
    ) -> Option<Result<String, String>> {
        let p = self.pods.get(uid)?;
        let c = p
            .init
            .iter()
            .chain(p.main.iter())
            .find(|c| c.name == container)?;
        if previous {
            return Some(if c.restarts == 0 {
                Err(format!(
                    "previous terminated container {:?} in pod {:?} not found",
                    container, p.name
                ))
            } else {
                Ok(lines(&c.prev_logs))
            });
        }
        match &c.state {
            ContainerState::Waiting(reason, _) if !c.started_once => Some(Err(format!(
                "container {:?} in pod {:?} is waiting to start: {}",
                container,
                p.name,
                if reason.is_empty() {
                    "ContainerCreating"
                } else {
                    reason
                }
            ))),
            _ => Some(Ok(lines(&c.logs))),
        }
    }
}

fn cond(t: &str, ok: bool, reason: Option<&str>, msg: Option<String>) -> Value {
    let mut c = json!({"type": t, "status": if ok { "True" } else { "False" }, "lastProbeTime": null, "lastTransitionTime": timing::now_rfc3339()});
    if !ok {
        if let Some(r) = reason {
            c["reason"] = json!(r);
        }
        if let Some(m) = msg {
            c["message"] = json!(m);
        }
    }
    c
}

/// The status the kubelet's status manager posts: real shapes (conditions, Waiting reasons).
fn pod_status(p: &PodRuntime, host_ip: &str) -> Value {
    let init_ok = p
        .init
        .iter()
        .all(|c| matches!(c.state, ContainerState::Terminated { exit: 0, .. }));
    let pending_init: Vec<&str> = p
        .init
        .iter()
        .filter(|c| !matches!(c.state, ContainerState::Terminated { exit: 0, .. }))
        .map(|c| c.name.as_str())
        .collect();
    let unready: Vec<&str> = p
        .main
        .iter()
        .filter(|c| !c.ready)
        .map(|c| c.name.as_str())
        .collect();
    let ready = unready.is_empty() && !p.main.is_empty() && !meta::is_deleting(&p.pod);
    let sandbox = p.pod_ip.is_some();
    let mut conds = vec![
        cond("PodReadyToStartContainers", sandbox, None, None),
        cond(
            "Initialized",
            init_ok,
            Some("ContainersNotInitialized"),
            Some(format!(
                "containers with incomplete status: [{}]",
                pending_init.join(" ")
            )),
        ),
        cond(
            "Ready",
            ready,
            Some("ContainersNotReady"),
            Some(format!(
                "containers with unready status: [{}]",
                unready.join(" ")
            )),
        ),
        cond(
            "ContainersReady",
            ready,
            Some("ContainersNotReady"),
            Some(format!(
                "containers with unready status: [{}]",
                unready.join(" ")
            )),
        ),
    ];
    // Keep the scheduler's PodScheduled condition as the API has it.
    let scheduled = p
        .pod
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|c| c["type"] == "PodScheduled").cloned())
        .unwrap_or_else(|| cond("PodScheduled", true, None, None));
    conds.push(scheduled);
    // Conditions other components own (DisruptionTarget, readiness gates) are kept.
    const OWN: [&str; 5] = [
        "PodReadyToStartContainers",
        "Initialized",
        "Ready",
        "ContainersReady",
        "PodScheduled",
    ];
    if let Some(prev) = p
        .pod
        .pointer("/status/conditions")
        .and_then(Value::as_array)
    {
        conds.extend(
            prev.iter()
                .filter(|c| !OWN.iter().any(|t| c["type"] == *t))
                .cloned(),
        );
    }
    // Preserve each condition's lastTransitionTime when its status is unchanged.
    if let Some(prev) = p
        .pod
        .pointer("/status/conditions")
        .and_then(Value::as_array)
    {
        for c in conds.iter_mut() {
            if let Some(old) = prev
                .iter()
                .find(|o| o["type"] == c["type"] && o["status"] == c["status"])
            {
                c["lastTransitionTime"] = old["lastTransitionTime"].clone();
            }
        }
    }
    let mut s = json!({
        "phase": p.phase,
        "conditions": conds,
        "hostIP": host_ip,
        "hostIPs": [{"ip": host_ip}],
        "startTime": p.started_time,
        "qosClass": p.pod.pointer("/status/qosClass").cloned().unwrap_or(json!("BestEffort")),
        "containerStatuses": p.main.iter().map(container_status).collect::<Vec<_>>(),
    });
    if !p.init.is_empty() {
        s["initContainerStatuses"] = json!(p.init.iter().map(container_status).collect::<Vec<_>>());
    }
    if let Some(ip) = &p.pod_ip {
        s["podIP"] = json!(ip);
        s["podIPs"] = json!([{"ip": ip}]);
    }
    s
}

fn rv_of(obj: &Value) -> Option<u64> {
    meta::resource_version(obj).parse().ok()
}
