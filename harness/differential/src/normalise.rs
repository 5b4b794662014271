//! The normalisation rules: every way two faithful apiservers' answers to the same request may
//! legitimately differ, in one place. Anything not listed here is compared as it is.
//!
//! A `Mapper` lives for one script on one target, so a value mapped in one response maps the
//! same in every later one (a uid in `ownerReferences`, a resourceVersion sent back in an
//! update): what is compared is *which* values repeat and in what order, not the values.
//!
//! Rules, each applied by `Mapper::walk` (on JSON bodies and on every watch event's object):
//!
//! 1. **uid** (any key `uid`): random per object. Mapped to `uid-N` in order of first
//!    appearance, and replaced inside other strings (a precondition message quotes them).
//! 2. **timestamps** (keys `creationTimestamp`, `deletionTimestamp`, `time`, and every key
//!    ending in `Time` or `Timestamp`: `lastTransitionTime`, `renewTime`, `eventTime`,
//!    `expirationTimestamp`, ...): wall-clock values. A non-null string becomes `<time>`; null
//!    and absence stay as they are (so a missing `creationTimestamp` is still reported).
//! 3. **resourceVersion** of objects (any key `resourceVersion`): etcd's revision counts every
//!    write of the cluster (leases, events, other namespaces), the sim's counts its own. Mapped
//!    to `rv-N` in order of first appearance, so equality and order of appearance are compared.
//! 4. **resourceVersion of a list, Table or BOOKMARK** (`metadata.resourceVersion` next to
//!    `items`/`rows`, or a bookmark event's object): the store's current revision, which on a
//!    real cluster moves with writes outside the script. When not older than every
//!    resourceVersion seen so far it becomes `<current>`; an older one (an Exact list at an old
//!    revision) is mapped as in rule 3.
//! 5. **continue tokens** (`metadata.continue`): opaque by contract (clients send them back
//!    unread); a non-empty one becomes `<continue>`. Presence and absence are compared.
//! 6. **generated names** (`metadata.name` = `metadata.generateName` + 5 random characters, the
//!    ServiceAccount admission's `kube-api-access-xxxxx` volume, and an Event's
//!    `<object>.<16 hex digits of its creation time>`, and the pod a controller's event says it
//!    created or deleted, `Created pod: <generateName>xxxxx`): the suffix becomes `<gen-N>` in
//!    order of first appearance, also inside other strings and managedFields keys; in an event's
//!    `Created pod:` / `Deleted pod:` it becomes `<gen>`, unnumbered (a burst of pods is named
//!    by events in no stable order).
//! 7. **allocations**: `clusterIP`, `clusterIPs[]` (random in the service CIDR), `nodePort` and
//!    `healthCheckNodePort` (random in 30000-32767) become `ip-N` / `port-N` in order of first
//!    appearance; any other string equal to an allocated address (an IPAddress object's name,
//!    a Table cell) maps the same way. `None` and empty stay as they are.
//! 8. **credentials**: a TokenRequest's `status.token` (signed with each cluster's own key)
//!    becomes `<token>`; the `authentication.kubernetes.io/credential-id` extra (a random JWT
//!    id) becomes `<credential-id>`; a PEM certificate (each cluster has its own CA, e.g. in
//!    `kube-root-ca.crt`) becomes `<certificate>`.
//! 9. **Table age cells**: rendered from a timestamp at the time of the request (`0s`, `1s`):
//!    the cells under a column named `Age`, `Last Seen`, `First Seen`, `Last Schedule` or
//!    `Duration`, or of type `date` (the default Table's `Created At`), become `<age>`.
//!
//! 10. **order of managedFields entries**: the apiserver orders them by operation, then time
//!     (second resolution), then manager, so two writes in one second or in two swap places
//!     with the wall clock. With their times normalised (rule 2), the entries are sorted by
//!     operation, manager, subresource and apiVersion; what each entry holds is compared.
//!
//! 11. **order of unordered answers**: two lists the real apiserver builds by ranging over a Go
//!     map, so that their order changes from run to run (seen in five runs of the judge):
//!     a SelfSubjectRulesReview's `resourceRules` and `nonResourceRules` (the RBAC authorizer
//!     visits the ClusterRoleBindings of its informer's cache, a map: `VisitRulesFor` in
//!     plugin/pkg/auth/authorizer/rbac/rbac.go), and the causes of a server-side apply
//!     conflict, one group per conflicting manager (`ConflictsFromManagers` in
//!     structured-merge-diff's merge/conflict.go ranges over the managers' map; within a
//!     manager the fields keep their order). The rules are sorted; the causes are sorted by
//!     manager (their message), stably. What the rules and causes are is compared.
//!
//! Values are numbered (rules 1, 3, 6, 7) in order of first appearance with every object's
//! members visited in sorted key order: a JSON object is unordered, and Go's encoding/json
//! writes a struct's fields in declaration order (a pod's `uid` before its `ownerReferences`)
//! where the sim writes its own order, so only the order of values across answers counts.
//!
//! Bodies that are not plain objects are reduced to canonical forms by `canonical`:
//! discovery documents to their groups/versions/resources and verbs, OpenAPI documents to their
//! paths and definitions, protobuf to its type and field structure (see there for why).

