//! The test library injects the fault catalogue's operations as a scenario's `inject:` does on
//! the sim provider: the same mapping (`faultline_sim::cluster::faults`), the same inverses.

use faultline_testing::catalogue::{ApiErrors, NodeOperation, NodeTarget};
use faultline_testing::{Cluster, Error};
use k8s_openapi::api::core::v1::{ConfigMap, Node};
use kube::api::{Api, ListParams};
use std::time::Duration;

#[tokio::test]
async fn an_api_error_operation_fails_requests_until_healed() {
    let cluster = Cluster::api_only().seed(3).start().await.expect("cluster");
    let cms: Api<ConfigMap> = Api::namespaced(cluster.client(), "default");
    let op = NodeOperation::ApiErrors(ApiErrors {
        rate: 1.0,
        code: 503,
        verbs: vec!["list".into()],
        resources: vec!["configmaps".into()],
    });
    let injected = cluster.inject_operation(op).expect("inject");
    let err = cms
        .list(&ListParams::default())
        .await
        .expect_err("every list fails");
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 503),
        "{err:?}"
    );
    cluster.heal_operation(&injected).expect("heal");
    cms.list(&ListParams::default()).await.expect("healed");
}

#[tokio::test]
async fn a_node_operation_reaches_the_kubelet_and_one_shots_do_not_heal() {
    let cluster = Cluster::full()
        .workers(1)
        .time_scale(0.01)
        .start()
        .await
        .expect("cluster");
    let node = || NodeTarget {
        node: "worker-01".into(),
    };
    let stopped = cluster
        .inject_operation(NodeOperation::KubeletStop(node()))
        .expect("inject");
    // No kubelet renews the Lease: the node lifecycle controller marks the node Unknown.
    let nodes: Api<Node> = Api::all(cluster.client());
    let unknown = |n: Option<&Node>| {
        n.and_then(|n| n.status.as_ref()?.conditions.as_ref())
            .is_some_and(|c| {
                c.iter()
                    .any(|c| c.type_ == "Ready" && c.status == "Unknown")
            })
    };
    cluster
        .wait_for_object(&nodes, "worker-01", unknown, Duration::from_secs(3))
        .await
        .expect("the stopped kubelet's node goes Unknown");
    cluster.heal_operation(&stopped).expect("kubeletStart");

    let restart = cluster
        .inject_operation(NodeOperation::KubeletRestart(node()))
        .expect("restart");
    let err = cluster.heal_operation(&restart).expect_err("one-shot");
    assert!(
        matches!(err, Error::NotHealable { ref op } if op == "kubeletRestart"),
        "{err}"
    );
}

#[tokio::test]
async fn a_node_operation_on_an_api_only_cluster_names_the_cause() {
    let cluster = Cluster::api_only().start().await.expect("cluster");
    let err = cluster
        .inject_operation(NodeOperation::CsiPluginDown(NodeTarget {
            node: "worker-01".into(),
        }))
        .expect_err("no nodes");
    assert!(err.to_string().contains("serves the API only"), "{err}");
}
