//! The HTTP front end: the Kubernetes REST API over the apiserver semantics in `apiserver`.
//! Authentication and authorization on every request (`auth`), content negotiation (JSON, YAML,
//! Table, PartialObjectMetadata, aggregated discovery) and `Status` errors.

pub mod discovery;
pub mod faults;
pub mod negotiate;
pub mod openapi;
pub mod route;
pub mod streaming;
pub mod trace;
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
use axum::http::{header, HeaderName, HeaderValue, Method, StatusCode};
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
    /// Serve `/faultline/v1/...` (node operations, catalogue operations, API faults). Off, the
    /// paths are unknown, as on kube-apiserver (the envtest drop-in without its opt-in).
    pub fault_endpoints: bool,
    /// The controller's API trace and the perturbations of what it observes (`trace`).
    pub trace: trace::Tracer,
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
        .get::<auth::x509::CertificateUser>()
        .map(|c| &c.0);
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
        let manager = query
            .get("fieldManager")
            .cloned()
            .or_else(|| default_manager(&user_agent));
        let sent = AuthBody {
            content_type: content_type.as_deref(),
            body: &body,
            manager,
        };
        if let Some(r) = serve_auth(&s.auth, &s.api, &user, parts.method.as_str(), p, sent) {
            // Negotiated like any create: protobuf for clients that prefer it.
            let out = match negotiate::choose(accept.as_deref(), false) {
                Ok(Output::Protobuf) => Output::Protobuf,
                _ => Output::Json,
            };
            return match r {
                Ok(v) => json_response(StatusCode::CREATED, &v, &out, &[]),
                Err(e) if out == Output::Json => error_response(&e),
                Err(e) => {
                    let code =
                        StatusCode::from_u16(e.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
                    json_response(code, &e.to_status(), &out, &[])
                }
            };
        }
    }
    let ctx = RequestContext {
        s: &s,
        user: user.clone(),
        method: parts.method.clone(),
        query,
        accept,
        content_type,
        body: &body,
        user_agent,
        if_none_match,
    };
    let unacceptable = not_acceptable_for(&route);
    let protobuf_errors = matches!(route, Route::Resource(_))
        && negotiate::choose(ctx.accept.as_deref(), false) == Ok(Output::Protobuf);
    let e = match dispatch(&ctx, route).await {
        Ok(r) => return r,
        // The negotiator's 406 (no media type fits) is the endpoint's own text; a 406 for the
        // answer's shape (a list asked for as one PartialObjectMetadata) keeps its message.
        Err(e)
            if e.reason == "NotAcceptable" && e.message == ApiError::not_acceptable().message =>
        {
            unacceptable.unwrap_or(e)
        }
        Err(e) => e,
    };
    if protobuf_errors {
        // The error is negotiated as the object would have been: a protobuf Status.
        let code = StatusCode::from_u16(e.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        return json_response(code, &e.to_status(), &Output::Protobuf, &[]);
    }
    error_response(&e)
}

/// The 406 each handler gives: the aggregated-discovery handlers (`/apis`, `/apis/<group>`) their
/// own text, the others go-restful's / the endpoint negotiator's list of what the endpoint serves.
fn not_acceptable_for(route: &Route) -> Option<ApiError> {
    const SERIALIZERS: &str =
        "application/json, application/yaml, application/vnd.kubernetes.protobuf";
    let representations = match route {
        Route::Groups | Route::Group(_) => {
            return Some(ApiError::new(
                406,
                "NotAcceptable",
                format!("only the following media types are accepted: {SERIALIZERS}"),
            ))
        }
        Route::CoreVersions | Route::GroupVersion { .. } => SERIALIZERS.to_string(),
        Route::Resource(p) if p.sub.as_deref() == Some("log") => {
            format!("text/plain, {SERIALIZERS}")
        }
        Route::Resource(p) if p.name.is_none() || p.watch_prefix => format!(
            "{SERIALIZERS}, application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch"
        ),
        Route::Resource(_) => SERIALIZERS.to_string(),
        _ => return None,
    };
    let mut e = ApiError::new(
        406,
        "NotAcceptable",
        format!("406: Not Acceptable\n\nAvailable representations: {representations}"),
    );
    e.details = Some(json!({}));
    Some(e)
}

