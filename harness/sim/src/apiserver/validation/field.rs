//! Typed field errors, as apimachinery's `pkg/util/validation/field` (errors.go, path.go) has
//! them, and the one place they are rendered: `FieldError::body` is `field.Error.ErrorBody()`,
//! `Display` is `Error()`, `invalid` is `apierrors.NewInvalid` (the Status a 422 carries, its
//! message aggregated as `ErrorList.ToAggregate()` prints it).

use crate::apiserver::status::ApiError;
use serde_json::{json, Value};
use std::fmt;

/// `field.Path` as it prints: `spec.containers[0].name`, `metadata.labels[app]`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Path(String);

impl Path {
    /// `field.NewPath(name)`.
    pub fn new(name: &str) -> Path {
        Path(name.to_string())
    }
    /// `field.NewPath("")`, which renders as `[]` (an element with neither name nor index).
    pub fn root() -> Path {
        Path("[]".to_string())
    }
    /// `Child(name)`; several names at once as `Child("a", "b")`.
    pub fn child(&self, name: &str) -> Path {
        let mut out = self.0.clone();
        for part in name.split('.') {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(part);
        }
        Path(out)
    }
    /// `Index(i)`.
    pub fn index(&self, i: usize) -> Path {
        Path(format!("{}[{}]", self.0, i))
    }
    /// `Key(k)`.
    pub fn key(&self, k: &str) -> Path {
        Path(format!("{}[{}]", self.0, k))
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// `field.ErrorType`: the cause's `reason` and the words its message starts with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorType {
    NotFound,
    Required,
    Duplicate,
    Invalid,
    NotSupported,
    Forbidden,
    TooLong,
    TooMany,
    Internal,
    TypeInvalid,
}

impl ErrorType {
    /// The StatusCause `reason`.
    pub fn reason(self) -> &'static str {
        match self {
            ErrorType::NotFound => "FieldValueNotFound",
            ErrorType::Required => "FieldValueRequired",
            ErrorType::Duplicate => "FieldValueDuplicate",
            ErrorType::Invalid => "FieldValueInvalid",
            ErrorType::NotSupported => "FieldValueNotSupported",
            ErrorType::Forbidden => "FieldValueForbidden",
            ErrorType::TooLong => "FieldValueTooLong",
            ErrorType::TooMany => "FieldValueTooMany",
            ErrorType::Internal => "InternalError",
            ErrorType::TypeInvalid => "FieldValueTypeInvalid",
        }
    }
    /// `ErrorType.String()`.
    pub fn words(self) -> &'static str {
        match self {
            ErrorType::NotFound => "Not found",
            ErrorType::Required => "Required value",
            ErrorType::Duplicate => "Duplicate value",
            ErrorType::Invalid | ErrorType::TypeInvalid => "Invalid value",
            ErrorType::NotSupported => "Unsupported value",
            ErrorType::Forbidden => "Forbidden",
            ErrorType::TooLong => "Too long",
            ErrorType::TooMany => "Too many",
            ErrorType::Internal => "Internal error",
        }
    }
}

/// The Go value an error carries (`BadValue interface{}`), by how `ErrorBody` prints it:
/// integers and booleans with `%v`, a Go `string` with `%q`, anything else (named string types
/// such as `core.RestartPolicy`, maps, slices, structs, pointers) through `json.Marshal`.
#[derive(Debug, Clone, PartialEq)]
pub enum BadValue {
    /// Not printed (Required, Forbidden, TooLong and the `omitValue` of TooMany).
    Omit,
    Int(i64),
    Bool(bool),
    /// A plain Go `string`: `%q`.
    Str(String),
    /// `json.Marshal` of a map, slice or named string type: object keys sorted, as Go marshals maps.
    Json(Value),
    /// `json.Marshal` of a struct: members in the order given (the Go declaration order).
    Struct(Value),
}

impl BadValue {
    pub fn str(s: &str) -> BadValue {
        BadValue::Str(s.to_string())
    }
    /// A named string type (`core.DNSPolicy`, ...): marshalled as JSON.
    pub fn named(s: &str) -> BadValue {
        BadValue::Json(Value::String(s.to_string()))
    }
}

/// One `field.Error`.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldError {
    pub kind: ErrorType,
    pub field: String,
    pub value: BadValue,
    pub detail: String,
}

pub type ErrorList = Vec<FieldError>;

impl FieldError {
    fn new(kind: ErrorType, path: &Path, value: BadValue, detail: impl Into<String>) -> Self {
        FieldError {
            kind,
            field: path.as_str().to_string(),
            value,
            detail: detail.into(),
        }
    }

