//! The EndpointSlice and Endpoints controllers: for every Service with a selector, the pods it
//! selects that have an IP, as one `discovery.k8s.io/v1` EndpointSlice (ready/serving/
//! terminating conditions, target ports resolved against the containers' named ports) and the
//! core `Endpoints` object (ready and not-ready addresses).

use super::queue::{Key, Reconciler, Watches};
use super::util;
use crate::apiserver::meta;
use crate::apiserver::resources::ResourceKey;
use crate::apiserver::selectors::LabelSelector;
use crate::internal::Internal;

use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

pub const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";
const MANAGED_BY_LABEL: &str = "endpointslice.kubernetes.io/managed-by";
const MANAGED_BY: &str = "endpointslice-controller.k8s.io";

pub struct EndpointSliceController {
    client: Internal,
}

impl EndpointSliceController {
    pub fn new(client: Internal) -> Self {
        EndpointSliceController { client }
    }
}

/// The selector of a Service (a plain label map); None when it selects nothing by itself.
fn selector_of(svc: &Value) -> Option<LabelSelector> {
    let sel = svc
        .pointer("/spec/selector")
        .filter(|s| s.as_object().is_some_and(|m| !m.is_empty()))?;
    Some(LabelSelector::from_set(Some(sel)))
}

/// A Service port's target in `pod`: a number, or a container port by name.
fn target_port(port: &Value, pod: &Value) -> Option<i64> {
    match port.get("targetPort").unwrap_or(&port["port"]) {
        Value::Number(n) => n.as_i64(),
        Value::String(name) => pod
            .pointer("/spec/containers")?
            .as_array()?
            .iter()
            .flat_map(|c| c["ports"].as_array().cloned().unwrap_or_default())
            .find(|p| p["name"] == name.as_str())
            .and_then(|p| p["containerPort"].as_i64()),
        _ => None,
    }
}

/// (EndpointSlice endpoints, ports) for `pods` behind `svc`.
pub fn slice_content(svc: &Value, pods: &[Arc<Value>]) -> (Vec<Value>, Vec<Value>) {
    let mut endpoints = vec![];
    let mut ports: Vec<Value> = vec![];
    let svc_ports = svc
        .pointer("/spec/ports")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for pod in pods {
        let Some(ip) = meta::str_at(pod, "/status/podIP").filter(|ip| !ip.is_empty()) else {
            continue;
        };
        let phase = meta::str_at(pod, "/status/phase").unwrap_or("");
        if phase == "Succeeded" || phase == "Failed" {
            continue;
        }
        let terminating = meta::is_deleting(pod);
        let ready = util::is_pod_ready(pod);
        let mut ep = json!({
            "addresses": [ip],
            "conditions": {"ready": ready && !terminating, "serving": ready, "terminating": terminating},
            "targetRef": {"kind": "Pod", "namespace": meta::namespace(pod), "name": meta::name(pod), "uid": meta::uid(pod)},
        });
        if let Some(node) = meta::str_at(pod, "/spec/nodeName") {
            ep["nodeName"] = json!(node);
        }
        endpoints.push(ep);
        for sp in &svc_ports {
            if let Some(port) = target_port(sp, pod) {
                let p = json!({"name": sp.get("name").and_then(Value::as_str).unwrap_or(""), "port": port, "protocol": sp.get("protocol").cloned().unwrap_or(json!("TCP"))});
                if !ports.contains(&p) {
                    ports.push(p);
                }
            }
        }
    }
    (endpoints, ports)
}

impl Reconciler for EndpointSliceController {
    fn client(&self) -> &Internal {
        &self.client
    }

    fn watches(&self) -> Watches {
        Watches {
            group: "",
            plural: "services",
            kind: "Service",
            children: &[("discovery.k8s.io", "endpointslices")],
            selects_pods: Some(selector_of),
        }
    }

