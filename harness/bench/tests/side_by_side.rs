//! `scale --against real` at a CI-friendly size (docs/performance.md, "Side by side with the
//! real control plane"): the sim in mode `full` and the real control plane (etcd +
//! kube-apiserver + kube-scheduler, kwok) each get every pod Running, created by the same client,
//! and the report has both sides' figures and the ratios.
//!
//! The real binaries come from `FAULTLINE_UPSTREAM_BIN` or `ci/upstream.sh` (a cold cache builds
//! them first, kwok included). No Go or a refused module: `SKIPPED: ...` and a pass, unless
//! `FAULTLINE_UPSTREAM_REQUIRE=1`; `FAULTLINE_UPSTREAM=off` skips too.

use faultline_bench::real::{self, Binaries, RealConfig, Sides};
use std::time::Duration;

fn row(report: &faultline_bench::report::Report, metric: &str) -> f64 {
    report
        .rows
        .iter()
        .find(|r| r.metric == metric)
        .unwrap_or_else(|| panic!("no row {metric:?} in {:#?}", report.rows))
        .value
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_sides_get_every_pod_running_with_the_same_client() {
    let bin = match real::locate_binaries(None)
        .await
        .expect("locating the binaries")
    {
        Binaries::Found(dir) => dir,
        Binaries::Skip(reason) => {
            assert!(
                std::env::var("FAULTLINE_UPSTREAM_REQUIRE").as_deref() != Ok("1"),
                "FAULTLINE_UPSTREAM_REQUIRE=1 but the real side cannot run: {reason}"
            );
            println!("SKIPPED: {reason}");
            return;
        }
    };
    let cfg = RealConfig {
        nodes: 20,
        pods: 500,
        namespaces: 4,
        connections: 8,
        settle_timeout: Duration::from_secs(240),
        sides: Sides::Both,
        bin_dir: Some(bin),
        ..RealConfig::default()
    };
    let report = real::run(&cfg).await.expect("the side-by-side run");
    println!("{}", report.verdict);
    assert!(report.pass, "verdict: {}", report.verdict);
    for side in ["sim", "real"] {
        assert_eq!(
            row(&report, &format!("{side}: pods Running")),
            cfg.pods as f64,
            "{side}"
        );
        let t = row(&report, &format!("{side}: first create -> all Running"));
        assert!(t.is_finite() && t > 0.0, "{side}: {t}");
    }
    assert!(row(&report, "real: kwok VmHWM") > 0.0);
    assert!(row(&report, "real: kube-apiserver VmHWM") > 0.0);
    let ratio = row(&report, "time to all Running, real / sim");
    assert!(ratio.is_finite() && ratio > 0.0, "{ratio}");
}

#[test]
fn kwok_nodes_are_valid_for_any_index_and_annotated_for_kwok() {
    let n = real::kwok_node(1000);
    assert_eq!(n["metadata"]["name"], "worker-1000");
    assert_eq!(n["metadata"]["annotations"][real::KWOK_ANNOTATION], "fake");
    assert_eq!(n["spec"]["podCIDR"], "10.67.232.0/24");
    assert_eq!(n["status"]["addresses"][0]["address"], "172.18.3.234");
    assert!(n["status"].get("conditions").is_none());
    assert!(n["status"]["nodeInfo"].get("machineID").is_none());
    assert_eq!(n["status"]["allocatable"]["pods"], "110");
}
