//! The pod workers (pkg/kubelet/pod_workers.go): one worker per pod, in one of upstream's three
//! states. `SyncPod`: the pod should run; its sync waits for the pod's volumes
//! (`WaitForAttachAndMount`), gives it an IP, and has the runtime start its containers.
//! `TerminatingPod`: deleted, its containers are being stopped (`SyncTerminatingPod`: Killing
//! events, the containers stop once their grace has passed). `TerminatedPod`: nothing runs; a
//! deleted pod's `SyncTerminatedPod` waits for its volumes to be unmounted, and only then may it
//! go from the API. A pod whose phase turns terminal (Succeeded, Failed) goes to TerminatedPod
//! too, as upstream's SyncPod reports `isTerminal`.
//!
//! Workers are event-driven: a settled pod (every container running, nothing timed pending) is
//! not synced again before its pod changes, the node's faults change, the kubelet restarts, or
//! the periodic resync (`--sync-frequency`).
//!
//! The incident RCA's reading of "saturated workers", a bounded pool of workers that stale pods
//! hold for ever, is an option (`pool`): a worker is busy for a sync, not for a pod's life.

use super::kubelet_pods::{get_phase, terminal_phase, PodPhase};
use super::kuberuntime_manager::{PodContainers, RuntimeFaults};
use super::log::KubeletLog;
use super::pleg::{RuntimeAnswer, RUNTIME_REQUEST_TIMEOUT};
use super::runtime::script;
use super::state::{ResetKind, SimNode};
use super::status_manager::StatusManager;
use super::volumemanager::{VolumeManager, VolumesNotReady};
use crate::apiserver::meta;
use crate::events::{EventKind, EventRecorder};
use crate::timing::SimInstant;
use crate::timing::Timing;
use serde_json::Value;
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

/// `PodWorkerState`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PodWorkerState {
    /// The pod should be running.
    SyncPod,
    /// The pod was deleted; its containers stop at `stop_at` (their grace).
    TerminatingPod { stop_at: SimInstant },
    /// No container runs; the pod's resources (its volumes) are being cleaned up.
    TerminatedPod,
}

/// Where a syncing pod is in its wait for volumes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum VolumeWait {
    /// Not waiting (volumes ready, or not synced yet).
    Idle,
    /// `WaitForAttachAndMount` has polled since then.
    Since(SimInstant),
    /// The last wait timed out: the worker's sync is requeued until then.
    Requeued(SimInstant),
}

/// One pod: the pod manager's copy, its worker's state, its containers in the runtime, and what
/// its status reports.
#[derive(Debug)]
pub struct PodWorker {
    pub uid: String,
    pub ns: String,
    pub name: String,
    /// The pod manager's copy; replaced through [`PodWorker::set_pod`], which keeps `deleting`.
    pub pod: Arc<Value>,
    /// The copy has a deletionTimestamp. Kept with the copy: the volume manager asks for every
    /// pod on every pass, and reading it from the object each time was a memory walk over all
    /// of a node's pods, 6 % of the CPU at 20,000 pods.
    deleting: bool,
    pub state: PodWorkerState,
    pub containers: PodContainers,
    pub phase: PodPhase,
    pub started_time: Option<String>,
    pub pod_ip: Option<String>,
    /// Something its status reports changed since the status manager last had it.
    pub status_dirty: bool,
    /// SyncPod has run once (the pod has a status of the kubelet's).
    pub synced: bool,
    /// A terminated pod whose volumes were never cleaned up and whose sandbox the runtime cannot
    /// tear down (`script::STALE_VOLUMES`): its SyncTerminatedPod never finishes and PLEG's
    /// relist hangs on it.
    pub stale: bool,
    /// A settled pod is not synced again before this, unless something changes.
    pub quiet_until: Option<SimInstant>,
    /// Holds one of the bounded pool's workers (only with the pool option).
    slot: bool,
    volume_wait: VolumeWait,
    /// A StopContainer in flight that does not return before this: a container process in
    /// uninterruptible sleep on a hung NFS mount outlives SIGKILL (`hungNfs`).
    stop_hangs_until: Option<SimInstant>,
}

