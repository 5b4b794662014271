//! The controller under test as a host process (sim, existing): started with KUBECONFIG, its
//! stdout/stderr captured line by line, killed by a `controllerCrash` fault and started again
//! when the fault heals, stopped when the scenario ends.
//!
//! The process runs in its own process group, so a Ctrl-C at the terminal reaches the harness
//! only and the harness decides when the controller stops; signals go to the whole group, so a
//! controller started through a wrapper (`sh -c`, `cargo run`) stops with its children.

use crate::model::ControllerDef;
use crate::provider::{LogLine, LogSource};
use crate::timeline::{EntryKind, Timeline};
use anyhow::{bail, Context, Result};
use parking_lot::Mutex;
use regex::Regex;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::{broadcast, watch};

pub struct ControllerSpec {
    pub name: String,
    pub program: PathBuf,
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
    pub workdir: PathBuf,
    pub ready_pattern: Option<String>,
}

impl ControllerSpec {
    /// From the suite's definition plus the scenario's extra args/env. `built`: the binary a
    /// `build` made, which is the program (the loader allows no `command` beside it).
    pub fn resolve(
        name: &str,
        def: &ControllerDef,
        built: Option<&Path>,
        suite_dir: &Path,
        extra_args: &[String],
        extra_env: &BTreeMap<String, String>,
    ) -> ControllerSpec {
        let (program, command_args) = match (built, def.command.split_first()) {
            (Some(b), _) => (b.to_path_buf(), &[][..]),
            (None, Some((prog, rest))) => {
                // Absolute, since the process runs in `workdir`.
                let program = if prog.contains('/') && Path::new(prog).is_relative() {
                    std::path::absolute(suite_dir.join(prog))
                        .unwrap_or_else(|_| suite_dir.join(prog))
                } else {
                    PathBuf::from(prog)
                };
                (program, rest)
            }
            // The loader refuses this; spawning the empty path then fails naming the controller.
            (None, None) => (PathBuf::new(), &[][..]),
        };
        let mut args: Vec<String> = command_args.to_vec();
        args.extend(def.args.iter().cloned());
        args.extend(extra_args.iter().cloned());
        let mut env = def.env.clone();
        env.extend(extra_env.clone());
        let workdir = def
            .workdir
            .as_ref()
            .map(|w| suite_dir.join(w))
            .unwrap_or_else(|| suite_dir.to_path_buf());
        ControllerSpec {
            name: name.to_string(),
            program,
            args,
            env,
            workdir,
            ready_pattern: def.ready_pattern.clone(),
        }
    }
}

struct Running {
    pid: i32,
    exited: watch::Receiver<bool>,
}

pub struct ControllerProcess {
    spec: ControllerSpec,
    kubeconfig: PathBuf,
    extra_env: BTreeMap<String, String>,
    logs: broadcast::Sender<LogLine>,
    running: Mutex<Option<Running>>,
    /// Set while the harness itself stops the process, so the exit is not reported as a crash.
    stopping: Arc<AtomicBool>,
    timeline: Timeline,
}

impl ControllerProcess {
    pub fn new(
        spec: ControllerSpec,
        kubeconfig: &Path,
        extra_env: BTreeMap<String, String>,
        timeline: Timeline,
    ) -> Arc<ControllerProcess> {
        Arc::new(ControllerProcess {
            spec,
            kubeconfig: kubeconfig.to_path_buf(),
            extra_env,
            logs: broadcast::channel(4096).0,
            running: Mutex::new(None),
            stopping: Arc::new(AtomicBool::new(false)),
            timeline,
        })
    }

    pub fn subscribe_logs(&self) -> broadcast::Receiver<LogLine> {
        self.logs.subscribe()
    }

    pub fn is_running(&self) -> bool {
        self.running
            .lock()
            .as_ref()
            .is_some_and(|r| !*r.exited.borrow())
    }

