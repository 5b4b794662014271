//! Server-side apply and `metadata.managedFields` bookkeeping.
//!
//! Ownership is tracked per manager in `metadata.managedFields` entries
//! (`{manager, operation, apiVersion, time, fieldsType: "FieldsV1",
//! fieldsV1}`) with the real `FieldsV1` encoding (see `fieldset.rs`). A
//! manager is identified by (manager, operation, subresource), plus
//! apiVersion for `Update` entries, as upstream.
//!
//! Apply (`server_side_apply`):
//! 1. The applied configuration's set is every leaf it sets, every element
//!    of an associative list (`k:{..}`, plus its key fields), every value of
//!    a set list (`v:..`) and every atomic list. `apiVersion`, `kind`,
//!    `metadata.{name, namespace, uid, resourceVersion, generation,
//!    creationTimestamp, selfLink, managedFields}` are never owned.
//! 2. The configuration is merged into the live object: maps recursively,
//!    associative lists by key (upstream interleaving order: applied order
//!    for the applied elements, live-only elements kept in place), set lists
//!    by value, everything else replaced.
//! 3. Any field owned by another manager whose value the merge changes is a
//!    conflict: an error in the apiserver's words unless `force`, in which
//!    case the field leaves the other manager's set. Equal values are shared.
//! 4. Fields in the applier's previous Apply set that are missing from the
//!    new one are removed from the object unless another manager owns them
//!    (or something below them); key fields of kept elements always stay.
//!    Maps and lists emptied by that removal are pruned.
//! 5. The applier's Apply entry is replaced by the new set; entries with an
//!    empty set are dropped; entries are sorted as upstream (operation, time,
//!    manager, apiVersion, subresource).
//!
//! An existing object without managedFields is first attributed to the
//! manager `before-first-apply` (operation Update), as upstream does.
//!
//! Simplifications (documented, deliberate):
//! * `null` in an applied configuration means "not specified".
//! * `metadata.managedFields`, `resourceVersion`, `uid`,
//!   `creationTimestamp`, `generation`, `selfLink`, `deletionTimestamp` and
//!   `deletionGracePeriodSeconds` in the applied object are dropped before
//!   merging; the live values are kept (upstream rejects a non-nil
//!   managedFields with 400 "metadata.managedFields must be nil"; the server
//!   layer may check that itself).
//! * All maps are granular (upstream treats a few, like `nodeSelector`, as
//!   atomic) and structs are never atomic; list types come from the table in
//!   `schema.rs`; unknown kinds only know `metadata` and `status.conditions`.
//! * No schema defaulting beyond list-map keys (`protocol` defaults to TCP),
//!   no conversion between API versions, no last-applied-configuration
//!   migration for `kubectl`, no cap on the number of Update managers, no
//!   subresource entries.
//! * A no-op apply leaves the entry's `time` unchanged, so the result equals
//!   the live object.
//!
//! Update (`record_update`): the writer's Update entry gains every member
//! path whose value is new or changed, which is removed from every other
//! manager; paths that disappeared are dropped from every set. Upstream also
//! records newly created maps as members (`".": {}` on `f:labels`); here
//! Update sets have the same shape as Apply sets (leaves and elements).
//! `managedFields: [{}]` in the new object clears all tracking, as upstream.

use super::fieldset::{self, FieldSet, Path};
use super::schema::{Field, GoType, ListType};
use super::PatchError;
use serde_json::{Map, Value};

const APPLY: &str = "Apply";
const UPDATE: &str = "Update";
const BEFORE_FIRST_APPLY: &str = "before-first-apply";

/// Metadata the server owns; dropped from applied configurations.
const SERVER_METADATA: &[&str] = &[
    "managedFields",
    "resourceVersion",
    "uid",
    "creationTimestamp",
    "generation",
    "selfLink",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
];

#[derive(Clone, Debug, PartialEq)]
struct Entry {
    manager: String,
    operation: String,
    api_version: String,
    time: Option<String>,
    subresource: Option<String>,
    fields: FieldSet,
}

impl Entry {
    fn parse(v: &Value) -> Option<Entry> {
        let m = v.as_object()?;
        let text = |k: &str| m.get(k).and_then(Value::as_str).map(str::to_owned);
        Some(Entry {
            manager: text("manager").unwrap_or_default(),
            operation: text("operation").unwrap_or_default(),
            api_version: text("apiVersion").unwrap_or_default(),
            time: text("time"),
            subresource: text("subresource").filter(|s| !s.is_empty()),
            fields: m
                .get("fieldsV1")
                .map(FieldSet::from_fields_v1)
                .unwrap_or_default(),
        })
    }

    fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("manager".into(), Value::String(self.manager.clone()));
        m.insert("operation".into(), Value::String(self.operation.clone()));
        m.insert("apiVersion".into(), Value::String(self.api_version.clone()));
        if let Some(t) = &self.time {
            m.insert("time".into(), Value::String(t.clone()));
        }
        m.insert("fieldsType".into(), Value::String("FieldsV1".into()));
        m.insert("fieldsV1".into(), self.fields.to_fields_v1());
        if let Some(s) = &self.subresource {
            m.insert("subresource".into(), Value::String(s.clone()));
        }
        Value::Object(m)
    }

    /// Same manager identity (ignoring subresource entries, which are
    /// never ours).
    fn is(&self, manager: &str, operation: &str, api_version: &str) -> bool {
        self.manager == manager
            && self.operation == operation
            && self.subresource.is_none()
            && (operation == APPLY || self.api_version == api_version)
    }

    /// How conflict messages name the manager.
    fn display(&self) -> String {
        if self.operation == UPDATE {
            format!("\"{}\" using {}", self.manager, self.api_version)
        } else {
            format!("\"{}\"", self.manager)
        }
    }
}

fn managed_fields(obj: &Value) -> Option<&Vec<Value>> {
    obj.get("metadata")?.get("managedFields")?.as_array()
}

