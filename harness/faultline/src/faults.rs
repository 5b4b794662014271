//! Injecting and healing faults. Every injected fault that has something to undo is registered
//! as active until healed; `heal_all` (run when a scenario ends, however it ends) heals what is
//! left, in reverse order of injection, and reports each heal in the timeline. On a cluster that
//! outlives the harness, the active faults are also kept in the cluster's fault journal, so a
//! killed run can be healed later (`journal`).

use crate::controller::ControllerProcess;
use crate::journal::Journal;
use crate::k8s::Kube;
use crate::model::ops::{DeletePod, Drain, OutOfServiceTaint, OUT_OF_SERVICE_TAINT};
use crate::model::{Operation, RunnerOperation};
use crate::provider::NodeOps;
use crate::timeline::{Anchors, EntryKind, Timeline};
use anyhow::{anyhow, bail, Context, Result};
use faultline_faults::{Inverse, Lifetime};
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{DeleteParams, EvictParams, ListParams, Patch, PatchParams};
use kube::Api;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FaultRecord {
    pub name: String,
    /// `staleDeviceMount{node: worker-04, volume: {deletedPV: pvc-81b676e6}}`.
    pub operation: String,
    pub injected_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub healed_ms: Option<u64>,
    /// schedule (`heal: {after}`), atStep, cleanup (end of scenario), or none (nothing to undo).
    pub healed_by: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub heal_error: Option<String>,
}

struct Active {
    name: String,
    op: Operation,
}

pub struct FaultManager {
    node_ops: Arc<dyn NodeOps>,
    kube: Kube,
    controller: Option<Arc<ControllerProcess>>,
    timeline: Timeline,
    anchors: Anchors,
    op_timeout: Duration,
    active: Mutex<Vec<Active>>,
    records: Mutex<Vec<FaultRecord>>,
    journal: Option<Arc<Journal>>,
}

impl FaultManager {
    pub fn new(
        node_ops: Arc<dyn NodeOps>,
        kube: Kube,
        controller: Option<Arc<ControllerProcess>>,
        timeline: Timeline,
        anchors: Anchors,
        op_timeout: Duration,
    ) -> FaultManager {
        FaultManager {
            node_ops,
            kube,
            controller,
            timeline,
            anchors,
            op_timeout,
            active: Mutex::new(vec![]),
            records: Mutex::new(vec![]),
            journal: None,
        }
    }

    /// Keep the active faults in this journal too (clusters that outlive the harness).
    pub fn with_journal(mut self, journal: Arc<Journal>) -> FaultManager {
        self.journal = Some(journal);
        self
    }

    pub fn journal(&self) -> Option<Arc<Journal>> {
        self.journal.clone()
    }

    /// The anchors this manager sets (`<fault>.healed`).
    pub fn anchors(&self) -> Anchors {
        self.anchors.clone()
    }

    /// The faults injected and not healed yet: `name: operation`.
    pub fn active_summaries(&self) -> Vec<String> {
        self.active
            .lock()
            .iter()
            .map(|a| format!("{}: {}", a.name, a.op.summary()))
            .collect()
    }

    pub fn records(&self) -> Vec<FaultRecord> {
        self.records.lock().clone()
    }

    pub fn active_names(&self) -> Vec<String> {
        self.active.lock().iter().map(|a| a.name.clone()).collect()
    }

    /// Inject a fault and register it for healing. The registration happens before the
    /// operation runs, so a fault whose injection fails or panics half-way is still healed.
    pub async fn inject(&self, name: &str, op: &Operation) -> Result<()> {
        let undo = op.lifetime() == Lifetime::Held;
        if let (true, Some(j)) = (undo, &self.journal) {
            // Journaled before injection: a fault the harness cannot promise to heal after a
            // crash is not injected at all.
            if let Err(e) = j.add(name, op).await {
                self.timeline.record(
                    EntryKind::Error,
                    format!("fault {name} not injected: {}", crate::k8s::explain(&e)),
                );
                return Err(e);
            }
        }
        if undo {
            self.active.lock().push(Active {
                name: name.to_string(),
                op: op.clone(),
            });
        }
        let at = Instant::now();
        let r = self.perform(op).await;
        let summary = op.summary();
        match &r {
            Ok(()) => self.timeline.record(
                EntryKind::Fault,
                format!("fault {name} injected: {summary}"),
            ),
            Err(e) => self.timeline.record(
                EntryKind::Error,
                format!("fault {name} failed to inject: {}", crate::k8s::explain(e)),
            ),
        }
        self.records.lock().push(FaultRecord {
            name: name.to_string(),
            operation: summary,
            injected_ms: self.timeline.offset(at).as_millis() as u64,
            healed_ms: None,
            healed_by: if undo { String::new() } else { "none".into() },
            heal_error: None,
        });
        r
    }

