//! The operations themselves (pkg/volume/util/operationexecutor/operation_generator.go), with
//! the 1.35 texts and their file:line (v1.35.4): VerifyControllerAttachedVolume, MountVolume
//! (WaitForAttach, then MountDevice when the volume is not globally mounted yet, then SetUp),
//! UnmountVolume (TearDown) and UnmountDevice. Each ends its `Operation` and records what it did
//! in the actual state of world.
//!
//! A stale device mount holds back only its own volume (upstream, and a real 1.35 kubelet:
//! docs/kind.md). With the option `otherVolumes: pluginHangs` the node plugin's calls hang behind
//! the stuck device instead, so any MountDevice on that node ends at the kubelet's CSI deadline
//! (2 min) in "context deadline exceeded".

use super::super::state::{OtherVolumes, StaleMount};
use super::super::volumes::{
    attachment_name, global_mount_path, orphan_pod_uid, pod_mount_path, HungCall, OperationKey,
};
use super::actual_state_of_world::{ActualStateOfWorld, AttachedVolume, MountedVolume};
use super::desired_state_of_world::VolumeToMount;
use super::operation_executor::{CsiCallError, Operation, OperationContext};
use super::{device_msg_detailed, CsiVolume};
use crate::apiserver::meta;
use crate::timing::SimInstant;
use serde_json::json;

/// What a node call the kubelet gives up on ends with (its CSI deadline, `csiTimeout`).
const DEADLINE_EXCEEDED: &str =
    "rpc error: code = DeadlineExceeded desc = context deadline exceeded";

/// Does the controller's VolumeAttachment for `pv` on this node say attached? (The attacher's
/// `WaitForAttach` and the node status check both come down to it here.)
fn attached(ctx: &OperationContext<'_>, pv: &str) -> bool {
    ctx.client
        .list("storage.k8s.io", "volumeattachments", None, &|va| {
            meta::str_at(va, "/spec/nodeName") == Some(ctx.node_name)
                && meta::str_at(va, "/spec/source/persistentVolumeName") == Some(pv)
        })
        .iter()
        .any(|va| va.pointer("/status/attached") == Some(&json!(true)))
}

/// `VerifyControllerAttachedVolume`: the kubelet does not attach CSI volumes; it waits until the
/// attach/detach controller's attach shows, then counts the volume attached.
pub fn verify_controller_attached_volume(
    op: Operation<'_>,
    v: &VolumeToMount,
    asw: &mut ActualStateOfWorld,
    ctx: &OperationContext<'_>,
) {
    if !attached(ctx, &v.spec.pv) {
        op.failed(
            ctx,
            &v.msg_detailed("Volume not attached according to node status", ""),
            None,
        );
        return;
    }
    // The operation succeeds: its entry goes, with whatever backoff it had.
    op.succeeded();
    asw.mark_volume_as_attached(&v.spec);
    ctx.log.info(
        "operation_generator.go:1463",
        &v.info_s(&v.msg_detailed("Controller attach succeeded", "device path: \"\"")),
    );
}

