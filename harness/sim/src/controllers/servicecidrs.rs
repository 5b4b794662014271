//! kube-controller-manager's ServiceCIDR controller (pkg/controller/servicecidrs/
//! servicecidrs_controller.go): a live ServiceCIDR gets the protection finalizer (a strategic
//! merge patch) and the Ready condition (server-side applied to status by
//! `service-cidr-controller`); a deleted one keeps the finalizer while an allocated IPAddress
//! only it contains exists (Ready False, Terminating), and loses it 10 s after its deletion so
//! the allocators have seen it go.

use super::queue::{Key, Reconciler, Watches};
use crate::apiserver::meta;
use crate::apiserver::store::StoreEvent;
use crate::internal::Internal;
use crate::timing::{self, Timing};
use serde_json::{json, Value};
use std::net::IpAddr;
use std::time::Duration;

pub const FINALIZER: &str = "networking.k8s.io/service-cidr-finalizer";
const MANAGER: &str = "service-cidr-controller";
/// `deletionGracePeriod`.
const DELETION_GRACE: Duration = Duration::from_secs(10);
/// The labels of the IPAddresses the Service IP allocators create.
const MANAGED_BY: (&str, &str) = ("ipaddress.kubernetes.io/managed-by", "ipallocator.k8s.io");

pub struct ServiceCidrController {
    client: Internal,
    timing: Timing,
}

impl ServiceCidrController {
    pub fn new(client: Internal, timing: Timing) -> Self {
        ServiceCidrController { client, timing }
    }

    fn cidrs(&self) -> Vec<(String, Vec<Prefix>)> {
        self.client
            .list("networking.k8s.io", "servicecidrs", None, &|_| true)
            .iter()
            .map(|c| (meta::name(c).to_string(), prefixes(c)))
            .collect()
    }

    /// `canDeleteCIDR`: another ServiceCIDR contains each of its prefixes, or no allocated
    /// address has it as its only container.
    fn can_delete(&self, cidr: &Value) -> bool {
        let name = meta::name(cidr);
        let all = self.cidrs();
        let containing = |p: &Prefix| {
            all.iter()
                .filter(|(_, ps)| ps.iter().any(|q| q.contains_prefix(p)))
                .map(|(n, _)| n.as_str())
                .collect::<Vec<_>>()
        };
        let has_parent = prefixes(cidr).iter().all(|p| {
            let c = containing(p);
            !(c.is_empty() || c == [name])
        });
        if has_parent {
            return true;
        }
        let allocated = self
            .client
            .list("networking.k8s.io", "ipaddresses", None, &|ip| {
                meta::labels(ip)
                    .and_then(|l| l.get(MANAGED_BY.0))
                    .and_then(Value::as_str)
                    == Some(MANAGED_BY.1)
            });
        !allocated.iter().any(|ip| {
            let Ok(addr) = meta::name(ip).parse::<IpAddr>() else {
                return false;
            };
            let holders: Vec<&str> = all
                .iter()
                .filter(|(_, ps)| ps.iter().any(|p| p.contains(addr)))
                .map(|(n, _)| n.as_str())
                .collect();
            holders == [name]
        })
    }

    /// `updateConditionIfNeeded`: applied (forced) when type, status, reason or message differ.
    fn set_ready(&self, cidr: &Value, status: &str, reason: &str, message: &str) {
        let current = cidr
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .and_then(|cs| cs.iter().find(|c| c["type"] == "Ready"));
        let same = current.is_some_and(|c| {
            c["status"] == status
                && c.get("reason").and_then(Value::as_str).unwrap_or("") == reason
                && c.get("message").and_then(Value::as_str).unwrap_or("") == message
        });
        if same {
            return;
        }
        // The apply configuration names every member, an empty reason included.
        let condition = json!({"type": "Ready", "status": status, "reason": reason,
            "message": message, "lastTransitionTime": self.client.clock().now_rfc3339()});
        let body = json!({"apiVersion": "networking.k8s.io/v1", "kind": "ServiceCIDR",
            "metadata": {"name": meta::name(cidr)}, "status": {"conditions": [condition]}});
        let _ = self.client.apply_status(
            "networking.k8s.io",
            "servicecidrs",
            "",
            meta::name(cidr),
            &body,
            MANAGER,
        );
    }
}

/// An IP prefix: the network address and the prefix length, in a 128-bit space (IPv4 mapped).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Prefix {
    v6: bool,
    addr: u128,
    len: u32,
}

