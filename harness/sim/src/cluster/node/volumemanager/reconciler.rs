//! The reconciler (volumemanager/reconciler/reconciler.go, reconciler_common.go): one pass
//! compares the desired state of world with the actual one and starts, through the operation
//! executor, what closes the gap, in upstream's order: `unmountVolumes` (TearDown of pod mounts
//! no pod wants), `mountOrAttachVolumes` (VerifyControllerAttachedVolume until the attach shows,
//! then MountVolume) and `unmountDetachDevices` (UnmountDevice of globally mounted volumes no pod
//! uses). Each started operation logs its `operationExecutor.<Op> started` line; one the executor
//! holds back logs nothing.
//!
//! Stale device mounts (a node fault) are globally mounted volumes the kubelet cannot unmount:
//! their UnmountDevice runs in `unmountDetachDevices` like any other and fails, and by default
//! (upstream: operations keyed per volume) nothing else waits for it. With the RCA's
//! `otherVolumes: queueBlocked` option nothing else starts at all. A hung NFS server blocks only the operations
//! of the volumes mounted over NFS (their calls hang, per volume, in the operation generator).

use super::super::state::OtherVolumes;
use super::super::volumes::{HungCall, Op, OperationKey};
use super::actual_state_of_world::ActualStateOfWorld;
use super::desired_state_of_world::DesiredStateOfWorld;
use super::operation_executor::{OperationContext, OperationExecutor};
use super::operation_generator::{self as generator, device_key};
use super::{CsiVolume, UniqueVolumeName};
use crate::timing::SimInstant;

/// One reconciler pass.
pub fn reconcile(
    dsw: &DesiredStateOfWorld,
    asw: &mut ActualStateOfWorld,
    executor: &mut OperationExecutor,
    ctx: &OperationContext<'_>,
) {
    let now = ctx.timing.clock.instant();
    // Hanging calls that have returned now fail.
    for (key, op, failure) in executor.returned(now) {
        match failure {
            HungCall::Mount { stage, error } => {
                let waiting = dsw.first_volume_to_mount(&UniqueVolumeName::of_key(&key));
                generator::mount_returned(
                    executor.resume(key, op, now),
                    waiting.as_ref(),
                    stage,
                    &error,
                    ctx,
                );
            }
            HungCall::Unmount { detailed } => {
                executor.resume(key, op, now).failed(ctx, &detailed, None)
            }
        }
    }
    // The RCA's node-wide block (an option of staleDeviceMount; upstream has no such lock).
    let blocked = ctx
        .faults
        .stale_mounts
        .iter()
        .any(|m| m.other_volumes == OtherVolumes::QueueBlocked);
    if !blocked {
        unmount_volumes(dsw, asw, executor, ctx, now);
        mount_or_attach_volumes(dsw, asw, executor, ctx, now);
    }
    unmount_detach_devices(dsw, asw, executor, ctx, now, blocked);
}

/// A klog.InfoS line whose message is `msg` (quotes escaped).
fn quoted(msg: &str) -> String {
    format!("\"{}\"", msg.replace('"', "\\\""))
}

/// TearDown of every pod mount the desired state no longer has; keyed per pod.
fn unmount_volumes(
    dsw: &DesiredStateOfWorld,
    asw: &mut ActualStateOfWorld,
    executor: &mut OperationExecutor,
    ctx: &OperationContext<'_>,
    now: SimInstant,
) {
    for v in asw.mounted_volumes() {
        if dsw.pod_exists_in_volume(&v.pod_name, &v.volume_name) {
            continue;
        }
        let key = OperationKey::pod(v.volume_name.as_str(), v.pod_name.as_str());
        let Some(op) = executor.start(key, Op::UnmountVolume, now) else {
            continue;
        };
        ctx.log.info(
            "reconciler_common.go:163",
            &quoted(&v.msg_detailed("operationExecutor.UnmountVolume started", "")),
        );
        generator::unmount_volume(op, &v, asw, ctx, now);
    }
}

/// For each wanted pod mount not there yet: VerifyControllerAttachedVolume while the kubelet
/// does not count the volume attached, else MountVolume. Both keyed with an empty pod name: one
/// operation per volume at a time.
fn mount_or_attach_volumes(
    dsw: &DesiredStateOfWorld,
    asw: &mut ActualStateOfWorld,
    executor: &mut OperationExecutor,
    ctx: &OperationContext<'_>,
    now: SimInstant,
) {
    for v in dsw.volumes_to_mount() {
        if asw.pod_exists_in_volume(&v.pod_name, &v.volume_name) {
            continue;
        }
        if !asw.volume_exists(&v.volume_name) {
            let Some(op) =
                executor.start(device_key(&v.spec), Op::VerifyControllerAttachedVolume, now)
            else {
                continue;
            };
            ctx.log.info(
                "reconciler_common.go:251",
                &v.info_s(&v.msg_detailed(
                    "operationExecutor.VerifyControllerAttachedVolume started",
                    "",
                )),
            );
            generator::verify_controller_attached_volume(op, &v, asw, ctx);
            continue;
        }
        let Some(op) = executor.start(device_key(&v.spec), Op::MountVolume, now) else {
            continue;
        };
        ctx.log.v(
            1,
            "reconciler_common.go:225",
            &v.info_s(&v.msg_detailed("operationExecutor.MountVolume started", "")),
        );
        generator::mount_volume(op, &v, asw, ctx, now);
    }
}

/// UnmountDevice of the stale device mounts, and (unless blocked) of globally mounted volumes no
/// pod has mounted or wants.
fn unmount_detach_devices(
    dsw: &DesiredStateOfWorld,
    asw: &mut ActualStateOfWorld,
    executor: &mut OperationExecutor,
    ctx: &OperationContext<'_>,
    now: SimInstant,
    blocked: bool,
) {
    for m in &ctx.faults.stale_mounts {
        let spec = CsiVolume {
            pv: m.pv.clone(),
            handle: m.pv.clone(),
            nfs: false,
        };
        let Some(op) = executor.start(device_key(&spec), Op::UnmountDevice, now) else {
            continue;
        };
        ctx.log.info(
            "reconciler_common.go:292",
            &quoted(&super::device_msg_detailed(
                &spec,
                "operationExecutor.UnmountDevice started",
                ctx.node_name,
                "",
            )),
        );
        generator::unmount_leftover_device(op, m, ctx);
    }
    if blocked {
        return;
    }
    for v in asw.unmounted_volumes() {
        if dsw.volume_exists(&v.volume_name) || !asw.device_may_be_mounted(&v.volume_name) {
            continue;
        }
        let Some(op) = executor.start(device_key(&v.spec), Op::UnmountDevice, now) else {
            continue;
        };
        ctx.log.info(
            "reconciler_common.go:292",
            &quoted(&v.msg_detailed("operationExecutor.UnmountDevice started", ctx.node_name, "")),
        );
        generator::unmount_device(op, &v, asw, ctx, now);
    }
}
