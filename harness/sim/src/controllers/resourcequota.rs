//! kube-controller-manager's resource quota controller (pkg/controller/resourcequota/
//! resource_quota_controller.go `syncResourceQuota`, the evaluators of pkg/quota/v1/evaluator/
//! core and apiserver's generic object counter): a quota's status carries its hard limits and
//! the usage of each resource it limits, written with UpdateStatus when either changed.
//!
//! Measured: `pods`/`count/pods` and the pods' `cpu`, `memory`, `requests.*` and `limits.*`
//! (non-terminal pods; the containers' sum, at least the largest init container's, plus
//! overhead), `services`, `services.loadbalancers`, `services.nodeports`, `persistentvolumeclaims`
//! and `requests.storage`, the legacy object counts (`configmaps`, `secrets`,
//! `replicationcontrollers`, `resourcequotas`) and `count/<resource>[.<group>]` of any served
//! resource; the scopes `Terminating`, `NotTerminating`, `BestEffort` and `NotBestEffort`.
//! **Simplified**: other scopes and scope selectors leave a quota's pod usage unmeasured, and the
//! ResourceQuota admission plugin (which charges a create against the quota at once) is not
//! modelled, so usage follows a create only after this loop has seen it.

use super::queue::{key_of, Key, Reconciler, Watches};
use crate::apiserver::meta;
use crate::apiserver::store::StoreEvent;
use crate::apiserver::table::{canonical_quantity, sum_quantities};
use crate::internal::Internal;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::time::Duration;

pub struct QuotaController {
    client: Internal,
}

impl QuotaController {
    pub fn new(client: Internal) -> Self {
        QuotaController { client }
    }
}

fn is_terminal(pod: &Value) -> bool {
    matches!(
        meta::str_at(pod, "/status/phase"),
        Some("Succeeded" | "Failed")
    )
}

