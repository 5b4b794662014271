//! The perturbing API proxy for real clusters (issue #31): a TLS listener on 127.0.0.1 that
//! the controller's kubeconfig points at (with the proxy's own CA: client-go sends a bearer
//! token only over https, `clientcmd`'s client_config.go). It forwards every request, watch streams
//! included, to the real apiserver over TLS (trusting the CA of the admin kubeconfig) with the
//! controller's own `Authorization` header, so that the apiserver authenticates and
//! authorizes the controller as itself; nothing of the admin's credentials is sent.
//!
//! It drives the same [`Tracer`] as the sim's HTTP layer (`faultline_sim::http::trace`), so
//! `faultline explore` and `perturb:` do not care which provider serves the API:
//! - the trace: each resource request (verb, resource, namespace, name, resourceVersion,
//!   answer code) and each watch event delivered;
//! - `crashAfterMutation`: the gate holds the controller's requests after its k-th write until
//!   the runner has killed it; what was held across the crash is refused with 503;
//! - `watchRelist`: the n-th watch event is withheld and the watch ends with a 410 Expired
//!   ERROR event, as kube-apiserver's cacher sends it when a watcher fell behind
//!   (`staging/src/k8s.io/apiserver/pkg/storage/cacher/cache_watcher.go`);
//! - `staleRead`: a read the watch cache would answer (`resourceVersion=0` or NotOlderThan, as
//!   `cacher.go` decides) is answered with an earlier answer the proxy saw for the same path
//!   and query, when that state was still current within the window. The proxy knows only
//!   the states it has served; the sim hides any change from its store's history.
//!
//! Every request through the proxy is the controller's: only its kubeconfig points here.

use anyhow::{Context, Result};
use bytes::Bytes;
use faultline_sim::http::trace::{self, Gate, TraceKind, Tracer, Verb};
use http::{header, HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::{combinators::UnsyncBoxBody, BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper_util::rt::TokioIo;
use parking_lot::Mutex;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::convert::Infallible;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

type ProxyBody = UnsyncBoxBody<Bytes, std::io::Error>;

/// A running proxy; dropping it stops accepting (connections in flight end with their client).
pub struct ApiProxy {
    endpoint: ProxyEndpoint,
    tracer: Tracer,
    task: tokio::task::JoinHandle<()>,
}

/// Where a client reaches the proxy: what its kubeconfig's cluster says.
#[derive(Clone, Debug)]
pub struct ProxyEndpoint {
    /// `https://127.0.0.1:<port>`.
    pub url: String,
    /// The CA (PEM) of the proxy's serving certificate, generated per proxy.
    pub ca_pem: String,
}

impl Drop for ApiProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

struct Shared {
    upstream: kube::Client,
    tracer: Tracer,
    cache: Mutex<ReadCache>,
}

impl ApiProxy {
    /// Start a proxy in front of the apiserver of `admin_kubeconfig`'s current context: its
    /// server and CA are used, its user's credentials are not.
    pub async fn start(admin_kubeconfig: &Path) -> Result<ApiProxy> {
        let kc = kube::config::Kubeconfig::read_from(admin_kubeconfig)
            .with_context(|| format!("reading {}", admin_kubeconfig.display()))?;
        let mut config =
            kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
                .await
                .with_context(|| format!("loading {}", admin_kubeconfig.display()))?;
        // The controller's own Authorization header goes through; no credentials of ours.
        config.auth_info = Default::default();
        // Watches stay open as long as the controller keeps them.
        config.read_timeout = None;
        // The controller gets the apiserver's own answer (a 429 or 503 too); it retries, not us.
        config.default_retry = false;
        let upstream = kube::Client::try_from(config).context("the proxy's upstream client")?;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .context("binding the API proxy on 127.0.0.1")?;
        let addr = listener.local_addr()?;
        // The sim's serving certificates (127.0.0.1 among their names): a CA of their own.
        let certs = faultline_sim::tls::generate().context("the API proxy's certificates")?;
        let acceptor = tokio_rustls::TlsAcceptor::from(certs.server_config.clone());
        let tracer = Tracer::default();
        let shared = Arc::new(Shared {
            upstream,
            tracer: tracer.clone(),
            cache: Mutex::default(),
        });
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let shared = shared.clone();
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    let Ok(stream) = acceptor.accept(stream).await else {
                        return;
                    };
                    let svc = hyper::service::service_fn(move |req| handle(shared.clone(), req));
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), svc)
                        .await;
                });
            }
        });
        let endpoint = ProxyEndpoint {
            url: format!("https://{addr}"),
            ca_pem: certs.ca_pem,
        };
        Ok(ApiProxy {
            endpoint,
            tracer,
            task,
        })
    }

    pub fn endpoint(&self) -> &ProxyEndpoint {
        &self.endpoint
    }

    pub fn tracer(&self) -> Tracer {
        self.tracer.clone()
    }
}

