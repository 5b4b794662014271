//! The envtest drop-in: `faultline envtest-assets DIR` writes a KUBEBUILDER_ASSETS directory
//! whose `kube-apiserver` and `etcd` run this binary (`faultline envtest kube-apiserver|etcd`),
//! so an unchanged controller-runtime envtest suite runs on the simulated API server.
//!
//! envtest (controller-runtime pkg/internal/testing: controlplane, process) starts `etcd`, polls
//! `http://<client URL>/health` until 200, starts `kube-apiserver` with its flags (`flags`),
//! polls `https://<secure address>/healthz` without credentials until 200, then talks to it
//! with client certificates it signs with the CA named by `--client-ca-file`. It stops each
//! process with SIGTERM (SIGKILL after its stop timeout). Here the API server is the sim alone
//! (no kube-controller-manager, no nodes), like envtest's; by opt-in (`Extras`)
//! `FAULTLINE_ENVTEST_CONTROLLERS=1` adds the controller-manager loops,
//! `FAULTLINE_ENVTEST_NODES=N` a whole `faultline sim up` cluster (kubelets, scheduler, storage;
//! its nodes schedulable before the API answers) and `FAULTLINE_ENVTEST_FAULTS=1` the fault
//! endpoints.

pub mod assets;
pub mod flags;

use anyhow::{Context, Result};
use faultline_sim::apiserver::ApiServerOptions;
use faultline_sim::{SimOptions, SimServer};
use std::io::Write;

/// The opt-in extras, read from the environment envtest's processes inherit.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Extras {
    /// `FAULTLINE_ENVTEST_CONTROLLERS=1`: run the kube-controller-manager loops.
    pub controllers: bool,
    /// `FAULTLINE_ENVTEST_NODES=N`: N simulated worker nodes (and a control-plane node) with
    /// kubelets, the scheduler, CSI and storage, as `faultline sim up --nodes N`; implies the
    /// controllers. 0: none.
    pub nodes: usize,
    /// `FAULTLINE_ENVTEST_TIME_SCALE=F`: the cluster's durations times F (needs nodes).
    pub time_scale: Option<f64>,
    /// `FAULTLINE_ENVTEST_FAULTS=1`: serve the fault endpoints (`/faultline/v1/...`).
    pub faults: bool,
}

/// More simulated nodes than this is a typo, not a test (each one is a kubelet's loops).
const MAX_NODES: usize = 100;

/// A bad opt-in: one line naming the variable and its value.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ExtrasError {
    #[error("{name}={value:?}: {why}")]
    Invalid {
        name: &'static str,
        value: String,
        why: String,
    },
    #[error("{name}={value:?} needs simulated nodes, but FAULTLINE_ENVTEST_NODES is {nodes}: set it to 1 or more")]
    NeedsNodes {
        name: &'static str,
        value: String,
        nodes: String,
    },
}

