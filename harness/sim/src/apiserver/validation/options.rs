//! Request options: apimachinery's `pkg/apis/meta/internalversion/validation` (ListOptions)
//! and `pkg/apis/meta/v1/validation` (PatchOptions, CreateOptions, UpdateOptions: fieldManager,
//! dryRun, fieldValidation), answered as `NewInvalid(meta.k8s.io/<Kind>Options, "", errs)`.

use super::field::{self, BadValue, ErrorList, Path};
use crate::apiserver::status::{ApiError, ApiResult};
use serde_json::json;
use std::collections::HashMap;

fn options_error(kind: &str, errs: ErrorList) -> ApiResult<()> {
    if errs.is_empty() {
        Ok(())
    } else {
        Err(field::invalid_status("meta.k8s.io", kind, "", &errs))
    }
}

/// `validateWatchOptions` (ValidateListOptions of a watch, the WatchList feature on):
/// `sendInitialEvents` needs `resourceVersionMatch=NotOlderThan`, which is only allowed with it
/// and without `continue`.
pub fn validate_watch_options(query: &HashMap<String, String>) -> ApiResult<()> {
    let q = |k: &str| query.get(k).map(String::as_str).unwrap_or("");
    let mut errs = ErrorList::new();
    let path = Path::new("resourceVersionMatch");
    let m = q("resourceVersionMatch");
    let send_initial = query.contains_key("sendInitialEvents");
    if send_initial && m != "NotOlderThan" {
        errs.push(field::forbidden(
            &path,
            "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
        ));
    }
    if !m.is_empty() {
        if !send_initial {
            errs.push(field::forbidden(
                &path,
                "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
            ));
        }
        if m != "NotOlderThan" {
            errs.push(field::not_supported(
                &path,
                BadValue::named(m),
                &["NotOlderThan"],
            ));
        }
        if !q("continue").is_empty() {
            errs.push(field::forbidden(
                &path,
                "resourceVersionMatch is forbidden when continue is provided",
            ));
        }
    }
    options_error("ListOptions", errs)
}

/// `ValidateListOptions` of a LIST (not a watch): `resourceVersionMatch` needs a
/// `resourceVersion`, no `continue`, a known value, and not Exact at "0"; no
/// `sendInitialEvents`.
pub fn validate_list_options(query: &HashMap<String, String>) -> ApiResult<()> {
    let q = |k: &str| query.get(k).map(String::as_str).unwrap_or("");
    let mut errs = ErrorList::new();
    let path = Path::new("resourceVersionMatch");
    let m = q("resourceVersionMatch");
    if !m.is_empty() {
        if q("resourceVersion").is_empty() {
            errs.push(field::forbidden(
                &path,
                "resourceVersionMatch is forbidden unless resourceVersion is provided",
            ));
        }
        if !q("continue").is_empty() {
            errs.push(field::forbidden(
                &path,
                "resourceVersionMatch is forbidden when continue is provided",
            ));
        }
        if m != "Exact" && m != "NotOlderThan" {
            errs.push(field::not_supported(
                &path,
                BadValue::named(m),
                &["Exact", "NotOlderThan", ""],
            ));
        }
        if m == "Exact" && q("resourceVersion") == "0" {
            errs.push(field::forbidden(
                &path,
                "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
            ));
        }
    }
    if query.contains_key("sendInitialEvents") {
        errs.push(field::forbidden(
            &Path::new("sendInitialEvents"),
            "sendInitialEvents is forbidden for list",
        ));
    }
    options_error("ListOptions", errs)
}

/// `ValidateFieldManager`: at most 128 bytes, printable characters.
fn field_manager(m: &str) -> ErrorList {
    let path = Path::new("fieldManager");
    let mut errs = ErrorList::new();
    if m.len() > 128 {
        errs.push(field::too_long(&path, 128));
    }
    for (i, c) in m.char_indices() {
        if c.is_control() {
            errs.push(field::invalid(
                &path,
                BadValue::str(m),
                &format!("invalid character U+{:04X} (at position {})", c as u32, i),
            ));
        }
    }
    errs
}

