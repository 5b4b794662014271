//! The scenario timeline: every step, fault, heal, expectation verdict, Kubernetes event and
//! controller lifecycle change, with its offset from the scenario start (T+...).

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub enum EntryKind {
    Step,
    Fault,
    Heal,
    Remediate,
    Expect,
    Event,
    Controller,
    Error,
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub enum Verdict {
    Passed,
    Failed,
    Skipped,
    Error,
    Cancelled,
}

impl Verdict {
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Passed => "PASS",
            Verdict::Failed => "FAIL",
            Verdict::Skipped => "SKIP",
            Verdict::Error => "ERROR",
            Verdict::Cancelled => "CANCELLED",
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    /// Milliseconds since the scenario started.
    pub at_ms: u64,
    pub kind: EntryKind,
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
}

#[derive(Clone)]
pub struct Timeline {
    pub start: Instant,
    pub started_wall: chrono::DateTime<chrono::Utc>,
    entries: Arc<Mutex<Vec<Entry>>>,
}

impl Timeline {
    pub fn new() -> Timeline {
        Timeline {
            start: Instant::now(),
            started_wall: chrono::Utc::now(),
            entries: Arc::new(Mutex::new(vec![])),
        }
    }
    pub fn offset(&self, at: Instant) -> Duration {
        at.saturating_duration_since(self.start)
    }
    pub fn record(&self, kind: EntryKind, text: impl Into<String>) {
        self.record_at(Instant::now(), kind, text, None)
    }
    pub fn verdict(&self, kind: EntryKind, text: impl Into<String>, v: Verdict) {
        self.record_at(Instant::now(), kind, text, Some(v))
    }
    pub fn record_at(
        &self,
        at: Instant,
        kind: EntryKind,
        text: impl Into<String>,
        verdict: Option<Verdict>,
    ) {
        let e = Entry {
            at_ms: self.offset(at).as_millis() as u64,
            kind,
            text: text.into(),
            verdict,
        };
        let mut v = self.entries.lock();
        let pos = v.partition_point(|x| x.at_ms <= e.at_ms);
        v.insert(pos, e);
    }
    pub fn entries(&self) -> Vec<Entry> {
        self.entries.lock().clone()
    }
}

impl Default for Timeline {
    fn default() -> Self {
        Self::new()
    }
}

/// Named instants expectations measure from: `start`, `<step>.start`, `<step>` (its end; a
/// fault's injection), `<fault>.healed`. Waiting for one that is not there yet (a fault not yet
/// healed) watches for it.
#[derive(Clone)]
pub struct Anchors {
    map: Arc<Mutex<std::collections::HashMap<String, Instant>>>,
    version: Arc<tokio::sync::watch::Sender<u64>>,
}

impl Anchors {
    pub fn new() -> Anchors {
        Anchors {
            map: Arc::new(Mutex::new(Default::default())),
            version: Arc::new(tokio::sync::watch::channel(0).0),
        }
    }
    pub fn set(&self, name: &str, at: Instant) {
        self.map.lock().insert(name.to_string(), at);
        self.version.send_modify(|v| *v += 1);
    }
    pub fn get(&self, name: &str) -> Option<Instant> {
        self.map.lock().get(name).copied()
    }
    pub async fn wait(&self, name: &str) -> Instant {
        let mut rx = self.version.subscribe();
        loop {
            if let Some(at) = self.get(name) {
                return at;
            }
            if rx.changed().await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    }
}

impl Default for Anchors {
    fn default() -> Self {
        Self::new()
    }
}
