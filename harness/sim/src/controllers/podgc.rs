//! The pod garbage collector's `gcTerminating` (pkg/controller/podgc/gc_controller.go): every
//! gcCheckPeriod (20 s), a pod that is terminating on a node that is not Ready and carries the
//! `node.kubernetes.io/out-of-service` taint (non-graceful node shutdown, GA in 1.28) is marked
//! Failed if it is not terminal yet and force-deleted (grace period 0): its kubelet, on a node
//! that is shut down, will never finish it. The other passes of the pod GC (terminated pods over
//! the threshold, orphaned and unscheduled terminating pods) are not modelled.

use crate::apiserver::meta;
use crate::internal::Internal;
use crate::timing::Timing;
use serde_json::{json, Value};
use std::time::Duration;

/// The taint a cluster operator puts on a node that is shut down for good.
pub const OUT_OF_SERVICE: &str = "node.kubernetes.io/out-of-service";

pub async fn run(client: Internal, timing: Timing) {
    let period = timing
        .s(timing.pod_gc_period)
        .max(Duration::from_millis(20));
    let mut ticker = tokio::time::interval(period);
    loop {
        ticker.tick().await;
        let _pass = client.clock().pass().await;
        gc_terminating(&client);
    }
}

/// One gcTerminating pass.
pub fn gc_terminating(client: &Internal) {
    for node in client.list("", "nodes", None, &out_of_service_and_not_ready) {
        let name = meta::name(&node).to_string();
        for pod in client.pods_on_node(&name, &meta::is_deleting) {
            let (ns, pod_name) = (meta::namespace(&pod), meta::name(&pod));
            // markFailedAndDeletePod: Failed first, so an orphaned pod does not stay Running.
            if !matches!(
                meta::str_at(&pod, "/status/phase"),
                Some("Succeeded" | "Failed")
            ) && client
                .merge_status(
                    "",
                    "pods",
                    ns,
                    pod_name,
                    &json!({"status": {"phase": "Failed"}}),
                )
                .is_err()
            {
                continue;
            }
            let _ = client.delete("", "pods", ns, pod_name, Some(0));
        }
    }
}

fn out_of_service_and_not_ready(node: &Value) -> bool {
    meta::condition_status(node, "Ready") != Some("True")
        && node
            .pointer("/spec/taints")
            .and_then(Value::as_array)
            .is_some_and(|ts| ts.iter().any(|t| t["key"] == OUT_OF_SERVICE))
}
