//! The workload controllers through kube-rs typed clients, as a controller's own tests would
//! use them: Jobs to completion and to their backoff limit, a Deployment rollout, and a
//! StatefulSet whose volumeClaimTemplates get PVCs bound by the simulated Longhorn.

mod common;

use common::{events_for, eventually, TestCluster};
use faultline_sim::{SimOptions, Timing};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, PostParams};
use kube::ResourceExt;
use serde_json::json;

const SCALE: f64 = 0.02;

async fn full_cluster(workers: usize) -> (TestCluster, kube::Client) {
    let c = TestCluster::start_with(SimOptions::full(workers, Timing::scaled(SCALE))).await;
    let client = c.client().await;
    (c, client)
}

fn condition<'a>(job: &'a Job, t: &str) -> Option<&'a k8s_openapi::api::batch::v1::JobCondition> {
    job.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == t && c.status == "True")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_runs_to_completion_with_parallel_pods() {
    let (_c, client) = full_cluster(2).await;
    let jobs: Api<Job> = Api::namespaced(client.clone(), "default");
    let job: Job = serde_json::from_value(json!({
        "metadata": {"name": "batch"},
        "spec": {"completions": 3, "parallelism": 2, "template": {
            "metadata": {"annotations": {"sim.faultline.dev/exit-after": "2s"}},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "work", "image": "busybox:1.36"}]}}}
    }))
    .unwrap();
    jobs.create(&PostParams::default(), &job).await.unwrap();
    let done = eventually(60, "Job complete", || async {
        let j = jobs.get("batch").await.ok()?;
        condition(&j, "Complete").is_some().then_some(j)
    })
    .await;
    let st = done.status.clone().unwrap();
    assert_eq!(st.succeeded, Some(3));
    assert_eq!(st.failed, None);
    assert!(st.completion_time.is_some() && st.start_time.is_some());
    let types: Vec<&str> = st
        .conditions
        .as_ref()
        .unwrap()
        .iter()
        .map(|c| c.type_.as_str())
        .collect();
    assert_eq!(types, ["SuccessCriteriaMet", "Complete"]);
    let complete = condition(&done, "Complete").unwrap();
    assert_eq!(complete.reason.as_deref(), Some("CompletionsReached"));
    assert_eq!(
        complete.message.as_deref(),
        Some("Reached expected number of succeeded pods")
    );
    // Pods carry the job labels, and their tracking finalizers are gone once counted.
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let mine = pods
        .list(&ListParams::default().labels("batch.kubernetes.io/job-name=batch"))
        .await
        .unwrap();
    assert_eq!(mine.items.len(), 3);
    assert!(
        mine.items
            .iter()
            .all(|p| p.metadata.finalizers.as_ref().is_none_or(|f| f.is_empty())),
        "tracking finalizers released"
    );
    let events = events_for(&client, "batch").await;
    assert!(
        events
            .iter()
            .any(|(r, m)| r == "Completed" && m == "Job completed"),
        "{events:?}"
    );
    assert_eq!(
        events
            .iter()
            .filter(|(r, _)| r == "SuccessfulCreate")
            .count(),
        3,
        "{events:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_pods_are_retried_with_backoff_until_the_limit() {
    let (_c, client) = full_cluster(1).await;
    let jobs: Api<Job> = Api::namespaced(client.clone(), "default");
    let job: Job = serde_json::from_value(json!({
        "metadata": {"name": "flaky"},
        "spec": {"backoffLimit": 2, "template": {
            "metadata": {"annotations": {"sim.faultline.dev/crash-after": "1s"}},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "work", "image": "busybox:1.36"}]}}}
    }))
    .unwrap();
    jobs.create(&PostParams::default(), &job).await.unwrap();
    let failed = eventually(60, "Job failed", || async {
        let j = jobs.get("flaky").await.ok()?;
        condition(&j, "Failed").is_some().then_some(j)
    })
    .await;
    let st = failed.status.clone().unwrap();
    // backoffLimit 2: the third failure ends it.
    assert_eq!(st.failed, Some(3));
    let types: Vec<&str> = st
        .conditions
        .as_ref()
        .unwrap()
        .iter()
        .map(|c| c.type_.as_str())
        .collect();
    assert_eq!(types, ["FailureTarget", "Failed"]);
    let cond = condition(&failed, "Failed").unwrap();
    assert_eq!(cond.reason.as_deref(), Some("BackoffLimitExceeded"));
    assert_eq!(
        cond.message.as_deref(),
        Some("Job has reached the specified backoff limit")
    );
    // Three pods, created one after another: each replacement waited for the failure backoff.
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let mut mine = pods
        .list(&ListParams::default().labels("job-name=flaky"))
        .await
        .unwrap()
        .items;
    assert_eq!(mine.len(), 3);
    mine.sort_by_key(|p| p.metadata.creation_timestamp.clone().map(|t| t.0));
    assert!(mine
        .iter()
        .all(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Failed")));
    let events = events_for(&client, "flaky").await;
    assert!(
        events.iter().any(|(r, m)| r == "BackoffLimitExceeded"
            && m == "Job has reached the specified backoff limit"),
        "{events:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_statefulset_starts_in_order_with_bound_longhorn_claims() {
    use k8s_openapi::api::apps::v1::{ControllerRevision, StatefulSet};
    use k8s_openapi::api::core::v1::PersistentVolumeClaim;
    let (_c, client) = full_cluster(2).await;
    let sets: Api<StatefulSet> = Api::namespaced(client.clone(), "default");
    let set: StatefulSet = serde_json::from_value(json!({
        "metadata": {"name": "db"},
        "spec": {"replicas": 2, "serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
            "template": {"metadata": {"labels": {"app": "db"}}, "spec": {"containers": [{"name": "db", "image": "postgres:17", "volumeMounts": [{"name": "data", "mountPath": "/data"}]}]}},
            "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "longhorn", "resources": {"requests": {"storage": "1Gi"}}}}]}
    }))
    .unwrap();
    sets.create(&PostParams::default(), &set).await.unwrap();
    let ready = eventually(90, "StatefulSet ready", || async {
        let s = sets.get("db").await.ok()?;
        (s.status.as_ref()?.ready_replicas == Some(2)).then_some(s)
    })
    .await;
    let st = ready.status.unwrap();
    assert_eq!(st.current_revision, st.update_revision);
    assert!(st.update_revision.as_deref().unwrap().starts_with("db-"));
    let pvcs: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), "default");
    for claim in ["data-db-0", "data-db-1"] {
        let pvc = pvcs.get(claim).await.unwrap();
        assert_eq!(
            pvc.status.and_then(|s| s.phase).as_deref(),
            Some("Bound"),
            "{claim} bound by the simulated Longhorn"
        );
        assert!(pvc.spec.unwrap().volume_name.unwrap().starts_with("pvc-"));
    }
    // OrderedReady: db-1 was created only after db-0 was Running and Ready.
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let p0 = pods.get("db-0").await.unwrap();
    let p1 = pods.get("db-1").await.unwrap();
    let ready0 = p0
        .status
        .as_ref()
        .unwrap()
        .conditions
        .as_ref()
        .unwrap()
        .iter()
        .find(|c| c.type_ == "Ready")
        .unwrap()
        .last_transition_time
        .clone()
        .unwrap()
        .0;
    assert!(
        p1.metadata.creation_timestamp.clone().unwrap().0 >= ready0,
        "db-1 created before db-0 was ready"
    );
    assert_eq!(p1.spec.as_ref().unwrap().hostname.as_deref(), Some("db-1"));
    assert_eq!(
        p1.labels()
            .get("apps.kubernetes.io/pod-index")
            .map(String::as_str),
        Some("1")
    );
    let revs: Api<ControllerRevision> = Api::namespaced(client.clone(), "default");
    assert_eq!(
        revs.list(&ListParams::default().labels("app=db"))
            .await
            .unwrap()
            .items
            .len(),
        1
    );
    let events = events_for(&client, "db").await;
    assert!(
        events.iter().any(|(r, m)| r == "SuccessfulCreate"
            && m == "create Claim data-db-0 Pod db-0 in StatefulSet db success"),
        "{events:?}"
    );
    assert!(
        events
            .iter()
            .any(|(r, m)| r == "SuccessfulCreate"
                && m == "create Pod db-1 in StatefulSet db successful"),
        "{events:?}"
    );

    // A template change rolls the pods from the highest ordinal down, keeping their claims.
    let patch = json!({"spec": {"template": {"spec": {"containers": [{"name": "db", "image": "postgres:18"}]}}}});
    sets.patch(
        "db",
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Strategic(&patch),
    )
    .await
    .unwrap();
    eventually(90, "rolled to the new revision", || async {
        // Only a status that has observed the patch says anything about the new revision.
        let set = sets.get("db").await.ok()?;
        let s = set.status?;
        (s.observed_generation == set.metadata.generation
            && s.updated_replicas == Some(2)
            && s.ready_replicas == Some(2)
            && s.current_revision == s.update_revision)
            .then_some(())
    })
    .await;
    let p0 = pods.get("db-0").await.unwrap();
    assert_eq!(
        p0.spec.unwrap().containers[0].image.as_deref(),
        Some("postgres:18")
    );
    assert_eq!(
        pvcs.list(&ListParams::default().labels("app=db"))
            .await
            .unwrap()
            .items
            .len(),
        2,
        "claims are kept across the update"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deployment_rolls_out_and_its_service_gets_endpoints() {
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::{Endpoints, Service};
    use k8s_openapi::api::discovery::v1::EndpointSlice;
    let (_c, client) = full_cluster(2).await;
    let deploys: Api<Deployment> = Api::namespaced(client.clone(), "default");
    let d: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "api"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "api"}},
            "template": {"metadata": {"labels": {"app": "api"}}, "spec": {"containers": [{"name": "api", "image": "nginx:1.27", "ports": [{"name": "http", "containerPort": 8080}]}]}}}
    }))
    .unwrap();
    deploys.create(&PostParams::default(), &d).await.unwrap();
    let svcs: Api<Service> = Api::namespaced(client.clone(), "default");
    let svc: Service = serde_json::from_value(json!({"metadata": {"name": "api"}, "spec": {"selector": {"app": "api"}, "ports": [{"name": "web", "port": 80, "targetPort": "http"}]}})).unwrap();
    svcs.create(&PostParams::default(), &svc).await.unwrap();
    let done = eventually(60, "Deployment available", || async {
        let d = deploys.get("api").await.ok()?;
        let st = d.status.clone()?;
        (st.available_replicas == Some(2)
            && st.updated_replicas == Some(2)
            && st.observed_generation == d.metadata.generation)
            .then_some(d)
    })
    .await;
    let conds = done.status.unwrap().conditions.unwrap();
    let avail = conds
        .iter()
        .find(|c| c.type_.as_deref() == Some("Available"))
        .unwrap();
    assert_eq!(
        (
            avail.status.as_deref(),
            avail.reason.as_deref(),
            avail.message.as_deref()
        ),
        (
            Some("True"),
            Some("MinimumReplicasAvailable"),
            Some("Deployment has minimum availability.")
        )
    );
    let slices: Api<EndpointSlice> = Api::namespaced(client.clone(), "default");
    let slice = eventually(30, "two ready endpoints", || async {
        let l = slices
            .list(&ListParams::default().labels("kubernetes.io/service-name=api"))
            .await
            .ok()?;
        let s = l.items.into_iter().next()?;
        (s.endpoints
            .iter()
            .flatten()
            .filter(|e| e.conditions.as_ref().and_then(|c| c.ready) == Some(true))
            .count()
            == 2)
            .then_some(s)
    })
    .await;
    assert_eq!(slice.address_type, "IPv4");
    let port = &slice.ports.as_ref().unwrap()[0];
    assert_eq!(
        (port.name.as_deref(), port.port),
        (Some("web"), Some(8080)),
        "named targetPort resolved from the container"
    );
    assert_eq!(
        slice
            .labels()
            .get("endpointslice.kubernetes.io/managed-by")
            .map(String::as_str),
        Some("endpointslice-controller.k8s.io")
    );
    // The Endpoints controller is a loop of its own: it may write the second address a moment
    // after the EndpointSlice controller did (a loaded CI machine saw one of two).
    let eps: Api<Endpoints> = Api::namespaced(client.clone(), "default");
    eventually(30, "two addresses in the Endpoints", || async {
        let ep = eps.get("api").await.ok()?;
        let addresses = ep.subsets?.first()?.addresses.as_ref()?.len();
        (addresses == 2).then_some(())
    })
    .await;
}

