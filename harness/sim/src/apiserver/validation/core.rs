//! The core group (other than pods): `pkg/apis/core/validation/validation.go` ValidateService /
//! ValidateServiceUpdate, ValidateConfigMap(Update), ValidateSecret(Update), ValidateNamespace,
//! ValidateServiceAccount, ValidatePersistentVolumeClaim(Update), ValidatePersistentVolume,
//! ValidateNode(Update), ValidateReplicationController(Update).

use super::access::{arr, get, has, int, map, opt_s, s, string_map};
use super::content::{self, NameRule};
use super::field::{self, BadValue, ErrorList, Path};
use super::objectmeta::{self, nonnegative, semantic_eq, validate_labels};
use super::pod::{
    controller_template, dns1123_label, dns1123_subdomain, enum_value, pod_template_spec,
    port_num_or_name,
};
use serde_json::{json, Value};
use std::collections::HashSet;

/// `core.MaxSecretSize`: 1 MiB.
const MAX_SECRET_SIZE: usize = 1024 * 1024;
const IMMUTABLE_WHEN_SET: &str = "field is immutable when `immutable` is set";

fn strings(v: &Value, at: &str) -> Vec<String> {
    arr(v, at)
        .iter()
        .map(|x| x.as_str().unwrap_or("").to_string())
        .collect()
}

fn is_headless(svc: &Value) -> bool {
    let ips = strings(svc, "spec.clusterIPs");
    ips.len() == 1 && ips[0] == "None"
}

/// `IsValidIPForLegacyField` without StrictIPCIDRValidation (off in 1.35): Go's legacy parser.
fn valid_ip(path: &Path, value: &str, old: &[String]) -> ErrorList {
    if old.iter().any(|o| o == value) {
        return vec![];
    }
    if value.is_empty() {
        return vec![field::required(path, "")];
    }
    let legacy_v4 = value.split('.').count() == 4
        && value.split('.').all(|p| {
            !p.is_empty()
                && p.len() <= 3
                && p.bytes().all(|c| c.is_ascii_digit())
                && p.parse::<u16>().map(|n| n < 256).unwrap_or(false)
        });
    if legacy_v4 || value.parse::<std::net::Ipv6Addr>().is_ok() {
        vec![]
    } else {
        vec![field::invalid(
            path,
            BadValue::str(value),
            "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
        )]
    }
}

/// `validateServicePort`.
fn service_port(
    p: &Value,
    require_name: bool,
    names: &mut HashSet<String>,
    path: &Path,
) -> ErrorList {
    let mut errs = ErrorList::new();
    let name = s(p, "name");
    if require_name && name.is_empty() {
        errs.push(field::required(&path.child("name"), ""));
    } else if !name.is_empty() {
        errs.extend(dns1123_label(name, &path.child("name")));
        if !names.insert(name.to_string()) {
            errs.push(field::duplicate(&path.child("name"), BadValue::str(name)));
        }
    }
    let port = int(p, "port").unwrap_or(0);
    for m in content::is_valid_port_num(port) {
        errs.push(field::invalid(&path.child("port"), BadValue::Int(port), &m));
    }
    errs.extend(enum_value(
        s(p, "protocol"),
        &["SCTP", "TCP", "UDP"],
        &path.child("protocol"),
    ));
    errs.extend(port_num_or_name(
        get(p, "targetPort"),
        &path.child("targetPort"),
    ));
    if let Some(ap) = opt_s(p, "appProtocol") {
        for m in content::is_qualified_name(ap) {
            errs.push(field::invalid(
                &path.child("appProtocol"),
                BadValue::str(ap),
                &m,
            ));
        }
    }
    errs
}