impl Prefix {
    fn parse(s: &str) -> Option<Prefix> {
        let (a, l) = s.split_once('/')?;
        let ip: IpAddr = a.parse().ok()?;
        let len: u32 = l.parse().ok()?;
        let (v6, bits, max) = match ip {
            IpAddr::V4(v4) => (false, u32::from(v4) as u128, 32),
            IpAddr::V6(v6) => (true, u128::from(v6), 128),
        };
        (len <= max).then_some(Prefix {
            v6,
            addr: bits,
            len: len + (128 - max),
        })
    }

    fn mask(len: u32) -> u128 {
        if len == 0 {
            0
        } else {
            u128::MAX << (128 - len)
        }
    }

    fn contains(&self, ip: IpAddr) -> bool {
        let (v6, bits) = match ip {
            IpAddr::V4(v4) => (false, u32::from(v4) as u128),
            IpAddr::V6(v6) => (true, u128::from(v6)),
        };
        v6 == self.v6 && bits & Self::mask(self.len) == self.addr & Self::mask(self.len)
    }

    fn contains_prefix(&self, other: &Prefix) -> bool {
        other.v6 == self.v6
            && self.len <= other.len
            && other.addr & Self::mask(self.len) == self.addr & Self::mask(self.len)
    }
}

fn prefixes(cidr: &Value) -> Vec<Prefix> {
    cidr.pointer("/spec/cidrs")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter_map(Prefix::parse)
        .collect()
}

impl Reconciler for ServiceCidrController {
    fn client(&self) -> &Internal {
        &self.client
    }

    fn watches(&self) -> Watches {
        Watches {
            group: "networking.k8s.io",
            plural: "servicecidrs",
            kind: "ServiceCIDR",
            children: &[],
            selects_pods: None,
        }
    }

    /// Any ServiceCIDR or IPAddress change may unblock a deletion: every ServiceCIDR then.
    fn keys_of(&self, ev: &StoreEvent, out: &mut Vec<Key>) {
        if ev.key.group != "networking.k8s.io" {
            return;
        }
        match ev.key.plural.as_str() {
            "servicecidrs" | "ipaddresses" => {
                for k in self.all_keys() {
                    if !out.contains(&k) {
                        out.push(k);
                    }
                }
            }
            _ => {}
        }
    }

    fn reconcile(&mut self, (_, name): &Key) -> Option<Duration> {
        let cidr = self
            .client
            .get("networking.k8s.io", "servicecidrs", "", name)?;
        let has_finalizer = meta::finalizers(&cidr).iter().any(|f| f == FINALIZER);
        if let Some(deleted) =
            meta::str_at(&cidr, "/metadata/deletionTimestamp").and_then(timing::parse_time)
        {
            if !self.can_delete(&cidr) {
                self.set_ready(
                    &cidr,
                    "False",
                    "Terminating",
                    "There are still IPAddresses referencing the ServiceCIDR, please remove them or create a new ServiceCIDR",
                );
                return None;
            }
            let since = (chrono::Utc::now() - deleted).to_std().unwrap_or_default();
            let grace = self.timing.s(DELETION_GRACE);
            if since < grace {
                return Some(grace - since);
            }
            if has_finalizer {
                let _ = self.client.strategic(
                    "networking.k8s.io",
                    "servicecidrs",
                    "",
                    name,
                    &json!({"metadata": {"$deleteFromPrimitiveList/finalizers": [FINALIZER]}}),
                );
            }
            return None;
        }
        if !has_finalizer {
            let _ = self.client.strategic(
                "networking.k8s.io",
                "servicecidrs",
                "",
                name,
                &json!({"metadata": {"finalizers": [FINALIZER]}}),
            );
        }
        let cidr = self
            .client
            .get("networking.k8s.io", "servicecidrs", "", name)?;
        self.set_ready(&cidr, "True", "", "Kubernetes Service CIDR is ready");
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_contain_addresses_and_prefixes_of_their_family() {
        let p = Prefix::parse("10.96.0.0/12").unwrap();
        assert!(p.contains("10.100.1.2".parse().unwrap()));
        assert!(!p.contains("10.112.0.1".parse().unwrap()));
        assert!(!p.contains("::1".parse().unwrap()));
        assert!(p.contains_prefix(&Prefix::parse("10.97.0.0/24").unwrap()));
        assert!(!Prefix::parse("10.97.0.0/24").unwrap().contains_prefix(&p));
        let v6 = Prefix::parse("fd00::/108").unwrap();
        assert!(v6.contains("fd00::5".parse().unwrap()));
        assert!(Prefix::parse("10.0.0.0/33").is_none());
    }
}
