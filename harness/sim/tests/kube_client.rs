//! kube-rs against the simulated API server: typed and dynamic APIs, watchers with both initial
//! list strategies, a Controller, CRDs with status, patches, garbage collection, errors.

mod common;

use common::{eventually, TestCluster};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Node, Pod};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams,
    PropagationPolicy, WatchEvent, WatchParams,
};
use kube::core::{ApiResource, GroupVersionKind};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;
use kube::{CustomResource, CustomResourceExt, ResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

fn cm(name: &str, labels: &[(&str, &str)]) -> ConfigMap {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": labels.iter().map(|(k, v)| (k.to_string(), json!(v))).collect::<serde_json::Map<_, _>>()},
        "data": {"k": "v"}
    }))
    .unwrap()
}

#[tokio::test]
async fn typed_crud_with_optimistic_concurrency() {
    let c = TestCluster::start(1).await;
    let api: Api<ConfigMap> = Api::namespaced(c.client().await, "default");
    let created = api
        .create(&PostParams::default(), &cm("a", &[("app", "x")]))
        .await
        .unwrap();
    let uid = created.uid().expect("uid");
    assert!(created.creation_timestamp().is_some());
    let rv1: u64 = created.resource_version().unwrap().parse().unwrap();

    let mut changed = created.clone();
    changed.data = Some(BTreeMap::from([("k".into(), "v2".into())]));
    let updated = api
        .replace("a", &PostParams::default(), &changed)
        .await
        .unwrap();
    let rv2: u64 = updated.resource_version().unwrap().parse().unwrap();
    assert!(rv2 > rv1, "resourceVersion must increase: {rv1} -> {rv2}");
    assert_eq!(updated.uid().unwrap(), uid);

    // `changed` still carries rv1: a stale write is a 409 Conflict and changes nothing.
    changed.data = Some(BTreeMap::from([("k".into(), "stale".into())]));
    let err = api
        .replace("a", &PostParams::default(), &changed)
        .await
        .unwrap_err();
    match err {
        kube::Error::Api(s) => {
            assert_eq!(s.code, 409);
            assert_eq!(s.reason, "Conflict");
            assert!(
                s.message.contains("the object has been modified"),
                "{}",
                s.message
            );
        }
        other => panic!("expected 409, got {other:?}"),
    }
    let now = api.get("a").await.unwrap();
    assert_eq!(now.data.as_ref().unwrap()["k"], "v2");
    assert_eq!(now.resource_version().unwrap(), rv2.to_string());

    let dup = api
        .create(&PostParams::default(), &cm("a", &[]))
        .await
        .unwrap_err();
    assert!(
        matches!(dup, kube::Error::Api(ref s) if s.code == 409 && s.reason == "AlreadyExists"),
        "{dup:?}"
    );

    api.create(&PostParams::default(), &cm("b", &[("app", "y")]))
        .await
        .unwrap();
    let xs = api
        .list(&ListParams::default().labels("app=x"))
        .await
        .unwrap();
    assert_eq!(
        xs.items.iter().map(|c| c.name_any()).collect::<Vec<_>>(),
        vec!["a"]
    );
    let not_x = api
        .list(&ListParams::default().labels("app!=x,app"))
        .await
        .unwrap();
    assert_eq!(
        not_x.items.iter().map(|c| c.name_any()).collect::<Vec<_>>(),
        vec!["b"]
    );

    api.delete("a", &DeleteParams::default()).await.unwrap();
    let gone = api.get("a").await.unwrap_err();
    assert!(
        matches!(gone, kube::Error::Api(ref s) if s.code == 404 && s.reason == "NotFound"),
        "{gone:?}"
    );
}

