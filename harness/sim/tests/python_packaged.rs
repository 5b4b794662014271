//! The Python clients' OWN live-cluster tests, as shipped in their wheels, against the sim: the
//! `kubernetes` package's `dynamic/test_client.py`, `dynamic/test_discovery.py`,
//! `aio/dynamic/*_test.py` and `kubernetes_asyncio`'s `dynamic/*_test.py`, run with pytest
//! (`ci/python/e2e_shim.py` provides the `e2e_test.base` module they import but the wheels
//! lack). Every test must pass except those in `EXCLUDED`, each listed with its reason in
//! docs/fidelity.md.

mod common;

use common::tools::python_path;
use common::TestCluster;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// How a test fails on kube-apiserver 1.35 (etcd, kube-apiserver, kube-controller-manager and
/// kube-scheduler from `upstream/`, no kubelets): every time, or when it loses a race that the
/// real apiserver's asynchronous work sets up (it then passes now and then).
#[derive(Clone, Copy, PartialEq)]
enum OnReal {
    Fails,
    Races,
}

/// Tests excluded on both sides, each failing against the real control plane (the run in
/// `python_clients_packaged_live_tests_on_the_real_control_plane`, whose output lists them).
const EXCLUDED: &[(&str, OnReal, &str)] = &[
    ("kubernetes.dynamic.test_client.TestDynamicClient.test_cluster_custom_resources", OnReal::Fails, V1BETA1_CRD),
    ("kubernetes.dynamic.test_client.TestDynamicClient.test_namespaced_custom_resources", OnReal::Fails, V1BETA1_CRD),
    ("kubernetes.dynamic.test_client.TestDynamicClient.test_async_namespaced_custom_resources", OnReal::Fails, V1BETA1_CRD),
    ("kubernetes.dynamic.test_discovery.TestDiscoverer.test_cache_decoder_resource_and_subresource", OnReal::Fails, IDENTITY_EQUALITY),
    ("kubernetes.aio.dynamic.client_test.TestDynamicClient.test_server_side_apply_api", OnReal::Fails, APPLY_WRONG_TYPE),
    ("kubernetes_asyncio.dynamic.client_test.TestDynamicClient.test_server_side_apply_api", OnReal::Fails, APPLY_WRONG_TYPE),
    ("kubernetes_asyncio.dynamic.client_test.TestDynamicClient.test_node_apis_partial_object_metadata", OnReal::Fails, NO_NODES),
    ("kubernetes.aio.dynamic.client_test.TestDynamicClient.test_cluster_custom_resources", OnReal::Races, CRD_STORAGE_INITIALIZING),
    ("kubernetes.aio.dynamic.client_test.TestDynamicClient.test_namespaced_custom_resources", OnReal::Races, CRD_STILL_DELETING),
    ("kubernetes_asyncio.dynamic.client_test.TestDynamicClient.test_cluster_custom_resources", OnReal::Races, CRD_STILL_DELETING),
    ("kubernetes_asyncio.dynamic.client_test.TestDynamicClient.test_namespaced_custom_resources", OnReal::Races, CRD_STILL_DELETING),
];
const V1BETA1_CRD: &str =
    "creates its CRD through apiextensions.k8s.io/v1beta1, removed in Kubernetes 1.22";
const IDENTITY_EQUALITY: &str = "compares two Resource objects built by separate clients with ==, but kubernetes.dynamic.Resource \
     has identity equality: the objects differ only by identity (checked field by field), on any cluster";
const APPLY_WRONG_TYPE: &str =
    "applies an apps/v1 Deployment body to the pods endpoint: the real apiserver answers 400 \"invalid object type: apps/v1, Kind=Deployment\"";
const NO_NODES: &str = "needs a Node: a control plane without kubelets has none, and its empty PartialObjectMetadataList \
     carries `items: null`, which the client cannot iterate (the sim answers the same with no nodes)";
const CRD_STORAGE_INITIALIZING: &str = "lists a new CRD's objects at once: kube-apiserver 1.35 answered 429 \"storage is (re)initializing\" \
     (the CRD's watch cache was not ready yet) and the test does not retry";
const CRD_STILL_DELETING: &str = "reuses the CRD name the previous test deleted: on kube-apiserver 1.35 that CRD was still being \
     deleted (its objects are removed first), so discovery still had it or the create got 409 AlreadyExists";

fn suite_files(python: &Path) -> Vec<PathBuf> {
    let out = std::process::Command::new(python)
        .args(["-c", "import os, kubernetes, kubernetes_asyncio as a; print(os.path.dirname(kubernetes.__file__)); print(os.path.dirname(a.__file__))"])
        .output()
        .expect("run python");
    assert!(out.status.success(), "the kubernetes and kubernetes_asyncio packages must be installed (ci/requirements.txt): {}", String::from_utf8_lossy(&out.stderr));
    let dirs: Vec<PathBuf> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(PathBuf::from)
        .collect();
    let (k, a) = (&dirs[0], &dirs[1]);
    vec![
        k.join("dynamic/test_client.py"),
        k.join("dynamic/test_discovery.py"),
        k.join("aio/dynamic/client_test.py"),
        k.join("aio/dynamic/discovery_test.py"),
        a.join("dynamic/client_test.py"),
        a.join("dynamic/discovery_test.py"),
    ]
}

