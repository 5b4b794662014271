//! Shared by the end-to-end tests that drive the built `faultline` binary.
#![allow(dead_code)]

pub mod chromium;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub const BIN: &str = env!("CARGO_BIN_EXE_faultline");
/// The first lines of every scenario file.
pub const HEAD: &str = "apiVersion: faultline.dev/v1alpha1\nkind: Scenario\n";

/// stdout and stderr, for assertions and their messages.
pub fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A JSON file (a report).
pub fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The repository root (the pack's suite names paths relative to it).
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// The workspace-controller fixture binary beside `faultline` (ci/test.sh builds every binary
/// first); built here, with the package's other binary (`node-remediation`), when a developer
/// runs one test alone.
pub fn controller() -> PathBuf {
    let dir = Path::new(BIN).parent().unwrap();
    let bin = dir.join("workspace-controller");
    if !bin.is_file() || !dir.join("node-remediation").is_file() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let st = Command::new(cargo)
            .args(["build", "-p", "workspace-controller"])
            .current_dir(repo())
            .status()
            .unwrap();
        assert!(st.success(), "building workspace-controller");
    }
    bin
}

/// A copy of the pack's layout to run `controller-rbac` (and `workspace-lifecycle`) in: the suite config, that scenario and
/// every file the suite's validation reads (the Go operator is not run; its go.mod and go.sum
/// are read), and `target` linked to this build (the suite names `../target/debug/...`).
/// `rbac` gives the controller's RBAC manifest its content.
pub fn controller_rbac_pack(rbac: impl FnOnce(String) -> String) -> tempfile::TempDir {
    controller();
    let root = tempfile::tempdir().unwrap();
    for dir in [
        "scenarios",
        "fixtures/crds",
        "fixtures/manifests",
        "fixtures/rbac",
        "fixtures/kind",
        "fixtures/go-operator",
    ] {
        std::fs::create_dir_all(root.path().join(dir)).unwrap();
    }
    for f in [
        "scenarios/faultline.yaml",
        "scenarios/controller-rbac.yaml",
        "scenarios/workspace-lifecycle.yaml",
        "fixtures/crds/workspace.yaml",
        "fixtures/crds/store.yaml",
        "fixtures/go-operator/go.mod",
        "fixtures/go-operator/go.sum",
        "fixtures/manifests/workspace-1.yaml",
        "fixtures/kind/workspace-controller.yaml",
    ] {
        std::fs::copy(repo().join(f), root.path().join(f)).unwrap();
    }
    let manifest = "fixtures/rbac/workspace-controller.yaml";
    std::fs::write(
        root.path().join(manifest),
        rbac(std::fs::read_to_string(repo().join(manifest)).unwrap()),
    )
    .unwrap();
    let target = Path::new(BIN).parent().unwrap().parent().unwrap();
    std::os::unix::fs::symlink(target, root.path().join("target")).unwrap();
    root
}
