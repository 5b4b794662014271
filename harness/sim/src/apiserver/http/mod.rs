//! The HTTP front end: the Kubernetes REST API over the apiserver semantics in `apiserver`.
//! Authentication and authorization on every request (`auth`), content negotiation (JSON, YAML,
//! Table, PartialObjectMetadata, aggregated discovery) and `Status` errors.

pub mod discovery;
pub mod faults;
pub mod negotiate;
pub mod openapi;
pub mod route;
pub mod streaming;
pub mod watch;

use crate::apiserver::auth::{self, Auth, UserInfo};
use crate::apiserver::builtins;
use crate::apiserver::meta;
use crate::apiserver::resources::ResourceType;
use crate::apiserver::selectors::{FieldSelector, LabelSelector};
use crate::apiserver::status::{success_status, ApiError, ApiResult};
use crate::apiserver::store::{DeleteOptions, DeleteOutcome, Propagation};
use crate::apiserver::table;
use crate::apiserver::{ApiServer, ListQuery, PatchType, WriteOptions};
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use negotiate::Output;
use route::{is_true, ResourcePath, Route};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Arc;

/// Largest request body accepted (the real apiserver's limit is 3 MiB for objects).
const MAX_BODY: usize = 3 * 1024 * 1024;

/// What serves the node control endpoint (`/faultline/v1/...`, behind `faultline node`) once the
/// request is authenticated: the simulated cluster (`cluster::control`).
pub trait ControlEndpoint: Send + Sync {
    fn handle(
        &self,
        method: &Method,
        path: &[String],
        query: &HashMap<String, String>,
        body: &[u8],
    ) -> ApiResult<Response>;
}

#[derive(Clone)]
pub struct HttpState {
    pub api: Arc<ApiServer>,
    /// The node control endpoint (`/faultline/v1/...`): the simulated nodes, if any.
    pub control: Option<Arc<dyn ControlEndpoint>>,
    /// Injected API errors and latency (`apiErrors` / `apiLatency` faults).
    pub faults: faults::ApiFaults,
    pub token: Arc<String>,
    /// Authentication (admin token, ServiceAccount tokens) and RBAC: `crate::apiserver::auth`.
    pub auth: Arc<Auth>,
    pub address: Arc<String>,
}

pub fn router(state: HttpState) -> axum::Router {
    axum::Router::new().fallback(handle).with_state(state)
}

async fn handle(State(s): State<HttpState>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let query = route::query_map(parts.uri.query());
    let client_cert = parts
        .extensions
        .get::<crate::tls::VerifiedClientCert>()
        .is_some();
    let user = match auth::check(
        &s.auth,
        &s.api,
        &parts.headers,
        client_cert,
        parts.method.as_str(),
        parts.uri.path(),
        &query,
    ) {
        Ok(u) => u,
        Err(e) => return error_response(&e),
    };
    // exec, attach and portforward take over the connection: they never read a body.
    if let Route::Resource(p) = route::parse(parts.uri.path()) {
        if streaming::is_streaming(&p) {
            return streaming::serve(&s, parts, p).await;
        }
    }
    let body = match axum::body::to_bytes(body, MAX_BODY).await {
        Ok(b) => b,
        Err(_) => {
            return error_response(&ApiError::new(
                413,
                "RequestEntityTooLarge",
                "the request body is too large",
            ))
        }
    };
    let accept = parts
        .headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .map(String::from);
    let content_type = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(String::from);
    let user_agent = parts
        .headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let if_none_match = parts
        .headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .map(String::from);
    let route = route::parse(parts.uri.path());
    if let Route::Resource(p) = &route {
        if let Some(r) = serve_auth(
            &s.auth,
            &s.api,
            &user,
            parts.method.as_str(),
            p,
            content_type.as_deref(),
            &body,
        ) {
            return r
                .map(|v| json_response(StatusCode::CREATED, &v, &Output::Json, &[]))
                .unwrap_or_else(|e| error_response(&e));
        }
    }
    let ctx = RequestContext {
        s: &s,
        method: parts.method.clone(),
        query,
        accept,
        content_type,
        body: &body,
        user_agent,
        if_none_match,
    };
    match dispatch(&ctx, route).await {
        Ok(r) => r,
        Err(e) => error_response(&e),
    }
}

