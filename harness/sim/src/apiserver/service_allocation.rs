//! What the apiserver allocates for a new Service: a cluster IP from the service CIDR
//! (`--service-cluster-ip-range`; the sim's default is kubeadm's 10.96.0.0/12) and node ports
//! from 30000-32767, never one still in use.
//!
//! The real allocators pick at random (a bitmap in etcd); the sim takes the lowest free address
//! and port so runs are deterministic. What is in use is read from the stored Services.

use crate::apiserver::status::{ApiError, ApiResult};
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::net::Ipv4Addr;

pub const NODE_PORTS: std::ops::RangeInclusive<i64> = 30000..=32767;

/// The IPv4 service CIDR (`--service-cluster-ip-range`), as kube-apiserver's
/// `ServiceIPRange` holds it: the first usable address is the `kubernetes` Service's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceCidr {
    base: u32,
    size: u32,
    text: String,
}

impl Default for ServiceCidr {
    /// kubeadm's default, which kind and the sim's clusters use.
    fn default() -> Self {
        ServiceCidr::parse("10.96.0.0/12").expect("the default service CIDR parses")
    }
}

impl ServiceCidr {
    /// `a.b.c.d/n`, IPv4 only (the sim serves single-stack IPv4), with at least the network
    /// address, the `kubernetes` Service's address, one more and the broadcast address (/30).
    pub fn parse(s: &str) -> Result<ServiceCidr, String> {
        let (ip, bits) = s
            .split_once('/')
            .ok_or_else(|| format!("{s:?} is not a CIDR (a.b.c.d/n)"))?;
        let ip: Ipv4Addr = ip.parse().map_err(|_| {
            format!(
                "{s:?}: {ip:?} is not an IPv4 address (the simulated API server serves IPv4 only)"
            )
        })?;
        let bits: u32 = bits
            .parse()
            .ok()
            .filter(|b| (8..=30).contains(b))
            .ok_or_else(|| format!("{s:?}: the prefix length must be between 8 and 30"))?;
        let size = 1u32 << (32 - bits);
        let base = u32::from(ip) & !(size - 1);
        Ok(ServiceCidr {
            base,
            size,
            text: format!("{}/{}", Ipv4Addr::from(base), bits),
        })
    }

    /// The first usable address: the `kubernetes` Service's cluster IP.
    pub fn first(&self) -> Ipv4Addr {
        Ipv4Addr::from(self.base + 1)
    }

    fn contains(&self, ip: u32) -> bool {
        (self.base..self.base + self.size).contains(&ip)
    }
}

impl std::fmt::Display for ServiceCidr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

/// Addresses and ports taken by existing Services.
#[derive(Default)]
pub struct InUse {
    ips: BTreeSet<u32>,
    node_ports: BTreeSet<i64>,
}

impl InUse {
    pub fn from_services<'a>(services: impl Iterator<Item = &'a Value>) -> InUse {
        let mut u = InUse::default();
        for s in services {
            for ip in s
                .pointer("/spec/clusterIPs")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if let Some(ip) = ip.as_str().and_then(|i| i.parse::<Ipv4Addr>().ok()) {
                    u.ips.insert(u32::from(ip));
                }
            }
            for p in s
                .pointer("/spec/ports")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if let Some(n) = p.get("nodePort").and_then(Value::as_i64) {
                    u.node_ports.insert(n);
                }
            }
        }
        u
    }
}

fn invalid(name: &str, field: &str, msg: String) -> ApiError {
    ApiError::invalid(
        "",
        "Service",
        name,
        vec![(field.into(), msg, "FieldValueInvalid")],
    )
}

