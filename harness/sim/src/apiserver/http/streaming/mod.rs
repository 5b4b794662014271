//! `pods/exec`, `pods/attach` and `pods/portforward`: the checks the apiserver makes before
//! it connects to the kubelet (pod, container, node), the subprotocol negotiation of the
//! kubelet and of the apiserver's translators (v5 exec, SPDY-over-WebSocket port-forward),
//! the upgrade, and then a session against the simulated container (`process`, `ports`).
//!
//! Errors before the upgrade are `Status` responses like the apiserver's; errors the kubelet
//! finds answer 500 with its text, except through the v5 translator, which upgrades first
//! and reports them on the error channel.

pub mod channels;
pub mod ports;
pub mod process;
pub mod session;
pub mod spdy;

use super::route::ResourcePath;
use super::{error_response, HttpState};
use crate::apiserver::meta;
use crate::apiserver::status::ApiError;
use axum::body::Body;
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use channels::{Outcome, Protocol, Version};
use serde_json::Value;
use session::{Output, Streams};
use std::time::Duration;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::Role;
use tokio_tungstenite::WebSocketStream;

const SUBRESOURCES: [&str; 3] = ["exec", "attach", "portforward"];
/// The WebSocket subprotocol prefix of SPDY tunnelled through WebSocket (kubectl port-forward).
const SPDY_TUNNEL_PREFIX: &str = "SPDY/3.1+";
const PORTFORWARD_SPDY: &str = "portforward.k8s.io";
/// How often an attached client's view of the container output is refreshed.
const ATTACH_POLL: Duration = Duration::from_millis(200);

/// Whether the request addresses a streaming subresource of a pod.
pub fn is_streaming(p: &ResourcePath) -> bool {
    p.group.is_empty()
        && p.plural == "pods"
        && p.name.is_some()
        && p.namespace.is_some()
        && p.sub.as_deref().is_some_and(|s| SUBRESOURCES.contains(&s))
}

/// The transport a client asked for.
enum Transport {
    WebSocket { key: String, offered: Vec<String> },
    Spdy { offered: Vec<String> },
}

pub async fn serve(s: &HttpState, mut parts: Parts, p: ResourcePath) -> Response {
    match prepare(s, &mut parts, &p) {
        Ok(r) | Err(r) => r,
    }
}

