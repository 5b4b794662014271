//! One attempt at a scenario, one method per phase: `cluster` (start it, its client, the
//! suite's CRDs), `watch` (logs and events), `controller` (the controller under test),
//! `faults` (the fault manager, journaled where clusters outlive the harness), `steps` (in a
//! task of their own, supervised against signals, invariants and the scenario timeout),
//! `expectations` (the background ones judged), `clean_up` (what always runs: heals, the
//! controller stopped) and `finish` (outcome, report, artifacts, teardown).

use super::error::{BackgroundFailure, Failure, Outcome, RunError, StepError};
use super::execute::{Observed, Place, StepRunner, StepRunnerParts};
use super::step::{PlannedStep, Step};
use super::{skipped_expectations, Kept, RunOptions};
use crate::controller::{ControllerProcess, ControllerSpec};
use crate::events::EventStore;
use crate::faults::{FaultManager, FaultRecord};
use crate::k8s::{self, Explained, Kube};
use crate::loader::{LoadedScenario, LoadedSuite};
use crate::logs::LogStore;
use crate::model::duration::format_duration;
use crate::model::{ControllerBuild, LogSourceKind};
use crate::provider::{Cluster, ClusterSpec, ControllerMode};
use crate::report::{ExpectationResult, FaultResult, HealedBy, ScenarioReport, StepResult};
use crate::states::StateRecorder;
use crate::timeline::{Anchors, EntryKind, Timeline, Verdict};
use anyhow::{Context, Result};
use serde_json::Value;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// One attempt (1-based) of a scenario; a retry writes its artifacts to `<name>-attempt-<n>`.
pub(super) struct ScenarioRun<'a> {
    loaded: &'a LoadedScenario,
    suite: &'a LoadedSuite,
    options: &'a RunOptions,
    name: String,
    timeline: Timeline,
    report: ScenarioReport,
    /// This attempt's directory: `<report-dir>/<name>[-attempt-<n>]`, else a temporary one.
    workdir: PathBuf,
    /// The temporary directory when there is no report directory (kept with --keep-cluster).
    tempdir: Option<tempfile::TempDir>,
    /// The task that carries out crash perturbations (kill, then restart the controller);
    /// stopped before the controller is.
    perturber: parking_lot::Mutex<Option<JoinHandle<()>>>,
    /// The task that runs the fault steps moved by `moveFault` when the sim says they are due.
    mover: parking_lot::Mutex<Option<JoinHandle<()>>>,
}

/// The cluster, once started and set up.
struct ClusterUp {
    cluster: Box<dyn Cluster>,
    kubeconfig: PathBuf,
    kube: Kube,
}

/// What records the cluster's logs and events while the scenario runs.
struct Watchers {
    logs: LogStore,
    log_tasks: Vec<JoinHandle<()>>,
    events: EventStore,
    event_task: JoinHandle<()>,
    /// Pods' and VolumeAttachments' states (with --report-dir: states.json, for `faultline diff`).
    states: Option<(StateRecorder, Vec<JoinHandle<()>>)>,
}

/// The controller under test (when it runs as a host process), and why it could not be set up.
struct ControllerUp {
    process: Option<Arc<ControllerProcess>>,
    error: Option<RunError>,
}

/// The fault manager, and the heartbeat of its journal.
struct Faults {
    manager: Arc<FaultManager>,
    heartbeat: Option<JoinHandle<()>>,
}

/// What the steps phase left for the report.
struct Finished<'s> {
    /// How the steps ended (before the background expectations and the clean-up are counted).
    outcome: Outcome,
    heal_errors: Vec<String>,
    steps: &'s [PlannedStep],
    step_results: Vec<StepResult>,
    expectations: Vec<ExpectationResult>,
    /// The objects when the steps were over (when tracing): `end-state.json`.
    end_state: Option<Vec<Value>>,
}

/// Why the steps stopped.
#[derive(Debug)]
enum StepsEnd {
    /// They were not run: the harness could not set the scenario up.
    NotRun(RunError),
    Finished(Result<(), StepError>),
    Panicked(String),
    Cancelled(String),
    Aborted(BackgroundFailure),
    TimedOut(Duration),
}