struct RequestContext<'a> {
    s: &'a HttpState,
    method: Method,
    query: HashMap<String, String>,
    accept: Option<String>,
    content_type: Option<String>,
    body: &'a [u8],
    user_agent: String,
    if_none_match: Option<String>,
}

impl RequestContext<'_> {
    fn q(&self, k: &str) -> Option<&str> {
        self.query.get(k).map(String::as_str)
    }
    fn output(&self, discovery: bool) -> ApiResult<Output> {
        negotiate::choose(self.accept.as_deref(), discovery)
    }
    fn write_options(&self) -> WriteOptions {
        WriteOptions {
            dry_run: self.q("dryRun") == Some("All"),
            field_manager: self
                .q("fieldManager")
                .map(String::from)
                .or_else(|| default_manager(&self.user_agent)),
            field_validation: self.q("fieldValidation").map(String::from),
            force: is_true(self.query.get("force")),
        }
    }
}

/// Without `fieldManager`, the apiserver names the manager after the user agent's program name.
fn default_manager(ua: &str) -> Option<String> {
    let prog = ua.split('/').next().unwrap_or("").trim();
    (!prog.is_empty()).then(|| prog.to_string())
}

async fn dispatch(c: &RequestContext<'_>, route: Route) -> ApiResult<Response> {
    let api = &c.s.api;
    let get_only = || {
        if c.method == Method::GET {
            Ok(())
        } else {
            Err(ApiError::method_not_allowed(
                "the server does not allow this method on the requested resource",
            ))
        }
    };
    match route {
        Route::Version => {
            get_only()?;
            Ok(json_response(
                StatusCode::OK,
                &discovery::version(),
                &Output::Json,
                &[],
            ))
        }
        Route::Health => Ok((
            StatusCode::OK,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            "ok",
        )
            .into_response()),
        Route::CoreVersions => {
            get_only()?;
            match c.output(true)? {
                Output::AggregatedDiscovery(v) => Ok(discovery_response(
                    &discovery::aggregated(&api.registry, true, &v),
                    &v,
                )),
                o => Ok(json_response(
                    StatusCode::OK,
                    &discovery::core_versions(&c.s.address),
                    &o,
                    &[],
                )),
            }
        }
        Route::Groups => {
            get_only()?;
            match c.output(true)? {
                Output::AggregatedDiscovery(v) => Ok(discovery_response(
                    &discovery::aggregated(&api.registry, false, &v),
                    &v,
                )),
                o => Ok(json_response(
                    StatusCode::OK,
                    &discovery::groups(&api.registry),
                    &o,
                    &[],
                )),
            }
        }
        Route::Group(g) => {
            get_only()?;
            let doc = discovery::group(&api.registry, &g).ok_or_else(not_found_path)?;
            Ok(json_response(StatusCode::OK, &doc, &c.output(false)?, &[]))
        }
        Route::GroupVersion { group, version } => {
            get_only()?;
            let doc = discovery::resource_list(&api.registry, &group, &version)
                .ok_or_else(not_found_path)?;
            Ok(json_response(StatusCode::OK, &doc, &c.output(false)?, &[]))
        }
        Route::OpenApiV2 => {
            get_only()?;
            Ok(openapi::v2(
                api,
                c.accept.as_deref(),
                c.if_none_match.as_deref(),
            ))
        }
        Route::OpenApiV3Root => {
            get_only()?;
            Ok(openapi::v3_root(api, c.if_none_match.as_deref()))
        }
        Route::OpenApiV3(p) => {
            get_only()?;
            openapi::v3_group_version(api, &p, c.q("hash"), c.if_none_match.as_deref())
                .ok_or_else(not_found_path)
        }
        Route::Resource(p) => resource(c, p).await,
        Route::Control(path) => {
            let control = c.s.control.as_ref().ok_or_else(|| {
                ApiError::new(
                    404,
                    "NotFound",
                    "this server simulates no nodes (started API-only)",
                )
            })?;
            control.handle(&c.method, &path, &c.query, c.body)
        }
        Route::NotFound => Err(not_found_path()),
    }
}

