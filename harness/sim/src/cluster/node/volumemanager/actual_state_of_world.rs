//! The actual state of world (volumemanager/cache/actual_state_of_world.go): the volumes the
//! kubelet knows attached to its node (it verified the controller's attach), whether each is
//! globally mounted (MountDevice), and which pods have it mounted (SetUp). Only operations write
//! it; the reconciler reads it against the desired state.

use super::super::volumes::{global_mount_path, pod_mount_path};
use super::{CsiVolume, UniquePodName, UniqueVolumeName};
use std::collections::BTreeMap;

#[derive(Debug, Default)]
pub struct ActualStateOfWorld {
    volumes: BTreeMap<UniqueVolumeName, AttachedVolume>,
}

/// `DeviceMountState`: whether MountDevice has globally mounted the volume on the node.
/// `Uncertain` is what a restarted kubelet's reconstruction finds on disk: mounted, but not by
/// an operation of this process, so the next MountVolume stages it again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceMountState {
    NotMounted,
    GloballyMounted,
    Uncertain,
}

/// `VolumeMountState` of one pod's mount (operationexecutor's `VolumeMounted` and
/// `VolumeMountUncertain`): a reconstructed pod mount is uncertain until SetUp runs again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VolumeMountState {
    Mounted,
    Uncertain,
}

/// What reconstruction put into the actual state of world, for its log lines.
#[derive(Debug, Clone)]
pub struct Reconstructed {
    pub volume_name: UniqueVolumeName,
    pub handle: String,
    pub pods: Vec<UniquePodName>,
}

#[derive(Debug, Clone)]
pub struct AttachedVolume {
    pub volume_name: UniqueVolumeName,
    pub spec: CsiVolume,
    pub device_mount_state: DeviceMountState,
    mounted_pods: BTreeMap<UniquePodName, VolumeMountState>,
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
                mounted_pods: BTreeMap::new(),
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
            v.mounted_pods
                .insert(pod_name.clone(), VolumeMountState::Mounted);
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

    /// `GetDeviceMountState == DeviceGloballyMounted`: an uncertain device is staged again.
    pub fn is_device_mounted(&self, volume_name: &UniqueVolumeName) -> bool {
        self.volumes
            .get(volume_name)
            .map(|v| v.device_mount_state == DeviceMountState::GloballyMounted)
            .unwrap_or(false)
    }

    /// `DeviceMayBeMounted`: globally mounted or uncertain, so UnmountDevice has work to do.
    pub fn device_may_be_mounted(&self, volume_name: &UniqueVolumeName) -> bool {
        self.volumes
            .get(volume_name)
            .is_some_and(|v| v.device_mount_state != DeviceMountState::NotMounted)
    }

    /// `PodExistsInVolume`: the volume is mounted into the pod; an uncertain mount is not
    /// (actual_state_of_world.go returns false for it, so the reconciler mounts it again).
    pub fn pod_exists_in_volume(
        &self,
        pod_name: &UniquePodName,
        volume_name: &UniqueVolumeName,
    ) -> bool {
        self.volumes
            .get(volume_name)
            .and_then(|v| v.mounted_pods.get(pod_name))
            == Some(&VolumeMountState::Mounted)
    }

    /// Does any volume remain mounted into the pod (what `WaitForUnmount` waits on)?
    pub fn pod_has_mounted_volumes(&self, pod_name: &UniquePodName) -> bool {
        self.volumes
            .values()
            .any(|v| v.mounted_pods.contains_key(pod_name))
    }

    /// `GetAllMountedVolumes`: every pod mount, uncertain ones included.
    pub fn mounted_volumes(&self) -> Vec<MountedVolume> {
        self.volumes
            .values()
            .flat_map(|v| {
                v.mounted_pods.keys().map(move |pod_name| MountedVolume {
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

    /// Volumes whose device may be mounted (their unique names), which the node reports in use.
    pub fn globally_mounted(&self) -> impl Iterator<Item = &UniqueVolumeName> {
        self.volumes
            .values()
            .filter(|v| v.device_mount_state != DeviceMountState::NotMounted)
            .map(|v| &v.volume_name)
    }

    /// A restarted kubelet reconstructs its state from the mounts it finds on disk: globally
    /// mounted volumes (attached, as far as it knows) and their pod mounts; an attach it had
    /// verified without mounting anything is verified again.
    /// Both come back uncertain (reconstruct.go `updateStates`: `MarkDeviceAsUncertain`,
    /// `CheckAndMarkVolumeAsUncertainViaReconstruction`).
    pub fn reconstruct(&mut self) -> Vec<Reconstructed> {
        self.volumes
            .retain(|_, v| v.device_mount_state != DeviceMountState::NotMounted);
        self.volumes
            .values_mut()
            .map(|v| {
                v.device_mount_state = DeviceMountState::Uncertain;
                for state in v.mounted_pods.values_mut() {
                    *state = VolumeMountState::Uncertain;
                }
                Reconstructed {
                    volume_name: v.volume_name.clone(),
                    handle: v.spec.handle.clone(),
                    pods: v.mounted_pods.keys().cloned().collect(),
                }
            })
            .collect()
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
            if v.device_mount_state != DeviceMountState::NotMounted {
                out.push(line(global_mount_path(&v.spec.handle)));
            }
            for pod in v.mounted_pods.keys() {
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
        asw.mark_volume_as_mounted(&pod, &v);
        let found = asw.reconstruct();
        assert!(asw.volume_exists(&v) && !asw.volume_exists(&other.unique_name()));
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].pods, vec![pod.clone()]);
        // Reconstructed mounts are uncertain: mounted on disk, mounted again by the reconciler.
        assert!(!asw.is_device_mounted(&v) && asw.device_may_be_mounted(&v));
        assert!(!asw.pod_exists_in_volume(&pod, &v) && asw.pod_has_mounted_volumes(&pod));
        assert_eq!(asw.mount_lines().len(), 2);
        assert_eq!(asw.mounted_volumes().len(), 1);
        asw.mark_volume_as_unmounted(&pod, &v);
        asw.mark_device_as_unmounted(&v);
        asw.mark_volume_as_detached(&v);
        assert!(!asw.volume_exists(&v) && asw.mount_lines().is_empty());
    }
}
