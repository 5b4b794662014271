//! The `scale` subresource: an autoscaling/v1 `Scale` view of a workload's replica count.
//!
//! Built-in workloads keep replicas at `.spec.replicas` / `.status.replicas` and their selector
//! at `.spec.selector` (a `LabelSelector`, or a plain map for ReplicationControllers); custom
//! resources name the paths in their CRD's `subresources.scale`.

use crate::apiserver::meta;
use crate::apiserver::selectors::LabelSelector;
use crate::apiserver::status::{ApiError, ApiResult};
use serde_json::{json, Value};

/// Where a resource keeps what its Scale shows (JSON pointers).
#[derive(Debug, Clone, PartialEq)]
pub struct ScalePaths {
    pub spec_replicas: String,
    pub status_replicas: String,
    pub selector: SelectorAt,
}

#[derive(Debug, Clone, PartialEq)]
pub enum SelectorAt {
    /// A `metav1.LabelSelector` (Deployments, ReplicaSets, StatefulSets).
    LabelSelector(String),
    /// A `map[string]string` (ReplicationControllers).
    Map(String),
    /// An already serialized selector string (a CRD's `labelSelectorPath`).
    Text(String),
    None,
}

impl ScalePaths {
    pub fn builtin(kind: &str) -> ScalePaths {
        let selector = if kind == "ReplicationController" {
            SelectorAt::Map("/spec/selector".into())
        } else {
            SelectorAt::LabelSelector("/spec/selector".into())
        };
        ScalePaths {
            spec_replicas: "/spec/replicas".into(),
            status_replicas: "/status/replicas".into(),
            selector,
        }
    }

    /// From a CRD version's `subresources.scale` (JSONPaths such as `.spec.replicas`).
    pub fn from_crd(scale: &Value) -> ScalePaths {
        let path = |k: &str| {
            scale
                .get(k)
                .and_then(Value::as_str)
                .map(json_path_to_pointer)
        };
        ScalePaths {
            spec_replicas: path("specReplicasPath").unwrap_or_else(|| "/spec/replicas".into()),
            status_replicas: path("statusReplicasPath")
                .unwrap_or_else(|| "/status/replicas".into()),
            selector: path("labelSelectorPath")
                .map(SelectorAt::Text)
                .unwrap_or(SelectorAt::None),
        }
    }
}

/// `.spec.replicas` -> `/spec/replicas`.
fn json_path_to_pointer(p: &str) -> String {
    p.trim_start_matches('.')
        .split('.')
        .fold(String::new(), |acc, seg| format!("{}/{}", acc, seg))
}

/// The Scale of `obj`.
pub fn scale_of(obj: &Value, paths: &ScalePaths) -> Value {
    let md = obj.get("metadata").cloned().unwrap_or_else(|| json!({}));
    let mut scale_md = serde_json::Map::new();
    for k in [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
    ] {
        if let Some(v) = md.get(k) {
            scale_md.insert(k.into(), v.clone());
        }
    }
    let replicas = |p: &str| obj.pointer(p).and_then(Value::as_i64).unwrap_or(0);
    let mut status = json!({"replicas": replicas(&paths.status_replicas)});
    let selector = match &paths.selector {
        SelectorAt::LabelSelector(p) => obj
            .pointer(p)
            .and_then(|s| LabelSelector::from_json(s).ok())
            .map(|s| s.to_string()),
        SelectorAt::Map(p) => Some(LabelSelector::from_set(obj.pointer(p)).to_string()),
        SelectorAt::Text(p) => obj.pointer(p).and_then(Value::as_str).map(String::from),
        SelectorAt::None => None,
    };
    if let Some(s) = selector.filter(|s| !s.is_empty()) {
        status["selector"] = json!(s);
    }
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": scale_md,
        "spec": {"replicas": replicas(&paths.spec_replicas)},
        "status": status,
    })
}

