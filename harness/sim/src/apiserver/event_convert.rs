//! Conversion between the two served shapes of the one stored Event type:
//! core `v1` Event and `events.k8s.io/v1` Event.
//!
//! This mirrors the apiserver's conversion functions
//! (`Convert_core_Event_To_v1_Event` / `Convert_v1_Event_To_core_Event` in
//! `pkg/apis/events/v1`), which are a plain field-for-field mapping:
//!
//! | core v1             | events.k8s.io/v1          |
//! |---------------------|---------------------------|
//! | involvedObject      | regarding                 |
//! | related             | related                   |
//! | message             | note                      |
//! | source              | deprecatedSource          |
//! | firstTimestamp      | deprecatedFirstTimestamp  |
//! | lastTimestamp       | deprecatedLastTimestamp   |
//! | count               | deprecatedCount           |
//! | reportingComponent  | reportingController       |
//! | reportingInstance, action, eventTime, series, type, reason, metadata | same |
//!
//! The real conversion does not synthesize anything: an Event created
//! through events.k8s.io/v1 (where validation requires the deprecated
//! fields to be unset) shows `source: {}`, `firstTimestamp: null`,
//! `lastTimestamp: null` and no `count` in the core view. The only place the
//! apiserver falls back from `source.component` to `reportingController` is
//! the `source` field selector (see `selectors.rs`).
//!
//! The output is shaped like the apiserver's JSON encoding of the Go
//! structs: keys in struct order, `omitempty` strings and counts left out
//! when empty, time fields that are always encoded rendered as `null` when
//! unset, struct-valued fields (`involvedObject`/`regarding`,
//! `source`/`deprecatedSource`) always present, and unknown fields dropped.
//! `metadata` is copied unchanged.
//!
//! Only `serde_json` and `std` are used.

use serde_json::{Map, Value};

fn get<'a>(obj: &'a Value, key: &str) -> Option<&'a Value> {
    obj.as_object().and_then(|m| m.get(key))
}

/// An `omitempty` scalar: absent when missing, `null`, `""` or `0`.
fn present(v: Option<&Value>) -> Option<Value> {
    match v {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.is_empty() => None,
        Some(Value::Number(n)) if n.as_f64() == Some(0.0) => None,
        Some(v) => Some(v.clone()),
    }
}

/// A `metav1.Time` / `metav1.MicroTime`: encoded as `null` when zero.
fn time_or_null(v: Option<&Value>) -> Value {
    match v {
        None | Some(Value::Null) => Value::Null,
        Some(Value::String(s)) if s.is_empty() => Value::Null,
        Some(v) => v.clone(),
    }
}

/// A non-`omitempty` string (`reportingComponent` / `reportingInstance` in
/// core v1): always encoded, `""` when unset.
fn string_or_empty(v: Option<&Value>) -> Value {
    match v {
        None | Some(Value::Null) => Value::String(String::new()),
        Some(v) => v.clone(),
    }
}

/// A non-`omitempty` int32 (`series.count` in events.k8s.io/v1).
fn int_or_zero(v: Option<&Value>) -> Value {
    match v {
        None | Some(Value::Null) => Value::from(0),
        Some(v) => v.clone(),
    }
}

/// Copy the listed `omitempty` keys of a small struct, in order.
fn struct_of(v: Option<&Value>, keys: &[&str]) -> Value {
    let mut out = Map::new();
    if let Some(Value::Object(m)) = v {
        for k in keys {
            if let Some(x) = present(m.get(*k)) {
                out.insert((*k).to_string(), x);
            }
        }
    }
    Value::Object(out)
}

const OBJECT_REFERENCE_KEYS: &[&str] = &[
    "kind",
    "namespace",
    "name",
    "uid",
    "apiVersion",
    "resourceVersion",
    "fieldPath",
];

const EVENT_SOURCE_KEYS: &[&str] = &["component", "host"];

/// `corev1.ObjectReference` (every field `omitempty`).
fn object_reference(v: Option<&Value>) -> Value {
    struct_of(v, OBJECT_REFERENCE_KEYS)
}

/// `*corev1.ObjectReference`: omitted when nil.
fn optional_object_reference(v: Option<&Value>) -> Option<Value> {
    match v {
        Some(Value::Object(_)) => Some(object_reference(v)),
        _ => None,
    }
}

/// `corev1.EventSource` (`component`, `host`, both `omitempty`).
fn event_source(v: Option<&Value>) -> Value {
    struct_of(v, EVENT_SOURCE_KEYS)
}