impl PodWorker {
    /// `ShouldPodContainersBeTerminating`: deleted, or its worker is terminating it or has.
    pub fn should_pod_containers_be_terminating(&self) -> bool {
        self.state != PodWorkerState::SyncPod || self.is_deleting()
    }

    /// The pod has a deletionTimestamp.
    pub fn is_deleting(&self) -> bool {
        debug_assert_eq!(
            self.deleting,
            meta::is_deleting(&self.pod),
            "set_pod keeps it"
        );
        self.deleting
    }

    /// A newer copy of the pod (from the pod source or a status write's answer).
    pub fn set_pod(&mut self, pod: Arc<Value>) {
        self.deleting = meta::is_deleting(&pod);
        self.pod = pod;
    }

    /// `ShouldPodRuntimeBeRemoved`: its worker has stopped every container (what the volume
    /// manager's populator waits for before it lets the pod's volumes go).
    pub fn should_pod_runtime_be_removed(&self) -> bool {
        self.state != PodWorkerState::SyncPod && !self.containers.any_running()
    }

    /// Sync at the next pass, settled or not.
    pub fn wake(&mut self) {
        self.quiet_until = None;
    }
}

/// What a pod worker's sync uses besides the pod.
pub struct SyncContext<'a> {
    pub node: &'a SimNode,
    pub recorder: &'a EventRecorder,
    pub log: &'a KubeletLog,
    pub timing: &'a Timing,
    pub volumes: &'a VolumeManager,
    pub status: &'a mut StatusManager,
    /// The runtime's image cache.
    pub images: &'a mut HashSet<String>,
}

#[derive(Debug)]
pub struct PodWorkers {
    pods: BTreeMap<String, PodWorker>,
    /// The incident RCA's bounded pool of workers, off (None) by default: upstream runs one
    /// goroutine per pod.
    pool: Option<usize>,
    next_ip: u32,
}

impl PodWorkers {
    pub fn new(pool: Option<usize>) -> Self {
        PodWorkers {
            pods: BTreeMap::new(),
            pool,
            next_ip: 2,
        }
    }

    pub fn get(&self, uid: &str) -> Option<&PodWorker> {
        self.pods.get(uid)
    }

    pub fn get_mut(&mut self, uid: &str) -> Option<&mut PodWorker> {
        self.pods.get_mut(uid)
    }

    pub fn iter(&self) -> impl Iterator<Item = &PodWorker> {
        self.pods.values()
    }

    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut PodWorker> {
        self.pods.values_mut()
    }

    /// A pod the pod source delivers for the first time.
    pub fn add(&mut self, pod: Arc<Value>, timing: &Timing) -> &PodWorker {
        let stale = pod
            .pointer(&format!(
                "/metadata/annotations/{}",
                script::STALE_VOLUMES.replace('/', "~1")
            ))
            .and_then(Value::as_str)
            == Some("true");
        let uid = meta::uid(&pod).to_string();
        let worker = PodWorker {
            uid: uid.clone(),
            ns: meta::namespace(&pod).into(),
            name: meta::name(&pod).into(),
            containers: PodContainers::from_spec(&pod, timing),
            deleting: meta::is_deleting(&pod),
            pod,
            state: if stale {
                PodWorkerState::TerminatedPod
            } else {
                PodWorkerState::SyncPod
            },
            phase: PodPhase::Pending,
            started_time: None,
            pod_ip: None,
            status_dirty: false,
            synced: false,
            stale,
            quiet_until: None,
            slot: false,
            volume_wait: VolumeWait::Idle,
            stop_hangs_until: None,
        };
        self.pods.entry(uid).or_insert(worker)
    }

    /// A pod gone from the API: its worker goes.
    pub fn remove(&mut self, uid: &str) -> Option<PodWorker> {
        self.pods.remove(uid)
    }

    /// Sync every pod at the next pass, settled or not.
    pub fn wake_all(&mut self) {
        for p in self.pods.values_mut() {
            p.wake();
        }
    }

    /// Does the runtime fail to answer for some pod's sandbox (stale pods)? With the RCA's pool
    /// the stale pods hold workers instead.
    pub fn sandboxes_stuck(&self) -> bool {
        self.pool.is_none() && self.pods.values().any(|p| p.stale)
    }

