//! The operations and their parameters, as scenarios spell them: faults and remediations. One
//! typed catalog serves both, so a runbook's remediation steps are the same operations a fault
//! injects ("remediate: {kubeletRestart: ...}").
//!
//! Node operations (`NodeOperation`) are carried out by the provider's `NodeOps`; runner
//! operations (`RunnerOperation`) by the runner itself, through the Kubernetes API (cordon,
//! uncordon, drain, deletePod) or process control (controllerCrash). What is known about each
//! one (inverse, lifetime, providers) is in `crate::facts`.

use crate::duration::Dur;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::de::{self, MapAccess};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::borrow::Cow;
use std::fmt;
use std::sync::LazyLock;

/// A node, the target of most operations.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NodeTarget {
    /// Node name, one of `spec.cluster.nodes`.
    pub node: String,
}

/// The volume whose device mount goes stale.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema, PartialEq)]
pub enum VolumeRef {
    /// The volume bound to this PVC (`namespace/name` or `name` in `default`).
    #[serde(rename = "pvc")]
    Pvc(String),
    /// This PersistentVolume.
    #[serde(rename = "pv")]
    Pv(String),
    /// A PersistentVolume that no longer exists in the API (the incident's case).
    #[serde(rename = "deletedPV")]
    DeletedPv(String),
}

/// A stale device mount as scenarios spell it; read through `StaleDeviceMountInput`, which also
/// takes the older `blocksQueue: true` for `otherVolumes: queueBlocked`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase", try_from = "StaleDeviceMountInput")]
pub struct StaleDeviceMount {
    pub node: String,
    #[serde(with = "serde_yaml::with::singleton_map")]
    #[schemars(with = "VolumeRef")]
    pub volume: VolumeRef,
    #[serde(default)]
    pub held_by: MountHolder,
    #[serde(default, skip_serializing_if = "OtherVolumes::is_upstream")]
    pub other_volumes: OtherVolumes,
}

/// The fields of `staleDeviceMount` (its schema and its reading).
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct StaleDeviceMountInput {
    node: String,
    #[serde(with = "serde_yaml::with::singleton_map")]
    #[schemars(with = "VolumeRef")]
    volume: VolumeRef,
    /// What keeps the device busy, which decides the remediation that releases it: `kubelet`
    /// (its own stale state: a kubelet restart cleans it up; the default), `csiPlugin` (the node
    /// plugin process: restart or delete the plugin pod), `external` (another reference: only a
    /// reboot or power cycle).
    #[serde(default)]
    held_by: MountHolder,
    /// Sim only: what the stale device does to the node's other volumes. `unaffected` (the
    /// default, as upstream and a real 1.35 kubelet: operations are keyed per volume, so only
    /// this volume's operations wait), `pluginHangs` (the node plugin's calls hang behind the
    /// stuck device: every other MountDevice on the node runs to the 2m CSI deadline,
    /// `FailedMount ... DeadlineExceeded`), `queueBlocked` (the incident RCA's node-wide block:
    /// no other volume operation of the node starts, no MountDevice events).
    #[serde(default)]
    other_volumes: Option<OtherVolumes>,
    /// Older spelling of `otherVolumes: queueBlocked` (true); false changes nothing.
    #[serde(default)]
    blocks_queue: bool,
}

impl TryFrom<StaleDeviceMountInput> for StaleDeviceMount {
    type Error = String;

    fn try_from(i: StaleDeviceMountInput) -> Result<Self, String> {
        let other_volumes = match (i.other_volumes, i.blocks_queue) {
            (None, false) => OtherVolumes::default(),
            (None, true) | (Some(OtherVolumes::QueueBlocked), true) => OtherVolumes::QueueBlocked,
            (Some(o), false) => o,
            (Some(o), true) => {
                return Err(format!(
                    "`blocksQueue: true` is `otherVolumes: queueBlocked`, which contradicts `otherVolumes: {}`",
                    o.name()
                ))
            }
        };
        Ok(StaleDeviceMount {
            node: i.node,
            volume: i.volume,
            held_by: i.held_by,
            other_volumes,
        })
    }
}

