//! The OpenAPI documents the apiserver publishes (`/openapi/v2`, `/openapi/v3`), generated from
//! k8s-openapi's schemas of the built-in types plus each served CRD version's `openAPIV3Schema`.
//!
//! Nothing is built at start: the first request renders a document and `Cache` keeps it until the
//! set of served types changes (a CRD is created, updated or deleted), so cluster start pays
//! nothing and repeated requests pay only once.

pub mod definitions;
pub mod gnostic;
pub mod paths;
pub mod v2;
pub mod v3;

use crate::apiserver::resources::Registry;
use bytes::Bytes;
use parking_lot::Mutex;
use sha2::{Digest, Sha512};
use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

/// A rendered body and its entity tag.
pub struct Rendered {
    pub body: Bytes,
    pub etag: String,
}

impl Rendered {
    fn new(body: Vec<u8>) -> Self {
        let etag = format!("\"{}\"", hash(&body));
        Rendered {
            body: body.into(),
            etag,
        }
    }
}

/// The v3 root index and each group-version document with its hash.
pub struct V3 {
    pub root: Rendered,
    pub docs: BTreeMap<String, (Rendered, String)>,
}

/// Upper-case hex SHA-512: the form of upstream's v3 `hash` and ETags.
pub fn hash(body: &[u8]) -> String {
    Sha512::digest(body)
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect()
}

/// The documents of one catalogue generation, each rendered on first request.
pub struct Docs {
    generation: u64,
    v2: OnceLock<(Rendered, Rendered)>,
    v3: OnceLock<V3>,
}

impl Docs {
    /// The v2 document as JSON and as gnostic protobuf.
    pub fn v2(&self, reg: &Registry) -> &(Rendered, Rendered) {
        self.v2.get_or_init(|| {
            let doc = v2::document(reg);
            let json = Rendered::new(serde_json::to_vec(&doc).unwrap_or_default());
            let proto = Rendered::new(gnostic::encode(&doc));
            (json, proto)
        })
    }

    pub fn v3(&self, reg: &Registry) -> &V3 {
        self.v3.get_or_init(|| {
            let mut index = serde_json::Map::new();
            let mut docs = BTreeMap::new();
            for (key, doc) in v3::documents(reg) {
                let body = Rendered::new(serde_json::to_vec(&doc).unwrap_or_default());
                let h = hash(&body.body);
                index.insert(
                    key.clone(),
                    serde_json::json!({"serverRelativeURL": format!("/openapi/v3/{key}?hash={h}")}),
                );
                docs.insert(key, (body, h));
            }
            let root = Rendered::new(
                serde_json::to_vec(&serde_json::json!({"paths": index})).unwrap_or_default(),
            );
            V3 { root, docs }
        })
    }
}

/// Holds the documents of the current catalogue generation.
#[derive(Default)]
pub struct Cache {
    current: Mutex<Option<Arc<Docs>>>,
}

impl Cache {
    /// The documents for the registry as it is now (a fresh, empty set after any change).
    pub fn docs(&self, reg: &Registry) -> Arc<Docs> {
        let generation = reg.generation();
        let mut current = self.current.lock();
        match current.as_ref() {
            Some(d) if d.generation == generation => d.clone(),
            _ => {
                let d = Arc::new(Docs {
                    generation,
                    v2: OnceLock::new(),
                    v3: OnceLock::new(),
                });
                *current = Some(d.clone());
                d
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apiserver::resources::ResourceType;
    use serde_json::json;

    fn widget(schema: serde_json::Value) -> ResourceType {
        let mut t = (*Registry::with_builtins()
            .get("", "v1", "configmaps")
            .unwrap())
        .clone();
        t.group = "example.com".into();
        t.kind = "Widget".into();
        t.plural = "widgets".into();
        t.custom = true;
        t.round_trip = None;
        t.schema = Some(schema);
        t
    }

    #[test]
    fn documents_are_rebuilt_when_a_crd_changes() {
        let reg = Registry::with_builtins();
        let cache = Cache::default();
        let before = cache.docs(&reg);
        assert!(
            Arc::ptr_eq(&before, &cache.docs(&reg)),
            "unchanged catalogue: same documents"
        );
        assert!(!before.v3(&reg).docs.contains_key("apis/example.com/v1"));
        reg.insert(widget(json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}})));
        let after = cache.docs(&reg);
        assert!(!Arc::ptr_eq(&before, &after));
        let (doc, h) = &after.v3(&reg).docs["apis/example.com/v1"];
        let doc: serde_json::Value = serde_json::from_slice(&doc.body).unwrap();
        let schema = &doc["components"]["schemas"]["com.example.v1.Widget"];
        assert_eq!(
            schema["properties"]["spec"]["properties"]["size"]["type"],
            "integer"
        );
        assert_eq!(
            schema["x-kubernetes-group-version-kind"][0]["kind"],
            "Widget"
        );
        let root: serde_json::Value = serde_json::from_slice(&after.v3(&reg).root.body).unwrap();
        assert_eq!(
            root["paths"]["apis/example.com/v1"]["serverRelativeURL"],
            format!("/openapi/v3/apis/example.com/v1?hash={h}")
        );
        let v2: serde_json::Value = serde_json::from_slice(&after.v2(&reg).0.body).unwrap();
        assert!(v2["definitions"]["com.example.v1.Widget"].is_object());
        assert!(
            v2["paths"]["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"]["get"]
                .is_object()
        );
    }
}
