//! Running steps: `StepRunner` is what a running scenario's steps share - the cluster's client,
//! the fault manager, the stores expectations watch, the anchors and the results so far - with
//! one method per step kind, and the background expectations (invariants, `background: true`,
//! log rates, open-ended `never`) it starts. It lives in an `Arc`: the steps run in a task of
//! their own, the background expectations in theirs.

use super::error::{BackgroundFailure, StepError};
use super::step::{PlannedStep, Step};
use super::{PauseInfo, PausePolicy};
use crate::events::EventStore;
use crate::expect;
use crate::faults::FaultManager;
use crate::k8s::{self, Explained, Kube};
use crate::logs::LogStore;
use crate::model::{Defaults, DeleteStep, Expect, Fault, Heal, Manifests, Script};
use crate::report::ExpectationResult;
use crate::report::{HealedBy, Progress, StepResult};
use crate::timeline::{Anchors, EntryKind, Timeline, Verdict};
use anyhow::{anyhow, Context, Result};
use futures::future::BoxFuture;
use parking_lot::Mutex;
use serde_json::Value;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// Where the scenario runs, as scripts and pauses see it.
pub(super) struct Place {
    pub scenario: String,
    /// The scenario file's directory: manifests and scripts are relative to it.
    pub scenario_dir: PathBuf,
    /// This attempt's directory (artifacts, logs, script output).
    pub workdir: PathBuf,
    pub kubeconfig: PathBuf,
    pub provider: &'static str,
    pub nodes: Vec<String>,
    pub seed: u64,
    /// The faultline binary, exported to scripts as $FAULTLINE.
    pub faultline_bin: PathBuf,
    /// How to freeze the cluster while paused (sim only).
    pub freezer: Option<Arc<dyn crate::provider::Freeze>>,
}

/// What expectations observe.
#[derive(Clone)]
pub(super) struct Observed {
    pub kube: Kube,
    pub timeline: Timeline,
    pub events: EventStore,
    pub logs: LogStore,
    pub anchors: Anchors,
}

/// Pausing (`--pause-on-failure`, `--pause-at`) and the paused time the scenario timeout does
/// not count.
struct Pausing {
    policy: PausePolicy,
    /// Set while holding.
    paused: watch::Sender<bool>,
    paused_total: Mutex<Duration>,
}

/// What steps share while they run.
pub(super) struct StepRunner {
    place: Place,
    observed: Observed,
    faults: Arc<FaultManager>,
    defaults: Defaults,
    progress: Arc<dyn Progress>,
    pausing: Pausing,
    /// Becomes true when the steps are over (background expectations then conclude).
    steps_over: watch::Receiver<bool>,
    /// A background expectation that failed stops the steps through this.
    abort: watch::Sender<Option<BackgroundFailure>>,
    /// When the previous step ended: the default anchor.
    previous_step_end: Mutex<Instant>,
    current_step: Mutex<String>,
    /// Faults to heal when a step is reached, by step name (`heal: {atStep}`).
    heal_at_step: Mutex<HashMap<String, Vec<String>>>,
    /// Scheduled heals (`heal: {after}`), stopped at the clean-up.
    heal_timers: Mutex<Vec<JoinHandle<()>>>,
    step_results: Mutex<Vec<StepResult>>,
    expectation_results: Mutex<Vec<ExpectationResult>>,
    background: Mutex<Vec<JoinHandle<ExpectationResult>>>,
    /// The steps' resource expectations, watched from the start of the steps.
    recorders: Arc<expect::Recorders>,
    /// Fault steps moved by a `moveFault` perturbation, by name: the mutating request after
    /// which they run (`run_moved`) instead of at their place.
    moved: HashMap<String, u64>,
}

pub(super) struct StepRunnerParts {
    pub place: Place,
    pub observed: Observed,
    pub faults: Arc<FaultManager>,
    pub defaults: Defaults,
    pub progress: Arc<dyn Progress>,
    pub pause: PausePolicy,
    pub steps_over: watch::Receiver<bool>,
    pub abort: watch::Sender<Option<BackgroundFailure>>,
    pub moved: HashMap<String, u64>,
}