/// `MountVolume`: WaitForAttach (the CSI attacher reads the VolumeAttachment, no call to the
/// plugin; the device path it returns is the attachment's name), MountDevice unless the volume
/// is globally mounted already, SetUp.
pub fn mount_volume(
    op: Operation<'_>,
    v: &VolumeToMount,
    asw: &mut ActualStateOfWorld,
    ctx: &OperationContext<'_>,
    now: SimInstant,
) {
    let (pv, handle) = (&v.spec.pv, &v.spec.handle);
    ctx.log.info(
        "operation_generator.go:515",
        &v.info_s(&v.msg_detailed("MountVolume.WaitForAttach entering", "DevicePath \"\"")),
    );
    let device_path = attachment_name(handle, ctx.node_name);
    if !attached(ctx, pv) {
        let e = format!(
            "volume {} is not attached for volume attachment {}",
            handle, device_path
        );
        op.failed(
            ctx,
            &v.msg_detailed("MountVolume.WaitForAttach failed", &format!(": {}", e)),
            Some((
                &v.pod,
                v.msg_simple("MountVolume.WaitForAttach failed", &format!(": {}", e)),
            )),
        );
        return;
    }
    ctx.log.info(
        "operation_generator.go:525",
        &v.info_s(&v.msg_detailed(
            "MountVolume.WaitForAttach succeeded",
            &format!("DevicePath \"{}\"", device_path),
        )),
    );
    let device_mounted = asw.is_device_mounted(&v.volume_name);
    let (stage, err) = if device_mounted {
        (
            "MountVolume.SetUp",
            ctx.driver
                .call_error("mounter.SetUpAt failed to get CSI client")
                .map(|e| e.to_string()),
        )
    } else {
        let e = ctx
            .driver
            .call_error("attacher.MountDevice failed to create newCsiDriverClient");
        (
            "MountVolume.MountDevice",
            match e {
                None if ctx.faults.io_errors => Some(
                    "rpc error: code = Internal desc = mount failed: exit status 32: input/output error"
                        .to_string(),
                ),
                e => e.map(|e| e.to_string()),
            },
        )
    };
    if let Some(e) = err {
        let failed = format!("{} failed", stage);
        op.failed(
            ctx,
            &v.msg_detailed(&failed, &format!(": {}", e)),
            Some((&v.pod, v.msg_simple(&failed, &format!(": {}", e)))),
        );
        return;
    }
    // A volume mounted over NFS whose server does not answer: mount.nfs (NodeStageVolume) or
    // the bind mount over it (NodePublishVolume) waits in the kernel.
    let nfs_hangs = ctx.faults.hung_nfs && v.spec.nfs;
    let plugin_hangs = ctx
        .faults
        .stale_mounts
        .iter()
        .any(|m| m.other_volumes == OtherVolumes::PluginHangs);
    let hanging_stage = if !device_mounted && (nfs_hangs || plugin_hangs) {
        Some("MountVolume.MountDevice failed")
    } else if nfs_hangs {
        Some("MountVolume.SetUp failed")
    } else {
        None
    };
    if let Some(stage) = hanging_stage {
        // The call does not return; the kubelet's call gives up at its deadline.
        op.hangs(
            now + ctx.timing.s(ctx.timing.csi_call_timeout),
            HungCall::Mount {
                stage,
                error: DEADLINE_EXCEEDED.into(),
            },
        );
        return;
    }
    if !device_mounted {
        asw.mark_device_as_mounted(&v.volume_name);
        ctx.log.info(
            "operation_generator.go:557",
            &v.info_s(&v.msg_detailed(
                "MountVolume.MountDevice succeeded",
                &format!("device mount path \"{}\"", global_mount_path(handle)),
            )),
        );
    }
    op.succeeded();
    asw.mark_volume_as_mounted(&v.pod_name, &v.volume_name);
    // V(1) (V(4) for a remount): the kubelet runs at --v=2.
    ctx.log.v(
        1,
        "operation_generator.go:614",
        &v.info_s(&v.msg_detailed("MountVolume.SetUp succeeded", "")),
    );
}

/// A mount stage whose hanging call returned (`stage`: `MountVolume.MountDevice failed` or
/// `MountVolume.SetUp failed`): it fails with the call's error, on the volume's first waiting
/// pod if there still is one.
pub fn mount_returned(
    op: Operation<'_>,
    waiting: Option<&VolumeToMount>,
    stage: &str,
    error: &str,
    ctx: &OperationContext<'_>,
) {
    match waiting {
        None => op.failed(ctx, error, None),
        Some(v) => {
            let suffix = format!(": {}", error);
            op.failed(
                ctx,
                &v.msg_detailed(stage, &suffix),
                Some((&v.pod, v.msg_simple(stage, &suffix))),
            );
        }
    }
}

