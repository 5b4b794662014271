//! Side by side with the real control plane (issue #28): `scale --against real` and
//! `start --against real`.
//!
//! `scale --against real` runs the same workload twice in one run, sim first:
//! - **sim**: `faultline-sim` in mode `full` (a simulated kubelet per node with its pod workers,
//!   runtime, volume manager, status manager and Lease heartbeats, the scheduler, the DaemonSet,
//!   node lifecycle and garbage collection controllers, Events), in this process;
//! - **real**: etcd v3.6.6 + kube-apiserver v1.35.4 + kube-scheduler v1.35.4
//!   (`faultline-upstream`) with kwok v0.8.0 (`upstream/kwok`, its default Stages) making the
//!   nodes Ready, keeping their Leases and writing each bound pod's Running status.
//!
//! Both sides get the same 1,000 nodes' worth of work through the same client code: namespaces
//! (and their `default` ServiceAccount), then the same pods created by
//! [`scale::spawn_creators`] over the same number of keep-alive connections, then one watch of
//! the pods (label `app=scale`, `fieldSelector=status.phase=Running`) until every pod is seen
//! Running. Reported per side: time from the first create to all Running, create rate, peak
//! RSS (sim: this process's `VmHWM`; real: the peak of the summed `VmRSS` of etcd,
//! kube-apiserver, kube-scheduler and kwok, sampled every 200 ms, and the sum of their
//! `VmHWM`s), and the ratios real/sim.

use crate::http::{send, Target};
use crate::report::Report;
use crate::scale::{self, create_namespaces, join_creators, node_name, spawn_creators, Mode};
use crate::util::{median, percentile, secs, GIB};
use anyhow::{anyhow, bail, ensure, Context, Result};
use bytes::Bytes;
use faultline_upstream::{ControlPlane, Options};
use http_body_util::BodyExt;
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::HashSet;
use std::io;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

/// Which sides `scale --against real` runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sides {
    Both,
    Sim,
    Real,
}

#[derive(Debug, Clone)]
pub struct RealConfig {
    pub nodes: usize,
    pub pods: usize,
    pub namespaces: usize,
    /// Keep-alive connections creating pods, on both sides.
    pub connections: usize,
    pub timing_scale: f64,
    /// The bound on each side's wait for all pods Running (and for nodes Ready).
    pub settle_timeout: Duration,
    pub sides: Sides,
    /// kube-scheduler's client QPS (`--kube-api-qps`; burst twice that); `None`: its default
    /// (50 QPS, burst 100), which caps binding at about 50 pods/s.
    pub scheduler_qps: Option<f32>,
    /// kwok's `podPlayStageParallelism` and `nodePlayStageParallelism`; `None`: its default (4).
    pub kwok_parallelism: Option<usize>,
    /// The directory with etcd, kube-apiserver, kube-scheduler, kwok and kwok-stages.yaml;
    /// default `FAULTLINE_UPSTREAM_BIN`, else what `ci/upstream.sh` builds.
    pub bin_dir: Option<PathBuf>,
    /// Fail the verdict unless the goal of issue #28 is met (sim >= 3x faster to all Running,
    /// <= 0.5x the real side's peak RSS). Without it the verdict asks only that both sides
    /// get every pod Running.
    pub require_goal: bool,
}

impl Default for RealConfig {
    fn default() -> Self {
        RealConfig {
            nodes: 1000,
            pods: 100_000,
            namespaces: 10,
            connections: 32,
            timing_scale: 1.0,
            settle_timeout: Duration::from_secs(1800),
            sides: Sides::Both,
            scheduler_qps: Some(5000.0),
            kwok_parallelism: None,
            bin_dir: None,
            require_goal: false,
        }
    }
}

/// What one side measured.
#[derive(Debug, Clone, Default)]
pub struct Side {
    /// From the start of the cluster to every node Ready.
    pub nodes_ready_secs: f64,
    pub create_secs: f64,
    pub create_lat: Vec<f64>,
    /// From the first create to the watch seeing every pod Running.
    pub running_secs: f64,
    /// Pods seen Running when the wait ended (all of them unless it timed out).
    pub running: usize,
    /// Sim: this process's VmHWM. Real: the sampled peak of the processes' summed VmRSS.
    pub peak_rss: u64,
    /// Real: the sum of each process's own VmHWM (an upper bound of the peak of the sum).
    pub hwm_sum: u64,
    /// Real: each process's VmHWM.
    pub per_process: Vec<(String, u64)>,
    /// Why the side did not finish, if it did not.
    pub error: Option<String>,
}

impl Side {
    fn complete(&self, pods: usize) -> bool {
        self.error.is_none() && self.running >= pods
    }
}

