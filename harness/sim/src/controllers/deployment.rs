//! The Deployment controller: Deployment -> ReplicaSets (one per pod template, named
//! `<deployment>-<pod-template-hash>`, revision annotations) -> pods through the ReplicaSet
//! controller. RollingUpdate honours maxSurge/maxUnavailable against the ReplicaSets' available
//! counts (readiness and minReadySeconds), Recreate scales the old ones to zero first; status
//! and the Available/Progressing conditions (with progressDeadlineSeconds) are written as the
//! upstream controller writes them, so `kubectl rollout status|undo|restart` and `scale` work.

use super::queue::{Key, Reconciler, Watches};
use super::util::{self, i64_at, int_or_percent};
use crate::apiserver::meta;
use crate::apiserver::resources::ResourceKey;
use crate::events::{EventKind, EventRecorder};
use crate::internal::Internal;
use crate::timing::{self, Timing};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

pub const REVISION: &str = "deployment.kubernetes.io/revision";
const REVISION_HISTORY: &str = "deployment.kubernetes.io/revision-history";
const DESIRED_REPLICAS: &str = "deployment.kubernetes.io/desired-replicas";
const MAX_REPLICAS: &str = "deployment.kubernetes.io/max-replicas";
pub const POD_TEMPLATE_HASH: &str = "pod-template-hash";
/// Deployment annotations never copied to its ReplicaSets (upstream `annotationsToSkip`).
const SKIP_ANNOTATIONS: &[&str] = &[
    "kubectl.kubernetes.io/last-applied-configuration",
    REVISION,
    REVISION_HISTORY,
    DESIRED_REPLICAS,
    MAX_REPLICAS,
    "deprecated.deployment.rollback.to",
];

pub struct DeploymentController {
    client: Internal,
    recorder: EventRecorder,
    timing: Timing,
}

impl DeploymentController {
    pub fn new(client: Internal, timing: Timing) -> Self {
        let recorder = EventRecorder::new(client.clone(), "deployment-controller", None);
        DeploymentController {
            client,
            recorder,
            timing,
        }
    }
}

/// The rolling-update fenceposts: (maxSurge, maxUnavailable), surge rounded up and
/// unavailability down; both zero is resolved to unavailability 1 (upstream ResolveFenceposts).
pub fn fenceposts(d: &Value) -> (i64, i64) {
    if meta::str_at(d, "/spec/strategy/type") == Some("Recreate") {
        return (0, 0);
    }
    let replicas = i64_at(d, "/spec/replicas").unwrap_or(1);
    let ru = d.pointer("/spec/strategy/rollingUpdate");
    let surge = int_or_percent(ru.and_then(|r| r.get("maxSurge")), "25%", replicas, true);
    let unavailable = int_or_percent(
        ru.and_then(|r| r.get("maxUnavailable")),
        "25%",
        replicas,
        false,
    );
    if surge == 0 && unavailable == 0 {
        return (0, 1);
    }
    (surge, unavailable.min(replicas))
}

/// The pod template a Deployment's ReplicaSet is compared by: without `pod-template-hash`, and
/// with null and empty fields dropped, since Go's semantic equality does not tell them apart
/// (`kubectl rollout undo` sends `creationTimestamp: null` back, for one).
fn template_without_hash(t: &Value) -> Value {
    let mut t = t.clone();
    if let Some(l) = t
        .pointer_mut("/metadata/labels")
        .and_then(Value::as_object_mut)
    {
        l.remove(POD_TEMPLATE_HASH);
    }
    prune_empty(&mut t);
    t
}

fn prune_empty(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.values_mut().for_each(prune_empty);
            m.retain(|_, v| {
                !(v.is_null()
                    || v.as_object().is_some_and(|o| o.is_empty())
                    || v.as_array().is_some_and(|a| a.is_empty()))
            });
        }
        Value::Array(a) => a.iter_mut().for_each(prune_empty),
        _ => {}
    }
}

