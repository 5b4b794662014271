//! The state of one simulated node that lives outside the API: its kubelet process, its CSI
//! plugin registration, its mount table, injected faults, and its kubelet and CSI plugin logs.

use crate::timing::SimInstant;
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::sync::Arc;
use tokio::sync::{broadcast, Notify};

/// The kubelet process as `systemctl status kubelet` would describe it.
#[derive(Debug, Clone, PartialEq)]
pub enum KubeletProcess {
    Running,
    /// `systemctl stop kubelet`: no sync, no heartbeats.
    Stopped,
    /// The process is alive (systemd says active) but its sync loop makes no progress.
    Hung,
    /// Restarting: back at `until`.
    Restarting {
        until: SimInstant,
    },
    /// The node is rebooting; `until: None` means stuck (hung NFS, I/O errors) until power cycled.
    Rebooting {
        until: Option<SimInstant>,
    },
    /// The machine is off (`nodePowerOff`): nothing runs until it is powered on, and then it
    /// boots like after a power cycle.
    PoweredOff,
}

/// Who still holds a stale device mount (the catalogue's one enum): decides which remediation
/// releases it.
pub use faultline_faults::{MountHolder, OtherVolumes};

#[derive(Debug, Clone, PartialEq)]
pub struct StaleMount {
    /// PV name, e.g. `pvc-81b676e6`.
    pub pv: String,
    /// True when the PV no longer exists in the API (the incident's case).
    pub deleted_pv: bool,
    pub holder: MountHolder,
    /// What the stuck device does to the node's other volumes: nothing (upstream, the default:
    /// only its own operations back off), the node plugin's calls hanging behind it
    /// (`volumemanager::operation_generator`), or the incident RCA's node-wide block
    /// (`volumemanager::reconciler`).
    pub other_volumes: OtherVolumes,
}

/// Faults and node-level conditions the node primitives set and clear.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NodeFaults {
    pub stale_mounts: Vec<StaleMount>,
    pub csi_plugin_down: bool,
    pub prober_broken: bool,
    pub partitioned: bool,
    pub hung_nfs: bool,
    pub io_errors: bool,
    /// `csiDriverUnregistered`: the registration socket of this node-driver-registrar process
    /// (its container id) was removed, so the kubelet's plugin watcher deregistered the driver
    /// (`pluginwatcher/plugin_watcher.go`: a Remove event). A registrar that starts again
    /// creates its socket anew and registers the driver.
    pub registration_removed: Option<String>,
}

impl NodeFaults {
    /// Whether the registration socket of the registrar process `registrar` is gone.
    pub fn registration_removed_for(&self, registrar: &str) -> bool {
        self.registration_removed.as_deref() == Some(registrar)
    }
}

#[derive(Debug)]
pub struct NodeState {
    pub kubelet: KubeletProcess,
    pub faults: NodeFaults,
    /// Set by the primitives; the kubelet consumes it at its next tick (restart: drop volume
    /// queue state and backoffs; reboot/power cycle: everything).
    pub reset: Option<ResetKind>,
    pub boot_id: String,
    /// Bumped each kubelet start (klog prints a pid).
    pub pid: u32,
    pub started_at: SimInstant,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResetKind {
    KubeletRestart,
    Reboot,
}

/// A bounded log with live subscribers (`faultline node X logs kubelet -f`, log expectations).
pub struct LogBuffer {
    lines: Mutex<VecDeque<String>>,
    capacity: usize,
    /// Created by the first subscriber: a broadcast channel allocates its whole ring up front,
    /// and 1,000 nodes' unwatched logs must not each hold one.
    tx: Mutex<Option<broadcast::Sender<String>>>,
}

/// Lines a follower may fall behind before it lags.
const FOLLOW_BUFFER: usize = 4096;

impl LogBuffer {
    pub fn new(capacity: usize) -> Self {
        LogBuffer {
            lines: Mutex::new(VecDeque::new()),
            capacity,
            tx: Mutex::new(None),
        }
    }
    pub fn push(&self, line: String) {
        let mut l = self.lines.lock();
        if l.len() >= self.capacity {
            l.pop_front();
        }
        if let Some(tx) = self.tx.lock().as_ref() {
            let _ = tx.send(line.clone());
        }
        l.push_back(line);
    }
    pub fn snapshot(&self) -> Vec<String> {
        self.lines.lock().iter().cloned().collect()
    }
    pub fn subscribe(&self) -> broadcast::Receiver<String> {
        self.tx
            .lock()
            .get_or_insert_with(|| broadcast::channel(FOLLOW_BUFFER).0)
            .subscribe()
    }
}

pub struct SimNode {
    pub name: String,
    pub index: usize,
    pub control_plane: bool,
    pub state: Mutex<NodeState>,
    pub kubelet_log: LogBuffer,
    pub csi_log: LogBuffer,
    /// Woken when the node's state changes, so the kubelet reacts without waiting a tick.
    pub wake: Notify,
}

impl SimNode {
    pub fn new(name: &str, index: usize, control_plane: bool) -> Arc<SimNode> {
        Arc::new(SimNode {
            name: name.into(),
            index,
            control_plane,
            state: Mutex::new(NodeState {
                kubelet: KubeletProcess::Running,
                faults: NodeFaults::default(),
                reset: None,
                boot_id: uuid::Uuid::new_v4().to_string(),
                pid: 1000 + (index as u32 * 7919) % 8000,
                started_at: SimInstant::START,
            }),
            kubelet_log: LogBuffer::new(20_000),
            csi_log: LogBuffer::new(5_000),
            wake: Notify::new(),
        })
    }

    pub fn internal_ip(&self) -> String {
        format!("172.18.0.{}", self.index + 2)
    }

    /// The mounts the node's mount table shows (`faultline node X mounts`) for stale device
    /// mounts: the device (global) mount and the leftover pod mount that keeps it referenced.
    pub fn stale_mount_lines(&self) -> Vec<String> {
        use super::volumes::{global_mount_path, orphan_pod_uid, pod_mount_path};
        let st = self.state.lock();
        st.faults
            .stale_mounts
            .iter()
            .flat_map(|m| {
                [
                    global_mount_path(&m.pv),
                    pod_mount_path(&orphan_pod_uid(&m.pv), &m.pv),
                ]
                .map(|path| format!("/dev/longhorn/{} on {} type ext4 (rw,relatime)", m.pv, path))
            })
            .collect()
    }
}

/// klog's header at `now` (the cluster's clock): `I1202 14:00:00.123456    1234 file.go:123] `.
pub fn klog(
    now: chrono::DateTime<chrono::Utc>,
    severity: char,
    pid: u32,
    file_line: &str,
    msg: &str,
) -> String {
    format!(
        "{}{} {:>7} {}] {}",
        severity,
        now.format("%m%d %H:%M:%S%.6f"),
        pid,
        file_line,
        msg
    )
}
