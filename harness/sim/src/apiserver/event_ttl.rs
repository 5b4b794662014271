//! The apiserver's `--event-ttl` (default 1 h): etcd keeps each Event under a lease that every
//! write of the Event renews, so an Event nobody has written for an hour disappears and
//! watchers see it DELETED. Without it a long or large run keeps every Event it ever recorded.
//!
//! Modelled by a sweep rather than leases: an Event's last write is the latest of its own
//! timestamps (creation, `lastTimestamp`, `eventTime`, `series.lastObservedTime`, which every
//! recorder write sets), measured on the cluster's clock against the hour times `timeScale`, so
//! at `timeScale: 0.05` an Event expires after 3 minutes, as in an hour-long incident.

use crate::apiserver::resources::ResourceKey;
use crate::apiserver::store::DeleteOptions;
use crate::apiserver::ApiServer;
use crate::timing::{self, Timing};
use chrono::{DateTime, Utc};
use serde::Deserialize;
use std::sync::Arc;
use std::time::Duration;

/// `--event-ttl`'s default.
pub const EVENT_TTL: Duration = Duration::from_secs(3600);

/// How often expired Events are looked for (nominal): a lease expires within a second upstream;
/// one sweep a minute keeps the cost of a sweep (every stored Event) small.
const SWEEP_EVERY: Duration = Duration::from_secs(60);

pub async fn run(api: Arc<ApiServer>, timing: Timing) {
    let mut tick = tokio::time::interval(timing.s(SWEEP_EVERY).max(Duration::from_millis(100)));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let _pass = api.clock().pass().await;
        expire(&api, &timing, EVENT_TTL);
    }
}

/// Delete every Event last written more than `ttl` (nominal, so `ttl * scale` on the cluster's
/// clock) ago; returns how many went.
pub fn expire(api: &ApiServer, timing: &Timing, ttl: Duration) -> usize {
    let now = api.clock().now();
    let Ok(ttl) = chrono::Duration::from_std(timing.s(ttl)) else {
        return 0;
    };
    let Some(rt) = api.registry.storage_type(&ResourceKey::new("", "events")) else {
        return 0;
    };
    // Events are stored as their encoding (store::Stored): read only the timestamps of each.
    api.store
        .encodings(&ResourceKey::new("", "events"))
        .into_iter()
        .filter(|(_, json)| last_write(json).map(|t| now - t >= ttl).unwrap_or(false))
        .filter(|((ns, name), _)| {
            api.delete_internal(&rt, ns, name, &DeleteOptions::default())
                .is_ok()
        })
        .count()
}

/// The timestamps of an Event that its writes set.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Written<'a> {
    #[serde(borrow)]
    metadata: Option<Created<'a>>,
    last_timestamp: Option<&'a str>,
    event_time: Option<&'a str>,
    #[serde(borrow)]
    series: Option<Series<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Created<'a> {
    creation_timestamp: Option<&'a str>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Series<'a> {
    last_observed_time: Option<&'a str>,
}

/// When the Event was last written, as far as its own fields tell.
fn last_write(json: &[u8]) -> Option<DateTime<Utc>> {
    let w: Written = serde_json::from_slice(json).ok()?;
    [
        w.metadata.and_then(|m| m.creation_timestamp),
        w.last_timestamp,
        w.event_time,
        w.series.and_then(|s| s.last_observed_time),
    ]
    .into_iter()
    .flatten()
    .filter_map(timing::parse_time)
    .max()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apiserver::{PatchType, WriteOptions};
    use serde_json::{json, Value};

    fn event(name: &str, now: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": name, "namespace": "default"},
               "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
               "reason": "Started", "message": "m", "type": "Normal", "count": 1, "firstTimestamp": now, "lastTimestamp": now})
    }

    #[tokio::test]
    async fn events_expire_an_hour_of_nominal_time_after_their_last_write() {
        let api = ApiServer::new(100);
        let opts = WriteOptions::default();
        let namespaces = api.resource("", "v1", "namespaces").unwrap();
        let events = api.resource("", "v1", "events").unwrap();
        api.create(
            &namespaces,
            "",
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}),
            &opts,
        )
        .unwrap();
        let stored = |name: &str| api.store.get(&events.key(), "default", name);
        // At scale 0.001 an hour is 3.6 wall-clock seconds (timestamps have 1 s resolution).
        let timing = Timing::scaled(0.001);
        let now = || api.clock().now_rfc3339();
        api.create(&events, "default", event("quiet", &now()), &opts)
            .unwrap();
        api.create(&events, "default", event("repeated", &now()), &opts)
            .unwrap();
        assert_eq!(
            expire(&api, &timing, EVENT_TTL),
            0,
            "both were just written"
        );
        tokio::time::sleep(Duration::from_millis(3000)).await;
        // A repeat of the event (the recorder bumps count and lastTimestamp) renews its lease.
        api.patch(
            &events,
            "default",
            "repeated",
            None,
            PatchType::Merge,
            &json!({"count": 2, "lastTimestamp": now()}),
            &opts,
        )
        .unwrap();
        tokio::time::sleep(Duration::from_millis(1800)).await;
        assert_eq!(expire(&api, &timing, EVENT_TTL), 1);
        assert!(
            stored("quiet").is_none(),
            "an Event not written for an hour is gone"
        );
        assert!(stored("repeated").is_some(), "a renewed Event stays");
    }
}
