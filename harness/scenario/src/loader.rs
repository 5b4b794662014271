//! Loading scenario files and the suite config, with diagnostics `file:line:col: error: ...`.
//!
//! Two passes: serde_yaml deserializes into the typed model (structural errors: unknown fields
//! with the allowed names, enum values, types, durations; it knows their locations), then
//! `validate` checks what types cannot (exactly one step kind, anchors, node names, CEL, regular
//! expressions, files) and locates each finding through `Spans`.

use crate::celx::Condition;
use crate::model::*;
use crate::spans::{Pos, Spans};
use regex::Regex;
use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub file: PathBuf,
    pub line: usize,
    pub col: usize,
    pub message: String,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: error: {}",
            self.file.display(),
            self.line,
            self.col,
            self.message
        )
    }
}

impl Diagnostic {
    pub fn at(file: &Path, pos: Pos, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            file: file.to_path_buf(),
            line: pos.line,
            col: pos.col,
            message: message.into(),
        }
    }
}

pub const SUITE_FILE: &str = "faultline.yaml";

#[derive(Clone, Debug)]
pub struct LoadedScenario {
    pub path: PathBuf,
    pub dir: PathBuf,
    pub scenario: Scenario,
}

#[derive(Clone, Debug, Default)]
pub struct LoadedSuite {
    pub path: Option<PathBuf>,
    pub dir: PathBuf,
    pub suite: Suite,
    /// The suite config has errors (reported once): scenarios skip the checks that need it.
    pub broken: bool,
}

/// The scenario files named by `paths` (directories: their `*.yaml`/`*.yml` files, except the
/// suite config), sorted, without duplicates.
pub fn collect_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, Diagnostic> {
    let mut out = BTreeSet::new();
    for p in paths {
        if p.is_dir() {
            let rd = std::fs::read_dir(p).map_err(|e| io_diag(p, &e))?;
            for entry in rd.flatten() {
                let f = entry.path();
                let name = f.file_name().and_then(|n| n.to_str()).unwrap_or("");
                if f.is_file()
                    && (name.ends_with(".yaml") || name.ends_with(".yml"))
                    && name != SUITE_FILE
                    && !is_kubernetes_manifest(&f)
                {
                    out.insert(f);
                }
            }
        } else if p.is_file() {
            out.insert(p.clone());
        } else {
            return Err(Diagnostic {
                file: p.clone(),
                line: 1,
                col: 1,
                message: "no such file or directory".into(),
            });
        }
    }
    Ok(out.into_iter().collect())
}

/// In a directory, a YAML file whose apiVersion is not faultline's is a manifest the scenarios
/// apply, not a scenario. (Named explicitly, every file is loaded as a scenario.)
fn is_kubernetes_manifest(f: &Path) -> bool {
    let Ok(src) = std::fs::read_to_string(f) else {
        return false;
    };
    let Some(doc) = serde_yaml::Deserializer::from_str(&src).next() else {
        return false;
    };
    let Ok(v) = <serde_yaml::Value as serde::Deserialize>::deserialize(doc) else {
        return false;
    };
    match v.get("apiVersion").and_then(|a| a.as_str()) {
        Some(a) => !a.starts_with("faultline.dev/"),
        None => false,
    }
}

/// The directory of a file, `.` for a bare file name.
pub fn parent_dir(file: &Path) -> PathBuf {
    match file.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

fn io_diag(p: &Path, e: &std::io::Error) -> Diagnostic {
    Diagnostic {
        file: p.to_path_buf(),
        line: 1,
        col: 1,
        message: format!("cannot read: {e}"),
    }
}

/// The suite config for `start`: `faultline.yaml` in that directory or an ancestor.
pub fn find_suite(start: &Path) -> Option<PathBuf> {
    let mut dir = if start.is_dir() {
        Some(start.to_path_buf())
    } else {
        start.parent().map(Path::to_path_buf)
    };
    while let Some(d) = dir {
        let d = if d.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            d
        };
        for candidate in [d.join(SUITE_FILE), d.join("scenarios").join(SUITE_FILE)] {
            if candidate.is_file() {
                return Some(candidate);
            }
        }
        dir = std::fs::canonicalize(&d)
            .ok()
            .and_then(|c| c.parent().map(Path::to_path_buf));
    }
    None
}

/// serde_yaml error -> diagnostic: its message (which names the path and the allowed values)
/// without the trailing " at line L column C", placed at its location.
///
/// Errors raised by the hand-written map visitors (faults, operations) carry the location of the
/// map rather than of the offending key; those are moved to the key through `Spans`.
fn yaml_diag(file: &Path, e: &serde_yaml::Error, src: &str) -> Diagnostic {
    let msg = e.to_string();
    let re = Regex::new(r" at line \d+ column \d+").unwrap();
    let msg = re.replace(&msg, "").to_string();
    let (mut line, mut col) = e
        .location()
        .map(|l| (l.line(), l.column()))
        .unwrap_or((1, 1));
    let key_re =
        Regex::new(r"^([A-Za-z0-9_.\[\]-]+): unknown (?:field|variant) `([^`]+)`").unwrap();
    if let Some(c) = key_re.captures(&msg) {
        let spans = Spans::parse(src);
        let key_path = format!("{}.{}", &c[1], &c[2]);
        if spans.has(&key_path) {
            let p = spans.key(&key_path);
            (line, col) = (p.line, p.col);
        }
    }
    Diagnostic {
        file: file.to_path_buf(),
        line,
        col,
        message: msg,
    }
}

fn read(file: &Path) -> Result<String, Vec<Diagnostic>> {
    std::fs::read_to_string(file).map_err(|e| vec![io_diag(file, &e)])
}

