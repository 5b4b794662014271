//! Pods and pod templates: `pkg/apis/core/validation/validation.go` (ValidatePodCreate,
//! ValidatePodUpdate, ValidatePodSpec, validateContainers, ValidateVolumes, ValidatePodTemplateSpec)
//! with the options a 1.35 apiserver validates with (RelaxedEnvironmentVariableValidation GA,
//! ContainerRestartRules beta). The parts a controller writes are checked; see docs/fidelity.md
//! for what is not.

use super::access::{arr, get, has, int, map, opt_s, s};
use super::content::{self, inclusive_range_error, NameRule};
use super::field::{self, BadValue, ErrorList, Path};
use super::objectmeta::{self, nonnegative_at, semantic_eq, validate_annotations, validate_labels};
use serde_json::{json, Value};
use std::collections::HashSet;

/// `ValidateDNS1123Label` of a value at `path`.
pub fn dns1123_label(value: &str, path: &Path) -> ErrorList {
    content::is_dns1123_label(value)
        .into_iter()
        .map(|m| field::invalid(path, BadValue::str(value), &m))
        .collect()
}

/// `ValidateDNS1123Subdomain`.
pub fn dns1123_subdomain(value: &str, path: &Path) -> ErrorList {
    content::is_dns1123_subdomain(value)
        .into_iter()
        .map(|m| field::invalid(path, BadValue::str(value), &m))
        .collect()
}

/// A required enum: Required when empty, NotSupported (listing `valid`) when unknown. The
/// value is a named string type (JSON-marshalled).
pub fn enum_value(value: &str, valid: &[&str], path: &Path) -> ErrorList {
    if value.is_empty() {
        vec![field::required(path, "")]
    } else if !valid.contains(&value) {
        vec![field::not_supported(path, BadValue::named(value), valid)]
    } else {
        vec![]
    }
}

/// `ValidatePortNumOrName` of an IntOrString.
pub fn port_num_or_name(v: Option<&Value>, path: &Path) -> ErrorList {
    match v {
        Some(Value::String(name)) => content::is_valid_port_name(name)
            .into_iter()
            .map(|m| field::invalid(path, BadValue::str(name), &m))
            .collect(),
        other => {
            let n = other.and_then(Value::as_i64).unwrap_or(0);
            content::is_valid_port_num(n)
                .into_iter()
                .map(|m| field::invalid(path, BadValue::Int(n), &m))
                .collect()
        }
    }
}

const PROTOCOLS: &[&str] = &["SCTP", "TCP", "UDP"];
const PULL_POLICIES: &[&str] = &["Always", "IfNotPresent", "Never"];
const FILE_MODE_ERROR: &str = "must be a number between 0 and 0777 (octal), both inclusive";

/// The volume sources in the order `validateVolumeSource` visits them: the JSON member and
/// the path its "may not specify more than 1 volume type" names.
const VOLUME_SOURCES: &[(&str, &str)] = &[
    ("emptyDir", "emptyDir"),
    ("hostPath", "hostPath"),
    ("gitRepo", "gitRepo"),
    ("gcePersistentDisk", "gcePersistentDisk"),
    ("awsElasticBlockStore", "awsElasticBlockStore"),
    ("secret", "secret"),
    ("nfs", "nfs"),
    ("iscsi", "iscsi"),
    ("glusterfs", "glusterfs"),
    ("flocker", "flocker"),
    ("persistentVolumeClaim", "persistentVolumeClaim"),
    ("rbd", "rbd"),
    ("cinder", "cinder"),
    ("cephfs", "cephFS"),
    ("quobyte", "quobyte"),
    ("downwardAPI", "downwarAPI"),
    ("fc", "fc"),
    ("flexVolume", "flexVolume"),
    ("configMap", "configMap"),
    ("azureFile", "azureFile"),
    ("vsphereVolume", "vsphereVolume"),
    ("photonPersistentDisk", "photonPersistentDisk"),
    ("portworxVolume", "portworxVolume"),
    ("azureDisk", "azureDisk"),
    ("storageos", "storageos"),
    ("projected", "projected"),
    ("scaleIO", "scaleIO"),
    ("csi", "csi"),
    ("ephemeral", "ephemeral"),
    ("image", "image"),
];

fn file_mode(v: &Value, at: &str, path: &Path) -> ErrorList {
    match int(v, at) {
        Some(m) if !(0..=0o777).contains(&m) => {
            vec![field::invalid(path, BadValue::Int(m), FILE_MODE_ERROR)]
        }
        _ => vec![],
    }
}

fn key_to_paths(src: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    for (i, kp) in arr(src, "items").iter().enumerate() {
        let p = path.child("items").index(i);
        if s(kp, "key").is_empty() {
            errs.push(field::required(&p.child("key"), ""));
        }
        if s(kp, "path").is_empty() {
            errs.push(field::required(&p.child("path"), ""));
        }
        errs.extend(local_non_reserved_path(s(kp, "path"), &p.child("path")));
        errs.extend(file_mode(kp, "mode", &p.child("mode")));
    }
    errs
}

/// `validatePathNoBacksteps`.
fn path_no_backsteps(target: &str, path: &Path) -> ErrorList {
    if target.split('/').any(|p| p == "..") {
        vec![field::invalid(
            path,
            BadValue::str(target),
            "must not contain '..'",
        )]
    } else {
        vec![]
    }
}

