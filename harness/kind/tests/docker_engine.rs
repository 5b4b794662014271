//! The Docker-engine tier: the kind provider's real path (testcontainers and bollard against a
//! real engine) with the stand-in node image of `ci/node-image/` (Debian, systemd, stand-in
//! containerd and kubelet units; no Kubernetes binaries exist on our machines). Bring-up runs
//! up to where `kubeadm init` would run (`KindOptions::nodes_only`); every fault that needs no
//! API server is injected, its effect observed inside the node, healed, and the effect checked
//! gone. After every test nothing of ours is left in the engine.
//!
//! Run by `ci/docker-tier.sh`, which starts the engine, builds the image and sets
//! FAULTLINE_DOCKER=1 and FAULTLINE_KIND_NODE_IMAGE. Without FAULTLINE_DOCKER=1 every test
//! returns at once (saying so).

mod common;

use common::*;
use faultline_faults::{
    ApiErrors, MountHolder, NodeOperation, NodeReboot, NodeTarget, StaleDeviceMount, VolumeRef,
};
use faultline_kind::exec::docker::TestcontainersExecutor;
use faultline_kind::exec::Executor;
use faultline_kind::plan::DockerOp;
use faultline_kind::KindProvider;
use std::time::Duration;

fn w() -> NodeTarget {
    NodeTarget {
        node: WORKER.into(),
    }
}

