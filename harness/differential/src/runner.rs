//! Runs a script against one target: a fresh namespace, then the steps in order, with the
//! placeholders of `corpus` filled from this target's own earlier responses.

use crate::corpus::{Script, Step};
use crate::target::{Request, Response, Target};
use anyhow::{Context, Result};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::time::Duration;

/// One step's outcome on one target.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The request as sent (path and query), for the report.
    pub uri: String,
    pub response: Result<Response, String>,
    /// The body parsed as JSON, when it is JSON.
    pub json: Option<Value>,
}

/// What a target has beyond the API server itself, learnt once at start-up.
#[derive(Debug, Clone, Copy, Default)]
pub struct Environment {
    /// Whether namespaces get their `default` ServiceAccount and `kube-root-ca.crt` ConfigMap
    /// from a controller manager. When not, the runner creates both in each fresh namespace, as
    /// kube-controller-manager would, so the scripts see the same namespace on both targets.
    pub has_controller_manager: bool,
}

/// The description kube-controller-manager's root CA publisher puts on `kube-root-ca.crt`.
const ROOT_CA_DESCRIPTION: &str = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.";

fn plain(method: &str, uri: String, body: Option<Value>) -> Request {
    Request {
        method: method.parse().expect("method"),
        uri,
        headers: if body.is_some() {
            vec![("Content-Type".into(), "application/json".into())]
        } else {
            vec![]
        },
        body: body.map(|b| serde_json::to_vec(&b).expect("json")),
        bearer: None,
        watch: None,
        read_body: true,
    }
}

