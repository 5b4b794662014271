//! A target is an apiserver given by a kubeconfig: its URL, CA and credentials. Requests are sent
//! raw through `kube::Client::send`, so the corpus controls method, path, query, headers and body.

use anyhow::{Context, Result};
use bytes::Bytes;
use http_body_util::BodyExt;
use kube::config::{AuthInfo, KubeConfigOptions, Kubeconfig};
use std::time::{Duration, Instant};

/// The User-Agent of requests whose step names none (it decides managedFields' `manager` of
/// non-apply writes, so both targets must see the same one).
pub const USER_AGENT: &str = "faultline-differential/v0.1.0";

#[derive(Clone)]
pub struct Target {
    pub name: String,
    client: kube::Client,
    /// The same endpoint and CA without credentials: requests sent with a ServiceAccount token.
    anonymous: kube::Client,
}

/// What came back.
#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    pub content_type: Option<String>,
    pub body: Bytes,
    /// For watches: the frames read (one JSON document each), and whether the server ended the
    /// stream before the bound was reached.
    pub frames: Option<Vec<Bytes>>,
    pub ended: bool,
}

pub struct Request {
    pub method: http::Method,
    /// Path and query, already encoded.
    pub uri: String,
    pub headers: Vec<(String, String)>,
    pub body: Option<Vec<u8>>,
    pub bearer: Option<String>,
    pub watch: Option<(usize, Duration)>,
    pub read_body: bool,
}

impl Target {
    pub async fn from_kubeconfig(name: &str, path: &std::path::Path) -> Result<Target> {
        let kc = Kubeconfig::read_from(path)
            .with_context(|| format!("reading kubeconfig {}", path.display()))?;
        let mut config = kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
            .await
            .with_context(|| format!("loading kubeconfig {}", path.display()))?;
        // The corpus asks for 429s and 503s on purpose: no retries.
        config.default_retry = false;
        config.read_timeout = Some(Duration::from_secs(60));
        config.disable_compression = true;
        let mut anon = config.clone();
        anon.auth_info = AuthInfo::default();
        Ok(Target {
            name: name.into(),
            client: kube::Client::try_from(config)?,
            anonymous: kube::Client::try_from(anon)?,
        })
    }

    /// The client with the kubeconfig's credentials.
    pub fn raw(&self) -> &kube::Client {
        &self.client
    }

    pub async fn send(&self, req: Request) -> Result<Response> {
        let mut b = http::Request::builder().method(req.method).uri(&req.uri);
        let mut has_ua = false;
        for (k, v) in &req.headers {
            has_ua |= k.eq_ignore_ascii_case("user-agent");
            b = b.header(k.as_str(), v.as_str());
        }
        if !has_ua {
            b = b.header("User-Agent", USER_AGENT);
        }
        let client = if let Some(t) = &req.bearer {
            b = b.header("Authorization", format!("Bearer {t}"));
            &self.anonymous
        } else {
            &self.client
        };
        let body = match req.body {
            Some(v) => kube::client::Body::from(v),
            None => kube::client::Body::empty(),
        };
        let request = b.body(body)?;
        let resp = tokio::time::timeout(Duration::from_secs(60), client.send(request))
            .await
            .context("no response within 60 s")?
            .with_context(|| format!("{} {}", self.name, req.uri))?;
        let status = resp.status().as_u16();
        let content_type = resp
            .headers()
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let mut body = resp.into_body();
        if !req.read_body {
            return Ok(Response {
                status,
                content_type,
                body: Bytes::new(),
                frames: None,
                ended: true,
            });
        }
        if let Some((max, timeout)) = req.watch {
            if !(200..300).contains(&status) {
                let bytes = read_all(body).await?;
                return Ok(Response {
                    status,
                    content_type,
                    body: bytes,
                    frames: None,
                    ended: true,
                });
            }
            let deadline = Instant::now() + timeout;
            let mut buf = Vec::new();
            let mut frames = Vec::new();
            let mut ended = false;
            while frames.len() < max {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break;
                }
                match tokio::time::timeout(left, body.frame()).await {
                    Err(_) => break,
                    Ok(None) => {
                        ended = true;
                        break;
                    }
                    Ok(Some(Err(e))) => return Err(anyhow::anyhow!("reading the watch: {e}")),
                    Ok(Some(Ok(frame))) => {
                        if let Ok(data) = frame.into_data() {
                            buf.extend_from_slice(&data);
                            while let Some(pos) = buf.iter().position(|&c| c == b'\n') {
                                let line: Vec<u8> = buf.drain(..=pos).collect();
                                let line = line[..line.len() - 1].to_vec();
                                if !line.iter().all(u8::is_ascii_whitespace) {
                                    frames.push(Bytes::from(line));
                                }
                            }
                        }
                    }
                }
            }
            if ended && !buf.iter().all(u8::is_ascii_whitespace) && frames.len() < max {
                frames.push(Bytes::from(buf));
            }
            frames.truncate(max);
            return Ok(Response {
                status,
                content_type,
                body: Bytes::new(),
                frames: Some(frames),
                ended,
            });
        }
        let bytes = read_all(body).await?;
        Ok(Response {
            status,
            content_type,
            body: bytes,
            frames: None,
            ended: true,
        })
    }
}

async fn read_all(body: kube::client::Body) -> Result<Bytes> {
    let collected = tokio::time::timeout(Duration::from_secs(60), body.collect())
        .await
        .context("body not read within 60 s")?
        .map_err(|e| anyhow::anyhow!("reading the body: {e}"))?;
    Ok(collected.to_bytes())
}
