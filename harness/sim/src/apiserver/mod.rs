//! The API server: the verbs (get, list, create, update, patch, delete, deletecollection) and
//! subresources over the store, with admission, validation, version conversion and CRD
//! registration (this file, `ApiServer`), and its parts the way kube-apiserver's tree splits
//! them. The HTTP front end (`http`) and in-process controllers (scheduler, kubelets, garbage
//! collector) both call `ApiServer`, so they see the same behaviour.

pub mod admission;
pub mod auth;
pub mod builtins;
pub mod crd;
pub mod event_convert;
pub mod event_ttl;
pub mod eviction;
pub mod http;
pub mod meta;
pub mod openapi;
pub mod patch;
pub mod protobuf;
pub mod resources;
pub mod scale;
pub mod selectors;
pub mod service_allocation;
pub mod status;
pub mod store;
pub mod table;
pub mod validation;

use crate::timing;
use patch::PatchError;
use resources::{Registry, ResourceType};
use selectors::{FieldSelector, LabelSelector};
use serde_json::{json, Value};
use status::{ApiError, ApiResult};
use std::sync::Arc;
use store::{DeleteOptions, DeleteOutcome, Store, Stored, UpdateScope};

/// The Kubernetes version the simulated server reports (`/version`, the OpenAPI documents).
pub const GIT_VERSION: &str = "v1.35.0-faultline-sim";

/// Options every write carries (query parameters of the real API).
#[derive(Debug, Clone, Default)]
pub struct WriteOptions {
    pub dry_run: bool,
    pub field_manager: Option<String>,
    /// `Strict`, `Warn` (default) or `Ignore`.
    pub field_validation: Option<String>,
    pub force: bool,
}

/// A successful write, with any warnings for the `Warning` response header.
#[derive(Debug, Clone)]
pub struct Written {
    /// The object as served: shared with the store when no conversion was needed, so internal
    /// writers that ignore the answer pay no copy.
    pub object: Arc<Value>,
    pub warnings: Vec<String>,
    /// True when a PUT or apply created the object (HTTP 201).
    pub created: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchType {
    Merge,
    Json,
    Strategic,
    Apply,
}

impl PatchType {
    pub fn from_content_type(ct: &str) -> Option<PatchType> {
        match ct.split(';').next().unwrap_or("").trim() {
            "application/merge-patch+json" => Some(PatchType::Merge),
            "application/json-patch+json" => Some(PatchType::Json),
            "application/strategic-merge-patch+json" => Some(PatchType::Strategic),
            "application/apply-patch+yaml"
            | "application/apply-patch+json"
            | "application/apply-patch+cbor" => Some(PatchType::Apply),
            _ => None,
        }
    }
}

/// Source of container logs for `pods/log` (the simulated kubelets provide it).
pub trait PodLogSource: Send + Sync {
    /// The container's log, each line led by its time (RFC 3339 with nanoseconds) as the
    /// runtime's log file has it.
    fn logs(&self, pod: &Value, container: &str, previous: bool) -> ApiResult<String>;
}

pub struct ListQuery<'a> {
    pub labels: &'a LabelSelector,
    pub fields: &'a FieldSelector,
    pub limit: Option<usize>,
    pub continue_token: Option<&'a str>,
}

/// The result of a LIST: the list object's parts, with the items in the served version.
pub struct ListPage {
    pub kind: String,
    pub api_version: String,
    pub metadata: Value,
    /// Shared with the store (encodings included) unless converted for the served version.
    pub items: Vec<Stored>,
}

/// Lists with more items than this are streamed (`ListPage::into_json_chunks`), as the
/// apiserver's streaming list encoder (KEP-5116, on by default since 1.33) writes them.
pub const STREAMED_LIST_ITEMS: usize = 500;

impl ListPage {
    /// The list object (copies every item).
    pub fn into_value(self) -> Value {
        let mut m = serde_json::Map::new();
        m.insert("kind".into(), Value::String(self.kind));
        m.insert("apiVersion".into(), Value::String(self.api_version));
        m.insert("metadata".into(), self.metadata);
        m.insert(
            "items".into(),
            Value::Array(
                self.items
                    .into_iter()
                    .map(|i| Arc::try_unwrap(i.object()).unwrap_or_else(|a| (*a).clone()))
                    .collect(),
            ),
        );
        Value::Object(m)
    }

