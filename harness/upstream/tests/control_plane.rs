//! The real control plane (docs/upstream.md): etcd + kube-apiserver, and with
//! kube-controller-manager and kube-scheduler a Deployment's Pods scheduled onto a hand-made
//! Node. Each test prints `SKIPPED: <reason>` and passes when the binaries cannot be had here
//! (no Go toolchain, `FAULTLINE_UPSTREAM=off`); a binary that is there and fails fails the test.

use faultline_upstream::{ControlPlane, Error, Options, KUBECTL, KUBERNETES_VERSION};
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use kube::api::{ListParams, PostParams};
use kube::Api;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Whether a process with this PID still runs one of ours (its command line names `dir`): a
/// PID reused by an unrelated process does not count.
fn still_ours(pid: u32, dir: &Path) -> bool {
    match std::fs::read(format!("/proc/{pid}/cmdline")) {
        Ok(cmdline) => String::from_utf8_lossy(&cmdline).contains(&*dir.to_string_lossy()),
        Err(_) => false,
    }
}

fn assert_gone(pids: &[(&'static str, u32)], dir: &Path) {
    for (name, pid) in pids {
        assert!(
            !still_ours(*pid, dir),
            "{name} (pid {pid}) still runs after stop"
        );
    }
    assert!(!dir.exists(), "{} was not removed", dir.display());
}

#[tokio::test]
async fn etcd_and_apiserver_serve_kube_rs_and_kubectl_then_stop_by_pid() {
    let Some(cp) = ControlPlane::start_or_skip(Options::default()).await else {
        return;
    };
    let ready = cp.ready_after();
    let namespaces: Api<Namespace> = Api::all(cp.client());
    let list = namespaces.list(&ListParams::default()).await.unwrap();
    let first_list = cp.spawned_at().elapsed();
    println!(
        "upstream control plane (etcd + kube-apiserver): /readyz ok {:.2}s after start, first LIST {:.2}s after start",
        ready.as_secs_f64(),
        first_list.as_secs_f64()
    );
    let names: Vec<String> = list
        .items
        .iter()
        .filter_map(|n| n.metadata.name.clone())
        .collect();
    for want in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        assert!(names.iter().any(|n| n == want), "no {want} in {names:?}");
    }

    let version = cp.client().apiserver_version().await.unwrap();
    assert_eq!(version.git_version, KUBERNETES_VERSION, "{version:?}");
    assert_eq!(
        (version.major.as_str(), version.minor.as_str()),
        ("1", "35")
    );

    match cp.binary(KUBECTL) {
        Some(kubectl) => {
            let out = tokio::process::Command::new(&kubectl)
                .arg("--kubeconfig")
                .arg(cp.kubeconfig())
                .args(["get", "ns", "-o", "name"])
                .output()
                .await
                .unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success() && stdout.contains("namespace/kube-system"),
                "kubectl get ns: {}\n{stdout}\n{}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
            println!(
                "kubectl get ns: {}",
                stdout.split_whitespace().collect::<Vec<_>>().join(" ")
            );
        }
        None => println!(
            "SKIPPED kubectl step: no kubectl in {} (ci/upstream-tier.sh builds it)",
            cp.bin_dir().display()
        ),
    }

    // The client-certificate kubeconfig authenticates as kind's admin does.
    let kc = kube::config::Kubeconfig::read_from(cp.certificate_kubeconfig()).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kc, &Default::default())
        .await
        .unwrap();
    let by_certificate = kube::Client::try_from(config).unwrap();
    let review: serde_json::Value = by_certificate
        .request(
            http::Request::post("/apis/authentication.k8s.io/v1/selfsubjectreviews")
                .header("Content-Type", "application/json")
                .body(
                    br#"{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}"#
                        .to_vec(),
                )
                .unwrap(),
        )
        .await
        .unwrap();
    let user = &review["status"]["userInfo"];
    assert_eq!(user["username"], "kubernetes-admin", "{review}");
    assert!(
        user["groups"]
            .as_array()
            .is_some_and(|g| g.iter().any(|g| g == "system:masters")),
        "{review}"
    );

    let pids = cp.pids();
    assert_eq!(pids.len(), 2, "{pids:?}");
    let dir = cp.dir().to_path_buf();
    cp.stop().await.unwrap();
    assert_gone(&pids, &dir);
}

