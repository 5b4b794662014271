//! The list-merge extensions of the published schemas (`x-kubernetes-patch-strategy`,
//! `x-kubernetes-patch-merge-key`, `x-kubernetes-list-type`, `x-kubernetes-list-map-keys`).
//!
//! k8s-openapi's schemas do not carry them. They come from the table the sim's own strategic
//! merge and server-side apply follow (`patch::schema`), so a client that computes a patch from
//! the document (kubectl apply) merges lists exactly as the sim's server does; lists the table
//! does not name are replaced whole on both sides.

use super::{Definitions, REF_PREFIX};
use crate::apiserver::patch::schema::{GoType, ListType, PatchStrategy};
use serde_json::{json, Value};
use std::collections::HashSet;

/// Annotate every definition reachable from the given (definition, kind) roots.
pub fn annotate(defs: &mut Definitions, roots: &[(String, &str)]) {
    let mut visited = HashSet::new();
    for (name, kind) in roots {
        walk(defs, name, GoType::root(kind), &mut visited);
    }
}

fn ref_target(schema: &Value) -> Option<String> {
    let r = schema
        .get("$ref")
        .or_else(|| schema.pointer("/items/$ref"))?
        .as_str()?;
    r.strip_prefix(REF_PREFIX).map(String::from)
}

fn walk(defs: &mut Definitions, name: &str, ty: GoType, visited: &mut HashSet<(String, String)>) {
    if ty == GoType::Unknown || !visited.insert((name.to_string(), format!("{ty:?}"))) {
        return;
    }
    let Some(Value::Object(props)) = defs.get_mut(name).and_then(|d| d.get_mut("properties"))
    else {
        return;
    };
    let mut next = Vec::new();
    for (prop, schema) in props.iter_mut() {
        let field = ty.field(prop);
        let Some(s) = schema.as_object_mut() else {
            continue;
        };
        match field.patch_strategy {
            PatchStrategy::MergeKey(key) => {
                s.insert("x-kubernetes-patch-strategy".into(), json!("merge"));
                s.insert("x-kubernetes-patch-merge-key".into(), json!(key));
            }
            PatchStrategy::MergeSet => {
                s.insert("x-kubernetes-patch-strategy".into(), json!("merge"));
            }
            PatchStrategy::Replace => {}
        }
        if s.get("type") == Some(&json!("array")) {
            match field.list_type {
                ListType::Map(keys) => {
                    s.insert("x-kubernetes-list-type".into(), json!("map"));
                    s.insert("x-kubernetes-list-map-keys".into(), json!(keys));
                }
                ListType::Set => {
                    s.insert("x-kubernetes-list-type".into(), json!("set"));
                }
                ListType::Atomic => {}
            }
        }
        if let Some(target) = ref_target(schema) {
            next.push((target, field.ty));
        }
    }
    for (target, ty) in next {
        walk(defs, &target, ty, visited);
    }
}

#[cfg(test)]
mod tests {
    use super::super::builtin;

    #[test]
    fn containers_merge_by_name_and_finalizers_as_a_set() {
        let defs = builtin();
        let containers = &defs["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"];
        assert_eq!(containers["x-kubernetes-patch-merge-key"], "name");
        assert_eq!(containers["x-kubernetes-patch-strategy"], "merge");
        assert_eq!(
            containers["x-kubernetes-list-map-keys"],
            serde_json::json!(["name"])
        );
        assert_eq!(
            defs["io.k8s.api.core.v1.Container"]["properties"]["ports"]
                ["x-kubernetes-patch-merge-key"],
            "containerPort"
        );
        assert_eq!(
            defs["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"]["properties"]["finalizers"]
                ["x-kubernetes-list-type"],
            "set"
        );
        assert_eq!(
            defs["io.k8s.api.apps.v1.DeploymentStatus"]["properties"]["conditions"]
                ["x-kubernetes-patch-merge-key"],
            "type"
        );
        assert!(
            defs["io.k8s.api.core.v1.PodSpec"]["properties"]["tolerations"]
                .get("x-kubernetes-patch-strategy")
                .is_none()
        );
    }
}