#[tokio::test]
async fn a_list_long_enough_to_be_streamed_decodes_whole() {
    let c = TestCluster::start(0).await;
    let api: Api<ConfigMap> = Api::namespaced(c.client().await, "default");
    let n = faultline_sim::apiserver::STREAMED_LIST_ITEMS + 150;
    for i in 0..n {
        api.create(
            &PostParams::default(),
            &cm(&format!("cm-{i:04}"), &[("many", "yes")]),
        )
        .await
        .unwrap();
    }
    // Watch events make some encodings kept; the LIST mixes kept and fresh ones.
    let list = api
        .list(&ListParams::default().labels("many=yes"))
        .await
        .unwrap();
    assert_eq!(list.items.len(), n);
    assert_eq!(
        list.items.iter().map(|c| c.name_any()).collect::<Vec<_>>(),
        (0..n).map(|i| format!("cm-{i:04}")).collect::<Vec<_>>()
    );
    assert!(list
        .metadata
        .resource_version
        .is_some_and(|rv| !rv.is_empty()));
    assert!(list.items.iter().all(|c| c
        .data
        .as_ref()
        .and_then(|d| d.get("k"))
        .map(String::as_str)
        == Some("v")));
}

#[tokio::test]
async fn list_paging_with_limit_and_continue() {
    let c = TestCluster::start(0).await;
    let api: Api<ConfigMap> = Api::namespaced(c.client().await, "default");
    for i in 0..7 {
        api.create(
            &PostParams::default(),
            &cm(&format!("cm-{i}"), &[("page", "yes")]),
        )
        .await
        .unwrap();
    }
    let mut names = Vec::new();
    let mut token: Option<String> = None;
    let mut pages = 0;
    loop {
        let mut lp = ListParams::default().labels("page=yes").limit(3);
        if let Some(t) = &token {
            lp = lp.continue_token(t);
        }
        let page = api.list(&lp).await.unwrap();
        pages += 1;
        names.extend(page.items.iter().map(|c| c.name_any()));
        token = page.metadata.continue_.filter(|t| !t.is_empty());
        if token.is_none() {
            break;
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(names, (0..7).map(|i| format!("cm-{i}")).collect::<Vec<_>>());
}

#[tokio::test]
async fn pod_field_selectors() {
    let c = TestCluster::start(2).await;
    let client = c.client().await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    for (name, node) in [
        ("p1", "worker-01"),
        ("p2", "worker-02"),
        ("p3", "worker-01"),
    ] {
        let p: Pod = serde_json::from_value(json!({"metadata": {"name": name}, "spec": {"nodeName": node, "containers": [{"name": "c", "image": "busybox:1.36"}]}})).unwrap();
        pods.create(&PostParams::default(), &p).await.unwrap();
    }
    // Mark p3 Running through the status subresource.
    pods.patch_status(
        "p3",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"phase": "Running"}})),
    )
    .await
    .unwrap();
    let sel = |s: &str| ListParams::default().fields(s);
    let on1: Vec<String> = pods
        .list(&sel("spec.nodeName=worker-01"))
        .await
        .unwrap()
        .items
        .iter()
        .map(|p| p.name_any())
        .collect();
    assert_eq!(on1, vec!["p1", "p3"]);
    let stale: Vec<String> = Api::<Pod>::all(client.clone())
        .list(&sel("spec.nodeName=worker-01,status.phase!=Running"))
        .await
        .unwrap()
        .items
        .iter()
        .map(|p| p.name_any())
        .collect();
    assert_eq!(stale, vec!["p1"]);
    let bad = pods.list(&sel("spec.bogus=1")).await.unwrap_err();
    assert!(
        matches!(bad, kube::Error::Api(ref s) if s.code == 400),
        "{bad:?}"
    );
    let nodes: Api<Node> = Api::all(client);
    assert_eq!(
        nodes
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .len(),
        2
    );
}

