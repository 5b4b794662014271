//! What the catalogue knows about each operation besides its parameters: how it is undone
//! (`inverse`), whether anything is left to undo (`lifetime`), and which providers carry it
//! out (`support`). Every fact is an exhaustive `match`, so a new operation does not compile
//! until it has all three; the providers' conformance tests then hold them to `support`.

use crate::ops::{NodeOperation, NodeTarget, Operation, RunnerOperation};
use std::fmt;

/// Whether an applied operation leaves something behind to heal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Lifetime {
    /// Over when it returns (a restart, a power cycle, a deletion): nothing to heal.
    OneShot,
    /// Lasts until healed: registered as active, healed by its `heal` or at the end.
    Held,
}

/// How a held operation is undone.
#[derive(Clone, Debug, PartialEq)]
pub enum Inverse<Op> {
    /// The provider reverts what it did itself (the sim applies its primitives' inverses, kind
    /// runs the plan's heal steps, the runner starts the controller again). Reverting may find
    /// nothing left to do: a reboot that was not stuck came back by itself.
    Revert,
    /// Another operation of the catalogue heals it: `uncordon` after `cordon` or `drain`,
    /// `nodePowerCycle` after a reboot stuck until power cycled. It is itself one-shot.
    Apply(Op),
}

impl<Op> Inverse<Op> {
    fn map<T>(self, f: impl FnOnce(Op) -> T) -> Inverse<T> {
        match self {
            Inverse::Revert => Inverse::Revert,
            Inverse::Apply(op) => Inverse::Apply(f(op)),
        }
    }
}

/// The two directions of an operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    Inject,
    Heal,
}

/// What a node operation acts on, as the test libraries group their constructors
/// (go/faultlinetest/storage offers every `Storage` operation and checks that it does).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Area {
    /// The node itself: its kubelet, power, network, probes.
    Node,
    /// Its volumes: the CSI plugin and driver, device mounts, the disks and NFS under them,
    /// and the stale pods whose volumes cannot be cleaned up.
    Storage,
    /// The simulated API server (`apiErrors`, `apiLatency`).
    Api,
}

impl Area {
    /// As `GET /faultline/v1/catalogue` spells it.
    pub fn name(self) -> &'static str {
        match self {
            Area::Node => "node",
            Area::Storage => "storage",
            Area::Api => "api",
        }
    }
}

/// Where faults are carried out (the runner's `--provider`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Provider {
    /// The simulated cluster (in process).
    Sim,
    /// kindest/node containers.
    Kind,
    /// A real cluster, through a privileged node agent and kubectl.
    Existing,
}

