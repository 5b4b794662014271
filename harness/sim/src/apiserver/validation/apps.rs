//! apps/v1: `pkg/apis/apps/validation/validation.go` ValidateDeployment(Update),
//! ValidateReplicaSet(Update), ValidateStatefulSet(Update), ValidateDaemonSet(Update).

use super::access::{arr, get, has, int, s};
use super::content::{self, NameRule};
use super::core::pvc_spec;
use super::field::{self, BadValue, ErrorList, Path};
use super::objectmeta::{
    self, label_selector_value, nonnegative, selector_converts, selector_matches_opt, semantic_eq,
    validate_annotations, validate_label_selector, validate_labels,
};
use super::pod::{controller_template, pod_template_spec};
use serde_json::{json, Value};

fn template_labels(tpl: &Value) -> BadValue {
    BadValue::Json(get(tpl, "metadata.labels").cloned().unwrap_or(Value::Null))
}

/// IntOrString as Go marshals it (its own MarshalJSON: the int or the string).
fn int_or_string(v: Option<&Value>) -> BadValue {
    BadValue::Json(v.cloned().unwrap_or(json!(0)))
}

/// `getIntOrPercentValue`.
fn int_or_percent_value(v: Option<&Value>) -> i64 {
    match v {
        Some(Value::String(s)) if content::is_valid_percent(s).is_empty() => {
            s[..s.len() - 1].parse().unwrap_or(0)
        }
        Some(Value::String(_)) => 0,
        Some(v) => v.as_i64().unwrap_or(0),
        None => 0,
    }
}

/// `ValidatePositiveIntOrPercent`.
pub fn positive_int_or_percent(v: Option<&Value>, path: &Path) -> ErrorList {
    match v {
        Some(Value::String(p)) => content::is_valid_percent(p)
            .into_iter()
            .map(|m| field::invalid(path, int_or_string(v), &m))
            .collect(),
        other => nonnegative(other.and_then(Value::as_i64).unwrap_or(0), path),
    }
}

/// `IsNotMoreThan100Percent`.
pub fn not_more_than_100_percent(v: Option<&Value>, path: &Path) -> ErrorList {
    match v {
        Some(Value::String(p)) if content::is_valid_percent(p).is_empty() => {
            if p[..p.len() - 1].parse::<i64>().unwrap_or(0) > 100 {
                vec![field::invalid(
                    path,
                    int_or_string(v),
                    "must not be greater than 100%",
                )]
            } else {
                vec![]
            }
        }
        _ => vec![],
    }
}

/// The selector checks Deployment, ReplicaSet and StatefulSet share: required, valid,
/// non-empty; then whether it converts.
fn strict_selector(obj: &Value, what: &str) -> (ErrorList, Option<bool>) {
    let path = Path::new("spec.selector");
    let mut errs = ErrorList::new();
    let sel = get(obj, "spec.selector");
    match sel {
        None => errs.push(field::required(&path, "")),
        Some(sel) => {
            errs.extend(validate_label_selector(sel, false, &path));
            if get(sel, "matchLabels")
                .and_then(Value::as_object)
                .map(|m| m.len())
                .unwrap_or(0)
                + arr(sel, "matchExpressions").len()
                == 0
            {
                errs.push(field::invalid(
                    &path,
                    label_selector_value(Some(sel)),
                    &format!("empty selector is invalid for {}", what),
                ));
            }
        }
    }
    (errs, selector_converts(sel))
}

/// `ValidatePodTemplateSpecForReplicaSet` (also Deployments').
fn template_for_replica_set(obj: &Value, empty_selector: bool, owner: &str) -> ErrorList {
    let path = Path::new("spec.template");
    let empty = json!({});
    let tpl = get(obj, "spec.template").unwrap_or(&empty);
    let mut errs = ErrorList::new();
    if !empty_selector && !selector_matches_opt(get(obj, "spec.selector"), tpl, "metadata.labels") {
        errs.push(field::invalid(
            &path.child("metadata.labels"),
            template_labels(tpl),
            "`selector` does not match template `labels`",
        ));
    }
    errs.extend(pod_template_spec(tpl, &path));
    errs.extend(controller_template(tpl, &path, owner));
    errs
}

