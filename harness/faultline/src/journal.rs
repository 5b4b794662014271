//! The fault journal: while a scenario runs against a cluster that outlives the harness
//! (`--provider existing`, which includes a `faultline sim up`), every fault with something to
//! undo is written to a ConfigMap in the cluster *before* it is injected, and removed when
//! healed. If the harness dies mid-fault (SIGKILL, OOM, a lost CI runner), the journal is what
//! the next `faultline run` or `faultline cleanup` reads to heal the cluster.
//!
//! The journal lives in the cluster rather than on the harness's disk so that cleanup works from
//! any machine (a CI job retried on another runner). A journal is stale, and may be healed,
//! when its owner is gone: a process on this host that no longer exists (or whose pid was
//! reused), or, from another host, a heartbeat older than `STALE_AFTER`.

use crate::model::Operation;
use anyhow::{Context, Result};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, ListParams, ObjectMeta, Patch, PatchParams};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;

pub const NAMESPACE: &str = "kube-system";
pub const LABEL: &str = "faultline.dev/journal";
const KEY: &str = "journal.json";
/// How often a live run renews its journal's heartbeat.
pub const HEARTBEAT: Duration = Duration::from_secs(10);
/// A journal of another host whose heartbeat is older than this is considered abandoned.
pub const STALE_AFTER: Duration = Duration::from_secs(60);

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Owner {
    pub host: String,
    pub pid: u32,
    /// The process's start time (clock ticks since boot, /proc/<pid>/stat field 22): tells a
    /// live owner from a new process that reuses its pid.
    pub start_ticks: u64,
    pub run_id: String,
    pub scenario: String,
    /// RFC 3339.
    pub started_at: String,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Entry {
    pub name: String,
    pub operation: Operation,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Record {
    pub owner: Owner,
    /// Active faults, oldest first.
    pub faults: Vec<Entry>,
    /// RFC 3339; renewed every `HEARTBEAT` while the owner lives.
    pub heartbeat: String,
}

/// One scenario's journal, as its fault manager keeps it.
pub struct Journal {
    api: Api<ConfigMap>,
    name: String,
    record: tokio::sync::Mutex<Record>,
}

/// This process's run: names its journals (one per scenario).
pub fn run_id() -> &'static str {
    static ID: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        format!(
            "{}-{:x}",
            chrono::Utc::now().format("%Y%m%dt%H%M%S"),
            std::process::id()
        )
    });
    &ID
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// The name of this host, as written into journals.
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "unknown".into())
}

/// Field 22 of /proc/<pid>/stat; None when the process does not exist.
pub fn start_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: count from the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

impl Owner {
    pub fn this_process(run_id: &str, scenario: &str) -> Owner {
        let pid = std::process::id();
        Owner {
            host: hostname(),
            pid,
            start_ticks: start_ticks(pid).unwrap_or(0),
            run_id: run_id.into(),
            scenario: scenario.into(),
            started_at: now(),
        }
    }
}

/// Why a journal may (or may not) be healed by someone other than its owner.
#[derive(Clone, Debug, PartialEq)]
pub enum Liveness {
    /// The owner runs (this host: the process exists; another host: a fresh heartbeat).
    Live(String),
    Stale(String),
}

impl Record {
    pub fn liveness(&self, host: &str) -> Liveness {
        let o = &self.owner;
        if o.host == host {
            return match start_ticks(o.pid) {
                Some(t) if t == o.start_ticks => {
                    Liveness::Live(format!("process {} on this host is running", o.pid))
                }
                Some(_) => Liveness::Stale(format!(
                    "process {} is gone (its pid now belongs to another process)",
                    o.pid
                )),
                None => Liveness::Stale(format!("process {} is gone", o.pid)),
            };
        }
        let age = chrono::DateTime::parse_from_rfc3339(&self.heartbeat)
            .map(|t| {
                (chrono::Utc::now() - t.with_timezone(&chrono::Utc))
                    .to_std()
                    .unwrap_or_default()
            })
            .unwrap_or(Duration::MAX);
        if age > STALE_AFTER {
            Liveness::Stale(format!(
                "no heartbeat from host {} for {}s",
                o.host,
                age.as_secs()
            ))
        } else {
            Liveness::Live(format!("host {} renewed it {}s ago", o.host, age.as_secs()))
        }
    }
}

