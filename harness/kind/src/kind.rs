//! The kind provider: clusters of `kindest/node` containers, reused across the scenarios of a
//! run when their topology matches, with node faults through `docker exec` and the engine.
//!
//! Entry points for the runner: [`KindProvider::start`] -> [`KindCluster`] (`kubeconfig`,
//! `apply`, `heal`, `subscribe_logs`, `collect_logs`, `release`), and
//! [`KindProvider::shutdown`] at the end of the run.

use crate::exec::{run_steps, DryRun, Executor, Vars};
use crate::input::{ClusterPlanInput, LogSource, NodeLogLine};
use crate::plan::cluster::{cluster_plan, ClusterPlan, LogNeeds};
use crate::plan::container::HostPaths;
use crate::plan::faults::{plan_fault, FaultContext, FaultPlan, Flavour, Unsupported};
use crate::plan::kubeadm::bootstrap_token;
use crate::plan::longhorn::NAMESPACE as LONGHORN_NS;
use anyhow::{anyhow, bail, Context, Result};
use faultline_faults::{Lifetime, NodeOperation};
use parking_lot::Mutex;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tokio::sync::broadcast;

#[derive(Clone, Debug)]
pub struct KindOptions {
    /// Reuse a cluster for the next scenario with the same topology (reset in between).
    pub reuse: bool,
    /// Bring up the network and node containers and stop where `kubeadm init` would run (the
    /// Docker-engine tier, on machines without Kubernetes server binaries). No kubeconfig is
    /// exported and there is nothing to reset between scenarios.
    pub nodes_only: bool,
    /// Where cluster journals are kept ([`crate::journal`]); None: the default state directory.
    pub state_dir: Option<PathBuf>,
}

impl Default for KindOptions {
    fn default() -> Self {
        KindOptions {
            reuse: true,
            nodes_only: false,
            state_dir: None,
        }
    }
}

impl KindOptions {
    fn journal_dir(&self) -> PathBuf {
        self.state_dir
            .clone()
            .unwrap_or_else(|| crate::journal::default_state_dir(|k| std::env::var(k).ok()))
    }
}

struct Inner {
    exec: Arc<dyn Executor>,
    input: ClusterPlanInput,
    plan: ClusterPlan,
    kubeconfig_text: Mutex<String>,
    active: Mutex<Vec<NodeOperation>>,
    logs: broadcast::Sender<NodeLogLine>,
    followed: Mutex<Vec<(String, LogSource)>>,
    alive: Arc<AtomicBool>,
    /// None for dry runs (nothing to journal).
    journal_dir: Option<PathBuf>,
}

impl Inner {
    /// Rewrite the journal (after bring-up, every inject and heal); a failure is logged: the
    /// run itself goes on.
    fn journal(&self, kept: bool) {
        let Some(dir) = &self.journal_dir else { return };
        let j = crate::journal::Journal {
            cluster: self.plan.names.cluster.clone(),
            control_plane_node: self.plan.names.control_plane_node.clone(),
            longhorn: self.input.longhorn,
            pid: std::process::id(),
            host: crate::journal::hostname(),
            resources: self.plan.resources(),
            active: self.active.lock().clone(),
            kept,
        };
        if let Err(e) = crate::journal::write(dir, &j) {
            tracing::warn!("kind cluster {}: {e:#}", self.plan.names.cluster);
        }
    }
    fn forget_journal(&self) {
        if let Some(dir) = &self.journal_dir {
            crate::journal::remove(dir, &self.plan.names.cluster);
        }
    }
}

/// A running kind cluster handed to one scenario.
pub struct KindCluster {
    inner: Arc<Inner>,
    kubeconfig: PathBuf,
    pool: Arc<Mutex<Vec<Arc<Inner>>>>,
    reuse: bool,
}

pub struct KindProvider {
    opts: KindOptions,
    /// Idle clusters, ready for the next scenario.
    pool: Arc<Mutex<Vec<Arc<Inner>>>>,
    make_executor: Box<dyn Fn() -> Result<Arc<dyn Executor>> + Send + Sync>,
}

/// `<name>-<6 hex digits>`: every run names its containers, network and volumes apart, so two
/// runs of one scenario on one engine never touch each other's.
fn unique_cluster_name(name: &str) -> String {
    let base: String = name.chars().take(33).collect();
    let base = base.trim_end_matches('-');
    let n: u32 = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0)
        ^ std::process::id().rotate_left(12)
        ^ (Arc::as_ptr(&Arc::new(())) as usize as u32);
    format!("{base}-{:06x}", n & 0xff_ffff)
}

impl KindProvider {
    /// Against the Docker engine (DOCKER_HOST or the local socket).
    pub fn new(opts: KindOptions) -> KindProvider {
        KindProvider {
            opts,
            pool: Arc::new(Mutex::new(vec![])),
            make_executor: Box::new(crate::exec::connect_engine),
        }
    }

    /// With another executor (tests, dry runs).
    pub fn with_executor(
        opts: KindOptions,
        make: impl Fn() -> Result<Arc<dyn Executor>> + Send + Sync + 'static,
    ) -> KindProvider {
        KindProvider {
            opts,
            pool: Arc::new(Mutex::new(vec![])),
            make_executor: Box::new(make),
        }
    }

