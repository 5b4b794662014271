//! Starting a simulated cluster: the API on a loopback port with a fresh bearer token, the
//! control-plane loops, the bootstrap objects every cluster has, and a kubeconfig for clients.

use crate::apiserver::auth::x509;
use crate::apiserver::http::faults::ApiFaults;
use crate::apiserver::http::{self, HttpState};
use crate::apiserver::{ApiServer, ApiServerOptions, WriteOptions};
use crate::cluster::{ClusterOptions, SimCluster};
use crate::controllers;
use crate::kubeconfig;
use crate::timing::Timing;
use crate::tls;
use anyhow::{bail, Context, Result};
use serde_json::json;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

#[derive(Debug, Clone)]
pub struct SimOptions {
    /// Loopback address to bind; port 0 picks a free one.
    pub bind: SocketAddr,
    /// Watch history kept for resumption (events); older resourceVersions get 410 Expired.
    pub watch_history: usize,
    /// Worker node names to register (the control plane node is added separately).
    pub nodes: Vec<String>,
    /// Token clients must present; generated when absent.
    pub token: Option<String>,
    /// Simulate the cluster around the API (scheduler, kubelets, Longhorn, ...). `None` serves
    /// the API alone, with the nodes registered as static Ready objects.
    pub cluster: Option<ClusterOptions>,
    /// Seed of the generator behind injected API errors (same seed, same failed requests).
    pub seed: u64,
    /// kube-apiserver's flags beyond the sim's defaults (service CIDR, admission plugins).
    pub api: ApiServerOptions,
    /// Serve these certificate files (and verify client certificates against their client CA)
    /// instead of a generated CA, serving and admin certificate.
    pub tls: Option<tls::TlsFiles>,
    /// Run the kube-controller-manager loops (`controllers::start`): garbage collection,
    /// namespace deletion, ServiceAccounts, the workload controllers. Off, only what
    /// kube-apiserver itself runs (CRD registration and finalizer, Event TTL) runs, like envtest.
    pub controller_manager: bool,
    /// `--service-account-issuer` (default `tokens::ISSUER`, kubeadm's).
    pub service_account_issuer: Option<String>,
    /// `--anonymous-auth`: requests without credentials are `system:anonymous` (kube-apiserver's
    /// default) instead of a 401 (the sim's default).
    pub anonymous_auth: bool,
    /// Serve the fault endpoints (`/faultline/v1/...`); the envtest drop-in turns them off
    /// unless asked (`FAULTLINE_ENVTEST_FAULTS=1`).
    pub fault_endpoints: bool,
}

impl Default for SimOptions {
    fn default() -> Self {
        SimOptions {
            bind: SocketAddr::from(([127, 0, 0, 1], 0)),
            watch_history: 10_000,
            nodes: vec![],
            token: None,
            cluster: None,
            seed: 0,
            api: ApiServerOptions::default(),
            tls: None,
            controller_manager: true,
            service_account_issuer: None,
            anonymous_auth: false,
            fault_endpoints: true,
        }
    }
}

impl SimOptions {
    /// The API alone with `n` static worker nodes (worker-01, worker-02, ...).
    pub fn with_workers(n: usize) -> Self {
        SimOptions {
            nodes: (1..=n).map(|i| format!("worker-{:02}", i)).collect(),
            ..Default::default()
        }
    }

    /// A whole simulated cluster: a control-plane node and `n` workers with kubelets, the
    /// scheduler, node lifecycle, DaemonSets and Longhorn, at real speed times `timing.scale`.
    pub fn full(n: usize, timing: Timing) -> Self {
        let mut nodes = vec!["control-plane".to_string()];
        nodes.extend((1..=n).map(|i| format!("worker-{:02}", i)));
        SimOptions {
            nodes,
            cluster: Some(ClusterOptions {
                timing,
                ..Default::default()
            }),
            ..Default::default()
        }
    }
}

/// A running simulated cluster. Dropping it stops the server.
pub struct SimServer {
    pub api: Arc<ApiServer>,
    /// The simulated nodes and controllers, when started with `SimOptions::cluster`.
    pub cluster: Option<Arc<SimCluster>>,
    /// API-level faults (errors, latency) applied to resource requests.
    pub faults: ApiFaults,
    /// The controller's API trace and the perturbations of what it sees (`faultline explore`).
    pub trace: crate::apiserver::http::trace::Tracer,
    pub addr: SocketAddr,
    pub token: String,
    /// PEM of the cluster CA that signed the serving certificate.
    pub ca_pem: String,
    /// The admin client certificate the kubeconfig carries (none with certificates from files).
    pub admin_cert: Option<tls::ClientCert>,
    shutdown: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
    /// The HTTP front end the TLS listener serves, for clients in the same process.
    router: axum::Router,
}