impl StepRunner {
    pub fn new(parts: StepRunnerParts) -> StepRunner {
        StepRunner {
            place: parts.place,
            observed: parts.observed,
            faults: parts.faults,
            defaults: parts.defaults,
            progress: parts.progress,
            pausing: Pausing {
                policy: parts.pause,
                paused: watch::channel(false).0,
                paused_total: Mutex::new(Duration::ZERO),
            },
            steps_over: parts.steps_over,
            abort: parts.abort,
            previous_step_end: Mutex::new(Instant::now()),
            current_step: Mutex::new(String::new()),
            heal_at_step: Mutex::new(HashMap::new()),
            heal_timers: Mutex::new(vec![]),
            step_results: Mutex::new(vec![]),
            expectation_results: Mutex::new(vec![]),
            background: Mutex::new(vec![]),
            recorders: Arc::default(),
            moved: parts.moved,
        }
    }

    /// Start watching every resource selection an `expect` step of `steps` will judge, so that
    /// one reached after its condition came true is measured from when it did.
    pub fn record_expectations(&self, steps: &[PlannedStep]) {
        for planned in steps {
            match &planned.step {
                Step::Expect(e) => {
                    // Only the modes measured from their anchor (`within`, `within` + `for`).
                    let from_anchor = expect::mode_of(e, false).has_deadline();
                    if let Some(r) = e.resource.as_ref().filter(|_| from_anchor) {
                        self.recorders.start(&self.observed.kube, r);
                    }
                }
                Step::Try {
                    steps,
                    catch,
                    finally,
                } => {
                    self.record_expectations(steps);
                    for more in [catch, finally].into_iter().flatten() {
                        self.record_expectations(more);
                    }
                }
                Step::Apply(_)
                | Step::Create(_)
                | Step::Patch(_)
                | Step::Delete(_)
                | Step::Fault(_)
                | Step::Remediate(_)
                | Step::Sleep(_)
                | Step::Script(_) => {}
            }
        }
    }

    /// Stop the recorders' watches (the steps and their expectations are over).
    pub fn stop_recording(&self) {
        self.recorders.stop();
    }

    pub fn current_step(&self) -> String {
        self.current_step.lock().clone()
    }

    pub fn step_results(&self) -> Vec<StepResult> {
        self.step_results.lock().clone()
    }

    pub fn expectation_results(&self) -> Vec<ExpectationResult> {
        self.expectation_results.lock().clone()
    }

    /// The background expectations started so far, to be awaited (or aborted) at the end.
    pub fn take_background(&self) -> Vec<JoinHandle<ExpectationResult>> {
        std::mem::take(&mut *self.background.lock())
    }

    pub fn add_expectation_result(&self, r: ExpectationResult) {
        self.expectation_results.lock().push(r);
    }

    /// Stops the scheduled heals (the clean-up heals what is left).
    pub fn stop_heal_timers(&self) {
        for t in self.heal_timers.lock().drain(..) {
            t.abort();
        }
    }

    /// Hold here (the cluster, controller and faults stay as they are) until the user continues.
    /// A cluster that can be frozen is, so that what failed is still there when looked at: its
    /// clock and loops stand until the hold ends (however it ends).
    pub async fn pause(&self, why: String) {
        let Some(p) = &self.pausing.policy.pauser else {
            return;
        };
        self.observed
            .timeline
            .record(EntryKind::Step, format!("paused: {why}"));
        /// Thaws the cluster when the hold ends, also when it is dropped (a scenario stopped
        /// while paused), so that its clean-up runs on a live cluster.
        struct Frozen(Arc<dyn crate::provider::Freeze>);
        impl Drop for Frozen {
            fn drop(&mut self) {
                self.0.thaw();
            }
        }
        let frozen = match &self.place.freezer {
            Some(f) => {
                f.freeze().await;
                Some(Frozen(f.clone()))
            }
            None => None,
        };
        let info = PauseInfo {
            scenario: self.place.scenario.clone(),
            why,
            provider: self.place.provider,
            kubeconfig: self.place.kubeconfig.clone(),
            nodes: self.place.nodes.clone(),
            active_faults: self.faults.active_summaries(),
            timeline: self.observed.timeline.entries(),
            frozen_at: frozen.as_ref().map(|f| f.0.now()),
        };
        let began = Instant::now();
        self.pausing.paused.send_replace(true);
        p.hold(info).await;
        drop(frozen);
        *self.pausing.paused_total.lock() += began.elapsed();
        self.pausing.paused.send_replace(false);
        self.observed.timeline.record(EntryKind::Step, "resumed");
    }

