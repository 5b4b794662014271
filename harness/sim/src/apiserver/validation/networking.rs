//! networking.k8s.io/v1: `pkg/apis/networking/validation/validation.go` ValidateNetworkPolicy
//! (and its Update), ValidateIngressCreate / ValidateIngressUpdate.

use super::access::{arr, get, has, int, opt_s, s};
use super::content::{self, NameRule};
use super::field::{self, BadValue, ErrorList, Path};
use super::objectmeta::{self, validate_label_selector};
use serde_json::{json, Value};

/// `ValidateNetworkPolicyPort`.
fn network_policy_port(port: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    if let Some(proto) = opt_s(port, "protocol") {
        if !["TCP", "UDP", "SCTP"].contains(&proto) {
            errs.push(field::not_supported(
                &path.child("protocol"),
                BadValue::named(proto),
                &["TCP", "UDP", "SCTP"],
            ));
        }
    }
    let end = int(port, "endPort");
    match get(port, "port") {
        Some(Value::String(name)) => {
            if let Some(e) = end {
                errs.push(field::invalid(
                    &path.child("endPort"),
                    BadValue::Int(e),
                    "may not be specified when `port` is non-numeric",
                ));
            }
            for m in content::is_valid_port_name(name) {
                errs.push(field::invalid(&path.child("port"), BadValue::str(name), &m));
            }
        }
        Some(p) => {
            let n = p.as_i64().unwrap_or(0);
            for m in content::is_valid_port_num(n) {
                errs.push(field::invalid(&path.child("port"), BadValue::Int(n), &m));
            }
            if let Some(e) = end {
                if e < n {
                    errs.push(field::invalid(
                        &path.child("endPort"),
                        BadValue::Int(n),
                        "must be greater than or equal to `port`",
                    ));
                }
                for m in content::is_valid_port_num(e) {
                    errs.push(field::invalid(&path.child("endPort"), BadValue::Int(e), &m));
                }
            }
        }
        None => {
            if let Some(e) = end {
                errs.push(field::invalid(
                    &path.child("endPort"),
                    BadValue::Int(e),
                    "may not be specified when `port` is not specified",
                ));
            }
        }
    }
    errs
}

/// `ValidateNetworkPolicyPeer` (the ipBlock's CIDRs checked for presence only).
fn network_policy_peer(peer: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let mut n = 0;
    for k in ["podSelector", "namespaceSelector"] {
        if let Some(sel) = get(peer, k) {
            n += 1;
            errs.extend(validate_label_selector(sel, false, &path.child(k)));
        }
    }
    if let Some(ipb) = get(peer, "ipBlock") {
        n += 1;
        if s(ipb, "cidr").is_empty() {
            errs.push(field::required(&path.child("ipBlock.cidr"), ""));
        }
    }
    if n == 0 {
        errs.push(field::required(path, "must specify a peer"));
    } else if n > 1 && has(peer, "ipBlock") {
        errs.push(field::forbidden(
            path,
            "may not specify both ipBlock and another peer",
        ));
    }
    errs
}

/// `ValidateNetworkPolicySpec`.
fn network_policy_spec(np: &Value) -> ErrorList {
    let spec = Path::new("spec");
    let empty = json!({});
    let mut errs = validate_label_selector(
        get(np, "spec.podSelector").unwrap_or(&empty),
        false,
        &spec.child("podSelector"),
    );
    for (dir, peers) in [("ingress", "from"), ("egress", "to")] {
        for (i, rule) in arr(np, &format!("spec.{dir}")).iter().enumerate() {
            let rp = spec.child(dir).index(i);
            for (j, port) in arr(rule, "ports").iter().enumerate() {
                errs.extend(network_policy_port(port, &rp.child("ports").index(j)));
            }
            for (j, peer) in arr(rule, peers).iter().enumerate() {
                errs.extend(network_policy_peer(peer, &rp.child(peers).index(j)));
            }
        }
    }
    let types = arr(np, "spec.policyTypes");
    if types.len() > 2 {
        errs.push(field::invalid(
            &spec.child("policyTypes"),
            BadValue::Json(json!(types)),
            "may not specify more than two policyTypes",
        ));
        return errs;
    }
    for (i, t) in types.iter().enumerate() {
        let t = t.as_str().unwrap_or("");
        if t != "Ingress" && t != "Egress" {
            errs.push(field::not_supported(
                &spec.child("policyTypes").index(i),
                BadValue::named(t),
                &["Ingress", "Egress"],
            ));
        }
    }
    errs
}

