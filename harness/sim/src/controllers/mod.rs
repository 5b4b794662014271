//! The kube-controller-manager loops the API semantics depend on, driven by the store's event
//! stream: the garbage collector (ownerReferences, background/foreground/orphan propagation),
//! the namespace lifecycle (default ServiceAccount and root CA ConfigMap, emptying a terminating
//! namespace, then finalizing it) and CRD cleanup (deleting custom resources of a deleted CRD).

pub mod daemonset;

use crate::apiserver::ApiServer;
// The loops share the event-stream helper with the scheduler.
use crate::cluster::changes;
use crate::crd::{self, CLEANUP_FINALIZER};
use crate::meta;
use crate::resources::{ResourceKey, ResourceType};
use crate::store::{DeleteOptions, EventType, Propagation, StoreEvent, UpdateScope, FOREGROUND, ORPHAN};
use serde_json::{json, Value};
use std::sync::Arc;
use tokio::sync::broadcast::error::RecvError;

/// Run the control loops until the store closes.
pub async fn run(api: Arc<ApiServer>) {
    let mut rx = api.store.subscribe();
    // Objects that existed before we subscribed (none at start-up, but keep it honest).
    resync(&api);
    loop {
        match rx.recv().await {
            Ok(ev) => handle(&api, &ev),
            Err(RecvError::Lagged(_)) => resync(&api),
            Err(RecvError::Closed) => return,
        }
    }
}

/// Look at everything again: after lagging behind the event stream we may have missed work.
fn resync(api: &ApiServer) {
    for key in api.store.resource_keys() {
        let all = api.store.list(&key, None, None, None, &|_| true);
        for obj in all.items {
            let ev = StoreEvent::new(0, key.clone(), EventType::Modified, obj.clone(), Some(obj));
            handle(api, &ev);
        }
    }
}

fn is(key: &ResourceKey, group: &str, plural: &str) -> bool {
    key.group == group && key.plural == plural
}

fn handle(api: &ApiServer, ev: &StoreEvent) {
    let obj = &ev.object;
    if is(&ev.key, "", "namespaces") {
        match ev.event_type {
            EventType::Added => populate_namespace(api, obj),
            EventType::Modified if meta::is_deleting(obj) => drain_namespace(api, obj),
            _ => {}
        }
    }
    if is(&ev.key, "apiextensions.k8s.io", "customresourcedefinitions") {
        match ev.event_type {
            EventType::Deleted => crd::withdraw(api, obj),
            EventType::Modified if meta::is_deleting(obj) => cleanup_crd(api, obj),
            _ => {}
        }
    }
    match ev.event_type {
        EventType::Deleted => {
            collect_dependents(api, meta::uid(obj));
            // A dependent going away may unblock an owner waiting in foreground deletion, or the
            // namespace it lived in.
            for owner in owners_of(api, obj) {
                if meta::is_deleting(&owner.1) {
                    foreground(api, &owner.0, &owner.1);
                }
            }
            if let Some(rt) = api.registry.storage_type(&ev.key).filter(|rt| rt.custom) {
                // The last custom resources of a CRD being deleted let the CRD go.
                if let Some(crt) = api.registry.get("apiextensions.k8s.io", "v1", "customresourcedefinitions") {
                    if let Some(c) = api.store.get(&crt.key(), "", &format!("{}.{}", rt.plural, rt.group)) {
                        if meta::is_deleting(&c) {
                            cleanup_crd(api, &c);
                        }
                    }
                }
            }
            let ns = meta::namespace(obj);
            if !ns.is_empty() {
                if let Some(nsrt) = api.registry.get("", "v1", "namespaces") {
                    if let Some(n) = api.store.get(&nsrt.key(), "", ns) {
                        if meta::is_deleting(&n) {
                            drain_namespace(api, &n);
                        }
                    }
                }
            }
        }
        EventType::Added | EventType::Modified => {
            if meta::is_deleting(obj) {
                let fins = meta::finalizers(obj);
                if fins.iter().any(|f| f == FOREGROUND) {
                    if let Some(rt) = api.registry.storage_type(&ev.key) {
                        foreground(api, &rt, obj);
                    }
                }
                if fins.iter().any(|f| f == ORPHAN) {
                    if let Some(rt) = api.registry.storage_type(&ev.key) {
                        orphan(api, &rt, obj);
                    }
                }
            } else if !meta::owner_uids(obj).is_empty() && owners_of(api, obj).is_empty() {
                // Every owner is gone (it may have been deleted before this object was created).
                if let Some(rt) = api.registry.storage_type(&ev.key) {
                    let _ = api.delete_internal(&rt, meta::namespace(obj), meta::name(obj), &DeleteOptions::default());
                }
            }
        }
    }
}

