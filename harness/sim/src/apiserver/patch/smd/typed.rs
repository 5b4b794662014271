//! Walks over a value with its schema type, as structured-merge-diff's `typed` package does:
//! `Compare` (what an update added, changed and removed), `ToFieldSet` (what an applied
//! configuration sets), `Merge` (an applied configuration over the live object), `RemoveItems`
//! (pruning what an applier stopped setting) and `Validate` (an applied configuration's shape).
//!
//! Values are JSON; an absent member is `None`, distinct from an explicit `null`, as SMD's nil
//! value is distinct from its null value. Members the schema does not know are skipped: the
//! apiserver reads objects through Go structs, which cannot hold them.

use super::fieldpath::{equals, Path, PathElement, Set};
use super::schema::{ListDef, MapDef, Relationship, Resolved, Scalar, Schema, TypeRef};
use serde_json::{Map, Value};

/// `typed.Comparison`.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Comparison {
    pub removed: Set,
    pub modified: Set,
    pub added: Set,
}

impl Comparison {
    /// `FilterFields`: the comparison without the reset fields.
    pub(crate) fn filter(self, exclude: Option<&Set>) -> Comparison {
        match exclude {
            None => self,
            Some(ex) => Comparison {
                removed: self.removed.recursive_difference(ex),
                modified: self.modified.recursive_difference(ex),
                added: self.added.recursive_difference(ex),
            },
        }
    }
}

/// Which atom of `r` a value is handled as (`deduceAtom`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum As {
    Scalar,
    List,
    Map,
    Invalid,
}

fn deduce(r: &Resolved, v: Option<&Value>) -> As {
    let a = r.atom;
    let specific = match v {
        Some(Value::Number(_) | Value::String(_) | Value::Bool(_)) if a.scalar.is_some() => {
            Some(As::Scalar)
        }
        Some(Value::Array(_)) if a.list.is_some() => Some(As::List),
        Some(Value::Object(_)) if a.map.is_some() => Some(As::Map),
        _ => None,
    };
    // The atom as a whole: the first of map, scalar, list it has (`handleAtom`).
    specific.unwrap_or(if a.map.is_some() {
        As::Map
    } else if a.scalar.is_some() {
        As::Scalar
    } else if a.list.is_some() {
        As::List
    } else {
        As::Invalid
    })
}

fn scalar_ok(t: Scalar, v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => true,
        Some(v) => match t {
            Scalar::Numeric => v.is_number(),
            Scalar::String => v.is_string(),
            Scalar::Boolean => v.is_boolean(),
            Scalar::Untyped => v.is_number() || v.is_string() || v.is_boolean(),
        },
    }
}

/// `listValue`: null is no list; anything else not a list is an error (read as no list).
fn as_list(v: Option<&Value>) -> Option<&Vec<Value>> {
    v.and_then(Value::as_array)
}

fn as_map(v: Option<&Value>) -> Option<&Map<String, Value>> {
    v.and_then(Value::as_object)
}

/// The path element of a list item (`listItemToPathElement`), or why it has none.
pub(crate) fn item_element(
    schema: &Schema,
    list: &ListDef,
    item: &Value,
) -> Result<PathElement, String> {
    if list.er != Relationship::Associative {
        return Err("invalid indexing of non-associative list".into());
    }
    if list.keys.is_empty() {
        return match item {
            Value::Object(_) => {
                Err("associative list without keys has an element that's a map type".into())
            }
            Value::Array(_) => Err("not supported: associative list with lists as elements".into()),
            Value::Null => {
                Err("associative list without keys has an element that's an explicit null".into())
            }
            v => Ok(PathElement::Value(v.clone())),
        };
    }
    let m = match item {
        Value::Null => return Err("associative list with keys may not have a null element".into()),
        Value::Object(m) => m,
        _ => return Err("associative list with keys may not have non-map elements".into()),
    };
    let element = schema.resolve(&list.element);
    let mut key = Vec::new();
    for name in &list.keys {
        if let Some(v) = m.get(name) {
            key.push((name.clone(), v.clone()));
        } else if let Some(def) = element
            .and_then(|e| e.atom.map.as_ref())
            .and_then(|m| m.field(name))
            .and_then(|f| f.default.clone())
        {
            key.push((name.clone(), def));
        }
    }
    if key.is_empty() {
        let names: Vec<String> = list.keys.iter().map(|k| format!("{k:?}")).collect();
        return Err(format!(
            "associative list with keys has an element that omits all key fields [{}] (and doesn't have default values for any key fields)",
            names.join(" ")
        ));
    }
    key.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(PathElement::Key(key))
}