fn reboot(stuck: bool) -> NodeOperation {
    NodeOperation::NodeReboot(NodeReboot {
        node: WORKER.into(),
        stuck_until_power_cycle: stuck,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bring_up_reaches_kubeadm_and_every_node_fault_shows_inside_the_node_then_heals() {
    let Some(env) = TierEnv::new("faults") else {
        return;
    };
    let p = env.provider(false);
    let c = p
        .start(&env.input(true), env.work.path())
        .await
        .expect("bring-up up to kubeadm");
    let name = c.name().to_string();
    assert!(
        name.starts_with("fl-tier-faults-") && name.len() == "fl-tier-faults-".len() + 6,
        "unique per run: {name}"
    );

    // Bring-up: both containers run systemd as PID 1 with what kind gives a node.
    for node in [CONTROL_PLANE, WORKER] {
        assert_eq!(sh(&c, node, "systemctl is-system-running --wait >/dev/null 2>&1; systemctl is-active containerd kubelet").await.trim(), "active\nactive");
        assert_eq!(sh(&c, node, "cat /proc/1/comm").await.trim(), "systemd");
        for target in [
            "/run",
            "/tmp",
            "/lib/modules",
            "/var/lib/containerd",
            "/var/lib/longhorn",
        ] {
            // mountpoint(1) reads mountinfo (and follows bookworm's /lib -> usr/lib).
            assert_eq!(
                sh(&c, node, &format!("mountpoint {target}")).await.trim(),
                format!("{target} is a mountpoint")
            );
        }
        assert!(
            sh(&c, node, "cat /kind/kubeadm.conf")
                .await
                .contains("kubeadm.k8s.io/v1beta4"),
            "kubeadm config copied in"
        );
    }
    let cp = docker(&[
        "inspect",
        "-f",
        "{{json .NetworkSettings.Ports}}",
        &format!("{name}-{CONTROL_PLANE}"),
    ]);
    assert!(
        cp.contains("\"HostIp\":\"127.0.0.1\"") && cp.contains("6443/tcp"),
        "API server port published on 127.0.0.1 only: {cp}"
    );

    // kubeletStop: the unit is inactive, then active again.
    let stop = NodeOperation::KubeletStop(w());
    c.apply(&stop).await.unwrap();
    assert_eq!(
        sh(&c, WORKER, "systemctl is-active kubelet || true")
            .await
            .trim(),
        "inactive"
    );
    c.heal(&stop).await.unwrap();
    assert_eq!(
        sh(&c, WORKER, "systemctl is-active kubelet").await.trim(),
        "active"
    );

    // kubeletHang: the kubelet's processes are stopped (state T), then run again.
    let state = "for p in $(cat /sys/fs/cgroup/pids/system.slice/kubelet.service/cgroup.procs 2>/dev/null || systemctl show -p MainPID --value kubelet); do awk '/^State:/ {print $2}' /proc/$p/status; done | sort -u | tr '\\n' ' '";
    let hang = NodeOperation::KubeletHang(w());
    c.apply(&hang).await.unwrap();
    assert_eq!(
        sh(&c, WORKER, state).await.trim(),
        "T",
        "every kubelet process stopped"
    );
    c.heal(&hang).await.unwrap();
    assert!(!sh(&c, WORKER, state).await.contains('T'), "running again");

    // kubeletRestart: a new main process.
    let pid = sh(&c, WORKER, "systemctl show -p MainPID --value kubelet").await;
    c.apply(&NodeOperation::KubeletRestart(w())).await.unwrap();
    assert_ne!(
        sh(&c, WORKER, "systemctl show -p MainPID --value kubelet").await,
        pid
    );

    // proberManagerBroken and hungNfs: their iptables rules, then none.
    for (op, comment) in [
        (
            NodeOperation::ProberManagerBroken(w()),
            "faultline-prober-broken",
        ),
        (NodeOperation::HungNfs(w()), "faultline-hung-nfs"),
    ] {
        c.apply(&op).await.unwrap();
        c.apply(&op).await.unwrap();
        let rules = sh(&c, WORKER, "iptables -S OUTPUT").await;
        assert!(rules.contains(comment), "{rules}");
        c.heal(&op).await.unwrap();
        assert!(
            !sh(&c, WORKER, "iptables -S OUTPUT").await.contains(comment),
            "{} healed",
            op.key()
        );
    }

    // ioErrors: no iSCSI disk is attached here (no iSCSI in this kernel): the marker that makes a
    // later reboot hang, then none.
    let io = NodeOperation::IoErrors(w());
    c.apply(&io).await.unwrap();
    assert_eq!(
        sh(
            &c,
            WORKER,
            "test -f /var/lib/faultline/io-errors && echo marked"
        )
        .await
        .trim(),
        "marked"
    );
    c.heal(&io).await.unwrap();
    assert_eq!(
        sh(
            &c,
            WORKER,
            "test -f /var/lib/faultline/io-errors && echo marked || echo clear"
        )
        .await
        .trim(),
        "clear"
    );

    // nodeNetworkPartition: the node loses its interface on the cluster network, then gets one
    // back (the engine names it eth1: a new interface, as after a real re-cabling).
    let part = NodeOperation::NodeNetworkPartition(w());
    let global = "ip -o -4 addr show scope global | wc -l";
    assert_eq!(sh(&c, WORKER, global).await.trim(), "1");
    c.apply(&part).await.unwrap();
    assert_eq!(sh(&c, WORKER, global).await.trim(), "0", "disconnected");
    assert!(sh(
        &c,
        CONTROL_PLANE,
        &format!("getent hosts {name}-{WORKER} || echo gone")
    )
    .await
    .contains("gone"));
    c.heal(&part).await.unwrap();
    assert_eq!(sh(&c, WORKER, global).await.trim(), "1", "reconnected");
    assert!(
        !sh(&c, CONTROL_PLANE, &format!("getent hosts {name}-{WORKER}"))
            .await
            .is_empty()
    );

    // staleDeviceMount: a CSI globalmount as kubelet leaves it (made here: no Longhorn), then
    // the extra mount reference the fault adds, then none.
    let pv = "pvc-81b676e6";
    sh(
        &c,
        WORKER,
        &format!(
            "set -e; d=/var/lib/kubelet/plugins/kubernetes.io/csi/driver.longhorn.io/abc; mkdir -p $d/globalmount; \
             echo '{{\"driverName\":\"driver.longhorn.io\",\"volumeHandle\":\"{pv}\"}}' > $d/vol_data.json; mount -t tmpfs {pv} $d/globalmount"
        ),
    )
    .await;
    let stale = NodeOperation::StaleDeviceMount(StaleDeviceMount {
        node: WORKER.into(),
        volume: VolumeRef::DeletedPv(pv.into()),
        held_by: MountHolder::Kubelet,
        other_volumes: Default::default(),
    });
    c.apply(&stale).await.unwrap();
    let refs = format!("grep -c '^{pv} ' /proc/self/mounts || true");
    assert_eq!(
        sh(&c, WORKER, &refs).await.trim(),
        "2",
        "globalmount plus the stale reference"
    );
    assert!(sh(&c, WORKER, "cat /proc/self/mountinfo")
        .await
        .contains("/var/lib/faultline/stale/pvc-81b676e6"));
    c.heal(&stale).await.unwrap();
    assert_eq!(sh(&c, WORKER, &refs).await.trim(), "1");

    // Faults that need an API server are refused or fail clearly, never silently.
    let e = c
        .apply(&NodeOperation::ApiErrors(ApiErrors {
            rate: 1.0,
            code: 500,
            verbs: vec![],
            resources: vec![],
        }))
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("--provider sim"), "{e}");

    assert!(c.active_faults().is_empty(), "{:?}", c.active_faults());
    c.release(false).await.unwrap();
    env.assert_nothing_left(&name);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reboot_power_cycle_and_a_stuck_reboot_ended_by_a_power_cycle() {
    let Some(env) = TierEnv::new("reboot") else {
        return;
    };
    let p = env.provider(false);
    let c = p
        .start(&env.input(false), env.work.path())
        .await
        .expect("bring-up");
    let name = c.name().to_string();
    let container = format!("{name}-{WORKER}");

    // A reboot: /run (tmpfs) is empty again, the kubelet runs again.
    sh(&c, WORKER, "touch /run/before-reboot").await;
    c.apply(&reboot(false)).await.unwrap();
    assert_eq!(
        sh(
            &c,
            WORKER,
            "test -e /run/before-reboot && echo kept || echo gone"
        )
        .await
        .trim(),
        "gone"
    );
    assert_eq!(
        sh(&c, WORKER, "systemctl is-active kubelet").await.trim(),
        "active",
        "bring-up's boot steps ran again"
    );
    c.heal(&reboot(false)).await.unwrap();

    // A power cycle: the same, without a shutdown.
    sh(&c, WORKER, "touch /run/before-power-cycle").await;
    c.apply(&NodeOperation::NodePowerCycle(w())).await.unwrap();
    assert_eq!(
        sh(
            &c,
            WORKER,
            "test -e /run/before-power-cycle && echo kept || echo gone"
        )
        .await
        .trim(),
        "gone"
    );
    assert_eq!(
        sh(&c, WORKER, "systemctl is-active kubelet").await.trim(),
        "active"
    );

    // A reboot during hungNfs and ioErrors hangs (the container stays stopped) ...
    c.apply(&NodeOperation::HungNfs(w())).await.unwrap();
    c.apply(&NodeOperation::IoErrors(w())).await.unwrap();
    c.apply(&reboot(false)).await.unwrap();
    assert_eq!(
        docker(&["inspect", "-f", "{{.State.Running}}", &container]).trim(),
        "false",
        "stuck in Rebooting"
    );
    // ... until a power cycle ends it: the node runs, and what made it hang is cleared.
    c.apply(&NodeOperation::NodePowerCycle(w()))
        .await
        .expect("a power cycle ends a stuck reboot");
    assert_eq!(
        docker(&["inspect", "-f", "{{.State.Running}}", &container]).trim(),
        "true"
    );
    assert_eq!(
        sh(&c, WORKER, "systemctl is-active kubelet").await.trim(),
        "active"
    );
    assert!(!sh(&c, WORKER, "iptables -S OUTPUT")
        .await
        .contains("faultline-hung-nfs"));
    assert_eq!(
        sh(
            &c,
            WORKER,
            "test -f /var/lib/faultline/io-errors && echo marked || echo clear"
        )
        .await
        .trim(),
        "clear"
    );
    assert!(c.active_faults().is_empty(), "{:?}", c.active_faults());

    // A stuck reboot asked for explicitly, healed (not power cycled): started and booted again.
    c.apply(&reboot(true)).await.unwrap();
    assert_eq!(
        docker(&["inspect", "-f", "{{.State.Running}}", &container]).trim(),
        "false"
    );
    c.heal(&reboot(true)).await.unwrap();
    assert_eq!(
        sh(&c, WORKER, "systemctl is-active kubelet").await.trim(),
        "active"
    );

    // The control plane: after its reboot the kubeconfig names the port the engine publishes
    // now (bring-up's export is redone, kind#148). A stand-in admin.conf: no kubeadm here.
    sh(&c, CONTROL_PLANE, "mkdir -p /etc/kubernetes && printf 'apiVersion: v1\\nclusters:\\n- cluster:\\n    server: https://control-plane:6443\\n  name: c\\n' > /etc/kubernetes/admin.conf").await;
    c.apply(&NodeOperation::NodeReboot(NodeReboot {
        node: CONTROL_PLANE.into(),
        stuck_until_power_cycle: false,
    }))
    .await
    .unwrap();
    let port = docker(&["port", &format!("{name}-{CONTROL_PLANE}"), "6443/tcp"]);
    let kubeconfig =
        std::fs::read_to_string(c.kubeconfig()).expect("kubeconfig exported after the reboot");
    assert!(
        kubeconfig.contains(&format!("server: https://{}", port.trim())),
        "{kubeconfig} vs {port}"
    );

    c.release(false).await.unwrap();
    env.assert_nothing_left(&name);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_concurrent_runs_of_one_scenario_on_one_engine_are_isolated() {
    let Some(env) = TierEnv::new("twins") else {
        return;
    };
    let (pa, pb, pc) = (
        env.provider(false),
        env.provider(false),
        env.provider(false),
    );
    let (da, db, dc) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    let input = env.input(false);
    let (a, b) = tokio::join!(pa.start(&input, da.path()), pb.start(&input, db.path()));
    let (a, b) = (a.expect("run A"), b.expect("run B"));
    assert_ne!(a.name(), b.name());
    let (na, nb) = (a.name().to_string(), b.name().to_string());

    // A fault in A is not in B.
    a.apply(&NodeOperation::KubeletStop(w())).await.unwrap();
    assert_eq!(
        sh(&b, WORKER, "systemctl is-active kubelet").await.trim(),
        "active"
    );

    // A third run of the scenario that fails its bring-up (its image is missing) removes only
    // what it created.
    let mut broken = input.clone();
    broken.node_image = "faultline-node:absent-from-this-engine".into();
    assert!(pc.start(&broken, dc.path()).await.is_err());
    // An engine network of another run is never shared.
    let ex = TestcontainersExecutor::connect().unwrap();
    let e = ex
        .docker(&DockerOp::NetworkCreate {
            name: format!("faultline-{na}"),
            labels: vec![],
        })
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("already exists"), "{e}");
    // Nor removed by a run that did not create it.
    ex.docker(&DockerOp::NetworkRemove {
        name: format!("faultline-{na}"),
    })
    .await
    .unwrap();
    ex.docker(&DockerOp::Remove {
        container: format!("{na}-{WORKER}"),
    })
    .await
    .unwrap();
    for n in [&na, &nb] {
        assert_eq!(
            docker(&[
                "inspect",
                "-f",
                "{{.State.Running}}",
                &format!("{n}-{WORKER}")
            ])
            .trim(),
            "true",
            "{n} intact"
        );
    }

    b.release(false).await.unwrap();
    env.assert_nothing_left(&nb);
    assert_eq!(
        sh(&a, WORKER, "systemctl is-active kubelet || true")
            .await
            .trim(),
        "inactive",
        "A still runs, fault and all"
    );
    a.release(false).await.unwrap();
    env.assert_nothing_left(&na);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_bring_up_reports_its_cause_first_and_leaves_no_evidence_of_nothing() {
    let Some(env) = TierEnv::new("broken") else {
        return;
    };
    let p = env.provider(false);

    // No such node image, no registry: the first line says what to do.
    let mut input = env.input(false);
    input.node_image = "faultline-node:absent-from-this-engine".into();
    let e = format!(
        "{:#}",
        p.start(&input, env.work.path())
            .await
            .err()
            .expect("no image")
    );
    let _ = std::fs::remove_dir_all(env.work.path().join("kind-images"));
    let first = e.lines().next().unwrap();
    assert!(
        first.contains("docker load") && first.contains("--node-image"),
        "{e}"
    );
    assert!(e.contains("no node container ran"), "{e}");
    assert!(
        !env.work.path().join("kind-logs").exists(),
        "no logs of containers that never ran"
    );

    // An image to load that the engine does not have: the cause first, and no empty tarball.
    let mut input = env.input(false);
    input.load_images = vec!["faultline-controller:absent".into()];
    let e = format!(
        "{:#}",
        p.start(&input, env.work.path())
            .await
            .err()
            .expect("no controller image")
    );
    assert!(
        e.lines()
            .next()
            .unwrap()
            .contains("docker save faultline-controller:absent: the image is not in"),
        "{e}"
    );
    let tars: Vec<_> = std::fs::read_dir(env.work.path().join("kind-images"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert!(tars.is_empty(), "no 0-byte tarball: {tars:?}");

    // A node that fails after its container ran: the logs of the containers that ran, only.
    let mut input = env.input(false);
    input.nodes[1].name = "worker-badname".into();
    let refusing =
        KindProvider::with_executor(env.options(false), || Hooked::refusing("worker-badname"));
    let e = format!(
        "{:#}",
        refusing
            .start(&input, env.work.path())
            .await
            .err()
            .expect("second node fails")
    );
    assert!(
        e.lines()
            .next()
            .unwrap()
            .contains("node container worker-badname"),
        "{e}"
    );
    assert!(e.contains("refused by this test"), "{e}");
    let logs = env.work.path().join("kind-logs");
    assert!(
        logs.join(format!("{CONTROL_PLANE}/console.log")).exists(),
        "{e}"
    );
    assert!(
        !logs.join("worker-badname").exists(),
        "no logs of the node that never ran"
    );
    assert!(
        !logs.join("cluster").exists(),
        "no cluster logs before kubeadm"
    );
    env.assert_nothing_left("fl-tier-broken");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_lib_modules_is_created_as_kind_creates_it() {
    let Some(env) = TierEnv::new("modules") else {
        return;
    };
    let missing = format!("/tmp/faultline-no-modules-{}", std::process::id());
    assert!(!std::path::Path::new(&missing).exists());
    // The same plan with another bind source: a host without /lib/modules.
    let m = missing.clone();
    let p =
        KindProvider::with_executor(env.options(false), move || Hooked::modules_from(m.clone()));
    let c = p
        .start(&env.input(false), env.work.path())
        .await
        .expect("bring-up without the bind source");
    assert_eq!(
        sh(&c, WORKER, "mountpoint /lib/modules").await.trim(),
        "/lib/modules is a mountpoint"
    );
    let name = c.name().to_string();
    c.release(false).await.unwrap();
    let _ = std::fs::remove_dir(&missing);
    env.assert_nothing_left(&name);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_provider_with_an_idle_cluster_tears_it_down_without_a_panic() {
    let Some(env) = TierEnv::new("drop") else {
        return;
    };
    let p = env.provider(true);
    let c = p
        .start(&env.input(false), env.work.path())
        .await
        .expect("bring-up");
    let name = c.name().to_string();
    c.release(false).await.unwrap();
    assert_eq!(p.idle_clusters(), 1, "kept for reuse");
    // From inside the runtime, as `faultline run` drops it at its end.
    drop(p);
    env.assert_nothing_left(&name);
    // And `shutdown`, which the runner now calls, tears down too.
    let p = env.provider(true);
    let c = p
        .start(&env.input(false), env.work.path())
        .await
        .expect("bring-up");
    let name = c.name().to_string();
    c.release(false).await.unwrap();
    p.shutdown().await.unwrap();
    env.assert_nothing_left(&name);
    tokio::time::sleep(Duration::from_millis(10)).await;
}
