//! The service account controller: every namespace gets a `default` ServiceAccount, again
//! when it is deleted (pkg/controller/serviceaccount/serviceaccounts_controller.go: a deleted
//! ServiceAccount queues its namespace, whose sync creates the missing ones unless the
//! namespace is terminating).

use crate::apiserver::meta;
use crate::apiserver::ApiServer;
use serde_json::{json, Value};

/// A new namespace: create its `default` ServiceAccount.
pub fn namespace_added(api: &ApiServer, ns: &Value) {
    if let Some(rt) = api.registry.get("", "v1", "serviceaccounts") {
        let sa = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": meta::name(ns)}});
        let _ = api.store.create(&rt, sa, false);
    }
}

/// A ServiceAccount went away: `default` comes back while its namespace is active.
pub fn service_account_deleted(api: &ApiServer, sa: &Value) {
    if meta::name(sa) != "default" {
        return;
    }
    let Some(ns_rt) = api.registry.get("", "v1", "namespaces") else {
        return;
    };
    match api.store.get(&ns_rt.key(), "", meta::namespace(sa)) {
        Some(ns) if !meta::is_deleting(&ns) => namespace_added(api, &ns),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apiserver::store::DeleteOptions;

    #[test]
    fn a_deleted_default_service_account_comes_back_unless_its_namespace_is_going() {
        let api = ApiServer::new(100);
        let ns_rt = api.registry.get("", "v1", "namespaces").unwrap();
        let sa_rt = api.registry.get("", "v1", "serviceaccounts").unwrap();
        let ns = api
            .store
            .create(
                &ns_rt,
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "d"}}),
                false,
            )
            .unwrap();
        namespace_added(&api, &ns);
        let sa = api.store.get(&sa_rt.key(), "d", "default").unwrap();
        api.store
            .delete(&sa_rt, "d", "default", &DeleteOptions::default())
            .unwrap();
        service_account_deleted(&api, &sa);
        let again = api
            .store
            .get(&sa_rt.key(), "d", "default")
            .expect("recreated");
        assert_ne!(meta::uid(&again), meta::uid(&sa));
        // Another name is not the controller's.
        let bot = api
            .store
            .create(&sa_rt, json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "bot", "namespace": "d"}}), false)
            .unwrap();
        api.store
            .delete(&sa_rt, "d", "bot", &DeleteOptions::default())
            .unwrap();
        service_account_deleted(&api, &bot);
        assert!(api.store.get(&sa_rt.key(), "d", "bot").is_none());
    }
}
