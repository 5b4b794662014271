//! The existing provider: a real cluster named by a kubeconfig context. Faultline injects
//! faults only into contexts on an explicit allow-list; node faults run through a privileged
//! node agent (a DaemonSet with hostPID that `nsenter`s into the host's namespaces), API-level
//! faults through kubectl; what cannot be healed reliably there is refused per fault.

use crate::exec::{run_steps_with, ActionRunner, Output, Vars};
use crate::plan::faults::{plan_fault, FaultContext, FaultPlan, Flavour, Unsupported};
use crate::plan::{Action, Step};
use crate::shell;
use anyhow::{anyhow, bail, Context, Result};
use faultline_faults::{Lifetime, NodeOperation};
use futures::future::BoxFuture;
use parking_lot::Mutex;
use serde::Deserialize;
use std::collections::HashMap;
use std::path::PathBuf;
use tokio::io::AsyncWriteExt;

pub const AGENT_NAMESPACE: &str = "faultline-system";
pub const AGENT_NAME: &str = "faultline-node-agent";
pub const AGENT_LABEL: &str = "app=faultline-node-agent";

#[derive(Debug, Deserialize)]
struct Kubeconfig {
    #[serde(default, rename = "current-context")]
    current_context: Option<String>,
    #[serde(default)]
    contexts: Vec<NamedContext>,
}

#[derive(Debug, Deserialize)]
struct NamedContext {
    name: String,
}

/// The context faultline may inject faults into: `context` (or the kubeconfig's
/// current-context) when it is on `allowed` (exact names; an empty list allows nothing) and
/// exists in the kubeconfig.
pub fn check_context_allowed(
    allowed: &[String],
    context: Option<&str>,
    kubeconfig_yaml: &str,
) -> Result<String> {
    if let Some(w) = allowed.iter().find(|a| a.contains('*') || a.contains('?')) {
        bail!("provider `existing`: allow-list entry `{w}` is a pattern; list each context by its exact name");
    }
    let kc: Kubeconfig = serde_yaml::from_str(kubeconfig_yaml)
        .context("provider `existing`: reading the kubeconfig")?;
    let ctx = match context {
        Some(c) if !c.is_empty() => c.to_string(),
        _ => kc.current_context.clone().filter(|c| !c.is_empty()).ok_or_else(|| {
            anyhow!("provider `existing`: no context given (--context) and the kubeconfig has no current-context")
        })?,
    };
    if !allowed.iter().any(|a| a == &ctx) {
        bail!(
            "provider `existing`: context `{ctx}` is not allow-listed ({}); faultline injects faults only into clusters the suite \
             lists in existing.allowedContexts",
            if allowed.is_empty() { "the list is empty".to_string() } else { format!("allowed: {}", allowed.join(", ")) }
        );
    }
    if !kc.contexts.iter().any(|c| c.name == ctx) {
        bail!("provider `existing`: context `{ctx}` is allow-listed but not in the kubeconfig");
    }
    Ok(ctx)
}

/// The node agent's image: FAULTLINE_NODE_AGENT_IMAGE (any image with `nsenter` and `sh`, e.g.
/// one loaded into a cluster that pulls nothing), else [`crate::versions::NODE_AGENT_IMAGE`].
pub fn node_agent_image() -> String {
    std::env::var("FAULTLINE_NODE_AGENT_IMAGE")
        .ok()
        .filter(|i| !i.trim().is_empty())
        .unwrap_or_else(|| crate::versions::NODE_AGENT_IMAGE.to_string())
}

