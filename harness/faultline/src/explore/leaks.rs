//! The leaked-objects oracle: of the objects the controller created (its successful create
//! requests in the trace), those the end state still holds although every owner in their
//! `ownerReferences` is gone (the garbage collector, `pkg/controller/garbagecollector`, would
//! have removed a dependent whose owners were all deleted, unless it was orphaned), or although
//! the unperturbed run left fewer objects like them. The end-state difference says that the
//! state differs; this oracle names the objects the controller left behind.

use crate::endstate::{self, EndState};
use faultline_sim::http::trace::{Trace, TraceKind, Verb};
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeSet;

/// One object the controller left behind.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Leak {
    /// `Kind namespace/name` of the object, its real name.
    pub object: String,
    /// Its end-state key (a generated name stands as `<generateName>*`).
    pub key: String,
    pub why: LeakReason,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(
    rename_all = "camelCase",
    rename_all_fields = "camelCase",
    tag = "reason"
)]
pub enum LeakReason {
    /// Every owner named in its ownerReferences is gone, and it remains.
    OwnerGone { owners: Vec<String> },
    /// More objects under its key than the unperturbed run left (all of them are named: which
    /// one is surplus cannot be told from the end state).
    NotInBaseline { here: usize, baseline: usize },
}

impl std::fmt::Display for Leak {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.why {
            LeakReason::OwnerGone { owners } => {
                write!(
                    f,
                    "{}: its owner {} is gone",
                    self.object,
                    owners.join(", ")
                )
            }
            LeakReason::NotInBaseline { baseline: 0, .. } => {
                write!(f, "{}: the unperturbed run left none", self.object)
            }
            LeakReason::NotInBaseline { here, baseline } => write!(
                f,
                "{}: {here} `{}` where the unperturbed run left {baseline}",
                self.object, self.key
            ),
        }
    }
}

/// What the controller created: (kind, namespace, name or `<generateName>*`).
fn created(trace: &Trace) -> Vec<(String, Option<String>, String)> {
    trace
        .requests()
        .filter_map(|e| match &e.what {
            TraceKind::Request {
                verb: Verb::Create,
                kind: Some(kind),
                namespace,
                name: Some(name),
                code,
                ..
            } if (200..300).contains(code) => Some((kind.clone(), namespace.clone(), name.clone())),
            _ => None,
        })
        .collect()
}

fn str_at<'a>(o: &'a Value, pointer: &str) -> Option<&'a str> {
    o.pointer(pointer).and_then(Value::as_str)
}

/// The API group of an apiVersion (`""` for the core group).
fn group(api_version: &str) -> &str {
    api_version.rsplit_once('/').map(|(g, _)| g).unwrap_or("")
}