/// Point the kubeconfig at `src` (its users' credentials kept) to the proxy: every cluster's
/// server becomes the proxy's address, trusting the proxy's CA only.
pub fn rewrite_kubeconfig(src: &Path, dst: &Path, proxy: &ProxyEndpoint) -> Result<()> {
    use base64::Engine as _;
    let ca = base64::engine::general_purpose::STANDARD.encode(&proxy.ca_pem);
    let text =
        std::fs::read_to_string(src).with_context(|| format!("reading {}", src.display()))?;
    let mut doc: serde_yaml::Value =
        serde_yaml::from_str(&text).with_context(|| format!("parsing {}", src.display()))?;
    let clusters = doc
        .get_mut("clusters")
        .and_then(serde_yaml::Value::as_sequence_mut)
        .with_context(|| format!("{}: no `clusters`", src.display()))?;
    for c in clusters {
        let Some(cluster) = c
            .get_mut("cluster")
            .and_then(serde_yaml::Value::as_mapping_mut)
        else {
            anyhow::bail!("{}: a `clusters` entry without `cluster`", src.display());
        };
        for k in [
            "certificate-authority",
            "certificate-authority-data",
            "insecure-skip-tls-verify",
            "tls-server-name",
            "proxy-url",
        ] {
            cluster.remove(k);
        }
        cluster.insert("server".into(), proxy.url.as_str().into());
        cluster.insert("certificate-authority-data".into(), ca.as_str().into());
    }
    std::fs::write(dst, serde_yaml::to_string(&doc)?)
        .with_context(|| format!("writing {}", dst.display()))?;
    Ok(())
}

/// What a resource request addresses (`/api/v1/...`, `/apis/<group>/<version>/...`).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Target {
    group: String,
    plural: String,
    namespace: Option<String>,
    name: Option<String>,
    sub: Option<String>,
    verb: Verb,
}