fn metadata(ev: &Value) -> Value {
    match get(ev, "metadata") {
        Some(m @ Value::Object(_)) => m.clone(),
        _ => Value::Object(Map::new()),
    }
}

/// core v1 Event JSON -> events.k8s.io/v1 Event JSON.
///
/// `apiVersion`/`kind` are rewritten, `involvedObject` becomes `regarding`,
/// `message` -> `note`, `source` -> `deprecatedSource`, `firstTimestamp` ->
/// `deprecatedFirstTimestamp`, `lastTimestamp` -> `deprecatedLastTimestamp`,
/// `count` -> `deprecatedCount`, `reportingComponent` ->
/// `reportingController`; `related`, `reportingInstance`, `action`,
/// `eventTime`, `series {count, lastObservedTime}`, `type`, `reason` and
/// `metadata` carry over. Never panics: a non-object input yields an empty
/// event.
pub fn core_to_events_v1(core: &Value) -> Value {
    let mut out = Map::new();
    out.insert("kind".into(), Value::from("Event"));
    out.insert("apiVersion".into(), Value::from("events.k8s.io/v1"));
    out.insert("metadata".into(), metadata(core));
    out.insert("eventTime".into(), time_or_null(get(core, "eventTime")));
    if let Some(series @ Value::Object(_)) = get(core, "series") {
        let mut s = Map::new();
        s.insert("count".into(), int_or_zero(get(series, "count")));
        s.insert(
            "lastObservedTime".into(),
            time_or_null(get(series, "lastObservedTime")),
        );
        out.insert("series".into(), Value::Object(s));
    }
    if let Some(v) = present(get(core, "reportingComponent")) {
        out.insert("reportingController".into(), v);
    }
    if let Some(v) = present(get(core, "reportingInstance")) {
        out.insert("reportingInstance".into(), v);
    }
    if let Some(v) = present(get(core, "action")) {
        out.insert("action".into(), v);
    }
    if let Some(v) = present(get(core, "reason")) {
        out.insert("reason".into(), v);
    }
    out.insert(
        "regarding".into(),
        object_reference(get(core, "involvedObject")),
    );
    if let Some(v) = optional_object_reference(get(core, "related")) {
        out.insert("related".into(), v);
    }
    if let Some(v) = present(get(core, "message")) {
        out.insert("note".into(), v);
    }
    if let Some(v) = present(get(core, "type")) {
        out.insert("type".into(), v);
    }
    out.insert("deprecatedSource".into(), event_source(get(core, "source")));
    out.insert(
        "deprecatedFirstTimestamp".into(),
        time_or_null(get(core, "firstTimestamp")),
    );
    out.insert(
        "deprecatedLastTimestamp".into(),
        time_or_null(get(core, "lastTimestamp")),
    );
    if let Some(v) = present(get(core, "count")) {
        out.insert("deprecatedCount".into(), v);
    }
    Value::Object(out)
}

/// events.k8s.io/v1 Event JSON -> core v1 Event JSON (the inverse of
/// [`core_to_events_v1`]).
///
/// Like the real conversion this is a straight mapping: `source` comes from
/// `deprecatedSource` only (`{}` when unset), `count`/`firstTimestamp`/
/// `lastTimestamp` from the `deprecated*` fields only (absent / `null` when
/// unset); `eventTime` and `series` are carried as they are.
/// `reportingComponent` and `reportingInstance` are always present (`""`
/// when unset), as the core v1 type encodes them. Never panics.
pub fn events_v1_to_core(ev: &Value) -> Value {
    let mut out = Map::new();
    out.insert("kind".into(), Value::from("Event"));
    out.insert("apiVersion".into(), Value::from("v1"));
    out.insert("metadata".into(), metadata(ev));
    out.insert(
        "involvedObject".into(),
        object_reference(get(ev, "regarding")),
    );
    if let Some(v) = present(get(ev, "reason")) {
        out.insert("reason".into(), v);
    }
    if let Some(v) = present(get(ev, "note")) {
        out.insert("message".into(), v);
    }
    out.insert("source".into(), event_source(get(ev, "deprecatedSource")));
    out.insert(
        "firstTimestamp".into(),
        time_or_null(get(ev, "deprecatedFirstTimestamp")),
    );
    out.insert(
        "lastTimestamp".into(),
        time_or_null(get(ev, "deprecatedLastTimestamp")),
    );
    if let Some(v) = present(get(ev, "deprecatedCount")) {
        out.insert("count".into(), v);
    }
    if let Some(v) = present(get(ev, "type")) {
        out.insert("type".into(), v);
    }
    out.insert("eventTime".into(), time_or_null(get(ev, "eventTime")));
    if let Some(series @ Value::Object(_)) = get(ev, "series") {
        let mut s = Map::new();
        if let Some(c) = present(get(series, "count")) {
            s.insert("count".into(), c);
        }
        s.insert(
            "lastObservedTime".into(),
            time_or_null(get(series, "lastObservedTime")),
        );
        out.insert("series".into(), Value::Object(s));
    }
    if let Some(v) = present(get(ev, "action")) {
        out.insert("action".into(), v);
    }
    if let Some(v) = optional_object_reference(get(ev, "related")) {
        out.insert("related".into(), v);
    }
    out.insert(
        "reportingComponent".into(),
        string_or_empty(get(ev, "reportingController")),
    );
    out.insert(
        "reportingInstance".into(),
        string_or_empty(get(ev, "reportingInstance")),
    );
    Value::Object(out)
}

