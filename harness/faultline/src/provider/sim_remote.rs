//! Node operations of a simulated cluster running in another process (`faultline sim up`),
//! through its authenticated control endpoint (`/faultline/v1/...`). This is what lets
//! `--provider existing` drive a long-lived laptop cluster, and `faultline cleanup` heal the
//! faults a killed run left in it: the cluster outlives the harness, like a real one.

use super::sim::{check_supported, effect, Effect};
use super::*;
use crate::model::ops::VolumeRef;
use anyhow::{bail, Context, Result};
use faultline_faults::Phase;
use futures::{AsyncBufReadExt, StreamExt};
use k8s_openapi::api::core::v1::PersistentVolumeClaim;

pub struct RemoteSimOps {
    client: kube::Client,
    nodes: Vec<String>,
}

impl RemoteSimOps {
    /// The sim's node operations when the cluster behind `client` is a `faultline sim up` with
    /// simulated nodes (its control endpoint lists them); None for any other cluster.
    pub async fn detect(client: &kube::Client) -> Option<RemoteSimOps> {
        let req = http::Request::get("/faultline/v1/nodes")
            .body(vec![])
            .ok()?;
        let text = client.request_text(req).await.ok()?;
        let v: serde_json::Value = serde_json::from_str(&text).ok()?;
        let nodes = v["nodes"]
            .as_array()?
            .iter()
            .filter_map(|n| n["name"].as_str().map(String::from))
            .collect();
        Some(RemoteSimOps {
            client: client.clone(),
            nodes,
        })
    }

    async fn pv(&self, v: &VolumeRef) -> Result<(String, bool)> {
        match v {
            VolumeRef::Pv(p) => Ok((p.clone(), false)),
            VolumeRef::DeletedPv(p) => Ok((p.clone(), true)),
            VolumeRef::Pvc(c) => {
                let (ns, name) = c.split_once('/').unwrap_or(("default", c));
                let pvc = kube::Api::<PersistentVolumeClaim>::namespaced(self.client.clone(), ns)
                    .get(name)
                    .await
                    .with_context(|| format!("PVC {ns}/{name}"))?;
                let pv = pvc
                    .spec
                    .and_then(|s| s.volume_name)
                    .filter(|v| !v.is_empty());
                Ok((
                    pv.ok_or_else(|| {
                        anyhow::anyhow!("PVC {ns}/{name} is not bound to a volume yet")
                    })?,
                    false,
                ))
            }
        }
    }

    async fn run(&self, op: &NodeOperation, phase: Phase) -> Result<()> {
        check_supported(op)?;
        let pv = match op.volume() {
            Some(v) => Some(self.pv(v).await?),
            None => None,
        };
        let Effect::Node(prims) = effect(op, phase, pv) else {
            // The control endpoint drives nodes; the API server's faults are in-process only.
            bail!(
                "`{}` is injected into the API server of the in-process sim only (--provider sim)",
                op.key()
            );
        };
        let node = op.node().unwrap_or_default();
        for p in prims {
            let req = http::Request::post(format!("/faultline/v1/nodes/{node}/ops"))
                .header("Content-Type", "application/json")
                .body(serde_json::to_vec(&p)?)?;
            self.client.request_text(req).await.map_err(|e| match e {
                kube::Error::Api(s) => anyhow::anyhow!("{} on {node}: {}", op.key(), s.message),
                other => anyhow::anyhow!("{} on {node}: {other}", op.key()),
            })?;
        }
        Ok(())
    }
}

impl NodeOps for RemoteSimOps {
    fn apply<'a>(&'a self, op: &'a NodeOperation) -> BoxFuture<'a, Result<()>> {
        Box::pin(self.run(op, Phase::Inject))
    }
    fn heal<'a>(&'a self, op: &'a NodeOperation) -> BoxFuture<'a, Result<()>> {
        Box::pin(self.run(op, Phase::Heal))
    }
    /// Follows each node's log from now on (`?follow=true&tail=0`); a stream ends when the
    /// receiver is dropped or the server goes away.
    fn subscribe_logs(
        &self,
        node: Option<&str>,
        source: LogSource,
    ) -> broadcast::Receiver<LogLine> {
        let (tx, rx) = broadcast::channel(4096);
        let path = match source {
            LogSource::Kubelet => "kubelet",
            LogSource::CsiPlugin => "csi-plugin",
            LogSource::Controller => return rx,
        };
        for name in self
            .nodes
            .iter()
            .filter(|n| node.is_none_or(|want| want == n.as_str()))
        {
            let (client, tx, name) = (self.client.clone(), tx.clone(), name.clone());
            let uri = format!("/faultline/v1/nodes/{name}/logs/{path}?follow=true&tail=0");
            tokio::spawn(async move {
                let Ok(req) = http::Request::get(uri).body(vec![]) else {
                    return;
                };
                let Ok(stream) = client.request_stream(req).await else {
                    return;
                };
                let mut lines = stream.lines();
                while let Some(Ok(text)) = lines.next().await {
                    if tx
                        .send(LogLine {
                            source,
                            node: Some(name.clone()),
                            text,
                        })
                        .is_err()
                    {
                        return; // nobody listens any more
                    }
                }
            });
        }
        rx
    }
}