/// The outcome of looking for the real side's binaries.
pub enum Binaries {
    Found(PathBuf),
    /// They cannot be had here (no Go, a refused module, `FAULTLINE_UPSTREAM=off`).
    Skip(String),
}

/// The binaries the real side runs.
pub const REAL_BINARIES: [&str; 4] = ["etcd", "kube-apiserver", "kube-scheduler", "kwok"];

/// Finds the directory holding etcd, kube-apiserver, kube-scheduler, kwok and
/// kwok-stages.yaml: `explicit`, else `FAULTLINE_UPSTREAM_BIN`, else `ci/upstream.sh` builds
/// them (warm cache: no go command). Exit 3 or 4 of the script (no Go, a refused module) and
/// `FAULTLINE_UPSTREAM=off` are a [`Binaries::Skip`]; anything else failing is an error.
pub async fn locate_binaries(explicit: Option<&Path>) -> Result<Binaries> {
    if std::env::var("FAULTLINE_UPSTREAM").as_deref() == Ok("off") {
        return Ok(Binaries::Skip("FAULTLINE_UPSTREAM=off".into()));
    }
    let given = explicit
        .map(Path::to_path_buf)
        .or_else(|| std::env::var_os("FAULTLINE_UPSTREAM_BIN").map(PathBuf::from));
    let has_all = |dir: &Path| {
        REAL_BINARIES.iter().all(|b| dir.join(b).is_file()) && dir.join(KWOK_STAGES).is_file()
    };
    if let Some(dir) = given {
        if has_all(&dir) {
            return Ok(Binaries::Found(dir));
        }
        bail!(
            "{} lacks one of {} and {KWOK_STAGES}: run `bash ci/upstream.sh {}` and point FAULTLINE_UPSTREAM_BIN at the directory it prints",
            dir.display(),
            REAL_BINARIES.join(", "),
            REAL_BINARIES.join(" ")
        );
    }
    let script = faultline_upstream::script();
    let out = tokio::process::Command::new("bash")
        .arg(&script)
        .args(REAL_BINARIES)
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .stdout(Stdio::piped())
        .output()
        .await
        .with_context(|| format!("running {}", script.display()))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprint!("{stderr}");
    let last = |s: &str| s.lines().last().unwrap_or_default().to_string();
    match out.status.code() {
        Some(0) => {
            let dir = PathBuf::from(last(&String::from_utf8_lossy(&out.stdout)));
            ensure!(
                has_all(&dir),
                "ci/upstream.sh printed {} but it lacks the binaries",
                dir.display()
            );
            Ok(Binaries::Found(dir))
        }
        Some(3) | Some(4) => Ok(Binaries::Skip(
            stderr
                .lines()
                .find(|l| l.contains("no Go") || l.contains("too old") || l.contains("refused"))
                .map(str::to_string)
                .unwrap_or_else(|| last(&stderr)),
        )),
        code => bail!(
            "ci/upstream.sh {} failed (exit {code:?}): {}",
            REAL_BINARIES.join(" "),
            last(&stderr)
        ),
    }
}

/// kwok's default Stages, beside the kwok binary (ci/upstream.sh puts them there).
pub const KWOK_STAGES: &str = "kwok-stages.yaml";
/// The annotation kwok's `--manage-nodes-with-annotation-selector` selects.
pub const KWOK_ANNOTATION: &str = "kwok.x-k8s.io/node";

/// The node the real side creates for `worker-<i>`: the sim's own Node object for it (capacity,
/// allocatable, labels, addresses, nodeInfo), without status conditions (kwok's
/// node-initialize Stage sets them, and the phase) and without `nodeInfo.machineID`, annotated
/// for kwok. Its pod CIDR and
/// address are made valid for any index (the sim's `10.244.<i>.0/24` is not past 255, and the
/// real apiserver validates it).
pub fn kwok_node(i: usize) -> Value {
    let name = node_name(i);
    let mut n = faultline_sim::nodes::node_object(
        &name,
        i,
        false,
        &faultline_sim::timing::SimClock::new().now_rfc3339(),
    );
    if let Some(st) = n["status"].as_object_mut() {
        st.remove("conditions");
    }
    // kwok's node Stages render nodeInfo.machineID unquoted: the sim's all-digit ID would turn
    // into a number and fail every patch. kwok leaves it empty when absent.
    if let Some(info) = n["status"]["nodeInfo"].as_object_mut() {
        info.remove("machineID");
    }
    n["metadata"]["annotations"][KWOK_ANNOTATION] = json!("fake");
    n["metadata"]["labels"]["type"] = json!("kwok");
    let cidr = format!("10.{}.{}.0/24", 64 + i / 256, i % 256);
    n["spec"]["podCIDR"] = json!(cidr);
    n["spec"]["podCIDRs"] = json!([cidr]);
    let ip = i + 2;
    n["status"]["addresses"][0]["address"] = json!(format!("172.18.{}.{}", ip / 256, ip % 256));
    n
}

