//! The run's results as data (`model`, serialized as the JSON report, docs/report-schema.md),
//! the live progress hook the runner calls (`Progress`), and the reporters that render them:
//! console, Markdown summary, JUnit XML, JSON, HTML. Reporters only read a finished `RunReport`;
//! the runner builds the model and talks to the console only through `Progress`, and imports
//! no reporter. `merge` joins the JSON reports of sharded runs into one.

pub mod baseline;
pub mod console;
pub mod html;
pub mod junit;
pub mod markdown;
pub mod merge;
pub mod model;
mod progress;

pub use model::*;
pub use progress::{NoProgress, Progress};

pub fn write_json(report: &RunReport, path: &std::path::Path) -> anyhow::Result<()> {
    if let Some(p) = path.parent() {
        std::fs::create_dir_all(p)?;
    }
    std::fs::write(path, serde_json::to_string_pretty(report)?)?;
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests_support {
    use super::*;
    use crate::timeline::Verdict;

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
                    mode: ExpectationMode::Eventually,
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
