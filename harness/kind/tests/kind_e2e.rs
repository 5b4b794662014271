//! One scenario end to end on a real kind cluster: bring-up (2 nodes), kubelet stopped on the
//! worker -> node NotReady -> healed -> Ready, a reboot -> Ready again, logs collected,
//! teardown. Ignored unless built with FAULTLINE_KIND=1; then it also needs a Docker engine
//! (`docker info`), and skips with a printed reason without one. Its node image:
//! FAULTLINE_KIND_NODE_IMAGE, else the newest real node image built here
//! (`ci/node-image/build-real.sh`), else the pinned kindest/node.
//!
//!     FAULTLINE_KIND=1 cargo test -p faultline-kind --test kind_e2e -- --nocapture
//!     FAULTLINE_KIND_LONGHORN=1 ... also installs Longhorn and waits for it to be healthy.
//!     FAULTLINE_KIND_NODE_IMAGE=kindest/node:v1.35.5 ... a locally loaded node image.
//!
//! On failure its work directory (kubeconfig, kind-logs/) is kept and its path printed.

mod common;

use faultline_faults::{NodeOperation, NodeReboot, NodeTarget};
use faultline_kind::exec::docker::TestcontainersExecutor;
use faultline_kind::{ClusterPlanInput, KindCluster, KindOptions, KindProvider, NodeInput};
use futures::FutureExt;
use std::time::{Duration, Instant};

async fn docker_available() -> Result<(), String> {
    let out = tokio::process::Command::new("docker")
        .arg("info")
        .output()
        .await;
    match out {
        Ok(o) if o.status.success() => {}
        Ok(o) => {
            return Err(format!(
                "`docker info` failed: {}",
                String::from_utf8_lossy(&o.stderr).trim()
            ))
        }
        Err(e) => return Err(format!("no docker CLI: {e}")),
    }
    let ex = TestcontainersExecutor::connect().map_err(|e| format!("{e:#}"))?;
    ex.ping().await.map_err(|e| format!("{e:#}"))
}

async fn node_ready(c: &KindCluster, node: &str) -> Option<bool> {
    let out = c
        .kubectl(
            &[
                "get",
                "node",
                node,
                "-o",
                "jsonpath={.status.conditions[?(@.type==\"Ready\")].status}",
            ],
            None,
        )
        .await
        .ok()?;
    out.success().then(|| out.stdout.trim() == "True")
}

async fn wait_ready(c: &KindCluster, node: &str, want: bool, within: Duration) {
    let start = Instant::now();
    loop {
        if node_ready(c, node).await == Some(want) {
            return;
        }
        assert!(
            start.elapsed() < within,
            "{node} not Ready={want} within {within:?}"
        );
        tokio::time::sleep(Duration::from_secs(3)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(faultline_kind_e2e),
    ignore = "set FAULTLINE_KIND=1 (and have a Docker engine) to run the kind end-to-end test"
)]
async fn kubelet_stop_and_reboot_on_a_real_kind_cluster() {
    if let Err(why) = docker_available().await {
        println!("SKIPPED kind end-to-end test: {why}");
        return;
    }
    let longhorn = std::env::var("FAULTLINE_KIND_LONGHORN").as_deref() == Ok("1");
    let input = ClusterPlanInput::new(
        "fl-e2e",
        vec![
            NodeInput::control_plane("control-plane"),
            NodeInput::worker("worker-01"),
        ],
    )
    .with_longhorn(longhorn)
    .with_env_from(|k| std::env::var(k).ok());
    // None named: the real node image built here (ci/node-image/build-real.sh), if any.
    let input = match std::env::var("FAULTLINE_KIND_NODE_IMAGE") {
        Ok(i) if !i.is_empty() => input,
        _ => {
            let real = faultline_kind::exec::local_real_node_image().await;
            input.with_node_image(real.as_deref())
        }
    };
    println!("kind end-to-end test: node image {}", input.node_image);
    let provider = KindProvider::new(KindOptions {
        reuse: false,
        ..Default::default()
    });
    let work = common::EvidenceDir::new("kind-e2e");
    let cluster = provider
        .start(&input, work.path())
        .await
        .unwrap_or_else(|e| panic!("kind cluster comes up: {e:#}"));
    let logs = work.path().join("logs");
    let checks = async {
        assert!(std::fs::read_to_string(cluster.kubeconfig())
            .unwrap()
            .contains("server: https://"));
        wait_ready(&cluster, "worker-01", true, Duration::from_secs(300)).await;

        let worker = || NodeTarget {
            node: "worker-01".into(),
        };
        cluster
            .apply(&NodeOperation::KubeletStop(worker()))
            .await
            .unwrap();
        wait_ready(&cluster, "worker-01", false, Duration::from_secs(180)).await;
        cluster
            .heal(&NodeOperation::KubeletStop(worker()))
            .await
            .unwrap();
        wait_ready(&cluster, "worker-01", true, Duration::from_secs(180)).await;

        cluster
            .apply(&NodeOperation::NodeReboot(NodeReboot {
                node: "worker-01".into(),
                stuck_until_power_cycle: false,
            }))
            .await
            .unwrap();
        wait_ready(&cluster, "worker-01", true, Duration::from_secs(300)).await;

        cluster.collect_logs(&logs).await.unwrap();
        let kubelet = std::fs::read_to_string(logs.join("worker-01/kubelet.log")).unwrap();
        assert!(!kubelet.trim().is_empty(), "kubelet journal collected");
    };
    if let Err(panic) = std::panic::AssertUnwindSafe(checks).catch_unwind().await {
        // The evidence, into the work directory that the failure keeps.
        let _ = cluster.collect_logs(&logs).await;
        eprintln!("node and cluster logs collected into {}", logs.display());
        std::panic::resume_unwind(panic);
    }

    let name = cluster.name().to_string();
    cluster.release(false).await.unwrap();
    let ps = std::process::Command::new("docker")
        .args([
            "ps",
            "-aq",
            "--filter",
            &format!("label=dev.faultline.cluster={name}"),
        ])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&ps.stdout).trim().is_empty(),
        "containers removed"
    );
}