/// A child process in a process group of its own, dying with this process
/// (`PR_SET_PDEATHSIG`, set from a thread that lives as long as the child), stopped by PID.
pub struct Child {
    pub pid: u32,
    pub log: PathBuf,
    exit: mpsc::Receiver<io::Result<std::process::ExitStatus>>,
    exited: bool,
}

impl Child {
    pub fn spawn(program: &Path, args: &[String], log: &Path) -> Result<Child> {
        let out = std::fs::File::create(log)?;
        let err = out.try_clone()?;
        let mut cmd = Command::new(program);
        cmd.args(args)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .process_group(0);
        let parent = std::process::id() as libc::pid_t;
        // SAFETY: runs in the forked child before exec; prctl and getppid are
        // async-signal-safe and nothing is allocated.
        unsafe {
            cmd.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0 {
                    return Err(io::Error::last_os_error());
                }
                if libc::getppid() != parent {
                    return Err(io::Error::other("parent exited during spawn"));
                }
                Ok(())
            });
        }
        let (pid_tx, pid_rx) = mpsc::channel();
        let (exit_tx, exit_rx) = mpsc::channel();
        std::thread::Builder::new()
            .name("faultline-bench-child".into())
            .spawn(move || match cmd.spawn() {
                Ok(mut child) => {
                    let _ = pid_tx.send(Ok(child.id()));
                    let _ = exit_tx.send(child.wait());
                }
                Err(e) => {
                    let _ = pid_tx.send(Err(e));
                }
            })?;
        let pid = pid_rx
            .recv()
            .map_err(|_| anyhow!("the waiter thread died"))?
            .with_context(|| format!("starting {}", program.display()))?;
        Ok(Child {
            pid,
            log: log.to_path_buf(),
            exit: exit_rx,
            exited: false,
        })
    }

    /// Whether it has exited.
    pub fn has_exited(&mut self) -> bool {
        if !self.exited {
            self.exited = !matches!(self.exit.try_recv(), Err(mpsc::TryRecvError::Empty));
        }
        self.exited
    }

    /// SIGTERM to its group, SIGKILL after `grace`; reaped.
    pub fn stop(&mut self, grace: Duration) {
        if self.has_exited() {
            return;
        }
        let group = -(self.pid as libc::pid_t);
        // SAFETY: kill(2) on our own child's process group.
        unsafe { libc::kill(group, libc::SIGTERM) };
        if self.exit.recv_timeout(grace).is_err() {
            // SAFETY: as above.
            unsafe { libc::kill(group, libc::SIGKILL) };
            let _ = self.exit.recv_timeout(Duration::from_secs(10));
        }
        self.exited = true;
    }

    pub fn log_tail(&self, lines: usize) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        self.stop(Duration::from_secs(5));
    }
}

/// (VmRSS, VmHWM) of a process in bytes, from /proc/<pid>/status; zeros once it is gone.
pub fn proc_rss(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|n| n.parse::<u64>().ok())
            .map(|kib| kib * 1024)
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// Samples the summed VmRSS of some processes every `period`, keeping the peak.
pub struct RssSampler {
    peak: Arc<AtomicU64>,
    last: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

impl RssSampler {
    pub fn start(pids: Vec<u32>, period: Duration) -> RssSampler {
        let peak = Arc::new(AtomicU64::new(0));
        let last = Arc::new(AtomicU64::new(0));
        let (p, l) = (peak.clone(), last.clone());
        let task = tokio::spawn(async move {
            loop {
                let sum: u64 = pids.iter().map(|&pid| proc_rss(pid).0).sum();
                l.store(sum, Ordering::Relaxed);
                p.fetch_max(sum, Ordering::Relaxed);
                tokio::time::sleep(period).await;
            }
        });
        RssSampler { peak, last, task }
    }

    pub fn peak(&self) -> u64 {
        self.peak.load(Ordering::Relaxed)
    }

