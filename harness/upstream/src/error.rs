use std::path::PathBuf;
use std::time::Duration;

/// Why a control plane could not be started or stopped.
///
/// [`Error::Skip`] is the one a test may turn into a pass: the binaries cannot be had here (no Go
/// toolchain, a module the proxy refused, `FAULTLINE_UPSTREAM=off`). Every other variant is a
/// failure: a binary that exists and misbehaves must fail the test.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The binaries cannot be had on this machine; the reason is one line saying what to do.
    #[error("{0}")]
    Skip(String),

    /// `FAULTLINE_UPSTREAM_REQUIRE` is set, so what would have been a skip is a failure.
    #[error("required, but: {0}")]
    Required(String),

    /// `ci/upstream.sh` ran and failed to build (a compile error, not a missing toolchain).
    #[error("ci/upstream.sh {binaries} failed (exit {code:?}): {line}")]
    Build {
        binaries: String,
        code: Option<i32>,
        line: String,
    },

    /// A binary could not be started at all.
    #[error("starting {binary} ({path}): {source}")]
    Spawn {
        binary: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },

    /// A binary exited before it was ready.
    #[error("{binary} exited ({status}) before it was ready; the last lines of {log}:\n{tail}")]
    Exited {
        binary: &'static str,
        status: String,
        log: PathBuf,
        tail: String,
    },

    /// A binary did not become ready within the bound.
    #[error("{binary} was not ready within {waited:?} ({last}); the last lines of {log}:\n{tail}")]
    NotReady {
        binary: &'static str,
        waited: Duration,
        last: String,
        log: PathBuf,
        tail: String,
    },

    /// A process outlived SIGTERM and SIGKILL.
    #[error("{binary} (pid {pid}) did not exit after SIGKILL")]
    Unkillable { binary: &'static str, pid: u32 },

    #[error("{what}: {source}")]
    Io {
        what: String,
        source: std::io::Error,
    },

    #[error("generating certificates: {0}")]
    Certs(#[from] rcgen::Error),

    #[error("kube client: {0}")]
    Kube(#[from] kube::Error),

    #[error("kubeconfig: {0}")]
    Kubeconfig(#[from] kube::config::KubeconfigError),
}

impl Error {
    /// Whether this error means "cannot run here" (a test prints `SKIPPED: <reason>` and passes)
    /// rather than "ran and failed".
    pub fn is_skip(&self) -> bool {
        matches!(self, Error::Skip(_))
    }

    /// A clash over a port picked as free (another process took it between the pick and the
    /// bind): worth one more start with fresh ports.
    pub(crate) fn is_port_clash(&self) -> bool {
        match self {
            Error::Exited { tail, .. } | Error::NotReady { tail, .. } => {
                tail.contains("address already in use")
            }
            _ => false,
        }
    }

    pub(crate) fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> Error {
        let what = what.into();
        move |source| Error::Io { what, source }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