/// Fill in `spec.clusterIP(s)`, `ipFamilies`, `ipFamilyPolicy`, `internalTrafficPolicy`, node
/// ports and `externalTrafficPolicy` as the Service REST storage does on create.
pub fn allocate(svc: &mut Value, cidr: &ServiceCidr, in_use: &InUse) -> ApiResult<()> {
    let name = crate::apiserver::meta::name(svc).to_string();
    let spec = match svc.get_mut("spec").and_then(Value::as_object_mut) {
        Some(s) => s,
        None => return Ok(()),
    };
    let stype = spec
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("ClusterIP")
        .to_string();
    if stype == "ExternalName" {
        return Ok(());
    }
    let requested = spec
        .get("clusterIP")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let ip = match requested.as_str() {
        "None" => "None".to_string(),
        "" => {
            // The lowest free address after the network address and the `kubernetes` service's .1.
            let free = (2..cidr.size - 1)
                .map(|o| cidr.base + o)
                .find(|ip| !in_use.ips.contains(ip));
            let ip = free.ok_or_else(|| {
                ApiError::internal("failed to allocate a serviceIP: range is full")
            })?;
            Ipv4Addr::from(ip).to_string()
        }
        given => {
            let parsed = given
                .parse::<Ipv4Addr>()
                .map_err(|_| invalid(&name, "spec.clusterIPs[0]", format!("Invalid value: {:?}: must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)", given)))?;
            let n = u32::from(parsed);
            if !cidr.contains(n) {
                return Err(invalid(&name, "spec.clusterIPs", format!("Invalid value: []string{{{:?}}}: failed to allocate IP {}: the provided IP ({}) is not in the valid range. The range of valid IPs is {}", given, given, given, cidr)));
            }
            if in_use.ips.contains(&n) {
                return Err(invalid(&name, "spec.clusterIPs", format!("Invalid value: []string{{{:?}}}: failed to allocate IP {}: provided IP is already allocated", given, given)));
            }
            given.to_string()
        }
    };
    spec.insert("clusterIP".into(), json!(ip));
    spec.insert("clusterIPs".into(), json!([ip]));
    spec.entry("ipFamilies").or_insert_with(|| json!(["IPv4"]));
    spec.entry("ipFamilyPolicy")
        .or_insert_with(|| json!("SingleStack"));
    spec.entry("internalTrafficPolicy")
        .or_insert_with(|| json!("Cluster"));
    if stype == "NodePort" || stype == "LoadBalancer" {
        spec.entry("externalTrafficPolicy")
            .or_insert_with(|| json!("Cluster"));
        if stype == "LoadBalancer" {
            spec.entry("allocateLoadBalancerNodePorts")
                .or_insert_with(|| json!(true));
        }
        // Requested ports are taken first, then the others get the lowest free ones.
        let mut taken = in_use.node_ports.clone();
        let ports = spec.get_mut("ports").and_then(Value::as_array_mut);
        let ports: Vec<&mut Value> = ports.into_iter().flatten().collect();
        for (i, p) in ports.iter().enumerate() {
            if let Some(n) = p.get("nodePort").and_then(Value::as_i64) {
                let field = format!("spec.ports[{}].nodePort", i);
                if !NODE_PORTS.contains(&n) {
                    return Err(invalid(&name, &field, format!("Invalid value: {}: provided port is not in the valid range. The range of valid ports is 30000-32767", n)));
                }
                if !taken.insert(n) {
                    return Err(invalid(
                        &name,
                        &field,
                        format!("Invalid value: {}: provided port is already allocated", n),
                    ));
                }
            }
        }
        for p in ports.into_iter().filter(|p| p.get("nodePort").is_none()) {
            let n = NODE_PORTS
                .clone()
                .find(|n| !taken.contains(n))
                .ok_or_else(|| {
                    ApiError::internal("failed to allocate a nodePort: range is full")
                })?;
            taken.insert(n);
            p["nodePort"] = json!(n);
        }
    }
    Ok(())
}

