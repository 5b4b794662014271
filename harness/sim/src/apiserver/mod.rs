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
pub mod gojson;
pub mod hpa_convert;
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
use admission::webhook;
use patch::PatchError;
use resources::{Registry, ResourceType};
use selectors::{FieldSelector, LabelSelector};
use serde_json::{json, Value};
use status::{ApiError, ApiResult};
use std::sync::Arc;
use store::{DeleteOptions, DeleteOutcome, Propagation, Store, Stored, UpdateScope};

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
    /// The requesting user, for the strategies that record it (a CertificateSigningRequest's
    /// spec.username, uid, groups, extra). None for the sim's own writers.
    pub user: Option<auth::UserInfo>,
    /// What the write answers with: an in-process writer that reads no managedFields takes the
    /// object as the store keeps it (`store::Answer::Kept`), without a copy.
    pub answer: store::Answer,
}

/// A successful write, with any warnings for the `Warning` response header.
#[derive(Debug, Clone)]
pub struct Written {
    /// The object as served (with `WriteOptions::answer` Kept, as the store keeps it: shared
    /// with the store when no conversion was needed, so in-process writers pay no copy).
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
    /// Items are written without `kind` and `apiVersion`, as a typed list of a built-in kind
    /// is (its items' TypeMeta is empty); a custom resource's unstructured items keep them.
    pub untyped_items: bool,
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
                    .map(|i| {
                        let mut o = Arc::try_unwrap(i.object()).unwrap_or_else(|a| (*a).clone());
                        if self.untyped_items {
                            if let Some(m) = o.as_object_mut() {
                                m.shift_remove("kind");
                                m.shift_remove("apiVersion");
                            }
                        }
                        o
                    })
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
            if self.untyped_items {
                append_untyped(item, &mut out);
            } else {
                out.extend_from_slice(item);
            }
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
        let untyped = self.untyped_items;
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
                if untyped {
                    item.with_json(|bytes| append_untyped(bytes, &mut buf));
                } else {
                    item.append_json(&mut buf);
                }
            }
            if items.peek().is_none() {
                buf.extend_from_slice(b"]}");
                closed = true;
            }
            Some(bytes::Bytes::from(buf))
        })
    }
}

