//! Argument parsing and dispatch.
//!
//! Exit codes: 0 success; 1 a scenario failed (or, with --baseline, a duration regressed);
//! 2 invalid input or harness error (including a fault that could not be healed);
//! 130 / 143 interrupted by SIGINT / SIGTERM after every fault was healed and every cluster torn
//! down (2 instead when healing failed). A second SIGINT/SIGTERM during the clean-up exits at
//! once with 130/143, leaving whatever was not healed yet (listed in the message).

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};
use faultline::loader::{self, Diagnostic};
use faultline::provider::{self, ProviderKind};
use faultline::report::{self, RunReport};
use faultline::runner::{self, RunOptions};
use faultline_sim::{SimOptions, SimServer};
use regex::Regex;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

#[derive(Parser)]
#[command(name = "faultline", version, about = "Chaos and simulation test harness for Kubernetes controllers")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run scenarios: inject faults, judge expectations against their budgets, report.
    Run(Box<RunArgs>),
    /// Check scenario files and the suite config; report errors as file:line:col.
    Validate {
        /// Scenario files or directories (default: scenarios).
        paths: Vec<PathBuf>,
        /// The suite config (default: faultline.yaml next to the scenarios, or above).
        #[arg(long)]
        config: Option<PathBuf>,
    },
    /// Print the JSON Schema of scenario files (or, with --suite, of faultline.yaml) for editors.
    Schema {
        #[arg(long)]
        suite: bool,
    },
    /// Heal the faults a killed run left in a cluster (from the fault journals the runner keeps
    /// in clusters that outlive it); exit 0 when nothing is left active.
    Cleanup(CleanupArgs),
    /// Node operations (logs, mounts, kubelet service, reboot) on a running `faultline sim up`.
    Node(crate::node_cmd::NodeArgs),
    /// The simulated cluster.
    Sim {
        #[command(subcommand)]
        command: SimCommand,
    },
    /// Minimal Kubernetes client for scenario scripts ($FAULTLINE kube apply -f x.yaml).
    Kube {
        #[command(subcommand)]
        command: KubeCommand,
    },
}

#[derive(Args)]
struct CleanupArgs {
    /// Scenario files or directories, to find the suite config (default: scenarios).
    paths: Vec<PathBuf>,
    #[arg(long, value_enum, default_value = "existing")]
    provider: ProviderKind,
    /// The kubeconfig context (must be allow-listed in the suite's existing.allowedContexts).
    #[arg(long)]
    context: Option<String>,
    #[arg(long)]
    config: Option<PathBuf>,
    /// Heal journals of runs that still look alive, too.
    #[arg(long)]
    force: bool,
}

