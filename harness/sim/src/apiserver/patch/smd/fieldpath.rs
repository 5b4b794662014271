//! Field paths and sets as structured-merge-diff's `fieldpath` package has them, and their
//! `FieldsV1` encoding in `metadata.managedFields`.
//!
//! A path element is a struct or map member (`f:name`), the element of an associative list with
//! these key fields (`k:{"name":"c"}`, keys sorted by name), the element of a set (`v:"x"`) or a
//! list index (`i:0`, read only). Elements order as `PathElement.Compare` orders them (members,
//! then keys, then values, then indices; values by `value.Compare`), which is the order `FieldsV1`
//! is written in: `"."` (the node is itself a member) first, then the children in order.

use serde_json::{Map, Number, Value};
use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

#[derive(Clone, Debug)]
pub(crate) enum PathElement {
    Field(String),
    /// Key fields, sorted by name.
    Key(Vec<(String, Value)>),
    Value(Value),
    Index(usize),
}

pub(crate) type Path = Vec<PathElement>;

impl PathElement {
    fn rank(&self) -> u8 {
        match self {
            PathElement::Field(_) => 0,
            PathElement::Key(_) => 1,
            PathElement::Value(_) => 2,
            PathElement::Index(_) => 3,
        }
    }

    pub(crate) fn field(name: &str) -> PathElement {
        PathElement::Field(name.to_owned())
    }

    /// The `FieldsV1` key of this element (`f:`, `k:`, `v:`, `i:`).
    pub(crate) fn serialize(&self) -> String {
        match self {
            PathElement::Field(name) => format!("f:{name}"),
            PathElement::Key(fields) => {
                let mut m = Map::new();
                for (k, v) in fields {
                    m.insert(k.clone(), v.clone());
                }
                format!("k:{}", go_json(&Value::Object(m)))
            }
            PathElement::Value(v) => format!("v:{}", go_json(v)),
            PathElement::Index(i) => format!("i:{i}"),
        }
    }

    /// Reads a `FieldsV1` key; `Ok(None)` for an unknown element type (ignored, as upstream).
    pub(crate) fn deserialize(s: &str) -> Result<Option<PathElement>, String> {
        let (kind, rest) = match (s.get(..1), s.get(1..2), s.get(2..)) {
            (Some(k), Some(":"), Some(rest)) => (k, rest),
            _ if s.len() < 2 => return Err(format!("key must be 2 characters long: {s}")),
            _ => return Err(format!("missing colon: {s}")),
        };
        match kind {
            "f" => Ok(Some(PathElement::Field(rest.to_owned()))),
            "v" => serde_json::from_str(rest)
                .map(|v| Some(PathElement::Value(v)))
                .map_err(|e| e.to_string()),
            "k" => {
                let m: Map<String, Value> =
                    serde_json::from_str(rest).map_err(|e| e.to_string())?;
                let mut fields: Vec<(String, Value)> = m.into_iter().collect();
                fields.sort_by(|a, b| a.0.cmp(&b.0));
                Ok(Some(PathElement::Key(fields)))
            }
            "i" => rest
                .parse()
                .map(|i| Some(PathElement::Index(i)))
                .map_err(|e| format!("{e}")),
            _ => Ok(None),
        }
    }
}

impl PartialEq for PathElement {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for PathElement {}
impl PartialOrd for PathElement {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for PathElement {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (PathElement::Field(a), PathElement::Field(b)) => a.cmp(b),
            (PathElement::Key(a), PathElement::Key(b)) => {
                for ((ka, va), (kb, vb)) in a.iter().zip(b) {
                    match ka.cmp(kb).then_with(|| compare(va, vb)) {
                        Ordering::Equal => {}
                        o => return o,
                    }
                }
                a.len().cmp(&b.len())
            }
            (PathElement::Value(a), PathElement::Value(b)) => compare(a, b),
            (PathElement::Index(a), PathElement::Index(b)) => a.cmp(b),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

/// `PathElement.String`: `.name`, `[name="c"]`, `[="x"]`, `[0]`.
impl fmt::Display for PathElement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathElement::Field(name) => write!(f, ".{name}"),
            PathElement::Key(fields) => {
                let parts: Vec<String> = fields
                    .iter()
                    .map(|(k, v)| format!("{k}={}", to_string(v)))
                    .collect();
                write!(f, "[{}]", parts.join(","))
            }
            PathElement::Value(v) => write!(f, "[={}]", to_string(v)),
            PathElement::Index(i) => write!(f, "[{i}]"),
        }
    }
}

