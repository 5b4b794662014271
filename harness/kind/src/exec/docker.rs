//! The real executor: node containers started through testcontainers (`GenericImage`,
//! privileged, tmpfs, mounts, entrypoint/cmd, files copied in before start), every other engine
//! operation (exec, restart, kill, network connect/disconnect, image save, removal) through the
//! bollard client, connected to the same engine testcontainers uses (see [`engine_endpoint`]).
//!
//! Ownership: an executor removes only what it created (or adopted from a killed run's
//! journal), so two runs on one engine cannot tear each other down. Container handles are not
//! kept: testcontainers would remove a container when its handle drops, from whatever thread
//! and runtime that happens on; removal is the teardown's job (and `faultline cleanup`'s after
//! a killed run).

use super::{Executor, Output, Owned};
use crate::plan::container::{FileSource, MountKind, NodeContainerSpec, API_SERVER_PORT};
use crate::plan::DockerOp;
use anyhow::{anyhow, bail, Context, Result};
use base64::Engine as _;
use futures::future::BoxFuture;
use futures::StreamExt;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::time::Duration;
use testcontainers::bollard::container::LogOutput;
use testcontainers::bollard::exec::{StartExecOptions, StartExecResults};
use testcontainers::bollard::models::{
    ExecConfig, NetworkConnectRequest, NetworkCreateRequest, NetworkDisconnectRequest, PortBinding,
};
use testcontainers::bollard::query_parameters::{
    CreateImageOptionsBuilder, InspectContainerOptions, InspectNetworkOptions,
    KillContainerOptionsBuilder, ListImagesOptionsBuilder, LogsOptionsBuilder,
    RemoveContainerOptionsBuilder, RemoveVolumeOptionsBuilder, RestartContainerOptionsBuilder,
    StartContainerOptions, StopContainerOptionsBuilder,
};
use testcontainers::bollard::Docker;
use testcontainers::core::{AccessMode, CgroupnsMode, IntoContainerPort, Mount};
use testcontainers::runners::AsyncRunner;
use testcontainers::{GenericImage, ImageExt};
use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;

/// Largest stdin we pass through an exec argument (Linux limits one argument to 128 KiB).
const MAX_STDIN: usize = 96 * 1024;

/// The engine's address, decided once for both Docker clients (testcontainers and bollard):
/// `DOCKER_HOST` when it is set and not empty, else the first local socket that exists (the
/// places testcontainers looks), else the default socket. An empty `DOCKER_HOST` is treated as
/// unset (the docker CLI does the same; both libraries would fail with "URI scheme is not
/// supported"). The result is put back into `DOCKER_HOST`, the only setting testcontainers
/// reads (its `properties-config` feature is off), so both clients talk to one engine.
pub fn engine_endpoint(get: impl Fn(&str) -> Option<String>) -> String {
    if let Some(h) = get("DOCKER_HOST").filter(|h| !h.trim().is_empty()) {
        return h;
    }
    let mut candidates = vec!["/var/run/docker.sock".to_string()];
    if let Some(d) = get("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        candidates.push(format!("{d}/.docker/run/docker.sock"));
        candidates.push(format!("{d}/docker.sock"));
    }
    if let Some(h) = get("HOME").filter(|h| !h.is_empty()) {
        candidates.push(format!("{h}/.docker/run/docker.sock"));
        candidates.push(format!("{h}/.docker/desktop/docker.sock"));
    }
    let found = candidates
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
        .unwrap_or_else(|| "/var/run/docker.sock".into());
    format!("unix://{found}")
}

static ENDPOINT: std::sync::OnceLock<String> = std::sync::OnceLock::new();

fn shared_endpoint() -> &'static str {
    ENDPOINT.get_or_init(|| {
        let e = engine_endpoint(|k| std::env::var(k).ok());
        if std::env::var("DOCKER_HOST").ok().as_deref() != Some(e.as_str()) {
            // Once, before the first testcontainers call of this process reads it.
            std::env::set_var("DOCKER_HOST", &e);
        }
        e
    })
}

