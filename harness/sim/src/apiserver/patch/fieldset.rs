//! Field paths and sets in the `FieldsV1` encoding used by
//! `metadata.managedFields`.
//!
//! A path is a list of encoded path elements:
//! * `f:<name>`: a map key / struct field,
//! * `k:{"name":"c1"}`: the element of an associative list with those keys,
//! * `v:<json>`: the element of a set-like primitive list,
//! * `i:<n>`: a list index (only read, never produced).
//!
//! In `FieldsV1` JSON a set is a tree of those elements; `{}` is a leaf
//! member and `".": {}` marks an inner node that is itself a member.

use super::schema::{key_default, Field, GoType, ListType};
use super::PatchError;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};

pub(crate) type Path = Vec<String>;

/// Top-level fields that are never owned (the server sets them).
const IGNORED_ROOT: &[&str] = &["apiVersion", "kind"];
/// `metadata` fields that are never owned.
const IGNORED_METADATA: &[&str] = &[
    "name",
    "namespace",
    "creationTimestamp",
    "selfLink",
    "uid",
    "clusterName",
    "generation",
    "managedFields",
    "resourceVersion",
];

/// A set of member paths.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct FieldSet(BTreeSet<Path>);

impl FieldSet {
    /// Decode `FieldsV1`. Malformed parts are read leniently: a non-object
    /// value is taken as a leaf.
    pub(crate) fn from_fields_v1(v: &Value) -> FieldSet {
        fn walk(v: &Value, prefix: &mut Path, out: &mut BTreeSet<Path>) {
            match v {
                Value::Object(m) if !m.is_empty() => {
                    for (k, child) in m {
                        if k == "." {
                            if !prefix.is_empty() {
                                out.insert(prefix.clone());
                            }
                            continue;
                        }
                        prefix.push(k.clone());
                        walk(child, prefix, out);
                        prefix.pop();
                    }
                }
                _ => {
                    if !prefix.is_empty() {
                        out.insert(prefix.clone());
                    }
                }
            }
        }
        let mut out = BTreeSet::new();
        walk(v, &mut Vec::new(), &mut out);
        FieldSet(out)
    }

    pub(crate) fn to_fields_v1(&self) -> Value {
        #[derive(Default)]
        struct Node {
            member: bool,
            children: BTreeMap<String, Node>,
        }
        fn encode(node: &Node) -> Value {
            let mut m = Map::new();
            if node.member && !node.children.is_empty() {
                m.insert(".".to_owned(), Value::Object(Map::new()));
            }
            for (k, child) in &node.children {
                m.insert(k.clone(), encode(child));
            }
            Value::Object(m)
        }
        let mut root = Node::default();
        for path in &self.0 {
            let mut node = &mut root;
            for elem in path {
                node = node.children.entry(elem.clone()).or_default();
            }
            node.member = true;
        }
        encode(&root)
    }

    pub(crate) fn contains(&self, p: &[String]) -> bool {
        self.0.contains(p)
    }

    pub(crate) fn remove(&mut self, p: &[String]) -> bool {
        self.0.remove(p)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &Path> {
        self.0.iter()
    }

    /// Whether `p` or anything below it is a member.
    pub(crate) fn covers(&self, p: &[String]) -> bool {
        // Descendants sort right after `p` itself.
        self.0
            .range(p.to_vec()..)
            .next()
            .is_some_and(|q| q.starts_with(p))
    }

    pub(crate) fn extend<'a>(&mut self, paths: impl IntoIterator<Item = &'a Path>) {
        self.0.extend(paths.into_iter().cloned());
    }
}

impl FromIterator<Path> for FieldSet {
    fn from_iter<I: IntoIterator<Item = Path>>(iter: I) -> Self {
        FieldSet(iter.into_iter().collect())
    }
}

pub(crate) fn field_element(name: &str) -> String {
    format!("f:{name}")
}

/// The key of an associative-list element: its key fields (sorted by name),
/// missing ones defaulted from the schema. Err: why it has no key.
pub(crate) fn element_key(e: &Value, keys: &[&str]) -> Result<Map<String, Value>, String> {
    let Value::Object(m) = e else {
        return Err("associative list element is not a map".to_owned());
    };
    let mut names = keys.to_vec();
    names.sort_unstable();
    let mut key = Map::new();
    for name in names {
        let value = m
            .get(name)
            .filter(|v| !v.is_null())
            .cloned()
            .or_else(|| key_default(name));
        match value {
            Some(v) => {
                key.insert(name.to_owned(), v);
            }
            None => {
                return Err(format!(
                    "associative list with keys has an element that omits key field {name:?} (and doesn't have default value)"
                ))
            }
        }
    }
    Ok(key)
}

