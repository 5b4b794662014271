//! Bad requests get the apiserver's Status (reason and code) and leave the store unchanged.

mod common;

use common::TestCluster;
use http::{Method, Request};
use serde_json::Value;

struct Reply {
    code: u16,
    content_type: String,
    body: Value,
}

async fn send(
    client: &kube::Client,
    method: Method,
    path: &str,
    content_type: Option<&str>,
    accept: Option<&str>,
    body: &[u8],
) -> Reply {
    let mut b = Request::builder().method(method).uri(path);
    if let Some(ct) = content_type {
        b = b.header("Content-Type", ct);
    }
    if let Some(a) = accept {
        b = b.header("Accept", a);
    }
    let req = b.body(kube::client::Body::from(body.to_vec())).unwrap();
    let resp = client.send(req).await.expect("transport");
    let code = resp.status().as_u16();
    let content_type = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let bytes = http_body_util::BodyExt::collect(resp.into_body())
        .await
        .unwrap()
        .to_bytes();
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    Reply {
        code,
        content_type,
        body,
    }
}

fn assert_status(r: &Reply, code: u16, reason: &str) {
    assert_eq!(r.code, code, "{:?}", r.body);
    assert_eq!(r.body["kind"], "Status", "{:?}", r.body);
    assert_eq!(r.body["status"], "Failure");
    assert_eq!(r.body["reason"], reason, "{:?}", r.body);
    assert_eq!(r.body["code"], code);
}

#[tokio::test]
async fn bad_requests_get_status_and_change_nothing() {
    let c = TestCluster::start(1).await;
    let client = c.client().await;
    let cms = "/api/v1/namespaces/default/configmaps";
    let ok = send(
        &client,
        Method::POST,
        cms,
        Some("application/json"),
        None,
        br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"keep"},"data":{"a":"1"}}"#,
    )
    .await;
    assert_eq!(ok.code, 201);
    let rv_before = c.server.api.store.current_rv();

    let malformed = send(
        &client,
        Method::POST,
        cms,
        Some("application/json"),
        None,
        br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x""#,
    )
    .await;
    assert_status(&malformed, 400, "BadRequest");

    let wrong_type = send(
        &client,
        Method::POST,
        cms,
        Some("text/plain"),
        None,
        b"name=x",
    )
    .await;
    assert_status(&wrong_type, 415, "UnsupportedMediaType");

    let unknown = send(
        &client,
        Method::GET,
        "/api/v1/namespaces/default/widgets",
        None,
        None,
        b"",
    )
    .await;
    assert_status(&unknown, 404, "NotFound");
    let unknown_group = send(
        &client,
        Method::GET,
        "/apis/nope.example.com/v1/things",
        None,
        None,
        b"",
    )
    .await;
    assert_status(&unknown_group, 404, "NotFound");

    let not_acceptable = send(&client, Method::GET, cms, None, Some("text/html"), b"").await;
    assert_status(&not_acceptable, 406, "NotAcceptable");

    let stale = send(&client, Method::PUT, &format!("{cms}/keep"), Some("application/json"), None, br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"keep","resourceVersion":"1"},"data":{"a":"2"}}"#).await;
    assert_status(&stale, 409, "Conflict");

    let wrong_kind = send(
        &client,
        Method::POST,
        cms,
        Some("application/json"),
        None,
        br#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"}}"#,
    )
    .await;
    assert_status(&wrong_kind, 400, "BadRequest");

    let bad_name = send(
        &client,
        Method::POST,
        cms,
        Some("application/json"),
        None,
        br#"{"metadata":{"name":"Not_Valid"}}"#,
    )
    .await;
    assert_status(&bad_name, 422, "Invalid");
    assert_eq!(
        bad_name.body["details"]["causes"][0]["field"],
        "metadata.name"
    );

    let strict = send(
        &client,
        Method::POST,
        &format!("{cms}?fieldValidation=Strict"),
        Some("application/json"),
        None,
        br#"{"metadata":{"name":"strict"},"dta":{}}"#,
    )
    .await;
    assert_status(&strict, 400, "BadRequest");
    assert!(
        strict.body["message"]
            .as_str()
            .unwrap()
            .contains(r#"unknown field "dta""#),
        "{:?}",
        strict.body
    );

    let wrong_types = send(
        &client,
        Method::POST,
        "/api/v1/namespaces/default/pods",
        Some("application/json"),
        None,
        br#"{"metadata":{"name":"p"},"spec":{"containers":"busybox"}}"#,
    )
    .await;
    assert_status(&wrong_types, 400, "BadRequest");

    let bad_selector = send(
        &client,
        Method::GET,
        &format!("{cms}?labelSelector=a%20in%20(b"),
        None,
        None,
        b"",
    )
    .await;
    assert_status(&bad_selector, 400, "BadRequest");

    let bad_patch = send(
        &client,
        Method::PATCH,
        &format!("{cms}/keep"),
        Some("application/json-patch+json"),
        None,
        br#"[{"op":"frobnicate","path":"/data"}]"#,
    )
    .await;
    assert!(
        bad_patch.code == 400 || bad_patch.code == 422,
        "{:?}",
        bad_patch.body
    );

    let unknown_patch = send(
        &client,
        Method::PATCH,
        &format!("{cms}/keep"),
        Some("application/xml"),
        None,
        b"<x/>",
    )
    .await;
    assert_status(&unknown_patch, 415, "UnsupportedMediaType");

    let method = send(
        &client,
        Method::PUT,
        cms,
        Some("application/json"),
        None,
        b"{}",
    )
    .await;
    assert_status(&method, 405, "MethodNotAllowed");

    assert_eq!(
        c.server.api.store.current_rv(),
        rv_before,
        "rejected requests must not write"
    );
    let kept = send(
        &client,
        Method::GET,
        &format!("{cms}/keep"),
        None,
        None,
        b"",
    )
    .await;
    assert_eq!(kept.body["data"]["a"], "1");
    assert!(kept.content_type.starts_with("application/json"));
}

