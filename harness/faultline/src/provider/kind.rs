//! The kind provider: the runner's `Provider`/`Cluster`/`NodeOps` over `faultline-kind`
//! (kindest/node containers through testcontainers, Longhorn, faults via `docker exec`), and the
//! `--dry-run` report that shows every container spec and command without a Docker engine.

use super::*;
use crate::model::{Heal, NodeOperation, NodeRole, Operation, Step};
use anyhow::Context as _;
use faultline_kind::{
    ClusterPlanInput, DryRunEvent, DryRunReport, KindOptions, KindProvider as Inner, NodeInput,
    Role,
};

/// The node image of a run, first that is set: `--node-image`, FAULTLINE_KIND_NODE_IMAGE, the
/// suite's `kindProvider.nodeImage`; `None` means the pinned image. With the setting it came from.
pub fn choose_node_image(
    flag: Option<&str>,
    env: Option<&str>,
    suite: Option<&str>,
) -> Option<(String, &'static str)> {
    [
        (flag, "--node-image"),
        (env, "FAULTLINE_KIND_NODE_IMAGE"),
        (suite, "the suite's kindProvider.nodeImage"),
    ]
    .into_iter()
    .find_map(|(v, from)| {
        v.map(str::trim)
            .filter(|v| !v.is_empty())
            .map(|v| (v.to_string(), from))
    })
}

/// The cluster input of one scenario; `node_image` is the run's choice ([`choose_node_image`]).
/// `longhorn_stand_in`: a Longhorn scenario gets the node image's CSI driver under the
/// StorageClass name `longhorn` instead (a host without iSCSI).
pub fn plan_input(
    spec: &ClusterSpec,
    node_image: Option<&str>,
    longhorn_stand_in: bool,
) -> ClusterPlanInput {
    let longhorn = spec.storage != Some(crate::model::Storage::None);
    let nodes = spec
        .nodes
        .iter()
        .map(|n| NodeInput {
            name: n.name.clone(),
            role: if n.role == NodeRole::ControlPlane {
                Role::ControlPlane
            } else {
                Role::Worker
            },
        })
        .collect();
    ClusterPlanInput::new(
        &faultline_kind::input::sanitize_cluster_name(&spec.name),
        nodes,
    )
    .with_longhorn(longhorn && !longhorn_stand_in)
    .with_longhorn_stand_in(longhorn && longhorn_stand_in)
    .with_env_from(|k| std::env::var(k).ok())
    .with_node_image(node_image)
}

pub struct KindProvider {
    inner: Arc<Inner>,
    node_image: Option<String>,
    longhorn_stand_in: bool,
}

impl KindProvider {
    /// `node_image`: the run's choice ([`choose_node_image`]); `None`: the pinned image.
    /// `longhorn_stand_in`: the suite's `kindProvider.longhornStandIn` ([`plan_input`]).
    pub fn new(node_image: Option<String>, longhorn_stand_in: bool) -> KindProvider {
        // Clusters are reused across the scenarios of a run. FAULTLINE_KIND_NODES_ONLY=1 stops
        // bring-up where kubeadm would run (the Docker-engine tier: no Kubernetes binaries).
        let nodes_only = std::env::var("FAULTLINE_KIND_NODES_ONLY").as_deref() == Ok("1");
        KindProvider {
            inner: Arc::new(Inner::new(KindOptions {
                reuse: true,
                nodes_only,
                state_dir: None,
            })),
            node_image,
            longhorn_stand_in,
        }
    }
}