#[tokio::test]
async fn dynamic_api_and_discovery() {
    let c = TestCluster::start(1).await;
    let client = c.client().await;
    let discovery = kube::discovery::Discovery::new(client.clone())
        .run()
        .await
        .unwrap();
    let (ar, caps) = discovery
        .resolve_gvk(&GroupVersionKind::gvk(
            "storage.k8s.io",
            "v1",
            "VolumeAttachment",
        ))
        .expect("volumeattachments discovered");
    assert_eq!(ar.plural, "volumeattachments");
    assert_eq!(caps.scope, kube::discovery::Scope::Cluster);
    let ar = ApiResource::from_gvk(&GroupVersionKind::gvk("", "v1", "ConfigMap"));
    let api: Api<DynamicObject> = Api::namespaced_with(client, "default", &ar);
    let mut obj = DynamicObject::new("dyn", &ar);
    obj.data = json!({"data": {"x": "1"}});
    api.create(&PostParams::default(), &obj).await.unwrap();
    let got = api.get("dyn").await.unwrap();
    assert_eq!(got.data["data"]["x"], "1");
}

async fn watcher_sees_lifecycle(streaming: bool) {
    let c = TestCluster::start(0).await;
    let api: Api<ConfigMap> = Api::namespaced(c.client().await, "default");
    api.create(&PostParams::default(), &cm("before", &[("w", "1")]))
        .await
        .unwrap();
    let mut cfg = watcher::Config::default().labels("w=1");
    if streaming {
        cfg = cfg.streaming_lists();
    }
    let mut stream = watcher(api.clone(), cfg).boxed();
    let mut init = Vec::new();
    loop {
        match tokio::time::timeout(Duration::from_secs(10), stream.try_next())
            .await
            .expect("watcher stalled")
            .unwrap()
            .unwrap()
        {
            watcher::Event::Init => {}
            watcher::Event::InitApply(o) => init.push(o.name_any()),
            watcher::Event::InitDone => break,
            other => panic!("unexpected before InitDone: {other:?}"),
        }
    }
    assert_eq!(init, vec!["before"]);
    api.create(&PostParams::default(), &cm("after", &[("w", "1")]))
        .await
        .unwrap();
    api.create(&PostParams::default(), &cm("ignored", &[("w", "2")]))
        .await
        .unwrap();
    api.delete("before", &DeleteParams::default())
        .await
        .unwrap();
    let mut seen = Vec::new();
    while seen.len() < 2 {
        match tokio::time::timeout(Duration::from_secs(10), stream.try_next())
            .await
            .expect("no event")
            .unwrap()
            .unwrap()
        {
            watcher::Event::Apply(o) => seen.push(format!("apply {}", o.name_any())),
            watcher::Event::Delete(o) => seen.push(format!("delete {}", o.name_any())),
            _ => {}
        }
    }
    assert_eq!(seen, vec!["apply after", "delete before"]);
}

#[tokio::test]
async fn watcher_list_watch_strategy() {
    watcher_sees_lifecycle(false).await;
}

#[tokio::test]
async fn watcher_streaming_list_strategy() {
    watcher_sees_lifecycle(true).await;
}

#[tokio::test]
async fn watch_resumes_from_resource_version_and_expires() {
    let c = TestCluster::start_with(faultline_sim::SimOptions {
        watch_history: 5,
        ..Default::default()
    })
    .await;
    let api: Api<ConfigMap> = Api::namespaced(c.client().await, "default");
    let first = api
        .create(&PostParams::default(), &cm("r0", &[]))
        .await
        .unwrap();
    let rv0 = first.resource_version().unwrap();
    let second = api
        .create(&PostParams::default(), &cm("r1", &[]))
        .await
        .unwrap();
    let rv1 = second.resource_version().unwrap();
    api.create(&PostParams::default(), &cm("r2", &[]))
        .await
        .unwrap();
    // Resume after r1: exactly r2 arrives.
    let mut s = api
        .watch(&WatchParams::default().timeout(5), &rv1)
        .await
        .unwrap()
        .boxed();
    match s.try_next().await.unwrap().unwrap() {
        WatchEvent::Added(o) => assert_eq!(o.name_any(), "r2"),
        other => panic!("expected ADDED r2, got {other:?}"),
    }
    for i in 3..12 {
        api.create(&PostParams::default(), &cm(&format!("r{i}"), &[]))
            .await
            .unwrap();
    }
    let mut s = api
        .watch(&WatchParams::default().timeout(5), &rv0)
        .await
        .unwrap()
        .boxed();
    match s.try_next().await.unwrap().unwrap() {
        WatchEvent::Error(e) => {
            assert_eq!(e.code, 410);
            assert_eq!(e.reason, "Expired");
        }
        other => panic!("expected 410 Expired, got {other:?}"),
    }
}

