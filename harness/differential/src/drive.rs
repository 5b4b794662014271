//! kube-rs doing everyday things (the way a controller or a small tool uses it), for the
//! recording proxy: `faultline-differential drive-kube-rs --kubeconfig K --namespace NS`.

use anyhow::Result;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret, Service};
use kube::api::{
    Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::json;

pub async fn drive(kubeconfig: &std::path::Path, ns: &str) -> Result<()> {
    let config = kube::Config::from_custom_kubeconfig(
        Kubeconfig::read_from(kubeconfig)?,
        &KubeConfigOptions::default(),
    )
    .await?;
    let client = kube::Client::try_from(config)?;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    let deps: Api<Deployment> = Api::namespaced(client.clone(), ns);
    let svcs: Api<Service> = Api::namespaced(client.clone(), ns);
    let secrets: Api<Secret> = Api::namespaced(client.clone(), ns);
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let ssa = PatchParams::apply("kube-rs-driver");

    // server-side apply, as controllers do
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "labels": {"app": "demo"}}, "data": {"mode": "fast"}});
    cms.patch("settings", &ssa, &Patch::Apply(&cm)).await?;
    cms.patch("settings", &ssa, &Patch::Apply(&cm)).await?;
    let got = cms.get("settings").await?;
    let _ = cms.get_opt("missing").await?;
    let _ = cms.list(&ListParams::default().labels("app=demo")).await?;
    let _ = cms
        .list(&ListParams::default().fields("metadata.name=settings"))
        .await?;
    let _ = cms.list(&ListParams::default().limit(1)).await?;
    // replace with the version read
    let mut replaced = got.clone();
    replaced
        .data
        .get_or_insert_with(Default::default)
        .insert("mode".into(), "slow".into());
    cms.replace("settings", &PostParams::default(), &replaced)
        .await?;
    // a stale replace: Conflict
    let _ = cms.replace("settings", &PostParams::default(), &got).await;
    cms.patch(
        "settings",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"annotations": {"touched": "yes"}}})),
    )
    .await?;
    cms.patch(
        "settings",
        &PatchParams::default(),
        &Patch::Strategic(json!({"data": {"extra": "1"}})),
    )
    .await?;
    let jp: json_patch::Patch =
        serde_json::from_value(json!([{"op": "remove", "path": "/data/extra"}]))?;
    cms.patch("settings", &PatchParams::default(), &Patch::<()>::Json(jp))
        .await?;
    // conflict and force
    let other = PatchParams::apply("kube-rs-other");
    let _ = cms.patch("settings", &other, &Patch::Apply(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}, "data": {"mode": "other"}}))).await;
    cms.patch("settings", &other.clone().force(), &Patch::Apply(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}, "data": {"mode": "other"}}))).await?;

    secrets
        .create(
            &PostParams::default(),
            &serde_json::from_value(
                json!({"metadata": {"name": "creds"}, "stringData": {"user": "admin"}}),
            )?,
        )
        .await?;
    let _ = secrets.get("creds").await?;

    let dep = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}}}
    });
    deps.patch("web", &ssa, &Patch::Apply(&dep)).await?;
    let _ = deps.get_scale("web").await?;
    deps.patch_scale(
        "web",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"replicas": 2}})),
    )
    .await?;
    let _ = deps.get_status("web").await?;
    let _ = deps.list(&ListParams::default()).await?;
    let svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}]}});
    svcs.patch("web", &ssa, &Patch::Apply(&svc)).await?;
    let _ = svcs.get("web").await?;
    let _ = pods.list(&ListParams::default().labels("app=web")).await?;

    // a bounded watch, as a reflector starts one
    let list = cms.list(&ListParams::default()).await?;
    let rv = list.metadata.resource_version.unwrap_or_default();
    let wp = WatchParams::default().timeout(1);
    let mut stream = std::pin::pin!(cms.watch(&wp, &rv).await?);
    use futures::StreamExt;
    cms.patch("settings", &other, &Patch::Apply(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}, "data": {"mode": "other", "x": "y"}}))).await?;
    while let Some(ev) = stream.next().await {
        if let Ok(WatchEvent::Error(_)) | Err(_) = ev {
            break;
        }
    }

    deps.delete("web", &DeleteParams::foreground()).await?;
    svcs.delete("web", &DeleteParams::default()).await?;
    let _ = cms.delete("missing", &DeleteParams::default()).await;
    cms.delete_collection(
        &DeleteParams::default(),
        &ListParams::default().labels("app=demo"),
    )
    .await?;
    secrets.delete("creds", &DeleteParams::default()).await?;
    Ok(())
}
