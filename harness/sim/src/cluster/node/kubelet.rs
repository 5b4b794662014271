//! One simulated kubelet: pod workers, PLEG, the volume manager (through
//! `volumes::PendingOperations`), the kuberuntime manager over the node's container runtime
//! (`runtime`, scriptable by pod annotation), the status manager, CSI plugin registration, Lease heartbeats and node status, and
//! a kubelet log in klog format (at `--v=2`; nominal timestamps and durations).
//!
//! Everything runs in one task per node that ticks at the volume reconciler period, so the
//! order of effects is deterministic for a given sequence of API events.

use super::kubelet_pods::{generate_api_pod_status, PodStatusInput};
use super::log::KubeletLog;
use super::pleg::GenericPleg;
use super::pod_workers::{PodWorker, PodWorkers, SyncContext};
pub use super::runtime::script;
use super::runtime::ContainerState;
use super::state::{KubeletProcess, MountHolder, NodeFaults, ResetKind, SimNode};
use super::status_manager::{StatusManager, Synced};
use super::volumemanager::operation_executor::{CsiDriver, OperationContext};
use super::volumemanager::populator::PodInfo;
use super::volumemanager::VolumeManager;
use super::volumes::{CSI_SOCKET, DRIVER};
use crate::apiserver::meta;
use crate::events::{EventKind, EventRecorder};
use crate::internal::Internal;
use crate::timing::{self, Timing};
use serde_json::{json, Value};
use std::collections::HashSet;
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

