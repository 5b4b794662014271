//! The public API through its own doors: fixtures (one cluster per test, tests in parallel),
//! the in-process client and the kubeconfig, determinism under a seed, fault injection and
//! healing, bounded waits and the typed errors.

use faultline_testing::fixtures::{api_cluster, full_cluster};
use faultline_testing::{ApiFault, ApiFaultKind, Cluster, Error, LogSource, NodeOp};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Event, Namespace, Node, Pod};
use kube::api::{Api, ListParams, PostParams};
use rstest::rstest;
use serde_json::json;
use std::time::Duration;

fn config_map(name: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": {"k": "v"}})).unwrap()
}

/// Each test gets its own cluster: a ConfigMap one test creates is absent from the others'
/// (the tests of this file run in parallel, so a shared cluster would show it).
#[rstest]
#[case::first("first")]
#[case::second("second")]
#[case::third("third")]
#[tokio::test]
async fn every_test_has_its_own_cluster(#[future(awt)] api_cluster: Cluster, #[case] name: &str) {
    let cms: Api<ConfigMap> = Api::namespaced(api_cluster.client(), "default");
    cms.create(&PostParams::default(), &config_map(name))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    let names: Vec<String> = cms
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .filter(|n| n != "kube-root-ca.crt")
        .collect();
    assert_eq!(names, [name]);
}

/// The in-process client and a client built from the kubeconfig (TLS on 127.0.0.1, what a
/// subprocess uses) see the same cluster.
#[rstest]
#[tokio::test]
async fn kubeconfig_reaches_the_same_cluster(#[future(awt)] api_cluster: Cluster) {
    let path = api_cluster.kubeconfig().unwrap();
    assert_eq!(path, api_cluster.kubeconfig().unwrap(), "written once");
    let kc = kube::config::Kubeconfig::read_from(&path).unwrap();
    let cfg = kube::Config::from_custom_kubeconfig(kc, &Default::default())
        .await
        .unwrap();
    assert!(
        cfg.cluster_url
            .to_string()
            .starts_with("https://127.0.0.1:"),
        "{}",
        cfg.cluster_url
    );
    let over_tls = kube::Client::try_from(cfg).unwrap();
    Api::<ConfigMap>::namespaced(api_cluster.client(), "default")
        .create(&PostParams::default(), &config_map("shared"))
        .await
        .unwrap();
    let seen = Api::<ConfigMap>::namespaced(over_tls, "default")
        .get("shared")
        .await
        .unwrap();
    assert_eq!(seen.data.unwrap()["k"], "v");
    let dir = path.parent().unwrap().to_path_buf();
    drop(api_cluster);
    assert!(!dir.exists(), "the kubeconfig is deleted with the cluster");
}

/// Which of 40 requests an injected 50 % error rate fails, as the client sees it.
async fn failed_requests(seed: u64) -> Vec<bool> {
    let c = Cluster::api_only().seed(seed).start().await.unwrap();
    let id = c.inject_api(ApiFault {
        kind: ApiFaultKind::Errors {
            rate: 0.5,
            code: 503,
        },
        verbs: vec!["get".into()],
        resources: vec!["namespaces".into()],
    });
    let ns: Api<Namespace> = Api::all(c.client());
    let mut seq = vec![];
    for _ in 0..40 {
        seq.push(match ns.get("default").await {
            Ok(_) => false,
            Err(kube::Error::Api(s)) if s.code == 503 => true,
            Err(e) => panic!("unexpected error {e}"),
        });
    }
    assert!(c.heal_api(id));
    assert!(ns.get("default").await.is_ok(), "healed: no more errors");
    seq
}

#[tokio::test]
async fn same_seed_same_failed_requests() {
    let (a, b, other) = (
        failed_requests(7).await,
        failed_requests(7).await,
        failed_requests(8).await,
    );
    assert_eq!(a, b);
    assert_ne!(a, other, "another seed fails other requests");
    assert!(a.iter().any(|f| *f) && a.iter().any(|f| !*f), "{a:?}");
}

/// The events of a pod's start on a full cluster, in order, without times and names.
async fn pod_start_events(seed: u64) -> Vec<(String, String)> {
    let c = Cluster::full()
        .workers(1)
        .time_scale(0.01)
        .seed(seed)
        .start()
        .await
        .unwrap();
    let pod: Pod = serde_json::from_value(json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}})).unwrap();
    let pods: Api<Pod> = Api::namespaced(c.client(), "default");
    pods.create(&PostParams::default(), &pod).await.unwrap();
    let running =
        |p: Option<&Pod>| p.and_then(|p| p.status.as_ref()?.phase.as_deref()) == Some("Running");
    c.wait_for_object(&pods, "p", running, Duration::from_secs(2))
        .await
        .unwrap();
    let events: Api<Event> = Api::namespaced(c.client(), "default");
    let mut list = events
        .list(&ListParams::default().fields("involvedObject.name=p"))
        .await
        .unwrap()
        .items;
    list.sort_by_key(|e| {
        e.metadata
            .resource_version
            .as_ref()
            .and_then(|rv| rv.parse::<u64>().ok())
    });
    list.into_iter()
        .map(|e| (e.reason.unwrap_or_default(), e.message.unwrap_or_default()))
        .collect()
}

#[tokio::test]
async fn same_seed_same_event_sequence() {
    let (a, b) = (pod_start_events(3).await, pod_start_events(3).await);
    assert_eq!(a, b);
    let reasons: Vec<&str> = a.iter().map(|(r, _)| r.as_str()).collect();
    assert_eq!(
        reasons,
        ["Scheduled", "Pulling", "Pulled", "Created", "Started"],
        "{a:#?}"
    );
}

