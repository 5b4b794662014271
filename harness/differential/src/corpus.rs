//! The corpus: scripts of requests, hand-written, recorded from real clients, or generated from
//! the table of one minimal example object per built-in resource (`corpus/resources.yaml`).
//!
//! A script runs in a fresh namespace (`{{ns}}`) on each target. Its steps are requests; a step's
//! path, query, header values and body may name values of earlier responses:
//!
//! | placeholder | value |
//! | --- | --- |
//! | `{{ns}}` | the script's namespace |
//! | `{{rv:N}}` (or `{{resourceVersion:N}}`) | `metadata.resourceVersion` of step N's response |
//! | `{{continue:N}}` | `metadata.continue` of step N's response |
//! | `{{uid:N}}`, `{{name:N}}` | `metadata.uid` / `metadata.name` of step N's response |
//! | `{{var:x}}` | a value a step saved with `save: {x: /json/pointer}` |
//! | `{{old-rv}}` | a resourceVersion far behind the target's current one (for 410s) |
//!
//! N counts steps from 0; a negative N counts back from the current step (`-1` is the previous).

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::path::Path;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Script {
    pub name: String,
    /// Where the script came from: `generated`, `hand`, or `recorded:<client>`.
    #[serde(default = "hand")]
    pub source: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Controllers act on the script's objects: wait this long before every step that names
    /// no `sleep_ms` of its own, so both targets answer from the settled state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settle_ms: Option<u64>,
    pub steps: Vec<Step>,
}

fn hand() -> String {
    "hand".into()
}

fn yes() -> bool {
    true
}

fn is_true(b: &bool) -> bool {
    *b
}

/// How much of a step's response is compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Compare {
    /// Status code, Content-Type and the normalised body.
    #[default]
    Full,
    /// The status code alone (the body is timing-dependent; the step says why in `note`).
    Status,
    /// A set-up step: run, not compared, not counted.
    None,
}

fn is_full(c: &Compare) -> bool {
    *c == Compare::Full
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WatchOpts {
    /// Stop after this many events (frames).
    #[serde(default = "default_events")]
    pub events: usize,
    /// Stop after this long without reaching `events`.
    #[serde(default = "default_watch_ms")]
    pub timeout_ms: u64,
}

fn default_events() -> usize {
    10
}
fn default_watch_ms() -> u64 {
    3000
}

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct Step {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default = "get")]
    pub method: String,
    /// The path, optionally with a query string.
    pub path: String,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub query: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<Value>,
    /// A body sent as it is (YAML, a garbled document).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_body: Option<String>,
    /// `sa:<namespace>/<name>`: send this request with that ServiceAccount's token (from the
    /// script's last TokenRequest for it, or a fresh one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// Read the response as a watch stream, bounded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watch: Option<WatchOpts>,
    #[serde(default, skip_serializing_if = "is_full")]
    pub compare: Compare,
    /// JSON pointers (prefixes) left out of the comparison; `note` says why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ignore: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Values of this response to keep for later steps: `{{var:NAME}}`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub save: BTreeMap<String, String>,
    /// Wait this long before sending (lets a watch's timeout or an asynchronous effect pass).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sleep_ms: Option<u64>,
    /// Whether the step reads its whole response (false: only a status code is needed).
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub read_body: bool,
}

fn get() -> String {
    "GET".into()
}

/// A file holds one script or a list of them.
#[derive(Deserialize)]
#[serde(untagged)]
enum ScriptFile {
    One(Script),
    Many(Vec<Script>),
}