/// `UnmountVolume`: TearDown of a pod's mount.
pub fn unmount_volume(
    op: Operation<'_>,
    v: &MountedVolume,
    asw: &mut ActualStateOfWorld,
    ctx: &OperationContext<'_>,
    now: SimInstant,
) {
    let err = match ctx
        .driver
        .call_error("Unmounter.TearDownAt failed to get CSI client")
    {
        Some(CsiCallError::Unavailable) => Some(format!(
            "kubernetes.io/csi: Unmounter.TearDownAt failed: {}",
            CsiCallError::Unavailable
        )),
        Some(e) => Some(e.to_string()),
        None if ctx.faults.io_errors => Some("unmount failed: input/output error".to_string()),
        None => None,
    };
    if let Some(e) = err {
        op.failed(
            ctx,
            &v.msg_detailed("UnmountVolume.TearDown failed", &format!(": {}", e)),
            None,
        );
        return;
    }
    if ctx.faults.hung_nfs && v.spec.nfs {
        // NodeUnpublishVolume's umount waits on the NFS server (`csi_mounter.go` TearDownAt).
        let e = format!(
            ": kubernetes.io/csi: Unmounter.TearDownAt failed: {}",
            DEADLINE_EXCEEDED
        );
        op.hangs(
            now + ctx.timing.s(ctx.timing.csi_call_timeout),
            HungCall::Unmount {
                detailed: v.msg_detailed("UnmountVolume.TearDown failed", &e),
            },
        );
        return;
    }
    op.succeeded();
    asw.mark_volume_as_unmounted(&v.pod_name, &v.volume_name);
    // klog.Infof: a plain message, no OuterVolumeSpecName in 1.35.
    ctx.log.info("operation_generator.go:779", &format!("UnmountVolume.TearDown succeeded for volume \"{}\" pod \"{}\" (UID: \"{}\"). InnerVolumeSpecName \"{}\". PluginName \"kubernetes.io/csi\", VolumeGIDValue \"\"", v.volume_name, v.pod_name, v.pod_name, v.spec.pv));
}

/// `UnmountDevice` of a volume no pod uses any more; the kubelet then no longer counts it
/// attached (the controller may detach it).
pub fn unmount_device(
    op: Operation<'_>,
    v: &AttachedVolume,
    asw: &mut ActualStateOfWorld,
    ctx: &OperationContext<'_>,
    now: SimInstant,
) {
    let err = match ctx
        .driver
        .call_error("attacher.UnmountDevice failed to create newCsiDriverClient")
    {
        Some(CsiCallError::Unavailable) => Some(format!(
            "kubernetes.io/csi: attacher.UnmountDevice failed: {}",
            CsiCallError::Unavailable
        )),
        e => e.map(|e| e.to_string()),
    };
    if let Some(e) = err {
        op.failed(
            ctx,
            &v.msg_detailed("UnmountDevice failed", ctx.node_name, &format!(": {}", e)),
            None,
        );
        return;
    }
    if ctx.faults.hung_nfs && v.spec.nfs {
        // NodeUnstageVolume's umount of the NFS mount waits (`csi_attacher.go` UnmountDevice).
        let e = format!(
            ": kubernetes.io/csi: attacher.UnmountDevice failed: {}",
            DEADLINE_EXCEEDED
        );
        op.hangs(
            now + ctx.timing.s(ctx.timing.csi_call_timeout),
            HungCall::Unmount {
                detailed: v.msg_detailed("UnmountDevice failed", ctx.node_name, &e),
            },
        );
        return;
    }
    op.succeeded();
    asw.mark_device_as_unmounted(&v.volume_name);
    asw.mark_volume_as_detached(&v.volume_name);
    // klog.Info: a plain message.
    ctx.log.info(
        "operation_generator.go:892",
        &v.msg_detailed("UnmountDevice succeeded", ctx.node_name, ""),
    );
}

/// `UnmountDevice` of a stale device mount: GetDeviceMountRefs finds the leftover pod mount that
/// still references the device, so it fails every time and backs off.
pub fn unmount_leftover_device(op: Operation<'_>, m: &StaleMount, ctx: &OperationContext<'_>) {
    let spec = CsiVolume {
        pv: m.pv.clone(),
        handle: m.pv.clone(),
        nfs: false,
    };
    let err = format!(
        "{} : the device mount path \"{}\" is still mounted by other references [{}]",
        device_msg_detailed(&spec, "GetDeviceMountRefs check failed", ctx.node_name, "").trim_end(),
        global_mount_path(&m.pv),
        pod_mount_path(&orphan_pod_uid(&m.pv), &m.pv)
    );
    op.failed(ctx, &err, None);
}

/// The key a device-level operation runs under: the volume, with an empty pod name (CSI volumes
/// are attachable, so mounts are serialized per volume).
pub fn device_key(spec: &CsiVolume) -> OperationKey {
    OperationKey::device(spec.unique_name().as_str())
}
