//! Running scenarios: cluster up, CRDs, controller, invariants, steps (with faults, healing
//! schedules, expectations), then the clean-up that always happens - background expectations
//! judged, every active fault healed, controller stopped, artifacts written, cluster torn down
//! (or kept) - whether the steps passed, failed, panicked, timed out or were interrupted.
//!
//! Parts: this module runs a suite (`run_all`: `--jobs`, `--retries`); `scenario` runs one
//! attempt phase by phase (`ScenarioRun`); `step` is the typed `Step` each scenario step becomes;
//! `execute` runs steps (`StepRunner`); `error` types how a scenario ends (`StepError`,
//! `Failure`, `RunError`, `Outcome`). The runner builds the result model (`crate::report::model`)
//! and reaches the console only through the `Progress` hook; it imports no reporter.
//!
//! The steps run in their own task: a panic in a step (or in a provider's NodeOps) ends that
//! task only, and the clean-up, which holds the fault manager, still runs.

pub mod error;
mod execute;
mod scenario;
pub mod step;

pub use crate::report::{NoProgress, Progress};
pub use error::{BackgroundFailure, Failure, Outcome, RunError, StepError};

use crate::expect;
use crate::loader::{LoadedScenario, LoadedSuite};
use crate::model::Expect;
use crate::provider::{KeptCluster, Provider};
use crate::report::{ExpectationResult, FailedAttempt, ScenarioReport};
use crate::timeline::{Timeline, Verdict};
use futures::future::BoxFuture;
use futures::StreamExt;
use parking_lot::Mutex;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use step::PlannedStep;
use tokio::sync::watch;

/// What a paused scenario shows: where its cluster is and what can be done to it.
#[derive(Clone, Debug)]
pub struct PauseInfo {
    pub scenario: String,
    /// `the step `x` failed: ...` or `before step `y``.
    pub why: String,
    pub provider: &'static str,
    pub kubeconfig: PathBuf,
    pub nodes: Vec<String>,
    /// Faults injected and not healed yet, as the timeline shows them.
    pub active_faults: Vec<String>,
    /// The scenario's timeline up to the pause (the failing expectation's verdict last).
    pub timeline: Vec<crate::timeline::Entry>,
    /// When the cluster is frozen while paused (sim): its clock, which stands at this time.
    pub frozen_at: Option<chrono::DateTime<chrono::Utc>>,
}

/// Holds a scenario in place (`--pause-on-failure`, `--pause-at`) until the user continues.
/// A cluster that can be frozen (sim: `provider::Freeze`) is frozen meanwhile; on the others
/// the cluster goes on. The controller under test goes on running in both.
pub trait Pauser: Send + Sync {
    fn hold<'a>(&'a self, info: PauseInfo) -> BoxFuture<'a, ()>;
}

/// When to pause.
#[derive(Clone, Default)]
pub struct PausePolicy {
    pub on_failure: bool,
    /// Step names: pause before each (before faults due at it are healed).
    pub at_steps: Vec<String>,
    pub pauser: Option<Arc<dyn Pauser>>,
}

#[derive(Clone)]
pub struct RunOptions {
    pub provider: Arc<dyn Provider>,
    pub report_dir: Option<PathBuf>,
    pub keep_cluster: bool,
    pub seed: u64,
    pub jobs: usize,
    /// Set to the signal's name (SIGINT, SIGTERM) to interrupt the run.
    pub cancel: watch::Receiver<Option<String>>,
    pub progress: Arc<dyn Progress>,
    /// The faultline binary, exported to scripts as $FAULTLINE.
    pub faultline_bin: PathBuf,
    /// `--controller-arg`: appended to every controller's arguments.
    pub controller_args: Vec<String>,
    /// `--retries`: run a scenario that did not pass again, on a fresh cluster, up to this often.
    pub retries: u32,
    pub pause: PausePolicy,
    /// Record the controller's API trace (`trace.json`) and the end state (`end-state.json`)
    /// in each scenario's artifacts (`faultline explore`; also on for a scenario with
    /// `perturb:`). Needs a provider with a tracer (sim; existing through its API proxy) and a
    /// controller with a `serviceAccount`.
    pub trace: bool,
}

/// Clusters left running by --keep-cluster.
pub type Kept = Arc<Mutex<Vec<KeptCluster>>>;

/// Every scenario, `jobs` at a time, each retried up to `retries` times; sorted by name.
pub async fn run_all(
    scenarios: Vec<LoadedScenario>,
    suite: &LoadedSuite,
    options: &RunOptions,
    kept: &Kept,
) -> Vec<ScenarioReport> {
    let jobs = options.jobs.max(1);
    let mut reports: Vec<ScenarioReport> = futures::stream::iter(scenarios)
        .map(|loaded| async move {
            if options.cancel.borrow().is_some() {
                return cancelled_report(
                    &loaded,
                    suite,
                    "not started: the run was interrupted",
                    options.seed,
                );
            }
            run_with_retries(&loaded, suite, options, kept).await
        })
        .buffer_unordered(jobs)
        .collect()
        .await;
    reports.sort_by(|a, b| a.name.cmp(&b.name));
    reports
}