impl Provider for KindProvider {
    fn name(&self) -> &'static str {
        "kind"
    }
    fn controller_mode(&self) -> ControllerMode {
        ControllerMode::InCluster
    }
    fn shutdown(&self) -> BoxFuture<'_, anyhow::Result<()>> {
        Box::pin(self.inner.shutdown())
    }
    /// Bring-up pulls an image, runs kubeadm, waits up to 300 s (retried) for Ready nodes and
    /// for Longhorn: minutes, each wait bounded by the step itself. A runner timeout shorter
    /// than that would drop the bring-up mid-way, before its error and its clean-up.
    fn start_timeout(&self) -> std::time::Duration {
        std::time::Duration::from_secs(30 * 60)
    }
    fn heal_orphans(&self, force: bool) -> Option<BoxFuture<'_, anyhow::Result<(String, bool)>>> {
        Some(Box::pin(async move {
            let dir = faultline_kind::journal::default_state_dir(|k| std::env::var(k).ok());
            let r = faultline_kind::orphans::clean_up(&dir, force).await?;
            Ok((r.render(), r.ok()))
        }))
    }
    fn start<'a>(
        &'a self,
        spec: &'a ClusterSpec,
    ) -> BoxFuture<'a, anyhow::Result<Box<dyn Cluster>>> {
        Box::pin(async move {
            let input = plan_input(spec, self.node_image.as_deref(), self.longhorn_stand_in);
            std::fs::create_dir_all(&spec.workdir)?;
            let cluster = self.inner.start(&input, &spec.workdir).await?;
            let kubeconfig = cluster.kubeconfig().to_path_buf();
            let ops = Arc::new(KindNodeOps {
                cluster: tokio::sync::Mutex::new(Some(cluster)),
            });
            Ok(Box::new(KindClusterHandle { kubeconfig, ops }) as Box<dyn Cluster>)
        })
    }
}

struct KindNodeOps {
    cluster: tokio::sync::Mutex<Option<faultline_kind::KindCluster>>,
}

impl NodeOps for KindNodeOps {
    fn apply<'a>(&'a self, op: &'a NodeOperation) -> BoxFuture<'a, anyhow::Result<()>> {
        Box::pin(async move {
            let g = self.cluster.lock().await;
            let c = g
                .as_ref()
                .ok_or_else(|| anyhow::anyhow!("kind cluster already released"))?;
            c.apply(op).await
        })
    }
    fn heal<'a>(&'a self, op: &'a NodeOperation) -> BoxFuture<'a, anyhow::Result<()>> {
        Box::pin(async move {
            let g = self.cluster.lock().await;
            match g.as_ref() {
                Some(c) => c.heal(op).await,
                None => Ok(()),
            }
        })
    }
    fn subscribe_logs(
        &self,
        node: Option<&str>,
        source: LogSource,
    ) -> broadcast::Receiver<LogLine> {
        let (tx, rx) = broadcast::channel(4096);
        let kind_source = match source {
            LogSource::CsiPlugin => faultline_kind::LogSource::CsiPlugin,
            _ => faultline_kind::LogSource::Kubelet,
        };
        if let Ok(g) = self.cluster.try_lock() {
            if let Some(c) = g.as_ref() {
                let mut inner = c.subscribe_logs(node, kind_source);
                tokio::spawn(async move {
                    while let Ok(l) = inner.recv().await {
                        if tx
                            .send(LogLine {
                                source,
                                node: Some(l.node),
                                text: l.text,
                            })
                            .is_err()
                        {
                            break;
                        }
                    }
                });
            }
        }
        rx
    }
}

struct KindClusterHandle {
    kubeconfig: std::path::PathBuf,
    ops: Arc<KindNodeOps>,
}

impl Cluster for KindClusterHandle {
    fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }
    fn node_ops(&self) -> Arc<dyn NodeOps> {
        self.ops.clone()
    }
    fn controller_mode(&self) -> ControllerMode {
        ControllerMode::InCluster
    }
    fn teardown(
        self: Box<Self>,
        keep: bool,
    ) -> BoxFuture<'static, anyhow::Result<Option<KeptCluster>>> {
        let ops = self.ops.clone();
        Box::pin(async move {
            let Some(c) = ops.cluster.lock().await.take() else {
                return Ok(None);
            };
            Ok(c.release(keep).await?.map(|description| KeptCluster {
                description,
                guard: None,
            }))
        })
    }
}