    pub fn last(&self) -> u64 {
        self.last.load(Ordering::Relaxed)
    }
}

impl Drop for RssSampler {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The pods the wait counts: the bench's own (label `app=scale`), Running.
const RUNNING_PODS: &str =
    "/api/v1/pods?labelSelector=app%3Dscale&fieldSelector=status.phase%3DRunning";

#[derive(Deserialize)]
struct Meta {
    #[serde(default)]
    name: String,
    #[serde(default)]
    namespace: String,
    #[serde(rename = "resourceVersion", default)]
    resource_version: String,
}

#[derive(Deserialize, Default)]
struct PodStatus {
    #[serde(default)]
    phase: Option<String>,
}

#[derive(Deserialize)]
struct PodLite {
    metadata: Meta,
    #[serde(default)]
    status: Option<PodStatus>,
}

impl PodLite {
    fn running(&self) -> bool {
        self.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
    }
    fn key(&self) -> String {
        format!("{}/{}", self.metadata.namespace, self.metadata.name)
    }
}

#[derive(Deserialize)]
struct ListMeta {
    #[serde(rename = "resourceVersion", default)]
    resource_version: String,
    #[serde(rename = "continue", default)]
    continue_: Option<String>,
}

#[derive(Deserialize)]
struct PodList {
    metadata: ListMeta,
    #[serde(default)]
    items: Vec<PodLite>,
}

#[derive(Deserialize)]
struct WatchEvent {
    #[serde(rename = "type")]
    kind: String,
    object: Value,
}

/// Lists the Running pods of the bench in pages: their keys and the list's resourceVersion.
async fn list_running(target: &Target) -> Result<(HashSet<String>, String)> {
    let mut c = target.connect().await?;
    let mut running = HashSet::new();
    let mut cont = String::new();
    loop {
        let mut path = format!("{RUNNING_PODS}&limit=5000");
        if !cont.is_empty() {
            path.push_str(&format!("&continue={cont}"));
        }
        let (st, body) = send(&mut c, target.request("GET", &path, None, None)).await?;
        ensure!(
            st.is_success(),
            "LIST {path}: {st} {}",
            String::from_utf8_lossy(&body)
        );
        let list: PodList = serde_json::from_slice(&body).context("decoding a pod list")?;
        running.extend(list.items.iter().filter(|p| p.running()).map(PodLite::key));
        match list.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(next) => cont = next,
            None => return Ok((running, list.metadata.resource_version)),
        }
    }
}

/// Watches the bench's pods from `rv` until `want` are Running (re-watching from the last
/// resourceVersion when the server ends the watch, re-listing when it answers 410 Gone);
/// `seen` follows the count. Returns when the last one was seen.
async fn watch_running(
    target: Target,
    mut rv: String,
    want: usize,
    seen: Arc<AtomicUsize>,
) -> Result<Instant> {
    let mut running: HashSet<String> = HashSet::new();
    loop {
        if running.len() >= want {
            return Ok(Instant::now());
        }
        let mut c = target.connect().await?;
        let path = format!(
            "{RUNNING_PODS}&watch=true&allowWatchBookmarks=true&timeoutSeconds=1800&resourceVersion={rv}"
        );
        c.ready()
            .await
            .map_err(|e| anyhow!("watch connection: {e}"))?;
        let resp = c
            .send_request(target.request("GET", &path, None, None))
            .await?;
        let status = resp.status();
        if status.as_u16() == 410 {
            (running, rv) = list_running(&target).await?;
            seen.store(running.len(), Ordering::Relaxed);
            continue;
        }
        if !status.is_success() {
            let body = resp.into_body().collect().await?.to_bytes();
            bail!("WATCH {path}: {status} {}", String::from_utf8_lossy(&body));
        }
        let mut body = resp.into_body();
        let mut buf: Vec<u8> = Vec::new();
        let mut gone = false;
        'stream: while let Some(frame) = body.frame().await {
            let Ok(data) = frame?.into_data() else {
                continue;
            };
            buf.extend_from_slice(&data);
            let mut start = 0;
            while let Some(nl) = buf[start..].iter().position(|&b| b == b'\n') {
                let line = &buf[start..start + nl];
                start += nl + 1;
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                let ev: WatchEvent = serde_json::from_slice(line).context("a watch event")?;
                if ev.kind == "ERROR" {
                    // 410 Gone (the version is compacted) or another Status: list again.
                    gone = true;
                    break 'stream;
                }
                let pod: PodLite =
                    serde_json::from_value(ev.object).context("a watch event's object")?;
                if !pod.metadata.resource_version.is_empty() {
                    rv = pod.metadata.resource_version.clone();
                }
                match ev.kind.as_str() {
                    "ADDED" | "MODIFIED" if pod.running() => {
                        running.insert(pod.key());
                    }
                    "ADDED" | "MODIFIED" | "DELETED" => {
                        running.remove(&pod.key());
                    }
                    _ => {}
                }
                seen.store(running.len(), Ordering::Relaxed);
                if running.len() >= want {
                    return Ok(Instant::now());
                }
            }
            buf.drain(..start);
        }
        if gone {
            (running, rv) = list_running(&target).await?;
            seen.store(running.len(), Ordering::Relaxed);
        }
    }
}

/// A task aborted when this is dropped (an early return included).
struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// What the shared workload measured.
struct Workload {
    create_secs: f64,
    create_lat: Vec<f64>,
    running_secs: f64,
    running: usize,
    timed_out: bool,
}

