//! The node's own objects as the kubelet keeps them: registration (kubelet_node_status.go
//! `registerWithAPIServer`, and the CSINode the CSI plugin's node info manager creates), the
//! node lease controller and the node status updater (each every 10 s nominal, in goroutines of
//! their own upstream, so a kubelet whose sync loop hangs keeps both going), and
//! `status.volumesInUse` (the `VolumesInUse` setter, from the volume manager).

use super::log::KubeletLog;
use super::state::SimNode;
use crate::apiserver::meta;
use crate::events::{EventKind, EventRecorder};
use crate::internal::Internal;
use crate::timing::{SimInstant, Timing};
use serde_json::{json, Value};

/// What the node status side uses of the kubelet.
pub struct NodeStatusContext<'a> {
    pub node: &'a SimNode,
    pub client: &'a Internal,
    pub recorder: &'a EventRecorder,
    pub log: &'a KubeletLog,
    pub timing: &'a Timing,
    /// The runtime's health error (PLEG's), if any: it makes the node Ready=False.
    pub runtime_error: Option<String>,
}

#[derive(Debug, Default)]
pub struct NodeStatus {
    /// When the Lease is renewed next (none yet: at once).
    next_lease: Option<SimInstant>,
    /// `volumesInUse` as last written.
    volumes_in_use: Vec<String>,
}

