//! The perturbing API proxy (`provider::proxy`) in front of a real kube-apiserver + etcd
//! (`faultline-upstream`; SKIPPED when the binaries cannot be had). A kube-rs client with a
//! ServiceAccount token goes through the proxy, as the controller under test does on an
//! existing cluster: the apiserver authorizes it as itself, the trace records its requests,
//! and each perturbation acts as the sim's does.

use faultline::provider::proxy::{rewrite_kubeconfig, ApiProxy};
use faultline_sim::http::trace::{Perturbation, TraceKind, Verb};
use faultline_upstream::{ControlPlane, Options};
use futures::StreamExt;
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kube::api::{Api, ListParams, PostParams};
use serde_json::json;
use std::time::Duration;

const USER: &str = "system:serviceaccount:px:ctl";

fn from<T: serde::de::DeserializeOwned>(v: serde_json::Value) -> T {
    serde_json::from_value(v).expect("a valid object")
}

fn cm(name: &str) -> ConfigMap {
    from(json!({"metadata": {"name": name}, "data": {"k": "v"}}))
}

/// The ServiceAccount `px/ctl`, allowed ConfigMaps (not Secrets) everywhere, and a token of it.
async fn service_account_token(admin: &kube::Client, namespaces: &[&str]) -> String {
    let pp = PostParams::default();
    for ns in ["px"].iter().chain(namespaces) {
        Api::<Namespace>::all(admin.clone())
            .create(&pp, &from(json!({"metadata": {"name": ns}})))
            .await
            .unwrap();
    }
    Api::<ServiceAccount>::namespaced(admin.clone(), "px")
        .create(&pp, &from(json!({"metadata": {"name": "ctl"}})))
        .await
        .unwrap();
    Api::<ClusterRole>::all(admin.clone())
        .create(
            &pp,
            &from(json!({
                "metadata": {"name": "px-ctl"},
                "rules": [{"apiGroups": [""], "resources": ["configmaps"],
                           "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]}]
            })),
        )
        .await
        .unwrap();
    Api::<ClusterRoleBinding>::all(admin.clone())
        .create(
            &pp,
            &from(json!({
                "metadata": {"name": "px-ctl"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "px-ctl"},
                "subjects": [{"kind": "ServiceAccount", "name": "ctl", "namespace": "px"}]
            })),
        )
        .await
        .unwrap();
    let request = TokenRequest {
        spec: Some(TokenRequestSpec {
            expiration_seconds: Some(3600),
            ..Default::default()
        }),
        ..Default::default()
    };
    Api::<ServiceAccount>::namespaced(admin.clone(), "px")
        .create_token_request("ctl", &pp, &request)
        .await
        .unwrap()
        .status
        .and_then(|s| s.token)
        .unwrap()
}

/// A client as the controller gets it: the admin kubeconfig with the account's token as its
/// user, rewritten to the proxy (`rewrite_kubeconfig`, as the runner does).
async fn controller_client(cp: &ControlPlane, proxy: &ApiProxy, token: &str) -> kube::Client {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(cp.kubeconfig()).unwrap();
    let mut doc: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
    for u in doc["users"].as_sequence_mut().unwrap() {
        u["user"] = serde_yaml::to_value(json!({"token": token})).unwrap();
    }
    let sa = dir.path().join("sa.kubeconfig");
    std::fs::write(&sa, serde_yaml::to_string(&doc).unwrap()).unwrap();
    let via_proxy = dir.path().join("controller.kubeconfig");
    rewrite_kubeconfig(&sa, &via_proxy, proxy.endpoint()).unwrap();
    let rewritten = std::fs::read_to_string(&via_proxy).unwrap();
    assert!(rewritten.contains(&proxy.endpoint().url), "{rewritten}");
    assert!(!rewritten.contains(cp.base_url()), "{rewritten}");
    let kc = kube::config::Kubeconfig::read_from(&via_proxy).unwrap();
    let mut config = kube::Config::from_custom_kubeconfig(kc, &Default::default())
        .await
        .unwrap();
    // The client plays the process that is killed at a crash point: it must not send a
    // refused request again (kube-rs retries a 503 by default; a dead process cannot).
    config.default_retry = false;
    kube::Client::try_from(config).unwrap()
}

fn requests(t: &faultline_sim::http::trace::Trace) -> Vec<(Verb, String, u16)> {
    t.requests()
        .filter_map(|e| match &e.what {
            TraceKind::Request {
                verb,
                resource,
                code,
                ..
            } => Some((*verb, resource.clone(), *code)),
            _ => None,
        })
        .collect()
}

fn names(list: &kube::core::ObjectList<ConfigMap>) -> Vec<String> {
    let mut n: Vec<String> = list
        .items
        .iter()
        .filter_map(|c| c.metadata.name.clone())
        .collect();
    n.sort();
    n
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_proxy_traces_and_perturbs_a_real_apiserver_as_the_sim_does() {
    let Some(cp) = ControlPlane::start_or_skip(Options::default()).await else {
        return;
    };
    let admin = cp.client();
    let token =
        service_account_token(&admin, &["px-trace", "px-crash", "px-relist", "px-stale"]).await;
    let pp = PostParams::default();

    // Trace, and the controller's own identity: its token reaches the apiserver, which
    // forbids it what its role does not grant (the admin could read Secrets).
    {
        let proxy = ApiProxy::start(cp.kubeconfig()).await.unwrap();
        proxy.tracer().follow(USER, vec![]);
        let c = controller_client(&cp, &proxy, &token).await;
        let cms: Api<ConfigMap> = Api::namespaced(c.clone(), "px-trace");
        cms.create(&pp, &cm("a")).await.unwrap();
        assert_eq!(
            cms.get("a").await.unwrap().metadata.name.as_deref(),
            Some("a")
        );
        assert_eq!(
            names(&cms.list(&ListParams::default()).await.unwrap()),
            ["a"]
        );
        let secrets: Api<Secret> = Api::namespaced(c.clone(), "px-trace");
        let denied = secrets.list(&ListParams::default()).await.unwrap_err();
        assert!(
            matches!(&denied, kube::Error::Api(s) if s.code == 403 && s.message.contains(USER)),
            "{denied:?}"
        );
        let t = proxy.tracer().snapshot();
        assert_eq!(
            requests(&t),
            vec![
                (Verb::Create, "configmaps".into(), 201),
                (Verb::Get, "configmaps".into(), 200),
                (Verb::List, "configmaps".into(), 200),
                (Verb::List, "secrets".into(), 403),
            ]
        );
        assert_eq!(t.mutations(), 1);
        assert!(matches!(
            &t.entries[0].what,
            TraceKind::Request { kind: Some(k), name: Some(n), namespace: Some(ns), store_rv, .. }
                if k == "ConfigMap" && n == "a" && ns == "px-trace" && *store_rv > 0
        ));
    }

    // Crash after the 2nd write: the 3rd waits at the gate until the runner has killed the
    // client, and is refused (it belongs to the dead process); the restarted one passes.
    {
        let proxy = ApiProxy::start(cp.kubeconfig()).await.unwrap();
        let tracer = proxy.tracer();
        tracer.follow(USER, vec![Perturbation::CrashAfterMutation { k: 2 }]);
        let c = controller_client(&cp, &proxy, &token).await;
        let cms: Api<ConfigMap> = Api::namespaced(c.clone(), "px-crash");
        cms.create(&pp, &cm("w1")).await.unwrap();
        cms.create(&pp, &cm("w2")).await.unwrap();
        tokio::time::timeout(Duration::from_secs(5), tracer.crash_due())
            .await
            .expect("the crash is due after write 2");
        let held = {
            let cms = cms.clone();
            tokio::spawn(async move { cms.create(&PostParams::default(), &cm("w3")).await })
        };
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert!(!held.is_finished(), "write 3 is held at the gate");
        let by_admin: Api<ConfigMap> = Api::namespaced(admin.clone(), "px-crash");
        assert!(
            by_admin.get_opt("w3").await.unwrap().is_none(),
            "not forwarded"
        );
        tracer.release();
        let refused = held.await.unwrap().unwrap_err();
        assert!(
            matches!(&refused, kube::Error::Api(s) if s.code == 503),
            "{refused:?}"
        );
        assert!(
            by_admin.get_opt("w3").await.unwrap().is_none(),
            "never written"
        );
        cms.create(&pp, &cm("w4")).await.unwrap();
        let t = tracer.snapshot();
        assert_eq!(t.fired, vec![Perturbation::CrashAfterMutation { k: 2 }]);
        assert_eq!(
            t.mutations(),
            3,
            "w1, w2, w4: the refused w3 never reached the apiserver"
        );
    }

    // A withheld watch event: the watch ends with 410 Expired and the client (kube-runtime's
    // watcher) relists, seeing the object only in the relist, never as its ADDED event.
    {
        let proxy = ApiProxy::start(cp.kubeconfig()).await.unwrap();
        let tracer = proxy.tracer();
        tracer.follow(USER, vec![Perturbation::WatchRelist { n: 1 }]);
        let c = controller_client(&cp, &proxy, &token).await;
        let cms: Api<ConfigMap> = Api::namespaced(c.clone(), "px-relist");
        // Driven on its own task, as an informer is: its watch request goes out after the list.
        let (tx, mut events) = tokio::sync::mpsc::unbounded_channel();
        let driver = tokio::spawn(async move {
            let mut w =
                kube::runtime::watcher(cms, kube::runtime::watcher::Config::default()).boxed();
            while let Some(ev) = w.next().await {
                if tx.send(ev).is_err() {
                    return;
                }
            }
        });
        // The initial list, up to its end.
        loop {
            match tokio::time::timeout(Duration::from_secs(10), events.recv()).await {
                Ok(Some(Ok(kube::runtime::watcher::Event::InitDone))) => break,
                Ok(Some(Ok(_))) => {}
                other => panic!("initial list: {other:?}"),
            }
        }
        // Let the watch start before the object is made.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while !requests(&tracer.snapshot())
            .iter()
            .any(|(v, _, _)| *v == Verb::Watch)
        {
            assert!(tokio::time::Instant::now() < deadline, "no watch request");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Api::<ConfigMap>::namespaced(admin.clone(), "px-relist")
            .create(&pp, &cm("x"))
            .await
            .unwrap();
        let mut seen = vec![];
        let mut gone = false;
        loop {
            let ev = tokio::time::timeout(Duration::from_secs(10), events.recv())
                .await
                .expect("the watcher goes on")
                .expect("the watcher's stream does not end");
            match ev {
                Err(kube::runtime::watcher::Error::WatchError(s)) if s.code == 410 => gone = true,
                Err(e) => panic!("{e:?}"),
                Ok(kube::runtime::watcher::Event::Apply(o)) => {
                    panic!(
                        "the withheld ADDED event was delivered: {:?}",
                        o.metadata.name
                    )
                }
                Ok(kube::runtime::watcher::Event::InitApply(o)) => {
                    seen.push(o.metadata.name.unwrap_or_default())
                }
                Ok(kube::runtime::watcher::Event::InitDone) => break,
                Ok(_) => {}
            }
        }
        driver.abort();
        assert!(gone, "the watch ended with 410 Expired");
        assert_eq!(seen, ["x"], "x is seen in the relist");
        let t = tracer.snapshot();
        assert_eq!(t.fired, vec![Perturbation::WatchRelist { n: 1 }]);
        assert!(t.entries.iter().any(|e| matches!(
            &e.what,
            TraceKind::WatchEvent { name, withheld: true, ordinal: Some(1), event, .. }
                if name == "x" && event == "ADDED"
        )));
        let lists = requests(&t)
            .iter()
            .filter(|(v, _, _)| *v == Verb::List)
            .count();
        assert_eq!(
            lists,
            2,
            "the initial list and the relist: {:?}",
            requests(&t)
        );
    }

    // Stale reads: reads 2 (consistent) and 3 (resourceVersion=0) are armed; only a read a
    // watch cache answers is served stale, from the proxy's earlier answer of the same LIST.
    // The one armed on the consistent read moves on to the next read (`stale_deferred`, as on
    // the sim), so read 3 fires for both.
    {
        let proxy = ApiProxy::start(cp.kubeconfig()).await.unwrap();
        let tracer = proxy.tracer();
        let window = Duration::from_secs(3);
        tracer.follow(
            USER,
            vec![
                Perturbation::StaleRead { n: 2, window },
                Perturbation::StaleRead { n: 3, window },
                Perturbation::StaleRead { n: 5, window },
            ],
        );
        let c = controller_client(&cp, &proxy, &token).await;
        let cms: Api<ConfigMap> = Api::namespaced(c.clone(), "px-stale");
        let cached = ListParams::default().match_any(); // resourceVersion=0
        assert!(
            names(&cms.list(&cached).await.unwrap()).is_empty(),
            "read 1"
        );
        Api::<ConfigMap>::namespaced(admin.clone(), "px-stale")
            .create(&pp, &cm("new"))
            .await
            .unwrap();
        assert_eq!(
            names(&cms.list(&ListParams::default()).await.unwrap()),
            ["new"],
            "read 2, consistent: fresh although armed"
        );
        assert!(
            names(&cms.list(&cached).await.unwrap()).is_empty(),
            "read 3, resourceVersion=0: answered as before the create"
        );
        assert_eq!(
            names(&cms.list(&cached).await.unwrap()),
            ["new"],
            "read 4: fresh again"
        );
        let t = tracer.snapshot();
        assert_eq!(
            t.fired,
            vec![
                Perturbation::StaleRead { n: 2, window },
                Perturbation::StaleRead { n: 3, window }
            ]
        );
        let candidates: Vec<u64> = t.stale_candidates().iter().map(|(n, _)| *n).collect();
        assert_eq!(
            candidates,
            [3, 4],
            "the cached reads after the change are stale points"
        );
        assert!(t.entries.iter().any(|e| matches!(
            &e.what,
            TraceKind::Request { read: Some(3), perturbed: Some(p), .. } if p.starts_with("stale read at resourceVersion")
        )));
        // Read 5, armed too: the earlier states were last current longer ago than the
        // window, so it is answered fresh.
        tokio::time::sleep(window).await;
        Api::<ConfigMap>::namespaced(admin.clone(), "px-stale")
            .create(&pp, &cm("newer"))
            .await
            .unwrap();
        assert_eq!(names(&cms.list(&cached).await.unwrap()), ["new", "newer"]);
        assert_eq!(tracer.snapshot().fired.len(), 2, "read 5 not stale");
    }
    cp.stop().await.unwrap();
}

/// `faultline explore --provider existing` end to end against a real apiserver: a controller
/// that needs no nodes (a shell loop of kubectl copying ConfigMap `in` to `out`, as its
/// ServiceAccount) is traced through the proxy, and its crash point is run as a variant.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explore_runs_on_an_existing_cluster_through_the_proxy() {
    let Some(cp) = ControlPlane::start_or_skip(Options::default()).await else {
        return;
    };
    let kubectl = cp.binary("kubectl").expect("kubectl beside kube-apiserver");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let write = |name: &str, text: String| std::fs::write(d.join(name), text).unwrap();
    write(
        "faultline.yaml",
        "apiVersion: faultline.dev/v1alpha1\nkind: Suite\ncontrollers:\n  copier:\n    command: [sh, copier.sh]\n    readyPattern: copier starting\n    serviceAccount: pxe/copier\n    rbac: [rbac.yaml]\nexisting:\n  allowedContexts: [faultline-upstream]\n".into(),
    );
    write(
        "rbac.yaml",
        r#"apiVersion: v1
kind: Namespace
metadata: {name: pxe}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: copier, namespace: pxe}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: copier, namespace: pxe}
rules: [{apiGroups: [""], resources: [configmaps], verbs: [get, list, watch, create, update, patch]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: copier, namespace: pxe}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: copier}
subjects: [{kind: ServiceAccount, name: copier, namespace: pxe}]
"#
        .into(),
    );
    let k = kubectl.display();
    write(
        "copier.sh",
        format!(
            "echo copier starting\nwhile true; do\n  v=$('{k}' get configmap in -n pxe -o 'jsonpath={{.data.k}}' 2>/dev/null)\n  if [ -n \"$v\" ] && ! '{k}' get configmap out -n pxe >/dev/null 2>&1; then\n    '{k}' create configmap out -n pxe --from-literal=k=\"$v\"\n  fi\n  sleep 0.5\ndone\n"
        ),
    );
    write(
        "in.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: in, namespace: pxe}\ndata: {k: v}\n"
            .into(),
    );
    // Each variant starts from no `in` and no `out`: they share the cluster.
    write(
        "copy.yaml",
        format!(
            r#"apiVersion: faultline.dev/v1alpha1
kind: Scenario
metadata: {{name: copy}}
spec:
  cluster:
    nodes: [{{name: control-plane, role: control-plane}}]
    storage: none
  controller: {{ref: copier}}
  steps:
    - name: reset
      script: {{run: "'{k}' delete configmap in out -n pxe --ignore-not-found --wait"}}
    - name: create-in
      apply: in.yaml
    - expect:
        name: copied
        resource: {{apiVersion: v1, kind: ConfigMap, namespace: pxe, name: out, condition: "object.data.k == 'v'"}}
        within: 20s
"#
        ),
    );
    let out = d.join("out");
    let run = tokio::process::Command::new(env!("CARGO_BIN_EXE_faultline"))
        .args([
            "explore",
            "copy.yaml",
            "--provider",
            "existing",
            "--context",
            "faultline-upstream",
        ])
        .args(["--seed", "1", "--budget", "20s", "--out"])
        .arg(&out)
        .current_dir(d)
        .env("KUBECONFIG", cp.kubeconfig())
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    println!("{stdout}");
    if run.status.code() != Some(0) {
        let kept = dir.keep();
        panic!(
            "exit {:?}; files kept in {}\n{stdout}\n{stderr}",
            run.status.code(),
            kept.display()
        );
    }
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("explore.json")).unwrap()).unwrap();
    let b = &report["baseline"];
    assert!(b["requests"].as_u64().unwrap() >= 3, "{b}");
    assert_eq!(b["mutations"], 1, "the one create of `out`: {b}");
    let variants = report["variants"].as_array().unwrap();
    assert!(
        variants.iter().any(|v| v["perturbations"]
            .to_string()
            .to_lowercase()
            .contains("crash")
            && v["fired"] == true),
        "{stdout}"
    );
    cp.stop().await.unwrap();
}
