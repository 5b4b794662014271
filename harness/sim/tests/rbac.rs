//! Authentication and RBAC through real clients: kube-rs with a ServiceAccount token (403, then
//! 200 once a RoleBinding grants it, 401 once the account is deleted), the apiserver's exact
//! 403 body, access and rules reviews, and kubectl 1.37 `auth can-i` (also `--as`), `create
//! token`, `auth whoami`.

mod common;

use common::tools::{kubectl, kubectl_ok};
use common::TestCluster;
use http::{Method, Request};
use k8s_openapi::api::authentication::v1::TokenRequest;
use k8s_openapi::api::core::v1::{Namespace, Node, Pod, ServiceAccount};
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use serde_json::{json, Value};
use std::path::PathBuf;

/// A namespace `team` with ServiceAccount `ctl`, created by the admin.
async fn team(c: &TestCluster) -> kube::Client {
    let admin = c.client().await;
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": "team"}})).unwrap();
    Api::<Namespace>::all(admin.clone())
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
    let sa: ServiceAccount = serde_json::from_value(json!({"metadata": {"name": "ctl"}})).unwrap();
    Api::<ServiceAccount>::namespaced(admin.clone(), "team")
        .create(&PostParams::default(), &sa)
        .await
        .unwrap();
    admin
}

/// TokenRequest for `team/ctl` through kube-rs.
async fn token(admin: &kube::Client) -> TokenRequest {
    Api::<ServiceAccount>::namespaced(admin.clone(), "team")
        .create_token_request("ctl", &PostParams::default(), &TokenRequest::default())
        .await
        .expect("TokenRequest")
}

/// The cluster's kubeconfig with `token` instead of the admin token.
fn kubeconfig_with(c: &TestCluster, token: &str, name: &str) -> PathBuf {
    let text = std::fs::read_to_string(&c.kubeconfig).unwrap();
    let mut y: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
    y["users"][0]["user"]["token"] = token.into();
    let path = c.dir.path().join(name);
    std::fs::write(&path, serde_yaml::to_string(&y).unwrap()).unwrap();
    path
}

async fn client_for(kubeconfig: &PathBuf) -> kube::Client {
    let kc = kube::config::Kubeconfig::read_from(kubeconfig).unwrap();
    let cfg = kube::Config::from_custom_kubeconfig(kc, &Default::default())
        .await
        .unwrap();
    kube::Client::try_from(cfg).unwrap()
}

