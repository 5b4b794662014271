//! A real Kubernetes control plane for tests and benches (issue #28, docs/upstream.md).
//!
//! [`ControlPlane::start`] runs etcd and kube-apiserver (and kube-controller-manager and
//! kube-scheduler when asked) built from `upstream/go.mod` (Kubernetes v1.35.4, etcd v3.6.6) on
//! loopback ports, with a CA, serving certificate, service-account key and static tokens
//! generated into a temporary directory; it returns once `/readyz` answers `ok`. It is envtest's
//! start-up path, without envtest. [`ControlPlane::stop`] (or dropping it) stops each process by
//! PID, SIGTERM then SIGKILL, reaps it and removes the directory; the children also get
//! `PR_SET_PDEATHSIG`, so a killed test leaves none behind.
//!
//! ```no_run
//! # async fn demo() -> Result<(), faultline_upstream::Error> {
//! use faultline_upstream::{ControlPlane, Options};
//! let Some(cp) = ControlPlane::start_or_skip(Options::default()).await else { return Ok(()) };
//! let client = cp.client();
//! // ... kube::Api::<Namespace>::all(client).list(..)
//! cp.stop().await
//! # }
//! ```

mod binaries;
mod certs;
mod error;
mod process;

pub use binaries::script;
pub use error::{Error, Result};

use process::Process;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The binaries [`ControlPlane`] starts.
pub const ETCD: &str = "etcd";
pub const KUBE_APISERVER: &str = "kube-apiserver";
pub const KUBE_CONTROLLER_MANAGER: &str = "kube-controller-manager";
pub const KUBE_SCHEDULER: &str = "kube-scheduler";
pub const KUBECTL: &str = "kubectl";

/// The Kubernetes release `upstream/go.mod` pins, as `/version` reports it.
pub const KUBERNETES_VERSION: &str = "v1.35.4";

/// The Service range, the same as the simulated apiserver's.
pub const SERVICE_CLUSTER_IP_RANGE: &str = "10.96.0.0/12";

/// How many log lines an error carries.
const TAIL_LINES: usize = 25;

/// What to start, and how long to wait for it.
#[derive(Clone, Debug)]
pub struct Options {
    /// Also start kube-controller-manager (Deployments get ReplicaSets and Pods, namespaces
    /// their `default` ServiceAccount, ...).
    pub controller_manager: bool,
    /// Also start kube-scheduler (Pods get bound to Nodes).
    pub scheduler: bool,
    /// `--authorization-mode=Node,RBAC` and the NodeRestriction admission plugin, for runs that
    /// add kubelets; otherwise `RBAC` alone.
    pub node_authorization: bool,
    /// The directory holding the binaries; default `FAULTLINE_UPSTREAM_BIN`, else what
    /// `ci/upstream.sh` builds.
    pub bin_dir: Option<PathBuf>,
    /// The bound on each component's readiness (etcd `/health`, kube-apiserver `/readyz`,
    /// the controllers' `/healthz`).
    pub ready_timeout: Duration,
    /// The bound between SIGTERM and SIGKILL when stopping.
    pub stop_grace: Duration,
    /// Extra kube-apiserver flags, after ours (a later flag wins).
    pub apiserver_args: Vec<String>,
    /// Extra kube-controller-manager flags, after ours.
    pub controller_manager_args: Vec<String>,
    /// Extra kube-scheduler flags, after ours.
    pub scheduler_args: Vec<String>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            controller_manager: false,
            scheduler: false,
            node_authorization: false,
            bin_dir: None,
            ready_timeout: Duration::from_secs(120),
            stop_grace: Duration::from_secs(10),
            apiserver_args: Vec::new(),
            controller_manager_args: Vec::new(),
            scheduler_args: Vec::new(),
        }
    }
}

impl Options {
    /// etcd, kube-apiserver, kube-controller-manager and kube-scheduler.
    pub fn with_controllers() -> Self {
        Options {
            controller_manager: true,
            scheduler: true,
            ..Options::default()
        }
    }

