//! The desired state of world (volumemanager/cache/desired_state_of_world.go): the volumes the
//! node should have mounted, and for each the pods that should have it mounted. Only the
//! populator writes it; the reconciler reads it.

use super::{CsiVolume, UniquePodName, UniqueVolumeName};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;

#[derive(Debug, Default)]
pub struct DesiredStateOfWorld {
    /// Ordered, so a pass starts operations in the same order on every run.
    volumes: BTreeMap<UniqueVolumeName, VolumeEntry>,
}

#[derive(Debug)]
struct VolumeEntry {
    spec: CsiVolume,
    pods: BTreeMap<UniquePodName, PodToMount>,
}

#[derive(Debug, Clone)]
struct PodToMount {
    /// The pod as the pod manager last had it (what a FailedMount event is recorded on).
    pod: Arc<Value>,
    /// The volume's name in the pod's spec.
    outer_volume_spec_name: String,
}

/// One volume one pod should have mounted (upstream's `VolumeToMount`).
#[derive(Debug, Clone)]
pub struct VolumeToMount {
    pub volume_name: UniqueVolumeName,
    pub spec: CsiVolume,
    pub pod_name: UniquePodName,
    pub pod: Arc<Value>,
    pub outer_volume_spec_name: String,
}

impl VolumeToMount {
    /// `namespace/name`, as klog's `KObj` prints the pod.
    pub fn pod_ref(&self) -> String {
        format!(
            "{}/{}",
            crate::apiserver::meta::namespace(&self.pod),
            crate::apiserver::meta::name(&self.pod)
        )
    }

    /// `VolumeToMount.GenerateMsgDetailed`: `<prefix> for volume "<pv>" (UniqueName: "<name>")
    /// pod "<pod name>" (UID: "<uid>") <suffix>`.
    pub fn msg_detailed(&self, prefix: &str, suffix: &str) -> String {
        format!(
            "{} for volume \"{}\" (UniqueName: \"{}\") pod \"{}\" (UID: \"{}\") {}",
            prefix,
            self.spec.pv,
            self.volume_name,
            crate::apiserver::meta::name(&self.pod),
            self.pod_name,
            suffix
        )
    }

    /// A klog.InfoS line with the pod as its key/value: `"<msg>" pod="<ns>/<name>"`.
    pub fn info_s(&self, msg: &str) -> String {
        format!(
            "\"{}\" pod=\"{}\"",
            msg.replace('"', "\\\""),
            self.pod_ref()
        )
    }

    /// `VolumeToMount.GenerateMsgSimple`: `<prefix> for volume "<pv>" <suffix>` (events).
    pub fn msg_simple(&self, prefix: &str, suffix: &str) -> String {
        format!("{} for volume \"{}\" {}", prefix, self.spec.pv, suffix)
    }
}

impl DesiredStateOfWorld {
    /// `AddPodToVolume`: the pod should have the volume mounted under its spec name `outer`.
    pub fn add_pod_to_volume(
        &mut self,
        pod_name: &UniquePodName,
        pod: &Arc<Value>,
        outer: &str,
        spec: CsiVolume,
    ) -> UniqueVolumeName {
        let volume_name = spec.unique_name();
        self.volumes
            .entry(volume_name.clone())
            .or_insert_with(|| VolumeEntry {
                spec,
                pods: BTreeMap::new(),
            })
            .pods
            .insert(
                pod_name.clone(),
                PodToMount {
                    pod: pod.clone(),
                    outer_volume_spec_name: outer.to_string(),
                },
            );
        volume_name
    }

    /// `DeletePodFromVolume` for every volume of the pod; a volume no pod wants any more goes.
    pub fn delete_pod(&mut self, pod_name: &UniquePodName) {
        for entry in self.volumes.values_mut() {
            entry.pods.remove(pod_name);
        }
        self.volumes.retain(|_, e| !e.pods.is_empty());
    }

    /// The pod manager's newer copy of a pod that wants volumes.
    pub fn update_pod(&mut self, pod_name: &UniquePodName, pod: &Arc<Value>) {
        for entry in self.volumes.values_mut() {
            if let Some(p) = entry.pods.get_mut(pod_name) {
                p.pod = pod.clone();
            }
        }
    }

    /// Every pod that wants a volume (`GetPods`).
    pub fn pods(&self) -> Vec<UniquePodName> {
        let mut pods: Vec<UniquePodName> = self
            .volumes
            .values()
            .flat_map(|e| e.pods.keys().cloned())
            .collect();
        pods.sort();
        pods.dedup();
        pods
    }

