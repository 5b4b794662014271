//! The fault catalogue: every operation a scenario can inject or perform (faults and
//! remediations), its parameters, its inverse, whether it is one-shot or held, and which
//! providers implement it. The scenario language, the kind and existing providers, the runner
//! and the test library all use these types, so a new fault is one entry here plus each
//! provider's implementation (or declared refusal), which its conformance test checks.
//!
//! No kube, no tokio: what reads user input and what drives clusters both build on it.

pub mod duration;
pub mod facts;
pub mod ops;

pub use duration::Dur;
pub use facts::{Area, Inverse, Lifetime, Phase, Provider, Support};
pub use ops::{
    ApiErrors, ApiLatency, ControllerCrash, CsiDriverUnregistered, DeletePod, Drain,
    KubeletWorkersSaturated, MountHolder, NodeOperation, NodeReboot, NodeTarget, Operation,
    OtherVolumes, OutOfServiceTaint, RunnerOperation, StaleDeviceMount, TaintEffect, VolumeRef,
    LONGHORN_CSI_DRIVER, OPERATION_KEYS, OUT_OF_SERVICE_TAINT,
};