/// A CronJob schedules on the cluster's clock, a calendar that `timeScale` does not speed up
/// (a schedule is no duration): the clock is set two seconds before a minute, as upstream's tests
/// set a fake clock, so `* * * * *` fires at once. Three older complete Jobs of the CronJob
/// make its history exceed the limit of two.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cronjob_runs_on_the_cluster_clock_and_keeps_its_history_limit() {
    use k8s_openapi::api::batch::v1::CronJob;
    let minute = (chrono::Utc::now().timestamp() / 60 + 1) * 60;
    let timing = Timing {
        clock: faultline_sim::timing::SimClock::starting_at(
            chrono::DateTime::from_timestamp(minute - 2, 0).unwrap(),
        ),
        ..Timing::scaled(SCALE)
    };
    let c = TestCluster::start_with(SimOptions::full(1, timing)).await;
    let client = c.client().await;
    let cjs: Api<CronJob> = Api::namespaced(client.clone(), "default");
    let template = json!({"spec": {"template": {
        "metadata": {"annotations": {"sim.faultline.dev/exit-after": "1s"}},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "tick", "image": "busybox:1.36"}]}}}});
    let cj: CronJob = serde_json::from_value(json!({
        "metadata": {"name": "tick"},
        "spec": {"schedule": "* * * * *", "successfulJobsHistoryLimit": 2, "jobTemplate": template}
    }))
    .unwrap();
    let cj = cjs.create(&PostParams::default(), &cj).await.unwrap();
    let jobs: Api<Job> = Api::namespaced(client.clone(), "default");
    for i in 1..=3 {
        let old: Job = serde_json::from_value(json!({
            "metadata": {"name": format!("tick-old-{i}"), "ownerReferences": [{
                "apiVersion": "batch/v1", "kind": "CronJob", "name": "tick",
                "uid": cj.metadata.uid.clone().unwrap(), "controller": true}]},
            "spec": template["spec"].clone()
        }))
        .unwrap();
        jobs.create(&PostParams::default(), &old).await.unwrap();
    }
    eventually(
        30,
        "a job scheduled at the minute and the history trimmed",
        || async {
            let events = events_for(&client, "tick").await;
            let created = events
                .iter()
                .filter(|(r, _)| r == "SuccessfulCreate")
                .count();
            let deleted = events
                .iter()
                .filter(|(r, m)| r == "SuccessfulDelete" && m.starts_with("Deleted job tick-old-"))
                .count();
            (created >= 1 && deleted >= 2).then_some(())
        },
    )
    .await;
    let cj = cjs.get("tick").await.unwrap();
    let st = cj.status.unwrap();
    assert_eq!(
        st.last_schedule_time.map(|t| t.0.as_second()),
        Some(minute),
        "scheduled at the minute of the cluster's clock"
    );
    let cj_created = cj.metadata.creation_timestamp.unwrap().0.as_second();
    assert!(
        (minute - 3..minute).contains(&cj_created),
        "the CronJob was created on the same clock, just before the minute: {cj_created}"
    );
    let left = eventually(
        20,
        "at most successfulJobsHistoryLimit (2) complete jobs",
        || async {
            let left = jobs.list(&ListParams::default()).await.ok()?.items;
            (left
                .iter()
                .filter(|j| {
                    condition(j, "Complete").is_some() && j.metadata.deletion_timestamp.is_none()
                })
                .count()
                <= 2)
                .then_some(left)
        },
    )
    .await;
    let scheduled: Vec<&Job> = left
        .iter()
        .filter(|j| {
            j.annotations()
                .contains_key("batch.kubernetes.io/cronjob-scheduled-timestamp")
        })
        .collect();
    assert!(!scheduled.is_empty(), "the scheduled job is kept");
    for j in scheduled {
        let name = j.metadata.name.clone().unwrap();
        let minutes: i64 = name.strip_prefix("tick-").unwrap().parse().unwrap();
        let at = j
            .annotations()
            .get("batch.kubernetes.io/cronjob-scheduled-timestamp")
            .unwrap();
        assert_eq!(
            chrono::DateTime::parse_from_rfc3339(at)
                .unwrap()
                .timestamp(),
            minute,
            "{name}"
        );
        assert_eq!(minutes, minute / 60, "{name}");
    }
    eventually(20, "the scheduled job seen complete", || async {
        let st = cjs.get("tick").await.ok()?.status?;
        st.last_successful_time.map(|_| ())
    })
    .await;
    let events = events_for(&client, "tick").await;
    assert!(
        events
            .iter()
            .any(|(r, m)| r == "SawCompletedJob" && m.ends_with(", status: Complete")),
        "{events:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_daemonset_follows_node_labels_and_replaces_a_deleted_pod() {
    use k8s_openapi::api::apps::v1::DaemonSet;
    use k8s_openapi::api::core::v1::Node;
    use kube::api::{DeleteParams, Patch, PatchParams};
    let (_c, client) = full_cluster(3).await;
    let nodes: Api<Node> = Api::all(client.clone());
    nodes
        .patch(
            "worker-01",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"agent": "yes"}}})),
        )
        .await
        .unwrap();
    let dss: Api<DaemonSet> = Api::namespaced(client.clone(), "default");
    let ds: DaemonSet = serde_json::from_value(json!({
        "metadata": {"name": "agent"},
        "spec": {"selector": {"matchLabels": {"app": "agent"}}, "template": {
            "metadata": {"labels": {"app": "agent"}},
            "spec": {"nodeSelector": {"agent": "yes"}, "containers": [{"name": "a", "image": "busybox:1.36"}]}}}
    }))
    .unwrap();
    dss.create(&PostParams::default(), &ds).await.unwrap();
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let on_nodes = || async {
        let mut ns: Vec<String> = pods
            .list(&ListParams::default().labels("app=agent"))
            .await
            .unwrap()
            .items
            .iter()
            .filter(|p| p.metadata.deletion_timestamp.is_none())
            .map(|p| {
                p.spec
                    .as_ref()
                    .unwrap()
                    .node_name
                    .clone()
                    .unwrap_or_default()
            })
            .collect();
        ns.sort();
        ns
    };
    let counts = |d: &DaemonSet| {
        d.status.as_ref().map(|s| {
            (
                s.desired_number_scheduled,
                s.current_number_scheduled,
                s.number_ready,
            )
        })
    };
    eventually(60, "one ready daemon pod on the labelled node", || async {
        let d = dss.get("agent").await.ok()?;
        (on_nodes().await == ["worker-01"] && counts(&d) == Some((1, 1, 1))).then_some(())
    })
    .await;
    // A second node gets the label: a pod follows it, and the status counts it once Ready.
    nodes
        .patch(
            "worker-02",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"agent": "yes"}}})),
        )
        .await
        .unwrap();
    eventually(60, "daemon pods on both labelled nodes", || async {
        let d = dss.get("agent").await.ok()?;
        (on_nodes().await == ["worker-01", "worker-02"] && counts(&d) == Some((2, 2, 2)))
            .then_some(())
    })
    .await;
    // A deleted daemon pod is replaced on its node.
    let first = pods
        .list(&ListParams::default().labels("app=agent"))
        .await
        .unwrap()
        .items
        .into_iter()
        .find(|p| p.spec.as_ref().unwrap().node_name.as_deref() == Some("worker-01"))
        .unwrap();
    pods.delete(
        &first.name_any(),
        &DeleteParams {
            grace_period_seconds: Some(0),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    eventually(60, "a new daemon pod on worker-01", || async {
        let now = pods
            .list(&ListParams::default().labels("app=agent"))
            .await
            .ok()?;
        now.items
            .iter()
            .any(|p| {
                p.spec.as_ref().unwrap().node_name.as_deref() == Some("worker-01")
                    && p.name_any() != first.name_any()
            })
            .then_some(())
    })
    .await;
}
