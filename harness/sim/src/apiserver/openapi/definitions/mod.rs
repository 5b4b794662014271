//! The schema definitions the OpenAPI documents publish, keyed by definition name.
//!
//! Built-in schemas come from k8s-openapi's `JsonSchema` implementations (generated once per
//! process, on first use: they never change); each kind carries `x-kubernetes-group-version-kind`
//! as upstream's do, and every listable kind gets its `<Kind>List`. Custom resources contribute
//! their CRD version's `openAPIV3Schema` under upstream's name (`com.example.stable.v1.CronTab`).
//! References are written `#/definitions/<name>` (v2 style); the v3 renderer rewrites them.
//! `list_merge` adds the list-merge extensions to the built-in ones.

mod list_merge;

mod align;

use crate::apiserver::builtins;
use crate::apiserver::resources::ResourceType;
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;
use k8s_openapi::schemars::generate::SchemaSettings;
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

pub type Definitions = BTreeMap<String, Value>;

pub const REF_PREFIX: &str = "#/definitions/";
const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
const LIST_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta";
pub const STATUS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Status";
pub const DELETE_OPTIONS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions";
pub const WATCH_EVENT: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent";
pub const PATCH: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch";
/// Fields k8s-openapi makes non-optional (so they read as `required`) that a 1.35 apiserver's
/// document leaves optional, by kind: `metadata` everywhere except core Events, and these.
const NOT_REQUIRED_UPSTREAM: &[(&str, &[&str])] = &[
    ("io.k8s.api.apps.v1.DaemonSet", &["spec"]),
    ("io.k8s.api.apps.v1.Deployment", &["spec"]),
    ("io.k8s.api.apps.v1.ReplicaSet", &["spec"]),
    ("io.k8s.api.apps.v1.StatefulSet", &["spec"]),
    ("io.k8s.api.apps.v1.ControllerRevision", &["data"]),
    ("io.k8s.api.batch.v1.CronJob", &["spec"]),
    (
        "io.k8s.api.autoscaling.v1.HorizontalPodAutoscaler",
        &["spec"],
    ),
    (
        "io.k8s.api.autoscaling.v2.HorizontalPodAutoscaler",
        &["spec"],
    ),
    ("io.k8s.api.flowcontrol.v1.FlowSchema", &["spec"]),
    (
        "io.k8s.api.flowcontrol.v1.PriorityLevelConfiguration",
        &["spec"],
    ),
    ("io.k8s.api.networking.v1.IPAddress", &["spec"]),
    (
        "io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicyBinding",
        &["spec"],
    ),
];

fn relax_required(name: &str, schema: &mut Value) {
    let extra = NOT_REQUIRED_UPSTREAM
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, f)| *f)
        .unwrap_or(&[]);
    let keep_metadata = name == "io.k8s.api.core.v1.Event";
    let Some(obj) = schema.as_object_mut() else {
        return;
    };
    if let Some(Value::Array(req)) = obj.get_mut("required") {
        req.retain(|f| (f != "metadata" || keep_metadata) && !extra.iter().any(|e| f == e));
        if req.is_empty() {
            obj.remove("required");
        }
    }
}

/// CRD defaults and examples hold any JSON value: published without a type, as upstream does.
const ANY_JSON: &str = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON";

pub fn gvk(group: &str, version: &str, kind: &str) -> Value {
    json!({"group": group, "kind": kind, "version": version})
}

fn add_gvk(schema: &mut Value, gvk: Value) {
    let Some(obj) = schema.as_object_mut() else {
        return;
    };
    let list = obj
        .entry("x-kubernetes-group-version-kind")
        .or_insert_with(|| json!([]));
    if let Some(a) = list.as_array_mut() {
        if !a.contains(&gvk) {
            a.push(gvk);
        }
    }
}

/// The definition name of a built-in kind, by (group, version, kind).
pub fn builtin_name(group: &str, version: &str, kind: &str) -> Option<String> {
    builtins::all()
        .into_iter()
        .find(|b| b.group == group && b.version == version && b.kind == kind)
        .map(|b| (b.schema_name)().into_owned())
}

/// Upstream's definition name of a custom resource: the group's labels reversed, then version and kind.
pub fn custom_name(group: &str, version: &str, kind: &str) -> String {
    let reversed: Vec<&str> = group.split('.').rev().collect();
    format!("{}.{}.{}", reversed.join("."), version, kind)
}

