//! The recording proxy: serves plain HTTP on loopback, forwards every request to an upstream
//! apiserver (with the upstream kubeconfig's credentials) and writes what the client sent as a
//! corpus script. Point a real client at it with the kubeconfig it writes.
//!
//! The script is rewritten after every request, so stopping the proxy (Ctrl-C, SIGTERM) loses
//! nothing. In what is recorded:
//! - the client's namespace becomes `{{ns}}` (in the path, the query and the body);
//! - a resourceVersion or continue token that an earlier response carried becomes
//!   `{{rv:N}}` / `{{continue:N}}` of that response's step;
//! - a watch gets a bound: the number of events the client received, within 3 s;
//! - the `hash` query of an OpenAPI v3 document is dropped (it is the recorded server's own
//!   content hash, which another server answers with a redirect).

use crate::corpus::{Script, Step, WatchOpts};
use crate::target::Target;
use anyhow::{Context, Result};
use bytes::Bytes;
use http_body_util::{combinators::UnsyncBoxBody, BodyExt, Full};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

type Error = Box<dyn std::error::Error + Send + Sync>;

struct Recorder {
    script: Script,
    out: PathBuf,
    namespace: String,
    /// resourceVersion -> step whose response's metadata carried it (the last one).
    rvs: HashMap<String, usize>,
    continues: HashMap<String, usize>,
    /// step -> events forwarded so far (watches).
    watch_counts: Vec<(usize, Arc<AtomicUsize>)>,
}

/// Headers a replay sends as recorded (the rest are the transport's or the credentials').
const KEPT: &[&str] = &["accept", "content-type", "user-agent"];

impl Recorder {
    fn save(&mut self) -> Result<()> {
        for (i, c) in &self.watch_counts {
            if let Some(w) = self.script.steps[*i].watch.as_mut() {
                w.events = c.load(Ordering::Relaxed).max(1);
            }
        }
        let text = serde_yaml::to_string(&self.script)?;
        std::fs::write(&self.out, text).with_context(|| format!("writing {}", self.out.display()))
    }

    fn templ(&self, s: &str) -> String {
        if self.namespace.is_empty() {
            s.to_string()
        } else {
            s.replace(&self.namespace, "{{ns}}")
        }
    }

    fn templ_value(&self, v: &mut Value, key: Option<&str>) {
        match v {
            Value::Object(m) => {
                for (k, x) in m.iter_mut() {
                    self.templ_value(x, Some(k));
                }
            }
            Value::Array(a) => a.iter_mut().for_each(|x| self.templ_value(x, key)),
            Value::String(s) => {
                if key == Some("resourceVersion") {
                    if let Some(i) = self.rvs.get(s.as_str()) {
                        *s = format!("{{{{rv:{i}}}}}");
                        return;
                    }
                }
                *s = self.templ(s);
            }
            _ => {}
        }
    }

    fn step(
        &self,
        method: &http::Method,
        uri: &http::Uri,
        headers: &http::HeaderMap,
        body: &[u8],
    ) -> Step {
        let mut query = BTreeMap::new();
        let mut watch = false;
        for (k, v) in form_urlencoded::parse(uri.query().unwrap_or("").as_bytes()) {
            let v = match k.as_ref() {
                "resourceVersion" => match self.rvs.get(v.as_ref()) {
                    Some(i) => format!("{{{{rv:{i}}}}}"),
                    None => v.to_string(),
                },
                "continue" => match self.continues.get(v.as_ref()) {
                    Some(i) => format!("{{{{continue:{i}}}}}"),
                    None => v.to_string(),
                },
                _ => self.templ(&v),
            };
            if k == "watch" && (v == "true" || v == "1") {
                watch = true;
            }
            // the OpenAPI v3 content hash comes from the recorded server's own index: a
            // replay asks without it (another server's hash would be a redirect)
            if k == "hash" && uri.path().starts_with("/openapi/v3/") {
                continue;
            }
            query.insert(k.to_string(), v);
        }
        let mut hs = BTreeMap::new();
        for k in KEPT {
            if let Some(v) = headers.get(*k).and_then(|v| v.to_str().ok()) {
                let name = match *k {
                    "accept" => "Accept",
                    "content-type" => "Content-Type",
                    _ => "User-Agent",
                };
                hs.insert(name.to_string(), v.to_string());
            }
        }
        let (mut json_body, mut raw_body) = (None, None);
        if !body.is_empty() {
            match serde_json::from_slice::<Value>(body) {
                Ok(mut v) => {
                    self.templ_value(&mut v, None);
                    json_body = Some(v);
                }
                Err(_) => raw_body = Some(self.templ(&String::from_utf8_lossy(body))),
            }
        }
        Step {
            method: method.as_str().to_string(),
            path: self.templ(uri.path()),
            query,
            headers: hs,
            body: json_body,
            raw_body,
            watch: watch.then_some(WatchOpts {
                events: 1,
                timeout_ms: 3000,
            }),
            read_body: true,
            ..Default::default()
        }
    }
}

pub struct RecordOptions {
    pub upstream: Target,
    pub listen: SocketAddr,
    pub out: PathBuf,
    pub name: String,
    pub source: String,
    pub namespace: String,
    pub kubeconfig_out: Option<PathBuf>,
}