    /// The binaries these options start.
    pub fn binaries(&self) -> Vec<&'static str> {
        let mut names = vec![ETCD, KUBE_APISERVER];
        if self.controller_manager {
            names.push(KUBE_CONTROLLER_MANAGER);
        }
        if self.scheduler {
            names.push(KUBE_SCHEDULER);
        }
        names
    }
}

/// A running control plane. Stopped by [`ControlPlane::stop`] or on drop.
pub struct ControlPlane {
    // Started in order, stopped in reverse.
    procs: Vec<Process>,
    dir: Option<tempfile::TempDir>,
    dir_path: PathBuf,
    bin_dir: PathBuf,
    base_url: String,
    etcd_url: String,
    ca_pem: String,
    token: String,
    kubeconfig: PathBuf,
    certificate_kubeconfig: PathBuf,
    client: kube::Client,
    spawned_at: Instant,
    ready_after: Duration,
    stop_grace: Duration,
}

impl std::fmt::Debug for ControlPlane {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ControlPlane")
            .field("base_url", &self.base_url)
            .field("dir", &self.dir_path)
            .field("pids", &self.pids())
            .finish_non_exhaustive()
    }
}

impl ControlPlane {
    /// Finds (or builds) the binaries, generates the credentials, starts each component and
    /// waits until it is ready. A component that fails to start stops the ones before it.
    pub async fn start(opts: Options) -> Result<ControlPlane> {
        let names = opts.binaries();
        let bin_dir = binaries::locate(opts.bin_dir.as_deref(), &names).await?;
        // Free ports are picked, released, then bound by the child: another process can take
        // one in between. That shows as "address already in use"; fresh ports then.
        let mut attempt = 1;
        loop {
            match start_in(&opts, &bin_dir).await {
                Err(e) if e.is_port_clash() && attempt < 3 => attempt += 1,
                r => return r,
            }
        }
    }

    /// [`ControlPlane::start`] for tests: `None` after printing `SKIPPED: <reason>` when the
    /// binaries cannot be had here; panics on any other error (a binary that is there and
    /// fails must fail the test).
    pub async fn start_or_skip(opts: Options) -> Option<ControlPlane> {
        match ControlPlane::start(opts).await {
            Ok(cp) => Some(cp),
            Err(Error::Skip(reason)) => {
                println!("SKIPPED: {reason}");
                None
            }
            Err(e) => panic!("starting the upstream control plane: {e}"),
        }
    }

    /// `https://127.0.0.1:<port>`.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// `http://127.0.0.1:<port>`, etcd's client URL.
    pub fn etcd_url(&self) -> &str {
        &self.etcd_url
    }

    /// The CA (PEM) that signed kube-apiserver's serving certificate.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// The admin's bearer token (group `system:masters`).
    pub fn token(&self) -> &str {
        &self.token
    }

    /// A kubeconfig for the admin (the CA and the token), for kubectl and client-go.
    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// A kubeconfig for the admin by client certificate (`kubernetes-admin` in
    /// `system:masters`, as kind's): for clients that do not send tokens.
    pub fn certificate_kubeconfig(&self) -> &Path {
        &self.certificate_kubeconfig
    }

    /// A client authenticated as the admin.
    pub fn client(&self) -> kube::Client {
        self.client.clone()
    }

    /// The temporary directory: certificates, kubeconfigs, etcd's data, each component's log
    /// (`<binary>.log`). Removed by stop.
    pub fn dir(&self) -> &Path {
        &self.dir_path
    }

    /// The directory the binaries were taken from.
    pub fn bin_dir(&self) -> &Path {
        &self.bin_dir
    }

    /// The path of `name` in [`ControlPlane::bin_dir`], if it exists there (e.g. kubectl).
    pub fn binary(&self, name: &str) -> Option<PathBuf> {
        let path = self.bin_dir.join(name);
        path.is_file().then_some(path)
    }

