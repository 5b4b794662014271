//! How a scenario can end, typed: `StepError` (a step did not do what it says), `Failure` (the
//! controller under test did not meet the scenario), `RunError` (the harness could not run it as
//! written: a harness error, exit 2), and the `Outcome` they make. Their Display is the text the
//! report's `reason`, the step results and the timeline show; errors from Kubernetes are kept
//! whole as `Explained` sources and explained (kubectl-style) only when shown.

use crate::k8s::Explained;
use crate::model::duration::format_duration;
use crate::report::StepKind;
use crate::timeline::Verdict;
use std::time::Duration;

/// Why a step failed. A failed step fails the scenario (`Failure::Step`).
#[derive(Debug, thiserror::Error)]
pub enum StepError {
    /// The step's operation returned an error: an API call refused, a manifest that does not
    /// read, a fault that could not be injected, a script with the wrong exit code.
    #[error("step `{step}` ({kind}) failed: {source}")]
    Failed {
        step: String,
        kind: StepKind,
        source: Explained,
    },
    /// The step's operation did not finish within its `timeout` (default `stepTimeout`).
    #[error("step `{step}` ({kind}) timed out after {}", format_duration(*.timeout))]
    TimedOut {
        step: String,
        kind: StepKind,
        timeout: Duration,
    },
    /// A blocking `expect` step's expectation failed.
    #[error("expectation `{name}` failed: {message}")]
    Expectation { name: String, message: String },
    /// A fault due to be healed when this step is reached (`heal: {atStep}`) could not be.
    #[error("healing fault `{fault}` at step `{step}`: {source}")]
    Heal {
        fault: String,
        step: String,
        source: Explained,
    },
}

/// Why the controller under test did not meet the scenario: the scenario failed (exit 1).
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    /// A step failed (its own error, or a blocking expectation's).
    #[error(transparent)]
    Step(#[from] StepError),
    /// An invariant or a background expectation failed while the steps ran; the steps were
    /// stopped at once.
    #[error(transparent)]
    Background(#[from] BackgroundFailure),
    /// The steps took longer than the scenario's `timeout` (paused time not counted).
    #[error("scenario timeout {} exceeded during step `{step}`", format_duration(*.timeout))]
    TimedOut { timeout: Duration, step: String },
    /// An expectation judged after the steps (a background one) failed.
    #[error("expectation `{name}` failed: {message}")]
    Expectation { name: String, message: String },
}

/// An invariant or background expectation that failed while the steps ran (what stops them).
#[derive(Clone, Debug, thiserror::Error)]
#[error("{} `{name}` failed: {message}", if *.invariant { "invariant" } else { "background expectation" })]
pub struct BackgroundFailure {
    pub invariant: bool,
    pub name: String,
    pub message: String,
}

/// Why the harness could not run a scenario as written: a harness error (exit 2), whatever the
/// controller did.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The provider's bring-up failed; its own error is kept whole.
    #[error("cluster failed to start: {0}")]
    ClusterStart(Explained),
    /// The bring-up took longer than the provider's start timeout.
    #[error("cluster failed to start within {}s", .0.as_secs_f64())]
    ClusterStartTimedOut(Duration),
    /// The cluster started, but its client or the suite's CRDs could not be set up.
    #[error("cluster setup failed: {0}")]
    ClusterSetup(Explained),
    /// The scenario names a controller the suite does not define (the loader rejects this).
    #[error("controller `{0}` is not defined in the suite")]
    UnknownController(String),
    /// The controller's ServiceAccount, its RBAC or its token could not be set up.
    #[error("running the controller as its ServiceAccount: {0:#}")]
    ControllerServiceAccount(anyhow::Error),
    /// The controller's `build` failed (before the cluster started).
    #[error("building controller `{controller}` ({module}): {source}")]
    ControllerBuild {
        controller: String,
        /// The module as the suite names it (`build.go.module`).
        module: String,
        /// Boxed: the rest of RunError is small, and it travels in every step's Result.
        source: Box<crate::gobuild::GoBuildError>,
    },
    /// The controller process did not start (or not become ready).
    #[error("{0}")]
    ControllerStart(Explained),
    /// The controller's manifests could not be deployed in the cluster.
    #[error("deploying the controller in the cluster: {0}")]
    ControllerDeploy(Explained),
    /// The controller's requests cannot be traced or perturbed here (a provider without a
    /// tracer, a controller deployed into the cluster where the API proxy cannot reach it
    /// (kind), or a controller without a `serviceAccount`, whose requests the sim cannot tell
    /// from the harness's own).
    #[error("cannot trace or perturb the controller: {0}")]
    Untraceable(String),
    /// A step that is not exactly one step kind (the loader rejects these).
    #[error("step `{step}`: {problem}")]
    InvalidStep { step: String, problem: String },
    /// A step (or a provider's NodeOps under it) panicked; the clean-up still ran.
    #[error("step `{step}` panicked: {message}")]
    Panicked { step: String, message: String },
    /// Faults the clean-up could not heal: the cluster may be left damaged.
    #[error("{}; faults left unhealed: {}", .reason.as_deref().unwrap_or_default(), .errors.join("; "))]
    Unhealed {
        /// Why the scenario had not passed before, if it had not.
        reason: Option<String>,
        errors: Vec<String>,
    },
    /// The cluster could not be torn down.
    #[error("{}; teardown failed: {error}", .reason.as_deref().unwrap_or_default())]
    Teardown {
        /// Why the scenario had not passed before, if it had not.
        reason: Option<String>,
        error: Explained,
    },
}