impl StepsEnd {
    /// What `--pause-on-failure` tells: the failure, at the moment it happened.
    fn pause_reason(&self) -> Option<String> {
        match self {
            StepsEnd::NotRun(e) => Some(e.to_string()),
            StepsEnd::Finished(Err(e)) => Some(e.to_string()),
            StepsEnd::Aborted(f) => Some(f.to_string()),
            StepsEnd::Panicked(m) => Some(format!("a step panicked: {m}")),
            StepsEnd::TimedOut(t) => {
                Some(format!("scenario timeout {} exceeded", format_duration(*t)))
            }
            StepsEnd::Finished(Ok(())) | StepsEnd::Cancelled(_) => None,
        }
    }

    fn outcome(self, current_step: String) -> Outcome {
        match self {
            StepsEnd::NotRun(e) => Outcome::Error(e),
            StepsEnd::Finished(Ok(())) => Outcome::Passed,
            StepsEnd::Finished(Err(e)) => Outcome::Failed(Failure::Step(e)),
            StepsEnd::Panicked(message) => Outcome::Error(RunError::Panicked {
                step: current_step,
                message,
            }),
            StepsEnd::Cancelled(signal) => Outcome::Cancelled {
                signal,
                step: current_step,
            },
            StepsEnd::Aborted(f) => Outcome::Failed(Failure::Background(f)),
            StepsEnd::TimedOut(timeout) => Outcome::Failed(Failure::TimedOut {
                timeout,
                step: current_step,
            }),
        }
    }
}

