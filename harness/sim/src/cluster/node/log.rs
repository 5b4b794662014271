//! The kubelet's and the CSI node plugin's logs as klog writes them, on the cluster's clock: what
//! every part of the kubelet writes through (upstream each part calls klog directly).

use super::state::{klog, SimNode};
use crate::timing::{SimInstant, Timing};
use chrono::{DateTime, Utc};
use std::sync::Arc;

/// The kubelet's `--v`: klog V(n) lines with n above it are not written.
pub const KUBELET_VERBOSITY: u8 = 2;

pub struct KubeletLog {
    node: Arc<SimNode>,
    timing: Timing,
    /// The kubelet process's pid (klog prints it; a restart changes it).
    pid: u32,
    /// When the kubelet process started: Go's monotonic readings (`m=+<seconds>` in printed
    /// times) count from it, so they start again from about 0 after a restart or reboot.
    started: DateTime<Utc>,
}

impl KubeletLog {
    pub fn new(node: Arc<SimNode>, timing: Timing) -> Self {
        let (pid, started_at) = {
            let st = node.state.lock();
            (st.pid, st.started_at)
        };
        let started = timing.clock.at(started_at);
        KubeletLog {
            node,
            timing,
            pid,
            started,
        }
    }

    /// A kubelet that starts again logs under its new pid, and its monotonic clock starts anew.
    pub fn set_process(&mut self, pid: u32, started_at: SimInstant) {
        self.pid = pid;
        self.started = self.timing.clock.at(started_at);
    }

    /// When the kubelet process started (for Go's `m=+` monotonic readings).
    pub fn process_start(&self) -> DateTime<Utc> {
        self.started
    }

    pub fn log(&self, severity: char, file: &str, msg: &str) {
        self.log_at(self.timing.now(), severity, file, msg);
    }

    /// A line logged at a time already read (one whose message names that time too).
    pub fn log_at(&self, at: chrono::DateTime<chrono::Utc>, severity: char, file: &str, msg: &str) {
        self.node
            .kubelet_log
            .push(klog(at, severity, self.pid, file, msg));
    }

    pub fn info(&self, file: &str, msg: &str) {
        self.log('I', file, msg);
    }

    pub fn error(&self, file: &str, msg: &str) {
        self.log('E', file, msg);
    }

    /// A klog `V(level)` line: written only when the kubelet runs at that verbosity or above.
    pub fn v(&self, level: u8, file: &str, msg: &str) {
        if level <= KUBELET_VERBOSITY {
            self.info(file, msg);
        }
    }

    /// A line of the CSI node plugin's log (its own process, pid 1 in its container).
    pub fn csi(&self, file: &str, msg: &str) {
        self.node
            .csi_log
            .push(klog(self.timing.now(), 'I', 1, file, msg));
    }
}
