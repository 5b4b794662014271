//! batch/v1: `pkg/apis/batch/validation/validation.go` ValidateJob(Update),
//! ValidateCronJobCreate/Update, and the cron schedule parser it calls
//! (`github.com/robfig/cron/v3` ParseStandard, through pkg/util/parsers).

use super::access::{get, has, int, opt_s, s};
use super::content::{self, NameRule};
use super::field::{self, BadValue, ErrorList, Path};
use super::objectmeta::{
    self, label_selector_value, nonnegative, selector_converts, selector_matches, semantic_eq,
};
use super::pod::pod_template_spec;
use serde_json::{json, Value};

const MAX_PARALLELISM_FOR_INDEXED_JOB: i64 = 100_000;
const MAX_FAILED_INDEXES_FOR_INDEXED_JOB: i64 = 100_000;
const COMPLETIONS_SOFT_LIMIT: i64 = 100_000;
const PARALLELISM_LIMIT_FOR_HIGH_COMPLETIONS: i64 = 10_000;
const MAX_FAILED_INDEXES_LIMIT_FOR_HIGH_COMPLETIONS: i64 = 10_000;
const MAX_MANAGED_BY_LENGTH: i64 = 63;

/// `validateGeneratedSelector` (RequirePrefixedLabels: new Jobs carry the batch.kubernetes.io labels).
fn generated_selector(job: &Value) -> ErrorList {
    let mut errs = ErrorList::new();
    if get(job, "spec.manualSelector").and_then(Value::as_bool) == Some(true) {
        return errs;
    }
    let Some(sel) = get(job, "spec.selector") else {
        return errs;
    };
    let uid = s(job, "metadata.uid");
    let name = s(job, "metadata.name");
    if uid.is_empty() {
        errs.push(field::required(&Path::new("metadata.uid"), ""));
    }
    let md_path = Path::new("spec.template.metadata");
    let labels = get(job, "spec.template.metadata.labels");
    let has_label = |k: &str, v: &str, errs: &mut ErrorList| match labels
        .and_then(|l| l.get(k))
        .and_then(Value::as_str)
    {
        None => errs.push(field::required(
            &md_path.child("labels").key(k),
            &format!("must be '{}'", v),
        )),
        Some(actual) if actual != v => errs.push(field::invalid(
            &md_path.child("labels").key(k),
            BadValue::Json(labels.cloned().unwrap_or(Value::Null)),
            &format!("must be '{}'", v),
        )),
        _ => {}
    };
    has_label("controller-uid", uid, &mut errs);
    has_label("job-name", name, &mut errs);
    has_label("batch.kubernetes.io/controller-uid", uid, &mut errs);
    has_label("batch.kubernetes.io/job-name", name, &mut errs);
    let expected = json!({"metadata": {"labels": {
        "batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": name,
        "controller-uid": uid, "job-name": name}}});
    if selector_converts(Some(sel)).is_some()
        && !selector_matches(sel, &expected, "metadata.labels")
    {
        errs.push(field::invalid(
            &Path::new("spec.selector"),
            label_selector_value(Some(sel)),
            "`selector` not auto-generated",
        ));
    }
    errs
}