/// Wait until every node in `names` is Ready and free of the `node.kubernetes.io/not-ready`
/// taint; the error names the nodes that were not, with their Ready status.
async fn wait_schedulable(
    api: &ApiServer,
    names: &[String],
    budget: std::time::Duration,
) -> Result<()> {
    let rt = api
        .resource("", "v1", "nodes")
        .map_err(anyhow::Error::msg)?;
    let deadline = std::time::Instant::now() + budget;
    loop {
        let waiting: Vec<String> = names
            .iter()
            .filter_map(|name| {
                let node = api.store.get(&rt.key(), "", name);
                let ready = node.as_ref().and_then(|n| {
                    n.pointer("/status/conditions")?
                        .as_array()?
                        .iter()
                        .find(|c| c["type"] == "Ready")
                        .and_then(|c| c["status"].as_str().map(String::from))
                });
                let tainted = node.as_ref().is_some_and(|n| {
                    n.pointer("/spec/taints")
                        .and_then(serde_json::Value::as_array)
                        .is_some_and(|ts| {
                            ts.iter()
                                .any(|t| t["key"] == "node.kubernetes.io/not-ready")
                        })
                });
                (ready.as_deref() != Some("True") || tainted)
                    .then(|| format!("{name} (Ready={})", ready.as_deref().unwrap_or("absent")))
            })
            .collect();
        if waiting.is_empty() {
            return Ok(());
        }
        if std::time::Instant::now() >= deadline {
            bail!(
                "the simulated nodes did not become schedulable within {budget:?}: {}",
                waiting.join(", ")
            );
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
}

impl SimServer {
    pub async fn start(opts: SimOptions) -> Result<SimServer> {
        if !is_loopback(opts.bind.ip()) {
            bail!("refusing to bind the simulated API server to {}: only loopback addresses are allowed", opts.bind.ip());
        }
        // The cluster's one clock starts now, reading what the given timing's clock reads: the
        // wall clock's time unless a test set it (`SimClock::starting_at`). A clock of its own,
        // so that clusters started from one `Timing` freeze apart.
        let given = opts
            .cluster
            .as_ref()
            .map(|c| c.timing.clock.now())
            .unwrap_or_else(chrono::Utc::now);
        let clock = crate::timing::SimClock::starting_at(given);
        let api = ApiServer::with_options(opts.watch_history, clock.clone(), opts.api.clone());
        let token = opts.token.clone().unwrap_or_else(random_token);
        let listener = TcpListener::bind(opts.bind)
            .await
            .with_context(|| format!("binding {}", opts.bind))?;
        let addr = listener.local_addr()?;
        let timing = Timing {
            clock,
            ..opts
                .cluster
                .as_ref()
                .map(|c| c.timing.clone())
                .unwrap_or_default()
        };
        let mut tasks = if opts.controller_manager {
            controllers::start(api.clone(), timing.clone())
        } else {
            controllers::start_apiserver_only(api.clone(), timing.clone())
        };
        tasks.push(tokio::spawn(crate::apiserver::event_ttl::run(
            api.clone(),
            timing,
        )));
        let static_nodes: &[String] = if opts.cluster.is_some() {
            &[]
        } else {
            &opts.nodes
        };
        bootstrap(&api, static_nodes)?;
        let cluster = opts
            .cluster
            .clone()
            .map(|c| SimCluster::start(api.clone(), &opts.nodes, c));
        let faults = ApiFaults::seeded(opts.seed);
        let trace = crate::apiserver::http::trace::Tracer::default();
        let state = HttpState {
            api: api.clone(),
            auth: Arc::new({
                let mut a = crate::apiserver::auth::Auth::with_issuer(
                    &token,
                    opts.service_account_issuer
                        .as_deref()
                        .unwrap_or(crate::apiserver::auth::tokens::ISSUER),
                );
                a.anonymous = opts.anonymous_auth;
                a
            }),
            token: Arc::new(token.clone()),
            address: Arc::new(addr.to_string()),
            control: cluster.clone().map(|c| c as Arc<dyn http::ControlEndpoint>),
            faults: faults.clone(),
            fault_endpoints: opts.fault_endpoints,
            trace: trace.clone(),
        };
        if let Some(c) = &cluster {
            // As `kind create cluster --wait`: the cluster is handed over once every node is
            // Ready and the node lifecycle controller has taken off the not-ready taint that
            // admission (TaintNodesByCondition) gave it at registration, so nothing created
            // right after the start fails scheduling on a node that is still coming up.
            let names: Vec<String> = c.nodes.keys().cloned().collect();
            if let Err(e) = wait_schedulable(&api, &names, std::time::Duration::from_secs(60)).await
            {
                c.stop();
                tasks.iter().for_each(JoinHandle::abort);
                return Err(e);
            }
        }
        let certs = match &opts.tls {
            Some(files) => tls::from_files(files)?,
            None => tls::generate()?,
        };
        let (shutdown, rx) = watch::channel(false);
        let router = http::router(state);
        tasks.push(tokio::spawn(serve_tls(
            listener,
            tokio_rustls::TlsAcceptor::from(certs.server_config.clone()),
            router.clone(),
            rx,
        )));
        Ok(SimServer {
            api,
            cluster,
            faults,
            trace,
            addr,
            token,
            ca_pem: certs.ca_pem,
            admin_cert: certs.admin,
            shutdown,
            tasks,
            router,
        })
    }

    /// The cluster's one clock (every timestamp it writes or prints reads it).
    pub fn clock(&self) -> &crate::timing::SimClock {
        self.api.clock()
    }

    /// Freeze the cluster: its clock stops and its loops (kubelets and their PLEG, the
    /// scheduler, the controllers, the storage loops, the Event TTL) make no progress until
    /// `thaw`; the API goes on serving, and what clients write is stored for the loops to act on
    /// then. Returns once the passes under way have ended.
    pub async fn freeze(&self) {
        self.clock().freeze().await
    }

    /// Undo `freeze`: the clock goes on from where it stopped.
    pub fn thaw(&self) {
        self.clock().thaw()
    }

    pub fn url(&self) -> String {
        format!("https://{}", self.addr)
    }

    /// Write a kubeconfig for this cluster (context `faultline-sim`).
    pub fn write_kubeconfig(&self, path: &Path) -> Result<PathBuf> {
        kubeconfig::write(
            path,
            &self.url(),
            &self.token,
            &self.ca_pem,
            self.admin_cert.as_ref(),
        )
    }

    /// The HTTP front end as a tower service (`axum::Router` is one), served without a socket:
    /// requests authenticate like over TLS (`Authorization: Bearer <token>`). Cloning is cheap.
    pub fn router(&self) -> axum::Router {
        self.router.clone()
    }

    pub fn kubeconfig_yaml(&self) -> String {
        kubeconfig::render(
            &self.url(),
            &self.token,
            &self.ca_pem,
            self.admin_cert.as_ref(),
        )
    }

    pub async fn stop(mut self) {
        let _ = self.shutdown.send(true);
        if let Some(c) = &self.cluster {
            c.stop();
        }
        for t in self.tasks.drain(..) {
            t.abort();
        }
    }
}

impl Drop for SimServer {
    fn drop(&mut self) {
        let _ = self.shutdown.send(true);
        if let Some(c) = &self.cluster {
            c.stop();
        }
        for t in &self.tasks {
            t.abort();
        }
    }
}

/// Accept TLS connections and serve HTTP/1.1 on each until shutdown, which also ends open
/// watches (their connections are dropped).
async fn serve_tls(
    listener: TcpListener,
    acceptor: tokio_rustls::TlsAcceptor,
    app: axum::Router,
    mut shutdown: watch::Receiver<bool>,
) {
    loop {
        let accepted = tokio::select! {
            _ = shutdown.wait_for(|v| *v) => return,
            r = listener.accept() => r,
        };
        let Ok((tcp, _)) = accepted else { continue };
        let _ = tcp.set_nodelay(true);
        let acceptor = acceptor.clone();
        let app = app.clone();
        let mut stop = shutdown.clone();
        tokio::spawn(async move {
            let Ok(tls) = acceptor.accept(tcp).await else {
                return;
            };
            // rustls only completes a handshake with a certificate the client CA signed; its
            // user is read once per connection.
            let user = tls
                .get_ref()
                .1
                .peer_certificates()
                .and_then(|c| c.first())
                .and_then(|leaf| x509::user_of(leaf));
            let app = match user {
                Some(u) => app.layer(axum::Extension(x509::CertificateUser(u))),
                None => app,
            };
            let svc = hyper_util::service::TowerToHyperService::new(app);
            // with_upgrades: pods/exec, attach and portforward switch the connection to WebSocket or SPDY.
            let conn = hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(tls), svc)
                .with_upgrades();
            tokio::select! {
                _ = conn => {}
                _ = stop.wait_for(|v| *v) => {}
            }
        });
    }
}

fn is_loopback(ip: IpAddr) -> bool {
    ip.is_loopback()
}

fn random_token() -> String {
    use rand::Rng;
    let mut rng = rand::rng();
    (0..40)
        .map(|_| format!("{:x}", rng.random_range(0..16u8)))
        .collect()
}

/// Objects every cluster starts with: the system namespaces, the `kubernetes` service, nodes.
pub(crate) fn bootstrap(api: &ApiServer, nodes: &[String]) -> Result<()> {
    let opts = WriteOptions {
        field_manager: Some("kube-apiserver".into()),
        ..Default::default()
    };
    let ns_rt = api
        .resource("", "v1", "namespaces")
        .map_err(anyhow::Error::msg)?;
    for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        api.create(
            &ns_rt,
            "",
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
            &opts,
        )
        .map_err(anyhow::Error::msg)?;
    }
    let svc_rt = api
        .resource("", "v1", "services")
        .map_err(anyhow::Error::msg)?;
    // The first address of the service CIDR, as the apiserver's kubernetes-service controller.
    let ip = api.options.service_cidr.first().to_string();
    api.create(
        &svc_rt,
        "default",
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "kubernetes", "labels": {"component": "apiserver", "provider": "kubernetes"}},
               "spec": {"clusterIP": ip, "clusterIPs": [ip], "ports": [{"name": "https", "port": 443, "targetPort": 6443}]}}),
        &opts,
    )
    .map_err(anyhow::Error::msg)?;
    crate::apiserver::auth::bootstrap::create_defaults(api)?;
    // API Priority and Fairness's mandatory and suggested configuration, as kube-apiserver's
    // config producer creates it at start (pkg/registry/flowcontrol/ensurer).
    let apf = WriteOptions {
        field_manager: Some("api-priority-and-fairness-config-producer-v1".into()),
        ..Default::default()
    };
    for obj in crate::apiserver::apf_bootstrap_objects() {
        let plural = match obj["kind"].as_str() {
            Some("FlowSchema") => "flowschemas",
            _ => "prioritylevelconfigurations",
        };
        let rt = api
            .resource("flowcontrol.apiserver.k8s.io", "v1", plural)
            .map_err(anyhow::Error::msg)?;
        api.create(&rt, "", obj, &apf).map_err(anyhow::Error::msg)?;
    }
    let node_rt = api
        .resource("", "v1", "nodes")
        .map_err(anyhow::Error::msg)?;
    for (i, name) in nodes.iter().enumerate() {
        api.create(
            &node_rt,
            "",
            crate::nodes::node_object(name, i, false, &api.clock().now_rfc3339()),
            &opts,
        )
        .map_err(anyhow::Error::msg)?;
        // These nodes stand for ones registered long ago and Ready: the node lifecycle
        // controller's NoSchedule pass has taken off the not-ready taint admission gave them.
        // That controller may already be writing the node (it runs on every node change), so
        // read-modify-write as a client would, again on a conflict.
        let mut attempts = 0;
        loop {
            let Some(current) = api.store.get(&node_rt.key(), "", name) else {
                bail!("node {name} disappeared right after its creation");
            };
            let Some(node) = without_not_ready_taint(&current) else {
                break;
            };
            match api.update_internal(&node_rt, node) {
                Ok(_) => break,
                Err(e) if e.code == 409 && attempts < 20 => attempts += 1,
                Err(e) => return Err(anyhow::Error::msg(e)),
            }
        }
    }
    Ok(())
}