    /// Start the process; with a ready pattern, wait (up to `ready_timeout`) for a matching line.
    pub async fn start(&self, ready_timeout: Duration) -> Result<()> {
        if self.is_running() {
            return Ok(());
        }
        let ready = self
            .spec
            .ready_pattern
            .as_deref()
            .map(Regex::new)
            .transpose()?;
        let mut ready_rx = self.logs.subscribe();
        let mut cmd = tokio::process::Command::new(&self.spec.program);
        cmd.args(&self.spec.args)
            .current_dir(&self.spec.workdir)
            .env("KUBECONFIG", &self.kubeconfig)
            .envs(&self.spec.env)
            .envs(&self.extra_env)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        // The controller must not outlive a harness killed with SIGKILL (kill_on_drop never runs
        // then): the kernel kills it when the spawning thread, a runtime worker, is gone.
        // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let mut child = cmd.spawn().with_context(|| {
            format!(
                "starting controller `{}` ({})",
                self.spec.name,
                self.spec.program.display()
            )
        })?;
        let pid = child.id().unwrap_or(0) as i32;
        for out in [
            child
                .stdout
                .take()
                .map(|s| Box::new(s) as Box<dyn tokio::io::AsyncRead + Unpin + Send>),
            child
                .stderr
                .take()
                .map(|s| Box::new(s) as Box<dyn tokio::io::AsyncRead + Unpin + Send>),
        ]
        .into_iter()
        .flatten()
        {
            let tx = self.logs.clone();
            tokio::spawn(async move {
                let mut lines = BufReader::new(out).lines();
                while let Ok(Some(l)) = lines.next_line().await {
                    let _ = tx.send(LogLine {
                        source: LogSource::Controller,
                        node: None,
                        text: l,
                    });
                }
            });
        }
        let (etx, erx) = watch::channel(false);
        let stopping = self.stopping.clone();
        let timeline = self.timeline.clone();
        let name = self.spec.name.clone();
        tokio::spawn(async move {
            let status = child.wait().await;
            if !stopping.load(Ordering::SeqCst) {
                let s = status
                    .map(|s| s.to_string())
                    .unwrap_or_else(|e| e.to_string());
                timeline.record(
                    EntryKind::Controller,
                    format!("controller {name} exited on its own ({s})"),
                );
            }
            let _ = etx.send(true);
        });
        *self.running.lock() = Some(Running {
            pid,
            exited: erx.clone(),
        });
        self.timeline.record(
            EntryKind::Controller,
            format!("controller {} started (pid {pid})", self.spec.name),
        );
        if let Some(re) = ready {
            let mut exited = erx;
            let wait = async {
                loop {
                    tokio::select! {
                        l = ready_rx.recv() => match l {
                            Ok(l) if re.is_match(&l.text) => return Ok(()),
                            Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                            Err(broadcast::error::RecvError::Closed) => bail!("controller output closed"),
                        },
                        _ = exited.wait_for(|e| *e) => bail!("controller `{}` exited before it was ready", self.spec.name),
                    }
                }
            };
            tokio::time::timeout(ready_timeout, wait)
                .await
                .map_err(|_| {
                    anyhow::anyhow!(
                        "controller `{}` not ready within {:?}: no log line matched `{}`",
                        self.spec.name,
                        ready_timeout,
                        re
                    )
                })??;
            self.timeline.record(
                EntryKind::Controller,
                format!("controller {} ready", self.spec.name),
            );
        }
        Ok(())
    }

    /// Send `signal` to the process group and wait (up to `wait`) for the exit.
    async fn signal_and_wait(&self, signal: i32, wait: Duration) -> bool {
        let r = self
            .running
            .lock()
            .as_ref()
            .map(|r| (r.pid, r.exited.clone()));
        let Some((pid, mut exited)) = r else {
            return true;
        };
        if *exited.borrow() {
            return true;
        }
        if pid > 0 {
            // SAFETY: kill(2) with a negative pid signals the process group we created.
            unsafe {
                libc::kill(-pid, signal);
            }
        }
        let ok = tokio::time::timeout(wait, exited.wait_for(|e| *e))
            .await
            .is_ok();
        ok
    }

    /// `controllerCrash`: kill with `signal` (KILL or TERM).
    pub async fn crash(&self, signal: Option<&str>) -> Result<()> {
        let sig = match signal.unwrap_or("KILL") {
            "KILL" | "SIGKILL" => libc::SIGKILL,
            "TERM" | "SIGTERM" => libc::SIGTERM,
            other => bail!("controllerCrash: unsupported signal `{other}` (KILL or TERM)"),
        };
        if !self.is_running() {
            bail!(
                "controllerCrash: controller `{}` is not running",
                self.spec.name
            );
        }
        self.stopping.store(true, Ordering::SeqCst);
        let ok = self.signal_and_wait(sig, Duration::from_secs(5)).await
            || self
                .signal_and_wait(libc::SIGKILL, Duration::from_secs(5))
                .await;
        self.stopping.store(false, Ordering::SeqCst);
        if !ok {
            bail!("controller `{}` did not exit", self.spec.name);
        }
        Ok(())
    }

    /// Stop for good: TERM, then KILL after 3 s.
    pub async fn stop(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        if !self
            .signal_and_wait(libc::SIGTERM, Duration::from_secs(3))
            .await
        {
            self.signal_and_wait(libc::SIGKILL, Duration::from_secs(5))
                .await;
        }
        if self.running.lock().take().is_some() {
            self.timeline.record(
                EntryKind::Controller,
                format!("controller {} stopped", self.spec.name),
            );
        }
    }
}

