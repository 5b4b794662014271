//! Scale: N simulated nodes and P pods in one process with the control plane running.
//!
//! Mode `full` (the default): every node has its simulated kubelet (pod workers, runtime,
//! status manager, Lease heartbeats), the scheduler binds every pod, the DaemonSet controller
//! runs the Longhorn DaemonSets on every node, node lifecycle and garbage collection run. Pods
//! are created through the HTTP API and counted once the kubelets report them Running.
//! Mode `api`: the API alone with static Ready nodes and pods created already bound
//! (`spec.nodeName`), no kubelets: what the store, LIST and watch cost without the simulation.
//!
//! Reported: time to create, time until all Running (full), RSS, LIST latency of all pods and
//! of one node's pods (fieldSelector=spec.nodeName), and watch fan-out latency from a write to
//! each of W watchers receiving it. Targets (issue #7): RSS < 4 GiB.

use crate::http::{send, send_counting_items, Target};
use crate::report::Report;
use crate::util::{kube_client, median, percentile, rss_bytes, secs, value_heap_bytes, GIB};
use anyhow::{bail, ensure, Context, Result};
use bytes::Bytes;
use faultline_sim::cluster::ClusterOptions;
use faultline_sim::{SimOptions, SimServer, Timing};
use futures::TryStreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, Patch, PatchParams, WatchEvent, WatchParams};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Full,
    Api,
}

#[derive(Debug, Clone)]
pub struct ScaleConfig {
    pub nodes: usize,
    pub pods: usize,
    pub namespaces: usize,
    pub mode: Mode,
    pub watchers: usize,
    /// Writes whose delivery to every watcher is timed.
    pub fanout_writes: usize,
    /// Concurrent connections creating pods.
    pub connections: usize,
    pub timing_scale: f64,
    pub settle_timeout: Duration,
    pub list_repetitions: usize,
}

impl Default for ScaleConfig {
    fn default() -> Self {
        ScaleConfig {
            nodes: 1000,
            pods: 100_000,
            namespaces: 10,
            mode: Mode::Full,
            watchers: 100,
            fanout_writes: 200,
            connections: 32,
            timing_scale: 1.0,
            settle_timeout: Duration::from_secs(900),
            list_repetitions: 5,
        }
    }
}

pub fn node_name(i: usize) -> String {
    format!("worker-{:02}", i)
}

fn pod_body(ns: &str, name: &str, node: Option<&str>) -> Vec<u8> {
    let mut p = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": {"app": "scale", "tier": "bench"}},
        "spec": {"containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10",
                                 "resources": {"requests": {"cpu": "1m", "memory": "1Mi"}}}]}
    });
    if let Some(n) = node {
        p["spec"]["nodeName"] = json!(n);
    }
    serde_json::to_vec(&p).expect("pod json")
}

/// One of the benchmark's own pods (label app=scale); other objects pass too, so that the
/// same filter samples Events.
fn is_bench_pod(o: &Value) -> bool {
    o.get("kind").and_then(Value::as_str) != Some("Pod")
        || o.pointer("/metadata/labels/app").and_then(Value::as_str) == Some("scale")
}