/// The node without the `node.kubernetes.io/not-ready` taint, or None when it has none.
fn without_not_ready_taint(node: &serde_json::Value) -> Option<serde_json::Value> {
    let taints = node.pointer("/spec/taints")?.as_array()?;
    if !taints
        .iter()
        .any(|t| t["key"] == "node.kubernetes.io/not-ready")
    {
        return None;
    }
    let kept: Vec<serde_json::Value> = taints
        .iter()
        .filter(|t| t["key"] != "node.kubernetes.io/not-ready")
        .cloned()
        .collect();
    let mut node = node.clone();
    let spec = node.get_mut("spec")?.as_object_mut()?;
    if kept.is_empty() {
        spec.remove("taints");
    } else {
        spec.insert("taints".into(), json!(kept));
    }
    Some(node)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_not_ready_taint_is_taken_off_and_others_kept() {
        let node = json!({"spec": {"taints": [
            {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"},
            {"key": "dedicated", "value": "db", "effect": "NoSchedule"}]}});
        let out = without_not_ready_taint(&node).unwrap();
        assert_eq!(
            out["spec"]["taints"],
            json!([{"key": "dedicated", "value": "db", "effect": "NoSchedule"}])
        );
        let only = json!({"spec": {"taints": [{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}]}});
        assert!(without_not_ready_taint(&only).unwrap()["spec"]
            .get("taints")
            .is_none());
        assert!(without_not_ready_taint(&out).is_none());
        assert!(without_not_ready_taint(&json!({"spec": {}})).is_none());
    }

    #[tokio::test]
    async fn refuses_non_loopback_bind() {
        let opts = SimOptions {
            bind: "0.0.0.0:0".parse().unwrap(),
            ..Default::default()
        };
        let err = SimServer::start(opts).await.err().expect("must refuse");
        assert!(err.to_string().contains("only loopback"), "{}", err);
    }
}
