//! The Job controller: pods up to `parallelism` until `completions` succeed, failed pods retried
//! with the pod-failure backoff (10 s doubling, capped at 10 min, scaled) until `backoffLimit`,
//! `activeDeadlineSeconds`, finished pods counted exactly once through the
//! `batch.kubernetes.io/job-tracking` finalizer, the SuccessCriteriaMet/Complete and
//! FailureTarget/Failed conditions as 1.35 writes them, and `ttlSecondsAfterFinished`.

use super::queue::{Key, Reconciler, Watches};
use super::util::{self, i64_at};
use crate::apiserver::meta;
use crate::apiserver::resources::ResourceKey;
use crate::events::{EventKind, EventRecorder};
use crate::internal::Internal;
use crate::timing::{self, Timing};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

pub const TRACKING_FINALIZER: &str = "batch.kubernetes.io/job-tracking";
pub const JOB_NAME_LABEL: &str = "batch.kubernetes.io/job-name";
pub const CONTROLLER_UID_LABEL: &str = "batch.kubernetes.io/controller-uid";
const BACKOFF_INITIAL: Duration = Duration::from_secs(10);
const BACKOFF_MAX: Duration = Duration::from_secs(600);

pub struct JobController {
    client: Internal,
    recorder: EventRecorder,
    timing: Timing,
}

impl JobController {
    pub fn new(client: Internal, timing: Timing) -> Self {
        let recorder = EventRecorder::new(client.clone(), "job-controller", None);
        JobController {
            client,
            recorder,
            timing,
        }
    }
}

/// The delay before a replacement pod after `failures` failed pods (upstream pod failure backoff).
pub fn failure_backoff(failures: i64) -> Duration {
    if failures <= 0 {
        return Duration::ZERO;
    }
    let doublings = (failures - 1).min(16) as u32;
    (BACKOFF_INITIAL * 2u32.pow(doublings)).min(BACKOFF_MAX)
}

fn finished(job: &Value) -> bool {
    ["Complete", "Failed"]
        .iter()
        .any(|t| meta::condition_status(job, t) == Some("True"))
}

/// Job conditions carry lastProbeTime = lastTransitionTime.
fn set_job_condition(status: &mut Value, ctype: &str, reason: &str, message: &str, now: &str) {
    meta::set_status_condition(
        status,
        ctype,
        "True",
        reason,
        message,
        &[("lastProbeTime", json!(now))],
        now,
    );
}

/// `ensureJobConditionStatus` for the Suspended condition: replaced (both times now) when its
/// status, reason or message changes, added only when not False; whether it changed.
fn ensure_condition(
    status: &mut Value,
    value: &str,
    reason: &str,
    message: &str,
    now: &str,
) -> bool {
    let fresh = json!({"type": "Suspended", "status": value, "lastProbeTime": now,
        "lastTransitionTime": now, "reason": reason, "message": message});
    if !status["conditions"].is_array() {
        status["conditions"] = json!([]);
    }
    let list = status["conditions"].as_array_mut().expect("an array");
    let changed = match list.iter_mut().find(|c| c["type"] == "Suspended") {
        Some(c) if c["status"] == value && c["reason"] == reason && c["message"] == message => {
            false
        }
        Some(c) => {
            *c = fresh;
            true
        }
        None if value != "False" => {
            list.push(fresh);
            true
        }
        None => false,
    };
    if list.is_empty() {
        status.as_object_mut().map(|m| m.shift_remove("conditions"));
    }
    changed
}

/// The labels the apiserver puts on a Job's template, repeated on its pods for Jobs created with
/// a manual selector.
fn job_labels(job: &Value) -> Value {
    let (name, uid) = (meta::name(job), meta::uid(job));
    json!({CONTROLLER_UID_LABEL: uid, JOB_NAME_LABEL: name, "controller-uid": uid, "job-name": name})
}

impl Reconciler for JobController {
    fn client(&self) -> &Internal {
        &self.client
    }

    fn watches(&self) -> Watches {
        Watches {
            group: "batch",
            plural: "jobs",
            kind: "Job",
            children: &[("", "pods")],
            selects_pods: None,
        }
    }

