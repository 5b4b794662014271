//! Node primitives: what faults inject and remediations do to a node from outside the API
//! (talosctl-like). Every primitive has an inverse, so a fault can always be healed.

use super::kubelet::script;
use super::state::{KubeletProcess, ResetKind, StaleMount};
use super::volumes::DRIVER;
use crate::apiserver::meta;
use crate::apiserver::status::{ApiError, ApiResult};
use crate::cluster::SimCluster;
use crate::internal::Internal;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// One operation on one node. Serialized as `{"op": "...", ...}` on the control endpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "camelCase")]
pub enum NodeOp {
    /// Leave a device mount of `pv` behind that UnmountDevice cannot clean up. `otherVolumes`
    /// says what that does to the node's other volumes: nothing by default (upstream), or one of
    /// the accounts a scenario may reproduce (`pluginHangs`, the RCA's `queueBlocked`).
    #[serde(rename_all = "camelCase")]
    StaleDeviceMount {
        pv: String,
        #[serde(default)]
        deleted_pv: bool,
        #[serde(default)]
        holder: Holder,
        #[serde(default)]
        other_volumes: OtherVolumes,
    },
    #[serde(rename_all = "camelCase")]
    ClearStaleDeviceMount {
        pv: String,
    },
    /// The CSI node plugin crashes (its pod CrashLoopBackOff; driver unregistered).
    CsiPluginDown,
    CsiPluginUp,
    /// Kill and restart the plugin container (restartCount + 1).
    CsiPluginRestart,
    /// Remove the registration socket of the running node-driver-registrar: the kubelet's plugin
    /// watcher deregisters the driver (DeRegisterPlugin, the CSINode entry goes) while the plugin
    /// keeps running. Only `driver.longhorn.io` runs on simulated nodes.
    #[serde(rename_all = "camelCase")]
    UnregisterCsiDriver {
        #[serde(default = "default_driver")]
        driver: String,
    },
    /// The registration socket is back: the plugin watcher registers the driver again.
    #[serde(rename_all = "camelCase")]
    RegisterCsiDriver {
        #[serde(default = "default_driver")]
        driver: String,
    },
    /// `count` terminated pods whose volumes never clean up and whose sandboxes the runtime
    /// cannot tear down (PLEG relist hangs on them; with the RCA's pool, they hold workers).
    #[serde(rename_all = "camelCase")]
    SaturateWorkers {
        #[serde(default)]
        count: Option<usize>,
        #[serde(default = "default_stale_ns")]
        namespace: String,
    },
    /// Delete the stale pods the saturation created.
    #[serde(rename_all = "camelCase")]
    ClearStalePods {
        #[serde(default = "default_stale_ns")]
        namespace: String,
    },
    KubeletStop,
    KubeletStart,
    KubeletHang,
    KubeletRestart,
    ProberBroken,
    ProberFixed,
    /// Reboot; stuck in Rebooting (until power cycle) while NFS hangs or disks return I/O errors.
    Reboot,
    PowerCycle,
    /// Power the machine off: nothing runs (no kubelet, no heartbeats), containers and mounts
    /// are gone; it stays off until `PowerOn` (or a power cycle).
    PowerOff,
    /// Power a machine that is off on: it boots as after a power cycle. Nothing to do otherwise.
    PowerOn,
    PartitionNetwork,
    HealNetwork,
    HungNfs,
    ClearHungNfs,
    IoErrors,
    ClearIoErrors,
}

/// What keeps a stale device mount busy: the fault catalogue's type, under the name the sim's
/// users know.
pub use faultline_faults::MountHolder as Holder;
pub use faultline_faults::OtherVolumes;

