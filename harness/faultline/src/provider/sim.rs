//! The sim provider: a `faultline_sim::SimServer` in-process per scenario - the whole simulated
//! cluster (scheduler, kubelets, Longhorn) unless `spec.cluster.sim.apiOnly` - and its node
//! operations carried out by the sim's own `cluster::faults::FaultApplier`, the one mapping from
//! the fault catalogue to the sim's node primitives and API faults.

use super::fake::FakeNodeOps;
use super::*;
use crate::model::Storage;
use faultline_faults::Phase;
use faultline_sim::cluster::faults::FaultApplier;
use faultline_sim::{ClusterOptions, SimOptions, SimServer, Timing};
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
            Ok(Box::new(SimProviderCluster {
                server: Some(server),
                kubeconfig,
                node_ops,
            }) as Box<dyn Cluster>)
        })
    }
}

/// A scenario's simulated cluster as the runner holds it (the server, its kubeconfig, its node
/// operations); the cluster itself is `faultline_sim::SimCluster`.
pub struct SimProviderCluster {
    server: Option<SimServer>,
    kubeconfig: PathBuf,
    node_ops: Arc<dyn NodeOps>,
}

/// The sim's one clock: freezing it stops the whole simulated cluster.
impl Freeze for faultline_sim::timing::SimClock {
    fn freeze(&self) -> BoxFuture<'_, ()> {
        Box::pin(faultline_sim::timing::SimClock::freeze(self))
    }
    fn thaw(&self) {
        faultline_sim::timing::SimClock::thaw(self)
    }
    fn now(&self) -> chrono::DateTime<chrono::Utc> {
        faultline_sim::timing::SimClock::now(self)
    }
}

impl Cluster for SimProviderCluster {
    fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }
    fn freezer(&self) -> Option<Arc<dyn Freeze>> {
        self.server
            .as_ref()
            .map(|s| Arc::new(s.clock().clone()) as Arc<dyn Freeze>)
    }
    fn node_ops(&self) -> Arc<dyn NodeOps> {
        self.node_ops.clone()
    }
    fn controller_mode(&self) -> ControllerMode {
        ControllerMode::HostProcess
    }
    fn tracer(&self) -> Option<faultline_sim::http::trace::Tracer> {
        self.server.as_ref().map(|s| s.trace.clone())
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

/// Node operations of the simulated cluster: the sim's `FaultApplier`, and its nodes' logs.
pub struct SimNodeOps {
    faults: FaultApplier,
}

impl SimNodeOps {
    pub fn new(
        nodes: Option<Arc<faultline_sim::SimCluster>>,
        api_faults: faultline_sim::http::faults::ApiFaults,
        api: Arc<faultline_sim::ApiServer>,
    ) -> SimNodeOps {
        SimNodeOps {
            faults: FaultApplier::new(nodes, api, api_faults),
        }
    }
}

impl NodeOps for SimNodeOps {
    fn apply<'a>(&'a self, op: &'a NodeOperation) -> BoxFuture<'a, anyhow::Result<()>> {
        Box::pin(async move { Ok(self.faults.apply(op, Phase::Inject)?) })
    }
    fn heal<'a>(&'a self, op: &'a NodeOperation) -> BoxFuture<'a, anyhow::Result<()>> {
        Box::pin(async move { Ok(self.faults.apply(op, Phase::Heal)?) })
    }
    fn subscribe_logs(
        &self,
        node: Option<&str>,
        source: LogSource,
    ) -> broadcast::Receiver<LogLine> {
        let (tx, rx) = broadcast::channel(4096);
        let Some(nodes) = self.faults.nodes() else {
            return rx;
        };
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
