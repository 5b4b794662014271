//! policy/v1: `pkg/apis/policy/validation/validation.go` ValidatePodDisruptionBudget (its
//! strategy validates the spec only; the metadata gets BeforeCreate's generic checks).

use super::access::get;
use super::apps::{not_more_than_100_percent, positive_int_or_percent};
use super::field::{self, BadValue, ErrorList, Path};
use super::objectmeta::validate_label_selector;
use serde_json::{json, Value};

/// `ValidatePodDisruptionBudgetSpec`.
pub fn validate_pdb(pdb: &Value) -> ErrorList {
    let spec = Path::new("spec");
    let mut errs = ErrorList::new();
    let (min, max) = (
        get(pdb, "spec.minAvailable"),
        get(pdb, "spec.maxUnavailable"),
    );
    if min.is_some() && max.is_some() {
        // The internal PodDisruptionBudgetSpec, as Go marshals it (no JSON tags).
        let sel = get(pdb, "spec.selector").cloned().unwrap_or(Value::Null);
        errs.push(field::invalid(
            &spec,
            BadValue::Struct(
                json!({"MinAvailable": min, "Selector": sel, "MaxUnavailable": max,
                "UnhealthyPodEvictionPolicy": get(pdb, "spec.unhealthyPodEvictionPolicy")}),
            ),
            "minAvailable and maxUnavailable cannot be both set",
        ));
    }
    if min.is_some() {
        errs.extend(positive_int_or_percent(min, &spec.child("minAvailable")));
        errs.extend(not_more_than_100_percent(min, &spec.child("minAvailable")));
    }
    if max.is_some() {
        errs.extend(positive_int_or_percent(max, &spec.child("maxUnavailable")));
        errs.extend(not_more_than_100_percent(
            max,
            &spec.child("maxUnavailable"),
        ));
    }
    if let Some(sel) = get(pdb, "spec.selector") {
        errs.extend(validate_label_selector(sel, false, &spec.child("selector")));
    }
    if let Some(p) = get(pdb, "spec.unhealthyPodEvictionPolicy").and_then(Value::as_str) {
        if p != "IfHealthyBudget" && p != "AlwaysAllow" {
            errs.push(field::not_supported(
                &spec.child("unhealthyPodEvictionPolicy"),
                BadValue::named(p),
                &["AlwaysAllow", "IfHealthyBudget"],
            ));
        }
    }
    errs
}

/// The strategy's ValidateUpdate: the spec again (it is mutable).
pub fn validate_pdb_update(new: &Value, _old: &Value) -> ErrorList {
    validate_pdb(new)
}
