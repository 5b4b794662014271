//! Longhorn on kind: open-iscsi inside every node, a clear error when the Docker host's kernel
//! lacks `iscsi_tcp` (longhorn-manager crash-loops otherwise: longhorn/longhorn#1984, #1853),
//! the pinned release manifest, and a wait until it is healthy.

use crate::input::ClusterPlanInput;
use crate::plan::{Step, ADMIN_KUBECONFIG};
use crate::versions;

pub const NAMESPACE: &str = "longhorn-system";
pub const DRIVER: &str = "driver.longhorn.io";
pub const CSI_PLUGIN_LABEL: &str = "app=longhorn-csi-plugin";
pub const CSI_PLUGIN_DAEMONSET: &str = "longhorn-csi-plugin";

pub const NO_ISCSI_TCP: &str = "the Docker host's kernel has no `iscsi_tcp` module loaded, and Longhorn needs it \
(without it longhorn-manager crash-loops: longhorn/longhorn#1984). On the Docker host run `sudo modprobe iscsi_tcp` \
(and list it in /etc/modules-load.d/ to keep it), or run the scenario without `storage: longhorn`";

/// Steps that make the nodes ready for Longhorn (before the manifest is applied).
pub fn prerequisites(input: &ClusterPlanInput) -> Vec<Step> {
    let mut steps = vec![];
    if let Some(cp) = input.control_plane() {
        // One kernel serves every node: check it once. modprobe may load it (the node is
        // privileged and sees the host's /lib/modules); the check is what counts.
        steps.push(
            Step::node(
                "the host kernel has iscsi_tcp (Longhorn's iSCSI frontend)",
                &cp.name,
                "modprobe iscsi_tcp 2>/dev/null || true; test -d /sys/module/iscsi_tcp",
            )
            .on_failure(NO_ISCSI_TCP),
        );
    }
    for n in &input.nodes {
        steps.push(
            Step::node(
                format!("install open-iscsi (iscsiadm, iscsid) and nfs-common in {}", n.name),
                &n.name,
                "command -v iscsiadm >/dev/null 2>&1 && command -v mount.nfs >/dev/null 2>&1 || \
                 { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends open-iscsi nfs-common; }",
            )
            .retry(10, 600),
        );
        steps.push(Step::node(
            format!("start iscsid in {}", n.name),
            &n.name,
            "systemctl enable --now iscsid && iscsiadm --version",
        ));
    }
    steps
}

/// Apply the pinned manifest and wait until Longhorn serves volumes on every node.
pub fn install(input: &ClusterPlanInput) -> Vec<Step> {
    let cp = input
        .control_plane()
        .map(|n| n.name.clone())
        .unwrap_or_default();
    let url = versions::longhorn_manifest_url();
    let mut steps = vec![
        Step::kubectl_owned(
            format!("apply Longhorn {}", versions::LONGHORN_VERSION),
            vec!["apply".into(), "-f".into(), url],
        )
        .retry(10, 120),
        Step::kubectl(
            "longhorn-manager runs on every node",
            &[
                "-n",
                NAMESPACE,
                "rollout",
                "status",
                "daemonset/longhorn-manager",
                "--timeout=600s",
            ],
        )
        .retry(10, 900),
        // The driver deployer creates the CSI components once longhorn-manager is up.
        Step::kubectl(
            "the CSI node plugin runs on every node",
            &[
                "-n",
                NAMESPACE,
                "rollout",
                "status",
                "daemonset/longhorn-csi-plugin",
                "--timeout=60s",
            ],
        )
        .retry(10, 900),
        Step::kubectl(
            "Longhorn deployments are available",
            &[
                "-n",
                NAMESPACE,
                "wait",
                "--for=condition=Available",
                "deployment",
                "--all",
                "--timeout=600s",
            ],
        )
        .retry(10, 900),
        Step::kubectl(
            "StorageClass longhorn exists",
            &["get", "storageclass", "longhorn"],
        )
        .retry(5, 300),
    ];
    for n in &input.nodes {
        steps.push(
            Step::node(
                format!("{DRIVER} is registered on {}", n.name),
                &cp,
                format!(
                    "kubectl --kubeconfig={ADMIN_KUBECONFIG} get csinode {} -o jsonpath='{{.spec.drivers[*].name}}' | grep -qw {DRIVER}",
                    n.name
                ),
            )
            .retry(5, 600),
        );
    }
    steps
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::NodeInput;
    use crate::plan::Action;

    fn input() -> ClusterPlanInput {
        ClusterPlanInput::new(
            "lh",
            vec![
                NodeInput::control_plane("cp"),
                NodeInput::worker("w1"),
                NodeInput::worker("w2"),
            ],
        )
        .with_longhorn(true)
    }

    #[test]
    fn checks_iscsi_tcp_once_with_a_clear_error_and_installs_open_iscsi_in_every_node() {
        let s = prerequisites(&input());
        let checks: Vec<&Step> = s.iter().filter(|s| matches!(&s.action, Action::NodeShell { script, .. } if script.contains("/sys/module/iscsi_tcp"))).collect();
        assert_eq!(checks.len(), 1);
        let msg = checks[0].on_failure.as_deref().unwrap();
        assert!(
            msg.contains("iscsi_tcp")
                && msg.contains("modprobe")
                && msg.contains("longhorn/longhorn#1984"),
            "{msg}"
        );
        for node in ["cp", "w1", "w2"] {
            assert!(
                s.iter().any(|s| s.target_node() == Some(node) && matches!(&s.action, Action::NodeShell { script, .. } if script.contains("apt-get install") && script.contains("open-iscsi"))),
                "no open-iscsi install on {node}"
            );
            assert!(s.iter().any(|s| s.target_node() == Some(node) && matches!(&s.action, Action::NodeShell { script, .. } if script.contains("enable --now iscsid"))));
        }
    }

    #[test]
    fn installs_the_pinned_manifest_and_waits_for_the_driver_on_every_node() {
        let s = install(&input());
        assert!(
            matches!(&s[0].action, Action::Kubectl { args, .. } if args.last().unwrap().ends_with("/v1.9.1/deploy/longhorn.yaml"))
        );
        for ds in [
            "daemonset/longhorn-manager",
            "daemonset/longhorn-csi-plugin",
        ] {
            assert!(s.iter().any(|s| matches!(&s.action, Action::Kubectl { args, .. } if args.iter().any(|a| a == ds))), "no wait for {ds}");
        }
        let driver_checks = s.iter().filter(|s| matches!(&s.action, Action::NodeShell { script, .. } if script.contains("get csinode"))).count();
        assert_eq!(driver_checks, 3);
        assert!(s.iter().all(|s| s.retry.is_some()), "every wait retries");
    }
}