/// `validateJobSpec` of the spec at `spec_at` (`spec` or `spec.jobTemplate.spec`).
fn job_spec(obj: &Value, spec_at: &str, path: &Path) -> ErrorList {
    let empty = json!({});
    let spec = get(obj, spec_at).unwrap_or(&empty);
    let mut errs = ErrorList::new();
    for k in [
        "parallelism",
        "completions",
        "activeDeadlineSeconds",
        "backoffLimit",
        "ttlSecondsAfterFinished",
        "backoffLimitPerIndex",
    ] {
        if let Some(n) = int(spec, k) {
            errs.extend(nonnegative(n, &path.child(k)));
        }
    }
    if let Some(n) = int(spec, "maxFailedIndexes") {
        errs.extend(nonnegative(n, &path.child("maxFailedIndexes")));
        if !has(spec, "backoffLimitPerIndex") {
            errs.push(field::required(
                &path.child("backoffLimitPerIndex"),
                "when maxFailedIndexes is specified",
            ));
        }
    }
    if let Some(m) = opt_s(spec, "managedBy") {
        errs.extend(domain_prefixed_path(m, &path.child("managedBy")));
        if m.len() as i64 > MAX_MANAGED_BY_LENGTH {
            errs.push(field::too_long(
                &path.child("managedBy"),
                MAX_MANAGED_BY_LENGTH,
            ));
        }
    }
    let mode = opt_s(spec, "completionMode");
    let completions = int(spec, "completions");
    let parallelism = int(spec, "parallelism");
    let max_failed = int(spec, "maxFailedIndexes");
    if let Some(mode) = mode {
        if mode != "NonIndexed" && mode != "Indexed" {
            errs.push(field::not_supported(
                &path.child("completionMode"),
                BadValue::named(mode),
                &["NonIndexed", "Indexed"],
            ));
        }
        if mode == "Indexed" {
            if completions.is_none() {
                errs.push(field::required(
                    &path.child("completions"),
                    "when completion mode is Indexed",
                ));
            }
            if let Some(p) = parallelism.filter(|p| *p > MAX_PARALLELISM_FOR_INDEXED_JOB) {
                errs.push(field::invalid(
                    &path.child("parallelism"),
                    BadValue::Int(p),
                    "must be less than or equal to 100000 when completion mode is Indexed",
                ));
            }
            if let (Some(c), Some(m)) = (completions, max_failed) {
                if m > c {
                    errs.push(field::invalid(
                        &path.child("maxFailedIndexes"),
                        BadValue::Int(m),
                        "must be less than or equal to completions",
                    ));
                }
            }
            if let Some(m) = max_failed.filter(|m| *m > MAX_FAILED_INDEXES_FOR_INDEXED_JOB) {
                errs.push(field::invalid(
                    &path.child("maxFailedIndexes"),
                    BadValue::Int(m),
                    "must be less than or equal to 100000",
                ));
            }
            if completions.map(|c| c > COMPLETIONS_SOFT_LIMIT) == Some(true)
                && has(spec, "backoffLimitPerIndex")
            {
                if max_failed.is_none() {
                    errs.push(field::required(
                        &path.child("maxFailedIndexes"),
                        "must be specified when completions is above 100000",
                    ));
                }
                if let Some(p) = parallelism.filter(|p| *p > PARALLELISM_LIMIT_FOR_HIGH_COMPLETIONS)
                {
                    errs.push(field::invalid(&path.child("parallelism"), BadValue::Int(p), "must be less than or equal to 10000 when completions are above 100000 and used with backoff limit per index"));
                }
                if let Some(m) =
                    max_failed.filter(|m| *m > MAX_FAILED_INDEXES_LIMIT_FOR_HIGH_COMPLETIONS)
                {
                    errs.push(field::invalid(&path.child("maxFailedIndexes"), BadValue::Int(m), "must be less than or equal to 10000 when completions are above 100000 and used with backoff limit per index"));
                }
            }
        }
    }
    if mode.is_none() || mode == Some("NonIndexed") {
        if let Some(b) = int(spec, "backoffLimitPerIndex") {
            errs.push(field::invalid(
                &path.child("backoffLimitPerIndex"),
                BadValue::Int(b),
                "requires indexed completion mode",
            ));
        }
        if let Some(m) = max_failed {
            errs.push(field::invalid(
                &path.child("maxFailedIndexes"),
                BadValue::Int(m),
                "requires indexed completion mode",
            ));
        }
    }
    if let Some(p) = opt_s(spec, "podReplacementPolicy") {
        let p_path = path.child("podReplacementPolicy");
        if has(spec, "podFailurePolicy") {
            if p != "Failed" {
                errs.push(field::not_supported(
                    &p_path,
                    BadValue::named(p),
                    &["Failed"],
                ));
            }
        } else if p != "Failed" && p != "TerminatingOrFailed" {
            errs.push(field::not_supported(
                &p_path,
                BadValue::named(p),
                &["Failed", "TerminatingOrFailed"],
            ));
        }
    }
    let tpl_path = path.child("template");
    let tpl = get(spec, "template").unwrap_or(&empty);
    errs.extend(pod_template_spec(tpl, &tpl_path));
    let rp = s(tpl, "spec.restartPolicy");
    let rp_path = tpl_path.child("spec.restartPolicy");
    if rp == "Always" || rp.is_empty() {
        errs.push(field::required(
            &rp_path,
            "valid values: \"OnFailure\", \"Never\"",
        ));
    } else if rp != "OnFailure" && rp != "Never" {
        errs.push(field::not_supported(
            &rp_path,
            BadValue::named(rp),
            &["OnFailure", "Never"],
        ));
    } else if has(spec, "podFailurePolicy") && rp != "Never" {
        errs.push(field::invalid(
            &rp_path,
            BadValue::named(rp),
            "only \"Never\" is supported when podFailurePolicy is specified",
        ));
    }
    errs
}

