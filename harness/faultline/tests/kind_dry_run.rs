//! `faultline run --provider kind --dry-run`: the kind provider's exact container specs and
//! commands for the pack, reviewable on a machine without Docker.

use std::path::Path;
use std::process::Command;

#[test]
fn dry_run_prints_specs_and_fault_commands_for_every_scenario() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = Command::new(env!("CARGO_BIN_EXE_faultline"))
        .args(["run", "scenarios", "--provider", "kind", "--dry-run"])
        .current_dir(&repo)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}{}",
        text,
        String::from_utf8_lossy(&out.stderr)
    );
    for name in [
        "stale-csi-mount",
        "dead-csi-plugin",
        "saturated-kubelet-workers",
        "node-reboot-stuck",
    ] {
        assert!(
            text.contains(&format!("## scenario {name}")),
            "{name} missing"
        );
    }
    assert!(
        text.contains("kindest/node:v1.35.5@sha256:"),
        "pinned node image"
    );
    assert!(
        text.contains("apiVersion: kubeadm.k8s.io/v1beta4"),
        "kubeadm config"
    );
    assert!(
        text.contains("## Fault {\"staleDeviceMount\""),
        "fault commands listed"
    );
    assert!(
        text.contains("docker exec"),
        "node commands run through docker exec"
    );
    // What the runner applies before the first step: the CRDs and the controller's manifests.
    assert!(
        text.contains("# CRDs of the suite")
            && text.contains("#   CustomResourceDefinition workspaces.llmsafespaces.dev"),
        "CRDs listed"
    );
    assert!(
        text.contains("workspace-controller.yaml") && text.contains("#   Deployment "),
        "controller manifests listed"
    );
    // node-reboot-stuck: the stuck reboot is a `docker stop`, ended by the power cycle.
    let stuck = &text[text.find("## scenario node-reboot-stuck").unwrap()..];
    assert!(
        stuck.contains("docker stop --time 30 node-reboot-stuck-worker-02"),
        "stuck reboot shown"
    );
    // On sim there is nothing to review.
    let sim = Command::new(env!("CARGO_BIN_EXE_faultline"))
        .args(["run", "scenarios", "--dry-run"])
        .current_dir(&repo)
        .output()
        .unwrap();
    assert_eq!(sim.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&sim.stderr).contains("--dry-run is for --provider kind"));
}

#[test]
fn dry_run_exits_2_when_an_operation_is_unsupported_on_kind() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("faultline.yaml"),
        "apiVersion: faultline.dev/v1alpha1\nkind: Suite\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("api.yaml"),
        "apiVersion: faultline.dev/v1alpha1
kind: Scenario
metadata: {name: api-errors}
spec:
  cluster:
    nodes: [{name: control-plane, role: control-plane}, {name: worker-01}]
    storage: none
  steps:
    - fault: {apiErrors: {rate: 1.0, code: 503}}
    - sleep: 1s
",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_faultline"))
        .args(["run", "--provider", "kind", "--dry-run"])
        .arg(dir.path())
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(2), "{stdout}{stderr}");
    assert!(
        stdout.contains("# UNSUPPORTED on kind") && stderr.contains("unsupported on kind"),
        "{stdout}{stderr}"
    );
}

#[test]
fn node_image_takes_a_local_tag_without_a_digest() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = Command::new(env!("CARGO_BIN_EXE_faultline"))
        .args([
            "run",
            "scenarios",
            "--provider",
            "kind",
            "--dry-run",
            "--node-image",
            "kindest/node:v1.35.5",
            "--filter",
            "^kubelet-restart$",
        ])
        .current_dir(&repo)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("docker image inspect kindest/node:v1.35.5 >/dev/null || docker pull kindest/node:v1.35.5"), "{text}");
    assert!(!text.contains("@sha256:"), "no digest anywhere: {text}");
}

/// `--node-image` > FAULTLINE_KIND_NODE_IMAGE > the suite's `kindProvider.nodeImage` > the pinned
/// image, seen in the image the dry run would look up.
#[test]
fn the_node_image_comes_from_the_flag_then_the_environment_then_the_suite() {
    let dir = tempfile::tempdir().unwrap();
    let suite = |image: Option<&str>| {
        let key = image
            .map(|i| format!("kindProvider:\n  nodeImage: {i}\n"))
            .unwrap_or_default();
        std::fs::write(
            dir.path().join("faultline.yaml"),
            format!("apiVersion: faultline.dev/v1alpha1\nkind: Suite\n{key}"),
        )
        .unwrap();
    };
    std::fs::write(
        dir.path().join("reboot.yaml"),
        "apiVersion: faultline.dev/v1alpha1\nkind: Scenario\nmetadata: {name: reboot}\nspec:\n  cluster:\n    nodes: [{name: control-plane, role: control-plane}, {name: worker-01}]\n    storage: none\n  steps:\n    - fault: {nodeReboot: {node: worker-01}}\n",
    )
    .unwrap();
    let image = |flag: Option<&str>, env: Option<&str>| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_faultline"));
        c.args(["run", "--provider", "kind", "--dry-run"])
            .arg(dir.path())
            .env_remove("FAULTLINE_KIND_NODE_IMAGE");
        if let Some(f) = flag {
            c.args(["--node-image", f]);
        }
        if let Some(e) = env {
            c.env("FAULTLINE_KIND_NODE_IMAGE", e);
        }
        let out = c.output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(
            out.status.success(),
            "{text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let line = text
            .lines()
            .find(|l| l.starts_with("docker image inspect "))
            .unwrap_or_else(|| panic!("no image lookup: {text}"));
        line.split_whitespace().nth(3).unwrap().to_string()
    };
    suite(None);
    assert!(
        image(None, None).starts_with("kindest/node:v1.35.5@sha256:"),
        "pinned by default"
    );
    suite(Some("faultline-node:from-suite"));
    assert_eq!(image(None, None), "faultline-node:from-suite");
    assert_eq!(
        image(None, Some("faultline-node:from-env")),
        "faultline-node:from-env"
    );
    assert_eq!(
        image(
            Some("faultline-node:from-flag"),
            Some("faultline-node:from-env")
        ),
        "faultline-node:from-flag"
    );
    // An empty variable counts as unset.
    assert_eq!(image(None, Some("")), "faultline-node:from-suite");
}
