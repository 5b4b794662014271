//! The official Python `kubernetes` client against the simulated API server (a second real
//! client, with its own HTTP stack and watch decoder).

mod common;

use common::tools::python_path;
use common::TestCluster;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_client_list_watch_and_errors() {
    let c = TestCluster::start(2).await;
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/client_checks.py");
    let out = tokio::process::Command::new(python_path())
        .arg(&script)
        .env("KUBECONFIG", &c.kubeconfig)
        .output()
        .await
        .expect("run python");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "python checks failed:\n{stdout}\n{stderr}"
    );
    assert_eq!(
        stdout.lines().filter(|l| l.starts_with("ok: ")).count(),
        6,
        "{stdout}"
    );
}
