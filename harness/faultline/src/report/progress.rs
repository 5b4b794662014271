//! The live progress hook: the runner calls it as scenarios and steps start and finish; the
//! console (`console::ConsoleProgress`) implements it. It carries the result model only, so the
//! runner needs no reporter.

use super::model::{ScenarioReport, StepKind};

/// Live progress, for the console reporter.
pub trait Progress: Send + Sync {
    fn scenario_started(&self, _name: &str) {}
    fn step_started(&self, _scenario: &str, _step: &str, _kind: StepKind) {}
    /// Attempt `attempt` of `of` did not pass; the scenario runs again on a fresh cluster.
    fn scenario_retrying(&self, _report: &ScenarioReport, _attempt: u32, _of: u32) {}
    /// The final result (after retries).
    fn scenario_finished(&self, _report: &ScenarioReport) {}
}

/// Progress that shows nothing (tests, library use).
pub struct NoProgress;
impl Progress for NoProgress {}