/// `validateLocalDescendingPath`.
fn local_descending_path(target: &str, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    if target.starts_with('/') {
        errs.push(field::invalid(
            path,
            BadValue::str(target),
            "must be a relative path",
        ));
    }
    errs.extend(path_no_backsteps(target, path));
    errs
}

/// `ValidateLocalNonReservedPath`.
fn local_non_reserved_path(target: &str, path: &Path) -> ErrorList {
    let mut errs = local_descending_path(target, path);
    if target.starts_with("..") && !target.starts_with("../") {
        errs.push(field::invalid(
            path,
            BadValue::str(target),
            "must not start with '..'",
        ));
    }
    errs
}

/// `validateVolumeSource` for the sources controllers use most; others count, unchecked.
fn volume_source(vol: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let mut count = 0;
    for (key, label) in VOLUME_SOURCES {
        let Some(src) = get(vol, key) else { continue };
        if count > 0 {
            errs.push(field::forbidden(
                &path.child(label),
                "may not specify more than 1 volume type",
            ));
            continue;
        }
        count += 1;
        let p = path.child(key);
        match *key {
            "hostPath" => {
                let hp = s(src, "path");
                if hp.is_empty() {
                    errs.push(field::required(&p.child("path"), ""));
                } else {
                    errs.extend(path_no_backsteps(hp, &p.child("path")));
                    if let Some(t) = opt_s(src, "type") {
                        const TYPES: &[&str] = &[
                            "",
                            "BlockDevice",
                            "CharDevice",
                            "Directory",
                            "DirectoryOrCreate",
                            "File",
                            "FileOrCreate",
                            "Socket",
                        ];
                        if !TYPES.contains(&t) {
                            errs.push(field::not_supported(
                                &p.child("type"),
                                BadValue::named(t),
                                TYPES,
                            ));
                        }
                    }
                }
            }
            "secret" => {
                if s(src, "secretName").is_empty() {
                    errs.push(field::required(&p.child("secretName"), ""));
                }
                errs.extend(file_mode(src, "defaultMode", &p.child("defaultMode")));
                errs.extend(key_to_paths(src, &p));
            }
            "configMap" => {
                if s(src, "name").is_empty() {
                    errs.push(field::required(&p.child("name"), ""));
                }
                errs.extend(file_mode(src, "defaultMode", &p.child("defaultMode")));
                errs.extend(key_to_paths(src, &p));
            }
            "persistentVolumeClaim" if s(src, "claimName").is_empty() => {
                errs.push(field::required(&p.child("claimName"), ""));
            }
            "nfs" => {
                if s(src, "server").is_empty() {
                    errs.push(field::required(&p.child("server"), ""));
                }
                if s(src, "path").is_empty() {
                    errs.push(field::required(&p.child("path"), ""));
                } else if !s(src, "path").starts_with('/') {
                    errs.push(field::invalid(
                        &p.child("path"),
                        BadValue::str(s(src, "path")),
                        "must be an absolute path",
                    ));
                }
            }
            "csi" if s(src, "driver").is_empty() => {
                errs.push(field::required(&p.child("driver"), ""));
            }
            _ => {}
        }
    }
    if count == 0 {
        errs.push(field::required(path, "must specify a volume type"));
    }
    errs
}

/// `ValidateVolumes`: returns the names of the valid volumes and the errors.
fn volumes(spec: &Value, path: &Path) -> (HashSet<String>, ErrorList) {
    let mut errs = ErrorList::new();
    let mut names = HashSet::new();
    for (i, vol) in arr(spec, "volumes").iter().enumerate() {
        let p = path.index(i);
        let name = s(vol, "name");
        let mut el = volume_source(vol, &p);
        if name.is_empty() {
            el.push(field::required(&p.child("name"), ""));
        } else {
            el.extend(dns1123_label(name, &p.child("name")));
        }
        if names.contains(name) {
            el.push(field::duplicate(&p.child("name"), BadValue::str(name)));
        }
        if el.is_empty() {
            names.insert(name.to_string());
        } else {
            errs.extend(el);
        }
    }
    (names, errs)
}

fn container_ports(c: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let mut names = HashSet::new();
    for (i, port) in arr(c, "ports").iter().enumerate() {
        let p = path.index(i);
        let name = s(port, "name");
        if !name.is_empty() {
            let msgs = content::is_valid_port_name(name);
            if !msgs.is_empty() {
                for m in msgs {
                    errs.push(field::invalid(&p.child("name"), BadValue::str(name), &m));
                }
            } else if !names.insert(name.to_string()) {
                errs.push(field::duplicate(&p.child("name"), BadValue::str(name)));
            }
        }
        match int(port, "containerPort").unwrap_or(0) {
            0 => errs.push(field::required(&p.child("containerPort"), "")),
            n => errs.extend(
                content::is_valid_port_num(n)
                    .into_iter()
                    .map(|m| field::invalid(&p.child("containerPort"), BadValue::Int(n), &m)),
            ),
        }
        let host = int(port, "hostPort").unwrap_or(0);
        if host != 0 {
            errs.extend(
                content::is_valid_port_num(host)
                    .into_iter()
                    .map(|m| field::invalid(&p.child("hostPort"), BadValue::Int(host), &m)),
            );
        }
        errs.extend(enum_value(
            s(port, "protocol"),
            PROTOCOLS,
            &p.child("protocol"),
        ));
    }
    errs
}

