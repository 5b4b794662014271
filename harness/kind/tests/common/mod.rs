//! Shared by the kind test binaries: the Docker-engine tier's environment, and an evidence
//! directory that survives a failing test.
#![allow(dead_code)]

use faultline_kind::exec::docker::TestcontainersExecutor;
use faultline_kind::exec::{Executor, Output, Owned};
use faultline_kind::plan::container::{MountKind, NodeContainerSpec};
use faultline_kind::plan::DockerOp;
use faultline_kind::{ClusterPlanInput, KindCluster, KindOptions, KindProvider, NodeInput};
use futures::future::BoxFuture;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::sync::mpsc;

pub const CONTROL_PLANE: &str = "control-plane";
pub const WORKER: &str = "worker-01";

/// A work directory removed when the test passes and kept (its path printed) when it fails,
/// so the logs a failure message points to still exist.
pub struct EvidenceDir {
    dir: Option<tempfile::TempDir>,
    path: PathBuf,
}

impl EvidenceDir {
    pub fn new(label: &str) -> EvidenceDir {
        let dir = tempfile::Builder::new()
            .prefix(&format!("faultline-{label}-"))
            .tempdir()
            .expect("temp dir");
        let path = dir.path().to_path_buf();
        EvidenceDir {
            dir: Some(dir),
            path,
        }
    }
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for EvidenceDir {
    fn drop(&mut self) {
        if std::thread::panicking() {
            if let Some(d) = self.dir.take() {
                let kept = d.keep();
                eprintln!(
                    "test failed: its work directory (kubeconfig, kind-logs) is kept at {}",
                    kept.display()
                );
            }
        }
    }
}

/// The tier's settings; None (after saying so) unless FAULTLINE_DOCKER=1.
pub struct TierEnv {
    pub label: String,
    pub work: EvidenceDir,
    pub state: tempfile::TempDir,
}

impl TierEnv {
    pub fn new(label: &str) -> Option<TierEnv> {
        if std::env::var("FAULTLINE_DOCKER").as_deref() != Ok("1") {
            println!("SKIPPED: set FAULTLINE_DOCKER=1 (ci/docker-tier.sh does) to run the Docker-engine tier");
            return None;
        }
        assert!(
            std::env::var("FAULTLINE_KIND_NODE_IMAGE").is_ok_and(|i| !i.is_empty()),
            "FAULTLINE_KIND_NODE_IMAGE: the stand-in node image (ci/node-image/build.sh prints it)"
        );
        Some(TierEnv {
            label: label.into(),
            work: EvidenceDir::new(&format!("tier-{label}")),
            state: tempfile::tempdir().unwrap(),
        })
    }

    pub fn options(&self, reuse: bool) -> KindOptions {
        KindOptions {
            reuse,
            nodes_only: true,
            state_dir: Some(self.state.path().to_path_buf()),
        }
    }

    pub fn provider(&self, reuse: bool) -> KindProvider {
        KindProvider::new(self.options(reuse))
    }

    /// A control plane and a worker; the node image from FAULTLINE_KIND_NODE_IMAGE.
    pub fn input(&self, longhorn: bool) -> ClusterPlanInput {
        ClusterPlanInput::new(
            &format!("fl-tier-{}", self.label),
            vec![
                NodeInput::control_plane(CONTROL_PLANE),
                NodeInput::worker(WORKER),
            ],
        )
        .with_longhorn(longhorn)
        .with_env_from(|k| std::env::var(k).ok())
    }

    /// No container, network or volume whose name has this cluster's prefix, and no journal.
    pub fn assert_nothing_left(&self, cluster: &str) {
        let left = [
            docker(&[
                "ps",
                "-a",
                "--format",
                "{{.Names}}",
                "--filter",
                &format!("name={cluster}"),
            ]),
            docker(&[
                "network",
                "ls",
                "--format",
                "{{.Name}}",
                "--filter",
                &format!("name=faultline-{cluster}"),
            ]),
            docker(&[
                "volume",
                "ls",
                "--format",
                "{{.Name}}",
                "--filter",
                &format!("name={cluster}"),
            ]),
        ]
        .join("");
        assert!(left.trim().is_empty(), "left in the engine:\n{left}");
        let journals: Vec<_> = std::fs::read_dir(self.state.path())
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.to_string_lossy().contains(cluster))
            .collect();
        assert!(journals.is_empty(), "journals left: {journals:?}");
    }
}

