//! `faultline-sim`: an in-process simulated Kubernetes cluster that serves a real Kubernetes HTTP
//! API on loopback, so kubectl, kube-rs, client-go and the Python client work against it.
//!
//! Layers, bottom up: `store` (versioned objects, watch history) -> `apiserver` (verbs,
//! admission, conversion, CRDs) -> `http` (REST, negotiation, watch streams) -> `server`
//! (start-up, bootstrap objects, kubeconfig). `controllers` runs the control-plane loops the API
//! semantics rely on (garbage collection, namespaces, CRD cleanup).

pub mod admission;
pub mod apiserver;
pub mod auth;
pub mod builtins;
pub mod cluster;
pub mod controllers;
pub mod crd;
pub mod event_convert;
pub mod event_ttl;
pub mod events;
pub mod fuzzing;
pub mod http;
pub mod internal;
pub mod kubeconfig;
pub mod meta;
pub mod nodes;
pub mod openapi;
pub mod patch;
pub mod protobuf;
pub mod resources;
pub mod scale;
pub mod selectors;
pub mod server;
pub mod service_alloc;
pub mod status;
pub mod store;
pub mod table;
pub mod timing;
pub mod tls;
pub mod validation;

pub use apiserver::ApiServer;
pub use cluster::{ClusterOptions, SimCluster};
pub use server::{SimOptions, SimServer};
pub use status::{ApiError, ApiResult};
pub use timing::Timing;