/// Loads every `*.yaml`/`*.json` script under `dir` (recursively, sorted by path), and the
/// scripts generated from `dir/resources.yaml` when it exists.
pub fn load(dir: &Path) -> Result<Vec<Script>> {
    let mut files = Vec::new();
    collect(dir, &mut files)?;
    files.sort();
    let mut scripts = Vec::new();
    for f in files {
        let text =
            std::fs::read_to_string(&f).with_context(|| format!("reading {}", f.display()))?;
        if f.file_name().and_then(|n| n.to_str()) == Some("resources.yaml") {
            let table: Vec<ResourceExample> =
                serde_yaml::from_str(&text).with_context(|| format!("parsing {}", f.display()))?;
            scripts.extend(generate(&table));
            continue;
        }
        let parsed: ScriptFile = if f.extension().and_then(|e| e.to_str()) == Some("json") {
            serde_json::from_str(&text).with_context(|| format!("parsing {}", f.display()))?
        } else {
            serde_yaml::from_str(&text).with_context(|| format!("parsing {}", f.display()))?
        };
        match parsed {
            ScriptFile::One(s) => scripts.push(s),
            ScriptFile::Many(v) => scripts.extend(v),
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    for s in &scripts {
        if !seen.insert(s.name.clone()) {
            bail!("two scripts are named {:?}", s.name);
        }
    }
    Ok(scripts)
}

fn collect(dir: &Path, out: &mut Vec<std::path::PathBuf>) -> Result<()> {
    for e in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let p = e?.path();
        if p.is_dir() {
            collect(&p, out)?;
        } else if matches!(
            p.extension().and_then(|e| e.to_str()),
            Some("yaml" | "yml" | "json")
        ) {
            out.push(p);
        }
    }
    Ok(())
}

/// One row of `corpus/resources.yaml`: a built-in resource and a minimal valid object of it.
#[derive(Debug, Clone, Deserialize)]
pub struct ResourceExample {
    #[serde(default)]
    pub group: String,
    pub version: String,
    pub kind: String,
    pub plural: String,
    #[serde(default = "yes")]
    pub namespaced: bool,
    /// The object without `apiVersion`, `kind` and `metadata.name`/`namespace` (added here).
    #[serde(default)]
    pub example: Value,
    /// `crud` (default), `create` (reviews: created and answered), `read` (get and list only).
    #[serde(default = "crud")]
    pub verbs: String,
    /// A fixed object name for kinds whose names are constrained (IPAddress: an address).
    #[serde(default)]
    pub names: Vec<String>,
    #[serde(default)]
    pub status: bool,
    #[serde(default)]
    pub scale: bool,
    /// A merge patch of the status subresource (default: none, only GET status).
    #[serde(default)]
    pub status_patch: Option<Value>,
    /// A merge patch of the object's spec-like fields, sent after the label patches.
    #[serde(default)]
    pub spec_patch: Option<Value>,
    /// Strategic merge patch is served (built-ins: yes).
    #[serde(default = "yes")]
    pub strategic: bool,
    /// Table output is served by a printer column set (all built-ins have one).
    #[serde(default = "yes")]
    pub table: bool,
    /// Controllers act on the kind (status, finalizers): wait this long before each step after
    /// the create, so that both targets answer from the settled state.
    #[serde(default)]
    pub settle_ms: Option<u64>,
    /// Skip deletecollection (namespaces do not serve it).
    #[serde(default = "yes")]
    pub deletecollection: bool,
}

fn crud() -> String {
    "crud".into()
}

impl ResourceExample {
    fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    fn collection(&self) -> String {
        let prefix = if self.group.is_empty() {
            format!("/api/{}", self.version)
        } else {
            format!("/apis/{}/{}", self.group, self.version)
        };
        if self.namespaced {
            format!("{prefix}/namespaces/{{{{ns}}}}/{}", self.plural)
        } else {
            format!("{prefix}/{}", self.plural)
        }
    }

    /// The i-th object name of this resource in a script: cluster-scoped names carry the
    /// namespace so scripts do not collide.
    fn name(&self, i: usize) -> String {
        if let Some(n) = self.names.get(i) {
            return n.replace("{{i}}", &(i + 1).to_string());
        }
        let base = self.kind.to_lowercase();
        if self.namespaced {
            format!("{base}-{}", i + 1)
        } else {
            format!("{{{{ns}}}}-{base}-{}", i + 1)
        }
    }

    fn object(&self, i: usize, extra_labels: &[(&str, &str)]) -> Value {
        let mut obj = match &self.example {
            Value::Object(m) => m.clone(),
            _ => Map::new(),
        };
        let mut meta = match obj.remove("metadata") {
            Some(Value::Object(m)) => m,
            _ => Map::new(),
        };
        meta.insert("name".into(), json!(self.name(i)));
        if self.namespaced {
            meta.insert("namespace".into(), json!("{{ns}}"));
        }
        let mut labels = match meta.remove("labels") {
            Some(Value::Object(m)) => m,
            _ => Map::new(),
        };
        labels.insert(LABEL.into(), json!("{{ns}}"));
        for (k, v) in extra_labels {
            labels.insert((*k).into(), json!(v));
        }
        meta.insert("labels".into(), Value::Object(labels));
        let mut out = Map::new();
        out.insert("apiVersion".into(), json!(self.api_version()));
        out.insert("kind".into(), json!(self.kind));
        out.insert("metadata".into(), Value::Object(meta));
        out.extend(obj);
        let text = Value::Object(out)
            .to_string()
            .replace("{{i}}", &(i + 1).to_string());
        serde_json::from_str(&text).expect("still JSON")
    }

    /// The example as a create-only kind takes it: no name, no labels.
    fn bare(&self) -> Value {
        let mut o = self.object(0, &[]);
        if let Some(m) = o.get_mut("metadata").and_then(Value::as_object_mut) {
            m.remove("name");
            m.remove("labels");
            if m.is_empty() {
                o.as_object_mut().expect("object").remove("metadata");
            }
        }
        o
    }
}

/// The label every generated object carries (value: the script's namespace), so that lists and
/// deletecollections of cluster-scoped resources stay within the script.
pub const LABEL: &str = "diff.faultline.dev/ns";

pub const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
pub const MERGE: &str = "application/merge-patch+json";
pub const STRATEGIC: &str = "application/strategic-merge-patch+json";
pub const JSON_PATCH: &str = "application/json-patch+json";
pub const APPLY: &str = "application/apply-patch+yaml";

fn step(method: &str, path: String) -> Step {
    Step {
        method: method.into(),
        path,
        read_body: true,
        ..Default::default()
    }
}

impl Step {
    pub fn named(mut self, name: &str) -> Step {
        self.name = Some(name.into());
        self
    }
    pub fn q(mut self, k: &str, v: &str) -> Step {
        self.query.insert(k.into(), v.into());
        self
    }
    pub fn header(mut self, k: &str, v: &str) -> Step {
        self.headers.insert(k.into(), v.into());
        self
    }
    pub fn body(mut self, v: Value) -> Step {
        self.body = Some(v);
        self
    }
    pub fn content_type(self, ct: &str) -> Step {
        self.header("Content-Type", ct)
    }
}

/// Generates one script per resource of the table: the verbs the resource serves, each once.
pub fn generate(table: &[ResourceExample]) -> Vec<Script> {
    table.iter().map(generate_one).collect()
}

fn generate_one(r: &ResourceExample) -> Script {
    let coll = r.collection();
    let item = |i: usize| format!("{coll}/{}", r.name(i));
    let mut steps = Vec::new();
    let sel = format!("{LABEL}={{{{ns}}}}");
    match r.verbs.as_str() {
        "create" => {
            steps.push(step("POST", coll.clone()).named("create").body(r.bare()));
            steps.push(
                step("POST", coll.clone())
                    .named("create dryRun")
                    .q("dryRun", "All")
                    .body(r.bare()),
            );
            steps.push(step("GET", coll.clone()).named("list: not served"));
        }
        "read" => {
            steps.push(step("GET", coll.clone()).named("list"));
            steps.push(
                step("GET", coll.clone())
                    .named("list as Table")
                    .header("Accept", TABLE),
            );
        }
        _ => {
            // 0: create
            steps.push(
                step("POST", coll.clone())
                    .named("create")
                    .body(r.object(0, &[])),
            );
            steps.push(step("GET", item(0)).named("get"));
            if r.table {
                steps.push(
                    step("GET", item(0))
                        .named("get as Table")
                        .header("Accept", TABLE),
                );
            }
            steps.push(
                step("POST", coll.clone())
                    .named("create again: AlreadyExists")
                    .body(r.object(0, &[])),
            );
            steps.push(
                step("GET", coll.clone())
                    .named("list")
                    .q("labelSelector", &sel),
            );
            steps.push(
                step("GET", coll.clone())
                    .named("list by fieldSelector metadata.name")
                    .q("fieldSelector", &format!("metadata.name={}", r.name(0))),
            );
            steps.push(
                step("GET", coll.clone())
                    .named("list by a label selector that matches nothing")
                    .q("labelSelector", &format!("{sel},absent")),
            );
            if r.table {
                steps.push(
                    step("GET", coll.clone())
                        .named("list as Table")
                        .q("labelSelector", &sel)
                        .header("Accept", TABLE),
                );
            }
            // update: the example with the create's resourceVersion and one more label
            let mut upd = r.object(0, &[("updated", "put")]);
            upd["metadata"]["resourceVersion"] = json!("{{rv:0}}");
            steps.push(step("PUT", item(0)).named("update").body(upd.clone()));
            steps.push(
                step("PUT", item(0))
                    .named("update with a stale resourceVersion: Conflict")
                    .body(upd),
            );
            steps.push(
                step("PATCH", item(0))
                    .named("merge patch")
                    .content_type(MERGE)
                    .body(json!({"metadata": {"labels": {"patched": "merge"}}})),
            );
            if r.strategic {
                steps.push(
                    step("PATCH", item(0))
                        .named("strategic merge patch")
                        .content_type(STRATEGIC)
                        .body(json!({"metadata": {"labels": {"patched": "strategic"}}})),
                );
            }
            steps.push(
                step("PATCH", item(0))
                    .named("json patch")
                    .content_type(JSON_PATCH)
                    .body(json!([
                        {"op": "add", "path": "/metadata/labels/jsonpatch", "value": "yes"},
                        {"op": "test", "path": "/metadata/labels/patched", "value": if r.strategic {"strategic"} else {"merge"}}
                    ])),
            );
            steps.push(
                step("PATCH", item(0))
                    .named("json patch test fails")
                    .content_type(JSON_PATCH)
                    .body(json!([{"op": "test", "path": "/metadata/labels/patched", "value": "nope"}])),
            );
            if let Some(p) = &r.spec_patch {
                steps.push(
                    step("PATCH", item(0))
                        .named("merge patch of the spec")
                        .content_type(MERGE)
                        .body(p.clone()),
                );
            }
            // server-side apply
            let applied = r.object(1, &[("owner", "a")]);
            steps.push(
                step("PATCH", item(1))
                    .named("apply: create")
                    .q("fieldManager", "diff-a")
                    .content_type(APPLY)
                    .body(applied.clone()),
            );
            steps.push(
                step("PATCH", item(1))
                    .named("apply again: no change")
                    .q("fieldManager", "diff-a")
                    .content_type(APPLY)
                    .body(applied),
            );
            steps.push(
                step("PATCH", item(1))
                    .named("apply by another manager: Conflict")
                    .q("fieldManager", "diff-b")
                    .content_type(APPLY)
                    .body(r.object(1, &[("owner", "b")])),
            );
            steps.push(
                step("PATCH", item(1))
                    .named("apply by another manager, forced")
                    .q("fieldManager", "diff-b")
                    .q("force", "true")
                    .content_type(APPLY)
                    .body(r.object(1, &[("owner", "b")])),
            );
            steps.push(
                step("PATCH", item(1))
                    .named("apply without fieldManager")
                    .content_type(APPLY)
                    .body(r.object(1, &[("owner", "b")])),
            );
            // dry run
            steps.push(
                step("POST", coll.clone())
                    .named("create dryRun=All")
                    .q("dryRun", "All")
                    .body(r.object(2, &[])),
            );
            steps.push(step("GET", item(2)).named("get after dry run: NotFound"));
            steps.push(
                step("DELETE", item(1))
                    .named("delete dryRun=All")
                    .q("dryRun", "All"),
            );
            if r.status {
                steps.push(step("GET", format!("{}/status", item(0))).named("get status"));
                if let Some(p) = &r.status_patch {
                    steps.push(
                        step("PATCH", format!("{}/status", item(0)))
                            .named("merge patch status")
                            .content_type(MERGE)
                            .body(p.clone()),
                    );
                }
            }
            if r.scale {
                steps.push(step("GET", format!("{}/scale", item(0))).named("get scale"));
                steps.push(
                    step("PATCH", format!("{}/scale", item(0)))
                        .named("merge patch scale")
                        .content_type(MERGE)
                        .body(json!({"spec": {"replicas": 2}})),
                );
                steps.push(
                    step("PUT", format!("{}/scale", item(0)))
                        .named("update scale")
                        .body(json!({"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": r.name(0), "namespace": if r.namespaced {"{{ns}}"} else {""}}, "spec": {"replicas": 3}})),
                );
            }
            steps.push(step("GET", item(0)).named("get after the changes"));
            steps.push(step("DELETE", item(0)).named("delete"));
            steps.push(step("GET", item(0)).named("get after delete"));
            steps.push(step("DELETE", item(0)).named("delete again: NotFound"));
            if r.deletecollection {
                steps.push(
                    step("DELETE", coll.clone())
                        .named("deletecollection")
                        .q("labelSelector", &sel),
                );
                steps.push(
                    step("GET", coll.clone())
                        .named("list after deletecollection")
                        .q("labelSelector", &sel),
                );
            } else {
                steps.push(step("DELETE", item(1)).named("delete the applied object"));
            }
        }
    }
    if let Some(ms) = r.settle_ms {
        for s in steps.iter_mut().skip(1) {
            s.sleep_ms = Some(ms);
        }
    }
    let group = if r.group.is_empty() { "core" } else { &r.group };
    Script {
        name: format!("generated/{group}/{}/{}", r.version, r.plural),
        source: "generated".into(),
        description: Some(format!(
            "{} {}: every verb it serves",
            r.api_version(),
            r.kind
        )),
        settle_ms: None,
        steps,
    }
}
