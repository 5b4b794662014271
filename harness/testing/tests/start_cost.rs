//! Cost of a cluster per test: start to first answered request, in process.
//!
//! The bound of issue #17 is a 20 ms median. In this workspace's test builds the sim itself is
//! unoptimized (a workspace member; only dependencies get opt-level 1) and CI machines are
//! shared (2 cores here, with other builds running), so a debug build asserts 3x the bound
//! (60 ms) and a release build the bound itself. The median of 31 runs, after one warm-up
//! start, absorbs single slow starts; the test prints it for docs/library.md.

use faultline_testing::Cluster;
use k8s_openapi::api::core::v1::Namespace;
use std::time::{Duration, Instant};

const RUNS: usize = 31;

async fn start_to_first_request(full: bool) -> Duration {
    let t = Instant::now();
    let c = if full {
        Cluster::full().workers(1).time_scale(0.01)
    } else {
        Cluster::api_only()
    }
    .start()
    .await
    .expect("start");
    let ns: kube::Api<Namespace> = kube::Api::all(c.client());
    let got = ns.get("default").await.expect("first request");
    let took = t.elapsed();
    assert_eq!(got.metadata.name.as_deref(), Some("default"));
    took
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_start_to_first_request_median() {
    // One start outside the sample: lazy statics (the bootstrap RBAC objects, TLS provider).
    start_to_first_request(false).await;
    let mut api = vec![];
    for _ in 0..RUNS {
        api.push(start_to_first_request(false).await);
    }
    let mut full = vec![];
    for _ in 0..RUNS / 3 {
        full.push(start_to_first_request(true).await);
    }
    let (api, full) = (median(api), median(full));
    println!("start to first request, median: API-only {api:?} ({RUNS} runs), full with 1 worker and Longhorn {full:?} ({} runs)", RUNS / 3);
    let bound = Duration::from_millis(if cfg!(debug_assertions) { 60 } else { 20 });
    assert!(api < bound, "API-only median {api:?} over {bound:?}");
    // A full cluster also installs Longhorn and starts kubelets: bounded, not held to 20 ms.
    assert!(
        full < bound * 10,
        "full median {full:?} over {:?}",
        bound * 10
    );
}
