//! The end state of a run (`faultline explore`'s oracle): the objects a controller makes and
//! keeps, captured when the steps are over, normalised so that two runs of one scenario compare
//! equal unless the controller left the cluster differently - uids become names, timestamps,
//! resourceVersions, managedFields and addresses are dropped (the ignore list is configurable),
//! and objects named from a `generateName` are compared as a multiset under that prefix.

use crate::k8s::Kube;
use crate::loader::LoadedSuite;
use anyhow::Result;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// What is captured: the kinds a controller typically owns, plus the suite's custom resources.
pub const BUILTIN_KINDS: &[(&str, &str)] = &[
    ("v1", "Pod"),
    ("v1", "PersistentVolumeClaim"),
    ("v1", "ConfigMap"),
    ("v1", "Service"),
    ("apps/v1", "Deployment"),
    ("apps/v1", "StatefulSet"),
    ("batch/v1", "Job"),
];

/// Namespaces of the cluster's own components: not the controller's doing.
const SYSTEM_NAMESPACES: &[&str] = &[
    "kube-system",
    "kube-public",
    "kube-node-lease",
    "longhorn-system",
];

/// Objects the cluster's own controllers keep in every namespace (the root CA publisher's).
const SYSTEM_OBJECTS: &[(&str, &str)] = &[("ConfigMap", "kube-root-ca.crt")];

/// JSON pointers (`*` matches any one segment) removed from every object before comparing.
pub const DEFAULT_IGNORE: &[&str] = &[
    "/metadata/uid",
    "/metadata/resourceVersion",
    "/metadata/creationTimestamp",
    "/metadata/managedFields",
    "/metadata/generation",
    "/metadata/ownerReferences/*/uid",
    "/status/podIP",
    "/status/podIPs",
    "/status/hostIP",
    "/status/hostIPs",
    "/status/startTime",
    "/status/containerStatuses/*/containerID",
    "/status/containerStatuses/*/imageID",
    "/status/initContainerStatuses/*/containerID",
    "/status/initContainerStatuses/*/imageID",
];

/// Objects by key: `Kind namespace/name`, or `Kind namespace/<generateName>*` for generated
/// names (several objects may share such a key).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EndState {
    pub objects: BTreeMap<String, Vec<Value>>,
}

/// One difference between two end states.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "change")]
pub enum Difference {
    /// In the reference run, not in this one.
    Missing { key: String, count: usize },
    /// In this run, not in the reference.
    Extra { key: String, count: usize },
    /// Present in both, different: the paths that differ with (reference, this run).
    Changed {
        key: String,
        fields: Vec<(String, Value, Value)>,
    },
}

impl std::fmt::Display for Difference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Difference::Missing { key, count } => write!(f, "- {key} (missing, {count})"),
            Difference::Extra { key, count } => write!(f, "+ {key} (extra, {count})"),
            Difference::Changed { key, fields } => {
                write!(f, "~ {key}")?;
                for (p, a, b) in fields {
                    write!(f, "\n    {p}: {a} -> {b}")?;
                }
                Ok(())
            }
        }
    }
}

/// The kinds the end state holds: `BUILTIN_KINDS` and the suite's custom resources (the storage
/// version of each CRD the suite installs), as (apiVersion, kind).
pub fn captured_kinds(suite: &LoadedSuite) -> Vec<(String, String)> {
    let mut kinds: Vec<(String, String)> = BUILTIN_KINDS
        .iter()
        .map(|(a, k)| (a.to_string(), k.to_string()))
        .collect();
    for f in &suite.suite.crds {
        for o in crate::k8s::read_manifests(&suite.dir.join(f)).unwrap_or_default() {
            let group = o.pointer("/spec/group").and_then(Value::as_str);
            let kind = o.pointer("/spec/names/kind").and_then(Value::as_str);
            let version = o
                .pointer("/spec/versions")
                .and_then(Value::as_array)
                .and_then(|v| {
                    v.iter()
                        .find(|v| v.get("storage") == Some(&Value::Bool(true)))
                })
                .and_then(|v| v.get("name"))
                .and_then(Value::as_str);
            if let (Some(g), Some(k), Some(v)) = (group, kind, version) {
                kinds.push((format!("{g}/{v}"), k.to_string()));
            }
        }
    }
    kinds
}

