//! Shared by the end-to-end tests that drive the built `faultline` binary.
#![allow(dead_code)]

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