/// The scenario's node faults in step order, with their heals where they come due: `atStep`
/// before the named step, `after` once the `sleep` steps since the inject add up to it (or,
/// if they never do, before the end), `never` at the end. `try` then `finally`; `catch` runs
/// only on a failure and is not replayed.
pub fn timeline(steps: &[Step]) -> Vec<DryRunEvent> {
    struct Timed {
        op: NodeOperation,
        due: std::time::Duration,
        after: std::time::Duration,
    }
    fn walk(
        steps: &[Step],
        clock: &mut std::time::Duration,
        at: &mut Vec<(NodeOperation, String)>,
        timed: &mut Vec<Timed>,
        out: &mut Vec<DryRunEvent>,
    ) {
        for (i, s) in steps.iter().enumerate() {
            let name = s
                .name
                .clone()
                .unwrap_or_else(|| format!("{}-{i}", s.kind()));
            at.retain(|(op, step)| {
                let due = *step == name;
                if due {
                    out.push(DryRunEvent::Heal {
                        op: op.clone(),
                        when: format!("atStep {step}"),
                    });
                }
                !due
            });
            if let Some(f) = &s.fault {
                if let Operation::Node(op) = &f.op {
                    out.push(DryRunEvent::Apply(op.clone()));
                    match &f.heal {
                        Heal::After(d) => timed.push(Timed {
                            op: op.clone(),
                            due: *clock + d.0,
                            after: d.0,
                        }),
                        Heal::AtStep(step) => at.push((op.clone(), step.clone())),
                        Heal::Never => {}
                    }
                }
            }
            if let Some(Operation::Node(op)) = &s.remediate {
                out.push(DryRunEvent::Apply(op.clone()));
            }
            if let Some(d) = &s.sleep {
                *clock += d.0;
                timed.sort_by_key(|t| t.due);
                while timed.first().is_some_and(|t| t.due <= *clock) {
                    let t = timed.remove(0);
                    out.push(DryRunEvent::Heal {
                        op: t.op,
                        when: format!("{:?} after its inject", t.after),
                    });
                }
            }
            for nested in [&s.try_steps, &s.finally].into_iter().flatten() {
                walk(nested, clock, at, timed, out);
            }
        }
    }
    let (mut clock, mut at, mut timed, mut out) =
        (std::time::Duration::ZERO, vec![], vec![], vec![]);
    walk(steps, &mut clock, &mut at, &mut timed, &mut out);
    timed.sort_by_key(|t| t.due);
    for t in timed {
        out.push(DryRunEvent::Heal {
            op: t.op,
            when: format!(
                "{:?} after its inject (the steps in between take that long)",
                t.after
            ),
        });
    }
    out
}

/// What the runner applies before the first step: the suite's CRDs, then the controller's
/// manifests (kind deploys it in the cluster), each file with the objects it holds.
pub fn manifests_section(
    suite: &crate::loader::LoadedSuite,
    controller: Option<&str>,
) -> anyhow::Result<String> {
    let mut s = String::new();
    let mut list = |heading: &str, files: &[String]| -> anyhow::Result<()> {
        s.push_str(&format!(
            "# {heading} (server-side apply through the API server of the kubeconfig)\n"
        ));
        if files.is_empty() {
            s.push_str("#   none\n");
        }
        for f in files {
            let path = suite.dir.join(f);
            s.push_str(&format!(
                "kubectl --kubeconfig <workdir>/kubeconfig apply --server-side -f {}\n",
                path.display()
            ));
            for o in
                crate::k8s::read_manifests(&path).with_context(|| format!("listing {heading}"))?
            {
                let kind = o.get("kind").and_then(|v| v.as_str()).unwrap_or("?");
                let name = o
                    .pointer("/metadata/name")
                    .and_then(|v| v.as_str())
                    .unwrap_or("?");
                s.push_str(&format!("#   {kind} {name}\n"));
            }
        }
        Ok(())
    };
    list("CRDs of the suite", &suite.suite.crds)?;
    if let Some(c) = controller {
        let def =
            suite.suite.controllers.get(c).ok_or_else(|| {
                anyhow::anyhow!("controller `{c}` is not in the suite's controllers")
            })?;
        list(
            &format!("controller `{c}`: its manifests (the controller runs in the cluster)"),
            &def.manifests,
        )?;
    }
    Ok(s)
}