    /// Sleeps until `timeout` of unpaused time has passed since `start`.
    pub async fn deadline(&self, start: Instant, timeout: Duration) {
        let mut paused = self.pausing.paused.subscribe();
        loop {
            let _ = paused.wait_for(|p| !*p).await;
            let until = start + timeout + *self.pausing.paused_total.lock();
            tokio::select! {
                _ = tokio::time::sleep_until(until.into()) => {
                    if !*self.pausing.paused.borrow()
                        && Instant::now() >= start + timeout + *self.pausing.paused_total.lock()
                    {
                        return;
                    }
                }
                _ = paused.wait_for(|p| *p) => {}
            }
        }
    }

    /// An expectation judged alongside the steps until they are over; a failure stops them.
    pub fn spawn_background(
        self: &Arc<Self>,
        e: Expect,
        anchor_name: String,
        anchor: Instant,
        invariant: bool,
    ) {
        let runner = self.clone();
        let h = tokio::spawn(async move {
            let r = expect::evaluate(
                &e,
                &anchor_name,
                anchor,
                runner.defaults.expect_within.get(),
                invariant,
                &runner.expect_context(),
            )
            .await;
            if r.verdict == Verdict::Failed && !*runner.steps_over.borrow() {
                let _ = runner.abort.send(Some(BackgroundFailure {
                    invariant,
                    name: r.name.clone(),
                    message: r.message.clone(),
                }));
            }
            r
        });
        self.background.lock().push(h);
    }

    fn expect_context(&self) -> expect::Ctx {
        expect::Ctx {
            kube: self.observed.kube.clone(),
            timeline: self.observed.timeline.clone(),
            events: self.observed.events.clone(),
            logs: self.observed.logs.clone(),
            end: self.steps_over.clone(),
            recorders: self.recorders.clone(),
        }
    }

