//! The node side (kubelet-side components): the kubelet with its pod workers, PLEG and status
//! manager, the container runtime under it, the volume manager, the node's own state outside
//! the API, and the node primitives (faults and remediations).

pub mod kubelet;
pub mod kubelet_node_status;
pub mod kubelet_pods;
pub mod kuberuntime_manager;
pub mod log;
pub mod nodeops;
pub mod pleg;
pub mod pluginmanager;
pub mod pod_workers;
pub mod runtime;
pub mod state;
pub mod status_manager;
pub mod volumemanager;
pub mod volumes;