/// Finds out whether the target runs controllers: a probe namespace gets its `default`
/// ServiceAccount within `wait` or not.
pub async fn probe_environment(t: &Target, ns: &str, wait: Duration) -> Result<Environment> {
    create_namespace(t, ns).await?;
    let deadline = std::time::Instant::now() + wait;
    loop {
        let r = t
            .send(plain(
                "GET",
                format!("/api/v1/namespaces/{ns}/serviceaccounts/default"),
                None,
            ))
            .await?;
        if r.status == 200 {
            return Ok(Environment {
                has_controller_manager: true,
            });
        }
        if std::time::Instant::now() > deadline {
            return Ok(Environment::default());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn create_namespace(t: &Target, ns: &str) -> Result<()> {
    let r = t
        .send(plain(
            "POST",
            "/api/v1/namespaces".into(),
            Some(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})),
        ))
        .await?;
    if r.status != 201 && r.status != 409 {
        anyhow::bail!(
            "{}: creating namespace {ns}: {} {}",
            t.name,
            r.status,
            String::from_utf8_lossy(&r.body)
        );
    }
    Ok(())
}

/// Creates the script's namespace and waits until it is as a controller manager leaves it.
pub async fn prepare_namespace(t: &Target, env: Environment, ns: &str) -> Result<()> {
    create_namespace(t, ns).await?;
    let kcm_ua = "kube-controller-manager/v1.35.4 (linux/amd64) kubernetes/differential";
    if !env.has_controller_manager {
        let mut sa = plain(
            "POST",
            format!("/api/v1/namespaces/{ns}/serviceaccounts"),
            Some(
                json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": ns}}),
            ),
        );
        sa.headers.push(("User-Agent".into(), kcm_ua.into()));
        t.send(sa).await?;
        let ca = t
            .send(plain(
                "GET",
                "/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication"
                    .into(),
                None,
            ))
            .await?;
        let ca_pem = serde_json::from_slice::<Value>(&ca.body)
            .ok()
            .and_then(|v| v["data"]["client-ca-file"].as_str().map(str::to_string))
            .unwrap_or_default();
        let mut cm = plain(
            "POST",
            format!("/api/v1/namespaces/{ns}/configmaps"),
            Some(
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kube-root-ca.crt", "namespace": ns, "annotations": {"kubernetes.io/description": ROOT_CA_DESCRIPTION}}, "data": {"ca.crt": ca_pem}}),
            ),
        );
        cm.headers.push(("User-Agent".into(), kcm_ua.into()));
        t.send(cm).await?;
        return Ok(());
    }
    // Wait for what the controllers create.
    for path in [
        format!("/api/v1/namespaces/{ns}/serviceaccounts/default"),
        format!("/api/v1/namespaces/{ns}/configmaps/kube-root-ca.crt"),
    ] {
        for _ in 0..100 {
            let r = t.send(plain("GET", path.clone(), None)).await?;
            if r.status == 200 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    Ok(())
}

/// Runs `script` in namespace `ns` on `t`.
pub async fn run(
    t: &Target,
    env: Environment,
    script: &Script,
    ns: &str,
    old_rv: &str,
) -> Result<Vec<Outcome>> {
    prepare_namespace(t, env, ns).await?;
    let mut out: Vec<Outcome> = Vec::new();
    let mut vars: BTreeMap<String, String> = BTreeMap::new();
    let mut tokens: BTreeMap<String, String> = BTreeMap::new();
    for (i, step) in script.steps.iter().enumerate() {
        if let Some(ms) = step
            .sleep_ms
            .or(if i > 0 { script.settle_ms } else { None })
        {
            tokio::time::sleep(Duration::from_millis(ms)).await;
        }
        let ctx = Ctx {
            ns,
            index: i,
            outcomes: &out,
            vars: &vars,
            old_rv,
        };
        let req = match build(step, &ctx) {
            Ok(r) => r,
            Err(e) => {
                out.push(Outcome {
                    uri: step.path.clone(),
                    response: Err(format!("placeholder: {e:#}")),
                    json: None,
                });
                continue;
            }
        };
        let mut req = req;
        if let Some(tok) = &step.token {
            let key = fill(tok, &ctx)?;
            let bearer = match tokens.get(&key) {
                Some(t) => t.clone(),
                None => {
                    let t2 = request_token(t, &key).await?;
                    tokens.insert(key.clone(), t2.clone());
                    t2
                }
            };
            req.bearer = Some(bearer);
        }
        let uri = req.uri.clone();
        let is_token_request = req.method == http::Method::POST
            && uri.contains("/serviceaccounts/")
            && uri.split('?').next().is_some_and(|p| p.ends_with("/token"));
        let response = t.send(req).await.map_err(|e| format!("{e:#}"));
        let json = response.as_ref().ok().and_then(|r| {
            if r.frames.is_some() {
                None
            } else {
                serde_json::from_slice::<Value>(&r.body).ok()
            }
        });
        if let Some(j) = &json {
            if is_token_request {
                if let (Some(tok), Some(sa)) = (j["status"]["token"].as_str(), sa_of(&uri)) {
                    tokens.insert(sa, tok.to_string());
                }
            }
            for (name, ptr) in &step.save {
                if let Some(v) = j.pointer(ptr) {
                    vars.insert(
                        name.clone(),
                        v.as_str()
                            .map(str::to_string)
                            .unwrap_or_else(|| v.to_string()),
                    );
                }
            }
        }
        out.push(Outcome {
            uri,
            response,
            json,
        });
    }
    Ok(out)
}

/// `sa:<ns>/<name>` of a TokenRequest path.
fn sa_of(uri: &str) -> Option<String> {
    let path = uri.split('?').next()?;
    let parts: Vec<&str> = path.split('/').collect();
    // /api/v1/namespaces/{ns}/serviceaccounts/{name}/token
    if parts.len() == 8 && parts[3] == "namespaces" && parts[5] == "serviceaccounts" {
        return Some(format!("sa:{}/{}", parts[4], parts[6]));
    }
    None
}

async fn request_token(t: &Target, key: &str) -> Result<String> {
    let rest = key
        .strip_prefix("sa:")
        .with_context(|| format!("token {key:?}: only sa:<namespace>/<name> is known"))?;
    let (ns, name) = rest.split_once('/').context("sa:<namespace>/<name>")?;
    let r = t
        .send(plain(
            "POST",
            format!("/api/v1/namespaces/{ns}/serviceaccounts/{name}/token"),
            Some(json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 3600}})),
        ))
        .await?;
    let v: Value = serde_json::from_slice(&r.body).context("TokenRequest answer")?;
    v["status"]["token"]
        .as_str()
        .map(str::to_string)
        .with_context(|| format!("no token for {key}: {v}"))
}

