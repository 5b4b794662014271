//! `ci/import-cycles.py`: its self-test (a tree with known cycles is caught, a clean one passes),
//! then this crate checked with it - no module of `faultline` imports a sibling that imports it
//! back (the runner and the reporters meet only in `report::model` and `report::Progress`).
//! Skipped where there is no `python3`.

use std::path::Path;
use std::process::Command;

mod common;
use common::{repo, text};

fn python() -> Option<&'static str> {
    let ok = Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("skipped: no python3");
    }
    ok.then_some("python3")
}

#[test]
fn the_checker_finds_known_cycles_and_passes_a_clean_tree() {
    let Some(py) = python() else { return };
    let out = Command::new(py)
        .arg(repo().join("ci/import-cycles.py"))
        .arg("--self-test")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("self-test passed"), "{}", text(&out));
}

#[test]
fn faultline_has_no_import_cycle() {
    let Some(py) = python() else { return };
    let out = Command::new(py)
        .arg(repo().join("ci/import-cycles.py"))
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")))
        .current_dir(repo())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(text(&out), "", "no cycle, nothing printed");
}
