//! Faultline's real-cluster providers.
//!
//! * **kind**: Kubernetes in `kindest/node` containers started through testcontainers, as kind
//!   runs them (privileged, `/usr/local/bin/entrypoint /sbin/init`, tmpfs /run and /tmp,
//!   /lib/modules read-only, a volume at /var/lib/containerd), then kubeadm init/join, CNI,
//!   untaint, image loading, Longhorn; node faults through `docker exec` and the engine.
//! * **existing**: a kubeconfig context on an explicit allow-list; node faults through a
//!   privileged node agent, or refused per fault.
//!
//! Layers: [`input`] (what the runner asks for, in this crate's types), [`plan`] (pure data:
//! container specs, kubeadm YAML, steps of bring-up, faults, heals, teardown), [`exec`]
//! (carrying plans out: [`exec::DryRun`] prints, `exec::docker::TestcontainersExecutor` (feature `docker`)
//! runs), and the providers [`kind`] and [`existing`].
//!
//! The crate does not depend on `faultline` (the runner adapts its types to [`input`]).

pub mod exec;
pub mod existing;
pub mod input;
pub mod journal;
pub mod kind;
pub mod orphans;
pub mod plan;
pub mod shell;
pub mod versions;

pub use input::{ClusterPlanInput, LogSource, NodeInput, NodeLogLine, Role};
pub use kind::{
    dry_run_replay, dry_run_replay_blocking, dry_run_report, dry_run_report_blocking, DryRunEvent,
    DryRunReport, KindCluster, KindOptions, KindProvider,
};
