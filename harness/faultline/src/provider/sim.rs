//! The sim provider: a `faultline_sim::SimServer` in-process per scenario - the whole simulated
//! cluster (scheduler, kubelets, Longhorn) unless `spec.cluster.sim.apiOnly` - and its node
//! operations mapped onto the sim's node primitives (`SimCluster::node_op`) and API faults by
//! [`effect`], the one mapping from the fault catalogue to the sim.

use super::fake::FakeNodeOps;
use super::*;
use crate::model::ops::VolumeRef;
use crate::model::Storage;
use faultline_faults::{Inverse, Phase, Provider as CatalogProvider, Support};
use faultline_sim::cluster::nodeops::NodeOp;
use faultline_sim::http::faults::{ApiFault, ApiFaultKind, ApiFaults};
use faultline_sim::{ClusterOptions, SimCluster as SimNodes, SimOptions, SimServer, Timing};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::path::PathBuf;

pub struct SimProvider {
    /// Tests: these node operations for every cluster instead of the sim's (the API then runs
    /// alone, since the fake replaces the nodes' behaviour).
    node_ops: Option<Arc<dyn NodeOps>>,
}

impl SimProvider {
    pub fn new() -> SimProvider {
        SimProvider { node_ops: None }
    }
    /// Reads the test-only `FAULTLINE_TEST_NODE_OPS` (see `fake::FakeConfig::from_env`).
    pub fn from_env() -> anyhow::Result<SimProvider> {
        let node_ops = super::fake::FakeConfig::from_env()?
            .map(|cfg| Arc::new(FakeNodeOps::new(cfg)) as Arc<dyn NodeOps>);
        Ok(SimProvider { node_ops })
    }
    pub fn with_node_ops(node_ops: Arc<dyn NodeOps>) -> SimProvider {
        SimProvider {
            node_ops: Some(node_ops),
        }
    }
}

impl Default for SimProvider {
    fn default() -> Self {
        Self::new()
    }
}

impl Provider for SimProvider {
    fn name(&self) -> &'static str {
        "sim"
    }
    fn start<'a>(
        &'a self,
        spec: &'a ClusterSpec,
    ) -> BoxFuture<'a, anyhow::Result<Box<dyn Cluster>>> {
        Box::pin(async move {
            let api_only = spec.sim.api_only || self.node_ops.is_some();
            let opts = if api_only {
                let workers: Vec<String> = spec
                    .nodes
                    .iter()
                    .filter(|n| n.role == crate::model::NodeRole::Worker)
                    .map(|n| n.name.clone())
                    .collect();
                SimOptions {
                    nodes: workers,
                    seed: spec.seed,
                    ..Default::default()
                }
            } else {
                let cluster = ClusterOptions {
                    timing: Timing::scaled(spec.sim.time_scale),
                    longhorn: spec.storage != Some(Storage::None),
                    ..Default::default()
                };
                SimOptions {
                    nodes: spec.nodes.iter().map(|n| n.name.clone()).collect(),
                    cluster: Some(cluster),
                    seed: spec.seed,
                    ..Default::default()
                }
            };
            let server = SimServer::start(opts).await?;
            std::fs::create_dir_all(&spec.workdir)?;
            let kubeconfig = server.write_kubeconfig(&spec.workdir.join("kubeconfig"))?;
            let node_ops: Arc<dyn NodeOps> = match &self.node_ops {
                Some(ops) => ops.clone(),
                None => Arc::new(SimNodeOps::new(
                    server.cluster.clone(),
                    server.faults.clone(),
                    server.api.clone(),
                )),
            };
            Ok(Box::new(SimCluster {
                server: Some(server),
                kubeconfig,
                node_ops,
            }) as Box<dyn Cluster>)
        })
    }
}

pub struct SimCluster {
    server: Option<SimServer>,
    kubeconfig: PathBuf,
    node_ops: Arc<dyn NodeOps>,
}

