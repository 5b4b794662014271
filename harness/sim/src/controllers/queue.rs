//! A controller's work queue over the store's event stream, as client-go's informer + workqueue
//! pair behaves: each change maps to the keys of the objects a loop reconciles, a burst of
//! changes is de-duplicated into one set of keys, a key can be requeued after a delay (for
//! minReadySeconds, deadlines, schedules), and a lagged stream or the resync tick asks for every
//! object. Reconciles are level-triggered: they read the current state, never the event.

use super::util;
use crate::apiserver::meta;
use crate::apiserver::selectors::LabelSelector;
use crate::apiserver::store::{Informer, Store, StoreEvent};
use crate::internal::Internal;
use crate::timing::{SimClock, SimInstant};
use serde_json::Value;
use std::collections::BTreeSet;
use std::time::Duration;
use tokio::time::{Interval, MissedTickBehavior};

/// (namespace, name) of the object a loop reconciles.
pub type Key = (String, String);

/// The key of an object.
pub fn key_of(obj: &Value) -> Key {
    (
        meta::namespace(obj).to_string(),
        meta::name(obj).to_string(),
    )
}

/// If `ev` is about an object controlled by a `kind`, the controller's key.
pub fn push_controller_key(ev: &StoreEvent, kind: &str, out: &mut Vec<Key>) {
    for obj in [Some(&ev.object), ev.prev.as_ref()].into_iter().flatten() {
        if let Some(r) = util::controller_of(obj).filter(|r| r["kind"] == kind) {
            let key = (
                meta::namespace(obj).to_string(),
                r["name"].as_str().unwrap_or("").to_string(),
            );
            if !out.contains(&key) {
                out.push(key);
            }
        }
    }
}

/// What to reconcile next.
#[derive(Debug, PartialEq, Eq)]
pub enum Work {
    /// Everything: start-up, the resync tick, or events were missed.
    All,
    Keys(BTreeSet<Key>),
}

/// What a loop reconciles and which objects lead back to it.
pub struct Watches {
    /// (group, plural) of the reconciled objects...
    pub group: &'static str,
    pub plural: &'static str,
    /// ...their kind, as the controller ownerReference of what they create names it...
    pub kind: &'static str,
    /// ...and the (group, plural) of those created objects: a change to one requeues its controller.
    pub children: &'static [(&'static str, &'static str)],
    /// For loops that follow pods by label selector (Services, PodDisruptionBudgets): how to
    /// read an object's selector; a pod change then requeues every object selecting it.
    pub selects_pods: Option<fn(&Value) -> Option<LabelSelector>>,
}

/// One kube-controller-manager loop: which objects it watches, and the reconcile of one key
/// (which may ask to be looked at again after a delay).
pub trait Reconciler: Send + Sync {
    fn client(&self) -> &Internal;
    fn watches(&self) -> Watches;
    fn reconcile(&mut self, key: &Key) -> Option<Duration>;

    /// The keys a change touches: its own, or its controller's.
    fn keys_of(&self, ev: &StoreEvent, out: &mut Vec<Key>) {
        let w = self.watches();
        if ev.key.group == w.group && ev.key.plural == w.plural {
            out.push(key_of(&ev.object));
        } else if w
            .children
            .iter()
            .any(|(g, p)| ev.key.group == *g && ev.key.plural == *p)
        {
            push_controller_key(ev, w.kind, out);
        }
        if let Some(selector_of) = w
            .selects_pods
            .filter(|_| ev.key.group.is_empty() && ev.key.plural == "pods")
        {
            for obj in self.client().list(
                w.group,
                w.plural,
                Some(meta::namespace(&ev.object)),
                &|_| true,
            ) {
                let Some(sel) = selector_of(&obj) else {
                    continue;
                };
                if [Some(&ev.object), ev.prev.as_ref()]
                    .into_iter()
                    .flatten()
                    .any(|p| sel.matches(meta::labels(p)))
                {
                    out.push(key_of(&obj));
                }
            }
        }
    }

    fn all_keys(&self) -> Vec<Key> {
        let w = self.watches();
        self.client()
            .list(w.group, w.plural, None, &|_| true)
            .iter()
            .map(|o| key_of(o))
            .collect()
    }
}

pub struct Queue {
    rx: Informer,
    ticker: Interval,
    /// Requeued keys by when they are due, on the cluster's clock (a freeze delays them).
    delayed: BTreeSet<(SimInstant, Key)>,
    clock: SimClock,
}

impl Queue {
    #[track_caller]
    pub fn new(store: &Store, resync: Duration) -> Self {
        let mut ticker = tokio::time::interval(resync);
        ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
        Queue {
            rx: store.informer(),
            ticker,
            delayed: BTreeSet::new(),
            clock: store.clock.clone(),
        }
    }

