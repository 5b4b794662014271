//! The scheduler's view of the cluster, kept by its informer as upstream's scheduler cache and
//! scheduling queue are (`pkg/scheduler/backend/cache`, `.../queue`): pending pods split into
//! the active queue and the unschedulable pods, each node's assigned pods summed, the nodes.
//! A scheduling pass reads this instead of listing every pod, which at 100,000 pods cost more
//! than the scheduling itself.

use super::{requests, NodeInfo};
use crate::apiserver::meta;
use crate::apiserver::resources::ResourceKey;
use crate::apiserver::store::{EventType, Store, StoreEvent};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// (namespace, name) of a pod.
pub type PodKey = (String, String);

/// What the pods bound to one node take from it.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct NodeUsage {
    pub pods: usize,
    pub cpu: f64,
    pub memory: f64,
}

#[derive(Default)]
pub struct SchedulerCache {
    /// Pending pods not yet found unschedulable, in key order.
    pub active: BTreeMap<PodKey, Arc<Value>>,
    /// Pending pods with PodScheduled=False: tried after the active ones.
    pub unschedulable: BTreeMap<PodKey, Arc<Value>>,
    /// Bound pods that still hold their node's resources, and what they hold.
    assigned: HashMap<PodKey, (String, (f64, f64))>,
    usage: HashMap<String, NodeUsage>,
    /// What the filters read of each node, by name (name order is the order the scheduler
    /// walks them).
    pub nodes: BTreeMap<String, Arc<NodeInfo>>,
    /// Events at or below this resourceVersion are already in the initial list.
    listed_rv: u64,
}

impl SchedulerCache {
    /// The cache from a list of pods and nodes. Subscribe the informer first: events after the
    /// list then arrive on it, and earlier ones are skipped by resourceVersion.
    pub fn listed(store: &Store) -> Self {
        let mut cache = SchedulerCache::default();
        let pods = store.list(&ResourceKey::new("", "pods"), None, None, None, &|_| true);
        let nodes = store.list(&ResourceKey::new("", "nodes"), None, None, None, &|_| true);
        for pod in pods.items {
            cache.set_pod(pod);
        }
        for node in nodes.items {
            cache
                .nodes
                .insert(meta::name(&node).to_string(), Arc::new(NodeInfo::of(node)));
        }
        // Both lists ran after the subscription, so everything up to the later one is in.
        cache.listed_rv = pods.resource_version.max(nodes.resource_version);
        cache
    }

    /// Take one change in; true when it can make a pending pod schedulable (a new or changed
    /// pending pod, a pod leaving a node, a node change the filters read, a claim change).
    pub fn apply(&mut self, ev: &StoreEvent) -> bool {
        if ev.rv <= self.listed_rv || !ev.key.group.is_empty() {
            return false;
        }
        match ev.key.plural.as_str() {
            "pods" => {
                let key = (
                    meta::namespace(&ev.object).to_string(),
                    meta::name(&ev.object).to_string(),
                );
                if ev.event_type == EventType::Deleted {
                    self.remove_pod(&key);
                    return true;
                }
                self.set_pod(ev.object.clone());
                super::unscheduled(&ev.object)
            }
            "nodes" => {
                let name = meta::name(&ev.object).to_string();
                if ev.event_type == EventType::Deleted {
                    self.nodes.remove(&name);
                } else {
                    self.nodes
                        .insert(name, Arc::new(NodeInfo::of(ev.object.clone())));
                }
                // Heartbeats (conditions, images, volumesInUse) change nothing the filters
                // read; a new node, labels, taints or allocatable do.
                crate::controllers::changes::node_fields_changed(
                    ev,
                    &["/metadata/labels", "/spec", "/status/allocatable"],
                )
            }
            "persistentvolumeclaims" => true,
            _ => false,
        }
    }

    /// What the pods bound to `node` take from it.
    pub fn usage(&self, node: &str) -> NodeUsage {
        self.usage.get(node).copied().unwrap_or_default()
    }

    /// Count a pod the scheduler just bound, before its event arrives (the scheduler cache's
    /// "assume"); the event then replaces the entry with the same figures.
    pub fn assume(&mut self, pod: &Value, node: &str) {
        let key = (
            meta::namespace(pod).to_string(),
            meta::name(pod).to_string(),
        );
        self.active.remove(&key);
        self.unschedulable.remove(&key);
        self.assign(key, node.to_string(), requests(pod));
    }

    fn set_pod(&mut self, pod: Arc<Value>) {
        let key = (
            meta::namespace(&pod).to_string(),
            meta::name(&pod).to_string(),
        );
        self.remove_pod(&key);
        let node = meta::str_at(&pod, "/spec/nodeName").unwrap_or("");
        if !node.is_empty() {
            if !matches!(
                meta::str_at(&pod, "/status/phase"),
                Some("Succeeded" | "Failed")
            ) {
                self.assign(key, node.to_string(), requests(&pod));
            }
        } else if super::unscheduled(&pod) {
            if super::marked_unschedulable(&pod) {
                self.unschedulable.insert(key, pod);
            } else {
                self.active.insert(key, pod);
            }
        }
    }

