//! Every node operation of the fault catalogue as inject/heal steps, for kind nodes (node
//! scripts through `docker exec`, engine operations on the node's container) and for existing
//! clusters (the same node scripts through the privileged node agent, or refused with the
//! reason the catalogue declares: `faultline_faults::Support`).
//!
//! Heal steps are idempotent: they may run after a partial inject, twice, or after a reboot.

use crate::plan::longhorn::{
    CSI_PLUGIN_DAEMONSET, CSI_PLUGIN_LABEL, DRIVER, NAMESPACE as LONGHORN_NS,
};
use crate::plan::{DockerOp, KindNames, Step};
use crate::shell::quote;
use crate::versions;
use faultline_faults::{NodeOperation, Provider, Support, VolumeRef};

/// Where the plan will run.
#[derive(Clone, Debug, PartialEq)]
pub enum Flavour {
    Kind(KindNames),
    Existing,
}

impl Flavour {
    /// The catalogue's name for this provider, whose declared support the plan follows.
    pub fn provider(&self) -> Provider {
        match self {
            Flavour::Kind(_) => Provider::Kind,
            Flavour::Existing => Provider::Existing,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct FaultContext {
    pub flavour: Flavour,
    /// The cluster runs Longhorn (CSI faults need it).
    pub longhorn: bool,
    /// The target node has hungNfs or ioErrors active: a reboot then hangs until power cycled
    /// (as in the incident and the sim).
    pub stuck_io_on_node: bool,
    /// kind: what bring-up does once the target node's container has started
    /// ([`crate::plan::cluster::ClusterPlan::boot_steps`]), redone after a reboot or power cycle.
    pub after_boot: Vec<Step>,
}

/// A CSI node plugin the plugin faults act on: its DaemonSet and the driver it registers.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CsiPlugin {
    pub namespace: &'static str,
    pub daemonset: &'static str,
    /// The label selector of its pods.
    pub selector: &'static str,
    pub driver: &'static str,
}

/// Longhorn's node plugin.
pub const LONGHORN_CSI_PLUGIN: CsiPlugin = CsiPlugin {
    namespace: LONGHORN_NS,
    daemonset: CSI_PLUGIN_DAEMONSET,
    selector: CSI_PLUGIN_LABEL,
    driver: DRIVER,
};

/// The real node image's hostpath driver (ci/node-image/real/kind/manifests/default-storage.yaml),
/// what a kind cluster without Longhorn has (and `--longhorn-stand-in` names `longhorn`).
pub const NODE_IMAGE_CSI_PLUGIN: CsiPlugin = CsiPlugin {
    namespace: "kube-system",
    daemonset: "csi-hostpath-node",
    selector: "app=csi-hostpath-node",
    driver: crate::plan::container::NODE_IMAGE_CSI_DRIVER,
};

impl FaultContext {
    /// The node plugin the CSI faults act on: Longhorn's, else (kind only) the node image's;
    /// an existing cluster without Longhorn has no plugin we know of.
    fn csi_plugin(&self) -> Option<CsiPlugin> {
        match (&self.flavour, self.longhorn) {
            (_, true) => Some(LONGHORN_CSI_PLUGIN),
            (Flavour::Kind(_), false) => Some(NODE_IMAGE_CSI_PLUGIN),
            (Flavour::Existing, false) => None,
        }
    }
}

/// The steps of one operation.
#[derive(Clone, Debug, PartialEq)]
pub struct FaultPlan {
    pub key: &'static str,
    pub inject: Vec<Step>,
    /// Empty for one-shot operations.
    pub heal: Vec<Step>,
    /// How faithful this is to the catalog's meaning, in one sentence.
    pub fidelity: String,
}

/// An operation this provider cannot carry out, and why.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("`{key}` is unsupported here: {reason}")]
pub struct Unsupported {
    pub key: &'static str,
    pub reason: String,
}

pub const STALE_DIR: &str = "/var/lib/faultline/stale";
pub const STATE_DIR: &str = "/var/lib/faultline";
pub const CSI_DOWN_LABEL: &str = "faultline.dev/csi-plugin-down";
pub const STALE_NAMESPACE: &str = "faultline-stale";
pub const STALE_NODE_LABEL: &str = "faultline.dev/stale-node";
pub const PROBER_COMMENT: &str = "faultline-prober-broken";
pub const NFS_COMMENT: &str = "faultline-hung-nfs";
pub const IO_ERRORS_FILE: &str = "/var/lib/faultline/io-errors";
/// Grace of a reboot (`docker restart --time`): systemd's shutdown gets this long.
pub const REBOOT_GRACE_SECS: u32 = 30;

/// A Kubernetes object name we put into shell scripts: DNS subdomain characters only.
pub fn check_name(what: &str, s: &str) -> Result<(), String> {
    let ok = !s.is_empty()
        && s.len() <= 253
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
        && s.starts_with(|c: char| c.is_ascii_alphanumeric())
        && s.ends_with(|c: char| c.is_ascii_alphanumeric());
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{what} `{s}` is not a valid Kubernetes name (lower-case letters, digits, '-', '.')"
        ))
    }
}

/// A precondition of this cluster that `op` does not meet (Longhorn, names, counts).
fn unsupported(op: &NodeOperation, reason: impl Into<String>) -> Unsupported {
    Unsupported {
        key: op.key(),
        reason: reason.into(),
    }
}

/// The refusal the catalogue declares for `op` on `provider`, with its reason. Called where the
/// plan cannot do `op`; the conformance test fails if the catalogue says it is implemented.
fn declared_unsupported(op: &NodeOperation, provider: Provider) -> Unsupported {
    match op.support(provider) {
        Support::Unsupported(why) => unsupported(op, why),
        Support::Implemented => unsupported(
            op,
            format!("the plan refuses it, but the fault catalogue declares it implemented by {provider}"),
        ),
    }
}

fn wait_kubelet_active(node: &str) -> Step {
    Step::node(
        format!("kubelet on {node} is active"),
        node,
        "systemctl is-active --quiet kubelet",
    )
    .retry(2, 300)
}