/// The owners of `obj` that still exist, with their types.
fn owners_of(api: &ApiServer, obj: &Value) -> Vec<(Arc<ResourceType>, Arc<Value>)> {
    let refs = obj.pointer("/metadata/ownerReferences").and_then(Value::as_array).cloned().unwrap_or_default();
    refs.iter()
        .filter_map(|r| {
            let rt = api.registry.by_kind(r.get("apiVersion")?.as_str()?, r.get("kind")?.as_str()?)?;
            let ns = if rt.namespaced { meta::namespace(obj) } else { "" };
            let owner = api.store.get(&crate::resources::storage_key(&rt.group, &rt.plural), ns, r.get("name")?.as_str()?)?;
            (meta::uid(&owner) == r.get("uid")?.as_str()?).then_some((rt, owner))
        })
        .collect()
}

/// An owner is gone: delete its dependents that have no other live owner, and drop the dangling
/// reference from those that do.
fn collect_dependents(api: &ApiServer, uid: &str) {
    if uid.is_empty() {
        return;
    }
    for (key, dep) in api.store.dependents_of(uid) {
        let Some(rt) = api.registry.storage_type(&key) else { continue };
        if owners_of(api, &dep).is_empty() {
            let _ = api.delete_internal(&rt, meta::namespace(&dep), meta::name(&dep), &DeleteOptions { propagation: Some(Propagation::Background), ..Default::default() });
        } else {
            remove_owner_ref(api, &rt, &dep, uid);
        }
    }
}

fn remove_owner_ref(api: &ApiServer, rt: &ResourceType, dep: &Value, uid: &str) {
    let mut next = dep.clone();
    if let Some(refs) = next.pointer_mut("/metadata/ownerReferences").and_then(Value::as_array_mut) {
        refs.retain(|r| r.get("uid").and_then(Value::as_str) != Some(uid));
    }
    let _ = api.store.update(rt, meta::namespace(dep), meta::name(dep), next, UpdateScope::Any, false);
}

/// Foreground deletion: delete dependents first; the owner goes when none blocks it any more.
fn foreground(api: &ApiServer, rt: &ResourceType, owner: &Value) {
    let uid = meta::uid(owner);
    let mut blocking = false;
    for (key, dep) in api.store.dependents_of(uid) {
        let Some(drt) = api.registry.storage_type(&key) else { continue };
        let blocks = dep
            .pointer("/metadata/ownerReferences")
            .and_then(Value::as_array)
            .map(|refs| refs.iter().any(|r| r.get("uid").and_then(Value::as_str) == Some(uid) && r.get("blockOwnerDeletion") == Some(&json!(true))))
            .unwrap_or(false);
        if blocks {
            blocking = true;
        }
        if !meta::is_deleting(&dep) {
            let _ = api.delete_internal(&drt, meta::namespace(&dep), meta::name(&dep), &DeleteOptions { propagation: Some(Propagation::Foreground), ..Default::default() });
        }
    }
    if !blocking {
        remove_finalizer(api, rt, owner, FOREGROUND);
    }
}

/// Orphan deletion: strip the owner from every dependent, then let the owner go.
fn orphan(api: &ApiServer, rt: &ResourceType, owner: &Value) {
    let uid = meta::uid(owner);
    for (key, dep) in api.store.dependents_of(uid) {
        if let Some(drt) = api.registry.storage_type(&key) {
            remove_owner_ref(api, &drt, &dep, uid);
        }
    }
    remove_finalizer(api, rt, owner, ORPHAN);
}

