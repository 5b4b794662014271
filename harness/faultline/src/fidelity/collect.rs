//! A run's artifacts (`<report-dir>/<scenario>/`: events.json, logs/kubelet-<node>.log,
//! states.json) as fidelity observations. The state summaries the runner records
//! (`crate::states`) are made here too, so both sides are summarised by one function.

use super::normalise;
use super::{Category, Observations};
use anyhow::Context as _;
use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::Path;
use std::sync::LazyLock;

/// Namespaces of the cluster's own machinery: their events and pods differ by provider (kind
/// runs kube-proxy, CoreDNS and a CSI stack there; the sim none of them) and are left out.
pub const SYSTEM_NAMESPACES: &[&str] = &[
    "kube-system",
    "kube-public",
    "kube-node-lease",
    "longhorn-system",
    "local-path-storage",
    "faultline-system",
];

/// What the runbook greps the kubelet's log for (shared/reference/incident-stale-csi-mount.md:
/// `grep -iE 'NestedPendingOperations|GetDeviceMountRefs|context deadline exceeded'`), and the
/// device (un)mounts whose absence it notes.
pub static KUBELET_PATTERNS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i:NestedPendingOperations|GetDeviceMountRefs|context deadline exceeded)|MountDevice|UnmountDevice")
        .expect("pattern")
});

/// One recorded state change (states.json).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StateChange {
    /// Milliseconds since the scenario's recording started.
    pub at_ms: u64,
    /// `Pod` or `VolumeAttachment`.
    pub kind: String,
    #[serde(default)]
    pub namespace: String,
    pub name: String,
    /// The summary ([`pod_state`], [`attachment_state`]) or `deleted`.
    pub state: String,
    /// A VolumeAttachment's node.
    #[serde(default)]
    pub node: String,
}

fn s<'a>(v: &'a Value, ptr: &str) -> &'a str {
    v.pointer(ptr).and_then(Value::as_str).unwrap_or("")
}

/// A pod's phase, its node, its conditions (`Type` when True, `Type=False(reason)` otherwise,
/// sorted) and whether it is terminating.
pub fn pod_state(pod: &Value) -> String {
    let mut conds: Vec<String> = pod
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|c| {
            let t = s(c, "/type");
            match (s(c, "/status"), s(c, "/reason")) {
                ("True", _) => t.to_string(),
                (st, "") => format!("{t}={st}"),
                (st, r) => format!("{t}={st}({r})"),
            }
        })
        .collect();
    conds.sort();
    let mut out = match s(pod, "/status/phase") {
        "" => "Pending".to_string(),
        p => p.to_string(),
    };
    if !conds.is_empty() {
        out.push_str(&format!(" [{}]", conds.join(" ")));
    }
    if pod.pointer("/metadata/deletionTimestamp").is_some() {
        out.push_str(" terminating");
    }
    out
}

/// A VolumeAttachment's state: attached, attaching, or the error it reports.
pub fn attachment_state(va: &Value) -> String {
    let mut out = if va.pointer("/status/attached").and_then(Value::as_bool) == Some(true) {
        "attached".to_string()
    } else {
        "not attached".to_string()
    };
    if let Some(m) = va
        .pointer("/status/attachError/message")
        .and_then(Value::as_str)
    {
        out.push_str(&format!(" (attachError: {})", normalise::message(m)));
    }
    if let Some(m) = va
        .pointer("/status/detachError/message")
        .and_then(Value::as_str)
    {
        out.push_str(&format!(" (detachError: {})", normalise::message(m)));
    }
    if va.pointer("/metadata/deletionTimestamp").is_some() {
        out.push_str(" deleting");
    }
    out
}

/// Events of the scenario's objects: `Type Kind Reason: message`, normalised.
pub fn events(list: &[Value], into: &mut Observations) {
    for e in list {
        let ns = s(e, "/involvedObject/namespace");
        if ns.is_empty() || SYSTEM_NAMESPACES.contains(&ns) {
            continue;
        }
        let key = format!(
            "{} {} {}: {}",
            s(e, "/type"),
            s(e, "/involvedObject/kind"),
            s(e, "/reason"),
            normalise::message(s(e, "/message"))
        );
        into.insert(Category::Event, key, vec![]);
    }
}

/// The kubelet log lines of `node` that the runbook greps for, normalised.
pub fn kubelet_log(node: &str, text: &str, into: &mut Observations) {
    for line in text.lines().filter(|l| KUBELET_PATTERNS.is_match(l)) {
        into.insert(
            Category::KubeletLog,
            format!("{node}: {}", normalise::message(line)),
            vec![],
        );
    }
}

/// Pods of the scenario's namespaces and VolumeAttachments per node: their states in order,
/// repeats dropped.
pub fn states(changes: &[StateChange], into: &mut Observations) {
    let mut seqs: std::collections::BTreeMap<(Category, String), Vec<String>> = Default::default();
    for c in changes {
        let (cat, key) = match c.kind.as_str() {
            "Pod" if SYSTEM_NAMESPACES.contains(&c.namespace.as_str()) => continue,
            "Pod" => (Category::Pod, format!("{}/{}", c.namespace, c.name)),
            "VolumeAttachment" => (
                Category::VolumeAttachment,
                format!("to {}", if c.node.is_empty() { "?" } else { &c.node }),
            ),
            _ => continue,
        };
        let seq = seqs.entry((cat, key)).or_default();
        if seq.last() != Some(&c.state) {
            seq.push(c.state.clone());
        }
    }
    for ((cat, key), seq) in seqs {
        into.insert(cat, key, seq);
    }
}

