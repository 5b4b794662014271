//! `faultline explore SCENARIO`: the scenario once unperturbed, with the controller's API trace
//! and the end state recorded; perturbation points derived from that trace (a crash after each of
//! the controller's writes, a stale answer to each read that had a younger change to hide, a
//! relist for each watch event); then variants, `jobs` at a time until the budget is spent: one
//! perturbation each, in an order fixed by the seed, then pairs of them drawn by the seed. A
//! variant fails an oracle when the scenario's expectations fail, when its end state differs
//! from the unperturbed run's (normalised: `endstate`), when the controller left objects behind
//! (`leaks`), or when its request rate passes the hot-loop bound. A failing pair is shrunk to the
//! smallest set that still fails (`shrink`), which is reported and written out as a scenario with
//! its `perturb:` section; `faultline explore` on that file replays it (the baseline without the
//! perturbations, then the one variant with them). `explore.json` and `explore.html` (`html`)
//! report it all.

use crate::endstate::{self, Difference, EndState};
use crate::loader::{LoadedScenario, LoadedSuite};
use crate::perturb;
use crate::runner::step::{PlannedStep, Step};
use crate::runner::{self, NoProgress, RunOptions};
use crate::timeline::Verdict;
use anyhow::{bail, Context, Result};
use faultline_sim::http::trace::{Perturbation, Trace, TraceEntry, TraceKind};
use futures::StreamExt;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub mod html;
pub mod leaks;
pub mod shrink;

use leaks::Leak;

/// How to explore.
#[derive(Clone, Debug)]
pub struct ExploreOptions {
    /// No variant starts after this much time (the ones running finish).
    pub budget: Duration,
    pub seed: u64,
    pub jobs: usize,
    /// Where runs, repro scenarios and `explore.json` go.
    pub out: PathBuf,
    /// JSON pointers (`*` for any segment) left out of the end-state comparison.
    pub ignore: Vec<String>,
    /// The hot-loop bound: at most this many controller requests in any `rate_window`.
    pub max_requests: usize,
    pub rate_window: Duration,
    /// The stale-read window (how far a watch cache may lag).
    pub stale_window: Duration,
}

/// An oracle a variant failed.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase", tag = "oracle")]
pub enum Violation {
    /// The scenario's own expectations (or the run) failed.
    Expectations { verdict: Verdict, reason: String },
    /// The end state differs from the unperturbed run's.
    EndState { differences: usize },
    /// Objects the controller created that remain though their owner is gone, or that the
    /// unperturbed run did not leave behind.
    Leaked { leaks: Vec<Leak> },
    /// More controller requests in one window than the bound.
    HotLoop {
        requests: usize,
        window_ms: u64,
        bound: usize,
    },
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Violation::Expectations { verdict, reason } => {
                write!(f, "scenario {}: {reason}", verdict.word())
            }
            Violation::EndState { differences } => write!(
                f,
                "end state differs from the unperturbed run's ({differences} difference(s))"
            ),
            Violation::Leaked { leaks } => {
                write!(
                    f,
                    "leaked {} object(s) the controller created: ",
                    leaks.len()
                )?;
                let each: Vec<String> = leaks.iter().map(Leak::to_string).collect();
                write!(f, "{}", each.join("; "))
            }
            Violation::HotLoop {
                requests,
                window_ms,
                bound,
            } => write!(
                f,
                "hot loop: {requests} controller requests within {window_ms} ms (bound {bound})"
            ),
        }
    }
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VariantResult {
    pub index: usize,
    /// The perturbations of this variant (one, or a pair); for a failure that was shrunk, the
    /// smallest set that still failed, whose run the rest of this result describes.
    pub perturbations: Vec<Perturbation>,
    /// The set the variant ran with, when shrinking found a smaller one that still fails.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shrunk_from: Option<Vec<Perturbation>>,
    /// Runs spent shrinking (each tried subset is one).
    pub shrink_runs: usize,
    pub description: String,
    /// Whether every perturbation took effect in this run.
    pub fired: bool,
    pub verdict: Verdict,
    pub violations: Vec<Violation>,
    pub differences: Vec<Difference>,
    /// The controller's trace around the perturbation.
    pub trace_around: Vec<TraceEntry>,
    /// The scenario that reproduces a failing variant.
    pub repro: Option<PathBuf>,
    pub duration_ms: u64,
    pub artifacts: PathBuf,
}

