use faultline_testing::fixtures::*;
use k8s_openapi::api::core::v1::{ConfigMap, Node};
use kube::api::{Api, ListParams, PostParams};
use rstest::rstest;

#[rstest]
#[tokio::test]
async fn creates_a_config_map(#[future(awt)] api_cluster: Cluster) {
    let cms: Api<ConfigMap> = Api::namespaced(api_cluster.client(), "default");
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("settings".to_string());
    cms.create(&PostParams::default(), &cm).await.unwrap();
    assert!(cms.get_opt("settings").await.unwrap().is_some());
}

#[rstest]
#[tokio::test]
async fn on_a_slower_clock(
    #[future(awt)]
    #[with(7, 0.05)]
    full_cluster: Cluster,
) {
    // seed 7, 1/20 of real time: a control-plane node and 2 workers
    assert_eq!(full_cluster.seed(), 7);
    let nodes: Api<Node> = Api::all(full_cluster.client());
    assert_eq!(
        nodes
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .len(),
        3
    );
}