/// `ValidateServiceClusterIPsRelatedFields` (single-stack checks; dual-stack pairing is not
/// modelled).
fn cluster_ips_related(svc: &Value, old: Option<&Value>) -> ErrorList {
    if s(svc, "spec.type") == "ExternalName" {
        return vec![];
    }
    let mut errs = ErrorList::new();
    let spec = Path::new("spec");
    let ips_path = spec.child("clusterIPs");
    let ip = s(svc, "spec.clusterIP");
    let ips = strings(svc, "spec.clusterIPs");
    if !ip.is_empty() {
        if ips.is_empty() {
            errs.push(field::required(&ips_path, ""));
        } else if ips[0] != ip {
            errs.push(field::invalid(
                &ips_path,
                BadValue::Json(json!(ips)),
                "first value must match `clusterIP`",
            ));
        }
    } else if !ips.is_empty() {
        errs.push(field::invalid(
            &ips_path,
            BadValue::Json(json!(ips)),
            "must be empty when `clusterIP` is not specified",
        ));
    }
    let mut seen = HashSet::new();
    for (i, fam) in strings(svc, "spec.ipFamilies").iter().enumerate() {
        if fam != "IPv4" && fam != "IPv6" {
            errs.push(field::not_supported(
                &spec.child("ipFamilies").index(i),
                BadValue::named(fam),
                &["IPv4", "IPv6"],
            ));
        }
        if !seen.insert(fam.clone()) {
            errs.push(field::duplicate(
                &spec.child("ipFamilies").index(i),
                BadValue::named(fam),
            ));
        }
    }
    if let Some(policy) = opt_s(svc, "spec.ipFamilyPolicy") {
        const POLICIES: &[&str] = &["PreferDualStack", "RequireDualStack", "SingleStack"];
        if !POLICIES.contains(&policy) {
            errs.push(field::not_supported(
                &spec.child("ipFamilyPolicy"),
                BadValue::named(policy),
                POLICIES,
            ));
        }
    }
    let existing = old
        .map(|o| strings(o, "spec.clusterIPs"))
        .unwrap_or_default();
    let mut invalid = false;
    for (i, ip) in ips.iter().enumerate() {
        if i == 0 && ip == "None" {
            if ips.len() > 1 {
                invalid = true;
                errs.push(field::invalid(
                    &ips_path,
                    BadValue::Json(json!(ips)),
                    "'None' must be the first and only value",
                ));
            }
            continue;
        }
        let e = valid_ip(&ips_path.index(i), ip, &existing);
        invalid |= !e.is_empty();
        errs.extend(e);
    }
    if ips.len() > 2 {
        errs.push(field::invalid(
            &ips_path,
            BadValue::Json(json!(ips)),
            "may only hold up to 2 values",
        ));
    }
    if invalid {
        return errs;
    }
    let v6 = |ip: &str| ip.contains(':');
    if ips.len() > 1 && !(ips.len() == 2 && v6(&ips[0]) != v6(&ips[1])) {
        errs.push(field::invalid(
            &ips_path,
            BadValue::Json(json!(ips)),
            "may specify no more than one IP for each IP family",
        ));
    }
    let families = strings(svc, "spec.ipFamilies");
    if !is_headless(svc) {
        for (i, ip) in ips.iter().enumerate().take(families.len()) {
            if families[i] == "IPv4" && v6(ip) {
                errs.push(field::invalid(
                    &ips_path.index(i),
                    BadValue::str(ip),
                    &format!("expected an IPv4 value as indicated by `ipFamilies[{}]`", i),
                ));
            }
            if families[i] == "IPv6" && !v6(ip) {
                errs.push(field::invalid(
                    &ips_path.index(i),
                    BadValue::str(ip),
                    &format!("expected an IPv6 value as indicated by `ipFamilies[{}]`", i),
                ));
            }
        }
    }
    errs
}

/// `validateService(service, oldService)`.
fn validate_service(svc: &Value, old: Option<&Value>) -> ErrorList {
    let mut errs = ErrorList::new();
    let spec = Path::new("spec");
    let ty = s(svc, "spec.type");
    let ports = arr(svc, "spec.ports");
    if ports.is_empty() && !is_headless(svc) && ty != "ExternalName" {
        errs.push(field::required(&spec.child("ports"), ""));
    }
    match ty {
        "LoadBalancer" | "NodePort" if is_headless(svc) => errs.push(field::invalid(
            &spec.child("clusterIPs").index(0),
            BadValue::str("None"),
            &format!("may not be set to 'None' for {} services", ty),
        )),
        "ExternalName" => {
            if !arr(svc, "spec.clusterIPs").is_empty() {
                errs.push(field::forbidden(
                    &spec.child("clusterIPs"),
                    "may not be set for ExternalName services",
                ));
            }
            if !arr(svc, "spec.ipFamilies").is_empty() {
                errs.push(field::forbidden(
                    &spec.child("ipFamilies"),
                    "may not be set for ExternalName services",
                ));
            }
            if has(svc, "spec.ipFamilyPolicy") {
                errs.push(field::forbidden(
                    &spec.child("ipFamilyPolicy"),
                    "may not be set for ExternalName services",
                ));
            }
            let cname = s(svc, "spec.externalName");
            let cname = cname.strip_suffix('.').unwrap_or(cname);
            if cname.is_empty() {
                errs.push(field::required(&spec.child("externalName"), ""));
            } else {
                errs.extend(dns1123_subdomain(cname, &spec.child("externalName")));
            }
        }
        _ => {}
    }
    let mut names = HashSet::new();
    for (i, p) in ports.iter().enumerate() {
        errs.extend(service_port(
            p,
            ports.len() > 1,
            &mut names,
            &spec.child("ports").index(i),
        ));
    }
    if has(svc, "spec.selector") {
        errs.extend(validate_labels(
            svc,
            "spec.selector",
            &spec.child("selector"),
        ));
    }
    let affinity = s(svc, "spec.sessionAffinity");
    errs.extend(enum_value(
        affinity,
        &["ClientIP", "None"],
        &spec.child("sessionAffinity"),
    ));
    if affinity == "None" && has(svc, "spec.sessionAffinityConfig") {
        errs.push(field::forbidden(
            &spec.child("sessionAffinityConfig"),
            "must not be set when session affinity is None",
        ));
    }
    errs.extend(cluster_ips_related(svc, old));
    errs.extend(enum_value(
        ty,
        &["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"],
        &spec.child("type"),
    ));
    if ty == "ClusterIP" {
        for (i, p) in ports.iter().enumerate() {
            if int(p, "nodePort").unwrap_or(0) != 0 {
                errs.push(field::forbidden(
                    &spec.child("ports").index(i).child("nodePort"),
                    "may not be used when `type` is 'ClusterIP'",
                ));
            }
        }
    }
    let mut node_ports = HashSet::new();
    for (i, p) in ports.iter().enumerate() {
        let np = int(p, "nodePort").unwrap_or(0);
        if np == 0 {
            continue;
        }
        if !node_ports.insert((s(p, "protocol").to_string(), np)) {
            errs.push(field::duplicate(
                &spec.child("ports").index(i).child("nodePort"),
                BadValue::Int(np),
            ));
        }
    }
    let mut seen = HashSet::new();
    for (i, p) in ports.iter().enumerate() {
        let key = (s(p, "protocol").to_string(), int(p, "port").unwrap_or(0));
        if !seen.insert(key.clone()) {
            // The key is a core.ServicePort with only Protocol and Port set.
            errs.push(field::duplicate(
                &spec.child("ports").index(i),
                BadValue::Struct(json!({"Name": "", "Protocol": key.0, "AppProtocol": null, "Port": key.1, "TargetPort": 0, "NodePort": 0})),
            ));
        }
    }
    if has(svc, "spec.allocateLoadBalancerNodePorts") && ty != "LoadBalancer" {
        errs.push(field::forbidden(
            &spec.child("allocateLoadBalancerNodePorts"),
            "may only be used when `type` is 'LoadBalancer'",
        ));
    }
    if let Some(p) = opt_s(svc, "spec.externalTrafficPolicy") {
        if !["Cluster", "Local"].contains(&p) {
            errs.push(field::not_supported(
                &spec.child("externalTrafficPolicy"),
                BadValue::named(p),
                &["Cluster", "Local"],
            ));
        }
    }
    if let Some(p) = opt_s(svc, "spec.internalTrafficPolicy") {
        if !["Cluster", "Local"].contains(&p) {
            errs.push(field::not_supported(
                &spec.child("internalTrafficPolicy"),
                BadValue::named(p),
                &["Cluster", "Local"],
            ));
        }
    }
    errs
}

