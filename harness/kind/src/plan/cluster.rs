//! The whole life of a kind cluster as steps: bring-up (network, node containers, kubeadm
//! init/join, CNI, untaint, images, Longhorn, kubeconfig), reset between the scenarios that
//! reuse it, log collection on failure, and teardown.

use crate::input::{ClusterPlanInput, Role};
use crate::plan::container::{
    self, image_tar_name, HostPaths, NodeContainerSpec, IMAGES_DIR, KUBEADM_CONFIG_PATH,
};
use crate::plan::faults::{check_name, CSI_DOWN_LABEL, STALE_NAMESPACE};
use crate::plan::{kubeadm, longhorn, Action, DockerOp, KindNames, Step, ADMIN_KUBECONFIG};
use std::fmt;

#[derive(Clone, Debug, PartialEq)]
pub struct PlanError(pub String);

impl fmt::Display for PlanError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for PlanError {}

/// A log file collected on failure: `<dir>/<file>` gets the step's output.
#[derive(Clone, Debug, PartialEq)]
pub struct LogFile {
    pub file: String,
    pub step: Step,
    /// What must have happened for the file to say anything.
    pub needs: LogNeeds,
}

#[derive(Clone, Debug, PartialEq)]
pub enum LogNeeds {
    /// This node container ran.
    Container(String),
    /// The API server was set up (kubeadm init succeeded).
    Api,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ClusterPlan {
    pub names: KindNames,
    pub containers: Vec<NodeContainerSpec>,
    pub bring_up: Vec<Step>,
    /// Between two scenarios that share the cluster.
    pub reset: Vec<Step>,
    pub collect_logs: Vec<LogFile>,
    pub teardown: Vec<Step>,
    /// Index in `bring_up` of `kubeadm init`: the steps before it need no Kubernetes.
    pub kubeadm_init: usize,
    /// Where the kubeconfig is written on the host.
    pub kubeconfig_path: String,
}

impl ClusterPlan {
    /// What kind's bring-up does for `node` once its container has started, redone after every
    /// reboot and power cycle (a kind node does not come back by itself, kind#148): systemd has
    /// booted far enough to run containerd, the kubelet runs, and on the control plane the
    /// kubeconfig is exported again (the engine may publish the API server on another host
    /// port after a restart).
    pub fn boot_steps(&self, node: &str) -> Vec<Step> {
        boot_steps(&self.names, node, Some(&self.kubeconfig_path))
    }

    /// The node containers `bring_up` starts (in order).
    pub fn container_names(&self) -> Vec<String> {
        self.containers
            .iter()
            .map(|c| c.container_name.clone())
            .collect()
    }

    /// Every engine resource of the cluster, by name (names are unique per run).
    pub fn resources(&self) -> Owned {
        let mut o = Owned::default();
        for c in &self.containers {
            o.containers.insert(c.container_name.clone());
            o.volumes.extend(c.named_volumes());
        }
        o.networks.insert(self.names.network());
        o
    }
}

/// Engine resources a run created (or adopted from a killed run's journal): the only ones its
/// teardown removes. Data of the plan (a cluster's containers, network and volumes), which the
/// executors record and the journal keeps.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Owned {
    pub containers: std::collections::BTreeSet<String>,
    pub networks: std::collections::BTreeSet<String>,
    pub volumes: std::collections::BTreeSet<String>,
}

impl Owned {
    pub fn extend(&mut self, other: &Owned) {
        self.containers.extend(other.containers.iter().cloned());
        self.networks.extend(other.networks.iter().cloned());
        self.volumes.extend(other.volumes.iter().cloned());
    }
    pub fn is_empty(&self) -> bool {
        self.containers.is_empty() && self.networks.is_empty() && self.volumes.is_empty()
    }
}

/// The first line of the error when the node image can be neither found nor pulled: what to do.
pub fn no_node_image(image: &str) -> String {
    format!(
        "node image {image} is not in the Docker engine's image store and could not be pulled: load one (`docker load -i <node-image>.tar`) \
         or pass a local image with --node-image <repo:tag> (or FAULTLINE_KIND_NODE_IMAGE)"
    )
}

