//! Reading objects the way Go's typed printers see them: lenient accessors with zero-value
//! semantics for missing or mistyped fields, timestamps, and the shared formatting helpers
//! (labels, selectors, containers, access modes, quantities).

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};
use serde_json::{Map, Number, Value};

use super::{canonical_quantity, human_duration};

pub(super) fn at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    let mut cur = v;
    for key in path {
        cur = cur.as_object()?.get(*key)?;
    }
    Some(cur)
}

/// A field that is present and not `null` (a non-nil Go pointer).
pub(super) fn present<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    at(v, path).filter(|x| !x.is_null())
}

/// A field holding a JSON object (a non-nil Go pointer to a struct).
pub(super) fn object_at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    at(v, path).filter(|x| x.is_object())
}

pub(super) fn str_at<'a>(v: &'a Value, path: &[&str]) -> &'a str {
    at(v, path).and_then(Value::as_str).unwrap_or("")
}

pub(super) fn opt_str_at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    at(v, path).and_then(Value::as_str)
}

pub(super) fn value_as_int(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                Some(i)
            } else if n.as_u64().is_some() {
                Some(i64::MAX)
            } else {
                n.as_f64().map(|f| f as i64)
            }
        }
        _ => None,
    }
}

pub(super) fn int_at(v: &Value, path: &[&str]) -> i64 {
    at(v, path).and_then(value_as_int).unwrap_or(0)
}

pub(super) fn opt_int_at(v: &Value, path: &[&str]) -> Option<i64> {
    at(v, path).and_then(value_as_int)
}

pub(super) fn bool_at(v: &Value, path: &[&str]) -> bool {
    at(v, path).and_then(Value::as_bool).unwrap_or(false)
}

pub(super) fn opt_bool_at(v: &Value, path: &[&str]) -> Option<bool> {
    at(v, path).and_then(Value::as_bool)
}

pub(super) fn arr_at<'a>(v: &'a Value, path: &[&str]) -> &'a [Value] {
    match at(v, path) {
        Some(Value::Array(a)) => a.as_slice(),
        _ => &[],
    }
}

pub(super) fn map_at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Map<String, Value>> {
    at(v, path).and_then(Value::as_object)
}

pub(super) fn map_len(v: &Value, path: &[&str]) -> usize {
    map_at(v, path).map_or(0, Map::len)
}

pub(super) fn clamp_i32(i: i64) -> i32 {
    i.clamp(i32::MIN as i64, i32::MAX as i64) as i32
}

pub(super) fn name_of(obj: &Value) -> &str {
    str_at(obj, &["metadata", "name"])
}

pub(super) fn annotation<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    map_at(obj, &["metadata", "annotations"])
        .and_then(|m| m.get(key))
        .map(|v| v.as_str().unwrap_or(""))
}

pub(super) fn is_deleting(obj: &Value) -> bool {
    present(obj, &["metadata", "deletionTimestamp"]).is_some()
}

pub(super) fn s(x: &str) -> Value {
    Value::String(x.to_string())
}

pub(super) fn int(i: i64) -> Value {
    Value::from(i)
}

pub(super) fn float(f: f64) -> Value {
    Number::from_f64(f)
        .map(Value::Number)
        .unwrap_or(Value::Null)
}

// ---------------------------------------------------------------------------
// Time helpers
// ---------------------------------------------------------------------------

/// Parse an RFC3339 `metav1.Time` / `metav1.MicroTime`.  Missing, empty,
/// unparsable and Go-zero (`0001-01-01T00:00:00Z`) values are `None`.
pub(super) fn parse_time_value(v: Option<&Value>) -> Option<DateTime<Utc>> {
    let text = v?.as_str()?;
    if text.is_empty() || text == "null" {
        return None;
    }
    let t = crate::timing::parse_time(text)?;
    if is_go_zero_time(&t) {
        None
    } else {
        Some(t)
    }
}

pub(super) fn is_go_zero_time(t: &DateTime<Utc>) -> bool {
    t.timestamp() == GO_ZERO_UNIX && t.timestamp_subsec_nanos() == 0
}

/// Unix seconds of Go's zero `time.Time` (0001-01-01T00:00:00Z).
pub(super) const GO_ZERO_UNIX: i64 = -62_135_596_800;

pub(super) fn time_at(v: &Value, path: &[&str]) -> Option<DateTime<Utc>> {
    parse_time_value(at(v, path))
}

/// `translateTimestampSince`: `<unknown>` for a zero time, else HumanDuration.
pub(super) fn since(t: Option<DateTime<Utc>>, now: DateTime<Utc>) -> String {
    match t {
        None => "<unknown>".to_string(),
        Some(t) => human_duration(now.signed_duration_since(t)),
    }
}