    fn assign(&mut self, key: PodKey, node: String, (cpu, memory): (f64, f64)) {
        let u = self.usage.entry(node.clone()).or_default();
        u.pods += 1;
        u.cpu += cpu;
        u.memory += memory;
        self.assigned.insert(key, (node, (cpu, memory)));
    }

    fn remove_pod(&mut self, key: &PodKey) {
        self.active.remove(key);
        self.unschedulable.remove(key);
        if let Some((node, (cpu, memory))) = self.assigned.remove(key) {
            if let Some(u) = self.usage.get_mut(&node) {
                u.pods -= 1;
                u.cpu -= cpu;
                u.memory -= memory;
                if u.pods == 0 {
                    self.usage.remove(&node);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apiserver::resources::Registry;
    use crate::apiserver::store::{DeleteOptions, UpdateScope};
    use serde_json::json;

    fn pod(name: &str, node: &str, cpu: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "d"},
               "spec": {"nodeName": node, "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": cpu}}}]}})
    }

    /// The cache kept by events agrees with one listed afresh, after binds, a finished pod, a
    /// pod marked unschedulable and deletes; and it starts from what was there before.
    #[tokio::test]
    async fn the_cache_kept_by_events_equals_a_fresh_list() {
        let reg = Registry::with_builtins();
        let pods = reg.get("", "v1", "pods").unwrap();
        let store = Store::new(1000);
        store
            .create(&pods, pod("before", "n1", "100m"), false)
            .unwrap();
        let mut informer = store.informer();
        let mut cache = SchedulerCache::listed(&store);
        assert_eq!(cache.usage("n1").pods, 1);
        for i in 0..5 {
            store
                .create(&pods, pod(&format!("p{i}"), "", "250m"), false)
                .unwrap();
        }
        let change = |name: &str, edit: &dyn Fn(&mut Value)| {
            let mut p = (*store.get(&ResourceKey::new("", "pods"), "d", name).unwrap()).clone();
            edit(&mut p);
            store
                .update(&pods, "d", name, p, UpdateScope::Any, false)
                .unwrap();
        };
        change("p0", &|p| p["spec"]["nodeName"] = json!("n1"));
        change("p1", &|p| p["spec"]["nodeName"] = json!("n2"));
        change("p1", &|p| p["status"] = json!({"phase": "Succeeded"}));
        change(
            "p2",
            &|p| p["status"] = json!({"conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}),
        );
        store
            .delete(&pods, "d", "p3", &DeleteOptions::default())
            .unwrap();
        let mut woke = 0;
        while let Ok(Some(ev)) = informer.try_recv() {
            woke += cache.apply(&ev) as usize;
        }
        assert!(woke > 0);
        let fresh = SchedulerCache::listed(&store);
        assert_eq!(cache.usage("n1"), fresh.usage("n1"));
        assert_eq!(cache.usage("n1").pods, 2);
        assert!((cache.usage("n1").cpu - 0.35).abs() < 1e-9);
        assert_eq!(
            cache.usage("n2"),
            NodeUsage::default(),
            "a finished pod frees its node"
        );
        assert_eq!(
            cache.active.keys().collect::<Vec<_>>(),
            fresh.active.keys().collect::<Vec<_>>()
        );
        assert_eq!(
            cache
                .active
                .keys()
                .map(|k| k.1.as_str())
                .collect::<Vec<_>>(),
            ["p4"]
        );
        assert_eq!(
            cache
                .unschedulable
                .keys()
                .map(|k| k.1.as_str())
                .collect::<Vec<_>>(),
            ["p2"]
        );
    }

    /// An event the initial list already includes does not take the cache back in time.
    #[tokio::test]
    async fn events_before_the_list_are_skipped() {
        let reg = Registry::with_builtins();
        let pods = reg.get("", "v1", "pods").unwrap();
        let store = Store::new(1000);
        let mut informer = store.informer();
        let created = store.create(&pods, pod("a", "", "1"), false).unwrap();
        let mut p = (*created).clone();
        p["spec"]["nodeName"] = json!("n1");
        store
            .update(&pods, "d", "a", p, UpdateScope::Any, false)
            .unwrap();
        let mut cache = SchedulerCache::listed(&store);
        let added = informer.try_recv().unwrap().unwrap();
        assert!(
            !cache.apply(&added),
            "the pending pod of the ADDED event was bound before the list"
        );
        assert!(cache.active.is_empty());
        assert_eq!(cache.usage("n1").pods, 1);
        assert_eq!(cache.usage("n1").cpu, 1.0);
    }
}
