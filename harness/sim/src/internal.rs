//! An in-process client for the simulated control plane and nodes: the same API semantics as
//! HTTP clients get (admission, status split, managed fields, watch events), without HTTP.

use crate::apiserver::resources::{self, ResourceType};
use crate::apiserver::status::{ApiError, ApiResult};
use crate::apiserver::store::{DeleteOptions, DeleteOutcome};
use crate::apiserver::{ApiServer, PatchType, WriteOptions};
use serde_json::Value;
use std::sync::Arc;

/// Whether a component reaches the API server right now (a node's network partition cuts its
/// kubelet off): while it answers false, every write fails as a request that never arrived.
pub type Reachability = Arc<dyn Fn() -> bool + Send + Sync>;

#[derive(Clone)]
pub struct Internal {
    pub api: Arc<ApiServer>,
    /// Field manager and user-agent name of the component, e.g. "kubelet".
    pub manager: String,
    /// The component's network path to the API server; `None`: always reachable.
    reachable: Option<Reachability>,
    /// The component writes only bodies it built from the API's own types (a kubelet, the
    /// scheduler, the controllers): their unknown-field check can find nothing and its warnings
    /// would be dropped, so its typed round trip is skipped (`fieldValidation=Ignore`).
    well_typed: bool,
}

impl Internal {
    /// The cluster's one clock (the API server's).
    pub fn clock(&self) -> &crate::timing::SimClock {
        self.api.clock()
    }

    pub fn new(api: Arc<ApiServer>, manager: &str) -> Self {
        Internal {
            api,
            manager: manager.to_string(),
            reachable: None,
            well_typed: false,
        }
    }

    /// A client of one of the sim's own components (see `well_typed`): at 100,000 pods the
    /// check was 10 % of the CPU, most of it the kubelets' status writes and Events.
    pub fn with_well_typed_bodies(mut self) -> Self {
        self.well_typed = true;
        self
    }

    /// The same client behind a network path that `reachable` describes: writes fail while it
    /// answers false (reads are what the component's informer caches still hold).
    pub fn with_reachability(mut self, reachable: Reachability) -> Self {
        self.reachable = Some(reachable);
        self
    }

    /// A write's first step: the request has to reach the API server.
    fn connect(&self) -> ApiResult<()> {
        match &self.reachable {
            Some(reachable) if !reachable() => Err(ApiError::service_unavailable(
                "dial tcp 172.18.0.1:6443: connect: no route to host",
            )),
            _ => Ok(()),
        }
    }

    pub fn rt(&self, group: &str, plural: &str) -> ApiResult<Arc<ResourceType>> {
        let key = resources::storage_key(group, plural);
        self.api
            .registry
            .storage_type(&key)
            .ok_or_else(|| ApiError::not_found(group, plural, ""))
    }

    fn opts(&self) -> WriteOptions {
        WriteOptions {
            field_manager: Some(self.manager.clone()),
            field_validation: self.well_typed.then(|| "Ignore".to_string()),
            // No component reads managedFields: answers as the store keeps them, shared.
            answer: crate::apiserver::store::Answer::Kept,
            ..Default::default()
        }
    }

    pub fn get(&self, group: &str, plural: &str, ns: &str, name: &str) -> Option<Arc<Value>> {
        self.api
            .store
            .get_kept(&resources::storage_key(group, plural), ns, name)
    }

    pub fn list(
        &self,
        group: &str,
        plural: &str,
        ns: Option<&str>,
        filter: &dyn Fn(&Value) -> bool,
    ) -> Vec<Arc<Value>> {
        self.api
            .store
            .list(
                &resources::storage_key(group, plural),
                ns,
                None,
                None,
                filter,
            )
            .items
    }

    /// The pods bound to `node` that `filter` keeps, through the store's node index.
    pub fn pods_on_node(&self, node: &str, filter: &dyn Fn(&Value) -> bool) -> Vec<Arc<Value>> {
        let res = self.api.store.list_stored(
            &resources::storage_key("", "pods"),
            None,
            None,
            None,
            filter,
            Some(node),
        );
        res.items.into_iter().map(|s| s.kept()).collect()
    }