struct RequestContext<'a> {
    s: &'a HttpState,
    user: UserInfo,
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
    /// A watch's representation: the sim streams no protobuf watch frames; a client that asks
    /// for them gets JSON frames, which client-go decodes by the response's Content-Type.
    fn watch_output(&self) -> ApiResult<Output> {
        match self.output(false)? {
            Output::Protobuf => Ok(Output::Json),
            o => Ok(o),
        }
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
            user: Some(self.user.clone()),
            answer: crate::apiserver::store::Answer::Whole,
        }
    }
}

/// The Table's `includeObject` (`ValidateTableOptions`): Metadata by default.
fn include_object<'a>(c: &'a RequestContext<'_>) -> ApiResult<&'a str> {
    match c.q("includeObject").unwrap_or("") {
        "" => Ok("Metadata"),
        v @ ("Metadata" | "Object" | "None") => Ok(v),
        other => Err(ApiError::bad_request(format!(
            "Unable to convert to Table as requested: includeObject: Invalid value: {other:?}: must be 'Metadata', 'Object', 'None', or empty"
        ))),
    }
}

/// Without `fieldManager`, the apiserver names the manager after the user agent's program name
/// (`prefixFromUserAgent`).
fn default_manager(ua: &str) -> Option<String> {
    let prog = crate::apiserver::patch::apply::manager_or_user_agent(None, ua);
    (!prog.is_empty()).then_some(prog)
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
            match discovery::group(&api.registry, &g) {
                Some(doc) => Ok(json_response(StatusCode::OK, &doc, &c.output(false)?, &[])),
                // No group handles it: the apiserver's last handler answers.
                None => Ok(page_not_found()),
            }
        }
        Route::GroupVersion { group, version } => {
            get_only()?;
            match discovery::resource_list(&api.registry, &group, &version) {
                Some(doc) => Ok(json_response(StatusCode::OK, &doc, &c.output(false)?, &[])),
                None if !group.is_empty() && discovery::group(&api.registry, &group).is_none() => {
                    Ok(page_not_found())
                }
                None => Err(ApiError::not_found_path()),
            }
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
            // kube-openapi's v3 handler answers a group-version it does not know with a bare 404.
            Ok(
                openapi::v3_group_version(api, &p, c.q("hash"), c.if_none_match.as_deref())
                    .unwrap_or_else(|| StatusCode::NOT_FOUND.into_response()),
            )
        }
        Route::Resource(p) => resource(c, p).await,
        Route::Control(_) if !c.s.fault_endpoints => Ok(page_not_found()),
        // Faults are the cluster admin's to inject: RBAC cannot grant them, whatever a role's
        // nonResourceURLs say.
        Route::Control(_) if !c.user.is_privileged() => Err(ApiError::new(
            403,
            "Forbidden",
            format!(
                "User {:?} cannot use the fault endpoints (/faultline/v1/...): only members of {} may inject faults",
                c.user.name,
                auth::SYSTEM_MASTERS
            ),
        )),
        Route::Control(path) if path.first().map(String::as_str) == Some("catalogue") => {
            get_only()?;
            Ok(faults::catalogue())
        }
        Route::Control(path) if path.first().map(String::as_str) == Some("apifaults") => {
            let rest: Vec<&str> = path[1..].iter().map(String::as_str).collect();
            faults::control(&c.s.faults, &c.method, &rest, c.body)
        }
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
        Route::NotFound => Ok(page_not_found()),
    }
}

/// What a path no handler serves gets: Go's `http.NotFound`, a text body.
fn page_not_found() -> Response {
    (
        StatusCode::NOT_FOUND,
        [
            (header::CONTENT_TYPE, "text/plain; charset=utf-8"),
            (HeaderName::from_static("x-content-type-options"), "nosniff"),
        ],
        "404 page not found\n",
    )
        .into_response()
}

/// The requests `auth` answers rather than the store: the reviews and TokenRequest. `None`
/// when `p` is neither; otherwise the object to answer with 201 Created, or the error.
/// What a review or TokenRequest sent: its body, that body's type and the field manager.
struct AuthBody<'a> {
    content_type: Option<&'a str>,
    body: &'a [u8],
    manager: Option<String>,
}