#[derive(Args)]
struct RunArgs {
    /// Scenario files or directories (default: scenarios).
    paths: Vec<PathBuf>,
    #[arg(long, value_enum, default_value = "sim")]
    provider: ProviderKind,
    /// For --provider existing: the kubeconfig context (must be allow-listed in the suite).
    #[arg(long)]
    context: Option<String>,
    #[arg(long)]
    config: Option<PathBuf>,
    /// Write a JUnit XML report.
    #[arg(long)]
    junit: Option<PathBuf>,
    /// Write the JSON report (docs/report-schema.md).
    #[arg(long)]
    json: Option<PathBuf>,
    /// Write the HTML report.
    #[arg(long)]
    html: Option<PathBuf>,
    /// Directory for per-scenario artifacts (objects, events, logs) and report.{json,html}, junit.xml.
    #[arg(long)]
    report_dir: Option<PathBuf>,
    /// Seed for everything random (exported to scripts and the controller as FAULTLINE_SEED).
    #[arg(long)]
    seed: Option<u64>,
    /// Run only scenarios whose name matches this regular expression.
    #[arg(long)]
    filter: Option<String>,
    /// Run shard I of N (1-based), e.g. 2/4: scenarios sorted by name, every N-th from the I-th.
    #[arg(long)]
    shard: Option<String>,
    /// Scenarios run in parallel (each on its own cluster).
    #[arg(long, default_value_t = 1)]
    jobs: usize,
    /// Keep clusters after the run (sim: serve them until Ctrl-C).
    #[arg(long)]
    keep_cluster: bool,
    /// An extra argument for every controller under test (repeatable), after the scenario's
    /// own, e.g. `--controller-arg=--regression=hot-loop` to check a build with a flag flipped.
    #[arg(long = "controller-arg", allow_hyphen_values = true)]
    controller_args: Vec<String>,
    /// With --provider kind: print the exact container specs and commands the run would use
    /// (cluster bring-up, Longhorn, every fault's inject and heal), and run nothing.
    #[arg(long)]
    dry_run: bool,
    /// With --provider kind: the node image, e.g. a `docker load`ed `kindest/node:v1.35.5` (a
    /// local tag needs no digest). Default: FAULTLINE_KIND_NODE_IMAGE, else the pinned image.
    #[arg(long)]
    node_image: Option<String>,
    /// Compare measured durations with a previous JSON report.
    #[arg(long)]
    baseline: Option<PathBuf>,
    /// With --baseline: a duration regressed when it exceeds the baseline by more than this ratio
    /// (default: the suite's defaults.regressionRatio, 1.5).
    #[arg(long)]
    regression_ratio: Option<f64>,
}

#[derive(Subcommand)]
enum SimCommand {
    /// Start a simulated cluster, write a kubeconfig, and serve until Ctrl-C.
    Up {
        /// Number of worker nodes (named worker-01, worker-02, ...).
        #[arg(long, default_value_t = 3)]
        nodes: usize,
        /// Where to write the kubeconfig.
        #[arg(long, default_value = "faultline-sim.kubeconfig")]
        kubeconfig: PathBuf,
        /// Loopback address to listen on (port 0 picks a free port).
        #[arg(long, default_value = "127.0.0.1:0")]
        listen: SocketAddr,
        /// Multiply every simulated duration (backoffs, timeouts, reboots) by this factor.
        #[arg(long, default_value_t = 1.0)]
        time_scale: f64,
        /// Serve the API alone: static nodes, no kubelets, scheduler or Longhorn.
        #[arg(long)]
        api_only: bool,
    },
}

#[derive(Subcommand)]
enum KubeCommand {
    /// Server-side apply the objects of a file (KUBECONFIG from the environment).
    Apply {
        #[arg(short = 'f', long)]
        file: PathBuf,
        #[arg(short = 'n', long, default_value = "default")]
        namespace: String,
    },
    /// Delete the objects of a file.
    Delete {
        #[arg(short = 'f', long)]
        file: PathBuf,
        #[arg(short = 'n', long, default_value = "default")]
        namespace: String,
    },
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_env("FAULTLINE_LOG").unwrap_or_else(|_| "warn".into()))
        .with_writer(std::io::stderr)
        .init();
    let rt = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    let code = match rt.block_on(run(cli)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            2
        }
    };
    rt.shutdown_timeout(std::time::Duration::from_secs(1));
    ExitCode::from(code)
}

async fn run(cli: Cli) -> Result<u8> {
    match cli.command {
        Command::Node(args) => crate::node_cmd::run(args).await.map(|_| 0),
        Command::Sim { command: SimCommand::Up { nodes, kubeconfig, listen, time_scale, api_only } } => sim_up(nodes, kubeconfig, listen, time_scale, api_only).await,
        Command::Validate { paths, config } => validate(paths, config),
        Command::Schema { suite } => {
            let schema = if suite { schemars::schema_for!(faultline::model::Suite) } else { schemars::schema_for!(faultline::model::Scenario) };
            println!("{}", serde_json::to_string_pretty(&schema)?);
            Ok(0)
        }
        Command::Run(args) => run_cmd(*args).await,
        Command::Cleanup(args) => cleanup_cmd(args).await,
        Command::Kube { command } => kube_cmd(command).await,
    }
}