/// `ValidateServiceCreate` (names are DNS-1035 labels: RelaxedServiceNameValidation is alpha).
pub fn validate_service_create(svc: &Value) -> ErrorList {
    let mut errs = objectmeta::core_object_meta(svc, true, NameRule::Dns1035);
    errs.extend(validate_service(svc, None));
    errs
}

/// `validateUpgradeDowngradeClusterIPs`.
fn upgrade_downgrade_cluster_ips(old: &Value, svc: &Value) -> ErrorList {
    let mut errs = ErrorList::new();
    if s(svc, "spec.type") == "ExternalName" || s(old, "spec.type") == "ExternalName" {
        return errs;
    }
    if is_headless(old) && is_headless(svc) {
        return errs;
    }
    let (o, n) = (
        strings(old, "spec.clusterIPs"),
        strings(svc, "spec.clusterIPs"),
    );
    let p = Path::new("spec").child("clusterIPs");
    let value = || BadValue::Json(json!(n));
    if o.len() == n.len() {
        for (i, ip) in o.iter().enumerate() {
            if *ip != n[i] {
                errs.push(field::invalid(
                    &p.index(i),
                    value(),
                    "may not change once set",
                ));
            }
        }
    } else if o.len() > n.len() {
        if n.is_empty() {
            errs.push(field::invalid(
                &p.index(0),
                value(),
                "primary clusterIP can not be unset",
            ));
        }
        if !o.is_empty() && !n.is_empty() && n[0] != o[0] {
            errs.push(field::invalid(
                &p.index(0),
                value(),
                "may not change once set",
            ));
        }
        if n.len() == 1 && opt_s(svc, "spec.ipFamilyPolicy") != Some("SingleStack") {
            errs.push(field::invalid(
                &Path::new("spec.ipFamilyPolicy"),
                BadValue::Json(
                    get(svc, "spec.ipFamilyPolicy")
                        .cloned()
                        .unwrap_or(Value::Null),
                ),
                "must be set to 'SingleStack' when releasing the secondary clusterIP",
            ));
        }
    } else if !o.is_empty() && n[0] != o[0] {
        errs.push(field::invalid(
            &p.index(0),
            value(),
            "may not change once set",
        ));
    }
    errs
}

/// `ValidateServiceUpdate`.
pub fn validate_service_update(svc: &Value, old: &Value) -> ErrorList {
    let mut errs = objectmeta::core_object_meta_update(svc, old);
    errs.extend(upgrade_downgrade_cluster_ips(old, svc));
    errs.extend(validate_service(svc, Some(old)));
    errs
}