impl VariantResult {
    pub fn failed(&self) -> bool {
        !self.violations.is_empty()
    }
    /// The perturbations the variant ran with (before any shrinking).
    pub fn tried(&self) -> &[Perturbation] {
        self.shrunk_from.as_deref().unwrap_or(&self.perturbations)
    }
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BaselineSummary {
    pub verdict: Verdict,
    pub duration_ms: u64,
    pub requests: usize,
    pub mutations: u64,
    pub watch_events: usize,
    pub stale_candidates: usize,
    pub peak_requests: usize,
    pub end_state_objects: usize,
    /// Objects the unperturbed run itself left with their owner gone: not held against the
    /// variants (a bug of the scenario as written, not of a perturbation).
    pub leaked: Vec<Leak>,
}

/// `explore.json`.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExploreReport {
    pub scenario: String,
    pub file: String,
    pub seed: u64,
    pub budget_ms: u64,
    pub elapsed_ms: u64,
    pub jobs: usize,
    /// Replaying a scenario's own `perturb:` rather than exploring.
    pub replay: bool,
    pub baseline: BaselineSummary,
    /// Perturbation points derived from the baseline's trace.
    pub points: usize,
    /// The points per kind (`crashAfterMutation`, `moveFault`, ...).
    pub points_by_kind: BTreeMap<&'static str, usize>,
    /// Pairs of points drawn by the seed (at most `MAX_PAIRS`).
    pub pair_points: usize,
    /// Variants run with one perturbation, and with two.
    pub singles_run: usize,
    pub pairs_run: usize,
    /// Failing variants.
    pub found: usize,
    /// Distinct smallest failing sets among them (pairs often shrink to a failing single).
    pub distinct: usize,
    pub variants: Vec<VariantResult>,
}

/// The points of a baseline trace, in the seed's order: crashes after each write and stale
/// answers to the reads that had something younger than the window to hide, shuffled per kind
/// and interleaved so that a small budget samples every kind; a relist of each watch event;
/// each of the scenario's fault steps (`fault_steps`) moved after writes of the baseline
/// (`move_ordinals`).
pub fn points(
    trace: &Trace,
    seed: u64,
    stale_window: Duration,
    fault_steps: &[String],
) -> Vec<Perturbation> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut crashes: Vec<Perturbation> = (1..=trace.mutations())
        .map(|k| Perturbation::CrashAfterMutation { k })
        .collect();
    let mut stale: Vec<Perturbation> = trace
        .stale_candidates()
        .into_iter()
        .map(|(n, _)| Perturbation::StaleRead {
            n,
            window: stale_window,
        })
        .collect();
    let mut relists: Vec<Perturbation> = (1..=trace.watch_events())
        .map(|n| Perturbation::WatchRelist { n })
        .collect();
    let mut moves: Vec<Perturbation> = fault_steps
        .iter()
        .flat_map(|step| {
            move_ordinals(trace.mutations())
                .into_iter()
                .map(|k| Perturbation::MoveFault {
                    step: step.clone(),
                    k,
                })
        })
        .collect();
    crashes.shuffle(&mut rng);
    stale.shuffle(&mut rng);
    relists.shuffle(&mut rng);
    // Last: a scenario without faults keeps the order it had before moves existed.
    moves.shuffle(&mut rng);
    let mut out = vec![];
    let mut kinds = [
        crashes.into_iter(),
        stale.into_iter(),
        relists.into_iter(),
        moves.into_iter(),
    ];
    loop {
        let round: Vec<Perturbation> = kinds.iter_mut().filter_map(|k| k.next()).collect();
        if round.is_empty() {
            return out;
        }
        out.extend(round);
    }
}

/// At most this many points per fault step: a long trace's writes are sampled.
pub const MAX_MOVES_PER_FAULT: u64 = 20;

/// The writes a fault step is moved after: each of the baseline's `writes`, or
/// `MAX_MOVES_PER_FAULT` of them spread evenly from the first to the last.
pub fn move_ordinals(writes: u64) -> Vec<u64> {
    let max = MAX_MOVES_PER_FAULT;
    if writes <= max {
        return (1..=writes).collect();
    }
    // writes - 1 > max - 1: the steps are at least 1 apart, so the ordinals are distinct.
    (0..max).map(|i| 1 + i * (writes - 1) / (max - 1)).collect()
}

/// The names of the scenario's fault steps (those nested in a `try` too), in order.
pub fn fault_steps(steps: &[PlannedStep]) -> Vec<String> {
    let mut out = vec![];
    for s in steps {
        match &s.step {
            Step::Fault(_) => out.push(s.name.clone()),
            Step::Try {
                steps,
                catch,
                finally,
            } => {
                for group in [Some(steps), catch.as_ref(), finally.as_ref()]
                    .into_iter()
                    .flatten()
                {
                    out.extend(fault_steps(group));
                }
            }
            Step::Apply(_)
            | Step::Create(_)
            | Step::Patch(_)
            | Step::Delete(_)
            | Step::Remediate(_)
            | Step::Sleep(_)
            | Step::Expect(_)
            | Step::Script(_) => {}
        }
    }
    out
}

/// How a perturbation's kind is named in `explore.json` (`pointsByKind`).
pub fn kind_name(p: &Perturbation) -> &'static str {
    match p {
        Perturbation::CrashAfterMutation { .. } => "crashAfterMutation",
        Perturbation::StaleRead { .. } => "staleRead",
        Perturbation::WatchRelist { .. } => "watchRelist",
        Perturbation::MoveFault { .. } => "moveFault",
    }
}