    fn reconcile(&mut self, (ns, name): &Key) -> Option<Duration> {
        let job = self.client.get("batch", "jobs", ns, name)?;
        let pods = util::controlled_by(
            &self.client.api.store,
            meta::uid(&job),
            &ResourceKey::new("", "pods"),
        );
        if meta::is_deleting(&job) {
            self.release(ns, &pods);
            return None;
        }
        let mut status = job
            .get("status")
            .cloned()
            .filter(Value::is_object)
            .unwrap_or_else(|| json!({}));
        if finished(&job) {
            self.release(ns, &pods);
            return self.expire(&job);
        }
        let now = self.client.clock().now();
        let now_text = timing::rfc3339(now);
        let suspended = job.pointer("/spec/suspend") == Some(&json!(true));
        if status.get("startTime").is_none() && !suspended {
            status["startTime"] = json!(timing::rfc3339(now));
        }
        // Count each finished pod once: those still carrying the tracking finalizer.
        let mut succeeded = i64_at(&status, "/succeeded").unwrap_or(0);
        let mut failed = i64_at(&status, "/failed").unwrap_or(0);
        let mut newly_counted = vec![];
        for p in &pods {
            let phase = meta::str_at(p, "/status/phase").unwrap_or("");
            let tracked = meta::finalizers(p).iter().any(|f| f == TRACKING_FINALIZER);
            let gone_unfinished = meta::is_deleting(p) && phase != "Succeeded" && phase != "Failed";
            if tracked && (phase == "Succeeded" || phase == "Failed" || gone_unfinished) {
                if phase == "Succeeded" {
                    succeeded += 1;
                } else {
                    failed += 1;
                }
                newly_counted.push(p.clone());
            }
        }
        // With restartPolicy OnFailure, container restarts count against the backoff limit.
        let restarts: i64 = pods
            .iter()
            .filter(|p| util::is_pod_active(p))
            .flat_map(|p| {
                p.pointer("/status/containerStatuses")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default()
            })
            .map(|c| c["restartCount"].as_i64().unwrap_or(0))
            .sum();
        let active: Vec<&Arc<Value>> = pods
            .iter()
            .filter(|p| {
                util::is_pod_active(p)
                    && !newly_counted.iter().any(|c| meta::uid(c) == meta::uid(p))
            })
            .collect();
        let completions = i64_at(&job, "/spec/completions");
        let parallelism = i64_at(&job, "/spec/parallelism").unwrap_or(1);
        let backoff_limit = i64_at(&job, "/spec/backoffLimit").unwrap_or(6);
        let deadline = i64_at(&job, "/spec/activeDeadlineSeconds");
        let started = status["startTime"]
            .as_str()
            .and_then(timing::parse_time)
            .unwrap_or(now);
        let elapsed = (now - started).to_std().unwrap_or_default();

        let failure = if failed + restarts > backoff_limit {
            Some((
                "BackoffLimitExceeded",
                "Job has reached the specified backoff limit",
            ))
        } else if deadline
            .is_some_and(|d| elapsed >= self.timing.s(Duration::from_secs(d.max(0) as u64)))
        {
            Some((
                "DeadlineExceeded",
                "Job was active longer than specified deadline",
            ))
        } else {
            None
        };
        let success = match completions {
            Some(c) => succeeded >= c,
            None => succeeded > 0 && active.is_empty(),
        };
        let mut requeue = deadline.map(|d| {
            self.timing
                .s(Duration::from_secs(d.max(0) as u64))
                .saturating_sub(elapsed)
                + Duration::from_millis(10)
        });
        if let Some((reason, message)) = failure {
            set_job_condition(&mut status, "FailureTarget", reason, message, &now_text);
            for p in &active {
                let _ = self.client.delete("", "pods", ns, meta::name(p), None);
            }
            if active.is_empty() {
                set_job_condition(&mut status, "Failed", reason, message, &now_text);
                self.recorder
                    .record(&job, EventKind::Warning, reason, message);
            }
        } else if success {
            set_job_condition(
                &mut status,
                "SuccessCriteriaMet",
                "CompletionsReached",
                "Reached expected number of succeeded pods",
                &now_text,
            );
            for p in &active {
                let _ = self.client.delete("", "pods", ns, meta::name(p), None);
            }
            if active.is_empty() {
                set_job_condition(
                    &mut status,
                    "Complete",
                    "CompletionsReached",
                    "Reached expected number of succeeded pods",
                    &now_text,
                );
                status["completionTime"] = json!(timing::rfc3339(now));
                self.recorder
                    .record(&job, EventKind::Normal, "Completed", "Job completed");
            }
        } else if suspended {
            // manageJob of a suspended Job deletes its active pods, each after taking off its
            // tracking finalizer, so none counts as failed (deleteJobPods); then the Suspended
            // condition (job_controller.go).
            for p in &active {
                let rest: Vec<String> = meta::finalizers(p)
                    .into_iter()
                    .filter(|f| f != TRACKING_FINALIZER)
                    .collect();
                let fins = if rest.is_empty() {
                    Value::Null
                } else {
                    json!(rest)
                };
                let _ = self.client.merge(
                    "",
                    "pods",
                    ns,
                    meta::name(p),
                    &json!({"metadata": {"finalizers": fins}}),
                );
                if self
                    .client
                    .delete("", "pods", ns, meta::name(p), None)
                    .is_ok()
                {
                    self.recorder.record(
                        &job,
                        EventKind::Normal,
                        "SuccessfulDelete",
                        &format!("Deleted pod: {}", meta::name(p)),
                    );
                }
            }
            if ensure_condition(
                &mut status,
                "True",
                "JobSuspended",
                "Job suspended",
                &now_text,
            ) {
                self.recorder
                    .record(&job, EventKind::Normal, "Suspended", "Job suspended");
            }
        } else {
            // Resumed: the condition goes False and the active deadline counts from now.
            if ensure_condition(&mut status, "False", "JobResumed", "Job resumed", &now_text) {
                self.recorder
                    .record(&job, EventKind::Normal, "Resumed", "Job resumed");
                status["startTime"] = json!(now_text);
            }
            let remaining = completions
                .map(|c| c - succeeded)
                .unwrap_or(if succeeded > 0 { 0 } else { parallelism });
            let want = parallelism.min(remaining).max(0);
            let missing = want - active.len() as i64;
            // Replacements of failed pods wait for the pod-failure backoff.
            let wait = self
                .timing
                .s(failure_backoff(failed))
                .saturating_sub(last_failure_age(&pods, now));
            if missing > 0 && (failed == 0 || wait.is_zero()) {
                let template = job
                    .pointer("/spec/template")
                    .cloned()
                    .unwrap_or_else(|| json!({}));
                for _ in 0..missing {
                    let mut pod = util::pod_from_template(
                        &template,
                        util::controller_ref(&job, "batch/v1", "Job"),
                        ns,
                        &format!("{name}-"),
                    );
                    for (k, v) in job_labels(&job).as_object().into_iter().flatten() {
                        pod["metadata"]["labels"][k] = v.clone();
                    }
                    pod["metadata"]["finalizers"] = json!([TRACKING_FINALIZER]);
                    match self.client.create("", "pods", ns, pod) {
                        Ok(p) => self.recorder.record(
                            &job,
                            EventKind::Normal,
                            "SuccessfulCreate",
                            &format!("Created pod: {}", meta::name(&p)),
                        ),
                        Err(e) => {
                            self.recorder.record(
                                &job,
                                EventKind::Warning,
                                "FailedCreate",
                                &format!("Error creating: {}", e.message),
                            );
                            break;
                        }
                    }
                }
            } else if missing > 0 {
                requeue = Some(requeue.map_or(wait, |r| r.min(wait)) + Duration::from_millis(5));
            }
        }
        let pods = util::controlled_by(
            &self.client.api.store,
            meta::uid(&job),
            &ResourceKey::new("", "pods"),
        );
        let live: Vec<&Arc<Value>> = pods.iter().filter(|p| util::is_pod_active(p)).collect();
        status["active"] = json!(live.len());
        status["ready"] = json!(live.iter().filter(|p| util::is_pod_ready(p)).count());
        status["terminating"] = json!(pods
            .iter()
            .filter(|p| meta::is_deleting(p)
                && !newly_counted.iter().any(|c| meta::uid(c) == meta::uid(p)))
            .count());
        status["succeeded"] = json!(succeeded);
        status["failed"] = json!(failed);
        status["uncountedTerminatedPods"] = json!({});
        // Zero counters are omitted (omitempty), as the real status shows.
        for f in ["active", "succeeded", "failed"] {
            if status[f] == json!(0) {
                status.as_object_mut().map(|m| m.remove(f));
            }
        }
        // The counted pods' finalizers go before the counts and conditions are written, as
        // job_controller.go's trackJobStatusAndRemoveFinalizers orders it: a Job seen finished has no
        // pod left with its tracking finalizer.
        self.release(ns, &newly_counted);
        if Some(&status) != job.get("status") {
            let mut patch = status.clone();
            for f in ["active", "succeeded", "failed"] {
                if patch.get(f).is_none() && job.pointer(&format!("/status/{f}")).is_some() {
                    patch[f] = Value::Null;
                }
            }
            let _ = self
                .client
                .merge_status("batch", "jobs", ns, name, &json!({"status": patch}));
        }
        requeue
    }
}

