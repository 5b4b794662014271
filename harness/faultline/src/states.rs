//! Pods' and VolumeAttachments' states over a scenario, recorded as they change (one watch of
//! each, started with the scenario's event watch) and written to the artifacts as states.json,
//! where `faultline diff` reads them (`fidelity::collect`). Only with --report-dir.

use crate::fidelity::collect::{attachment_state, pod_state, StateChange};
use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::storage::v1::VolumeAttachment;
use kube::runtime::watcher;
use kube::{Api, Client, Resource, ResourceExt};
use parking_lot::Mutex;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

/// An object: (kind, namespace, name).
type ObjectKey = (String, String, String);

#[derive(Clone)]
pub struct StateRecorder {
    started: Instant,
    changes: Arc<Mutex<Vec<StateChange>>>,
    /// The last state per (kind, namespace, name), so only changes are kept.
    last: Arc<Mutex<HashMap<ObjectKey, String>>>,
}

impl Default for StateRecorder {
    fn default() -> Self {
        StateRecorder::new()
    }
}

impl StateRecorder {
    pub fn new() -> StateRecorder {
        StateRecorder {
            started: Instant::now(),
            changes: Default::default(),
            last: Default::default(),
        }
    }

    /// Watch pods and VolumeAttachments until the tasks are aborted.
    pub fn start(&self, client: Client) -> Vec<tokio::task::JoinHandle<()>> {
        vec![
            self.watch::<Pod>(client.clone(), |v| (pod_state(v), String::new())),
            self.watch::<VolumeAttachment>(client, |v| {
                (
                    attachment_state(v),
                    v.pointer("/spec/nodeName")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                )
            }),
        ]
    }

    fn watch<K>(
        &self,
        client: Client,
        summary: fn(&Value) -> (String, String),
    ) -> tokio::task::JoinHandle<()>
    where
        K: Resource<DynamicType = ()>
            + Clone
            + serde::de::DeserializeOwned
            + serde::Serialize
            + std::fmt::Debug
            + Send
            + Sync
            + 'static,
    {
        let rec = self.clone();
        tokio::spawn(async move {
            let api: Api<K> = Api::all(client);
            let mut stream = watcher(api, watcher::Config::default()).boxed();
            while let Some(ev) = stream.next().await {
                match ev {
                    Ok(watcher::Event::Apply(o)) | Ok(watcher::Event::InitApply(o)) => {
                        let v = serde_json::to_value(&o).unwrap_or_default();
                        let (state, node) = summary(&v);
                        rec.record(K::kind(&()).as_ref(), &o, state, node);
                    }
                    Ok(watcher::Event::Delete(o)) => {
                        let v = serde_json::to_value(&o).unwrap_or_default();
                        let (_, node) = summary(&v);
                        rec.record(K::kind(&()).as_ref(), &o, "deleted".into(), node);
                    }
                    Ok(_) => {}
                    Err(_) => tokio::time::sleep(std::time::Duration::from_millis(200)).await,
                }
            }
        })
    }

    fn record<K: Resource>(&self, kind: &str, o: &K, state: String, node: String) {
        let key = (
            kind.to_string(),
            o.namespace().unwrap_or_default(),
            o.name_any(),
        );
        {
            let mut last = self.last.lock();
            if last.get(&key) == Some(&state) {
                return;
            }
            last.insert(key.clone(), state.clone());
        }
        self.changes.lock().push(StateChange {
            at_ms: self.started.elapsed().as_millis() as u64,
            kind: key.0,
            namespace: key.1,
            name: key.2,
            state,
            node,
        });
    }

    pub fn all(&self) -> Vec<StateChange> {
        self.changes.lock().clone()
    }
}