fn revision(rs: &Value) -> i64 {
    meta::str_at(
        rs,
        &format!("/metadata/annotations/{}", REVISION.replace('/', "~1")),
    )
    .and_then(|r| r.parse().ok())
    .unwrap_or(0)
}

fn spec_replicas(rs: &Value) -> i64 {
    i64_at(rs, "/spec/replicas").unwrap_or(0)
}

/// `calculateStatus` (pkg/controller/deployment/sync.go): the ReplicaSets' desired replicas
/// (`spec.replicas`, a surge included) less the available ones, not below 0.
fn unavailable_replicas(rss: &[Arc<Value>]) -> i64 {
    let total: i64 = rss.iter().map(|r| spec_replicas(r)).sum();
    let available: i64 = rss.iter().map(|r| status_of(r, "availableReplicas")).sum();
    (total - available).max(0)
}

fn status_of(rs: &Value, field: &str) -> i64 {
    i64_at(rs, &format!("/status/{field}")).unwrap_or(0)
}

/// The rolling-update step (upstream NewRSNewReplicas + the old-ReplicaSet scale-down), as pure
/// arithmetic over (spec replicas, available replicas): returns the new ReplicaSet's target and
/// the targets of the old ones, in the order given (oldest first).
pub fn rolling_step(
    replicas: i64,
    surge: i64,
    max_unavailable: i64,
    new: (i64, i64),
    olds: &[(i64, i64)],
) -> (i64, Vec<i64>) {
    let total: i64 = new.0 + olds.iter().map(|o| o.0).sum::<i64>();
    // Scale the new ReplicaSet up within the surge.
    let mut new_target = new.0;
    if new.0 < replicas {
        let room = (replicas + surge - total).max(0);
        new_target = new.0 + room.min(replicas - new.0);
    } else if new.0 > replicas {
        new_target = replicas;
    }
    // Scale old ReplicaSets down while the availability floor holds.
    let min_available = replicas - max_unavailable;
    let all_pods = new_target + olds.iter().map(|o| o.0).sum::<i64>();
    let new_unavailable = (new.0 - new.1).max(0);
    let mut budget = (all_pods - min_available - new_unavailable).max(0);
    let mut targets: Vec<i64> = olds.iter().map(|o| o.0).collect();
    // Unhealthy old replicas go first: they cost no availability.
    for (i, o) in olds.iter().enumerate() {
        let unhealthy = (o.0 - o.1).max(0).min(budget);
        targets[i] -= unhealthy;
        budget -= unhealthy;
    }
    let available: i64 = new.1 + olds.iter().map(|o| o.1).sum::<i64>();
    let mut healthy_budget = (available - min_available).max(0).min(budget);
    for (i, o) in olds.iter().enumerate() {
        let healthy_left = targets[i].min(o.1);
        let cut = healthy_left.min(healthy_budget);
        targets[i] -= cut;
        healthy_budget -= cut;
    }
    (new_target, targets)
}

/// Set a Deployment condition the way the upstream helper does: unchanged when status and
/// reason are the same; otherwise replaced (appended last), keeping lastTransitionTime while the
/// status holds.
fn set_condition(
    status: &mut Value,
    ctype: &str,
    cstatus: &str,
    reason: &str,
    message: &str,
    force_update: bool,
    now: &str,
) {
    let now = json!(now);
    let conds = status["conditions"].as_array().cloned().unwrap_or_default();
    let current = conds.iter().find(|c| c["type"] == ctype).cloned();
    if let Some(c) = &current {
        if c["status"] == cstatus && c["reason"] == reason && !force_update {
            return;
        }
    }
    let transition = match &current {
        Some(c) if c["status"] == cstatus => c["lastTransitionTime"].clone(),
        _ => now.clone(),
    };
    let mut next: Vec<Value> = conds.into_iter().filter(|c| c["type"] != ctype).collect();
    next.push(json!({"type": ctype, "status": cstatus, "lastUpdateTime": now, "lastTransitionTime": transition, "reason": reason, "message": message}));
    status["conditions"] = json!(next);
}

