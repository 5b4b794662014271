//! The Docker-engine tier's real cluster (docs/kind.md "A real cluster here"): the real node
//! image (`ci/node-image/build-real.sh`; FAULTLINE_KIND_REAL_NODE_IMAGE, else the newest local
//! one; `off`: skipped), a control plane and two workers through the provider's whole bring-up (kubeadm init,
//! the CNI, kubeadm join, an image built here loaded into every node's containerd), every node
//! Ready, a pod of that image Running on a worker on the pod network, then teardown with nothing
//! of the cluster left in the engine. Runs with FAULTLINE_DOCKER=1 (ci/docker-tier.sh).

mod common;

use common::{docker, TierEnv};
use faultline_faults::{MountHolder, NodeOperation, StaleDeviceMount, VolumeRef};
use faultline_kind::exec::docker::TestcontainersExecutor;
use faultline_kind::{ClusterPlanInput, KindCluster, KindOptions, KindProvider, NodeInput};
use std::time::Instant;

const APP_IMAGE: &str = "faultline-tier-app:1";

async fn kubectl(c: &KindCluster, args: &[&str], stdin: Option<&str>) -> String {
    let out = c
        .kubectl(args, stdin)
        .await
        .unwrap_or_else(|e| panic!("kubectl {args:?}: {e:#}"));
    assert!(
        out.success(),
        "kubectl {args:?}: exit {}: {}{}",
        out.code,
        out.stdout,
        out.stderr
    );
    out.stdout
}