/// `IsRelaxedEnvVarName` (RelaxedEnvironmentVariableValidation, GA in 1.34).
fn relaxed_env_var_name(name: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if name.is_empty() {
        errs.push("environment variable name must be non-empty".into());
    }
    if name.chars().any(|c| !(' '..='~').contains(&c) || c == '=') {
        errs.push("a valid environment variable name must consist only of printable ASCII characters other than '='".into());
    }
    errs
}

fn key_selector(sel: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let name = s(sel, "name");
    for m in NameRule::Subdomain.check(name, false) {
        errs.push(field::invalid(&path.child("name"), BadValue::str(name), &m));
    }
    let key = s(sel, "key");
    if key.is_empty() {
        errs.push(field::required(&path.child("key"), ""));
    } else {
        for m in content::is_config_map_key(key) {
            errs.push(field::invalid(&path.child("key"), BadValue::str(key), &m));
        }
    }
    errs
}

fn env(c: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    for (i, ev) in arr(c, "env").iter().enumerate() {
        let p = path.index(i);
        let name = s(ev, "name");
        if name.is_empty() {
            errs.push(field::required(&p.child("name"), ""));
        } else {
            for m in relaxed_env_var_name(name) {
                errs.push(field::invalid(&p.child("name"), BadValue::str(name), &m));
            }
        }
        let Some(from) = get(ev, "valueFrom") else {
            continue;
        };
        let vp = p.child("valueFrom");
        let mut sources = 0;
        if let Some(f) = get(from, "fieldRef") {
            sources += 1;
            if s(f, "fieldPath").is_empty() {
                errs.push(field::required(
                    &vp.child("fieldRef").child("fieldPath"),
                    "",
                ));
            }
        }
        if let Some(f) = get(from, "resourceFieldRef") {
            sources += 1;
            if s(f, "resource").is_empty() {
                errs.push(field::required(
                    &vp.child("resourceFieldRef").child("resource"),
                    "",
                ));
            }
        }
        if let Some(sel) = get(from, "configMapKeyRef") {
            sources += 1;
            errs.extend(key_selector(sel, &vp.child("configMapKeyRef")));
        }
        if let Some(sel) = get(from, "secretKeyRef") {
            sources += 1;
            errs.extend(key_selector(sel, &vp.child("secretKeyRef")));
        }
        if get(from, "fileKeyRef").is_some() {
            sources += 1;
        }
        if sources == 0 {
            errs.push(field::invalid(&vp, BadValue::str(""), "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef`, `secretKeyRef` or `fileKeyRef`"));
        } else if !s(ev, "value").is_empty() {
            errs.push(field::invalid(
                &vp,
                BadValue::str(""),
                "may not be specified when `value` is not empty",
            ));
        } else if sources > 1 {
            errs.push(field::invalid(
                &vp,
                BadValue::str(""),
                "may not have more than one field specified at a time",
            ));
        }
    }
    errs
}

fn env_from(c: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    for (i, ev) in arr(c, "envFrom").iter().enumerate() {
        let p = path.index(i);
        let prefix = s(ev, "prefix");
        if !prefix.is_empty() {
            for m in relaxed_env_var_name(prefix) {
                errs.push(field::invalid(
                    &p.child("prefix"),
                    BadValue::str(prefix),
                    &m,
                ));
            }
        }
        let mut sources = 0;
        for key in ["configMapRef", "secretRef"] {
            if let Some(r) = get(ev, key) {
                sources += 1;
                let name = s(r, "name");
                if name.is_empty() {
                    errs.push(field::required(&p.child(key).child("name"), ""));
                } else {
                    for m in NameRule::Subdomain.check(name, false) {
                        errs.push(field::invalid(
                            &p.child(key).child("name"),
                            BadValue::str(name),
                            &m,
                        ));
                    }
                }
            }
        }
        if sources == 0 {
            errs.push(field::invalid(
                path,
                BadValue::str(""),
                "must specify one of: `configMapRef` or `secretRef`",
            ));
        } else if sources > 1 {
            errs.push(field::invalid(
                path,
                BadValue::str(""),
                "may not have more than one field specified at a time",
            ));
        }
    }
    errs
}

fn volume_mounts(c: &Value, volumes: &HashSet<String>, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let mut points = HashSet::new();
    for (i, m) in arr(c, "volumeMounts").iter().enumerate() {
        let p = path.index(i);
        let name = s(m, "name");
        if name.is_empty() {
            errs.push(field::required(&p.child("name"), ""));
        }
        if !volumes.contains(name) {
            errs.push(field::not_found(&p.child("name"), BadValue::str(name)));
        }
        let mount_path = s(m, "mountPath");
        if mount_path.is_empty() {
            errs.push(field::required(&p.child("mountPath"), ""));
        }
        if !points.insert(mount_path.to_string()) {
            errs.push(field::invalid(
                &p.child("mountPath"),
                BadValue::str(mount_path),
                "must be unique",
            ));
        }
        let sub = s(m, "subPath");
        if !sub.is_empty() {
            errs.extend(local_descending_path(sub, &path.child("subPath")));
        }
        let expr = s(m, "subPathExpr");
        if !expr.is_empty() {
            if !sub.is_empty() {
                errs.push(field::invalid(
                    &p.child("subPathExpr"),
                    BadValue::str(expr),
                    "subPathExpr and subPath are mutually exclusive",
                ));
            }
            errs.extend(local_descending_path(expr, &path.child("subPathExpr")));
        }
    }
    errs
}

