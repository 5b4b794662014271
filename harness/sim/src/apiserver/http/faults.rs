//! API-level faults (sim only): fail a fraction of matching requests, or answer them late.
//! The controller under test sees what a struggling apiserver looks like: 5xx/429 Status
//! errors and slow responses, on the verbs and resources chosen.

use crate::apiserver::status::{ApiError, ApiResult};
use axum::http::{Method, StatusCode};
use axum::response::Response;
use parking_lot::Mutex;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::sync::Arc;
use std::time::Duration;

#[derive(Debug, Clone, PartialEq)]
pub enum ApiFaultKind {
    /// Fail `rate` (0 < rate <= 1) of matching requests with `code`.
    Errors {
        rate: f64,
        code: u16,
    },
    Latency(Duration),
}

#[derive(Debug, Clone, PartialEq)]
pub struct ApiFault {
    pub kind: ApiFaultKind,
    /// get, list, watch, create, update, patch, delete, deletecollection; empty: all.
    pub verbs: Vec<String>,
    /// Resource plurals (pods, workspaces, ...); empty: all.
    pub resources: Vec<String>,
}

impl ApiFault {
    /// The API fault a catalogue operation stands for (`apiErrors`, `apiLatency`); `None` for
    /// every node operation. The one place the catalogue's parameters become an `ApiFault`.
    pub fn from_operation(op: &faultline_faults::NodeOperation) -> Option<ApiFault> {
        use faultline_faults::NodeOperation as N;
        match op {
            N::ApiErrors(a) => Some(ApiFault {
                kind: ApiFaultKind::Errors {
                    rate: a.rate,
                    code: a.code,
                },
                verbs: a.verbs.clone(),
                resources: a.resources.clone(),
            }),
            N::ApiLatency(l) => Some(ApiFault {
                kind: ApiFaultKind::Latency(l.latency.get()),
                verbs: l.verbs.clone(),
                resources: l.resources.clone(),
            }),
            _ => None,
        }
    }
}

/// `/faultline/v1/apifaults`, for tests outside the runner (go/faultlinetest, docs/go.md):
/// `POST` a catalogue operation (`{"apiErrors": {...}}` or `{"apiLatency": {...}}`, as a
/// scenario writes it) and get its id (201); `DELETE .../<id>` removes that fault, `DELETE`
/// without an id removes all. Served after authentication, in API-only mode too.
pub fn control(
    faults: &ApiFaults,
    method: &Method,
    rest: &[&str],
    body: &[u8],
) -> ApiResult<Response> {
    let ok = |code: StatusCode, v: serde_json::Value| {
        super::json_response(code, &v, &super::negotiate::Output::Json, &[])
    };
    match (method.clone(), rest) {
        (Method::POST, []) => {
            let op: faultline_faults::NodeOperation = serde_json::from_slice(body)
                .map_err(|e| ApiError::bad_request(format!("an API fault: {e}")))?;
            let fault = ApiFault::from_operation(&op).ok_or_else(|| {
                ApiError::bad_request(format!(
                    "{} is not an API fault: use apiErrors or apiLatency (node operations go to /faultline/v1/nodes/<node>/ops)",
                    op.key()
                ))
            })?;
            if let ApiFaultKind::Errors { rate, code } = fault.kind {
                if !(rate > 0.0 && rate <= 1.0) {
                    return Err(ApiError::bad_request(format!(
                        "apiErrors.rate: {rate} is not in (0, 1]"
                    )));
                }
                if !(400..=599).contains(&code) {
                    return Err(ApiError::bad_request(format!(
                        "apiErrors.code: {code} is not an HTTP error status (400-599)"
                    )));
                }
            }
            let id = faults.add(fault);
            Ok(ok(StatusCode::CREATED, serde_json::json!({"id": id})))
        }
        (Method::DELETE, []) => {
            faults.clear();
            Ok(ok(StatusCode::OK, serde_json::json!({"removed": "all"})))
        }
        (Method::DELETE, [id]) => {
            let id: u64 = id
                .parse()
                .map_err(|_| ApiError::bad_request(format!("{id:?} is not an API fault id")))?;
            if faults.remove(id) {
                Ok(ok(StatusCode::OK, serde_json::json!({"removed": id})))
            } else {
                Err(ApiError::new(
                    404,
                    "NotFound",
                    format!("no active API fault {id}"),
                ))
            }
        }
        _ => Err(ApiError::new(
            405,
            "MethodNotAllowed",
            "the API faults endpoint takes POST and DELETE",
        )),
    }
}

