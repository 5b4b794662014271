//! The scenario pack's harness overhead: the pack is run by the `faultline` binary (as the main
//! job runs it, one scenario at a time by default) and its wall time is set against the time the
//! scenarios themselves ask to spend: `sleep` steps and `expect` steps (waiting for the
//! controller, bounded by their budgets). The rest is the harness: cluster start, manifests,
//! fault injection and healing, controller start and stop, teardown, reports.

use crate::report::Report;
use anyhow::{bail, Context, Result};
use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

#[derive(Debug, Clone)]
pub struct PackConfig {
    pub faultline: PathBuf,
    pub scenarios: PathBuf,
    pub jobs: usize,
    pub seed: u64,
    /// Target for (wall - waits) / wall.
    pub target_overhead: f64,
    pub extra_args: Vec<String>,
}

impl Default for PackConfig {
    fn default() -> Self {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
        PackConfig {
            faultline: root.join("target/debug/faultline"),
            scenarios: root.join("scenarios"),
            jobs: 1,
            seed: 20261203,
            target_overhead: 0.10,
            extra_args: vec![],
        }
    }
}

/// Time a scenario asks to spend in its own steps: sleeps and expectations waiting.
pub fn waiting_ms(scenario: &Value) -> u64 {
    scenario["steps"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|s| matches!(s["kind"].as_str(), Some("sleep" | "expect")))
        .map(|s| s["durationMs"].as_u64().unwrap_or(0))
        .sum()
}

pub fn run(cfg: &PackConfig) -> Result<Report> {
    if !cfg.faultline.is_file() {
        bail!(
            "{} not found: build it first (cargo build --workspace --bins)",
            cfg.faultline.display()
        );
    }
    let out = tempfile::tempdir()?;
    let json = out.path().join("report.json");
    let t0 = Instant::now();
    let status = Command::new(&cfg.faultline)
        .arg("run")
        .arg(&cfg.scenarios)
        .args([
            "--jobs",
            &cfg.jobs.to_string(),
            "--seed",
            &cfg.seed.to_string(),
        ])
        .arg("--report-dir")
        .arg(out.path())
        .arg("--json")
        .arg(&json)
        .args(&cfg.extra_args)
        .stdout(std::process::Stdio::null())
        .status()
        .with_context(|| format!("running {}", cfg.faultline.display()))?;
    let wall_ms = t0.elapsed().as_secs_f64() * 1000.0;
    if status.code() == Some(2) || !json.is_file() {
        bail!("faultline run ended with {status} and no report");
    }
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json)?)?;
    let scenarios = report["scenarios"].as_array().cloned().unwrap_or_default();
    let mut r = Report::new("pack");
    let (mut sum_ms, mut sum_wait) = (0u64, 0u64);
    for s in &scenarios {
        let d = s["durationMs"].as_u64().unwrap_or(0);
        let w = waiting_ms(s);
        sum_ms += d;
        sum_wait += w;
        let name = s["name"].as_str().unwrap_or("?");
        r.row(
            &format!("{name}: overhead"),
            d.saturating_sub(w) as f64,
            "ms",
        );
    }
    let overhead_ms = wall_ms - sum_wait as f64;
    let ratio = overhead_ms / wall_ms;
    r.row("pack wall time", wall_ms / 1000.0, "s");
    r.row("sum of scenario durations", sum_ms as f64 / 1000.0, "s");
    r.row(
        "sum of sleeps and expectation waits",
        sum_wait as f64 / 1000.0,
        "s",
    );
    r.row(
        "outside scenarios (start-up, reports)",
        (wall_ms - sum_ms as f64).max(0.0) / 1000.0,
        "s",
    );
    r.row_target(
        "harness overhead (wall - waits) / wall",
        ratio * 100.0,
        "%",
        &format!("< {:.0} %", cfg.target_overhead * 100.0),
        Some(ratio / cfg.target_overhead),
    );
    let passed = scenarios
        .iter()
        .filter(|s| s["verdict"] == "passed")
        .count();
    r.ctx("jobs", cfg.jobs as u64)
        .ctx("scenarios", scenarios.len() as u64)
        .ctx("passed", passed as u64)
        .ctx("seed", cfg.seed);
    let all_passed = passed == scenarios.len() && !scenarios.is_empty();
    r.verdict(all_passed && ratio < cfg.target_overhead, format!(
        "{:.1} % of the pack's wall time is harness overhead ({:.1} s of {:.1} s) vs target < {:.0} %; {passed}/{} scenarios passed",
        ratio * 100.0, overhead_ms / 1000.0, wall_ms / 1000.0, cfg.target_overhead * 100.0, scenarios.len()));
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_sleeps_and_expectations_count_as_waiting() {
        let s = json!({"steps": [
            {"kind": "apply", "durationMs": 40}, {"kind": "expect", "durationMs": 1200},
            {"kind": "sleep", "durationMs": 500}, {"kind": "fault", "durationMs": 3}]});
        assert_eq!(waiting_ms(&s), 1700);
        assert_eq!(waiting_ms(&json!({})), 0);
    }
}
