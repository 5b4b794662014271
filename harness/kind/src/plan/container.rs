//! Node containers as data: what testcontainers is asked to start for each node, and the
//! `docker run` line that would do the same (printed by the dry run).
//!
//! A `kindest/node` container runs systemd as PID 1 behind the image's entrypoint, so it needs
//! what kind gives it: privileged, `/usr/local/bin/entrypoint /sbin/init`, tmpfs at /run and
//! /tmp, the host's /lib/modules read-only (kube-proxy and Longhorn load modules), a volume at
//! /var/lib/containerd (overlayfs cannot sit on overlayfs), its own cgroup namespace, and
//! seccomp/apparmor unconfined.

use crate::input::{ClusterPlanInput, NodeInput, Role};
use crate::plan::KindNames;
use crate::shell;
use serde::Serialize;

/// Port of the API server inside the control-plane node.
pub const API_SERVER_PORT: u16 = 6443;
/// Directory of every node where the kubeadm config is written (the node image's own scripts
/// look for `/kind/kubeadm.conf`, e.g. to renew the API server certificate after a restart that
/// changed the node's address).
pub const KUBEADM_CONFIG_PATH: &str = "/kind/kubeadm.conf";
/// Directory of every node where image tarballs are copied (through the engine's API, so it
/// works with a remote engine such as docker-in-docker, where bind mounts of the runner's
/// files would not).
pub const IMAGES_DIR: &str = "/faultline/images";