fn connect_to(endpoint: &str) -> Result<Docker> {
    const TIMEOUT_SECS: u64 = 600;
    let v = testcontainers::bollard::API_DEFAULT_VERSION;
    let d = if endpoint.starts_with("unix://") {
        Docker::connect_with_unix(endpoint, TIMEOUT_SECS, v)
    } else if endpoint.starts_with("tcp://") || endpoint.starts_with("http://") {
        Docker::connect_with_http(endpoint, TIMEOUT_SECS, v)
    } else {
        bail!(
            "DOCKER_HOST={endpoint}: faultline's kind provider supports unix:// and tcp:// engines"
        );
    };
    d.with_context(|| format!("connecting to the Docker engine at {endpoint}"))
}

pub struct TestcontainersExecutor {
    docker: Docker,
    endpoint: String,
    owned: Mutex<Owned>,
    /// Node image as named by the plan -> the reference found in the engine's store.
    images: Mutex<HashMap<String, String>>,
}

impl TestcontainersExecutor {
    /// Connects to the engine both clients use ([`engine_endpoint`]).
    pub fn connect() -> Result<TestcontainersExecutor> {
        let endpoint = shared_endpoint().to_string();
        let docker = connect_to(&endpoint)?;
        Ok(TestcontainersExecutor {
            docker,
            endpoint,
            owned: Mutex::new(Owned::default()),
            images: Mutex::new(HashMap::new()),
        })
    }

    /// Where the engine is.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The engine answers (`docker info`).
    pub async fn ping(&self) -> Result<()> {
        self.docker
            .ping()
            .await
            .map(|_| ())
            .with_context(|| format!("the Docker engine at {} does not answer", self.endpoint))
    }

    /// The newest real node image in the engine's store (`ci/node-image/build-real.sh` builds
    /// it: `faultline-node:<version>-real-<hash>`), or None. The default node image of a run
    /// that names none: one built here is preferred to pulling kindest/node.
    pub async fn local_real_node_image(&self) -> Result<Option<String>> {
        use crate::versions::{REAL_NODE_IMAGE_REPO, REAL_NODE_IMAGE_TAG_MARK};
        let filters = HashMap::from([("reference", vec![format!("{REAL_NODE_IMAGE_REPO}:*")])]);
        let images = self
            .docker
            .list_images(Some(
                ListImagesOptionsBuilder::new().filters(&filters).build(),
            ))
            .await
            .with_context(|| {
                format!("listing the Docker engine's {REAL_NODE_IMAGE_REPO} images")
            })?;
        Ok(images
            .into_iter()
            .flat_map(|i| i.repo_tags.into_iter().map(move |t| (i.created, t)))
            .filter(|(_, t)| {
                t.strip_prefix(REAL_NODE_IMAGE_REPO)
                    .and_then(|r| r.strip_prefix(':'))
                    .is_some_and(|tag| {
                        tag.starts_with('v') && tag.contains(REAL_NODE_IMAGE_TAG_MARK)
                    })
            })
            .max()
            .map(|(_, t)| t))
    }

    async fn is_connected(&self, network: &str, container: &str) -> Result<bool> {
        let info = self
            .docker
            .inspect_container(container, None::<InspectContainerOptions>)
            .await?;
        Ok(info
            .network_settings
            .and_then(|n| n.networks)
            .map(|n| n.contains_key(network))
            .unwrap_or(false))
    }

    async fn exists(&self, container: &str) -> bool {
        self.docker
            .inspect_container(container, None::<InspectContainerOptions>)
            .await
            .is_ok()
    }