/// A watcher that stops reading while far more changes are written than the live buffer holds
/// (2,048) lags behind it; it then catches up from the watch history (10,000 by default) and sees
/// every change once and in order, with no 410: what a client re-watching from its last
/// resourceVersion would get from a real apiserver's watch cache.
#[tokio::test]
async fn a_watcher_behind_the_live_buffer_catches_up_from_history() {
    let c = TestCluster::start(0).await;
    let api: Api<ConfigMap> = Api::namespaced(c.client().await, "default");
    let first = api
        .create(&PostParams::default(), &cm("w-start", &[]))
        .await
        .unwrap();
    let mut s = api
        .watch(
            &WatchParams::default().timeout(60),
            &first.resource_version().unwrap(),
        )
        .await
        .unwrap()
        .boxed();
    let rt = c.server.api.registry.get("", "v1", "configmaps").unwrap();
    const N: usize = 6000;
    for i in 0..N {
        let obj = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("w{i:05}"), "namespace": "default"}, "data": {"pad": "x".repeat(2000)}});
        c.server.api.store.create(&rt, obj, false).unwrap();
    }
    for i in 0..N {
        match tokio::time::timeout(Duration::from_secs(20), s.try_next())
            .await
            .expect("watch stalled")
            .unwrap()
        {
            Some(WatchEvent::Added(o)) => {
                assert_eq!(o.name_any(), format!("w{i:05}"), "event {i} out of order")
            }
            other => panic!("event {i}: expected ADDED w{i:05}, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn watch_bookmarks_and_timeout() {
    let c = TestCluster::start(0).await;
    let api: Api<ConfigMap> = Api::namespaced(c.client().await, "default");
    let list = api.list(&ListParams::default()).await.unwrap();
    let rv = list.metadata.resource_version.unwrap();
    let started = std::time::Instant::now();
    let events: Vec<_> = api
        .watch(&WatchParams::default().timeout(7), &rv)
        .await
        .unwrap()
        .collect()
        .await;
    let elapsed = started.elapsed();
    assert!(
        elapsed >= Duration::from_secs(6) && elapsed < Duration::from_secs(12),
        "timeoutSeconds honoured: {elapsed:?}"
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Ok(WatchEvent::Bookmark(_)))),
        "a bookmark within 7 s: {events:?}"
    );
}

#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(
    group = "llmsafespaces.dev",
    version = "v1",
    kind = "Workspace",
    namespaced,
    status = "WorkspaceStatus",
    shortname = "ws"
)]
#[kube(printcolumn = r#"{"name":"Phase","type":"string","jsonPath":".status.phase"}"#)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceSpec {
    runtime: String,
    #[serde(default)]
    restart_generation: i64,
}

#[derive(Deserialize, Serialize, Clone, Debug, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceStatus {
    phase: Option<String>,
}

async fn install_workspace_crd(client: &kube::Client) {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.create(&PostParams::default(), &Workspace::crd())
        .await
        .unwrap();
    eventually(10, "CRD Established", || {
        let crds = crds.clone();
        async move {
            let c = crds.get("workspaces.llmsafespaces.dev").await.ok()?;
            c.status?
                .conditions?
                .iter()
                .any(|c| c.type_ == "Established" && c.status == "True")
                .then_some(())
        }
    })
    .await;
}

