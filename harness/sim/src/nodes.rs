//! The Node objects a simulated node registers, shaped like a kubelet's registration.

use serde_json::{json, Value};

/// Kubelet version the simulated nodes report.
pub const KUBELET_VERSION: &str = "v1.35.0";

/// A Ready node as a kubelet registers it. `index` makes addresses unique; `now` is the
/// cluster clock's time (the conditions' heartbeat and transition).
pub fn node_object(name: &str, index: usize, control_plane: bool, now: &str) -> Value {
    let mut labels = json!({
        "kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64",
    });
    if control_plane {
        labels["node-role.kubernetes.io/control-plane"] = json!("");
    }
    let cond = |t: &str, s: &str, reason: &str, msg: &str| json!({"type": t, "status": s, "lastHeartbeatTime": now, "lastTransitionTime": now, "reason": reason, "message": msg});
    let mut spec = json!({"podCIDR": format!("10.244.{}.0/24", index), "podCIDRs": [format!("10.244.{}.0/24", index)]});
    if control_plane {
        spec["taints"] =
            json!([{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]);
    }
    json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": labels, "annotations": {"node.alpha.kubernetes.io/ttl": "0", "volumes.kubernetes.io/controller-managed-attach-detach": "true"}},
        "spec": spec,
        "status": {
            "capacity": {"cpu": "8", "memory": "32863252Ki", "pods": "110", "ephemeral-storage": "102626232Ki", "hugepages-2Mi": "0"},
            "allocatable": {"cpu": "8", "memory": "32760852Ki", "pods": "110", "ephemeral-storage": "94580335255", "hugepages-2Mi": "0"},
            "conditions": [
                cond("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
                cond("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                cond("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
                cond("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
            ],
            "addresses": [{"type": "InternalIP", "address": format!("172.18.0.{}", index + 2)}, {"type": "Hostname", "address": name}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "machineID": format!("{:032x}", index + 1), "systemUUID": format!("00000000-0000-0000-0000-{:012x}", index + 1),
                "bootID": uuid::Uuid::new_v4().to_string(), "kernelVersion": "6.12.0-faultline", "osImage": "Debian GNU/Linux 12 (bookworm)",
                "containerRuntimeVersion": "containerd://2.1.6", "kubeletVersion": KUBELET_VERSION, "kubeProxyVersion": "",
                "operatingSystem": "linux", "architecture": "amd64"
            }
        }
    })
}
