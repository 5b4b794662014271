//! The API request path as a fuzz target: raw bytes become one HTTP request sent straight to the
//! router (no socket, no TLS), twice: once as written and once without credentials. Shared by
//! the cargo-fuzz target (`harness/fuzz`) and the replay test (`tests/fuzz_replay.rs`), so a
//! crash the fuzzer finds becomes a regression test by dropping its input into the corpus.
//!
//! Input format (text, so seeds stay readable): the first line is `METHOD TARGET`, then header
//! lines `name: value` up to a blank line, then the body. Without an `authorization` header the
//! right bearer token is added. Invariants checked, each a panic (= a fuzzer crash):
//! - the handler never panics and never answers 5xx (no API faults are configured), except
//!   the few 5xx a real apiserver gives for the same request and state (`UPSTREAM_5XX`);
//! - a request without the exact token gets 401 with a `Status` body and changes nothing
//!   (the store's resourceVersion stays put);
//! - every error answer is a JSON `Status` whose `code` is the HTTP status (or, for a path no
//!   handler serves, Go's plain-text `404 page not found`);
//! - a complete `application/json` body parses as JSON.

use crate::apiserver::http::{self, faults::ApiFaults, HttpState};
use crate::apiserver::protobuf;
use crate::apiserver::ApiServer;
use axum::body::Body;
use axum::http::{header, HeaderName, HeaderValue, Method, Request, StatusCode};
use std::sync::Arc;
use std::time::Duration;
use tower::ServiceExt;

pub const TOKEN: &str = "fuzz-token-0123456789abcdef";

/// An API-only simulated cluster (bootstrap namespaces, three static nodes) and a runtime to
/// drive its router. No background controllers run, so only requests change the store.
pub struct ApiTarget {
    rt: tokio::runtime::Runtime,
    api: Arc<ApiServer>,
    router: axum::Router,
}

impl ApiTarget {
    pub fn new() -> ApiTarget {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("tokio runtime");
        let api = ApiServer::new(1000);
        let nodes: Vec<String> = (1..=3).map(|i| format!("worker-{:02}", i)).collect();
        crate::server::bootstrap(&api, &nodes).expect("bootstrap objects");
        let state = HttpState {
            api: api.clone(),
            control: None,
            faults: ApiFaults::seeded(0),
            fault_endpoints: true,
            trace: Default::default(),
            token: Arc::new(TOKEN.to_string()),
            auth: Arc::new(crate::apiserver::auth::Auth::new(TOKEN)),
            address: Arc::new("127.0.0.1:6443".into()),
        };
        ApiTarget {
            rt,
            api,
            router: http::router(state),
        }
    }

    /// Run one fuzz input; panics when an invariant above is broken.
    pub fn run(&self, data: &[u8]) {
        let Some(req) = ParsedRequest::parse(data) else {
            return;
        };
        // Without credentials first: nothing may change and the answer is 401.
        let before = self.api.store.current_rv();
        let (status, ctype, body) = self.send(&req, false);
        assert_eq!(
            status,
            StatusCode::UNAUTHORIZED,
            "a request without a token got {status}"
        );
        assert_status_body(status, ctype.as_deref(), body.as_deref());
        assert_eq!(
            self.api.store.current_rv(),
            before,
            "a request without a token changed the store"
        );

        let before = self.api.store.current_rv();
        let (status, ctype, body) = self.send(&req, true);
        assert!(
            status.as_u16() < 500 || is_upstream_5xx(status, ctype.as_deref(), body.as_deref()),
            "the API answered {status} to {} {}: {}",
            req.method,
            req.target,
            String::from_utf8_lossy(body.as_deref().unwrap_or_default())
        );
        if !req.has_exact_token() {
            assert_eq!(
                status,
                StatusCode::UNAUTHORIZED,
                "a wrong authorization header got {status}"
            );
            assert_eq!(
                self.api.store.current_rv(),
                before,
                "a request with a wrong token changed the store"
            );
        }
        if status.as_u16() >= 400 {
            assert_status_body(status, ctype.as_deref(), body.as_deref());
        } else if let (Some(ct), Some(b)) = (ctype.as_deref(), body.as_deref()) {
            if ct.starts_with("application/json") && !b.is_empty() {
                if let Err(e) = serde_json::from_slice::<serde_json::Value>(b) {
                    panic!("{} {} answered {status} with content-type {ct} but the body is not JSON ({e}): {}", req.method, req.target, String::from_utf8_lossy(b));
                }
            }
        }
    }