impl NodeStatus {
    /// Register the node (Node, Lease, CSINode), as every start of a kubelet does
    /// (kubelet_node_status.go `tryRegisterWithAPIServer`): a Node that exists already was
    /// "previously registered".
    pub fn register(&mut self, ctx: &NodeStatusContext<'_>) {
        let mut node_obj = crate::nodes::node_object(
            &ctx.node.name,
            ctx.node.index,
            ctx.node.control_plane,
            &ctx.timing.clock.now_rfc3339(),
        );
        node_obj["status"]["nodeInfo"]["bootID"] = json!(ctx.node.state.lock().boot_id.clone());
        ctx.log.info(
            "kubelet_node_status.go:74",
            &format!("\"Attempting to register node\" node=\"{}\"", ctx.node.name),
        );
        if ctx.client.get("", "nodes", "", &ctx.node.name).is_some() {
            ctx.log.info(
                "kubelet_node_status.go:123",
                &format!(
                    "\"Node was previously registered\" node=\"{}\"",
                    ctx.node.name
                ),
            );
        } else {
            let _ = ctx.client.create("", "nodes", "", node_obj);
        }
        ctx.log.info(
            "kubelet_node_status.go:77",
            &format!(
                "\"Successfully registered node\" node=\"{}\"",
                ctx.node.name
            ),
        );
        if ctx
            .client
            .get("storage.k8s.io", "csinodes", "", &ctx.node.name)
            .is_none()
        {
            let node_uid = ctx
                .client
                .get("", "nodes", "", &ctx.node.name)
                .map(|n| meta::uid(&n).to_string())
                .unwrap_or_default();
            let _ = ctx.client.create(
                "storage.k8s.io",
                "csinodes",
                "",
                json!({"apiVersion": "storage.k8s.io/v1", "kind": "CSINode",
                       "metadata": {"name": ctx.node.name, "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": ctx.node.name, "uid": node_uid}]},
                       "spec": {"drivers": []}}),
            );
        }
        self.renew_lease(ctx, true);
    }

    /// The node lease controller and node status updater: both run every 10 s (nominal) in
    /// goroutines of their own, so a kubelet whose sync loop hangs keeps both going.
    pub fn heartbeat(&mut self, ctx: &NodeStatusContext<'_>) {
        if self
            .next_lease
            .is_none_or(|at| ctx.timing.clock.instant() >= at)
        {
            self.renew_lease(ctx, false);
        }
    }

    pub fn renew_lease(&mut self, ctx: &NodeStatusContext<'_>, force_ready: bool) {
        self.next_lease = Some(ctx.timing.clock.instant() + ctx.timing.s(ctx.timing.lease_renew));
        if ctx.node.state.lock().faults.partitioned {
            return;
        }
        let now = ctx.timing.clock.now_micro();
        let name = ctx.node.name.clone();
        match ctx
            .client
            .get("coordination.k8s.io", "leases", "kube-node-lease", &name)
        {
            Some(_) => {
                let _ = ctx.client.merge(
                    "coordination.k8s.io",
                    "leases",
                    "kube-node-lease",
                    &name,
                    &json!({"spec": {"renewTime": now}}),
                );
            }
            None => {
                let node_uid = ctx
                    .client
                    .get("", "nodes", "", &name)
                    .map(|n| meta::uid(&n).to_string())
                    .unwrap_or_default();
                let _ = ctx.client.create(
                    "coordination.k8s.io",
                    "leases",
                    "kube-node-lease",
                    json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                           "metadata": {"name": name, "namespace": "kube-node-lease", "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": name, "uid": node_uid}]},
                           "spec": {"holderIdentity": name, "leaseDurationSeconds": 40, "renewTime": now}}),
                );
            }
        }
        self.post_node_status(ctx, force_ready);
    }

    /// Post the node's conditions when they differ from what the API has: Ready=True
    /// (KubeletReady), or Ready=False (KubeletNotReady) while PLEG is unhealthy.
    fn post_node_status(&self, ctx: &NodeStatusContext<'_>, force: bool) {
        let name = ctx.node.name.clone();
        let Some(node) = ctx.client.get("", "nodes", "", &name) else {
            return;
        };
        let boot_id = ctx.node.state.lock().boot_id.clone();
        let boot_changed = node
            .pointer("/status/nodeInfo/bootID")
            .and_then(Value::as_str)
            != Some(boot_id.as_str());
        let pleg = ctx.runtime_error.clone();
        let was = meta::condition_status(&node, "Ready").map(String::from);
        let old_msg = node
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .and_then(|cs| cs.iter().find(|c| c["type"] == "Ready"))
            .and_then(|c| c["message"].as_str().map(String::from));
        let (status, reason, message) = match &pleg {
            None => (
                "True",
                "KubeletReady",
                "kubelet is posting ready status".to_string(),
            ),
            Some(err) => ("False", "KubeletNotReady", err.clone()),
        };
        if !force
            && !boot_changed
            && was.as_deref() == Some(status)
            && old_msg.as_deref() == Some(message.as_str())
        {
            return;
        }
        let mut fresh = crate::nodes::node_object(
            &name,
            ctx.node.index,
            ctx.node.control_plane,
            &ctx.timing.clock.now_rfc3339(),
        );
        fresh["status"]["nodeInfo"]["bootID"] = json!(boot_id);
        if let Some(conds) = fresh["status"]["conditions"].as_array_mut() {
            for c in conds.iter_mut() {
                if c["type"] == "Ready" {
                    c["status"] = json!(status);
                    c["reason"] = json!(reason);
                    c["message"] = json!(message);
                }
                // Unchanged statuses keep their transition time.
                let old = node
                    .pointer("/status/conditions")
                    .and_then(Value::as_array)
                    .and_then(|cs| {
                        cs.iter()
                            .find(|o| o["type"] == c["type"] && o["status"] == c["status"])
                            .cloned()
                    });
                if let Some(old) = old {
                    c["lastTransitionTime"] = old["lastTransitionTime"].clone();
                }
            }
        }
        let patch = json!({"status": {"conditions": fresh["status"]["conditions"], "nodeInfo": fresh["status"]["nodeInfo"]}});
        let _ = ctx.client.merge_status("", "nodes", "", &name, &patch);
        if was.as_deref() != Some(status) {
            let event = if status == "True" {
                "NodeReady"
            } else {
                "NodeNotReady"
            };
            ctx.recorder.record(
                &node,
                EventKind::Normal,
                event,
                &format!("Node {} status is now: {}", name, event),
            );
        }
        if boot_changed && force {
            ctx.recorder.record(
                &node,
                EventKind::Warning,
                "Rebooted",
                &format!("Node {} has been rebooted, boot id: {}", name, boot_id),
            );
        }
    }

    /// `node.status.volumesInUse`: every volume the desired state wants (as soon as a pod on the
    /// node wants it) plus those still mounted.
    pub fn post_volumes_in_use(&mut self, ctx: &NodeStatusContext<'_>, in_use: Vec<String>) {
        if in_use != self.volumes_in_use
            && ctx
                .client
                .merge_status(
                    "",
                    "nodes",
                    "",
                    &ctx.node.name,
                    &json!({"status": {"volumesInUse": in_use}}),
                )
                .is_ok()
        {
            self.volumes_in_use = in_use;
        }
    }
}
