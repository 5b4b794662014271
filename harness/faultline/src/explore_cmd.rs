//! `faultline explore SCENARIO`: the command line over `faultline::explore` (docs/explore.md).

use anyhow::{bail, Result};
use clap::Args;
use faultline::explore::{self, ExploreOptions};
use faultline::loader;
use faultline::model::duration::parse_duration;
use faultline::provider::{self, ProviderKind};
use faultline::runner::{NoProgress, RunOptions};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

#[derive(Args)]
pub struct ExploreArgs {
    /// The scenario file. One with a `perturb:` section is replayed: the unperturbed run, then
    /// the one variant with its perturbations.
    pub scenario: PathBuf,
    /// The suite config (default: faultline.yaml next to the scenario, or above).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// No variant starts after this much time (e.g. 15m, 90s).
    #[arg(long, default_value = "15m", value_parser = duration)]
    pub budget: Duration,
    /// Orders the perturbation points; the scenarios run with it too (default: random, printed).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Variants run at a time.
    #[arg(long, default_value_t = 1)]
    pub jobs: usize,
    /// Where the runs, the repro scenarios and explore.json go.
    #[arg(long, default_value = "explore-out")]
    pub out: PathBuf,
    /// A JSON pointer (`*` for any one segment) to leave out of the end-state comparison, on
    /// top of the defaults (uids, resourceVersions, timestamps, managedFields, addresses).
    #[arg(long = "ignore", value_name = "POINTER")]
    pub ignore: Vec<String>,
    /// Compare the end state without the default ignore list (only --ignore's pointers).
    #[arg(long)]
    pub no_default_ignore: bool,
    /// The hot-loop bound: at most this many controller requests per second, averaged over
    /// --rate-window.
    #[arg(long, default_value_t = 20)]
    pub max_request_rate: usize,
    #[arg(long, default_value = "5s", value_parser = duration)]
    pub rate_window: Duration,
    /// How far a stale read may lag (a watch cache's lag).
    #[arg(long, default_value = "3s", value_parser = duration)]
    pub stale_window: Duration,
    /// Where the variants run: the sim (natively) or an allow-listed existing cluster
    /// (through the API proxy the controller's kubeconfig is pointed at; one variant at a
    /// time, since they share the cluster). kind runs the controller in the cluster, which
    /// the host's proxy cannot reach.
    #[arg(long, value_enum, default_value = "sim")]
    pub provider: ProviderKind,
    /// The kubeconfig context for --provider existing (default: the current one).
    #[arg(long)]
    pub context: Option<String>,
    /// --controller-arg: appended to the controller's arguments (e.g. --regression=NAME).
    #[arg(long = "controller-arg", allow_hyphen_values = true)]
    pub controller_args: Vec<String>,
}

fn duration(s: &str) -> Result<Duration, String> {
    parse_duration(s).map_err(|e| e.to_string())
}

pub async fn run(a: ExploreArgs) -> Result<u8> {
    let (suite, scenarios, diags) =
        loader::load_all(std::slice::from_ref(&a.scenario), a.config.as_deref());
    if !diags.is_empty() {
        for d in &diags {
            eprintln!("{d}");
        }
        return Ok(2);
    }
    let [loaded] = <[_; 1]>::try_from(scenarios).map_err(|v| {
        anyhow::anyhow!("faultline explore takes one scenario file, got {}", v.len())
    })?;
    if a.stale_window.is_zero() || a.stale_window > Duration::from_secs(60) {
        bail!("--stale-window out of range: 0 < window <= 1m");
    }
    let jobs = match a.provider {
        ProviderKind::Sim => a.jobs.max(1),
        ProviderKind::Existing => {
            if a.jobs > 1 {
                eprintln!("faultline explore: --provider existing runs one variant at a time (they share the cluster)");
            }
            1
        }
        ProviderKind::Kind => bail!(
            "faultline explore: --provider kind deploys the controller into the cluster, where the host's API proxy cannot reach it; use sim or existing"
        ),
    };
    let provider = provider::make_provider(a.provider, &suite.suite, a.context.as_deref(), None)?;
    let seed = a.seed.unwrap_or_else(rand::random);
    let (_cancel_tx, cancel) = tokio::sync::watch::channel(None);
    let base = RunOptions {
        provider,
        report_dir: None,
        keep_cluster: false,
        seed,
        jobs: 1,
        cancel,
        progress: Arc::new(NoProgress),
        faultline_bin: std::env::current_exe().unwrap_or_else(|_| PathBuf::from("faultline")),
        controller_args: a.controller_args.clone(),
        retries: 0,
        pause: Default::default(),
        trace: true,
    };
    let mut ignore: Vec<String> = if a.no_default_ignore {
        vec![]
    } else {
        faultline::endstate::DEFAULT_IGNORE
            .iter()
            .map(|s| s.to_string())
            .collect()
    };
    ignore.extend(a.ignore.iter().cloned());
    let window_secs = a.rate_window.as_secs_f64().max(0.001);
    let opts = ExploreOptions {
        budget: a.budget,
        seed,
        jobs,
        out: a.out.clone(),
        ignore,
        max_requests: (a.max_request_rate as f64 * window_secs).ceil() as usize,
        rate_window: a.rate_window,
        stale_window: a.stale_window,
    };
    println!(
        "faultline explore: {} (seed {seed}, budget {}, jobs {}): the unperturbed run first",
        loaded.scenario.metadata.name,
        faultline::model::duration::format_duration(a.budget),
        opts.jobs
    );
    let print = |v: &explore::VariantResult| print!("{}", explore::render_variant(v));
    let report = explore::explore(&loaded, &suite, &base, &opts, &print).await?;
    let b = &report.baseline;
    println!(
        "baseline: {} in {:.1}s; {} controller requests ({} writes), {} watch events, {} stale-read candidates, peak {} requests per {}",
        b.verdict.word(),
        b.duration_ms as f64 / 1000.0,
        b.requests,
        b.mutations,
        b.watch_events,
        b.stale_candidates,
        b.peak_requests,
        faultline::model::duration::format_duration(a.rate_window),
    );
    for l in &b.leaked {
        println!("baseline leaks (not held against the variants): {l}");
    }
    let json = a.out.join("explore.json");
    if report.replay {
        println!(
            "replayed the scenario's perturbations in {:.0}s: {} found; report {} and explore.html",
            report.elapsed_ms as f64 / 1000.0,
            report.found,
            json.display()
        );
    } else {
        println!(
            "explored {} variants in {:.0}s: {} of {} single perturbations, {} of {} pairs; {} found ({} distinct); report {} and explore.html",
            report.variants.len(),
            report.elapsed_ms as f64 / 1000.0,
            report.singles_run,
            report.points,
            report.pairs_run,
            report.pair_points,
            report.found,
            report.distinct,
            json.display()
        );
    }
    Ok(if report.found > 0 { 1 } else { 0 })
}
