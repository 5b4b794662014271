//! RFC 6902 JSON patch with the behaviour of evanphx/json-patch v4, the
//! library behind the apiserver's `application/json-patch+json` handling.
//!
//! The `json_patch` crate implements the RFC strictly; the apiserver does
//! not (see the quirks listed on [`super::json_patch`]), and clients see its
//! error strings, so the operations are implemented here directly.

use super::PatchError;
use serde_json::{Map, Value};

/// Go's name for the JSON type that failed to unmarshal, as used in
/// `encoding/json` error messages.
fn go_json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Decodes and applies `patch`: a patch that does not decode (`jsonpatch.DecodePatch`) is
/// `PatchError::BadRequest`, one that fails to apply `PatchError::Rejected`.
pub(super) fn apply(original: &Value, patch: &Value) -> Result<Value, PatchError> {
    let ops = match patch {
        // Decoding `null` yields an empty patch.
        Value::Null => return Ok(original.clone()),
        Value::Array(ops) => ops,
        other => {
            return Err(PatchError::BadRequest(format!(
                "json: cannot unmarshal {} into Go value of type jsonpatch.Patch",
                go_json_kind(other)
            )))
        }
    };
    // The whole patch is decoded before anything is applied.
    let empty = Map::new();
    let mut decoded = Vec::with_capacity(ops.len());
    for op in ops {
        match op {
            Value::Object(m) => decoded.push(m),
            // A null operation decodes to an empty one, whose kind is "unknown".
            Value::Null => decoded.push(&empty),
            other => {
                return Err(PatchError::BadRequest(format!(
                    "json: cannot unmarshal {} into Go value of type jsonpatch.Operation",
                    go_json_kind(other)
                )))
            }
        }
    }
    let mut doc = original.clone();
    for op in decoded {
        apply_op(&mut doc, op).map_err(PatchError::Rejected)?;
    }
    Ok(doc)
}

const MISSING: &str = "missing value";

/// A string member of an operation (`path` / `from`), with Go's errors.
fn string_member(op: &Map<String, Value>, name: &str) -> Result<String, String> {
    match op.get(name) {
        None | Some(Value::Null) => Err(if name == "path" {
            format!("operation missing path field: {MISSING}")
        } else {
            format!("operation, missing {name} field: {MISSING}")
        }),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(format!(
            "json: cannot unmarshal {} into Go value of type string",
            go_json_kind(other)
        )),
    }
}

fn apply_op(doc: &mut Value, op: &Map<String, Value>) -> Result<(), String> {
    let kind = op.get("op").and_then(Value::as_str).unwrap_or("unknown");
    // A missing "value" decodes to nil, which serializes as null.
    let value = op.get("value").cloned().unwrap_or(Value::Null);
    match kind {
        "add" => {
            let path = string_member(op, "path")
                .map_err(|_| format!("add operation failed to decode path: {MISSING}"))?;
            let (con, key) = find_container(doc, &path).ok_or_else(|| {
                format!("add operation does not apply: doc is missing path: \"{path}\": {MISSING}")
            })?;
            container_add(con, &key, value)
                .map_err(|e| format!("error in add for path: '{path}': {e}"))
        }
        "remove" => {
            let path = string_member(op, "path")
                .map_err(|_| format!("remove operation failed to decode path: {MISSING}"))?;
            let (con, key) = find_container(doc, &path).ok_or_else(|| {
                format!(
                    "remove operation does not apply: doc is missing path: \"{path}\": {MISSING}"
                )
            })?;
            container_remove(con, &key)
                .map(drop)
                .map_err(|e| format!("error in remove for path: '{path}': {e}"))
        }
        "replace" => {
            let path = string_member(op, "path")
                .map_err(|e| format!("replace operation failed to decode path: {e}"))?;
            let (con, key) = find_container(doc, &path).ok_or_else(|| {
                format!("replace operation does not apply: doc is missing path: {path}: {MISSING}")
            })?;
            if container_get(con, &key).is_err() {
                return Err(format!(
                    "replace operation does not apply: doc is missing key: {path}: {MISSING}"
                ));
            }
            // (sic: the library reports replace failures as "remove")
            container_set(con, &key, value)
                .map_err(|e| format!("error in remove for path: '{path}': {e}"))
        }
        "move" => {
            let from = string_member(op, "from")
                .map_err(|e| format!("move operation failed to decode from: {e}"))?;
            let (con, key) = find_container(doc, &from).ok_or_else(|| {
                format!(
                    "move operation does not apply: doc is missing from path: {from}: {MISSING}"
                )
            })?;
            container_get(con, &key)
                .map_err(|e| format!("error in move for path: '{key}': {e}"))?;
            let moved = container_remove(con, &key)
                .map_err(|e| format!("error in move for path: '{key}': {e}"))?;
            let path = string_member(op, "path")
                .map_err(|e| format!("move operation failed to decode path: {e}"))?;
            let (con, key) = find_container(doc, &path).ok_or_else(|| {
                format!("move operation does not apply: doc is missing destination path: {path}: {MISSING}")
            })?;
            container_add(con, &key, moved)
                .map_err(|e| format!("error in move for path: '{path}': {e}"))
        }
        "test" => {
            let path = string_member(op, "path")
                .map_err(|e| format!("test operation failed to decode path: {e}"))?;
            let (con, key) = find_container(doc, &path).ok_or_else(|| {
                format!("test operation does not apply: is missing path: {path}: {MISSING}")
            })?;
            let actual = container_get(con, &key)
                .map_err(|e| format!("error in test for path: '{path}': {e}"))?;
            let expected = op.get("value");
            let ok = match (actual, expected) {
                // A missing (or null) member only matches an explicit null.
                (None, Some(Value::Null)) => true,
                (Some(a), Some(e)) => a == e,
                _ => false,
            };
            if ok {
                Ok(())
            } else {
                Err(format!("testing value {path} failed: test failed"))
            }
        }
        "copy" => {
            let from = string_member(op, "from")
                .map_err(|e| format!("copy operation failed to decode from: {e}"))?;
            let (con, key) = find_container(doc, &from).ok_or_else(|| {
                format!(
                    "copy operation does not apply: doc is missing from path: {from}: {MISSING}"
                )
            })?;
            let copied = container_get(con, &key)
                .map_err(|e| format!("error in copy for from: '{from}': {e}"))?
                .cloned()
                .unwrap_or(Value::Null);
            let path = string_member(op, "path")
                .map_err(|_| format!("copy operation failed to decode path: {MISSING}"))?;
            let (con, key) = find_container(doc, &path).ok_or_else(|| {
                format!("copy operation does not apply: doc is missing destination path: {path}: {MISSING}")
            })?;
            container_add(con, &key, copied)
                .map_err(|e| format!("error while adding value during copy: {e}"))
        }
        other => Err(format!("Unexpected kind: {other}")),
    }
}