/// A DeploymentStrategy as Go marshals the internal type (no JSON tags).
fn deployment_strategy_struct(st: &Value) -> Value {
    let ru = get(st, "rollingUpdate").map(|r| {
        json!({"MaxUnavailable": r.get("maxUnavailable").cloned().unwrap_or(json!(0)),
               "MaxSurge": r.get("maxSurge").cloned().unwrap_or(json!(0))})
    });
    json!({"Type": s(st, "type"), "RollingUpdate": ru})
}

/// `ValidateDeploymentSpec`.
fn deployment_spec(d: &Value) -> ErrorList {
    let spec = Path::new("spec");
    let mut errs = nonnegative(
        int(d, "spec.replicas").unwrap_or(0),
        &spec.child("replicas"),
    );
    let (sel_errs, converts) = strict_selector(d, "deployment");
    errs.extend(sel_errs);
    match converts {
        None => errs.push(field::invalid(
            &spec.child("selector"),
            label_selector_value(get(d, "spec.selector")),
            "invalid label selector",
        )),
        Some(empty) => errs.extend(template_for_replica_set(d, empty, "ReplicaSet")),
    }
    let empty = json!({});
    let st = get(d, "spec.strategy").unwrap_or(&empty);
    let sp = spec.child("strategy");
    match s(st, "type") {
        "Recreate" => {
            if has(st, "rollingUpdate") {
                errs.push(field::forbidden(
                    &sp.child("rollingUpdate"),
                    "may not be specified when strategy `type` is 'Recreate'",
                ));
            }
        }
        "RollingUpdate" => match get(st, "rollingUpdate") {
            None => errs.push(field::required(
                &sp.child("rollingUpdate"),
                "this should be defaulted and never be nil",
            )),
            Some(ru) => {
                let rp = sp.child("rollingUpdate");
                let (mu, ms) = (get(ru, "maxUnavailable"), get(ru, "maxSurge"));
                errs.extend(positive_int_or_percent(mu, &rp.child("maxUnavailable")));
                errs.extend(positive_int_or_percent(ms, &rp.child("maxSurge")));
                if int_or_percent_value(mu) == 0 && int_or_percent_value(ms) == 0 {
                    errs.push(field::invalid(
                        &rp.child("maxUnavailable"),
                        int_or_string(mu),
                        "may not be 0 when `maxSurge` is 0",
                    ));
                }
                errs.extend(not_more_than_100_percent(mu, &rp.child("maxUnavailable")));
            }
        },
        _ => errs.push(field::not_supported(
            &sp,
            BadValue::Struct(deployment_strategy_struct(st)),
            &["Recreate", "RollingUpdate"],
        )),
    }
    let min_ready = int(d, "spec.minReadySeconds").unwrap_or(0);
    errs.extend(nonnegative(min_ready, &spec.child("minReadySeconds")));
    if let Some(r) = int(d, "spec.revisionHistoryLimit") {
        errs.extend(nonnegative(r, &spec.child("revisionHistoryLimit")));
    }
    if let Some(p) = int(d, "spec.progressDeadlineSeconds") {
        errs.extend(nonnegative(p, &spec.child("progressDeadlineSeconds")));
        if p <= min_ready {
            errs.push(field::invalid(
                &spec.child("progressDeadlineSeconds"),
                BadValue::Json(json!(p)),
                "must be greater than minReadySeconds",
            ));
        }
    }
    errs
}

/// `ValidateDeployment`.
pub fn validate_deployment(d: &Value) -> ErrorList {
    let mut errs = objectmeta::core_object_meta(d, true, NameRule::Subdomain);
    errs.extend(deployment_spec(d));
    errs
}

fn selector_immutable(new: &Value, old: &Value) -> ErrorList {
    objectmeta::immutable(
        super::access::or_null(new, "spec.selector"),
        super::access::or_null(old, "spec.selector"),
        &Path::new("spec.selector"),
        label_selector_value(get(new, "spec.selector")),
    )
}

