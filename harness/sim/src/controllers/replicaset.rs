//! The ReplicaSet controller (and, with the same logic, the ReplicationController manager):
//! keep `spec.replicas` active pods from the template, delete the surplus (least useful first),
//! and report replicas / ready / available / terminating counts.

use super::queue::{Key, Reconciler, Watches};
use super::util::{self, i64_at};
use crate::apiserver::meta;
use crate::apiserver::resources::ResourceKey;
use crate::events::{EventKind, EventRecorder};
use crate::internal::Internal;
use crate::timing::{self, Timing};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

/// Which of the two replica-keeping kinds a loop manages.
pub struct Flavour {
    pub group: &'static str,
    pub plural: &'static str,
    pub api_version: &'static str,
    pub kind: &'static str,
    pub component: &'static str,
}

pub const REPLICA_SET: Flavour = Flavour {
    group: "apps",
    plural: "replicasets",
    api_version: "apps/v1",
    kind: "ReplicaSet",
    component: "replicaset-controller",
};
pub const REPLICATION_CONTROLLER: Flavour = Flavour {
    group: "",
    plural: "replicationcontrollers",
    api_version: "v1",
    kind: "ReplicationController",
    component: "replication-controller",
};

pub struct ReplicaSetController {
    client: Internal,
    recorder: EventRecorder,
    timing: Timing,
    flavour: Flavour,
}

impl ReplicaSetController {
    pub fn new(client: Internal, timing: Timing, flavour: Flavour) -> Self {
        let recorder = EventRecorder::new(client.clone(), flavour.component, None);
        ReplicaSetController {
            client,
            recorder,
            timing,
            flavour,
        }
    }
}

/// Is `pod` available: Ready for at least `min_ready` (nominal seconds, scaled by the timing)?
/// Returns the remaining wait when it is Ready but not yet long enough.
pub fn availability(pod: &Value, min_ready: i64, timing: &Timing) -> (bool, Option<Duration>) {
    if !util::is_pod_ready(pod) || meta::is_deleting(pod) {
        return (false, None);
    }
    if min_ready <= 0 {
        return (true, None);
    }
    let need = timing.s(Duration::from_secs(min_ready as u64));
    let since = util::condition(pod, "Ready")
        .and_then(|c| c["lastTransitionTime"].as_str())
        .and_then(timing::parse_time);
    let elapsed = since
        .map(|t| (timing.now() - t).to_std().unwrap_or_default())
        .unwrap_or_default();
    if elapsed >= need {
        (true, None)
    } else {
        (false, Some(need - elapsed))
    }
}

/// Deletion preference among surplus pods (upstream ActivePods ordering, simplified): unscheduled,
/// then pending, then not ready, then the most recently created first.
fn deletion_rank(pod: &Value) -> (u8, u8, u8, std::cmp::Reverse<String>) {
    let scheduled = meta::str_at(pod, "/spec/nodeName")
        .map(|n| !n.is_empty())
        .unwrap_or(false);
    let running = meta::str_at(pod, "/status/phase") == Some("Running");
    (
        scheduled as u8,
        running as u8,
        util::is_pod_ready(pod) as u8,
        std::cmp::Reverse(
            meta::str_at(pod, "/metadata/creationTimestamp")
                .unwrap_or("")
                .to_string(),
        ),
    )
}

impl Reconciler for ReplicaSetController {
    fn client(&self) -> &Internal {
        &self.client
    }

    fn watches(&self) -> Watches {
        Watches {
            group: self.flavour.group,
            plural: self.flavour.plural,
            kind: self.flavour.kind,
            children: &[("", "pods")],
            selects_pods: None,
        }
    }

