//! The typed scenario language: plain structs, `serde` for YAML, `schemars` for the JSON Schema
//! editors use (`faultline schema`). Structural checks live in the types (unknown fields, enum
//! values, durations); cross-field checks in `crate::loader::validate`.

// Durations live with the operations that take them (`apiLatency`, `drain`).
pub use faultline_faults::duration;
pub mod ops;

pub use duration::Dur;
pub use ops::{Fault, Heal, NodeOperation, Operation, RunnerOperation};

use schemars::JsonSchema;
use serde::{de, Deserialize, Deserializer, Serialize};
use std::collections::BTreeMap;
use std::fmt;

pub const API_VERSION: &str = "faultline.dev/v1alpha1";

/// A scenario: one file, one cluster, one controller under test, steps and invariants.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Scenario {
    /// Always `faultline.dev/v1alpha1`.
    pub api_version: String,
    /// Always `Scenario`.
    pub kind: String,
    pub metadata: Metadata,
    pub spec: ScenarioSpec,
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Metadata {
    /// Unique in the suite; lowercase letters, digits and `-`.
    pub name: String,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ScenarioSpec {
    #[serde(default)]
    pub cluster: ClusterSpec,
    /// The controller under test (a `controllers` entry of the suite config).
    #[serde(default)]
    pub controller: Option<ControllerRef>,
    /// Deadline for the whole scenario (default: the suite's `defaults.scenarioTimeout`).
    #[serde(default)]
    pub timeout: Option<Dur>,
    pub steps: Vec<Step>,
    /// Expectations checked for the whole run, from the first step to the last (typically `never`
    /// conditions and log rates). A violation fails the scenario at once.
    #[serde(default)]
    pub invariants: Vec<Expect>,
    /// Perturbations of what the controller observes (sim only, and only for a controller with
    /// a `serviceAccount`, whose requests the sim tells apart): `faultline explore` writes the
    /// one that broke a variant here, so the scenario reproduces it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub perturb: Vec<Perturb>,
}

/// One perturbation; exactly one field set.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Perturb {
    /// Kill the controller right after the sim answered its k-th (1-based) mutating request
    /// (create, update, patch, delete), then start it again as the scenario started it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crash_after_mutation: Option<u64>,
    /// Answer one of the controller's GETs or LISTs from an earlier state of the store.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stale_read: Option<StaleRead>,
    /// Withhold the N-th (1-based) watch event meant for the controller and close that watch
    /// with 410 Expired instead: it relists and never observes that intermediate state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watch_relist: Option<u64>,
    /// Run one of the scenario's fault steps right after the sim answered the controller's
    /// K-th mutating request, instead of at its place in the steps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub move_fault: Option<MoveFault>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct MoveFault {
    /// The name of a `fault` step of this scenario. It is not run at its place; steps anchored
    /// on it are anchored where it actually ran, and its `heal` applies from there.
    pub step: String,
    /// After which of the controller's mutating requests (1-based) it runs; the controller's
    /// further requests wait until it has been injected.
    pub after_mutation: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct StaleRead {
    /// Which read (1-based, counting the controller's GETs and LISTs).
    pub read: u64,
    /// It is served as it was before the latest change to what it reads, if that change is
    /// younger than this (how far a watch cache may lag; default 3s, at most 1m).
    #[serde(default = "stale_window")]
    pub window: Dur,
}
fn stale_window() -> Dur {
    Dur::secs(3)
}

/// A perturbation as one typed value (`Perturb` with its one field).
#[derive(Clone, Debug, PartialEq)]
pub enum PerturbKind {
    CrashAfterMutation(u64),
    StaleRead(StaleRead),
    WatchRelist(u64),
    MoveFault(MoveFault),
}

impl Perturb {
    /// The kind set, when exactly one is (the loader reports the others).
    pub fn kind(&self) -> Option<PerturbKind> {
        match (
            &self.crash_after_mutation,
            &self.stale_read,
            &self.watch_relist,
            &self.move_fault,
        ) {
            (Some(k), None, None, None) => Some(PerturbKind::CrashAfterMutation(*k)),
            (None, Some(s), None, None) => Some(PerturbKind::StaleRead(s.clone())),
            (None, None, Some(n), None) => Some(PerturbKind::WatchRelist(*n)),
            (None, None, None, Some(m)) => Some(PerturbKind::MoveFault(m.clone())),
            _ => None,
        }
    }
    pub fn from_kind(k: PerturbKind) -> Perturb {
        match k {
            PerturbKind::CrashAfterMutation(k) => Perturb {
                crash_after_mutation: Some(k),
                ..Default::default()
            },
            PerturbKind::StaleRead(s) => Perturb {
                stale_read: Some(s),
                ..Default::default()
            },
            PerturbKind::WatchRelist(n) => Perturb {
                watch_relist: Some(n),
                ..Default::default()
            },
            PerturbKind::MoveFault(m) => Perturb {
                move_fault: Some(m),
                ..Default::default()
            },
        }
    }
}

impl fmt::Display for PerturbKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PerturbKind::CrashAfterMutation(k) => {
                write!(f, "crash after mutating request {k}")
            }
            PerturbKind::StaleRead(s) => write!(f, "stale read {} (window {})", s.read, s.window),
            PerturbKind::WatchRelist(n) => write!(f, "watch event {n} withheld, relist"),
            PerturbKind::MoveFault(m) => write!(
                f,
                "fault `{}` moved after mutating request {}",
                m.step, m.after_mutation
            ),
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ClusterSpec {
    /// Nodes (default: one control plane and three workers, worker-01..03).
    #[serde(default)]
    pub nodes: Vec<NodeSpec>,
    #[serde(default)]
    pub storage: Option<Storage>,
    /// Options of the sim provider (ignored by kind and existing).
    #[serde(default)]
    pub sim: SimSpec,
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SimSpec {
    /// Multiply every simulated duration (kubelet backoffs, node grace periods, reboots) by this
    /// factor; scenario budgets stay in real time. Default 1.
    #[serde(default = "one")]
    pub time_scale: f64,
    /// Serve the API alone: static nodes, no kubelets, scheduler or Longhorn (node faults are
    /// then refused).
    #[serde(default)]
    pub api_only: bool,
}
fn one() -> f64 {
    1.0
}
impl Default for SimSpec {
    fn default() -> Self {
        SimSpec {
            time_scale: 1.0,
            api_only: false,
        }
    }
}

impl ClusterSpec {
    pub fn effective_nodes(&self) -> Vec<NodeSpec> {
        if self.nodes.is_empty() {
            let mut v = vec![NodeSpec {
                name: "control-plane".into(),
                role: NodeRole::ControlPlane,
            }];
            v.extend((1..=3).map(|i| NodeSpec {
                name: format!("worker-{i:02}"),
                role: NodeRole::Worker,
            }));
            v
        } else {
            self.nodes.clone()
        }
    }
    pub fn worker_names(&self) -> Vec<String> {
        self.effective_nodes()
            .into_iter()
            .filter(|n| n.role == NodeRole::Worker)
            .map(|n| n.name)
            .collect()
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NodeSpec {
    pub name: String,
    #[serde(default)]
    pub role: NodeRole,
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, JsonSchema, PartialEq, Eq, Default)]
pub enum NodeRole {
    #[serde(rename = "control-plane")]
    ControlPlane,
    #[default]
    #[serde(rename = "worker")]
    Worker,
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub enum Storage {
    Longhorn,
    None,
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ControllerRef {
    /// Name of an entry in the suite config's `controllers`.
    #[serde(rename = "ref")]
    pub reference: String,
    /// Extra arguments, appended to the suite's.
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}

/// One step. Exactly one of the step kinds (`apply`, `create`, `patch`, `delete`, `fault`,
/// `remediate`, `sleep`, `expect`, `script`, `try`) is given; `catch` and `finally` go with `try`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Step {
    /// Name, for anchors (`after:`), `heal: {atStep}` and reports. Default: `<kind>-<index>`.
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    /// Deadline for this step's operation (default: the suite's `defaults.stepTimeout`).
    #[serde(default)]
    pub timeout: Option<Dur>,
    /// Server-side apply of manifests (a file path, or `{file}` / `{objects}`).
    #[serde(default)]
    pub apply: Option<Manifests>,
    /// Create manifests; fails if an object exists.
    #[serde(default)]
    pub create: Option<Manifests>,
    #[serde(default)]
    pub patch: Option<PatchStep>,
    #[serde(default)]
    pub delete: Option<DeleteStep>,
    #[serde(default)]
    pub fault: Option<Fault>,
    /// A remediation: one operation, e.g. `{kubeletRestart: {node: worker-04}}`.
    #[serde(default)]
    pub remediate: Option<Operation>,
    #[serde(default)]
    pub sleep: Option<Dur>,
    #[serde(default)]
    pub expect: Option<Expect>,
    #[serde(default)]
    pub script: Option<Script>,
    /// Steps run in order; on the first failure the rest are skipped and `catch` runs.
    #[serde(default, rename = "try")]
    pub try_steps: Option<Vec<Step>>,
    /// Run when a `try` step failed (the failure still fails the scenario): diagnostics, clean-up.
    #[serde(default)]
    pub catch: Option<Vec<Step>>,
    /// Always run after `try` (and `catch`).
    #[serde(default)]
    pub finally: Option<Vec<Step>>,
}

pub const STEP_KINDS: &[&str] = &[
    "apply",
    "create",
    "patch",
    "delete",
    "fault",
    "remediate",
    "sleep",
    "expect",
    "script",
    "try",
];

impl Step {
    /// The step kinds present (a valid step has exactly one).
    pub fn kinds(&self) -> Vec<&'static str> {
        let mut v = vec![];
        if self.apply.is_some() {
            v.push("apply")
        }
        if self.create.is_some() {
            v.push("create")
        }
        if self.patch.is_some() {
            v.push("patch")
        }
        if self.delete.is_some() {
            v.push("delete")
        }
        if self.fault.is_some() {
            v.push("fault")
        }
        if self.remediate.is_some() {
            v.push("remediate")
        }
        if self.sleep.is_some() {
            v.push("sleep")
        }
        if self.expect.is_some() {
            v.push("expect")
        }
        if self.script.is_some() {
            v.push("script")
        }
        if self.try_steps.is_some() {
            v.push("try")
        }
        v
    }
    pub fn kind(&self) -> &'static str {
        self.kinds().first().copied().unwrap_or("step")
    }
}

/// Manifests: `apply: path/to/file.yaml` or `apply: {file: ..., namespace: ...}` or
/// `apply: {objects: [{...}], namespace: ...}`.
#[derive(Clone, Debug, Serialize, JsonSchema, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Manifests {
    /// A YAML file (one or more documents), relative to the scenario file.
    #[serde(default)]
    pub file: Option<String>,
    /// Inline objects.
    #[serde(default)]
    pub objects: Vec<serde_json::Value>,
    /// Namespace for namespaced objects that name none (default `default`).
    #[serde(default)]
    pub namespace: Option<String>,
}

impl<'de> Deserialize<'de> for Manifests {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields, rename_all = "camelCase")]
        struct Full {
            #[serde(default)]
            file: Option<String>,
            #[serde(default)]
            objects: Vec<serde_json::Value>,
            #[serde(default)]
            namespace: Option<String>,
        }
        struct V;
        impl<'de> de::Visitor<'de> for V {
            type Value = Manifests;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a file path or a map with `file`, `objects` and `namespace`")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Manifests, E> {
                Ok(Manifests {
                    file: Some(v.to_string()),
                    ..Default::default()
                })
            }
            fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<Manifests, A::Error> {
                let f = Full::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(Manifests {
                    file: f.file,
                    objects: f.objects,
                    namespace: f.namespace,
                })
            }
        }
        d.deserialize_any(V)
    }
}