fn default_paths(paths: Vec<PathBuf>) -> Vec<PathBuf> {
    if paths.is_empty() {
        vec![PathBuf::from("scenarios")]
    } else {
        paths
    }
}

fn print_diagnostics(d: &[Diagnostic]) {
    for x in d {
        eprintln!("{x}");
    }
    eprintln!("{} error(s)", d.len());
}

fn validate(paths: Vec<PathBuf>, config: Option<PathBuf>) -> Result<u8> {
    let (_, scenarios, diags) = loader::load_all(&default_paths(paths), config.as_deref());
    if !diags.is_empty() {
        print_diagnostics(&diags);
        return Ok(2);
    }
    println!("{} scenario(s) valid", scenarios.len());
    Ok(0)
}

fn parse_shard(s: &str) -> Result<(usize, usize)> {
    let (i, n) = s.split_once('/').context("--shard: expected I/N, e.g. 1/4")?;
    let (i, n): (usize, usize) = (i.trim().parse().context("--shard: I is not a number")?, n.trim().parse().context("--shard: N is not a number")?);
    if n == 0 || i == 0 || i > n {
        bail!("--shard {s}: expected 1 <= I <= N");
    }
    Ok((i, n))
}

/// Wait for SIGINT/SIGTERM; the first cancels the run, the second exits at once.
fn install_signals(tx: tokio::sync::watch::Sender<Option<String>>) -> Result<()> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut int = signal(SignalKind::interrupt())?;
    let mut term = signal(SignalKind::terminate())?;
    tokio::spawn(async move {
        let mut count = 0;
        loop {
            let name = tokio::select! {
                _ = int.recv() => "SIGINT",
                _ = term.recv() => "SIGTERM",
            };
            count += 1;
            if count == 1 {
                eprintln!("faultline: {name}: healing active faults, stopping the controller, tearing down (repeat to exit at once)");
                let _ = tx.send(Some(name.to_string()));
            } else {
                eprintln!("faultline: {name} again: exiting without finishing the clean-up; faults may be left active");
                std::process::exit(if name == "SIGINT" { 130 } else { 143 });
            }
        }
    });
    Ok(())
}

async fn cleanup_cmd(a: CleanupArgs) -> Result<u8> {
    let (suite, _, diags) = loader::load_all(&default_paths(a.paths.clone()), a.config.as_deref());
    if !diags.is_empty() {
        print_diagnostics(&diags);
        return Ok(2);
    }
    let provider = provider::make_provider(a.provider, &suite.suite.existing.allowed_contexts, a.context.as_deref())?;
    let dir = tempfile::tempdir()?;
    let report = faultline::cleanup::cleanup(provider.as_ref(), dir.path(), a.force, suite.suite.defaults.step_timeout.get()).await?;
    print!("{}", report.render());
    Ok(if report.ok() { 0 } else { 2 })
}

