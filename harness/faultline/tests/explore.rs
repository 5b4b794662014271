//! `faultline explore` on the fixture controller: from `controller-rbac` (a scenario about its
//! permissions, not about crashes), explore finds the `generated-pod-name` regression (a
//! non-idempotent create that duplicates the pod after a crash) by the end state and the
//! leaked-objects oracle, runs pairs after the singles (a pair holding the crash is shrunk to
//! it), reports it in explore.html (rendered by headless Chromium where there is one), writes a
//! scenario that replays it, and finds nothing on the fixed controller with the same seed and
//! budget.

use std::path::{Path, PathBuf};
use std::process::Command;

mod common;
use common::chromium::{chromium, dump_dom};
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
    // The leaked-objects oracle names the controller's pods beyond the one it left unperturbed.
    let leaked = crash["violations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["oracle"] == "leaked")
        .unwrap_or_else(|| panic!("no leaked violation: {crash}"));
    let leaks = leaked["leaks"].as_array().unwrap();
    assert_eq!(
        leaks.len(),
        2,
        "both pods, which one is surplus cannot be told: {leaked}"
    );
    assert!(
        leaks.iter().all(|l| l["object"]
            .as_str()
            .unwrap()
            .starts_with("Pod llmsafespaces/ws-b70553ae-")
            && l["why"]["reason"] == "notInBaseline"
            && l["why"]["baseline"] == 1),
        "{leaked}"
    );
    // Every single ran, then pairs; a pair holding the crash point fails and is shrunk to it.
    assert_eq!(report["singlesRun"], report["points"], "{out}");
    assert!(out.contains(" single perturbations, "), "{out}");
    assert!(report["pairsRun"].as_u64().unwrap() >= 1, "{out}");
    let crash4 = serde_json::json!({"kind": "crashAfterMutation", "k": 4});
    for v in variants {
        let tried = v.get("shrunkFrom").unwrap_or(&v["perturbations"]);
        let tried = tried.as_array().unwrap();
        if tried.len() == 2 && tried.contains(&crash4) {
            assert_eq!(
                v["perturbations"],
                serde_json::json!([crash4]),
                "shrunk to the crash: {v}"
            );
            assert!(v["shrinkRuns"].as_u64().unwrap() >= 1, "{v}");
            assert!(out.contains("shrunk from "), "{out}");
        }
    }
    assert!(out.contains("FOUND"), "{out}");
    assert!(
        out.contains("controller trace around the perturbation"),
        "{out}"
    );
    assert!(out.contains("<== crash after mutating request"), "{out}");
    // explore.html, as Chromium builds it: the totals, the failure first and open with its
    // oracles, its end-state difference and the perturbed request marked in its trace.
    if let Some(bin) = chromium() {
        let dom = dump_dom(&bin, &dir.join("explore.html"), root.path());
        assert!(
            dom.contains("found</b>") && dom.contains("single perturbations and "),
            "{dom}"
        );
        let first_section = dom
            .find(r#"<section id="variant-"#)
            .expect("variant sections");
        let section = &dom[first_section..];
        let section = &section[..section.find("</section>").unwrap()];
        assert!(
            section.contains(r#"<details class="timeline" open="">"#),
            "{section}"
        );
        assert!(
            section.contains("FOUND") && section.contains("crash after mutating request 4"),
            "{section}"
        );
        assert!(
            section.contains("+ extra</td><td>Pod llmsafespaces/ws-b70553ae-*</td>"),
            "{section}"
        );
        assert!(
            section.contains("leaked: objects the controller created"),
            "{section}"
        );
        assert!(
            section.contains("⇒ perturbed</td><td><code>")
                && section.contains("&lt;== crash after mutating request 4"),
            "{section}"
        );
        assert!(dom.find(r#"<section id="baseline">"#).unwrap() < first_section);
    } else {
        eprintln!("chromium not installed and CI not set: explore.html not rendered");
    }
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
    assert!(
        replayed.contains("replayed the scenario's perturbations"),
        "{replayed}"
    );
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