/// A parsed `resource.Quantity` as a number, for comparisons.
fn quantity_number(q: &str) -> Option<f64> {
    let q = q.trim();
    let split = q
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+' || c == '-'))
        .unwrap_or(q.len());
    let (num, suffix) = q.split_at(split);
    let n: f64 = num.parse().ok()?;
    let mult = match suffix {
        "" => 1.0,
        "n" => 1e-9,
        "u" => 1e-6,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        "Ki" => 1024f64,
        "Mi" => 1024f64.powi(2),
        "Gi" => 1024f64.powi(3),
        "Ti" => 1024f64.powi(4),
        "Pi" => 1024f64.powi(5),
        "Ei" => 1024f64.powi(6),
        s if s.starts_with(['e', 'E']) => 10f64.powi(s[1..].parse().ok()?),
        _ => return None,
    };
    Some(n * mult)
}

/// `resource.Quantity.String()`.
fn quantity_string(q: &str) -> String {
    crate::apiserver::table::canonical_quantity(q).unwrap_or_else(|| q.to_string())
}

const STANDARD_CONTAINER_RESOURCES: &[&str] = &["cpu", "memory", "ephemeral-storage"];

/// `ValidateContainerResourceRequirements` (limits first, then requests against them).
fn resources(c: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let lim_path = path.child("limits");
    let req_path = path.child("requests");
    let limits = map(c, "resources.limits");
    let check_name = |name: &str, p: &Path, errs: &mut ErrorList| {
        if !name.contains('/') {
            if !STANDARD_CONTAINER_RESOURCES.contains(&name) && !name.starts_with("hugepages-") {
                errs.push(field::invalid(
                    p,
                    BadValue::named(name),
                    "must be a standard resource for containers",
                ));
            }
        } else {
            for m in content::is_qualified_name(name) {
                errs.push(field::invalid(p, BadValue::named(name), &m));
            }
        }
    };
    let negative = |q: &str, p: &Path, errs: &mut ErrorList| {
        if quantity_number(q).map(|n| n < 0.0).unwrap_or(false) {
            errs.push(field::invalid(
                p,
                BadValue::str(&quantity_string(q)),
                objectmeta::IS_NEGATIVE_ERROR_MSG,
            ));
        }
    };
    for (name, q) in limits.into_iter().flatten() {
        let p = lim_path.key(name);
        check_name(name, &p, &mut errs);
        negative(q.as_str().unwrap_or(""), &p, &mut errs);
    }
    for (name, q) in map(c, "resources.requests").into_iter().flatten() {
        let p = req_path.key(name);
        let q = q.as_str().unwrap_or("");
        check_name(name, &p, &mut errs);
        negative(q, &p, &mut errs);
        let overcommit = STANDARD_CONTAINER_RESOURCES.contains(&name.as_str());
        match limits.and_then(|l| l.get(name)).and_then(Value::as_str) {
            Some(limit) => {
                let (rq, lq) = (quantity_number(q), quantity_number(limit));
                if !overcommit && rq != lq {
                    errs.push(field::invalid(
                        &req_path,
                        BadValue::str(&quantity_string(q)),
                        &format!(
                            "must be equal to {} limit of {}",
                            name,
                            quantity_string(limit)
                        ),
                    ));
                } else if let (Some(r), Some(l)) = (rq, lq) {
                    if r > l {
                        errs.push(field::invalid(
                            &req_path,
                            BadValue::str(&quantity_string(q)),
                            &format!(
                                "must be less than or equal to {} limit of {}",
                                name,
                                quantity_string(limit)
                            ),
                        ));
                    }
                }
            }
            None if !overcommit && !name.starts_with("hugepages-") => errs.push(field::required(
                &lim_path,
                "Limit must be set for non overcommitable resources",
            )),
            None => {}
        }
    }
    errs
}

/// `validateHandler` of a probe or lifecycle handler.
fn handler(h: &Value, path: &Path, kinds: &[&str]) -> ErrorList {
    let mut errs = ErrorList::new();
    let mut n = 0;
    for kind in kinds {
        let Some(a) = get(h, kind) else { continue };
        if n > 0 {
            errs.push(field::forbidden(
                &path.child(kind),
                "may not specify more than 1 handler type",
            ));
            continue;
        }
        n += 1;
        let p = path.child(kind);
        match *kind {
            "exec" if arr(a, "command").is_empty() => {
                errs.push(field::required(&p.child("command"), ""));
            }
            "httpGet" => {
                if s(a, "path").is_empty() {
                    errs.push(field::required(&p.child("path"), ""));
                }
                errs.extend(port_num_or_name(get(a, "port"), &p.child("port")));
                let scheme = s(a, "scheme");
                if !["HTTP", "HTTPS"].contains(&scheme) {
                    errs.push(field::not_supported(
                        &p.child("scheme"),
                        BadValue::named(scheme),
                        &["HTTP", "HTTPS"],
                    ));
                }
            }
            "tcpSocket" => errs.extend(port_num_or_name(get(a, "port"), &p.child("port"))),
            "grpc" => {
                let port = int(a, "port").unwrap_or(0);
                errs.extend(
                    content::is_valid_port_num(port)
                        .into_iter()
                        .map(|m| field::invalid(&p.child("port"), BadValue::Int(port), &m)),
                );
            }
            _ => {}
        }
    }
    if n == 0 {
        errs.push(field::required(path, "must specify a handler type"));
    }
    errs
}

