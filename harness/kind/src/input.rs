//! What the kind and existing providers are asked for, in types of this crate (it must not
//! depend on `faultline`). The runner's types map onto these one to one:
//! `ClusterSpec.nodes` -> [`NodeInput`], `Storage::Longhorn` -> `longhorn: true`. Faults are
//! the fault catalogue's `faultline_faults::NodeOperation`, as the runner has them.

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Hash)]
pub enum Role {
    #[serde(rename = "control-plane")]
    ControlPlane,
    #[serde(rename = "worker")]
    Worker,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Hash)]
pub struct NodeInput {
    /// The Kubernetes node name (and the container's hostname).
    pub name: String,
    pub role: Role,
}

impl NodeInput {
    pub fn control_plane(name: &str) -> NodeInput {
        NodeInput {
            name: name.into(),
            role: Role::ControlPlane,
        }
    }
    pub fn worker(name: &str) -> NodeInput {
        NodeInput {
            name: name.into(),
            role: Role::Worker,
        }
    }
}

/// One cluster to bring up.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClusterPlanInput {
    /// Cluster name: a DNS label prefix of container, network and volume names
    /// (`[a-z0-9-]`, at most 40 characters; [`sanitize_cluster_name`] makes one).
    pub cluster_name: String,
    /// Exactly one control-plane node; workers in order.
    pub nodes: Vec<NodeInput>,
    /// `kindest/node` image (default: the pinned [`crate::versions::NODE_IMAGE`]).
    pub node_image: String,
    /// Must match the node image (kubeadm refuses a version its binaries do not have).
    pub kubernetes_version: String,
    /// Install Longhorn (open-iscsi in every node, the pinned release manifest, wait healthy).
    pub longhorn: bool,
    /// Without Longhorn: give the StorageClass name `longhorn` to the node image's CSI driver
    /// (`--longhorn-stand-in`), so scenarios written for Longhorn run on a host without iSCSI.
    pub longhorn_stand_in: bool,
    /// Images to load into every node's containerd (the controller under test), from the
    /// Docker engine's image store (build them first, e.g. `docker build -t ctrl:ci .`).
    pub load_images: Vec<String>,
    /// Host address the API server port is published on (default 127.0.0.1; `0.0.0.0` when
    /// the Docker engine is remote, e.g. docker-in-docker in GitLab CI).
    pub api_server_address: String,
    /// Extra names or addresses for the API server certificate (e.g. `docker` for dind).
    pub extra_cert_sans: Vec<String>,
    /// Pod network (kindnet) and service network.
    pub pod_subnet: String,
    pub service_subnet: String,
}

impl ClusterPlanInput {
    /// The pinned defaults for these nodes.
    pub fn new(cluster_name: &str, nodes: Vec<NodeInput>) -> ClusterPlanInput {
        ClusterPlanInput {
            cluster_name: sanitize_cluster_name(cluster_name),
            nodes,
            node_image: crate::versions::NODE_IMAGE.into(),
            kubernetes_version: crate::versions::KUBERNETES_VERSION.into(),
            longhorn: false,
            longhorn_stand_in: false,
            load_images: vec![],
            api_server_address: "127.0.0.1".into(),
            extra_cert_sans: vec![],
            pod_subnet: "10.244.0.0/16".into(),
            service_subnet: "10.96.0.0/16".into(),
        }
    }
    pub fn with_longhorn(mut self, on: bool) -> Self {
        self.longhorn = on;
        self
    }
    pub fn with_longhorn_stand_in(mut self, on: bool) -> Self {
        self.longhorn_stand_in = on;
        self
    }
    pub fn with_images(mut self, images: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.load_images = images.into_iter().map(Into::into).collect();
        self
    }
    /// Settings from the environment (`with_env_from(|k| std::env::var(k).ok())`):
    /// * `FAULTLINE_KIND_IMAGES`: comma-separated images to load (the controller under test);
    /// * `FAULTLINE_KIND_NODE_IMAGE` (and `FAULTLINE_KIND_KUBERNETES_VERSION` with it);
    /// * `FAULTLINE_KIND_API_ADDRESS`: host address the API server port is published on;
    /// * `DOCKER_HOST=tcp://HOST:PORT` (a remote engine, e.g. docker-in-docker): publish on
    ///   0.0.0.0 and add HOST to the API server certificate, since the kubeconfig will name it.
    pub fn with_env_from(mut self, get: impl Fn(&str) -> Option<String>) -> Self {
        if let Some(images) = get("FAULTLINE_KIND_IMAGES") {
            for i in images.split(',').map(str::trim).filter(|i| !i.is_empty()) {
                if !self.load_images.iter().any(|x| x == i) {
                    self.load_images.push(i.to_string());
                }
            }
        }
        if let Some(img) = get("FAULTLINE_KIND_NODE_IMAGE").filter(|s| !s.is_empty()) {
            self = self.with_node_image(Some(&img));
        }
        if let Some(v) = get("FAULTLINE_KIND_KUBERNETES_VERSION").filter(|s| !s.is_empty()) {
            self.kubernetes_version = v;
        }
        if let Some(host) = get("DOCKER_HOST").and_then(|h| {
            h.strip_prefix("tcp://")
                .map(|r| r.split(':').next().unwrap_or("").to_string())
        }) {
            if !host.is_empty() {
                self.api_server_address = "0.0.0.0".into();
                if !self.extra_cert_sans.contains(&host) {
                    self.extra_cert_sans.push(host);
                }
            }
        }
        if let Some(a) = get("FAULTLINE_KIND_API_ADDRESS").filter(|s| !s.is_empty()) {
            self.api_server_address = a;
        }
        self
    }
    /// A node image chosen by the caller (`None` keeps the current one). Any tag, local or
    /// pinned; the image is looked up locally before it is pulled. A tag that names a Kubernetes
    /// version (`v1.35.4`, `v1.35.4-real-<hash>`) sets `kubernetes_version` too: kubeadm can
    /// only install the version its node image ships.
    pub fn with_node_image(mut self, image: Option<&str>) -> Self {
        if let Some(i) = image {
            self.node_image = i.to_string();
            if let Some(v) = crate::versions::kubernetes_version_of_image(i) {
                self.kubernetes_version = v.to_string();
            }
        }
        self
    }
    pub fn control_plane(&self) -> Option<&NodeInput> {
        self.nodes.iter().find(|n| n.role == Role::ControlPlane)
    }
    pub fn workers(&self) -> impl Iterator<Item = &NodeInput> {
        self.nodes.iter().filter(|n| n.role == Role::Worker)
    }
    /// Two inputs with the same fingerprint can share one cluster (cluster reuse across the
    /// scenarios of a run): same topology, image, version, storage and images.
    pub fn reuse_key(&self) -> String {
        let mut c = self.clone();
        c.cluster_name = String::new();
        serde_json::to_string(&c).unwrap_or_default()
    }
}

