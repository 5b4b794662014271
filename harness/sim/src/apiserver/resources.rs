//! The catalogue of API resources the simulated server serves: the built-in types (from
//! `builtins`, derived from k8s-openapi) and the resources that CustomResourceDefinitions add at
//! run time.
//!
//! A resource is identified for storage by `(group, plural)`: every served version of it shares one
//! store bucket (the real apiserver converts between versions; we only rewrite `apiVersion`).

use crate::apiserver::builtins::{self, RoundTrip, Scope};
use crate::apiserver::scale::ScalePaths;
use parking_lot::RwLock;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Storage identity of a resource, independent of version: group ("" for core) and plural.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ResourceKey {
    pub group: String,
    pub plural: String,
}

impl ResourceKey {
    pub fn new(group: &str, plural: &str) -> Self {
        ResourceKey {
            group: group.to_string(),
            plural: plural.to_string(),
        }
    }
}

impl std::fmt::Display for ResourceKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.group.is_empty() {
            write!(f, "{}", self.plural)
        } else {
            write!(f, "{}.{}", self.plural, self.group)
        }
    }
}

/// The verbs of a resource that is stored and served like any other.
pub const CRUD_VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

/// One served (group, version, resource).
#[derive(Debug, Clone)]
pub struct ResourceType {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub plural: String,
    pub singular: String,
    pub namespaced: bool,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
    /// Subresources beyond the object itself, e.g. "status", "log", "binding".
    pub subresources: Vec<String>,
    /// The served version that is stored (what watch caches and storage speak).
    pub storage_version: bool,
    /// Set for custom resources: the CRD version's additionalPrinterColumns.
    pub printer_columns: Option<Value>,
    /// Custom resources only: extra selectable fields (CRD `selectableFields` JSON paths).
    pub selectable_fields: Vec<String>,
    /// True for resources defined by a CRD (no strategic merge patch, no protobuf).
    pub custom: bool,
    /// The verbs advertised in discovery.
    pub verbs: &'static [&'static str],
    /// Built-ins: decoding through the k8s-openapi type (schema check, unknown-field pruning).
    pub round_trip: Option<RoundTrip>,
    /// Where the `scale` subresource reads and writes replicas, when the resource has one.
    pub scale: Option<ScalePaths>,
    /// Custom resources only: the CRD version's `schema.openAPIV3Schema` (published in /openapi).
    pub schema: Option<Value>,
}

impl ResourceType {
    pub fn key(&self) -> ResourceKey {
        ResourceKey::new(&self.group, &self.plural)
    }
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
    pub fn has_status(&self) -> bool {
        self.subresources.iter().any(|s| s == "status")
    }
    pub fn has_subresource(&self, sub: &str) -> bool {
        self.subresources.iter().any(|s| s == sub)
    }
    /// Resources that are created and answered but never stored (bindings, reviews).
    pub fn create_only(&self) -> bool {
        self.verbs == ["create"]
    }
}

/// Where in storage two resources share a bucket although served under different groups.
/// core/v1 events and events.k8s.io/v1 events are one stored type (conversion in `event_convert`).
pub fn storage_key(group: &str, plural: &str) -> ResourceKey {
    if group == "events.k8s.io" && plural == "events" {
        ResourceKey::new("", "events")
    } else {
        ResourceKey::new(group, plural)
    }
}

/// The set of served resources; CRDs add and remove entries while the server runs.
#[derive(Default)]
pub struct Registry {
    /// (group, version, plural) -> type
    types: RwLock<BTreeMap<(String, String, String), Arc<ResourceType>>>,
    /// Group names in the order they were first registered (discovery preserves a stable order).
    group_order: RwLock<Vec<String>>,
    /// Bumped on every change, so documents derived from the catalogue (OpenAPI) know when to rebuild.
    generation: AtomicU64,
}

