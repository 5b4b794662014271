//! The status manager (pkg/kubelet/status/status_manager.go): it caches the status the kubelet
//! generated for each pod (`SetPodStatus`: a status that differs from the cached one gets the
//! next version), writes a pod's status when its version is newer than the one last written
//! (`needsUpdate`) or when the API's copy differs from the cache (`needsReconcile`, someone
//! else changed it), and skips the write when the API already has it. Once a deleted pod's
//! SyncTerminatedPod has finished (`TerminatePod`), it writes the final status and then deletes
//! the pod object with grace 0 (`canBeDeleted`).

use super::log::KubeletLog;
use crate::apiserver::meta;
use crate::internal::Internal;
use serde_json::{json, Value};
use std::collections::hash_map::DefaultHasher;
use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// `versionedPodStatus`, with `apiStatusVersions`' entry beside it.
#[derive(Debug, Clone, Default)]
struct VersionedPodStatus {
    /// A fingerprint of the cached status: the cache keeps the status itself only until it is
    /// written (the pod manager's copy holds it after that), a node's statuses being a large
    /// share of the sim's memory at 100,000 pods.
    fingerprint: Option<u64>,
    /// The cached status while it is still to be written or compared with the API's.
    pending: Option<Value>,
    version: u64,
    /// The version last written (or found already there).
    written: Option<u64>,
    /// SyncTerminatedPod has finished: the pod may go once its final status is written.
    pod_is_finished: bool,
    /// The cache was set again (a change of the kubelet's or of the API's copy): compare it
    /// with the API's.
    check: bool,
}

/// What a sync did to one pod.
#[derive(Debug, Clone)]
pub enum Synced {
    /// Its status was written: the pod as the API now has it.
    Written(Arc<Value>),
    /// The pod object was deleted.
    Deleted,
}

#[derive(Debug, Default)]
pub struct StatusManager {
    /// `podStatuses`, ordered so a sync writes in the same order on every run.
    statuses: BTreeMap<String, VersionedPodStatus>,
}

fn fingerprint(status: &Value) -> u64 {
    let mut h = DefaultHasher::new();
    status.to_string().hash(&mut h);
    h.finish()
}

impl StatusManager {
    fn entry(&mut self, pod: &Value) -> &mut VersionedPodStatus {
        self.statuses.entry(meta::uid(pod).to_string()).or_default()
    }

    /// `SetPodStatus`: cache the status the kubelet generated for `pod`.
    pub fn set_pod_status(&mut self, pod: &Value, status: Value) {
        let e = self.entry(pod);
        let fp = fingerprint(&status);
        if e.fingerprint != Some(fp) {
            e.version += 1;
            e.fingerprint = Some(fp);
        }
        e.pending = Some(status);
        e.check = true;
    }

    /// `TerminatePod`: the pod's SyncTerminatedPod has finished.
    pub fn terminate_pod(&mut self, pod: &Value) {
        // Called on every pass until the pod is gone: a delete that failed is tried again.
        let e = self.entry(pod);
        e.pod_is_finished = true;
        e.check = true;
    }

    /// The pod is gone: its cached status goes (`RemoveOrphanedStatuses`).
    pub fn remove(&mut self, uid: &str) {
        self.statuses.remove(uid);
    }