/// An object reference: `{apiVersion, kind, name, namespace}`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ObjectRef {
    pub api_version: String,
    pub kind: String,
    pub name: String,
    #[serde(default)]
    pub namespace: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PatchStep {
    pub api_version: String,
    pub kind: String,
    pub name: String,
    #[serde(default)]
    pub namespace: Option<String>,
    /// merge (JSON merge patch, default), json (RFC 6902), strategic, or apply.
    #[serde(default)]
    pub r#type: PatchType,
    /// The patch body (a map for merge/strategic/apply, a list for json).
    pub patch: serde_json::Value,
    /// Patch the status subresource.
    #[serde(default)]
    pub status: bool,
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, JsonSchema, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub enum PatchType {
    #[default]
    Merge,
    Json,
    Strategic,
    Apply,
}

/// Delete an object (`{apiVersion, kind, name, namespace}`) or the objects of a file.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DeleteStep {
    #[serde(default)]
    pub api_version: Option<String>,
    #[serde(default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub namespace: Option<String>,
    #[serde(default)]
    pub file: Option<String>,
    /// Wait until the objects are gone (finalizers done). Default true.
    #[serde(default = "yes")]
    pub wait: bool,
}
fn yes() -> bool {
    true
}

/// A shell script (`sh -c`), run in the scenario file's directory with KUBECONFIG set to the
/// cluster's, FAULTLINE set to the faultline binary and FAULTLINE_SEED to the run's seed.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Script {
    pub run: String,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Required exit code (default 0).
    #[serde(default)]
    pub exit_code: i32,
}

