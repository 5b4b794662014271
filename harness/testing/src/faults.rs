//! Injecting faults and healing them: operations of the fault catalogue (`faultline_faults`,
//! what a scenario's `inject:` names), the sim's node primitives (`NodeOp`, what `faultline node
//! <NODE> ...` applies) and API faults.

use crate::cluster::Cluster;
use crate::error::{Error, Result};
use faultline_faults::{Lifetime, NodeOperation, Phase};
use faultline_sim::cluster::nodeops::NodeOp;
use faultline_sim::http::faults::ApiFault;

/// A catalogue operation that was injected: heal it with `Cluster::heal_operation`.
#[derive(Debug, Clone, PartialEq)]
#[must_use = "keep the handle to heal the operation"]
pub struct InjectedOperation {
    pub op: NodeOperation,
}

/// A node operation that was applied: heal it with `Cluster::heal`.
#[derive(Debug, Clone, PartialEq)]
pub struct Fault {
    /// The node's name (an InternalIP given to `inject` is resolved).
    pub node: String,
    pub op: NodeOp,
    /// What the node did, e.g. "CSI plugin on worker-01 is crashing".
    pub message: String,
}

/// An API fault that was applied: heal it with `Cluster::heal_api`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use = "keep the handle to heal the fault"]
pub struct ApiFaultId(u64);

/// The operation that undoes `op`, or `None` for one-shot operations (restarts, power cycles,
/// cleanups) and a reboot, which comes back by itself: the sim's one inverse table
/// (`NodeOp::inverse`), which the runner's sim provider heals with too.
pub fn inverse(op: &NodeOp) -> Option<NodeOp> {
    op.inverse()
}

/// The operation's name as the control endpoint spells it (`csiPluginDown`).
fn op_name(op: &NodeOp) -> String {
    serde_json::to_value(op)
        .ok()
        .and_then(|v| v.get("op").and_then(|o| o.as_str()).map(String::from))
        .unwrap_or_else(|| format!("{op:?}"))
}

impl Cluster {
    /// Apply a node operation to `node` (a name or an InternalIP).
    pub fn inject(&self, node: &str, op: NodeOp) -> Result<Fault> {
        let name = self.node(node, &op_name(&op))?.name.clone();
        let message = self.apply(&name, &op)?;
        Ok(Fault {
            node: name,
            op,
            message,
        })
    }

    /// Undo an injected operation; returns what the node did.
    pub fn heal(&self, fault: &Fault) -> Result<String> {
        let undo = inverse(&fault.op).ok_or_else(|| Error::NotHealable {
            op: op_name(&fault.op),
        })?;
        self.apply(&fault.node, &undo)
    }

    fn apply(&self, node: &str, op: &NodeOp) -> Result<String> {
        let sim = self.sim_nodes(&op_name(op))?;
        sim.node_op(node, op).map_err(|e| Error::NodeOp {
            node: node.to_string(),
            op: op_name(op),
            message: e.message,
        })
    }

    /// Inject an operation of the fault catalogue exactly as a scenario's `inject:` does on the
    /// sim provider (the same mapping to node primitives and API faults: the sim's
    /// `cluster::faults`). A volume given as a PVC must be bound.
    pub fn inject_operation(&self, op: NodeOperation) -> Result<InjectedOperation> {
        self.operations.apply(&op, Phase::Inject)?;
        Ok(InjectedOperation { op })
    }

    /// Heal an injected catalogue operation by its catalogue inverse; a one-shot operation
    /// (a restart, a power cycle) is `Error::NotHealable`.
    pub fn heal_operation(&self, injected: &InjectedOperation) -> Result<()> {
        if injected.op.lifetime() == Lifetime::OneShot {
            return Err(Error::NotHealable {
                op: injected.op.key().to_string(),
            });
        }
        Ok(self.operations.apply(&injected.op, Phase::Heal)?)
    }

    /// Fail or delay matching API requests (`ApiFaultKind::Errors` / `Latency`); which requests
    /// fail follows the cluster's seed.
    pub fn inject_api(&self, fault: ApiFault) -> ApiFaultId {
        ApiFaultId(self.sim().faults.add(fault))
    }

    /// Remove an API fault; false when it was already removed.
    pub fn heal_api(&self, id: ApiFaultId) -> bool {
        self.sim().faults.remove(id.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_lasting_fault_has_an_inverse_that_is_one_shot() {
        let lasting = [
            NodeOp::StaleDeviceMount {
                pv: "pvc-1".into(),
                deleted_pv: true,
                holder: faultline_sim::cluster::nodeops::Holder::Kubelet,
                other_volumes: Default::default(),
            },
            NodeOp::CsiPluginDown,
            NodeOp::SaturateWorkers {
                count: Some(3),
                namespace: "snap".into(),
            },
            NodeOp::KubeletStop,
            NodeOp::KubeletHang,
            NodeOp::ProberBroken,
            NodeOp::PartitionNetwork,
            NodeOp::HungNfs,
            NodeOp::IoErrors,
        ];
        for op in lasting {
            let undo = inverse(&op).unwrap_or_else(|| panic!("{op:?} has no inverse"));
            assert_eq!(
                inverse(&undo),
                None,
                "{undo:?} heals {op:?} and is itself one-shot"
            );
        }
        assert_eq!(
            inverse(&NodeOp::StaleDeviceMount {
                pv: "pvc-9".into(),
                deleted_pv: false,
                holder: faultline_sim::cluster::nodeops::Holder::External,
                other_volumes: crate::OtherVolumes::QueueBlocked,
            }),
            Some(NodeOp::ClearStaleDeviceMount { pv: "pvc-9".into() })
        );
        assert_eq!(
            inverse(&NodeOp::SaturateWorkers {
                count: None,
                namespace: "x".into()
            }),
            Some(NodeOp::ClearStalePods {
                namespace: "x".into()
            })
        );
        for one_shot in [
            NodeOp::CsiPluginRestart,
            NodeOp::KubeletRestart,
            NodeOp::PowerCycle,
            NodeOp::Reboot,
        ] {
            assert_eq!(inverse(&one_shot), None);
        }
        assert_eq!(op_name(&NodeOp::CsiPluginDown), "csiPluginDown");
    }
}
