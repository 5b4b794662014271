//! The scenario pack (scenarios/) on the sim provider with the real workspace-controller and the
//! Go operator (fixtures/go-operator, built by the runner): with the fixed controllers every
//! scenario passes; each `--regression` switch brings back a known bug and at least one scenario
//! fails, exit 1, naming the violated budget or invariant.

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
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let report = std::fs::read_to_string(&json)
        .ok()
        .and_then(|s| serde_json::from_str(&s).ok())
        .unwrap_or_default();
    (out.status.code().unwrap_or(-1), text, report)
}

#[test]
fn fixed_controller_passes_the_whole_pack() {
    let (code, text, report) = run_pack(&[]);
    assert_eq!(code, 0, "{text}");
    let scenarios = report["scenarios"]
        .as_array()
        .expect("scenarios in the JSON report");
    assert!(
        scenarios.len() >= 9,
        "the pack has at least 9 scenarios: {}",
        scenarios.len()
    );
    for s in scenarios {
        assert_eq!(s["verdict"], "passed", "{}: {text}", s["name"]);
    }
    // Quiet passes: one line per scenario with its measured durations against their budgets,
    // no timelines (those are for failures, --verbose and the report directory).
    for s in scenarios {
        let line = format!("PASS  {}  ", s["name"].as_str().unwrap());
        assert_eq!(
            text.lines().filter(|l| l.starts_with(&line)).count(),
            1,
            "{line}: {text}"
        );
    }
    assert!(
        text.lines()
            .any(|l| l.starts_with("PASS  stale-csi-mount  ") && l.contains("fn3b-fires ")),
        "{text}"
    );
    // The Go operator's scenarios are in the pack.
    for name in ["go-operator-kubelet-stop", "go-operator-csi-plugin-down"] {
        assert!(
            scenarios.iter().any(|s| s["name"] == name),
            "{name} in the pack: {text}"
        );
    }
    assert!(!text.contains("| Time | Event |"), "{text}");
}

#[rstest]
#[case::hot_loop(
    "hot-loop",
    "^restart-generation-hot-loop$",
    "FAIL restart-generation-hot-loop: invariant `no-hot-loop` failed: violated at"
)]
#[case::fn3b_zero_statuses("fn3b-zero-statuses", "^dead-csi-plugin$", "FAIL dead-csi-plugin: expectation `fn3b-fires` failed: budget missed: within 15s after create-workspace")]
#[case::no_fn3b("no-fn3b", "^saturated-kubelet-workers$", "FAIL saturated-kubelet-workers: expectation `fn3b-fires` failed: budget missed: within 15s after create-workspace")]
#[case::no_backoff(
    "no-backoff",
    "^dead-csi-plugin$",
    "FAIL dead-csi-plugin: expectation `retry-backed-off` failed: budget missed: within 5s"
)]
// The false-pass corpus (issue #33): each passed on the sim before its fix.
#[case::no_stuck_terminating(
    "no-stuck-terminating",
    "^false-pass-stuck-terminating$",
    "FAIL false-pass-stuck-terminating: expectation `replacement-scheduled` failed: budget missed: within 12s after previous"
)]
#[case::no_stuck_terminating_hung_nfs(
    "no-stuck-terminating",
    "^false-pass-hung-nfs$",
    "FAIL false-pass-hung-nfs: expectation `replacement-scheduled` failed: budget missed: within 12s after previous"
)]
#[case::await_kubelet_kill(
    "await-kubelet-kill",
    "^false-pass-partitioned-kill$",
    "FAIL false-pass-partitioned-kill: expectation `replacement-scheduled` failed: budget missed: within 12s after previous"
)]
#[case::force_delete_pods(
    "force-delete-pods",
    "^false-pass-multi-attach$",
    "FAIL false-pass-multi-attach: expectation `failed-over` failed: budget missed: within 12s after previous"
)]
#[case::plugin_pod_readiness(
    "plugin-pod-readiness",
    "^false-pass-csi-unregistered$",
    "FAIL false-pass-csi-unregistered: expectation `db-running` failed: budget missed: within 30s after create-db"
)]
#[case::pod_readiness(
    "pod-readiness",
    "^false-pass-pleg-not-ready$",
    "FAIL false-pass-pleg-not-ready: expectation `cordoned` failed: budget missed: within 8s after kubelet-not-ready"
)]
// The controller-runtime fixture (fixtures/go-operator): its Store's Ready condition.
#[case::ready_from_pod_phase(
    "ready-from-pod-phase",
    "^go-operator-kubelet-stop$",
    "FAIL go-operator-kubelet-stop: expectation `not-ready` failed: budget missed: within 10s after kubelet-stopped for 1s"
)]
#[case::ready_from_spec(
    "ready-from-spec",
    "^go-operator-csi-plugin-down$",
    "FAIL go-operator-csi-plugin-down: expectation `not-ready-while-unmounted` failed: held at"
)]
fn each_regression_fails_a_scenario(
    #[case] regression: &str,
    #[case] filter: &str,
    #[case] wanted: &str,
) {
    let arg = format!("--controller-arg=--regression={regression}");
    let (code, text, _) = run_pack(&["--filter", filter, &arg]);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains(wanted), "missing `{wanted}` in:\n{text}");
}