/// (test id, outcome) from a JUnit XML report: "passed", "failed", "error" or "skipped".
fn outcomes(junit: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for case in junit.split("<testcase ").skip(1) {
        let case = format!(" {}", case);
        let attr = |name: &str| {
            case.split(&format!(" {}=\"", name))
                .nth(1)
                .and_then(|r| r.split('"').next())
                .unwrap_or("")
                .to_string()
        };
        let head = case.split("</testcase>").next().unwrap_or("");
        let outcome = if head.contains("<failure") {
            "failed"
        } else if head.contains("<error") {
            "error"
        } else if head.contains("<skipped") {
            "skipped"
        } else {
            "passed"
        };
        out.insert(
            format!("{}.{}", attr("classname"), attr("name")),
            outcome.to_string(),
        );
    }
    out
}

/// Runs the packaged suites with pytest against `kubeconfig`, in `dir`: each test's outcome.
async fn run_suites(kubeconfig: &Path, dir: &Path) -> BTreeMap<String, String> {
    let python = python_path();
    let files = suite_files(&python);
    let shim_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../ci/python");
    let junit = dir.join("junit.xml");
    let out = tokio::process::Command::new(&python)
        .args([
            "-m",
            "pytest",
            "-p",
            "e2e_shim",
            "-p",
            "no:cacheprovider",
            "-q",
            "-o",
            "asyncio_mode=auto",
        ])
        .arg(format!("--junitxml={}", junit.display()))
        .args(&files)
        .current_dir(dir)
        .env("KUBECONFIG", kubeconfig)
        .env("PYTHONPATH", &shim_dir)
        .output()
        .await
        .expect("run pytest");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let report = std::fs::read_to_string(&junit).unwrap_or_else(|e| {
        panic!(
            "pytest wrote no report ({e}):\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let results = outcomes(&report);
    assert!(results.len() >= 20, "too few tests collected:\n{stdout}");
    results
}

fn exclusion(id: &str) -> Option<OnReal> {
    EXCLUDED
        .iter()
        .find(|(x, _, _)| id.ends_with(x))
        .map(|(_, on_real, _)| *on_real)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_clients_packaged_live_tests_pass() {
    let c = TestCluster::start(2).await;
    let results = run_suites(&c.kubeconfig, c.dir.path()).await;
    let passed = results.values().filter(|o| *o == "passed").count();
    let unexpected: Vec<_> = results
        .iter()
        .filter(|(id, o)| *o != "passed" && exclusion(id).is_none())
        .collect();
    println!(
        "python packaged live tests: {} passed of {} ({} excluded, see docs/fidelity.md)",
        passed,
        results.len(),
        EXCLUDED.len()
    );
    assert!(unexpected.is_empty(), "failing tests: {unexpected:#?}");
}

/// The same suites once against the real kube-apiserver 1.35 (etcd, kube-apiserver,
/// kube-controller-manager, kube-scheduler from `upstream/`, no kubelets): every exclusion
/// above must fail there too (an exclusion that passes on the real thing is a sim defect
/// hidden), and the pass counts of both sides are printed. `SKIPPED` without the binaries.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_clients_packaged_live_tests_on_the_real_control_plane() {
    let Some(cp) = faultline_upstream::ControlPlane::start_or_skip(
        faultline_upstream::Options::with_controllers(),
    )
    .await
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let results = run_suites(cp.kubeconfig(), dir.path()).await;
    cp.stop().await.expect("stop the control plane");
    let passed = results.values().filter(|o| *o == "passed").count();
    println!(
        "python packaged live tests on kube-apiserver {}: {} passed of {}",
        faultline_upstream::KUBERNETES_VERSION,
        passed,
        results.len()
    );
    for (id, outcome) in &results {
        println!("  real: {outcome:7} {id}");
    }
    // What fails here must be excluded (with this run as its reason); an exclusion that always
    // fails here must not pass (else it hides a sim defect).
    let failing_not_excluded: Vec<_> = results
        .iter()
        .filter(|(id, o)| *o != "passed" && exclusion(id).is_none())
        .collect();
    assert!(
        failing_not_excluded.is_empty(),
        "failing on the real control plane but not excluded: {failing_not_excluded:#?}"
    );
    let excluded_but_passing: Vec<_> = results
        .iter()
        .filter(|(id, o)| exclusion(id) == Some(OnReal::Fails) && *o == "passed")
        .collect();
    assert!(
        excluded_but_passing.is_empty(),
        "excluded as failing on the real control plane, yet passing there: {excluded_but_passing:#?}"
    );
    for (x, _, _) in EXCLUDED {
        assert!(
            results.keys().any(|id| id.ends_with(x)),
            "the exclusion {x} names no test the suites ran"
        );
    }
}

#[test]
fn junit_outcomes_are_read_per_test() {
    let xml = r#"<testsuite><testcase classname="a.B" name="t1" time="0.1"/><testcase classname="a.B" name="t2"><failure message="x">boom</failure></testcase><testcase classname="a.C" name="t3"><skipped/></testcase></testsuite>"#;
    let o = outcomes(xml);
    assert_eq!(o["a.B.t1"], "passed");
    assert_eq!(o["a.B.t2"], "failed");
    assert_eq!(o["a.C.t3"], "skipped");
}