/// `faultline run --provider kind --dry-run`: the exact container specs and commands, per
/// scenario, faults replayed with their overlaps; `unsupported` lists what kind cannot do.
pub fn dry_run(
    spec: &ClusterSpec,
    scenario: &crate::model::Scenario,
    suite: &crate::loader::LoadedSuite,
    node_image: Option<&str>,
) -> anyhow::Result<DryRunReport> {
    let before = manifests_section(
        suite,
        scenario
            .spec
            .controller
            .as_ref()
            .map(|c| c.reference.as_str()),
    )?;
    faultline_kind::dry_run_replay_blocking(
        &plan_input(
            spec,
            node_image,
            suite.suite.kind_provider.longhorn_stand_in,
        ),
        &timeline(&scenario.spec.steps),
        &before,
        &spec.workdir,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_node_image_is_the_first_setting_that_is_set() {
        let c = |f, e, s| choose_node_image(f, e, s);
        assert_eq!(c(None, None, None), None);
        assert_eq!(
            c(None, None, Some("s:1")),
            Some(("s:1".into(), "the suite's kindProvider.nodeImage"))
        );
        assert_eq!(
            c(None, Some("e:1"), Some("s:1")),
            Some(("e:1".into(), "FAULTLINE_KIND_NODE_IMAGE"))
        );
        assert_eq!(
            c(Some("f:1"), Some("e:1"), Some("s:1")),
            Some(("f:1".into(), "--node-image"))
        );
        assert_eq!(
            c(Some(" "), Some(""), Some("s:1")),
            Some(("s:1".into(), "the suite's kindProvider.nodeImage")),
            "blank counts as unset"
        );
        let spec = ClusterSpec {
            name: "x".into(),
            nodes: vec![],
            storage: None,
            sim: Default::default(),
            seed: 0,
            workdir: "/tmp".into(),
        };
        assert_eq!(plan_input(&spec, Some("f:1"), false).node_image, "f:1");
    }

    fn steps(yaml: &str) -> Vec<Step> {
        serde_yaml::from_str(yaml).unwrap()
    }

    #[test]
    fn the_timeline_heals_at_the_named_step_after_the_sleeps_and_at_the_end() {
        let t = timeline(&steps(
            "- fault: {name: nfs, heal: {atStep: recover}, hungNfs: {node: w}}
- fault: {heal: {after: 10s}, kubeletStop: {node: w}}
- fault: {nodeReboot: {node: w}}
- sleep: 4s
- sleep: 6s
- name: recover
  remediate: {nodePowerCycle: {node: w}}
- try:
  - fault: {heal: {after: 1h}, kubeletHang: {node: w}}
",
        ));
        let shown: Vec<String> = t
            .iter()
            .map(|e| match e {
                DryRunEvent::Apply(op) => format!("apply {}", op.key()),
                DryRunEvent::Heal { op, when } => format!("heal {} ({when})", op.key()),
            })
            .collect();
        assert_eq!(
            shown,
            [
                "apply hungNfs",
                "apply kubeletStop",
                "apply nodeReboot",
                "heal kubeletStop (10s after its inject)",
                "heal hungNfs (atStep recover)",
                "apply nodePowerCycle",
                "apply kubeletHang",
                "heal kubeletHang (3600s after its inject (the steps in between take that long))",
            ]
        );
    }
}