/// An expectation. Exactly one of `resource`, `event`, `log`.
///
/// Timing: `within` is a deadline measured from the anchor `after` (default: the end of the
/// previous step); `for` requires the condition to hold continuously for that long (once it holds,
/// with `within`); `never` requires the condition to stay false (for `for`, or - in `invariants` or
/// with `background` - until the scenario ends).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Expect {
    /// Name, used in reports and JUnit test cases (default: the step's name).
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub resource: Option<ResourceExpect>,
    #[serde(default)]
    pub event: Option<EventExpect>,
    #[serde(default)]
    pub log: Option<LogExpect>,
    /// Deadline, measured from `after` (default: the suite's `defaults.expectWithin`).
    #[serde(default)]
    pub within: Option<Dur>,
    /// The condition must hold continuously for this long.
    #[serde(default, rename = "for")]
    pub hold_for: Option<Dur>,
    /// The condition must never hold.
    #[serde(default)]
    pub never: bool,
    /// Anchor the deadline is measured from: `start` (scenario start), `previous` (end of the
    /// previous step, the default), `<step>` (end of that step; for a fault: its injection),
    /// `<step>.start`, `<fault>.healed`.
    #[serde(default)]
    pub after: Option<String>,
    /// Do not block: evaluate alongside the following steps; judged when the scenario ends.
    #[serde(default)]
    pub background: bool,
}

