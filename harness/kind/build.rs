// `FAULTLINE_KIND=1` at build time un-ignores the end-to-end test (tests/kind_e2e.rs); it
// still checks for a Docker engine at run time and skips with a reason when there is none.
fn main() {
    println!("cargo::rustc-check-cfg=cfg(faultline_kind_e2e)");
    println!("cargo::rerun-if-env-changed=FAULTLINE_KIND");
    if std::env::var("FAULTLINE_KIND").as_deref() == Ok("1") {
        println!("cargo::rustc-cfg=faultline_kind_e2e");
    }
}