/// The requests `auth` answers rather than the store: the reviews and TokenRequest. `None`
/// when `p` is neither; otherwise the object to answer with 201 Created, or the error.
fn serve_auth(
    auth: &Auth,
    api: &ApiServer,
    user: &UserInfo,
    method: &str,
    p: &ResourcePath,
    content_type: Option<&str>,
    body: &[u8],
) -> Option<ApiResult<Value>> {
    let token_request = p.group.is_empty()
        && p.plural == "serviceaccounts"
        && p.sub.as_deref() == Some("token")
        && p.name.is_some();
    let review =
        auth::reviews::is_review(&p.group, &p.plural) && p.name.is_none() && p.sub.is_none();
    if !(token_request || review) || p.version != "v1" {
        return None;
    }
    if review && (p.namespace.is_some() != (p.plural == "localsubjectaccessreviews")) {
        return Some(Err(ApiError::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )));
    }
    if method != "POST" {
        return Some(Err(ApiError::method_not_allowed(
            "the server does not allow this method on the requested resource",
        )));
    }
    let ns = p.namespace.as_deref().unwrap_or("");
    Some(negotiate::decode_body(content_type, body).and_then(|b| {
        if token_request {
            auth::tokens::token_request(&auth.signer, api, ns, p.name.as_deref().unwrap_or(""), &b)
        } else {
            auth::reviews::create(auth, api, user, &p.group, &p.plural, ns, &b)
        }
    }))
}

fn not_found_path() -> ApiError {
    ApiError::new(
        404,
        "NotFound",
        "the server could not find the requested resource",
    )
}

/// The verb of a resource request, as audit logs and RBAC name it.
fn verb(method: &Method, p: &ResourcePath, watch: bool) -> &'static str {
    match (method.clone(), p.name.is_some()) {
        (Method::GET, _) if watch => "watch",
        (Method::GET, true) => "get",
        (Method::GET, false) => "list",
        (Method::POST, _) => "create",
        (Method::PUT, _) => "update",
        (Method::PATCH, _) => "patch",
        (Method::DELETE, true) => "delete",
        (Method::DELETE, false) => "deletecollection",
        _ => "unknown",
    }
}

