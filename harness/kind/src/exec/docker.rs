//! The real executor: node containers through testcontainers (`GenericImage`, privileged,
//! tmpfs, mounts, entrypoint/cmd, files copied in before start, `exec`), engine operations
//! testcontainers does not offer (restart, kill, network connect/disconnect, image save,
//! volume removal) through the bollard client it re-exports.
//!
//! Not run on the machines this was written on (no Docker engine): see docs/kind.md.

use super::{Executor, Output};
use crate::plan::container::{FileSource, MountKind, NodeContainerSpec, API_SERVER_PORT};
use crate::plan::DockerOp;
use anyhow::{anyhow, bail, Context, Result};
use base64::Engine as _;
use futures::future::BoxFuture;
use futures::StreamExt;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::time::Duration;
use testcontainers::bollard::models::{NetworkConnectRequest, NetworkCreateRequest, NetworkDisconnectRequest, PortBinding};
use testcontainers::bollard::query_parameters::{
    InspectContainerOptions, KillContainerOptionsBuilder, LogsOptionsBuilder, RestartContainerOptionsBuilder, StopContainerOptionsBuilder,
};
use testcontainers::bollard::Docker;
use testcontainers::core::{AccessMode, CgroupnsMode, ExecCommand, IntoContainerPort, Mount};
use testcontainers::runners::AsyncRunner;
use testcontainers::{ContainerAsync, GenericImage, ImageExt};
use tokio::io::AsyncBufReadExt;
use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;

/// Largest stdin we pass through an exec argument (Linux limits one argument to 128 KiB).
const MAX_STDIN: usize = 96 * 1024;

pub struct TestcontainersExecutor {
    docker: Docker,
    containers: Mutex<HashMap<String, std::sync::Arc<ContainerAsync<GenericImage>>>>,
}

impl TestcontainersExecutor {
    /// Connects to the engine the way the docker CLI does (DOCKER_HOST or the local socket).
    pub fn connect() -> Result<TestcontainersExecutor> {
        let docker = Docker::connect_with_defaults().context("connecting to the Docker engine")?;
        Ok(TestcontainersExecutor { docker, containers: Mutex::new(HashMap::new()) })
    }

    /// The engine answers (`docker info`).
    pub async fn ping(&self) -> Result<()> {
        self.docker.ping().await.map(|_| ()).context("the Docker engine does not answer")
    }

    fn container(&self, name: &str) -> Result<std::sync::Arc<ContainerAsync<GenericImage>>> {
        self.containers.lock().get(name).cloned().ok_or_else(|| anyhow!("no node container `{name}` was started by this run"))
    }

    async fn is_connected(&self, network: &str, container: &str) -> Result<bool> {
        let info = self.docker.inspect_container(container, None::<InspectContainerOptions>).await?;
        Ok(info.network_settings.and_then(|n| n.networks).map(|n| n.contains_key(network)).unwrap_or(false))
    }
}

