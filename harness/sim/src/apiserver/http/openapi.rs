//! Serving the OpenAPI documents (`crate::apiserver::openapi`): JSON or gnostic protobuf for v2, entity
//! tags with `If-None-Match`, and the v3 hash protocol (a URL carrying the current hash is
//! immutable, an outdated hash is redirected to the current one).

use crate::apiserver::openapi::Rendered;
use crate::apiserver::ApiServer;
use axum::body::Body;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};

/// The media type client-go before 1.27 requests `/openapi/v2` in.
pub const PROTO_V2: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";
/// What the answer is labelled: the media type with `.` for `@` (kube-openapi's handler; checked
/// against kube-apiserver 1.35).
const PROTO_V2_LABEL: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

fn respond(
    r: &Rendered,
    content_type: &str,
    if_none_match: Option<&str>,
    cache_control: &str,
) -> Response {
    let builder = Response::builder()
        .header(header::ETAG, &r.etag)
        .header(header::CACHE_CONTROL, cache_control)
        .header(header::VARY, "Accept");
    let matched = if_none_match.is_some_and(|tags| {
        tags.split(',')
            .any(|t| t.trim() == r.etag || t.trim() == "*")
    });
    let built = if matched {
        builder.status(StatusCode::NOT_MODIFIED).body(Body::empty())
    } else {
        builder
            .status(StatusCode::OK)
            .header(header::CONTENT_TYPE, content_type)
            .body(Body::from(r.body.clone()))
    };
    built.unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

pub fn v2(api: &ApiServer, accept: Option<&str>, if_none_match: Option<&str>) -> Response {
    let docs = api.openapi.docs(&api.registry);
    let (json, proto) = docs.v2(&api.registry);
    if accept.is_some_and(|a| a.contains(PROTO_V2.split('@').next().unwrap_or(PROTO_V2))) {
        respond(proto, PROTO_V2_LABEL, if_none_match, "no-cache, private")
    } else {
        respond(json, "application/json", if_none_match, "no-cache, private")
    }
}

pub fn v3_root(api: &ApiServer, if_none_match: Option<&str>) -> Response {
    let docs = api.openapi.docs(&api.registry);
    // kube-openapi writes the index without a Content-Type: Go's sniffing labels it text.
    respond(
        &docs.v3(&api.registry).root,
        "text/plain; charset=utf-8",
        if_none_match,
        "no-cache, private",
    )
}

/// One group-version document, `None` when the group-version is not served.
pub fn v3_group_version(
    api: &ApiServer,
    key: &str,
    hash: Option<&str>,
    if_none_match: Option<&str>,
) -> Option<Response> {
    let docs = api.openapi.docs(&api.registry);
    let (doc, current) = docs.v3(&api.registry).docs.get(key)?;
    Some(match hash {
        Some(h) if h == current => {
            respond(doc, "application/json", if_none_match, "public, immutable")
        }
        Some(_) => Response::builder()
            .status(StatusCode::MOVED_PERMANENTLY)
            .header(
                header::LOCATION,
                format!("/openapi/v3/{key}?hash={current}"),
            )
            .body(Body::empty())
            .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response()),
        None => respond(doc, "application/json", if_none_match, "no-cache, private"),
    })
}
