use super::*;
use serde_json::json;

const T0: &str = "2026-01-01T00:00:00Z";
const T1: &str = "2026-01-01T00:01:00Z";
const T2: &str = "2026-01-01T00:02:00Z";

fn ep<'a>(
    api_version: &'a str,
    kind: &'a str,
    sub: &'a str,
    reset: Option<&'a Set>,
    now: &'a str,
) -> Endpoint<'a> {
    Endpoint {
        api_version,
        kind,
        subresource: sub,
        reset,
        now,
    }
}

fn mf(obj: &Value) -> &Value {
    &obj["metadata"]["managedFields"]
}

fn cm(data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "n", "uid": "u"}, "data": data})
}

#[test]
fn create_records_new_maps_with_dot() {
    let mut obj = cm(json!({"a": "1"}));
    update(
        &ep("v1", "ConfigMap", "", None, T0),
        None,
        &mut obj,
        "kubectl-create",
    );
    assert_eq!(
        mf(&obj),
        &json!([{"manager": "kubectl-create", "operation": "Update", "apiVersion": "v1", "time": T0,
                 "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {".": {}, "f:a": {}}}}])
    );
}

#[test]
fn update_keeps_time_when_nothing_changes_and_moves_ownership_when_it_does() {
    let mut live = cm(json!({"a": "1"}));
    update(&ep("v1", "ConfigMap", "", None, T0), None, &mut live, "one");
    // a no-op write by the same manager
    let mut same = live.clone();
    update(
        &ep("v1", "ConfigMap", "", None, T1),
        Some(&live),
        &mut same,
        "one",
    );
    assert_eq!(same, live);
    // another manager changes a and adds b
    let mut next = live.clone();
    next["data"] = json!({"a": "2", "b": "3"});
    update(
        &ep("v1", "ConfigMap", "", None, T1),
        Some(&live),
        &mut next,
        "two",
    );
    assert_eq!(
        mf(&next),
        &json!([
            {"manager": "one", "operation": "Update", "apiVersion": "v1", "time": T0, "fieldsType": "FieldsV1",
             "fieldsV1": {"f:data": {}}},
            {"manager": "two", "operation": "Update", "apiVersion": "v1", "time": T1, "fieldsType": "FieldsV1",
             "fieldsV1": {"f:data": {"f:a": {}, "f:b": {}}}}
        ])
    );
    // removing everything "two" owns drops its entry
    let mut gone = next.clone();
    gone["data"] = json!({});
    update(
        &ep("v1", "ConfigMap", "", None, T2),
        Some(&next),
        &mut gone,
        "three",
    );
    assert_eq!(
        mf(&gone),
        &json!([{"manager": "one", "operation": "Update", "apiVersion": "v1", "time": T0, "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:data": {}}}])
    );
}

#[test]
fn untracked_objects_stay_untracked_and_reset_clears() {
    let live = cm(json!({"a": "1"}));
    let mut next = live.clone();
    next["data"]["a"] = json!("2");
    update(
        &ep("v1", "ConfigMap", "", None, T1),
        Some(&live),
        &mut next,
        "two",
    );
    assert!(next["metadata"].get("managedFields").is_none());

    let mut tracked = cm(json!({"a": "1"}));
    update(
        &ep("v1", "ConfigMap", "", None, T0),
        None,
        &mut tracked,
        "one",
    );
    let mut reset = tracked.clone();
    reset["metadata"]["managedFields"] = json!([{}]);
    reset["data"]["a"] = json!("2");
    update(
        &ep("v1", "ConfigMap", "", None, T1),
        Some(&tracked),
        &mut reset,
        "two",
    );
    assert!(reset["metadata"].get("managedFields").is_none());
}

#[test]
fn status_writes_are_a_subresource_entry_without_the_spec() {
    let reset_main = super::super::reset::reset_fields("apps", "Deployment", None, false).unwrap();
    let reset_status =
        super::super::reset::reset_fields("apps", "Deployment", Some("status"), false).unwrap();
    let mut d = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "n"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}},
        "status": {"replicas": 4}});
    update(
        &ep("apps/v1", "Deployment", "", Some(&reset_main), T0),
        None,
        &mut d,
        "kubectl",
    );
    assert!(
        mf(&d)[0]["fieldsV1"].get("f:status").is_none(),
        "{}",
        mf(&d)
    );
    d["metadata"]["uid"] = json!("u");
    d["status"] = json!({});
    let mut s = d.clone();
    s["status"] = json!({"replicas": 1, "observedGeneration": 1});
    s["spec"]["replicas"] = json!(7);
    update(
        &ep("apps/v1", "Deployment", "status", Some(&reset_status), T1),
        Some(&d),
        &mut s,
        "kube-controller-manager",
    );
    assert_eq!(
        mf(&s)[1],
        json!({"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "apps/v1", "time": T1,
               "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {"f:observedGeneration": {}, "f:replicas": {}}},
               "subresource": "status"})
    );
}

fn deploy(replicas: i64, image: &str) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
           "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
           "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                    "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "nginx", "image": image}]}}}})
}