/// The kubelet log a run saves keeps the runbook's lines for the scenario's whole length: the
/// saturated-workers scenario runs through the binary to its end (about 4 simulated minutes at
/// its timeScale), then its saved log is grepped the way the runbook greps a node's kubelet log.
#[test]
fn the_saved_kubelet_log_keeps_the_runbook_lines_for_the_whole_scenario() {
    controller();
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args([
            "run",
            "scenarios",
            "--filter",
            "^saturated-kubelet-workers$",
            "--seed",
            "7",
            "--report-dir",
        ])
        .arg(dir.path())
        .current_dir(repo())
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(0), "{text}");
    let log = std::fs::read_to_string(
        dir.path()
            .join("saturated-kubelet-workers/logs/kubelet-worker-02.log"),
    )
    .unwrap();
    let lines: Vec<&str> = log.lines().collect();
    assert!(
        !log.contains("lines lost"),
        "every line reached the saved log:\n{log}"
    );
    // The incident runbook: `logs kubelet | grep -iE 'NestedPendingOperations|GetDeviceMountRefs|context deadline exceeded'`.
    let runbook = regex::RegexBuilder::new(
        "NestedPendingOperations|GetDeviceMountRefs|context deadline exceeded",
    )
    .case_insensitive(true)
    .build()
    .unwrap();
    let hits: Vec<&&str> = lines.iter().filter(|l| runbook.is_match(l)).collect();
    assert!(
        hits.len() >= 3,
        "the runbook's grep finds the volume's retries:\n{log}"
    );
    // The first retries (500ms, doubling) are still there at the end.
    for (hit, backoff) in hits.iter().zip(["500ms", "1s", "2s"]) {
        assert!(
            hit.contains(&format!("(durationBeforeRetry {backoff})")),
            "{hit}\n{log}"
        );
    }
    // The whole length: from the stale pods' arrival, through the workspace's retries, to its
    // volume mounted after the stale pods went.
    let added = lines
        .iter()
        .position(|l| {
            l.contains("\"SyncLoop ADD\" source=\"api\" pods=[\"snapshots/snapshot-worker-02-0\"]")
        })
        .expect("stale pods added");
    let first_retry = lines.iter().position(|l| l == hits[0]).unwrap();
    assert!(added < first_retry, "{log}");
    let removed = lines
        .iter()
        .position(|l| {
            l.contains(
                "\"SyncLoop REMOVE\" source=\"api\" pods=[\"snapshots/snapshot-worker-02-7\"]",
            )
        })
        .expect("stale pods removed");
    // The recovered workspace's mount (a pod that arrives before PLEG is declared unhealthy
    // is in the pod manager, so its volume may be mounted earlier too, as on a real node).
    let mounted = lines
        .iter()
        .rposition(|l| l.contains("MountVolume.SetUp succeeded for volume"))
        .expect("the workspace's volume mounted");
    assert!(removed < mounted, "{log}");
}
