//! Watch: newline-delimited `{"type","object"}` events, resumable from a resourceVersion,
//! with bookmarks, `sendInitialEvents` (the watch-list protocol client-go 1.35+ uses),
//! `timeoutSeconds`, selectors applied across changes (an object leaving a selector is DELETED
//! for that watcher), and 410 Expired ERROR events when history no longer reaches back.

use super::negotiate::Output;
use super::route::is_true;
use super::{partial_metadata, printer_for};
use crate::apiserver::meta;
use crate::apiserver::resources::{self, ResourceType};
use crate::apiserver::selectors::{FieldSelector, LabelSelector};
use crate::apiserver::status::{ApiError, ApiResult};
use crate::apiserver::store::{EventType, StoreEvent, Stored};
use crate::apiserver::table;
use crate::apiserver::ApiServer;
use axum::body::Body;
use axum::http::{header, StatusCode};
use axum::response::Response;
use bytes::Bytes;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::mpsc;

/// How often an idle watch with `allowWatchBookmarks` gets a BOOKMARK (the real server: ~1 min).
pub const BOOKMARK_INTERVAL: Duration = Duration::from_secs(5);

struct Filter {
    ns: Option<String>,
    name: Option<String>,
    labels: LabelSelector,
    fields: FieldSelector,
    group: String,
    kind: String,
}

impl Filter {
    fn matches(&self, obj: &Value) -> bool {
        if let Some(ns) = &self.ns {
            if meta::namespace(obj) != ns {
                return false;
            }
        }
        if let Some(n) = &self.name {
            if meta::name(obj) != n {
                return false;
            }
        }
        self.labels.matches(meta::labels(obj)) && self.fields.matches(&self.group, &self.kind, obj)
    }
}

struct Encoder {
    rt: Arc<ResourceType>,
    /// The cluster's clock (tables print ages).
    clock: crate::timing::SimClock,
    out: Output,
    printer: Option<table::Printer>,
    headers_sent: bool,
}

