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
    assert!(out.status.success(), "{}{}", text, String::from_utf8_lossy(&out.stderr));
    for name in ["stale-csi-mount", "dead-csi-plugin", "saturated-kubelet-workers", "node-reboot-stuck"] {
        assert!(text.contains(&format!("## scenario {name}")), "{name} missing");
    }
    assert!(text.contains("kindest/node:v1.35.5@sha256:"), "pinned node image");
    assert!(text.contains("apiVersion: kubeadm.k8s.io/v1beta4"), "kubeadm config");
    assert!(text.contains("## Fault {\"staleDeviceMount\""), "fault commands listed");
    assert!(text.contains("docker exec"), "node commands run through docker exec");
    // On sim there is nothing to review.
    let sim = Command::new(env!("CARGO_BIN_EXE_faultline")).args(["run", "scenarios", "--dry-run"]).current_dir(&repo).output().unwrap();
    assert_eq!(sim.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&sim.stderr).contains("--dry-run is for --provider kind"));
}
