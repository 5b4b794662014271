//! A harness killed with SIGKILL mid-fault leaves the faults in a cluster that outlives it
//! (here a `faultline sim up` in its own process, driven with `--provider existing`); the fault
//! journal lets `faultline cleanup`, or the next `faultline run`, heal them. All observed the
//! way a user would: through the cluster's API, its control endpoint and the CLI's output.

use k8s_openapi::api::core::v1::{ConfigMap, Node, Pod};
use k8s_openapi::api::storage::v1::CSINode;
use kube::api::{Api, ListParams};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_faultline");
const JOURNALS: &str = "faultline.dev/journal=true";

/// Kills its process when the test ends, however it ends.
struct Proc(Child);
impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

struct Env {
    dir: tempfile::TempDir,
    kubeconfig: PathBuf,
    _sim: Proc,
    client: kube::Client,
}

impl Env {
    async fn start() -> Env {
        let dir = tempfile::tempdir().unwrap();
        let kubeconfig = dir.path().join("kubeconfig");
        let sim = Command::new(BIN)
            .args([
                "sim",
                "up",
                "--nodes",
                "2",
                "--time-scale",
                "0.05",
                "--kubeconfig",
            ])
            .arg(&kubeconfig)
            .stdout(Stdio::null())
            .spawn()
            .expect("spawn faultline sim up");
        let deadline = Instant::now() + Duration::from_secs(30);
        while !kubeconfig.exists() {
            assert!(
                Instant::now() < deadline,
                "faultline sim up wrote no kubeconfig"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        let kc = kube::config::Kubeconfig::read_from(&kubeconfig).unwrap();
        let cfg = kube::Config::from_custom_kubeconfig(kc, &Default::default())
            .await
            .unwrap();
        let client = kube::Client::try_from(cfg).unwrap();
        let suite = dir.path().join("s");
        std::fs::create_dir_all(&suite).unwrap();
        // A "controller" that only lives: it shows whether a killed harness leaves it orphaned.
        std::fs::write(
            suite.join("faultline.yaml"),
            "apiVersion: faultline.dev/v1alpha1\nkind: Suite\nexisting:\n  allowedContexts: [faultline-sim]\n\
             controllers:\n  sleeper:\n    command: [sleep, \"417\"]\n",
        )
        .unwrap();
        std::fs::write(
            suite.join("hold.yaml"),
            "apiVersion: faultline.dev/v1alpha1\nkind: Scenario\nmetadata: {name: hold-faults}\nspec:\n  \
             controller: {ref: sleeper}\n  steps:\n    \
             - fault: {name: plugin-down, csiPluginDown: {node: worker-01}}\n    \
             - fault: {name: cordoned, cordon: {node: worker-02}}\n    \
             - fault: {name: kubelet-stopped, kubeletStop: {node: worker-02}}\n    \
             - name: hold\n      sleep: 120s\n",
        )
        .unwrap();
        std::fs::create_dir_all(dir.path().join("quick")).unwrap();
        std::fs::copy(
            suite.join("faultline.yaml"),
            dir.path().join("quick/faultline.yaml"),
        )
        .unwrap();
        std::fs::write(
            dir.path().join("quick/quick.yaml"),
            "apiVersion: faultline.dev/v1alpha1\nkind: Scenario\nmetadata: {name: quick}\nspec:\n  steps:\n    \
             - name: nap\n      sleep: 100ms\n",
        )
        .unwrap();
        Env {
            dir,
            kubeconfig,
            _sim: Proc(sim),
            client,
        }
    }

    fn path(&self, p: &str) -> PathBuf {
        self.dir.path().join(p)
    }

    fn faultline(&self, args: &[&str]) -> Command {
        let mut c = Command::new(BIN);
        c.args(args)
            .env("KUBECONFIG", &self.kubeconfig)
            .current_dir(self.dir.path());
        c
    }

    fn output(&self, args: &[&str]) -> Output {
        self.faultline(args).output().expect("run faultline")
    }

    async fn journals(&self) -> Vec<ConfigMap> {
        Api::<ConfigMap>::namespaced(self.client.clone(), "kube-system")
            .list(&ListParams::default().labels(JOURNALS))
            .await
            .unwrap()
            .items
    }

    /// How many faults the journals hold.
    async fn journaled(&self) -> usize {
        self.journals()
            .await
            .iter()
            .map(|cm| {
                let v: serde_json::Value =
                    serde_json::from_str(&cm.data.as_ref().unwrap()["journal.json"]).unwrap();
                v["faults"].as_array().unwrap().len()
            })
            .sum()
    }

    async fn unschedulable(&self, node: &str) -> bool {
        let n = Api::<Node>::all(self.client.clone())
            .get(node)
            .await
            .unwrap();
        n.spec.and_then(|s| s.unschedulable).unwrap_or(false)
    }

    async fn kubelet_state(&self, node: &str) -> String {
        let req = http::Request::get(format!("/faultline/v1/nodes/{node}/services/kubelet"))
            .body(vec![])
            .unwrap();
        let v: serde_json::Value =
            serde_json::from_str(&self.client.request_text(req).await.unwrap()).unwrap();
        v["state"].as_str().unwrap_or_default().to_string()
    }

    /// The node's CSI plugin container runs (a crash-looping one stays registered in CSINode, as
    /// on a 1.35 node, so its pod's container status is what shows it down).
    async fn csi_plugin_running(&self, node: &str) -> bool {
        let registered = Api::<CSINode>::all(self.client.clone())
            .get(node)
            .await
            .unwrap()
            .spec
            .drivers
            .iter()
            .any(|d| d.name == "driver.longhorn.io");
        let pods = Api::<Pod>::namespaced(self.client.clone(), "longhorn-system")
            .list(&ListParams::default().fields(&format!("spec.nodeName={node}")))
            .await
            .unwrap();
        let running = pods
            .items
            .iter()
            .filter(|p| {
                p.metadata
                    .name
                    .as_deref()
                    .unwrap_or("")
                    .starts_with("longhorn-csi-plugin-")
            })
            .any(|p| {
                let statuses = p
                    .status
                    .as_ref()
                    .and_then(|s| s.container_statuses.clone())
                    .unwrap_or_default();
                statuses.iter().any(|c| {
                    c.name == "longhorn-csi-plugin"
                        && c.state.as_ref().and_then(|s| s.running.as_ref()).is_some()
                })
            });
        registered && running
    }

    /// Start the holding scenario, wait until its three faults are in, and SIGKILL it.
    /// Returns the pid of the controller it had started.
    async fn run_and_kill(&self) -> u32 {
        let child = self
            .faultline(&["run", "s", "--provider", "existing"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut run = Proc(child);
        let deadline = Instant::now() + Duration::from_secs(60);
        while self.journaled().await < 3 || self.kubelet_state("worker-02").await != "Stopped" {
            assert!(
                Instant::now() < deadline,
                "the run never had its three faults in"
            );
            assert!(
                run.0.try_wait().unwrap().is_none(),
                "the run ended before it was killed"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let controller = children(run.0.id())
            .into_iter()
            .find(|&p| cmdline(p) == "sleep\x00417\x00")
            .expect("the run's controller process");
        // While the run lives, cleanup leaves its journal alone.
        let out = self.output(&["cleanup", "s"]);
        assert!(out.status.success(), "{}", text(&out));
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("left alone, its run is alive"),
            "{}",
            text(&out)
        );
        assert!(self.unschedulable("worker-02").await);
        unsafe { libc::kill(run.0.id() as i32, libc::SIGKILL) };
        let _ = run.0.wait();
        controller
    }

    async fn assert_faults_left(&self) {
        assert_eq!(self.journaled().await, 3, "the journal outlives the run");
        assert!(self.unschedulable("worker-02").await, "still cordoned");
        assert_eq!(self.kubelet_state("worker-02").await, "Stopped");
        assert!(
            !self.csi_plugin_running("worker-01").await,
            "the plugin is still down"
        );
    }

    async fn assert_restored(&self) {
        assert!(
            self.journals().await.is_empty(),
            "journals are deleted once healed"
        );
        assert!(!self.unschedulable("worker-02").await, "uncordoned");
        assert_ne!(
            self.kubelet_state("worker-02").await,
            "Stopped",
            "the kubelet was started"
        );
        // The kubelet takes a moment to come up, the plugin restarts after its crash-loop
        // back-off (both scaled): give them time.
        let deadline = Instant::now() + Duration::from_secs(30);
        while self.kubelet_state("worker-02").await != "Running"
            || !self.csi_plugin_running("worker-01").await
        {
            assert!(Instant::now() < deadline, "the kubelet of worker-02 never ran again, or the CSI driver never re-registered on worker-01");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

fn text(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn children(pid: u32) -> Vec<u32> {
    let mut out = vec![];
    for t in std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .flatten()
    {
        let c = std::fs::read_to_string(t.path().join("children")).unwrap_or_default();
        out.extend(c.split_whitespace().filter_map(|p| p.parse::<u32>().ok()));
    }
    out
}

fn cmdline(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/cmdline")).unwrap_or_default()
}

/// Gone, or a zombie nobody has reaped yet.
fn process_gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(s) => s
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

async fn wait_gone(pid: u32) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !process_gone(pid) {
        assert!(
            Instant::now() < deadline,
            "the controller (pid {pid}) outlived the killed harness"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faultline_cleanup_heals_what_a_sigkilled_run_left() {
    let env = Env::start().await;
    let controller = env.run_and_kill().await;
    wait_gone(controller).await;
    env.assert_faults_left().await;

    let out = env.output(&["cleanup", "s"]);
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    assert!(
        all.contains("scenario hold-faults") && all.contains("is gone"),
        "{all}"
    );
    for f in [
        "healed kubelet-stopped (kubeletStop{node: worker-02})",
        "healed cordoned (cordon{node: worker-02})",
        "healed plugin-down (csiPluginDown{node: worker-01})",
    ] {
        assert!(all.contains(f), "missing {f:?}: {all}");
    }
    // Newest first, the reverse of injection.
    assert!(
        all.find("kubelet-stopped").unwrap() < all.find("plugin-down").unwrap(),
        "{all}"
    );
    env.assert_restored().await;

    let again = env.output(&["cleanup", "s"]);
    assert!(
        again.status.success()
            && String::from_utf8_lossy(&again.stdout).contains("nothing to heal"),
        "{}",
        text(&again)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_next_run_heals_first_and_then_runs() {
    let env = Env::start().await;
    env.run_and_kill().await;
    env.assert_faults_left().await;
    let out = env.output(&[
        "run",
        "quick",
        "--provider",
        "existing",
        "--json",
        env.path("report.json").to_str().unwrap(),
    ]);
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    assert!(
        all.contains("faults left by an interrupted run") && all.contains("healed cordoned"),
        "{all}"
    );
    env.assert_restored().await;
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(env.path("report.json")).unwrap()).unwrap();
    assert_eq!(report["summary"]["passed"], 1, "{report}");
}

#[test]
fn cleanup_refuses_a_context_outside_the_allow_list() {
    let dir = tempfile::tempdir().unwrap();
    let kc = dir.path().join("kubeconfig");
    std::fs::write(&kc, "apiVersion: v1\nkind: Config\nclusters: []\ncontexts:\n- name: prod\n  context: {cluster: prod, user: prod}\ncurrent-context: prod\nusers: []\n").unwrap();
    std::fs::write(dir.path().join("faultline.yaml"), "apiVersion: faultline.dev/v1alpha1\nkind: Suite\nexisting:\n  allowedContexts: [staging]\n").unwrap();
    let out = Command::new(BIN)
        .args(["cleanup", "."])
        .env("KUBECONFIG", &kc)
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("context `prod` is not in the suite's existing.allowedContexts (staging)"),
        "{err}"
    );
}