/// [`ClusterPlan::boot_steps`] from the names alone (`faultline cleanup` has no plan; it
/// exports no kubeconfig: `kubeconfig` None).
pub fn boot_steps(names: &KindNames, node: &str, kubeconfig: Option<&str>) -> Vec<Step> {
    let mut steps = vec![
        Step::node(
            format!("systemd in {node} has started containerd"),
            node,
            "systemctl is-active --quiet containerd",
        )
        .retry(1, 120),
        Step::node(
            format!("kubelet on {node} is active"),
            node,
            "systemctl is-active --quiet kubelet",
        )
        .retry(2, 300),
    ];
    if let (true, Some(path)) = (node == names.control_plane_node, kubeconfig) {
        steps.push(Step::new(
            "export the kubeconfig again (the published API server port may have changed)",
            Action::ExportKubeconfig {
                host_path: path.to_string(),
            },
        ));
    }
    steps
}

/// Namespaces a reset keeps.
pub const SYSTEM_NAMESPACES: &[&str] = &[
    "default",
    "kube-system",
    "kube-public",
    "kube-node-lease",
    "local-path-storage",
    "longhorn-system",
    "faultline-system",
];

pub fn validate(input: &ClusterPlanInput) -> Result<(), PlanError> {
    let cps: Vec<_> = input
        .nodes
        .iter()
        .filter(|n| n.role == Role::ControlPlane)
        .collect();
    if cps.len() != 1 {
        return Err(PlanError(format!(
            "kind clusters have exactly one control-plane node; the scenario names {} ({})",
            cps.len(),
            if cps.is_empty() {
                "add `{name: control-plane, role: control-plane}`".to_string()
            } else {
                "several need a load balancer, which faultline does not run".to_string()
            }
        )));
    }
    let mut seen = std::collections::BTreeSet::new();
    for n in &input.nodes {
        check_name("node", &n.name).map_err(PlanError)?;
        if n.name.contains('.') {
            return Err(PlanError(format!(
                "node `{}`: a container hostname cannot contain '.'",
                n.name
            )));
        }
        if !seen.insert(&n.name) {
            return Err(PlanError(format!("node `{}` is named twice", n.name)));
        }
    }
    if crate::input::sanitize_cluster_name(&input.cluster_name) != input.cluster_name {
        return Err(PlanError(format!(
            "cluster name `{}` is not sanitized (use sanitize_cluster_name)",
            input.cluster_name
        )));
    }
    let image_version = crate::versions::kubernetes_version_of_image(&input.node_image);
    if let Some(image_version) = image_version.filter(|v| *v != input.kubernetes_version) {
        return Err(PlanError(format!(
            "node image {} is Kubernetes {image_version}, but kubernetesVersion is {}: kubeadm can only install the version its node image ships",
            input.node_image, input.kubernetes_version
        )));
    }
    Ok(())
}

/// The StorageClass a Longhorn scenario's claims name, given to the node image's CSI driver
/// (the same as ci/kind/longhorn-class.yaml, which gives it to an existing cluster).
const LONGHORN_STAND_IN_CLASS: &str = "apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: longhorn
provisioner: hostpath.csi.faultline.dev
reclaimPolicy: Delete
volumeBindingMode: Immediate";

/// Every node of the input Ready, each named: `wait nodes --all` passes as soon as the nodes
/// registered so far are Ready, before a slow worker's kubelet has registered its Node (seen
/// on a loaded host: the scenario's first step then found no `worker-01`). A name not
/// registered yet fails the wait, which is retried.
fn every_node_ready(input: &ClusterPlanInput) -> Step {
    let mut args: Vec<String> = vec!["wait".into(), "--for=condition=Ready".into()];
    args.extend(input.nodes.iter().map(|n| format!("node/{}", n.name)));
    args.push("--timeout=300s".into());
    Step::kubectl_owned("every node is Ready", args).retry(5, 600)
}

fn kubectl_sh(args: &str) -> String {
    format!("kubectl --kubeconfig={ADMIN_KUBECONFIG} {args}")
}