    /// `{"kind":…,"apiVersion":…,"metadata":…}`, which the items are appended into.
    fn head(&self) -> Vec<u8> {
        #[derive(serde::Serialize)]
        struct Head<'a> {
            kind: &'a str,
            #[serde(rename = "apiVersion")]
            api_version: &'a str,
            metadata: &'a Value,
        }
        serde_json::to_vec(&Head {
            kind: &self.kind,
            api_version: &self.api_version,
            metadata: &self.metadata,
        })
        .unwrap_or_default()
    }

    /// The list object serialized as JSON, joined from the items' shared encodings (same
    /// bytes as serializing `into_value`).
    pub fn to_json(&self) -> Vec<u8> {
        let head = self.head();
        let items: Vec<&[u8]> = self.items.iter().map(|i| i.json().as_ref()).collect();
        let mut out =
            Vec::with_capacity(head.len() + 12 + items.iter().map(|i| i.len() + 1).sum::<usize>());
        // `head` is `{...}`: reopen it to append the items.
        out.extend_from_slice(&head[..head.len() - 1]);
        out.extend_from_slice(br#","items":["#);
        for (n, item) in items.iter().enumerate() {
            if n > 0 {
                out.push(b',');
            }
            out.extend_from_slice(item);
        }
        out.extend_from_slice(b"]}");
        out
    }

    /// `to_json`'s bytes in chunks of about 64 KiB, encoded as they are sent: a LIST of 100,000
    /// pods never holds its whole body, and items without a kept encoding are encoded into the
    /// chunk instead of keeping one.
    pub fn into_json_chunks(self) -> impl Iterator<Item = bytes::Bytes> + Send {
        const CHUNK: usize = 64 * 1024;
        let mut head = Some(self.head());
        let mut items = self.items.into_iter().enumerate().peekable();
        let mut closed = false;
        std::iter::from_fn(move || {
            if closed {
                return None;
            }
            let mut buf = Vec::with_capacity(CHUNK + 8 * 1024);
            if let Some(h) = head.take() {
                buf.extend_from_slice(&h[..h.len() - 1]);
                buf.extend_from_slice(br#","items":["#);
            }
            while buf.len() < CHUNK {
                let Some((n, item)) = items.next() else { break };
                if n > 0 {
                    buf.push(b',');
                }
                item.append_json(&mut buf);
            }
            if items.peek().is_none() {
                buf.extend_from_slice(b"]}");
                closed = true;
            }
            Some(bytes::Bytes::from(buf))
        })
    }
}

/// Subresources whose writes change one field of the stored object: (subresource, parent, field).
const ONE_FIELD_WRITES: &[(&str, &str, &str)] = &[
    ("finalize", "spec", "finalizers"),
    ("approval", "status", "conditions"),
    ("ephemeralcontainers", "spec", "ephemeralContainers"),
];

pub struct ApiServer {
    pub store: Store,
    pub registry: Registry,
    log_source: parking_lot::RwLock<Option<Arc<dyn PodLogSource>>>,
    /// Set when the storage controllers run: PVCs get `kubernetes.io/pvc-protection` on create
    /// (the StorageObjectInUseProtection admission plugin), which those controllers remove.
    pub storage_protection: std::sync::atomic::AtomicBool,
    /// Held while a Service's addresses are chosen and stored.
    service_allocation: parking_lot::Mutex<()>,
    /// The OpenAPI documents, rendered on first request and kept until the catalogue changes.
    pub openapi: crate::apiserver::openapi::Cache,
}

impl ApiServer {
    pub fn new(history: usize) -> Arc<Self> {
        ApiServer::with_clock(history, timing::SimClock::new())
    }

    /// An API server whose timestamps come from `clock` (the cluster's one clock).
    pub fn with_clock(history: usize, clock: timing::SimClock) -> Arc<Self> {
        Arc::new(ApiServer {
            store: Store::with_clock(history, clock),
            registry: Registry::with_builtins(),
            log_source: Default::default(),
            storage_protection: Default::default(),
            service_allocation: Default::default(),
            openapi: Default::default(),
        })
    }

    /// The cluster's one clock: every timestamp the API server writes reads it.
    pub fn clock(&self) -> &timing::SimClock {
        &self.store.clock
    }

    pub fn set_log_source(&self, src: Arc<dyn PodLogSource>) {
        *self.log_source.write() = Some(src);
    }

    pub fn resource(
        &self,
        group: &str,
        version: &str,
        plural: &str,
    ) -> ApiResult<Arc<ResourceType>> {
        self.registry.get(group, version, plural).ok_or_else(|| {
            ApiError::new(
                404,
                "NotFound",
                "the server could not find the requested resource",
            )
        })
    }

    /// The stored form of `obj` converted to the version `rt` serves.
    pub fn convert_out(&self, rt: &ResourceType, obj: &Value) -> Value {
        if rt.group == "events.k8s.io" {
            return event_convert::core_to_events_v1(obj);
        }
        let mut o = obj.clone();
        if o.get("apiVersion").and_then(Value::as_str) != Some(rt.api_version().as_str()) {
            o["apiVersion"] = json!(rt.api_version());
        }
        o
    }

    /// An incoming object in `rt`'s version converted to the stored form.
    fn convert_in(&self, rt: &ResourceType, obj: Value) -> Value {
        if rt.group == "events.k8s.io" {
            return event_convert::events_v1_to_core(&obj);
        }
        match self
            .registry
            .storage_type(&resources::storage_key(&rt.group, &rt.plural))
        {
            Some(st) if st.version != rt.version => {
                let mut o = obj;
                o["apiVersion"] = json!(st.api_version());
                o
            }
            _ => obj,
        }
    }

    /// The type the object is stored as (core events for events.k8s.io, the storage version for CRDs).
    fn stored_type(&self, rt: &ResourceType) -> Arc<ResourceType> {
        self.registry
            .storage_type(&resources::storage_key(&rt.group, &rt.plural))
            .unwrap_or_else(|| Arc::new(rt.clone()))
    }

    /// `get` sharing the stored object when no conversion is needed (the HTTP GET path).
    pub fn get_shared(&self, rt: &ResourceType, ns: &str, name: &str) -> ApiResult<Arc<Value>> {
        Ok(self.get_stored(rt, ns, name)?.object())
    }

    /// `get_shared` with the served object's encoding (shared with the store when unconverted).
    pub fn get_stored(&self, rt: &ResourceType, ns: &str, name: &str) -> ApiResult<Stored> {
        let key = resources::storage_key(&rt.group, &rt.plural);
        let ns = if rt.namespaced { ns } else { "" };
        self.store
            .get_stored(&key, ns, name)
            .map(|o| self.convert_out_stored(rt, o))
            .ok_or_else(|| ApiError::not_found(&rt.group, &rt.plural, name))
    }

    pub fn get(&self, rt: &ResourceType, ns: &str, name: &str) -> ApiResult<Value> {
        let key = resources::storage_key(&rt.group, &rt.plural);
        let ns = if rt.namespaced { ns } else { "" };
        self.store
            .get(&key, ns, name)
            .map(|o| self.convert_out(rt, &o))
            .ok_or_else(|| ApiError::not_found(&rt.group, &rt.plural, name))
    }

    pub fn list(&self, rt: &ResourceType, ns: Option<&str>, q: &ListQuery) -> ApiResult<Value> {
        Ok(self.list_page(rt, ns, q)?.into_value())
    }

    /// `list` without building the list object: the items stay shared with the store unless
    /// the served version differs from the stored one, so serving a LIST copies nothing.
    pub fn list_page(
        &self,
        rt: &ResourceType,
        ns: Option<&str>,
        q: &ListQuery,
    ) -> ApiResult<ListPage> {
        q.fields
            .validate(&rt.group, &rt.kind, rt.namespaced, &rt.selectable_fields)
            .map_err(ApiError::bad_request)?;
        let key = resources::storage_key(&rt.group, &rt.plural);
        let start_after = match q.continue_token {
            Some(t) if !t.is_empty() => Some(decode_continue(t)?),
            _ => None,
        };
        // Field selectors are evaluated on the served form (events.k8s.io names fields differently).
        let converts = rt.group == "events.k8s.io";
        let filter = |o: &Value| {
            q.labels.matches(meta::labels(o))
                && if converts {
                    q.fields
                        .matches(&rt.group, &rt.kind, &self.convert_out(rt, o))
                } else {
                    q.fields.matches(&rt.group, &rt.kind, o)
                }
        };
        let ns = if rt.namespaced { ns } else { None };
        // `spec.nodeName=X` (kubelets, `kubectl get pods --field-selector`) is answered from the
        // store's node index; the filter still checks every selector term.
        let on_node = if rt.group.is_empty() && rt.plural == "pods" {
            q.fields
                .requires_exact_match("spec.nodeName")
                .filter(|n| !n.is_empty())
        } else {
            None
        };
        let res = self.store.list_stored(
            &key,
            ns,
            start_after.as_ref().map(|(_, k)| k),
            q.limit,
            &filter,
            on_node,
        );
        let list_rv = start_after
            .as_ref()
            .map(|(rv, _)| *rv)
            .unwrap_or(res.resource_version);
        let mut md = json!({"resourceVersion": list_rv.to_string()});
        if let Some(after) = &res.continue_after {
            md["continue"] = json!(encode_continue(list_rv, after));
            md["remainingItemCount"] = json!(res.remaining);
        }
        let items = res
            .items
            .into_iter()
            .map(|o| self.convert_out_stored(rt, o))
            .collect();
        Ok(ListPage {
            kind: format!("{}List", rt.kind),
            api_version: rt.api_version(),
            metadata: md,
            items,
        })
    }

    /// LIST at an exact past resourceVersion (`resourceVersionMatch=Exact`), without paging.
    pub fn list_exact(
        &self,
        rt: &ResourceType,
        ns: Option<&str>,
        labels: &LabelSelector,
        fields: &FieldSelector,
        rv: u64,
    ) -> ApiResult<ListPage> {
        fields
            .validate(&rt.group, &rt.kind, rt.namespaced, &rt.selectable_fields)
            .map_err(ApiError::bad_request)?;
        let key = resources::storage_key(&rt.group, &rt.plural);
        let ns = if rt.namespaced { ns } else { None };
        let items = self
            .store
            .snapshot_at(&key, ns, rv)?
            .into_iter()
            .map(|o| self.convert_out_stored(rt, o))
            .filter(|o| {
                let obj = o.object();
                labels.matches(meta::labels(&obj)) && fields.matches(&rt.group, &rt.kind, &obj)
            })
            .collect();
        Ok(ListPage {
            kind: format!("{}List", rt.kind),
            api_version: rt.api_version(),
            metadata: json!({"resourceVersion": rv.to_string()}),
            items,
        })
    }

    /// `convert_out_shared` that keeps the shared encoding when no conversion is needed.
    pub fn convert_out_stored(&self, rt: &ResourceType, stored: Stored) -> Stored {
        let obj = stored.object();
        let served = self.convert_out_shared(rt, obj.clone());
        if Arc::ptr_eq(&served, &obj) {
            stored
        } else {
            Stored::new(served)
        }
    }

    /// `convert_out` that shares the stored object when no conversion is needed.
    pub fn convert_out_shared(&self, rt: &ResourceType, obj: Arc<Value>) -> Arc<Value> {
        if rt.group != "events.k8s.io"
            && obj.get("apiVersion").and_then(Value::as_str) == Some(rt.api_version().as_str())
        {
            return obj;
        }
        Arc::new(self.convert_out(rt, &obj))
    }

    fn require_namespace(&self, rt: &ResourceType, ns: &str) -> ApiResult<()> {
        if !rt.namespaced {
            return Ok(());
        }
        let nsrt = self.resource("", "v1", "namespaces")?;
        match self.store.get(&nsrt.key(), "", ns) {
            None => Err(ApiError::not_found("", "namespaces", ns)),
            Some(n) if meta::is_deleting(&n) => Err(ApiError::forbidden(format!(
                "{} \"{}\" is forbidden: unable to create new content in namespace {} because it is being terminated",
                crate::apiserver::status::qualified(&rt.group, &rt.plural),
                "",
                ns
            ))),
            Some(_) => Ok(()),
        }
    }

    pub fn create(
        &self,
        rt: &ResourceType,
        ns: &str,
        obj: Value,
        opts: &WriteOptions,
    ) -> ApiResult<Written> {
        let ns = if rt.namespaced { ns } else { "" };
        let warnings = validation::check_fields(rt, &obj, opts.field_validation.as_deref())?;
        let mut obj = admission::prepare_create(rt, ns, obj, &self.clock().now_rfc3339())?;
        self.require_namespace(rt, ns)?;
        self.admit_pod_service_account(rt, ns, &mut obj);
        self.protect_claim(rt, &mut obj);
        let stored_rt = self.stored_type(rt);
        if rt.group == "apiextensions.k8s.io" && rt.plural == "customresourcedefinitions" {
            crd::prepare(&mut obj)?;
        }
        let obj = self.convert_in(rt, obj);
        validation::validate_create(&stored_rt, &obj)?;
        let mut obj = validation::prune_typed(&stored_rt, obj)?;
        let manager = opts
            .field_manager
            .clone()
            .unwrap_or_else(|| "unknown".into());
        patch::apply::record_update(
            &stored_rt.kind,
            None,
            &mut obj,
            &manager,
            &self.clock().now_rfc3339(),
        );
        let created = self.store_new(&stored_rt, obj, opts.dry_run)?;
        if !opts.dry_run {
            self.after_write(&stored_rt, &created);
        }
        let created = self.after_create_status(&stored_rt, created);
        Ok(Written {
            object: self.convert_out_shared(rt, created),
            warnings,
            created: true,
        })
    }

    /// The store write of a create, with what the apiserver allocates first: a Service's cluster
    /// IP and node ports, chosen under a lock so concurrent creates never share one.
    fn store_new(
        &self,
        stored_rt: &ResourceType,
        mut obj: Value,
        dry_run: bool,
    ) -> ApiResult<Arc<Value>> {
        if !(stored_rt.group.is_empty() && stored_rt.plural == "services") {
            return self.store.create(stored_rt, obj, dry_run);
        }
        let _guard = self.service_allocation.lock();
        let services = self
            .store
            .list(&stored_rt.key(), None, None, None, &|_| true);
        service_allocation::allocate(
            &mut obj,
            &service_allocation::InUse::from_services(services.items.iter().map(|s| s.as_ref())),
        )?;
        self.store.create(stored_rt, obj, dry_run)
    }

    /// A new CRD is answered as established (acceptedNames, storedVersions, conditions): the
    /// sim's CRD controllers run synchronously within the create.
    fn after_create_status(&self, stored_rt: &ResourceType, created: Arc<Value>) -> Arc<Value> {
        if stored_rt.group != "apiextensions.k8s.io"
            || stored_rt.plural != "customresourcedefinitions"
        {
            return created;
        }
        self.store
            .get(&stored_rt.key(), "", meta::name(&created))
            .unwrap_or(created)
    }

    /// The ServiceAccount admission plugin, which reads the pod's ServiceAccount.
    /// Upstream refuses a pod whose ServiceAccount does not exist (403, "error looking up service
    /// account"); the sim admits it (docs/fidelity.md): its own Longhorn pods name a ServiceAccount
    /// the sim does not create.
    fn admit_pod_service_account(&self, rt: &ResourceType, ns: &str, obj: &mut Value) {
        if !(rt.group.is_empty() && rt.plural == "pods") {
            return;
        }
        let sa_name = meta::str_at(obj, "/spec/serviceAccountName")
            .unwrap_or("default")
            .to_string();
        let sa = self
            .resource("", "v1", "serviceaccounts")
            .ok()
            .and_then(|sart| self.store.get(&sart.key(), ns, &sa_name));
        admission::admit_service_account(obj, sa.as_deref());
    }

    fn protect_claim(&self, rt: &ResourceType, obj: &mut Value) {
        if rt.group.is_empty()
            && rt.plural == "persistentvolumeclaims"
            && self
                .storage_protection
                .load(std::sync::atomic::Ordering::Relaxed)
        {
            let mut fins = meta::finalizers(obj);
            if !fins.iter().any(|f| f == "kubernetes.io/pvc-protection") {
                fins.push("kubernetes.io/pvc-protection".into());
                meta::set_finalizers(obj, &fins);
            }
        }
    }

    /// PUT: replace the object (or its status), with optimistic concurrency on resourceVersion.
    pub fn update(
        &self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        sub: Option<&str>,
        obj: Value,
        opts: &WriteOptions,
    ) -> ApiResult<Written> {
        let ns = if rt.namespaced { ns } else { "" };
        admission::check_type(rt, &obj)?;
        if meta::name(&obj) != name && !meta::name(&obj).is_empty() {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({}) does not match the name on the URL ({})",
                meta::name(&obj),
                name
            )));
        }
        let warnings = validation::check_fields(rt, &obj, opts.field_validation.as_deref())?;
        let mut obj = self.convert_in(rt, obj);
        obj["apiVersion"] = json!(self.stored_type(rt).api_version());
        obj["kind"] = json!(self.stored_type(rt).kind);
        let stored_rt = self.stored_type(rt);
        let written = self.write_existing(&stored_rt, ns, name, sub, obj, opts, None)?;
        Ok(Written {
            object: self.convert_out_shared(rt, written),
            warnings,
            created: false,
        })
    }

    /// Common path of update and patch: scope, typed validation, managed fields, store write.
    /// A one-field subresource write (ephemeralcontainers, approval) whose body pins no
    /// resourceVersion is retried on a write conflict, as the apiserver's GuaranteedUpdate
    /// does (it loops until its deadline; 100 tries here): the client never saw the version a
    /// concurrent kubelet status write replaced.
    #[allow(clippy::too_many_arguments)]
    fn write_existing(
        &self,
        stored_rt: &ResourceType,
        ns: &str,
        name: &str,
        sub: Option<&str>,
        obj: Value,
        opts: &WriteOptions,
        apply_result: Option<()>,
    ) -> ApiResult<Arc<Value>> {
        // A one-field write (finalize, ephemeralcontainers) without a resourceVersion is applied
        // under the store's lock (UpdateScope::Field), so concurrent writes of other parts
        // cannot make it conflict, as GuaranteedUpdate's re-read and retry would have it.
        self.write_existing_once(stored_rt, ns, name, sub, obj, opts, apply_result)
    }

    #[allow(clippy::too_many_arguments)]
    fn write_existing_once(
        &self,
        stored_rt: &ResourceType,
        ns: &str,
        name: &str,
        sub: Option<&str>,
        mut obj: Value,
        opts: &WriteOptions,
        apply_result: Option<()>,
    ) -> ApiResult<Arc<Value>> {
        let scope = match sub {
            None => UpdateScope::Main,
            Some("status") if stored_rt.has_status() => UpdateScope::Status,
            Some("finalize") if stored_rt.plural == "namespaces" => {
                UpdateScope::Field("spec", "finalizers")
            }
            Some("ephemeralcontainers")
                if stored_rt.group.is_empty() && stored_rt.plural == "pods" =>
            {
                UpdateScope::Field("spec", "ephemeralContainers")
            }
            Some("approval") if stored_rt.has_subresource("approval") => UpdateScope::Status,
            Some(other) => {
                return Err(ApiError::not_found(
                    &stored_rt.group,
                    &format!("{}/{}", stored_rt.plural, other),
                    name,
                ))
            }
        };
        let current = self
            .store
            .get(&stored_rt.key(), ns, name)
            .ok_or_else(|| ApiError::not_found(&stored_rt.group, &stored_rt.plural, name))?;
        if let Some((_, parent, field)) = ONE_FIELD_WRITES.iter().find(|(s, _, _)| Some(*s) == sub)
        {
            // The rest of the body is ignored; its resourceVersion (if any) still guards the write.
            let mut next = (*current).clone();
            next[*parent][*field] = obj
                .get(*parent)
                .and_then(|p| p.get(*field))
                .cloned()
                .unwrap_or_else(|| json!([]));
            match obj.pointer("/metadata/resourceVersion") {
                Some(rv) => next["metadata"]["resourceVersion"] = rv.clone(),
                None => {
                    meta::metadata_mut(&mut next).remove("resourceVersion");
                }
            }
            obj = next;
        }
        let main = scope == UpdateScope::Main && sub != Some("ephemeralcontainers");
        if main {
            admission::prepare_update(stored_rt, &current, &mut obj);
        }
        // Validation reads the decoded body as the apiserver's typed object has it (an absent
        // optional member stays absent); a body that does not decode is a 400 first.
        let unpruned = main.then(|| obj.clone());
        let mut obj = if scope == UpdateScope::Status {
            validation::prune_typed_status(stored_rt, &current, obj)?
        } else {
            validation::prune_typed(stored_rt, obj)?
        };
        if let Some(raw) = unpruned {
            // A stale resourceVersion is a conflict before anything is validated.
            let rv = meta::resource_version(&obj);
            if rv.is_empty() || rv == meta::resource_version(&current) {
                let next = validation::as_stored(stored_rt, &current, &raw);
                validation::validate_update(stored_rt, &current, &next)?;
            }
        }
        // A status write keeps the stored metadata (UpdateScope::Status), so the managedFields
        // it would record are dropped anyway: not computed (docs/fidelity.md).
        if apply_result.is_none() && scope != UpdateScope::Status {
            let manager = opts
                .field_manager
                .clone()
                .unwrap_or_else(|| "unknown".into());
            patch::apply::record_update(
                &stored_rt.kind,
                Some(&current),
                &mut obj,
                &manager,
                &self.clock().now_rfc3339(),
            );
        }
        if stored_rt.group == "apiextensions.k8s.io"
            && stored_rt.plural == "customresourcedefinitions"
            && sub.is_none()
        {
            crd::prepare(&mut obj)?;
        }
        let written = self
            .store
            .update(stored_rt, ns, name, obj, scope, opts.dry_run)?;
        if !opts.dry_run {
            self.after_write(stored_rt, &written);
        }
        Ok(written)
    }

    #[allow(clippy::too_many_arguments)] // the PATCH request's parts, as the HTTP layer has them
    pub fn patch(
        &self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        sub: Option<&str>,
        ptype: PatchType,
        body: &Value,
        opts: &WriteOptions,
    ) -> ApiResult<Written> {
        let ns = if rt.namespaced { ns } else { "" };
        if ptype == PatchType::Strategic && rt.custom {
            return Err(ApiError::new(
                415,
                "UnsupportedMediaType",
                "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml",
            ));
        }
        if ptype == PatchType::Apply && opts.field_manager.as_deref().unwrap_or("").is_empty() {
            return Err(validation::options::apply_needs_field_manager());
        }
        let stored_rt = self.stored_type(rt);
        let mut warnings = Vec::new();
        // The apiserver retries a patch on a write conflict, unless the patch itself pins a resourceVersion.
        for _attempt in 0..5 {
            let current = self
                .store
                .get(&stored_rt.key(), ns, name)
                .map(|c| self.convert_out_shared(rt, c));
            let manager = opts
                .field_manager
                .clone()
                .unwrap_or_else(|| "unknown".into());
            let now = self.clock().now_rfc3339();
            let (next, created) = match (ptype, current.as_deref()) {
                (PatchType::Apply, live) => {
                    // The applied configuration must be of the endpoint's own type, version
                    // included (any other: 400 naming its GroupVersionKind as Go prints one,
                    // `invalid object type: /v1, Kind=ConfigMap`; seen on kube-apiserver 1.35).
                    let given = body.get("apiVersion").and_then(Value::as_str).unwrap_or("");
                    let kind = body.get("kind").and_then(Value::as_str).unwrap_or("");
                    if given != rt.api_version() || kind != rt.kind {
                        let group_version = if given.contains('/') {
                            given.to_string()
                        } else {
                            format!("/{given}")
                        };
                        return Err(ApiError::bad_request(format!(
                            "invalid object type: {group_version}, Kind={kind}"
                        )));
                    }
                    warnings =
                        validation::check_fields(rt, body, opts.field_validation.as_deref())?;
                    admission::check_type(rt, body)?;
                    // An applied configuration without a name takes the one on the URL.
                    let named;
                    let body = if meta::name(body).is_empty() {
                        named = with_name(body, name);
                        &named
                    } else {
                        body
                    };
                    if meta::name(body) != name {
                        return Err(ApiError::bad_request(format!(
                            "the name of the object ({}) does not match the name on the URL ({})",
                            meta::name(body),
                            name
                        )));
                    }
                    let applied = patch::apply::server_side_apply(
                        &rt.kind, live, body, &manager, opts.force, &now,
                    )
                    .map_err(|e| patch_error(rt, name, e))?;
                    (applied, live.is_none())
                }
                (_, None) => return Err(ApiError::not_found(&rt.group, &rt.plural, name)),
                (_, Some(cur)) => (patched(rt, &rt.kind, name, cur, ptype, body)?, false),
            };
            if created {
                if sub.is_some() {
                    return Err(ApiError::not_found(&rt.group, &rt.plural, name));
                }
                let mut o = next;
                meta::metadata_mut(&mut o).insert("name".into(), json!(name));
                let mut w = self.create_applied(rt, ns, o, opts)?;
                w.warnings = warnings;
                return Ok(w);
            }
            let pinned = body.pointer("/metadata/resourceVersion").is_some();
            let mut next = self.convert_in(rt, next);
            if !pinned {
                // Patch against the version we read, so a concurrent write is detected and retried.
                if let Some(cur) = current.as_ref() {
                    next["metadata"]["resourceVersion"] = json!(meta::resource_version(cur));
                }
            }
            let is_apply = if ptype == PatchType::Apply {
                Some(())
            } else {
                None
            };
            match self.write_existing(&stored_rt, ns, name, sub, next, opts, is_apply) {
                Err(e) if e.code == 409 && e.reason == "Conflict" && !pinned => continue,
                Err(e) => return Err(e),
                Ok(o) => {
                    return Ok(Written {
                        object: self.convert_out_shared(rt, o),
                        warnings,
                        created: false,
                    })
                }
            }
        }
        Err(ApiError::conflict(
            &rt.group,
            &rt.plural,
            name,
            "too many concurrent writes; please retry",
        ))
    }

    /// `componentstatuses`: computed on every read like the real registry, which probes the
    /// scheduler, the controller manager and etcd; in the sim they are always healthy.
    pub fn component_statuses(&self) -> Vec<Value> {
        ["controller-manager", "etcd-0", "scheduler"]
            .iter()
            .map(|name| {
                json!({"kind": "ComponentStatus", "apiVersion": "v1", "metadata": {"name": name},
                       "conditions": [{"type": "Healthy", "status": "True", "message": "ok"}]})
            })
            .collect()
    }

    /// GET .../scale: the autoscaling/v1 Scale of a workload.
    pub fn get_scale(&self, rt: &ResourceType, ns: &str, name: &str) -> ApiResult<Value> {
        let paths = rt
            .scale
            .as_ref()
            .ok_or_else(|| ApiError::not_found(&rt.group, &format!("{}/scale", rt.plural), name))?;
        Ok(scale::scale_of(&self.get(rt, ns, name)?, paths))
    }

    /// PUT .../scale: set the workload's replicas from a Scale; answers the new Scale.
    pub fn update_scale(
        &self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        body: &Value,
        opts: &WriteOptions,
    ) -> ApiResult<Written> {
        let paths = rt
            .scale
            .as_ref()
            .ok_or_else(|| ApiError::not_found(&rt.group, &format!("{}/scale", rt.plural), name))?;
        let current = self.get(rt, ns, name)?;
        let next = scale::apply_scale(&current, body, paths, name)?;
        let w = self.update(rt, ns, name, None, next, opts)?;
        Ok(Written {
            object: Arc::new(scale::scale_of(&w.object, paths)),
            warnings: w.warnings,
            created: false,
        })
    }

    /// PATCH .../scale: the patch applies to the Scale view, then its replicas to the workload;
    /// retried on a concurrent write unless the patch pins a resourceVersion. Server-side apply
    /// is treated as a merge patch here (no field ownership of Scale fields).
    pub fn patch_scale(
        &self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        ptype: PatchType,
        body: &Value,
        opts: &WriteOptions,
    ) -> ApiResult<Written> {
        let paths = rt
            .scale
            .as_ref()
            .ok_or_else(|| ApiError::not_found(&rt.group, &format!("{}/scale", rt.plural), name))?;
        let pinned = body.pointer("/metadata/resourceVersion").is_some();
        for _attempt in 0..5 {
            let current = self.get(rt, ns, name)?;
            let view = scale::scale_of(&current, paths);
            let ptype = if ptype == PatchType::Apply {
                PatchType::Merge
            } else {
                ptype
            };
            let wanted = patched(rt, "Scale", name, &view, ptype, body)?;
            let next = scale::apply_scale(&current, &wanted, paths, name)?;
            match self.update(rt, ns, name, None, next, opts) {
                Err(e) if e.code == 409 && e.reason == "Conflict" && !pinned => continue,
                Err(e) => return Err(e),
                Ok(w) => {
                    return Ok(Written {
                        object: Arc::new(scale::scale_of(&w.object, paths)),
                        warnings: w.warnings,
                        created: false,
                    })
                }
            }
        }
        Err(ApiError::conflict(
            &rt.group,
            &rt.plural,
            name,
            "too many concurrent writes; please retry",
        ))
    }

    /// Create through server-side apply: managed fields come from the apply, not an Update entry.
    fn create_applied(
        &self,
        rt: &ResourceType,
        ns: &str,
        obj: Value,
        opts: &WriteOptions,
    ) -> ApiResult<Written> {
        let managed = obj.pointer("/metadata/managedFields").cloned();
        let mut obj = admission::prepare_create(rt, ns, obj, &self.clock().now_rfc3339())?;
        self.require_namespace(rt, ns)?;
        self.admit_pod_service_account(rt, ns, &mut obj);
        if let Some(m) = managed {
            meta::metadata_mut(&mut obj).insert("managedFields".into(), m);
        }
        if rt.group == "apiextensions.k8s.io" && rt.plural == "customresourcedefinitions" {
            crd::prepare(&mut obj)?;
        }
        let stored_rt = self.stored_type(rt);
        let obj = self.convert_in(rt, obj);
        validation::validate_create(&stored_rt, &obj)?;
        let obj = validation::prune_typed(&stored_rt, obj)?;
        let created = self.store_new(&stored_rt, obj, opts.dry_run)?;
        if !opts.dry_run {
            self.after_write(&stored_rt, &created);
        }
        Ok(Written {
            object: self.convert_out_shared(rt, created),
            warnings: vec![],
            created: true,
        })
    }

    pub fn delete(
        &self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        opts: &DeleteOptions,
    ) -> ApiResult<DeleteOutcome> {
        let ns = if rt.namespaced { ns } else { "" };
        let stored_rt = self.stored_type(rt);
        if stored_rt.group.is_empty() && stored_rt.plural == "namespaces" {
            return self.delete_namespace(&stored_rt, name, opts);
        }
        let out = self.store.delete(&stored_rt, ns, name, opts)?;
        Ok(match out {
            DeleteOutcome::Deleted(o) => {
                if !opts.dry_run {
                    self.after_delete(&stored_rt, &o);
                }
                DeleteOutcome::Deleted(Arc::new(self.convert_out(rt, &o)))
            }
            DeleteOutcome::Pending(o) => DeleteOutcome::Pending(Arc::new(self.convert_out(rt, &o))),
        })
    }

    /// Namespaces are held by `spec.finalizers` until the namespace controller empties them.
    fn delete_namespace(
        &self,
        rt: &ResourceType,
        name: &str,
        opts: &DeleteOptions,
    ) -> ApiResult<DeleteOutcome> {
        let current = self
            .store
            .get(&rt.key(), "", name)
            .ok_or_else(|| ApiError::not_found("", "namespaces", name))?;
        let spec_fins = current
            .pointer("/spec/finalizers")
            .and_then(Value::as_array)
            .map(|a| !a.is_empty())
            .unwrap_or(false);
        if !spec_fins {
            return self.store.delete(rt, "", name, opts);
        }
        if meta::is_deleting(&current) {
            return Ok(DeleteOutcome::Pending(current));
        }
        let mut next = (*current).clone();
        next["metadata"]["deletionTimestamp"] = json!(self.clock().now_rfc3339());
        next["metadata"]["deletionGracePeriodSeconds"] = json!(0);
        next["status"]["phase"] = json!("Terminating");
        let written = self
            .store
            .update(rt, "", name, next, UpdateScope::Any, opts.dry_run)?;
        Ok(DeleteOutcome::Pending(written))
    }

    pub fn delete_collection(
        &self,
        rt: &ResourceType,
        ns: Option<&str>,
        q: &ListQuery,
        opts: &DeleteOptions,
    ) -> ApiResult<Value> {
        let list = self.list(
            rt,
            ns,
            &ListQuery {
                labels: q.labels,
                fields: q.fields,
                limit: None,
                continue_token: None,
            },
        )?;
        let mut items = Vec::new();
        for item in list["items"].as_array().cloned().unwrap_or_default() {
            match self.delete(rt, meta::namespace(&item), meta::name(&item), opts) {
                Ok(DeleteOutcome::Deleted(o)) | Ok(DeleteOutcome::Pending(o)) => {
                    items.push((*o).clone())
                }
                Err(e) if e.code == 404 => {}
                Err(e) => return Err(e),
            }
        }
        Ok(
            json!({"kind": format!("{}List", rt.kind), "apiVersion": rt.api_version(), "metadata": {"resourceVersion": self.store.current_rv().to_string()}, "items": items}),
        )
    }

    /// POST pods/{name}/binding (and the legacy `bindings` resource): set spec.nodeName once.
    pub fn bind_pod(&self, ns: &str, name: &str, binding: &Value) -> ApiResult<()> {
        let target = binding
            .pointer("/target/name")
            .and_then(Value::as_str)
            .unwrap_or("");
        if target.is_empty() {
            return Err(ApiError::invalid(
                "",
                "Binding",
                name,
                vec![(
                    "target.name".into(),
                    "Required value".into(),
                    "FieldValueRequired",
                )],
            ));
        }
        let rt = self.resource("", "v1", "pods")?;
        let pod = self
            .store
            .get(&rt.key(), ns, name)
            .ok_or_else(|| ApiError::not_found("", "pods", name))?;
        if meta::is_deleting(&pod) {
            return Err(ApiError::conflict(
                "",
                "pods/binding",
                name,
                "pod is being deleted, cannot be assigned to a host",
            ));
        }
        if meta::str_at(&pod, "/spec/nodeName")
            .map(|n| !n.is_empty())
            .unwrap_or(false)
        {
            return Err(ApiError::conflict(
                "",
                "pods/binding",
                name,
                &format!(
                    "pod {} is already assigned to node {:?}",
                    name,
                    meta::str_at(&pod, "/spec/nodeName").unwrap_or("")
                ),
            ));
        }
        let mut next = (*pod).clone();
        next["spec"]["nodeName"] = json!(target);
        if let Some(a) = binding
            .pointer("/metadata/annotations")
            .and_then(Value::as_object)
        {
            for (k, v) in a {
                next["metadata"]["annotations"][k] = v.clone();
            }
        }
        // Binding sets PodScheduled=True, as the real binding storage does.
        meta::set_condition(
            &mut next,
            "PodScheduled",
            "True",
            None,
            None,
            &self.clock().now_rfc3339(),
        );
        self.store
            .update(&rt, ns, name, next, UpdateScope::Any, false)?;
        Ok(())
    }

    pub fn pod_logs(
        &self,
        ns: &str,
        name: &str,
        container: Option<&str>,
        previous: bool,
        timestamps: bool,
    ) -> ApiResult<String> {
        let rt = self.resource("", "v1", "pods")?;
        let pod = self
            .store
            .get(&rt.key(), ns, name)
            .ok_or_else(|| ApiError::not_found("", "pods", name))?;
        let containers: Vec<String> = pod
            .pointer("/spec/containers")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|c| c.get("name").and_then(Value::as_str).map(String::from))
                    .collect()
            })
            .unwrap_or_default();
        let container = match container {
            Some(c) => c.to_string(),
            None if containers.len() == 1 => containers[0].clone(),
            None => {
                return Err(ApiError::bad_request(format!(
                    "a container name must be specified for pod {}, choose one of: [{}]",
                    name,
                    containers.join(" ")
                )))
            }
        };
        let src = self.log_source.read().clone();
        match src {
            // `timestamps=true` keeps each line's time, as the kubelet does.
            Some(s) => s.logs(&pod, &container, previous).map(|text| {
                if timestamps {
                    return text;
                }
                text.lines()
                    .map(|l| format!("{}\n", l.split_once(' ').map_or(l, |(_, rest)| rest)))
                    .collect()
            }),
            None => Err(ApiError::bad_request(format!(
                "container {:?} in pod {:?} is waiting to start: ContainerCreating",
                container, name
            ))),
        }
    }

    /// Side effects of a committed write that the real apiserver performs synchronously enough
    /// for clients not to notice: serving the resources of an established CRD.
    fn after_write(&self, rt: &ResourceType, obj: &Value) {
        if rt.group == "apiextensions.k8s.io"
            && rt.plural == "customresourcedefinitions"
            && !meta::is_deleting(obj)
        {
            crd::establish(&self.registry, &self.store, obj);
        }
    }

    fn after_delete(&self, rt: &ResourceType, obj: &Value) {
        if rt.group == "apiextensions.k8s.io" && rt.plural == "customresourcedefinitions" {
            crd::withdraw(&self.registry, obj);
        }
    }

    /// Internal writers (controllers of the simulated control plane) bypass admission.
    pub fn update_internal(&self, rt: &ResourceType, obj: Value) -> ApiResult<Arc<Value>> {
        let ns = meta::namespace(&obj).to_string();
        let name = meta::name(&obj).to_string();
        let written = self
            .store
            .update(rt, &ns, &name, obj, UpdateScope::Any, false)?;
        self.after_write(rt, &written);
        Ok(written)
    }

    pub fn delete_internal(
        &self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        opts: &DeleteOptions,
    ) -> ApiResult<DeleteOutcome> {
        self.delete(rt, ns, name, opts)
    }
}