fn key_element(key: &Map<String, Value>) -> String {
    format!("k:{}", Value::Object(key.clone()))
}

/// Render a path like the apiserver does in conflict messages:
/// `.spec.containers[name="c1"].image`, `.metadata.finalizers[="x"]`.
pub(crate) fn display(path: &[String]) -> String {
    let mut out = String::new();
    for elem in path {
        if let Some(name) = elem.strip_prefix("f:") {
            out.push('.');
            out.push_str(name);
        } else if let Some(key) = elem.strip_prefix("k:") {
            match serde_json::from_str::<Map<String, Value>>(key) {
                Ok(m) => out.push_str(&display_key(&m)),
                Err(_) => out.push_str(elem),
            }
        } else if let Some(v) = elem.strip_prefix("v:") {
            out.push_str(&format!("[={v}]"));
        } else if let Some(i) = elem.strip_prefix("i:") {
            out.push_str(&format!("[{i}]"));
        } else {
            out.push_str(elem);
        }
    }
    out
}

fn display_key(key: &Map<String, Value>) -> String {
    let parts: Vec<String> = key.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!("[{}]", parts.join(","))
}

/// All member paths of an object (with the value at each), i.e. the set a
/// manager owns when it sets exactly this object: leaf values, atomic lists,
/// empty maps, list elements, set values. Server-managed metadata is left
/// out.
///
/// With `strict` (an error prefix), an associative list whose element has
/// no key, or two elements with the same key, is an error; otherwise such a
/// list is treated as atomic.
pub(crate) fn collect<'a>(
    root: &'a Value,
    ty: GoType,
    strict: Option<&str>,
) -> Result<BTreeMap<Path, &'a Value>, PatchError> {
    collect_except(root, ty, strict, &|_, _| false)
}

/// `collect`, leaving out each map member for which `skip(parent path, key)` is true (the
/// subtrees a caller knows to be unchanged).
pub(crate) fn collect_except<'a>(
    root: &'a Value,
    ty: GoType,
    strict: Option<&str>,
    skip: &dyn Fn(&[String], &str) -> bool,
) -> Result<BTreeMap<Path, &'a Value>, PatchError> {
    let mut c = Collector {
        out: BTreeMap::new(),
        strict,
        path: Vec::new(),
        skip,
    };
    if let Value::Object(m) = root {
        c.map(m, ty)?;
    }
    Ok(c.out)
}

struct Collector<'a, 's> {
    out: BTreeMap<Path, &'a Value>,
    strict: Option<&'s str>,
    path: Path,
    skip: &'s dyn Fn(&[String], &str) -> bool,
}

impl<'a> Collector<'a, '_> {
    fn ignored(&self, key: &str) -> bool {
        match self.path.as_slice() {
            [] => IGNORED_ROOT.contains(&key),
            [only] if only == "f:metadata" => IGNORED_METADATA.contains(&key),
            _ => false,
        }
    }

    fn map(&mut self, m: &'a Map<String, Value>, ty: GoType) -> Result<(), PatchError> {
        for (k, v) in m {
            if self.ignored(k) || (self.skip)(&self.path, k) {
                continue;
            }
            let field = ty.field(k);
            self.path.push(field_element(k));
            self.value(v, &field)?;
            self.path.pop();
        }
        Ok(())
    }

    fn value(&mut self, v: &'a Value, field: &Field) -> Result<(), PatchError> {
        match v {
            Value::Object(m) if !m.is_empty() => self.map(m, field.ty),
            Value::Array(a) if !a.is_empty() => self.list(v, a, field),
            _ => {
                self.out.insert(self.path.clone(), v);
                Ok(())
            }
        }
    }

    fn list(
        &mut self,
        whole: &'a Value,
        items: &'a [Value],
        field: &Field,
    ) -> Result<(), PatchError> {
        match field.list_type {
            ListType::Atomic => {
                self.out.insert(self.path.clone(), whole);
            }
            ListType::Set => {
                if items.iter().any(|e| e.is_object() || e.is_array()) {
                    self.out.insert(self.path.clone(), whole);
                    return Ok(());
                }
                for e in items {
                    self.path.push(format!("v:{e}"));
                    self.out.insert(self.path.clone(), e);
                    self.path.pop();
                }
            }
            ListType::Map(keys) => {
                let mut keyed: Vec<(Map<String, Value>, &'a Value)> =
                    Vec::with_capacity(items.len());
                for (i, e) in items.iter().enumerate() {
                    match element_key(e, keys) {
                        Ok(key) => keyed.push((key, e)),
                        Err(reason) => {
                            return self.bad_list(
                                format!("{}: element {i}: {reason}", display(&self.path)),
                                whole,
                            )
                        }
                    }
                }
                for (i, (key, _)) in keyed.iter().enumerate() {
                    if keyed[..i].iter().any(|(k, _)| k == key) {
                        let msg = format!(
                            "{}: duplicate entries for key {}",
                            display(&self.path),
                            display_key(key)
                        );
                        return self.bad_list(msg, whole);
                    }
                }
                for (key, e) in keyed {
                    self.path.push(key_element(&key));
                    self.out.insert(self.path.clone(), e);
                    if let Value::Object(m) = e {
                        self.map(m, field.ty)?;
                    }
                    self.path.pop();
                }
            }
        }
        Ok(())
    }

    fn bad_list(&mut self, msg: String, whole: &'a Value) -> Result<(), PatchError> {
        match self.strict {
            Some(prefix) => Err(PatchError::Invalid(format!("{prefix}: {msg}"))),
            None => {
                self.out.insert(self.path.clone(), whole);
                Ok(())
            }
        }
    }
}