/// `IsDomainPrefixedPath`.
fn domain_prefixed_path(v: &str, path: &Path) -> ErrorList {
    if v.is_empty() {
        return vec![field::required(path, "")];
    }
    let Some((host, rest)) = v
        .split_once('/')
        .filter(|(h, r)| !h.is_empty() && !r.is_empty())
    else {
        return vec![field::invalid(
            path,
            BadValue::str(v),
            "must be a domain-prefixed path (such as \"acme.io/foo\")",
        )];
    };
    let mut errs: ErrorList = content::is_dns1123_subdomain(host)
        .into_iter()
        .map(|m| field::invalid(path, BadValue::str(host), &m))
        .collect();
    let ok = rest
        .bytes()
        .all(|c| c.is_ascii_alphanumeric() || b"/-._~%!$&'()*+,;=:".contains(&c));
    if !ok {
        errs.push(field::invalid(
            path,
            BadValue::str(rest),
            &content::regex_error("Invalid path", "[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+", &[]),
        ));
    }
    errs
}

/// `ValidateJobSpec`: validateJobSpec, then the selector.
fn validate_job_spec(job: &Value) -> ErrorList {
    let path = Path::new("spec");
    let mut errs = job_spec(job, "spec", &path);
    match get(job, "spec.selector") {
        None => errs.push(field::required(&path.child("selector"), "")),
        Some(sel) => errs.extend(objectmeta::validate_label_selector(
            sel,
            false,
            &path.child("selector"),
        )),
    }
    let sel = get(job, "spec.selector");
    if selector_converts(sel).is_some() {
        let empty = json!({});
        let tpl = get(job, "spec.template").unwrap_or(&empty);
        let matches = match sel {
            Some(sel) => selector_matches(sel, tpl, "metadata.labels"),
            None => false,
        };
        if !matches {
            errs.push(field::invalid(
                &path.child("template.metadata.labels"),
                BadValue::Json(get(tpl, "metadata.labels").cloned().unwrap_or(Value::Null)),
                "`selector` does not match template `labels`",
            ));
        }
    }
    errs
}

/// `ValidateJob`.
pub fn validate_job(job: &Value) -> ErrorList {
    let mut errs = objectmeta::core_object_meta(job, true, NameRule::Subdomain);
    errs.extend(generated_selector(job));
    errs.extend(validate_job_spec(job));
    if opt_s(job, "spec.completionMode") == Some("Indexed") {
        if let Some(c) = int(job, "spec.completions").filter(|c| *c > 0) {
            let name = s(job, "metadata.name");
            let host = format!("{}-{}", name, c - 1);
            if !content::is_dns1123_label(&host).is_empty() {
                errs.push(field::invalid(
                    &Path::new("metadata.name"),
                    BadValue::str(name),
                    &format!(
                        "will not able to create pod with invalid DNS label: {}",
                        host
                    ),
                ));
            }
        }
    }
    errs
}

