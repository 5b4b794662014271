//! Docker-engine tier: a harness killed with SIGKILL in the middle of its faults, then
//! `faultline cleanup --provider kind` heals the node and removes the cluster. The harness is
//! this test binary run again (the ignored `hold_faults_until_killed`), so it is the provider's
//! own process that dies. Needs FAULTLINE_DOCKER=1, FAULTLINE_KIND_NODE_IMAGE and FAULTLINE_BIN
//! (the `faultline` binary; ci/docker-tier.sh sets all three).

mod common;

use common::*;
use faultline_faults::{NodeOperation, NodeReboot, NodeTarget};
use faultline_kind::{ClusterPlanInput, KindOptions, KindProvider, NodeInput};
use std::io::BufRead;
use std::path::PathBuf;

const HOLD: &str = "FAULTLINE_DOCKER_HOLD";

fn held_faults() -> Vec<NodeOperation> {
    let w = || NodeTarget {
        node: WORKER.into(),
    };
    vec![
        NodeOperation::KubeletStop(NodeTarget {
            node: CONTROL_PLANE.into(),
        }),
        NodeOperation::KubeletHang(w()),
        NodeOperation::HungNfs(w()),
        // Stuck (hungNfs is active): the worker's container stays stopped.
        NodeOperation::NodeReboot(NodeReboot {
            node: WORKER.into(),
            stuck_until_power_cycle: false,
        }),
    ]
}

/// The harness that gets killed: brings a cluster up, applies the faults, says so, waits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "run by a_harness_killed_mid_fault_is_healed_by_faultline_cleanup"]
async fn hold_faults_until_killed() {
    let Ok(state) = std::env::var(HOLD) else {
        return;
    };
    let p = KindProvider::new(KindOptions {
        reuse: false,
        nodes_only: true,
        state_dir: Some(PathBuf::from(&state)),
    });
    let input = ClusterPlanInput::new(
        "fl-tier-killed",
        vec![
            NodeInput::control_plane(CONTROL_PLANE),
            NodeInput::worker(WORKER),
        ],
    )
    .with_env_from(|k| std::env::var(k).ok());
    let work = tempfile::tempdir().unwrap();
    let c = p.start(&input, work.path()).await.expect("bring-up");
    for op in held_faults() {
        c.apply(&op).await.unwrap();
    }
    println!("HELD {}", c.name());
    loop {
        tokio::time::sleep(std::time::Duration::from_secs(60)).await;
    }
}

#[test]
fn a_harness_killed_mid_fault_is_healed_by_faultline_cleanup() {
    let Some(env) = TierEnv::new("killed") else {
        return;
    };
    let faultline = std::env::var("FAULTLINE_BIN")
        .expect("FAULTLINE_BIN: the faultline binary (cargo build -p faultline)");
    let mut harness = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "hold_faults_until_killed",
            "--nocapture",
        ])
        .env(HOLD, env.state.path())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut cluster = None;
    for line in std::io::BufReader::new(harness.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        if let Some(name) = line.strip_prefix("HELD ") {
            cluster = Some(name.to_string());
            break;
        }
    }
    let cluster = cluster.expect("the harness held its faults");
    assert_eq!(
        docker(&[
            "inspect",
            "-f",
            "{{.State.Running}}",
            &format!("{cluster}-{WORKER}")
        ])
        .trim(),
        "false",
        "stuck reboot held"
    );
    let cp = format!("{cluster}-{CONTROL_PLANE}");
    assert_eq!(
        docker(&[
            "exec",
            &cp,
            "sh",
            "-c",
            "systemctl is-active kubelet || true"
        ])
        .trim(),
        "inactive"
    );

    harness.kill().unwrap(); // SIGKILL: no drop, no teardown, no heal.
    harness.wait().unwrap();
    assert_eq!(
        docker(&["inspect", "-f", "{{.State.Running}}", &cp]).trim(),
        "true",
        "left behind by the killed harness"
    );

    let cleanup = || {
        std::process::Command::new(&faultline)
            .args(["cleanup", "--provider", "kind"])
            .env("FAULTLINE_KIND_STATE_DIR", env.state.path())
            .current_dir(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))
            .output()
            .unwrap()
    };
    let out = cleanup();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{text}");
    for healed in [
        "healed nodeReboot on worker-01",
        "healed hungNfs on worker-01",
        "healed kubeletHang on worker-01",
        "healed kubeletStop on control-plane",
    ] {
        assert!(text.contains(healed), "{healed}:\n{text}");
    }
    // Newest first: the stuck reboot (the node started and booted again) before the kubelet.
    assert!(
        text.find("nodeReboot").unwrap() < text.find("kubeletHang").unwrap(),
        "{text}"
    );
    assert!(
        text.contains("removed its containers, volumes and network"),
        "{text}"
    );
    env.assert_nothing_left(&cluster);

    // A second cleanup finds nothing.
    let again = cleanup();
    assert!(
        String::from_utf8_lossy(&again.stdout).contains("nothing to heal"),
        "{}",
        String::from_utf8_lossy(&again.stdout)
    );
}