/// A small image of our own: Debian's static busybox out of the node image, on nothing
/// (a local base: nothing is pulled).
fn build_app_image(node_image: &str) {
    let dockerfile = format!(
        "FROM {node_image} AS src\nFROM scratch\nCOPY --from=src /bin/busybox /bin/busybox\nENTRYPOINT [\"/bin/busybox\"]\nCMD [\"sleep\", \"3600\"]\n"
    );
    let mut child = std::process::Command::new("docker")
        .args(["build", "--quiet", "--tag", APP_IMAGE, "-"])
        .env("DOCKER_BUILDKIT", "0")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("docker build");
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(dockerfile.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "docker build {APP_IMAGE}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_cluster_forms_with_every_node_ready_and_a_local_image_running() {
    if std::env::var("FAULTLINE_DOCKER").as_deref() != Ok("1") {
        println!("SKIPPED: set FAULTLINE_DOCKER=1 (ci/docker-tier.sh does) to form a real cluster");
        return;
    }
    let engine = TestcontainersExecutor::connect().expect("engine");
    let node_image = match std::env::var("FAULTLINE_KIND_REAL_NODE_IMAGE")
        .ok()
        .filter(|i| !i.is_empty())
    {
        // ci/docker-tier.sh: no Go or a refused module, so no real node image.
        Some(i) if i == "off" => {
            println!(
                "SKIPPED: FAULTLINE_KIND_REAL_NODE_IMAGE=off (no real node image could be built)"
            );
            return;
        }
        Some(i) => i,
        None => engine
            .local_real_node_image()
            .await
            .expect("listing images")
            .expect(
                "no real node image in the engine: `bash ci/node-image/build-real.sh` builds it",
            ),
    };
    build_app_image(&node_image);
    let tier = TierEnv {
        label: "real".into(),
        work: common::EvidenceDir::new("tier-real"),
        state: tempfile::tempdir().unwrap(),
    };
    let provider = KindProvider::new(KindOptions {
        reuse: false,
        nodes_only: false,
        state_dir: Some(tier.state.path().to_path_buf()),
    });
    let input = ClusterPlanInput::new(
        "fl-tier-real",
        vec![
            NodeInput::control_plane("control-plane"),
            NodeInput::worker("worker-01"),
            NodeInput::worker("worker-02"),
        ],
    )
    .with_node_image(Some(&node_image))
    .with_images([APP_IMAGE]);
    assert_eq!(
        input.kubernetes_version, "v1.35.4",
        "from the tag {node_image}"
    );
    let started = Instant::now();
    let cluster = provider
        .start(&input, tier.work.path())
        .await
        .unwrap_or_else(|e| panic!("bring-up: {e:#}"));
    println!(
        "real cluster {} (1 control plane, 2 workers) up in {:.1} s with {node_image}",
        cluster.name(),
        started.elapsed().as_secs_f64()
    );

    let nodes = kubectl(
        &cluster,
        &[
            "get",
            "nodes",
            "-o",
            "jsonpath={range .items[*]}{.metadata.name}={.status.conditions[?(@.type==\"Ready\")].status} {.status.nodeInfo.kubeletVersion}{\"\\n\"}{end}",
        ],
        None,
    )
    .await;
    let mut lines: Vec<&str> = nodes.lines().collect();
    lines.sort();
    assert_eq!(
        lines,
        [
            "control-plane=True v1.35.4",
            "worker-01=True v1.35.4",
            "worker-02=True v1.35.4"
        ],
        "{nodes}"
    );

    let pod = format!(
        r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"app","namespace":"default"}},
"spec":{{"nodeSelector":{{"kubernetes.io/hostname":"worker-02"}},
"containers":[{{"name":"app","image":"{APP_IMAGE}","imagePullPolicy":"Never"}}]}}}}"#
    );
    kubectl(&cluster, &["apply", "-f", "-"], Some(&pod)).await;
    kubectl(
        &cluster,
        &["wait", "--for=condition=Ready", "pod/app", "--timeout=180s"],
        None,
    )
    .await;
    let got = kubectl(
        &cluster,
        &[
            "get",
            "pod",
            "app",
            "-o",
            "jsonpath={.status.phase} {.spec.nodeName} {.status.podIP}",
        ],
        None,
    )
    .await;
    let fields: Vec<&str> = got.split_whitespace().collect();
    assert_eq!(fields[..2], ["Running", "worker-02"], "{got}");
    assert!(
        fields.get(2).is_some_and(|ip| ip.starts_with("10.244.")),
        "a pod network address: {got}"
    );
    // The node's crictl (the logs on failure use it) sees the container through the CRI.
    let listed = common::sh(
        &cluster,
        "worker-02",
        "crictl ps --name app --state running -q",
    )
    .await;
    assert!(!listed.trim().is_empty(), "crictl lists the app container");
    // Nothing was pulled: every kube-system pod runs, Ready, from an image built here.
    kubectl(
        &cluster,
        &[
            "wait",
            "--for=condition=Ready",
            "pods",
            "--all",
            "-n",
            "kube-system",
            "--timeout=180s",
        ],
        None,
    )
    .await;
    let system = kubectl(
        &cluster,
        &[
            "get",
            "pods",
            "-n",
            "kube-system",
            "-o",
            "jsonpath={range .items[*]}{.metadata.name}={.status.phase}{\"\\n\"}{end}",
        ],
        None,
    )
    .await;
    for want in [
        "etcd-control-plane",
        "kube-apiserver-control-plane",
        "kube-proxy-",
        "faultline-cni-",
        "coredns-",
        "csi-hostpath-controller-",
        "csi-hostpath-node-",
    ] {
        assert!(
            system
                .lines()
                .any(|l| l.starts_with(want) && l.ends_with("=Running")),
            "no Running {want} in kube-system:\n{system}"
        );
    }

    csi_volume_on_a_real_kubelet(&cluster).await;

    let name = cluster.name().to_string();
    assert_eq!(cluster.release(false).await.expect("teardown"), None);
    provider.shutdown().await.expect("shutdown");
    docker(&["image", "rm", APP_IMAGE]);
    tier.assert_nothing_left(&name);
}