#[tokio::test]
async fn requests_without_the_token_are_unauthorized() {
    let c = TestCluster::start(0).await;
    let mut kc = kube::config::Kubeconfig::read_from(&c.kubeconfig).unwrap();
    for u in kc.auth_infos.iter_mut() {
        if let Some(info) = u.auth_info.as_mut() {
            info.token = Some(secrecy::SecretString::from("wrong-token".to_string()));
        }
    }
    let cfg = kube::Config::from_custom_kubeconfig(kc, &Default::default())
        .await
        .unwrap();
    let client = kube::Client::try_from(cfg).unwrap();
    for path in ["/version", "/api", "/api/v1/namespaces", "/healthz"] {
        let r = send(&client, Method::GET, path, None, None, b"").await;
        assert_status(&r, 401, "Unauthorized");
    }
}

#[tokio::test]
async fn server_listens_on_loopback_only() {
    let c = TestCluster::start(0).await;
    assert!(c.server.addr.ip().is_loopback());
    let url = c.server.url();
    assert!(url.starts_with("https://127.0.0.1:"), "{url}");
}

#[tokio::test]
async fn injected_api_errors_and_latency() {
    use faultline_sim::http::faults::{ApiFault, ApiFaultKind};
    let c = TestCluster::start(0).await;
    let client = c.client().await;
    let cms = "/api/v1/namespaces/default/configmaps";
    let id = c.server.faults.add(ApiFault {
        kind: ApiFaultKind::Errors {
            rate: 1.0,
            code: 500,
        },
        verbs: vec!["create".into()],
        resources: vec!["configmaps".into()],
    });
    // (kube-rs retries 503s with backoff for minutes, as client-go does with Retry-After: use 500.)
    let r = send(
        &client,
        Method::POST,
        cms,
        Some("application/json"),
        None,
        br#"{"metadata":{"name":"x"}}"#,
    )
    .await;
    assert_status(&r, 500, "InternalError");
    let listed = send(&client, Method::GET, cms, None, None, b"").await;
    assert_eq!(listed.code, 200, "other verbs are untouched");
    assert!(c.server.faults.remove(id));
    let r = send(
        &client,
        Method::POST,
        cms,
        Some("application/json"),
        None,
        br#"{"metadata":{"name":"x"}}"#,
    )
    .await;
    assert_eq!(r.code, 201);
    c.server.faults.add(ApiFault {
        kind: ApiFaultKind::Latency(std::time::Duration::from_millis(300)),
        verbs: vec!["get".into()],
        resources: vec![],
    });
    let t = std::time::Instant::now();
    let r = send(&client, Method::GET, &format!("{cms}/x"), None, None, b"").await;
    assert_eq!(r.code, 200);
    assert!(
        t.elapsed() >= std::time::Duration::from_millis(300),
        "{:?}",
        t.elapsed()
    );
}

