//! The operation executor (pkg/volume/util/operationexecutor/operation_executor.go) over
//! nestedpendingoperations (`volumes::PendingOperations`): an operation starts only when no
//! operation runs on a matching key and the same operation on it is not backing off; it ends
//! once, and its end goes back to its entry (a success deletes it, a failure doubles its
//! backoff: 500 ms to 2m2s, pkg/util/goroutinemap/exponentialbackoff). Operations complete within
//! the reconciler's pass, except a CSI call that hangs: its operation stays in flight until the
//! call's deadline.

use super::super::log::KubeletLog;
use super::super::state::NodeFaults;
use super::super::volumes::{HungCall, Op, OperationKey, PendingOperations, CSI_SOCKET, DRIVER};
use crate::events::{EventKind, EventRecorder};
use crate::internal::Internal;
use crate::timing::SimInstant;
use crate::timing::Timing;
use serde_json::Value;
use std::fmt;

/// What operations need from outside the volume manager.
pub struct OperationContext<'a> {
    pub node_name: &'a str,
    pub client: &'a Internal,
    pub recorder: &'a EventRecorder,
    pub log: &'a KubeletLog,
    pub timing: &'a Timing,
    pub driver: CsiDriver,
    pub faults: &'a NodeFaults,
}

/// The CSI driver as the kubelet's CSI volume plugin finds it when it calls the node plugin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CsiDriver {
    /// The plugin watcher registered it (node-driver-registrar's socket exists).
    pub registered: bool,
    /// The plugin process answers on its socket.
    pub serving: bool,
}

/// Why a call to the node plugin fails.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CsiCallError {
    /// The driver is not registered; the text names the call site (`<what> failed to ...`).
    NotRegistered(&'static str),
    /// The kubelet cannot dial the plugin's socket.
    Unavailable,
}

impl fmt::Display for CsiCallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CsiCallError::NotRegistered(call) => write!(
                f,
                "kubernetes.io/csi: {}: driver name {} not found in the list of registered CSI drivers",
                call, DRIVER
            ),
            CsiCallError::Unavailable => write!(
                f,
                "rpc error: code = Unavailable desc = connection error: desc = \"transport: Error while dialing: dial unix {}: connect: connection refused\"",
                CSI_SOCKET
            ),
        }
    }
}

impl CsiDriver {
    /// What a node call fails with right now, if anything (`call` names the call site in the
    /// not-registered text).
    pub fn call_error(&self, call: &'static str) -> Option<CsiCallError> {
        if !self.registered {
            Some(CsiCallError::NotRegistered(call))
        } else if !self.serving {
            Some(CsiCallError::Unavailable)
        } else {
            None
        }
    }
}

#[derive(Debug)]
pub struct OperationExecutor {
    pending: PendingOperations,
}

/// A started operation. It ends exactly once: it succeeds, fails, or its call hangs.
#[must_use]
pub struct Operation<'e> {
    pending: &'e mut PendingOperations,
    key: OperationKey,
    op: Op,
    now: SimInstant,
}

impl OperationExecutor {
    pub fn new(timing: Timing) -> Self {
        OperationExecutor {
            pending: PendingOperations::new(timing),
        }
    }

    /// Start `op` on `key`, unless nestedpendingoperations holds it back (then nothing is
    /// logged: upstream's reconciler drops the `AlreadyExists` and backoff errors silently).
    pub fn start(&mut self, key: OperationKey, op: Op, now: SimInstant) -> Option<Operation<'_>> {
        if !self.pending.may_run(&key, op, now) {
            return None;
        }
        Some(Operation {
            pending: &mut self.pending,
            key,
            op,
            now,
        })
    }

    /// Operations whose hanging call has returned by `now`, with the error it ended with.
    pub fn returned(&mut self, now: SimInstant) -> Vec<(OperationKey, Op, HungCall)> {
        self.pending.returned(now)
    }

    /// The in-flight operation whose call returned (from `returned`), to end it.
    pub fn resume(&mut self, key: OperationKey, op: Op, now: SimInstant) -> Operation<'_> {
        Operation {
            pending: &mut self.pending,
            key,
            op,
            now,
        }
    }

    /// A kubelet that starts again has an empty executor: no operation in flight, no backoff.
    pub fn clear(&mut self) {
        self.pending.clear();
    }
}

impl Operation<'_> {
    pub fn key(&self) -> &OperationKey {
        &self.key
    }

    /// Success deletes the entry it ran under, with whatever backoff it had.
    pub fn succeeded(self) {
        self.pending.succeeded(&self.key);
    }

    /// Failure: the nestedpendingoperations line (its header and its "No retries permitted
    /// until" read the same clock) and, for mount operations, the pod's FailedMount event
    /// (unmount operations record none upstream).
    pub fn failed(
        self,
        ctx: &OperationContext<'_>,
        detailed: &str,
        event: Option<(&Value, String)>,
    ) {
        let at = ctx.timing.now();
        let line = self.pending.failed_at(
            &self.key,
            self.op,
            self.now,
            (at, ctx.log.process_start()),
            detailed,
        );
        ctx.log
            .log_at(at, 'E', "nestedpendingoperations.go:348", &line);
        if let Some((pod, msg)) = event {
            ctx.recorder
                .record(pod, EventKind::Warning, "FailedMount", &msg);
        }
    }

    /// The call does not return before `until`, when it ends as `failure` says.
    pub fn hangs(self, until: SimInstant, failure: HungCall) {
        self.pending
            .start_hanging(&self.key, self.op, until, failure);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn call_errors_are_the_csi_plugins() {
        let down = CsiDriver {
            registered: true,
            serving: false,
        };
        assert_eq!(down.call_error("x"), Some(CsiCallError::Unavailable));
        assert!(down
            .call_error("x")
            .unwrap()
            .to_string()
            .ends_with("dial unix /var/lib/kubelet/plugins/driver.longhorn.io/csi.sock: connect: connection refused\""));
        let gone = CsiDriver {
            registered: false,
            serving: true,
        };
        assert_eq!(
            gone.call_error("attacher.MountDevice failed to create newCsiDriverClient").unwrap().to_string(),
            "kubernetes.io/csi: attacher.MountDevice failed to create newCsiDriverClient: driver name driver.longhorn.io not found in the list of registered CSI drivers"
        );
        let fine = CsiDriver {
            registered: true,
            serving: true,
        };
        assert_eq!(fine.call_error("x"), None);
    }

    #[test]
    fn an_operation_held_back_does_not_start() {
        let mut ex = OperationExecutor::new(Timing::scaled(0.001));
        let key = OperationKey::device("v");
        let now = SimInstant::START;
        let op = ex.start(key.clone(), Op::MountVolume, now).expect("free");
        op.hangs(
            now + std::time::Duration::from_secs(60),
            HungCall::Unmount {
                detailed: "deadline".into(),
            },
        );
        assert!(ex.start(key.clone(), Op::MountVolume, now).is_none());
        assert!(ex
            .start(OperationKey::pod("v", "u"), Op::UnmountVolume, now)
            .is_none());
        assert!(ex
            .start(OperationKey::device("w"), Op::MountVolume, now)
            .is_some());
        ex.clear();
        assert!(ex.start(key, Op::MountVolume, now).is_some());
    }
}