fn request(spec: &NodeContainerSpec) -> testcontainers::core::ContainerRequest<GenericImage> {
    let (name, tag) = crate::versions::split_image(&spec.image);
    let mut image = GenericImage::new(name, tag).with_entrypoint(&spec.entrypoint[0]);
    for p in &spec.ports {
        image = image.with_exposed_port(p.container_port.tcp());
    }
    let cmd: Vec<String> = spec.entrypoint[1..].iter().chain(&spec.cmd).cloned().collect();
    let mut req = image
        .with_cmd(cmd)
        .with_container_name(&spec.container_name)
        .with_hostname(&spec.hostname)
        .with_privileged(spec.privileged)
        .with_cgroupns_mode(if spec.cgroupns == "host" { CgroupnsMode::Host } else { CgroupnsMode::Private })
        .with_network(&spec.network)
        .with_startup_timeout(Duration::from_secs(600));
    for o in &spec.security_opts {
        req = req.with_security_opt(o);
    }
    for m in &spec.mounts {
        let mount = match m.kind {
            MountKind::Tmpfs => Mount::tmpfs_mount(&m.target),
            MountKind::Bind => Mount::bind_mount(&m.source, &m.target),
            MountKind::Volume => Mount::volume_mount(&m.source, &m.target),
        };
        req = req.with_mount(if m.read_only { mount.with_access_mode(AccessMode::ReadOnly) } else { mount });
    }
    for (k, v) in &spec.env {
        req = req.with_env_var(k, v);
    }
    for (k, v) in &spec.labels {
        req = req.with_label(k, v);
    }
    for f in &spec.files {
        req = match &f.source {
            FileSource::Inline(text) => req.with_copy_to(f.path.clone(), text.clone().into_bytes()),
            FileSource::HostFile(path) => req.with_copy_to(f.path.clone(), std::path::PathBuf::from(path)),
        };
    }
    // Publish only the API server, on the chosen host address with an engine-picked port
    // (testcontainers would publish every exposed port on all addresses).
    let ports: Vec<(String, String)> =
        spec.ports.iter().map(|p| (format!("{}/tcp", p.container_port), p.host_ip.clone())).collect();
    let fixed: Vec<Option<u16>> = spec.ports.iter().map(|p| p.host_port).collect();
    req.with_host_config_modifier(move |hc| {
        hc.publish_all_ports = Some(false);
        let mut bindings = HashMap::new();
        for ((port, ip), fixed) in ports.iter().zip(&fixed) {
            bindings.insert(
                port.clone(),
                Some(vec![PortBinding { host_ip: Some(ip.clone()), host_port: Some(fixed.map(|p| p.to_string()).unwrap_or_default()) }]),
            );
        }
        hc.port_bindings = Some(bindings);
    })
}

const EXIT_MARKER: &str = "faultline-exit-code:";

/// Remove the exit-code marker line from stderr.
fn split_exit_marker(stderr: &str) -> (String, Option<i64>) {
    let trimmed = stderr.trim_end_matches('\n');
    match trimmed.rfind(EXIT_MARKER) {
        Some(i) if !trimmed[i..].contains('\n') => {
            let code = trimmed[i + EXIT_MARKER.len()..].trim().parse().ok();
            (trimmed[..i].to_string(), code)
        }
        _ => (stderr.to_string(), None),
    }
}

async fn read_all(mut r: std::pin::Pin<Box<dyn tokio::io::AsyncBufRead + Send + '_>>) -> String {
    let mut buf = Vec::new();
    let _ = tokio::io::AsyncReadExt::read_to_end(&mut r, &mut buf).await;
    String::from_utf8_lossy(&buf).into_owned()
}

