//! The kind provider: the runner's `Provider`/`Cluster`/`NodeOps` over `faultline-kind`
//! (kindest/node containers through testcontainers, Longhorn, faults via `docker exec`), and the
//! `--dry-run` report that shows every container spec and command without a Docker engine.

use super::*;
use crate::model::{NodeOperation, NodeRole, Operation, Step};
use faultline_kind::{ClusterPlanInput, FaultOp, KindOptions, KindProvider as Inner, NodeInput, Role};

/// The runner's node operations in faultline-kind's terms (same keys and fields).
pub fn fault_op(op: &NodeOperation) -> anyhow::Result<FaultOp> {
    FaultOp::from_runner_json(serde_json::to_value(op)?)
}

pub fn plan_input(spec: &ClusterSpec) -> ClusterPlanInput {
    let nodes = spec
        .nodes
        .iter()
        .map(|n| NodeInput { name: n.name.clone(), role: if n.role == NodeRole::ControlPlane { Role::ControlPlane } else { Role::Worker } })
        .collect();
    ClusterPlanInput::new(&faultline_kind::input::sanitize_cluster_name(&spec.name), nodes)
        .with_longhorn(spec.storage != Some(crate::model::Storage::None))
        .with_env_from(|k| std::env::var(k).ok())
}

pub struct KindProvider {
    inner: Arc<Inner>,
}

impl KindProvider {
    pub fn new() -> KindProvider {
        // Clusters are reused across the scenarios of a run.
        KindProvider { inner: Arc::new(Inner::new(KindOptions { reuse: true })) }
    }
}

impl Default for KindProvider {
    fn default() -> Self {
        Self::new()
    }
}

impl Provider for KindProvider {
    fn name(&self) -> &'static str {
        "kind"
    }
    fn start<'a>(&'a self, spec: &'a ClusterSpec) -> BoxFuture<'a, anyhow::Result<Box<dyn Cluster>>> {
        Box::pin(async move {
            let input = plan_input(spec);
            std::fs::create_dir_all(&spec.workdir)?;
            let cluster = self.inner.start(&input, &spec.workdir).await?;
            let kubeconfig = cluster.kubeconfig().to_path_buf();
            let ops = Arc::new(KindNodeOps { cluster: tokio::sync::Mutex::new(Some(cluster)) });
            Ok(Box::new(KindClusterHandle { kubeconfig, ops }) as Box<dyn Cluster>)
        })
    }
}

struct KindNodeOps {
    cluster: tokio::sync::Mutex<Option<faultline_kind::KindCluster>>,
}

impl NodeOps for KindNodeOps {
    fn apply<'a>(&'a self, op: &'a NodeOperation) -> BoxFuture<'a, anyhow::Result<()>> {
        Box::pin(async move {
            let g = self.cluster.lock().await;
            let c = g.as_ref().ok_or_else(|| anyhow::anyhow!("kind cluster already released"))?;
            c.apply(&fault_op(op)?).await
        })
    }
    fn heal<'a>(&'a self, op: &'a NodeOperation) -> BoxFuture<'a, anyhow::Result<()>> {
        Box::pin(async move {
            let g = self.cluster.lock().await;
            match g.as_ref() {
                Some(c) => c.heal(&fault_op(op)?).await,
                None => Ok(()),
            }
        })
    }
    fn subscribe_logs(&self, node: Option<&str>, source: LogSource) -> broadcast::Receiver<LogLine> {
        let (tx, rx) = broadcast::channel(4096);
        let kind_source = match source {
            LogSource::CsiPlugin => faultline_kind::LogSource::CsiPlugin,
            _ => faultline_kind::LogSource::Kubelet,
        };
        if let Ok(g) = self.cluster.try_lock() {
            if let Some(c) = g.as_ref() {
                let mut inner = c.subscribe_logs(node, kind_source);
                tokio::spawn(async move {
                    while let Ok(l) = inner.recv().await {
                        if tx.send(LogLine { source, node: Some(l.node), text: l.text }).is_err() {
                            break;
                        }
                    }
                });
            }
        }
        rx
    }
}

struct KindClusterHandle {
    kubeconfig: std::path::PathBuf,
    ops: Arc<KindNodeOps>,
}

impl Cluster for KindClusterHandle {
    fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }
    fn node_ops(&self) -> Arc<dyn NodeOps> {
        self.ops.clone()
    }
    fn controller_mode(&self) -> ControllerMode {
        ControllerMode::InCluster
    }
    fn teardown(self: Box<Self>, keep: bool) -> BoxFuture<'static, anyhow::Result<Option<KeptCluster>>> {
        let ops = self.ops.clone();
        Box::pin(async move {
            let Some(c) = ops.cluster.lock().await.take() else { return Ok(None) };
            Ok(c.release(keep).await?.map(|description| KeptCluster { description, guard: None }))
        })
    }
}

/// Every node operation a scenario's steps use (faults and remediations, nested ones included).
pub fn node_operations(steps: &[Step]) -> Vec<NodeOperation> {
    let mut out = vec![];
    for s in steps {
        if let Some(f) = &s.fault {
            if let Operation::Node(n) = &f.op {
                out.push(n.clone());
            }
        }
        if let Some(Operation::Node(n)) = &s.remediate {
            out.push(n.clone());
        }
        for nested in [&s.try_steps, &s.catch, &s.finally].into_iter().flatten() {
            out.extend(node_operations(nested));
        }
    }
    out
}

/// `faultline run --provider kind --dry-run`: the exact container specs and commands, per scenario.
pub fn dry_run(spec: &ClusterSpec, steps: &[Step]) -> anyhow::Result<String> {
    let ops: Vec<FaultOp> = node_operations(steps).iter().map(fault_op).collect::<anyhow::Result<_>>()?;
    faultline_kind::dry_run_report_blocking(&plan_input(spec), &ops)
}
