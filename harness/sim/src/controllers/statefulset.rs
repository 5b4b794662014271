//! The StatefulSet controller: pods `<set>-<ordinal>` with stable hostnames, one PVC per
//! volumeClaimTemplate and ordinal (`<template>-<set>-<ordinal>`, provisioned like any claim, so
//! the simulated Longhorn binds them and storage faults reach StatefulSets), OrderedReady or
//! Parallel management, ControllerRevisions with current/update revisions, and the rolling
//! update (highest ordinal first, honouring `partition`).

use super::queue::{Key, Reconciler, Watches};
use super::util::{self, i64_at};
use crate::apiserver::meta;
use crate::apiserver::resources::ResourceKey;
use crate::events::{EventKind, EventRecorder};
use crate::internal::Internal;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

pub const REVISION_LABEL: &str = "controller-revision-hash";
const POD_NAME_LABEL: &str = "statefulset.kubernetes.io/pod-name";
const POD_INDEX_LABEL: &str = "apps.kubernetes.io/pod-index";

pub struct StatefulSetController {
    client: Internal,
    recorder: EventRecorder,
}

impl StatefulSetController {
    pub fn new(client: Internal) -> Self {
        let recorder = EventRecorder::new(client.clone(), "statefulset-controller", None);
        StatefulSetController { client, recorder }
    }
}

/// The ordinal of a set's pod from its name, if it is one.
pub fn ordinal_of(set: &str, pod: &str) -> Option<i64> {
    pod.strip_prefix(set)?.strip_prefix('-')?.parse().ok()
}

/// The claim name of template `tpl` for ordinal `i`.
pub fn claim_name(tpl: &str, set: &str, i: i64) -> String {
    format!("{tpl}-{set}-{i}")
}

fn is_running_ready(pod: &Value) -> bool {
    meta::str_at(pod, "/status/phase") == Some("Running")
        && util::is_pod_ready(pod)
        && !meta::is_deleting(pod)
}

impl StatefulSetController {
    /// The ControllerRevision of the current template (created when new); its name is the
    /// revision label value of pods made from it.
    fn revision(&self, set: &Value, existing: &[Arc<Value>]) -> String {
        let template = set
            .pointer("/spec/template")
            .cloned()
            .unwrap_or_else(|| json!({}));
        // The revision's data is the patch that replaces the template (`getPatch`); its name
        // hashes that patch and the collision count (`newRevision`, `HashControllerRevision`).
        let mut data_template = template.clone();
        data_template["$patch"] = json!("replace");
        let data = json!({"spec": {"template": data_template}});
        let collisions = set
            .pointer("/status/collisionCount")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        let name = format!(
            "{}-{}",
            meta::name(set),
            util::controller_revision_hash(&data, Some(collisions))
        );
        if existing.iter().any(|r| meta::name(r) == name) {
            return name;
        }
        let number = existing
            .iter()
            .filter_map(|r| r["revision"].as_i64())
            .max()
            .unwrap_or(0)
            + 1;
        let mut labels = set
            .pointer("/spec/selector/matchLabels")
            .cloned()
            .unwrap_or_else(|| json!({}));
        labels[REVISION_LABEL] = json!(name.clone());
        let rev = json!({
            "apiVersion": "apps/v1", "kind": "ControllerRevision",
            "metadata": {"name": name, "namespace": meta::namespace(set), "labels": labels, "ownerReferences": [util::controller_ref(set, "apps/v1", "StatefulSet")]},
            "data": data,
            "revision": number,
        });
        let _ = self
            .client
            .create("apps", "controllerrevisions", meta::namespace(set), rev);
        name
    }