/// The CSI stack through the real kubelet: the registrar registers the driver with every node's
/// plugin manager (CSINode), a PVC is provisioned by the real external-provisioner, attached
/// through a VolumeAttachment by the real external-attacher, staged at the kubelet's
/// `globalmount` and published into the pod. Then the incident's staleDeviceMount: with another
/// reference to the globalmount, deleting the pod unpublishes but the kubelet refuses to unstage
/// and the volume stays attached; meanwhile a second PVC's pod on the same node mounts and runs;
/// healed, the first volume is unstaged and detached.
async fn csi_volume_on_a_real_kubelet(cluster: &KindCluster) {
    const DRIVER: &str = "hostpath.csi.faultline.dev";
    for node in ["control-plane", "worker-01", "worker-02"] {
        let mut drivers = String::new();
        for _ in 0..60 {
            drivers = kubectl(
                cluster,
                &[
                    "get",
                    "csinode",
                    node,
                    "-o",
                    "jsonpath={.spec.drivers[*].name}",
                ],
                None,
            )
            .await;
            if drivers.split_whitespace().any(|d| d == DRIVER) {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_secs(2)).await;
        }
        assert!(
            drivers.split_whitespace().any(|d| d == DRIVER),
            "{node}'s CSINode lists {drivers:?}, not {DRIVER}"
        );
    }
    let manifest = format!(
        r#"{{"apiVersion":"v1","kind":"List","items":[
{{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{{"name":"data","namespace":"default"}},
 "spec":{{"accessModes":["ReadWriteOnce"],"resources":{{"requests":{{"storage":"1Mi"}}}}}}}},
{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"writer","namespace":"default"}},
 "spec":{{"nodeSelector":{{"kubernetes.io/hostname":"worker-01"}},
  "containers":[{{"name":"w","image":"{APP_IMAGE}","imagePullPolicy":"Never",
   "command":["/bin/busybox","sh","-c","echo written > /data/file && sleep 3600"],
   "volumeMounts":[{{"name":"data","mountPath":"/data"}}]}}],
  "volumes":[{{"name":"data","persistentVolumeClaim":{{"claimName":"data"}}}}]}}}}]}}"#
    );
    kubectl(cluster, &["apply", "-f", "-"], Some(&manifest)).await;
    kubectl(
        cluster,
        &[
            "wait",
            "--for=condition=Ready",
            "pod/writer",
            "--timeout=180s",
        ],
        None,
    )
    .await;
    let pv = kubectl(
        cluster,
        &["get", "pvc", "data", "-o", "jsonpath={.spec.volumeName}"],
        None,
    )
    .await;
    assert!(pv.starts_with("pvc-"), "provisioned: {pv:?}");
    let attached = kubectl(
        cluster,
        &[
            "get",
            "volumeattachments",
            "-o",
            "jsonpath={range .items[*]}{.spec.source.persistentVolumeName} {.spec.nodeName} {.status.attached}{\"\\n\"}{end}",
        ],
        None,
    )
    .await;
    assert!(
        attached
            .lines()
            .any(|l| l == format!("{pv} worker-01 true")),
        "a VolumeAttachment of {pv} to worker-01, attached:\n{attached}"
    );
    let globalmount = format!("/var/lib/kubelet/plugins/kubernetes.io/csi/{DRIVER}/");
    let mounts = common::sh(cluster, "worker-01", "cat /proc/self/mounts").await;
    assert!(
        mounts
            .lines()
            .any(|l| l.contains(&globalmount) && l.contains("/globalmount ")),
        "the kubelet staged the volume at its globalmount:\n{mounts}"
    );
    assert!(
        mounts
            .lines()
            .any(|l| l.contains("/volumes/kubernetes.io~csi/") && l.contains(&pv)),
        "and published it into the pod:\n{mounts}"
    );
    let data = common::sh(cluster, "worker-01", "cat /var/lib/csi-hostpath/*/file").await;
    assert_eq!(data.trim(), "written");
    // staleDeviceMount (the incident's fault) on a real kubelet: another reference to the
    // globalmount, then the pod goes. The kubelet unpublishes, but its UnmountDevice finds the
    // reference (GetDeviceMountRefs) and fails, so the volume stays in use and attached.
    let stale = NodeOperation::StaleDeviceMount(StaleDeviceMount {
        node: "worker-01".into(),
        volume: VolumeRef::Pvc("default/data".into()),
        held_by: MountHolder::Kubelet,
        other_volumes: Default::default(),
    });
    cluster.apply(&stale).await.expect("staleDeviceMount");
    kubectl(
        cluster,
        &["delete", "pod", "writer", "--wait=true", "--timeout=120s"],
        None,
    )
    .await;
    let refused = "is still mounted by other references";
    let mut log = String::new();
    for _ in 0..60 {
        log = common::sh(
            cluster,
            "worker-01",
            &format!("journalctl -u kubelet --no-pager | grep '{refused}' | tail -1"),
        )
        .await;
        if !log.trim().is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    }
    assert!(
        log.contains("GetDeviceMountRefs check failed"),
        "the kubelet's UnmountDevice refused: {log:?}"
    );
    println!("kubelet with a stale device mount: {}", log.trim());
    let attached_now = kubectl(
        cluster,
        &[
            "get",
            "volumeattachments",
            "-o",
            "jsonpath={range .items[*]}{.spec.source.persistentVolumeName} {.status.attached}{\"\\n\"}{end}",
        ],
        None,
    )
    .await;
    assert!(
        attached_now.lines().any(|l| l == format!("{pv} true")),
        "still attached while the device mount is held:\n{attached_now}"
    );
    another_volume_mounts_beside_the_stale_one(cluster, &pv).await;
    // Healed: the next UnmountDevice succeeds, the volume is unstaged and detached.
    cluster.heal(&stale).await.expect("heal staleDeviceMount");
    let mut left = String::new();
    for _ in 0..90 {
        left = common::sh(
            cluster,
            "worker-01",
            "grep -c kubernetes.io/csi /proc/self/mounts || true",
        )
        .await;
        if left.trim() == "0" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    }
    assert_eq!(
        left.trim(),
        "0",
        "unstaged once the stale reference is gone"
    );
    let mut vas = String::new();
    for _ in 0..60 {
        vas = kubectl(
            cluster,
            &[
                "get",
                "volumeattachments",
                "-o",
                "jsonpath={.items[*].spec.source.persistentVolumeName}",
            ],
            None,
        )
        .await;
        if !vas.contains(&pv) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    }
    assert!(!vas.contains(&pv), "detached: VolumeAttachments {vas:?}");
}

