//! The result model: what a run produced, as data. The runner builds it, the reporters read it,
//! and it is serialized as the JSON report (docs/report-schema.md): every enum here serializes
//! to the string the schema names. Nothing here knows the runner or a reporter.

use crate::model::duration::format_duration;
use crate::timeline::{Entry, Verdict};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;

pub const SCHEMA_VERSION: u32 = 1;

/// What a step does: the one step kind a scenario's step sets.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, Hash)]
#[serde(rename_all = "camelCase")]
pub enum StepKind {
    Apply,
    Create,
    Patch,
    Delete,
    Fault,
    Remediate,
    Sleep,
    Expect,
    Script,
    Try,
}

impl StepKind {
    /// The scenario language's key (`apply`, ..., `try`), as the JSON report writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            StepKind::Apply => "apply",
            StepKind::Create => "create",
            StepKind::Patch => "patch",
            StepKind::Delete => "delete",
            StepKind::Fault => "fault",
            StepKind::Remediate => "remediate",
            StepKind::Sleep => "sleep",
            StepKind::Expect => "expect",
            StepKind::Script => "script",
            StepKind::Try => "try",
        }
    }

    /// A step whose failure is told elsewhere: an `expect` step by its expectation, a `try` by
    /// the step inside it that failed.
    pub fn reports_own_failure(self) -> bool {
        !matches!(self, StepKind::Expect | StepKind::Try)
    }
}

impl fmt::Display for StepKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StepResult {
    pub name: String,
    pub kind: StepKind,
    pub started_ms: u64,
    pub duration_ms: u64,
    pub verdict: Verdict,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

/// How an expectation's observations are judged over time.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub enum ExpectationMode {
    /// Holds at some point before the deadline (`within`).
    Eventually,
    /// Holds before the deadline, then continuously for `for`.
    EventuallyFor,
    /// Holds now and continuously for `for`.
    For,
    /// Never holds (for `for`, or until the scenario ends).
    Never,
    /// Holds until the scenario ends (invariants).
    Always,
    /// A log rate limit (`atMost` lines, `per` window) kept until the scenario ends.
    Rate,
}

impl ExpectationMode {
    pub fn as_str(self) -> &'static str {
        match self {
            ExpectationMode::Eventually => "eventually",
            ExpectationMode::EventuallyFor => "eventuallyFor",
            ExpectationMode::For => "for",
            ExpectationMode::Never => "never",
            ExpectationMode::Always => "always",
            ExpectationMode::Rate => "rate",
        }
    }

    /// Eventually-style: judged against a deadline (`within`), which the budget shows.
    pub fn has_deadline(self) -> bool {
        matches!(
            self,
            ExpectationMode::Eventually | ExpectationMode::EventuallyFor
        )
    }
}

impl fmt::Display for ExpectationMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Budget {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub within_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub for_ms: Option<u64>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExpectationResult {
    pub name: String,
    /// resource, event or log.
    pub kind: String,
    /// What was expected, in words.
    pub description: String,
    pub mode: ExpectationMode,
    /// The anchor's name and its offset from the scenario start.
    pub anchor: String,
    pub anchor_ms: u64,
    pub budget: Budget,
    pub verdict: Verdict,
    pub started_ms: u64,
    pub finished_ms: u64,
    /// Time from the anchor until the condition was first seen to hold (time to detect, time to
    /// recover); for eventually-style expectations that passed or held too late.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub measured_ms: Option<u64>,
    /// Why it failed (or how it passed).
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_observed: Option<String>,
    pub invariant: bool,
    pub background: bool,
    #[serde(skip)]
    pub objects: Vec<Value>,
}

/// What ended a fault.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub enum HealedBy {
    /// `heal: {after: ...}`.
    #[serde(rename = "schedule")]
    Schedule,
    /// `heal: {atStep: ...}`.
    #[serde(rename = "atStep")]
    AtStep,
    /// The clean-up at the end of the scenario.
    #[serde(rename = "cleanup")]
    Cleanup,
    /// Nothing: a one-shot operation has nothing to undo.
    #[serde(rename = "none")]
    Nothing,
    /// Not healed (yet).
    #[serde(rename = "")]
    NotHealed,
}

impl HealedBy {
    /// The word the JSON report and the fault manager use.
    pub fn as_str(self) -> &'static str {
        match self {
            HealedBy::Schedule => "schedule",
            HealedBy::AtStep => "atStep",
            HealedBy::Cleanup => "cleanup",
            HealedBy::Nothing => "none",
            HealedBy::NotHealed => "",
        }
    }

    /// The word back (`FaultManager` records it as text); None for a word no version wrote.
    pub fn from_word(word: &str) -> Option<HealedBy> {
        [
            HealedBy::Schedule,
            HealedBy::AtStep,
            HealedBy::Cleanup,
            HealedBy::Nothing,
            HealedBy::NotHealed,
        ]
        .into_iter()
        .find(|h| h.as_str() == word)
    }
}