fn remove_finalizer(api: &ApiServer, rt: &ResourceType, obj: &Value, fin: &str) {
    // Re-read: the event may be older than the stored object.
    let Some(cur) = api.store.get(&crate::resources::storage_key(&rt.group, &rt.plural), meta::namespace(obj), meta::name(obj)) else { return };
    let fins: Vec<String> = meta::finalizers(&cur).into_iter().filter(|f| f != fin).collect();
    if fins.len() == meta::finalizers(&cur).len() {
        return;
    }
    let mut next = (*cur).clone();
    meta::set_finalizers(&mut next, &fins);
    let _ = api.store.update(rt, meta::namespace(&cur), meta::name(&cur), next, UpdateScope::Any, false);
}

/// What the service-account and root-CA controllers put in every new namespace.
fn populate_namespace(api: &ApiServer, ns: &Value) {
    let name = meta::name(ns);
    if let Some(rt) = api.registry.get("", "v1", "serviceaccounts") {
        let sa = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": name}});
        let _ = api.store.create(&rt, sa, false);
    }
    if let Some(rt) = api.registry.get("", "v1", "configmaps") {
        let cm = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "kube-root-ca.crt", "namespace": name, "annotations": {"kubernetes.io/description": "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters."}},
            "data": {"ca.crt": "-----BEGIN CERTIFICATE-----\n(faultline-sim serves plain HTTP on loopback; no CA)\n-----END CERTIFICATE-----\n"}
        });
        let _ = api.store.create(&rt, cm, false);
    }
}

/// A terminating namespace: delete its content; once empty, remove the `kubernetes` finalizer
/// (the namespace then goes away).
fn drain_namespace(api: &ApiServer, ns: &Value) {
    let name = meta::name(ns).to_string();
    let mut remaining = 0usize;
    for key in api.store.resource_keys() {
        let Some(rt) = api.registry.storage_type(&key) else { continue };
        if !rt.namespaced {
            continue;
        }
        let items = api.store.list(&key, Some(&name), None, None, &|_| true).items;
        remaining += items.len();
        for obj in items {
            if !meta::is_deleting(&obj) {
                let _ = api.delete_internal(&rt, &name, meta::name(&obj), &DeleteOptions::default());
            }
        }
    }
    if remaining > 0 {
        return;
    }
    let Some(nsrt) = api.registry.get("", "v1", "namespaces") else { return };
    let Some(cur) = api.store.get(&nsrt.key(), "", &name) else { return };
    let mut next = (*cur).clone();
    next["spec"]["finalizers"] = json!([]);
    if let Ok(done) = api.store.update(&nsrt, "", &name, next, UpdateScope::Any, false) {
        if meta::finalizers(&done).is_empty() && api.store.get(&nsrt.key(), "", &name).is_some() {
            let _ = api.store.delete(&nsrt, "", &name, &DeleteOptions::default());
        }
    }
}

/// A CRD being deleted: delete all its custom resources, then drop the cleanup finalizer.
fn cleanup_crd(api: &ApiServer, crd_obj: &Value) {
    if !meta::finalizers(crd_obj).iter().any(|f| f == CLEANUP_FINALIZER) {
        return;
    }
    let group = meta::str_at(crd_obj, "/spec/group").unwrap_or("");
    let plural = meta::str_at(crd_obj, "/spec/names/plural").unwrap_or("");
    let key = ResourceKey::new(group, plural);
    if let Some(rt) = api.registry.storage_type(&key) {
        let items = api.store.list(&key, None, None, None, &|_| true).items;
        let pending = items.len();
        for obj in items {
            if !meta::is_deleting(&obj) {
                let _ = api.delete_internal(&rt, meta::namespace(&obj), meta::name(&obj), &DeleteOptions::default());
            }
        }
        if pending > 0 && !api.store.list(&key, None, None, None, &|_| true).items.is_empty() {
            return;
        }
    }
    if let Some(crt) = api.registry.get("apiextensions.k8s.io", "v1", "customresourcedefinitions") {
        remove_finalizer(api, &crt, crd_obj, CLEANUP_FINALIZER);
    }
}