    /// How the runtime answers a relist now: not at all on stale sandboxes; with inspections
    /// that time out while a container's stop hangs (kubernetes/kubernetes#74135, #94829).
    pub fn runtime_answer(&self) -> RuntimeAnswer {
        if self.sandboxes_stuck() {
            RuntimeAnswer::Hangs
        } else if self.pods.values().any(|p| p.stop_hangs_until.is_some()) {
            RuntimeAnswer::TimesOut
        } else {
            RuntimeAnswer::Answers
        }
    }

    /// StopContainer calls that reach their deadline return, whether or not the sync loop runs
    /// pod workers meanwhile (the worker's goroutine is inside the call): killContainer fails
    /// (`kuberuntime_container.go`) and SyncTerminatingPod records FailedKillPod (`kubelet.go`).
    /// The worker tries again at its next sync, which hangs again while the cause lasts.
    pub fn return_hung_stops(
        &mut self,
        now: SimInstant,
        recorder: &EventRecorder,
        log: &KubeletLog,
    ) {
        for p in self.pods.values_mut() {
            if p.stop_hangs_until.is_some_and(|until| now >= until) {
                p.stop_hangs_until = None;
                stop_failed(p, recorder, log);
            }
        }
    }

    /// The kubelet started again: no worker runs; after a reboot every container died with the
    /// node and starts again.
    pub fn kubelet_started(&mut self, kind: ResetKind) {
        self.wake_all();
        for p in self.pods.values_mut() {
            p.slot = false;
            p.volume_wait = VolumeWait::Idle;
            if kind == ResetKind::Reboot {
                p.containers.node_rebooted();
                p.pod_ip = None;
                p.status_dirty = true;
            }
        }
    }

    /// Kill the running main container `container` of the first live pod whose name starts
    /// with `pod_prefix`; the runtime starts it again, like `crictl stop`.
    pub fn restart_container(&mut self, pod_prefix: &str, container: &str) -> bool {
        let Some(p) = self
            .pods
            .values_mut()
            .find(|p| p.name.starts_with(pod_prefix) && !p.is_deleting())
        else {
            return false;
        };
        if !p.containers.kill_container(container) {
            return false;
        }
        p.status_dirty = true;
        p.slot = true;
        p.wake();
        true
    }

    fn busy_workers(&self) -> usize {
        self.pods.values().filter(|p| p.slot).count()
    }

    /// One pass over every pod's worker.
    pub fn sync_all(&mut self, ctx: &mut SyncContext<'_>) {
        let uids: Vec<String> = self.pods.keys().cloned().collect();
        for uid in &uids {
            self.sync(uid, ctx);
        }
    }

    fn sync(&mut self, uid: &str, ctx: &mut SyncContext<'_>) {
        let now = ctx.timing.clock.instant();
        let Some(p) = self.pods.get(uid) else { return };
        if p.quiet_until.is_some_and(|t| now < t) {
            return;
        }
        match p.state {
            PodWorkerState::TerminatedPod => self.sync_terminated_pod(uid, ctx),
            PodWorkerState::TerminatingPod { .. } => self.sync_terminating_pod(uid, ctx, now),
            PodWorkerState::SyncPod if p.is_deleting() => self.sync_terminating_pod(uid, ctx, now),
            PodWorkerState::SyncPod => self.sync_pod(uid, ctx, now),
        }
    }

