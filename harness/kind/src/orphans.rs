//! `faultline cleanup --provider kind`: clusters whose run died (SIGKILL, OOM, a cancelled CI
//! job) are found through their journals ([`crate::journal`]); their active faults are healed
//! newest first with the same heal steps a run uses, then their containers, volumes and
//! network are removed. A cluster kept with `--keep-cluster` is left alone.

use crate::exec::{run_steps, Executor, Vars};
use crate::journal::{self, Journal};
use crate::plan::cluster::boot_steps;
use crate::plan::faults::{plan_fault, FaultContext, Flavour};
use crate::plan::{DockerOp, KindNames, Step};
use anyhow::Result;
use std::fmt::Write;
use std::path::Path;

#[derive(Debug, Default)]
pub struct OrphanReport {
    /// (cluster, healed faults, faults that failed to heal with the error, removed).
    pub cleaned: Vec<Cleaned>,
    /// (cluster, why it is believed alive or kept).
    pub left: Vec<(String, String)>,
    pub unreadable: Vec<String>,
}

#[derive(Debug, Default)]
pub struct Cleaned {
    pub cluster: String,
    pub healed: Vec<String>,
    pub failed: Vec<(String, String)>,
    pub removed: bool,
}

impl OrphanReport {
    pub fn ok(&self) -> bool {
        self.cleaned
            .iter()
            .all(|c| c.failed.is_empty() && c.removed)
            && self.unreadable.is_empty()
    }
    pub fn render(&self) -> String {
        let mut s = String::new();
        for c in &self.cleaned {
            let _ = writeln!(s, "kind cluster {}: its run is gone", c.cluster);
            for h in &c.healed {
                let _ = writeln!(s, "  healed {h}");
            }
            for (f, e) in &c.failed {
                let _ = writeln!(s, "  FAILED to heal {f}: {e} (its journal is kept; run `faultline cleanup --provider kind` again)");
            }
            if c.removed {
                let _ = writeln!(s, "  removed its containers, volumes and network");
            }
        }
        for (c, why) in &self.left {
            let _ = writeln!(s, "kind cluster {c}: left alone ({why})");
        }
        for u in &self.unreadable {
            let _ = writeln!(s, "kind journal {u}: cannot be read, left in place");
        }
        if s.is_empty() {
            let _ = writeln!(s, "no kind cluster left by a killed run: nothing to heal");
        }
        s
    }
}

/// Heal and remove the clusters of dead runs journalled in `dir` (`force`: also those that
/// look alive, and kept ones).
pub async fn clean_up(dir: &Path, force: bool) -> Result<OrphanReport> {
    let mut report = OrphanReport::default();
    for (path, j) in journal::list(dir) {
        let j = match j {
            Ok(j) => j,
            Err(e) => {
                report.unreadable.push(format!("{}: {e}", path.display()));
                continue;
            }
        };
        let why_left = if j.kept {
            Some("kept with --keep-cluster".to_string())
        } else {
            journal::owner_alive(&j).map(|w| format!("its run is alive: {w}"))
        };
        if let (Some(why), false) = (why_left, force) {
            report.left.push((
                j.cluster.clone(),
                format!("{why}; --force cleans it anyway"),
            ));
            continue;
        }
        let exec = crate::exec::connect_engine()?;
        exec.adopt(&j.resources);
        report.cleaned.push(clean_one(&*exec, dir, &j).await);
    }
    Ok(report)
}

async fn clean_one(exec: &dyn Executor, dir: &Path, j: &Journal) -> Cleaned {
    let names = KindNames {
        cluster: j.cluster.clone(),
        control_plane_node: j.control_plane_node.clone(),
    };
    let mut out = Cleaned {
        cluster: j.cluster.clone(),
        ..Default::default()
    };
    let mut left = vec![];
    for op in j.active.iter().rev() {
        let ctx = FaultContext {
            flavour: Flavour::Kind(names.clone()),
            longhorn: j.longhorn,
            stuck_io_on_node: false,
            after_boot: op
                .node()
                .map(|n| boot_steps(&names, n, None))
                .unwrap_or_default(),
        };
        let label = format!("{} on {}", op.key(), op.node().unwrap_or("-"));
        let result = match plan_fault(op, &ctx) {
            Ok(p) => run_steps(exec, &names, &p.heal, &mut Vars::new()).await,
            Err(_) => Ok(()),
        };
        match result {
            Ok(()) => out.healed.push(label),
            Err(e) => {
                out.failed.push((label, format!("{e:#}")));
                left.insert(0, op.clone());
            }
        }
    }
    if !left.is_empty() {
        let mut kept = j.clone();
        kept.active = left;
        let _ = journal::write(dir, &kept);
        return out;
    }
    let mut teardown = vec![];
    for c in &j.resources.containers {
        teardown.push(Step::docker(
            format!("remove {c}"),
            DockerOp::Remove {
                container: c.clone(),
            },
        ));
    }
    for v in &j.resources.volumes {
        teardown.push(Step::docker(
            format!("remove volume {v}"),
            DockerOp::VolumeRemove { name: v.clone() },
        ));
    }
    for n in &j.resources.networks {
        teardown.push(Step::docker(
            format!("remove network {n}"),
            DockerOp::NetworkRemove { name: n.clone() },
        ));
    }
    match run_steps(exec, &names, &teardown, &mut Vars::new()).await {
        Ok(()) => {
            out.removed = true;
            journal::remove(dir, &j.cluster);
        }
        Err(e) => out.failed.push(("removal".into(), format!("{e:#}"))),
    }
    out
}
