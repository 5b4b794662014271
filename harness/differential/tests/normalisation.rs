//! The normalisation hides what legitimately differs and nothing else: a deliberately altered
//! response (status code, a missing field, another message, another resourceVersion order) is
//! reported, while uids, timestamps, resourceVersion values, generated names and allocations
//! are not.

use bytes::Bytes;
use faultline_differential::canonical::canonical;
use faultline_differential::compare::{diff, Diff};
use faultline_differential::normalise::Mapper;
use faultline_differential::runner::Outcome;
use faultline_differential::target::Response;
use serde_json::{json, Value};

fn outcome(status: u16, body: &Value) -> Outcome {
    Outcome {
        uri: "/api/v1/namespaces/n/services/s".into(),
        response: Ok(Response {
            status,
            content_type: Some("application/json".into()),
            body: Bytes::from(serde_json::to_vec(body).unwrap()),
            frames: None,
            ended: true,
        }),
        json: Some(body.clone()),
    }
}

/// Compares two sequences of responses as the judge does (one mapper per side).
fn compare(left: &[(u16, Value)], right: &[(u16, Value)]) -> Vec<Vec<Diff>> {
    let (mut lm, mut rm) = (Mapper::default(), Mapper::default());
    left.iter()
        .zip(right)
        .map(|((ls, lb), (rs, rb))| {
            let l = canonical(
                "/api/v1/namespaces/n/services/s",
                &outcome(*ls, lb),
                &mut lm,
            );
            let r = canonical(
                "/api/v1/namespaces/n/services/s",
                &outcome(*rs, rb),
                &mut rm,
            );
            diff(&l, &r)
        })
        .collect()
}

fn service(uid: &str, rv: &str, ts: &str, ip: &str, port: i64, name: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "generateName": "svc-", "namespace": "n", "uid": uid, "resourceVersion": rv,
            "creationTimestamp": ts,
            "managedFields": [{"manager": "m", "operation": "Update", "time": ts}]},
        "spec": {"type": "NodePort", "clusterIP": ip, "clusterIPs": [ip], "ports": [{"port": 80, "nodePort": port}]},
        "status": {"conditions": [{"type": "Ready", "lastTransitionTime": ts}]}
    })
}

#[test]
fn legitimate_differences_are_normalised() {
    let l = service(
        "11111111-aaaa",
        "100",
        "2024-01-01T00:00:00Z",
        "10.96.0.10",
        30001,
        "svc-abcde",
    );
    let r = service(
        "22222222-bbbb",
        "7",
        "2025-06-06T12:00:00Z",
        "10.100.3.4",
        31999,
        "svc-zyxwv",
    );
    let d = compare(&[(201, l.clone())], &[(201, r.clone())]);
    assert_eq!(d[0], vec![], "{:?}", d[0]);
    // and a later response that repeats the values maps them the same way
    let d = compare(&[(201, l.clone()), (200, l)], &[(201, r.clone()), (200, r)]);
    assert!(d.iter().all(Vec::is_empty), "{d:?}");
}

#[test]
fn a_changed_status_code_is_reported() {
    let b = json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Invalid", "code": 422});
    let d = compare(&[(422, b.clone())], &[(200, b)]);
    assert_eq!(d[0].len(), 1);
    assert_eq!(d[0][0].path, "/status");
}

