//! The kube-controller-manager loops, one file per loop as upstream splits them, each talking to
//! the API like the real one (through `internal::Internal` or the store's event stream).
//!
//! The loops the API semantics themselves depend on (garbage collector, namespace lifecycle,
//! service accounts, root CA publisher, CRD finalizer) share one event-by-event dispatcher
//! (`run`); the workload loops (DaemonSet, ...) are level-triggered on coalesced bursts.

pub mod crdfinalizer;
pub mod daemonset;
pub mod garbagecollector;
pub mod namespace;
pub mod nodelifecycle;
pub mod rootcacertpublisher;
pub mod serviceaccount;

use crate::apiserver::ApiServer;
// The loops share the event-stream helper with the scheduler.
use crate::cluster::changes;
use crate::crd;
use crate::meta;
use crate::resources::ResourceKey;
use crate::store::{EventType, StoreEvent};
use std::sync::Arc;
use tokio::sync::broadcast::error::RecvError;

/// Run the event-by-event loops until the store closes.
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

/// Route one change to the loops that care about it.
fn handle(api: &ApiServer, ev: &StoreEvent) {
    let obj = &ev.object;
    if is(&ev.key, "", "namespaces") {
        match ev.event_type {
            EventType::Added => {
                serviceaccount::namespace_added(api, obj);
                rootcacertpublisher::namespace_added(api, obj);
            }
            EventType::Modified if meta::is_deleting(obj) => namespace::drain_namespace(api, obj),
            _ => {}
        }
    }
    if is(&ev.key, "apiextensions.k8s.io", "customresourcedefinitions") {
        match ev.event_type {
            EventType::Deleted => crd::withdraw(api, obj),
            EventType::Modified if meta::is_deleting(obj) => crdfinalizer::cleanup_crd(api, obj),
            _ => {}
        }
    }
    garbagecollector::handle(api, ev);
    if ev.event_type == EventType::Deleted {
        crdfinalizer::custom_resource_deleted(api, ev);
        namespace::content_deleted(api, obj);
    }
}
