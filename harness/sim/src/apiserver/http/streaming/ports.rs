//! What listens on a simulated pod's ports: the pod's `sim.faultline.dev/ports` annotation
//! declares it, every other port is closed (the runtime's "connection refused").
//!
//! ```yaml
//! sim.faultline.dev/ports: |
//!   7000: echo                       # every byte comes back
//!   8080:                            # one HTTP response per connection, then close
//!     http: {status: 200, body: "ok\n", headers: {Content-Type: text/plain}}
//! ```

use super::process::annotation;
use crate::apiserver::meta;
use serde::Deserialize;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

pub const PORTS_ANNOTATION: &str = "sim.faultline.dev/ports";

#[derive(Debug, Clone, PartialEq)]
pub enum Listener {
    Echo,
    Http(HttpReply),
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpReply {
    #[serde(default = "ok")]
    pub status: u16,
    #[serde(default)]
    pub body: String,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
}

fn ok() -> u16 {
    200
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RawListener {
    Name(String),
    Http { http: HttpReply },
}

/// The listeners a pod declares, or an error naming the pod, the annotation and the port.
pub fn listeners(pod: &Value) -> Result<BTreeMap<u16, Listener>, String> {
    let Some(text) = annotation(pod, PORTS_ANNOTATION) else {
        return Ok(BTreeMap::new());
    };
    let whence = format!(
        "pod {}/{}: annotation {}",
        meta::namespace(pod),
        meta::name(pod),
        PORTS_ANNOTATION
    );
    let raw: BTreeMap<u16, serde_yaml::Value> =
        serde_yaml::from_str(text).map_err(|e| format!("{}: {}", whence, e))?;
    raw.into_iter()
        .map(|(port, v)| {
            let l = match serde_yaml::from_value::<RawListener>(v) {
                Ok(RawListener::Name(n)) if n == "echo" => Listener::Echo,
                Ok(RawListener::Http { http }) => Listener::Http(http),
                _ => {
                    return Err(format!(
                        "{}: port {}: expected `echo` or `{{http: {{status, body, headers}}}}`",
                        whence, port
                    ))
                }
            };
            Ok((port, l))
        })
        .collect()
}

/// One connection to a listener: bytes in, bytes out, and whether the listener closed it.
#[derive(Debug)]
pub struct Connection {
    listener: Listener,
    request: Vec<u8>,
    closed: bool,
}

impl Connection {
    pub fn new(listener: Listener) -> Self {
        Connection {
            listener,
            request: Vec::new(),
            closed: false,
        }
    }

    /// Bytes from the client; returns what the listener writes back.
    pub fn receive(&mut self, data: &[u8]) -> Vec<u8> {
        if self.closed {
            return Vec::new();
        }
        match &self.listener {
            Listener::Echo => data.to_vec(),
            Listener::Http(reply) => {
                self.request.extend_from_slice(data);
                if self.request.windows(4).any(|w| w == b"\r\n\r\n")
                    || self.request.windows(2).any(|w| w == b"\n\n")
                {
                    self.closed = true;
                    http_response(reply)
                } else {
                    Vec::new()
                }
            }
        }
    }

    /// The client closed its side: an echo server closes too.
    pub fn client_closed(&mut self) {
        self.closed = true;
    }

    pub fn is_closed(&self) -> bool {
        self.closed
    }
}

fn http_response(r: &HttpReply) -> Vec<u8> {
    let mut out = format!("HTTP/1.1 {} {}\r\n", r.status, reason_phrase(r.status));
    for (k, v) in &r.headers {
        out.push_str(&format!("{}: {}\r\n", k, v));
    }
    out.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n{}",
        r.body.len(),
        r.body
    ));
    out.into_bytes()
}

fn reason_phrase(code: u16) -> &'static str {
    axum::http::StatusCode::from_u16(code)
        .ok()
        .and_then(|c| c.canonical_reason())
        .unwrap_or("")
}

/// The kubelet's message for a port nothing listens on (containerd runtime: the pod is named
/// by its sandbox ID, which the sim derives from the pod UID).
pub fn refused_message(pod: &Value, port: u16) -> String {
    let digest = Sha256::digest(meta::uid(pod).as_bytes());
    let sandbox: String = digest.iter().map(|b| format!("{:02x}", b)).collect();
    let h = &sandbox;
    let netns = format!(
        "/var/run/netns/cni-{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    );
    format!(
        "error forwarding port {port} to pod {sandbox}, uid : failed to execute portforward in network namespace {netns:?}: failed to connect to localhost:{port} inside namespace {sandbox:?}, IPv4: dial tcp4 127.0.0.1:{port}: connect: connection refused IPv6 dial tcp6 [::1]:{port}: connect: connection refused "
    )
}

/// `ports=80&ports=8080,9090`, checked like the kubelet.
pub fn parse_ports(values: &[String]) -> Result<Vec<u16>, String> {
    if values.is_empty() {
        return Err("query parameter \"port\" is required".into());
    }
    let mut out = Vec::new();
    for v in values {
        if v.is_empty() {
            return Err("query parameter \"port\" cannot be empty".into());
        }
        for p in v.split(',') {
            let port: u16 = p
                .parse()
                .map_err(|e| format!("unable to parse {:?} as a port: {}", v, e))?;
            if port < 1 {
                return Err(format!("port {:?} must be > 0", v));
            }
            out.push(port);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(ports: &str) -> Value {
        json!({"metadata": {"name": "p", "namespace": "ns", "uid": "u-1", "annotations": {PORTS_ANNOTATION: ports}}})
    }

    #[test]
    fn declared_listeners() {
        let l = listeners(&pod(
            "7000: echo\n8080:\n  http: {status: 404, body: nope}\n",
        ))
        .unwrap();
        assert_eq!(l[&7000], Listener::Echo);
        let Listener::Http(h) = &l[&8080] else {
            panic!()
        };
        assert_eq!((h.status, h.body.as_str()), (404, "nope"));
        let err = listeners(&pod("7000: telnet\n")).unwrap_err();
        assert!(
            err.starts_with("pod ns/p: annotation sim.faultline.dev/ports: port 7000: expected"),
            "{err}"
        );
        assert!(listeners(&pod("x: echo")).unwrap_err().contains("ns/p"));
    }

    #[test]
    fn http_listener_answers_once_the_request_is_complete() {
        let mut c = Connection::new(Listener::Http(HttpReply {
            status: 200,
            body: "ok\n".into(),
            headers: BTreeMap::new(),
        }));
        assert!(c.receive(b"GET / HTTP/1.1\r\n").is_empty());
        let r = String::from_utf8(c.receive(b"Host: x\r\n\r\n")).unwrap();
        assert_eq!(
            r,
            "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n"
        );
        assert!(c.is_closed());
    }

    #[test]
    fn ports_query_and_refusal_text() {
        assert_eq!(
            parse_ports(&["80".into(), "8080,9090".into()]).unwrap(),
            vec![80, 8080, 9090]
        );
        assert!(parse_ports(&[]).unwrap_err().contains("required"));
        assert!(parse_ports(&["0".into()])
            .unwrap_err()
            .contains("must be > 0"));
        let m = refused_message(&pod(""), 8080);
        assert!(
            m.starts_with("error forwarding port 8080 to pod ")
                && m.contains("connect: connection refused"),
            "{m}"
        );
    }
}