/// A name usable as a container/network name prefix and DNS label: lower case, `[a-z0-9-]`,
/// no leading/trailing '-', at most 40 characters, never empty.
pub fn sanitize_cluster_name(raw: &str) -> String {
    let mut s: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    while s.contains("--") {
        s = s.replace("--", "-");
    }
    let s = s.trim_matches('-');
    let mut s: String = s.chars().take(40).collect();
    while s.ends_with('-') {
        s.pop();
    }
    if s.is_empty() {
        "faultline".into()
    } else {
        s
    }
}

/// Which node log a line came from (the runner's `LogSourceKind` minus the controller).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Hash)]
#[serde(rename_all = "camelCase")]
pub enum LogSource {
    Kubelet,
    CsiPlugin,
}

/// A line of a node log.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NodeLogLine {
    pub source: LogSource,
    pub node: String,
    pub text: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case("stale-csi-mount", "stale-csi-mount")]
    #[case("Stale CSI  mount!", "stale-csi-mount")]
    #[case("---", "faultline")]
    #[case(
        "a_very_long_name_that_goes_on_and_on_and_on_forever_and_ever",
        "a-very-long-name-that-goes-on-and-on-and"
    )]
    fn sanitizes_cluster_names(#[case] raw: &str, #[case] want: &str) {
        assert_eq!(sanitize_cluster_name(raw), want);
    }

    #[test]
    fn environment_adds_images_and_adapts_to_a_remote_engine() {
        let env = |k: &str| match k {
            "FAULTLINE_KIND_IMAGES" => Some("ctrl:ci, helper:1 ,".to_string()),
            "DOCKER_HOST" => Some("tcp://docker:2375".to_string()),
            _ => None,
        };
        let i = ClusterPlanInput::new("x", vec![NodeInput::control_plane("cp")])
            .with_images(["ctrl:ci"])
            .with_env_from(env);
        assert_eq!(i.load_images, ["ctrl:ci", "helper:1"]);
        assert_eq!(i.api_server_address, "0.0.0.0");
        assert_eq!(i.extra_cert_sans, ["docker"]);
        let local =
            ClusterPlanInput::new("x", vec![NodeInput::control_plane("cp")]).with_env_from(|k| {
                (k == "DOCKER_HOST").then(|| "unix:///var/run/docker.sock".to_string())
            });
        assert_eq!(local.api_server_address, "127.0.0.1");
        assert!(local.extra_cert_sans.is_empty());
    }

    #[test]
    fn a_node_image_tag_that_names_a_version_sets_kubernetes_version() {
        let cp = || vec![NodeInput::control_plane("cp")];
        let real = ClusterPlanInput::new("x", cp())
            .with_node_image(Some("faultline-node:v1.35.4-real-4b1cb1d73f078d9c"));
        assert_eq!(real.kubernetes_version, "v1.35.4");
        // A stand-in tag names no version: the pinned one stays.
        let standin = ClusterPlanInput::new("x", cp())
            .with_node_image(Some("faultline-node:9422687973dcbb2f"));
        assert_eq!(
            standin.kubernetes_version,
            crate::versions::KUBERNETES_VERSION
        );
        // The environment's explicit version comes after its image, so it wins (and must match).
        let env = |k: &str| match k {
            "FAULTLINE_KIND_NODE_IMAGE" => Some("faultline-node:v1.35.4-real-abc".to_string()),
            "FAULTLINE_KIND_KUBERNETES_VERSION" => Some("v1.35.5".to_string()),
            _ => None,
        };
        let mismatched = ClusterPlanInput::new("x", cp()).with_env_from(env);
        // (plan::cluster's tests check that validation refuses this mismatch.)
        assert_eq!(mismatched.kubernetes_version, "v1.35.5");
    }

    #[test]
    fn reuse_key_ignores_the_name_only() {
        let a = ClusterPlanInput::new(
            "a",
            vec![NodeInput::control_plane("cp"), NodeInput::worker("w1")],
        );
        let b = ClusterPlanInput::new(
            "b",
            vec![NodeInput::control_plane("cp"), NodeInput::worker("w1")],
        );
        assert_eq!(a.reuse_key(), b.reuse_key());
        assert_ne!(a.reuse_key(), b.clone().with_longhorn(true).reuse_key());
        assert_ne!(
            a.reuse_key(),
            ClusterPlanInput::new("a", vec![NodeInput::control_plane("cp")]).reuse_key()
        );
    }
}
