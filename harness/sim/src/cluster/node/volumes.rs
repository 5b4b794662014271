//! Kubelet volume internals: CSI volume identities and paths, and `nestedpendingoperations`
//! (operations keyed by {volumeName, podName, nodeName}; a failed one keeps its key and may not
//! run again before its exponential backoff expires: 500 ms doubling to 2m2s, scaled).

use crate::timing::go_duration;
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
    format!("/var/lib/kubelet/plugins/kubernetes.io/csi/{}/{}/globalmount", DRIVER, hex)
}

/// The per-pod mount of a CSI volume.
pub fn pod_mount_path(pod_uid: &str, pv: &str) -> String {
    format!("/var/lib/kubelet/pods/{}/volumes/kubernetes.io~csi/{}/mount", pod_uid, pv)
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OpKey {
    pub volume: String,
    pub pod: String,
    pub node: String,
}

impl OpKey {
    pub fn device(volume: &str) -> OpKey {
        OpKey { volume: volume.into(), pod: String::new(), node: String::new() }
    }
    pub fn pod(volume: &str, pod_uid: &str) -> OpKey {
        OpKey { volume: volume.into(), pod: pod_uid.into(), node: String::new() }
    }
    /// How nestedpendingoperations prints the key.
    pub fn describe(&self) -> String {
        format!("{{volumeName:{} podName:{} nodeName:{}}}", self.volume, self.pod, self.node)
    }
}

#[derive(Debug, Clone)]
struct Backoff {
    failures: u32,
    last: Duration,
    retry_at: Instant,
}

/// Failed operations and their backoffs. Running operations complete within a tick in the
/// simulation, so only the failed state is kept.
#[derive(Debug)]
pub struct PendingOperations {
    failed: HashMap<OpKey, Backoff>,
    initial: Duration,
    max: Duration,
}

impl PendingOperations {
    pub fn new(initial: Duration, max: Duration) -> Self {
        PendingOperations { failed: HashMap::new(), initial, max }
    }

    /// May the operation run now? An operation whose volume matches with an empty pod name is
    /// keyed for all pods of that volume, as upstream.
    pub fn may_run(&self, key: &OpKey, now: Instant) -> bool {
        self.failed
            .iter()
            .filter(|(k, _)| k.volume == key.volume && (k.pod == key.pod || k.pod.is_empty() || key.pod.is_empty()))
            .all(|(_, b)| now >= b.retry_at)
    }

    /// Record a failure: returns the log line nestedpendingoperations writes.
    pub fn failed(&mut self, key: &OpKey, now: Instant, error: &str) -> String {
        let next = match self.failed.get(key) {
            None => self.initial,
            Some(b) => (b.last * 2).min(self.max),
        };
        let failures = self.failed.get(key).map(|b| b.failures).unwrap_or(0) + 1;
        self.failed.insert(key.clone(), Backoff { failures, last: next, retry_at: now + next });
        let until = chrono::Utc::now() + chrono::Duration::from_std(next).unwrap_or_default();
        format!(
            "Operation for \"{}\" failed. No retries permitted until {} (durationBeforeRetry {}). Error: {}",
            key.describe(),
            until.format("%Y-%m-%d %H:%M:%S%.9f +0000 UTC"),
            go_duration(next),
            error
        )
    }

    pub fn succeeded(&mut self, key: &OpKey) {
        self.failed.remove(key);
    }

    /// Is any device-level operation failing (backoff state kept)?
    pub fn any_failing(&self) -> bool {
        !self.failed.is_empty()
    }

    pub fn failures(&self, key: &OpKey) -> u32 {
        self.failed.get(key).map(|b| b.failures).unwrap_or(0)
    }

    /// A kubelet restart starts with an empty operation executor.
    pub fn clear(&mut self) {
        self.failed.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_to_the_cap() {
        let mut ops = PendingOperations::new(Duration::from_millis(500), Duration::from_secs(122));
        let k = OpKey::device(&unique_name("pvc-1"));
        let mut seen = Vec::new();
        for _ in 0..10 {
            let line = ops.failed(&k, Instant::now(), "boom");
            let d = line.split("durationBeforeRetry ").nth(1).unwrap().split(')').next().unwrap().to_string();
            seen.push(d);
        }
        assert_eq!(seen, vec!["500ms", "1s", "2s", "4s", "8s", "16s", "32s", "1m4s", "2m2s", "2m2s"]);
        assert!(!ops.may_run(&k, Instant::now()));
        assert!(ops.may_run(&k, Instant::now() + Duration::from_secs(123)));
        // A pod-level operation on the same volume waits on the volume-wide key.
        assert!(!ops.may_run(&OpKey::pod(&k.volume, "uid"), Instant::now()));
        ops.succeeded(&k);
        assert!(ops.may_run(&k, Instant::now()));
    }

    #[test]
    fn paths_and_names_are_kubelets() {
        assert_eq!(unique_name("pvc-81b676e6"), "kubernetes.io/csi/driver.longhorn.io^pvc-81b676e6");
        let p = global_mount_path("pvc-81b676e6");
        assert!(p.starts_with("/var/lib/kubelet/plugins/kubernetes.io/csi/driver.longhorn.io/") && p.ends_with("/globalmount"));
        assert_eq!(p.len(), "/var/lib/kubelet/plugins/kubernetes.io/csi/driver.longhorn.io/".len() + 64 + "/globalmount".len());
        assert_eq!(OpKey::device("v").describe(), "{volumeName:v podName: nodeName:}");
    }
}
