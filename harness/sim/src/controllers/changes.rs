//! The store's event stream as level-triggered controllers consume it: wait for a relevant
//! change (or the resync tick), then take everything already queued, so a burst of N changes
//! costs one reconcile instead of N. This is what a controller's workqueue does by
//! de-duplicating keys; without it the scheduler and the DaemonSet controller re-scan every
//! pod once per event, which is quadratic in the pod count.

use crate::apiserver::store::{EventType, Informer, Store, StoreEvent};
use std::time::Duration;
use tokio::time::Interval;

pub struct Changes {
    rx: Informer,
    ticker: Interval,
}

impl Changes {
    /// Follow `store`; `resync` is how often a reconcile runs without any change.
    #[track_caller]
    pub fn new(store: &Store, resync: Duration) -> Self {
        Changes {
            rx: store.informer(),
            ticker: tokio::time::interval(resync),
        }
    }

    /// Return once a reconcile is due: the resync tick fired or a queued event is `relevant`.
    /// False when the store has closed.
    /// `relevant` may also take each event in (a loop that keeps its own cache from them).
    pub async fn wait(&mut self, mut relevant: impl FnMut(&StoreEvent) -> bool) -> bool {
        loop {
            let mut due = tokio::select! {
                _ = self.ticker.tick() => true,
                r = self.rx.recv() => match r {
                    Some(ev) => relevant(&ev),
                    None => return false,
                }
            };
            match self.drain(&mut relevant) {
                None => return false,
                Some(more) => due |= more,
            }
            if due {
                return true;
            }
        }
    }

    /// Hand every queued event to `take` without waiting; whether any was relevant, None once
    /// the store has closed. Every event is handed over, also after a relevant one.
    pub fn drain(&mut self, mut take: impl FnMut(&StoreEvent) -> bool) -> Option<bool> {
        let mut relevant = false;
        self.rx
            .drain(|ev| relevant |= take(ev))
            .ok()
            .map(|()| relevant)
    }
}

/// Does a node event matter to a loop that reads only `fields` (JSON pointers) of nodes? A new
/// or deleted node always does; an update only when one of those fields changed. Node
/// heartbeats then wake nothing, as upstream's `shouldIgnoreNodeUpdate`-style filters decide.
pub fn node_fields_changed(ev: &StoreEvent, fields: &[&str]) -> bool {
    match (&ev.event_type, &ev.prev) {
        (EventType::Modified, Some(prev)) => fields
            .iter()
            .any(|f| prev.pointer(f) != ev.object.pointer(f)),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apiserver::resources::Registry;
    use serde_json::json;

    #[tokio::test]
    async fn a_burst_of_changes_wakes_once_and_irrelevant_ones_not_at_all() {
        let reg = Registry::with_builtins();
        let rt = reg.get("", "v1", "configmaps").unwrap();
        let store = Store::new(1000);
        let mut changes = Changes::new(&store, Duration::from_secs(3600));
        // The first tick of an interval fires at once: consume it.
        assert!(changes.wait(|_| false).await);
        for i in 0..50 {
            let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("c{i}"), "namespace": "d"}});
            store.create(&rt, cm, false).unwrap();
        }
        let seen = std::sync::atomic::AtomicUsize::new(0);
        let woke = tokio::time::timeout(
            Duration::from_millis(200),
            changes.wait(|_| {
                seen.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                true
            }),
        )
        .await;
        assert_eq!(woke.ok(), Some(true));
        // One wake-up took the whole burst: the queue is empty and relevant() saw each event
        // once (a loop that keeps a cache from the events needs every one).
        assert_eq!(
            seen.load(std::sync::atomic::Ordering::Relaxed),
            50,
            "every event handed over once"
        );
        assert!(changes.rx.is_empty());
        // Irrelevant changes do not wake the controller.
        store.create(&rt, json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "d"}}), false).unwrap();
        assert!(
            tokio::time::timeout(Duration::from_millis(100), changes.wait(|_| false))
                .await
                .is_err()
        );
    }
}