    /// `SyncPod`.
    fn sync_pod(&mut self, uid: &str, ctx: &mut SyncContext<'_>, now: SimInstant) {
        if let Some(size) = self.pool {
            if !self.pods[uid].slot {
                if self.busy_workers() >= size {
                    // Never synced: the pod keeps whatever status the API has (none from us).
                    return;
                }
                let p = self.pods.get_mut(uid).expect("listed");
                p.slot = true;
                p.volume_wait = VolumeWait::Since(now);
            }
        }
        let p = self.pods.get_mut(uid).expect("listed");
        p.volume_wait = match p.volume_wait {
            // Requeued after a failed sync: the worker waits for its backoff.
            VolumeWait::Requeued(at) if at > now => return,
            VolumeWait::Requeued(at) => VolumeWait::Since(at),
            VolumeWait::Idle => VolumeWait::Since(now),
            wait => wait,
        };
        if !p.synced {
            p.synced = true;
            p.status_dirty = true;
            p.started_time = Some(ctx.timing.clock.now_rfc3339());
            p.containers.waiting_to_start();
        }
        if let Err(VolumesNotReady {
            unmounted,
            unattached,
        }) = ctx.volumes.wait_for_attach_and_mount(uid, &p.pod)
        {
            // WaitForAttachAndMount gives up at podAttachAndMountTimeout. A 1.35 kubelet records
            // no event for that (the wait was interrupted); the pod worker logs the error and
            // requeues the pod.
            let timeout = ctx.timing.s(ctx.timing.pod_attach_mount_timeout);
            if matches!(p.volume_wait, VolumeWait::Since(m) if now.duration_since(m) >= timeout) {
                let line = format!(
                    "\"Error syncing pod, skipping\" err=\"unmounted volumes=[{}], unattached volumes=[{}], failed to process volumes=[]: context deadline exceeded\" pod=\"{}/{}\" podUID=\"{}\"",
                    unmounted.join(" "), unattached.join(" "), p.ns, p.name, p.uid
                );
                ctx.log.error("pod_workers.go:1324", &line);
                p.volume_wait =
                    VolumeWait::Requeued(now + ctx.timing.s(ctx.timing.pod_sync_requeue));
            }
            return;
        }
        p.volume_wait = VolumeWait::Idle;
        // The sandbox alone changes no status: kuberuntime_manager.go SyncPod creates it and
        // starts the containers in one call, so the first status that shows it (its IP,
        // PodReadyToStartContainers) also shows what became of the containers (as a real
        // 1.35 kubelet shows it: faultline diff, docs/fidelity.md).
        if p.pod_ip.is_none() {
            p.pod_ip = Some(format!("10.244.{}.{}", ctx.node.index, self.next_ip));
            self.next_ip += 1;
        }
        let faults = {
            let st = ctx.node.state.lock();
            RuntimeFaults {
                csi_plugin_down: st.faults.csi_plugin_down,
                prober_broken: st.faults.prober_broken,
            }
        };
        let run = p
            .containers
            .sync_pod(&p.pod, now, ctx.timing, ctx.images, faults, ctx.recorder);
        p.status_dirty |= run.changed;
        let phase = get_phase(&p.containers);
        if p.phase != phase {
            p.phase = phase;
            p.status_dirty = true;
        }
        // A pod that is running with every container started no longer needs its worker.
        if p.phase != PodPhase::Pending && p.containers.main.iter().all(|c| c.started_once) {
            p.slot = false;
        }
        if p.phase.is_terminal() {
            // SyncPod reports the pod terminal: nothing will run in it again.
            p.state = PodWorkerState::TerminatedPod;
            return;
        }
        // Nothing timed is pending (no pull, start or back-off, no scripted exit): the pod
        // worker idles until a change or the periodic resync.
        if p.phase == PodPhase::Running
            && !run.scripted_exit
            && p.containers.all_started_and_running()
        {
            p.quiet_until = Some(now + ctx.timing.s(ctx.timing.pod_resync));
        }
    }

    /// `SyncTerminatingPod`: Killing events for the running containers, which stop once their
    /// grace has passed; then the pod's phase is terminal (Succeeded when every container exited
    /// 0, else Failed: `getPhase` with `podIsTerminal`) and its worker moves to TerminatedPod.
    fn sync_terminating_pod(&mut self, uid: &str, ctx: &mut SyncContext<'_>, now: SimInstant) {
        let p = self.pods.get_mut(uid).expect("listed");
        match p.state {
            PodWorkerState::SyncPod => {
                p.containers.kill_pod(&p.pod, ctx.recorder);
                p.state = PodWorkerState::TerminatingPod {
                    stop_at: now + ctx.timing.s(ctx.timing.container_start),
                };
                return;
            }
            PodWorkerState::TerminatingPod { stop_at } if now < stop_at => return,
            PodWorkerState::TerminatingPod { .. } | PodWorkerState::TerminatedPod => {}
        }
        if p.containers.any_running()
            && ctx.node.state.lock().faults.hung_nfs
            && ctx.volumes.pod_has_nfs_mount(uid)
        {
            stop_hangs(p, ctx, now);
            return;
        }
        p.stop_hangs_until = None;
        p.status_dirty |= p.containers.stop_containers();
        p.slot = false;
        if let Some(phase) = terminal_phase(&p.containers) {
            if p.phase != phase {
                p.phase = phase;
                p.status_dirty = true;
            }
        }
        p.state = PodWorkerState::TerminatedPod;
        self.sync_terminated_pod(uid, ctx);
    }

