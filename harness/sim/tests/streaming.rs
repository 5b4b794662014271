//! pods/exec, pods/attach and pods/portforward judged by real clients: kubectl 1.37 (v5
//! exec, SPDY-over-WebSocket port-forward), the Python client (v5/v4 exec, v4 port-forward,
//! websocket-client on the older subprotocols) and kube-rs (`ws` feature).

mod common;

use common::tools::{kubectl, kubectl_path, python_path};
use common::{eventually, TestCluster};
use faultline_sim::{SimOptions, Timing};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, AttachParams, PostParams};
use serde_json::json;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

const EXEC_SCRIPT: &str = "- command: [cat, /etc/motd]\n  stdout: \"scripted motd\\n\"\n- command: [migrate]\n  stderr: \"migration failed\\n\"\n  exitCode: 2\n";
const PORTS: &str = "7000: echo\n8080:\n  http: {status: 200, body: \"ok\\n\", headers: {Content-Type: text/plain}}\n";

/// A one-worker cluster (time at 1/20) with pod `scripted` Running: scripted exec answers
/// and two listeners. Pod `waiting` never leaves Pending (no node can take it).
async fn cluster() -> TestCluster {
    let c = TestCluster::start_with(SimOptions::full(1, Timing::scaled(0.05))).await;
    let pods: Api<Pod> = Api::namespaced(c.client().await, "default");
    let pod = |name: &str, extra: serde_json::Value| -> Pod {
        let mut spec = json!({"containers": [{"name": "main", "image": "busybox:1.36"}]});
        if let Some(o) = extra.as_object() {
            for (k, v) in o {
                spec[k] = v.clone();
            }
        }
        serde_json::from_value(json!({
            "metadata": {"name": name, "annotations": {"sim.faultline.dev/exec": EXEC_SCRIPT, "sim.faultline.dev/ports": PORTS}},
            "spec": spec
        }))
        .unwrap()
    };
    pods.create(&PostParams::default(), &pod("scripted", json!({})))
        .await
        .unwrap();
    pods.create(
        &PostParams::default(),
        &pod("waiting", json!({"nodeSelector": {"no-such": "node"}})),
    )
    .await
    .unwrap();
    eventually(30, "pod scripted Running", || {
        let pods = pods.clone();
        async move {
            let p = pods.get("scripted").await.ok()?;
            let running = p
                .status?
                .container_statuses?
                .iter()
                .any(|s| s.state.as_ref().and_then(|s| s.running.as_ref()).is_some());
            running.then_some(())
        }
    })
    .await;
    c
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_exec_streams_exit_codes_and_stdin() {
    let c = cluster().await;
    let kc = &c.kubeconfig;

    let out = kubectl(kc, &["exec", "scripted", "--", "cat", "/etc/motd"]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "scripted motd\n");

    let out = kubectl(kc, &["exec", "scripted", "--", "migrate"]).await;
    assert_eq!(
        out.status.code(),
        Some(2),
        "exit code propagated: {}",
        text(&out.stderr)
    );
    assert_eq!(
        text(&out.stderr),
        "migration failed\ncommand terminated with exit code 2\n"
    );

    let out = kubectl(kc, &["exec", "scripted", "--", "sh", "-c", "exit 5"]).await;
    assert_eq!(out.status.code(), Some(5));

    // -i: stdin reaches the process; the v5 close signal ends `cat`.
    let mut child = tokio::process::Command::new(kubectl_path())
        .args(["exec", "-i", "scripted", "--", "cat"])
        .env("KUBECONFIG", kc)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"first line\nsecond line\n").await.unwrap();
    drop(stdin);
    let out = tokio::time::timeout(Duration::from_secs(20), child.wait_with_output())
        .await
        .expect("kubectl exec -i ended")
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "first line\nsecond line\n");

    let out = kubectl(kc, &["exec", "scripted", "--", "ls", "/"]).await;
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains("error executing command in container")
            && err.contains("sim.faultline.dev/exec"),
        "{err}"
    );

    // kubectl checks the container name itself; the server's check is the Python client's.
    let out = kubectl(kc, &["exec", "scripted", "-c", "sidecar", "--", "true"]).await;
    assert!(
        text(&out.stderr).contains("container sidecar is not valid for pod scripted"),
        "{}",
        text(&out.stderr)
    );

    // The 400 refuses the WebSocket upgrade; kubectl falls back to SPDY, gets the same Status
    // and reports its message.
    let out = kubectl(kc, &["exec", "waiting", "--", "true"]).await;
    assert_eq!(
        text(&out.stderr).trim(),
        "error: unable to upgrade connection: pod waiting does not have a host assigned"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_port_forward_to_declared_listeners() {
    let c = cluster().await;
    let mut child = tokio::process::Command::new(kubectl_path())
        .args(["port-forward", "pod/scripted", ":7000", ":8080", ":9"])
        .env("KUBECONFIG", &c.kubeconfig)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut local = std::collections::HashMap::new();
    while local.len() < 3 {
        let line = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
            .await
            .expect("kubectl port-forward printed its ports")
            .unwrap()
            .expect("stdout open");
        // "Forwarding from 127.0.0.1:41234 -> 7000"
        if let Some(rest) = line.strip_prefix("Forwarding from 127.0.0.1:") {
            let (l, r) = rest.split_once(" -> ").unwrap();
            local.insert(r.trim().parse::<u16>().unwrap(), l.parse::<u16>().unwrap());
        }
    }
    let mut echo = tokio::net::TcpStream::connect(("127.0.0.1", local[&7000]))
        .await
        .unwrap();
    echo.write_all(b"through SPDY over WebSocket")
        .await
        .unwrap();
    let mut buf = vec![0u8; 27];
    tokio::time::timeout(Duration::from_secs(10), echo.read_exact(&mut buf))
        .await
        .expect("echo answered")
        .unwrap();
    assert_eq!(buf, b"through SPDY over WebSocket");

    let mut http = tokio::net::TcpStream::connect(("127.0.0.1", local[&8080]))
        .await
        .unwrap();
    http.write_all(b"GET / HTTP/1.1\r\nHost: scripted\r\n\r\n")
        .await
        .unwrap();
    let mut resp = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), http.read_to_end(&mut resp))
        .await
        .expect("http listener closed")
        .unwrap();
    let resp = text(&resp);
    assert!(
        resp.starts_with("HTTP/1.1 200 OK\r\n") && resp.ends_with("\r\n\r\nok\n"),
        "{resp}"
    );

    // A port nothing listens on: the connection closes and kubectl reports the kubelet's error.
    let mut closed = tokio::net::TcpStream::connect(("127.0.0.1", local[&9]))
        .await
        .unwrap();
    let mut rest = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), closed.read_to_end(&mut rest))
        .await
        .expect("closed port: connection ends");
    assert!(rest.is_empty());
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait()).await;
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .await
        .unwrap();
    assert!(
        stderr.contains("error forwarding port 9 to pod")
            && stderr.contains("connect: connection refused"),
        "{stderr}"
    );
    drop(status);
}