fn serve_auth(
    auth: &Auth,
    api: &ApiServer,
    user: &UserInfo,
    method: &str,
    p: &ResourcePath,
    sent: AuthBody<'_>,
) -> Option<ApiResult<Value>> {
    let AuthBody {
        content_type,
        body,
        manager,
    } = sent;
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
        return Some(Err(ApiError::not_found_path()));
    }
    if method != "POST" {
        return Some(Err(ApiError::method_not_allowed(
            "the server does not allow this method on the requested resource",
        )));
    }
    let ns = p.namespace.as_deref().unwrap_or("");
    let kind = if token_request {
        "TokenRequest"
    } else {
        auth::reviews::kind_of(&p.plural)
    };
    Some(
        negotiate::decode_object(content_type, body, kind).and_then(|b| {
            let (mut out, group, sub) = if token_request {
                let out = auth::tokens::token_request(
                    &auth.signer,
                    api,
                    ns,
                    p.name.as_deref().unwrap_or(""),
                    &b,
                )?;
                (out, auth::reviews::AUTHENTICATION, Some("token"))
            } else {
                let out = auth::reviews::create(auth, api, user, &p.group, &p.plural, ns, &b)?;
                (out, p.group.as_str(), None)
            };
            // The rules review and SelfSubjectReview answer with new objects: no managedFields.
            if !matches!(
                p.plural.as_str(),
                "selfsubjectrulesreviews" | "selfsubjectreviews"
            ) {
                if let Some(m) = api.unstored_create_managed_fields(group, kind, sub, &b, manager) {
                    meta::metadata_mut(&mut out).insert("managedFields".into(), m);
                }
            }
            Ok(out)
        }),
    )
}

/// A path under a served group-version that names nothing there: `NewGenericServerResponse`'s
/// 404 (its details empty).
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
    let verb_name = verb(
        &c.method,
        &p,
        p.watch_prefix || is_true(c.query.get("watch")),
    );
    let traced = c.s.trace.traces(&c.user.name);
    // A crash is due: the traced client's requests wait for it, and those held across it
    // belong to the dead process (sent after the crash point), so they are not carried out.
    if traced && c.s.trace.pass().await == trace::Gate::Dead {
        return Err(ApiError::service_unavailable(
            "the client was killed before this request was served (faultline explore)",
        ));
    }
    let (injected, delay) = c.s.faults.decide(verb_name, &p.plural);
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    if let Some(e) = injected {
        return Err(e);
    }
    let rt = api.resource(&p.group, &p.version, &p.plural)?;
    let events_v1 = rt.group == "events.k8s.io";
    let t = match trace::Verb::parse(verb_name) {
        Some(v) if traced => Some(traced_request(c, &p, &rt, v)),
        _ => None,
    };
    let (stale, watch_trace) = match &t {
        Some(t) => (t.stale, t.verb == trace::Verb::Watch),
        None => (None, false),
    };
    let out = resource_of(c, p, rt, stale, watch_trace).await;
    if let Some(t) = t {
        t.record(c, &out);
    }
    if events_v1 {
        out.map_err(requalify_events)
    } else {
        out
    }
}

/// A request of the traced client before it is served: what the trace records of it, and the
/// resourceVersion to serve a read at when a stale read is armed for it and finds a change to
/// hide.
struct TracedRequest {
    verb: trace::Verb,
    resource: String,
    kind: Option<String>,
    namespace: Option<String>,
    name: Option<String>,
    resource_version: Option<String>,
    read: Option<u64>,
    stale_from: Option<u64>,
    stale: Option<u64>,
}

