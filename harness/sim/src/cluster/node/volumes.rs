//! Kubelet volume internals: CSI volume identities and paths, and `nestedpendingoperations`
//! (operations keyed by {volumeName, podName, nodeName}; a failed one keeps its key and may not
//! run again before its exponential backoff expires: 500 ms doubling to 2m2s, printed nominal).

use crate::timing::{go_duration, Timing};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::time::Duration;
use tokio::time::Instant;

pub const DRIVER: &str = "driver.longhorn.io";

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

#[derive(Debug, Clone)]
struct Backoff {
    failures: u32,
    /// The nominal durationBeforeRetry (what the log prints).
    last: Duration,
    retry_at: Instant,
}

/// An operation whose call has not returned yet (a CSI call hanging until its timeout).
#[derive(Debug, Clone)]
pub struct Running {
    pub done_at: Instant,
    /// The error the call ends with.
    pub error: String,
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

    /// May the operation start now? Not while a matching one runs or backs off.
    pub fn may_run(&self, key: &OperationKey, now: Instant) -> bool {
        !self.running.keys().any(|k| Self::matches(k, key))
            && self
                .failed
                .iter()
                .filter(|(k, _)| Self::matches(k, key))
                .all(|(_, b)| now >= b.retry_at)
    }

    /// Start an operation whose call returns only at `done_at`, with `error`.
    pub fn start_hanging(&mut self, key: &OperationKey, done_at: Instant, error: String) {
        self.running.insert(key.clone(), Running { done_at, error });
    }

    /// Operations whose hanging call has returned by `now`, with the error each ended with.
    pub fn returned(&mut self, now: Instant) -> Vec<(OperationKey, String)> {
        let done: Vec<OperationKey> = self
            .running
            .iter()
            .filter(|(_, r)| now >= r.done_at)
            .map(|(k, _)| k.clone())
            .collect();
        done.into_iter()
            .map(|k| {
                let r = self.running.remove(&k).expect("listed");
                (k, r.error)
            })
            .collect()
    }

    /// Record a failure: returns the log line nestedpendingoperations writes. The backoff is
    /// nominal (500ms doubling to 2m2s) in the line; the retry waits its scaled equivalent.
    pub fn failed(&mut self, key: &OperationKey, now: Instant, error: &str) -> String {
        self.failed_at(key, now, self.timing.now(), error)
    }

    /// `failed`, with the nominal time the line is logged at.
    pub fn failed_at(
        &mut self,
        key: &OperationKey,
        now: Instant,
        logged: chrono::DateTime<chrono::Utc>,
        error: &str,
    ) -> String {
        let next = match self.failed.get(key) {
            None => self.timing.op_backoff_initial,
            Some(b) => (b.last * 2).min(self.timing.op_backoff_max),
        };
        let failures = self.failed.get(key).map(|b| b.failures).unwrap_or(0) + 1;
        self.failed.insert(
            key.clone(),
            Backoff {
                failures,
                last: next,
                retry_at: now + self.timing.s(next),
            },
        );
        format!(
            "Operation for \"{}\" failed. No retries permitted until {} (durationBeforeRetry {}). Error: {}",
            key.describe(),
            self.timing.go_time_at(logged, next),
            go_duration(next),
            error
        )
    }

    pub fn succeeded(&mut self, key: &OperationKey) {
        self.failed.remove(key);
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
            let line = ops.failed(&k, Instant::now(), "boom");
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
        assert!(!ops.may_run(&k, Instant::now()));
        assert!(ops.may_run(&k, Instant::now() + Duration::from_millis(123)));
        // A pod-level operation on the same volume waits on the volume-wide key.
        assert!(!ops.may_run(&OperationKey::pod(&k.volume, "uid"), Instant::now()));
        ops.succeeded(&k);
        assert!(ops.may_run(&k, Instant::now()));
    }

    #[test]
    fn a_hanging_operation_blocks_its_volume_only() {
        let mut ops = PendingOperations::new(Timing::scaled(0.001));
        let (a, b) = (
            OperationKey::device(&unique_name("pvc-a")),
            OperationKey::device(&unique_name("pvc-b")),
        );
        let now = Instant::now();
        ops.start_hanging(
            &a,
            now + Duration::from_millis(120),
            "rpc error: code = DeadlineExceeded desc = context deadline exceeded".into(),
        );
        assert!(!ops.may_run(&a, now) && !ops.may_run(&OperationKey::pod(&a.volume, "uid"), now));
        assert!(ops.may_run(&b, now), "no node-wide lock");
        assert!(ops.returned(now).is_empty());
        let done = ops.returned(now + Duration::from_millis(121));
        assert_eq!(done.len(), 1);
        assert!(done[0].1.ends_with("context deadline exceeded"));
        assert!(ops.may_run(&a, now + Duration::from_millis(121)));
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