    /// A remediation: the same operations, nothing registered to undo.
    pub async fn remediate(&self, op: &Operation) -> Result<()> {
        let r = self.perform(op).await;
        match &r {
            Ok(()) => self.timeline.record(
                EntryKind::Remediate,
                format!("remediation: {}", op.summary()),
            ),
            Err(e) => self.timeline.record(
                EntryKind::Error,
                format!(
                    "remediation {} failed: {}",
                    op.summary(),
                    crate::k8s::explain(e)
                ),
            ),
        }
        r
    }

    /// Heal one fault by name, if still active.
    pub async fn heal(&self, name: &str, by: &str) -> Result<()> {
        let found = {
            let mut a = self.active.lock();
            a.iter().position(|x| x.name == name).map(|i| a.remove(i))
        };
        let Some(active) = found else { return Ok(()) };
        self.heal_one(active, by).await
    }

    /// `<fault>.healed` is the moment the heal began: what follows (a restarted controller's
    /// first lines, the recovery) is measured from there, including the heal's own duration.
    async fn heal_one(&self, active: Active, by: &str) -> Result<()> {
        let began = Instant::now();
        let r = match tokio::time::timeout(self.op_timeout, self.undo(&active.op)).await {
            Ok(r) => r,
            Err(_) => Err(anyhow!("timed out after {:?}", self.op_timeout)),
        };
        let now = Instant::now();
        let ms = self.timeline.offset(now).as_millis() as u64;
        if let (Ok(()), Some(j)) = (&r, &self.journal) {
            if let Err(e) = j.remove(&active.name).await {
                self.timeline.record(
                    EntryKind::Error,
                    format!(
                        "fault {} healed, but the journal still lists it: {}",
                        active.name,
                        crate::k8s::explain(&e)
                    ),
                );
            }
        }
        match &r {
            Ok(()) => self.timeline.record(
                EntryKind::Heal,
                format!("fault {} healed ({by})", active.name),
            ),
            Err(e) => self.timeline.record(
                EntryKind::Error,
                format!(
                    "fault {} failed to heal: {}",
                    active.name,
                    crate::k8s::explain(e)
                ),
            ),
        }
        self.anchors.set(&format!("{}.healed", active.name), began);
        if let Some(rec) = self
            .records
            .lock()
            .iter_mut()
            .rev()
            .find(|r| r.name == active.name)
        {
            rec.healed_ms = Some(ms);
            rec.healed_by = by.to_string();
            rec.heal_error = r.as_ref().err().map(crate::k8s::explain);
        }
        r
    }

    /// Heal everything still active, newest first; returns the errors.
    pub async fn heal_all(&self) -> Vec<String> {
        let mut errors = vec![];
        loop {
            let next = self.active.lock().pop();
            let Some(a) = next else { break };
            let name = a.name.clone();
            if let Err(e) = self.heal_one(a, "cleanup").await {
                errors.push(format!("fault {name}: {}", crate::k8s::explain(&e)));
            }
        }
        errors
    }

    async fn perform(&self, op: &Operation) -> Result<()> {
        let fut = async {
            match op {
                Operation::Node(n) => self.node_ops.apply(n).await,
                Operation::Runner(r) => self.runner_apply(r).await,
            }
        };
        match op {
            // A drain bounds its own waiting.
            Operation::Runner(RunnerOperation::Drain(_)) => fut.await,
            _ => tokio::time::timeout(self.op_timeout, fut)
                .await
                .map_err(|_| anyhow!("timed out after {:?}", self.op_timeout))?,
        }
    }