fn traced_request(
    c: &RequestContext<'_>,
    p: &ResourcePath,
    rt: &ResourceType,
    verb: trace::Verb,
) -> TracedRequest {
    let mut resource = if rt.group.is_empty() {
        rt.plural.clone()
    } else {
        format!("{}.{}", rt.plural, rt.group)
    };
    if let Some(sub) = &p.sub {
        resource = format!("{resource}/{sub}");
    }
    // A write's name and precondition come from its body (kube-rs and client-go send JSON).
    let body: Option<Value> = if verb.is_mutating() && !c.body.is_empty() {
        serde_json::from_slice(c.body).ok()
    } else {
        None
    };
    let from_body = |f: &str| {
        body.as_ref()
            .and_then(|b| b.pointer(&format!("/metadata/{f}")))
            .and_then(Value::as_str)
            .map(String::from)
    };
    let name = p.name.clone().or_else(|| {
        from_body("name").or_else(|| from_body("generateName").map(|g| format!("{g}*")))
    });
    let resource_version = c
        .q("resourceVersion")
        .filter(|v| !v.is_empty())
        .map(String::from)
        .or_else(|| from_body("resourceVersion"));
    let (mut read, mut stale_from, mut stale) = (None, None, None);
    // Reads of the object or its status, and LISTs. Only those the watch cache answers can be
    // stale (cacher.go): resourceVersion=0, or a resourceVersion the answer must not be older
    // than (NotOlderThan). Without one, GET is a quorum read from etcd and LIST a consistent
    // read (ConsistentListFromCache waits for the cache to catch up): never stale.
    let plain = matches!(p.sub.as_deref(), None | Some("status"));
    if verb.is_read() && plain {
        let ticket = c.s.trace.next_read();
        read = Some(ticket.ordinal);
        let rv = c.q("resourceVersion").unwrap_or("");
        let cached = !rv.is_empty()
            && c.q("resourceVersionMatch") != Some("Exact")
            && c.q("continue").is_none_or(str::is_empty);
        let floor = rv.parse::<u64>().unwrap_or(0);
        let key = crate::apiserver::resources::storage_key(&rt.group, &rt.plural);
        let ns = p.namespace.as_deref().filter(|_| rt.namespaced);
        let at = |w| {
            c.s.api
                .store
                .stale_rv(&key, ns, p.name.as_deref(), w)
                .filter(|at| cached && *at >= floor)
        };
        stale_from = at(trace::DEFAULT_STALE_WINDOW);
        stale = match ticket.stale_window {
            Some(w) => at(w),
            None => None,
        };
        if stale.is_some() {
            c.s.trace.stale_served(ticket.ordinal);
        } else if ticket.stale_window.is_some() && !cached {
            // A consistent read: the stale view goes to the next read (`stale_deferred`).
            c.s.trace.stale_deferred(ticket.ordinal);
        }
    }
    let kind = (verb == trace::Verb::Create && p.sub.is_none()).then(|| rt.kind.clone());
    TracedRequest {
        verb,
        resource,
        kind,
        namespace: p.namespace.clone(),
        name,
        resource_version,
        read,
        stale_from,
        stale,
    }
}

impl TracedRequest {
    fn record(self, c: &RequestContext<'_>, out: &ApiResult<Response>) {
        let code = match out {
            Ok(r) => r.status().as_u16(),
            Err(e) => e.code,
        };
        let perturbed = self
            .stale
            .map(|rv| format!("stale read at resourceVersion {rv}"));
        c.s.trace.record_request(trace::TraceKind::Request {
            verb: self.verb,
            resource: self.resource,
            namespace: self.namespace,
            name: self.name,
            kind: self.kind,
            resource_version: self.resource_version,
            store_rv: c.s.api.store.current_rv(),
            code,
            mutation: None,
            read: self.read,
            stale_from: self.stale_from,
            perturbed,
        });
    }
}

/// events.k8s.io Events share core Events' storage, but their REST storage names its own
/// resource in its errors (`events.events.k8s.io "x" not found`).
fn requalify_events(mut e: ApiError) -> ApiError {
    let Some(d) = e.details.as_mut().and_then(Value::as_object_mut) else {
        return e;
    };
    if d.get("kind").and_then(Value::as_str) != Some("events") || d.contains_key("group") {
        return e;
    }
    let name = d.shift_remove("name");
    let rest: Vec<(String, Value)> = std::mem::take(d).into_iter().collect();
    if let Some(n) = name {
        d.insert("name".into(), n);
    }
    d.insert("group".into(), json!("events.k8s.io"));
    d.extend(rest);
    e.message = e
        .message
        .replacen("events \"", "events.events.k8s.io \"", 1);
    e
}