    /// A cluster for one scenario: an idle one with the same topology if reuse is on, else a
    /// new one. `workdir` gets `kubeconfig` (and, for a new cluster, the image directory).
    pub async fn start(&self, input: &ClusterPlanInput, workdir: &Path) -> Result<KindCluster> {
        std::fs::create_dir_all(workdir)
            .with_context(|| format!("creating {}", workdir.display()))?;
        let workdir = workdir.canonicalize()?;
        let kubeconfig = workdir.join("kubeconfig");
        if self.opts.reuse {
            let key = input.reuse_key();
            let found = {
                let mut pool = self.pool.lock();
                pool.iter()
                    .position(|c| c.input.reuse_key() == key)
                    .map(|i| pool.remove(i))
            };
            if let Some(inner) = found {
                inner.exec.note(&format!(
                    "# reuse cluster {} for this scenario",
                    inner.plan.names.cluster
                ));
                write_kubeconfig(&kubeconfig, &inner.kubeconfig_text.lock())?;
                return Ok(KindCluster {
                    inner,
                    kubeconfig,
                    pool: self.pool.clone(),
                    reuse: true,
                });
            }
        }
        let exec = (self.make_executor)()?;
        let images_dir = workdir.join("kind-images");
        std::fs::create_dir_all(&images_dir)?;
        let host = HostPaths {
            images_dir: images_dir.display().to_string(),
        };
        let mut input = input.clone();
        let seed = if exec.is_dry_run() {
            input.cluster_name.clone()
        } else {
            input.cluster_name = unique_cluster_name(&input.cluster_name);
            format!(
                "{}:{}:{:?}",
                input.cluster_name,
                std::process::id(),
                std::time::SystemTime::now()
            )
        };
        let mut plan = cluster_plan(
            &input,
            &host,
            &bootstrap_token(&seed),
            &kubeconfig.display().to_string(),
        )?;
        if self.opts.nodes_only {
            plan.bring_up.truncate(plan.kubeadm_init);
            plan.reset.clear();
        }
        let inner = Arc::new(Inner {
            exec: exec.clone(),
            input,
            plan,
            kubeconfig_text: Mutex::new(String::new()),
            active: Mutex::new(vec![]),
            logs: broadcast::channel(4096).0,
            followed: Mutex::new(vec![]),
            alive: Arc::new(AtomicBool::new(true)),
            journal_dir: (!exec.is_dry_run()).then(|| self.opts.journal_dir()),
        });
        // Before the first resource exists: a run killed during bring-up is cleaned up too.
        inner.journal(false);
        let mut vars = Vars::new();
        let started = std::time::Instant::now();
        let steps = &inner.plan.bring_up;
        for (i, step) in steps.iter().enumerate() {
            if let Err(e) =
                crate::exec::run_step(exec.as_ref(), &inner.plan.names, step, &mut vars).await
            {
                return Err(self.failed_bring_up(&inner, &workdir, i, e).await);
            }
        }
        if !exec.is_dry_run() && !self.opts.nodes_only {
            *inner.kubeconfig_text.lock() = std::fs::read_to_string(&kubeconfig)?;
        }
        if !exec.is_dry_run() {
            exec.note(&format!(
                "# cluster {} up in {:.1} s ({} nodes, {})",
                inner.plan.names.cluster,
                started.elapsed().as_secs_f64(),
                inner.input.nodes.len(),
                inner.input.node_image
            ));
        }
        Ok(KindCluster {
            inner,
            kubeconfig,
            pool: self.pool.clone(),
            reuse: self.opts.reuse,
        })
    }

    /// The cause first; then the logs of the node containers that ran (none from containers
    /// that never started, no cluster logs before the API server was set up); then clean-up.
    async fn failed_bring_up(
        &self,
        inner: &Inner,
        workdir: &Path,
        failed: usize,
        cause: anyhow::Error,
    ) -> anyhow::Error {
        let plan = &inner.plan;
        let ran: Vec<String> = plan.bring_up[..failed]
            .iter()
            .filter_map(|s| match &s.action {
                crate::plan::Action::Docker(crate::plan::DockerOp::Run { spec }) => {
                    Some(spec.container_name.clone())
                }
                _ => None,
            })
            .collect();
        let api_up = failed > plan.kubeadm_init && !self.opts.nodes_only;
        let logs = workdir.join("kind-logs");
        let where_logs = if ran.is_empty() {
            "no node container ran, so there are no node logs".to_string()
        } else {
            match collect_filtered(inner, &logs, &ran, api_up).await {
                Ok(()) => format!(
                    "logs of the node containers that ran ({}) in {}",
                    ran.join(", "),
                    logs.display()
                ),
                Err(e) => format!("collecting node logs into {} failed: {e:#}", logs.display()),
            }
        };
        let _ = teardown(inner).await;
        anyhow!(
            "{cause:#}\n(bringing up kind cluster {} stopped at step {} of {}: {}; {where_logs})",
            plan.names.cluster,
            failed + 1,
            plan.bring_up.len(),
            plan.bring_up[failed].what
        )
    }

    /// Tear down every idle cluster (call once at the end of the run).
    pub async fn shutdown(&self) -> Result<()> {
        let idle: Vec<Arc<Inner>> = std::mem::take(&mut *self.pool.lock());
        for inner in idle {
            teardown(&inner).await?;
        }
        Ok(())
    }

    /// Number of idle clusters waiting for reuse.
    pub fn idle_clusters(&self) -> usize {
        self.pool.lock().len()
    }
}

impl Drop for KindProvider {
    fn drop(&mut self) {
        let idle: Vec<Arc<Inner>> = std::mem::take(&mut *self.pool.lock());
        if idle.is_empty() {
            return;
        }
        // `shutdown` was not called. Async clean-up from a synchronous drop, which may run
        // inside a runtime (blocked here) or outside any: a thread with its own runtime and a
        // fresh engine connection that adopts what the cluster's own connection created.
        let make = &self.make_executor;
        std::thread::scope(|s| {
            s.spawn(move || {
                let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                else {
                    return;
                };
                rt.block_on(async {
                    for inner in &idle {
                        inner.alive.store(false, Ordering::SeqCst);
                        let result = match make() {
                            Ok(exec) => {
                                exec.adopt(&inner.exec.owned());
                                run_steps(
                                    exec.as_ref(),
                                    &inner.plan.names,
                                    &inner.plan.teardown,
                                    &mut Vars::new(),
                                )
                                .await
                            }
                            Err(e) => Err(e),
                        };
                        match result {
                            Ok(()) => inner.forget_journal(),
                            Err(e) => tracing::warn!(
                                "tearing down kind cluster {}: {e:#}",
                                inner.plan.names.cluster
                            ),
                        }
                    }
                });
            });
        });
    }
}

async fn teardown(inner: &Inner) -> Result<()> {
    inner.alive.store(false, Ordering::SeqCst);
    run_steps(
        inner.exec.as_ref(),
        &inner.plan.names,
        &inner.plan.teardown,
        &mut Vars::new(),
    )
    .await?;
    inner.forget_journal();
    Ok(())
}

