//! kubeadm configuration (API `kubeadm.k8s.io/v1beta4`, current for Kubernetes 1.35) for the
//! control-plane node (Init + Cluster + Kubelet + KubeProxy configuration) and for workers
//! (Join configuration). Typed, so tests can parse the YAML back.

use crate::input::{ClusterPlanInput, NodeInput};
use crate::plan::container::API_SERVER_PORT;
use crate::plan::KindNames;
use serde::{Deserialize, Serialize};

pub const KUBEADM_API: &str = "kubeadm.k8s.io/v1beta4";
pub const CRI_SOCKET: &str = "unix:///run/containerd/containerd.sock";

/// The one preflight check `kubeadm init`/`join` may fail: SystemVerification, on a host that
/// mounts cgroup v1 (this sandbox's). kubeadm v1.35 makes that an error ("cgroups v1 support is
/// deprecated ... To explicitly enable cgroups v1 support for kubelet v1.35 or newer, you must
/// set the kubelet configuration option 'FailCgroupV1' to 'false'. You must also explicitly
/// skip this validation."), with [`KubeletConfiguration::fail_cgroup_v1`] false beside it. Every
/// other check runs (image presence, ports, swap, containerd's CRI).
pub const IGNORE_PREFLIGHT: &str = "--ignore-preflight-errors=SystemVerification";

