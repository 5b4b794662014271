//! `controller.ComputeHash` (pkg/controller/controller_utils.go): the `pod-template-hash` of a
//! Deployment's ReplicaSets and a DaemonSet's revisions is 32-bit FNV-1a over the text
//! `dump.ForHash` prints for the pod template (go-spew's `%#v` with sorted map keys, methods
//! and pointer addresses off), then the collision count, safe-encoded.
//!
//! The text is printed from the template's JSON as kube-controller-manager holds it (decoded
//! from protobuf: an empty list or map is nil, a present pointer is non-nil) and the Go types
//! reflection sees (`podtemplate_types.json`, written by `upstream/gotypes` from k8s.io/api
//! v0.35.4, with samples whose dump and hash the tests compare). Quantities are printed as
//! `ParseQuantity` leaves them (the int64 form and its cached string). Out of reach, so
//! [`compute_hash`] answers `None`: a quantity beyond int64 precision (an `inf.Dec`), a set
//! time in the template's metadata (its `time.Location`), and a value whose JSON does not fit
//! its Go type.

use super::util::safe_encode;
use crate::apiserver::table::canonical_quantity;
use serde::Deserialize;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::OnceLock;

const TYPES_JSON: &str = include_str!("podtemplate_types.json");

const QUANTITY: &str = "k8s.io/apimachinery/pkg/api/resource.Quantity";
const TIME: &str = "k8s.io/apimachinery/pkg/apis/meta/v1.Time";
const INT_OR_STRING: &str = "k8s.io/apimachinery/pkg/util/intstr.IntOrString";
const ZERO_TIME: &str = "{Time:(time.Time){wall:(uint64)0 ext:(int64)0 loc:(*time.Location)<nil>}}";

#[derive(Deserialize)]
struct Field {
    name: String,
    #[serde(default)]
    json: String,
    #[serde(rename = "type")]
    ty: String,
    #[serde(default)]
    embedded: bool,
}

#[derive(Deserialize)]
struct GoType {
    string: String,
    kind: String,
    #[serde(default)]
    elem: String,
    #[serde(default)]
    key: String,
    #[serde(default)]
    fields: Vec<Field>,
}

#[derive(Deserialize)]
struct Table {
    root: String,
    types: HashMap<String, GoType>,
}

fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| {
        serde_json::from_str(TYPES_JSON).expect("podtemplate_types.json is generated and valid")
    })
}

/// The value can not be printed as Go would (see the module comment).
#[derive(Debug)]
struct Unsupported;

type Out = Result<(), Unsupported>;

struct Printer<'a> {
    types: &'a HashMap<String, GoType>,
    out: String,
}

/// A JSON value that stands for Go's zero or nil.
fn absent(v: Option<&Value>) -> bool {
    v.is_none_or(Value::is_null)
}

