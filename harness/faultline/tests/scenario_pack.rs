//! The scenario pack's incident scenario (scenarios/stale-csi-mount.yaml) on the sim provider
//! with the real workspace-controller fixture: it passes with the fixed controller and catches
//! the upstream regressions (FN3b testing "zero statuses", the restartGeneration hot loop).

use rstest::rstest;
use std::path::{Path, PathBuf};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_faultline");

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// The controller binary next to faultline's (ci/test.sh builds every binary first).
fn controller_binary() -> PathBuf {
    let bin = Path::new(BIN).parent().unwrap().join("workspace-controller");
    if !bin.is_file() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let st = Command::new(cargo).args(["build", "-p", "workspace-controller"]).current_dir(repo()).status().unwrap();
        assert!(st.success(), "building workspace-controller");
    }
    assert!(bin.is_file(), "{} missing", bin.display());
    bin
}

#[rstest]
#[case::fixed_controller_recovers(&[], 0, &["expect recovered: PASS", "expect fn3b-fires: PASS"])]
#[case::fn3b_zero_statuses_is_caught(&["--regression=fn3b-zero-statuses"], 1,
    &["expectation `fn3b-fires` failed: budget missed: within 20s after stale-mount: the condition never held"])]
#[case::hot_loop_is_caught(&["--regression=hot-loop"], 1,
    &["invariant `no-hot-loop` failed: violated at", "matching lines within 30s (at most 3 allowed); last: "])]
fn stale_csi_mount(#[case] extra: &[&str], #[case] code: i32, #[case] wanted: &[&str]) {
    let controller = controller_binary();
    let dir = tempfile::tempdir().unwrap();
    let src = repo().join("scenarios");
    std::fs::create_dir_all(dir.path().join("manifests")).unwrap();
    std::fs::copy(src.join("manifests/workspace-demo.yaml"), dir.path().join("manifests/workspace-demo.yaml")).unwrap();
    let suite = std::fs::read_to_string(src.join("faultline.yaml")).unwrap()
        .replace("../target/debug/workspace-controller", &controller.display().to_string())
        .replace("../fixtures/", &format!("{}/fixtures/", repo().display()));
    std::fs::write(dir.path().join("faultline.yaml"), suite).unwrap();
    let mut args = "--infra-backoff-base=1s".to_string();
    for e in extra {
        args += &format!(", {e}");
    }
    let scenario = std::fs::read_to_string(src.join("stale-csi-mount.yaml")).unwrap()
        .replace("--infra-backoff-base=1s", &args)
        .replace("within: 60s", "within: 20s");
    std::fs::write(dir.path().join("stale-csi-mount.yaml"), scenario).unwrap();
    let out = Command::new(BIN).args(["run", "."]).current_dir(dir.path()).output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(code), "{text}");
    for w in wanted {
        assert!(text.contains(w), "missing `{w}` in:\n{text}");
    }
    assert!(text.contains("fault stale-mount healed (cleanup)"), "{text}");
}