impl<'a> ScenarioRun<'a> {
    pub fn new(
        loaded: &'a LoadedScenario,
        suite: &'a LoadedSuite,
        options: &'a RunOptions,
        attempt: u32,
    ) -> ScenarioRun<'a> {
        let name = loaded.scenario.metadata.name.clone();
        let timeline = Timeline::new();
        let report = super::empty_report(loaded, &timeline, options.seed);
        let tempdir = tempfile::tempdir().ok();
        let dir_name = if attempt == 1 {
            name.clone()
        } else {
            format!("{name}-attempt-{attempt}")
        };
        let workdir = match (&options.report_dir, &tempdir) {
            (Some(d), _) => d.join(&dir_name),
            (None, Some(t)) => t.path().to_path_buf(),
            (None, None) => std::env::temp_dir().join(format!("faultline-{name}")),
        };
        let _ = std::fs::create_dir_all(&workdir);
        // Absolute: the kubeconfig in it is handed to processes running elsewhere.
        let workdir = std::path::absolute(&workdir).unwrap_or(workdir);
        ScenarioRun {
            loaded,
            suite,
            options,
            name,
            timeline,
            report,
            workdir,
            tempdir,
            perturber: Default::default(),
            mover: Default::default(),
        }
    }

    /// Whether the controller's requests are traced (and the end state captured).
    fn tracing(&self) -> bool {
        self.options.trace || !self.loaded.scenario.spec.perturb.is_empty()
    }

    /// The fault steps `moveFault` perturbations move: name -> after which write they run.
    fn moved_faults(&self) -> HashMap<String, u64> {
        self.loaded
            .scenario
            .spec
            .perturb
            .iter()
            .filter_map(|p| p.move_fault.as_ref())
            .map(|m| (m.step.clone(), m.after_mutation))
            .collect()
    }

    /// Every phase in order; whatever happens in the steps, the clean-up runs.
    pub async fn run(self, kept: &Kept) -> ScenarioReport {
        let built = match self.build().await {
            Ok(b) => b,
            Err(e) => return self.finish_error(e),
        };
        // Budgets `after: start` count from here: a cold Go build of the controller (16 s on a
        // fresh machine) is the harness's time, not the system's.
        let start = Instant::now();
        let up = match self.cluster().await {
            Ok(up) => up,
            Err(e) => return self.finish_error(e),
        };
        let mut watchers = self.watch(&up).await;
        let ControllerUp {
            process: controller,
            error: mut harness_error,
        } = self.controller(&up, &mut watchers, built.as_deref()).await;
        let faults = self.faults(&up, &controller, start);
        let steps = match PlannedStep::plan(&self.loaded.scenario.spec.steps) {
            Ok(steps) => steps,
            Err(e) => {
                harness_error.get_or_insert(e);
                vec![]
            }
        };
        let planned = steps.clone();
        let (steps_over, steps_over_rx) = watch::channel(false);
        let (abort, abort_rx) = watch::channel::<Option<BackgroundFailure>>(None);
        let moved = self.moved_faults();
        let runner = Arc::new(StepRunner::new(StepRunnerParts {
            place: self.place(&up),
            observed: Observed {
                kube: up.kube.clone(),
                timeline: self.timeline.clone(),
                events: watchers.events.clone(),
                logs: watchers.logs.clone(),
                // The fault manager sets `<fault>.healed` anchors on its own Anchors; share one.
                anchors: faults.manager.anchors(),
            },
            faults: faults.manager.clone(),
            defaults: self.suite.suite.defaults.clone(),
            progress: self.options.progress.clone(),
            pause: self.options.pause.clone(),
            steps_over: steps_over_rx,
            abort,
            moved: moved.clone(),
        }));
        if let Some(t) = up.cluster.tracer().filter(|_| !moved.is_empty()) {
            *self.mover.lock() = Some(tokio::spawn(run_moved_faults(
                runner.clone(),
                t,
                planned.clone(),
            )));
        }
        let end = match harness_error {
            Some(e) => StepsEnd::NotRun(e),
            None => self.steps(&runner, steps, abort_rx).await,
        };
        // Pause at the failing moment: faults active, controller running, a sim frozen.
        if self.options.pause.on_failure {
            if let Some(why) = end.pause_reason() {
                runner.pause(why).await;
            }
        }
        let interrupted = matches!(end, StepsEnd::Cancelled(_));
        let expectations = self.expectations(&runner, steps_over, interrupted).await;
        let end_state = match self.tracing() {
            true => {
                settle(up.cluster.tracer()).await;
                Some(self.end_state(&up.kube).await)
            }
            false => None,
        };
        let heal_errors = self.clean_up(&runner, &faults, controller, &watchers).await;
        let outcome = end.outcome(runner.current_step());
        let step_results = runner.step_results();
        drop(runner);
        self.finish(
            Finished {
                outcome,
                heal_errors,
                steps: &planned,
                step_results,
                expectations,
                end_state,
            },
            &faults.manager,
            up,
            watchers,
            kept,
        )
        .await
    }

    /// Phase 0: the controller's `build`, when it has one and will run as a host process
    /// (before the cluster starts: a cold build takes a while, and a failed one needs no cluster).
    async fn build(&self) -> Result<Option<PathBuf>, RunError> {
        let Some(c) = &self.loaded.scenario.spec.controller else {
            return Ok(None);
        };
        let Some(def) = self.suite.suite.controllers.get(&c.reference) else {
            return Ok(None);
        };
        let Some(ControllerBuild { go }) = &def.build else {
            return Ok(None);
        };
        if self.options.provider.controller_mode() != ControllerMode::HostProcess {
            return Ok(None);
        }
        let module = self.suite.dir.join(&go.module);
        let built = crate::gobuild::build(&module, &go.package, &crate::gobuild::cache_root())
            .await
            .map_err(|source| RunError::ControllerBuild {
                controller: c.reference.clone(),
                module: go.module.clone(),
                source: Box::new(source),
            })?;
        let how = match built.took {
            Some(t) => format!("built in {}", format_duration(t)),
            None => "cached".into(),
        };
        self.timeline.record(
            EntryKind::Controller,
            format!(
                "controller {} {how}: {}",
                c.reference,
                built.binary.display()
            ),
        );
        Ok(Some(built.binary))
    }

    /// Phase 1: the cluster started (bounded by the provider's start timeout), its client, the
    /// suite's CRDs served.
    async fn cluster(&self) -> Result<ClusterUp, RunError> {
        let provider = &self.options.provider;
        let sc = &self.loaded.scenario;
        let spec = ClusterSpec {
            name: self.name.clone(),
            nodes: sc.spec.cluster.effective_nodes(),
            storage: sc.spec.cluster.storage,
            sim: sc.spec.cluster.sim.clone(),
            seed: self.options.seed,
            workdir: self.workdir.clone(),
        };
        self.timeline.record(
            EntryKind::Step,
            format!("cluster starting ({})", provider.name()),
        );
        let start_timeout = provider.start_timeout();
        let cluster = match tokio::time::timeout(start_timeout, provider.start(&spec)).await {
            Ok(Ok(c)) => c,
            Ok(Err(e)) => return Err(RunError::ClusterStart(Explained(e))),
            Err(_) => return Err(RunError::ClusterStartTimedOut(start_timeout)),
        };
        let kubeconfig = cluster.kubeconfig().to_path_buf();
        let setup = async {
            let kube = Kube::new(k8s::client_from_kubeconfig(&kubeconfig).await?);
            apply_crds(&kube, self.suite).await?;
            Ok::<Kube, anyhow::Error>(kube)
        };
        match setup.await {
            Ok(kube) => {
                self.timeline.record(EntryKind::Step, "cluster ready");
                Ok(ClusterUp {
                    cluster,
                    kubeconfig,
                    kube,
                })
            }
            Err(e) => {
                let _ = cluster.teardown(false).await;
                Err(RunError::ClusterSetup(Explained(e)))
            }
        }
    }

    /// Phase 2: the nodes' logs and the cluster's events, recorded from here on.
    async fn watch(&self, up: &ClusterUp) -> Watchers {
        let logs = LogStore::new(Some(self.workdir.join("logs")));
        let node_ops = up.cluster.node_ops();
        let log_tasks = vec![
            logs.attach(node_ops.subscribe_logs(None, LogSourceKind::Kubelet)),
            logs.attach(node_ops.subscribe_logs(None, LogSourceKind::CsiPlugin)),
        ];
        let events = EventStore::new();
        let event_task = events.start(up.kube.client.clone(), self.timeline.clone());
        events.wait_ready(Duration::from_secs(5)).await;
        let states = self.options.report_dir.is_some().then(|| {
            let rec = StateRecorder::new();
            let tasks = rec.start(up.kube.client.clone());
            (rec, tasks)
        });
        Watchers {
            logs,
            log_tasks,
            events,
            event_task,
            states,
        }
    }

    /// Phase 3: the controller under test, as a host process (as its ServiceAccount when it has
    /// one) or deployed in the cluster. A process is kept even when it did not start (the
    /// clean-up stops it).
    async fn controller(
        &self,
        up: &ClusterUp,
        watchers: &mut Watchers,
        built: Option<&std::path::Path>,
    ) -> ControllerUp {
        let up_with = |process, error| ControllerUp { process, error };
        let Some(c) = &self.loaded.scenario.spec.controller else {
            return up_with(None, None);
        };
        let suite = self.suite;
        let Some(def) = suite.suite.controllers.get(&c.reference) else {
            return up_with(None, Some(RunError::UnknownController(c.reference.clone())));
        };
        if up.cluster.controller_mode() != ControllerMode::HostProcess {
            let files: Vec<PathBuf> = def.manifests.iter().map(|m| suite.dir.join(m)).collect();
            let args: Vec<String> = def
                .args
                .iter()
                .chain(&c.args)
                .chain(&self.options.controller_args)
                .cloned()
                .collect();
            return match crate::controller::deploy_in_cluster(&up.kube, &files, &args).await {
                Ok(rx) => {
                    watchers.log_tasks.push(watchers.logs.attach(rx));
                    up_with(None, None)
                }
                Err(e) => up_with(None, Some(RunError::ControllerDeploy(Explained(e)))),
            };
        }
        let args: Vec<String> = c
            .args
            .iter()
            .chain(self.options.controller_args.iter())
            .cloned()
            .collect();
        let spec = ControllerSpec::resolve(&c.reference, def, built, &suite.dir, &args, &c.env);
        let extra_env = [
            ("FAULTLINE_SEED".to_string(), self.options.seed.to_string()),
            ("FAULTLINE_SCENARIO".to_string(), self.name.clone()),
        ]
        .into_iter()
        .collect();
        let mut error = None;
        let kubeconfig = match crate::controller::service_account_kubeconfig(
            &up.kube,
            def,
            &suite.dir,
            &up.kubeconfig,
            &self.workdir.join("controller.kubeconfig"),
        )
        .await
        {
            Ok(k) => k.unwrap_or_else(|| up.kubeconfig.clone()),
            Err(e) => {
                error = Some(RunError::ControllerServiceAccount(e));
                up.kubeconfig.clone()
            }
        };
        // A real cluster's apiserver cannot trace or perturb: a traced controller's own
        // kubeconfig (its token) points at the provider's API proxy instead.
        if let Some(proxy) = up.cluster.api_proxy().filter(|_| self.tracing()) {
            if kubeconfig != up.kubeconfig {
                if let Err(e) =
                    crate::provider::proxy::rewrite_kubeconfig(&kubeconfig, &kubeconfig, &proxy)
                {
                    error = Some(RunError::ControllerServiceAccount(e));
                }
            }
        }
        let tracer = match self.tracing() {
            true => match self.follow_controller(up, def) {
                Ok(t) => Some(t),
                Err(e) => {
                    error = Some(e);
                    None
                }
            },
            false => None,
        };
        let process = ControllerProcess::new(spec, &kubeconfig, extra_env, self.timeline.clone());
        watchers
            .log_tasks
            .push(watchers.logs.attach(process.subscribe_logs()));
        let ready = self.suite.suite.defaults.step_timeout.get();
        if let Err(e) = process.start(ready).await {
            error = Some(RunError::ControllerStart(Explained(e)));
        }
        if let Some(t) = tracer.filter(|_| error.is_none()) {
            *self.perturber.lock() = Some(tokio::spawn(crash_and_restart(
                t,
                process.clone(),
                ready,
                self.timeline.clone(),
            )));
        }
        up_with(Some(process), error)
    }

    /// Trace the controller's requests by its ServiceAccount's user, with the scenario's
    /// perturbations armed.
    fn follow_controller(
        &self,
        up: &ClusterUp,
        def: &crate::model::ControllerDef,
    ) -> Result<faultline_sim::http::trace::Tracer, RunError> {
        let Some(tracer) = up.cluster.tracer() else {
            return Err(RunError::Untraceable(format!(
                "the {} provider has neither its own API (sim) nor an API proxy (existing)",
                self.options.provider.name()
            )));
        };
        // The proxy listens on the host's loopback: a controller deployed into the cluster
        // (kind) cannot be pointed at it.
        if up.cluster.controller_mode() == crate::provider::ControllerMode::InCluster {
            return Err(RunError::Untraceable(format!(
                "the {} provider runs the controller in the cluster, which the host's API proxy cannot reach",
                self.options.provider.name()
            )));
        }
        let Some((ns, name)) = def
            .service_account
            .as_deref()
            .and_then(|a| a.split_once('/'))
        else {
            return Err(RunError::Untraceable(
                "the controller has no `serviceAccount` in the suite config: its requests cannot be told from the harness's own".into(),
            ));
        };
        let user = format!("system:serviceaccount:{ns}:{name}");
        let perturbations: Vec<_> = self
            .loaded
            .scenario
            .spec
            .perturb
            .iter()
            .filter_map(|p| p.kind())
            .map(crate::perturb::to_sim)
            .collect();
        for p in &self.loaded.scenario.spec.perturb {
            if let Some(k) = p.kind() {
                self.timeline
                    .record(EntryKind::Controller, format!("perturbation armed: {k}"));
            }
        }
        tracer.follow(&user, perturbations);
        Ok(tracer)
    }

    /// The objects the end-state oracle compares: the built-in kinds a controller owns and
    /// the suite's custom resources. A failure to read them leaves the state empty.
    async fn end_state(&self, kube: &Kube) -> Vec<Value> {
        let kinds = crate::endstate::captured_kinds(self.suite);
        crate::endstate::capture(kube, &kinds)
            .await
            .unwrap_or_default()
    }

    /// Phase 4: the fault manager; where clusters outlive the harness, its faults are journaled
    /// in the cluster with a heartbeat, so a killed run can be healed later.
    fn faults(
        &self,
        up: &ClusterUp,
        controller: &Option<Arc<ControllerProcess>>,
        start: Instant,
    ) -> Faults {
        let mut manager = FaultManager::new(
            up.cluster.node_ops(),
            up.kube.clone(),
            controller.clone(),
            self.timeline.clone(),
            Anchors::new(),
            self.suite.suite.defaults.step_timeout.get(),
        );
        let mut heartbeat = None;
        if self.options.provider.clusters_outlive_harness() {
            let journal = Arc::new(crate::journal::Journal::new(
                up.kube.client.clone(),
                crate::journal::run_id(),
                &self.name,
            ));
            self.timeline.record(
                EntryKind::Step,
                format!(
                    "faults are journaled in {}/{}",
                    crate::journal::NAMESPACE,
                    journal.name()
                ),
            );
            let beating = journal.clone();
            heartbeat = Some(tokio::spawn(async move {
                loop {
                    tokio::time::sleep(crate::journal::HEARTBEAT).await;
                    let _ = beating.beat().await;
                }
            }));
            manager = manager.with_journal(journal);
        }
        let manager = Arc::new(manager);
        manager.anchors().set("start", start);
        Faults { manager, heartbeat }
    }

    /// Phase 5: the invariants started, then the steps in their own task (a panic ends that task
    /// only), until they end, a signal comes, an invariant fails or the scenario times out.
    async fn steps(
        &self,
        runner: &Arc<StepRunner>,
        steps: Vec<PlannedStep>,
        mut abort: watch::Receiver<Option<BackgroundFailure>>,
    ) -> StepsEnd {
        let spec = &self.loaded.scenario.spec;
        for invariant in &spec.invariants {
            runner.spawn_background(invariant.clone(), "start".into(), self.timeline.start, true);
        }
        runner.record_expectations(&steps);
        let steps_runner = runner.clone();
        let mut task = tokio::spawn(async move { steps_runner.run_steps(&steps).await });
        let timeout = spec
            .timeout
            .unwrap_or(self.suite.suite.defaults.scenario_timeout)
            .get();
        let mut cancel = self.options.cancel.clone();
        let steps_started = Instant::now();
        let end = tokio::select! {
            r = &mut task => match r {
                Ok(r) => StepsEnd::Finished(r),
                Err(e) if e.is_panic() => StepsEnd::Panicked(panic_message(e.into_panic())),
                Err(e) => StepsEnd::Panicked(e.to_string()),
            },
            signal = wait_set(&mut cancel) => StepsEnd::Cancelled(signal),
            failure = wait_set(&mut abort) => StepsEnd::Aborted(failure),
            _ = runner.deadline(steps_started, timeout) => StepsEnd::TimedOut(timeout),
        };
        if !task.is_finished() {
            task.abort();
            let _ = task.await;
        }
        end
    }

    /// Phase 6: the steps are over; the background expectations conclude (or, when the run was
    /// interrupted, are stopped). Every expectation that ran, in the order they finished.
    async fn expectations(
        &self,
        runner: &StepRunner,
        steps_over: watch::Sender<bool>,
        interrupted: bool,
    ) -> Vec<ExpectationResult> {
        let _ = steps_over.send(true);
        for handle in runner.take_background() {
            if interrupted {
                handle.abort();
            }
            if let Ok(r) = handle.await {
                runner.add_expectation_result(r);
            }
        }
        runner.stop_recording();
        runner.expectation_results()
    }

    /// Phase 7, which always runs: scheduled heals stopped, every active fault healed (newest
    /// first), the journal's heartbeat and the controller stopped, the event watch ended.
    /// The heals that failed.
    async fn clean_up(
        &self,
        runner: &StepRunner,
        faults: &Faults,
        controller: Option<Arc<ControllerProcess>>,
        watchers: &Watchers,
    ) -> Vec<String> {
        runner.stop_heal_timers();
        if let Some(p) = self.perturber.lock().take() {
            p.abort();
        }
        if let Some(m) = self.mover.lock().take() {
            m.abort();
        }
        let heal_errors = faults.manager.heal_all().await;
        if let Some(h) = &faults.heartbeat {
            h.abort();
        }
        if let Some(c) = &controller {
            c.stop().await;
        }
        watchers.event_task.abort();
        for t in watchers.states.iter().flat_map(|(_, t)| t) {
            t.abort();
        }
        heal_errors
    }

    /// Phase 8: the verdict and the report (every expectation, skipped ones too), the artifacts
    /// with the complete timeline, then the cluster torn down (or kept).
    async fn finish(
        mut self,
        finished: Finished<'_>,
        faults: &FaultManager,
        up: ClusterUp,
        watchers: Watchers,
        kept: &Kept,
    ) -> ScenarioReport {
        let Finished {
            outcome,
            heal_errors,
            steps,
            step_results,
            mut expectations,
            end_state,
        } = finished;
        let timeline = self.timeline.clone();
        // How the steps ended ends the timeline, unless a step already wrote it there.
        if let Some(reason) = outcome.reason() {
            if !timeline.entries().iter().any(|e| e.text == reason) {
                let kind = if outcome.verdict() == Verdict::Failed {
                    EntryKind::Step
                } else {
                    EntryKind::Error
                };
                timeline.verdict(kind, reason, outcome.verdict());
            }
        }
        // An expectation judged after the steps (a background one) fails a passed scenario;
        // faults left unhealed make any a harness error.
        let outcome = match outcome {
            Outcome::Passed => match expectations.iter().find(|e| e.verdict == Verdict::Failed) {
                Some(f) => Outcome::Failed(Failure::Expectation {
                    name: f.name.clone(),
                    message: f.message.clone(),
                }),
                None => Outcome::Passed,
            },
            other => other,
        }
        .with_unhealed(heal_errors);
        let verdict = outcome.verdict();
        let spec = &self.loaded.scenario.spec;
        let skipped = skipped_expectations(
            steps,
            &spec.invariants,
            &expectations,
            self.suite.suite.defaults.expect_within.get(),
        );
        expectations.extend(skipped);
        let report = &mut self.report;
        report.verdict = verdict;
        report.reason = outcome.reason();
        report.steps = step_results;
        report.expectations = expectations;
        report.faults = faults.records().iter().map(fault_result).collect();
        if verdict != Verdict::Passed {
            report.controller_log_tail = watchers.logs.tail(LogSourceKind::Controller, 20);
        }
        timeline.verdict(
            EntryKind::Step,
            format!("scenario {}", verdict.word()),
            verdict,
        );
        report.timeline = timeline.entries();
        report.duration_ms = timeline.offset(Instant::now()).as_millis() as u64;
        // Artifacts, the timeline complete.
        if self.options.report_dir.is_some() {
            report.artifacts = Some(self.workdir.display().to_string());
            let states = watchers.states.as_ref().map(|(r, _)| r.all());
            let _ = write_artifacts(&self.workdir, report, &watchers.events, states);
            if let Some(t) = up.cluster.tracer().filter(|_| end_state.is_some()) {
                let _ = write_json(&self.workdir.join("trace.json"), &t.snapshot());
            }
            if let Some(objects) = &end_state {
                let _ = write_json(&self.workdir.join("end-state.json"), objects);
            }
        }
        for t in watchers.log_tasks {
            t.abort();
        }
        match up.cluster.teardown(self.options.keep_cluster).await {
            Ok(Some(k)) => kept.lock().push(k),
            Ok(None) => {}
            Err(e) => {
                let outcome = outcome.with_teardown_error(e);
                report.verdict = outcome.verdict();
                report.reason = outcome.reason();
            }
        }
        if self.options.keep_cluster && self.options.report_dir.is_none() {
            if let Some(t) = self.tempdir.take() {
                // Keep the kubeconfig of a kept cluster.
                std::mem::forget(t);
            }
        }
        self.report
    }

    /// A scenario that ended before its steps could run (the cluster did not start): the
    /// reason ends the timeline.
    fn finish_error(mut self, e: RunError) -> ScenarioReport {
        let why = e.to_string();
        self.timeline
            .verdict(EntryKind::Error, why.clone(), Verdict::Error);
        self.report.verdict = Verdict::Error;
        self.report.reason = Some(why);
        self.report.timeline = self.timeline.entries();
        self.report.duration_ms = self.timeline.offset(Instant::now()).as_millis() as u64;
        self.report
    }

    fn place(&self, up: &ClusterUp) -> Place {
        Place {
            scenario: self.name.clone(),
            scenario_dir: self.loaded.dir.clone(),
            workdir: self.workdir.clone(),
            kubeconfig: up.kubeconfig.clone(),
            provider: self.options.provider.name(),
            nodes: self
                .loaded
                .scenario
                .spec
                .cluster
                .effective_nodes()
                .into_iter()
                .map(|n| n.name)
                .collect(),
            seed: self.options.seed,
            faultline_bin: self.options.faultline_bin.clone(),
            freezer: up.cluster.freezer(),
        }
    }
}