#[test]
fn a_missing_field_is_reported() {
    let l = service(
        "u1",
        "5",
        "2024-01-01T00:00:00Z",
        "10.96.0.10",
        30001,
        "svc-abcde",
    );
    let mut r = l.clone();
    r["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("creationTimestamp");
    r["spec"].as_object_mut().unwrap().remove("type");
    let d = compare(&[(200, l)], &[(200, r)]);
    let paths: Vec<&str> = d[0].iter().map(|d| d.path.as_str()).collect();
    assert_eq!(
        paths,
        vec!["/body/metadata/creationTimestamp", "/body/spec/type"]
    );
    assert_eq!(d[0][0].right, None);
}

#[test]
fn a_different_message_is_reported() {
    let l = json!({"kind": "Status", "message": "Service \"s\" is invalid: spec.ports[0].port: Invalid value: 70000", "code": 422,
        "details": {"causes": [{"reason": "FieldValueInvalid", "field": "spec.ports[0].port"}]}});
    let mut r = l.clone();
    r["message"] = json!("Service \"s\" is invalid");
    r["details"]["causes"][0]["field"] = json!("spec.ports[0]");
    let d = compare(&[(422, l)], &[(422, r)]);
    let paths: Vec<&str> = d[0].iter().map(|d| d.path.as_str()).collect();
    assert_eq!(paths, vec!["/body/message", "/body/details/causes/0/field"]);
}

#[test]
fn resource_version_order_and_reuse_are_compared() {
    // left: an update that does not change the version (no-op), right: one that does
    let l = [
        (200, json!({"metadata": {"resourceVersion": "10"}})),
        (200, json!({"metadata": {"resourceVersion": "10"}})),
    ];
    let r = [
        (200, json!({"metadata": {"resourceVersion": "3"}})),
        (200, json!({"metadata": {"resourceVersion": "4"}})),
    ];
    let d = compare(&l, &r);
    assert!(d[0].is_empty());
    assert_eq!(d[1].len(), 1, "{:?}", d[1]);
    assert_eq!(d[1][0].path, "/body/metadata/resourceVersion");
}

#[test]
fn a_uid_that_should_repeat_but_does_not_is_reported() {
    // an ownerReference that names the owner's uid on one side and another uid on the other
    let owner = |u: &str| json!({"metadata": {"uid": u}});
    let child = |u: &str| json!({"metadata": {"ownerReferences": [{"uid": u}]}});
    let d = compare(
        &[(200, owner("a")), (200, child("a"))],
        &[(200, owner("x")), (200, child("y"))],
    );
    assert!(d[0].is_empty());
    assert_eq!(d[1][0].path, "/body/metadata/ownerReferences/0/uid");
}

#[test]
fn a_null_timestamp_is_not_hidden() {
    let l = json!({"metadata": {"creationTimestamp": "2024-01-01T00:00:00Z"}});
    let r = json!({"metadata": {"creationTimestamp": null}});
    assert_eq!(compare(&[(200, l)], &[(200, r)])[0].len(), 1);
}

#[test]
fn ages_in_a_watch_as_table_are_normalised_after_the_first_event() {
    let table = |cols: bool, age: &str| {
        let mut t = json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {"resourceVersion": "5"},
            "rows": [{"cells": ["a", age], "object": {"metadata": {"name": "a"}}}]});
        if cols {
            t["columnDefinitions"] =
                json!([{"name": "Name", "type": "string"}, {"name": "Age", "type": "string"}]);
        }
        json!({"type": "ADDED", "object": t})
    };
    let watch = |a: &str, b: &str| Outcome {
        uri: "/api/v1/namespaces/n/configmaps?watch=1".into(),
        response: Ok(Response {
            status: 200,
            content_type: Some("application/json;as=Table;v=v1;g=meta.k8s.io".into()),
            body: Bytes::new(),
            frames: Some(vec![
                Bytes::from(table(true, a).to_string()),
                Bytes::from(table(false, b).to_string()),
            ]),
            ended: true,
        }),
        json: None,
    };
    let (mut lm, mut rm) = (Mapper::default(), Mapper::default());
    let l = canonical(
        "/api/v1/namespaces/n/configmaps",
        &watch("1s", "2s"),
        &mut lm,
    );
    let r = canonical(
        "/api/v1/namespaces/n/configmaps",
        &watch("8s", "9s"),
        &mut rm,
    );
    assert_eq!(diff(&l, &r), vec![]);
}