    /// Each running component and its PID, in start order.
    pub fn pids(&self) -> Vec<(&'static str, u32)> {
        self.procs.iter().map(|p| (p.name, p.pid)).collect()
    }

    /// When the first process (etcd) was started.
    pub fn spawned_at(&self) -> Instant {
        self.spawned_at
    }

    /// From etcd's start to every component ready.
    pub fn ready_after(&self) -> Duration {
        self.ready_after
    }

    /// The last lines of a component's log.
    pub fn log_tail(&self, binary: &str, lines: usize) -> String {
        process::tail(&self.dir_path.join(format!("{binary}.log")), lines)
    }

    /// Stops every component (SIGTERM to its process group, SIGKILL after
    /// [`Options::stop_grace`]), reaps it and removes the directory.
    pub async fn stop(mut self) -> Result<()> {
        tokio::task::spawn_blocking(move || self.shutdown())
            .await
            .map_err(|e| Error::Io {
                what: "stopping the control plane".into(),
                source: std::io::Error::other(e.to_string()),
            })?
    }

    fn shutdown(&mut self) -> Result<()> {
        let mut first_err = None;
        while let Some(mut p) = self.procs.pop() {
            if let Err(e) = p.stop(self.stop_grace) {
                first_err.get_or_insert(e);
            }
        }
        if let Some(dir) = self.dir.take() {
            if let Err(e) = dir.close() {
                first_err.get_or_insert(Error::Io {
                    what: format!("removing {}", self.dir_path.display()),
                    source: e,
                });
            }
        }
        first_err.map_or(Ok(()), Err)
    }
}

impl Drop for ControlPlane {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}

/// Ports bound at once (so they differ), released when this returns.
fn free_ports<const N: usize>() -> Result<[u16; N]> {
    let listeners = (0..N)
        .map(|_| TcpListener::bind("127.0.0.1:0"))
        .collect::<std::io::Result<Vec<_>>>()
        .map_err(Error::io("picking a free loopback port"))?;
    let mut ports = [0u16; N];
    for (port, l) in ports.iter_mut().zip(&listeners) {
        *port = l
            .local_addr()
            .map_err(Error::io("picking a free loopback port"))?
            .port();
    }
    Ok(ports)
}

fn write(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).map_err(Error::io(format!("writing {}", path.display())))
}

fn arg(flag: &str, value: impl AsRef<std::ffi::OsStr>) -> String {
    format!("--{flag}={}", value.as_ref().to_string_lossy())
}

const DIR_PREFIX: &str = "faultline-upstream-";
/// In each control plane's directory: the PID and start time of the process that owns it.
const OWNER_FILE: &str = "owner";

/// A process's identity for [`OWNER_FILE`]: PID and start time (clock ticks after boot,
/// `/proc/<pid>/stat` field 22), so a reused PID is not taken for the owner.
fn owner_of(pid: u32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let start = stat.rsplit_once(')')?.1.split_whitespace().nth(19)?;
    Some(format!("{pid} {start}"))
}

/// Removes the directories of control planes whose owning process is gone: its processes died
/// with it (`PR_SET_PDEATHSIG`), but a process killed by SIGKILL cannot remove its directory.
/// Runs at every start; returns the directories removed.
pub fn sweep_stale_dirs() -> Vec<PathBuf> {
    let mut removed = Vec::new();
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return removed;
    };
    for entry in entries.flatten() {
        if !entry.file_name().to_string_lossy().starts_with(DIR_PREFIX) {
            continue;
        }
        let path = entry.path();
        // No owner file (yet): being set up right now; not judged.
        let Ok(owner) = std::fs::read_to_string(path.join(OWNER_FILE)) else {
            continue;
        };
        let pid = owner.split_whitespace().next().and_then(|p| p.parse().ok());
        let alive = pid
            .and_then(owner_of)
            .is_some_and(|now| now == owner.trim());
        if !alive && std::fs::remove_dir_all(&path).is_ok() {
            removed.push(path);
        }
    }
    removed
}