    /// The steps in order; the first failure ends them.
    pub fn run_steps<'a>(
        self: &'a Arc<Self>,
        steps: &'a [PlannedStep],
    ) -> BoxFuture<'a, Result<(), StepError>> {
        Box::pin(async move {
            for step in steps {
                self.run_step(step).await?;
            }
            Ok(())
        })
    }

    /// One step: its pause and due heals first, then the step, its result and anchors.
    async fn run_step(self: &Arc<Self>, planned: &PlannedStep) -> Result<(), StepError> {
        let name = &planned.name;
        let kind = planned.step.kind();
        if self.pausing.policy.at_steps.contains(name) {
            self.pause(format!("before step `{name}`")).await;
        }
        // Faults healed when this step is reached.
        let due = self.heal_at_step.lock().remove(name).unwrap_or_default();
        for fault in due {
            if let Err(e) = self.faults.heal(&fault, HealedBy::AtStep.as_str()).await {
                return Err(StepError::Heal {
                    fault,
                    step: name.clone(),
                    source: Explained(e),
                });
            }
        }
        if let Some(k) = self.moved.get(name) {
            // Run by `run_moved` after the controller's k-th write; anchors wait for that.
            self.observed.timeline.record(
                EntryKind::Step,
                format!(
                    "step {name} ({kind}): moved, runs after the controller's mutating request {k}"
                ),
            );
            return Ok(());
        }
        let started = Instant::now();
        let timeline = &self.observed.timeline;
        self.observed.anchors.set(&format!("{name}.start"), started);
        *self.current_step.lock() = name.clone();
        self.progress.step_started(&self.place.scenario, name, kind);
        if planned.step.has_timeline_line() {
            timeline.record(
                EntryKind::Step,
                format!("step {name} ({kind}){}", planned.step.detail()),
            );
        }
        let r = match &planned.step {
            Step::Try {
                steps,
                catch,
                finally,
            } => {
                self.run_try(name, steps, catch.as_deref(), finally.as_deref())
                    .await
            }
            Step::Expect(e) => self.run_expect(e).await,
            Step::Sleep(d) => {
                tokio::time::sleep(d.get()).await;
                Ok(())
            }
            Step::Apply(_)
            | Step::Create(_)
            | Step::Patch(_)
            | Step::Delete(_)
            | Step::Fault(_)
            | Step::Remediate(_)
            | Step::Script(_) => self.timed_operation(planned).await,
        };
        let ended = Instant::now();
        *self.previous_step_end.lock() = ended;
        if let Some(m) = self.record_step_result(planned, started, ended, &r) {
            if kind.reports_own_failure() {
                timeline.verdict(EntryKind::Error, m, Verdict::Failed);
            }
        }
        r
    }

    /// A fault step moved by `moveFault`, now due (the sim holds the controller after its
    /// k-th write): injected through the same machinery as at its place, its anchors set here.
    /// A failure stops the steps as a failing background expectation does.
    pub async fn run_moved(&self, planned: &PlannedStep) -> Result<(), StepError> {
        let name = &planned.name;
        let kind = planned.step.kind();
        let timeline = &self.observed.timeline;
        let k = self.moved.get(name).copied().unwrap_or_default();
        timeline.record(
            EntryKind::Step,
            format!("perturbation: step {name} ({kind}) runs after the controller's mutating request {k}"),
        );
        let started = Instant::now();
        self.observed.anchors.set(&format!("{name}.start"), started);
        let r = self.timed_operation(planned).await;
        let ended = Instant::now();
        if let Some(m) = self.record_step_result(planned, started, ended, &r) {
            timeline.verdict(EntryKind::Error, m.clone(), Verdict::Failed);
            if !*self.steps_over.borrow() {
                let _ = self.abort.send(Some(BackgroundFailure {
                    invariant: false,
                    name: name.clone(),
                    message: format!("the moved fault step failed: {m}"),
                }));
            }
        }
        r
    }

    /// An operation step (apply, fault, script ...) within its timeout.
    async fn timed_operation(&self, planned: &PlannedStep) -> Result<(), StepError> {
        let (step, kind) = (&planned.name, planned.step.kind());
        let timeout = planned.timeout.unwrap_or(self.defaults.step_timeout).get();
        match tokio::time::timeout(timeout, self.run_operation(planned)).await {
            Ok(r) => r.map_err(|e| StepError::Failed {
                step: step.clone(),
                kind,
                source: Explained(e),
            }),
            Err(_) => Err(StepError::TimedOut {
                step: step.clone(),
                kind,
                timeout,
            }),
        }
    }

    /// A step has ended: its anchor is set and its result recorded; the failure's message, if
    /// it failed.
    fn record_step_result(
        &self,
        planned: &PlannedStep,
        started: Instant,
        ended: Instant,
        r: &Result<(), StepError>,
    ) -> Option<String> {
        let name = &planned.name;
        self.observed.anchors.set(name, ended);
        let message = r.as_ref().err().map(ToString::to_string);
        self.step_results.lock().push(StepResult {
            name: name.clone(),
            kind: planned.step.kind(),
            started_ms: self.observed.timeline.offset(started).as_millis() as u64,
            duration_ms: ended.duration_since(started).as_millis() as u64,
            verdict: if r.is_ok() {
                Verdict::Passed
            } else {
                Verdict::Failed
            },
            message: message.clone().unwrap_or_default(),
        });
        message
    }

    /// `try`: its steps; on a failure `catch` (whose own failure is not reported); then always
    /// `finally`, whose failure counts when the steps passed.
    async fn run_try(
        self: &Arc<Self>,
        name: &str,
        steps: &[PlannedStep],
        catch: Option<&[PlannedStep]>,
        finally: Option<&[PlannedStep]>,
    ) -> Result<(), StepError> {
        let timeline = &self.observed.timeline;
        let r = self.run_steps(steps).await;
        if let (Err(_), Some(catch)) = (&r, catch) {
            timeline.record(EntryKind::Step, format!("step {name}: catch"));
            let _ = self.run_steps(catch).await;
        }
        if let Some(finally) = finally {
            timeline.record(EntryKind::Step, format!("step {name}: finally"));
            let after = self.run_steps(finally).await;
            if r.is_ok() {
                after?;
            }
        }
        r
    }

    /// An `expect` step: judged here, or started in the background (`background: true`, log
    /// rates, `never` without `for`).
    async fn run_expect(self: &Arc<Self>, e: &Expect) -> Result<(), StepError> {
        let anchor_name = e.after.clone().unwrap_or_else(|| "previous".into());
        let anchor = match anchor_name.as_str() {
            "previous" => *self.previous_step_end.lock(),
            other => self.observed.anchors.wait(other).await,
        };
        let is_rate = e.log.as_ref().is_some_and(|l| l.at_most.is_some());
        if e.background || is_rate || (e.never && e.hold_for.is_none()) {
            self.observed.timeline.record(
                EntryKind::Expect,
                format!(
                    "expect {} (background): {}",
                    e.name.clone().unwrap_or_default(),
                    expect::describe(e).1
                ),
            );
            self.spawn_background(e.clone(), anchor_name, anchor, false);
            return Ok(());
        }
        let r = expect::evaluate(
            e,
            &anchor_name,
            anchor,
            self.defaults.expect_within.get(),
            false,
            &self.expect_context(),
        )
        .await;
        let failed = (r.verdict == Verdict::Failed).then(|| StepError::Expectation {
            name: r.name.clone(),
            message: r.message.clone(),
        });
        self.expectation_results.lock().push(r);
        match failed {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// The steps that act on the cluster, bounded by the step timeout.
    async fn run_operation(&self, planned: &PlannedStep) -> Result<()> {
        let kube = &self.observed.kube;
        match &planned.step {
            Step::Apply(m) => {
                for o in self.manifests(m)? {
                    kube.apply(&o, namespace(&m.namespace)).await?;
                }
            }
            Step::Create(m) => {
                for o in self.manifests(m)? {
                    kube.create(&o, namespace(&m.namespace)).await?;
                }
            }
            Step::Patch(p) => kube.patch(p).await?,
            Step::Delete(d) => self.delete(d).await?,
            Step::Fault(f) => self.inject(&planned.name, f).await?,
            Step::Remediate(op) => self.faults.remediate(op).await?,
            Step::Script(s) => self.run_script(&planned.name, s).await?,
            // Not operations: run_step runs these itself.
            Step::Sleep(_) | Step::Expect(_) | Step::Try { .. } => {}
        }
        Ok(())
    }

    fn manifests(&self, m: &Manifests) -> Result<Vec<Value>> {
        match &m.file {
            Some(f) => k8s::read_manifests(&self.place.scenario_dir.join(f)),
            None => Ok(m.objects.clone()),
        }
    }

    async fn delete(&self, d: &DeleteStep) -> Result<()> {
        let objects = match &d.file {
            Some(f) => k8s::read_manifests(&self.place.scenario_dir.join(f))?,
            None => vec![serde_json::json!({
                "apiVersion": d.api_version,
                "kind": d.kind,
                "metadata": {"name": d.name, "namespace": d.namespace},
            })],
        };
        for o in objects {
            self.observed
                .kube
                .delete(&o, namespace(&d.namespace), d.wait)
                .await?;
        }
        Ok(())
    }

    /// Inject a fault and arrange its heal: after a delay, at a step, or at the clean-up.
    async fn inject(&self, name: &str, f: &Fault) -> Result<()> {
        self.faults.inject(name, &f.op).await?;
        match &f.heal {
            Heal::After(d) => {
                let faults = self.faults.clone();
                let (fault, delay) = (name.to_string(), d.get());
                let h = tokio::spawn(async move {
                    tokio::time::sleep(delay).await;
                    let _ = faults.heal(&fault, HealedBy::Schedule.as_str()).await;
                });
                self.heal_timers.lock().push(h);
            }
            Heal::AtStep(step) => self
                .heal_at_step
                .lock()
                .entry(step.clone())
                .or_default()
                .push(name.to_string()),
            Heal::Never => {}
        }
        Ok(())
    }

    async fn run_script(&self, name: &str, s: &Script) -> Result<()> {
        let place = &self.place;
        let out = tokio::process::Command::new("sh")
            .arg("-c")
            .arg(&s.run)
            .current_dir(&place.scenario_dir)
            .env("KUBECONFIG", &place.kubeconfig)
            .env("FAULTLINE", &place.faultline_bin)
            .env("FAULTLINE_SEED", place.seed.to_string())
            .env("FAULTLINE_SCENARIO", &place.scenario)
            .envs(&s.env)
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true)
            .output()
            .await
            .context("running sh")?;
        let dir = place.workdir.join("scripts");
        let _ = std::fs::create_dir_all(&dir);
        let mut log = out.stdout.clone();
        log.extend_from_slice(&out.stderr);
        let _ = std::fs::write(dir.join(format!("{name}.log")), &log);
        let code = out.status.code().unwrap_or(-1);
        if code != s.exit_code {
            let text = String::from_utf8_lossy(&log);
            let mut tail: Vec<&str> = text.lines().rev().take(10).collect();
            tail.reverse();
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
}

fn namespace(ns: &Option<String>) -> &str {
    ns.as_deref().unwrap_or("default")
}
