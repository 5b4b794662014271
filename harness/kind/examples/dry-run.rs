//! Print what a kind run of the incident's topology would do, with every fault of the catalog:
//! `cargo run -p faultline-kind --example dry-run [-- --no-longhorn]`. Needs no Docker.

use faultline_faults::NodeOperation;
use faultline_kind::{ClusterPlanInput, NodeInput};

fn main() -> anyhow::Result<()> {
    let longhorn = !std::env::args().any(|a| a == "--no-longhorn");
    let input = ClusterPlanInput::new(
        "stale-csi-mount",
        vec![
            NodeInput::control_plane("control-plane"),
            NodeInput::worker("worker-01"),
            NodeInput::worker("worker-04"),
        ],
    )
    .with_longhorn(longhorn)
    .with_images(["workspace-controller:ci"]);
    print!(
        "{}",
        faultline_kind::dry_run_report_blocking(&input, &NodeOperation::examples("worker-04"))?
    );
    Ok(())
}