impl Target {
    fn parse(method: &Method, path: &str, query: &Query) -> Option<Target> {
        let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
        let (group, rest) = match segs.as_slice() {
            ["api", _version, rest @ ..] => (String::new(), rest),
            ["apis", group, _version, rest @ ..] => (group.to_string(), rest),
            _ => return None,
        };
        let (watch_prefix, rest) = match rest {
            ["watch", rest @ ..] => (true, rest),
            _ => (false, rest),
        };
        let (namespace, rest) = match rest {
            // `namespaces/<ns>` itself and its status/finalize are the Namespace object.
            ["namespaces", _] | ["namespaces", _, "status" | "finalize"] => (None, rest),
            ["namespaces", ns, rest @ ..] => (Some(ns.to_string()), rest),
            _ => (None, rest),
        };
        let (plural, name, sub) = match rest {
            [plural] => (plural, None, None),
            [plural, name] => (plural, Some(name.to_string()), None),
            [plural, name, sub @ ..] if !sub.is_empty() => {
                (plural, Some(name.to_string()), Some(sub.join("/")))
            }
            _ => return None,
        };
        if plural.is_empty() {
            return None;
        }
        let watch = watch_prefix || query.get("watch").is_some_and(|v| v == "true" || v == "1");
        // As kube-apiserver's request-info resolver names verbs (and the sim's HTTP layer).
        let verb = match (method, name.is_some()) {
            (&Method::GET, _) if watch => Verb::Watch,
            (&Method::GET, true) => Verb::Get,
            (&Method::GET, false) => Verb::List,
            (&Method::POST, _) => Verb::Create,
            (&Method::PUT, _) => Verb::Update,
            (&Method::PATCH, _) => Verb::Patch,
            (&Method::DELETE, true) => Verb::Delete,
            (&Method::DELETE, false) => Verb::DeleteCollection,
            _ => return None,
        };
        Some(Target {
            group,
            plural: plural.to_string(),
            namespace,
            name,
            sub,
            verb,
        })
    }

    /// `resource[.group][/sub]`, as the sim's trace names it.
    fn resource(&self) -> String {
        let mut r = match self.group.is_empty() {
            true => self.plural.clone(),
            false => format!("{}.{}", self.plural, self.group),
        };
        if let Some(s) = &self.sub {
            r = format!("{r}/{s}");
        }
        r
    }

    /// A read a stale view can answer: the object, its status, or a LIST.
    fn plain_read(&self) -> bool {
        self.verb.is_read() && matches!(self.sub.as_deref(), None | Some("status"))
    }
}

type Query = HashMap<String, String>;

fn parse_query(q: Option<&str>) -> Query {
    q.map(|q| form_urlencoded::parse(q.as_bytes()).into_owned().collect())
        .unwrap_or_default()
}

/// Earlier answers to reads, by path and the query without what only says how fresh.
#[derive(Default)]
struct ReadCache {
    by_key: HashMap<String, Vec<Seen>>,
}

/// One state the proxy served for a key.
struct Seen {
    rv: u64,
    /// What identifies the state read: the object's resourceVersion, or a LIST's items'.
    state: String,
    /// When this state was last served: it was current then.
    last: Instant,
    body: Bytes,
    content_type: Option<HeaderValue>,
}

/// How many states per key are kept, and for how long (more than any window explore uses).
const KEPT_STATES: usize = 8;
const KEPT_FOR: Duration = Duration::from_secs(120);

impl ReadCache {
    /// Remember a fresh answer; return the latest earlier state, different from it and no
    /// older than `floor`, that was still current within each window asked for.
    fn observe(&mut self, key: &str, fresh: Seen) {
        let now = Instant::now();
        let list = self.by_key.entry(key.to_string()).or_default();
        list.retain(|s| now.duration_since(s.last) < KEPT_FOR);
        match list.iter_mut().find(|s| s.state == fresh.state) {
            Some(same) => {
                same.last = now;
                same.rv = same.rv.max(fresh.rv);
            }
            None => list.push(fresh),
        }
        if list.len() > KEPT_STATES {
            list.remove(0);
        }
    }

    fn stale(&self, key: &str, fresh_state: &str, floor: u64, window: Duration) -> Option<&Seen> {
        let now = Instant::now();
        self.by_key
            .get(key)?
            .iter()
            .filter(|s| s.state != fresh_state && s.rv >= floor)
            .filter(|s| now.duration_since(s.last) < window)
            .max_by_key(|s| s.last)
    }
}

fn cache_key(path: &str, query: &Query) -> String {
    let mut pairs: Vec<(&String, &String)> = query
        .iter()
        .filter(|(k, _)| {
            !matches!(
                k.as_str(),
                "resourceVersion" | "resourceVersionMatch" | "timeout" | "timeoutSeconds"
            )
        })
        .collect();
    pairs.sort();
    let q: Vec<String> = pairs.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!("{path}?{}", q.join("&"))
}

