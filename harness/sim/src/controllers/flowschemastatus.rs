//! API Priority and Fairness's config consumer in kube-apiserver (k8s.io/apiserver
//! pkg/util/flowcontrol/apf_controller.go `presyncFlowSchemaStatus`): every FlowSchema carries
//! a `Dangling` condition saying whether the PriorityLevelConfiguration it names exists
//! (the mandatory `exempt` and `catch-all` always do: the controller imagines them),
//! server-side applied (forced) by `api-priority-and-fairness-config-consumer-v1` when its
//! status, reason or message would change. **Simplified**: no rate limit on those writes.

use super::queue::{key_of, Key, Reconciler, Watches};
use crate::apiserver::meta;
use crate::apiserver::store::StoreEvent;
use crate::internal::Internal;

use serde_json::{json, Value};
use std::time::Duration;

const MANAGER: &str = "api-priority-and-fairness-config-consumer-v1";
const GROUP: &str = "flowcontrol.apiserver.k8s.io";

pub struct FlowSchemaStatusController {
    client: Internal,
}

impl FlowSchemaStatusController {
    pub fn new(client: Internal) -> Self {
        FlowSchemaStatusController { client }
    }
}

/// The Dangling condition's (status, reason, message) for a reference to `level`.
fn dangling(level: &str, found: bool) -> (&'static str, &'static str, String) {
    if found {
        (
            "False",
            "Found",
            format!("This FlowSchema references the PriorityLevelConfiguration object named {level:?} and it exists"),
        )
    } else {
        (
            "True",
            "NotFound",
            format!("This FlowSchema references the PriorityLevelConfiguration object named {level:?} but there is no such object"),
        )
    }
}

impl Reconciler for FlowSchemaStatusController {
    fn client(&self) -> &Internal {
        &self.client
    }

    fn watches(&self) -> Watches {
        Watches {
            group: GROUP,
            plural: "flowschemas",
            kind: "FlowSchema",
            children: &[],
            selects_pods: None,
        }
    }

    /// A FlowSchema's changes, and a priority level's coming or going: the schemas naming it.
    fn keys_of(&self, ev: &StoreEvent, out: &mut Vec<Key>) {
        if ev.key.group != GROUP {
            return;
        }
        match ev.key.plural.as_str() {
            "flowschemas" => out.push(key_of(&ev.object)),
            "prioritylevelconfigurations" => {
                let level = meta::name(&ev.object);
                for fs in self.client.list(GROUP, "flowschemas", None, &|fs| {
                    meta::str_at(fs, "/spec/priorityLevelConfiguration/name") == Some(level)
                }) {
                    out.push(key_of(&fs));
                }
            }
            _ => {}
        }
    }

    fn reconcile(&mut self, (_, name): &Key) -> Option<Duration> {
        let fs = self.client.get(GROUP, "flowschemas", "", name)?;
        if meta::is_deleting(&fs) {
            return None;
        }
        let level = meta::str_at(&fs, "/spec/priorityLevelConfiguration/name").unwrap_or("");
        let found = matches!(level, "exempt" | "catch-all")
            || self
                .client
                .get(GROUP, "prioritylevelconfigurations", "", level)
                .is_some();
        let (status, reason, message) = dangling(level, found);
        let current = fs
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .and_then(|cs| cs.iter().find(|c| c["type"] == "Dangling"));
        if current.is_some_and(|c| {
            c["status"] == status && c["reason"] == reason && c["message"] == message.as_str()
        }) {
            return None;
        }
        let body = json!({
            "apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
            "metadata": {"name": name},
            "status": {"conditions": [{"type": "Dangling", "status": status, "reason": reason,
                "lastTransitionTime": self.client.clock().now_rfc3339(), "message": message}]},
        });
        let _ = self
            .client
            .apply_status(GROUP, "flowschemas", "", name, &body, MANAGER);
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dangling_texts_as_upstream() {
        assert_eq!(
            dangling("global-default", true).2,
            "This FlowSchema references the PriorityLevelConfiguration object named \"global-default\" and it exists"
        );
        assert_eq!(dangling("x", false).0, "True");
    }
}