// Both sides are responses: the upgrade, or the error to answer with instead.
#[allow(clippy::result_large_err)]
fn prepare(s: &HttpState, parts: &mut Parts, p: &ResourcePath) -> Result<Response, Response> {
    let api = &s.api;
    let (ns, name, sub) = (
        p.namespace.clone().unwrap_or_default(),
        p.name.clone().unwrap_or_default(),
        p.sub.clone().unwrap_or_default(),
    );
    let err = |e: ApiError| error_response(&e);
    let (injected, _) = s.faults.decide("create", "pods");
    if let Some(e) = injected {
        return Err(err(e));
    }
    let query: Vec<(String, String)> =
        form_urlencoded::parse(parts.uri.query().unwrap_or("").as_bytes())
            .into_owned()
            .collect();
    let q = |k: &str| query.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    let flag = |k: &str| matches!(q(k), Some("true" | "1" | "True"));
    let rt = api.resource("", "v1", "pods").map_err(err)?;
    let pod = api.get_stored(&rt, &ns, &name).map_err(err)?.kept();
    let container = if sub == "portforward" {
        String::new()
    } else {
        choose_container(&pod, q("container")).map_err(err)?
    };
    if meta::str_at(&pod, "/spec/nodeName")
        .unwrap_or("")
        .is_empty()
    {
        return Err(err(ApiError::bad_request(format!(
            "pod {} does not have a host assigned",
            name
        ))));
    }
    let streams = Streams {
        stdin: flag("stdin"),
        stdout: flag("stdout"),
        stderr: flag("stderr"),
        tty: flag("tty"),
    };
    let argv: Vec<String> = query
        .iter()
        .filter(|(k, _)| k == "command")
        .map(|(_, v)| v.clone())
        .collect();
    if sub != "portforward" && !(streams.stdin || streams.stdout || streams.stderr) {
        return Err(err(ApiError::bad_request(
            "you must specify at least 1 of stdin, stdout, stderr",
        )));
    }
    if sub == "exec" && argv.is_empty() {
        return Err(err(ApiError::bad_request(
            "you must specify at least one command for the container",
        )));
    }
    let transport = transport(&parts.headers)
        .ok_or_else(|| err(ApiError::bad_request("Upgrade request required")))?;
    let on_upgrade = parts
        .extensions
        .remove::<hyper::upgrade::OnUpgrade>()
        .ok_or_else(|| err(ApiError::bad_request("Upgrade request required")))?;

    if sub == "portforward" {
        let listeners = ports::listeners(&pod).map_err(|m| kubelet_error(&m))?;
        if !pod_running(&pod) {
            return Err(kubelet_error(&format!(
                "pod not found ({:?})",
                format!("{}_{}", name, ns)
            )));
        }
        let refused_pod = pod.clone();
        let refused = move |port: u16| ports::refused_message(&refused_pod, port);
        return match transport {
            Transport::Spdy { offered } => {
                if !offered.iter().any(|o| o == PORTFORWARD_SPDY) {
                    return Err(handshake_refused(&offered, &[PORTFORWARD_SPDY]));
                }
                tokio::spawn(async move {
                    if let Ok(up) = on_upgrade.await {
                        spdy::serve_portforward(
                            hyper_util::rt::TokioIo::new(up),
                            move |p| listeners.get(&p).cloned(),
                            refused,
                        )
                        .await;
                    }
                });
                Ok(switching("SPDY/3.1", None)
                    .header("X-Stream-Protocol-Version", PORTFORWARD_SPDY)
                    .body(Body::empty())
                    .unwrap_or_default())
            }
            Transport::WebSocket { key, offered } => {
                let tunnel = format!("{}{}", SPDY_TUNNEL_PREFIX, PORTFORWARD_SPDY);
                if offered.contains(&tunnel) {
                    spawn_ws(on_upgrade, move |ws| {
                        session::portforward_tunnel(ws, listeners, refused)
                    });
                    return Ok(websocket_accept(&key, &tunnel));
                }
                let proto = negotiate(
                    &offered,
                    &["", "v4.channel.k8s.io", "v4.base64.channel.k8s.io"],
                )?;
                let wanted = ports::parse_ports(
                    &query
                        .iter()
                        .filter(|(k, _)| k == "ports")
                        .map(|(_, v)| v.clone())
                        .collect::<Vec<_>>(),
                )
                .map_err(|m| kubelet_error(&m))?;
                let (name, p) = proto;
                spawn_ws(on_upgrade, move |ws| {
                    session::portforward_channels(ws, p, wanted, listeners, refused)
                });
                Ok(websocket_accept(&key, &name))
            }
        };
    }

    let Transport::WebSocket { key, offered } = transport else {
        return Err(err(ApiError::bad_request(
            "exec and attach are served over WebSocket only (SPDY is not simulated)",
        )));
    };
    // v5 goes through the apiserver's stream translator; the rest is the kubelet's.
    let (pname, proto) = if offered.iter().any(|o| o == "v5.channel.k8s.io") {
        (
            "v5.channel.k8s.io".to_string(),
            Protocol {
                version: Version::V5,
                base64: false,
            },
        )
    } else {
        negotiate(
            &offered,
            &[
                "",
                "channel.k8s.io",
                "base64.channel.k8s.io",
                "v4.channel.k8s.io",
                "v4.base64.channel.k8s.io",
            ],
        )?
    };
    let not_found = format!("container not found ({:?})", container);
    let running = container_running(&pod, &container);
    if !running && proto.version != Version::V5 {
        return Err(kubelet_error(&not_found));
    }
    if sub == "exec" {
        let program = if running {
            process::resolve(&pod, &container, &argv).map_err(|m| {
                Outcome::Internal(format!("error executing command in container: {}", m))
            })
        } else {
            Err(Outcome::Internal(format!(
                "unable to upgrade connection: {}",
                not_found
            )))
        };
        spawn_ws(on_upgrade, move |ws| {
            session::exec(ws, proto, streams, program, argv)
        });
    } else if !running {
        spawn_ws(on_upgrade, move |ws| {
            session::exec(
                ws,
                proto,
                streams,
                Err(Outcome::Internal(format!(
                    "unable to upgrade connection: {}",
                    not_found
                ))),
                vec![],
            )
        });
    } else {
        let api = s.api.clone();
        let instance = container_id(&pod, &container);
        let mut seen = api
            .pod_logs(&ns, &name, Some(&container), false, false)
            .map(|l| l.len())
            .unwrap_or(0);
        let poll = move || {
            let current = api
                .resource("", "v1", "pods")
                .and_then(|rt| api.get_stored(&rt, &ns, &name))
                .map(|o| o.kept());
            match current {
                Ok(pod)
                    if container_running(&pod, &container)
                        && container_id(&pod, &container) == instance =>
                {
                    let text = api
                        .pod_logs(&ns, &name, Some(&container), false, false)
                        .unwrap_or_default();
                    let new = text.as_bytes().get(seen..).unwrap_or_default().to_vec();
                    seen = seen.max(text.len());
                    Output::Bytes(new)
                }
                _ => Output::Ended,
            }
        };
        spawn_ws(on_upgrade, move |ws| {
            session::attach(ws, proto, streams, ATTACH_POLL, poll)
        });
    }
    Ok(websocket_accept(&key, &pname))
}

