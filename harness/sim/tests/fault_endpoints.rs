//! The fault endpoints (`/faultline/v1/...`) as go/faultlinetest and the envtest drop-in use
//! them: catalogue operations injected and healed on a whole cluster (`/faults`), the
//! catalogue listed (`/catalogue`), only the cluster admin served (RBAC cannot grant them),
//! and no endpoints at all when the server is started without them.

mod common;

use common::{eventually, TestCluster};
use faultline_sim::{SimOptions, Timing};
use k8s_openapi::api::storage::v1::CSINode;
use kube::api::Api;
use serde_json::{json, Value};

/// `(status, body)` of a request straight to the router, as `token`'s holder.
async fn call(c: &TestCluster, token: &str, method: &str, path: &str, body: Value) -> (u16, Value) {
    let req = http::Request::builder()
        .method(method)
        .uri(path)
        .header("Authorization", format!("Bearer {token}"))
        .header("Content-Type", "application/json")
        .body(axum::body::Body::from(serde_json::to_vec(&body).unwrap()))
        .unwrap();
    let resp = tower::ServiceExt::oneshot(c.server.router(), req)
        .await
        .unwrap();
    let status = resp.status().as_u16();
    let bytes = http_body_util::BodyExt::collect(resp.into_body())
        .await
        .unwrap()
        .to_bytes();
    let v = serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into()));
    (status, v)
}

async fn registered(client: &kube::Client) -> bool {
    Api::<CSINode>::all(client.clone())
        .get_opt("worker-01")
        .await
        .ok()
        .flatten()
        .is_some_and(|n| {
            n.spec
                .drivers
                .iter()
                .any(|d| d.name == "driver.longhorn.io")
        })
}

#[tokio::test]
async fn catalogue_operations_are_injected_and_healed_by_the_admin_only() {
    let c = TestCluster::start_with(SimOptions::full(1, Timing::scaled(0.05))).await;
    let client = c.client().await;
    let admin = c.server.token.clone();

    let (code, cat) = call(&c, &admin, "GET", "/faultline/v1/catalogue", json!(null)).await;
    assert_eq!(code, 200, "{cat}");
    let entry = |key: &str| {
        cat["operations"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["key"] == key)
            .cloned()
            .unwrap_or_else(|| panic!("{key} not listed: {cat}"))
    };
    assert_eq!(
        entry("csiDriverUnregistered"),
        json!({"key": "csiDriverUnregistered", "area": "storage", "lifetime": "held"})
    );
    assert_eq!(entry("csiPluginRestart")["lifetime"], "oneShot");
    assert_eq!(entry("kubeletStop")["area"], "node");
    assert_eq!(entry("apiErrors")["area"], "api");

    eventually(20, "the driver registered", || async {
        registered(&client).await.then_some(())
    })
    .await;
    let op = json!({"csiDriverUnregistered": {"node": "worker-01"}});
    let (code, body) = call(&c, &admin, "POST", "/faultline/v1/faults", op.clone()).await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(
        body,
        json!({"operation": "csiDriverUnregistered", "node": "worker-01", "phase": "inject", "lifetime": "held"})
    );
    eventually(20, "the driver gone from CSINode", || async {
        (!registered(&client).await).then_some(())
    })
    .await;
    let (code, body) = call(&c, &admin, "POST", "/faultline/v1/faults/heal", op).await;
    assert_eq!(code, 200, "{body}");
    eventually(20, "the driver registered again", || async {
        registered(&client).await.then_some(())
    })
    .await;

    // Refusals name what is wrong.
    for (op, code, says) in [
        (
            json!({"apiErrors": {"rate": 1}}),
            400,
            "`apiErrors` is not a node operation: API faults go to /faultline/v1/apifaults",
        ),
        (
            json!({"ioErrors": {"node": "worker-09"}}),
            404,
            "ioErrors on worker-09",
        ),
        (
            json!({"staleDeviceMount": {"node": "worker-01", "volume": {"pvc": "nope"}}}),
            409,
            "PVC default/nope",
        ),
        (json!({"colour": {}}), 400, "a fault catalogue operation"),
    ] {
        let (got, body) = call(&c, &admin, "POST", "/faultline/v1/faults", op.clone()).await;
        assert_eq!(got, code, "{op}: {body}");
        let msg = body["message"].as_str().unwrap_or_default();
        assert!(msg.contains(says), "{op}: {msg}");
    }

    // A ServiceAccount bound to cluster-admin (whose nonResourceURLs are "*") is still refused.
    let sa_token = service_account_admin_token(&c).await;
    let (code, body) = call(&c, &sa_token, "GET", "/api/v1/nodes", json!(null)).await;
    assert_eq!(code, 200, "cluster-admin reads nodes: {body}");
    for (method, path) in [
        ("GET", "/faultline/v1/catalogue"),
        ("POST", "/faultline/v1/faults"),
        ("POST", "/faultline/v1/apifaults"),
        ("POST", "/faultline/v1/nodes/worker-01/ops"),
    ] {
        let (code, body) = call(
            &c,
            &sa_token,
            method,
            path,
            json!({"kubeletStop": {"node": "worker-01"}}),
        )
        .await;
        assert_eq!(code, 403, "{method} {path}: {body}");
        let msg = body["message"].as_str().unwrap_or_default();
        assert!(
            msg.contains("only members of system:masters may inject faults"),
            "{msg}"
        );
    }
}

/// A token of ServiceAccount `default/ops`, bound to cluster-admin.
async fn service_account_admin_token(c: &TestCluster) -> String {
    let admin = c.server.token.clone();
    for (path, obj) in [
        (
            "/api/v1/namespaces/default/serviceaccounts",
            json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "ops"}}),
        ),
        (
            "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                   "metadata": {"name": "ops-admin"},
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
                   "subjects": [{"kind": "ServiceAccount", "name": "ops", "namespace": "default"}]}),
        ),
    ] {
        let (code, body) = call(c, &admin, "POST", path, obj).await;
        assert_eq!(code, 201, "{path}: {body}");
    }
    let (code, body) = call(
        c,
        &admin,
        "POST",
        "/api/v1/namespaces/default/serviceaccounts/ops/token",
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}}),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    body["status"]["token"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn without_fault_endpoints_the_paths_are_unknown() {
    let c = TestCluster::start_with(SimOptions {
        fault_endpoints: false,
        ..SimOptions::with_workers(1)
    })
    .await;
    let admin = c.server.token.clone();
    for (method, path) in [
        ("GET", "/faultline/v1/catalogue"),
        ("POST", "/faultline/v1/apifaults"),
        ("POST", "/faultline/v1/faults"),
    ] {
        let (code, body) = call(
            &c,
            &admin,
            method,
            path,
            json!({"apiLatency": {"latency": "1s"}}),
        )
        .await;
        assert_eq!(
            (code, body),
            (404, json!("404 page not found\n")),
            "{method} {path}"
        );
    }
    assert!(
        c.server.faults.decide("get", "pods").1.is_zero(),
        "no fault was added"
    );
}
