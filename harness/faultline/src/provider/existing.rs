//! The existing provider: a real cluster from a kubeconfig context that the suite allow-lists.
//! Faults go through `faultline-kind::existing` (a privileged node agent where a fault needs the
//! node; refused with the reason where it cannot be done safely). The controller under test runs
//! as a host process against the context. A `faultline sim up` cluster is recognised by its
//! control endpoint; its node faults then go through that endpoint (`sim_remote`). A traced
//! controller (explore, `perturb:`) reaches the cluster through the API proxy (`proxy.rs`).

use super::*;
use crate::model::NodeOperation;
use faultline_kind::existing::{ExistingCluster, ExistingInput};

pub struct ExistingProvider {
    pub allowed: Vec<String>,
    pub context: Option<String>,
}

impl Provider for ExistingProvider {
    fn name(&self) -> &'static str {
        "existing"
    }
    fn clusters_outlive_harness(&self) -> bool {
        true
    }
    fn start<'a>(
        &'a self,
        spec: &'a ClusterSpec,
    ) -> BoxFuture<'a, anyhow::Result<Box<dyn Cluster>>> {
        Box::pin(async move {
            let mut input = ExistingInput::new(self.allowed.clone());
            input.context = self.context.clone();
            input.longhorn = spec.storage != Some(crate::model::Storage::None);
            let cluster = ExistingCluster::connect(&input)?;
            // The runner and the controller use this file: the allow-listed context, made current.
            std::fs::create_dir_all(&spec.workdir)?;
            let raw = std::fs::read_to_string(&cluster.kubeconfig)?;
            let mut doc: serde_yaml::Value = serde_yaml::from_str(&raw)?;
            doc["current-context"] = serde_yaml::Value::String(cluster.context.clone());
            let kubeconfig = spec.workdir.join("kubeconfig");
            std::fs::write(&kubeconfig, serde_yaml::to_string(&doc)?)?;
            let client = crate::k8s::client_from_kubeconfig(&kubeconfig).await?;
            let ops = Arc::new(ExistingOps {
                cluster,
                logs: broadcast::channel(16).0,
            });
            let node_ops: Arc<dyn NodeOps> =
                match super::sim_remote::RemoteSimOps::detect(&client).await {
                    Some(sim) => Arc::new(sim),
                    None => ops.clone(),
                };
            // The controller's requests go through it when they are traced (explore,
            // `perturb:`); it forwards them with the controller's own token.
            // A run that is not traced does not need it: one that cannot start is a warning
            // here, and an untraceable controller for a traced run.
            let proxy = match super::proxy::ApiProxy::start(&kubeconfig).await {
                Ok(p) => Some(p),
                Err(e) => {
                    tracing::warn!("provider `existing`: the API proxy did not start: {e:#}");
                    None
                }
            };
            Ok(Box::new(ExistingHandle {
                kubeconfig,
                ops,
                node_ops,
                proxy,
            }) as Box<dyn Cluster>)
        })
    }
}

struct ExistingOps {
    cluster: ExistingCluster,
    /// Node logs are not streamed from existing clusters (no node access by default).
    logs: broadcast::Sender<LogLine>,
}

impl NodeOps for ExistingOps {
    fn apply<'a>(&'a self, op: &'a NodeOperation) -> BoxFuture<'a, anyhow::Result<()>> {
        Box::pin(async move { self.cluster.apply(op).await })
    }
    fn heal<'a>(&'a self, op: &'a NodeOperation) -> BoxFuture<'a, anyhow::Result<()>> {
        Box::pin(async move { self.cluster.heal(op).await })
    }
    fn subscribe_logs(
        &self,
        _node: Option<&str>,
        _source: LogSource,
    ) -> broadcast::Receiver<LogLine> {
        self.logs.subscribe()
    }
}

struct ExistingHandle {
    kubeconfig: std::path::PathBuf,
    ops: Arc<ExistingOps>,
    /// `ops`, or the control endpoint of a `faultline sim up`.
    node_ops: Arc<dyn NodeOps>,
    proxy: Option<super::proxy::ApiProxy>,
}

impl Cluster for ExistingHandle {
    fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }
    fn node_ops(&self) -> Arc<dyn NodeOps> {
        self.node_ops.clone()
    }
    fn controller_mode(&self) -> ControllerMode {
        ControllerMode::HostProcess
    }
    fn tracer(&self) -> Option<faultline_sim::http::trace::Tracer> {
        self.proxy.as_ref().map(|p| p.tracer())
    }
    fn api_proxy(&self) -> Option<super::proxy::ProxyEndpoint> {
        self.proxy.as_ref().map(|p| p.endpoint().clone())
    }
    fn teardown(
        self: Box<Self>,
        keep: bool,
    ) -> BoxFuture<'static, anyhow::Result<Option<KeptCluster>>> {
        let ops = self.ops.clone();
        Box::pin(async move {
            // Heal whatever is still active and remove the node agent; the cluster itself stays.
            ops.cluster.close().await?;
            Ok(keep.then(|| KeptCluster {
                description: format!("existing context {}", ops.cluster.context),
                guard: None,
            }))
        })
    }
}