#[tokio::test]
async fn crd_serves_resources_with_status_subresource_and_generation() {
    let c = TestCluster::start(0).await;
    let client = c.client().await;
    install_workspace_crd(&client).await;
    let ws: Api<Workspace> = Api::namespaced(client.clone(), "default");
    let w = ws
        .create(
            &PostParams::default(),
            &Workspace::new(
                "w1",
                WorkspaceSpec {
                    runtime: "python".into(),
                    restart_generation: 0,
                },
            ),
        )
        .await
        .unwrap();
    assert_eq!(w.metadata.generation, Some(1));
    // Status through the subresource only; the main resource ignores status.
    let s = ws
        .patch_status(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"phase": "Creating"}})),
        )
        .await
        .unwrap();
    assert_eq!(s.status.unwrap().phase.as_deref(), Some("Creating"));
    assert_eq!(
        s.metadata.generation,
        Some(1),
        "status writes do not bump generation"
    );
    let m = ws
        .patch(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"phase": "Hacked"}})),
        )
        .await
        .unwrap();
    assert_eq!(m.status.unwrap().phase.as_deref(), Some("Creating"));
    let g = ws
        .patch(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"restartGeneration": 1}})),
        )
        .await
        .unwrap();
    assert_eq!(g.metadata.generation, Some(2));
    // Strategic merge patch is refused for custom resources, like the real server.
    let e = ws
        .patch(
            "w1",
            &PatchParams::default(),
            &Patch::Strategic(json!({"spec": {"runtime": "go"}})),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(e, kube::Error::Api(ref s) if s.code == 415),
        "{e:?}"
    );
    // Discovery now lists the new group.
    let discovery = kube::discovery::Discovery::new(client.clone())
        .run()
        .await
        .unwrap();
    assert!(discovery.groups().any(|g| g.name() == "llmsafespaces.dev"));
    // Deleting the CRD deletes its custom resources and stops serving them.
    Api::<CustomResourceDefinition>::all(client.clone())
        .delete("workspaces.llmsafespaces.dev", &DeleteParams::default())
        .await
        .unwrap();
    eventually(10, "CRD gone", || {
        let ws = ws.clone();
        async move {
            match ws.list(&ListParams::default()).await {
                Err(kube::Error::Api(s)) if s.code == 404 => Some(()),
                _ => None,
            }
        }
    })
    .await;
}

#[tokio::test]
async fn controller_reconciles_objects() {
    let c = TestCluster::start(0).await;
    let client = c.client().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    #[derive(Debug, thiserror::Error)]
    #[error("kube: {0}")]
    struct E(#[from] kube::Error);
    async fn reconcile(obj: Arc<ConfigMap>, api: Arc<Api<ConfigMap>>) -> Result<Action, E> {
        if obj.annotations().get("reconciled").is_none() {
            api.patch(
                &obj.name_any(),
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {"annotations": {"reconciled": "yes"}}})),
            )
            .await?;
        }
        Ok(Action::await_change())
    }
    let ctl_api = Arc::new(api.clone());
    let handle = tokio::spawn(
        Controller::new(
            api.clone(),
            watcher::Config::default().labels("managed=true"),
        )
        .run(
            reconcile,
            |_, _, _| Action::requeue(Duration::from_secs(1)),
            ctl_api,
        )
        .for_each(|_| async {}),
    );
    api.create(
        &PostParams::default(),
        &cm("managed", &[("managed", "true")]),
    )
    .await
    .unwrap();
    api.create(&PostParams::default(), &cm("unmanaged", &[]))
        .await
        .unwrap();
    eventually(10, "controller annotated the managed object", || {
        let api = api.clone();
        async move {
            api.get("managed")
                .await
                .ok()?
                .annotations()
                .get("reconciled")
                .map(|_| ())
        }
    })
    .await;
    assert!(api
        .get("unmanaged")
        .await
        .unwrap()
        .annotations()
        .get("reconciled")
        .is_none());
    handle.abort();
}