impl NodeOp {
    /// The primitive that undoes this one; None for one-shot primitives (restarts, a power
    /// cycle, the undoing primitives themselves) and a reboot, which comes back by itself.
    /// The one inverse table: the runner's sim providers and the test library both heal with it.
    pub fn inverse(&self) -> Option<NodeOp> {
        use NodeOp as N;
        Some(match self {
            N::StaleDeviceMount { pv, .. } => N::ClearStaleDeviceMount { pv: pv.clone() },
            N::CsiPluginDown => N::CsiPluginUp,
            N::UnregisterCsiDriver { driver } => N::RegisterCsiDriver {
                driver: driver.clone(),
            },
            N::PowerOff => N::PowerOn,
            N::SaturateWorkers { namespace, .. } => N::ClearStalePods {
                namespace: namespace.clone(),
            },
            N::KubeletStop | N::KubeletHang => N::KubeletStart,
            N::ProberBroken => N::ProberFixed,
            N::PartitionNetwork => N::HealNetwork,
            N::HungNfs => N::ClearHungNfs,
            N::IoErrors => N::ClearIoErrors,
            N::ClearStaleDeviceMount { .. }
            | N::CsiPluginUp
            | N::CsiPluginRestart
            | N::RegisterCsiDriver { .. }
            | N::PowerOn
            | N::ClearStalePods { .. }
            | N::KubeletStart
            | N::KubeletRestart
            | N::ProberFixed
            | N::Reboot
            | N::PowerCycle
            | N::HealNetwork
            | N::ClearHungNfs
            | N::ClearIoErrors => return None,
        })
    }
}

fn default_stale_ns() -> String {
    "snapshots".into()
}

fn default_driver() -> String {
    DRIVER.into()
}

impl NodeOp {
    /// Primitives that need the machine running: refused while it is powered off.
    fn needs_power(&self) -> bool {
        use NodeOp as N;
        matches!(
            self,
            N::KubeletStop
                | N::KubeletStart
                | N::KubeletHang
                | N::KubeletRestart
                | N::Reboot
                | N::CsiPluginRestart
        )
    }
}

