//! The disruption controller: PodDisruptionBudget status (expectedPods, currentHealthy,
//! desiredHealthy, disruptionsAllowed, disruptedPods, the DisruptionAllowed condition), which
//! the API server's `pods/eviction` decides against (`apiserver::eviction`).

use super::queue::{Key, Reconciler, Watches};
use super::util::{self, i64_at, int_or_percent};
use crate::apiserver::eviction;
use crate::apiserver::meta;
use crate::apiserver::selectors::LabelSelector;
use crate::internal::Internal;
use crate::timing::{self, Timing};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::time::Duration;

/// How long an evicted pod stays in `disruptedPods` waiting for its deletion (upstream: 2 min).
const DELETION_TIMEOUT: Duration = Duration::from_secs(120);

pub struct DisruptionController {
    client: Internal,
    timing: Timing,
}

impl DisruptionController {
    pub fn new(client: Internal, timing: Timing) -> Self {
        DisruptionController { client, timing }
    }

    /// The replicas of the workload controlling `pod` (a Deployment through its ReplicaSet), by
    /// controller uid so each counts once.
    fn controller_scale(&self, pod: &Value) -> Option<(String, i64)> {
        let r = util::controller_of(pod)?;
        let ns = meta::namespace(pod);
        let name = r["name"].as_str()?;
        let (group, plural) = match r["kind"].as_str()? {
            "ReplicaSet" => ("apps", "replicasets"),
            "StatefulSet" => ("apps", "statefulsets"),
            "ReplicationController" => ("", "replicationcontrollers"),
            _ => return None,
        };
        let owner = self.client.get(group, plural, ns, name)?;
        if let Some(d) = util::controller_of(&owner).filter(|d| d["kind"] == "Deployment") {
            let dep = self
                .client
                .get("apps", "deployments", ns, d["name"].as_str()?)?;
            return Some((
                meta::uid(&dep).to_string(),
                i64_at(&dep, "/spec/replicas").unwrap_or(1),
            ));
        }
        Some((
            meta::uid(&owner).to_string(),
            i64_at(&owner, "/spec/replicas").unwrap_or(1),
        ))
    }
}

fn selector_of(pdb: &Value) -> LabelSelector {
    pdb.pointer("/spec/selector")
        .and_then(|s| LabelSelector::from_json(s).ok())
        .unwrap_or_else(LabelSelector::nothing)
}

/// (expectedPods basis given, desiredHealthy) from the PDB spec: an integer minAvailable counts
/// pods; percentages and maxUnavailable are taken against the workloads' scale.
pub fn desired_healthy(pdb: &Value, expected: i64) -> i64 {
    if let Some(min) = pdb.pointer("/spec/minAvailable") {
        return int_or_percent(Some(min), "0", expected, true);
    }
    if let Some(max) = pdb.pointer("/spec/maxUnavailable") {
        return (expected - int_or_percent(Some(max), "0", expected, true)).max(0);
    }
    expected
}

impl Reconciler for DisruptionController {
    fn client(&self) -> &Internal {
        &self.client
    }

    fn watches(&self) -> Watches {
        Watches {
            group: "policy",
            plural: "poddisruptionbudgets",
            kind: "PodDisruptionBudget",
            children: &[],
            selects_pods: Some(|o| Some(selector_of(o))),
        }
    }

    fn reconcile(&mut self, (ns, name): &Key) -> Option<Duration> {
        let pdb = self
            .client
            .get("policy", "poddisruptionbudgets", ns, name)?;
        let sel = selector_of(&pdb);
        let pods = self
            .client
            .list("", "pods", Some(ns), &|p| sel.matches(meta::labels(p)));
        let int_min = pdb
            .pointer("/spec/minAvailable")
            .map(Value::is_number)
            .unwrap_or(false);
        let expected = if int_min {
            pods.len() as i64
        } else {
            let mut scales: BTreeMap<String, i64> = BTreeMap::new();
            let mut uncontrolled = 0;
            for p in &pods {
                match self.controller_scale(p) {
                    Some((uid, n)) => {
                        scales.insert(uid, n);
                    }
                    None => uncontrolled += 1,
                }
            }
            scales.values().sum::<i64>() + uncontrolled
        };
        // Evicted pods not yet deleted are not healthy; entries expire after the timeout.
        let timeout = self.timing.s(DELETION_TIMEOUT);
        let now = self.client.clock().now();
        let mut disrupted = serde_json::Map::new();
        let mut recheck = None;
        for (pod, at) in pdb
            .pointer("/status/disruptedPods")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            let live = pods
                .iter()
                .any(|p| meta::name(p) == pod && !meta::is_deleting(p));
            let age = at
                .as_str()
                .and_then(timing::parse_time)
                .map(|t| (now - t).to_std().unwrap_or_default())
                .unwrap_or(timeout);
            if live && age < timeout {
                disrupted.insert(pod.clone(), at.clone());
                recheck = Some(timeout - age);
            }
        }
        let healthy = pods
            .iter()
            .filter(|p| {
                util::is_pod_ready(p)
                    && !meta::is_deleting(p)
                    && !disrupted.contains_key(meta::name(p))
            })
            .count() as i64;
        let desired = desired_healthy(&pdb, expected);
        let allowed = (healthy - desired).max(0);
        let generation = i64_at(&pdb, "/metadata/generation").unwrap_or(1);
        let mut status = json!({
            "observedGeneration": generation, "expectedPods": expected, "currentHealthy": healthy,
            "desiredHealthy": desired, "disruptionsAllowed": allowed,
            "conditions": pdb.pointer("/status/conditions").cloned().unwrap_or_else(|| json!([])),
        });
        if !disrupted.is_empty() {
            status["disruptedPods"] = Value::Object(disrupted);
        }
        eviction::update_disruption_allowed_condition(
            &mut status,
            generation,
            &self.client.clock().now_rfc3339(),
        );
        let current = pdb.get("status").cloned().unwrap_or_else(|| json!({}));
        if current != status {
            // Merge patch: a removed disruptedPods map must be deleted explicitly.
            let mut patch = status.clone();
            if current.get("disruptedPods").is_some() && status.get("disruptedPods").is_none() {
                patch["disruptedPods"] = Value::Null;
            }
            let _ = self.client.merge_status(
                "policy",
                "poddisruptionbudgets",
                ns,
                name,
                &json!({"status": patch}),
            );
        }
        recheck
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pdb(spec: Value, status: Value) -> Value {
        json!({"metadata": {"name": "web", "generation": 1}, "spec": spec, "status": status})
    }

    #[test]
    fn desired_healthy_from_min_available_or_max_unavailable() {
        assert_eq!(
            desired_healthy(&pdb(json!({"minAvailable": 2}), json!({})), 3),
            2
        );
        assert_eq!(
            desired_healthy(&pdb(json!({"minAvailable": "50%"}), json!({})), 3),
            2,
            "percentages round up"
        );
        assert_eq!(
            desired_healthy(&pdb(json!({"maxUnavailable": 1}), json!({})), 3),
            2
        );
        assert_eq!(
            desired_healthy(&pdb(json!({"maxUnavailable": "50%"}), json!({})), 3),
            1
        );
    }
}