async fn run_cmd(a: RunArgs) -> Result<u8> {
    let started = Instant::now();
    let started_at = chrono::Utc::now();
    let (suite, mut scenarios, diags) = loader::load_all(&default_paths(a.paths.clone()), a.config.as_deref());
    if !diags.is_empty() {
        print_diagnostics(&diags);
        return Ok(2);
    }
    if let Some(f) = &a.filter {
        let re = Regex::new(f).with_context(|| format!("--filter `{f}` is not a valid regular expression"))?;
        scenarios.retain(|s| re.is_match(&s.scenario.metadata.name));
    }
    scenarios.sort_by(|x, y| x.scenario.metadata.name.cmp(&y.scenario.metadata.name));
    if let Some(s) = &a.shard {
        let (i, n) = parse_shard(s)?;
        scenarios = scenarios.into_iter().enumerate().filter(|(k, _)| k % n == i - 1).map(|(_, s)| s).collect();
    }
    let ratio = a.regression_ratio.unwrap_or(suite.suite.defaults.regression_ratio);
    if ratio <= 1.0 {
        bail!("--regression-ratio must be greater than 1");
    }
    let baseline = a.baseline.as_deref().map(report::baseline::load).transpose()?;
    if let Some(image) = &a.node_image {
        // Read where every kind cluster's input is made (provider::kind::plan_input).
        std::env::set_var("FAULTLINE_KIND_NODE_IMAGE", image);
    }
    if a.dry_run {
        if a.provider != ProviderKind::Kind {
            bail!("--dry-run is for --provider kind (sim runs in-process; there is nothing to review)");
        }
        let mut unsupported = 0;
        for s in &scenarios {
            let sc = &s.scenario;
            let spec = provider::ClusterSpec {
                name: sc.metadata.name.clone(),
                nodes: sc.spec.cluster.effective_nodes(),
                storage: sc.spec.cluster.storage,
                sim: sc.spec.cluster.sim.clone(),
                seed: a.seed.unwrap_or(0),
                workdir: std::env::temp_dir().join("faultline-dry-run").join(&sc.metadata.name),
            };
            println!("## scenario {}\n", sc.metadata.name);
            let r = provider::kind::dry_run(&spec, sc, &suite)?;
            println!("{}", r.text);
            unsupported += r.unsupported.len();
        }
        if unsupported > 0 {
            eprintln!("faultline: {unsupported} operation(s) are unsupported on kind (marked UNSUPPORTED above)");
            return Ok(2);
        }
        return Ok(0);
    }
    let provider = provider::make_provider(a.provider, &suite.suite.existing.allowed_contexts, a.context.as_deref())?;
    let seed = a.seed.unwrap_or_else(rand::random);
    let (cancel_tx, cancel_rx) = tokio::sync::watch::channel(None);
    install_signals(cancel_tx)?;
    if scenarios.is_empty() {
        eprintln!("faultline: no scenario selected");
    }
    println!("faultline: {} scenario(s), provider {}, seed {seed}, jobs {}", scenarios.len(), provider.name(), a.jobs);
    // A run killed earlier may have left faults in a cluster that outlives it: heal them first.
    let dir = tempfile::tempdir()?;
    if let Some(r) = faultline::cleanup::before_run(provider.clone(), dir.path(), suite.suite.defaults.step_timeout.get()).await {
        if !r.restored.is_empty() || !r.unreadable.is_empty() {
            eprint!("faultline: faults left by an interrupted run:\n{}", r.render());
        }
        if !r.ok() {
            eprintln!("faultline: the cluster could not be restored; not running scenarios against it");
            return Ok(2);
        }
    }
    let progress = Arc::new(report::console::ConsoleProgress::new());
    let opts = RunOptions {
        provider,
        report_dir: a.report_dir.clone(),
        keep_cluster: a.keep_cluster,
        seed,
        jobs: a.jobs,
        cancel: cancel_rx.clone(),
        progress,
        faultline_bin: std::env::current_exe().unwrap_or_else(|_| PathBuf::from("faultline")),
        controller_args: a.controller_args.clone(),
    };
    let kept: runner::Kept = Default::default();
    let reports = runner::run_all(scenarios, &suite, &opts, &kept).await;
    if let Err(e) = opts.provider.shutdown().await {
        eprintln!("faultline: releasing the provider's clusters: {e:#}");
    }
    let interrupted = cancel_rx.borrow().clone();
    let mut rep = RunReport {
        schema_version: report::SCHEMA_VERSION,
        faultline_version: env!("CARGO_PKG_VERSION").into(),
        started_at: started_at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        duration_ms: started.elapsed().as_millis() as u64,
        provider: format!("{:?}", a.provider).to_lowercase(),
        seed,
        summary: Default::default(),
        scenarios: reports,
        regressions: vec![],
        interrupted_by: interrupted.clone(),
    };
    if let Some(b) = &baseline {
        rep.regressions = report::baseline::compare(b, &rep, ratio);
    }
    rep.summarize();
    print!("{}", report::console::render(&rep));
    let mut outputs: Vec<(PathBuf, &str)> = vec![];
    if let Some(d) = &a.report_dir {
        outputs.extend([(d.join("report.json"), "json"), (d.join("junit.xml"), "junit"), (d.join("report.html"), "html")]);
    }
    if let Some(p) = &a.json {
        outputs.push((p.clone(), "json"));
    }
    if let Some(p) = &a.junit {
        outputs.push((p.clone(), "junit"));
    }
    if let Some(p) = &a.html {
        outputs.push((p.clone(), "html"));
    }
    for (path, kind) in outputs {
        let r = match kind {
            "json" => report::write_json(&rep, &path),
            "junit" => report::junit::write(&rep, &path),
            _ => std::fs::write(&path, report::html::render(&rep)).map_err(Into::into),
        };
        r.with_context(|| format!("writing {}", path.display()))?;
    }
    let kept: Vec<_> = std::mem::take(&mut *kept.lock());
    if !kept.is_empty() && interrupted.is_none() {
        println!("faultline: --keep-cluster: {} cluster(s) kept; press Ctrl-C to stop them", kept.len());
        for k in &kept {
            println!("  {}", k.description);
        }
        let mut rx = cancel_rx.clone();
        let _ = rx.wait_for(|c| c.is_some()).await;
    }
    drop(kept);
    let code = rep.exit_code();
    Ok(match interrupted.as_deref() {
        Some(_) if code == 2 => 2,
        Some("SIGTERM") => 143,
        Some(_) => 130,
        None => code,
    })
}