/// What the service registry does to an update before validation (`patchAllocatedValues`,
/// `normalizeClusterIPs` in pkg/registry/core/service/storage/storage.go): a client that
/// left out the allocated cluster IPs keeps them; a changed `clusterIP` with unchanged
/// `clusterIPs` moves `clusterIPs` with it (and validation then refuses the change).
pub fn prepare_service_update(svc: &mut Value, old: &Value) {
    let needs_ip = |v: &Value| s(v, "spec.type") != "ExternalName";
    let needs_node_port = |v: &Value| matches!(s(v, "spec.type"), "NodePort" | "LoadBalancer");
    if needs_node_port(old) && needs_node_port(svc) {
        // Node ports the body leaves out keep the old port of the same name, unless another
        // port of the new Service already uses it.
        let used = |v: &Value| -> std::collections::BTreeSet<i64> {
            arr(v, "spec.ports")
                .iter()
                .filter_map(|p| p.get("nodePort").and_then(Value::as_i64))
                .collect()
        };
        let both: std::collections::BTreeSet<i64> =
            used(old).intersection(&used(svc)).copied().collect();
        let by_name: std::collections::HashMap<String, i64> = arr(old, "spec.ports")
            .iter()
            .filter_map(|p| {
                let n = p.get("nodePort").and_then(Value::as_i64)?;
                Some((
                    p.get("name")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                    n,
                ))
            })
            .collect();
        if let Some(ports) = svc.pointer_mut("/spec/ports").and_then(Value::as_array_mut) {
            for p in ports {
                if p.get("nodePort").and_then(Value::as_i64).unwrap_or(0) == 0 {
                    let name = p
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string();
                    if let Some(n) = by_name.get(&name).filter(|n| !both.contains(n)) {
                        p["nodePort"] = json!(n);
                    }
                }
            }
        }
    }
    let needs_hc = |v: &Value| {
        s(v, "spec.type") == "LoadBalancer" && s(v, "spec.externalTrafficPolicy") == "Local"
    };
    if needs_hc(old)
        && needs_hc(svc)
        && svc
            .pointer("/spec/healthCheckNodePort")
            .and_then(Value::as_i64)
            .unwrap_or(0)
            == 0
    {
        if let Some(n) = old.pointer("/spec/healthCheckNodePort") {
            svc["spec"]["healthCheckNodePort"] = n.clone();
        }
    }
    if needs_ip(old) && needs_ip(svc) {
        if s(svc, "spec.clusterIP").is_empty() && has(old, "spec.clusterIP") {
            svc["spec"]["clusterIP"] = old["spec"]["clusterIP"].clone();
        }
        if arr(svc, "spec.clusterIPs").is_empty() && !arr(old, "spec.clusterIPs").is_empty() {
            svc["spec"]["clusterIPs"] = old["spec"]["clusterIPs"].clone();
        }
    }
    let (old_ip, new_ip) = (
        s(old, "spec.clusterIP").to_string(),
        s(svc, "spec.clusterIP").to_string(),
    );
    if !arr(old, "spec.clusterIPs").is_empty()
        && arr(svc, "spec.clusterIPs").is_empty()
        && old_ip == new_ip
    {
        svc["spec"]["clusterIPs"] = old["spec"]["clusterIPs"].clone();
    }
    if old_ip != new_ip {
        let same = strings(old, "spec.clusterIPs") == strings(svc, "spec.clusterIPs");
        if !old_ip.is_empty() && new_ip.is_empty() {
            if same {
                if let Some(m) = svc["spec"].as_object_mut() {
                    m.remove("clusterIPs");
                }
            }
        } else if same {
            svc["spec"]["clusterIPs"] = json!([new_ip]);
        }
    }
}

/// `ValidateConfigMap`.
pub fn validate_config_map(cm: &Value) -> ErrorList {
    let mut errs = objectmeta::core_object_meta(cm, true, NameRule::Subdomain);
    let mut total = 0;
    let binary = map(cm, "binaryData");
    for (k, v) in string_map(cm, "data") {
        for m in content::is_config_map_key(k) {
            errs.push(field::invalid(
                &Path::new("data").key(k),
                BadValue::str(k),
                &m,
            ));
        }
        if binary.map(|b| b.contains_key(k)).unwrap_or(false) {
            errs.push(field::invalid(
                &Path::new("data").key(k),
                BadValue::str(k),
                "duplicate of key present in binaryData",
            ));
        }
        total += v.len();
    }
    for (k, v) in string_map(cm, "binaryData") {
        for m in content::is_config_map_key(k) {
            errs.push(field::invalid(
                &Path::new("binaryData").key(k),
                BadValue::str(k),
                &m,
            ));
        }
        total += decoded_len(v);
    }
    if total > MAX_SECRET_SIZE {
        errs.push(field::too_long(&Path::root(), MAX_SECRET_SIZE as i64));
    }
    errs
}

/// The decoded length of base64 data (`[]byte` members).
fn decoded_len(b64: &str) -> usize {
    let pad = b64.bytes().rev().take_while(|&c| c == b'=').count();
    (b64.len() / 4) * 3 - pad.min(2)
}

fn immutable_data(new: &Value, old: &Value, keys: &[&str]) -> ErrorList {
    let mut errs = ErrorList::new();
    if get(old, "immutable").and_then(Value::as_bool) == Some(true) {
        if get(new, "immutable").and_then(Value::as_bool) != Some(true) {
            errs.push(field::forbidden(
                &Path::new("immutable"),
                IMMUTABLE_WHEN_SET,
            ));
        }
        for k in keys {
            if !semantic_eq(objectmeta_or_null(new, k), objectmeta_or_null(old, k)) {
                errs.push(field::forbidden(&Path::new(k), IMMUTABLE_WHEN_SET));
            }
        }
    }
    errs
}

