//! The container runtime of a simulated node (what containerd does under the kubelet's
//! kuberuntime manager): a container's states, image pulls, create and start with the events the
//! kubelet records for them, the API's view of a container's state, and the pod annotations that
//! script it.

use crate::events::EventKind;
use crate::timing::go_duration;
use crate::timing::{SimClock, SimInstant};
use serde_json::{json, Value};
use std::collections::HashSet;
use std::time::Duration;

/// Pod annotations that script the simulated container runtime.
pub mod script {
    /// Main containers exit with code 1 this long after starting (then CrashLoopBackOff).
    pub const CRASH_AFTER: &str = "sim.faultline.dev/crash-after";
    /// Main containers exit with code 0 this long after starting.
    pub const EXIT_AFTER: &str = "sim.faultline.dev/exit-after";
    /// Containers start but never pass readiness.
    pub const NEVER_READY: &str = "sim.faultline.dev/never-ready";
    /// Image pulls fail with ErrImagePull / ImagePullBackOff.
    pub const IMAGE_PULL_ERROR: &str = "sim.faultline.dev/image-pull-error";
    /// How long each init container runs (default: the timing's init_container_run).
    pub const INIT_DURATION: &str = "sim.faultline.dev/init-duration";
    /// Log lines each main container writes when it starts (newline separated).
    pub const LOG: &str = "sim.faultline.dev/log";
    /// Marks a terminated pod whose volumes were never cleaned up and whose sandbox the runtime
    /// cannot tear down (see `PodWorkers::sandboxes_stuck`).
    pub const STALE_VOLUMES: &str = "sim.faultline.dev/stale-volumes";
}

#[derive(Debug, Clone, PartialEq)]
pub(super) enum ContainerState {
    Waiting(String, Option<String>),
    Running {
        started: String,
        since: SimInstant,
    },
    Terminated {
        exit: i32,
        reason: String,
        started: String,
        finished: String,
    },
}

