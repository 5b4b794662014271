//! `faultline explore` finds the fixture controller's two other seeded bug patterns from
//! scenarios that do not target them (docs/explore.md, "Proof on the fixture controller"):
//! `stale-cache-delete` (a pod deleted on a stale cached read) from `controller-rbac` through a
//! stale-read variant, and `missed-state-orphan` (a PVC left when the DELETED event is missed)
//! from `workspace-lifecycle` through a relist variant. The fixed controller on the same
//! scenarios and seed is in tests/explore.rs (controller-rbac) and measured by hand
//! (workspace-lifecycle); the budgets are kept short so the whole test stays near 100 s.

use std::path::Path;
use std::process::Command;

mod common;
use common::{controller_rbac_pack, json, text, BIN};

/// Runs explore and returns its exit code, output and explore.json.
fn explore(
    root: &Path,
    scenario: &str,
    out: &str,
    args: &[&str],
) -> (i32, String, serde_json::Value) {
    let dir = root.join(out);
    let o = Command::new(BIN)
        .args(["explore", scenario, "--jobs", "2", "--out"])
        .arg(&dir)
        .args(["--config", "scenarios/faultline.yaml"])
        .args(args)
        .current_dir(root)
        .output()
        .unwrap();
    let out = text(&o);
    let report = json(&dir.join("explore.json"));
    (o.status.code().unwrap_or(-1), out, report)
}

/// The single-perturbation variants of `kind` that failed an oracle.
fn found_singles<'a>(report: &'a serde_json::Value, kind: &str) -> Vec<&'a serde_json::Value> {
    report["variants"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| {
            v["perturbations"].as_array().is_some_and(|p| p.len() == 1)
                && v["perturbations"][0]["kind"] == kind
                && v["violations"].as_array().is_some_and(|x| !x.is_empty())
        })
        .collect()
}

#[test]
fn explore_finds_a_stale_cache_delete_and_a_missed_state_orphan() {
    let root = controller_rbac_pack(|rbac| rbac);

    // stale-cache-delete: the sweep's resourceVersion=0 reads are stale-read points, and one
    // answered a write behind deletes the serving pod: the end state differs from the
    // unperturbed run's (the workspace went through recovery).
    let (code, out, report) = explore(
        root.path(),
        "scenarios/controller-rbac.yaml",
        "stale",
        &[
            "--controller-arg=--regression=stale-cache-delete",
            "--seed",
            "1",
            "--budget",
            "40s",
        ],
    );
    assert_eq!(code, 1, "{out}");
    assert!(
        report["pointsByKind"]["staleRead"].as_u64().unwrap() >= 1,
        "{out}"
    );
    let stale = found_singles(&report, "staleRead");
    assert!(!stale.is_empty(), "no stale read found it: {out}");
    assert!(
        stale.iter().any(|v| v["violations"]
            .as_array()
            .unwrap()
            .iter()
            .any(|x| x["oracle"] == "endState")),
        "{out}"
    );
    // No other kind of single perturbation finds it: the bug is the stale read's.
    for kind in ["crashAfterMutation", "watchRelist"] {
        assert!(found_singles(&report, kind).is_empty(), "{kind}: {out}");
    }

    // missed-state-orphan: withholding the DELETED event of the workspace (the watch ends with
    // 410 and the controller relists) leaves its PVC, which the unperturbed run deleted.
    let (code, out, report) = explore(
        root.path(),
        "scenarios/workspace-lifecycle.yaml",
        "orphan",
        &[
            "--controller-arg=--regression=missed-state-orphan",
            "--seed",
            "1",
            "--budget",
            "40s",
        ],
    );
    assert_eq!(code, 1, "{out}");
    let relist = found_singles(&report, "watchRelist");
    assert!(!relist.is_empty(), "no relist found it: {out}");
    let leaked: Vec<_> = relist
        .iter()
        .flat_map(|v| v["violations"].as_array().unwrap())
        .filter(|x| x["oracle"] == "leaked")
        .flat_map(|x| x["leaks"].as_array().unwrap())
        .collect();
    assert!(
        leaked
            .iter()
            .any(|l| l["object"] == "PersistentVolumeClaim llmsafespaces/workspace-ws-b70553ae"),
        "{out}"
    );
}