/// A fault and its heal, seen in the node's own log; the wait reports its time.
#[rstest]
#[tokio::test]
async fn inject_and_heal_a_kubelet_stop(#[future(awt)] full_cluster: Cluster) {
    let c = full_cluster;
    let nodes: Api<Node> = Api::all(c.client());
    let ready = |status: &'static str| {
        move |n: Option<&Node>| {
            n.and_then(|n| {
                n.status
                    .as_ref()?
                    .conditions
                    .as_ref()?
                    .iter()
                    .find(|c| c.type_ == "Ready")
                    .map(|c| c.status == status)
            })
            .unwrap_or(false)
        }
    };
    c.wait_for_object(&nodes, "worker-01", ready("True"), Duration::from_secs(2))
        .await
        .unwrap();
    let fault = c.inject("worker-01", NodeOp::KubeletStop).unwrap();
    assert_eq!(fault.message, "kubelet on worker-01 stopped");
    // Node lifecycle marks it Unknown after the 50 s grace period: about 0.5 s here.
    let down = c
        .wait_for_object(
            &nodes,
            "worker-01",
            ready("Unknown"),
            Duration::from_secs(3),
        )
        .await
        .unwrap();
    // Not before the grace period. The node lifecycle controller counts it from the last
    // Lease renewal (node_lifecycle_controller.go, tryUpdateNodeHealth), which can be up to a
    // renew interval (10 s) before the stop and further under CI load, as timer lag at
    // timeScale 0.01 is nominal time: so the bound is from the Lease, not from the injection.
    // The sim's timestamps are wall-clock times (lastTransitionTime has whole seconds, too
    // coarse at this scale), so the span is from the renewal to when the wait saw Unknown.
    let seen_unknown = k8s_openapi::jiff::Timestamp::now();
    let leases: Api<Lease> = Api::namespaced(c.client(), "kube-node-lease");
    let renewed = leases
        .get("worker-01")
        .await
        .unwrap()
        .spec
        .and_then(|s| s.renew_time)
        .expect("the kubelet's Lease has a renewTime")
        .0;
    let since_renewal = c.timing().to_nominal(
        seen_unknown
            .duration_since(renewed)
            .try_into()
            .unwrap_or_default(),
    );
    // 1 s (10 ms of wall time) of slack below the 50 s grace period, for clock reads.
    assert!(
        since_renewal >= Duration::from_secs(49),
        "Ready was Unknown {since_renewal:?} (nominal) after the last Lease renewal at {renewed}; \
         {:?} nominal, {:?} wall after the stop",
        down.nominal,
        down.wall
    );
    assert_eq!(c.heal(&fault).unwrap(), "kubelet on worker-01 restarting");
    c.wait_for_object(&nodes, "worker-01", ready("True"), Duration::from_secs(2))
        .await
        .unwrap();
    let started = c
        .wait_for_log(
            "worker-01",
            LogSource::Kubelet,
            Duration::from_secs(1),
            |l| l.contains("\"Starting kubelet main sync loop\""),
        )
        .await
        .unwrap();
    assert!(started.value.contains("kubelet.go:"), "{}", started.value);
}

#[tokio::test]
async fn errors_say_what_failed() {
    let err = Cluster::api_only()
        .time_scale(0.1)
        .start()
        .await
        .err()
        .unwrap();
    assert!(
        matches!(
            err,
            Error::InvalidOption {
                option: "time_scale",
                ..
            }
        ),
        "{err}"
    );
    let err = Cluster::full()
        .time_scale(-1.0)
        .start()
        .await
        .err()
        .unwrap();
    assert!(
        err.to_string()
            .contains("-1 is not a positive finite factor"),
        "{err}"
    );

    let api = Cluster::api_only().start().await.unwrap();
    let err = api.inject("worker-01", NodeOp::CsiPluginDown).unwrap_err();
    assert!(
        matches!(&err, Error::NoNodes { op } if op == "csiPluginDown"),
        "{err}"
    );
    let err = api.logs("worker-01", LogSource::Kubelet).unwrap_err();
    assert!(matches!(err, Error::NoNodes { .. }), "{err}");
    let err = api
        .wait("nothing", Duration::from_millis(30), || async {
            Ok(None::<()>)
        })
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::Timeout { budget, .. } if budget == Duration::from_millis(30)),
        "{err}"
    );
    assert_eq!(
        err.to_string(),
        "timed out after 30ms (nominal 30ms) waiting for nothing"
    );

    let full = Cluster::full()
        .workers(1)
        .time_scale(0.01)
        .start()
        .await
        .unwrap();
    let err = full.inject("worker-09", NodeOp::KubeletStop).unwrap_err();
    assert_eq!(
        err.to_string(),
        "no node \"worker-09\" in this cluster (nodes: control-plane, worker-01)"
    );
    // By InternalIP, as talosctl --nodes takes it.
    let fault = full.inject("172.18.0.3", NodeOp::KubeletRestart).unwrap();
    assert_eq!(fault.node, "worker-01");
    let err = full.heal(&fault).unwrap_err();
    assert!(
        matches!(&err, Error::NotHealable { op } if op == "kubeletRestart"),
        "{err}"
    );
    full.inject("worker-01", NodeOp::Reboot).unwrap();
    let err = full.inject("worker-01", NodeOp::KubeletStart).unwrap_err();
    assert_eq!(
        err.to_string(),
        "`kubeletStart` on worker-01 failed: node worker-01 is rebooting"
    );
}