fn objectmeta_or_null<'a>(v: &'a Value, k: &str) -> &'a Value {
    super::access::or_null(v, k)
}

/// `ValidateConfigMapUpdate`.
pub fn validate_config_map_update(new: &Value, old: &Value) -> ErrorList {
    let mut errs = objectmeta::core_object_meta_update(new, old);
    errs.extend(immutable_data(new, old, &["data", "binaryData"]));
    errs.extend(validate_config_map(new));
    errs
}

/// `ValidateSecret`.
pub fn validate_secret(sec: &Value) -> ErrorList {
    let mut errs = objectmeta::core_object_meta(sec, true, NameRule::Subdomain);
    let data = Path::new("data");
    let mut total = 0;
    for (k, v) in string_map(sec, "data") {
        for m in content::is_config_map_key(k) {
            errs.push(field::invalid(&data.key(k), BadValue::str(k), &m));
        }
        total += decoded_len(v);
    }
    if total > MAX_SECRET_SIZE {
        errs.push(field::too_long(&data, MAX_SECRET_SIZE as i64));
    }
    let present = |k: &str| map(sec, "data").map(|m| m.contains_key(k)).unwrap_or(false);
    match s(sec, "type") {
        "kubernetes.io/service-account-token" => {
            let name = get(sec, "metadata.annotations")
                .and_then(|a| a.get("kubernetes.io/service-account.name"))
                .and_then(Value::as_str)
                .unwrap_or("");
            if name.is_empty() {
                errs.push(field::required(
                    &Path::new("metadata.annotations").key("kubernetes.io/service-account.name"),
                    "",
                ));
            }
        }
        "kubernetes.io/dockercfg" if !present(".dockercfg") => {
            errs.push(field::required(&data.key(".dockercfg"), ""))
        }
        "kubernetes.io/dockerconfigjson" if !present(".dockerconfigjson") => {
            errs.push(field::required(&data.key(".dockerconfigjson"), ""))
        }
        "kubernetes.io/basic-auth" if !present("username") && !present("password") => {
            errs.push(field::required(&data.key("username"), ""));
            errs.push(field::required(&data.key("password"), ""));
        }
        "kubernetes.io/ssh-auth"
            if get(sec, "data")
                .and_then(|d| d.get("ssh-privatekey"))
                .and_then(Value::as_str)
                .unwrap_or("")
                .is_empty() =>
        {
            errs.push(field::required(&data.key("ssh-privatekey"), ""))
        }
        "kubernetes.io/tls" => {
            for k in ["tls.crt", "tls.key"] {
                if !present(k) {
                    errs.push(field::required(&data.key(k), ""));
                }
            }
        }
        _ => {}
    }
    errs
}

/// `ValidateSecretUpdate`.
pub fn validate_secret_update(new: &Value, old: &Value) -> ErrorList {
    let mut errs = objectmeta::core_object_meta_update(new, old);
    let (nt, ot) = (s(new, "type"), s(old, "type"));
    if nt != ot {
        errs.push(field::invalid(
            &Path::new("type"),
            BadValue::named(nt),
            objectmeta::FIELD_IMMUTABLE_ERROR_MSG,
        ));
    }
    errs.extend(immutable_data(new, old, &["data"]));
    errs.extend(validate_secret(new));
    errs
}

/// `ValidateNamespace`.
pub fn validate_namespace(ns: &Value) -> ErrorList {
    let mut errs = objectmeta::core_object_meta(ns, false, NameRule::Label);
    for f in strings(ns, "spec.finalizers") {
        let p = Path::new("spec.finalizers");
        for m in content::is_qualified_name(&f) {
            errs.push(field::invalid(&p, BadValue::str(&f), &m));
        }
        // validateKubeFinalizerName: names without a '/' must be standard ones.
        if !f.contains('/') && f != "kubernetes" {
            errs.push(field::invalid(
                &p,
                BadValue::str(&f),
                "name is neither a standard finalizer name nor is it fully qualified",
            ));
        }
    }
    errs
}

/// `ValidateNamespaceUpdate`.
pub fn validate_namespace_update(new: &Value, old: &Value) -> ErrorList {
    objectmeta::core_object_meta_update(new, old)
}

/// `ValidateServiceAccount`.
pub fn validate_service_account(sa: &Value) -> ErrorList {
    objectmeta::core_object_meta(sa, true, NameRule::Subdomain)
}

/// `ValidateServiceAccountUpdate`.
pub fn validate_service_account_update(new: &Value, old: &Value) -> ErrorList {
    let mut errs = objectmeta::core_object_meta_update(new, old);
    errs.extend(validate_service_account(new));
    errs
}

const ACCESS_MODES: &[&str] = &[
    "ReadOnlyMany",
    "ReadWriteMany",
    "ReadWriteOnce",
    "ReadWriteOncePod",
];
const VOLUME_MODES: &[&str] = &["Block", "Filesystem"];

