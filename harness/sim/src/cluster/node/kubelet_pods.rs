//! What kubelet_pods.go computes for a pod: its phase (`getPhase`) and the API status the
//! kubelet reports (`generateAPIPodStatus`), which the status manager then caches and posts.

use super::kuberuntime_manager::PodContainers;
use super::runtime::{container_status, ContainerState};
use crate::apiserver::meta;

use serde_json::{json, Value};

/// A pod's phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PodPhase {
    Pending,
    Running,
    Succeeded,
    Failed,
}

impl PodPhase {
    pub fn as_str(self) -> &'static str {
        match self {
            PodPhase::Pending => "Pending",
            PodPhase::Running => "Running",
            PodPhase::Succeeded => "Succeeded",
            PodPhase::Failed => "Failed",
        }
    }

    pub fn is_terminal(self) -> bool {
        matches!(self, PodPhase::Succeeded | PodPhase::Failed)
    }
}

/// `getPhase` of a pod that may still run: Pending until the init containers have completed
/// and a main container has started; Succeeded/Failed once every main container has exited
/// for good; else Running.
pub fn get_phase(c: &PodContainers) -> PodPhase {
    let all_init = c
        .init
        .iter()
        .all(|c| matches!(c.state, ContainerState::Terminated { exit: 0, .. }));
    if !all_init {
        return PodPhase::Pending;
    }
    if let Some(phase) = terminal_phase(c) {
        return phase;
    }
    if c.main.iter().any(|c| c.started_once) {
        PodPhase::Running
    } else {
        PodPhase::Pending
    }
}

/// `getPhase` with `podIsTerminal`: Succeeded when every main container exited 0, Failed when
/// every one exited and one did not with 0; None while one has not exited (or there is none).
pub fn terminal_phase(c: &PodContainers) -> Option<PodPhase> {
    let exits: Option<Vec<i32>> = c
        .main
        .iter()
        .map(|c| match c.state {
            ContainerState::Terminated { exit, .. } => Some(exit),
            _ => None,
        })
        .collect();
    let exits = exits.filter(|e| !e.is_empty())?;
    Some(if exits.iter().all(|e| *e == 0) {
        PodPhase::Succeeded
    } else {
        PodPhase::Failed
    })
}

/// What the status of one pod is generated from.
pub struct PodStatusInput<'a> {
    /// The pod as the pod manager has it.
    pub pod: &'a Value,
    pub containers: &'a PodContainers,
    pub phase: PodPhase,
    pub started_time: Option<&'a str>,
    pub pod_ip: Option<&'a str>,
    /// The cluster clock's time (`metav1.Time`): a condition that changes transitions now.
    pub now: &'a str,
}

fn cond(t: &str, ok: bool, reason: Option<&str>, msg: Option<String>, now: &str) -> Value {
    let mut c = json!({"type": t, "status": if ok { "True" } else { "False" }, "lastProbeTime": null, "lastTransitionTime": now});
    if !ok {
        if let Some(r) = reason {
            c["reason"] = json!(r);
        }
        if let Some(m) = msg {
            c["message"] = json!(m);
        }
    }
    c
}