async fn collect(inner: &Inner, dir: &Path) -> Result<()> {
    let all = inner.plan.container_names();
    collect_filtered(inner, dir, &all, true).await
}

/// Log files whose source exists: node files of the containers in `ran`, cluster files when
/// `api_up`.
async fn collect_filtered(inner: &Inner, dir: &Path, ran: &[String], api_up: bool) -> Result<()> {
    for l in &inner.plan.collect_logs {
        let wanted = match &l.needs {
            LogNeeds::Container(c) => ran.contains(c),
            LogNeeds::Api => api_up,
        };
        if !wanted {
            continue;
        }
        let out = crate::exec::run_step(
            inner.exec.as_ref(),
            &inner.plan.names,
            &l.step,
            &mut Vars::new(),
        )
        .await?;
        if inner.exec.is_dry_run() {
            continue;
        }
        let path = dir.join(&l.file);
        if let Some(p) = path.parent() {
            std::fs::create_dir_all(p)?;
        }
        let mut text = out.stdout;
        if !out.stderr.is_empty() {
            text.push_str("\n--- stderr ---\n");
            text.push_str(&out.stderr);
        }
        std::fs::write(&path, text)?;
    }
    Ok(())
}

fn write_kubeconfig(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    }
    Ok(())
}

impl KindCluster {
    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }
    pub fn name(&self) -> &str {
        &self.inner.plan.names.cluster
    }
    pub fn plan(&self) -> &ClusterPlan {
        &self.inner.plan
    }

    fn context(&self, op: &NodeOperation) -> Result<FaultContext> {
        if let Some(n) = op.node() {
            if !self.inner.input.nodes.iter().any(|x| x.name == n) {
                bail!(
                    "`{}`: node `{n}` is not a node of this cluster ({})",
                    op.key(),
                    self.inner
                        .input
                        .nodes
                        .iter()
                        .map(|n| n.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
        }
        let stuck = op.node().is_some_and(|n| {
            self.inner
                .active
                .lock()
                .iter()
                .any(|a| matches!(a, NodeOperation::HungNfs(t) | NodeOperation::IoErrors(t) if t.node == n))
        });
        Ok(FaultContext {
            flavour: Flavour::Kind(self.inner.plan.names.clone()),
            longhorn: self.inner.input.longhorn,
            stuck_io_on_node: stuck,
            after_boot: op
                .node()
                .map(|n| self.inner.plan.boot_steps(n))
                .unwrap_or_default(),
        })
    }

    /// The steps `op` would run here (for reports and `--dry-run`).
    pub fn fault_plan(&self, op: &NodeOperation) -> Result<FaultPlan> {
        Ok(plan_fault(op, &self.context(op)?)?)
    }

    /// Inject a fault (or perform a one-shot operation). A failed inject is healed at once.
    pub async fn apply(&self, op: &NodeOperation) -> Result<()> {
        let plan = self.fault_plan(op)?;
        let names = &self.inner.plan.names;
        let exec = self.inner.exec.as_ref();
        let mut vars = Vars::new();
        if let Err(e) = run_steps(exec, names, &plan.inject, &mut vars).await {
            let _ = run_steps(exec, names, &plan.heal, &mut vars).await;
            return Err(e);
        }
        if let NodeOperation::NodePowerCycle(t) = op {
            self.after_power_cycle(&t.node).await?;
        }
        if op.lifetime() == Lifetime::Held {
            self.inner.active.lock().push(op.clone());
        }
        self.inner.journal(false);
        Ok(())
    }

    /// A power cycle ends a stuck reboot, and what made the reboot hang is undone now that the
    /// node runs again (its heal steps need a running container: `docker exec` on a stopped
    /// one fails).
    async fn after_power_cycle(&self, node: &str) -> Result<()> {
        let io: Vec<NodeOperation> = self
            .inner
            .active
            .lock()
            .iter()
            .filter(|a| matches!(a, NodeOperation::HungNfs(x) | NodeOperation::IoErrors(x) if x.node == node))
            .cloned()
            .collect();
        for a in io {
            self.heal(&a)
                .await
                .with_context(|| format!("clearing {} on {node} after its power cycle", a.key()))?;
        }
        self.inner.active.lock().retain(|a| match a {
            NodeOperation::NodeReboot(r) => r.node != node,
            // The power cycle powered it on.
            NodeOperation::NodePowerOff(t) => t.node != node,
            _ => true,
        });
        Ok(())
    }

    /// Undo an applied fault; idempotent.
    pub async fn heal(&self, op: &NodeOperation) -> Result<()> {
        let mut ctx = self.context(op)?;
        ctx.stuck_io_on_node = false;
        let plan = match plan_fault(op, &ctx) {
            Ok(p) => p,
            // Nothing can have been applied.
            Err(Unsupported { .. }) => return Ok(()),
        };
        run_steps(
            self.inner.exec.as_ref(),
            &self.inner.plan.names,
            &plan.heal,
            &mut Vars::new(),
        )
        .await?;
        self.inner.active.lock().retain(|a| a != op);
        self.inner.journal(false);
        Ok(())
    }

    /// `kubectl <args>` with cluster-admin credentials, run inside the control-plane node (no
    /// kubectl needed on the host), e.g. to apply the controller's manifests.
    pub async fn kubectl(&self, args: &[&str], stdin: Option<&str>) -> Result<crate::exec::Output> {
        let action = crate::plan::Action::Kubectl {
            args: args.iter().map(|s| s.to_string()).collect(),
            stdin: stdin.map(str::to_string),
        };
        let (c, argv) = self
            .inner
            .plan
            .names
            .exec_argv(&action)
            .expect("kubectl runs in a container");
        self.inner.exec.exec(&c, &argv, stdin).await
    }

    /// `sh -c <script>` on a node (`faultline node <NODE> ...`: e.g. `journalctl -u kubelet
    /// --no-pager`, `cat /proc/mounts`, `systemctl restart kubelet`).
    pub async fn node_shell(&self, node: &str, script: &str) -> Result<crate::exec::Output> {
        if !self.inner.input.nodes.iter().any(|n| n.name == node) {
            bail!("`{node}` is not a node of this cluster");
        }
        let action = crate::plan::Action::NodeShell {
            node: node.into(),
            script: script.into(),
        };
        let (c, argv) = self
            .inner
            .plan
            .names
            .exec_argv(&action)
            .expect("node shell runs in a container");
        self.inner.exec.exec(&c, &argv, None).await
    }

    /// Operations applied and not healed yet.
    pub fn active_faults(&self) -> Vec<NodeOperation> {
        self.inner.active.lock().clone()
    }

    /// Node log lines from now on (`node`: None for every node). Lines of other nodes may
    /// arrive too: filter on `NodeLogLine::node`.
    pub fn subscribe_logs(
        &self,
        node: Option<&str>,
        source: LogSource,
    ) -> broadcast::Receiver<NodeLogLine> {
        let rx = self.inner.logs.subscribe();
        let nodes: Vec<String> = match node {
            Some(n) => vec![n.to_string()],
            None => self
                .inner
                .input
                .nodes
                .iter()
                .map(|n| n.name.clone())
                .collect(),
        };
        for n in nodes {
            let key = (n.clone(), source);
            {
                let mut f = self.inner.followed.lock();
                if f.contains(&key) {
                    continue;
                }
                f.push(key);
            }
            let inner = self.inner.clone();
            tokio::spawn(async move { follow_loop(inner, n, source).await });
        }
        rx
    }

    /// Write node and cluster logs under `dir` (call on failure).
    pub async fn collect_logs(&self, dir: &Path) -> Result<()> {
        collect(&self.inner, dir).await
    }

    /// End of the scenario. `keep` (`--keep-cluster`): leave it running and return what to
    /// tell the user. Otherwise heal what is still active and, with reuse on, reset it for the
    /// next scenario (torn down when the reset fails or reuse is off).
    pub async fn release(self, keep: bool) -> Result<Option<String>> {
        let inner = self.inner.clone();
        if keep {
            inner.exec.keep_containers();
            inner.alive.store(false, Ordering::SeqCst);
            inner.journal(true);
            let n = &inner.plan.names;
            let rm: Vec<String> = inner
                .plan
                .teardown
                .iter()
                .map(|s| n.render(&s.action))
                .collect();
            return Ok(Some(format!(
                "kind cluster {} kept: KUBECONFIG={} (nodes: docker ps --filter label={}={}); remove it with: {}",
                n.cluster,
                self.kubeconfig.display(),
                crate::plan::container::LABEL_CLUSTER,
                n.cluster,
                rm.join(" && ")
            )));
        }
        let active = self.active_faults();
        let mut heal_error = None;
        for op in active.iter().rev() {
            if let Err(e) = self.heal(op).await {
                heal_error.get_or_insert(e);
            }
        }
        let reset_ok = heal_error.is_none()
            && self.reuse
            && run_steps(
                inner.exec.as_ref(),
                &inner.plan.names,
                &inner.plan.reset,
                &mut Vars::new(),
            )
            .await
            .is_ok();
        if reset_ok {
            self.pool.lock().push(inner);
        } else {
            teardown(&inner).await?;
        }
        match heal_error {
            Some(e) => Err(e.context("healing faults still active at the end of the scenario")),
            None => Ok(None),
        }
    }
}

/// The command that streams a node log.
pub fn follow_argv(source: LogSource) -> Vec<String> {
    let script = match source {
        LogSource::Kubelet => "journalctl -u kubelet -f -n 0 -o cat".to_string(),
        // Follows the plugin container across restarts (a new container after each).
        LogSource::CsiPlugin => {
            "while true; do id=$(crictl ps --name longhorn-csi-plugin -q | head -n1); \
             if [ -n \"$id\" ]; then crictl logs -f --tail 0 \"$id\" 2>&1; fi; sleep 2; done"
                .to_string()
        }
    };
    vec!["sh".into(), "-c".into(), script]
}

async fn follow_loop(inner: Arc<Inner>, node: String, source: LogSource) {
    let container = inner.plan.names.container(&node);
    let argv = follow_argv(source);
    while inner.alive.load(Ordering::SeqCst) {
        if let Ok(mut rx) = inner.exec.follow(&container, &argv).await {
            while let Some(text) = rx.recv().await {
                let _ = inner.logs.send(NodeLogLine {
                    source,
                    node: node.clone(),
                    text,
                });
            }
        }
        if inner.exec.is_dry_run() {
            break;
        }
        // The node rebooted or the follower died: start again.
        tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    }
}

/// The Longhorn namespace, for callers that look at CSI pods.
pub const LONGHORN_NAMESPACE: &str = LONGHORN_NS;

/// One entry of a scenario's fault timeline, for the dry run.
#[derive(Clone, Debug, PartialEq)]
pub enum DryRunEvent {
    /// A fault step or a remediation, in step order.
    Apply(NodeOperation),
    /// The fault's `heal:` comes due (`when` says why: `atStep x`, `30s after its inject`).
    Heal { op: NodeOperation, when: String },
}

/// What `--dry-run` prints, and the operations kind cannot carry out (the run would fail them).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DryRunReport {
    pub text: String,
    pub unsupported: Vec<String>,
}

/// Everything `faultline run --provider kind --dry-run` prints for one scenario with `faults`
/// applied in order and left active (so overlaps show) until the end, where what is still
/// active is healed newest first. Needs no Docker.
pub async fn dry_run_report(input: &ClusterPlanInput, faults: &[NodeOperation]) -> Result<String> {
    let events: Vec<DryRunEvent> = faults.iter().cloned().map(DryRunEvent::Apply).collect();
    Ok(dry_run_replay(
        input,
        &events,
        "",
        &std::env::temp_dir().join("faultline-kind-dry-run"),
    )
    .await?
    .text)
}

/// The dry run of a scenario's timeline: pinned versions, each node container spec and the
/// files copied into it, every bring-up command, `before_steps` (what the runner applies
/// before the first step: CRDs, the controller's manifests), then the faults replayed in
/// order: each inject runs in the context of the faults still active (a reboot during hungNfs
/// is the stuck `docker stop`), heals when they come due, the end-of-scenario heals, log
/// collection and teardown. `workdir`: where the kubeconfig would go (created, nothing else
/// is written).
pub async fn dry_run_replay(
    input: &ClusterPlanInput,
    events: &[DryRunEvent],
    before_steps: &str,
    workdir: &Path,
) -> Result<DryRunReport> {
    let dry = Arc::new(DryRun::new());
    let d2 = dry.clone();
    let provider = KindProvider::with_executor(
        KindOptions {
            reuse: false,
            ..Default::default()
        },
        move || Ok(d2.clone() as Arc<dyn Executor>),
    );
    dry.print(&format!(
        "# faultline kind provider, dry run of cluster `{}`\n# kind release {} node image {}\n# Kubernetes {}{}\n# Nodes: {}\n",
        input.cluster_name,
        crate::versions::KIND_RELEASE,
        input.node_image,
        input.kubernetes_version,
        if input.longhorn { format!(", Longhorn {} ({})", crate::versions::LONGHORN_VERSION, crate::versions::longhorn_manifest_url()) } else { String::new() },
        input.nodes.iter().map(|n| format!("{} ({:?})", n.name, n.role)).collect::<Vec<_>>().join(", ")
    ));
    dry.print("## Bring-up (a real run names the cluster `<name>-<6 hex digits>`, unique per run)");
    let cluster = provider.start(input, workdir).await?;
    if !before_steps.is_empty() {
        dry.print(&format!(
            "\n## Before the first step\n{}",
            before_steps.trim_end()
        ));
    }
    let mut unsupported = vec![];
    for ev in events {
        match ev {
            DryRunEvent::Apply(op) => {
                dry.print(&format!(
                    "\n## Fault {}",
                    serde_json::to_string(op).unwrap_or_default()
                ));
                match cluster.fault_plan(op) {
                    Err(e) => {
                        dry.print(&format!("# UNSUPPORTED on kind: {e:#}"));
                        unsupported.push(format!("{e:#}"));
                    }
                    Ok(p) => {
                        let active: Vec<&str> = cluster
                            .active_faults()
                            .iter()
                            .map(NodeOperation::key)
                            .collect();
                        if !active.is_empty() {
                            dry.print(&format!("# still active: {}", active.join(", ")));
                        }
                        dry.print(&format!("# fidelity: {}", p.fidelity));
                        dry.print("### inject");
                        cluster.apply(op).await?;
                        if p.heal.is_empty() {
                            dry.print("### heal: nothing (one-shot)");
                        }
                    }
                }
            }
            DryRunEvent::Heal { op, when } => {
                if cluster.active_faults().contains(op) {
                    dry.print(&format!(
                        "\n## Heal {} ({when})",
                        serde_json::to_string(op).unwrap_or_default()
                    ));
                    cluster.heal(op).await?;
                }
            }
        }
    }
    let left = cluster.active_faults();
    if !left.is_empty() {
        dry.print("\n## End of the scenario: the faults still active are healed, newest first");
        for op in left.iter().rev() {
            dry.print(&format!(
                "### heal {}",
                serde_json::to_string(op).unwrap_or_default()
            ));
            cluster.heal(op).await?;
        }
    }
    dry.print("\n## Node logs followed for log expectations");
    for n in &input.nodes {
        for s in [LogSource::Kubelet, LogSource::CsiPlugin] {
            let argv = follow_argv(s);
            dry.print(&format!(
                "docker exec {} {}",
                crate::shell::quote(&cluster.inner.plan.names.container(&n.name)),
                crate::shell::join(&argv)
            ));
        }
    }
    dry.print("\n## On failure: logs collected into <report-dir>/<scenario>/kind-logs/");
    cluster.collect_logs(Path::new("/nonexistent")).await?;
    dry.print("\n## Between scenarios sharing the cluster: reset");
    run_steps(
        dry.as_ref(),
        &cluster.inner.plan.names,
        &cluster.inner.plan.reset,
        &mut Vars::new(),
    )
    .await?;
    dry.print("\n## Teardown (--keep-cluster skips it and prints these commands)");
    cluster.release(false).await?;
    if !unsupported.is_empty() {
        dry.print(&format!(
            "\n# {} operation(s) UNSUPPORTED on kind: the run would fail them",
            unsupported.len()
        ));
    }
    Ok(DryRunReport {
        text: dry.take(),
        unsupported,
    })
}

/// [`dry_run_report`] from synchronous code (runs on a thread of its own).
pub fn dry_run_report_blocking(
    input: &ClusterPlanInput,
    faults: &[NodeOperation],
) -> Result<String> {
    let events: Vec<DryRunEvent> = faults.iter().cloned().map(DryRunEvent::Apply).collect();
    Ok(dry_run_replay_blocking(
        input,
        &events,
        "",
        &std::env::temp_dir().join("faultline-kind-dry-run"),
    )?
    .text)
}

/// [`dry_run_replay`] from synchronous code (runs on a thread of its own).
pub fn dry_run_replay_blocking(
    input: &ClusterPlanInput,
    events: &[DryRunEvent],
    before_steps: &str,
    workdir: &Path,
) -> Result<DryRunReport> {
    let (input, events, before, workdir) = (
        input.clone(),
        events.to_vec(),
        before_steps.to_string(),
        workdir.to_path_buf(),
    );
    std::thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?
            .block_on(dry_run_replay(&input, &events, &before, &workdir))
    })
    .join()
    .map_err(|_| anyhow::anyhow!("dry run panicked"))?
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::Output;
    use crate::input::NodeInput;
    use crate::plan::container::NodeContainerSpec;
    use crate::plan::DockerOp;
    use faultline_faults::{NodeReboot, NodeTarget};
    use futures::future::BoxFuture;
    use tokio::sync::mpsc;

    /// Records every call as a line; fails execs whose command contains `fail_on`, and, as
    /// the engine does, execs in a container that is not running (stopped or killed).
    #[derive(Default)]
    struct Recorder {
        calls: Mutex<Vec<String>>,
        fail_on: Mutex<Option<String>>,
        kept: AtomicBool,
        stopped: Mutex<Vec<String>>,
    }
    impl Recorder {
        fn calls(&self) -> Vec<String> {
            self.calls.lock().clone()
        }
        fn clear(&self) {
            self.calls.lock().clear();
        }
        fn count(&self, needle: &str) -> usize {
            self.calls().iter().filter(|c| c.contains(needle)).count()
        }
    }
    impl Executor for Recorder {
        fn run_container<'a>(&'a self, spec: &'a NodeContainerSpec) -> BoxFuture<'a, Result<()>> {
            Box::pin(async move {
                let line = format!("run {}", spec.container_name);
                self.calls.lock().push(line.clone());
                match self.fail_on.lock().as_deref() {
                    Some(f) if line.contains(f) => {
                        bail!("Error response from daemon: no such image")
                    }
                    _ => Ok(()),
                }
            })
        }
        fn exec<'a>(
            &'a self,
            c: &'a str,
            argv: &'a [String],
            _stdin: Option<&'a str>,
        ) -> BoxFuture<'a, Result<Output>> {
            Box::pin(async move {
                let line = format!("exec {c} {}", argv.join(" "));
                self.calls.lock().push(line.clone());
                if self.stopped.lock().iter().any(|x| x == c) {
                    bail!("Error response from daemon: container {c} is not running");
                }
                if let Some(f) = self.fail_on.lock().as_deref() {
                    if line.contains(f) {
                        return Ok(Output {
                            code: 1,
                            stdout: String::new(),
                            stderr: "boom".into(),
                        });
                    }
                }
                if argv.last().map(String::as_str) == Some("/etc/kubernetes/admin.conf") {
                    return Ok(Output::ok(
                        "apiVersion: v1\nclusters:\n- cluster:\n    server: https://x:6443\n",
                    ));
                }
                Ok(Output::ok("pvc-1"))
            })
        }
        fn docker<'a>(&'a self, op: &'a DockerOp) -> BoxFuture<'a, Result<Output>> {
            Box::pin(async move {
                self.calls.lock().push(crate::plan::render_docker(op));
                let mut stopped = self.stopped.lock();
                match op {
                    DockerOp::Stop { container, .. } | DockerOp::Kill { container, .. } => {
                        stopped.push(container.clone())
                    }
                    DockerOp::Start { container } | DockerOp::Restart { container, .. } => {
                        stopped.retain(|c| c != container)
                    }
                    _ => {}
                }
                Ok(Output::ok(""))
            })
        }
        fn api_server_url<'a>(&'a self, _: &'a str) -> BoxFuture<'a, Result<String>> {
            Box::pin(async { Ok("https://127.0.0.1:40000".into()) })
        }
        fn follow<'a>(
            &'a self,
            c: &'a str,
            _: &'a [String],
        ) -> BoxFuture<'a, Result<mpsc::Receiver<String>>> {
            Box::pin(async move {
                let (tx, rx) = mpsc::channel(4);
                tx.send(format!("line from {c}")).await.unwrap();
                Ok(rx)
            })
        }
        fn keep_containers(&self) {
            self.kept.store(true, Ordering::SeqCst);
        }
        fn note(&self, _: &str) {}
    }

    fn provider(rec: &Arc<Recorder>, reuse: bool) -> KindProvider {
        let r = rec.clone();
        let state_dir = Some(std::env::temp_dir().join(format!(
            "faultline-kind-unit-journals-{}",
            std::process::id()
        )));
        KindProvider::with_executor(
            KindOptions {
                reuse,
                nodes_only: false,
                state_dir,
            },
            move || Ok(r.clone() as Arc<dyn Executor>),
        )
    }
    fn input() -> ClusterPlanInput {
        ClusterPlanInput::new(
            "t",
            vec![NodeInput::control_plane("cp"), NodeInput::worker("w1")],
        )
    }
    fn t(n: &str) -> NodeTarget {
        NodeTarget { node: n.into() }
    }

    #[tokio::test]
    async fn start_brings_the_cluster_up_and_exports_the_kubeconfig() {
        let rec = Arc::new(Recorder::default());
        let dir = tempfile::tempdir().unwrap();
        let c = provider(&rec, true)
            .start(&input(), dir.path())
            .await
            .unwrap();
        assert_eq!(rec.count("run t-"), 2);
        assert_eq!(rec.count("kubeadm init"), 1);
        assert_eq!(
            rec.count(&format!("exec {}-w1 sh -c kubeadm join", c.name())),
            1
        );
        let kc = std::fs::read_to_string(c.kubeconfig()).unwrap();
        assert!(kc.contains("server: https://127.0.0.1:40000"), "{kc}");
        assert_eq!(
            c.kubeconfig(),
            dir.path().canonicalize().unwrap().join("kubeconfig")
        );
    }

    #[tokio::test]
    async fn a_released_cluster_is_reset_and_reused_by_the_same_topology_only() {
        let rec = Arc::new(Recorder::default());
        let p = provider(&rec, true);
        let (d1, d2, d3) = (
            tempfile::tempdir().unwrap(),
            tempfile::tempdir().unwrap(),
            tempfile::tempdir().unwrap(),
        );
        let c = p.start(&input(), d1.path()).await.unwrap();
        assert_eq!(c.release(false).await.unwrap(), None);
        assert_eq!(rec.count("uncordon w1"), 1, "reset ran");
        assert_eq!(rec.count("docker rm"), 0, "not torn down");
        assert_eq!(p.idle_clusters(), 1);
        rec.clear();
        let mut renamed = input();
        renamed.cluster_name = "other-scenario".into();
        let c2 = p.start(&renamed, d2.path()).await.unwrap();
        assert_eq!(rec.count("run "), 0, "reused: {:?}", rec.calls());
        assert!(c2.name().starts_with("t-"), "{}", c2.name());
        assert!(std::fs::read_to_string(c2.kubeconfig())
            .unwrap()
            .contains("127.0.0.1:40000"));
        let bigger = ClusterPlanInput::new(
            "t2",
            vec![
                NodeInput::control_plane("cp"),
                NodeInput::worker("w1"),
                NodeInput::worker("w2"),
            ],
        );
        let _c3 = p.start(&bigger, d3.path()).await.unwrap();
        assert_eq!(
            rec.count("run t2-"),
            3,
            "another topology gets its own cluster"
        );
        let first = c2.name().to_string();
        c2.release(false).await.unwrap();
        p.shutdown().await.unwrap();
        assert_eq!(
            rec.count(&format!("docker rm --force --volumes {first}-cp")),
            1
        );
        assert_eq!(
            rec.count(&format!("docker network rm faultline-{first}")),
            1
        );
        assert_eq!(p.idle_clusters(), 0);
    }

    #[tokio::test]
    async fn without_reuse_release_tears_down() {
        let rec = Arc::new(Recorder::default());
        let p = provider(&rec, false);
        let d = tempfile::tempdir().unwrap();
        p.start(&input(), d.path())
            .await
            .unwrap()
            .release(false)
            .await
            .unwrap();
        assert_eq!(rec.count("uncordon"), 0);
        assert_eq!(rec.count("docker rm --force --volumes"), 2);
        assert_eq!(p.idle_clusters(), 0);
    }

    #[tokio::test]
    async fn release_heals_what_is_still_active() {
        let rec = Arc::new(Recorder::default());
        let d = tempfile::tempdir().unwrap();
        let c = provider(&rec, true)
            .start(&input(), d.path())
            .await
            .unwrap();
        c.apply(&NodeOperation::KubeletStop(t("w1"))).await.unwrap();
        c.apply(&NodeOperation::NodeNetworkPartition(t("w1")))
            .await
            .unwrap();
        assert_eq!(c.active_faults().len(), 2);
        rec.clear();
        c.release(false).await.unwrap();
        let calls = rec.calls();
        let reconnect = calls
            .iter()
            .position(|l| l.contains("docker network connect faultline-t-") && l.ends_with("-w1"))
            .unwrap();
        let start = calls
            .iter()
            .position(|l| l.contains("systemctl start kubelet"))
            .unwrap();
        assert!(reconnect < start, "healed in reverse order: {calls:?}");
    }

    #[tokio::test]
    async fn a_failed_inject_is_healed_at_once_and_not_left_active() {
        let rec = Arc::new(Recorder::default());
        let d = tempfile::tempdir().unwrap();
        let c = provider(&rec, true)
            .start(&input(), d.path())
            .await
            .unwrap();
        *rec.fail_on.lock() = Some("SIGSTOP".into());
        let e = c
            .apply(&NodeOperation::KubeletHang(t("w1")))
            .await
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("freeze the kubelet on w1") && e.contains("boom"),
            "{e}"
        );
        assert_eq!(rec.count("SIGCONT"), 1);
        assert!(c.active_faults().is_empty());
    }

    #[tokio::test]
    async fn one_shot_operations_are_not_remembered() {
        let rec = Arc::new(Recorder::default());
        let d = tempfile::tempdir().unwrap();
        let c = provider(&rec, true)
            .start(&input(), d.path())
            .await
            .unwrap();
        c.apply(&NodeOperation::KubeletRestart(t("w1")))
            .await
            .unwrap();
        assert!(c.active_faults().is_empty());
        assert_eq!(
            rec.count(&format!(
                "exec {}-w1 sh -c systemctl restart kubelet",
                c.name()
            )),
            1
        );
    }

    #[tokio::test]
    async fn a_reboot_during_io_errors_hangs_until_the_power_cycle_which_clears_them_on_the_running_node(
    ) {
        let rec = Arc::new(Recorder::default());
        let d = tempfile::tempdir().unwrap();
        let c = provider(&rec, true)
            .start(&input(), d.path())
            .await
            .unwrap();
        let w1 = format!("{}-w1", c.name());
        c.apply(&NodeOperation::IoErrors(t("w1"))).await.unwrap();
        c.apply(&NodeOperation::NodeReboot(NodeReboot {
            node: "w1".into(),
            stuck_until_power_cycle: false,
        }))
        .await
        .unwrap();
        assert_eq!(rec.count(&format!("docker stop --time 30 {w1}")), 1);
        assert_eq!(rec.count("docker restart"), 0);
        rec.clear();
        // The node's container is stopped: a heal through `docker exec` before the power cycle
        // would fail, as it does on the engine.
        c.apply(&NodeOperation::NodePowerCycle(t("w1")))
            .await
            .expect("the power cycle ends the stuck reboot");
        let calls = rec.calls();
        let at = |needle: &str| {
            calls
                .iter()
                .position(|l| l.contains(needle))
                .unwrap_or_else(|| panic!("no {needle}: {calls:?}"))
        };
        let kill = at(&format!("docker kill --signal KILL {w1}"));
        let start = at(&format!("docker start {w1}"));
        let booted = at("systemctl is-active --quiet kubelet");
        let unoffline = at("echo running > /sys/block");
        assert!(
            kill < start && start < booted && booted < unoffline,
            "{calls:?}"
        );
        assert!(c.active_faults().is_empty(), "{:?}", c.active_faults());
    }

    #[tokio::test]
    async fn two_runs_of_one_scenario_name_their_clusters_apart() {
        let rec = Arc::new(Recorder::default());
        let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let p = provider(&rec, false);
        let (a, b) = (
            p.start(&input(), d1.path()).await.unwrap(),
            p.start(&input(), d2.path()).await.unwrap(),
        );
        assert_ne!(a.name(), b.name());
        for c in [&a, &b] {
            assert!(
                c.name().starts_with("t-") && c.name().len() == 8,
                "{}",
                c.name()
            );
            assert_eq!(rec.count(&format!("docker network create --driver bridge --label dev.faultline.cluster={} faultline-{}", c.name(), c.name())), 1);
        }
    }

    #[tokio::test]
    async fn a_reboot_redoes_what_bring_up_does_once_a_node_starts() {
        let rec = Arc::new(Recorder::default());
        let d = tempfile::tempdir().unwrap();
        let c = provider(&rec, true)
            .start(&input(), d.path())
            .await
            .unwrap();
        rec.clear();
        c.apply(&NodeOperation::NodeReboot(NodeReboot {
            node: "cp".into(),
            stuck_until_power_cycle: false,
        }))
        .await
        .unwrap();
        let calls = rec.calls().join("\n");
        for want in [
            "docker restart --time 30",
            "systemctl is-active --quiet containerd",
            "systemctl is-active --quiet kubelet",
            "cat /etc/kubernetes/admin.conf",
        ] {
            assert!(calls.contains(want), "{want}:\n{calls}");
        }
    }

    #[tokio::test]
    async fn keep_cluster_leaves_containers_and_says_how_to_remove_them() {
        let rec = Arc::new(Recorder::default());
        let d = tempfile::tempdir().unwrap();
        let c = provider(&rec, true)
            .start(&input(), d.path())
            .await
            .unwrap();
        let kc = c.kubeconfig().display().to_string();
        let c_name = c.name().to_string();
        let msg = c.release(true).await.unwrap().unwrap();
        assert!(rec.kept.load(Ordering::SeqCst));
        assert!(
            msg.contains(&format!("KUBECONFIG={kc}"))
                && msg.contains(&format!("docker network rm faultline-{}", c_name)),
            "{msg}"
        );
        assert_eq!(rec.count("docker rm"), 0);
    }

    #[tokio::test]
    async fn node_shell_and_kubectl_run_in_the_right_containers() {
        let rec = Arc::new(Recorder::default());
        let d = tempfile::tempdir().unwrap();
        let c = provider(&rec, true)
            .start(&input(), d.path())
            .await
            .unwrap();
        rec.clear();
        c.node_shell("w1", "cat /proc/mounts").await.unwrap();
        c.kubectl(&["get", "nodes"], None).await.unwrap();
        let n = c.name();
        assert_eq!(
            rec.calls(),
            [
                format!("exec {n}-w1 sh -c cat /proc/mounts"),
                format!("exec {n}-cp kubectl --kubeconfig=/etc/kubernetes/admin.conf get nodes")
            ]
        );
        assert!(c.node_shell("nope", "true").await.is_err());
    }

    #[tokio::test]
    async fn faults_on_unknown_nodes_are_refused() {
        let rec = Arc::new(Recorder::default());
        let d = tempfile::tempdir().unwrap();
        let c = provider(&rec, true)
            .start(&input(), d.path())
            .await
            .unwrap();
        let e = c
            .apply(&NodeOperation::KubeletStop(t("worker-09")))
            .await
            .unwrap_err()
            .to_string();
        assert!(e.contains("worker-09") && e.contains("cp, w1"), "{e}");
    }

    #[tokio::test]
    async fn a_failed_bring_up_reports_its_cause_first_collects_node_logs_and_cleans_up() {
        let rec = Arc::new(Recorder::default());
        *rec.fail_on.lock() = Some("kubeadm init".into());
        let d = tempfile::tempdir().unwrap();
        let e = provider(&rec, true)
            .start(&input(), d.path())
            .await
            .err()
            .unwrap();
        let msg = format!("{e:#}");
        assert!(
            msg.lines().next().unwrap().contains("kubeadm init"),
            "the cause first: {msg}"
        );
        assert!(
            msg.contains("bringing up kind cluster t-")
                && msg.contains("logs of the node containers that ran"),
            "{msg}"
        );
        assert!(rec.count("journalctl --no-pager -u kubelet") >= 2);
        assert!(d.path().join("kind-logs/cp/kubelet.log").exists());
        assert!(
            !d.path().join("kind-logs/cluster").exists(),
            "no API server yet: no cluster logs"
        );
        assert_eq!(rec.count("docker network rm faultline-t-"), 1);
    }

    #[tokio::test]
    async fn a_bring_up_that_fails_before_any_node_ran_collects_nothing() {
        let rec = Arc::new(Recorder::default());
        *rec.fail_on.lock() = Some("run t-".into());
        let d = tempfile::tempdir().unwrap();
        let state = d.path().join("state");
        let p = KindProvider::with_executor(
            KindOptions {
                reuse: false,
                nodes_only: true,
                state_dir: Some(state.clone()),
            },
            {
                let r = rec.clone();
                move || Ok(r.clone() as Arc<dyn Executor>)
            },
        );
        let e = format!("{:#}", p.start(&input(), d.path()).await.err().unwrap());
        assert!(
            e.lines().next().unwrap().contains("node container cp"),
            "the cause first: {e}"
        );
        assert!(e.contains("no such image"), "{e}");
        assert!(
            e.contains("no node container ran, so there are no node logs"),
            "{e}"
        );
        assert!(!d.path().join("kind-logs").exists());
        assert_eq!(rec.count("docker logs"), 0);
        assert_eq!(
            std::fs::read_dir(&state).unwrap().count(),
            0,
            "journal written, then removed with the teardown"
        );
    }

    #[tokio::test]
    async fn node_logs_are_streamed_with_their_node() {
        let rec = Arc::new(Recorder::default());
        let d = tempfile::tempdir().unwrap();
        let c = provider(&rec, true)
            .start(&input(), d.path())
            .await
            .unwrap();
        let mut rx = c.subscribe_logs(Some("w1"), LogSource::Kubelet);
        let line = tokio::time::timeout(std::time::Duration::from_secs(5), rx.recv())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            (line.node.as_str(), line.source, line.text.as_str()),
            (
                "w1",
                LogSource::Kubelet,
                format!("line from {}-w1", c.name()).as_str()
            )
        );
        c.release(false).await.unwrap();
    }
}

#[cfg(test)]
mod drop_tests {
    use super::*;
    use crate::exec::DryRun;

    #[tokio::test(flavor = "current_thread")]
    async fn dropping_the_provider_tears_idle_clusters_down_even_on_a_current_thread_runtime() {
        let dry = Arc::new(DryRun::new());
        let d2 = dry.clone();
        let p = KindProvider::with_executor(
            KindOptions {
                reuse: true,
                ..Default::default()
            },
            move || Ok(d2.clone() as Arc<dyn Executor>),
        );
        let dir = tempfile::tempdir().unwrap();
        let c = p
            .start(
                &ClusterPlanInput::new("d", vec![crate::input::NodeInput::control_plane("cp")]),
                dir.path(),
            )
            .await
            .unwrap();
        c.release(false).await.unwrap();
        assert_eq!(p.idle_clusters(), 1);
        dry.take();
        drop(p);
        let out = dry.take();
        assert!(
            out.contains("docker rm --force --volumes d-cp")
                && out.contains("docker network rm faultline-d"),
            "{out}"
        );
    }
}