impl Registry {
    pub fn with_builtins() -> Self {
        let r = Registry::default();
        let types: Vec<_> = builtins::all()
            .into_iter()
            .filter(|b| b.scope != Scope::Subresource)
            .collect();
        for b in &types {
            // The newest version is the stored one (autoscaling/v2 for HorizontalPodAutoscalers).
            let mut versions: Vec<String> = types
                .iter()
                .filter(|o| o.group == b.group && o.plural == b.plural)
                .map(|o| o.version.to_string())
                .collect();
            sort_versions(&mut versions);
            let extra = builtins::extra(b.group, b.kind);
            let strings = |f: fn(&builtins::Extra) -> &'static [&'static str]| -> Vec<String> {
                extra
                    .map(|e| f(e).iter().map(|s| s.to_string()).collect())
                    .unwrap_or_default()
            };
            r.insert(ResourceType {
                group: b.group.into(),
                version: b.version.into(),
                kind: b.kind.into(),
                plural: b.plural.into(),
                singular: b.kind.to_lowercase(),
                namespaced: b.scope == Scope::Namespaced,
                short_names: strings(|e| e.short_names),
                categories: strings(|e| e.categories),
                subresources: strings(|e| e.subresources),
                storage_version: versions[0] == b.version,
                printer_columns: None,
                selectable_fields: vec![],
                custom: false,
                verbs: builtins::verbs(b.group, b.plural, b.listable).unwrap_or(CRUD_VERBS),
                round_trip: Some(b.round_trip),
                scale: extra
                    .filter(|e| e.subresources.contains(&"scale"))
                    .map(|_| ScalePaths::builtin(b.kind)),
                schema: None,
            });
        }
        r
    }

    pub fn insert(&self, t: ResourceType) {
        {
            let mut order = self.group_order.write();
            if !order.contains(&t.group) {
                order.push(t.group.clone());
            }
        }
        self.types.write().insert(
            (t.group.clone(), t.version.clone(), t.plural.clone()),
            Arc::new(t),
        );
        self.generation.fetch_add(1, Ordering::SeqCst);
    }

    /// Changes whenever a type is added or removed.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    /// Remove every version of a custom resource (when its CRD is deleted).
    pub fn remove_resource(&self, group: &str, plural: &str) {
        self.types
            .write()
            .retain(|(g, _, p), _| !(g == group && p == plural));
        self.generation.fetch_add(1, Ordering::SeqCst);
        let still_has_group = self.types.read().keys().any(|(g, _, _)| g == group);
        if !still_has_group {
            self.group_order.write().retain(|g| g != group);
        }
    }

    pub fn get(&self, group: &str, version: &str, plural: &str) -> Option<Arc<ResourceType>> {
        self.types
            .read()
            .get(&(group.to_string(), version.to_string(), plural.to_string()))
            .cloned()
    }

    /// Find the type for an object's apiVersion and kind.
    pub fn by_kind(&self, api_version: &str, kind: &str) -> Option<Arc<ResourceType>> {
        let (group, version) = split_api_version(api_version);
        self.types
            .read()
            .values()
            .find(|t| t.group == group && t.version == version && t.kind == kind)
            .cloned()
    }

    /// The storage-version type of a resource (any served version if none is marked).
    pub fn storage_type(&self, key: &ResourceKey) -> Option<Arc<ResourceType>> {
        let types = self.types.read();
        let mut candidates = types
            .values()
            .filter(|t| t.group == key.group && t.plural == key.plural);
        let all: Vec<_> = candidates.by_ref().cloned().collect();
        all.iter()
            .find(|t| t.storage_version)
            .cloned()
            .or_else(|| all.first().cloned())
    }

    pub fn groups(&self) -> Vec<String> {
        self.group_order.read().clone()
    }

    /// Versions served for a group, preferred (storage) first, in registration order otherwise.
    pub fn versions(&self, group: &str) -> Vec<String> {
        let types = self.types.read();
        let mut out: Vec<String> = Vec::new();
        let mut preferred: Option<String> = None;
        for t in types.values().filter(|t| t.group == group) {
            if !out.contains(&t.version) {
                out.push(t.version.clone());
            }
            if t.storage_version && preferred.is_none() {
                preferred = Some(t.version.clone());
            }
        }
        sort_versions(&mut out);
        if let Some(p) = preferred {
            out.retain(|v| v != &p);
            out.insert(0, p);
        }
        out
    }

    pub fn resources_in(&self, group: &str, version: &str) -> Vec<Arc<ResourceType>> {
        self.types
            .read()
            .values()
            .filter(|t| t.group == group && t.version == version)
            .cloned()
            .collect()
    }

    pub fn all(&self) -> Vec<Arc<ResourceType>> {
        self.types.read().values().cloned().collect()
    }
}

pub fn split_api_version(api_version: &str) -> (&str, &str) {
    match api_version.split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version),
    }
}

/// Kubernetes version priority: GA > beta > alpha, higher numbers first.
pub fn sort_versions(versions: &mut [String]) {
    fn rank(v: &str) -> (u8, i64, i64) {
        let rest = v.strip_prefix('v').unwrap_or(v);
        let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
        let major: i64 = digits.parse().unwrap_or(0);
        let tail = &rest[digits.len()..];
        let (stability, minor) = if tail.is_empty() {
            (3, 0)
        } else if let Some(n) = tail.strip_prefix("beta") {
            (2, n.parse().unwrap_or(0))
        } else if let Some(n) = tail.strip_prefix("alpha") {
            (1, n.parse().unwrap_or(0))
        } else {
            (0, 0)
        };
        (stability, major, minor)
    }
    versions.sort_by_key(|v| std::cmp::Reverse(rank(v)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_sort_like_kubernetes() {
        let mut v = vec![
            "v1alpha1".to_string(),
            "v2".into(),
            "v1beta2".into(),
            "v1".into(),
            "v1beta1".into(),
        ];
        sort_versions(&mut v);
        assert_eq!(v, vec!["v2", "v1", "v1beta2", "v1beta1", "v1alpha1"]);
    }

    #[test]
    fn events_share_storage_across_groups() {
        assert_eq!(
            storage_key("events.k8s.io", "events"),
            storage_key("", "events")
        );
        assert_ne!(
            storage_key("apps", "deployments"),
            storage_key("", "deployments")
        );
    }

    #[test]
    fn builtins_are_registered_with_subresources() {
        let r = Registry::with_builtins();
        let pods = r.get("", "v1", "pods").expect("pods");
        assert!(
            pods.has_status() && pods.has_subresource("log") && pods.has_subresource("binding")
        );
        assert!(r.by_kind("apps/v1", "Deployment").is_some());
        assert!(r.groups().contains(&"apiextensions.k8s.io".to_string()));
    }
}