/// Editors on Windows save UTF-8 with a byte order mark; YAML allows it, serde_yaml does not.
fn without_bom(src: &str) -> &str {
    src.strip_prefix('\u{feff}').unwrap_or(src)
}

/// Whether a YAML source is a suite config (`kind: Suite`), so a suite file named on the command
/// line is validated as one.
pub fn is_suite_source(src: &str) -> bool {
    let Some(doc) = serde_yaml::Deserializer::from_str(without_bom(src)).next() else {
        return false;
    };
    let Ok(v) = <serde_yaml::Value as serde::Deserialize>::deserialize(doc) else {
        return false;
    };
    v.get("kind").and_then(|k| k.as_str()) == Some("Suite")
}

/// The objects of a manifest file as the runner applies them (every document; a `kind: List`
/// contributes its items), each with the line its document starts on; or why it cannot be.
pub fn manifest_objects(src: &str) -> Result<Vec<(serde_json::Value, usize)>, (usize, String)> {
    let src = without_bom(src);
    // Document start lines: the first, and the line after each `---`.
    let mut starts = vec![1];
    for (i, line) in src.lines().enumerate() {
        if line.starts_with("---") && i > 0 {
            starts.push(i + 2);
        } else if line.starts_with("---") {
            starts[0] = 2;
        }
    }
    let mut out = vec![];
    let location = Regex::new(r" at line \d+ column \d+").unwrap();
    for (n, doc) in serde_yaml::Deserializer::from_str(src).enumerate() {
        let line = starts.get(n).copied().unwrap_or(1);
        let v: serde_json::Value = serde::Deserialize::deserialize(doc).map_err(|e| {
            let l = e.location().map(|l| l.line()).unwrap_or(line);
            let msg = location.replace(&e.to_string(), "").to_string();
            (l, format!("not valid YAML: {msg}"))
        })?;
        match v {
            serde_json::Value::Null => {}
            serde_json::Value::Object(ref m)
                if m.get("kind").and_then(|k| k.as_str()) == Some("List") =>
            {
                for item in m
                    .get("items")
                    .and_then(|i| i.as_array())
                    .cloned()
                    .unwrap_or_default()
                {
                    out.push((item, line));
                }
            }
            serde_json::Value::Object(_) => out.push((v, line)),
            other => {
                return Err((
                    line,
                    format!(
                        "document {} is a {}, not a Kubernetes object",
                        n + 1,
                        json_type(&other)
                    ),
                ))
            }
        }
    }
    Ok(out)
}

fn json_type(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "boolean",
        serde_json::Value::Number(_) => "number",
        serde_json::Value::String(_) => "string",
        serde_json::Value::Array(_) => "list",
        serde_json::Value::Object(_) => "map",
    }
}

/// What a Kubernetes object lacks of `apiVersion`, `kind`, `metadata.name` (non-empty strings).
pub fn object_missing(o: &serde_json::Value) -> Vec<&'static str> {
    let has = |ptr: &str| {
        o.pointer(ptr)
            .and_then(|v| v.as_str())
            .is_some_and(|s| !s.is_empty())
    };
    [
        ("/apiVersion", "apiVersion"),
        ("/kind", "kind"),
        ("/metadata/name", "metadata.name"),
    ]
    .into_iter()
    .filter(|(ptr, _)| !has(ptr))
    .map(|(_, f)| f)
    .collect()
}

/// Check a referenced manifest file: it exists, parses, and each object names its apiVersion,
/// kind and metadata.name. Findings are placed in the manifest itself and name the reference.
pub fn check_manifest_file(path: &Path, referenced_by: &str) -> Vec<Diagnostic> {
    let src = match std::fs::read_to_string(path) {
        Ok(s) => s,
        Err(e) => {
            return vec![Diagnostic {
                file: path.to_path_buf(),
                line: 1,
                col: 1,
                message: format!("{referenced_by}: cannot read: {e}"),
            }]
        }
    };
    match manifest_objects(&src) {
        Err((line, why)) => vec![Diagnostic {
            file: path.to_path_buf(),
            line,
            col: 1,
            message: format!("{referenced_by}: {why}"),
        }],
        Ok(objs) => objs
            .iter()
            .filter_map(|(o, line)| {
                let missing = object_missing(o);
                (!missing.is_empty()).then(|| Diagnostic {
                    file: path.to_path_buf(),
                    line: *line,
                    col: 1,
                    message: format!(
                        "{referenced_by}: an object needs {}; missing {}",
                        list(&["apiVersion", "kind", "metadata.name"]),
                        list(&missing)
                    ),
                })
            })
            .collect(),
    }
}

pub fn load_suite(file: &Path) -> Result<LoadedSuite, Vec<Diagnostic>> {
    let src = read(file)?;
    load_suite_str(file, &src)
}