fn with_name(obj: &Value, name: &str) -> Value {
    let mut o = obj.clone();
    meta::metadata_mut(&mut o).insert("name".into(), json!(name));
    o
}

/// `cur` after a merge, JSON or strategic merge patch (`kind` picks the strategic merge keys).
fn patched(
    rt: &ResourceType,
    kind: &str,
    name: &str,
    cur: &Value,
    ptype: PatchType,
    body: &Value,
) -> ApiResult<Value> {
    match ptype {
        PatchType::Merge | PatchType::Apply => Ok(patch::merge_patch(cur, body)),
        PatchType::Json => patch::json_patch(cur, body).map_err(|e| patch_error(rt, name, e)),
        PatchType::Strategic => patch::strategic::strategic_merge_patch(kind, cur, body)
            .map_err(|e| patch_error(rt, name, e)),
    }
}

fn patch_error(rt: &ResourceType, name: &str, e: PatchError) -> ApiError {
    match e {
        PatchError::Invalid(m) => ApiError::new(422, "Invalid", m),
        PatchError::BadRequest(m) => ApiError::bad_request(m),
        PatchError::Rejected(_) => {
            let mut err = ApiError::new(
                422,
                "Invalid",
                "the server rejected our request due to an error in our request",
            );
            err.details = Some(json!({}));
            err
        }
        PatchError::Conflict { message, fields } => {
            let mut err = ApiError::new(409, "Conflict", message);
            err.details = Some(json!({
                "name": name, "kind": rt.plural, "group": rt.group,
                "causes": fields.iter().map(|f| json!({"reason": "FieldManagerConflict", "message": format!("conflict with field {}", f), "field": f})).collect::<Vec<_>>()
            }));
            err
        }
    }
}

