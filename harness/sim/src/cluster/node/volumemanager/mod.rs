//! The kubelet's volume manager (pkg/kubelet/volumemanager): the desired state of world (which
//! pods want which volumes), kept by its populator from the pods the node runs; the actual state
//! of world (attached, globally mounted and pod-mounted volumes); the reconciler that starts
//! operations through the operation executor to bring the second to the first; and what the
//! rest of the kubelet asks of it (`WaitForAttachAndMount`, `WaitForUnmount`, `GetVolumesInUse`).
//! Populator and reconciler each run every 100 ms upstream; here one `sync` runs both in turn.

pub mod actual_state_of_world;
pub mod desired_state_of_world;
pub mod operation_executor;
pub mod operation_generator;
pub mod populator;
pub mod reconciler;

use super::log::KubeletLog;
use super::state::ResetKind;
use super::volumes::{unique_name, OperationKey};
use actual_state_of_world::ActualStateOfWorld;
use desired_state_of_world::DesiredStateOfWorld;
use operation_executor::{OperationContext, OperationExecutor};
use populator::{DesiredStateOfWorldPopulator, PodInfo};
use serde_json::Value;
use std::fmt;

use crate::timing::Timing;

/// A volume's name in the kubelet (`v1.UniqueVolumeName`):
/// `kubernetes.io/csi/driver.longhorn.io^<volume handle>`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct UniqueVolumeName(String);

impl UniqueVolumeName {
    pub fn of_csi(handle: &str) -> Self {
        UniqueVolumeName(unique_name(handle))
    }