// What a stale device mount does to the node's other volumes (`staleDeviceMount.otherVolumes`,
// documented there). A plain comment: a doc comment would change the schema.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, JsonSchema, PartialEq, Eq, Hash)]
#[serde(rename_all = "camelCase")]
pub enum OtherVolumes {
    // Upstream: nestedpendingoperations keys operations per volume, so only this volume's wait.
    #[default]
    Unaffected,
    // The node plugin's calls hang behind the stuck device: other volumes' MountDevice on the
    // node runs to the CSI deadline.
    PluginHangs,
    // The incident RCA's reading: a node-wide lock (upstream has none) keeps every other volume
    // operation of the node from starting.
    QueueBlocked,
}

impl OtherVolumes {
    pub fn is_upstream(&self) -> bool {
        *self == OtherVolumes::Unaffected
    }

    /// As scenarios spell it.
    pub fn name(&self) -> &'static str {
        match self {
            OtherVolumes::Unaffected => "unaffected",
            OtherVolumes::PluginHangs => "pluginHangs",
            OtherVolumes::QueueBlocked => "queueBlocked",
        }
    }
}

// What keeps a stale device mount busy (`staleDeviceMount.heldBy`, documented there); the sim's
// node primitives use this type too. A plain comment: a doc comment would change the schema.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, JsonSchema, PartialEq, Eq, Hash)]
#[serde(rename_all = "camelCase")]
pub enum MountHolder {
    #[default]
    Kubelet,
    CsiPlugin,
    External,
}

/// The CSI driver the sim installs and the catalogue's CSI operations name by default.
pub const LONGHORN_CSI_DRIVER: &str = "driver.longhorn.io";

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CsiDriverUnregistered {
    pub node: String,
    /// The CSI driver's name, as its CSIDriver object and the CSINode list it (default
    /// `driver.longhorn.io`).
    #[serde(default = "default_csi_driver")]
    pub driver: String,
}