impl Extras {
    pub fn from_env(get: impl Fn(&str) -> Option<String>) -> Result<Extras, ExtrasError> {
        let given = |name: &str| get(name).filter(|v| !v.is_empty());
        let invalid = |name: &'static str, value: &str, why: &str| ExtrasError::Invalid {
            name,
            value: value.into(),
            why: why.into(),
        };
        let flag = |name: &'static str| match given(name).as_deref() {
            None | Some("0") => Ok(false),
            Some("1") => Ok(true),
            Some(other) => Err(invalid(name, other, "expected 1 or 0")),
        };
        const NODES: &str = "FAULTLINE_ENVTEST_NODES";
        const SCALE: &str = "FAULTLINE_ENVTEST_TIME_SCALE";
        const CONTROLLERS: &str = "FAULTLINE_ENVTEST_CONTROLLERS";
        let nodes = match given(NODES) {
            None => 0,
            Some(v) => match v.parse::<usize>() {
                Ok(n) if n <= MAX_NODES => n,
                Ok(_) => return Err(invalid(NODES, &v, &format!("at most {MAX_NODES} nodes"))),
                Err(_) => {
                    return Err(invalid(
                        NODES,
                        &v,
                        "expected a number of worker nodes (0 for none)",
                    ))
                }
            },
        };
        let time_scale = match given(SCALE) {
            None => None,
            Some(v) => match v.parse::<f64>() {
                Ok(f) if f.is_finite() && f > 0.0 => Some(f),
                _ => return Err(invalid(SCALE, &v, "expected a positive number, e.g. 0.05")),
            },
        };
        if nodes == 0 {
            if let Some(v) = given(SCALE) {
                return Err(ExtrasError::NeedsNodes {
                    name: SCALE,
                    value: v,
                    nodes: given(NODES).unwrap_or_else(|| "unset".into()),
                });
            }
        }
        let controllers = flag(CONTROLLERS)?;
        if nodes > 0 && given(CONTROLLERS).as_deref() == Some("0") {
            return Err(invalid(
                CONTROLLERS,
                "0",
                &format!("{NODES}={nodes} runs the controllers (the node lifecycle, DaemonSets and storage need them)"),
            ));
        }
        Ok(Extras {
            controllers: controllers || nodes > 0,
            nodes,
            time_scale,
            faults: flag("FAULTLINE_ENVTEST_FAULTS")?,
        })
    }

    /// How the start line describes them.
    fn describe(&self) -> String {
        let mut parts = vec![];
        if self.nodes > 0 {
            parts.push(format!(
                "{} simulated node(s) with kubelets, the scheduler and storage{}",
                self.nodes,
                self.time_scale
                    .map(|f| format!(" at time scale {f}"))
                    .unwrap_or_default()
            ));
        }
        if self.controllers {
            parts.push("the controller-manager loops".into());
        }
        if self.faults {
            parts.push("the fault endpoints (/faultline/v1)".into());
        }
        if parts.is_empty() {
            String::new()
        } else {
            format!(" with {}", parts.join(", "))
        }
    }
}

/// The sim's options for one envtest command line.
pub fn sim_options(f: &flags::ApiServerFlags, extras: &Extras) -> SimOptions {
    let mut opts = if extras.nodes > 0 {
        // What `faultline sim up --nodes N --time-scale F` runs.
        SimOptions::full(
            extras.nodes,
            faultline_sim::Timing::scaled(extras.time_scale.unwrap_or(1.0)),
        )
    } else {
        SimOptions::default()
    };
    opts.bind = f.bind;
    opts.api = ApiServerOptions {
        service_cidr: f.service_cidr.clone(),
        service_account_admission: f.service_account_admission,
    };
    opts.tls = Some(f.tls.clone());
    opts.controller_manager = extras.controllers;
    opts.service_account_issuer = f.service_account_issuer.clone();
    opts.anonymous_auth = f.anonymous_auth;
    opts.fault_endpoints = extras.faults;
    opts
}

/// `faultline envtest kube-apiserver ARGS`: serve until SIGTERM; 0 then, 1 on bad flags or a
/// failed start (after one line naming the cause).
pub async fn kube_apiserver(args: &[String]) -> u8 {
    let f = match flags::parse_apiserver(args) {
        Ok(Some(f)) => f,
        Ok(None) => {
            print!("{}", flags::APISERVER_HELP);
            return 0;
        }
        Err(e) => return fail(&format!("kube-apiserver: {e}")),
    };
    let extras = match Extras::from_env(|k| std::env::var(k).ok()) {
        Ok(x) => x,
        Err(e) => return fail(&format!("kube-apiserver: {e}")),
    };
    let server = match SimServer::start(sim_options(&f, &extras)).await {
        Ok(s) => s,
        Err(e) => return fail(&format!("kube-apiserver: {e:#}")),
    };
    eprintln!(
        "faultline envtest: simulated kube-apiserver serving on {}{}",
        server.url(),
        extras.describe()
    );
    let code = wait_for_stop().await;
    server.stop().await;
    code
}

