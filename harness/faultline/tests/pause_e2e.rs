//! `--pause-on-failure` and `--pause-at` through the built binary on the in-process sim, driven
//! the way a person would from another terminal: stdin is a pipe (no TTY), the printed
//! `export KUBECONFIG=...` is used with the real kubectl 1.37 and `faultline node`, and the
//! fault is healed only after the run continues (Enter, or Ctrl-C).

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_faultline");

fn kubectl() -> PathBuf {
    if let Ok(p) = std::env::var("FAULTLINE_KUBECTL") {
        return p.into();
    }
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.venv/bin/kubectl");
    assert!(venv.exists(), "kubectl not found: set FAULTLINE_KUBECTL or run `bash .ci/run` once to install it into .venv");
    venv
}

/// A pod bound to worker-01, whose kubelet hangs: it stays Pending. At 1/20, as the pack runs:
/// a hung kubelet still renews its Lease, every 0.5 s.
fn fixture(timeout: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("faultline.yaml"),
        "apiVersion: faultline.dev/v1alpha1\nkind: Suite\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("pod.yaml"), "apiVersion: v1\nkind: Pod\nmetadata: {name: stuck, namespace: default}\nspec:\n  nodeName: worker-01\n  containers: [{name: app, image: busybox}]\n").unwrap();
    std::fs::write(dir.path().join("s.yaml"), format!(
        "apiVersion: faultline.dev/v1alpha1\nkind: Scenario\nmetadata: {{name: stuck-pod}}\nspec:\n  timeout: {timeout}\n  cluster:\n    nodes: [{{name: control-plane, role: control-plane}}, {{name: worker-01}}]\n    storage: none\n    sim: {{timeScale: 0.05}}\n  steps:\n    - fault: {{name: hang, kubeletHang: {{node: worker-01}}}}\n    - apply: pod.yaml\n    - expect: {{name: pod-running, within: 1s, resource: {{apiVersion: v1, kind: Pod, namespace: default, name: stuck, condition: \"has(object.status.phase) && object.status.phase == 'Running'\"}}}}\n")).unwrap();
    dir
}

struct Run {
    child: Child,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Run {
    fn start(dir: &Path, args: &[&str]) -> Run {
        let mut child = Command::new(BIN)
            .args(args)
            .current_dir(dir)
            .env_remove("GITHUB_STEP_SUMMARY")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let out = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for l in BufReader::new(out).lines().map_while(Result::ok) {
                let _ = tx.send(l);
            }
        });
        Run {
            child,
            lines,
            seen: vec![],
        }
    }
    /// Lines until one contains `needle`.
    fn until(&mut self, needle: &str) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(l) => {
                    let hit = l.contains(needle);
                    self.seen.push(l);
                    if hit {
                        return;
                    }
                }
                Err(_) => panic!(
                    "no line with {needle:?} within 60s; output so far:\n{}",
                    self.seen.join("\n")
                ),
            }
        }
    }
    fn kubeconfig(&self) -> PathBuf {
        let l = self
            .seen
            .iter()
            .find_map(|l| l.trim().strip_prefix("export KUBECONFIG="))
            .expect("an export KUBECONFIG line");
        PathBuf::from(l)
    }
    fn finish(mut self) -> (i32, String) {
        let deadline = Instant::now() + Duration::from_secs(60);
        let code = loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                break st.code().unwrap_or(-1);
            }
            assert!(
                Instant::now() < deadline,
                "faultline did not finish after continuing"
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        while let Ok(l) = self.lines.recv_timeout(Duration::from_secs(2)) {
            self.seen.push(l);
        }
        (code, self.seen.join("\n"))
    }
}

fn kubectl_json(kubeconfig: &Path, args: &[&str]) -> serde_json::Value {
    let out = Command::new(kubectl())
        .args(args)
        .args(["-o", "json"])
        .env("KUBECONFIG", kubeconfig)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "kubectl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn report(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("r.json")).unwrap()).unwrap()
}