/// The part both sides share: namespaces and their `default` ServiceAccount (201, or 409
/// where a controller made it first), the watch, the pods through [`spawn_creators`], the
/// wait for all Running. `progress` adds a side's own figures to the line printed every 10 s.
async fn workload(
    label: &str,
    target: &Target,
    cfg: &RealConfig,
    progress: &(dyn Fn() -> String + Sync),
) -> Result<Workload> {
    create_namespaces(target, cfg.namespaces).await?;
    let mut c = target.connect().await?;
    for n in 0..cfg.namespaces {
        let ns = format!("scale-{n:02}");
        let body = serde_json::to_vec(&json!({
            "apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": "default", "namespace": ns}
        }))?;
        let (st, b) = send(
            &mut c,
            target.request(
                "POST",
                &format!("/api/v1/namespaces/{ns}/serviceaccounts"),
                Some(Bytes::from(body)),
                Some("application/json"),
            ),
        )
        .await?;
        ensure!(
            st.is_success() || st.as_u16() == 409,
            "creating the default ServiceAccount of {ns}: {st} {}",
            String::from_utf8_lossy(&b)
        );
    }
    // The watch starts from the version of an empty list, before the first create.
    let (already, rv) = list_running(target).await?;
    ensure!(
        already.is_empty(),
        "{} bench pods exist already",
        already.len()
    );
    let seen = Arc::new(AtomicUsize::new(0));
    let watch = AbortOnDrop(tokio::spawn(watch_running(
        target.clone(),
        rv,
        cfg.pods,
        seen.clone(),
    )));

    let t_create = Instant::now();
    let next = Arc::new(AtomicUsize::new(0));
    let creators = spawn_creators(
        target,
        cfg.pods,
        cfg.namespaces,
        cfg.connections,
        None,
        &next,
    );
    let mut creators = Box::pin(join_creators(creators));
    let mut create_lat = None;
    let mut create_secs = f64::NAN;
    let mut tick = tokio::time::interval(Duration::from_secs(10));
    tick.tick().await;
    let mut watch = watch;
    let mut last_created = 0;
    let done = loop {
        tokio::select! {
            lat = &mut creators, if create_lat.is_none() => {
                create_secs = secs(t_create.elapsed());
                create_lat = Some(lat?);
            }
            done = &mut watch.0 => break Some(done??),
            _ = tick.tick() => {
                let created = next.load(Ordering::Relaxed).min(cfg.pods);
                eprintln!(
                    "{label}: {:.0} s after the first create: {created}/{} created ({} pods/s), {} Running; {}",
                    t_create.elapsed().as_secs_f64(),
                    cfg.pods,
                    (created - last_created) / 10,
                    seen.load(Ordering::Relaxed),
                    progress()
                );
                last_created = created;
                if t_create.elapsed() > cfg.settle_timeout {
                    break None;
                }
            }
        }
    };
    drop(watch);
    let create_lat = match create_lat {
        Some(l) => l,
        None if done.is_some() => {
            let l = creators.await?;
            create_secs = secs(t_create.elapsed());
            l
        }
        None => Vec::new(),
    };
    Ok(Workload {
        create_secs,
        create_lat,
        running_secs: done.map_or(f64::NAN, |at| secs(at - t_create)),
        running: seen.load(Ordering::Relaxed),
        timed_out: done.is_none(),
    })
}

/// The sim side: mode `full` with `cfg.nodes` nodes, this process's memory.
pub async fn run_sim(cfg: &RealConfig) -> Result<Side> {
    let t0 = Instant::now();
    let scfg = scale::ScaleConfig {
        nodes: cfg.nodes,
        pods: cfg.pods,
        namespaces: cfg.namespaces,
        mode: Mode::Full,
        connections: cfg.connections,
        timing_scale: cfg.timing_scale,
        settle_timeout: cfg.settle_timeout,
        ..Default::default()
    };
    let server = scale::start_sim(&scfg).await?;
    let nodes_ready_secs = secs(t0.elapsed());
    let target = Target::new(server.addr, &server.ca_pem, Some(server.token.clone()))?;
    let me = std::process::id();
    let sampler = RssSampler::start(vec![me], Duration::from_millis(200));
    let w = workload("sim", &target, cfg, &|| {
        format!(
            "RSS {:.2} GiB (this process)",
            crate::util::rss_bytes().0 as f64 / GIB
        )
    })
    .await;
    let (_, hwm) = crate::util::rss_bytes();
    drop(sampler);
    server.stop().await;
    let w = w?;
    Ok(Side {
        nodes_ready_secs,
        create_secs: w.create_secs,
        create_lat: w.create_lat,
        running_secs: w.running_secs,
        running: w.running,
        peak_rss: hwm,
        hwm_sum: hwm,
        per_process: vec![("faultline-bench (sim)".into(), hwm)],
        error: w
            .timed_out
            .then(|| format!("timed out after {:?}", cfg.settle_timeout)),
    })
}