impl Drop for TierEnv {
    /// A failed test still leaves the engine clean for the rest of CI: whatever carries this
    /// test's cluster name prefix goes (a passing test has already checked there is nothing).
    fn drop(&mut self) {
        let prefix = format!("fl-tier-{}-", self.label);
        let ids = |args: &[&str]| {
            docker(args)
                .split_whitespace()
                .map(str::to_string)
                .collect::<Vec<_>>()
        };
        let containers = ids(&["ps", "-aq", "--filter", &format!("name={prefix}")]);
        if !containers.is_empty() {
            let mut a = vec!["rm", "-f"];
            a.extend(containers.iter().map(String::as_str));
            docker(&a);
        }
        for (kind, filter) in [
            ("network", format!("name=faultline-{prefix}")),
            ("volume", format!("name={prefix}")),
        ] {
            let found = ids(&[kind, "ls", "-q", "--filter", &filter]);
            if !found.is_empty() {
                let mut a = vec![kind, "rm"];
                a.extend(found.iter().map(String::as_str));
                docker(&a);
            }
        }
    }
}

/// The docker CLI, to observe the engine independently of the code under test.
pub fn docker(args: &[&str]) -> String {
    let out = std::process::Command::new("docker")
        .args(args)
        .output()
        .expect("docker CLI");
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

/// `sh -c` on a node; its stdout (a failed command fails the test).
pub async fn sh(c: &KindCluster, node: &str, script: &str) -> String {
    let out = c
        .node_shell(node, script)
        .await
        .unwrap_or_else(|e| panic!("{node}: {script}: {e:#}"));
    assert!(
        out.success(),
        "{node}: {script}: exit {}: {}{}",
        out.code,
        out.stdout,
        out.stderr
    );
    out.stdout
}

/// A change to a node container spec before it starts, or a refusal.
pub type SpecHook =
    Box<dyn Fn(&NodeContainerSpec) -> anyhow::Result<NodeContainerSpec> + Send + Sync>;

/// The real executor with one change to a node container spec, or one refusal, before start.
pub struct Hooked {
    pub inner: TestcontainersExecutor,
    pub hook: SpecHook,
}

impl Hooked {
    pub fn refusing(node: &'static str) -> anyhow::Result<Arc<dyn Executor>> {
        Ok(Arc::new(Hooked {
            inner: TestcontainersExecutor::connect()?,
            hook: Box::new(move |s| {
                if s.node == node {
                    anyhow::bail!("node {node} refused by this test")
                } else {
                    Ok(s.clone())
                }
            }),
        }))
    }
    pub fn modules_from(source: String) -> anyhow::Result<Arc<dyn Executor>> {
        Ok(Arc::new(Hooked {
            inner: TestcontainersExecutor::connect()?,
            hook: Box::new(move |s| {
                let mut s = s.clone();
                for m in &mut s.mounts {
                    if m.kind == MountKind::Bind && m.target == "/lib/modules" {
                        m.source = source.clone();
                    }
                }
                Ok(s)
            }),
        }))
    }
}

impl Executor for Hooked {
    fn run_container<'a>(
        &'a self,
        spec: &'a NodeContainerSpec,
    ) -> BoxFuture<'a, anyhow::Result<()>> {
        Box::pin(async move {
            let spec = (self.hook)(spec)?;
            self.inner.run_container(&spec).await
        })
    }
    fn exec<'a>(
        &'a self,
        c: &'a str,
        argv: &'a [String],
        stdin: Option<&'a str>,
    ) -> BoxFuture<'a, anyhow::Result<Output>> {
        self.inner.exec(c, argv, stdin)
    }
    fn docker<'a>(&'a self, op: &'a DockerOp) -> BoxFuture<'a, anyhow::Result<Output>> {
        Box::pin(async move {
            match op {
                DockerOp::Run { spec } => self.run_container(spec).await.map(|_| Output::ok("")),
                _ => self.inner.docker(op).await,
            }
        })
    }
    fn api_server_url<'a>(&'a self, c: &'a str) -> BoxFuture<'a, anyhow::Result<String>> {
        self.inner.api_server_url(c)
    }
    fn follow<'a>(
        &'a self,
        c: &'a str,
        argv: &'a [String],
    ) -> BoxFuture<'a, anyhow::Result<mpsc::Receiver<String>>> {
        self.inner.follow(c, argv)
    }
    fn keep_containers(&self) {}
    fn owned(&self) -> Owned {
        self.inner.owned()
    }
    fn adopt(&self, o: &Owned) {
        self.inner.adopt(o)
    }
    fn note(&self, t: &str) {
        self.inner.note(t)
    }
}