/// A controller deployed into the cluster from the suite's `manifests` (kind): applied with
/// server-side apply, then the logs of its Deployments' pods are followed into the same stream a
/// host process would feed, so `log` expectations work unchanged. `args` (the suite's, the
/// scenario's and `--controller-arg`, as a host process gets them) are appended to the first
/// container of each Deployment, so a scenario's thresholds hold on kind too.
pub async fn deploy_in_cluster(
    kube: &crate::k8s::Kube,
    manifests: &[std::path::PathBuf],
    args: &[String],
) -> anyhow::Result<broadcast::Receiver<LogLine>> {
    use futures::{AsyncBufReadExt, StreamExt};
    use k8s_openapi::api::core::v1::Pod;
    if manifests.is_empty() {
        anyhow::bail!(
            "the controller has no `manifests` to deploy it into the cluster (needed on kind)"
        );
    }
    let mut selectors: Vec<(String, String)> = vec![];
    for f in manifests {
        for mut o in crate::k8s::read_manifests(f)? {
            with_controller_args(&mut o, args);
            kube.apply(&o, "default").await?;
            if o.get("kind").and_then(serde_json::Value::as_str) == Some("Deployment") {
                let ns = o
                    .pointer("/metadata/namespace")
                    .and_then(serde_json::Value::as_str)
                    .unwrap_or("default")
                    .to_string();
                let labels: Vec<String> = o
                    .pointer("/spec/selector/matchLabels")
                    .and_then(serde_json::Value::as_object)
                    .map(|m| {
                        m.iter()
                            .map(|(k, v)| format!("{}={}", k, v.as_str().unwrap_or("")))
                            .collect()
                    })
                    .unwrap_or_default();
                selectors.push((ns, labels.join(",")));
            }
        }
    }
    let (tx, rx) = broadcast::channel(4096);
    for (ns, selector) in selectors {
        let pods: kube::Api<Pod> = kube::Api::namespaced(kube.client.clone(), &ns);
        let tx = tx.clone();
        tokio::spawn(async move {
            // Follow each pod of the Deployment once it runs; restarts bring new pods.
            let mut followed = std::collections::HashSet::new();
            loop {
                if let Ok(list) = pods
                    .list(&kube::api::ListParams::default().labels(&selector))
                    .await
                {
                    for p in list.items {
                        let name = p.metadata.name.clone().unwrap_or_default();
                        let running =
                            p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running");
                        if !running || !followed.insert(name.clone()) {
                            continue;
                        }
                        let (pods, tx) = (pods.clone(), tx.clone());
                        tokio::spawn(async move {
                            let lp = kube::api::LogParams {
                                follow: true,
                                ..Default::default()
                            };
                            if let Ok(stream) = pods.log_stream(&name, &lp).await {
                                let mut lines = stream.lines();
                                while let Some(Ok(l)) = lines.next().await {
                                    if tx
                                        .send(LogLine {
                                            source: crate::model::LogSourceKind::Controller,
                                            node: None,
                                            text: l,
                                        })
                                        .is_err()
                                    {
                                        break;
                                    }
                                }
                            }
                        });
                    }
                }
                if tx.receiver_count() == 0 {
                    return;
                }
                tokio::time::sleep(std::time::Duration::from_secs(2)).await;
            }
        });
    }
    Ok(rx)
}