async fn start_in(opts: &Options, bin_dir: &Path) -> Result<ControlPlane> {
    sweep_stale_dirs();
    let dir = tempfile::Builder::new()
        .prefix(DIR_PREFIX)
        .tempdir()
        .map_err(Error::io(
            "creating the control plane's temporary directory",
        ))?;
    let d = dir.path().to_path_buf();
    let p = |name: &str| d.join(name);
    if let Some(me) = owner_of(std::process::id()) {
        write(&p(OWNER_FILE), &me)?;
    }

    let pki = certs::generate()?;
    write(&p("ca.crt"), &pki.ca_pem)?;
    write(&p("ca.key"), &pki.ca_key_pem)?;
    write(&p("apiserver.crt"), &pki.serving_pem)?;
    write(&p("apiserver.key"), &pki.serving_key_pem)?;
    write(&p("sa.key"), &pki.sa_key_pem)?;
    write(&p("sa.pub"), &pki.sa_pub_pem)?;
    let admin = certs::token();
    let kcm = certs::token();
    let sched = certs::token();
    // --token-auth-file: token,user,uid,"group,..."; the admin is the sim's (kubeadm's admin
    // name, no uid, system:masters), so what the apiserver records of the requester (a
    // CertificateSigningRequest's spec.username, groups) is the same on both sides.
    write(
        &p("tokens.csv"),
        &format!(
            "{admin},kubernetes-admin,,\"system:masters\"\n\
             {kcm},system:kube-controller-manager,system:kube-controller-manager\n\
             {sched},system:kube-scheduler,system:kube-scheduler\n"
        ),
    )?;

    let [etcd_client, etcd_peer, apiserver_port, kcm_port, sched_port] = free_ports::<5>()?;
    let etcd_url = format!("http://127.0.0.1:{etcd_client}");
    let peer_url = format!("http://127.0.0.1:{etcd_peer}");
    let base_url = format!("https://127.0.0.1:{apiserver_port}");
    let kubeconfig = p("admin.kubeconfig");
    write(
        &kubeconfig,
        &certs::kubeconfig(&base_url, &pki.ca_pem, "admin", &admin),
    )?;
    let certificate_kubeconfig = p("admin-certificate.kubeconfig");
    write(
        &certificate_kubeconfig,
        &certs::kubeconfig_with_certificate(
            &base_url,
            &pki.ca_pem,
            "kubernetes-admin",
            &pki.admin_cert_pem,
            &pki.admin_key_pem,
        ),
    )?;
    write(
        &p("kube-controller-manager.kubeconfig"),
        &certs::kubeconfig(&base_url, &pki.ca_pem, "kube-controller-manager", &kcm),
    )?;
    write(
        &p("kube-scheduler.kubeconfig"),
        &certs::kubeconfig(&base_url, &pki.ca_pem, "kube-scheduler", &sched),
    )?;

    let mut procs: Vec<Process> = Vec::new();
    let spawned_at = Instant::now();
    let etcd_args = vec![
        arg("name", "faultline"),
        arg("data-dir", p("etcd")),
        arg("listen-client-urls", &etcd_url),
        arg("advertise-client-urls", &etcd_url),
        arg("listen-peer-urls", &peer_url),
        arg("initial-advertise-peer-urls", &peer_url),
        arg("initial-cluster", format!("faultline={peer_url}")),
        arg("initial-cluster-state", "new"),
        "--unsafe-no-fsync".into(),
        arg("log-level", "warn"),
    ];
    procs.push(Process::spawn(
        ETCD,
        &bin_dir.join(ETCD),
        &etcd_args,
        &p("etcd.log"),
    )?);
    wait_etcd(&mut procs, etcd_client, opts.ready_timeout).await?;

    let authz = if opts.node_authorization {
        "Node,RBAC"
    } else {
        "RBAC"
    };
    let mut apiserver_args = vec![
        arg("etcd-servers", &etcd_url),
        arg("bind-address", "127.0.0.1"),
        arg("advertise-address", "127.0.0.1"),
        arg("secure-port", apiserver_port.to_string()),
        arg("service-cluster-ip-range", SERVICE_CLUSTER_IP_RANGE),
        arg("authorization-mode", authz),
        arg("token-auth-file", p("tokens.csv")),
        arg("client-ca-file", p("ca.crt")),
        arg("tls-cert-file", p("apiserver.crt")),
        arg("tls-private-key-file", p("apiserver.key")),
        arg(
            "service-account-issuer",
            "https://kubernetes.default.svc.cluster.local",
        ),
        arg("service-account-key-file", p("sa.pub")),
        arg("service-account-signing-key-file", p("sa.key")),
        arg("cert-dir", p("apiserver")),
        arg("allow-privileged", "true"),
        arg("profiling", "false"),
    ];
    if opts.node_authorization {
        apiserver_args.push(arg("enable-admission-plugins", "NodeRestriction"));
    }
    apiserver_args.extend(opts.apiserver_args.iter().cloned());
    procs.push(Process::spawn(
        KUBE_APISERVER,
        &bin_dir.join(KUBE_APISERVER),
        &apiserver_args,
        &p("kube-apiserver.log"),
    )?);
    let kc = kube::config::Kubeconfig::read_from(&kubeconfig)?;
    let config = kube::Config::from_custom_kubeconfig(kc, &Default::default()).await?;
    let client = kube::Client::try_from(config)?;
    wait_http(
        &mut procs,
        KUBE_APISERVER,
        &client,
        "/readyz",
        opts.ready_timeout,
    )
    .await?;

    if opts.controller_manager {
        let kc = p("kube-controller-manager.kubeconfig");
        let mut args = vec![
            arg("kubeconfig", &kc),
            arg("authentication-kubeconfig", &kc),
            arg("authorization-kubeconfig", &kc),
            arg("bind-address", "127.0.0.1"),
            arg("secure-port", kcm_port.to_string()),
            arg("cert-dir", p("kube-controller-manager")),
            arg("leader-elect", "false"),
            arg("use-service-account-credentials", "true"),
            arg("service-account-private-key-file", p("sa.key")),
            arg("root-ca-file", p("ca.crt")),
            arg("cluster-signing-cert-file", p("ca.crt")),
            arg("cluster-signing-key-file", p("ca.key")),
            arg("service-cluster-ip-range", SERVICE_CLUSTER_IP_RANGE),
            arg("profiling", "false"),
        ];
        args.extend(opts.controller_manager_args.iter().cloned());
        procs.push(Process::spawn(
            KUBE_CONTROLLER_MANAGER,
            &bin_dir.join(KUBE_CONTROLLER_MANAGER),
            &args,
            &p("kube-controller-manager.log"),
        )?);
    }
    if opts.scheduler {
        let kc = p("kube-scheduler.kubeconfig");
        let mut args = vec![
            arg("kubeconfig", &kc),
            arg("authentication-kubeconfig", &kc),
            arg("authorization-kubeconfig", &kc),
            arg("bind-address", "127.0.0.1"),
            arg("secure-port", sched_port.to_string()),
            arg("cert-dir", p("kube-scheduler")),
            arg("leader-elect", "false"),
            arg("profiling", "false"),
        ];
        args.extend(opts.scheduler_args.iter().cloned());
        procs.push(Process::spawn(
            KUBE_SCHEDULER,
            &bin_dir.join(KUBE_SCHEDULER),
            &args,
            &p("kube-scheduler.log"),
        )?);
    }
    // Their /healthz, over TLS with the self-signed certificate each generates for itself.
    for (name, port) in [
        (KUBE_CONTROLLER_MANAGER, kcm_port),
        (KUBE_SCHEDULER, sched_port),
    ] {
        if procs.iter().any(|p| p.name == name) {
            let mut config = kube::Config::new(
                format!("https://127.0.0.1:{port}")
                    .parse()
                    .expect("a valid URL"),
            );
            config.accept_invalid_certs = true;
            let health = kube::Client::try_from(config)?;
            wait_http(&mut procs, name, &health, "/healthz", opts.ready_timeout).await?;
        }
    }

    Ok(ControlPlane {
        procs,
        dir_path: d,
        dir: Some(dir),
        bin_dir: bin_dir.to_path_buf(),
        base_url,
        etcd_url,
        ca_pem: pki.ca_pem,
        token: admin,
        kubeconfig,
        certificate_kubeconfig,
        client,
        ready_after: spawned_at.elapsed(),
        spawned_at,
        stop_grace: opts.stop_grace,
    })
}