/// The object with the replica count a Scale asks for; the Scale's resourceVersion, when set,
/// is a precondition on the object's.
pub fn apply_scale(obj: &Value, scale: &Value, paths: &ScalePaths, name: &str) -> ApiResult<Value> {
    let replicas = match scale.pointer("/spec/replicas") {
        None | Some(Value::Null) => 0,
        Some(v) => v.as_i64().ok_or_else(|| ApiError::bad_request(format!("Scale in version \"v1\" cannot be handled as a Scale: json: cannot unmarshal {} into Go struct field ScaleSpec.spec.replicas of type int32", v)))?,
    };
    if replicas < 0 {
        return Err(ApiError::invalid(
            "autoscaling",
            "Scale",
            name,
            vec![(
                "spec.replicas".into(),
                format!(
                    "Invalid value: {}: must be greater than or equal to 0",
                    replicas
                ),
                "FieldValueInvalid",
            )],
        ));
    }
    let mut next = obj.clone();
    set_pointer(&mut next, &paths.spec_replicas, json!(replicas));
    match scale
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
    {
        Some(rv) if !rv.is_empty() => next["metadata"]["resourceVersion"] = json!(rv),
        _ => {
            let rv = meta::resource_version(obj).to_string();
            next["metadata"]["resourceVersion"] = json!(rv);
        }
    }
    Ok(next)
}

fn set_pointer(obj: &mut Value, pointer: &str, v: Value) {
    let mut cur = obj;
    let segs: Vec<&str> = pointer.split('/').skip(1).collect();
    for (i, seg) in segs.iter().enumerate() {
        if !cur.is_object() {
            *cur = json!({});
        }
        let map = cur.as_object_mut().expect("object");
        if i == segs.len() - 1 {
            map.insert(seg.to_string(), v);
            return;
        }
        cur = map.entry(seg.to_string()).or_insert_with(|| json!({}));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deployment_scale_has_replicas_and_selector_string() {
        let d = json!({"metadata": {"name": "web", "namespace": "d", "uid": "u", "resourceVersion": "7", "labels": {"x": "y"}},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web", "tier": "fe"}}}, "status": {"replicas": 2}});
        let s = scale_of(&d, &ScalePaths::builtin("Deployment"));
        assert_eq!(s["spec"]["replicas"], 3);
        assert_eq!(
            s["status"],
            json!({"replicas": 2, "selector": "app=web,tier=fe"})
        );
        assert_eq!(
            s["metadata"],
            json!({"name": "web", "namespace": "d", "uid": "u", "resourceVersion": "7"})
        );
    }

    #[test]
    fn replication_controller_selector_is_a_map() {
        let rc = json!({"metadata": {"name": "r"}, "spec": {"replicas": 1, "selector": {"b": "2", "a": "1"}}});
        assert_eq!(
            scale_of(&rc, &ScalePaths::builtin("ReplicationController"))["status"]["selector"],
            "a=1,b=2"
        );
    }

    #[test]
    fn applying_a_scale_sets_replicas_and_checks_its_sign() {
        let d =
            json!({"metadata": {"name": "web", "resourceVersion": "7"}, "spec": {"replicas": 3}});
        let next = apply_scale(
            &d,
            &json!({"spec": {"replicas": 5}}),
            &ScalePaths::builtin("Deployment"),
            "web",
        )
        .unwrap();
        assert_eq!(
            (
                next["spec"]["replicas"].as_i64(),
                next["metadata"]["resourceVersion"].as_str()
            ),
            (Some(5), Some("7"))
        );
        let e = apply_scale(
            &d,
            &json!({"spec": {"replicas": -1}}),
            &ScalePaths::builtin("Deployment"),
            "web",
        )
        .unwrap_err();
        assert_eq!(e.code, 422);
        assert!(
            e.message.contains("spec.replicas: Invalid value: -1"),
            "{}",
            e.message
        );
    }

    #[test]
    fn crd_paths_become_pointers() {
        let p = ScalePaths::from_crd(
            &json!({"specReplicasPath": ".spec.size", "statusReplicasPath": ".status.size", "labelSelectorPath": ".status.selector"}),
        );
        assert_eq!(p.spec_replicas, "/spec/size");
        let cr = json!({"metadata": {"name": "c"}, "spec": {"size": 4}, "status": {"size": 4, "selector": "a=b"}});
        assert_eq!(
            scale_of(&cr, &p)["status"],
            json!({"replicas": 4, "selector": "a=b"})
        );
    }
}