fn parse_entries(list: &[Value]) -> Vec<Entry> {
    list.iter().filter_map(Entry::parse).collect()
}

/// Store `entries` (dropping empty ones, sorted as upstream) in `obj`.
fn write_entries(obj: &mut Value, mut entries: Vec<Entry>) {
    entries.retain(|e| !e.fields.is_empty());
    entries.sort_by(|a, b| {
        (
            &a.operation,
            &a.time,
            &a.manager,
            &a.api_version,
            &a.subresource,
        )
            .cmp(&(
                &b.operation,
                &b.time,
                &b.manager,
                &b.api_version,
                &b.subresource,
            ))
    });
    let Value::Object(root) = obj else { return };
    if entries.is_empty() {
        if let Some(Value::Object(metadata)) = root.get_mut("metadata") {
            metadata.shift_remove("managedFields");
        }
        return;
    }
    let metadata = root
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(metadata) = metadata {
        metadata.insert(
            "managedFields".into(),
            Value::Array(entries.iter().map(Entry::to_json).collect()),
        );
    }
}

fn api_version_of(obj: &Value) -> Option<&str> {
    obj.get("apiVersion").and_then(Value::as_str)
}

/// Whether going from `before` to `after` changes the member at `path`.
/// Elements and maps count as changed only when added or removed; their
/// contents are judged by their own member paths.
fn changed(before: Option<&Value>, after: Option<&Value>, path: &[String]) -> bool {
    match (before, after) {
        (None, None) => false,
        (Some(a), Some(b)) => {
            !(fieldset::is_element(path) || (a.is_object() && b.is_object()) || a == b)
        }
        _ => true,
    }
}

fn strip_nulls(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), strip_nulls(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(strip_nulls).collect()),
        other => other.clone(),
    }
}

/// Merge an applied configuration into the live value.
fn merge_into(live: &mut Value, applied: &Value, field: &Field) {
    match (live, applied) {
        (Value::Object(l), Value::Object(a)) => {
            for (k, av) in a {
                let f = field.ty.field(k);
                match l.get_mut(k) {
                    Some(slot) => merge_into(slot, av, &f),
                    None => {
                        l.insert(k.clone(), av.clone());
                    }
                }
            }
        }
        (Value::Array(l), Value::Array(a)) => merge_list(l, a, field),
        (slot, av) => *slot = av.clone(),
    }
}

/// Identity of list elements for merging, per list type.
fn list_identities(items: &[Value], field: &Field) -> Option<Vec<Option<Value>>> {
    match field.list_type {
        ListType::Atomic => None,
        ListType::Set => {
            if items.iter().any(|e| e.is_object() || e.is_array()) {
                return None;
            }
            Some(items.iter().map(|e| Some(e.clone())).collect())
        }
        ListType::Map(keys) => Some(
            items
                .iter()
                .map(|e| fieldset::element_key(e, keys).ok().map(Value::Object))
                .collect(),
        ),
    }
}

fn merge_list(live: &mut Vec<Value>, applied: &[Value], field: &Field) {
    let (Some(live_ids), Some(applied_ids)) = (
        list_identities(live, field),
        list_identities(applied, field),
    ) else {
        *live = applied.to_vec();
        return;
    };
    if applied_ids.iter().any(Option::is_none) {
        // Not a valid associative list (rejected earlier for applied configs).
        *live = applied.to_vec();
        return;
    }
    // Pair each applied element with the first unused live element of equal key.
    let mut used = vec![false; live.len()];
    let matches: Vec<Option<usize>> = applied_ids
        .iter()
        .map(|id| {
            let j = live_ids
                .iter()
                .enumerate()
                .position(|(j, l)| !used[j] && l.is_some() && l == id)?;
            used[j] = true;
            Some(j)
        })
        .collect();

    // Applied elements in applied order; live-only elements stay where they
    // were relative to the shared ones that follow them.
    let mut out = Vec::with_capacity(live.len() + applied.len());
    let mut li = 0;
    for (av, matched) in applied.iter().zip(&matches) {
        // Live-only elements before this element's live position come first
        // (shared ones passed on the way are emitted at their applied turn)...
        if let Some(j) = matched {
            while li < *j {
                if !used[li] {
                    out.push(live[li].clone());
                }
                li += 1;
            }
        }
        // ...and so do live-only elements directly at the cursor.
        while li < live.len() && !used[li] {
            out.push(live[li].clone());
            li += 1;
        }
        match matched {
            Some(j) => {
                let mut item = live[*j].clone();
                merge_into(&mut item, av, field);
                out.push(item);
            }
            None => out.push(av.clone()),
        }
    }
    out.extend(
        live.iter()
            .enumerate()
            .skip(li)
            .filter(|(j, _)| !used[*j])
            .map(|(_, v)| v.clone()),
    );
    *live = out;
}

/// Remove `path` and then any ancestors the removal left empty and that
/// nobody owns.
fn remove_and_prune(obj: &mut Value, path: &[String], owned: &FieldSet) {
    if !fieldset::remove(obj, path) {
        return;
    }
    for len in (1..path.len()).rev() {
        let ancestor = &path[..len];
        let empty = match fieldset::get(obj, ancestor) {
            Some(Value::Object(m)) => m.is_empty(),
            Some(Value::Array(a)) => a.is_empty(),
            _ => false,
        };
        if !empty || owned.contains(ancestor) {
            break;
        }
        fieldset::remove(obj, ancestor);
    }
}

fn conflict_error(entries: &[Entry], conflicts: &[(usize, Path)]) -> PatchError {
    let mut parts = Vec::new();
    let mut fields = Vec::new();
    for (i, entry) in entries.iter().enumerate() {
        let paths: Vec<String> = conflicts
            .iter()
            .filter(|(e, _)| *e == i)
            .map(|(_, p)| fieldset::display(p))
            .collect();
        match paths.as_slice() {
            [] => continue,
            [one] => parts.push(format!("conflict with {}: {one}", entry.display())),
            many => {
                let list: String = many.iter().map(|p| format!("\n- {p}")).collect();
                parts.push(format!("conflicts with {}:{list}", entry.display()));
            }
        }
        fields.extend(paths);
    }
    let n = conflicts.len();
    let message = format!(
        "Apply failed with {n} conflict{}: {}",
        if n == 1 { "" } else { "s" },
        parts.join("\n")
    );
    PatchError::Conflict { message, fields }
}