/// A path as conflict messages print it: `.spec.containers[name="c"].image`.
pub(crate) fn display(path: &[PathElement]) -> String {
    path.iter().map(ToString::to_string).collect()
}

/// `value.ToString`: strings quoted, everything else as JSON.
fn to_string(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s:?}"),
        other => go_json(other),
    }
}

/// JSON as Go's encoder writes it (`<`, `>`, `&`, U+2028 and U+2029 escaped; map keys sorted).
pub(crate) fn go_json(v: &Value) -> String {
    let sorted = sort_keys(v);
    let s = serde_json::to_string(&sorted).unwrap_or_default();
    if !s.contains(['<', '>', '&', '\u{2028}', '\u{2029}']) {
        return s;
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

fn sort_keys(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), sort_keys(&m[k])))
                    .collect(),
            )
        }
        Value::Array(a) => Value::Array(a.iter().map(sort_keys).collect()),
        other => other.clone(),
    }
}

fn number(n: &Number) -> (Option<i64>, f64) {
    (n.as_i64(), n.as_f64().unwrap_or(0.0))
}

fn type_rank(v: &Value) -> u8 {
    match v {
        Value::Number(n) if n.is_f64() => 0,
        Value::Number(_) => 1,
        Value::String(_) => 2,
        Value::Bool(_) => 3,
        Value::Array(_) => 4,
        Value::Object(_) => 5,
        Value::Null => 6,
    }
}

/// `value.Compare`: a total order over values (numbers numerically, then strings, booleans,
/// lists, maps, null).
pub(crate) fn compare(a: &Value, b: &Value) -> Ordering {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            let ((xi, xf), (yi, yf)) = (number(x), number(y));
            match (x.is_f64() || y.is_f64(), xi, yi) {
                (false, Some(xi), Some(yi)) => xi.cmp(&yi),
                _ => xf.partial_cmp(&yf).unwrap_or(Ordering::Equal),
            }
        }
        (Value::String(x), Value::String(y)) => x.cmp(y),
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Array(x), Value::Array(y)) => {
            for (p, q) in x.iter().zip(y) {
                match compare(p, q) {
                    Ordering::Equal => {}
                    o => return o,
                }
            }
            x.len().cmp(&y.len())
        }
        (Value::Object(x), Value::Object(y)) => {
            if x.is_empty() && y.is_empty() {
                return Ordering::Equal;
            }
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            for (i, k) in keys.into_iter().enumerate() {
                let c = if i == x.len() {
                    Ordering::Less
                } else if i == y.len() {
                    Ordering::Greater
                } else {
                    match (x.get(k), y.get(k)) {
                        (None, _) => Ordering::Greater,
                        (_, None) => Ordering::Less,
                        (Some(p), Some(q)) => compare(p, q),
                    }
                };
                if c != Ordering::Equal {
                    return c;
                }
            }
            Ordering::Equal
        }
        (Value::Null, Value::Null) => Ordering::Equal,
        // An int against a float compares numerically (handled above); otherwise by kind.
        _ => type_rank(a).cmp(&type_rank(b)),
    }
}

/// `value.Equals`: numbers compare numerically (an int equals the same float).
pub(crate) fn equals(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            if x.is_f64() || y.is_f64() {
                number(x).1 == number(y).1
            } else {
                x == y
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| equals(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, p)| y.get(k).is_some_and(|q| equals(p, q)))
        }
        _ => a == b,
    }
}

/// A set of paths (`fieldpath.Set`), shaped as upstream's: the elements that are members at
/// this node and, per element, the set below it. Set operations then compare only the
/// elements of one node at a time and `FieldsV1` maps onto it directly; a flat set of whole
/// paths spent most of a write comparing and cloning shared prefixes. The empty path (the
/// whole object) is never a member, and no child set is empty.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Set {
    members: BTreeSet<PathElement>,
    children: BTreeMap<PathElement, Set>,
}

impl Set {
    pub(crate) fn new() -> Set {
        Set::default()
    }

    pub(crate) fn insert(&mut self, p: Path) {
        let Some((last, prefix)) = p.split_last() else {
            return;
        };
        let mut node = self;
        for pe in prefix {
            node = node.children.entry(pe.clone()).or_default();
        }
        node.members.insert(last.clone());
    }