/// A journal read back from the cluster.
#[derive(Clone, Debug)]
pub struct Found {
    pub name: String,
    pub record: Record,
}

fn config_map(name: &str, record: &Record) -> Result<ConfigMap> {
    let labels = BTreeMap::from([
        (LABEL.to_string(), "true".to_string()),
        (
            "app.kubernetes.io/managed-by".to_string(),
            "faultline".to_string(),
        ),
    ]);
    Ok(ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(NAMESPACE.into()),
            labels: Some(labels),
            ..Default::default()
        },
        data: Some(BTreeMap::from([(
            KEY.to_string(),
            serde_json::to_string_pretty(record)?,
        )])),
        ..Default::default()
    })
}

/// A name for a scenario's journal: DNS-1123, unique per run.
fn journal_name(run_id: &str, scenario: &str) -> String {
    let clean: String = scenario
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    let mut name = format!("faultline-journal-{run_id}-{clean}");
    name.truncate(253);
    name.trim_end_matches('-').to_string()
}

impl Journal {
    /// Nothing is written until the first fault: a scenario without faults leaves no trace.
    pub fn new(client: kube::Client, run_id: &str, scenario: &str) -> Journal {
        let record = Record {
            owner: Owner::this_process(run_id, scenario),
            faults: vec![],
            heartbeat: now(),
        };
        Journal {
            api: Api::namespaced(client, NAMESPACE),
            name: journal_name(run_id, scenario),
            record: tokio::sync::Mutex::new(record),
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    async fn write(&self, record: &Record) -> Result<()> {
        let cm = config_map(&self.name, record)?;
        let pp = PatchParams::apply("faultline").force();
        self.api
            .patch(&self.name, &pp, &Patch::Apply(&cm))
            .await
            .with_context(|| format!("writing the fault journal {NAMESPACE}/{}", self.name))?;
        Ok(())
    }

    /// Record a fault about to be injected.
    pub async fn add(&self, name: &str, op: &Operation) -> Result<()> {
        let mut r = self.record.lock().await;
        r.faults.push(Entry {
            name: name.into(),
            operation: op.clone(),
        });
        r.heartbeat = now();
        self.write(&r).await
    }

    /// Forget a healed fault; the journal is deleted once nothing is left.
    pub async fn remove(&self, name: &str) -> Result<()> {
        let mut r = self.record.lock().await;
        let Some(i) = r.faults.iter().rposition(|e| e.name == name) else {
            return Ok(());
        };
        r.faults.remove(i);
        if r.faults.is_empty() {
            return delete(&self.api, &self.name).await;
        }
        r.heartbeat = now();
        self.write(&r).await
    }

    /// Renew the heartbeat of a journal that holds faults.
    pub async fn beat(&self) -> Result<()> {
        let mut r = self.record.lock().await;
        if r.faults.is_empty() {
            return Ok(());
        }
        r.heartbeat = now();
        self.write(&r).await
    }
}

async fn delete(api: &Api<ConfigMap>, name: &str) -> Result<()> {
    match api.delete(name, &DeleteParams::default()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(e) => Err(e).with_context(|| format!("deleting the fault journal {NAMESPACE}/{name}")),
    }
}

/// Every journal in the cluster. A journal whose content cannot be read is returned as an
/// error naming it, never skipped silently (it may hold faults).
pub async fn list(client: &kube::Client) -> Result<Vec<Result<Found, String>>> {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), NAMESPACE);
    let cms = api
        .list(&ListParams::default().labels(&format!("{LABEL}=true")))
        .await
        .context("listing fault journals")?;
    Ok(cms
        .items
        .into_iter()
        .map(|cm| {
            let name = cm.metadata.name.clone().unwrap_or_default();
            let text = cm
                .data
                .as_ref()
                .and_then(|d| d.get(KEY))
                .ok_or_else(|| format!("{NAMESPACE}/{name}: no {KEY} key"))?;
            let record = serde_json::from_str(text)
                .map_err(|e| format!("{NAMESPACE}/{name}: {KEY}: {e}"))?;
            Ok(Found { name, record })
        })
        .collect())
}