/// `group/version` as printed in apiserver errors (`/v1` for the core group).
fn group_version(api_version: &str) -> String {
    if api_version.contains('/') {
        api_version.to_owned()
    } else {
        format!("/{api_version}")
    }
}

fn without_managed_fields(obj: &Value) -> Value {
    let mut obj = obj.clone();
    if let Some(Value::Object(md)) = obj.get_mut("metadata") {
        md.shift_remove("managedFields");
    }
    obj
}

/// Server-side apply of `applied` (already parsed from YAML/JSON) by field manager `manager`.
/// `live` is None when the object does not exist yet. Returns the new object including updated metadata.managedFields.
pub fn server_side_apply(
    kind: &str,
    live: Option<&Value>,
    applied: &Value,
    manager: &str,
    force: bool,
    now: &str,
) -> Result<Value, PatchError> {
    if !applied.is_object() {
        return Err(PatchError::Invalid(
            "applied configuration must be a JSON object".into(),
        ));
    }
    let live_obj = match live {
        None => Value::Object(Map::new()),
        Some(v @ Value::Object(_)) => v.clone(),
        Some(_) => {
            return Err(PatchError::Invalid(
                "live object is not a JSON object".into(),
            ))
        }
    };
    let ty = GoType::root(kind);
    let root = Field::of(ty);
    let api_version = api_version_of(applied)
        .or_else(|| api_version_of(&live_obj))
        .unwrap_or_default()
        .to_owned();

    let mut config = strip_nulls(applied);
    if let Some(Value::Object(md)) = config.get_mut("metadata") {
        md.retain(|k, _| !SERVER_METADATA.contains(&k.as_str()));
    }
    let prefix = format!(
        "failed to create typed patch object ({}, Kind={kind})",
        group_version(&api_version)
    );
    let applied_fields: FieldSet = fieldset::collect(&config, ty, Some(&prefix))?
        .into_keys()
        .collect();

    let mut entries = managed_fields(&live_obj)
        .map(|l| parse_entries(l))
        .unwrap_or_default();
    if live.is_some() && entries.is_empty() {
        // Attribute what exists to a synthetic manager, as upstream does.
        let existing: FieldSet = fieldset::collect(&live_obj, ty, None)?
            .into_keys()
            .collect();
        entries.push(Entry {
            manager: BEFORE_FIRST_APPLY.into(),
            operation: UPDATE.into(),
            api_version: api_version_of(&live_obj).unwrap_or(&api_version).to_owned(),
            time: Some(now.to_owned()),
            subresource: None,
            fields: existing,
        });
    }
    let is_me = |e: &Entry| e.is(manager, APPLY, "");

    let mut merged = live_obj.clone();
    merge_into(&mut merged, &config, &root);

    let mut conflicts: Vec<(usize, Path)> = Vec::new();
    for (i, e) in entries.iter().enumerate().filter(|(_, e)| !is_me(e)) {
        for p in e.fields.iter() {
            if changed(fieldset::get(&live_obj, p), fieldset::get(&merged, p), p) {
                conflicts.push((i, p.clone()));
            }
        }
    }
    if !conflicts.is_empty() {
        if !force {
            return Err(conflict_error(&entries, &conflicts));
        }
        for (i, p) in &conflicts {
            entries[*i].fields.remove(p);
        }
    }

    let previous = entries
        .iter()
        .find(|e| is_me(e))
        .map(|e| e.fields.clone())
        .unwrap_or_default();
    let mut others = FieldSet::default();
    for e in entries.iter().filter(|e| !is_me(e)) {
        others.extend(e.fields.iter());
    }
    let mut owned = others.clone();
    owned.extend(applied_fields.iter());
    for p in previous.iter() {
        if applied_fields.contains(p) || others.covers(p) || fieldset::is_key_field(p) {
            continue;
        }
        remove_and_prune(&mut merged, p, &owned);
    }

    let unchanged = live.is_some()
        && conflicts.is_empty()
        && previous == applied_fields
        && without_managed_fields(&merged) == without_managed_fields(&live_obj);
    match entries.iter_mut().find(|e| is_me(e)) {
        Some(e) => {
            e.fields = applied_fields;
            e.api_version = api_version;
            if !unchanged {
                e.time = Some(now.to_owned());
            }
        }
        None => entries.push(Entry {
            manager: manager.to_owned(),
            operation: APPLY.into(),
            api_version,
            time: Some(now.to_owned()),
            subresource: None,
            fields: applied_fields,
        }),
    }
    write_entries(&mut merged, entries);
    Ok(merged)
}

