//! `metadata.managedFields` as kube-apiserver 1.35's field manager keeps them: the manager chain
//! of apimachinery's `pkg/util/managedfields/internal` (`NewDefaultFieldManager`: skip
//! non-applied objects, cap update managers, manager identities, the `current-operation` merge,
//! stripped metadata) over structured-merge-diff's `merge.Updater` (`Update`, `Apply`, `prune`).
//!
//! What differs from upstream, on purpose: objects are not converted between API versions, so
//! a manager recorded at another version of the kind is compared at the request's version;
//! `reconcileManagedFieldsWithSchemaChanges` is not run (the sim's schema never changes under
//! stored sets); kubectl's client-side-apply migration (`lastAppliedManager`'s allowed
//! conflicts) is not modelled, its annotation update (`lastAppliedUpdater`) is.

use super::fieldpath::{display, path, Set};
use super::schema::{Schema, TypeRef};
use super::typed::{self, Comparison};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

const APPLY: &str = "Apply";
const UPDATE: &str = "Update";
/// The manager an object's fields are attributed to when it is first applied
/// (`skipNonAppliedManager`).
const BEFORE_FIRST_APPLY: &str = "before-first-apply";
/// Where the oldest update managers go past `MAX_UPDATE_MANAGERS` (`capManagersManager`).
const ANCIENT_CHANGES: &str = "ancient-changes";
const MAX_UPDATE_MANAGERS: usize = 10;
const CURRENT_OPERATION: &str = "current-operation";
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// `BuildManagerIdentifier`: who wrote a set. Apply entries are one per manager whatever their
/// apiVersion.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct ManagerId {
    pub manager: String,
    pub operation: String,
    /// Empty for Apply.
    pub api_version: String,
    pub subresource: String,
}

impl ManagerId {
    fn new(manager: &str, operation: &str, api_version: &str, subresource: &str) -> ManagerId {
        ManagerId {
            manager: manager.to_owned(),
            operation: operation.to_owned(),
            api_version: if operation == APPLY {
                String::new()
            } else {
                api_version.to_owned()
            },
            subresource: subresource.to_owned(),
        }
    }

    /// The identifier's JSON, which upstream sorts conflict messages by.
    fn json(&self) -> String {
        let mut m = Map::new();
        if !self.manager.is_empty() {
            m.insert("manager".into(), json!(self.manager));
        }
        if !self.operation.is_empty() {
            m.insert("operation".into(), json!(self.operation));
        }
        if !self.api_version.is_empty() {
            m.insert("apiVersion".into(), json!(self.api_version));
        }
        if !self.subresource.is_empty() {
            m.insert("subresource".into(), json!(self.subresource));
        }
        Value::Object(m).to_string()
    }

    /// `printManager`: `"kubectl"`, `"x" with subresource "status"`, `"y" using apps/v1`.
    fn print(&self) -> String {
        let mut s = format!("{:?}", self.manager);
        if !self.subresource.is_empty() {
            s = format!("{s} with subresource {:?}", self.subresource);
        }
        if self.operation == UPDATE {
            s = format!("{s} using {}", self.api_version);
        }
        s
    }
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct VersionedSet {
    pub set: Set,
    pub api_version: String,
    pub applied: bool,
}

/// The decoded `managedFields`: a set and a time per manager.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Managed {
    pub fields: BTreeMap<ManagerId, VersionedSet>,
    pub times: BTreeMap<ManagerId, Option<String>>,
}