/// Capture the objects of `kinds` (apiVersion, kind) outside the system namespaces.
pub async fn capture(kube: &Kube, kinds: &[(String, String)]) -> Result<Vec<Value>> {
    let mut out = vec![];
    for (api_version, kind) in kinds {
        let Ok((ar, caps)) = kube.resolve(api_version, kind).await else {
            continue;
        };
        let api = kube.api(&ar, &caps, None);
        let list = api.list(&Default::default()).await?;
        for o in list.items {
            let mut v = serde_json::to_value(&o)?;
            v["apiVersion"] = Value::from(api_version.as_str());
            v["kind"] = Value::from(kind.as_str());
            let ns = v
                .pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .unwrap_or("");
            let name = v
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or("");
            let system = SYSTEM_OBJECTS.contains(&(kind.as_str(), name));
            if !SYSTEM_NAMESPACES.contains(&ns) && !system {
                out.push(v);
            }
        }
    }
    Ok(out)
}

/// Normalise captured objects into an `EndState`: uids replaced by `<uid:Kind/ns/name>` (and
/// their 8-character prefixes, which names derive from), timestamps by `<time>`, the ignored
/// pointers removed.
pub fn normalise(objects: &[Value], ignore: &[String]) -> EndState {
    normalise_keyed(objects, ignore).0
}

/// `normalise`, and the key each object is filed under (`keys[i]` is `objects[i]`'s).
pub fn normalise_keyed(objects: &[Value], ignore: &[String]) -> (EndState, Vec<String>) {
    let mut uids: Vec<(String, String)> = objects
        .iter()
        .filter_map(|o| {
            let uid = o.pointer("/metadata/uid")?.as_str()?.to_string();
            let kind = o.get("kind")?.as_str()?;
            let ns = o
                .pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .unwrap_or("");
            let name = o.pointer("/metadata/name")?.as_str()?;
            // A generated name is not stable across runs: the prefix stands for it.
            let generated = o
                .pointer("/metadata/generateName")
                .and_then(Value::as_str)
                .filter(|g| !g.is_empty())
                .map(|g| format!("{g}*"));
            let name = generated.unwrap_or_else(|| name.to_string());
            (uid.len() >= 8).then(|| (uid, format!("<uid:{kind}/{ns}/{name}>")))
        })
        .collect();
    // Names generated from a `generateName` differ from run to run: wherever they are
    // referred to (a status naming its pod), the prefix stands for them.
    uids.extend(objects.iter().filter_map(|o| {
        let g = o.pointer("/metadata/generateName")?.as_str()?;
        let name = o.pointer("/metadata/name")?.as_str()?;
        (!g.is_empty() && name.len() > g.len()).then(|| (name.to_string(), format!("{g}*")))
    }));
    // Longest first: a full uid is replaced before its prefix.
    uids.sort_by_key(|(u, _)| std::cmp::Reverse(u.len()));
    // A name derived from another object's uid (a pod named after its owner's) names its own
    // placeholder with that owner's placeholder: two rounds reach owners of owners.
    for _ in 0..2 {
        for i in 0..uids.len() {
            let others: Vec<(String, String)> = uids
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .map(|(_, u)| u.clone())
                .collect();
            let mut name = uids[i].1.clone();
            scrub_str(&mut name, &others);
            uids[i].1 = name;
        }
    }
    let mut state = EndState::default();
    let mut keys = Vec::with_capacity(objects.len());
    for o in objects {
        let mut o = o.clone();
        for p in ignore {
            remove_pointer(&mut o, p);
        }
        let generate = o
            .pointer("/metadata/generateName")
            .and_then(Value::as_str)
            .filter(|g| !g.is_empty())
            .map(String::from);
        if generate.is_some() {
            if let Some(m) = o.get_mut("metadata").and_then(Value::as_object_mut) {
                m.remove("name");
            }
        }
        scrub(&mut o, &uids);
        let kind = o.get("kind").and_then(Value::as_str).unwrap_or("");
        let ns = o
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or("");
        let name = match &generate {
            Some(g) => format!("{g}*"),
            None => o
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
        };
        let key = format!("{kind} {ns}/{name}");
        keys.push(key.clone());
        state.objects.entry(key).or_default().push(o);
    }
    for v in state.objects.values_mut() {
        v.sort_by_key(|o| o.to_string());
    }
    (state, keys)
}

