//! Validation and defaulting as kube-apiserver v1.35.4 does them (issue #28).
//!
//! The cases are data (`data/validation_1_35.yaml`): each a request, with the requests that set
//! it up. What kube-apiserver v1.35.4 answered to each is recorded, status code and body, in
//! `data/validation_1_35.expected.json`: captured from the real binaries
//! (`FAULTLINE_RECORD_VALIDATION=1 cargo test -p faultline-sim --test validation_1_35 --
//! --nocapture` rewrites it from a running v1.35.4).
//!
//! - `the_sim_answers_as_kube_apiserver_1_35_4`: the sim alone, against the recorded answers.
//! - `judge_the_sim_against_kube_apiserver`: the same requests to a real etcd + kube-apiserver
//!   v1.35.4 (crate `faultline-upstream`) and to the sim, answers compared; `SKIPPED` when the
//!   upstream binaries cannot be had here.

mod common;

use common::TestCluster;
use http::{Method, Request};
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;

#[derive(Debug, Deserialize, Clone)]
struct Req {
    method: String,
    path: String,
    #[serde(rename = "contentType")]
    content_type: Option<String>,
    body: Option<Value>,
}

#[derive(Debug, Deserialize, Clone)]
struct Case {
    name: String,
    #[allow(dead_code)]
    upstream: String,
    #[serde(default)]
    setup: Vec<Req>,
    request: Req,
    #[serde(default)]
    compare: Compare,
}

#[derive(Debug, Deserialize, Clone, Copy, Default, PartialEq)]
#[serde(rename_all = "kebab-case")]
enum Compare {
    /// The answer byte for byte (code and body).
    #[default]
    Status,
    /// The Status with its messages cut at the first newline (upstream appends a go-cmp diff).
    StatusBeforeDiff,
    /// The status code only.
    Code,
    /// A created object: code and body as JSON values, without what differs between any two
    /// servers (uid, resourceVersion, timestamps, managedFields, allocated cluster IPs, the
    /// generated name of the token volume).
    Object,
    /// `object` without the status, which the sim's controllers (running in every mode) may
    /// have written by the time an update answers.
    ObjectWithoutStatus,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, Deserialize)]
struct Answer {
    code: u16,
    body: String,
}

fn data(file: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(file)
}

fn cases() -> Vec<Case> {
    let text = std::fs::read_to_string(data("validation_1_35.yaml")).expect("cases");
    let mut cases: Vec<Case> = serde_yaml::from_str(&text).expect("cases parse");
    for c in &mut cases {
        for r in c.setup.iter_mut().chain(std::iter::once(&mut c.request)) {
            if let Some(b) = r.body.as_mut() {
                expand(b);
            }
        }
    }
    cases
}

/// Expands the strings `<repeat N c>` of a body (large values, kept short in the file).
fn expand(v: &mut Value) {
    match v {
        Value::String(s) => {
            if let Some(spec) = s.strip_prefix("<repeat ").and_then(|r| r.strip_suffix('>')) {
                if let Some((n, c)) = spec.split_once(' ') {
                    *s = c.repeat(n.parse().expect("repeat count"));
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(expand),
        Value::Object(m) => m.values_mut().for_each(expand),
        _ => {}
    }
}

fn recorded() -> BTreeMap<String, Answer> {
    let text = std::fs::read_to_string(data("validation_1_35.expected.json")).expect("recorded");
    serde_json::from_str(&text).expect("recorded parse")
}

async fn send(client: &kube::Client, r: &Req) -> Answer {
    let method = Method::from_bytes(r.method.as_bytes()).expect("method");
    let mut b = Request::builder()
        .method(method)
        .uri(&r.path)
        .header("Accept", "application/json");
    let body = match &r.body {
        Some(v) => {
            b = b.header(
                "Content-Type",
                r.content_type.as_deref().unwrap_or("application/json"),
            );
            serde_json::to_vec(v).expect("body")
        }
        None => vec![],
    };
    let req = b.body(kube::client::Body::from(body)).expect("request");
    let resp = client.send(req).await.expect("transport");
    let code = resp.status().as_u16();
    let bytes = http_body_util::BodyExt::collect(resp.into_body())
        .await
        .expect("body")
        .to_bytes();
    Answer {
        code,
        body: String::from_utf8_lossy(&bytes)
            .trim_end_matches('\n')
            .to_string(),
    }
}

/// What of an answer a case compares.
fn compared(mode: Compare, a: &Answer) -> Answer {
    match mode {
        Compare::Object | Compare::ObjectWithoutStatus => {
            let mut v: Value = serde_json::from_str(&a.body).unwrap_or(Value::Null);
            if mode == Compare::ObjectWithoutStatus {
                v.as_object_mut().map(|m| m.remove("status"));
            }
            let uid = v
                .pointer("/metadata/uid")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            scrub(&mut v, &uid);
            Answer {
                code: a.code,
                body: canonical(&v),
            }
        }
        Compare::Status => a.clone(),
        Compare::Code => Answer {
            code: a.code,
            body: String::new(),
        },
        Compare::StatusBeforeDiff => {
            let mut v: Value = serde_json::from_str(&a.body).unwrap_or(Value::Null);
            let cut = |s: &mut Value| {
                if let Some(m) = s.as_str() {
                    *s = Value::String(m.split('\n').next().unwrap_or("").to_string());
                }
            };
            cut(&mut v["message"]);
            if let Some(causes) = v
                .pointer_mut("/details/causes")
                .and_then(Value::as_array_mut)
            {
                for c in causes {
                    cut(&mut c["message"]);
                }
            }
            Answer {
                code: a.code,
                body: v.to_string(),
            }
        }
    }
}

/// Removes what two servers never agree on from a created object.
fn scrub(v: &mut Value, uid: &str) {
    match v {
        Value::Object(m) => {
            for k in [
                "uid",
                "resourceVersion",
                "creationTimestamp",
                "managedFields",
                "lastPhaseTransitionTime",
            ] {
                m.remove(k);
            }
            for (k, x) in m.iter_mut() {
                match k.as_str() {
                    "clusterIP" if x != "None" => *x = Value::String("<ip>".into()),
                    "clusterIPs" => {
                        for ip in x.as_array_mut().into_iter().flatten() {
                            if ip != "None" {
                                *ip = Value::String("<ip>".into());
                            }
                        }
                    }
                    _ => scrub(x, uid),
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| scrub(x, uid)),
        Value::String(s) if !uid.is_empty() && s.contains(uid) => *s = s.replace(uid, "<uid>"),
        Value::String(s) if s.starts_with("kube-api-access-") => *s = "kube-api-access-<x>".into(),
        _ => {}
    }
}

/// JSON text with object members sorted, for order-insensitive comparison.
fn canonical(v: &Value) -> String {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let members: Vec<String> = keys
                .into_iter()
                .map(|k| format!("{}:{}", Value::String(k.clone()), canonical(&m[k])))
                .collect();
            format!("{{{}}}", members.join(","))
        }
        Value::Array(a) => format!(
            "[{}]",
            a.iter().map(canonical).collect::<Vec<_>>().join(",")
        ),
        other => other.to_string(),
    }
}

/// The namespace every case runs in, with its `default` ServiceAccount (the real apiserver
/// here runs no controller-manager to make one; the sim's may answer 409).
async fn prepare(client: &kube::Client) {
    for r in [
        Req {
            method: "POST".into(),
            path: "/api/v1/namespaces".into(),
            content_type: None,
            body: Some(
                serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "validation"}}),
            ),
        },
        Req {
            method: "POST".into(),
            path: "/api/v1/namespaces/validation/serviceaccounts".into(),
            content_type: None,
            body: Some(
                serde_json::json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}}),
            ),
        },
    ] {
        let a = send(client, &r).await;
        assert!(a.code < 300 || a.code == 409, "{}: {:?}", r.path, a);
    }
}

