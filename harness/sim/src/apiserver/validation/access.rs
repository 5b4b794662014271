//! Reading the decoded (typed-pruned, defaulted) object the rules check, by dotted paths:
//! absent, null and wrongly typed values read as Go's zero values.

use serde_json::{Map, Value};

static EMPTY_ARRAY: Vec<Value> = Vec::new();

/// The value at a dotted path (`spec.template.spec`), `None` when absent or null.
pub fn get<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    let mut cur = v;
    if !path.is_empty() {
        for part in path.split('.') {
            cur = cur.get(part)?;
        }
    }
    (!cur.is_null()).then_some(cur)
}

/// The string at `path`, `""` when absent.
pub fn s<'a>(v: &'a Value, path: &str) -> &'a str {
    get(v, path).and_then(Value::as_str).unwrap_or("")
}

/// The string at `path`, `None` when absent (a Go `*string`).
pub fn opt_s<'a>(v: &'a Value, path: &str) -> Option<&'a str> {
    get(v, path).and_then(Value::as_str)
}

/// The integer at `path`, `None` when absent (a Go `*int32`/`*int64`).
pub fn int(v: &Value, path: &str) -> Option<i64> {
    get(v, path).and_then(Value::as_i64)
}

/// The boolean at `path`, `None` when absent.
pub fn flag(v: &Value, path: &str) -> Option<bool> {
    get(v, path).and_then(Value::as_bool)
}

/// The array at `path`, empty when absent.
pub fn arr<'a>(v: &'a Value, path: &str) -> &'a Vec<Value> {
    get(v, path)
        .and_then(Value::as_array)
        .unwrap_or(&EMPTY_ARRAY)
}

/// The object at `path`, `None` when absent.
pub fn map<'a>(v: &'a Value, path: &str) -> Option<&'a Map<String, Value>> {
    get(v, path).and_then(Value::as_object)
}

/// The string entries of a map (labels, annotations, data), in the order given.
pub fn string_map<'a>(v: &'a Value, path: &str) -> Vec<(&'a str, &'a str)> {
    map(v, path)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.as_str(), v.as_str().unwrap_or("")))
                .collect()
        })
        .unwrap_or_default()
}

/// Whether `path` is set (present and not null).
pub fn has(v: &Value, path: &str) -> bool {
    get(v, path).is_some()
}

/// The value at `path` or JSON null, for immutability comparisons (absent == null).
pub fn or_null<'a>(v: &'a Value, path: &str) -> &'a Value {
    static NULL: Value = Value::Null;
    get(v, path).unwrap_or(&NULL)
}
