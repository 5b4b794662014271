//! `faultline diff SCENARIO`: the scenario on the sim, then on kind (real kubelets), each with
//! its expectations judged and its artifacts kept; then the side-by-side fidelity report
//! (`faultline::fidelity`) and its figure. Exit code: the kind run's (0 passed, 1 failed, 2
//! error), so CI holds the real cluster to the scenario; the sim's verdict is printed.

use crate::signals::{install_signals, SignalPhase};
use anyhow::{bail, Context, Result};
use clap::Args;
use faultline::fidelity::{self, collect};
use faultline::loader;
use faultline::model::Storage;
use faultline::provider::{self, ProviderKind};
use faultline::report;
use faultline::runner::{self, RunOptions};
use faultline::timeline::Verdict;
use std::path::{Path, PathBuf};
use std::sync::Arc;

#[derive(Args)]
pub struct DiffArgs {
    /// One scenario file.
    pub scenario: PathBuf,
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// kind's node image (as `run --node-image`; default: FAULTLINE_KIND_NODE_IMAGE, the suite's,
    /// the newest local real node image).
    #[arg(long)]
    pub node_image: Option<String>,
    /// Where both runs' artifacts and the report (fidelity.txt, fidelity.json) go (default: a
    /// new directory under /tmp, printed).
    #[arg(long)]
    pub report_dir: Option<PathBuf>,
    /// Keep the kind cluster after the run (it outlives this process; its removal is printed).
    #[arg(long)]
    pub keep_cluster: bool,
    #[arg(long)]
    pub seed: Option<u64>,
    /// Run nothing: compare the artifacts an earlier diff left in --report-dir (its `kind/` and
    /// `sim/`), e.g. after the normalisers changed.
    #[arg(long, requires = "report_dir")]
    pub no_run: bool,
    /// Width of the kind column.
    #[arg(long, default_value_t = 90)]
    pub width: usize,
}

pub async fn run(a: DiffArgs) -> Result<u8> {
    let (suite, scenarios, diags) =
        loader::load_all(std::slice::from_ref(&a.scenario), a.config.as_deref());
    if !diags.is_empty() {
        for d in &diags {
            eprintln!("{d}");
        }
        return Ok(2);
    }
    let [loaded] = <[_; 1]>::try_from(scenarios)
        .map_err(|v| anyhow::anyhow!("faultline diff takes one scenario file, got {}", v.len()))?;
    let name = loaded.scenario.metadata.name.clone();
    if a.no_run {
        let dir = a.report_dir.as_deref().unwrap_or(Path::new("."));
        print!("{}", report_text(dir, &name, a.width)?);
        return Ok(0);
    }
    let dir = match &a.report_dir {
        Some(d) => d.clone(),
        None => tempfile::Builder::new()
            .prefix("faultline-diff-")
            .tempdir()?
            .keep(),
    };
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let seed = a.seed.unwrap_or_else(rand::random);
    let (cancel_tx, cancel_rx) = tokio::sync::watch::channel(None);
    let phase = Arc::new(parking_lot::Mutex::new(SignalPhase::Running {
        keep_cluster: a.keep_cluster,
    }));
    install_signals(cancel_tx, None, phase)?;
    let faultline_bin = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("faultline"));
    let options = |provider, sub: &str, keep| RunOptions {
        provider,
        report_dir: Some(dir.join(sub)),
        keep_cluster: keep,
        seed,
        jobs: 1,
        cancel: cancel_rx.clone(),
        progress: Arc::new(report::console::ConsoleProgress::new(
            report::console::Verbosity::Verbose,
        )),
        faultline_bin: faultline_bin.clone(),
        controller_args: vec![],
        retries: 0,
        pause: Default::default(),
        trace: false,
    };

    // The sim first (seconds). Without Longhorn, kind gives a cluster the node image's CSI
    // stack (docs/kind.md) while the sim's `storage: none` has no CSI at all: the sim then runs
    // with its CSI driver, which the normaliser names alike (`<csi-driver>`).
    let mut sim_scenario = loaded.clone();
    if sim_scenario.scenario.spec.cluster.storage == Some(Storage::None) {
        sim_scenario.scenario.spec.cluster.storage = Some(Storage::Longhorn);
        println!("faultline diff: the sim runs with its CSI driver (kind: the node image's hostpath driver)");
    }
    let sim = provider::make_provider(ProviderKind::Sim, &suite.suite, None, None)?;
    let kept: runner::Kept = Default::default();
    let sim_opts = options(sim, "sim", false);
    let sim_report = runner::run_all(vec![sim_scenario], &suite, &sim_opts, &kept).await;
    let _ = sim_opts.provider.shutdown().await;

    let env_image = std::env::var("FAULTLINE_KIND_NODE_IMAGE").ok();
    let mut node_image = provider::kind::choose_node_image(
        a.node_image.as_deref(),
        env_image.as_deref(),
        suite.suite.kind_provider.node_image.as_deref(),
    )
    .map(|(i, _)| i);
    if node_image.is_none() {
        node_image = faultline_kind::exec::local_real_node_image().await;
    }
    let kind = provider::make_provider(ProviderKind::Kind, &suite.suite, None, node_image)?;
    let kind_opts = options(kind, "kind", a.keep_cluster);
    let kind_report = if cancel_rx.borrow().is_none() {
        runner::run_all(vec![loaded], &suite, &kind_opts, &kept).await
    } else {
        vec![]
    };
    if let Err(e) = kind_opts.provider.shutdown().await {
        eprintln!("faultline diff: releasing the kind cluster: {e:#}");
    }
    for k in kept.lock().iter() {
        println!("faultline diff: --keep-cluster: {}", k.description);
    }

    let verdict = |r: &[report::ScenarioReport]| r.first().map(|s| s.verdict);
    let (kv, sv) = (verdict(&kind_report), verdict(&sim_report));
    for (side, v, r) in [("kind", kv, &kind_report), ("sim", sv, &sim_report)] {
        println!(
            "faultline diff: {side}: {}{}",
            v.map(Verdict::word).unwrap_or("not run"),
            r.first()
                .and_then(|s| s.reason.as_deref())
                .map(|why| format!(" ({why})"))
                .unwrap_or_default()
        );
    }
    if kv.is_none() {
        bail!("the kind run did not happen (interrupted)");
    }
    let text = report_text(&dir, &name, a.width)?;
    print!("{text}");
    println!("faultline diff: artifacts and report in {}", dir.display());
    Ok(match kv {
        Some(Verdict::Passed) => 0,
        Some(Verdict::Failed) | Some(Verdict::Cancelled) => 1,
        _ => 2,
    })
}

/// Both sides' observations, compared; fidelity.txt and fidelity.json written beside them.
fn report_text(dir: &Path, name: &str, width: usize) -> Result<String> {
    let kind = collect::read_artifacts(&dir.join("kind").join(name))?;
    let sim = collect::read_artifacts(&dir.join("sim").join(name))?;
    let c = fidelity::compare(&kind, &sim);
    let text = format!(
        "# faultline diff {name}: kind (real kubelets) | sim\n{}",
        fidelity::render(&c, width)
    );
    std::fs::write(dir.join("fidelity.txt"), &text)?;
    std::fs::write(dir.join("fidelity.json"), serde_json::to_string_pretty(&c)?)?;
    Ok(text)
}