async fn resource(c: &RequestContext<'_>, p: ResourcePath) -> ApiResult<Response> {
    let api = &c.s.api;
    let (injected, delay) = c.s.faults.decide(
        verb(
            &c.method,
            &p,
            p.watch_prefix || is_true(c.query.get("watch")),
        ),
        &p.plural,
    );
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    if let Some(e) = injected {
        return Err(e);
    }
    let rt = api.resource(&p.group, &p.version, &p.plural)?;
    // Cluster-scoped resources have no namespaced paths; namespaced ones are reachable without a
    // namespace only to list or watch across all namespaces.
    let cross_namespace_read = c.method == Method::GET && p.name.is_none();
    if (!rt.namespaced && p.namespace.is_some())
        || (rt.namespaced && p.namespace.is_none() && !cross_namespace_read)
    {
        return Err(not_found_path());
    }
    if let Some(sub) = &p.sub {
        if !rt.has_subresource(sub) {
            return Err(not_found_path());
        }
    } else if !rt.verbs.contains(&verb(
        &c.method,
        &p,
        p.watch_prefix || is_true(c.query.get("watch")),
    )) {
        return Err(ApiError::method_not_allowed(
            "the server does not allow this method on the requested resource",
        ));
    }
    let ns = p.namespace.clone().unwrap_or_default();
    let is_watch = p.watch_prefix || is_true(c.query.get("watch"));
    match (c.method.clone(), p.name.as_deref(), p.sub.as_deref()) {
        (Method::GET, None, None) if is_watch => watch::serve(
            c.s.api.clone(),
            rt,
            p.namespace.clone(),
            &c.query,
            c.output(false)?,
            None,
        ),
        (Method::GET, Some(name), None) if is_watch => watch::serve(
            c.s.api.clone(),
            rt,
            p.namespace.clone(),
            &c.query,
            c.output(false)?,
            Some(name.to_string()),
        ),
        (Method::GET, name, None) if rt.group.is_empty() && rt.plural == "componentstatuses" => {
            let warning = ["v1 ComponentStatus is deprecated in v1.19+".to_string()];
            let items = api.component_statuses();
            match name {
                None => match c.output(false)? {
                    Output::Table => {
                        let refs: Vec<&Value> = items.iter().collect();
                        let t = table::to_table(
                            &printer_for(&rt),
                            &refs,
                            "",
                            c.q("includeObject").unwrap_or("Metadata"),
                            true,
                            c.s.api.clock().now(),
                        );
                        Ok(json_response(StatusCode::OK, &t, &Output::Json, &warning))
                    }
                    o => {
                        let l = json!({"kind": "ComponentStatusList", "apiVersion": "v1", "metadata": {}, "items": items});
                        Ok(json_response(StatusCode::OK, &l, &o, &warning))
                    }
                },
                Some(n) => {
                    let o = items
                        .into_iter()
                        .find(|o| meta::name(o) == n)
                        .ok_or_else(|| ApiError::not_found("", "componentstatuses", n))?;
                    object_response(c, &rt, StatusCode::OK, &o, &warning)
                }
            }
        }
        (Method::GET, None, None) => list(c, &rt, p.namespace.as_deref()),
        (Method::GET, Some(name), Some("log")) => {
            let previous = is_true(c.query.get("previous"));
            let timestamps = is_true(c.query.get("timestamps"));
            let mut text = api.pod_logs(&ns, name, c.q("container"), previous, timestamps)?;
            if let Some(n) = c.q("tailLines").and_then(|n| n.parse::<usize>().ok()) {
                let lines: Vec<&str> = text.lines().collect();
                let start = lines.len().saturating_sub(n);
                text = lines[start..].iter().map(|l| format!("{}\n", l)).collect();
            }
            Ok((StatusCode::OK, [(header::CONTENT_TYPE, "text/plain")], text).into_response())
        }
        (Method::GET, Some(name), Some("scale")) => {
            object_response(c, &rt, StatusCode::OK, &api.get_scale(&rt, &ns, name)?, &[])
        }
        (Method::PUT, Some(name), Some("scale")) => {
            let body = negotiate::decode_body(c.content_type.as_deref(), c.body)?;
            let w = api.update_scale(&rt, &ns, name, &body, &c.write_options())?;
            object_response(c, &rt, StatusCode::OK, &w.object, &w.warnings)
        }
        (Method::PATCH, Some(name), Some("scale")) => {
            let (ptype, body) = patch_body(c)?;
            let w = api.patch_scale(&rt, &ns, name, ptype, &body, &c.write_options())?;
            object_response(c, &rt, StatusCode::OK, &w.object, &w.warnings)
        }
        (
            Method::GET,
            Some(name),
            None | Some("status") | Some("ephemeralcontainers") | Some("approval"),
        ) => {
            if p.sub.as_deref() == Some("approval") && !rt.has_subresource("approval") {
                return Err(not_found_path());
            }
            let obj = api.get_stored(&rt, &ns, name)?;
            match c.output(false)? {
                Output::Json => Ok(bytes_response(
                    StatusCode::OK,
                    "application/json",
                    obj.json().clone(),
                    &[],
                )),
                _ => object_response(c, &rt, StatusCode::OK, &obj.object(), &[]),
            }
        }
        (Method::POST, None, None) if rt.group.is_empty() && rt.plural == "bindings" => {
            let b = negotiate::decode_body(c.content_type.as_deref(), c.body)?;
            api.bind_pod(&ns, meta::name(&b), &b)?;
            Ok(json_response(
                StatusCode::CREATED,
                &success_status(None),
                &Output::Json,
                &[],
            ))
        }
        (Method::POST, None, None) => {
            // CreateOptions are validated before the body is read (ValidateCreateOptions).
            crate::apiserver::validation::options::validate_write_options(
                "CreateOptions",
                &c.query,
            )?;
            let obj = negotiate::decode_body(c.content_type.as_deref(), c.body)?;
            let w = api.create(&rt, &ns, obj, &c.write_options())?;
            object_response(c, &rt, StatusCode::CREATED, &w.object, &w.warnings)
        }
        (Method::POST, Some(name), Some("binding")) => {
            let b = negotiate::decode_body(c.content_type.as_deref(), c.body)?;
            api.bind_pod(&ns, name, &b)?;
            Ok(json_response(
                StatusCode::CREATED,
                &success_status(None),
                &Output::Json,
                &[],
            ))
        }
        (Method::POST, Some(name), Some("eviction")) => {
            let e = negotiate::decode_body(c.content_type.as_deref(), c.body)?;
            api.evict_pod(&ns, name, &e)?;
            Ok(json_response(
                StatusCode::CREATED,
                &success_status(None),
                &Output::Json,
                &[],
            ))
        }
        (
            Method::PUT,
            Some(name),
            sub @ (None
            | Some("status")
            | Some("finalize")
            | Some("ephemeralcontainers")
            | Some("approval")),
        ) => {
            crate::apiserver::validation::options::validate_write_options(
                "UpdateOptions",
                &c.query,
            )?;
            let obj = negotiate::decode_body(c.content_type.as_deref(), c.body)?;
            let w = api.update(&rt, &ns, name, sub, obj, &c.write_options())?;
            object_response(c, &rt, StatusCode::OK, &w.object, &w.warnings)
        }
        (
            Method::PATCH,
            Some(name),
            sub @ (None | Some("status") | Some("ephemeralcontainers") | Some("approval")),
        ) => {
            // PatchOptions are validated before the body is read (ValidatePatchOptions).
            if let Some(t) = c
                .content_type
                .as_deref()
                .and_then(PatchType::from_content_type)
            {
                crate::apiserver::validation::options::validate_patch_options(
                    t == PatchType::Apply,
                    &c.query,
                )?;
            }
            let (ptype, body) = patch_body(c)?;
            let w = api.patch(&rt, &ns, name, sub, ptype, &body, &c.write_options())?;
            let code = if w.created {
                StatusCode::CREATED
            } else {
                StatusCode::OK
            };
            object_response(c, &rt, code, &w.object, &w.warnings)
        }
        (Method::DELETE, Some(name), None) => {
            let opts = delete_options(c)?;
            match api.delete(&rt, &ns, name, &opts)? {
                DeleteOutcome::Pending(o) => object_response(c, &rt, StatusCode::OK, &o, &[]),
                DeleteOutcome::Deleted(o)
                    if !rt.custom && builtins::delete_returns_object(&rt.group, &rt.plural) =>
                {
                    object_response(c, &rt, StatusCode::OK, &o, &[])
                }
                DeleteOutcome::Deleted(o) => {
                    let mut d = crate::apiserver::status::details(&rt.group, &rt.plural, name);
                    d["uid"] = json!(meta::uid(&o));
                    Ok(json_response(
                        StatusCode::OK,
                        &success_status(Some(d)),
                        &Output::Json,
                        &[],
                    ))
                }
            }
        }
        (Method::DELETE, None, None) => {
            let opts = delete_options(c)?;
            let labels = label_selector(c)?;
            let fields = field_selector(c)?;
            let out = api.delete_collection(
                &rt,
                p.namespace.as_deref(),
                &ListQuery {
                    labels: &labels,
                    fields: &fields,
                    limit: None,
                    continue_token: None,
                },
                &opts,
            )?;
            Ok(json_response(StatusCode::OK, &out, &Output::Json, &[]))
        }
        _ => Err(ApiError::method_not_allowed(
            "the server does not allow this method on the requested resource",
        )),
    }
}