fn access_modes(spec: &Value, path: &Path, required_detail: &str) -> ErrorList {
    let mut errs = ErrorList::new();
    let modes = strings(spec, "accessModes");
    if modes.is_empty() {
        errs.push(field::required(&path.child("accessModes"), required_detail));
    }
    let (mut rwop, mut other) = (false, false);
    for m in &modes {
        if !ACCESS_MODES.contains(&m.as_str()) {
            errs.push(field::not_supported(
                &path.child("accessModes"),
                BadValue::named(m),
                ACCESS_MODES,
            ));
        }
        if m == "ReadWriteOncePod" {
            rwop = true;
        } else if ACCESS_MODES.contains(&m.as_str()) {
            other = true;
        }
    }
    if rwop && other {
        errs.push(field::forbidden(
            &path.child("accessModes"),
            "may not use ReadWriteOncePod with other access modes",
        ));
    }
    errs
}

fn positive_quantity(q: &str, path: &Path) -> ErrorList {
    let n = q.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let zero_or_less = n.parse::<f64>().map(|x| x <= 0.0).unwrap_or(false);
    if zero_or_less {
        let canon = crate::apiserver::table::canonical_quantity(q).unwrap_or_else(|| q.to_string());
        vec![field::invalid(
            path,
            BadValue::str(&canon),
            "must be greater than zero",
        )]
    } else {
        vec![]
    }
}

/// `ValidatePersistentVolumeClaimSpec`.
pub fn pvc_spec(spec: &Value, path: &Path) -> ErrorList {
    let mut errs = access_modes(spec, path, "at least 1 access mode is required");
    if let Some(sel) = get(spec, "selector") {
        errs.extend(objectmeta::validate_label_selector(
            sel,
            false,
            &path.child("selector"),
        ));
    }
    let storage_path = path.child("resources").key("storage");
    match get(spec, "resources.requests.storage").and_then(Value::as_str) {
        None => errs.push(field::required(&storage_path, "")),
        Some(q) => errs.extend(positive_quantity(q, &storage_path)),
    }
    if let Some(class) = opt_s(spec, "storageClassName").filter(|c| !c.is_empty()) {
        for m in NameRule::Subdomain.check(class, false) {
            errs.push(field::invalid(
                &path.child("storageClassName"),
                BadValue::str(class),
                &m,
            ));
        }
    }
    if let Some(mode) = opt_s(spec, "volumeMode") {
        if !VOLUME_MODES.contains(&mode) {
            errs.push(field::not_supported(
                &path.child("volumeMode"),
                BadValue::named(mode),
                VOLUME_MODES,
            ));
        }
    }
    errs
}

/// `ValidatePersistentVolumeClaim`.
pub fn validate_pvc(pvc: &Value) -> ErrorList {
    let empty = json!({});
    let mut errs = objectmeta::core_object_meta(pvc, true, NameRule::Subdomain);
    errs.extend(pvc_spec(
        get(pvc, "spec").unwrap_or(&empty),
        &Path::new("spec"),
    ));
    errs
}

/// `ValidatePersistentVolumeClaimUpdate`: the spec is immutable but for resources.requests
/// (expansion; not shrinking below the old request), a volumeName set once, and the storage
/// class set from nil. The Forbidden message upstream ends in a go-cmp diff; the sim's ends
/// before it.
pub fn validate_pvc_update(new: &Value, old: &Value) -> ErrorList {
    let mut errs = objectmeta::core_object_meta_update(new, old);
    errs.extend(validate_pvc(new));
    let empty = json!({});
    let mut n = get(new, "spec").cloned().unwrap_or_else(|| empty.clone());
    let mut o = get(old, "spec").cloned().unwrap_or(empty);
    if s(&o, "volumeName").is_empty() {
        match n.get("volumeName") {
            Some(v) => o["volumeName"] = v.clone(),
            None => {
                o.as_object_mut().map(|m| m.remove("volumeName"));
            }
        }
    }
    if !has(&o, "storageClassName") && has(&n, "storageClassName") {
        o["storageClassName"] = n["storageClassName"].clone();
    }
    // Expansion: resources.requests may change (the size checks follow).
    for v in [&mut n, &mut o] {
        if let Some(r) = v.pointer_mut("/resources").and_then(Value::as_object_mut) {
            r.remove("requests");
        }
    }
    let bound = s(new, "status.phase") == "Bound";
    if !bound {
        // Unbound claims may not change their requests either.
        let req = |v: &Value| {
            get(v, "spec.resources.requests")
                .cloned()
                .unwrap_or(Value::Null)
        };
        if !semantic_eq(&req(new), &req(old)) {
            n["resources"]["requests"] = req(new);
            o["resources"]["requests"] = req(old);
        }
    }
    if !semantic_eq(&n, &o) {
        errs.push(field::forbidden(
            &Path::new("spec"),
            "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims",
        ));
    }
    let size = |v: &Value| {
        get(v, "spec.resources.requests.storage")
            .and_then(Value::as_str)
            .and_then(quantity_f64)
    };
    if let (Some(ns), Some(os)) = (size(new), size(old)) {
        if ns < os {
            errs.push(field::forbidden(
                &Path::new("spec.resources.requests.storage"),
                "field can not be less than status.capacity",
            ));
        }
    }
    errs.extend(objectmeta::immutable(
        super::access::or_null(new, "spec.volumeMode"),
        super::access::or_null(old, "spec.volumeMode"),
        &Path::new("volumeMode"),
        BadValue::Json(get(new, "spec.volumeMode").cloned().unwrap_or(Value::Null)),
    ));
    errs
}

