//! `faultline init [DIR] --controller-command CMD`: a starting point for a new suite. Writes
//! `scenarios/faultline.yaml` (the suite config running CMD as the controller under test),
//! one example scenario - a fault against the controller and the expectation that it recovers -
//! and a CI snippet. Existing files are never overwritten.

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

pub struct InitOptions {
    pub dir: PathBuf,
    /// The controller's command line, run with `sh -c` from DIR (so it may use shell syntax
    /// and paths relative to DIR).
    pub controller_command: String,
    /// CRD manifests to apply before the controller starts (paths relative to DIR, or absolute).
    pub crds: Vec<String>,
    /// A log line the controller prints once it is ready.
    pub ready_pattern: Option<String>,
}

/// YAML double-quoted string (JSON's escaping is valid YAML).
fn quoted(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| format!("{s:?}"))
}

/// A path as seen from DIR/scenarios.
fn from_scenarios(dir: &Path, p: &str) -> String {
    if Path::new(p).is_absolute() {
        return p.to_string();
    }
    let _ = dir;
    format!("../{p}")
}

pub fn suite_yaml(o: &InitOptions) -> String {
    let mut s = String::from(
        "# The suite config: what every scenario in this directory shares (docs/scenarios.md).\n",
    );
    s += "apiVersion: faultline.dev/v1alpha1\nkind: Suite\ncontrollers:\n  controller:\n";
    s += "    # Run from the project directory (workdir), with KUBECONFIG set to the test cluster.\n";
    // The controller runs in its own process group: stopping it stops what `sh` started too.
    s += &format!("    command: [sh, -c, {}]\n", quoted(&o.controller_command));
    s += "    workdir: ..\n";
    match &o.ready_pattern {
        Some(p) => s += &format!("    readyPattern: {}\n", quoted(p)),
        None => s +=
            "    # readyPattern: \"starting\"   # wait for this log line before the first step\n",
    }
    if o.crds.is_empty() {
        s += "# crds: [../config/crd/my-crd.yaml]   # applied to every cluster before the controller starts\n";
    } else {
        s += &format!(
            "crds: [{}]\n",
            o.crds
                .iter()
                .map(|c| quoted(&from_scenarios(&o.dir, c)))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    s += "defaults:\n  expectWithin: 30s\n  stepTimeout: 30s\n  scenarioTimeout: 5m\n";
    s
}

pub const EXAMPLE_SCENARIO: &str = r#"# An example: the controller under test is killed (a crash, an OOM kill) and must come back.
# Run it:  faultline run scenarios/
# Then write your own from docs/scenarios.md: inject node and storage faults, and expect your
# custom resources to recover within their budgets.
apiVersion: faultline.dev/v1alpha1
kind: Scenario
metadata:
  name: controller-restarts-after-crash
  description: The controller is killed; it is started again and must be running within 30s.
spec:
  controller: {ref: controller}
  steps:
    - expect:
        name: controller-logged
        description: The controller started (it logged a line).
        log: {source: controller, pattern: "."}
        after: start
        within: 60s
    - fault: {name: crash, heal: {after: 2s}, controllerCrash: {signal: KILL}}
    - expect:
        name: controller-recovered
        description: Started again after the crash, the controller logs within 30s.
        log: {source: controller, pattern: "."}
        after: crash.healed
        within: 30s
  invariants:
    - name: no-panic
      never: true
      log: {source: controller, pattern: "panicked at|panic:"}
"#;

pub const CI_SNIPPET: &str = r#"# faultline in CI: copy into .github/workflows/ (GitHub Actions). The GitLab equivalent:
#   faultline:
#     script: [faultline run scenarios/ --report-dir reports --quiet]
#     artifacts: {when: always, paths: [reports/], reports: {junit: reports/junit.xml}}
name: faultline
on: [push, pull_request]
jobs:
  scenarios:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      # Build your controller here, and put faultline on PATH (from a faultline checkout:
      # cargo install --locked --path harness/faultline).
      - run: faultline --version
      # --quiet: one line per failure and the total; the Markdown summary goes to the job page.
      - run: faultline run scenarios/ --report-dir reports --quiet --retries 1
      - uses: actions/upload-artifact@v4
        if: always()
        with: {name: faultline-reports, path: reports/}
"#;

/// The files `init` writes, relative to DIR, with their contents.
pub fn files(o: &InitOptions) -> Vec<(PathBuf, String)> {
    vec![
        (PathBuf::from("scenarios/faultline.yaml"), suite_yaml(o)),
        (
            PathBuf::from("scenarios/controller-restarts-after-crash.yaml"),
            EXAMPLE_SCENARIO.to_string(),
        ),
        (
            PathBuf::from("ci/faultline.github-actions.yml"),
            CI_SNIPPET.to_string(),
        ),
    ]
}

pub fn init(o: &InitOptions) -> Result<Vec<PathBuf>> {
    if o.controller_command.trim().is_empty() {
        bail!("--controller-command is empty");
    }
    let files = files(o);
    for (rel, _) in &files {
        let p = o.dir.join(rel);
        if p.exists() {
            bail!(
                "{} exists; faultline init writes only new files",
                p.display()
            );
        }
    }
    let mut written = vec![];
    for (rel, text) in files {
        let p = o.dir.join(&rel);
        std::fs::create_dir_all(p.parent().unwrap_or(&o.dir))
            .with_context(|| format!("creating {}", p.display()))?;
        std::fs::write(&p, text).with_context(|| format!("writing {}", p.display()))?;
        written.push(p);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_a_suite_that_validates_and_refuses_to_overwrite() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("crd")).unwrap();
        std::fs::write(d.path().join("crd/x.yaml"), "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: xs.example.com}\n").unwrap();
        let o = InitOptions {
            dir: d.path().into(),
            controller_command: "./bin/manager --flag=\"a b\"".into(),
            crds: vec!["crd/x.yaml".into()],
            ready_pattern: None,
        };
        let written = init(&o).unwrap();
        assert_eq!(written.len(), 3);
        let (suite, scenarios, diags) =
            crate::loader::load_all(&[d.path().join("scenarios")], None);
        assert!(diags.is_empty(), "{diags:?}");
        assert_eq!(scenarios.len(), 1);
        assert_eq!(
            suite.suite.controllers["controller"].command,
            vec!["sh", "-c", "./bin/manager --flag=\"a b\""]
        );
        let e = init(&o).unwrap_err().to_string();
        assert!(e.contains("exists"), "{e}");
        let ci: serde_yaml::Value = serde_yaml::from_str(CI_SNIPPET).unwrap();
        assert!(ci["jobs"]["scenarios"]["steps"].as_sequence().is_some());
    }
}
