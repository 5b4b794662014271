//! The namespace lifecycle controller: a terminating namespace is emptied, then finalized.

use crate::apiserver::meta;
use crate::apiserver::store::{DeleteOptions, Propagation, UpdateScope};
use crate::apiserver::ApiServer;
use serde_json::{json, Value};

/// A terminating namespace: delete its content; once empty, remove the `kubernetes` finalizer
/// (the namespace then goes away).
pub fn drain_namespace(api: &ApiServer, ns: &Value) {
    let name = meta::name(ns).to_string();
    let mut remaining = 0usize;
    for key in api.store.resource_keys() {
        let Some(rt) = api.registry.storage_type(&key) else {
            continue;
        };
        if !rt.namespaced {
            continue;
        }
        let items = api
            .store
            .list(&key, Some(&name), None, None, &|_| true)
            .items;
        remaining += items.len();
        for obj in items {
            if !meta::is_deleting(&obj) {
                // The namespace deleter deletes in the background (namespaced_resources_deleter.go).
                let background = DeleteOptions {
                    propagation: Some(Propagation::Background),
                    ..Default::default()
                };
                let _ = api.delete_internal(&rt, &name, meta::name(&obj), &background);
            }
        }
    }
    if remaining > 0 {
        return;
    }
    let Some(nsrt) = api.registry.get("", "v1", "namespaces") else {
        return;
    };
    let Some(cur) = api.store.get(&nsrt.key(), "", &name) else {
        return;
    };
    let mut next = (*cur).clone();
    next["spec"]["finalizers"] = json!([]);
    if let Ok(done) = api
        .store
        .update(&nsrt, "", &name, next, UpdateScope::Any, false)
    {
        if meta::finalizers(&done).is_empty() && api.store.get(&nsrt.key(), "", &name).is_some() {
            let _ = api
                .store
                .delete(&nsrt, "", &name, &DeleteOptions::default());
        }
    }
}

/// Something in `obj`'s namespace was deleted: a terminating namespace may now be empty.
pub fn content_deleted(api: &ApiServer, obj: &Value) {
    let ns = meta::namespace(obj);
    if ns.is_empty() {
        return;
    }
    if let Some(nsrt) = api.registry.get("", "v1", "namespaces") {
        if let Some(n) = api.store.get(&nsrt.key(), "", ns) {
            if meta::is_deleting(&n) {
                drain_namespace(api, &n);
            }
        }
    }
}
