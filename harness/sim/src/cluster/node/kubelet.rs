//! One simulated kubelet (pkg/kubelet/kubelet.go): the sync loop and the parts it wires, each
//! in the file upstream's reader looks for: the pod workers (`pod_workers`) over the kuberuntime
//! manager (`kuberuntime_manager`, over the node's container runtime `runtime`, scriptable by pod
//! annotation), PLEG (`pleg`, relisting in a task of its own), the volume manager
//! (`volumemanager/`), the status manager (`status_manager`, with the statuses `kubelet_pods`
//! generates), the plugin manager for the CSI driver (`pluginmanager`), the node's registration,
//! Lease and status (`kubelet_node_status`), and its klog-format log (`log`, at `--v=2`, nominal
//! timestamps and durations).
//!
//! The sync loop runs in one task per node that ticks at the volume reconciler period, so the
//! order of effects is deterministic for a given sequence of API events; only PLEG's relist runs
//! apart.

use super::kubelet_node_status::{NodeStatus, NodeStatusContext};
use super::kubelet_pods::{generate_api_pod_status, PodStatusInput};
use super::log::KubeletLog;
use super::pleg::GenericPleg;
use super::pluginmanager::{PluginManager, PluginPod};
use super::pod_workers::{PodWorkers, SyncContext};
pub use super::runtime::script;
use super::runtime::ContainerState;
use super::state::{KubeletProcess, MountHolder, NodeFaults, ResetKind, SimNode};
use super::status_manager::{StatusManager, Synced};
use super::volumemanager::operation_executor::{CsiDriver, OperationContext};
use super::volumemanager::populator::PodInfo;
use super::volumemanager::VolumeManager;
use crate::apiserver::meta;
use crate::events::EventRecorder;
use crate::internal::Internal;
use crate::timing::SimInstant;
use crate::timing::Timing;
use serde_json::Value;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// The pod sandbox image of a 1.35 node (kubeadm's `registry.k8s.io/pause:3.10.1`).
pub const SANDBOX_IMAGE: &str = "registry.k8s.io/pause:3.10.1";

/// How many stale pods `saturateWorkers` leaves by default (the incident's backlog).
pub const DEFAULT_STALE_PODS: usize = 8;

/// What the pod source (a watch of the node's pods) delivers.
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
    klog: KubeletLog,
    /// The pod source.
    rx: mpsc::UnboundedReceiver<PodEvent>,
    pod_workers: PodWorkers,
    pleg: GenericPleg,
    volume_manager: VolumeManager,
    status_manager: StatusManager,
    plugin_manager: PluginManager,
    node_status: NodeStatus,
    /// The runtime's image cache.
    images: HashSet<String>,
    /// When the sync loop next logs "Skipping pod synchronization", and its backoff (nominal).
    skip_log: (SimInstant, Duration),
    /// The node's faults at the last iteration: a change wakes every settled pod.
    faults_seen: NodeFaults,
}

/// The node status side's view of the kubelet (its fields, so the borrow stays disjoint from
/// `node_status`).
macro_rules! node_status_ctx {
    ($k:expr) => {
        NodeStatusContext {
            node: &$k.node,
            client: &$k.client,
            recorder: &$k.recorder,
            log: &$k.klog,
            timing: &$k.timing,
            runtime_error: $k.pleg.healthy().err().map(|e| e.to_string()),
        }
    };
}

impl Kubelet {
    pub fn new(
        node: Arc<SimNode>,
        client: Internal,
        timing: Timing,
        rx: mpsc::UnboundedReceiver<PodEvent>,
        pod_worker_pool: Option<usize>,
    ) -> Self {
        Kubelet {
            recorder: EventRecorder::new(client.clone(), "kubelet", Some(&node.name)),
            klog: KubeletLog::new(node.clone(), timing.clone()),
            pod_workers: PodWorkers::new(pod_worker_pool),
            pleg: GenericPleg::new(timing.clone()),
            volume_manager: VolumeManager::new(timing.clone()),
            status_manager: StatusManager::default(),
            plugin_manager: PluginManager::default(),
            node_status: NodeStatus::default(),
            // The sandbox image is on every node before any pod runs (the runtime pulls or
            // preloads it; kind's node images ship it): a pod of that image pulls nothing.
            images: HashSet::from([SANDBOX_IMAGE.to_string()]),
            skip_log: (SimInstant::START, Duration::ZERO),
            faults_seen: NodeFaults::default(),
            node,
            client,
            timing,
            rx,
        }
    }

    /// The first start: the start lines, then the node registers (Node, Lease, CSINode).
    pub fn register(&mut self) {
        self.log_process_start();
        self.volume_manager.start(&self.klog);
        self.klog
            .info("kubelet.go:2501", "\"Starting kubelet main sync loop\"");
        let ctx = node_status_ctx!(self);
        self.node_status.register(&ctx);
    }