    /// `syncBatch`: write what needs writing, delete what may go. `pod` is the pod manager's
    /// copy of a pod by UID.
    pub fn sync(
        &mut self,
        pod: impl Fn(&str) -> Option<Arc<Value>>,
        client: &Internal,
        log: &KubeletLog,
    ) -> Vec<(String, Synced)> {
        let mut out = Vec::new();
        for (uid, e) in self.statuses.iter_mut() {
            // needsUpdate: a version newer than the one written.
            let needs_update = e.fingerprint.is_some() && e.written.is_none_or(|v| v < e.version);
            if !(needs_update || e.check) {
                continue;
            }
            e.check = false;
            let Some(mut current) = pod(uid) else {
                continue;
            };
            if let Some(status) = e.pending.take() {
                // Fields the apiserver or others added (qosClass) do not make it differ.
                if meta::merge_is_noop(current.get("status"), &status) {
                    e.written = Some(e.version);
                } else {
                    let (ns, name) = (meta::namespace(&current), meta::name(&current));
                    match client.merge_status("", "pods", ns, name, &json!({ "status": status })) {
                        Ok(written) => {
                            e.written = Some(e.version);
                            out.push((uid.clone(), Synced::Written(written.clone())));
                            current = written;
                        }
                        Err(err) => {
                            if err.code != 404 {
                                let line = format!(
                                    "\"Failed to update status for pod\" pod=\"{}/{}\" err=\"{}\"",
                                    ns,
                                    name,
                                    err.message.replace('"', "'")
                                );
                                log.error("status_manager.go:1068", &line);
                                e.pending = Some(status);
                                e.check = true;
                            }
                            continue;
                        }
                    }
                }
            }
            // canBeDeleted: deleted, finished, and its final status written.
            if e.pod_is_finished
                && meta::is_deleting(&current)
                && client
                    .delete(
                        "",
                        "pods",
                        meta::namespace(&current),
                        meta::name(&current),
                        Some(0),
                    )
                    .is_ok()
            {
                out.push((uid.clone(), Synced::Deleted));
            }
        }
        for (uid, synced) in &out {
            if matches!(synced, Synced::Deleted) {
                self.remove(uid);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apiserver::ApiServer;
    use crate::cluster::node::state::SimNode;
    use crate::timing::Timing;

    fn setup() -> (Internal, KubeletLog) {
        let client = Internal::new(ApiServer::new(100), "kubelet");
        client
            .create(
                "",
                "namespaces",
                "",
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}),
            )
            .unwrap();
        client
            .create(
                "",
                "pods",
                "default",
                json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
                       "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "busybox"}]}}),
            )
            .unwrap();
        let log = KubeletLog::new(SimNode::new("n1", 0, false), Timing::default());
        (client, log)
    }

    fn status(phase: &str) -> Value {
        json!({"phase": phase, "hostIP": "172.18.0.2"})
    }

    #[test]
    fn writes_only_changes_and_reconciles_what_others_changed() {
        let (client, log) = setup();
        let current = || client.get("", "pods", "default", "p");
        let mut sm = StatusManager::default();
        let pod = current().unwrap();
        sm.set_pod_status(&pod, status("Running"));
        let synced = sm.sync(|_| current(), &client, &log);
        assert!(
            matches!(synced.as_slice(), [(_, Synced::Written(p))] if p["status"]["phase"] == "Running")
        );
        // The same status again: nothing to write.
        let rv = meta::resource_version(&current().unwrap()).to_string();
        sm.set_pod_status(&pod, status("Running"));
        assert!(sm.sync(|_| current(), &client, &log).is_empty());
        assert!(sm.sync(|_| current(), &client, &log).is_empty());
        assert_eq!(meta::resource_version(&current().unwrap()), rv);
        // Someone else changes the phase: the kubelet's cached status goes back.
        client
            .merge_status(
                "",
                "pods",
                "default",
                "p",
                &json!({"status": {"phase": "Unknown"}}),
            )
            .unwrap();
        sm.set_pod_status(&pod, status("Running"));
        assert_eq!(sm.sync(|_| current(), &client, &log).len(), 1);
        assert_eq!(current().unwrap()["status"]["phase"], "Running");
    }

    #[test]
    fn a_finished_pod_goes_after_its_final_status() {
        let (client, log) = setup();
        let current = || client.get("", "pods", "default", "p");
        let mut sm = StatusManager::default();
        sm.set_pod_status(&current().unwrap(), status("Running"));
        sm.sync(|_| current(), &client, &log);
        // Finished but not deleted: it stays.
        sm.terminate_pod(&current().unwrap());
        assert!(sm.sync(|_| current(), &client, &log).is_empty());
        assert!(current().is_some());
        // Deleted (graceful): the final status is written, then the pod object goes.
        assert!(!client.delete("", "pods", "default", "p", None).unwrap());
        let pod = current().unwrap();
        sm.set_pod_status(&pod, status("Succeeded"));
        sm.terminate_pod(&pod);
        let synced = sm.sync(|_| current(), &client, &log);
        assert!(
            matches!(synced.as_slice(), [(_, Synced::Written(p)), (_, Synced::Deleted)] if p["status"]["phase"] == "Succeeded"),
            "{synced:?}"
        );
        assert!(current().is_none());
        assert!(sm.statuses.is_empty());
    }

    #[test]
    fn the_cache_drops_a_status_once_written() {
        let (client, log) = setup();
        let current = || client.get("", "pods", "default", "p");
        let mut sm = StatusManager::default();
        sm.set_pod_status(&current().unwrap(), status("Running"));
        assert!(sm.statuses.values().all(|e| e.pending.is_some()));
        sm.sync(|_| current(), &client, &log);
        let e = sm.statuses.values().next().unwrap();
        assert!(e.pending.is_none() && e.written == Some(e.version));
    }
}
