//! Host-side journals of kind clusters, so that a run killed with SIGKILL can be healed and
//! removed by `faultline cleanup --provider kind`: one JSON file per cluster in the state
//! directory, written before the first engine resource is created, rewritten after every
//! inject and heal, deleted after teardown.
//!
//! The state directory: `FAULTLINE_KIND_STATE_DIR`, else `$XDG_STATE_HOME/faultline/kind`, else
//! `$HOME/.local/state/faultline/kind`.

use crate::exec::Owned;
use anyhow::{Context, Result};
use faultline_faults::NodeOperation;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Journal {
    /// The cluster's unique name (containers `<cluster>-<node>`).
    pub cluster: String,
    /// Where kubectl steps run.
    pub control_plane_node: String,
    pub longhorn: bool,
    pub pid: u32,
    pub host: String,
    /// What the run may have created (names are unique per run).
    pub resources: Owned,
    /// Faults applied and not healed, oldest first.
    pub active: Vec<NodeOperation>,
    /// `--keep-cluster`: left on purpose; cleanup does not remove it.
    pub kept: bool,
}

pub fn default_state_dir(get: impl Fn(&str) -> Option<String>) -> PathBuf {
    if let Some(d) = get("FAULTLINE_KIND_STATE_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(d);
    }
    if let Some(d) = get("XDG_STATE_HOME").filter(|d| !d.is_empty()) {
        return Path::new(&d).join("faultline/kind");
    }
    match get("HOME").filter(|h| !h.is_empty()) {
        Some(h) => Path::new(&h).join(".local/state/faultline/kind"),
        None => std::env::temp_dir().join("faultline-kind-state"),
    }
}

pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

fn path(dir: &Path, cluster: &str) -> PathBuf {
    dir.join(format!("{cluster}.json"))
}

pub fn write(dir: &Path, j: &Journal) -> Result<()> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("creating the kind state directory {}", dir.display()))?;
    let p = path(dir, &j.cluster);
    let tmp = p.with_extension("json.tmp");
    std::fs::write(&tmp, serde_json::to_vec_pretty(j)?)
        .with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, &p).with_context(|| format!("writing {}", p.display()))
}

pub fn remove(dir: &Path, cluster: &str) {
    let _ = std::fs::remove_file(path(dir, cluster));
}

/// Every journal in `dir`: (file, journal or why it cannot be read).
pub fn list(dir: &Path) -> Vec<(PathBuf, Result<Journal, String>)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return vec![];
    };
    let mut out: Vec<(PathBuf, Result<Journal, String>)> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .map(|p| {
            let j = std::fs::read(&p)
                .map_err(|e| e.to_string())
                .and_then(|b| serde_json::from_slice(&b).map_err(|e| e.to_string()));
            (p, j)
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// Whether the run that wrote `j` is alive: its process exists on this host. A journal of
/// another host is assumed alive (its process cannot be checked from here).
pub fn owner_alive(j: &Journal) -> Option<String> {
    if j.host != hostname() {
        return Some(format!("written on host {}", j.host));
    }
    Path::new(&format!("/proc/{}", j.pid))
        .exists()
        .then(|| format!("pid {} is running", j.pid))
}