fn probe(p: Option<&Value>, path: &Path, which: &str) -> ErrorList {
    let Some(p) = p else { return vec![] };
    let mut errs = handler(p, path, &["exec", "httpGet", "tcpSocket", "grpc"]);
    for k in [
        "initialDelaySeconds",
        "timeoutSeconds",
        "periodSeconds",
        "successThreshold",
        "failureThreshold",
    ] {
        errs.extend(nonnegative_at(p, k, &path.child(k)));
    }
    if let Some(t) = int(p, "terminationGracePeriodSeconds") {
        if t <= 0 {
            errs.push(field::invalid(
                &path.child("terminationGracePeriodSeconds"),
                BadValue::Int(t),
                "must be greater than 0",
            ));
        }
    }
    match which {
        "liveness" | "startup" => {
            let st = int(p, "successThreshold").unwrap_or(0);
            if st != 1 {
                errs.push(field::invalid(
                    &path.child("successThreshold"),
                    BadValue::Int(st),
                    "must be 1",
                ));
            }
        }
        "readiness" => {
            if let Some(t) = int(p, "terminationGracePeriodSeconds") {
                errs.push(field::invalid(
                    &path.child("terminationGracePeriodSeconds"),
                    BadValue::Json(json!(t)),
                    "must not be set for readinessProbes",
                ));
            }
        }
        _ => {}
    }
    errs
}

/// `validateContainerCommon`.
fn container_common(c: &Value, volumes: &HashSet<String>, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let name = s(c, "name");
    if name.is_empty() {
        errs.push(field::required(&path.child("name"), ""));
    } else {
        errs.extend(dns1123_label(name, &path.child("name")));
    }
    if s(c, "image").is_empty() {
        errs.push(field::required(&path.child("image"), ""));
    }
    errs.extend(enum_value(
        s(c, "terminationMessagePolicy"),
        &["File", "FallbackToLogsOnError"],
        &path.child("terminationMessagePolicy"),
    ));
    errs.extend(container_ports(c, &path.child("ports")));
    errs.extend(env(c, &path.child("env")));
    errs.extend(env_from(c, &path.child("envFrom")));
    errs.extend(volume_mounts(c, volumes, &path.child("volumeMounts")));
    errs.extend(enum_value(
        s(c, "imagePullPolicy"),
        PULL_POLICIES,
        &path.child("imagePullPolicy"),
    ));
    errs.extend(resources(c, &path.child("resources")));
    errs
}

fn host_port_conflicts(containers: &[Value], path: &Path, seen: &mut HashSet<String>) -> ErrorList {
    let mut errs = ErrorList::new();
    for (ci, c) in containers.iter().enumerate() {
        for (pi, p) in arr(c, "ports").iter().enumerate() {
            let host = int(p, "hostPort").unwrap_or(0);
            if host == 0 {
                continue;
            }
            let key = format!("{}/{}/{}", s(p, "protocol"), s(p, "hostIP"), host);
            if !seen.insert(key.clone()) {
                errs.push(field::duplicate(
                    &path.index(ci).child("ports").index(pi).child("hostPort"),
                    BadValue::str(&key),
                ));
            }
        }
    }
    errs
}

const CONTAINER_RESTART_POLICIES: &[&str] = &["Always", "Never", "OnFailure"];

/// `validateContainers`.
fn containers(spec: &Value, volumes: &HashSet<String>, path: &Path) -> ErrorList {
    let cs = arr(spec, "containers");
    if cs.is_empty() {
        return vec![field::required(path, "")];
    }
    let mut errs = ErrorList::new();
    let mut names = HashSet::new();
    for (i, c) in cs.iter().enumerate() {
        let p = path.index(i);
        errs.extend(container_common(c, volumes, &p));
        let name = s(c, "name");
        if !names.insert(name.to_string()) {
            errs.push(field::duplicate(&p.child("name"), BadValue::str(name)));
        }
        errs.extend(probe(
            get(c, "livenessProbe"),
            &p.child("livenessProbe"),
            "liveness",
        ));
        errs.extend(probe(
            get(c, "readinessProbe"),
            &p.child("readinessProbe"),
            "readiness",
        ));
        errs.extend(probe(
            get(c, "startupProbe"),
            &p.child("startupProbe"),
            "startup",
        ));
        if let Some(rp) = opt_s(c, "restartPolicy") {
            if !CONTAINER_RESTART_POLICIES.contains(&rp) {
                errs.push(field::not_supported(
                    &p.child("restartPolicy"),
                    BadValue::named(rp),
                    CONTAINER_RESTART_POLICIES,
                ));
            }
        }
    }
    errs.extend(host_port_conflicts(cs, path, &mut HashSet::new()));
    errs
}