/// v1beta4 spells extra arguments as a list of name/value pairs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Arg {
    pub name: String,
    pub value: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BootstrapToken {
    pub token: String,
    pub ttl: String,
    pub usages: Vec<String>,
    pub groups: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeRegistration {
    pub name: String,
    pub cri_socket: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kubelet_extra_args: Vec<Arg>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LocalApiEndpoint {
    pub bind_port: u16,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitConfiguration {
    pub api_version: String,
    pub kind: String,
    pub bootstrap_tokens: Vec<BootstrapToken>,
    #[serde(rename = "localAPIEndpoint")]
    pub local_api_endpoint: LocalApiEndpoint,
    pub node_registration: NodeRegistration,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiServer {
    #[serde(rename = "certSANs")]
    pub cert_sans: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Networking {
    pub pod_subnet: String,
    pub service_subnet: String,
    pub dns_domain: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterConfiguration {
    pub api_version: String,
    pub kind: String,
    pub cluster_name: String,
    pub kubernetes_version: String,
    pub control_plane_endpoint: String,
    pub api_server: ApiServer,
    pub networking: Networking,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KubeletConfiguration {
    pub api_version: String,
    pub kind: String,
    pub cgroup_driver: String,
    pub cgroup_root: String,
    pub fail_swap_on: bool,
    /// false: run on a cgroup v1 host too. Kubelet v1.35 refuses cgroup v1 by default (KEP-5573,
    /// `failCgroupV1` defaults to true); kind nodes inherit the host's cgroup version, and this
    /// sandbox's host mounts v1. Has no effect on a cgroup v2 host.
    #[serde(rename = "failCgroupV1")]
    pub fail_cgroup_v1: bool,
    #[serde(rename = "imageGCHighThresholdPercent")]
    pub image_gc_high_threshold_percent: u8,
    /// Thresholds at 0%: a developer's nearly full disk must not evict the scenario's pods.
    pub eviction_hard: std::collections::BTreeMap<String, String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Conntrack {
    /// 0: leave nf_conntrack_max alone (not writable from a container).
    pub max_per_core: u32,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KubeProxyConfiguration {
    pub api_version: String,
    pub kind: String,
    pub mode: String,
    pub conntrack: Conntrack,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BootstrapTokenDiscovery {
    pub api_server_endpoint: String,
    pub token: String,
    /// A throwaway cluster on a private bridge network: the CA is not pinned (as kind does).
    #[serde(rename = "unsafeSkipCAVerification")]
    pub unsafe_skip_ca_verification: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Discovery {
    pub bootstrap_token: BootstrapTokenDiscovery,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JoinConfiguration {
    pub api_version: String,
    pub kind: String,
    pub discovery: Discovery,
    pub node_registration: NodeRegistration,
}

fn registration(node: &NodeInput) -> NodeRegistration {
    NodeRegistration {
        name: node.name.clone(),
        cri_socket: CRI_SOCKET.into(),
        kubelet_extra_args: vec![],
    }
}

pub fn control_plane_endpoint(names: &KindNames) -> String {
    format!("{}:{API_SERVER_PORT}", names.control_plane_container())
}

/// The documents of the control-plane node's config.
pub fn control_plane_docs(
    input: &ClusterPlanInput,
    names: &KindNames,
    node: &NodeInput,
    token: &str,
) -> (
    InitConfiguration,
    ClusterConfiguration,
    KubeletConfiguration,
    KubeProxyConfiguration,
) {
    let init = InitConfiguration {
        api_version: KUBEADM_API.into(),
        kind: "InitConfiguration".into(),
        bootstrap_tokens: vec![BootstrapToken {
            token: token.into(),
            ttl: "24h0m0s".into(),
            usages: vec!["signing".into(), "authentication".into()],
            groups: vec!["system:bootstrappers:kubeadm:default-node-token".into()],
        }],
        local_api_endpoint: LocalApiEndpoint {
            bind_port: API_SERVER_PORT,
        },
        node_registration: registration(node),
    };
    let mut sans = vec![
        "localhost".to_string(),
        "127.0.0.1".into(),
        names.control_plane_container(),
        node.name.clone(),
    ];
    if input.api_server_address != "0.0.0.0" && !sans.contains(&input.api_server_address) {
        sans.push(input.api_server_address.clone());
    }
    for s in &input.extra_cert_sans {
        if !sans.contains(s) {
            sans.push(s.clone());
        }
    }
    let cluster = ClusterConfiguration {
        api_version: KUBEADM_API.into(),
        kind: "ClusterConfiguration".into(),
        cluster_name: names.cluster.clone(),
        kubernetes_version: input.kubernetes_version.clone(),
        control_plane_endpoint: control_plane_endpoint(names),
        api_server: ApiServer { cert_sans: sans },
        networking: Networking {
            pod_subnet: input.pod_subnet.clone(),
            service_subnet: input.service_subnet.clone(),
            dns_domain: "cluster.local".into(),
        },
    };
    let kubelet = KubeletConfiguration {
        api_version: "kubelet.config.k8s.io/v1beta1".into(),
        kind: "KubeletConfiguration".into(),
        cgroup_driver: "systemd".into(),
        cgroup_root: "/kubelet".into(),
        fail_swap_on: false,
        fail_cgroup_v1: false,
        image_gc_high_threshold_percent: 100,
        eviction_hard: [
            ("imagefs.available", "0%"),
            ("nodefs.available", "0%"),
            ("nodefs.inodesFree", "0%"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect(),
    };
    let proxy = KubeProxyConfiguration {
        api_version: "kubeproxy.config.k8s.io/v1alpha1".into(),
        kind: "KubeProxyConfiguration".into(),
        mode: "iptables".into(),
        conntrack: Conntrack { max_per_core: 0 },
    };
    (init, cluster, kubelet, proxy)
}

pub fn join_doc(names: &KindNames, node: &NodeInput, token: &str) -> JoinConfiguration {
    JoinConfiguration {
        api_version: KUBEADM_API.into(),
        kind: "JoinConfiguration".into(),
        discovery: Discovery {
            bootstrap_token: BootstrapTokenDiscovery {
                api_server_endpoint: control_plane_endpoint(names),
                token: token.into(),
                unsafe_skip_ca_verification: true,
            },
        },
        node_registration: registration(node),
    }
}

fn yaml<T: Serialize>(v: &T) -> String {
    serde_yaml::to_string(v).expect("kubeadm config serializes")
}

/// The config file of a node (`/kind/kubeadm.conf`), multi-document YAML.
pub fn node_config_yaml(
    input: &ClusterPlanInput,
    names: &KindNames,
    node: &NodeInput,
    token: &str,
) -> String {
    match node.role {
        crate::input::Role::ControlPlane => {
            let (i, c, k, p) = control_plane_docs(input, names, node, token);
            [yaml(&i), yaml(&c), yaml(&k), yaml(&p)].join("---\n")
        }
        crate::input::Role::Worker => yaml(&join_doc(names, node, token)),
    }
}

/// A bootstrap token (`[a-z0-9]{6}.[a-z0-9]{16}`) derived from `seed` (pass something random for
/// real clusters; the dry run passes a fixed seed so its output is reproducible).
pub fn bootstrap_token(seed: &str) -> String {
    use sha2::{Digest, Sha256};
    let h = format!("{:x}", Sha256::digest(seed.as_bytes()));
    format!("{}.{}", &h[..6], &h[6..22])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::{ClusterPlanInput, NodeInput};

    fn input() -> ClusterPlanInput {
        let mut i = ClusterPlanInput::new(
            "stale-mount",
            vec![
                NodeInput::control_plane("control-plane"),
                NodeInput::worker("worker-04"),
            ],
        );
        i.extra_cert_sans = vec!["docker".into()];
        i
    }
    fn names() -> KindNames {
        KindNames {
            cluster: "stale-mount".into(),
            control_plane_node: "control-plane".into(),
        }
    }
    fn docs(yaml: &str) -> Vec<serde_yaml::Value> {
        serde_yaml::Deserializer::from_str(yaml)
            .map(|d| serde_yaml::Value::deserialize(d).unwrap())
            .collect()
    }

    #[test]
    fn control_plane_config_parses_back_with_every_document() {
        let i = input();
        let y = node_config_yaml(&i, &names(), &i.nodes[0], "abcdef.0123456789abcdef");
        let d = docs(&y);
        let kinds: Vec<&str> = d.iter().map(|v| v["kind"].as_str().unwrap()).collect();
        assert_eq!(
            kinds,
            [
                "InitConfiguration",
                "ClusterConfiguration",
                "KubeletConfiguration",
                "KubeProxyConfiguration"
            ]
        );
        let init: InitConfiguration = serde_yaml::from_value(d[0].clone()).unwrap();
        assert_eq!(init.api_version, "kubeadm.k8s.io/v1beta4");
        assert_eq!(init.bootstrap_tokens[0].token, "abcdef.0123456789abcdef");
        assert_eq!(init.node_registration.name, "control-plane");
        assert_eq!(
            init.node_registration.cri_socket,
            "unix:///run/containerd/containerd.sock"
        );
        assert_eq!(init.local_api_endpoint.bind_port, 6443);
        let c: ClusterConfiguration = serde_yaml::from_value(d[1].clone()).unwrap();
        assert_eq!(c.kubernetes_version, "v1.35.5");
        assert_eq!(c.cluster_name, "stale-mount");
        assert_eq!(c.control_plane_endpoint, "stale-mount-control-plane:6443");
        assert_eq!(c.networking.pod_subnet, "10.244.0.0/16");
        assert_eq!(c.networking.service_subnet, "10.96.0.0/16");
        for san in [
            "localhost",
            "127.0.0.1",
            "stale-mount-control-plane",
            "control-plane",
            "docker",
        ] {
            assert!(
                c.api_server.cert_sans.iter().any(|s| s == san),
                "missing SAN {san}: {:?}",
                c.api_server.cert_sans
            );
        }
        let k: KubeletConfiguration = serde_yaml::from_value(d[2].clone()).unwrap();
        assert_eq!(k.cgroup_driver, "systemd");
        assert!(!k.fail_swap_on);
        assert_eq!(k.eviction_hard["nodefs.available"], "0%");
        let p: KubeProxyConfiguration = serde_yaml::from_value(d[3].clone()).unwrap();
        assert_eq!(p.mode, "iptables");
        assert_eq!(p.conntrack.max_per_core, 0);
        // Field spelling kubeadm expects (not just what serde round-trips).
        for key in [
            "localAPIEndpoint:",
            "certSANs:",
            "controlPlaneEndpoint:",
            "imageGCHighThresholdPercent: 100",
            "cgroupDriver: systemd",
            "failCgroupV1: false",
            "maxPerCore: 0",
            "criSocket:",
            "podSubnet:",
        ] {
            assert!(y.contains(key), "no {key} in\n{y}");
        }
    }

    #[test]
    fn worker_config_is_a_join_configuration_against_the_control_plane() {
        let i = input();
        let y = node_config_yaml(&i, &names(), &i.nodes[1], "abcdef.0123456789abcdef");
        assert_eq!(docs(&y).len(), 1);
        let j: JoinConfiguration = serde_yaml::from_str(&y).unwrap();
        assert_eq!(j.kind, "JoinConfiguration");
        assert_eq!(j.api_version, KUBEADM_API);
        assert_eq!(
            j.discovery.bootstrap_token.api_server_endpoint,
            "stale-mount-control-plane:6443"
        );
        assert_eq!(j.discovery.bootstrap_token.token, "abcdef.0123456789abcdef");
        assert!(j.discovery.bootstrap_token.unsafe_skip_ca_verification);
        assert_eq!(j.node_registration.name, "worker-04");
        assert!(
            y.contains("apiServerEndpoint:") && y.contains("unsafeSkipCAVerification: true"),
            "{y}"
        );
    }

    #[test]
    fn bootstrap_tokens_have_kubeadms_format() {
        let t = bootstrap_token("x");
        let (a, b) = t.split_once('.').unwrap();
        assert_eq!((a.len(), b.len()), (6, 16));
        assert!(t
            .chars()
            .all(|c| c == '.' || c.is_ascii_digit() || c.is_ascii_lowercase()));
        assert_ne!(bootstrap_token("x"), bootstrap_token("y"));
    }
}
