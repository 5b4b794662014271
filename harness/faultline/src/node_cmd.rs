//! `faultline node <NODE> ...`: talosctl-like node operations against a running
//! `faultline sim up`, through its authenticated control endpoint (`/faultline/v1/...`).

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand, ValueEnum};
use futures::AsyncBufReadExt;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct NodeArgs {
    /// The node's name or InternalIP, e.g. worker-04 or 172.18.0.6 (`talosctl --nodes <NODE_IP>`).
    pub node: String,
    /// Kubeconfig of the simulated cluster (as written by `faultline sim up`).
    #[arg(long, env = "KUBECONFIG", default_value = "faultline-sim.kubeconfig")]
    pub kubeconfig: PathBuf,
    #[command(subcommand)]
    pub action: NodeAction,
}

#[derive(Subcommand, Debug)]
pub enum NodeAction {
    /// Print the kubelet's or the CSI plugin's log.
    Logs {
        source: LogSource,
        /// Keep streaming new lines.
        #[arg(short, long)]
        follow: bool,
        /// Only the last N lines.
        #[arg(long)]
        tail: Option<usize>,
    },
    /// Print the node's mount table.
    Mounts,
    /// Control a node service (only `kubelet`).
    Service {
        service: String,
        action: ServiceAction,
    },
    /// Reboot the node (stuck in Rebooting while NFS hangs or disks fail).
    Reboot,
    /// Hard power cycle (IPMI/Redfish in real life).
    PowerCycle,
    /// Power the node off and leave it off (the catalogue's `nodePowerOff`).
    PowerOff,
    /// Power a node that is off on again: it boots.
    PowerOn,
    /// Apply a raw node primitive given as JSON, e.g. '{"op":"csiPluginDown"}'.
    Op { json: String },
}

#[derive(ValueEnum, Clone, Copy, Debug)]
pub enum LogSource {
    Kubelet,
    CsiPlugin,
}

#[derive(ValueEnum, Clone, Copy, Debug)]
pub enum ServiceAction {
    Restart,
    Stop,
    Start,
    Status,
}

async fn client(kubeconfig: &PathBuf) -> Result<kube::Client> {
    let kc = kube::config::Kubeconfig::read_from(kubeconfig).with_context(|| {
        format!(
            "reading kubeconfig {} (start one with `faultline sim up`)",
            kubeconfig.display()
        )
    })?;
    let cfg = kube::Config::from_custom_kubeconfig(kc, &Default::default())
        .await
        .context("kubeconfig")?;
    Ok(kube::Client::try_from(cfg)?)
}

fn op_request(node: &str, body: serde_json::Value) -> Result<http::Request<Vec<u8>>> {
    Ok(
        http::Request::post(format!("/faultline/v1/nodes/{}/ops", node))
            .header("Content-Type", "application/json")
            .body(serde_json::to_vec(&body)?)?,
    )
}

pub async fn run(args: NodeArgs) -> Result<ExitCode> {
    let client = client(&args.kubeconfig).await?;
    let node = &args.node;
    let text = match args.action {
        NodeAction::Logs {
            source,
            follow,
            tail,
        } => {
            let src = match source {
                LogSource::Kubelet => "kubelet",
                LogSource::CsiPlugin => "csi-plugin",
            };
            let mut q = format!("follow={}", follow);
            if let Some(t) = tail {
                q.push_str(&format!("&tail={}", t));
            }
            let req =
                http::Request::get(format!("/faultline/v1/nodes/{}/logs/{}?{}", node, src, q))
                    .body(vec![])?;
            if follow {
                let mut lines = client.request_stream(req).await.map_err(explain)?.lines();
                use futures::StreamExt;
                while let Some(line) = lines.next().await {
                    println!("{}", line?);
                }
                return Ok(ExitCode::SUCCESS);
            }
            client.request_text(req).await.map_err(explain)?
        }
        NodeAction::Mounts => client
            .request_text(
                http::Request::get(format!("/faultline/v1/nodes/{}/mounts", node)).body(vec![])?,
            )
            .await
            .map_err(explain)?,
        NodeAction::Service { service, action } => {
            if service != "kubelet" {
                bail!(
                    "unknown service {:?}: the simulated nodes run only `kubelet`",
                    service
                );
            }
            let op = match action {
                ServiceAction::Status => {
                    let v = client
                        .request_text(
                            http::Request::get(format!(
                                "/faultline/v1/nodes/{}/services/kubelet",
                                node
                            ))
                            .body(vec![])?,
                        )
                        .await
                        .map_err(explain)?;
                    let v: serde_json::Value = serde_json::from_str(&v)?;
                    println!("kubelet: {}", v["state"].as_str().unwrap_or("unknown"));
                    return Ok(ExitCode::SUCCESS);
                }
                ServiceAction::Restart => "kubeletRestart",
                ServiceAction::Stop => "kubeletStop",
                ServiceAction::Start => "kubeletStart",
            };
            message(
                &client
                    .request_text(op_request(node, serde_json::json!({"op": op}))?)
                    .await
                    .map_err(explain)?,
            )
        }
        NodeAction::Reboot => message(
            &client
                .request_text(op_request(node, serde_json::json!({"op": "reboot"}))?)
                .await
                .map_err(explain)?,
        ),
        NodeAction::PowerCycle | NodeAction::PowerOff | NodeAction::PowerOn => {
            let op = match args.action {
                NodeAction::PowerOff => "powerOff",
                NodeAction::PowerOn => "powerOn",
                _ => "powerCycle",
            };
            message(
                &client
                    .request_text(op_request(node, serde_json::json!({ "op": op }))?)
                    .await
                    .map_err(explain)?,
            )
        }
        NodeAction::Op { json } => {
            let body: serde_json::Value = serde_json::from_str(&json)
                .with_context(|| format!("the operation is not valid JSON: {}", json))?;
            message(
                &client
                    .request_text(op_request(node, body)?)
                    .await
                    .map_err(explain)?,
            )
        }
    };
    print!("{}", text);
    Ok(ExitCode::SUCCESS)
}

fn message(reply: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(reply).unwrap_or_default();
    format!("{}\n", v["message"].as_str().unwrap_or(reply))
}

/// Turn an API Status error into the message a person needs.
fn explain(e: kube::Error) -> anyhow::Error {
    match e {
        kube::Error::Api(s) => anyhow::anyhow!("{} ({})", s.message, s.reason),
        other => anyhow::anyhow!(other),
    }
}