impl Expect {
    pub fn kinds(&self) -> Vec<&'static str> {
        let mut v = vec![];
        if self.resource.is_some() {
            v.push("resource")
        }
        if self.event.is_some() {
            v.push("event")
        }
        if self.log.is_some() {
            v.push("log")
        }
        v
    }
}

/// Objects of one kind, optionally narrowed by namespace, name and label selector, and a CEL
/// condition over them. The object is bound to `object` (null when a named object is absent).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ResourceExpect {
    pub api_version: String,
    pub kind: String,
    #[serde(default)]
    pub namespace: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub label_selector: Option<String>,
    /// CEL over the one named object (`object`, null when absent).
    #[serde(default)]
    pub condition: Option<String>,
    /// CEL: exactly one selected object satisfies it.
    #[serde(default)]
    pub one: Option<String>,
    /// CEL: at least one selected object satisfies it.
    #[serde(default)]
    pub any: Option<String>,
    /// CEL: every selected object satisfies it (and there is at least one).
    #[serde(default)]
    pub all: Option<String>,
    /// CEL: no selected object satisfies it.
    #[serde(default)]
    pub none: Option<String>,
    /// The number of selected objects satisfying `where` (all objects when absent).
    #[serde(default)]
    pub count: Option<CountSpec>,
}

pub const SELECTION_MODES: &[&str] = &["condition", "one", "any", "all", "none", "count"];

impl ResourceExpect {
    pub fn modes(&self) -> Vec<&'static str> {
        let mut v = vec![];
        if self.condition.is_some() {
            v.push("condition")
        }
        if self.one.is_some() {
            v.push("one")
        }
        if self.any.is_some() {
            v.push("any")
        }
        if self.all.is_some() {
            v.push("all")
        }
        if self.none.is_some() {
            v.push("none")
        }
        if self.count.is_some() {
            v.push("count")
        }
        v
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CountSpec {
    #[serde(default, rename = "where")]
    pub filter: Option<String>,
    #[serde(default)]
    pub equals: Option<u64>,
    #[serde(default)]
    pub at_least: Option<u64>,
    #[serde(default)]
    pub at_most: Option<u64>,
}

/// Kubernetes Events (core/v1) seen since the anchor; each field narrows the match.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct EventExpect {
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default)]
    pub r#type: Option<EventType>,
    #[serde(default)]
    pub involved_kind: Option<String>,
    /// Exact name, or a regular expression when written `/.../`.
    #[serde(default)]
    pub involved_name: Option<String>,
    #[serde(default)]
    pub namespace: Option<String>,
    /// Regular expression over the message.
    #[serde(default)]
    pub message: Option<String>,
    /// Occurrences required (default 1).
    #[serde(default)]
    pub at_least: Option<u64>,
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, JsonSchema, PartialEq)]
pub enum EventType {
    Normal,
    Warning,
}

/// Lines of a log matching a regular expression.
///
/// Without `atMost`: the condition is "at least `atLeast` (default 1) matching lines since the
/// anchor". With `atMost` and `per`: a rate limit - violated once more than `atMost` lines match in
/// any sliding window of `per` (hot-loop detection); typically an invariant.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LogExpect {
    pub source: LogSourceKind,
    /// For kubelet/csiPlugin: only this node's log (default: every node).
    #[serde(default)]
    pub node: Option<String>,
    pub pattern: String,
    #[serde(default)]
    pub at_least: Option<u64>,
    #[serde(default)]
    pub at_most: Option<u64>,
    /// Window for `atMost` (default: the whole run).
    #[serde(default)]
    pub per: Option<Dur>,
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, JsonSchema, PartialEq, Eq, Hash)]
#[serde(rename_all = "camelCase")]
pub enum LogSourceKind {
    Controller,
    Kubelet,
    CsiPlugin,
}