/// The apiserver's container choice (`validateContainer`): the only one, or the named one.
fn choose_container(pod: &Value, wanted: Option<&str>) -> Result<String, ApiError> {
    let name = meta::name(pod);
    let all: Vec<&str> = [
        "/spec/initContainers",
        "/spec/containers",
        "/spec/ephemeralContainers",
    ]
    .iter()
    .filter_map(|p| pod.pointer(p).and_then(Value::as_array))
    .flatten()
    .filter_map(|c| c.get("name").and_then(Value::as_str))
    .collect();
    let main: Vec<&str> = pod
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| c.get("name").and_then(Value::as_str))
        .collect();
    match wanted.filter(|w| !w.is_empty()) {
        Some(w) if all.contains(&w) => Ok(w.to_string()),
        Some(w) => Err(ApiError::bad_request(format!(
            "container {} is not valid for pod {}",
            w, name
        ))),
        None if main.len() == 1 => Ok(main[0].to_string()),
        None if main.is_empty() => Err(ApiError::bad_request(format!(
            "a container name must be specified for pod {}",
            name
        ))),
        None => Err(ApiError::bad_request(format!(
            "a container name must be specified for pod {}, choose one of: [{}]",
            name,
            all.join(" ")
        ))),
    }
}

fn statuses(pod: &Value) -> impl Iterator<Item = &Value> {
    [
        "/status/initContainerStatuses",
        "/status/containerStatuses",
        "/status/ephemeralContainerStatuses",
    ]
    .into_iter()
    .filter_map(|p| pod.pointer(p).and_then(Value::as_array))
    .flatten()
}

/// The kubelet finds only running containers (`findContainer` lists the runtime's pods).
fn container_running(pod: &Value, container: &str) -> bool {
    statuses(pod).any(|s| {
        s.get("name").and_then(Value::as_str) == Some(container)
            && s.pointer("/state/running").is_some()
    })
}

/// Which instance of the container runs: its ID and restart count.
fn container_id(pod: &Value, container: &str) -> Option<(String, i64)> {
    let s = statuses(pod).find(|s| s.get("name").and_then(Value::as_str) == Some(container))?;
    Some((
        s.get("containerID")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        s.get("restartCount").and_then(Value::as_i64).unwrap_or(0),
    ))
}

fn pod_running(pod: &Value) -> bool {
    statuses(pod).any(|s| s.pointer("/state/running").is_some())
}