    /// `SyncTerminatedPod`: a deleted pod is finished once its volumes are unmounted
    /// (`WaitForUnmount`, then `TerminatePod`); only then may the status manager delete the pod
    /// object (`canBeDeleted`). A pod whose volumes cannot be torn down stays Terminating.
    fn sync_terminated_pod(&mut self, uid: &str, ctx: &mut SyncContext<'_>) {
        let pool = self.pool;
        let busy = self.busy_workers();
        let p = self.pods.get_mut(uid).expect("listed");
        if p.stale {
            // Its volumes never clean up: SyncTerminatedPod polls every 100 ms; the line is
            // V(3), below the kubelet's verbosity.
            if pool.is_some_and(|size| !p.slot && busy < size) {
                // The RCA's reading: the stale pod holds one of the pool's workers for ever.
                p.slot = true;
            }
            let line = format!("\"Pod is terminated, but some volumes have not been cleaned up\" pod=\"{}/{}\" podUID=\"{}\"", p.ns, p.name, p.uid);
            ctx.log.v(3, "kubelet.go:2369", &line);
            return;
        }
        p.slot = false;
        if p.is_deleting() && ctx.volumes.pod_volumes_unmounted(uid) {
            ctx.status.terminate_pod(&p.pod);
        }
    }
}

/// The grace period a pod's containers are stopped with.
fn grace_seconds(pod: &Value) -> u64 {
    pod.pointer("/metadata/deletionGracePeriodSeconds")
        .or_else(|| pod.pointer("/spec/terminationGracePeriodSeconds"))
        .and_then(Value::as_u64)
        .unwrap_or(30)
}

/// StopContainer of a process in uninterruptible sleep: SIGTERM and SIGKILL do not end it, so
/// the CRI call returns only at its deadline, the runtime request timeout plus the grace period
/// (cri-client `remote_runtime.go`).
fn stop_hangs(p: &mut PodWorker, ctx: &mut SyncContext<'_>, now: SimInstant) {
    if p.stop_hangs_until.is_none() {
        let grace = Duration::from_secs(grace_seconds(&p.pod));
        p.stop_hangs_until = Some(now + ctx.timing.s(RUNTIME_REQUEST_TIMEOUT + grace));
    }
}

