//! The scenario pack (scenarios/) on the sim provider with the real workspace-controller: with the
//! fixed controller every scenario passes; each `--regression` switch brings back a known bug and
//! at least one scenario fails, exit 1, naming the violated budget or invariant.

use rstest::rstest;
use std::process::Command;

mod common;
use common::{controller, repo, BIN};

fn run_pack(extra: &[&str]) -> (i32, String, serde_json::Value) {
    controller();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("report.json");
    let out = Command::new(BIN)
        .args(["run", "scenarios", "--jobs", "3", "--seed", "7", "--json"])
        .arg(&json)
        .args(extra)
        .current_dir(repo())
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let report = std::fs::read_to_string(&json).ok().and_then(|s| serde_json::from_str(&s).ok()).unwrap_or_default();
    (out.status.code().unwrap_or(-1), text, report)
}

#[test]
fn fixed_controller_passes_the_whole_pack() {
    let (code, text, report) = run_pack(&[]);
    assert_eq!(code, 0, "{text}");
    let scenarios = report["scenarios"].as_array().expect("scenarios in the JSON report");
    assert!(scenarios.len() >= 9, "the pack has at least 9 scenarios: {}", scenarios.len());
    for s in scenarios {
        assert_eq!(s["verdict"], "passed", "{}: {text}", s["name"]);
    }
    // Quiet passes: one line per scenario with its measured durations against their budgets,
    // no timelines (those are for failures, --verbose and the report directory).
    for s in scenarios {
        let line = format!("PASS  {}  ", s["name"].as_str().unwrap());
        assert_eq!(text.lines().filter(|l| l.starts_with(&line)).count(), 1, "{line}: {text}");
    }
    assert!(text.lines().any(|l| l.starts_with("PASS  stale-csi-mount  ") && l.contains("fn3b-fires ")), "{text}");
    assert!(!text.contains("| Time | Event |"), "{text}");
}

#[rstest]
#[case::hot_loop("hot-loop", "^restart-generation-hot-loop$", "FAIL restart-generation-hot-loop: invariant `no-hot-loop` failed: violated at")]
#[case::fn3b_zero_statuses("fn3b-zero-statuses", "^dead-csi-plugin$", "FAIL dead-csi-plugin: expectation `fn3b-fires` failed: budget missed: within 15s after create-workspace")]
#[case::no_fn3b("no-fn3b", "^saturated-kubelet-workers$", "FAIL saturated-kubelet-workers: expectation `fn3b-fires` failed: budget missed: within 15s after create-workspace")]
#[case::no_backoff("no-backoff", "^dead-csi-plugin$", "FAIL dead-csi-plugin: expectation `retry-backed-off` failed: budget missed: within 5s")]
fn each_regression_fails_a_scenario(#[case] regression: &str, #[case] filter: &str, #[case] wanted: &str) {
    let arg = format!("--controller-arg=--regression={regression}");
    let (code, text, _) = run_pack(&["--filter", filter, &arg]);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains(wanted), "missing `{wanted}` in:\n{text}");
}