/// The CSI driver of the real node image's default storage (`ci/node-image/build-real.sh`,
/// `/kind/manifests/default-storage.yaml`): the driver faults name on clusters without Longhorn.
pub const NODE_IMAGE_CSI_DRIVER: &str = "hostpath.csi.faultline.dev";

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum MountKind {
    Bind,
    Volume,
    Tmpfs,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MountSpec {
    pub kind: MountKind,
    /// Host path (bind) or volume name (volume); empty for tmpfs.
    pub source: String,
    pub target: String,
    pub read_only: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PortSpec {
    pub host_ip: String,
    /// None: the engine picks a free port (read back after start).
    pub host_port: Option<u16>,
    pub container_port: u16,
}

/// A file copied into the container before it starts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FileSpec {
    pub path: String,
    pub source: FileSource,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum FileSource {
    Inline(String),
    /// A file on the host running faultline (an image tarball written by `docker save`).
    HostFile(String),
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NodeContainerSpec {
    pub node: String,
    pub role: Role,
    pub container_name: String,
    pub hostname: String,
    /// `repository:tag@sha256:digest`.
    pub image: String,
    pub entrypoint: Vec<String>,
    pub cmd: Vec<String>,
    pub privileged: bool,
    pub security_opts: Vec<String>,
    /// `private`: the node's systemd gets a cgroup tree of its own.
    pub cgroupns: String,
    /// Nodes find each other by container name (Docker's DNS on a user-defined network).
    pub network: String,
    pub mounts: Vec<MountSpec>,
    pub env: Vec<(String, String)>,
    pub labels: Vec<(String, String)>,
    pub ports: Vec<PortSpec>,
    pub files: Vec<FileSpec>,
}

pub const LABEL_CLUSTER: &str = "dev.faultline.cluster";
pub const LABEL_NODE: &str = "dev.faultline.node";
pub const LABEL_ROLE: &str = "dev.faultline.role";

impl NodeContainerSpec {
    /// The volumes this container owns (removed with the cluster).
    pub fn named_volumes(&self) -> Vec<String> {
        self.mounts
            .iter()
            .filter(|m| m.kind == MountKind::Volume)
            .map(|m| m.source.clone())
            .collect()
    }

    /// The equivalent `docker run` (files are copied in before start; printed after it).
    pub fn docker_run_command(&self) -> String {
        let q = |s: &str| shell::quote(s);
        let mut a: Vec<String> = vec!["docker run --detach".into()];
        a.push(format!("--name {}", q(&self.container_name)));
        a.push(format!("--hostname {}", q(&self.hostname)));
        if self.privileged {
            a.push("--privileged".into());
        }
        for o in &self.security_opts {
            a.push(format!("--security-opt {}", q(o)));
        }
        a.push(format!("--cgroupns={}", q(&self.cgroupns)));
        a.push(format!("--network {}", q(&self.network)));
        for m in &self.mounts {
            a.push(match m.kind {
                MountKind::Tmpfs => format!("--tmpfs {}", q(&m.target)),
                MountKind::Bind => {
                    format!(
                        "--volume {}",
                        q(&format!(
                            "{}:{}{}",
                            m.source,
                            m.target,
                            if m.read_only { ":ro" } else { "" }
                        ))
                    )
                }
                MountKind::Volume => {
                    format!("--volume {}", q(&format!("{}:{}", m.source, m.target)))
                }
            });
        }
        for (k, v) in &self.env {
            a.push(format!("--env {}", q(&format!("{k}={v}"))));
        }
        for (k, v) in &self.labels {
            a.push(format!("--label {}", q(&format!("{k}={v}"))));
        }
        for p in &self.ports {
            let host = match p.host_port {
                Some(h) => format!("{}:{h}:{}", p.host_ip, p.container_port),
                None => format!("{}::{}", p.host_ip, p.container_port),
            };
            a.push(format!("--publish {}", q(&host)));
        }
        a.push(format!("--entrypoint {}", q(&self.entrypoint[0])));
        a.push(q(&self.image));
        for w in self.entrypoint[1..].iter().chain(&self.cmd) {
            a.push(q(w));
        }
        a.join(" \\\n    ")
    }
}

/// Host-side paths a cluster needs.
#[derive(Clone, Debug, PartialEq)]
pub struct HostPaths {
    /// Where `docker save` writes the image tarballs before they are copied into the nodes.
    pub images_dir: String,
}

/// File name of an image tarball.
pub fn image_tar_name(image: &str) -> String {
    let s: String = image
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{s}.tar")
}

/// The container of one node.
pub fn node_container(
    input: &ClusterPlanInput,
    names: &KindNames,
    node: &NodeInput,
    kubeadm_yaml: String,
    host: &HostPaths,
) -> NodeContainerSpec {
    let container_name = names.container(&node.name);
    let role = match node.role {
        Role::ControlPlane => "control-plane",
        Role::Worker => "worker",
    };
    let mut mounts = vec![
        MountSpec {
            kind: MountKind::Tmpfs,
            source: String::new(),
            target: "/run".into(),
            read_only: false,
        },
        MountSpec {
            kind: MountKind::Tmpfs,
            source: String::new(),
            target: "/tmp".into(),
            read_only: false,
        },
        MountSpec {
            kind: MountKind::Bind,
            source: "/lib/modules".into(),
            target: "/lib/modules".into(),
            read_only: true,
        },
        MountSpec {
            kind: MountKind::Volume,
            source: format!("{container_name}-containerd"),
            target: "/var/lib/containerd".into(),
            read_only: false,
        },
    ];
    if input.longhorn {
        // Longhorn replicas keep their data here; a volume survives reboots (container restarts)
        // and is not overlayfs.
        mounts.push(MountSpec {
            kind: MountKind::Volume,
            source: format!("{container_name}-longhorn"),
            target: "/var/lib/longhorn".into(),
            read_only: false,
        });
    }
    let ports = if node.role == Role::ControlPlane {
        vec![PortSpec {
            host_ip: input.api_server_address.clone(),
            host_port: None,
            container_port: API_SERVER_PORT,
        }]
    } else {
        vec![]
    };
    NodeContainerSpec {
        node: node.name.clone(),
        role: node.role,
        container_name,
        hostname: node.name.clone(),
        image: input.node_image.clone(),
        entrypoint: vec!["/usr/local/bin/entrypoint".into()],
        cmd: vec!["/sbin/init".into()],
        privileged: true,
        security_opts: vec!["seccomp=unconfined".into(), "apparmor=unconfined".into()],
        cgroupns: "private".into(),
        network: names.network(),
        mounts,
        // The entrypoint and systemd detect the container runtime from `container`.
        env: vec![("container".into(), "docker".into())],
        labels: vec![
            (LABEL_CLUSTER.into(), names.cluster.clone()),
            (LABEL_NODE.into(), node.name.clone()),
            (LABEL_ROLE.into(), role.into()),
        ],
        ports,
        files: std::iter::once(FileSpec {
            path: KUBEADM_CONFIG_PATH.into(),
            source: FileSource::Inline(kubeadm_yaml),
        })
        .chain(input.load_images.iter().map(|i| FileSpec {
            path: format!("{IMAGES_DIR}/{}", image_tar_name(i)),
            source: FileSource::HostFile(format!("{}/{}", host.images_dir, image_tar_name(i))),
        }))
        .collect(),
    }
}
