//! One simulated kubelet: pod workers, the volume manager (through `volumes::PendingOperations`),
//! a container runtime whose behaviour pods can script by annotation, the status manager, CSI
//! plugin registration, Lease heartbeats, and a kubelet log in klog format.
//!
//! Everything runs in one task per node that ticks at the volume reconciler period, so the
//! order of effects is deterministic for a given sequence of API events.

use super::node::{klog, KubeletProcess, MountHolder, ResetKind, SimNode};
use super::volumes::{global_mount_path, pod_mount_path, unique_name, OpKey, PendingOperations, DRIVER};
use crate::events::{EventKind, EventRecorder};
use crate::internal::Internal;
use crate::meta;
use crate::timing::{go_duration, Timing};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// Pod annotations that script the simulated container runtime.
pub mod script {
    /// Main containers exit with code 1 this long after starting (then CrashLoopBackOff).
    pub const CRASH_AFTER: &str = "sim.faultline.dev/crash-after";
    /// Main containers exit with code 0 this long after starting.
    pub const EXIT_AFTER: &str = "sim.faultline.dev/exit-after";
    /// Containers start but never pass readiness.
    pub const NEVER_READY: &str = "sim.faultline.dev/never-ready";
    /// Image pulls fail with ErrImagePull / ImagePullBackOff.
    pub const IMAGE_PULL_ERROR: &str = "sim.faultline.dev/image-pull-error";
    /// How long each init container runs (default: the timing's init_container_run).
    pub const INIT_DURATION: &str = "sim.faultline.dev/init-duration";
    /// Log lines each main container writes when it starts (newline separated).
    pub const LOG: &str = "sim.faultline.dev/log";
    /// Marks a terminated pod whose volumes were never cleaned up: it keeps a pod worker busy.
    pub const STALE_VOLUMES: &str = "sim.faultline.dev/stale-volumes";
}

/// Pod workers that may sync at once; terminated pods with uncleaned volumes keep theirs.
/// (The real kubelet has a goroutine per pod; the incident's "saturated workers" is modelled as
/// this bounded pool — see docs/fidelity.md.)
pub const DEFAULT_SYNC_WORKERS: usize = 8;

#[derive(Debug, Clone)]
pub enum PodEvent {
    Upsert(Arc<Value>),
    Deleted(String),
}

#[derive(Debug, Clone, PartialEq)]
enum CState {
    Waiting(String, Option<String>),
    Running { started: String, since: Instant },
    Terminated { exit: i32, reason: String, started: String, finished: String },
}

#[derive(Debug, Clone)]
struct Ctr {
    name: String,
    image: String,
    state: CState,
    last: Option<CState>,
    ready: bool,
    started_once: bool,
    restarts: u32,
    /// When the next step (pull done, start, restart after backoff) may happen.
    next: Option<Instant>,
    step: Step,
    crash_backoff: Duration,
    logs: Vec<String>,
    prev_logs: Vec<String>,
    container_id: String,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Step {
    Idle,
    Pulling,
    Creating,
    Started,
    BackOff,
}

#[derive(Debug, Clone)]
struct PodVol {
    name: String,
    /// PV name and volume handle for CSI volumes; None for local volumes (emptyDir, configMap...).
    csi: Option<(String, String)>,
    claim: Option<String>,
}

struct PodRt {
    uid: String,
    ns: String,
    name: String,
    pod: Arc<Value>,
    slot: bool,
    synced: bool,
    wait_mark: Option<Instant>,
    init: Vec<Ctr>,
    main: Vec<Ctr>,
    phase: String,
    started_time: Option<String>,
    pod_ip: Option<String>,
    dirty: bool,
    killing: bool,
    stopped_at: Option<Instant>,
    stale: bool,
    last_posted: Option<Value>,
}

pub struct Kubelet {
    node: Arc<SimNode>,
    client: Internal,
    recorder: EventRecorder,
    timing: Timing,
    rx: mpsc::UnboundedReceiver<PodEvent>,
    pods: BTreeMap<String, PodRt>,
    ops: PendingOperations,
    /// Device mounts (pv name -> volume handle) and per-pod setups.
    devices: HashMap<String, String>,
    setups: HashSet<(String, String)>,
    csi_registered: bool,
    images: HashSet<String>,
    next_lease: Instant,
    next_ip: u32,
    sync_workers: usize,
    volumes_in_use: Vec<String>,
    pid: u32,
}

impl Kubelet {
    pub fn new(node: Arc<SimNode>, client: Internal, timing: Timing, rx: mpsc::UnboundedReceiver<PodEvent>, sync_workers: usize) -> Self {
        let recorder = EventRecorder::new(client.clone(), "kubelet", Some(&node.name));
        let ops = PendingOperations::new(timing.s(timing.op_backoff_initial), timing.s(timing.op_backoff_max));
        let pid = node.state.lock().pid;
        Kubelet {
            node,
            client,
            recorder,
            timing,
            rx,
            pods: BTreeMap::new(),
            ops,
            devices: HashMap::new(),
            setups: HashSet::new(),
            csi_registered: false,
            images: HashSet::new(),
            next_lease: Instant::now(),
            next_ip: 2,
            sync_workers,
            volumes_in_use: vec![],
            pid,
        }
    }

    fn log(&self, sev: char, file: &str, msg: &str) {
        self.node.kubelet_log.push(klog(sev, self.pid, file, msg));
    }