fn quantity_f64(q: &str) -> Option<f64> {
    let split = q.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(q.len());
    let (n, suffix) = q.split_at(split);
    let n: f64 = n.parse().ok()?;
    let m = match suffix {
        "" => 1.0,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "Ki" => 1024f64,
        "Mi" => 1024f64.powi(2),
        "Gi" => 1024f64.powi(3),
        "Ti" => 1024f64.powi(4),
        "Pi" => 1024f64.powi(5),
        _ => return None,
    };
    Some(n * m)
}

/// `ValidatePersistentVolume` (the common parts: access modes, capacity, reclaim policy,
/// one volume source, class name, volume mode).
pub fn validate_pv(pv: &Value) -> ErrorList {
    let mut errs = objectmeta::core_object_meta(pv, false, NameRule::Subdomain);
    let empty = json!({});
    let spec = get(pv, "spec").unwrap_or(&empty);
    let path = Path::new("spec");
    errs.extend(access_modes(spec, &path, ""));
    let cap = map(spec, "capacity");
    if cap.map(|c| c.is_empty()).unwrap_or(true) {
        errs.push(field::required(&path.child("capacity"), ""));
    }
    if cap
        .map(|c| !c.contains_key("storage") || c.len() > 1)
        .unwrap_or(true)
    {
        errs.push(field::not_supported(
            &path.child("capacity"),
            BadValue::Json(get(spec, "capacity").cloned().unwrap_or(Value::Null)),
            &["storage"],
        ));
    }
    for (r, q) in cap.into_iter().flatten() {
        errs.extend(positive_quantity(
            q.as_str().unwrap_or(""),
            &path.child("capacity").key(r),
        ));
    }
    if let Some(p) = opt_s(spec, "persistentVolumeReclaimPolicy").filter(|p| !p.is_empty()) {
        const POLICIES: &[&str] = &["Delete", "Recycle", "Retain"];
        if !POLICIES.contains(&p) {
            errs.push(field::not_supported(
                &path.child("persistentVolumeReclaimPolicy"),
                BadValue::named(p),
                POLICIES,
            ));
        }
    }
    const SOURCES: &[&str] = &[
        "hostPath",
        "gcePersistentDisk",
        "awsElasticBlockStore",
        "glusterfs",
        "flocker",
        "nfs",
        "rbd",
        "quobyte",
        "cinder",
        "cephfs",
        "iscsi",
        "fc",
        "azureFile",
        "flexVolume",
        "vsphereVolume",
        "azureDisk",
        "photonPersistentDisk",
        "portworxVolume",
        "scaleIO",
        "local",
        "storageos",
        "csi",
    ];
    let n = SOURCES.iter().filter(|k| has(spec, k)).count();
    if n == 0 {
        errs.push(field::required(&path, "must specify a volume type"));
    }
    let class = s(spec, "storageClassName");
    if !class.is_empty() {
        for m in NameRule::Subdomain.check(class, false) {
            errs.push(field::invalid(
                &path.child("storageClassName"),
                BadValue::str(class),
                &m,
            ));
        }
    }
    if let Some(mode) = opt_s(spec, "volumeMode") {
        if !VOLUME_MODES.contains(&mode) {
            errs.push(field::not_supported(
                &path.child("volumeMode"),
                BadValue::named(mode),
                VOLUME_MODES,
            ));
        }
    }
    errs
}

/// `ValidatePersistentVolumeUpdate`: the source is immutable (message without upstream's
/// trailing diff), and the volume mode.
pub fn validate_pv_update(new: &Value, old: &Value) -> ErrorList {
    let mut errs = validate_pv(new);
    const NOT_SOURCE: &[&str] = &[
        "capacity",
        "accessModes",
        "claimRef",
        "persistentVolumeReclaimPolicy",
        "storageClassName",
        "mountOptions",
        "volumeMode",
        "nodeAffinity",
        "volumeAttributesClassName",
    ];
    let source = |v: &Value| {
        let mut m = map(v, "spec").cloned().unwrap_or_default();
        for k in NOT_SOURCE {
            m.remove(*k);
        }
        Value::Object(m)
    };
    if !semantic_eq(&source(new), &source(old)) {
        errs.push(field::forbidden(
            &Path::new("spec.persistentvolumesource"),
            "spec.persistentvolumesource is immutable after creation",
        ));
    }
    errs.extend(objectmeta::immutable(
        super::access::or_null(new, "spec.volumeMode"),
        super::access::or_null(old, "spec.volumeMode"),
        &Path::new("volumeMode"),
        BadValue::Json(get(new, "spec.volumeMode").cloned().unwrap_or(Value::Null)),
    ));
    errs
}