impl DeploymentController {
    fn replica_sets(&self, d: &Value) -> Vec<Arc<Value>> {
        let mut rss = util::controlled_by(
            &self.client.api.store,
            meta::uid(d),
            &ResourceKey::new("apps", "replicasets"),
        );
        rss.sort_by(|a, b| {
            meta::str_at(a, "/metadata/creationTimestamp")
                .cmp(&meta::str_at(b, "/metadata/creationTimestamp"))
                .then(meta::name(a).cmp(meta::name(b)))
        });
        rss
    }

    fn scale_rs(&self, d: &Value, rs: &Value, to: i64) {
        let from = spec_replicas(rs);
        if from == to {
            return;
        }
        let replicas = i64_at(d, "/spec/replicas").unwrap_or(1);
        let (surge, _) = fenceposts(d);
        let patch = json!({"metadata": {"annotations": {DESIRED_REPLICAS: replicas.to_string(), MAX_REPLICAS: (replicas + surge).to_string()}}, "spec": {"replicas": to}});
        if self
            .client
            .merge(
                "apps",
                "replicasets",
                meta::namespace(rs),
                meta::name(rs),
                &patch,
            )
            .is_ok()
        {
            let op = if to > from { "up" } else { "down" };
            self.recorder.record(
                d,
                EventKind::Normal,
                "ScalingReplicaSet",
                &format!(
                    "Scaled {op} replica set {} from {from} to {to}",
                    meta::name(rs)
                ),
            );
        }
    }