    /// Undo an operation (what healing a fault does), without the bookkeeping, as the
    /// catalogue's inverse says. Node operations go to the provider, which follows it too.
    pub async fn undo(&self, op: &Operation) -> Result<()> {
        let r = match op {
            Operation::Node(n) => return self.node_ops.heal(n).await,
            Operation::Runner(r) => r,
        };
        match r.inverse() {
            None => Ok(()),
            Some(Inverse::Apply(by)) => self.runner_apply(&by).await,
            Some(Inverse::Revert) => match runner_revert(r) {
                Some(RunnerRevert::StartController) => match &self.controller {
                    Some(c) => c.start(self.op_timeout).await,
                    None => Ok(()),
                },
                Some(RunnerRevert::RemoveTaint(t)) => self.out_of_service(t, false).await,
                None => bail!("`{}`: the runner has no revert of it", r.key()),
            },
        }
    }

    async fn runner_apply(&self, op: &RunnerOperation) -> Result<()> {
        match op {
            RunnerOperation::Cordon(t) => self.set_unschedulable(&t.node, true).await,
            RunnerOperation::Uncordon(t) => self.set_unschedulable(&t.node, false).await,
            RunnerOperation::Drain(d) => self.drain(d).await,
            RunnerOperation::OutOfServiceTaint(t) => self.out_of_service(t, true).await,
            RunnerOperation::DeletePod(d) => self.delete_pods(d).await.map(|_| ()),
            RunnerOperation::ControllerCrash(c) => match &self.controller {
                Some(p) => p.crash(c.signal.as_deref()).await,
                None => bail!("controllerCrash: the scenario runs no controller (spec.controller)"),
            },
        }
    }