    pub fn create(&self, group: &str, plural: &str, ns: &str, obj: Value) -> ApiResult<Arc<Value>> {
        self.connect()?;
        let rt = self.rt(group, plural)?;
        Ok(self.api.create(&rt, ns, obj, &self.opts())?.object)
    }

    /// PUT of the main resource (client-go's Update): the object as read, changed; a
    /// resourceVersion that moved on is a 409.
    pub fn update(
        &self,
        group: &str,
        plural: &str,
        ns: &str,
        name: &str,
        obj: Value,
    ) -> ApiResult<Arc<Value>> {
        self.connect()?;
        let rt = self.rt(group, plural)?;
        Ok(self
            .api
            .update(&rt, ns, name, None, obj, &self.opts())?
            .object)
    }

    /// PUT of the status subresource (client-go's UpdateStatus).
    pub fn update_status(
        &self,
        group: &str,
        plural: &str,
        ns: &str,
        name: &str,
        obj: Value,
    ) -> ApiResult<Arc<Value>> {
        self.connect()?;
        let rt = self.rt(group, plural)?;
        Ok(self
            .api
            .update(&rt, ns, name, Some("status"), obj, &self.opts())?
            .object)
    }

    /// Strategic merge patch of the main resource.
    pub fn strategic(
        &self,
        group: &str,
        plural: &str,
        ns: &str,
        name: &str,
        patch: &Value,
    ) -> ApiResult<Arc<Value>> {
        self.connect()?;
        let rt = self.rt(group, plural)?;
        Ok(self
            .api
            .patch(
                &rt,
                ns,
                name,
                None,
                PatchType::Strategic,
                patch,
                &self.opts(),
            )?
            .object)
    }

    /// Server-side apply of the status subresource by `manager`, forced (client-go's
    /// ApplyStatus with `Force: true`).
    pub fn apply_status(
        &self,
        group: &str,
        plural: &str,
        ns: &str,
        name: &str,
        body: &Value,
        manager: &str,
    ) -> ApiResult<Arc<Value>> {
        self.connect()?;
        let rt = self.rt(group, plural)?;
        let opts = WriteOptions {
            field_manager: Some(manager.to_string()),
            force: true,
            ..Default::default()
        };
        Ok(self
            .api
            .patch(&rt, ns, name, Some("status"), PatchType::Apply, body, &opts)?
            .object)
    }

    /// JSON merge patch of the main resource.
    pub fn merge(
        &self,
        group: &str,
        plural: &str,
        ns: &str,
        name: &str,
        patch: &Value,
    ) -> ApiResult<Arc<Value>> {
        self.connect()?;
        let rt = self.rt(group, plural)?;
        Ok(self
            .api
            .patch(&rt, ns, name, None, PatchType::Merge, patch, &self.opts())?
            .object)
    }

    /// JSON merge patch of the status subresource (lists in the patch replace lists).
    pub fn merge_status(
        &self,
        group: &str,
        plural: &str,
        ns: &str,
        name: &str,
        patch: &Value,
    ) -> ApiResult<Arc<Value>> {
        self.connect()?;
        let rt = self.rt(group, plural)?;
        let sub = if rt.has_status() {
            Some("status")
        } else {
            None
        };
        Ok(self
            .api
            .patch(&rt, ns, name, sub, PatchType::Merge, patch, &self.opts())?
            .object)
    }

    pub fn delete(
        &self,
        group: &str,
        plural: &str,
        ns: &str,
        name: &str,
        grace: Option<i64>,
    ) -> ApiResult<bool> {
        self.connect()?;
        let rt = self.rt(group, plural)?;
        // The controllers name their propagation (background: the cronjob, job, replicaset and
        // garbage collector controllers' deletes), so a kind's orphan default does not apply.
        let opts = DeleteOptions {
            grace_period_seconds: grace,
            propagation: Some(crate::apiserver::store::Propagation::Background),
            ..Default::default()
        };
        match self.api.delete(&rt, ns, name, &opts)? {
            DeleteOutcome::Deleted(_) => Ok(true),
            DeleteOutcome::Pending(_) => Ok(false),
        }
    }
}