/// The requests or limits of a pod (`resourcehelper.PodRequests`/`PodLimits`): per resource the
/// containers' sum, at least the largest init container's, plus the pod overhead.
fn pod_resources(pod: &Value, which: &str) -> BTreeMap<String, String> {
    let list = |c: &Value| -> Vec<(String, String)> {
        c.pointer(&format!("/resources/{which}"))
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                    .collect()
            })
            .unwrap_or_default()
    };
    let containers = |key: &str| {
        pod.pointer(&format!("/spec/{key}"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let mut sums: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for c in containers("containers") {
        for (k, v) in list(&c) {
            sums.entry(k).or_default().push(v);
        }
    }
    let mut out: BTreeMap<String, String> = sums
        .into_iter()
        .filter_map(|(k, vs)| Some((k, sum_quantities(vs.iter().map(String::as_str))?)))
        .collect();
    for c in containers("initContainers") {
        for (k, v) in list(&c) {
            let bigger = match out.get(&k) {
                Some(cur) => greater(&v, cur),
                None => true,
            };
            if bigger {
                if let Some(v) = canonical_quantity(&v) {
                    out.insert(k, v);
                }
            }
        }
    }
    if let Some(overhead) = pod.pointer("/spec/overhead").and_then(Value::as_object) {
        for (k, v) in overhead {
            let Some(v) = v.as_str() else { continue };
            let total = match out.get(k) {
                Some(cur) => sum_quantities([cur.as_str(), v]),
                None => canonical_quantity(v),
            };
            if let Some(t) = total {
                out.insert(k.clone(), t);
            }
        }
    }
    out
}

/// Whether quantity `a` exceeds `b` (compared through their difference's sign).
fn greater(a: &str, b: &str) -> bool {
    let neg = format!("-{}", b.trim_start_matches('+'));
    sum_quantities([a, neg.as_str()]).is_some_and(|d| d != "0" && !d.starts_with('-'))
}

/// `podMatchesScopeFunc` for the scopes modelled; `None` for another scope.
fn pod_in_scope(pod: &Value, scope: &str) -> Option<bool> {
    let terminating = pod
        .pointer("/spec/activeDeadlineSeconds")
        .is_some_and(|v| v.as_i64().is_some_and(|n| n >= 0));
    let best_effort = ["containers", "initContainers"].iter().all(|k| {
        pod.pointer(&format!("/spec/{k}"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .all(|c| {
                ["requests", "limits"].iter().all(|w| {
                    c.pointer(&format!("/resources/{w}"))
                        .and_then(Value::as_object)
                        .is_none_or(|m| !m.keys().any(|k| k == "cpu" || k == "memory"))
                })
            })
    });
    match scope {
        "Terminating" => Some(terminating),
        "NotTerminating" => Some(!terminating),
        "BestEffort" => Some(best_effort),
        "NotBestEffort" => Some(!best_effort),
        _ => None,
    }
}

/// The (group, plural) a `count/<resource>[.<group>]` names.
fn counted(name: &str) -> Option<(String, String)> {
    let r = name.strip_prefix("count/")?;
    Some(match r.split_once('.') {
        Some((plural, group)) => (group.to_string(), plural.to_string()),
        None => (String::new(), r.to_string()),
    })
}

impl QuotaController {
    /// The usage of each resource of `hard` this model measures, in namespace `ns`.
    fn usage(
        &self,
        ns: &str,
        hard: &Map<String, Value>,
        scopes: &[String],
        selected: bool,
    ) -> BTreeMap<String, String> {
        let mut used = BTreeMap::new();
        let count = |group: &str, plural: &str, keep: &dyn Fn(&Value) -> bool| {
            self.client
                .list(group, plural, Some(ns), keep)
                .len()
                .to_string()
        };
        let pods_measurable =
            !selected && scopes.iter().all(|s| pod_in_scope(&json!({}), s).is_some());
        let live_pods = || {
            self.client.list("", "pods", Some(ns), &|p| {
                !is_terminal(p) && scopes.iter().all(|s| pod_in_scope(p, s).unwrap_or(false))
            })
        };
        for name in hard.keys() {
            let value = match name.as_str() {
                "pods" | "count/pods" if pods_measurable => live_pods().len().to_string(),
                "cpu"
                | "memory"
                | "ephemeral-storage"
                | "requests.cpu"
                | "requests.memory"
                | "requests.ephemeral-storage"
                | "limits.cpu"
                | "limits.memory"
                | "limits.ephemeral-storage"
                    if pods_measurable =>
                {
                    let (which, resource) = match name.split_once('.') {
                        Some((w, r)) => (w, r),
                        None => ("requests", name.as_str()),
                    };
                    let pods = live_pods();
                    let per_pod: Vec<String> = pods
                        .iter()
                        .filter_map(|p| pod_resources(p, which).remove(resource))
                        .collect();
                    match sum_quantities(per_pod.iter().map(String::as_str)) {
                        Some(v) => v,
                        None => continue,
                    }
                }
                _ if !scopes.is_empty() || selected => continue,
                "services" | "count/services" => count("", "services", &|_| true),
                "services.loadbalancers" => count("", "services", &|s| {
                    meta::str_at(s, "/spec/type") == Some("LoadBalancer")
                }),
                "services.nodeports" => self
                    .client
                    .list("", "services", Some(ns), &|s| {
                        matches!(
                            meta::str_at(s, "/spec/type"),
                            Some("NodePort" | "LoadBalancer")
                        )
                    })
                    .iter()
                    .map(|s| {
                        s.pointer("/spec/ports")
                            .and_then(Value::as_array)
                            .map(|ps| ps.iter().filter(|p| p.get("nodePort").is_some()).count())
                            .unwrap_or(0)
                    })
                    .sum::<usize>()
                    .to_string(),
                "persistentvolumeclaims" | "count/persistentvolumeclaims" => {
                    count("", "persistentvolumeclaims", &|_| true)
                }
                "requests.storage" => {
                    let claims = self
                        .client
                        .list("", "persistentvolumeclaims", Some(ns), &|_| true);
                    let sizes: Vec<String> = claims
                        .iter()
                        .filter_map(|c| {
                            meta::str_at(c, "/spec/resources/requests/storage").map(String::from)
                        })
                        .collect();
                    match sum_quantities(sizes.iter().map(String::as_str)) {
                        Some(v) => v,
                        None => continue,
                    }
                }
                "configmaps" | "secrets" | "replicationcontrollers" | "resourcequotas" => {
                    count("", name, &|_| true)
                }
                other => match counted(other) {
                    Some((group, plural))
                        if self
                            .client
                            .rt(&group, &plural)
                            .is_ok_and(|rt| rt.namespaced) =>
                    {
                        count(&group, &plural, &|_| true)
                    }
                    _ => continue,
                },
            };
            used.insert(name.clone(), value);
        }
        used
    }
}

/// Quantities equal by value (`quota.Equals`), keys and all.
fn same_quantities(a: Option<&Value>, b: &BTreeMap<String, String>) -> bool {
    let Some(a) = a.and_then(Value::as_object) else {
        return false;
    };
    a.len() == b.len()
        && b.iter().all(|(k, v)| {
            a.get(k)
                .and_then(Value::as_str)
                .and_then(canonical_quantity)
                .as_deref()
                == canonical_quantity(v).as_deref()
        })
}

impl Reconciler for QuotaController {
    fn client(&self) -> &Internal {
        &self.client
    }

    fn watches(&self) -> Watches {
        Watches {
            group: "",
            plural: "resourcequotas",
            kind: "ResourceQuota",
            children: &[],
            selects_pods: None,
        }
    }

    /// A quota's own changes, and any change in a namespace with quotas (the replenishment
    /// controller's informers).
    fn keys_of(&self, ev: &StoreEvent, out: &mut Vec<Key>) {
        if ev.key.group.is_empty() && ev.key.plural == "resourcequotas" {
            out.push(key_of(&ev.object));
            return;
        }
        let ns = meta::namespace(&ev.object);
        if ns.is_empty() || (ev.key.group.is_empty() && ev.key.plural == "events") {
            return;
        }
        for q in self.client.list("", "resourcequotas", Some(ns), &|_| true) {
            let k = key_of(&q);
            if !out.contains(&k) {
                out.push(k);
            }
        }
    }

    fn reconcile(&mut self, (ns, name): &Key) -> Option<Duration> {
        let quota = self.client.get("", "resourcequotas", ns, name)?;
        let hard = quota
            .pointer("/spec/hard")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let scopes: Vec<String> = quota
            .pointer("/spec/scopes")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(String::from)
            .collect();
        let selected = quota
            .pointer("/spec/scopeSelector")
            .is_some_and(|s| !s.is_null());
        let mut used: BTreeMap<String, String> = quota
            .pointer("/status/used")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .filter(|(k, _)| hard.contains_key(*k))
                    .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                    .collect()
            })
            .unwrap_or_default();
        used.extend(self.usage(ns, &hard, &scopes, selected));
        let hard_canon: BTreeMap<String, String> = hard
            .iter()
            .filter_map(|(k, v)| Some((k.clone(), canonical_quantity(v.as_str()?)?)))
            .collect();
        let dirty = !same_quantities(quota.pointer("/status/hard"), &hard_canon)
            || quota.pointer("/status/used").is_none_or(Value::is_null)
            || !same_quantities(quota.pointer("/status/used"), &used);
        if !dirty {
            return None;
        }
        let mut next = (*quota).clone();
        next["status"] = json!({"hard": hard_canon, "used": used});
        // A conflict brings the newer version's event, and the key, back.
        let _ = self
            .client
            .update_status("", "resourcequotas", ns, name, next);
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pod_requests_sum_containers_and_cover_init_containers() {
        let pod = json!({"spec": {
            "containers": [{"resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}},
                           {"resources": {"requests": {"cpu": "200m"}}}],
            "initContainers": [{"resources": {"requests": {"cpu": "1", "memory": "32Mi"}}}],
            "overhead": {"cpu": "10m"}}});
        let r = pod_resources(&pod, "requests");
        assert_eq!(r["cpu"], "1010m");
        assert_eq!(r["memory"], "64Mi");
        assert!(greater("1", "300m") && !greater("300m", "1"));
    }

    #[test]
    fn scopes_and_counted_resources() {
        let pod = json!({"spec": {"activeDeadlineSeconds": 30, "containers": [{}]}});
        assert_eq!(pod_in_scope(&pod, "Terminating"), Some(true));
        assert_eq!(pod_in_scope(&pod, "BestEffort"), Some(true));
        assert_eq!(pod_in_scope(&pod, "PriorityClass"), None);
        assert_eq!(
            counted("count/deployments.apps"),
            Some(("apps".into(), "deployments".into()))
        );
        assert_eq!(
            counted("count/secrets"),
            Some((String::new(), "secrets".into()))
        );
        assert_eq!(counted("pods"), None);
    }
}