/// The patch type from Content-Type and the decoded patch body.
fn patch_body(c: &RequestContext<'_>) -> ApiResult<(PatchType, Value)> {
    let ct = c.content_type.clone().unwrap_or_default();
    let ptype = PatchType::from_content_type(&ct).ok_or_else(|| {
        ApiError::new(415, "UnsupportedMediaType", format!("the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json (got {:?})", ct))
    })?;
    let body = if ptype == PatchType::Apply {
        negotiate::decode_yaml(c.body)?
    } else {
        negotiate::decode_json(c.body)?
    };
    Ok((ptype, body))
}

fn label_selector(c: &RequestContext<'_>) -> ApiResult<LabelSelector> {
    match c.q("labelSelector") {
        Some(s) if !s.is_empty() => LabelSelector::parse(s).map_err(ApiError::bad_request),
        _ => Ok(LabelSelector::everything()),
    }
}

fn field_selector(c: &RequestContext<'_>) -> ApiResult<FieldSelector> {
    match c.q("fieldSelector") {
        Some(s) if !s.is_empty() => FieldSelector::parse(s).map_err(ApiError::bad_request),
        _ => Ok(FieldSelector::everything()),
    }
}

fn list(c: &RequestContext<'_>, rt: &ResourceType, ns: Option<&str>) -> ApiResult<Response> {
    let labels = label_selector(c)?;
    let fields = field_selector(c)?;
    let limit = match c.q("limit") {
        Some(l) => Some(
            l.parse::<i64>()
                .map_err(|_| ApiError::bad_request(format!("invalid limit: {:?}", l)))?,
        ),
        None => None,
    }
    .filter(|l| *l > 0)
    .map(|l| l as usize);
    let out = c.output(false)?;
    crate::apiserver::validation::options::validate_list_options(&c.query)?;
    let page = match (
        c.q("resourceVersionMatch").unwrap_or(""),
        c.q("resourceVersion").unwrap_or(""),
    ) {
        ("Exact", rv) => {
            let rv = rv
                .parse::<u64>()
                .map_err(|_| ApiError::bad_request(format!("invalid resource version: {}", rv)))?;
            c.s.api.list_exact(rt, ns, &labels, &fields, rv)?
        }
        _ => c.s.api.list_page(
            rt,
            ns,
            &ListQuery {
                labels: &labels,
                fields: &fields,
                limit,
                continue_token: c.q("continue"),
            },
        )?,
    };
    match out {
        Output::Table => {
            let printer = printer_for(rt);
            let objects: Vec<Arc<Value>> = page.items.iter().map(|i| i.object()).collect();
            let items: Vec<&Value> = objects.iter().map(|o| o.as_ref()).collect();
            let mut t = table::to_table(
                &printer,
                &items,
                meta::str_at(&page.metadata, "/resourceVersion").unwrap_or(""),
                c.q("includeObject").unwrap_or("Metadata"),
                true,
                c.s.api.clock().now(),
            );
            if let Some(cont) = page.metadata.get("continue") {
                t["metadata"]["continue"] = cont.clone();
            }
            Ok(json_response(StatusCode::OK, &t, &Output::Json, &[]))
        }
        Output::PartialMetadata { list: false } => Err(ApiError::not_acceptable_because(format!(
            "you requested PartialObjectMetadata, but the requested object is a list (*{}List)",
            internal_type_name(rt)
        ))),
        Output::PartialMetadata { list: true } => {
            let items: Vec<Value> = page
                .items
                .iter()
                .map(|i| partial_metadata(&i.object()))
                .collect();
            // The apiserver builds this list from a nil slice: none found is `null`, not `[]`
            // (endpoints/handlers/response.go asPartialObjectMetadataList; seen on 1.35).
            let items = if items.is_empty() {
                Value::Null
            } else {
                Value::Array(items)
            };
            let l = json!({"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1", "metadata": page.metadata, "items": items});
            Ok(json_response(StatusCode::OK, &l, &Output::Json, &[]))
        }
        Output::Json if page.items.len() > crate::apiserver::STREAMED_LIST_ITEMS => {
            let chunks = futures::stream::iter(
                page.into_json_chunks()
                    .map(Ok::<_, std::convert::Infallible>),
            );
            Ok(bytes_response(
                StatusCode::OK,
                "application/json",
                Body::from_stream(chunks),
                &[],
            ))
        }
        Output::Json => Ok(bytes_response(
            StatusCode::OK,
            "application/json",
            page.to_json(),
            &[],
        )),
        o => Ok(json_response(StatusCode::OK, &page.into_value(), &o, &[])),
    }
}

