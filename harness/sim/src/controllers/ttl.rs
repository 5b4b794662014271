//! kube-controller-manager's TTL controller (pkg/controller/ttl/ttl_controller.go): every Node
//! carries `node.alpha.kubernetes.io/ttl`, the seconds kubelets may cache the objects they
//! watch, chosen by the cluster's size and set by a strategic merge patch. **Simplified**: the
//! boundaries are applied without the controller's hysteresis between neighbouring sizes.

use super::queue::{Key, Reconciler, Watches};
use crate::apiserver::meta;
use crate::apiserver::store::StoreEvent;
use crate::internal::Internal;
use serde_json::json;
use std::time::Duration;

pub const ANNOTATION: &str = "node.alpha.kubernetes.io/ttl";
const POINTER: &str = "/metadata/annotations/node.alpha.kubernetes.io~1ttl";

/// `ttlBoundaries`: (largest cluster size, TTL seconds).
const BOUNDARIES: [(usize, u32); 6] = [
    (100, 0),
    (500, 15),
    (1000, 30),
    (2000, 60),
    (10000, 300),
    (usize::MAX, 600),
];

fn ttl_for(nodes: usize) -> u32 {
    BOUNDARIES
        .iter()
        .find(|(max, _)| nodes <= *max)
        .map(|(_, ttl)| *ttl)
        .unwrap_or(600)
}

pub struct TtlController {
    client: Internal,
}

impl TtlController {
    pub fn new(client: Internal) -> Self {
        TtlController { client }
    }
}

impl Reconciler for TtlController {
    fn client(&self) -> &Internal {
        &self.client
    }

    fn watches(&self) -> Watches {
        Watches {
            group: "",
            plural: "nodes",
            kind: "Node",
            children: &[],
            selects_pods: None,
        }
    }

    /// A node's own changes; its status heartbeats change nothing here.
    fn keys_of(&self, ev: &StoreEvent, out: &mut Vec<Key>) {
        if !(ev.key.group.is_empty() && ev.key.plural == "nodes") {
            return;
        }
        let annotation = |n: &serde_json::Value| n.pointer(POINTER).cloned();
        let changed = ev
            .prev
            .as_ref()
            .is_none_or(|p| annotation(p) != annotation(&ev.object));
        if changed || annotation(&ev.object).is_none() {
            out.push((String::new(), meta::name(&ev.object).to_string()));
        }
    }

    fn reconcile(&mut self, (_, name): &Key) -> Option<Duration> {
        let node = self.client.get("", "nodes", "", name)?;
        let size = self.client.list("", "nodes", None, &|_| true).len();
        let want = ttl_for(size).to_string();
        let have = node.pointer(POINTER).and_then(|v| v.as_str());
        if have == Some(want.as_str()) {
            return None;
        }
        let _ = self.client.strategic(
            "",
            "nodes",
            "",
            name,
            &json!({"metadata": {"annotations": {ANNOTATION: want}}}),
        );
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ttl_grows_with_the_cluster() {
        assert_eq!(ttl_for(0), 0);
        assert_eq!(ttl_for(100), 0);
        assert_eq!(ttl_for(101), 15);
        assert_eq!(ttl_for(5000), 300);
        assert_eq!(ttl_for(20000), 600);
    }
}