impl Managed {
    /// `DecodeManagedFields`.
    pub(crate) fn decode(entries: &[Value]) -> Result<Managed, String> {
        let mut out = Managed::default();
        for (i, e) in entries.iter().enumerate() {
            let text = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or("");
            let operation = text("operation");
            if operation != APPLY && operation != UPDATE {
                return Err("operation must be `Apply` or `Update`".into());
            }
            if text("apiVersion").is_empty() {
                return Err("apiVersion must not be empty".into());
            }
            match text("fieldsType") {
                "FieldsV1" => {}
                "" => return Err(format!("missing fieldsType in managed fields entry {i}")),
                other => {
                    return Err(format!(
                        "invalid fieldsType {other:?} in managed fields entry {i}"
                    ))
                }
            }
            let id = ManagerId::new(
                text("manager"),
                operation,
                text("apiVersion"),
                text("subresource"),
            );
            let set = match e.get("fieldsV1") {
                None | Some(Value::Null) => Set::new(),
                Some(v) => {
                    Set::from_fields_v1(v).map_err(|err| format!("error decoding set: {err}"))?
                }
            };
            out.fields.insert(
                id.clone(),
                VersionedSet {
                    set,
                    api_version: text("apiVersion").to_owned(),
                    applied: operation == APPLY,
                },
            );
            out.times
                .insert(id, e.get("time").and_then(Value::as_str).map(str::to_owned));
        }
        Ok(out)
    }

    /// `encodeManagedFields`: sorted by operation, time, manager, apiVersion, subresource.
    pub(crate) fn encode(&self) -> Vec<Value> {
        let mut entries: Vec<(&ManagerId, &VersionedSet, Option<&String>)> = self
            .fields
            .iter()
            .map(|(id, vs)| (id, vs, self.times.get(id).and_then(Option::as_ref)))
            .collect();
        let operation = |vs: &VersionedSet| if vs.applied { APPLY } else { UPDATE };
        entries.sort_by(|a, b| {
            (
                operation(a.1),
                a.2.map(|t| seconds(t)).unwrap_or(0),
                &a.0.manager,
                &a.1.api_version,
                &a.0.subresource,
            )
                .cmp(&(
                    operation(b.1),
                    b.2.map(|t| seconds(t)).unwrap_or(0),
                    &b.0.manager,
                    &b.1.api_version,
                    &b.0.subresource,
                ))
        });
        entries
            .into_iter()
            .map(|(id, vs, time)| {
                let mut m = Map::new();
                if !id.manager.is_empty() {
                    m.insert("manager".into(), json!(id.manager));
                }
                m.insert("operation".into(), json!(operation(vs)));
                m.insert("apiVersion".into(), json!(vs.api_version));
                if let Some(t) = time {
                    m.insert("time".into(), json!(t));
                }
                m.insert("fieldsType".into(), json!("FieldsV1"));
                m.insert("fieldsV1".into(), vs.set.to_fields_v1());
                if !id.subresource.is_empty() {
                    m.insert("subresource".into(), json!(id.subresource));
                }
                Value::Object(m)
            })
            .collect()
    }
}

/// Seconds since the epoch of an RFC 3339 time (for ordering), 0 when unreadable.
fn seconds(t: &str) -> i64 {
    crate::timing::parse_time(t)
        .map(|d| d.timestamp())
        .unwrap_or(0)
}

/// The endpoint a write goes through: what the field manager of that REST storage knows.
pub(crate) struct Endpoint<'a> {
    /// The group/version of the request (what entries record as `apiVersion`).
    pub api_version: &'a str,
    pub kind: &'a str,
    /// `status`, `scale`, ... or empty for the main resource.
    pub subresource: &'a str,
    /// The strategy's reset fields for this endpoint.
    pub reset: Option<&'a Set>,
    /// The time entries written now get (RFC 3339, seconds).
    pub now: &'a str,
}

impl Endpoint<'_> {
    fn ty(&self) -> TypeRef {
        let s = Schema::builtins();
        s.kind(self.api_version, self.kind)
            .map(|k| k.ty.clone())
            .unwrap_or_else(|| s.deduced())
    }

    /// The empty object a create starts from (`Creater.New`): the zero Go value of a built-in
    /// kind, `apiVersion` and `kind` only for a custom resource.
    fn empty_object(&self) -> Value {
        Schema::builtins()
            .kind(self.api_version, self.kind)
            .map(|k| k.zero.clone())
            .unwrap_or_else(|| json!({"apiVersion": self.api_version, "kind": self.kind}))
    }
}