fn wait_csi_plugin_ready(node: &str, csi: CsiPlugin) -> Step {
    Step::kubectl_owned(
        format!("the CSI node plugin on {node} is Ready"),
        vec![
            "-n".into(),
            csi.namespace.into(),
            "wait".into(),
            "--for=condition=Ready".into(),
            "pod".into(),
            "-l".into(),
            csi.selector.into(),
            format!("--field-selector=spec.nodeName={node}"),
            "--timeout=60s".into(),
        ],
    )
    .retry(5, 300)
}

/// The directory name the stale mount of `v` lives under (stable across inject and heal, so
/// heal needs no API lookup: the PVC may be gone by then).
fn stale_key(v: &VolumeRef) -> String {
    let raw = match v {
        VolumeRef::Pvc(p) => format!("pvc-ref-{}", p.replace('/', "-")),
        VolumeRef::Pv(p) | VolumeRef::DeletedPv(p) => p.clone(),
    };
    raw
}

/// The registration socket node-driver-registrar creates for `driver` in the kubelet's plugin
/// registry, and where the fault keeps it: a name starting with a dot, which the plugin watcher
/// ignores.
fn registration_paths(driver: &str) -> (String, String) {
    let dir = "/var/lib/kubelet/plugins_registry";
    (
        format!("{dir}/{driver}-reg.sock"),
        format!("{dir}/.faultline-{driver}-reg.sock"),
    )
}

fn iptables_rule_script(op: &str, spec: &str) -> String {
    // -C checks, -I inserts first: insert once; delete every copy.
    match op {
        "add" => format!("iptables -C OUTPUT {spec} 2>/dev/null || iptables -I OUTPUT 1 {spec}"),
        _ => format!("while iptables -D OUTPUT {spec} 2>/dev/null; do :; done"),
    }
}

fn prober_specs(flavour: &Flavour) -> Vec<String> {
    // Kubelet probes are new connections from the node's root network namespace to pod IPs,
    // leaving through the host side of the pods' veth pairs. Replies to pod-initiated
    // connections are ESTABLISHED and pass.
    let ifaces: &[&str] = match flavour {
        Flavour::Kind(_) => &["veth+"],
        // Common CNIs on real clusters name their host-side interfaces differently.
        Flavour::Existing => &["veth+", "cali+", "lxc+"],
    };
    ifaces
        .iter()
        .map(|i| format!("-o {i} -p tcp -m conntrack --ctstate NEW -m comment --comment {PROBER_COMMENT} -j DROP"))
        .collect()
}

fn nfs_specs() -> Vec<String> {
    ["tcp", "udp"]
        .iter()
        .map(|p| format!("-p {p} --dport 2049 -m comment --comment {NFS_COMMENT} -j DROP"))
        .collect()
}

fn io_errors_inject() -> String {
    format!(
        "set -eu\nmkdir -p {STATE_DIR}\ntouch {IO_ERRORS_FILE}\n\
         for d in $(iscsiadm -m session -P 3 2>/dev/null | awk '/Attached scsi disk/ {{print $4}}'); do\n  \
           echo offline > /sys/block/$d/device/state\n  grep -qx \"$d\" {IO_ERRORS_FILE} || echo \"$d\" >> {IO_ERRORS_FILE}\ndone\n\
         if [ -s {IO_ERRORS_FILE} ]; then echo \"offline: $(tr '\\n' ' ' < {IO_ERRORS_FILE})\"; \
         else echo 'no iSCSI disks attached on this node yet: only a later reboot is affected (it hangs until power cycled)'; fi"
    )
}

fn io_errors_heal() -> String {
    format!(
        "if [ -f {IO_ERRORS_FILE} ]; then\n  while read -r d; do [ -e /sys/block/$d/device/state ] && echo running > /sys/block/$d/device/state || true; done < {IO_ERRORS_FILE}\n  rm -f {IO_ERRORS_FILE}\nfi"
    )
}

