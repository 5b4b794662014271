//! Waiting for a condition with a budget, over objects, events or node logs. A condition is
//! checked again whenever the cluster's store changes (and at least every 10 ms), so a wait
//! returns as soon as the condition holds; the measured time comes back with the value.

use crate::cluster::{Cluster, LogSource};
use crate::error::{Error, Result};
use k8s_openapi::api::core::v1::Event;
use kube::api::{Api, ListParams};
use kube::runtime::wait::Condition;
use kube::Resource;
use std::future::Future;
use std::time::Duration;
use tokio::sync::broadcast::error::RecvError;
use tokio::time::Instant;

/// Re-check period when nothing in the store changed (node logs, wall-clock thresholds).
const RECHECK: Duration = Duration::from_millis(10);

/// A value and how long it took to get it.
#[derive(Debug, Clone, PartialEq)]
pub struct Measured<T> {
    pub value: T,
    /// Wall-clock time the wait took.
    pub wall: Duration,
    /// The same span in nominal time (`wall / time_scale`): what a real cluster
    /// would have taken.
    pub nominal: Duration,
}

impl Cluster {
    /// Wait until `check` returns `Some`, for at most `budget` of wall-clock time. `what` names
    /// the condition in the timeout error.
    pub async fn wait<T, F, Fut>(
        &self,
        what: &str,
        budget: Duration,
        mut check: F,
    ) -> Result<Measured<T>>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<Option<T>>>,
    {
        let start = Instant::now();
        let deadline = start + budget;
        let mut changes = self.sim().api.store.subscribe();
        loop {
            if let Some(value) = check().await? {
                return Ok(self.measured(value, start));
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(Error::Timeout {
                    what: what.to_string(),
                    budget,
                    nominal: self.timing().to_nominal(budget),
                });
            }
            let pause = tokio::time::sleep_until(deadline.min(now + RECHECK));
            tokio::select! {
                _ = pause => {}
                r = changes.recv() => if let Err(RecvError::Closed) = r { tokio::time::sleep_until(deadline.min(now + RECHECK)).await },
            }
        }
    }

    fn measured<T>(&self, value: T, start: Instant) -> Measured<T> {
        let wall = start.elapsed();
        Measured {
            value,
            wall,
            nominal: self.timing().to_nominal(wall),
        }
    }

    /// Wait until the object `name` of `api` satisfies a kube-runtime `Condition` (closures
    /// `Fn(Option<&K>) -> bool` are conditions, as are `kube::runtime::conditions::*`). Returns
    /// the object as last read (`None`: absent).
    pub async fn wait_for_object<K>(
        &self,
        api: &Api<K>,
        name: &str,
        condition: impl Condition<K>,
        budget: Duration,
    ) -> Result<Measured<Option<K>>>
    where
        K: Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
        K::DynamicType: Default,
    {
        let what = format!("{} {name}", K::kind(&Default::default()));
        self.wait(&what, budget, || async {
            let obj = api.get_opt(name).await.map_err(|source| Error::Kube {
                what: format!("reading {what}"),
                source,
            })?;
            Ok(condition.matches_object(obj.as_ref()).then_some(obj))
        })
        .await
    }

    /// Wait for a core/v1 Event (any namespace) that `matches`, e.g. a kubelet's `FailedMount`.
    pub async fn wait_for_event(
        &self,
        what: &str,
        budget: Duration,
        matches: impl Fn(&Event) -> bool,
    ) -> Result<Measured<Event>> {
        let events: Api<Event> = Api::all(self.client());
        self.wait(what, budget, || async {
            let list = events
                .list(&ListParams::default())
                .await
                .map_err(|source| Error::Kube {
                    what: "listing events".into(),
                    source,
                })?;
            Ok(list.items.into_iter().find(|e| matches(e)))
        })
        .await
    }

    /// Wait for a line of a node log that `matches`; lines already written count.
    pub async fn wait_for_log(
        &self,
        node: &str,
        source: LogSource,
        budget: Duration,
        matches: impl Fn(&str) -> bool,
    ) -> Result<Measured<String>> {
        let n = self.node(node, "logs")?.clone();
        let buf = match source {
            LogSource::Kubelet => &n.kubelet_log,
            LogSource::CsiPlugin => &n.csi_log,
        };
        // Subscribe before reading what is there, so no line falls in between.
        let mut live = buf.subscribe();
        let start = Instant::now();
        if let Some(line) = buf.snapshot().into_iter().find(|l| matches(l)) {
            return Ok(self.measured(line, start));
        }
        let what = format!("a {source:?} log line on {node}");
        let timeout = || Error::Timeout {
            what: what.clone(),
            budget,
            nominal: self.timing().to_nominal(budget),
        };
        let deadline = start + budget;
        loop {
            match tokio::time::timeout_at(deadline, live.recv()).await {
                Err(_) => return Err(timeout()),
                Ok(Ok(line)) if matches(&line) => return Ok(self.measured(line, start)),
                Ok(Ok(_)) => {}
                // Fell behind a burst: the buffer still has the lines.
                Ok(Err(RecvError::Lagged(_))) => {
                    if let Some(line) = buf.snapshot().into_iter().rev().find(|l| matches(l)) {
                        return Ok(self.measured(line, start));
                    }
                }
                Ok(Err(RecvError::Closed)) => return Err(timeout()),
            }
        }
    }
}
