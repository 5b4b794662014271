//! The desired state of world populator (volumemanager/populator/
//! desired_state_of_world_populator.go): every pass, before the reconciler's, it removes the
//! volumes of pods that are gone or whose containers have all stopped
//! (`findAndRemoveDeletedPods`, which waits for `ShouldPodRuntimeBeRemoved`) and adds the volumes
//! of pods it has not processed yet (`findAndAddNewPods`, which skips pods being terminated). A
//! pod is processed once all its claims resolved to a CSI volume (claim -> bound PV -> volume
//! handle); one with an unbound claim is tried again next pass.

use super::desired_state_of_world::DesiredStateOfWorld;
use super::{spec_volumes, CsiVolume, UniquePodName};
use crate::apiserver::meta;
use crate::internal::Internal;
use serde_json::Value;
use std::collections::HashSet;
use std::sync::Arc;

/// What the populator reads of one pod: the pod manager's copy and what the pod workers say.
pub struct PodInfo<'a> {
    pub uid: &'a str,
    pub pod: &'a Arc<Value>,
    /// `ShouldPodContainersBeTerminating`: its volumes are not added any more.
    pub terminating: bool,
    /// `ShouldPodRuntimeBeRemoved`: its containers have all stopped, so its volumes go.
    pub runtime_removed: bool,
}

#[derive(Debug, Default)]
pub struct DesiredStateOfWorldPopulator {
    /// `processedPods`: pods whose volumes are all in the desired state.
    processed: HashSet<UniquePodName>,
}

impl DesiredStateOfWorldPopulator {
    /// One pass over the node's pods (`pods`: sorted by UID, as the pod workers keep them).
    pub fn populate(
        &mut self,
        dsw: &mut DesiredStateOfWorld,
        pods: &[PodInfo<'_>],
        client: &Internal,
    ) {
        debug_assert!(
            pods.windows(2).all(|w| w[0].uid < w[1].uid),
            "sorted by UID"
        );
        let known = |uid: &str| {
            pods.binary_search_by(|p| p.uid.cmp(uid))
                .ok()
                .map(|i| &pods[i])
        };
        // findAndRemoveDeletedPods.
        for pod_name in dsw.pods() {
            match known(pod_name.as_str()) {
                Some(p) if !p.runtime_removed => dsw.update_pod(&pod_name, p.pod),
                _ => {
                    dsw.delete_pod(&pod_name);
                    self.processed.remove(&pod_name);
                }
            }
        }
        // Pods gone since (only then can there be more processed pods than pods).
        if self.processed.len() > pods.len() {
            self.processed.retain(|p| known(p.as_str()).is_some());
        }
        // findAndAddNewPods.
        for p in pods {
            if p.terminating || self.processed.contains(p.uid) {
                continue;
            }
            let pod_name = UniquePodName::new(p.uid);
            let ns = meta::namespace(p.pod);
            let mut complete = true;
            for v in spec_volumes(p.pod) {
                let Some(claim) = v.claim else { continue };
                match resolve_claim(client, ns, claim) {
                    Some(spec) => {
                        dsw.add_pod_to_volume(&pod_name, p.pod, v.name, spec);
                    }
                    None => complete = false,
                }
            }
            if complete {
                self.processed.insert(pod_name);
            }
        }
    }
}

/// A claim's CSI volume: the PV it is bound to and that PV's volume handle (`createVolumeSpec`
/// through `getPVCExtractPV`).
fn resolve_claim(client: &Internal, ns: &str, claim: &str) -> Option<CsiVolume> {
    let pvc = client.get("", "persistentvolumeclaims", ns, claim)?;
    let pv = meta::str_at(&pvc, "/spec/volumeName")?.to_string();
    let pv_obj = client.get("", "persistentvolumes", "", &pv)?;
    let handle = meta::str_at(&pv_obj, "/spec/csi/volumeHandle")?.to_string();
    let nfs = pv_obj
        .pointer("/spec/accessModes")
        .and_then(serde_json::Value::as_array)
        .is_some_and(|modes| modes.iter().any(|m| m == "ReadWriteMany"));
    Some(CsiVolume { pv, handle, nfs })
}

#[cfg(test)]
mod tests {
    use super::super::UniqueVolumeName;
    use super::*;
    use crate::apiserver::ApiServer;
    use serde_json::json;

    fn pod(uid: &str, claim: &str) -> Arc<Value> {
        Arc::new(
            json!({"metadata": {"name": uid, "namespace": "default", "uid": uid},
            "spec": {"volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim}},
                                 {"name": "tmp", "emptyDir": {}}]}}),
        )
    }

    fn info<'a>(p: &'a Arc<Value>, terminating: bool, removed: bool) -> PodInfo<'a> {
        PodInfo {
            uid: meta::uid(p),
            pod: p,
            terminating,
            runtime_removed: removed,
        }
    }

    #[test]
    fn adds_resolved_claims_once_and_removes_stopped_pods() {
        let client = Internal::new(ApiServer::new(100), "kubelet");
        client
            .create(
                "",
                "namespaces",
                "",
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}),
            )
            .unwrap();
        let mut dsw = DesiredStateOfWorld::default();
        let mut populator = DesiredStateOfWorldPopulator::default();
        let (a, b) = (pod("a", "claim"), pod("b", "claim"));
        // The claim does not exist yet: nothing added, the pod is tried again.
        populator.populate(&mut dsw, &[info(&a, false, false)], &client);
        assert!(dsw.pods().is_empty() && populator.processed.is_empty());
        client
            .create(
                "",
                "persistentvolumes",
                "",
                json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv-1"},
                       "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                                "csi": {"driver": "driver.longhorn.io", "volumeHandle": "pv-1"}}}),
            )
            .unwrap();
        client
            .create(
                "",
                "persistentvolumeclaims",
                "default",
                json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "claim", "namespace": "default"},
                       "spec": {"accessModes": ["ReadWriteOnce"], "volumeName": "pv-1", "resources": {"requests": {"storage": "1Gi"}}}}),
            )
            .unwrap();
        // A pod being terminated is not added; the other one is, under its spec name.
        populator.populate(
            &mut dsw,
            &[info(&a, false, false), info(&b, true, false)],
            &client,
        );
        let pa = UniquePodName::new("a");
        let v = dsw.pod_volume(&pa, "data").cloned().expect("added");
        assert_eq!(v, UniqueVolumeName::of_csi("pv-1"));
        assert!(!dsw.pod_exists_in_volume(&UniquePodName::new("b"), &v));
        assert!(populator.processed.contains(&pa));
        // Terminating keeps its volumes until its containers have stopped.
        populator.populate(&mut dsw, &[info(&a, true, false)], &client);
        assert!(dsw.pod_exists_in_volume(&pa, &v));
        populator.populate(&mut dsw, &[info(&a, true, true)], &client);
        assert!(!dsw.volume_exists(&v) && populator.processed.is_empty());
    }
}