/// `ValidateNetworkPolicy`.
pub fn validate_network_policy(np: &Value) -> ErrorList {
    let mut errs = objectmeta::core_object_meta(np, true, NameRule::Subdomain);
    errs.extend(network_policy_spec(np));
    errs
}

/// The strategy's ValidateUpdate: `ValidateNetworkPolicy` then `ValidateNetworkPolicyUpdate`.
pub fn validate_network_policy_update(new: &Value, old: &Value) -> ErrorList {
    let mut errs = validate_network_policy(new);
    errs.extend(objectmeta::core_object_meta_update(new, old));
    errs.extend(network_policy_spec(new));
    errs
}

/// `IsWildcardDNS1123Subdomain`.
fn wildcard_subdomain(v: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if v.len() > 253 {
        errs.push(content::max_len_error(253));
    }
    let ok = v
        .strip_prefix("*.")
        .map(|rest| content::is_dns1123_subdomain(rest).is_empty() && rest.len() <= 253)
        .unwrap_or(false);
    if !ok {
        errs.push(content::regex_error(
            "a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which must consist of lower case alphanumeric characters, '-' or '.' and end with an alphanumeric character",
            &format!("\\*\\.{0}(\\.{0})*", content::DNS1123_LABEL_FMT),
            &["*.example.com"],
        ));
    }
    errs
}

fn is_ip(v: &str) -> bool {
    v.parse::<std::net::IpAddr>().is_ok()
}

/// `validateIngressBackend`.
fn ingress_backend(b: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    match (get(b, "resource"), get(b, "service")) {
        (Some(_), Some(_)) => {
            return vec![field::invalid(
                path,
                BadValue::str(""),
                "cannot set both resource and service backends",
            )]
        }
        (Some(r), None) => {
            let rp = path.child("resource");
            if s(r, "name").is_empty() {
                errs.push(field::required(&rp.child("name"), "name is required"));
            }
            if s(r, "kind").is_empty() {
                errs.push(field::required(&rp.child("kind"), "kind is required"));
            }
        }
        (None, Some(svc)) => {
            let name = s(svc, "name");
            if name.is_empty() {
                errs.push(field::required(&path.child("service.name"), ""));
            } else {
                for m in NameRule::Dns1035.check(name, false) {
                    errs.push(field::invalid(
                        &path.child("service.name"),
                        BadValue::str(name),
                        &m,
                    ));
                }
            }
            let pname = s(svc, "port.name");
            let pnum = int(svc, "port.number").unwrap_or(0);
            if !pname.is_empty() && pnum != 0 {
                errs.push(field::invalid(
                    path,
                    BadValue::str(""),
                    "cannot set both port name & port number",
                ));
            } else if !pname.is_empty() {
                for m in content::is_valid_port_name(pname) {
                    errs.push(field::invalid(
                        &path.child("service.port.name"),
                        BadValue::str(pname),
                        &m,
                    ));
                }
            } else if pnum != 0 {
                for m in content::is_valid_port_num(pnum) {
                    errs.push(field::invalid(
                        &path.child("service.port.number"),
                        BadValue::Int(pnum),
                        &m,
                    ));
                }
            } else {
                errs.push(field::required(path, "port name or number is required"));
            }
        }
        (None, None) => errs.push(field::invalid(
            path,
            BadValue::str(""),
            "resource or service backend is required",
        )),
    }
    errs
}

/// `validateHTTPIngressPath`.
fn ingress_path(p: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let Some(pt) = opt_s(p, "pathType") else {
        return vec![field::required(
            &path.child("pathType"),
            "pathType must be specified",
        )];
    };
    let v = s(p, "path");
    match pt {
        "Exact" | "Prefix" => {
            if !v.starts_with('/') {
                errs.push(field::invalid(
                    &path.child("path"),
                    BadValue::str(v),
                    "must be an absolute path",
                ));
            }
            if !v.is_empty() {
                for seq in ["//", "/./", "/../", "%2f", "%2F"] {
                    if v.contains(seq) {
                        errs.push(field::invalid(
                            &path.child("path"),
                            BadValue::str(v),
                            &format!("must not contain '{}'", seq),
                        ));
                    }
                }
                for suf in ["/..", "/."] {
                    if v.ends_with(suf) {
                        errs.push(field::invalid(
                            &path.child("path"),
                            BadValue::str(v),
                            &format!("cannot end with '{}'", suf),
                        ));
                    }
                }
            }
        }
        "ImplementationSpecific" => {
            if !v.is_empty() && !v.starts_with('/') {
                errs.push(field::invalid(
                    &path.child("path"),
                    BadValue::str(v),
                    "must be an absolute path",
                ));
            }
        }
        other => errs.push(field::not_supported(
            &path.child("pathType"),
            BadValue::named(other),
            &["Exact", "ImplementationSpecific", "Prefix"],
        )),
    }
    errs.extend(ingress_backend(
        get(p, "backend").unwrap_or(&json!({})),
        &path.child("backend"),
    ));
    errs
}