impl<'a> Printer<'a> {
    fn ty(&self, id: &str) -> Result<&'a GoType, Unsupported> {
        let types: &'a HashMap<String, GoType> = self.types;
        types.get(id).ok_or(Unsupported)
    }

    /// spew's `format`: the type in parentheses unless the caller printed it, then the value.
    fn format(&mut self, id: &str, v: Option<&Value>, ignore_type: bool) -> Out {
        let t = self.ty(id)?;
        if t.kind == "ptr" {
            return self.format_ptr(id, v, ignore_type);
        }
        if !ignore_type {
            let _ = write!(self.out, "({})", t.string);
        }
        match id {
            QUANTITY => return self.quantity(v),
            TIME if absent(v) => {
                self.out.push_str(ZERO_TIME);
                return Ok(());
            }
            TIME => return Err(Unsupported),
            INT_OR_STRING => {
                let (kind, int, s) = match v {
                    Some(Value::String(s)) => (1, 0, s.as_str()),
                    Some(n @ Value::Number(_)) => (0, n.as_i64().ok_or(Unsupported)?, ""),
                    None | Some(Value::Null) => (0, 0, ""),
                    _ => return Err(Unsupported),
                };
                let _ = write!(
                    self.out,
                    "{{Type:(intstr.Type){kind} IntVal:(int32){int} StrVal:(string){s}}}"
                );
                return Ok(());
            }
            _ => {}
        }
        match t.kind.as_str() {
            "struct" => self.structure(id, v),
            "slice" => {
                let items = match v {
                    None | Some(Value::Null) => &[][..],
                    Some(Value::Array(a)) => a.as_slice(),
                    _ => return Err(Unsupported),
                };
                // Decoded from protobuf, an empty list is nil.
                if items.is_empty() {
                    self.out.push_str("<nil>");
                    return Ok(());
                }
                let elem = t.elem.clone();
                self.out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        self.out.push(' ');
                    }
                    self.format(&elem, Some(item), true)?;
                }
                self.out.push(']');
                Ok(())
            }
            "map" => {
                let m = match v {
                    None | Some(Value::Null) => None,
                    Some(Value::Object(m)) => Some(m),
                    _ => return Err(Unsupported),
                };
                let Some(m) = m.filter(|m| !m.is_empty()) else {
                    self.out.push_str("<nil>");
                    return Ok(());
                };
                // String keys print as themselves and sort as strings (SortKeys).
                let key_is_string = self.types.get(&t.key).is_some_and(|k| k.kind == "string");
                if !key_is_string {
                    return Err(Unsupported);
                }
                let elem = t.elem.clone();
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                self.out.push_str("map[");
                for (i, k) in keys.into_iter().enumerate() {
                    if i > 0 {
                        self.out.push(' ');
                    }
                    self.out.push_str(k);
                    self.out.push(':');
                    self.format(&elem, m.get(k), true)?;
                }
                self.out.push(']');
                Ok(())
            }
            "string" => match v {
                None | Some(Value::Null) => Ok(()),
                Some(Value::String(s)) => {
                    self.out.push_str(s);
                    Ok(())
                }
                _ => Err(Unsupported),
            },
            "bool" => match v {
                None | Some(Value::Null) => {
                    self.out.push_str("false");
                    Ok(())
                }
                Some(Value::Bool(b)) => {
                    self.out.push_str(if *b { "true" } else { "false" });
                    Ok(())
                }
                _ => Err(Unsupported),
            },
            "int" | "int8" | "int16" | "int32" | "int64" | "uint" | "uint8" | "uint16"
            | "uint32" | "uint64" => match v {
                None | Some(Value::Null) => {
                    self.out.push('0');
                    Ok(())
                }
                Some(Value::Number(n)) if n.is_i64() || n.is_u64() => {
                    let _ = write!(self.out, "{n}");
                    Ok(())
                }
                _ => Err(Unsupported),
            },
            _ => Err(Unsupported),
        }
    }

    /// spew's `formatPtr` for one level of indirection.
    fn format_ptr(&mut self, id: &str, v: Option<&Value>, ignore_type: bool) -> Out {
        let t = self.ty(id)?;
        if absent(v) {
            if !ignore_type {
                let _ = write!(self.out, "({})", t.string);
            }
            self.out.push_str("<nil>");
            return Ok(());
        }
        let elem = t.elem.clone();
        if ignore_type {
            self.out.push_str("<*>");
        } else {
            let _ = write!(self.out, "({})", t.string);
        }
        self.format(&elem, v, true)
    }

    fn structure(&mut self, id: &str, v: Option<&Value>) -> Out {
        let empty = Map::new();
        let obj = match v {
            None | Some(Value::Null) => &empty,
            Some(Value::Object(m)) => m,
            _ => return Err(Unsupported),
        };
        let t = self.ty(id)?;
        let fields: Vec<(String, String, String, bool)> = t
            .fields
            .iter()
            .map(|f| (f.name.clone(), f.json.clone(), f.ty.clone(), f.embedded))
            .collect();
        self.out.push('{');
        for (i, (name, json, ty, embedded)) in fields.iter().enumerate() {
            if i > 0 {
                self.out.push(' ');
            }
            self.out.push_str(name);
            self.out.push(':');
            if json.is_empty() {
                // An inline embedded struct reads its members from the same object; an
                // unexported member has no JSON form.
                if !embedded {
                    return Err(Unsupported);
                }
                self.format(ty, Some(&Value::Object(obj.clone())), false)?;
            } else {
                self.format(ty, obj.get(json.as_str()), false)?;
            }
        }
        self.out.push('}');
        Ok(())
    }

    /// A Quantity as `ParseQuantity` leaves it after the protobuf round trip (which writes its
    /// canonical string): the int64 amount, no `inf.Dec`, the string cached when canonical.
    fn quantity(&mut self, v: Option<&Value>) -> Out {
        let text = match v {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(canonical_quantity(s).ok_or(Unsupported)?),
            Some(Value::Number(n)) => Some(canonical_quantity(&n.to_string()).ok_or(Unsupported)?),
            _ => return Err(Unsupported),
        };
        let (value, scale, cached, format) = match text.as_deref() {
            None => (0, 0, "", ""),
            Some(s) => {
                let q = parse_quantity(s).ok_or(Unsupported)?;
                (q.value, q.scale, if q.cached { s } else { "" }, q.format)
            }
        };
        let _ = write!(
            self.out,
            "{{i:(resource.int64Amount){{value:(int64){value} scale:(resource.Scale){scale}}} d:(resource.infDecAmount){{Dec:(*inf.Dec)<nil>}} s:(string){cached} Format:(resource.Format){format}}}"
        );
        Ok(())
    }
}