    pub(crate) fn has(&self, p: &[PathElement]) -> bool {
        let Some((last, prefix)) = p.split_last() else {
            return false;
        };
        let mut node = self;
        for pe in prefix {
            match node.children.get(pe) {
                Some(c) => node = c,
                None => return false,
            }
        }
        node.members.contains(last)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.members.is_empty() && self.children.is_empty()
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.members.len() + self.children.values().map(Set::len).sum::<usize>()
    }

    /// The members in path order (a path before the paths below it).
    #[cfg(test)]
    pub(crate) fn paths(&self) -> Vec<Path> {
        let mut out = self.iterate();
        out.sort();
        out
    }

    pub(crate) fn union(&self, other: &Set) -> Set {
        let mut out = self.clone();
        out.union_with(other);
        out
    }

    /// `self` becomes `self ∪ other`.
    pub(crate) fn union_with(&mut self, other: &Set) {
        self.members.extend(other.members.iter().cloned());
        for (pe, child) in &other.children {
            match self.children.get_mut(pe) {
                Some(mine) => mine.union_with(child),
                None => {
                    self.children.insert(pe.clone(), child.clone());
                }
            }
        }
    }

    pub(crate) fn intersection(&self, other: &Set) -> Set {
        let (small, large) = if self.members.len() <= other.members.len() {
            (self, other)
        } else {
            (other, self)
        };
        let members = small
            .members
            .iter()
            .filter(|pe| large.members.contains(*pe))
            .cloned()
            .collect();
        let mut children = BTreeMap::new();
        for (pe, child) in &self.children {
            if let Some(theirs) = other.children.get(pe) {
                let both = child.intersection(theirs);
                if !both.is_empty() {
                    children.insert(pe.clone(), both);
                }
            }
        }
        Set { members, children }
    }

    /// Members of `self` that are not members of `other` (a parent minus its child is the
    /// parent).
    pub(crate) fn difference(&self, other: &Set) -> Set {
        let mut out = self.clone();
        out.remove_all(other);
        out
    }

    /// `self` becomes `self - other` ([`Set::difference`]).
    pub(crate) fn remove_all(&mut self, other: &Set) {
        if other.is_empty() {
            return;
        }
        self.members.retain(|pe| !other.members.contains(pe));
        self.children.retain(|pe, child| {
            if let Some(theirs) = other.children.get(pe) {
                child.remove_all(theirs);
            }
            !child.is_empty()
        });
    }

    /// `RecursiveDifference`: drops every member of `self` that is, or is below, a member of
    /// `other`.
    pub(crate) fn recursive_difference(&self, other: &Set) -> Set {
        let members = self
            .members
            .iter()
            .filter(|pe| !other.members.contains(*pe))
            .cloned()
            .collect();
        let mut children = BTreeMap::new();
        for (pe, child) in &self.children {
            if other.members.contains(pe) {
                continue;
            }
            let rest = match other.children.get(pe) {
                Some(theirs) => child.recursive_difference(theirs),
                None => child.clone(),
            };
            if !rest.is_empty() {
                children.insert(pe.clone(), rest);
            }
        }
        Set { members, children }
    }

    /// The members below `pe`, with `pe` taken off (`WithPrefix`).
    pub(crate) fn with_prefix(&self, pe: &PathElement) -> Set {
        self.children.get(pe).cloned().unwrap_or_default()
    }

    /// Whether any member starts with `pe` and goes deeper (a child node exists).
    pub(crate) fn has_children(&self, pe: &PathElement) -> bool {
        self.children.contains_key(pe)
    }

    /// Members in the order `Set.Iterate` visits them: a node's own members first, then each
    /// child node's, recursively.
    pub(crate) fn iterate(&self) -> Vec<Path> {
        fn visit(set: &Set, prefix: &mut Path, out: &mut Vec<Path>) {
            for pe in &set.members {
                let mut p = prefix.clone();
                p.push(pe.clone());
                out.push(p);
            }
            for (pe, child) in &set.children {
                prefix.push(pe.clone());
                visit(child, prefix, out);
                prefix.pop();
            }
        }
        let mut out = Vec::new();
        visit(self, &mut Vec::new(), &mut out);
        out
    }

