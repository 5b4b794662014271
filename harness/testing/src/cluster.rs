//! Starting a simulated cluster for one test and handing out what a test needs from it: an
//! in-process `kube::Client`, a kubeconfig for subprocesses, the node logs and mount tables.

use crate::error::{Error, Result};
use crate::service::InProcess;
use faultline_sim::cluster::faults::FaultApplier;
use faultline_sim::cluster::SimCluster;
use faultline_sim::{ClusterOptions, SimOptions, SimServer, Timing};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

/// The seed of clusters whose builder was not given one (fixtures included).
pub const DEFAULT_SEED: u64 = 0;

/// How a cluster is started: `Cluster::api_only()` or `Cluster::full()`, then `.start()`.
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until .start() is awaited"]
pub struct ClusterBuilder {
    full: bool,
    workers: usize,
    seed: u64,
    time_scale: Option<f64>,
    longhorn: bool,
    pod_worker_pool: Option<usize>,
}

impl ClusterBuilder {
    /// Worker nodes `worker-01`, `worker-02`, ... (a full cluster also has `control-plane`).
    pub fn workers(mut self, n: usize) -> Self {
        self.workers = n;
        self
    }

    /// Seed of the generator behind injected API errors: same seed, same failed requests.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Real durations times `factor` (0.01: a 2m2s backoff takes 1.22 s). Full clusters only:
    /// an API-only cluster has no timed components a test waits for, and runs at real speed.
    pub fn time_scale(mut self, factor: f64) -> Self {
        self.time_scale = Some(factor);
        self
    }

    /// Install simulated Longhorn (full clusters; on by default).
    pub fn longhorn(mut self, on: bool) -> Self {
        self.longhorn = on;
        self
    }

    /// The incident RCA's bounded pool of pod workers per kubelet (full clusters; off by default).
    pub fn pod_worker_pool(mut self, size: usize) -> Self {
        self.pod_worker_pool = Some(size);
        self
    }

    fn options(&self) -> Result<(SimOptions, Timing)> {
        let invalid = |option, reason: &str| {
            Err(Error::InvalidOption {
                option,
                reason: reason.to_string(),
            })
        };
        match self.time_scale {
            Some(f) if !(f.is_finite() && f > 0.0) => {
                return invalid(
                    "time_scale",
                    &format!("{f} is not a positive finite factor"),
                )
            }
            Some(_) if !self.full => {
                return invalid(
                    "time_scale",
                    "an API-only cluster runs at real speed; use Cluster::full()",
                )
            }
            _ => {}
        }
        if self.full && self.workers == 0 {
            return invalid("workers", "a full cluster needs at least one worker node");
        }
        let timing = Timing::scaled(self.time_scale.unwrap_or(1.0));
        let mut opts = if self.full {
            let mut o = SimOptions::full(self.workers, timing.clone());
            o.cluster = Some(ClusterOptions {
                timing: timing.clone(),
                longhorn: self.longhorn,
                pod_worker_pool: self.pod_worker_pool,
            });
            o
        } else {
            SimOptions::with_workers(self.workers)
        };
        opts.seed = self.seed;
        Ok((opts, timing))
    }

    /// Start the cluster on the current tokio runtime. Dropping the `Cluster` stops every task
    /// it started.
    pub async fn start(self) -> Result<Cluster> {
        let (opts, timing) = self.options()?;
        let server = SimServer::start(opts)
            .await
            .map_err(|e| Error::Start(format!("{e:#}")))?;
        let client = kube::Client::new(InProcess::new(&server), "default");
        let operations = FaultApplier::new(
            server.cluster.clone(),
            server.api.clone(),
            server.faults.clone(),
        );
        // The cluster's one clock is the server's (started with it).
        let timing = Timing {
            clock: server.clock().clone(),
            ..timing
        };
        Ok(Cluster {
            server,
            operations,
            timing,
            seed: self.seed,
            client,
            kubeconfig: OnceLock::new(),
        })
    }
}

/// One simulated cluster, owned by one test.
pub struct Cluster {
    server: SimServer,
    /// Catalogue operations (`inject_operation`), carried out as the runner's sim provider does.
    pub(crate) operations: FaultApplier,
    timing: Timing,
    seed: u64,
    client: kube::Client,
    kubeconfig: OnceLock<tempfile::TempDir>,
}