/// Runs one case: its setup (each must succeed), then the request.
async fn run(client: &kube::Client, case: &Case) -> Answer {
    for s in &case.setup {
        let a = send(client, s).await;
        assert!(
            a.code < 300,
            "{}: setup {} {} answered {}: {}",
            case.name,
            s.method,
            s.path,
            a.code,
            a.body
        );
    }
    send(client, &case.request).await
}

#[tokio::test]
async fn the_sim_answers_as_kube_apiserver_1_35_4() {
    let expected = recorded();
    let c = TestCluster::start(1).await;
    let client = c.client().await;
    prepare(&client).await;
    let mut failures = vec![];
    let all = cases();
    for case in &all {
        let want = expected
            .get(&case.name)
            .unwrap_or_else(|| panic!("{}: no recorded answer (record it)", case.name));
        let got = run(&client, case).await;
        if compared(case.compare, &got) != compared(case.compare, want) {
            failures.push(format!(
                "{}\n  kube-apiserver v1.35.4: {} {}\n  sim:                    {} {}",
                case.name, want.code, want.body, got.code, got.body
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases differ from kube-apiserver v1.35.4:\n{}",
        failures.len(),
        all.len(),
        failures.join("\n")
    );
}

#[tokio::test]
async fn judge_the_sim_against_kube_apiserver() {
    let Some(cp) =
        faultline_upstream::ControlPlane::start_or_skip(faultline_upstream::Options::default())
            .await
    else {
        return;
    };
    let upstream = cp.client();
    let sim = TestCluster::start(1).await;
    let client = sim.client().await;
    prepare(&upstream).await;
    prepare(&client).await;
    let record = std::env::var("FAULTLINE_RECORD_VALIDATION").is_ok_and(|v| v == "1");
    let previous = if record { BTreeMap::new() } else { recorded() };
    let mut answers = BTreeMap::new();
    let mut differ = vec![];
    let mut stale = vec![];
    let all = cases();
    for case in &all {
        let real = run(&upstream, case).await;
        let got = run(&client, case).await;
        if compared(case.compare, &got) != compared(case.compare, &real) {
            differ.push(format!(
                "{}\n  kube-apiserver: {} {}\n  sim:            {} {}",
                case.name, real.code, real.body, got.code, got.body
            ));
        }
        if let Some(p) = previous.get(&case.name) {
            if compared(case.compare, p) != compared(case.compare, &real) {
                stale.push(case.name.clone());
            }
        }
        answers.insert(case.name.clone(), real);
    }
    let identical = all.len() - differ.len();
    println!(
        "judge: {identical} of {} answers identical between kube-apiserver {} and the sim",
        all.len(),
        faultline_upstream::KUBERNETES_VERSION
    );
    if record {
        let text = serde_json::to_string_pretty(&answers).expect("json") + "\n";
        std::fs::write(data("validation_1_35.expected.json"), text).expect("write");
        println!("recorded {} answers", answers.len());
    }
    cp.stop().await.expect("stop");
    assert!(
        stale.is_empty(),
        "the recorded answers of {:?} are not what kube-apiserver answers now: record them again",
        stale
    );
    assert!(
        differ.is_empty(),
        "{} of {} answers differ:\n{}",
        differ.len(),
        all.len(),
        differ.join("\n")
    );
}