/// `ValidateJobUpdate`. The template is immutable unless the Job is suspended; upstream's
/// error value is the whole internal PodTemplateSpec, rendered here from the v1 template.
pub fn validate_job_update(new: &Value, old: &Value) -> ErrorList {
    let mut errs = objectmeta::core_object_meta_update(new, old);
    errs.extend(validate_job_spec(new));
    let spec = Path::new("spec");
    let indexed = opt_s(new, "spec.completionMode") == Some("Indexed");
    let (nc, oc) = (get(new, "spec.completions"), get(old, "spec.completions"));
    if !indexed {
        errs.extend(objectmeta::immutable(
            nc.unwrap_or(&Value::Null),
            oc.unwrap_or(&Value::Null),
            &spec.child("completions"),
            BadValue::Json(nc.cloned().unwrap_or(Value::Null)),
        ));
    } else if nc != oc {
        if let (Some(c), p) = (int(new, "spec.completions"), int(new, "spec.parallelism")) {
            if Some(c) != p {
                errs.push(field::invalid(
                    &spec.child("completions"),
                    BadValue::Json(json!(c)),
                    "can only be modified in tandem with spec.parallelism",
                ));
            }
        }
    }
    errs.extend(objectmeta::immutable(
        super::access::or_null(new, "spec.selector"),
        super::access::or_null(old, "spec.selector"),
        &spec.child("selector"),
        label_selector_value(get(new, "spec.selector")),
    ));
    let suspended = get(old, "spec.suspend").and_then(Value::as_bool) == Some(true);
    let (nt, ot) = (
        super::access::or_null(new, "spec.template"),
        super::access::or_null(old, "spec.template"),
    );
    let mutable_view = |t: &Value, other: &Value| {
        // With the Job suspended, scheduling directives may change (AllowMutableSchedulingDirectives).
        let mut t = t.clone();
        if suspended {
            for (at, from) in [
                ("/spec/nodeSelector", "spec.nodeSelector"),
                ("/spec/tolerations", "spec.tolerations"),
                ("/metadata/annotations", "metadata.annotations"),
                ("/metadata/labels", "metadata.labels"),
                ("/spec/schedulingGates", "spec.schedulingGates"),
                ("/spec/affinity/nodeAffinity", "spec.affinity.nodeAffinity"),
            ] {
                if let Some(slot) = t.pointer_mut(at) {
                    *slot = get(other, from).cloned().unwrap_or(Value::Null);
                }
            }
        }
        t
    };
    if !semantic_eq(&mutable_view(ot, nt), &mutable_view(nt, nt)) && !semantic_eq(nt, ot) {
        let old_view = mutable_view(ot, nt);
        if !semantic_eq(nt, &old_view) {
            errs.push(field::invalid(
                &spec.child("template"),
                BadValue::Json(nt.clone()),
                objectmeta::FIELD_IMMUTABLE_ERROR_MSG,
            ));
        }
    }
    for k in [
        "completionMode",
        "podFailurePolicy",
        "backoffLimitPerIndex",
        "managedBy",
        "successPolicy",
    ] {
        let at = format!("spec.{k}");
        errs.extend(objectmeta::immutable(
            super::access::or_null(new, &at),
            super::access::or_null(old, &at),
            &spec.child(k),
            BadValue::Json(get(new, &at).cloned().unwrap_or(Value::Null)),
        ));
    }
    errs
}

