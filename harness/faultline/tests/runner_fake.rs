//! The runner in-process, against the sim provider with an in-memory `FakeNodeOps`: the order of
//! node operations proves faults are healed on schedule, at their step, and by the final clean-up.

use faultline::loader::{load_scenario_str, LoadedSuite};
use faultline::provider::fake::{Call, FakeConfig, FakeNodeOps};
use faultline::provider::sim::SimProvider;
use faultline::report::{Budget, ExpectationMode, HealedBy};
use faultline::runner::{self, NoProgress, RunOptions};
use faultline::timeline::Verdict;
use std::path::Path;
use std::sync::Arc;

fn opts(fake: Arc<FakeNodeOps>) -> RunOptions {
    RunOptions {
        provider: Arc::new(SimProvider::with_node_ops(fake)),
        report_dir: None,
        keep_cluster: false,
        seed: 7,
        jobs: 1,
        cancel: tokio::sync::watch::channel(None).1,
        progress: Arc::new(NoProgress),
        faultline_bin: "faultline".into(),
        controller_args: vec![],
        retries: 0,
        pause: Default::default(),
        trace: false,
    }
}

fn actions(calls: &[Call]) -> Vec<String> {
    calls
        .iter()
        .map(|c| format!("{} {}", c.action, c.op.node().unwrap_or("-")))
        .collect()
}

async fn run(body: &str, fake: Arc<FakeNodeOps>) -> faultline::report::ScenarioReport {
    let suite = LoadedSuite::default();
    let src = format!(
        "apiVersion: faultline.dev/v1alpha1\nkind: Scenario\nmetadata: {{name: t}}\nspec:\n{body}"
    );
    let ls =
        load_scenario_str(Path::new("t.yaml"), &src, &suite).unwrap_or_else(|d| panic!("{d:?}"));
    runner::run_scenario(&ls, &suite, &opts(fake), &Default::default(), 1).await
}

#[tokio::test]
async fn heals_on_schedule_at_step_and_at_cleanup_in_order() {
    let fake = Arc::new(FakeNodeOps::new(FakeConfig::default()));
    let r = run(
        concat!(
            "  steps:\n",
            "    - fault: {name: a, kubeletStop: {node: worker-01}, heal: {after: 100ms}}\n",
            "    - fault: {name: b, hungNfs: {node: worker-02}, heal: {atStep: fix}}\n",
            "    - fault: {name: c, ioErrors: {node: worker-03}}\n",
            "    - sleep: 300ms\n",
            "    - {name: fix, remediate: {nodePowerCycle: {node: worker-02}}}\n",
        ),
        fake.clone(),
    )
    .await;
    assert_eq!(r.verdict, Verdict::Passed, "{:?}", r.reason);
    assert_eq!(
        actions(&fake.calls()),
        vec![
            "apply worker-01",
            "apply worker-02",
            "apply worker-03",
            "heal worker-01", // after 100ms
            "heal worker-02",
            "apply worker-02", // at step `fix`, before the power cycle runs
            "heal worker-03",  // clean-up
        ]
    );
    let by: Vec<&str> = r.faults.iter().map(|f| f.healed_by.as_str()).collect();
    assert_eq!(by, vec!["schedule", "atStep", "cleanup"]);
}

#[tokio::test]
async fn heals_when_an_expectation_fails_and_skips_the_rest() {
    let fake = Arc::new(FakeNodeOps::new(FakeConfig::default()));
    let r = run(concat!(
        "  steps:\n",
        "    - fault: {name: stale, staleDeviceMount: {node: worker-01, volume: {pvc: default/data}}}\n",
        "    - expect: {name: recovers, within: 200ms, resource: {apiVersion: v1, kind: Pod, namespace: default, any: \"object.status.phase == 'Running'\"}}\n",
        "    - expect: {name: never-reached, log: {source: kubelet, pattern: x}}\n",
    ), fake.clone()).await;
    assert_eq!(r.verdict, Verdict::Failed);
    assert_eq!(
        actions(&fake.calls()),
        vec!["apply worker-01", "heal worker-01"]
    );
    let e: Vec<(&str, Verdict)> = r
        .expectations
        .iter()
        .map(|e| (e.name.as_str(), e.verdict))
        .collect();
    assert_eq!(
        e,
        vec![
            ("recovers", Verdict::Failed),
            ("never-reached", Verdict::Skipped)
        ]
    );
    assert_eq!(
        r.expectations[0].last_observed.as_deref(),
        Some("none of 0 Pod satisfy `object.status.phase == 'Running'`")
    );
}