    /// Drain pod events and run one tick. Returns false when the event source is gone.
    pub fn step(&mut self) -> bool {
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
        self.log('I', "server.go:487", &format!("\"Kubelet version\" kubeletVersion=\"{}\"", crate::nodes::KUBELET_VERSION));
        let mut node_obj = crate::nodes::node_object(&self.node.name, self.node.index, self.node.control_plane);
        node_obj["status"]["nodeInfo"]["bootID"] = json!(self.node.state.lock().boot_id.clone());
        if self.client.get("", "nodes", "", &self.node.name).is_none() {
            let _ = self.client.create("", "nodes", "", node_obj);
            self.log('I', "kubelet_node_status.go:75", &format!("\"Attempting to register node\" node=\"{}\"", self.node.name));
            self.log('I', "kubelet_node_status.go:78", &format!("\"Successfully registered node\" node=\"{}\"", self.node.name));
        }
        if self.client.get("storage.k8s.io", "csinodes", "", &self.node.name).is_none() {
            let node_uid = self.client.get("", "nodes", "", &self.node.name).map(|n| meta::uid(&n).to_string()).unwrap_or_default();
            let _ = self.client.create(
                "storage.k8s.io",
                "csinodes",
                "",
                json!({"apiVersion": "storage.k8s.io/v1", "kind": "CSINode",
                       "metadata": {"name": self.node.name, "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": self.node.name, "uid": node_uid}]},
                       "spec": {"drivers": []}}),
            );
        }
        self.log('I', "kubelet.go:2468", "\"Starting kubelet main sync loop\"");
        self.renew_lease(true);
    }

    fn on_event(&mut self, ev: PodEvent) {
        match ev {
            PodEvent::Deleted(uid) => {
                if let Some(p) = self.pods.remove(&uid) {
                    self.log('I', "kubelet.go:2434", &format!("\"SyncLoop REMOVE\" source=\"api\" pods=[\"{}/{}\"]", p.ns, p.name));
                }
            }
            PodEvent::Upsert(obj) => {
                let uid = meta::uid(&obj).to_string();
                match self.pods.get_mut(&uid) {
                    Some(p) => {
                        // Someone else (the node lifecycle controller) may have changed the
                        // status: the status manager reconciles it back to the kubelet's view.
                        if p.synced && p.last_posted.as_ref() != obj.get("status") {
                            p.dirty = true;
                        }
                        p.pod = obj;
                    }
                    None => {
                        let rt = self.new_pod(obj);
                        self.log('I', "kubelet.go:2418", &format!("\"SyncLoop ADD\" source=\"api\" pods=[\"{}/{}\"]", rt.ns, rt.name));
                        self.pods.insert(uid, rt);
                    }
                }
            }
        }
    }

    fn new_pod(&self, obj: Arc<Value>) -> PodRt {
        let ctrs = |field: &str| -> Vec<Ctr> {
            obj.pointer(&format!("/spec/{}", field))
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .map(|c| Ctr {
                            name: c.get("name").and_then(Value::as_str).unwrap_or("").into(),
                            image: c.get("image").and_then(Value::as_str).unwrap_or("").into(),
                            state: CState::Waiting(String::new(), None),
                            last: None,
                            ready: false,
                            started_once: false,
                            restarts: 0,
                            next: None,
                            step: Step::Idle,
                            crash_backoff: self.timing.s(self.timing.crash_backoff_initial),
                            logs: vec![],
                            prev_logs: vec![],
                            container_id: String::new(),
                        })
                        .collect()
                })
                .unwrap_or_default()
        };
        let stale = obj.pointer(&format!("/metadata/annotations/{}", script::STALE_VOLUMES.replace('/', "~1"))).and_then(Value::as_str) == Some("true");
        PodRt {
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
            last_posted: None,
        }
    }

    fn annotation<'a>(pod: &'a Value, key: &str) -> Option<&'a str> {
        pod.pointer("/metadata/annotations").and_then(|a| a.get(key)).and_then(Value::as_str)
    }

    /// Handle process state and resets; returns false when the kubelet does nothing this tick.
    fn process_state(&mut self) -> bool {
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
            (st.kubelet.clone(), if st.kubelet == KubeletProcess::Running { st.reset.take() } else { None })
        };
        if let Some(kind) = reset {
            self.reset(kind);
        }
        process == KubeletProcess::Running
    }

    /// A kubelet that starts again: empty operation executor and pod workers; what is mounted
    /// stays mounted (reconstructed from disk). A reboot also loses every mount and container.
    fn reset(&mut self, kind: ResetKind) {
        self.pid = self.node.state.lock().pid;
        self.ops.clear();
        self.csi_registered = false;
        {
            let mut st = self.node.state.lock();
            match kind {
                // Reconstruction finds the orphaned device mount of a PV it owns and cleans it up.
                ResetKind::KubeletRestart => st.faults.stale_mounts.retain(|m| m.holder != MountHolder::Kubelet),
                ResetKind::Reboot => {
                    st.faults.stale_mounts.clear();
                    st.faults.prober_broken = false;
                }
            }
        }
        self.log('I', "server.go:487", &format!("\"Kubelet version\" kubeletVersion=\"{}\"", crate::nodes::KUBELET_VERSION));
        self.log('I', "kubelet.go:2468", "\"Starting kubelet main sync loop\"");
        if kind == ResetKind::Reboot {
            self.devices.clear();
            self.setups.clear();
            self.images.clear();
        }
        for p in self.pods.values_mut() {
            p.slot = false;
            p.wait_mark = None;
            if kind == ResetKind::Reboot {
                // Every container died with the node; they start again (restartCount + 1).
                for c in p.init.iter_mut().chain(p.main.iter_mut()) {
                    if let CState::Running { ref started, .. } = c.state {
                        c.last = Some(CState::Terminated { exit: 255, reason: "Unknown".into(), started: started.clone(), finished: meta::now_rfc3339() });
                        c.restarts += 1;
                    }
                    if !matches!(c.state, CState::Terminated { ref reason, .. } if reason == "Completed") {
                        c.state = CState::Waiting("ContainerCreating".into(), None);
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
        if !self.process_state() {
            return;
        }
        let partitioned = self.node.state.lock().faults.partitioned;
        if !partitioned && Instant::now() >= self.next_lease {
            self.renew_lease(false);
        }
        self.sync_csi_registration(partitioned);
        self.reconcile_volumes();
        let uids: Vec<String> = self.pods.keys().cloned().collect();
        for uid in &uids {
            self.sync_pod(uid);
        }
        if !partitioned {
            self.post_statuses();
            self.post_volumes_in_use();
        }
    }

    // ----- node heartbeat -------------------------------------------------------------------

    fn renew_lease(&mut self, force_ready: bool) {
        self.next_lease = Instant::now() + self.timing.s(self.timing.lease_renew);
        if self.node.state.lock().faults.partitioned {
            return;
        }
        let now = meta::rfc3339_micro(chrono::Utc::now());
        let name = self.node.name.clone();
        match self.client.get("coordination.k8s.io", "leases", "kube-node-lease", &name) {
            Some(_) => {
                let _ = self.client.merge("coordination.k8s.io", "leases", "kube-node-lease", &name, &json!({"spec": {"renewTime": now}}));
            }
            None => {
                let node_uid = self.client.get("", "nodes", "", &name).map(|n| meta::uid(&n).to_string()).unwrap_or_default();
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
        // The kubelet posts Ready=True whenever it runs and the node does not say so.
        let Some(node) = self.client.get("", "nodes", "", &name) else { return };
        let ready = meta::condition_status(&node, "Ready") == Some("True");
        let boot_id = self.node.state.lock().boot_id.clone();
        let boot_changed = node.pointer("/status/nodeInfo/bootID").and_then(Value::as_str) != Some(boot_id.as_str());
        if !ready || force_ready || boot_changed {
            let mut fresh = crate::nodes::node_object(&name, self.node.index, self.node.control_plane);
            fresh["status"]["nodeInfo"]["bootID"] = json!(boot_id);
            let patch = json!({"status": {"conditions": fresh["status"]["conditions"], "nodeInfo": fresh["status"]["nodeInfo"]}});
            let _ = self.client.merge_status("", "nodes", "", &name, &patch);
            if !ready {
                self.recorder.record(&node, EventKind::Normal, "NodeReady", &format!("Node {} status is now: NodeReady", name));
            }
            if boot_changed && force_ready {
                self.recorder.record(&node, EventKind::Warning, "Rebooted", &format!("Node {} has been rebooted, boot id: {}", name, boot_id));
            }
        }
    }

    // ----- CSI registration -----------------------------------------------------------------

    /// The node plugin is registered while the node's `longhorn-csi-plugin` container runs.
    fn csi_plugin_running(&self) -> bool {
        self.pods.values().any(|p| {
            p.name.starts_with("longhorn-csi-plugin")
                && !meta::is_deleting(&p.pod)
                && p.main.iter().any(|c| c.name == "longhorn-csi-plugin" && matches!(c.state, CState::Running { .. }))
        })
    }

    fn sync_csi_registration(&mut self, partitioned: bool) {
        let should = self.csi_plugin_running() && !self.node.state.lock().faults.csi_plugin_down;
        if should == self.csi_registered {
            return;
        }
        let sock = format!("/var/lib/kubelet/plugins/{}/csi.sock", DRIVER);
        if should {
            self.log('I', "csi_plugin.go:106", &format!("kubernetes.io/csi: Trying to validate a new CSI Driver with name: {} endpoint: {} versions: 1.0.0", DRIVER, sock));
            self.log('I', "csi_plugin.go:119", &format!("kubernetes.io/csi: Register new plugin with name: {} at endpoint: {}", DRIVER, sock));
            self.node.csi_log.push(klog('I', 1, "main.go:164", "Received GetInfo call: &InfoRequest{}"));
            self.node.csi_log.push(klog('I', 1, "main.go:90", "Received NotifyRegistrationStatus call: &RegistrationStatus{PluginRegistered:true,Error:,}"));
        } else {
            self.log('I', "csi_plugin.go:223", &format!("kubernetes.io/csi: registrationHandler.DeRegisterPlugin request for plugin {}", DRIVER));
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
        let _ = self.client.merge("storage.k8s.io", "csinodes", "", &self.node.name, &json!({"spec": {"drivers": drivers}}));
    }

    // ----- volume manager -------------------------------------------------------------------

    fn pod_volumes(&self, pod: &Value) -> Vec<PodVol> {
        let ns = meta::namespace(pod);
        pod.pointer("/spec/volumes")
            .and_then(Value::as_array)
            .map(|vs| {
                vs.iter()
                    .map(|v| {
                        let name = v.get("name").and_then(Value::as_str).unwrap_or("").to_string();
                        let claim = v.pointer("/persistentVolumeClaim/claimName").and_then(Value::as_str).map(String::from);
                        let csi = claim.as_ref().and_then(|c| {
                            let pvc = self.client.get("", "persistentvolumeclaims", ns, c)?;
                            let pv_name = meta::str_at(&pvc, "/spec/volumeName")?.to_string();
                            let pv = self.client.get("", "persistentvolumes", "", &pv_name)?;
                            let handle = meta::str_at(&pv, "/spec/csi/volumeHandle")?.to_string();
                            Some((pv_name, handle))
                        });
                        PodVol { name, csi, claim }
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    fn attached(&self, pv: &str) -> bool {
        self.client
            .list("storage.k8s.io", "volumeattachments", None, &|va| {
                meta::str_at(va, "/spec/nodeName") == Some(self.node.name.as_str())
                    && meta::str_at(va, "/spec/source/persistentVolumeName") == Some(pv)
            })
            .iter()
            .any(|va| va.pointer("/status/attached") == Some(&json!(true)))
    }

    /// Pods whose CSI volumes the reconciler should have set up.
    fn desired_setups(&self) -> Vec<(String, String, String, String)> {
        let mut out = Vec::new();
        for p in self.pods.values() {
            // Pods being synced, and pods already running, need their volumes.
            if !(p.slot || p.synced) || meta::is_deleting(&p.pod) || p.stale || p.phase == "Succeeded" || p.phase == "Failed" {
                continue;
            }
            for v in self.pod_volumes(&p.pod) {
                if let Some((pv, handle)) = v.csi {
                    out.push((p.uid.clone(), pv, handle, format!("{}/{}", p.ns, p.name)));
                }
            }
        }
        out
    }

    fn reconcile_volumes(&mut self) {
        let now = Instant::now();
        let (stale, io_errors, hung_nfs) = {
            let st = self.node.state.lock();
            (st.faults.stale_mounts.clone(), st.faults.io_errors, st.faults.hung_nfs)
        };
        let desired = self.desired_setups();
        let desired_set: HashSet<(String, String)> = desired.iter().map(|(u, pv, _, _)| (u.clone(), pv.clone())).collect();
        // 1. TearDown of pod mounts no longer wanted.
        let mut blocked = false;
        // 2. UnmountDevice of stale device mounts: GetDeviceMountRefs finds other references.
        for m in &stale {
            let un = unique_name(&m.pv);
            let key = OpKey::device(&un);
            if m.blocks_queue {
                blocked = true;
            }
            if !self.ops.may_run(&key, now) {
                continue;
            }
            let path = global_mount_path(&m.pv);
            let err = format!(
                "GetDeviceMountRefs check failed for volume \"{pv}\" (UniqueName: \"{un}\") on node \"{node}\" : the device mount path \"{path}\" is still mounted by other references [{path}]",
                pv = m.pv, un = un, node = self.node.name, path = path
            );
            let line = self.ops.failed(&key, now, &err);
            self.log('E', "nestedpendingoperations.go:348", &line);
        }
        if hung_nfs {
            // An NFS mount that never answers: the operation executor is stuck behind it.
            blocked = true;
        }
        for (uid, pv) in self.setups.clone() {
            if desired_set.contains(&(uid.clone(), pv.clone())) || blocked {
                continue;
            }
            let un = unique_name(&self.devices.get(&pv).cloned().unwrap_or_else(|| pv.clone()));
            let key = OpKey::pod(&un, &uid);
            if !self.ops.may_run(&key, now) {
                continue;
            }
            let teardown_err = if !self.csi_registered {
                Some(format!("kubernetes.io/csi: Unmounter.TearDownAt failed to get CSI client: driver name {} not found in the list of registered CSI drivers", DRIVER))
            } else if io_errors {
                Some("unmount failed: input/output error".to_string())
            } else {
                None
            };
            if let Some(e) = teardown_err {
                let line = self.ops.failed(&key, now, &format!("UnmountVolume.TearDown failed for volume \"{}\" (UniqueName: \"{}\") pod \"{}\" (UID: \"{}\") : {}", pv, un, uid, uid, e));
                self.log('E', "nestedpendingoperations.go:348", &line);
                continue;
            }
            self.ops.succeeded(&key);
            self.setups.remove(&(uid.clone(), pv.clone()));
            self.log('I', "operation_generator.go:803", &format!("\"UnmountVolume.TearDown succeeded for volume \\\"{}\\\" (OuterVolumeSpecName: \\\"workspace\\\") pod \\\"{}\\\" (UID: \\\"{}\\\"). InnerVolumeSpecName \\\"{}\\\". PluginName \\\"kubernetes.io/csi\\\", VolumeGidValue \\\"\\\"\"", un, uid, uid, pv));
        }
        // Devices nobody uses any more are unmounted (and may then be detached).
        if !blocked {
            let in_use: HashSet<String> = self.setups.iter().map(|(_, pv)| pv.clone()).chain(desired.iter().map(|(_, pv, _, _)| pv.clone())).collect();
            for (pv, handle) in self.devices.clone() {
                if in_use.contains(&pv) {
                    continue;
                }
                let key = OpKey::device(&unique_name(&handle));
                if !self.ops.may_run(&key, now) {
                    continue;
                }
                if !self.csi_registered {
                    let err = format!("UnmountDevice failed for volume \"{}\" (UniqueName: \"{}\") on node \"{}\" : kubernetes.io/csi: attacher.UnmountDevice failed to create newCsiDriverClient: driver name {} not found in the list of registered CSI drivers", pv, unique_name(&handle), self.node.name, DRIVER);
                    let line = self.ops.failed(&key, now, &err);
                    self.log('E', "nestedpendingoperations.go:348", &line);
                    continue;
                }
                self.ops.succeeded(&key);
                self.devices.remove(&pv);
                self.log('I', "operation_generator.go:1018", &format!("\"UnmountDevice succeeded for volume \\\"{}\\\" (UniqueName: \\\"{}\\\") on node \\\"{}\\\" \"", pv, unique_name(&handle), self.node.name));
            }
        }
        // 3. MountDevice + SetUp for wanted volumes, unless the queue is stuck behind a failed unmount.
        if blocked {
            return;
        }
        for (uid, pv, handle, pod_ref) in desired {
            if self.setups.contains(&(uid.clone(), pv.clone())) {
                continue;
            }
            let un = unique_name(&handle);
            if !self.attached(&pv) {
                let key = OpKey::pod(&un, &uid);
                if self.ops.may_run(&key, now) {
                    let err = format!("Volume not attached according to node status for volume \"{}\" (UniqueName: \"{}\") pod \"{}\" (UID: \"{}\")", pv, un, pod_ref.split('/').nth(1).unwrap_or(""), uid);
                    let line = self.ops.failed(&key, now, &err);
                    self.log('E', "nestedpendingoperations.go:348", &line);
                }
                continue;
            }
            let key = OpKey::pod(&un, &uid);
            if !self.ops.may_run(&key, now) || !self.ops.may_run(&OpKey::device(&un), now) {
                continue;
            }
            let pod_name = pod_ref.split('/').nth(1).unwrap_or("").to_string();
            if !self.csi_registered {
                let stage = if self.devices.contains_key(&pv) { "MountVolume.SetUp" } else { "MountVolume.MountDevice" };
                let detail = if stage == "MountVolume.SetUp" {
                    format!("kubernetes.io/csi: mounter.SetUpAt failed to get CSI client: driver name {} not found in the list of registered CSI drivers", DRIVER)
                } else {
                    format!("kubernetes.io/csi: attacher.MountDevice failed to create newCsiDriverClient: driver name {} not found in the list of registered CSI drivers", DRIVER)
                };
                let err = format!("{} failed for volume \"{}\" (UniqueName: \"{}\") pod \"{}\" (UID: \"{}\") : {}", stage, pv, un, pod_name, uid, detail);
                let line = self.ops.failed(&key, now, &err);
                self.log('E', "nestedpendingoperations.go:348", &line);
                continue;
            }
            if io_errors {
                let err = format!("MountVolume.MountDevice failed for volume \"{}\" (UniqueName: \"{}\") pod \"{}\" (UID: \"{}\") : rpc error: code = Internal desc = mount failed: exit status 32: input/output error", pv, un, pod_name, uid);
                let line = self.ops.failed(&key, now, &err);
                self.log('E', "nestedpendingoperations.go:348", &line);
                continue;
            }
            if !self.devices.contains_key(&pv) {
                self.devices.insert(pv.clone(), handle.clone());
                self.log('I', "operation_generator.go:580", &format!("\"MountVolume.MountDevice succeeded for volume \\\"{}\\\" (UniqueName: \\\"{}\\\") pod \\\"{}\\\" (UID: \\\"{}\\\") device mount path \\\"{}\\\"\" pod=\"{}\"", pv, un, pod_name, uid, global_mount_path(&handle), pod_ref));
            }
            self.ops.succeeded(&key);
            self.setups.insert((uid.clone(), pv.clone()));
            self.log('I', "operation_generator.go:721", &format!("\"MountVolume.SetUp succeeded for volume \\\"{}\\\" (UniqueName: \\\"{}\\\") pod \\\"{}\\\" (UID: \\\"{}\\\")\" pod=\"{}\"", pv, un, pod_name, uid, pod_ref));
        }
    }

    /// Are all of the pod's volumes set up? Returns (unmounted, unattached) volume names.
    fn volumes_ready(&self, p: &PodRt) -> (Vec<String>, Vec<String>) {
        let mut unmounted = Vec::new();
        let mut unattached = Vec::new();
        for v in self.pod_volumes(&p.pod) {
            match (&v.csi, &v.claim) {
                (Some((pv, _)), _) => {
                    if !self.setups.contains(&(p.uid.clone(), pv.clone())) {
                        unmounted.push(v.name.clone());
                        if !self.attached(pv) {
                            unattached.push(v.name.clone());
                        }
                    }
                }
                // A claim that is not bound yet cannot be mounted.
                (None, Some(_)) => {
                    unmounted.push(v.name.clone());
                    unattached.push(v.name.clone());
                }
                (None, None) => {}
            }
        }
        (unmounted, unattached)
    }

    fn post_volumes_in_use(&mut self) {
        let mut in_use: Vec<String> = self.devices.values().map(|h| unique_name(h)).collect();
        in_use.sort();
        if in_use != self.volumes_in_use {
            if self.client.merge_status("", "nodes", "", &self.node.name, &json!({"status": {"volumesInUse": in_use}})).is_ok() {
                self.volumes_in_use = in_use;
            }
        }
    }

    /// The node's mount table as `mount` prints it, for `faultline node X mounts`.
    pub fn mount_lines(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .devices
            .iter()
            .map(|(pv, h)| format!("/dev/longhorn/{} on {} type ext4 (rw,relatime)", pv, global_mount_path(h)))
            .collect();
        for (uid, pv) in &self.setups {
            out.push(format!("/dev/longhorn/{} on {} type ext4 (rw,relatime)", pv, pod_mount_path(uid, pv)));
        }
        out.sort();
        out
    }

    // ----- pod workers and the container runtime ------------------------------------------

    fn busy_workers(&self) -> usize {
        self.pods.values().filter(|p| p.slot).count()
    }

    fn sync_pod(&mut self, uid: &str) {
        let now = Instant::now();
        let Some(p) = self.pods.get(uid) else { return };
        // Stale terminated pods whose volumes never cleaned up hold a worker forever.
        if p.stale {
            if !p.slot && self.busy_workers() < self.sync_workers {
                self.pods.get_mut(uid).unwrap().slot = true;
            }
            if let Some(p) = self.pods.get(uid) {
                if p.slot && (now.elapsed().as_millis() % 50 == 0) {
                    self.log('I', "pod_workers.go:1062", &format!("\"Pod is terminated, but some volumes have not been cleaned up\" pod=\"{}/{}\" podUID=\"{}\"", p.ns, p.name, p.uid));
                }
            }
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
        if !p.slot {
            if self.busy_workers() >= self.sync_workers {
                // Never synced: the pod keeps whatever status the API has (none from us).
                return;
            }
            let p = self.pods.get_mut(uid).unwrap();
            p.slot = true;
            p.wait_mark = Some(now);
        }
        let first = !self.pods[uid].synced;
        if first {
            let p = self.pods.get_mut(uid).unwrap();
            p.synced = true;
            p.dirty = true;
            p.started_time = Some(meta::now_rfc3339());
            let has_init = !p.init.is_empty();
            for c in p.init.iter_mut() {
                c.state = CState::Waiting("PodInitializing".into(), None);
            }
            for c in p.main.iter_mut() {
                c.state = CState::Waiting(if has_init { "PodInitializing" } else { "ContainerCreating" }.into(), None);
            }
        }
        let (unmounted, unattached) = self.volumes_ready(&self.pods[uid]);
        if !unmounted.is_empty() {
            let timeout = self.timing.s(self.timing.pod_attach_mount_timeout);
            let p = &self.pods[uid];
            if p.wait_mark.map(|m| now.duration_since(m) >= timeout).unwrap_or(false) {
                let msg = format!(
                    "Unable to attach or mount volumes: unmounted volumes=[{}], unattached volumes=[{}], failed to process volumes=[]: timed out waiting for the condition",
                    unmounted.join(" "),
                    unattached.join(" ")
                );
                let pod = p.pod.clone();
                let line = format!(
                    "\"Error syncing pod, skipping\" err=\"unmounted volumes=[{}], unattached volumes=[{}], failed to process volumes=[]: context deadline exceeded\" pod=\"{}/{}\" podUID=\"{}\"",
                    unmounted.join(" "), unattached.join(" "), p.ns, p.name, p.uid
                );
                self.log('E', "pod_workers.go:1301", &line);
                self.recorder.record(&pod, EventKind::Warning, "FailedMount", &msg);
                self.pods.get_mut(uid).unwrap().wait_mark = Some(now);
            }
            return;
        }
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
        let restart_policy = meta::str_at(&pod, "/spec/restartPolicy").unwrap_or("Always").to_string();
        let crash_after = Self::annotation(&pod, script::CRASH_AFTER).and_then(parse_duration).map(|d| self.timing.s(d));
        let exit_after = Self::annotation(&pod, script::EXIT_AFTER).and_then(parse_duration).map(|d| self.timing.s(d));
        let never_ready = Self::annotation(&pod, script::NEVER_READY) == Some("true");
        let pull_error = Self::annotation(&pod, script::IMAGE_PULL_ERROR).map(String::from);
        let init_run = Self::annotation(&pod, script::INIT_DURATION).and_then(parse_duration).map(|d| self.timing.s(d)).unwrap_or(self.timing.s(self.timing.init_container_run));
        let log_lines: Vec<String> = Self::annotation(&pod, script::LOG).map(|l| l.lines().map(String::from).collect()).unwrap_or_default();
        let pull_policy = |name: &str| -> String {
            ["containers", "initContainers"]
                .iter()
                .filter_map(|f| pod.pointer(&format!("/spec/{}", f)).and_then(Value::as_array))
                .flatten()
                .find(|c| c["name"] == name)
                .and_then(|c| c.get("imagePullPolicy").and_then(Value::as_str))
                .unwrap_or("IfNotPresent")
                .to_string()
        };
        let pull = self.timing.s(self.timing.image_pull);
        let start = self.timing.s(self.timing.container_start);
        let crash_max = self.timing.s(self.timing.crash_backoff_max);
        let mut events: Vec<(Option<String>, EventKind, String, String)> = Vec::new();
        let mut csi_restarted = false;
        let ncount = self.pods[uid].init.len();
        // Init containers, one at a time, in order.
        let mut init_done = true;
        for i in 0..ncount {
            let c = &self.pods[uid].init[i];
            if matches!(c.state, CState::Terminated { exit: 0, .. }) {
                continue;
            }
            init_done = false;
            let field = format!("spec.initContainers{{{}}}", c.name);
            let policy = pull_policy(&c.name);
            let p = self.pods.get_mut(uid).unwrap();
            let images = &mut self.images;
            let c = &mut p.init[i];
            if step_container(c, now, &policy, images, pull, start, pull_error.as_deref(), &field, &mut events) {
                p.dirty = true;
            }
            if let CState::Running { since, ref started } = c.state {
                if now.duration_since(since) >= init_run {
                    c.state = CState::Terminated { exit: 0, reason: "Completed".into(), started: started.clone(), finished: meta::now_rfc3339() };
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
                        c.state = CState::Waiting("ContainerCreating".into(), None);
                    } else {
                        continue;
                    }
                }
                if step_container(c, now, &policy, images, pull, start, pull_error.as_deref(), &field, &mut events) {
                    p.dirty = true;
                    if matches!(c.state, CState::Running { .. }) {
                        c.prev_logs = std::mem::take(&mut c.logs);
                        c.logs = log_lines.clone();
                        if is_csi {
                            csi_restarted = true;
                        }
                    }
                }
                if let CState::Running { since, ref started } = c.state.clone() {
                    // Readiness: the prober reports ready unless scripted or broken.
                    let ready_now = !never_ready && !prober_broken && !(is_csi && csi_down);
                    if c.ready != ready_now && !(prober_broken && !c.ready) {
                        c.ready = ready_now;
                        p.dirty = true;
                    }
                    let died = if is_csi && csi_down {
                        Some((2, "Error"))
                    } else if let Some(d) = crash_after.filter(|d| now.duration_since(since) >= *d) {
                        let _ = d;
                        Some((1, "Error"))
                    } else if let Some(d) = exit_after.filter(|d| now.duration_since(since) >= *d) {
                        let _ = d;
                        Some((0, "Completed"))
                    } else {
                        None
                    };
                    if let Some((exit, reason)) = died {
                        let term = CState::Terminated { exit, reason: reason.into(), started: started.clone(), finished: meta::now_rfc3339() };
                        c.ready = false;
                        p.dirty = true;
                        let restart = restart_policy == "Always" || (restart_policy == "OnFailure" && exit != 0);
                        if restart {
                            c.last = Some(term);
                            c.restarts += 1;
                            c.step = Step::BackOff;
                            c.next = Some(now + c.crash_backoff);
                            let msg = format!("back-off {} restarting failed container={} pod={}_{}({})", go_duration(c.crash_backoff), c.name, p.name, p.ns, p.uid);
                            c.state = CState::Waiting("CrashLoopBackOff".into(), Some(msg));
                            c.crash_backoff = (c.crash_backoff * 2).min(crash_max);
                            events.push((Some(field.clone()), EventKind::Warning, "BackOff".into(), "Back-off restarting failed container".into()));
                        } else {
                            c.state = term;
                        }
                    }
                }
            }
        }
        if csi_restarted {
            // A fresh plugin process releases the devices it kept busy.
            self.node.state.lock().faults.stale_mounts.retain(|m| m.holder != MountHolder::CsiPlugin);
            self.node.csi_log.push(klog('I', 1, "main.go:135", "Version: v2.14.0"));
            self.node.csi_log.push(klog('I', 1, "node_register.go:53", "Starting Registration Server at: /registration/driver.longhorn.io-reg.sock"));
        }
        let pod_obj = pod.clone();
        for (field, kind, reason, msg) in events {
            self.recorder.record_at(&pod_obj, field.as_deref(), kind, &reason, &msg);
        }
        // Phase.
        let p = self.pods.get_mut(uid).unwrap();
        let all_init = p.init.iter().all(|c| matches!(c.state, CState::Terminated { exit: 0, .. }));
        let phase = if !all_init {
            "Pending"
        } else if p.main.iter().all(|c| matches!(c.state, CState::Terminated { .. })) && !p.main.is_empty() {
            if p.main.iter().all(|c| matches!(c.state, CState::Terminated { exit: 0, .. })) { "Succeeded" } else { "Failed" }
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
    }

    fn terminate(&mut self, uid: &str) {
        let now = Instant::now();
        let stop = self.timing.s(self.timing.container_start);
        let p = self.pods.get_mut(uid).unwrap();
        if !p.killing {
            p.killing = true;
            p.stopped_at = Some(now + stop);
            let pod = p.pod.clone();
            let running: Vec<String> = p.init.iter().chain(p.main.iter()).filter(|c| matches!(c.state, CState::Running { .. })).map(|c| c.name.clone()).collect();
            for name in running {
                let field = if p.init.iter().any(|c| c.name == name) { format!("spec.initContainers{{{}}}", name) } else { format!("spec.containers{{{}}}", name) };
                self.recorder.record_at(&pod, Some(&field), EventKind::Normal, "Killing", &format!("Stopping container {}", name));
            }
            return;
        }
        if p.stopped_at.map(|s| now < s).unwrap_or(false) {
            return;
        }
        for c in p.init.iter_mut().chain(p.main.iter_mut()) {
            if let CState::Running { ref started, .. } = c.state {
                c.state = CState::Terminated { exit: 0, reason: "Completed".into(), started: started.clone(), finished: meta::now_rfc3339() };
                c.ready = false;
                p.dirty = true;
            }
        }
        p.slot = false;
        // Volumes must be torn down before the pod object may go (podResourcesAreReclaimed).
        if self.setups.iter().any(|(u, _)| u == uid) {
            return;
        }
        if self.node.state.lock().faults.partitioned {
            return;
        }
        let (ns, name) = (p.ns.clone(), p.name.clone());
        match self.client.delete("", "pods", &ns, &name, Some(0)) {
            Ok(_) => self.log('I', "kubelet.go:2450", &format!("\"SyncLoop DELETE\" source=\"api\" pods=[\"{}/{}\"]", ns, name)),
            Err(e) if e.code == 404 => {}
            Err(_) => {}
        }
    }

    /// Kill a running container of the first live pod whose name starts with `pod_prefix`; the
    /// runtime starts it again (restartCount + 1), like `crictl stop`.
    pub fn restart_container(&mut self, pod_prefix: &str, container: &str) -> bool {
        let Some(p) = self.pods.values_mut().find(|p| p.name.starts_with(pod_prefix) && !meta::is_deleting(&p.pod)) else { return false };
        let Some(c) = p.main.iter_mut().find(|c| c.name == container) else { return false };
        let CState::Running { ref started, .. } = c.state else { return false };
        c.last = Some(CState::Terminated { exit: 137, reason: "Error".into(), started: started.clone(), finished: meta::now_rfc3339() });
        c.restarts += 1;
        c.ready = false;
        c.state = CState::Waiting("ContainerCreating".into(), None);
        c.step = Step::Idle;
        p.dirty = true;
        p.slot = true;
        true
    }

    // ----- status manager -------------------------------------------------------------------

    fn post_statuses(&mut self) {
        let host_ip = self.node.internal_ip();
        let uids: Vec<String> = self.pods.iter().filter(|(_, p)| p.dirty && p.synced && !p.stale).map(|(u, _)| u.clone()).collect();
        for uid in uids {
            let p = &self.pods[&uid];
            let status = pod_status(p, &host_ip);
            if p.pod.get("status") == Some(&status) {
                self.pods.get_mut(&uid).unwrap().dirty = false;
                continue;
            }
            let res = self.client.merge_status("", "pods", &p.ns, &p.name, &json!({"status": status}));
            if let Err(e) = &res {
                if e.code != 404 {
                    let line = format!("\"Failed to update status for pod\" pod=\"{}/{}\" err=\"{}\"", p.ns, p.name, e.message.replace('"', "'"));
                    self.log('E', "status_manager.go:914", &line);
                }
            }
            let ok = res.is_ok();
            let p = self.pods.get_mut(&uid).unwrap();
            if ok {
                p.dirty = false;
                p.last_posted = Some(status);
            }
        }
    }

    /// Logs of a container for `pods/log`.
    pub fn container_logs(&self, uid: &str, container: &str, previous: bool) -> Option<Result<String, String>> {
        let p = self.pods.get(uid)?;
        let c = p.init.iter().chain(p.main.iter()).find(|c| c.name == container)?;
        if previous {
            return Some(if c.restarts == 0 { Err(format!("previous terminated container {:?} in pod {:?} not found", container, p.name)) } else { Ok(lines(&c.prev_logs)) });
        }
        match &c.state {
            CState::Waiting(reason, _) if !c.started_once => Some(Err(format!("container {:?} in pod {:?} is waiting to start: {}", container, p.name, if reason.is_empty() { "ContainerCreating" } else { reason }))),
            _ => Some(Ok(lines(&c.logs))),
        }
    }
}

fn lines(l: &[String]) -> String {
    l.iter().map(|s| format!("{}\n", s)).collect()
}

/// Advance one container through pull -> create -> start. Returns true when its state changed.
#[allow(clippy::too_many_arguments)]
fn step_container(
    c: &mut Ctr,
    now: Instant,
    policy: &str,
    images: &mut HashSet<String>,
    pull: Duration,
    start: Duration,
    pull_error: Option<&str>,
    field: &str,
    events: &mut Vec<(Option<String>, EventKind, String, String)>,
) -> bool {
    match c.step {
        Step::Idle => {
            if matches!(c.state, CState::Running { .. } | CState::Terminated { .. }) {
                return false;
            }
            let cached = images.contains(&c.image) && policy != "Always";
            if policy == "Never" || (cached && policy == "IfNotPresent") {
                events.push((Some(field.into()), EventKind::Normal, "Pulled".into(), format!("Container image {:?} already present on machine", c.image)));
                c.step = Step::Creating;
                c.next = Some(now + start);
            } else {
                events.push((Some(field.into()), EventKind::Normal, "Pulling".into(), format!("Pulling image {:?}", c.image)));
                c.step = Step::Pulling;
                c.next = Some(now + pull);
            }
            false
        }
        Step::Pulling => {
            if c.next.map(|n| now < n).unwrap_or(false) {
                return false;
            }
            if let Some(reason) = pull_error {
                events.push((Some(field.into()), EventKind::Warning, "Failed".into(), format!("Failed to pull image {:?}: rpc error: code = NotFound desc = failed to pull and unpack image {:?}: not found", c.image, c.image)));
                c.state = CState::Waiting(if reason == "ImagePullBackOff" { "ImagePullBackOff" } else { "ErrImagePull" }.into(), Some(format!("Back-off pulling image {:?}", c.image)));
                c.next = Some(now + pull * 4);
                c.step = Step::Pulling;
                return true;
            }
            images.insert(c.image.clone());
            events.push((Some(field.into()), EventKind::Normal, "Pulled".into(), format!("Successfully pulled image {:?} in {} ({} including waiting). Image size: 4269396 bytes.", c.image, go_duration(pull), go_duration(pull))));
            c.step = Step::Creating;
            c.next = Some(now + start);
            false
        }
        Step::Creating => {
            if c.next.map(|n| now < n).unwrap_or(false) {
                return false;
            }
            events.push((Some(field.into()), EventKind::Normal, "Created".into(), format!("Created container: {}", c.name)));
            events.push((Some(field.into()), EventKind::Normal, "Started".into(), format!("Started container {}", c.name)));
            c.state = CState::Running { started: meta::now_rfc3339(), since: now };
            c.started_once = true;
            c.step = Step::Started;
            c.container_id = format!("containerd://{}", uuid::Uuid::new_v4().simple());
            true
        }
        Step::Started => {
            if matches!(c.state, CState::Waiting(..)) {
                c.step = Step::Idle;
            }
            false
        }
        Step::BackOff => false,
    }
}

fn state_json(s: &CState) -> Value {
    match s {
        CState::Waiting(reason, msg) => {
            let mut w = json!({"reason": if reason.is_empty() { "ContainerCreating" } else { reason }});
            if let Some(m) = msg {
                w["message"] = json!(m);
            }
            json!({"waiting": w})
        }
        CState::Running { started, .. } => json!({"running": {"startedAt": started}}),
        CState::Terminated { exit, reason, started, finished } => {
            json!({"terminated": {"exitCode": exit, "reason": reason, "startedAt": started, "finishedAt": finished}})
        }
    }
}

fn ctr_status(c: &Ctr, init: bool) -> Value {
    let mut s = json!({
        "name": c.name, "image": c.image, "imageID": "", "ready": c.ready, "restartCount": c.restarts,
        "state": state_json(&c.state),
        "lastState": c.last.as_ref().map(state_json).unwrap_or_else(|| json!({})),
    });
    if !init {
        s["started"] = json!(matches!(c.state, CState::Running { .. }));
    } else {
        s["started"] = json!(matches!(c.state, CState::Running { .. }));
    }
    if c.started_once {
        s["containerID"] = json!(c.container_id);
        s["imageID"] = json!(format!("docker.io/library/{}@sha256:{:064x}", c.image.split(':').next().unwrap_or(""), 0));
    }
    s
}

fn cond(t: &str, ok: bool, reason: Option<&str>, msg: Option<String>) -> Value {
    let mut c = json!({"type": t, "status": if ok { "True" } else { "False" }, "lastProbeTime": null, "lastTransitionTime": meta::now_rfc3339()});
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
fn pod_status(p: &PodRt, host_ip: &str) -> Value {
    let init_ok = p.init.iter().all(|c| matches!(c.state, CState::Terminated { exit: 0, .. }));
    let pending_init: Vec<&str> = p.init.iter().filter(|c| !matches!(c.state, CState::Terminated { exit: 0, .. })).map(|c| c.name.as_str()).collect();
    let unready: Vec<&str> = p.main.iter().filter(|c| !c.ready).map(|c| c.name.as_str()).collect();
    let ready = unready.is_empty() && !p.main.is_empty() && !meta::is_deleting(&p.pod);
    let sandbox = p.pod_ip.is_some();
    let mut conds = vec![
        cond("PodReadyToStartContainers", sandbox, None, None),
        cond("Initialized", init_ok, Some("ContainersNotInitialized"), Some(format!("containers with incomplete status: [{}]", pending_init.join(" ")))),
        cond("Ready", ready, Some("ContainersNotReady"), Some(format!("containers with unready status: [{}]", unready.join(" ")))),
        cond("ContainersReady", ready, Some("ContainersNotReady"), Some(format!("containers with unready status: [{}]", unready.join(" ")))),
    ];
    // Keep the scheduler's PodScheduled condition as the API has it.
    let scheduled = p
        .pod
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|c| c["type"] == "PodScheduled").cloned())
        .unwrap_or_else(|| cond("PodScheduled", true, None, None));
    conds.push(scheduled);
    // Preserve each condition's lastTransitionTime when its status is unchanged.
    if let Some(prev) = p.pod.pointer("/status/conditions").and_then(Value::as_array) {
        for c in conds.iter_mut() {
            if let Some(old) = prev.iter().find(|o| o["type"] == c["type"] && o["status"] == c["status"]) {
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
        "containerStatuses": p.main.iter().map(|c| ctr_status(c, false)).collect::<Vec<_>>(),
    });
    if !p.init.is_empty() {
        s["initContainerStatuses"] = json!(p.init.iter().map(|c| ctr_status(c, true)).collect::<Vec<_>>());
    }
    if let Some(ip) = &p.pod_ip {
        s["podIP"] = json!(ip);
        s["podIPs"] = json!([{"ip": ip}]);
    }
    s
}

/// "5s", "1m30s", "250ms", or plain seconds.
pub fn parse_duration(s: &str) -> Option<Duration> {
    let s = s.trim();
    if let Ok(n) = s.parse::<f64>() {
        return Some(Duration::from_secs_f64(n.max(0.0)));
    }
    let mut total = 0f64;
    let mut num = String::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() || c == '.' {
            num.push(c);
            continue;
        }
        let unit = if c == 'm' && chars.peek() == Some(&'s') {
            chars.next();
            "ms"
        } else {
            match c {
                'h' => "h",
                'm' => "m",
                's' => "s",
                _ => return None,
            }
        };
        let v: f64 = num.parse().ok()?;
        num.clear();
        total += match unit {
            "h" => v * 3600.0,
            "m" => v * 60.0,
            "s" => v,
            _ => v / 1000.0,
        };
    }
    if !num.is_empty() {
        return None;
    }
    Some(Duration::from_secs_f64(total))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse() {
        assert_eq!(parse_duration("5s"), Some(Duration::from_secs(5)));
        assert_eq!(parse_duration("1m30s"), Some(Duration::from_secs(90)));
        assert_eq!(parse_duration("250ms"), Some(Duration::from_millis(250)));
        assert_eq!(parse_duration("2"), Some(Duration::from_secs(2)));
        assert_eq!(parse_duration("abc"), None);
        assert_eq!(parse_duration("5"), Some(Duration::from_secs(5)));
    }
}
