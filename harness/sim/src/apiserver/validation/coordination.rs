//! coordination.k8s.io/v1: `pkg/apis/coordination/validation/validation.go` ValidateLease and
//! ValidateLeaseUpdate.

use super::access::{int, opt_s};
use super::content::{self, NameRule};
use super::field::{self, BadValue, ErrorList, Path};
use super::objectmeta;
use serde_json::Value;

/// `ValidateLeaseSpec`.
fn lease_spec(l: &Value) -> ErrorList {
    let spec = Path::new("spec");
    let mut errs = ErrorList::new();
    if let Some(d) = int(l, "spec.leaseDurationSeconds").filter(|d| *d <= 0) {
        errs.push(field::invalid(
            &spec.child("leaseDurationSeconds"),
            BadValue::Int(d),
            "must be greater than 0",
        ));
    }
    if let Some(t) = int(l, "spec.leaseTransitions").filter(|t| *t < 0) {
        errs.push(field::invalid(
            &spec.child("leaseTransitions"),
            BadValue::Int(t),
            "must be greater than or equal to 0",
        ));
    }
    let strategy = opt_s(l, "spec.strategy");
    if let Some(st) = strategy {
        let p = spec.child("strategy.strategy");
        if st.contains('/') {
            for m in content::is_qualified_name(st) {
                errs.push(field::invalid(&p, BadValue::named(st), &m));
            }
        } else if st != "OldestEmulationVersion" {
            errs.push(field::not_supported(
                &p,
                BadValue::named(st),
                &["OldestEmulationVersion"],
            ));
        }
    }
    let preferred = opt_s(l, "spec.preferredHolder").unwrap_or("");
    if !preferred.is_empty() && strategy.unwrap_or("").is_empty() {
        errs.push(field::forbidden(
            &spec.child("preferredHolder"),
            "may only be specified if `strategy` is defined",
        ));
    }
    errs
}

/// `ValidateLease`.
pub fn validate_lease(l: &Value) -> ErrorList {
    let mut errs = objectmeta::validate_object_meta(l, true, NameRule::Subdomain);
    errs.extend(lease_spec(l));
    errs
}

/// `ValidateLeaseUpdate`.
pub fn validate_lease_update(new: &Value, old: &Value) -> ErrorList {
    let mut errs = objectmeta::validate_object_meta_update(new, old);
    errs.extend(lease_spec(new));
    errs
}
