//! The sim provider: a `faultline_sim::SimServer` in-process per scenario.

use super::fake::FakeNodeOps;
use super::*;
use crate::model::NodeRole;
use faultline_sim::{SimOptions, SimServer};
use std::path::PathBuf;

pub struct SimProvider {
    /// Tests: these node operations for every cluster instead of the sim's.
    node_ops: Option<Arc<dyn NodeOps>>,
}

impl SimProvider {
    pub fn new() -> SimProvider {
        SimProvider { node_ops: None }
    }
    /// Reads the test-only `FAULTLINE_TEST_NODE_OPS` (see `fake::FakeConfig::from_env`).
    pub fn from_env() -> anyhow::Result<SimProvider> {
        let node_ops = super::fake::FakeConfig::from_env()?.map(|cfg| Arc::new(FakeNodeOps::new(cfg)) as Arc<dyn NodeOps>);
        Ok(SimProvider { node_ops })
    }
    pub fn with_node_ops(node_ops: Arc<dyn NodeOps>) -> SimProvider {
        SimProvider { node_ops: Some(node_ops) }
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
    fn start<'a>(&'a self, spec: &'a ClusterSpec) -> BoxFuture<'a, anyhow::Result<Box<dyn Cluster>>> {
        Box::pin(async move {
            let workers: Vec<String> = spec.nodes.iter().filter(|n| n.role == NodeRole::Worker).map(|n| n.name.clone()).collect();
            let server = SimServer::start(SimOptions { nodes: workers, ..Default::default() }).await?;
            std::fs::create_dir_all(&spec.workdir)?;
            let kubeconfig = server.write_kubeconfig(&spec.workdir.join("kubeconfig"))?;
            let node_ops: Arc<dyn NodeOps> = match &self.node_ops {
                Some(ops) => ops.clone(),
                None => Arc::new(SimNodeOps::new()),
            };
            Ok(Box::new(SimCluster { server: Some(server), kubeconfig, node_ops }) as Box<dyn Cluster>)
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
    fn teardown(mut self: Box<Self>, keep: bool) -> BoxFuture<'static, anyhow::Result<Option<KeptCluster>>> {
        let server = self.server.take();
        let kubeconfig = self.kubeconfig.clone();
        Box::pin(async move {
            let Some(server) = server else { return Ok(None) };
            if keep {
                let description = format!("sim cluster at {} (KUBECONFIG={})", server.url(), kubeconfig.display());
                return Ok(Some(KeptCluster { description, guard: Some(Box::new(server)) }));
            }
            server.stop().await;
            Ok(None)
        })
    }
}

/// Node operations of the simulated cluster. The node simulation (kubelets, CSI) is issue 3;
/// until it lands every node operation is refused with a clear error.
pub struct SimNodeOps {
    kubelet: broadcast::Sender<LogLine>,
    csi: broadcast::Sender<LogLine>,
}

impl SimNodeOps {
    pub fn new() -> SimNodeOps {
        SimNodeOps { kubelet: broadcast::channel(1024).0, csi: broadcast::channel(1024).0 }
    }
}

impl Default for SimNodeOps {
    fn default() -> Self {
        Self::new()
    }
}

impl NodeOps for SimNodeOps {
    fn apply<'a>(&'a self, op: &'a NodeOperation) -> BoxFuture<'a, anyhow::Result<()>> {
        Box::pin(async move { anyhow::bail!("`{}` is unsupported on sim until the node simulation lands (issue 3)", op.key()) })
    }
    fn heal<'a>(&'a self, _op: &'a NodeOperation) -> BoxFuture<'a, anyhow::Result<()>> {
        // Nothing can have been applied.
        Box::pin(async { Ok(()) })
    }
    fn subscribe_logs(&self, _node: Option<&str>, source: LogSource) -> broadcast::Receiver<LogLine> {
        match source {
            LogSource::CsiPlugin => self.csi.subscribe(),
            _ => self.kubelet.subscribe(),
        }
    }
}