use serde_json::{json, Value};
use std::collections::HashMap;

/// Table columns rendered from a timestamp relative to the time of the request (rule 9).
const AGE_COLUMNS: &[&str] = &[
    "Age",
    "Last Seen",
    "First Seen",
    "Last Schedule",
    "Duration",
];

/// Rule 11: sorts the lists the real apiserver builds in Go map order.
fn unordered(v: &mut Value) {
    let Some(m) = v.as_object_mut() else { return };
    let kind = m
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if kind == "SelfSubjectRulesReview" {
        for key in ["resourceRules", "nonResourceRules"] {
            if let Some(Value::Array(rules)) = m.get_mut("status").and_then(|s| s.get_mut(key)) {
                rules.sort_by_key(|r| r.to_string());
            }
        }
    }
    if kind == "Status" && m.get("reason").and_then(Value::as_str) == Some("Conflict") {
        if let Some(Value::Array(causes)) = m.get_mut("details").and_then(|d| d.get_mut("causes")) {
            if causes.iter().all(|c| c["reason"] == "FieldManagerConflict") {
                causes.sort_by_key(|c| c["message"].as_str().unwrap_or("").to_string());
            }
        }
    }
}

/// Per-script, per-target state of the value mappings.
#[derive(Default, Debug)]
pub struct Mapper {
    uids: HashMap<String, String>,
    rvs: HashMap<u64, String>,
    max_rv: u64,
    ips: HashMap<String, String>,
    ports: HashMap<i64, i64>,
    gen: HashMap<String, String>,
    /// The age columns of the last Table that defined its columns (rule 9).
    age_columns: Vec<usize>,
}

fn is_time_key(k: &str) -> bool {
    k == "time"
        || k == "creationTimestamp"
        || k == "deletionTimestamp"
        || k.ends_with("Time")
        || k.ends_with("Timestamp")
}

fn is_kube_api_access(s: &str) -> bool {
    s.strip_prefix("kube-api-access-").is_some_and(|rest| {
        rest.len() == 5
            && rest
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    })
}

impl Mapper {
    fn uid(&mut self, s: &str) -> String {
        let n = self.uids.len() + 1;
        self.uids
            .entry(s.to_string())
            .or_insert_with(|| format!("uid-{n}"))
            .clone()
    }

    fn rv(&mut self, s: &str) -> Value {
        match s.parse::<u64>() {
            Ok(n) => {
                self.max_rv = self.max_rv.max(n);
                let next = self.rvs.len() + 1;
                json!(self
                    .rvs
                    .entry(n)
                    .or_insert_with(|| format!("rv-{next}"))
                    .clone())
            }
            // Not a number: compared as it is ("", "0", a garbled one sent back in an error).
            Err(_) => json!(s),
        }
    }

    /// Rule 4.
    fn current_rv(&mut self, s: &str) -> Value {
        match s.parse::<u64>() {
            Ok(n) if n >= self.max_rv => {
                self.max_rv = n;
                json!("<current>")
            }
            _ => self.rv(s),
        }
    }

    fn ip(&mut self, s: &str) -> String {
        if s.is_empty() || s == "None" {
            return s.to_string();
        }
        let n = self.ips.len() + 1;
        self.ips
            .entry(s.to_string())
            .or_insert_with(|| format!("ip-{n}"))
            .clone()
    }

    fn port(&mut self, p: i64) -> Value {
        let n = self.ports.len() as i64 + 1;
        json!(format!("port-{}", self.ports.entry(p).or_insert(n)))
    }

    fn generated(&mut self, prefix: &str, name: &str) -> String {
        let n = self.gen.len() + 1;
        let mapped = self
            .gen
            .entry(name.to_string())
            .or_insert_with(|| format!("{prefix}<gen-{n}>"))
            .clone();
        mapped
    }

    /// Replaces every run of digits that is a known resourceVersion by its mapping.
    fn map_numbers(&self, s: &str) -> String {
        let mut out = String::with_capacity(s.len());
        let mut digits = String::new();
        let flush = |digits: &mut String, out: &mut String| {
            if !digits.is_empty() {
                match digits.parse::<u64>().ok().and_then(|n| self.rvs.get(&n)) {
                    Some(m) => out.push_str(m),
                    None => out.push_str(digits),
                }
                digits.clear();
            }
        };
        for c in s.chars() {
            if c.is_ascii_digit() {
                digits.push(c);
            } else {
                flush(&mut digits, &mut out);
                out.push(c);
            }
        }
        flush(&mut digits, &mut out);
        out
    }

