//! The encoder: an object as the JSON API serves it, written as kube-apiserver's protobuf
//! serializer writes it for clients that ask for `application/vnd.kubernetes.protobuf` (the
//! `k8s\0` magic, then a `runtime.Unknown` whose `raw` is the object's gogo-protobuf encoding).
//!
//! gogo writes the fields of a message in field-number order; a field that is a Go pointer,
//! slice or map only when set (each element of a repeated field, each map entry with its key,
//! maps sorted by key), every other field always, its zero value included. Which members are
//! values comes from the Go types themselves (the `go` section of the SMD schema, the same
//! types' JSON tags: a member `omitempty` as a string, number or bool, `omitzero`, or without
//! either and not null when zero). Members the JSON form leaves out are written with their
//! zero value when they are values, so a decoding client sees what a real server sends.

use super::{lookup_kind, schema, Kind, Message, Scalar, Schema, Special, MAGIC};
use crate::apiserver::patch::smd::schema::{GoStruct, Omit, Schema as SmdSchema};
use base64::Engine as _;
use serde_json::{Map, Value};

/// Seconds of Go's zero `time.Time` (year 1): what a zero `metav1.Time` is written as.
const ZERO_TIME_SECONDS: i64 = -62_135_596_800;

fn varint(mut v: u64, out: &mut Vec<u8>) {
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

fn key(tag: u32, wt: u8, out: &mut Vec<u8>) {
    varint(u64::from(tag) << 3 | u64::from(wt), out);
}

fn len_field(tag: u32, payload: &[u8], out: &mut Vec<u8>) {
    key(tag, super::WT_LEN, out);
    varint(payload.len() as u64, out);
    out.extend_from_slice(payload);
}

/// The OpenAPI definition (and Go struct) name of a protobuf message: `k8s.io.api.core.v1.Pod`
/// is `io.k8s.api.core.v1.Pod`.
fn definition_name(message: &str) -> String {
    let rest = message.strip_prefix("k8s.io.").unwrap_or(message);
    format!(
        "io.k8s.{}",
        rest.replace("apiextensions_apiserver", "apiextensions-apiserver")
            .replace("kube_aggregator", "kube-aggregator")
    )
}

/// Is the member `json` of `go` a Go value (written even when zero) rather than a pointer,
/// slice or map?
fn always_written(go: Option<&GoStruct>, json: &str) -> bool {
    let Some(m) = go.and_then(|g| g.member(json)) else {
        return false;
    };
    match m.omit {
        Omit::EmptyString | Omit::ZeroNumber | Omit::False | Omit::Zero => true,
        Omit::Never => !m.zero.is_null(),
        Omit::Nil | Omit::Null | Omit::Empty => false,
    }
}

struct Encoder<'s> {
    schema: &'s Schema,
    go: &'s SmdSchema,
}