    /// `field.ErrorBody()`: the cause's `message`.
    pub fn body(&self) -> String {
        let mut s = match self.kind {
            ErrorType::Required
            | ErrorType::Forbidden
            | ErrorType::TooLong
            | ErrorType::Internal => self.kind.words().to_string(),
            _ => match &self.value {
                BadValue::Omit => self.kind.words().to_string(),
                BadValue::Int(i) => format!("{}: {}", self.kind.words(), i),
                BadValue::Bool(b) => format!("{}: {}", self.kind.words(), b),
                BadValue::Str(s) => format!("{}: {}", self.kind.words(), go_quote(s)),
                BadValue::Json(v) => format!("{}: {}", self.kind.words(), go_json(v, true)),
                BadValue::Struct(v) => format!("{}: {}", self.kind.words(), go_json(v, false)),
            },
        };
        if !self.detail.is_empty() {
            s.push_str(": ");
            s.push_str(&self.detail);
        }
        s
    }
}

/// `field.Error.Error()`: `<field>: <body>`.
impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.body())
    }
}

// The constructors, named as apimachinery's.

pub fn required(path: &Path, detail: &str) -> FieldError {
    FieldError::new(ErrorType::Required, path, BadValue::Omit, detail)
}
pub fn forbidden(path: &Path, detail: &str) -> FieldError {
    FieldError::new(ErrorType::Forbidden, path, BadValue::Omit, detail)
}
pub fn invalid(path: &Path, value: BadValue, detail: &str) -> FieldError {
    FieldError::new(ErrorType::Invalid, path, value, detail)
}
pub fn duplicate(path: &Path, value: BadValue) -> FieldError {
    FieldError::new(ErrorType::Duplicate, path, value, "")
}
pub fn not_found(path: &Path, value: BadValue) -> FieldError {
    FieldError::new(ErrorType::NotFound, path, value, "")
}
/// `field.NotSupported`: the detail lists the values, each `strconv.Quote`d.
pub fn not_supported(path: &Path, value: BadValue, valid: &[&str]) -> FieldError {
    let detail = if valid.is_empty() {
        String::new()
    } else {
        format!(
            "supported values: {}",
            valid
                .iter()
                .map(|v| go_quote(v))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    FieldError::new(ErrorType::NotSupported, path, value, detail)
}
/// `field.TooLong(path, _, max)`.
pub fn too_long(path: &Path, max: i64) -> FieldError {
    let detail = if max >= 0 {
        format!(
            "may not be more than {} {}",
            max,
            if max == 1 { "byte" } else { "bytes" }
        )
    } else {
        "value is too long".to_string()
    };
    FieldError::new(ErrorType::TooLong, path, BadValue::Omit, detail)
}
/// `field.TooMany(path, actual, max)`.
pub fn too_many(path: &Path, actual: i64, max: i64) -> FieldError {
    let detail = if max >= 0 {
        format!(
            "must have at most {} {}",
            max,
            if max == 1 { "item" } else { "items" }
        )
    } else {
        "has too many items".to_string()
    };
    let value = if actual >= 0 {
        BadValue::Int(actual)
    } else {
        BadValue::Omit
    };
    FieldError::new(ErrorType::TooMany, path, value, detail)
}
pub fn internal(path: &Path, detail: &str) -> FieldError {
    FieldError::new(ErrorType::Internal, path, BadValue::Omit, detail)
}

/// `ErrorList.ToAggregate().Error()`: duplicate messages dropped, one error bare, several in
/// brackets joined by ", ". `None` for an empty list.
pub fn aggregate(errs: &[FieldError]) -> Option<String> {
    let mut seen = std::collections::HashSet::new();
    let msgs: Vec<String> = errs
        .iter()
        .map(|e| e.to_string())
        .filter(|m| seen.insert(m.clone()))
        .collect();
    match msgs.len() {
        0 => None,
        1 => Some(msgs.into_iter().next().unwrap_or_default()),
        _ => Some(format!("[{}]", msgs.join(", "))),
    }
}

/// `apierrors.NewInvalid(schema.GroupKind{group, kind}, name, errs)`: 422, reason Invalid, the
/// message `<Kind>[.<group>] "<name>" is invalid: <aggregate>`, and one cause per error (in
/// order, duplicates kept, as the apiserver keeps them).
pub fn invalid_status(group: &str, kind: &str, name: &str, errs: &[FieldError]) -> ApiError {
    let qualified = if group.is_empty() {
        kind.to_string()
    } else {
        format!("{}.{}", kind, group)
    };
    let message = match aggregate(errs) {
        Some(a) => format!("{} {} is invalid: {}", qualified, go_quote(name), a),
        None => format!("{} {} is invalid", qualified, go_quote(name)),
    };
    let mut e = ApiError::new(422, "Invalid", message);
    // StatusDetails in Go field order; each member omitted when empty.
    let mut details = serde_json::Map::new();
    if !name.is_empty() {
        details.insert("name".into(), json!(name));
    }
    if !group.is_empty() {
        details.insert("group".into(), json!(group));
    }
    if !kind.is_empty() {
        details.insert("kind".into(), json!(kind));
    }
    let causes: Vec<Value> = errs
        .iter()
        .map(|e| {
            let mut c = serde_json::Map::new();
            c.insert("reason".into(), json!(e.kind.reason()));
            c.insert("message".into(), json!(e.body()));
            if !e.field.is_empty() {
                c.insert("field".into(), json!(e.field));
            }
            Value::Object(c)
        })
        .collect();
    if !causes.is_empty() {
        details.insert("causes".into(), Value::Array(causes));
    }
    e.details = Some(Value::Object(details));
    e
}

/// Go's `strconv.Quote` (what `%q` prints for a string).
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c if !go_printable(c) => {
                if (c as u32) < 0x10000 {
                    out.push_str(&format!("\\u{:04x}", c as u32))
                } else {
                    out.push_str(&format!("\\U{:08x}", c as u32))
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// An approximation of Go's `unicode.IsPrint` beyond ASCII: control, format, surrogate and
/// unassigned-looking code points are not printable; the space U+0020 is, other spaces are not.
fn go_printable(c: char) -> bool {
    if c.is_ascii() {
        return (' '..='~').contains(&c);
    }
    !(c.is_control()
        || c.is_whitespace()
        || matches!(c as u32, 0xad | 0x600..=0x605 | 0x61c | 0x6dd | 0x70f | 0x180e
            | 0x200b..=0x200f | 0x202a..=0x202e | 0x2060..=0x2064 | 0x2066..=0x206f
            | 0xfeff | 0xfff9..=0xfffb | 0xe000..=0xf8ff | 0xfffe | 0xffff))
}

/// Go's `json.Marshal` of a decoded value: HTML-safe string escapes, no spaces; object keys
/// sorted when `sort_keys` (Go maps), else in the order given (structs), at every level.
pub fn go_json(v: &Value, sort_keys: bool) -> String {
    let mut out = String::new();
    write_go_json(v, sort_keys, &mut out);
    out
}

fn write_go_json(v: &Value, sort_keys: bool, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => write_go_string(s, out),
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_go_json(x, sort_keys, out);
            }
            out.push(']');
        }
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            if sort_keys {
                keys.sort();
            }
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_go_string(k, out);
                out.push(':');
                write_go_json(&m[k], sort_keys, out);
            }
            out.push('}');
        }
    }
}