/// Unescape a pointer segment the way the library does (`~1` first, then `~0`).
fn decode_segment(s: &str) -> String {
    s.replace("~1", "/").replace("~0", "~")
}

/// Go's `strconv.Atoi`, with its error text.
fn atoi(s: &str) -> Result<i64, String> {
    s.parse::<i64>().map_err(|_| {
        let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
        let reason = if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
            "value out of range"
        } else {
            "invalid syntax"
        };
        format!("strconv.Atoi: parsing {s:?}: {reason}")
    })
}

fn invalid_index(idx: i64) -> String {
    format!("Unable to access invalid index: {idx}: invalid index referenced")
}

/// Walk to the container holding the last segment of `path`. Like the
/// library, the first segment (before the leading `/`) is ignored, and a
/// path without any `/` has no container.
fn find_container<'a>(doc: &'a mut Value, path: &str) -> Option<(&'a mut Value, String)> {
    let segments: Vec<&str> = path.split('/').collect();
    if segments.len() < 2 {
        return None;
    }
    let mut cur = doc;
    if !(cur.is_object() || cur.is_array()) {
        return None;
    }
    for seg in &segments[1..segments.len() - 1] {
        let seg = decode_segment(seg);
        cur = match cur {
            Value::Object(m) => m.get_mut(&seg)?,
            Value::Array(a) => {
                let idx = usize::try_from(atoi(&seg).ok()?).ok()?;
                a.get_mut(idx)?
            }
            _ => return None,
        };
        if !(cur.is_object() || cur.is_array()) {
            return None;
        }
    }
    let key = decode_segment(segments.last()?);
    Some((cur, key))
}

/// `Ok(None)` for a missing (or null) object member; errors only for arrays.
fn container_get<'a>(con: &'a Value, key: &str) -> Result<Option<&'a Value>, String> {
    match con {
        Value::Object(m) => Ok(m.get(key).filter(|v| !v.is_null())),
        Value::Array(a) => {
            let idx = atoi(key)?;
            match usize::try_from(idx).ok().and_then(|i| a.get(i)) {
                Some(v) => Ok(Some(v).filter(|v| !v.is_null())),
                None => Err(invalid_index(idx)),
            }
        }
        _ => Err(MISSING.to_owned()),
    }
}

fn container_add(con: &mut Value, key: &str, value: Value) -> Result<(), String> {
    match con {
        Value::Object(m) => {
            m.insert(key.to_owned(), value);
            Ok(())
        }
        Value::Array(a) => {
            if key == "-" {
                a.push(value);
                return Ok(());
            }
            let idx = atoi(key)
                .map_err(|e| format!("value was not a proper array index: '{key}': {e}"))?;
            let size = a.len() as i64 + 1;
            if idx >= size || idx < -size {
                return Err(invalid_index(idx));
            }
            let pos = if idx < 0 { idx + size } else { idx };
            a.insert(pos as usize, value);
            Ok(())
        }
        _ => Err(MISSING.to_owned()),
    }
}

fn container_set(con: &mut Value, key: &str, value: Value) -> Result<(), String> {
    match con {
        Value::Object(m) => {
            m.insert(key.to_owned(), value);
            Ok(())
        }
        Value::Array(a) => {
            let idx = atoi(key)?;
            let slot = usize::try_from(idx)
                .ok()
                .and_then(|i| a.get_mut(i))
                .ok_or_else(|| invalid_index(idx))?;
            *slot = value;
            Ok(())
        }
        _ => Err(MISSING.to_owned()),
    }
}

fn container_remove(con: &mut Value, key: &str) -> Result<Value, String> {
    match con {
        Value::Object(m) => m
            .shift_remove(key)
            .ok_or_else(|| format!("Unable to remove nonexistent key: {key}: {MISSING}")),
        Value::Array(a) => {
            let idx = atoi(key)?;
            let len = a.len() as i64;
            if idx >= len || idx < -len {
                return Err(invalid_index(idx));
            }
            let pos = if idx < 0 { idx + len } else { idx };
            Ok(a.remove(pos as usize))
        }
        _ => Err(MISSING.to_owned()),
    }
}