/// Delete a journal once its faults are healed.
pub async fn discard(client: &kube::Client, name: &str) -> Result<()> {
    delete(&Api::namespaced(client.clone(), NAMESPACE), name).await
}

/// Rewrite a journal with the faults that are still not healed.
pub async fn keep(client: &kube::Client, found: &Found, left: Vec<Entry>) -> Result<()> {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), NAMESPACE);
    let record = Record {
        faults: left,
        ..found.record.clone()
    };
    let pp = PatchParams::apply("faultline").force();
    api.patch(
        &found.name,
        &pp,
        &Patch::Apply(&config_map(&found.name, &record)?),
    )
    .await
    .with_context(|| format!("updating the fault journal {NAMESPACE}/{}", found.name))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_ticks_of_this_process_is_stable_and_of_a_dead_pid_is_none() {
        let me = std::process::id();
        let a = start_ticks(me).expect("own /proc/self/stat");
        assert_eq!(start_ticks(me), Some(a));
        // pid_max is at most 2^22: this pid cannot exist.
        assert_eq!(start_ticks(4_194_305), None);
    }

    fn record(host: &str, pid: u32, ticks: u64, heartbeat: String) -> Record {
        Record {
            owner: Owner {
                host: host.into(),
                pid,
                start_ticks: ticks,
                run_id: "r".into(),
                scenario: "s".into(),
                started_at: now(),
            },
            faults: vec![],
            heartbeat,
        }
    }

    #[test]
    fn liveness_by_pid_on_this_host_and_by_heartbeat_elsewhere() {
        let me = std::process::id();
        let ticks = start_ticks(me).unwrap();
        assert!(matches!(
            record("h", me, ticks, now()).liveness("h"),
            Liveness::Live(_)
        ));
        // Same pid, other start time: the pid was reused.
        assert!(
            matches!(record("h", me, ticks + 1, now()).liveness("h"), Liveness::Stale(m) if m.contains("another process"))
        );
        assert!(
            matches!(record("h", 4_194_305, 1, now()).liveness("h"), Liveness::Stale(m) if m.contains("is gone"))
        );
        assert!(matches!(
            record("other", me, ticks, now()).liveness("h"),
            Liveness::Live(_)
        ));
        let old = (chrono::Utc::now() - chrono::Duration::seconds(120)).to_rfc3339();
        assert!(
            matches!(record("other", me, ticks, old).liveness("h"), Liveness::Stale(m) if m.contains("no heartbeat"))
        );
        assert!(matches!(
            record("other", me, ticks, "garbage".into()).liveness("h"),
            Liveness::Stale(_)
        ));
    }

    #[test]
    fn journal_names_are_dns_labels() {
        let n = journal_name("20261202t2216-1a2b", "Stale CSI mount_x");
        assert_eq!(n, "faultline-journal-20261202t2216-1a2b-stale-csi-mount-x");
    }

    #[test]
    fn operations_round_trip_through_the_record() {
        let op: Operation = serde_yaml::from_str("csiPluginDown: {node: worker-01}").unwrap();
        let mut r = record("h", 1, 1, now());
        r.faults.push(Entry {
            name: "plugin".into(),
            operation: op.clone(),
        });
        let back: Record = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
        assert_eq!(back, r);
    }
}
