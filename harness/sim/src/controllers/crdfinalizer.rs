//! The CRD finalizer: a CRD being deleted first loses its custom resources, then its
//! `customresourcecleanup.apiextensions.k8s.io` finalizer. Upstream this loop runs inside the
//! apiextensions-apiserver rather than kube-controller-manager; here every control loop runs
//! beside the API server, so it sits with the others.

use super::garbagecollector::remove_finalizer;
use crate::apiserver::crd::CLEANUP_FINALIZER;
use crate::apiserver::meta;
use crate::apiserver::resources::ResourceKey;
use crate::apiserver::store::{DeleteOptions, StoreEvent};
use crate::apiserver::ApiServer;
use serde_json::Value;

/// The last custom resource of a CRD being deleted lets the CRD go.
pub fn custom_resource_deleted(api: &ApiServer, ev: &StoreEvent) {
    let Some(rt) = api.registry.storage_type(&ev.key).filter(|rt| rt.custom) else {
        return;
    };
    if let Some(crt) = api
        .registry
        .get("apiextensions.k8s.io", "v1", "customresourcedefinitions")
    {
        if let Some(c) = api
            .store
            .get(&crt.key(), "", &format!("{}.{}", rt.plural, rt.group))
        {
            if meta::is_deleting(&c) {
                cleanup_crd(api, &c);
            }
        }
    }
}

/// A CRD being deleted: delete all its custom resources, then drop the cleanup finalizer.
pub fn cleanup_crd(api: &ApiServer, crd_obj: &Value) {
    if !meta::finalizers(crd_obj)
        .iter()
        .any(|f| f == CLEANUP_FINALIZER)
    {
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
                let _ = api.delete_internal(
                    &rt,
                    meta::namespace(&obj),
                    meta::name(&obj),
                    &DeleteOptions::default(),
                );
            }
        }
        if pending > 0
            && !api
                .store
                .list(&key, None, None, None, &|_| true)
                .items
                .is_empty()
        {
            return;
        }
    }
    if let Some(crt) = api
        .registry
        .get("apiextensions.k8s.io", "v1", "customresourcedefinitions")
    {
        remove_finalizer(api, &crt, crd_obj, CLEANUP_FINALIZER);
    }
}
