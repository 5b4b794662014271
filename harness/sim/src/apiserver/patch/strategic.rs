//! Kubernetes strategic merge patch (`application/strategic-merge-patch+json`),
//! following k8s.io/apimachinery/pkg/util/strategicpatch as the apiserver
//! runs it (`MergeParallelList` and `IgnoreUnmatchedNulls` on).
//!
//! * Maps merge recursively; a `null` value deletes the key. Nulls inside a
//!   value that is newly added are dropped rather than stored.
//! * A list whose field has no patch strategy is replaced by the patch list.
//! * A list of objects with `patchStrategy:"merge"` merges elements by the
//!   merge key; a list of primitives with that strategy is set-unioned. The
//!   merge keys per kind and path are in the table in `schema.rs`.
//! * Order of merged lists: as upstream, the elements named in the patch
//!   keep the patch's relative order and are interleaved with the
//!   server-only elements by their live positions. An element that is new
//!   (not in the live list) is therefore placed *before* the server-only
//!   elements that follow it in the merge, e.g. live `[a, b]` + patch `[c]`
//!   gives `[c, a, b]`; `$setElementOrder` fixes the order explicitly.
//! * Directives:
//!   - `$patch: replace` on a map replaces the map with the rest of the
//!     patch; as a list element it replaces the whole list with the other
//!     patch elements.
//!   - `$patch: delete` on a map empties it (upstream returns `{}`); as a list
//!     element it deletes the elements whose merge key matches.
//!   - `$deleteFromPrimitiveList/<field>: [..]` removes those values.
//!   - `$retainKeys: [..]` drops every key of the live map not listed.
//!   - `$setElementOrder/<field>: [..]` reorders the merged list.
//!
//! Upstream quirks not reproduced: the result never contains a directive
//! (upstream copies a directive into the object when the field it sits in
//! is absent from the original), and the consistency checks between
//! `$setElementOrder` and the patch list are skipped.

use super::schema::{Field, GoType, PatchStrategy};
use super::PatchError;
use serde_json::{Map, Value};

const DIRECTIVE: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const SET_ELEMENT_ORDER: &str = "$setElementOrder/";
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList/";

type Object = Map<String, Value>;

/// Kubernetes strategic merge patch. `kind` is the object's Kind ("Pod",
/// "Node", "Deployment", "DaemonSet", "Service", "PersistentVolumeClaim", ...).
pub fn strategic_merge_patch(
    kind: &str,
    original: &Value,
    patch: &Value,
) -> Result<Value, PatchError> {
    let patch = match patch {
        Value::Object(p) => p,
        // `null` decodes to an empty map: nothing to do.
        Value::Null => return Ok(original.clone()),
        other => {
            return Err(PatchError::BadRequest(format!(
                "json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
                json_kind(other)
            )))
        }
    };
    let original = match original {
        Value::Object(o) => o.clone(),
        Value::Null => Object::new(),
        _ => return Err(invalid("original object is not a JSON object")),
    };
    merge_map(original, patch, GoType::root(kind)).map(Value::Object)
}

/// A patch the strategic merge cannot apply: the apiserver passes the library's error through
/// unconverted (`interpretStrategicMergePatchError`), so clients get a 500 with its text.
fn invalid(msg: impl Into<String>) -> PatchError {
    PatchError::Internal(msg.into())
}

/// The library's format errors the apiserver answers with 400.
fn bad_format(msg: &str) -> PatchError {
    PatchError::BadRequest(msg.into())
}

/// Go's `%v` of a decoded JSON value (`map[k:v]`, `[a b]`, floats as `%g`), as the library's
/// messages print maps.
fn go_fmt(v: &Value) -> String {
    match v {
        Value::Null => "<nil>".into(),
        Value::Bool(b) => b.to_string(),
        Value::String(s) => s.clone(),
        Value::Number(n) => go_float(n.as_f64().unwrap_or(0.0)),
        Value::Array(a) => format!("[{}]", a.iter().map(go_fmt).collect::<Vec<_>>().join(" ")),
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let parts: Vec<String> = keys
                .into_iter()
                .map(|k| format!("{k}:{}", go_fmt(&m[k])))
                .collect();
            format!("map[{}]", parts.join(" "))
        }
    }
}

/// Go's `%v` of a float64 (`%g`, shortest digits): exponent form below 1e-4 and from 1e6 on.
fn go_float(f: f64) -> String {
    if f == 0.0 {
        return "0".into();
    }
    let sci = format!("{f:e}"); // shortest digits: `1.234567e6`
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..6).contains(&exp) {
        format!(
            "{mantissa}e{}{:02}",
            if exp < 0 { '-' } else { '+' },
            exp.abs()
        )
    } else {
        format!("{f}")
    }
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn bad_patch_type(directive: &Value, map: &Object) -> PatchError {
    let name = directive
        .as_str()
        .map(str::to_owned)
        .unwrap_or_else(|| directive.to_string());
    invalid(format!(
        "unknown patch type: {name} in map: {}",
        go_fmt(&Value::Object(map.clone()))
    ))
}