/// The definition name of a served type.
pub fn name_of(t: &ResourceType) -> String {
    if t.custom {
        custom_name(&t.group, &t.version, &t.kind)
    } else {
        builtin_name(&t.group, &t.version, &t.kind)
            .unwrap_or_else(|| format!("{}.{}", t.version, t.kind))
    }
}

/// The `<Kind>List` schema of a listable kind.
fn list_schema(item: &str, what: &str) -> Value {
    json!({
        "description": format!("A list of {what} objects."),
        "type": "object",
        "required": ["items"],
        "properties": {
            "apiVersion": {"description": "The versioned schema of this representation of an object.", "type": "string"},
            "items": {"description": "The listed objects.", "type": "array", "items": {"$ref": format!("{REF_PREFIX}{item}")}},
            "kind": {"description": "The REST resource this object represents.", "type": "string"},
            "metadata": {"$ref": format!("{REF_PREFIX}{LIST_META}"), "description": "Standard list metadata."},
        },
    })
}

/// Every built-in definition; computed on first use and kept for the life of the process.
pub fn builtin() -> &'static Definitions {
    static DEFS: OnceLock<Definitions> = OnceLock::new();
    DEFS.get_or_init(generate_builtin)
}

fn generate_builtin() -> Definitions {
    let mut generator = SchemaSettings::draft07()
        .with(|s| {
            s.definitions_path = "/definitions".into();
            s.meta_schema = None;
            // Keep `$ref` beside its description (Swagger 2.0 style); v3 rendering wraps it.
            s.transforms.clear();
        })
        .into_generator();
    let types = builtins::all();
    for t in &types {
        (t.schema)(&mut generator);
    }
    generator.subschema_for::<meta::Status>();
    generator.subschema_for::<meta::DeleteOptions>();
    generator
        .subschema_for::<meta::WatchEvent<k8s_openapi::apimachinery::pkg::runtime::RawExtension>>();
    generator.subschema_for::<meta::Patch>();
    // The discovery documents' types, which the discovery paths answer with.
    generator.subschema_for::<meta::APIGroup>();
    generator.subschema_for::<meta::APIGroupList>();
    generator.subschema_for::<meta::APIResourceList>();
    generator.subschema_for::<meta::APIVersions>();
    generator.subschema_for::<k8s_openapi::apimachinery::pkg::version::Info>();
    let mut defs: Definitions = generator.take_definitions(true).into_iter().collect();
    let mut group_versions = BTreeSet::new();
    for t in &types {
        let name = (t.schema_name)().into_owned();
        if let Some(schema) = defs.get_mut(&name) {
            add_gvk(schema, gvk(t.group, t.version, t.kind));
            relax_required(&name, schema);
        }
        if t.listable {
            let mut list = list_schema(&name, t.kind);
            add_gvk(
                &mut list,
                gvk(t.group, t.version, &format!("{}List", t.kind)),
            );
            defs.insert(format!("{name}List"), list);
        }
        group_versions.insert((t.group, t.version));
    }
    // The options and event kinds every group-version accepts, as upstream lists them.
    for (group, version) in group_versions {
        for (def, kind) in [
            (DELETE_OPTIONS, "DeleteOptions"),
            (WATCH_EVENT, "WatchEvent"),
        ] {
            if let Some(schema) = defs.get_mut(def) {
                add_gvk(schema, gvk(group, version, kind));
            }
        }
    }
    let roots: Vec<(String, &str)> = types
        .iter()
        .map(|t| ((t.schema_name)().into_owned(), t.kind))
        .collect();
    list_merge::annotate(&mut defs, &roots);
    if let Some(s) = defs.get_mut(STATUS) {
        add_gvk(s, gvk("", "v1", "Status"));
    }
    if let Some(Value::Object(s)) = defs.get_mut(ANY_JSON) {
        s.remove("type");
    }
    align::to_1_35(&mut defs);
    defs
}

