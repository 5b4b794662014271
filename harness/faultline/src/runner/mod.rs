//! Running scenarios: cluster up, CRDs, controller, invariants, steps (with faults, healing
//! schedules, expectations), then the clean-up that always happens - background expectations
//! judged, every active fault healed, controller stopped, artifacts written, cluster torn down
//! (or kept) - whether the steps passed, failed, panicked, timed out or were interrupted.
//!
//! The steps run in their own task: a panic in a step (or in a provider's NodeOps) ends that
//! task only, and the clean-up, which holds the fault manager, still runs.

use crate::controller::{ControllerProcess, ControllerSpec};
use crate::events::EventStore;
use crate::expect::{self, ExpectationResult};
use crate::faults::FaultManager;
use crate::k8s::{self, Kube};
use crate::loader::{LoadedScenario, LoadedSuite};
use crate::logs::LogStore;
use crate::model::duration::format_duration;
use crate::model::{Expect, Heal, LogSourceKind, Manifests, Step};
use crate::provider::{ClusterSpec, ControllerMode, KeptCluster, Provider};
use crate::report::{ScenarioReport, StepResult};
use crate::timeline::{Anchors, EntryKind, Timeline, Verdict};
use anyhow::{anyhow, bail, Context, Result};
use futures::future::BoxFuture;
use futures::StreamExt;
use parking_lot::Mutex;
use serde_json::Value;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// Live progress, for the console reporter.
pub trait Progress: Send + Sync {
    fn scenario_started(&self, _name: &str) {}
    fn step_started(&self, _scenario: &str, _step: &str, _kind: &str) {}
    /// Attempt `attempt` of `of` did not pass; the scenario runs again on a fresh cluster.
    fn scenario_retrying(&self, _report: &ScenarioReport, _attempt: u32, _of: u32) {}
    /// The final result (after retries).
    fn scenario_finished(&self, _report: &ScenarioReport) {}
}

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
}

/// Holds a scenario in place (`--pause-on-failure`, `--pause-at`) until the user continues;
/// everything else - the cluster, the controller, the faults, watches - goes on meanwhile.
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

pub struct NoProgress;
impl Progress for NoProgress {}

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
}

/// Clusters left running by --keep-cluster.
pub type Kept = Arc<Mutex<Vec<KeptCluster>>>;

pub async fn run_all(
    scenarios: Vec<LoadedScenario>,
    suite: &LoadedSuite,
    opts: &RunOptions,
    kept: &Kept,
) -> Vec<ScenarioReport> {
    let jobs = opts.jobs.max(1);
    let mut reports: Vec<ScenarioReport> = futures::stream::iter(scenarios)
        .map(|s| async move {
            if opts.cancel.borrow().is_some() {
                return cancelled_report(&s, "not started: the run was interrupted", opts.seed);
            }
            run_with_retries(&s, suite, opts, kept).await
        })
        .buffer_unordered(jobs)
        .collect()
        .await;
    reports.sort_by(|a, b| a.name.cmp(&b.name));
    reports
}

/// Attempts until one passes or `retries` more have failed; a pass after a failure is flaky.
async fn run_with_retries(
    s: &LoadedScenario,
    suite: &LoadedSuite,
    opts: &RunOptions,
    kept: &Kept,
) -> ScenarioReport {
    let attempts = opts.retries + 1;
    let mut failed = vec![];
    let mut attempt = 1;
    loop {
        let mut r = run_scenario(s, suite, opts, kept, attempt).await;
        let retry = matches!(r.verdict, Verdict::Failed | Verdict::Error)
            && attempt < attempts
            && opts.cancel.borrow().is_none();
        if retry {
            opts.progress.scenario_retrying(&r, attempt, attempts);
            failed.push(crate::report::FailedAttempt::of(&r, attempt));
            attempt += 1;
            continue;
        }
        r.attempts = attempt;
        r.flaky = r.verdict == Verdict::Passed && !failed.is_empty();
        r.failed_attempts = failed;
        opts.progress.scenario_finished(&r);
        return r;
    }
}

fn cancelled_report(s: &LoadedScenario, why: &str, seed: u64) -> ScenarioReport {
    let mut r = empty_report(s, &Timeline::new(), seed);
    r.verdict = Verdict::Cancelled;
    r.reason = Some(why.into());
    r.expectations = skipped_expectations(&s.scenario.spec.steps, &s.scenario.spec.invariants, &[]);
    r
}