/// Metadata the field manager never records (`stripMetaManager`).
fn strip_set() -> &'static Set {
    static SET: std::sync::OnceLock<Set> = std::sync::OnceLock::new();
    SET.get_or_init(|| {
        [
            path(&["apiVersion"]),
            path(&["kind"]),
            path(&["metadata"]),
            path(&["metadata", "name"]),
            path(&["metadata", "namespace"]),
            path(&["metadata", "creationTimestamp"]),
            path(&["metadata", "selfLink"]),
            path(&["metadata", "uid"]),
            path(&["metadata", "clusterName"]),
            path(&["metadata", "generation"]),
            path(&["metadata", "managedFields"]),
            path(&["metadata", "resourceVersion"]),
        ]
        .into_iter()
        .collect()
    })
}

fn managed_fields(obj: &Value) -> Option<&Vec<Value>> {
    obj.get("metadata")?.get("managedFields")?.as_array()
}

fn set_managed_fields(obj: &mut Value, entries: Vec<Value>) {
    let Some(md) = obj.get_mut("metadata").and_then(Value::as_object_mut) else {
        if entries.is_empty() {
            return;
        }
        obj["metadata"] = json!({"managedFields": entries});
        return;
    };
    if entries.is_empty() {
        md.shift_remove("managedFields");
    } else {
        md.insert("managedFields".into(), Value::Array(entries));
    }
}

fn without_managed_fields(obj: &Value) -> Value {
    let mut o = obj.clone();
    if let Some(md) = o.get_mut("metadata").and_then(Value::as_object_mut) {
        md.shift_remove("managedFields");
    }
    o
}

/// `isResetManagedFields`: `[]` or `[{}]` in a request clears the tracking.
fn is_reset(entries: Option<&Vec<Value>>) -> bool {
    match entries {
        Some(l) if l.is_empty() => true,
        Some(l) if l.len() == 1 => l[0].as_object().is_some_and(Map::is_empty),
        _ => false,
    }
}

/// The live and new objects' managed fields as `decodeLiveOrNew` picks them: a subresource
/// ignores the request's; a request's `[]`/`[{}]` clears; a decodable non-empty list in the
/// request replaces the stored one.
fn decode_live_or_new(live: &[Value], new: &Value, subresource: bool) -> Managed {
    let from_live = || Managed::decode(live).unwrap_or_default();
    if subresource {
        return from_live();
    }
    let requested = managed_fields(new);
    if is_reset(requested) {
        return Managed::default();
    }
    match requested.map(|l| Managed::decode(l)) {
        Some(Ok(m)) if !m.fields.is_empty() => m,
        _ => from_live(),
    }
}

/// An SSA conflict: the managers and paths whose values the apply would change.
#[derive(Debug, Clone, PartialEq)]
pub struct Conflicts {
    /// (manager printed as upstream prints it, path as `.spec.replicas`), in upstream's order.
    pub causes: Vec<(String, String)>,
    pub message: String,
}

/// Why an apply failed.
#[derive(Debug, Clone, PartialEq)]
pub enum ApplyError {
    Conflicts(Conflicts),
    /// 400 (`metadata.managedFields must be nil`, a version mismatch).
    BadRequest(String),
    /// The configuration does not fit the schema, or stored managedFields do not decode: the
    /// apiserver's 500 with this message.
    Internal(String),
}

fn conflicts_error(conflicts: &BTreeMap<ManagerId, Set>) -> Conflicts {
    // By manager identifier (upstream iterates a map, then sorts the message's groups).
    let mut by_id: Vec<(&ManagerId, &Set)> = conflicts.iter().collect();
    by_id.sort_by_key(|(id, _)| id.json());
    let mut causes = Vec::new();
    for (id, set) in &by_id {
        for p in set.iterate() {
            causes.push((id.print(), display(&p)));
        }
    }
    let message = if causes.len() == 1 {
        format!(
            "Apply failed with 1 conflict: conflict with {}: {}",
            causes[0].0, causes[0].1
        )
    } else {
        let mut lines = Vec::new();
        for (id, set) in &by_id {
            lines.push(format!("conflicts with {}:", id.print()));
            for p in set.iterate() {
                lines.push(format!("- {}", display(&p)));
            }
        }
        format!(
            "Apply failed with {} conflicts: {}",
            causes.len(),
            lines.join("\n")
        )
    };
    Conflicts { causes, message }
}

