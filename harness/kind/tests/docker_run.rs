//! Docker-engine tier: `faultline run --provider kind`, the binary, on the real engine with the
//! stand-in node image. Bring-up fails where kubeadm would run (the image has no Kubernetes
//! binaries): the run must report that cause first, in its timeline and report too, exit with
//! the documented 2 (a harness error; never 101, the panic of a provider dropped outside a
//! runtime) and leave nothing of its cluster behind. Needs FAULTLINE_DOCKER=1,
//! FAULTLINE_KIND_NODE_IMAGE and FAULTLINE_BIN (ci/docker-tier.sh sets all three).

mod common;
use common::*;

const SCENARIO: &str = "apiVersion: faultline.dev/v1alpha1
kind: Scenario
metadata: {name: fl-tier-run}
spec:
  cluster:
    nodes: [{name: control-plane, role: control-plane}, {name: worker-01}]
    storage: none
  steps:
    - fault: {nodeReboot: {node: worker-01}}
    - sleep: 1s
";

#[test]
fn a_kind_run_whose_bring_up_fails_reports_the_cause_first_and_leaves_nothing() {
    let Some(env) = TierEnv::new("run") else {
        return;
    };
    let faultline = std::env::var("FAULTLINE_BIN")
        .expect("FAULTLINE_BIN: the faultline binary (cargo build --workspace --bins)");
    let suite = env.work.path().join("suite");
    std::fs::create_dir_all(&suite).unwrap();
    std::fs::write(
        suite.join("faultline.yaml"),
        "apiVersion: faultline.dev/v1alpha1\nkind: Suite\n",
    )
    .unwrap();
    std::fs::write(suite.join("run.yaml"), SCENARIO).unwrap();
    let reports = env.work.path().join("reports");
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = std::process::Command::new(repo.join(&faultline))
        .args(["run", "--provider", "kind", "--report-dir"])
        .arg(&reports)
        .arg(&suite)
        .env("FAULTLINE_KIND_STATE_DIR", env.state.path())
        .env_remove("FAULTLINE_KIND_NODES_ONLY") // the whole bring-up, as a user runs it
        .env_remove("FAULTLINE_KIND_IMAGES")
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    let all = format!("{stdout}\n--- stderr\n{stderr}");
    assert_eq!(
        out.status.code(),
        Some(2),
        "a harness error is exit code 2:\n{all}"
    );
    assert!(
        !all.contains("panicked") && !all.contains("no reactor running"),
        "{all}"
    );

    // The cause comes first: on the scenario's ERROR line, as its reason, as the timeline's end.
    let cause = "cluster failed to start: step failed: kubeadm init on the control plane";
    let error_line = stdout
        .lines()
        .find(|l| l.starts_with("ERROR fl-tier-run:"))
        .unwrap_or_else(|| panic!("no ERROR line:\n{all}"));
    assert!(
        error_line.starts_with(&format!("ERROR fl-tier-run: {cause}")),
        "{error_line}"
    );
    assert!(
        stdout.contains("kubeadm: not found"),
        "the command's own error is shown:\n{all}"
    );
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(reports.join("report.json")).unwrap()).unwrap();
    let sc = &report["scenarios"][0];
    assert_eq!(sc["verdict"], "error", "{sc}");
    let reason = sc["reason"].as_str().unwrap();
    assert!(reason.starts_with(cause), "{reason}");
    let timeline = sc["timeline"].as_array().unwrap();
    let texts: Vec<&str> = timeline
        .iter()
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    assert_eq!(
        texts.first(),
        Some(&"cluster starting (kind)"),
        "{texts:#?}"
    );
    assert_eq!(
        texts.last(),
        Some(&reason),
        "the timeline ends with the bring-up's error: {texts:#?}"
    );
    assert!(
        !texts.iter().any(|t| t.contains("nodeReboot")),
        "no step ran: {texts:#?}"
    );

    // Node logs of the two containers that ran, then everything of the cluster removed.
    let cluster = reason
        .split("bringing up kind cluster ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .unwrap_or_else(|| panic!("cluster name in {reason}"));
    assert!(cluster.starts_with("fl-tier-run-"), "{cluster}");
    for node in [CONTROL_PLANE, WORKER] {
        let console = reports
            .join("fl-tier-run/kind-logs")
            .join(node)
            .join("console.log");
        assert!(console.is_file(), "{} in {reason}", console.display());
    }
    env.assert_nothing_left(cluster);
}