/// A Deployment's first container gets `args` after its own.
fn with_controller_args(o: &mut serde_json::Value, args: &[String]) {
    if args.is_empty() || o.get("kind").and_then(serde_json::Value::as_str) != Some("Deployment") {
        return;
    }
    let Some(c) = o.pointer_mut("/spec/template/spec/containers/0") else {
        return;
    };
    let mut all: Vec<serde_json::Value> = c
        .get("args")
        .and_then(serde_json::Value::as_array)
        .cloned()
        .unwrap_or_default();
    all.extend(args.iter().map(|a| serde_json::Value::String(a.clone())));
    c["args"] = serde_json::Value::Array(all);
}

/// For a controller that runs as a ServiceAccount (`serviceAccount: namespace/name`): apply its
/// `rbac` manifests as admin, request a token for the account (TokenRequest) and write a copy of
/// the cluster's kubeconfig whose user carries that token instead of the admin credentials.
pub async fn service_account_kubeconfig(
    kube: &crate::k8s::Kube,
    def: &ControllerDef,
    suite_dir: &Path,
    admin_kubeconfig: &Path,
    out: &Path,
) -> Result<Option<PathBuf>> {
    use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
    use k8s_openapi::api::core::v1::ServiceAccount;
    let Some(account) = &def.service_account else {
        return Ok(None);
    };
    let Some((ns, name)) = account.split_once('/') else {
        bail!("serviceAccount `{account}` is not `namespace/name`")
    };
    for m in &def.rbac {
        for o in crate::k8s::read_manifests(&suite_dir.join(m))? {
            kube.apply(&o, ns).await?;
        }
    }
    let accounts: kube::Api<ServiceAccount> = kube::Api::namespaced(kube.client.clone(), ns);
    // A day: longer than any scenario, so the controller never needs a refresh.
    let request = TokenRequest {
        spec: Some(TokenRequestSpec {
            expiration_seconds: Some(86_400),
            ..Default::default()
        }),
        ..Default::default()
    };
    let issued = accounts
        .create_token_request(name, &Default::default(), &request)
        .await
        .with_context(|| format!("requesting a token for ServiceAccount {account} (do the `rbac` manifests create it?)"))?;
    let token = issued
        .status
        .and_then(|s| s.token)
        .filter(|t| !t.is_empty())
        .with_context(|| format!("the TokenRequest for {account} returned no token"))?;
    let text = std::fs::read_to_string(admin_kubeconfig)
        .with_context(|| format!("reading {}", admin_kubeconfig.display()))?;
    let mut config: serde_yaml::Value = serde_yaml::from_str(&text)
        .with_context(|| format!("parsing {}", admin_kubeconfig.display()))?;
    if let Some(users) = config
        .get_mut("users")
        .and_then(serde_yaml::Value::as_sequence_mut)
    {
        for u in users {
            u["user"] = serde_yaml::to_value(BTreeMap::from([("token", token.as_str())]))?;
        }
    }
    std::fs::write(out, serde_yaml::to_string(&config)?)
        .with_context(|| format!("writing {}", out.display()))?;
    Ok(Some(out.to_path_buf()))
}

#[cfg(test)]
mod tests {
    use super::with_controller_args;
    use serde_json::json;

    #[test]
    fn a_deployments_first_container_gets_the_args_after_its_own() {
        let mut d = json!({"kind": "Deployment", "spec": {"template": {"spec": {"containers": [
            {"name": "controller", "args": ["--a"]}, {"name": "sidecar"}]}}}});
        with_controller_args(&mut d, &["--b=1".into(), "--c".into()]);
        assert_eq!(
            d.pointer("/spec/template/spec/containers/0/args").unwrap(),
            &json!(["--a", "--b=1", "--c"])
        );
        assert!(d.pointer("/spec/template/spec/containers/1/args").is_none());
        // Other kinds, and no args, are left alone.
        let mut sa = json!({"kind": "ServiceAccount", "metadata": {"name": "x"}});
        with_controller_args(&mut sa, &["--b".into()]);
        assert_eq!(
            sa,
            json!({"kind": "ServiceAccount", "metadata": {"name": "x"}})
        );
        let mut d2 = json!({"kind": "Deployment", "spec": {"template": {"spec": {"containers": [{"name": "c"}]}}}});
        with_controller_args(&mut d2, &[]);
        assert!(d2
            .pointer("/spec/template/spec/containers/0/args")
            .is_none());
    }
}