/// The field manager's bookkeeping of one write.
struct Updater<'a> {
    schema: &'static Schema,
    ty: TypeRef,
    ep: &'a Endpoint<'a>,
}

impl Updater<'_> {
    fn filter(&self, set: Set) -> Set {
        match self.ep.reset {
            Some(reset) => set.recursive_difference(reset),
            None => set,
        }
    }

    /// `Updater.update`: other managers lose what changed (conflicts unless forced) and what
    /// was removed.
    fn update(
        &self,
        old: &Value,
        new: &Value,
        managers: &mut BTreeMap<ManagerId, VersionedSet>,
        workflow: &ManagerId,
        force: bool,
    ) -> Result<Comparison, Conflicts> {
        let compare = typed::compare(self.schema, &self.ty, old, new).filter(self.ep.reset);
        let changed = compare.modified.union(&compare.added);
        let mut conflicts: BTreeMap<ManagerId, Set> = BTreeMap::new();
        for (id, vs) in managers.iter() {
            if id == workflow {
                continue;
            }
            let c = vs.set.intersection(&changed);
            if !c.is_empty() {
                conflicts.insert(id.clone(), c);
            }
        }
        if !force && !conflicts.is_empty() {
            return Err(conflicts_error(&conflicts));
        }
        for (id, vs) in managers.iter_mut() {
            if id == workflow {
                continue;
            }
            if let Some(c) = conflicts.get(id) {
                vs.set.remove_all(c);
            }
            vs.set.remove_all(&compare.removed);
        }
        managers.retain(|_, vs| !vs.set.is_empty());
        Ok(compare)
    }

    /// `Updater.Update` for the manager `id`.
    fn update_as(
        &self,
        live: &Value,
        new: &Value,
        managers: &mut BTreeMap<ManagerId, VersionedSet>,
        id: &ManagerId,
    ) {
        let Ok(compare) = self.update(live, new, managers, id, true) else {
            return;
        };
        let mut set = managers.remove(id).map(|vs| vs.set).unwrap_or_default();
        set.remove_all(&compare.removed);
        set.union_with(&compare.modified);
        set.union_with(&compare.added);
        let set = self.filter(set);
        if !set.is_empty() {
            managers.insert(
                id.clone(),
                VersionedSet {
                    set,
                    api_version: self.ep.api_version.to_owned(),
                    applied: false,
                },
            );
        }
    }

    /// The Update chain below `capManagersManager`: `buildManagerInfo` (the identity),
    /// `managedFieldsUpdater` (the write as `current-operation`, merged into the manager, its
    /// time set when it changed anything) and `stripMeta`.
    fn record(&self, live: &Value, new: &Value, managed: &mut Managed, manager: &str) {
        let manager = if manager.is_empty() {
            "unknown"
        } else {
            manager
        };
        let id = ManagerId::new(manager, UPDATE, self.ep.api_version, self.ep.subresource);
        let current = ManagerId::new(
            CURRENT_OPERATION,
            UPDATE,
            self.ep.api_version,
            self.ep.subresource,
        );
        self.update_as(live, new, &mut managed.fields, &current);
        if let Some(vs) = managed.fields.remove(&current) {
            let mut set = vs.set;
            set.remove_all(strip_set());
            if set.is_empty() {
                return;
            }
            let merged = match managed.fields.remove(&id) {
                Some(prev) => {
                    set.union_with(&prev.set);
                    set
                }
                None => set,
            };
            managed.fields.insert(
                id.clone(),
                VersionedSet {
                    set: merged,
                    api_version: vs.api_version,
                    applied: false,
                },
            );
            managed.times.insert(id, Some(self.ep.now.to_owned()));
        }
    }

    /// `capManagersManager`: past ten update managers, the oldest are merged into
    /// `ancient-changes` (one per apiVersion).
    fn cap(&self, managed: &mut Managed) {
        let mut updaters: Vec<ManagerId> = managed
            .fields
            .iter()
            .filter(|(_, vs)| !vs.applied)
            .map(|(id, _)| id.clone())
            .collect();
        if updaters.len() <= MAX_UPDATE_MANAGERS {
            return;
        }
        let time = |id: &ManagerId| {
            managed
                .times
                .get(id)
                .and_then(|t| t.as_deref())
                .map(seconds)
                .unwrap_or(0)
        };
        updaters.sort_by(|a, b| time(a).cmp(&time(b)).then_with(|| a.json().cmp(&b.json())));
        let mut first_of_version: BTreeMap<String, ManagerId> = BTreeMap::new();
        let mut length = updaters.len();
        for id in updaters {
            if length <= MAX_UPDATE_MANAGERS {
                break;
            }
            let Some(vs) = managed.fields.get(&id).cloned() else {
                continue;
            };
            let t = managed.times.get(&id).cloned().flatten();
            let bucket = ManagerId::new(ANCIENT_CHANGES, UPDATE, &vs.api_version, "");
            match first_of_version.get(&vs.api_version) {
                Some(first) => {
                    if !managed.fields.contains_key(&bucket) {
                        if let Some(s) = managed.fields.remove(first) {
                            managed.fields.insert(bucket.clone(), s);
                        }
                    }
                    let union = managed.fields[&bucket].set.union(&vs.set);
                    managed.fields.insert(
                        bucket.clone(),
                        VersionedSet {
                            set: union,
                            api_version: vs.api_version.clone(),
                            applied: false,
                        },
                    );
                    managed.fields.remove(&id);
                    length -= 1;
                    managed.times.insert(bucket, t);
                }
                None => {
                    first_of_version.insert(vs.api_version.clone(), id.clone());
                }
            }
        }
        let fields = &managed.fields;
        managed.times.retain(|id, _| fields.contains_key(id));
    }
}