    fn create_pod(&self, set: &Value, i: i64, revision: &str) {
        let (ns, sname) = (meta::namespace(set), meta::name(set));
        let template = set
            .pointer("/spec/template")
            .cloned()
            .unwrap_or_else(|| json!({}));
        let name = format!("{sname}-{i}");
        let mut pod = util::pod_from_template(
            &template,
            util::controller_ref(set, "apps/v1", "StatefulSet"),
            ns,
            "",
        );
        pod["metadata"]["name"] = json!(name.clone());
        for (k, v) in [
            (REVISION_LABEL, revision.to_string()),
            (POD_NAME_LABEL, name.clone()),
            (POD_INDEX_LABEL, i.to_string()),
        ] {
            pod["metadata"]["labels"][k] = json!(v);
        }
        pod["spec"]["hostname"] = json!(name.clone());
        if let Some(svc) = meta::str_at(set, "/spec/serviceName").filter(|s| !s.is_empty()) {
            pod["spec"]["subdomain"] = json!(svc);
        }
        // One claim per template and ordinal, created before the pod that mounts it.
        let retention_delete = meta::str_at(
            set,
            "/spec/persistentVolumeClaimRetentionPolicy/whenDeleted",
        ) == Some("Delete");
        for tpl in set
            .pointer("/spec/volumeClaimTemplates")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let tname = meta::name(tpl);
            let claim = claim_name(tname, sname, i);
            if self
                .client
                .get("", "persistentvolumeclaims", ns, &claim)
                .is_none()
            {
                let mut labels = tpl
                    .pointer("/metadata/labels")
                    .cloned()
                    .unwrap_or_else(|| json!({}));
                for (k, v) in set
                    .pointer("/spec/selector/matchLabels")
                    .and_then(Value::as_object)
                    .into_iter()
                    .flatten()
                {
                    labels[k] = v.clone();
                }
                let mut pvc = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                    "metadata": {"name": claim, "namespace": ns, "labels": labels}, "spec": tpl.get("spec").cloned().unwrap_or_else(|| json!({}))});
                if let Some(a) = tpl.pointer("/metadata/annotations") {
                    pvc["metadata"]["annotations"] = a.clone();
                }
                if retention_delete {
                    pvc["metadata"]["ownerReferences"] =
                        json!([util::controller_ref(set, "apps/v1", "StatefulSet")]);
                }
                match self.client.create("", "persistentvolumeclaims", ns, pvc) {
                    Ok(_) => self.recorder.record(
                        set,
                        EventKind::Normal,
                        "SuccessfulCreate",
                        &format!("create Claim {claim} Pod {name} in StatefulSet {sname} success"),
                    ),
                    Err(e) => {
                        self.recorder.record(set, EventKind::Warning, "FailedCreate", &format!("create Claim {claim} for Pod {name} in StatefulSet {sname} failed error: {}", e.message));
                        return;
                    }
                }
            }
            let volumes = pod["spec"]
                .as_object_mut()
                .expect("spec")
                .entry("volumes")
                .or_insert_with(|| json!([]));
            if let Some(vs) = volumes.as_array_mut() {
                vs.retain(|v| v["name"] != tname);
                vs.push(json!({"name": tname, "persistentVolumeClaim": {"claimName": claim}}));
            }
        }
        match self.client.create("", "pods", ns, pod) {
            Ok(_) => self.recorder.record(
                set,
                EventKind::Normal,
                "SuccessfulCreate",
                &format!("create Pod {name} in StatefulSet {sname} successful"),
            ),
            Err(e) => self.recorder.record(
                set,
                EventKind::Warning,
                "FailedCreate",
                &format!(
                    "create Pod {name} in StatefulSet {sname} failed error: {}",
                    e.message
                ),
            ),
        }
    }

    fn delete_pod(&self, set: &Value, pod: &Value) {
        if self
            .client
            .delete("", "pods", meta::namespace(pod), meta::name(pod), None)
            .is_ok()
        {
            self.recorder.record(
                set,
                EventKind::Normal,
                "SuccessfulDelete",
                &format!(
                    "delete Pod {} in StatefulSet {} successful",
                    meta::name(pod),
                    meta::name(set)
                ),
            );
        }
    }
}

impl Reconciler for StatefulSetController {
    fn client(&self) -> &Internal {
        &self.client
    }

    fn watches(&self) -> Watches {
        Watches {
            group: "apps",
            plural: "statefulsets",
            kind: "StatefulSet",
            children: &[("", "pods")],
            selects_pods: None,
        }
    }