impl SimCluster {
    /// Apply a primitive to a node; returns a one-line description of what happened.
    pub fn node_op(&self, node_name_or_ip: &str, op: &NodeOp) -> ApiResult<String> {
        let node = self.node(node_name_or_ip)?.clone();
        let node_name = node.name.as_str();
        let now = self.timing.clock.instant();
        let t = &self.timing;
        // Read before the node's state is locked: the kubelet locks it under its own lock.
        let registrar = match op {
            NodeOp::UnregisterCsiDriver { driver } => {
                Some(self.running_registrar(node_name, driver)?)
            }
            _ => None,
        };
        let msg = {
            let mut st = node.state.lock();
            if st.kubelet == KubeletProcess::PoweredOff && op.needs_power() {
                return Err(ApiError::new(
                    409,
                    "Conflict",
                    format!("node {} is powered off", node_name),
                ));
            }
            match op {
                NodeOp::StaleDeviceMount {
                    pv,
                    deleted_pv,
                    holder,
                    other_volumes,
                } => {
                    st.faults.stale_mounts.retain(|m| &m.pv != pv);
                    let holder = *holder;
                    st.faults.stale_mounts.push(StaleMount {
                        pv: pv.clone(),
                        deleted_pv: *deleted_pv,
                        holder,
                        other_volumes: *other_volumes,
                    });
                    format!("stale device mount of {} left on {}", pv, node_name)
                }
                NodeOp::ClearStaleDeviceMount { pv } => {
                    st.faults.stale_mounts.retain(|m| &m.pv != pv);
                    format!("stale device mount of {} removed from {}", pv, node_name)
                }
                NodeOp::CsiPluginDown => {
                    st.faults.csi_plugin_down = true;
                    format!("CSI plugin on {} is crashing", node_name)
                }
                NodeOp::CsiPluginUp => {
                    st.faults.csi_plugin_down = false;
                    format!("CSI plugin on {} no longer crashes", node_name)
                }
                NodeOp::CsiPluginRestart => String::new(),
                NodeOp::UnregisterCsiDriver { driver } => {
                    st.faults.registration_removed = registrar;
                    format!(
                        "the registration socket of {} on {} is gone",
                        driver, node_name
                    )
                }
                NodeOp::RegisterCsiDriver { driver } => {
                    st.faults.registration_removed = None;
                    format!(
                        "the registration socket of {} on {} is back",
                        driver, node_name
                    )
                }
                NodeOp::SaturateWorkers { .. } | NodeOp::ClearStalePods { .. } => String::new(),
                NodeOp::KubeletStop => {
                    st.kubelet = KubeletProcess::Stopped;
                    format!("kubelet on {} stopped", node_name)
                }
                NodeOp::KubeletHang => {
                    st.kubelet = KubeletProcess::Hung;
                    format!("kubelet on {} hung", node_name)
                }
                NodeOp::KubeletStart | NodeOp::KubeletRestart => {
                    if matches!(st.kubelet, KubeletProcess::Rebooting { .. }) {
                        return Err(ApiError::new(
                            409,
                            "Conflict",
                            format!("node {} is rebooting", node_name),
                        ));
                    }
                    st.kubelet = KubeletProcess::Restarting {
                        until: now + t.s(t.kubelet_restart),
                    };
                    st.reset = Some(ResetKind::KubeletRestart);
                    format!("kubelet on {} restarting", node_name)
                }
                NodeOp::ProberBroken => {
                    st.faults.prober_broken = true;
                    format!("prober manager on {} broken", node_name)
                }
                NodeOp::ProberFixed => {
                    st.faults.prober_broken = false;
                    format!("prober manager on {} fixed", node_name)
                }
                NodeOp::Reboot => {
                    let stuck = st.faults.hung_nfs || st.faults.io_errors;
                    st.kubelet = KubeletProcess::Rebooting {
                        until: if stuck {
                            None
                        } else {
                            Some(now + t.s(t.reboot))
                        },
                    };
                    st.reset = Some(ResetKind::Reboot);
                    if stuck {
                        format!("{} stuck in Rebooting (hung NFS / disk I/O errors): needs a power cycle", node_name)
                    } else {
                        format!("{} rebooting", node_name)
                    }
                }
                NodeOp::PowerCycle => {
                    st.faults.hung_nfs = false;
                    st.faults.io_errors = false;
                    st.kubelet = KubeletProcess::Rebooting {
                        until: Some(now + t.s(t.reboot)),
                    };
                    st.reset = Some(ResetKind::Reboot);
                    format!("{} power cycled", node_name)
                }
                NodeOp::PowerOff => {
                    // What a running node had in memory and in its mount table is gone; the
                    // kubelet finds that out when it boots (a reboot's reset).
                    st.faults.hung_nfs = false;
                    st.faults.io_errors = false;
                    st.faults.stale_mounts.clear();
                    st.kubelet = KubeletProcess::PoweredOff;
                    st.reset = Some(ResetKind::Reboot);
                    format!("{} powered off", node_name)
                }
                NodeOp::PowerOn => {
                    if st.kubelet != KubeletProcess::PoweredOff {
                        format!("{} is not powered off", node_name)
                    } else {
                        st.kubelet = KubeletProcess::Rebooting {
                            until: Some(now + t.s(t.reboot)),
                        };
                        format!("{} powered on", node_name)
                    }
                }
                NodeOp::PartitionNetwork => {
                    st.faults.partitioned = true;
                    format!("{} cut off from the API server", node_name)
                }
                NodeOp::HealNetwork => {
                    st.faults.partitioned = false;
                    format!("{} reconnected", node_name)
                }
                NodeOp::HungNfs => {
                    st.faults.hung_nfs = true;
                    format!("an NFS mount on {} hangs", node_name)
                }
                NodeOp::ClearHungNfs => {
                    st.faults.hung_nfs = false;
                    format!("the NFS mount on {} answers again", node_name)
                }
                NodeOp::IoErrors => {
                    st.faults.io_errors = true;
                    format!("disks on {} return I/O errors", node_name)
                }
                NodeOp::ClearIoErrors => {
                    st.faults.io_errors = false;
                    format!("disks on {} healthy", node_name)
                }
            }
        };
        let msg = match op {
            NodeOp::CsiPluginRestart => self.restart_csi_plugin(node_name)?,
            NodeOp::SaturateWorkers { count, namespace } => self.saturate_workers(
                node_name,
                count.unwrap_or(super::kubelet::DEFAULT_STALE_PODS),
                namespace,
            )?,
            NodeOp::ClearStalePods { namespace } => self.clear_stale_pods(node_name, namespace)?,
            _ => msg,
        };
        node.wake.notify_one();
        Ok(msg)
    }

