//! The kube-controller-manager loops, one file per loop as upstream splits them, each talking to
//! the API like the real one (through `internal::Internal` or the store's event stream).
//!
//! The loops the API semantics themselves depend on (garbage collector, namespace lifecycle,
//! service accounts, root CA publisher, CRD finalizer) share one event-by-event dispatcher
//! (`run`); the workload loops are level-triggered on coalesced bursts (`queue`).
//!
//! Like kube-controller-manager they run whenever the API server runs, API-only mode included:
//! there, pods they create stay Pending (no scheduler, no kubelets); in a full cluster the
//! scheduler and kubelets make them Running and Ready, so rollouts complete.

pub mod admissionpolicystatus;
pub mod changes;
pub mod crdfinalizer;
pub mod cronjob;
pub mod daemonset;
pub mod deployment;
pub mod disruption;
pub mod endpointslice;
pub mod flowschemastatus;
pub mod garbagecollector;
pub mod gohash;
pub mod job;
pub mod namespace;
pub mod nodelifecycle;
pub mod persistentvolume;
pub mod podgc;
pub mod queue;
pub mod replicaset;
pub mod resourcequota;
pub mod rootcacertpublisher;
pub mod serviceaccount;
pub mod servicecidrs;
pub mod statefulset;
pub mod storageprotection;
pub mod ttl;
pub mod util;

use crate::apiserver::crd;
use crate::apiserver::meta;
use crate::apiserver::resources::ResourceKey;
use crate::apiserver::store::{EventType, StoreEvent};
use crate::apiserver::ApiServer;
use crate::internal::Internal;
use crate::timing::Timing;
use queue::Reconciler;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;

/// Start every loop; the handles stop them when aborted.
pub fn start(api: Arc<ApiServer>, mut timing: Timing) -> Vec<JoinHandle<()>> {
    // One clock: the API server's.
    timing.clock = api.clock().clone();
    let client = || Internal::new(api.clone(), "kube-controller-manager").with_well_typed_bodies();
    // Resync as a safety net only: changes and requeues drive the loops. Not below 5 s even on
    // a fast clock: a resync reconciles every object, which large clusters must not pay often.
    let resync = timing
        .s(Duration::from_secs(30))
        .max(Duration::from_secs(5));
    let spawn = |r: Box<dyn Reconciler>| {
        let api = api.clone();
        tokio::spawn(async move { queue::drive(r, &api.store, resync).await })
    };
    let loops: Vec<Box<dyn Reconciler>> = vec![
        Box::new(deployment::DeploymentController::new(
            client(),
            timing.clone(),
        )),
        Box::new(replicaset::ReplicaSetController::new(
            client(),
            timing.clone(),
            replicaset::REPLICA_SET,
        )),
        Box::new(replicaset::ReplicaSetController::new(
            client(),
            timing.clone(),
            replicaset::REPLICATION_CONTROLLER,
        )),
        Box::new(disruption::DisruptionController::new(
            client(),
            timing.clone(),
        )),
        Box::new(job::JobController::new(client(), timing.clone())),
        Box::new(statefulset::StatefulSetController::new(client())),
        Box::new(endpointslice::EndpointSliceController::new(client())),
        Box::new(cronjob::CronJobController::new(client(), timing.clone())),
        Box::new(persistentvolume::VolumeController::new(client())),
        Box::new(admissionpolicystatus::PolicyStatusController::new(client())),
        Box::new(resourcequota::QuotaController::new(client())),
        Box::new(ttl::TtlController::new(client())),
        Box::new(nodelifecycle::NoScheduleTaints::new(client())),
        Box::new(flowschemastatus::FlowSchemaStatusController::new(client())),
        Box::new(servicecidrs::ServiceCidrController::new(
            client(),
            timing.clone(),
        )),
        Box::new(storageprotection::ProtectionController::new(
            client(),
            storageprotection::Protected::Claim,
        )),
        Box::new(storageprotection::ProtectionController::new(
            client(),
            storageprotection::Protected::Volume,
        )),
        Box::new(storageprotection::ProtectionController::new(
            client(),
            storageprotection::Protected::AttributesClass,
        )),
    ];
    let mut tasks = vec![
        tokio::spawn(run(api.clone())),
        tokio::spawn(daemonset::run(client(), timing.clone())),
    ];
    tasks.extend(loops.into_iter().map(spawn));
    tasks
}

/// Only what kube-apiserver runs itself, for an API server without kube-controller-manager
/// (envtest's): the CRD loops (`run_apiserver_loops`) and API Priority and Fairness' config
/// consumer, which writes the FlowSchemas' Dangling condition.
pub fn start_apiserver_only(api: Arc<ApiServer>, mut timing: Timing) -> Vec<JoinHandle<()>> {
    timing.clock = api.clock().clone();
    let resync = timing
        .s(Duration::from_secs(30))
        .max(Duration::from_secs(5));
    let flowschemas: Box<dyn Reconciler> =
        Box::new(flowschemastatus::FlowSchemaStatusController::new(
            Internal::new(api.clone(), "api-priority-and-fairness-config-consumer-v1"),
        ));
    let store_api = api.clone();
    vec![
        tokio::spawn(run_apiserver_loops(api)),
        tokio::spawn(async move { queue::drive(flowschemas, &store_api.store, resync).await }),
    ]
}

/// Run the event-by-event loops until the store closes.
pub async fn run(api: Arc<ApiServer>) {
    run_with(api, handle).await
}

/// Only the loops kube-apiserver runs itself (apiextensions-apiserver's CRD registration and
/// `customresourcecleanup` finalizer): an API server without kube-controller-manager, like
/// envtest's, where deleted namespaces stay Terminating and nothing is garbage-collected.
pub async fn run_apiserver_loops(api: Arc<ApiServer>) {
    run_with(api, handle_apiserver).await
}

async fn run_with(api: Arc<ApiServer>, handle: fn(&ApiServer, &StoreEvent)) {
    let mut rx = api.store.informer();
    // Objects that existed before we subscribed (none at start-up, but keep it honest).
    resync(&api, handle);
    while let Some(ev) = rx.recv().await {
        // One pass per burst: none while the cluster is frozen.
        let _pass = api.clock().pass().await;
        handle(&api, &ev);
        if rx.drain(|ev| handle(&api, ev)).is_err() {
            return;
        }
    }
}

/// Look at everything once, for objects stored before the informer started.
fn resync(api: &ApiServer, handle: fn(&ApiServer, &StoreEvent)) {
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
    if is(&ev.key, "", "serviceaccounts") && ev.event_type == EventType::Deleted {
        serviceaccount::service_account_deleted(api, obj);
    }
    handle_apiserver(api, ev);
    garbagecollector::handle(api, ev);
    if ev.event_type == EventType::Deleted {
        namespace::content_deleted(api, obj);
    }
}

/// The CRD loops of kube-apiserver (apiextensions-apiserver).
fn handle_apiserver(api: &ApiServer, ev: &StoreEvent) {
    let obj = &ev.object;
    if is(&ev.key, "apiextensions.k8s.io", "customresourcedefinitions") {
        match ev.event_type {
            EventType::Deleted => crd::withdraw(&api.registry, obj),
            EventType::Modified if meta::is_deleting(obj) => crdfinalizer::cleanup_crd(api, obj),
            _ => {}
        }
    }
    if ev.event_type == EventType::Deleted {
        crdfinalizer::custom_resource_deleted(api, ev);
    }
}
