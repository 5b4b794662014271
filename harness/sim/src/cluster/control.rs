//! The node control endpoint (`/faultline/v1/...`), authenticated like the API: what
//! `faultline node <NODE> ...` talks to. It exposes the node primitives and the node-side
//! views (kubelet and CSI plugin logs, the mount table, the kubelet service state). The API
//! server's router serves it (`http::ControlEndpoint`) after authentication.

use super::node::state::KubeletProcess;
use super::nodeops::NodeOp;
use super::SimCluster;
use crate::apiserver::http::{json_response, negotiate::Output, ControlEndpoint};
use crate::apiserver::status::{ApiError, ApiResult};
use axum::body::Body;
use axum::http::{header, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use faultline_faults::{Lifetime, NodeOperation, Phase};
use serde_json::json;
use std::collections::HashMap;
use std::convert::Infallible;

impl ControlEndpoint for SimCluster {
    fn handle(
        &self,
        method: &Method,
        path: &[String],
        query: &HashMap<String, String>,
        body: &[u8],
    ) -> ApiResult<Response> {
        handle(self, method, path, query, body)
    }
}

fn handle(
    cluster: &SimCluster,
    method: &Method,
    path: &[String],
    query: &HashMap<String, String>,
    body: &[u8],
) -> ApiResult<Response> {
    let p: Vec<&str> = path.iter().map(String::as_str).collect();
    match (method.clone(), p.as_slice()) {
        (Method::GET, ["nodes"]) => {
            let nodes: Vec<_> = cluster
                .nodes
                .values()
                .map(|n| json!({"name": n.name, "kubelet": describe(&n.state.lock().kubelet), "internalIP": n.internal_ip()}))
                .collect();
            Ok(json_response(
                StatusCode::OK,
                &json!({"nodes": nodes}),
                &Output::Json,
                &[],
            ))
        }
        (Method::GET, ["nodes", node, "logs", source]) => {
            let n = cluster.node(node)?;
            let buf = match *source {
                "kubelet" => &n.kubelet_log,
                "csi-plugin" => &n.csi_log,
                other => {
                    return Err(ApiError::bad_request(format!(
                        "unknown log source {:?}: use kubelet or csi-plugin",
                        other
                    )))
                }
            };
            let mut lines = buf.snapshot();
            if let Some(t) = query.get("tail").and_then(|t| t.parse::<usize>().ok()) {
                let start = lines.len().saturating_sub(t);
                lines.drain(..start);
            }
            let head: String = lines.iter().map(|l| format!("{}\n", l)).collect();
            if query.get("follow").map(|f| f == "true").unwrap_or(false) {
                let rx = buf.subscribe();
                let first =
                    futures::stream::once(
                        async move { Ok::<Bytes, Infallible>(Bytes::from(head)) },
                    );
                let rest = futures::stream::unfold(rx, |mut rx| async move {
                    loop {
                        match rx.recv().await {
                            Ok(l) => {
                                return Some((
                                    Ok::<Bytes, Infallible>(Bytes::from(format!("{}\n", l))),
                                    rx,
                                ))
                            }
                            Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                            Err(_) => return None,
                        }
                    }
                });
                let s = futures::StreamExt::chain(first, rest);
                return Ok(Response::builder()
                    .status(StatusCode::OK)
                    .header(header::CONTENT_TYPE, "text/plain")
                    .body(Body::from_stream(s))
                    .expect("response"));
            }
            Ok((StatusCode::OK, [(header::CONTENT_TYPE, "text/plain")], head).into_response())
        }
        (Method::GET, ["nodes", node, "mounts"]) => {
            let text: String = cluster
                .mounts(node)?
                .iter()
                .map(|l| format!("{}\n", l))
                .collect();
            Ok((StatusCode::OK, [(header::CONTENT_TYPE, "text/plain")], text).into_response())
        }
        (Method::GET, ["nodes", node, "services", "kubelet"]) => {
            let st = describe(&cluster.node(node)?.state.lock().kubelet);
            Ok(json_response(
                StatusCode::OK,
                &json!({"service": "kubelet", "state": st}),
                &Output::Json,
                &[],
            ))
        }
        (Method::POST, ["nodes", node, "ops"]) => {
            let op: NodeOp = serde_json::from_slice(body)
                .map_err(|e| ApiError::bad_request(format!("invalid node operation: {}", e)))?;
            let message = cluster.node_op(node, &op)?;
            Ok(json_response(
                StatusCode::OK,
                &json!({"node": node, "message": message}),
                &Output::Json,
                &[],
            ))
        }
        // A node operation of the fault catalogue, as a scenario writes it
        // (`{"csiDriverUnregistered": {"node": "worker-01"}}`): injected, or healed by its
        // catalogue inverse (go/faultlinetest's InjectOperation and Heal).
        (Method::POST, ["faults"]) => catalogue_operation(cluster, body, Phase::Inject),
        (Method::POST, ["faults", "heal"]) => catalogue_operation(cluster, body, Phase::Heal),
        _ => Err(ApiError::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )),
    }
}

fn catalogue_operation(cluster: &SimCluster, body: &[u8], phase: Phase) -> ApiResult<Response> {
    let op: NodeOperation = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("a fault catalogue operation: {e}")))?;
    cluster.apply_operation(&op, phase).map_err(|e| {
        let reason = match e.status_code() {
            404 => "NotFound",
            409 => "Conflict",
            _ => "BadRequest",
        };
        ApiError::new(e.status_code(), reason, e.to_string())
    })?;
    let lifetime = match op.lifetime() {
        Lifetime::Held => "held",
        Lifetime::OneShot => "oneShot",
    };
    Ok(json_response(
        StatusCode::OK,
        &json!({
            "operation": op.key(),
            "node": op.node(),
            "phase": if phase == Phase::Inject { "inject" } else { "heal" },
            "lifetime": lifetime,
        }),
        &Output::Json,
        &[],
    ))
}

/// systemd-like state of the kubelet service.
pub fn describe(p: &KubeletProcess) -> &'static str {
    match p {
        KubeletProcess::Running => "Running",
        KubeletProcess::Stopped => "Stopped",
        KubeletProcess::Hung => "Running (hung)",
        KubeletProcess::Restarting { .. } => "Restarting",
        KubeletProcess::Rebooting { until: Some(_) } => "Rebooting",
        KubeletProcess::Rebooting { until: None } => "Rebooting (stuck)",
        KubeletProcess::PoweredOff => "Powered off",
    }
}