#[tokio::test]
async fn patch_types_and_server_side_apply() {
    let c = TestCluster::start(0).await;
    let api: Api<Pod> = Api::namespaced(c.client().await, "default");
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "p", "labels": {"a": "1"}},
        "spec": {"containers": [{"name": "main", "image": "app:1", "env": [{"name": "X", "value": "1"}]}, {"name": "side", "image": "side:1"}]}
    }))
    .unwrap();
    api.create(&PostParams::default(), &pod).await.unwrap();
    // Strategic merge: containers merge by name, so only `main`'s image changes.
    let p = api
        .patch(
            "p",
            &PatchParams::default(),
            &Patch::Strategic(
                json!({"spec": {"containers": [{"name": "main", "image": "app:2"}]}}),
            ),
        )
        .await
        .unwrap();
    let cs = p.spec.unwrap().containers;
    assert_eq!(cs.len(), 2);
    assert_eq!(cs[0].image.as_deref(), Some("app:2"));
    assert_eq!(cs[0].env.as_ref().unwrap()[0].name, "X");
    // Merge patch: null deletes a label.
    let p = api
        .patch(
            "p",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"a": null, "b": "2"}}})),
        )
        .await
        .unwrap();
    assert_eq!(p.labels().get("b").map(String::as_str), Some("2"));
    assert!(p.labels().get("a").is_none());
    // JSON patch, with a failing test op rejected.
    let p = api
        .patch(
            "p",
            &PatchParams::default(),
            &Patch::<()>::Json(
                serde_json::from_value(
                    json!([{"op": "replace", "path": "/metadata/labels/b", "value": "3"}]),
                )
                .unwrap(),
            ),
        )
        .await
        .unwrap();
    assert_eq!(p.labels()["b"], "3");
    let bad = api
        .patch(
            "p",
            &PatchParams::default(),
            &Patch::<()>::Json(
                serde_json::from_value(
                    json!([{"op": "test", "path": "/metadata/labels/b", "value": "nope"}]),
                )
                .unwrap(),
            ),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(bad, kube::Error::Api(ref s) if s.code == 422),
        "{bad:?}"
    );

    // Server-side apply on ConfigMaps: two managers, a conflict, then force.
    let cms: Api<ConfigMap> = Api::namespaced(api.clone().into_client(), "default");
    let applied = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ssa"}, "data": {"owner": "alice", "shared": "1"}});
    let a = cms
        .patch("ssa", &PatchParams::apply("alice"), &Patch::Apply(&applied))
        .await
        .unwrap();
    assert!(a
        .metadata
        .managed_fields
        .unwrap()
        .iter()
        .any(|m| m.manager.as_deref() == Some("alice") && m.operation.as_deref() == Some("Apply")));
    let bob = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ssa"}, "data": {"shared": "2"}});
    let e = cms
        .patch("ssa", &PatchParams::apply("bob"), &Patch::Apply(&bob))
        .await
        .unwrap_err();
    assert!(
        matches!(e, kube::Error::Api(ref s) if s.code == 409 && s.message.contains("conflict")),
        "{e:?}"
    );
    let forced = cms
        .patch(
            "ssa",
            &PatchParams::apply("bob").force(),
            &Patch::Apply(&bob),
        )
        .await
        .unwrap();
    assert_eq!(forced.data.as_ref().unwrap()["shared"], "2");
    // Alice re-applies without `owner`: the field she alone owned is removed.
    let a2 = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ssa"}, "data": {"other": "x"}});
    let out = cms
        .patch("ssa", &PatchParams::apply("alice"), &Patch::Apply(&a2))
        .await
        .unwrap();
    let data = out.data.unwrap();
    assert!(!data.contains_key("owner"), "{data:?}");
    assert_eq!(data["shared"], "2");
}

