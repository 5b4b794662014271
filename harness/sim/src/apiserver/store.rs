//! The versioned object store: what etcd plus the apiserver's registry layer do for us.
//!
//! - one cluster-wide `resourceVersion` counter, bumped on every write;
//! - optimistic concurrency on `metadata.resourceVersion` preconditions;
//! - `generation` bumped only when the non-metadata, non-status part changes;
//! - two-phase deletion (`deletionTimestamp`, removal when the last finalizer is gone);
//! - a bounded history of watch events, so watches resume from a resourceVersion or get 410.
//!
//! Everything happens under one mutex: writes are short and this keeps the event order total,
//! which is what makes watch resumption exact.

use crate::apiserver::meta;
use crate::apiserver::resources::{ResourceKey, ResourceType};
use crate::apiserver::status::{ApiError, ApiResult};
use crate::timing;
use bytes::Bytes;
use parking_lot::Mutex;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use tokio::sync::{broadcast, mpsc};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    Added,
    Modified,
    Deleted,
}

impl EventType {
    pub fn as_str(&self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

/// An object as stored, with its JSON encoding. Serializing is most of what a GET, LIST or
/// watch event costs, so the encoding is computed on first use and then shared by every
/// response and watch event that serves this version of the object unchanged.
///
/// Objects of the `COMPACT` resources are kept as their encoding alone and decoded when read:
/// a parsed JSON value takes five to six times the bytes of its encoding, and Events (about
/// five per pod, rarely read) were the largest part of the memory at 100,000 pods.
///
/// The others keep `metadata.managedFields` apart, as their encoding (`ManagedFields`): the
/// parsed value is the object without them, which is what the in-process components read;
/// `object`, `json` and every answer have them back in place.
#[derive(Debug, Clone)]
pub struct Stored {
    /// The parsed object, without its managedFields when `managed` holds them; None when only
    /// the encoding is kept.
    value: Option<Arc<Value>>,
    managed: Option<Arc<ManagedFields>>,
    encoded: Arc<OnceLock<Bytes>>,
}

/// An object's `metadata.managedFields` as their JSON encoding, as upstream's objects keep each
/// entry's field set (`FieldsV1.Raw`). Parsed, a pod's were a third of its memory: every node
/// of a field set a map of its own.
#[derive(Debug)]
struct ManagedFields {
    /// Where the member stands among the object's `metadata` members.
    at: usize,
    json: Box<[u8]>,
}

impl ManagedFields {
    /// Take `metadata.managedFields` out of `object`.
    fn take(object: &mut Value) -> Option<ManagedFields> {
        let md = object.get_mut("metadata")?.as_object_mut()?;
        let at = md.keys().position(|k| k == "managedFields")?;
        let (_, list) = md.shift_remove_entry("managedFields")?;
        Some(ManagedFields {
            at,
            json: serde_json::to_vec(&list)
                .unwrap_or_default()
                .into_boxed_slice(),
        })
    }

    fn value(&self) -> Value {
        // The bytes are this crate's own serialization of a Value: they decode.
        serde_json::from_slice(&self.json).unwrap_or(Value::Null)
    }

    /// Put them back into `object` (a copy of the stored one, or a conversion of it) where they
    /// stood, unless it has its own.
    fn restore(&self, object: &mut Value) {
        if let Some(md) = object.get_mut("metadata").and_then(Value::as_object_mut) {
            if !md.contains_key("managedFields") {
                let at = self.at.min(md.len());
                md.shift_insert(at, "managedFields".into(), self.value());
            }
        }
    }

    /// `object` (without managedFields) serialized with them in place: the bytes
    /// `serde_json::to_writer` gives for the restored object.
    fn write(&self, object: &Value, out: &mut Vec<u8>) -> serde_json::Result<()> {
        let Some(members) = object.as_object() else {
            return serde_json::to_writer(out, object);
        };
        out.push(b'{');
        for (n, (k, v)) in members.iter().enumerate() {
            if n > 0 {
                out.push(b',');
            }
            serde_json::to_writer(&mut *out, k)?;
            out.push(b':');
            match v.as_object().filter(|_| k == "metadata") {
                Some(md) => {
                    out.push(b'{');
                    let at = self.at.min(md.len());
                    for (i, (mk, mv)) in md.iter().enumerate() {
                        if i == at {
                            out.extend_from_slice(br#""managedFields":"#);
                            out.extend_from_slice(&self.json);
                            out.push(b',');
                        }
                        serde_json::to_writer(&mut *out, mk)?;
                        out.push(b':');
                        serde_json::to_writer(&mut *out, mv)?;
                        if i + 1 < md.len() {
                            out.push(b',');
                        }
                    }
                    if at == md.len() {
                        if at > 0 {
                            out.push(b',');
                        }
                        out.extend_from_slice(br#""managedFields":"#);
                        out.extend_from_slice(&self.json);
                    }
                    out.push(b'}');
                }
                None => serde_json::to_writer(&mut *out, v)?,
            }
        }
        out.push(b'}');
        Ok(())
    }
}

/// `object`'s JSON encoding (with `managed` in place) in an allocation of exactly its size.
/// Serializing into a growing `Vec` leaves up to half of it unused, and kept encodings (every
/// Event, most pods) are a large part of the memory at 100,000 pods: the bytes are written into
/// a reused buffer and copied out.
fn encode(object: &Value, managed: Option<&ManagedFields>) -> Bytes {
    thread_local! {
        static BUF: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    BUF.with_borrow_mut(|buf| {
        buf.clear();
        let written = match managed {
            Some(m) => m.write(object, buf),
            None => serde_json::to_writer(&mut *buf, object),
        };
        if written.is_err() {
            return Bytes::new();
        }
        let bytes = Bytes::copy_from_slice(buf);
        // A rare huge object should not pin its buffer for the thread's life.
        if buf.capacity() > 1 << 20 {
            *buf = Vec::new();
        }
        bytes
    })
}

/// Events a watch receiver may fall behind before it replays from the history instead.
const LIVE_BUFFER: usize = 2048;

/// Resources stored as their encoding only (see `Stored`).
const COMPACT: &[(&str, &str)] = &[("", "events")];

fn is_compact(key: &ResourceKey) -> bool {
    COMPACT
        .iter()
        .any(|(g, p)| key.group == *g && key.plural == *p)
}

/// A new version as the store keeps it, and the object its event carries: the kept value,
/// shared (a compact resource's event carries the value it was encoded from).
fn keep(key: &ResourceKey, object: Value) -> (Stored, Arc<Value>) {
    if is_compact(key) {
        (Stored::compact(&object), Arc::new(object))
    } else {
        let stored = Stored::apart(object);
        let shared = stored.kept();
        (stored, shared)
    }
}

/// What a write answers with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Answer {
    /// The new version whole, managedFields included: what an API client gets.
    #[default]
    Whole,
    /// The new version as kept (`Stored::kept`), shared with the store: an in-process writer
    /// that reads no managedFields (and may keep the answer) pays no copy.
    Kept,
}

/// The object a write answers with, given the new version as stored and as kept.
fn answer(how: Answer, stored: &Stored, kept: &Arc<Value>) -> Arc<Value> {
    match (how, &stored.managed) {
        (Answer::Whole, Some(_)) => stored.object(),
        _ => kept.clone(),
    }
}

impl Stored {
    /// An object kept as it is given.
    pub fn new(object: Arc<Value>) -> Self {
        Stored {
            value: Some(object),
            managed: None,
            encoded: Default::default(),
        }
    }

    /// An object kept as its encoding only.
    pub fn compact(object: &Value) -> Self {
        let bytes = encode(object, None);
        Stored {
            value: None,
            managed: None,
            encoded: Arc::new(OnceLock::from(bytes)),
        }
    }

    /// An object kept with its managedFields apart (every resource but the compact ones).
    fn apart(mut object: Value) -> Self {
        let managed = ManagedFields::take(&mut object).map(Arc::new);
        Stored {
            value: Some(Arc::new(object)),
            managed,
            encoded: Default::default(),
        }
    }

    /// The object, managedFields included (decoded from its encoding when only that is kept;
    /// a copy when they are kept apart: readers that need no managedFields take `kept`).
    pub fn object(&self) -> Arc<Value> {
        match &self.value {
            Some(v) => self.with_managed_fields(v),
            // The bytes are this crate's own serialization of a Value: they decode.
            None => Arc::new(serde_json::from_slice(self.json()).unwrap_or(Value::Null)),
        }
    }

    /// The object as kept, shared: without its managedFields when they are kept apart. What
    /// the in-process components read (none of them reads managedFields) and events carry.
    pub fn kept(&self) -> Arc<Value> {
        match &self.value {
            Some(v) => v.clone(),
            None => self.object(),
        }
    }

    /// The object's `metadata.managedFields`, when it has them.
    pub fn managed_fields(&self) -> Option<Value> {
        match (&self.value, &self.managed) {
            (_, Some(m)) => Some(m.value()),
            (Some(v), None) => v.pointer("/metadata/managedFields").cloned(),
            (None, None) => self.object().pointer("/metadata/managedFields").cloned(),
        }
    }

    /// The bytes of the managedFields kept apart (0 when they are not).
    pub fn managed_fields_bytes(&self) -> usize {
        self.managed.as_ref().map_or(0, |m| m.json.len())
    }

    /// Whether the object's managedFields are `list` (none: absent).
    fn managed_fields_are(&self, list: Option<&Value>) -> bool {
        match (&self.managed, list) {
            // Equal lists encode to the same length (members in another order at most): only
            // then is a parse needed.
            (Some(m), Some(l)) => serde_json::to_vec(l)
                .is_ok_and(|b| *b == *m.json || (b.len() == m.json.len() && m.value() == *l)),
            (Some(_), None) => false,
            (None, _) => self.managed_fields().as_ref() == list,
        }
    }

    /// `object` (the kept object, or a conversion of it) with the managedFields kept apart put
    /// back, for answers encoded from a value rather than from `json`.
    pub fn with_managed_fields(&self, object: &Arc<Value>) -> Arc<Value> {
        match &self.managed {
            Some(m) => {
                let mut full = (**object).clone();
                m.restore(&mut full);
                Arc::new(full)
            }
            None => object.clone(),
        }
    }

    /// `object` serialized as JSON (the bytes `serde_json::to_vec` gives).
    pub fn json(&self) -> &Bytes {
        self.encoded.get_or_init(|| {
            self.value
                .as_deref()
                .map(|v| encode(v, self.managed.as_deref()))
                .unwrap_or_default()
        })
    }

    /// Whether an encoding is kept (computed once, or the only form of a compact object).
    pub fn has_encoding(&self) -> bool {
        self.encoded.get().is_some()
    }

    /// Hand `json`'s bytes to `f` without keeping an encoding that was not kept already (it is
    /// made in a scratch buffer then): a streamed LIST of every pod would otherwise leave one
    /// behind for each, 0.4 GiB at 100,000 pods.
    pub fn with_json<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
        if let Some(bytes) = self.encoded.get() {
            return f(bytes);
        }
        let mut scratch = Vec::new();
        self.append_json(&mut scratch);
        f(&scratch)
    }

    /// Append the same bytes as `json` to `out`, without keeping an encoding that was not kept
    /// already: a streamed LIST of every pod would otherwise leave one behind for each.
    pub fn append_json(&self, out: &mut Vec<u8>) {
        match (self.encoded.get(), self.value.as_deref()) {
            (Some(bytes), _) => out.extend_from_slice(bytes),
            (None, Some(v)) => {
                let _ = match self.managed.as_deref() {
                    Some(m) => m.write(v, out),
                    None => serde_json::to_writer(&mut *out, v),
                };
            }
            (None, None) => {}
        }
    }
}

/// One committed change, as watchers see it.
#[derive(Debug, Clone)]
pub struct StoreEvent {
    pub rv: u64,
    pub key: ResourceKey,
    pub event_type: EventType,
    pub object: Arc<Value>,
    /// The object before this change (absent for ADDED); watchers with selectors need it.
    pub prev: Option<Arc<Value>>,
    /// `object` with its encoding, shared with the store's copy of it.
    stored: Stored,
    /// `prev` as it was stored (a stale read serves it).
    prev_stored: Option<Stored>,
    /// When it was committed (wall time): how old a stale read's hidden change is.
    pub at: std::time::Instant,
}

impl StoreEvent {
    pub fn new(
        rv: u64,
        key: ResourceKey,
        event_type: EventType,
        object: Arc<Value>,
        prev: Option<Arc<Value>>,
    ) -> Self {
        let stored = Stored::new(object.clone());
        StoreEvent {
            rv,
            key,
            event_type,
            object,
            prev_stored: prev.clone().map(Stored::new),
            prev,
            stored,
            at: std::time::Instant::now(),
        }
    }

    /// The JSON encoding of `object`, computed on first use and shared.
    pub fn object_json(&self) -> &Bytes {
        self.stored.json()
    }

    /// `object` with its shared encoding.
    pub fn stored(&self) -> &Stored {
        &self.stored
    }
}

/// (namespace, name); cluster-scoped objects use an empty namespace. Ordered like etcd keys.
pub type ObjectKey = (String, String);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Propagation {
    #[default]
    Background,
    Foreground,
    Orphan,
}

#[derive(Debug, Clone, Default)]
pub struct DeleteOptions {
    pub grace_period_seconds: Option<i64>,
    pub propagation: Option<Propagation>,
    pub precondition_uid: Option<String>,
    pub precondition_rv: Option<String>,
    pub dry_run: bool,
}

#[derive(Debug, Clone)]
pub enum DeleteOutcome {
    /// The object is gone; this is its last state.
    Deleted(Arc<Value>),
    /// Deletion is pending on finalizers or a grace period; this is the object now.
    Pending(Arc<Value>),
}

/// Which part of an object an update may change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpdateScope {
    /// The main resource: status is preserved when the type has a status subresource.
    Main,
    /// The status subresource: only status changes.
    Status,
    /// Internal writers (garbage collector, namespace controller) that may change anything.
    Any,
    /// As `Any`, for a write that goes to storage without any strategy seeing it (the pod
    /// binding's GuaranteedUpdate): no generation bump.
    Storage,
    /// A subresource that writes one field (parent, field), such as `namespaces/finalize` and
    /// `pods/ephemeralcontainers`: the stored object with that field and the managedFields of
    /// the write, merged under the store's lock so that concurrent writes of other parts do not
    /// conflict with it.
    Field(&'static str, &'static str),
}

struct Inner {
    rv: u64,
    buckets: HashMap<ResourceKey, BTreeMap<ObjectKey, Stored>>,
    history: VecDeque<Arc<StoreEvent>>,
    /// uid -> (resource, key) of the objects that name it as owner, for the garbage collector.
    dependents: HashMap<String, HashSet<(ResourceKey, ObjectKey)>>,
    /// spec.nodeName -> pods bound to that node (kubelets and `fieldSelector=spec.nodeName`
    /// list by node; scanning every pod for it is what the real apiserver's index avoids).
    pods_by_node: HashMap<String, BTreeSet<ObjectKey>>,
    /// Objects whose stored encoding still lacks what decoding defaults (`read_defaulted`), by
    /// the resourceVersion of that encoding.
    undefaulted: HashMap<(ResourceKey, ObjectKey), u64>,
}

/// Kinds whose create leaves a field to the defaulting that runs on every decode from etcd,
/// so that the stored bytes lack it while every answer shows it: a PersistentVolumeClaim's
/// `status.phase` (PrepareForCreate resets its status, pkg/registry/core/persistentvolumeclaim/
/// strategy.go; SetDefaults_PersistentVolumeClaim answers `Pending`, pkg/apis/core/v1/
/// defaults.go). Its first update therefore writes a new resourceVersion even when it changes
/// nothing an answer shows (etcd3's GuaranteedUpdate compares the bytes).
fn read_defaulted(rt: &ResourceType) -> bool {
    rt.group.is_empty() && rt.plural == "persistentvolumeclaims"
}

fn pods_key() -> ResourceKey {
    ResourceKey::new("", "pods")
}

/// Keep `pods_by_node` in step with a pod write (`old` -> `new`, either absent).
fn index_node(
    inner: &mut Inner,
    key: &ResourceKey,
    okey: &ObjectKey,
    old: Option<&Value>,
    new: Option<&Value>,
) {
    if key.plural != "pods" || !key.group.is_empty() {
        return;
    }
    let node_of = |o: Option<&Value>| {
        o.and_then(|o| meta::str_at(o, "/spec/nodeName"))
            .filter(|n| !n.is_empty())
            .map(str::to_string)
    };
    let (before, after) = (node_of(old), node_of(new));
    if before == after {
        return;
    }
    if let Some(b) = before {
        if let Some(set) = inner.pods_by_node.get_mut(&b) {
            set.remove(okey);
            if set.is_empty() {
                inner.pods_by_node.remove(&b);
            }
        }
    }
    if let Some(a) = after {
        inner
            .pods_by_node
            .entry(a)
            .or_default()
            .insert(okey.clone());
    }
}

pub struct Store {
    inner: Mutex<Inner>,
    history_capacity: usize,
    tx: broadcast::Sender<Arc<StoreEvent>>,
    /// The rv of the last event put on the broadcast channel (bookmarks use it).
    last_sent_rv: AtomicU64,
    /// In-process informers: every change, none dropped (see `informer`).
    informers: Mutex<Vec<InformerTx>>,
    /// The cluster's clock: creation and deletion timestamps.
    pub clock: timing::SimClock,
}

/// The store's end of an informer: its queue, how many changes wait in it, and who follows.
struct InformerTx {
    tx: mpsc::UnboundedSender<Arc<StoreEvent>>,
    backlog: Arc<AtomicUsize>,
    follower: &'static std::panic::Location<'static>,
}

/// Every committed change in order, none dropped: what an in-process controller's informer
/// sees. Unlike a broadcast receiver it never lags, so a busy controller falls behind and
/// catches up instead of re-listing everything (which, at 100,000 pods, made it fall further
/// behind). The queue is unbounded like client-go's DeltaFIFO.
pub struct Informer {
    rx: mpsc::UnboundedReceiver<Arc<StoreEvent>>,
    backlog: Arc<AtomicUsize>,
}

impl Informer {
    /// The next change; None once the store is gone.
    pub async fn recv(&mut self) -> Option<Arc<StoreEvent>> {
        let ev = self.rx.recv().await;
        if ev.is_some() {
            self.backlog.fetch_sub(1, Ordering::Relaxed);
        }
        ev
    }

    /// A change already queued, without waiting: Ok(None) when none is.
    pub fn try_recv(&mut self) -> Result<Option<Arc<StoreEvent>>, Closed> {
        match self.rx.try_recv() {
            Ok(ev) => {
                self.backlog.fetch_sub(1, Ordering::Relaxed);
                Ok(Some(ev))
            }
            Err(mpsc::error::TryRecvError::Empty) => Ok(None),
            Err(mpsc::error::TryRecvError::Disconnected) => Err(Closed),
        }
    }

    /// Hand every change already queued to `take`, without waiting. A follower that takes
    /// its burst in one turn keeps up where one that awaits each change falls behind: the
    /// runtime's budget makes each await yield after 128 among a thousand kubelet tasks.
    pub fn drain(&mut self, mut take: impl FnMut(&StoreEvent)) -> Result<(), Closed> {
        while let Some(ev) = self.try_recv()? {
            take(&ev);
        }
        Ok(())
    }

    pub fn is_empty(&self) -> bool {
        self.rx.is_empty()
    }
}

/// The store has been dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Closed;

/// What a watch starts from: a replay of history or a snapshot, then the live receiver.
pub struct WatchStart {
    pub replay: Vec<Arc<StoreEvent>>,
    pub snapshot: Vec<Stored>,
    pub snapshot_rv: u64,
    pub rx: broadcast::Receiver<Arc<StoreEvent>>,
}

pub struct ListResult<T = Arc<Value>> {
    pub items: Vec<T>,
    pub resource_version: u64,
    /// Key of the last item returned when the list was cut at `limit`.
    pub continue_after: Option<ObjectKey>,
    pub remaining: usize,
}

impl Store {
    pub fn new(history_capacity: usize) -> Self {
        Store::with_clock(history_capacity, timing::SimClock::new())
    }

    pub fn with_clock(history_capacity: usize, clock: timing::SimClock) -> Self {
        // The live buffer is small (each slot keeps its event, object and previous object
        // alive until overwritten): a watcher that lags behind it catches up from the history.
        let (tx, _) = broadcast::channel(LIVE_BUFFER);
        Store {
            inner: Mutex::new(Inner {
                rv: 1,
                buckets: HashMap::new(),
                history: VecDeque::new(),
                dependents: HashMap::new(),
                pods_by_node: HashMap::new(),
                undefaulted: HashMap::new(),
            }),
            history_capacity,
            tx,
            last_sent_rv: AtomicU64::new(1),
            informers: Mutex::new(Vec::new()),
            clock,
        }
    }

    pub fn current_rv(&self) -> u64 {
        self.inner.lock().rv
    }

    pub fn last_sent_rv(&self) -> u64 {
        self.last_sent_rv.load(Ordering::Acquire)
    }

    /// The object, managedFields included (a copy when they are kept apart).
    pub fn get(&self, key: &ResourceKey, ns: &str, name: &str) -> Option<Arc<Value>> {
        self.get_stored(key, ns, name).map(|s| s.object())
    }

    /// The object as kept, shared: without its managedFields (see `Stored::kept`).
    pub fn get_kept(&self, key: &ResourceKey, ns: &str, name: &str) -> Option<Arc<Value>> {
        self.get_stored(key, ns, name).map(|s| s.kept())
    }

    /// `get` with the object's shared encoding.
    pub fn get_stored(&self, key: &ResourceKey, ns: &str, name: &str) -> Option<Stored> {
        self.inner
            .lock()
            .buckets
            .get(key)?
            .get(&(ns.to_string(), name.to_string()))
            .cloned()
    }

    /// Objects of a resource, in key order, from `start_after` on, keeping those `filter` accepts;
    /// as kept, shared (`Stored::kept`: without managedFields). Answers list `list_stored`.
    pub fn list(
        &self,
        key: &ResourceKey,
        ns: Option<&str>,
        start_after: Option<&ObjectKey>,
        limit: Option<usize>,
        filter: &dyn Fn(&Value) -> bool,
    ) -> ListResult {
        self.list_with(key, ns, start_after, limit, filter, None, |s| s.kept())
    }

    /// `list` with each object's shared encoding (what serving a LIST needs). `on_node`
    /// narrows a pod list to one node's pods through the `spec.nodeName` index (as the real
    /// apiserver indexes it) before `filter` runs; the result is the same as filtering all.
    pub fn list_stored(
        &self,
        key: &ResourceKey,
        ns: Option<&str>,
        start_after: Option<&ObjectKey>,
        limit: Option<usize>,
        filter: &dyn Fn(&Value) -> bool,
        on_node: Option<&str>,
    ) -> ListResult<Stored> {
        self.list_with(key, ns, start_after, limit, filter, on_node, Stored::clone)
    }

    #[allow(clippy::too_many_arguments)] // `list`'s parameters and how to take each item
    fn list_with<T>(
        &self,
        key: &ResourceKey,
        ns: Option<&str>,
        start_after: Option<&ObjectKey>,
        limit: Option<usize>,
        filter: &dyn Fn(&Value) -> bool,
        on_node: Option<&str>,
        take: impl Fn(&Stored) -> T,
    ) -> ListResult<T> {
        use std::ops::Bound;
        let inner = self.inner.lock();
        let mut items = Vec::new();
        let mut continue_after = None;
        let mut remaining = 0;
        if let Some(bucket) = inner.buckets.get(key) {
            let from = match (ns, start_after) {
                (_, Some(after)) => Bound::Excluded(after.clone()),
                (Some(ns), None) => Bound::Included((ns.to_string(), String::new())),
                (None, None) => Bound::Unbounded,
            };
            let range: Box<dyn Iterator<Item = (&ObjectKey, &Stored)>> =
                match on_node.filter(|_| *key == pods_key()) {
                    // The index holds the same keys in the same order, so paging is unchanged.
                    Some(node) => Box::new(
                        inner
                            .pods_by_node
                            .get(node)
                            .into_iter()
                            .flat_map(move |set| set.range((from.clone(), Bound::Unbounded)))
                            .filter_map(|k| bucket.get_key_value(k)),
                    ),
                    None => Box::new(bucket.range((from, Bound::Unbounded))),
                };
            for (k, obj) in range {
                if let Some(ns) = ns {
                    if k.0 != ns {
                        if k.0.as_str() > ns {
                            break;
                        }
                        continue;
                    }
                }
                if !filter(&obj.kept()) {
                    continue;
                }
                if let Some(l) = limit {
                    if items.len() >= l {
                        remaining += 1;
                        continue;
                    }
                }
                items.push(take(obj));
                if limit == Some(items.len()) {
                    continue_after = Some(k.clone());
                }
            }
        }
        if remaining == 0 {
            continue_after = None;
        }
        ListResult {
            items,
            resource_version: inner.rv,
            continue_after,
            remaining,
        }
    }

    /// Create an object. The caller has defaulted and validated it; the store sets the
    /// server-owned metadata.
    pub fn create(&self, rt: &ResourceType, obj: Value, dry_run: bool) -> ApiResult<Arc<Value>> {
        self.create_answering(rt, obj, dry_run, Answer::Whole)
    }

    /// `create`, answering `how`.
    pub fn create_answering(
        &self,
        rt: &ResourceType,
        mut obj: Value,
        dry_run: bool,
        how: Answer,
    ) -> ApiResult<Arc<Value>> {
        let key = crate::apiserver::resources::storage_key(&rt.group, &rt.plural);
        let ns = if rt.namespaced {
            meta::namespace(&obj).to_string()
        } else {
            String::new()
        };
        let name = meta::name(&obj).to_string();
        let mut inner = self.inner.lock();
        if inner
            .buckets
            .get(&key)
            .map(|b| b.contains_key(&(ns.clone(), name.clone())))
            .unwrap_or(false)
        {
            return Err(ApiError::already_exists(&rt.group, &rt.plural, &name));
        }
        let rv = inner.rv + 1;
        {
            let md = meta::metadata_mut(&mut obj);
            // Admission assigns the uid; objects created without it (internal writers) get one here.
            if md
                .get("uid")
                .and_then(Value::as_str)
                .map(str::is_empty)
                .unwrap_or(true)
            {
                md.insert("uid".into(), json!(uuid::Uuid::new_v4().to_string()));
            }
            md.insert("resourceVersion".into(), json!(rv.to_string()));
            md.insert("creationTimestamp".into(), json!(self.clock.now_rfc3339()));
            md.remove("deletionTimestamp");
            md.remove("deletionGracePeriodSeconds");
            md.remove("selfLink");
            if tracks_generation(rt) {
                md.insert("generation".into(), json!(1));
            } else {
                md.remove("generation");
            }
            if !rt.namespaced {
                md.remove("namespace");
            }
        }
        meta::canonical_order(&mut obj);
        if dry_run {
            // Nothing was stored, so there is no resourceVersion to report.
            meta::metadata_mut(&mut obj).remove("resourceVersion");
            return Ok(Arc::new(obj));
        }
        inner.rv = rv;
        if read_defaulted(rt) {
            inner
                .undefaulted
                .insert((key.clone(), (ns.clone(), name.clone())), rv);
        }
        let (stored, obj) = keep(&key, obj);
        inner
            .buckets
            .entry(key.clone())
            .or_default()
            .insert((ns.clone(), name.clone()), stored.clone());
        index_node(
            &mut inner,
            &key,
            &(ns.clone(), name.clone()),
            None,
            Some(&obj),
        );
        index_owners(&mut inner, &key, &(ns, name), None, &obj);
        let answer = answer(how, &stored, &obj);
        self.emit(&mut inner, key, EventType::Added, obj, stored, None);
        Ok(answer)
    }

    /// Replace an object (PUT, or the result of a PATCH computed against `get`).
    pub fn update(
        &self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        new: Value,
        scope: UpdateScope,
        dry_run: bool,
    ) -> ApiResult<Arc<Value>> {
        self.update_answering(rt, ns, name, new, scope, dry_run, Answer::Whole)
    }

    /// `update`, answering `how`.
    #[allow(clippy::too_many_arguments)] // `update`'s and the answer's
    pub fn update_answering(
        &self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        new: Value,
        scope: UpdateScope,
        dry_run: bool,
        how: Answer,
    ) -> ApiResult<Arc<Value>> {
        let key = crate::apiserver::resources::storage_key(&rt.group, &rt.plural);
        let okey = (ns.to_string(), name.to_string());
        let mut inner = self.inner.lock();
        let current_stored = inner
            .buckets
            .get(&key)
            .and_then(|b| b.get(&okey))
            .cloned()
            .ok_or_else(|| ApiError::not_found(&rt.group, &rt.plural, name))?;
        let current = current_stored.kept();
        let wanted_rv = meta::resource_version(&new);
        if !wanted_rv.is_empty() && wanted_rv != meta::resource_version(&current) {
            return Err(ApiError::stale_resource_version(
                &rt.group, &rt.plural, name,
            ));
        }
        let wanted_uid = meta::uid(&new);
        if !wanted_uid.is_empty() && wanted_uid != meta::uid(&current) {
            // etcd3's GuaranteedUpdate checks the precondition: a StorageError naming the key.
            return Err(ApiError::conflict(
                &rt.group,
                &rt.plural,
                name,
                &format!(
                    "StorageError: invalid object, Code: 4, Key: {}, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: {}, UID in object meta: {}",
                    etcd_key(rt, ns, name),
                    wanted_uid,
                    meta::uid(&current)
                ),
            ));
        }
        // Every scope takes the written managedFields when the write has them, so the kept
        // object without its own will do; a write without them may keep the stored ones.
        let base = match new.pointer("/metadata/managedFields") {
            Some(_) => current.clone(),
            None => current_stored.object(),
        };
        let merged = merge_for_scope(rt, &base, new, scope);
        let mut merged = carry_server_metadata(rt, &base, merged, scope);
        // The apiserver skips no-op writes (no new resourceVersion, no watch event); etcd3
        // compares the whole stored object, so new managedFields alone (an apply by a manager
        // not yet recorded, which changes nothing else) are a write.
        let managed_changed = meta::at(&merged, "/metadata/managedFields")
            .is_some_and(|m| !current_stored.managed_fields_are(Some(m)));
        let current_rv = meta::parse_uint(meta::resource_version(&current)).unwrap_or(0);
        let undefaulted = inner.undefaulted.get(&(key.clone(), okey.clone())) == Some(&current_rv);
        if meta::same_content(&merged, &base) && !managed_changed && !undefaulted {
            return Ok(answer(how, &current_stored, &current));
        }
        meta::canonical_order(&mut merged);
        if dry_run {
            // A dry run stores nothing: the answer keeps the stored resourceVersion.
            meta::metadata_mut(&mut merged).insert(
                "resourceVersion".into(),
                json!(meta::resource_version(&current)),
            );
            return Ok(Arc::new(merged));
        }
        let rv = inner.rv + 1;
        meta::metadata_mut(&mut merged).insert("resourceVersion".into(), json!(rv.to_string()));
        inner.rv = rv;
        inner.undefaulted.remove(&(key.clone(), okey.clone()));
        let (stored, merged) = keep(&key, merged);
        let answer = answer(how, &stored, &merged);
        if meta::is_deleting(&merged)
            && !held_by_finalizers(rt, &merged)
            && no_grace_period(&current)
        {
            // The last finalizer went away: the object is removed now. An object still in its
            // grace period (a pod its kubelet is terminating) stays: any write to it, a status
            // update included, leaves it Terminating until a delete with grace 0 (upstream's
            // registry `ShouldDeleteDuringUpdate`).
            inner.buckets.get_mut(&key).map(|b| b.remove(&okey));
            index_node(&mut inner, &key, &okey, Some(&current), None);
            unindex_owners(&mut inner, &key, &okey, &current);
            self.emit(
                &mut inner,
                key,
                EventType::Deleted,
                merged,
                stored,
                Some((current_stored, current)),
            );
            return Ok(answer);
        }
        inner
            .buckets
            .entry(key.clone())
            .or_default()
            .insert(okey.clone(), stored.clone());
        index_node(&mut inner, &key, &okey, Some(&current), Some(&merged));
        index_owners(&mut inner, &key, &okey, Some(&current), &merged);
        self.emit(
            &mut inner,
            key,
            EventType::Modified,
            merged,
            stored,
            Some((current_stored, current)),
        );
        Ok(answer)
    }

    /// Delete an object: immediately, or by marking it when finalizers or a grace period hold it.
    pub fn delete(
        &self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        opts: &DeleteOptions,
    ) -> ApiResult<DeleteOutcome> {
        let key = crate::apiserver::resources::storage_key(&rt.group, &rt.plural);
        let okey = (ns.to_string(), name.to_string());
        let mut inner = self.inner.lock();
        let current_stored = inner
            .buckets
            .get(&key)
            .and_then(|b| b.get(&okey))
            .cloned()
            .ok_or_else(|| ApiError::not_found(&rt.group, &rt.plural, name))?;
        let current = current_stored.kept();
        // rest.BeforeDelete checks the preconditions first, naming the kind (not the resource).
        if let Some(uid) = &opts.precondition_uid {
            if uid != meta::uid(&current) {
                return Err(ApiError::conflict(
                    &rt.group,
                    &rt.kind,
                    name,
                    &format!(
                        "the UID in the precondition ({}) does not match the UID in record ({}). The object might have been deleted and then recreated",
                        uid,
                        meta::uid(&current)
                    ),
                ));
            }
        }
        if let Some(rv) = &opts.precondition_rv {
            if rv != meta::resource_version(&current) {
                return Err(ApiError::conflict(
                    &rt.group,
                    &rt.kind,
                    name,
                    &format!(
                        "the ResourceVersion in the precondition ({}) does not match the ResourceVersion in record ({}). The object might have been modified",
                        rv,
                        meta::resource_version(&current)
                    ),
                ));
            }
        }
        let mut obj: Value =
            Arc::try_unwrap(current_stored.object()).unwrap_or_else(|o| (*o).clone());
        let fins = gc_finalizers(rt, &meta::finalizers(&obj), opts.propagation);
        let grace = effective_grace_period(rt, &obj, opts.grace_period_seconds);
        let already_deleting = meta::is_deleting(&obj);
        if fins.is_empty() && grace == 0 {
            // Pods delete gracefully even with a grace period of 0 (the pod strategy's
            // CheckGracefulDelete): rest.BeforeDelete marks the pod deleting now, with a grace
            // period of 0 (bumping its generation the first time), the store writes that, then
            // deletes it. A pod already terminating with a grace period of 0 goes at once.
            let prev_grace = obj
                .pointer("/metadata/deletionGracePeriodSeconds")
                .and_then(Value::as_i64);
            let is_pod = rt.group.is_empty() && rt.plural == "pods";
            if is_pod && (!already_deleting || prev_grace.is_some_and(|g| g > 0)) {
                let md = meta::metadata_mut(&mut obj);
                md.insert("deletionTimestamp".into(), json!(self.clock.now_rfc3339()));
                md.insert("deletionGracePeriodSeconds".into(), json!(0));
                if !already_deleting {
                    if let Some(g) = md
                        .get("generation")
                        .and_then(Value::as_i64)
                        .filter(|g| *g > 0)
                    {
                        md.insert("generation".into(), json!(g + 1));
                    }
                }
                if !opts.dry_run {
                    let rv = inner.rv + 1;
                    meta::metadata_mut(&mut obj)
                        .insert("resourceVersion".into(), json!(rv.to_string()));
                    inner.rv = rv;
                    let (stored, marked) = keep(&key, obj.clone());
                    inner
                        .buckets
                        .entry(key.clone())
                        .or_default()
                        .insert(okey.clone(), stored.clone());
                    self.emit(
                        &mut inner,
                        key.clone(),
                        EventType::Modified,
                        marked,
                        stored,
                        Some((current_stored.clone(), current.clone())),
                    );
                }
            }
            if opts.dry_run {
                return Ok(DeleteOutcome::Deleted(Arc::new(obj)));
            }
            let rv = inner.rv + 1;
            meta::metadata_mut(&mut obj).insert("resourceVersion".into(), json!(rv.to_string()));
            inner.rv = rv;
            inner.buckets.get_mut(&key).map(|b| b.remove(&okey));
            inner.undefaulted.remove(&(key.clone(), okey.clone()));
            index_node(&mut inner, &key, &okey, Some(&current), None);
            unindex_owners(&mut inner, &key, &okey, &current);
            let (stored, obj) = keep(&key, obj);
            let answer = answer(Answer::Whole, &stored, &obj);
            self.emit(
                &mut inner,
                key,
                EventType::Deleted,
                obj,
                stored,
                Some((current_stored, current)),
            );
            return Ok(DeleteOutcome::Deleted(answer));
        }
        // Pending deletion. A second delete may only shorten a grace period.
        let now = self.clock.now();
        {
            let md = meta::metadata_mut(&mut obj);
            // The first mark of deletion bumps a generation the object has (rest.BeforeDelete
            // for graceful deletion, the store's markAsDeleting for finalizers).
            if !already_deleting {
                if let Some(g) = md
                    .get("generation")
                    .and_then(Value::as_i64)
                    .filter(|g| *g > 0)
                {
                    md.insert("generation".into(), json!(g + 1));
                }
            }
            let prev_grace = md.get("deletionGracePeriodSeconds").and_then(Value::as_i64);
            let shorten = prev_grace.map(|p| grace < p).unwrap_or(true);
            if !already_deleting || shorten {
                md.insert(
                    "deletionTimestamp".into(),
                    json!(timing::rfc3339(now + chrono::Duration::seconds(grace))),
                );
                // A kind without graceful deletion held by finalizers gets a grace period of 0
                // (`updateForGracefulDeletionAndFinalizers`).
                md.insert("deletionGracePeriodSeconds".into(), json!(grace));
            }
        }
        meta::set_finalizers(&mut obj, &fins);
        if meta::same_content(&obj, &current) {
            return Ok(DeleteOutcome::Pending(current_stored.object()));
        }
        if opts.dry_run {
            return Ok(DeleteOutcome::Pending(Arc::new(obj)));
        }
        let rv = inner.rv + 1;
        meta::metadata_mut(&mut obj).insert("resourceVersion".into(), json!(rv.to_string()));
        inner.rv = rv;
        let (stored, obj) = keep(&key, obj);
        let answer = answer(Answer::Whole, &stored, &obj);
        index_node(&mut inner, &key, &okey, Some(&current), Some(&obj));
        inner
            .buckets
            .entry(key.clone())
            .or_default()
            .insert(okey, stored.clone());
        self.emit(
            &mut inner,
            key,
            EventType::Modified,
            obj,
            stored,
            Some((current_stored, current)),
        );
        Ok(DeleteOutcome::Pending(answer))
    }

    /// The objects whose ownerReferences name `uid` (as kept, without managedFields).
    pub fn dependents_of(&self, uid: &str) -> Vec<(ResourceKey, Arc<Value>)> {
        let inner = self.inner.lock();
        let Some(set) = inner.dependents.get(uid) else {
            return vec![];
        };
        set.iter()
            .filter_map(|(k, ok)| {
                inner
                    .buckets
                    .get(k)
                    .and_then(|b| b.get(ok))
                    .map(|o| (k.clone(), o.kept()))
            })
            .collect()
    }

    /// Is any object with this uid stored (of any resource)? Used by the garbage collector.
    pub fn uid_exists(&self, key: &ResourceKey, ns: &str, name: &str, uid: &str) -> bool {
        self.get_kept(key, ns, name)
            .map(|o| meta::uid(&o) == uid)
            .unwrap_or(false)
    }

    /// The encodings of a resource's objects, by key: for sweeps that read a few fields of
    /// every object without parsing each whole (see `Stored` on compact resources).
    pub fn encodings(&self, key: &ResourceKey) -> Vec<(ObjectKey, Bytes)> {
        let inner = self.inner.lock();
        inner
            .buckets
            .get(key)
            .map(|b| {
                b.iter()
                    .map(|(k, s)| (k.clone(), s.json().clone()))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// How many objects of a resource are stored.
    pub fn count(&self, key: &ResourceKey) -> usize {
        self.inner
            .lock()
            .buckets
            .get(key)
            .map(BTreeMap::len)
            .unwrap_or(0)
    }

    /// Keys of every resource with at least one object.
    pub fn resource_keys(&self) -> Vec<ResourceKey> {
        self.inner
            .lock()
            .buckets
            .iter()
            .filter(|(_, b)| !b.is_empty())
            .map(|(k, _)| k.clone())
            .collect()
    }

    /// Start a watch. `from_rv`: `None` = start with a snapshot of the current state (the
    /// semantics of an unset or "0" resourceVersion, and of sendInitialEvents); `Some(rv)` =
    /// replay every event after `rv` from history, or 410 Gone when it has been compacted away.
    pub fn watch(
        &self,
        key: &ResourceKey,
        from_rv: Option<u64>,
        ns: Option<&str>,
    ) -> ApiResult<WatchStart> {
        let inner = self.inner.lock();
        let rx = self.tx.subscribe();
        match from_rv {
            None => {
                let snapshot = inner
                    .buckets
                    .get(key)
                    .map(|b| {
                        b.iter()
                            .filter(|(k, _)| ns.map(|n| k.0 == n).unwrap_or(true))
                            .map(|(_, v)| v.clone())
                            .collect()
                    })
                    .unwrap_or_default();
                Ok(WatchStart {
                    replay: vec![],
                    snapshot,
                    snapshot_rv: inner.rv,
                    rx,
                })
            }
            Some(rv) => {
                if rv > inner.rv {
                    // A resourceVersion from the future: the real apiserver waits briefly and then
                    // answers "Too large resource version"; we answer at once.
                    return Err(ApiError::new(
                        504,
                        "Timeout",
                        format!("Too large resource version: {}, current: {}", rv, inner.rv),
                    ));
                }
                let oldest = inner.history.front().map(|e| e.rv).unwrap_or(inner.rv + 1);
                // Events after `rv` must all still be in history.
                if rv + 1 < oldest && rv < inner.rv {
                    return Err(ApiError::gone(format!(
                        "too old resource version: {} ({})",
                        rv,
                        oldest - 1
                    )));
                }
                let replay = inner
                    .history
                    .iter()
                    .filter(|e| e.rv > rv && &e.key == key)
                    .cloned()
                    .collect();
                Ok(WatchStart {
                    replay,
                    snapshot: vec![],
                    snapshot_rv: inner.rv,
                    rx,
                })
            }
        }
    }

    /// The objects of `key` as they were at resourceVersion `rv` (LIST with
    /// `resourceVersionMatch=Exact`): the current state with every later change undone from the
    /// watch history, or 410 Expired when the history no longer reaches back to `rv`.
    pub fn snapshot_at(
        &self,
        key: &ResourceKey,
        ns: Option<&str>,
        rv: u64,
    ) -> ApiResult<Vec<Stored>> {
        let inner = self.inner.lock();
        if rv > inner.rv {
            return Err(ApiError::new(
                504,
                "Timeout",
                format!("Too large resource version: {}, current: {}", rv, inner.rv),
            ));
        }
        let oldest = inner.history.front().map(|e| e.rv).unwrap_or(inner.rv + 1);
        if rv + 1 < oldest && rv < inner.rv {
            return Err(ApiError::gone(format!(
                "too old resource version: {} ({})",
                rv,
                oldest - 1
            )));
        }
        let mut objects: std::collections::BTreeMap<ObjectKey, Stored> = inner
            .buckets
            .get(key)
            .map(|b| b.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
            .unwrap_or_default();
        for ev in inner
            .history
            .iter()
            .rev()
            .take_while(|e| e.rv > rv)
            .filter(|e| &e.key == key)
        {
            let okey = (
                meta::namespace(&ev.object).to_string(),
                meta::name(&ev.object).to_string(),
            );
            match &ev.prev_stored {
                Some(prev) => objects.insert(okey, prev.clone()),
                None => objects.remove(&okey),
            };
        }
        Ok(objects
            .into_iter()
            .filter(|(k, _)| ns.map(|n| k.0 == n).unwrap_or(true))
            .map(|(_, v)| v)
            .collect())
    }

    /// The resourceVersion a stale read of `key` (one object when `name` is given, else the
    /// namespace's or all) is served at: just before the latest change to what it reads, when
    /// that change was committed less than `window` ago and the history still reaches before
    /// it. None: nothing changed within the window, the read is fresh (`faultline explore`).
    pub fn stale_rv(
        &self,
        key: &ResourceKey,
        ns: Option<&str>,
        name: Option<&str>,
        window: std::time::Duration,
    ) -> Option<u64> {
        let inner = self.inner.lock();
        let now = std::time::Instant::now();
        let oldest = inner.history.front().map(|e| e.rv)?;
        let latest = inner
            .history
            .iter()
            .rev()
            .take_while(|e| now.duration_since(e.at) < window)
            .find(|e| {
                &e.key == key
                    && ns.is_none_or(|n| meta::namespace(&e.object) == n)
                    && name.is_none_or(|n| meta::name(&e.object) == n)
            })?;
        (latest.rv > oldest).then_some(latest.rv - 1)
    }

    /// Subscribe to every committed change, as a watch does: a receiver that falls more than
    /// the channel's capacity behind lags (and must re-list).
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<StoreEvent>> {
        self.tx.subscribe()
    }

    /// Follow every committed change from now on, none dropped (in-process controllers).
    /// The caller's location names the follower in `informer_backlogs`.
    #[track_caller]
    pub fn informer(&self) -> Informer {
        let (tx, rx) = mpsc::unbounded_channel();
        let backlog = Arc::new(AtomicUsize::new(0));
        self.informers.lock().push(InformerTx {
            tx,
            backlog: backlog.clone(),
            follower: std::panic::Location::caller(),
        });
        Informer { rx, backlog }
    }

    /// How many changes wait in each informer's queue, largest first, by the source location
    /// that follows it (client-go's `workqueue_depth`): every queued change keeps its object
    /// alive, so a follower that falls behind holds memory.
    pub fn informer_backlogs(&self) -> Vec<(String, usize)> {
        let mut out: Vec<(String, usize)> = self
            .informers
            .lock()
            .iter()
            .map(|i| {
                (
                    format!("{}:{}", i.follower.file(), i.follower.line()),
                    i.backlog.load(Ordering::Relaxed),
                )
            })
            .collect();
        out.sort_by_key(|b| std::cmp::Reverse(b.1));
        out
    }

    /// The oldest resourceVersion a watch can still resume from.
    pub fn oldest_resumable_rv(&self) -> u64 {
        let inner = self.inner.lock();
        inner
            .history
            .front()
            .map(|e| e.rv.saturating_sub(1))
            .unwrap_or(inner.rv)
    }

    /// Record and send a change. `stored` is the store's copy of `object` (sharing its
    /// encoding with the event); for a compact resource the event still carries the parsed
    /// object, which watchers and informers read. `prev`: the version before, as stored and as
    /// kept (the caller has read it already; a compact one would be decoded again).
    fn emit(
        &self,
        inner: &mut Inner,
        key: ResourceKey,
        event_type: EventType,
        object: Arc<Value>,
        stored: Stored,
        prev: Option<(Stored, Arc<Value>)>,
    ) {
        let (prev_stored, prev) = prev.unzip();
        let ev = Arc::new(StoreEvent {
            rv: inner.rv,
            key,
            event_type,
            object,
            prev,
            prev_stored,
            stored,
            at: std::time::Instant::now(),
        });
        inner.history.push_back(ev.clone());
        while inner.history.len() > self.history_capacity {
            inner.history.pop_front();
        }
        self.informers.lock().retain(|i| {
            i.backlog.fetch_add(1, Ordering::Relaxed);
            i.tx.send(ev.clone()).is_ok()
        });
        let _ = self.tx.send(ev);
        self.last_sent_rv.store(inner.rv, Ordering::Release);
    }
}

pub const FOREGROUND: &str = "foregroundDeletion";
pub const ORPHAN: &str = "orphan";

/// The garbage collection a kind's delete strategy defaults to
/// (`rest.GarbageCollectionDeleteStrategy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum GcPolicy {
    /// Events: no GC finalizers at all, whatever the options say.
    Unsupported,
    /// batch/v1 Jobs and v1 ReplicationControllers, for compatibility.
    OrphanDependents,
    /// Everything else: dependents are deleted in the background.
    DeleteDependents,
}

fn default_gc_policy(rt: &ResourceType) -> GcPolicy {
    match (rt.group.as_str(), rt.plural.as_str()) {
        ("" | "events.k8s.io", "events") => GcPolicy::Unsupported,
        ("batch", "jobs") | ("", "replicationcontrollers") => GcPolicy::OrphanDependents,
        _ => GcPolicy::DeleteDependents,
    }
}

/// The finalizers a delete leaves on the object, as the generic store's
/// `deletionFinalizersForGarbageCollection` computes them (apiserver
/// pkg/registry/generic/registry/store.go): the options' propagation, else a GC finalizer the
/// object already has, else the kind's default decide between `orphan` and `foregroundDeletion`;
/// the other finalizers stay in their order, a GC finalizer goes last.
fn gc_finalizers(
    rt: &ResourceType,
    current: &[String],
    propagation: Option<Propagation>,
) -> Vec<String> {
    let policy = default_gc_policy(rt);
    if policy == GcPolicy::Unsupported {
        return current.to_vec();
    }
    let has = |f: &str| {
        current
            .iter()
            .find(|c| *c == ORPHAN || *c == FOREGROUND)
            .map(String::as_str)
            == Some(f)
    };
    let (orphan, foreground) = match propagation {
        Some(Propagation::Orphan) => (true, false),
        Some(Propagation::Foreground) => (false, true),
        Some(Propagation::Background) => (false, false),
        None if has(ORPHAN) => (true, false),
        None if has(FOREGROUND) => (false, true),
        None => (policy == GcPolicy::OrphanDependents, false),
    };
    let mut next: Vec<String> = current
        .iter()
        .filter(|f| *f != ORPHAN && *f != FOREGROUND)
        .cloned()
        .collect();
    if orphan {
        next.push(ORPHAN.into());
    }
    if foreground {
        next.push(FOREGROUND.into());
    }
    let same = |a: &[String], b: &[String]| {
        let a: BTreeSet<&String> = a.iter().collect();
        let b: BTreeSet<&String> = b.iter().collect();
        a == b
    };
    if same(&next, current) {
        current.to_vec()
    } else {
        next
    }
}

/// Finalizers keep a deleting object stored: `metadata.finalizers`, and for namespaces also
/// `spec.finalizers` (emptied by the namespace controller through `namespaces/finalize`).
fn held_by_finalizers(rt: &ResourceType, obj: &Value) -> bool {
    let spec_fins = rt.group.is_empty()
        && rt.plural == "namespaces"
        && obj
            .pointer("/spec/finalizers")
            .and_then(Value::as_array)
            .map(|a| !a.is_empty())
            .unwrap_or(false);
    spec_fins || !meta::finalizers(obj).is_empty()
}

/// The existing object's deletion has no grace period, or one of 0: an update that leaves it
/// without finalizers removes it (`ShouldDeleteDuringUpdate` in k8s.io/apiserver's
/// registry/generic/registry/store.go).
fn no_grace_period(existing: &Value) -> bool {
    existing
        .pointer("/metadata/deletionGracePeriodSeconds")
        .and_then(Value::as_i64)
        .is_none_or(|g| g == 0)
}

/// Which resources carry `metadata.generation` (those with a spec the apiserver versions).
pub fn tracks_generation(rt: &ResourceType) -> bool {
    // The kinds whose strategies set `Generation = 1` on create (pkg/registry/*/*/strategy.go,
    // apiextensions-apiserver's CRD and custom resource strategies).
    rt.custom
        || (rt.group == "apps" && rt.plural != "controllerrevisions")
        || rt.group == "admissionregistration.k8s.io"
        || rt.group == "flowcontrol.apiserver.k8s.io"
        || (rt.group == "resource.k8s.io"
            && matches!(
                rt.plural.as_str(),
                "deviceclasses" | "devicetaintrules" | "resourceslices"
            ))
        || rt.group == "policy"
        || rt.group == "batch"
        || rt.group == "apiextensions.k8s.io"
        || rt.group == "scheduling.k8s.io"
        || (rt.group == "networking.k8s.io"
            && matches!(
                rt.plural.as_str(),
                "ingresses" | "ingressclasses" | "networkpolicies"
            ))
        || (rt.group == "discovery.k8s.io" && rt.plural == "endpointslices")
        || (rt.group.is_empty()
            && matches!(
                rt.plural.as_str(),
                "pods" | "podtemplates" | "replicationcontrollers"
            ))
}

/// The grace period a deletion gets. Pods that are scheduled and not terminal wait for their
/// kubelet (default 30 s, or `terminationGracePeriodSeconds`); everything else goes at once.
fn effective_grace_period(rt: &ResourceType, obj: &Value, requested: Option<i64>) -> i64 {
    if !(rt.group.is_empty() && rt.plural == "pods") {
        return 0;
    }
    let scheduled = meta::str_at(obj, "/spec/nodeName")
        .map(|n| !n.is_empty())
        .unwrap_or(false);
    let phase = meta::str_at(obj, "/status/phase").unwrap_or("");
    if !scheduled || phase == "Succeeded" || phase == "Failed" {
        return 0;
    }
    let default = obj
        .pointer("/spec/terminationGracePeriodSeconds")
        .and_then(Value::as_i64)
        .unwrap_or(30);
    let g = requested.unwrap_or(default).max(0);
    // A pod already terminating keeps the shorter of the two.
    match obj
        .pointer("/metadata/deletionGracePeriodSeconds")
        .and_then(Value::as_i64)
    {
        Some(prev) => g.min(prev),
        None => g,
    }
}

/// Apply the status-subresource split: the main resource cannot change status and the status
/// subresource cannot change anything else.
fn merge_for_scope(
    rt: &ResourceType,
    current: &Value,
    mut new: Value,
    scope: UpdateScope,
) -> Value {
    match scope {
        UpdateScope::Any | UpdateScope::Storage => new,
        UpdateScope::Main => {
            if rt.has_status() {
                match current.get("status") {
                    Some(s) => {
                        new["status"] = s.clone();
                    }
                    None => {
                        if let Some(m) = new.as_object_mut() {
                            m.remove("status");
                        }
                    }
                }
            }
            new
        }
        UpdateScope::Status if meta::identical_outside_status(&new, current) => {
            // The writer sent the stored object with a new status (every status patch does):
            // its copy is the result, with the stored resourceVersion; no copy of the stored one.
            if let Some(rv) = current.pointer("/metadata/resourceVersion") {
                meta::metadata_mut(&mut new).insert("resourceVersion".into(), rv.clone());
            }
            new
        }
        UpdateScope::Status if !rt.custom => {
            // A built-in status strategy keeps what the request sent except its reset fields
            // (the spec; for some kinds parts of metadata or all of it), which stay as stored:
            // a Deployment's annotations change through /status, its labels do not.
            let reset = crate::apiserver::patch::smd::reset::reset_fields(
                &rt.group,
                &rt.kind,
                Some("status"),
                false,
            );
            let mut out = new;
            for path in reset.iter().flat_map(|s| s.iterate()) {
                let names: Vec<&str> = path
                    .iter()
                    .filter_map(|e| match e {
                        crate::apiserver::patch::smd::fieldpath::PathElement::Field(n) => {
                            Some(n.as_str())
                        }
                        _ => None,
                    })
                    .collect();
                restore(&mut out, current, &names);
            }
            if reset.is_none() {
                let status = out.get_mut("status").map(std::mem::take);
                let managed = out
                    .pointer_mut("/metadata/managedFields")
                    .map(std::mem::take);
                out = current.clone();
                match status {
                    Some(s) => out["status"] = s,
                    None => {
                        if let Some(m) = out.as_object_mut() {
                            m.remove("status");
                        }
                    }
                }
                if let Some(mf) = managed {
                    meta::metadata_mut(&mut out).insert("managedFields".into(), mf);
                }
            }
            out
        }
        UpdateScope::Status => {
            // A custom resource's status strategy: the stored object with the written status.
            let mut out = current.clone();
            match new.get_mut("status").map(std::mem::take) {
                Some(s) => out["status"] = s,
                None => {
                    if let Some(m) = out.as_object_mut() {
                        m.remove("status");
                    }
                }
            }
            // The status endpoint's field manager records the write (`subresource: status`).
            match new
                .pointer_mut("/metadata/managedFields")
                .map(std::mem::take)
            {
                Some(mf) => {
                    meta::metadata_mut(&mut out).insert("managedFields".into(), mf);
                }
                None => {
                    meta::metadata_mut(&mut out).remove("managedFields");
                }
            }
            // Status writers may still carry the resourceVersion precondition; keep the rest of metadata.
            out
        }
        UpdateScope::Field(parent, field) => {
            let mut out = current.clone();
            match new
                .get_mut(parent)
                .and_then(|p| p.get_mut(field))
                .map(std::mem::take)
            {
                Some(v) => out[parent][field] = v,
                None => {
                    if let Some(p) = out.get_mut(parent).and_then(Value::as_object_mut) {
                        p.remove(field);
                    }
                }
            }
            if let Some(mf) = new
                .pointer_mut("/metadata/managedFields")
                .map(std::mem::take)
            {
                meta::metadata_mut(&mut out).insert("managedFields".into(), mf);
            }
            out
        }
    }
}

/// Put `current`'s value at `path` (field names) into `out`, or remove it there when `current`
/// has none. A restored `metadata` keeps the request's managedFields (its field manager's).
fn restore(out: &mut Value, current: &Value, path: &[&str]) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let from = parents
        .iter()
        .try_fold(current, |v, k| v.get(*k))
        .and_then(|v| v.get(*last))
        .cloned();
    let mut slot = &mut *out;
    for k in parents {
        if !slot.get(*k).is_some_and(Value::is_object) {
            if from.is_none() {
                return;
            }
            slot[*k] = json!({});
        }
        slot = slot.get_mut(*k).expect("object");
    }
    let managed = (path == ["metadata"])
        .then(|| slot.pointer("/metadata/managedFields").cloned())
        .flatten();
    match (from, slot.as_object_mut()) {
        (Some(v), Some(m)) => {
            m.insert((*last).to_string(), v);
        }
        (None, Some(m)) => {
            m.remove(*last);
        }
        _ => {}
    }
    if let Some(mf) = managed {
        meta::metadata_mut(slot).insert("managedFields".into(), mf);
    }
}

/// Keep the metadata the server owns, bump generation on spec changes.
fn carry_server_metadata(
    rt: &ResourceType,
    current: &Value,
    mut new: Value,
    scope: UpdateScope,
) -> Value {
    let empty = serde_json::Map::new();
    let cur_md = current
        .get("metadata")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    // The EndpointSlice strategy counts a change of its labels too.
    let labels_count = rt.group == "discovery.k8s.io" && rt.plural == "endpointslices";
    // The Deployment strategy counts a change of its annotations too, as its ReplicaSets copy
    // them (pkg/registry/apps/deployment/strategy.go); its status strategy does not.
    let annotations_count = rt.group == "apps"
        && rt.plural == "deployments"
        && matches!(scope, UpdateScope::Main | UpdateScope::Any);
    let annotations = |o: &Value| {
        o.pointer("/metadata/annotations")
            .filter(|a| a.as_object().is_some_and(|m| !m.is_empty()))
            .cloned()
    };
    let spec_changed = !meta::same_spec_part(&new, current)
        || (labels_count && new.pointer("/metadata/labels") != current.pointer("/metadata/labels"))
        || (annotations_count && annotations(&new) != annotations(current));
    let md = meta::metadata_mut(&mut new);
    for k in ["uid", "creationTimestamp", "name", "namespace"] {
        match cur_md.get(k) {
            Some(v) => {
                md.insert(k.into(), v.clone());
            }
            None => {
                md.remove(k);
            }
        }
    }
    md.remove("selfLink");
    if !matches!(scope, UpdateScope::Any | UpdateScope::Storage) {
        // Clients cannot set or clear deletion state through an update.
        for k in ["deletionTimestamp", "deletionGracePeriodSeconds"] {
            match cur_md.get(k) {
                Some(v) => {
                    md.insert(k.into(), v.clone());
                }
                None => {
                    md.remove(k);
                }
            }
        }
    }
    if tracks_generation(rt) {
        let g = cur_md
            .get("generation")
            .and_then(Value::as_i64)
            .unwrap_or(1);
        let bump = spec_changed && scope != UpdateScope::Storage;
        md.insert("generation".into(), json!(if bump { g + 1 } else { g }));
    } else {
        md.remove("generation");
    }
    if !rt.namespaced {
        md.remove("namespace");
    }
    new
}

fn index_owners(
    inner: &mut Inner,
    key: &ResourceKey,
    okey: &ObjectKey,
    prev: Option<&Value>,
    obj: &Value,
) {
    if let Some(p) = prev {
        unindex_owners(inner, key, okey, p);
    }
    for uid in meta::owner_uids(obj) {
        inner
            .dependents
            .entry(uid)
            .or_default()
            .insert((key.clone(), okey.clone()));
    }
}

fn unindex_owners(inner: &mut Inner, key: &ResourceKey, okey: &ObjectKey, obj: &Value) {
    for uid in meta::owner_uids(obj) {
        if let Some(set) = inner.dependents.get_mut(&uid) {
            set.remove(&(key.clone(), okey.clone()));
            if set.is_empty() {
                inner.dependents.remove(&uid);
            }
        }
    }
}

/// The etcd key kube-apiserver stores an object under: `/registry/<prefix>/[<namespace>/]<name>`,
/// the prefix the resource's plural but for the prefixes compiled in
/// (`SpecialDefaultResourcePrefixes`) and the apiextensions/aggregator stores (group/plural).
pub fn etcd_key(rt: &ResourceType, ns: &str, name: &str) -> String {
    let prefix = match (rt.group.as_str(), rt.plural.as_str()) {
        ("", "replicationcontrollers") => "controllers".to_string(),
        ("", "endpoints") => "services/endpoints".to_string(),
        ("", "nodes") => "minions".to_string(),
        ("", "services") => "services/specs".to_string(),
        ("networking.k8s.io", "ingresses") => "ingress".to_string(),
        ("apiextensions.k8s.io" | "apiregistration.k8s.io", p) => format!("{}/{p}", rt.group),
        (g, p) if rt.custom => format!("{g}/{p}"),
        (_, p) => p.to_string(),
    };
    if ns.is_empty() {
        format!("/registry/{prefix}/{name}")
    } else {
        format!("/registry/{prefix}/{ns}/{name}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apiserver::resources::Registry;

    fn cm(name: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"}, "data": {"a": "1"}})
    }

    #[test]
    fn resource_versions_are_cluster_wide_and_increasing() {
        let reg = Registry::with_builtins();
        let rt = reg.get("", "v1", "configmaps").unwrap();
        let s = Store::new(100);
        let a = s.create(&rt, cm("a"), false).unwrap();
        let b = s.create(&rt, cm("b"), false).unwrap();
        let ra: u64 = meta::resource_version(&a).parse().unwrap();
        let rb: u64 = meta::resource_version(&b).parse().unwrap();
        assert!(rb > ra);
        assert_eq!(s.current_rv(), rb);
        assert!(s.create(&rt, cm("a"), false).unwrap_err().code == 409);
    }

    #[test]
    fn informer_backlogs_count_what_waits_and_name_the_follower() {
        let reg = Registry::with_builtins();
        let rt = reg.get("", "v1", "configmaps").unwrap();
        let s = Store::new(10);
        let mut slow = s.informer();
        let line = line!() - 1;
        let mut fast = s.informer();
        for i in 0..5 {
            s.create(&rt, cm(&format!("c{i}")), false).unwrap();
            while let Ok(Some(_)) = fast.try_recv() {}
        }
        let backlogs = s.informer_backlogs();
        assert_eq!(backlogs[0], (format!("{}:{}", file!(), line), 5));
        assert_eq!(backlogs[1].1, 0);
        slow.try_recv().unwrap().unwrap();
        assert_eq!(s.informer_backlogs()[0].1, 4);
    }

    #[test]
    fn an_informer_gets_every_change_in_order_where_a_broadcast_receiver_lags() {
        let reg = Registry::with_builtins();
        let rt = reg.get("", "v1", "configmaps").unwrap();
        let s = Store::new(10);
        let mut informer = s.informer();
        let mut watch = s.subscribe();
        for i in 0..5000 {
            s.create(&rt, cm(&format!("c{i}")), false).unwrap();
        }
        assert!(
            matches!(
                watch.try_recv(),
                Err(broadcast::error::TryRecvError::Lagged(_))
            ),
            "the watch channel holds only 2,048"
        );
        let mut last = 0;
        for i in 0..5000 {
            let ev = informer
                .try_recv()
                .unwrap()
                .unwrap_or_else(|| panic!("change {i} missing"));
            assert!(ev.rv > last);
            assert_eq!(meta::name(&ev.object), format!("c{i}"));
            last = ev.rv;
        }
        assert_eq!(informer.try_recv().unwrap().map(|e| e.rv), None);
        drop(s);
        assert_eq!(informer.try_recv().unwrap_err(), Closed);
    }

    #[test]
    fn a_stored_encoding_is_shared_with_its_event_and_replaced_on_write() {
        let reg = Registry::with_builtins();
        let rt = reg.get("", "v1", "configmaps").unwrap();
        let s = Store::new(100);
        let mut events = s.subscribe();
        let a = s.create(&rt, cm("a"), false).unwrap();
        let stored = s.get_stored(&rt.key(), "default", "a").unwrap();
        assert_eq!(
            stored.json().as_ref(),
            serde_json::to_vec(&*a).unwrap().as_slice()
        );
        // The ADDED event serves the very bytes the store cached (one encoding for both).
        let added = events.try_recv().unwrap();
        assert_eq!(added.object_json().as_ptr(), stored.json().as_ptr());
        let mut upd = (*a).clone();
        upd["data"]["a"] = json!("2");
        s.update(&rt, "default", "a", upd, UpdateScope::Main, false)
            .unwrap();
        let after = s.get_stored(&rt.key(), "default", "a").unwrap();
        let decoded: Value = serde_json::from_slice(after.json()).unwrap();
        assert_eq!(
            decoded["data"]["a"], "2",
            "a write must not serve the old encoding"
        );
        let listed = s.list_stored(&rt.key(), Some("default"), None, None, &|_| true, None);
        assert_eq!(listed.items[0].json().as_ptr(), after.json().as_ptr());
    }

    /// A ConfigMap with managedFields between other metadata members, as the field manager
    /// leaves them.
    fn managed_cm(name: &str, manager: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": name, "namespace": "default", "labels": {"x": "1"},
                            "managedFields": [{"manager": manager, "operation": "Update", "apiVersion": "v1",
                                               "fieldsType": "FieldsV1",
                                               "fieldsV1": {"f:data": {".": {}, "f:a": {}}, "f:metadata": {"f:labels": {"f:x": {}}}}}],
                            "annotations": {"n": "\"quoted\""}},
               "data": {"a": "1"}})
    }

    #[test]
    fn managed_fields_are_kept_apart_and_every_answer_has_them_in_place() {
        let reg = Registry::with_builtins();
        let rt = reg.get("", "v1", "configmaps").unwrap();
        let s = Store::new(100);
        let mut events = s.subscribe();
        let created = s.create(&rt, managed_cm("a", "one"), false).unwrap();
        // The answer is the whole object, managedFields where they were among metadata.
        let keys: Vec<&str> = created["metadata"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            &keys[..5],
            [
                "name",
                "namespace",
                "labels",
                "managedFields",
                "annotations"
            ]
        );
        let stored = s.get_stored(&rt.key(), "default", "a").unwrap();
        // Kept without them: what components read and events carry.
        assert!(stored.kept().pointer("/metadata/managedFields").is_none());
        let ev = events.try_recv().unwrap();
        assert!(ev.object.pointer("/metadata/managedFields").is_none());
        // Every answer has them back, byte for byte as serializing the whole object gives.
        let whole = serde_json::to_vec(&*created).unwrap();
        assert!(meta::identical(&stored.object(), &created));
        assert_eq!(stored.json().as_ref(), whole.as_slice());
        let mut appended = Vec::new();
        Stored::new(stored.kept()).append_json(&mut appended);
        assert_ne!(appended, whole, "the kept value alone lacks them");
        appended.clear();
        s.get_stored(&rt.key(), "default", "a")
            .unwrap()
            .append_json(&mut appended);
        assert_eq!(appended, whole);
        assert_eq!(ev.object_json().as_ref(), whole.as_slice());
        assert_eq!(
            stored.managed_fields(),
            created.pointer("/metadata/managedFields").cloned()
        );
        assert!(meta::identical(
            &stored.with_managed_fields(&stored.kept()),
            &created
        ));
        assert!(meta::identical(
            &s.get(&rt.key(), "default", "a").unwrap(),
            &created
        ));
    }

    #[test]
    fn a_write_with_the_same_managed_fields_keeps_them_and_new_ones_replace_them() {
        let reg = Registry::with_builtins();
        let rt = reg.get("", "v1", "configmaps").unwrap();
        let s = Store::new(100);
        let write = |o: Value| {
            s.update(&rt, "default", "a", o, UpdateScope::Main, false)
                .unwrap()
        };
        let created = s.create(&rt, managed_cm("a", "one"), false).unwrap();
        let mut changed = (*created).clone();
        changed["data"]["a"] = json!("2");
        let kept = write(changed);
        assert_eq!(
            kept["metadata"]["managedFields"],
            created["metadata"]["managedFields"]
        );
        assert_eq!(kept["data"]["a"], "2");
        // New managedFields alone are a write: a new resourceVersion, the new list kept.
        let mut other = (*kept).clone();
        other["metadata"]["managedFields"] =
            managed_cm("a", "two")["metadata"]["managedFields"].clone();
        let replaced = write(other.clone());
        assert_ne!(
            meta::resource_version(&replaced),
            meta::resource_version(&kept)
        );
        assert_eq!(replaced["metadata"]["managedFields"][0]["manager"], "two");
        // The same ones again, even with their members in another order, are no write.
        let mut reordered = other;
        let entry = reordered["metadata"]["managedFields"][0]
            .as_object_mut()
            .unwrap();
        let manager = entry.shift_remove("manager").unwrap();
        entry.insert("manager".into(), manager);
        reordered["metadata"]["resourceVersion"] = replaced["metadata"]["resourceVersion"].clone();
        let same = write(reordered);
        assert_eq!(
            meta::resource_version(&same),
            meta::resource_version(&replaced),
            "nothing changed: no write"
        );
        // A stale read (from the history) serves the older version with its own.
        let old = s
            .snapshot_at(
                &rt.key(),
                Some("default"),
                meta::parse_uint(meta::resource_version(&kept)).unwrap(),
            )
            .unwrap();
        assert_eq!(
            old[0].object()["metadata"]["managedFields"][0]["manager"],
            "one"
        );
    }

    #[test]
    fn events_are_kept_as_their_encoding_and_read_back_unchanged() {
        let reg = Registry::with_builtins();
        let rt = reg.get("", "v1", "events").unwrap();
        let s = Store::new(100);
        let mut events = s.subscribe();
        let ev = |name: &str, count: i64| {
            json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": name, "namespace": "default"},
                                                  "involvedObject": {"kind": "Pod", "name": "p"}, "reason": "Started", "count": count})
        };
        let created = s.create(&rt, ev("e1", 1), false).unwrap();
        s.create(&rt, ev("e2", 1), false).unwrap();
        let stored = s.get_stored(&rt.key(), "default", "e1").unwrap();
        assert!(
            stored.value.is_none(),
            "an Event keeps no parsed copy in the store"
        );
        // Read back: the same object, field order included, and the same bytes as its event.
        assert_eq!(
            serde_json::to_string(&*stored.object()).unwrap(),
            serde_json::to_string(&*created).unwrap()
        );
        let added = events.try_recv().unwrap();
        assert!(
            Arc::ptr_eq(&added.object, &created),
            "watchers and informers get the parsed object"
        );
        assert_eq!(added.object_json().as_ptr(), stored.json().as_ptr());
        // Filters, updates and deletes work on the decoded form.
        let only = s.list(&rt.key(), Some("default"), None, None, &|o| {
            o["metadata"]["name"] == "e2"
        });
        assert_eq!(only.items.len(), 1);
        let mut upd = (*created).clone();
        upd["count"] = json!(2);
        s.update(&rt, "default", "e1", upd, UpdateScope::Main, false)
            .unwrap();
        assert_eq!(s.get(&rt.key(), "default", "e1").unwrap()["count"], 2);
        match s
            .delete(&rt, "default", "e1", &DeleteOptions::default())
            .unwrap()
        {
            DeleteOutcome::Deleted(last) => assert_eq!(last["count"], 2),
            other => panic!("{other:?}"),
        }
        assert!(s.get(&rt.key(), "default", "e1").is_none());
    }

    #[test]
    fn listing_through_the_node_index_gives_what_filtering_every_pod_gives() {
        let reg = Registry::with_builtins();
        let rt = reg.get("", "v1", "pods").unwrap();
        let s = Store::new(100);
        let pod = |ns: &str, name: &str, node: &str| json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns}, "spec": {"nodeName": node, "containers": []}});
        for i in 0..30 {
            s.create(
                &rt,
                pod(
                    if i % 2 == 0 { "a" } else { "b" },
                    &format!("p{i:02}"),
                    &format!("n{}", i % 3),
                ),
                false,
            )
            .unwrap();
        }
        s.create(&rt, pod("a", "unbound", ""), false).unwrap();
        let names = |r: &ListResult| {
            r.items
                .iter()
                .map(|o| meta::name(o).to_string())
                .collect::<Vec<_>>()
        };
        let stored_names = |r: &ListResult<Stored>| {
            r.items
                .iter()
                .map(|o| meta::name(&o.object()).to_string())
                .collect::<Vec<_>>()
        };
        let on =
            |node: &'static str| move |o: &Value| meta::str_at(o, "/spec/nodeName") == Some(node);
        for ns in [None, Some("a"), Some("b")] {
            // Whole lists, then pages of 4 followed to the end.
            let scan = s.list(&rt.key(), ns, None, None, &on("n1"));
            let indexed = s.list_stored(&rt.key(), ns, None, None, &on("n1"), Some("n1"));
            assert_eq!(names(&scan), stored_names(&indexed));
            let (mut after, mut paged) = (None, vec![]);
            loop {
                let scan = s.list(&rt.key(), ns, after.as_ref(), Some(4), &on("n1"));
                let page = s.list_stored(
                    &rt.key(),
                    ns,
                    after.as_ref(),
                    Some(4),
                    &on("n1"),
                    Some("n1"),
                );
                assert_eq!(
                    (names(&scan), scan.remaining, scan.continue_after.clone()),
                    (
                        stored_names(&page),
                        page.remaining,
                        page.continue_after.clone()
                    )
                );
                paged.extend(stored_names(&page));
                match page.continue_after {
                    Some(k) => after = Some(k),
                    None => break,
                }
            }
            assert_eq!(paged, names(&s.list(&rt.key(), ns, None, None, &on("n1"))));
        }
        // Moving a pod and deleting one keep the index true.
        let mut moved = (*s.get(&rt.key(), "b", "p01").unwrap()).clone();
        moved["spec"]["nodeName"] = json!("n2");
        s.update(&rt, "b", "p01", moved, UpdateScope::Any, false)
            .unwrap();
        s.delete(
            &rt,
            "a",
            "p04",
            &DeleteOptions {
                grace_period_seconds: Some(0),
                ..Default::default()
            },
        )
        .unwrap();
        for node in ["n0", "n1", "n2"] {
            let filter = move |o: &Value| meta::str_at(o, "/spec/nodeName") == Some(node);
            assert_eq!(
                names(&s.list(&rt.key(), None, None, None, &filter)),
                stored_names(&s.list_stored(&rt.key(), None, None, None, &filter, Some(node)))
            );
        }
        assert!(
            stored_names(&s.list_stored(&rt.key(), None, None, None, &|_| true, Some("n2")))
                .contains(&"p01".to_string())
        );
        assert!(
            !stored_names(&s.list_stored(&rt.key(), None, None, None, &|_| true, Some("n1")))
                .contains(&"p04".to_string())
        );
    }

    #[test]
    fn stale_resource_version_is_a_conflict_and_changes_nothing() {
        let reg = Registry::with_builtins();
        let rt = reg.get("", "v1", "configmaps").unwrap();
        let s = Store::new(100);
        let a = s.create(&rt, cm("a"), false).unwrap();
        let mut upd = (*a).clone();
        upd["data"]["a"] = json!("2");
        let a2 = s
            .update(&rt, "default", "a", upd.clone(), UpdateScope::Main, false)
            .unwrap();
        // `upd` still carries the old resourceVersion.
        upd["data"]["a"] = json!("3");
        let err = s
            .update(&rt, "default", "a", upd, UpdateScope::Main, false)
            .unwrap_err();
        assert_eq!((err.code, err.reason), (409, "Conflict"));
        assert_eq!(s.get(&rt.key(), "default", "a").unwrap()["data"]["a"], "2");
        assert_eq!(
            meta::resource_version(&s.get(&rt.key(), "default", "a").unwrap()),
            meta::resource_version(&a2)
        );
    }

    #[test]
    fn built_in_status_writes_keep_metadata_changes_but_the_reset_fields() {
        let reg = Registry::with_builtins();
        let rt = reg.get("apps", "v1", "deployments").unwrap();
        let s = Store::new(100);
        let d = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "default", "labels": {"l": "1"}}, "spec": {"replicas": 1}});
        let d = s.create(&rt, d, false).unwrap();
        let mut w = (*d).clone();
        w["metadata"]["annotations"] = json!({"a": "b"});
        w["metadata"]["labels"] = json!({"l": "2"});
        w["spec"]["replicas"] = json!(5);
        w["status"] = json!({"replicas": 1});
        let d = s
            .update(&rt, "default", "d", w, UpdateScope::Status, false)
            .unwrap();
        // deploymentStatusStrategy: spec and labels reset, the annotation kept.
        assert_eq!(d["metadata"]["annotations"], json!({"a": "b"}));
        assert_eq!(d["metadata"]["labels"], json!({"l": "1"}));
        assert_eq!(d["spec"]["replicas"], 1);
        assert_eq!(d["status"]["replicas"], 1);
        assert_eq!(d["metadata"]["generation"], 1);
    }

    #[test]
    fn a_deployment_annotation_change_bumps_its_generation_and_a_replica_sets_does_not() {
        let reg = Registry::with_builtins();
        let s = Store::new(100);
        for (plural, kind, bumped) in [
            ("deployments", "Deployment", 2),
            ("replicasets", "ReplicaSet", 1),
        ] {
            let rt = reg.get("apps", "v1", plural).unwrap();
            let o = json!({"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": "d", "namespace": "default"}, "spec": {"replicas": 1}});
            let o = s.create(&rt, o, false).unwrap();
            let mut a = (*o).clone();
            a["metadata"]["annotations"] = json!({"touched": "yes"});
            let o = s
                .update(&rt, "default", "d", a, UpdateScope::Main, false)
                .unwrap();
            assert_eq!(o["metadata"]["generation"], bumped, "{kind}");
            // An empty map is no annotation at all (Semantic.DeepEqual).
            let mut e = (*o).clone();
            e["metadata"]["annotations"] = json!({"touched": "yes"});
            e["metadata"]["labels"] = json!({});
            let o = s
                .update(&rt, "default", "d", e, UpdateScope::Main, false)
                .unwrap();
            assert_eq!(o["metadata"]["generation"], bumped, "{kind}");
        }
    }

    #[test]
    fn a_claims_first_update_writes_even_when_nothing_shown_changes() {
        let reg = Registry::with_builtins();
        let s = Store::new(100);
        for (plural, kind, writes) in [
            ("persistentvolumeclaims", "PersistentVolumeClaim", true),
            ("configmaps", "ConfigMap", false),
        ] {
            let rt = reg.get("", "v1", plural).unwrap();
            let o = json!({"apiVersion": "v1", "kind": kind, "metadata": {"name": "c", "namespace": "default"},
                "status": {"phase": "Pending"}});
            let made = s.create(&rt, o, false).unwrap();
            let same = s
                .update(
                    &rt,
                    "default",
                    "c",
                    (*made).clone(),
                    UpdateScope::Any,
                    false,
                )
                .unwrap();
            assert_eq!(
                meta::resource_version(&same) != meta::resource_version(&made),
                writes,
                "{kind}: the stored encoding lacked the decoded default"
            );
            // The next no-op update is one: the encoding now has it.
            let again = s
                .update(
                    &rt,
                    "default",
                    "c",
                    (*same).clone(),
                    UpdateScope::Any,
                    false,
                )
                .unwrap();
            assert_eq!(
                meta::resource_version(&again),
                meta::resource_version(&same)
            );
        }
    }

    #[test]
    fn generation_bumps_on_spec_changes_only() {
        let reg = Registry::with_builtins();
        let rt = reg.get("apps", "v1", "deployments").unwrap();
        let s = Store::new(100);
        let d = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "default"}, "spec": {"replicas": 1}});
        let d = s.create(&rt, d, false).unwrap();
        assert_eq!(d["metadata"]["generation"], 1);
        let mut lab = (*d).clone();
        lab["metadata"]["labels"] = json!({"x": "y"});
        let d = s
            .update(&rt, "default", "d", lab, UpdateScope::Main, false)
            .unwrap();
        assert_eq!(d["metadata"]["generation"], 1);
        let mut st = (*d).clone();
        st["status"] = json!({"replicas": 1});
        let d = s
            .update(&rt, "default", "d", st, UpdateScope::Status, false)
            .unwrap();
        assert_eq!(d["metadata"]["generation"], 1);
        assert_eq!(d["status"]["replicas"], 1);
        let mut sp = (*d).clone();
        sp["spec"]["replicas"] = json!(3);
        sp["status"] = json!({"replicas": 99});
        let d = s
            .update(&rt, "default", "d", sp, UpdateScope::Main, false)
            .unwrap();
        assert_eq!(d["metadata"]["generation"], 2);
        assert_eq!(
            d["status"]["replicas"], 1,
            "main resource update must not change status"
        );
    }

    #[test]
    fn finalizers_hold_deletion_until_removed() {
        let reg = Registry::with_builtins();
        let rt = reg.get("", "v1", "configmaps").unwrap();
        let s = Store::new(100);
        let mut o = cm("f");
        o["metadata"]["finalizers"] = json!(["example.com/hold"]);
        s.create(&rt, o, false).unwrap();
        let out = s
            .delete(&rt, "default", "f", &DeleteOptions::default())
            .unwrap();
        let DeleteOutcome::Pending(p) = out else {
            panic!("expected pending")
        };
        assert!(meta::is_deleting(&p));
        let mut cleared = (*p).clone();
        cleared["metadata"]["finalizers"] = json!([]);
        s.update(&rt, "default", "f", cleared, UpdateScope::Main, false)
            .unwrap();
        assert!(s.get(&rt.key(), "default", "f").is_none());
    }

    #[test]
    fn watch_replays_from_history_or_expires() {
        let reg = Registry::with_builtins();
        let rt = reg.get("", "v1", "configmaps").unwrap();
        let s = Store::new(3);
        let first = s.create(&rt, cm("a"), false).unwrap();
        let rv0: u64 = meta::resource_version(&first).parse().unwrap();
        for n in ["b", "c", "d", "e"] {
            s.create(&rt, cm(n), false).unwrap();
        }
        let err = s.watch(&rt.key(), Some(rv0), None).err().expect("expired");
        assert_eq!((err.code, err.reason), (410, "Expired"));
        let start = s.watch(&rt.key(), Some(rv0 + 2), None).unwrap();
        let names: Vec<_> = start
            .replay
            .iter()
            .map(|e| meta::name(&e.object).to_string())
            .collect();
        assert_eq!(names, vec!["d", "e"]);
    }

    #[test]
    fn stale_rv_is_just_before_the_latest_change_within_the_window() {
        use std::time::Duration;
        let reg = Registry::with_builtins();
        let rt = reg.get("", "v1", "configmaps").unwrap();
        let s = Store::new(100);
        s.create(&rt, cm("x"), false).unwrap();
        let a = s.create(&rt, cm("a"), false).unwrap();
        let mut changed = (*a).clone();
        changed["data"] = json!({"k": "v"});
        let b = s
            .update(&rt, "default", "a", changed, UpdateScope::Main, false)
            .unwrap();
        let rv_b: u64 = meta::resource_version(&b).parse().unwrap();
        let w = Duration::from_secs(5);
        let key = rt.key();
        assert_eq!(
            s.stale_rv(&key, Some("default"), Some("a"), w),
            Some(rv_b - 1)
        );
        // What the stale read sees: `a` without the update.
        let then = s.snapshot_at(&key, Some("default"), rv_b - 1).unwrap();
        let old = then
            .iter()
            .find(|o| meta::name(&o.object()) == "a")
            .unwrap();
        assert_eq!(old.object()["data"], json!({"a": "1"}));
        // Another object, another resource, or a zero window: nothing to hide.
        assert_eq!(s.stale_rv(&key, Some("other"), Some("a"), w), None);
        assert_eq!(
            s.stale_rv(&key, Some("default"), Some("a"), Duration::ZERO),
            None
        );
        let pods = reg.get("", "v1", "pods").unwrap();
        assert_eq!(s.stale_rv(&pods.key(), None, None, w), None);
    }

    #[test]
    fn noop_update_keeps_resource_version() {
        let reg = Registry::with_builtins();
        let rt = reg.get("", "v1", "configmaps").unwrap();
        let s = Store::new(100);
        let a = s.create(&rt, cm("a"), false).unwrap();
        let b = s
            .update(&rt, "default", "a", (*a).clone(), UpdateScope::Main, false)
            .unwrap();
        assert_eq!(meta::resource_version(&a), meta::resource_version(&b));
    }

    #[test]
    fn scheduled_pods_wait_for_their_grace_period() {
        let reg = Registry::with_builtins();
        let rt = reg.get("", "v1", "pods").unwrap();
        let s = Store::new(100);
        let p = json!({"metadata": {"name": "p", "namespace": "default"}, "spec": {"nodeName": "n1"}, "status": {"phase": "Running"}});
        s.create(&rt, p, false).unwrap();
        let out = s
            .delete(&rt, "default", "p", &DeleteOptions::default())
            .unwrap();
        assert!(
            matches!(out, DeleteOutcome::Pending(ref o) if o["metadata"]["deletionGracePeriodSeconds"] == 30)
        );
        // Its kubelet's status writes while it terminates keep it (no finalizers, but a grace
        // period): only a delete with grace 0 removes it.
        let mut status = (*s.get(&rt.key(), "default", "p").unwrap()).clone();
        status["status"]["phase"] = json!("Failed");
        let written = s
            .update(&rt, "default", "p", status, UpdateScope::Status, false)
            .unwrap();
        assert_eq!(written["status"]["phase"], "Failed");
        assert!(s.get(&rt.key(), "default", "p").is_some());
        let forced = DeleteOptions {
            grace_period_seconds: Some(0),
            ..Default::default()
        };
        assert!(matches!(
            s.delete(&rt, "default", "p", &forced).unwrap(),
            DeleteOutcome::Deleted(_)
        ));
    }
}
