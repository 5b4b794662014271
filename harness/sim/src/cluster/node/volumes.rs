//! Kubelet volume internals: CSI volume identities and paths, and `nestedpendingoperations`
//! (operations keyed by {volumeName, podName, nodeName}; a failed one keeps its key and the same
//! operation may not run again before its exponential backoff expires: 500 ms doubling to 2m2s,
//! printed nominal; a different operation on that key starts afresh).

use crate::timing::SimInstant;
use crate::timing::{go_duration, Timing};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::time::Duration;

pub const DRIVER: &str = "driver.longhorn.io";

/// Where the node plugin's CSI socket lives (the kubelet dials it for every node call).
pub const CSI_SOCKET: &str = "/var/lib/kubelet/plugins/driver.longhorn.io/csi.sock";

/// `kubernetes.io/csi/driver.longhorn.io^pvc-...`: the volume's unique name in the kubelet.
pub fn unique_name(volume_handle: &str) -> String {
    format!("kubernetes.io/csi/{}^{}", DRIVER, volume_handle)
}

/// The device (global) mount of a CSI volume: `.../driver.longhorn.io/<sha256>/globalmount`.
pub fn global_mount_path(volume_handle: &str) -> String {
    let digest = Sha256::digest(volume_handle.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{:02x}", b)).collect();
    format!(
        "/var/lib/kubelet/plugins/kubernetes.io/csi/{}/{}/globalmount",
        DRIVER, hex
    )
}

/// The uid of the pod whose leftover mount keeps a stale device busy (deterministic per PV, so
/// the mount table and the GetDeviceMountRefs error name the same path).
pub fn orphan_pod_uid(pv: &str) -> String {
    let d = Sha256::digest(format!("orphan/{}", pv).as_bytes());
    let h: String = d.iter().take(16).map(|b| format!("{:02x}", b)).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// `csi-<sha256(volumeHandle + attacher + node)>`: a VolumeAttachment's name, which the
/// attach/detach controller gives it and the CSI attacher's WaitForAttach returns as the
/// device path (`getAttachmentName` in pkg/volume/csi).
pub fn attachment_name(volume_handle: &str, node: &str) -> String {
    let digest = Sha256::digest(format!("{}{}{}", volume_handle, DRIVER, node).as_bytes());
    format!(
        "csi-{}",
        digest
            .iter()
            .map(|b| format!("{:02x}", b))
            .collect::<String>()
    )
}

/// The per-pod mount of a CSI volume.
pub fn pod_mount_path(pod_uid: &str, pv: &str) -> String {
    format!(
        "/var/lib/kubelet/pods/{}/volumes/kubernetes.io~csi/{}/mount",
        pod_uid, pv
    )
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OperationKey {
    pub volume: String,
    pub pod: String,
    pub node: String,
}

impl OperationKey {
    pub fn device(volume: &str) -> OperationKey {
        OperationKey {
            volume: volume.into(),
            pod: String::new(),
            node: String::new(),
        }
    }
    pub fn pod(volume: &str, pod_uid: &str) -> OperationKey {
        OperationKey {
            volume: volume.into(),
            pod: pod_uid.into(),
            node: String::new(),
        }
    }
    /// How nestedpendingoperations prints the key.
    pub fn describe(&self) -> String {
        format!(
            "{{volumeName:{} podName:{} nodeName:{}}}",
            self.volume, self.pod, self.node
        )
    }
}

/// The operation an entry of nestedpendingoperations is for (its `operationName`): a failed
/// operation's backoff holds back only the same operation; another one that matches its key
/// takes the entry over with a fresh backoff (nested_pending_operations.go `Run`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    VerifyControllerAttachedVolume,
    MountVolume,
    UnmountVolume,
    UnmountDevice,
}

#[derive(Debug, Clone)]
struct Backoff {
    op: Op,
    failures: u32,
    /// The nominal durationBeforeRetry (what the log prints).
    last: Duration,
    retry_at: SimInstant,
}

/// An operation whose call has not returned yet (a CSI call hanging until its timeout).
#[derive(Debug, Clone)]
pub struct Running {
    pub op: Op,
    pub done_at: SimInstant,
    /// How the call ends.
    pub failure: HungCall,
}

/// How a hanging call ends when it returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HungCall {
    /// A mount stage (`MountVolume.MountDevice`, `MountVolume.SetUp`) fails with the call's error,
    /// on the volume's first waiting pod (its FailedMount event).
    Mount { stage: &'static str, error: String },
    /// An unmount operation fails with this detailed message (unmounts record no event).
    Unmount { detailed: String },
}

/// nestedpendingoperations: operations in flight and failed ones with their backoffs. Most
/// operations complete within a reconciler tick in the simulation; those whose call hangs stay
/// in flight, and any operation matching a pending one waits (same volume; an empty pod name
/// matches every pod of the volume). Nothing is node-wide.
#[derive(Debug)]
pub struct PendingOperations {
    failed: HashMap<OperationKey, Backoff>,
    running: HashMap<OperationKey, Running>,
    timing: Timing,
}

impl PendingOperations {
    pub fn new(timing: Timing) -> Self {
        PendingOperations {
            failed: HashMap::new(),
            running: HashMap::new(),
            timing,
        }
    }

    fn matches(a: &OperationKey, b: &OperationKey) -> bool {
        a.volume == b.volume && (a.pod == b.pod || a.pod.is_empty() || b.pod.is_empty())
    }

    /// May the operation start now? Not while a matching one runs, nor while the same
    /// operation on a matching key backs off.
    pub fn may_run(&self, key: &OperationKey, op: Op, now: SimInstant) -> bool {
        !self.running.keys().any(|k| Self::matches(k, key))
            && self
                .failed
                .iter()
                .filter(|(k, b)| Self::matches(k, key) && b.op == op)
                .all(|(_, b)| now >= b.retry_at)
    }

    /// Start an operation whose call returns only at `done_at`, ending as `failure` says.
    pub fn start_hanging(
        &mut self,
        key: &OperationKey,
        op: Op,
        done_at: SimInstant,
        failure: HungCall,
    ) {
        self.running.insert(
            key.clone(),
            Running {
                op,
                done_at,
                failure,
            },
        );
    }

    /// Operations whose hanging call has returned by `now`, with how each ended.
    pub fn returned(&mut self, now: SimInstant) -> Vec<(OperationKey, Op, HungCall)> {
        let done: Vec<OperationKey> = self
            .running
            .iter()
            .filter(|(_, r)| now >= r.done_at)
            .map(|(k, _)| k.clone())
            .collect();
        done.into_iter()
            .map(|k| {
                let r = self.running.remove(&k).expect("listed");
                (k, r.op, r.failure)
            })
            .collect()
    }

    /// Record a failure: returns the log line nestedpendingoperations writes. The backoff is
    /// nominal (500ms doubling to 2m2s) in the line; the retry waits its scaled equivalent.
    /// (For tests: the process started with the cluster.)
    pub fn failed(&mut self, key: &OperationKey, op: Op, now: SimInstant, error: &str) -> String {
        self.failed_at(
            key,
            op,
            now,
            (self.timing.now(), self.timing.clock.epoch()),
            error,
        )
    }

    /// `failed`, with the time (the cluster clock's) the line is logged at and when the logging
    /// process started (its "No retries permitted until" prints Go's monotonic reading, counted
    /// from there).
    pub fn failed_at(
        &mut self,
        key: &OperationKey,
        op: Op,
        now: SimInstant,
        (logged, process_start): (chrono::DateTime<chrono::Utc>, chrono::DateTime<chrono::Utc>),
        error: &str,
    ) -> String {
        // The entry this run took over: the same operation's keeps doubling, another's starts
        // again at 500ms.
        let previous = self
            .failed
            .iter()
            .filter(|(k, b)| Self::matches(k, key) && b.op == op)
            .map(|(_, b)| b.clone())
            .max_by_key(|b| b.last);
        self.failed.retain(|k, _| !Self::matches(k, key));
        let next = match &previous {
            None => self.timing.op_backoff_initial,
            Some(b) => (b.last * 2).min(self.timing.op_backoff_max),
        };
        let failures = previous.map(|b| b.failures).unwrap_or(0) + 1;
        self.failed.insert(
            key.clone(),
            Backoff {
                op,
                failures,
                last: next,
                retry_at: now + self.timing.s(next),
            },
        );
        format!(
            "Operation for \"{}\" failed. No retries permitted until {} (durationBeforeRetry {}). Error: {}",
            key.describe(),
            self.timing.go_time(process_start, logged, next),
            go_duration(next),
            error
        )
    }

    /// A completed operation deletes the entry it ran under (whichever matching entry it took
    /// over).
    pub fn succeeded(&mut self, key: &OperationKey) {
        self.failed.retain(|k, _| !Self::matches(k, key));
    }

    pub fn failures(&self, key: &OperationKey) -> u32 {
        self.failed.get(key).map(|b| b.failures).unwrap_or(0)
    }

    /// A kubelet restart starts with an empty operation executor.
    pub fn clear(&mut self) {
        self.failed.clear();
        self.running.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_to_the_cap() {
        // At 1/1000 the retries wait milliseconds, but the log prints the real durations.
        let mut ops = PendingOperations::new(Timing::scaled(0.001));
        let k = OperationKey::device(&unique_name("pvc-1"));
        let mut seen = Vec::new();
        for _ in 0..10 {
            let line = ops.failed(&k, Op::MountVolume, SimInstant::START, "boom");
            let d = line
                .split("durationBeforeRetry ")
                .nth(1)
                .unwrap()
                .split(')')
                .next()
                .unwrap()
                .to_string();
            seen.push(d);
        }
        assert_eq!(
            seen,
            vec!["500ms", "1s", "2s", "4s", "8s", "16s", "32s", "1m4s", "2m2s", "2m2s"]
        );
        assert!(!ops.may_run(&k, Op::MountVolume, SimInstant::START));
        assert!(ops.may_run(
            &k,
            Op::MountVolume,
            SimInstant::START + Duration::from_millis(123)
        ));
        // The same operation for one pod of the volume waits on the volume-wide key.
        assert!(!ops.may_run(
            &OperationKey::pod(&k.volume, "uid"),
            Op::MountVolume,
            SimInstant::START
        ));
        ops.succeeded(&k);
        assert!(ops.may_run(&k, Op::MountVolume, SimInstant::START));
    }

    /// A failed operation holds back only itself: another operation on a matching key takes
    /// its entry over with a fresh backoff (a failing TearDown of an old pod does not hold back
    /// the volume's MountVolume for a new pod; a MountVolume failing after
    /// VerifyControllerAttachedVolume failures starts at 500ms).
    #[test]
    fn another_operation_takes_a_failed_entry_over_afresh() {
        let mut ops = PendingOperations::new(Timing::scaled(0.001));
        let volume = unique_name("pvc-1");
        let teardown = OperationKey::pod(&volume, "old-pod");
        let device = OperationKey::device(&volume);
        let now = SimInstant::START;
        for _ in 0..6 {
            ops.failed(&teardown, Op::UnmountVolume, now, "input/output error");
        }
        assert!(!ops.may_run(&teardown, Op::UnmountVolume, now));
        assert!(ops.may_run(&device, Op::MountVolume, now));
        for _ in 0..4 {
            ops.failed(
                &device,
                Op::VerifyControllerAttachedVolume,
                now,
                "not attached",
            );
        }
        let line = ops.failed(&device, Op::MountVolume, now, "boom");
        assert!(line.contains("(durationBeforeRetry 500ms)"), "{line}");
        let line = ops.failed(&device, Op::MountVolume, now, "boom");
        assert!(line.contains("(durationBeforeRetry 1s)"), "{line}");
    }

    #[test]
    fn a_hanging_operation_blocks_its_volume_only() {
        let mut ops = PendingOperations::new(Timing::scaled(0.001));
        let (a, b) = (
            OperationKey::device(&unique_name("pvc-a")),
            OperationKey::device(&unique_name("pvc-b")),
        );
        let now = SimInstant::START;
        ops.start_hanging(
            &a,
            Op::MountVolume,
            now + Duration::from_millis(120),
            HungCall::Unmount {
                detailed: "rpc error: code = DeadlineExceeded desc = context deadline exceeded"
                    .into(),
            },
        );
        assert!(
            !ops.may_run(&a, Op::MountVolume, now)
                && !ops.may_run(&OperationKey::pod(&a.volume, "uid"), Op::UnmountVolume, now)
        );
        assert!(ops.may_run(&b, Op::MountVolume, now), "no node-wide lock");
        assert!(ops.returned(now).is_empty());
        let done = ops.returned(now + Duration::from_millis(121));
        assert_eq!(done.len(), 1);
        assert!(
            matches!(&done[0].2, HungCall::Unmount { detailed } if detailed.ends_with("context deadline exceeded"))
        );
        assert!(ops.may_run(&a, Op::MountVolume, now + Duration::from_millis(121)));
    }

    #[test]
    fn paths_and_names_are_kubelets() {
        assert_eq!(
            unique_name("pvc-81b676e6"),
            "kubernetes.io/csi/driver.longhorn.io^pvc-81b676e6"
        );
        let p = global_mount_path("pvc-81b676e6");
        assert!(
            p.starts_with("/var/lib/kubelet/plugins/kubernetes.io/csi/driver.longhorn.io/")
                && p.ends_with("/globalmount")
        );
        assert_eq!(
            p.len(),
            "/var/lib/kubelet/plugins/kubernetes.io/csi/driver.longhorn.io/".len()
                + 64
                + "/globalmount".len()
        );
        assert_eq!(
            OperationKey::device("v").describe(),
            "{volumeName:v podName: nodeName:}"
        );
    }
}