fn default_csi_driver() -> String {
    LONGHORN_CSI_DRIVER.into()
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct KubeletWorkersSaturated {
    pub node: String,
    /// Stale non-running pods holding the kubelet's sync workers.
    pub stale_pods: u32,
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NodeReboot {
    pub node: String,
    /// The node hangs in `Rebooting` (hung NFS, disk I/O errors) until `nodePowerCycle`.
    /// Left out of timelines when false: a reboot can still hang because of another fault
    /// (`hungNfs`, `ioErrors`), and "false" there would read as "it did not hang".
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stuck_until_power_cycle: bool,
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ApiErrors {
    /// Fraction of matching requests that fail, 0 < rate <= 1.
    pub rate: f64,
    /// HTTP status code returned, default 500.
    #[serde(default = "default_code")]
    pub code: u16,
    /// Verbs affected (get, list, watch, create, update, patch, delete); empty: all.
    #[serde(default)]
    pub verbs: Vec<String>,
    /// Resources affected (plural names, e.g. pods); empty: all.
    #[serde(default)]
    pub resources: Vec<String>,
}
fn default_code() -> u16 {
    500
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ApiLatency {
    /// Added to every matching request.
    pub latency: Dur,
    #[serde(default)]
    pub verbs: Vec<String>,
    #[serde(default)]
    pub resources: Vec<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Drain {
    pub node: String,
    /// Delete pods that eviction cannot remove (no grace period).
    #[serde(default)]
    pub force: bool,
    /// Give up waiting for evicted pods after this long (default 30s).
    #[serde(default)]
    pub timeout: Option<Dur>,
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DeletePod {
    /// Namespace (default `default`).
    #[serde(default)]
    pub namespace: Option<String>,
    /// One pod by name...
    #[serde(default)]
    pub name: Option<String>,
    /// ...or every pod matching this label selector (e.g. `app=longhorn-csi-plugin`).
    #[serde(default)]
    pub selector: Option<String>,
    /// Only pods bound to this node.
    #[serde(default)]
    pub node: Option<String>,
    /// Delete with grace period 0 (`--force --grace-period=0`).
    #[serde(default)]
    pub force: bool,
}

/// The taint of non-graceful node shutdown (GA in 1.28): the pod GC force-deletes the node's
/// terminating pods and the attach/detach controller detaches their volumes without waiting.
pub const OUT_OF_SERVICE_TAINT: &str = "node.kubernetes.io/out-of-service";

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct OutOfServiceTaint {
    pub node: String,
    /// The taint's effect: `NoExecute` (the default, as the Kubernetes documentation's
    /// `kubectl taint` example: pods that do not tolerate it are evicted) or `NoSchedule`.
    #[serde(default)]
    pub effect: TaintEffect,
    /// The taint's value (default `nodeshutdown`).
    #[serde(default = "default_out_of_service_value")]
    pub value: String,
}

fn default_out_of_service_value() -> String {
    "nodeshutdown".into()
}

// The effects an out-of-service taint can have; a plain comment, as for `MountHolder`.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, JsonSchema, PartialEq, Eq, Hash)]
pub enum TaintEffect {
    #[default]
    NoExecute,
    NoSchedule,
}

impl TaintEffect {
    /// As the Node's `spec.taints[].effect` spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            TaintEffect::NoExecute => "NoExecute",
            TaintEffect::NoSchedule => "NoSchedule",
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema, PartialEq, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ControllerCrash {
    /// Signal used to kill the controller: KILL (default) or TERM.
    #[serde(default)]
    pub signal: Option<String>,
}

macro_rules! catalog {
    ($(#[$meta:meta])* $enum:ident { $($variant:ident($ty:ty) = $key:literal $(| $alias:literal)*, $doc:literal;)* }) => {
        $(#[$meta])*
        #[derive(Clone, Debug, Serialize, PartialEq)]
        pub enum $enum {
            $(#[doc = $doc] #[serde(rename = $key)] $variant($ty),)*
        }
        impl $enum {
            pub const KEYS: &'static [&'static str] = &[$($key),*];
            pub fn key(&self) -> &'static str {
                match self { $(Self::$variant(_) => $key,)* }
            }
            /// What the operation does, as `faultline schema` describes it.
            pub fn description(&self) -> &'static str {
                match self { $(Self::$variant(_) => $doc,)* }
            }
            /// `<key>: <value>` as one map entry, as scenarios spell it.
            pub fn serialize_entry<M: SerializeMap>(&self, m: &mut M) -> Result<(), M::Error> {
                match self { $(Self::$variant(v) => m.serialize_entry($key, v),)* }
            }
            /// The operation `key` (or one of its aliases) names, its value read from `map`;
            /// None when `key` names no operation of this enum.
            pub fn from_key<'de, A: MapAccess<'de>>(key: &str, map: &mut A) -> Result<Option<Self>, A::Error> {
                Ok(Some(match key {
                    $($key $(| $alias)* => Self::$variant(map.next_value()?),)*
                    _ => return Ok(None),
                }))
            }
            pub fn is_key(key: &str) -> bool {
                matches!(key, $($key $(| $alias)*)|*)
            }
            /// Every key the deserializer accepts, aliases included, so editors accept them too.
            pub fn schema_entries(gen: &mut SchemaGenerator) -> Vec<(&'static str, Schema, String)> {
                let mut v: Vec<(&'static str, Schema, String)> = Vec::new();
                $(
                    v.extend(std::iter::once(($key, gen.subschema_for::<$ty>(), $doc.to_string()))
                        .chain([$(($alias, gen.subschema_for::<$ty>(), format!("Alias of `{}`. {}", $key, $doc))),*]));
                )*
                v
            }
        }
        /// A map with exactly one operation, aliases accepted (a journal, a recorded call).
        impl<'de> Deserialize<'de> for $enum {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> de::Visitor<'de> for V {
                    type Value = $enum;
                    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                        write!(f, "a map with one operation, one of {}", quoted_list($enum::KEYS))
                    }
                    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<$enum, A::Error> {
                        let Some(key) = map.next_key::<String>()? else {
                            return Err(de::Error::custom(format!(
                                "no operation given: expected one of {}", quoted_list($enum::KEYS)
                            )));
                        };
                        let op = $enum::from_key(&key, &mut map)?
                            .ok_or_else(|| de::Error::unknown_variant(&key, $enum::KEYS))?;
                        if let Some(k) = map.next_key::<String>()? {
                            return Err(de::Error::custom(format!(
                                "two operations (`{}` and `{k}`): expected exactly one", op.key()
                            )));
                        }
                        Ok(op)
                    }
                }
                d.deserialize_map(V)
            }
        }
    };
}

catalog! {
    /// Operations on a node (or, for apiErrors/apiLatency, the simulated API server), carried
    /// out by the provider's `NodeOps`. Each description is what `faultline schema` shows and
    /// docs/scenarios.md repeats; it says what happens on every provider that does it, naming
    /// a provider where they differ (docs/fidelity.md for the sim's mechanisms).
    NodeOperation {
        StaleDeviceMount(StaleDeviceMount) = "staleDeviceMount", "A volume's device mount on the node keeps another reference, so its UnmountDevice fails (`is still mounted by other references`) and retries with backoff; only that volume's operations wait, other volumes of the node mount normally (as a real 1.35 kubelet does). `heldBy` decides what releases it. On the sim `otherVolumes` can reproduce other accounts instead: `pluginHangs` (other volumes' MountDevice on the node times out after 2m) or `queueBlocked` (the incident RCA's node-wide block, also `blocksQueue: true`).";
        CsiPluginDown(NodeTarget) = "csiPluginDown", "The CSI node plugin (Longhorn's) on the node stops serving, so volume calls on the node fail. On the sim its container crash-loops and the driver stays registered (`connection refused` on its socket); on kind and existing clusters its pod is kept off the node, so the driver is unregistered too.";
        CsiPluginRestart(NodeTarget) = "csiPluginRestart", "Restart the CSI node plugin on the node (sim: its container; kind, existing: its pod is deleted and recreated), releasing what the plugin process held.";
        CsiDriverUnregistered(CsiDriverUnregistered) = "csiDriverUnregistered", "The kubelet's plugin manager loses the CSI driver's registration (its registration socket is removed) while the plugin keeps running: the driver leaves the node's CSINode and volume operations on the node fail with `driver name ... not found in the list of registered CSI drivers`. A registrar that starts again (a new plugin pod, a reboot) registers it again, as the heal does.";
        KubeletWorkersSaturated(KubeletWorkersSaturated) = "kubeletWorkersSaturated", "Stale terminated pods whose volumes cannot be cleaned up are left on the node. On the sim the PLEG relist hangs on their sandboxes: no pod syncs, and the node turns Ready=False (PLEG) after 3 minutes.";
        KubeletStop(NodeTarget) = "kubeletStop", "Stop the kubelet: no pod syncs, no heartbeats; the node lifecycle controller turns the node's Ready condition Unknown after its grace period.";
        KubeletHang(NodeTarget) = "kubeletHang", "The kubelet process lives but its sync loop is stuck: no pod syncs. On the sim its Lease, node status and PLEG go on (the node stays Ready); on kind the whole process is frozen (SIGSTOP), heartbeats included.";
        KubeletRestart(NodeTarget) = "kubeletRestart", "Restart the kubelet: its operation executor and backoffs start empty and pod workers sync again; mounts stay (a stale mount held by the kubelet is cleaned up).";
        ProberManagerBroken(NodeTarget) = "proberManagerBroken", "The kubelet's probes stop succeeding on the node: on the sim no container becomes ready; on kind and existing clusters HTTP, TCP and gRPC probes time out (exec probes still run), so containers with such readiness probes never become ready.";
        NodeReboot(NodeReboot) = "nodeReboot" | "reboot", "Reboot the node: containers restart, mounts and backoffs are gone, a new boot ID. With `stuckUntilPowerCycle`, or while hungNfs or ioErrors is active, it stays down in Rebooting until power cycled.";
        NodePowerCycle(NodeTarget) = "nodePowerCycle" | "powerCycle", "Hard power cycle (IPMI/Redfish): the node comes back clean, also from a stuck reboot or a power-off.";
        NodePowerOff(NodeTarget) = "nodePowerOff", "Power the node off and keep it off: no kubelet, no heartbeats, its containers and mounts gone. The node turns Unknown and is tainted; its pods stay Terminating after eviction and their volumes stay attached until the out-of-service taint (or 6 minutes after the pods are force-deleted). Healed: powered on, it boots clean.";
        NodeNetworkPartition(NodeTarget) = "nodeNetworkPartition", "The node loses its connection to the API server: it runs on with what it has, but its heartbeats and writes do not arrive.";
        HungNfs(NodeTarget) = "hungNfs", "NFS servers stop answering the node, so what it mounts over NFS hangs (on the sim: Longhorn ReadWriteMany volumes; their volume operations end at the CSI deadline, their containers cannot be stopped and PLEG goes unhealthy); a reboot meanwhile hangs until power cycled.";
        IoErrors(NodeTarget) = "ioErrors", "The node's volume disks return I/O errors: mounts and unmounts fail with `input/output error`; a reboot meanwhile hangs until power cycled.";
        ApiErrors(ApiErrors) = "apiErrors", "The API server fails a fraction of matching requests (sim only).";
        ApiLatency(ApiLatency) = "apiLatency", "The API server answers matching requests late (sim only).";
    }
}

catalog! {
    /// Operations the runner carries out itself, through the Kubernetes API or process control.
    RunnerOperation {
        Cordon(NodeTarget) = "cordon", "Mark the node unschedulable (heal: uncordon).";
        Uncordon(NodeTarget) = "uncordon", "Mark the node schedulable.";
        Drain(Drain) = "drain", "Cordon the node and evict its pods, DaemonSet pods excepted (heal: uncordon).";
        OutOfServiceTaint(OutOfServiceTaint) = "outOfServiceTaint", "Taint the node `node.kubernetes.io/out-of-service` (non-graceful node shutdown): once it is not Ready, its terminating pods are force-deleted and their volumes detached without waiting (heal: the taint is removed).";
        DeletePod(DeletePod) = "deletePod", "Delete pods by name or selector (no heal).";
        ControllerCrash(ControllerCrash) = "controllerCrash", "Kill the controller under test (heal: start it again).";
    }
}

impl NodeOperation {
    /// The node this operation targets (None for API-server-wide operations).
    pub fn node(&self) -> Option<&str> {
        use NodeOperation::*;
        match self {
            StaleDeviceMount(s) => Some(&s.node),
            CsiDriverUnregistered(d) => Some(&d.node),
            KubeletWorkersSaturated(k) => Some(&k.node),
            NodeReboot(r) => Some(&r.node),
            CsiPluginDown(t)
            | CsiPluginRestart(t)
            | KubeletStop(t)
            | KubeletHang(t)
            | KubeletRestart(t)
            | ProberManagerBroken(t)
            | NodePowerCycle(t)
            | NodePowerOff(t)
            | NodeNetworkPartition(t)
            | HungNfs(t)
            | IoErrors(t) => Some(&t.node),
            ApiErrors(_) | ApiLatency(_) => None,
        }
    }
    /// The volume a volume-level operation targets.
    pub fn volume(&self) -> Option<&VolumeRef> {
        match self {
            NodeOperation::StaleDeviceMount(s) => Some(&s.volume),
            _ => None,
        }
    }
}

impl RunnerOperation {
    pub fn node(&self) -> Option<&str> {
        match self {
            RunnerOperation::Cordon(t) | RunnerOperation::Uncordon(t) => Some(&t.node),
            RunnerOperation::Drain(d) => Some(&d.node),
            RunnerOperation::OutOfServiceTaint(t) => Some(&t.node),
            RunnerOperation::DeletePod(d) => d.node.as_deref(),
            RunnerOperation::ControllerCrash(_) => None,
        }
    }
}

/// Any operation: a node operation or a runner operation.
#[derive(Clone, Debug, PartialEq)]
pub enum Operation {
    Node(NodeOperation),
    Runner(RunnerOperation),
}

pub static OPERATION_KEYS: LazyLock<Vec<&'static str>> = LazyLock::new(|| {
    NodeOperation::KEYS
        .iter()
        .chain(RunnerOperation::KEYS)
        .copied()
        .collect()
});

impl Operation {
    pub fn key(&self) -> &'static str {
        match self {
            Operation::Node(n) => n.key(),
            Operation::Runner(r) => r.key(),
        }
    }
    pub fn node(&self) -> Option<&str> {
        match self {
            Operation::Node(n) => n.node(),
            Operation::Runner(r) => r.node(),
        }
    }
    pub fn is_key(key: &str) -> bool {
        NodeOperation::is_key(key) || RunnerOperation::is_key(key)
    }
    /// The operation `key` names, its value read from `map` (for languages that embed an
    /// operation as one entry of a larger map, like a scenario's fault step).
    pub fn from_key<'de, A: MapAccess<'de>>(
        key: &str,
        map: &mut A,
    ) -> Result<Option<Self>, A::Error> {
        if let Some(n) = NodeOperation::from_key(key, map)? {
            return Ok(Some(Operation::Node(n)));
        }
        Ok(RunnerOperation::from_key(key, map)?.map(Operation::Runner))
    }
    /// A compact one-line rendering for timelines: `staleDeviceMount{node: worker-04, volume: {deletedPV: pvc-81b676e6}}`.
    pub fn summary(&self) -> String {
        let v = serde_json::to_value(self).unwrap_or_default();
        match v {
            serde_json::Value::Object(m) => m
                .into_iter()
                .map(|(k, v)| format!("{k}{}", compact(&v)))
                .collect(),
            other => other.to_string(),
        }
    }
    pub fn description(&self) -> &'static str {
        match self {
            Operation::Node(n) => n.description(),
            Operation::Runner(r) => r.description(),
        }
    }
    pub fn schema_entries(gen: &mut SchemaGenerator) -> Vec<(&'static str, Schema, String)> {
        let mut v = NodeOperation::schema_entries(gen);
        v.extend(RunnerOperation::schema_entries(gen));
        v
    }
}

/// `{node: worker-04, volume: {deletedPV: x}}`: JSON without quotes, for people.
pub fn compact(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Object(m) => {
            let inner: Vec<String> = m
                .iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| format!("{k}: {}", compact(v)))
                .collect();
            format!("{{{}}}", inner.join(", "))
        }
        serde_json::Value::Array(a) => {
            format!("[{}]", a.iter().map(compact).collect::<Vec<_>>().join(", "))
        }
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A single-key map in every format (serde's derive would make YAML `!tags`, which the
/// deserializer, like scenario authors, does not use).
impl Serialize for Operation {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(1))?;
        self.serialize_entry(&mut m)?;
        m.end()
    }
}