    /// Normalises one JSON document in place (rules 1-9), then replaces known random values
    /// inside other strings.
    pub fn normalise(&mut self, v: &mut Value) {
        unordered(v);
        self.walk(v, None);
        self.substitute(v);
    }

    fn walk(&mut self, v: &mut Value, key: Option<&str>) {
        match v {
            Value::Object(m) => {
                // rule 6 for a name seen only as a managedFields key (a Table row's object with
                // metadata only): `k:{"name":"kube-api-access-xxxxx"}`
                let keyed: Vec<String> = m
                    .keys()
                    .filter_map(|k| k.strip_prefix("k:{\"name\":\""))
                    .filter_map(|rest| rest.strip_suffix("\"}"))
                    .filter(|name| is_kube_api_access(name))
                    .map(String::from)
                    .collect();
                for name in keyed {
                    self.generated("kube-api-access-", &name);
                }
                // a Table in a watch event is one object's row: its version is the object's
                let is_list = m.contains_key("items")
                    || (m.get("kind").and_then(Value::as_str) == Some("Table")
                        && key != Some("object"))
                    || m.get("kind")
                        .and_then(Value::as_str)
                        .is_some_and(|k| k.ends_with("List"));
                let is_bookmark = m.get("type").and_then(Value::as_str) == Some("BOOKMARK");
                // rule 6 before the walk renames `name`
                if key == Some("metadata") {
                    if let (Some(Value::String(g)), Some(Value::String(n))) =
                        (m.get("generateName"), m.get("name"))
                    {
                        if !g.is_empty() && n.starts_with(g.as_str()) && n.len() == g.len() + 5 {
                            let mapped = self.generated(&g.clone(), &n.clone());
                            m.insert("name".into(), json!(mapped));
                        }
                    }
                    // events are named <object>.<creation time as 16 hex digits>
                    if let Some(Value::String(n)) = m.get("name") {
                        if let Some((prefix, suffix)) = n.rsplit_once('.') {
                            if suffix.len() == 16
                                && suffix
                                    .bytes()
                                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
                            {
                                let mapped = self.generated(&format!("{prefix}."), &n.clone());
                                m.insert("name".into(), json!(mapped));
                            }
                        }
                    }
                }
                // rule 4 (before rule 3 sees the value)
                if is_list {
                    // the list's own revision is never older than its items'
                    for key in ["items", "rows"] {
                        for it in m.get(key).and_then(Value::as_array).into_iter().flatten() {
                            let rv = it
                                .pointer("/metadata/resourceVersion")
                                .or_else(|| it.pointer("/object/metadata/resourceVersion"));
                            if let Some(n) = rv
                                .and_then(Value::as_str)
                                .and_then(|s| s.parse::<u64>().ok())
                            {
                                self.max_rv = self.max_rv.max(n);
                            }
                        }
                    }
                    if let Some(Value::String(s)) =
                        m.get("metadata").and_then(|md| md.get("resourceVersion"))
                    {
                        let s = s.clone();
                        m["metadata"]["resourceVersion"] = self.current_rv(&s);
                    }
                }
                if is_bookmark {
                    if let Some(Value::String(s)) = m
                        .get("object")
                        .and_then(|o| o.pointer("/metadata/resourceVersion"))
                    {
                        let s = s.clone();
                        m["object"]["metadata"]["resourceVersion"] = self.current_rv(&s);
                    }
                }
                // rule 9
                if m.get("kind").and_then(Value::as_str) == Some("Table") {
                    // a watch as Table sends the column definitions in its first event only
                    let defined = m
                        .get("columnDefinitions")
                        .and_then(Value::as_array)
                        .is_some_and(|c| !c.is_empty());
                    let age_cols: Vec<usize> = m
                        .get("columnDefinitions")
                        .and_then(Value::as_array)
                        .filter(|_| defined)
                        .map(|cols| {
                            cols.iter()
                                .enumerate()
                                .filter(|(_, c)| {
                                    c["type"] == "date"
                                        || AGE_COLUMNS.contains(&c["name"].as_str().unwrap_or(""))
                                })
                                .map(|(i, _)| i)
                                .collect()
                        })
                        .unwrap_or_else(|| self.age_columns.clone());
                    self.age_columns = age_cols.clone();
                    if let Some(Value::Array(rows)) = m.get_mut("rows") {
                        for row in rows {
                            if let Some(Value::Array(cells)) = row.get_mut("cells") {
                                for &i in &age_cols {
                                    if let Some(c) = cells.get_mut(i) {
                                        if c.is_string() {
                                            *c = json!("<age>");
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
                let mut keys: Vec<String> = m.keys().cloned().collect();
                keys.sort();
                for k in keys {
                    let Some(child) = m.get_mut(&k) else { continue };
                    match (k.as_str(), &*child) {
                        ("uid", Value::String(s)) => *child = json!(self.uid(&s.clone())),
                        (k, Value::String(_)) if is_time_key(k) => *child = json!("<time>"),
                        ("resourceVersion", Value::String(s)) => {
                            let s = s.clone();
                            *child = self.rv(&s);
                        }
                        ("continue", Value::String(s)) if !s.is_empty() => {
                            *child = json!("<continue>")
                        }
                        ("clusterIP", Value::String(s)) => *child = json!(self.ip(&s.clone())),
                        ("clusterIPs", Value::Array(a)) => {
                            let a: Vec<Value> = a
                                .clone()
                                .iter()
                                .map(|x| match x.as_str() {
                                    Some(s) => json!(self.ip(s)),
                                    None => x.clone(),
                                })
                                .collect();
                            *child = Value::Array(a);
                        }
                        ("nodePort" | "healthCheckNodePort", Value::Number(n)) => {
                            if let Some(p) = n.as_i64() {
                                *child = self.port(p);
                            }
                        }
                        ("token", Value::String(s)) if key == Some("status") && !s.is_empty() => {
                            *child = json!("<token>")
                        }
                        ("authentication.kubernetes.io/credential-id", Value::Array(a)) => {
                            *child =
                                Value::Array(a.iter().map(|_| json!("<credential-id>")).collect())
                        }
                        _ => {}
                    }
                    self.walk(child, Some(k.as_str()));
                    // rule 10
                    if k == "managedFields" {
                        if let Value::Array(entries) = child {
                            entries.sort_by_key(|e| {
                                ["operation", "manager", "subresource", "apiVersion"].map(|f| {
                                    e.get(f).and_then(Value::as_str).unwrap_or("").to_string()
                                })
                            });
                        }
                    }
                }
            }
            Value::Array(a) => {
                for x in a {
                    self.walk(x, key);
                }
            }
            Value::String(s) => {
                // controllers' events name the pods they created from a generateName
                for verb in ["Created pod: ", "Deleted pod: "] {
                    if let Some(pod) = s.strip_prefix(verb) {
                        if let Some((prefix, suffix)) = pod.rsplit_once('-') {
                            if suffix.len() == 5
                                && suffix.bytes().all(|b| b.is_ascii_alphanumeric())
                            {
                                // unnumbered: a controller creates its pods in a burst,
                                // and which of them its events name first is not ordered
                                *s = format!("{verb}{prefix}-<gen>");
                                return;
                            }
                        }
                    }
                }
                if s.starts_with("-----BEGIN CERTIFICATE-----") {
                    *v = json!("<certificate>");
                } else if is_kube_api_access(s) {
                    let s = s.clone();
                    *v = json!(self.generated("kube-api-access-", &s));
                }
            }
            _ => {}
        }
    }

    fn substitute(&self, v: &mut Value) {
        match v {
            Value::Object(m) => {
                // managedFields name list items by key: `k:{"uid":"..."}` of ownerReferences,
                // `k:{"name":"kube-api-access-xxxxx"}` of the admitted token volume
                let mapped = || self.uids.iter().chain(self.gen.iter());
                if m.keys()
                    .any(|k| k.starts_with("k:") && mapped().any(|(u, _)| k.contains(u.as_str())))
                {
                    let old = std::mem::take(m);
                    for (mut k, x) in old {
                        for (from, to) in mapped() {
                            if k.contains(from.as_str()) {
                                k = k.replace(from.as_str(), to);
                            }
                        }
                        m.insert(k, x);
                    }
                }
                m.values_mut().for_each(|x| self.substitute(x))
            }
            Value::Array(a) => a.iter_mut().for_each(|x| self.substitute(x)),
            Value::String(s) => {
                if let Some(ip) = self.ips.get(s.as_str()) {
                    *s = ip.clone();
                    return;
                }
                if s.len() < 6 {
                    return;
                }
                for (from, to) in self.uids.iter().chain(self.gen.iter()) {
                    if s.contains(from.as_str()) {
                        *s = s.replace(from.as_str(), to);
                    }
                }
                // rule 3 inside messages: "Precondition failed: ResourceVersion in precondition: 1,
                // ResourceVersion in object meta: 1234"
                if s.contains("esourceVersion") || s.contains("esource version") {
                    *s = self.map_numbers(s);
                }
            }
            _ => {}
        }
    }
}