#[tokio::test]
async fn a_failed_injection_is_still_healed() {
    let fake = Arc::new(FakeNodeOps::new(FakeConfig {
        fail_on: vec!["csiPluginDown".into()],
        ..Default::default()
    }));
    let r = run(
        "  steps:\n    - fault: {name: csi, csiPluginDown: {node: worker-01}}\n",
        fake.clone(),
    )
    .await;
    assert_eq!(r.verdict, Verdict::Failed);
    assert!(
        r.reason
            .as_deref()
            .unwrap()
            .contains("fake-node-ops: told to fail on csiPluginDown"),
        "{:?}",
        r.reason
    );
    // The half-injected fault is healed anyway (heal must be idempotent).
    assert_eq!(actions(&fake.calls()), vec!["heal worker-01"]);
}

async fn run_on_sim(body: &str) -> faultline::report::ScenarioReport {
    let suite = LoadedSuite::default();
    let src = format!(
        "apiVersion: faultline.dev/v1alpha1\nkind: Scenario\nmetadata: {{name: t}}\nspec:\n{body}"
    );
    let ls =
        load_scenario_str(Path::new("t.yaml"), &src, &suite).unwrap_or_else(|d| panic!("{d:?}"));
    let mut o = opts(Arc::new(FakeNodeOps::new(FakeConfig::default())));
    o.provider = Arc::new(SimProvider::new());
    runner::run_scenario(&ls, &suite, &o, &Default::default(), 1).await
}

#[tokio::test]
async fn sim_node_ops_drive_the_simulated_nodes() {
    let r = run_on_sim(concat!(
        "  cluster: {nodes: [{name: control-plane, role: control-plane}, {name: worker-01}], storage: none, sim: {timeScale: 0.05}}\n",
        "  steps:\n",
        "    - expect: {name: ready, within: 10s, resource: {apiVersion: v1, kind: Node, name: worker-01, condition: \"object.status.conditions.exists(c, c.type == 'Ready' && c.status == 'True')\"}}\n",
        "    - fault: {name: stop, kubeletStop: {node: worker-01}, heal: {atStep: back}}\n",
        "    - expect: {name: not-ready, after: stop, within: 10s, resource: {apiVersion: v1, kind: Node, name: worker-01, condition: \"object.status.conditions.exists(c, c.type == 'Ready' && c.status != 'True')\"}}\n",
        "    - {name: back, sleep: 1ms}\n",
        "    - expect: {name: ready-again, after: stop.healed, within: 10s, resource: {apiVersion: v1, kind: Node, name: worker-01, condition: \"object.status.conditions.exists(c, c.type == 'Ready' && c.status == 'True')\"}}\n",
    )).await;
    assert_eq!(
        r.verdict,
        Verdict::Passed,
        "{:?} {:#?}",
        r.reason,
        r.expectations
    );
    assert!(
        r.expectations[1].measured_ms.is_some(),
        "time to detect a stopped kubelet is measured"
    );
}

#[tokio::test]
async fn sim_api_errors_fault_fails_requests_until_healed() {
    let r = run_on_sim(concat!(
        "  cluster: {sim: {apiOnly: true}}\n",
        "  steps:\n",
        "    - fault: {name: flaky, apiErrors: {rate: 1.0, code: 500, verbs: [patch], resources: [configmaps]}, heal: {atStep: retry}}\n",
        "    - try:\n",
        "        - {timeout: 5s, apply: {objects: [{apiVersion: v1, kind: ConfigMap, metadata: {name: cm}}]}}\n",
        "      finally:\n",
        "        - {name: retry, apply: {objects: [{apiVersion: v1, kind: ConfigMap, metadata: {name: cm}}]}}\n",
        "        - expect: {name: created, within: 2s, resource: {apiVersion: v1, kind: ConfigMap, namespace: default, name: cm, condition: \"object != null\"}}\n",
    )).await;
    assert_eq!(r.verdict, Verdict::Failed, "the first apply fails");
    assert!(
        r.reason.as_deref().unwrap().contains("500"),
        "{:?}",
        r.reason
    );
    assert_eq!(
        r.expectations[0].verdict,
        Verdict::Passed,
        "after the heal the retry went through"
    );
    assert_eq!(r.faults[0].healed_by, HealedBy::AtStep);
}