/// Replace uids (and their 8-character prefixes) and timestamps in every string.
fn scrub(v: &mut Value, uids: &[(String, String)]) {
    match v {
        Value::String(s) => {
            if chrono::DateTime::parse_from_rfc3339(s).is_ok() {
                *s = "<time>".into();
                return;
            }
            scrub_str(s, uids);
        }
        Value::Array(a) => a.iter_mut().for_each(|x| scrub(x, uids)),
        Value::Object(m) => m.values_mut().for_each(|x| scrub(x, uids)),
        _ => {}
    }
}

fn scrub_str(s: &mut String, uids: &[(String, String)]) {
    for (uid, name) in uids {
        if s.contains(uid.as_str()) {
            *s = s.replace(uid.as_str(), name);
        }
        // A uid's 8-character prefix (names derive from it); a generated name is whole.
        let short = &uid[..8.min(uid.len())];
        if looks_like_uid(uid) && s.contains(short) {
            *s = s.replace(short, name);
        }
    }
    if let Some(m) = GENERATED.find(s) {
        let generated = format!("{}<generated>", &m.as_str()[..m.as_str().len() - 5]);
        *s = s.replace(m.as_str(), &generated);
    }
}

fn looks_like_uid(s: &str) -> bool {
    s.len() == 36 && s.chars().all(|c| c.is_ascii_hexdigit() || c == '-')
}

/// Names the apiserver generates that are no object's (utilrand.String(5) suffixes): the
/// projected ServiceAccount token volume `kube-api-access-xxxxx` of every pod.
static GENERATED: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(r"kube-api-access-[bcdfghjklmnpqrstvwxz2456789]{5}").expect("valid regex")
});

/// Remove what a pointer with `*` segments names.
fn remove_pointer(v: &mut Value, pointer: &str) {
    let segs: Vec<&str> = pointer.trim_start_matches('/').split('/').collect();
    remove_at(v, &segs);
}

fn remove_at(v: &mut Value, segs: &[&str]) {
    let Some((first, rest)) = segs.split_first() else {
        return;
    };
    if rest.is_empty() {
        match v {
            Value::Object(m) => {
                m.remove(*first);
            }
            Value::Array(a) if *first == "*" => a.clear(),
            _ => {}
        }
        return;
    }
    match (v, *first) {
        (Value::Array(a), "*") => a.iter_mut().for_each(|x| remove_at(x, rest)),
        (Value::Object(m), "*") => m.values_mut().for_each(|x| remove_at(x, rest)),
        (Value::Object(m), k) => {
            if let Some(x) = m.get_mut(k) {
                remove_at(x, rest);
            }
        }
        (Value::Array(a), k) => {
            if let Some(x) = k.parse::<usize>().ok().and_then(|i| a.get_mut(i)) {
                remove_at(x, rest);
            }
        }
        _ => {}
    }
}

/// How `this` differs from `reference`.
pub fn diff(reference: &EndState, this: &EndState) -> Vec<Difference> {
    let mut out = vec![];
    let keys: std::collections::BTreeSet<&String> = reference
        .objects
        .keys()
        .chain(this.objects.keys())
        .collect();
    for key in keys {
        let a = reference.objects.get(key).map(Vec::as_slice).unwrap_or(&[]);
        let b = this.objects.get(key).map(Vec::as_slice).unwrap_or(&[]);
        if a.len() > b.len() {
            out.push(Difference::Missing {
                key: key.clone(),
                count: a.len() - b.len(),
            });
        } else if b.len() > a.len() {
            out.push(Difference::Extra {
                key: key.clone(),
                count: b.len() - a.len(),
            });
        }
        let mut fields = vec![];
        for (x, y) in a.iter().zip(b) {
            changed_fields("", x, y, &mut fields);
        }
        if !fields.is_empty() {
            out.push(Difference::Changed {
                key: key.clone(),
                fields,
            });
        }
    }
    out
}