/// What the Service REST storage's update does after `patchAllocatedValues`
/// (`allocateUpdate`): the IP family fields inferred (`initIPFamilyFields`: SingleStack, the
/// families of the cluster IPs), a cluster IP for a Service that newly needs one, node ports for
/// the ports of a NodePort or LoadBalancer Service that have none. `in_use` excludes the
/// Service itself.
pub fn allocate_update(svc: &mut Value, cidr: &ServiceCidr, in_use: &InUse) -> ApiResult<()> {
    let stype = svc
        .pointer("/spec/type")
        .and_then(Value::as_str)
        .unwrap_or("ClusterIP")
        .to_string();
    if stype == "ExternalName" {
        return Ok(());
    }
    let has_ip = svc
        .pointer("/spec/clusterIP")
        .and_then(Value::as_str)
        .is_some_and(|ip| !ip.is_empty());
    if !has_ip {
        // A Service that had no cluster IP (an ExternalName one) gets one as on create.
        return allocate(svc, cidr, in_use);
    }
    let name = crate::apiserver::meta::name(svc).to_string();
    let Some(spec) = svc.get_mut("spec").and_then(Value::as_object_mut) else {
        return Ok(());
    };
    let ips: Vec<String> = spec
        .get("clusterIPs")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect()
        })
        .unwrap_or_default();
    let families = spec
        .get("ipFamilies")
        .and_then(Value::as_array)
        .map(Vec::len)
        .unwrap_or(0);
    if spec.get("ipFamilyPolicy").is_none_or(Value::is_null) {
        let policy = if ips.len() <= 1 && families <= 1 {
            "SingleStack"
        } else {
            "RequireDualStack"
        };
        spec.insert("ipFamilyPolicy".into(), json!(policy));
    }
    if families == 0 {
        spec.insert("ipFamilies".into(), json!(["IPv4"]));
    }
    if stype == "NodePort" || stype == "LoadBalancer" {
        let mut taken = in_use.node_ports.clone();
        let ports = spec.get_mut("ports").and_then(Value::as_array_mut);
        let ports: Vec<&mut Value> = ports.into_iter().flatten().collect();
        for (i, p) in ports.iter().enumerate() {
            if let Some(n) = p.get("nodePort").and_then(Value::as_i64) {
                if !taken.insert(n) {
                    return Err(invalid(
                        &name,
                        &format!("spec.ports[{i}].nodePort"),
                        format!("Invalid value: {n}: provided port is already allocated"),
                    ));
                }
            }
        }
        for p in ports.into_iter().filter(|p| p.get("nodePort").is_none()) {
            let n = NODE_PORTS
                .clone()
                .find(|n| !taken.contains(n))
                .ok_or_else(|| {
                    ApiError::internal("failed to allocate a nodePort: range is full")
                })?;
            taken.insert(n);
            p["nodePort"] = json!(n);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn svc(spec: Value) -> Value {
        json!({"metadata": {"name": "s"}, "spec": spec})
    }

    #[test]
    fn updates_infer_families_and_allocate_new_node_ports() {
        // A PUT that leaves the families out, then a change to NodePort.
        let in_use = InUse::from_services(std::iter::empty());
        let mut s = svc(
            json!({"clusterIP": "10.96.0.2", "clusterIPs": ["10.96.0.2"], "ports": [{"port": 80}]}),
        );
        allocate_update(&mut s, &ServiceCidr::default(), &in_use).unwrap();
        assert_eq!(s["spec"]["ipFamilies"], json!(["IPv4"]));
        assert_eq!(s["spec"]["ipFamilyPolicy"], "SingleStack");
        assert!(s["spec"]["ports"][0].get("nodePort").is_none());
        s["spec"]["type"] = json!("NodePort");
        allocate_update(&mut s, &ServiceCidr::default(), &in_use).unwrap();
        assert_eq!(s["spec"]["ports"][0]["nodePort"], 30000);
    }

    #[test]
    fn cluster_ips_are_unique_and_defaults_are_set() {
        let existing = [
            svc(json!({"clusterIPs": ["10.96.0.1"]})),
            svc(json!({"clusterIPs": ["10.96.0.2"]})),
        ];
        let used = InUse::from_services(existing.iter());
        let mut s = svc(json!({"type": "ClusterIP", "ports": [{"port": 80}]}));
        allocate(&mut s, &ServiceCidr::default(), &used).unwrap();
        assert_eq!(s["spec"]["clusterIP"], "10.96.0.3");
        assert_eq!(s["spec"]["clusterIPs"], json!(["10.96.0.3"]));
        assert_eq!(
            (
                s["spec"]["ipFamilies"].clone(),
                s["spec"]["ipFamilyPolicy"].clone()
            ),
            (json!(["IPv4"]), json!("SingleStack"))
        );
        assert!(s["spec"].get("ports").unwrap()[0].get("nodePort").is_none());
        let mut taken = svc(json!({"clusterIP": "10.96.0.2"}));
        let e = allocate(&mut taken, &ServiceCidr::default(), &used).unwrap_err();
        assert!(
            e.message.contains("provided IP is already allocated"),
            "{}",
            e.message
        );
    }

    #[test]
    fn node_ports_are_allocated_for_node_port_and_load_balancer() {
        let existing = [svc(
            json!({"clusterIPs": ["10.96.0.9"], "ports": [{"nodePort": 30000}]}),
        )];
        let used = InUse::from_services(existing.iter());
        let mut s = svc(
            json!({"type": "LoadBalancer", "ports": [{"port": 80}, {"port": 443, "nodePort": 30001}, {"port": 8080}]}),
        );
        allocate(&mut s, &ServiceCidr::default(), &used).unwrap();
        let ports: Vec<i64> = s["spec"]["ports"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["nodePort"].as_i64().unwrap())
            .collect();
        assert_eq!(ports, vec![30002, 30001, 30003]);
        let mut dup = svc(json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 30000}]}));
        assert!(allocate(&mut dup, &ServiceCidr::default(), &used)
            .unwrap_err()
            .message
            .contains(
                "spec.ports[0].nodePort: Invalid value: 30000: provided port is already allocated"
            ));
        assert_eq!(s["spec"]["allocateLoadBalancerNodePorts"], true);
        let mut out_of_range =
            svc(json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 80}]}));
        assert_eq!(
            allocate(&mut out_of_range, &ServiceCidr::default(), &used)
                .unwrap_err()
                .code,
            422
        );
    }

    #[test]
    fn headless_and_external_name_get_no_address() {
        let used = InUse::default();
        let mut h = svc(json!({"clusterIP": "None"}));
        allocate(&mut h, &ServiceCidr::default(), &used).unwrap();
        assert_eq!(h["spec"]["clusterIPs"], json!(["None"]));
        let mut e = svc(json!({"type": "ExternalName", "externalName": "x.example"}));
        allocate(&mut e, &ServiceCidr::default(), &used).unwrap();
        assert!(e["spec"].get("clusterIP").is_none());
    }
}

