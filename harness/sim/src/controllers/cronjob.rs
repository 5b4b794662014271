//! The CronJob controller on the cluster's one clock (`SimClock::now`): at each scheduled
//! time a Job `<cronjob>-<minutes since epoch>` from the jobTemplate, concurrencyPolicy
//! (Allow/Forbid/Replace), startingDeadlineSeconds, suspend, `status.active`,
//! lastScheduleTime/lastSuccessfulTime and the successful/failed job history limits.

use super::queue::{Key, Reconciler, Watches};
use super::util::{self, i64_at};
use crate::apiserver::meta;
use crate::apiserver::resources::ResourceKey;
use crate::events::{EventKind, EventRecorder};
use crate::internal::Internal;
use crate::timing::{self, SimClock, Timing};
use chrono::{DateTime, Utc};
use croner::parser::{CronParser, Seconds, Year};
use croner::Cron;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

const SCHEDULED_TIMESTAMP: &str = "batch.kubernetes.io/cronjob-scheduled-timestamp";

pub struct CronJobController {
    client: Internal,
    recorder: EventRecorder,
    /// The cluster's clock: schedules are read on it. A calendar is not a duration: `timeScale`
    /// does not make it run faster (docs/fidelity.md, "Time").
    clock: SimClock,
}

impl CronJobController {
    pub fn new(client: Internal, timing: Timing) -> Self {
        let recorder = EventRecorder::new(client.clone(), "cronjob-controller", None);
        CronJobController {
            client,
            recorder,
            clock: timing.clock,
        }
    }
}

/// A standard five-field schedule (or `@hourly`-style descriptor), as robfig/cron's
/// ParseStandard reads it. `TZ=`/`CRON_TZ=` prefixes are refused: only UTC is modelled.
pub fn parse_schedule(s: &str) -> Result<Cron, String> {
    CronParser::builder()
        .seconds(Seconds::Disallowed)
        .year(Year::Disallowed)
        .build()
        .parse(s.trim())
        .map_err(|e| e.to_string())
}

/// The most recent scheduled time in (`after`, `now`], and the next one after `now`.
pub fn schedule_window(
    cron: &Cron,
    after: DateTime<Utc>,
    now: DateTime<Utc>,
) -> (Option<DateTime<Utc>>, Option<DateTime<Utc>>) {
    let last = cron
        .find_previous_occurrence(&now, true)
        .ok()
        .filter(|t| *t > after);
    let next = cron.find_next_occurrence(&now, false).ok();
    (last, next)
}

/// The name of the Job for a scheduled time: the time in minutes since the epoch.
pub fn job_name(cronjob: &str, scheduled: DateTime<Utc>) -> String {
    format!("{cronjob}-{}", scheduled.timestamp() / 60)
}

fn finished_as(job: &Value) -> Option<&'static str> {
    ["Complete", "Failed"]
        .into_iter()
        .find(|t| meta::condition_status(job, t) == Some("True"))
}

impl Reconciler for CronJobController {
    fn client(&self) -> &Internal {
        &self.client
    }

    fn watches(&self) -> Watches {
        Watches {
            group: "batch",
            plural: "cronjobs",
            kind: "CronJob",
            children: &[("batch", "jobs")],
            selects_pods: None,
        }
    }