pub(super) fn age(obj: &Value, now: DateTime<Utc>) -> Value {
    Value::String(since(time_at(obj, &["metadata", "creationTimestamp"]), now))
}

// ---------------------------------------------------------------------------
// Shared formatting helpers
// ---------------------------------------------------------------------------

/// `labels.FormatLabels`: sorted `k=v` pairs, `<none>` when empty.
pub(super) fn format_labels(m: Option<&Map<String, Value>>) -> String {
    let mut pairs: Vec<(String, String)> = match m {
        Some(m) => m
            .iter()
            .map(|(k, v)| (k.clone(), plain_string(v)))
            .collect(),
        None => Vec::new(),
    };
    if pairs.is_empty() {
        return "<none>".to_string();
    }
    pairs.sort();
    pairs
        .iter()
        .map(|(k, v)| format!("{}={}", k, v))
        .collect::<Vec<_>>()
        .join(",")
}

pub(super) fn plain_string(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// `metav1.LabelSelectorAsSelector(sel).String()`.  `Err` means the selector
/// is invalid (unknown operator, wrong number of values, empty key).
pub(super) fn label_selector_string(sel: Option<&Value>) -> Result<String, ()> {
    let sel = match sel {
        Some(v @ Value::Object(_)) => v,
        _ => return Ok(String::new()), // nil selector => labels.Nothing()
    };
    let mut reqs: Vec<(String, String)> = Vec::new();
    if let Some(labels) = map_at(sel, &["matchLabels"]) {
        for (k, v) in labels {
            if k.is_empty() {
                return Err(());
            }
            reqs.push((k.clone(), format!("{}={}", k, plain_string(v))));
        }
    }
    for expr in arr_at(sel, &["matchExpressions"]) {
        let key = str_at(expr, &["key"]);
        if key.is_empty() {
            return Err(());
        }
        let mut values: Vec<String> = arr_at(expr, &["values"]).iter().map(plain_string).collect();
        let text = match str_at(expr, &["operator"]) {
            op @ ("In" | "NotIn") => {
                if values.is_empty() {
                    return Err(());
                }
                values.sort();
                let word = if op == "In" { "in" } else { "notin" };
                format!("{} {} ({})", key, word, values.join(","))
            }
            "Exists" => {
                if !values.is_empty() {
                    return Err(());
                }
                key.to_string()
            }
            "DoesNotExist" => {
                if !values.is_empty() {
                    return Err(());
                }
                format!("!{}", key)
            }
            _ => return Err(()),
        };
        reqs.push((key.to_string(), text));
    }
    reqs.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(reqs
        .into_iter()
        .map(|(_, t)| t)
        .collect::<Vec<_>>()
        .join(","))
}

/// `metav1.FormatLabelSelector`: `<none>` when empty, `<error>` when invalid.
pub(super) fn format_label_selector(sel: Option<&Value>) -> String {
    match label_selector_string(sel) {
        Ok(s) if s.is_empty() => "<none>".to_string(),
        Ok(s) => s,
        Err(()) => "<error>".to_string(),
    }
}

/// `layoutContainerCells`: comma-joined container names and images.
pub(super) fn container_cells(containers: &[Value]) -> (String, String) {
    let names: Vec<&str> = containers.iter().map(|c| str_at(c, &["name"])).collect();
    let images: Vec<&str> = containers.iter().map(|c| str_at(c, &["image"])).collect();
    (names.join(","), images.join(","))
}

/// `helper.GetAccessModesAsString`.
pub(super) fn access_modes(modes: &[Value]) -> String {
    let have: BTreeSet<&str> = modes.iter().filter_map(Value::as_str).collect();
    let mut out = Vec::new();
    for (mode, short) in [
        ("ReadWriteOnce", "RWO"),
        ("ReadOnlyMany", "ROX"),
        ("ReadWriteMany", "RWX"),
        ("ReadWriteOncePod", "RWOP"),
    ] {
        if have.contains(mode) {
            out.push(short);
        }
    }
    out.join(",")
}

/// A `resource.Quantity` field printed with `.String()`; a missing quantity is
/// the zero Quantity, which prints `0`.
pub(super) fn quantity_string(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(text)) => canonical_quantity(text).unwrap_or_else(|| text.clone()),
        Some(Value::Number(n)) => {
            let text = n.to_string();
            canonical_quantity(&text).unwrap_or(text)
        }
        _ => "0".to_string(),
    }
}