/// An item's encoding without its `kind` and `apiVersion`: the leading members a stored object
/// starts with (`meta::canonical_order`) are skipped without parsing; otherwise it is re-encoded.
fn append_untyped(item: &[u8], out: &mut Vec<u8>) {
    /// `"name":"value",` at the start of `b`, the value free of escapes: its length.
    fn member(b: &[u8], name: &[u8]) -> Option<usize> {
        let rest = b
            .strip_prefix(b"\"")?
            .strip_prefix(name)?
            .strip_prefix(b"\":\"")?;
        let end = rest.iter().position(|c| *c == b'"' || *c == b'\\')?;
        (rest[end] == b'"' && rest.get(end + 1) == Some(&b',')).then_some(name.len() + 5 + end + 1)
    }
    if let Some(body) = item.strip_prefix(b"{") {
        if let Some(k) = member(body, b"kind") {
            if let Some(a) = member(&body[k..], b"apiVersion") {
                out.push(b'{');
                out.extend_from_slice(&body[k + a..]);
                return;
            }
        }
    }
    match serde_json::from_slice::<Value>(item) {
        Ok(mut v) => {
            if let Some(m) = v.as_object_mut() {
                m.shift_remove("kind");
                m.shift_remove("apiVersion");
            }
            let _ = serde_json::to_writer(&mut *out, &v);
        }
        Err(_) => out.extend_from_slice(item),
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
    /// Held while a Service's addresses are chosen and stored.
    service_allocation: parking_lot::Mutex<()>,
    /// The OpenAPI documents, rendered on first request and kept until the catalogue changes.
    pub openapi: crate::apiserver::openapi::Cache,
    pub options: ApiServerOptions,
}

/// The kube-apiserver flags the sim honours beyond its defaults (`faultline envtest` sets them
/// from the flags envtest passes).
#[derive(Debug, Clone)]
pub struct ApiServerOptions {
    /// `--service-cluster-ip-range` (default: kubeadm's 10.96.0.0/12).
    pub service_cidr: service_allocation::ServiceCidr,
    /// The ServiceAccount admission plugin (`--disable-admission-plugins=ServiceAccount` turns
    /// it off, as envtest does: then pods keep an empty `serviceAccountName` and get no token
    /// volume).
    pub service_account_admission: bool,
}

impl Default for ApiServerOptions {
    fn default() -> Self {
        ApiServerOptions {
            service_cidr: Default::default(),
            service_account_admission: true,
        }
    }
}

impl ApiServer {
    pub fn new(history: usize) -> Arc<Self> {
        ApiServer::with_clock(history, timing::SimClock::new())
    }

    /// An API server whose timestamps come from `clock` (the cluster's one clock).
    pub fn with_clock(history: usize, clock: timing::SimClock) -> Arc<Self> {
        ApiServer::with_options(history, clock, ApiServerOptions::default())
    }

    /// An API server with kube-apiserver flags beyond the defaults (envtest's).
    pub fn with_options(
        history: usize,
        clock: timing::SimClock,
        options: ApiServerOptions,
    ) -> Arc<Self> {
        Arc::new(ApiServer {
            store: Store::with_clock(history, clock),
            registry: Registry::with_builtins(),
            log_source: Default::default(),
            service_allocation: Default::default(),
            openapi: Default::default(),
            options,
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
        self.registry
            .get(group, version, plural)
            .ok_or_else(ApiError::not_found_path)
    }

    /// The stored form of `obj` converted to the version `rt` serves.
    pub fn convert_out(&self, rt: &ResourceType, obj: &Value) -> Value {
        if rt.group == "events.k8s.io" {
            let mut e = event_convert::core_to_events_v1(obj);
            go_round_trip(rt, &mut e);
            return e;
        }
        if is_hpa_v1(rt) && obj.get("apiVersion").and_then(Value::as_str) != Some("autoscaling/v1")
        {
            let mut h = hpa_convert::v2_to_v1(obj);
            go_round_trip(rt, &mut h);
            return h;
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
        if is_hpa_v1(rt) {
            return hpa_convert::v1_to_v2(&obj);
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

    /// The object as it was at resourceVersion `rv` (from the watch history): a stale read.
    /// Not found when it did not exist then.
    pub fn get_stored_at(
        &self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        rv: u64,
    ) -> ApiResult<Stored> {
        let key = resources::storage_key(&rt.group, &rt.plural);
        let ns = if rt.namespaced { ns } else { "" };
        self.store
            .snapshot_at(&key, Some(ns), rv)?
            .into_iter()
            .find(|o| meta::name(&o.kept()) == name)
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
            Some(t) if !t.is_empty() => Some(decode_continue(t, ns.filter(|_| rt.namespaced))?),
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
        let res = match &start_after {
            // A later page reads the snapshot of the first (etcd serves the token's revision).
            Some((rv, after)) if *rv < self.store.current_rv() => {
                let snapshot = self.store.snapshot_at(&key, ns, *rv).map_err(|e| {
                    if e.code == 410 {
                        continue_too_old()
                    } else {
                        e
                    }
                })?;
                page_of(snapshot, after, q.limit, &filter, *rv)
            }
            _ => self.store.list_stored(
                &key,
                ns,
                start_after.as_ref().map(|(_, k)| k),
                q.limit,
                &filter,
                on_node,
            ),
        };
        let list_rv = start_after
            .as_ref()
            .map(|(rv, _)| *rv)
            .unwrap_or(res.resource_version);
        let mut md = json!({"resourceVersion": list_rv.to_string()});
        // The watch cache answers a cluster-wide list selecting one namespace from that
        // namespace's index: its continue key is relative to the namespace.
        let within_namespace = ns.is_some()
            || (rt.namespaced
                && q.fields
                    .requires_exact_match("metadata.namespace")
                    .is_some_and(|n| !n.is_empty()));
        if let Some(after) = &res.continue_after {
            md["continue"] = json!(encode_continue(list_rv, after, within_namespace));
            // Storage counts what a selector would filter out too, so it gives no count then
            // (etcd3 store GetList: only for an empty predicate).
            if q.labels.is_empty() && q.fields.is_empty() {
                md["remainingItemCount"] = json!(res.remaining);
            }
        }
        let items = res
            .items
            .into_iter()
            .map(|o| self.convert_out_stored(rt, o))
            .collect();
        Ok(ListPage {
            untyped_items: false,
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
                let obj = o.kept();
                labels.matches(meta::labels(&obj)) && fields.matches(&rt.group, &rt.kind, &obj)
            })
            .collect();
        Ok(ListPage {
            untyped_items: false,
            kind: format!("{}List", rt.kind),
            api_version: rt.api_version(),
            metadata: json!({"resourceVersion": rv.to_string()}),
            items,
        })
    }

    /// `convert_out_shared` that keeps the shared encoding when no conversion is needed.
    pub fn convert_out_stored(&self, rt: &ResourceType, stored: Stored) -> Stored {
        let obj = stored.kept();
        let served = self.convert_out_shared(rt, obj.clone());
        if Arc::ptr_eq(&served, &obj) {
            stored
        } else {
            Stored::new(stored.with_managed_fields(&served))
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
        let mut warnings = validation::check_fields(rt, &obj, opts.field_validation.as_deref())?;
        let mut obj = obj;
        if rt.custom {
            validation::customresource::prune_and_default(rt, &mut obj);
        }
        // The field manager records the decoded, defaulted body before admission and the
        // create strategy change it (handlers/create.go).
        let managed = admission::check_type(rt, &obj).ok().map(|()| {
            managed_fields_of(
                rt,
                None,
                None,
                None,
                &obj,
                opts,
                &self.clock().now_rfc3339(),
            )
        });
        let mut obj = admission::prepare_create(rt, ns, obj, &self.clock().now_rfc3339())?;
        if rt.group == "certificates.k8s.io" && rt.plural == "certificatesigningrequests" {
            admission::csr_requester(&mut obj, opts.user.as_ref());
        }
        self.require_namespace(rt, ns)?;
        self.admit_pod_service_account(rt, ns, &mut obj);
        self.protect_claim(rt, &mut obj);
        self.taint_new_node(rt, &mut obj);
        warnings.extend(self.mutating_webhooks(
            webhook::Operation::Create,
            rt,
            "",
            ns,
            &mut obj,
            None,
            opts,
        )?);
        let stored_rt = self.stored_type(rt);
        if rt.group == "apiextensions.k8s.io" && rt.plural == "customresourcedefinitions" {
            crd::prepare(&mut obj)?;
            crd::initial_status(&mut obj);
        }
        let obj = self.convert_in(rt, obj);
        validation::validate_create(&stored_rt, &obj)?;
        let mut obj = validation::prune_typed(&stored_rt, obj)?;
        go_round_trip(&stored_rt, &mut obj);
        warnings.extend(self.validating_webhooks(
            webhook::Operation::Create,
            rt,
            "",
            ns,
            meta::name(&obj),
            Some(&obj),
            None,
            opts,
        )?);
        set_managed_fields(&mut obj, managed.flatten());
        // etcd3 storage refuses a create that names a resourceVersion (a plain error: 500); a
        // dry run never reaches it (DryRunnableStorage.Create only checks the key is free).
        if !opts.dry_run && meta::parse_uint(meta::resource_version(&obj)).is_ok_and(|v| v != 0) {
            return Err(ApiError::new(
                500,
                "",
                "resourceVersion should not be set on objects to be created",
            ));
        }
        let created = self.store_new(&stored_rt, obj, opts)?;
        if !opts.dry_run {
            self.after_write(&stored_rt, &created);
        }
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
        opts: &WriteOptions,
    ) -> ApiResult<Arc<Value>> {
        let dry_run = opts.dry_run;
        if !(stored_rt.group.is_empty() && stored_rt.plural == "services") {
            return self
                .store
                .create_answering(stored_rt, obj, dry_run, opts.answer);
        }
        let _guard = self.service_allocation.lock();
        let services = self
            .store
            .list(&stored_rt.key(), None, None, None, &|_| true);
        service_allocation::allocate(
            &mut obj,
            &self.options.service_cidr,
            &service_allocation::InUse::from_services(services.items.iter().map(|s| s.as_ref())),
        )?;
        self.store
            .create_answering(stored_rt, obj, dry_run, opts.answer)
    }

    /// The mutating admission webhooks over `obj` (in `rt`'s version); their warnings.
    #[allow(clippy::too_many_arguments)] // admission.Attributes, as the dispatcher reads them
    fn mutating_webhooks(
        &self,
        op: webhook::Operation,
        rt: &ResourceType,
        sub: &str,
        ns: &str,
        obj: &mut Value,
        old: Option<&Value>,
        opts: &WriteOptions,
    ) -> ApiResult<Vec<String>> {
        if !webhook::any_configured(&self.store) {
            return Ok(vec![]);
        }
        let user = opts.user.clone().unwrap_or_else(auth::UserInfo::loopback);
        let name = meta::name(obj).to_string();
        let a = webhook::Attributes {
            operation: op,
            rt,
            subresource: sub,
            namespace: ns,
            name: &name,
            old_object: old,
            user: &user,
            dry_run: opts.dry_run,
            field_manager: opts.field_manager.as_deref(),
        };
        webhook::mutate(&self.store, &a, obj, &|o| admission::apply_defaults(rt, o))
    }

    /// The validating admission webhooks; `obj` and `old` are in the stored version.
    #[allow(clippy::too_many_arguments)] // admission.Attributes, as the dispatcher reads them
    fn validating_webhooks(
        &self,
        op: webhook::Operation,
        rt: &ResourceType,
        sub: &str,
        ns: &str,
        name: &str,
        obj: Option<&Value>,
        old: Option<&Value>,
        opts: &WriteOptions,
    ) -> ApiResult<Vec<String>> {
        if !webhook::any_configured(&self.store) {
            return Ok(vec![]);
        }
        let user = opts.user.clone().unwrap_or_else(auth::UserInfo::loopback);
        let obj = obj.map(|o| self.convert_out(rt, o));
        let old = old.map(|o| self.convert_out(rt, o));
        let a = webhook::Attributes {
            operation: op,
            rt,
            subresource: sub,
            namespace: ns,
            name,
            old_object: old.as_ref(),
            user: &user,
            dry_run: opts.dry_run,
            field_manager: opts.field_manager.as_deref(),
        };
        webhook::validate(&self.store, &a, obj.as_ref())
    }

    /// The ServiceAccount admission plugin, which reads the pod's ServiceAccount.
    /// Upstream refuses a pod whose ServiceAccount does not exist (403, "error looking up service
    /// account"); the sim admits it (docs/fidelity.md): its own Longhorn pods name a ServiceAccount
    /// the sim does not create.
    /// Off with `--disable-admission-plugins=ServiceAccount` (envtest's set-up).
    fn admit_pod_service_account(&self, rt: &ResourceType, ns: &str, obj: &mut Value) {
        if !(rt.group.is_empty() && rt.plural == "pods" && self.options.service_account_admission) {
            return;
        }
        let sa_name = admission::default_service_account(obj);
        let sa = self
            .resource("", "v1", "serviceaccounts")
            .ok()
            .and_then(|sart| self.store.get(&sart.key(), ns, &sa_name));
        admission::admit_service_account(obj, sa.as_deref());
    }

    /// The TaintNodesByCondition admission plugin (plugin/pkg/admission/nodetaint): a new
    /// Node gets `node.kubernetes.io/not-ready:NoSchedule`, which the node lifecycle controller
    /// removes once the node's conditions call for no taint.
    fn taint_new_node(&self, rt: &ResourceType, obj: &mut Value) {
        if rt.group.is_empty() && rt.plural == "nodes" {
            admission::taint_new_node(obj);
        }
    }

    /// The StorageObjectInUseProtection admission plugin (plugin/pkg/admission/storage/
    /// storageobjectinuseprotection): a new claim, volume or attributes class gets its
    /// protection finalizer, which kube-controller-manager's protection loops remove once
    /// nothing uses the deleted object.
    fn protect_claim(&self, rt: &ResourceType, obj: &mut Value) {
        if let Some(p) = admission::storage_protection::Protected::of(&rt.group, &rt.plural) {
            let mut fins = meta::finalizers(obj);
            if !fins.iter().any(|f| f == p.finalizer()) {
                fins.push(p.finalizer().into());
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
        self.update_tracked(rt, ns, name, sub, obj, opts, None)
    }

    /// `update`; with `given`, the object carries the managedFields another field manager
    /// already computed (a scale write's, mapped back to the workload).
    #[allow(clippy::too_many_arguments)]
    fn update_tracked(
        &self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        sub: Option<&str>,
        obj: Value,
        opts: &WriteOptions,
        given: Option<()>,
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
        let mut obj = obj;
        if rt.custom {
            validation::customresource::prune_and_default(rt, &mut obj);
        }
        let stored_rt = self.stored_type(rt);
        // The field manager works in the version of the request: a converted write records
        // its managedFields before the object goes to the stored version.
        let mut given = given;
        if given.is_none() && converts(rt, &stored_rt) {
            if let Some(cur) = self.store.get(&stored_rt.key(), ns, name) {
                let live = self.convert_out(rt, &cur);
                if let Some(m) = managed_fields_of(
                    rt,
                    sub,
                    Some(&live),
                    None,
                    &obj,
                    opts,
                    &self.clock().now_rfc3339(),
                ) {
                    set_managed_fields(&mut obj, Some(m));
                    given = Some(());
                }
            }
        }
        let mut obj = self.convert_in(rt, obj);
        obj["apiVersion"] = json!(stored_rt.api_version());
        obj["kind"] = json!(stored_rt.kind);
        let written = self.write_existing(&stored_rt, ns, name, sub, obj, opts, given)?;
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
        // The registry reads the new object's resourceVersion as a number before anything else
        // (`ObjectResourceVersion`); its error is not an API status (500).
        let rv = meta::resource_version(&obj);
        if !rv.is_empty() {
            meta::parse_uint(rv).map_err(|e| ApiError::new(500, "", e))?;
        }
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
        let current_stored = self
            .store
            .get_stored(&stored_rt.key(), ns, name)
            .ok_or_else(|| ApiError::not_found(&stored_rt.group, &stored_rt.plural, name))?;
        // The stored object as kept, without its managedFields, which only the field manager
        // reads (given apart) and the webhooks see (the whole object then).
        let webhooks = webhook::any_configured(&self.store);
        let current = if webhooks {
            current_stored.object()
        } else {
            current_stored.kept()
        };
        let live_managed = (!webhooks)
            .then(|| current_stored.managed_fields())
            .flatten();
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
        if !main {
            // A subresource's body is decoded (defaulted) like any other: a Node's status
            // without allocatable gets its capacity, an ephemeral container its defaults.
            admission::apply_defaults(stored_rt, &mut obj);
        }
        // The field manager sees the decoded, defaulted body against the stored object, before
        // admission and the update strategy (handlers/update.go, patch.go); an apply recorded
        // its own.
        let managed = apply_result.is_none().then(|| {
            managed_fields_of(
                stored_rt,
                sub,
                Some(&current),
                live_managed.as_ref(),
                &obj,
                opts,
                &self.clock().now_rfc3339(),
            )
        });
        // The Service storage allocates under its allocators' lock until the write is stored.
        let is_service = stored_rt.group.is_empty() && stored_rt.plural == "services";
        let _allocation = (main && is_service).then(|| self.service_allocation.lock());
        if main {
            admission::prepare_update(stored_rt, &current, &mut obj);
            if is_service {
                let services = self
                    .store
                    .list(&stored_rt.key(), None, None, None, &|_| true);
                let others = services
                    .items
                    .iter()
                    .map(|s| s.as_ref())
                    .filter(|s| !(meta::name(s) == name && meta::namespace(s) == ns));
                service_allocation::allocate_update(
                    &mut obj,
                    &self.options.service_cidr,
                    &service_allocation::InUse::from_services(others),
                )?;
            }
        }
        let sub_name = sub.unwrap_or("");
        self.mutating_webhooks(
            webhook::Operation::Update,
            stored_rt,
            sub_name,
            ns,
            &mut obj,
            Some(&current),
            opts,
        )?;
        // Validation reads the decoded body as the apiserver's typed object has it (an absent
        // optional member stays absent); a body that does not decode is a 400 first.
        if stored_rt.custom && scope == UpdateScope::Status {
            validation::validate_custom_status(stored_rt, &obj)?;
        }
        let unpruned = main.then(|| obj.clone());
        let mut obj = if scope == UpdateScope::Status {
            validation::prune_typed_status(stored_rt, &current, obj)?
        } else {
            validation::prune_typed(stored_rt, obj)?
        };
        go_round_trip(stored_rt, &mut obj);
        let fresh = |o: &Value| {
            let rv = meta::resource_version(o);
            rv.is_empty() || rv == meta::resource_version(&current)
        };
        // A stale resourceVersion is a conflict before anything is validated.
        if scope == UpdateScope::Status && !stored_rt.custom && fresh(&obj) {
            validation::validate_status_update(stored_rt, &current, &obj)?;
        }
        if let Some(raw) = unpruned {
            // A stale resourceVersion is a conflict before anything is validated.
            let rv = meta::resource_version(&obj);
            if rv.is_empty() || rv == meta::resource_version(&current) {
                let next = validation::as_stored(stored_rt, &current, &raw);
                validation::validate_update(stored_rt, &current, &next)?;
            }
        }
        if let Some(m) = managed {
            set_managed_fields(&mut obj, m);
        }
        if stored_rt.group == "apiextensions.k8s.io"
            && stored_rt.plural == "customresourcedefinitions"
            && sub.is_none()
        {
            crd::prepare(&mut obj)?;
        }
        self.validating_webhooks(
            webhook::Operation::Update,
            stored_rt,
            sub_name,
            ns,
            name,
            Some(&obj),
            Some(&current),
            opts,
        )?;
        let written = self.store.update_answering(
            stored_rt,
            ns,
            name,
            obj,
            scope,
            opts.dry_run,
            opts.answer,
        )?;
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
        let mut warnings: Vec<String>;
        // The stored object as kept, without its managedFields, is the base of a patch that
        // needs none of them: not an apply (it reads the live owners), not converted, seen by
        // no webhook, not naming them. The patched object then has none, and the field manager
        // takes the live ones (`decodeLiveOrNew`), as from a base that had them.
        let lean = ptype != PatchType::Apply
            && !converts(rt, &stored_rt)
            && !names_managed_fields(body)
            && !webhook::any_configured(&self.store);
        // The apiserver retries a patch on a write conflict, unless the patch itself pins a resourceVersion.
        for _attempt in 0..5 {
            let current = self
                .store
                .get_stored(&stored_rt.key(), ns, name)
                .map(|c| if lean { c.kept() } else { c.object() })
                .map(|c| self.convert_out_shared(rt, c));
            let manager = opts
                .field_manager
                .clone()
                .unwrap_or_else(|| "unknown".into());
            let now = self.clock().now_rfc3339();
            let (next, created) = match (ptype, current.as_deref()) {
                (PatchType::Apply, live) => {
                    // The field manager's versionCheckManager: the applied configuration must
                    // be of the endpoint's own type, version included (any other: 400 naming
                    // its GroupVersionKind as `schema.GroupVersionKind.String()` prints it,
                    // `invalid object type: /v1, Kind=ConfigMap`).
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
                    let api_version = rt.api_version();
                    let target = field_target(rt, &api_version, sub);
                    let applied = patch::apply::server_side_apply(
                        &target, live, body, &manager, opts.force, &now,
                    )
                    .map_err(apply_error)?;
                    (applied, live.is_none())
                }
                (_, None) => return Err(ApiError::not_found(&rt.group, &rt.plural, name)),
                (_, Some(cur)) => {
                    let mut next = patched(&rt.kind, cur, ptype, body)?;
                    // The patched object is decoded like a body: its unknown fields are warned
                    // about or, with fieldValidation=Strict, refused (patcher.applyPatch); a
                    // custom resource's is pruned and defaulted too.
                    warnings =
                        validation::check_fields(rt, &next, opts.field_validation.as_deref())?;
                    if rt.custom {
                        validation::customresource::prune_and_default(rt, &mut next);
                    }
                    // `checkName` (handlers/patch.go): the patched object keeps its name and
                    // namespace.
                    if meta::name(&next) != name {
                        return Err(ApiError::bad_request(format!(
                            "the name of the object ({}) does not match the name on the URL ({})",
                            meta::name(&next),
                            name
                        )));
                    }
                    if rt.namespaced
                        && !meta::namespace(&next).is_empty()
                        && meta::namespace(&next) != ns
                    {
                        return Err(ApiError::bad_request(format!(
                            "the namespace of the object ({}) does not match the namespace on the URL ({})",
                            meta::namespace(&next),
                            ns
                        )));
                    }
                    (next, false)
                }
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
            // The patched object's resourceVersion is the update's precondition (the registry's
            // Update in staging/.../registry/generic/registry/store.go compares it with the
            // stored one): a patch that sets it (a merge patch's metadata, a JSON patch
            // `replace /metadata/resourceVersion`, kubectl diff's) is not retried, and a stale
            // one is a 409.
            let pinned = body.pointer("/metadata/resourceVersion").is_some()
                || current.as_deref().is_some_and(|cur| {
                    let rv = meta::resource_version(&next);
                    !rv.is_empty() && rv != meta::resource_version(cur)
                });
            let mut next = next;
            let mut is_apply = (ptype == PatchType::Apply).then_some(());
            if is_apply.is_none() && converts(rt, &stored_rt) {
                // As for an update: managedFields in the version of the request.
                if let Some(m) = managed_fields_of(
                    rt,
                    sub,
                    current.as_deref(),
                    None,
                    &next,
                    opts,
                    &self.clock().now_rfc3339(),
                ) {
                    set_managed_fields(&mut next, Some(m));
                    is_apply = Some(());
                }
            }
            let mut next = self.convert_in(rt, next);
            if !pinned {
                // Patch against the version we read, so a concurrent write is detected and retried.
                if let Some(cur) = current.as_ref() {
                    next["metadata"]["resourceVersion"] = json!(meta::resource_version(cur));
                }
            }
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
        let mut next = scale::apply_scale(&current, body, paths, name)?;
        let mut scale_obj = body.clone();
        let old_scale = self.scale_view(rt, &current, paths);
        let target = scale_target();
        patch::apply::record_update(
            &target,
            Some(&old_scale),
            &mut scale_obj,
            &opts.field_manager.clone().unwrap_or_default(),
            &self.clock().now_rfc3339(),
        );
        set_managed_fields(
            &mut next,
            self.scale_to_parent(rt, &current, &scale_obj, paths),
        );
        let w = self.update_tracked(rt, ns, name, None, next, opts, Some(()))?;
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
            let view = self.scale_view(rt, &current, paths);
            let manager = opts.field_manager.clone().unwrap_or_default();
            let now = self.clock().now_rfc3339();
            let target = scale_target();
            let wanted = if ptype == PatchType::Apply {
                patch::apply::server_side_apply(
                    &target,
                    Some(&view),
                    body,
                    &manager,
                    opts.force,
                    &now,
                )
                .map_err(apply_error)?
            } else {
                let mut wanted = patched("Scale", &view, ptype, body)?;
                patch::apply::record_update(&target, Some(&view), &mut wanted, &manager, &now);
                wanted
            };
            let mut next = scale::apply_scale(&current, &wanted, paths, name)?;
            set_managed_fields(
                &mut next,
                self.scale_to_parent(rt, &current, &wanted, paths),
            );
            match self.update_tracked(rt, ns, name, None, next, opts, Some(())) {
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

    /// The Scale a scale write starts from: the workload's, with the managers of its replicas
    /// (`ScaleHandler.ToSubresource`).
    fn scale_view(&self, rt: &ResourceType, current: &Value, paths: &scale::ScalePaths) -> Value {
        let mut view = scale::scale_of(current, paths);
        let parent = current
            .pointer("/metadata/managedFields")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        let replicas = scale_replicas_path(paths);
        let entries =
            patch::smd::managed::scale_to_subresource(parent, (&rt.api_version(), &replicas))
                .filter(|e| !e.is_empty())
                .map(Value::Array);
        set_managed_fields(&mut view, entries);
        view
    }

    /// `ScaleHandler.ToParent`: the workload's managedFields after a scale write recorded as
    /// `scale`'s.
    fn scale_to_parent(
        &self,
        rt: &ResourceType,
        current: &Value,
        scale: &Value,
        paths: &scale::ScalePaths,
    ) -> Option<Value> {
        let entries = |v: &Value| {
            v.pointer("/metadata/managedFields")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        };
        let replicas = scale_replicas_path(paths);
        patch::smd::managed::scale_to_parent(
            &entries(current),
            &entries(scale),
            (&rt.api_version(), &replicas),
        )
        .filter(|e| !e.is_empty())
        .map(Value::Array)
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
        if rt.group == "certificates.k8s.io" && rt.plural == "certificatesigningrequests" {
            admission::csr_requester(&mut obj, opts.user.as_ref());
        }
        self.require_namespace(rt, ns)?;
        self.admit_pod_service_account(rt, ns, &mut obj);
        self.protect_claim(rt, &mut obj);
        self.taint_new_node(rt, &mut obj);
        let mut warnings =
            self.mutating_webhooks(webhook::Operation::Create, rt, "", ns, &mut obj, None, opts)?;
        if let Some(m) = managed {
            meta::metadata_mut(&mut obj).insert("managedFields".into(), m);
        }
        if rt.group == "apiextensions.k8s.io" && rt.plural == "customresourcedefinitions" {
            crd::prepare(&mut obj)?;
            crd::initial_status(&mut obj);
        }
        let stored_rt = self.stored_type(rt);
        let obj = self.convert_in(rt, obj);
        validation::validate_create(&stored_rt, &obj)?;
        let mut obj = validation::prune_typed(&stored_rt, obj)?;
        go_round_trip(&stored_rt, &mut obj);
        warnings.extend(self.validating_webhooks(
            webhook::Operation::Create,
            rt,
            "",
            ns,
            meta::name(&obj),
            Some(&obj),
            None,
            opts,
        )?);
        let created = self.store_new(&stored_rt, obj, opts)?;
        if !opts.dry_run {
            self.after_write(&stored_rt, &created);
        }
        Ok(Written {
            object: self.convert_out_shared(rt, created),
            warnings,
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
        self.delete_as(rt, ns, name, opts, None)
    }

    /// `delete` on behalf of `user` (what validating admission webhooks are told).
    pub fn delete_as(
        &self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        opts: &DeleteOptions,
        user: Option<&auth::UserInfo>,
    ) -> ApiResult<DeleteOutcome> {
        let ns = if rt.namespaced { ns } else { "" };
        let stored_rt = self.stored_type(rt);
        if webhook::any_configured(&self.store) {
            if let Some(current) = self.store.get(&stored_rt.key(), ns, name) {
                let wopts = WriteOptions {
                    dry_run: opts.dry_run,
                    user: user.cloned(),
                    ..Default::default()
                };
                self.validating_webhooks(
                    webhook::Operation::Delete,
                    rt,
                    "",
                    ns,
                    name,
                    None,
                    Some(&current),
                    &wopts,
                )?;
            }
        }
        if stored_rt.group.is_empty() && stored_rt.plural == "namespaces" {
            return self.delete_namespace(&stored_rt, name, opts);
        }
        if stored_rt.group == "apiextensions.k8s.io"
            && stored_rt.plural == "customresourcedefinitions"
        {
            if let Some(marked) = self.mark_crd_deleting(&stored_rt, name, opts)? {
                return Ok(DeleteOutcome::Pending(marked));
            }
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

    /// The first delete of a namespace or CRD marks it (their REST storages' `Delete`): the
    /// UID and resourceVersion preconditions as those storages word them, then `mark` on the
    /// stored object, written (or not, for a dry run) and returned. `None`: already deleting.
    fn mark_deleting(
        &self,
        rt: &ResourceType,
        name: &str,
        opts: &DeleteOptions,
        mark: impl FnOnce(&mut Value),
    ) -> ApiResult<Option<Arc<Value>>> {
        let current = self
            .store
            .get(&rt.key(), "", name)
            .ok_or_else(|| ApiError::not_found(&rt.group, &rt.plural, name))?;
        let precondition = |what: &str, given: &str, have: &str| {
            ApiError::conflict(
                &rt.group,
                &rt.plural,
                name,
                &format!("Precondition failed: {what} in precondition: {given}, {what} in object meta: {have}"),
            )
        };
        if let Some(uid) = opts.precondition_uid.as_deref() {
            if uid != meta::uid(&current) {
                return Err(precondition("UID", uid, meta::uid(&current)));
            }
        }
        if let Some(rv) = opts.precondition_rv.as_deref() {
            if rv != meta::resource_version(&current) {
                return Err(precondition(
                    "ResourceVersion",
                    rv,
                    meta::resource_version(&current),
                ));
            }
        }
        if meta::is_deleting(&current) {
            return Ok(None);
        }
        let mut next = (*current).clone();
        next["metadata"]["deletionTimestamp"] = json!(self.clock().now_rfc3339());
        mark(&mut next);
        let written = self
            .store
            .update(rt, "", name, next, UpdateScope::Any, opts.dry_run)?;
        Ok(Some(written))
    }

    /// apiextensions-apiserver's customresourcedefinition/etcd.go `Delete`: the first delete
    /// adds the cleanup finalizer and the Terminating condition; the CRD finalizer then removes
    /// the custom resources and the finalizer.
    fn mark_crd_deleting(
        &self,
        rt: &ResourceType,
        name: &str,
        opts: &DeleteOptions,
    ) -> ApiResult<Option<Arc<Value>>> {
        let now = self.clock().now_rfc3339();
        self.mark_deleting(rt, name, opts, |crd| {
            let mut fins = meta::finalizers(crd);
            if !fins.iter().any(|f| f == crd::CLEANUP_FINALIZER) {
                fins.push(crd::CLEANUP_FINALIZER.into());
                meta::set_finalizers(crd, &fins);
            }
            crd::mark_terminating(crd, &now);
        })
    }

    /// pkg/registry/core/namespace/storage/storage.go `Delete`: the first delete marks the
    /// namespace Terminating (with the orphan or foregroundDeletion finalizer the options ask
    /// for); the namespace controller empties it and finalizes it, and the delete after that
    /// removes it once `spec.finalizers` is empty.
    fn delete_namespace(
        &self,
        rt: &ResourceType,
        name: &str,
        opts: &DeleteOptions,
    ) -> ApiResult<DeleteOutcome> {
        let marked = self.mark_deleting(rt, name, opts, |ns| {
            ns["status"]["phase"] = json!("Terminating");
            let mut fins = meta::finalizers(ns);
            let want = |f: &str, have: bool| match opts.propagation {
                Some(Propagation::Orphan) => f == store::ORPHAN,
                Some(Propagation::Foreground) => f == store::FOREGROUND,
                Some(Propagation::Background) => false,
                None => have,
            };
            for f in [store::ORPHAN, store::FOREGROUND] {
                let have = fins.iter().any(|x| x == f);
                match (have, want(f, have)) {
                    (false, true) => fins.push(f.into()),
                    (true, false) => fins.retain(|x| x != f),
                    _ => {}
                }
            }
            meta::set_finalizers(ns, &fins);
        })?;
        if let Some(m) = marked {
            return Ok(DeleteOutcome::Pending(m));
        }
        let current = self
            .store
            .get(&rt.key(), "", name)
            .ok_or_else(|| ApiError::not_found("", "namespaces", name))?;
        let spec_fins = current
            .pointer("/spec/finalizers")
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty());
        if spec_fins {
            return Ok(DeleteOutcome::Pending(current));
        }
        self.store.delete(rt, "", name, opts)
    }

    pub fn delete_collection(
        &self,
        rt: &ResourceType,
        ns: Option<&str>,
        q: &ListQuery,
        opts: &DeleteOptions,
    ) -> ApiResult<Value> {
        self.delete_collection_as(rt, ns, q, opts, None)
    }

    /// `delete_collection` on behalf of `user`.
    pub fn delete_collection_as(
        &self,
        rt: &ResourceType,
        ns: Option<&str>,
        q: &ListQuery,
        opts: &DeleteOptions,
        user: Option<&auth::UserInfo>,
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
        // The store's DeleteCollection answers with the list it read, not what the deletes
        // left (items at their listed resourceVersions, the list's own resourceVersion).
        let listed = list["items"].as_array().cloned().unwrap_or_default();
        for item in &listed {
            match self.delete_as(rt, meta::namespace(item), meta::name(item), opts, user) {
                Ok(_) => {}
                Err(e) if e.code == 404 => {}
                Err(e) => return Err(e),
            }
        }
        let rv = meta::str_at(&list, "/metadata/resourceVersion")
            .map(String::from)
            .unwrap_or_else(|| self.store.current_rv().to_string());
        Ok(
            json!({"kind": format!("{}List", rt.kind), "apiVersion": rt.api_version(), "metadata": {"resourceVersion": rv}, "items": listed}),
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
        // The whole pod (its managedFields included: the binding storage writes the pod as
        // read, and its field manager does not run), taken without a second copy.
        let mut next = Arc::try_unwrap(pod).unwrap_or_else(|p| (*p).clone());
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
        self.store.update_answering(
            &rt,
            ns,
            name,
            next,
            UpdateScope::Storage,
            false,
            store::Answer::Kept,
        )?;
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
        // podHasContainerWithName: any container, init or ephemeral container of the pod.
        let known = ["containers", "initContainers", "ephemeralContainers"]
            .iter()
            .filter_map(|k| {
                pod.get("spec")
                    .and_then(|s| s.get(*k))
                    .and_then(Value::as_array)
            })
            .flatten()
            .any(|c| c.get("name").and_then(Value::as_str) == Some(container.as_str()));
        if !known {
            return Err(ApiError::bad_request(format!(
                "container {container} is not valid for pod {name}"
            )));
        }
        // LogLocation: a pod not assigned to a node has no location: nothing to stream.
        if meta::str_at(&pod, "/spec/nodeName")
            .unwrap_or("")
            .is_empty()
        {
            return Ok(String::new());
        }
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
            if let Some(next) = crd::establish(&self.registry, obj, &self.clock().now_rfc3339()) {
                // Failing to write it (a concurrent update) is retried on the CRD's next write.
                let opts = WriteOptions {
                    field_manager: Some("kube-apiserver".into()),
                    ..Default::default()
                };
                let mut next = next;
                meta::metadata_mut(&mut next).remove("resourceVersion");
                let _ = self.update(rt, "", meta::name(obj), Some("status"), next, &opts);
            }
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
fn patched(kind: &str, cur: &Value, ptype: PatchType, body: &Value) -> ApiResult<Value> {
    match ptype {
        PatchType::Merge | PatchType::Apply => Ok(patch::merge_patch(cur, body)),
        PatchType::Json => patch::json_patch(cur, body).map_err(patch_error),
        PatchType::Strategic => {
            patch::strategic::strategic_merge_patch(kind, cur, body).map_err(patch_error)
        }
    }
}

fn patch_error(e: PatchError) -> ApiError {
    match e {
        PatchError::Internal(m) => ApiError::new(500, "", m),
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
    }
}

/// An apply's failure as the apiserver answers it: a conflict is `NewApplyConflict` (409, the
/// causes only), a configuration that does not fit the schema the handler's plain error (500,
/// no reason).
fn apply_error(e: patch::apply::ApplyError) -> ApiError {
    use patch::apply::ApplyError;
    match e {
        ApplyError::Conflicts(c) => {
            let mut err = ApiError::new(409, "Conflict", c.message);
            err.details = Some(json!({
                "causes": c.causes.iter().map(|(manager, field)| json!({
                    "reason": "FieldManagerConflict",
                    "message": format!("conflict with {manager}"),
                    "field": field,
                })).collect::<Vec<_>>()
            }));
            err
        }
        ApplyError::BadRequest(m) => ApiError::bad_request(m),
        ApplyError::Internal(m) => ApiError::new(500, "", m),
    }
}

/// The scale subresource's field manager: autoscaling/v1 Scale objects.
fn scale_target() -> patch::apply::Target<'static> {
    patch::apply::Target {
        group: "autoscaling",
        api_version: "autoscaling/v1",
        kind: "Scale",
        subresource: Some("scale"),
        custom_with_status: false,
    }
}

/// The workload's replicas path as a field set (`/spec/replicas` -> `.spec.replicas`).
fn scale_replicas_path(paths: &scale::ScalePaths) -> patch::smd::fieldpath::Set {
    let names: Vec<&str> = paths.spec_replicas.split('/').skip(1).collect();
    [patch::smd::fieldpath::path(&names)].into_iter().collect()
}

/// The REST endpoint of a write, as the field manager knows it.
fn field_target<'a>(
    rt: &'a ResourceType,
    api_version: &'a str,
    sub: Option<&'a str>,
) -> patch::apply::Target<'a> {
    patch::apply::Target {
        group: &rt.group,
        api_version,
        kind: &rt.kind,
        subresource: sub,
        custom_with_status: rt.custom && rt.has_status(),
    }
}

/// The managedFields a non-apply write of `body` over `live` (None: a create) gets: the body as
/// decoded (defaulted; members that are null are absent in the typed object) compared with the
/// live object by the field manager. None: the object carries none.
/// Whether a patch body names `managedFields` anywhere (a member, or a JSON patch's path).
fn names_managed_fields(body: &Value) -> bool {
    match body {
        Value::Object(m) => m
            .iter()
            .any(|(k, v)| k == "managedFields" || names_managed_fields(v)),
        Value::Array(a) => a.iter().any(names_managed_fields),
        Value::String(s) => s.contains("managedFields"),
        _ => false,
    }
}

#[allow(clippy::too_many_arguments)] // the write's parts, as the handlers have them
fn managed_fields_of(
    rt: &ResourceType,
    sub: Option<&str>,
    live: Option<&Value>,
    live_managed: Option<&Value>,
    body: &Value,
    opts: &WriteOptions,
    now: &str,
) -> Option<Value> {
    let mut decoded = if rt.custom {
        strip_null_members(body)
    } else {
        body.clone()
    };
    decoded["apiVersion"] = json!(rt.api_version());
    decoded["kind"] = json!(rt.kind);
    admission::apply_defaults(rt, &mut decoded);
    if !rt.custom {
        patch::smd::goencoding::round_trip(&rt.api_version(), &rt.kind, &mut decoded, false);
    }
    if rt.group == "apps" && rt.kind == "DaemonSet" {
        // The field manager reads the internal object converted to apps/v1, and that conversion
        // always writes the template generation annotation, "0" before the strategy sets it
        // (pkg/apis/apps/v1/conversion.go): the writer owns it.
        let md = meta::metadata_mut(&mut decoded);
        let annotations = md.entry("annotations").or_insert_with(|| json!({}));
        if let Some(a) = annotations.as_object_mut() {
            a.entry("deprecated.daemonset.template.generation")
                .or_insert_with(|| json!("0"));
        }
    }
    let api_version = rt.api_version();
    let manager = opts.field_manager.clone().unwrap_or_default();
    patch::apply::record_update_over(
        &field_target(rt, &api_version, sub),
        live,
        live_managed,
        &mut decoded,
        &manager,
        now,
    );
    decoded.pointer("/metadata/managedFields").cloned()
}

impl ApiServer {
    /// The managedFields of a create that stores nothing (a review, a TokenRequest): the create
    /// handler's field manager records the request body before the REST storage answers, and
    /// the storages that answer with the request object keep them.
    pub fn unstored_create_managed_fields(
        &self,
        group: &str,
        kind: &str,
        sub: Option<&str>,
        body: &Value,
        field_manager: Option<String>,
    ) -> Option<Value> {
        let base = self.registry.all().into_iter().next()?;
        let mut rt = (*base).clone();
        rt.group = group.to_string();
        rt.version = "v1".into();
        rt.kind = kind.to_string();
        rt.custom = false;
        let opts = WriteOptions {
            field_manager,
            ..Default::default()
        };
        managed_fields_of(
            &rt,
            sub,
            None,
            None,
            body,
            &opts,
            &timing::SimClock::new().now_rfc3339(),
        )
    }
}

/// The mandatory and suggested API Priority and Fairness objects of kube-apiserver 1.35
/// (`apf_bootstrap.json`, written by `upstream/apfbootstrap` from
/// k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap), PriorityLevelConfigurations first.
pub fn apf_bootstrap_objects() -> Vec<Value> {
    const APF: &str = include_str!("apf_bootstrap.json");
    serde_json::from_str::<Value>(APF)
        .ok()
        .and_then(|v| v.get("objects").and_then(Value::as_array).cloned())
        .unwrap_or_default()
}

/// Whether a write through `rt` is converted to another stored type (events.k8s.io Events,
/// autoscaling/v1 HorizontalPodAutoscalers, a CRD's non-storage versions).
fn converts(rt: &ResourceType, stored: &ResourceType) -> bool {
    rt.group != stored.group || rt.version != stored.version
}

/// autoscaling/v1 HorizontalPodAutoscalers are converted to and from the stored autoscaling/v2.
fn is_hpa_v1(rt: &ResourceType) -> bool {
    rt.group == "autoscaling" && rt.plural == "horizontalpodautoscalers" && rt.version == "v1"
}

/// A built-in object as the apiserver's Go types write it back (zero `omitempty` members gone,
/// members without it present): what is stored and served.
fn go_round_trip(rt: &ResourceType, obj: &mut Value) {
    if !rt.custom {
        patch::smd::goencoding::round_trip(&rt.api_version(), &rt.kind, obj, true);
    }
}

fn strip_null_members(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), strip_null_members(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(strip_null_members).collect()),
        other => other.clone(),
    }
}

fn set_managed_fields(obj: &mut Value, managed: Option<Value>) {
    let md = meta::metadata_mut(obj);
    match managed {
        Some(m) => {
            md.insert("managedFields".into(), m);
        }
        None => {
            md.remove("managedFields");
        }
    }
}

/// Continue tokens carry the list's resourceVersion and the last key, base64-encoded JSON.
/// One page of a snapshot's objects (in key order) after `after`.
fn page_of(
    snapshot: Vec<Stored>,
    after: &(String, String),
    limit: Option<usize>,
    filter: &dyn Fn(&Value) -> bool,
    rv: u64,
) -> store::ListResult<Stored> {
    let mut items = Vec::new();
    let mut continue_after = None;
    let mut remaining = 0;
    for s in snapshot {
        let o = s.kept();
        let k = (meta::namespace(&o).to_string(), meta::name(&o).to_string());
        if k <= *after || !filter(&o) {
            continue;
        }
        if limit.is_some_and(|l| items.len() >= l) {
            remaining += 1;
            continue;
        }
        items.push(s);
        if limit == Some(items.len()) {
            continue_after = Some(k);
        }
    }
    if remaining == 0 {
        continue_after = None;
    }
    store::ListResult {
        items,
        resource_version: rv,
        continue_after,
        remaining,
    }
}

/// The 410 of a continue token whose revision storage has compacted away (etcd3 store).
fn continue_too_old() -> ApiError {
    ApiError::gone("The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.")
}

/// Continue tokens as the apiserver's storage writes them (`storage.EncodeContinue`):
/// base64url JSON `{"v":"meta.k8s.io/v1","rv":N,"start":KEY}`, KEY the next storage key after
/// the list's prefix (`name\u0000` within a namespace, `ns/name\u0000` across namespaces).
fn encode_continue(rv: u64, after: &(String, String), within_namespace: bool) -> String {
    use base64::Engine;
    let start = if within_namespace || after.0.is_empty() {
        format!("{}\u{0}", after.1)
    } else {
        format!("{}/{}\u{0}", after.0, after.1)
    };
    let raw = json!({"v": "meta.k8s.io/v1", "rv": rv, "start": start}).to_string();
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(raw)
}

/// `storage.DecodeContinue` with the apiserver's errors (400, `invalid continue token: ...`):
/// the list's resourceVersion and the (namespace, name) the next page starts after.
pub(crate) fn decode_continue(
    token: &str,
    namespace: Option<&str>,
) -> ApiResult<(u64, (String, String))> {
    use base64::Engine;
    let bad = |why: String| ApiError::bad_request(format!("invalid continue token: {why}"));
    let generic = "continue key is not valid";
    if let Some(i) = token
        .bytes()
        .position(|b| !(b.is_ascii_alphanumeric() || b == b'-' || b == b'_'))
    {
        return Err(bad(format!(
            "{generic}: illegal base64 data at input byte {i}"
        )));
    }
    // Go's RawURLEncoding, which ignores stray trailing bits.
    let engine = base64::engine::GeneralPurpose::new(
        &base64::alphabet::URL_SAFE,
        base64::engine::GeneralPurposeConfig::new()
            .with_decode_padding_mode(base64::engine::DecodePaddingMode::RequireNone)
            .with_decode_allow_trailing_bits(true),
    );
    let raw = engine.decode(token).map_err(|_| {
        bad(format!(
            "{generic}: illegal base64 data at input byte {}",
            token.len().saturating_sub(1)
        ))
    })?;
    let v: Value = serde_json::from_slice(&raw)
        .map_err(|e| bad(format!("{generic}: {}", go_json_error(&raw, &e))))?;
    let version = v.get("v").and_then(Value::as_str).unwrap_or("");
    if version != "meta.k8s.io/v1" {
        return Err(bad(format!(
            "{generic}: server does not recognize this encoded version {version}"
        )));
    }
    let rv = v.get("rv").and_then(Value::as_u64).unwrap_or(0);
    if rv == 0 {
        return Err(bad(format!(
            "{generic}: incorrect encoded start resourceVersion (version meta.k8s.io/v1)"
        )));
    }
    let start = v.get("start").and_then(Value::as_str).unwrap_or("");
    if start.is_empty() {
        return Err(bad(format!(
            "{generic}: encoded start key empty (version meta.k8s.io/v1)"
        )));
    }
    let key = start.trim_end_matches('\u{0}');
    let (ns, name) = match (namespace, key.split_once('/')) {
        (Some(ns), _) => (ns.to_string(), key.to_string()),
        (None, Some((ns, name))) => (ns.to_string(), name.to_string()),
        (None, None) => (String::new(), key.to_string()),
    };
    Ok((rv, (ns, name)))
}

/// encoding/json's text for the first problem of `raw` (what `json.Unmarshal` answers).
fn go_json_error(raw: &[u8], e: &serde_json::Error) -> String {
    let first = raw.iter().position(|b| !b" \t\r\n".contains(b));
    match first.map(|i| raw[i]) {
        None => "unexpected end of JSON input".into(),
        Some(c)
            if !matches!(
                c,
                b'{' | b'[' | b'"' | b't' | b'f' | b'n' | b'-' | b'0'..=b'9'
            ) =>
        {
            let shown = match c {
                b'\'' => "'\\''".to_string(),
                b'"' => "'\"'".to_string(),
                0x20..=0x7e => format!("'{}'", c as char),
                _ => format!("'\\u{:04x}'", c),
            };
            format!("invalid character {shown} looking for beginning of value")
        }
        Some(_) if e.is_eof() => "unexpected end of JSON input".into(),
        Some(_) => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(items: Vec<Value>, metadata: Value) -> ListPage {
        ListPage {
            untyped_items: false,
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
        // Typed items, and untyped ones (served without kind and apiVersion).
        for (count, untyped) in [0, 1, 2, 700, 3000]
            .into_iter()
            .flat_map(|c| [(c, false), (c, true)])
        {
            let mut reference = page(
                (0..count).map(cm).collect(),
                json!({"resourceVersion": "9"}),
            );
            reference.untyped_items = untyped;
            let reference = reference.to_json();
            let mut p = page(
                (0..count).map(cm).collect(),
                json!({"resourceVersion": "9"}),
            );
            p.untyped_items = untyped;
            // Half the items have an encoding kept already (a watcher asked for it).
            for item in p.items.iter().step_by(2) {
                item.json();
            }
            let items = p.items.clone();
            let chunks: Vec<bytes::Bytes> = p.into_json_chunks().collect();
            assert_eq!(
                chunks.concat(),
                reference,
                "{count} items, untyped {untyped}"
            );
            assert!(
                chunks.iter().all(|c| c.len() <= 72 * 1024),
                "chunks stay small"
            );
            assert!(
                count < 3000 || chunks.len() >= 10,
                "{} chunks",
                chunks.len()
            );
            for (n, item) in items.iter().enumerate() {
                assert_eq!(
                    item.has_encoding(),
                    n % 2 == 0,
                    "item {n} (untyped {untyped}): streaming keeps no new encoding"
                );
            }
        }
    }

    #[test]
    fn a_job_without_labels_answers_its_templates_generated_ones_owned_by_no_manager() {
        let api = ApiServer::new(100);
        let ns_rt = api.registry.get("", "v1", "namespaces").unwrap();
        let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}});
        api.create(&ns_rt, "", ns, &WriteOptions::default())
            .unwrap();
        let jobs = api.registry.get("batch", "v1", "jobs").unwrap();
        let job = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "once"},
            "spec": {"template": {"spec": {"restartPolicy": "Never",
                "containers": [{"name": "c", "image": "busybox"}]}}}});
        let opts = WriteOptions {
            field_manager: Some("kubectl-create".into()),
            ..Default::default()
        };
        let made = api.create(&jobs, "default", job, &opts).unwrap().object;
        let uid = meta::uid(&made).to_string();
        assert_eq!(
            made["metadata"]["labels"],
            json!({"batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": "once",
                   "controller-uid": uid, "job-name": "once"})
        );
        assert_eq!(
            made["metadata"]["labels"],
            made["spec"]["template"]["metadata"]["labels"]
        );
        let fields = &made["metadata"]["managedFields"][0]["fieldsV1"];
        assert!(fields.get("f:metadata").is_none(), "{fields}");
    }

    #[test]
    fn a_deployment_status_patch_counting_more_updated_than_replicas_is_invalid() {
        let api = ApiServer::new(100);
        let ns_rt = api.registry.get("", "v1", "namespaces").unwrap();
        let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}});
        api.create(&ns_rt, "", ns, &WriteOptions::default())
            .unwrap();
        let rt = api.registry.get("apps", "v1", "deployments").unwrap();
        let d = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}},
                "spec": {"containers": [{"name": "c", "image": "i"}]}}}});
        api.create(&rt, "default", d, &WriteOptions::default())
            .unwrap();
        let status = |s: Value| {
            api.patch(
                &rt,
                "default",
                "d",
                Some("status"),
                PatchType::Merge,
                &json!({"status": s}),
                &WriteOptions::default(),
            )
        };
        status(json!({"replicas": 1, "updatedReplicas": 1})).unwrap();
        let e = status(json!({"replicas": 0})).unwrap_err();
        assert_eq!(e.code, 422);
        assert_eq!(
            e.message,
            "Deployment.apps \"d\" is invalid: status.updatedReplicas: Invalid value: 1: cannot be greater than status.replicas"
        );
    }

    #[test]
    fn a_json_patch_that_sets_a_stale_resource_version_is_a_conflict() {
        // kubectl diff sends `replace /metadata/resourceVersion` with the version it read.
        let api = ApiServer::new(100);
        let ns_rt = api.registry.get("", "v1", "namespaces").unwrap();
        let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}});
        api.create(&ns_rt, "", ns, &WriteOptions::default())
            .unwrap();
        let cms = api.registry.get("", "v1", "configmaps").unwrap();
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
        let made = api
            .create(&cms, "default", cm, &WriteOptions::default())
            .unwrap();
        let rv = meta::resource_version(&made.object).to_string();
        let patch = |rv: &str| {
            json!([{"op": "add", "path": "/data", "value": {"k": "v"}},
                   {"op": "replace", "path": "/metadata/resourceVersion", "value": rv}])
        };
        let stale = format!("{}", rv.parse::<u64>().unwrap() + 1000);
        let e = api
            .patch(
                &cms,
                "default",
                "c",
                None,
                PatchType::Json,
                &patch(&stale),
                &WriteOptions::default(),
            )
            .unwrap_err();
        assert_eq!((e.code, e.reason), (409, "Conflict"), "{}", e.message);
        assert!(api
            .store
            .get(&cms.key(), "default", "c")
            .unwrap()
            .get("data")
            .is_none());
        // The current version is a plain precondition that holds.
        let ok = api
            .patch(
                &cms,
                "default",
                "c",
                None,
                PatchType::Json,
                &patch(&rv),
                &WriteOptions::default(),
            )
            .unwrap();
        assert_eq!(ok.object["data"]["k"], "v");
    }

    #[test]
    fn a_create_naming_a_resource_version_is_refused_unless_it_is_a_dry_run() {
        let api = ApiServer::new(100);
        let ns_rt = api.registry.get("", "v1", "namespaces").unwrap();
        let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}});
        api.create(&ns_rt, "", ns, &WriteOptions::default())
            .unwrap();
        let cms = api.registry.get("", "v1", "configmaps").unwrap();
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "resourceVersion": "5"}});
        let e = api
            .create(&cms, "default", cm.clone(), &WriteOptions::default())
            .unwrap_err();
        assert_eq!((e.code, e.reason), (500, ""));
        let dry = WriteOptions {
            dry_run: true,
            ..Default::default()
        };
        assert!(api.create(&cms, "default", cm, &dry).is_ok());
        assert!(api.store.get(&cms.key(), "default", "c").is_none());
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
        let t = encode_continue(42, &("ns".into(), "name".into()), false);
        assert_eq!(
            decode_continue(&t, None).unwrap(),
            (42, ("ns".into(), "name".into()))
        );
        assert_eq!(decode_continue("!!!", None).unwrap_err().code, 400);
        assert_eq!(
            decode_continue("garbage", None).unwrap_err().message,
            "invalid continue token: continue key is not valid: invalid character '\\u0081' looking for beginning of value"
        );
        let within = encode_continue(7, &("ns".into(), "c2".into()), true);
        assert_eq!(
            decode_continue(&within, Some("ns")).unwrap(),
            (7, ("ns".into(), "c2".into()))
        );
    }
}