/// `validateInitContainers`.
fn init_containers(spec: &Value, volumes: &HashSet<String>, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let mut names: HashSet<String> = arr(spec, "containers")
        .iter()
        .map(|c| s(c, "name").to_string())
        .collect();
    for (i, c) in arr(spec, "initContainers").iter().enumerate() {
        let p = path.index(i);
        errs.extend(container_common(c, volumes, &p));
        let rp = opt_s(c, "restartPolicy");
        if let Some(rp) = rp {
            if !CONTAINER_RESTART_POLICIES.contains(&rp) {
                errs.push(field::not_supported(
                    &p.child("restartPolicy"),
                    BadValue::named(rp),
                    CONTAINER_RESTART_POLICIES,
                ));
            }
        }
        let name = s(c, "name");
        if names.contains(name) {
            errs.push(field::duplicate(&p.child("name"), BadValue::str(name)));
        } else if !name.is_empty() {
            names.insert(name.to_string());
        }
        errs.extend(host_port_conflicts(
            std::slice::from_ref(c),
            path,
            &mut HashSet::new(),
        ));
        if rp == Some("Always") {
            errs.extend(probe(
                get(c, "livenessProbe"),
                &p.child("livenessProbe"),
                "liveness",
            ));
            errs.extend(probe(
                get(c, "readinessProbe"),
                &p.child("readinessProbe"),
                "readiness",
            ));
            errs.extend(probe(
                get(c, "startupProbe"),
                &p.child("startupProbe"),
                "startup",
            ));
        } else {
            for k in [
                "lifecycle",
                "livenessProbe",
                "readinessProbe",
                "startupProbe",
            ] {
                if has(c, k) {
                    errs.push(field::forbidden(
                        &p.child(k),
                        "may not be set for init containers without restartPolicy=Always",
                    ));
                }
            }
        }
    }
    errs
}

/// `ValidateTolerations`.
fn tolerations(spec: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    for (i, t) in arr(spec, "tolerations").iter().enumerate() {
        let p = path.index(i);
        let key = s(t, "key");
        let op = s(t, "operator");
        let effect = s(t, "effect");
        if !key.is_empty() {
            errs.extend(objectmeta::validate_label_name(key, &p.child("key")));
        }
        if key.is_empty() && op != "Exists" {
            errs.push(field::invalid(
                &p.child("operator"),
                BadValue::named(op),
                "operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
            ));
        }
        if has(t, "tolerationSeconds") && effect != "NoExecute" {
            errs.push(field::invalid(
                &p.child("effect"),
                BadValue::named(effect),
                "effect must be 'NoExecute' when `tolerationSeconds` is set",
            ));
        }
        let value = s(t, "value");
        match op {
            "Equal" | "" => {
                let msgs = content::is_valid_label_value(value);
                if !msgs.is_empty() {
                    errs.push(field::invalid(
                        &p.child("operator"),
                        BadValue::str(value),
                        &msgs.join(";"),
                    ));
                }
            }
            "Exists" => {
                if !value.is_empty() {
                    errs.push(field::invalid(
                        &p.child("operator"),
                        BadValue::str(value),
                        "value must be empty when `operator` is 'Exists'",
                    ));
                }
            }
            _ => errs.push(field::not_supported(
                &p.child("operator"),
                BadValue::named(op),
                &["Equal", "Exists"],
            )),
        }
        if !effect.is_empty() {
            const EFFECTS: &[&str] = &["NoSchedule", "PreferNoSchedule", "NoExecute"];
            if !EFFECTS.contains(&effect) {
                errs.push(field::not_supported(
                    &p.child("effect"),
                    BadValue::named(effect),
                    EFFECTS,
                ));
            }
        }
    }
    errs
}

/// `ValidatePodSpec(spec, podMeta, path)`.
pub fn pod_spec(spec: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    if !has(spec, "terminationGracePeriodSeconds") {
        errs.push(field::required(
            &path.child("terminationGracePeriodSeconds"),
            "",
        ));
    }
    let (vols, verrs) = volumes(spec, &path.child("volumes"));
    errs.extend(verrs);
    errs.extend(containers(spec, &vols, &path.child("containers")));
    errs.extend(init_containers(spec, &vols, &path.child("initContainers")));
    errs.extend(enum_value(
        s(spec, "restartPolicy"),
        &["Always", "OnFailure", "Never"],
        &path.child("restartPolicy"),
    ));
    errs.extend(enum_value(
        s(spec, "dnsPolicy"),
        &["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"],
        &path.child("dnsPolicy"),
    ));
    errs.extend(validate_labels(
        spec,
        "nodeSelector",
        &path.child("nodeSelector"),
    ));
    for (i, ps) in arr(spec, "imagePullSecrets").iter().enumerate() {
        if ps
            .as_object()
            .map(|m| m.keys().any(|k| k != "name"))
            .unwrap_or(false)
        {
            errs.push(field::invalid(
                &path.child("imagePullSecrets").index(i),
                BadValue::Struct(json!({"Name": s(ps, "name")})),
                "only name may be set",
            ));
        }
    }
    if s(spec, "dnsPolicy") == "None" {
        match get(spec, "dnsConfig") {
            None => errs.push(field::required(
                &path.child("dnsConfig"),
                "must provide `dnsConfig` when `dnsPolicy` is None",
            )),
            Some(c) if arr(c, "nameservers").is_empty() => errs.push(field::required(
                &path.child("dnsConfig").child("nameservers"),
                "must provide at least one DNS nameserver when `dnsPolicy` is None",
            )),
            _ => {}
        }
    }
    let sa = s(spec, "serviceAccountName");
    if !sa.is_empty() {
        for m in NameRule::Subdomain.check(sa, false) {
            errs.push(field::invalid(
                &path.child("serviceAccountName"),
                BadValue::str(sa),
                &m,
            ));
        }
    }
    let node = s(spec, "nodeName");
    if !node.is_empty() {
        for m in NameRule::Subdomain.check(node, false) {
            errs.push(field::invalid(
                &path.child("nodeName"),
                BadValue::str(node),
                &m,
            ));
        }
    }
    if let Some(ads) = int(spec, "activeDeadlineSeconds") {
        if !(1..=i32::MAX as i64).contains(&ads) {
            errs.push(field::invalid(
                &path.child("activeDeadlineSeconds"),
                BadValue::Int(ads),
                &inclusive_range_error(1, i32::MAX as i64),
            ));
        }
    }
    for k in ["hostname", "subdomain"] {
        let v = s(spec, k);
        if !v.is_empty() {
            errs.extend(dns1123_label(v, &path.child(k)));
        }
    }
    if !arr(spec, "tolerations").is_empty() {
        errs.extend(tolerations(spec, &path.child("tolerations")));
    }
    let pc = s(spec, "priorityClassName");
    if !pc.is_empty() {
        for m in NameRule::Subdomain.check(pc, false) {
            errs.push(field::invalid(
                &path.child("priorityClassName"),
                BadValue::str(pc),
                &m,
            ));
        }
    }
    if let Some(pp) = opt_s(spec, "preemptionPolicy") {
        errs.extend(enum_value(
            pp,
            &["PreemptLowerPriority", "Never"],
            &path.child("preemptionPolicy"),
        ));
    }
    errs
}