async fn kube_cmd(c: KubeCommand) -> Result<u8> {
    let path = std::env::var_os("KUBECONFIG").map(PathBuf::from).context("KUBECONFIG is not set")?;
    let kube = faultline::k8s::Kube::new(faultline::k8s::client_from_kubeconfig(&path).await?);
    match c {
        KubeCommand::Apply { file, namespace } => {
            for o in faultline::k8s::read_manifests(&file)? {
                kube.apply(&o, &namespace).await?;
                println!("{} applied", faultline::k8s::describe(&o));
            }
        }
        KubeCommand::Delete { file, namespace } => {
            for o in faultline::k8s::read_manifests(&file)? {
                kube.delete(&o, &namespace, true).await?;
                println!("{} deleted", faultline::k8s::describe(&o));
            }
        }
    }
    Ok(0)
}

async fn sim_up(nodes: usize, kubeconfig: PathBuf, listen: SocketAddr, time_scale: f64, api_only: bool) -> Result<u8> {
    if !(time_scale > 0.0) {
        anyhow::bail!("--time-scale must be a positive number, got {time_scale}");
    }
    let base = if api_only { SimOptions::with_workers(nodes) } else { SimOptions::full(nodes, faultline_sim::Timing::scaled(time_scale)) };
    let opts = SimOptions { bind: listen, ..base };
    let server = SimServer::start(opts).await?;
    let path = server.write_kubeconfig(&kubeconfig)?;
    println!("faultline sim: API server listening on {}", server.url());
    println!("faultline sim: kubeconfig written to {}", path.display());
    println!("  export KUBECONFIG={}", std::fs::canonicalize(&path).unwrap_or(path.clone()).display());
    println!("faultline sim: {} worker node(s); press Ctrl-C to stop", nodes);
    wait_for_shutdown_signal().await.context("waiting for a shutdown signal")?;
    println!("faultline sim: stopping");
    server.stop().await;
    Ok(0)
}

async fn wait_for_shutdown_signal() -> Result<()> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate())?;
    tokio::select! {
        r = tokio::signal::ctrl_c() => r?,
        _ = term.recv() => {}
    }
    Ok(())
}