fn no_merge_key(map: &Object, key: &str) -> PatchError {
    invalid(format!(
        "map: {} does not contain declared merge key: {key}",
        go_fmt(&Value::Object(map.clone()))
    ))
}

fn is_directive_key(k: &str) -> bool {
    k == DIRECTIVE
        || k == RETAIN_KEYS
        || k.starts_with(SET_ELEMENT_ORDER)
        || k.starts_with(DELETE_FROM_PRIMITIVE_LIST)
}

/// Merge `patch` into `out` (a map of type `ty`).
fn merge_map(mut out: Object, patch: &Object, ty: GoType) -> Result<Object, PatchError> {
    if let Some(directive) = patch.get(DIRECTIVE) {
        return match directive.as_str() {
            Some("replace") => {
                let rest: Object = patch
                    .iter()
                    .filter(|(k, _)| k.as_str() != DIRECTIVE)
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                merge_map(Object::new(), &rest, ty)
            }
            Some("delete") => Ok(Object::new()),
            _ => Err(bad_patch_type(directive, patch)),
        };
    }

    if let Some(keys) = patch.get(RETAIN_KEYS) {
        let keys = keys
            .as_array()
            .ok_or_else(|| bad_format("invalid patch format of retainKeys"))?;
        let mut retained = Vec::with_capacity(keys.len());
        for k in keys {
            retained.push(
                k.as_str()
                    .ok_or_else(|| bad_format("invalid patch format of retainKeys"))?,
            );
        }
        out.retain(|k, _| retained.contains(&k.as_str()));
    }

    // `$setElementOrder` is applied after merging, relative to the list as it
    // was before the patch, so remember that now.
    let mut orders = Vec::new();
    for (k, v) in patch {
        if let Some(field) = k.strip_prefix(SET_ELEMENT_ORDER) {
            let order = v
                .as_array()
                .ok_or_else(|| bad_format("invalid patch format of setElementOrder list"))?;
            let server = out
                .get(field)
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            orders.push((field, order, server));
        }
    }

    for (k, v) in patch {
        if let Some(field) = k.strip_prefix(DELETE_FROM_PRIMITIVE_LIST) {
            let remove = v
                .as_array()
                .ok_or_else(|| bad_format("invalid patch format of primitive list"))?;
            if let Some(Value::Array(list)) = out.get_mut(field) {
                list.retain(|item| !remove.contains(item));
            }
        }
    }

    for (k, pv) in patch {
        if is_directive_key(k) {
            continue;
        }
        if pv.is_null() {
            out.shift_remove(k);
            continue;
        }
        let field = ty.field(k);
        match out.get_mut(k) {
            Some(slot) => {
                let current = std::mem::take(slot);
                *slot = merge_value(Some(current), pv, k, &field)?;
            }
            None => {
                let value = merge_value(None, pv, k, &field)?;
                out.insert(k.clone(), value);
            }
        }
    }

    for (name, order, server) in orders {
        let ident = match ty.field(name).patch_strategy {
            PatchStrategy::MergeKey(key) => Ident::Key(key),
            PatchStrategy::MergeSet => Ident::Whole,
            // Only merging lists can be reordered; the directive is dropped.
            PatchStrategy::Replace => continue,
        };
        if let Some(Value::Array(list)) = out.get_mut(name) {
            let merged = std::mem::take(list);
            *list = normalize_order(merged, order, &server, ident);
        }
    }
    Ok(out)
}

/// Merge one patch value into the current value of a field (None: absent).
fn merge_value(
    current: Option<Value>,
    pv: &Value,
    name: &str,
    field: &Field,
) -> Result<Value, PatchError> {
    Ok(match (current, pv) {
        (Some(Value::Object(cur)), Value::Object(p)) => Value::Object(merge_map(cur, p, field.ty)?),
        (Some(Value::Array(cur)), Value::Array(p)) => {
            Value::Array(merge_list(cur, p, name, field)?)
        }
        // Absent or of another type: the patch value is taken, with its
        // directives processed and nulls dropped.
        (_, Value::Object(p)) => Value::Object(merge_map(Object::new(), p, field.ty)?),
        (_, Value::Array(p)) => Value::Array(merge_list(Vec::new(), p, name, field)?),
        (_, scalar) => scalar.clone(),
    })
}

/// How list elements are identified.
#[derive(Clone, Copy)]
enum Ident<'k> {
    /// By the value of a merge key.
    Key(&'k str),
    /// By the whole value (primitive lists).
    Whole,
}

impl Ident<'_> {
    fn of<'v>(&self, v: &'v Value) -> Option<&'v Value> {
        match self {
            Ident::Key(k) => v.as_object()?.get(*k),
            Ident::Whole => Some(v),
        }
    }

    fn index_in(&self, list: &[Value], v: &Value) -> Option<usize> {
        let id = self.of(v)?;
        list.iter().position(|e| self.of(e) == Some(id))
    }
}

#[derive(Clone, Copy, PartialEq)]
enum ElementKind {
    Object,
    Scalar,
}

