//! The actual state of world (volumemanager/cache/actual_state_of_world.go): the volumes the
//! kubelet knows attached to its node (it verified the controller's attach), whether each is
//! globally mounted (MountDevice), and which pods have it mounted (SetUp). Only operations write
//! it; the reconciler reads it against the desired state.

use super::super::volumes::{global_mount_path, pod_mount_path};
use super::{CsiVolume, UniquePodName, UniqueVolumeName};
use std::collections::{BTreeMap, BTreeSet};

#[derive(Debug, Default)]
pub struct ActualStateOfWorld {
    volumes: BTreeMap<UniqueVolumeName, AttachedVolume>,
}

/// `DeviceMountState`: whether MountDevice has globally mounted the volume on the node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceMountState {
    NotMounted,
    GloballyMounted,
}

#[derive(Debug, Clone)]
pub struct AttachedVolume {
    pub volume_name: UniqueVolumeName,
    pub spec: CsiVolume,
    pub device_mount_state: DeviceMountState,
    mounted_pods: BTreeSet<UniquePodName>,
}

impl AttachedVolume {
    /// `AttachedVolume.GenerateMsgDetailed`: `<prefix> for volume "<pv>" (UniqueName: "<name>")
    /// on node "<node>" <suffix>`.
    pub fn msg_detailed(&self, prefix: &str, node: &str, suffix: &str) -> String {
        super::device_msg_detailed(&self.spec, prefix, node, suffix)
    }
}

/// One pod's mount of a volume (upstream's `MountedVolume`).
#[derive(Debug, Clone)]
pub struct MountedVolume {
    pub volume_name: UniqueVolumeName,
    pub spec: CsiVolume,
    pub pod_name: UniquePodName,
}

impl MountedVolume {
    /// `MountedVolume.GenerateMsgDetailed`: the volume is named by its unique name, the pod by
    /// its UID (the unmount side has no pod object).
    pub fn msg_detailed(&self, prefix: &str, suffix: &str) -> String {
        format!(
            "{} for volume \"{}\" (UniqueName: \"{}\") pod \"{}\" (UID: \"{}\") {}",
            prefix, self.volume_name, self.volume_name, self.pod_name, self.pod_name, suffix
        )
    }
}

impl ActualStateOfWorld {
    /// `MarkVolumeAsAttached`: VerifyControllerAttachedVolume found the controller's attach.
    pub fn mark_volume_as_attached(&mut self, spec: &CsiVolume) {
        let volume_name = spec.unique_name();
        self.volumes
            .entry(volume_name.clone())
            .or_insert_with(|| AttachedVolume {
                volume_name,
                spec: spec.clone(),
                device_mount_state: DeviceMountState::NotMounted,
                mounted_pods: BTreeSet::new(),
            });
    }

    /// `MarkVolumeAsDetached`: the kubelet no longer counts the volume attached.
    pub fn mark_volume_as_detached(&mut self, volume_name: &UniqueVolumeName) {
        self.volumes.remove(volume_name);
    }

    /// `MarkDeviceAsMounted`.
    pub fn mark_device_as_mounted(&mut self, volume_name: &UniqueVolumeName) {
        if let Some(v) = self.volumes.get_mut(volume_name) {
            v.device_mount_state = DeviceMountState::GloballyMounted;
        }
    }

    /// `MarkDeviceAsUnmounted`.
    pub fn mark_device_as_unmounted(&mut self, volume_name: &UniqueVolumeName) {
        if let Some(v) = self.volumes.get_mut(volume_name) {
            v.device_mount_state = DeviceMountState::NotMounted;
        }
    }

    /// `MarkVolumeAsMounted`: SetUp mounted the volume into the pod.
    pub fn mark_volume_as_mounted(
        &mut self,
        pod_name: &UniquePodName,
        volume_name: &UniqueVolumeName,
    ) {
        if let Some(v) = self.volumes.get_mut(volume_name) {
            v.mounted_pods.insert(pod_name.clone());
        }
    }

    /// `MarkVolumeAsUnmounted`: TearDown unmounted it from the pod.
    pub fn mark_volume_as_unmounted(
        &mut self,
        pod_name: &UniquePodName,
        volume_name: &UniqueVolumeName,
    ) {
        if let Some(v) = self.volumes.get_mut(volume_name) {
            v.mounted_pods.remove(pod_name);
        }
    }

    /// `VolumeExists`: the kubelet knows the volume attached.
    pub fn volume_exists(&self, volume_name: &UniqueVolumeName) -> bool {
        self.volumes.contains_key(volume_name)
    }