    /// `FieldsV1` JSON of the set: per element in order, `{}` for a member without children,
    /// else its children, with `"."` first when it is also a member.
    pub(crate) fn to_fields_v1(&self) -> Value {
        fn emit(set: &Set) -> Map<String, Value> {
            let mut out = Map::new();
            let mut members = set.members.iter().peekable();
            let mut children = set.children.iter().peekable();
            loop {
                let (pe, value) = match (members.peek(), children.peek()) {
                    (None, None) => return out,
                    (Some(m), c) if c.is_none_or(|(c, _)| *m < *c) => {
                        let m = members.next().expect("peeked");
                        (m, Value::Object(Map::new()))
                    }
                    (m, Some((c, _))) => {
                        let member = m.is_some_and(|m| *m == *c);
                        if member {
                            members.next();
                        }
                        let (pe, child) = children.next().expect("peeked");
                        let mut inner = Map::new();
                        if member {
                            inner.insert(".".into(), Value::Object(Map::new()));
                        }
                        inner.extend(emit(child));
                        (pe, Value::Object(inner))
                    }
                    (Some(_), None) => unreachable!("handled above"),
                };
                out.insert(pe.serialize(), value);
            }
        }
        Value::Object(emit(self))
    }

    /// Reads `FieldsV1` (`FieldsToSet`). Keys of an unknown element type are dropped, as
    /// upstream; a malformed key is an error.
    pub(crate) fn from_fields_v1(v: &Value) -> Result<Set, String> {
        /// The set below `v`, and whether `v`'s own element is a member.
        fn read(v: &Value) -> Result<(Set, bool), String> {
            let Some(m) = v.as_object() else {
                return Err(format!("expected an object, got {v}"));
            };
            let mut set = Set::new();
            let mut has_children = false;
            let mut member = false;
            for (k, child) in m {
                if k == "." {
                    member = true;
                    continue;
                }
                let Some(pe) = PathElement::deserialize(k)? else {
                    continue;
                };
                has_children = true;
                let (below, is_member) = read(child)?;
                if is_member {
                    set.members.insert(pe.clone());
                }
                if !below.is_empty() {
                    set.children.insert(pe, below);
                }
            }
            Ok((set, member || !has_children))
        }
        read(v).map(|(set, _)| set)
    }
}

impl FromIterator<Path> for Set {
    fn from_iter<I: IntoIterator<Item = Path>>(iter: I) -> Self {
        let mut s = Set::new();
        for p in iter {
            s.insert(p);
        }
        s
    }
}