impl Encoder<'_> {
    fn message(&self, idx: usize, v: &Value) -> Vec<u8> {
        let mut out = Vec::new();
        let Some(msg) = self.schema.messages.get(idx) else {
            return out;
        };
        if msg.special != Special::None {
            self.special(msg, v, &mut out);
            return out;
        }
        let go = self.go.go_struct_named(&definition_name(&msg.name));
        let empty = Map::new();
        let obj = v.as_object().unwrap_or(&empty);
        let mut fields: Vec<&super::Field> = msg.fields.iter().collect();
        fields.sort_by_key(|f| f.tag);
        for f in fields {
            if f.inline {
                // An embedded struct (`json:",inline"`): its members are the parent's.
                if let Kind::Message(mi) = &f.kind {
                    let b = self.message(*mi, v);
                    len_field(f.tag, &b, &mut out);
                }
                continue;
            }
            let value = obj.get(&f.name).filter(|x| !x.is_null());
            match (&f.kind, value) {
                (Kind::Map(kt, vk), Some(Value::Object(m))) => {
                    let mut keys: Vec<&String> = m.keys().collect();
                    keys.sort();
                    for k in keys {
                        let mut entry = Vec::new();
                        self.scalar(1, *kt, &Value::String(k.clone()), &mut entry);
                        match vk.as_ref() {
                            Kind::Scalar(s) => self.scalar(2, *s, &m[k], &mut entry),
                            Kind::Message(mi) => {
                                let b = self.message(*mi, &m[k]);
                                len_field(2, &b, &mut entry);
                            }
                            Kind::Map(..) => {}
                        }
                        len_field(f.tag, &entry, &mut out);
                    }
                }
                (Kind::Map(..), _) => {}
                (Kind::Scalar(s), Some(Value::Array(items))) if f.repeated => {
                    for item in items {
                        self.scalar(f.tag, *s, item, &mut out);
                    }
                }
                (Kind::Message(mi), Some(Value::Array(items))) if f.repeated => {
                    for item in items {
                        let b = self.message(*mi, item);
                        len_field(f.tag, &b, &mut out);
                    }
                }
                (_, _) if f.repeated => {}
                (Kind::Scalar(s), Some(x)) => self.scalar(f.tag, *s, x, &mut out),
                (Kind::Scalar(s), None) => {
                    if always_written(go, &f.name) {
                        self.zero_scalar(f.tag, *s, &mut out);
                    }
                }
                (Kind::Message(mi), Some(x)) => {
                    let b = self.message(*mi, x);
                    len_field(f.tag, &b, &mut out);
                }
                (Kind::Message(mi), None) => {
                    if always_written(go, &f.name) {
                        let b = self.zero_message(*mi);
                        len_field(f.tag, &b, &mut out);
                    }
                }
            }
        }
        out
    }

    /// A value-typed message member the JSON form left out: its zero value.
    fn zero_message(&self, idx: usize) -> Vec<u8> {
        let Some(msg) = self.schema.messages.get(idx) else {
            return Vec::new();
        };
        match msg.special {
            Special::Time | Special::MicroTime => {
                let mut out = Vec::new();
                key(1, super::WT_VARINT, &mut out);
                varint(ZERO_TIME_SECONDS as u64, &mut out);
                key(2, super::WT_VARINT, &mut out);
                varint(0, &mut out);
                out
            }
            _ => self.message(idx, &Value::Object(Map::new())),
        }
    }

    fn zero_scalar(&self, tag: u32, s: Scalar, out: &mut Vec<u8>) {
        match s.wire_type() {
            super::WT_LEN => len_field(tag, &[], out),
            super::WT_I64 => {
                key(tag, super::WT_I64, out);
                out.extend_from_slice(&[0; 8]);
            }
            super::WT_I32 => {
                key(tag, super::WT_I32, out);
                out.extend_from_slice(&[0; 4]);
            }
            _ => {
                key(tag, super::WT_VARINT, out);
                varint(0, out);
            }
        }
    }

    fn scalar(&self, tag: u32, s: Scalar, v: &Value, out: &mut Vec<u8>) {
        let int = || -> i64 {
            v.as_i64()
                .or_else(|| v.as_f64().map(|f| f as i64))
                .or_else(|| v.as_str().and_then(|t| t.parse().ok()))
                .unwrap_or(0)
        };
        match s {
            Scalar::String => {
                let text = match v {
                    Value::String(t) => t.clone(),
                    other => other.to_string(),
                };
                len_field(tag, text.as_bytes(), out);
            }
            Scalar::Bytes => {
                let b = v
                    .as_str()
                    .and_then(|t| base64::engine::general_purpose::STANDARD.decode(t).ok())
                    .unwrap_or_default();
                len_field(tag, &b, out);
            }
            Scalar::Bool => {
                key(tag, super::WT_VARINT, out);
                varint(u64::from(v.as_bool().unwrap_or(false)), out);
            }
            Scalar::Int32 | Scalar::Int64 => {
                key(tag, super::WT_VARINT, out);
                varint(int() as u64, out);
            }
            Scalar::Uint32 | Scalar::Uint64 => {
                key(tag, super::WT_VARINT, out);
                varint(v.as_u64().unwrap_or(int() as u64), out);
            }
            Scalar::Sint32 | Scalar::Sint64 => {
                let n = int();
                key(tag, super::WT_VARINT, out);
                varint(((n << 1) ^ (n >> 63)) as u64, out);
            }
            Scalar::Double => {
                key(tag, super::WT_I64, out);
                out.extend_from_slice(&v.as_f64().unwrap_or(0.0).to_le_bytes());
            }
            Scalar::Float => {
                key(tag, super::WT_I32, out);
                out.extend_from_slice(&(v.as_f64().unwrap_or(0.0) as f32).to_le_bytes());
            }
            Scalar::Fixed64 | Scalar::Sfixed64 => {
                key(tag, super::WT_I64, out);
                out.extend_from_slice(&int().to_le_bytes());
            }
            Scalar::Fixed32 | Scalar::Sfixed32 => {
                key(tag, super::WT_I32, out);
                out.extend_from_slice(&(int() as i32).to_le_bytes());
            }
        }
    }

    fn sub_message(msg: &Message, tag: u32) -> Option<usize> {
        msg.by_tag
            .get(&tag)
            .and_then(|&i| msg.fields.get(i))
            .and_then(|f| match f.kind {
                Kind::Message(i) => Some(i),
                _ => None,
            })
    }

    fn special(&self, msg: &Message, v: &Value, out: &mut Vec<u8>) {
        match msg.special {
            Special::None => {}
            Special::Time | Special::MicroTime => {
                let (secs, nanos) = v
                    .as_str()
                    .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
                    .map(|t| (t.timestamp(), i64::from(t.timestamp_subsec_nanos())))
                    .unwrap_or((ZERO_TIME_SECONDS, 0));
                key(1, super::WT_VARINT, out);
                varint(secs as u64, out);
                key(2, super::WT_VARINT, out);
                varint(nanos as u64, out);
            }
            Special::Duration => {
                let nanos = v.as_str().map(go_duration_nanos).unwrap_or(0);
                key(1, super::WT_VARINT, out);
                varint(nanos as u64, out);
            }
            Special::Quantity => {
                let text = match v {
                    Value::String(t) => t.clone(),
                    Value::Null => String::new(),
                    other => other.to_string(),
                };
                len_field(1, text.as_bytes(), out);
            }
            Special::IntOrString => {
                // {type(1), intVal(2), strVal(3)}, all written.
                let (ty, n, text) = match v {
                    Value::String(t) => (1u64, 0i64, t.clone()),
                    other => (0, other.as_i64().unwrap_or(0), String::new()),
                };
                key(1, super::WT_VARINT, out);
                varint(ty, out);
                key(2, super::WT_VARINT, out);
                varint(n as u64, out);
                len_field(3, text.as_bytes(), out);
            }
            Special::RawJson => {
                if !v.is_null() {
                    let raw = serde_json::to_vec(v).unwrap_or_default();
                    len_field(1, &raw, out);
                }
            }
            Special::Verbs => {
                for item in v.as_array().into_iter().flatten() {
                    len_field(1, item.as_str().unwrap_or("").as_bytes(), out);
                }
            }
            Special::SchemaOrArray => {
                let Some(mi) = Self::sub_message(msg, 1) else {
                    return;
                };
                match v {
                    Value::Array(items) => {
                        for item in items {
                            let b = self.message(mi, item);
                            len_field(2, &b, out);
                        }
                    }
                    other => {
                        let b = self.message(mi, other);
                        len_field(1, &b, out);
                    }
                }
            }
            Special::SchemaOrBool => {
                let Some(mi) = Self::sub_message(msg, 2) else {
                    return;
                };
                match v {
                    Value::Bool(b) => {
                        key(1, super::WT_VARINT, out);
                        varint(u64::from(*b), out);
                    }
                    other => {
                        key(1, super::WT_VARINT, out);
                        varint(1, out);
                        let b = self.message(mi, other);
                        len_field(2, &b, out);
                    }
                }
            }
            Special::SchemaOrStringArray => match v {
                Value::Array(items) => {
                    for item in items {
                        len_field(2, item.as_str().unwrap_or("").as_bytes(), out);
                    }
                }
                other => {
                    if let Some(mi) = Self::sub_message(msg, 1) {
                        let b = self.message(mi, other);
                        len_field(1, &b, out);
                    }
                }
            },
        }
    }
}