/// A hung StopContainer returned: the error line per container and the pod's FailedKillPod.
fn stop_failed(p: &PodWorker, recorder: &EventRecorder, log: &KubeletLog) {
    const ERR: &str = "rpc error: code = DeadlineExceeded desc = context deadline exceeded";
    let grace = grace_seconds(&p.pod);
    let mut failures = Vec::new();
    for c in p.containers.running_containers() {
        let line = format!(
            "\"Container termination failed with gracePeriod\" err=\"{}\" pod=\"{}/{}\" podUID=\"{}\" containerName=\"{}\" containerID=\"containerd://{}\" gracePeriod={}",
            ERR, p.ns, p.name, p.uid, c.name, c.container_id, grace
        );
        log.error("kuberuntime_container.go:895", &line);
        failures.push(format!(
            "failed to \"KillContainer\" for \"{}\" with KillContainerError: \"{}\"",
            c.name, ERR
        ));
    }
    // utilerrors.NewAggregate: one error as it is, several in brackets.
    let err = if failures.len() == 1 {
        failures.remove(0)
    } else {
        format!("[{}]", failures.join(", "))
    };
    recorder.record(
        &p.pod,
        EventKind::Warning,
        "FailedKillPod",
        &format!("error killing pod: {}", err),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apiserver::ApiServer;
    use crate::internal::Internal;
    use serde_json::json;
    use std::time::Duration;

    fn pod(uid: &str, annotations: Value) -> Arc<Value> {
        Arc::new(json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": format!("p-{uid}"), "namespace": "default", "uid": uid, "resourceVersion": "1", "annotations": annotations},
            "spec": {"nodeName": "n1", "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}))
    }

    /// Sync every pod until `done` holds (the runtime's steps take a few scaled milliseconds).
    fn sync_until(
        workers: &mut PodWorkers,
        ctx: &mut SyncContext<'_>,
        uid: &str,
        done: impl Fn(&PodWorker) -> bool,
    ) {
        for _ in 0..2000 {
            workers.sync_all(ctx);
            if done(workers.get(uid).unwrap()) {
                return;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        panic!("{:?}", workers.get(uid));
    }

    #[test]
    fn pods_go_through_upstreams_states() {
        // At 1/1000 a pull takes 1.5 ms and a container's grace 0.3 ms.
        let timing = Timing::scaled(0.001);
        let client = Internal::new(ApiServer::new(100), "kubelet");
        let node = SimNode::new("n1", 0, false);
        let recorder = EventRecorder::new(client, "kubelet", Some("n1"));
        let log = KubeletLog::new(node.clone(), timing.clone());
        let volumes = VolumeManager::new(timing.clone());
        let mut status = StatusManager::default();
        let mut images = HashSet::new();
        let mut ctx = SyncContext {
            node: &node,
            recorder: &recorder,
            log: &log,
            timing: &timing,
            volumes: &volumes,
            images: &mut images,
            status: &mut status,
        };
        let mut workers = PodWorkers::new(None);
        // A pod that exits 0: its phase turns terminal and its worker is done with it.
        workers.add(pod("exits", json!({script::EXIT_AFTER: "1s"})), &timing);
        sync_until(&mut workers, &mut ctx, "exits", |p| {
            p.phase == PodPhase::Running
        });
        let p = workers.get("exits").unwrap();
        assert_eq!(p.state, PodWorkerState::SyncPod);
        assert!(!p.should_pod_containers_be_terminating() && !p.should_pod_runtime_be_removed());
        sync_until(&mut workers, &mut ctx, "exits", |p| {
            p.state == PodWorkerState::TerminatedPod
        });
        let p = workers.get("exits").unwrap();
        assert_eq!(p.phase, PodPhase::Succeeded);
        assert!(p.should_pod_runtime_be_removed());
        // A running pod that is deleted: Terminating while its container stops, then
        // Terminated.
        workers.add(pod("deleted", json!({})), &timing);
        sync_until(&mut workers, &mut ctx, "deleted", |p| {
            p.containers.running("c")
        });
        let mut deleting = (*workers.get("deleted").unwrap().pod).clone();
        deleting["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        // As the pod source delivers an update: the settled pod wakes.
        let p = workers.get_mut("deleted").unwrap();
        p.set_pod(Arc::new(deleting));
        p.wake();
        workers.sync_all(&mut ctx);
        let p = workers.get("deleted").unwrap();
        assert!(
            matches!(p.state, PodWorkerState::TerminatingPod { .. }),
            "{p:?}"
        );
        assert!(p.should_pod_containers_be_terminating() && !p.should_pod_runtime_be_removed());
        sync_until(&mut workers, &mut ctx, "deleted", |p| {
            p.state == PodWorkerState::TerminatedPod
        });
        let p = workers.get("deleted").unwrap();
        assert!(p.should_pod_runtime_be_removed() && !p.containers.any_running());
        assert_eq!(p.phase, PodPhase::Succeeded);
        // A stale pod is terminated from the start and its sandbox stalls the runtime.
        workers.add(
            pod("stale", json!({script::STALE_VOLUMES: "true"})),
            &timing,
        );
        assert_eq!(
            workers.get("stale").unwrap().state,
            PodWorkerState::TerminatedPod
        );
        assert!(workers.sandboxes_stuck());
        workers.sync_all(&mut ctx);
        assert!(!workers.get("stale").unwrap().synced);
        assert!(!PodWorkers::new(Some(8)).sandboxes_stuck());
    }
}