/// How a scenario ended.
#[derive(Debug)]
pub enum Outcome {
    Passed,
    /// The controller under test did not meet the scenario.
    Failed(Failure),
    /// The harness could not run the scenario.
    Error(RunError),
    /// Interrupted by a signal (SIGINT, SIGTERM) during `step`.
    Cancelled {
        signal: String,
        step: String,
    },
}

impl Outcome {
    pub fn verdict(&self) -> Verdict {
        match self {
            Outcome::Passed => Verdict::Passed,
            Outcome::Failed(_) => Verdict::Failed,
            Outcome::Error(_) => Verdict::Error,
            Outcome::Cancelled { .. } => Verdict::Cancelled,
        }
    }

    /// The report's `reason`: why it did not pass.
    pub fn reason(&self) -> Option<String> {
        match self {
            Outcome::Passed => None,
            Outcome::Failed(f) => Some(f.to_string()),
            Outcome::Error(e) => Some(e.to_string()),
            Outcome::Cancelled { signal, step } => {
                Some(format!("interrupted by {signal} during step `{step}`"))
            }
        }
    }

    /// Faults the clean-up could not heal make any outcome a harness error.
    pub fn with_unhealed(self, errors: Vec<String>) -> Outcome {
        if errors.is_empty() {
            return self;
        }
        Outcome::Error(RunError::Unhealed {
            reason: self.reason(),
            errors,
        })
    }

    /// A teardown that failed makes any outcome a harness error.
    pub fn with_teardown_error(self, error: anyhow::Error) -> Outcome {
        Outcome::Error(RunError::Teardown {
            reason: self.reason(),
            error: Explained(error),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reasons read as they did when they were strings built at each call site.
    #[test]
    fn reasons_read_as_before() {
        let api = || Explained(anyhow::anyhow!("boom").context("creating ConfigMap default/x"));
        let failed = StepError::Failed {
            step: "create-cm".into(),
            kind: StepKind::Create,
            source: api(),
        };
        assert_eq!(
            failed.to_string(),
            "step `create-cm` (create) failed: creating ConfigMap default/x: boom"
        );
        let timed_out = StepError::TimedOut {
            step: "s".into(),
            kind: StepKind::Script,
            timeout: Duration::from_secs(90),
        };
        assert_eq!(
            timed_out.to_string(),
            "step `s` (script) timed out after 1m30s"
        );
        let outcome = Outcome::Failed(Failure::Background(BackgroundFailure {
            invariant: true,
            name: "no-hot-loop".into(),
            message: "violated at 2s after the start".into(),
        }));
        assert_eq!(outcome.verdict(), Verdict::Failed);
        assert_eq!(
            outcome.reason().unwrap(),
            "invariant `no-hot-loop` failed: violated at 2s after the start"
        );
        let unhealed = Outcome::Passed.with_unhealed(vec!["fault a: gone".into()]);
        assert_eq!(unhealed.verdict(), Verdict::Error);
        assert_eq!(
            unhealed.reason().unwrap(),
            "; faults left unhealed: fault a: gone"
        );
        let torn = Outcome::Failed(Failure::TimedOut {
            timeout: Duration::from_secs(5),
            step: "wait".into(),
        })
        .with_teardown_error(anyhow::anyhow!("no such container"));
        assert_eq!(
            torn.reason().unwrap(),
            "scenario timeout 5s exceeded during step `wait`; teardown failed: no such container"
        );
        assert_eq!(
            RunError::ClusterStartTimedOut(Duration::from_millis(300)).to_string(),
            "cluster failed to start within 0.3s"
        );
    }
}