    async fn set_unschedulable(&self, node: &str, value: bool) -> Result<()> {
        let api: Api<Node> = Api::all(self.kube.client.clone());
        let patch = serde_json::json!({"spec": {"unschedulable": if value { serde_json::Value::Bool(true) } else { serde_json::Value::Null }}});
        api.patch(node, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .with_context(|| {
                format!(
                    "{} node {node}",
                    if value { "cordoning" } else { "uncordoning" }
                )
            })?;
        Ok(())
    }

    /// Add (`on`) or remove the out-of-service taint with this effect, as `kubectl taint nodes
    /// <node> node.kubernetes.io/out-of-service=<value>:<effect>[-]` does: a read, then an
    /// update of the whole taint list, retried on a conflict (the node lifecycle controller
    /// writes the same list). Idempotent both ways.
    async fn out_of_service(&self, t: &OutOfServiceTaint, on: bool) -> Result<()> {
        let api: Api<Node> = Api::all(self.kube.client.clone());
        let what = || {
            format!(
                "{} the {OUT_OF_SERVICE_TAINT} taint {} node {}",
                if on { "adding" } else { "removing" },
                if on { "to" } else { "from" },
                t.node
            )
        };
        for _ in 0..5 {
            let node = api.get(&t.node).await.with_context(what)?;
            let taints = node
                .spec
                .as_ref()
                .and_then(|s| s.taints.clone())
                .unwrap_or_default();
            let effect = t.effect.as_str();
            let mut new: Vec<_> = taints
                .iter()
                .filter(|x| !(x.key == OUT_OF_SERVICE_TAINT && x.effect == effect))
                .cloned()
                .collect();
            if on {
                new.push(k8s_openapi::api::core::v1::Taint {
                    key: OUT_OF_SERVICE_TAINT.into(),
                    value: Some(t.value.clone()),
                    effect: effect.into(),
                    time_added: None,
                });
            }
            if new == taints {
                return Ok(());
            }
            // The resourceVersion makes it a compare-and-swap of the whole list.
            let patch = serde_json::json!({
                "metadata": {"resourceVersion": node.metadata.resource_version},
                "spec": {"taints": new},
            });
            match api
                .patch(&t.node, &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                Ok(_) => return Ok(()),
                Err(kube::Error::Api(s)) if s.code == 409 => continue,
                Err(e) => return Err(e).with_context(what),
            }
        }
        bail!("{}: the node kept changing (5 conflicts)", what())
    }

    async fn drain(&self, d: &Drain) -> Result<()> {
        self.set_unschedulable(&d.node, true).await?;
        let pods: Api<Pod> = Api::all(self.kube.client.clone());
        let lp = ListParams::default().fields(&format!("spec.nodeName={}", d.node));
        let list = pods.list(&lp).await?;
        let timeout = d
            .timeout
            .map(|t| t.get())
            .unwrap_or(Duration::from_secs(30));
        let mut waits = vec![];
        for p in list.items {
            let daemon = p
                .metadata
                .owner_references
                .as_ref()
                .is_some_and(|o| o.iter().any(|r| r.kind == "DaemonSet"));
            if daemon {
                continue;
            }
            let ns = p.metadata.namespace.clone().unwrap_or_default();
            let name = p.metadata.name.clone().unwrap_or_default();
            let uid = p.metadata.uid.clone().unwrap_or_default();
            let api: Api<Pod> = Api::namespaced(self.kube.client.clone(), &ns);
            let r = if d.force {
                api.delete(
                    &name,
                    &DeleteParams {
                        grace_period_seconds: Some(0),
                        ..Default::default()
                    },
                )
                .await
                .map(|_| ())
            } else {
                api.evict(&name, &EvictParams::default()).await.map(|_| ())
            };
            if let Err(e) = r {
                if !matches!(&e, kube::Error::Api(s) if s.code == 404) {
                    return Err(e).with_context(|| format!("draining {}: pod {ns}/{name}", d.node));
                }
            }
            waits.push(async move {
                let cond = kube::runtime::wait::conditions::is_deleted(&uid);
                kube::runtime::wait::await_condition(api, &name, cond)
                    .await
                    .map(|_| ())
                    .map_err(|e| anyhow!("{ns}/{name}: {e}"))
            });
        }
        tokio::time::timeout(timeout, futures::future::try_join_all(waits))
            .await
            .map_err(|_| {
                anyhow!(
                    "drain {}: pods still terminating after {:?}",
                    d.node,
                    timeout
                )
            })??;
        Ok(())
    }

    async fn delete_pods(&self, d: &DeletePod) -> Result<usize> {
        let ns = d.namespace.clone().unwrap_or_else(|| "default".into());
        let api: Api<Pod> = Api::namespaced(self.kube.client.clone(), &ns);
        let dp = DeleteParams {
            grace_period_seconds: if d.force { Some(0) } else { None },
            ..Default::default()
        };
        let names: Vec<String> = match &d.name {
            Some(n) => vec![n.clone()],
            None => {
                let mut lp = ListParams::default();
                if let Some(s) = &d.selector {
                    lp = lp.labels(s);
                }
                if let Some(n) = &d.node {
                    lp = lp.fields(&format!("spec.nodeName={n}"));
                }
                api.list(&lp)
                    .await?
                    .items
                    .into_iter()
                    .filter_map(|p| p.metadata.name)
                    .collect()
            }
        };
        for n in &names {
            api.delete(n, &dp)
                .await
                .with_context(|| format!("deleting pod {ns}/{n}"))?;
        }
        Ok(names.len())
    }
}

/// How the runner reverts one of its own operations (`Inverse::Revert`).
#[derive(Clone, Copy, Debug, PartialEq)]
enum RunnerRevert<'a> {
    /// After `controllerCrash`.
    StartController,
    /// After `outOfServiceTaint`: the taint it added.
    RemoveTaint(&'a OutOfServiceTaint),
}

fn runner_revert(op: &RunnerOperation) -> Option<RunnerRevert<'_>> {
    match op {
        RunnerOperation::ControllerCrash(_) => Some(RunnerRevert::StartController),
        RunnerOperation::OutOfServiceTaint(t) => Some(RunnerRevert::RemoveTaint(t)),
        RunnerOperation::Cordon(_)
        | RunnerOperation::Uncordon(_)
        | RunnerOperation::Drain(_)
        | RunnerOperation::DeletePod(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Conformance of the runner's operations: every one the catalogue says the runner reverts
    /// itself has a revert here, and nothing else does.
    #[test]
    fn the_runner_reverts_what_the_catalogue_says_it_reverts() {
        for op in RunnerOperation::examples("w") {
            assert_eq!(
                matches!(op.inverse(), Some(Inverse::Revert)),
                runner_revert(&op).is_some(),
                "{}",
                op.key()
            );
        }
    }
}