fn with(path: &Path, pe: PathElement) -> Path {
    let mut p = path.clone();
    p.push(pe);
    p
}

// ---------------------------------------------------------------------------------------------
// Compare

/// `TypedValue.Compare`: what going from `lhs` to `rhs` added, modified and removed.
pub(crate) fn compare(schema: &Schema, ty: &TypeRef, lhs: &Value, rhs: &Value) -> Comparison {
    let mut c = Comparison::default();
    compare_at(schema, ty, Some(lhs), Some(rhs), &Vec::new(), &mut c);
    c
}

fn compare_at(
    schema: &Schema,
    ty: &TypeRef,
    lhs: Option<&Value>,
    rhs: Option<&Value>,
    path: &Path,
    c: &mut Comparison,
) {
    // Equal values compare to nothing: skipping them keeps a status write from walking the
    // whole object.
    if let (Some(a), Some(b)) = (lhs, rhs) {
        if a == b {
            return;
        }
    }
    let Some(r) = schema.resolve(ty) else { return };
    let alhs = deduce(&r, lhs);
    let arhs = deduce(&r, rhs);
    let leaf = if rhs.is_none() {
        compare_atom(schema, &r, alhs, lhs, rhs, path, c)
    } else if lhs.is_none() || alhs == arhs {
        compare_atom(schema, &r, arhs, lhs, rhs, path, c)
    } else {
        compare_atom(schema, &r, alhs, lhs, rhs, path, c);
        compare_atom(schema, &r, arhs, lhs, rhs, path, c)
    };
    if !leaf {
        if lhs.is_none() {
            c.added.insert(path.clone());
        } else if rhs.is_none() {
            c.removed.insert(path.clone());
        }
    }
}

/// Handles one atom; true when the node was a leaf.
fn compare_atom(
    schema: &Schema,
    r: &Resolved,
    how: As,
    lhs: Option<&Value>,
    rhs: Option<&Value>,
    path: &Path,
    c: &mut Comparison,
) -> bool {
    match how {
        As::Scalar => {
            let t = r.atom.scalar.unwrap_or(Scalar::Untyped);
            if !scalar_ok(t, lhs) && !scalar_ok(t, rhs) {
                return false;
            }
            compare_leaf(lhs, rhs, path, c);
            true
        }
        As::List => {
            let list = r.atom.list.as_ref().expect("deduced list");
            let (l, rr) = (as_list(lhs), as_list(rhs));
            let empty = l.is_none_or(Vec::is_empty) && rr.is_none_or(Vec::is_empty);
            if r.list_er() == Relationship::Atomic || empty {
                compare_leaf(lhs, rhs, path, c);
                return true;
            }
            if l.is_none() && rr.is_none() {
                return false;
            }
            compare_list_items(schema, list, l, rr, path, c);
            false
        }
        As::Map => {
            let map = r.atom.map.as_ref().expect("deduced map");
            let (l, rr) = (as_map(lhs), as_map(rhs));
            let empty = l.is_none_or(Map::is_empty) && rr.is_none_or(Map::is_empty);
            if r.map_er() == Relationship::Atomic || empty {
                compare_leaf(lhs, rhs, path, c);
                return true;
            }
            if l.is_none() && rr.is_none() {
                return false;
            }
            let empty_map = Map::new();
            let (lm, rm) = (l.unwrap_or(&empty_map), rr.unwrap_or(&empty_map));
            for (k, lv) in lm {
                compare_at(
                    schema,
                    map.member_type(k),
                    Some(lv),
                    rm.get(k),
                    &with(path, PathElement::field(k)),
                    c,
                );
            }
            for (k, rv) in rm {
                if !lm.contains_key(k) {
                    compare_at(
                        schema,
                        map.member_type(k),
                        None,
                        Some(rv),
                        &with(path, PathElement::field(k)),
                        c,
                    );
                }
            }
            false
        }
        As::Invalid => false,
    }
}

