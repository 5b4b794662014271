//! The pure plan layer: everything a kind (or existing) run will do, as data. Nothing here
//! talks to Docker or a cluster; the executors (`crate::exec`) carry plans out, and the dry run
//! prints them.

pub mod cluster;
pub mod container;
pub mod faults;
pub mod kubeadm;
pub mod longhorn;

use crate::shell;
use serde::Serialize;
use std::time::Duration;

/// Where the admin kubeconfig lives inside the control-plane node (kubeadm's default).
pub const ADMIN_KUBECONFIG: &str = "/etc/kubernetes/admin.conf";

/// One step of a plan.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Step {
    /// What the step is for, for people (printed by the dry run, logged by the real run).
    pub what: String,
    pub action: Action,
    /// Run again until it succeeds (for conditions that become true: nodes Ready, pods
    /// Running), every `interval`, for at most `timeout`.
    pub retry: Option<Retry>,
    /// A failure is logged and the plan goes on (clean-up steps, best-effort checks).
    pub ignore_failure: bool,
    /// Store the trimmed stdout as `{{name}}` for later steps.
    pub capture: Option<String>,
    /// When this step fails, this message is the error (a clear one, e.g. the host lacks
    /// `iscsi_tcp`); the command's output follows it.
    pub on_failure: Option<String>,
    /// Success also needs this of stdout.
    pub expect: Option<Expect>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum Expect {
    /// Nothing printed (e.g. no pod matches).
    EmptyStdout,
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Retry {
    #[serde(with = "secs")]
    pub interval: Duration,
    #[serde(with = "secs")]
    pub timeout: Duration,
}

mod secs {
    use serde::Serializer;
    use std::time::Duration;
    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("{}s", d.as_secs()))
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum Action {
    /// `sh -c <script>` on a node (kind: `docker exec <container>`; existing: through the node
    /// agent, `nsenter` into the host's namespaces).
    NodeShell { node: String, script: String },
    /// `kubectl <args>` with cluster-admin credentials (kind: inside the control-plane node;
    /// existing: on the host with `--context`), optionally with a manifest on stdin.
    Kubectl {
        args: Vec<String>,
        stdin: Option<String>,
    },
    /// An operation of the Docker engine (kind only).
    Docker(DockerOp),
    /// Read the control-plane's admin kubeconfig and write it on the host with the server
    /// rewritten to the published API server port (kind only).
    ExportKubeconfig { host_path: String },
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum DockerOp {
    /// `docker image inspect <image> || docker pull <image>`; a pinned `repo:tag@digest` also
    /// matches a local `repo:tag` without a repo digest (a `docker load`ed image).
    EnsureImage {
        image: String,
    },
    /// `docker network create --driver bridge <name>` (labelled); an existing network of that
    /// name is an error (it is another run's).
    NetworkCreate {
        name: String,
        labels: Vec<(String, String)>,
    },
    NetworkRemove {
        name: String,
    },
    /// `docker network disconnect --force <network> <container>`.
    NetworkDisconnect {
        network: String,
        container: String,
    },
    /// `docker network connect <network> <container>` (no-op when connected).
    NetworkConnect {
        network: String,
        container: String,
    },
    /// Start the node container described by `spec` (testcontainers `GenericImage`).
    Run {
        spec: Box<container::NodeContainerSpec>,
    },
    /// `docker restart --time <grace> <container>`: the image's stop signal (SIGRTMIN+3 for
    /// systemd) then SIGKILL after `grace`, then start.
    Restart {
        container: String,
        grace_secs: u32,
    },
    /// `docker stop --time <grace> <container>`.
    Stop {
        container: String,
        grace_secs: u32,
    },
    /// `docker start <container>` (no-op when running).
    Start {
        container: String,
    },
    /// `docker kill --signal <signal> <container>`.
    Kill {
        container: String,
        signal: String,
    },
    /// `docker rm --force --volumes <container>`.
    Remove {
        container: String,
    },
    /// `docker volume rm --force <name>`.
    VolumeRemove {
        name: String,
    },
    /// `docker save --output <path> <image>` into the directory shared with every node.
    SaveImage {
        image: String,
        host_path: String,
    },
    /// `docker logs <container>` (the node's console: systemd and the entrypoint).
    Logs {
        container: String,
    },
}

impl Step {
    pub fn new(what: impl Into<String>, action: Action) -> Step {
        Step {
            what: what.into(),
            action,
            retry: None,
            ignore_failure: false,
            capture: None,
            on_failure: None,
            expect: None,
        }
    }
    pub fn node(what: impl Into<String>, node: &str, script: impl Into<String>) -> Step {
        Step::new(
            what,
            Action::NodeShell {
                node: node.into(),
                script: script.into(),
            },
        )
    }
    pub fn kubectl(what: impl Into<String>, args: &[&str]) -> Step {
        Step::new(
            what,
            Action::Kubectl {
                args: args.iter().map(|s| s.to_string()).collect(),
                stdin: None,
            },
        )
    }
    pub fn kubectl_owned(what: impl Into<String>, args: Vec<String>) -> Step {
        Step::new(what, Action::Kubectl { args, stdin: None })
    }
    pub fn apply(what: impl Into<String>, manifest: impl Into<String>) -> Step {
        Step::new(
            what,
            Action::Kubectl {
                args: vec!["apply".into(), "-f".into(), "-".into()],
                stdin: Some(manifest.into()),
            },
        )
    }
    pub fn docker(what: impl Into<String>, op: DockerOp) -> Step {
        Step::new(what, Action::Docker(op))
    }
    pub fn retry(mut self, interval_secs: u64, timeout_secs: u64) -> Step {
        self.retry = Some(Retry {
            interval: Duration::from_secs(interval_secs),
            timeout: Duration::from_secs(timeout_secs),
        });
        self
    }
    pub fn ignore_failure(mut self) -> Step {
        self.ignore_failure = true;
        self
    }
    pub fn capture(mut self, var: &str) -> Step {
        self.capture = Some(var.into());
        self
    }
    pub fn expect_empty_stdout(mut self) -> Step {
        self.expect = Some(Expect::EmptyStdout);
        self
    }
    pub fn on_failure(mut self, msg: impl Into<String>) -> Step {
        self.on_failure = Some(msg.into());
        self
    }
    /// The node a step runs on, if any.
    pub fn target_node(&self) -> Option<&str> {
        match &self.action {
            Action::NodeShell { node, .. } => Some(node),
            _ => None,
        }
    }
}

/// Replace `{{name}}` by captured values.
pub fn substitute(text: &str, vars: &[(String, String)]) -> String {
    let mut out = text.to_string();
    for (k, v) in vars {
        out = out.replace(&format!("{{{{{k}}}}}"), v);
    }
    out
}

/// How kind names things: containers `<cluster>-<node>`, one network per cluster.
#[derive(Clone, Debug, PartialEq)]
pub struct KindNames {
    pub cluster: String,
    pub control_plane_node: String,
}

impl KindNames {
    pub fn container(&self, node: &str) -> String {
        format!("{}-{}", self.cluster, node)
    }
    pub fn network(&self) -> String {
        format!("faultline-{}", self.cluster)
    }
    pub fn control_plane_container(&self) -> String {
        self.container(&self.control_plane_node)
    }
    /// The argv a kind executor runs for a step (the inner command of `docker exec`), and the
    /// container it runs in; None for engine operations.
    pub fn exec_argv(&self, action: &Action) -> Option<(String, Vec<String>)> {
        match action {
            Action::NodeShell { node, script } => Some((
                self.container(node),
                vec!["sh".into(), "-c".into(), script.clone()],
            )),
            Action::Kubectl { args, .. } => {
                let mut argv = vec![
                    "kubectl".to_string(),
                    format!("--kubeconfig={ADMIN_KUBECONFIG}"),
                ];
                argv.extend(args.iter().cloned());
                Some((self.control_plane_container(), argv))
            }
            Action::ExportKubeconfig { .. } => Some((
                self.control_plane_container(),
                vec!["cat".into(), ADMIN_KUBECONFIG.into()],
            )),
            Action::Docker(_) => None,
        }
    }
    /// The step as one command line, exactly as a person would type it (heredoc for stdin).
    pub fn render(&self, action: &Action) -> String {
        match action {
            Action::Docker(op) => render_docker(op),
            Action::ExportKubeconfig { host_path } => {
                let (c, argv) = self.exec_argv(action).unwrap();
                format!(
                    "docker exec {} {} > {}   # then server: https://<docker host>:<host port of {}/tcp>",
                    shell::quote(&c),
                    shell::join(&argv),
                    shell::quote(host_path),
                    container::API_SERVER_PORT
                )
            }
            Action::Kubectl {
                stdin: Some(input), ..
            } => {
                let (c, argv) = self.exec_argv(action).unwrap();
                format!(
                    "docker exec -i {} {} <<'EOF'\n{}\nEOF",
                    shell::quote(&c),
                    shell::join(&argv),
                    input.trim_end()
                )
            }
            _ => {
                let (c, argv) = self.exec_argv(action).unwrap();
                format!("docker exec {} {}", shell::quote(&c), shell::join(&argv))
            }
        }
    }
}

pub fn render_docker(op: &DockerOp) -> String {
    let q = |s: &str| shell::quote(s);
    match op {
        DockerOp::EnsureImage { image } => {
            let (tagged, _) = image.split_once('@').unwrap_or((image, ""));
            if tagged == image {
                format!(
                    "docker image inspect {} >/dev/null || docker pull {}",
                    q(image),
                    q(image)
                )
            } else {
                format!("docker image inspect {} >/dev/null || docker image inspect {} >/dev/null || docker pull {}", q(image), q(tagged), q(image))
            }
        }
        DockerOp::NetworkCreate { name, labels } => {
            let l: String = labels
                .iter()
                .map(|(k, v)| format!(" --label {}", q(&format!("{k}={v}"))))
                .collect();
            format!("docker network create --driver bridge{l} {}", q(name))
        }
        DockerOp::NetworkRemove { name } => format!("docker network rm {}", q(name)),
        DockerOp::NetworkDisconnect { network, container } => format!(
            "docker network disconnect --force {} {}",
            q(network),
            q(container)
        ),
        DockerOp::NetworkConnect { network, container } => {
            format!("docker network connect {} {}", q(network), q(container))
        }
        DockerOp::Run { spec } => spec.docker_run_command(),
        DockerOp::Restart {
            container,
            grace_secs,
        } => format!("docker restart --time {grace_secs} {}", q(container)),
        DockerOp::Stop {
            container,
            grace_secs,
        } => format!("docker stop --time {grace_secs} {}", q(container)),
        DockerOp::Start { container } => format!("docker start {}", q(container)),
        DockerOp::Kill { container, signal } => {
            format!("docker kill --signal {} {}", q(signal), q(container))
        }
        DockerOp::Remove { container } => format!("docker rm --force --volumes {}", q(container)),
        DockerOp::VolumeRemove { name } => format!("docker volume rm --force {}", q(name)),
        DockerOp::SaveImage { image, host_path } => {
            format!("docker save --output {} {}", q(host_path), q(image))
        }
        DockerOp::Logs { container } => format!("docker logs {}", q(container)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> KindNames {
        KindNames {
            cluster: "fl".into(),
            control_plane_node: "control-plane".into(),
        }
    }

    #[test]
    fn node_shell_runs_sh_in_the_nodes_container() {
        let s = Step::node("stop kubelet", "worker-04", "systemctl stop kubelet");
        assert_eq!(
            names().render(&s.action),
            "docker exec fl-worker-04 sh -c 'systemctl stop kubelet'"
        );
    }

    #[test]
    fn kubectl_runs_in_the_control_plane_with_the_admin_kubeconfig() {
        let s = Step::kubectl("nodes", &["get", "nodes"]);
        assert_eq!(
            names().render(&s.action),
            "docker exec fl-control-plane kubectl --kubeconfig=/etc/kubernetes/admin.conf get nodes"
        );
        let a = Step::apply("ns", "apiVersion: v1\nkind: Namespace\n");
        assert_eq!(
            names().render(&a.action),
            "docker exec -i fl-control-plane kubectl --kubeconfig=/etc/kubernetes/admin.conf apply -f - <<'EOF'\napiVersion: v1\nkind: Namespace\nEOF"
        );
    }

    #[test]
    fn substitutes_captured_values() {
        let vars = vec![("pv".to_string(), "pvc-1".to_string())];
        assert_eq!(
            substitute("umount /x/{{pv}}; echo {{pv}} {{other}}", &vars),
            "umount /x/pvc-1; echo pvc-1 {{other}}"
        );
    }
}