#[tokio::test]
async fn node_faults_on_an_api_only_sim_are_refused_clearly() {
    let r = run_on_sim("  cluster: {sim: {apiOnly: true}}\n  steps:\n    - fault: {name: k, kubeletStop: {node: worker-01}}\n").await;
    assert_eq!(r.verdict, Verdict::Failed);
    assert!(r
        .reason
        .unwrap()
        .contains("`kubeletStop` needs the simulated nodes, but this cluster serves the API only"));
}

#[tokio::test]
async fn cordon_and_drain_are_done_through_the_api_and_healed() {
    let fake = Arc::new(FakeNodeOps::new(FakeConfig::default()));
    let r = run(concat!(
        "  steps:\n",
        "    - fault: {name: cordoned, cordon: {node: worker-02}}\n",
        "    - expect: {name: unschedulable, within: 2s, resource: {apiVersion: v1, kind: Node, name: worker-02, condition: \"has(object.spec.unschedulable) && object.spec.unschedulable\"}}\n",
        "    - remediate: {uncordon: {node: worker-02}}\n",
        "    - expect: {name: schedulable, within: 2s, resource: {apiVersion: v1, kind: Node, name: worker-02, condition: \"!has(object.spec.unschedulable) || !object.spec.unschedulable\"}}\n",
    ), fake.clone()).await;
    assert_eq!(
        r.verdict,
        Verdict::Passed,
        "{:?} {:#?}",
        r.reason,
        r.expectations
    );
    assert!(
        fake.calls().is_empty(),
        "runner operations never reach NodeOps"
    );
}

#[tokio::test]
async fn manifest_verbs_and_event_expectations() {
    let fake = Arc::new(FakeNodeOps::new(FakeConfig::default()));
    let r = run(concat!(
        "  steps:\n",
        "    - create: {objects: [{apiVersion: v1, kind: ConfigMap, metadata: {name: cm}, data: {phase: one}}]}\n",
        "    - patch: {apiVersion: v1, kind: ConfigMap, name: cm, namespace: default, patch: {data: {phase: two}}}\n",
        "    - expect: {name: patched, within: 2s, resource: {apiVersion: v1, kind: ConfigMap, namespace: default, name: cm, condition: \"object.data.phase == 'two'\"}}\n",
        "    - apply: {objects: [{apiVersion: v1, kind: Event, metadata: {name: ev1}, reason: FailedMount, type: Warning,\n",
        "               message: 'Unable to attach or mount volumes: timed out waiting for the condition',\n",
        "               involvedObject: {kind: Pod, name: ws-a-1234, namespace: default}}]}\n",
        "    - expect: {name: failed-mount, after: start, within: 2s, event: {reason: FailedMount, type: Warning, involvedKind: Pod, involvedName: /^ws-a-/, message: timed out}}\n",
        "    - delete: {apiVersion: v1, kind: ConfigMap, name: cm, namespace: default}\n",
        "    - expect: {name: gone, within: 2s, resource: {apiVersion: v1, kind: ConfigMap, namespace: default, name: cm, condition: \"object == null\"}}\n",
        "    - expect: {name: no-more-events, never: true, for: 200ms, event: {reason: Killing}}\n",
        "    - expect: {name: one-configmap-left, within: 1s, resource: {apiVersion: v1, kind: ConfigMap, namespace: default, count: {atMost: 1}}}\n",
    ), fake).await;
    assert_eq!(
        r.verdict,
        Verdict::Passed,
        "{:?} {:#?}",
        r.reason,
        r.expectations
    );
    assert_eq!(r.expectations.len(), 5);
    assert!(
        r.timeline.iter().any(|e| e
            .text
            .starts_with("event Warning FailedMount Pod default/ws-a-1234")),
        "events reach the timeline"
    );
    assert!(r
        .expectations
        .iter()
        .find(|e| e.name == "failed-mount")
        .unwrap()
        .last_observed
        .as_ref()
        .unwrap()
        .contains("1 matching event(s)"));
}