/// The plan of one cluster. `token` is the kubeadm bootstrap token (random per real cluster).
pub fn cluster_plan(
    input: &ClusterPlanInput,
    host: &HostPaths,
    token: &str,
    kubeconfig_path: &str,
) -> Result<ClusterPlan, PlanError> {
    validate(input)?;
    let cp = input.control_plane().expect("validated").clone();
    let names = KindNames {
        cluster: input.cluster_name.clone(),
        control_plane_node: cp.name.clone(),
    };
    let containers: Vec<NodeContainerSpec> = input
        .nodes
        .iter()
        .map(|n| {
            container::node_container(
                input,
                &names,
                n,
                kubeadm::node_config_yaml(input, &names, n, token),
                host,
            )
        })
        .collect();

    let mut up = vec![Step::docker(
        "the node image is in the engine's image store (pulled only when no local image stands for it)",
        DockerOp::EnsureImage { image: input.node_image.clone() },
    )
    .on_failure(no_node_image(&input.node_image))];
    for image in &input.load_images {
        up.push(
            Step::docker(
                format!("save {image} from the Docker engine (copied into every node at creation)"),
                DockerOp::SaveImage { image: image.clone(), host_path: format!("{}/{}", host.images_dir, image_tar_name(image)) },
            )
            .on_failure(format!("docker save {image}: the image is not in the Docker engine's image store; build or load it first (it is loaded into every node)")),
        );
    }
    up.push(Step::docker(
        "a bridge network of the cluster's own (partitions disconnect nodes from it)",
        DockerOp::NetworkCreate {
            name: names.network(),
            labels: vec![(container::LABEL_CLUSTER.into(), names.cluster.clone())],
        },
    ));
    for c in &containers {
        up.push(Step::docker(
            format!("node container {} ({:?})", c.node, c.role),
            DockerOp::Run {
                spec: Box::new(c.clone()),
            },
        ));
    }
    for n in &input.nodes {
        up.push(
            Step::node(
                format!("systemd in {} has started containerd", n.name),
                &n.name,
                "systemctl is-active --quiet containerd",
            )
            .retry(1, 120),
        );
    }
    let kubeadm_init = up.len();
    up.push(Step::node(
        "kubeadm init on the control plane",
        &cp.name,
        format!(
            "kubeadm init --config={KUBEADM_CONFIG_PATH} {} --skip-token-print --v=6",
            kubeadm::IGNORE_PREFLIGHT
        ),
    ));
    up.push(Step::node(
        "CNI: the node image's kindnet manifest with this cluster's pod subnet",
        &cp.name,
        format!(
            "sed -e 's#{{{{ .PodSubnet }}}}#{}#g' /kind/manifests/default-cni.yaml | {}",
            input.pod_subnet,
            kubectl_sh("apply -f -")
        ),
    ));
    if !input.longhorn {
        up.push(Step::node(
            "storage: the node image's local-path provisioner (default StorageClass `standard`)",
            &cp.name,
            kubectl_sh("apply -f /kind/manifests/default-storage.yaml"),
        ));
        if input.longhorn_stand_in {
            up.push(Step::apply(
                "storage: StorageClass `longhorn` on the node image's CSI driver (--longhorn-stand-in)",
                LONGHORN_STAND_IN_CLASS,
            ));
        }
    }
    for w in input.workers() {
        up.push(Step::node(
            format!("kubeadm join {}", w.name),
            &w.name,
            format!(
                "kubeadm join --config={KUBEADM_CONFIG_PATH} {} --v=6",
                kubeadm::IGNORE_PREFLIGHT
            ),
        ));
    }
    if input.workers().count() == 0 {
        up.push(
            Step::kubectl_owned(
                "untaint the control plane (the only node runs the workloads)",
                vec![
                    "taint".into(),
                    "nodes".into(),
                    "--all".into(),
                    "node-role.kubernetes.io/control-plane:NoSchedule-".into(),
                ],
            )
            .ignore_failure(),
        );
    }
    up.push(every_node_ready(input));
    for image in &input.load_images {
        let tar = image_tar_name(image);
        for n in &input.nodes {
            up.push(Step::node(
                format!("load {image} into {}'s containerd", n.name),
                &n.name,
                format!("ctr --namespace=k8s.io images import --all-platforms --digests {IMAGES_DIR}/{tar} && rm -f {IMAGES_DIR}/{tar}"),
            ));
        }
    }
    if input.longhorn {
        up.extend(longhorn::prerequisites(input));
        up.extend(longhorn::install(input));
    }
    up.push(Step::new(
        "export the kubeconfig",
        Action::ExportKubeconfig {
            host_path: kubeconfig_path.into(),
        },
    ));

    let keep = SYSTEM_NAMESPACES.join("|");
    let mut reset = vec![
        Step::node(
            "delete the namespaces the last scenario created",
            &cp.name,
            format!(
                "{} | grep -vxE '{keep}' | xargs -r {}",
                kubectl_sh(
                    "get namespaces -o jsonpath='{range .items[*]}{.metadata.name}{\"\\n\"}{end}'"
                ),
                kubectl_sh("delete namespace --wait=true --timeout=300s")
            ),
        )
        .retry(5, 360),
        Step::kubectl(
            "delete the last scenario's workloads in `default`",
            &[
                "-n",
                "default",
                "delete",
                "deployments,statefulsets,daemonsets,jobs,pods,pvc",
                "--all",
                "--wait=true",
                "--timeout=300s",
            ],
        )
        .retry(5, 360),
        Step::kubectl_owned(
            "remove faultline's node labels",
            vec![
                "label".into(),
                "nodes".into(),
                "--all".into(),
                format!("{CSI_DOWN_LABEL}-"),
            ],
        )
        .ignore_failure(),
    ];
    for n in &input.nodes {
        reset.push(Step::kubectl_owned(
            format!("uncordon {}", n.name),
            vec!["uncordon".into(), n.name.clone()],
        ));
    }
    reset.push(every_node_ready(input));

    let mut logs = vec![];
    for n in &input.nodes {
        let c = names.container(&n.name);
        logs.push(LogFile {
            file: format!("{}/console.log", n.name),
            step: Step::docker(
                "node console",
                DockerOp::Logs {
                    container: c.clone(),
                },
            ),
            needs: LogNeeds::Container(c.clone()),
        });
        for (file, script) in [
            ("kubelet.log", "journalctl --no-pager -u kubelet"),
            ("containerd.log", "journalctl --no-pager -u containerd"),
            ("containers.txt", "crictl ps -a"),
            ("mounts.txt", "cat /proc/mounts"),
            ("iptables.txt", "iptables -S"),
        ] {
            logs.push(LogFile {
                file: format!("{}/{file}", n.name),
                step: Step::node(file, &n.name, script),
                needs: LogNeeds::Container(c.clone()),
            });
        }
    }
    for (file, args) in [
        (
            "cluster/nodes-and-pods.txt",
            vec!["get", "nodes,pods", "-A", "-o", "wide"],
        ),
        (
            "cluster/events.txt",
            vec!["get", "events", "-A", "--sort-by=.lastTimestamp"],
        ),
        (
            "cluster/volumes.txt",
            vec![
                "get",
                "pv,pvc,volumeattachments,csinodes",
                "-A",
                "-o",
                "wide",
            ],
        ),
        (
            "cluster/stale-pods.txt",
            vec!["-n", STALE_NAMESPACE, "get", "pods", "-o", "wide"],
        ),
    ] {
        logs.push(LogFile {
            file: file.into(),
            step: Step::kubectl(file, &args),
            needs: LogNeeds::Api,
        });
    }
    if input.longhorn {
        for (file, sel) in [
            ("cluster/longhorn-csi-plugin.log", "app=longhorn-csi-plugin"),
            ("cluster/longhorn-manager.log", "app=longhorn-manager"),
        ] {
            logs.push(LogFile {
                file: file.into(),
                step: Step::kubectl(
                    file,
                    &[
                        "-n",
                        longhorn::NAMESPACE,
                        "logs",
                        "-l",
                        sel,
                        "--all-containers",
                        "--prefix",
                        "--tail=5000",
                    ],
                ),
                needs: LogNeeds::Api,
            });
        }
    }
    for l in &mut logs {
        l.step.ignore_failure = true;
    }

    let mut teardown = vec![];
    for c in &containers {
        teardown.push(
            Step::docker(
                format!("remove node {}", c.node),
                DockerOp::Remove {
                    container: c.container_name.clone(),
                },
            )
            .ignore_failure(),
        );
        for v in c.named_volumes() {
            teardown.push(
                Step::docker(
                    format!("remove volume {v}"),
                    DockerOp::VolumeRemove { name: v },
                )
                .ignore_failure(),
            );
        }
    }
    teardown.push(
        Step::docker(
            "remove the network",
            DockerOp::NetworkRemove {
                name: names.network(),
            },
        )
        .ignore_failure(),
    );

    Ok(ClusterPlan {
        names,
        containers,
        bring_up: up,
        reset,
        collect_logs: logs,
        teardown,
        kubeadm_init,
        kubeconfig_path: kubeconfig_path.into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::NodeInput;
    use crate::plan::container::MountKind;

    #[test]
    fn a_node_image_whose_tag_names_another_version_than_asked_is_refused() {
        let cp = || vec![NodeInput::control_plane("cp")];
        let real = ClusterPlanInput::new("x", cp())
            .with_node_image(Some("faultline-node:v1.35.4-real-4b1cb1d73f078d9c"));
        assert!(validate(&real).is_ok());
        let env = |k: &str| match k {
            "FAULTLINE_KIND_NODE_IMAGE" => Some("faultline-node:v1.35.4-real-abc".to_string()),
            "FAULTLINE_KIND_KUBERNETES_VERSION" => Some("v1.35.5".to_string()),
            _ => None,
        };
        let mismatched = ClusterPlanInput::new("x", cp()).with_env_from(env);
        let e = validate(&mismatched).unwrap_err();
        assert!(e.0.contains("is Kubernetes v1.35.4"), "{e}");
    }

    fn input() -> ClusterPlanInput {
        ClusterPlanInput::new(
            "stale-csi-mount",
            vec![
                NodeInput::control_plane("control-plane"),
                NodeInput::worker("worker-01"),
                NodeInput::worker("worker-04"),
            ],
        )
        .with_longhorn(true)
        .with_images(["workspace-controller:ci"])
    }
    fn host() -> HostPaths {
        HostPaths {
            images_dir: "/tmp/fl/images".into(),
        }
    }
    fn plan() -> ClusterPlan {
        cluster_plan(
            &input(),
            &host(),
            "abcdef.0123456789abcdef",
            "/tmp/fl/kubeconfig",
        )
        .unwrap()
    }
    fn rendered(p: &ClusterPlan, steps: &[Step]) -> Vec<String> {
        steps.iter().map(|s| p.names.render(&s.action)).collect()
    }

    #[test]
    fn node_containers_are_run_as_kind_runs_them() {
        let p = plan();
        assert_eq!(p.containers.len(), 3);
        for c in &p.containers {
            assert_eq!(c.image, crate::versions::NODE_IMAGE);
            assert!(c.image.contains("@sha256:"));
            assert!(c.privileged);
            assert_eq!(c.entrypoint, ["/usr/local/bin/entrypoint"]);
            assert_eq!(c.cmd, ["/sbin/init"]);
            assert_eq!(c.container_name, format!("stale-csi-mount-{}", c.node));
            assert_eq!(c.hostname, c.node);
            assert_eq!(c.network, "faultline-stale-csi-mount");
            assert_eq!(c.cgroupns, "private");
            let tmpfs: Vec<&str> = c
                .mounts
                .iter()
                .filter(|m| m.kind == MountKind::Tmpfs)
                .map(|m| m.target.as_str())
                .collect();
            assert_eq!(tmpfs, ["/run", "/tmp"]);
            let modules = c
                .mounts
                .iter()
                .find(|m| m.target == "/lib/modules")
                .unwrap();
            assert!(
                modules.kind == MountKind::Bind
                    && modules.read_only
                    && modules.source == "/lib/modules"
            );
            let containerd = c
                .mounts
                .iter()
                .find(|m| m.target == "/var/lib/containerd")
                .unwrap();
            assert_eq!(containerd.kind, MountKind::Volume);
            assert!(c
                .mounts
                .iter()
                .any(|m| m.target == "/var/lib/longhorn" && m.kind == MountKind::Volume));
            assert_eq!(c.files[0].path, KUBEADM_CONFIG_PATH);
            assert_eq!(
                c.files[1].path,
                "/faultline/images/workspace-controller_ci.tar"
            );
            assert_eq!(
                c.files[1].source,
                container::FileSource::HostFile(
                    "/tmp/fl/images/workspace-controller_ci.tar".into()
                )
            );
        }
        let cp = &p.containers[0];
        assert_eq!(cp.ports.len(), 1);
        assert_eq!(
            (
                cp.ports[0].host_ip.as_str(),
                cp.ports[0].host_port,
                cp.ports[0].container_port
            ),
            ("127.0.0.1", None, 6443)
        );
        assert!(p.containers[1].ports.is_empty());
        let inline = |c: &NodeContainerSpec| match &c.files[0].source {
            container::FileSource::Inline(s) => s.clone(),
            other => panic!("{other:?}"),
        };
        assert!(inline(cp).contains("kind: InitConfiguration"));
        assert!(inline(&p.containers[2]).contains("kind: JoinConfiguration"));
    }

    #[test]
    fn docker_run_line_carries_every_setting() {
        let line = plan().containers[0].docker_run_command();
        for want in [
            "--privileged",
            "--tmpfs /run",
            "--tmpfs /tmp",
            "--volume /lib/modules:/lib/modules:ro",
            "--volume stale-csi-mount-control-plane-containerd:/var/lib/containerd",
            "--security-opt seccomp=unconfined",
            "--cgroupns=private",
            "--publish 127.0.0.1::6443",
            "--entrypoint /usr/local/bin/entrypoint",
            "--hostname control-plane",
        ] {
            assert!(line.contains(want), "missing {want} in\n{line}");
        }
        assert!(
            line.trim_end().ends_with(&format!(
                "{} \\\n    /sbin/init",
                crate::versions::NODE_IMAGE
            )),
            "{line}"
        );
    }

    #[test]
    fn bring_up_runs_kubeadm_cni_join_images_longhorn_in_order() {
        let p = plan();
        let r = rendered(&p, &p.bring_up);
        let pos = |needle: &str| {
            r.iter()
                .position(|l| l.contains(needle))
                .unwrap_or_else(|| panic!("no step with {needle}:\n{}", r.join("\n")))
        };
        let order = [
            "docker save --output /tmp/fl/images/workspace-controller_ci.tar workspace-controller:ci",
            "docker network create",
            "docker run --detach",
            "kubeadm init --config=/kind/kubeadm.conf --ignore-preflight-errors=SystemVerification",
            "/kind/manifests/default-cni.yaml",
            "docker exec stale-csi-mount-worker-01 sh -c 'kubeadm join --config=/kind/kubeadm.conf",
            "wait --for=condition=Ready node/control-plane node/worker-01",
            "ctr --namespace=k8s.io images import",
            "/sys/module/iscsi_tcp",
            "longhorn/v1.9.1/deploy/longhorn.yaml",
            "cat /etc/kubernetes/admin.conf > /tmp/fl/kubeconfig",
        ];
        let positions: Vec<usize> = order.iter().map(|n| pos(n)).collect();
        assert!(
            positions.windows(2).all(|w| w[0] < w[1]),
            "out of order: {positions:?}\n{}",
            r.join("\n")
        );
        assert_eq!(
            r.iter()
                .filter(|l| l.contains("ctr --namespace=k8s.io images import"))
                .count(),
            3
        );
        assert!(
            r.iter().any(|l| l.contains("10.244.0.0/16")),
            "CNI gets the pod subnet"
        );
        assert!(
            !r.iter().any(|l| l.contains("taint nodes")),
            "workers exist: the control plane keeps its taint"
        );
        assert!(
            !r.iter().any(|l| l.contains("default-storage.yaml")),
            "Longhorn is the storage"
        );
    }

    #[test]
    fn a_single_node_cluster_is_untainted_and_gets_local_path_storage() {
        let i = ClusterPlanInput::new("one", vec![NodeInput::control_plane("cp")]);
        let p = cluster_plan(&i, &host(), "abcdef.0123456789abcdef", "/k").unwrap();
        let r = rendered(&p, &p.bring_up);
        assert!(r
            .iter()
            .any(|l| l
                .contains("taint nodes --all node-role.kubernetes.io/control-plane:NoSchedule-")));
        assert!(r.iter().any(|l| l.contains("default-storage.yaml")));
        assert!(!r.iter().any(|l| l.contains("kubeadm join")));
    }

    #[test]
    fn the_longhorn_stand_in_names_the_node_image_driver_longhorn() {
        let i = ClusterPlanInput::new("one", vec![NodeInput::control_plane("cp")]);
        let p = cluster_plan(&i, &host(), "abcdef.0123456789abcdef", "/k").unwrap();
        assert!(!rendered(&p, &p.bring_up)
            .iter()
            .any(|l| l.contains("name: longhorn")));
        let i = i.with_longhorn_stand_in(true);
        let p = cluster_plan(&i, &host(), "abcdef.0123456789abcdef", "/k").unwrap();
        let r = rendered(&p, &p.bring_up);
        let class = r
            .iter()
            .find(|l| l.contains("name: longhorn"))
            .expect("the stand-in class");
        assert!(
            class.contains("provisioner: hostpath.csi.faultline.dev"),
            "{class}"
        );
        assert!(class.contains("apply -f -"), "{class}");
        // With Longhorn itself there is nothing to stand in for.
        let i = i.with_longhorn(true);
        let p = cluster_plan(&i, &host(), "abcdef.0123456789abcdef", "/k").unwrap();
        assert!(!rendered(&p, &p.bring_up)
            .iter()
            .any(|l| l.contains("name: longhorn")));
    }

    #[test]
    fn teardown_removes_containers_volumes_and_network() {
        let p = plan();
        let r = rendered(&p, &p.teardown);
        assert!(r.contains(&"docker rm --force --volumes stale-csi-mount-worker-04".to_string()));
        assert!(r.contains(
            &"docker volume rm --force stale-csi-mount-worker-04-containerd".to_string()
        ));
        assert!(
            r.contains(&"docker volume rm --force stale-csi-mount-worker-04-longhorn".to_string())
        );
        assert_eq!(
            r.last().unwrap(),
            "docker network rm faultline-stale-csi-mount"
        );
        assert!(p.teardown.iter().all(|s| s.ignore_failure));
    }

    #[test]
    fn reset_keeps_system_namespaces_and_uncordons_every_node() {
        let p = plan();
        let r = rendered(&p, &p.reset).join("\n");
        let Action::NodeShell { script, .. } = &p.reset[0].action else {
            panic!("{:?}", p.reset[0])
        };
        assert!(script.contains("grep -vxE 'default|kube-system|kube-public|kube-node-lease|local-path-storage|longhorn-system|faultline-system'"), "{script}");
        assert!(
            script.contains(
                "xargs -r kubectl --kubeconfig=/etc/kubernetes/admin.conf delete namespace"
            ),
            "{script}"
        );
        for n in ["control-plane", "worker-01", "worker-04"] {
            assert!(r.contains(&format!("uncordon {n}")));
        }
    }

    #[test]
    fn logs_cover_kubelet_console_and_longhorn() {
        let p = plan();
        let files: Vec<&str> = p.collect_logs.iter().map(|l| l.file.as_str()).collect();
        for f in [
            "worker-04/kubelet.log",
            "worker-04/console.log",
            "worker-04/mounts.txt",
            "cluster/events.txt",
            "cluster/longhorn-csi-plugin.log",
        ] {
            assert!(files.contains(&f), "{files:?}");
        }
    }

    #[rstest::rstest]
    #[case(vec![NodeInput::worker("w")], "exactly one control-plane")]
    #[case(vec![NodeInput::control_plane("a"), NodeInput::control_plane("b")], "load balancer")]
    #[case(vec![NodeInput::control_plane("a"), NodeInput::worker("a")], "named twice")]
    #[case(vec![NodeInput::control_plane("a"), NodeInput::worker("Bad_Name")], "not a valid Kubernetes name")]
    fn invalid_topologies_are_refused(#[case] nodes: Vec<NodeInput>, #[case] msg: &str) {
        let e = cluster_plan(&ClusterPlanInput::new("x", nodes), &host(), "t", "/k").unwrap_err();
        assert!(e.0.contains(msg), "{e}");
    }

    #[test]
    fn a_version_the_image_does_not_ship_is_refused() {
        let mut i = ClusterPlanInput::new("x", vec![NodeInput::control_plane("cp")]);
        i.kubernetes_version = "v1.34.0".into();
        let e = cluster_plan(&i, &host(), "t", "/k").unwrap_err();
        assert!(e.0.contains("v1.35.5") && e.0.contains("v1.34.0"), "{e}");
    }
}
