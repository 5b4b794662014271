//! JUnit XML (quick-junit): one test suite per scenario, one test case per expectation (and
//! per invariant), named `<scenario>/<expectation>`, plus one test case for a failed non-expect
//! step, so a failure always shows up as a failed test. GitHub Actions (e.g. test reporters) and
//! GitLab (`artifacts:reports:junit`) read this shape.
//!
//! Retries (`--retries`) are written as surefire and cargo-nextest write them: a test case that
//! passed after failing carries one `<flakyFailure>` per failed attempt; one that failed every
//! attempt carries `<rerunFailure>` for the earlier ones.

use super::{FailedAttempt, RunReport, ScenarioReport};
use crate::timeline::Verdict;
use quick_junit::{
    FlakyOrRerun, NonSuccessKind, Property, Report, TestCase, TestCaseStatus, TestRerun, TestSuite,
};
use std::time::Duration;

/// The earlier attempt's failure as a rerun entry of test case `case` (an expectation's name;
/// None for the scenario-level case).
fn rerun(a: &FailedAttempt, message: &str) -> TestRerun {
    let kind = if a.verdict == Verdict::Error {
        NonSuccessKind::Error
    } else {
        NonSuccessKind::Failure
    };
    let mut r = TestRerun::new(kind);
    r.set_message(format!("attempt {}: {message}", a.attempt));
    r.set_time(Duration::from_millis(a.duration_ms));
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(&a.started_at) {
        r.set_timestamp(t);
    }
    if let Some(dir) = &a.artifacts {
        r.set_system_out(format!("artifacts: {dir}"));
    }
    r
}

/// Which test case of the final attempt each earlier failure belongs to: the expectation that
/// failed then, else (a step, a harness error) the first test case.
fn reruns_for(s: &ScenarioReport, case: &str, first_case: &str) -> Vec<TestRerun> {
    let mut out = vec![];
    for a in &s.failed_attempts {
        let matched: Vec<_> = a
            .failed_expectations
            .iter()
            .filter(|f| s.expectations.iter().any(|e| e.name == f.name))
            .collect();
        if let Some(f) = matched.iter().find(|f| f.name == case) {
            out.push(rerun(a, &f.message));
        } else if matched.is_empty() && case == first_case {
            out.push(rerun(a, a.reason.as_deref().unwrap_or("failed")));
        }
    }
    out
}

fn suite(s: &ScenarioReport) -> TestSuite {
    let mut ts = TestSuite::new(s.name.clone());
    ts.set_time(Duration::from_millis(s.duration_ms));
    ts.add_property(Property::new("file", s.file.clone()));
    if let Some(a) = &s.artifacts {
        ts.add_property(Property::new("artifacts", a.clone()));
    }
    let first_case = s
        .expectations
        .first()
        .map(|e| e.name.clone())
        .unwrap_or_default();
    for e in &s.expectations {
        let mut status = match e.verdict {
            Verdict::Passed => TestCaseStatus::success(),
            Verdict::Skipped | Verdict::Cancelled => {
                let mut st = TestCaseStatus::skipped();
                st.set_message(e.message.clone());
                st
            }
            Verdict::Failed | Verdict::Error => {
                let kind = if e.verdict == Verdict::Failed {
                    NonSuccessKind::Failure
                } else {
                    NonSuccessKind::Error
                };
                let mut st = TestCaseStatus::non_success(kind);
                st.set_message(e.message.clone());
                st.set_type(if e.budget.within_ms.is_some() {
                    "budget"
                } else {
                    "condition"
                });
                let mut desc = format!("{}\n{}", e.description, e.message);
                if let Some(l) = &e.last_observed {
                    desc += &format!("\nlast observed: {l}");
                }
                st.set_description(desc);
                st
            }
        };
        let reruns = reruns_for(s, &e.name, &first_case);
        if !reruns.is_empty() {
            status.set_rerun_kind(if s.verdict == Verdict::Passed {
                FlakyOrRerun::Flaky
            } else {
                FlakyOrRerun::Rerun
            });
            status.add_reruns(reruns);
        }
        let mut tc = TestCase::new(format!("{}/{}", s.name, e.name), status);
        tc.set_classname(format!("faultline.{}", s.name));
        tc.set_time(Duration::from_millis(
            e.finished_ms.saturating_sub(e.started_ms),
        ));
        if let Some(m) = e.measured_ms {
            tc.add_property(Property::new("measured_ms", m.to_string()));
        }
        ts.add_test_case(tc);
    }
    // A flaky scenario without expectations: its earlier failures still need a test case.
    if s.expectations.is_empty() && s.verdict == Verdict::Passed && !s.failed_attempts.is_empty() {
        let mut st = TestCaseStatus::success();
        st.add_reruns(reruns_for(s, "", ""));
        let mut tc = TestCase::new(format!("{}/scenario", s.name), st);
        tc.set_classname(format!("faultline.{}", s.name));
        ts.add_test_case(tc);
    }
    // A scenario that failed outside any expectation (a step, a panic, a harness error).
    let expectation_failed = s.expectations.iter().any(|e| e.verdict == Verdict::Failed);
    if s.verdict != Verdict::Passed && !expectation_failed {
        let kind = if s.verdict == Verdict::Failed {
            NonSuccessKind::Failure
        } else {
            NonSuccessKind::Error
        };
        let mut st = TestCaseStatus::non_success(kind);
        st.set_message(s.reason.clone().unwrap_or_default());
        let step = s
            .steps
            .iter()
            .find(|x| x.verdict == Verdict::Failed)
            .map(|x| x.name.clone())
            .unwrap_or_else(|| "scenario".into());
        let mut tc = TestCase::new(format!("{}/{} (step)", s.name, step), st);
        tc.set_classname(format!("faultline.{}", s.name));
        ts.add_test_case(tc);
    }
    ts.set_system_out(s.timeline_table());
    ts
}

pub fn render(report: &RunReport) -> anyhow::Result<String> {
    let mut r = Report::new("faultline");
    r.set_time(Duration::from_millis(report.duration_ms));
    for s in &report.scenarios {
        r.add_test_suite(suite(s));
    }
    Ok(r.to_string()?)
}

pub fn write(report: &RunReport, path: &std::path::Path) -> anyhow::Result<()> {
    if let Some(p) = path.parent() {
        std::fs::create_dir_all(p)?;
    }
    std::fs::write(path, render(report)?)?;
    Ok(())
}