/// A path from field names: `path(&["spec", "replicas"])`.
pub(crate) fn path(names: &[&str]) -> Path {
    names.iter().map(|n| PathElement::field(n)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fields_v1_round_trip_in_upstream_order() {
        let v = json!({
            "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
            "f:spec": {"f:containers": {"k:{\"name\":\"c1\"}": {".": {}, "f:image": {}, "f:name": {}}},
                       "f:ports": {"k:{\"port\":80,\"protocol\":\"TCP\"}": {".": {}, "f:port": {}}}}
        });
        let set = Set::from_fields_v1(&v).unwrap();
        assert_eq!(set.len(), 7);
        assert!(set.has(&[PathElement::field("metadata"), PathElement::field("labels")]));
        assert!(!set.has(&[PathElement::field("metadata")]));
        let back = set.to_fields_v1();
        assert_eq!(back, v);
        assert_eq!(
            serde_json::to_string(&back).unwrap(),
            serde_json::to_string(&v).unwrap()
        );
    }

    #[test]
    fn element_order_and_texts() {
        let mut es = [
            PathElement::Index(0),
            PathElement::Value(json!("b")),
            PathElement::Key(vec![("name".into(), json!("a"))]),
            PathElement::field("z"),
            PathElement::Value(json!(1)),
            PathElement::field("a"),
        ];
        es.sort();
        let keys: Vec<String> = es.iter().map(PathElement::serialize).collect();
        assert_eq!(
            keys,
            ["f:a", "f:z", "k:{\"name\":\"a\"}", "v:1", "v:\"b\"", "i:0"]
        );
        let p = vec![
            PathElement::field("spec"),
            PathElement::Key(vec![
                ("port".into(), json!(80)),
                ("protocol".into(), json!("TCP")),
            ]),
            PathElement::Value(json!("x<y")),
        ];
        assert_eq!(display(&p), ".spec[port=80,protocol=\"TCP\"][=\"x<y\"]");
        assert_eq!(p[2].serialize(), "v:\"x\\u003cy\"");
        assert_eq!(
            PathElement::deserialize("k:{\"b\":1,\"a\":\"x\"}").unwrap(),
            Some(PathElement::Key(vec![
                ("a".into(), json!("x")),
                ("b".into(), json!(1))
            ]))
        );
        assert_eq!(PathElement::deserialize("z:1").unwrap(), None);
        assert!(PathElement::deserialize("f").is_err());
        assert!(PathElement::deserialize("fx").is_err());
        // numbers compare by value, whatever their JSON form
        assert!(equals(&json!(80), &json!(80.0)));
        assert_eq!(compare(&json!(2), &json!(10.5)), Ordering::Less);
    }

    /// The set operations against the plain definition over whole paths (what a flat
    /// `BTreeSet<Path>` computes), on random sets over a small alphabet so that prefixes,
    /// members with children and shared subtrees all occur.
    #[test]
    fn set_operations_agree_with_sets_of_whole_paths() {
        use rand::{rngs::StdRng, Rng, SeedableRng};
        use std::collections::BTreeSet;
        let alphabet = [
            PathElement::field("a"),
            PathElement::field("b"),
            PathElement::Key(vec![("name".into(), json!("x"))]),
            PathElement::Value(json!(1)),
        ];
        let mut rng = StdRng::seed_from_u64(7);
        let random = |rng: &mut StdRng| -> BTreeSet<Path> {
            (0..rng.random_range(0..12))
                .map(|_| {
                    (0..rng.random_range(1..4))
                        .map(|_| alphabet[rng.random_range(0..alphabet.len())].clone())
                        .collect()
                })
                .collect()
        };
        let set = |flat: &BTreeSet<Path>| -> Set { flat.iter().cloned().collect() };
        let flat = |s: &Set| -> BTreeSet<Path> { s.paths().into_iter().collect() };
        for _ in 0..500 {
            let (x, y) = (random(&mut rng), random(&mut rng));
            let (a, b) = (set(&x), set(&y));
            assert_eq!(
                a.paths(),
                x.iter().cloned().collect::<Vec<_>>(),
                "path order"
            );
            assert_eq!(flat(&a.union(&b)), x.union(&y).cloned().collect());
            assert_eq!(
                flat(&a.intersection(&b)),
                x.intersection(&y).cloned().collect()
            );
            assert_eq!(flat(&a.difference(&b)), x.difference(&y).cloned().collect());
            let recursive: BTreeSet<Path> = x
                .iter()
                .filter(|p| !(1..=p.len()).any(|n| y.contains(&p[..n])))
                .cloned()
                .collect();
            assert_eq!(flat(&a.recursive_difference(&b)), recursive);
            // Operations keep the shape canonical: equal sets compare equal.
            assert_eq!(
                a.union(&b).difference(&b),
                set(&x.difference(&y).cloned().collect())
            );
            assert_eq!(a.is_empty(), x.is_empty());
            for p in &y {
                assert_eq!(a.has(p), x.contains(p));
            }
            let pe = &alphabet[0];
            let below: BTreeSet<Path> = x
                .iter()
                .filter(|p| p.len() > 1 && p[0] == *pe)
                .map(|p| p[1..].to_vec())
                .collect();
            assert_eq!(flat(&a.with_prefix(pe)), below);
            assert_eq!(a.has_children(pe), !below.is_empty());
            assert_eq!(Set::from_fields_v1(&a.to_fields_v1()).unwrap(), a);
        }
    }

    #[test]
    fn set_operations() {
        let a = path(&["a"]);
        let ab = path(&["a", "b"]);
        let abc = path(&["a", "b", "c"]);
        let c = path(&["c"]);
        let s: Set = [a.clone(), abc.clone(), c.clone()].into_iter().collect();
        let t: Set = [ab.clone()].into_iter().collect();
        assert_eq!(s.difference(&t), s);
        assert_eq!(
            s.recursive_difference(&t),
            [a.clone(), c.clone()].into_iter().collect()
        );
        assert_eq!(
            s.with_prefix(&PathElement::field("a")),
            [path(&["b", "c"])].into_iter().collect()
        );
        assert_eq!(s.iterate(), vec![a, c, abc]);
    }
}
