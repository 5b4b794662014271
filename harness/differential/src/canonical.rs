//! The canonical form of one response: what is compared.
//!
//! `{"status": <code>, "contentType": <header>, "body": <normalised body>}`, where the body is:
//! - JSON: normalised by `normalise::Mapper` (rules 1-9), except
//! - discovery documents (`/api`, `/apis`, `/api/v1`, `/apis/<g>[/<v>]`, aggregated discovery):
//!   reduced to their groups, versions, resources with kind, scope, verbs, short names,
//!   categories and subresources. Left out: `serverAddressByClientCIDRs` (the address each
//!   server listens on) and aggregated discovery's ETag-like `freshness` — compared as sets,
//!   because the order of groups follows each server's registration order of its API groups;
//! - OpenAPI documents (`/openapi/v2`, `/openapi/v3`, `/openapi/v3/<gv>`): their set of paths
//!   (with methods) and of definitions (with property names). Left out: descriptions and
//!   `info`, and the v3 index's `serverRelativeURL` hashes (each server's content hash);
//! - watch streams: the list of frames, each normalised as an event;
//! - protobuf (`application/vnd.kubernetes.protobuf`, the OpenAPI v2 protobuf): decoding the
//!   object needs the Go schema, so it is compared by its envelope (apiVersion, kind, content
//!   type) and the set of top-level field numbers with their counts (a List's item count);
//! - YAML (`Accept: application/yaml`): parsed and normalised as JSON is;
//! - anything else: the text, as it is.

use crate::normalise::Mapper;
use crate::runner::Outcome;
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, BTreeSet};

pub fn canonical(path_and_query: &str, o: &Outcome, m: &mut Mapper) -> Value {
    let r = match &o.response {
        Ok(r) => r,
        Err(e) => return json!({"error": e}),
    };
    let path = path_and_query.split('?').next().unwrap_or("");
    let mut out = Map::new();
    out.insert("status".into(), json!(r.status));
    out.insert("contentType".into(), json!(r.content_type));
    let body = if let Some(frames) = &r.frames {
        let events: Vec<Value> = frames
            .iter()
            .map(|f| match serde_json::from_slice::<Value>(f) {
                Ok(mut v) => {
                    m.normalise(&mut v);
                    v
                }
                Err(_) => json!({"unparsed": String::from_utf8_lossy(f)}),
            })
            .collect();
        json!({"events": events, "ended": r.ended})
    } else if is_protobuf(r.content_type.as_deref()) {
        protobuf(&r.body)
    } else {
        match &o.json {
            Some(v) => {
                let mut v = v.clone();
                if let Some(c) = structural(path, &v) {
                    c
                } else {
                    m.normalise(&mut v);
                    v
                }
            }
            None if r.body.is_empty() => Value::Null,
            None if r
                .content_type
                .as_deref()
                .is_some_and(|c| c.contains("yaml")) =>
            {
                match serde_yaml::from_slice::<Value>(&r.body) {
                    Ok(mut v) => {
                        m.normalise(&mut v);
                        json!({"yaml": v})
                    }
                    Err(_) => json!({"text": String::from_utf8_lossy(&r.body)}),
                }
            }
            None => json!({"text": String::from_utf8_lossy(&r.body)}),
        }
    };
    out.insert("body".into(), body);
    Value::Object(out)
}

fn is_protobuf(ct: Option<&str>) -> bool {
    ct.is_some_and(|c| c.contains("protobuf"))
}

fn sorted_strings(v: &Value) -> Value {
    let mut s: Vec<String> = v
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|x| x.as_str().map(str::to_string))
        .collect();
    s.sort();
    json!(s)
}