/// Continue tokens carry the list's resourceVersion and the last key, base64-encoded JSON.
fn encode_continue(rv: u64, after: &(String, String)) -> String {
    use base64::Engine;
    let raw = json!({"v": "meta.k8s.io/v1", "rv": rv, "start": [after.0, after.1]}).to_string();
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(raw)
}

fn decode_continue(token: &str) -> ApiResult<(u64, (String, String))> {
    use base64::Engine;
    let bad = || ApiError::bad_request(format!("invalid continue token: {:?}", token));
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token.trim_end_matches('='))
        .map_err(|_| bad())?;
    let v: Value = serde_json::from_slice(&raw).map_err(|_| bad())?;
    let rv = v.get("rv").and_then(Value::as_u64).ok_or_else(bad)?;
    let ns = v
        .pointer("/start/0")
        .and_then(Value::as_str)
        .ok_or_else(bad)?;
    let name = v
        .pointer("/start/1")
        .and_then(Value::as_str)
        .ok_or_else(bad)?;
    Ok((rv, (ns.to_string(), name.to_string())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(items: Vec<Value>, metadata: Value) -> ListPage {
        ListPage {
            kind: "ConfigMapList".into(),
            api_version: "v1".into(),
            metadata,
            items: items
                .into_iter()
                .map(|i| Stored::new(Arc::new(i)))
                .collect(),
        }
    }

    #[test]
    fn a_list_joined_from_shared_encodings_is_byte_identical_to_serializing_it() {
        let cm = |n: &str| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": n, "namespace": "d"}, "data": {"k": "v \"q\" \u{e9}\n"}});
        for (items, md) in [
            (vec![], json!({"resourceVersion": "5"})),
            (vec![cm("a")], json!({"resourceVersion": "6"})),
            (
                vec![cm("a"), cm("b"), cm("c")],
                json!({"resourceVersion": "7", "continue": "abc", "remainingItemCount": 2}),
            ),
        ] {
            let p = page(items.clone(), md.clone());
            let joined = p.to_json();
            assert_eq!(joined, serde_json::to_vec(&p.into_value()).unwrap());
            let parsed: Value = serde_json::from_slice(&joined).unwrap();
            assert_eq!(parsed["items"], Value::Array(items));
            assert_eq!(parsed["metadata"], md);
        }
    }

    #[test]
    fn a_streamed_list_is_the_joined_list_in_chunks_and_keeps_no_new_encodings() {
        let cm = |n: usize| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("c{n}"), "namespace": "d"}, "data": {"k": "x".repeat(n % 300)}});
        for count in [0, 1, 2, 700, 3000] {
            let reference = page(
                (0..count).map(cm).collect(),
                json!({"resourceVersion": "9"}),
            )
            .to_json();
            let p = page(
                (0..count).map(cm).collect(),
                json!({"resourceVersion": "9"}),
            );
            // Half the items have an encoding kept already (a watcher asked for it).
            for item in p.items.iter().step_by(2) {
                item.json();
            }
            let items = p.items.clone();
            let chunks: Vec<bytes::Bytes> = p.into_json_chunks().collect();
            assert_eq!(chunks.concat(), reference, "{count} items");
            assert!(
                chunks.iter().all(|c| c.len() <= 72 * 1024),
                "chunks stay small"
            );
            assert!(count < 3000 || chunks.len() > 10, "{} chunks", chunks.len());
            for (n, item) in items.iter().enumerate() {
                assert_eq!(
                    item.has_encoding(),
                    n % 2 == 0,
                    "item {n}: streaming keeps no new encoding"
                );
            }
        }
    }

    #[test]
    fn an_ephemeral_containers_write_without_a_resource_version_outlasts_concurrent_status_writes()
    {
        use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
        let api = ApiServer::new(1000);
        let o = WriteOptions::default();
        let ns_rt = api.registry.get("", "v1", "namespaces").unwrap();
        api.create(
            &ns_rt,
            "",
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "t"}}),
            &o,
        )
        .unwrap();
        let pods = api.registry.get("", "v1", "pods").unwrap();
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}});
        api.create(&pods, "t", pod, &o).unwrap();
        // A kubelet posting status as fast as it can, each post from a fresh read.
        let stop = Arc::new(AtomicBool::new(false));
        let kubelet = {
            let (api, stop, pods) = (api.clone(), stop.clone(), pods.clone());
            std::thread::spawn(move || {
                let mut posted = 0u32;
                while !stop.load(Relaxed) {
                    let mut p = (*api.store.get(&pods.key(), "t", "p").unwrap()).clone();
                    p["status"]["message"] = json!(format!("post {posted}"));
                    posted += api
                        .update(&pods, "t", "p", Some("status"), p, &WriteOptions::default())
                        .is_ok() as u32;
                }
                posted
            })
        };
        let mut ephemeral = vec![];
        for i in 0..150 {
            ephemeral.push(json!({"name": format!("debug-{i}"), "image": "busybox"}));
            let body = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"ephemeralContainers": ephemeral}});
            if let Err(e) = api.update(&pods, "t", "p", Some("ephemeralcontainers"), body, &o) {
                stop.store(true, Relaxed);
                panic!(
                    "write {i} without a resourceVersion failed: {} {}",
                    e.code, e.message
                );
            }
        }
        stop.store(true, Relaxed);
        assert!(
            kubelet.join().unwrap() > 0,
            "the status writer never got a write in"
        );
        let stored = api.store.get(&pods.key(), "t", "p").unwrap();
        assert_eq!(
            stored["spec"]["ephemeralContainers"]
                .as_array()
                .map(Vec::len),
            Some(150)
        );
    }

    #[test]
    fn continue_tokens_round_trip_and_reject_garbage() {
        let t = encode_continue(42, &("ns".into(), "name".into()));
        assert_eq!(
            decode_continue(&t).unwrap(),
            (42, ("ns".into(), "name".into()))
        );
        assert_eq!(decode_continue("!!!").unwrap_err().code, 400);
    }
}