    /// Send the request; the body is read only if it is complete within a moment (watches and
    /// log follows stream until the client goes away).
    fn send(
        &self,
        req: &ParsedRequest,
        with_auth: bool,
    ) -> (StatusCode, Option<String>, Option<Vec<u8>>) {
        let mut b = Request::builder()
            .method(req.method.clone())
            .uri(req.target.as_str());
        for (k, v) in &req.headers {
            if !with_auth && *k == header::AUTHORIZATION {
                continue;
            }
            b = b.header(k, v);
        }
        if with_auth && !req.headers.iter().any(|(k, _)| *k == header::AUTHORIZATION) {
            b = b.header(header::AUTHORIZATION, format!("Bearer {TOKEN}"));
        }
        let request = b
            .body(Body::from(req.body.clone()))
            .expect("parse() validated method, target and headers");
        self.rt.block_on(async {
            let resp = self
                .router
                .clone()
                .oneshot(request)
                .await
                .expect("the router is infallible");
            let status = resp.status();
            let ctype = resp
                .headers()
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .map(String::from);
            let body = tokio::time::timeout(
                Duration::from_millis(20),
                axum::body::to_bytes(resp.into_body(), 64 << 20),
            )
            .await;
            (
                status,
                ctype,
                body.ok().and_then(Result::ok).map(|b| b.to_vec()),
            )
        })
    }
}

impl Default for ApiTarget {
    fn default() -> Self {
        Self::new()
    }
}

/// The 5xx answers the real apiserver also gives, as (code, reason, message start, message
/// end): impersonating groups, a uid or extras without a user (the impersonation filter's
/// InternalError); an allocator out of addresses or ports; an eviction of a pod with several
/// PodDisruptionBudgets; a resourceVersion from the future.
const UPSTREAM_5XX: &[(u16, &str, &str, &str)] = &[
    // Server-side apply of a configuration that does not fit the schema: the field manager's
    // plain error (structuredmerge.go), checked against kube-apiserver 1.35.
    (500, "", "failed to create typed patch object (", ""),
    // A strategic merge patch the library cannot apply (interpretStrategicMergePatchError).
    (500, "", "unknown patch type: ", ""),
    (500, "", "map: ", ""),
    (500, "", "list element types are not identical: ", ""),
    (500, "", "cannot merge lists without merge key for ", ""),
    (
        500,
        "",
        "merging lists cannot yet be specified in the patch",
        "",
    ),
    // A resourceVersion that is not a number (APIObjectVersioner, etcd3 store).
    (500, "", "strconv.ParseUint: parsing ", ""),
    (500, "", "resourceVersion: Invalid value: ", ""),
    (
        500,
        "",
        "resourceVersion should not be set on objects to be created",
        "",
    ),
    (
        500,
        "InternalError",
        "Internal error occurred: requested ",
        " without impersonating a user",
    ),
    (
        500,
        "InternalError",
        "Internal error occurred: failed to allocate a ",
        ": range is full",
    ),
    (
        500,
        "InternalError",
        "This pod has more than one PodDisruptionBudget",
        "",
    ),
    (504, "Timeout", "Too large resource version: ", ""),
];

fn is_upstream_5xx(status: StatusCode, ctype: Option<&str>, body: Option<&[u8]>) -> bool {
    let is_protobuf = ctype.is_some_and(|c| c.starts_with(protobuf::CONTENT_TYPE));
    let Some(v) = body.and_then(|b| {
        if is_protobuf {
            protobuf::decode(b).ok()
        } else {
            serde_json::from_slice::<serde_json::Value>(b).ok()
        }
    }) else {
        return false;
    };
    let (reason, message) = (
        v["reason"].as_str().unwrap_or(""),
        v["message"].as_str().unwrap_or(""),
    );
    UPSTREAM_5XX.iter().any(|(code, r, start, end)| {
        status.as_u16() == *code
            && reason == *r
            && message.starts_with(start)
            && message.ends_with(end)
    })
}

