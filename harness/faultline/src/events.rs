//! Kubernetes Events of a scenario's cluster, from one watch stream started with the scenario:
//! kept with their arrival time (event expectations count those since their anchor) and written
//! to the timeline. A MODIFIED event (the apiserver's `count` increment) is another occurrence.

use crate::timeline::{EntryKind, Timeline};
use futures::StreamExt;
use k8s_openapi::api::core::v1::Event;
use kube::runtime::watcher;
use kube::{Api, Client};
use parking_lot::Mutex;
use serde_json::Value;
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::watch;

#[derive(Clone, Debug)]
pub struct Occurrence {
    pub at: Instant,
    pub event: Value,
}

#[derive(Clone)]
pub struct EventStore {
    items: Arc<Mutex<Vec<Occurrence>>>,
    version: watch::Sender<u64>,
    ready: watch::Sender<bool>,
}

impl EventStore {
    pub fn new() -> EventStore {
        EventStore {
            items: Arc::new(Mutex::new(vec![])),
            version: watch::channel(0).0,
            ready: watch::channel(false).0,
        }
    }

    /// Watch the cluster's events until the task is aborted.
    pub fn start(&self, client: Client, timeline: Timeline) -> tokio::task::JoinHandle<()> {
        let store = self.clone();
        tokio::spawn(async move {
            let api: Api<Event> = Api::all(client);
            let mut stream = watcher(api, watcher::Config::default()).boxed();
            let mut initial = true;
            while let Some(ev) = stream.next().await {
                match ev {
                    Ok(watcher::Event::InitApply(e)) => store.push(&e, None),
                    Ok(watcher::Event::InitDone) => {
                        initial = false;
                        store.ready.send_replace(true);
                    }
                    Ok(watcher::Event::Apply(e)) => {
                        store.push(&e, if initial { None } else { Some(&timeline) })
                    }
                    Ok(_) => {}
                    Err(_) => tokio::time::sleep(std::time::Duration::from_millis(200)).await,
                }
            }
        })
    }

    /// Wait until the initial list is in (bounded), so later occurrences are not missed.
    pub async fn wait_ready(&self, max: std::time::Duration) {
        let mut rx = self.ready.subscribe();
        let _ = tokio::time::timeout(max, rx.wait_for(|r| *r)).await;
    }

    fn push(&self, e: &Event, timeline: Option<&Timeline>) {
        let v = serde_json::to_value(e).unwrap_or_default();
        if let Some(t) = timeline {
            if timeline_worthy(&v) {
                t.record(EntryKind::Event, describe(&v));
            }
        }
        let n = {
            let mut items = self.items.lock();
            items.push(Occurrence {
                at: Instant::now(),
                event: v,
            });
            items.len() as u64
        };
        self.version.send_replace(n);
    }

    pub fn since(&self, from: usize) -> Vec<Occurrence> {
        self.items
            .lock()
            .get(from..)
            .map(|s| s.to_vec())
            .unwrap_or_default()
    }

    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.version.subscribe()
    }

    pub fn all(&self) -> Vec<Value> {
        self.items.lock().iter().map(|o| o.event.clone()).collect()
    }
}

impl Default for EventStore {
    fn default() -> Self {
        Self::new()
    }
}

/// The timeline shows every Warning, and Normal events outside the system namespaces (the
/// simulated Longhorn's image pulls would drown the story); events.json keeps them all.
fn timeline_worthy(v: &Value) -> bool {
    let ns = v
        .pointer("/involvedObject/namespace")
        .and_then(Value::as_str)
        .unwrap_or("");
    v.pointer("/type").and_then(Value::as_str) == Some("Warning")
        || !matches!(ns, "kube-system" | "longhorn-system" | "kube-node-lease")
}

/// `Warning FailedMount Pod default/ws-a: Unable to attach or mount volumes ...`
pub fn describe(v: &Value) -> String {
    let s = |p: &str| v.pointer(p).and_then(Value::as_str).unwrap_or("");
    let ns = s("/involvedObject/namespace");
    let obj = if ns.is_empty() {
        s("/involvedObject/name").to_string()
    } else {
        format!("{ns}/{}", s("/involvedObject/name"))
    };
    let mut msg = s("/message").to_string();
    if msg.len() > 160 {
        msg.truncate(157);
        msg.push_str("...");
    }
    format!(
        "event {} {} {} {obj}: {msg}",
        s("/type"),
        s("/reason"),
        s("/involvedObject/kind")
    )
}
