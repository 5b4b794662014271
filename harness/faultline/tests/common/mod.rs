//! Shared by the end-to-end tests that drive the built `faultline` binary.
#![allow(dead_code)]

use std::path::Path;
use std::process::Output;

pub const BIN: &str = env!("CARGO_BIN_EXE_faultline");
/// The first lines of every scenario file.
pub const HEAD: &str = "apiVersion: faultline.dev/v1alpha1\nkind: Scenario\n";

/// stdout and stderr, for assertions and their messages.
pub fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// A JSON file (a report).
pub fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}