    /// Find `image` in the engine's store, pulling it only when no local image can stand for it.
    /// A `repo:tag@sha256:…` reference also matches a local `repo:tag` that has no repo digest
    /// (`docker load` leaves none) or has that digest.
    async fn ensure_image(&self, image: &str) -> Result<String> {
        if self.docker.inspect_image(image).await.is_ok() {
            return Ok(image.to_string());
        }
        if let Some((tagged, digest)) = image.split_once('@') {
            if let Ok(local) = self.docker.inspect_image(tagged).await {
                let digests = local.repo_digests.unwrap_or_default();
                if digests.is_empty() || digests.iter().any(|d| d.ends_with(digest)) {
                    return Ok(tagged.to_string());
                }
                bail!(
                    "the local image {tagged} is not the pinned {image} (its digests: {}): load the pinned image, or pass --node-image {tagged} to use it anyway",
                    digests.join(", ")
                );
            }
        }
        let mut pull = self.docker.create_image(
            Some(CreateImageOptionsBuilder::new().from_image(image).build()),
            None,
            None,
        );
        let mut failure = None;
        while let Some(item) = pull.next().await {
            if let Err(e) = item {
                failure = Some(e);
                break;
            }
        }
        match failure {
            None if self.docker.inspect_image(image).await.is_ok() => Ok(image.to_string()),
            None => Err(no_image(image, "the pull ended without the image")),
            Some(e) => Err(no_image(image, &e.to_string())),
        }
    }

    async fn published_api_url(&self, container: &str) -> Result<String> {
        let info = self
            .docker
            .inspect_container(container, None::<InspectContainerOptions>)
            .await?;
        let key = format!("{API_SERVER_PORT}/tcp");
        let binding = info
            .network_settings
            .and_then(|n| n.ports)
            .and_then(|p| p.get(&key).cloned().flatten())
            .and_then(|b| b.into_iter().next())
            .ok_or_else(|| anyhow!("{container} publishes no {key} (is it running?)"))?;
        let port = binding
            .host_port
            .filter(|p| !p.is_empty())
            .ok_or_else(|| anyhow!("{container}: {key} has no host port"))?;
        let ip = binding.host_ip.unwrap_or_default();
        // A remote engine publishes on its own host: the kubeconfig names that host.
        let host = match self
            .endpoint
            .strip_prefix("tcp://")
            .or_else(|| self.endpoint.strip_prefix("http://"))
        {
            Some(rest) if ip.is_empty() || ip == "0.0.0.0" => {
                rest.split(':').next().unwrap_or("127.0.0.1").to_string()
            }
            _ if ip.is_empty() || ip == "0.0.0.0" => "127.0.0.1".to_string(),
            _ => ip,
        };
        Ok(format!("https://{host}:{port}"))
    }

    async fn run_exec(&self, container: &str, argv: Vec<String>) -> Result<Output> {
        let exec = self
            .docker
            .create_exec(
                container,
                ExecConfig {
                    attach_stdout: Some(true),
                    attach_stderr: Some(true),
                    cmd: Some(argv),
                    ..Default::default()
                },
            )
            .await
            .with_context(|| format!("docker exec {container}"))?;
        let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
        if let StartExecResults::Attached { mut output, .. } = self
            .docker
            .start_exec(
                &exec.id,
                Some(StartExecOptions {
                    detach: false,
                    tty: false,
                    output_capacity: None,
                }),
            )
            .await?
        {
            while let Some(chunk) = output.next().await {
                match chunk? {
                    LogOutput::StdErr { message } => stderr.extend_from_slice(&message),
                    LogOutput::StdOut { message } | LogOutput::Console { message } => {
                        stdout.extend_from_slice(&message)
                    }
                    LogOutput::StdIn { .. } => {}
                }
            }
        }
        let code = self
            .docker
            .inspect_exec(&exec.id)
            .await?
            .exit_code
            .unwrap_or(-1);
        Ok(Output {
            code,
            stdout: String::from_utf8_lossy(&stdout).into_owned(),
            stderr: String::from_utf8_lossy(&stderr).into_owned(),
        })
    }