fn assert_status_body(status: StatusCode, ctype: Option<&str>, body: Option<&[u8]>) {
    let body = body.unwrap_or_else(|| panic!("an error answer ({status}) did not end"));
    // A path no handler serves gets Go's plain-text 404, as kube-apiserver answers it.
    if status == StatusCode::NOT_FOUND
        && ctype.is_some_and(|c| c.starts_with("text/plain"))
        && body == b"404 page not found\n"
    {
        return;
    }
    // A client that prefers protobuf gets its Status in protobuf, as kube-apiserver writes it.
    let v: serde_json::Value = if ctype.is_some_and(|c| c.starts_with(protobuf::CONTENT_TYPE)) {
        protobuf::decode(body)
            .unwrap_or_else(|e| panic!("an error answer ({status}) is not protobuf: {e}"))
    } else {
        assert!(
            ctype.is_some_and(|c| c.starts_with("application/json")),
            "an error answer ({status}) has content-type {ctype:?}"
        );
        serde_json::from_slice(body)
            .unwrap_or_else(|e| panic!("an error answer ({status}) is not JSON: {e}"))
    };
    assert_eq!(
        v["kind"], "Status",
        "an error answer ({status}) is not a Status: {v}"
    );
    assert_eq!(
        v["code"].as_u64(),
        Some(status.as_u16() as u64),
        "Status.code differs from the HTTP status: {v}"
    );
}

/// One request decoded from fuzz bytes; `None` when the bytes cannot form a request line that
/// the HTTP layer would ever hand to the router (hyper rejects those itself).
pub struct ParsedRequest {
    pub method: Method,
    pub target: String,
    pub headers: Vec<(HeaderName, HeaderValue)>,
    pub body: Vec<u8>,
}

impl ParsedRequest {
    pub fn parse(data: &[u8]) -> Option<ParsedRequest> {
        let (head, body) = match find(data, b"\n\n") {
            Some(i) => (&data[..i], &data[i + 2..]),
            None => (data, &[][..]),
        };
        let head = std::str::from_utf8(head).ok()?;
        let mut lines = head.lines();
        let (m, target) = lines.next()?.trim_end_matches('\r').split_once(' ')?;
        let method = Method::from_bytes(m.as_bytes()).ok()?;
        let target = target.trim().to_string();
        if !target.starts_with('/') || target.parse::<axum::http::Uri>().is_err() {
            return None;
        }
        let mut headers = vec![];
        for l in lines {
            let Some((k, v)) = l.trim_end_matches('\r').split_once(':') else {
                continue;
            };
            let (Ok(k), Ok(v)) = (
                HeaderName::from_bytes(k.trim().as_bytes()),
                HeaderValue::from_str(v.trim()),
            ) else {
                continue;
            };
            headers.push((k, v));
        }
        Some(ParsedRequest {
            method,
            target,
            headers,
            body: body.to_vec(),
        })
    }

    /// Whether the request carries exactly one authorization header with the right token.
    fn has_exact_token(&self) -> bool {
        let auth: Vec<_> = self
            .headers
            .iter()
            .filter(|(k, _)| *k == header::AUTHORIZATION)
            .collect();
        match auth.as_slice() {
            [] => true,
            [(_, v)] => {
                v.to_str()
                    .ok()
                    .and_then(|v| v.strip_prefix("Bearer "))
                    .map(str::trim)
                    == Some(TOKEN)
            }
            _ => false,
        }
    }
}

fn find(h: &[u8], n: &[u8]) -> Option<usize> {
    h.windows(n.len()).position(|w| w == n)
}

/// Inputs of `harness/fuzz/<dir>` (e.g. `corpus/api_request`, `regressions/scenario_loader`).
pub fn fuzz_inputs(dir: &str) -> Vec<(String, Vec<u8>)> {
    corpus(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../fuzz")
            .join(dir),
    )
}

/// Inputs of a fuzz corpus directory (seeds and minimized crashes), sorted by name; empty when
/// the directory does not exist.
pub fn corpus(dir: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().is_file())
        .filter_map(|e| {
            Some((
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).ok()?,
            ))
        })
        .collect();
    v.sort();
    v
}