/// The timeline's texts, in order, and the position of the first one containing each needle.
fn positions(r: &serde_json::Value, needles: &[&str]) -> Vec<usize> {
    let texts: Vec<&str> = r["scenarios"][0]["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    needles
        .iter()
        .map(|n| {
            texts
                .iter()
                .position(|t| t.contains(n))
                .unwrap_or_else(|| panic!("no {n:?} in {texts:#?}"))
        })
        .collect()
}

#[test]
fn pause_on_failure_holds_the_incident_until_enter() {
    let dir = fixture("2m");
    let mut run = Run::start(
        dir.path(),
        &["run", "s.yaml", "--pause-on-failure", "--json", "r.json"],
    );
    run.until("press Enter");
    let all = run.seen.join("\n");
    assert!(
        all.contains("PAUSED scenario `stuck-pod`: expectation `pod-running` failed"),
        "{all}"
    );
    assert!(
        all.contains("hang: kubeletHang{node: worker-01}"),
        "the active fault is listed: {all}"
    );
    assert!(
        all.contains(&format!("{BIN} node worker-01 logs kubelet")),
        "{all}"
    );
    // The banner leads with the timeline, the failed expectation last, and says the sim is frozen.
    let timeline = all.find("  timeline:").expect("the timeline in the banner");
    assert!(
        timeline < all.find("  kubeconfig:").unwrap()
            && all.contains("expect pod-running")
            && all.contains("[FAIL]")
            && all.contains("the cluster is frozen: its clock stands at "),
        "{all}"
    );
    let kc = run.kubeconfig();
    // While paused: the cluster serves, the pod is stuck, the fault is active.
    let pod = kubectl_json(&kc, &["get", "pod", "stuck", "-n", "default"]);
    assert_eq!(pod["spec"]["nodeName"], "worker-01");
    assert_ne!(pod["status"]["phase"], "Running", "{pod}");
    // Frozen: two seconds later no loop has written (no Lease renewal, which a hung kubelet
    // still does every 0.5 s here, no status, no Event).
    let leases = kubectl_json(&kc, &["get", "leases", "-n", "kube-node-lease"]);
    std::thread::sleep(Duration::from_millis(2500));
    let again = kubectl_json(&kc, &["get", "pod", "stuck", "-n", "default"]);
    assert_eq!(
        again["metadata"]["resourceVersion"], pod["metadata"]["resourceVersion"],
        "the failing pod as it was"
    );
    assert_eq!(again["status"], pod["status"]);
    let leases_again = kubectl_json(&kc, &["get", "leases", "-n", "kube-node-lease"]);
    assert_eq!(
        leases_again["items"], leases["items"],
        "no Lease renewed while frozen"
    );
    let node = Command::new(BIN)
        .args(["node", "worker-01", "service", "kubelet", "status"])
        .env("KUBECONFIG", &kc)
        .output()
        .unwrap();
    assert!(
        node.status.success(),
        "the printed `faultline node` command works: {}",
        String::from_utf8_lossy(&node.stderr)
    );
    // Still paused a moment later: nothing healed, nothing torn down.
    std::thread::sleep(Duration::from_millis(1500));
    assert!(run.child.try_wait().unwrap().is_none(), "still paused");
    assert!(std::fs::metadata(dir.path().join("r.json")).is_err());
    kubectl_json(&kc, &["get", "pod", "stuck", "-n", "default"]);
    run.child.stdin.as_mut().unwrap().write_all(b"\n").unwrap();
    let (code, out) = run.finish();
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("faultline: Enter: continuing scenario `stuck-pod`"),
        "{out}"
    );
    let r = report(dir.path());
    assert_eq!(r["scenarios"][0]["faults"][0]["healedBy"], "cleanup");
    let p = positions(
        &r,
        &[
            "paused: expectation `pod-running` failed",
            "resumed",
            "fault hang healed",
        ],
    );
    assert!(
        p[0] < p[1] && p[1] < p[2],
        "paused, then resumed, then healed: {p:?}"
    );
    // Torn down after continuing: the API server is gone.
    let gone = Command::new(kubectl())
        .args(["get", "pods", "--request-timeout=3s"])
        .env("KUBECONFIG", &kc)
        .output()
        .unwrap();
    assert!(!gone.status.success());
}

#[test]
fn pause_at_a_step_and_ctrl_c_continues_without_the_timeout_counting() {
    // Scenario timeout 4s; the pause lasts longer, and must not count against it.
    let dir = fixture("4s");
    let mut run = Run::start(
        dir.path(),
        &[
            "run",
            "s.yaml",
            "--pause-at",
            "pod-running",
            "--json",
            "r.json",
        ],
    );
    run.until("press Enter");
    let all = run.seen.join("\n");
    assert!(
        all.contains("PAUSED scenario `stuck-pod`: before step `pod-running`"),
        "{all}"
    );
    let pod = kubectl_json(&run.kubeconfig(), &["get", "pod", "stuck", "-n", "default"]);
    assert_ne!(pod["status"]["phase"], "Running");
    std::thread::sleep(Duration::from_secs(5));
    // SAFETY: signalling the child we spawned.
    unsafe { libc::kill(run.child.id() as i32, libc::SIGINT) };
    let (code, out) = run.finish();
    assert_eq!(
        code, 1,
        "Ctrl-C while paused continues the run (not 130): {out}"
    );
    assert!(out.contains("faultline: Ctrl-C: continuing"), "{out}");
    let r = report(dir.path());
    let reason = r["scenarios"][0]["reason"].as_str().unwrap();
    assert!(
        reason.contains("expectation `pod-running` failed"),
        "the expectation ran after the pause, no timeout: {reason}"
    );
    assert!(r.get("interruptedBy").is_none());
    let p = positions(
        &r,
        &[
            "paused: before step `pod-running`",
            "resumed",
            "expect pod-running",
            "fault hang healed",
        ],
    );
    assert!(p.windows(2).all(|w| w[0] < w[1]), "{p:?}");
}

#[test]
fn pause_at_an_unknown_step_is_refused() {
    let dir = fixture("1m");
    let out = Command::new(BIN)
        .args(["run", "s.yaml", "--pause-at", "nope"])
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(e.contains("--pause-at nope: no selected scenario has a step `nope`; steps: apply-2, hang, pod-running"), "{e}");
}