/// `ValidateDeploymentUpdate`.
pub fn validate_deployment_update(new: &Value, old: &Value) -> ErrorList {
    let mut errs = objectmeta::core_object_meta_update(new, old);
    errs.extend(deployment_spec(new));
    errs.extend(selector_immutable(new, old));
    errs
}

/// `ValidateDeploymentStatusUpdate`: `ValidateDeploymentStatus` of the new status, and a
/// collisionCount that only grows.
pub fn validate_deployment_status_update(new: &Value, old: &Value) -> ErrorList {
    let st = Path::new("status");
    let n = |f: &str| int(new, &format!("status.{f}")).unwrap_or(0);
    let mut errs = ErrorList::new();
    for f in [
        "observedGeneration",
        "replicas",
        "updatedReplicas",
        "readyReplicas",
        "availableReplicas",
        "unavailableReplicas",
    ] {
        errs.extend(nonnegative(n(f), &st.child(f)));
    }
    for f in ["terminatingReplicas", "collisionCount"] {
        if let Some(v) = int(new, &format!("status.{f}")) {
            errs.extend(nonnegative(v, &st.child(f)));
        }
    }
    let more_than_replicas = "cannot be greater than status.replicas";
    for f in ["updatedReplicas", "readyReplicas", "availableReplicas"] {
        if n(f) > n("replicas") {
            errs.push(field::invalid(
                &st.child(f),
                BadValue::Int(n(f)),
                more_than_replicas,
            ));
        }
    }
    if n("availableReplicas") > n("readyReplicas") {
        errs.push(field::invalid(
            &st.child("availableReplicas"),
            BadValue::Int(n("availableReplicas")),
            "cannot be greater than readyReplicas",
        ));
    }
    // `IsDecremented`: a count that was set may not go down or away.
    if let Some(was) = int(old, "status.collisionCount") {
        let now = int(new, "status.collisionCount");
        if now.is_none_or(|c| c < was) {
            errs.push(field::invalid(
                &st.child("collisionCount"),
                BadValue::Int(now.unwrap_or(0)),
                "cannot be decremented",
            ));
        }
    }
    errs
}

/// `ValidateReplicaSetSpec`.
fn replica_set_spec(rs: &Value) -> ErrorList {
    let spec = Path::new("spec");
    let mut errs = nonnegative(
        int(rs, "spec.replicas").unwrap_or(0),
        &spec.child("replicas"),
    );
    errs.extend(nonnegative(
        int(rs, "spec.minReadySeconds").unwrap_or(0),
        &spec.child("minReadySeconds"),
    ));
    let (sel_errs, converts) = strict_selector(rs, "deployment");
    errs.extend(sel_errs);
    match converts {
        None => errs.push(field::invalid(
            &spec.child("selector"),
            label_selector_value(get(rs, "spec.selector")),
            "invalid label selector",
        )),
        Some(empty) => errs.extend(template_for_replica_set(rs, empty, "ReplicaSet")),
    }
    errs
}

/// `ValidateReplicaSet`.
pub fn validate_replica_set(rs: &Value) -> ErrorList {
    let mut errs = objectmeta::core_object_meta(rs, true, NameRule::Subdomain);
    errs.extend(replica_set_spec(rs));
    errs
}

/// `ValidateReplicaSetUpdate`.
pub fn validate_replica_set_update(new: &Value, old: &Value) -> ErrorList {
    let mut errs = objectmeta::core_object_meta_update(new, old);
    errs.extend(replica_set_spec(new));
    errs.extend(selector_immutable(new, old));
    errs
}

/// A StatefulSetUpdateStrategy as Go marshals the internal type.
fn sts_strategy_struct(st: &Value) -> Value {
    let ru = get(st, "rollingUpdate").map(|r| {
        json!({"Partition": r.get("partition").cloned().unwrap_or(json!(0)),
               "MaxUnavailable": r.get("maxUnavailable").cloned()})
    });
    json!({"Type": s(st, "type"), "RollingUpdate": ru})
}