    fn reconcile(&mut self, (ns, name): &Key) -> Option<Duration> {
        let set = self.client.get("apps", "statefulsets", ns, name)?;
        if meta::is_deleting(&set) {
            return None;
        }
        let store = &self.client.api.store;
        let revisions = util::controlled_by(
            store,
            meta::uid(&set),
            &ResourceKey::new("apps", "controllerrevisions"),
        );
        let update_rev = self.revision(&set, &revisions);
        let replicas = i64_at(&set, "/spec/replicas").unwrap_or(1);
        let parallel = meta::str_at(&set, "/spec/podManagementPolicy") == Some("Parallel");
        let pods: BTreeMap<i64, Arc<Value>> =
            util::controlled_by(store, meta::uid(&set), &ResourceKey::new("", "pods"))
                .into_iter()
                .filter_map(|p| ordinal_of(name, meta::name(&p)).map(|i| (i, p)))
                .collect();
        let rev_of = |p: &Value| {
            meta::str_at(p, "/metadata/labels/controller-revision-hash")
                .unwrap_or("")
                .to_string()
        };
        // The current revision: what the pods run until every one of them is updated.
        let current_rev = meta::str_at(&set, "/status/currentRevision")
            .map(String::from)
            .unwrap_or_else(|| update_rev.clone());

        let mut blocked = false;
        // Replace failed pods; create missing ones in order (all at once when Parallel).
        for i in 0..replicas {
            match pods.get(&i) {
                Some(p)
                    if meta::str_at(p, "/status/phase") == Some("Failed")
                        && !meta::is_deleting(p) =>
                {
                    self.delete_pod(&set, p);
                    blocked = !parallel;
                }
                Some(p) => blocked |= !parallel && !is_running_ready(p),
                None if !blocked => {
                    let rev = if i < i64_at(&set, "/spec/updateStrategy/rollingUpdate/partition")
                        .unwrap_or(0)
                    {
                        current_rev.clone()
                    } else {
                        update_rev.clone()
                    };
                    self.create_pod(&set, i, &rev);
                    blocked = !parallel;
                }
                None => {}
            }
            if blocked && !parallel {
                break;
            }
        }
        // Scale down: highest ordinal first, one at a time unless Parallel.
        if !blocked {
            for (_, p) in pods.range(replicas..).rev() {
                if !meta::is_deleting(p) {
                    self.delete_pod(&set, p);
                }
                if !parallel {
                    break;
                }
            }
        }
        // Rolling update: once all pods are Running and Ready, replace the highest outdated one.
        let on_delete = meta::str_at(&set, "/spec/updateStrategy/type") == Some("OnDelete");
        let partition = i64_at(&set, "/spec/updateStrategy/rollingUpdate/partition").unwrap_or(0);
        let all_ready = (0..replicas).all(|i| pods.get(&i).is_some_and(|p| is_running_ready(p)));
        if !on_delete && all_ready && pods.len() as i64 == replicas {
            if let Some((_, p)) = pods
                .range(partition..replicas)
                .rev()
                .find(|(_, p)| rev_of(p) != update_rev)
            {
                self.delete_pod(&set, p);
            }
        }

        // Status.
        let pods: Vec<Arc<Value>> =
            util::controlled_by(store, meta::uid(&set), &ResourceKey::new("", "pods"));
        let live: Vec<&Arc<Value>> = pods
            .iter()
            .filter(|p| !meta::is_deleting(p) && util::is_pod_active(p))
            .collect();
        let updated = live.iter().filter(|p| rev_of(p) == update_rev).count();
        let current = live.iter().filter(|p| rev_of(p) == current_rev).count();
        let ready = live.iter().filter(|p| util::is_pod_ready(p)).count();
        let done = updated as i64 == replicas && live.len() as i64 == replicas;
        let status = json!({
            "observedGeneration": i64_at(&set, "/metadata/generation").unwrap_or(1),
            "replicas": live.len(), "readyReplicas": ready, "availableReplicas": ready,
            "currentReplicas": if done { updated } else { current }, "updatedReplicas": updated,
            "currentRevision": if done { update_rev.clone() } else { current_rev }, "updateRevision": update_rev,
            "collisionCount": 0,
        });
        let old = set.get("status").cloned().unwrap_or_else(|| json!({}));
        if status
            .as_object()
            .is_some_and(|m| m.iter().any(|(k, v)| old.get(k) != Some(v)))
        {
            let _ = self.client.merge_status(
                "apps",
                "statefulsets",
                ns,
                name,
                &json!({"status": status}),
            );
        }
        // Old revisions beyond revisionHistoryLimit go.
        let limit = i64_at(&set, "/spec/revisionHistoryLimit")
            .unwrap_or(10)
            .max(0) as usize;
        let live_revs: Vec<String> = pods.iter().map(|p| rev_of(p)).collect();
        let mut unused: Vec<&Arc<Value>> = revisions
            .iter()
            .filter(|r| {
                meta::name(r) != status["updateRevision"]
                    && meta::name(r) != status["currentRevision"]
                    && !live_revs.iter().any(|l| l == meta::name(r))
            })
            .collect();
        if unused.len() > limit {
            unused.sort_by_key(|r| r["revision"].as_i64().unwrap_or(0));
            for r in &unused[..unused.len() - limit] {
                let _ = self
                    .client
                    .delete("apps", "controllerrevisions", ns, meta::name(r), None);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinals_and_claim_names() {
        assert_eq!(ordinal_of("web", "web-0"), Some(0));
        assert_eq!(ordinal_of("web", "web-12"), Some(12));
        assert_eq!(ordinal_of("web", "webx-1"), None);
        assert_eq!(ordinal_of("web", "web-a"), None);
        assert_eq!(claim_name("data", "web", 2), "data-web-2");
    }
}
