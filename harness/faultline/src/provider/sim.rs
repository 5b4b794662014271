//! The sim provider: a `faultline_sim::SimServer` in-process per scenario - the whole simulated
//! cluster (scheduler, kubelets, Longhorn) unless `spec.cluster.sim.apiOnly` - and its node
//! operations mapped onto the sim's node primitives (`SimCluster::node_op`) and API faults.

use super::fake::FakeNodeOps;
use super::*;
use crate::model::ops::VolumeRef;
use crate::model::Storage;
use faultline_sim::cluster::nodeops::{Holder, NodeOp};
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

    fn api_fault(&self, op: &NodeOperation, heal: bool) -> bool {
        let (kind, verbs, resources) = match op {
            NodeOperation::ApiErrors(a) => (
                ApiFaultKind::Errors {
                    rate: a.rate,
                    code: a.code,
                },
                &a.verbs,
                &a.resources,
            ),
            NodeOperation::ApiLatency(l) => (
                ApiFaultKind::Latency(l.latency.get()),
                &l.verbs,
                &l.resources,
            ),
            _ => return false,
        };
        let key = serde_json::to_string(op).unwrap_or_default();
        if heal {
            for id in self.api_fault_ids.lock().remove(&key).unwrap_or_default() {
                self.api_faults.remove(id);
            }
        } else {
            let id = self.api_faults.add(ApiFault {
                kind,
                verbs: verbs.clone(),
                resources: resources.clone(),
            });
            self.api_fault_ids.lock().entry(key).or_default().push(id);
        }
        true
    }

    fn run(&self, op: &NodeOperation, heal: bool) -> anyhow::Result<()> {
        if self.api_fault(op, heal) {
            return Ok(());
        }
        let pv = op.volume().map(|v| self.pv(v)).transpose()?;
        let prims = primitives(op, heal, pv);
        if prims.is_empty() {
            return Ok(());
        }
        if heal && self.nodes.is_none() {
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

/// The sim node primitives that inject `op` (`heal == false`) or undo it; `pv` is the resolved
/// PersistentVolume of a volume operation (and whether it is gone from the API). Shared by the
/// in-process cluster and a remote `faultline sim up` (`sim_remote`).
pub fn primitives(op: &NodeOperation, heal: bool, pv: Option<(String, bool)>) -> Vec<NodeOp> {
    use NodeOperation as N;
    match (op, heal) {
        (N::StaleDeviceMount(s), false) => {
            let (pv, deleted_pv) = pv.unwrap_or_default();
            let holder = match s.held_by {
                crate::model::ops::MountHolder::Kubelet => Holder::Kubelet,
                crate::model::ops::MountHolder::CsiPlugin => Holder::CsiPlugin,
                crate::model::ops::MountHolder::External => Holder::External,
            };
            vec![NodeOp::StaleDeviceMount {
                pv,
                deleted_pv,
                holder,
                blocks_queue: s.blocks_queue,
            }]
        }
        (N::StaleDeviceMount(_), true) => vec![NodeOp::ClearStaleDeviceMount {
            pv: pv.unwrap_or_default().0,
        }],
        (N::CsiPluginDown(_), false) => vec![NodeOp::CsiPluginDown],
        (N::CsiPluginDown(_), true) => vec![NodeOp::CsiPluginUp],
        (N::CsiPluginRestart(_), false) => vec![NodeOp::CsiPluginRestart],
        (N::KubeletWorkersSaturated(k), false) => vec![NodeOp::SaturateWorkers {
            count: Some(k.stale_pods as usize),
            namespace: "snapshots".into(),
        }],
        (N::KubeletWorkersSaturated(_), true) => vec![NodeOp::ClearStalePods {
            namespace: "snapshots".into(),
        }],
        (N::KubeletStop(_), false) => vec![NodeOp::KubeletStop],
        (N::KubeletHang(_), false) => vec![NodeOp::KubeletHang],
        (N::KubeletStop(_) | N::KubeletHang(_), true) => vec![NodeOp::KubeletStart],
        (N::KubeletRestart(_), false) => vec![NodeOp::KubeletRestart],
        (N::ProberManagerBroken(_), false) => vec![NodeOp::ProberBroken],
        (N::ProberManagerBroken(_), true) => vec![NodeOp::ProberFixed],
        // Stuck in Rebooting: the sim keeps a node there while NFS hangs.
        (N::NodeReboot(r), false) if r.stuck_until_power_cycle => {
            vec![NodeOp::HungNfs, NodeOp::Reboot]
        }
        (N::NodeReboot(_), false) => vec![NodeOp::Reboot],
        (N::NodeReboot(r), true) if r.stuck_until_power_cycle => vec![NodeOp::PowerCycle],
        (N::NodePowerCycle(_), false) => vec![NodeOp::PowerCycle],
        (N::NodeNetworkPartition(_), false) => vec![NodeOp::PartitionNetwork],
        (N::NodeNetworkPartition(_), true) => vec![NodeOp::HealNetwork],
        (N::HungNfs(_), false) => vec![NodeOp::HungNfs],
        (N::HungNfs(_), true) => vec![NodeOp::ClearHungNfs],
        (N::IoErrors(_), false) => vec![NodeOp::IoErrors],
        (N::IoErrors(_), true) => vec![NodeOp::ClearIoErrors],
        // One-shot operations, a reboot that comes back by itself, API faults: nothing here.
        _ => vec![],
    }
}

impl NodeOps for SimNodeOps {
    fn apply<'a>(&'a self, op: &'a NodeOperation) -> BoxFuture<'a, anyhow::Result<()>> {
        Box::pin(async move { self.run(op, false) })
    }
    fn heal<'a>(&'a self, op: &'a NodeOperation) -> BoxFuture<'a, anyhow::Result<()>> {
        Box::pin(async move { self.run(op, true) })
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

    #[test]
    fn a_stale_mount_blocks_only_its_volume_unless_told_otherwise() {
        let op = |src: &str| match serde_yaml::from_str::<crate::model::Operation>(src).unwrap() {
            crate::model::Operation::Node(n) => n,
            other => panic!("{other:?}"),
        };
        let pv = Some(("pvc-1".to_string(), true));
        let blocks = |ops: Vec<NodeOp>| match &ops[..] {
            [NodeOp::StaleDeviceMount {
                blocks_queue,
                holder,
                ..
            }] => (*blocks_queue, *holder),
            other => panic!("{other:?}"),
        };
        let default = blocks(primitives(
            &op("staleDeviceMount: {node: w, volume: {deletedPV: pvc-1}}"),
            false,
            pv.clone(),
        ));
        // The faithful default: nestedpendingoperations blocks the same volume only.
        assert_eq!(default, (false, Holder::Kubelet));
        // The RCA's node-wide block is an explicit option.
        let node_wide = blocks(primitives(&op("staleDeviceMount: {node: w, volume: {deletedPV: pvc-1}, heldBy: external, blocksQueue: true}"), false, pv));
        assert_eq!(node_wide, (true, Holder::External));
    }
}
