//! Detection latency: from a state change to the expectation's verdict, through the runner's own
//! expectation engine (`faultline::expect::evaluate`) against a simulated cluster. For each
//! source kind an `eventually` expectation is started, given time to open its watch, then the
//! change is made; the latency is from just before the change (the write is included) to the
//! moment `evaluate` returns a passed verdict.
//! - resource: a ConfigMap's data changes (kube-rs watcher, CEL condition);
//! - event: a core/v1 Event is created (the run's event watch, reason match);
//! - log: a controller log line arrives (the log store, regular expression).

use crate::report::Report;
use crate::util::{kube_client, percentile};
use anyhow::{bail, Context, Result};
use faultline::events::EventStore;
use faultline::expect::{evaluate, Ctx};
use faultline::k8s::Kube;
use faultline::logs::LogStore;
use faultline::model::Expect;
use faultline::provider::{LogLine, LogSource};
use faultline::timeline::{Timeline, Verdict};
use faultline_sim::{SimOptions, SimServer};
use k8s_openapi::api::core::v1::{ConfigMap, Event, Namespace};
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;
use std::time::{Duration, Instant};

#[derive(Debug, Clone)]
pub struct DetectConfig {
    /// Changes measured per source kind.
    pub repetitions: usize,
    /// Time an expectation gets to open its watch before the change.
    pub settle: Duration,
    /// Target for the p99 of every kind.
    pub target_p99: Duration,
}

impl Default for DetectConfig {
    fn default() -> Self {
        DetectConfig {
            repetitions: 200,
            settle: Duration::from_millis(40),
            target_p99: Duration::from_millis(50),
        }
    }
}

const NS: &str = "detect";

pub async fn run(cfg: &DetectConfig) -> Result<Report> {
    let server = SimServer::start(SimOptions::with_workers(1)).await?;
    let client = kube_client(&server).await?;
    Api::<Namespace>::all(client.clone())
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": NS}}))?,
        )
        .await?;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), NS);
    let events: Api<Event> = Api::namespaced(client.clone(), NS);
    let timeline = Timeline::new();
    let event_store = EventStore::new();
    let event_task = event_store.start(client.clone(), timeline.clone());
    event_store.wait_ready(Duration::from_secs(5)).await;
    let logs = LogStore::new(None);
    let (_end_tx, end) = tokio::sync::watch::channel(false);
    let ctx = Ctx {
        kube: Kube::new(client.clone()),
        timeline,
        events: event_store,
        logs: logs.clone(),
        end,
        // Nothing recorded ahead: the bench measures a source started at the change.
        recorders: Default::default(),
    };

    let mut report = Report::new("detect");
    let mut worst: f64 = 0.0;
    for kind in ["resource", "event", "log"] {
        let mut lat = Vec::with_capacity(cfg.repetitions);
        for i in 0..cfg.repetitions {
            let name = format!("probe-{i}");
            if kind == "resource" {
                cms.create(
                    &PostParams::default(),
                    &serde_json::from_value(
                        json!({"metadata": {"name": name}, "data": {"v": "wait"}}),
                    )?,
                )
                .await?;
            }
            let expect: Expect = serde_json::from_value(match kind {
                "resource" => json!({"name": "probe", "within": "10s", "resource": {
                    "apiVersion": "v1", "kind": "ConfigMap", "namespace": NS, "name": name, "condition": "object.data.v == 'go'"}}),
                "event" => json!({"name": "probe", "within": "10s", "event": {"reason": format!("Probe{i}"), "namespace": NS}}),
                _ => json!({"name": "probe", "within": "10s", "log": {"source": "controller", "pattern": format!("probe {i} done$")}}),
            })
            .context("the probe expectation")?;
            let anchor = Instant::now();
            let judged = {
                let ctx = ctx.clone();
                tokio::spawn(async move {
                    evaluate(
                        &expect,
                        "start",
                        anchor,
                        Duration::from_secs(10),
                        false,
                        &ctx,
                    )
                    .await
                })
            };
            tokio::time::sleep(cfg.settle).await;
            let t0 = Instant::now();
            match kind {
                "resource" => {
                    cms.patch(
                        &name,
                        &PatchParams::default(),
                        &Patch::Merge(json!({"data": {"v": "go"}})),
                    )
                    .await?;
                }
                "event" => {
                    let ev = json!({"metadata": {"generateName": "probe."}, "reason": format!("Probe{i}"), "message": "probe",
                        "type": "Normal", "involvedObject": {"kind": "ConfigMap", "namespace": NS, "name": name},
                        "source": {"component": "faultline-bench"}, "count": 1});
                    events
                        .create(&PostParams::default(), &serde_json::from_value(ev)?)
                        .await?;
                }
                _ => logs.push(LogLine {
                    source: LogSource::Controller,
                    node: None,
                    text: format!("probe {i} done"),
                }),
            }
            let result = judged.await?;
            let ms = t0.elapsed().as_secs_f64() * 1000.0;
            if result.verdict != Verdict::Passed {
                bail!(
                    "{kind} probe {i}: the expectation did not pass: {}",
                    result.message
                );
            }
            lat.push(ms);
        }
        let p99 = percentile(&lat, 99.0);
        worst = worst.max(p99);
        let target_ms = cfg.target_p99.as_secs_f64() * 1000.0;
        report.row(&format!("{kind}: p50"), percentile(&lat, 50.0), "ms");
        report.row_target(
            &format!("{kind}: p99"),
            p99,
            "ms",
            &format!("< {target_ms:.0} ms"),
            Some(p99 / target_ms),
        );
        report.row(&format!("{kind}: max"), percentile(&lat, 100.0), "ms");
    }
    event_task.abort();
    server.stop().await;
    let target_ms = cfg.target_p99.as_secs_f64() * 1000.0;
    report
        .ctx("repetitions", cfg.repetitions as u64)
        .ctx("settle_ms", cfg.settle.as_millis() as u64);
    report.verdict(
        worst < target_ms,
        format!(
            "worst p99 {worst:.1} ms vs target < {target_ms:.0} ms ({:.2}x target)",
            worst / target_ms
        ),
    );
    Ok(report)
}