fn state_of(v: &Value) -> (u64, String) {
    let rv = |o: &Value| {
        o.pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let own = rv(v);
    let state = match v.get("items").and_then(Value::as_array) {
        Some(items) => items.iter().map(rv).collect::<Vec<_>>().join(","),
        None => own.clone(),
    };
    (own.parse().unwrap_or(0), state)
}

fn full(bytes: impl Into<Bytes>) -> ProxyBody {
    Full::new(bytes.into())
        .map_err(|never: Infallible| match never {})
        .boxed_unsync()
}

/// A Status answer of the proxy itself (the gate refused the request, the apiserver is
/// unreachable).
fn status(code: StatusCode, reason: &str, message: String) -> Response<ProxyBody> {
    let body = json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "reason": reason, "code": code.as_u16(),
    });
    let mut r = Response::new(full(body.to_string()));
    *r.status_mut() = code;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

async fn handle(s: Arc<Shared>, req: Request<Incoming>) -> Result<Response<ProxyBody>, Infallible> {
    Ok(match forward(&s, req).await {
        Ok(r) => r,
        Err(e) => status(
            StatusCode::BAD_GATEWAY,
            "InternalError",
            format!("faultline API proxy: {e:#}"),
        ),
    })
}

async fn forward(s: &Shared, req: Request<Incoming>) -> Result<Response<ProxyBody>> {
    let (mut parts, body) = req.into_parts();
    let body = body
        .collect()
        .await
        .context("reading the request")?
        .to_bytes();
    let path = parts.uri.path().to_string();
    let query = parse_query(parts.uri.query());
    let target = Target::parse(&parts.method, &path, &query).filter(|_| s.tracer.following());
    if target.is_some() && s.tracer.pass().await == Gate::Dead {
        return Ok(status(
            StatusCode::SERVICE_UNAVAILABLE,
            "ServiceUnavailable",
            "the client was killed before this request was served (faultline explore)".into(),
        ));
    }
    // The proxy reads what it traces: JSON, not protobuf or CBOR (a client asking for those
    // also takes JSON, as client-go does), and not gzipped (kube-apiserver compresses large
    // answers for a client that accepts gzip; Go's transport asks for it unasked).
    if target.is_some() {
        if let Some(a) = parts.headers.get(header::ACCEPT) {
            if a.to_str()
                .is_ok_and(|a| a.contains("protobuf") || a.contains("cbor"))
            {
                parts
                    .headers
                    .insert(header::ACCEPT, HeaderValue::from_static("application/json"));
            }
        }
        parts.headers.remove(header::ACCEPT_ENCODING);
    }
    for h in [header::HOST, header::CONNECTION, header::TRANSFER_ENCODING] {
        parts.headers.remove(h);
    }
    let path_and_query = parts
        .uri
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "/".into());
    let mut up = Request::builder()
        .method(parts.method.clone())
        .uri(path_and_query)
        .body(kube::client::Body::from(body.clone()))?;
    *up.headers_mut() = parts.headers.clone();
    let Some(t) = target else {
        let resp = s
            .upstream
            .send(up)
            .await
            .context("forwarding to the apiserver")?;
        return Ok(resp.map(|b| b.map_err(std::io::Error::other).boxed_unsync()));
    };
    let traced = Traced::new(s, &t, &query, &body);
    let resp = s
        .upstream
        .send(up)
        .await
        .context("forwarding to the apiserver")?;
    let (rparts, rbody) = resp.into_parts();
    let code = rparts.status.as_u16();
    if t.verb == Verb::Watch {
        traced.record(s, code, 0, None);
        let events = watch_events(s.tracer.clone(), t.plural.clone(), rbody);
        return Ok(Response::from_parts(rparts, events));
    }
    let bytes = rbody
        .collect()
        .await
        .context("reading the apiserver's answer")?
        .to_bytes();
    let parsed: Option<Value> = serde_json::from_slice(&bytes).ok();
    let (rv, state) = parsed.as_ref().map(state_of).unwrap_or_default();
    let mut answer = bytes.clone();
    let mut content_type = rparts.headers.get(header::CONTENT_TYPE).cloned();
    let mut perturbed = None;
    let mut stale_from = None;
    if let (Some(read), true) = (&traced.read, code == 200 && parsed.is_some()) {
        let key = cache_key(&path, &query);
        let mut cache = s.cache.lock();
        if read.cached {
            stale_from = cache
                .stale(&key, &state, read.floor, trace::DEFAULT_STALE_WINDOW)
                .map(|o| o.rv);
            if let Some(w) = read.ticket.stale_window {
                if let Some(old) = cache.stale(&key, &state, read.floor, w) {
                    answer = old.body.clone();
                    content_type = old.content_type.clone();
                    perturbed = Some(format!("stale read at resourceVersion {}", old.rv));
                    s.tracer.stale_served(read.ticket.ordinal);
                }
            }
        } else if read.ticket.stale_window.is_some() {
            // A consistent read, which no watch cache answers: the stale view goes to the
            // controller's next read, as on the sim (`Tracer::stale_deferred`).
            s.tracer.stale_deferred(read.ticket.ordinal);
        }
        cache.observe(
            &key,
            Seen {
                rv,
                state,
                last: Instant::now(),
                body: bytes,
                content_type: content_type.clone(),
            },
        );
    }
    traced.record_with(s, code, rv, stale_from, perturbed);
    let mut out = Response::from_parts(rparts, full(answer.clone()));
    out.headers_mut().remove(header::CONTENT_LENGTH);
    out.headers_mut().remove(header::TRANSFER_ENCODING);
    if let Some(ct) = content_type {
        out.headers_mut().insert(header::CONTENT_TYPE, ct);
    }
    Ok(out)
}