/// Discovery and OpenAPI documents, reduced (see the module comment).
fn structural(path: &str, v: &Value) -> Option<Value> {
    let kind = v.get("kind").and_then(Value::as_str).unwrap_or("");
    match kind {
        "APIVersions" => {
            return Some(json!({"kind": kind, "versions": v["versions"]}));
        }
        "APIGroupList" => {
            let mut groups = BTreeMap::new();
            for g in v["groups"].as_array().into_iter().flatten() {
                groups.insert(g["name"].as_str().unwrap_or("").to_string(), group(g));
            }
            return Some(json!({"kind": kind, "groups": groups}));
        }
        "APIGroup" => return Some(json!({"kind": kind, "group": group(v)})),
        "APIResourceList" => {
            let mut res = BTreeMap::new();
            for r in v["resources"].as_array().into_iter().flatten() {
                let mut e = Map::new();
                for k in [
                    "kind",
                    "namespaced",
                    "singularName",
                    "group",
                    "version",
                    "storageVersionHash",
                ] {
                    if let Some(x) = r.get(k) {
                        e.insert(k.into(), x.clone());
                    }
                }
                for k in ["verbs", "shortNames", "categories"] {
                    if let Some(x) = r.get(k) {
                        e.insert(k.into(), sorted_strings(x));
                    }
                }
                res.insert(
                    r["name"].as_str().unwrap_or("").to_string(),
                    Value::Object(e),
                );
            }
            return Some(
                json!({"kind": kind, "groupVersion": v["groupVersion"], "resources": res}),
            );
        }
        "APIGroupDiscoveryList" => {
            let mut groups = BTreeMap::new();
            for g in v["items"].as_array().into_iter().flatten() {
                let mut versions = BTreeMap::new();
                for ver in g["versions"].as_array().into_iter().flatten() {
                    let mut res = BTreeMap::new();
                    for r in ver["resources"].as_array().into_iter().flatten() {
                        let mut e = Map::new();
                        for k in ["scope", "singularResource", "responseKind"] {
                            if let Some(x) = r.get(k) {
                                e.insert(k.into(), x.clone());
                            }
                        }
                        for k in ["verbs", "shortNames", "categories"] {
                            if let Some(x) = r.get(k) {
                                e.insert(k.into(), sorted_strings(x));
                            }
                        }
                        let mut subs = BTreeMap::new();
                        for s in r["subresources"].as_array().into_iter().flatten() {
                            subs.insert(
                                s["subresource"].as_str().unwrap_or("").to_string(),
                                json!({"verbs": sorted_strings(&s["verbs"]), "responseKind": s["responseKind"]}),
                            );
                        }
                        if !subs.is_empty() {
                            e.insert("subresources".into(), json!(subs));
                        }
                        res.insert(
                            r["resource"].as_str().unwrap_or("").to_string(),
                            Value::Object(e),
                        );
                    }
                    versions.insert(
                        ver["version"].as_str().unwrap_or("").to_string(),
                        json!({"resources": res}),
                    );
                }
                groups.insert(
                    g["metadata"]["name"].as_str().unwrap_or("").to_string(),
                    json!({"versions": versions, "versionOrder": g["versions"].as_array().map(|a| a.iter().map(|x| x["version"].clone()).collect::<Vec<_>>())}),
                );
            }
            return Some(json!({"kind": kind, "apiVersion": v["apiVersion"], "groups": groups}));
        }
        _ => {}
    }
    if path == "/openapi/v2" || path.starts_with("/openapi/v3/") {
        let mut paths = BTreeMap::new();
        for (p, item) in v["paths"].as_object().into_iter().flatten() {
            let methods: BTreeSet<String> = item
                .as_object()
                .into_iter()
                .flatten()
                .map(|(k, _)| k.clone())
                .filter(|k| k != "parameters")
                .collect();
            paths.insert(p.clone(), json!(methods));
        }
        let defs = v
            .get("definitions")
            .or_else(|| v.pointer("/components/schemas"))
            .and_then(Value::as_object);
        let mut definitions = BTreeMap::new();
        for (name, d) in defs.into_iter().flatten() {
            let props: BTreeSet<String> = d["properties"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(k, _)| k.clone())
                .collect();
            definitions.insert(name.clone(), json!(props));
        }
        return Some(
            json!({"version": v.get("swagger").or_else(|| v.get("openapi")), "paths": paths, "definitions": definitions}),
        );
    }
    if path == "/openapi/v3" {
        let keys: BTreeSet<String> = v["paths"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, _)| k.clone())
            .collect();
        return Some(json!({"paths": keys}));
    }
    None
}

fn group(g: &Value) -> Value {
    let versions: Vec<Value> = g["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|x| x["groupVersion"].clone())
        .collect();
    json!({"versions": versions, "preferredVersion": g["preferredVersion"]["groupVersion"]})
}

/// Reads a protobuf varint at `*i`.
fn varint(b: &[u8], i: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let c = *b.get(*i)?;
        *i += 1;
        v |= u64::from(c & 0x7f) << shift;
        if c & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

/// One field of a protobuf message: field number, wire type, and the value's bytes when it is
/// length-delimited.
type Field<'a> = (u64, u8, Option<&'a [u8]>);

/// The fields of one protobuf message.
fn fields(b: &[u8]) -> Option<Vec<Field<'_>>> {
    let mut i = 0;
    let mut out = Vec::new();
    while i < b.len() {
        let tag = varint(b, &mut i)?;
        let (num, wt) = (tag >> 3, (tag & 7) as u8);
        match wt {
            0 => {
                varint(b, &mut i)?;
                out.push((num, wt, None));
            }
            1 => {
                i += 8;
                out.push((num, wt, None));
            }
            2 => {
                let len = usize::try_from(varint(b, &mut i)?).ok()?;
                let v = b.get(i..i.checked_add(len)?)?;
                i += len;
                out.push((num, wt, Some(v)));
            }
            5 => {
                i += 4;
                out.push((num, wt, None));
            }
            _ => return None,
        }
    }
    (i == b.len()).then_some(out)
}

fn shape(b: &[u8]) -> Value {
    let Some(fs) = fields(b) else {
        return json!("<not protobuf>");
    };
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for (n, wt, _) in &fs {
        *counts.entry(format!("{n}:{wt}")).or_default() += 1;
    }
    json!(counts)
}

/// See the module comment.
fn protobuf(b: &[u8]) -> Value {
    let Some(inner) = b.strip_prefix(b"k8s\0") else {
        return json!({"protobuf": "document", "fields": shape(b)});
    };
    let Some(fs) = fields(inner) else {
        return json!({"protobuf": "<undecodable envelope>"});
    };
    let mut out = Map::new();
    for (n, _, v) in fs {
        let Some(v) = v else { continue };
        match n {
            1 => {
                for (tn, _, tv) in fields(v).unwrap_or_default() {
                    let s = String::from_utf8_lossy(tv.unwrap_or_default()).to_string();
                    out.insert(if tn == 1 { "apiVersion" } else { "kind" }.into(), json!(s));
                }
            }
            2 => {
                out.insert("raw".into(), shape(v));
            }
            3 => {
                out.insert("contentEncoding".into(), json!(String::from_utf8_lossy(v)));
            }
            4 => {
                out.insert("contentType".into(), json!(String::from_utf8_lossy(v)));
            }
            _ => {}
        }
    }
    json!({"protobuf": out})
}