/// An error if any process has exited: it is named, with its log's last lines.
fn check_alive(procs: &mut [Process]) -> Result<()> {
    for p in procs.iter_mut() {
        if let Some(status) = p.exited().map(str::to_string) {
            return Err(Error::Exited {
                binary: p.name,
                status,
                log: p.log.clone(),
                tail: p.tail(TAIL_LINES),
            });
        }
    }
    Ok(())
}

fn not_ready(procs: &[Process], name: &str, waited: Duration, last: String) -> Error {
    let p = procs
        .iter()
        .find(|p| p.name == name)
        .expect("the process waited for was started");
    Error::NotReady {
        binary: p.name,
        waited,
        last,
        log: p.log.clone(),
        tail: p.tail(TAIL_LINES),
    }
}

const POLL: Duration = Duration::from_millis(100);

/// etcd's `/health` says `"health":"true"` (plain HTTP on loopback; no client needed).
async fn wait_etcd(procs: &mut [Process], port: u16, bound: Duration) -> Result<()> {
    let start = Instant::now();
    let mut last: String;
    loop {
        check_alive(procs)?;
        match etcd_health(port).await {
            Ok(body) if body.contains("\"health\":\"true\"") => return Ok(()),
            Ok(body) => last = body.lines().last().unwrap_or_default().to_string(),
            Err(e) => last = e.to_string(),
        }
        if start.elapsed() > bound {
            return Err(not_ready(procs, ETCD, bound, last));
        }
        tokio::time::sleep(POLL).await;
    }
}