pub fn load_suite_str(file: &Path, src: &str) -> Result<LoadedSuite, Vec<Diagnostic>> {
    let src = without_bom(src);
    let suite: Suite = serde_yaml::from_str(src).map_err(|e| vec![yaml_diag(file, &e, src)])?;
    let spans = Spans::parse(src);
    let mut d = vec![];
    if suite.api_version != API_VERSION {
        d.push(Diagnostic::at(
            file,
            spans.value("apiVersion"),
            format!(
                "apiVersion: unsupported `{}`, expected `{API_VERSION}`",
                suite.api_version
            ),
        ));
    }
    if suite.kind != "Suite" {
        d.push(Diagnostic::at(
            file,
            spans.value("kind"),
            format!("kind: `{}` in a suite config, expected `Suite`", suite.kind),
        ));
    }
    for (name, c) in &suite.controllers {
        let path = format!("controllers.{name}");
        match (&c.build, c.command.is_empty()) {
            (None, true) if spans.has(&format!("{path}.command")) => d.push(Diagnostic::at(
                file,
                spans.value(&format!("{path}.command")),
                format!("{path}.command: the command is empty"),
            )),
            (None, true) => d.push(Diagnostic::at(
                file,
                spans.key(&path),
                format!("{path}: no program: give `command` (a program and its arguments) or `build`"),
            )),
            (Some(_), false) => d.push(Diagnostic::at(
                file,
                spans.value(&format!("{path}.command")),
                format!("{path}.command: `command` and `build` both name the program: keep one (with `build`, put the arguments in `args`)"),
            )),
            (Some(ControllerBuild { go: g }), true) => {
                let module = parent_dir(file).join(&g.module);
                for need in ["go.mod", "go.sum"] {
                    if !module.join(need).is_file() {
                        d.push(Diagnostic::at(
                            file,
                            spans.value(&format!("{path}.build.go.module")),
                            format!("{path}.build.go.module: no {need} in `{}`", g.module),
                        ));
                    }
                }
                if Path::new(&g.package).is_absolute() || g.package.split('/').any(|p| p == "..") {
                    d.push(Diagnostic::at(
                        file,
                        spans.value(&format!("{path}.build.go.package")),
                        format!("{path}.build.go.package: `{}` is not a package inside the module (`.` or `./cmd/x`)", g.package),
                    ));
                }
            }
            (None, false) => {}
        }
        if let Some(sa) = &c.service_account {
            if sa
                .split_once('/')
                .is_none_or(|(ns, n)| ns.is_empty() || n.is_empty() || n.contains('/'))
            {
                d.push(Diagnostic::at(
                    file,
                    spans.value(&format!("{path}.serviceAccount")),
                    format!("{path}.serviceAccount: `{sa}` is not `namespace/name`"),
                ));
            }
        }
        for (i, m) in c.rbac.iter().enumerate() {
            if !parent_dir(file).join(m).is_file() {
                d.push(Diagnostic::at(
                    file,
                    spans.value(&format!("{path}.rbac[{i}]")),
                    format!("{path}.rbac[{i}]: file `{m}` not found"),
                ));
            }
        }
        if let Some(p) = &c.ready_pattern {
            if let Err(e) = Regex::new(p) {
                d.push(Diagnostic::at(
                    file,
                    spans.value(&format!("{path}.readyPattern")),
                    format!("{path}.readyPattern: invalid regular expression: {e}"),
                ));
            }
        }
    }
    let dir = parent_dir(file);
    for (i, crd) in suite.crds.iter().enumerate() {
        if !dir.join(crd).is_file() {
            d.push(Diagnostic::at(
                file,
                spans.value(&format!("crds[{i}]")),
                format!("crds[{i}]: file `{crd}` not found"),
            ));
        } else {
            let pos = spans.value(&format!("crds[{i}]"));
            d.extend(check_manifest_file(
                &dir.join(crd),
                &format!(
                    "referenced by {}:{}:{} (crds[{i}])",
                    file.display(),
                    pos.line,
                    pos.col
                ),
            ));
        }
    }
    for (name, c) in &suite.controllers {
        for (i, m) in c.manifests.iter().enumerate() {
            let path = format!("controllers.{name}.manifests[{i}]");
            if !dir.join(m).is_file() {
                d.push(Diagnostic::at(
                    file,
                    spans.value(&path),
                    format!("{path}: file `{m}` not found"),
                ));
            } else {
                let pos = spans.value(&path);
                d.extend(check_manifest_file(
                    &dir.join(m),
                    &format!(
                        "referenced by {}:{}:{} ({path})",
                        file.display(),
                        pos.line,
                        pos.col
                    ),
                ));
            }
        }
    }
    if suite
        .kind_provider
        .node_image
        .as_deref()
        .is_some_and(|i| i.trim().is_empty() || i.contains(char::is_whitespace))
    {
        d.push(Diagnostic::at(file, spans.value("kindProvider.nodeImage"), "kindProvider.nodeImage: must be an image reference such as `kindest/node:v1.35.5` (no spaces)"));
    }
    if suite.defaults.regression_ratio <= 1.0 {
        d.push(Diagnostic::at(
            file,
            spans.value("defaults.regressionRatio"),
            "defaults.regressionRatio: must be greater than 1",
        ));
    }
    if d.is_empty() {
        Ok(LoadedSuite {
            path: Some(file.to_path_buf()),
            dir,
            suite,
            broken: false,
        })
    } else {
        Err(d)
    }
}

pub fn load_scenario(file: &Path, suite: &LoadedSuite) -> Result<LoadedScenario, Vec<Diagnostic>> {
    let src = read(file)?;
    load_scenario_str(file, &src, suite)
}

pub fn load_scenario_str(
    file: &Path,
    src: &str,
    suite: &LoadedSuite,
) -> Result<LoadedScenario, Vec<Diagnostic>> {
    let src = without_bom(src);
    if is_suite_source(src) {
        return Err(vec![Diagnostic::at(file, Spans::parse(src).value("kind"), format!(
            "kind: `Suite` is a suite config, not a scenario: name it {SUITE_FILE}, or pass it with --config"))]);
    }
    let mut scenario: Scenario =
        serde_yaml::from_str(src).map_err(|e| vec![yaml_diag(file, &e, src)])?;
    let spans = Spans::parse(src);
    let dir = parent_dir(file);
    let mut v = Validator {
        file,
        spans: &spans,
        dir: &dir,
        suite,
        diags: vec![],
        steps: vec![],
        anchors: vec![],
        deferred_anchors: vec![],
    };
    v.scenario(&mut scenario);
    if v.diags.is_empty() {
        Ok(LoadedScenario {
            path: file.to_path_buf(),
            dir,
            scenario,
        })
    } else {
        v.diags.sort_by_key(|d| (d.file != file, d.line, d.col));
        Err(v.diags)
    }
}