/// Upstream requires all elements of the two lists to share one type.
fn element_kind(a: &[Value], b: &[Value]) -> Result<Option<ElementKind>, PatchError> {
    let mut seen: Option<&Value> = None;
    for v in a.iter().chain(b) {
        if v.is_array() {
            return Err(PatchError::Rejected(
                "lists of lists are not supported".into(),
            ));
        }
        if v.is_null() {
            continue;
        }
        match seen {
            None => seen = Some(v),
            Some(first) if std::mem::discriminant(first) != std::mem::discriminant(v) => {
                return Err(invalid(format!(
                    "list element types are not identical: {}",
                    go_fmt(&Value::Array(vec![
                        Value::Array(a.to_vec()),
                        Value::Array(b.to_vec())
                    ]))
                )))
            }
            Some(_) => {}
        }
    }
    Ok(seen.map(|v| {
        if v.is_object() {
            ElementKind::Object
        } else {
            ElementKind::Scalar
        }
    }))
}

fn merge_list(
    original: Vec<Value>,
    patch: &[Value],
    name: &str,
    field: &Field,
) -> Result<Vec<Value>, PatchError> {
    if field.patch_strategy == PatchStrategy::Replace {
        return replace_list(patch, field.ty);
    }
    if original.is_empty() && patch.is_empty() {
        return Ok(original);
    }
    match element_kind(&original, patch)? {
        Some(ElementKind::Object) => match field.patch_strategy {
            PatchStrategy::MergeKey(key) => merge_keyed_list(original, patch, key, field.ty),
            _ => Err(invalid(format!(
                "cannot merge lists without merge key for {name}"
            ))),
        },
        // Primitive elements (even under a merge key) are set-unioned.
        Some(ElementKind::Scalar) | None => Ok(merge_primitive_list(original, patch)),
    }
}

/// Replace strategy: the patch list, minus stray directive markers, with
/// its objects cleaned of nulls and directives.
fn replace_list(patch: &[Value], ty: GoType) -> Result<Vec<Value>, PatchError> {
    let mut out = Vec::with_capacity(patch.len());
    for v in patch {
        match v {
            Value::Object(m) if m.contains_key(DIRECTIVE) => {}
            Value::Object(m) => out.push(Value::Object(merge_map(Object::new(), m, ty)?)),
            other => out.push(other.clone()),
        }
    }
    Ok(out)
}

fn merge_primitive_list(original: Vec<Value>, patch: &[Value]) -> Vec<Value> {
    let mut merged: Vec<Value> = Vec::with_capacity(original.len() + patch.len());
    for v in original.iter().chain(patch) {
        if !merged.contains(v) {
            merged.push(v.clone());
        }
    }
    normalize_order(merged, patch, &original, Ident::Whole)
}

fn merge_keyed_list(
    original: Vec<Value>,
    patch: &[Value],
    key: &str,
    ty: GoType,
) -> Result<Vec<Value>, PatchError> {
    let mut server = original;
    let mut items: Vec<&Object> = Vec::with_capacity(patch.len());
    let mut replace = false;
    for v in patch {
        // element_kind() guarantees objects (nulls are skipped).
        let Some(m) = v.as_object() else { continue };
        let Some(directive) = m.get(DIRECTIVE) else {
            items.push(m);
            continue;
        };
        match directive.as_str() {
            Some("delete") => {
                let target = m.get(key).ok_or_else(|| no_merge_key(m, key))?;
                server.retain(|e| e.get(key) != Some(target));
            }
            // Other directive elements are still pruned from the list.
            Some("replace") => replace = true,
            Some("merge") => {
                return Err(invalid(
                    "merging lists cannot yet be specified in the patch",
                ))
            }
            _ => return Err(bad_patch_type(directive, m)),
        }
    }
    if replace {
        return items
            .into_iter()
            .map(|m| merge_map(Object::new(), m, ty).map(Value::Object))
            .collect();
    }

    let mut merged = server.clone();
    for m in &items {
        let id = m.get(key).ok_or_else(|| no_merge_key(m, key))?;
        match merged.iter().position(|e| e.get(key) == Some(id)) {
            Some(i) => {
                let current = match std::mem::take(&mut merged[i]) {
                    Value::Object(o) => o,
                    _ => Object::new(),
                };
                merged[i] = Value::Object(merge_map(current, m, ty)?);
            }
            None => merged.push(Value::Object(merge_map(Object::new(), m, ty)?)),
        }
    }
    let order: Vec<Value> = items.iter().map(|m| Value::Object((*m).clone())).collect();
    Ok(normalize_order(merged, &order, &server, Ident::Key(key)))
}

