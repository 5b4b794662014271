//! The garbage collector: dependents of a deleted owner are deleted (background), deleted first
//! (foreground, honouring `blockOwnerDeletion`) or released (orphan), and objects created after
//! all their owners are gone are collected.

use crate::apiserver::meta;
use crate::apiserver::resources::ResourceType;
use crate::apiserver::store::{
    DeleteOptions, EventType, Propagation, StoreEvent, UpdateScope, FOREGROUND, ORPHAN,
};
use crate::apiserver::ApiServer;
use serde_json::{json, Value};
use std::sync::Arc;

/// React to one change: an owner gone, an owner in foreground/orphan deletion, or an object
/// whose owners no longer exist.
pub fn handle(api: &ApiServer, ev: &StoreEvent) {
    let obj = &ev.object;
    match ev.event_type {
        EventType::Deleted => {
            collect_dependents(api, meta::uid(obj));
            // A dependent going away may unblock an owner waiting in foreground deletion.
            for owner in owners_of(api, obj) {
                if meta::is_deleting(&owner.1) {
                    foreground(api, &owner.0, &owner.1);
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
                    let _ = api.delete_internal(
                        &rt,
                        meta::namespace(obj),
                        meta::name(obj),
                        &DeleteOptions {
                            propagation: Some(Propagation::Background),
                            ..Default::default()
                        },
                    );
                }
            }
        }
    }
}

/// The owners of `obj` that still exist, with their types.
fn owners_of(api: &ApiServer, obj: &Value) -> Vec<(Arc<ResourceType>, Arc<Value>)> {
    let refs = obj
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    refs.iter()
        .filter_map(|r| {
            let rt = api
                .registry
                .by_kind(r.get("apiVersion")?.as_str()?, r.get("kind")?.as_str()?)?;
            let ns = if rt.namespaced {
                meta::namespace(obj)
            } else {
                ""
            };
            let owner = api.store.get(
                &crate::apiserver::resources::storage_key(&rt.group, &rt.plural),
                ns,
                r.get("name")?.as_str()?,
            )?;
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
        let Some(rt) = api.registry.storage_type(&key) else {
            continue;
        };
        if owners_of(api, &dep).is_empty() {
            let _ = api.delete_internal(
                &rt,
                meta::namespace(&dep),
                meta::name(&dep),
                &DeleteOptions {
                    propagation: Some(Propagation::Background),
                    ..Default::default()
                },
            );
        } else {
            remove_owner_ref(api, &rt, &dep, uid);
        }
    }
}

fn remove_owner_ref(api: &ApiServer, rt: &ResourceType, dep: &Value, uid: &str) {
    let mut next = dep.clone();
    if let Some(refs) = next
        .pointer_mut("/metadata/ownerReferences")
        .and_then(Value::as_array_mut)
    {
        refs.retain(|r| r.get("uid").and_then(Value::as_str) != Some(uid));
    }
    let _ = api.store.update(
        rt,
        meta::namespace(dep),
        meta::name(dep),
        next,
        UpdateScope::Any,
        false,
    );
}

/// Foreground deletion: delete dependents first; the owner goes when none blocks it any more.
fn foreground(api: &ApiServer, rt: &ResourceType, owner: &Value) {
    let uid = meta::uid(owner);
    let mut blocking = false;
    for (key, dep) in api.store.dependents_of(uid) {
        let Some(drt) = api.registry.storage_type(&key) else {
            continue;
        };
        let blocks = dep
            .pointer("/metadata/ownerReferences")
            .and_then(Value::as_array)
            .map(|refs| {
                refs.iter().any(|r| {
                    r.get("uid").and_then(Value::as_str) == Some(uid)
                        && r.get("blockOwnerDeletion") == Some(&json!(true))
                })
            })
            .unwrap_or(false);
        if blocks {
            blocking = true;
        }
        if !meta::is_deleting(&dep) {
            let _ = api.delete_internal(
                &drt,
                meta::namespace(&dep),
                meta::name(&dep),
                &DeleteOptions {
                    propagation: Some(Propagation::Foreground),
                    ..Default::default()
                },
            );
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

pub(super) fn remove_finalizer(api: &ApiServer, rt: &ResourceType, obj: &Value, fin: &str) {
    // Re-read: the event may be older than the stored object.
    let Some(cur) = api.store.get(
        &crate::apiserver::resources::storage_key(&rt.group, &rt.plural),
        meta::namespace(obj),
        meta::name(obj),
    ) else {
        return;
    };
    let fins: Vec<String> = meta::finalizers(&cur)
        .into_iter()
        .filter(|f| f != fin)
        .collect();
    if fins.len() == meta::finalizers(&cur).len() {
        return;
    }
    let mut next = (*cur).clone();
    meta::set_finalizers(&mut next, &fins);
    let _ = api.store.update(
        rt,
        meta::namespace(&cur),
        meta::name(&cur),
        next,
        UpdateScope::Any,
        false,
    );
}
