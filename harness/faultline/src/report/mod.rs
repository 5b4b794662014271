//! The run's results as data (serialized as the JSON report, docs/report-schema.md), and the
//! reporters that render them: console, Markdown summary, JUnit XML, JSON, HTML. Reporters only
//! read a finished `RunReport`; the runner knows nothing of them (besides the live progress
//! hook). `merge` joins the JSON reports of sharded runs into one.

pub mod baseline;
pub mod console;
pub mod html;
pub mod junit;
pub mod markdown;
pub mod merge;

use crate::expect::ExpectationResult;
use crate::faults::FaultRecord;
use crate::timeline::{Entry, Verdict};
use serde::{Deserialize, Serialize};

pub const SCHEMA_VERSION: u32 = 1;

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StepResult {
    pub name: String,
    pub kind: String,
    pub started_ms: u64,
    pub duration_ms: u64,
    pub verdict: Verdict,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
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
    pub faults: Vec<FaultRecord>,
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
    pub regressions: Vec<baseline::Regression>,
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

pub fn write_json(report: &RunReport, path: &std::path::Path) -> anyhow::Result<()> {
    if let Some(p) = path.parent() {
        std::fs::create_dir_all(p)?;
    }
    std::fs::write(path, serde_json::to_string_pretty(report)?)?;
    Ok(())
}

pub fn ms(d: u64) -> String {
    crate::model::duration::format_duration(std::time::Duration::from_millis(d))
}

#[cfg(test)]
pub(crate) mod tests_support {
    use super::*;
    use crate::expect::Budget;

    pub fn empty_run() -> RunReport {
        RunReport {
            schema_version: SCHEMA_VERSION,
            faultline_version: "test".into(),
            started_at: String::new(),
            duration_ms: 10,
            provider: "sim".into(),
            seed: 1,
            shard: None,
            flaky_fails: false,
            summary: Summary::default(),
            scenarios: vec![],
            regressions: vec![],
            interrupted_by: None,
            merged_from: vec![],
        }
    }

    pub fn scenario(name: &str, measured: &[(&str, Option<u64>)]) -> ScenarioReport {
        ScenarioReport {
            name: name.into(),
            file: format!("{name}.yaml"),
            description: None,
            verdict: Verdict::Passed,
            started_at: String::new(),
            duration_ms: 100,
            reason: None,
            steps: vec![],
            faults: vec![],
            timeline: vec![],
            artifacts: None,
            controller_log_tail: vec![],
            seed: 1,
            attempts: 1,
            flaky: false,
            failed_attempts: vec![],
            expectations: measured
                .iter()
                .map(|(n, m)| ExpectationResult {
                    name: n.to_string(),
                    kind: "resource".into(),
                    description: format!("{n} & <friends>"),
                    mode: "eventually".into(),
                    anchor: "start".into(),
                    anchor_ms: 0,
                    budget: Budget {
                        within_ms: Some(1000),
                        for_ms: None,
                    },
                    verdict: if m.is_some() {
                        Verdict::Passed
                    } else {
                        Verdict::Failed
                    },
                    started_ms: 0,
                    finished_ms: 5,
                    measured_ms: *m,
                    message: "why".into(),
                    last_observed: Some("seen".into()),
                    invariant: false,
                    background: false,
                    objects: vec![],
                })
                .collect(),
        }
    }

    #[test]
    fn junit_and_html_render_every_expectation_and_escape() {
        let mut r = empty_run();
        r.scenarios
            .push(scenario("a", &[("x", Some(5)), ("y", None)]));
        let mut b = scenario("b", &[]);
        b.verdict = Verdict::Error;
        b.reason = Some("cluster failed to start".into());
        r.scenarios.push(b);
        r.summarize();
        assert_eq!(r.exit_code(), 2);
        let xml = junit::render(&r).unwrap();
        assert!(xml.contains(r#"<testcase name="a/x""#) && xml.contains(r#"<testcase name="a/y""#));
        assert!(
            xml.contains(r#"<testcase name="b/scenario (step)""#),
            "a harness error is a test case too: {xml}"
        );
        assert!(xml.contains("x &amp; &lt;friends&gt;") || !xml.contains("<friends>"));
        let html = html::render(&r);
        assert!(html.contains("x &amp; &lt;friends&gt;") && !html.contains("<friends>"));
        assert_eq!(html.matches("<svg").count(), 2);
    }
}
