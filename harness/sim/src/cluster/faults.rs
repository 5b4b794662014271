//! The fault catalogue (`faultline-faults`) carried out on a simulated cluster: [`effect`] is the
//! one mapping from a catalogue operation to the sim's node primitives (`nodeops`) or API faults,
//! and [`FaultApplier`] resolves an operation's volume, applies that effect and heals it. The
//! runner's sim provider, a remote `faultline sim up` and the test library (`faultline-testing`)
//! all go through here, so an operation means the same thing in each.

use crate::apiserver::http::faults::{ApiFault, ApiFaults};
use crate::cluster::nodeops::NodeOp;
use crate::cluster::SimCluster;
use crate::ApiServer;
use faultline_faults::{Inverse, NodeOperation, Phase, Provider, Support, VolumeRef};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;

/// Why an operation could not be carried out on the simulated cluster.
#[derive(Debug, thiserror::Error)]
pub enum FaultError {
    /// The catalogue declares the operation unsupported by the sim.
    #[error("`{op}` is unsupported by the sim: {why}")]
    Unsupported { op: &'static str, why: &'static str },
    /// A node operation on a cluster that serves the API only.
    #[error("`{op}` needs the simulated nodes, but this cluster serves the API only (spec.cluster.sim.apiOnly)")]
    ApiOnly { op: &'static str },
    /// An API operation given where node operations go.
    #[error("`{op}` is not a node operation: API faults go to /faultline/v1/apifaults")]
    NotANodeOperation { op: &'static str },
    /// The operation's volume could not be resolved to a PersistentVolume.
    #[error("{0}")]
    Volume(String),
    /// The node refused a primitive (unknown node, a kubelet start while it reboots, ...).
    #[error("{op} on {node}: {message}")]
    Node {
        op: &'static str,
        node: String,
        message: String,
        /// The HTTP status the node's refusal had (404 unknown node, 409 powered off, ...).
        code: u16,
    },
}

/// A refusal the catalogue declares for the sim (none today); `effect` would have nothing to do.
pub fn check_supported(op: &NodeOperation) -> Result<(), FaultError> {
    match op.support(Provider::Sim) {
        Support::Implemented => Ok(()),
        Support::Unsupported(why) => Err(FaultError::Unsupported { op: op.key(), why }),
    }
}

/// What the simulated cluster does for one operation.
#[derive(Clone, Debug, PartialEq)]
pub enum Effect {
    /// The sim's node primitives, in order, on the operation's node (empty: nothing to do).
    Node(Vec<NodeOp>),
    /// A fault of the simulated API server: added on inject, removed on heal.
    Api(ApiFault),
}

/// The sim's side of `op` in one direction: the one mapping from the catalogue to the sim,
/// shared by the in-process cluster and a remote `faultline sim up` (`sim_remote`). `pv` is
/// the resolved PersistentVolume of a volume operation (and whether it is gone from the API).
/// A heal follows the catalogue's inverse: nothing for one-shot operations, the inverse
/// operation's primitives, or the inverses of the inject's primitives, newest first.
pub fn effect(op: &NodeOperation, phase: Phase, pv: Option<(String, bool)>) -> Effect {
    match phase {
        Phase::Inject => inject(op, pv),
        Phase::Heal => match op.inverse() {
            None => Effect::Node(vec![]),
            Some(Inverse::Apply(by)) => inject(&by, pv),
            Some(Inverse::Revert) => match inject(op, pv) {
                Effect::Node(prims) => {
                    Effect::Node(prims.iter().rev().filter_map(NodeOp::inverse).collect())
                }
                api => api,
            },
        },
    }
}

fn inject(op: &NodeOperation, pv: Option<(String, bool)>) -> Effect {
    use NodeOperation as N;
    match op {
        N::StaleDeviceMount(s) => {
            let (pv, deleted_pv) = pv.unwrap_or_default();
            Effect::Node(vec![NodeOp::StaleDeviceMount {
                pv,
                deleted_pv,
                holder: s.held_by,
                other_volumes: s.other_volumes,
            }])
        }
        N::CsiPluginDown(_) => Effect::Node(vec![NodeOp::CsiPluginDown]),
        N::CsiPluginRestart(_) => Effect::Node(vec![NodeOp::CsiPluginRestart]),
        N::CsiDriverUnregistered(d) => Effect::Node(vec![NodeOp::UnregisterCsiDriver {
            driver: d.driver.clone(),
        }]),
        N::KubeletWorkersSaturated(k) => Effect::Node(vec![NodeOp::SaturateWorkers {
            count: Some(k.stale_pods as usize),
            namespace: "snapshots".into(),
        }]),
        N::KubeletStop(_) => Effect::Node(vec![NodeOp::KubeletStop]),
        N::KubeletHang(_) => Effect::Node(vec![NodeOp::KubeletHang]),
        N::KubeletRestart(_) => Effect::Node(vec![NodeOp::KubeletRestart]),
        N::ProberManagerBroken(_) => Effect::Node(vec![NodeOp::ProberBroken]),
        // Stuck in Rebooting: the sim keeps a node there while NFS hangs.
        N::NodeReboot(r) if r.stuck_until_power_cycle => {
            Effect::Node(vec![NodeOp::HungNfs, NodeOp::Reboot])
        }
        N::NodeReboot(_) => Effect::Node(vec![NodeOp::Reboot]),
        N::NodePowerCycle(_) => Effect::Node(vec![NodeOp::PowerCycle]),
        N::NodePowerOff(_) => Effect::Node(vec![NodeOp::PowerOff]),
        N::NodeNetworkPartition(_) => Effect::Node(vec![NodeOp::PartitionNetwork]),
        N::HungNfs(_) => Effect::Node(vec![NodeOp::HungNfs]),
        N::IoErrors(_) => Effect::Node(vec![NodeOp::IoErrors]),
        N::ApiErrors(_) | N::ApiLatency(_) => {
            ApiFault::from_operation(op).map_or(Effect::Node(vec![]), Effect::Api)
        }
    }
}

/// The PersistentVolume behind a volume reference, and whether it is gone from the API.
pub fn resolve_volume(api: &ApiServer, v: &VolumeRef) -> Result<(String, bool), FaultError> {
    match v {
        VolumeRef::Pv(p) => Ok((p.clone(), false)),
        VolumeRef::DeletedPv(p) => Ok((p.clone(), true)),
        VolumeRef::Pvc(c) => {
            let (ns, name) = c.split_once('/').unwrap_or(("default", c));
            let rt = api
                .resource("", "v1", "persistentvolumeclaims")
                .map_err(|e| FaultError::Volume(e.to_string()))?;
            let pvc = api
                .get(&rt, ns, name)
                .map_err(|e| FaultError::Volume(format!("PVC {ns}/{name}: {e}")))?;
            let pv = pvc
                .pointer("/spec/volumeName")
                .and_then(|v| v.as_str())
                .filter(|v| !v.is_empty())
                .ok_or_else(|| {
                    FaultError::Volume(format!("PVC {ns}/{name} is not bound to a volume yet"))
                })?;
            Ok((pv.to_string(), false))
        }
    }
}

/// The node primitives of a node operation (its volume resolved); an API operation has none.
fn node_effect(
    op: &NodeOperation,
    phase: Phase,
    api: &ApiServer,
) -> Result<Vec<NodeOp>, FaultError> {
    let pv = op.volume().map(|v| resolve_volume(api, v)).transpose()?;
    Ok(match effect(op, phase, pv) {
        Effect::Node(prims) => prims,
        Effect::Api(_) => vec![],
    })
}

impl SimCluster {
    /// Inject or heal a node operation of the catalogue on this cluster's nodes (the runner's
    /// sim provider through `FaultApplier`, and the control endpoint's `/faultline/v1/faults`).
    /// API operations are refused: they belong to the API server's `ApiFaults`.
    pub fn apply_operation(&self, op: &NodeOperation, phase: Phase) -> Result<(), FaultError> {
        check_supported(op)?;
        if ApiFault::from_operation(op).is_some() {
            return Err(FaultError::NotANodeOperation { op: op.key() });
        }
        let node = op.node().unwrap_or_default();
        for p in node_effect(op, phase, &self.api)? {
            self.node_op(node, &p).map_err(|e| FaultError::Node {
                op: op.key(),
                node: node.to_string(),
                message: e.to_string(),
                code: e.code,
            })?;
        }
        Ok(())
    }
}

impl FaultError {
    /// The HTTP status the control endpoint answers this refusal with.
    pub fn status_code(&self) -> u16 {
        match self {
            FaultError::Unsupported { .. } | FaultError::NotANodeOperation { .. } => 400,
            FaultError::ApiOnly { .. } | FaultError::Volume(_) => 409,
            FaultError::Node { code, .. } => *code,
        }
    }
}

/// Carries catalogue operations out on one simulated cluster: node primitives on its nodes
/// (none when it serves the API only), API faults on its API server. API faults are kept by the
/// operation's JSON so that its heal finds them.
pub struct FaultApplier {
    nodes: Option<Arc<SimCluster>>,
    api: Arc<ApiServer>,
    api_faults: ApiFaults,
    api_fault_ids: Mutex<HashMap<String, Vec<u64>>>,
}

impl FaultApplier {
    pub fn new(nodes: Option<Arc<SimCluster>>, api: Arc<ApiServer>, api_faults: ApiFaults) -> Self {
        FaultApplier {
            nodes,
            api,
            api_faults,
            api_fault_ids: Mutex::new(HashMap::new()),
        }
    }

    /// The simulated nodes, when the cluster has them.
    pub fn nodes(&self) -> Option<&Arc<SimCluster>> {
        self.nodes.as_ref()
    }

    /// The PersistentVolume behind a volume reference, and whether it is gone from the API.
    pub fn resolve_volume(&self, v: &VolumeRef) -> Result<(String, bool), FaultError> {
        resolve_volume(&self.api, v)
    }

    /// Inject (`Phase::Inject`) or heal (`Phase::Heal`) `op`.
    pub fn apply(&self, op: &NodeOperation, phase: Phase) -> Result<(), FaultError> {
        check_supported(op)?;
        if let Some(fault) = ApiFault::from_operation(op) {
            self.api_fault(op, phase, fault);
            return Ok(());
        }
        match &self.nodes {
            Some(nodes) => nodes.apply_operation(op, phase),
            // Nothing can have been applied, so a heal has nothing to undo.
            None if phase == Phase::Heal => Ok(()),
            None if node_effect(op, phase, &self.api)?.is_empty() => Ok(()),
            None => Err(FaultError::ApiOnly { op: op.key() }),
        }
    }

    fn api_fault(&self, op: &NodeOperation, phase: Phase, fault: ApiFault) {
        let key = serde_json::to_string(op).unwrap_or_default();
        match phase {
            Phase::Inject => {
                let id = self.api_faults.add(fault);
                self.api_fault_ids.lock().entry(key).or_default().push(id);
            }
            Phase::Heal => {
                for id in self.api_fault_ids.lock().remove(&key).unwrap_or_default() {
                    self.api_faults.remove(id);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use faultline_faults::Lifetime;

    fn op(src: &str) -> NodeOperation {
        match serde_yaml::from_str::<faultline_faults::Operation>(src).unwrap() {
            faultline_faults::Operation::Node(n) => n,
            other => panic!("{other:?}"),
        }
    }

    fn pv_of(op: &NodeOperation) -> Option<(String, bool)> {
        op.volume().map(|_| ("pvc-1".to_string(), true))
    }

    /// The primitive names of a node effect (`csiPluginDown`), `api` for an API fault.
    fn names(e: &Effect) -> Vec<String> {
        match e {
            Effect::Node(prims) => prims
                .iter()
                .map(|p| {
                    serde_json::to_value(p).unwrap()["op"]
                        .as_str()
                        .unwrap()
                        .to_string()
                })
                .collect(),
            Effect::Api(_) => vec!["api".into()],
        }
    }

    /// Conformance: every catalogue entry the sim is declared to implement does something on
    /// inject, and a declared refusal (none today) would find nothing to do; one-shot
    /// operations heal nothing.
    #[test]
    fn the_sim_implements_what_the_catalogue_declares() {
        for op in NodeOperation::all_cases("w") {
            let inject = effect(&op, Phase::Inject, pv_of(&op));
            let heal = effect(&op, Phase::Heal, pv_of(&op));
            let does_something = !names(&inject).is_empty();
            match op.support(Provider::Sim) {
                Support::Implemented => assert!(does_something, "{} maps to nothing", op.key()),
                Support::Unsupported(_) => {
                    assert!(
                        !does_something,
                        "{} is mapped but declared unsupported",
                        op.key()
                    );
                    assert!(check_supported(&op).is_err());
                }
            }
            if op.lifetime() == Lifetime::OneShot {
                assert!(
                    names(&heal).is_empty(),
                    "one-shot {} heals {heal:?}",
                    op.key()
                );
            }
        }
    }

    /// What each operation does in the sim, both ways (the mapping as it was before the
    /// catalogue: a change here changes scenarios).
    #[test]
    fn every_operation_maps_to_these_primitives() {
        let want: &[(&str, &[&str], &[&str])] = &[
            (
                "staleDeviceMount",
                &["staleDeviceMount"],
                &["clearStaleDeviceMount"],
            ),
            ("csiPluginDown", &["csiPluginDown"], &["csiPluginUp"]),
            ("csiPluginRestart", &["csiPluginRestart"], &[]),
            (
                "csiDriverUnregistered",
                &["unregisterCsiDriver"],
                &["registerCsiDriver"],
            ),
            (
                "kubeletWorkersSaturated",
                &["saturateWorkers"],
                &["clearStalePods"],
            ),
            ("kubeletStop", &["kubeletStop"], &["kubeletStart"]),
            ("kubeletHang", &["kubeletHang"], &["kubeletStart"]),
            ("kubeletRestart", &["kubeletRestart"], &[]),
            ("proberManagerBroken", &["proberBroken"], &["proberFixed"]),
            ("nodeReboot", &["reboot"], &[]),
            ("nodePowerCycle", &["powerCycle"], &[]),
            ("nodePowerOff", &["powerOff"], &["powerOn"]),
            (
                "nodeNetworkPartition",
                &["partitionNetwork"],
                &["healNetwork"],
            ),
            ("hungNfs", &["hungNfs"], &["clearHungNfs"]),
            ("ioErrors", &["ioErrors"], &["clearIoErrors"]),
            ("apiErrors", &["api"], &["api"]),
            ("apiLatency", &["api"], &["api"]),
        ];
        let examples = NodeOperation::examples("w");
        assert_eq!(examples.len(), want.len());
        for (op, (key, inject, heal)) in examples.iter().zip(want) {
            assert_eq!(op.key(), *key);
            assert_eq!(
                names(&effect(op, Phase::Inject, pv_of(op))),
                *inject,
                "{key}"
            );
            assert_eq!(names(&effect(op, Phase::Heal, pv_of(op))), *heal, "{key}");
        }
        let stuck = op("nodeReboot: {node: w, stuckUntilPowerCycle: true}");
        assert_eq!(
            names(&effect(&stuck, Phase::Inject, None)),
            ["hungNfs", "reboot"]
        );
        assert_eq!(names(&effect(&stuck, Phase::Heal, None)), ["powerCycle"]);
        let clear = effect(&examples[0], Phase::Heal, Some(("pvc-9".into(), false)));
        assert_eq!(
            clear,
            Effect::Node(vec![NodeOp::ClearStaleDeviceMount { pv: "pvc-9".into() }])
        );
    }

    #[test]
    fn a_stale_mount_holds_back_only_its_volume_unless_told_otherwise() {
        use faultline_faults::{MountHolder, OtherVolumes};
        let pv = Some(("pvc-1".to_string(), true));
        let read = |fields: &str| match effect(
            &op(&format!(
                "staleDeviceMount: {{node: w, volume: {{deletedPV: pvc-1}}{fields}}}"
            )),
            Phase::Inject,
            pv.clone(),
        ) {
            Effect::Node(ops) => match &ops[..] {
                [NodeOp::StaleDeviceMount {
                    other_volumes,
                    holder,
                    ..
                }] => (*other_volumes, *holder),
                other => panic!("{other:?}"),
            },
            other => panic!("{other:?}"),
        };
        // The faithful default: nestedpendingoperations holds back the same volume only.
        assert_eq!(read(""), (OtherVolumes::Unaffected, MountHolder::Kubelet));
        assert_eq!(
            read(", otherVolumes: pluginHangs"),
            (OtherVolumes::PluginHangs, MountHolder::Kubelet)
        );
        // The RCA's node-wide block is an explicit option, in either spelling.
        for spelling in [
            ", heldBy: external, blocksQueue: true",
            ", heldBy: external, otherVolumes: queueBlocked",
            ", heldBy: external, otherVolumes: queueBlocked, blocksQueue: true",
        ] {
            assert_eq!(
                read(spelling),
                (OtherVolumes::QueueBlocked, MountHolder::External),
                "{spelling}"
            );
        }
        assert_eq!(
            read(", otherVolumes: unaffected, blocksQueue: false").0,
            OtherVolumes::Unaffected
        );
        let e = serde_yaml::from_str::<faultline_faults::Operation>(
            "staleDeviceMount: {node: w, volume: {pv: p}, otherVolumes: pluginHangs, blocksQueue: true}",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("contradicts `otherVolumes: pluginHangs`"), "{e}");
    }
}
