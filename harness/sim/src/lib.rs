//! `faultline-sim`: an in-process simulated Kubernetes cluster that serves a real Kubernetes HTTP
//! API on loopback, so kubectl, kube-rs, client-go and the Python client work against it.
//!
//! Layers, bottom up: `apiserver` (`store`: versioned objects and watch history; the verbs with
//! admission, validation, conversion and CRDs; `http`: REST, negotiation, watch streams) ->
//! `controllers` (the kube-controller-manager loops the API semantics rely on) -> `cluster`
//! (scheduler, node lifecycle, storage, kubelets) -> `server` (start-up, bootstrap objects,
//! kubeconfig).

pub mod apiserver;
pub mod cluster;
pub mod controllers;
pub mod events;
pub mod fuzzing;
pub mod internal;
pub mod kubeconfig;
pub mod nodes;
pub mod server;
pub mod timing;
pub mod tls;

pub use apiserver::status::{ApiError, ApiResult};
pub use apiserver::ApiServer;
pub use cluster::{ClusterOptions, SimCluster};
pub use server::{SimOptions, SimServer};
pub use timing::Timing;

// The apiserver's parts at the paths other crates import them from (`faultline_sim::http::faults`,
// `faultline_sim::store::Store`, `faultline_sim::resources::ResourceKey`).
pub use apiserver::{http, resources, store};
