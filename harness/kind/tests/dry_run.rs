//! `faultline run --provider kind --dry-run` through the public API: the report must show the
//! exact container specs and commands, for every fault of the catalog, without Docker.

use faultline_kind::{dry_run_report, dry_run_report_blocking, ClusterPlanInput, FaultOp, NodeInput};

fn input(longhorn: bool) -> ClusterPlanInput {
    ClusterPlanInput::new("stale-csi-mount", vec![NodeInput::control_plane("control-plane"), NodeInput::worker("worker-01"), NodeInput::worker("worker-04")])
        .with_longhorn(longhorn)
        .with_images(["workspace-controller:ci"])
}

#[tokio::test]
async fn the_report_shows_pinned_images_container_specs_kubeadm_and_every_fault() {
    let r = dry_run_report(&input(true), &FaultOp::examples("worker-04")).await.unwrap();
    for want in [
        "kindest/node:v1.35.5@sha256:ce977ae6d65918d0b58a5f8b5e940429c2ce42fa3a5619ec2bbc60b949c0ac95",
        "--privileged",
        "--entrypoint /usr/local/bin/entrypoint",
        "--tmpfs /run",
        "--volume /lib/modules:/lib/modules:ro",
        "kind: InitConfiguration",
        "kind: JoinConfiguration",
        "kubeadm init --config=/kind/kubeadm.conf",
        "ctr --namespace=k8s.io images import",
        "test -d /sys/module/iscsi_tcp",
        "longhorn/v1.9.1/deploy/longhorn.yaml",
        "cat /etc/kubernetes/admin.conf >",
        "docker rm --force --volumes stale-csi-mount-worker-04",
    ] {
        assert!(r.contains(want), "dry run lacks {want:?}");
    }
    for key in FaultOp::KEYS {
        assert!(r.contains(&format!("## Fault {{\"{key}\"")), "no section for {key}");
    }
    assert_eq!(r.matches("# UNSUPPORTED on kind").count(), 2, "only apiErrors and apiLatency");
    assert!(!r.contains("{{pv}}"), "deletedPV needs no lookup");
}

#[test]
fn the_report_is_reproducible_and_callable_from_sync_code() {
    let a = dry_run_report_blocking(&input(false), &[]).unwrap();
    let b = dry_run_report_blocking(&input(false), &[]).unwrap();
    assert_eq!(a, b);
    assert!(a.contains("default-storage.yaml") && !a.contains("longhorn.yaml"));
}

#[test]
fn an_invalid_topology_is_an_error_not_a_report() {
    let bad = ClusterPlanInput::new("x", vec![NodeInput::worker("w")]);
    let e = dry_run_report_blocking(&bad, &[]).unwrap_err();
    assert!(format!("{e:#}").contains("exactly one control-plane"), "{e:#}");
}