    fn reconcile(&mut self, (ns, name): &Key) -> Option<Duration> {
        let f = &self.flavour;
        let rs = self.client.get(f.group, f.plural, ns, name)?;
        let pods = util::controlled_by(
            &self.client.api.store,
            meta::uid(&rs),
            &ResourceKey::new("", "pods"),
        );
        let (mut active, finished): (Vec<Arc<Value>>, Vec<Arc<Value>>) =
            pods.into_iter().partition(|p| util::is_pod_active(p));
        let terminating = finished.iter().filter(|p| meta::is_deleting(p)).count() as i64;
        let want = i64_at(&rs, "/spec/replicas").unwrap_or(1);
        if !meta::is_deleting(&rs) {
            let have = active.len() as i64;
            if have < want {
                let template = rs
                    .pointer("/spec/template")
                    .cloned()
                    .unwrap_or_else(|| json!({}));
                for _ in have..want {
                    let pod = util::pod_from_template(
                        &template,
                        util::controller_ref(&rs, f.api_version, f.kind),
                        ns,
                        &format!("{name}-"),
                    );
                    match self.client.create("", "pods", ns, pod) {
                        Ok(p) => self.recorder.record(
                            &rs,
                            EventKind::Normal,
                            "SuccessfulCreate",
                            &format!("Created pod: {}", meta::name(&p)),
                        ),
                        Err(e) => {
                            self.recorder.record(
                                &rs,
                                EventKind::Warning,
                                "FailedCreate",
                                &format!("Error creating: {}", e.message),
                            );
                            break;
                        }
                    }
                }
                // Re-read: the creates changed the counts.
                active = util::controlled_by(
                    &self.client.api.store,
                    meta::uid(&rs),
                    &ResourceKey::new("", "pods"),
                )
                .into_iter()
                .filter(|p| util::is_pod_active(p))
                .collect();
            } else if have > want {
                active.sort_by_key(|p| deletion_rank(p));
                let surplus: Vec<Arc<Value>> = active.drain(..(have - want) as usize).collect();
                for p in surplus {
                    if self
                        .client
                        .delete("", "pods", ns, meta::name(&p), None)
                        .is_ok()
                    {
                        self.recorder.record(
                            &rs,
                            EventKind::Normal,
                            "SuccessfulDelete",
                            &format!("Deleted pod: {}", meta::name(&p)),
                        );
                    }
                }
            }
        }
        let min_ready = i64_at(&rs, "/spec/minReadySeconds").unwrap_or(0);
        let mut ready = 0;
        let mut available = 0;
        let mut recheck: Option<Duration> = None;
        for p in &active {
            if util::is_pod_ready(p) {
                ready += 1;
            }
            match availability(p, min_ready, &self.timing) {
                (true, _) => available += 1,
                (false, Some(wait)) => recheck = Some(recheck.map_or(wait, |r| r.min(wait))),
                _ => {}
            }
        }
        let replicas = active.len() as i64;
        let mut status = json!({
            "replicas": replicas, "fullyLabeledReplicas": replicas, "readyReplicas": ready, "availableReplicas": available,
            "observedGeneration": i64_at(&rs, "/metadata/generation").unwrap_or(1),
        });
        if f.kind == "ReplicaSet" {
            status["terminatingReplicas"] = json!(terminating);
        }
        let current = rs.get("status").cloned().unwrap_or_else(|| json!({}));
        let changed = status
            .as_object()
            .map(|m| {
                m.iter()
                    .any(|(k, v)| current.get(k).unwrap_or(&json!(0)) != v)
            })
            .unwrap_or(false);
        if changed {
            let _ =
                self.client
                    .merge_status(f.group, f.plural, ns, name, &json!({"status": status}));
        }
        recheck.map(|d| d + Duration::from_millis(5))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn surplus_pods_go_unscheduled_first_then_pending_then_unready() {
        let pod = |node: Option<&str>, phase: &str, ready: bool, created: &str| json!({"metadata": {"creationTimestamp": created}, "spec": {"nodeName": node}, "status": {"phase": phase, "conditions": [{"type": "Ready", "status": if ready {"True"} else {"False"}}]}});
        let mut pods = [
            pod(Some("n"), "Running", true, "2020-01-01T00:00:01Z"),
            pod(Some("n"), "Running", false, "2020-01-01T00:00:02Z"),
            pod(None, "Pending", false, "2020-01-01T00:00:03Z"),
            pod(Some("n"), "Pending", false, "2020-01-01T00:00:04Z"),
            pod(Some("n"), "Running", true, "2020-01-01T00:00:05Z"),
        ];
        pods.sort_by_key(deletion_rank);
        let order: Vec<&str> = pods
            .iter()
            .map(|p| p["metadata"]["creationTimestamp"].as_str().unwrap())
            .collect();
        assert_eq!(
            order,
            [
                "2020-01-01T00:00:03Z",
                "2020-01-01T00:00:04Z",
                "2020-01-01T00:00:02Z",
                "2020-01-01T00:00:05Z",
                "2020-01-01T00:00:01Z"
            ]
        );
    }

    #[test]
    fn availability_waits_for_min_ready_seconds() {
        let timing = Timing::default();
        let now = timing.clock.now_rfc3339();
        let ready = json!({"status": {"conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": now}]}});
        assert_eq!(availability(&ready, 0, &timing), (true, None));
        let (ok, wait) = availability(&ready, 30, &timing);
        assert!(!ok && wait.unwrap() > Duration::from_secs(28));
        let unready = json!({"status": {"conditions": [{"type": "Ready", "status": "False"}]}});
        assert_eq!(availability(&unready, 0, &timing), (false, None));
    }
}
