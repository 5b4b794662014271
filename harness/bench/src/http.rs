//! A minimal HTTP/1.1-over-TLS client (one keep-alive connection per task, no pool, no
//! retries) used to drive both the sim API and the bare hyper baseline, and the bare baseline
//! server itself: hyper answering a fixed body with no work, on loopback, with the same TLS.

use anyhow::{anyhow, Context, Result};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, RwLock};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

#[derive(Clone)]
pub struct Target {
    pub addr: SocketAddr,
    pub token: Option<String>,
    tls: tokio_rustls::TlsConnector,
}

pub type Conn = SendRequest<Full<Bytes>>;

impl Target {
    /// A target at `addr` whose certificate is signed by the CA in `ca_pem`.
    pub fn new(addr: SocketAddr, ca_pem: &str, token: Option<String>) -> Result<Target> {
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
            roots
                .add(cert.context("CA PEM")?)
                .context("adding the CA")?;
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Target {
            addr,
            token,
            tls: tokio_rustls::TlsConnector::from(Arc::new(config)),
        })
    }

    /// Open one keep-alive connection.
    pub async fn connect(&self) -> Result<Conn> {
        let tcp = TcpStream::connect(self.addr)
            .await
            .with_context(|| format!("connecting {}", self.addr))?;
        tcp.set_nodelay(true)?;
        let name = ServerName::IpAddress(self.addr.ip().into());
        let tls = self.tls.connect(name, tcp).await.context("TLS handshake")?;
        let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls)).await?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        Ok(sender)
    }

    pub fn request(
        &self,
        method: &str,
        path: &str,
        body: Option<Bytes>,
        content_type: Option<&str>,
    ) -> Request<Full<Bytes>> {
        let mut b = Request::builder()
            .method(method)
            .uri(path)
            .header("host", self.addr.to_string())
            .header("accept", "application/json");
        if let Some(t) = &self.token {
            b = b.header("authorization", format!("Bearer {}", t));
        }
        if let Some(ct) = content_type {
            b = b.header("content-type", ct);
        }
        b.body(Full::new(body.unwrap_or_default()))
            .expect("static request parts")
    }
}

/// Send a request on `conn` and read the whole response body.
pub async fn send(conn: &mut Conn, req: Request<Full<Bytes>>) -> Result<(StatusCode, Bytes)> {
    conn.ready()
        .await
        .map_err(|e| anyhow!("connection not ready: {e}"))?;
    let resp = conn.send_request(req).await?;
    let status = resp.status();
    let body = resp.into_body().collect().await?.to_bytes();
    Ok((status, body))
}

/// Like `send`, but the body is read frame by frame and not kept: returns its length and how
/// many items its top-level `items` array has (a LIST of 100,000 pods is 278 MiB, and this
/// process's RSS should show the server's memory, not a client's copy of the body).
pub async fn send_counting_items(
    conn: &mut Conn,
    req: Request<Full<Bytes>>,
) -> Result<(StatusCode, usize, usize)> {
    conn.ready()
        .await
        .map_err(|e| anyhow!("connection not ready: {e}"))?;
    let resp = conn.send_request(req).await?;
    let status = resp.status();
    let mut body = resp.into_body();
    let mut counter = ItemCounter::default();
    let mut len = 0;
    while let Some(frame) = body.frame().await {
        if let Ok(data) = frame?.into_data() {
            len += data.len();
            counter.feed(&data);
        }
    }
    Ok((status, len, counter.items))
}

/// Counts the objects directly inside an array directly inside the top-level object (a list's
/// `items`), across chunk boundaries, without parsing them.
#[derive(Default)]
pub struct ItemCounter {
    /// Open containers: true for an object, false for an array.
    stack: Vec<bool>,
    in_string: bool,
    escaped: bool,
    pub items: usize,
}

impl ItemCounter {
    pub fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if self.in_string {
                match (self.escaped, b) {
                    (true, _) => self.escaped = false,
                    (false, b'\\') => self.escaped = true,
                    (false, b'"') => self.in_string = false,
                    _ => {}
                }
                continue;
            }
            match b {
                b'"' => self.in_string = true,
                b'{' => {
                    if self.stack == [true, false] {
                        self.items += 1;
                    }
                    self.stack.push(true);
                }
                b'[' => self.stack.push(false),
                b'}' | b']' => {
                    self.stack.pop();
                }
                _ => {}
            }
        }
    }
}

/// The baseline: hyper serving `/small` (a fixed small JSON) and `/large` (whatever bytes are
/// put in `large`) over the same TLS set-up as the sim, doing no other work.
pub struct BareServer {
    pub addr: SocketAddr,
    pub ca_pem: String,
    /// The body of `/large`, set before a run (e.g. the bytes of a real LIST response).
    pub large: Arc<RwLock<Bytes>>,
    task: JoinHandle<()>,
}

pub const SMALL_BODY: &[u8] =
    br#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success"}"#;

impl BareServer {
    pub async fn start() -> Result<BareServer> {
        let certs = faultline_sim::tls::generate()?;
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let acceptor = tokio_rustls::TlsAcceptor::from(certs.server_config.clone());
        let large: Arc<RwLock<Bytes>> = Arc::default();
        let large2 = large.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    continue;
                };
                let _ = tcp.set_nodelay(true);
                let acceptor = acceptor.clone();
                let large = large2.clone();
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let svc =
                        hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
                            let body = if req.uri().path() == "/large" {
                                large.read().expect("large body").clone()
                            } else {
                                Bytes::from_static(SMALL_BODY)
                            };
                            async move {
                                Ok::<_, Infallible>(
                                    Response::builder()
                                        .header("content-type", "application/json")
                                        .body(Full::new(body))
                                        .expect("static response"),
                                )
                            }
                        });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(tls), svc)
                        .await;
                });
            }
        });
        Ok(BareServer {
            addr,
            ca_pem: certs.ca_pem,
            large,
            task,
        })
    }
}

impl Drop for BareServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[cfg(test)]
mod item_counter_tests {
    use super::ItemCounter;

    #[test]
    fn counts_a_lists_items_across_any_chunking() {
        let body = br#"{"kind":"PodList","metadata":{"resourceVersion":"5","x":[{"a":1}]},"items":[{"metadata":{"name":"a{[\\\"}"},"spec":{"c":[{}]}},{"b":"]}"},{}]}"#;
        for chunk in 1..body.len() {
            let mut c = ItemCounter::default();
            body.chunks(chunk).for_each(|part| c.feed(part));
            assert_eq!(c.items, 3, "chunks of {chunk}");
        }
        let mut empty = ItemCounter::default();
        empty.feed(br#"{"kind":"PodList","items":[]}"#);
        assert_eq!(empty.items, 0);
    }
}