/// `stale`: serve a GET or LIST at this earlier resourceVersion (an armed stale read);
/// `watch_trace`: record the events a watch delivers in the trace.
async fn resource_of(
    c: &RequestContext<'_>,
    p: ResourcePath,
    rt: Arc<ResourceType>,
    stale: Option<u64>,
    watch_trace: bool,
) -> ApiResult<Response> {
    let api = &c.s.api;
    // Cluster-scoped resources have no namespaced paths; namespaced ones are reachable without a
    // namespace only to list or watch across all namespaces.
    let cross_namespace_read = c.method == Method::GET && p.name.is_none();
    if (!rt.namespaced && p.namespace.is_some())
        || (rt.namespaced && p.namespace.is_none() && !cross_namespace_read)
    {
        return Err(ApiError::not_found_path());
    }
    if let Some(sub) = &p.sub {
        if !rt.has_subresource(sub) {
            return Err(ApiError::not_found_path());
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
            c.watch_output()?,
            None,
            watch_trace.then(|| c.s.trace.clone()),
        ),
        (Method::GET, Some(name), None) if is_watch => watch::serve(
            c.s.api.clone(),
            rt,
            p.namespace.clone(),
            &c.query,
            c.watch_output()?,
            Some(name.to_string()),
            watch_trace.then(|| c.s.trace.clone()),
        ),
        (Method::GET, name, None) if rt.group.is_empty() && rt.plural == "componentstatuses" => {
            let warning = ["v1 ComponentStatus is deprecated in v1.19+".to_string()];
            let items = api.component_statuses();
            match name {
                None => match c.output(false)? {
                    Output::Table(v) => {
                        let refs: Vec<&Value> = items.iter().collect();
                        let mut t = table::to_table(
                            &printer_for(&rt),
                            &refs,
                            "",
                            include_object(c)?,
                            true,
                            c.s.api.clock().now(),
                        );
                        table::set_version(&mut t, v);
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
        (Method::GET, None, None) => list(c, &rt, p.namespace.as_deref(), stale),
        (Method::GET, Some(name), Some("log")) => {
            let previous = is_true(c.query.get("previous"));
            let timestamps = is_true(c.query.get("timestamps"));
            let mut text = api.pod_logs(&ns, name, c.q("container"), previous, timestamps)?;
            // A pod without a node has no log location: the streamer answers 204, no body.
            let unscheduled = api.get_stored(&rt, &ns, name).is_ok_and(|p| {
                meta::str_at(&p.kept(), "/spec/nodeName")
                    .unwrap_or("")
                    .is_empty()
            });
            if unscheduled {
                return Ok(StatusCode::NO_CONTENT.into_response());
            }
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
                return Err(ApiError::not_found_path());
            }
            // Storage parses the resourceVersion of a GET; its error is not an API status (500).
            if let Some(rv) = c.q("resourceVersion").filter(|r| !r.is_empty()) {
                crate::apiserver::meta::parse_resource_version(rv)
                    .map_err(|e| ApiError::new(500, "", format!("resourceVersion: {e}")))?;
            }
            let obj = match stale {
                Some(rv) => api.get_stored_at(&rt, &ns, name, rv)?,
                None => api.get_stored(&rt, &ns, name)?,
            };
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
            let b = negotiate::decode_object(c.content_type.as_deref(), c.body, "Binding")?;
            if meta::name(&b).is_empty() {
                return Err(ApiError::bad_request("Name parameter required."));
            }
            api.bind_pod(&ns, meta::name(&b), &b)?;
            Ok(json_response(
                StatusCode::CREATED,
                &created_status(),
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
            let obj = negotiate::decode_object(c.content_type.as_deref(), c.body, &rt.kind)?;
            let w = api.create(&rt, &ns, obj, &c.write_options())?;
            object_response(c, &rt, StatusCode::CREATED, &w.object, &w.warnings)
        }
        (Method::POST, Some(name), Some("binding")) => {
            let b = negotiate::decode_object(c.content_type.as_deref(), c.body, "Binding")?;
            api.bind_pod(&ns, name, &b)?;
            Ok(json_response(
                StatusCode::CREATED,
                &created_status(),
                &Output::Json,
                &[],
            ))
        }
        (Method::POST, Some(name), Some("eviction")) => {
            let e = negotiate::decode_object(c.content_type.as_deref(), c.body, "Eviction")?;
            // pkg/registry/core/pod/storage/eviction.go: the body names the pod of the URL.
            if meta::name(&e) != name {
                return Err(ApiError::bad_request(
                    "name in URL does not match name in Eviction object",
                ));
            }
            api.evict_pod(&ns, name, &e)?;
            Ok(json_response(
                StatusCode::CREATED,
                &created_status(),
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
            let obj = negotiate::decode_object(c.content_type.as_deref(), c.body, &rt.kind)?;
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
            match api.delete_as(&rt, &ns, name, &opts, Some(&c.user))? {
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
            let out = api.delete_collection_as(
                &rt,
                p.namespace.as_deref(),
                &ListQuery {
                    labels: &labels,
                    fields: &fields,
                    limit: None,
                    continue_token: None,
                },
                &opts,
                Some(&c.user),
            )?;
            let mut out = out;
            if rt.custom {
                if let Some(md) = out.get_mut("metadata") {
                    unstructured_list_meta(md);
                }
            }
            if !rt.custom {
                // A typed list: its items carry no TypeMeta.
                for item in out
                    .get_mut("items")
                    .and_then(Value::as_array_mut)
                    .into_iter()
                    .flatten()
                {
                    if let Some(m) = item.as_object_mut() {
                        m.shift_remove("kind");
                        m.shift_remove("apiVersion");
                    }
                }
            }
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
    // go-restful refuses a Content-Type the PATCH route does not consume before any handler.
    let ptype = PatchType::from_content_type(&ct).ok_or_else(|| {
        let mut e = ApiError::new(415, "UnsupportedMediaType", "415: Unsupported Media Type");
        e.details = Some(json!({}));
        e
    })?;
    if ptype == PatchType::Apply {
        return Ok((ptype, negotiate::decode_yaml(c.body)?));
    }
    let body = negotiate::decode_json(c.body);
    // `fieldValidation` Strict or Warn (the default): the JSON and merge patchers first decode
    // the patch strictly into their Go types, and report that error as theirs.
    let strict = c.q("fieldValidation") != Some("Ignore");
    let decoding = |e: String| ApiError::bad_request(format!("error decoding patch: {e}"));
    match ptype {
        PatchType::Json | PatchType::Merge if strict => {
            let body = body.map_err(|e| decoding(e.message))?;
            if let Some(e) = strict_patch_shape(ptype, &body) {
                return Err(decoding(e));
            }
            Ok((ptype, body))
        }
        _ => Ok((ptype, body?)),
    }
}

/// What `json.Unmarshal` of a patch into `[]handlers.jsonPatchOp` (a JSON patch) or
/// `map[string]interface{}` (a merge patch) says about a body of the wrong shape.
fn strict_patch_shape(ptype: PatchType, body: &Value) -> Option<String> {
    let kind = |v: &Value| match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    match (ptype, body) {
        (_, Value::Null) => None,
        (PatchType::Merge, Value::Object(_)) => None,
        (PatchType::Merge, v) => Some(format!(
            "json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
            kind(v)
        )),
        (_, Value::Array(ops)) => ops.iter().find_map(|op| match op {
            Value::Null => None,
            Value::Object(m) => ["op", "path", "from"].iter().find_map(|f| match m.get(*f) {
                None | Some(Value::Null) | Some(Value::String(_)) => None,
                Some(v) => Some(format!(
                    "json: cannot unmarshal {} into Go struct field jsonPatchOp.{f} of type string",
                    kind(v)
                )),
            }),
            v => Some(format!(
                "json: cannot unmarshal {} into Go value of type handlers.jsonPatchOp",
                kind(v)
            )),
        }),
        (_, v) => Some(format!(
            "json: cannot unmarshal {} into Go value of type []handlers.jsonPatchOp",
            kind(v)
        )),
    }
}

/// An unstructured list's metadata (custom resources) always has `continue`, empty on the last
/// page (`UnstructuredList`'s ListMeta is a map the list handler sets it in).
fn unstructured_list_meta(md: &mut Value) {
    if let Some(m) = md.as_object_mut() {
        if !m.contains_key("continue") {
            let rest = std::mem::take(m);
            m.insert("continue".into(), json!(""));
            m.extend(rest);
        }
    }
}

/// The Status a create that makes no object answers with (a binding, an eviction): Success, and
/// the create handler fills in the response's code when the Status has none.
fn created_status() -> Value {
    let mut s = success_status(None);
    s["code"] = json!(201);
    s
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

fn list(
    c: &RequestContext<'_>,
    rt: &ResourceType,
    ns: Option<&str>,
    stale: Option<u64>,
) -> ApiResult<Response> {
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
    .map(|l| l as usize)
    // resourceVersion=0 is answered from the watch cache, which does not page (the cacher's
    // `shouldDelegateList`).
    .filter(|_| {
        c.q("resourceVersion") != Some("0") || c.q("continue").is_some_and(|t| !t.is_empty())
    });
    let out = c.output(false)?;
    crate::apiserver::validation::options::validate_list_options(&c.query)?;
    // `storage.ValidateListOptions`: a continue token carries its own resourceVersion; any
    // other resourceVersion has to parse.
    let rv = c.q("resourceVersion").unwrap_or("");
    match c.q("continue").filter(|t| !t.is_empty()) {
        Some(token) if !rv.is_empty() && rv != "0" => {
            crate::apiserver::decode_continue(token, ns)?;
            return Err(ApiError::bad_request(
                "specifying resource version is not allowed when using continue",
            ));
        }
        None if !rv.is_empty() => {
            crate::apiserver::meta::parse_resource_version(rv).map_err(|e| {
                ApiError::bad_request(format!("invalid resource version: resourceVersion: {e}"))
            })?;
        }
        _ => {}
    }
    let mut page = match (
        c.q("resourceVersionMatch").unwrap_or(""),
        c.q("resourceVersion").unwrap_or(""),
    ) {
        // An armed stale read: the whole list as it was (no paging, as the watch cache).
        _ if stale.is_some() => {
            c.s.api
                .list_exact(rt, ns, &labels, &fields, stale.unwrap_or_default())?
        }
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
    page.untyped_items = !rt.custom;
    if rt.custom && matches!(out, Output::Json | Output::Yaml | Output::Protobuf) {
        unstructured_list_meta(&mut page.metadata);
    }
    match out {
        Output::Table(version) => {
            let printer = printer_for(rt);
            let objects: Vec<Arc<Value>> = page.items.iter().map(|i| i.object()).collect();
            let items: Vec<&Value> = objects.iter().map(|o| o.as_ref()).collect();
            let mut t = table::to_table(
                &printer,
                &items,
                meta::str_at(&page.metadata, "/resourceVersion").unwrap_or(""),
                include_object(c)?,
                true,
                c.s.api.clock().now(),
            );
            if let Some(cont) = page.metadata.get("continue") {
                t["metadata"]["continue"] = cont.clone();
            }
            if let Some(n) = page.metadata.get("remainingItemCount") {
                t["metadata"]["remainingItemCount"] = n.clone();
            }
            table::set_version(&mut t, version);
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
    table::partial_object_metadata(obj)
}

fn object_response(
    c: &RequestContext<'_>,
    rt: &ResourceType,
    code: StatusCode,
    obj: &Value,
    warnings: &[String],
) -> ApiResult<Response> {
    match c.output(false)? {
        Output::Table(version) => {
            let printer = printer_for(rt);
            let mut t = table::to_table(
                &printer,
                &[obj],
                meta::resource_version(obj),
                include_object(c)?,
                true,
                c.s.api.clock().now(),
            );
            table::set_version(&mut t, version);
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
            // `ValidateDeleteOptions` (pkg/apis/meta/internalversion/validation).
            use crate::apiserver::validation::field;
            let errs = vec![field::not_supported(
                &field::Path::new("propagationPolicy"),
                field::BadValue::named(other),
                &["Foreground", "Background", "Orphan", "nil"],
            )];
            return Err(field::invalid_status(
                "meta.k8s.io",
                "DeleteOptions",
                "",
                &errs,
            ));
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
    if *out == Output::Protobuf {
        if let Some(body) = crate::apiserver::protobuf::encode(v) {
            return bytes_response(
                code,
                crate::apiserver::protobuf::CONTENT_TYPE,
                body,
                warnings,
            );
        }
    }
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