impl JobController {
    /// Drop the tracking finalizer of finished (or deleted) pods once they are counted.
    fn release(&self, ns: &str, pods: &[Arc<Value>]) {
        for p in pods {
            let fins = meta::finalizers(p);
            if !fins.iter().any(|f| f == TRACKING_FINALIZER) || util::is_pod_active(p) {
                continue;
            }
            let rest: Vec<&String> = fins.iter().filter(|f| *f != TRACKING_FINALIZER).collect();
            let _ = self.client.merge("", "pods", ns, meta::name(p), &json!({"metadata": {"finalizers": if rest.is_empty() { Value::Null } else { json!(rest) }}}));
        }
    }

    /// ttlSecondsAfterFinished: delete a finished Job (and, in the background, its pods).
    fn expire(&self, job: &Value) -> Option<Duration> {
        let ttl = i64_at(job, "/spec/ttlSecondsAfterFinished")?;
        let done = ["completionTime"]
            .iter()
            .filter_map(|f| job.pointer(&format!("/status/{f}")))
            .next()
            .cloned()
            .or_else(|| util::condition(job, "Failed").map(|c| c["lastTransitionTime"].clone()));
        let at = done
            .as_ref()
            .and_then(Value::as_str)
            .and_then(timing::parse_time)?;
        let age = (self.client.clock().now() - at)
            .to_std()
            .unwrap_or_default();
        let ttl = self.timing.s(Duration::from_secs(ttl.max(0) as u64));
        if age >= ttl {
            let _ =
                self.client
                    .delete("batch", "jobs", meta::namespace(job), meta::name(job), None);
            None
        } else {
            Some(ttl - age + Duration::from_millis(5))
        }
    }
}