pub struct Kubelet {
    node: Arc<SimNode>,
    client: Internal,
    recorder: EventRecorder,
    timing: Timing,
    rx: mpsc::UnboundedReceiver<PodEvent>,
    pod_workers: PodWorkers,
    volume_manager: VolumeManager,
    status_manager: StatusManager,
    klog: KubeletLog,
    csi_registered: bool,
    images: HashSet<String>,
    next_lease: Instant,
    volumes_in_use: Vec<String>,
    pleg: GenericPleg,
    /// When the sync loop next logs "Skipping pod synchronization", and its backoff (nominal).
    skip_log: (Instant, Duration),
    /// The CSI plugin processes (container ids) running at the last tick: one that exits
    /// releases what it held.
    plugin_processes: HashSet<String>,
    /// The node's faults at the last tick: a change wakes every settled pod.
    faults_seen: NodeFaults,
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
        let pleg = GenericPleg::new(timing.clone());
        Kubelet {
            node,
            client,
            recorder,
            timing,
            rx,
            pod_workers: PodWorkers::new(pod_worker_pool),
            volume_manager,
            status_manager: StatusManager::default(),
            klog,
            csi_registered: false,
            images: HashSet::new(),
            next_lease: Instant::now(),
            volumes_in_use: vec![],
            pleg,
            skip_log: (Instant::now(), Duration::ZERO),
            plugin_processes: HashSet::new(),
            faults_seen: NodeFaults::default(),
        }
    }

    fn log(&self, sev: char, file: &str, msg: &str) {
        self.klog.log(sev, file, msg);
    }

    fn csi_log(&self, file: &str, msg: &str) {
        self.klog.csi(file, msg);
    }

    /// Drain pod events and run one tick. Returns false when the event source is gone. A kubelet
    /// that is down reads and writes nothing (its events wait, as a watch would be re-listed);
    /// a hung one only keeps its Lease and node status going (goroutines of their own upstream;
    /// PLEG relists in a task of its own, `relist_pleg`, so its health does not depend on the
    /// sync loop either). A partitioned one runs on
    /// what it knows: its pod watch delivers nothing until the partition heals (the events wait
    /// as above) and its writes do not arrive (`Internal::with_reachability`).
    pub fn step(&mut self) -> bool {
        match self.process_state() {
            KubeletProcess::Running => {}
            KubeletProcess::Hung => {
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
                self.status_manager.remove(&uid);
                if let Some(p) = self.pod_workers.remove(&uid) {
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
                match self.pod_workers.get_mut(&uid) {
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
                            p.status_dirty = true;
                        }
                        p.pod = obj;
                        p.wake();
                    }
                    None => {
                        let p = self.pod_workers.add(obj, &self.timing);
                        let line = format!(
                            "\"SyncLoop ADD\" source=\"api\" pods=[\"{}/{}\"]",
                            p.ns, p.name
                        );
                        self.klog.info("kubelet.go:2418", &line);
                    }
                }
            }
        }
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
        self.status_manager = StatusManager::default();
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
        self.pleg.restart();
        self.pod_workers.kubelet_started(kind);
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
        // syncLoop skips every iteration while the runtime is unhealthy; pod workers wait for
        // a pod cache newer than their last sync, which a hanging relist does not bring.
        if let Err(unhealthy) = self.pleg.healthy() {
            self.log_skipping_sync(&unhealthy.to_string());
        } else if !self.pleg.relist_hung() {
            self.sync_pods();
        }
        if !partitioned {
            self.post_statuses();
            self.post_volumes_in_use();
        }
        self.track_plugin_process();
    }

    /// Sync every pod at the next tick, settled or not.
    fn wake_all(&mut self) {
        self.pod_workers.wake_all();
    }

    // ----- PLEG -----------------------------------------------------------------------------

    /// One relist of the PLEG (its own task, `cluster::run_pleg`): it runs while the kubelet
    /// process is up, even with its sync loop hung. The runtime cannot answer for stale pods'
    /// sandboxes, which it cannot tear down (their volumes never unmount); with the RCA's
    /// bounded pool, stale pods hold workers instead.
    pub fn relist_pleg(&mut self) {
        let up = matches!(
            self.node.state.lock().kubelet,
            KubeletProcess::Running | KubeletProcess::Hung
        );
        if up {
            self.pleg.relist(!self.pod_workers.sandboxes_stuck());
        }
    }

    /// The sync loop skips every iteration while the runtime is unhealthy (backoff 100ms
    /// doubling to 5s between the error lines).
    fn log_skipping_sync(&mut self, err: &str) {
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
        let pleg = self.pleg.healthy().err().map(|e| e.to_string());
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
    fn plugin_pod(&self) -> Option<&PodWorker> {
        self.pod_workers
            .iter()
            .find(|p| p.name.starts_with("longhorn-csi-plugin") && !meta::is_deleting(&p.pod))
    }

    /// The plugin process answers on its socket: its container runs and is not crashing.
    fn plugin_serving(&self) -> bool {
        self.plugin_pod()
            .map(|p| p.containers.running("longhorn-csi-plugin"))
            .unwrap_or(false)
            && !self.node.state.lock().faults.csi_plugin_down
    }

    /// The kubelet's plugin watcher registers the driver while node-driver-registrar's socket
    /// exists, i.e. while the registrar runs in a plugin pod that is not being deleted (its
    /// preStop removes the socket). A crash-looping plugin container leaves it registered.
    fn sync_csi_registration(&mut self, partitioned: bool) {
        let should = self
            .plugin_pod()
            .map(|p| p.containers.running("node-driver-registrar"))
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
            .pod_workers
            .iter()
            .filter(|p| p.name.starts_with("longhorn-csi-plugin"))
            .flat_map(|p| p.containers.main.iter())
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
            .pod_workers
            .iter()
            .map(|p| PodInfo {
                uid: &p.uid,
                pod: &p.pod,
                terminating: p.should_pod_containers_be_terminating(),
                runtime_removed: p.should_pod_runtime_be_removed(),
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

    // ----- pod workers ------------------------------------------------------------------------

    fn sync_pods(&mut self) {
        let mut ctx = SyncContext {
            node: &self.node,
            recorder: &self.recorder,
            log: &self.klog,
            timing: &self.timing,
            volumes: &self.volume_manager,
            images: &mut self.images,
            status: &mut self.status_manager,
        };
        self.pod_workers.sync_all(&mut ctx);
    }

    /// Kill a running container of the first live pod whose name starts with `pod_prefix`; the
    /// runtime starts it again (restartCount + 1), like `crictl stop`.
    pub fn restart_container(&mut self, pod_prefix: &str, container: &str) -> bool {
        self.pod_workers.restart_container(pod_prefix, container)
    }

    // ----- status manager -------------------------------------------------------------------

    /// The status manager's pass: the statuses of the pods whose status changed go to its
    /// cache (`generateAPIPodStatus`, `SetPodStatus`), then it syncs.
    fn post_statuses(&mut self) {
        let host_ip = self.node.internal_ip();
        for p in self.pod_workers.iter_mut() {
            if !(p.status_dirty && p.synced && !p.stale) {
                continue;
            }
            let input = PodStatusInput {
                pod: &p.pod,
                containers: &p.containers,
                phase: p.phase,
                started_time: p.started_time.as_deref(),
                pod_ip: p.pod_ip.as_deref(),
            };
            let status = generate_api_pod_status(&input, &host_ip);
            self.status_manager.set_pod_status(&p.pod, status);
            p.status_dirty = false;
        }
        let workers = &self.pod_workers;
        let synced = self.status_manager.sync(
            |uid| workers.get(uid).map(|p| p.pod.clone()),
            &self.client,
            &self.klog,
        );
        for (uid, synced) in synced {
            let Some(p) = self.pod_workers.get_mut(&uid) else {
                continue;
            };
            match synced {
                Synced::Written(pod) => {
                    // The pod as the apiserver now has it: later comparisons read the fresh
                    // status, not the informer's. A change of someone else's that the write's
                    // answer carries first (a deletion) wakes the pod, as its event would have:
                    // that event is now not news.
                    if !meta::identical_outside_status(&pod, &p.pod) {
                        p.wake();
                    }
                    p.pod = pod;
                }
                Synced::Deleted => {
                    let line = format!(
                        "\"SyncLoop DELETE\" source=\"api\" pods=[\"{}/{}\"]",
                        p.ns, p.name
                    );
                    self.klog.info("kubelet.go:2450", &line);
                }
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
        let p = self.pod_workers.get(uid)?;
        p.containers.logs(&p.name, container, previous)
    }
}

fn rv_of(obj: &Value) -> Option<u64> {
    meta::resource_version(obj).parse().ok()
}
