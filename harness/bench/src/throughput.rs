//! API throughput: the sim API answering GET of one ConfigMap and LIST of 100 ConfigMaps,
//! against a bare hyper server on loopback that answers a fixed body and does no work (the
//! limit of this machine's TLS + HTTP/1.1 stack). Same client, same keep-alive connections,
//! same duration, interleaved in rounds so drift on a shared machine hits all of them alike.
//! Target (issue #7): the sim serves at least 0.5x the bare server's requests per second.

use crate::http::{send, BareServer, Target};
use crate::report::Report;
use crate::util::{percentile, secs};
use anyhow::{ensure, Result};
use faultline_sim::apiserver::WriteOptions;
use faultline_sim::{SimOptions, SimServer};
use serde_json::json;
use std::time::{Duration, Instant};

#[derive(Debug, Clone)]
pub struct ThroughputConfig {
    /// Total measuring time per target (split across rounds).
    pub duration: Duration,
    /// Concurrent keep-alive connections.
    pub connections: usize,
    pub rounds: usize,
    /// ConfigMaps in the listed namespace.
    pub list_size: usize,
}

impl Default for ThroughputConfig {
    fn default() -> Self {
        ThroughputConfig {
            duration: Duration::from_secs(12),
            connections: 8,
            rounds: 3,
            list_size: 100,
        }
    }
}

#[derive(Debug, Default, Clone)]
pub struct Drive {
    pub requests: u64,
    pub errors: u64,
    pub elapsed: Duration,
    pub latencies_us: Vec<f64>,
    pub bytes: u64,
}

impl Drive {
    pub fn rps(&self) -> f64 {
        self.requests as f64 / secs(self.elapsed).max(1e-9)
    }
    fn add(&mut self, o: Drive) {
        self.requests += o.requests;
        self.errors += o.errors;
        self.elapsed += o.elapsed;
        self.bytes += o.bytes;
        self.latencies_us.extend(o.latencies_us);
    }
}

/// GET `path` on `connections` keep-alive connections for `dur`.
pub async fn drive(
    target: &Target,
    path: &str,
    connections: usize,
    dur: Duration,
) -> Result<Drive> {
    let mut conns = Vec::new();
    for _ in 0..connections {
        conns.push(target.connect().await?);
    }
    let start = Instant::now();
    let deadline = start + dur;
    let mut tasks = Vec::new();
    for mut c in conns {
        let target = target.clone();
        let path = path.to_string();
        tasks.push(tokio::spawn(async move {
            let mut d = Drive::default();
            while Instant::now() < deadline {
                let t = Instant::now();
                match send(&mut c, target.request("GET", &path, None, None)).await {
                    Ok((s, body)) if s.is_success() => {
                        d.requests += 1;
                        d.bytes += body.len() as u64;
                        d.latencies_us.push(t.elapsed().as_secs_f64() * 1e6);
                    }
                    Ok(_) => d.errors += 1,
                    Err(_) => {
                        d.errors += 1;
                        match target.connect().await {
                            Ok(n) => c = n,
                            Err(_) => break,
                        }
                    }
                }
            }
            d
        }));
    }
    let mut total = Drive::default();
    for t in tasks {
        total.add(t.await?);
    }
    total.elapsed = start.elapsed();
    Ok(total)
}