pub struct Ctx<'a> {
    pub ns: &'a str,
    pub index: usize,
    pub outcomes: &'a [Outcome],
    pub vars: &'a BTreeMap<String, String>,
    pub old_rv: &'a str,
}

/// Replaces every `{{...}}` of `s`.
pub fn fill(s: &str, ctx: &Ctx) -> Result<String> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after
            .find("}}")
            .with_context(|| format!("unclosed placeholder in {s:?}"))?;
        let ph = &after[..end];
        out.push_str(&resolve(ph, ctx)?);
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

fn resolve(ph: &str, ctx: &Ctx) -> Result<String> {
    if ph == "ns" {
        return Ok(ctx.ns.to_string());
    }
    if ph == "old-rv" {
        return Ok(ctx.old_rv.to_string());
    }
    let (kind, arg) = ph
        .split_once(':')
        .with_context(|| format!("unknown placeholder {{{{{ph}}}}}"))?;
    if kind == "var" {
        return ctx
            .vars
            .get(arg)
            .cloned()
            .with_context(|| format!("no saved value {arg:?}"));
    }
    let n: i64 = arg
        .parse()
        .with_context(|| format!("step number in {ph:?}"))?;
    let idx = if n < 0 { ctx.index as i64 + n } else { n };
    let o = usize::try_from(idx)
        .ok()
        .and_then(|i| ctx.outcomes.get(i))
        .with_context(|| format!("{ph:?}: no step {idx} before step {}", ctx.index))?;
    let j = o
        .json
        .clone()
        .or_else(|| last_watch_object(o))
        .with_context(|| format!("{ph:?}: step {idx} has no JSON answer"))?;
    let ptr = match kind {
        "rv" | "resourceVersion" => "/metadata/resourceVersion",
        "continue" => "/metadata/continue",
        "uid" => "/metadata/uid",
        "name" => "/metadata/name",
        _ => anyhow::bail!("unknown placeholder {{{{{ph}}}}}"),
    };
    let v = j
        .pointer(ptr)
        .and_then(Value::as_str)
        .with_context(|| format!("{ph:?}: step {idx}'s answer has no {ptr}"))?;
    Ok(v.to_string())
}

fn last_watch_object(o: &Outcome) -> Option<Value> {
    let r = o.response.as_ref().ok()?;
    let frames = r.frames.as_ref()?;
    let last = frames.last()?;
    let v: Value = serde_json::from_slice(last).ok()?;
    Some(v["object"].clone())
}

/// Fills a step's placeholders and encodes it as a request.
pub fn build(step: &Step, ctx: &Ctx) -> Result<Request> {
    let path = fill(&step.path, ctx)?;
    let (path, inline_query) = match path.split_once('?') {
        Some((p, q)) => (p.to_string(), Some(q.to_string())),
        None => (path, None),
    };
    let mut ser = form_urlencoded::Serializer::new(String::new());
    if let Some(q) = &inline_query {
        for (k, v) in form_urlencoded::parse(q.as_bytes()) {
            ser.append_pair(&k, &v);
        }
    }
    for (k, v) in &step.query {
        ser.append_pair(k, &fill(v, ctx)?);
    }
    let query = ser.finish();
    let uri = if query.is_empty() {
        path
    } else {
        format!("{path}?{query}")
    };
    let mut headers = Vec::new();
    let mut has_ct = false;
    for (k, v) in &step.headers {
        has_ct |= k.eq_ignore_ascii_case("content-type");
        headers.push((k.clone(), fill(v, ctx)?));
    }
    let body = if let Some(raw) = &step.raw_body {
        Some(fill(raw, ctx)?.into_bytes())
    } else if let Some(b) = &step.body {
        let text = serde_json::to_string(b)?;
        let filled = fill(&text, ctx)?;
        if !has_ct {
            headers.push(("Content-Type".into(), "application/json".into()));
        }
        Some(filled.into_bytes())
    } else {
        None
    };
    Ok(Request {
        method: step
            .method
            .to_uppercase()
            .parse()
            .with_context(|| format!("method {:?}", step.method))?,
        uri,
        headers,
        body,
        bearer: None,
        watch: step
            .watch
            .as_ref()
            .map(|w| (w.events, Duration::from_millis(w.timeout_ms))),
        read_body: step.read_body,
    })
}