#[derive(Debug, Clone)]
pub(super) struct Container {
    pub(super) name: String,
    pub(super) image: String,
    pub(super) state: ContainerState,
    pub(super) last: Option<ContainerState>,
    pub(super) ready: bool,
    pub(super) started_once: bool,
    pub(super) restarts: u32,
    /// When the next step (pull done, start, restart after backoff) may happen.
    pub(super) next: Option<SimInstant>,
    pub(super) step: Step,
    /// The next CrashLoopBackOff delay, nominal (what the messages print).
    pub(super) crash_backoff: Duration,
    pub(super) logs: Vec<String>,
    pub(super) prev_logs: Vec<String>,
    pub(super) container_id: String,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Step {
    Idle,
    Pulling,
    Creating,
    Started,
    BackOff,
}

pub(super) fn lines(l: &[String]) -> String {
    l.iter().map(|s| format!("{}\n", s)).collect()
}

/// Advance one container through pull -> create -> start. Returns true when its state changed.
#[allow(clippy::too_many_arguments)]
pub(super) fn step_container(
    c: &mut Container,
    now: SimInstant,
    clock: &SimClock,
    policy: &str,
    images: &mut HashSet<String>,
    // (scaled wait, nominal duration the Pulled event prints)
    pull: (Duration, Duration),
    start: Duration,
    pull_error: Option<&str>,
    field: &str,
    events: &mut Vec<(Option<String>, EventKind, String, String)>,
) -> bool {
    match c.step {
        Step::Idle => {
            if matches!(
                c.state,
                ContainerState::Running { .. } | ContainerState::Terminated { .. }
            ) {
                return false;
            }
            let cached = images.contains(&c.image) && policy != "Always";
            if policy == "Never" || (cached && policy == "IfNotPresent") {
                events.push((
                    Some(field.into()),
                    EventKind::Normal,
                    "Pulled".into(),
                    // images/image_manager.go: with KubeletEnsureSecretPulledImages (on in 1.35)
                    // the kubelet also says the pod may use it.
                    format!(
                        "Container image {:?} already present on machine and can be accessed by the pod",
                        c.image
                    ),
                ));
                c.step = Step::Creating;
                c.next = Some(now + start);
            } else {
                events.push((
                    Some(field.into()),
                    EventKind::Normal,
                    "Pulling".into(),
                    format!("Pulling image {:?}", c.image),
                ));
                c.step = Step::Pulling;
                c.next = Some(now + pull.0);
            }
            false
        }
        Step::Pulling => {
            if c.next.map(|n| now < n).unwrap_or(false) {
                return false;
            }
            if let Some(reason) = pull_error {
                events.push((Some(field.into()), EventKind::Warning, "Failed".into(), format!("Failed to pull image {:?}: rpc error: code = NotFound desc = failed to pull and unpack image {:?}: not found", c.image, c.image)));
                c.state = ContainerState::Waiting(
                    if reason == "ImagePullBackOff" {
                        "ImagePullBackOff"
                    } else {
                        "ErrImagePull"
                    }
                    .into(),
                    Some(format!("Back-off pulling image {:?}", c.image)),
                );
                c.next = Some(now + pull.0 * 4);
                c.step = Step::Pulling;
                return true;
            }
            images.insert(c.image.clone());
            events.push((Some(field.into()), EventKind::Normal, "Pulled".into(), format!("Successfully pulled image {:?} in {} ({} including waiting). Image size: 4269396 bytes.", c.image, go_duration(pull.1), go_duration(pull.1))));
            c.step = Step::Creating;
            c.next = Some(now + start);
            false
        }
        Step::Creating => {
            if c.next.map(|n| now < n).unwrap_or(false) {
                return false;
            }
            events.push((
                Some(field.into()),
                EventKind::Normal,
                "Created".into(),
                // kuberuntime/kuberuntime_container.go (1.35): no container name in these.
                "Container created".to_string(),
            ));
            events.push((
                Some(field.into()),
                EventKind::Normal,
                "Started".into(),
                "Container started".to_string(),
            ));
            c.state = ContainerState::Running {
                started: clock.now_rfc3339(),
                since: now,
            };
            c.started_once = true;
            c.step = Step::Started;
            c.container_id = format!("containerd://{}", uuid::Uuid::new_v4().simple());
            true
        }
        Step::Started => {
            if matches!(c.state, ContainerState::Waiting(..)) {
                c.step = Step::Idle;
            }
            false
        }
        Step::BackOff => false,
    }
}

pub(super) fn state_json(s: &ContainerState) -> Value {
    match s {
        ContainerState::Waiting(reason, msg) => {
            let mut w =
                json!({"reason": if reason.is_empty() { "ContainerCreating" } else { reason }});
            if let Some(m) = msg {
                w["message"] = json!(m);
            }
            json!({"waiting": w})
        }
        ContainerState::Running { started, .. } => json!({"running": {"startedAt": started}}),
        ContainerState::Terminated {
            exit,
            reason,
            started,
            finished,
        } => {
            json!({"terminated": {"exitCode": exit, "reason": reason, "startedAt": started, "finishedAt": finished}})
        }
    }
}

pub(super) fn container_status(c: &Container) -> Value {
    let mut s = json!({
        "name": c.name, "image": c.image, "imageID": "", "ready": c.ready, "restartCount": c.restarts,
        "state": state_json(&c.state),
        "lastState": c.last.as_ref().map(state_json).unwrap_or_else(|| json!({})),
    });
    s["started"] = json!(matches!(c.state, ContainerState::Running { .. }));
    if c.started_once {
        s["containerID"] = json!(c.container_id);
        s["imageID"] = json!(format!(
            "docker.io/library/{}@sha256:{:064x}",
            c.image.split(':').next().unwrap_or(""),
            0
        ));
    }
    s
}
