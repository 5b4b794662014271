//! `moveFault` (issue #31, "the scenario's node and storage faults moved to another point of
//! the trace"): a fault step moved after the controller's K-th write is not run at its place
//! but by the runner right after the sim answered that write, with the controller held
//! meanwhile; the steps anchored on it wait for where it actually ran.

use std::process::Command;

mod common;
use common::{controller_rbac_pack, json, text, BIN};

const K: u64 = 2;

/// The fault comes first in the steps, before the workspace exists; moved, it runs after the
/// controller's second write (it cordons the control plane, which holds no workspace pod).
fn scenario() -> String {
    format!(
        r#"apiVersion: faultline.dev/v1alpha1
kind: Scenario
metadata: {{name: moved-fault}}
spec:
  cluster:
    nodes: [{{name: control-plane, role: control-plane}}, {{name: worker-01}}]
    storage: longhorn
    sim: {{timeScale: 0.05}}
  controller:
    ref: workspace-controller-rbac
    args: [--requeue-interval=500ms]
  perturb:
    - moveFault: {{step: cordoned, afterMutation: {K}}}
  steps:
    - fault: {{name: cordoned, heal: {{atStep: done}}, cordon: {{node: control-plane}}}}
    - name: create-workspace
      apply: ../fixtures/manifests/workspace-1.yaml
    - expect:
        name: active
        resource: {{apiVersion: llmsafespaces.dev/v1, kind: Workspace, namespace: llmsafespaces, name: ws-b70553ae,
                   condition: "has(object.status) && object.status.phase == 'Active'"}}
        within: 30s
    - expect:
        name: cordoned-where-it-ran
        resource: {{apiVersion: v1, kind: Node, name: control-plane,
                   condition: "has(object.spec.unschedulable) && object.spec.unschedulable"}}
        after: cordoned
        within: 10s
    - name: done
      sleep: 100ms
"#
    )
}

#[test]
fn a_moved_fault_runs_right_after_the_kth_write_and_its_anchor_follows_it() {
    let root = controller_rbac_pack(|rbac| rbac);
    std::fs::write(root.path().join("scenarios/moved-fault.yaml"), scenario()).unwrap();
    let report = root.path().join("report");
    let o = Command::new(BIN)
        .args(["run", "scenarios/moved-fault.yaml", "--seed", "7"])
        .args(["--config", "scenarios/faultline.yaml", "--report-dir"])
        .arg(&report)
        .current_dir(root.path())
        .output()
        .unwrap();
    let out = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");

    let trace = json(&report.join("moved-fault/trace.json"));
    assert_eq!(
        trace["fired"],
        serde_json::json!([{"kind": "moveFault", "step": "cordoned", "k": K}]),
        "{trace:#}"
    );
    let entries = trace["entries"].as_array().unwrap();
    let write_k = entries
        .iter()
        .position(|e| e["mutation"] == K)
        .unwrap_or_else(|| panic!("no write {K}: {trace:#}"));
    assert_eq!(
        entries[write_k]["perturbed"],
        format!("fault `cordoned` moved after mutating request {K}")
    );
    let moved = entries
        .iter()
        .position(|e| e["type"] == "movedFault")
        .unwrap_or_else(|| panic!("the moved fault is not in the trace: {trace:#}"));
    assert_eq!(entries[moved]["step"], "cordoned");
    assert!(
        entries[moved].get("failed").is_none(),
        "{:#}",
        entries[moved]
    );
    // After the K-th write, and the controller held until then: no request of it between.
    assert!(moved > write_k, "{trace:#}");
    assert!(
        entries[write_k + 1..moved]
            .iter()
            .all(|e| e["type"] != "request"),
        "a request passed the gate before the fault ran: {trace:#}"
    );
    assert!(
        entries[moved..].iter().any(|e| e["type"] == "request"),
        "the controller went on after the fault: {trace:#}"
    );

    // The timeline: skipped at its place, run after the write, injected, healed at `done`.
    let timeline = std::fs::read_to_string(report.join("moved-fault/timeline.txt")).unwrap();
    let at = |needle: &str| {
        timeline
            .find(needle)
            .unwrap_or_else(|| panic!("no `{needle}` in the timeline:\n{timeline}"))
    };
    let skipped =
        at("step cordoned (fault): moved, runs after the controller's mutating request 2");
    let ran =
        at("perturbation: step cordoned (fault) runs after the controller's mutating request 2");
    let created = at("step create-workspace (apply)");
    assert!(skipped < created && created < ran, "{timeline}");
    assert!(timeline[ran..].contains("cordon"), "{timeline}");
}