/// `ParseQuantity`'s int64 fast path: the amount, its scale, whether the string is kept as the
/// canonical form, and the format. `None` where upstream falls back to `inf.Dec`.
struct Parsed {
    value: i64,
    scale: i32,
    cached: bool,
    format: &'static str,
}

fn parse_quantity(s: &str) -> Option<Parsed> {
    if s == "0" {
        return Some(Parsed {
            value: 0,
            scale: 0,
            cached: true,
            format: "DecimalSI",
        });
    }
    let (positive, body) = match s.as_bytes().first()? {
        b'-' => (false, &s[1..]),
        b'+' => (true, &s[1..]),
        _ => (true, s),
    };
    let digits_end = body
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(body.len());
    let (number, suffix) = body.split_at(digits_end);
    let (num, denom) = match number.split_once('.') {
        Some((n, d)) => (n, d),
        None => (number, ""),
    };
    let num = num.trim_start_matches('0');
    let num = if num.is_empty() { "0" } else { num };
    let (base2, exponent, format): (bool, i32, &'static str) = match suffix {
        "" => (false, 0, "DecimalSI"),
        "n" => (false, -9, "DecimalSI"),
        "u" => (false, -6, "DecimalSI"),
        "m" => (false, -3, "DecimalSI"),
        "k" => (false, 3, "DecimalSI"),
        "M" => (false, 6, "DecimalSI"),
        "G" => (false, 9, "DecimalSI"),
        "T" => (false, 12, "DecimalSI"),
        "P" => (false, 15, "DecimalSI"),
        "E" => (false, 18, "DecimalSI"),
        "Ki" => (true, 10, "BinarySI"),
        "Mi" => (true, 20, "BinarySI"),
        "Gi" => (true, 30, "BinarySI"),
        "Ti" => (true, 40, "BinarySI"),
        "Pi" => (true, 50, "BinarySI"),
        "Ei" => (true, 60, "BinarySI"),
        e if e.starts_with(['e', 'E']) => (false, e[1..].parse().ok()?, "DecimalExponent"),
        _ => return None,
    };
    let digits = (num.len() + denom.len()) as i32;
    let (mut scale, mantissa, precision) = if base2 {
        if exponent >= 0 && denom.is_empty() {
            let precision = 15 - num.len() as i32 - (exponent as f32 * 3.0 / 10.0) as i32 - 1;
            (0, 1i64.checked_shl(exponent as u32)?, precision)
        } else {
            (0, 1, -1)
        }
    } else {
        (exponent, 1, 18 - digits)
    };
    if precision < 0 {
        return None;
    }
    scale -= denom.len() as i32;
    if scale < -9 {
        return None;
    }
    let shifted = format!("{num}{denom}");
    let value: i64 = shifted.parse().ok()?;
    let mut result = value.checked_mul(mantissa)?;
    if !positive {
        result = -result;
    }
    let cached = if base2 {
        exponent % 10 == 0 && value & 0x07 != 0
    } else {
        scale % 3 == 0 && !shifted.ends_with("000") && !shifted.starts_with('0')
    };
    Some(Parsed {
        value: result,
        scale,
        cached,
        format,
    })
}

