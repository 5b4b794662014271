//! kubectl 1.37 against the simulated API server: what a person does at a terminal.

mod common;

use common::tools::{kubectl, kubectl_ok, kubectl_path};
use common::{eventually, TestCluster};
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::ResourceExt;
use serde_json::json;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};

async fn pod(c: &TestCluster, name: &str, node: Option<&str>) {
    let api: Api<Pod> = Api::namespaced(c.client().await, "default");
    let mut spec = json!({"containers": [{"name": "main", "image": "busybox:1.36"}]});
    if let Some(n) = node {
        spec["nodeName"] = json!(n);
    }
    let p: Pod = serde_json::from_value(
        json!({"metadata": {"name": name, "labels": {"app": "demo"}}, "spec": spec}),
    )
    .unwrap();
    api.create(&PostParams::default(), &p).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_wide_jsonpath_and_field_selector() {
    let c = TestCluster::start(2).await;
    let kc = &c.kubeconfig;
    let wide = kubectl_ok(kc, &["get", "nodes", "-o", "wide"]).await;
    let header = wide.lines().next().unwrap();
    for col in [
        "NAME",
        "STATUS",
        "ROLES",
        "AGE",
        "VERSION",
        "INTERNAL-IP",
        "OS-IMAGE",
        "CONTAINER-RUNTIME",
    ] {
        assert!(header.contains(col), "missing {col} in {header:?}");
    }
    assert!(
        wide.lines()
            .any(|l| l.starts_with("worker-01") && l.contains("Ready")),
        "{wide}"
    );
    pod(&c, "a", Some("worker-01")).await;
    pod(&c, "b", Some("worker-02")).await;
    pod(&c, "unscheduled", None).await;
    let names = kubectl_ok(
        kc,
        &["get", "pods", "-o", "jsonpath={.items[*].metadata.name}"],
    )
    .await;
    assert_eq!(names, "a b unscheduled");
    let on1 = kubectl_ok(
        kc,
        &[
            "get",
            "pods",
            "--field-selector",
            "spec.nodeName=worker-01",
            "-o",
            "name",
        ],
    )
    .await;
    assert_eq!(on1.trim(), "pod/a");
    let stale = kubectl_ok(
        kc,
        &[
            "get",
            "pods",
            "-A",
            "--field-selector",
            "spec.nodeName=worker-02,status.phase!=Running",
            "-o",
            "name",
        ],
    )
    .await;
    assert_eq!(stale.trim(), "pod/b");
    let table = kubectl_ok(kc, &["get", "pods", "-o", "wide"]).await;
    let row = table
        .lines()
        .find(|l| l.starts_with("a "))
        .expect("row for pod a");
    assert!(
        row.contains("0/1") && row.contains("Pending") && row.contains("worker-01"),
        "{row}"
    );
    let bad = kubectl(kc, &["get", "pods", "--field-selector", "spec.bogus=x"]).await;
    assert!(!bad.status.success());
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("field label not supported: spec.bogus"),
        "{}",
        String::from_utf8_lossy(&bad.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_watch_streams_changes() {
    let c = TestCluster::start(1).await;
    let mut child = tokio::process::Command::new(kubectl_path())
        .args(["get", "pods", "-w", "--no-headers"])
        .env("KUBECONFIG", &c.kubeconfig)
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    tokio::time::sleep(Duration::from_millis(500)).await;
    pod(&c, "watched", Some("worker-01")).await;
    let line = tokio::time::timeout(Duration::from_secs(10), lines.next_line())
        .await
        .expect("kubectl -w printed nothing")
        .unwrap()
        .unwrap();
    assert!(
        line.starts_with("watched") && line.contains("Pending"),
        "{line}"
    );
    let api: Api<Pod> = Api::namespaced(c.client().await, "default");
    api.patch_status("watched", &PatchParams::default(), &Patch::Merge(json!({"status": {"phase": "Running", "containerStatuses": [{"name": "main", "ready": true, "restartCount": 0, "image": "busybox:1.36", "imageID": "", "started": true, "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}}}]}}))).await.unwrap();
    let line = tokio::time::timeout(Duration::from_secs(10), lines.next_line())
        .await
        .expect("no update line")
        .unwrap()
        .unwrap();
    assert!(
        line.starts_with("watched") && line.contains("Running") && line.contains("1/1"),
        "{line}"
    );
}

const CM_V1: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\n  labels: {tier: one}\ndata:\n  a: \"1\"\n  b: \"2\"\n";
const CM_V2: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\n  labels: {tier: two}\ndata:\n  a: \"1\"\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_client_side_and_server_side() {
    let c = TestCluster::start(0).await;
    let kc = &c.kubeconfig;
    let f1 = c.dir.path().join("v1.yaml");
    let f2 = c.dir.path().join("v2.yaml");
    std::fs::write(&f1, CM_V1).unwrap();
    std::fs::write(&f2, CM_V2).unwrap();
    let out = kubectl_ok(kc, &["apply", "-f", f1.to_str().unwrap()]).await;
    assert!(out.contains("configmap/applied created"), "{out}");
    let out = kubectl_ok(kc, &["apply", "-f", f2.to_str().unwrap()]).await;
    assert!(out.contains("configmap/applied configured"), "{out}");
    let got: serde_json::Value =
        serde_json::from_str(&kubectl_ok(kc, &["get", "cm", "applied", "-o", "json"]).await)
            .unwrap();
    // Client-side apply computed a three-way patch: `b` was in the last applied config, so it is removed.
    assert_eq!(got["data"], json!({"a": "1"}));
    assert_eq!(got["metadata"]["labels"]["tier"], "two");
    assert!(
        got["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
            .as_str()
            .unwrap()
            .contains("\"tier\":\"two\"")
    );
    let out = kubectl_ok(kc, &["apply", "-f", f2.to_str().unwrap()]).await;
    assert!(out.contains("unchanged"), "{out}");

    // Server-side apply; a second manager changing the same field conflicts, --force-conflicts wins.
    let ssa = c.dir.path().join("ssa.yaml");
    std::fs::write(
        &ssa,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa\ndata:\n  owner: ops\n",
    )
    .unwrap();
    let out = kubectl_ok(kc, &["apply", "--server-side", "-f", ssa.to_str().unwrap()]).await;
    assert!(out.contains("serverside-applied"), "{out}");
    std::fs::write(
        &ssa,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa\ndata:\n  owner: dev\n",
    )
    .unwrap();
    let conflict = kubectl(
        kc,
        &[
            "apply",
            "--server-side",
            "--field-manager=other",
            "-f",
            ssa.to_str().unwrap(),
        ],
    )
    .await;
    assert!(!conflict.status.success());
    let err = String::from_utf8_lossy(&conflict.stderr);
    assert!(err.contains("conflict"), "{err}");
    kubectl_ok(
        kc,
        &[
            "apply",
            "--server-side",
            "--field-manager=other",
            "--force-conflicts",
            "-f",
            ssa.to_str().unwrap(),
        ],
    )
    .await;
    let owner = kubectl_ok(kc, &["get", "cm", "ssa", "-o", "jsonpath={.data.owner}"]).await;
    assert_eq!(owner, "dev");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn patch_each_type() {
    let c = TestCluster::start(1).await;
    let kc = &c.kubeconfig;
    pod(&c, "p", Some("worker-01")).await;
    kubectl_ok(
        kc,
        &[
            "patch",
            "pod",
            "p",
            "--type",
            "merge",
            "-p",
            r#"{"metadata":{"labels":{"merged":"yes"}}}"#,
        ],
    )
    .await;
    kubectl_ok(
        kc,
        &[
            "patch",
            "pod",
            "p",
            "--type",
            "json",
            "-p",
            r#"[{"op":"add","path":"/metadata/labels/json","value":"yes"}]"#,
        ],
    )
    .await;
    kubectl_ok(
        kc,
        &[
            "patch",
            "pod",
            "p",
            "-p",
            r#"{"spec":{"containers":[{"name":"main","image":"busybox:1.37"}]}}"#,
        ],
    )
    .await;
    let p: serde_json::Value =
        serde_json::from_str(&kubectl_ok(kc, &["get", "pod", "p", "-o", "json"]).await).unwrap();
    assert_eq!(p["metadata"]["labels"]["merged"], "yes");
    assert_eq!(p["metadata"]["labels"]["json"], "yes");
    assert_eq!(p["spec"]["containers"][0]["image"], "busybox:1.37");
    assert_eq!(p["spec"]["containers"].as_array().unwrap().len(), 1);
    let bad = kubectl(
        kc,
        &["patch", "pod", "p", "--type", "merge", "-p", "{not json"],
    )
    .await;
    assert!(!bad.status.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn force_delete_and_graceful_delete() {
    let c = TestCluster::start(1).await;
    let kc = &c.kubeconfig;
    pod(&c, "stuck", Some("worker-01")).await;
    // A graceful delete of a scheduled pod waits for its kubelet: it stays, Terminating.
    kubectl_ok(kc, &["delete", "pod", "stuck", "--wait=false"]).await;
    let table = kubectl_ok(kc, &["get", "pod", "stuck", "--no-headers"]).await;
    assert!(table.contains("Terminating"), "{table}");
    let out = kubectl(
        kc,
        &["delete", "pod", "stuck", "--force", "--grace-period=0"],
    )
    .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let api: Api<Pod> = Api::namespaced(c.client().await, "default");
    assert!(
        api.get_opt("stuck").await.unwrap().is_none(),
        "force delete removes the pod at once"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_for_condition_cordon_uncordon() {
    let c = TestCluster::start(1).await;
    let kc = &c.kubeconfig;
    kubectl_ok(
        kc,
        &[
            "wait",
            "--for=condition=Ready",
            "node/worker-01",
            "--timeout=20s",
        ],
    )
    .await;
    pod(&c, "later", Some("worker-01")).await;
    let kcp = kc.clone();
    let waiter = tokio::spawn(async move {
        kubectl(
            &kcp,
            &[
                "wait",
                "--for=condition=Ready",
                "pod/later",
                "--timeout=30s",
            ],
        )
        .await
    });
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert!(
        !waiter.is_finished(),
        "wait must block until the condition holds"
    );
    let api: Api<Pod> = Api::namespaced(c.client().await, "default");
    api.patch_status(
        "later",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}})),
    )
    .await
    .unwrap();
    let out = tokio::time::timeout(Duration::from_secs(20), waiter)
        .await
        .expect("kubectl wait returned")
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("condition met"));

    kubectl_ok(kc, &["cordon", "worker-01"]).await;
    let nodes: Api<Node> = Api::all(c.client().await);
    assert_eq!(
        nodes
            .get("worker-01")
            .await
            .unwrap()
            .spec
            .unwrap()
            .unschedulable,
        Some(true)
    );
    let row = kubectl_ok(kc, &["get", "node", "worker-01", "--no-headers"]).await;
    assert!(row.contains("Ready,SchedulingDisabled"), "{row}");
    kubectl_ok(kc, &["uncordon", "worker-01"]).await;
    assert_ne!(
        nodes
            .get("worker-01")
            .await
            .unwrap()
            .spec
            .unwrap()
            .unschedulable,
        Some(true)
    );
}

const WORKSPACE_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: workspaces.llmsafespaces.dev
spec:
  group: llmsafespaces.dev
  scope: Namespaced
  names: {plural: workspaces, singular: workspace, kind: Workspace, shortNames: [ws]}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    additionalPrinterColumns:
    - {name: Phase, type: string, jsonPath: .status.phase}
    - {name: Runtime, type: string, jsonPath: .spec.runtime}
    - {name: Age, type: date, jsonPath: .metadata.creationTimestamp}
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
---
apiVersion: llmsafespaces.dev/v1
kind: Workspace
metadata: {name: ws-1}
spec: {runtime: python}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_custom_resource_kind_with_printer_columns() {
    let c = TestCluster::start(0).await;
    let kc = &c.kubeconfig;
    let f = c.dir.path().join("crd.yaml");
    std::fs::write(&f, WORKSPACE_CRD.split("---").next().unwrap()).unwrap();
    kubectl_ok(kc, &["apply", "-f", f.to_str().unwrap()]).await;
    kubectl_ok(
        kc,
        &[
            "wait",
            "--for=condition=Established",
            "crd/workspaces.llmsafespaces.dev",
            "--timeout=20s",
        ],
    )
    .await;
    std::fs::write(&f, WORKSPACE_CRD.split("---").nth(1).unwrap()).unwrap();
    kubectl_ok(kc, &["apply", "-f", f.to_str().unwrap()]).await;
    let api: Api<kube::api::DynamicObject> = Api::namespaced_with(
        c.client().await,
        "default",
        &kube::core::ApiResource::from_gvk(&kube::core::GroupVersionKind::gvk(
            "llmsafespaces.dev",
            "v1",
            "Workspace",
        )),
    );
    api.patch_status(
        "ws-1",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"phase": "Active"}})),
    )
    .await
    .unwrap();
    let out = eventually(10, "kubectl get ws", || async {
        Some(kubectl_ok(kc, &["get", "ws"]).await)
    })
    .await;
    let mut lines = out.lines();
    let header: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(header, vec!["NAME", "PHASE", "RUNTIME", "AGE"]);
    let row: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(&row[..3], &["ws-1", "Active", "python"]);
    let by_kind = kubectl_ok(
        kc,
        &["get", "workspace", "ws-1", "-o", "jsonpath={.status.phase}"],
    )
    .await;
    assert_eq!(by_kind, "Active");
    assert_eq!(api.get("ws-1").await.unwrap().name_any(), "ws-1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_creates_send_protobuf_and_work() {
    let c = TestCluster::start(0).await;
    let kc = &c.kubeconfig;
    // kubectl 1.37's typed clients send protobuf bodies for these.
    kubectl_ok(kc, &["create", "namespace", "proto-ns"]).await;
    kubectl_ok(
        kc,
        &[
            "create",
            "configmap",
            "proto-cm",
            "-n",
            "proto-ns",
            "--from-literal=a=b",
        ],
    )
    .await;
    kubectl_ok(
        kc,
        &[
            "create",
            "deployment",
            "proto-dep",
            "-n",
            "proto-ns",
            "--image=busybox:1.36",
            "--replicas=0",
        ],
    )
    .await;
    let cm = kubectl_ok(
        kc,
        &[
            "get",
            "cm",
            "proto-cm",
            "-n",
            "proto-ns",
            "-o",
            "jsonpath={.data.a}",
        ],
    )
    .await;
    assert_eq!(cm, "b");
    let replicas = kubectl_ok(
        kc,
        &[
            "get",
            "deploy",
            "proto-dep",
            "-n",
            "proto-ns",
            "-o",
            "jsonpath={.spec.replicas}",
        ],
    )
    .await;
    assert_eq!(replicas, "0", "an explicit zero survives protobuf decoding");
    // scheduling.k8s.io, one of the groups added to the protobuf schema later.
    kubectl_ok(
        kc,
        &[
            "create",
            "priorityclass",
            "proto-high",
            "--value=1000",
            "--description=for tests",
            "--preemption-policy=Never",
        ],
    )
    .await;
    let pc = kubectl_ok(
        kc,
        &[
            "get",
            "priorityclass",
            "proto-high",
            "-o",
            "jsonpath={.value} {.description} {.preemptionPolicy}",
        ],
    )
    .await;
    assert_eq!(pc, "1000 for tests Never");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn certificate_approve_writes_the_approval_subresource() {
    let c = TestCluster::start(0).await;
    let kc = &c.kubeconfig;
    // Any base64 payload will do: the sim does not parse the request.
    let csr = json!({"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest", "metadata": {"name": "alice"},
                     "spec": {"request": "LS0tLS1CRUdJTi0tLS0tCg==", "signerName": "kubernetes.io/kube-apiserver-client", "usages": ["client auth"]}});
    let f = c.dir.path().join("csr.json");
    std::fs::write(&f, csr.to_string()).unwrap();
    kubectl_ok(kc, &["create", "-f", f.to_str().unwrap()]).await;
    let out = kubectl_ok(kc, &["certificate", "approve", "alice"]).await;
    assert_eq!(
        out.trim(),
        "certificatesigningrequest.certificates.k8s.io/alice approved"
    );
    let cond = kubectl_ok(kc, &["get", "csr", "alice", "-o", "jsonpath={.status.conditions[0].type}={.status.conditions[0].status} {.spec.signerName}"]).await;
    assert_eq!(cond, "Approved=True kubernetes.io/kube-apiserver-client");
    // The approval subresource reads back the object; kinds without it answer 404.
    let raw = kubectl_ok(
        kc,
        &[
            "get",
            "--raw",
            "/apis/certificates.k8s.io/v1/certificatesigningrequests/alice/approval",
        ],
    )
    .await;
    assert!(raw.contains("\"Approved\""), "{raw}");
    let wrong = kubectl(
        kc,
        &[
            "get",
            "--raw",
            "/apis/rbac.authorization.k8s.io/v1/clusterroles/admin/approval",
        ],
    )
    .await;
    assert!(
        String::from_utf8_lossy(&wrong.stderr).contains("NotFound"),
        "{}",
        String::from_utf8_lossy(&wrong.stderr)
    );
}