impl Cluster for SimCluster {
    fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }
    fn node_ops(&self) -> Arc<dyn NodeOps> {
        self.node_ops.clone()
    }
    fn controller_mode(&self) -> ControllerMode {
        ControllerMode::HostProcess
    }
    fn teardown(
        mut self: Box<Self>,
        keep: bool,
    ) -> BoxFuture<'static, anyhow::Result<Option<KeptCluster>>> {
        let server = self.server.take();
        let kubeconfig = self.kubeconfig.clone();
        Box::pin(async move {
            let Some(server) = server else {
                return Ok(None);
            };
            if keep {
                let description = format!(
                    "sim cluster at {} (KUBECONFIG={})",
                    server.url(),
                    kubeconfig.display()
                );
                return Ok(Some(KeptCluster {
                    description,
                    guard: Some(Box::new(server)),
                }));
            }
            server.stop().await;
            Ok(None)
        })
    }
}

/// Node operations of the simulated cluster: each maps to a sim node primitive and its inverse.
pub struct SimNodeOps {
    nodes: Option<Arc<SimNodes>>,
    api_faults: ApiFaults,
    api: Arc<faultline_sim::ApiServer>,
    /// apiErrors/apiLatency faults injected, by their JSON, for healing.
    api_fault_ids: Mutex<HashMap<String, Vec<u64>>>,
}

impl SimNodeOps {
    pub fn new(
        nodes: Option<Arc<SimNodes>>,
        api_faults: ApiFaults,
        api: Arc<faultline_sim::ApiServer>,
    ) -> SimNodeOps {
        SimNodeOps {
            nodes,
            api_faults,
            api,
            api_fault_ids: Mutex::new(HashMap::new()),
        }
    }

    fn nodes(&self, op: &NodeOperation) -> anyhow::Result<&Arc<SimNodes>> {
        self.nodes.as_ref().ok_or_else(|| anyhow::anyhow!("`{}` needs the simulated nodes, but this cluster serves the API only (spec.cluster.sim.apiOnly)", op.key()))
    }

    /// The PersistentVolume behind a volume reference, and whether it is gone from the API.
    fn pv(&self, v: &VolumeRef) -> anyhow::Result<(String, bool)> {
        match v {
            VolumeRef::Pv(p) => Ok((p.clone(), false)),
            VolumeRef::DeletedPv(p) => Ok((p.clone(), true)),
            VolumeRef::Pvc(c) => {
                let (ns, name) = c.split_once('/').unwrap_or(("default", c));
                let rt = self
                    .api
                    .resource("", "v1", "persistentvolumeclaims")
                    .map_err(|e| anyhow::anyhow!("{e}"))?;
                let pvc = self
                    .api
                    .get(&rt, ns, name)
                    .map_err(|e| anyhow::anyhow!("PVC {ns}/{name}: {e}"))?;
                let pv = pvc
                    .pointer("/spec/volumeName")
                    .and_then(|v| v.as_str())
                    .filter(|v| !v.is_empty())
                    .ok_or_else(|| {
                        anyhow::anyhow!("PVC {ns}/{name} is not bound to a volume yet")
                    })?;
                Ok((pv.to_string(), false))
            }
        }
    }

    /// API faults are kept by the operation's JSON, so that its heal finds them.
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

    fn run(&self, op: &NodeOperation, phase: Phase) -> anyhow::Result<()> {
        check_supported(op)?;
        let pv = op.volume().map(|v| self.pv(v)).transpose()?;
        let prims = match effect(op, phase, pv) {
            Effect::Api(fault) => {
                self.api_fault(op, phase, fault);
                return Ok(());
            }
            Effect::Node(prims) => prims,
        };
        if prims.is_empty() {
            return Ok(());
        }
        if phase == Phase::Heal && self.nodes.is_none() {
            return Ok(()); // nothing can have been applied
        }
        let nodes = self.nodes(op)?;
        let node = op.node().unwrap_or_default();
        for p in prims {
            nodes
                .node_op(node, &p)
                .map_err(|e| anyhow::anyhow!("{} on {node}: {e}", op.key()))?;
        }
        Ok(())
    }
}

