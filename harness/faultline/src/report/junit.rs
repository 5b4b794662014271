//! JUnit XML (quick-junit): one test suite per scenario, one test case per expectation (and
//! per invariant), named `<scenario>/<expectation>`, plus one test case for a failed non-expect
//! step, so a failure always shows up as a failed test. GitHub Actions (e.g. test reporters) and
//! GitLab (`artifacts:reports:junit`) read this shape.

use super::{RunReport, ScenarioReport};
use crate::timeline::Verdict;
use quick_junit::{NonSuccessKind, Property, Report, TestCase, TestCaseStatus, TestSuite};
use std::time::Duration;

fn suite(s: &ScenarioReport) -> TestSuite {
    let mut ts = TestSuite::new(s.name.clone());
    ts.set_time(Duration::from_millis(s.duration_ms));
    ts.add_property(Property::new("file", s.file.clone()));
    if let Some(a) = &s.artifacts {
        ts.add_property(Property::new("artifacts", a.clone()));
    }
    for e in &s.expectations {
        let status = match e.verdict {
            Verdict::Passed => TestCaseStatus::success(),
            Verdict::Skipped | Verdict::Cancelled => {
                let mut st = TestCaseStatus::skipped();
                st.set_message(e.message.clone());
                st
            }
            Verdict::Failed | Verdict::Error => {
                let kind = if e.verdict == Verdict::Failed { NonSuccessKind::Failure } else { NonSuccessKind::Error };
                let mut st = TestCaseStatus::non_success(kind);
                st.set_message(e.message.clone());
                st.set_type(if e.budget.within_ms.is_some() { "budget" } else { "condition" });
                let mut desc = format!("{}\n{}", e.description, e.message);
                if let Some(l) = &e.last_observed {
                    desc += &format!("\nlast observed: {l}");
                }
                st.set_description(desc);
                st
            }
        };
        let mut tc = TestCase::new(format!("{}/{}", s.name, e.name), status);
        tc.set_classname(format!("faultline.{}", s.name));
        tc.set_time(Duration::from_millis(e.finished_ms.saturating_sub(e.started_ms)));
        if let Some(m) = e.measured_ms {
            tc.add_property(Property::new("measured_ms", m.to_string()));
        }
        ts.add_test_case(tc);
    }
    // A scenario that failed outside any expectation (a step, a panic, a harness error).
    let expectation_failed = s.expectations.iter().any(|e| e.verdict == Verdict::Failed);
    if s.verdict != Verdict::Passed && !expectation_failed {
        let kind = if s.verdict == Verdict::Failed { NonSuccessKind::Failure } else { NonSuccessKind::Error };
        let mut st = TestCaseStatus::non_success(kind);
        st.set_message(s.reason.clone().unwrap_or_default());
        let step = s.steps.iter().find(|x| x.verdict == Verdict::Failed).map(|x| x.name.clone()).unwrap_or_else(|| "scenario".into());
        let mut tc = TestCase::new(format!("{}/{} (step)", s.name, step), st);
        tc.set_classname(format!("faultline.{}", s.name));
        ts.add_test_case(tc);
    }
    ts.set_system_out(super::console::timeline_table(s));
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