/// Record an ordinary (non-apply) write by `manager` (operation "Update") in new.metadata.managedFields:
/// fields changed between old and new become owned by manager and are removed from other managers' sets.
pub fn record_update(kind: &str, old: Option<&Value>, new: &mut Value, manager: &str, now: &str) {
    if !new.is_object() {
        return;
    }
    let ty = GoType::root(kind);
    let api_version = api_version_of(new).unwrap_or_default().to_owned();

    let provided = managed_fields(new);
    if provided.is_some_and(|l| l.len() == 1 && l[0].as_object().is_some_and(Map::is_empty)) {
        // `[{}]` is the documented way to strip all managed fields.
        write_entries(new, Vec::new());
        return;
    }
    let mut entries = match provided {
        // A client-supplied, non-empty list replaces the stored one.
        Some(list) if !list.is_empty() => parse_entries(list),
        _ => old
            .and_then(managed_fields)
            .map(|l| parse_entries(l))
            .unwrap_or_default(),
    };

    let empty = Value::Object(Map::new());
    let old_obj = old.filter(|o| o.is_object()).unwrap_or(&empty);
    // Members equal in old and new (at the top and in metadata) can neither be touched nor
    // removed, so they are not collected: a status write then walks only the status.
    let same_top = equal_members(Some(old_obj), Some(&*new));
    let same_meta = equal_members(old_obj.get("metadata"), new.get("metadata"));
    let skip = |parent: &[String], key: &str| match parent {
        [] => same_top.contains(key),
        [only] if only == "f:metadata" => same_meta.contains(key),
        _ => false,
    };
    // Lenient collection never fails.
    let old_fields = fieldset::collect_except(old_obj, ty, None, &skip).unwrap_or_default();
    let new_fields = fieldset::collect_except(new, ty, None, &skip).unwrap_or_default();
    let touched: FieldSet = new_fields
        .iter()
        .filter(|(p, v)| changed(fieldset::get(old_obj, p), Some(v), p))
        .map(|(p, _)| p.clone())
        .collect();
    let removed: Vec<Path> = old_fields
        .keys()
        .filter(|p| !new_fields.contains_key(*p))
        .cloned()
        .collect();

    if !touched.is_empty() || !removed.is_empty() {
        let is_me = |e: &Entry| e.is(manager, UPDATE, &api_version);
        for e in entries.iter_mut() {
            if !is_me(e) {
                for p in touched.iter().chain(&removed) {
                    e.fields.remove(p);
                }
            }
        }
        let mine = match entries.iter().position(is_me) {
            Some(i) => &mut entries[i],
            None => {
                entries.push(Entry {
                    manager: manager.to_owned(),
                    operation: UPDATE.into(),
                    api_version: api_version.clone(),
                    time: None,
                    subresource: None,
                    fields: FieldSet::default(),
                });
                let last = entries.len() - 1;
                &mut entries[last]
            }
        };
        mine.fields.extend(touched.iter());
        for p in &removed {
            mine.fields.remove(p);
        }
        mine.time = Some(now.to_owned());
    }
    write_entries(new, entries);
}