/// Whether two points can be carried out in one run: one fault step is moved once.
fn compatible(a: &Perturbation, b: &Perturbation) -> bool {
    !matches!(
        (a, b),
        (Perturbation::MoveFault { step: x, .. }, Perturbation::MoveFault { step: y, .. }) if x == y
    )
}

/// At most this many pairs are drawn: a long trace has far more than any budget runs.
pub const MAX_PAIRS: usize = 5000;

/// Pairs of distinct points in an order drawn by the seed (its own stream, so that the singles'
/// order does not shift when the pairs change). Each pair keeps the order its members have in
/// `singles`. Every pair when there are at most `MAX_PAIRS`, else `MAX_PAIRS` distinct ones.
pub fn pairs(singles: &[Perturbation], seed: u64) -> Vec<Vec<Perturbation>> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed ^ 0x7061_6972_7321);
    let n = singles.len();
    let total = n * n.saturating_sub(1) / 2;
    let ok = |i: usize, j: usize| compatible(&singles[i], &singles[j]);
    let mut idx: Vec<(usize, usize)> = if total <= MAX_PAIRS {
        let mut all: Vec<(usize, usize)> = (0..n)
            .flat_map(|i| (i + 1..n).map(move |j| (i, j)))
            .filter(|&(i, j)| ok(i, j))
            .collect();
        all.shuffle(&mut rng);
        all
    } else {
        let mut seen = std::collections::HashSet::new();
        let mut out = Vec::with_capacity(MAX_PAIRS);
        // Bounded: a trace this long has far more than MAX_PAIRS compatible pairs, but a
        // pathological one (one fault's moves only) must not loop forever.
        let mut tries = 0;
        while out.len() < MAX_PAIRS && tries < 100 * MAX_PAIRS {
            tries += 1;
            let (a, b) = (rng.random_range(0..n), rng.random_range(0..n));
            let pair = (a.min(b), a.max(b));
            if a != b && ok(a, b) && seen.insert(pair) {
                out.push(pair);
            }
        }
        out
    };
    idx.truncate(MAX_PAIRS);
    idx.into_iter()
        .map(|(i, j)| vec![singles[i].clone(), singles[j].clone()])
        .collect()
}

pub fn describe(p: &Perturbation) -> String {
    perturb::to_model(p)
        .kind()
        .map(|k| k.to_string())
        .unwrap_or_default()
}

/// A set of perturbations in words: `crash after mutating request 4 + watch relist 2`.
pub fn describe_set(ps: &[Perturbation]) -> String {
    ps.iter().map(describe).collect::<Vec<_>>().join(" + ")
}

fn slug_set(ps: &[Perturbation]) -> String {
    ps.iter().map(slug).collect::<Vec<_>>().join("-")
}

fn slug(p: &Perturbation) -> String {
    match p {
        Perturbation::CrashAfterMutation { k } => format!("crash-after-{k}"),
        Perturbation::StaleRead { n, .. } => format!("stale-read-{n}"),
        Perturbation::WatchRelist { n } => format!("watch-relist-{n}"),
        Perturbation::MoveFault { step, k } => format!("move-{step}-after-{k}"),
    }
}

/// One run of `loaded` with `perturbations`, tracing, its artifacts under `dir`.
struct Run {
    verdict: Verdict,
    reason: String,
    duration_ms: u64,
    trace: Trace,
    objects: Vec<serde_json::Value>,
    artifacts: PathBuf,
}

async fn run_once(
    loaded: &LoadedScenario,
    suite: &LoadedSuite,
    base: &RunOptions,
    perturbations: Vec<Perturbation>,
    dir: &Path,
) -> Result<Run> {
    let mut scenario = loaded.clone();
    scenario.scenario.spec.perturb = perturbations.iter().map(perturb::to_model).collect();
    let options = RunOptions {
        report_dir: Some(dir.to_path_buf()),
        trace: true,
        progress: Arc::new(NoProgress),
        retries: 0,
        keep_cluster: false,
        ..base.clone()
    };
    let report = runner::run_scenario(&scenario, suite, &options, &Default::default(), 1).await;
    let artifacts = dir.join(&report.name);
    let read = |f: &str| {
        std::fs::read_to_string(artifacts.join(f))
            .with_context(|| format!("reading {}", artifacts.join(f).display()))
    };
    let trace: Trace = match read("trace.json") {
        Ok(t) => serde_json::from_str(&t)?,
        Err(_) if report.verdict != Verdict::Passed => Trace::default(),
        Err(e) => return Err(e),
    };
    let objects = match read("end-state.json") {
        Ok(t) => serde_json::from_str(&t)?,
        Err(_) => vec![],
    };
    Ok(Run {
        verdict: report.verdict,
        reason: report.reason.unwrap_or_default(),
        duration_ms: report.duration_ms,
        trace,
        objects,
        artifacts,
    })
}