/// `count` deterministic mutations of `seeds` (byte flips, insertions, deletions, duplicated
/// ranges, splices, boundary values), so the replay tests exercise more than the seeds without
/// cargo-fuzz. Same `rng_seed`, same inputs.
pub fn mutations(seeds: &[Vec<u8>], count: usize, rng_seed: u64) -> Vec<Vec<u8>> {
    use rand::{Rng, SeedableRng};
    const TOKENS: &[&[u8]] = &[
        b"",
        b"-1",
        b"0",
        b"99999999999999999999",
        b"\0",
        b"{",
        b"[",
        b"null",
        b"~",
        b"*a",
        b"&a ",
        b"!!binary ",
        b"\n  ",
        b"\t",
        b": ",
        b"%",
        b"%zz",
        b"\xff",
        b"'",
        b"\"",
    ];
    let mut rng = rand::rngs::StdRng::seed_from_u64(rng_seed);
    let mut out = Vec::with_capacity(count);
    if seeds.is_empty() {
        return out;
    }
    for _ in 0..count {
        let mut d = seeds[rng.random_range(0..seeds.len())].clone();
        for _ in 0..rng.random_range(1..=4) {
            let len = d.len();
            let at = if len == 0 {
                0
            } else {
                rng.random_range(0..len)
            };
            match rng.random_range(0..6) {
                0 if len > 0 => d[at] ^= 1 << rng.random_range(0..8),
                1 => d.insert(at, rng.random()),
                2 if len > 0 => {
                    let end = (at + rng.random_range(1..=16)).min(len);
                    d.drain(at..end);
                }
                3 if len > 0 => {
                    let end = (at + rng.random_range(1..=32)).min(len);
                    let piece = d[at..end].to_vec();
                    d.splice(at..at, piece);
                }
                4 => {
                    let other = &seeds[rng.random_range(0..seeds.len())];
                    let from = if other.is_empty() {
                        0
                    } else {
                        rng.random_range(0..other.len())
                    };
                    d.truncate(at);
                    d.extend_from_slice(&other[from..]);
                }
                _ => {
                    let t = TOKENS[rng.random_range(0..TOKENS.len())];
                    d.splice(at..at, t.iter().copied());
                }
            }
        }
        out.push(d);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_seed_format() {
        let r = ParsedRequest::parse(b"POST /api/v1/namespaces/default/configmaps?dryRun=All\ncontent-type: application/json\n\n{\"a\":1}").unwrap();
        assert_eq!(r.method, Method::POST);
        assert_eq!(r.target, "/api/v1/namespaces/default/configmaps?dryRun=All");
        assert_eq!(r.headers.len(), 1);
        assert_eq!(r.body, b"{\"a\":1}");
        assert!(ParsedRequest::parse(b"GET no-slash").is_none());
        assert!(ParsedRequest::parse(b"\xff\xfe").is_none());
    }

    #[test]
    fn a_wrong_token_is_refused_and_a_create_changes_the_store() {
        let t = ApiTarget::new();
        let rv = t.api.store.current_rv();
        t.run(b"POST /api/v1/namespaces/default/configmaps\ncontent-type: application/json\n\n{\"metadata\":{\"name\":\"a\"}}");
        assert!(
            t.api.store.current_rv() > rv,
            "the authenticated create did not land"
        );
        t.run(b"DELETE /api/v1/namespaces/default/configmaps/a\nauthorization: Bearer not-the-token\n\n");
        let (status, _, _) = t.send(
            &ParsedRequest::parse(b"GET /api/v1/namespaces/default/configmaps/a").unwrap(),
            true,
        );
        assert_eq!(
            status,
            StatusCode::OK,
            "a delete with a wrong token removed the object"
        );
    }

    #[test]
    #[should_panic(expected = "without a token")]
    fn an_invariant_breach_panics() {
        // A router that lets everything through breaks the first invariant.
        let mut t = ApiTarget::new();
        t.router = axum::Router::new().fallback(|| async { "open" });
        t.run(b"GET /version");
    }
}