fn compare_leaf(lhs: Option<&Value>, rhs: Option<&Value>, path: &Path, c: &mut Comparison) {
    match (lhs, rhs) {
        (None, None) => {}
        (None, Some(_)) => c.added.insert(path.clone()),
        (Some(_), None) => c.removed.insert(path.clone()),
        (Some(a), Some(b)) => {
            if !equals(a, b) {
                c.modified.insert(path.clone())
            }
        }
    }
}

/// Items grouped by path element, in first-seen order, duplicates kept together.
fn index_items<'a>(
    schema: &Schema,
    list: &ListDef,
    items: Option<&'a Vec<Value>>,
) -> Vec<(PathElement, Vec<&'a Value>)> {
    let mut out: Vec<(PathElement, Vec<&'a Value>)> = Vec::new();
    for item in items.into_iter().flatten() {
        let Ok(pe) = item_element(schema, list, item) else {
            continue;
        };
        match out.iter_mut().find(|(p, _)| *p == pe) {
            Some((_, vs)) => vs.push(item),
            None => out.push((pe, vec![item])),
        }
    }
    out
}

fn compare_list_items(
    schema: &Schema,
    list: &ListDef,
    lhs: Option<&Vec<Value>>,
    rhs: Option<&Vec<Value>>,
    path: &Path,
    c: &mut Comparison,
) {
    let l = index_items(schema, list, lhs);
    let r = index_items(schema, list, rhs);
    let mut all: Vec<&PathElement> = l.iter().map(|(p, _)| p).collect();
    for (p, _) in &r {
        if !l.iter().any(|(q, _)| q == p) {
            all.push(p);
        }
    }
    for pe in all {
        let lv = l
            .iter()
            .find(|(q, _)| q == pe)
            .map(|(_, v)| v.as_slice())
            .unwrap_or(&[]);
        let rv = r
            .iter()
            .find(|(q, _)| q == pe)
            .map(|(_, v)| v.as_slice())
            .unwrap_or(&[]);
        let item_path = with(path, pe.clone());
        match (lv.len(), rv.len()) {
            (0, 0) => return,
            (0..=1, 0..=1) => compare_at(
                schema,
                &list.element,
                lv.first().copied(),
                rv.first().copied(),
                &item_path,
                c,
            ),
            (2.., 2..) => {
                let same = lv.len() == rv.len() && lv.iter().zip(rv).all(|(a, b)| equals(a, b));
                if !same {
                    c.modified.insert(item_path);
                }
            }
            (2.., _) => {
                if let Some(first) = rv.first() {
                    compare_at(schema, &list.element, None, Some(first), &item_path, c);
                }
                c.removed.insert(item_path);
            }
            (_, _) => {
                if let Some(first) = lv.first() {
                    compare_at(schema, &list.element, Some(first), None, &item_path, c);
                }
                c.added.insert(item_path);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// ToFieldSet

/// `TypedValue.ToFieldSet`: every leaf and item `v` sets.
pub(crate) fn to_field_set(schema: &Schema, ty: &TypeRef, v: &Value) -> Set {
    let mut set = Set::new();
    field_set_at(schema, ty, v, &Vec::new(), &mut set);
    set
}

fn field_set_at(schema: &Schema, ty: &TypeRef, v: &Value, path: &Path, set: &mut Set) {
    let Some(r) = schema.resolve(ty) else { return };
    match deduce(&r, Some(v)) {
        As::Scalar => set.insert(path.clone()),
        As::List => {
            let list = r.atom.list.as_ref().expect("deduced list");
            if r.list_er() == Relationship::Atomic {
                set.insert(path.clone());
                return;
            }
            let Some(items) = v.as_array() else { return };
            let pes: Vec<Option<PathElement>> = items
                .iter()
                .map(|i| item_element(schema, list, i).ok())
                .collect();
            let mut duplicates: Vec<&PathElement> = Vec::new();
            for (i, pe) in pes.iter().enumerate() {
                let Some(pe) = pe else { continue };
                if pes[..i].iter().flatten().any(|q| q == pe) && !duplicates.contains(&pe) {
                    set.insert(with(path, pe.clone()));
                    duplicates.push(pe);
                }
            }
            for (item, pe) in items.iter().zip(&pes) {
                let Some(pe) = pe else { continue };
                if duplicates.contains(&pe) {
                    continue;
                }
                let p = with(path, pe.clone());
                field_set_at(schema, &list.element, item, &p, set);
                set.insert(p);
            }
        }
        As::Map => {
            let map = r.atom.map.as_ref().expect("deduced map");
            if r.map_er() == Relationship::Atomic {
                set.insert(path.clone());
                return;
            }
            let Some(m) = v.as_object() else { return };
            for (k, val) in m {
                if map.field(k).is_none() && matches!(map.element, TypeRef::None) {
                    continue;
                }
                let p = with(path, PathElement::field(k));
                field_set_at(schema, map.member_type(k), val, &p, set);
                let empty_map = val.as_object().is_some_and(Map::is_empty);
                if val.is_null() || empty_map || map.field(k).is_none() {
                    set.insert(p);
                }
            }
        }
        As::Invalid => {}
    }
}

// ---------------------------------------------------------------------------------------------
// Validate

/// `TypedValue.Validate` of an applied configuration: the first problem, as SMD words it
/// (`.spec.containers: element 0: ...`), or none.
pub(crate) fn validate(schema: &Schema, ty: &TypeRef, v: &Value) -> Vec<String> {
    let mut errs = Vec::new();
    validate_at(schema, ty, v, &Vec::new(), &mut errs);
    errs
}

/// Go's `%#v` of a decoded JSON value (int64, float64, string, bool, map, slice).
fn go_sharp_v(v: &Value) -> String {
    match v {
        Value::Null => "interface {}(nil)".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => format!("{s:?}"),
        Value::Array(a) => format!(
            "[]interface {{}}{{{}}}",
            a.iter().map(go_sharp_v).collect::<Vec<_>>().join(", ")
        ),
        Value::Object(m) => format!(
            "map[string]interface {{}}{{{}}}",
            m.iter()
                .map(|(k, v)| format!("{k:?}:{}", go_sharp_v(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// Go's `%v` of a decoded JSON value.
fn go_v(v: &Value) -> String {
    match v {
        Value::Null => "<nil>".into(),
        Value::String(s) => s.clone(),
        Value::Array(a) => format!("[{}]", a.iter().map(go_v).collect::<Vec<_>>().join(" ")),
        Value::Object(m) => format!(
            "map[{}]",
            m.iter()
                .map(|(k, v)| format!("{k}:{}", go_v(v)))
                .collect::<Vec<_>>()
                .join(" ")
        ),
        other => other.to_string(),
    }
}

/// Go's `%T` of a decoded JSON value.
fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float64",
        Value::Number(_) => "int64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

fn prefix(path: &Path) -> String {
    super::fieldpath::display(path)
}

fn validate_at(schema: &Schema, ty: &TypeRef, v: &Value, path: &Path, errs: &mut Vec<String>) {
    let Some(r) = schema.resolve(ty) else {
        errs.push(format!("{}: schema error: no type found", prefix(path)));
        return;
    };
    match deduce(&r, Some(v)) {
        As::Scalar => {
            let t = r.atom.scalar.unwrap_or(Scalar::Untyped);
            if !scalar_ok(t, Some(v)) {
                // validateScalar's texts (`%T` of the value for numbers).
                let msg = match t {
                    Scalar::Numeric => {
                        format!("expected numeric (int or float), got {}", go_type(v))
                    }
                    Scalar::String => format!(
                        "expected string, got &value.valueUnstructured{{Value:{}}}",
                        go_sharp_v(v)
                    ),
                    Scalar::Boolean => format!("expected boolean, got &{{{}}}", go_v(v)),
                    Scalar::Untyped => format!("expected any scalar, got &{{{}}}", go_v(v)),
                };
                errs.push(format!("{}: {msg}", prefix(path)));
            }
        }
        As::List => {
            let list = r.atom.list.as_ref().expect("deduced list");
            let Some(items) = v.as_array() else {
                if !v.is_null() {
                    errs.push(format!(
                        "{}: expected list, got {}",
                        prefix(path),
                        super::fieldpath::go_json(v)
                    ));
                }
                return;
            };
            if r.list_er() == Relationship::Atomic {
                for (i, item) in items.iter().enumerate() {
                    validate_at(
                        schema,
                        &list.element,
                        item,
                        &with(path, PathElement::Index(i)),
                        errs,
                    );
                }
                return;
            }
            let mut seen: Vec<PathElement> = Vec::new();
            for (i, item) in items.iter().enumerate() {
                match item_element(schema, list, item) {
                    Err(e) => errs.push(format!("{}: element {i}: {e}", prefix(path))),
                    Ok(pe) => {
                        if seen.contains(&pe) {
                            errs.push(format!("{}: duplicate entries for key {pe}", prefix(path)));
                            continue;
                        }
                        validate_at(schema, &list.element, item, &with(path, pe.clone()), errs);
                        seen.push(pe);
                    }
                }
            }
        }
        As::Map => {
            let map = r.atom.map.as_ref().expect("deduced map");
            let Some(m) = v.as_object() else {
                if !v.is_null() {
                    errs.push(format!(
                        "{}: expected map, got {}",
                        prefix(path),
                        super::fieldpath::go_json(v)
                    ));
                }
                return;
            };
            for (k, val) in m {
                let p = with(path, PathElement::field(k));
                if map.field(k).is_none() && matches!(map.element, TypeRef::None) {
                    errs.push(format!("{}: field not declared in schema", prefix(&p)));
                    continue;
                }
                validate_at(schema, map.member_type(k), val, &p, errs);
            }
        }
        As::Invalid => errs.push(format!("{}: schema error: invalid atom", prefix(path))),
    }
}

// ---------------------------------------------------------------------------------------------
// Merge

/// `TypedValue.Merge`: `rhs` (an applied configuration) over `lhs` (the live object).
pub(crate) fn merge(schema: &Schema, ty: &TypeRef, lhs: &Value, rhs: &Value) -> Value {
    merge_at(schema, ty, Some(lhs), Some(rhs)).unwrap_or(Value::Null)
}

fn merge_at(
    schema: &Schema,
    ty: &TypeRef,
    lhs: Option<&Value>,
    rhs: Option<&Value>,
) -> Option<Value> {
    let r = schema.resolve(ty)?;
    let alhs = deduce(&r, lhs);
    let arhs = deduce(&r, rhs);
    if rhs.is_none() {
        merge_atom(schema, &r, alhs, lhs, rhs)
    } else if lhs.is_none() || alhs == arhs {
        merge_atom(schema, &r, arhs, lhs, rhs)
    } else {
        // Two shapes: the later (the configuration's) wins.
        merge_atom(schema, &r, arhs, lhs, rhs)
    }
}

fn keep_rhs(lhs: Option<&Value>, rhs: Option<&Value>) -> Option<Value> {
    rhs.or(lhs).cloned()
}

fn merge_atom(
    schema: &Schema,
    r: &Resolved,
    how: As,
    lhs: Option<&Value>,
    rhs: Option<&Value>,
) -> Option<Value> {
    match how {
        As::Scalar | As::Invalid => keep_rhs(lhs, rhs),
        As::List => {
            let list = r.atom.list.as_ref().expect("deduced list");
            let (l, rr) = (as_list(lhs), as_list(rhs));
            let empty = l.is_none_or(Vec::is_empty) && rr.is_none_or(Vec::is_empty);
            if r.list_er() == Relationship::Atomic || empty {
                return keep_rhs(lhs, rhs);
            }
            if l.is_none() && rr.is_none() {
                return None;
            }
            merge_list_items(schema, list, l, rr)
        }
        As::Map => {
            let map = r.atom.map.as_ref().expect("deduced map");
            let (l, rr) = (as_map(lhs), as_map(rhs));
            let empty = l.is_none_or(Map::is_empty) && rr.is_none_or(Map::is_empty);
            if r.map_er() == Relationship::Atomic || empty {
                return keep_rhs(lhs, rhs);
            }
            if l.is_none() && rr.is_none() {
                return None;
            }
            merge_map_items(schema, map, l, rr)
        }
    }
}

fn merge_map_items(
    schema: &Schema,
    map: &MapDef,
    lhs: Option<&Map<String, Value>>,
    rhs: Option<&Map<String, Value>>,
) -> Option<Value> {
    let empty = Map::new();
    let (l, r) = (lhs.unwrap_or(&empty), rhs.unwrap_or(&empty));
    let mut out = Map::new();
    // Live members keep their place; new ones follow in the configuration's order.
    for (k, lv) in l {
        if let Some(v) = merge_at(schema, map.member_type(k), Some(lv), r.get(k)) {
            out.insert(k.clone(), v);
        }
    }
    for (k, rv) in r {
        if !l.contains_key(k) {
            if let Some(v) = merge_at(schema, map.member_type(k), None, Some(rv)) {
                out.insert(k.clone(), v);
            }
        }
    }
    (!out.is_empty()).then_some(Value::Object(out))
}

fn merge_list_items(
    schema: &Schema,
    list: &ListDef,
    lhs: Option<&Vec<Value>>,
    rhs: Option<&Vec<Value>>,
) -> Option<Value> {
    let index = |items: Option<&Vec<Value>>| -> Vec<(PathElement, Option<Value>)> {
        // (element, the item; None when the element repeats)
        let mut pes: Vec<(PathElement, Option<Value>)> = Vec::new();
        for item in items.into_iter().flatten() {
            let Ok(pe) = item_element(schema, list, item) else {
                continue;
            };
            if let Some(seen) = pes.iter_mut().find(|(p, _)| *p == pe) {
                seen.1 = None;
                pes.push((pe, None));
            } else {
                pes.push((pe, Some(item.clone())));
            }
        }
        pes
    };
    let rhs_pes = index(rhs);
    let lhs_pes = index(lhs);
    let observed =
        |pes: &[(PathElement, Option<Value>)], pe: &PathElement| -> Option<Option<Value>> {
            pes.iter().find(|(p, _)| p == pe).map(|(_, v)| v.clone())
        };
    let mut shared: std::collections::VecDeque<PathElement> = rhs_pes
        .iter()
        .filter(|(p, _)| observed(&lhs_pes, p).is_some())
        .map(|(p, _)| p.clone())
        .collect();
    let mut next_shared = shared.pop_front();
    let mut merged_rhs: Vec<PathElement> = Vec::new();
    let mut out = Vec::new();
    let (l_len, r_len) = (lhs_pes.len(), rhs_pes.len());
    let (mut li, mut ri) = (0, 0);
    let item = |l: Option<Value>, r: Option<Value>| {
        merge_at(schema, &list.element, l.as_ref(), r.as_ref())
    };
    while li < l_len || ri < r_len {
        if li < l_len && ri < r_len {
            let pe = &lhs_pes[li].0;
            if *pe == rhs_pes[ri].0 {
                merged_rhs.push(pe.clone());
                let l = observed(&lhs_pes, pe).flatten();
                let r = observed(&rhs_pes, pe).flatten();
                if let Some(v) = item(l, r) {
                    out.push(v);
                }
                li += 1;
                ri += 1;
                next_shared = shared.pop_front();
                continue;
            }
            if observed(&rhs_pes, pe).is_some() && next_shared.as_ref().is_some_and(|n| n != pe) {
                li += 1;
                continue;
            }
        }
        if li < l_len {
            let pe = lhs_pes[li].0.clone();
            if observed(&rhs_pes, &pe).is_none() {
                if let Some(v) = item(lhs.and_then(|l| l.get(li)).cloned(), None) {
                    out.push(v);
                }
                li += 1;
                continue;
            } else if merged_rhs.contains(&pe) {
                li += 1;
            }
        }
        if ri < r_len {
            let pe = rhs_pes[ri].0.clone();
            merged_rhs.push(pe.clone());
            let l = observed(&lhs_pes, &pe).flatten();
            let r = observed(&rhs_pes, &pe).flatten();
            if let Some(v) = item(l, r) {
                out.push(v);
            }
            ri += 1;
            if next_shared.as_ref() == Some(&pe) {
                next_shared = shared.pop_front();
            }
        }
    }
    (!out.is_empty()).then_some(Value::Array(out))
}

// ---------------------------------------------------------------------------------------------
// RemoveItems

/// `TypedValue.RemoveItems`: `v` without the members of `remove`. What is left empty is gone
/// (`None` for the whole value).
pub(crate) fn remove_items(
    schema: &Schema,
    ty: &TypeRef,
    v: &Value,
    remove: &Set,
) -> Option<Value> {
    let r = schema.resolve(ty)?;
    match deduce(&r, Some(v)) {
        As::Scalar => Some(v.clone()),
        As::List => {
            let list = r.atom.list.as_ref().expect("deduced list");
            let items = v.as_array()?;
            if items.is_empty() || r.list_er() == Relationship::Atomic {
                return None;
            }
            let mut out = Vec::new();
            for item in items {
                let Ok(pe) = item_element(schema, list, item) else {
                    out.push(item.clone());
                    continue;
                };
                if remove.has(std::slice::from_ref(&pe)) {
                    continue;
                }
                if remove.has_children(&pe) {
                    if let Some(kept) =
                        remove_items(schema, &list.element, item, &remove.with_prefix(&pe))
                    {
                        out.push(kept);
                    }
                } else {
                    out.push(item.clone());
                }
            }
            (!out.is_empty()).then_some(Value::Array(out))
        }
        As::Map => {
            let map = r.atom.map.as_ref().expect("deduced map");
            let m = v.as_object()?;
            if m.is_empty() || r.map_er() == Relationship::Atomic {
                return None;
            }
            let mut out = Map::new();
            for (k, val) in m {
                let pe = PathElement::field(k);
                if remove.has(std::slice::from_ref(&pe)) {
                    continue;
                }
                if remove.has_children(&pe) {
                    if let Some(kept) =
                        remove_items(schema, map.member_type(k), val, &remove.with_prefix(&pe))
                    {
                        out.insert(k.clone(), kept);
                    }
                } else {
                    out.insert(k.clone(), val.clone());
                }
            }
            (!out.is_empty()).then_some(Value::Object(out))
        }
        As::Invalid => Some(v.clone()),
    }
}

/// `Set.EnsureNamedFieldsAreMembers`: `set` plus every struct field that has members below it.
pub(crate) fn ensure_named_fields_are_members(schema: &Schema, ty: &TypeRef, set: &Set) -> Set {
    let mut out = set.clone();
    for p in set.iterate() {
        let mut tr: Option<&TypeRef> = Some(ty);
        for n in 0..p.len().saturating_sub(1) {
            let r = tr.and_then(|t| schema.resolve(t));
            let next = match (&p[n], r) {
                (PathElement::Field(name), Some(r)) => match r.atom.map.as_ref() {
                    Some(m) => {
                        if m.field(name).is_some() {
                            out.insert(p[..=n].to_vec());
                        }
                        Some(m.member_type(name))
                    }
                    None => None,
                },
                (PathElement::Key(_), Some(r)) => r.atom.list.as_ref().map(|l| &l.element),
                _ => None,
            };
            tr = next;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apiserver::patch::smd::fieldpath::path;
    use serde_json::json;

    fn deploy() -> TypeRef {
        Schema::builtins()
            .kind("apps/v1", "Deployment")
            .unwrap()
            .ty
            .clone()
    }

    #[test]
    fn compare_from_the_empty_object_marks_new_maps_as_members() {
        let s = Schema::builtins();
        let zero = &s.kind("apps/v1", "Deployment").unwrap().zero;
        let obj = json!({"metadata": {"name": "d", "labels": {"app": "x"}},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "x"}},
                     "template": {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [{"name": "c", "image": "i", "resources": {}}]}},
                     "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%"}}},
            "status": {}});
        let c = compare(s, &deploy(), zero, &obj);
        assert!(c.removed.is_empty() && c.modified.len() == 1, "{c:?}");
        let added = c.added.to_fields_v1();
        assert_eq!(
            added,
            json!({"f:metadata": {"f:labels": {".": {}, "f:app": {}}, "f:name": {}},
                   "f:spec": {"f:replicas": {}, "f:strategy": {"f:rollingUpdate": {".": {}, "f:maxSurge": {}}, "f:type": {}},
                              "f:template": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                                             "f:spec": {"f:containers": {"k:{\"name\":\"c\"}": {".": {}, "f:image": {}, "f:name": {}, "f:resources": {}}}}}}})
        );
        // the atomic selector went from null to a value
        assert!(c.modified.has(&path(&["spec", "selector"])));
    }

    #[test]
    fn field_set_of_an_applied_configuration() {
        let s = Schema::builtins();
        let cfg = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "labels": {"a": "b"}},
                         "spec": {"ports": [{"port": 80}], "selector": {"app": "x"}}});
        let ty = s.kind("v1", "Service").unwrap().ty.clone();
        assert!(validate(s, &ty, &cfg).is_empty());
        let set = to_field_set(s, &ty, &cfg);
        assert_eq!(
            set.to_fields_v1(),
            json!({"f:apiVersion": {}, "f:kind": {},
                   "f:metadata": {"f:labels": {"f:a": {}}, "f:name": {}},
                   "f:spec": {"f:ports": {"k:{\"port\":80,\"protocol\":\"TCP\"}": {".": {}, "f:port": {}}}, "f:selector": {}}})
        );
    }

    #[test]
    fn validation_words_as_smd() {
        let s = Schema::builtins();
        let ty = s.kind("v1", "Pod").unwrap().ty.clone();
        let errs = validate(
            s,
            &ty,
            &json!({"spec": {"containers": [{"image": "x"}], "bogus": 1}}),
        );
        assert_eq!(errs, [".spec.bogus: field not declared in schema"]);
        let svc = s.kind("v1", "Service").unwrap().ty.clone();
        let errs = validate(s, &svc, &json!({"spec": {"ports": ["x"]}}));
        assert_eq!(
            errs,
            [".spec.ports: element 0: associative list with keys may not have non-map elements"]
        );
        let errs = validate(
            s,
            &ty,
            &json!({"spec": {"containers": [{"name": "a"}, {"name": "a"}]}}),
        );
        assert_eq!(
            errs,
            [".spec.containers: duplicate entries for key [name=\"a\"]"]
        );
    }

    #[test]
    fn merge_orders_lists_as_smd() {
        let s = Schema::builtins();
        let ty = s.kind("v1", "Pod").unwrap().ty.clone();
        let live = json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}]}});
        let cfg = json!({"spec": {"containers": [{"name": "c"}, {"name": "a", "image": "x"}]}});
        let out = merge(s, &ty, &live, &cfg);
        assert_eq!(
            out["spec"]["containers"],
            json!([{"name": "c"}, {"name": "a", "image": "x"}, {"name": "b"}])
        );
    }

    #[test]
    fn remove_items_prunes_what_it_empties() {
        let s = Schema::builtins();
        let ty = s.kind("v1", "ConfigMap").unwrap().ty.clone();
        let v =
            json!({"metadata": {"name": "c", "labels": {"a": "1"}}, "data": {"k": "v", "l": "w"}});
        let remove: Set = [path(&["metadata", "labels", "a"]), path(&["data", "k"])]
            .into_iter()
            .collect();
        assert_eq!(
            remove_items(s, &ty, &v, &remove),
            Some(json!({"metadata": {"name": "c"}, "data": {"l": "w"}}))
        );
        let named = ensure_named_fields_are_members(s, &ty, &remove);
        // struct fields with members below them become members; map keys do not
        assert!(named.has(&path(&["metadata"])));
        assert!(named.has(&path(&["metadata", "labels"])));
        assert!(named.has(&path(&["data"])));
        assert_eq!(named.len(), 5);
    }
}
