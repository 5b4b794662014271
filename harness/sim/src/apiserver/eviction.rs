//! POST pods/{name}/eviction, as kube-apiserver's pod eviction storage does it
//! (`pkg/registry/core/pod/storage/eviction.go`): a graceful delete that the pod's
//! PodDisruptionBudget may refuse with 429 (`check_eviction`), and the budget's
//! DisruptionAllowed condition, which the disruption controller (`controllers::disruption`,
//! which computes the budgets' status) keeps too.

use super::meta;
use super::selectors::LabelSelector;
use super::status::{ApiError, ApiResult};
use super::store::{DeleteOptions, DeleteOutcome, UpdateScope};
use super::ApiServer;
use serde_json::{json, Value};

impl ApiServer {
    /// POST pods/{name}/eviction: a graceful delete, refused with 429 when the pod's
    /// PodDisruptionBudget allows no disruption (`check_eviction`);
    /// the pod gets the DisruptionTarget condition first.
    pub fn evict_pod(&self, ns: &str, name: &str, eviction: &Value) -> ApiResult<()> {
        let rt = self.resource("", "v1", "pods")?;
        let pod = self
            .store
            .get(&rt.key(), ns, name)
            .ok_or_else(|| ApiError::not_found("", "pods", name))?;
        let phase = meta::str_at(&pod, "/status/phase").unwrap_or("Pending");
        let terminal = phase == "Succeeded" || phase == "Failed";
        // Pods that are finished, pending or already going ignore budgets (upstream canIgnorePDB).
        if !(terminal || phase == "Pending" || meta::is_deleting(&pod)) {
            let pdbs = self.covering_pdbs(ns, &pod);
            if pdbs.len() > 1 {
                return Err(ApiError::new(500, "InternalError", "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."));
            }
            if let Some(pdb) = pdbs.first() {
                if let Some(status) = check_eviction(pdb, &pod, &self.clock().now_rfc3339())? {
                    let prt = self.resource("policy", "v1", "poddisruptionbudgets")?;
                    let mut next = pdb.clone();
                    next["status"] = status;
                    self.store
                        .update(&prt, ns, meta::name(pdb), next, UpdateScope::Any, false)?;
                }
            }
        }
        if !terminal && !meta::is_deleting(&pod) {
            let mut next = (*pod).clone();
            meta::set_condition(
                &mut next,
                "DisruptionTarget",
                "True",
                Some("EvictionByEvictionAPI"),
                Some("Eviction API: evicting"),
                &self.clock().now_rfc3339(),
            );
            self.store
                .update(&rt, ns, name, next, UpdateScope::Any, false)?;
        }
        let grace = eviction
            .pointer("/deleteOptions/gracePeriodSeconds")
            .and_then(Value::as_i64);
        let opts = DeleteOptions {
            grace_period_seconds: grace,
            ..Default::default()
        };
        match self.store.delete(&rt, ns, name, &opts)? {
            DeleteOutcome::Deleted(o) => self.after_delete(&rt, &o),
            DeleteOutcome::Pending(_) => {}
        }
        Ok(())
    }

    fn covering_pdbs(&self, ns: &str, pod: &Value) -> Vec<Value> {
        let Some(rt) = self.registry.get("policy", "v1", "poddisruptionbudgets") else {
            return vec![];
        };
        let pdbs = self.store.list(&rt.key(), Some(ns), None, None, &|_| true);
        pdbs.items
            .into_iter()
            .filter(|pdb| {
                pdb.pointer("/spec/selector")
                    .and_then(|s| LabelSelector::from_json(s).ok())
                    .map(|s| s.matches(meta::labels(pod)))
                    .unwrap_or(false)
            })
            .map(|pdb| (*pdb).clone())
            .collect()
    }
}

/// DisruptionAllowed: True/SufficientPods when a disruption is allowed, else False/InsufficientPods.
pub fn update_disruption_allowed_condition(status: &mut Value, generation: i64, now: &str) {
    let allowed = status["disruptionsAllowed"].as_i64().unwrap_or(0) > 0;
    let (s, reason) = if allowed {
        ("True", "SufficientPods")
    } else {
        ("False", "InsufficientPods")
    };
    meta::set_status_condition(
        status,
        "DisruptionAllowed",
        s,
        reason,
        "",
        &[("observedGeneration", json!(generation))],
        now,
    );
    // metav1.Condition field order: lastTransitionTime, message, observedGeneration, reason, status, type.
    if let Some(c) = status["conditions"]
        .as_array_mut()
        .and_then(|a| a.iter_mut().find(|c| c["type"] == "DisruptionAllowed"))
    {
        let mut ordered = serde_json::Map::new();
        for k in [
            "lastTransitionTime",
            "message",
            "observedGeneration",
            "reason",
            "status",
            "type",
        ] {
            ordered.insert(k.into(), c[k].clone());
        }
        *c = Value::Object(ordered);
    }
}

