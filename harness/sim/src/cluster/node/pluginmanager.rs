//! The plugin manager (pkg/kubelet/pluginmanager) for the one CSI driver, with the CSI volume
//! plugin's registration handler (pkg/volume/csi/csi_plugin.go): the plugin watcher registers
//! `driver.longhorn.io` while node-driver-registrar's socket exists, i.e. while the registrar runs
//! in a plugin pod that is not being deleted (its preStop removes the socket) and no fault has
//! removed the socket (`csiDriverUnregistered`), and the handler
//! lists it in the node's CSINode. A crash-looping plugin container leaves it registered. It
//! also follows the node plugin's processes: one that exits releases the devices it kept busy.

use super::log::KubeletLog;
use super::state::{MountHolder, SimNode};
use super::volumemanager::operation_executor::CsiDriver;
use super::volumes::{CSI_SOCKET, DRIVER};
use crate::internal::Internal;
use serde_json::json;
use std::collections::HashSet;

/// The node's live (not deleting) CSI plugin pod, as the runtime runs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PluginPod {
    /// node-driver-registrar runs and its registration socket exists (the
    /// `csiDriverUnregistered` fault removes it while the registrar keeps running).
    pub registration_socket: bool,
    /// The plugin container runs.
    pub plugin_running: bool,
}

#[derive(Debug, Default)]
pub struct PluginManager {
    registered: bool,
    /// The plugin processes (container ids) running at the last pass.
    plugin_processes: HashSet<String>,
}

impl PluginManager {
    /// The driver as the CSI volume plugin finds it for its node calls: the plugin process
    /// answers on its socket while its container runs and is not crashing.
    pub fn driver(&self, pod: Option<PluginPod>, crashing: bool) -> CsiDriver {
        CsiDriver {
            registered: self.registered,
            serving: pod.is_some_and(|p| p.plugin_running) && !crashing,
        }
    }

    /// One pass of the plugin watcher: register or deregister the driver as the registrar's
    /// socket appears or goes. A partitioned node logs it but cannot write its CSINode (and
    /// tries again next pass).
    pub fn sync(
        &mut self,
        pod: Option<PluginPod>,
        partitioned: bool,
        node_name: &str,
        client: &Internal,
        log: &KubeletLog,
    ) {
        let should = pod.is_some_and(|p| p.registration_socket);
        if should == self.registered {
            return;
        }
        if should {
            log.info("csi_plugin.go:106", &format!("kubernetes.io/csi: Trying to validate a new CSI Driver with name: {} endpoint: {} versions: 1.0.0", DRIVER, CSI_SOCKET));
            log.info(
                "csi_plugin.go:119",
                &format!(
                    "kubernetes.io/csi: Register new plugin with name: {} at endpoint: {}",
                    DRIVER, CSI_SOCKET
                ),
            );
            log.csi("main.go:164", "Received GetInfo call: &InfoRequest{}");
            log.csi("main.go:90", "Received NotifyRegistrationStatus call: &RegistrationStatus{PluginRegistered:true,Error:,}");
        } else {
            log.info(
                "csi_plugin.go:271",
                &format!(
                    "kubernetes.io/csi: registrationHandler.DeRegisterPlugin request for plugin {}, endpoint {}",
                    DRIVER, CSI_SOCKET
                ),
            );
        }
        if partitioned {
            return;
        }
        self.registered = should;
        let drivers = if should {
            json!([{"name": DRIVER, "nodeID": node_name, "topologyKeys": null}])
        } else {
            json!([])
        };
        let _ = client.merge(
            "storage.k8s.io",
            "csinodes",
            "",
            node_name,
            &json!({"spec": {"drivers": drivers}}),
        );
    }

    /// The plugin processes now running (container ids): one that exited releases the devices
    /// it kept busy (the fault holds from its injection until the process holding it goes,
    /// whichever process that is); a new one logs its start.
    pub fn track_plugin_processes(
        &mut self,
        running: HashSet<String>,
        node: &SimNode,
        log: &KubeletLog,
    ) {
        if self.plugin_processes.difference(&running).next().is_some() {
            node.state
                .lock()
                .faults
                .stale_mounts
                .retain(|m| m.holder != MountHolder::CsiPlugin);
        }
        for _ in running.difference(&self.plugin_processes) {
            log.csi("main.go:135", "Version: v2.14.0");
            log.csi(
                "node_register.go:53",
                "Starting Registration Server at: /registration/driver.longhorn.io-reg.sock",
            );
        }
        self.plugin_processes = running;
    }

    /// A kubelet that starts again has registered nothing yet.
    pub fn restart(&mut self) {
        self.registered = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_crashing_plugin_stays_registered_but_does_not_serve() {
        let mut pm = PluginManager::default();
        let running = PluginPod {
            registration_socket: true,
            plugin_running: true,
        };
        assert_eq!(
            pm.driver(Some(running), false),
            CsiDriver {
                registered: false,
                serving: true
            }
        );
        pm.registered = true;
        assert!(!pm.driver(Some(running), true).serving);
        assert!(pm.driver(Some(running), true).registered);
        assert!(!pm.driver(None, false).serving);
    }
}