/// kubectl attach follows the container it attached to and ends (exit 0) when that
/// container instance stops: here it crashes after 60 simulated seconds (3 s).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_attach_ends_with_the_container() {
    let c = cluster().await;
    let pods: Api<Pod> = Api::namespaced(c.client().await, "default");
    let p: Pod = serde_json::from_value(json!({
        "metadata": {"name": "crasher", "annotations": {"sim.faultline.dev/crash-after": "60s", "sim.faultline.dev/log": "started"}},
        "spec": {"containers": [{"name": "main", "image": "busybox:1.36"}]}
    }))
    .unwrap();
    pods.create(&PostParams::default(), &p).await.unwrap();
    eventually(30, "pod crasher Running", || {
        let pods = pods.clone();
        async move {
            let p = pods.get("crasher").await.ok()?;
            let s = p.status?.container_statuses?;
            (s[0].restart_count == 0 && s[0].state.as_ref()?.running.is_some()).then_some(())
        }
    })
    .await;
    let started = std::time::Instant::now();
    let out = tokio::time::timeout(
        Duration::from_secs(20),
        kubectl(&c.kubeconfig, &["attach", "crasher", "-c", "main"]),
    )
    .await
    .expect("attach ended with the container");
    assert!(out.status.success(), "{}", text(&out.stderr));
    // Output written before attaching is not replayed.
    assert!(
        !text(&out.stdout).contains("started"),
        "{}",
        text(&out.stdout)
    );
    assert!(
        started.elapsed() > Duration::from_millis(500),
        "attach ended before the container stopped"
    );
    let p = pods.get("crasher").await.unwrap();
    assert!(p.status.unwrap().container_statuses.unwrap()[0].restart_count >= 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_client_stream_and_portforward() {
    let c = cluster().await;
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/stream_checks.py");
    let out = tokio::process::Command::new(python_path())
        .arg(&script)
        .env("KUBECONFIG", &c.kubeconfig)
        .output()
        .await
        .expect("run python");
    let stdout = text(&out.stdout);
    assert!(
        out.status.success(),
        "python stream checks failed:\n{stdout}\n{}",
        text(&out.stderr)
    );
    assert_eq!(
        stdout.lines().filter(|l| l.starts_with("ok: ")).count(),
        16,
        "{stdout}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_rs_exec_and_portforward() {
    let c = cluster().await;
    let pods: Api<Pod> = Api::namespaced(c.client().await, "default");

    let mut p = pods
        .exec(
            "scripted",
            ["migrate"],
            &AttachParams::default().stderr(true),
        )
        .await
        .unwrap();
    let mut stderr = String::new();
    p.stderr()
        .unwrap()
        .read_to_string(&mut stderr)
        .await
        .unwrap();
    let status = p.take_status().unwrap().await.unwrap();
    assert_eq!(stderr, "migration failed\n");
    assert_eq!(status.reason.as_deref(), Some("NonZeroExitCode"));
    let cause = &status.details.unwrap().causes.unwrap()[0];
    assert_eq!(
        (cause.reason.as_deref(), cause.message.as_deref()),
        (Some("ExitCode"), Some("2"))
    );

    let mut p = pods
        .exec(
            "scripted",
            ["cat"],
            &AttachParams::default().stdin(true).stderr(false),
        )
        .await
        .unwrap();
    let mut w = p.stdin().unwrap();
    w.write_all(b"kube-rs stdin\n").await.unwrap();
    w.shutdown().await.unwrap();
    let mut out = String::new();
    p.stdout().unwrap().read_to_string(&mut out).await.unwrap();
    assert_eq!(out, "kube-rs stdin\n");
    assert_eq!(
        p.take_status().unwrap().await.unwrap().status.as_deref(),
        Some("Success")
    );

    let mut pf = pods.portforward("scripted", &[7000]).await.unwrap();
    let mut s = pf.take_stream(7000).unwrap();
    s.write_all(b"kube-rs port-forward").await.unwrap();
    let mut buf = vec![0u8; 20];
    tokio::time::timeout(Duration::from_secs(10), s.read_exact(&mut buf))
        .await
        .expect("echo")
        .unwrap();
    assert_eq!(buf, b"kube-rs port-forward");

    let mut pf = pods.portforward("scripted", &[9]).await.unwrap();
    let err = tokio::time::timeout(Duration::from_secs(10), pf.take_error(9).unwrap())
        .await
        .expect("error channel")
        .expect("an error");
    assert!(err.contains("error forwarding port 9 to pod"), "{err}");
}