    pub fn is_device_mounted(&self, volume_name: &UniqueVolumeName) -> bool {
        self.volumes
            .get(volume_name)
            .map(|v| v.device_mount_state == DeviceMountState::GloballyMounted)
            .unwrap_or(false)
    }

    /// `PodExistsInVolume`: the volume is mounted into the pod.
    pub fn pod_exists_in_volume(
        &self,
        pod_name: &UniquePodName,
        volume_name: &UniqueVolumeName,
    ) -> bool {
        self.volumes
            .get(volume_name)
            .map(|v| v.mounted_pods.contains(pod_name))
            .unwrap_or(false)
    }

    /// Does any volume remain mounted into the pod (what `WaitForUnmount` waits on)?
    pub fn pod_has_mounted_volumes(&self, pod_name: &UniquePodName) -> bool {
        self.volumes
            .values()
            .any(|v| v.mounted_pods.contains(pod_name))
    }

    /// `GetAllMountedVolumes`: every pod mount.
    pub fn mounted_volumes(&self) -> Vec<MountedVolume> {
        self.volumes
            .values()
            .flat_map(|v| {
                v.mounted_pods.iter().map(move |pod_name| MountedVolume {
                    volume_name: v.volume_name.clone(),
                    spec: v.spec.clone(),
                    pod_name: pod_name.clone(),
                })
            })
            .collect()
    }

    /// `GetUnmountedVolumes`: attached volumes no pod has mounted.
    pub fn unmounted_volumes(&self) -> Vec<AttachedVolume> {
        self.volumes
            .values()
            .filter(|v| v.mounted_pods.is_empty())
            .cloned()
            .collect()
    }

    /// Globally mounted volumes (their unique names), which the node reports in use.
    pub fn globally_mounted(&self) -> impl Iterator<Item = &UniqueVolumeName> {
        self.volumes
            .values()
            .filter(|v| v.device_mount_state == DeviceMountState::GloballyMounted)
            .map(|v| &v.volume_name)
    }

    /// A restarted kubelet reconstructs its state from the mounts it finds on disk: globally
    /// mounted volumes (attached, as far as it knows) and their pod mounts; an attach it had
    /// verified without mounting anything is verified again.
    pub fn reconstruct(&mut self) {
        self.volumes
            .retain(|_, v| v.device_mount_state == DeviceMountState::GloballyMounted);
    }

    /// A reboot leaves nothing mounted.
    pub fn clear(&mut self) {
        self.volumes.clear();
    }

    /// The mounts as `mount` prints them: each device mount and each pod mount.
    pub fn mount_lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        for v in self.volumes.values() {
            let line = |path: String| {
                format!(
                    "/dev/longhorn/{} on {} type ext4 (rw,relatime)",
                    v.spec.pv, path
                )
            };
            if v.device_mount_state == DeviceMountState::GloballyMounted {
                out.push(line(global_mount_path(&v.spec.handle)));
            }
            for pod in &v.mounted_pods {
                out.push(line(pod_mount_path(pod.as_str(), &v.spec.pv)));
            }
        }
        out.sort();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attach_device_and_pod_mounts_are_separate_states() {
        let mut asw = ActualStateOfWorld::default();
        let spec = CsiVolume {
            pv: "pvc-1".into(),
            handle: "pvc-1".into(),
            nfs: false,
        };
        let v = spec.unique_name();
        let pod = UniquePodName::new("u1");
        assert!(!asw.volume_exists(&v));
        asw.mark_volume_as_attached(&spec);
        asw.mark_volume_as_mounted(&pod, &v);
        assert!(asw.volume_exists(&v) && !asw.is_device_mounted(&v));
        asw.mark_device_as_mounted(&v);
        assert!(asw.pod_exists_in_volume(&pod, &v) && asw.pod_has_mounted_volumes(&pod));
        assert!(asw.unmounted_volumes().is_empty());
        assert_eq!(asw.mount_lines().len(), 2);
        asw.mark_volume_as_unmounted(&pod, &v);
        assert_eq!(asw.unmounted_volumes().len(), 1);
        assert_eq!(asw.globally_mounted().count(), 1);
        // A restart keeps the globally mounted volume; a verified attach alone is forgotten.
        let other = CsiVolume {
            pv: "pvc-2".into(),
            handle: "pvc-2".into(),
            nfs: false,
        };
        asw.mark_volume_as_attached(&other);
        asw.reconstruct();
        assert!(asw.volume_exists(&v) && !asw.volume_exists(&other.unique_name()));
        asw.mark_device_as_unmounted(&v);
        asw.mark_volume_as_detached(&v);
        assert!(!asw.volume_exists(&v) && asw.mount_lines().is_empty());
    }
}