/// Load everything `paths` names. Returns the suite, the scenarios that loaded, and every
/// diagnostic (all files are checked, not just up to the first error).
pub fn load_all(
    paths: &[PathBuf],
    suite_file: Option<&Path>,
) -> (LoadedSuite, Vec<LoadedScenario>, Vec<Diagnostic>) {
    let mut diags = vec![];
    let mut files = match collect_files(paths) {
        Ok(f) => f,
        Err(d) => return (LoadedSuite::default(), vec![], vec![d]),
    };
    // A suite config named on the command line is validated (and used) as the suite; one met in
    // a directory scan is an error there ("a suite config, not a scenario").
    let named_suite = paths
        .iter()
        .find(|p| p.is_file() && std::fs::read_to_string(p).is_ok_and(|s| is_suite_source(&s)))
        .cloned();
    if let Some(n) = &named_suite {
        files.retain(|f| f != n);
    }
    let suite_path = suite_file
        .map(Path::to_path_buf)
        .or(named_suite)
        .or_else(|| paths.first().and_then(|p| find_suite(p)));
    let suite = match suite_path {
        Some(p) => match load_suite(&p) {
            Ok(s) => s,
            Err(d) => {
                diags.extend(d);
                LoadedSuite {
                    path: Some(p.clone()),
                    dir: parent_dir(&p),
                    suite: Suite::default(),
                    broken: true,
                }
            }
        },
        None => LoadedSuite {
            path: None,
            dir: PathBuf::from("."),
            suite: Suite {
                api_version: API_VERSION.into(),
                kind: "Suite".into(),
                ..Default::default()
            },
            broken: false,
        },
    };
    let mut out: Vec<LoadedScenario> = vec![];
    let mut names: HashMap<String, PathBuf> = HashMap::new();
    for f in files {
        match load_scenario(&f, &suite) {
            Ok(s) => {
                if let Some(prev) = names.get(&s.scenario.metadata.name) {
                    let src = std::fs::read_to_string(&f).unwrap_or_default();
                    let spans = Spans::parse(&src);
                    diags.push(Diagnostic::at(
                        &f,
                        spans.value("metadata.name"),
                        format!(
                            "metadata.name: `{}` is already the name of {}",
                            s.scenario.metadata.name,
                            prev.display()
                        ),
                    ));
                } else {
                    names.insert(s.scenario.metadata.name.clone(), f.clone());
                    out.push(s);
                }
            }
            Err(d) => diags.extend(d),
        }
    }
    (suite, out, merge_references(diags))
}

/// One root cause, one error: a finding in a manifest that several steps or scenarios reference
/// is reported once, naming every reference.
fn merge_references(diags: Vec<Diagnostic>) -> Vec<Diagnostic> {
    const PREFIX: &str = "referenced by ";
    let mut out: Vec<Diagnostic> = vec![];
    for d in diags {
        let split = d
            .message
            .strip_prefix(PREFIX)
            .and_then(|m| m.split_once("): "))
            .map(|(r, rest)| (format!("{r})"), rest.to_string()));
        let Some((reference, rest)) = split else {
            if !out.contains(&d) {
                out.push(d);
            }
            continue;
        };
        let same = out.iter_mut().find(|o| {
            o.file == d.file
                && o.line == d.line
                && o.col == d.col
                && o.message.starts_with(PREFIX)
                && o.message.ends_with(&format!("): {rest}"))
        });
        match same {
            Some(o) => {
                let refs = &o.message[PREFIX.len()..o.message.len() - rest.len() - 2];
                if !refs.split(", ").any(|r| r == reference) {
                    o.message = format!("{PREFIX}{refs}, {reference}: {rest}");
                }
            }
            None => out.push(d),
        }
    }
    out
}

/// A CSI driver's name as CSIDriver objects take it (a DNS subdomain of at most 63 characters).
fn is_csi_driver_name(s: &str) -> bool {
    let edge = |c: Option<char>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    s.len() <= 63
        && edge(s.chars().next())
        && edge(s.chars().last())
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
}

/// A label value (`IsValidLabelValue`), what a taint's value must be; empty is one.
fn is_label_value(s: &str) -> bool {
    let edge = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    s.is_empty()
        || (s.len() <= 63
            && edge(s.chars().next())
            && edge(s.chars().last())
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
}

fn list(items: &[impl AsRef<str>]) -> String {
    items
        .iter()
        .map(|s| format!("`{}`", s.as_ref()))
        .collect::<Vec<_>>()
        .join(", ")
}

struct StepInfo {
    name: String,
    is_fault: bool,
    path: String,
}

struct Validator<'a> {
    file: &'a Path,
    spans: &'a Spans,
    dir: &'a Path,
    suite: &'a LoadedSuite,
    diags: Vec<Diagnostic>,
    /// Steps in execution order, as they were validated.
    steps: Vec<StepInfo>,
    /// (path of `heal.atStep`, target, index of the fault step).
    anchors: Vec<(String, String, usize)>,
    /// (`after:` value, its path, index of the expectation's step), checked once all steps are known.
    deferred_anchors: Vec<(String, String, usize)>,
}