fn changed_fields(path: &str, a: &Value, b: &Value, out: &mut Vec<(String, Value, Value)>) {
    if a == b || out.len() >= 20 {
        return;
    }
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for k in keys {
                let (va, vb) = (
                    x.get(k).unwrap_or(&Value::Null),
                    y.get(k).unwrap_or(&Value::Null),
                );
                changed_fields(&format!("{path}/{k}"), va, vb, out);
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (va, vb)) in x.iter().zip(y).enumerate() {
                changed_fields(&format!("{path}/{i}"), va, vb, out);
            }
        }
        _ => out.push((path.to_string(), a.clone(), b.clone())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ignore() -> Vec<String> {
        DEFAULT_IGNORE.iter().map(|s| s.to_string()).collect()
    }

    fn run(ws_uid: &str, pod_uid: &str, ip: &str, pods: usize) -> Vec<Value> {
        let mut objs = vec![
            json!({"apiVersion": "x/v1", "kind": "Workspace", "metadata": {
            "name": "ws", "namespace": "d", "uid": ws_uid, "resourceVersion": "5",
            "creationTimestamp": "2026-01-01T00:00:00Z"},
            "status": {"phase": "Active", "podName": format!("ws-{}", &ws_uid[..8])}}),
        ];
        for i in 0..pods {
            objs.push(json!({"apiVersion": "v1", "kind": "Pod", "metadata": {
                "name": format!("ws-{}", &ws_uid[..8]), "namespace": "d", "uid": format!("{pod_uid}{i}"),
                "ownerReferences": [{"kind": "Workspace", "name": "ws", "uid": ws_uid}]},
                "status": {"podIP": ip, "phase": "Running",
                           "conditions": [{"type": "Ready", "lastTransitionTime": "2026-01-01T00:00:09Z"}]}}));
        }
        objs
    }

    #[test]
    fn two_runs_that_differ_only_in_identities_and_times_compare_equal() {
        let a = normalise(
            &run(
                "aaaaaaaa-1111-4111-8111-111111111111",
                "pppppppp-1",
                "10.0.0.1",
                1,
            ),
            &ignore(),
        );
        let b = normalise(
            &run(
                "bbbbbbbb-2222-4222-8222-222222222222",
                "qqqqqqqq-2",
                "10.0.0.9",
                1,
            ),
            &ignore(),
        );
        assert_eq!(diff(&a, &b), vec![]);
        assert!(
            a.objects.contains_key("Pod d/ws-<uid:Workspace/d/ws>"),
            "{:?}",
            a.objects.keys()
        );
    }

    #[test]
    fn an_extra_object_and_a_changed_field_are_differences() {
        let a = normalise(
            &run(
                "aaaaaaaa-1111-4111-8111-111111111111",
                "pppppppp-1",
                "10.0.0.1",
                1,
            ),
            &ignore(),
        );
        let mut objs = run(
            "bbbbbbbb-2222-4222-8222-222222222222",
            "qqqqqqqq-2",
            "10.0.0.1",
            1,
        );
        objs[0]["status"]["phase"] = json!("Creating");
        let mut extra = objs[1].clone();
        extra["metadata"]["name"] = json!("ws-x7k2p");
        extra["metadata"]["generateName"] = json!("ws-");
        objs.push(extra);
        let b = normalise(&objs, &ignore());
        let d = diff(&a, &b);
        assert_eq!(d.len(), 2, "{d:?}");
        assert!(matches!(&d[0], Difference::Extra { key, count: 1 } if key == "Pod d/ws-*"));
        assert!(
            matches!(&d[1], Difference::Changed { key, fields } if key == "Workspace d/ws" && fields[0].0 == "/status/phase"),
            "{d:?}"
        );
        assert!(d[1]
            .to_string()
            .contains(r#"/status/phase: "Active" -> "Creating""#));
    }

    #[test]
    fn generated_names_compare_equal_wherever_they_are_named() {
        let objs = |pod: &str, token: &str| {
            vec![
                json!({"apiVersion": "x/v1", "kind": "Workspace", "metadata": {"name": "ws", "namespace": "d"},
                       "status": {"podName": pod}}),
                json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": pod, "generateName": "ws-", "namespace": "d"},
                       "spec": {"volumes": [{"name": token}]}}),
            ]
        };
        let a = normalise(&objs("ws-bn6xd", "kube-api-access-v7fk5"), &ignore());
        let b = normalise(&objs("ws-n9787", "kube-api-access-rdhdx"), &ignore());
        assert_eq!(diff(&a, &b), vec![]);
        assert_eq!(a.objects["Workspace d/ws"][0]["status"]["podName"], "ws-*");
    }

    #[test]
    fn pointers_with_wildcards_remove_what_they_name() {
        let mut v = json!({"a": [{"b": 1, "c": 2}, {"b": 3}], "d": {"e": 1}});
        remove_pointer(&mut v, "/a/*/b");
        remove_pointer(&mut v, "/d/e");
        assert_eq!(v, json!({"a": [{"c": 2}, {}], "d": {}}));
    }
}