/// (status code, raw body) of a request.
async fn raw(
    client: &kube::Client,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> (u16, String) {
    let mut b = Request::builder().method(method).uri(path);
    if body.is_some() {
        b = b.header("Content-Type", "application/json");
    }
    let bytes = body
        .map(|v| serde_json::to_vec(&v).unwrap())
        .unwrap_or_default();
    let resp = client
        .send(b.body(kube::client::Body::from(bytes)).unwrap())
        .await
        .expect("transport");
    let code = resp.status().as_u16();
    let bytes = http_body_util::BodyExt::collect(resp.into_body())
        .await
        .unwrap()
        .to_bytes();
    (code, String::from_utf8_lossy(&bytes).into_owned())
}

fn forbidden_body(message: &str, details: &str) -> String {
    format!(
        r#"{{"kind":"Status","apiVersion":"v1","metadata":{{}},"status":"Failure","message":{},"reason":"Forbidden","details":{},"code":403}}"#,
        serde_json::to_string(message).unwrap(),
        details
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_account_token_is_forbidden_until_a_role_binding_grants_it() {
    let c = TestCluster::start(1).await;
    let admin = team(&c).await;
    let issued = token(&admin).await;
    let jwt = issued
        .status
        .and_then(|s| s.token)
        .expect("TokenRequest status.token");
    assert_eq!(jwt.split('.').count(), 3, "a JWT: {jwt}");
    let spec = issued.spec.expect("TokenRequest spec");
    assert_eq!(spec.expiration_seconds, Some(3600));
    assert_eq!(
        spec.audiences,
        Some(vec![
            "https://kubernetes.default.svc.cluster.local".to_string()
        ])
    );
    let sa_kc = kubeconfig_with(&c, &jwt, "sa.kubeconfig");
    let sa = client_for(&sa_kc).await;

    // Typed client: the apiserver's Forbidden status.
    let pods: Api<Pod> = Api::namespaced(sa.clone(), "team");
    let err = pods
        .list(&ListParams::default())
        .await
        .expect_err("no RBAC grant yet");
    let kube::Error::Api(status) = err else {
        panic!("expected an API error, got {err:?}")
    };
    assert_eq!((status.code, status.reason.as_str()), (403, "Forbidden"));
    let list_message = r#"pods is forbidden: User "system:serviceaccount:team:ctl" cannot list resource "pods" in API group "" in the namespace "team""#;
    assert_eq!(status.message, list_message);

    // The exact bodies, as strings: list, named get, subresource, cluster scope.
    let (code, body) = raw(&sa, Method::GET, "/api/v1/namespaces/team/pods", None).await;
    assert_eq!(code, 403);
    assert_eq!(
        body.trim_end(),
        forbidden_body(list_message, r#"{"kind":"pods"}"#)
    );
    let (_, body) = raw(
        &sa,
        Method::GET,
        "/api/v1/namespaces/team/pods/web-0/log",
        None,
    )
    .await;
    assert_eq!(
        body.trim_end(),
        forbidden_body(
            r#"pods "web-0" is forbidden: User "system:serviceaccount:team:ctl" cannot get resource "pods/log" in API group "" in the namespace "team""#,
            r#"{"name":"web-0","kind":"pods"}"#
        )
    );
    let (_, body) = raw(
        &sa,
        Method::GET,
        "/apis/storage.k8s.io/v1/storageclasses",
        None,
    )
    .await;
    assert_eq!(
        body.trim_end(),
        forbidden_body(
            r#"storageclasses.storage.k8s.io is forbidden: User "system:serviceaccount:team:ctl" cannot list resource "storageclasses" in API group "storage.k8s.io" at the cluster scope"#,
            r#"{"group":"storage.k8s.io","kind":"storageclasses"}"#
        )
    );
    let nodes = Api::<Node>::all(sa.clone())
        .list(&ListParams::default())
        .await
        .expect_err("nodes are not granted");
    assert!(
        matches!(nodes, kube::Error::Api(ref s) if s.code == 403),
        "{nodes:?}"
    );
    // Discovery is open to every authenticated user (system:discovery).
    let (code, _) = raw(&sa, Method::GET, "/apis", None).await;
    assert_eq!(code, 200);

    // A Role and a RoleBinding: the same request succeeds.
    let rbac =
        |plural: &str| format!("/apis/rbac.authorization.k8s.io/v1/namespaces/team/{plural}");
    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "pod-reader"},
                      "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}]});
    assert_eq!(
        raw(&admin, Method::POST, &rbac("roles"), Some(role))
            .await
            .0,
        201
    );
    let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "read-pods"},
                         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pod-reader"},
                         "subjects": [{"kind": "ServiceAccount", "name": "ctl", "namespace": "team"}]});
    assert_eq!(
        raw(&admin, Method::POST, &rbac("rolebindings"), Some(binding))
            .await
            .0,
        201
    );
    let listed = pods
        .list(&ListParams::default())
        .await
        .expect("granted by the RoleBinding");
    assert!(listed.items.is_empty());
    // Only what the Role grants: creating a pod, or reading another namespace, stays forbidden.
    let p: Pod = serde_json::from_value(json!({"metadata": {"name": "x"}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}})).unwrap();
    let err = pods
        .create(&PostParams::default(), &p)
        .await
        .expect_err("create is not granted");
    assert!(
        matches!(err, kube::Error::Api(ref s) if s.code == 403 && s.message.contains("cannot create resource \"pods\"")),
        "{err:?}"
    );
    assert!(Api::<Pod>::namespaced(sa.clone(), "default")
        .list(&ListParams::default())
        .await
        .is_err());

    // A binding to a Role that does not exist: denied, with RBAC's reason appended.
    let dangling = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "dangling"},
                          "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "missing"},
                          "subjects": [{"kind": "ServiceAccount", "name": "ctl", "namespace": "team"}]});
    assert_eq!(
        raw(&admin, Method::POST, &rbac("rolebindings"), Some(dangling))
            .await
            .0,
        201
    );
    let (_, body) = raw(&sa, Method::GET, "/api/v1/namespaces/team/configmaps", None).await;
    assert!(body.contains(r#"in the namespace \"team\": RBAC: role.rbac.authorization.k8s.io \"missing\" not found""#), "{body}");

    // The ServiceAccount is deleted: its tokens stop authenticating.
    Api::<ServiceAccount>::namespaced(admin.clone(), "team")
        .delete("ctl", &DeleteParams::default())
        .await
        .unwrap();
    let (code, body) = raw(&sa, Method::GET, "/api/v1/namespaces/team/pods", None).await;
    assert_eq!(code, 401, "{body}");
    // The admin keeps full access whatever the RBAC objects say.
    let (code, _) = raw(
        &admin,
        Method::DELETE,
        "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/cluster-admin",
        None,
    )
    .await;
    assert_eq!(code, 200);
    assert!(Api::<Node>::all(admin.clone())
        .list(&ListParams::default())
        .await
        .is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn access_reviews_and_aggregated_cluster_roles() {
    let c = TestCluster::start(0).await;
    let admin = team(&c).await;
    let sar = |verb: &str, resource: &str| {
        json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
               "spec": {"user": "system:serviceaccount:team:ctl", "groups": ["system:serviceaccounts", "system:serviceaccounts:team", "system:authenticated"],
                        "resourceAttributes": {"namespace": "team", "verb": verb, "resource": resource}}})
    };
    let (code, body) = raw(
        &admin,
        Method::POST,
        "/apis/authorization.k8s.io/v1/subjectaccessreviews",
        Some(sar("list", "deployments")),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["status"], json!({"allowed": false}));

    // `view` aggregates the system:aggregate-to-view rules, and any ClusterRole labelled for it.
    let crb = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "viewers"},
                     "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
                     "subjects": [{"kind": "Group", "name": "system:serviceaccounts:team"}]});
    assert_eq!(
        raw(
            &admin,
            Method::POST,
            "/apis/rbac.authorization.k8s.io/v1/namespaces/team/rolebindings",
            Some(crb)
        )
        .await
        .0,
        201
    );
    let v: Value = serde_json::from_str(
        &raw(
            &admin,
            Method::POST,
            "/apis/authorization.k8s.io/v1/subjectaccessreviews",
            Some(sar("list", "pods")),
        )
        .await
        .1,
    )
    .unwrap();
    assert_eq!(v["status"]["allowed"], true);
    assert_eq!(
        v["status"]["reason"],
        r#"RBAC: allowed by RoleBinding "viewers/team" of ClusterRole "view" to Group "system:serviceaccounts:team""#
    );
    let v: Value = serde_json::from_str(
        &raw(
            &admin,
            Method::POST,
            "/apis/authorization.k8s.io/v1/subjectaccessreviews",
            Some(sar("list", "widgets")),
        )
        .await
        .1,
    )
    .unwrap();
    assert_eq!(v["status"]["allowed"], false);
    let extra = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                       "metadata": {"name": "widget-viewer", "labels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}},
                       "rules": [{"apiGroups": [""], "resources": ["widgets"], "verbs": ["list"]}]});
    assert_eq!(
        raw(
            &admin,
            Method::POST,
            "/apis/rbac.authorization.k8s.io/v1/clusterroles",
            Some(extra)
        )
        .await
        .0,
        201
    );
    let v: Value = serde_json::from_str(
        &raw(
            &admin,
            Method::POST,
            "/apis/authorization.k8s.io/v1/subjectaccessreviews",
            Some(sar("list", "widgets")),
        )
        .await
        .1,
    )
    .unwrap();
    assert_eq!(v["status"]["allowed"], true, "{v}");

    // LocalSubjectAccessReview must name its own namespace.
    let mut local = sar("list", "pods");
    local["kind"] = json!("LocalSubjectAccessReview");
    let (code, body) = raw(
        &admin,
        Method::POST,
        "/apis/authorization.k8s.io/v1/namespaces/default/localsubjectaccessreviews",
        Some(local.clone()),
    )
    .await;
    assert_eq!(code, 422, "{body}");
    let (code, _) = raw(
        &admin,
        Method::POST,
        "/apis/authorization.k8s.io/v1/namespaces/team/localsubjectaccessreviews",
        Some(local),
    )
    .await;
    assert_eq!(code, 201);

    // TokenReview of an issued token and of garbage.
    let t = token(&admin).await.status.and_then(|s| s.token).unwrap();
    let review = |t: &str| json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": t}});
    let v: Value = serde_json::from_str(
        &raw(
            &admin,
            Method::POST,
            "/apis/authentication.k8s.io/v1/tokenreviews",
            Some(review(&t)),
        )
        .await
        .1,
    )
    .unwrap();
    assert_eq!(v["status"]["authenticated"], true);
    assert_eq!(
        v["status"]["user"]["username"],
        "system:serviceaccount:team:ctl"
    );
    assert_eq!(
        v["status"]["user"]["groups"],
        json!([
            "system:serviceaccounts",
            "system:serviceaccounts:team",
            "system:authenticated"
        ])
    );
    let v: Value = serde_json::from_str(
        &raw(
            &admin,
            Method::POST,
            "/apis/authentication.k8s.io/v1/tokenreviews",
            Some(review("a.b.c")),
        )
        .await
        .1,
    )
    .unwrap();
    assert_eq!(v["status"]["authenticated"], Value::Null);
    // A token bound to another audience: accepted for that audience (named back in the status),
    // refused for the apiserver's own.
    let request = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"audiences": ["api"]}});
    let (code, body) = raw(
        &admin,
        Method::POST,
        "/api/v1/namespaces/team/serviceaccounts/ctl/token",
        Some(request),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    let api_token = serde_json::from_str::<Value>(&body).unwrap()["status"]["token"]
        .as_str()
        .unwrap()
        .to_string();
    let mut for_api = review(&api_token);
    for_api["spec"]["audiences"] = json!(["other", "api"]);
    let v: Value = serde_json::from_str(
        &raw(
            &admin,
            Method::POST,
            "/apis/authentication.k8s.io/v1/tokenreviews",
            Some(for_api),
        )
        .await
        .1,
    )
    .unwrap();
    assert_eq!(
        (&v["status"]["authenticated"], &v["status"]["audiences"]),
        (&json!(true), &json!(["api"])),
        "{v}"
    );
    let v: Value = serde_json::from_str(
        &raw(
            &admin,
            Method::POST,
            "/apis/authentication.k8s.io/v1/tokenreviews",
            Some(review(&api_token)),
        )
        .await
        .1,
    )
    .unwrap();
    assert_eq!(
        v["status"]["error"],
        r#"[invalid bearer token, token audiences ["api"] is invalid for the target audiences ["https://kubernetes.default.svc.cluster.local"]]"#
    );
    // Reviews are create-only.
    assert_eq!(
        raw(
            &admin,
            Method::GET,
            "/apis/authorization.k8s.io/v1/subjectaccessreviews",
            None
        )
        .await
        .0,
        405
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_auth_can_i_create_token_and_whoami() {
    let c = TestCluster::start(0).await;
    let admin = team(&c).await;
    let kc = &c.kubeconfig;
    assert_eq!(
        kubectl_ok(kc, &["auth", "can-i", "delete", "nodes"])
            .await
            .trim(),
        "yes"
    );
    let who = kubectl_ok(kc, &["auth", "whoami"]).await;
    assert!(
        who.lines()
            .any(|l| l.starts_with("Username") && l.trim_end().ends_with("kubernetes-admin")),
        "{who}"
    );
    assert!(
        who.contains("[system:masters system:authenticated]"),
        "{who}"
    );

    // `kubectl create token` prints a token the server accepts for that ServiceAccount.
    let token = kubectl_ok(kc, &["create", "token", "ctl", "-n", "team"])
        .await
        .trim()
        .to_string();
    assert_eq!(token.split('.').count(), 3, "{token}");
    let kc_s = kc.to_str().unwrap();
    let as_sa = |args: &[&str]| {
        let mut v = vec!["--kubeconfig", kc_s, "--token", token.as_str()];
        v.extend_from_slice(args);
        v.into_iter().map(String::from).collect::<Vec<_>>()
    };
    let run = |args: Vec<String>| async move {
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        kubectl(&PathBuf::from("/nonexistent"), &refs).await
    };
    let whoami = run(as_sa(&["auth", "whoami"])).await;
    let whoami_out = String::from_utf8_lossy(&whoami.stdout);
    assert!(
        whoami.status.success(),
        "{}",
        String::from_utf8_lossy(&whoami.stderr)
    );
    assert!(
        whoami_out.lines().any(|l| l.starts_with("Username")
            && l.trim_end().ends_with("system:serviceaccount:team:ctl")),
        "{whoami_out}"
    );
    assert!(
        whoami_out
            .contains("[system:serviceaccounts system:serviceaccounts:team system:authenticated]"),
        "{whoami_out}"
    );
    assert!(
        whoami_out.contains("authentication.kubernetes.io/credential-id"),
        "{whoami_out}"
    );

    // `can-i` exits 1 with "no" until a binding grants the verb.
    let no = run(as_sa(&[
        "auth",
        "can-i",
        "create",
        "deployments.apps",
        "-n",
        "team",
    ]))
    .await;
    assert_eq!(String::from_utf8_lossy(&no.stdout).trim(), "no");
    assert_eq!(no.status.code(), Some(1));
    let get = run(as_sa(&["get", "deployments", "-n", "team"])).await;
    assert_eq!(
        String::from_utf8_lossy(&get.stderr).trim(),
        r#"Error from server (Forbidden): deployments.apps is forbidden: User "system:serviceaccount:team:ctl" cannot list resource "deployments" in API group "apps" in the namespace "team""#
    );
    // The admin asks on the ServiceAccount's behalf (impersonation, `--as`).
    let as_ctl = ["--as=system:serviceaccount:team:ctl", "-n", "team"];
    let no = kubectl(
        kc,
        &[
            &["auth", "can-i", "create", "deployments.apps"][..],
            &as_ctl[..],
        ]
        .concat(),
    )
    .await;
    assert_eq!(
        String::from_utf8_lossy(&no.stdout).trim(),
        "no",
        "{}",
        String::from_utf8_lossy(&no.stderr)
    );
    let who = kubectl_ok(kc, &[&["auth", "whoami"][..], &as_ctl[..]].concat()).await;
    assert!(
        who.contains("[system:serviceaccounts system:serviceaccounts:team system:authenticated]"),
        "{who}"
    );
    // A ServiceAccount may not impersonate anyone.
    let imp = run(as_sa(&["get", "pods", "-n", "team", "--as=alice"])).await;
    assert_eq!(
        String::from_utf8_lossy(&imp.stderr).trim(),
        r#"Error from server (Forbidden): users "alice" is forbidden: User "system:serviceaccount:team:ctl" cannot impersonate resource "users" in API group "" at the cluster scope"#
    );
    kubectl_ok(
        kc,
        &[
            "create",
            "rolebinding",
            "ctl-edit",
            "--clusterrole=edit",
            "--serviceaccount=team:ctl",
            "-n",
            "team",
        ],
    )
    .await;
    assert_eq!(
        kubectl_ok(
            kc,
            &[
                &["auth", "can-i", "create", "deployments.apps"][..],
                &as_ctl[..]
            ]
            .concat()
        )
        .await
        .trim(),
        "yes"
    );
    // Server-side printing of the RBAC kinds, as kubectl shows it.
    let wide = kubectl_ok(
        kc,
        &["get", "rolebinding", "ctl-edit", "-n", "team", "-o", "wide"],
    )
    .await;
    let mut lines = wide.lines();
    let header: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        ["NAME", "ROLE", "AGE", "USERS", "GROUPS", "SERVICEACCOUNTS"],
        "{wide}"
    );
    let row: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(
        (row[0], row[1], row[3]),
        ("ctl-edit", "ClusterRole/edit", "team/ctl"),
        "{wide}"
    );
    let roles = kubectl_ok(kc, &["get", "clusterroles", "cluster-admin", "view"]).await;
    assert_eq!(
        roles
            .lines()
            .next()
            .unwrap()
            .split_whitespace()
            .collect::<Vec<_>>(),
        ["NAME", "CREATED", "AT"],
        "{roles}"
    );
    assert!(
        roles.lines().nth(1).unwrap().starts_with("cluster-admin "),
        "{roles}"
    );
    let yes = run(as_sa(&[
        "auth",
        "can-i",
        "create",
        "deployments.apps",
        "-n",
        "team",
    ]))
    .await;
    assert_eq!(
        String::from_utf8_lossy(&yes.stdout).trim(),
        "yes",
        "{}",
        String::from_utf8_lossy(&yes.stderr)
    );
    let scale = run(as_sa(&[
        "auth",
        "can-i",
        "update",
        "deployments.apps",
        "--subresource=scale",
        "-n",
        "team",
    ]))
    .await;
    assert_eq!(String::from_utf8_lossy(&scale.stdout).trim(), "yes");
    let nodes = run(as_sa(&["auth", "can-i", "list", "nodes"])).await;
    assert_eq!(String::from_utf8_lossy(&nodes.stdout).trim(), "no");
    // The rules the ServiceAccount holds in the namespace (SelfSubjectRulesReview).
    let list = run(as_sa(&["auth", "can-i", "--list", "-n", "team"])).await;
    let list_out = String::from_utf8_lossy(&list.stdout);
    assert!(
        list_out
            .lines()
            .any(|l| l.starts_with("deployments.apps ") && l.contains("create")),
        "{list_out}"
    );
    assert!(
        list_out
            .lines()
            .any(|l| l.starts_with("selfsubjectaccessreviews.authorization.k8s.io")),
        "{list_out}"
    );
    drop(admin);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_client_certificate_authenticates_without_a_token() {
    let c = TestCluster::start(0).await;
    let text = std::fs::read_to_string(&c.kubeconfig).unwrap();
    let mut y: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
    let user = y["users"][0]["user"].as_mapping_mut().unwrap();
    user.remove("token");
    let cert_only = c.dir.path().join("cert-only");
    std::fs::write(&cert_only, serde_yaml::to_string(&y).unwrap()).unwrap();
    let client = client_for(&cert_only).await;
    let (code, body) = raw(
        &client,
        Method::POST,
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        Some(json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    let review: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(review["status"]["userInfo"]["username"], "kubernetes-admin");
    assert!(review["status"]["userInfo"]["groups"]
        .as_array()
        .unwrap()
        .contains(&json!("system:masters")));
    // Without the certificate (and without a token) the same request is a 401.
    let user = y["users"][0]["user"].as_mapping_mut().unwrap();
    user.remove("client-certificate-data");
    user.remove("client-key-data");
    let anonymous = c.dir.path().join("anonymous");
    std::fs::write(&anonymous, serde_yaml::to_string(&y).unwrap()).unwrap();
    let (code, _) = raw(
        &client_for(&anonymous).await,
        Method::GET,
        "/api/v1/namespaces",
        None,
    )
    .await;
    assert_eq!(code, 401);
}