/// A traced request before it is answered: what the trace records of it.
struct Traced {
    verb: Verb,
    resource: String,
    namespace: Option<String>,
    name: Option<String>,
    kind: Option<String>,
    resource_version: Option<String>,
    read: Option<ReadPlan>,
}

struct ReadPlan {
    ticket: trace::ReadTicket,
    /// The watch cache would answer it (resourceVersion given, not Exact, not a continuation).
    cached: bool,
    /// A NotOlderThan read is not answered older than its resourceVersion.
    floor: u64,
}

impl Traced {
    fn new(s: &Shared, t: &Target, query: &Query, body: &Bytes) -> Traced {
        let doc: Option<Value> = (t.verb.is_mutating() && !body.is_empty())
            .then(|| serde_json::from_slice(body).ok())
            .flatten();
        let meta = |f: &str| {
            doc.as_ref()
                .and_then(|d| d.pointer(&format!("/metadata/{f}")))
                .and_then(Value::as_str)
                .map(String::from)
        };
        let name = t
            .name
            .clone()
            .or_else(|| meta("name").or_else(|| meta("generateName").map(|g| format!("{g}*"))));
        let q = |k: &str| query.get(k).map(String::as_str).filter(|v| !v.is_empty());
        let resource_version = q("resourceVersion")
            .map(String::from)
            .or_else(|| meta("resourceVersion"));
        // As the sim's HTTP layer decides, after cacher.go: only a read with a resourceVersion
        // (not Exact, not a continuation) is the watch cache's to answer.
        let read = t.plain_read().then(|| ReadPlan {
            ticket: s.tracer.next_read(),
            cached: q("resourceVersion").is_some()
                && q("resourceVersionMatch") != Some("Exact")
                && q("continue").is_none(),
            floor: q("resourceVersion")
                .and_then(|v| v.parse().ok())
                .unwrap_or(0),
        });
        let kind = (t.verb == Verb::Create && t.sub.is_none())
            .then(|| {
                doc.as_ref()
                    .and_then(|d| d.get("kind"))
                    .and_then(Value::as_str)
                    .map(String::from)
            })
            .flatten();
        Traced {
            verb: t.verb,
            resource: t.resource(),
            namespace: t.namespace.clone(),
            name,
            kind,
            resource_version,
            read,
        }
    }