/// `FieldManager.UpdateNoErrors`: record a non-apply write of `new` over `live` (for a create,
/// `live` is None) by `manager` in `new.metadata.managedFields`.
#[cfg(test)]
pub(crate) fn update(ep: &Endpoint, live: Option<&Value>, new: &mut Value, manager: &str) {
    update_over(ep, live, None, new, manager)
}

/// `update` with the live object's managedFields given apart (`live_managed`), when `live` is
/// kept without them (the store keeps them apart); None: `live`'s own.
pub(crate) fn update_over(
    ep: &Endpoint,
    live: Option<&Value>,
    live_managed: Option<&Value>,
    new: &mut Value,
    manager: &str,
) {
    if !new.is_object() {
        return;
    }
    let empty;
    let live = match live {
        Some(l) => l,
        None => {
            empty = ep.empty_object();
            &empty
        }
    };
    let live_list = match live_managed {
        Some(list) => list.as_array(),
        None => managed_fields(live),
    };
    let mut managed = decode_live_or_new(
        live_list.map(Vec::as_slice).unwrap_or(&[]),
        new,
        !ep.subresource.is_empty(),
    );
    set_managed_fields(new, Vec::new());
    let up = Updater {
        schema: Schema::builtins(),
        ty: ep.ty(),
        ep,
    };
    // `skipNonAppliedManager`: an existing object nobody tracks stays untracked.
    let has_uid = live
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .is_some_and(|u| !u.is_empty());
    if managed.fields.is_empty() && has_uid {
        return;
    }
    // `stripMetaManager` compares the objects without their managedFields; `new`'s are `[]`
    // here and the list is atomic, so comparing with the live object's as they are records
    // only `metadata.managedFields`, which the strip set takes out again, without copying the
    // live object.
    up.record(live, new, &mut managed, manager);
    up.cap(&mut managed);
    let fields = &managed.fields;
    managed.times.retain(|id, _| fields.contains_key(id));
    set_managed_fields(new, managed.encode());
}

