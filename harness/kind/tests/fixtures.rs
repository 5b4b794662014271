//! The kind fixtures and example pipelines parse, and say what the pipelines must do.

use serde_yaml::Value;
use std::path::Path;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .parent()
        .unwrap()
}

fn docs(rel: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(root().join(rel)).unwrap();
    serde_yaml::Deserializer::from_str(&text)
        .map(|d| serde::Deserialize::deserialize(d).unwrap())
        .collect()
}

fn text(rel: &str) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap()
}

#[test]
fn controller_manifest_runs_the_loaded_image_without_pulling() {
    let d = docs("fixtures/kind/workspace-controller.yaml");
    let dep = d.iter().find(|v| v["kind"] == "Deployment").unwrap();
    let c = &dep["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(c["image"], "workspace-controller:ci");
    assert_eq!(c["imagePullPolicy"], "Never");
    let rbac = docs("fixtures/rbac/workspace-controller.yaml");
    let role = rbac.iter().find(|v| v["kind"] == "ClusterRole").unwrap();
    let groups: Vec<&str> = role["rules"]
        .as_sequence()
        .unwrap()
        .iter()
        .flat_map(|r| r["apiGroups"].as_sequence().unwrap())
        .filter_map(|g| g.as_str())
        .collect();
    assert!(groups.contains(&"llmsafespaces.dev"));
}

#[test]
fn dockerfile_builds_the_controller_that_the_manifest_runs() {
    let f = text("fixtures/kind/workspace-controller.Dockerfile");
    assert!(f.contains("cargo build --release --locked -p workspace-controller"));
    assert!(f.contains("ENTRYPOINT [\"/usr/local/bin/workspace-controller\"]"));
}

/// The shard jobs' run line, up to the shard (GitHub: matrix.shard; GitLab: CI_NODE_INDEX).
const RUN: &str =
    "cargo run --release --locked -p faultline -- run scenarios/ --provider kind --shard ";
const MERGE: &str =
    "cargo run --release --locked -p faultline -- report merge reports/merged reports/shard-*.json";

#[test]
fn github_pipeline_builds_runs_publishes_and_gates_the_release() {
    let p = &docs("ci/github-actions.yml")[0];
    let job = &p["jobs"]["scenarios-on-kind"];
    let runs: Vec<&str> = job["steps"]
        .as_sequence()
        .unwrap()
        .iter()
        .filter_map(|s| s["run"].as_str())
        .collect();
    assert!(runs
        .iter()
        .any(|r| r.contains("docker build") && r.contains("workspace-controller:ci")));
    assert!(
        runs.iter().any(|r| r.starts_with(RUN)
            && r.contains("${{ matrix.shard }}/3")
            && r.contains("--json reports/shard-${{ matrix.shard }}.json")),
        "{runs:?}"
    );
    assert_eq!(
        job["strategy"]["matrix"]["shard"]
            .as_sequence()
            .map(Vec::len),
        Some(3)
    );
    assert!(runs.iter().any(|r| r.contains("modprobe iscsi_tcp")));
    let uses: Vec<&Value> = job["steps"]
        .as_sequence()
        .unwrap()
        .iter()
        .filter(|s| s["uses"].is_string())
        .collect();
    assert!(uses.iter().any(|s| s["uses"]
        .as_str()
        .unwrap()
        .starts_with("actions/upload-artifact")
        && s["if"] == "always()"
        && s["with"]["path"] == "reports/"));
    let merge = &p["jobs"]["merge-reports"];
    assert_eq!(merge["if"], "always()");
    let merge_steps = merge["steps"].as_sequence().unwrap();
    assert!(merge_steps.iter().any(|s| s["run"] == MERGE));
    assert!(merge_steps.iter().any(
        |s| s["with"]["pattern"] == "faultline-shard-*" && s["with"]["merge-multiple"] == true
    ));
    assert!(merge_steps
        .iter()
        .any(|s| s["with"]["report_paths"] == "reports/merged/junit.xml"));
    let needs: Vec<&str> = p["jobs"]["release"]["needs"]
        .as_sequence()
        .unwrap()
        .iter()
        .filter_map(|s| s.as_str())
        .collect();
    assert_eq!(needs, ["merge-reports", "fuzz"]);
    assert_eq!(
        job["env"]["FAULTLINE_KIND_IMAGES"],
        "workspace-controller:ci"
    );
    let fuzz: Vec<&str> = p["jobs"]["fuzz"]["steps"]
        .as_sequence()
        .unwrap()
        .iter()
        .filter_map(|s| s["run"].as_str())
        .collect();
    assert!(
        fuzz.iter().any(|r| r.contains("bash ci/fuzz.sh")),
        "{fuzz:?}"
    );
}

#[test]
fn gitlab_pipeline_builds_runs_publishes_and_gates_the_release() {
    let p = &docs("ci/gitlab-ci.yml")[0];
    let stages: Vec<&str> = p["stages"]
        .as_sequence()
        .unwrap()
        .iter()
        .filter_map(|s| s.as_str())
        .collect();
    assert_eq!(stages, ["build", "scenarios", "report", "release"]);
    let build: Vec<&str> = p["build-controller-image"]["script"]
        .as_sequence()
        .unwrap()
        .iter()
        .filter_map(|s| s.as_str())
        .collect();
    assert!(build
        .iter()
        .any(|s| s.contains("docker build") && s.contains("workspace-controller:ci")));
    let job = &p["scenarios-on-kind"];
    assert!(job["script"].as_sequence().unwrap().iter().any(|s| s
        .as_str()
        .is_some_and(|s| s.starts_with(RUN) && s.contains("$CI_NODE_INDEX/$CI_NODE_TOTAL"))));
    assert_eq!(job["parallel"], 3);
    assert_eq!(job["artifacts"]["when"], "always");
    let merge = &p["merge-reports"];
    assert!(merge["script"]
        .as_sequence()
        .unwrap()
        .iter()
        .any(|s| s == MERGE));
    assert_eq!(
        (merge["needs"][0].as_str(), merge["when"].as_str()),
        (Some("scenarios-on-kind"), Some("always"))
    );
    assert_eq!(
        merge["artifacts"]["reports"]["junit"],
        "reports/merged/junit.xml"
    );
    assert_eq!(p["release"]["needs"][0], "merge-reports");
    assert_eq!(p["release"]["needs"][1], "fuzz");
    assert!(p["fuzz"]["script"]
        .as_sequence()
        .unwrap()
        .iter()
        .any(|s| s.as_str().is_some_and(|s| s.contains("bash ci/fuzz.sh"))));
    assert_eq!(p["variables"]["DOCKER_HOST"], "tcp://docker:2375");
}

#[test]
fn every_script_line_of_the_pipelines_is_a_string() {
    // A `key: value` inside an unquoted command turns it into a mapping, which CI rejects.
    let g = &docs("ci/github-actions.yml")[0];
    for (name, job) in g["jobs"].as_mapping().unwrap() {
        for s in job["steps"].as_sequence().unwrap() {
            if !s["run"].is_null() {
                assert!(s["run"].is_string(), "{name:?}: {s:?}");
            }
        }
    }
    let l = &docs("ci/gitlab-ci.yml")[0];
    for (name, job) in l.as_mapping().unwrap() {
        for key in ["script", "before_script"] {
            if let Some(seq) = job[key].as_sequence() {
                assert!(seq.iter().all(Value::is_string), "{name:?}.{key}: {seq:?}");
            }
        }
    }
}
