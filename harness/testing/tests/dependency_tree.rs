//! A project that adds faultline-testing as a dev-dependency gets the sim and kube, not the
//! runner or the container tooling: `cargo tree` of this crate has none of them.

use std::process::Command;

const FORBIDDEN: [&str; 4] = ["testcontainers", "bollard", "faultline ", "faultline-kind"];

#[test]
fn no_runner_or_container_crates_in_the_tree() {
    let out = Command::new(env!("CARGO"))
        .args([
            "tree",
            "--offline",
            "--prefix",
            "none",
            "--edges",
            "normal,build",
            "--package",
            "faultline-testing",
            "--manifest-path",
        ])
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml"))
        .output()
        .expect("running cargo tree");
    assert!(
        out.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tree = String::from_utf8(out.stdout).unwrap();
    // The tree is real: it has the sim and kube.
    assert!(
        tree.lines().any(|l| l.starts_with("faultline-sim ")),
        "{tree}"
    );
    assert!(
        tree.lines().any(|l| l.starts_with("kube-client ")),
        "{tree}"
    );
    for name in FORBIDDEN {
        let hits: Vec<&str> = tree.lines().filter(|l| l.starts_with(name)).collect();
        assert!(
            hits.is_empty(),
            "{name} is in faultline-testing's dependency tree: {hits:?}"
        );
    }
}
