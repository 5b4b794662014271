//! The kuberuntime manager (pkg/kubelet/kuberuntime/kuberuntime_manager.go) over the node's
//! container runtime (`runtime`): one `sync_pod` starts what the pod's spec wants and the runtime
//! does not run (init containers one at a time, in order; then the main containers), restarts
//! exited containers by the pod's restart policy with CrashLoopBackOff, and reports readiness;
//! `kill_pod` stops the pod's containers. How containers behave is scripted by the pod's
//! annotations (`runtime::script`).

use super::runtime::{lines, script, step_container, Container, ContainerState, Step};
use crate::apiserver::meta;
use crate::events::{EventKind, EventRecorder};
use crate::timing::{self, go_duration, Timing};
use crate::timing::{SimClock, SimInstant};
use serde_json::Value;
use std::collections::HashSet;
use std::time::Duration;

/// A pod's containers as the runtime has them.
#[derive(Debug, Clone, Default)]
pub struct PodContainers {
    pub(super) init: Vec<Container>,
    pub(super) main: Vec<Container>,
    /// The cluster's clock: container start and finish times.
    clock: SimClock,
}

/// The node's faults the runtime and the prober see.
#[derive(Debug, Clone, Copy)]
pub struct RuntimeFaults {
    pub csi_plugin_down: bool,
    pub prober_broken: bool,
}

/// What a `sync_pod` found.
#[derive(Debug, Clone, Copy)]
pub struct SyncResult {
    /// A container's state or readiness changed (the pod's status must be regenerated).
    pub changed: bool,
    /// The pod's script has a timed exit (`crash-after`, `exit-after`): it is never settled.
    pub scripted_exit: bool,
}

fn annotation<'a>(pod: &'a Value, key: &str) -> Option<&'a str> {
    pod.pointer("/metadata/annotations")
        .and_then(|a| a.get(key))
        .and_then(Value::as_str)
}

