//! The root CA certificate publisher: every namespace gets the `kube-root-ca.crt` ConfigMap.

use crate::apiserver::meta;
use crate::apiserver::ApiServer;
use serde_json::{json, Value};

/// A new namespace: publish the cluster CA bundle into it.
pub fn namespace_added(api: &ApiServer, ns: &Value) {
    let name = meta::name(ns);
    if let Some(rt) = api.registry.get("", "v1", "configmaps") {
        let cm = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "kube-root-ca.crt", "namespace": name, "annotations": {"kubernetes.io/description": "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters."}},
            "data": {"ca.crt": "-----BEGIN CERTIFICATE-----\n(faultline-sim serves plain HTTP on loopback; no CA)\n-----END CERTIFICATE-----\n"}
        });
        // Through the API as kube-controller-manager's publisher does, so the write is
        // validated and its managedFields recorded.
        let opts = crate::apiserver::WriteOptions {
            field_manager: Some("kube-controller-manager".into()),
            ..Default::default()
        };
        let _ = api.create(&rt, name, cm, &opts);
    }
}