/// The three longest informer queues (a follower behind keeps every queued version alive).
fn backlogs(store: &faultline_sim::store::Store) -> String {
    store
        .informer_backlogs()
        .into_iter()
        .take(3)
        .map(|(at, n)| format!("{at} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn count_pods(server: &SimServer, pred: &dyn Fn(&Value) -> bool) -> usize {
    let key = faultline_sim::resources::ResourceKey::new("", "pods");
    server
        .api
        .store
        .list(&key, None, None, None, pred)
        .items
        .len()
}

fn phase_running(p: &Value) -> bool {
    p.pointer("/status/phase").and_then(Value::as_str) == Some("Running")
}

/// Starts the sim for `cfg` (mode `full`: a kubelet per node and the control plane's
/// controllers; `api`: static nodes) and waits until every node is Ready.
pub async fn start_sim(cfg: &ScaleConfig) -> Result<SimServer> {
    let opts = match cfg.mode {
        Mode::Full => {
            let mut o = SimOptions::full(cfg.nodes, Timing::scaled(cfg.timing_scale));
            // Room for the node CPU/memory of 100 pods each is the default allocatable.
            o.cluster = Some(ClusterOptions {
                timing: Timing::scaled(cfg.timing_scale),
                ..Default::default()
            });
            o
        }
        Mode::Api => SimOptions::with_workers(cfg.nodes),
    };
    let t0 = Instant::now();
    let server = SimServer::start(opts).await?;
    let node_key = faultline_sim::resources::ResourceKey::new("", "nodes");
    let want_nodes = if cfg.mode == Mode::Full {
        cfg.nodes + 1
    } else {
        cfg.nodes
    };
    // Nodes registered and Ready (kubelets post Ready on registration).
    loop {
        let ready = server
            .api
            .store
            .list(&node_key, None, None, None, &|n| {
                n.pointer("/status/conditions")
                    .and_then(Value::as_array)
                    .map(|cs| {
                        cs.iter()
                            .any(|c| c["type"] == "Ready" && c["status"] == "True")
                    })
                    .unwrap_or(false)
            })
            .items
            .len();
        if ready >= want_nodes {
            break;
        }
        if t0.elapsed() > cfg.settle_timeout {
            bail!(
                "only {ready}/{want_nodes} nodes Ready after {:?}",
                cfg.settle_timeout
            );
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(server)
}

/// Namespaces `scale-00` .. for the pods.
pub async fn create_namespaces(target: &Target, namespaces: usize) -> Result<()> {
    let mut c = target.connect().await?;
    for n in 0..namespaces {
        let body = serde_json::to_vec(
            &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": format!("scale-{:02}", n)}}),
        )?;
        let (st, b) = send(
            &mut c,
            target.request(
                "POST",
                "/api/v1/namespaces",
                Some(Bytes::from(body)),
                Some("application/json"),
            ),
        )
        .await?;
        ensure!(
            st.is_success(),
            "creating namespace: {st} {}",
            String::from_utf8_lossy(&b)
        );
    }
    Ok(())
}

pub async fn run(cfg: &ScaleConfig) -> Result<Report> {
    let t0 = Instant::now();
    let (rss0, _) = rss_bytes();
    let server = start_sim(cfg).await?;
    let t_nodes = t0.elapsed();
    let (rss_nodes, _) = rss_bytes();
    let target = Target::new(server.addr, &server.ca_pem, Some(server.token.clone()))?;
    create_namespaces(&target, cfg.namespaces).await?;
    // Pods, over `connections` keep-alive connections.
    let rv_before = server.api.store.current_rv();
    let t_create = Instant::now();
    let next = Arc::new(AtomicUsize::new(0));
    let bind = (cfg.mode == Mode::Api).then_some(cfg.nodes);
    let tasks = spawn_creators(
        &target,
        cfg.pods,
        cfg.namespaces,
        cfg.connections,
        bind,
        &next,
    );
    // Progress every 10 s (the create rate over time shows what grows with the store).
    let progress = {
        let next = next.clone();
        let pods = cfg.pods;
        let api = server.api.clone();
        tokio::spawn(async move {
            let mut last = 0;
            loop {
                tokio::time::sleep(Duration::from_secs(10)).await;
                let n = next.load(Ordering::Relaxed).min(pods);
                eprintln!(
                    "scale: {:.0} s after the first create: {n}/{pods} created ({} pods/s), RSS {:.2} GiB; longest informer queues: {}",
                    t_create.elapsed().as_secs_f64(),
                    (n - last) / 10,
                    rss_bytes().0 as f64 / GIB,
                    backlogs(&api.store)
                );
                last = n;
            }
        })
    };
    let create_lat = join_creators(tasks).await;
    progress.abort();
    let create_lat = create_lat?;
    let create_secs = secs(t_create.elapsed());
    // Until the kubelets report every pod Running.
    let mut running_secs = f64::NAN;
    if cfg.mode == Mode::Full {
        let mut last_progress = Instant::now();
        loop {
            let n = count_pods(&server, &|p| {
                phase_running(p)
                    && p.pointer("/metadata/namespace")
                        .and_then(Value::as_str)
                        .map(|n| n.starts_with("scale-"))
                        .unwrap_or(false)
            });
            if n >= cfg.pods {
                running_secs = secs(t_create.elapsed());
                break;
            }
            if t_create.elapsed() > cfg.settle_timeout {
                bail!(
                    "only {n}/{} pods Running after {:?}",
                    cfg.pods,
                    cfg.settle_timeout
                );
            }
            if last_progress.elapsed() >= Duration::from_secs(10) {
                last_progress = Instant::now();
                eprintln!("scale: {:.0} s after the first create: {n}/{} pods Running, RSS {:.2} GiB; longest informer queues: {}", t_create.elapsed().as_secs_f64(), cfg.pods, rss_bytes().0 as f64 / GIB, backlogs(&server.api.store));
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }
    // Every write takes a resourceVersion: creates, bindings, status writes, Events, leases.
    let writes = server.api.store.current_rv() - rv_before;
    let total_pods = count_pods(&server, &|_| true);
    let (rss, hwm) = rss_bytes();
    let events_key = faultline_sim::resources::ResourceKey::new("", "events");
    let per_type: Vec<_> = server
        .api
        .store
        .resource_keys()
        .into_iter()
        .map(|k| {
            let n = server.api.store.count(&k);
            (k, n)
        })
        .collect();
    let stored: usize = per_type.iter().map(|(_, n)| n).sum();
    let events: usize = per_type
        .iter()
        .filter(|(k, _)| *k == events_key)
        .map(|(_, n)| n)
        .sum();
    // What one pod (of the benchmark's, not the DaemonSets') and one Event take as stored: the
    // JSON value as kept with the managedFields kept apart, and the encoding (a sample).
    let sizes = |key: &faultline_sim::resources::ResourceKey| {
        let items = server
            .api
            .store
            .list_stored(key, None, None, Some(2000), &is_bench_pod, None)
            .items;
        let n = items.len().max(1) as f64;
        let heap: usize = items
            .iter()
            .map(|s| value_heap_bytes(&s.kept()) + s.managed_fields_bytes())
            .sum();
        let json: usize = items
            .iter()
            .map(|s| {
                let mut b = Vec::new();
                s.append_json(&mut b);
                b.len()
            })
            .sum();
        (heap as f64 / n / 1024.0, json as f64 / n / 1024.0)
    };
    // Every stored object's JSON value and managedFields, summed (Events are kept as their
    // encoding only): what
    // the store takes beside the encodings; the rest of the RSS is the components' own state,
    // history, buffers and the allocator.
    let store_heap: usize = per_type
        .iter()
        .filter(|(k, _)| *k != events_key)
        .map(|(k, _)| {
            server
                .api
                .store
                .list_stored(k, None, None, None, &|_| true, None)
                .items
                .iter()
                .map(|s| value_heap_bytes(&s.kept()) + s.managed_fields_bytes())
                .sum::<usize>()
        })
        .sum();
    let (pod_heap, pod_json) = sizes(&faultline_sim::resources::ResourceKey::new("", "pods"));
    if std::env::var_os("FAULTLINE_BENCH_POD_SHAPE").is_some() {
        // Where a pod's heap goes, by part (for the profile in docs/performance.md).
        let pods = server
            .api
            .store
            .list_stored(
                &faultline_sim::resources::ResourceKey::new("", "pods"),
                None,
                None,
                Some(2000),
                &is_bench_pod,
                None,
            )
            .items;
        let kept: usize = pods.iter().map(|s| s.managed_fields_bytes()).sum();
        eprintln!(
            "pod shape: managedFields, kept apart as their encoding: {:.1} KiB",
            kept as f64 / pods.len().max(1) as f64 / 1024.0
        );
        let pods: Vec<_> = pods.iter().map(|s| s.object()).collect();
        for part in ["/metadata/managedFields", "/metadata", "/spec", "/status"] {
            let h: usize = pods
                .iter()
                .filter_map(|p| p.pointer(part))
                .map(value_heap_bytes)
                .sum();
            eprintln!(
                "pod shape: {part}: {:.1} KiB",
                h as f64 / pods.len().max(1) as f64 / 1024.0
            );
        }
        if let Some(p) = pods.iter().find(|p| p.pointer("/status/podIP").is_some()) {
            eprintln!(
                "pod shape: example {}",
                serde_json::to_string(&**p).unwrap_or_default()
            );
        }
    }
    let (event_heap, event_json) = sizes(&events_key);

    // The RSS and its high-water mark as each later phase ends (where the whole run's peak is).
    let phase = |name: &str| {
        let (now, hwm) = rss_bytes();
        eprintln!(
            "scale: after {name}: RSS {:.2} GiB, peak so far {:.2} GiB",
            now as f64 / GIB,
            hwm as f64 / GIB
        );
    };
    phase("the sizes");
    // LIST latency (whole response received), all pods and one node's pods.
    let mut c = target.connect().await?;
    let mut list_all = Vec::new();
    let mut list_bytes = 0;
    let mut n_listed = 0;
    for _ in 0..cfg.list_repetitions.max(1) {
        let t = Instant::now();
        let (st, len, items) =
            send_counting_items(&mut c, target.request("GET", "/api/v1/pods", None, None)).await?;
        ensure!(st.is_success(), "LIST pods: {st}");
        list_all.push(secs(t.elapsed()));
        list_bytes = len;
        n_listed = items;
    }
    phase("LIST all");
    let one_node = node_name(cfg.nodes / 2);
    let mut list_node = Vec::new();
    let mut node_items = 0;
    for _ in 0..(cfg.list_repetitions.max(1) * 4) {
        let t = Instant::now();
        let (st, b) = send(
            &mut c,
            target.request(
                "GET",
                &format!("/api/v1/pods?fieldSelector=spec.nodeName%3D{}", one_node),
                None,
                None,
            ),
        )
        .await?;
        ensure!(st.is_success(), "LIST pods by node: {st}");
        list_node.push(secs(t.elapsed()));
        node_items = count_items(&b)?;
    }

    // Watch fan-out: W kube-rs watchers of one namespace's pods; label patches on its pods.
    phase("LIST by node");
    let (fan, fan_all) = fanout(&server, cfg).await?;
    phase("the watch fan-out");
    let (_, run_hwm) = rss_bytes();

    let mut r = Report::new("scale");
    r.ctx(
        "mode",
        if cfg.mode == Mode::Full {
            "full"
        } else {
            "api"
        },
    )
    .ctx("nodes", cfg.nodes as u64)
    .ctx("pods", cfg.pods as u64);
    r.ctx("namespaces", cfg.namespaces as u64)
        .ctx("watchers", cfg.watchers as u64)
        .ctx("connections", cfg.connections as u64)
        .ctx("timing_scale", cfg.timing_scale);
    r.row("nodes Ready after start", secs(t_nodes), "s");
    r.row("pods created", cfg.pods as f64, "");
    r.row("time to create all pods", create_secs, "s");
    r.row("create rate", cfg.pods as f64 / create_secs, "pods/s");
    r.row(
        "create latency p50",
        percentile(&create_lat, 50.0) * 1e3,
        "ms",
    );
    r.row(
        "create latency p99",
        percentile(&create_lat, 99.0) * 1e3,
        "ms",
    );
    if cfg.mode == Mode::Full {
        r.row_target(
            "create -> all pods Running",
            running_secs,
            "s",
            "< 120 s",
            Some(running_secs / 120.0),
        );
    }
    r.row(
        "pods in store (incl. DaemonSet pods)",
        total_pods as f64,
        "",
    );
    r.row(
        "store writes from the first create to the end of the wait, per pod",
        writes as f64 / cfg.pods.max(1) as f64,
        "",
    );
    r.row_target(
        "RSS",
        rss as f64 / GIB,
        "GiB",
        "< 4 GiB",
        Some(rss as f64 / (4.0 * GIB)),
    );
    r.row_target(
        "RSS peak",
        hwm as f64 / GIB,
        "GiB",
        "< 4 GiB",
        Some(hwm as f64 / (4.0 * GIB)),
    );
    r.row("RSS before start", rss0 as f64 / GIB, "GiB");
    r.row(
        "RSS with the nodes up, before any pod",
        rss_nodes as f64 / GIB,
        "GiB",
    );
    r.row("objects stored (all types)", stored as f64, "");
    r.row("events stored", events as f64, "");
    r.row(
        "memory per stored object (RSS / objects)",
        rss.saturating_sub(rss0) as f64 / stored.max(1) as f64 / 1024.0,
        "KiB",
    );
    r.row(
        "stored objects' JSON values, Events aside (heap, estimated)",
        store_heap as f64 / GIB,
        "GiB",
    );
    r.row(
        "a pod as stored: JSON value and managedFields (heap, estimated)",
        pod_heap,
        "KiB",
    );
    r.row("a pod's JSON encoding", pod_json, "KiB");
    r.row(
        "an Event as a parsed JSON value (heap, estimated; not kept)",
        event_heap,
        "KiB",
    );
    r.row(
        "an Event's JSON encoding (how Events are stored)",
        event_json,
        "KiB",
    );
    r.row(
        "memory per pod (RSS growth from nodes up / pods, their events included)",
        rss.saturating_sub(rss_nodes) as f64 / cfg.pods.max(1) as f64 / 1024.0,
        "KiB",
    );
    r.row_target(
        "RSS peak, whole run (LISTs and watchers included)",
        run_hwm as f64 / GIB,
        "GiB",
        "< 4 GiB",
        Some(run_hwm as f64 / (4.0 * GIB)),
    );
    r.row("LIST all pods, median", median(&list_all), "s");
    r.row("LIST all pods, items", n_listed as f64, "");
    r.row("LIST all pods, body", list_bytes as f64 / 1048576.0, "MiB");
    r.row(
        "LIST one node's pods (fieldSelector), median",
        median(&list_node) * 1e3,
        "ms",
    );
    r.row(
        "LIST one node's pods (fieldSelector), p99",
        percentile(&list_node, 99.0) * 1e3,
        "ms",
    );
    r.row("LIST one node's pods, items", node_items as f64, "");
    r.row(
        "watch fan-out: write -> one watcher, p50",
        percentile(&fan, 50.0) * 1e3,
        "ms",
    );
    r.row(
        "watch fan-out: write -> one watcher, p99",
        percentile(&fan, 99.0) * 1e3,
        "ms",
    );
    r.row(
        "watch fan-out: write -> all watchers, p50",
        percentile(&fan_all, 50.0) * 1e3,
        "ms",
    );
    r.row(
        "watch fan-out: write -> all watchers, p99",
        percentile(&fan_all, 99.0) * 1e3,
        "ms",
    );
    r.row("watch fan-out samples", fan.len() as f64, "");
    let complete = fan.len() == cfg.watchers * cfg.fanout_writes;
    let in_time = cfg.mode != Mode::Full || running_secs <= 120.0;
    let pass = run_hwm as f64 <= 4.0 * GIB && complete && total_pods >= cfg.pods && in_time;
    r.verdict(
        pass,
        format!(
            "{} nodes + {} pods ({}) in one process:{} peak RSS {:.2} GiB ({:.2}x the 4 GiB target), LIST all {:.2} s, LIST by node {:.1} ms, fan-out to {} watchers p99 {:.1} ms{}",
            cfg.nodes,
            cfg.pods,
            if cfg.mode == Mode::Full { "full kubelet simulation" } else { "API only" },
            if cfg.mode == Mode::Full { format!(" all Running {running_secs:.1} s after the first create ({:.2}x the 120 s target),", running_secs / 120.0) } else { String::new() },
            run_hwm as f64 / GIB,
            run_hwm as f64 / (4.0 * GIB),
            median(&list_all),
            median(&list_node) * 1e3,
            cfg.watchers,
            percentile(&fan_all, 99.0) * 1e3,
            if complete { String::new() } else { format!("; only {} of {} deliveries arrived", fan.len(), cfg.watchers * cfg.fanout_writes) }
        ),
    );
    server.stop().await;
    Ok(r)
}

/// Returns (latency of every (write, watcher) delivery, latency until all watchers had a write).
async fn fanout(server: &SimServer, cfg: &ScaleConfig) -> Result<(Vec<f64>, Vec<f64>)> {
    let ns = "scale-00";
    let client = kube_client(server).await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let rv = pods
        .list_metadata(&kube::api::ListParams::default().limit(1))
        .await?
        .metadata
        .resource_version
        .unwrap_or_default();
    let epoch = Instant::now();
    let n = cfg.fanout_writes;
    // arrivals[write] = receive times (s since epoch) across watchers.
    let arrivals: Arc<Mutex<Vec<Vec<f64>>>> = Arc::new(Mutex::new(vec![Vec::new(); n]));
    let (ready_tx, mut ready_rx) = tokio::sync::mpsc::channel::<()>(cfg.watchers.max(1));
    let mut tasks = Vec::new();
    for _ in 0..cfg.watchers {
        let api: Api<Pod> = Api::namespaced(kube_client(server).await?, ns);
        let arrivals = arrivals.clone();
        let rv = rv.clone();
        let ready = ready_tx.clone();
        tasks.push(tokio::spawn(async move {
            let wp = WatchParams::default().labels("fanout=true").timeout(290);
            let Ok(stream) = api.watch(&wp, &rv).await else {
                return;
            };
            let _ = ready.send(()).await;
            let mut stream = Box::pin(stream);
            let mut got = 0;
            while let Ok(Some(ev)) = stream.try_next().await {
                let now = epoch.elapsed().as_secs_f64();
                if let WatchEvent::Added(p) | WatchEvent::Modified(p) = ev {
                    let Some(w) = p
                        .metadata
                        .labels
                        .as_ref()
                        .and_then(|l| l.get("fanout-write"))
                        .and_then(|s| s.parse::<usize>().ok())
                    else {
                        continue;
                    };
                    if w < n {
                        arrivals.lock().expect("arrivals")[w].push(now);
                        got += 1;
                        if got == n {
                            return;
                        }
                    }
                }
            }
        }));
    }
    drop(ready_tx);
    for _ in 0..cfg.watchers {
        if ready_rx.recv().await.is_none() {
            break;
        }
    }
    let mut sent = Vec::with_capacity(n);
    for w in 0..n {
        let name = format!("pod-{:06}", w * cfg.namespaces % cfg.pods.max(1));
        let patch =
            json!({"metadata": {"labels": {"fanout": "true", "fanout-write": w.to_string()}}});
        let t = epoch.elapsed().as_secs_f64();
        pods.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .with_context(|| format!("patching {name}"))?;
        sent.push(t);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline
        && arrivals
            .lock()
            .expect("arrivals")
            .iter()
            .any(|a| a.len() < cfg.watchers)
    {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for t in &tasks {
        t.abort();
    }
    let arrivals = arrivals.lock().expect("arrivals").clone();
    let mut each = Vec::new();
    let mut all = Vec::new();
    for (w, a) in arrivals.iter().enumerate() {
        each.extend(a.iter().map(|t| t - sent[w]));
        if a.len() == cfg.watchers {
            all.push(a.iter().cloned().fold(0.0, f64::max) - sent[w]);
        }
    }
    Ok((each, all))
}

/// The pod creators: `connections` tasks, each over its own keep-alive connection, taking the
/// next index from `next` until `pods` are created: pod `i` is `pod-<i>` in namespace
/// `scale-<i % namespaces>`, bound to `worker-<1 + i % nodes>` when `bind_to_nodes` is given
/// (mode `api`), else left to the scheduler. Each task returns its create latencies (s).
/// The same code creates the pods of `scale` and of both sides of `scale --against real`.
pub fn spawn_creators(
    target: &Target,
    pods: usize,
    namespaces: usize,
    connections: usize,
    bind_to_nodes: Option<usize>,
    next: &Arc<AtomicUsize>,
) -> Vec<tokio::task::JoinHandle<Result<Vec<f64>>>> {
    (0..connections.max(1))
        .map(|_| {
            let target = target.clone();
            let next = next.clone();
            tokio::spawn(async move {
                let mut c = target.connect().await?;
                let mut lat = Vec::new();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= pods {
                        return Ok(lat);
                    }
                    let ns = format!("scale-{:02}", i % namespaces);
                    let node = bind_to_nodes.map(|nodes| node_name(1 + i % nodes));
                    let body = pod_body(&ns, &format!("pod-{:06}", i), node.as_deref());
                    let t = Instant::now();
                    let (st, b) = send(
                        &mut c,
                        target.request(
                            "POST",
                            &format!("/api/v1/namespaces/{}/pods", ns),
                            Some(Bytes::from(body)),
                            Some("application/json"),
                        ),
                    )
                    .await?;
                    ensure!(
                        st.is_success(),
                        "creating pod {i}: {st} {}",
                        String::from_utf8_lossy(&b)
                    );
                    lat.push(t.elapsed().as_secs_f64());
                }
            })
        })
        .collect()
}

/// Every creator's latencies, or the first error.
pub async fn join_creators(
    tasks: Vec<tokio::task::JoinHandle<Result<Vec<f64>>>>,
) -> Result<Vec<f64>> {
    let mut lat = Vec::new();
    for t in tasks {
        lat.extend(t.await??);
    }
    Ok(lat)
}

/// The number of items in a LIST body, without building them: the bench's own client must not
/// be what dominates the process's memory (a `serde_json::Value` of 100,000 pods is ~2 GiB).
fn count_items(body: &[u8]) -> Result<usize> {
    #[derive(serde::Deserialize)]
    struct Items {
        items: Vec<serde::de::IgnoredAny>,
    }
    Ok(serde_json::from_slice::<Items>(body)?.items.len())
}
