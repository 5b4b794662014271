//! `controllers.<name>.serviceAccount`: the controller under test runs with its ServiceAccount's
//! token, so the scenario pack's `controller-rbac` passes with the fixture's ClusterRole and
//! fails (exit 1) for a release whose ClusterRole misses a permission the controller uses.

use std::path::Path;
use std::process::Command;

mod common;
use common::{controller, repo, BIN};

/// A copy of the pack's layout (scenarios/, fixtures/, target -> the build) in which `edit`
/// may change the RBAC manifest; runs `controller-rbac` and returns (exit code, output).
fn run_controller_rbac(edit: impl Fn(String) -> String) -> (i32, String) {
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
    // Every manifest the suite references must exist: validate reads them before the run.
    for f in [
        "scenarios/faultline.yaml",
        "scenarios/controller-rbac.yaml",
        "fixtures/crds/workspace.yaml",
        "fixtures/crds/store.yaml",
        // The Go operator is not run here; validation reads its module's go.mod and go.sum.
        "fixtures/go-operator/go.mod",
        "fixtures/go-operator/go.sum",
        "fixtures/manifests/workspace-1.yaml",
        "fixtures/kind/workspace-controller.yaml",
    ] {
        std::fs::copy(repo().join(f), root.path().join(f)).unwrap();
    }
    let rbac = "fixtures/rbac/workspace-controller.yaml";
    std::fs::write(
        root.path().join(rbac),
        edit(std::fs::read_to_string(repo().join(rbac)).unwrap()),
    )
    .unwrap();
    // The suite names the controller binary relative to the repository: `../target/debug/...`.
    let target = Path::new(BIN).parent().unwrap().parent().unwrap();
    std::os::unix::fs::symlink(target, root.path().join("target")).unwrap();
    let out = Command::new(BIN)
        .args([
            "run",
            "scenarios",
            "--filter",
            "^controller-rbac$",
            "--seed",
            "7",
        ])
        .current_dir(root.path())
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

#[test]
fn the_fixture_cluster_role_is_enough() {
    let (code, text) = run_controller_rbac(|m| m);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("PASS  controller-rbac"), "{text}");
}

#[test]
fn a_cluster_role_missing_a_permission_fails_the_scenario() {
    // The release forgot that the controller creates PersistentVolumeClaims.
    let (code, text) = run_controller_rbac(|m| {
        let cut = m.replace(
            r#"resources: ["pods", "persistentvolumeclaims"]"#,
            r#"resources: ["pods"]"#,
        );
        assert_ne!(
            cut, m,
            "the fixture's rule for pods and PVCs changed; update this test"
        );
        cut
    });
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("FAIL controller-rbac"), "{text}");
    assert!(
        text.contains("invariant `never-forbidden` failed"),
        "{text}"
    );
    // The controller's log carries the apiserver's 403 for the missing permission.
    assert!(text.contains(r#"User "system:serviceaccount:workspace-controller:workspace-controller" cannot get resource "persistentvolumeclaims" in API group "" in the namespace "llmsafespaces""#), "{text}");
}
