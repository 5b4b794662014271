//! `faultline sim up` and `faultline node ...` as a person uses them, as separate processes.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_faultline");

struct Sim(Child);
impl Drop for Sim {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start(kubeconfig: &Path) -> Sim {
    let child = Command::new(BIN)
        .args([
            "sim",
            "up",
            "--nodes",
            "2",
            "--time-scale",
            "0.01",
            "--kubeconfig",
        ])
        .arg(kubeconfig)
        .stdout(Stdio::null())
        .spawn()
        .expect("spawn faultline sim up");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !kubeconfig.exists() {
        assert!(Instant::now() < deadline, "no kubeconfig written");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    Sim(child)
}

fn node(kubeconfig: &Path, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(BIN)
        .arg("node")
        .args(args)
        .env("KUBECONFIG", kubeconfig)
        .output()
        .expect("run faultline node");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn node_logs_mounts_service_and_reboot_through_the_control_endpoint() {
    let dir = tempfile::tempdir().unwrap();
    let kc = dir.path().join("kubeconfig");
    let _sim = start(&kc);
    let (ok, out, err) = node(
        &kc,
        &[
            "worker-02",
            "op",
            r#"{"op":"staleDeviceMount","pv":"pvc-81b676e6","deletedPv":true}"#,
        ],
    );
    assert!(ok, "{err}");
    assert!(out.contains("stale device mount of pvc-81b676e6"), "{out}");
    let (ok, mounts, _) = node(&kc, &["worker-02", "mounts"]);
    assert!(
        ok && mounts
            .lines()
            .any(|l| l.contains("pvc-81b676e6") && l.contains("/globalmount")),
        "{mounts}"
    );
    std::thread::sleep(Duration::from_millis(300));
    let (ok, logs, _) = node(&kc, &["worker-02", "logs", "kubelet"]);
    assert!(ok);
    assert!(
        logs.lines()
            .any(|l| l.contains("nestedpendingoperations.go")
                && l.contains("GetDeviceMountRefs check failed")),
        "{logs}"
    );
    assert!(
        logs.lines()
            .all(|l| l.starts_with('I') || l.starts_with('E') || l.starts_with('W')),
        "klog format"
    );
    let (ok, out, _) = node(&kc, &["worker-02", "service", "kubelet", "restart"]);
    assert!(ok && out.contains("restarting"), "{out}");
    std::thread::sleep(Duration::from_millis(500));
    let (_, mounts, _) = node(&kc, &["worker-02", "mounts"]);
    assert!(
        !mounts.contains("pvc-81b676e6"),
        "kubelet restart cleans its own stale mount: {mounts}"
    );
    let (ok, out, _) = node(&kc, &["worker-02", "service", "kubelet", "status"]);
    assert!(ok && out.trim() == "kubelet: Running", "{out}");
    let (ok, out, _) = node(&kc, &["worker-01", "reboot"]);
    assert!(ok && out.contains("worker-01 rebooting"), "{out}");
    let (ok, out, _) = node(&kc, &["worker-01", "power-cycle"]);
    assert!(ok && out.contains("power cycled"), "{out}");
    let (ok, out, _) = node(&kc, &["worker-01", "power-off"]);
    assert!(ok && out.contains("worker-01 powered off"), "{out}");
    let (ok, out, _) = node(&kc, &["worker-01", "service", "kubelet", "status"]);
    assert!(ok && out.trim() == "kubelet: Powered off", "{out}");
    // A node that is off refuses what needs it running.
    let (ok, _, err) = node(&kc, &["worker-01", "reboot"]);
    assert!(!ok && err.contains("powered off"), "{err}");
    let (ok, out, _) = node(&kc, &["worker-01", "power-on"]);
    assert!(ok && out.contains("worker-01 powered on"), "{out}");
    let (ok, csi, _) = node(&kc, &["worker-02", "logs", "csi-plugin", "--tail", "1"]);
    assert!(ok && csi.lines().count() == 1, "{csi}");
    let (ok, _, err) = node(&kc, &["worker-99", "mounts"]);
    assert!(
        !ok && err.contains("nodes \"worker-99\" not found"),
        "{err}"
    );
    let (ok, _, err) = node(&kc, &["worker-01", "service", "containerd", "restart"]);
    assert!(!ok && err.contains("unknown service"), "{err}");
}