/// Explore `loaded` (or replay its `perturb:`). `on_variant` sees each variant as it ends.
pub async fn explore(
    loaded: &LoadedScenario,
    suite: &LoadedSuite,
    base: &RunOptions,
    opts: &ExploreOptions,
    on_variant: &(dyn Fn(&VariantResult) + Sync),
) -> Result<ExploreReport> {
    let started = Instant::now();
    let pinned: Vec<Perturbation> = loaded
        .scenario
        .spec
        .perturb
        .iter()
        .filter_map(|p| p.kind())
        .map(perturb::to_sim)
        .collect();
    std::fs::create_dir_all(&opts.out)
        .with_context(|| format!("creating {}", opts.out.display()))?;
    let baseline = run_once(loaded, suite, base, vec![], &opts.out.join("baseline")).await?;
    if baseline.verdict != Verdict::Passed {
        bail!(
            "the unperturbed run did not pass ({}): {} - explore needs a passing scenario (artifacts: {})",
            baseline.verdict.word(),
            baseline.reason,
            baseline.artifacts.display()
        );
    }
    if baseline.trace.requests().next().is_none() {
        bail!("the unperturbed run recorded no controller requests (does the scenario start a controller with a `serviceAccount`?)");
    }
    let reference = endstate::normalise(&baseline.objects, &opts.ignore);
    let captured = endstate::captured_kinds(suite);
    let baseline_leaked = leaks::leaked(
        &baseline.trace,
        &baseline.objects,
        &captured,
        &reference,
        &opts.ignore,
    );
    let baseline_leaks: BTreeSet<String> = baseline_leaked.iter().map(|l| l.key.clone()).collect();
    let peak = baseline.trace.peak_requests(opts.rate_window);
    let summary = BaselineSummary {
        verdict: baseline.verdict,
        duration_ms: baseline.duration_ms,
        requests: baseline.trace.requests().count(),
        mutations: baseline.trace.mutations(),
        watch_events: baseline
            .trace
            .entries
            .iter()
            .filter(|e| matches!(e.what, TraceKind::WatchEvent { .. }))
            .count(),
        stale_candidates: baseline.trace.stale_candidates().len(),
        peak_requests: peak,
        end_state_objects: baseline.objects.len(),
        leaked: baseline_leaked,
    };
    let replay = !pinned.is_empty();
    let deadline = started + opts.budget;
    let cx = &Ctx {
        loaded,
        suite,
        base,
        opts,
        reference: &reference,
        replay,
        captured: &captured,
        baseline_leaks: &baseline_leaks,
    };
    let batch = |sets: Vec<Vec<Perturbation>>, first: usize| {
        futures::stream::iter(sets.into_iter().enumerate())
            .map(move |(i, ps)| async move {
                // Replays always run; exploring stops starting variants once the budget is spent.
                if !replay && Instant::now() >= deadline {
                    return None;
                }
                let index = first + i;
                let dir = opts.out.join("variants").join(format!("{index:03}"));
                let r = variant(cx, index, ps, &dir).await;
                if let Some(v) = &r {
                    on_variant(v);
                }
                r
            })
            .buffer_unordered(opts.jobs.max(1))
            .filter_map(|v| async move { v })
            .collect::<Vec<VariantResult>>()
    };
    // The singles first, all of them started before any pair (the pairs' phase begins when the
    // singles are done, so that which variants run depends on the seed and budget only).
    let (singles, pair_sets) = if replay {
        (vec![pinned], vec![])
    } else {
        let faults = fault_steps(&PlannedStep::plan(&loaded.scenario.spec.steps)?);
        let singles = points(&baseline.trace, opts.seed, opts.stale_window, &faults);
        let pairs = pairs(&singles, opts.seed);
        (singles.into_iter().map(|p| vec![p]).collect(), pairs)
    };
    let (n_points, n_pairs) = (singles.len(), pair_sets.len());
    let mut points_by_kind = BTreeMap::new();
    for p in singles.iter().flatten().filter(|_| !replay) {
        *points_by_kind.entry(kind_name(p)).or_default() += 1;
    }
    let mut variants = batch(singles, 0).await;
    variants.extend(batch(pair_sets, n_points).await);
    let sized = |n: usize| variants.iter().filter(|v| v.tried().len() == n).count();
    let (singles_run, pairs_run) = (sized(1), sized(2));
    variants.sort_by_key(|v| v.index);
    let found = variants.iter().filter(|v| v.failed()).count();
    let distinct = variants
        .iter()
        .filter(|v| v.failed())
        .map(|v| slug_set(&v.perturbations))
        .collect::<BTreeSet<_>>()
        .len();
    let report = ExploreReport {
        scenario: loaded.scenario.metadata.name.clone(),
        file: loaded.path.display().to_string(),
        seed: opts.seed,
        budget_ms: opts.budget.as_millis() as u64,
        elapsed_ms: started.elapsed().as_millis() as u64,
        jobs: opts.jobs,
        replay,
        baseline: summary,
        points: n_points,
        points_by_kind,
        pair_points: n_pairs,
        singles_run,
        pairs_run,
        found,
        distinct,
        variants,
    };
    std::fs::write(
        opts.out.join("explore.json"),
        serde_json::to_string_pretty(&report)?,
    )?;
    std::fs::write(opts.out.join("explore.html"), html::render(&report))?;
    Ok(report)
}

