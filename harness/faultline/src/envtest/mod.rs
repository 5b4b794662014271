//! The envtest drop-in: `faultline envtest-assets DIR` writes a KUBEBUILDER_ASSETS directory
//! whose `kube-apiserver` and `etcd` run this binary (`faultline envtest kube-apiserver|etcd`),
//! so an unchanged controller-runtime envtest suite runs on the simulated API server.
//!
//! envtest (controller-runtime pkg/internal/testing: controlplane, process) starts `etcd`, polls
//! `http://<client URL>/health` until 200, starts `kube-apiserver` with its flags (`flags`),
//! polls `https://<secure address>/healthz` without credentials until 200, then talks to it
//! with client certificates it signs with the CA named by `--client-ca-file`. It stops each
//! process with SIGTERM (SIGKILL after its stop timeout). Here the API server is the sim alone
//! (no kube-controller-manager, no nodes), like envtest's; `FAULTLINE_ENVTEST_CONTROLLERS=1`
//! adds the controller-manager loops.

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
}

impl Extras {
    pub fn from_env(get: impl Fn(&str) -> Option<String>) -> Result<Extras, String> {
        let flag = |name: &str| match get(name).as_deref() {
            None | Some("") | Some("0") => Ok(false),
            Some("1") => Ok(true),
            Some(other) => Err(format!("{name}={other:?}: expected 1 or 0")),
        };
        Ok(Extras {
            controllers: flag("FAULTLINE_ENVTEST_CONTROLLERS")?,
        })
    }
}

/// The sim's options for one envtest command line.
pub fn sim_options(f: &flags::ApiServerFlags, extras: &Extras) -> SimOptions {
    SimOptions {
        bind: f.bind,
        nodes: vec![],
        api: ApiServerOptions {
            service_cidr: f.service_cidr.clone(),
            service_account_admission: f.service_account_admission,
        },
        tls: Some(f.tls.clone()),
        controller_manager: extras.controllers,
        service_account_issuer: f.service_account_issuer.clone(),
        anonymous_auth: f.anonymous_auth,
        ..Default::default()
    }
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
        if extras.controllers {
            " with the controller-manager loops"
        } else {
            ""
        }
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

    #[test]
    fn extras_come_from_the_environment() {
        fn env(v: Option<&'static str>) -> impl Fn(&str) -> Option<String> {
            move |_| v.map(String::from)
        }
        assert_eq!(Extras::from_env(env(None)).unwrap(), Extras::default());
        assert!(Extras::from_env(env(Some("1"))).unwrap().controllers);
        let e = Extras::from_env(env(Some("yes"))).unwrap_err();
        assert!(e.contains("FAULTLINE_ENVTEST_CONTROLLERS=\"yes\""), "{e}");
    }
}
