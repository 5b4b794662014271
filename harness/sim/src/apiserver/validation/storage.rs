//! storage.k8s.io/v1: `pkg/apis/storage/validation/validation.go` ValidateStorageClass and
//! ValidateStorageClassUpdate.

use super::access::{get, opt_s, s, string_map};
use super::content::{self, NameRule};
use super::field::{self, BadValue, ErrorList, Path};
use super::objectmeta;
use serde_json::Value;

const MAX_PARAMETERS: usize = 512;
const MAX_PARAMETERS_SIZE: usize = 256 * 1024;

/// `ValidateStorageClass`.
pub fn validate_storage_class(sc: &Value) -> ErrorList {
    let mut errs = objectmeta::core_object_meta(sc, false, NameRule::Subdomain);
    let prov = s(sc, "provisioner");
    if prov.is_empty() {
        errs.push(field::required(&Path::new("provisioner"), ""));
    } else {
        let lower = prov.to_lowercase();
        for m in content::is_qualified_name(&lower) {
            errs.push(field::invalid(
                &Path::new("provisioner"),
                BadValue::str(&lower),
                &m,
            ));
        }
    }
    let params = string_map(sc, "parameters");
    let pp = Path::new("parameters");
    if params.len() > MAX_PARAMETERS {
        errs.push(field::too_long(&pp, MAX_PARAMETERS as i64));
    } else {
        let mut total = 0;
        for (k, v) in &params {
            if k.is_empty() {
                errs.push(field::invalid(
                    &pp,
                    BadValue::str(k),
                    "field can not be empty.",
                ));
            }
            total += k.len() + v.len();
        }
        if total > MAX_PARAMETERS_SIZE {
            errs.push(field::too_long(&pp, MAX_PARAMETERS_SIZE as i64));
        }
    }
    if let Some(p) = opt_s(sc, "reclaimPolicy").filter(|p| !p.is_empty()) {
        if p != "Delete" && p != "Retain" {
            errs.push(field::not_supported(
                &Path::new("reclaimPolicy"),
                BadValue::named(p),
                &["Delete", "Retain"],
            ));
        }
    }
    match opt_s(sc, "volumeBindingMode") {
        None => errs.push(field::required(&Path::new("volumeBindingMode"), "")),
        Some(m) if m != "Immediate" && m != "WaitForFirstConsumer" => {
            errs.push(field::not_supported(
                &Path::new("volumeBindingMode"),
                BadValue::named(m),
                &["Immediate", "WaitForFirstConsumer"],
            ))
        }
        _ => {}
    }
    errs
}

/// The strategy's ValidateUpdate: `ValidateStorageClass`, then `ValidateStorageClassUpdate`
/// (parameters, provisioner and reclaimPolicy are fixed; volumeBindingMode immutable).
pub fn validate_storage_class_update(new: &Value, old: &Value) -> ErrorList {
    let mut errs = validate_storage_class(new);
    errs.extend(objectmeta::core_object_meta_update(new, old));
    let same = |k: &str| get(new, k) == get(old, k);
    if string_map(new, "parameters") != string_map(old, "parameters") {
        errs.push(field::forbidden(
            &Path::new("parameters"),
            "updates to parameters are forbidden.",
        ));
    }
    if !same("provisioner") {
        errs.push(field::forbidden(
            &Path::new("provisioner"),
            "updates to provisioner are forbidden.",
        ));
    }
    if !same("reclaimPolicy") {
        errs.push(field::forbidden(
            &Path::new("reclaimPolicy"),
            "updates to reclaimPolicy are forbidden.",
        ));
    }
    if !same("volumeBindingMode") {
        errs.push(field::invalid(
            &Path::new("volumeBindingMode"),
            BadValue::Json(
                get(new, "volumeBindingMode")
                    .cloned()
                    .unwrap_or(Value::Null),
            ),
            objectmeta::FIELD_IMMUTABLE_ERROR_MSG,
        ));
    }
    errs
}