pub async fn run(cfg: &ThroughputConfig) -> Result<Report> {
    let bare = BareServer::start().await?;
    let bare_t = Target::new(bare.addr, &bare.ca_pem, None)?;
    let sim = SimServer::start(SimOptions::with_workers(0)).await?;
    let sim_t = Target::new(sim.addr, &sim.ca_pem, Some(sim.token.clone()))?;
    let api = sim.api.clone();
    let opts = WriteOptions {
        field_manager: Some("bench".into()),
        ..Default::default()
    };
    let ns_rt = api.resource("", "v1", "namespaces")?;
    api.create(
        &ns_rt,
        "",
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bench"}}),
        &opts,
    )?;
    let cm_rt = api.resource("", "v1", "configmaps")?;
    // The namespace controller adds kube-root-ca.crt; fill up to `list_size` with ours.
    let root_ca = async {
        for _ in 0..500 {
            if api.get(&cm_rt, "bench", "kube-root-ca.crt").is_ok() {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        false
    };
    ensure!(
        root_ca.await,
        "kube-root-ca.crt never appeared in namespace bench"
    );
    for i in 0..cfg.list_size.saturating_sub(1) {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": format!("cm-{:03}", i), "namespace": "bench", "labels": {"app": "bench", "index": i.to_string()}},
            "data": {"config.yaml": format!("replicas: {}\nimage: registry.example/app:1.{}\n", i % 5, i), "mode": "fast"}});
        api.create(&cm_rt, "bench", cm, &opts)?;
    }
    let get_path = "/api/v1/namespaces/bench/configmaps/cm-000";
    let list_path = "/api/v1/namespaces/bench/configmaps";
    // The bare server's `/large` answers the very bytes of the sim's LIST, for a same-size baseline.
    let mut c = sim_t.connect().await?;
    let (st, list_body) = send(&mut c, sim_t.request("GET", list_path, None, None)).await?;
    ensure!(st.is_success(), "sim LIST answered {st}");
    let listed: serde_json::Value = serde_json::from_slice(&list_body)?;
    let n_items = listed["items"].as_array().map(Vec::len).unwrap_or(0);
    ensure!(
        n_items == cfg.list_size,
        "LIST returned {n_items} ConfigMaps, wanted {}",
        cfg.list_size
    );
    let (st, get_body) = send(&mut c, sim_t.request("GET", get_path, None, None)).await?;
    ensure!(st.is_success(), "sim GET answered {st}");
    *bare.large.write().expect("large body") = list_body.clone();
    drop(c);

    let per_round = cfg.duration / cfg.rounds.max(1) as u32;
    let k = cfg.connections;
    let (mut b_small, mut s_get, mut b_large, mut s_list) = (
        Drive::default(),
        Drive::default(),
        Drive::default(),
        Drive::default(),
    );
    // Warm-up (TLS session set-up, allocator, caches).
    drive(&bare_t, "/small", k, Duration::from_millis(300)).await?;
    drive(&sim_t, get_path, k, Duration::from_millis(300)).await?;
    for _ in 0..cfg.rounds.max(1) {
        b_small.add(drive(&bare_t, "/small", k, per_round).await?);
        s_get.add(drive(&sim_t, get_path, k, per_round).await?);
        b_large.add(drive(&bare_t, "/large", k, per_round).await?);
        s_list.add(drive(&sim_t, list_path, k, per_round).await?);
    }
    let get_ratio = s_get.rps() / b_small.rps();
    let list_ratio_small = s_list.rps() / b_small.rps();
    let list_ratio_same = s_list.rps() / b_large.rps();

    let mut r = Report::new("throughput");
    r.ctx("connections", k as u64)
        .ctx("rounds", cfg.rounds as u64)
        .ctx("seconds_per_target", secs(cfg.duration))
        .ctx("list_items", n_items as u64);
    r.ctx("get_body_bytes", get_body.len() as u64)
        .ctx("list_body_bytes", list_body.len() as u64);
    let lat = |d: &Drive, p| percentile(&d.latencies_us, p) / 1000.0;
    r.row("bare hyper, small JSON", b_small.rps(), "req/s");
    r.row_target(
        "sim GET configmap",
        s_get.rps(),
        "req/s",
        ">= 0.5x bare",
        Some(get_ratio),
    );
    r.row("bare hyper, LIST-sized body", b_large.rps(), "req/s");
    r.row_target(
        "sim LIST 100 configmaps",
        s_list.rps(),
        "req/s",
        "vs bare small",
        Some(list_ratio_small),
    );
    r.row_target(
        "sim LIST vs same-size bare body",
        s_list.rps(),
        "req/s",
        ">= 0.5x bare",
        Some(list_ratio_same),
    );
    for (name, d) in [
        ("bare small", &b_small),
        ("sim GET", &s_get),
        ("bare LIST-sized", &b_large),
        ("sim LIST", &s_list),
    ] {
        r.row(&format!("{} latency p50", name), lat(d, 50.0), "ms")
            .row(&format!("{} latency p99", name), lat(d, 99.0), "ms");
    }
    let errors = b_small.errors + s_get.errors + b_large.errors + s_list.errors;
    r.row("errors", errors as f64, "");
    let pass = get_ratio >= 0.5 && errors == 0;
    r.verdict(
        pass,
        format!(
            "sim GET at {:.2}x the bare hyper server (target >= 0.5x); LIST of {} at {:.2}x the same-size bare body, {:.3}x the small one; {} errors",
            get_ratio, n_items, list_ratio_same, list_ratio_small, errors
        ),
    );
    sim.stop().await;
    Ok(r)
}