/// `encoding/json`'s string encoding with `SetEscapeHTML(true)` (Marshal's default).
fn write_go_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                out.push_str(&format!("\\u{:04x}", c as u32))
            }
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_render_as_field_error_body() {
        let p = Path::new("spec").child("ports").index(0).child("port");
        assert_eq!(p.as_str(), "spec.ports[0].port");
        let e = invalid(
            &p,
            BadValue::Int(70000),
            "must be between 1 and 65535, inclusive",
        );
        assert_eq!(
            e.to_string(),
            "spec.ports[0].port: Invalid value: 70000: must be between 1 and 65535, inclusive"
        );
        let e = not_supported(
            &Path::new("spec.restartPolicy"),
            BadValue::named("Sometimes"),
            &["Always", "OnFailure", "Never"],
        );
        assert_eq!(
            e.body(),
            r#"Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never""#
        );
        assert_eq!(
            required(&Path::new("spec.containers"), "").body(),
            "Required value"
        );
        assert_eq!(
            too_long(&Path::new("metadata.annotations"), 262144).body(),
            "Too long: may not be more than 262144 bytes"
        );
        assert_eq!(
            Path::new("metadata").child("labels").key("a/b").as_str(),
            "metadata.labels[a/b]"
        );
    }

    #[test]
    fn go_json_sorts_maps_and_escapes_html() {
        let v = json!({"b": "<x>", "a": [1, true, null]});
        assert_eq!(
            go_json(&v, true),
            r#"{"a":[1,true,null],"b":"\u003cx\u003e"}"#
        );
        assert_eq!(
            go_json(&v, false),
            r#"{"b":"\u003cx\u003e","a":[1,true,null]}"#
        );
        assert_eq!(go_quote("a\"b\n\u{1}é"), "\"a\\\"b\\n\\x01é\"");
    }

    #[test]
    fn the_aggregate_drops_repeated_messages() {
        let p = Path::new("spec");
        let a = forbidden(&p, "x");
        assert_eq!(
            aggregate(std::slice::from_ref(&a)).unwrap(),
            "spec: Forbidden: x"
        );
        assert_eq!(
            aggregate(&[a.clone(), a.clone()]).unwrap(),
            "spec: Forbidden: x"
        );
        let b = forbidden(&p, "y");
        assert_eq!(
            aggregate(&[a.clone(), b, a]).unwrap(),
            "[spec: Forbidden: x, spec: Forbidden: y]"
        );
        let s = invalid_status("", "ListOptions", "", &[]).to_status();
        assert_eq!(s["message"], "ListOptions \"\" is invalid");
    }
}