/// Serves until Ctrl-C or SIGTERM.
pub async fn record(o: RecordOptions) -> Result<()> {
    let listener = tokio::net::TcpListener::bind(o.listen).await?;
    let addr = listener.local_addr()?;
    let url = format!("http://{addr}");
    if let Some(k) = &o.kubeconfig_out {
        std::fs::write(
            k,
            format!(
                "apiVersion: v1\nkind: Config\nclusters:\n- name: recorder\n  cluster:\n    server: {url}\ncontexts:\n- name: recorder\n  context:\n    cluster: recorder\n    user: recorder\n    namespace: {ns}\ncurrent-context: recorder\nusers:\n- name: recorder\n  user: {{}}\n",
                ns = if o.namespace.is_empty() { "default" } else { &o.namespace }
            ),
        )?;
    }
    println!("recording proxy listening on {url}");
    let rec = Arc::new(Mutex::new(Recorder {
        script: Script {
            name: o.name.clone(),
            source: o.source.clone(),
            description: None,
            // the clients' objects are acted on by controllers between requests
            settle_ms: Some(300),
            steps: Vec::new(),
        },
        out: o.out.clone(),
        namespace: o.namespace.clone(),
        rvs: HashMap::new(),
        continues: HashMap::new(),
        watch_counts: Vec::new(),
    }));
    rec.lock().expect("lock").save()?;
    let upstream = Arc::new(o.upstream);
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    loop {
        let (stream, _) = tokio::select! {
            a = listener.accept() => a?,
            _ = tokio::signal::ctrl_c() => break,
            _ = term.recv() => break,
        };
        let (rec, upstream) = (rec.clone(), upstream.clone());
        tokio::spawn(async move {
            let svc = hyper::service::service_fn(move |req| {
                let (rec, upstream) = (rec.clone(), upstream.clone());
                async move { Ok::<_, Infallible>(handle(rec, upstream, req).await) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(stream), svc)
                .await;
        });
    }
    let mut r = rec.lock().expect("lock");
    r.save()?;
    println!(
        "recorded {} requests to {}",
        r.script.steps.len(),
        o.out.display()
    );
    Ok(())
}

async fn handle(
    rec: Arc<Mutex<Recorder>>,
    upstream: Arc<Target>,
    req: http::Request<hyper::body::Incoming>,
) -> http::Response<UnsyncBoxBody<Bytes, Error>> {
    let (parts, body) = req.into_parts();
    let body = match body.collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) => return text(502, &format!("reading the request: {e}")),
    };
    let (index, step) = {
        let mut r = rec.lock().expect("lock");
        let step = r.step(&parts.method, &parts.uri, &parts.headers, &body);
        r.script.steps.push(step.clone());
        (r.script.steps.len() - 1, step)
    };
    let mut b = http::Request::builder().method(parts.method.clone()).uri(
        parts
            .uri
            .path_and_query()
            .map(|p| p.as_str())
            .unwrap_or("/"),
    );
    for (k, v) in &parts.headers {
        if matches!(
            k.as_str(),
            "host"
                | "authorization"
                | "connection"
                | "content-length"
                | "accept-encoding"
                | "transfer-encoding"
        ) {
            continue;
        }
        b = b.header(k, v);
    }
    let Ok(request) = b.body(kube::client::Body::from(body.to_vec())) else {
        return text(400, "bad request");
    };
    let resp = match upstream.raw().send(request).await {
        Ok(r) => r,
        Err(e) => return text(502, &format!("upstream: {e}")),
    };
    let (rparts, rbody) = resp.into_parts();
    if step.watch.is_some() {
        let count = Arc::new(AtomicUsize::new(0));
        rec.lock()
            .expect("lock")
            .watch_counts
            .push((index, count.clone()));
        let counted = rbody
            .map_frame(move |f| {
                if let Some(d) = f.data_ref() {
                    count.fetch_add(d.iter().filter(|&&c| c == b'\n').count(), Ordering::Relaxed);
                }
                f
            })
            .map_err(|e| Box::new(e) as Error)
            .boxed_unsync();
        let _ = rec.lock().expect("lock").save();
        return http::Response::from_parts(rparts, counted);
    }
    let bytes = match rbody.collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) => return text(502, &format!("upstream body: {e}")),
    };
    {
        let mut r = rec.lock().expect("lock");
        if let Ok(v) = serde_json::from_slice::<Value>(&bytes) {
            if let Some(rv) = v
                .pointer("/metadata/resourceVersion")
                .and_then(Value::as_str)
            {
                r.rvs.insert(rv.to_string(), index);
            }
            for it in v["items"].as_array().into_iter().flatten() {
                if let Some(rv) = it
                    .pointer("/metadata/resourceVersion")
                    .and_then(Value::as_str)
                {
                    // an item's version is also a step's "rv" only when it is that step's own
                    r.rvs.entry(rv.to_string()).or_insert(usize::MAX);
                }
            }
            r.rvs.retain(|_, i| *i != usize::MAX);
            if let Some(c) = v.pointer("/metadata/continue").and_then(Value::as_str) {
                if !c.is_empty() {
                    r.continues.insert(c.to_string(), index);
                }
            }
        }
        let _ = r.save();
    }
    http::Response::from_parts(
        rparts,
        Full::new(bytes).map_err(|e| match e {}).boxed_unsync(),
    )
}

fn text(code: u16, msg: &str) -> http::Response<UnsyncBoxBody<Bytes, Error>> {
    http::Response::builder()
        .status(code)
        .body(
            Full::new(Bytes::from(msg.to_string()))
                .map_err(|e| match e {})
                .boxed_unsync(),
        )
        .expect("response")
}
