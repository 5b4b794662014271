//! Cluster start: `SimServer::start` of a full simulated cluster (control plane + N workers,
//! kubelets, scheduler, Longhorn) to the first successful LIST through a real kube-rs client
//! built from the generated kubeconfig, as a user's test would do. Also reported: until every
//! node is Ready and every Longhorn DaemonSet reports all its pods ready (informational).
//! Target (issue #7): first successful list under 0.5 s.

use crate::report::Report;
use crate::util::{kube_client, median, percentile, secs};
use anyhow::{bail, Result};
use faultline_sim::{SimOptions, SimServer, Timing};
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, ListParams};
use std::time::{Duration, Instant};

#[derive(Debug, Clone)]
pub struct StartConfig {
    pub repetitions: usize,
    pub workers: usize,
    /// Timing scale of the simulated cluster (1.0 = real kubelet/image-pull durations).
    pub timing_scale: f64,
    /// Give up waiting for the cluster to be ready after this long.
    pub ready_timeout: Duration,
    /// Also start etcd + kube-apiserver (`start --against real`) this many times, to the first
    /// successful LIST the same way, and report the ratio real / sim. 0: the sim alone.
    pub real_repetitions: usize,
    /// The real binaries' directory (default `FAULTLINE_UPSTREAM_BIN`, else ci/upstream.sh).
    pub bin_dir: Option<std::path::PathBuf>,
}

impl Default for StartConfig {
    fn default() -> Self {
        StartConfig {
            repetitions: 10,
            workers: 3,
            timing_scale: 1.0,
            ready_timeout: Duration::from_secs(60),
            real_repetitions: 0,
            bin_dir: None,
        }
    }
}

pub const TARGET: Duration = Duration::from_millis(500);

/// One start: (to first list, to cluster ready).
pub async fn once(cfg: &StartConfig) -> Result<(Duration, Duration)> {
    let t0 = Instant::now();
    let server = SimServer::start(SimOptions::full(
        cfg.workers,
        Timing::scaled(cfg.timing_scale),
    ))
    .await?;
    let client = kube_client(&server).await?;
    let pods: Api<Pod> = Api::all(client.clone());
    let first_list = loop {
        match pods.list(&ListParams::default()).await {
            Ok(_) => break t0.elapsed(),
            Err(_) if t0.elapsed() < cfg.ready_timeout => {
                tokio::time::sleep(Duration::from_millis(1)).await
            }
            Err(e) => bail!("no successful list within {:?}: {e}", cfg.ready_timeout),
        }
    };
    let nodes: Api<Node> = Api::all(client.clone());
    let ds: Api<DaemonSet> = Api::namespaced(client.clone(), "longhorn-system");
    let want_nodes = cfg.workers + 1;
    let ready = loop {
        let n = nodes.list(&ListParams::default()).await?;
        let ready_nodes = n
            .items
            .iter()
            .filter(|n| {
                n.status
                    .as_ref()
                    .and_then(|s| s.conditions.as_ref())
                    .map(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
                    .unwrap_or(false)
            })
            .count();
        let d = ds.list(&ListParams::default()).await?;
        let ds_ready = !d.items.is_empty()
            && d.items.iter().all(|d| {
                let s = d.status.clone().unwrap_or_default();
                s.desired_number_scheduled as usize == cfg.workers
                    && s.number_ready == s.desired_number_scheduled
            });
        if ready_nodes == want_nodes && ds_ready {
            break t0.elapsed();
        }
        if t0.elapsed() > cfg.ready_timeout {
            bail!("cluster not ready after {:?}: {ready_nodes}/{want_nodes} nodes Ready, DaemonSets ready: {ds_ready}", cfg.ready_timeout);
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    server.stop().await;
    Ok((first_list, ready))
}

pub async fn run(cfg: &StartConfig) -> Result<Report> {
    let mut lists = Vec::new();
    let mut readies = Vec::new();
    for _ in 0..cfg.repetitions.max(1) {
        let (l, r) = once(cfg).await?;
        lists.push(secs(l));
        readies.push(secs(r));
    }
    // The real control plane after the sim, so the sim's figures are as without it.
    let mut real = Vec::new();
    let mut skipped = None;
    for _ in 0..cfg.real_repetitions {
        match crate::real::start_once(cfg.bin_dir.as_deref()).await? {
            Ok(d) => real.push(secs(d)),
            Err(reason) => {
                skipped = Some(reason);
                break;
            }
        }
    }
    let target = secs(TARGET);
    let (med, p95) = (median(&lists), percentile(&lists, 95.0));
    let mut r = Report::new("start");
    r.ctx("repetitions", cfg.repetitions as u64)
        .ctx("workers", cfg.workers as u64)
        .ctx("longhorn", true)
        .ctx("timing_scale", cfg.timing_scale);
    r.row_target(
        "start -> first list, median",
        med,
        "s",
        "< 0.5 s",
        Some(med / target),
    );
    r.row_target(
        "start -> first list, p95",
        p95,
        "s",
        "< 0.5 s",
        Some(p95 / target),
    );
    r.row(
        "start -> first list, max",
        lists.iter().cloned().fold(0.0, f64::max),
        "s",
    );
    r.row(
        "start -> nodes Ready + Longhorn DaemonSets ready, median",
        median(&readies),
        "s",
    );
    r.row(
        "start -> nodes Ready + Longhorn DaemonSets ready, p95",
        percentile(&readies, 95.0),
        "s",
    );
    let mut verdict = format!(
        "first successful list after {:.1} ms median, {:.1} ms p95: {:.3}x the 0.5 s target",
        med * 1e3,
        p95 * 1e3,
        p95 / target
    );
    if !real.is_empty() {
        let (real_med, real_p95) = (median(&real), percentile(&real, 95.0));
        r.ctx("real_repetitions", real.len() as u64);
        r.row(
            "real: etcd + kube-apiserver start -> first list, median",
            real_med,
            "s",
        );
        r.row(
            "real: etcd + kube-apiserver start -> first list, p95",
            real_p95,
            "s",
        );
        r.row(
            "real: etcd + kube-apiserver start -> first list, min",
            real.iter().cloned().fold(f64::INFINITY, f64::min),
            "s",
        );
        r.row(
            "start -> first list, real / sim (medians)",
            real_med / med,
            "x",
        );
        verdict.push_str(&format!(
            "; etcd + kube-apiserver: {:.2} s median ({} starts), {:.0}x the sim's median",
            real_med,
            real.len(),
            real_med / med
        ));
    } else if let Some(reason) = skipped {
        verdict.push_str(&format!("; real side SKIPPED: {reason}"));
    }
    r.verdict(p95 < target, verdict);
    Ok(r)
}