/// `validateCronJobSpec`.
fn cron_job_spec(cj: &Value, old: Option<&Value>) -> ErrorList {
    let spec = Path::new("spec");
    let mut errs = ErrorList::new();
    let schedule = s(cj, "spec.schedule");
    if schedule.is_empty() {
        errs.push(field::required(&spec.child("schedule"), ""));
    } else {
        let allow_tz = old
            .map(|o| s(o, "spec.schedule").contains("TZ"))
            .unwrap_or(false);
        if let Err(e) = parse_standard(schedule) {
            errs.push(field::invalid(
                &spec.child("schedule"),
                BadValue::str(schedule),
                &e,
            ));
        }
        if allow_tz && schedule.contains("TZ") && has(cj, "spec.timeZone") {
            errs.push(field::invalid(
                &spec.child("schedule"),
                BadValue::str(schedule),
                "cannot use both timeZone field and TZ or CRON_TZ in schedule",
            ));
        } else if !allow_tz && schedule.contains("TZ") {
            errs.push(field::invalid(
                &spec.child("schedule"),
                BadValue::str(schedule),
                "cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
            ));
        }
    }
    if let Some(n) = int(cj, "spec.startingDeadlineSeconds") {
        errs.extend(nonnegative(n, &spec.child("startingDeadlineSeconds")));
    }
    let tz_changed = old
        .map(|o| get(o, "spec.timeZone") != get(cj, "spec.timeZone"))
        .unwrap_or(true);
    if tz_changed {
        if let Some(tz) = opt_s(cj, "spec.timeZone") {
            let p = spec.child("timeZone");
            if tz.is_empty() {
                errs.push(field::invalid(
                    &p,
                    BadValue::Json(json!(tz)),
                    "timeZone must be nil or non-empty string",
                ));
            } else if tz.split('/').any(|part| {
                part == "."
                    || part == ".."
                    || part.starts_with('-')
                    || part.is_empty()
                    || part.len() > 14
                    || !part
                        .bytes()
                        .all(|c| c.is_ascii_alphanumeric() || b".-_+".contains(&c))
            }) {
                errs.push(field::invalid(
                    &p,
                    BadValue::Json(json!(tz)),
                    &format!("unknown time zone {}", tz),
                ));
            } else if tz.eq_ignore_ascii_case("Local") {
                errs.push(field::invalid(&p, BadValue::Json(json!(tz)), "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"));
            }
        }
    }
    errs.extend(super::pod::enum_value(
        s(cj, "spec.concurrencyPolicy"),
        &["Allow", "Forbid", "Replace"],
        &spec.child("concurrencyPolicy"),
    ));
    let jt = spec.child("jobTemplate");
    errs.extend(job_spec(cj, "spec.jobTemplate.spec", &jt.child("spec")));
    if let Some(sel) = get(cj, "spec.jobTemplate.spec.selector") {
        errs.push(field::invalid(
            &jt.child("spec.selector"),
            label_selector_value(Some(sel)),
            "`selector` will be auto-generated",
        ));
    }
    if get(cj, "spec.jobTemplate.spec.manualSelector").and_then(Value::as_bool) == Some(true) {
        errs.push(field::not_supported(
            &jt.child("spec.manualSelector"),
            BadValue::Json(json!(true)),
            &["nil", "false"],
        ));
    }
    for k in ["successfulJobsHistoryLimit", "failedJobsHistoryLimit"] {
        if let Some(n) = int(cj, &format!("spec.{k}")) {
            errs.extend(nonnegative(n, &spec.child(k)));
        }
    }
    errs
}

/// `ValidateCronJobCreate`.
pub fn validate_cron_job_create(cj: &Value) -> ErrorList {
    let mut errs = objectmeta::core_object_meta(cj, true, NameRule::Subdomain);
    errs.extend(cron_job_spec(cj, None));
    let name = s(cj, "metadata.name");
    if name.len() > 52 {
        errs.push(field::invalid(
            &Path::new("metadata.name"),
            BadValue::str(name),
            "must be no more than 52 characters",
        ));
    }
    errs
}

/// `ValidateCronJobUpdate`.
pub fn validate_cron_job_update(new: &Value, old: &Value) -> ErrorList {
    let mut errs = objectmeta::core_object_meta_update(new, old);
    errs.extend(cron_job_spec(new, Some(old)));
    errs
}

struct Bounds {
    min: u32,
    max: u32,
    names: &'static [(&'static str, u32)],
}

const MONTH_NAMES: &[(&str, u32)] = &[
    ("jan", 1),
    ("feb", 2),
    ("mar", 3),
    ("apr", 4),
    ("may", 5),
    ("jun", 6),
    ("jul", 7),
    ("aug", 8),
    ("sep", 9),
    ("oct", 10),
    ("nov", 11),
    ("dec", 12),
];
const DOW_NAMES: &[(&str, u32)] = &[
    ("sun", 0),
    ("mon", 1),
    ("tue", 2),
    ("wed", 3),
    ("thu", 4),
    ("fri", 5),
    ("sat", 6),
];

