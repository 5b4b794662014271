//! The workload controllers judged by kubectl 1.37's own logic: `rollout status` (it reads the
//! Deployment's generation, replica counts and Progressing condition), `rollout undo` (it reads
//! the ReplicaSets' revision annotations), `rollout restart`, `scale`, and `drain` against a
//! PodDisruptionBudget (it retries evictions on 429 until the budget allows them).

mod common;

use common::tools::{kubectl, kubectl_ok};
use common::{eventually, TestCluster};
use faultline_sim::{SimOptions, Timing};
use std::path::Path;

const SCALE: f64 = 0.02;

async fn full_cluster(workers: usize) -> TestCluster {
    TestCluster::start_with(SimOptions::full(workers, Timing::scaled(SCALE))).await
}

fn deployment_yaml(name: &str, image: &str, replicas: u32) -> String {
    format!(
        r#"apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}, namespace: default}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: {name}}}}}
  strategy: {{type: RollingUpdate, rollingUpdate: {{maxSurge: 1, maxUnavailable: 0}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      containers: [{{name: web, image: "{image}"}}]
"#
    )
}

async fn apply(kc: &Path, dir: &Path, file: &str, yaml: &str) {
    let path = dir.join(file);
    std::fs::write(&path, yaml).unwrap();
    kubectl_ok(kc, &["apply", "-f", path.to_str().unwrap()]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollout_status_undo_and_restart() {
    let c = full_cluster(2).await;
    let kc = &c.kubeconfig;
    apply(
        kc,
        c.dir.path(),
        "web.yaml",
        &deployment_yaml("web", "nginx:1.27", 3),
    )
    .await;
    let out = kubectl_ok(
        kc,
        &["rollout", "status", "deployment/web", "--timeout=60s"],
    )
    .await;
    assert!(
        out.contains("deployment \"web\" successfully rolled out"),
        "{out}"
    );
    // The status and conditions kubectl printed from are the controller's.
    let status = kubectl_ok(kc, &["get", "deployment", "web", "-o", "jsonpath={.status.availableReplicas}/{.status.updatedReplicas} {.status.conditions[?(@.type==\"Progressing\")].reason} {.metadata.annotations.deployment\\.kubernetes\\.io/revision}"]).await;
    assert_eq!(status, "3/3 NewReplicaSetAvailable 1");

    // A new image: a second ReplicaSet, revision 2, old one scaled to zero.
    kubectl_ok(kc, &["set", "image", "deployment/web", "web=nginx:1.28"]).await;
    let out = kubectl_ok(
        kc,
        &["rollout", "status", "deployment/web", "--timeout=60s"],
    )
    .await;
    assert!(out.contains("successfully rolled out"), "{out}");
    let rs = kubectl_ok(kc, &["get", "rs", "-l", "app=web", "-o", "jsonpath={range .items[*]}{.metadata.annotations.deployment\\.kubernetes\\.io/revision}={.spec.replicas}={.spec.template.spec.containers[0].image}{\"\\n\"}{end}"]).await;
    let mut lines: Vec<&str> = rs.lines().collect();
    lines.sort();
    assert_eq!(lines, ["1=0=nginx:1.27", "2=3=nginx:1.28"], "{rs}");
    let history = kubectl_ok(kc, &["rollout", "history", "deployment/web"]).await;
    assert!(
        history.contains("1 ") && history.contains("2 "),
        "{history}"
    );

    // Undo: kubectl copies revision 1's template back; that ReplicaSet becomes revision 3.
    kubectl_ok(kc, &["rollout", "undo", "deployment/web"]).await;
    kubectl_ok(
        kc,
        &["rollout", "status", "deployment/web", "--timeout=60s"],
    )
    .await;
    let image = kubectl_ok(kc, &["get", "deployment", "web", "-o", "jsonpath={.spec.template.spec.containers[0].image} {.metadata.annotations.deployment\\.kubernetes\\.io/revision}"]).await;
    assert_eq!(image, "nginx:1.27 3");
    let rs = kubectl_ok(kc, &["get", "rs", "-l", "app=web", "-o", "jsonpath={range .items[*]}{.metadata.annotations.deployment\\.kubernetes\\.io/revision}={.spec.replicas}{\"\\n\"}{end}"]).await;
    let mut lines: Vec<&str> = rs.lines().collect();
    lines.sort();
    assert_eq!(lines, ["2=0", "3=3"], "{rs}");

    // Restart: a template annotation, hence a fresh ReplicaSet and new pods.
    let before = kubectl_ok(kc, &["get", "pods", "-l", "app=web", "-o", "name"]).await;
    kubectl_ok(kc, &["rollout", "restart", "deployment/web"]).await;
    kubectl_ok(
        kc,
        &["rollout", "status", "deployment/web", "--timeout=60s"],
    )
    .await;
    let after = eventually(30, "old pods gone after the restart", || {
        let kc = kc.clone();
        let before = before.clone();
        async move {
            let now = kubectl_ok(&kc, &["get", "pods", "-l", "app=web", "-o", "name"]).await;
            (now.lines().count() == 3 && now.lines().all(|l| !before.contains(l))).then_some(now)
        }
    })
    .await;
    assert_eq!(after.lines().count(), 3);
    let events = kubectl_ok(
        kc,
        &[
            "get",
            "events",
            "--field-selector",
            "involvedObject.kind=Deployment,involvedObject.name=web",
            "-o",
            "jsonpath={range .items[*]}{.reason}: {.message}{\"\\n\"}{end}",
        ],
    )
    .await;
    assert!(
        events.lines().any(
            |l| l.starts_with("ScalingReplicaSet: Scaled up replica set web-")
                && l.ends_with("from 0 to 1")
        ),
        "{events}"
    );
    assert!(
        events
            .lines()
            .any(|l| l.starts_with("ScalingReplicaSet: Scaled down replica set web-")),
        "{events}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deployment_that_cannot_become_ready_times_out_progressing() {
    let c = full_cluster(1).await;
    let kc = &c.kubeconfig;
    let yaml = r#"apiVersion: apps/v1
kind: Deployment
metadata: {name: stuck, namespace: default}
spec:
  replicas: 1
  progressDeadlineSeconds: 60
  selector: {matchLabels: {app: stuck}}
  template:
    metadata: {labels: {app: stuck}, annotations: {sim.faultline.dev/never-ready: "true"}}
    spec: {containers: [{name: c, image: "busybox:1.36"}]}
"#;
    apply(kc, c.dir.path(), "stuck.yaml", yaml).await;
    // 60 s of deadline at this time scale is 1.2 s; kubectl reports the controller's verdict.
    let out = kubectl(
        kc,
        &["rollout", "status", "deployment/stuck", "--timeout=30s"],
    )
    .await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("deployment \"stuck\" exceeded its progress deadline"),
        "{stderr}"
    );
    let cond = kubectl_ok(kc, &["get", "deployment", "stuck", "-o", "jsonpath={.status.conditions[?(@.type==\"Progressing\")].message}|{.status.conditions[?(@.type==\"Available\")].reason}"]).await;
    assert!(
        cond.starts_with("ReplicaSet \"stuck-")
            && cond.ends_with("\" has timed out progressing.|MinimumReplicasUnavailable"),
        "{cond}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drain_waits_for_the_disruption_budget() {
    let c = full_cluster(1).await;
    let kc = &c.kubeconfig;
    apply(
        kc,
        c.dir.path(),
        "web.yaml",
        &deployment_yaml("web", "nginx:1.27", 2),
    )
    .await;
    kubectl_ok(
        kc,
        &["rollout", "status", "deployment/web", "--timeout=60s"],
    )
    .await;
    let pdb = "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: web, namespace: default}\nspec: {minAvailable: 2, selector: {matchLabels: {app: web}}}\n";
    apply(kc, c.dir.path(), "pdb.yaml", pdb).await;
    eventually(20, "PDB status computed", || async {
        let s = kubectl_ok(kc, &["get", "pdb", "web", "-o", "jsonpath={.status.currentHealthy}/{.status.desiredHealthy}/{.status.disruptionsAllowed}/{.status.expectedPods} {.status.conditions[0].reason}"]).await;
        (s == "2/2/0/2 InsufficientPods").then_some(())
    })
    .await;
    // Both pods are on the only worker: the budget blocks every eviction.
    let out = kubectl(
        kc,
        &[
            "drain",
            "worker-01",
            "--ignore-daemonsets",
            "--delete-emptydir-data",
            "--timeout=3s",
        ],
    )
    .await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "drain must not finish while the budget forbids evictions"
    );
    assert!(
        stderr.contains("Cannot evict pod as it would violate the pod's disruption budget."),
        "{stderr}"
    );
    // Relax the budget: drain evicts both pods (one at a time as the budget refills is not
    // needed with minAvailable 0) and finishes.
    kubectl_ok(
        kc,
        &[
            "patch",
            "pdb",
            "web",
            "--type=merge",
            "-p",
            "{\"spec\":{\"minAvailable\":0}}",
        ],
    )
    .await;
    let out = kubectl_ok(
        kc,
        &[
            "drain",
            "worker-01",
            "--ignore-daemonsets",
            "--delete-emptydir-data",
            "--timeout=60s",
        ],
    )
    .await;
    assert!(out.contains("node/worker-01 drained"), "{out}");
    let pending = kubectl_ok(
        kc,
        &[
            "get",
            "pods",
            "-l",
            "app=web",
            "-o",
            "jsonpath={range .items[*]}{.status.phase}{\"\\n\"}{end}",
        ],
    )
    .await;
    assert!(
        pending.lines().all(|p| p == "Pending"),
        "replacements wait for a schedulable node: {pending}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scaling_a_deployment_moves_its_replicaset_and_pods() {
    let c = full_cluster(2).await;
    let kc = &c.kubeconfig;
    apply(
        kc,
        c.dir.path(),
        "web.yaml",
        &deployment_yaml("web", "nginx:1.27", 1),
    )
    .await;
    kubectl_ok(
        kc,
        &["rollout", "status", "deployment/web", "--timeout=60s"],
    )
    .await;
    for (replicas, op) in [(4, "up"), (2, "down")] {
        kubectl_ok(
            kc,
            &["scale", "deployment/web", &format!("--replicas={replicas}")],
        )
        .await;
        kubectl_ok(
            kc,
            &["rollout", "status", "deployment/web", "--timeout=60s"],
        )
        .await;
        let got = eventually(30, "pods follow the replica count", || async {
            let pods = kubectl_ok(
                kc,
                &[
                    "get",
                    "pods",
                    "-l",
                    "app=web",
                    "--field-selector=status.phase=Running",
                    "-o",
                    "name",
                ],
            )
            .await;
            let rs = kubectl_ok(
                kc,
                &[
                    "get",
                    "rs",
                    "-l",
                    "app=web",
                    "-o",
                    "jsonpath={.items[0].spec.replicas}/{.items[0].status.readyReplicas}",
                ],
            )
            .await;
            (pods.lines().count() == replicas && rs == format!("{replicas}/{replicas}"))
                .then_some(rs)
        })
        .await;
        assert_eq!(got, format!("{replicas}/{replicas}"));
        let events = kubectl_ok(
            kc,
            &[
                "get",
                "events",
                "--field-selector",
                "involvedObject.kind=Deployment,involvedObject.name=web",
                "-o",
                "jsonpath={range .items[*]}{.message}{\"\\n\"}{end}",
            ],
        )
        .await;
        assert!(
            events
                .lines()
                .any(|l| l.starts_with(&format!("Scaled {op} replica set web-"))
                    && l.ends_with(&format!(" to {replicas}"))),
            "{events}"
        );
    }
}