/// A Go duration string (`1m30s`, `300ms`, `1h0m0s`) in nanoseconds; 0 if it does not parse.
fn go_duration_nanos(s: &str) -> i64 {
    let (neg, mut rest) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let mut total: f64 = 0.0;
    while !rest.is_empty() {
        let num_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let Ok(n) = rest[..num_end].parse::<f64>() else {
            return 0;
        };
        rest = &rest[num_end..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_end] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return 0,
        };
        total += n * scale;
        rest = &rest[unit_end..];
    }
    let t = total.round() as i64;
    if neg {
        -t
    } else {
        t
    }
}

/// `obj` (with its `apiVersion` and `kind`) in the Kubernetes protobuf form, or `None` when
/// no protobuf schema knows its kind (custom resources, types without protobuf).
pub fn encode(obj: &Value) -> Option<Vec<u8>> {
    let schema = schema().ok()?;
    let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = obj.get("kind").and_then(Value::as_str)?;
    // A kind only meta/v1 has (Status) is found there for any group version.
    let idx = lookup_kind(schema, api_version, kind).ok()?;
    let enc = Encoder {
        schema,
        go: SmdSchema::builtins(),
    };
    let raw = enc.message(idx, obj);
    let mut type_meta = Vec::new();
    len_field(1, api_version.as_bytes(), &mut type_meta);
    len_field(2, kind.as_bytes(), &mut type_meta);
    let mut unknown = Vec::new();
    len_field(1, &type_meta, &mut unknown);
    len_field(2, &raw, &mut unknown);
    len_field(3, &[], &mut unknown);
    len_field(4, &[], &mut unknown);
    let mut out = MAGIC.to_vec();
    out.extend_from_slice(&unknown);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The top-level fields of an encoded object: (field number, wire type) -> count.
    fn shape(body: &[u8]) -> Vec<(u32, usize)> {
        let inner = body.strip_prefix(MAGIC.as_slice()).unwrap();
        let entries = super::super::parse_entries(inner, "Unknown", 0).unwrap();
        let raw = entries
            .iter()
            .find_map(|(t, w)| match w {
                super::super::Wire::Len(b) if *t == 2 => Some(*b),
                _ => None,
            })
            .unwrap();
        let mut counts = std::collections::BTreeMap::new();
        for (t, _) in super::super::parse_entries(raw, "raw", 0).unwrap() {
            *counts.entry(t).or_insert(0) += 1;
        }
        counts.into_iter().collect()
    }

    #[test]
    fn objects_round_trip_through_the_decoder() {
        let pod = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "d", "labels": {"b": "2", "a": "1"},
                         "creationTimestamp": "2026-01-02T03:04:05Z", "resourceVersion": "7"},
            "spec": {"containers": [{"name": "c", "image": "busybox", "ports": [{"containerPort": 80, "protocol": "TCP"}],
                                     "resources": {"limits": {"cpu": "500m"}}}],
                     "terminationGracePeriodSeconds": 30, "restartPolicy": "Always"},
            "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False", "lastProbeTime": null, "lastTransitionTime": "2026-01-02T03:04:05Z"}]}});
        let body = encode(&pod).unwrap();
        let back = super::super::decode(&body).unwrap();
        assert_eq!(back["metadata"]["labels"], json!({"a": "1", "b": "2"}));
        assert_eq!(
            back["spec"]["containers"][0]["ports"][0]["containerPort"],
            80
        );
        assert_eq!(
            back["spec"]["containers"][0]["resources"]["limits"]["cpu"],
            "500m"
        );
        assert_eq!(back["spec"]["terminationGracePeriodSeconds"], 30);
        assert_eq!(
            back["status"]["conditions"][0]["lastTransitionTime"],
            "2026-01-02T03:04:05Z"
        );
        assert_eq!(
            back["metadata"]["creationTimestamp"],
            "2026-01-02T03:04:05Z"
        );
        // metadata, spec, status: as kube-apiserver 1.35 writes a Pod.
        assert_eq!(shape(&body), vec![(1, 1), (2, 1), (3, 1)]);
    }

    #[test]
    fn extra_values_are_bare_string_arrays() {
        // `ExtraValue` is `[]string` in Go: a CSR's spec.extra (which the x509 authenticator's
        // credential id fills) is a map of arrays on the wire's JSON side, as client-go sends
        // it in protobuf when controller-runtime approves a CSR.
        let csr = json!({"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
            "metadata": {"name": "c"},
            "spec": {"request": "eA==", "signerName": "kubernetes.io/kube-apiserver-client",
                     "extra": {"authentication.kubernetes.io/credential-id": ["X509SHA256=ab", "x"]}}});
        let back = super::super::decode(&encode(&csr).unwrap()).unwrap();
        assert_eq!(back["spec"]["extra"], csr["spec"]["extra"]);
    }

    #[test]
    fn value_members_are_written_when_the_json_leaves_them_out() {
        // A 500 has no reason in JSON; gogo writes the empty string (kube-apiserver's
        // protobuf Status has fields 1, 2, 3, 4 and 6).
        let status = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": "x", "code": 500});
        assert_eq!(
            shape(&encode(&status).unwrap()),
            vec![(1, 1), (2, 1), (3, 1), (4, 1), (6, 1)]
        );
        let list = json!({"kind": "ConfigMapList", "apiVersion": "v1", "metadata": {"resourceVersion": "9"},
            "items": [{"metadata": {"name": "a"}, "data": {"k": "v"}}, {"metadata": {"name": "b"}}]});
        assert_eq!(shape(&encode(&list).unwrap()), vec![(1, 1), (2, 2)]);
        let secret = json!({"kind": "Secret", "apiVersion": "v1", "metadata": {"name": "s"}, "data": {"a": "YQ==", "b": "Yg=="}, "type": "Opaque"});
        assert_eq!(
            shape(&encode(&secret).unwrap()),
            vec![(1, 1), (2, 2), (3, 1)]
        );
        assert!(encode(&json!({"kind": "Gadget", "apiVersion": "ex.dev/v1"})).is_none());
    }

    #[test]
    fn go_durations() {
        assert_eq!(go_duration_nanos("1m30s"), 90_000_000_000);
        assert_eq!(go_duration_nanos("300ms"), 300_000_000);
        assert_eq!(go_duration_nanos("1h0m0s"), 3_600_000_000_000);
        assert_eq!(go_duration_nanos("0s"), 0);
    }
}