/// `generateAPIPodStatus`: the status the kubelet reports for a pod, in the real shapes
/// (conditions, Waiting reasons), from the runtime's containers and what the API has (the
/// scheduler's condition, conditions other components own, unchanged transition times).
pub fn generate_api_pod_status(p: &PodStatusInput<'_>, host_ip: &str) -> Value {
    let (init, main) = (&p.containers.init, &p.containers.main);
    let init_ok = init
        .iter()
        .all(|c| matches!(c.state, ContainerState::Terminated { exit: 0, .. }));
    let pending_init: Vec<&str> = init
        .iter()
        .filter(|c| !matches!(c.state, ContainerState::Terminated { exit: 0, .. }))
        .map(|c| c.name.as_str())
        .collect();
    let unready: Vec<&str> = main
        .iter()
        .filter(|c| !c.ready)
        .map(|c| c.name.as_str())
        .collect();
    let ready = unready.is_empty() && !main.is_empty() && !meta::is_deleting(p.pod);
    // status/generate.go: a terminal pod's readiness says why it ended (PodCompleted,
    // PodFailed; no message), and its sandbox is gone (killed with the pod), so
    // PodReadyToStartContainers is False; a Succeeded pod's Initialized is True, PodCompleted.
    let terminal = match p.phase {
        PodPhase::Succeeded => Some("PodCompleted"),
        PodPhase::Failed => Some("PodFailed"),
        _ => None,
    };
    let sandbox = p.pod_ip.is_some() && terminal.is_none();
    let unready_msg = || {
        Some(format!(
            "containers with unready status: [{}]",
            unready.join(" ")
        ))
    };
    let readiness = |t: &str| match terminal {
        Some(reason) => cond(t, false, Some(reason), None, p.now),
        None => cond(t, ready, Some("ContainersNotReady"), unready_msg(), p.now),
    };
    let mut initialized = cond(
        "Initialized",
        init_ok,
        Some("ContainersNotInitialized"),
        Some(format!(
            "containers with incomplete status: [{}]",
            pending_init.join(" ")
        )),
        p.now,
    );
    if p.phase == PodPhase::Succeeded {
        initialized = cond("Initialized", true, None, None, p.now);
        initialized["reason"] = json!("PodCompleted");
    }
    let mut conds = vec![
        cond("PodReadyToStartContainers", sandbox, None, None, p.now),
        initialized,
        readiness("Ready"),
        readiness("ContainersReady"),
    ];
    // Keep the scheduler's PodScheduled condition as the API has it.
    let scheduled = p
        .pod
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|c| c["type"] == "PodScheduled").cloned())
        .unwrap_or_else(|| cond("PodScheduled", true, None, None, p.now));
    conds.push(scheduled);
    // Conditions other components own (DisruptionTarget, readiness gates) are kept.
    const OWN: [&str; 5] = [
        "PodReadyToStartContainers",
        "Initialized",
        "Ready",
        "ContainersReady",
        "PodScheduled",
    ];
    if let Some(prev) = p
        .pod
        .pointer("/status/conditions")
        .and_then(Value::as_array)
    {
        conds.extend(
            prev.iter()
                .filter(|c| !OWN.iter().any(|t| c["type"] == *t))
                .cloned(),
        );
    }
    // Preserve each condition's lastTransitionTime when its status is unchanged.
    if let Some(prev) = p
        .pod
        .pointer("/status/conditions")
        .and_then(Value::as_array)
    {
        for c in conds.iter_mut() {
            if let Some(old) = prev
                .iter()
                .find(|o| o["type"] == c["type"] && o["status"] == c["status"])
            {
                c["lastTransitionTime"] = old["lastTransitionTime"].clone();
            }
        }
    }
    let mut s = json!({
        "phase": p.phase.as_str(),
        "conditions": conds,
        "hostIP": host_ip,
        "hostIPs": [{"ip": host_ip}],
        "startTime": p.started_time,
        "qosClass": p.pod.pointer("/status/qosClass").cloned().unwrap_or(json!("BestEffort")),
        "containerStatuses": main.iter().map(container_status).collect::<Vec<_>>(),
    });
    if !init.is_empty() {
        s["initContainerStatuses"] = json!(init.iter().map(container_status).collect::<Vec<_>>());
    }
    if let Some(ip) = &p.pod_ip {
        s["podIP"] = json!(ip);
        s["podIPs"] = json!([{"ip": ip}]);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timing::Timing;

    fn conditions(phase: PodPhase) -> Value {
        let pod = json!({"metadata": {"name": "p", "namespace": "d"},
                         "spec": {"containers": [{"name": "app", "image": "x"}]}});
        let containers = PodContainers::from_spec(&pod, &Timing::default());
        let input = PodStatusInput {
            pod: &pod,
            containers: &containers,
            phase,
            started_time: None,
            pod_ip: Some("10.244.1.2"),
            now: "2026-01-01T00:00:00Z",
        };
        generate_api_pod_status(&input, "172.18.0.2")["conditions"].clone()
    }

    fn find(conds: &Value, t: &str) -> (String, String) {
        let c = conds
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["type"] == t)
            .unwrap();
        (
            c["status"].as_str().unwrap().into(),
            c["reason"].as_str().unwrap_or("").into(),
        )
    }

    /// As a 1.35 kubelet wrote them for a deleted pod on kind (docs/fidelity.md, faultline diff).
    #[test]
    fn a_terminal_pods_readiness_says_why_it_ended_and_its_sandbox_is_gone() {
        let done = conditions(PodPhase::Succeeded);
        assert_eq!(
            find(&done, "Ready"),
            ("False".into(), "PodCompleted".into())
        );
        assert_eq!(
            find(&done, "ContainersReady"),
            ("False".into(), "PodCompleted".into())
        );
        assert_eq!(
            find(&done, "Initialized"),
            ("True".into(), "PodCompleted".into())
        );
        assert_eq!(find(&done, "PodReadyToStartContainers").0, "False");
        let failed = conditions(PodPhase::Failed);
        assert_eq!(find(&failed, "Ready"), ("False".into(), "PodFailed".into()));
        let pending = conditions(PodPhase::Pending);
        assert_eq!(
            find(&pending, "Ready"),
            ("False".into(), "ContainersNotReady".into())
        );
        assert_eq!(find(&pending, "PodReadyToStartContainers").0, "True");
    }
}