impl<'a> Validator<'a> {
    fn err_value(&mut self, path: &str, msg: impl Into<String>) {
        let pos = self.spans.value(path);
        self.diags.push(Diagnostic::at(
            self.file,
            pos,
            format!("{path}: {}", msg.into()),
        ));
    }
    fn err_key(&mut self, path: &str, msg: impl Into<String>) {
        let pos = self.spans.key(path);
        self.diags.push(Diagnostic::at(
            self.file,
            pos,
            format!("{path}: {}", msg.into()),
        ));
    }

    /// `spec.perturb`: one kind per entry, ordinals from 1, a bounded stale window, and a
    /// controller whose requests the sim can tell apart (one with a `serviceAccount`).
    fn perturbations(&mut self, s: &Scenario) {
        for (i, p) in s.spec.perturb.iter().enumerate() {
            let at = format!("spec.perturb[{i}]");
            match p.kind() {
                None => self.err_value(
                    &at,
                    "a perturbation needs exactly one of `crashAfterMutation`, `staleRead`, `watchRelist`, `moveFault`",
                ),
                Some(PerturbKind::CrashAfterMutation(0)) => self.err_value(
                    &format!("{at}.crashAfterMutation"),
                    "requests are counted from 1",
                ),
                Some(PerturbKind::StaleRead(r)) => {
                    if r.read == 0 {
                        self.err_value(&format!("{at}.staleRead.read"), "reads are counted from 1");
                    }
                    let w = r.window.get();
                    if w.is_zero() || w > std::time::Duration::from_secs(60) {
                        self.err_value(
                            &format!("{at}.staleRead.window"),
                            format!("{} out of range: 0 < window <= 1m", r.window),
                        );
                    }
                }
                Some(PerturbKind::WatchRelist(0)) => self.err_value(
                    &format!("{at}.watchRelist"),
                    "watch events are counted from 1",
                ),
                Some(PerturbKind::MoveFault(m)) if m.after_mutation == 0 => self.err_value(
                    &format!("{at}.moveFault.afterMutation"),
                    "requests are counted from 1",
                ),
                // The step is checked once the steps' names are known (`moved_faults`).
                Some(
                    PerturbKind::CrashAfterMutation(_)
                    | PerturbKind::WatchRelist(_)
                    | PerturbKind::MoveFault(_),
                ) => {}
            }
        }
        if s.spec.perturb.is_empty() || self.suite.broken {
            return;
        }
        let account = s
            .spec
            .controller
            .as_ref()
            .and_then(|c| self.suite.suite.controllers.get(&c.reference))
            .map(|d| d.service_account.is_some());
        if account == Some(false) || s.spec.controller.is_none() {
            self.err_value(
                "spec.perturb",
                "perturbations need a controller with a `serviceAccount` in the suite config (the sim tells its requests apart by that identity)",
            );
        }
    }

    /// `moveFault.step` names a `fault` step of the scenario, each at most once.
    fn moved_faults(&mut self, s: &Scenario) {
        let mut seen = BTreeSet::new();
        for (i, p) in s.spec.perturb.iter().enumerate() {
            let Some(m) = &p.move_fault else { continue };
            let path = format!("spec.perturb[{i}].moveFault.step");
            match self.steps.iter().find(|st| st.name == m.step) {
                Some(st) if st.is_fault => {
                    if !seen.insert(m.step.clone()) {
                        self.err_value(&path, format!("fault step `{}` is moved twice", m.step));
                    }
                }
                Some(_) => self.err_value(
                    &path,
                    format!(
                        "step `{}` is not a `fault` step (only faults can be moved)",
                        m.step
                    ),
                ),
                None => {
                    let faults: Vec<String> = self
                        .steps
                        .iter()
                        .filter(|st| st.is_fault)
                        .map(|st| st.name.clone())
                        .collect();
                    let msg = if faults.is_empty() {
                        format!(
                            "unknown step `{}`: the scenario has no `fault` step",
                            m.step
                        )
                    } else {
                        format!(
                            "unknown step `{}`, expected one of {} (its fault steps)",
                            m.step,
                            list(&faults)
                        )
                    };
                    self.err_value(&path, msg);
                }
            }
        }
    }