/// `ValidateIngressSpec`.
fn ingress_spec(ing: &Value) -> ErrorList {
    let spec = Path::new("spec");
    let mut errs = ErrorList::new();
    let rules = arr(ing, "spec.rules");
    if rules.is_empty() && !has(ing, "spec.defaultBackend") {
        errs.push(field::invalid(
            &spec,
            BadValue::Json(Value::Null),
            "either `defaultBackend` or `rules` must be specified",
        ));
    }
    if let Some(b) = get(ing, "spec.defaultBackend") {
        errs.extend(ingress_backend(b, &spec.child("defaultBackend")));
    }
    for (i, r) in rules.iter().enumerate() {
        let rp = spec.child("rules").index(i);
        let host = s(r, "host");
        if !host.is_empty() {
            if is_ip(host) {
                errs.push(field::invalid(
                    &rp.child("host"),
                    BadValue::str(host),
                    "must be a DNS name, not an IP address",
                ));
            }
            let msgs = if host.contains('*') {
                wildcard_subdomain(host)
            } else {
                content::is_dns1123_subdomain(host)
            };
            for m in msgs {
                errs.push(field::invalid(&rp.child("host"), BadValue::str(host), &m));
            }
        }
        if let Some(http) = get(r, "http") {
            let hp = rp.child("http");
            let paths = arr(http, "paths");
            if paths.is_empty() {
                errs.push(field::required(&hp.child("paths"), ""));
            }
            for (j, p) in paths.iter().enumerate() {
                errs.extend(ingress_path(p, &hp.child("paths").index(j)));
            }
        }
    }
    for (i, tls) in arr(ing, "spec.tls").iter().enumerate() {
        let tp = spec.child("tls").index(i);
        for (j, h) in arr(tls, "hosts").iter().enumerate() {
            let h = h.as_str().unwrap_or("");
            let msgs = if h.contains('*') {
                wildcard_subdomain(h)
            } else {
                content::is_dns1123_subdomain(h)
            };
            for m in msgs {
                errs.push(field::invalid(
                    &tp.child("hosts").index(j),
                    BadValue::str(h),
                    &m,
                ));
            }
        }
        let secret = s(tls, "secretName");
        if !secret.is_empty() {
            for m in NameRule::Subdomain.check(secret, false) {
                errs.push(field::invalid(
                    &tp.child("secretName"),
                    BadValue::str(secret),
                    &m,
                ));
            }
        }
    }
    if let Some(class) = opt_s(ing, "spec.ingressClassName") {
        for m in NameRule::Subdomain.check(class, false) {
            errs.push(field::invalid(
                &spec.child("ingressClassName"),
                BadValue::str(class),
                &m,
            ));
        }
    }
    errs
}

/// `ValidateIngressCreate`.
pub fn validate_ingress_create(ing: &Value) -> ErrorList {
    let mut errs = objectmeta::core_object_meta(ing, true, NameRule::Subdomain);
    errs.extend(ingress_spec(ing));
    let ann = get(ing, "metadata.annotations")
        .and_then(|a| a.get("kubernetes.io/ingress.class"))
        .and_then(Value::as_str);
    if let (Some(a), Some(c)) = (ann, opt_s(ing, "spec.ingressClassName")) {
        if a != c {
            errs.push(field::invalid(
                &Path::new("annotations").child("kubernetes.io/ingress.class"),
                BadValue::str(a),
                "must match `ingressClassName` when both are specified",
            ));
        }
    }
    errs
}

/// `ValidateIngressUpdate`.
pub fn validate_ingress_update(new: &Value, old: &Value) -> ErrorList {
    let mut errs = objectmeta::core_object_meta_update(new, old);
    errs.extend(objectmeta::core_object_meta(new, true, NameRule::Subdomain));
    errs.extend(ingress_spec(new));
    errs
}