    /// The container id of the node-driver-registrar that registers `driver` on the node.
    fn running_registrar(&self, node_name: &str, driver: &str) -> ApiResult<String> {
        if driver != DRIVER {
            return Err(ApiError::new(
                404,
                "NotFound",
                format!(
                    "no CSI driver {:?} on {}: simulated nodes run {} only",
                    driver, node_name, DRIVER
                ),
            ));
        }
        self.kubelet(node_name)?
            .lock()
            .registrar_process()
            .ok_or_else(|| {
                ApiError::new(
                    409,
                    "Conflict",
                    format!(
                        "{} is not registered on {}: no node-driver-registrar runs there",
                        driver, node_name
                    ),
                )
            })
    }

    fn restart_csi_plugin(&self, node_name: &str) -> ApiResult<String> {
        let restarted = self
            .kubelet(node_name)?
            .lock()
            .restart_container("longhorn-csi-plugin", "longhorn-csi-plugin");
        if restarted {
            Ok(format!("CSI plugin container on {} restarted", node_name))
        } else {
            Err(ApiError::new(
                409,
                "Conflict",
                format!("no running longhorn-csi-plugin container on {}", node_name),
            ))
        }
    }

    fn saturate_workers(&self, node_name: &str, count: usize, ns: &str) -> ApiResult<String> {
        let client = Internal::new(self.api.clone(), "faultline");
        if client.get("", "namespaces", "", ns).is_none() {
            client.create(
                "",
                "namespaces",
                "",
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
            )?;
        }
        for i in 0..count {
            let name = format!("snapshot-{}-{}", node_name, i);
            let pod = json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": ns, "labels": {"app": "volume-snapshot"}, "annotations": {script::STALE_VOLUMES: "true"}},
                "spec": {"nodeName": node_name, "restartPolicy": "Never", "containers": [{"name": "snapshot", "image": "longhornio/longhorn-manager:v1.9.1"}],
                         "volumes": [{"name": "data", "emptyDir": {}}]}
            });
            match client.create("", "pods", ns, pod) {
                Ok(_) | Err(ApiError { code: 409, .. }) => {}
                Err(e) => return Err(e),
            }
            let now = client.clock().now_rfc3339();
            client.merge_status(
                "",
                "pods",
                ns,
                &name,
                &json!({"status": {"phase": "Failed", "reason": "Error", "hostIP": self.node(node_name)?.internal_ip(), "startTime": now,
                        "conditions": [{"type": "Ready", "status": "False", "reason": "PodFailed", "lastTransitionTime": now}, {"type": "PodScheduled", "status": "True", "lastTransitionTime": now}],
                        "containerStatuses": [{"name": "snapshot", "ready": false, "restartCount": 0, "image": "longhornio/longhorn-manager:v1.9.1", "imageID": "", "started": false,
                                               "state": {"terminated": {"exitCode": 1, "reason": "Error", "startedAt": now, "finishedAt": now}}}]}}),
            )?;
        }
        Ok(format!(
            "{} stale non-running pods hold the pod workers of {}",
            count, node_name
        ))
    }

    fn clear_stale_pods(&self, node_name: &str, ns: &str) -> ApiResult<String> {
        let client = Internal::new(self.api.clone(), "faultline");
        let stale = client.list("", "pods", Some(ns), &|p| {
            meta::str_at(p, "/spec/nodeName") == Some(node_name)
                && p.pointer("/metadata/annotations")
                    .and_then(|a| a.get(script::STALE_VOLUMES))
                    .is_some()
        });
        for p in &stale {
            let _ = client.delete("", "pods", ns, meta::name(p), Some(0));
        }
        Ok(format!(
            "deleted {} stale pods on {}",
            stale.len(),
            node_name
        ))
    }
}
