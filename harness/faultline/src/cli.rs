//! Argument parsing and dispatch.
//!
//! Exit codes: 0 success (flaky scenarios included, unless --flaky-fails); 1 a scenario failed
//! (or, with --baseline, a duration regressed; with --flaky-fails, a scenario was flaky);
//! 2 invalid input or harness error (including a fault that could not be healed);
//! 130 / 143 interrupted by SIGINT / SIGTERM after every fault was healed and every cluster torn
//! down (2 instead when healing failed). A second SIGINT/SIGTERM during the clean-up exits at
//! once with 130/143, leaving whatever was not healed yet (listed in the message).

use crate::signals::{install_signals, SignalPhase};
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
#[command(
    name = "faultline",
    version,
    about = "Chaos and simulation test harness for Kubernetes controllers"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run scenarios: inject faults, judge expectations against their budgets, report.
    Run(Box<RunArgs>),
    /// Run one scenario on the sim and on kind (real kubelets) and print what each showed side
    /// by side (events, the runbook's kubelet log lines, pod and VolumeAttachment states), with
    /// how many observations agree. Exit code: the kind run's.
    Diff(Box<crate::diff_cmd::DiffArgs>),
    /// Find the bugs no scenario was written for: run a scenario once, then variants that each
    /// perturb what the controller observes (a crash after one of its writes, a stale read),
    /// judged by the scenario's expectations, the unperturbed run's end state and a request-rate
    /// bound (sim only; docs/explore.md). Exit code 1 when a variant failed.
    Explore(Box<crate::explore_cmd::ExploreArgs>),
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
    /// Write a KUBEBUILDER_ASSETS directory whose kube-apiserver and etcd run the simulator, so
    /// controller-runtime envtest suites run on it unchanged; prints the directory's path.
    EnvtestAssets {
        dir: PathBuf,
        /// The kubectl to link into DIR (default: the first on PATH).
        #[arg(long)]
        kubectl: Option<PathBuf>,
    },
    /// The processes the envtest-assets scripts start (envtest passes their flags).
    #[command(hide = true)]
    Envtest {
        #[command(subcommand)]
        command: EnvtestCommand,
    },
    /// Reports: merge the JSON reports of sharded runs.
    Report {
        #[command(subcommand)]
        command: ReportCommand,
    },
    /// Start a suite: a suite config for your controller, an example scenario, a CI snippet.
    Init {
        /// The project directory (default: the current one); writes DIR/scenarios/ and DIR/ci/.
        dir: Option<PathBuf>,
        /// How to start the controller under test, run with `sh -c` from DIR, e.g.
        /// `./bin/manager --leader-elect=false` or `go run ./cmd/manager`.
        #[arg(long)]
        controller_command: String,
        /// A CRD manifest (relative to DIR) applied before the controller starts (repeatable).
        #[arg(long = "crd")]
        crds: Vec<String>,
        /// A log line (regular expression) the controller prints once it is ready.
        #[arg(long)]
        ready_pattern: Option<String>,
    },
}

