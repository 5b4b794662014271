//! `faultline-differential --left KUBECONFIG --right KUBECONFIG [--corpus DIR] [--json OUT]
//! [--report-diffs DIR]`: runs the corpus against both apiservers and prints, per API group and
//! verb, how many exchanges are identical, and the total.
//!
//! `faultline-differential record --upstream KUBECONFIG --listen 127.0.0.1:0 --out FILE ...`:
//! the recording proxy. `faultline-differential drive-kube-rs --kubeconfig K --namespace NS`:
//! kube-rs doing everyday things (for recording).

use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand};
use faultline_differential::{corpus, drive, judge, record, target::Target};
use rand::Rng;
use std::path::PathBuf;

#[derive(Parser)]
#[command(
    name = "faultline-differential",
    args_conflicts_with_subcommands = true
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    run: RunArgs,
}

#[derive(Args)]
struct RunArgs {
    /// The reference side's kubeconfig (the sim, in CI).
    #[arg(long)]
    left: Option<PathBuf>,
    /// The other side's kubeconfig (the real apiserver).
    #[arg(long, conflicts_with = "right_upstream")]
    right: Option<PathBuf>,
    /// Start the other side here: etcd, kube-apiserver and kube-controller-manager from
    /// `faultline-upstream` (binaries from FAULTLINE_UPSTREAM_BIN or ci/upstream.sh). Exits 3
    /// after printing SKIPPED when they cannot be had.
    #[arg(long)]
    right_upstream: bool,
    /// The corpus directory.
    #[arg(long, default_value = concat!(env!("CARGO_MANIFEST_DIR"), "/corpus"))]
    corpus: PathBuf,
    /// Write the full report (every exchange, its differences) as JSON.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Write both canonical responses of each differing exchange, one file each.
    #[arg(long)]
    report_diffs: Option<PathBuf>,
    /// How many differences to print.
    #[arg(long, default_value_t = 20)]
    show: usize,
    /// Only the scripts whose name contains this.
    #[arg(long)]
    only: Option<String>,
    /// Names for the two sides in the report.
    #[arg(long, default_value = "left")]
    left_name: String,
    #[arg(long, default_value = "right")]
    right_name: String,
    /// Exit 1 when fewer exchanges than this are identical.
    #[arg(long)]
    min_identical: Option<usize>,
}

#[derive(Subcommand)]
enum Command {
    /// Serve a recording proxy in front of an apiserver.
    Record {
        #[arg(long)]
        upstream: PathBuf,
        #[arg(long, default_value = "127.0.0.1:0")]
        listen: std::net::SocketAddr,
        /// The script file to write.
        #[arg(long)]
        out: PathBuf,
        /// The script's name.
        #[arg(long)]
        name: String,
        /// The client recorded (the script's source becomes `recorded:<client>`).
        #[arg(long)]
        client: String,
        /// The namespace the client works in (recorded as `{{ns}}`).
        #[arg(long, default_value = "")]
        namespace: String,
        /// Where to write a kubeconfig that points at the proxy.
        #[arg(long)]
        kubeconfig: Option<PathBuf>,
    },
    /// kube-rs doing everyday things against a cluster.
    DriveKubeRs {
        #[arg(long)]
        kubeconfig: PathBuf,
        #[arg(long)]
        namespace: String,
    },
    /// Print the corpus's size: scripts and exchanges per source.
    Count {
        #[arg(long, default_value = concat!(env!("CARGO_MANIFEST_DIR"), "/corpus"))]
        corpus: PathBuf,
    },
}

#[tokio::main]
async fn main() -> Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Some(Command::Record {
            upstream,
            listen,
            out,
            name,
            client,
            namespace,
            kubeconfig,
        }) => {
            let upstream = Target::from_kubeconfig("upstream", &upstream).await?;
            record::record(record::RecordOptions {
                upstream,
                listen,
                out,
                name,
                source: format!("recorded:{client}"),
                namespace,
                kubeconfig_out: kubeconfig,
            })
            .await
        }
        Some(Command::DriveKubeRs {
            kubeconfig,
            namespace,
        }) => drive::drive(&kubeconfig, &namespace).await,
        Some(Command::Count { corpus }) => {
            let scripts = corpus::load(&corpus)?;
            let mut by = std::collections::BTreeMap::<String, [usize; 2]>::new();
            for s in &scripts {
                let e = by.entry(s.source.clone()).or_default();
                e[0] += 1;
                e[1] += s
                    .steps
                    .iter()
                    .filter(|st| st.compare != corpus::Compare::None)
                    .count();
            }
            let mut total = 0;
            for (k, [s, e]) in &by {
                println!("{k:<30} {s:>4} scripts {e:>5} exchanges");
                total += e;
            }
            println!("total {total} exchanges");
            Ok(())
        }
        None => run(cli.run).await,
    }
}

async fn run(a: RunArgs) -> Result<()> {
    let left = a.left.clone().context("--left KUBECONFIG is required")?;
    let scripts = corpus::load(&a.corpus)?;
    let mut control_plane = None;
    let right = if a.right_upstream {
        let opts = faultline_upstream::Options {
            controller_manager: true,
            ..Default::default()
        };
        match faultline_upstream::ControlPlane::start(opts).await {
            Ok(cp) => {
                let k = cp.kubeconfig().to_path_buf();
                control_plane = Some(cp);
                k
            }
            Err(faultline_upstream::Error::Skip(reason)) => {
                println!("differential: SKIPPED sim vs real: {reason}");
                std::process::exit(3);
            }
            Err(e) => return Err(e).context("starting the real control plane"),
        }
    } else {
        a.right
            .clone()
            .context("--right KUBECONFIG (or --right-upstream) is required")?
    };
    let code = judge_and_report(a, &left, &right, &scripts).await;
    if let Some(cp) = control_plane {
        let _ = cp.stop().await;
    }
    match code? {
        0 => Ok(()),
        c => std::process::exit(c),
    }
}

/// Runs the judge and writes the reports; the exit code (1: below --min-identical).
async fn judge_and_report(
    a: RunArgs,
    left: &std::path::Path,
    right: &std::path::Path,
    scripts: &[corpus::Script],
) -> Result<i32> {
    let l = Target::from_kubeconfig(&a.left_name, left).await?;
    let r = Target::from_kubeconfig(&a.right_name, right).await?;
    let run_id: String = {
        let mut rng = rand::rng();
        (0..4)
            .map(|_| (b'a' + rng.random_range(0..26u8)) as char)
            .collect()
    };
    let opts = judge::Options {
        prefix: format!("d{run_id}"),
        old_rv: "1".into(),
        filter: a.only,
    };
    let report = judge::judge(&l, &r, scripts, &opts).await?;
    report.print(a.show, &mut std::io::stdout())?;
    if let Some(p) = a.json {
        std::fs::write(&p, serde_json::to_vec_pretty(&report)?)?;
    }
    if let Some(d) = a.report_diffs {
        report.write_diffs(&d)?;
    }
    if let Some(min) = a.min_identical {
        if report.identical < min {
            eprintln!(
                "differential: {} identical exchanges, below the recorded {min}",
                report.identical
            );
            return Ok(1);
        }
    }
    Ok(0)
}