/// `faultline envtest etcd ARGS`: answer `/health` on the client URLs until SIGTERM.
pub async fn etcd(args: &[String]) -> u8 {
    let addrs = match flags::parse_etcd(args) {
        Ok(Some(a)) => a,
        Ok(None) => {
            print!("{}", flags::ETCD_HELP);
            return 0;
        }
        Err(e) => return fail(&format!("etcd: {e}")),
    };
    let app = axum::Router::new().route(
        "/health",
        axum::routing::get(|| async { r#"{"health":"true","reason":""}"# }),
    );
    for addr in addrs {
        let listener = match tokio::net::TcpListener::bind(addr).await {
            Ok(l) => l,
            Err(e) => return fail(&format!("etcd: listening on {addr}: {e}")),
        };
        let app = app.clone();
        tokio::spawn(async move { axum::serve(listener, app).await });
    }
    wait_for_stop().await
}

/// 0 on SIGTERM or SIGINT (how envtest stops its processes).
async fn wait_for_stop() -> u8 {
    use tokio::signal::unix::{signal, SignalKind};
    let Ok(mut term) = signal(SignalKind::terminate()) else {
        return fail("cannot wait for SIGTERM");
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    0
}

/// Print the one error line and return exit code 1. envtest discards its processes' output
/// unless KUBEBUILDER_ATTACH_CONTROL_PLANE_OUTPUT=true and then reports only a failed start, so
/// when stderr is /dev/null the line also goes to the parent's (the test binary's) stderr.
fn fail(msg: &str) -> u8 {
    let line = format!("faultline envtest: {msg}\n");
    eprint!("{line}");
    if stderr_is_dev_null() {
        let parent = format!("/proc/{}/fd/2", std::os::unix::process::parent_id());
        if let Ok(mut f) = std::fs::OpenOptions::new().append(true).open(parent) {
            let _ = f.write_all(line.as_bytes());
        }
    }
    1
}

fn stderr_is_dev_null() -> bool {
    use std::os::unix::fs::MetadataExt;
    let same = |a: &std::fs::Metadata, b: &std::fs::Metadata| {
        a.dev() == b.dev() && a.ino() == b.ino() && a.rdev() == b.rdev()
    };
    match (
        std::fs::metadata("/proc/self/fd/2"),
        std::fs::metadata("/dev/null"),
    ) {
        (Ok(a), Ok(b)) => same(&a, &b),
        _ => false,
    }
}

/// `faultline envtest-assets DIR`: write the directory, print its absolute path (for
/// `export KUBEBUILDER_ASSETS=$(faultline envtest-assets DIR)`).
pub fn write_assets(dir: &std::path::Path, kubectl: Option<&std::path::Path>) -> Result<()> {
    let exe = std::env::current_exe()
        .and_then(std::fs::canonicalize)
        .context("locating the faultline binary")?;
    let written = assets::write(dir, &exe, kubectl)?;
    let abs = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    if let Some(note) = written.note {
        eprintln!("faultline envtest-assets: {note}");
    }
    println!("{}", abs.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
    }

    #[test]
    fn extras_come_from_the_environment() {
        assert_eq!(Extras::from_env(env(&[])).unwrap(), Extras::default());
        let c = Extras::from_env(env(&[("FAULTLINE_ENVTEST_CONTROLLERS", "1")])).unwrap();
        assert!(c.controllers && c.nodes == 0 && !c.faults);
        let e = Extras::from_env(env(&[("FAULTLINE_ENVTEST_CONTROLLERS", "yes")])).unwrap_err();
        assert_eq!(
            e.to_string(),
            "FAULTLINE_ENVTEST_CONTROLLERS=\"yes\": expected 1 or 0"
        );
        let full = Extras::from_env(env(&[
            ("FAULTLINE_ENVTEST_NODES", "2"),
            ("FAULTLINE_ENVTEST_TIME_SCALE", "0.05"),
            ("FAULTLINE_ENVTEST_FAULTS", "1"),
        ]))
        .unwrap();
        assert_eq!(
            full,
            Extras {
                controllers: true,
                nodes: 2,
                time_scale: Some(0.05),
                faults: true
            }
        );
        // Faults alone: API faults need no nodes.
        let f = Extras::from_env(env(&[("FAULTLINE_ENVTEST_FAULTS", "1")])).unwrap();
        assert!(f.faults && f.nodes == 0 && !f.controllers);
    }

    #[test]
    fn bad_extras_name_the_variable_and_value() {
        for (vars, says) in [
            (
                &[("FAULTLINE_ENVTEST_NODES", "abc")][..],
                "FAULTLINE_ENVTEST_NODES=\"abc\": expected a number of worker nodes (0 for none)",
            ),
            (
                &[("FAULTLINE_ENVTEST_NODES", "-1")],
                "FAULTLINE_ENVTEST_NODES=\"-1\": expected a number",
            ),
            (
                &[("FAULTLINE_ENVTEST_NODES", "1000")],
                "FAULTLINE_ENVTEST_NODES=\"1000\": at most 100 nodes",
            ),
            (
                &[
                    ("FAULTLINE_ENVTEST_NODES", "0"),
                    ("FAULTLINE_ENVTEST_TIME_SCALE", "0.05"),
                ],
                "FAULTLINE_ENVTEST_TIME_SCALE=\"0.05\" needs simulated nodes, but FAULTLINE_ENVTEST_NODES is 0: set it to 1 or more",
            ),
            (
                &[("FAULTLINE_ENVTEST_TIME_SCALE", "0.05")],
                "FAULTLINE_ENVTEST_NODES is unset",
            ),
            (
                &[
                    ("FAULTLINE_ENVTEST_NODES", "1"),
                    ("FAULTLINE_ENVTEST_TIME_SCALE", "0"),
                ],
                "FAULTLINE_ENVTEST_TIME_SCALE=\"0\": expected a positive number",
            ),
            (
                &[
                    ("FAULTLINE_ENVTEST_NODES", "2"),
                    ("FAULTLINE_ENVTEST_CONTROLLERS", "0"),
                ],
                "FAULTLINE_ENVTEST_CONTROLLERS=\"0\": FAULTLINE_ENVTEST_NODES=2 runs the controllers",
            ),
            (
                &[("FAULTLINE_ENVTEST_FAULTS", "true")],
                "FAULTLINE_ENVTEST_FAULTS=\"true\": expected 1 or 0",
            ),
        ] {
            let e = Extras::from_env(env(vars)).unwrap_err().to_string();
            assert!(e.starts_with(says) || e.contains(says), "{vars:?}: {e}");
            assert!(!e.contains('\n'), "one line: {e}");
        }
    }

    #[test]
    fn nodes_make_a_whole_cluster_and_faults_are_opt_in() {
        let f = flags::parse_apiserver(&[]).unwrap().unwrap();
        let plain = sim_options(&f, &Extras::default());
        assert!(plain.cluster.is_none() && plain.nodes.is_empty());
        assert!(!plain.controller_manager && !plain.fault_endpoints);
        let x = Extras::from_env(env(&[
            ("FAULTLINE_ENVTEST_NODES", "2"),
            ("FAULTLINE_ENVTEST_TIME_SCALE", "0.1"),
            ("FAULTLINE_ENVTEST_FAULTS", "1"),
        ]))
        .unwrap();
        let full = sim_options(&f, &x);
        assert_eq!(full.nodes, ["control-plane", "worker-01", "worker-02"]);
        assert_eq!(full.cluster.as_ref().map(|c| c.timing.scale), Some(0.1));
        assert!(full.controller_manager && full.fault_endpoints);
        assert_eq!(full.bind, f.bind);
    }
}
