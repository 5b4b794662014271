//! Shared set-up for tests that drive the simulated cluster through real clients.
#![allow(dead_code)]

pub mod tools;

use faultline_sim::{SimOptions, SimServer};
use std::path::PathBuf;

pub struct TestCluster {
    pub server: SimServer,
    pub dir: tempfile::TempDir,
    pub kubeconfig: PathBuf,
}

impl TestCluster {
    pub async fn start(workers: usize) -> TestCluster {
        Self::start_with(SimOptions::with_workers(workers)).await
    }

    pub async fn start_with(opts: SimOptions) -> TestCluster {
        let server = SimServer::start(opts).await.expect("start sim");
        let dir = tempfile::tempdir().expect("tempdir");
        let kubeconfig = server
            .write_kubeconfig(&dir.path().join("kubeconfig"))
            .expect("kubeconfig");
        TestCluster {
            server,
            dir,
            kubeconfig,
        }
    }

    /// A kube-rs client configured from the generated kubeconfig, as a user's program would be.
    pub async fn client(&self) -> kube::Client {
        let kc = kube::config::Kubeconfig::read_from(&self.kubeconfig).expect("read kubeconfig");
        let cfg =
            kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
                .await
                .expect("config");
        kube::Client::try_from(cfg).expect("client")
    }
}

/// Wait until `f` returns Some, polling every 20 ms, or panic after `secs`.
pub async fn eventually<T, F, Fut>(secs: u64, what: &str, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(secs);
    loop {
        if let Some(v) = f().await {
            return v;
        }
        if tokio::time::Instant::now() > deadline {
            panic!("timed out after {secs}s waiting for {what}");
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// (reason, message) of the core events about the object named `name`, oldest first.
pub async fn events_for(client: &kube::Client, name: &str) -> Vec<(String, String)> {
    let events: kube::Api<k8s_openapi::api::core::v1::Event> = kube::Api::all(client.clone());
    let lp = kube::api::ListParams::default().fields(&format!("involvedObject.name={name}"));
    events
        .list(&lp)
        .await
        .map(|l| {
            l.items
                .into_iter()
                .map(|e| (e.reason.unwrap_or_default(), e.message.unwrap_or_default()))
                .collect()
        })
        .unwrap_or_default()
}
