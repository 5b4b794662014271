//! `faultline init` as a new user runs it: in an empty directory, for their controller (the
//! workspace-controller fixture, started by a command line with arguments), then
//! `faultline validate` and `faultline run` there pass - the example's fault (the controller is
//! killed) is injected and its recovery expectation is met.

use std::path::Path;
use std::process::{Command, Stdio};

mod common;
use common::{controller, repo, BIN};

fn faultline(dir: &Path, args: &[&str]) -> (i32, String) {
    let out = Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

#[test]
fn init_writes_a_suite_that_runs_and_passes() {
    let ctl = controller();
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("my-operator");
    std::fs::create_dir_all(project.join("config/crd")).unwrap();
    std::fs::copy(
        repo().join("fixtures/crds/workspace.yaml"),
        project.join("config/crd/workspace.yaml"),
    )
    .unwrap();
    let command = format!("{} --requeue-interval=500ms", ctl.display());
    let (code, out) = faultline(
        dir.path(),
        &[
            "init",
            "my-operator",
            "--controller-command",
            &command,
            "--crd",
            "config/crd/workspace.yaml",
            "--ready-pattern",
            "workspace-controller starting",
        ],
    );
    assert_eq!(code, 0, "{out}");
    for f in [
        "scenarios/faultline.yaml",
        "scenarios/controller-restarts-after-crash.yaml",
        "ci/faultline.github-actions.yml",
    ] {
        assert!(project.join(f).is_file(), "{f} written: {out}");
    }
    let (code, out) = faultline(&project, &["validate", "scenarios"]);
    assert_eq!(code, 0, "{out}");
    let (code, out) = faultline(&project, &["run", "scenarios", "--json", "r.json"]);
    assert_eq!(
        code, 0,
        "the example passes with a working controller: {out}"
    );
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(project.join("r.json")).unwrap()).unwrap();
    let s = &r["scenarios"][0];
    assert_eq!(s["name"], "controller-restarts-after-crash");
    assert_eq!(s["faults"][0]["operation"], "controllerCrash{signal: KILL}");
    assert_eq!(s["faults"][0]["healedBy"], "schedule");
    let rec = s["expectations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "controller-recovered")
        .unwrap();
    assert_eq!(rec["verdict"], "passed");
    assert!(rec["measuredMs"].as_u64().is_some());
    // A second init does not overwrite what the user has since edited.
    let (code, out) = faultline(
        dir.path(),
        &["init", "my-operator", "--controller-command", "true"],
    );
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("faultline.yaml exists"), "{out}");
}

#[test]
fn the_example_fails_when_the_controller_does_not_come_back() {
    // A "controller" that starts once and then only sleeps silently: after the crash it is
    // started again but never logs, so the recovery expectation fails - the example can fail.
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("started-once");
    let command = format!(
        "if [ -f {0} ]; then sleep 600; fi; touch {0}; echo up; sleep 600",
        marker.display()
    );
    let (code, out) = faultline(dir.path(), &["init", ".", "--controller-command", &command]);
    assert_eq!(code, 0, "{out}");
    let (code, out) = faultline(dir.path(), &["run", "scenarios", "--json", "r.json"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("expectation `controller-recovered` failed"),
        "{out}"
    );
}