impl Provider {
    pub const ALL: [Provider; 3] = [Provider::Sim, Provider::Kind, Provider::Existing];
    /// As `--provider` spells it.
    pub fn name(self) -> &'static str {
        match self {
            Provider::Sim => "sim",
            Provider::Kind => "kind",
            Provider::Existing => "existing",
        }
    }
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Whether a provider carries an operation out. Preconditions of a cluster (Longhorn for the
/// CSI faults, simulated nodes rather than `apiOnly`, valid names) are checked when the
/// operation is planned; this is what a provider can do at all.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Support {
    Implemented,
    /// Refused, with the reason users are shown.
    Unsupported(&'static str),
}

// The reasons users are shown when a provider refuses an operation.
const SIM_API_ONLY: &str =
    "only the simulated API server can be told to fail or delay requests (use --provider sim)";
// On existing clusters the node agent's `kubectl exec` rides on the kubelet.
const AGENT_NEEDS_KUBELET: &str = "the node agent is reached through the kubelet: with the \
    kubelet stopped the heal could not be delivered";
const AGENT_NEEDS_LIVE_KUBELET: &str = "the node agent is reached through the kubelet: with the \
    kubelet frozen the heal could not be delivered";
const NO_POWER_CYCLE_FOR_STUCK_REBOOT: &str =
    "a stuck reboot needs a power cycle, which an existing cluster's nodes do not offer faultline";
const NO_POWER_CONTROL: &str = "no power control (IPMI/Redfish) of an existing cluster's nodes";
const PARTITION_CUTS_AGENT: &str = "partitioning a node would also cut faultline off from its \
    node agent, so the heal could not be delivered";

impl NodeOperation {
    /// How this operation is undone; None for one-shot operations.
    pub fn inverse(&self) -> Option<Inverse<NodeOperation>> {
        use NodeOperation as N;
        match self {
            N::CsiPluginRestart(_) | N::KubeletRestart(_) | N::NodePowerCycle(_) => None,
            // Only a power cycle ends a reboot that hangs on purpose.
            N::NodeReboot(r) if r.stuck_until_power_cycle => {
                Some(Inverse::Apply(N::NodePowerCycle(NodeTarget {
                    node: r.node.clone(),
                })))
            }
            // Held although it comes back by itself: a reboot can hang because of another
            // fault (hungNfs, ioErrors), and then its heal brings the node back.
            N::NodeReboot(_) => Some(Inverse::Revert),
            N::StaleDeviceMount(_)
            | N::CsiPluginDown(_)
            | N::CsiDriverUnregistered(_)
            | N::KubeletWorkersSaturated(_)
            | N::KubeletStop(_)
            | N::KubeletHang(_)
            | N::ProberManagerBroken(_)
            // Powered on again: it boots clean.
            | N::NodePowerOff(_)
            | N::NodeNetworkPartition(_)
            | N::HungNfs(_)
            | N::IoErrors(_)
            | N::ApiErrors(_)
            | N::ApiLatency(_) => Some(Inverse::Revert),
        }
    }

    pub fn lifetime(&self) -> Lifetime {
        lifetime_of(self.inverse().is_some())
    }

    /// What the operation acts on.
    pub fn area(&self) -> Area {
        use NodeOperation as N;
        match self {
            N::StaleDeviceMount(_)
            | N::CsiPluginDown(_)
            | N::CsiPluginRestart(_)
            | N::CsiDriverUnregistered(_)
            | N::KubeletWorkersSaturated(_)
            | N::HungNfs(_)
            | N::IoErrors(_) => Area::Storage,
            N::KubeletStop(_)
            | N::KubeletHang(_)
            | N::KubeletRestart(_)
            | N::ProberManagerBroken(_)
            | N::NodeReboot(_)
            | N::NodePowerCycle(_)
            | N::NodePowerOff(_)
            | N::NodeNetworkPartition(_) => Area::Node,
            N::ApiErrors(_) | N::ApiLatency(_) => Area::Api,
        }
    }

    /// Whether `provider` carries this operation out, and if not, why.
    pub fn support(&self, provider: Provider) -> Support {
        use NodeOperation as N;
        use Support::{Implemented as Yes, Unsupported as No};
        // (sim, kind, existing)
        let row = match self {
            N::StaleDeviceMount(_)
            | N::CsiPluginDown(_)
            | N::CsiPluginRestart(_)
            | N::CsiDriverUnregistered(_)
            | N::KubeletWorkersSaturated(_)
            | N::KubeletRestart(_)
            | N::ProberManagerBroken(_)
            | N::HungNfs(_)
            | N::IoErrors(_) => (Yes, Yes, Yes),
            N::KubeletStop(_) => (Yes, Yes, No(AGENT_NEEDS_KUBELET)),
            N::KubeletHang(_) => (Yes, Yes, No(AGENT_NEEDS_LIVE_KUBELET)),
            N::NodeReboot(r) if r.stuck_until_power_cycle => {
                (Yes, Yes, No(NO_POWER_CYCLE_FOR_STUCK_REBOOT))
            }
            N::NodeReboot(_) => (Yes, Yes, Yes),
            N::NodePowerCycle(_) | N::NodePowerOff(_) => (Yes, Yes, No(NO_POWER_CONTROL)),
            N::NodeNetworkPartition(_) => (Yes, Yes, No(PARTITION_CUTS_AGENT)),
            N::ApiErrors(_) | N::ApiLatency(_) => (Yes, No(SIM_API_ONLY), No(SIM_API_ONLY)),
        };
        pick(row, provider)
    }

    /// One example of every operation, in `KEYS` order (dry-run tables, conformance tests).
    pub fn examples(node: &str) -> Vec<NodeOperation> {
        use crate::ops::*;
        let t = || NodeTarget { node: node.into() };
        vec![
            NodeOperation::StaleDeviceMount(StaleDeviceMount {
                node: node.into(),
                volume: VolumeRef::DeletedPv("pvc-81b676e6".into()),
                held_by: MountHolder::Kubelet,
                other_volumes: OtherVolumes::Unaffected,
            }),
            NodeOperation::CsiPluginDown(t()),
            NodeOperation::CsiPluginRestart(t()),
            NodeOperation::CsiDriverUnregistered(CsiDriverUnregistered {
                node: node.into(),
                driver: LONGHORN_CSI_DRIVER.into(),
            }),
            NodeOperation::KubeletWorkersSaturated(KubeletWorkersSaturated {
                node: node.into(),
                stale_pods: 3,
            }),
            NodeOperation::KubeletStop(t()),
            NodeOperation::KubeletHang(t()),
            NodeOperation::KubeletRestart(t()),
            NodeOperation::ProberManagerBroken(t()),
            NodeOperation::NodeReboot(NodeReboot {
                node: node.into(),
                stuck_until_power_cycle: false,
            }),
            NodeOperation::NodePowerCycle(t()),
            NodeOperation::NodePowerOff(t()),
            NodeOperation::NodeNetworkPartition(t()),
            NodeOperation::HungNfs(t()),
            NodeOperation::IoErrors(t()),
            NodeOperation::ApiErrors(ApiErrors {
                rate: 0.5,
                code: 500,
                verbs: vec![],
                resources: vec![],
            }),
            NodeOperation::ApiLatency(ApiLatency {
                latency: crate::duration::Dur::secs(2),
                verbs: vec![],
                resources: vec![],
            }),
        ]
    }

    /// `examples`, plus the variants whose facts differ from their key's example (a reboot
    /// stuck until power cycled): what conformance tests iterate over.
    pub fn all_cases(node: &str) -> Vec<NodeOperation> {
        let mut v = Self::examples(node);
        v.push(NodeOperation::NodeReboot(crate::ops::NodeReboot {
            node: node.into(),
            stuck_until_power_cycle: true,
        }));
        v
    }
}

impl RunnerOperation {
    /// How this operation is undone; None for one-shot operations.
    pub fn inverse(&self) -> Option<Inverse<RunnerOperation>> {
        use RunnerOperation as R;
        match self {
            R::Cordon(t) => Some(Inverse::Apply(R::Uncordon(t.clone()))),
            R::Drain(d) => Some(Inverse::Apply(R::Uncordon(NodeTarget {
                node: d.node.clone(),
            }))),
            // Start the controller again; remove the taint (only the one it added).
            R::ControllerCrash(_) | R::OutOfServiceTaint(_) => Some(Inverse::Revert),
            R::Uncordon(_) | R::DeletePod(_) => None,
        }
    }

    pub fn lifetime(&self) -> Lifetime {
        lifetime_of(self.inverse().is_some())
    }

    /// The runner does these itself, through the Kubernetes API or process control, whatever
    /// the cluster.
    pub fn support(&self, provider: Provider) -> Support {
        use RunnerOperation as R;
        let row = match self {
            R::Cordon(_)
            | R::Uncordon(_)
            | R::Drain(_)
            | R::OutOfServiceTaint(_)
            | R::DeletePod(_)
            | R::ControllerCrash(_) => (
                Support::Implemented,
                Support::Implemented,
                Support::Implemented,
            ),
        };
        pick(row, provider)
    }

    /// One example of every operation, in `KEYS` order.
    pub fn examples(node: &str) -> Vec<RunnerOperation> {
        use crate::ops::*;
        let t = || NodeTarget { node: node.into() };
        vec![
            RunnerOperation::Cordon(t()),
            RunnerOperation::Uncordon(t()),
            RunnerOperation::Drain(Drain {
                node: node.into(),
                force: false,
                timeout: None,
            }),
            RunnerOperation::OutOfServiceTaint(OutOfServiceTaint {
                node: node.into(),
                effect: TaintEffect::NoExecute,
                value: "nodeshutdown".into(),
            }),
            RunnerOperation::DeletePod(DeletePod {
                namespace: None,
                name: None,
                selector: Some("app=longhorn-csi-plugin".into()),
                node: Some(node.into()),
                force: false,
            }),
            RunnerOperation::ControllerCrash(ControllerCrash::default()),
        ]
    }
}

impl Operation {
    pub fn inverse(&self) -> Option<Inverse<Operation>> {
        match self {
            Operation::Node(n) => n.inverse().map(|i| i.map(Operation::Node)),
            Operation::Runner(r) => r.inverse().map(|i| i.map(Operation::Runner)),
        }
    }

    pub fn lifetime(&self) -> Lifetime {
        lifetime_of(self.inverse().is_some())
    }

    pub fn support(&self, provider: Provider) -> Support {
        match self {
            Operation::Node(n) => n.support(provider),
            Operation::Runner(r) => r.support(provider),
        }
    }

    /// Every node operation's example, then every runner operation's.
    pub fn examples(node: &str) -> Vec<Operation> {
        NodeOperation::examples(node)
            .into_iter()
            .map(Operation::Node)
            .chain(
                RunnerOperation::examples(node)
                    .into_iter()
                    .map(Operation::Runner),
            )
            .collect()
    }
}

/// One-shot exactly when there is no inverse: the two facts cannot disagree.
fn lifetime_of(has_inverse: bool) -> Lifetime {
    if has_inverse {
        Lifetime::Held
    } else {
        Lifetime::OneShot
    }
}

fn pick((sim, kind, existing): (Support, Support, Support), provider: Provider) -> Support {
    match provider {
        Provider::Sim => sim,
        Provider::Kind => kind,
        Provider::Existing => existing,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::OPERATION_KEYS;

    #[test]
    fn examples_cover_every_key_once_in_order_and_round_trip() {
        let keys: Vec<&str> = Operation::examples("w")
            .iter()
            .map(Operation::key)
            .collect();
        assert_eq!(keys, *OPERATION_KEYS);
        for op in Operation::examples("w") {
            let json = serde_json::to_value(&op).unwrap();
            assert_eq!(serde_json::from_value::<Operation>(json).unwrap(), op);
            let yaml = serde_yaml::to_string(&op).unwrap();
            assert!(!yaml.contains('!'), "YAML tags in {yaml}");
            assert_eq!(serde_yaml::from_str::<Operation>(&yaml).unwrap(), op);
        }
        for op in NodeOperation::all_cases("w") {
            let json = serde_json::to_value(&op).unwrap();
            assert_eq!(serde_json::from_value::<NodeOperation>(json).unwrap(), op);
        }
        for op in RunnerOperation::examples("w") {
            let json = serde_json::to_value(&op).unwrap();
            assert_eq!(serde_json::from_value::<RunnerOperation>(json).unwrap(), op);
        }
    }

    #[test]
    fn areas_agree_with_targets() {
        // An API operation targets no node; every other one does.
        for op in NodeOperation::all_cases("w") {
            assert_eq!(op.area() == Area::Api, op.node().is_none(), "{}", op.key());
        }
        let storage: Vec<&str> = NodeOperation::examples("w")
            .iter()
            .filter(|o| o.area() == Area::Storage)
            .map(NodeOperation::key)
            .collect();
        assert_eq!(
            storage,
            [
                "staleDeviceMount",
                "csiPluginDown",
                "csiPluginRestart",
                "csiDriverUnregistered",
                "kubeletWorkersSaturated",
                "hungNfs",
                "ioErrors"
            ]
        );
    }

    #[test]
    fn the_one_shot_operations() {
        let one_shot: Vec<&str> = Operation::examples("w")
            .iter()
            .filter(|o| o.lifetime() == Lifetime::OneShot)
            .map(Operation::key)
            .collect();
        assert_eq!(
            one_shot,
            [
                "csiPluginRestart",
                "kubeletRestart",
                "nodePowerCycle",
                "uncordon",
                "deletePod"
            ]
        );
    }

    /// A heal that is itself an operation needs no heal, and acts where the fault did.
    #[test]
    fn an_inverse_operation_is_one_shot_on_the_same_node() {
        let mut cases: Vec<Operation> = NodeOperation::all_cases("w")
            .into_iter()
            .map(Operation::Node)
            .collect();
        cases.extend(
            RunnerOperation::examples("w")
                .into_iter()
                .map(Operation::Runner),
        );
        let mut applied = 0;
        for op in cases {
            if let Some(Inverse::Apply(by)) = op.inverse() {
                assert_eq!(
                    by.lifetime(),
                    Lifetime::OneShot,
                    "{} heals {}",
                    by.key(),
                    op.key()
                );
                assert_eq!(by.node(), op.node(), "{}", op.key());
                applied += 1;
            }
        }
        assert_eq!(applied, 3, "cordon, drain, the stuck reboot");
    }

    #[test]
    fn api_faults_are_the_sim_only_operations_and_every_refusal_says_why() {
        for op in NodeOperation::all_cases("w") {
            let sim_only = matches!(
                op,
                NodeOperation::ApiErrors(_) | NodeOperation::ApiLatency(_)
            );
            assert_eq!(
                op.support(Provider::Sim),
                Support::Implemented,
                "{}",
                op.key()
            );
            assert_eq!(
                op.support(Provider::Kind) != Support::Implemented,
                sim_only,
                "{}",
                op.key()
            );
            for p in Provider::ALL {
                if let Support::Unsupported(why) = op.support(p) {
                    assert!(why.len() > 20, "{} on {p}: {why}", op.key());
                }
            }
        }
        let refused: Vec<&str> = NodeOperation::examples("w")
            .iter()
            .filter(|o| o.support(Provider::Existing) != Support::Implemented)
            .map(NodeOperation::key)
            .collect();
        assert_eq!(
            refused,
            [
                "kubeletStop",
                "kubeletHang",
                "nodePowerCycle",
                "nodePowerOff",
                "nodeNetworkPartition",
                "apiErrors",
                "apiLatency"
            ]
        );
    }

    #[test]
    fn one_operation_reads_from_json_with_its_aliases() {
        let read = |v: serde_json::Value| serde_json::from_value::<NodeOperation>(v);
        let op = read(serde_json::json!({"reboot": {"node": "w"}})).unwrap();
        assert_eq!(op.key(), "nodeReboot");
        assert_eq!(op.node(), Some("w"));
        let op = read(serde_json::json!({"powerCycle": {"node": "w"}})).unwrap();
        assert_eq!(op.key(), "nodePowerCycle");
        // Older journals have no heldBy.
        let op = read(
            serde_json::json!({"staleDeviceMount": {"node": "w", "volume": {"pvc": "ns/data"}}}),
        )
        .unwrap();
        assert!(
            matches!(op, NodeOperation::StaleDeviceMount(s) if s.held_by == crate::ops::MountHolder::Kubelet)
        );
        let e = read(serde_json::json!({"meteorStrike": {"node": "w"}}))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("meteorStrike") && e.contains("staleDeviceMount"),
            "{e}"
        );
        let e = read(serde_json::json!({"kubeletStop": {"node": "w"}, "hungNfs": {"node": "w"}}))
            .unwrap_err()
            .to_string();
        assert!(e.contains("two operations"), "{e}");
        assert!(read(serde_json::json!({})).is_err());
        // A runner operation is not a node operation.
        assert!(read(serde_json::json!({"cordon": {"node": "w"}})).is_err());
    }

    #[test]
    fn descriptions_come_from_the_catalog() {
        for op in Operation::examples("w") {
            assert!(!op.description().is_empty(), "{}", op.key());
        }
        let mut gen = schemars::SchemaGenerator::default();
        let entries = Operation::schema_entries(&mut gen);
        let reboot = entries.iter().find(|e| e.0 == "reboot").unwrap();
        assert!(
            reboot.2.starts_with("Alias of `nodeReboot`."),
            "{}",
            reboot.2
        );
    }
}
