//! Self-test of the judge: two independent sims answer the whole corpus identically once
//! normalised. A difference here is either nondeterminism in the sim or the corpus, or a value
//! that legitimately differs between runs and that no normalisation rule covers yet.

use faultline_differential::{corpus, judge, target::Target};
use faultline_sim::server::{SimOptions, SimServer};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_vs_sim_is_identical() {
    let dir = tempfile::tempdir().unwrap();
    let a = SimServer::start(SimOptions::with_workers(0)).await.unwrap();
    let b = SimServer::start(SimOptions::with_workers(0)).await.unwrap();
    let ka = a.write_kubeconfig(&dir.path().join("a")).unwrap();
    let kb = b.write_kubeconfig(&dir.path().join("b")).unwrap();
    let left = Target::from_kubeconfig("sim-a", &ka).await.unwrap();
    let right = Target::from_kubeconfig("sim-b", &kb).await.unwrap();
    let scripts =
        corpus::load(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus")).unwrap();
    let opts = judge::Options {
        prefix: "self".into(),
        old_rv: "1".into(),
        filter: None,
    };
    let report = judge::judge(&left, &right, &scripts, &opts).await.unwrap();
    let mut out = Vec::new();
    report.print(10, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(
        report.total >= 600,
        "the corpus has {} exchanges",
        report.total
    );
    assert_eq!(report.identical, report.total, "{text}");
}