/// Issue #33 item 7, settled on the real kubelet: while `stale_pv`'s UnmountDevice keeps failing
/// (GetDeviceMountRefs), a second PVC's pod pinned to the same node is staged, published and
/// Running well within the kubelet's 2 min CSI deadline, with no FailedMount event: upstream keys
/// volume operations per volume (nestedpendingoperations.go), so the stale device holds back only
/// its own volume. Deleted again, the second volume is unstaged while the stale one stays.
async fn another_volume_mounts_beside_the_stale_one(cluster: &KindCluster, stale_pv: &str) {
    // Under the 2 min a MountDevice hanging to the CSI deadline would take (the sim's old
    // default), with room for provisioning and attaching on a loaded 2-core machine.
    const BOUND_S: u64 = 100;
    let manifest = format!(
        r#"{{"apiVersion":"v1","kind":"List","items":[
{{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{{"name":"data2","namespace":"default"}},
 "spec":{{"accessModes":["ReadWriteOnce"],"resources":{{"requests":{{"storage":"1Mi"}}}}}}}},
{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"writer2","namespace":"default"}},
 "spec":{{"nodeSelector":{{"kubernetes.io/hostname":"worker-01"}},
  "containers":[{{"name":"w","image":"{APP_IMAGE}","imagePullPolicy":"Never",
   "command":["/bin/busybox","sh","-c","echo second > /data/file && sleep 3600"],
   "volumeMounts":[{{"name":"data","mountPath":"/data"}}]}}],
  "volumes":[{{"name":"data","persistentVolumeClaim":{{"claimName":"data2"}}}}]}}}}]}}"#
    );
    let started = Instant::now();
    kubectl(cluster, &["apply", "-f", "-"], Some(&manifest)).await;
    kubectl(
        cluster,
        &[
            "wait",
            "--for=condition=Ready",
            "pod/writer2",
            &format!("--timeout={BOUND_S}s"),
        ],
        None,
    )
    .await;
    let ready_s = started.elapsed().as_secs_f64();
    println!("second volume's pod on the stale mount's node Ready in {ready_s:.1} s");
    assert!(ready_s < BOUND_S as f64, "Ready in {ready_s:.1} s");
    let pv2 = kubectl(
        cluster,
        &["get", "pvc", "data2", "-o", "jsonpath={.spec.volumeName}"],
        None,
    )
    .await;
    assert!(
        pv2.starts_with("pvc-") && pv2 != stale_pv,
        "provisioned: {pv2:?}"
    );
    // The kubelet's own account: the second volume's stage and publish succeeded, and the
    // stale volume's UnmountDevice failed around them.
    let journal = common::sh(
        cluster,
        "worker-01",
        &format!(
            "journalctl -u kubelet --no-pager -o short-precise | grep -E '{pv2}|GetDeviceMountRefs' | grep -E 'MountDevice|SetUp|GetDeviceMountRefs|FailedMount' || true"
        ),
    )
    .await;
    println!("kubelet lines of both volumes:\n{journal}");
    assert!(
        journal
            .lines()
            .any(|l| l.contains("MountVolume.MountDevice succeeded") && l.contains(&pv2)),
        "the second volume's MountDevice succeeded:\n{journal}"
    );
    assert!(
        !journal
            .lines()
            .any(|l| l.contains(&pv2) && l.contains("DeadlineExceeded")),
        "no call of the second volume ran to the CSI deadline:\n{journal}"
    );
    // And the stale volume's UnmountDevice fails again after that MountDevice: it retries on
    // its own backoff (at most 2m2s) whatever the other volume does.
    let mut after = String::new();
    for _ in 0..70 {
        after = common::sh(
            cluster,
            "worker-01",
            &format!(
                "journalctl -u kubelet --no-pager -o short-precise | grep -E 'MountDevice succeeded.*{pv2}|GetDeviceMountRefs' | sed -n '/MountDevice succeeded/,$p' | grep GetDeviceMountRefs | head -1 || true"
            ),
        )
        .await;
        if !after.trim().is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    }
    println!(
        "the stale volume refused again after the second one mounted: {}",
        after.trim()
    );
    assert!(
        after.contains("GetDeviceMountRefs check failed") && after.contains(stale_pv),
        "a refusal after the second volume's MountDevice: {after:?}"
    );
    let events = kubectl(
        cluster,
        &[
            "get",
            "events",
            "--field-selector",
            "involvedObject.name=writer2",
            "-o",
            "jsonpath={range .items[*]}{.reason}{\"\\n\"}{end}",
        ],
        None,
    )
    .await;
    assert!(
        !events.lines().any(|r| r == "FailedMount"),
        "no FailedMount for the second pod: {events:?}"
    );
    let data = common::sh(
        cluster,
        "worker-01",
        &format!("cat /var/lib/csi-hostpath/{pv2}/file"),
    )
    .await;
    assert_eq!(data.trim(), "second");
    // The stale volume is still refused meanwhile: staged and attached.
    let mounts = common::sh(cluster, "worker-01", "cat /proc/self/mounts").await;
    // The kubelet's globalmount directory is named by the SHA-256 of the volume handle (the PV
    // name for this driver).
    let stale_dir = common::sh(
        cluster,
        "worker-01",
        &format!("printf %s {stale_pv} | sha256sum | cut -d' ' -f1"),
    )
    .await;
    let globalmounts: Vec<&str> = mounts
        .lines()
        .filter(|l| l.contains("/globalmount "))
        .collect();
    assert_eq!(globalmounts.len(), 2, "both volumes staged:\n{mounts}");
    assert!(
        globalmounts
            .iter()
            .any(|l| l.contains(&format!("/{}/globalmount ", stale_dir.trim()))),
        "the stale volume {stale_pv} still staged:\n{mounts}"
    );
    let attached = kubectl(
        cluster,
        &[
            "get",
            "volumeattachments",
            "-o",
            "jsonpath={range .items[*]}{.spec.source.persistentVolumeName} {.status.attached}{\"\\n\"}{end}",
        ],
        None,
    )
    .await;
    for pv in [stale_pv, pv2.as_str()] {
        assert!(
            attached.lines().any(|l| l == format!("{pv} true")),
            "{pv} attached:\n{attached}"
        );
    }
    // Its pod deleted, the second volume is unstaged (its UnmountDevice is not held back by the
    // stale one's), and only the stale globalmount is left.
    kubectl(
        cluster,
        &["delete", "pod", "writer2", "--wait=true", "--timeout=120s"],
        None,
    )
    .await;
    let mut left = String::new();
    for _ in 0..60 {
        left = common::sh(
            cluster,
            "worker-01",
            "grep -c '/globalmount ' /proc/self/mounts || true",
        )
        .await;
        if left.trim() == "1" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    }
    assert_eq!(
        left.trim(),
        "1",
        "the second volume unstaged, the stale one not"
    );
    let unstaged = common::sh(
        cluster,
        "worker-01",
        &format!(
            "journalctl -u kubelet --no-pager -o short-precise | grep -E 'UnmountDevice succeeded' | grep '{pv2}' || true"
        ),
    )
    .await;
    println!("second volume unstaged: {}", unstaged.trim());
    assert!(
        !unstaged.trim().is_empty(),
        "UnmountDevice succeeded for {pv2}"
    );
    kubectl(cluster, &["delete", "pvc", "data2", "--wait=false"], None).await;
}