/// Canonical core v1 form of a core v1 Event (what a round trip through the
/// apiserver's types yields: known fields only, struct order, empty
/// `omitempty` fields dropped).
pub fn normalize_core(core: &Value) -> Value {
    events_v1_to_core(&core_to_events_v1(core))
}

/// Canonical events.k8s.io/v1 form of an events.k8s.io/v1 Event.
pub fn normalize_events_v1(ev: &Value) -> Value {
    core_to_events_v1(&events_v1_to_core(ev))
}

/// True if the JSON looks like an events.k8s.io Event (by `apiVersion`).
pub fn is_events_api(ev: &Value) -> bool {
    matches!(get(ev, "apiVersion"), Some(Value::String(s)) if s.starts_with("events.k8s.io/"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn kubelet_core_event() -> Value {
        json!({
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                "name": "web-1.17a3c0f2",
                "namespace": "default",
                "uid": "e-uid",
                "resourceVersion": "42",
                "creationTimestamp": "2024-05-01T10:00:00Z"
            },
            "involvedObject": {
                "kind": "Pod",
                "namespace": "default",
                "name": "web-1",
                "uid": "p-uid",
                "apiVersion": "v1",
                "resourceVersion": "7",
                "fieldPath": "spec.containers{web}"
            },
            "reason": "BackOff",
            "message": "Back-off restarting failed container",
            "source": {"component": "kubelet", "host": "worker-04"},
            "firstTimestamp": "2024-05-01T10:00:00Z",
            "lastTimestamp": "2024-05-01T10:05:00Z",
            "count": 6,
            "type": "Warning",
            "eventTime": null,
            "reportingComponent": "kubelet",
            "reportingInstance": "worker-04"
        })
    }

    #[test]
    fn core_to_events_maps_every_field() {
        let ev = core_to_events_v1(&kubelet_core_event());
        assert_eq!(ev["apiVersion"], "events.k8s.io/v1");
        assert_eq!(ev["kind"], "Event");
        assert_eq!(ev["metadata"], kubelet_core_event()["metadata"]);
        assert_eq!(ev["regarding"]["name"], "web-1");
        assert_eq!(ev["regarding"]["fieldPath"], "spec.containers{web}");
        assert_eq!(ev["note"], "Back-off restarting failed container");
        assert_eq!(
            ev["deprecatedSource"],
            json!({"component": "kubelet", "host": "worker-04"})
        );
        assert_eq!(ev["deprecatedFirstTimestamp"], "2024-05-01T10:00:00Z");
        assert_eq!(ev["deprecatedLastTimestamp"], "2024-05-01T10:05:00Z");
        assert_eq!(ev["deprecatedCount"], 6);
        assert_eq!(ev["reportingController"], "kubelet");
        assert_eq!(ev["reportingInstance"], "worker-04");
        assert_eq!(ev["type"], "Warning");
        assert_eq!(ev["reason"], "BackOff");
        assert_eq!(ev["eventTime"], Value::Null);
        for gone in [
            "involvedObject",
            "message",
            "source",
            "firstTimestamp",
            "lastTimestamp",
            "count",
            "reportingComponent",
            "series",
            "related",
            "action",
        ] {
            assert!(ev.get(gone).is_none(), "{} should not be present", gone);
        }
        // Keys come out in Go struct order.
        let keys: Vec<&str> = ev.as_object().unwrap().keys().map(|k| k.as_str()).collect();
        assert_eq!(
            keys,
            vec![
                "kind",
                "apiVersion",
                "metadata",
                "eventTime",
                "reportingController",
                "reportingInstance",
                "reason",
                "regarding",
                "note",
                "type",
                "deprecatedSource",
                "deprecatedFirstTimestamp",
                "deprecatedLastTimestamp",
                "deprecatedCount"
            ]
        );
    }

    #[test]
    fn core_to_events_series_related_action() {
        let mut core = kubelet_core_event();
        core["series"] = json!({"count": 3, "lastObservedTime": "2024-05-01T10:05:00.123456Z"});
        core["related"] = json!({"kind": "Node", "name": "worker-04", "extra": "dropped"});
        core["action"] = json!("Restarting");
        core["eventTime"] = json!("2024-05-01T10:00:00.000001Z");
        let ev = core_to_events_v1(&core);
        assert_eq!(
            ev["series"],
            json!({"count": 3, "lastObservedTime": "2024-05-01T10:05:00.123456Z"})
        );
        assert_eq!(ev["related"], json!({"kind": "Node", "name": "worker-04"}));
        assert_eq!(ev["action"], "Restarting");
        assert_eq!(ev["eventTime"], "2024-05-01T10:00:00.000001Z");
        // events.k8s.io series fields are not omitempty.
        core["series"] = json!({});
        let ev = core_to_events_v1(&core);
        assert_eq!(ev["series"], json!({"count": 0, "lastObservedTime": null}));
    }

    #[test]
    fn events_to_core_is_a_straight_mapping() {
        // What an events.k8s.io/v1 client (client-go's new recorder) creates.
        let ev = json!({
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": "web.17a", "namespace": "default"},
            "eventTime": "2024-05-01T10:00:00.000000Z",
            "series": {"count": 2, "lastObservedTime": "2024-05-01T10:01:00.000000Z"},
            "reportingController": "example.com/web-controller",
            "reportingInstance": "web-controller-7d9f",
            "action": "Scaling",
            "reason": "ScaledUp",
            "regarding": {"kind": "Deployment", "namespace": "default", "name": "web", "apiVersion": "apps/v1"},
            "note": "Scaled up to 3",
            "type": "Normal"
        });
        let core = events_v1_to_core(&ev);
        assert_eq!(core["apiVersion"], "v1");
        assert_eq!(core["kind"], "Event");
        assert_eq!(core["metadata"], ev["metadata"]);
        assert_eq!(
            core["involvedObject"],
            json!({"kind": "Deployment", "namespace": "default", "name": "web", "apiVersion": "apps/v1"})
        );
        assert_eq!(core["message"], "Scaled up to 3");
        assert_eq!(core["reason"], "ScaledUp");
        assert_eq!(core["type"], "Normal");
        assert_eq!(core["action"], "Scaling");
        assert_eq!(core["eventTime"], "2024-05-01T10:00:00.000000Z");
        assert_eq!(
            core["series"],
            json!({"count": 2, "lastObservedTime": "2024-05-01T10:01:00.000000Z"})
        );
        assert_eq!(core["reportingComponent"], "example.com/web-controller");
        assert_eq!(core["reportingInstance"], "web-controller-7d9f");
        // The real conversion does not synthesize the deprecated fields.
        assert_eq!(core["source"], json!({}));
        assert_eq!(core["firstTimestamp"], Value::Null);
        assert_eq!(core["lastTimestamp"], Value::Null);
        assert!(core.get("count").is_none());
        assert!(core.get("related").is_none());
        let keys: Vec<&str> = core
            .as_object()
            .unwrap()
            .keys()
            .map(|k| k.as_str())
            .collect();
        assert_eq!(
            keys,
            vec![
                "kind",
                "apiVersion",
                "metadata",
                "involvedObject",
                "reason",
                "message",
                "source",
                "firstTimestamp",
                "lastTimestamp",
                "type",
                "eventTime",
                "series",
                "action",
                "reportingComponent",
                "reportingInstance"
            ]
        );
    }

    #[test]
    fn events_to_core_with_deprecated_fields() {
        let ev = json!({
            "apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": "x", "namespace": "ns"},
            "regarding": {"kind": "Pod", "name": "p"},
            "deprecatedSource": {"component": "kubelet", "host": "n1"},
            "deprecatedFirstTimestamp": "2024-05-01T10:00:00Z",
            "deprecatedLastTimestamp": "2024-05-01T10:02:00Z",
            "deprecatedCount": 4,
            "series": {"count": 0}
        });
        let core = events_v1_to_core(&ev);
        assert_eq!(
            core["source"],
            json!({"component": "kubelet", "host": "n1"})
        );
        assert_eq!(core["firstTimestamp"], "2024-05-01T10:00:00Z");
        assert_eq!(core["lastTimestamp"], "2024-05-01T10:02:00Z");
        assert_eq!(core["count"], 4);
        assert_eq!(core["eventTime"], Value::Null);
        // core series.count is omitempty, lastObservedTime encodes as null.
        assert_eq!(core["series"], json!({"lastObservedTime": null}));
        assert_eq!(core["reportingComponent"], "");
        assert_eq!(core["reportingInstance"], "");
    }

    #[test]
    fn round_trips() {
        let mut core = kubelet_core_event();
        core["series"] = json!({"count": 3, "lastObservedTime": "2024-05-01T10:05:00.000000Z"});
        core["related"] = json!({"kind": "Node", "name": "worker-04"});
        core["action"] = json!("Pulling");
        let back = events_v1_to_core(&core_to_events_v1(&core));
        // Every field the source had comes back with the same value.
        for (k, v) in core.as_object().unwrap() {
            assert_eq!(&back[k.as_str()], v, "field {}", k);
        }
        assert_eq!(normalize_core(&back), back);

        let ev = core_to_events_v1(&core);
        assert_eq!(core_to_events_v1(&events_v1_to_core(&ev)), ev);
        assert_eq!(normalize_events_v1(&ev), ev);

        // A minimal events.k8s.io event round-trips too.
        let ev = json!({
            "apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": "e", "namespace": "d"},
            "eventTime": "2024-05-01T10:00:00.000000Z",
            "reportingController": "c", "reportingInstance": "i", "action": "A", "reason": "R",
            "regarding": {"kind": "Pod", "name": "p"}, "note": "n", "type": "Normal"
        });
        let canonical = normalize_events_v1(&ev);
        for (k, v) in ev.as_object().unwrap() {
            assert_eq!(&canonical[k.as_str()], v, "field {}", k);
        }
        assert_eq!(canonical["deprecatedSource"], json!({}));
        assert_eq!(canonical["deprecatedFirstTimestamp"], Value::Null);
        assert_eq!(core_to_events_v1(&events_v1_to_core(&canonical)), canonical);
    }

    #[test]
    fn empty_values_are_omitted_and_unknown_fields_dropped() {
        let core = json!({
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": "e"},
            "involvedObject": {"kind": "Pod", "name": "", "uid": null},
            "reason": "", "message": "", "count": 0, "type": "",
            "source": {"component": "", "host": "h"},
            "firstTimestamp": "", "status": {"bogus": true}
        });
        let ev = core_to_events_v1(&core);
        assert_eq!(ev["regarding"], json!({"kind": "Pod"}));
        assert_eq!(ev["deprecatedSource"], json!({"host": "h"}));
        assert_eq!(ev["deprecatedFirstTimestamp"], Value::Null);
        for gone in [
            "reason",
            "note",
            "deprecatedCount",
            "type",
            "status",
            "reportingController",
            "reportingInstance",
        ] {
            assert!(ev.get(gone).is_none(), "{}", gone);
        }
    }

    #[test]
    fn odd_inputs_do_not_panic() {
        for v in [
            Value::Null,
            json!(1),
            json!("x"),
            json!([]),
            json!({}),
            json!({"metadata": 5, "involvedObject": [], "series": 3, "related": "r", "source": 1}),
            json!({"regarding": null, "series": null, "related": null, "deprecatedSource": []}),
        ] {
            let a = core_to_events_v1(&v);
            let b = events_v1_to_core(&v);
            assert_eq!(a["kind"], "Event");
            assert_eq!(b["apiVersion"], "v1");
            assert!(a["metadata"].is_object());
            assert!(b["involvedObject"].is_object());
            assert!(a["regarding"].is_object());
            let _ = normalize_core(&v);
            let _ = normalize_events_v1(&v);
        }
        assert!(is_events_api(&json!({"apiVersion": "events.k8s.io/v1"})));
        assert!(!is_events_api(&json!({"apiVersion": "v1"})));
        assert!(!is_events_api(&Value::Null));
    }
}