/// A custom resource's definition: its schema plus what the apiserver adds (the type and object
/// metadata fields), tagged with its group-version-kind. `None` when the CRD has no schema.
pub fn custom(t: &ResourceType) -> Option<Value> {
    let mut schema = t.schema.clone()?;
    let obj = schema.as_object_mut()?;
    let props = obj.entry("properties").or_insert_with(|| json!({}));
    if let Some(props) = props.as_object_mut() {
        props.insert(
            "apiVersion".into(),
            json!({"description": "The versioned schema of this representation of an object.", "type": "string"}),
        );
        props.insert(
            "kind".into(),
            json!({"description": "The REST resource this object represents.", "type": "string"}),
        );
        props.insert("metadata".into(), json!({"$ref": format!("{REF_PREFIX}{OBJECT_META}"), "description": "Standard object's metadata."}));
    }
    obj.entry("type").or_insert_with(|| json!("object"));
    add_gvk(&mut schema, gvk(&t.group, &t.version, &t.kind));
    Some(schema)
}

/// The list definition of a custom resource.
pub fn custom_list(t: &ResourceType) -> Value {
    let mut list = list_schema(&custom_name(&t.group, &t.version, &t.kind), &t.kind);
    add_gvk(
        &mut list,
        gvk(&t.group, &t.version, &format!("{}List", t.kind)),
    );
    list
}

/// Visit every `$ref` target named in a schema.
pub fn refs(schema: &Value, out: &mut Vec<String>) {
    match schema {
        Value::Object(m) => {
            for (k, v) in m {
                match (k.as_str(), v) {
                    ("$ref", Value::String(r)) => {
                        if let Some(name) = r.strip_prefix(REF_PREFIX) {
                            out.push(name.to_string());
                        }
                    }
                    _ => refs(v, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|v| refs(v, out)),
        _ => {}
    }
}

/// The named definitions plus everything they reference, transitively.
pub fn closure<'a>(
    roots: impl IntoIterator<Item = String>,
    lookup: impl Fn(&str) -> Option<&'a Value>,
) -> Map<String, Value> {
    let mut out = Map::new();
    let mut todo: Vec<String> = roots.into_iter().collect();
    while let Some(name) = todo.pop() {
        if out.contains_key(&name) {
            continue;
        }
        if let Some(schema) = lookup(&name) {
            refs(schema, &mut todo);
            out.insert(name, schema.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_kinds_carry_schema_and_gvk() {
        let defs = builtin();
        let deploy = &defs["io.k8s.api.apps.v1.Deployment"];
        assert_eq!(
            deploy["x-kubernetes-group-version-kind"],
            json!([gvk("apps", "v1", "Deployment")])
        );
        assert_eq!(
            deploy["properties"]["spec"]["$ref"],
            "#/definitions/io.k8s.api.apps.v1.DeploymentSpec"
        );
        assert!(defs["io.k8s.api.apps.v1.DeploymentSpec"]["properties"]["replicas"].is_object());
        // As upstream: a Deployment requires nothing, a RoleBinding its roleRef, a core Event its metadata.
        assert!(deploy.get("required").is_none());
        assert_eq!(
            defs["io.k8s.api.rbac.v1.RoleBinding"]["required"],
            json!(["roleRef"])
        );
        assert_eq!(
            defs["io.k8s.api.core.v1.Event"]["required"],
            json!(["involvedObject", "metadata"])
        );
        assert_eq!(
            defs["io.k8s.api.core.v1.PodList"]["x-kubernetes-group-version-kind"][0]["kind"],
            "PodList"
        );
        // Both Event kinds, under their own names.
        assert!(
            defs.contains_key("io.k8s.api.events.v1.Event")
                && defs.contains_key("io.k8s.api.core.v1.Event")
        );
        let delete_gvks = defs[DELETE_OPTIONS]["x-kubernetes-group-version-kind"]
            .as_array()
            .unwrap();
        assert!(delete_gvks.contains(&gvk("batch", "v1", "DeleteOptions")));
        let mut missing = vec![];
        for schema in defs.values() {
            let mut r = vec![];
            refs(schema, &mut r);
            missing.extend(r.into_iter().filter(|n| !defs.contains_key(n)));
        }
        assert!(missing.is_empty(), "dangling references: {missing:?}");
    }

    #[test]
    fn custom_names_reverse_the_group() {
        assert_eq!(
            custom_name("stable.example.com", "v1", "CronTab"),
            "com.example.stable.v1.CronTab"
        );
    }
}