    fn record(self, s: &Shared, code: u16, rv: u64, stale_from: Option<u64>) {
        self.record_with(s, code, rv, stale_from, None)
    }

    fn record_with(
        self,
        s: &Shared,
        code: u16,
        rv: u64,
        stale_from: Option<u64>,
        perturbed: Option<String>,
    ) {
        s.tracer.record_request(TraceKind::Request {
            verb: self.verb,
            resource: self.resource,
            namespace: self.namespace,
            name: self.name,
            kind: self.kind,
            resource_version: self.resource_version,
            store_rv: rv,
            code,
            mutation: None,
            read: self.read.map(|r| r.ticket.ordinal),
            stale_from,
            perturbed,
        });
    }
}

/// The watch stream as the controller gets it: each event recorded as it passes; one a
/// relist is armed for is replaced by a 410 Expired ERROR event and the stream ends.
fn watch_events(tracer: Tracer, plural: String, upstream: kube::client::Body) -> ProxyBody {
    let (tx, rx) = tokio::sync::mpsc::channel::<Bytes>(16);
    tokio::spawn(async move {
        let mut upstream = upstream;
        let mut pending: Vec<u8> = Vec::new();
        while let Some(frame) = upstream.frame().await {
            let Ok(frame) = frame else { return };
            let Ok(data) = frame.into_data() else {
                continue;
            };
            pending.extend_from_slice(&data);
            // kube-apiserver's JSON watch encoding: one event object per line.
            while let Some(i) = pending.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = pending.drain(..=i).collect();
                if note_event(&tracer, &plural, &line) {
                    let _ = tx.send(expired_event()).await;
                    return;
                }
                if tx.send(Bytes::from(line)).await.is_err() {
                    return;
                }
            }
        }
        if !pending.is_empty() {
            let _ = tx.send(Bytes::from(pending)).await;
        }
    });
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|b| (Ok::<_, std::io::Error>(Frame::data(b)), rx))
    });
    StreamBody::new(stream).boxed_unsync()
}