/// Every observation in one scenario's artifact directory.
pub fn read_artifacts(dir: &Path) -> anyhow::Result<Observations> {
    let mut o = Observations::default();
    let ev = dir.join("events.json");
    let list: Vec<Value> = serde_json::from_str(
        &std::fs::read_to_string(&ev).with_context(|| format!("reading {}", ev.display()))?,
    )
    .with_context(|| format!("{}: not a JSON list of events", ev.display()))?;
    events(&list, &mut o);
    if let Ok(rd) = std::fs::read_dir(dir.join("logs")) {
        let mut files: Vec<_> = rd.flatten().map(|e| e.path()).collect();
        files.sort();
        for f in files {
            let name = f.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if let Some(node) = name
                .strip_prefix("kubelet-")
                .and_then(|n| n.strip_suffix(".log"))
            {
                let text = std::fs::read_to_string(&f)
                    .with_context(|| format!("reading {}", f.display()))?;
                kubelet_log(node, &text, &mut o);
            }
        }
    }
    let st = dir.join("states.json");
    let changes: Vec<StateChange> = serde_json::from_str(
        &std::fs::read_to_string(&st).with_context(|| format!("reading {}", st.display()))?,
    )
    .with_context(|| format!("{}: not a JSON list of state changes", st.display()))?;
    states(&changes, &mut o);
    Ok(o)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_pod_state_names_phase_conditions_and_termination() {
        let pod = json!({"metadata": {"deletionTimestamp": "x"}, "status": {"phase": "Running", "conditions": [
            {"type": "Ready", "status": "True"}, {"type": "ContainersReady", "status": "False", "reason": "ContainersNotReady"},
            {"type": "PodScheduled", "status": "True"}]}});
        assert_eq!(
            pod_state(&pod),
            "Running [ContainersReady=False(ContainersNotReady) PodScheduled Ready] terminating"
        );
        assert_eq!(pod_state(&json!({})), "Pending");
    }

    #[test]
    fn an_attachment_state_names_its_error_normalised() {
        let va = json!({"status": {"attached": false, "attachError": {"message": "rpc error: volume pvc-0b1c9a52-8d44-4c1b-9a57-1f2e3d4c5b6a busy"}}});
        assert_eq!(
            attachment_state(&va),
            "not attached (attachError: rpc error: volume <pv> busy)"
        );
        assert_eq!(
            attachment_state(&json!({"status": {"attached": true}})),
            "attached"
        );
    }

    #[test]
    fn system_namespaces_and_cluster_scoped_events_are_left_out() {
        let mut o = Observations::default();
        events(
            &[
                json!({"type": "Normal", "reason": "Scheduled", "message": "Successfully assigned default/app-1 to worker-01",
                       "involvedObject": {"kind": "Pod", "namespace": "default", "name": "app-1"}}),
                json!({"type": "Normal", "reason": "Pulled", "involvedObject": {"kind": "Pod", "namespace": "kube-system"}}),
                json!({"type": "Normal", "reason": "Starting", "involvedObject": {"kind": "Node", "name": "worker-01"}}),
            ],
            &mut o,
        );
        let keys: Vec<&str> = o.items.keys().map(|(_, k)| k.as_str()).collect();
        assert_eq!(
            keys,
            ["Normal Pod Scheduled: Successfully assigned default/app-1 to worker-01"]
        );
    }

    #[test]
    fn only_the_runbooks_kubelet_lines_count() {
        let mut o = Observations::default();
        kubelet_log(
            "worker-01",
            "I1207 05:00:00.000000 1 kubelet.go:1] Started kubelet\nE1207 05:00:01.5 1 x.go:2] GetDeviceMountRefs check failed for volume \"pvc-0b1c9a52-8d44-4c1b-9a57-1f2e3d4c5b6a\"\nrpc error: context deadline exceeded\n",
            &mut o,
        );
        let keys: Vec<&str> = o.items.keys().map(|(_, k)| k.as_str()).collect();
        assert_eq!(
            keys,
            [
                "worker-01: GetDeviceMountRefs check failed for volume \"<pv>\"",
                "worker-01: rpc error: context deadline exceeded"
            ]
        );
    }

    #[test]
    fn state_sequences_drop_repeats_and_system_pods() {
        let ch = |kind: &str, ns: &str, name: &str, state: &str, node: &str| StateChange {
            at_ms: 0,
            kind: kind.into(),
            namespace: ns.into(),
            name: name.into(),
            state: state.into(),
            node: node.into(),
        };
        let mut o = Observations::default();
        states(
            &[
                ch("Pod", "default", "app-1", "Pending", ""),
                ch("Pod", "default", "app-1", "Pending", ""),
                ch("Pod", "default", "app-1", "Running", ""),
                ch("Pod", "kube-system", "coredns-x", "Running", ""),
                ch("VolumeAttachment", "", "csi-ab", "attached", "worker-01"),
                ch("VolumeAttachment", "", "csi-ab", "deleted", "worker-01"),
            ],
            &mut o,
        );
        assert_eq!(o.items.len(), 2);
        assert_eq!(
            o.items[&(Category::Pod, "default/app-1".into())],
            ["Pending", "Running"]
        );
        assert_eq!(
            o.items[&(Category::VolumeAttachment, "to worker-01".into())],
            ["attached", "deleted"]
        );
    }
}
