//! `faultline-bench`: run one benchmark and print its table (or `--json`) and verdict. The exit
//! code is non-zero when the verdict fails (for `load`: any lost, duplicated or out-of-order
//! watch event).

// mimalloc: the sim keeps hundreds of thousands of small JSON values; with glibc malloc a
// 10,000-pod full run held 1.7x the memory and took 3-4x the CPU (docs/performance.md).
// The `system-alloc` feature keeps the system's malloc, for heap profilers that interpose it
// (heaptrack: where the memory of a scale run goes, docs/performance.md).
#[cfg(not(feature = "system-alloc"))]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use anyhow::Result;
use clap::{Parser, Subcommand};
use faultline_bench::{detect, load, pack, real, scale, start, throughput};
use std::path::PathBuf;
use std::time::Duration;

#[derive(Parser)]
#[command(
    name = "faultline-bench",
    about = "Performance, scale and reliability benchmarks of faultline-sim (ratios measured in one run)"
)]
struct Cli {
    /// Print the result as JSON instead of a table.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Sim cluster start (workers + Longhorn) to the first successful list through kube-rs.
    Start {
        #[arg(long, default_value_t = 10)]
        reps: usize,
        #[arg(long, default_value_t = 3)]
        workers: usize,
        /// Timing scale of the simulated components (1.0 = real durations).
        #[arg(long, default_value_t = 1.0)]
        timing_scale: f64,
        /// `real`: then start etcd + kube-apiserver (faultline-upstream) the same way, to the
        /// first successful list, and report the ratio real / sim.
        #[arg(long)]
        against: Option<String>,
        /// Starts of the real control plane with `--against real`.
        #[arg(long, default_value_t = 5)]
        real_reps: usize,
    },
    /// Requests/s of the sim API (GET one ConfigMap, LIST 100) against a bare hyper server.
    Throughput {
        /// Seconds of measurement per target (split into rounds).
        #[arg(long, default_value_t = 12.0)]
        duration: f64,
        #[arg(long, default_value_t = 8)]
        connections: usize,
        #[arg(long, default_value_t = 3)]
        rounds: usize,
    },
    /// Nodes and pods in one process: RSS, create time, LIST latency, watch fan-out.
    Scale {
        #[arg(long, default_value_t = 1000)]
        nodes: usize,
        #[arg(long, default_value_t = 100_000)]
        pods: usize,
        #[arg(long, default_value_t = 10)]
        namespaces: usize,
        /// `api` (static nodes, pre-bound pods) or `full` (kubelets, scheduler, controllers,
        /// every pod through its volume and container lifecycle; 100,000 pods on 1,000 nodes
        /// all Running in about 70 s under 4 GiB: docs/performance.md).
        #[arg(long, default_value = "api")]
        mode: String,
        #[arg(long, default_value_t = 100)]
        watchers: usize,
        #[arg(long, default_value_t = 200)]
        fanout_writes: usize,
        /// Keep-alive connections creating pods at once. With a thousand kubelet tasks sharing
        /// the runtime, each create waits its turn: 8 left the cores half idle in full mode.
        #[arg(long, default_value_t = 32)]
        connections: usize,
        #[arg(long, default_value_t = 1.0)]
        timing_scale: f64,
        /// `real`: the same nodes and pods side by side with the real control plane (etcd +
        /// kube-apiserver + kube-scheduler, kwok for the nodes and pod status), sim first, one
        /// run; time to all Running and peak RSS of both and their ratios (mode full only;
        /// docs/performance.md, "Side by side with the real control plane").
        #[arg(long)]
        against: Option<String>,
        /// With `--against real`: `both`, `sim` or `real`.
        #[arg(long, default_value = "both")]
        sides: String,
        /// With `--against real`: kube-scheduler's client QPS (burst twice that); 0 keeps its
        /// default (50 QPS, burst 100).
        #[arg(long, default_value_t = 5000.0)]
        scheduler_qps: f32,
        /// With `--against real`: kwok's pod and node stage parallelism (0: its default, 4).
        #[arg(long, default_value_t = 0)]
        kwok_parallelism: usize,
        /// With `--against real`: seconds each side may take to get every pod Running.
        #[arg(long, default_value_t = 1800)]
        settle_timeout: u64,
        /// With `--against real`: fail unless the sim is >= 3x faster and <= 0.5x the memory.
        #[arg(long)]
        require_goal: bool,
    },
    /// Watchers and a fixed write rate: no lost, duplicated or out-of-order watch events.
    Load {
        #[arg(long, default_value_t = 100)]
        watchers: usize,
        /// Writes per second (total).
        #[arg(long, default_value_t = 1000.0)]
        rate: f64,
        /// Seconds of writing.
        #[arg(long, default_value_t = 60.0)]
        duration: f64,
        #[arg(long, default_value_t = 10)]
        writers: usize,
        #[arg(long, default_value_t = 20)]
        objects_per_writer: usize,
    },
    /// The scenario pack's wall time against its own sleeps and expectation waits.
    Pack {
        /// The harness binary (default: the workspace's target/debug/faultline, as the main job runs it).
        #[arg(long)]
        faultline: Option<PathBuf>,
        #[arg(long)]
        scenarios: Option<PathBuf>,
        #[arg(long, default_value_t = 1)]
        jobs: usize,
        #[arg(long, default_value_t = 20261203)]
        seed: u64,
    },
    /// Detection latency: a state change to the expectation's verdict (resource, event, log).
    Detect {
        #[arg(long, default_value_t = 200)]
        reps: usize,
    },
}