fn empty_report(s: &LoadedScenario, tl: &Timeline, seed: u64) -> ScenarioReport {
    ScenarioReport {
        name: s.scenario.metadata.name.clone(),
        file: s.path.display().to_string(),
        description: s.scenario.metadata.description.clone(),
        verdict: Verdict::Passed,
        started_at: tl
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

/// Why the steps stopped.
#[derive(Debug)]
enum Stop {
    Done(Result<(), String>),
    Panicked(String),
    Cancelled(String),
    Aborted(String),
    TimedOut(Duration),
}

/// Everything a running scenario's steps share.
struct Scn {
    name: String,
    dir: PathBuf,
    workdir: PathBuf,
    kubeconfig: PathBuf,
    kube: Kube,
    timeline: Timeline,
    anchors: Anchors,
    faults: Arc<FaultManager>,
    events: EventStore,
    logs: LogStore,
    end: watch::Receiver<bool>,
    abort: watch::Sender<Option<String>>,
    defaults: crate::model::Defaults,
    seed: u64,
    faultline_bin: PathBuf,
    progress: Arc<dyn Progress>,
    previous: Mutex<Instant>,
    current_step: Mutex<String>,
    heal_at: Mutex<HashMap<String, Vec<String>>>,
    heal_timers: Mutex<Vec<tokio::task::JoinHandle<()>>>,
    steps: Mutex<Vec<StepResult>>,
    expectations: Mutex<Vec<ExpectationResult>>,
    background: Mutex<Vec<tokio::task::JoinHandle<ExpectationResult>>>,
    provider: &'static str,
    nodes: Vec<String>,
    pause: PausePolicy,
    /// Paused time, which the scenario timeout does not count; `paused` is set while holding.
    paused: watch::Sender<bool>,
    paused_total: Mutex<Duration>,
}

impl Scn {
    /// Hold here (the cluster, controller and faults stay as they are) until the user continues.
    async fn pause(&self, why: String) {
        let Some(p) = &self.pause.pauser else { return };
        self.timeline
            .record(EntryKind::Step, format!("paused: {why}"));
        let info = PauseInfo {
            scenario: self.name.clone(),
            why,
            provider: self.provider,
            kubeconfig: self.kubeconfig.clone(),
            nodes: self.nodes.clone(),
            active_faults: self.faults.active_summaries(),
        };
        let began = Instant::now();
        self.paused.send_replace(true);
        p.hold(info).await;
        *self.paused_total.lock() += began.elapsed();
        self.paused.send_replace(false);
        self.timeline.record(EntryKind::Step, "resumed");
    }

    /// Sleeps until `timeout` of unpaused time has passed since `start`.
    async fn deadline(&self, start: Instant, timeout: Duration) {
        let mut paused = self.paused.subscribe();
        loop {
            let _ = paused.wait_for(|p| !*p).await;
            let until = start + timeout + *self.paused_total.lock();
            tokio::select! {
                _ = tokio::time::sleep_until(until.into()) => {
                    if !*self.paused.borrow() && Instant::now() >= start + timeout + *self.paused_total.lock() {
                        return;
                    }
                }
                _ = paused.wait_for(|p| *p) => {}
            }
        }
    }
}

/// One attempt (1-based) of a scenario; a retry writes its artifacts to `<name>-attempt-<n>`.
pub async fn run_scenario(
    ls: &LoadedScenario,
    suite: &LoadedSuite,
    opts: &RunOptions,
    kept: &Kept,
    attempt: u32,
) -> ScenarioReport {
    let sc = &ls.scenario;
    let name = sc.metadata.name.clone();
    if attempt == 1 {
        opts.progress.scenario_started(&name);
    }
    let timeline = Timeline::new();
    let mut report = empty_report(ls, &timeline, opts.seed);
    let tmp = tempfile::tempdir().ok();
    let dir_name = if attempt == 1 {
        name.clone()
    } else {
        format!("{name}-attempt-{attempt}")
    };
    let workdir = match (&opts.report_dir, &tmp) {
        (Some(d), _) => d.join(&dir_name),
        (None, Some(t)) => t.path().to_path_buf(),
        (None, None) => std::env::temp_dir().join(format!("faultline-{name}")),
    };
    let _ = std::fs::create_dir_all(&workdir);
    // Absolute: the kubeconfig in it is handed to processes running elsewhere.
    let workdir = std::path::absolute(&workdir).unwrap_or(workdir);
    let spec = ClusterSpec {
        name: name.clone(),
        nodes: sc.spec.cluster.effective_nodes(),
        storage: sc.spec.cluster.storage,
        sim: sc.spec.cluster.sim.clone(),
        seed: opts.seed,
        workdir: workdir.clone(),
    };
    let defaults = suite.suite.defaults.clone();
    let op_timeout = defaults.step_timeout.get();

    timeline.record(
        EntryKind::Step,
        format!("cluster starting ({})", opts.provider.name()),
    );
    let start_timeout = opts.provider.start_timeout();
    let cluster = match tokio::time::timeout(start_timeout, opts.provider.start(&spec)).await {
        Ok(Ok(c)) => c,
        Ok(Err(e)) => {
            return finish_error(
                report,
                &timeline,
                format!("cluster failed to start: {}", crate::k8s::explain(&e)),
            )
        }
        Err(_) => {
            return finish_error(
                report,
                &timeline,
                format!(
                    "cluster failed to start within {}s",
                    start_timeout.as_secs_f64()
                ),
            )
        }
    };
    let kubeconfig = cluster.kubeconfig().to_path_buf();
    let setup = async {
        let client = k8s::client_from_kubeconfig(&kubeconfig).await?;
        let kube = Kube::new(client);
        apply_crds(&kube, suite).await?;
        Ok::<Kube, anyhow::Error>(kube)
    };
    let kube = match setup.await {
        Ok(k) => k,
        Err(e) => {
            let _ = cluster.teardown(false).await;
            return finish_error(
                report,
                &timeline,
                format!("cluster setup failed: {}", crate::k8s::explain(&e)),
            );
        }
    };
    timeline.record(EntryKind::Step, "cluster ready");

    let logs = LogStore::new(Some(workdir.join("logs")));
    let node_ops = cluster.node_ops();
    let mut log_tasks = vec![
        logs.attach(node_ops.subscribe_logs(None, LogSourceKind::Kubelet)),
        logs.attach(node_ops.subscribe_logs(None, LogSourceKind::CsiPlugin)),
    ];
    let events = EventStore::new();
    let event_task = events.start(kube.client.clone(), timeline.clone());
    events.wait_ready(Duration::from_secs(5)).await;

    // The controller under test.
    let mut controller: Option<Arc<ControllerProcess>> = None;
    let mut harness_error: Option<String> = None;
    if let Some(c) = &sc.spec.controller {
        let def = &suite.suite.controllers[&c.reference];
        if cluster.controller_mode() == ControllerMode::HostProcess {
            let args: Vec<String> = c
                .args
                .iter()
                .chain(opts.controller_args.iter())
                .cloned()
                .collect();
            let cspec = ControllerSpec::resolve(&c.reference, def, &suite.dir, &args, &c.env);
            let extra = [
                ("FAULTLINE_SEED".to_string(), opts.seed.to_string()),
                ("FAULTLINE_SCENARIO".to_string(), name.clone()),
            ]
            .into_iter()
            .collect();
            let controller_kubeconfig = match crate::controller::service_account_kubeconfig(
                &kube,
                def,
                &suite.dir,
                &kubeconfig,
                &workdir.join("controller.kubeconfig"),
            )
            .await
            {
                Ok(k) => k.unwrap_or_else(|| kubeconfig.clone()),
                Err(e) => {
                    harness_error = Some(format!(
                        "running the controller as its ServiceAccount: {e:#}"
                    ));
                    kubeconfig.clone()
                }
            };
            let p = ControllerProcess::new(cspec, &controller_kubeconfig, extra, timeline.clone());
            log_tasks.push(logs.attach(p.subscribe_logs()));
            if let Err(e) = p.start(op_timeout).await {
                harness_error = Some(crate::k8s::explain(&e));
            }
            controller = Some(p);
        } else {
            let files: Vec<PathBuf> = def.manifests.iter().map(|m| suite.dir.join(m)).collect();
            match crate::controller::deploy_in_cluster(&kube, &files).await {
                Ok(rx) => log_tasks.push(logs.attach(rx)),
                Err(e) => {
                    harness_error = Some(format!(
                        "deploying the controller in the cluster: {}",
                        crate::k8s::explain(&e)
                    ))
                }
            }
        }
    }

    let mut faults = FaultManager::new(
        node_ops,
        kube.clone(),
        controller.clone(),
        timeline.clone(),
        Anchors::new(),
        op_timeout,
    );
    let mut heartbeat = None;
    if opts.provider.clusters_outlive_harness() {
        let journal = Arc::new(crate::journal::Journal::new(
            kube.client.clone(),
            crate::journal::run_id(),
            &name,
        ));
        timeline.record(
            EntryKind::Step,
            format!(
                "faults are journaled in {}/{}",
                crate::journal::NAMESPACE,
                journal.name()
            ),
        );
        let j = journal.clone();
        heartbeat = Some(tokio::spawn(async move {
            loop {
                tokio::time::sleep(crate::journal::HEARTBEAT).await;
                let _ = j.beat().await;
            }
        }));
        faults = faults.with_journal(journal);
    }
    let faults = Arc::new(faults);
    // The fault manager sets `<fault>.healed` anchors on its own Anchors; share one.
    let anchors = faults_anchors(&faults);
    anchors.set("start", timeline.start);
    let (end_tx, end_rx) = watch::channel(false);
    let (abort_tx, mut abort_rx) = watch::channel::<Option<String>>(None);
    let scn = Arc::new(Scn {
        name: name.clone(),
        dir: ls.dir.clone(),
        workdir: workdir.clone(),
        kubeconfig: kubeconfig.clone(),
        kube: kube.clone(),
        timeline: timeline.clone(),
        anchors,
        faults: faults.clone(),
        events: events.clone(),
        logs: logs.clone(),
        end: end_rx,
        abort: abort_tx,
        defaults: defaults.clone(),
        seed: opts.seed,
        faultline_bin: opts.faultline_bin.clone(),
        progress: opts.progress.clone(),
        previous: Mutex::new(Instant::now()),
        current_step: Mutex::new(String::new()),
        heal_at: Mutex::new(HashMap::new()),
        heal_timers: Mutex::new(vec![]),
        steps: Mutex::new(vec![]),
        expectations: Mutex::new(vec![]),
        background: Mutex::new(vec![]),
        provider: opts.provider.name(),
        nodes: sc
            .spec
            .cluster
            .effective_nodes()
            .into_iter()
            .map(|n| n.name)
            .collect(),
        pause: opts.pause.clone(),
        paused: watch::channel(false).0,
        paused_total: Mutex::new(Duration::ZERO),
    });

    let stop = if let Some(e) = harness_error.clone() {
        Stop::Done(Err(e))
    } else {
        // Invariants, for the whole run.
        for inv in &sc.spec.invariants {
            spawn_background(&scn, inv.clone(), "start".into(), timeline.start, true);
        }
        let steps = sc.spec.steps.clone();
        let s2 = scn.clone();
        let mut task = tokio::spawn(async move { exec_steps(&s2, &steps).await });
        let timeout = sc.spec.timeout.unwrap_or(defaults.scenario_timeout).get();
        let mut cancel = opts.cancel.clone();
        let steps_started = Instant::now();
        let stop = tokio::select! {
            r = &mut task => match r {
                Ok(r) => Stop::Done(r),
                Err(e) if e.is_panic() => Stop::Panicked(panic_message(e.into_panic())),
                Err(e) => Stop::Panicked(e.to_string()),
            },
            sig = wait_set(&mut cancel) => Stop::Cancelled(sig),
            why = wait_set(&mut abort_rx) => Stop::Aborted(why),
            _ = scn.deadline(steps_started, timeout) => Stop::TimedOut(timeout),
        };
        if !task.is_finished() {
            task.abort();
            let _ = task.await;
        }
        stop
    };

    // ---- pause at the failing moment: faults active, controller running ----
    if opts.pause.on_failure {
        let why = match &stop {
            Stop::Done(Err(e)) | Stop::Aborted(e) => Some(e.clone()),
            Stop::Panicked(m) => Some(format!("a step panicked: {m}")),
            Stop::TimedOut(t) => Some(format!("scenario timeout {} exceeded", format_duration(*t))),
            Stop::Done(Ok(())) | Stop::Cancelled(_) => None,
        };
        if let Some(why) = why {
            scn.pause(why).await;
        }
    }

    // ---- clean-up: always ----
    let interrupted = matches!(stop, Stop::Cancelled(_));
    let _ = end_tx.send(true);
    let bg: Vec<_> = std::mem::take(&mut *scn.background.lock());
    for h in bg {
        if interrupted {
            h.abort();
        }
        if let Ok(r) = h.await {
            scn.expectations.lock().push(r);
        }
    }
    for t in scn.heal_timers.lock().drain(..) {
        t.abort();
    }
    let heal_errors = faults.heal_all().await;
    if let Some(h) = heartbeat {
        h.abort();
    }
    if let Some(c) = &controller {
        c.stop().await;
    }
    event_task.abort();

    // ---- verdict ----
    let current = scn.current_step.lock().clone();
    let (mut verdict, mut reason) = match &stop {
        Stop::Done(Ok(())) => (Verdict::Passed, None),
        Stop::Done(Err(e)) if harness_error.is_some() => (Verdict::Error, Some(e.clone())),
        Stop::Done(Err(e)) => (Verdict::Failed, Some(e.clone())),
        Stop::Panicked(m) => (
            Verdict::Error,
            Some(format!("step `{current}` panicked: {m}")),
        ),
        Stop::Cancelled(sig) => (
            Verdict::Cancelled,
            Some(format!("interrupted by {sig} during step `{current}`")),
        ),
        Stop::Aborted(why) => (Verdict::Failed, Some(why.clone())),
        Stop::TimedOut(t) => (
            Verdict::Failed,
            Some(format!(
                "scenario timeout {} exceeded during step `{current}`",
                format_duration(*t)
            )),
        ),
    };
    if let Some(r) = &reason {
        if !timeline.entries().iter().any(|e| &e.text == r) {
            let kind = if verdict == Verdict::Failed {
                EntryKind::Step
            } else {
                EntryKind::Error
            };
            timeline.verdict(kind, r.clone(), verdict);
        }
    }
    let expectations: Vec<ExpectationResult> = scn.expectations.lock().clone();
    if verdict == Verdict::Passed {
        if let Some(f) = expectations.iter().find(|e| e.verdict == Verdict::Failed) {
            verdict = Verdict::Failed;
            reason = Some(format!("expectation `{}` failed: {}", f.name, f.message));
        }
    }
    if !heal_errors.is_empty() {
        verdict = Verdict::Error;
        reason = Some(format!(
            "{}; faults left unhealed: {}",
            reason.unwrap_or_default(),
            heal_errors.join("; ")
        ));
    }
    report.verdict = verdict;
    report.reason = reason;
    report.steps = scn.steps.lock().clone();
    let mut exps = expectations;
    exps.extend(skipped_expectations(
        &sc.spec.steps,
        &sc.spec.invariants,
        &exps,
    ));
    report.expectations = exps;
    report.faults = faults.records();
    if verdict != Verdict::Passed {
        report.controller_log_tail = logs.tail(LogSourceKind::Controller, 20);
    }
    timeline.verdict(
        EntryKind::Step,
        format!("scenario {}", verdict.word()),
        verdict,
    );
    report.timeline = timeline.entries();
    report.duration_ms = timeline.offset(Instant::now()).as_millis() as u64;
    // ---- artifacts (the timeline complete) ----
    if opts.report_dir.is_some() {
        report.artifacts = Some(workdir.display().to_string());
        let _ = write_artifacts(&workdir, &report, &events);
    }
    for t in log_tasks {
        t.abort();
    }
    drop(scn);
    match cluster.teardown(opts.keep_cluster).await {
        Ok(Some(k)) => kept.lock().push(k),
        Ok(None) => {}
        Err(e) => {
            report.verdict = Verdict::Error;
            report.reason = Some(format!(
                "{}; teardown failed: {}",
                report.reason.clone().unwrap_or_default(),
                crate::k8s::explain(&e)
            ));
        }
    }
    if opts.keep_cluster && tmp.is_some() && opts.report_dir.is_none() {
        // Keep the kubeconfig of a kept cluster.
        std::mem::forget(tmp);
    }
    report
}

/// The value once set; never, when the sender is gone without setting one.
async fn wait_set(rx: &mut watch::Receiver<Option<String>>) -> String {
    match rx.wait_for(|v| v.is_some()).await {
        Ok(v) => v.clone().unwrap_or_default(),
        Err(_) => std::future::pending().await,
    }
}

fn faults_anchors(f: &FaultManager) -> Anchors {
    f.anchors()
}

fn finish_error(mut report: ScenarioReport, tl: &Timeline, why: String) -> ScenarioReport {
    tl.verdict(EntryKind::Error, why.clone(), Verdict::Error);
    report.verdict = Verdict::Error;
    report.reason = Some(why);
    report.timeline = tl.entries();
    report.duration_ms = tl.offset(Instant::now()).as_millis() as u64;
    report
}

fn panic_message(p: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic".into()
    }
}

async fn apply_crds(kube: &Kube, suite: &LoadedSuite) -> Result<()> {
    for f in &suite.suite.crds {
        let objs = k8s::read_manifests(&suite.dir.join(f))?;
        for o in &objs {
            kube.apply(o, "default").await?;
        }
        for o in &objs {
            if o.get("kind").and_then(Value::as_str) != Some("CustomResourceDefinition") {
                continue;
            }
            let group = o
                .pointer("/spec/group")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let kind = o
                .pointer("/spec/names/kind")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let versions = o
                .pointer("/spec/versions")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            for v in versions {
                if v.get("served").and_then(Value::as_bool) == Some(false) {
                    continue;
                }
                let ver = v.get("name").and_then(Value::as_str).unwrap_or_default();
                kube.resolve_eventually(&format!("{group}/{ver}"), kind, Duration::from_secs(10))
                    .await
                    .with_context(|| format!("CRD {kind}.{group} not served"))?;
            }
        }
    }
    Ok(())
}

/// Expectations that never ran (skipped steps), so every expectation has a result.
fn skipped_expectations(
    steps: &[Step],
    invariants: &[Expect],
    have: &[ExpectationResult],
) -> Vec<ExpectationResult> {
    let mut out = vec![];
    fn walk(steps: &[Step], acc: &mut Vec<Expect>) {
        for s in steps {
            if let Some(e) = &s.expect {
                acc.push(e.clone());
            }
            for sub in [&s.try_steps, &s.catch, &s.finally].into_iter().flatten() {
                walk(sub, acc);
            }
        }
    }
    let mut all = vec![];
    walk(steps, &mut all);
    let invs: Vec<(Expect, bool)> = invariants.iter().map(|e| (e.clone(), true)).collect();
    for (e, inv) in all.into_iter().map(|e| (e, false)).chain(invs) {
        let name = e.name.clone().unwrap_or_default();
        if have.iter().any(|r| r.name == name) {
            continue;
        }
        let (kind, description) = expect::describe(&e);
        out.push(ExpectationResult {
            name,
            kind: kind.into(),
            description,
            mode: if e.never {
                "never".into()
            } else {
                "eventually".into()
            },
            anchor: e.after.clone().unwrap_or_else(|| "previous".into()),
            anchor_ms: 0,
            budget: expect::Budget {
                within_ms: e.within.map(|d| d.get().as_millis() as u64),
                for_ms: e.hold_for.map(|d| d.get().as_millis() as u64),
            },
            verdict: Verdict::Skipped,
            started_ms: 0,
            finished_ms: 0,
            measured_ms: None,
            message: "not run: an earlier step failed or the run was interrupted".into(),
            last_observed: None,
            invariant: inv,
            background: e.background,
            objects: vec![],
        });
    }
    out
}

fn write_artifacts(
    dir: &std::path::Path,
    report: &ScenarioReport,
    events: &EventStore,
) -> Result<()> {
    std::fs::create_dir_all(dir)?;
    std::fs::write(
        dir.join("events.json"),
        serde_json::to_string_pretty(&events.all())?,
    )?;
    let odir = dir.join("objects");
    for e in &report.expectations {
        if e.verdict == Verdict::Failed && !e.objects.is_empty() {
            std::fs::create_dir_all(&odir)?;
            std::fs::write(
                odir.join(format!("{}.json", e.name)),
                serde_json::to_string_pretty(&e.objects)?,
            )?;
        }
    }
    std::fs::write(
        dir.join("timeline.txt"),
        crate::report::console::timeline_table(report),
    )?;
    Ok(())
}

fn spawn_background(
    scn: &Arc<Scn>,
    e: Expect,
    anchor_name: String,
    anchor: Instant,
    invariant: bool,
) {
    let s = scn.clone();
    let h = tokio::spawn(async move {
        let ctx = expect::Ctx {
            kube: s.kube.clone(),
            timeline: s.timeline.clone(),
            events: s.events.clone(),
            logs: s.logs.clone(),
            end: s.end.clone(),
        };
        let r = expect::evaluate(
            &e,
            &anchor_name,
            anchor,
            s.defaults.expect_within.get(),
            invariant,
            &ctx,
        )
        .await;
        if r.verdict == Verdict::Failed && !*s.end.borrow() {
            let what = if invariant {
                "invariant"
            } else {
                "background expectation"
            };
            let _ = s
                .abort
                .send(Some(format!("{what} `{}` failed: {}", r.name, r.message)));
        }
        r
    });
    scn.background.lock().push(h);
}

fn exec_steps<'a>(scn: &'a Arc<Scn>, steps: &'a [Step]) -> BoxFuture<'a, Result<(), String>> {
    Box::pin(async move {
        for step in steps {
            exec_step(scn, step).await?;
        }
        Ok(())
    })
}

async fn exec_step(scn: &Arc<Scn>, step: &Step) -> Result<(), String> {
    let name = step.name.clone().unwrap_or_else(|| step.kind().to_string());
    let kind = step.kind();
    if scn.pause.at_steps.contains(&name) {
        scn.pause(format!("before step `{name}`")).await;
    }
    // Faults healed when this step is reached.
    let due = scn.heal_at.lock().remove(&name).unwrap_or_default();
    for f in due {
        if let Err(e) = scn.faults.heal(&f, "atStep").await {
            return Err(format!(
                "healing fault `{f}` at step `{name}`: {}",
                crate::k8s::explain(&e)
            ));
        }
    }
    let started = Instant::now();
    scn.anchors.set(&format!("{name}.start"), started);
    *scn.current_step.lock() = name.clone();
    scn.progress.step_started(&scn.name, &name, kind);
    if kind != "expect" && kind != "fault" && kind != "remediate" {
        scn.timeline.record(
            EntryKind::Step,
            format!("step {name} ({kind}){}", step_detail(step)),
        );
    }
    let timeout = step.timeout.unwrap_or(scn.defaults.step_timeout).get();
    let r: Result<(), String> = match kind {
        "try" => {
            let r = exec_steps(scn, step.try_steps.as_deref().unwrap_or_default()).await;
            if r.is_err() {
                if let Some(c) = &step.catch {
                    scn.timeline
                        .record(EntryKind::Step, format!("step {name}: catch"));
                    let _ = exec_steps(scn, c).await;
                }
            }
            if let Some(f) = &step.finally {
                scn.timeline
                    .record(EntryKind::Step, format!("step {name}: finally"));
                let fr = exec_steps(scn, f).await;
                if r.is_ok() {
                    fr?;
                }
            }
            r
        }
        "expect" => run_expect_step(scn, step.expect.as_ref().unwrap()).await,
        "sleep" => {
            tokio::time::sleep(step.sleep.unwrap().get()).await;
            Ok(())
        }
        _ => match tokio::time::timeout(timeout, run_simple(scn, step, &name)).await {
            Ok(r) => {
                r.map_err(|e| format!("step `{name}` ({kind}) failed: {}", crate::k8s::explain(&e)))
            }
            Err(_) => Err(format!(
                "step `{name}` ({kind}) timed out after {}",
                format_duration(timeout)
            )),
        },
    };
    let ended = Instant::now();
    scn.anchors.set(&name, ended);
    *scn.previous.lock() = ended;
    let verdict = if r.is_ok() {
        Verdict::Passed
    } else {
        Verdict::Failed
    };
    scn.steps.lock().push(StepResult {
        name: name.clone(),
        kind: kind.into(),
        started_ms: scn.timeline.offset(started).as_millis() as u64,
        duration_ms: ended.duration_since(started).as_millis() as u64,
        verdict,
        message: r.as_ref().err().cloned().unwrap_or_default(),
    });
    if let Err(e) = &r {
        if kind != "expect" && kind != "try" {
            scn.timeline
                .verdict(EntryKind::Error, e.clone(), Verdict::Failed);
        }
    }
    r
}

fn step_detail(step: &Step) -> String {
    if let Some(m) = step.apply.as_ref().or(step.create.as_ref()) {
        return m
            .file
            .as_ref()
            .map(|f| format!(": {f}"))
            .unwrap_or_else(|| format!(": {} object(s)", m.objects.len()));
    }
    if let Some(d) = step.sleep {
        return format!(": {d}");
    }
    String::new()
}

async fn run_expect_step(scn: &Arc<Scn>, e: &Expect) -> Result<(), String> {
    let anchor_name = e.after.clone().unwrap_or_else(|| "previous".into());
    let anchor = match anchor_name.as_str() {
        "previous" => *scn.previous.lock(),
        other => scn.anchors.wait(other).await,
    };
    let is_rate = e.log.as_ref().is_some_and(|l| l.at_most.is_some());
    if e.background || is_rate || (e.never && e.hold_for.is_none()) {
        scn.timeline.record(
            EntryKind::Expect,
            format!(
                "expect {} (background): {}",
                e.name.clone().unwrap_or_default(),
                expect::describe(e).1
            ),
        );
        spawn_background(scn, e.clone(), anchor_name, anchor, false);
        return Ok(());
    }
    let ctx = expect::Ctx {
        kube: scn.kube.clone(),
        timeline: scn.timeline.clone(),
        events: scn.events.clone(),
        logs: scn.logs.clone(),
        end: scn.end.clone(),
    };
    let r = expect::evaluate(
        e,
        &anchor_name,
        anchor,
        scn.defaults.expect_within.get(),
        false,
        &ctx,
    )
    .await;
    let failed = r.verdict == Verdict::Failed;
    let msg = format!("expectation `{}` failed: {}", r.name, r.message);
    scn.expectations.lock().push(r);
    if failed {
        Err(msg)
    } else {
        Ok(())
    }
}

async fn run_simple(scn: &Arc<Scn>, step: &Step, name: &str) -> Result<()> {
    if let Some(m) = &step.apply {
        for o in manifests(scn, m)? {
            scn.kube
                .apply(&o, m.namespace.as_deref().unwrap_or("default"))
                .await?;
        }
    } else if let Some(m) = &step.create {
        for o in manifests(scn, m)? {
            scn.kube
                .create(&o, m.namespace.as_deref().unwrap_or("default"))
                .await?;
        }
    } else if let Some(p) = &step.patch {
        scn.kube.patch(p).await?;
    } else if let Some(d) = &step.delete {
        let objs = match &d.file {
            Some(f) => k8s::read_manifests(&scn.dir.join(f))?,
            None => vec![
                serde_json::json!({"apiVersion": d.api_version, "kind": d.kind, "metadata": {"name": d.name, "namespace": d.namespace}}),
            ],
        };
        for o in objs {
            scn.kube
                .delete(&o, d.namespace.as_deref().unwrap_or("default"), d.wait)
                .await?;
        }
    } else if let Some(f) = &step.fault {
        scn.faults.inject(name, &f.op).await?;
        match &f.heal {
            Heal::After(d) => {
                let faults = scn.faults.clone();
                let (fname, d) = (name.to_string(), d.get());
                let h = tokio::spawn(async move {
                    tokio::time::sleep(d).await;
                    let _ = faults.heal(&fname, "schedule").await;
                });
                scn.heal_timers.lock().push(h);
            }
            Heal::AtStep(s) => scn
                .heal_at
                .lock()
                .entry(s.clone())
                .or_default()
                .push(name.to_string()),
            Heal::Never => {}
        }
    } else if let Some(op) = &step.remediate {
        scn.faults.remediate(op).await?;
    } else if let Some(s) = &step.script {
        run_script(scn, name, s).await?;
    } else {
        bail!("nothing to do");
    }
    Ok(())
}

fn manifests(scn: &Scn, m: &Manifests) -> Result<Vec<Value>> {
    match &m.file {
        Some(f) => k8s::read_manifests(&scn.dir.join(f)),
        None => Ok(m.objects.clone()),
    }
}

async fn run_script(scn: &Scn, name: &str, s: &crate::model::Script) -> Result<()> {
    let out = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(&s.run)
        .current_dir(&scn.dir)
        .env("KUBECONFIG", &scn.kubeconfig)
        .env("FAULTLINE", &scn.faultline_bin)
        .env("FAULTLINE_SEED", scn.seed.to_string())
        .env("FAULTLINE_SCENARIO", &scn.name)
        .envs(&s.env)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output()
        .await
        .context("running sh")?;
    let dir = scn.workdir.join("scripts");
    let _ = std::fs::create_dir_all(&dir);
    let mut log = out.stdout.clone();
    log.extend_from_slice(&out.stderr);
    let _ = std::fs::write(dir.join(format!("{name}.log")), &log);
    let code = out.status.code().unwrap_or(-1);
    if code != s.exit_code {
        let text = String::from_utf8_lossy(&log);
        let tail: Vec<&str> = text
            .lines()
            .rev()
            .take(10)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        return Err(anyhow!(
            "script exited with {code} (expected {}){}",
            s.exit_code,
            if tail.is_empty() {
                String::new()
            } else {
                format!("; output:\n{}", tail.join("\n"))
            }
        ));
    }
    Ok(())
}