    /// The ReplicaSet of the current template: found (its revision raised to the newest when it
    /// is an older one coming back, as a rollback does) or created.
    fn new_replica_set(
        &self,
        d: &Value,
        rss: &[Arc<Value>],
        create: bool,
        initial: i64,
    ) -> Option<Arc<Value>> {
        let template = d
            .pointer("/spec/template")
            .cloned()
            .unwrap_or_else(|| json!({}));
        // controller.ComputeHash of the template and the collision count, as upstream names
        // the ReplicaSet; the sim's own hash only where the Go dump is out of reach.
        let collisions = d.pointer("/status/collisionCount").and_then(Value::as_i64);
        let hash = super::gohash::compute_hash(&template, collisions)
            .unwrap_or_else(|| util::template_hash(&template_without_hash(&template)));
        let wanted = template_without_hash(&template);
        let max_old = rss.iter().map(|r| revision(r)).max().unwrap_or(0);
        let found = rss.iter().find(|r| {
            meta::str_at(r, "/metadata/labels/pod-template-hash") == Some(hash.as_str())
                || r.pointer("/spec/template")
                    .map(template_without_hash)
                    .as_ref()
                    == Some(&wanted)
        });
        if let Some(rs) = found {
            let rev = revision(rs);
            let others_max = rss
                .iter()
                .filter(|r| meta::uid(r) != meta::uid(rs))
                .map(|r| revision(r))
                .max()
                .unwrap_or(0);
            if rev <= others_max {
                let mut ann = json!({REVISION: (others_max + 1).to_string()});
                if rev > 0 {
                    let history = meta::str_at(
                        rs,
                        "/metadata/annotations/deployment.kubernetes.io~1revision-history",
                    )
                    .unwrap_or("");
                    ann[REVISION_HISTORY] = json!(if history.is_empty() {
                        rev.to_string()
                    } else {
                        format!("{history},{rev}")
                    });
                }
                return self
                    .client
                    .merge(
                        "apps",
                        "replicasets",
                        meta::namespace(rs),
                        meta::name(rs),
                        &json!({"metadata": {"annotations": ann}}),
                    )
                    .ok();
            }
            return Some(rs.clone());
        }
        if !create {
            return None;
        }
        let replicas = i64_at(d, "/spec/replicas").unwrap_or(1);
        let (surge, _) = fenceposts(d);
        let mut rs_template = template.clone();
        rs_template["metadata"]["labels"][POD_TEMPLATE_HASH] = json!(hash);
        let mut labels = template
            .pointer("/metadata/labels")
            .cloned()
            .unwrap_or_else(|| json!({}));
        labels[POD_TEMPLATE_HASH] = json!(hash);
        let mut selector = d
            .pointer("/spec/selector")
            .cloned()
            .unwrap_or_else(|| json!({}));
        selector["matchLabels"][POD_TEMPLATE_HASH] = json!(hash);
        let mut annotations = json!({});
        if let Some(a) = d
            .pointer("/metadata/annotations")
            .and_then(Value::as_object)
        {
            for (k, v) in a
                .iter()
                .filter(|(k, _)| !SKIP_ANNOTATIONS.contains(&k.as_str()))
            {
                annotations[k] = v.clone();
            }
        }
        annotations[REVISION] = json!((max_old + 1).to_string());
        annotations[DESIRED_REPLICAS] = json!(replicas.to_string());
        annotations[MAX_REPLICAS] = json!((replicas + surge).to_string());
        let mut spec = json!({"replicas": initial, "selector": selector, "template": rs_template});
        if let Some(m) = d.pointer("/spec/minReadySeconds") {
            spec["minReadySeconds"] = m.clone();
        }
        let rs = json!({
            "apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": format!("{}-{}", meta::name(d), hash), "namespace": meta::namespace(d), "labels": labels, "annotations": annotations,
                         "ownerReferences": [util::controller_ref(d, "apps/v1", "Deployment")]},
            "spec": spec,
        });
        match self
            .client
            .create("apps", "replicasets", meta::namespace(d), rs)
        {
            Ok(created) => {
                if initial > 0 {
                    self.recorder.record(
                        d,
                        EventKind::Normal,
                        "ScalingReplicaSet",
                        &format!(
                            "Scaled up replica set {} from 0 to {initial}",
                            meta::name(&created)
                        ),
                    );
                }
                Some(created)
            }
            Err(e) => {
                self.recorder.record(
                    d,
                    EventKind::Warning,
                    "ReplicaSetCreateError",
                    &format!(
                        "Failed to create new replica set {:?}: {}",
                        format!("{}-{}", meta::name(d), hash),
                        e.message
                    ),
                );
                None
            }
        }
    }

    /// Old ReplicaSets beyond revisionHistoryLimit that run nothing are deleted, oldest first.
    fn cleanup(&self, d: &Value, olds: &[Arc<Value>]) {
        let limit = i64_at(d, "/spec/revisionHistoryLimit").unwrap_or(10).max(0) as usize;
        let idle: Vec<&Arc<Value>> = olds
            .iter()
            .filter(|r| {
                spec_replicas(r) == 0 && status_of(r, "replicas") == 0 && !meta::is_deleting(r)
            })
            .collect();
        if idle.len() > limit {
            let mut by_rev = idle;
            by_rev.sort_by_key(|r| revision(r));
            for r in &by_rev[..by_rev.len() - limit] {
                let _ = self.client.delete(
                    "apps",
                    "replicasets",
                    meta::namespace(r),
                    meta::name(r),
                    None,
                );
            }
        }
    }
}

impl Reconciler for DeploymentController {
    fn client(&self) -> &Internal {
        &self.client
    }

    fn watches(&self) -> Watches {
        Watches {
            group: "apps",
            plural: "deployments",
            kind: "Deployment",
            children: &[("apps", "replicasets")],
            selects_pods: None,
        }
    }