/// What the variants of one exploration share.
struct Ctx<'a> {
    loaded: &'a LoadedScenario,
    suite: &'a LoadedSuite,
    base: &'a RunOptions,
    opts: &'a ExploreOptions,
    /// The unperturbed run's end state, normalised.
    reference: &'a EndState,
    /// Replaying a scenario's own `perturb:`: no shrinking, no repro (the file is its own).
    replay: bool,
    /// The kinds the end state holds (an owner of another kind cannot be judged gone).
    captured: &'a [(String, String)],
    /// End-state keys of what the unperturbed run leaked itself.
    baseline_leaks: &'a BTreeSet<String>,
}

/// One run with a set of perturbations, judged by the oracles.
struct Judged {
    fired: bool,
    verdict: Verdict,
    violations: Vec<Violation>,
    differences: Vec<Difference>,
    trace_around: Vec<TraceEntry>,
    duration_ms: u64,
    artifacts: PathBuf,
}

impl Judged {
    fn failed(&self) -> bool {
        !self.violations.is_empty()
    }
}

async fn judge(cx: &Ctx<'_>, ps: &[Perturbation], dir: &Path) -> Judged {
    let opts = cx.opts;
    let run = match run_once(cx.loaded, cx.suite, cx.base, ps.to_vec(), dir).await {
        Ok(r) => r,
        Err(e) => Run {
            verdict: Verdict::Error,
            reason: format!("{e:#}"),
            duration_ms: 0,
            trace: Trace::default(),
            objects: vec![],
            artifacts: dir.to_path_buf(),
        },
    };
    let mut violations = vec![];
    if run.verdict != Verdict::Passed {
        violations.push(Violation::Expectations {
            verdict: run.verdict,
            reason: run.reason.clone(),
        });
    }
    let differences = endstate::diff(
        cx.reference,
        &endstate::normalise(&run.objects, &opts.ignore),
    );
    if !differences.is_empty() && run.verdict == Verdict::Passed {
        violations.push(Violation::EndState {
            differences: differences.len(),
        });
    }
    let leaks: Vec<Leak> = leaks::leaked(
        &run.trace,
        &run.objects,
        cx.captured,
        cx.reference,
        &opts.ignore,
    )
    .into_iter()
    .filter(|l| !cx.baseline_leaks.contains(&l.key))
    .collect();
    if !leaks.is_empty() && run.verdict == Verdict::Passed {
        violations.push(Violation::Leaked { leaks });
    }
    let requests = run.trace.peak_requests(opts.rate_window);
    if requests > opts.max_requests {
        violations.push(Violation::HotLoop {
            requests,
            window_ms: opts.rate_window.as_millis() as u64,
            bound: opts.max_requests,
        });
    }
    // A moved fault that never ran (the controller made fewer writes) took the fault out of
    // the scenario: that run is the scenario without its fault, not a perturbation of what the
    // controller observed, so it is not judged (`fired: false` says why).
    if fault_dropped(ps, &run.trace.fired) {
        violations.clear();
    }
    let trace_around = run
        .trace
        .around(
            |e| {
                matches!(
                    &e.what,
                    TraceKind::Request {
                        perturbed: Some(_),
                        ..
                    } | TraceKind::WatchEvent { withheld: true, .. }
                        | TraceKind::MovedFault { .. }
                )
            },
            6,
            12,
        )
        .to_vec();
    Judged {
        fired: ps.iter().all(|p| run.trace.fired.contains(p)),
        verdict: run.verdict,
        violations,
        differences,
        trace_around,
        duration_ms: run.duration_ms,
        artifacts: run.artifacts,
    }
}

/// Whether one of `ps` moved a fault that never ran (not in `fired`).
fn fault_dropped(ps: &[Perturbation], fired: &[Perturbation]) -> bool {
    ps.iter()
        .any(|p| matches!(p, Perturbation::MoveFault { .. }) && !fired.contains(p))
}