impl Executor for TestcontainersExecutor {
    fn run_container<'a>(&'a self, spec: &'a NodeContainerSpec) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            let c = request(spec).start().await.with_context(|| format!("starting node container {}", spec.container_name))?;
            self.containers.lock().insert(spec.container_name.clone(), std::sync::Arc::new(c));
            Ok(())
        })
    }

    fn exec<'a>(&'a self, container: &'a str, argv: &'a [String], stdin: Option<&'a str>) -> BoxFuture<'a, Result<Output>> {
        Box::pin(async move {
            let c = self.container(container)?;
            // testcontainers' exec has no stdin: pass it base64-encoded as an argument.
            let argv: Vec<String> = match stdin {
                None => argv.to_vec(),
                Some(input) => {
                    if input.len() > MAX_STDIN {
                        bail!("stdin of {} bytes is too large to pass through exec", input.len());
                    }
                    let mut v = vec![
                        "sh".to_string(),
                        "-c".into(),
                        "printf %s \"$0\" | base64 -d | \"$@\"".into(),
                        base64::engine::general_purpose::STANDARD.encode(input),
                    ];
                    v.extend(argv.iter().cloned());
                    v
                }
            };
            // The exit code comes back as a marker on stderr: awaiting testcontainers'
            // `ExecResult::exit_code` holds a non-Sync reference, which a Send future cannot.
            let mut wrapped = vec!["sh".to_string(), "-c".into(), format!("\"$@\"; echo \"{EXIT_MARKER}$?\" >&2"), "sh".into()];
            wrapped.extend(argv);
            let mut res = c.exec(ExecCommand::new(wrapped)).await.with_context(|| format!("docker exec {container}"))?;
            let stdout = read_all(res.stdout()).await;
            let stderr_all = read_all(res.stderr()).await;
            let (stderr, code) = split_exit_marker(&stderr_all);
            Ok(Output { code: code.unwrap_or(-1), stdout, stderr })
        })
    }

    fn docker<'a>(&'a self, op: &'a DockerOp) -> BoxFuture<'a, Result<Output>> {
        Box::pin(async move {
            let d = &self.docker;
            match op {
                DockerOp::NetworkCreate { name, labels } => {
                    let exists = d.inspect_network(name, None::<testcontainers::bollard::query_parameters::InspectNetworkOptions>).await.is_ok();
                    if !exists {
                        d.create_network(NetworkCreateRequest {
                            name: name.clone(),
                            driver: Some("bridge".into()),
                            labels: Some(labels.iter().cloned().collect()),
                            ..Default::default()
                        })
                        .await?;
                    }
                }
                DockerOp::NetworkRemove { name } => d.remove_network(name).await?,
                DockerOp::NetworkDisconnect { network, container } => {
                    if self.is_connected(network, container).await? {
                        d.disconnect_network(network, NetworkDisconnectRequest { container: container.clone(), force: Some(true) }).await?;
                    }
                }
                DockerOp::NetworkConnect { network, container } => {
                    if !self.is_connected(network, container).await? {
                        d.connect_network(network, NetworkConnectRequest { container: container.clone(), endpoint_config: None }).await?;
                    }
                }
                DockerOp::Run { spec } => self.run_container(spec).await?,
                DockerOp::Restart { container, grace_secs } => {
                    d.restart_container(container, Some(RestartContainerOptionsBuilder::new().t(*grace_secs as i32).build())).await?
                }
                DockerOp::Stop { container, grace_secs } => {
                    d.stop_container(container, Some(StopContainerOptionsBuilder::new().t(*grace_secs as i32).build())).await?
                }
                DockerOp::Start { container } => {
                    let running = d
                        .inspect_container(container, None::<InspectContainerOptions>)
                        .await?
                        .state
                        .and_then(|s| s.running)
                        .unwrap_or(false);
                    if !running {
                        d.start_container(container, None::<testcontainers::bollard::query_parameters::StartContainerOptions>).await?;
                    }
                }
                DockerOp::Kill { container, signal } => {
                    d.kill_container(container, Some(KillContainerOptionsBuilder::new().signal(signal).build())).await?
                }
                DockerOp::Remove { container } => {
                    let c = self.containers.lock().remove(container);
                    match c.and_then(|c| std::sync::Arc::try_unwrap(c).ok()) {
                        Some(c) => c.rm().await?,
                        None => {
                            d.remove_container(
                                container,
                                Some(testcontainers::bollard::query_parameters::RemoveContainerOptionsBuilder::new().force(true).v(true).build()),
                            )
                            .await?
                        }
                    }
                }
                DockerOp::VolumeRemove { name } => {
                    d.remove_volume(name, Some(testcontainers::bollard::query_parameters::RemoveVolumeOptionsBuilder::new().force(true).build()))
                        .await?
                }
                DockerOp::SaveImage { image, host_path } => {
                    if let Some(dir) = std::path::Path::new(host_path).parent() {
                        tokio::fs::create_dir_all(dir).await?;
                    }
                    let mut f = tokio::fs::File::create(host_path).await.with_context(|| format!("creating {host_path}"))?;
                    let mut s = d.export_image(image);
                    while let Some(chunk) = s.next().await {
                        let chunk = chunk.with_context(|| format!("docker save {image} (build the controller image first)"))?;
                        f.write_all(&chunk).await?;
                    }
                    f.flush().await?;
                }
                DockerOp::Logs { container } => {
                    let mut s = d.logs(container, Some(LogsOptionsBuilder::new().stdout(true).stderr(true).tail("all").build()));
                    let mut text = String::new();
                    while let Some(Ok(l)) = s.next().await {
                        text.push_str(&l.to_string());
                    }
                    return Ok(Output::ok(text));
                }
            }
            Ok(Output::ok(""))
        })
    }

    fn api_server_url<'a>(&'a self, container: &'a str) -> BoxFuture<'a, Result<String>> {
        Box::pin(async move {
            let c = self.container(container)?;
            let port = c.get_host_port_ipv4(API_SERVER_PORT.tcp()).await?;
            let host = c.get_host().await?;
            Ok(format!("https://{host}:{port}"))
        })
    }

    fn follow<'a>(&'a self, container: &'a str, argv: &'a [String]) -> BoxFuture<'a, Result<mpsc::Receiver<String>>> {
        Box::pin(async move {
            let c = self.container(container)?;
            let argv = argv.to_vec();
            let (tx, rx) = mpsc::channel(1024);
            tokio::spawn(async move {
                let Ok(mut res) = c.exec(ExecCommand::new(argv)).await else { return };
                let mut lines = res.stdout().lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    if tx.send(line).await.is_err() {
                        break;
                    }
                }
            });
            Ok(rx)
        })
    }

    fn keep_containers(&self) {
        for (_, c) in self.containers.lock().drain() {
            // No drop: testcontainers removes a container when its handle drops.
            std::mem::forget(c);
        }
    }

    fn note(&self, text: &str) {
        tracing::info!(target: "faultline_kind", "{}", text.trim_start_matches("# "));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::{ClusterPlanInput, NodeInput};
    use crate::plan::container::{node_container, HostPaths};
    use crate::plan::KindNames;

    #[test]
    fn exit_marker_is_split_off_stderr() {
        assert_eq!(split_exit_marker("oops\nfaultline-exit-code:3\n"), ("oops\n".to_string(), Some(3)));
        assert_eq!(split_exit_marker("faultline-exit-code:0\n"), (String::new(), Some(0)));
        assert_eq!(split_exit_marker("killed"), ("killed".to_string(), None));
    }

    #[test]
    fn testcontainers_request_carries_the_spec() {
        let input = ClusterPlanInput::new("c", vec![NodeInput::control_plane("cp")]);
        let names = KindNames { cluster: "c".into(), control_plane_node: "cp".into() };
        let spec = node_container(&input, &names, &input.nodes[0], "kind: InitConfiguration\n".into(), &HostPaths { images_dir: "/i".into() });
        let req = request(&spec);
        use testcontainers::Image;
        assert_eq!(req.image().name(), "kindest/node");
        assert_eq!(req.image().tag(), crate::versions::NODE_IMAGE.split_once(':').unwrap().1);
        assert_eq!(req.image().entrypoint(), Some("/usr/local/bin/entrypoint"));
        assert_eq!(req.cmd().collect::<Vec<_>>(), ["/sbin/init"]);
        assert!(req.privileged());
        assert_eq!(req.network().as_deref(), Some("faultline-c"));
        assert_eq!(req.container_name().as_deref(), Some("c-cp"));
        let targets: Vec<&str> = req.mounts().filter_map(|m| m.target()).collect();
        assert_eq!(targets, ["/run", "/tmp", "/lib/modules", "/var/lib/containerd"]);
        assert_eq!(req.copy_to_sources().count(), 1);
        assert!(req.host_config_modifier().is_some());
    }
}