impl Encoder {
    fn object(&mut self, obj: &Value) -> Value {
        match self.out {
            Output::Table(version) => {
                let printer = self.printer.get_or_insert_with(|| printer_for(&self.rt));
                let mut t = table::to_table(
                    printer,
                    &[obj],
                    meta::resource_version(obj),
                    "Metadata",
                    !self.headers_sent,
                    self.clock.now(),
                );
                self.headers_sent = true;
                table::set_version(&mut t, version);
                t
            }
            Output::PartialMetadata { .. } => partial_metadata(obj),
            _ => obj.clone(),
        }
    }
    /// The line of a store event: its shared JSON encoding when this watcher serves the stored
    /// object as it is (plain JSON, same version), else encoded for this watcher.
    fn event_line(&mut self, event_type: &str, obj: &Arc<Value>, ev: &StoreEvent) -> Bytes {
        self.stored_line(event_type, obj, &ev.object, ev.stored())
    }
    /// `event_line` for an object served as `obj`, read from `source` whose stored form (and
    /// encoding) is `stored`.
    fn stored_line(
        &mut self,
        event_type: &str,
        obj: &Arc<Value>,
        source: &Arc<Value>,
        stored: &Stored,
    ) -> Bytes {
        if self.out != Output::Json || !Arc::ptr_eq(obj, source) {
            // Events carry the object as the store keeps it: its managedFields come back here.
            return self.line(event_type, &stored.with_managed_fields(obj));
        }
        let body = stored.json();
        let mut b = Vec::with_capacity(body.len() + event_type.len() + 24);
        b.extend_from_slice(br#"{"type":""#);
        b.extend_from_slice(event_type.as_bytes());
        b.extend_from_slice(br#"","object":"#);
        b.extend_from_slice(body);
        b.extend_from_slice(b"}\n");
        Bytes::from(b)
    }
    fn line(&mut self, event_type: &str, obj: &Value) -> Bytes {
        let object = if event_type == "BOOKMARK" || event_type == "ERROR" {
            obj.clone()
        } else {
            self.object(obj)
        };
        let mut b =
            serde_json::to_vec(&json!({"type": event_type, "object": object})).unwrap_or_default();
        b.push(b'\n');
        Bytes::from(b)
    }
    fn bookmark(&mut self, rv: u64, initial_end: bool) -> Bytes {
        let mut md = json!({"resourceVersion": rv.to_string()});
        if initial_end {
            md["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        let obj = bookmark_object(&self.rt.kind, &self.rt.api_version(), md);
        self.line("BOOKMARK", &obj)
    }
}

/// A BOOKMARK's object: the watch cache's `newFunc()`, an empty object of the internal type,
/// converted to the watched version and encoded as Go does (staging/src/k8s.io/apiserver/pkg/
/// storage/cacher/cacher.go): every member Go writes for a zero value is there (a
/// Deployment's `spec.template.spec.containers: null`, `status: {}`), and the workloads'
/// `spec.replicas`, a value in the internal type and a pointer in apps/v1 and core/v1, is 0
/// (`Convert_int32_To_Pointer_int32`).
fn bookmark_object(kind: &str, api_version: &str, metadata: Value) -> Value {
    let mut obj = json!({"kind": kind, "apiVersion": api_version, "metadata": metadata});
    crate::apiserver::patch::smd::goencoding::round_trip(api_version, kind, &mut obj, true);
    let scaled = matches!(
        (api_version, kind),
        ("apps/v1", "Deployment" | "ReplicaSet" | "StatefulSet") | ("v1", "ReplicationController")
    );
    if scaled {
        if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
            spec.insert("replicas".into(), json!(0));
        }
    }
    obj
}

/// Translate a store event into what this watcher sees, given its filter.
fn view(
    ev: &StoreEvent,
    filter: &Filter,
    api: &ApiServer,
    rt: &ResourceType,
) -> Option<(&'static str, Arc<Value>)> {
    let now = api.convert_out_shared(rt, ev.object.clone());
    let prev = ev
        .prev
        .as_ref()
        .map(|p| api.convert_out_shared(rt, p.clone()));
    let now_in = filter.matches(&now);
    let prev_in = prev.as_ref().map(|p| filter.matches(p)).unwrap_or(false);
    match ev.event_type {
        EventType::Added if now_in => Some(("ADDED", now)),
        EventType::Modified if now_in && prev_in => Some(("MODIFIED", now)),
        EventType::Modified if now_in => Some(("ADDED", now)),
        EventType::Modified if prev_in => Some(("DELETED", now)),
        EventType::Deleted if now_in || prev_in => Some(("DELETED", now)),
        _ => None,
    }
}

pub fn serve(
    api: Arc<ApiServer>,
    rt: Arc<ResourceType>,
    ns: Option<String>,
    query: &HashMap<String, String>,
    out: Output,
    name: Option<String>,
    trace: Option<super::trace::Tracer>,
) -> ApiResult<Response> {
    let labels = match query.get("labelSelector") {
        Some(s) if !s.is_empty() => LabelSelector::parse(s).map_err(ApiError::bad_request)?,
        _ => LabelSelector::everything(),
    };
    let fields = match query.get("fieldSelector") {
        Some(s) if !s.is_empty() => FieldSelector::parse(s).map_err(ApiError::bad_request)?,
        _ => FieldSelector::everything(),
    };
    fields
        .validate(&rt.group, &rt.kind, rt.namespaced, &rt.selectable_fields)
        .map_err(ApiError::bad_request)?;
    let bookmarks = is_true(query.get("allowWatchBookmarks"));
    let send_initial = is_true(query.get("sendInitialEvents"));
    crate::apiserver::validation::options::validate_watch_options(query)?;
    let rv_param = query
        .get("resourceVersion")
        .map(String::as_str)
        .unwrap_or("");
    let from_rv = if send_initial || rv_param.is_empty() || rv_param == "0" {
        None
    } else {
        Some(rv_param.parse::<u64>().map_err(|_| {
            ApiError::bad_request(format!("invalid resource version: {:?}", rv_param))
        })?)
    };
    let timeout = query
        .get("timeoutSeconds")
        .and_then(|t| t.parse::<u64>().ok())
        .filter(|t| *t > 0)
        .map(Duration::from_secs);
    let key = resources::storage_key(&rt.group, &rt.plural);
    let filter = Filter {
        ns: ns.clone(),
        name,
        labels,
        fields,
        group: rt.group.clone(),
        kind: rt.kind.clone(),
    };
    let start = match api.store.watch(
        &key,
        from_rv,
        if rt.namespaced { ns.as_deref() } else { None },
    ) {
        Ok(s) => s,
        // Too old: the apiserver answers 200 and then a single ERROR event, which clients expect.
        Err(e) if e.code == 410 => {
            let mut enc = Encoder {
                rt: rt.clone(),
                clock: api.clock().clone(),
                out,
                printer: None,
                headers_sent: false,
            };
            let line = enc.line("ERROR", &e.to_status());
            return Ok(stream_response(futures::stream::once(async move {
                Ok::<Bytes, Infallible>(line)
            })));
        }
        Err(e) => return Err(e),
    };
    let (tx, rx) = mpsc::channel::<Bytes>(1024);
    let enc = Encoder {
        rt: rt.clone(),
        clock: api.clock().clone(),
        out,
        printer: None,
        headers_sent: false,
    };
    tokio::spawn(run(
        api,
        rt,
        filter,
        start,
        enc,
        tx,
        bookmarks,
        send_initial,
        timeout,
        trace,
    ));
    Ok(stream_response(
        tokio_stream::wrappers::ReceiverStream::new(rx).map_ok(),
    ))
}

/// `Ok` as a function pointer, for a nameable stream type.
type OkBytes = fn(Bytes) -> Result<Bytes, Infallible>;

trait MapOk: Sized {
    fn map_ok(self) -> futures::stream::Map<Self, OkBytes>;
}
impl<S: futures::Stream<Item = Bytes>> MapOk for S {
    fn map_ok(self) -> futures::stream::Map<Self, OkBytes> {
        futures::StreamExt::map(self, Ok as OkBytes)
    }
}

fn stream_response<S>(s: S) -> Response
where
    S: futures::Stream<Item = Result<Bytes, Infallible>> + Send + 'static,
{
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::CACHE_CONTROL, "no-cache, private")
        .body(Body::from_stream(s))
        .expect("static response parts")
}

#[allow(clippy::too_many_arguments)]
async fn run(
    api: Arc<ApiServer>,
    rt: Arc<ResourceType>,
    filter: Filter,
    start: crate::apiserver::store::WatchStart,
    mut enc: Encoder,
    tx: mpsc::Sender<Bytes>,
    bookmarks: bool,
    send_initial: bool,
    timeout: Option<Duration>,
    trace: Option<super::trace::Tracer>,
) {
    // Every event this watch delivers to a traced client goes into its trace; one a relist is
    // armed for is not delivered: the watch ends with 410 Expired instead (`true`).
    let note = |t: &str, o: &Value| -> bool {
        let Some(tr) = &trace else { return false };
        tr.record_event(super::trace::TraceKind::WatchEvent {
            resource: rt.plural.clone(),
            event: t.to_string(),
            namespace: Some(meta::namespace(o).to_string()).filter(|n| !n.is_empty()),
            name: meta::name(o).to_string(),
            resource_version: meta::resource_version(o).to_string(),
            ordinal: None,
            withheld: false,
        })
    };
    let expired = || {
        ApiError::gone(
            "too old resource version: the watch was closed to force a relist (faultline explore)",
        )
        .to_status()
    };
    let crate::apiserver::store::WatchStart {
        replay,
        snapshot,
        snapshot_rv,
        mut rx,
    } = start;
    let deadline = timeout.map(|t| tokio::time::Instant::now() + t);
    let mut consumed_rv = snapshot_rv;
    for stored in &snapshot {
        let source = stored.kept();
        let o = api.convert_out_shared(&rt, source.clone());
        if !filter.matches(&o) {
            continue;
        }
        if note("ADDED", &o) {
            let _ = tx.send(enc.line("ERROR", &expired())).await;
            return;
        }
        if tx
            .send(enc.stored_line("ADDED", &o, &source, stored))
            .await
            .is_err()
        {
            return;
        }
    }
    // The end of the initial events is a bookmark: sent only to a client that takes bookmarks.
    if send_initial && bookmarks && tx.send(enc.bookmark(snapshot_rv, true)).await.is_err() {
        return;
    }
    if !replay.is_empty() {
        consumed_rv = 0;
    }
    for ev in &replay {
        consumed_rv = consumed_rv.max(ev.rv);
        if let Some((t, o)) = view(ev, &filter, &api, &rt) {
            if note(t, &o) {
                let _ = tx.send(enc.line("ERROR", &expired())).await;
                return;
            }
            if tx.send(enc.event_line(t, &o, ev)).await.is_err() {
                return;
            }
        }
    }
    // Live events at or below what the replay or snapshot covered were already delivered.
    let floor = consumed_rv.max(snapshot_rv);
    let key = resources::storage_key(&rt.group, &rt.plural);
    let mut ticker = tokio::time::interval(BOOKMARK_INTERVAL);
    ticker.tick().await;
    loop {
        let sleep_until =
            deadline.unwrap_or_else(|| tokio::time::Instant::now() + Duration::from_secs(86400));
        tokio::select! {
            _ = tx.closed() => return,
            _ = tokio::time::sleep_until(sleep_until) => return,
            _ = ticker.tick(), if bookmarks => {
                let sent = api.store.last_sent_rv();
                if rx.is_empty() {
                    consumed_rv = consumed_rv.max(sent).max(floor);
                    if tx.send(enc.bookmark(consumed_rv, false)).await.is_err() {
                        return;
                    }
                }
            }
            r = rx.recv() => match r {
                Ok(ev) => {
                    if ev.rv <= floor || ev.key != key {
                        consumed_rv = consumed_rv.max(ev.rv);
                        continue;
                    }
                    consumed_rv = consumed_rv.max(ev.rv);
                    if let Some((t, o)) = view(&ev, &filter, &api, &rt) {
                        if note(t, &o) {
                            let _ = tx.send(enc.line("ERROR", &expired())).await;
                            return;
                        }
                        if tx.send(enc.event_line(t, &o, &ev)).await.is_err() {
                            return;
                        }
                    }
                }
                Err(RecvError::Lagged(_)) => {
                    // This watcher fell behind the live buffer: it catches up from the watch
                    // history, as a client re-watching from its last resourceVersion would, and
                    // must relist (410) only when the history no longer reaches back that far.
                    let ns = if rt.namespaced { filter.ns.as_deref() } else { None };
                    match api.store.watch(&key, Some(consumed_rv), ns) {
                        Ok(again) => {
                            rx = again.rx;
                            for ev in &again.replay {
                                consumed_rv = consumed_rv.max(ev.rv);
                                if let Some((t, o)) = view(ev, &filter, &api, &rt) {
                                    if note(t, &o) {
                                        let _ = tx.send(enc.line("ERROR", &expired())).await;
                                        return;
                                    }
                                    if tx.send(enc.event_line(t, &o, ev)).await.is_err() {
                                        return;
                                    }
                                }
                            }
                            consumed_rv = consumed_rv.max(again.snapshot_rv);
                        }
                        Err(e) => {
                            let _ = tx.send(enc.line("ERROR", &e.to_status())).await;
                            return;
                        }
                    }
                }
                Err(RecvError::Closed) => return,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_bookmark_carries_the_empty_object_of_its_type() {
        let md = serde_json::json!({"resourceVersion": "5"});
        assert_eq!(
            super::bookmark_object("Deployment", "apps/v1", md.clone()),
            serde_json::json!({"kind": "Deployment", "apiVersion": "apps/v1", "metadata": {"resourceVersion": "5"},
                "spec": {"replicas": 0, "selector": null, "template": {"metadata": {}, "spec": {"containers": null}},
                         "strategy": {}}, "status": {}})
        );
        assert_eq!(
            super::bookmark_object("ConfigMap", "v1", md.clone()),
            serde_json::json!({"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"resourceVersion": "5"}})
        );
    }

    use super::*;
    use crate::apiserver::resources::{Registry, ResourceKey};

    #[test]
    fn shared_event_encoding_is_byte_identical_to_per_watcher_encoding() {
        let reg = Registry::with_builtins();
        let rt = reg.get("", "v1", "configmaps").unwrap();
        let obj = Arc::new(
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "d", "resourceVersion": "7"}, "data": {"k": "v \"quoted\" \u{e9}"}}),
        );
        let ev = StoreEvent::new(
            7,
            ResourceKey::new("", "configmaps"),
            EventType::Modified,
            obj.clone(),
            None,
        );
        let mut enc = Encoder {
            rt: rt.clone(),
            clock: crate::timing::SimClock::new(),
            out: Output::Json,
            printer: None,
            headers_sent: false,
        };
        let shared = enc.event_line("MODIFIED", &obj, &ev);
        assert_eq!(shared, enc.line("MODIFIED", &obj));
        // A converted (different) object is encoded for the watcher, not taken from the cache.
        let other =
            Arc::new(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}}));
        assert_eq!(
            enc.event_line("ADDED", &other, &ev),
            enc.line("ADDED", &other)
        );
        // Table output never uses the JSON cache.
        let mut table = Encoder {
            rt,
            clock: crate::timing::SimClock::new(),
            out: Output::Table("v1"),
            printer: None,
            headers_sent: false,
        };
        assert!(
            !String::from_utf8_lossy(&table.event_line("ADDED", &obj, &ev))
                .starts_with(r#"{"type":"ADDED","object":{"apiVersion":"v1","kind":"ConfigMap""#)
        );
    }
}
