//! What can go wrong, one cause per variant (as kube-runtime's errors are written).

use std::time::Duration;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The builder was given a value the simulated cluster cannot run with.
    #[error("invalid cluster option {option}: {reason}")]
    InvalidOption {
        option: &'static str,
        reason: String,
    },

    /// The simulated cluster did not start (binding its loopback listener, bootstrap objects).
    #[error("starting the simulated cluster failed: {0}")]
    Start(String),

    /// The kubeconfig for subprocesses could not be written.
    #[error("writing the kubeconfig failed: {0}")]
    Kubeconfig(String),

    /// A node operation needs the simulated nodes, but the cluster serves the API only.
    #[error(
        "`{op}` needs simulated nodes, but this cluster was started API-only (use Cluster::full())"
    )]
    NoNodes { op: String },

    /// The named node (or InternalIP) is not part of the cluster.
    #[error("no node {node:?} in this cluster (nodes: {known})")]
    UnknownNode { node: String, known: String },

    /// The node refused the operation (e.g. a kubelet start while the node reboots).
    #[error("`{op}` on {node} failed: {message}")]
    NodeOp {
        node: String,
        op: String,
        message: String,
    },

    /// The sim could not carry out a catalogue operation (`Cluster::inject_operation`): API-only
    /// cluster, an unbound PVC, or the node refused.
    #[error(transparent)]
    Operation(#[from] faultline_sim::cluster::faults::FaultError),

    /// A one-shot operation (a restart, a power cycle, a cleanup) has nothing to undo.
    #[error("`{op}` is a one-shot operation: there is nothing to heal")]
    NotHealable { op: String },

    /// The condition did not hold within its budget.
    #[error("timed out after {budget:?} (nominal {nominal:?}) waiting for {what}")]
    Timeout {
        what: String,
        budget: Duration,
        nominal: Duration,
    },

    /// A request of a wait condition failed.
    #[error("{what}: {source}")]
    Kube {
        what: String,
        #[source]
        source: kube::Error,
    },
}