/// Attempts until one passes or `retries` more have failed; a pass after a failure is flaky.
async fn run_with_retries(
    loaded: &LoadedScenario,
    suite: &LoadedSuite,
    options: &RunOptions,
    kept: &Kept,
) -> ScenarioReport {
    let attempts = options.retries + 1;
    let mut failed = vec![];
    let mut attempt = 1;
    loop {
        let mut report = run_scenario(loaded, suite, options, kept, attempt).await;
        let retry = matches!(report.verdict, Verdict::Failed | Verdict::Error)
            && attempt < attempts
            && options.cancel.borrow().is_none();
        if retry {
            options
                .progress
                .scenario_retrying(&report, attempt, attempts);
            failed.push(FailedAttempt::of(&report, attempt));
            attempt += 1;
            continue;
        }
        report.attempts = attempt;
        report.flaky = report.verdict == Verdict::Passed && !failed.is_empty();
        report.failed_attempts = failed;
        options.progress.scenario_finished(&report);
        return report;
    }
}

/// A scenario the run did not start: cancelled, its expectations skipped.
fn cancelled_report(
    loaded: &LoadedScenario,
    suite: &LoadedSuite,
    why: &str,
    seed: u64,
) -> ScenarioReport {
    let spec = &loaded.scenario.spec;
    let mut report = empty_report(loaded, &Timeline::new(), seed);
    report.verdict = Verdict::Cancelled;
    report.reason = Some(why.into());
    report.expectations = skipped_expectations(
        &PlannedStep::plan(&spec.steps).unwrap_or_default(),
        &spec.invariants,
        &[],
        suite.suite.defaults.expect_within.get(),
    );
    report
}

/// A passed report with nothing in it yet, started when `timeline` was.
fn empty_report(loaded: &LoadedScenario, timeline: &Timeline, seed: u64) -> ScenarioReport {
    ScenarioReport {
        name: loaded.scenario.metadata.name.clone(),
        file: loaded.path.display().to_string(),
        description: loaded.scenario.metadata.description.clone(),
        verdict: Verdict::Passed,
        started_at: timeline
            .started_wall
            .to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        duration_ms: 0,
        reason: None,
        steps: vec![],
        expectations: vec![],
        faults: vec![],
        timeline: vec![],
        artifacts: None,
        controller_log_tail: vec![],
        seed,
        attempts: 1,
        flaky: false,
        failed_attempts: vec![],
    }
}

/// One attempt (1-based) of a scenario; a retry writes its artifacts to `<name>-attempt-<n>`.
pub async fn run_scenario(
    loaded: &LoadedScenario,
    suite: &LoadedSuite,
    options: &RunOptions,
    kept: &Kept,
    attempt: u32,
) -> ScenarioReport {
    if attempt == 1 {
        options
            .progress
            .scenario_started(&loaded.scenario.metadata.name);
    }
    scenario::ScenarioRun::new(loaded, suite, options, attempt)
        .run(kept)
        .await
}

/// Expectations that never ran (skipped steps, an interrupted run), so every expectation has a
/// result: each with the mode and budget it would have been judged by.
fn skipped_expectations(
    steps: &[PlannedStep],
    invariants: &[Expect],
    have: &[ExpectationResult],
    default_within: Duration,
) -> Vec<ExpectationResult> {
    let in_steps = PlannedStep::expectations(steps)
        .into_iter()
        .map(|e| (e, false));
    let invariants = invariants.iter().map(|e| (e, true));
    let mut out = vec![];
    for (e, invariant) in in_steps.chain(invariants) {
        let name = e.name.clone().unwrap_or_default();
        if have.iter().any(|r| r.name == name) {
            continue;
        }
        let (kind, description) = expect::describe(e);
        let mode = expect::mode_of(e, invariant);
        out.push(ExpectationResult {
            name,
            kind: kind.into(),
            description,
            mode,
            anchor: e.after.clone().unwrap_or_else(|| "previous".into()),
            anchor_ms: 0,
            budget: expect::budget_of(e, mode, default_within),
            verdict: Verdict::Skipped,
            started_ms: 0,
            finished_ms: 0,
            measured_ms: None,
            message: "not run: an earlier step failed or the run was interrupted".into(),
            last_observed: None,
            invariant,
            background: e.background,
            objects: vec![],
        });
    }
    out
}
