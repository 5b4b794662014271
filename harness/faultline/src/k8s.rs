//! The runner's Kubernetes client side: a kube-rs client from the cluster's kubeconfig, kind
//! resolution through discovery (cached), and the manifest verbs (apply, create, patch, delete).

use anyhow::{anyhow, bail, Context, Result};
use kube::api::{DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::discovery::{ApiCapabilities, Scope};
use kube::{Api, Client};
use parking_lot::Mutex;
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

pub async fn client_from_kubeconfig(path: &Path) -> Result<Client> {
    let kc = kube::config::Kubeconfig::read_from(path)
        .with_context(|| format!("reading kubeconfig {}", path.display()))?;
    let config =
        kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
            .await?;
    Ok(Client::try_from(config)?)
}

pub const FIELD_MANAGER: &str = "faultline";

/// (apiVersion, kind) -> how the cluster serves it.
type KindCache = HashMap<(String, String), (ApiResource, ApiCapabilities)>;

/// A client plus a cache of resolved kinds.
#[derive(Clone)]
pub struct Kube {
    pub client: Client,
    cache: Arc<Mutex<KindCache>>,
}

pub fn parse_api_version(api_version: &str) -> (String, String) {
    match api_version.split_once('/') {
        Some((g, v)) => (g.to_string(), v.to_string()),
        None => (String::new(), api_version.to_string()),
    }
}

impl Kube {
    pub fn new(client: Client) -> Kube {
        Kube {
            client,
            cache: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    pub async fn resolve(
        &self,
        api_version: &str,
        kind: &str,
    ) -> Result<(ApiResource, ApiCapabilities)> {
        let key = (api_version.to_string(), kind.to_string());
        if let Some(hit) = self.cache.lock().get(&key) {
            return Ok(hit.clone());
        }
        let (g, v) = parse_api_version(api_version);
        let gvk = GroupVersionKind::gvk(&g, &v, kind);
        let found = kube::discovery::pinned_kind(&self.client, &gvk)
            .await
            .map_err(|e| {
                anyhow!(
                    "the cluster does not serve {kind} in {api_version}: {}",
                    explain(&e.into())
                )
            })?;
        self.cache.lock().insert(key, found.clone());
        Ok(found)
    }

    /// Resolve, retrying for up to `wait` (a CRD just applied takes a moment to be served).
    pub async fn resolve_eventually(
        &self,
        api_version: &str,
        kind: &str,
        wait: Duration,
    ) -> Result<(ApiResource, ApiCapabilities)> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            match self.resolve(api_version, kind).await {
                Ok(r) => return Ok(r),
                Err(e) if tokio::time::Instant::now() >= deadline => return Err(e),
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
    }

    pub fn api(
        &self,
        ar: &ApiResource,
        caps: &ApiCapabilities,
        namespace: Option<&str>,
    ) -> Api<DynamicObject> {
        match (caps.scope == Scope::Namespaced, namespace) {
            (true, Some(ns)) => Api::namespaced_with(self.client.clone(), ns, ar),
            _ => Api::all_with(self.client.clone(), ar),
        }
    }

    async fn api_for(&self, obj: &Value, default_ns: &str) -> Result<(Api<DynamicObject>, String)> {
        let api_version = obj
            .get("apiVersion")
            .and_then(Value::as_str)
            .ok_or_else(|| anyhow!("object without apiVersion"))?;
        let kind = obj
            .get("kind")
            .and_then(Value::as_str)
            .ok_or_else(|| anyhow!("object without kind"))?;
        let name = obj
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .ok_or_else(|| anyhow!("{kind} without metadata.name"))?;
        let (ar, caps) = self
            .resolve_eventually(api_version, kind, Duration::from_secs(5))
            .await?;
        let ns = obj
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or(default_ns);
        Ok((self.api(&ar, &caps, Some(ns)), name.to_string()))
    }

    pub async fn apply(&self, obj: &Value, default_ns: &str) -> Result<()> {
        let (api, name) = self.api_for(obj, default_ns).await?;
        let pp = PatchParams::apply(FIELD_MANAGER).force();
        api.patch(&name, &pp, &Patch::Apply(obj))
            .await
            .with_context(|| format!("applying {}", describe(obj)))?;
        Ok(())
    }

    pub async fn create(&self, obj: &Value, default_ns: &str) -> Result<()> {
        let (api, _) = self.api_for(obj, default_ns).await?;
        let o: DynamicObject = serde_json::from_value(obj.clone())?;
        api.create(
            &PostParams {
                field_manager: Some(FIELD_MANAGER.into()),
                ..Default::default()
            },
            &o,
        )
        .await
        .with_context(|| format!("creating {}", describe(obj)))?;
        Ok(())
    }

    pub async fn patch(&self, p: &crate::model::PatchStep) -> Result<()> {
        use crate::model::PatchType;
        let obj = serde_json::json!({"apiVersion": p.api_version, "kind": p.kind, "metadata": {"name": p.name, "namespace": p.namespace}});
        let (api, name) = self
            .api_for(&obj, p.namespace.as_deref().unwrap_or("default"))
            .await?;
        let pp = match p.r#type {
            PatchType::Apply => PatchParams::apply(FIELD_MANAGER).force(),
            _ => PatchParams {
                field_manager: Some(FIELD_MANAGER.into()),
                ..Default::default()
            },
        };
        let patch = match p.r#type {
            PatchType::Merge => Patch::Merge(p.patch.clone()),
            PatchType::Strategic => Patch::Strategic(p.patch.clone()),
            PatchType::Apply => {
                let mut body = p.patch.clone();
                if let Some(m) = body.as_object_mut() {
                    m.entry("apiVersion")
                        .or_insert(p.api_version.clone().into());
                    m.entry("kind").or_insert(p.kind.clone().into());
                }
                Patch::Apply(body)
            }
            PatchType::Json => {
                Patch::Json(serde_json::from_value(p.patch.clone()).context("a json patch")?)
            }
        };
        let r = if p.status {
            api.patch_status(&name, &pp, &patch).await
        } else {
            api.patch(&name, &pp, &patch).await
        };
        r.with_context(|| format!("patching {} {}", p.kind, p.name))?;
        Ok(())
    }

    /// Delete; with `wait`, until the object is gone (its finalizers done), watching it.
    pub async fn delete(&self, obj: &Value, default_ns: &str, wait: bool) -> Result<()> {
        let (api, name) = self.api_for(obj, default_ns).await?;
        match api.delete(&name, &DeleteParams::default()).await {
            Ok(either) => {
                if wait {
                    if let either::Either::Left(o) = either {
                        if let Some(uid) = o.metadata.uid.clone() {
                            kube::runtime::wait::await_condition(
                                api,
                                &name,
                                kube::runtime::wait::conditions::is_deleted(&uid),
                            )
                            .await?;
                        }
                    }
                }
                Ok(())
            }
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
            Err(e) => Err(e).with_context(|| format!("deleting {}", describe(obj))),
        }
    }
}

pub fn describe(obj: &Value) -> String {
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("?");
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("?");
    match obj.pointer("/metadata/namespace").and_then(Value::as_str) {
        Some(ns) => format!("{kind} {ns}/{name}"),
        None => format!("{kind} {name}"),
    }
}

/// Every object of a YAML file (multi-document; `kind: List` expanded).
pub fn read_manifests(path: &Path) -> Result<Vec<Value>> {
    let src =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut out = vec![];
    for doc in serde_yaml::Deserializer::from_str(&src) {
        let v: Value = serde::Deserialize::deserialize(doc)
            .with_context(|| format!("parsing {}", path.display()))?;
        match v {
            Value::Null => {}
            Value::Object(ref m) if m.get("kind").and_then(Value::as_str) == Some("List") => {
                out.extend(
                    m.get("items")
                        .and_then(Value::as_array)
                        .cloned()
                        .unwrap_or_default(),
                );
            }
            Value::Object(_) => out.push(v),
            _ => bail!("{}: a document is not an object", path.display()),
        }
    }
    Ok(out)
}

/// An API error as kubectl shows it: the Status message, code and reason
/// (`configmaps "x" already exists (409 AlreadyExists)`), never kube-rs's Debug dump of the Status.
pub fn status_text(s: &kube::core::Status) -> String {
    let reason = if s.reason.is_empty() {
        String::new()
    } else {
        format!(" {}", s.reason)
    };
    let message = if s.message.is_empty() {
        "the API server returned an error".to_string()
    } else {
        s.message.clone()
    };
    format!("{message} ({}{reason})", s.code)
}

/// An error chain for people (`context: cause: cause`), with every Kubernetes API error in it
/// shown by `status_text`. kube-rs formats `Error::Api` with the Status' Debug output, and the
/// errors wrapping it (watcher, discovery) repeat that text in their own message.
pub fn explain(e: &anyhow::Error) -> String {
    let mut parts: Vec<String> = vec![];
    let mut api: Option<(String, String)> = None;
    for cause in e.chain() {
        if let Some(kube::Error::Api(s)) = cause.downcast_ref::<kube::Error>() {
            api = Some((cause.to_string(), status_text(s)));
            break;
        }
        parts.push(cause.to_string());
    }
    let mut out: Vec<String> = vec![];
    if let Some((raw, clean)) = &api {
        for p in &mut parts {
            *p = p.replace(raw.as_str(), clean);
        }
        if !parts.iter().any(|p| p.contains(clean.as_str())) {
            parts.push(clean.clone());
        }
    }
    for p in parts {
        // A wrapper that repeats its source's message adds nothing.
        if out.last().is_some_and(|l: &String| l.ends_with(&p)) {
            continue;
        }
        out.push(p);
    }
    out.join(": ")
}

/// An error kept whole (its chain, a `kube::Error` in it) and shown as `explain` shows it: the
/// runner's typed errors hold one as their source instead of the flattened text.
#[derive(Debug)]
pub struct Explained(pub anyhow::Error);

impl Explained {
    /// The error itself, for downcasting (`kube::Error`).
    pub fn error(&self) -> &anyhow::Error {
        &self.0
    }
}

impl From<anyhow::Error> for Explained {
    fn from(e: anyhow::Error) -> Explained {
        Explained(e)
    }
}

impl std::fmt::Display for Explained {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&explain(&self.0))
    }
}

/// Its Display already tells the whole chain, so it names no further source.
impl std::error::Error for Explained {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_errors_read_like_kubectl() {
        let status: kube::core::Status = serde_json::from_value(serde_json::json!({
            "status": "Failure", "message": "configmaps \"x\" already exists", "reason": "AlreadyExists", "code": 409,
            "metadata": {}, "details": {"name": "x", "kind": "configmaps"}})).unwrap();
        let e = anyhow::Error::new(kube::Error::Api(Box::new(status)))
            .context("creating ConfigMap default/x");
        let text = explain(&e);
        assert_eq!(
            text,
            "creating ConfigMap default/x: configmaps \"x\" already exists (409 AlreadyExists)"
        );
        assert!(!format!("{e:#}").is_empty());
        // The typed form shows the same text and keeps the kube error.
        let kept = Explained(e);
        assert_eq!(kept.to_string(), text);
        assert!(kept.error().chain().any(|c| c.is::<kube::Error>()));
    }
}