pub fn printer_for(rt: &ResourceType) -> table::Printer {
    match &rt.printer_columns {
        Some(cols) if rt.custom => table::Printer::custom(cols),
        _ if rt.custom => table::Printer::custom(&Value::Null),
        _ => table::Printer::builtin(&rt.group, &rt.kind),
    }
}

/// The Go type the apiserver decodes a resource into, as its NotAcceptable errors print it:
/// `core.ConfigMap`, `apps.Deployment`, `unstructured.Unstructured` for custom resources. The
/// internal API package is the group's first label, except where upstream names it otherwise.
fn internal_type_name(rt: &ResourceType) -> String {
    if rt.custom {
        return "unstructured.Unstructured".into();
    }
    let package = match rt.group.as_str() {
        "" | "events.k8s.io" => "core",
        "internal.apiserver.k8s.io" => "apiserverinternal",
        group => group.split('.').next().unwrap_or(group),
    };
    format!("{package}.{}", rt.kind)
}

pub fn partial_metadata(obj: &Value) -> Value {
    json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj.get("metadata").cloned().unwrap_or_else(|| json!({}))})
}

fn object_response(
    c: &RequestContext<'_>,
    rt: &ResourceType,
    code: StatusCode,
    obj: &Value,
    warnings: &[String],
) -> ApiResult<Response> {
    match c.output(false)? {
        Output::Table => {
            let printer = printer_for(rt);
            let t = table::to_table(
                &printer,
                &[obj],
                meta::resource_version(obj),
                c.q("includeObject").unwrap_or("Metadata"),
                true,
                c.s.api.clock().now(),
            );
            Ok(json_response(code, &t, &Output::Json, warnings))
        }
        Output::PartialMetadata { list: true } => Err(ApiError::not_acceptable_because(format!(
            "you requested PartialObjectMetadataList, but the requested object is not a list (*{})",
            internal_type_name(rt)
        ))),
        Output::PartialMetadata { list: false } => Ok(json_response(
            code,
            &partial_metadata(obj),
            &Output::Json,
            warnings,
        )),
        o => Ok(json_response(code, obj, &o, warnings)),
    }
}