fn stale_pods_manifest(node: &str, count: u32) -> String {
    let mut docs = vec![format!(
        "apiVersion: v1
kind: Namespace
metadata:
  name: {STALE_NAMESPACE}
  labels:
    app.kubernetes.io/managed-by: faultline
"
    )];
    for i in 0..count {
        docs.push(format!(
            "apiVersion: v1
kind: Pod
metadata:
  name: stale-{node}-{i}
  namespace: {STALE_NAMESPACE}
  labels:
    {STALE_NODE_LABEL}: {node}
spec:
  nodeName: {node}
  restartPolicy: Never
  terminationGracePeriodSeconds: 0
  containers:
  - name: snapshot
    image: {img}
    command: [\"sh\", \"-c\", \"until [ -e /data/pin ]; do sleep 1; done; exit 1\"]
    volumeMounts:
    - name: faultline-stale
      mountPath: /data
  volumes:
  - name: faultline-stale
    emptyDir: {{}}
",
            img = versions::STALE_POD_IMAGE
        ));
    }
    docs.join("---\n")
}

/// The plan of one operation.
pub fn plan_fault(op: &NodeOperation, ctx: &FaultContext) -> Result<FaultPlan, Unsupported> {
    let kind = match &ctx.flavour {
        Flavour::Kind(n) => Some(n),
        Flavour::Existing => None,
    };
    let refused = || declared_unsupported(op, ctx.flavour.provider());
    if let Some(node) = op.node() {
        check_name("node", node).map_err(|e| unsupported(op, e))?;
    }
    let needs_longhorn = || {
        if ctx.longhorn {
            Ok(())
        } else {
            Err(unsupported(op, "it needs Longhorn (`storage: longhorn`)"))
        }
    };
    let plan = |inject: Vec<Step>, heal: Vec<Step>, fidelity: &str| FaultPlan {
        key: op.key(),
        inject,
        heal,
        fidelity: fidelity.into(),
    };
    Ok(match op {
        NodeOperation::StaleDeviceMount(s) => {
            // Longhorn's driver, else the real node image's CSI driver (its volume handles are
            // PV names too); a cluster with neither has no globalmount and the inject says so.
            let driver = if ctx.longhorn {
                DRIVER
            } else {
                crate::plan::container::NODE_IMAGE_CSI_DRIVER
            };
            let n = &s.node;
            let mut inject = vec![];
            let pv_expr = match &s.volume {
                VolumeRef::Pvc(r) => {
                    let (ns, name) = r.split_once('/').unwrap_or(("default", r.as_str()));
                    check_name("namespace", ns).map_err(|e| unsupported(op, e))?;
                    check_name("PVC", name).map_err(|e| unsupported(op, e))?;
                    inject.push(
                        Step::kubectl_owned(
                            format!("the PV bound to PVC {ns}/{name}"),
                            vec![
                                "-n".into(),
                                ns.into(),
                                "get".into(),
                                "pvc".into(),
                                name.into(),
                                "-o".into(),
                                "jsonpath={.spec.volumeName}".into(),
                            ],
                        )
                        .capture("pv"),
                    );
                    "{{pv}}".to_string()
                }
                VolumeRef::Pv(p) | VolumeRef::DeletedPv(p) => {
                    check_name("PV", p).map_err(|e| unsupported(op, e))?;
                    p.clone()
                }
            };
            let key = stale_key(&s.volume);
            let hold = format!("{STALE_DIR}/{key}");
            let root = format!("/var/lib/kubelet/plugins/kubernetes.io/csi/{driver}");
            inject.push(Step::node(
                format!("bind-mount the globalmount of {pv_expr} on {n}, so UnmountDevice finds another reference"),
                n,
                format!(
                    "set -eu\npv={pv}\nroot={root}\ngm=\n\
                     for f in \"$root\"/*/vol_data.json; do\n  [ -e \"$f\" ] || continue\n  \
                       if grep -q \"\\\"volumeHandle\\\":\\\"$pv\\\"\" \"$f\"; then gm=\"$(dirname \"$f\")/globalmount\"; fi\ndone\n\
                     if [ -z \"$gm\" ]; then set -- $(printf %s \"$pv\" | sha256sum); gm=\"$root/$1/globalmount\"; fi\n\
                     mountpoint -q \"$gm\" || {{ echo \"no device mount of $pv on this node ($gm): run a pod that uses the volume on this node first\" >&2; exit 1; }}\n\
                     mkdir -p {hold}\nmountpoint -q {hold} || mount --bind \"$gm\" {hold}\necho \"$gm is also mounted at {hold}\"",
                    pv = quote(&pv_expr),
                ),
            ));
            let heal = vec![Step::node(
                format!("remove the stale reference to {pv_expr} on {n}"),
                n,
                format!("if mountpoint -q {hold}; then umount {hold}; fi\nrmdir {hold} 2>/dev/null || true"),
            )];
            let mut fidelity = "real kubelet behaviour: the globalmount has another mount reference, so GetDeviceMountRefs fails UnmountDevice \
                 (for deletedPV the mount is made while the PV exists; deleting the workload and PV is the scenario's steps)"
                .to_string();
            // The sim-only accounts of the effect on other volumes: a real kubelet keys its
            // operations per volume, so here the node's other volumes mount normally.
            if !s.other_volumes.is_upstream() {
                fidelity.push_str(&format!(
                    "; `otherVolumes: {}` is sim only: the real kubelet holds back only this volume's operations",
                    s.other_volumes.name()
                ));
            }
            plan(inject, heal, &fidelity)
        }
        NodeOperation::CsiPluginDown(t) => {
            let Some(csi) = ctx.csi_plugin() else {
                return Err(unsupported(op, "it needs Longhorn (`storage: longhorn`)"));
            };
            let (ns, daemonset, selector, driver) =
                (csi.namespace, csi.daemonset, csi.selector, csi.driver);
            let n = &t.node;
            let patch = format!(
                r#"{{"spec":{{"template":{{"spec":{{"affinity":{{"nodeAffinity":{{"requiredDuringSchedulingIgnoredDuringExecution":{{"nodeSelectorTerms":[{{"matchExpressions":[{{"key":"{CSI_DOWN_LABEL}","operator":"DoesNotExist"}}]}}]}}}}}}}}}}}}}}"#
            );
            let inject = vec![
                Step::kubectl_owned(
                    format!("keep {daemonset} off nodes labelled {CSI_DOWN_LABEL} (idempotent)"),
                    vec![
                        "-n".into(),
                        ns.into(),
                        "patch".into(),
                        "daemonset".into(),
                        daemonset.into(),
                        "--type=merge".into(),
                        "-p".into(),
                        patch,
                    ],
                ),
                Step::kubectl_owned(
                    format!("exclude {n} from the CSI plugin DaemonSet"),
                    vec![
                        "label".into(),
                        "node".into(),
                        n.clone(),
                        format!("{CSI_DOWN_LABEL}=true"),
                        "--overwrite".into(),
                    ],
                ),
                // Not `kubectl wait --for=delete -l`: it fails when nothing matches
                // (kubernetes/kubernetes#83242).
                Step::kubectl_owned(
                    format!(
                        "the CSI plugin pod on {n} is gone (the registrar unregisters {driver})"
                    ),
                    vec![
                        "-n".into(),
                        ns.into(),
                        "get".into(),
                        "pods".into(),
                        "-l".into(),
                        selector.into(),
                        format!("--field-selector=spec.nodeName={n}"),
                        "-o".into(),
                        "name".into(),
                    ],
                )
                .expect_empty_stdout()
                .retry(5, 300),
            ];
            let heal = vec![
                Step::kubectl_owned(
                    format!("let the CSI plugin DaemonSet back onto {n}"),
                    vec![
                        "label".into(),
                        "node".into(),
                        n.clone(),
                        format!("{CSI_DOWN_LABEL}-"),
                    ],
                )
                .ignore_failure(),
                wait_csi_plugin_ready(n, csi),
            ];
            plan(
                inject,
                heal,
                &format!(
                    "the plugin pod is removed from the node, so the driver is unregistered there (`driver name {driver} not \
                     found in the list of registered CSI drivers`); the first inject changes the DaemonSet's pod template, which rolls \
                     the plugin once on every node"
                ),
            )
        }
        NodeOperation::CsiPluginRestart(t) => {
            let Some(csi) = ctx.csi_plugin() else {
                return Err(unsupported(op, "it needs Longhorn (`storage: longhorn`)"));
            };
            let n = &t.node;
            let inject = vec![
                Step::kubectl_owned(
                    format!("delete the CSI plugin pod on {n}"),
                    vec![
                        "-n".into(),
                        csi.namespace.into(),
                        "delete".into(),
                        "pod".into(),
                        "-l".into(),
                        csi.selector.into(),
                        format!("--field-selector=spec.nodeName={n}"),
                        "--wait=true".into(),
                        "--timeout=120s".into(),
                    ],
                ),
                wait_csi_plugin_ready(n, csi),
            ];
            plan(
                inject,
                vec![],
                "the runbook's option 2, as it is done on a real cluster",
            )
        }
        NodeOperation::CsiDriverUnregistered(d) => {
            if d.driver == DRIVER {
                needs_longhorn()?;
            }
            check_name("CSI driver", &d.driver).map_err(|e| unsupported(op, e))?;
            let n = &d.node;
            let driver = &d.driver;
            let (sock, held) = registration_paths(driver);
            let inject = vec![
                Step::node(
                    format!("remove {driver}'s registration socket on {n} (kept under a dot name the plugin watcher ignores)"),
                    n,
                    format!(
                        "set -eu\nif [ -S {sock} ]; then\n  ln -f {sock} {held}\n  rm {sock}\n  echo 'removed {sock}'\n\
                         elif [ -S {held} ]; then\n  echo 'already removed'\n\
                         else\n  echo 'no registration socket {sock}: does the node-driver-registrar of {driver} run on this node?' >&2\n  exit 1\nfi"
                    ),
                ),
                Step::kubectl_owned(
                    format!("{driver} is gone from {n}'s CSINode (DeRegisterPlugin)"),
                    vec![
                        "get".into(),
                        "csinode".into(),
                        n.clone(),
                        "-o".into(),
                        format!("jsonpath={{.spec.drivers[?(@.name==\"{driver}\")].name}}"),
                    ],
                )
                .expect_empty_stdout()
                .retry(2, 60),
            ];
            let heal = vec![Step::node(
                format!("put {driver}'s registration socket back on {n} (the plugin watcher registers it)"),
                n,
                format!("if [ -S {held} ] && [ ! -e {sock} ]; then ln {held} {sock}; fi\nrm -f {held}"),
            )];
            plan(
                inject,
                heal,
                "the kubelet's plugin watcher sees the registration socket removed and deregisters the driver (CSINode loses it) while \
                 the plugin and its registrar keep running; the socket is a hard link kept under a dot name, so the heal's new link \
                 is the create event that registers it again. A registrar that restarts meanwhile registers the driver by itself",
            )
        }
        NodeOperation::KubeletWorkersSaturated(k) => {
            let n = &k.node;
            if k.stale_pods == 0 || k.stale_pods > 200 {
                return Err(unsupported(
                    op,
                    format!("stalePods must be 1..=200, not {}", k.stale_pods),
                ));
            }
            let sel = format!("{STALE_NODE_LABEL}={n}");
            let inject = vec![
                Step::apply(format!("{} pods pinned to {n} whose emptyDir will not clean up", k.stale_pods), stale_pods_manifest(n, k.stale_pods)),
                Step::kubectl_owned(
                    format!("the stale pods on {n} run"),
                    vec!["-n".into(), STALE_NAMESPACE.into(), "wait".into(), "--for=condition=Ready".into(), "pod".into(), "-l".into(), sel.clone(), "--timeout=60s".into()],
                )
                .retry(5, 600),
                Step::node(
                    format!("pin a mount inside each stale pod's emptyDir on {n} (teardown then fails with EBUSY)"),
                    n,
                    format!(
                        "set -eu\nc=0\nfor d in /var/lib/kubelet/pods/*/volumes/kubernetes.io~empty-dir/faultline-stale; do\n  [ -d \"$d\" ] || continue\n  \
                         mkdir -p \"$d/pin\"\n  mountpoint -q \"$d/pin\" || mount -t tmpfs faultline-stale \"$d/pin\"\n  c=$((c+1))\ndone\n\
                         [ \"$c\" -ge {want} ] || {{ echo \"pinned $c stale pod volumes, expected {want}\" >&2; exit 1; }}",
                        want = k.stale_pods
                    ),
                ),
                Step::kubectl_owned(
                    format!("the stale pods on {n} have terminated (Failed) and keep their volumes"),
                    vec![
                        "-n".into(),
                        STALE_NAMESPACE.into(),
                        "wait".into(),
                        "--for=jsonpath={.status.phase}=Failed".into(),
                        "pod".into(),
                        "-l".into(),
                        sel.clone(),
                        "--timeout=60s".into(),
                    ],
                )
                .retry(5, 300),
            ];
            let heal = vec![
                Step::node(
                    format!("unpin the stale pods' volumes on {n}"),
                    n,
                    "awk '$1==\"faultline-stale\" {print $2}' /proc/mounts | while read -r m; do umount \"$m\" || true; done",
                ),
                Step::kubectl_owned(
                    format!("delete the stale pods on {n}"),
                    vec!["-n".into(), STALE_NAMESPACE.into(), "delete".into(), "pod".into(), "-l".into(), sel, "--ignore-not-found".into(), "--wait=false".into()],
                ),
            ];
            plan(
                inject,
                heal,
                "terminated pods whose volumes cannot be cleaned up (`Pod is terminated, but some volumes have not been cleaned up`); \
                 how much they slow the real kubelet's other pods is the real kubelet's business",
            )
        }
        NodeOperation::KubeletStop(t) => {
            if kind.is_none() {
                return Err(refused());
            }
            let n = &t.node;
            plan(
                vec![Step::node(format!("stop the kubelet on {n}"), n, "systemctl stop kubelet")],
                vec![Step::node(format!("start the kubelet on {n}"), n, "systemctl start kubelet"), wait_kubelet_active(n)],
                "the real kubelet stopped by systemd; the node goes NotReady after the node monitor grace period",
            )
        }
        NodeOperation::KubeletHang(t) => {
            if kind.is_none() {
                return Err(refused());
            }
            let n = &t.node;
            plan(
                vec![Step::node(format!("freeze the kubelet on {n} (SIGSTOP)"), n, "systemctl kill --signal=SIGSTOP kubelet")],
                vec![Step::node(format!("thaw the kubelet on {n} (SIGCONT)"), n, "systemctl kill --signal=SIGCONT kubelet")],
                "the kubelet process lives (systemd: active) but does nothing: no pod syncs, no heartbeats",
            )
        }
        NodeOperation::KubeletRestart(t) => {
            let n = &t.node;
            let script = match kind {
                Some(_) => "systemctl restart kubelet".to_string(),
                // Through the agent: the exec stream rides on the kubelet, so let the restart
                // happen after the exec returned.
                None => "systemd-run --on-active=2 --unit=faultline-kubelet-restart --collect systemctl restart kubelet".to_string(),
            };
            let mut inject = vec![Step::node(format!("restart the kubelet on {n}"), n, script)];
            if kind.is_some() {
                inject.push(wait_kubelet_active(n));
            }
            plan(inject, vec![], "the runbook's option 1 (systemd restarts the kubelet; a frozen kubelet is thawed by systemd's SIGCONT)")
        }
        NodeOperation::ProberManagerBroken(t) => {
            let n = &t.node;
            let specs = prober_specs(&ctx.flavour);
            plan(
                vec![Step::node(
                    format!("drop the kubelet's new connections to pods on {n} (HTTP/TCP/gRPC probes fail)"),
                    n,
                    specs.iter().map(|s| iptables_rule_script("add", s)).collect::<Vec<_>>().join("\n"),
                )],
                vec![Step::node(
                    format!("let the kubelet's probes through on {n}"),
                    n,
                    specs.iter().map(|s| iptables_rule_script("del", s)).collect::<Vec<_>>().join("\n"),
                )],
                "HTTP, TCP and gRPC probes time out, so containers with readiness probes never become ready; exec probes still run \
                 (the real prober manager cannot be broken from outside)",
            )
        }
        NodeOperation::NodeReboot(r) => {
            let n = &r.node;
            let stuck = r.stuck_until_power_cycle || ctx.stuck_io_on_node;
            match kind {
                Some(names) => {
                    let c = names.container(n);
                    if stuck {
                        let mut heal = vec![Step::docker(
                            format!("power {n} back on"),
                            DockerOp::Start {
                                container: c.clone(),
                            },
                        )];
                        heal.extend(ctx.after_boot.iter().cloned());
                        plan(
                            vec![Step::docker(
                                format!("{n} goes down and stays in Rebooting until power cycled"),
                                DockerOp::Stop { container: c, grace_secs: REBOOT_GRACE_SECS },
                            )],
                            heal,
                            "the node's container is stopped (systemd shuts down) and not started again until nodePowerCycle or heal; \
                             then what kind's bring-up does once a node starts is redone",
                        )
                    } else {
                        let mut inject = vec![Step::docker(
                            format!("reboot {n}"),
                            DockerOp::Restart {
                                container: c.clone(),
                                grace_secs: REBOOT_GRACE_SECS,
                            },
                        )];
                        inject.extend(ctx.after_boot.iter().cloned());
                        // Also the heal of a reboot that hung (hungNfs/ioErrors), which planned no start.
                        let mut heal = vec![Step::docker(
                            format!("{n} is running"),
                            DockerOp::Start { container: c },
                        )];
                        heal.extend(ctx.after_boot.iter().cloned());
                        plan(
                            inject,
                            heal,
                            "a container restart: systemd shuts down and boots again; mounts, iptables rules and processes are gone, \
                             the container file system and volumes stay; what kind's bring-up does once a node starts is redone \
                             (kind nodes do not come back by themselves, kind#148)",
                        )
                    }
                }
                None => {
                    if stuck {
                        return Err(refused());
                    }
                    plan(
                        vec![Step::node(
                            format!("reboot {n}"),
                            n,
                            "systemd-run --on-active=2 --unit=faultline-reboot --collect systemctl reboot",
                        )],
                        vec![],
                        "a real reboot through systemd (the node comes back on its own)",
                    )
                }
            }
        }
        NodeOperation::NodePowerCycle(t) => {
            let n = &t.node;
            let Some(names) = kind else {
                return Err(refused());
            };
            let c = names.container(n);
            let mut inject = vec![
                // A node stopped by a stuck reboot has nothing left to kill.
                Step::docker(
                    format!("cut {n}'s power"),
                    DockerOp::Kill {
                        container: c.clone(),
                        signal: "KILL".into(),
                    },
                )
                .ignore_failure(),
                Step::docker(format!("power {n} on"), DockerOp::Start { container: c }),
            ];
            inject.extend(ctx.after_boot.iter().cloned());
            plan(
                inject,
                vec![],
                "SIGKILL to every process of the node (no shutdown), then a clean boot, then what kind's bring-up does once a node starts",
            )
        }
        NodeOperation::NodePowerOff(t) => {
            let n = &t.node;
            let Some(names) = kind else {
                return Err(refused());
            };
            let c = names.container(n);
            let mut heal = vec![Step::docker(
                format!("power {n} on"),
                DockerOp::Start {
                    container: c.clone(),
                },
            )];
            heal.extend(ctx.after_boot.iter().cloned());
            plan(
                // A node a stuck reboot already stopped has nothing left to kill.
                vec![Step::docker(
                    format!("cut {n}'s power and leave it off"),
                    DockerOp::Kill { container: c, signal: "KILL".into() },
                )
                .ignore_failure()],
                heal,
                "SIGKILL to every process of the node (no shutdown) and the container left stopped; the heal boots it clean, then \
                 what kind's bring-up does once a node starts",
            )
        }
        NodeOperation::NodeNetworkPartition(t) => {
            let n = &t.node;
            let Some(names) = kind else {
                return Err(refused());
            };
            let c = names.container(n);
            plan(
                vec![Step::docker(format!("disconnect {n} from the cluster network"), DockerOp::NetworkDisconnect { network: names.network(), container: c.clone() })],
                vec![Step::docker(
                    format!("reconnect {n}"),
                    DockerOp::NetworkConnect { network: names.network(), container: c },
                )],
                "the node loses its only network interface: no API server, no peers (it may get a new address on reconnect)",
            )
        }
        NodeOperation::HungNfs(t) => {
            let n = &t.node;
            let specs = nfs_specs();
            plan(
                vec![Step::node(
                    format!("NFS servers stop answering {n}"),
                    n,
                    specs.iter().map(|s| iptables_rule_script("add", s)).collect::<Vec<_>>().join("\n"),
                )],
                vec![Step::node(
                    format!("NFS answers {n} again"),
                    n,
                    specs.iter().map(|s| iptables_rule_script("del", s)).collect::<Vec<_>>().join("\n"),
                )],
                "NFS traffic (port 2049, e.g. Longhorn RWX share managers) from the node is dropped, so hard NFS mounts hang; \
                 a reboot meanwhile hangs until power cycled",
            )
        }
        NodeOperation::IoErrors(t) => {
            let n = &t.node;
            plan(
                vec![Step::node(format!("offline the iSCSI disks (Longhorn volumes) attached on {n}"), n, io_errors_inject())],
                vec![Step::node(format!("bring the iSCSI disks on {n} back"), n, io_errors_heal())],
                "SCSI devices set offline fail every I/O with EIO (Longhorn volumes attached on the node); the node's own disk is not \
                 touched; a reboot meanwhile hangs until power cycled",
            )
        }
        NodeOperation::ApiErrors(_) | NodeOperation::ApiLatency(_) => return Err(refused()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Action;
    use faultline_faults::*;
    use rstest::rstest;

    fn kind_ctx() -> FaultContext {
        FaultContext {
            flavour: Flavour::Kind(KindNames {
                cluster: "fl".into(),
                control_plane_node: "control-plane".into(),
            }),
            longhorn: true,
            stuck_io_on_node: false,
            after_boot: vec![Step::node(
                "kubelet on worker-04 is active",
                "worker-04",
                "systemctl is-active --quiet kubelet",
            )],
        }
    }
    fn existing_ctx() -> FaultContext {
        FaultContext {
            flavour: Flavour::Existing,
            longhorn: true,
            stuck_io_on_node: false,
            after_boot: vec![],
        }
    }
    fn scripts(steps: &[Step]) -> String {
        steps
            .iter()
            .map(|s| match &s.action {
                Action::NodeShell { node, script } => format!("[{node}] {script}"),
                Action::Kubectl { args, stdin } => format!(
                    "kubectl {} {}",
                    args.join(" "),
                    stdin.clone().unwrap_or_default()
                ),
                Action::Docker(op) => crate::plan::render_docker(op),
                Action::ExportKubeconfig { host_path } => format!("export {host_path}"),
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
    fn t(n: &str) -> NodeTarget {
        NodeTarget { node: n.into() }
    }
    fn stale(node: &str, volume: VolumeRef) -> StaleDeviceMount {
        StaleDeviceMount {
            node: node.into(),
            volume,
            held_by: MountHolder::Kubelet,
            other_volumes: Default::default(),
        }
    }

    /// Every operation of the catalog, on kind: (op, a fragment of inject, a fragment of heal
    /// or "" for one-shot operations).
    #[rstest]
    #[case(NodeOperation::StaleDeviceMount(stale("worker-04", VolumeRef::DeletedPv("pvc-81b676e6".into()))),
           "mount --bind \"$gm\" /var/lib/faultline/stale/pvc-81b676e6", "umount /var/lib/faultline/stale/pvc-81b676e6")]
    #[case(
        NodeOperation::CsiPluginDown(t("worker-04")),
        "label node worker-04 faultline.dev/csi-plugin-down=true",
        "label node worker-04 faultline.dev/csi-plugin-down-"
    )]
    #[case(
        NodeOperation::CsiPluginRestart(t("worker-04")),
        "delete pod -l app=longhorn-csi-plugin --field-selector=spec.nodeName=worker-04",
        ""
    )]
    #[case(
        NodeOperation::CsiDriverUnregistered(CsiDriverUnregistered { node: "worker-04".into(), driver: "driver.longhorn.io".into() }),
        "ln -f /var/lib/kubelet/plugins_registry/driver.longhorn.io-reg.sock /var/lib/kubelet/plugins_registry/.faultline-driver.longhorn.io-reg.sock",
        "ln /var/lib/kubelet/plugins_registry/.faultline-driver.longhorn.io-reg.sock /var/lib/kubelet/plugins_registry/driver.longhorn.io-reg.sock"
    )]
    #[case(NodeOperation::KubeletWorkersSaturated(KubeletWorkersSaturated { node: "worker-04".into(), stale_pods: 2 }), "mount -t tmpfs faultline-stale", "umount \"$m\"")]
    #[case(
        NodeOperation::KubeletStop(t("worker-04")),
        "[worker-04] systemctl stop kubelet",
        "[worker-04] systemctl start kubelet"
    )]
    #[case(
        NodeOperation::KubeletHang(t("worker-04")),
        "systemctl kill --signal=SIGSTOP kubelet",
        "systemctl kill --signal=SIGCONT kubelet"
    )]
    #[case(
        NodeOperation::KubeletRestart(t("worker-04")),
        "[worker-04] systemctl restart kubelet",
        ""
    )]
    #[case(
        NodeOperation::ProberManagerBroken(t("worker-04")),
        "iptables -I OUTPUT 1 -o veth+ -p tcp -m conntrack --ctstate NEW",
        "while iptables -D OUTPUT -o veth+"
    )]
    #[case(NodeOperation::NodeReboot(NodeReboot { node: "worker-04".into(), stuck_until_power_cycle: false }), "docker restart --time 30 fl-worker-04", "docker start fl-worker-04")]
    #[case(NodeOperation::NodeReboot(NodeReboot { node: "worker-04".into(), stuck_until_power_cycle: true }), "docker stop --time 30 fl-worker-04", "docker start fl-worker-04")]
    #[case(
        NodeOperation::NodePowerCycle(t("worker-04")),
        "docker kill --signal KILL fl-worker-04\ndocker start fl-worker-04",
        ""
    )]
    #[case(
        NodeOperation::NodePowerOff(t("worker-04")),
        "docker kill --signal KILL fl-worker-04",
        "docker start fl-worker-04"
    )]
    #[case(
        NodeOperation::NodeNetworkPartition(t("worker-04")),
        "docker network disconnect --force faultline-fl fl-worker-04",
        "docker network connect faultline-fl fl-worker-04"
    )]
    #[case(
        NodeOperation::HungNfs(t("worker-04")),
        "iptables -I OUTPUT 1 -p tcp --dport 2049",
        "while iptables -D OUTPUT -p udp --dport 2049"
    )]
    #[case(
        NodeOperation::IoErrors(t("worker-04")),
        "echo offline > /sys/block/$d/device/state",
        "echo running > /sys/block/$d/device/state"
    )]
    fn every_kind_operation_maps_to_node_commands(
        #[case] op: NodeOperation,
        #[case] inject: &str,
        #[case] heal: &str,
    ) {
        let p = plan_fault(&op, &kind_ctx()).unwrap();
        assert_eq!(p.key, op.key());
        let i = scripts(&p.inject);
        assert!(i.contains(inject), "inject of {}:\n{i}", op.key());
        if heal.is_empty() {
            assert!(
                op.lifetime() == Lifetime::OneShot && p.heal.is_empty(),
                "{} heals: {:?}",
                op.key(),
                p.heal
            );
        } else {
            let h = scripts(&p.heal);
            assert!(h.contains(heal), "heal of {}:\n{h}", op.key());
        }
        assert!(!p.fidelity.is_empty());
        // Every node-side step runs on the target node (kubectl steps run on the control plane).
        for s in p.inject.iter().chain(&p.heal) {
            if let Some(n) = s.target_node() {
                assert_eq!(n, "worker-04");
            }
        }
    }

    /// Conformance, kind and existing: every catalogue entry is planned exactly when the
    /// catalogue declares it implemented there, and refused with the declared reason
    /// otherwise; one-shot entries heal nothing, and on kind every held one has heal steps.
    #[test]
    fn plans_follow_the_catalogues_support_matrix() {
        for ctx in [kind_ctx(), existing_ctx()] {
            let provider = ctx.flavour.provider();
            for op in NodeOperation::all_cases("worker-04") {
                match (op.support(provider), plan_fault(&op, &ctx)) {
                    (Support::Implemented, Ok(p)) => match op.lifetime() {
                        Lifetime::OneShot => assert!(p.heal.is_empty(), "{}", op.key()),
                        Lifetime::Held if provider == Provider::Kind => {
                            assert!(!p.heal.is_empty(), "{}", op.key())
                        }
                        Lifetime::Held => {}
                    },
                    (Support::Unsupported(why), Err(u)) => assert_eq!(u.reason, why),
                    (declared, planned) => panic!(
                        "{} on {provider}: the catalogue declares {declared:?}, the plan is {planned:?}",
                        op.key()
                    ),
                }
            }
        }
        let api_errors = NodeOperation::examples("w")
            .into_iter()
            .find(|o| o.key() == "apiErrors")
            .unwrap();
        let api = plan_fault(&api_errors, &kind_ctx()).unwrap_err();
        assert!(api.reason.contains("--provider sim"), "{api}");
    }

    #[test]
    fn stale_mount_of_a_pvc_resolves_the_pv_first_and_heals_without_the_api() {
        let op = NodeOperation::StaleDeviceMount(stale(
            "w",
            VolumeRef::Pvc("llmsafespaces/workspace-a".into()),
        ));
        let p = plan_fault(&op, &kind_ctx()).unwrap();
        assert_eq!(p.inject[0].capture.as_deref(), Some("pv"));
        assert!(
            matches!(&p.inject[0].action, Action::Kubectl { args, .. } if args.join(" ") == "-n llmsafespaces get pvc workspace-a -o jsonpath={.spec.volumeName}")
        );
        assert!(scripts(&p.inject).contains("pv='{{pv}}'"));
        let h = scripts(&p.heal);
        assert!(
            h.contains("/var/lib/faultline/stale/pvc-ref-llmsafespaces-workspace-a")
                && !h.contains("kubectl"),
            "{h}"
        );
    }

    #[test]
    fn a_powered_off_node_stays_off_until_healed() {
        let p = plan_fault(&NodeOperation::NodePowerOff(t("w")), &kind_ctx()).unwrap();
        let (i, h) = (scripts(&p.inject), scripts(&p.heal));
        assert!(
            i.contains("docker kill --signal KILL fl-w") && !i.contains("docker start"),
            "{i}"
        );
        // Powered on, then what bring-up does once a node starts.
        assert!(
            h.starts_with("docker start fl-w") && h.contains("systemctl is-active"),
            "{h}"
        );
    }

    #[test]
    fn another_csi_driver_needs_no_longhorn_and_a_safe_name() {
        let ctx = FaultContext {
            longhorn: false,
            ..kind_ctx()
        };
        let op = |driver: &str| {
            NodeOperation::CsiDriverUnregistered(CsiDriverUnregistered {
                node: "w".into(),
                driver: driver.into(),
            })
        };
        let p = plan_fault(&op("ebs.csi.aws.com"), &ctx).unwrap();
        assert!(
            scripts(&p.inject)
                .contains("/var/lib/kubelet/plugins_registry/ebs.csi.aws.com-reg.sock"),
            "{:?}",
            p.inject
        );
        let e = plan_fault(&op("x; rm -rf /"), &ctx).unwrap_err();
        assert!(e.reason.contains("not a valid Kubernetes name"), "{e}");
    }

    #[test]
    fn a_reboot_during_hung_io_stays_down_until_power_cycled() {
        let op = NodeOperation::NodeReboot(NodeReboot {
            node: "w".into(),
            stuck_until_power_cycle: false,
        });
        let p = plan_fault(
            &op,
            &FaultContext {
                stuck_io_on_node: true,
                ..kind_ctx()
            },
        )
        .unwrap();
        assert!(scripts(&p.inject).contains("docker stop --time 30 fl-w"));
        assert!(!scripts(&p.inject).contains("docker start"));
    }

    #[test]
    fn a_sim_only_account_of_other_volumes_is_named_in_the_fidelity_note() {
        let plain = plan_fault(
            &NodeOperation::StaleDeviceMount(stale("w", VolumeRef::Pv("pvc-1".into()))),
            &kind_ctx(),
        )
        .unwrap();
        assert!(!plain.fidelity.contains("sim only"), "{}", plain.fidelity);
        let rca = plan_fault(
            &NodeOperation::StaleDeviceMount(StaleDeviceMount {
                other_volumes: faultline_faults::OtherVolumes::QueueBlocked,
                ..stale("w", VolumeRef::Pv("pvc-1".into()))
            }),
            &kind_ctx(),
        )
        .unwrap();
        assert!(
            rca.fidelity.ends_with("; `otherVolumes: queueBlocked` is sim only: the real kubelet holds back only this volume's operations"),
            "{}",
            rca.fidelity
        );
        assert_eq!(rca.inject, plain.inject);
    }

    #[test]
    fn a_stale_device_mount_without_longhorn_holds_the_node_images_csi_globalmount() {
        let op = NodeOperation::StaleDeviceMount(stale("w", VolumeRef::Pv("pvc-1".into())));
        let plain = plan_fault(
            &op,
            &FaultContext {
                longhorn: false,
                ..kind_ctx()
            },
        )
        .unwrap();
        assert!(
            scripts(&plain.inject).contains(
                "root=/var/lib/kubelet/plugins/kubernetes.io/csi/hostpath.csi.faultline.dev"
            ),
            "{:?}",
            plain.inject
        );
        let longhorn = plan_fault(&op, &kind_ctx()).unwrap();
        assert!(scripts(&longhorn.inject)
            .contains("root=/var/lib/kubelet/plugins/kubernetes.io/csi/driver.longhorn.io"));
    }

    #[test]
    fn csi_faults_need_longhorn_or_the_node_image_plugin() {
        let kind = FaultContext {
            longhorn: false,
            ..kind_ctx()
        };
        let existing = FaultContext {
            longhorn: false,
            ..existing_ctx()
        };
        for op in [
            NodeOperation::CsiPluginDown(t("w")),
            NodeOperation::CsiPluginRestart(t("w")),
        ] {
            // kind without Longhorn: the node image's hostpath plugin.
            let p = plan_fault(&op, &kind).unwrap();
            let text = format!("{:?}", p.inject);
            assert!(
                text.contains("csi-hostpath-node") && text.contains("kube-system"),
                "{text}"
            );
            assert!(!text.contains("longhorn"), "{text}");
            // An existing cluster without Longhorn: no plugin we know of.
            let e = plan_fault(&op, &existing).unwrap_err();
            assert!(e.to_string().contains("Longhorn"), "{e}");
        }
        // Longhorn's own driver, named: only with Longhorn.
        let op = NodeOperation::CsiDriverUnregistered(CsiDriverUnregistered {
            node: "w".into(),
            driver: "driver.longhorn.io".into(),
        });
        let e = plan_fault(&op, &kind).unwrap_err();
        assert!(e.to_string().contains("Longhorn"), "{e}");
    }

    #[rstest]
    #[case("worker-04; rm -rf /")]
    #[case("Worker")]
    #[case("")]
    fn names_that_could_break_a_script_are_refused(#[case] node: &str) {
        let e = plan_fault(&NodeOperation::KubeletStop(t(node)), &kind_ctx()).unwrap_err();
        assert!(e.reason.contains("not a valid Kubernetes name"), "{e}");
        let e = plan_fault(
            &NodeOperation::StaleDeviceMount(stale("w", VolumeRef::Pv(format!("pv{node}x")))),
            &kind_ctx(),
        );
        assert!(node.is_empty() || e.is_err());
    }

    #[rstest]
    #[case(NodeOperation::KubeletStop(t("w")), "kubelet")]
    #[case(NodeOperation::KubeletHang(t("w")), "kubelet")]
    #[case(NodeOperation::NodePowerCycle(t("w")), "power control")]
    #[case(NodeOperation::NodePowerOff(t("w")), "power control")]
    #[case(NodeOperation::NodeNetworkPartition(t("w")), "node agent")]
    #[case(NodeOperation::NodeReboot(NodeReboot { node: "w".into(), stuck_until_power_cycle: true }), "power cycle")]
    #[case(NodeOperation::ApiErrors(ApiErrors { rate: 1.0, code: 500, verbs: vec![], resources: vec![] }), "simulated")]
    fn existing_refuses_what_it_could_not_heal(#[case] op: NodeOperation, #[case] why: &str) {
        let e = plan_fault(&op, &existing_ctx()).unwrap_err();
        assert!(e.reason.contains(why), "{e}");
    }

    #[test]
    fn existing_runs_node_scripts_and_never_docker() {
        for op in NodeOperation::examples("w") {
            if let Ok(p) = plan_fault(&op, &existing_ctx()) {
                assert!(
                    p.inject
                        .iter()
                        .chain(&p.heal)
                        .all(|s| !matches!(s.action, Action::Docker(_))),
                    "{}",
                    op.key()
                );
            }
        }
        let p = plan_fault(&NodeOperation::KubeletRestart(t("w")), &existing_ctx()).unwrap();
        assert!(scripts(&p.inject).contains("systemd-run --on-active=2"));
        let p = plan_fault(&NodeOperation::ProberManagerBroken(t("w")), &existing_ctx()).unwrap();
        assert!(scripts(&p.inject).contains("-o cali+"));
    }

    #[test]
    fn saturation_pods_are_pinned_to_the_node_and_wait_for_their_pin() {
        let m = stale_pods_manifest("worker-04", 2);
        let docs: Vec<serde_yaml::Value> = serde_yaml::Deserializer::from_str(&m)
            .map(|d| serde::Deserialize::deserialize(d).unwrap())
            .collect();
        assert_eq!(docs.len(), 3);
        assert_eq!(docs[0]["kind"], "Namespace");
        for (i, pod) in docs[1..].iter().enumerate() {
            assert_eq!(
                pod["metadata"]["name"].as_str().unwrap(),
                format!("stale-worker-04-{i}")
            );
            assert_eq!(pod["spec"]["nodeName"], "worker-04");
            assert_eq!(pod["spec"]["restartPolicy"], "Never");
            assert_eq!(pod["spec"]["volumes"][0]["name"], "faultline-stale");
            assert!(pod["spec"]["containers"][0]["command"][2]
                .as_str()
                .unwrap()
                .contains("/data/pin"));
        }
    }
}