/// `FieldManager.Apply`: `applied` (already decoded, with `apiVersion` and `kind` checked)
/// over `live` (None: the object is created) by `manager`. Returns the new object with its
/// managedFields; when the apply changes nothing but ownership, the live object with the new
/// managedFields.
pub(crate) fn apply(
    ep: &Endpoint,
    live: Option<&Value>,
    applied: &Value,
    manager: &str,
    force: bool,
) -> Result<Value, ApplyError> {
    if applied
        .pointer("/metadata/managedFields")
        .is_some_and(|v| !v.is_null())
    {
        return Err(ApplyError::BadRequest(
            "metadata.managedFields must be nil".into(),
        ));
    }
    let schema = Schema::builtins();
    let up = Updater {
        schema,
        ty: ep.ty(),
        ep,
    };
    let errs = typed::validate(schema, &up.ty, applied);
    if let Some(first) = errs.first() {
        let detail = if errs.len() == 1 {
            first.clone()
        } else {
            let lines: Vec<String> = errs.iter().map(|e| format!("  {e}")).collect();
            format!("errors:\n{}", lines.join("\n"))
        };
        return Err(ApplyError::Internal(format!(
            "failed to create typed patch object ({}): {detail}",
            gvknn(applied, ep)
        )));
    }
    let created = live.is_none();
    let empty = ep.empty_object();
    let live = live.unwrap_or(&empty);
    let mut managed = Managed::decode(managed_fields(live).map(Vec::as_slice).unwrap_or(&[]))
        .map_err(|e| ApplyError::Internal(format!("failed to decode managed fields: {e}")))?;
    let mut live_plain = without_managed_fields(live);
    // `skipNonAppliedManager`: what exists is first attributed to `before-first-apply`.
    if managed.fields.is_empty() {
        up.record(&empty, &live_plain, &mut managed, BEFORE_FIRST_APPLY);
        up.cap(&mut managed);
    }
    let id = ManagerId::new(manager, APPLY, ep.api_version, ep.subresource);
    let mut merged = typed::merge(schema, &up.ty, &live_plain, applied);
    let last = managed.fields.get(&id).cloned();
    let set = up.filter(typed::to_field_set(schema, &up.ty, applied));
    managed.fields.insert(
        id.clone(),
        VersionedSet {
            set,
            api_version: ep.api_version.to_owned(),
            applied: true,
        },
    );
    if let Some(last) = last.filter(|l| !l.set.is_empty()) {
        merged = prune(&up, merged, &managed.fields, &last.set);
    }
    up.update(&live_plain, &merged, &mut managed.fields, &id, force)
        .map_err(ApplyError::Conflicts)?;
    // `stripMetaManager`, then `managedFieldsUpdater`: the time moves only when the object did.
    if let Some(vs) = managed.fields.get_mut(&id) {
        vs.set.remove_all(strip_set());
        if vs.set.is_empty() {
            managed.fields.remove(&id);
        }
    }
    let changed = created || !typed_equal(&live_plain, &merged);
    if changed {
        managed.times.insert(id.clone(), Some(ep.now.to_owned()));
    } else {
        merged = std::mem::take(&mut live_plain);
    }
    let fields = &managed.fields;
    managed.times.retain(|i, _| fields.contains_key(i));
    // `lastAppliedUpdater`: kubectl's server-side apply keeps a client-side annotation current.
    if manager == "kubectl" && has_last_applied(live) {
        let mut cfg = applied.clone();
        if let Some(a) = cfg
            .pointer_mut("/metadata/annotations")
            .and_then(Value::as_object_mut)
        {
            a.shift_remove(LAST_APPLIED);
        }
        merged["metadata"]["annotations"][LAST_APPLIED] =
            json!(serde_json::to_string(&cfg).unwrap_or_default());
    }
    set_managed_fields(&mut merged, managed.encode());
    Ok(merged)
}

fn has_last_applied(obj: &Value) -> bool {
    obj.pointer("/metadata/annotations")
        .and_then(|a| a.get(LAST_APPLIED))
        .and_then(Value::as_str)
        .is_some_and(|s| !s.is_empty())
}

fn typed_equal(a: &Value, b: &Value) -> bool {
    super::fieldpath::equals(a, b)
}

/// `objectGVKNN`: `ns/name; apps/v1, Kind=Deployment`.
fn gvknn(obj: &Value, ep: &Endpoint) -> String {
    let text = |p: &str| obj.pointer(p).and_then(Value::as_str).unwrap_or("");
    format!(
        "{}/{}; {}, Kind={}",
        text("/metadata/namespace"),
        text("/metadata/name"),
        if ep.api_version.contains('/') {
            ep.api_version.to_owned()
        } else {
            format!("/{}", ep.api_version)
        },
        ep.kind
    )
}