/// `ValidateStatefulSetSpec`, with the update options when `update`.
fn stateful_set_spec(sts: &Value, update: bool, skip_template: bool) -> ErrorList {
    let spec = Path::new("spec");
    let mut errs = ErrorList::new();
    match s(sts, "spec.podManagementPolicy") {
        "" => errs.push(field::required(&spec.child("podManagementPolicy"), "")),
        "OrderedReady" | "Parallel" => {}
        other => errs.push(field::invalid(
            &spec.child("podManagementPolicy"),
            BadValue::named(other),
            "must be 'OrderedReady' or 'Parallel'",
        )),
    }
    let empty = json!({});
    let st = get(sts, "spec.updateStrategy").unwrap_or(&empty);
    let up = spec.child("updateStrategy");
    match s(st, "type") {
        "" => errs.push(field::required(&up, "")),
        "OnDelete" => {
            if let Some(ru) = get(st, "rollingUpdate") {
                errs.push(field::invalid(
                    &up.child("rollingUpdate"),
                    BadValue::Struct(json!({"Partition": ru.get("partition").cloned().unwrap_or(json!(0)), "MaxUnavailable": ru.get("maxUnavailable").cloned()})),
                    "only allowed for updateStrategy 'RollingUpdate'",
                ));
            }
        }
        "RollingUpdate" => {
            if let Some(ru) = get(st, "rollingUpdate") {
                let rp = up.child("rollingUpdate");
                errs.extend(nonnegative(
                    int(ru, "partition").unwrap_or(0),
                    &rp.child("partition"),
                ));
                if let Some(mu) = get(ru, "maxUnavailable") {
                    errs.extend(positive_int_or_percent(
                        Some(mu),
                        &rp.child("maxUnavailable"),
                    ));
                    if int_or_percent_value(Some(mu)) == 0 {
                        errs.push(field::invalid(
                            &rp.child("maxUnavailable"),
                            int_or_string(Some(mu)),
                            "cannot be 0",
                        ));
                    }
                    errs.extend(not_more_than_100_percent(
                        Some(mu),
                        &rp.child("maxUnavailable"),
                    ));
                }
            }
        }
        _ => errs.push(field::invalid(
            &up,
            BadValue::Struct(sts_strategy_struct(st)),
            "must be 'RollingUpdate' or 'OnDelete'",
        )),
    }
    if let Some(p) = get(sts, "spec.persistentVolumeClaimRetentionPolicy") {
        let pp = spec.child("persistentVolumeClaimRetentionPolicy");
        for k in ["whenDeleted", "whenScaled"] {
            let v = s(p, k);
            if v != "Retain" && v != "Delete" {
                errs.push(field::not_supported(
                    &pp.child(k),
                    BadValue::named(v),
                    &["Retain", "Delete"],
                ));
            }
        }
    }
    if !update {
        for (i, t) in arr(sts, "spec.volumeClaimTemplates").iter().enumerate() {
            errs.extend(pvc_spec(
                get(t, "spec").unwrap_or(&empty),
                &spec.child("volumeClaimTemplates").index(i).child("spec"),
            ));
        }
    }
    errs.extend(nonnegative(
        int(sts, "spec.replicas").unwrap_or(0),
        &spec.child("replicas"),
    ));
    errs.extend(nonnegative(
        int(sts, "spec.minReadySeconds").unwrap_or(0),
        &spec.child("minReadySeconds"),
    ));
    if let Some(start) = int(sts, "spec.ordinals.start") {
        errs.extend(nonnegative(start, &spec.child("ordinals.start")));
    }
    let svc = s(sts, "spec.serviceName");
    if !update && !svc.is_empty() {
        errs.extend(super::pod::dns1123_label(svc, &spec.child("serviceName")));
    }
    let (sel_errs, converts) = strict_selector(sts, "statefulset");
    errs.extend(sel_errs);
    let tpl_path = spec.child("template");
    let tpl = get(sts, "spec.template").unwrap_or(&empty);
    match converts {
        None => errs.push(field::invalid(
            &spec.child("selector"),
            label_selector_value(get(sts, "spec.selector")),
            "",
        )),
        Some(empty_sel) => {
            // The controller sets hostname and subdomain, and adds the claim templates as volumes.
            let mut t = tpl.clone();
            if let Some(sp) = t.get_mut("spec").and_then(Value::as_object_mut) {
                sp.remove("hostname");
                sp.remove("subdomain");
                let claims: Vec<Value> = arr(sts, "spec.volumeClaimTemplates")
                    .iter()
                    .map(|c| {
                        let n = s(c, "metadata.name");
                        json!({"name": n, "persistentVolumeClaim": {"claimName": n}})
                    })
                    .collect();
                if !claims.is_empty() {
                    let mut vols = claims.clone();
                    for v in arr(tpl, "spec.volumes") {
                        if !claims.iter().any(|c| c["name"] == v["name"]) {
                            vols.push(v.clone());
                        }
                    }
                    sp.insert("volumes".into(), Value::Array(vols));
                }
            }
            if !empty_sel && !selector_matches_opt(get(sts, "spec.selector"), &t, "metadata.labels")
            {
                errs.push(field::invalid(
                    &tpl_path.child("metadata.labels"),
                    template_labels(&t),
                    "`selector` does not match template `labels`",
                ));
            }
            if !skip_template {
                errs.extend(pod_template_spec(&t, &tpl_path));
            }
            let md = get(&t, "metadata").cloned().unwrap_or_else(|| json!({}));
            errs.extend(validate_labels(&md, "labels", &tpl_path.child("labels")));
            errs.extend(validate_annotations(
                &md,
                "annotations",
                &tpl_path.child("annotations"),
            ));
        }
    }
    errs.extend(controller_template(tpl, &tpl_path, "StatefulSet"));
    errs
}