#[tokio::test]
async fn garbage_collection_background_foreground_orphan() {
    let c = TestCluster::start(0).await;
    let api: Api<ConfigMap> = Api::namespaced(c.client().await, "default");
    let owner_of = |o: &ConfigMap, block: bool| json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": o.name_any(), "uid": o.uid().unwrap(), "blockOwnerDeletion": block}]);
    let mk_child = |name: &str, refs: serde_json::Value| -> ConfigMap {
        serde_json::from_value(json!({"metadata": {"name": name, "ownerReferences": refs}}))
            .unwrap()
    };

    // Background: the owner goes at once, the dependent follows.
    let o1 = api
        .create(&PostParams::default(), &cm("owner-bg", &[]))
        .await
        .unwrap();
    api.create(
        &PostParams::default(),
        &mk_child("child-bg", owner_of(&o1, false)),
    )
    .await
    .unwrap();
    api.delete("owner-bg", &DeleteParams::background())
        .await
        .unwrap();
    eventually(10, "background dependent collected", || {
        let api = api.clone();
        async move {
            api.get_opt("child-bg")
                .await
                .unwrap()
                .is_none()
                .then_some(())
        }
    })
    .await;

    // Foreground: the owner waits (deletionTimestamp + finalizer) until blocking dependents are gone.
    let o2 = api
        .create(&PostParams::default(), &cm("owner-fg", &[]))
        .await
        .unwrap();
    let mut held = mk_child("child-fg", owner_of(&o2, true));
    held.metadata.finalizers = Some(vec!["test/hold".into()]);
    api.create(&PostParams::default(), &held).await.unwrap();
    api.delete("owner-fg", &DeleteParams::foreground())
        .await
        .unwrap();
    let owner = eventually(10, "owner terminating", || {
        let api = api.clone();
        async move {
            api.get_opt("owner-fg")
                .await
                .unwrap()
                .filter(|o| o.metadata.deletion_timestamp.is_some())
        }
    })
    .await;
    assert!(owner
        .finalizers()
        .contains(&"foregroundDeletion".to_string()));
    let child = api.get("child-fg").await.unwrap();
    assert!(
        child.metadata.deletion_timestamp.is_some(),
        "dependent is being deleted"
    );
    api.patch(
        "child-fg",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    eventually(10, "foreground owner removed", || {
        let api = api.clone();
        async move {
            api.get_opt("owner-fg")
                .await
                .unwrap()
                .is_none()
                .then_some(())
        }
    })
    .await;

    // Orphan: the dependent stays, without the ownerReference.
    let o3 = api
        .create(&PostParams::default(), &cm("owner-or", &[]))
        .await
        .unwrap();
    api.create(
        &PostParams::default(),
        &mk_child("child-or", owner_of(&o3, false)),
    )
    .await
    .unwrap();
    let dp = DeleteParams {
        propagation_policy: Some(PropagationPolicy::Orphan),
        ..Default::default()
    };
    api.delete("owner-or", &dp).await.unwrap();
    eventually(10, "orphan owner removed", || {
        let api = api.clone();
        async move {
            api.get_opt("owner-or")
                .await
                .unwrap()
                .is_none()
                .then_some(())
        }
    })
    .await;
    let orphan = api.get("child-or").await.unwrap();
    assert!(orphan.owner_references().is_empty());
}

#[tokio::test]
async fn namespace_deletion_is_two_phase() {
    let c = TestCluster::start(0).await;
    let client = c.client().await;
    let nss: Api<Namespace> = Api::all(client.clone());
    nss.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": "doomed"}})).unwrap(),
    )
    .await
    .unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "doomed");
    let mut held = cm("held", &[]);
    held.metadata.finalizers = Some(vec!["test/hold".into()]);
    cms.create(&PostParams::default(), &held).await.unwrap();
    // The service-account and root-CA controllers populate new namespaces.
    eventually(10, "kube-root-ca.crt", || {
        let cms = cms.clone();
        async move { cms.get_opt("kube-root-ca.crt").await.unwrap().map(|_| ()) }
    })
    .await;
    nss.delete("doomed", &DeleteParams::default())
        .await
        .unwrap();
    let ns = nss.get("doomed").await.unwrap();
    assert_eq!(ns.status.unwrap().phase.as_deref(), Some("Terminating"));
    let refused = cms
        .create(&PostParams::default(), &cm("late", &[]))
        .await
        .unwrap_err();
    assert!(
        matches!(refused, kube::Error::Api(ref s) if s.code == 403),
        "{refused:?}"
    );
    cms.patch(
        "held",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    eventually(10, "namespace gone", || {
        let nss = nss.clone();
        async move { nss.get_opt("doomed").await.unwrap().is_none().then_some(()) }
    })
    .await;
}