/// Record a watch event line (bookmarks and errors are not events of an object); true when
/// it is to be withheld.
fn note_event(tracer: &Tracer, plural: &str, line: &[u8]) -> bool {
    let Ok(ev) = serde_json::from_slice::<Value>(line) else {
        return false;
    };
    let kind = ev.get("type").and_then(Value::as_str).unwrap_or("");
    if !matches!(kind, "ADDED" | "MODIFIED" | "DELETED") {
        return false;
    }
    let o = ev.get("object").cloned().unwrap_or(Value::Null);
    let meta = |f: &str| {
        o.pointer(&format!("/metadata/{f}"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    tracer.record_event(TraceKind::WatchEvent {
        resource: plural.to_string(),
        event: kind.to_string(),
        namespace: Some(meta("namespace")).filter(|n| !n.is_empty()),
        name: meta("name"),
        resource_version: meta("resourceVersion"),
        ordinal: None,
        withheld: false,
    })
}

/// The ERROR event kube-apiserver sends a watcher the cache has compacted past.
fn expired_event() -> Bytes {
    let ev = json!({
        "type": "ERROR",
        "object": {
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "too old resource version: the watch was closed to force a relist (faultline explore)",
            "reason": "Expired", "code": 410,
        }
    });
    let mut line = ev.to_string().into_bytes();
    line.push(b'\n');
    Bytes::from(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(m: Method, path: &str, q: &str) -> Option<Target> {
        Target::parse(&m, path, &parse_query(Some(q)))
    }

    #[test]
    fn paths_name_verbs_resources_and_namespaces_as_the_apiserver_does() {
        let t = target(Method::GET, "/api/v1/namespaces/d/pods", "watch=true").unwrap();
        assert_eq!((t.verb, t.resource()), (Verb::Watch, "pods".into()));
        assert_eq!(t.namespace.as_deref(), Some("d"));
        let t = target(
            Method::PUT,
            "/apis/apps/v1/namespaces/d/deployments/x/status",
            "",
        )
        .unwrap();
        assert_eq!(
            (t.verb, t.resource(), t.name.as_deref()),
            (Verb::Update, "deployments.apps/status".into(), Some("x"))
        );
        let t = target(Method::GET, "/api/v1/namespaces/d", "").unwrap();
        assert_eq!(
            (t.verb, t.plural.as_str(), t.namespace, t.name.as_deref()),
            (Verb::Get, "namespaces", None, Some("d"))
        );
        let t = target(Method::DELETE, "/api/v1/namespaces/d/pods", "").unwrap();
        assert_eq!(t.verb, Verb::DeleteCollection);
        assert!(target(Method::GET, "/version", "").is_none());
        assert!(target(Method::GET, "/apis/apps/v1", "").is_none());
    }

    #[test]
    fn the_kubeconfig_points_at_the_proxy_and_bad_input_names_the_file() {
        let d = tempfile::tempdir().unwrap();
        let src = d.path().join("sa.kubeconfig");
        std::fs::write(
            &src,
            "clusters:\n- name: c\n  cluster: {server: 'https://10.0.0.1:6443', certificate-authority: /ca.crt}\nusers:\n- name: u\n  user: {token: t0k}\n",
        )
        .unwrap();
        let dst = d.path().join("out");
        let p = ProxyEndpoint {
            url: "https://127.0.0.1:1234".into(),
            ca_pem: "PEM".into(),
        };
        rewrite_kubeconfig(&src, &dst, &p).unwrap();
        let out: serde_yaml::Value =
            serde_yaml::from_str(&std::fs::read_to_string(&dst).unwrap()).unwrap();
        let c = &out["clusters"][0]["cluster"];
        assert_eq!(c["server"], "https://127.0.0.1:1234");
        assert_eq!(
            c["certificate-authority-data"], "UEVN",
            "base64 of the proxy's CA"
        );
        assert!(
            c.get("certificate-authority").is_none(),
            "the cluster's CA is dropped"
        );
        assert_eq!(out["users"][0]["user"]["token"], "t0k", "credentials kept");
        std::fs::write(&src, "users: []\n").unwrap();
        let e = rewrite_kubeconfig(&src, &dst, &p).unwrap_err().to_string();
        assert!(e.contains("sa.kubeconfig") && e.contains("clusters"), "{e}");
    }

    #[test]
    fn a_stale_state_is_a_different_one_still_current_within_the_window() {
        let mut c = ReadCache::default();
        let seen = |rv: u64, state: &str| Seen {
            rv,
            state: state.into(),
            last: Instant::now(),
            body: Bytes::from(format!("{rv}")),
            content_type: None,
        };
        c.observe("k", seen(5, "5"));
        c.observe("k", seen(7, "7"));
        let w = Duration::from_secs(3);
        assert_eq!(c.stale("k", "7", 0, w).map(|s| s.rv), Some(5));
        assert_eq!(c.stale("k", "7", 6, w).map(|s| s.rv), None, "floor");
        assert!(c.stale("k", "5", 0, Duration::ZERO).is_none(), "window");
        assert!(c.stale("other", "7", 0, w).is_none());
        let mut q = Query::new();
        q.insert("resourceVersion".into(), "0".into());
        q.insert("labelSelector".into(), "a=b".into());
        assert_eq!(cache_key("/p", &q), "/p?labelSelector=a=b");
    }
}
