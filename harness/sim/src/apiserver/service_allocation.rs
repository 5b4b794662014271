//! What the apiserver allocates for a new Service: a cluster IP from the service CIDR
//! (10.96.0.0/12, kubeadm's default) and node ports from 30000-32767, never one still in use.
//!
//! The real allocators pick at random (a bitmap in etcd); the sim takes the lowest free address
//! and port so runs are deterministic. What is in use is read from the stored Services.

use crate::apiserver::status::{ApiError, ApiResult};
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::net::Ipv4Addr;

/// 10.96.0.0/12
const CIDR_BASE: u32 = 0x0A60_0000;
const CIDR_SIZE: u32 = 1 << 20;
pub const NODE_PORTS: std::ops::RangeInclusive<i64> = 30000..=32767;

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
pub fn allocate(svc: &mut Value, in_use: &InUse) -> ApiResult<()> {
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
            let free = (2..CIDR_SIZE - 1)
                .map(|o| CIDR_BASE + o)
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
            if !(CIDR_BASE..CIDR_BASE + CIDR_SIZE).contains(&n) {
                return Err(invalid(&name, "spec.clusterIPs", format!("Invalid value: []string{{{:?}}}: failed to allocate IP {}: the provided IP ({}) is not in the valid range. The range of valid IPs is 10.96.0.0/12", given, given, given)));
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
pub fn allocate_update(svc: &mut Value, in_use: &InUse) -> ApiResult<()> {
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
        return allocate(svc, in_use);
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
        allocate_update(&mut s, &in_use).unwrap();
        assert_eq!(s["spec"]["ipFamilies"], json!(["IPv4"]));
        assert_eq!(s["spec"]["ipFamilyPolicy"], "SingleStack");
        assert!(s["spec"]["ports"][0].get("nodePort").is_none());
        s["spec"]["type"] = json!("NodePort");
        allocate_update(&mut s, &in_use).unwrap();
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
        allocate(&mut s, &used).unwrap();
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
        let e = allocate(&mut taken, &used).unwrap_err();
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
        allocate(&mut s, &used).unwrap();
        let ports: Vec<i64> = s["spec"]["ports"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["nodePort"].as_i64().unwrap())
            .collect();
        assert_eq!(ports, vec![30002, 30001, 30003]);
        let mut dup = svc(json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 30000}]}));
        assert!(allocate(&mut dup, &used).unwrap_err().message.contains(
            "spec.ports[0].nodePort: Invalid value: 30000: provided port is already allocated"
        ));
        assert_eq!(s["spec"]["allocateLoadBalancerNodePorts"], true);
        let mut out_of_range =
            svc(json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 80}]}));
        assert_eq!(allocate(&mut out_of_range, &used).unwrap_err().code, 422);
    }

    #[test]
    fn headless_and_external_name_get_no_address() {
        let used = InUse::default();
        let mut h = svc(json!({"clusterIP": "None"}));
        allocate(&mut h, &used).unwrap();
        assert_eq!(h["spec"]["clusterIPs"], json!(["None"]));
        let mut e = svc(json!({"type": "ExternalName", "externalName": "x.example"}));
        allocate(&mut e, &used).unwrap();
        assert!(e["spec"].get("clusterIP").is_none());
    }
}