/// `ValidatePodSpecificAnnotations` (the deletion cost; the rest concern mirror pods and
/// legacy annotations).
fn pod_specific_annotations(md: &Value, path: &Path) -> ErrorList {
    const COST: &str = "controller.kubernetes.io/pod-deletion-cost";
    match get(md, "annotations")
        .and_then(|a| a.get(COST))
        .and_then(Value::as_str)
    {
        Some(v) if !valid_deletion_cost(v) => vec![field::invalid(
            &path.key(COST),
            BadValue::str(v),
            "must be a 32bit integer",
        )],
        _ => vec![],
    }
}

/// `GetDeletionCostFromPodAnnotations` succeeds: no '+', no leading zeros, an int32.
fn valid_deletion_cost(v: &str) -> bool {
    let first_ok = match v.as_bytes().first() {
        None => false,
        Some(b'-') => true,
        Some(b'0') => v == "0",
        Some(c) => c.is_ascii_digit(),
    };
    first_ok && v.parse::<i32>().is_ok()
}

/// What the workload controllers' templates must hold beyond a valid pod template (RC,
/// ReplicaSet, Deployment, StatefulSet, DaemonSet): restartPolicy Always, no
/// activeDeadlineSeconds (`owner` names the controller in the message).
pub fn controller_template(tpl: &Value, path: &Path, owner: &str) -> ErrorList {
    let mut errs = ErrorList::new();
    let rp = s(tpl, "spec.restartPolicy");
    if rp != "Always" {
        errs.push(field::not_supported(
            &path.child("spec.restartPolicy"),
            BadValue::named(rp),
            &["Always"],
        ));
    }
    if has(tpl, "spec.activeDeadlineSeconds") {
        errs.push(field::forbidden(
            &path.child("spec.activeDeadlineSeconds"),
            &format!("activeDeadlineSeconds in {} is not Supported", owner),
        ));
    }
    errs
}

/// `ValidatePodTemplateSpec(template, path)`.
pub fn pod_template_spec(tpl: &Value, path: &Path) -> ErrorList {
    let empty = json!({});
    let md = get(tpl, "metadata").unwrap_or(&empty);
    let mut errs = validate_labels(md, "labels", &path.child("labels"));
    errs.extend(validate_annotations(
        md,
        "annotations",
        &path.child("annotations"),
    ));
    errs.extend(pod_specific_annotations(md, &path.child("annotations")));
    errs.extend(pod_spec(
        get(tpl, "spec").unwrap_or(&empty),
        &path.child("spec"),
    ));
    if !arr(tpl, "spec.ephemeralContainers").is_empty() {
        errs.push(field::forbidden(
            &path.child("spec.ephemeralContainers"),
            "ephemeral containers not allowed in pod template",
        ));
    }
    errs
}

/// `validatePodMetadataAndSpec`.
fn pod_metadata_and_spec(pod: &Value) -> ErrorList {
    let empty = json!({});
    let mut errs = objectmeta::core_object_meta(pod, true, NameRule::Subdomain);
    errs.extend(pod_specific_annotations(
        get(pod, "metadata").unwrap_or(&empty),
        &Path::new("metadata.annotations"),
    ));
    let spec = get(pod, "spec").unwrap_or(&empty);
    errs.extend(pod_spec(spec, &Path::new("spec")));
    for key in ["containers", "initContainers"] {
        for (i, c) in arr(spec, key).iter().enumerate() {
            let image = s(c, "image");
            if image.trim() != image {
                errs.push(field::invalid(
                    &Path::new("spec").child(key).index(i).child("image"),
                    BadValue::str(image),
                    "must not have leading or trailing whitespace",
                ));
            }
        }
    }
    errs
}

