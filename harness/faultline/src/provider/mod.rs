//! The cluster side of the runner: a `Provider` starts a `Cluster` for a scenario; the cluster
//! gives a kubeconfig and a `NodeOps` handle for node-level faults and remediations.
//!
//! Runner operations (cordon, uncordon, drain, deletePod, controllerCrash) never reach `NodeOps`:
//! the runner does them through the Kubernetes API or process control.

pub mod existing;
pub mod fake;
pub mod kind;
pub mod proxy;
pub mod sim;
pub mod sim_remote;

use crate::model::{LogSourceKind, NodeOperation, NodeSpec, Storage};
use futures::future::BoxFuture;
use serde::Serialize;
use std::path::Path;
use std::sync::Arc;
use tokio::sync::broadcast;

/// What a scenario asks of its cluster.
#[derive(Clone, Debug)]
pub struct ClusterSpec {
    /// The scenario's name (for cluster names, log prefixes).
    pub name: String,
    pub nodes: Vec<NodeSpec>,
    pub storage: Option<Storage>,
    pub sim: crate::model::SimSpec,
    /// The run's seed (seeded fault decisions, e.g. which requests apiErrors fails).
    pub seed: u64,
    /// Where the cluster may keep files (kubeconfig, node logs); outlives the cluster.
    pub workdir: std::path::PathBuf,
}

/// Which log a line came from.
pub type LogSource = LogSourceKind;

#[derive(Clone, Debug, Serialize)]
pub struct LogLine {
    pub source: LogSource,
    /// The node, for kubelet and CSI plugin logs.
    pub node: Option<String>,
    pub text: String,
}

/// Node-level operations of one cluster. `apply` injects (or performs, for one-shot operations
/// such as `kubeletRestart`); `heal` undoes an applied operation and must be idempotent: the
/// runner heals every fault still active when a scenario ends, whatever happened before.
pub trait NodeOps: Send + Sync {
    fn apply<'a>(&'a self, op: &'a NodeOperation) -> BoxFuture<'a, anyhow::Result<()>>;
    fn heal<'a>(&'a self, op: &'a NodeOperation) -> BoxFuture<'a, anyhow::Result<()>>;
    /// Log lines of a node component from now on. `node` is a hint: a receiver may also carry
    /// other nodes' lines, so consumers filter on `LogLine::node`.
    fn subscribe_logs(&self, node: Option<&str>, source: LogSource)
        -> broadcast::Receiver<LogLine>;
}

/// How the controller under test runs on this cluster.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ControllerMode {
    /// A host process with KUBECONFIG (sim, existing).
    HostProcess,
    /// Deployed into the cluster from manifests (kind).
    InCluster,
}

/// A cluster that can be held still while a scenario is paused: its clock and every loop of
/// it stop (the API goes on serving). Only the in-process sim can.
pub trait Freeze: Send + Sync {
    /// Stop the cluster; returns once what was under way has ended.
    fn freeze(&self) -> BoxFuture<'_, ()>;
    fn thaw(&self);
    /// The cluster's clock now (a frozen one stands), as its timestamps and logs show it.
    fn now(&self) -> chrono::DateTime<chrono::Utc>;
}

pub trait Cluster: Send + Sync {
    fn kubeconfig(&self) -> &Path;
    /// How to freeze this cluster while paused, if it can be.
    fn freezer(&self) -> Option<Arc<dyn Freeze>> {
        None
    }
    fn node_ops(&self) -> Arc<dyn NodeOps>;
    fn controller_mode(&self) -> ControllerMode;
    /// The API trace of the controller and the perturbations of what it sees: the sim's HTTP
    /// layer's, or the API proxy's in front of a real cluster ([`Cluster::api_proxy`]);
    /// `faultline explore` and `perturb:` need it.
    fn tracer(&self) -> Option<faultline_sim::http::trace::Tracer> {
        None
    }
    /// The perturbing API proxy ([`proxy::ApiProxy`]) the controller's kubeconfig is to point
    /// at when it is traced, where the provider does not serve the API itself (existing).
    fn api_proxy(&self) -> Option<proxy::ProxyEndpoint> {
        None
    }
    /// Tear the cluster down. `keep`: leave it running for inspection (`--keep-cluster`); a
    /// provider that cannot outlive the process (sim) returns a description of what to do.
    fn teardown(
        self: Box<Self>,
        keep: bool,
    ) -> BoxFuture<'static, anyhow::Result<Option<KeptCluster>>>;
}