fn delete_options(c: &RequestContext<'_>) -> ApiResult<DeleteOptions> {
    let body: Value = if c.body.iter().all(u8::is_ascii_whitespace) {
        json!({})
    } else {
        negotiate::decode_body(c.content_type.as_deref(), c.body)?
    };
    let grace =
        match c.q("gracePeriodSeconds") {
            Some(g) => Some(g.parse::<i64>().map_err(|_| {
                ApiError::bad_request(format!("invalid gracePeriodSeconds: {:?}", g))
            })?),
            None => body.get("gracePeriodSeconds").and_then(Value::as_i64),
        };
    let prop = c.q("propagationPolicy").map(String::from).or_else(|| {
        body.get("propagationPolicy")
            .and_then(Value::as_str)
            .map(String::from)
    });
    let orphan = c
        .q("orphanDependents")
        .map(|v| v == "true")
        .or_else(|| body.get("orphanDependents").and_then(Value::as_bool));
    let propagation = match (prop.as_deref(), orphan) {
        (Some("Foreground"), _) => Some(Propagation::Foreground),
        (Some("Background"), _) => Some(Propagation::Background),
        (Some("Orphan"), _) => Some(Propagation::Orphan),
        (Some(other), _) => {
            return Err(ApiError::bad_request(format!(
                "propagationPolicy: Unsupported value: {:?}: supported values: \"Foreground\", \"Background\", \"Orphan\"",
                other
            )))
        }
        (None, Some(true)) => Some(Propagation::Orphan),
        (None, Some(false)) => Some(Propagation::Background),
        (None, None) => None,
    };
    let dry = c.q("dryRun") == Some("All")
        || body
            .get("dryRun")
            .and_then(Value::as_array)
            .map(|a| a.iter().any(|v| v == "All"))
            .unwrap_or(false);
    Ok(DeleteOptions {
        grace_period_seconds: grace,
        propagation,
        precondition_uid: body
            .pointer("/preconditions/uid")
            .and_then(Value::as_str)
            .map(String::from),
        precondition_rv: body
            .pointer("/preconditions/resourceVersion")
            .and_then(Value::as_str)
            .map(String::from),
        dry_run: dry,
    })
}