    /// What every start of the process logs first (cmd/kubelet/app/server.go `run` and
    /// `RunKubelet`).
    fn log_process_start(&self) {
        self.klog.info(
            "server.go:525",
            &format!(
                "\"Kubelet version\" kubeletVersion=\"{}\"",
                crate::nodes::KUBELET_VERSION
            ),
        );
        self.klog.info("server.go:1257", "\"Started kubelet\"");
    }

    /// One turn of the sync loop. Returns false when the pod source is gone. A kubelet that is
    /// down reads and writes nothing (its pod events wait, as a watch would be re-listed); a
    /// hung one only keeps its Lease and node status going (goroutines of their own upstream;
    /// PLEG relists in a task of its own, `relist_pleg`, so its health does not depend on the
    /// sync loop either). A partitioned one runs on what it knows: its pod watch delivers
    /// nothing until the partition heals (the events wait as above) and its writes do not
    /// arrive (`Internal::with_reachability`).
    pub fn step(&mut self) -> bool {
        match self.process_state() {
            KubeletProcess::Running => {}
            KubeletProcess::Hung => {
                self.heartbeat();
                return true;
            }
            _ => return true,
        }
        if !self.node.state.lock().faults.partitioned {
            loop {
                match self.rx.try_recv() {
                    Ok(ev) => self.handle_pod_event(ev),
                    Err(mpsc::error::TryRecvError::Empty) => break,
                    Err(mpsc::error::TryRecvError::Disconnected) => return false,
                }
            }
        }
        self.sync_loop_iteration();
        true
    }