/// A bring-up that fails after `delay` (as kind's does at kubeadm), or a runner timeout.
struct FailingBringUp {
    delay: std::time::Duration,
    timeout: std::time::Duration,
}

impl faultline::provider::Provider for FailingBringUp {
    fn name(&self) -> &'static str {
        "failing"
    }
    fn start<'a>(
        &'a self,
        _: &'a faultline::provider::ClusterSpec,
    ) -> futures::future::BoxFuture<'a, anyhow::Result<Box<dyn faultline::provider::Cluster>>> {
        Box::pin(async move {
            tokio::time::sleep(self.delay).await;
            Err(
                anyhow::anyhow!("step failed: kubeadm init\n  exit code 127")
                    .context("bringing up the cluster stopped at step 7 of 12"),
            )
        })
    }
    fn start_timeout(&self) -> std::time::Duration {
        self.timeout
    }
}

async fn run_with(provider: FailingBringUp) -> faultline::report::ScenarioReport {
    let suite = LoadedSuite::default();
    let src = "apiVersion: faultline.dev/v1alpha1\nkind: Scenario\nmetadata: {name: t}\nspec:\n  steps:\n    - sleep: 1s\n";
    let ls = load_scenario_str(Path::new("t.yaml"), src, &suite).unwrap();
    let o = RunOptions {
        provider: Arc::new(provider),
        ..opts(Arc::new(FakeNodeOps::new(FakeConfig::default())))
    };
    runner::run_scenario(&ls, &suite, &o, &Default::default(), 1).await
}

/// The provider's own error is the scenario's reason and the timeline's last entry, whatever
/// the bring-up took below the provider's start timeout; only beyond it does the runner cut it.
#[tokio::test]
async fn a_bring_up_error_ends_the_timeline_and_is_the_reason() {
    use std::time::Duration;
    let r = run_with(FailingBringUp {
        delay: Duration::from_millis(1500),
        timeout: Duration::from_secs(10),
    })
    .await;
    assert_eq!(r.verdict, Verdict::Error);
    let reason = r.reason.clone().unwrap();
    assert!(
        reason.starts_with(
            "cluster failed to start: bringing up the cluster stopped at step 7 of 12"
        ),
        "{reason}"
    );
    assert!(
        reason.contains("step failed: kubeadm init\n  exit code 127"),
        "the cause is kept whole: {reason}"
    );
    let texts: Vec<&str> = r.timeline.iter().map(|e| e.text.as_str()).collect();
    assert_eq!(
        texts,
        vec!["cluster starting (failing)", reason.as_str()],
        "nothing ran before or after the bring-up"
    );
    assert!(
        r.timeline[1].at_ms >= 1500,
        "recorded when the bring-up failed: {:?}",
        r.timeline[1].at_ms
    );
    assert!(
        r.steps.iter().all(|s| s.verdict != Verdict::Passed),
        "no step ran"
    );
    // Beyond the provider's start timeout the runner gives up, and says after how long.
    let r = run_with(FailingBringUp {
        delay: Duration::from_secs(5),
        timeout: Duration::from_millis(300),
    })
    .await;
    assert_eq!(
        r.reason.as_deref(),
        Some("cluster failed to start within 0.3s")
    );
}

fn modes(r: &faultline::report::ScenarioReport) -> Vec<(&str, ExpectationMode, Verdict)> {
    r.expectations
        .iter()
        .map(|e| (e.name.as_str(), e.mode, e.verdict))
        .collect()
}