/// The real side: etcd + kube-apiserver + kube-scheduler + kwok, their summed memory.
pub async fn run_real(cfg: &RealConfig, bin: &Path) -> Result<Side> {
    let t0 = Instant::now();
    let mut opts = Options {
        scheduler: true,
        bin_dir: Some(bin.to_path_buf()),
        // Without kube-controller-manager nothing would lift the not-ready taint this admission
        // plugin puts on every new Node; kwok makes the nodes Ready instead.
        apiserver_args: vec!["--disable-admission-plugins=TaintNodesByCondition".into()],
        ..Options::default()
    };
    if let Some(qps) = cfg.scheduler_qps {
        opts.scheduler_args = vec![
            format!("--kube-api-qps={qps}"),
            format!("--kube-api-burst={}", (qps * 2.0).round() as u64),
        ];
    }
    let cp = ControlPlane::start(opts)
        .await
        .map_err(|e| anyhow!("starting the real control plane: {e}"))?;
    let addr = cp
        .base_url()
        .trim_start_matches("https://")
        .parse()
        .context("the apiserver's address")?;
    let target = Target::new(addr, cp.ca_pem(), Some(cp.token().to_string()))?;

    // The nodes, over the same connections as the pods.
    let next = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..cfg.connections.max(1) {
        let (target, next, nodes) = (target.clone(), next.clone(), cfg.nodes);
        tasks.push(tokio::spawn(async move {
            let mut c = target.connect().await?;
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed) + 1;
                if i > nodes {
                    return Ok::<_, anyhow::Error>(());
                }
                let body = serde_json::to_vec(&kwok_node(i))?;
                let (st, b) = send(
                    &mut c,
                    target.request(
                        "POST",
                        "/api/v1/nodes",
                        Some(Bytes::from(body)),
                        Some("application/json"),
                    ),
                )
                .await?;
                ensure!(
                    st.is_success(),
                    "creating node {i}: {st} {}",
                    String::from_utf8_lossy(&b)
                );
            }
        }));
    }
    for t in tasks {
        t.await??;
    }

    // kwok: the nodes annotated for it, kwokctl's default Stages, node Leases as kwokctl sets.
    let mut kwok_args = vec![
        format!("--kubeconfig={}", cp.kubeconfig().display()),
        format!("--config={}", bin.join(KWOK_STAGES).display()),
        "--manage-all-nodes=false".into(),
        format!("--manage-nodes-with-annotation-selector={KWOK_ANNOTATION}=fake"),
        "--node-lease-duration-seconds=40".into(),
    ];
    if let Some(n) = cfg.kwok_parallelism {
        let conf = cp.dir().join("kwok-options.yaml");
        std::fs::write(
            &conf,
            format!(
                "apiVersion: config.kwok.x-k8s.io/v1alpha1\nkind: KwokConfiguration\noptions:\n  podPlayStageParallelism: {n}\n  nodePlayStageParallelism: {n}\n  nodeLeaseParallelism: {n}\n"
            ),
        )?;
        kwok_args.push(format!("--config={}", conf.display()));
    }
    let mut kwok = Child::spawn(&bin.join("kwok"), &kwok_args, &cp.dir().join("kwok.log"))?;

    // Every node Ready (kwok's node-initialize Stage).
    let mut c = target.connect().await?;
    loop {
        ensure!(!kwok.has_exited(), "kwok exited:\n{}", kwok.log_tail(25));
        let (st, body) = send(&mut c, target.request("GET", "/api/v1/nodes", None, None)).await?;
        ensure!(st.is_success(), "LIST nodes: {st}");
        let v: Value = serde_json::from_slice(&body)?;
        let ready = v["items"]
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .filter(|n| {
                        n.pointer("/status/conditions")
                            .and_then(Value::as_array)
                            .is_some_and(|cs| {
                                cs.iter()
                                    .any(|c| c["type"] == "Ready" && c["status"] == "True")
                            })
                    })
                    .count()
            })
            .unwrap_or(0);
        if ready >= cfg.nodes {
            break;
        }
        if t0.elapsed() > cfg.settle_timeout {
            bail!(
                "only {ready}/{} nodes Ready after {:?}; kwok's log:\n{}",
                cfg.nodes,
                cfg.settle_timeout,
                kwok.log_tail(25)
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let nodes_ready_secs = secs(t0.elapsed());

    let mut pids: Vec<(String, u32)> = cp
        .pids()
        .into_iter()
        .map(|(n, p)| (n.to_string(), p))
        .collect();
    pids.push(("kwok".into(), kwok.pid));
    let sampler = RssSampler::start(
        pids.iter().map(|(_, p)| *p).collect(),
        Duration::from_millis(200),
    );
    let progress = || {
        format!(
            "RSS {:.2} GiB (etcd + kube-apiserver + kube-scheduler + kwok), bench client {:.2} GiB",
            sampler.last() as f64 / GIB,
            crate::util::rss_bytes().0 as f64 / GIB
        )
    };
    let w = workload("real", &target, cfg, &progress).await;
    let per_process: Vec<(String, u64)> = pids
        .iter()
        .map(|(n, p)| (n.clone(), proc_rss(*p).1))
        .collect();
    let peak = sampler.peak();
    drop(sampler);
    let kwok_alive = !kwok.has_exited();
    let kwok_tail = kwok.log_tail(25);
    kwok.stop(Duration::from_secs(10));
    let scheduler_tail = cp.log_tail("kube-scheduler", 10);
    cp.stop()
        .await
        .map_err(|e| anyhow!("stopping the control plane: {e}"))?;
    let w = w?;
    let error = if w.timed_out {
        Some(format!(
            "timed out after {:?} (kwok {}); kwok's log:\n{kwok_tail}\nkube-scheduler's log:\n{scheduler_tail}",
            cfg.settle_timeout,
            if kwok_alive { "running" } else { "exited" }
        ))
    } else {
        None
    };
    Ok(Side {
        nodes_ready_secs,
        create_secs: w.create_secs,
        create_lat: w.create_lat,
        running_secs: w.running_secs,
        running: w.running,
        peak_rss: peak,
        hwm_sum: per_process.iter().map(|(_, h)| h).sum(),
        per_process,
        error,
    })
}

/// `scale --against real`: both sides (or one), the ratios, and the verdict.
pub async fn run(cfg: &RealConfig) -> Result<Report> {
    let bin = if cfg.sides != Sides::Sim {
        match locate_binaries(cfg.bin_dir.as_deref()).await? {
            Binaries::Found(dir) => Some(dir),
            Binaries::Skip(reason) => {
                let mut r = Report::new("scale-real");
                r.verdict(
                    false,
                    format!("SKIPPED: the real side cannot run here: {reason}"),
                );
                return Ok(r);
            }
        }
    } else {
        None
    };
    let load_before = load_average();
    let sim = if cfg.sides != Sides::Real {
        eprintln!(
            "scale-real: sim side: {} nodes, {} pods",
            cfg.nodes, cfg.pods
        );
        Some(run_sim(cfg).await?)
    } else {
        None
    };
    let real = match &bin {
        Some(bin) => {
            eprintln!(
                "scale-real: real side: {} nodes, {} pods ({})",
                cfg.nodes,
                cfg.pods,
                bin.display()
            );
            Some(run_real(cfg, bin).await?)
        }
        None => None,
    };
    Ok(report(
        cfg,
        sim.as_ref(),
        real.as_ref(),
        load_before,
        load_average(),
    ))
}

/// /proc/loadavg's three averages.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

fn report(
    cfg: &RealConfig,
    sim: Option<&Side>,
    real: Option<&Side>,
    load_before: String,
    load_after: String,
) -> Report {
    let mut r = Report::new("scale-real");
    r.ctx("nodes", cfg.nodes as u64)
        .ctx("pods", cfg.pods as u64)
        .ctx("namespaces", cfg.namespaces as u64)
        .ctx("connections", cfg.connections as u64)
        .ctx("timing_scale", cfg.timing_scale)
        .ctx(
            "scheduler_qps",
            cfg.scheduler_qps
                .map_or("default (50)".to_string(), |q| q.to_string()),
        )
        .ctx(
            "kwok_parallelism",
            cfg.kwok_parallelism
                .map_or("default (4)".to_string(), |n| n.to_string()),
        )
        .ctx("load_average_before", load_before.as_str())
        .ctx("load_average_after", load_after.as_str());
    for (name, side) in [("sim", sim), ("real", real)] {
        let Some(s) = side else { continue };
        r.row(
            &format!("{name}: start -> nodes Ready"),
            s.nodes_ready_secs,
            "s",
        );
        r.row(
            &format!("{name}: time to create all pods"),
            s.create_secs,
            "s",
        );
        r.row(
            &format!("{name}: create rate"),
            cfg.pods as f64 / s.create_secs,
            "pods/s",
        );
        r.row(
            &format!("{name}: create latency p50"),
            median(&s.create_lat) * 1e3,
            "ms",
        );
        r.row(
            &format!("{name}: create latency p99"),
            percentile(&s.create_lat, 99.0) * 1e3,
            "ms",
        );
        r.row(&format!("{name}: pods Running"), s.running as f64, "");
        r.row(
            &format!("{name}: first create -> all Running"),
            s.running_secs,
            "s",
        );
        r.row(
            &format!(
                "{name}: peak RSS{}",
                if name == "sim" {
                    " (VmHWM)"
                } else {
                    " (sampled peak of the sum)"
                }
            ),
            s.peak_rss as f64 / GIB,
            "GiB",
        );
        if name == "real" {
            r.row(
                "real: sum of each process's VmHWM",
                s.hwm_sum as f64 / GIB,
                "GiB",
            );
            for (p, hwm) in &s.per_process {
                r.row(&format!("real: {p} VmHWM"), *hwm as f64 / GIB, "GiB");
            }
        }
    }
    let mut goal = None;
    if let (Some(s), Some(q)) = (sim, real) {
        let time = q.running_secs / s.running_secs;
        let mem = s.peak_rss as f64 / q.peak_rss as f64;
        let mem_hwm = s.peak_rss as f64 / q.hwm_sum as f64;
        r.row_target(
            "time to all Running, real / sim",
            time,
            "x",
            ">= 3x",
            Some(time / 3.0),
        );
        r.row_target(
            "peak RSS, sim / real (sampled peak of the sum)",
            mem,
            "x",
            "<= 0.5x",
            Some(mem / 0.5),
        );
        r.row("peak RSS, sim / real (sum of VmHWMs)", mem_hwm, "x");
        goal = Some((time, mem));
    }
    let complete = |s: Option<&Side>| s.is_none_or(|s| s.complete(cfg.pods));
    let both = complete(sim) && complete(real);
    let goal_met = goal.is_some_and(|(t, m)| t >= 3.0 && m <= 0.5);
    let pass = both && (!cfg.require_goal || goal_met);
    let describe = |name: &str, s: Option<&Side>| match s {
        None => String::new(),
        Some(s) if s.complete(cfg.pods) => format!(
            "{name}: all {} Running {:.1} s after the first create, peak RSS {:.2} GiB; ",
            cfg.pods,
            s.running_secs,
            s.peak_rss as f64 / GIB
        ),
        Some(s) => format!(
            "{name}: only {}/{} Running ({}); ",
            s.running,
            cfg.pods,
            s.error
                .as_deref()
                .unwrap_or("")
                .lines()
                .next()
                .unwrap_or("")
        ),
    };
    let goal_text = match goal {
        Some((t, m)) => format!(
            "real/sim time {t:.2}x (goal >= 3x), sim/real memory {m:.2}x (goal <= 0.5x): goal {}",
            if goal_met { "met" } else { "not met" }
        ),
        None => "one side only".into(),
    };
    r.verdict(
        pass,
        format!(
            "{} nodes + {} pods: {}{}{goal_text}; load average {load_before} -> {load_after}",
            cfg.nodes,
            cfg.pods,
            describe("sim", sim),
            describe("real", real)
        ),
    );
    if let Some(e) = real.and_then(|s| s.error.as_deref()) {
        eprintln!("scale-real: real side: {e}");
    }
    if let Some(e) = sim.and_then(|s| s.error.as_deref()) {
        eprintln!("scale-real: sim side: {e}");
    }
    r
}

/// `start --against real`: etcd + kube-apiserver started to the first successful LIST of pods
/// through kube-rs. From before [`ControlPlane::start`] (certificates, etcd, kube-apiserver,
/// its `/readyz` polled every 100 ms) to the LIST's answer. `Ok(Err(reason))`: the binaries
/// cannot be had here (a skip).
pub async fn start_once(bin: Option<&Path>) -> Result<std::result::Result<Duration, String>> {
    let t0 = Instant::now();
    let cp = match ControlPlane::start(Options {
        bin_dir: bin.map(Path::to_path_buf),
        ..Options::default()
    })
    .await
    {
        Ok(cp) => cp,
        Err(faultline_upstream::Error::Skip(reason)) => return Ok(Err(reason)),
        Err(e) => bail!("starting etcd + kube-apiserver: {e}"),
    };
    let pods: kube::Api<k8s_openapi::api::core::v1::Pod> = kube::Api::all(cp.client());
    let first = loop {
        match pods.list(&kube::api::ListParams::default()).await {
            Ok(_) => break t0.elapsed(),
            Err(_) if t0.elapsed() < Duration::from_secs(120) => {
                tokio::time::sleep(Duration::from_millis(1)).await
            }
            Err(e) => bail!("no successful list within 120 s: {e}"),
        }
    };
    cp.stop()
        .await
        .map_err(|e| anyhow!("stopping the control plane: {e}"))?;
    Ok(Ok(first))
}
