//! The end-to-end test's work directory outlives a failure (the failure message points into
//! it); a passing test leaves nothing.

mod common;

#[test]
fn a_failing_test_keeps_its_work_directory_and_a_passing_one_removes_it() {
    let failed = std::panic::catch_unwind(|| {
        let dir = common::EvidenceDir::new("evidence-check");
        std::fs::write(dir.path().join("kubelet.log"), "evidence").unwrap();
        let path = dir.path().to_path_buf();
        std::panic::panic_any(path);
    })
    .unwrap_err();
    let path = failed.downcast_ref::<std::path::PathBuf>().unwrap().clone();
    assert_eq!(
        std::fs::read_to_string(path.join("kubelet.log")).unwrap(),
        "evidence"
    );
    std::fs::remove_dir_all(&path).unwrap();

    let dir = common::EvidenceDir::new("evidence-check");
    let path = dir.path().to_path_buf();
    drop(dir);
    assert!(!path.exists());
}
