//! `faultline-testing`: Faultline's simulated Kubernetes 1.35 cluster as a test library for
//! Rust controllers. A test starts its own cluster in milliseconds, talks to it through an
//! in-process `kube::Client` (no socket, no TLS), injects node faults of the sim's catalog
//! (stale device mounts, a dead CSI plugin, a hung kubelet, ...), heals them, and waits for
//! conditions over objects, events and node logs with a budget, getting the time taken back.
//!
//! ```no_run
//! # async fn demo() -> Result<(), faultline_testing::Error> {
//! use faultline_testing::{Cluster, NodeOp};
//! use k8s_openapi::api::core::v1::Node;
//! use std::time::Duration;
//!
//! let cluster = Cluster::full().workers(1).time_scale(0.01).seed(7).start().await?;
//! let nodes: kube::Api<Node> = kube::Api::all(cluster.client());
//! let fault = cluster.inject("worker-01", NodeOp::CsiPluginDown)?;
//! let seen = cluster
//!     .wait_for_log("worker-01", faultline_testing::LogSource::Kubelet, Duration::from_secs(2), |l| l.contains("connect: connection refused"))
//!     .await?;
//! println!("after {:?} ({:?} on a real cluster): {}", seen.wall, seen.nominal, seen.value);
//! cluster.heal(&fault)?;
//! # let _ = nodes; Ok(()) }
//! ```
//!
//! See docs/library.md for the whole API, the fixtures and a controller example.

// docs/library.md's Rust blocks run as this crate's doc-tests, so the guide compiles as written.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/library.md")]
pub struct LibraryGuide;

mod cluster;
mod error;
mod faults;
pub mod fixtures;
mod service;
mod wait;

pub use cluster::{Cluster, ClusterBuilder, LogSource, DEFAULT_SEED};
pub use error::{Error, Result};
/// The fault catalogue: the operations `Cluster::inject_operation` takes.
pub use faultline_faults as catalogue;
pub use faults::{inverse, ApiFaultId, Fault, InjectedOperation};
pub use service::InProcess;
pub use wait::Measured;

pub use faultline_sim::cluster::nodeops::{Holder, NodeOp, OtherVolumes};
pub use faultline_sim::http::faults::{ApiFault, ApiFaultKind};
pub use faultline_sim::Timing;