pub fn json_response(code: StatusCode, v: &Value, out: &Output, warnings: &[String]) -> Response {
    let (ct, body) = match out {
        Output::Yaml => (
            "application/yaml",
            serde_yaml::to_string(v).unwrap_or_default().into_bytes(),
        ),
        _ => (
            "application/json",
            serde_json::to_vec(v).unwrap_or_default(),
        ),
    };
    bytes_response(code, ct, body, warnings)
}

fn bytes_response(
    code: StatusCode,
    ct: &str,
    body: impl Into<Body>,
    warnings: &[String],
) -> Response {
    let mut r = Response::builder()
        .status(code)
        .header(header::CONTENT_TYPE, ct);
    for w in warnings {
        if let Ok(h) = HeaderValue::from_str(&format!("299 - {:?}", w)) {
            r = r.header(header::WARNING, h);
        }
    }
    r.body(body.into())
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

fn discovery_response(v: &Value, version: &str) -> Response {
    let ct = format!(
        "application/json;g=apidiscovery.k8s.io;v={};as=APIGroupDiscoveryList",
        version
    );
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, ct)
        .body(Body::from(serde_json::to_vec(v).unwrap_or_default()))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

/// JSON as Go's encoder writes it: `<`, `>`, `&`, U+2028 and U+2029 escaped (they can only
/// occur inside strings, so the serialized text is rewritten).
fn go_json_bytes(v: &Value) -> Vec<u8> {
    let text = serde_json::to_string(v).unwrap_or_default();
    if !text.contains(['<', '>', '&', '\u{2028}', '\u{2029}']) {
        return text.into_bytes();
    }
    text.replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029")
        .into_bytes()
}

/// A Status error body, newline-terminated as the apiserver's JSON encoder writes it.
pub fn error_response(e: &ApiError) -> Response {
    let code = StatusCode::from_u16(e.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut body = go_json_bytes(&e.to_status());
    body.push(b'\n');
    bytes_response(code, "application/json", body, &[])
}