fn header_list(headers: &HeaderMap, name: &str) -> Vec<String> {
    headers
        .get_all(name)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

fn transport(headers: &HeaderMap) -> Option<Transport> {
    let upgrade = headers
        .get(header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    if upgrade.contains("websocket") {
        let key = headers
            .get(header::SEC_WEBSOCKET_KEY)
            .and_then(|v| v.to_str().ok())?
            .to_string();
        return Some(Transport::WebSocket {
            key,
            offered: header_list(headers, "sec-websocket-protocol"),
        });
    }
    if upgrade.contains("spdy/3.1") {
        return Some(Transport::Spdy {
            offered: header_list(headers, "x-stream-protocol-version"),
        });
    }
    None
}

/// wsstream's negotiation: the client's first offer the server supports; no offer means "".
#[allow(clippy::result_large_err)] // the error is the response to answer with
fn negotiate(offered: &[String], supported: &[&str]) -> Result<(String, Protocol), Response> {
    let none = [String::new()];
    let offers = if offered.is_empty() {
        &none[..]
    } else {
        offered
    };
    offers
        .iter()
        .find(|o| supported.contains(&o.as_str()))
        .and_then(|o| Protocol::parse(o).map(|p| (o.clone(), p)))
        .ok_or_else(|| handshake_refused(offered, supported))
}

/// The WebSocket server's refusal of unsupported subprotocols (x/net/websocket: 403).
fn handshake_refused(offered: &[String], supported: &[&str]) -> Response {
    let msg = format!(
        "requested protocol(s) are not supported: {:?}; supports {:?}",
        offered, supported
    );
    (
        StatusCode::FORBIDDEN,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        msg,
    )
        .into_response()
}

/// An error the kubelet answers (plain text, 500), which the apiserver's proxy passes on.
fn kubelet_error(msg: &str) -> Response {
    (
        StatusCode::INTERNAL_SERVER_ERROR,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        msg.to_string(),
    )
        .into_response()
}

fn switching(upgrade: &str, protocol: Option<&str>) -> axum::http::response::Builder {
    let mut b = Response::builder()
        .status(StatusCode::SWITCHING_PROTOCOLS)
        .header(header::CONNECTION, "Upgrade")
        .header(header::UPGRADE, upgrade);
    if let Some(p) = protocol
        .filter(|p| !p.is_empty())
        .and_then(|p| HeaderValue::from_str(p).ok())
    {
        b = b.header(header::SEC_WEBSOCKET_PROTOCOL, p);
    }
    b
}

fn websocket_accept(key: &str, protocol: &str) -> Response {
    switching("websocket", Some(protocol))
        .header(
            header::SEC_WEBSOCKET_ACCEPT,
            derive_accept_key(key.as_bytes()),
        )
        .body(Body::empty())
        .unwrap_or_default()
}

type Upgraded = hyper_util::rt::TokioIo<hyper::upgrade::Upgraded>;

fn spawn_ws<F, Fut>(on_upgrade: hyper::upgrade::OnUpgrade, run: F)
where
    F: FnOnce(WebSocketStream<Upgraded>) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    tokio::spawn(async move {
        if let Ok(up) = on_upgrade.await {
            let ws = WebSocketStream::from_raw_socket(
                hyper_util::rt::TokioIo::new(up),
                Role::Server,
                None,
            )
            .await;
            run(ws).await;
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn container_choice_like_the_apiserver() {
        let pod = json!({"metadata": {"name": "p"}, "spec": {"initContainers": [{"name": "init"}], "containers": [{"name": "a"}, {"name": "b"}]}});
        assert_eq!(
            choose_container(&pod, None).unwrap_err().message,
            "a container name must be specified for pod p, choose one of: [init a b]"
        );
        assert_eq!(
            choose_container(&pod, Some("x")).unwrap_err().message,
            "container x is not valid for pod p"
        );
        assert_eq!(choose_container(&pod, Some("init")).unwrap(), "init");
        let one = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "a"}]}});
        assert_eq!(choose_container(&one, None).unwrap(), "a");
    }

    #[test]
    fn negotiation_takes_the_clients_first_supported_offer() {
        let kubelet = [
            "",
            "channel.k8s.io",
            "base64.channel.k8s.io",
            "v4.channel.k8s.io",
            "v4.base64.channel.k8s.io",
        ];
        let (n, p) = negotiate(
            &[
                "v9.x".into(),
                "v4.channel.k8s.io".into(),
                "channel.k8s.io".into(),
            ],
            &kubelet,
        )
        .unwrap();
        assert_eq!((n.as_str(), p.version), ("v4.channel.k8s.io", Version::V4));
        assert_eq!(negotiate(&[], &kubelet).unwrap().0, "");
        assert_eq!(
            negotiate(&["v9.x".into()], &kubelet).unwrap_err().status(),
            StatusCode::FORBIDDEN
        );
    }
}