impl fmt::Display for HealedBy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One injected fault: when, what, and how it ended (`FaultRecord` in the schema).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FaultResult {
    pub name: String,
    /// `staleDeviceMount{node: worker-04, volume: {deletedPV: pvc-81b676e6}}`.
    pub operation: String,
    pub injected_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub healed_ms: Option<u64>,
    pub healed_by: HealedBy,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub heal_error: Option<String>,
}

/// An earlier attempt of a scenario that was run again (`--retries`).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FailedAttempt {
    /// 1-based.
    pub attempt: u32,
    pub verdict: Verdict,
    pub started_at: String,
    pub duration_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The expectations that failed in it, with why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed_expectations: Vec<FailedExpectation>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifacts: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FailedExpectation {
    pub name: String,
    pub message: String,
}

impl FailedAttempt {
    pub fn of(r: &ScenarioReport, attempt: u32) -> FailedAttempt {
        FailedAttempt {
            attempt,
            verdict: r.verdict,
            started_at: r.started_at.clone(),
            duration_ms: r.duration_ms,
            reason: r.reason.clone(),
            failed_expectations: r
                .expectations
                .iter()
                .filter(|e| e.verdict == Verdict::Failed)
                .map(|e| FailedExpectation {
                    name: e.name.clone(),
                    message: e.message.clone(),
                })
                .collect(),
            artifacts: r.artifacts.clone(),
        }
    }
}