    pub fn requeue_after(&mut self, key: Key, after: Duration) {
        let at = self.clock.instant() + after;
        // Keep only the earliest wake-up per key.
        if let Some(existing) = self.delayed.iter().find(|(_, k)| *k == key).cloned() {
            if existing.0 <= at {
                return;
            }
            self.delayed.remove(&existing);
        }
        self.delayed.insert((at, key));
    }

    /// Wait for work; None when the store has closed.
    pub async fn next(&mut self, keys_of: impl Fn(&StoreEvent, &mut Vec<Key>)) -> Option<Work> {
        let mut keys: Vec<Key> = Vec::new();
        loop {
            let first_due = self.delayed.iter().next().map(|(t, _)| *t);
            let all = tokio::select! {
                _ = self.ticker.tick() => true,
                _ = sleep_until(&self.clock, first_due) => false,
                r = self.rx.recv() => match r {
                    Some(ev) => { keys_of(&ev, &mut keys); false }
                    None => return None,
                }
            };
            // Take the rest of the burst.
            if self.rx.drain(|ev| keys_of(ev, &mut keys)).is_err() {
                return None;
            }
            let now = self.clock.instant();
            while let Some(first) = self.delayed.iter().next().cloned() {
                if first.0 > now {
                    break;
                }
                self.delayed.remove(&first);
                keys.push(first.1);
            }
            if all {
                return Some(Work::All);
            }
            if !keys.is_empty() {
                return Some(Work::Keys(keys.drain(..).collect()));
            }
        }
    }
}

async fn sleep_until(clock: &SimClock, t: Option<SimInstant>) {
    match t {
        Some(t) => clock.sleep_until(t).await,
        None => std::future::pending().await,
    }
}

impl<R: Reconciler + ?Sized> Reconciler for Box<R> {
    fn client(&self) -> &Internal {
        (**self).client()
    }
    fn watches(&self) -> Watches {
        (**self).watches()
    }
    fn reconcile(&mut self, key: &Key) -> Option<Duration> {
        (**self).reconcile(key)
    }
    fn keys_of(&self, ev: &StoreEvent, out: &mut Vec<Key>) {
        (**self).keys_of(ev, out)
    }
    fn all_keys(&self) -> Vec<Key> {
        (**self).all_keys()
    }
}

/// Run a loop until the store closes: everything once at start, then what changes touch.
pub async fn drive(mut r: impl Reconciler, store: &Store, resync: Duration) {
    let mut queue = Queue::new(store, resync);
    while let Some(work) = queue.next(|ev, out| r.keys_of(ev, out)).await {
        let keys: Vec<Key> = match work {
            Work::All => r.all_keys(),
            Work::Keys(k) => k.into_iter().collect(),
        };
        // One pass: none while the cluster is frozen.
        let _pass = store.clock.pass().await;
        for key in keys {
            if let Some(after) = r.reconcile(&key) {
                queue.requeue_after(key, after);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apiserver::resources::Registry;
    use serde_json::json;

    fn key(n: &str) -> Key {
        ("d".into(), n.into())
    }

    #[tokio::test]
    async fn bursts_are_deduplicated_and_delays_fire() {
        let reg = Registry::with_builtins();
        let rt = reg.get("", "v1", "configmaps").unwrap();
        let store = Store::new(1000);
        let mut q = Queue::new(&store, Duration::from_secs(3600));
        // The first tick of an interval fires at once: everything.
        assert_eq!(q.next(|_, _| {}).await, Some(Work::All));
        for i in 0..20 {
            let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("c{}", i % 2), "namespace": "d", "labels": {"i": i.to_string()}}});
            let _ = store.create(&rt, cm, false);
        }
        let map = |ev: &StoreEvent, out: &mut Vec<Key>| {
            out.push(key(crate::apiserver::meta::name(&ev.object)))
        };
        let got = q.next(map).await;
        assert_eq!(
            got,
            Some(Work::Keys([key("c0"), key("c1")].into_iter().collect()))
        );
        // A requeued key comes back by itself, once.
        q.requeue_after(key("later"), Duration::from_millis(30));
        q.requeue_after(key("later"), Duration::from_millis(60));
        let t0 = std::time::Instant::now();
        assert_eq!(
            q.next(map).await,
            Some(Work::Keys([key("later")].into_iter().collect()))
        );
        assert!(t0.elapsed() >= Duration::from_millis(25));
        assert!(
            tokio::time::timeout(Duration::from_millis(100), q.next(map))
                .await
                .is_err(),
            "nothing else is due"
        );
    }
}
