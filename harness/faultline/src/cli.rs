//! Argument parsing and dispatch. Exit codes: 0 success, 1 a scenario failed, 2 invalid input or
//! harness error.

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use faultline_sim::{SimOptions, SimServer};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "faultline", version, about = "Chaos and simulation test harness for Kubernetes controllers")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// The simulated cluster.
    Sim {
        #[command(subcommand)]
        command: SimCommand,
    },
    /// Node operations (logs, mounts, kubelet service, reboot) on a running `faultline sim up`.
    Node(crate::node_cmd::NodeArgs),
}

#[derive(Subcommand)]
enum SimCommand {
    /// Start a simulated cluster, write a kubeconfig, and serve until Ctrl-C.
    Up {
        /// Number of worker nodes (named worker-01, worker-02, ...).
        #[arg(long, default_value_t = 3)]
        nodes: usize,
        /// Where to write the kubeconfig.
        #[arg(long, default_value = "faultline-sim.kubeconfig")]
        kubeconfig: PathBuf,
        /// Loopback address to listen on (port 0 picks a free port).
        #[arg(long, default_value = "127.0.0.1:0")]
        listen: SocketAddr,
        /// Multiply every simulated duration (backoffs, timeouts, reboots) by this factor.
        #[arg(long, default_value_t = 1.0)]
        time_scale: f64,
        /// Serve the API alone: static nodes, no kubelets, scheduler or Longhorn.
        #[arg(long)]
        api_only: bool,
    },
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_env("FAULTLINE_LOG").unwrap_or_else(|_| "warn".into()))
        .with_writer(std::io::stderr)
        .init();
    let rt = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    match rt.block_on(run(cli)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

async fn run(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Command::Node(args) => crate::node_cmd::run(args).await,
        Command::Sim { command: SimCommand::Up { nodes, kubeconfig, listen, time_scale, api_only } } => sim_up(nodes, kubeconfig, listen, time_scale, api_only).await,
    }
}

async fn sim_up(nodes: usize, kubeconfig: PathBuf, listen: SocketAddr, time_scale: f64, api_only: bool) -> Result<ExitCode> {
    if !(time_scale > 0.0) {
        anyhow::bail!("--time-scale must be a positive number, got {time_scale}");
    }
    let base = if api_only { SimOptions::with_workers(nodes) } else { SimOptions::full(nodes, faultline_sim::Timing::scaled(time_scale)) };
    let opts = SimOptions { bind: listen, ..base };
    let server = SimServer::start(opts).await?;
    let path = server.write_kubeconfig(&kubeconfig)?;
    println!("faultline sim: API server listening on {}", server.url());
    println!("faultline sim: kubeconfig written to {}", path.display());
    println!("  export KUBECONFIG={}", std::fs::canonicalize(&path).unwrap_or(path.clone()).display());
    println!("faultline sim: {} worker node(s); press Ctrl-C to stop", nodes);
    wait_for_shutdown_signal().await.context("waiting for a shutdown signal")?;
    println!("faultline sim: stopping");
    server.stop().await;
    Ok(ExitCode::SUCCESS)
}

async fn wait_for_shutdown_signal() -> Result<()> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate())?;
    tokio::select! {
        r = tokio::signal::ctrl_c() => r?,
        _ = term.recv() => {}
    }
    Ok(())
}