/// `ValidateStatefulSet` (names are DNS-1123 labels).
pub fn validate_stateful_set(sts: &Value) -> ErrorList {
    let mut errs = objectmeta::core_object_meta(sts, true, NameRule::Label);
    errs.extend(stateful_set_spec(sts, false, false));
    errs
}

/// `ValidateStatefulSetUpdate`: the spec is immutable but for replicas, ordinals, template,
/// updateStrategy, revisionHistoryLimit, persistentVolumeClaimRetentionPolicy, minReadySeconds.
pub fn validate_stateful_set_update(new: &Value, old: &Value) -> ErrorList {
    let mut errs = objectmeta::core_object_meta_update(new, old);
    let skip_template = !stateful_set_spec(old, true, false).is_empty();
    errs.extend(stateful_set_spec(new, true, skip_template));
    let strip = |v: &Value| {
        let mut spec = get(v, "spec").cloned().unwrap_or_else(|| json!({}));
        if let Some(m) = spec.as_object_mut() {
            for k in [
                "replicas",
                "template",
                "updateStrategy",
                "minReadySeconds",
                "ordinals",
                "revisionHistoryLimit",
                "persistentVolumeClaimRetentionPolicy",
            ] {
                m.remove(k);
            }
        }
        spec
    };
    if !semantic_eq(&strip(new), &strip(old)) {
        errs.push(field::forbidden(&Path::new("spec"), "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"));
    }
    errs
}