/// Where one path element points inside a container.
enum Slot {
    Key(String),
    Index(usize),
}

fn locate(container: &Value, elem: &str) -> Option<Slot> {
    if let Some(name) = elem.strip_prefix("f:") {
        return container
            .as_object()?
            .contains_key(name)
            .then(|| Slot::Key(name.to_owned()));
    }
    let items = container.as_array()?;
    if let Some(key) = elem.strip_prefix("k:") {
        let key: Map<String, Value> = serde_json::from_str(key).ok()?;
        return items
            .iter()
            .position(|e| {
                key.iter().all(|(name, want)| {
                    let have = e
                        .get(name)
                        .filter(|v| !v.is_null())
                        .cloned()
                        .or_else(|| key_default(name));
                    have.as_ref() == Some(want)
                })
            })
            .map(Slot::Index);
    }
    if let Some(v) = elem.strip_prefix("v:") {
        let want: Value = serde_json::from_str(v).ok()?;
        return items.iter().position(|e| *e == want).map(Slot::Index);
    }
    if let Some(i) = elem.strip_prefix("i:") {
        let i: usize = i.parse().ok()?;
        return (i < items.len()).then_some(Slot::Index(i));
    }
    None
}

fn child<'a>(v: &'a Value, slot: &Slot) -> Option<&'a Value> {
    match slot {
        Slot::Key(k) => v.get(k),
        Slot::Index(i) => v.get(*i),
    }
}

fn child_mut<'a>(v: &'a mut Value, slot: &Slot) -> Option<&'a mut Value> {
    match slot {
        Slot::Key(k) => v.get_mut(k),
        Slot::Index(i) => v.get_mut(*i),
    }
}

/// The value at `path`, if present.
pub(crate) fn get<'a>(root: &'a Value, path: &[String]) -> Option<&'a Value> {
    let mut cur = root;
    for elem in path {
        let slot = locate(cur, elem)?;
        cur = child(cur, &slot)?;
    }
    Some(cur)
}

fn get_mut<'a>(root: &'a mut Value, path: &[String]) -> Option<&'a mut Value> {
    let mut cur = root;
    for elem in path {
        let slot = locate(cur, elem)?;
        cur = child_mut(cur, &slot)?;
    }
    Some(cur)
}

/// Remove the value at `path`; false if it was not there.
pub(crate) fn remove(root: &mut Value, path: &[String]) -> bool {
    let Some((last, parent_path)) = path.split_last() else {
        return false;
    };
    let Some(parent) = get_mut(root, parent_path) else {
        return false;
    };
    match (locate(parent, last), parent) {
        (Some(Slot::Key(k)), Value::Object(m)) => m.shift_remove(&k).is_some(),
        (Some(Slot::Index(i)), Value::Array(a)) => {
            a.remove(i);
            true
        }
        _ => false,
    }
}

/// Whether the last element of `path` is a list element (not a field).
pub(crate) fn is_element(path: &[String]) -> bool {
    path.last().is_some_and(|e| !e.starts_with("f:"))
}