    fn reconcile(&mut self, (ns, name): &Key) -> Option<Duration> {
        let svc = self.client.get("", "services", ns, name)?;
        let sel = selector_of(&svc)?;
        if meta::is_deleting(&svc) {
            return None;
        }
        let pods = self
            .client
            .list("", "pods", Some(ns), &|p| sel.matches(meta::labels(p)));
        let (endpoints, ports) = slice_content(&svc, &pods);
        let owner = json!([{"apiVersion": "v1", "kind": "Service", "name": name, "uid": meta::uid(&svc), "controller": true, "blockOwnerDeletion": true}]);

        // The EndpointSlice: found by its service-name label, else created.
        let existing = util::controlled_by(
            &self.client.api.store,
            meta::uid(&svc),
            &ResourceKey::new("discovery.k8s.io", "endpointslices"),
        );
        let mut labels = svc
            .pointer("/metadata/labels")
            .cloned()
            .filter(Value::is_object)
            .unwrap_or_else(|| json!({}));
        labels[SERVICE_NAME_LABEL] = json!(name);
        labels[MANAGED_BY_LABEL] = json!(MANAGED_BY);
        let body = json!({"endpoints": endpoints, "ports": ports});
        match existing.first() {
            Some(slice) => {
                if slice.get("endpoints").unwrap_or(&json!([])) != &body["endpoints"]
                    || slice.get("ports").unwrap_or(&json!([])) != &body["ports"]
                {
                    let mut patch = body.clone();
                    patch["metadata"] = json!({"annotations": {"endpoints.kubernetes.io/last-change-trigger-time": self.client.clock().now_rfc3339()}});
                    let _ = self.client.merge(
                        "discovery.k8s.io",
                        "endpointslices",
                        ns,
                        meta::name(slice),
                        &patch,
                    );
                }
            }
            None => {
                let slice = json!({
                    "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                    "metadata": {"generateName": format!("{name}-"), "namespace": ns, "labels": labels, "ownerReferences": owner,
                                 "annotations": {"endpoints.kubernetes.io/last-change-trigger-time": self.client.clock().now_rfc3339()}},
                    "addressType": "IPv4", "endpoints": body["endpoints"], "ports": body["ports"],
                });
                let _ = self
                    .client
                    .create("discovery.k8s.io", "endpointslices", ns, slice);
            }
        }

        // The core Endpoints object (same name as the Service).
        let to_address = |ep: &Value| {
            let mut a = json!({"ip": ep["addresses"][0], "targetRef": ep["targetRef"]});
            if let Some(n) = ep.get("nodeName") {
                a["nodeName"] = n.clone();
            }
            a
        };
        let ready: Vec<Value> = endpoints
            .iter()
            .filter(|e| e["conditions"]["ready"] == true)
            .map(to_address)
            .collect();
        let not_ready: Vec<Value> = endpoints
            .iter()
            .filter(|e| e["conditions"]["ready"] != true && e["conditions"]["terminating"] != true)
            .map(to_address)
            .collect();
        let mut subset = json!({"ports": ports.iter().map(|p| { let mut q = p.clone(); if q["name"] == "" { q.as_object_mut().map(|m| m.remove("name")); } q }).collect::<Vec<_>>()});
        if !ready.is_empty() {
            subset["addresses"] = json!(ready);
        }
        if !not_ready.is_empty() {
            subset["notReadyAddresses"] = json!(not_ready);
        }
        let subsets = if ready.is_empty() && not_ready.is_empty() {
            Value::Null
        } else {
            json!([subset])
        };
        let ep_labels = svc
            .pointer("/metadata/labels")
            .cloned()
            .filter(Value::is_object)
            .unwrap_or_else(|| json!({}));
        match self.client.get("", "endpoints", ns, name) {
            Some(cur) if cur.get("subsets").unwrap_or(&Value::Null) == &subsets => {}
            Some(_) => {
                let _ = self
                    .client
                    .merge("", "endpoints", ns, name, &json!({"subsets": subsets}));
            }
            None => {
                let mut ep = json!({"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": name, "namespace": ns, "labels": ep_labels}});
                if !subsets.is_null() {
                    ep["subsets"] = subsets;
                }
                let _ = self.client.create("", "endpoints", ns, ep);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_carry_readiness_and_resolved_named_ports() {
        let svc = json!({"spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80, "targetPort": "web", "protocol": "TCP"}]}});
        let pod = |name: &str, ip: Option<&str>, ready: bool| {
            Arc::new(
                json!({"metadata": {"name": name, "namespace": "d", "uid": name},
                "spec": {"nodeName": "n1", "containers": [{"name": "c", "ports": [{"name": "web", "containerPort": 8080}]}]},
                "status": {"podIP": ip, "phase": "Running", "conditions": [{"type": "Ready", "status": if ready {"True"} else {"False"}}]}}),
            )
        };
        let (eps, ports) = slice_content(
            &svc,
            &[
                pod("a", Some("10.0.0.1"), true),
                pod("b", Some("10.0.0.2"), false),
                pod("c", None, false),
            ],
        );
        assert_eq!(eps.len(), 2, "pods without an IP are left out");
        assert_eq!(
            eps[0]["conditions"],
            json!({"ready": true, "serving": true, "terminating": false})
        );
        assert_eq!(eps[1]["conditions"]["ready"], false);
        assert_eq!(
            ports,
            vec![json!({"name": "http", "port": 8080, "protocol": "TCP"})]
        );
    }
}