    async fn save_image(&self, image: &str, host_path: &str) -> Result<()> {
        let path = std::path::Path::new(host_path);
        if let Some(dir) = path.parent() {
            tokio::fs::create_dir_all(dir).await?;
        }
        // Into a temporary file first: a failed save leaves no tarball for the nodes to load.
        let partial = path.with_extension("tar.partial");
        let result = async {
            let mut f = tokio::fs::File::create(&partial).await.with_context(|| format!("creating {}", partial.display()))?;
            let mut s = self.docker.export_image(image);
            while let Some(chunk) = s.next().await {
                let chunk = chunk.with_context(|| format!("docker save {image}: the image is not in the engine's store (build or load it first)"))?;
                f.write_all(&chunk).await?;
            }
            f.flush().await?;
            anyhow::Ok(())
        }
        .await;
        match result {
            Ok(()) => tokio::fs::rename(&partial, path)
                .await
                .with_context(|| format!("moving {} into place", partial.display())),
            Err(e) => {
                let _ = tokio::fs::remove_file(&partial).await;
                Err(e)
            }
        }
    }
}

/// The engine's answer (the plan's step says what to do on the line before it).
fn no_image(image: &str, why: &str) -> anyhow::Error {
    anyhow!("pull {image}: {why}")
}

fn request(
    spec: &NodeContainerSpec,
    image_ref: &str,
) -> testcontainers::core::ContainerRequest<GenericImage> {
    let (name, tag) = crate::versions::split_image(image_ref);
    let mut image = GenericImage::new(name, tag).with_entrypoint(&spec.entrypoint[0]);
    for p in &spec.ports {
        image = image.with_exposed_port(p.container_port.tcp());
    }
    let cmd: Vec<String> = spec.entrypoint[1..]
        .iter()
        .chain(&spec.cmd)
        .cloned()
        .collect();
    let mut req = image
        .with_cmd(cmd)
        .with_container_name(&spec.container_name)
        .with_hostname(&spec.hostname)
        .with_privileged(spec.privileged)
        .with_cgroupns_mode(if spec.cgroupns == "host" {
            CgroupnsMode::Host
        } else {
            CgroupnsMode::Private
        })
        .with_network(&spec.network)
        .with_startup_timeout(Duration::from_secs(600));
    for o in &spec.security_opts {
        req = req.with_security_opt(o);
    }
    // Bind mounts go through `Binds` (the `docker run --volume` form), which creates a missing
    // source directory as kind's `--volume /lib/modules:/lib/modules:ro` does; the mount API
    // refuses it ("bind source path does not exist") on hosts without /lib/modules.
    let mut binds = vec![];
    for m in &spec.mounts {
        let mount = match m.kind {
            MountKind::Tmpfs => Mount::tmpfs_mount(&m.target),
            MountKind::Bind => {
                binds.push(format!(
                    "{}:{}{}",
                    m.source,
                    m.target,
                    if m.read_only { ":ro" } else { "" }
                ));
                continue;
            }
            MountKind::Volume => Mount::volume_mount(&m.source, &m.target),
        };
        req = req.with_mount(if m.read_only {
            mount.with_access_mode(AccessMode::ReadOnly)
        } else {
            mount
        });
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
            FileSource::HostFile(path) => {
                req.with_copy_to(f.path.clone(), std::path::PathBuf::from(path))
            }
        };
    }
    // Publish only the API server, on the chosen host address with an engine-picked port
    // (testcontainers would publish every exposed port on all addresses).
    let ports: Vec<(String, String)> = spec
        .ports
        .iter()
        .map(|p| (format!("{}/tcp", p.container_port), p.host_ip.clone()))
        .collect();
    let fixed: Vec<Option<u16>> = spec.ports.iter().map(|p| p.host_port).collect();
    req.with_host_config_modifier(move |hc| {
        hc.publish_all_ports = Some(false);
        let mut bindings = HashMap::new();
        for ((port, ip), fixed) in ports.iter().zip(&fixed) {
            bindings.insert(
                port.clone(),
                Some(vec![PortBinding {
                    host_ip: Some(ip.clone()),
                    host_port: Some(fixed.map(|p| p.to_string()).unwrap_or_default()),
                }]),
            );
        }
        hc.port_bindings = Some(bindings);
        if !binds.is_empty() {
            hc.binds
                .get_or_insert_with(Vec::new)
                .extend(binds.iter().cloned());
        }
    })
}

