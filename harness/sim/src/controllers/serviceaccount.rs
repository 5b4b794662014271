//! The service account controller: every namespace gets a `default` ServiceAccount.

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
