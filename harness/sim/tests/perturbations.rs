//! `faultline explore`'s perturbations through the HTTP layer, for a traced client (here the
//! kubeconfig's admin user): a stale read only where the watch cache answers, a crash gate
//! after the k-th write, a withheld watch event that ends the watch with 410, and the trace.

mod common;

use common::TestCluster;
use faultline_sim::http::trace::{Gate, Perturbation, TraceKind, Verb};
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, GetParams, PostParams, WatchEvent, WatchParams};
use std::time::Duration;

const ADMIN: &str = "kubernetes-admin";

fn cm(name: &str, v: &str) -> ConfigMap {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": name, "namespace": "default"}, "data": {"k": v}
    }))
    .unwrap()
}

#[tokio::test]
async fn a_stale_read_serves_the_state_before_the_latest_change_only_from_the_cache() {
    let c = TestCluster::start(1).await;
    let api: Api<ConfigMap> = Api::namespaced(c.client().await, "default");
    let w = Duration::from_secs(5);
    // Reads 1 (consistent) and 2 (resourceVersion=0) are armed stale; read 3 is not. Read 1
    // is a consistent GET, which no watch cache answers: its stale view moves on to read 2.
    c.server.trace.follow(
        ADMIN,
        vec![
            Perturbation::StaleRead { n: 1, window: w },
            Perturbation::StaleRead { n: 2, window: w },
        ],
    );
    api.create(&PostParams::default(), &cm("a", "old"))
        .await
        .unwrap();
    let mut now = api.get("a").await.unwrap();
    now.data = Some([("k".to_string(), "new".to_string())].into());
    api.replace("a", &PostParams::default(), &now)
        .await
        .unwrap();
    let data = |c: &ConfigMap| c.data.as_ref().unwrap()["k"].clone();
    // Read 1 was the GET above (consistent: served fresh, its perturbation deferred).
    let cached = api.get_with("a", &GetParams::any()).await.unwrap();
    assert_eq!(data(&cached), "old", "read 2 (resourceVersion=0) is stale");
    assert_eq!(data(&api.get("a").await.unwrap()), "new", "read 3 is fresh");
    let trace = c.server.trace.snapshot();
    assert_eq!(
        trace.fired,
        vec![
            Perturbation::StaleRead { n: 1, window: w },
            Perturbation::StaleRead { n: 2, window: w }
        ],
        "read 1's stale view was served at read 2"
    );
    assert_eq!(trace.mutations(), 2);
    // A create names the kind it made (the leaked-objects oracle finds the object by it); the
    // update does not.
    let kinds: Vec<_> = trace
        .requests()
        .filter_map(|e| match &e.what {
            TraceKind::Request {
                verb: v @ (Verb::Create | Verb::Update),
                kind,
                name,
                ..
            } => Some((*v, kind.clone(), name.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        kinds,
        vec![
            (Verb::Create, Some("ConfigMap".into()), Some("a".into())),
            (Verb::Update, None, Some("a".into()))
        ]
    );
    let perturbed: Vec<_> = trace
        .requests()
        .filter_map(|e| match &e.what {
            TraceKind::Request {
                verb: Verb::Get,
                read,
                perturbed: Some(p),
                ..
            } => Some((*read, p.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(perturbed.len(), 1, "{perturbed:?}");
    assert_eq!(perturbed[0].0, Some(2));
}

#[tokio::test]
async fn after_the_kth_write_requests_wait_and_those_held_are_refused() {
    let c = TestCluster::start(1).await;
    let api: Api<ConfigMap> = Api::namespaced(c.client().await, "default");
    let t = c.server.trace.clone();
    t.follow(ADMIN, vec![Perturbation::CrashAfterMutation { k: 1 }]);
    api.create(&PostParams::default(), &cm("a", "v"))
        .await
        .unwrap();
    tokio::time::timeout(Duration::from_secs(2), t.crash_due())
        .await
        .expect("a crash is due after the first write");
    // Straight to the router (kube-rs would retry a 503, as a dead process would not).
    let router = c.server.router();
    let token = c.server.token.clone();
    let held = tokio::spawn(async move {
        let req = http::Request::post("/api/v1/namespaces/default/configmaps")
            .header("Authorization", format!("Bearer {token}"))
            .header("Content-Type", "application/json")
            .body(axum::body::Body::from(
                serde_json::to_vec(&cm("b", "v")).unwrap(),
            ))
            .unwrap();
        tower::ServiceExt::oneshot(router, req)
            .await
            .unwrap()
            .status()
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!held.is_finished(), "the next request waits at the gate");
    t.release();
    assert_eq!(held.await.unwrap().as_u16(), 503, "refused once released");
    assert!(
        api.get_opt("b").await.unwrap().is_none(),
        "never carried out"
    );
    assert_eq!(t.snapshot().mutations(), 1);
    assert_eq!(t.pass().await, Gate::Pass);
}

#[tokio::test]
async fn a_withheld_watch_event_ends_the_watch_with_410() {
    let c = TestCluster::start(1).await;
    let api: Api<ConfigMap> = Api::namespaced(c.client().await, "default");
    c.server
        .trace
        .follow(ADMIN, vec![Perturbation::WatchRelist { n: 2 }]);
    let created = api
        .create(&PostParams::default(), &cm("a", "1"))
        .await
        .unwrap();
    let rv = created.metadata.resource_version.clone().unwrap();
    let mut stream = api
        .watch(&WatchParams::default().fields("metadata.name=a"), &rv)
        .await
        .unwrap()
        .boxed();
    for v in ["2", "3"] {
        let mut now = api.get("a").await.unwrap();
        now.data = Some([("k".to_string(), v.to_string())].into());
        api.replace("a", &PostParams::default(), &now)
            .await
            .unwrap();
    }
    let first = stream.next().await.unwrap().unwrap();
    assert!(matches!(first, WatchEvent::Modified(ref o) if o.data.as_ref().unwrap()["k"] == "2"));
    let second = stream.next().await.unwrap().unwrap();
    assert!(
        matches!(second, WatchEvent::Error(ref e) if e.code == 410),
        "{second:?}"
    );
    let trace = c.server.trace.snapshot();
    assert!(trace.entries.iter().any(|e| matches!(
        &e.what,
        TraceKind::WatchEvent {
            ordinal: Some(2),
            withheld: true,
            ..
        }
    )));
}