    fn scenario(&mut self, s: &mut Scenario) {
        if s.api_version != API_VERSION {
            self.err_value(
                "apiVersion",
                format!("unsupported `{}`, expected `{API_VERSION}`", s.api_version),
            );
        }
        if s.kind != "Scenario" {
            self.err_value(
                "kind",
                format!("unsupported `{}`, expected `Scenario`", s.kind),
            );
        }
        let name_re = Regex::new(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$").unwrap();
        if !name_re.is_match(&s.metadata.name) || s.metadata.name.len() > 63 {
            self.err_value("metadata.name", format!("invalid name `{}`: lowercase letters, digits and `-`, starting and ending with a letter or digit", s.metadata.name));
        }
        let nodes: Vec<String> = s
            .spec
            .cluster
            .effective_nodes()
            .into_iter()
            .map(|n| n.name)
            .collect();
        let mut seen_nodes = BTreeSet::new();
        for (i, n) in s.spec.cluster.nodes.iter().enumerate() {
            if !seen_nodes.insert(n.name.clone()) {
                self.err_value(
                    &format!("spec.cluster.nodes[{i}].name"),
                    format!("duplicate node `{}`", n.name),
                );
            }
        }
        let ts = s.spec.cluster.sim.time_scale;
        if !(ts > 0.0 && ts <= 100.0) {
            self.err_value(
                "spec.cluster.sim.timeScale",
                format!("{ts} out of range: 0 < timeScale <= 100"),
            );
        }
        if let Some(c) = &s.spec.controller {
            if !self.suite.broken && !self.suite.suite.controllers.contains_key(&c.reference) {
                let known: Vec<&String> = self.suite.suite.controllers.keys().collect();
                let msg = match &self.suite.path {
                    None => format!(
                        "unknown controller `{}`: no suite config (faultline.yaml) found",
                        c.reference
                    ),
                    Some(p) if known.is_empty() => format!(
                        "unknown controller `{}`: {} defines no controllers",
                        c.reference,
                        p.display()
                    ),
                    Some(p) => format!(
                        "unknown controller `{}`, expected one of {} (from {})",
                        c.reference,
                        list(&known),
                        p.display()
                    ),
                };
                self.err_value("spec.controller.ref", msg);
            }
        }
        if s.spec.steps.is_empty() {
            self.err_value("spec.steps", "a scenario needs at least one step");
        }
        self.perturbations(s);
        let mut counter = 0usize;
        self.steps_list(&mut s.spec.steps, "spec.steps", &nodes, &mut counter);
        for (anchor, path, index) in std::mem::take(&mut self.deferred_anchors) {
            self.anchor(&anchor, &path, index);
        }
        self.moved_faults(s);
        // heal: {atStep} must name a step after the fault.
        for (path, target, fault_idx) in std::mem::take(&mut self.anchors) {
            match self.steps.iter().position(|st| st.name == target) {
                Some(i) if i > fault_idx => {}
                Some(_) => self.err_value(
                    &path,
                    format!("step `{target}` does not come after this fault"),
                ),
                None => {
                    let later: Vec<String> = self
                        .steps
                        .iter()
                        .skip(fault_idx + 1)
                        .map(|s| s.name.clone())
                        .collect();
                    let msg = if later.is_empty() {
                        format!("unknown step `{target}`, and no step comes after this fault: heal it with `{{after: <duration>}}`, or leave it to the clean-up at the end (`never`)")
                    } else {
                        format!("unknown step `{target}`, expected one of {} (the steps after this fault)", list(&later))
                    };
                    self.err_value(&path, msg);
                }
            }
        }
        for (i, inv) in s.spec.invariants.iter_mut().enumerate() {
            let path = format!("spec.invariants[{i}]");
            if inv.after.is_some() {
                self.err_key(
                    &format!("{path}.after"),
                    "invariants are checked for the whole run; `after` is not allowed",
                );
            }
            if inv.within.is_some() {
                self.err_key(
                    &format!("{path}.within"),
                    "invariants are checked for the whole run; `within` is not allowed",
                );
            }
            if inv.name.is_none() {
                inv.name = Some(format!("invariant-{}", i + 1));
            }
            self.expect_body(inv, &path, &nodes, true);
        }
    }

    fn steps_list(
        &mut self,
        steps: &mut [Step],
        base: &str,
        nodes: &[String],
        counter: &mut usize,
    ) {
        for (i, step) in steps.iter_mut().enumerate() {
            let path = format!("{base}[{i}]");
            self.step(step, &path, nodes, counter);
        }
    }

    fn step(&mut self, step: &mut Step, path: &str, nodes: &[String], counter: &mut usize) {
        *counter += 1;
        let kinds = step.kinds();
        match kinds.len() {
            0 => self.err_value(
                path,
                format!(
                    "a step needs exactly one of {}, found none",
                    list(STEP_KINDS)
                ),
            ),
            1 => {}
            _ => self.err_value(
                path,
                format!(
                    "a step needs exactly one of {}, found {}",
                    list(STEP_KINDS),
                    list(&kinds)
                ),
            ),
        }
        if step.try_steps.is_none() {
            for (k, present) in [
                ("catch", step.catch.is_some()),
                ("finally", step.finally.is_some()),
            ] {
                if present {
                    self.err_key(&format!("{path}.{k}"), format!("`{k}` goes with `try`"));
                }
            }
        }
        // The name: given, a fault's or an expectation's own name, or <kind>-<n>.
        let own_name = step
            .fault
            .as_ref()
            .and_then(|f| f.name.clone())
            .map(|n| (n, "fault"))
            .or_else(|| {
                step.expect
                    .as_ref()
                    .and_then(|e| e.name.clone())
                    .map(|n| (n, "expect"))
            });
        if let (Some(a), Some((b, k))) = (&step.name, &own_name) {
            if a != b {
                let what = if *k == "fault" {
                    "fault"
                } else {
                    "expectation"
                };
                self.err_value(
                    &format!("{path}.{k}.name"),
                    format!("the {what} is named `{b}` but its step `{a}`; give one name"),
                );
            }
        }
        let name = step
            .name
            .clone()
            .or(own_name.map(|(n, _)| n))
            .unwrap_or_else(|| format!("{}-{}", step.kind(), counter));
        if let Some(prev) = self.steps.iter().find(|s| s.name == name) {
            let prev_path = prev.path.clone();
            self.err_value(
                &format!("{path}.name"),
                format!("duplicate step name `{name}` (also {prev_path})"),
            );
        }
        step.name = Some(name.clone());
        let index = self.steps.len();
        self.steps.push(StepInfo {
            name: name.clone(),
            is_fault: step.fault.is_some(),
            path: path.to_string(),
        });

        for (k, m) in [("apply", &step.apply), ("create", &step.create)] {
            if let Some(m) = m {
                self.manifests(m, &format!("{path}.{k}"));
            }
        }
        if let Some(p) = &step.patch {
            if p.r#type == PatchType::Json && !p.patch.is_array() {
                self.err_value(
                    &format!("{path}.patch.patch"),
                    "a `json` patch is a list of operations (RFC 6902)",
                );
            }
            if p.r#type != PatchType::Json && !p.patch.is_object() {
                self.err_value(
                    &format!("{path}.patch.patch"),
                    "a merge, strategic or apply patch is a map",
                );
            }
        }
        if let Some(d) = &step.delete {
            let by_ref = d.api_version.is_some() && d.kind.is_some() && d.name.is_some();
            match (&d.file, by_ref) {
                (Some(f), false)
                    if d.api_version.is_none() && d.kind.is_none() && d.name.is_none() =>
                {
                    self.manifest_file(f, &format!("{path}.delete.file"));
                }
                (None, true) => {}
                _ => self.err_value(
                    &format!("{path}.delete"),
                    "give either `file`, or `apiVersion`, `kind` and `name`",
                ),
            }
        }
        if let Some(f) = &step.fault {
            let fpath = format!("{path}.fault");
            self.operation(&f.op, &fpath, nodes);
            if let Heal::AtStep(target) = &f.heal {
                self.anchors
                    .push((format!("{fpath}.heal.atStep"), target.clone(), index));
            }
        }
        if let Some(op) = &step.remediate {
            self.operation(op, &format!("{path}.remediate"), nodes);
        }
        if let Some(e) = &mut step.expect {
            let epath = format!("{path}.expect");
            if e.name.is_none() {
                e.name = Some(name.clone());
            }
            if let Some(anchor) = &e.after {
                self.deferred_anchors
                    .push((anchor.clone(), format!("{epath}.after"), index));
            }
            if e.never && e.within.is_some() {
                self.err_key(
                    &format!("{epath}.within"),
                    "`never` and `within` exclude each other: bound a `never` window with `for`",
                );
            }
            self.expect_body(e, &epath, nodes, false);
        }
        if let Some(t) = &mut step.try_steps {
            if t.is_empty() {
                self.err_value(&format!("{path}.try"), "`try` needs at least one step");
            }
            self.steps_list(t, &format!("{path}.try"), nodes, counter);
        }
        if let Some(c) = &mut step.catch {
            self.steps_list(c, &format!("{path}.catch"), nodes, counter);
        }
        if let Some(f) = &mut step.finally {
            self.steps_list(f, &format!("{path}.finally"), nodes, counter);
        }
    }

    fn manifests(&mut self, m: &Manifests, path: &str) {
        match (&m.file, m.objects.is_empty()) {
            (Some(f), true) => {
                let p = if self.spans.has(&format!("{path}.file")) {
                    format!("{path}.file")
                } else {
                    path.to_string()
                };
                self.manifest_file(f, &p);
            }
            (None, false) => {
                for (i, o) in m.objects.iter().enumerate() {
                    let missing = object_missing(o);
                    if !missing.is_empty() {
                        self.err_value(&format!("{path}.objects[{i}]"), format!("an object needs `apiVersion`, `kind` and `metadata.name`; missing {}", list(&missing)));
                    }
                }
            }
            (Some(_), false) => self.err_value(path, "give either `file` or `objects`, not both"),
            (None, true) => self.err_value(path, "give `file` or `objects`"),
        }
    }

    /// A manifest file a step references: found, parsed, every object complete.
    fn manifest_file(&mut self, f: &str, path: &str) {
        let full = self.dir.join(f);
        if !full.is_file() {
            self.err_value(
                path,
                format!("file `{f}` not found (relative to {})", self.dir.display()),
            );
            return;
        }
        let pos = self.spans.value(path);
        let by = format!(
            "referenced by {}:{}:{} ({path})",
            self.file.display(),
            pos.line,
            pos.col
        );
        self.diags.extend(check_manifest_file(&full, &by));
    }

    fn operation(&mut self, op: &Operation, path: &str, nodes: &[String]) {
        if let Some(node) = op.node() {
            if !nodes.iter().any(|n| n == node) {
                let p = format!("{path}.{}.node", op.key());
                self.err_value(
                    &p,
                    format!("unknown node `{node}`, expected one of {}", list(nodes)),
                );
            }
        }
        match op {
            Operation::Node(NodeOperation::ApiErrors(a)) if !(a.rate > 0.0 && a.rate <= 1.0) => {
                self.err_value(
                    &format!("{path}.apiErrors.rate"),
                    format!("rate {} out of range: 0 < rate <= 1", a.rate),
                );
            }
            Operation::Runner(RunnerOperation::DeletePod(d))
                if d.name.is_none() && d.selector.is_none() && d.node.is_none() =>
            {
                self.err_value(
                    &format!("{path}.deletePod"),
                    "give `name`, `selector` or `node`",
                );
            }
            Operation::Node(NodeOperation::CsiDriverUnregistered(d))
                if !is_csi_driver_name(&d.driver) =>
            {
                self.err_value(
                    &format!("{path}.csiDriverUnregistered.driver"),
                    format!("`{}` is not a CSI driver name: at most 63 lower-case letters, digits, '-' and '.', starting and ending with a letter or digit", d.driver),
                );
            }
            Operation::Runner(RunnerOperation::OutOfServiceTaint(t))
                if !is_label_value(&t.value) =>
            {
                self.err_value(
                    &format!("{path}.outOfServiceTaint.value"),
                    format!("`{}` is not a taint value: at most 63 letters, digits, '-', '_' and '.', starting and ending with a letter or digit", t.value),
                );
            }
            _ => {}
        }
    }

    fn anchor(&mut self, anchor: &str, path: &str, current: usize) {
        if anchor == "start" || anchor == "previous" {
            return;
        }
        let (base, suffix) = match anchor.rsplit_once('.') {
            Some((b, s)) if s == "healed" || s == "start" => (b, Some(s)),
            _ => (anchor, None),
        };
        let earlier = &self.steps[..current];
        match earlier.iter().find(|s| s.name == base) {
            Some(s) if suffix == Some("healed") && !s.is_fault => {
                let msg = format!("`{base}` is not a fault, so it has no `.healed` anchor");
                self.err_value(path, msg);
            }
            Some(_) => {}
            None => {
                let mut allowed: Vec<String> = vec!["start".into(), "previous".into()];
                for s in earlier {
                    allowed.push(s.name.clone());
                    allowed.push(format!("{}.start", s.name));
                    if s.is_fault {
                        allowed.push(format!("{}.healed", s.name));
                    }
                }
                let later = self.steps.iter().skip(current).any(|s| s.name == base);
                let why = if later {
                    format!("step `{base}` does not come before this expectation")
                } else {
                    format!("unknown anchor `{anchor}`")
                };
                self.err_value(path, format!("{why}, expected one of {}", list(&allowed)));
            }
        }
    }

    /// A condition over the expectation's context: the selected object, bound to `object`.
    fn cel(&mut self, src: &str, path: &str) {
        if let Err(e) = Condition::compile_checked(src, &["object"]) {
            self.err_value(path, e);
        }
    }

    fn regex(&mut self, src: &str, path: &str) {
        if let Err(e) = Regex::new(src) {
            let first = e
                .to_string()
                .lines()
                .last()
                .unwrap_or("")
                .trim()
                .to_string();
            self.err_value(path, format!("invalid regular expression `{src}`: {first}"));
        }
    }

    fn expect_body(&mut self, e: &Expect, path: &str, nodes: &[String], invariant: bool) {
        let kinds = e.kinds();
        if kinds.len() != 1 {
            let found = if kinds.is_empty() {
                "none".to_string()
            } else {
                list(&kinds)
            };
            self.err_value(
                path,
                format!(
                    "an expectation needs exactly one of `resource`, `event`, `log`, found {found}"
                ),
            );
        }
        if let Some(r) = &e.resource {
            let rp = format!("{path}.resource");
            let modes = r.modes();
            if modes.len() != 1 {
                let found = if modes.is_empty() {
                    "none".to_string()
                } else {
                    list(&modes)
                };
                self.err_value(
                    &rp,
                    format!(
                        "a resource expectation needs exactly one of {}, found {found}",
                        list(SELECTION_MODES)
                    ),
                );
            }
            if r.condition.is_some() && r.name.is_none() {
                self.err_key(&format!("{rp}.condition"), "`condition` is about one object: give its `name` (or use one, any, all, none, count)");
            }
            for (k, v) in [
                ("condition", &r.condition),
                ("one", &r.one),
                ("any", &r.any),
                ("all", &r.all),
                ("none", &r.none),
            ] {
                if let Some(v) = v {
                    self.cel(v, &format!("{rp}.{k}"));
                }
            }
            if let Some(c) = &r.count {
                if let Some(w) = &c.filter {
                    self.cel(w, &format!("{rp}.count.where"));
                }
                if c.equals.is_none() && c.at_least.is_none() && c.at_most.is_none() {
                    self.err_value(
                        &format!("{rp}.count"),
                        "give `equals`, `atLeast` or `atMost`",
                    );
                }
            }
            if let Some(sel) = &r.label_selector {
                if sel.trim().is_empty() {
                    self.err_value(&format!("{rp}.labelSelector"), "empty label selector");
                }
            }
        }
        if let Some(ev) = &e.event {
            let ep = format!("{path}.event");
            if let Some(m) = &ev.message {
                self.regex(m, &format!("{ep}.message"));
            }
            if let Some(n) = &ev.involved_name {
                if n.len() > 1 && n.starts_with('/') && n.ends_with('/') {
                    self.regex(&n[1..n.len() - 1], &format!("{ep}.involvedName"));
                }
            }
        }
        if let Some(l) = &e.log {
            let lp = format!("{path}.log");
            self.regex(&l.pattern, &format!("{lp}.pattern"));
            if let Some(n) = &l.node {
                if l.source == LogSourceKind::Controller {
                    self.err_key(&format!("{lp}.node"), "the controller's log has no node; `node` goes with `kubelet` or `csiPlugin`");
                } else if !nodes.iter().any(|x| x == n) {
                    self.err_value(
                        &format!("{lp}.node"),
                        format!("unknown node `{n}`, expected one of {}", list(nodes)),
                    );
                }
            }
            if l.at_most.is_some() && l.at_least.is_some() {
                self.err_key(
                    &format!("{lp}.atMost"),
                    "`atLeast` and `atMost` exclude each other",
                );
            }
            if l.per.is_some() && l.at_most.is_none() {
                self.err_key(&format!("{lp}.per"), "`per` is the window of `atMost`");
            }
            if l.at_most.is_some() && (e.never || e.hold_for.is_some()) {
                self.err_key(
                    &format!("{lp}.atMost"),
                    "a rate limit (`atMost`) is already an invariant: drop `never`/`for`",
                );
            }
        }
        if invariant {
            if e.hold_for.is_some() {
                self.err_key(
                    &format!("{path}.for"),
                    "invariants are checked for the whole run; `for` is not allowed",
                );
            }
            if e.background {
                self.err_key(
                    &format!("{path}.background"),
                    "invariants always run in the background",
                );
            }
        }
    }
}
