//! Executors carry plans out. [`DryRun`] prints every container spec and command instead of
//! running it; [`docker::TestcontainersExecutor`] runs them against a Docker engine. Both are
//! driven by the same step runner ([`run_steps`]), so what the dry run prints is what a real
//! run executes.

#[cfg(feature = "docker")]
pub mod docker;

use crate::plan::container::NodeContainerSpec;
use crate::plan::{substitute, Action, DockerOp, Expect, KindNames, Step};
use crate::shell;
use anyhow::{anyhow, bail, Context, Result};
use futures::future::BoxFuture;
use parking_lot::Mutex;
use std::time::Instant;
use tokio::sync::mpsc;

/// The Docker engine (DOCKER_HOST or the local socket), when this build has its client.
#[cfg(feature = "docker")]
pub fn connect_engine() -> Result<std::sync::Arc<dyn Executor>> {
    Ok(std::sync::Arc::new(
        docker::TestcontainersExecutor::connect()?,
    ))
}

/// Without the `docker` feature there is no engine client: the main job's sim-only build
/// leaves testcontainers and bollard out (a fifth of a cold build), and says how to get them.
#[cfg(not(feature = "docker"))]
pub fn connect_engine() -> Result<std::sync::Arc<dyn Executor>> {
    bail!("{NO_ENGINE_CLIENT}")
}

/// The newest real node image in the engine's store
/// ([`docker::TestcontainersExecutor::local_real_node_image`]): a run's default node image when
/// it names none. None without an engine client, without an engine, or without such an image
/// (then the pinned kindest/node is the default, as before).
pub async fn local_real_node_image() -> Option<String> {
    #[cfg(feature = "docker")]
    {
        docker::TestcontainersExecutor::connect()
            .ok()?
            .local_real_node_image()
            .await
            .ok()
            .flatten()
    }
    #[cfg(not(feature = "docker"))]
    {
        None
    }
}

/// What a build without the `docker` feature answers when a Docker engine is needed.
pub const NO_ENGINE_CLIENT: &str = "this faultline binary was built without the Docker engine client (the `docker` feature, which `bash ci/pack.sh` leaves out to build faster); build it with `cargo build -p faultline` (default features) to use the kind provider or `faultline cleanup`";

/// What a command printed, and how it ended.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Output {
    pub code: i64,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    pub fn ok(stdout: impl Into<String>) -> Output {
        Output {
            code: 0,
            stdout: stdout.into(),
            stderr: String::new(),
        }
    }
    pub fn success(&self) -> bool {
        self.code == 0
    }
    fn describe(&self) -> String {
        let mut s = format!("exit code {}", self.code);
        for (name, text) in [("stdout", &self.stdout), ("stderr", &self.stderr)] {
            let t = text.trim();
            if !t.is_empty() {
                let tail: String = t
                    .chars()
                    .rev()
                    .take(2000)
                    .collect::<Vec<_>>()
                    .into_iter()
                    .rev()
                    .collect();
                s.push_str(&format!("\n{name}:\n{tail}"));
            }
        }
        s
    }
}

pub use crate::plan::cluster::Owned;

/// The low-level operations a kind run needs.
pub trait Executor: Send + Sync {
    /// Create and start a node container (files copied in before start).
    fn run_container<'a>(&'a self, spec: &'a NodeContainerSpec) -> BoxFuture<'a, Result<()>>;
    /// `docker exec <container> <argv>`, with `stdin` fed to the command when given.
    fn exec<'a>(
        &'a self,
        container: &'a str,
        argv: &'a [String],
        stdin: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Output>>;
    /// An engine operation (all but `Run`).
    fn docker<'a>(&'a self, op: &'a DockerOp) -> BoxFuture<'a, Result<Output>>;
    /// `https://<host>:<port>` where the container's API server port is published.
    fn api_server_url<'a>(&'a self, container: &'a str) -> BoxFuture<'a, Result<String>>;
    /// A long-running command's stdout, line by line, until it ends.
    fn follow<'a>(
        &'a self,
        container: &'a str,
        argv: &'a [String],
    ) -> BoxFuture<'a, Result<mpsc::Receiver<String>>>;
    /// Leave every container running when this process ends (`--keep-cluster`).
    fn keep_containers(&self);
    /// What this executor may remove (executors that own nothing in particular: nothing).
    fn owned(&self) -> Owned {
        Owned::default()
    }
    /// Take over resources another executor (or a killed process) created.
    fn adopt(&self, _owned: &Owned) {}
    /// A step is about to run (the dry run prints it, a real run logs it).
    fn note(&self, text: &str);
    /// Dry runs run every step once and never wait.
    fn is_dry_run(&self) -> bool {
        false
    }
}