    fn reconcile(&mut self, (ns, name): &Key) -> Option<Duration> {
        let d = self.client.get("apps", "deployments", ns, name)?;
        if meta::is_deleting(&d) {
            return None;
        }
        let replicas = i64_at(&d, "/spec/replicas").unwrap_or(1);
        let paused = d.pointer("/spec/paused") == Some(&json!(true));
        let now = self.client.clock().now_rfc3339();
        let recreate = meta::str_at(&d, "/spec/strategy/type") == Some("Recreate");
        let (surge, max_unavailable) = fenceposts(&d);
        let rss = self.replica_sets(&d);
        let mut status = d.get("status").cloned().unwrap_or_else(|| json!({}));
        let had_progressing = util::condition(&d, "Progressing").is_some();
        let deadline = i64_at(&d, "/spec/progressDeadlineSeconds").filter(|s| *s < i32::MAX as i64);

        // The new ReplicaSet: Recreate creates it only once the old pods are gone.
        let old_running = |rss: &[Arc<Value>], new_uid: &str| {
            rss.iter().any(|r| {
                meta::uid(r) != new_uid && (spec_replicas(r) > 0 || status_of(r, "replicas") > 0)
            })
        };
        let existing_new = self.new_replica_set(&d, &rss, false, 0);
        let new_uid = existing_new
            .as_ref()
            .map(|r| meta::uid(r).to_string())
            .unwrap_or_default();
        let mut new_rs = existing_new.clone();
        let mut created = false;
        if new_rs.is_none() && !paused && !(recreate && old_running(&rss, "")) {
            let total: i64 = rss.iter().map(|r| spec_replicas(r)).sum();
            let initial = if recreate || rss.is_empty() {
                replicas
            } else {
                (replicas + surge - total).max(0).min(replicas)
            };
            new_rs = self.new_replica_set(&d, &rss, true, initial);
            created = new_rs.is_some();
            if created && deadline.is_some() {
                set_condition(
                    &mut status,
                    "Progressing",
                    "True",
                    "NewReplicaSetCreated",
                    &format!(
                        "Created new replica set {:?}",
                        meta::name(new_rs.as_ref().unwrap())
                    ),
                    false,
                    &now,
                );
            }
        } else if let Some(rs) = &new_rs {
            if !had_progressing && deadline.is_some() {
                set_condition(
                    &mut status,
                    "Progressing",
                    "True",
                    "FoundNewReplicaSet",
                    &format!("Found new replica set {:?}", meta::name(rs)),
                    false,
                    &now,
                );
            }
        }
        let new_uid = new_rs
            .as_ref()
            .map(|r| meta::uid(r).to_string())
            .unwrap_or(new_uid);
        let olds: Vec<Arc<Value>> = rss
            .iter()
            .filter(|r| meta::uid(r) != new_uid)
            .cloned()
            .collect();

        // Scale.
        if !paused && !created {
            if recreate {
                for o in &olds {
                    self.scale_rs(&d, o, 0);
                }
                if let Some(n) = &new_rs {
                    if !old_running(&self.replica_sets(&d), &new_uid) || spec_replicas(n) > 0 {
                        self.scale_rs(&d, n, replicas);
                    }
                }
            } else if let Some(n) = &new_rs {
                let old_counts: Vec<(i64, i64)> = olds
                    .iter()
                    .map(|o| (spec_replicas(o), status_of(o, "availableReplicas")))
                    .collect();
                let (new_target, old_targets) = rolling_step(
                    replicas,
                    surge,
                    max_unavailable,
                    (
                        spec_replicas(n),
                        status_of(n, "availableReplicas").min(spec_replicas(n)),
                    ),
                    &old_counts,
                );
                self.scale_rs(&d, n, new_target);
                for (o, t) in olds.iter().zip(old_targets) {
                    self.scale_rs(&d, o, t);
                }
            }
        }
        if let Some(rev) = new_rs.as_ref().map(|r| revision(r)).filter(|r| *r > 0) {
            if meta::str_at(
                &d,
                "/metadata/annotations/deployment.kubernetes.io~1revision",
            ) != Some(rev.to_string().as_str())
            {
                // Through the status subresource, as the deployment controller's UpdateStatus
                // writes its annotations (its status strategy keeps them).
                let _ = self.client.merge_status(
                    "apps",
                    "deployments",
                    ns,
                    name,
                    &json!({"metadata": {"annotations": {REVISION: rev.to_string()}}}),
                );
            }
        }

        // Status, from the ReplicaSets as they are now; but the sync that created the new
        // ReplicaSet counts it as its create returned it, as upstream's `getNewReplicaSet`
        // hands the created object to `syncRolloutStatus` (sync.go). A re-list could already
        // see its first pod, which made the Progressing reason depend on thread timing.
        let rss = match new_rs.as_ref().filter(|_| created) {
            Some(fresh) => {
                let mut listed = self.replica_sets(&d);
                listed.retain(|r| meta::uid(r) != meta::uid(fresh));
                listed.push(fresh.clone());
                listed
            }
            None => self.replica_sets(&d),
        };
        let new_rs = rss.iter().find(|r| meta::uid(r) == new_uid).cloned();
        let sum = |f: &str| rss.iter().map(|r| status_of(r, f)).sum::<i64>();
        let updated = new_rs
            .as_ref()
            .map(|r| status_of(r, "replicas"))
            .unwrap_or(0);
        let available = sum("availableReplicas");
        let old_status = status.clone();
        status["observedGeneration"] = json!(i64_at(&d, "/metadata/generation").unwrap_or(1));
        status["replicas"] = json!(sum("replicas"));
        status["updatedReplicas"] = json!(updated);
        status["readyReplicas"] = json!(sum("readyReplicas"));
        status["availableReplicas"] = json!(available);
        status["unavailableReplicas"] = json!(unavailable_replicas(&rss));
        status["terminatingReplicas"] = json!(sum("terminatingReplicas"));
        if available >= replicas - max_unavailable.min(replicas) {
            set_condition(
                &mut status,
                "Available",
                "True",
                "MinimumReplicasAvailable",
                "Deployment has minimum availability.",
                false,
                &now,
            );
        } else {
            set_condition(
                &mut status,
                "Available",
                "False",
                "MinimumReplicasUnavailable",
                "Deployment does not have minimum availability.",
                false,
                &now,
            );
        }
        let mut requeue = None;
        let rs_name = new_rs.as_ref().map(|r| meta::name(r).to_string());
        let subject = |what: &str| match &rs_name {
            Some(n) => format!("ReplicaSet {n:?} {what}"),
            None => format!("Deployment {name:?} {what}"),
        };
        match deadline {
            None => {
                if let Some(c) = status["conditions"].as_array_mut() {
                    c.retain(|c| c["type"] != "Progressing");
                }
            }
            Some(secs) => {
                let current = status["conditions"]
                    .as_array()
                    .and_then(|c| c.iter().find(|c| c["type"] == "Progressing").cloned());
                let complete_already = current
                    .as_ref()
                    .map(|c| c["reason"] == "NewReplicaSetAvailable")
                    .unwrap_or(false)
                    && status["replicas"] == json!(updated);
                let n = |s: &Value, f: &str| s[f].as_i64().unwrap_or(0);
                let complete = updated == replicas
                    && n(&status, "replicas") == replicas
                    && available == replicas;
                let progressing = n(&status, "updatedReplicas") > n(&old_status, "updatedReplicas")
                    || n(&status, "replicas") - n(&status, "updatedReplicas")
                        < n(&old_status, "replicas") - n(&old_status, "updatedReplicas")
                    || n(&status, "readyReplicas") > n(&old_status, "readyReplicas")
                    || n(&status, "availableReplicas") > n(&old_status, "availableReplicas");
                if paused {
                    // No progress is estimated while paused.
                } else if !complete_already {
                    if complete {
                        set_condition(
                            &mut status,
                            "Progressing",
                            "True",
                            "NewReplicaSetAvailable",
                            &subject("has successfully progressed."),
                            false,
                            &now,
                        );
                    } else if progressing {
                        // Only a count that moved is progress (`DeploymentProgressing` in
                        // deployment/util/deployment_util.go): the sync that creates the new
                        // ReplicaSet keeps its NewReplicaSetCreated, and so does a rollout
                        // whose new pods never become ready (the updated count it starts from
                        // is the old ReplicaSet's).
                        set_condition(
                            &mut status,
                            "Progressing",
                            "True",
                            "ReplicaSetUpdated",
                            &subject("is progressing."),
                            true,
                            &now,
                        );
                        requeue = Some(self.timing.s(Duration::from_secs(secs as u64)));
                    } else if let Some(c) =
                        current.filter(|c| c["reason"] != "ProgressDeadlineExceeded")
                    {
                        let since = c["lastUpdateTime"]
                            .as_str()
                            .and_then(timing::parse_time)
                            .unwrap_or_else(|| self.client.clock().now());
                        let elapsed = (self.client.clock().now() - since)
                            .to_std()
                            .unwrap_or_default();
                        let limit = self.timing.s(Duration::from_secs(secs as u64));
                        if elapsed >= limit {
                            set_condition(
                                &mut status,
                                "Progressing",
                                "False",
                                "ProgressDeadlineExceeded",
                                &subject("has timed out progressing."),
                                false,
                                &now,
                            );
                        } else {
                            requeue = Some(limit - elapsed + Duration::from_millis(10));
                        }
                    }
                }
            }
        }
        if status != d.get("status").cloned().unwrap_or_else(|| json!({})) {
            let _ = self.client.merge_status(
                "apps",
                "deployments",
                ns,
                name,
                &json!({"status": status}),
            );
        }
        self.cleanup(
            &d,
            &rss.iter()
                .filter(|r| meta::uid(r) != new_uid)
                .cloned()
                .collect::<Vec<_>>(),
        );
        requeue
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apiserver::ApiServer;

    #[test]
    fn the_sync_that_creates_the_new_replica_set_says_so_and_progress_needs_a_count_to_move() {
        let api = ApiServer::new(100);
        let client = Internal::new(api.clone(), "kube-controller-manager");
        client
            .create(
                "",
                "namespaces",
                "",
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "d"}}),
            )
            .unwrap();
        let d = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}});
        client.create("apps", "deployments", "d", d).unwrap();
        let mut dc = DeploymentController::new(client.clone(), Timing::default());
        let key = ("d".to_string(), "web".to_string());
        let progressing = |c: &Internal| {
            let d = c.get("apps", "deployments", "d", "web").unwrap();
            let conds = d["status"]["conditions"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            conds
                .into_iter()
                .find(|c| c["type"] == "Progressing")
                .map(|c| c["reason"].as_str().unwrap_or("").to_string())
        };
        dc.reconcile(&key);
        assert_eq!(
            progressing(&client).as_deref(),
            Some("NewReplicaSetCreated")
        );
        // The ReplicaSet controller made its pod: the updated count moves, which is progress.
        let rs = client.list("apps", "replicasets", Some("d"), &|_| true);
        assert_eq!(rs.len(), 1);
        client
            .merge_status(
                "apps",
                "replicasets",
                "d",
                meta::name(&rs[0]),
                &json!({"status": {"replicas": 1}}),
            )
            .unwrap();
        dc.reconcile(&key);
        assert_eq!(progressing(&client).as_deref(), Some("ReplicaSetUpdated"));
    }

    #[test]
    fn unavailable_replicas_count_the_replica_sets_desired_replicas_surge_included() {
        let rs = |spec: i64, available: i64| {
            Arc::new(
                json!({"spec": {"replicas": spec}, "status": {"availableReplicas": available}}),
            )
        };
        // A Deployment of 3 mid-rollout: 3 old pods and 1 surged new one, none available.
        assert_eq!(unavailable_replicas(&[rs(3, 0), rs(1, 0)]), 4);
        assert_eq!(unavailable_replicas(&[rs(2, 2), rs(2, 1)]), 1);
        // Scaling down: more available than desired is 0, not negative.
        assert_eq!(unavailable_replicas(&[rs(1, 3)]), 0);
    }

    #[test]
    fn fenceposts_follow_the_defaults_and_rounding() {
        let d = |r: Value| json!({"spec": {"replicas": 4, "strategy": {"type": "RollingUpdate", "rollingUpdate": r}}});
        assert_eq!(fenceposts(&d(json!({}))), (1, 1));
        assert_eq!(
            fenceposts(&d(json!({"maxSurge": 0, "maxUnavailable": 0}))),
            (0, 1)
        );
        assert_eq!(
            fenceposts(&d(json!({"maxSurge": "50%", "maxUnavailable": "10%"}))),
            (2, 0)
        );
        assert_eq!(
            fenceposts(&json!({"spec": {"replicas": 4, "strategy": {"type": "Recreate"}}})),
            (0, 0)
        );
    }

    #[test]
    fn a_rolling_update_surges_then_trades_available_old_pods_for_new() {
        // 4 replicas, surge 1, unavailable 1; an old RS fully available.
        let (new, olds) = rolling_step(4, 1, 1, (0, 0), &[(4, 4)]);
        assert_eq!(new, 1, "surge: one new pod above the desired count");
        assert_eq!(
            olds,
            vec![3],
            "one old pod may go: 3 available stays >= 4-1"
        );
        // The new pod is not available yet: no further old pod may go.
        let (new, olds) = rolling_step(4, 1, 1, (1, 0), &[(3, 3)]);
        assert_eq!((new, olds), (2, vec![3]));
        // Once new pods are available, old ones go down to the floor (5 available, 3 needed).
        let (new, olds) = rolling_step(4, 1, 1, (2, 2), &[(3, 3)]);
        assert_eq!((new, olds), (2, vec![1]));
        // Finished: the old RS reaches zero.
        let (new, olds) = rolling_step(4, 1, 1, (4, 4), &[(1, 1)]);
        assert_eq!((new, olds), (4, vec![0]));
    }

    #[test]
    fn unavailable_old_pods_are_removed_first_and_maxunavailable_zero_keeps_capacity() {
        // Old pods that are not available cost nothing to remove.
        let (_, olds) = rolling_step(3, 0, 1, (0, 0), &[(3, 1)]);
        // 3 pods, floor 2: one may go, and an unavailable one is chosen; the available pod stays.
        assert_eq!(olds, vec![2]);
        // Every old pod unavailable: they may all go down to the floor's budget.
        let (_, olds) = rolling_step(3, 0, 1, (0, 0), &[(3, 0)]);
        assert_eq!(olds, vec![2]);
    }

    #[test]
    fn conditions_move_to_the_end_when_they_change_and_keep_transition_while_status_holds() {
        let mut st = json!({});
        set_condition(
            &mut st,
            "Progressing",
            "True",
            "NewReplicaSetCreated",
            "Created new replica set \"a\"",
            false,
            "2026-01-02T03:04:05Z",
        );
        set_condition(
            &mut st,
            "Available",
            "False",
            "MinimumReplicasUnavailable",
            "m",
            false,
            "2026-01-02T03:04:05Z",
        );
        let t0 = st["conditions"][0]["lastTransitionTime"].clone();
        set_condition(
            &mut st,
            "Progressing",
            "True",
            "NewReplicaSetAvailable",
            "ReplicaSet \"a\" has successfully progressed.",
            false,
            "2026-01-02T03:04:05Z",
        );
        assert_eq!(st["conditions"][1]["type"], "Progressing");
        assert_eq!(st["conditions"][1]["lastTransitionTime"], t0);
        let before = st.clone();
        set_condition(
            &mut st,
            "Available",
            "False",
            "MinimumReplicasUnavailable",
            "m",
            false,
            "2026-01-02T03:04:05Z",
        );
        assert_eq!(st, before, "same status and reason: untouched");
    }
}