    fn reconcile(&mut self, (ns, name): &Key) -> Option<Duration> {
        let cj = self.client.get("batch", "cronjobs", ns, name)?;
        if meta::is_deleting(&cj) {
            return None;
        }
        let mut jobs = util::controlled_by(
            &self.client.api.store,
            meta::uid(&cj),
            &ResourceKey::new("batch", "jobs"),
        );
        let mut status = cj
            .get("status")
            .cloned()
            .filter(Value::is_object)
            .unwrap_or_else(|| json!({}));
        let active_before: Vec<Value> = status["active"].as_array().cloned().unwrap_or_default();
        // Finished jobs leave the active list, once, with an event.
        for j in &jobs {
            if let Some(cond) = finished_as(j) {
                if active_before.iter().any(|a| a["uid"] == meta::uid(j)) {
                    self.recorder.record(
                        &cj,
                        EventKind::Normal,
                        "SawCompletedJob",
                        &format!("Saw completed job: {}, status: {cond}", meta::name(j)),
                    );
                }
                if cond == "Complete" {
                    if let Some(t) = j.pointer("/status/completionTime") {
                        if status.get("lastSuccessfulTime").and_then(Value::as_str) < t.as_str() {
                            status["lastSuccessfulTime"] = t.clone();
                        }
                    }
                }
            }
        }
        let reference = |j: &Value| json!({"kind": "Job", "namespace": ns, "name": meta::name(j), "uid": meta::uid(j), "apiVersion": "batch/v1", "resourceVersion": meta::resource_version(j)});
        let mut active: Vec<Arc<Value>> = jobs
            .iter()
            .filter(|j| finished_as(j).is_none() && !meta::is_deleting(j))
            .cloned()
            .collect();

        let mut requeue = None;
        let suspended = cj.pointer("/spec/suspend") == Some(&json!(true));
        match parse_schedule(meta::str_at(&cj, "/spec/schedule").unwrap_or("")) {
            Err(e) => {
                self.recorder.record(
                    &cj,
                    EventKind::Warning,
                    "InvalidSchedule",
                    &format!(
                        "invalid schedule: {} : {e}",
                        meta::str_at(&cj, "/spec/schedule").unwrap_or("")
                    ),
                );
            }
            Ok(cron) if !suspended => {
                let now = self.clock.now();
                let created = meta::str_at(&cj, "/metadata/creationTimestamp")
                    .and_then(timing::parse_time)
                    .unwrap_or(now);
                let after = status
                    .get("lastScheduleTime")
                    .and_then(Value::as_str)
                    .and_then(timing::parse_time)
                    .unwrap_or(created);
                let (due, next) = schedule_window(&cron, after, now);
                let deadline = i64_at(&cj, "/spec/startingDeadlineSeconds");
                if let Some(t) =
                    due.filter(|t| deadline.is_none_or(|d| (now - *t).num_seconds() <= d))
                {
                    let policy = meta::str_at(&cj, "/spec/concurrencyPolicy").unwrap_or("Allow");
                    if policy == "Forbid" && !active.is_empty() {
                        // Skipped: retried at the next schedule.
                    } else {
                        if policy == "Replace" {
                            for j in active.drain(..) {
                                if self
                                    .client
                                    .delete("batch", "jobs", ns, meta::name(&j), None)
                                    .is_ok()
                                {
                                    self.recorder.record(
                                        &cj,
                                        EventKind::Normal,
                                        "SuccessfulDelete",
                                        &format!("Deleted job {}", meta::name(&j)),
                                    );
                                }
                            }
                        }
                        let template = cj
                            .pointer("/spec/jobTemplate")
                            .cloned()
                            .unwrap_or_else(|| json!({}));
                        let mut metadata = json!({"name": job_name(name, t), "namespace": ns, "ownerReferences": [util::controller_ref(&cj, "batch/v1", "CronJob")]});
                        for f in ["labels", "annotations"] {
                            if let Some(v) = template.pointer(&format!("/metadata/{f}")) {
                                metadata[f] = v.clone();
                            }
                        }
                        metadata["annotations"][SCHEDULED_TIMESTAMP] = json!(timing::rfc3339(t));
                        let job = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata, "spec": template.get("spec").cloned().unwrap_or_else(|| json!({}))});
                        match self.client.create("batch", "jobs", ns, job) {
                            Ok(j) => {
                                self.recorder.record(
                                    &cj,
                                    EventKind::Normal,
                                    "SuccessfulCreate",
                                    &format!("Created job {}", meta::name(&j)),
                                );
                                active.push(j.clone());
                                jobs.push(j);
                            }
                            Err(e) if e.code == 409 => {}
                            Err(e) => self.recorder.record(
                                &cj,
                                EventKind::Warning,
                                "FailedCreate",
                                &format!("Error creating job: {}", e.message),
                            ),
                        }
                    }
                    status["lastScheduleTime"] = json!(timing::rfc3339(t));
                }
                requeue =
                    next.map(|n| (n - now).to_std().unwrap_or_default() + Duration::from_millis(5));
            }
            Ok(_) => {}
        }
        if active.is_empty() {
            status.as_object_mut().map(|m| m.remove("active"));
        } else {
            status["active"] = json!(active.iter().map(|j| reference(j)).collect::<Vec<_>>());
        }
        if Some(&status) != cj.get("status") {
            let mut patch = status.clone();
            if status.get("active").is_none() && cj.pointer("/status/active").is_some() {
                patch["active"] = Value::Null;
            }
            let _ =
                self.client
                    .merge_status("batch", "cronjobs", ns, name, &json!({"status": patch}));
        }
        self.trim_history(&cj, &jobs);
        requeue
    }
}

impl CronJobController {
    /// Keep the newest successfulJobsHistoryLimit (3) complete and failedJobsHistoryLimit (1)
    /// failed Jobs; delete older ones with their pods.
    fn trim_history(&self, cj: &Value, jobs: &[Arc<Value>]) {
        for (cond, field, default) in [
            ("Complete", "successfulJobsHistoryLimit", 3),
            ("Failed", "failedJobsHistoryLimit", 1),
        ] {
            let limit = i64_at(cj, &format!("/spec/{field}"))
                .unwrap_or(default)
                .max(0) as usize;
            let mut done: Vec<&Arc<Value>> = jobs
                .iter()
                .filter(|j| finished_as(j) == Some(cond) && !meta::is_deleting(j))
                .collect();
            if done.len() <= limit {
                continue;
            }
            done.sort_by(|a, b| {
                meta::str_at(a, "/status/startTime")
                    .cmp(&meta::str_at(b, "/status/startTime"))
                    .then(meta::name(a).cmp(meta::name(b)))
            });
            for j in &done[..done.len() - limit] {
                if self
                    .client
                    .delete("batch", "jobs", meta::namespace(j), meta::name(j), None)
                    .is_ok()
                {
                    self.recorder.record(
                        cj,
                        EventKind::Normal,
                        "SuccessfulDelete",
                        &format!("Deleted job {}", meta::name(j)),
                    );
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> DateTime<Utc> {
        timing::parse_time(s).unwrap()
    }

    #[test]
    fn schedules_read_like_standard_cron() {
        let every5 = parse_schedule("*/5 * * * *").unwrap();
        let (due, next) = schedule_window(
            &every5,
            t("2026-01-01T00:00:00Z"),
            t("2026-01-01T00:12:30Z"),
        );
        assert_eq!(
            due,
            Some(t("2026-01-01T00:10:00Z")),
            "only the most recent missed time runs"
        );
        assert_eq!(next, Some(t("2026-01-01T00:15:00Z")));
        let (due, _) = schedule_window(
            &every5,
            t("2026-01-01T00:10:00Z"),
            t("2026-01-01T00:12:30Z"),
        );
        assert_eq!(due, None, "already scheduled");
        assert!(parse_schedule("@hourly").is_ok());
        assert!(
            parse_schedule("0 */5 * * * *").is_err(),
            "six fields (seconds) are not standard cron"
        );
        assert!(parse_schedule("61 * * * *").is_err());
    }

    #[test]
    fn job_names_are_minutes_since_the_epoch() {
        assert_eq!(
            job_name("backup", t("2026-01-01T00:10:00Z")),
            "backup-29453770"
        );
    }
}