impl Operation {
    pub fn serialize_entry<M: SerializeMap>(&self, m: &mut M) -> Result<(), M::Error> {
        match self {
            Operation::Node(n) => n.serialize_entry(m),
            Operation::Runner(r) => r.serialize_entry(m),
        }
    }
}

impl<'de> Deserialize<'de> for Operation {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> de::Visitor<'de> for V {
            type Value = Operation;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                write!(
                    f,
                    "a map with one operation, one of {}",
                    quoted_list(&OPERATION_KEYS)
                )
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Operation, A::Error> {
                let mut op: Option<Operation> = None;
                while let Some(key) = map.next_key::<String>()? {
                    if let Some(prev) = &op {
                        if Operation::is_key(&key) {
                            return Err(de::Error::custom(format!(
                                "two operations (`{}` and `{key}`): a remediation names exactly one", prev.key()
                            )));
                        }
                    }
                    match Operation::from_key(&key, &mut map)? {
                        Some(o) => op = Some(o),
                        None => return Err(de::Error::unknown_variant(&key, &OPERATION_KEYS)),
                    }
                }
                op.ok_or_else(|| {
                    de::Error::custom(format!(
                        "no operation given: expected one of {}",
                        quoted_list(&OPERATION_KEYS)
                    ))
                })
            }
        }
        d.deserialize_map(V)
    }
}

/// `` `a`, `b` ``: keys as error messages list them.
pub fn quoted_list(keys: &[&str]) -> String {
    keys.iter()
        .map(|k| format!("`{k}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

impl JsonSchema for Operation {
    fn schema_name() -> Cow<'static, str> {
        "Operation".into()
    }
    fn json_schema(gen: &mut SchemaGenerator) -> Schema {
        let one_of: Vec<serde_json::Value> = Operation::schema_entries(gen)
            .into_iter()
            .map(|(k, s, doc)| {
                serde_json::json!({"type": "object", "description": doc, "required": [k], "additionalProperties": false,
                                   "properties": {k: s}})
            })
            .collect();
        schemars::json_schema!({"description": "One operation (fault or remediation)", "oneOf": one_of})
    }
}
