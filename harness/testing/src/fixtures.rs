//! rstest fixtures: a fresh cluster per test. Tests of one binary run in parallel, each on its
//! own cluster and its own runtime; nothing is shared between them.
//!
//! ```ignore
//! use faultline_testing::fixtures::*;
//! use rstest::rstest;
//!
//! #[rstest]
//! #[tokio::test]
//! async fn lists_nodes(#[future(awt)] api_cluster: Cluster) { /* ... */ }
//!
//! // Another seed, time scale or worker count: `#[with(...)]` sets the fixture's arguments.
//! #[rstest]
//! #[tokio::test]
//! async fn on_a_fast_clock(#[future(awt)] #[with(7, 0.01)] full_cluster: Cluster) { /* ... */ }
//! ```

use crate::cluster::DEFAULT_SEED;
pub use crate::Cluster;
use rstest::fixture;

/// The API alone with 2 static worker nodes, seeded with `seed`.
#[fixture]
pub async fn api_cluster(#[default(DEFAULT_SEED)] seed: u64) -> Cluster {
    Cluster::api_only()
        .seed(seed)
        .start()
        .await
        .unwrap_or_else(|e| panic!("api_cluster fixture: {e}"))
}

/// A full cluster (control plane, 2 workers, kubelets, Longhorn) at `time_scale` of real time
/// (0.01 by default: a 2m2s backoff takes 1.22 s), seeded with `seed`.
#[fixture]
pub async fn full_cluster(
    #[default(DEFAULT_SEED)] seed: u64,
    #[default(0.01)] time_scale: f64,
) -> Cluster {
    Cluster::full()
        .seed(seed)
        .time_scale(time_scale)
        .start()
        .await
        .unwrap_or_else(|e| panic!("full_cluster fixture: {e}"))
}