/// `ValidateDryRun` and `ValidateFieldValidation`.
fn dry_run_and_field_validation(query: &HashMap<String, String>) -> ErrorList {
    let mut errs = ErrorList::new();
    if let Some(d) = query.get("dryRun") {
        if d != "All" {
            errs.push(field::not_supported(
                &Path::new("dryRun"),
                BadValue::Json(json!([d])),
                &["All"],
            ));
        }
    }
    if let Some(v) = query.get("fieldValidation") {
        if !["", "Ignore", "Strict", "Warn"].contains(&v.as_str()) {
            errs.push(field::not_supported(
                &Path::new("fieldValidation"),
                BadValue::str(v),
                &["", "Ignore", "Strict", "Warn"],
            ));
        }
    }
    errs
}

/// `ValidatePatchOptions`: an apply needs a `fieldManager` (kubectl sends one; controllers
/// must); `force` only on apply.
pub fn validate_patch_options(apply: bool, query: &HashMap<String, String>) -> ApiResult<()> {
    let mut errs = ErrorList::new();
    let manager = query.get("fieldManager").map(String::as_str).unwrap_or("");
    if apply {
        if manager.is_empty() {
            errs.push(field::required(
                &Path::new("fieldManager"),
                "is required for apply patch",
            ));
        }
    } else if query.contains_key("force") {
        errs.push(field::forbidden(
            &Path::new("force"),
            "may not be specified for non-apply patch",
        ));
    }
    errs.extend(field_manager(manager));
    errs.extend(dry_run_and_field_validation(query));
    options_error("PatchOptions", errs)
}

/// `ValidateCreateOptions` / `ValidateUpdateOptions` (`kind` is `CreateOptions` or
/// `UpdateOptions`): fieldManager, dryRun and fieldValidation.
pub fn validate_write_options(kind: &str, query: &HashMap<String, String>) -> ApiResult<()> {
    let manager = query.get("fieldManager").map(String::as_str).unwrap_or("");
    let mut errs = field_manager(manager);
    errs.extend(dry_run_and_field_validation(query));
    options_error(kind, errs)
}

/// The PatchOptions error of an apply without a field manager, for in-process callers.
pub fn apply_needs_field_manager() -> ApiError {
    field::invalid_status(
        "meta.k8s.io",
        "PatchOptions",
        "",
        &[field::required(
            &Path::new("fieldManager"),
            "is required for apply patch",
        )],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn list_options_as_apimachinery() {
        assert!(validate_list_options(&q(&[])).is_ok());
        assert!(validate_list_options(&q(&[
            ("resourceVersion", "5"),
            ("resourceVersionMatch", "Exact")
        ]))
        .is_ok());
        let e = validate_list_options(&q(&[("resourceVersionMatch", "NotOlderThan")])).unwrap_err();
        assert_eq!(
            serde_json::to_string(&e.to_status()).unwrap(),
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided","reason":"Invalid","details":{"group":"meta.k8s.io","kind":"ListOptions","causes":[{"reason":"FieldValueForbidden","message":"Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided","field":"resourceVersionMatch"}]},"code":422}"#
        );
    }

    #[test]
    fn create_options_refuse_unknown_dry_run() {
        let e = validate_write_options("CreateOptions", &q(&[("dryRun", "Bogus")])).unwrap_err();
        assert_eq!(
            e.message,
            "CreateOptions.meta.k8s.io \"\" is invalid: dryRun: Unsupported value: [\"Bogus\"]: supported values: \"All\""
        );
        assert!(validate_write_options("UpdateOptions", &q(&[("dryRun", "All")])).is_ok());
    }

    #[test]
    fn apply_needs_a_field_manager() {
        let e = validate_patch_options(true, &q(&[])).unwrap_err();
        assert_eq!(e, apply_needs_field_manager());
        assert!(validate_patch_options(true, &q(&[("fieldManager", "me")])).is_ok());
        assert!(validate_patch_options(false, &q(&[])).is_ok());
        assert_eq!(
            validate_patch_options(false, &q(&[("force", "true")]))
                .unwrap_err()
                .code,
            422
        );
    }
}