/// Time since the newest failed pod of the Job finished (zero when none has).
fn last_failure_age(pods: &[Arc<Value>], now: chrono::DateTime<chrono::Utc>) -> Duration {
    pods.iter()
        .filter(|p| meta::str_at(p, "/status/phase") == Some("Failed"))
        .filter_map(|p| {
            let statuses = p
                .pointer("/status/containerStatuses")
                .and_then(Value::as_array)?;
            statuses
                .iter()
                .filter_map(|c| {
                    c.pointer("/state/terminated/finishedAt")
                        .and_then(Value::as_str)
                        .and_then(timing::parse_time)
                })
                .max()
        })
        .max()
        .map(|t| (now - t).to_std().unwrap_or_default())
        .unwrap_or(Duration::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apiserver::ApiServer;

    #[test]
    fn a_suspended_job_deletes_its_active_pods_uncounted_and_says_so() {
        let api = ApiServer::new(100);
        let client = Internal::new(api.clone(), "kube-controller-manager");
        client
            .create(
                "",
                "namespaces",
                "",
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "d"}}),
            )
            .unwrap();
        let job = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
            "spec": {"template": {"spec": {"restartPolicy": "Never",
                "containers": [{"name": "c", "image": "busybox"}]}}}});
        client.create("batch", "jobs", "d", job).unwrap();
        let mut jc = JobController::new(client.clone(), Timing::default());
        let key = ("d".to_string(), "j".to_string());
        jc.reconcile(&key);
        let pods = || client.list("", "pods", Some("d"), &|_| true);
        assert_eq!(pods().len(), 1);
        let status = |c: &Internal| c.get("batch", "jobs", "d", "j").unwrap()["status"].clone();
        assert_eq!(status(&client)["active"], 1);
        client
            .merge(
                "batch",
                "jobs",
                "d",
                "j",
                &json!({"spec": {"suspend": true}}),
            )
            .unwrap();
        jc.reconcile(&key);
        assert!(
            pods().is_empty(),
            "deleted at once: no tracking finalizer holds it"
        );
        let st = status(&client);
        assert!(
            st.get("active").is_none() && st.get("failed").is_none(),
            "{st}"
        );
        assert_eq!(st["conditions"][0]["type"], "Suspended");
        assert_eq!(st["conditions"][0]["status"], "True");
        assert_eq!(st["conditions"][0]["reason"], "JobSuspended");
        // Resumed: the condition goes False and a pod is created again.
        client
            .merge(
                "batch",
                "jobs",
                "d",
                "j",
                &json!({"spec": {"suspend": false}}),
            )
            .unwrap();
        jc.reconcile(&key);
        let st = status(&client);
        assert_eq!(st["conditions"][0]["status"], "False");
        assert_eq!(st["conditions"][0]["reason"], "JobResumed");
        assert_eq!(pods().len(), 1);
    }

    #[test]
    fn pod_failure_backoff_doubles_from_ten_seconds_to_ten_minutes() {
        assert_eq!(failure_backoff(0), Duration::ZERO);
        assert_eq!(failure_backoff(1), Duration::from_secs(10));
        assert_eq!(failure_backoff(3), Duration::from_secs(40));
        assert_eq!(failure_backoff(20), Duration::from_secs(600));
    }
}