/// The leaks of one run. `captured`: the (apiVersion, kind)s the end state holds - an owner of
/// another kind cannot be judged gone. `reference`: the unperturbed run's normalised end state.
pub fn leaked(
    trace: &Trace,
    objects: &[Value],
    captured: &[(String, String)],
    reference: &EndState,
    ignore: &[String],
) -> Vec<Leak> {
    let made = created(trace);
    let (state, keys) = endstate::normalise_keyed(objects, ignore);
    let uids: BTreeSet<&str> = objects
        .iter()
        .filter_map(|o| str_at(o, "/metadata/uid"))
        .collect();
    let judged_kind = |api_version: &str, kind: &str| {
        captured
            .iter()
            .any(|(a, k)| k == kind && group(a) == group(api_version))
    };
    let mut out = vec![];
    for (o, key) in objects.iter().zip(&keys) {
        let kind = str_at(o, "/kind").unwrap_or("");
        let ns = str_at(o, "/metadata/namespace");
        let name = str_at(o, "/metadata/name").unwrap_or("");
        let generated = str_at(o, "/metadata/generateName").map(|g| format!("{g}*"));
        let by_controller = made.iter().any(|(k, n, x)| {
            k == kind && n.as_deref() == ns && (x == name || Some(x) == generated.as_ref())
        });
        if !by_controller {
            continue;
        }
        let object = format!("{kind} {}/{name}", ns.unwrap_or(""));
        let owners = o
            .pointer("/metadata/ownerReferences")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        let gone: Vec<String> = owners
            .iter()
            .filter(|r| {
                judged_kind(
                    str_at(r, "/apiVersion").unwrap_or(""),
                    str_at(r, "/kind").unwrap_or(""),
                ) && !uids.contains(str_at(r, "/uid").unwrap_or(""))
            })
            .map(|r| {
                format!(
                    "{} {}/{}",
                    str_at(r, "/kind").unwrap_or(""),
                    ns.unwrap_or(""),
                    str_at(r, "/name").unwrap_or("")
                )
            })
            .collect();
        // Orphaned only when no owner is left (one live owner keeps a dependent).
        if !owners.is_empty() && gone.len() == owners.len() {
            out.push(Leak {
                object,
                key: key.clone(),
                why: LeakReason::OwnerGone { owners: gone },
            });
            continue;
        }
        let here = state.objects.get(key).map_or(0, Vec::len);
        let baseline = reference.objects.get(key).map_or(0, Vec::len);
        if here > baseline {
            out.push(Leak {
                object,
                key: key.clone(),
                why: LeakReason::NotInBaseline { here, baseline },
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use faultline_sim::http::trace::TraceEntry;
    use serde_json::json;

    fn ignore() -> Vec<String> {
        endstate::DEFAULT_IGNORE
            .iter()
            .map(|s| s.to_string())
            .collect()
    }

    fn captured() -> Vec<(String, String)> {
        vec![
            ("v1".into(), "Pod".into()),
            ("x.dev/v1".into(), "Workspace".into()),
        ]
    }

    /// The controller's creates: (kind, name or `prefix*`, answer code).
    fn trace(creates: &[(&str, &str, u16)]) -> Trace {
        Trace {
            entries: creates
                .iter()
                .map(|(kind, name, code)| TraceEntry {
                    seq: 0,
                    at_ms: 0,
                    what: TraceKind::Request {
                        verb: Verb::Create,
                        resource: "pods".into(),
                        namespace: Some("d".into()),
                        name: Some(name.to_string()),
                        kind: Some(kind.to_string()),
                        resource_version: None,
                        store_rv: 1,
                        code: *code,
                        mutation: Some(1),
                        read: None,
                        stale_from: None,
                        perturbed: None,
                    },
                })
                .collect(),
            ..Default::default()
        }
    }

    fn workspace(uid: &str) -> Value {
        json!({"apiVersion": "x.dev/v1", "kind": "Workspace",
               "metadata": {"name": "ws", "namespace": "d", "uid": uid}})
    }

    fn pod(name: &str, generate: Option<&str>, owner_uid: &str) -> Value {
        let mut p = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": name, "namespace": "d", "uid": format!("uid-{name}"),
            "ownerReferences": [{"apiVersion": "x.dev/v1", "kind": "Workspace", "name": "ws", "uid": owner_uid}]}});
        if let Some(g) = generate {
            p["metadata"]["generateName"] = json!(g);
        }
        p
    }

    #[test]
    fn a_clean_end_state_leaks_nothing() {
        let objects = vec![workspace("w1"), pod("ws-abcde", Some("ws-"), "w1")];
        let reference = endstate::normalise(&objects, &ignore());
        let t = trace(&[("Pod", "ws-*", 201)]);
        assert_eq!(
            leaked(&t, &objects, &captured(), &reference, &ignore()),
            vec![]
        );
        // Another run's names and uids, the same state: still nothing.
        let again = vec![workspace("w2"), pod("ws-fghij", Some("ws-"), "w2")];
        assert_eq!(
            leaked(&t, &again, &captured(), &reference, &ignore()),
            vec![]
        );
    }

    #[test]
    fn a_pod_whose_owner_is_gone_is_leaked() {
        let reference =
            endstate::normalise(&[workspace("w1"), pod("ws-pod", None, "w1")], &ignore());
        // The workspace was deleted, its pod remains with an ownerReference to nothing.
        let objects = vec![pod("ws-pod", None, "w1")];
        let t = trace(&[("Pod", "ws-pod", 201)]);
        let leaks = leaked(&t, &objects, &captured(), &reference, &ignore());
        assert_eq!(
            leaks,
            vec![Leak {
                object: "Pod d/ws-pod".into(),
                key: "Pod d/ws-pod".into(),
                why: LeakReason::OwnerGone {
                    owners: vec!["Workspace d/ws".into()]
                },
            }]
        );
        assert_eq!(
            leaks[0].to_string(),
            "Pod d/ws-pod: its owner Workspace d/ws is gone"
        );
    }

    #[test]
    fn a_duplicate_the_unperturbed_run_did_not_leave_is_leaked() {
        let reference = endstate::normalise(
            &[workspace("w1"), pod("ws-aaaaa", Some("ws-"), "w1")],
            &ignore(),
        );
        let objects = vec![
            workspace("w2"),
            pod("ws-bbbbb", Some("ws-"), "w2"),
            pod("ws-ccccc", Some("ws-"), "w2"),
        ];
        let t = trace(&[("Pod", "ws-*", 201), ("Pod", "ws-*", 201)]);
        let leaks = leaked(&t, &objects, &captured(), &reference, &ignore());
        let named: Vec<&str> = leaks.iter().map(|l| l.object.as_str()).collect();
        assert_eq!(named, vec!["Pod d/ws-bbbbb", "Pod d/ws-ccccc"]);
        assert!(leaks.iter().all(|l| l.key == "Pod d/ws-*"
            && l.why
                == LeakReason::NotInBaseline {
                    here: 2,
                    baseline: 1
                }));
        assert_eq!(
            leaks[0].to_string(),
            "Pod d/ws-bbbbb: 2 `Pod d/ws-*` where the unperturbed run left 1"
        );
    }

    #[test]
    fn what_the_controller_did_not_create_or_an_owner_not_captured_is_not_judged() {
        let reference = endstate::normalise(&[workspace("w1")], &ignore());
        let mut rs_owned = pod("ws-pod", None, "rs1");
        rs_owned["metadata"]["ownerReferences"][0]["apiVersion"] = json!("apps/v1");
        rs_owned["metadata"]["ownerReferences"][0]["kind"] = json!("ReplicaSet");
        let objects = vec![workspace("w1"), rs_owned, pod("other", None, "gone")];
        // The controller's create of `other` was refused (409): not its object. Its create of
        // ws-pod succeeded, and the pod is extra, so it is leaked - but not for its owner, whose
        // kind the end state does not hold.
        let t = trace(&[("Pod", "ws-pod", 201), ("Pod", "other", 409)]);
        let leaks = leaked(&t, &objects, &captured(), &reference, &ignore());
        assert_eq!(leaks.len(), 1, "{leaks:?}");
        assert_eq!(leaks[0].object, "Pod d/ws-pod");
        assert_eq!(
            leaks[0].why,
            LeakReason::NotInBaseline {
                here: 1,
                baseline: 0
            }
        );
        assert_eq!(
            leaks[0].to_string(),
            "Pod d/ws-pod: the unperturbed run left none"
        );
    }
}