/// `controller.ComputeHash(template, collisionCount)`; `None` when the template holds a value
/// this model cannot print as Go does (the caller then keeps its own hash).
pub fn compute_hash(template: &Value, collision_count: Option<i64>) -> Option<String> {
    let text = dump_for_hash(template)?;
    let mut h: u32 = 0x811c9dc5;
    let mut feed = |b: u8| {
        h ^= b as u32;
        h = h.wrapping_mul(0x01000193);
    };
    text.bytes().for_each(&mut feed);
    if let Some(n) = collision_count {
        // binary.LittleEndian.PutUint32 into an 8-byte buffer: the upper four bytes stay 0.
        let mut b = [0u8; 8];
        b[..4].copy_from_slice(&(n as u32).to_le_bytes());
        b.iter().for_each(|x| feed(*x));
    }
    Some(safe_encode(&h.to_string()))
}

/// `dump.ForHash` of a `v1.PodTemplateSpec` given as JSON.
pub fn dump_for_hash(template: &Value) -> Option<String> {
    let t = table();
    let mut p = Printer {
        types: &t.types,
        out: String::new(),
    };
    p.format(&t.root, Some(template), false).ok()?;
    Some(p.out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    struct Sample {
        template: Value,
        dump: String,
        hash: String,
        #[serde(rename = "hashWithCollisionCount2")]
        with_collisions: String,
    }

    #[test]
    fn templates_hash_as_kube_controller_manager_does() {
        #[derive(Deserialize)]
        struct Samples {
            samples: Vec<Sample>,
        }
        let s: Samples = serde_json::from_str(TYPES_JSON).unwrap();
        assert!(!s.samples.is_empty());
        for sample in s.samples {
            assert_eq!(dump_for_hash(&sample.template).unwrap(), sample.dump);
            assert_eq!(compute_hash(&sample.template, None).unwrap(), sample.hash);
            assert_eq!(
                compute_hash(&sample.template, Some(2)).unwrap(),
                sample.with_collisions
            );
        }
    }

    #[test]
    fn quantities_parse_as_parse_quantity() {
        let q = parse_quantity("100m").unwrap();
        assert_eq!(
            (q.value, q.scale, q.cached, q.format),
            (100, -3, true, "DecimalSI")
        );
        let q = parse_quantity("1Gi").unwrap();
        assert_eq!((q.value, q.scale, q.cached), (1 << 30, 0, true));
        let q = parse_quantity("1536Mi").unwrap();
        assert_eq!((q.value, q.cached), (1536 << 20, false));
        assert!(parse_quantity("1x").is_none());
    }

    #[test]
    fn what_go_cannot_be_printed_from_is_refused() {
        let t = serde_json::json!({"metadata": {"creationTimestamp": "2026-01-01T00:00:00Z"}});
        assert!(compute_hash(&t, None).is_none());
        let t = serde_json::json!({"spec": {"containers": "not a list"}});
        assert!(compute_hash(&t, None).is_none());
    }
}
