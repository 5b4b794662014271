//! Healing what a killed run left behind: read the cluster's fault journals (`journal`), and
//! for each one whose owner is gone, undo its faults newest first with the same operations the
//! runner uses, then delete it. `faultline cleanup` runs this on its own; `faultline run` runs
//! it before its first scenario, so a retried CI job starts from a healed cluster.

use crate::faults::FaultManager;
use crate::journal::{self, Entry, Liveness, Owner};
use crate::k8s::Kube;
use crate::provider::{ClusterSpec, Provider};
use crate::timeline::{Anchors, Timeline};
use anyhow::{Context, Result};
use std::fmt::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

#[derive(Debug, Default)]
pub struct CleanupReport {
    /// Journals healed (or partly healed): what was undone, what failed.
    pub restored: Vec<Restored>,
    /// Journals of runs still alive (and why they are believed alive).
    pub live: Vec<(String, String)>,
    /// Journals that cannot be read (left in place).
    pub unreadable: Vec<String>,
    /// Set when the provider's clusters die with the harness: nothing can be left behind.
    pub not_applicable: Option<String>,
    /// What the provider healed outside any cluster API (kind: clusters of killed runs), and
    /// whether all of it was healed.
    pub provider_orphans: Option<(String, bool)>,
}

#[derive(Debug)]
pub struct Restored {
    pub journal: String,
    pub owner: Owner,
    pub why: String,
    pub healed: Vec<String>,
    /// (fault, error).
    pub failed: Vec<(String, String)>,
}

impl CleanupReport {
    pub fn ok(&self) -> bool {
        self.restored.iter().all(|r| r.failed.is_empty())
            && self.unreadable.is_empty()
            && self.provider_orphans.as_ref().is_none_or(|(_, ok)| *ok)
    }

    pub fn healed_count(&self) -> usize {
        self.restored.iter().map(|r| r.healed.len()).sum()
    }

    /// For people: one line per journal and fault.
    pub fn render(&self) -> String {
        let mut s = String::new();
        if let Some((text, _)) = &self.provider_orphans {
            s.push_str(text);
            return s;
        }
        if let Some(n) = &self.not_applicable {
            let _ = writeln!(s, "{n}");
            return s;
        }
        for r in &self.restored {
            let o = &r.owner;
            let _ = writeln!(
                s,
                "journal {}: scenario {} of run {} (pid {} on {}, started {}): {}",
                r.journal, o.scenario, o.run_id, o.pid, o.host, o.started_at, r.why
            );
            for h in &r.healed {
                let _ = writeln!(s, "  healed {h}");
            }
            for (f, e) in &r.failed {
                let _ = writeln!(s, "  FAILED to heal {f}: {e} (the journal keeps it; run `faultline cleanup` again)");
            }
        }
        for (j, why) in &self.live {
            let _ = writeln!(
                s,
                "journal {j}: left alone, its run is alive ({why}); --force heals it anyway"
            );
        }
        for u in &self.unreadable {
            let _ = writeln!(s, "journal {u}: cannot be read, left in place");
        }
        if self.restored.is_empty() && self.live.is_empty() && self.unreadable.is_empty() {
            let _ = writeln!(s, "no fault journal in the cluster: nothing to heal");
        }
        s
    }
}

/// Connect through `provider` and heal every stale journal (every journal, with `force`).
pub async fn cleanup(
    provider: &dyn Provider,
    workdir: &Path,
    force: bool,
    op_timeout: Duration,
) -> Result<CleanupReport> {
    if let Some(orphans) = provider.heal_orphans(force) {
        return Ok(CleanupReport {
            provider_orphans: Some(orphans.await?),
            ..Default::default()
        });
    }
    if !provider.clusters_outlive_harness() {
        return Ok(CleanupReport {
            not_applicable: Some(format!("provider {}: its clusters end with the harness process, so a killed run leaves nothing to heal", provider.name())),
            ..Default::default()
        });
    }
    let spec = ClusterSpec {
        name: "cleanup".into(),
        nodes: vec![],
        storage: None,
        sim: Default::default(),
        seed: 0,
        workdir: workdir.to_path_buf(),
    };
    let cluster = provider
        .start(&spec)
        .await
        .context("connecting to the cluster")?;
    let client = crate::k8s::client_from_kubeconfig(cluster.kubeconfig()).await?;
    let faults = FaultManager::new(
        cluster.node_ops(),
        Kube::new(client.clone()),
        None,
        Timeline::new(),
        Anchors::new(),
        op_timeout,
    );
    let r = heal_journals(&client, &faults, force).await;
    let _ = cluster.teardown(false).await;
    r
}

/// Heal the stale journals with `faults` (a manager without a controller: a controllerCrash
/// has nothing left to undo, the controller ended with its harness).
pub async fn heal_journals(
    client: &kube::Client,
    faults: &FaultManager,
    force: bool,
) -> Result<CleanupReport> {
    let mut report = CleanupReport::default();
    let host = journal::hostname();
    for found in journal::list(client).await? {
        let found = match found {
            Ok(f) => f,
            Err(e) => {
                report.unreadable.push(e);
                continue;
            }
        };
        let why = match found.record.liveness(&host) {
            Liveness::Live(w) if !force => {
                report.live.push((found.name.clone(), w));
                continue;
            }
            Liveness::Live(w) => format!("--force (it looked alive: {w})"),
            Liveness::Stale(w) => w,
        };
        let mut healed = vec![];
        let mut failed = vec![];
        let mut left: Vec<Entry> = vec![];
        for e in found.record.faults.iter().rev() {
            let label = format!("{} ({})", e.name, e.operation.summary());
            match tokio::time::timeout(Duration::from_secs(120), faults.undo(&e.operation)).await {
                Ok(Ok(())) => healed.push(label),
                Ok(Err(err)) => {
                    failed.push((label, format!("{err:#}")));
                    left.insert(0, e.clone());
                }
                Err(_) => {
                    failed.push((label, "timed out after 120s".into()));
                    left.insert(0, e.clone());
                }
            }
        }
        if left.is_empty() {
            journal::discard(client, &found.name).await?;
        } else {
            journal::keep(client, &found, left).await?;
        }
        report.restored.push(Restored {
            journal: found.name.clone(),
            owner: found.record.owner.clone(),
            why,
            healed,
            failed,
        });
    }
    Ok(report)
}

/// The same pass at the start of `faultline run`, reported on stderr. Errors do not stop the
/// run: they are reported, and the scenarios then show what the cluster is like.
pub async fn before_run(
    provider: Arc<dyn Provider>,
    workdir: &Path,
    op_timeout: Duration,
) -> Option<CleanupReport> {
    match cleanup(provider.as_ref(), workdir, false, op_timeout).await {
        Ok(r) if r.not_applicable.is_some() => None,
        // Clusters of killed runs are not this run's cluster: say what was done, run anyway.
        Ok(r) if r.provider_orphans.is_some() => {
            let (text, _) = r.provider_orphans.as_ref().expect("checked");
            if !text.starts_with("no kind cluster") {
                eprint!("faultline: clusters left by killed runs:\n{text}");
            }
            None
        }
        Ok(r) => Some(r),
        Err(e) => {
            eprintln!(
                "faultline: could not check the cluster for faults left by an earlier run: {}",
                crate::k8s::explain(&e)
            );
            None
        }
    }
}