impl Executor for TestcontainersExecutor {
    fn run_container<'a>(&'a self, spec: &'a NodeContainerSpec) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            let image = self
                .images
                .lock()
                .get(&spec.image)
                .cloned()
                .unwrap_or_else(|| spec.image.clone());
            let started = request(spec, &image).start().await;
            // Names are unique per run: a container or volume of this name is this run's, even
            // when the start failed half-way.
            {
                let mut owned = self.owned.lock();
                owned.volumes.extend(spec.named_volumes());
                owned.containers.insert(spec.container_name.clone());
            }
            match started {
                Ok(handle) => {
                    // Not dropped: testcontainers would remove the container (see the module doc).
                    std::mem::forget(handle);
                    Ok(())
                }
                Err(e) => Err(anyhow::Error::new(e)
                    .context(format!("starting node container {}", spec.container_name))),
            }
        })
    }

    fn exec<'a>(
        &'a self,
        container: &'a str,
        argv: &'a [String],
        stdin: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Output>> {
        Box::pin(async move {
            // Passed base64-encoded as an argument (no half-close of an attached stdin needed).
            let argv: Vec<String> = match stdin {
                None => argv.to_vec(),
                Some(input) => {
                    if input.len() > MAX_STDIN {
                        bail!(
                            "stdin of {} bytes is too large to pass through exec",
                            input.len()
                        );
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
            self.run_exec(container, argv).await
        })
    }

    fn docker<'a>(&'a self, op: &'a DockerOp) -> BoxFuture<'a, Result<Output>> {
        Box::pin(async move {
            let d = &self.docker;
            let not_ours = |what: &str, name: &str| {
                Ok(Output::ok(format!(
                    "{what} {name} was not created by this run: left alone"
                )))
            };
            match op {
                DockerOp::EnsureImage { image } => {
                    let found = self.ensure_image(image).await?;
                    self.images.lock().insert(image.clone(), found.clone());
                    return Ok(Output::ok(found));
                }
                DockerOp::NetworkCreate { name, labels } => {
                    if d.inspect_network(name, None::<InspectNetworkOptions>)
                        .await
                        .is_ok()
                    {
                        bail!(
                            "network {name} already exists: another run of this scenario uses it, or a killed run left it \
                             (`faultline cleanup --provider kind` removes a killed run's clusters); this run does not share it"
                        );
                    }
                    d.create_network(NetworkCreateRequest {
                        name: name.clone(),
                        driver: Some("bridge".into()),
                        labels: Some(labels.iter().cloned().collect()),
                        ..Default::default()
                    })
                    .await?;
                    self.owned.lock().networks.insert(name.clone());
                }
                DockerOp::NetworkRemove { name } => {
                    if !self.owned.lock().networks.contains(name) {
                        return not_ours("network", name);
                    }
                    d.remove_network(name).await?;
                    self.owned.lock().networks.remove(name);
                }
                DockerOp::NetworkDisconnect { network, container } => {
                    if self.is_connected(network, container).await? {
                        d.disconnect_network(
                            network,
                            NetworkDisconnectRequest {
                                container: container.clone(),
                                force: Some(true),
                            },
                        )
                        .await?;
                    }
                }
                DockerOp::NetworkConnect { network, container } => {
                    if !self.is_connected(network, container).await? {
                        d.connect_network(
                            network,
                            NetworkConnectRequest {
                                container: container.clone(),
                                endpoint_config: None,
                            },
                        )
                        .await?;
                    }
                }
                DockerOp::Run { spec } => self.run_container(spec).await?,
                DockerOp::Restart {
                    container,
                    grace_secs,
                } => {
                    d.restart_container(
                        container,
                        Some(
                            RestartContainerOptionsBuilder::new()
                                .t(*grace_secs as i32)
                                .build(),
                        ),
                    )
                    .await?
                }
                DockerOp::Stop {
                    container,
                    grace_secs,
                } => {
                    d.stop_container(
                        container,
                        Some(
                            StopContainerOptionsBuilder::new()
                                .t(*grace_secs as i32)
                                .build(),
                        ),
                    )
                    .await?
                }
                DockerOp::Start { container } => {
                    let running = d
                        .inspect_container(container, None::<InspectContainerOptions>)
                        .await?
                        .state
                        .and_then(|s| s.running)
                        .unwrap_or(false);
                    if !running {
                        d.start_container(container, None::<StartContainerOptions>)
                            .await?;
                    }
                }
                DockerOp::Kill { container, signal } => {
                    d.kill_container(
                        container,
                        Some(KillContainerOptionsBuilder::new().signal(signal).build()),
                    )
                    .await?
                }
                DockerOp::Remove { container } => {
                    if !self.owned.lock().containers.contains(container) {
                        return not_ours("container", container);
                    }
                    if self.exists(container).await {
                        d.remove_container(
                            container,
                            Some(
                                RemoveContainerOptionsBuilder::new()
                                    .force(true)
                                    .v(true)
                                    .build(),
                            ),
                        )
                        .await?;
                    }
                    self.owned.lock().containers.remove(container);
                }
                DockerOp::VolumeRemove { name } => {
                    if !self.owned.lock().volumes.contains(name) {
                        return not_ours("volume", name);
                    }
                    if d.inspect_volume(name).await.is_ok() {
                        d.remove_volume(
                            name,
                            Some(RemoveVolumeOptionsBuilder::new().force(true).build()),
                        )
                        .await?;
                    }
                    self.owned.lock().volumes.remove(name);
                }
                DockerOp::SaveImage { image, host_path } => {
                    self.save_image(image, host_path).await?
                }
                DockerOp::Logs { container } => {
                    let mut s = d.logs(
                        container,
                        Some(
                            LogsOptionsBuilder::new()
                                .stdout(true)
                                .stderr(true)
                                .tail("all")
                                .build(),
                        ),
                    );
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
        Box::pin(self.published_api_url(container))
    }

    fn follow<'a>(
        &'a self,
        container: &'a str,
        argv: &'a [String],
    ) -> BoxFuture<'a, Result<mpsc::Receiver<String>>> {
        Box::pin(async move {
            let exec = self
                .docker
                .create_exec(
                    container,
                    ExecConfig {
                        attach_stdout: Some(true),
                        cmd: Some(argv.to_vec()),
                        ..Default::default()
                    },
                )
                .await
                .with_context(|| format!("docker exec {container}"))?;
            let StartExecResults::Attached { mut output, .. } = self
                .docker
                .start_exec(&exec.id, None::<StartExecOptions>)
                .await?
            else {
                bail!("docker exec {container}: not attached");
            };
            let (tx, rx) = mpsc::channel(1024);
            tokio::spawn(async move {
                let mut partial = String::new();
                while let Some(Ok(chunk)) = output.next().await {
                    partial.push_str(&String::from_utf8_lossy(&chunk.into_bytes()));
                    while let Some(i) = partial.find('\n') {
                        let line: String = partial.drain(..=i).collect();
                        if tx
                            .send(line.trim_end_matches('\n').to_string())
                            .await
                            .is_err()
                        {
                            return;
                        }
                    }
                }
            });
            Ok(rx)
        })
    }

    fn keep_containers(&self) {
        // Nothing to do: containers live until a teardown removes them.
    }

    fn owned(&self) -> Owned {
        self.owned.lock().clone()
    }

    fn adopt(&self, owned: &Owned) {
        self.owned.lock().extend(owned);
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
    use testcontainers::bollard::models::HostConfig;

    #[test]
    fn testcontainers_request_carries_the_spec() {
        let input = ClusterPlanInput::new("c", vec![NodeInput::control_plane("cp")]);
        let names = KindNames {
            cluster: "c".into(),
            control_plane_node: "cp".into(),
        };
        let spec = node_container(
            &input,
            &names,
            &input.nodes[0],
            "kind: InitConfiguration\n".into(),
            &HostPaths {
                images_dir: "/i".into(),
            },
        );
        let req = request(&spec, "faultline-node:local");
        use testcontainers::Image;
        assert_eq!(
            (req.image().name(), req.image().tag()),
            ("faultline-node", "local")
        );
        assert_eq!(req.image().entrypoint(), Some("/usr/local/bin/entrypoint"));
        assert_eq!(req.cmd().collect::<Vec<_>>(), ["/sbin/init"]);
        assert!(req.privileged());
        assert_eq!(req.network().as_deref(), Some("faultline-c"));
        assert_eq!(req.container_name().as_deref(), Some("c-cp"));
        let targets: Vec<&str> = req.mounts().filter_map(|m| m.target()).collect();
        assert_eq!(targets, ["/run", "/tmp", "/var/lib/containerd"]);
        assert_eq!(req.copy_to_sources().count(), 1);
        let mut hc = HostConfig::default();
        (req.host_config_modifier().expect("ports and binds"))(&mut hc);
        assert_eq!(
            hc.binds.as_deref(),
            Some(&["/lib/modules:/lib/modules:ro".to_string()][..]),
            "a bind the engine creates when missing"
        );
        assert_eq!(hc.publish_all_ports, Some(false));
        let b = &hc.port_bindings.unwrap()["6443/tcp"];
        assert_eq!(b.as_ref().unwrap()[0].host_ip.as_deref(), Some("127.0.0.1"));
    }

    #[rstest::rstest]
    #[case(&[("DOCKER_HOST", "tcp://docker:2375")], "tcp://docker:2375")]
    #[case(&[("DOCKER_HOST", "")], "unix:///var/run/docker.sock")]
    #[case(&[("DOCKER_HOST", "  ")], "unix:///var/run/docker.sock")]
    #[case(&[], "unix:///var/run/docker.sock")]
    fn one_endpoint_for_both_clients_and_an_empty_docker_host_is_unset(
        #[case] env: &[(&str, &str)],
        #[case] want: &str,
    ) {
        let got = engine_endpoint(|k| {
            env.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        });
        if want.starts_with("unix://") {
            // Whichever local socket exists on this machine; never an empty or schemeless one.
            assert!(
                got.starts_with("unix:///") && got.ends_with(".sock"),
                "{got}"
            );
        } else {
            assert_eq!(got, want);
        }
    }

    #[test]
    fn a_missing_node_image_error_says_what_to_do_on_its_first_line() {
        let input = ClusterPlanInput::new("c", vec![NodeInput::control_plane("cp")]);
        let plan = crate::plan::cluster::cluster_plan(
            &input,
            &HostPaths {
                images_dir: "/i".into(),
            },
            "t",
            "/k",
        )
        .unwrap();
        let step = &plan.bring_up[0];
        assert!(
            matches!(
                step.action,
                crate::plan::Action::Docker(DockerOp::EnsureImage { .. })
            ),
            "{step:?}"
        );
        let first = step.on_failure.as_deref().unwrap();
        assert!(
            first.contains("docker load")
                && first.contains("--node-image")
                && !first.contains('\n'),
            "{first}"
        );
    }
}