#[derive(Subcommand)]
enum ReportCommand {
    /// One JSON, JUnit and HTML report (and a Markdown summary) from the JSON reports of
    /// sharded runs (`run --shard I/N --json shard-I.json`); exit code as the merged run's.
    Merge {
        /// Where to write report.json, junit.xml, report.html and summary.md.
        out_dir: PathBuf,
        /// The shard reports.
        #[arg(required = true)]
        reports: Vec<PathBuf>,
        /// With --flaky-fails: a flaky scenario fails the merged run.
        #[arg(long)]
        flaky_fails: bool,
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
    /// local tag needs no digest). Default: FAULTLINE_KIND_NODE_IMAGE, else the suite's
    /// `kindProvider.nodeImage`, else the pinned image.
    #[arg(long)]
    node_image: Option<String>,
    /// With --provider kind: where a scenario asks for `storage: longhorn`, give the
    /// StorageClass name `longhorn` to the node image's CSI driver instead of installing Longhorn
    /// (which needs iSCSI on the Docker host); faults that need Longhorn itself are refused as
    /// unsupported. Also the suite's `kindProvider.longhornStandIn`.
    #[arg(long)]
    longhorn_stand_in: bool,
    /// Print every scenario's timeline (default: one line per passing scenario, everything
    /// about a failing one).
    #[arg(short, long, conflicts_with = "quiet")]
    verbose: bool,
    /// Print only failures and the total.
    #[arg(short, long)]
    quiet: bool,
    /// Write a Markdown summary (also appended to $GITHUB_STEP_SUMMARY when that is set).
    #[arg(long)]
    summary: Option<PathBuf>,
    /// Run a scenario that did not pass again, on a fresh cluster, up to N times; a pass after
    /// a failure is reported as flaky.
    #[arg(long, default_value_t = 0)]
    retries: u32,
    /// A flaky scenario (passed only on a retry) fails the run (exit 1).
    #[arg(long)]
    flaky_fails: bool,
    /// When a scenario fails, hold it at that moment - faults active, controller running - print
    /// the kubeconfig and the node commands, and wait for Enter (or Ctrl-C) before healing.
    #[arg(long)]
    pause_on_failure: bool,
    /// Hold every scenario that has this step before it runs (repeatable), as --pause-on-failure.
    #[arg(long = "pause-at", value_name = "STEP")]
    pause_at: Vec<String>,
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
enum EnvtestCommand {
    /// kube-apiserver's command line, served by the simulated API server.
    #[command(name = "kube-apiserver", disable_help_flag = true)]
    KubeApiserver {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// etcd's command line: answers /health only.
    #[command(disable_help_flag = true)]
    Etcd {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
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
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("FAULTLINE_LOG")
                .unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    let code = match rt.block_on(run(cli)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {}", faultline::k8s::explain(&e));
            2
        }
    };
    rt.shutdown_timeout(std::time::Duration::from_secs(1));
    ExitCode::from(code)
}

async fn run(cli: Cli) -> Result<u8> {
    match cli.command {
        Command::Node(args) => crate::node_cmd::run(args).await.map(|_| 0),
        Command::EnvtestAssets { dir, kubectl } => {
            faultline::envtest::write_assets(&dir, kubectl.as_deref()).map(|_| 0)
        }
        Command::Envtest { command } => Ok(match command {
            EnvtestCommand::KubeApiserver { args } => {
                faultline::envtest::kube_apiserver(&args).await
            }
            EnvtestCommand::Etcd { args } => faultline::envtest::etcd(&args).await,
        }),
        Command::Sim {
            command:
                SimCommand::Up {
                    nodes,
                    kubeconfig,
                    listen,
                    time_scale,
                    api_only,
                },
        } => sim_up(nodes, kubeconfig, listen, time_scale, api_only).await,
        Command::Validate { paths, config } => validate(paths, config),
        Command::Schema { suite } => {
            let schema = if suite {
                schemars::schema_for!(faultline::model::Suite)
            } else {
                schemars::schema_for!(faultline::model::Scenario)
            };
            println!("{}", serde_json::to_string_pretty(&schema)?);
            Ok(0)
        }
        Command::Run(args) => run_cmd(*args).await,
        Command::Diff(args) => crate::diff_cmd::run(*args).await,
        Command::Explore(args) => crate::explore_cmd::run(*args).await,
        Command::Cleanup(args) => cleanup_cmd(args).await,
        Command::Kube { command } => kube_cmd(command).await,
        Command::Report {
            command:
                ReportCommand::Merge {
                    out_dir,
                    reports,
                    flaky_fails,
                },
        } => merge_cmd(out_dir, reports, flaky_fails),
        Command::Init {
            dir,
            controller_command,
            crds,
            ready_pattern,
        } => {
            let o = faultline::init::InitOptions {
                dir: dir.unwrap_or_else(|| PathBuf::from(".")),
                controller_command,
                crds,
                ready_pattern,
            };
            for p in faultline::init::init(&o)? {
                println!("wrote {}", p.display());
            }
            println!(
                "next: faultline validate {0} && faultline run {0}",
                o.dir.join("scenarios").display()
            );
            Ok(0)
        }
    }
}

/// `$GITHUB_STEP_SUMMARY`, when set: where GitHub Actions reads a job's Markdown summary.
fn github_step_summary() -> Option<PathBuf> {
    std::env::var_os("GITHUB_STEP_SUMMARY")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// Every output the report goes to: (path, kind), kind one of json, junit, html, summary.
fn write_outputs(rep: &RunReport, outputs: &[(PathBuf, &str)]) -> Result<()> {
    for (path, kind) in outputs {
        let r = match *kind {
            "json" => report::write_json(rep, path),
            "junit" => report::junit::write(rep, path),
            "summary" => report::markdown::write(rep, path, false),
            _ => std::fs::write(path, report::html::render(rep)).map_err(Into::into),
        };
        r.with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some(p) = github_step_summary() {
        report::markdown::write(rep, &p, true)
            .with_context(|| format!("writing $GITHUB_STEP_SUMMARY ({})", p.display()))?;
    }
    Ok(())
}

fn merge_cmd(out_dir: PathBuf, files: Vec<PathBuf>, flaky_fails: bool) -> Result<u8> {
    let mut shards = vec![];
    for f in files {
        let r = report::merge::read(&f)?;
        shards.push((f, r));
    }
    let mut rep = report::merge::merge(shards)?;
    rep.flaky_fails |= flaky_fails;
    std::fs::create_dir_all(&out_dir).with_context(|| format!("creating {}", out_dir.display()))?;
    write_outputs(
        &rep,
        &[
            (out_dir.join("report.json"), "json"),
            (out_dir.join("junit.xml"), "junit"),
            (out_dir.join("report.html"), "html"),
            (out_dir.join("summary.md"), "summary"),
        ],
    )?;
    print!("{}", report::console::render_summary(&rep));
    println!(
        "faultline: merged {} shard report(s) into {}",
        rep.merged_from.len(),
        out_dir.display()
    );
    Ok(rep.exit_code())
}

/// Every step name of a scenario, nested ones included (as validated: defaults filled in).
fn step_names(steps: &[faultline::model::Step], out: &mut Vec<String>) {
    for s in steps {
        out.extend(s.name.clone());
        for sub in [&s.try_steps, &s.catch, &s.finally].into_iter().flatten() {
            step_names(sub, out);
        }
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
    let (suite, scenarios, diags) = loader::load_all(&default_paths(paths), config.as_deref());
    if !diags.is_empty() {
        print_diagnostics(&diags);
        return Ok(2);
    }
    if let Some(p) = &suite.path {
        println!("suite config {} valid", p.display());
    }
    println!("{} scenario(s) valid", scenarios.len());
    Ok(0)
}

fn parse_shard(s: &str) -> Result<(usize, usize)> {
    let (i, n) = s
        .split_once('/')
        .context("--shard: expected I/N, e.g. 1/4")?;
    let (i, n): (usize, usize) = (
        i.trim().parse().context("--shard: I is not a number")?,
        n.trim().parse().context("--shard: N is not a number")?,
    );
    if n == 0 || i == 0 || i > n {
        bail!("--shard {s}: expected 1 <= I <= N");
    }
    Ok((i, n))
}

async fn cleanup_cmd(a: CleanupArgs) -> Result<u8> {
    let (suite, _, diags) = loader::load_all(&default_paths(a.paths.clone()), a.config.as_deref());
    if !diags.is_empty() {
        print_diagnostics(&diags);
        return Ok(2);
    }
    let provider = provider::make_provider(a.provider, &suite.suite, a.context.as_deref(), None)?;
    let dir = tempfile::tempdir()?;
    let report = faultline::cleanup::cleanup(
        provider.as_ref(),
        dir.path(),
        a.force,
        suite.suite.defaults.step_timeout.get(),
    )
    .await?;
    print!("{}", report.render());
    Ok(if report.ok() { 0 } else { 2 })
}

async fn run_cmd(a: RunArgs) -> Result<u8> {
    let started = Instant::now();
    let started_at = chrono::Utc::now();
    let (mut suite, mut scenarios, diags) =
        loader::load_all(&default_paths(a.paths.clone()), a.config.as_deref());
    if !diags.is_empty() {
        print_diagnostics(&diags);
        return Ok(2);
    }
    if a.longhorn_stand_in {
        if a.provider != ProviderKind::Kind {
            bail!("--longhorn-stand-in is for --provider kind (the sim has Longhorn; an existing cluster has what it has)");
        }
        suite.suite.kind_provider.longhorn_stand_in = true;
    }
    if let Some(f) = &a.filter {
        let re = Regex::new(f)
            .with_context(|| format!("--filter `{f}` is not a valid regular expression"))?;
        scenarios.retain(|s| re.is_match(&s.scenario.metadata.name));
    }
    scenarios.sort_by(|x, y| x.scenario.metadata.name.cmp(&y.scenario.metadata.name));
    if let Some(s) = &a.shard {
        let (i, n) = parse_shard(s)?;
        scenarios = scenarios
            .into_iter()
            .enumerate()
            .filter(|(k, _)| k % n == i - 1)
            .map(|(_, s)| s)
            .collect();
    }
    let ratio = a
        .regression_ratio
        .unwrap_or(suite.suite.defaults.regression_ratio);
    if ratio <= 1.0 {
        bail!("--regression-ratio must be greater than 1");
    }
    let baseline = a
        .baseline
        .as_deref()
        .map(report::baseline::load)
        .transpose()?;
    let env_image = std::env::var("FAULTLINE_KIND_NODE_IMAGE").ok();
    let mut node_image = provider::kind::choose_node_image(
        a.node_image.as_deref(),
        env_image.as_deref(),
        suite.suite.kind_provider.node_image.as_deref(),
    );
    // None named: a real node image built here (ci/node-image/build-real.sh) before the pinned
    // kindest/node, which no registry this may run on serves. The dry run stays engine-free.
    if a.provider == ProviderKind::Kind && node_image.is_none() && !a.dry_run {
        if let Some(real) = faultline_kind::exec::local_real_node_image().await {
            node_image = Some((
                real,
                "the newest local real node image, ci/node-image/build-real.sh",
            ));
        }
    }
    if a.provider == ProviderKind::Kind && !a.quiet {
        if let Some((image, from)) = &node_image {
            eprintln!("faultline: node image {image} (from {from})");
        }
    }
    let node_image = node_image.map(|(image, _)| image);
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
                workdir: std::env::temp_dir()
                    .join("faultline-dry-run")
                    .join(&sc.metadata.name),
            };
            println!("## scenario {}\n", sc.metadata.name);
            let r = provider::kind::dry_run(&spec, sc, &suite, node_image.as_deref())?;
            println!("{}", r.text);
            unsupported += r.unsupported.len();
        }
        if unsupported > 0 {
            eprintln!("faultline: {unsupported} operation(s) are unsupported on kind (marked UNSUPPORTED above)");
            return Ok(2);
        }
        return Ok(0);
    }
    for step in &a.pause_at {
        let mut all = vec![];
        for s in &scenarios {
            step_names(&s.scenario.spec.steps, &mut all);
        }
        if !all.contains(step) {
            all.sort();
            all.dedup();
            bail!(
                "--pause-at {step}: no selected scenario has a step `{step}`; steps: {}",
                all.join(", ")
            );
        }
    }
    let provider =
        provider::make_provider(a.provider, &suite.suite, a.context.as_deref(), node_image)?;
    let seed = a.seed.unwrap_or_else(rand::random);
    let faultline_bin = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("faultline"));
    let pauser = (a.pause_on_failure || !a.pause_at.is_empty())
        .then(|| Arc::new(faultline::pause::ConsolePauser::new(faultline_bin.clone())));
    let (cancel_tx, cancel_rx) = tokio::sync::watch::channel(None);
    let phase = Arc::new(parking_lot::Mutex::new(SignalPhase::Running {
        keep_cluster: a.keep_cluster,
    }));
    install_signals(cancel_tx, pauser.clone(), phase.clone())?;
    if scenarios.is_empty() {
        eprintln!("faultline: no scenario selected");
    }
    let verbosity = match (a.quiet, a.verbose) {
        (true, _) => report::console::Verbosity::Quiet,
        (_, true) => report::console::Verbosity::Verbose,
        _ => report::console::Verbosity::Normal,
    };
    if verbosity != report::console::Verbosity::Quiet {
        println!(
            "faultline: {} scenario(s), provider {}, seed {seed}, jobs {}{}{}",
            scenarios.len(),
            provider.name(),
            a.jobs,
            a.shard
                .as_ref()
                .map(|s| format!(", shard {s}"))
                .unwrap_or_default(),
            if a.retries > 0 {
                format!(", retries {}", a.retries)
            } else {
                String::new()
            }
        );
    }
    // A run killed earlier may have left faults in a cluster that outlives it: heal them first.
    let dir = tempfile::tempdir()?;
    if let Some(r) = faultline::cleanup::before_run(
        provider.clone(),
        dir.path(),
        suite.suite.defaults.step_timeout.get(),
    )
    .await
    {
        if !r.restored.is_empty() || !r.unreadable.is_empty() {
            eprint!(
                "faultline: faults left by an interrupted run:\n{}",
                r.render()
            );
        }
        if !r.ok() {
            eprintln!(
                "faultline: the cluster could not be restored; not running scenarios against it"
            );
            return Ok(2);
        }
    }
    let progress = Arc::new(report::console::ConsoleProgress::new(verbosity));
    let opts = RunOptions {
        provider,
        report_dir: a.report_dir.clone(),
        keep_cluster: a.keep_cluster,
        seed,
        jobs: a.jobs,
        cancel: cancel_rx.clone(),
        progress,
        faultline_bin,
        controller_args: a.controller_args.clone(),
        retries: a.retries,
        pause: runner::PausePolicy {
            on_failure: a.pause_on_failure,
            at_steps: a.pause_at.clone(),
            pauser: pauser.map(|p| p as Arc<dyn runner::Pauser>),
        },
        trace: false,
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
        shard: a.shard.clone(),
        flaky_fails: a.flaky_fails,
        summary: Default::default(),
        scenarios: reports,
        regressions: vec![],
        interrupted_by: interrupted.clone(),
        merged_from: vec![],
    };
    if let Some(b) = &baseline {
        rep.regressions = report::baseline::compare(b, &rep, ratio);
    }
    rep.summarize();
    print!("{}", report::console::render_summary(&rep));
    let mut outputs: Vec<(PathBuf, &str)> = vec![];
    if let Some(d) = &a.report_dir {
        outputs.extend([
            (d.join("report.json"), "json"),
            (d.join("junit.xml"), "junit"),
            (d.join("report.html"), "html"),
            (d.join("summary.md"), "summary"),
        ]);
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
    if let Some(p) = &a.summary {
        outputs.push((p.clone(), "summary"));
    }
    write_outputs(&rep, &outputs)?;
    let kept: Vec<_> = std::mem::take(&mut *kept.lock());
    // Clusters that outlive this process (kind) are left as they are: the description says how
    // to remove them. Only in-process ones (sim) need it running, until a signal stops them.
    let (held, outliving): (Vec<_>, Vec<_>) = kept.into_iter().partition(|k| k.guard.is_some());
    if !outliving.is_empty() {
        println!(
            "faultline: --keep-cluster: {} cluster(s) kept; they outlive this process",
            outliving.len()
        );
        for k in &outliving {
            println!("  {}", k.description);
        }
    }
    if !held.is_empty() && interrupted.is_none() {
        println!(
            "faultline: --keep-cluster: {} in-process cluster(s) kept; press Ctrl-C to stop them",
            held.len()
        );
        for k in &held {
            println!("  {}", k.description);
        }
        *phase.lock() = SignalPhase::HoldingKept;
        let mut rx = cancel_rx.clone();
        let _ = rx.wait_for(|c| c.is_some()).await;
    }
    drop(held);
    let code = rep.exit_code();
    Ok(match interrupted.as_deref() {
        Some(_) if code == 2 => 2,
        Some("SIGTERM") => 143,
        Some(_) => 130,
        None => code,
    })
}

async fn kube_cmd(c: KubeCommand) -> Result<u8> {
    let path = std::env::var_os("KUBECONFIG")
        .map(PathBuf::from)
        .context("KUBECONFIG is not set")?;
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

async fn sim_up(
    nodes: usize,
    kubeconfig: PathBuf,
    listen: SocketAddr,
    time_scale: f64,
    api_only: bool,
) -> Result<u8> {
    if time_scale.is_nan() || time_scale <= 0.0 {
        anyhow::bail!("--time-scale must be a positive number, got {time_scale}");
    }
    let base = if api_only {
        SimOptions::with_workers(nodes)
    } else {
        SimOptions::full(nodes, faultline_sim::Timing::scaled(time_scale))
    };
    let opts = SimOptions {
        bind: listen,
        ..base
    };
    let server = SimServer::start(opts).await?;
    let path = server.write_kubeconfig(&kubeconfig)?;
    println!("faultline sim: API server listening on {}", server.url());
    println!("faultline sim: kubeconfig written to {}", path.display());
    println!(
        "  export KUBECONFIG={}",
        std::fs::canonicalize(&path)
            .unwrap_or(path.clone())
            .display()
    );
    println!(
        "faultline sim: {} worker node(s); press Ctrl-C to stop",
        nodes
    );
    wait_for_shutdown_signal()
        .await
        .context("waiting for a shutdown signal")?;
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
