//! `faultline run --provider kind --dry-run` through the public API: the report must show the
//! exact container specs and commands, for every fault of the catalog, without Docker.

use faultline_faults::NodeOperation;
use faultline_kind::{dry_run_report, dry_run_report_blocking, ClusterPlanInput, NodeInput};

fn input(longhorn: bool) -> ClusterPlanInput {
    ClusterPlanInput::new(
        "stale-csi-mount",
        vec![
            NodeInput::control_plane("control-plane"),
            NodeInput::worker("worker-01"),
            NodeInput::worker("worker-04"),
        ],
    )
    .with_longhorn(longhorn)
    .with_images(["workspace-controller:ci"])
}

#[tokio::test]
async fn the_report_shows_pinned_images_container_specs_kubeadm_and_every_fault() {
    let r = dry_run_report(&input(true), &NodeOperation::examples("worker-04"))
        .await
        .unwrap();
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
    for key in NodeOperation::KEYS {
        assert!(
            r.contains(&format!("## Fault {{\"{key}\"")),
            "no section for {key}"
        );
    }
    assert_eq!(
        r.matches("# UNSUPPORTED on kind").count(),
        2,
        "only apiErrors and apiLatency"
    );
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
    assert!(
        format!("{e:#}").contains("exactly one control-plane"),
        "{e:#}"
    );
}

#[tokio::test]
async fn faults_are_replayed_in_order_with_their_overlaps() {
    use faultline_faults::{NodeReboot, NodeTarget};
    use faultline_kind::{dry_run_replay, DryRunEvent};
    let w = || NodeTarget {
        node: "worker-04".into(),
    };
    let reboot = NodeOperation::NodeReboot(NodeReboot {
        node: "worker-04".into(),
        stuck_until_power_cycle: false,
    });
    let events = vec![
        DryRunEvent::Apply(NodeOperation::HungNfs(w())),
        DryRunEvent::Apply(reboot.clone()),
        DryRunEvent::Apply(NodeOperation::NodePowerCycle(w())),
        DryRunEvent::Apply(NodeOperation::KubeletStop(w())),
        DryRunEvent::Heal {
            op: NodeOperation::KubeletStop(w()),
            when: "atStep recovered".into(),
        },
        DryRunEvent::Apply(NodeOperation::ApiErrors(faultline_faults::ApiErrors {
            rate: 1.0,
            code: 500,
            verbs: vec![],
            resources: vec![],
        })),
    ];
    let dir = tempfile::tempdir().unwrap();
    let r = dry_run_replay(
        &input(true),
        &events,
        "# CRDs\nkubectl apply -f crds.yaml\n",
        dir.path(),
    )
    .await
    .unwrap();
    let section = |head: &str| {
        let start = r
            .text
            .find(head)
            .unwrap_or_else(|| panic!("no {head}:\n{}", r.text));
        let rest = &r.text[start + head.len()..];
        rest[..rest.find("\n## ").unwrap_or(rest.len())].to_string()
    };
    // The reboot comes while hungNfs is active: the stuck `docker stop`, no restart.
    let rb = section("## Fault {\"nodeReboot\"");
    assert!(
        rb.contains("# still active: hungNfs")
            && rb.contains("docker stop --time 30 stale-csi-mount-worker-04"),
        "{rb}"
    );
    assert!(!rb.contains("docker restart"), "{rb}");
    // The power cycle ends it, then clears hungNfs on the running node.
    let pc = section("## Fault {\"nodePowerCycle\"");
    let (kill, start, nfs) = (
        pc.find("docker kill").unwrap(),
        pc.find("docker start").unwrap(),
        pc.find("iptables -D OUTPUT").unwrap(),
    );
    assert!(kill < start && start < nfs, "{pc}");
    assert!(section("## Heal {\"kubeletStop\"").contains("systemctl start kubelet"));
    assert!(r
        .text
        .contains("## Before the first step\n# CRDs\nkubectl apply -f crds.yaml"));
    assert_eq!(r.unsupported.len(), 1, "{:?}", r.unsupported);
    assert!(r.unsupported[0].contains("apiErrors"));
    assert!(
        !r.text.contains("## End of the scenario"),
        "everything was healed on the way"
    );
}
