//! The API surface of issue #13 part A through real clients: every GA group of 1.35 served
//! (kubectl 1.37 `get`), `apply --dry-run=server` of a controller's install bundle, the scale
//! subresource (`kubectl scale`), and the response shapes typed clients decode (kube-rs).

mod common;

use common::tools::{kubectl, kubectl_ok};
use common::TestCluster;
use k8s_openapi::api::core::v1::Service;
use kube::api::{Api, DeleteParams, ListParams, PostParams, VersionMatch};

const BUNDLE: &str = r#"
apiVersion: v1
kind: ServiceAccount
metadata: {name: ctl, namespace: default}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: ctl}
rules: [{apiGroups: [""], resources: [pods], verbs: [get, list, watch]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: ctl}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: ctl}
subjects: [{kind: ServiceAccount, name: ctl, namespace: default}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: ctl, namespace: default}
spec:
  selector: {matchLabels: {app: ctl}}
  template:
    metadata: {labels: {app: ctl}}
    spec: {serviceAccountName: ctl, containers: [{name: ctl, image: ctl:1}]}
---
apiVersion: batch/v1
kind: Job
metadata: {name: migrate, namespace: default}
spec:
  template:
    spec: {restartPolicy: Never, containers: [{name: m, image: ctl:1}]}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_gets_every_group_and_dry_runs_an_install_bundle() {
    let c = TestCluster::start(2).await;
    let kinds = "jobs,cronjobs,statefulsets,controllerrevisions,replicationcontrollers,endpoints,limitranges,resourcequotas,podtemplates,\
                 roles,rolebindings,clusterroles,clusterrolebindings,hpa,ingresses,ingressclasses,networkpolicies,endpointslices,\
                 priorityclasses,runtimeclasses,flowschemas,prioritylevelconfigurations,apiservices,csr,mutatingwebhookconfigurations,\
                 validatingwebhookconfigurations,validatingadmissionpolicies,deviceclasses,resourceclaims,csistoragecapacities,volumeattributesclasses";
    let out = kubectl(&c.kubeconfig, &["get", kinds, "-A"]).await;
    assert!(
        out.status.success(),
        "kubectl get failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let cs = kubectl_ok(&c.kubeconfig, &["get", "componentstatuses", "-o", "jsonpath={range .items[*]}{.metadata.name}={.conditions[0].type}/{.conditions[0].status} {end}"]).await;
    assert_eq!(
        cs.trim(),
        "controller-manager=Healthy/True etcd-0=Healthy/True scheduler=Healthy/True"
    );

    let dir = tempfile::tempdir().unwrap();
    let bundle = dir.path().join("bundle.yaml");
    std::fs::write(&bundle, BUNDLE).unwrap();
    let dry = kubectl_ok(
        &c.kubeconfig,
        &["apply", "--dry-run=server", "-f", bundle.to_str().unwrap()],
    )
    .await;
    assert_eq!(
        dry.lines()
            .filter(|l| l.ends_with("(server dry run)"))
            .count(),
        5,
        "{dry}"
    );
    let missing = kubectl(&c.kubeconfig, &["get", "job", "migrate"]).await;
    assert!(!missing.status.success(), "a dry run stored the Job");
    let applied = kubectl_ok(&c.kubeconfig, &["apply", "-f", bundle.to_str().unwrap()]).await;
    assert_eq!(
        applied.lines().filter(|l| l.ends_with("created")).count(),
        5,
        "{applied}"
    );
    let selector = kubectl_ok(
        &c.kubeconfig,
        &[
            "get",
            "job",
            "migrate",
            "-o",
            "jsonpath={.spec.selector.matchLabels}",
        ],
    )
    .await;
    assert!(
        selector.contains("batch.kubernetes.io/controller-uid"),
        "{selector}"
    );

    // kubectl scale patches the scale subresource.
    kubectl_ok(
        &c.kubeconfig,
        &["scale", "deployment", "ctl", "--replicas=4"],
    )
    .await;
    let replicas = kubectl_ok(
        &c.kubeconfig,
        &[
            "get",
            "deployment",
            "ctl",
            "-o",
            "jsonpath={.spec.replicas}",
        ],
    )
    .await;
    assert_eq!(replicas.trim(), "4");
    let scale = kubectl_ok(
        &c.kubeconfig,
        &[
            "get",
            "--raw",
            "/apis/apps/v1/namespaces/default/deployments/ctl/scale",
        ],
    )
    .await;
    let scale: serde_json::Value = serde_json::from_str(&scale).unwrap();
    assert_eq!(
        (
            scale["kind"].as_str(),
            scale["spec"]["replicas"].as_i64(),
            scale["status"]["selector"].as_str()
        ),
        (Some("Scale"), Some(4), Some("app=ctl"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_clients_get_allocations_deleted_objects_and_exact_lists() {
    let c = TestCluster::start(1).await;
    let client = c.client().await;
    let svcs: Api<Service> = Api::namespaced(client.clone(), "default");
    let body = |name: &str, t: &str| -> Service {
        serde_json::from_value(serde_json::json!({"metadata": {"name": name}, "spec": {"type": t, "selector": {"app": name}, "ports": [{"port": 80}]}})).unwrap()
    };
    let a = svcs
        .create(&PostParams::default(), &body("a", "ClusterIP"))
        .await
        .unwrap();
    let b = svcs
        .create(&PostParams::default(), &body("b", "NodePort"))
        .await
        .unwrap();
    let (ipa, ipb) = (
        a.spec.as_ref().unwrap().cluster_ip.clone().unwrap(),
        b.spec.as_ref().unwrap().cluster_ip.clone().unwrap(),
    );
    assert!(
        ipa.starts_with("10.96.") && ipa != ipb && ipa != "10.96.0.1",
        "{ipa} {ipb}"
    );
    assert!(a.status.unwrap().load_balancer.is_some());
    let node_port = b.spec.unwrap().ports.unwrap()[0].node_port.unwrap();
    assert!((30000..=32767).contains(&node_port));
    let rv_before_delete = svcs
        .list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();

    // A Service's DELETE answers the deleted object, which kube-rs decodes as a Service.
    let deleted = svcs.delete("a", &DeleteParams::default()).await.unwrap();
    assert_eq!(
        deleted
            .left()
            .expect("the deleted Service")
            .metadata
            .name
            .as_deref(),
        Some("a")
    );

    // An exact LIST at the old resourceVersion still sees `a`; the current state does not.
    let exact = ListParams::default()
        .at(&rv_before_delete)
        .matching(VersionMatch::Exact);
    let names: Vec<String> = svcs
        .list(&exact)
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|s| s.metadata.name)
        .collect();
    assert!(
        names.contains(&"a".to_string()) && names.contains(&"b".to_string()),
        "{names:?}"
    );
    let now: Vec<String> = svcs
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|s| s.metadata.name)
        .collect();
    assert!(!now.contains(&"a".to_string()));
    let too_old = ListParams::default().at("1").matching(VersionMatch::Exact);
    match svcs.list(&too_old).await {
        Ok(l) => assert!(
            l.items.is_empty(),
            "the state at resourceVersion 1 had no services"
        ),
        Err(kube::Error::Api(e)) => assert_eq!(e.code, 410),
        Err(e) => panic!("{e}"),
    }

    // dryRun keeps the stored resourceVersion, so a real update after it succeeds.
    let mut cur = svcs.get("b").await.unwrap();
    let stored_rv = cur.metadata.resource_version.clone();
    cur.metadata.labels = Some([("x".to_string(), "y".to_string())].into());
    let dry = svcs
        .replace(
            "b",
            &PostParams {
                dry_run: true,
                ..Default::default()
            },
            &cur,
        )
        .await
        .unwrap();
    assert_eq!(dry.metadata.resource_version, stored_rv);
    svcs.replace("b", &PostParams::default(), &cur)
        .await
        .expect("the update after a dry run");
}