    /// The volume an operation key names.
    pub fn of_key(key: &OperationKey) -> Self {
        UniqueVolumeName(key.volume.clone())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for UniqueVolumeName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A pod in the volume manager (`volumetypes.UniquePodName`): its UID.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct UniquePodName(String);

impl UniquePodName {
    pub fn new(uid: &str) -> Self {
        UniquePodName(uid.to_string())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Sets of pod names are looked up by a UID without allocating.
impl std::borrow::Borrow<str> for UniquePodName {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for UniquePodName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A CSI persistent volume as the kubelet's volume spec has it: the PV's name (the inner volume
/// spec name messages print), the driver's volume handle, and whether the node mounts it over
/// NFS: Longhorn serves a ReadWriteMany volume through its share-manager's NFSv4 export, which
/// the node plugin mounts at NodeStageVolume (so `hungNfs` reaches it).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CsiVolume {
    pub pv: String,
    pub handle: String,
    pub nfs: bool,
}

impl CsiVolume {
    pub fn unique_name(&self) -> UniqueVolumeName {
        UniqueVolumeName::of_csi(&self.handle)
    }
}

/// `AttachedVolume.GenerateMsgDetailed` for a volume: `<prefix> for volume "<pv>" (UniqueName:
/// "<name>") on node "<node>" <suffix>`.
pub fn device_msg_detailed(spec: &CsiVolume, prefix: &str, node: &str, suffix: &str) -> String {
    format!(
        "{} for volume \"{}\" (UniqueName: \"{}\") on node \"{}\" {}",
        prefix,
        spec.pv,
        spec.unique_name(),
        node,
        suffix
    )
}

/// A volume of a pod's spec: its name there and the claim it names, if any.
struct SpecVolume<'a> {
    name: &'a str,
    claim: Option<&'a str>,
}

fn spec_volumes(pod: &Value) -> Vec<SpecVolume<'_>> {
    pod.pointer("/spec/volumes")
        .and_then(Value::as_array)
        .map(|vs| {
            vs.iter()
                .map(|v| SpecVolume {
                    name: v.get("name").and_then(Value::as_str).unwrap_or(""),
                    claim: v
                        .pointer("/persistentVolumeClaim/claimName")
                        .and_then(Value::as_str),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Why `WaitForAttachAndMount` is still waiting: the pod's volumes (spec names, sorted) not
/// mounted yet, and those of them not attached yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VolumesNotReady {
    pub unmounted: Vec<String>,
    pub unattached: Vec<String>,
}

#[derive(Debug)]
pub struct VolumeManager {
    dsw: DesiredStateOfWorld,
    asw: ActualStateOfWorld,
    populator: DesiredStateOfWorldPopulator,
    executor: OperationExecutor,
    /// Reconstructed volumes whose device paths the first pass reads from the node's status
    /// (reconstruct.go `volumesNeedUpdateFromNodeStatus`).
    need_update_from_node_status: bool,
}

impl VolumeManager {
    pub fn new(timing: Timing) -> Self {
        VolumeManager {
            dsw: DesiredStateOfWorld::default(),
            asw: ActualStateOfWorld::default(),
            populator: DesiredStateOfWorldPopulator::default(),
            executor: OperationExecutor::new(timing),
            need_update_from_node_status: false,
        }
    }

    /// One populator pass over the node's pods, then one reconciler pass.
    pub fn sync(&mut self, pods: &[PodInfo<'_>], ctx: &OperationContext<'_>) {
        self.populator.populate(&mut self.dsw, pods, ctx.client);
        reconciler::reconcile(&self.dsw, &mut self.asw, &mut self.executor, ctx);
        if std::mem::take(&mut self.need_update_from_node_status) {
            ctx.log.v(
                2,
                "reconstruct.go:205",
                "\"DevicePaths of reconstructed volumes updated\"",
            );
        }
    }

    /// `WaitForAttachAndMount`'s check: is every claim of the pod mounted into it? A claim not
    /// resolved to a volume yet counts unmounted and unattached; local volumes (emptyDir,
    /// configMap, ...) are set up at once. Unattached means the kubelet has not verified the
    /// attach (`getUnattachedVolumes` reads the actual state of world).
    pub fn wait_for_attach_and_mount(&self, uid: &str, pod: &Value) -> Result<(), VolumesNotReady> {
        let pod_name = UniquePodName::new(uid);
        let (mut unmounted, mut unattached) = (Vec::new(), Vec::new());
        for v in spec_volumes(pod) {
            if v.claim.is_none() {
                continue;
            }
            match self.dsw.pod_volume(&pod_name, v.name) {
                Some(volume) => {
                    if !self.asw.pod_exists_in_volume(&pod_name, volume) {
                        unmounted.push(v.name.to_string());
                        if !self.asw.volume_exists(volume) {
                            unattached.push(v.name.to_string());
                        }
                    }
                }
                None => {
                    unmounted.push(v.name.to_string());
                    unattached.push(v.name.to_string());
                }
            }
        }
        if unmounted.is_empty() {
            return Ok(());
        }
        unmounted.sort();
        unattached.sort();
        Err(VolumesNotReady {
            unmounted,
            unattached,
        })
    }

    /// `WaitForUnmount`'s check: no volume is mounted into the pod any more.
    /// Does the pod have a volume mounted over NFS (where `hungNfs` makes its processes hang)?
    pub fn pod_has_nfs_mount(&self, uid: &str) -> bool {
        let pod = UniquePodName::new(uid);
        self.asw
            .mounted_volumes()
            .iter()
            .any(|v| v.pod_name == pod && v.spec.nfs)
    }

    pub fn pod_volumes_unmounted(&self, uid: &str) -> bool {
        !self.asw.pod_has_mounted_volumes(&UniquePodName::new(uid))
    }

    /// `GetVolumesInUse`: every volume a pod wants (as soon as one does) plus every globally
    /// mounted one, sorted.
    pub fn volumes_in_use(&self) -> Vec<String> {
        let mut in_use: Vec<String> = self
            .asw
            .globally_mounted()
            .chain(self.dsw.volume_names())
            .map(|v| v.as_str().to_string())
            .collect();
        in_use.sort();
        in_use.dedup();
        in_use
    }

    /// The node's volume mounts as `mount` prints them.
    pub fn mount_lines(&self) -> Vec<String> {
        self.asw.mount_lines()
    }

    /// A kubelet that starts again has an empty operation executor (the populator fills the
    /// desired state again from the node's pods) and reconstructs what is mounted from disk (a
    /// reboot leaves nothing mounted): the volume manager's start lines (volume_manager.go
    /// `Run`), then the reconciler's reconstruction (reconstruct.go `reconstructVolumes`) before
    /// its first pass.
    pub fn restart(&mut self, kind: ResetKind, log: &KubeletLog) {
        self.executor.clear();
        Self::log_start(log);
        let found = match kind {
            ResetKind::KubeletRestart => self.asw.reconstruct(),
            ResetKind::Reboot => {
                self.asw.clear();
                Vec::new()
            }
        };
        for r in &found {
            // The reconstructed pod is a bare object with only its UID: klog.KObj prints "".
            for pod in &r.pods {
                log.v(2, "reconstruct.go:129", &format!(
                    "\"Volume is marked as uncertain and added into the actual state\" pod=\"\" podName=\"{pod}\" volumeName=\"{}\" seLinuxMountContext=\"\"",
                    r.volume_name
                ));
            }
            log.v(2, "reconstruct.go:143", &format!(
                "\"Volume is marked device as uncertain and added into the actual state\" volumeName=\"{}\" deviceMountPath=\"{}\"",
                r.volume_name,
                super::volumes::global_mount_path(&r.handle)
            ));
        }
        self.need_update_from_node_status = !found.is_empty();
        Self::log_reconciler_start(log);
    }

    /// The first start: nothing on disk to reconstruct.
    pub fn start(&self, log: &KubeletLog) {
        Self::log_start(log);
        Self::log_reconciler_start(log);
    }

    fn log_start(log: &KubeletLog) {
        log.v(
            2,
            "volume_manager.go:309",
            "\"The desired_state_of_world populator starts\"",
        );
        log.info(
            "volume_manager.go:311",
            "\"Starting Kubelet Volume Manager\"",
        );
    }

    /// `reconciler.Run`: the reconstruction ends, then the loop starts.
    fn log_reconciler_start(log: &KubeletLog) {
        log.v(2, "reconstruct.go:97", "\"Volume reconstruction finished\"");
        log.info("reconciler.go:29", "\"Reconciler: start to sync state\"");
    }
}