#[test]
fn apply_creates_conflicts_forces_and_prunes() {
    let e0 = ep("apps/v1", "Deployment", "", None, T0);
    let live = apply(&e0, None, &deploy(2, "nginx:1"), "ssa", false).unwrap();
    assert_eq!(
        mf(&live),
        &json!([{"manager": "ssa", "operation": "Apply", "apiVersion": "apps/v1", "time": T0, "fieldsType": "FieldsV1",
            "fieldsV1": {"f:metadata": {"f:labels": {"f:app": {}}},
                "f:spec": {"f:replicas": {}, "f:selector": {},
                           "f:template": {"f:metadata": {"f:labels": {"f:app": {}}},
                                          "f:spec": {"f:containers": {"k:{\"name\":\"nginx\"}": {".": {}, "f:image": {}, "f:name": {}}}}}}}}])
    );
    // a no-op re-apply changes nothing, not even the time
    let again = apply(
        &ep("apps/v1", "Deployment", "", None, T1),
        Some(&live),
        &deploy(2, "nginx:1"),
        "ssa",
        false,
    )
    .unwrap();
    assert_eq!(again, live);
    // another applier setting replicas conflicts
    let err = apply(&ep("apps/v1", "Deployment", "", None, T1), Some(&live), &json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": {"replicas": 3}}), "other", false).unwrap_err();
    let ApplyError::Conflicts(c) = err else {
        panic!("{err:?}")
    };
    assert_eq!(
        c.message,
        "Apply failed with 1 conflict: conflict with \"ssa\": .spec.replicas"
    );
    assert_eq!(
        c.causes,
        vec![("\"ssa\"".to_owned(), ".spec.replicas".to_owned())]
    );
    // forced: the field moves
    let forced = apply(&ep("apps/v1", "Deployment", "", None, T1), Some(&live), &json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": {"replicas": 3}}), "other", true).unwrap();
    assert_eq!(forced["spec"]["replicas"], 3);
    assert_eq!(
        mf(&forced)[1]["fieldsV1"],
        json!({"f:spec": {"f:replicas": {}}})
    );
    assert!(mf(&forced)[0]["fieldsV1"]["f:spec"]
        .get("f:replicas")
        .is_none());
    // ssa stops setting the labels of the metadata: removed (nobody else owns them)
    let mut cfg = deploy(2, "nginx:1");
    cfg["metadata"]
        .as_object_mut()
        .unwrap()
        .shift_remove("labels");
    cfg["spec"]
        .as_object_mut()
        .unwrap()
        .shift_remove("replicas");
    let pruned = apply(
        &ep("apps/v1", "Deployment", "", None, T2),
        Some(&forced),
        &cfg,
        "ssa",
        false,
    )
    .unwrap();
    assert!(pruned["metadata"].get("labels").is_none(), "{pruned}");
    assert_eq!(pruned["spec"]["replicas"], 3);
}

#[test]
fn apply_to_an_untracked_object_attributes_it_to_before_first_apply() {
    let mut live = deploy(2, "nginx:1");
    live["metadata"]["uid"] = json!("u");
    let err = apply(
        &ep("apps/v1", "Deployment", "", None, T1),
        Some(&live),
        &deploy(3, "nginx:1"),
        "ssa",
        false,
    )
    .unwrap_err();
    let ApplyError::Conflicts(c) = err else {
        panic!()
    };
    assert_eq!(
        c.message,
        "Apply failed with 1 conflict: conflict with \"before-first-apply\" using apps/v1: .spec.replicas"
    );
}

#[test]
fn apply_errors_as_upstream() {
    // A container without a name is keyed by the name's default "" (validation rejects it later).
    let cfg = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "n"}, "spec": {"containers": [{"image": "x"}]}});
    let out = apply(&ep("v1", "Pod", "", None, T0), None, &cfg, "m", false).unwrap();
    assert!(mf(&out)[0]["fieldsV1"]["f:spec"]["f:containers"]
        .get("k:{\"name\":\"\"}")
        .is_some());
    let cfg = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "n"}, "spec": {"containers": [{"name": "a"}, {"name": "a"}]}});
    assert_eq!(
        apply(&ep("v1", "Pod", "", None, T0), None, &cfg, "m", false).unwrap_err(),
        ApplyError::Internal("failed to create typed patch object (n/p; /v1, Kind=Pod): .spec.containers: duplicate entries for key [name=\"a\"]".into())
    );
    let cfg = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "n"}, "spec": {"priority": "high", "bogus": 1}});
    assert_eq!(
        apply(&ep("v1", "Pod", "", None, T0), None, &cfg, "m", false).unwrap_err(),
        ApplyError::Internal("failed to create typed patch object (n/p; /v1, Kind=Pod): errors:\n  .spec.priority: expected numeric (int or float), got string\n  .spec.bogus: field not declared in schema".into())
    );
    let cfg = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "managedFields": []}});
    assert_eq!(
        apply(&ep("v1", "ConfigMap", "", None, T0), None, &cfg, "m", false).unwrap_err(),
        ApplyError::BadRequest("metadata.managedFields must be nil".into())
    );
}

#[test]
fn more_than_ten_update_managers_are_capped() {
    let mut obj = cm(json!({"k0": "v"}));
    update(
        &ep("v1", "ConfigMap", "", None, "2026-01-01T00:00:00Z"),
        None,
        &mut obj,
        "m0",
    );
    for i in 1..12 {
        let mut next = obj.clone();
        next["data"][format!("k{i}")] = json!("v");
        let now = format!("2026-01-01T00:00:{i:02}Z");
        update(
            &ep("v1", "ConfigMap", "", None, &now),
            Some(&obj),
            &mut next,
            &format!("m{i}"),
        );
        obj = next;
    }
    let managers: Vec<&str> = mf(&obj)
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["manager"].as_str().unwrap())
        .collect();
    assert_eq!(managers.len(), 10);
    assert_eq!(managers[0], "ancient-changes");
    assert_eq!(
        mf(&obj)[0]["fieldsV1"],
        json!({"f:data": {".": {}, "f:k0": {}, "f:k1": {}, "f:k2": {}}})
    );
}