/// `Updater.prune`: what the applier set last time and no longer sets is removed, unless
/// another manager owns it.
fn prune(
    up: &Updater,
    merged: Value,
    managers: &BTreeMap<ManagerId, VersionedSet>,
    last: &Set,
) -> Value {
    let (s, ty) = (up.schema, &up.ty);
    let ensure = |set: &Set| typed::ensure_named_fields_are_members(s, ty, set);
    let remove =
        |v: &Value, set: &Set| typed::remove_items(s, ty, v, set).unwrap_or_else(|| json!({}));
    let pruned = remove(&merged, &ensure(last));
    // addBackOwnedItems
    let mut managed = Set::new();
    for vs in managers.values() {
        managed = managed.union(&vs.set);
    }
    let merged_set = ensure(&typed::to_field_set(s, ty, &merged));
    let pruned_set = ensure(&typed::to_field_set(s, ty, &pruned));
    let pruned = remove(
        &merged,
        &merged_set.difference(&pruned_set.union(&ensure(&managed))),
    );
    // addBackDanglingItems
    let pruned_set = ensure(&typed::to_field_set(s, ty, &pruned));
    remove(
        &merged,
        &merged_set
            .difference(&pruned_set)
            .intersection(&ensure(last)),
    )
}

/// `managedfields.ScaleHandler.ToSubresource`: the Scale view's entries are the parent's
/// managers of the replicas path (`mapping`: the parent's group/version and its replicas path),
/// each owning `spec.replicas` of autoscaling/v1. None: the parent's entries do not decode.
pub(crate) fn scale_to_subresource(parent: &[Value], mapping: (&str, &Set)) -> Option<Vec<Value>> {
    let managed = Managed::decode(parent).ok()?;
    let mut out = Managed::default();
    for (id, vs) in &managed.fields {
        if vs.api_version != mapping.0 || !mapping.1.difference(&vs.set).is_empty() {
            continue;
        }
        out.fields.insert(
            id.clone(),
            VersionedSet {
                set: [path(&["spec", "replicas"])].into_iter().collect(),
                api_version: "autoscaling/v1".into(),
                applied: vs.applied,
            },
        );
        out.times
            .insert(id.clone(), managed.times.get(id).cloned().flatten());
    }
    Some(out.encode())
}

/// `ScaleHandler.ToParent`: the parent's entries after a scale write. A parent manager of the
/// replicas path that the Scale's entries no longer name (an Update manager never matches: its
/// identity carries the other apiVersion) loses the path; the Scale's managers of
/// `spec.replicas` become parent entries owning the replicas path, without a time (upstream
/// looks their time up among the parent's).
pub(crate) fn scale_to_parent(
    parent: &[Value],
    scale: &[Value],
    mapping: (&str, &Set),
) -> Option<Vec<Value>> {
    let parent = Managed::decode(parent).ok()?;
    let mut scale_fields = Managed::decode(scale).ok()?.fields;
    let mut out = Managed::default();
    for (id, vs) in &parent.fields {
        let time = parent.times.get(id).cloned().flatten();
        if vs.api_version != mapping.0 || !mapping.1.difference(&vs.set).is_empty() {
            out.fields.insert(id.clone(), vs.clone());
            out.times.insert(id.clone(), time);
            continue;
        }
        if scale_fields.remove(id).is_some() {
            out.fields.insert(id.clone(), vs.clone());
            out.times.insert(id.clone(), time);
        } else {
            let set = vs.set.difference(mapping.1);
            if !set.is_empty() {
                out.fields
                    .insert(id.clone(), VersionedSet { set, ..vs.clone() });
                out.times.insert(id.clone(), time);
            }
        }
    }
    for (id, vs) in scale_fields {
        if !vs.set.has(&path(&["spec", "replicas"])) {
            continue;
        }
        let time = parent.times.get(&id).cloned().flatten();
        out.fields.insert(
            id.clone(),
            VersionedSet {
                set: mapping.1.clone(),
                api_version: mapping.0.to_owned(),
                applied: vs.applied,
            },
        );
        out.times.insert(id, time);
    }
    Some(out.encode())
}

#[cfg(test)]
mod tests;