#[tokio::test]
async fn dropping_the_control_plane_stops_it_too() {
    let Some(cp) = ControlPlane::start_or_skip(Options::default()).await else {
        return;
    };
    let pids = cp.pids();
    let dir = cp.dir().to_path_buf();
    for (name, pid) in &pids {
        assert!(still_ours(*pid, &dir), "{name} (pid {pid}) is not running");
    }
    drop(cp);
    assert_gone(&pids, &dir);
}

fn node(name: &str) -> Node {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {
            "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"},
            "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
            "conditions": [{
                "type": "Ready", "status": "True", "reason": "KubeletReady",
                "message": "made by hand: no kubelet runs",
                "lastHeartbeatTime": now_rfc3339(), "lastTransitionTime": now_rfc3339(),
            }],
        },
    }))
    .unwrap()
}

fn now_rfc3339() -> String {
    k8s_openapi::jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

fn deployment(name: &str, replicas: i32) -> Deployment {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{
                    "name": "main",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": "100m", "memory": "16Mi"}},
                }]},
            },
        },
    }))
    .unwrap()
}

#[tokio::test]
async fn controller_manager_and_scheduler_run_a_deployment_onto_a_node() {
    let Some(cp) = ControlPlane::start_or_skip(Options::with_controllers()).await else {
        return;
    };
    println!(
        "upstream control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler): ready {:.2}s after start",
        cp.ready_after().as_secs_f64()
    );
    let client = cp.client();
    let nodes: Api<Node> = Api::all(client.clone());
    nodes
        .create(&PostParams::default(), &node("worker-1"))
        .await
        .unwrap();
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    let created = Instant::now();
    deployments
        .create(&PostParams::default(), &deployment("web", 2))
        .await
        .unwrap();

    let replicasets: Api<ReplicaSet> = Api::namespaced(client.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let bound = Duration::from_secs(120);
    let (rs, bound_pods) = loop {
        let rs = replicasets.list(&ListParams::default()).await.unwrap();
        let owned: Vec<String> = rs
            .items
            .iter()
            .filter(|r| {
                r.metadata
                    .owner_references
                    .iter()
                    .flatten()
                    .any(|o| o.kind == "Deployment" && o.name == "web")
            })
            .filter_map(|r| r.metadata.name.clone())
            .collect();
        let ps = pods
            .list(&ListParams::default().labels("app=web"))
            .await
            .unwrap();
        let placed: Vec<(String, String)> = ps
            .items
            .iter()
            .filter_map(|p| {
                let node = p.spec.as_ref()?.node_name.clone()?;
                Some((p.metadata.name.clone()?, node))
            })
            .collect();
        if owned.len() == 1 && placed.len() == 2 {
            break (owned, placed);
        }
        assert!(
            created.elapsed() < bound,
            "after {bound:?}: replicasets {owned:?}, {} pods, bound {placed:?}\n\
             kube-controller-manager:\n{}\nkube-scheduler:\n{}",
            ps.items.len(),
            cp.log_tail("kube-controller-manager", 20),
            cp.log_tail("kube-scheduler", 20),
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    println!(
        "deployment web -> replicaset {rs:?} -> pods bound {bound_pods:?} in {:.2}s",
        created.elapsed().as_secs_f64()
    );
    assert!(bound_pods.iter().all(|(_, n)| n == "worker-1"));

    let pids = cp.pids();
    assert_eq!(pids.len(), 4, "{pids:?}");
    let dir = cp.dir().to_path_buf();
    cp.stop().await.unwrap();
    assert_gone(&pids, &dir);
}

/// A fake binary: a shell script.
fn fake(dir: &Path, name: &str, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

#[tokio::test]
async fn a_missing_binary_is_a_skip_with_what_to_do() {
    let empty = tempfile::tempdir().unwrap();
    let opts = Options {
        bin_dir: Some(empty.path().to_path_buf()),
        ..Options::default()
    };
    let err = ControlPlane::start(opts).await.unwrap_err();
    let text = err.to_string();
    assert!(
        matches!(err, Error::Skip(_) | Error::Required(_)),
        "{err:?}"
    );
    assert!(
        text.contains("etcd, kube-apiserver") && text.contains("ci/upstream.sh"),
        "{text}"
    );
    assert!(!text.contains('\n'), "not one line: {text}");
}

#[tokio::test]
async fn a_binary_that_exits_fails_naming_it_with_its_log() {
    let bin = tempfile::tempdir().unwrap();
    fake(
        bin.path(),
        "etcd",
        "echo \"etcd: cannot start: boom\" >&2; exit 7",
    );
    fake(bin.path(), "kube-apiserver", "exit 1");
    let opts = Options {
        bin_dir: Some(bin.path().to_path_buf()),
        ..Options::default()
    };
    match ControlPlane::start(opts).await.unwrap_err() {
        Error::Exited {
            binary,
            status,
            tail,
            ..
        } => {
            assert_eq!(binary, "etcd");
            assert_eq!(status, "exit code 7");
            assert!(tail.contains("boom"), "{tail}");
        }
        e => panic!("expected etcd's exit, got {e:?}"),
    }
}

#[tokio::test]
async fn a_binary_that_never_gets_ready_is_killed_by_pid() {
    let bin = tempfile::tempdir().unwrap();
    let pid_file = bin.path().join("etcd.pid");
    fake(
        bin.path(),
        "etcd",
        &format!("echo $$ > {}; exec sleep 300", pid_file.display()),
    );
    fake(bin.path(), "kube-apiserver", "exit 1");
    let opts = Options {
        bin_dir: Some(bin.path().to_path_buf()),
        ready_timeout: Duration::from_secs(1),
        ..Options::default()
    };
    let err = ControlPlane::start(opts).await.unwrap_err();
    assert!(
        matches!(err, Error::NotReady { binary: "etcd", .. }),
        "{err:?}"
    );
    let pid: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    assert!(
        !String::from_utf8_lossy(&cmdline).contains("sleep"),
        "the fake etcd (pid {pid}) still runs"
    );
}

/// Set in the child process of `a_killed_test_leaves_no_process_behind`.
const HOLD: &str = "FAULTLINE_UPSTREAM_TEST_HOLD";

#[tokio::test]
async fn a_killed_test_leaves_no_process_behind() {
    if std::env::var_os(HOLD).is_some() {
        // The child: start, say what runs, wait to be killed.
        let Some(cp) = ControlPlane::start_or_skip(Options::default()).await else {
            return;
        };
        let pids: Vec<String> = cp.pids().iter().map(|(_, p)| p.to_string()).collect();
        println!("HOLDING {} {}", cp.dir().display(), pids.join(" "));
        tokio::time::sleep(Duration::from_secs(300)).await;
        return;
    }
    use std::io::BufRead;
    // This test binary again, running only this test, as the test process that gets killed.
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "a_killed_test_leaves_no_process_behind",
            "--nocapture",
        ])
        .env(HOLD, "1")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut seen = Vec::new();
    let mut holding = None;
    for line in std::io::BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        if line.starts_with("SKIPPED:") {
            println!("{line}");
            child.kill().unwrap();
            child.wait().unwrap();
            return;
        }
        if let Some(rest) = line.strip_prefix("HOLDING ") {
            holding = Some(rest.to_string());
            break;
        }
        seen.push(line);
    }
    let holding = holding.unwrap_or_else(|| panic!("the child never started: {seen:#?}"));
    let mut words = holding.split_whitespace();
    let dir = PathBuf::from(words.next().unwrap());
    let pids: Vec<u32> = words.map(|p| p.parse().unwrap()).collect();
    assert_eq!(pids.len(), 2, "{holding}");

    child.kill().unwrap(); // SIGKILL: no destructor runs
    child.wait().unwrap();
    let killed = Instant::now();
    while pids.iter().any(|p| still_ours(*p, &dir)) {
        assert!(
            killed.elapsed() < Duration::from_secs(10),
            "etcd or kube-apiserver ({pids:?}) outlived the killed test by 10 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    println!(
        "killed test: its etcd and kube-apiserver were gone {:.2}s after it",
        killed.elapsed().as_secs_f64()
    );
    // What SIGKILL leaves: the directory, which the next start sweeps (here, or one of the
    // other tests' starts, running in parallel).
    let swept = faultline_upstream::sweep_stale_dirs();
    assert!(
        !dir.exists(),
        "{} left after a sweep ({swept:?})",
        dir.display()
    );
}