/// What an eviction of `pod` does to the budget `pdb` (the one PDB covering it): Ok(Some(new
/// status)) to write before deleting, Ok(None) to delete without touching the budget, Err(429)
/// when it would violate the budget.
/// `now`: the cluster clock's time (disruptedPods, the condition).
pub fn check_eviction(pdb: &Value, pod: &Value, now: &str) -> Result<Option<Value>, ApiError> {
    let name = meta::name(pdb);
    let st = |f: &str| {
        meta::at(pdb, &format!("/status/{f}"))
            .and_then(Value::as_i64)
            .unwrap_or(0)
    };
    if st("observedGeneration")
        < meta::at(pdb, "/metadata/generation")
            .and_then(Value::as_i64)
            .unwrap_or(1)
    {
        let mut e = ApiError::too_many_requests(
            "Cannot evict pod as it would violate the pod's disruption budget.",
        );
        e.details = Some(
            json!({"causes": [{"reason": "DisruptionBudget", "message": format!("The disruption budget {name} is still being processed by the server.")}], "retryAfterSeconds": 10}),
        );
        return Err(e);
    }
    // An unready pod may go while the budget is met (unhealthyPodEvictionPolicy IfHealthyBudget).
    let policy = meta::str_at(pdb, "/spec/unhealthyPodEvictionPolicy").unwrap_or("IfHealthyBudget");
    if meta::condition_status(pod, "Ready") != Some("True")
        && (policy == "AlwaysAllow"
            || (st("currentHealthy") >= st("desiredHealthy") && st("desiredHealthy") > 0))
    {
        return Ok(None);
    }
    if st("disruptionsAllowed") <= 0 {
        let mut e = ApiError::too_many_requests(
            "Cannot evict pod as it would violate the pod's disruption budget.",
        );
        e.details = Some(
            json!({"causes": [{"reason": "DisruptionBudget", "message": format!("The disruption budget {name} needs {} healthy pods and has {} currently", st("desiredHealthy"), st("currentHealthy"))}]}),
        );
        return Err(e);
    }
    let mut status = pdb.get("status").cloned().unwrap_or_else(|| json!({}));
    let allowed = st("disruptionsAllowed") - 1;
    status["disruptionsAllowed"] = json!(allowed);
    if allowed == 0 {
        update_disruption_allowed_condition(&mut status, st("observedGeneration"), now);
    }
    if !status["disruptedPods"].is_object() {
        status["disruptedPods"] = json!({});
    }
    status["disruptedPods"][meta::name(pod)] = json!(now);
    Ok(Some(status))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pdb(spec: Value, status: Value) -> Value {
        json!({"metadata": {"name": "web", "generation": 1}, "spec": spec, "status": status})
    }
    fn pod(ready: bool) -> Value {
        json!({"metadata": {"name": "p"}, "status": {"conditions": [{"type": "Ready", "status": if ready {"True"} else {"False"}}]}})
    }

    #[test]
    fn an_eviction_is_refused_with_the_apiservers_message_then_allowed() {
        let blocked = pdb(
            json!({"minAvailable": 2}),
            json!({"observedGeneration": 1, "currentHealthy": 2, "desiredHealthy": 2, "disruptionsAllowed": 0}),
        );
        let e = check_eviction(&blocked, &pod(true), "2026-01-02T03:04:05Z").unwrap_err();
        assert_eq!((e.code, e.reason), (429, "TooManyRequests"));
        assert_eq!(
            e.message,
            "Cannot evict pod as it would violate the pod's disruption budget."
        );
        assert_eq!(
            e.details.unwrap()["causes"][0]["message"],
            "The disruption budget web needs 2 healthy pods and has 2 currently"
        );
        let open = pdb(
            json!({"minAvailable": 2}),
            json!({"observedGeneration": 1, "currentHealthy": 3, "desiredHealthy": 2, "disruptionsAllowed": 1}),
        );
        let st = check_eviction(&open, &pod(true), "2026-01-02T03:04:05Z")
            .unwrap()
            .expect("budget decremented");
        assert_eq!(st["disruptionsAllowed"], 0);
        assert!(st["disruptedPods"]["p"].is_string());
        assert_eq!(st["conditions"][0]["reason"], "InsufficientPods");
        // An unready pod goes without spending the budget while the budget is met.
        assert_eq!(
            check_eviction(&blocked, &pod(false), "2026-01-02T03:04:05Z").unwrap(),
            None
        );
    }
}