/// Values captured by steps (`{{name}}`).
pub type Vars = Vec<(String, String)>;

fn check_capture(name: &str, value: &str) -> Result<()> {
    if value.is_empty()
        || !value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
    {
        bail!("captured `{name}` = {value:?}: expected a Kubernetes name");
    }
    Ok(())
}

fn substitute_action(a: &Action, vars: &Vars) -> Action {
    match a {
        Action::NodeShell { node, script } => Action::NodeShell {
            node: node.clone(),
            script: substitute(script, vars),
        },
        Action::Kubectl { args, stdin } => Action::Kubectl {
            args: args.iter().map(|x| substitute(x, vars)).collect(),
            stdin: stdin.as_ref().map(|s| substitute(s, vars)),
        },
        other => other.clone(),
    }
}

fn describe_step(step: &Step) -> String {
    let mut s = format!("# {}", step.what);
    if let Some(r) = &step.retry {
        s.push_str(&format!(
            " (until it succeeds: every {}s, at most {}s)",
            r.interval.as_secs(),
            r.timeout.as_secs()
        ));
    }
    if step.ignore_failure {
        s.push_str(" (a failure is ignored)");
    }
    if let Some(c) = &step.capture {
        s.push_str(&format!(" (stdout -> {{{{{c}}}}})"));
    }
    if step.expect == Some(Expect::EmptyStdout) {
        s.push_str(" (until it prints nothing)");
    }
    s
}

/// Carries out single actions for the step runner (kind: an [`Executor`] and the cluster's
/// names; existing: kubectl and the node agent).
pub trait ActionRunner: Send + Sync {
    fn run<'a>(&'a self, action: &'a Action) -> BoxFuture<'a, Result<Output>>;
    /// The action as a command line, for errors and the dry run.
    fn render(&self, action: &Action) -> String;
    fn note(&self, text: &str);
    fn is_dry_run(&self) -> bool;
}

/// The kind [`ActionRunner`].
pub struct KindRunner<'a> {
    pub exec: &'a dyn Executor,
    pub names: &'a KindNames,
}

impl ActionRunner for KindRunner<'_> {
    fn run<'a>(&'a self, action: &'a Action) -> BoxFuture<'a, Result<Output>> {
        Box::pin(attempt(self.exec, self.names, action))
    }
    fn render(&self, action: &Action) -> String {
        self.names.render(action)
    }
    fn note(&self, text: &str) {
        self.exec.note(text)
    }
    fn is_dry_run(&self) -> bool {
        self.exec.is_dry_run()
    }
}

async fn attempt(exec: &dyn Executor, names: &KindNames, action: &Action) -> Result<Output> {
    match action {
        Action::Docker(DockerOp::Run { spec }) => {
            exec.run_container(spec).await.map(|_| Output::ok(""))
        }
        Action::Docker(op) => exec.docker(op).await,
        Action::ExportKubeconfig { host_path } => {
            if exec.is_dry_run() {
                exec.note(&names.render(action));
                return Ok(Output::ok(""));
            }
            let (c, argv) = names.exec_argv(action).expect("exec action");
            let out = exec.exec(&c, &argv, None).await?;
            if !out.success() {
                return Ok(out);
            }
            let url = exec.api_server_url(&c).await?;
            let kubeconfig = rewrite_server(&out.stdout, &url);
            write_private(host_path, &kubeconfig)?;
            Ok(Output::ok(host_path.clone()))
        }
        Action::Kubectl { stdin, .. } => {
            let (c, argv) = names.exec_argv(action).expect("exec action");
            exec.exec(&c, &argv, stdin.as_deref()).await
        }
        Action::NodeShell { .. } => {
            let (c, argv) = names.exec_argv(action).expect("exec action");
            exec.exec(&c, &argv, None).await
        }
    }
}