#[cfg(test)]
mod cidr_tests {
    use super::*;

    #[test]
    fn a_configured_range_allocates_from_itself_and_names_itself() {
        let cidr = ServiceCidr::parse("10.0.0.0/24").unwrap();
        assert_eq!(cidr.first(), Ipv4Addr::new(10, 0, 0, 1));
        let used = InUse::from_services([json!({"spec": {"clusterIPs": ["10.0.0.1"]}})].iter());
        let mut s = json!({"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}});
        allocate(&mut s, &cidr, &used).unwrap();
        assert_eq!(s["spec"]["clusterIP"], "10.0.0.2");
        let mut outside = json!({"metadata": {"name": "o"}, "spec": {"clusterIP": "10.96.0.9"}});
        let e = allocate(&mut outside, &cidr, &used).unwrap_err();
        assert!(
            e.message.contains("The range of valid IPs is 10.0.0.0/24"),
            "{}",
            e.message
        );
    }

    #[test]
    fn bad_ranges_are_refused_with_the_reason() {
        for (bad, why) in [
            ("10.0.0.0", "not a CIDR"),
            ("fd00::/108", "IPv4"),
            ("10.0.0.0/31", "between 8 and 30"),
        ] {
            let e = ServiceCidr::parse(bad).unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
        }
        assert_eq!(
            ServiceCidr::parse("10.0.0.7/24").unwrap().to_string(),
            "10.0.0.0/24"
        );
    }
}