impl PodContainers {
    /// The spec's containers, none created yet.
    pub fn from_spec(pod: &Value, timing: &Timing) -> Self {
        let ctrs = |field: &str| -> Vec<Container> {
            pod.pointer(&format!("/spec/{}", field))
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .map(|c| Container {
                            name: c.get("name").and_then(Value::as_str).unwrap_or("").into(),
                            image: c.get("image").and_then(Value::as_str).unwrap_or("").into(),
                            state: ContainerState::Waiting(String::new(), None),
                            last: None,
                            ready: false,
                            started_once: false,
                            restarts: 0,
                            next: None,
                            step: Step::Idle,
                            crash_backoff: timing.crash_backoff_initial,
                            logs: vec![],
                            prev_logs: vec![],
                            container_id: String::new(),
                        })
                        .collect()
                })
                .unwrap_or_default()
        };
        PodContainers {
            init: ctrs("initContainers"),
            main: ctrs("containers"),
            clock: timing.clock.clone(),
        }
    }

    pub(super) fn all(&self) -> impl Iterator<Item = &Container> {
        self.init.iter().chain(self.main.iter())
    }

    pub(super) fn all_mut(&mut self) -> impl Iterator<Item = &mut Container> {
        self.init.iter_mut().chain(self.main.iter_mut())
    }

    /// Does any container run?
    pub fn any_running(&self) -> bool {
        self.all()
            .any(|c| matches!(c.state, ContainerState::Running { .. }))
    }

    /// The running containers, init ones first.
    pub(super) fn running_containers(&self) -> impl Iterator<Item = &Container> {
        self.all()
            .filter(|c| matches!(c.state, ContainerState::Running { .. }))
    }

    /// Is the main container `name` running?
    pub fn running(&self, name: &str) -> bool {
        self.main
            .iter()
            .any(|c| c.name == name && matches!(c.state, ContainerState::Running { .. }))
    }

    /// A pod worker's first sync: every container waits, the main ones behind the init ones.
    pub fn waiting_to_start(&mut self) {
        let has_init = !self.init.is_empty();
        for c in self.init.iter_mut() {
            c.state = ContainerState::Waiting("PodInitializing".into(), None);
        }
        for c in self.main.iter_mut() {
            c.state = ContainerState::Waiting(
                if has_init {
                    "PodInitializing"
                } else {
                    "ContainerCreating"
                }
                .into(),
                None,
            );
        }
    }

    /// A reboot killed every running container; they start again (restartCount + 1).
    pub fn node_rebooted(&mut self) {
        let clock = self.clock.clone();
        for c in self.all_mut() {
            if let ContainerState::Running { ref started, .. } = c.state {
                c.last = Some(ContainerState::Terminated {
                    exit: 255,
                    reason: "Unknown".into(),
                    started: started.clone(),
                    finished: clock.now_rfc3339(),
                });
                c.restarts += 1;
            }
            if !matches!(c.state, ContainerState::Terminated { ref reason, .. } if reason == "Completed")
            {
                c.state = ContainerState::Waiting("ContainerCreating".into(), None);
                c.step = Step::Idle;
                c.ready = false;
            }
        }
    }

    /// `crictl stop` of the running main container `name`: the runtime starts it again
    /// (restartCount + 1). Returns false when it does not run.
    pub fn kill_container(&mut self, name: &str) -> bool {
        let Some(c) = self.main.iter_mut().find(|c| c.name == name) else {
            return false;
        };
        let ContainerState::Running { ref started, .. } = c.state else {
            return false;
        };
        c.last = Some(ContainerState::Terminated {
            exit: 137,
            reason: "Error".into(),
            started: started.clone(),
            finished: self.clock.now_rfc3339(),
        });
        c.restarts += 1;
        c.ready = false;
        c.state = ContainerState::Waiting("ContainerCreating".into(), None);
        c.step = Step::Idle;
        true
    }

    /// `KillPod`, first half: the Killing event of every running container (they stop once
    /// their grace has passed, `stop_containers`).
    pub fn kill_pod(&self, pod: &Value, recorder: &EventRecorder) {
        for c in self.all() {
            if !matches!(c.state, ContainerState::Running { .. }) {
                continue;
            }
            let field = if self.init.iter().any(|i| i.name == c.name) {
                format!("spec.initContainers{{{}}}", c.name)
            } else {
                format!("spec.containers{{{}}}", c.name)
            };
            recorder.record_at(
                pod,
                Some(&field),
                EventKind::Normal,
                "Killing",
                &format!("Stopping container {}", c.name),
            );
        }
    }

    /// `KillPod`, second half: the running containers exit 0. Returns whether any did.
    pub fn stop_containers(&mut self) -> bool {
        let mut changed = false;
        let clock = self.clock.clone();
        for c in self.all_mut() {
            if let ContainerState::Running { ref started, .. } = c.state {
                c.state = ContainerState::Terminated {
                    exit: 0,
                    reason: "Completed".into(),
                    started: started.clone(),
                    finished: clock.now_rfc3339(),
                };
                c.ready = false;
                changed = true;
            }
        }
        changed
    }

    /// A container's log for `pods/log` (`GetContainerLogs`) of the pod named `pod_name`; None
    /// when the pod has no such container.
    pub fn logs(
        &self,
        pod_name: &str,
        container: &str,
        previous: bool,
    ) -> Option<Result<String, String>> {
        let c = self.all().find(|c| c.name == container)?;
        if previous {
            return Some(if c.restarts == 0 {
                Err(format!(
                    "previous terminated container {:?} in pod {:?} not found",
                    container, pod_name
                ))
            } else {
                Ok(lines(&c.prev_logs))
            });
        }
        match &c.state {
            ContainerState::Waiting(reason, _) if !c.started_once => Some(Err(format!(
                "container {:?} in pod {:?} is waiting to start: {}",
                container,
                pod_name,
                if reason.is_empty() {
                    "ContainerCreating"
                } else {
                    reason
                }
            ))),
            _ => Some(Ok(lines(&c.logs))),
        }
    }

    /// Every main container has started once and is running with nothing timed pending.
    pub fn all_started_and_running(&self) -> bool {
        self.main
            .iter()
            .all(|c| matches!(c.state, ContainerState::Running { .. }) && c.step == Step::Started)
    }

    /// One SyncPod of the runtime at `now`.
    #[allow(clippy::too_many_arguments)]
    pub fn sync_pod(
        &mut self,
        pod: &Value,
        now: SimInstant,
        timing: &Timing,
        images: &mut HashSet<String>,
        faults: RuntimeFaults,
        recorder: &EventRecorder,
    ) -> SyncResult {
        let clock = self.clock.clone();
        let scaled = |key: &str| {
            annotation(pod, key)
                .and_then(timing::parse_duration)
                .map(|d| timing.s(d))
        };
        let restart_policy = meta::str_at(pod, "/spec/restartPolicy").unwrap_or("Always");
        let crash_after = scaled(script::CRASH_AFTER);
        let exit_after = scaled(script::EXIT_AFTER);
        let never_ready = annotation(pod, script::NEVER_READY) == Some("true");
        let pull_error = annotation(pod, script::IMAGE_PULL_ERROR);
        let init_run = scaled(script::INIT_DURATION).unwrap_or(timing.s(timing.init_container_run));
        let log_lines: Vec<String> = annotation(pod, script::LOG)
            .map(|l| l.lines().map(String::from).collect())
            .unwrap_or_default();
        let pull_policy = |name: &str| -> String {
            ["containers", "initContainers"]
                .iter()
                .filter_map(|f| {
                    pod.pointer(&format!("/spec/{}", f))
                        .and_then(Value::as_array)
                })
                .flatten()
                .find(|c| c["name"] == name)
                .and_then(|c| c.get("imagePullPolicy").and_then(Value::as_str))
                .unwrap_or("IfNotPresent")
                .to_string()
        };
        let pull = (timing.s(timing.image_pull), timing.image_pull);
        let start = timing.s(timing.container_start);
        let mut changed = false;
        let mut events: Vec<(Option<String>, EventKind, String, String)> = Vec::new();
        // Init containers, one at a time, in order.
        let mut init_done = true;
        if let Some(c) = self
            .init
            .iter_mut()
            .find(|c| !matches!(c.state, ContainerState::Terminated { exit: 0, .. }))
        {
            init_done = false;
            let field = format!("spec.initContainers{{{}}}", c.name);
            let policy = pull_policy(&c.name);
            changed |= step_container(
                c,
                now,
                &clock,
                &policy,
                images,
                pull,
                start,
                pull_error,
                &field,
                &mut events,
            );
            if let ContainerState::Running { since, ref started } = c.state {
                if now.duration_since(since) >= init_run {
                    c.state = ContainerState::Terminated {
                        exit: 0,
                        reason: "Completed".into(),
                        started: started.clone(),
                        finished: self.clock.now_rfc3339(),
                    };
                    changed = true;
                }
            }
        }
        if init_done {
            let (name, ns, uid) = (meta::name(pod), meta::namespace(pod), meta::uid(pod));
            for c in self.main.iter_mut() {
                let field = format!("spec.containers{{{}}}", c.name);
                let policy = pull_policy(&c.name);
                let is_csi = c.name == "longhorn-csi-plugin";
                // CrashLoopBackOff: wait for the backoff, then start again.
                if c.step == Step::BackOff {
                    if c.next.map(|n| now >= n).unwrap_or(true) {
                        c.step = Step::Idle;
                        c.state = ContainerState::Waiting("ContainerCreating".into(), None);
                    } else {
                        continue;
                    }
                }
                if step_container(
                    c,
                    now,
                    &clock,
                    &policy,
                    images,
                    pull,
                    start,
                    pull_error,
                    &field,
                    &mut events,
                ) {
                    changed = true;
                    if matches!(c.state, ContainerState::Running { .. }) {
                        // As the runtime's log file has them: each line with its time, which
                        // `pods/log` shows with `timestamps=true` only.
                        let at = timing::rfc3339_nano(clock.now());
                        c.prev_logs = std::mem::take(&mut c.logs);
                        c.logs = log_lines.iter().map(|l| format!("{at} {l}")).collect();
                    }
                }
                let ContainerState::Running { since, ref started } = c.state else {
                    continue;
                };
                let started = started.clone();
                // Readiness: the prober reports ready unless scripted or broken.
                let crashing_plugin = is_csi && faults.csi_plugin_down;
                let ready_now = !(never_ready || faults.prober_broken || crashing_plugin);
                // A broken prober never makes a container ready.
                if c.ready != ready_now && (c.ready || !faults.prober_broken) {
                    c.ready = ready_now;
                    changed = true;
                }
                let ran = |d: Option<Duration>| d.is_some_and(|d| now.duration_since(since) >= d);
                let died = if crashing_plugin {
                    Some((2, "Error"))
                } else if ran(crash_after) {
                    Some((1, "Error"))
                } else if ran(exit_after) {
                    Some((0, "Completed"))
                } else {
                    None
                };
                let Some((exit, reason)) = died else {
                    continue;
                };
                let term = ContainerState::Terminated {
                    exit,
                    reason: reason.into(),
                    started,
                    finished: self.clock.now_rfc3339(),
                };
                c.ready = false;
                changed = true;
                let restart =
                    restart_policy == "Always" || (restart_policy == "OnFailure" && exit != 0);
                if !restart {
                    c.state = term;
                    continue;
                }
                c.last = Some(term);
                c.restarts += 1;
                c.step = Step::BackOff;
                c.next = Some(now + timing.s(c.crash_backoff));
                let msg = format!(
                    "back-off {} restarting failed container={} pod={}_{}({})",
                    go_duration(c.crash_backoff),
                    c.name,
                    name,
                    ns,
                    uid
                );
                c.state = ContainerState::Waiting("CrashLoopBackOff".into(), Some(msg));
                c.crash_backoff = (c.crash_backoff * 2).min(timing.crash_backoff_max);
                let msg = format!(
                    "Back-off restarting failed container {} in pod {}_{}({})",
                    c.name, name, ns, uid
                );
                events.push((Some(field), EventKind::Warning, "BackOff".into(), msg));
            }
        }
        for (field, kind, reason, msg) in events {
            recorder.record_at(pod, field.as_deref(), kind, &reason, &msg);
        }
        SyncResult {
            changed,
            scripted_exit: crash_after.is_some() || exit_after.is_some(),
        }
    }
}