/// The node agent: privileged, host PID and network namespaces, on every node (tolerates
/// every taint); commands run as `nsenter -t 1 -m -u -i -n -p -- sh -c <script>`.
pub fn node_agent_manifest() -> String {
    format!(
        "apiVersion: v1
kind: Namespace
metadata:
  name: {AGENT_NAMESPACE}
  labels:
    app.kubernetes.io/managed-by: faultline
    pod-security.kubernetes.io/enforce: privileged
---
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: {AGENT_NAME}
  namespace: {AGENT_NAMESPACE}
  labels:
    app: {AGENT_NAME}
spec:
  selector:
    matchLabels:
      app: {AGENT_NAME}
  template:
    metadata:
      labels:
        app: {AGENT_NAME}
    spec:
      hostPID: true
      hostNetwork: true
      automountServiceAccountToken: false
      priorityClassName: system-node-critical
      terminationGracePeriodSeconds: 1
      tolerations:
      - operator: Exists
      containers:
      - name: agent
        image: {image}
        command: [\"sleep\", \"infinity\"]
        securityContext:
          privileged: true
        resources:
          requests:
            cpu: 10m
            memory: 16Mi
",
        image = node_agent_image()
    )
}

/// What `existing` does with one operation.
pub fn support(op: &NodeOperation, longhorn: bool) -> Result<FaultPlan, Unsupported> {
    plan_fault(
        op,
        &FaultContext {
            flavour: Flavour::Existing,
            longhorn,
            stuck_io_on_node: false,
            after_boot: vec![],
        },
    )
}

/// One row per catalog operation: key, "agent"/"kubectl"/"unsupported", and the detail.
pub fn support_table(longhorn: bool) -> Vec<(&'static str, &'static str, String)> {
    NodeOperation::examples("node")
        .iter()
        .map(|op| match support(op, longhorn) {
            Ok(p) => {
                let agent = p
                    .inject
                    .iter()
                    .chain(&p.heal)
                    .any(|s| matches!(s.action, Action::NodeShell { .. }));
                (
                    op.key(),
                    if agent { "node agent" } else { "kubectl" },
                    p.fidelity,
                )
            }
            Err(u) => (op.key(), "unsupported", u.reason),
        })
        .collect()
}

#[derive(Clone, Debug)]
pub struct ExistingInput {
    /// None: the kubeconfig's current-context.
    pub context: Option<String>,
    pub allowed_contexts: Vec<String>,
    /// None: $KUBECONFIG or ~/.kube/config.
    pub kubeconfig: Option<PathBuf>,
    pub longhorn: bool,
    /// The kubectl binary (default `kubectl` on PATH).
    pub kubectl: PathBuf,
}

impl ExistingInput {
    pub fn new(allowed_contexts: Vec<String>) -> ExistingInput {
        ExistingInput {
            context: None,
            allowed_contexts,
            kubeconfig: None,
            longhorn: true,
            kubectl: PathBuf::from("kubectl"),
        }
    }
    fn kubeconfig_path(&self) -> Result<PathBuf> {
        if let Some(p) = &self.kubeconfig {
            return Ok(p.clone());
        }
        if let Some(p) =
            std::env::var_os("KUBECONFIG").and_then(|v| std::env::split_paths(&v).next())
        {
            return Ok(p);
        }
        let home = std::env::var_os("HOME").ok_or_else(|| anyhow!("no KUBECONFIG and no HOME"))?;
        Ok(PathBuf::from(home).join(".kube/config"))
    }
}

/// kubectl with the chosen context; node scripts through the agent pod of the node.
pub struct ExistingRunner {
    kubectl: PathBuf,
    base: Vec<String>,
    agent_pods: Mutex<HashMap<String, String>>,
    dry: Option<Mutex<String>>,
}

impl ExistingRunner {
    fn kubectl_argv(&self, args: &[String]) -> Vec<String> {
        let mut v = vec![self.kubectl.display().to_string()];
        v.extend(self.base.iter().cloned());
        v.extend(args.iter().cloned());
        v
    }
    fn node_argv(&self, pod: &str, script: &str) -> Vec<String> {
        let mut args: Vec<String> = [
            "exec",
            "-n",
            AGENT_NAMESPACE,
            pod,
            "--",
            "nsenter",
            "--target",
            "1",
            "--mount",
            "--uts",
            "--ipc",
            "--net",
            "--pid",
            "--",
            "sh",
            "-c",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        args.push(script.into());
        self.kubectl_argv(&args)
    }
    async fn run_argv(&self, argv: &[String], stdin: Option<&str>) -> Result<Output> {
        let mut cmd = tokio::process::Command::new(&argv[0]);
        cmd.args(&argv[1..]).stdin(if stdin.is_some() {
            std::process::Stdio::piped()
        } else {
            std::process::Stdio::null()
        });
        cmd.stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true);
        let mut child = cmd
            .spawn()
            .with_context(|| format!("running {}", argv[0]))?;
        if let (Some(input), Some(mut w)) = (stdin, child.stdin.take()) {
            w.write_all(input.as_bytes()).await?;
        }
        let out = child.wait_with_output().await?;
        Ok(Output {
            code: out.status.code().unwrap_or(-1) as i64,
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        })
    }
    async fn agent_pod(&self, node: &str) -> Result<String> {
        if let Some(p) = self.agent_pods.lock().get(node) {
            return Ok(p.clone());
        }
        let args: Vec<String> = [
            "-n",
            AGENT_NAMESPACE,
            "get",
            "pods",
            "-l",
            AGENT_LABEL,
            &format!("--field-selector=spec.nodeName={node}"),
            "-o",
            "jsonpath={.items[0].metadata.name}",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let out = self.run_argv(&self.kubectl_argv(&args), None).await?;
        let pod = out.stdout.trim().to_string();
        if !out.success() || pod.is_empty() {
            bail!(
                "no faultline node agent pod on node `{node}` ({}): is it a node of this cluster?",
                out.stderr.trim()
            );
        }
        self.agent_pods.lock().insert(node.into(), pod.clone());
        Ok(pod)
    }
}

impl ActionRunner for ExistingRunner {
    fn run<'a>(&'a self, action: &'a Action) -> BoxFuture<'a, Result<Output>> {
        Box::pin(async move {
            if let Some(d) = &self.dry {
                let mut o = d.lock();
                o.push_str(&self.render(action));
                o.push('\n');
                return Ok(Output::ok(""));
            }
            match action {
                Action::Kubectl { args, stdin } => {
                    self.run_argv(&self.kubectl_argv(args), stdin.as_deref())
                        .await
                }
                Action::NodeShell { node, script } => {
                    let pod = self.agent_pod(node).await?;
                    self.run_argv(&self.node_argv(&pod, script), None).await
                }
                Action::Docker(_) | Action::ExportKubeconfig { .. } => bail!(
                    "not available on an existing cluster: {}",
                    self.render(action)
                ),
            }
        })
    }
    fn render(&self, action: &Action) -> String {
        match action {
            Action::Kubectl {
                args,
                stdin: Some(input),
            } => format!(
                "{} <<'EOF'\n{}\nEOF",
                shell::join(&self.kubectl_argv(args)),
                input.trim_end()
            ),
            Action::Kubectl { args, stdin: None } => shell::join(&self.kubectl_argv(args)),
            Action::NodeShell { node, script } => {
                let pod = self
                    .agent_pods
                    .lock()
                    .get(node)
                    .cloned()
                    .unwrap_or_else(|| format!("<agent pod on {node}>"));
                shell::join(&self.node_argv(&pod, script))
            }
            Action::Docker(op) => crate::plan::render_docker(op),
            Action::ExportKubeconfig { host_path } => format!("(export kubeconfig to {host_path})"),
        }
    }
    fn note(&self, text: &str) {
        match &self.dry {
            Some(d) => {
                let mut o = d.lock();
                o.push_str(text);
                o.push('\n');
            }
            None => {
                tracing::info!(target: "faultline_kind::existing", "{}", text.trim_start_matches("# "))
            }
        }
    }
    fn is_dry_run(&self) -> bool {
        self.dry.is_some()
    }
}

/// A connection to an allow-listed existing cluster.
pub struct ExistingCluster {
    pub context: String,
    pub kubeconfig: PathBuf,
    longhorn: bool,
    runner: ExistingRunner,
    agent_installed: tokio::sync::Mutex<bool>,
    active: Mutex<Vec<NodeOperation>>,
}

impl ExistingCluster {
    /// Checks the allow-list; touches nothing in the cluster.
    pub fn connect(input: &ExistingInput) -> Result<ExistingCluster> {
        let path = input.kubeconfig_path()?;
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("provider `existing`: reading {}", path.display()))?;
        let context =
            check_context_allowed(&input.allowed_contexts, input.context.as_deref(), &text)?;
        Ok(Self::build(input, path, context, false))
    }

    fn build(
        input: &ExistingInput,
        kubeconfig: PathBuf,
        context: String,
        dry: bool,
    ) -> ExistingCluster {
        let base = vec![
            format!("--kubeconfig={}", kubeconfig.display()),
            format!("--context={context}"),
        ];
        ExistingCluster {
            context,
            kubeconfig,
            longhorn: input.longhorn,
            runner: ExistingRunner {
                kubectl: input.kubectl.clone(),
                base,
                agent_pods: Mutex::new(HashMap::new()),
                dry: dry.then(|| Mutex::new(String::new())),
            },
            agent_installed: tokio::sync::Mutex::new(false),
            active: Mutex::new(vec![]),
        }
    }

    pub fn fault_plan(&self, op: &NodeOperation) -> Result<FaultPlan, Unsupported> {
        support(op, self.longhorn)
    }

    fn agent_steps() -> Vec<Step> {
        vec![
            Step::apply(
                "install the faultline node agent (privileged, hostPID, nsenter)",
                node_agent_manifest(),
            ),
            Step::kubectl(
                "the node agent runs on every node",
                &[
                    "-n",
                    AGENT_NAMESPACE,
                    "rollout",
                    "status",
                    &format!("daemonset/{AGENT_NAME}"),
                    "--timeout=300s",
                ],
            ),
        ]
    }

    async fn ensure_agent(&self, plan: &FaultPlan) -> Result<()> {
        let needs = plan
            .inject
            .iter()
            .chain(&plan.heal)
            .any(|s| matches!(s.action, Action::NodeShell { .. }));
        let mut installed = self.agent_installed.lock().await;
        if needs && !*installed {
            run_steps_with(&self.runner, &Self::agent_steps(), &mut Vars::new()).await?;
            *installed = true;
        }
        Ok(())
    }

    pub async fn apply(&self, op: &NodeOperation) -> Result<()> {
        let plan = self.fault_plan(op)?;
        self.ensure_agent(&plan).await?;
        let mut vars = Vars::new();
        if let Err(e) = run_steps_with(&self.runner, &plan.inject, &mut vars).await {
            let _ = run_steps_with(&self.runner, &plan.heal, &mut vars).await;
            return Err(e);
        }
        if op.lifetime() == Lifetime::Held {
            self.active.lock().push(op.clone());
        }
        Ok(())
    }

    pub async fn heal(&self, op: &NodeOperation) -> Result<()> {
        let Ok(plan) = self.fault_plan(op) else {
            return Ok(());
        };
        self.ensure_agent(&plan).await?;
        run_steps_with(&self.runner, &plan.heal, &mut Vars::new()).await?;
        self.active.lock().retain(|a| a != op);
        Ok(())
    }

    pub fn active_faults(&self) -> Vec<NodeOperation> {
        self.active.lock().clone()
    }

    /// Heal what is still active and remove the node agent.
    pub async fn close(&self) -> Result<()> {
        let mut first = None;
        for op in self.active_faults().iter().rev() {
            if let Err(e) = self.heal(op).await {
                first.get_or_insert(e);
            }
        }
        if *self.agent_installed.lock().await {
            let s = Step::kubectl(
                "remove the node agent",
                &[
                    "delete",
                    "namespace",
                    AGENT_NAMESPACE,
                    "--ignore-not-found",
                    "--wait=false",
                ],
            );
            run_steps_with(&self.runner, &[s], &mut Vars::new()).await?;
        }
        first.map_or(Ok(()), Err)
    }
}

/// What `--provider existing --dry-run` prints: the allow-list decision, the node agent, and
/// each fault's commands or the reason it is refused. Touches no cluster.
pub fn dry_run_report(input: &ExistingInput, faults: &[NodeOperation]) -> Result<String> {
    // Its own runtime on its own thread: callable from async code too.
    std::thread::scope(|s| s.spawn(|| dry_run_report_inner(input, faults)).join())
        .map_err(|_| anyhow!("dry run panicked"))?
}

fn dry_run_report_inner(input: &ExistingInput, faults: &[NodeOperation]) -> Result<String> {
    let path = input.kubeconfig_path()?;
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("provider `existing`: reading {}", path.display()))?;
    let context = check_context_allowed(&input.allowed_contexts, input.context.as_deref(), &text)?;
    let c = ExistingCluster::build(input, path, context, true);
    let mut out = format!(
        "# faultline existing provider, dry run: context `{}` is allow-listed\n",
        c.context
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let dry = c.runner.dry.as_ref().expect("dry");
    out.push_str("## Node agent (installed before the first fault that needs node access, removed at the end)\n");
    rt.block_on(run_steps_with(
        &c.runner,
        &ExistingCluster::agent_steps(),
        &mut Vars::new(),
    ))?;
    out.push_str(&std::mem::take(&mut *dry.lock()));
    for op in faults {
        out.push_str(&format!(
            "\n## Fault {}\n",
            serde_json::to_string(op).unwrap_or_default()
        ));
        match c.fault_plan(op) {
            Err(u) => out.push_str(&format!(
                "# UNSUPPORTED on existing clusters: {}\n",
                u.reason
            )),
            Ok(p) => {
                out.push_str(&format!("# fidelity: {}\n### inject\n", p.fidelity));
                rt.block_on(run_steps_with(&c.runner, &p.inject, &mut Vars::new()))?;
                out.push_str(&std::mem::take(&mut *dry.lock()));
                out.push_str(if p.heal.is_empty() {
                    "### heal: nothing (one-shot)\n"
                } else {
                    "### heal\n"
                });
                rt.block_on(run_steps_with(&c.runner, &p.heal, &mut Vars::new()))?;
                out.push_str(&std::mem::take(&mut *dry.lock()));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use faultline_faults::NodeTarget;
    use rstest::rstest;

    const KUBECONFIG: &str = "apiVersion: v1
kind: Config
current-context: staging
contexts:
- name: staging
  context: {cluster: staging, user: u}
- name: prod
  context: {cluster: prod, user: u}
clusters: []
users: []
";

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[rstest]
    #[case(&["staging"], None, Ok("staging"))]
    #[case(&["staging", "prod"], Some("prod"), Ok("prod"))]
    #[case(&["staging"], Some("prod"), Err("context `prod` is not allow-listed (allowed: staging)"))]
    #[case(&[], None, Err("the list is empty"))]
    #[case(&["staging"], Some("Staging"), Err("not allow-listed"))]
    #[case(&["stag*"], None, Err("is a pattern"))]
    #[case(&["kind-x"], Some("kind-x"), Err("not in the kubeconfig"))]
    fn allow_list(
        #[case] allowed: &[&str],
        #[case] ctx: Option<&str>,
        #[case] want: Result<&str, &str>,
    ) {
        let got = check_context_allowed(&s(allowed), ctx, KUBECONFIG);
        match (got, want) {
            (Ok(c), Ok(w)) => assert_eq!(c, w),
            (Err(e), Err(w)) => assert!(e.to_string().contains(w), "{e}"),
            (g, w) => panic!("got {g:?}, want {w:?}"),
        }
    }

    #[test]
    fn no_context_and_no_current_context_is_refused() {
        let e = check_context_allowed(&s(&["a"]), None, "contexts: [{name: a}]\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("no current-context"), "{e}");
    }

    #[test]
    fn node_agent_is_privileged_with_host_pid_on_every_node() {
        let docs: Vec<serde_yaml::Value> =
            serde_yaml::Deserializer::from_str(&node_agent_manifest())
                .map(|d| serde::Deserialize::deserialize(d).unwrap())
                .collect();
        assert_eq!(docs[0]["kind"], "Namespace");
        assert_eq!(
            docs[0]["metadata"]["labels"]["pod-security.kubernetes.io/enforce"],
            "privileged"
        );
        let ds = &docs[1];
        assert_eq!(ds["kind"], "DaemonSet");
        let spec = &ds["spec"]["template"]["spec"];
        assert_eq!(spec["hostPID"], true);
        assert_eq!(spec["containers"][0]["securityContext"]["privileged"], true);
        assert_eq!(spec["tolerations"][0]["operator"], "Exists");
        assert_eq!(ds["spec"]["selector"]["matchLabels"]["app"], AGENT_NAME);
    }

    #[test]
    fn support_table_has_every_operation_with_a_reason_for_each_refusal() {
        let t = support_table(true);
        assert_eq!(t.len(), NodeOperation::KEYS.len());
        let get = |k: &str| t.iter().find(|r| r.0 == k).unwrap();
        assert_eq!(get("staleDeviceMount").1, "node agent");
        assert_eq!(get("csiPluginRestart").1, "kubectl");
        assert_eq!(get("kubeletRestart").1, "node agent");
        for k in [
            "kubeletStop",
            "kubeletHang",
            "nodePowerCycle",
            "nodeNetworkPartition",
            "apiErrors",
            "apiLatency",
        ] {
            assert_eq!(get(k).1, "unsupported", "{k}");
            assert!(!get(k).2.is_empty());
        }
    }

    /// A fake kubectl: records its argv, answers the agent pod lookup.
    fn fake_kubectl(dir: &std::path::Path) -> PathBuf {
        let p = dir.join("kubectl");
        std::fs::write(
            &p,
            format!(
                "#!/bin/sh\nprintf '%s\\n' \"$*\" >> {log}\ncase \"$*\" in *'get pods -l app=faultline-node-agent'*) printf 'agent-abc';; esac\nif [ ! -t 0 ]; then cat >> {log}; fi\nexit 0\n",
                log = dir.join("calls").display()
            ),
        )
        .unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        p
    }

    #[tokio::test]
    async fn node_faults_run_through_the_agent_with_nsenter_and_are_healed_on_close() {
        let dir = tempfile::tempdir().unwrap();
        let kc = dir.path().join("kubeconfig");
        std::fs::write(&kc, KUBECONFIG).unwrap();
        let mut input = ExistingInput::new(s(&["staging"]));
        input.kubeconfig = Some(kc.clone());
        input.kubectl = fake_kubectl(dir.path());
        let c = ExistingCluster::connect(&input).unwrap();
        assert_eq!(c.context, "staging");
        let op = NodeOperation::ProberManagerBroken(NodeTarget {
            node: "worker-04".into(),
        });
        c.apply(&op).await.unwrap();
        assert_eq!(c.active_faults(), vec![op.clone()]);
        c.close().await.unwrap();
        assert!(c.active_faults().is_empty());
        let calls = std::fs::read_to_string(dir.path().join("calls")).unwrap();
        let ctx = format!("--kubeconfig={} --context=staging", kc.display());
        assert!(calls.contains(&format!("{ctx} apply -f -")), "{calls}");
        assert!(
            calls.contains("kind: DaemonSet"),
            "manifest on stdin: {calls}"
        );
        assert!(calls.contains(&format!("{ctx} -n faultline-system get pods -l app=faultline-node-agent --field-selector=spec.nodeName=worker-04")));
        assert!(calls.contains("exec -n faultline-system agent-abc -- nsenter --target 1 --mount --uts --ipc --net --pid -- sh -c iptables -C OUTPUT"), "{calls}");
        assert!(
            calls.contains("while iptables -D OUTPUT"),
            "healed: {calls}"
        );
        assert!(
            calls.contains(&format!(
                "{ctx} delete namespace faultline-system --ignore-not-found --wait=false"
            )),
            "{calls}"
        );
        // The agent pod was looked up once and cached.
        assert_eq!(
            calls
                .matches("get pods -l app=faultline-node-agent")
                .count(),
            1
        );
    }

    #[tokio::test]
    async fn a_refused_context_never_runs_kubectl() {
        let dir = tempfile::tempdir().unwrap();
        let kc = dir.path().join("kubeconfig");
        std::fs::write(&kc, KUBECONFIG).unwrap();
        let mut input = ExistingInput::new(s(&["prod"]));
        input.kubeconfig = Some(kc);
        input.kubectl = fake_kubectl(dir.path());
        assert!(ExistingCluster::connect(&input).is_err());
        assert!(!dir.path().join("calls").exists());
    }

    #[test]
    fn dry_run_lists_commands_and_refusals() {
        let dir = tempfile::tempdir().unwrap();
        let kc = dir.path().join("kubeconfig");
        std::fs::write(&kc, KUBECONFIG).unwrap();
        let mut input = ExistingInput::new(s(&["staging"]));
        input.kubeconfig = Some(kc);
        let r = dry_run_report(&input, &NodeOperation::examples("worker-04")).unwrap();
        assert!(r.contains("context `staging` is allow-listed"));
        assert!(r.contains("nsenter --target 1"));
        assert!(r.contains(
            "# UNSUPPORTED on existing clusters: the node agent is reached through the kubelet"
        ));
        assert_eq!(r.matches("\n## Fault ").count(), NodeOperation::KEYS.len());
    }
}

#[cfg(test)]
mod async_tests {
    use super::*;

    #[tokio::test]
    async fn dry_run_is_callable_from_async_code() {
        let dir = tempfile::tempdir().unwrap();
        let kc = dir.path().join("kubeconfig");
        std::fs::write(&kc, "current-context: a\ncontexts: [{name: a}]\n").unwrap();
        let mut input = ExistingInput::new(vec!["a".into()]);
        input.kubeconfig = Some(kc);
        let r = dry_run_report(
            &input,
            &[NodeOperation::HungNfs(faultline_faults::NodeTarget {
                node: "n".into(),
            })],
        )
        .unwrap();
        assert!(r.contains("--dport 2049"), "{r}");
    }
}