/// Order a merged list the way upstream does: the elements identified in
/// `patch_order` are sorted by it, the rest by `server_order`, and the two
/// runs are interleaved by live position (see `interleave`).
fn normalize_order(
    merged: Vec<Value>,
    patch_order: &[Value],
    server_order: &[Value],
    ident: Ident,
) -> Vec<Value> {
    let (mut from_patch, mut server_only): (Vec<Value>, Vec<Value>) = merged
        .into_iter()
        .partition(|v| ident.index_in(patch_order, v).is_some());
    // Stable sorts; elements not found sort first (as upstream's comparator tends to).
    from_patch.sort_by_key(|v| ident.index_in(patch_order, v));
    server_only.sort_by_key(|v| ident.index_in(server_order, v));
    interleave(server_only, from_patch, server_order, ident)
}

/// Merge two individually ordered runs. A server-only element goes first only
/// when both it and the next patch element are in the live list and it
/// comes earlier there; otherwise the patch element goes first.
fn interleave(
    server_only: Vec<Value>,
    from_patch: Vec<Value>,
    server_order: &[Value],
    ident: Ident,
) -> Vec<Value> {
    let mut out = Vec::with_capacity(server_only.len() + from_patch.len());
    let mut left = server_only.into_iter().peekable();
    let mut right = from_patch.into_iter().peekable();
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(l), Some(r)) => matches!(
                (ident.index_in(server_order, l), ident.index_in(server_order, r)),
                (Some(li), Some(ri)) if li < ri
            ),
        };
        let next = if take_left { left.next() } else { right.next() };
        out.extend(next);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn smp(kind: &str, original: Value, patch: Value) -> Value {
        strategic_merge_patch(kind, &original, &patch).unwrap()
    }

    fn pod() -> Value {
        json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p", "labels": {"app": "web", "tier": "fe"}, "finalizers": ["a", "b"]},
            "spec": {
                "containers": [
                    {"name": "c1", "image": "nginx:1", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                     "ports": [{"containerPort": 80, "protocol": "TCP"}]},
                    {"name": "c2", "image": "busybox", "args": ["sleep", "1"]}
                ],
                "volumes": [{"name": "v1", "emptyDir": {}}],
                "tolerations": [{"key": "k1", "operator": "Exists"}]
            }
        })
    }

    #[test]
    fn maps_merge_and_null_deletes() {
        let out = smp(
            "Pod",
            pod(),
            json!({"metadata": {"labels": {"tier": null, "new": "x"}, "annotations": {"a": "b"}}}),
        );
        assert_eq!(out["metadata"]["labels"], json!({"app": "web", "new": "x"}));
        assert_eq!(out["metadata"]["annotations"], json!({"a": "b"}));
        assert_eq!(out["spec"], pod()["spec"]);
    }

    #[test]
    fn nulls_inside_new_values_are_dropped() {
        let out = smp(
            "Pod",
            json!({"spec": {}}),
            json!({"spec": {"nodeSelector": {"a": "1", "b": null}}}),
        );
        assert_eq!(out, json!({"spec": {"nodeSelector": {"a": "1"}}}));
        // deleting a key that does not exist is a no-op
        assert_eq!(
            smp("Pod", json!({"a": 1}), json!({"b": null})),
            json!({"a": 1})
        );
    }

    #[test]
    fn containers_merge_by_name() {
        let out = smp(
            "Pod",
            pod(),
            json!({"spec": {"containers": [{"name": "c2", "image": "busybox:2"}]}}),
        );
        let containers = out["spec"]["containers"].as_array().unwrap();
        assert_eq!(containers.len(), 2);
        assert_eq!(containers[0]["name"], "c1");
        assert_eq!(containers[0]["image"], "nginx:1");
        assert_eq!(
            containers[1],
            json!({"name": "c2", "image": "busybox:2", "args": ["sleep", "1"]})
        );
    }

    #[test]
    fn new_keyed_element_goes_before_server_only_elements() {
        // Upstream behaviour without $setElementOrder.
        let out = smp(
            "Pod",
            pod(),
            json!({"spec": {"containers": [{"name": "c3", "image": "redis"}]}}),
        );
        let names: Vec<&str> = out["spec"]["containers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["c3", "c1", "c2"]);
        // A new element listed after an existing one follows it.
        let out = smp(
            "Pod",
            pod(),
            json!({"spec": {"containers": [{"name": "c2"}, {"name": "c3"}]}}),
        );
        let names: Vec<&str> = out["spec"]["containers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["c1", "c2", "c3"]);
    }

    #[test]
    fn set_element_order_appends_and_reorders() {
        let out = smp(
            "Pod",
            pod(),
            json!({"spec": {
                "$setElementOrder/containers": [{"name": "c1"}, {"name": "c2"}, {"name": "c3"}],
                "containers": [{"name": "c3", "image": "redis"}]
            }}),
        );
        let names: Vec<&str> = out["spec"]["containers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["c1", "c2", "c3"]);

        let out = smp(
            "Pod",
            pod(),
            json!({"spec": {"$setElementOrder/containers": [{"name": "c2"}, {"name": "c1"}]}}),
        );
        let names: Vec<&str> = out["spec"]["containers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["c2", "c1"]);
        assert!(!out["spec"]
            .as_object()
            .unwrap()
            .keys()
            .any(|k| k.starts_with('$')));

        let out = smp(
            "Pod",
            pod(),
            json!({"metadata": {"$setElementOrder/finalizers": ["b", "a"]}}),
        );
        assert_eq!(out["metadata"]["finalizers"], json!(["b", "a"]));
    }

    #[test]
    fn env_merges_by_name_inside_containers() {
        let out = smp(
            "Pod",
            pod(),
            json!({"spec": {"containers": [{"name": "c1", "env": [{"name": "B", "value": "22"}]}]}}),
        );
        assert_eq!(
            out["spec"]["containers"][0]["env"],
            json!([{"name": "A", "value": "1"}, {"name": "B", "value": "22"}])
        );
    }

    #[test]
    fn env_element_delete_directive() {
        let out = smp(
            "Pod",
            pod(),
            json!({"spec": {"containers": [{"name": "c1", "env": [{"name": "A", "$patch": "delete"}]}]}}),
        );
        assert_eq!(
            out["spec"]["containers"][0]["env"],
            json!([{"name": "B", "value": "2"}])
        );
    }

    #[test]
    fn container_ports_merge_by_container_port() {
        let out = smp(
            "Pod",
            pod(),
            json!({"spec": {"containers": [{"name": "c1", "ports": [
                {"containerPort": 80, "name": "http"}, {"containerPort": 443}
            ]}]}}),
        );
        assert_eq!(
            out["spec"]["containers"][0]["ports"],
            json!([{"containerPort": 80, "protocol": "TCP", "name": "http"}, {"containerPort": 443}])
        );
    }

    #[test]
    fn service_ports_merge_by_port() {
        let svc = json!({"spec": {"ports": [{"port": 80, "targetPort": 8080}, {"port": 443, "targetPort": 8443}]}});
        let out = smp(
            "Service",
            svc,
            json!({"spec": {"ports": [{"port": 443, "targetPort": 9443}]}}),
        );
        assert_eq!(
            out["spec"]["ports"],
            json!([{"port": 80, "targetPort": 8080}, {"port": 443, "targetPort": 9443}])
        );
    }

    #[test]
    fn ports_outside_service_or_container_are_replaced() {
        let orig = json!({"spec": {"ports": [{"port": 80}, {"port": 81}]}});
        assert_eq!(
            smp("Widget", orig, json!({"spec": {"ports": [{"port": 82}]}})),
            json!({"spec": {"ports": [{"port": 82}]}})
        );
    }

    #[test]
    fn volumes_and_mounts_and_devices() {
        let orig = json!({"spec": {"template": {"spec": {
            "volumes": [{"name": "v1", "emptyDir": {}}, {"name": "v2", "secret": {"secretName": "s"}}],
            "containers": [{"name": "c", "volumeMounts": [{"name": "v1", "mountPath": "/a"}, {"name": "v2", "mountPath": "/b"}],
                            "volumeDevices": [{"name": "d", "devicePath": "/dev/x"}]}]
        }}}});
        let patch = json!({"spec": {"template": {"spec": {
            "volumes": [{"name": "v2", "$patch": "delete"}],
            "containers": [{"name": "c", "volumeMounts": [{"mountPath": "/b", "readOnly": true}],
                            "volumeDevices": [{"devicePath": "/dev/x", "name": "d2"}]}]
        }}}});
        let out = smp("Deployment", orig, patch);
        let spec = &out["spec"]["template"]["spec"];
        assert_eq!(spec["volumes"], json!([{"name": "v1", "emptyDir": {}}]));
        assert_eq!(
            spec["containers"][0]["volumeMounts"],
            json!([{"name": "v1", "mountPath": "/a"}, {"name": "v2", "mountPath": "/b", "readOnly": true}])
        );
        assert_eq!(
            spec["containers"][0]["volumeDevices"],
            json!([{"name": "d2", "devicePath": "/dev/x"}])
        );
    }

    #[test]
    fn volume_retain_keys_switches_source() {
        let orig = json!({"spec": {"volumes": [{"name": "v", "emptyDir": {"medium": "Memory"}}]}});
        let patch = json!({"spec": {"volumes": [{"name": "v", "$retainKeys": ["name", "hostPath"], "hostPath": {"path": "/x"}}]}});
        assert_eq!(
            smp("Pod", orig, patch),
            json!({"spec": {"volumes": [{"name": "v", "hostPath": {"path": "/x"}}]}})
        );
    }

    #[test]
    fn retain_keys_on_deployment_strategy() {
        let orig = json!({"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}});
        let patch = json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}});
        assert_eq!(
            smp("Deployment", orig, patch),
            json!({"spec": {"strategy": {"type": "Recreate"}}})
        );
        let err = strategic_merge_patch(
            "Deployment",
            &json!({}),
            &json!({"spec": {"$retainKeys": "type"}}),
        )
        .unwrap_err();
        assert_eq!(
            err,
            PatchError::BadRequest("invalid patch format of retainKeys".into())
        );
    }

    #[test]
    fn image_pull_secrets_and_host_aliases() {
        let orig = json!({"spec": {
            "imagePullSecrets": [{"name": "a"}],
            "hostAliases": [{"ip": "10.0.0.1", "hostnames": ["a"]}]
        }});
        let patch = json!({"spec": {
            "imagePullSecrets": [{"name": "b"}],
            "hostAliases": [{"ip": "10.0.0.1", "hostnames": ["b"]}]
        }});
        let out = smp("Pod", orig, patch);
        assert_eq!(
            out["spec"]["imagePullSecrets"],
            json!([{"name": "b"}, {"name": "a"}])
        );
        assert_eq!(
            out["spec"]["hostAliases"],
            json!([{"ip": "10.0.0.1", "hostnames": ["b"]}])
        );
    }

    #[test]
    fn tolerations_and_taints_are_replaced() {
        let out = smp(
            "Pod",
            pod(),
            json!({"spec": {"tolerations": [{"key": "k2", "operator": "Exists"}]}}),
        );
        assert_eq!(
            out["spec"]["tolerations"],
            json!([{"key": "k2", "operator": "Exists"}])
        );
        let node = json!({"spec": {"taints": [{"key": "a", "effect": "NoSchedule"}], "podCIDRs": ["10.0.0.0/24"]}});
        let out = smp(
            "Node",
            node,
            json!({"spec": {"taints": [{"key": "b", "effect": "NoExecute"}], "podCIDRs": ["10.0.1.0/24"]}}),
        );
        assert_eq!(
            out["spec"]["taints"],
            json!([{"key": "b", "effect": "NoExecute"}])
        );
        // primitive merge list: the new value is placed before the server-only one (upstream order)
        assert_eq!(
            out["spec"]["podCIDRs"],
            json!(["10.0.1.0/24", "10.0.0.0/24"])
        );
    }

    #[test]
    fn args_are_replaced() {
        let out = smp(
            "Pod",
            pod(),
            json!({"spec": {"containers": [{"name": "c2", "args": ["sleep", "2"]}]}}),
        );
        assert_eq!(out["spec"]["containers"][1]["args"], json!(["sleep", "2"]));
    }

    #[test]
    fn status_conditions_merge_by_type_for_many_kinds() {
        for kind in [
            "Pod",
            "Node",
            "PersistentVolumeClaim",
            "Deployment",
            "DaemonSet",
            "Namespace",
            "Widget",
        ] {
            let orig = json!({"status": {"conditions": [
                {"type": "Ready", "status": "False"}, {"type": "Other", "status": "True"}
            ]}});
            let patch = json!({"status": {"conditions": [{"type": "Ready", "status": "True", "reason": "Ok"}]}});
            assert_eq!(
                smp(kind, orig, patch)["status"]["conditions"],
                json!([{"type": "Ready", "status": "True", "reason": "Ok"}, {"type": "Other", "status": "True"}]),
                "kind {kind}"
            );
        }
    }

    #[test]
    fn node_addresses_merge_by_type() {
        let orig = json!({"status": {"addresses": [{"type": "InternalIP", "address": "10.0.0.1"}, {"type": "Hostname", "address": "n1"}]}});
        let out = smp(
            "Node",
            orig,
            json!({"status": {"addresses": [{"type": "InternalIP", "address": "10.0.0.2"}]}}),
        );
        assert_eq!(
            out["status"]["addresses"],
            json!([{"type": "InternalIP", "address": "10.0.0.2"}, {"type": "Hostname", "address": "n1"}])
        );
    }

    #[test]
    fn pod_status_lists() {
        let orig = json!({"status": {
            "podIPs": [{"ip": "10.0.0.1"}],
            "containerStatuses": [{"name": "c1", "ready": false}, {"name": "c2", "ready": false}]
        }});
        let patch = json!({"status": {
            "podIPs": [{"ip": "fd00::1"}],
            "containerStatuses": [{"name": "c1", "ready": true}]
        }});
        let out = smp("Pod", orig, patch);
        assert_eq!(
            out["status"]["podIPs"],
            json!([{"ip": "fd00::1"}, {"ip": "10.0.0.1"}])
        );
        // containerStatuses has no patch strategy: replaced
        assert_eq!(
            out["status"]["containerStatuses"],
            json!([{"name": "c1", "ready": true}])
        );
    }

    #[test]
    fn owner_references_merge_by_uid() {
        let orig = json!({"metadata": {"ownerReferences": [{"uid": "u1", "name": "a", "kind": "ReplicaSet"}]}});
        let patch = json!({"metadata": {"ownerReferences": [{"uid": "u1", "controller": true}, {"uid": "u2", "name": "b"}]}});
        assert_eq!(
            smp("Pod", orig, patch)["metadata"]["ownerReferences"],
            json!([{"uid": "u1", "name": "a", "kind": "ReplicaSet", "controller": true}, {"uid": "u2", "name": "b"}])
        );
    }

    #[test]
    fn finalizers_are_set_unioned() {
        let out = smp(
            "Pod",
            pod(),
            json!({"metadata": {"finalizers": ["b", "c"]}}),
        );
        assert_eq!(out["metadata"]["finalizers"], json!(["a", "b", "c"]));
    }

    #[test]
    fn delete_from_primitive_list() {
        let out = smp(
            "Pod",
            pod(),
            json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}}),
        );
        assert_eq!(out["metadata"]["finalizers"], json!(["b"]));
        // on an absent list it is a no-op and leaves nothing behind
        let out = smp(
            "Pod",
            json!({"metadata": {}}),
            json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}}),
        );
        assert_eq!(out, json!({"metadata": {}}));
        let err = strategic_merge_patch(
            "Pod",
            &pod(),
            &json!({"metadata": {"$deleteFromPrimitiveList/finalizers": "a"}}),
        );
        assert_eq!(
            err,
            Err(PatchError::BadRequest(
                "invalid patch format of primitive list".into()
            ))
        );
    }

    #[test]
    fn patch_replace_on_map() {
        let out = smp(
            "Pod",
            pod(),
            json!({"metadata": {"labels": {"$patch": "replace", "only": "this"}}}),
        );
        assert_eq!(out["metadata"]["labels"], json!({"only": "this"}));
        assert_eq!(out["metadata"]["name"], "p");
    }

    #[test]
    fn patch_replace_inside_list() {
        let out = smp(
            "Pod",
            pod(),
            json!({"spec": {"containers": [{"$patch": "replace"}, {"name": "solo", "image": "x"}]}}),
        );
        assert_eq!(
            out["spec"]["containers"],
            json!([{"name": "solo", "image": "x"}])
        );
    }

    #[test]
    fn patch_delete_on_map_and_list_element() {
        let out = smp(
            "Pod",
            pod(),
            json!({"metadata": {"labels": {"$patch": "delete"}}}),
        );
        assert_eq!(out["metadata"]["labels"], json!({}));
        let out = smp(
            "Pod",
            pod(),
            json!({"spec": {"containers": [{"name": "c1", "$patch": "delete"}]}}),
        );
        assert_eq!(out["spec"]["containers"].as_array().unwrap().len(), 1);
        assert_eq!(out["spec"]["containers"][0]["name"], "c2");
        // deleting an element without its merge key is an error
        let err = strategic_merge_patch(
            "Pod",
            &pod(),
            &json!({"spec": {"containers": [{"$patch": "delete"}]}}),
        )
        .unwrap_err();
        assert_eq!(
            err,
            PatchError::Internal(
                "map: map[$patch:delete] does not contain declared merge key: name".into()
            )
        );
    }

    #[test]
    fn directives_never_reach_the_result_for_absent_fields() {
        let out = smp(
            "Pod",
            json!({}),
            json!({
                "metadata": {"labels": {"$patch": "replace", "a": "1"}, "$setElementOrder/finalizers": ["x"]},
                "spec": {
                    "containers": [{"name": "c", "env": [{"name": "X", "$patch": "delete"}]}, {"$patch": "replace"}],
                    "tolerations": [{"$patch": "replace"}, {"key": "k"}]
                }
            }),
        );
        assert_eq!(
            out,
            json!({
                "metadata": {"labels": {"a": "1"}},
                "spec": {"containers": [{"name": "c", "env": []}], "tolerations": [{"key": "k"}]}
            })
        );
    }

    #[test]
    fn unknown_directive_and_bad_input_errors() {
        let err = strategic_merge_patch("Pod", &pod(), &json!({"metadata": {"$patch": "explode"}}))
            .unwrap_err();
        assert_eq!(
            err,
            PatchError::Internal("unknown patch type: explode in map: map[$patch:explode]".into())
        );
        let err = strategic_merge_patch(
            "Pod",
            &pod(),
            &json!({"spec": {"containers": [{"$patch": "merge"}]}}),
        )
        .unwrap_err();
        assert_eq!(
            err,
            PatchError::Internal("merging lists cannot yet be specified in the patch".into())
        );
        let err = strategic_merge_patch(
            "Pod",
            &pod(),
            &json!({"spec": {"containers": [{"image": "x"}]}}),
        )
        .unwrap_err();
        assert_eq!(
            err,
            PatchError::Internal(
                "map: map[image:x] does not contain declared merge key: name".into()
            )
        );
        let err = strategic_merge_patch("Pod", &pod(), &json!([1])).unwrap_err();
        assert_eq!(
            err,
            PatchError::BadRequest(
                "json: cannot unmarshal array into Go value of type map[string]interface {}".into()
            )
        );
        let err = strategic_merge_patch(
            "Pod",
            &pod(),
            &json!({"metadata": {"finalizers": [{"a": 1}]}}),
        )
        .unwrap_err();
        assert_eq!(
            err,
            PatchError::Internal("list element types are not identical: [[a b] [map[a:1]]]".into())
        );
        let err = strategic_merge_patch("Pod", &pod(), &json!({"spec": {"containers": [[1]]}}))
            .unwrap_err();
        assert_eq!(
            err,
            PatchError::Rejected("lists of lists are not supported".into())
        );
    }

    #[test]
    fn type_change_takes_patch_value() {
        assert_eq!(
            smp("Pod", json!({"a": "x"}), json!({"a": {"b": 1, "c": null}})),
            json!({"a": {"b": 1}})
        );
        assert_eq!(
            smp("Pod", json!({"a": {"b": 1}}), json!({"a": 5})),
            json!({"a": 5})
        );
    }

    #[test]
    fn cronjob_nested_template() {
        let orig = json!({"spec": {"jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "a", "image": "1"}, {"name": "b", "image": "1"}]}}}}}});
        let patch = json!({"spec": {"jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "b", "image": "2"}]}}}}}});
        assert_eq!(
            smp("CronJob", orig, patch)["spec"]["jobTemplate"]["spec"]["template"]["spec"]
                ["containers"],
            json!([{"name": "a", "image": "1"}, {"name": "b", "image": "2"}])
        );
    }

    #[test]
    fn topology_spread_and_scheduling_gates() {
        let orig = json!({"spec": {
            "topologySpreadConstraints": [{"topologyKey": "zone", "maxSkew": 1}],
            "schedulingGates": [{"name": "g1"}, {"name": "g2"}]
        }});
        let patch = json!({"spec": {
            "topologySpreadConstraints": [{"topologyKey": "zone", "maxSkew": 2}],
            "schedulingGates": [{"name": "g1", "$patch": "delete"}]
        }});
        let out = smp("Pod", orig, patch);
        assert_eq!(
            out["spec"]["topologySpreadConstraints"],
            json!([{"topologyKey": "zone", "maxSkew": 2}])
        );
        assert_eq!(out["spec"]["schedulingGates"], json!([{"name": "g2"}]));
    }

    #[test]
    fn service_account_secrets_merge_by_name() {
        let orig = json!({"secrets": [{"name": "a"}], "imagePullSecrets": [{"name": "x"}]});
        let out = smp(
            "ServiceAccount",
            orig,
            json!({"secrets": [{"name": "b"}], "imagePullSecrets": [{"name": "y"}]}),
        );
        assert_eq!(out["secrets"], json!([{"name": "b"}, {"name": "a"}]));
        assert_eq!(out["imagePullSecrets"], json!([{"name": "y"}]));
    }

    #[test]
    fn keyed_list_order_follows_patch_for_shared_items() {
        // design-doc example: live [B, C, A], patch [A', B', D] => [C, A', B', D]
        let orig = json!({"spec": {"containers": [{"name": "B"}, {"name": "C"}, {"name": "A"}]}});
        let patch = json!({"spec": {"containers": [{"name": "A", "x": 1}, {"name": "B", "x": 1}, {"name": "D"}]}});
        let out = smp("Pod", orig, patch);
        assert_eq!(
            out["spec"]["containers"],
            json!([{"name": "C"}, {"name": "A", "x": 1}, {"name": "B", "x": 1}, {"name": "D"}])
        );
    }

    #[test]
    fn init_and_ephemeral_containers_and_host_ips() {
        for kind in [
            "DaemonSet",
            "StatefulSet",
            "Job",
            "ReplicaSet",
            "ReplicationController",
        ] {
            let orig = json!({"spec": {"template": {"spec": {
                "initContainers": [{"name": "i1", "image": "a"}, {"name": "i2", "image": "a"}],
                "ephemeralContainers": [{"name": "e1", "image": "a"}]
            }}}});
            let patch = json!({"spec": {"template": {"spec": {
                "initContainers": [{"name": "i1", "image": "b"}],
                "ephemeralContainers": [{"name": "e1", "image": "b"}]
            }}}});
            let spec = smp(kind, orig, patch)["spec"]["template"]["spec"].clone();
            assert_eq!(
                spec["initContainers"],
                json!([{"name": "i1", "image": "b"}, {"name": "i2", "image": "a"}]),
                "{kind}"
            );
            assert_eq!(
                spec["ephemeralContainers"],
                json!([{"name": "e1", "image": "b"}]),
                "{kind}"
            );
        }
        let out = smp(
            "Pod",
            json!({"status": {"hostIPs": [{"ip": "a"}, {"ip": "b"}]}}),
            json!({"status": {"hostIPs": [{"ip": "b", "x": 1}]}}),
        );
        assert_eq!(
            out["status"]["hostIPs"],
            json!([{"ip": "a"}, {"ip": "b", "x": 1}])
        );
    }

    #[test]
    fn pod_template_kind() {
        let orig = json!({"template": {"spec": {"containers": [{"name": "a", "image": "1"}]}}});
        let out = smp(
            "PodTemplate",
            orig,
            json!({"template": {"spec": {"containers": [{"name": "a", "image": "2"}]}}}),
        );
        assert_eq!(
            out,
            json!({"template": {"spec": {"containers": [{"name": "a", "image": "2"}]}}})
        );
    }

    #[test]
    fn top_level_null_patch_is_noop() {
        assert_eq!(smp("Pod", pod(), Value::Null), pod());
        assert_eq!(smp("Pod", pod(), json!({})), pod());
    }
}