#[tokio::main]
async fn main() -> Result<()> {
    let cli = Cli::parse();
    let report = match cli.cmd {
        Cmd::Start {
            reps,
            workers,
            timing_scale,
            against,
            real_reps,
        } => {
            let real_repetitions = match against.as_deref() {
                None => 0,
                Some("real") => real_reps,
                Some(other) => anyhow::bail!("--against must be real, not {other:?}"),
            };
            start::run(&start::StartConfig {
                repetitions: reps,
                workers,
                timing_scale,
                real_repetitions,
                ..Default::default()
            })
            .await?
        }
        Cmd::Throughput {
            duration,
            connections,
            rounds,
        } => {
            throughput::run(&throughput::ThroughputConfig {
                duration: Duration::from_secs_f64(duration),
                connections,
                rounds,
                ..Default::default()
            })
            .await?
        }
        Cmd::Scale {
            nodes,
            pods,
            namespaces,
            mode,
            watchers,
            fanout_writes,
            connections,
            timing_scale,
            against,
            sides,
            scheduler_qps,
            kwok_parallelism,
            settle_timeout,
            require_goal,
        } => {
            let mode = match mode.as_str() {
                "full" => scale::Mode::Full,
                "api" => scale::Mode::Api,
                other => anyhow::bail!("--mode must be full or api, not {other:?}"),
            };
            match against.as_deref() {
                None => {}
                Some("real") => {
                    anyhow::ensure!(
                        mode == scale::Mode::Full,
                        "--against real compares mode full (kwok plays the kubelets)"
                    );
                    let sides = match sides.as_str() {
                        "both" => real::Sides::Both,
                        "sim" => real::Sides::Sim,
                        "real" => real::Sides::Real,
                        other => anyhow::bail!("--sides must be both, sim or real, not {other:?}"),
                    };
                    let report = real::run(&real::RealConfig {
                        nodes,
                        pods,
                        namespaces,
                        connections,
                        timing_scale,
                        settle_timeout: Duration::from_secs(settle_timeout),
                        sides,
                        scheduler_qps: (scheduler_qps > 0.0).then_some(scheduler_qps),
                        kwok_parallelism: (kwok_parallelism > 0).then_some(kwok_parallelism),
                        bin_dir: None,
                        require_goal,
                    })
                    .await?;
                    report.print(cli.json);
                    std::process::exit(if report.pass { 0 } else { 1 });
                }
                Some(other) => anyhow::bail!("--against must be real, not {other:?}"),
            }
            scale::run(&scale::ScaleConfig {
                nodes,
                pods,
                namespaces,
                mode,
                watchers,
                fanout_writes,
                connections,
                timing_scale,
                ..Default::default()
            })
            .await?
        }
        Cmd::Load {
            watchers,
            rate,
            duration,
            writers,
            objects_per_writer,
        } => {
            let cfg = load::LoadConfig {
                watchers,
                rate,
                duration: Duration::from_secs_f64(duration),
                writers,
                objects_per_writer,
                ..Default::default()
            };
            load::run(&cfg).await?.report
        }
        Cmd::Pack {
            faultline,
            scenarios,
            jobs,
            seed,
        } => {
            let d = pack::PackConfig::default();
            let cfg = pack::PackConfig {
                faultline: faultline.unwrap_or(d.faultline.clone()),
                scenarios: scenarios.unwrap_or(d.scenarios.clone()),
                jobs,
                seed,
                ..d
            };
            tokio::task::spawn_blocking(move || pack::run(&cfg)).await??
        }
        Cmd::Detect { reps } => {
            detect::run(&detect::DetectConfig {
                repetitions: reps,
                ..Default::default()
            })
            .await?
        }
    };
    report.print(cli.json);
    if !report.pass {
        std::process::exit(1);
    }
    Ok(())
}