/// Whether `path` is a key field of the associative-list element it is in,
/// e.g. `...k:{"name":"c1"}, f:name`.
pub(crate) fn is_key_field(path: &[String]) -> bool {
    let [.., parent, last] = path else {
        return false;
    };
    let (Some(key), Some(name)) = (parent.strip_prefix("k:"), last.strip_prefix("f:")) else {
        return false;
    };
    serde_json::from_str::<Map<String, Value>>(key).is_ok_and(|m| m.contains_key(name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fields_v1_round_trip() {
        let v = json!({
            "f:metadata": {"f:labels": {"f:app": {}}},
            "f:spec": {"f:containers": {"k:{\"name\":\"c1\"}": {".": {}, "f:image": {}, "f:name": {}}}}
        });
        let set = FieldSet::from_fields_v1(&v);
        assert_eq!(set.iter().count(), 4);
        assert!(set.contains(&[
            "f:spec".into(),
            "f:containers".into(),
            "k:{\"name\":\"c1\"}".into()
        ]));
        assert_eq!(set.to_fields_v1(), v);
    }

    #[test]
    fn collect_uses_keys_sets_and_skips_server_metadata() {
        let obj = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "uid": "u", "labels": {"a": "1"}, "finalizers": ["x"]},
            "spec": {"containers": [{"name": "c", "ports": [{"containerPort": 80}]}], "tolerations": [{"key": "k"}]}
        });
        let set: FieldSet = collect(&obj, GoType::root("Pod"), None)
            .unwrap()
            .into_keys()
            .collect();
        assert_eq!(
            set.to_fields_v1(),
            json!({
                "f:metadata": {"f:finalizers": {"v:\"x\"": {}}, "f:labels": {"f:a": {}}},
                "f:spec": {
                    "f:containers": {"k:{\"name\":\"c\"}": {
                        ".": {}, "f:name": {},
                        "f:ports": {"k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}}}
                    }},
                    "f:tolerations": {}
                }
            })
        );
    }

    #[test]
    fn strict_collect_rejects_missing_and_duplicate_keys() {
        let obj = json!({"spec": {"containers": [{"image": "x"}]}});
        assert_eq!(
            collect(&obj, GoType::root("Pod"), Some("P")).unwrap_err(),
            PatchError::Invalid(
                "P: .spec.containers: element 0: associative list with keys has an element that omits key field \"name\" (and doesn't have default value)".into()
            )
        );
        let obj = json!({"spec": {"containers": [{"name": "a"}, {"name": "a"}]}});
        assert_eq!(
            collect(&obj, GoType::root("Pod"), Some("P")).unwrap_err(),
            PatchError::Invalid(
                "P: .spec.containers: duplicate entries for key [name=\"a\"]".into()
            )
        );
        // lenient: atomic
        let set = collect(&obj, GoType::root("Pod"), None).unwrap();
        assert_eq!(set.len(), 1);
    }

    #[test]
    fn get_remove_and_display() {
        let mut obj = json!({"spec": {"ports": [{"port": 80}, {"port": 81, "protocol": "UDP"}]}, "m": {"f": ["a", "b"]}});
        let p: Path = vec![
            "f:spec".into(),
            "f:ports".into(),
            "k:{\"port\":81,\"protocol\":\"UDP\"}".into(),
        ];
        assert_eq!(get(&obj, &p), Some(&json!({"port": 81, "protocol": "UDP"})));
        assert_eq!(display(&p), ".spec.ports[port=81,protocol=\"UDP\"]");
        let default_tcp: Path = vec![
            "f:spec".into(),
            "f:ports".into(),
            "k:{\"port\":80,\"protocol\":\"TCP\"}".into(),
        ];
        assert_eq!(get(&obj, &default_tcp), Some(&json!({"port": 80})));
        assert!(remove(&mut obj, &p));
        assert!(!remove(&mut obj, &p));
        let v: Path = vec!["f:m".into(), "f:f".into(), "v:\"a\"".into()];
        assert_eq!(display(&v), ".m.f[=\"a\"]");
        assert!(remove(&mut obj, &v));
        assert_eq!(
            obj,
            json!({"spec": {"ports": [{"port": 80}]}, "m": {"f": ["b"]}})
        );
        assert!(is_key_field(&[
            "k:{\"name\":\"c\"}".into(),
            "f:name".into()
        ]));
        assert!(!is_key_field(&[
            "k:{\"name\":\"c\"}".into(),
            "f:image".into()
        ]));
    }

    #[test]
    fn covers_descendants() {
        let set: FieldSet = [vec!["f:a".to_owned(), "f:b".to_owned()]]
            .into_iter()
            .collect();
        assert!(set.covers(&["f:a".to_owned()]));
        assert!(set.covers(&["f:a".to_owned(), "f:b".to_owned()]));
        assert!(!set.covers(&["f:ab".to_owned()]));
        assert!(!set.covers(&["f:a".to_owned(), "f:b".to_owned(), "f:c".to_owned()]));
    }
}
