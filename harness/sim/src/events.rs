//! Kubernetes Events as components emit them: core/v1 Events with the client-go recorder's
//! naming (`<object>.<hex nanoseconds>`) and aggregation (a repeat of the same reason and
//! message for the same object bumps `count` and `lastTimestamp` instead of a new Event).

use crate::apiserver::meta;
use crate::internal::Internal;
use crate::timing;
use hashlink::LruCache;
use parking_lot::Mutex;
use serde_json::{json, Value};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    Normal,
    Warning,
}

impl EventKind {
    fn as_str(&self) -> &'static str {
        match self {
            EventKind::Normal => "Normal",
            EventKind::Warning => "Warning",
        }
    }
}

pub struct EventRecorder {
    client: Internal,
    component: String,
    host: Option<String>,
    /// (involved uid, reason, message) -> (namespace, event name) for aggregation; an LRU of
    /// client-go's size, so a recorder's memory stays bounded however many objects it names.
    seen: Mutex<Correlations>,
}

/// (involved uid, reason, message) -> (namespace, event name).
type Correlations = LruCache<(String, String, String), (String, String)>;

/// client-go's `maxLruCacheEntries` of the event correlator.
const LRU_ENTRIES: usize = 4096;

impl EventRecorder {
    pub fn new(client: Internal, component: &str, host: Option<&str>) -> Self {
        EventRecorder {
            client,
            component: component.into(),
            host: host.map(String::from),
            seen: Mutex::new(LruCache::new(LRU_ENTRIES)),
        }
    }

    /// Record an event about `obj` (any object with apiVersion/kind/metadata).
    pub fn record(&self, obj: &Value, kind: EventKind, reason: &str, message: &str) {
        self.record_at(obj, None, kind, reason, message)
    }

    /// `field_path` names a container, e.g. `spec.containers{workspace}`, as the kubelet does.
    pub fn record_at(
        &self,
        obj: &Value,
        field_path: Option<&str>,
        kind: EventKind,
        reason: &str,
        message: &str,
    ) {
        let ns = match meta::namespace(obj) {
            "" => "default".to_string(),
            n => n.to_string(),
        };
        let uid = meta::uid(obj).to_string();
        let at = self.client.clock().now();
        let now = timing::rfc3339(at);
        let key = (
            format!("{}{}", uid, field_path.unwrap_or("")),
            reason.to_string(),
            message.to_string(),
        );
        let existing = self.seen.lock().get(&key).cloned();
        if let Some((ens, ename)) = existing {
            if let Some(ev) = self.client.get("", "events", &ens, &ename) {
                let count = ev.get("count").and_then(Value::as_i64).unwrap_or(1) + 1;
                if self
                    .client
                    .merge(
                        "",
                        "events",
                        &ens,
                        &ename,
                        &json!({"count": count, "lastTimestamp": now}),
                    )
                    .is_ok()
                {
                    return;
                }
            }
        }
        let nanos = at.timestamp_nanos_opt().unwrap_or(0);
        let name = format!("{}.{:x}", meta::name(obj), nanos);
        let mut involved = json!({
            "kind": obj.get("kind").cloned().unwrap_or(Value::Null),
            "namespace": meta::namespace(obj),
            "name": meta::name(obj),
            "uid": uid,
            "apiVersion": obj.get("apiVersion").cloned().unwrap_or(Value::Null),
            "resourceVersion": meta::resource_version(obj),
        });
        if let Some(fp) = field_path {
            involved["fieldPath"] = json!(fp);
        }
        let mut source = json!({"component": self.component});
        if let Some(h) = &self.host {
            source["host"] = json!(h);
        }
        let ev = json!({
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": name, "namespace": ns},
            "involvedObject": involved,
            "reason": reason, "message": message, "type": kind.as_str(),
            "source": source,
            "firstTimestamp": now, "lastTimestamp": now, "count": 1,
            "eventTime": null,
            "reportingComponent": self.component,
            "reportingInstance": self.host.clone().unwrap_or_default(),
        });
        if self.client.create("", "events", &ns, ev).is_ok() {
            self.seen.lock().insert(key, (ns, name));
        }
    }
}