/// `GET /faultline/v1/catalogue`: every node operation of the fault catalogue with what it acts
/// on and whether it is held (`{"operations": [{"key", "area", "lifetime"}]}`), so clients in
/// other languages can check that they offer each one (go/faultlinetest/storage does).
pub fn catalogue() -> Response {
    use faultline_faults::{Lifetime, NodeOperation};
    let ops: Vec<serde_json::Value> = NodeOperation::examples("node")
        .iter()
        .map(|op| {
            serde_json::json!({
                "key": op.key(),
                "area": op.area().name(),
                "lifetime": match op.lifetime() {
                    Lifetime::Held => "held",
                    Lifetime::OneShot => "oneShot",
                },
            })
        })
        .collect();
    super::json_response(
        StatusCode::OK,
        &serde_json::json!({ "operations": ops }),
        &super::negotiate::Output::Json,
        &[],
    )
}

struct Active {
    id: u64,
    fault: ApiFault,
}

/// The set of active API faults, shared by the HTTP front end and whoever injects them.
#[derive(Clone)]
pub struct ApiFaults {
    inner: Arc<Mutex<(Vec<Active>, u64, StdRng)>>,
}

impl Default for ApiFaults {
    fn default() -> Self {
        Self::seeded(0)
    }
}

impl ApiFaults {
    /// Decisions come from a seeded generator, so a run with the same seed fails the same requests.
    pub fn seeded(seed: u64) -> Self {
        ApiFaults {
            inner: Arc::new(Mutex::new((vec![], 1, StdRng::seed_from_u64(seed)))),
        }
    }

    pub fn add(&self, fault: ApiFault) -> u64 {
        let mut g = self.inner.lock();
        let id = g.1;
        g.1 += 1;
        g.0.push(Active { id, fault });
        id
    }

    pub fn remove(&self, id: u64) -> bool {
        let mut g = self.inner.lock();
        let before = g.0.len();
        g.0.retain(|a| a.id != id);
        before != g.0.len()
    }

    pub fn clear(&self) {
        self.inner.lock().0.clear();
    }

    /// What happens to a request: an injected error, and/or a delay before it is served.
    pub fn decide(&self, verb: &str, resource: &str) -> (Option<ApiError>, Duration) {
        let mut g = self.inner.lock();
        let (active, _, rng) = &mut *g;
        let mut delay = Duration::ZERO;
        let mut error = None;
        for a in active.iter() {
            let f = &a.fault;
            let verb_ok = f.verbs.is_empty() || f.verbs.iter().any(|v| v == verb);
            let res_ok = f.resources.is_empty() || f.resources.iter().any(|r| r == resource);
            if !(verb_ok && res_ok) {
                continue;
            }
            match &f.kind {
                ApiFaultKind::Latency(d) => delay += *d,
                ApiFaultKind::Errors { rate, code } => {
                    if error.is_none() && rng.random::<f64>() < *rate {
                        error = Some(injected(*code));
                    }
                }
            }
        }
        (error, delay)
    }
}