/// Metadata-only answers as kube-apiserver 1.35 gives them (docs/fidelity.md,
/// "PartialObjectMetadata"; kubernetes_asyncio's packaged live test crashed on the real `null`).
#[tokio::test]
async fn metadata_only_answers_fit_their_shape() {
    let c = TestCluster::start(0).await;
    let client = c.client().await;
    const ONE: &str = "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io";
    const LIST: &str = "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io";
    let get = |path: &'static str, accept: &'static str| {
        let client = client.clone();
        async move { send(&client, Method::GET, path, None, Some(accept), b"").await }
    };
    let none = get(
        "/api/v1/namespaces/default/configmaps?labelSelector=app%3Dnone",
        LIST,
    )
    .await;
    assert_eq!(none.code, 200, "{:?}", none.body);
    assert_eq!(none.body["kind"], "PartialObjectMetadataList");
    assert!(
        none.body["items"].is_null(),
        "no items is null: {:?}",
        none.body
    );
    let some = get("/api/v1/namespaces", LIST).await;
    assert!(
        some.body["items"].as_array().is_some_and(|i| !i.is_empty()),
        "{:?}",
        some.body
    );
    let r = get("/apis/apps/v1/namespaces/default/deployments", ONE).await;
    assert_status(&r, 406, "NotAcceptable");
    assert_eq!(
        r.body["message"],
        "you requested PartialObjectMetadata, but the requested object is a list (*apps.DeploymentList)"
    );
    let r = get("/api/v1/namespaces/default", LIST).await;
    assert_status(&r, 406, "NotAcceptable");
    assert_eq!(
        r.body["message"],
        "you requested PartialObjectMetadataList, but the requested object is not a list (*core.Namespace)"
    );
    let r = get("/api/v1/namespaces/default", ONE).await;
    assert_eq!(r.code, 200);
    assert_eq!(r.body["kind"], "PartialObjectMetadata");
}

/// Server-side apply of a body of another type than the endpoint's: 400 naming the body's
/// GroupVersionKind as kube-apiserver 1.35 does.
#[tokio::test]
async fn apply_of_another_type_names_it() {
    let c = TestCluster::start(0).await;
    let client = c.client().await;
    for (body, message) in [
        (
            r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"a"}}"#,
            "invalid object type: apps/v1, Kind=Deployment",
        ),
        (
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}"#,
            "invalid object type: /v1, Kind=ConfigMap",
        ),
        (
            r#"{"kind":"Pod","metadata":{"name":"a"}}"#,
            "invalid object type: /, Kind=Pod",
        ),
    ] {
        let r = send(
            &client,
            Method::PATCH,
            "/api/v1/namespaces/default/pods/a?fieldManager=t",
            Some("application/apply-patch+yaml"),
            None,
            body.as_bytes(),
        )
        .await;
        assert_status(&r, 400, "BadRequest");
        assert_eq!(r.body["message"], message);
    }
}
