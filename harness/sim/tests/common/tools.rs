//! Locating the real client programs the tests drive (kubectl 1.37 and Python's `kubernetes`).
//! `.ci/run` installs both into `.venv`; a missing tool fails the test with instructions rather
//! than skipping it, so CI can never pass without exercising them.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Output;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn locate(env: &str, venv_name: &str) -> PathBuf {
    if let Ok(p) = std::env::var(env) {
        return PathBuf::from(p);
    }
    let venv = repo_root().join(".venv/bin").join(venv_name);
    if venv.exists() {
        return venv;
    }
    panic!("{venv_name} not found: set {env} or run `bash .ci/run` once to install the test clients into .venv");
}

pub fn kubectl_path() -> PathBuf {
    let p = locate("FAULTLINE_KUBECTL", "kubectl");
    let out = std::process::Command::new(&p)
        .args(["version", "--client", "-o", "json"])
        .output()
        .expect("run kubectl version");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("kubectl version json");
    let minor: u32 = v["clientVersion"]["minor"]
        .as_str()
        .unwrap_or("0")
        .trim_end_matches('+')
        .parse()
        .unwrap_or(0);
    assert!(
        minor >= 37,
        "kubectl 1.37+ required, {} is {:?}",
        p.display(),
        v["clientVersion"]["gitVersion"]
    );
    p
}

/// Debian's kubectl 1.20 (`kubernetes-client`), which reads `/openapi/v2` as gnostic protobuf for
/// `explain` and client-side validation. `.ci/run` unpacks it into `.venv/kubectl-1.20`.
pub fn kubectl_120_path() -> PathBuf {
    let p = match std::env::var("FAULTLINE_KUBECTL_120") {
        Ok(p) => PathBuf::from(p),
        Err(_) => repo_root().join(".venv/kubectl-1.20/usr/bin/kubectl"),
    };
    assert!(
        p.exists(),
        "kubectl 1.20 not found at {}: set FAULTLINE_KUBECTL_120 or run `bash .ci/run` (it unpacks Debian's kubernetes-client)",
        p.display()
    );
    p
}

/// Run kubectl 1.20 against a kubeconfig.
pub async fn kubectl_120(kubeconfig: &Path, args: &[&str]) -> Output {
    tokio::process::Command::new(kubectl_120_path())
        .args(args)
        .env("KUBECONFIG", kubeconfig)
        .output()
        .await
        .expect("spawn kubectl 1.20")
}

pub fn python_path() -> PathBuf {
    locate("FAULTLINE_PYTHON", "python")
}

/// Run kubectl against a kubeconfig and return its output.
pub async fn kubectl(kubeconfig: &Path, args: &[&str]) -> Output {
    let out = tokio::process::Command::new(kubectl_path())
        .args(args)
        .env("KUBECONFIG", kubeconfig)
        .output()
        .await
        .expect("spawn kubectl");
    out
}

/// Run kubectl and require success; returns stdout.
pub async fn kubectl_ok(kubeconfig: &Path, args: &[&str]) -> String {
    let out = kubectl(kubeconfig, args).await;
    assert!(
        out.status.success(),
        "kubectl {:?} failed ({}):\nstdout: {}\nstderr: {}",
        args,
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}