/// `scenarios/faultline.yaml`: what every scenario of the suite shares.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Suite {
    pub api_version: String,
    /// Always `Suite`.
    pub kind: String,
    /// Controllers under test, by name (`spec.controller.ref`).
    #[serde(default)]
    pub controllers: BTreeMap<String, ControllerDef>,
    /// CRD manifests applied to every cluster before the controller starts (relative to this file).
    #[serde(default)]
    pub crds: Vec<String>,
    #[serde(default)]
    pub defaults: Defaults,
    /// For `--provider existing`: the kubeconfig contexts faultline may inject faults into.
    #[serde(default)]
    pub existing: ExistingConfig,
    /// For `--provider kind`. Not `kind:`, which names the document type (`kind: Suite`).
    #[serde(default)]
    pub kind_provider: KindProviderConfig,
}

/// `kindProvider:` in the suite file.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct KindProviderConfig {
    /// The node image, e.g. a `docker load`ed `kindest/node:v1.35.5` (a local tag needs no
    /// digest). `--node-image` and FAULTLINE_KIND_NODE_IMAGE override it; default: the pinned image.
    #[serde(default)]
    pub node_image: Option<String>,
    /// Where a scenario asks for `storage: longhorn`, give the StorageClass name `longhorn` to
    /// the node image's CSI driver instead of installing Longhorn, which needs iSCSI on the
    /// Docker host. Faults that need Longhorn itself are refused as unsupported.
    /// `--longhorn-stand-in` sets it.
    #[serde(default)]
    pub longhorn_stand_in: bool,
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ExistingConfig {
    #[serde(default)]
    pub allowed_contexts: Vec<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ControllerDef {
    /// For sim/existing: the command (program and arguments), run with KUBECONFIG set. Relative
    /// program paths are resolved against the suite file's directory. Give either this or `build`.
    #[serde(default)]
    pub command: Vec<String>,
    /// For sim/existing: build the controller from source before its scenario's cluster starts;
    /// the built binary is the program. Give either this or `command`.
    #[serde(default)]
    pub build: Option<ControllerBuild>,
    /// Arguments after the program (of `command` or `build`), before the scenario's `args`.
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Working directory (default: the suite file's directory).
    #[serde(default)]
    pub workdir: Option<String>,
    /// Wait for a log line matching this regular expression before the first step.
    #[serde(default)]
    pub ready_pattern: Option<String>,
    /// For kind: manifests that deploy the controller.
    #[serde(default)]
    pub manifests: Vec<String>,
    /// For sim/existing: run the controller with a token of this ServiceAccount
    /// (`namespace/name`) instead of the admin credentials, so the cluster enforces its RBAC.
    #[serde(default)]
    pub service_account: Option<String>,
    /// Manifests applied (as admin) before the controller starts, e.g. its ServiceAccount,
    /// ClusterRole and binding (relative to the suite file).
    #[serde(default)]
    pub rbac: Vec<String>,
}

/// How a controller is built from source (`build:` of a suite's controller).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ControllerBuild {
    /// `go build` of a package of a Go module, into a cache keyed by the module's sources (the
    /// one builder so far).
    pub go: GoBuild,
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct GoBuild {
    /// The module's directory (holding go.mod and go.sum), relative to the suite file.
    pub module: String,
    /// The main package to build, relative to the module (default `.`).
    #[serde(default = "d_package")]
    pub package: String,
}
fn d_package() -> String {
    ".".into()
}

#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Defaults {
    #[serde(default = "d_expect")]
    pub expect_within: Dur,
    #[serde(default = "d_step")]
    pub step_timeout: Dur,
    #[serde(default = "d_scenario")]
    pub scenario_timeout: Dur,
    /// `--baseline`: a measured duration regressed when it exceeds the baseline by this ratio.
    #[serde(default = "d_ratio")]
    pub regression_ratio: f64,
}
fn d_expect() -> Dur {
    Dur::secs(30)
}
fn d_step() -> Dur {
    Dur::secs(30)
}
fn d_scenario() -> Dur {
    Dur::secs(600)
}
fn d_ratio() -> f64 {
    1.5
}
impl Default for Defaults {
    fn default() -> Self {
        Defaults {
            expect_within: d_expect(),
            step_timeout: d_step(),
            scenario_timeout: d_scenario(),
            regression_ratio: d_ratio(),
        }
    }
}