/// One variant: its run judged; a failure with more than one perturbation shrunk (each tried
/// subset run under `dir/shrink-<slug>`), the smallest failing set reported and written out.
async fn variant(
    cx: &Ctx<'_>,
    index: usize,
    ps: Vec<Perturbation>,
    dir: &Path,
) -> Option<VariantResult> {
    if ps.is_empty() {
        return None;
    }
    let mut judged = judge(cx, &ps, dir).await;
    let mut set = ps.clone();
    let mut shrink_runs = 0;
    if judged.failed() && ps.len() > 1 && !cx.replay {
        let shrunk = shrink::shrink(ps.clone(), |subset: Vec<Perturbation>| async move {
            let sub = dir.join(format!("shrink-{}", slug_set(&subset)));
            let j = judge(cx, &subset, &sub).await;
            j.failed().then_some(j)
        })
        .await;
        shrink_runs = shrunk.runs;
        if let Some(j) = shrunk.result {
            judged = j;
            set = shrunk.set;
        }
    }
    let shrunk_from = (set.len() < ps.len()).then_some(ps);
    let mut v = VariantResult {
        index,
        description: describe_set(&set),
        perturbations: set,
        shrunk_from,
        shrink_runs,
        fired: judged.fired,
        verdict: judged.verdict,
        violations: judged.violations,
        differences: judged.differences,
        trace_around: judged.trace_around,
        repro: None,
        duration_ms: judged.duration_ms,
        artifacts: judged.artifacts,
    };
    if v.failed() && !cx.replay {
        v.repro = write_repro(
            cx.loaded,
            cx.suite,
            &v.perturbations,
            &cx.opts.out.join("repro"),
        )
        .ok();
    }
    Some(v)
}

/// The scenario with its `perturb:` section, named after the perturbation; paths of its
/// steps' manifests made absolute so that it loads from where it is written (run it with
/// `faultline explore FILE --config <the suite>`).
pub fn write_repro(
    loaded: &LoadedScenario,
    suite: &LoadedSuite,
    ps: &[Perturbation],
    dir: &Path,
) -> Result<PathBuf> {
    let text = std::fs::read_to_string(&loaded.path)
        .with_context(|| format!("reading {}", loaded.path.display()))?;
    let mut doc: serde_yaml::Value = serde_yaml::from_str(&text)?;
    let name = format!("{}-{}", loaded.scenario.metadata.name, slug_set(ps));
    let name: String = name.chars().take(63).collect();
    doc["metadata"]["name"] = serde_yaml::Value::from(name.trim_end_matches('-'));
    let perturbs: Vec<_> = ps.iter().map(perturb::to_model).collect();
    doc["spec"]["perturb"] = serde_yaml::to_value(&perturbs)?;
    if let Some(steps) = doc.get_mut("spec").and_then(|s| s.get_mut("steps")) {
        absolute_paths(steps, &loaded.dir);
    }
    std::fs::create_dir_all(dir)?;
    let file = dir.join(format!("{name}.yaml"));
    let config = suite
        .path
        .as_deref()
        .and_then(|p| std::fs::canonicalize(p).ok())
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "<the suite's faultline.yaml>".into());
    let head = format!(
        "# Written by `faultline explore` from {}: the unperturbed run passes, this one did not.\n# Replay (the unperturbed run, then this one, judged alike):\n#   faultline explore {} --config {config} [the same --controller-arg]\n",
        loaded.path.display(),
        file.display()
    );
    std::fs::write(&file, head + &serde_yaml::to_string(&doc)?)?;
    Ok(file)
}

/// Manifest paths of steps (`apply`, `create`, `delete`: relative to the scenario's
/// directory) made absolute, in nested `try`/`catch`/`finally` steps too.
fn absolute_paths(v: &mut serde_yaml::Value, dir: &Path) {
    match v {
        serde_yaml::Value::Sequence(s) => s.iter_mut().for_each(|x| absolute_paths(x, dir)),
        serde_yaml::Value::Mapping(m) => {
            for (k, x) in m.iter_mut() {
                let key = k.as_str().unwrap_or("");
                match x {
                    serde_yaml::Value::String(p)
                        if matches!(key, "apply" | "create" | "delete")
                            && Path::new(p.as_str()).is_relative()
                            && dir.join(p.as_str()).exists() =>
                    {
                        let abs = std::fs::canonicalize(dir.join(p.as_str()))
                            .unwrap_or_else(|_| dir.join(p.as_str()));
                        *p = abs.display().to_string();
                    }
                    _ => absolute_paths(x, dir),
                }
            }
        }
        _ => {}
    }
}

/// The console lines of one variant: one line, and for a failure its violations, end-state
/// differences and the controller's trace around the perturbation.
pub fn render_variant(v: &VariantResult) -> String {
    let mark = if v.failed() { "FOUND" } else { "ok   " };
    let fired = if v.fired { "" } else { " (did not fire)" };
    let mut out = format!(
        "{mark} #{:03} {}{fired} ({:.1}s)\n",
        v.index,
        v.description,
        v.duration_ms as f64 / 1000.0
    );
    if !v.failed() {
        return out;
    }
    if let Some(from) = &v.shrunk_from {
        out += &format!(
            "      shrunk from {} ({} run(s)): the smaller set fails alone\n",
            describe_set(from),
            v.shrink_runs
        );
    } else if v.shrink_runs > 0 {
        out += &format!(
            "      minimal: no smaller set failed ({} run(s))\n",
            v.shrink_runs
        );
    }
    for x in &v.violations {
        out += &format!("      {x}\n");
    }
    if !v.differences.is_empty() {
        out += "      end state (unperturbed -> this run):\n";
        for d in &v.differences {
            for line in d.to_string().lines() {
                out += &format!("        {line}\n");
            }
        }
    }
    if !v.trace_around.is_empty() {
        out += "      controller trace around the perturbation:\n";
        for e in &v.trace_around {
            out += &format!("        {}\n", render_entry(e));
        }
    }
    if let Some(r) = &v.repro {
        out += &format!("      reproduce: {}\n", r.display());
    }
    out
}