/// The fault manager's record in the result model.
fn fault_result(r: &FaultRecord) -> FaultResult {
    FaultResult {
        name: r.name.clone(),
        operation: r.operation.clone(),
        injected_ms: r.injected_ms,
        healed_ms: r.healed_ms,
        // The manager writes only the words HealedBy::as_str gives it.
        healed_by: HealedBy::from_word(&r.healed_by).unwrap_or(HealedBy::NotHealed),
        heal_error: r.heal_error.clone(),
    }
}

/// Crash perturbations: whenever the sim says a crash is due (the controller's k-th write was
/// answered and its further requests are held), kill the controller, let the sim drop what
/// the dead process still had in flight, and start it again as the scenario started it.
async fn crash_and_restart(
    tracer: faultline_sim::http::trace::Tracer,
    process: Arc<ControllerProcess>,
    ready: Duration,
    timeline: Timeline,
) {
    loop {
        tracer.crash_due().await;
        timeline.record(
            EntryKind::Controller,
            "perturbation: the controller is killed after its write",
        );
        let _ = process.crash(Some("KILL")).await;
        tracer.release();
        if let Err(e) = process.start(ready).await {
            timeline.record(
                EntryKind::Error,
                format!("the controller did not restart after the perturbation: {e:#}"),
            );
            return;
        }
    }
}

