//! `faultline explore` on the fixture controller: from `controller-rbac` (a scenario about its
//! permissions, not about crashes), explore finds the `generated-pod-name` regression (a
//! non-idempotent create that duplicates the pod after a crash), writes a scenario that
//! replays it, and finds nothing on the fixed controller with the same seed and budget.

use std::path::{Path, PathBuf};
use std::process::Command;

mod common;
use common::{controller_rbac_pack, json, text, BIN};

const SEED: &str = "7";
const BUDGET: &str = "60s";

/// A copy of the pack's layout to run in, the RBAC manifest as it is.
fn pack() -> tempfile::TempDir {
    controller_rbac_pack(|rbac| rbac)
}

fn explore(root: &Path, scenario: &str, out: &str, extra: &[&str]) -> (i32, String, PathBuf) {
    let out_dir = root.join(out);
    let o = Command::new(BIN)
        .args(["explore", scenario, "--seed", SEED, "--budget", BUDGET])
        .args(["--jobs", "2", "--out"])
        .arg(&out_dir)
        .args(["--config", "scenarios/faultline.yaml"])
        .args(extra)
        .current_dir(root)
        .output()
        .unwrap();
    (o.status.code().unwrap_or(-1), text(&o), out_dir)
}

#[test]
fn explore_finds_the_duplicate_after_a_crash_and_nothing_on_the_fixed_controller() {
    let root = pack();
    let regression = "--controller-arg=--regression=generated-pod-name";
    let (code, out, dir) = explore(
        root.path(),
        "scenarios/controller-rbac.yaml",
        "bug",
        &[regression],
    );
    assert_eq!(code, 1, "{out}");
    let report = json(&dir.join("explore.json"));
    assert!(report["found"].as_u64().unwrap() >= 1, "{out}");
    let variants = report["variants"].as_array().unwrap();
    let crash = variants
        .iter()
        .find(|v| {
            v["perturbations"].as_array().is_some_and(|p| p.len() == 1)
                && v["perturbations"][0]["kind"] == "crashAfterMutation"
                && v["violations"].as_array().is_some_and(|x| !x.is_empty())
        })
        .unwrap_or_else(|| panic!("no crash variant found the duplicate: {out}"));
    // The end state has one pod too many, named from the generateName.
    let diffs = crash["differences"].as_array().unwrap();
    assert!(
        diffs.iter().any(|d| d["change"] == "extra"
            && d["key"]
                .as_str()
                .unwrap()
                .starts_with("Pod llmsafespaces/ws-b70553ae-")),
        "{out}"
    );
    assert!(out.contains("FOUND"), "{out}");
    assert!(
        out.contains("controller trace around the perturbation"),
        "{out}"
    );
    assert!(out.contains("<== crash after mutating request"), "{out}");
    // The written scenario carries its perturbation and replays the failure.
    let repro = PathBuf::from(crash["repro"].as_str().unwrap());
    let body = std::fs::read_to_string(&repro).unwrap();
    assert!(
        body.contains("perturb:") && body.contains("crashAfterMutation"),
        "{body}"
    );
    let (code, replayed, dir) = explore(
        root.path(),
        repro.to_str().unwrap(),
        "replay",
        &[regression],
    );
    assert_eq!(code, 1, "{replayed}");
    let report = json(&dir.join("explore.json"));
    assert_eq!(report["replay"], true);
    assert_eq!(report["found"], 1, "{replayed}");

    // The fixed controller: the same seed and budget find nothing.
    let (code, out, dir) = explore(root.path(), "scenarios/controller-rbac.yaml", "fixed", &[]);
    assert_eq!(code, 0, "{out}");
    let report = json(&dir.join("explore.json"));
    assert_eq!(report["found"], 0, "{out}");
    assert!(report["variants"].as_array().unwrap().len() >= 4, "{out}");
}