/// Which node log to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogSource {
    /// The kubelet's journal (`journalctl -u kubelet`), klog formatted.
    Kubelet,
    /// The Longhorn CSI node plugin's container log.
    CsiPlugin,
}

impl Cluster {
    /// The API alone (no kubelets: pods stay Pending unless a test plays kubelet), with
    /// 2 static Ready worker nodes unless `.workers(n)` says otherwise.
    pub fn api_only() -> ClusterBuilder {
        ClusterBuilder {
            full: false,
            workers: 2,
            seed: DEFAULT_SEED,
            time_scale: None,
            longhorn: false,
            pod_worker_pool: None,
        }
    }

    /// A control-plane node and 2 workers (unless `.workers(n)`) with kubelets, the scheduler,
    /// node lifecycle, DaemonSets and Longhorn.
    pub fn full() -> ClusterBuilder {
        ClusterBuilder {
            full: true,
            workers: 2,
            seed: DEFAULT_SEED,
            time_scale: None,
            longhorn: true,
            pod_worker_pool: None,
        }
    }

    /// A `kube::Client` whose requests go straight into the simulated API server's router: no
    /// socket, no TLS. Its default namespace is `default`. Clones share one connection-less
    /// service.
    pub fn client(&self) -> kube::Client {
        self.client.clone()
    }

    /// A kubeconfig for subprocesses (kubectl, a controller binary): the same cluster served
    /// over TLS on a 127.0.0.1 port. Written on first use; deleted with the cluster.
    pub fn kubeconfig(&self) -> Result<PathBuf> {
        let path = |d: &tempfile::TempDir| d.path().join("kubeconfig");
        if let Some(dir) = self.kubeconfig.get() {
            return Ok(path(dir));
        }
        let dir = tempfile::Builder::new()
            .prefix("faultline-testing-")
            .tempdir()
            .map_err(|e| Error::Kubeconfig(e.to_string()))?;
        self.server
            .write_kubeconfig(&path(&dir))
            .map_err(|e| Error::Kubeconfig(format!("{e:#}")))?;
        Ok(path(self.kubeconfig.get_or_init(|| dir)))
    }

    /// The seed the cluster was started with.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The durations of the simulated components and the cluster's clock (`timing().clock`).
    pub fn timing(&self) -> &Timing {
        &self.timing
    }

    /// Node names, control plane first when there is one (full clusters only; empty when API-only).
    pub fn nodes(&self) -> Vec<String> {
        let Some(c) = &self.server.cluster else {
            return vec![];
        };
        let mut names: Vec<String> = c.nodes.keys().cloned().collect();
        names.sort_by_key(|n| !faultline_sim::cluster::is_control_plane(n));
        names
    }

    /// The lines a node log holds so far (the kubelet keeps 20 000, the CSI plugin 5 000).
    pub fn logs(&self, node: &str, source: LogSource) -> Result<Vec<String>> {
        let n = self.node(node, "logs")?;
        Ok(match source {
            LogSource::Kubelet => n.kubelet_log.snapshot(),
            LogSource::CsiPlugin => n.csi_log.snapshot(),
        })
    }

    /// The node's mount table as `mount` prints it, stale device mounts included.
    pub fn mounts(&self, node: &str) -> Result<Vec<String>> {
        let sim = self.sim_nodes("mounts")?;
        let name = self.node(node, "mounts")?.name.clone();
        sim.mounts(&name).map_err(|e| Error::NodeOp {
            node: name,
            op: "mounts".into(),
            message: e.message,
        })
    }

    /// The underlying server, for what this API does not cover (its `api`, `faults`, `addr`).
    pub fn sim(&self) -> &SimServer {
        &self.server
    }

    pub(crate) fn sim_nodes(&self, op: &str) -> Result<&Arc<SimCluster>> {
        self.server
            .cluster
            .as_ref()
            .ok_or_else(|| Error::NoNodes { op: op.to_string() })
    }

    pub(crate) fn node(
        &self,
        node: &str,
        op: &str,
    ) -> Result<&Arc<faultline_sim::cluster::node::state::SimNode>> {
        let sim = self.sim_nodes(op)?;
        sim.node(node).map_err(|_| Error::UnknownNode {
            node: node.to_string(),
            known: self.nodes().join(", "),
        })
    }
}