/// `ValidatePodCreate`.
pub fn validate_pod_create(pod: &Value) -> ErrorList {
    let mut errs = pod_metadata_and_spec(pod);
    let spec = Path::new("spec");
    if !arr(pod, "spec.ephemeralContainers").is_empty() {
        errs.push(field::forbidden(
            &spec.child("ephemeralContainers"),
            "cannot be set on create",
        ));
    }
    if !s(pod, "spec.nodeName").is_empty() && !arr(pod, "spec.schedulingGates").is_empty() {
        errs.push(field::forbidden(
            &spec.child("nodeName"),
            "cannot be set until all schedulingGates have been cleared",
        ));
    }
    errs
}

/// The fields `ValidatePodUpdate` lets change, for its message.
const UPDATABLE_POD_SPEC_FIELDS: &str = "`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)";

/// `ValidatePodUpdate`. The Forbidden message upstream ends in a go-cmp diff of the specs,
/// whose text is deliberately unstable; the sim's ends after the list of fields.
pub fn validate_pod_update(new: &Value, old: &Value) -> ErrorList {
    let spec_path = Path::new("spec");
    let mut errs = objectmeta::core_object_meta_update(new, old);
    errs.extend(pod_metadata_and_spec(new));
    for key in ["containers", "initContainers"] {
        let (nc, oc) = (
            arr(new, &format!("spec.{key}")),
            arr(old, &format!("spec.{key}")),
        );
        if nc.len() != oc.len() {
            errs.push(field::forbidden(
                &spec_path.child(key),
                "pod updates may not add or remove containers",
            ));
            return errs;
        }
        for (i, c) in nc.iter().enumerate() {
            let image = s(c, "image");
            if image.is_empty() {
                errs.push(field::required(
                    &spec_path.child(key).index(i).child("image"),
                    "",
                ));
            }
            if image.trim() != image {
                errs.push(field::invalid(
                    &spec_path.child(key).index(i).child("image"),
                    BadValue::str(image),
                    "must not have leading or trailing whitespace",
                ));
            }
        }
    }
    let (nads, oads) = (
        int(new, "spec.activeDeadlineSeconds"),
        int(old, "spec.activeDeadlineSeconds"),
    );
    match (nads, oads) {
        (Some(n), _) if !(0..=i32::MAX as i64).contains(&n) => {
            errs.push(field::invalid(
                &spec_path.child("activeDeadlineSeconds"),
                BadValue::Int(n),
                &inclusive_range_error(0, i32::MAX as i64),
            ));
            return errs;
        }
        (Some(n), Some(o)) if o < n => {
            errs.push(field::invalid(
                &spec_path.child("activeDeadlineSeconds"),
                BadValue::Int(n),
                "must be less than or equal to previous value",
            ));
            return errs;
        }
        (None, Some(_)) => errs.push(field::invalid(
            &spec_path.child("activeDeadlineSeconds"),
            BadValue::Json(Value::Null),
            "must not update from a positive integer to nil value",
        )),
        _ => {}
    }
    // `validateOnlyAddedTolerations`: every old toleration kept (its tolerationSeconds may
    // change), then the new ones validated.
    let empty = json!({});
    let mut a = get(new, "spec").cloned().unwrap_or_else(|| empty.clone());
    let b = get(old, "spec").cloned().unwrap_or(empty);
    let mut modified = false;
    for t in arr(&b, "tolerations") {
        let kept = arr(&a, "tolerations").iter().any(|n| {
            let mut x = t.clone();
            if let Some(m) = x.as_object_mut() {
                match n.get("tolerationSeconds") {
                    Some(v) => {
                        m.insert("tolerationSeconds".into(), v.clone());
                    }
                    None => {
                        m.remove("tolerationSeconds");
                    }
                }
            }
            semantic_eq(&x, n)
        });
        if !kept {
            errs.push(field::forbidden(
                &spec_path.child("tolerations"),
                "existing toleration can not be modified except its tolerationSeconds",
            ));
            modified = true;
            break;
        }
    }
    if !modified {
        errs.extend(tolerations(&a, &spec_path.child("tolerations")));
    }
    if semantic_eq(&a, &b) {
        return errs;
    }
    // Munge the updatable fields, then compare.
    if let Some(m) = a.as_object_mut() {
        for key in ["containers", "initContainers"] {
            if let Some(cs) = m.get_mut(key).and_then(Value::as_array_mut) {
                for (i, c) in cs.iter_mut().enumerate() {
                    c["image"] = arr(&b, key)
                        .get(i)
                        .and_then(|o| o.get("image"))
                        .cloned()
                        .unwrap_or(Value::Null);
                }
            }
        }
        for key in ["activeDeadlineSeconds", "schedulingGates", "tolerations"] {
            match b.get(key) {
                Some(v) => {
                    m.insert(key.into(), v.clone());
                }
                None => {
                    m.remove(key);
                }
            }
        }
        if int(&b, "terminationGracePeriodSeconds").map(|t| t < 0) == Some(true)
            && int(&Value::Object(m.clone()), "terminationGracePeriodSeconds") == Some(1)
        {
            m.insert(
                "terminationGracePeriodSeconds".into(),
                b["terminationGracePeriodSeconds"].clone(),
            );
        }
    }
    if !semantic_eq(&a, &b) {
        errs.push(field::forbidden(
            &spec_path,
            &format!(
                "pod updates may not change fields other than {}",
                UPDATABLE_POD_SPEC_FIELDS
            ),
        ));
    }
    errs
}