fn injected(code: u16) -> ApiError {
    match code {
        429 => ApiError::too_many_requests("the server has received too many requests and has asked us to try again later (injected by faultline)"),
        503 => ApiError::service_unavailable("the server is currently unable to handle the request (injected by faultline)"),
        504 => ApiError::new(504, "Timeout", "the server was unable to return a response in the time allotted (injected by faultline)"),
        409 => ApiError::new(409, "Conflict", "the object has been modified; please apply your changes to the latest version and try again (injected by faultline)"),
        c => ApiError::new(c, "InternalError", "Internal error occurred: injected by faultline"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status_of(r: ApiResult<Response>) -> u16 {
        match r {
            Ok(resp) => resp.status().as_u16(),
            Err(e) => e.code,
        }
    }

    #[test]
    fn the_control_endpoint_adds_and_removes_catalogue_api_faults() {
        let f = ApiFaults::seeded(1);
        let body = br#"{"apiErrors": {"rate": 1, "code": 503, "verbs": ["get"], "resources": ["configmaps"]}}"#;
        assert_eq!(status_of(control(&f, &Method::POST, &[], body)), 201);
        let (err, _) = f.decide("get", "configmaps");
        assert_eq!(err.map(|e| e.code), Some(503));
        assert!(f.decide("list", "configmaps").0.is_none());
        let latency = br#"{"apiLatency": {"latency": "250ms"}}"#;
        assert_eq!(status_of(control(&f, &Method::POST, &[], latency)), 201);
        assert_eq!(f.decide("list", "pods").1, Duration::from_millis(250));
        // Ids count from 1: the first fault goes, the latency stays.
        assert_eq!(status_of(control(&f, &Method::DELETE, &["1"], b"")), 200);
        assert!(f.decide("get", "configmaps").0.is_none());
        assert_eq!(status_of(control(&f, &Method::DELETE, &["1"], b"")), 404);
        assert_eq!(status_of(control(&f, &Method::DELETE, &[], b"")), 200);
        assert_eq!(f.decide("list", "pods").1, Duration::ZERO);
    }

    #[test]
    fn the_control_endpoint_refuses_what_is_not_an_api_fault() {
        let f = ApiFaults::seeded(1);
        for (body, says) in [
            (
                &br#"{"kubeletStop": {"node": "worker-01"}}"#[..],
                "is not an API fault",
            ),
            (br#"{"apiErrors": {"rate": 0}}"#, "apiErrors.rate"),
            (
                br#"{"apiErrors": {"rate": 0.5, "code": 200}}"#,
                "apiErrors.code",
            ),
            (br#"{"apiErrors": {"rate": 0.5, "colour": 1}}"#, "colour"),
            (b"{", "an API fault"),
        ] {
            let e = control(&f, &Method::POST, &[], body).unwrap_err();
            assert_eq!(e.code, 400, "{}", e.message);
            assert!(e.message.contains(says), "{}", e.message);
        }
        assert_eq!(status_of(control(&f, &Method::GET, &[], b"")), 405);
        assert_eq!(status_of(control(&f, &Method::DELETE, &["x"], b"")), 400);
    }

    #[test]
    fn errors_follow_rate_and_filters_and_are_seeded() {
        let f = ApiFaults::seeded(7);
        let id = f.add(ApiFault {
            kind: ApiFaultKind::Errors {
                rate: 0.5,
                code: 503,
            },
            verbs: vec!["update".into()],
            resources: vec!["workspaces".into()],
        });
        let hits = (0..1000)
            .filter(|_| f.decide("update", "workspaces").0.is_some())
            .count();
        assert!((400..600).contains(&hits), "{hits}");
        assert!(f.decide("get", "workspaces").0.is_none());
        assert!(f.decide("update", "pods").0.is_none());
        let g = ApiFaults::seeded(7);
        g.add(ApiFault {
            kind: ApiFaultKind::Errors {
                rate: 0.5,
                code: 503,
            },
            verbs: vec![],
            resources: vec![],
        });
        let h = ApiFaults::seeded(7);
        h.add(ApiFault {
            kind: ApiFaultKind::Errors {
                rate: 0.5,
                code: 503,
            },
            verbs: vec![],
            resources: vec![],
        });
        let a: Vec<bool> = (0..50)
            .map(|_| g.decide("get", "pods").0.is_some())
            .collect();
        let b: Vec<bool> = (0..50)
            .map(|_| h.decide("get", "pods").0.is_some())
            .collect();
        assert_eq!(a, b, "same seed, same decisions");
        assert!(f.remove(id));
        assert!(f.decide("update", "workspaces").0.is_none());
    }

    #[test]
    fn latency_adds_up() {
        let f = ApiFaults::default();
        f.add(ApiFault {
            kind: ApiFaultKind::Latency(Duration::from_millis(20)),
            verbs: vec![],
            resources: vec!["pods".into()],
        });
        f.add(ApiFault {
            kind: ApiFaultKind::Latency(Duration::from_millis(30)),
            verbs: vec!["list".into()],
            resources: vec![],
        });
        assert_eq!(f.decide("list", "pods").1, Duration::from_millis(50));
        assert_eq!(f.decide("get", "pods").1, Duration::from_millis(20));
        assert_eq!(f.decide("get", "nodes").1, Duration::ZERO);
        assert_eq!(f.decide("get", "nodes").0.map(|e| e.code), None);
    }
}