/// Keys whose values are equal in both maps.
fn equal_members(old: Option<&Value>, new: Option<&Value>) -> std::collections::HashSet<String> {
    match (
        old.and_then(Value::as_object),
        new.and_then(Value::as_object),
    ) {
        (Some(o), Some(n)) => n
            .iter()
            .filter(|(k, v)| o.get(*k) == Some(*v))
            .map(|(k, _)| k.clone())
            .collect(),
        _ => Default::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const T0: &str = "2024-01-01T00:00:00Z";
    const T1: &str = "2024-01-01T00:01:00Z";
    const T2: &str = "2024-01-01T00:02:00Z";

    fn deployment(replicas: i64, image: &str) -> Value {
        json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
            "spec": {
                "replicas": replicas,
                "template": {"spec": {"containers": [{"name": "nginx", "image": image}]}}
            }
        })
    }

    fn mf(obj: &Value) -> &Value {
        &obj["metadata"]["managedFields"]
    }

    #[test]
    fn create_via_apply_records_fields_v1() {
        let out = server_side_apply(
            "Deployment",
            None,
            &deployment(2, "nginx:1"),
            "kubectl",
            false,
            T0,
        )
        .unwrap();
        assert_eq!(out["spec"]["replicas"], 2);
        assert_eq!(
            mf(&out),
            &json!([{
                "manager": "kubectl",
                "operation": "Apply",
                "apiVersion": "apps/v1",
                "time": T0,
                "fieldsType": "FieldsV1",
                "fieldsV1": {
                    "f:metadata": {"f:labels": {"f:app": {}}},
                    "f:spec": {
                        "f:replicas": {},
                        "f:template": {"f:spec": {"f:containers": {
                            "k:{\"name\":\"nginx\"}": {".": {}, "f:image": {}, "f:name": {}}
                        }}}
                    }
                }
            }])
        );
        // the object itself is the applied config (plus managedFields)
        assert_eq!(without_managed_fields(&out), deployment(2, "nginx:1"));
    }

    #[test]
    fn reapply_same_config_is_a_noop() {
        let live = server_side_apply(
            "Deployment",
            None,
            &deployment(2, "nginx:1"),
            "kubectl",
            false,
            T0,
        )
        .unwrap();
        let again = server_side_apply(
            "Deployment",
            Some(&live),
            &deployment(2, "nginx:1"),
            "kubectl",
            false,
            T1,
        )
        .unwrap();
        assert_eq!(again, live);
    }

    #[test]
    fn conflict_with_update_manager() {
        let mut live = deployment(2, "nginx:1");
        record_update(
            "Deployment",
            None,
            &mut live,
            "kubectl-client-side-apply",
            T0,
        );
        let err = server_side_apply(
            "Deployment",
            Some(&live),
            &deployment(3, "nginx:1"),
            "ssa",
            false,
            T1,
        )
        .unwrap_err();
        assert_eq!(
            err,
            PatchError::Conflict {
                message: "Apply failed with 1 conflict: conflict with \"kubectl-client-side-apply\" using apps/v1: .spec.replicas".into(),
                fields: vec![".spec.replicas".into()],
            }
        );
    }

    #[test]
    fn multiple_conflicts_message() {
        let mut live = deployment(2, "nginx:1");
        record_update("Deployment", None, &mut live, "kubectl-edit", T0);
        let err = server_side_apply(
            "Deployment",
            Some(&live),
            &deployment(3, "nginx:2"),
            "ssa",
            false,
            T1,
        )
        .unwrap_err();
        assert_eq!(
            err,
            PatchError::Conflict {
                message: "Apply failed with 2 conflicts: conflicts with \"kubectl-edit\" using apps/v1:\n- .spec.replicas\n- .spec.template.spec.containers[name=\"nginx\"].image".into(),
                fields: vec![".spec.replicas".into(), ".spec.template.spec.containers[name=\"nginx\"].image".into()],
            }
        );
    }

    #[test]
    fn conflict_between_two_appliers_names_apply_manager_without_version() {
        let live = server_side_apply(
            "Deployment",
            None,
            &deployment(2, "nginx:1"),
            "a",
            false,
            T0,
        )
        .unwrap();
        let err = server_side_apply(
            "Deployment",
            Some(&live),
            &json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": {"replicas": 5}}),
            "b",
            false,
            T1,
        )
        .unwrap_err();
        assert_eq!(
            err,
            PatchError::Conflict {
                message: "Apply failed with 1 conflict: conflict with \"a\": .spec.replicas".into(),
                fields: vec![".spec.replicas".into()],
            }
        );
    }

    #[test]
    fn same_value_is_shared_not_conflicting() {
        let live = server_side_apply(
            "Deployment",
            None,
            &deployment(2, "nginx:1"),
            "a",
            false,
            T0,
        )
        .unwrap();
        let partial = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": {"replicas": 2}});
        let out = server_side_apply("Deployment", Some(&live), &partial, "b", false, T1).unwrap();
        let entries = mf(&out).as_array().unwrap();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0]["manager"], "a");
        assert_eq!(entries[0]["fieldsV1"]["f:spec"]["f:replicas"], json!({}));
        assert_eq!(entries[1]["manager"], "b");
        assert_eq!(
            entries[1]["fieldsV1"],
            json!({"f:spec": {"f:replicas": {}}})
        );
        // b dropping replicas later does not remove it: a still owns it
        let empty =
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}});
        let out2 = server_side_apply("Deployment", Some(&out), &empty, "b", false, T2).unwrap();
        assert_eq!(out2["spec"]["replicas"], 2);
        assert_eq!(mf(&out2).as_array().unwrap().len(), 1);
    }

    #[test]
    fn force_takes_ownership() {
        let mut live = deployment(2, "nginx:1");
        record_update(
            "Deployment",
            None,
            &mut live,
            "kubectl-client-side-apply",
            T0,
        );
        let out = server_side_apply(
            "Deployment",
            Some(&live),
            &deployment(3, "nginx:1"),
            "ssa",
            true,
            T1,
        )
        .unwrap();
        assert_eq!(out["spec"]["replicas"], 3);
        let entries = mf(&out).as_array().unwrap();
        assert_eq!(entries[0]["manager"], "ssa");
        assert_eq!(entries[0]["operation"], "Apply");
        assert_eq!(entries[1]["manager"], "kubectl-client-side-apply");
        assert!(entries[1]["fieldsV1"]["f:spec"].get("f:replicas").is_none());
        // unchanged shared fields stay with the updater
        assert_eq!(
            entries[1]["fieldsV1"]["f:metadata"],
            json!({"f:labels": {"f:app": {}}})
        );
        assert!(entries[0]["fieldsV1"]["f:spec"].get("f:replicas").is_some());
    }

    #[test]
    fn fields_dropped_from_config_are_removed() {
        let mut cfg = deployment(2, "nginx:1");
        cfg["metadata"]["labels"]["extra"] = json!("x");
        cfg["spec"]["template"]["spec"]["containers"]
            .as_array_mut()
            .unwrap()
            .push(json!({"name": "sidecar", "image": "envoy"}));
        let live = server_side_apply("Deployment", None, &cfg, "kubectl", false, T0).unwrap();
        let out = server_side_apply(
            "Deployment",
            Some(&live),
            &deployment(2, "nginx:1"),
            "kubectl",
            false,
            T1,
        )
        .unwrap();
        assert_eq!(out["metadata"]["labels"], json!({"app": "web"}));
        assert_eq!(
            out["spec"]["template"]["spec"]["containers"],
            json!([{"name": "nginx", "image": "nginx:1"}])
        );
        assert_eq!(mf(&out)[0]["time"], T1);
    }

    #[test]
    fn dropped_field_owned_by_another_manager_is_kept() {
        let live = server_side_apply(
            "Deployment",
            None,
            &deployment(2, "nginx:1"),
            "kubectl",
            false,
            T0,
        )
        .unwrap();
        // another writer changes the image: ownership of image moves to it
        let mut updated = live.clone();
        updated["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:2");
        record_update("Deployment", Some(&live), &mut updated, "controller", T1);
        // the applier stops mentioning the container entirely
        let cfg = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "labels": {"app": "web"}}, "spec": {"replicas": 2}});
        let out =
            server_side_apply("Deployment", Some(&updated), &cfg, "kubectl", false, T2).unwrap();
        // the element survives because the controller owns a field inside it, and its key stays
        assert_eq!(
            out["spec"]["template"]["spec"]["containers"],
            json!([{"name": "nginx", "image": "nginx:2"}])
        );
    }

    #[test]
    fn emptied_maps_are_pruned() {
        let cfg = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "annotations": {"a": "1"}}, "data": {"k": "v"}});
        let live = server_side_apply("ConfigMap", None, &cfg, "m", false, T0).unwrap();
        let out = server_side_apply(
            "ConfigMap",
            Some(&live),
            &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": "v"}}),
            "m",
            false,
            T1,
        )
        .unwrap();
        assert_eq!(
            without_managed_fields(&out),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": "v"}})
        );
    }

    #[test]
    fn server_metadata_in_config_is_ignored() {
        let live = server_side_apply(
            "Deployment",
            None,
            &deployment(2, "nginx:1"),
            "kubectl",
            false,
            T0,
        )
        .unwrap();
        let mut live_with_meta = live.clone();
        live_with_meta["metadata"]["uid"] = json!("uid-1");
        live_with_meta["metadata"]["resourceVersion"] = json!("5");
        let mut cfg = deployment(2, "nginx:1");
        cfg["metadata"]["uid"] = json!("other");
        cfg["metadata"]["resourceVersion"] = json!("1");
        cfg["metadata"]["managedFields"] =
            json!([{"manager": "evil", "operation": "Apply", "fieldsV1": {"f:spec": {}}}]);
        let out = server_side_apply(
            "Deployment",
            Some(&live_with_meta),
            &cfg,
            "kubectl",
            false,
            T1,
        )
        .unwrap();
        assert_eq!(out, live_with_meta);
    }

    #[test]
    fn status_is_owned_like_any_field() {
        let live = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}});
        let mut live = live;
        record_update("Pod", None, &mut live, "kubelet", T0);
        let cfg = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                         "status": {"conditions": [{"type": "Ready", "status": "True"}]}});
        let out = server_side_apply("Pod", Some(&live), &cfg, "ctrl", false, T1).unwrap();
        assert_eq!(
            out["status"]["conditions"],
            json!([{"type": "Ready", "status": "True"}])
        );
        let entries = mf(&out).as_array().unwrap();
        assert_eq!(entries[0]["manager"], "ctrl");
        assert_eq!(
            entries[0]["fieldsV1"],
            json!({"f:status": {"f:conditions": {"k:{\"type\":\"Ready\"}": {".": {}, "f:status": {}, "f:type": {}}}}})
        );
        // another applier changing the condition status conflicts, keyed by type
        let cfg2 = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                          "status": {"conditions": [{"type": "Ready", "status": "False"}]}});
        let err = server_side_apply("Pod", Some(&out), &cfg2, "other", false, T2).unwrap_err();
        assert_eq!(
            err,
            PatchError::Conflict {
                message: "Apply failed with 1 conflict: conflict with \"ctrl\": .status.conditions[type=\"Ready\"].status".into(),
                fields: vec![".status.conditions[type=\"Ready\"].status".into()],
            }
        );
    }

    #[test]
    fn container_ports_keyed_with_default_protocol() {
        let cfg = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                         "spec": {"containers": [{"name": "c", "ports": [{"containerPort": 80}]}]}});
        let out = server_side_apply("Pod", None, &cfg, "m", false, T0).unwrap();
        assert_eq!(
            mf(&out)[0]["fieldsV1"]["f:spec"]["f:containers"]["k:{\"name\":\"c\"}"]["f:ports"],
            json!({"k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}}})
        );
        // live has the defaulted protocol; applying the same port again matches it
        let mut live = out.clone();
        live["spec"]["containers"][0]["ports"][0]["protocol"] = json!("TCP");
        let out2 = server_side_apply("Pod", Some(&live), &cfg, "m", false, T1).unwrap();
        assert_eq!(
            out2["spec"]["containers"][0]["ports"],
            json!([{"containerPort": 80, "protocol": "TCP"}])
        );
    }

    #[test]
    fn service_ports_keyed_by_port_and_protocol() {
        let cfg = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
                         "spec": {"ports": [{"port": 53, "protocol": "UDP"}, {"port": 53}]}});
        let out = server_side_apply("Service", None, &cfg, "m", false, T0).unwrap();
        assert_eq!(
            mf(&out)[0]["fieldsV1"]["f:spec"]["f:ports"],
            json!({
                "k:{\"port\":53,\"protocol\":\"TCP\"}": {".": {}, "f:port": {}},
                "k:{\"port\":53,\"protocol\":\"UDP\"}": {".": {}, "f:port": {}, "f:protocol": {}}
            })
        );
        // dropping the UDP port removes exactly that element
        let cfg2 = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {"ports": [{"port": 53}]}});
        let out2 = server_side_apply("Service", Some(&out), &cfg2, "m", false, T1).unwrap();
        assert_eq!(out2["spec"]["ports"], json!([{"port": 53}]));
    }

    #[test]
    fn finalizers_are_a_set() {
        let cfg = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "finalizers": ["a/x"]}});
        let mut live = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "finalizers": ["b/y"]}});
        record_update("ConfigMap", None, &mut live, "ctrl", T0);
        let out = server_side_apply("ConfigMap", Some(&live), &cfg, "m", false, T1).unwrap();
        assert_eq!(out["metadata"]["finalizers"], json!(["b/y", "a/x"]));
        let entries = mf(&out).as_array().unwrap();
        assert_eq!(
            entries[0]["fieldsV1"],
            json!({"f:metadata": {"f:finalizers": {"v:\"a/x\"": {}}}})
        );
        // dropping it again removes only our value
        let cfg2 = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
        let out2 = server_side_apply("ConfigMap", Some(&out), &cfg2, "m", false, T2).unwrap();
        assert_eq!(out2["metadata"]["finalizers"], json!(["b/y"]));
    }

    #[test]
    fn atomic_lists_replace_and_conflict_as_a_whole() {
        let cfg = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                         "spec": {"tolerations": [{"key": "a"}], "containers": [{"name": "c", "args": ["1"]}]}});
        let live = server_side_apply("Pod", None, &cfg, "m", false, T0).unwrap();
        let cfg2 = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                          "spec": {"tolerations": [{"key": "b"}]}});
        let err = server_side_apply("Pod", Some(&live), &cfg2, "n", false, T1).unwrap_err();
        assert_eq!(
            err,
            PatchError::Conflict {
                message: "Apply failed with 1 conflict: conflict with \"m\": .spec.tolerations"
                    .into(),
                fields: vec![".spec.tolerations".into()],
            }
        );
        let out = server_side_apply("Pod", Some(&live), &cfg2, "n", true, T1).unwrap();
        assert_eq!(out["spec"]["tolerations"], json!([{"key": "b"}]));
        assert_eq!(
            out["spec"]["containers"],
            json!([{"name": "c", "args": ["1"]}])
        );
    }

    #[test]
    fn keyed_list_merge_order() {
        let live = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                          "spec": {"containers": [{"name": "a"}, {"name": "b"}]}});
        let cfg = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                         "spec": {"containers": [{"name": "c"}, {"name": "a", "image": "x"}]}});
        let out = server_side_apply("Pod", Some(&live), &cfg, "m", true, T0).unwrap();
        assert_eq!(
            out["spec"]["containers"],
            json!([{"name": "c"}, {"name": "a", "image": "x"}, {"name": "b"}])
        );
        let cfg = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                         "spec": {"containers": [{"name": "c"}]}});
        let out = server_side_apply("Pod", Some(&live), &cfg, "m", true, T0).unwrap();
        assert_eq!(
            out["spec"]["containers"],
            json!([{"name": "a"}, {"name": "b"}, {"name": "c"}])
        );
    }

    #[test]
    fn object_without_managed_fields_belongs_to_before_first_apply() {
        let live = deployment(2, "nginx:1");
        let err = server_side_apply(
            "Deployment",
            Some(&live),
            &deployment(3, "nginx:1"),
            "ssa",
            false,
            T1,
        )
        .unwrap_err();
        assert_eq!(
            err,
            PatchError::Conflict {
                message: "Apply failed with 1 conflict: conflict with \"before-first-apply\" using apps/v1: .spec.replicas".into(),
                fields: vec![".spec.replicas".into()],
            }
        );
        let out = server_side_apply(
            "Deployment",
            Some(&live),
            &deployment(2, "nginx:1"),
            "ssa",
            false,
            T1,
        )
        .unwrap();
        let managers: Vec<&str> = mf(&out)
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["manager"].as_str().unwrap())
            .collect();
        assert_eq!(managers, ["ssa", "before-first-apply"]);
    }

    #[test]
    fn invalid_applied_configs() {
        let cfg = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [{"image": "x"}]}});
        assert_eq!(
            server_side_apply("Pod", None, &cfg, "m", false, T0).unwrap_err(),
            PatchError::Invalid("failed to create typed patch object (/v1, Kind=Pod): .spec.containers: element 0: associative list with keys has an element that omits key field \"name\" (and doesn't have default value)".into())
        );
        let cfg = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
                         "spec": {"template": {"spec": {"containers": [{"name": "x"}, {"name": "x"}]}}}});
        assert_eq!(
            server_side_apply("Deployment", None, &cfg, "m", false, T0).unwrap_err(),
            PatchError::Invalid("failed to create typed patch object (apps/v1, Kind=Deployment): .spec.template.spec.containers: duplicate entries for key [name=\"x\"]".into())
        );
        assert!(matches!(
            server_side_apply("Pod", None, &json!([1]), "m", false, T0),
            Err(PatchError::Invalid(_))
        ));
        assert!(matches!(
            server_side_apply("Pod", Some(&json!("x")), &json!({}), "m", false, T0),
            Err(PatchError::Invalid(_))
        ));
    }

    #[test]
    fn nulls_in_config_are_unspecified() {
        let cfg = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1", "b": null}});
        let out = server_side_apply("ConfigMap", None, &cfg, "m", false, T0).unwrap();
        assert_eq!(out["data"], json!({"a": "1"}));
        assert_eq!(mf(&out)[0]["fieldsV1"], json!({"f:data": {"f:a": {}}}));
    }

    #[test]
    fn record_update_on_create_owns_everything_but_server_metadata() {
        let mut obj = json!({"apiVersion": "v1", "kind": "ConfigMap",
                             "metadata": {"name": "c", "namespace": "d", "uid": "u", "labels": {"a": "1"}},
                             "data": {"k": "v"}});
        record_update("ConfigMap", None, &mut obj, "kubectl-create", T0);
        assert_eq!(
            mf(&obj),
            &json!([{
                "manager": "kubectl-create", "operation": "Update", "apiVersion": "v1", "time": T0,
                "fieldsType": "FieldsV1",
                "fieldsV1": {"f:data": {"f:k": {}}, "f:metadata": {"f:labels": {"f:a": {}}}}
            }])
        );
    }

    #[test]
    fn record_update_moves_ownership_of_changed_fields() {
        let live = server_side_apply(
            "Deployment",
            None,
            &deployment(2, "nginx:1"),
            "kubectl",
            false,
            T0,
        )
        .unwrap();
        let mut new = live.clone();
        new["spec"]["replicas"] = json!(5);
        new["metadata"]["labels"]["added"] = json!("x");
        record_update("Deployment", Some(&live), &mut new, "hpa", T1);
        let entries = mf(&new).as_array().unwrap();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0]["manager"], "kubectl");
        assert_eq!(entries[0]["time"], T0);
        assert!(entries[0]["fieldsV1"]["f:spec"].get("f:replicas").is_none());
        assert!(entries[0]["fieldsV1"]["f:spec"].get("f:template").is_some());
        assert_eq!(
            entries[1],
            json!({"manager": "hpa", "operation": "Update", "apiVersion": "apps/v1", "time": T1, "fieldsType": "FieldsV1",
                   "fieldsV1": {"f:metadata": {"f:labels": {"f:added": {}}}, "f:spec": {"f:replicas": {}}}})
        );
        // the applier now conflicts with hpa on replicas
        let err = server_side_apply(
            "Deployment",
            Some(&new),
            &deployment(2, "nginx:1"),
            "kubectl",
            false,
            T2,
        )
        .unwrap_err();
        assert!(
            matches!(err, PatchError::Conflict { fields, .. } if fields == vec![".spec.replicas".to_owned()])
        );
    }

    #[test]
    fn record_update_removed_fields_leave_all_sets() {
        let mut live = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1", "b": "2"}});
        record_update("ConfigMap", None, &mut live, "one", T0);
        let mut new = live.clone();
        new["data"].as_object_mut().unwrap().shift_remove("a");
        record_update("ConfigMap", Some(&live), &mut new, "two", T1);
        // "two" changed nothing that still exists, so it owns nothing and gets no entry
        assert_eq!(
            mf(&new),
            &json!([{"manager": "one", "operation": "Update", "apiVersion": "v1", "time": T0, "fieldsType": "FieldsV1",
                     "fieldsV1": {"f:data": {"f:b": {}}}}])
        );
    }

    #[test]
    fn record_update_skips_equal_members_without_changing_the_result() {
        // A status write: spec and metadata are equal, so only the status is walked; the result
        // must be what walking everything gives (spec stays the creator's, status the writer's).
        let mut live = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"a": "1"}},
                              "spec": {"containers": [{"name": "c", "image": "i"}]}, "status": {"phase": "Pending"}});
        record_update("Pod", None, &mut live, "creator", T0);
        let mut new = live.clone();
        new["status"] = json!({"phase": "Running", "podIP": "10.0.0.1"});
        record_update("Pod", Some(&live), &mut new, "kubelet", T1);
        let entries = mf(&new).as_array().unwrap();
        assert_eq!(
            entries[0]["fieldsV1"],
            json!({"f:metadata": {"f:labels": {"f:a": {}}}, "f:spec": {"f:containers": {"k:{\"name\":\"c\"}": {".": {}, "f:image": {}, "f:name": {}}}}})
        );
        assert_eq!(
            entries[1]["fieldsV1"],
            json!({"f:status": {"f:phase": {}, "f:podIP": {}}})
        );
        // A member removed at the top (status) or in metadata (labels) still leaves every set.
        let mut gone = new.clone();
        gone.as_object_mut().unwrap().shift_remove("status");
        gone["metadata"]
            .as_object_mut()
            .unwrap()
            .shift_remove("labels");
        record_update("Pod", Some(&new), &mut gone, "third", T2);
        let entries = mf(&gone).as_array().unwrap();
        assert_eq!(entries.len(), 1, "{entries:?}");
        assert_eq!(
            entries[0]["fieldsV1"],
            json!({"f:spec": {"f:containers": {"k:{\"name\":\"c\"}": {".": {}, "f:image": {}, "f:name": {}}}}})
        );
    }

    #[test]
    fn record_update_noop_keeps_entries_and_time() {
        let mut live = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}});
        record_update("ConfigMap", None, &mut live, "one", T0);
        let mut new = live.clone();
        new["metadata"]
            .as_object_mut()
            .unwrap()
            .shift_remove("managedFields");
        record_update("ConfigMap", Some(&live), &mut new, "one", T1);
        assert_eq!(new, live);
    }

    #[test]
    fn record_update_same_manager_accumulates() {
        let mut live = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}});
        record_update("ConfigMap", None, &mut live, "one", T0);
        let mut new = live.clone();
        new["data"]["b"] = json!("2");
        record_update("ConfigMap", Some(&live), &mut new, "one", T1);
        assert_eq!(
            mf(&new)[0]["fieldsV1"],
            json!({"f:data": {"f:a": {}, "f:b": {}}})
        );
        assert_eq!(mf(&new)[0]["time"], T1);
        assert_eq!(mf(&new).as_array().unwrap().len(), 1);
    }

    #[test]
    fn record_update_keyed_elements() {
        let mut live = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                              "spec": {"containers": [{"name": "a", "image": "1"}]}});
        record_update("Pod", None, &mut live, "create", T0);
        let mut new = live.clone();
        new["spec"]["containers"] =
            json!([{"name": "a", "image": "2"}, {"name": "b", "image": "1"}]);
        record_update("Pod", Some(&live), &mut new, "edit", T1);
        let entries = mf(&new).as_array().unwrap();
        assert_eq!(
            entries[0]["fieldsV1"],
            json!({"f:spec": {"f:containers": {"k:{\"name\":\"a\"}": {".": {}, "f:name": {}}}}})
        );
        assert_eq!(
            entries[1]["fieldsV1"],
            json!({"f:spec": {"f:containers": {
                "k:{\"name\":\"a\"}": {"f:image": {}},
                "k:{\"name\":\"b\"}": {".": {}, "f:image": {}, "f:name": {}}
            }}})
        );
    }

    #[test]
    fn record_update_reset_and_client_supplied_lists() {
        let mut live = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}});
        record_update("ConfigMap", None, &mut live, "one", T0);
        let mut reset = live.clone();
        reset["metadata"]["managedFields"] = json!([{}]);
        reset["data"]["a"] = json!("2");
        record_update("ConfigMap", Some(&live), &mut reset, "two", T1);
        assert!(reset["metadata"].get("managedFields").is_none());

        // an empty list does not reset: the stored entries are used
        let mut empty = live.clone();
        empty["metadata"]["managedFields"] = json!([]);
        record_update("ConfigMap", Some(&live), &mut empty, "one", T1);
        assert_eq!(empty, live);

        // a supplied list replaces the stored one
        let mut supplied = live.clone();
        supplied["metadata"]["managedFields"] = json!([{"manager": "x", "operation": "Update", "apiVersion": "v1",
            "time": T0, "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:a": {}}}}]);
        record_update("ConfigMap", Some(&live), &mut supplied, "one", T1);
        assert_eq!(mf(&supplied)[0]["manager"], "x");
    }

    #[test]
    fn managed_fields_sorted_apply_first_then_time() {
        let mut live = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}});
        record_update("ConfigMap", None, &mut live, "zeta", T0);
        let cfg = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"b": "1"}});
        let out = server_side_apply("ConfigMap", Some(&live), &cfg, "alpha", false, T2).unwrap();
        let mut new = out.clone();
        new["data"]["c"] = json!("1");
        record_update("ConfigMap", Some(&out), &mut new, "beta", T1);
        let order: Vec<(&str, &str)> = mf(&new)
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                (
                    e["manager"].as_str().unwrap(),
                    e["operation"].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            order,
            [("alpha", "Apply"), ("zeta", "Update"), ("beta", "Update")]
        );
    }

    #[test]
    fn garbage_managed_fields_do_not_panic() {
        let live = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "managedFields": [
            5, {"manager": 3}, {"fieldsV1": "x"}, {"manager": "m", "operation": "Update", "fieldsV1": {"f:data": {"k:notjson": {}, "v:[": {}}}}
        ]}, "data": {"a": "1"}});
        let cfg = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "2"}});
        assert!(server_side_apply("ConfigMap", Some(&live), &cfg, "n", true, T0).is_ok());
        let mut new = live.clone();
        record_update("ConfigMap", Some(&live), &mut new, "n", T0);
        record_update("ConfigMap", None, &mut json!("not an object"), "n", T0);
    }
}