/// Point a kubeconfig's `server:` at `url`.
pub fn rewrite_server(kubeconfig: &str, url: &str) -> String {
    kubeconfig
        .lines()
        .map(|l| {
            let t = l.trim_start();
            if t.starts_with("server: ") {
                format!("{}server: {url}", &l[..l.len() - t.len()])
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

fn write_private(path: &str, content: &str) -> Result<()> {
    if let Some(dir) = std::path::Path::new(path).parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(path, content).with_context(|| format!("writing {path}"))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    }
    Ok(())
}

/// Run one step: substitute captured values, retry while it fails (if it may), capture stdout.
pub async fn run_step(
    exec: &dyn Executor,
    names: &KindNames,
    step: &Step,
    vars: &mut Vars,
) -> Result<Output> {
    run_step_with(&KindRunner { exec, names }, step, vars).await
}

pub async fn run_steps(
    exec: &dyn Executor,
    names: &KindNames,
    steps: &[Step],
    vars: &mut Vars,
) -> Result<()> {
    run_steps_with(&KindRunner { exec, names }, steps, vars).await
}

pub async fn run_steps_with(
    runner: &dyn ActionRunner,
    steps: &[Step],
    vars: &mut Vars,
) -> Result<()> {
    for s in steps {
        run_step_with(runner, s, vars).await?;
    }
    Ok(())
}

pub async fn run_step_with(
    runner: &dyn ActionRunner,
    step: &Step,
    vars: &mut Vars,
) -> Result<Output> {
    runner.note(&describe_step(step));
    let action = substitute_action(&step.action, vars);
    let started = Instant::now();
    let result = loop {
        let r = runner.run(&action).await.map(|mut o| {
            if o.success()
                && !runner.is_dry_run()
                && step.expect == Some(Expect::EmptyStdout)
                && !o.stdout.trim().is_empty()
            {
                o.code = 1;
                o.stderr = format!("expected no output, got: {}", o.stdout.trim());
            }
            o
        });
        let ok = matches!(&r, Ok(o) if o.success());
        match (&step.retry, ok) {
            (Some(retry), false)
                if !runner.is_dry_run() && started.elapsed() + retry.interval < retry.timeout =>
            {
                tokio::time::sleep(retry.interval).await;
            }
            _ => break r,
        }
    };
    let failure = match &result {
        Ok(o) if o.success() => None,
        Ok(o) => Some(o.describe()),
        Err(e) => Some(format!("{e:#}")),
    };
    if let Some(detail) = failure {
        let what = match &step.on_failure {
            Some(msg) => msg.clone(),
            None => format!("step failed: {}", step.what),
        };
        let cmd = runner.render(&action);
        if step.ignore_failure {
            tracing::warn!("{what} (ignored): {cmd}: {detail}");
            return Ok(result.unwrap_or_default());
        }
        return Err(anyhow!("{what}\n  command: {cmd}\n  {detail}"));
    }
    let out = result.expect("success");
    if let Some(var) = &step.capture {
        let value = if runner.is_dry_run() {
            format!("{{{{{var}}}}}")
        } else {
            out.stdout.trim().to_string()
        };
        if !runner.is_dry_run() {
            check_capture(var, &value)?;
        }
        vars.retain(|(k, _)| k != var);
        vars.push((var.clone(), value));
    }
    Ok(out)
}

/// Prints instead of running. Every exec succeeds with empty output; captured values stay
/// `{{name}}` placeholders.
#[derive(Default)]
pub struct DryRun {
    out: Mutex<String>,
}

impl DryRun {
    pub fn new() -> DryRun {
        DryRun::default()
    }
    pub fn take(&self) -> String {
        std::mem::take(&mut *self.out.lock())
    }
    pub fn print(&self, text: &str) {
        let mut o = self.out.lock();
        o.push_str(text);
        o.push('\n');
    }
}

impl Executor for DryRun {
    fn run_container<'a>(&'a self, spec: &'a NodeContainerSpec) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            let mut s = String::new();
            for f in &spec.files {
                match &f.source {
                    crate::plan::container::FileSource::Inline(text) => s.push_str(&format!(
                        "# copied into {} before it starts: {}\n#   ---8<--- {}\n{}\n#   --->8---\n",
                        spec.container_name,
                        f.path,
                        f.path,
                        text.trim_end()
                    )),
                    crate::plan::container::FileSource::HostFile(host) => {
                        s.push_str(&format!("# copied into {} before it starts: {} (from {host})\n", spec.container_name, f.path))
                    }
                }
            }
            s.push_str(&spec.docker_run_command());
            self.print(&s);
            Ok(())
        })
    }
    fn exec<'a>(
        &'a self,
        container: &'a str,
        argv: &'a [String],
        stdin: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Output>> {
        Box::pin(async move {
            match stdin {
                Some(input) => self.print(&format!(
                    "docker exec -i {} {} <<'EOF'\n{}\nEOF",
                    shell::quote(container),
                    shell::join(argv),
                    input.trim_end()
                )),
                None => self.print(&format!(
                    "docker exec {} {}",
                    shell::quote(container),
                    shell::join(argv)
                )),
            }
            Ok(Output::ok(""))
        })
    }
    fn docker<'a>(&'a self, op: &'a DockerOp) -> BoxFuture<'a, Result<Output>> {
        Box::pin(async move {
            self.print(&crate::plan::render_docker(op));
            Ok(Output::ok(""))
        })
    }
    fn api_server_url<'a>(&'a self, _container: &'a str) -> BoxFuture<'a, Result<String>> {
        Box::pin(async { Ok("https://<docker host>:<published port>".to_string()) })
    }
    fn follow<'a>(
        &'a self,
        container: &'a str,
        argv: &'a [String],
    ) -> BoxFuture<'a, Result<mpsc::Receiver<String>>> {
        Box::pin(async move {
            self.print(&format!(
                "docker exec {} {}   # followed for the scenario's log expectations",
                shell::quote(container),
                shell::join(argv)
            ));
            let (_tx, rx) = mpsc::channel(1);
            Ok(rx)
        })
    }
    fn keep_containers(&self) {
        self.print("# --keep-cluster: the containers, volumes and network are left running");
    }
    fn note(&self, text: &str) {
        self.print(text);
    }
    fn is_dry_run(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Retry;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    /// Fails the first `fail` execs, then succeeds with `stdout`.
    struct Flaky {
        fail: usize,
        calls: AtomicUsize,
        stdout: String,
        seen: Mutex<Vec<String>>,
    }
    impl Executor for Flaky {
        fn run_container<'a>(&'a self, _: &'a NodeContainerSpec) -> BoxFuture<'a, Result<()>> {
            Box::pin(async { Ok(()) })
        }
        fn exec<'a>(
            &'a self,
            c: &'a str,
            argv: &'a [String],
            _: Option<&'a str>,
        ) -> BoxFuture<'a, Result<Output>> {
            Box::pin(async move {
                self.seen.lock().push(format!("{c}: {}", argv.join(" ")));
                let n = self.calls.fetch_add(1, Ordering::SeqCst);
                Ok(if n < self.fail {
                    Output {
                        code: 1,
                        stdout: String::new(),
                        stderr: "not yet".into(),
                    }
                } else {
                    Output::ok(self.stdout.clone())
                })
            })
        }
        fn docker<'a>(&'a self, _: &'a DockerOp) -> BoxFuture<'a, Result<Output>> {
            Box::pin(async { Ok(Output::ok("")) })
        }
        fn api_server_url<'a>(&'a self, _: &'a str) -> BoxFuture<'a, Result<String>> {
            Box::pin(async { Ok("https://127.0.0.1:32768".into()) })
        }
        fn follow<'a>(
            &'a self,
            _: &'a str,
            _: &'a [String],
        ) -> BoxFuture<'a, Result<mpsc::Receiver<String>>> {
            Box::pin(async { Ok(mpsc::channel(1).1) })
        }
        fn keep_containers(&self) {}
        fn note(&self, _: &str) {}
    }
    fn flaky(fail: usize, stdout: &str) -> Flaky {
        Flaky {
            fail,
            calls: AtomicUsize::new(0),
            stdout: stdout.into(),
            seen: Mutex::new(vec![]),
        }
    }
    fn names() -> KindNames {
        KindNames {
            cluster: "c".into(),
            control_plane_node: "cp".into(),
        }
    }

    #[tokio::test]
    async fn retries_until_success_and_captures_for_later_steps() {
        let ex = flaky(2, "pvc-123\n");
        let mut s = Step::kubectl("pv", &["get", "pvc", "x"]).capture("pv");
        s.retry = Some(Retry {
            interval: Duration::from_millis(1),
            timeout: Duration::from_secs(5),
        });
        let mut vars = vec![];
        run_step(&ex, &names(), &s, &mut vars).await.unwrap();
        assert_eq!(ex.calls.load(Ordering::SeqCst), 3);
        assert_eq!(vars, vec![("pv".to_string(), "pvc-123".to_string())]);
        run_step(
            &ex,
            &names(),
            &Step::node("use", "w", "umount /x/{{pv}}"),
            &mut vars,
        )
        .await
        .unwrap();
        assert_eq!(
            ex.seen.lock().last().unwrap(),
            "c-w: sh -c umount /x/pvc-123"
        );
    }

    #[tokio::test]
    async fn a_failure_names_the_step_command_and_output_or_the_clear_message() {
        let ex = flaky(100, "");
        let e = run_step(
            &ex,
            &names(),
            &Step::node("check", "w", "test -d /x"),
            &mut vec![],
        )
        .await
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("step failed: check")
                && e.contains("docker exec c-w sh -c 'test -d /x'")
                && e.contains("not yet"),
            "{e}"
        );
        let e = run_step(
            &ex,
            &names(),
            &Step::node("check", "w", "false").on_failure("the host lacks iscsi_tcp"),
            &mut vec![],
        )
        .await
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("the host lacks iscsi_tcp"), "{e}");
        assert!(run_step(
            &ex,
            &names(),
            &Step::node("x", "w", "false").ignore_failure(),
            &mut vec![]
        )
        .await
        .is_ok());
    }

    #[tokio::test]
    async fn an_expected_empty_stdout_is_waited_for() {
        let ex = flaky(0, "pod/x\n");
        let mut s = Step::kubectl("gone", &["get", "pods", "-o", "name"]).expect_empty_stdout();
        s.retry = Some(Retry {
            interval: Duration::from_millis(1),
            timeout: Duration::from_millis(20),
        });
        let e = run_step(&ex, &names(), &s, &mut vec![])
            .await
            .unwrap_err()
            .to_string();
        assert!(e.contains("expected no output, got: pod/x"), "{e}");
        assert!(ex.calls.load(Ordering::SeqCst) > 1, "retried");
        let empty = flaky(0, "");
        run_step(&empty, &names(), &s, &mut vec![]).await.unwrap();
    }

    #[tokio::test]
    async fn captured_values_must_be_names() {
        let ex = flaky(0, "a b; rm -rf /");
        let e = run_step(
            &ex,
            &names(),
            &Step::kubectl("pv", &["get"]).capture("pv"),
            &mut vec![],
        )
        .await
        .unwrap_err();
        assert!(e.to_string().contains("expected a Kubernetes name"), "{e}");
    }

    #[tokio::test]
    async fn exports_the_kubeconfig_with_the_published_server() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kubeconfig").display().to_string();
        let ex = flaky(
            0,
            "apiVersion: v1\nclusters:\n- cluster:\n    server: https://c-cp:6443\n  name: c\n",
        );
        run_step(
            &ex,
            &names(),
            &Step::new(
                "kc",
                Action::ExportKubeconfig {
                    host_path: path.clone(),
                },
            ),
            &mut vec![],
        )
        .await
        .unwrap();
        let got = std::fs::read_to_string(&path).unwrap();
        assert!(
            got.contains("    server: https://127.0.0.1:32768\n") && !got.contains("c-cp:6443"),
            "{got}"
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(
                std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
                0o600
            );
        }
    }

    #[tokio::test]
    async fn dry_run_prints_each_step_once_without_waiting() {
        let d = DryRun::new();
        let s = Step::node("nodes ready", "w", "kubectl get nodes")
            .retry(5, 600)
            .capture("x");
        let mut vars = vec![];
        run_step(&d, &names(), &s, &mut vars).await.unwrap();
        run_step(
            &d,
            &names(),
            &Step::node("use", "w", "echo {{x}}"),
            &mut vars,
        )
        .await
        .unwrap();
        let out = d.take();
        assert_eq!(
            out,
            "# nodes ready (until it succeeds: every 5s, at most 600s) (stdout -> {{x}})\ndocker exec c-w sh -c 'kubectl get nodes'\n# use\ndocker exec c-w sh -c 'echo {{x}}'\n"
        );
    }
}