/// A refusal the catalogue declares for the sim (none today); `effect` would have nothing to do.
pub fn check_supported(op: &NodeOperation) -> anyhow::Result<()> {
    match op.support(CatalogProvider::Sim) {
        Support::Implemented => Ok(()),
        Support::Unsupported(why) => {
            anyhow::bail!("`{}` is unsupported by the sim: {why}", op.key())
        }
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
                blocks_queue: s.blocks_queue,
            }])
        }
        N::CsiPluginDown(_) => Effect::Node(vec![NodeOp::CsiPluginDown]),
        N::CsiPluginRestart(_) => Effect::Node(vec![NodeOp::CsiPluginRestart]),
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
        N::NodeNetworkPartition(_) => Effect::Node(vec![NodeOp::PartitionNetwork]),
        N::HungNfs(_) => Effect::Node(vec![NodeOp::HungNfs]),
        N::IoErrors(_) => Effect::Node(vec![NodeOp::IoErrors]),
        N::ApiErrors(a) => Effect::Api(ApiFault {
            kind: ApiFaultKind::Errors {
                rate: a.rate,
                code: a.code,
            },
            verbs: a.verbs.clone(),
            resources: a.resources.clone(),
        }),
        N::ApiLatency(l) => Effect::Api(ApiFault {
            kind: ApiFaultKind::Latency(l.latency.get()),
            verbs: l.verbs.clone(),
            resources: l.resources.clone(),
        }),
    }
}

impl NodeOps for SimNodeOps {
    fn apply<'a>(&'a self, op: &'a NodeOperation) -> BoxFuture<'a, anyhow::Result<()>> {
        Box::pin(async move { self.run(op, Phase::Inject) })
    }
    fn heal<'a>(&'a self, op: &'a NodeOperation) -> BoxFuture<'a, anyhow::Result<()>> {
        Box::pin(async move { self.run(op, Phase::Heal) })
    }
    fn subscribe_logs(
        &self,
        node: Option<&str>,
        source: LogSource,
    ) -> broadcast::Receiver<LogLine> {
        let (tx, rx) = broadcast::channel(4096);
        let Some(nodes) = &self.nodes else { return rx };
        for (name, n) in &nodes.nodes {
            if node.is_some_and(|want| want != name) {
                continue;
            }
            let mut src = match source {
                LogSource::CsiPlugin => n.csi_log.subscribe(),
                LogSource::Kubelet => n.kubelet_log.subscribe(),
                LogSource::Controller => continue,
            };
            let (tx, name) = (tx.clone(), name.clone());
            tokio::spawn(async move {
                loop {
                    match src.recv().await {
                        Ok(text) => {
                            if tx
                                .send(LogLine {
                                    source,
                                    node: Some(name.clone()),
                                    text,
                                })
                                .is_err()
                            {
                                return; // nobody listens any more
                            }
                        }
                        // Said in the log itself, so a saved log that misses lines shows it.
                        Err(broadcast::error::RecvError::Lagged(n)) => {
                            let _ = tx.send(LogLine {
                                source,
                                node: Some(name.clone()),
                                text: format!("faultline: {n} log lines lost (reader lagged)"),
                            });
                        }
                        Err(broadcast::error::RecvError::Closed) => return,
                    }
                }
            });
        }
        rx
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use faultline_faults::Lifetime;

    fn op(src: &str) -> NodeOperation {
        match serde_yaml::from_str::<crate::model::Operation>(src).unwrap() {
            crate::model::Operation::Node(n) => n,
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
            match op.support(CatalogProvider::Sim) {
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
    fn a_stale_mount_blocks_only_its_volume_unless_told_otherwise() {
        let pv = Some(("pvc-1".to_string(), true));
        let blocks = |e: Effect| match e {
            Effect::Node(ops) => match &ops[..] {
                [NodeOp::StaleDeviceMount {
                    blocks_queue,
                    holder,
                    ..
                }] => (*blocks_queue, *holder),
                other => panic!("{other:?}"),
            },
            other => panic!("{other:?}"),
        };
        let default = blocks(effect(
            &op("staleDeviceMount: {node: w, volume: {deletedPV: pvc-1}}"),
            Phase::Inject,
            pv.clone(),
        ));
        // The faithful default: nestedpendingoperations blocks the same volume only.
        assert_eq!(default, (false, crate::model::ops::MountHolder::Kubelet));
        // The RCA's node-wide block is an explicit option.
        let node_wide = blocks(effect(&op("staleDeviceMount: {node: w, volume: {deletedPV: pvc-1}, heldBy: external, blocksQueue: true}"), Phase::Inject, pv));
        assert_eq!(node_wide, (true, crate::model::ops::MountHolder::External));
    }
}
