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

/// Tests that fail against a real 1.35 cluster too, or need what the sim does not model.
const EXCLUDED: &[(&str, &str)] = &[
    ("kubernetes.dynamic.test_client.TestDynamicClient.test_cluster_custom_resources", V1BETA1_CRD),
    ("kubernetes.dynamic.test_client.TestDynamicClient.test_namespaced_custom_resources", V1BETA1_CRD),
    ("kubernetes.dynamic.test_client.TestDynamicClient.test_async_namespaced_custom_resources", V1BETA1_CRD),
    ("kubernetes.dynamic.test_discovery.TestDiscoverer.test_cache_decoder_resource_and_subresource", IDENTITY_EQUALITY),
    ("kubernetes.aio.dynamic.client_test.TestDynamicClient.test_server_side_apply_api", APPLY_WRONG_VERSION),
    ("kubernetes_asyncio.dynamic.client_test.TestDynamicClient.test_server_side_apply_api", APPLY_WRONG_VERSION),
];
const V1BETA1_CRD: &str =
    "creates its CRD through apiextensions.k8s.io/v1beta1, removed in Kubernetes 1.22";
const IDENTITY_EQUALITY: &str = "compares two Resource objects built by separate clients with ==, but kubernetes.dynamic.Resource \
     has identity equality: the objects differ only by identity (checked field by field), on any cluster";
const APPLY_WRONG_VERSION: &str =
    "applies an apps/v1 Deployment body to the pods endpoint: a real apiserver answers 400 \"invalid object type: apps/v1, Kind=Deployment\"";

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_clients_packaged_live_tests_pass() {
    let c = TestCluster::start(2).await;
    let python = python_path();
    let files = suite_files(&python);
    let shim_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../ci/python");
    let junit = c.dir.path().join("junit.xml");
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
        .current_dir(c.dir.path())
        .env("KUBECONFIG", &c.kubeconfig)
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
    let excluded = |id: &str| EXCLUDED.iter().any(|(x, _)| id.ends_with(x));
    let passed = results.values().filter(|o| *o == "passed").count();
    let unexpected: Vec<_> = results
        .iter()
        .filter(|(id, o)| *o != "passed" && !excluded(id))
        .collect();
    println!(
        "python packaged live tests: {} passed of {} ({} excluded, see docs/fidelity.md)",
        passed,
        results.len(),
        EXCLUDED.len()
    );
    assert!(results.len() >= 20, "too few tests collected:\n{stdout}");
    assert!(
        unexpected.is_empty(),
        "failing tests: {unexpected:#?}\n{stdout}"
    );
}

#[test]
fn junit_outcomes_are_read_per_test() {
    let xml = r#"<testsuite><testcase classname="a.B" name="t1" time="0.1"/><testcase classname="a.B" name="t2"><failure message="x">boom</failure></testcase><testcase classname="a.C" name="t3"><skipped/></testcase></testsuite>"#;
    let o = outcomes(xml);
    assert_eq!(o["a.B.t1"], "passed");
    assert_eq!(o["a.B.t2"], "failed");
    assert_eq!(o["a.C.t3"], "skipped");
}