/// Expectations skipped after a failed step are reported with the mode they would have been
/// judged by (for, never, eventuallyFor, rate too, not only never/eventually) and its budget.
#[tokio::test]
async fn skipped_expectations_keep_their_mode_and_budget() {
    let fake = Arc::new(FakeNodeOps::new(FakeConfig {
        fail_on: vec!["csiPluginDown".into()],
        ..Default::default()
    }));
    let pods = "resource: {apiVersion: v1, kind: Pod, namespace: default, any: \"true\"}";
    let r = run(
        &[
            "  steps:\n".to_string(),
            "    - fault: {name: csi, csiPluginDown: {node: worker-01}}\n".into(),
            format!("    - expect: {{name: e-eventually, {pods}}}\n"),
            format!("    - expect: {{name: e-eventually-for, within: 2s, for: 1s, {pods}}}\n"),
            format!("    - expect: {{name: e-for, for: 1s, {pods}}}\n"),
            format!("    - expect: {{name: e-never-for, never: true, for: 1s, {pods}}}\n"),
            "    - try:\n".into(),
            "        - expect: {name: e-rate, log: {source: kubelet, pattern: x, atMost: 3, per: 10s}}\n".into(),
            "      finally:\n".into(),
            format!("        - expect: {{name: e-never, never: true, {pods}}}\n"),
        ]
        .concat(),
        fake,
    )
    .await;
    assert_eq!(r.verdict, Verdict::Failed, "{:?}", r.reason);
    use ExpectationMode::*;
    use Verdict::Skipped;
    assert_eq!(
        modes(&r),
        vec![
            ("e-eventually", Eventually, Skipped),
            ("e-eventually-for", EventuallyFor, Skipped),
            ("e-for", For, Skipped),
            ("e-never-for", Never, Skipped),
            ("e-rate", Rate, Skipped),
            ("e-never", Never, Skipped),
        ]
    );
    let budget = |name: &str| {
        r.expectations
            .iter()
            .find(|e| e.name == name)
            .unwrap()
            .budget
            .clone()
    };
    let within_for = |within_ms, for_ms| Budget { within_ms, for_ms };
    // The suite's default `expectWithin` (30s) is the deadline of an eventually without `within`.
    assert_eq!(budget("e-eventually"), within_for(Some(30_000), None));
    assert_eq!(
        budget("e-eventually-for"),
        within_for(Some(2000), Some(1000))
    );
    assert_eq!(budget("e-for"), within_for(None, Some(1000)));
    assert_eq!(budget("e-rate"), within_for(None, None));
    let json = serde_json::to_value(&r).unwrap();
    let words: Vec<&str> = json["expectations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["mode"].as_str().unwrap())
        .collect();
    assert_eq!(
        words,
        [
            "eventually",
            "eventuallyFor",
            "for",
            "never",
            "rate",
            "never"
        ],
        "the JSON report's strings"
    );
}

/// A run interrupted before a scenario started reports its invariants skipped as they would have
/// been judged: always, never, rate.
#[tokio::test]
async fn invariants_of_a_scenario_not_started_keep_their_mode() {
    let suite = LoadedSuite::default();
    let src = concat!(
        "apiVersion: faultline.dev/v1alpha1\nkind: Scenario\nmetadata: {name: t}\nspec:\n",
        "  invariants:\n",
        "    - {name: i-always, resource: {apiVersion: v1, kind: Pod, namespace: default, all: \"true\"}}\n",
        "    - {name: i-never, never: true, event: {reason: Killing}}\n",
        "    - {name: i-rate, log: {source: kubelet, pattern: x, atMost: 3}}\n",
        "  steps:\n",
        "    - expect: {name: e-for, for: 1s, event: {reason: Started}}\n",
    );
    let ls =
        load_scenario_str(Path::new("t.yaml"), src, &suite).unwrap_or_else(|d| panic!("{d:?}"));
    let (cancel_tx, cancel) = tokio::sync::watch::channel(Some("SIGINT".to_string()));
    let o = RunOptions {
        cancel,
        ..opts(Arc::new(FakeNodeOps::new(FakeConfig::default())))
    };
    let reports = runner::run_all(vec![ls], &suite, &o, &Default::default()).await;
    drop(cancel_tx);
    assert_eq!(reports[0].verdict, Verdict::Cancelled);
    use ExpectationMode::*;
    use Verdict::Skipped;
    assert_eq!(
        modes(&reports[0]),
        vec![
            ("e-for", For, Skipped),
            ("i-always", Always, Skipped),
            ("i-never", Never, Skipped),
            ("i-rate", Rate, Skipped),
        ]
    );
    assert!(reports[0].expectations[1..].iter().all(|e| e.invariant));
}