/// `validateNodeTaints`.
fn node_taints(node: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let mut seen = HashSet::new();
    for (i, t) in arr(node, "spec.taints").iter().enumerate() {
        let p = path.index(i);
        errs.extend(objectmeta::validate_label_name(
            s(t, "key"),
            &p.child("key"),
        ));
        let msgs = content::is_valid_label_value(s(t, "value"));
        if !msgs.is_empty() {
            errs.push(field::invalid(
                &p.child("value"),
                BadValue::str(s(t, "value")),
                &msgs.join(";"),
            ));
        }
        let effect = s(t, "effect");
        const EFFECTS: &[&str] = &["NoSchedule", "PreferNoSchedule", "NoExecute"];
        if effect.is_empty() {
            errs.push(field::required(&p.child("effect"), ""));
        } else if !EFFECTS.contains(&effect) {
            errs.push(field::not_supported(
                &p.child("effect"),
                BadValue::named(effect),
                EFFECTS,
            ));
        }
        if !seen.insert((effect.to_string(), s(t, "key").to_string())) {
            let mut e = field::duplicate(
                &p,
                BadValue::Struct(
                    json!({"Key": s(t, "key"), "Value": s(t, "value"), "Effect": effect, "TimeAdded": get(t, "timeAdded").cloned().unwrap_or(Value::Null)}),
                ),
            );
            e.detail = "taints must be unique by key and effect pair".into();
            errs.push(e);
        }
    }
    errs
}

/// `ValidateNode` (metadata and taints).
pub fn validate_node(node: &Value) -> ErrorList {
    let mut errs = objectmeta::core_object_meta(node, false, NameRule::Subdomain);
    if !arr(node, "spec.taints").is_empty() {
        errs.extend(node_taints(node, &Path::new("metadata.taints")));
    }
    errs
}

/// `ValidateNodeUpdate` (metadata, podCIDRs and providerID set once, taints).
pub fn validate_node_update(new: &Value, old: &Value) -> ErrorList {
    let mut errs = objectmeta::core_object_meta_update(new, old);
    let (oc, nc) = (strings(old, "spec.podCIDRs"), strings(new, "spec.podCIDRs"));
    if !oc.is_empty() {
        let msg = "node updates may not change podCIDR except from \"\" to valid";
        if oc.len() != nc.len() {
            errs.push(field::forbidden(&Path::new("spec.podCIDRs"), msg));
        } else {
            for (i, v) in oc.iter().enumerate() {
                if *v != nc[i] {
                    errs.push(field::forbidden(&Path::new("spec.podCIDRs"), msg));
                }
            }
        }
    }
    let (op, np) = (s(old, "spec.providerID"), s(new, "spec.providerID"));
    if !op.is_empty() && op != np {
        errs.push(field::forbidden(
            &Path::new("spec.providerID"),
            "node updates may not change providerID except from \"\" to valid",
        ));
    }
    if !arr(new, "spec.taints").is_empty() {
        errs.extend(node_taints(new, &Path::new("metadata.taints")));
    }
    errs
}

/// `ValidateReplicationController`.
pub fn validate_rc(rc: &Value) -> ErrorList {
    validate_replication_controller(rc, None)
}

/// `ValidateReplicationControllerUpdate`.
pub fn validate_rc_update(new: &Value, old: &Value) -> ErrorList {
    validate_replication_controller(new, Some(old))
}

/// `ValidateReplicationController` / `ValidateReplicationControllerSpec`.
fn validate_replication_controller(rc: &Value, update_of: Option<&Value>) -> ErrorList {
    let mut errs = match update_of {
        Some(old) => objectmeta::core_object_meta_update(rc, old),
        None => objectmeta::core_object_meta(rc, true, NameRule::Subdomain),
    };
    let spec = Path::new("spec");
    errs.extend(nonnegative(
        int(rc, "spec.minReadySeconds").unwrap_or(0),
        &spec.child("minReadySeconds"),
    ));
    let selector = string_map(rc, "spec.selector");
    if selector.is_empty() {
        errs.push(field::required(&spec.child("selector"), ""));
    }
    match int(rc, "spec.replicas") {
        None => errs.push(field::required(&spec.child("replicas"), "")),
        Some(r) => errs.extend(nonnegative(r, &spec.child("replicas"))),
    }
    let tpl_path = spec.child("template");
    match get(rc, "spec.template") {
        None => errs.push(field::required(&tpl_path, "")),
        Some(tpl) => {
            if !selector.is_empty() {
                let labels = map(tpl, "metadata.labels");
                let ok = selector.iter().all(|(k, v)| {
                    labels.and_then(|l| l.get(*k)).and_then(Value::as_str) == Some(*v)
                });
                if !ok {
                    errs.push(field::invalid(
                        &tpl_path.child("metadata.labels"),
                        BadValue::Json(get(tpl, "metadata.labels").cloned().unwrap_or(Value::Null)),
                        "`selector` does not match template `labels`",
                    ));
                }
            }
            errs.extend(pod_template_spec(tpl, &tpl_path));
            errs.extend(controller_template(tpl, &tpl_path, "ReplicationController"));
        }
    }
    errs
}