/// A cluster left running by `--keep-cluster`. Dropping it stops an in-process cluster.
pub struct KeptCluster {
    pub description: String,
    pub guard: Option<Box<dyn std::any::Any + Send>>,
}

pub trait Provider: Send + Sync {
    fn name(&self) -> &'static str;
    /// Whether its clusters go on existing when the harness dies (a real or `sim up` cluster):
    /// the runner then journals faults in the cluster, so that a killed run can be healed by
    /// the next run or `faultline cleanup`. An in-process sim dies with the harness; a kind
    /// cluster is the run's own (its leftover containers are labelled, docs/kind.md).
    fn clusters_outlive_harness(&self) -> bool {
        false
    }
    fn start<'a>(
        &'a self,
        spec: &'a ClusterSpec,
    ) -> BoxFuture<'a, anyhow::Result<Box<dyn Cluster>>>;
    /// How long the runner lets `start` run before it gives up on it. A provider whose
    /// bring-up bounds each of its own waits says so with a longer time, so that its own error
    /// (and its clean-up) comes first instead of the runner cutting it off.
    fn start_timeout(&self) -> std::time::Duration {
        std::time::Duration::from_secs(120)
    }
    /// How the controller under test runs on this provider's clusters (as
    /// [`Cluster::controller_mode`] says once one is up): known before any starts, so that a
    /// controller's `build` runs only where a host process will run it.
    fn controller_mode(&self) -> ControllerMode {
        ControllerMode::HostProcess
    }
    /// End of the run: release what the provider still holds (kind: the idle clusters it kept
    /// for reuse). Called once, after the last scenario.
    fn shutdown(&self) -> BoxFuture<'_, anyhow::Result<()>> {
        Box::pin(async { Ok(()) })
    }
    /// `faultline cleanup` for what killed runs leave outside any cluster's API (kind: node
    /// containers of dead runs, from journals on this host): heal, remove, and say what was
    /// done (text, everything healed). None: nothing of the kind.
    fn heal_orphans(&self, _force: bool) -> Option<BoxFuture<'_, anyhow::Result<(String, bool)>>> {
        None
    }
}

/// `--provider`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    Sim,
    Kind,
    Existing,
}

/// Build the provider named on the command line, with the suite's settings for it.
/// `node_image`: kind's node image, already chosen ([`kind::choose_node_image`]).
pub fn make_provider(
    kind: ProviderKind,
    suite: &crate::model::Suite,
    context: Option<&str>,
    node_image: Option<String>,
) -> anyhow::Result<Arc<dyn Provider>> {
    match kind {
        ProviderKind::Sim => Ok(Arc::new(sim::SimProvider::from_env()?)),
        ProviderKind::Kind => Ok(Arc::new(kind::KindProvider::new(
            node_image,
            suite.kind_provider.longhorn_stand_in,
        ))),
        ProviderKind::Existing => {
            let existing_allowed = &suite.existing.allowed_contexts;
            check_existing_allowed(existing_allowed, context)?;
            Ok(Arc::new(existing::ExistingProvider {
                allowed: existing_allowed.to_vec(),
                context: context.map(String::from),
            }))
        }
    }
}

/// `--provider existing` injects faults into a real cluster: only into a context the suite
/// config allow-lists (`existing.allowedContexts`).
pub fn check_existing_allowed(allowed: &[String], context: Option<&str>) -> anyhow::Result<()> {
    let ctx = match context {
        Some(c) => c.to_string(),
        None => current_context().unwrap_or_default(),
    };
    if ctx.is_empty() {
        anyhow::bail!(
            "provider `existing`: no kubeconfig context (pass --context or set current-context)"
        );
    }
    if !allowed.iter().any(|a| a == &ctx) {
        anyhow::bail!(
            "provider `existing`: context `{ctx}` is not in the suite's existing.allowedContexts ({}); faultline injects faults only into allow-listed clusters",
            if allowed.is_empty() { "empty".to_string() } else { allowed.join(", ") }
        );
    }
    Ok(())
}

fn current_context() -> Option<String> {
    let kc = kube::config::Kubeconfig::read().ok()?;
    kc.current_context
}