/// The admitted token volume's generated name is mapped where managedFields use it as a key
/// (`k:{"name":"kube-api-access-xxxxx"}`) as well as where it is a value; another volume name
/// in that key is still reported.
#[test]
fn generated_volume_names_in_managed_fields_keys_are_mapped() {
    let pod = |volume: &str| {
        json!({"kind": "Pod", "apiVersion": "v1", "metadata": {"name": "p", "managedFields": [{
            "manager": "m", "operation": "Update", "fieldsType": "FieldsV1",
            "fieldsV1": {"f:spec": {"f:volumes": {format!("k:{{\"name\":\"{volume}\"}}"): {".": {}, "f:name": {}}}}}
        }]}, "spec": {"volumes": [{"name": volume}]}})
    };
    let same = compare(
        &[(201, pod("kube-api-access-mqkx9"))],
        &[(201, pod("kube-api-access-4twcp"))],
    );
    assert!(same[0].is_empty(), "{:?}", same[0]);
    let other = compare(
        &[(201, pod("kube-api-access-mqkx9"))],
        &[(201, pod("data"))],
    );
    assert!(!other[0].is_empty(), "another volume is a difference");
}

#[test]
fn uids_are_numbered_whatever_the_order_of_an_objects_members() {
    // Go writes a pod's uid before its ownerReferences; another server may write them the
    // other way round. Which uid repeats is still compared.
    let go = |pod: &str, owner: &str| {
        serde_json::from_str::<Value>(&format!(
            r#"{{"metadata": {{"name": "p", "uid": "{pod}", "ownerReferences": [{{"uid": "{owner}"}}]}}}}"#
        ))
        .unwrap()
    };
    let other = |pod: &str, owner: &str| {
        serde_json::from_str::<Value>(&format!(
            r#"{{"metadata": {{"ownerReferences": [{{"uid": "{owner}"}}], "name": "p", "uid": "{pod}"}}}}"#
        ))
        .unwrap()
    };
    let rs = |u: &str| json!({"metadata": {"name": "rs", "uid": u}});
    let d = compare(
        &[(200, other("p1", "o1")), (200, rs("o1"))],
        &[(200, go("p2", "o2")), (200, rs("o2"))],
    );
    assert!(d.iter().all(Vec::is_empty), "{d:?}");
    // the owner named on the right is not the ReplicaSet listed next: reported
    let d = compare(
        &[(200, other("p1", "o1")), (200, rs("o1"))],
        &[(200, go("p2", "o2")), (200, rs("o3"))],
    );
    assert_eq!(d[1][0].path, "/body/metadata/uid");
}

#[test]
fn rules_review_and_apply_conflict_order_is_not_compared_but_their_content_is() {
    let review = |urls: &[&str]| {
        json!({"kind": "SelfSubjectRulesReview", "apiVersion": "authorization.k8s.io/v1",
            "status": {"resourceRules": [], "incomplete": false, "nonResourceRules":
                urls.iter().map(|u| json!({"verbs": ["get"], "nonResourceURLs": [u]})).collect::<Vec<_>>()}})
    };
    let d = compare(
        &[(201, review(&["/api", "/healthz", "/openid"]))],
        &[(201, review(&["/openid", "/api", "/healthz"]))],
    );
    assert!(d[0].is_empty(), "{:?}", d[0]);
    let d = compare(
        &[(201, review(&["/api", "/healthz"]))],
        &[(201, review(&["/openid", "/api"]))],
    );
    assert!(!d[0].is_empty());
    let conflict = |causes: &[(&str, &str)]| {
        json!({"kind": "Status", "status": "Failure", "reason": "Conflict", "code": 409,
            "details": {"causes": causes.iter().map(|(m, f)| json!({"reason": "FieldManagerConflict",
                "message": format!("conflict with \"{m}\" using apps/v1"), "field": f})).collect::<Vec<_>>()}})
    };
    let d = compare(
        &[(
            409,
            conflict(&[
                ("kubectl", ".spec.replicas"),
                ("kubectl-set", ".spec.image"),
            ]),
        )],
        &[(
            409,
            conflict(&[
                ("kubectl-set", ".spec.image"),
                ("kubectl", ".spec.replicas"),
            ]),
        )],
    );
    assert!(d[0].is_empty(), "{:?}", d[0]);
    let d = compare(
        &[(
            409,
            conflict(&[("kubectl", ".spec.replicas"), ("kubectl", ".spec.paused")]),
        )],
        &[(
            409,
            conflict(&[("kubectl", ".spec.paused"), ("kubectl", ".spec.replicas")]),
        )],
    );
    assert_eq!(
        d[0].len(),
        2,
        "the order of one manager's fields is still compared"
    );
}