/// `ValidateDaemonSetSpec`.
fn daemon_set_spec(ds: &Value) -> ErrorList {
    let spec = Path::new("spec");
    let empty = json!({});
    let mut errs = ErrorList::new();
    let sel = get(ds, "spec.selector");
    if let Some(sel) = sel {
        errs.extend(validate_label_selector(sel, false, &spec.child("selector")));
    }
    let tpl = get(ds, "spec.template").unwrap_or(&empty);
    let tpl_path = spec.child("template");
    if selector_converts(sel).is_some() {
        // A nil selector converts to Nothing, which matches no labels.
        if !selector_matches_opt(sel, tpl, "metadata.labels") {
            errs.push(field::invalid(
                &tpl_path.child("metadata.labels"),
                template_labels(tpl),
                "`selector` does not match template `labels`",
            ));
        }
    }
    if let Some(sel) = sel {
        if get(sel, "matchLabels")
            .and_then(Value::as_object)
            .map(|m| m.len())
            .unwrap_or(0)
            + arr(sel, "matchExpressions").len()
            == 0
        {
            errs.push(field::invalid(
                &spec.child("selector"),
                label_selector_value(Some(sel)),
                "empty selector is invalid for daemonset",
            ));
        }
    }
    errs.extend(pod_template_spec(tpl, &tpl_path));
    errs.extend(controller_template(tpl, &tpl_path, "DaemonSet"));
    errs.extend(nonnegative(
        int(ds, "spec.minReadySeconds").unwrap_or(0),
        &spec.child("minReadySeconds"),
    ));
    let st = get(ds, "spec.updateStrategy").unwrap_or(&empty);
    let up = spec.child("updateStrategy");
    match s(st, "type") {
        "OnDelete" => {}
        "RollingUpdate" => match get(st, "rollingUpdate") {
            None => errs.push(field::required(&up.child("rollingUpdate"), "")),
            Some(ru) => {
                let rp = up.child("rollingUpdate");
                let (mu, ms) = (get(ru, "maxUnavailable"), get(ru, "maxSurge"));
                errs.extend(positive_int_or_percent(mu, &rp.child("maxUnavailable")));
                errs.extend(positive_int_or_percent(ms, &rp.child("maxSurge")));
                errs.extend(not_more_than_100_percent(mu, &rp.child("maxUnavailable")));
                errs.extend(not_more_than_100_percent(ms, &rp.child("maxSurge")));
                let (hu, hs) = (int_or_percent_value(mu) != 0, int_or_percent_value(ms) != 0);
                if hu && hs {
                    errs.push(field::invalid(
                        &rp.child("maxSurge"),
                        int_or_string(ms),
                        "may not be set when maxUnavailable is non-zero",
                    ));
                } else if !hu && !hs {
                    errs.push(field::required(
                        &rp.child("maxUnavailable"),
                        "cannot be 0 when maxSurge is 0",
                    ));
                }
            }
        },
        t => {
            let ru = get(st, "rollingUpdate").map(|r| {
                json!({"MaxUnavailable": r.get("maxUnavailable").cloned().unwrap_or(json!(0)),
                       "MaxSurge": r.get("maxSurge").cloned().unwrap_or(json!(0))})
            });
            errs.push(field::not_supported(
                &up,
                BadValue::Struct(json!({"Type": t, "RollingUpdate": ru})),
                &["RollingUpdate", "OnDelete"],
            ));
        }
    }
    if let Some(r) = int(ds, "spec.revisionHistoryLimit") {
        errs.extend(nonnegative(r, &spec.child("revisionHistoryLimit")));
    }
    errs
}

/// `ValidateDaemonSet`.
pub fn validate_daemon_set(ds: &Value) -> ErrorList {
    let mut errs = objectmeta::core_object_meta(ds, true, NameRule::Subdomain);
    errs.extend(daemon_set_spec(ds));
    errs
}

/// `ValidateDaemonSetUpdate` (the template generation is the strategy's, not a client's).
pub fn validate_daemon_set_update(new: &Value, old: &Value) -> ErrorList {
    let mut errs = objectmeta::core_object_meta_update(new, old);
    errs.extend(selector_immutable(new, old));
    errs.extend(daemon_set_spec(new));
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deployment_status_counts_no_more_than_its_replicas() {
        let d = |status: Value| json!({"metadata": {"name": "d"}, "status": status});
        let ok = d(
            json!({"replicas": 2, "updatedReplicas": 2, "readyReplicas": 1, "availableReplicas": 1}),
        );
        assert!(validate_deployment_status_update(&ok, &ok).is_empty());
        let errs = validate_deployment_status_update(
            &d(json!({"observedGeneration": 1, "replicas": 0, "updatedReplicas": 1})),
            &ok,
        );
        let text: Vec<String> = errs.iter().map(|e| e.to_string()).collect();
        assert_eq!(
            text,
            ["status.updatedReplicas: Invalid value: 1: cannot be greater than status.replicas"]
        );
        let errs = validate_deployment_status_update(
            &d(json!({"replicas": 1, "readyReplicas": 1, "collisionCount": 1})),
            &d(json!({"collisionCount": 2})),
        );
        assert_eq!(errs.len(), 1);
        assert_eq!(
            errs[0].to_string(),
            "status.collisionCount: Invalid value: 1: cannot be decremented"
        );
    }
}