/// `cron.ParseStandard`: five fields or a descriptor, with robfig/cron's error messages.
pub fn parse_standard(spec: &str) -> Result<(), String> {
    if spec.is_empty() {
        return Err("empty spec string".into());
    }
    let mut spec = spec;
    if spec.starts_with("TZ=") || spec.starts_with("CRON_TZ=") {
        match spec.find(' ') {
            Some(i) => spec = spec[i..].trim(),
            None => {
                return Err(
                    "invalid schedule format: runtime error: slice bounds out of range".into(),
                )
            }
        }
    }
    if spec.starts_with('@') {
        return match spec {
            "@yearly" | "@annually" | "@monthly" | "@weekly" | "@daily" | "@midnight"
            | "@hourly" => Ok(()),
            d if d.starts_with("@every ") => {
                let dur = &d["@every ".len()..];
                if crate::timing::parse_duration(dur).is_some() {
                    Ok(())
                } else {
                    Err(format!(
                        "failed to parse duration {}: time: invalid duration {}",
                        d,
                        field::go_quote(dur)
                    ))
                }
            }
            d => Err(format!("unrecognized descriptor: {}", d)),
        };
    }
    let fields: Vec<&str> = spec.split_whitespace().collect();
    if fields.len() != 5 {
        return Err(format!(
            "expected exactly 5 fields, found {}: [{}]",
            fields.len(),
            fields.join(" ")
        ));
    }
    let bounds = [
        Bounds {
            min: 0,
            max: 59,
            names: &[],
        },
        Bounds {
            min: 0,
            max: 23,
            names: &[],
        },
        Bounds {
            min: 1,
            max: 31,
            names: &[],
        },
        Bounds {
            min: 1,
            max: 12,
            names: MONTH_NAMES,
        },
        Bounds {
            min: 0,
            max: 6,
            names: DOW_NAMES,
        },
    ];
    for (f, b) in fields.iter().zip(bounds.iter()) {
        for expr in f.split(',') {
            get_range(expr, b)?;
        }
    }
    Ok(())
}

fn must_parse_int(expr: &str) -> Result<u32, String> {
    let n: i64 = expr.parse().map_err(|_| {
        let why = if expr
            .trim_start_matches(['+', '-'])
            .bytes()
            .all(|c| c.is_ascii_digit())
            && !expr.trim_start_matches(['+', '-']).is_empty()
        {
            "value out of range"
        } else {
            "invalid syntax"
        };
        format!(
            "failed to parse int from {}: strconv.Atoi: parsing {}: {}",
            expr,
            field::go_quote(expr),
            why
        )
    })?;
    if n < 0 {
        return Err(format!("negative number ({}) not allowed: {}", n, expr));
    }
    Ok(n as u32)
}

fn parse_int_or_name(expr: &str, b: &Bounds) -> Result<u32, String> {
    let lower = expr.to_lowercase();
    if let Some((_, n)) = b.names.iter().find(|(name, _)| *name == lower) {
        return Ok(*n);
    }
    must_parse_int(expr)
}

fn get_range(expr: &str, b: &Bounds) -> Result<(), String> {
    let range_and_step: Vec<&str> = expr.split('/').collect();
    let low_high: Vec<&str> = range_and_step[0].split('-').collect();
    let single = low_high.len() == 1;
    let (start, mut end);
    if low_high[0] == "*" || low_high[0] == "?" {
        start = b.min;
        end = b.max;
    } else {
        start = parse_int_or_name(low_high[0], b)?;
        end = match low_high.len() {
            1 => start,
            2 => parse_int_or_name(low_high[1], b)?,
            _ => return Err(format!("too many hyphens: {}", expr)),
        };
    }
    let step = match range_and_step.len() {
        1 => 1,
        2 => {
            let s = must_parse_int(range_and_step[1])?;
            if single {
                end = b.max;
            }
            s
        }
        _ => return Err(format!("too many slashes: {}", expr)),
    };
    if start < b.min {
        return Err(format!(
            "beginning of range ({}) below minimum ({}): {}",
            start, b.min, expr
        ));
    }
    if end > b.max {
        return Err(format!(
            "end of range ({}) above maximum ({}): {}",
            end, b.max, expr
        ));
    }
    if start > end {
        return Err(format!(
            "beginning of range ({}) beyond end of range ({}): {}",
            start, end, expr
        ));
    }
    if step == 0 {
        return Err(format!(
            "step of range should be a positive number: {}",
            expr
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cron_schedules_parse_like_robfig_cron() {
        assert!(parse_standard("*/5 * * * *").is_ok());
        assert!(parse_standard("0 0 1 jan-mar mon").is_ok());
        assert!(parse_standard("@hourly").is_ok());
        assert_eq!(
            parse_standard("* * *").unwrap_err(),
            "expected exactly 5 fields, found 3: [* * *]"
        );
        assert_eq!(
            parse_standard("61 * * * *").unwrap_err(),
            "end of range (61) above maximum (59): 61"
        );
        assert_eq!(
            parse_standard("x * * * *").unwrap_err(),
            "failed to parse int from x: strconv.Atoi: parsing \"x\": invalid syntax"
        );
    }
}