    /// A config change from the pod source (`HandlePodAdditions`, `HandlePodUpdates`,
    /// `HandlePodRemoves`).
    fn handle_pod_event(&mut self, ev: PodEvent) {
        match ev {
            PodEvent::Deleted(uid) => {
                self.status_manager.remove(&uid);
                if let Some(p) = self.pod_workers.remove(&uid) {
                    let line = format!(
                        "\"SyncLoop REMOVE\" source=\"api\" pods=[\"{}/{}\"]",
                        p.ns, p.name
                    );
                    self.klog.info("kubelet.go:2598", &line);
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
                        p.set_pod(obj);
                        p.wake();
                    }
                    None => {
                        let p = self.pod_workers.add(obj, &self.timing);
                        let line = format!(
                            "\"SyncLoop ADD\" source=\"api\" pods=[\"{}/{}\"]",
                            p.ns, p.name
                        );
                        self.klog.info("kubelet.go:2588", &line);
                    }
                }
            }
        }
    }

    /// Handle process state changes and resets; returns the process state for this tick.
    fn process_state(&mut self) -> KubeletProcess {
        let now = self.timing.clock.instant();
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

    /// A kubelet that starts again: empty operation executor, status cache and pod workers;
    /// what is mounted stays mounted (reconstructed from disk). A reboot also loses every mount
    /// and container.
    fn reset(&mut self, kind: ResetKind) {
        let (pid, started_at) = {
            let st = self.node.state.lock();
            (st.pid, st.started_at)
        };
        self.klog.set_process(pid, started_at);
        self.log_process_start();
        self.volume_manager.restart(kind, &self.klog);
        self.status_manager = StatusManager::default();
        self.plugin_manager.restart();
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
        self.klog
            .info("kubelet.go:2501", "\"Starting kubelet main sync loop\"");
        if kind == ResetKind::Reboot {
            self.images.clear();
        }
        // Registration runs beside the sync loop (its node status goroutine); a real 1.35
        // kubelet logs it right after the main sync loop's start (docs/kind.md).
        let ctx = node_status_ctx!(self);
        self.node_status.register(&ctx);
        self.pleg.restart();
        self.pod_workers.kubelet_started(kind);
        // The new process's pod config gets the apiserver source's whole list as one update:
        // every pod the node has is an ADD (`kubelet.go` syncLoopIteration, klog.KObjSlice).
        let pods: Vec<String> = self
            .pod_workers
            .iter()
            .map(|p| format!("\"{}/{}\"", p.ns, p.name))
            .collect();
        if !pods.is_empty() {
            let line = format!("\"SyncLoop ADD\" source=\"api\" pods=[{}]", pods.join(","));
            self.klog.info("kubelet.go:2588", &line);
        }
    }

    /// `syncLoopIteration`, after the pod source's changes: the node's heartbeats, the plugin
    /// watcher, the volume manager's pass, the pod workers (unless the runtime is unhealthy or
    /// its relist hangs), the status manager's sync and `volumesInUse` (both writes: skipped
    /// while partitioned), and the plugin processes' housekeeping.
    fn sync_loop_iteration(&mut self) {
        let (partitioned, changed) = {
            let st = self.node.state.lock();
            let changed = st.faults != self.faults_seen;
            if changed {
                self.faults_seen = st.faults.clone();
            }
            (st.faults.partitioned, changed)
        };
        if changed {
            self.pod_workers.wake_all();
        }
        self.heartbeat();
        let plugin_pod = self.plugin_pod();
        self.plugin_manager.sync(
            plugin_pod,
            partitioned,
            &self.node.name,
            &self.client,
            &self.klog,
        );
        self.sync_volumes();
        let now = self.timing.clock.instant();
        self.pod_workers
            .return_hung_stops(now, &self.recorder, &self.klog);
        // syncLoop skips every iteration while the runtime is unhealthy; pod workers wait for
        // a pod cache newer than their last sync, which a hanging relist does not bring.
        if let Err(unhealthy) = self.pleg.healthy() {
            self.log_skipping_sync(&unhealthy.to_string());
        } else if !self.pleg.relist_hung() {
            self.sync_pods();
        }
        if !partitioned {
            self.sync_statuses();
            let in_use = self.volume_manager.volumes_in_use();
            let ctx = node_status_ctx!(self);
            self.node_status.post_volumes_in_use(&ctx, in_use);
        }
        self.track_plugin_processes();
    }

    /// The node lease and node status updaters' turn (they run every 10 s nominal).
    fn heartbeat(&mut self) {
        let ctx = node_status_ctx!(self);
        self.node_status.heartbeat(&ctx);
    }

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
            self.pleg.relist(self.pod_workers.runtime_answer());
        }
    }

    /// The sync loop skips every iteration while the runtime is unhealthy (backoff 100ms
    /// doubling to 5s between the error lines).
    fn log_skipping_sync(&mut self, err: &str) {
        let now = self.timing.clock.instant();
        if now < self.skip_log.0 {
            return;
        }
        self.klog.error(
            "kubelet.go:2525",
            &format!("\"Skipping pod synchronization\" err=\"{}\"", err),
        );
        let next = if self.skip_log.1.is_zero() {
            Duration::from_millis(100)
        } else {
            (self.skip_log.1 * 2).min(Duration::from_secs(5))
        };
        self.skip_log = (now + self.timing.s(next), next);
    }

    // ----- CSI plugin -------------------------------------------------------------------------

    /// The node's live (not deleting) CSI plugin pod, as the runtime runs it.
    fn plugin_pod(&self) -> Option<PluginPod> {
        self.pod_workers
            .iter()
            .find(|p| p.name.starts_with("longhorn-csi-plugin") && !p.is_deleting())
            .map(|p| PluginPod {
                // A registrar whose socket was removed (csiDriverUnregistered) registers nothing.
                registration_socket: self
                    .registrar_process()
                    .is_some_and(|id| !self.node.state.lock().faults.registration_removed_for(&id)),
                plugin_running: p.containers.running("longhorn-csi-plugin"),
            })
    }

    /// The container id of the running node-driver-registrar of the live plugin pod.
    pub fn registrar_process(&self) -> Option<String> {
        self.pod_workers
            .iter()
            .find(|p| p.name.starts_with("longhorn-csi-plugin") && !p.is_deleting())?
            .containers
            .main
            .iter()
            .find(|c| {
                c.name == "node-driver-registrar"
                    && matches!(c.state, ContainerState::Running { .. })
            })
            .map(|c| c.container_id.clone())
    }

    /// The CSI driver as the volume plugin finds it for its node calls.
    fn csi_driver(&self) -> CsiDriver {
        let crashing = self.node.state.lock().faults.csi_plugin_down;
        self.plugin_manager.driver(self.plugin_pod(), crashing)
    }

    /// The plugin processes' housekeeping: every running plugin container of the node's plugin
    /// pods (deleting ones too).
    fn track_plugin_processes(&mut self) {
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
        self.plugin_manager
            .track_plugin_processes(running, &self.node, &self.klog);
    }

    // ----- volume manager -------------------------------------------------------------------

    /// One pass of the volume manager; its populator reads the pods as the pod workers have
    /// them.
    fn sync_volumes(&mut self) {
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

    // ----- status manager -------------------------------------------------------------------

    /// The status manager's pass: the statuses of the pods whose status changed go to its
    /// cache (`generateAPIPodStatus`, `SetPodStatus`), then it syncs.
    fn sync_statuses(&mut self) {
        let host_ip = self.node.internal_ip();
        let now = self.timing.clock.now_rfc3339();
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
                now: &now,
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
                    p.set_pod(pod);
                }
                Synced::Deleted => {
                    let line = format!(
                        "\"SyncLoop DELETE\" source=\"api\" pods=[\"{}/{}\"]",
                        p.ns, p.name
                    );
                    self.klog.info("kubelet.go:2604", &line);
                }
            }
        }
    }
}

fn rv_of(obj: &Value) -> Option<u64> {
    meta::resource_version(obj).parse().ok()
}
