//! The channel framing of Kubernetes' WebSocket subprotocols (`*.channel.k8s.io`): every
//! message carries one channel's bytes, prefixed by the channel number (a byte in the binary
//! protocols, an ASCII digit followed by base64 in the `base64.` ones).

use base64::Engine;
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message;

/// Channel numbers of exec and attach (port-forward numbers its own: 2 per port).
pub const STDIN: u8 = 0;
pub const STDOUT: u8 = 1;
pub const STDERR: u8 = 2;
pub const ERROR: u8 = 3;
pub const RESIZE: u8 = 4;
/// v5 only: `[255, n]` tells the peer that channel `n` is closed (half-close of stdin).
pub const CLOSE: u8 = 255;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    /// `channel.k8s.io` or no subprotocol: the error channel carries plain text.
    V1,
    /// `v4.channel.k8s.io`: the error channel carries a JSON `metav1.Status`.
    V4,
    /// `v5.channel.k8s.io`: v4 plus the close signal.
    V5,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Protocol {
    pub version: Version,
    pub base64: bool,
}

impl Protocol {
    /// The subprotocol names this server speaks, with what they mean.
    pub fn parse(name: &str) -> Option<Protocol> {
        let (version, rest) = match name {
            "" => {
                return Some(Protocol {
                    version: Version::V1,
                    base64: false,
                })
            }
            n if n.starts_with("v4.") => (Version::V4, &n[3..]),
            n if n.starts_with("v5.") => (Version::V5, &n[3..]),
            n => (Version::V1, n),
        };
        match rest {
            "channel.k8s.io" => Some(Protocol {
                version,
                base64: false,
            }),
            "base64.channel.k8s.io" => Some(Protocol {
                version,
                base64: true,
            }),
            _ => None,
        }
    }

    pub fn encode(&self, channel: u8, data: &[u8]) -> Message {
        if self.base64 {
            let mut s = String::with_capacity(1 + data.len() * 4 / 3 + 4);
            s.push((b'0' + channel) as char);
            base64::engine::general_purpose::STANDARD.encode_string(data, &mut s);
            Message::text(s)
        } else {
            let mut v = Vec::with_capacity(1 + data.len());
            v.push(channel);
            v.extend_from_slice(data);
            Message::binary(v)
        }
    }

    /// A data message from the client as (channel, bytes); None for control frames and empty
    /// messages. Like the apiserver's wsstream, the frame's opcode does not matter (the Python
    /// client sends binary-protocol stdin in text frames); the negotiated protocol does.
    pub fn decode(&self, msg: &Message) -> Option<(u8, Vec<u8>)> {
        let bytes: &[u8] = match msg {
            Message::Binary(b) => b,
            Message::Text(t) => t.as_bytes(),
            _ => return None,
        };
        let (&first, rest) = bytes.split_first()?;
        if self.base64 {
            let data = base64::engine::general_purpose::STANDARD
                .decode(rest)
                .ok()?;
            Some((first.checked_sub(b'0')?, data))
        } else {
            Some((first, rest.to_vec()))
        }
    }

    /// What the error channel carries when the process ends: v4+ a JSON `metav1.Status`
    /// (encoding/json of the Go struct: no kind/apiVersion, `metadata` always present), v1 the
    /// failure message only and nothing on success.
    pub fn status_payload(&self, outcome: &Outcome) -> Option<Vec<u8>> {
        match self.version {
            Version::V1 => outcome.failure_message().map(|m| m.into_bytes()),
            _ => Some(serde_json::to_vec(&outcome.status()).unwrap_or_default()),
        }
    }
}

/// How a remote command ended, as the kubelet reports it on the error channel.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Success,
    /// The process exited with this non-zero code; `detail` is the runtime's exit error text.
    ExitCode {
        code: i32,
        detail: String,
    },
    /// The command could not run (`apierrors.NewInternalError`).
    Internal(String),
}

impl Outcome {
    pub fn status(&self) -> Value {
        match self {
            Outcome::Success => json!({"metadata": {}, "status": "Success"}),
            Outcome::ExitCode { code, detail } => json!({
                "metadata": {},
                "status": "Failure",
                "message": format!("command terminated with non-zero exit code: {}", detail),
                "reason": "NonZeroExitCode",
                "details": {"causes": [{"reason": "ExitCode", "message": code.to_string()}]}
            }),
            Outcome::Internal(msg) => json!({
                "metadata": {},
                "status": "Failure",
                "message": format!("Internal error occurred: {}", msg),
                "reason": "InternalError",
                "details": {"causes": [{"message": msg}]},
                "code": 500
            }),
        }
    }

    fn failure_message(&self) -> Option<String> {
        match self {
            Outcome::Success => None,
            _ => self
                .status()
                .get("message")
                .and_then(Value::as_str)
                .map(String::from),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiable_names() {
        assert_eq!(
            Protocol::parse("v5.channel.k8s.io"),
            Some(Protocol {
                version: Version::V5,
                base64: false
            })
        );
        assert_eq!(
            Protocol::parse("v4.base64.channel.k8s.io"),
            Some(Protocol {
                version: Version::V4,
                base64: true
            })
        );
        assert_eq!(
            Protocol::parse("base64.channel.k8s.io"),
            Some(Protocol {
                version: Version::V1,
                base64: true
            })
        );
        assert_eq!(
            Protocol::parse(""),
            Some(Protocol {
                version: Version::V1,
                base64: false
            })
        );
        assert_eq!(Protocol::parse("v6.channel.k8s.io"), None);
        assert_eq!(Protocol::parse("SPDY/3.1+portforward.k8s.io"), None);
    }

    #[test]
    fn base64_round_trip_and_binary_prefix() {
        let b64 = Protocol {
            version: Version::V4,
            base64: true,
        };
        let m = b64.encode(STDOUT, b"hi\n");
        assert_eq!(m, Message::text("1aGkK"));
        assert_eq!(
            b64.decode(&Message::text("0aGkK")),
            Some((STDIN, b"hi\n".to_vec()))
        );
        let bin = Protocol {
            version: Version::V5,
            base64: false,
        };
        assert_eq!(bin.encode(STDERR, b"x"), Message::binary(vec![2, b'x']));
        assert_eq!(
            bin.decode(&Message::binary(vec![255, 0])),
            Some((CLOSE, vec![0]))
        );
        assert_eq!(bin.decode(&Message::binary(Vec::<u8>::new())), None);
        assert_eq!(
            bin.decode(&Message::text("\u{0}typed")),
            Some((STDIN, b"typed".to_vec()))
        );
    }

    #[test]
    fn exit_code_status_matches_the_kubelet_shape() {
        let s = Outcome::ExitCode {
            code: 3,
            detail: "command terminated with exit code 3".into(),
        }
        .status();
        assert_eq!(
            serde_json::to_string(&s).unwrap(),
            r#"{"metadata":{},"status":"Failure","message":"command terminated with non-zero exit code: command terminated with exit code 3","reason":"NonZeroExitCode","details":{"causes":[{"reason":"ExitCode","message":"3"}]}}"#
        );
        let v1 = Protocol {
            version: Version::V1,
            base64: false,
        };
        assert_eq!(v1.status_payload(&Outcome::Success), None);
        assert!(v1
            .status_payload(&Outcome::Internal("boom".into()))
            .unwrap()
            .starts_with(b"Internal error occurred: boom"));
    }
}