fn one() -> u32 {
    1
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScenarioReport {
    pub name: String,
    pub file: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub verdict: Verdict,
    /// RFC 3339.
    pub started_at: String,
    pub duration_ms: u64,
    /// The first reason the scenario did not pass.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub steps: Vec<StepResult>,
    pub expectations: Vec<ExpectationResult>,
    pub faults: Vec<FaultResult>,
    pub timeline: Vec<Entry>,
    /// Where objects, events and logs were written (with --report-dir).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub artifacts: Option<String>,
    /// Last lines of the controller's log (failed scenarios).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub controller_log_tail: Vec<String>,
    /// The seed this scenario ran with (the run's; kept per scenario so merged shards keep theirs).
    #[serde(default)]
    pub seed: u64,
    /// How many times it ran (`--retries`): 1 unless an attempt failed and it was run again.
    #[serde(default = "one")]
    pub attempts: u32,
    /// Passed after failing: the earlier attempts are in `failedAttempts`.
    #[serde(default)]
    pub flaky: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed_attempts: Vec<FailedAttempt>,
}

impl ScenarioReport {
    /// Measured durations against their budgets, for one-line summaries:
    /// `fn3b-fires 8.1s/40s`.
    /// A failed expectation that never held shows `not met`: `recovered not met/2m`.
    pub fn budget_summary(&self) -> Vec<String> {
        self.expectations
            .iter()
            .filter_map(|e| {
                let measured = match (e.measured_ms, e.verdict) {
                    (Some(m), _) => ms(m),
                    (None, Verdict::Failed) if e.budget.within_ms.is_some() => "not met".into(),
                    _ => return None,
                };
                Some(match e.budget.within_ms {
                    Some(w) => format!("{} {measured}/{}", e.name, ms(w)),
                    None => format!("{} {measured}", e.name),
                })
            })
            .collect()
    }

    /// The runbook-style timeline table (Markdown), as the console, JUnit's `system-out` and
    /// the report directory's `timeline.txt` show it.
    pub fn timeline_table(&self) -> String {
        let mut out = String::new();
        out += &format!(
            "### {} - {} ({})\n\n",
            self.name,
            self.verdict.word(),
            ms(self.duration_ms)
        );
        out += "| Time | Event |\n|------|-------|\n";
        for e in &self.timeline {
            let t = format!("T+{}", ms(e.at_ms));
            let text = e.text.replace('|', "\\|").replace('\n', " ");
            out += &format!("| {t} | {text} |\n");
        }
        out
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    pub scenarios: usize,
    pub passed: usize,
    pub failed: usize,
    pub errors: usize,
    pub cancelled: usize,
    pub expectations: usize,
    pub expectations_failed: usize,
    /// Passed after failing at least once (counted in `passed` too).
    #[serde(default)]
    pub flaky: usize,
}

/// One shard's report, in a merged report.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ShardInfo {
    pub file: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<String>,
    pub seed: u64,
    pub started_at: String,
    pub duration_ms: u64,
    pub scenarios: usize,
}

/// A measured duration that regressed against `--baseline` (`report::baseline`).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Regression {
    pub scenario: String,
    pub expectation: String,
    pub baseline_ms: u64,
    pub current_ms: u64,
    pub ratio: f64,
    pub limit: f64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunReport {
    pub schema_version: u32,
    pub faultline_version: String,
    pub started_at: String,
    pub duration_ms: u64,
    pub provider: String,
    pub seed: u64,
    /// `--shard I/N` of this run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<String>,
    /// `--flaky-fails`: a flaky scenario fails the run.
    #[serde(default)]
    pub flaky_fails: bool,
    pub summary: Summary,
    pub scenarios: Vec<ScenarioReport>,
    /// With --baseline: measured durations that regressed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub regressions: Vec<Regression>,
    /// Set when the run was interrupted (SIGINT, SIGTERM).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupted_by: Option<String>,
    /// `faultline report merge`: the shard reports this one joins.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merged_from: Vec<ShardInfo>,
}

impl RunReport {
    pub fn summarize(&mut self) {
        let mut s = Summary {
            scenarios: self.scenarios.len(),
            ..Default::default()
        };
        for sc in &self.scenarios {
            match sc.verdict {
                Verdict::Passed => s.passed += 1,
                Verdict::Failed => s.failed += 1,
                Verdict::Error => s.errors += 1,
                Verdict::Cancelled | Verdict::Skipped => s.cancelled += 1,
            }
            if sc.flaky {
                s.flaky += 1;
            }
            s.expectations += sc.expectations.len();
            s.expectations_failed += sc
                .expectations
                .iter()
                .filter(|e| e.verdict == Verdict::Failed)
                .count();
        }
        self.summary = s;
    }

    /// 0 all passed, 1 a scenario failed (or a duration regressed, or - with `flaky_fails` -
    /// one was flaky), 2 a harness error.
    pub fn exit_code(&self) -> u8 {
        if self.scenarios.iter().any(|s| s.verdict == Verdict::Error) {
            2
        } else if self
            .scenarios
            .iter()
            .any(|s| matches!(s.verdict, Verdict::Failed | Verdict::Cancelled))
            || !self.regressions.is_empty()
            || (self.flaky_fails && self.summary.flaky > 0)
        {
            1
        } else {
            0
        }
    }
}

/// A duration in milliseconds as the reports write it (`1.5s`, `2m`).
pub fn ms(d: u64) -> String {
    format_duration(std::time::Duration::from_millis(d))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The typed enums write the schema's strings, and read them back.
    #[test]
    fn enums_serialize_as_the_schema_strings() {
        let words = |v: Vec<String>| v.join(" ");
        let kinds = [
            StepKind::Apply,
            StepKind::Create,
            StepKind::Patch,
            StepKind::Delete,
            StepKind::Fault,
            StepKind::Remediate,
            StepKind::Sleep,
            StepKind::Expect,
            StepKind::Script,
            StepKind::Try,
        ];
        let json: Vec<String> = kinds
            .iter()
            .map(|k| {
                serde_json::to_value(k)
                    .unwrap()
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect();
        assert_eq!(
            words(json),
            "apply create patch delete fault remediate sleep expect script try"
        );
        for k in kinds {
            assert_eq!(serde_json::to_value(k).unwrap(), k.as_str());
            let back: StepKind = serde_json::from_value(k.as_str().into()).unwrap();
            assert_eq!(back, k);
        }
        let modes = [
            ExpectationMode::Eventually,
            ExpectationMode::EventuallyFor,
            ExpectationMode::For,
            ExpectationMode::Never,
            ExpectationMode::Always,
            ExpectationMode::Rate,
        ];
        let json: Vec<String> = modes
            .iter()
            .map(|m| {
                serde_json::to_value(m)
                    .unwrap()
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect();
        assert_eq!(
            words(json),
            "eventually eventuallyFor for never always rate"
        );
        for m in modes {
            assert_eq!(serde_json::to_value(m).unwrap(), m.as_str());
        }
        for h in [
            HealedBy::Schedule,
            HealedBy::AtStep,
            HealedBy::Cleanup,
            HealedBy::Nothing,
            HealedBy::NotHealed,
        ] {
            assert_eq!(serde_json::to_value(h).unwrap(), h.as_str());
            assert_eq!(HealedBy::from_word(h.as_str()), Some(h));
            let back: HealedBy = serde_json::from_value(h.as_str().into()).unwrap();
            assert_eq!(back, h);
        }
        assert_eq!(HealedBy::Nothing.as_str(), "none");
        assert_eq!(HealedBy::from_word("later"), None);
    }
}
