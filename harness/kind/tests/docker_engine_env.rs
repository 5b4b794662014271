//! Docker-engine tier, in a process of its own because it sets the environment: with
//! `DOCKER_HOST=` (set but empty, as some CI templates leave it), both Docker clients reach the
//! local engine: bollard (ping, exec) and testcontainers (starting the node containers).

mod common;

use common::*;
use faultline_kind::exec::docker::TestcontainersExecutor;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_docker_host_reaches_the_local_engine_through_both_clients() {
    let Some(env) = TierEnv::new("envhost") else {
        return;
    };
    std::env::set_var("DOCKER_HOST", "");
    let ex = TestcontainersExecutor::connect().expect("connect");
    assert!(ex.endpoint().starts_with("unix:///"), "{}", ex.endpoint());
    ex.ping().await.expect("bollard reaches the engine");
    let p = env.provider(false);
    let c = p
        .start(&env.input(false), env.work.path())
        .await
        .expect("testcontainers starts the nodes");
    assert_eq!(
        sh(&c, WORKER, "systemctl is-active containerd")
            .await
            .trim(),
        "active"
    );
    let name = c.name().to_string();
    c.release(false).await.unwrap();
    env.assert_nothing_left(&name);
}