fn render_entry(e: &TraceEntry) -> String {
    let at = format!("{:>7.3}s", e.at_ms as f64 / 1000.0);
    match &e.what {
        TraceKind::Request {
            verb,
            resource,
            namespace,
            name,
            code,
            mutation,
            perturbed,
            ..
        } => {
            let target = [namespace.as_deref(), name.as_deref()]
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
                .join("/");
            let write = mutation
                .map(|k| format!(" [write {k}]"))
                .unwrap_or_default();
            let p = perturbed
                .as_ref()
                .map(|p| format!("  <== {p}"))
                .unwrap_or_default();
            format!("{at} {verb:?} {resource} {target} -> {code}{write}{p}")
        }
        TraceKind::WatchEvent {
            resource,
            event,
            namespace,
            name,
            resource_version,
            withheld,
            ..
        } => {
            let ns = namespace
                .as_deref()
                .map(|n| format!("{n}/"))
                .unwrap_or_default();
            let p = if *withheld {
                "  <== withheld, the watch closed with 410 Expired"
            } else {
                ""
            };
            format!("{at} watch {event} {resource} {ns}{name} rv={resource_version}{p}")
        }
        TraceKind::MovedFault { step, failed } => {
            let how = if *failed { "failed" } else { "injected" };
            format!("{at} fault step {step} {how} (moved here; the controller held meanwhile)")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use faultline_sim::http::trace::Verb;

    fn trace() -> Trace {
        let req = |verb, mutation, read, stale_from| TraceEntry {
            seq: 0,
            at_ms: 0,
            what: TraceKind::Request {
                verb,
                resource: "pods".into(),
                namespace: None,
                name: None,
                kind: None,
                resource_version: None,
                store_rv: 1,
                code: 200,
                mutation,
                read,
                stale_from,
                perturbed: None,
            },
        };
        let ev = |n| TraceEntry {
            seq: 0,
            at_ms: 0,
            what: TraceKind::WatchEvent {
                resource: "pods".into(),
                event: "ADDED".into(),
                namespace: None,
                name: "p".into(),
                resource_version: "1".into(),
                ordinal: Some(n),
                withheld: false,
            },
        };
        Trace {
            entries: vec![
                ev(1),
                ev(2),
                req(Verb::Get, None, Some(1), Some(3)),
                req(Verb::Create, Some(1), None, None),
                req(Verb::Get, None, Some(2), None),
                req(Verb::Patch, Some(2), None, None),
                req(Verb::Get, None, Some(3), Some(7)),
                req(Verb::Update, Some(3), None, None),
            ],
            ..Default::default()
        }
    }

    #[test]
    fn points_cover_every_write_and_stale_candidate_in_the_seeds_order() {
        let w = Duration::from_secs(3);
        let a = points(&trace(), 1, w, &[]);
        assert_eq!(a.len(), 7, "{a:?}");
        assert!(matches!(a[2], Perturbation::WatchRelist { .. }));
        assert_eq!(a, points(&trace(), 1, w, &[]), "same seed, same order");
        assert!(matches!(a[0], Perturbation::CrashAfterMutation { .. }));
        assert!(
            matches!(a[1], Perturbation::StaleRead { .. }),
            "interleaved"
        );
        let mut ks: Vec<u64> = a
            .iter()
            .filter_map(|p| match p {
                Perturbation::CrashAfterMutation { k } => Some(*k),
                _ => None,
            })
            .collect();
        ks.sort();
        assert_eq!(ks, vec![1, 2, 3]);
        let orders: std::collections::BTreeSet<String> = (0..20)
            .map(|s| format!("{:?}", points(&trace(), s, w, &[])))
            .collect();
        assert!(orders.len() > 1, "the seed changes the order");
    }

    #[test]
    fn move_ordinals_are_every_write_or_twenty_spread_over_the_trace() {
        // (writes in the baseline, expected ordinals; None: only the shape is checked)
        let cases: &[(u64, Option<Vec<u64>>)] = &[
            (0, Some(vec![])),
            (1, Some(vec![1])),
            (3, Some(vec![1, 2, 3])),
            (20, Some((1..=20).collect())),
            (21, None),
            (39, None),
            (100, None),
            (1000, None),
        ];
        for (writes, want) in cases {
            let got = move_ordinals(*writes);
            match want {
                Some(w) => assert_eq!(&got, w, "{writes} writes"),
                None => {
                    assert_eq!(got.len() as u64, MAX_MOVES_PER_FAULT, "{writes}: {got:?}");
                    assert_eq!((got[0], *got.last().unwrap()), (1, *writes), "{got:?}");
                    assert!(
                        got.windows(2).all(|w| w[0] < w[1]),
                        "distinct, in order: {got:?}"
                    );
                    // Spread: no gap more than twice the even spacing.
                    let even = (*writes - 1) as f64 / (MAX_MOVES_PER_FAULT - 1) as f64;
                    assert!(
                        got.windows(2)
                            .all(|w| ((w[1] - w[0]) as f64) < 2.0 * even + 1.0),
                        "{writes}: {got:?}"
                    );
                }
            }
        }
        assert_eq!(move_ordinals(100)[..3], [1, 6, 11]);
    }

    #[test]
    fn points_move_each_fault_step_after_each_write_interleaved_with_the_other_kinds() {
        let w = Duration::from_secs(3);
        let faults = vec!["csi-down".to_string(), "kubelet-stopped".to_string()];
        let a = points(&trace(), 1, w, &faults);
        let moves: Vec<(String, u64)> = a
            .iter()
            .filter_map(|p| match p {
                Perturbation::MoveFault { step, k } => Some((step.clone(), *k)),
                _ => None,
            })
            .collect();
        // 3 writes in the baseline, 2 fault steps.
        assert_eq!(moves.len(), 6, "{a:?}");
        let mut sorted = moves.clone();
        sorted.sort();
        assert_eq!(
            sorted,
            [1, 2, 3]
                .into_iter()
                .map(|k| ("csi-down".to_string(), k))
                .chain(
                    [1, 2, 3]
                        .into_iter()
                        .map(|k| ("kubelet-stopped".to_string(), k))
                )
                .collect::<Vec<_>>()
        );
        assert_eq!(a.len(), 7 + 6);
        // The first round holds one of each kind, the move last.
        assert_eq!(
            a[..4].iter().map(kind_name).collect::<Vec<_>>(),
            [
                "crashAfterMutation",
                "staleRead",
                "watchRelist",
                "moveFault"
            ]
        );
        // The other kinds' order is the one they have without faults.
        let others: Vec<&Perturbation> = a
            .iter()
            .filter(|p| !matches!(p, Perturbation::MoveFault { .. }))
            .collect();
        let without = points(&trace(), 1, w, &[]);
        assert_eq!(others, without.iter().collect::<Vec<_>>());
        // No pair moves one fault step twice.
        for pair in pairs(&a, 1) {
            assert!(compatible(&pair[0], &pair[1]), "{pair:?}");
        }
        let n = a.len();
        assert_eq!(
            pairs(&a, 1).len(),
            n * (n - 1) / 2 - 2 * 3,
            "3 same-step pairs per fault"
        );
    }

    #[test]
    fn only_a_moved_fault_that_never_ran_drops_the_fault() {
        let moved = Perturbation::MoveFault {
            step: "csi-down".into(),
            k: 9,
        };
        let crash = Perturbation::CrashAfterMutation { k: 3 };
        // (perturbations, fired, dropped)
        let cases = [
            (vec![moved.clone()], vec![], true),
            (vec![moved.clone()], vec![moved.clone()], false),
            (vec![crash.clone()], vec![], false),
            (
                vec![crash.clone(), moved.clone()],
                vec![crash.clone()],
                true,
            ),
            (
                vec![crash.clone(), moved.clone()],
                vec![moved.clone()],
                false,
            ),
        ];
        for (ps, fired, want) in cases {
            assert_eq!(fault_dropped(&ps, &fired), want, "{ps:?} fired {fired:?}");
        }
    }

    #[test]
    fn pairs_are_every_distinct_pair_in_the_seeds_order() {
        let singles = points(&trace(), 1, Duration::from_secs(3), &[]);
        let a = pairs(&singles, 1);
        assert_eq!(a.len(), 7 * 6 / 2, "{a:?}");
        assert_eq!(a, pairs(&singles, 1), "same seed, same pairs");
        let pos = |p: &Perturbation| singles.iter().position(|x| x == p).unwrap();
        let mut seen = std::collections::BTreeSet::new();
        for pair in &a {
            assert_eq!(pair.len(), 2);
            assert!(
                pos(&pair[0]) < pos(&pair[1]),
                "kept in the singles' order: {pair:?}"
            );
            assert!(seen.insert((pos(&pair[0]), pos(&pair[1]))), "no pair twice");
        }
        assert_ne!(a, pairs(&singles, 2), "the seed changes the order");
        assert!(pairs(&singles[..1], 1).is_empty(), "one point, no pair");
    }

    #[test]
    fn pairs_of_a_long_trace_are_capped_and_distinct() {
        let singles: Vec<Perturbation> = (1..=200)
            .map(|k| Perturbation::CrashAfterMutation { k })
            .collect();
        let a = pairs(&singles, 3);
        assert_eq!(a.len(), MAX_PAIRS);
        let set: std::collections::BTreeSet<String> = a.iter().map(|p| format!("{p:?}")).collect();
        assert_eq!(set.len(), MAX_PAIRS, "distinct");
        assert!(a.iter().all(|p| p[0] != p[1]));
    }
}