    /// `GetVolumesToMount`: every (volume, pod) pair, by volume then pod.
    pub fn volumes_to_mount(&self) -> Vec<VolumeToMount> {
        self.volumes
            .iter()
            .flat_map(|(volume_name, e)| {
                e.pods.iter().map(move |(pod_name, p)| VolumeToMount {
                    volume_name: volume_name.clone(),
                    spec: e.spec.clone(),
                    pod_name: pod_name.clone(),
                    pod: p.pod.clone(),
                    outer_volume_spec_name: p.outer_volume_spec_name.clone(),
                })
            })
            .collect()
    }

    /// The first pod (by UID) that wants the volume, if any.
    pub fn first_volume_to_mount(&self, volume_name: &UniqueVolumeName) -> Option<VolumeToMount> {
        let e = self.volumes.get(volume_name)?;
        let (pod_name, p) = e.pods.iter().next()?;
        Some(VolumeToMount {
            volume_name: volume_name.clone(),
            spec: e.spec.clone(),
            pod_name: pod_name.clone(),
            pod: p.pod.clone(),
            outer_volume_spec_name: p.outer_volume_spec_name.clone(),
        })
    }

    /// `VolumeExists`: some pod wants the volume.
    pub fn volume_exists(&self, volume_name: &UniqueVolumeName) -> bool {
        self.volumes.contains_key(volume_name)
    }

    /// `PodExistsInVolume`.
    pub fn pod_exists_in_volume(
        &self,
        pod_name: &UniquePodName,
        volume_name: &UniqueVolumeName,
    ) -> bool {
        self.volumes
            .get(volume_name)
            .map(|e| e.pods.contains_key(pod_name))
            .unwrap_or(false)
    }

    /// The volume the pod's spec volume `outer` resolved to, if the populator added it.
    pub fn pod_volume(&self, pod_name: &UniquePodName, outer: &str) -> Option<&UniqueVolumeName> {
        self.volumes.iter().find_map(|(volume_name, e)| {
            e.pods
                .get(pod_name)
                .filter(|p| p.outer_volume_spec_name == outer)
                .map(|_| volume_name)
        })
    }

    /// The unique names of every wanted volume.
    pub fn volume_names(&self) -> impl Iterator<Item = &UniqueVolumeName> {
        self.volumes.keys()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(uid: &str) -> Arc<Value> {
        Arc::new(json!({"metadata": {"name": format!("p-{uid}"), "namespace": "ns", "uid": uid}}))
    }

    #[test]
    fn a_volume_goes_with_its_last_pod() {
        let mut dsw = DesiredStateOfWorld::default();
        let spec = CsiVolume {
            pv: "pvc-1".into(),
            handle: "pvc-1".into(),
            nfs: false,
        };
        let (a, b) = (UniquePodName::new("a"), UniquePodName::new("b"));
        let v = dsw.add_pod_to_volume(&a, &pod("a"), "data", spec.clone());
        dsw.add_pod_to_volume(&b, &pod("b"), "data", spec);
        assert_eq!(dsw.volumes_to_mount().len(), 2);
        assert_eq!(dsw.pod_volume(&b, "data"), Some(&v));
        assert_eq!(dsw.pod_volume(&b, "other"), None);
        dsw.delete_pod(&a);
        assert!(dsw.volume_exists(&v) && !dsw.pod_exists_in_volume(&a, &v));
        assert_eq!(dsw.first_volume_to_mount(&v).unwrap().pod_name, b);
        dsw.delete_pod(&b);
        assert!(!dsw.volume_exists(&v) && dsw.pods().is_empty());
    }

    #[test]
    fn messages_name_the_volume_as_a_volume_to_mount_does() {
        let mut dsw = DesiredStateOfWorld::default();
        let spec = CsiVolume {
            pv: "pvc-1".into(),
            handle: "h-1".into(),
            nfs: false,
        };
        dsw.add_pod_to_volume(&UniquePodName::new("u1"), &pod("u1"), "data", spec);
        let v = &dsw.volumes_to_mount()[0];
        assert_eq!(
            v.msg_detailed("MountVolume.SetUp succeeded", ""),
            "MountVolume.SetUp succeeded for volume \"pvc-1\" (UniqueName: \"kubernetes.io/csi/driver.longhorn.io^h-1\") pod \"p-u1\" (UID: \"u1\") "
        );
        assert_eq!(v.pod_ref(), "ns/p-u1");
    }
}