async fn etcd_health(port: u16) -> std::io::Result<String> {
    let io = async {
        let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port)).await?;
        s.write_all(b"GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
            .await?;
        let mut body = String::new();
        s.read_to_string(&mut body).await?;
        Ok(body)
    };
    tokio::time::timeout(Duration::from_secs(5), io)
        .await
        .unwrap_or_else(|_| Err(std::io::Error::other("/health timed out")))
}

/// `path` answers 200 `ok` (`name` is the component that serves it).
async fn wait_http(
    procs: &mut [Process],
    name: &'static str,
    client: &kube::Client,
    path: &str,
    bound: Duration,
) -> Result<()> {
    let start = Instant::now();
    let mut last: String;
    loop {
        check_alive(procs)?;
        let req = http::Request::get(path)
            .body(Vec::new())
            .expect("a valid request");
        let answer = tokio::time::timeout(Duration::from_secs(5), client.request_text(req)).await;
        match answer {
            Ok(Ok(body)) if body.trim() == "ok" => return Ok(()),
            Ok(Ok(body)) => last = body,
            Ok(Err(e)) => last = e.to_string(),
            Err(_) => last = format!("{path} timed out"),
        }
        if start.elapsed() > bound {
            return Err(not_ready(procs, name, bound, last));
        }
        tokio::time::sleep(POLL).await;
    }
}