/// Moved fault steps: whenever the sim says one is due (the controller's k-th write was
/// answered and its further requests are held), run it, then let the controller go on.
async fn run_moved_faults(
    runner: Arc<StepRunner>,
    tracer: faultline_sim::http::trace::Tracer,
    steps: Vec<PlannedStep>,
) {
    loop {
        let name = tracer.fault_due().await;
        let failed = match find_step(&steps, &name) {
            Some(planned) => runner.run_moved(planned).await.is_err(),
            // The loader checked the name: only a scenario built in code gets here.
            None => true,
        };
        tracer.resume(&name, failed);
    }
}

/// The step named `name`, nested in a `try` too.
fn find_step<'a>(steps: &'a [PlannedStep], name: &str) -> Option<&'a PlannedStep> {
    steps.iter().find_map(|s| {
        if s.name == name {
            return Some(s);
        }
        match &s.step {
            Step::Try {
                steps,
                catch,
                finally,
            } => [Some(steps), catch.as_ref(), finally.as_ref()]
                .into_iter()
                .flatten()
                .find_map(|group| find_step(group, name)),
            _ => None,
        }
    })
}

/// Before the end state is captured: until the controller has made no request and seen no
/// watch event for a second (it has settled), at most five seconds (a hot loop never does).
async fn settle(tracer: Option<faultline_sim::http::trace::Tracer>) {
    let Some(t) = tracer else { return };
    let until = Instant::now() + Duration::from_secs(5);
    while t.quiet_for() < Duration::from_secs(1) && Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn write_json<T: serde::Serialize + ?Sized>(path: &std::path::Path, v: &T) -> Result<()> {
    std::fs::write(path, serde_json::to_string_pretty(v)?)?;
    Ok(())
}

/// The value once set; never, when the sender is gone without setting one.
async fn wait_set<T: Clone>(rx: &mut watch::Receiver<Option<T>>) -> T {
    match rx.wait_for(|v| v.is_some()).await {
        Ok(v) => match v.clone() {
            Some(v) => v,
            None => std::future::pending().await,
        },
        Err(_) => std::future::pending().await,
    }
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
                let version = v.get("name").and_then(Value::as_str).unwrap_or_default();
                kube.resolve_eventually(
                    &format!("{group}/{version}"),
                    kind,
                    Duration::from_secs(10),
                )
                .await
                .with_context(|| format!("CRD {kind}.{group} not served"))?;
            }
        }
    }
    Ok(())
}

fn write_artifacts(
    dir: &std::path::Path,
    report: &ScenarioReport,
    events: &EventStore,
    states: Option<Vec<crate::fidelity::collect::StateChange>>,
) -> Result<()> {
    std::fs::create_dir_all(dir)?;
    if let Some(states) = states {
        std::fs::write(
            dir.join("states.json"),
            serde_json::to_string_pretty(&states)?,
        )?;
    }
    std::fs::write(
        dir.join("events.json"),
        serde_json::to_string_pretty(&events.all())?,
    )?;
    let objects_dir = dir.join("objects");
    for e in &report.expectations {
        if e.verdict == Verdict::Failed && !e.objects.is_empty() {
            std::fs::create_dir_all(&objects_dir)?;
            std::fs::write(
                objects_dir.join(format!("{}.json", e.name)),
                serde_json::to_string_pretty(&e.objects)?,
            )?;
        }
    }
    std::fs::write(dir.join("timeline.txt"), report.timeline_table())?;
    Ok(())
}
