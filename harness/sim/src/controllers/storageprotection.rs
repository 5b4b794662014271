//! The storage object in-use protection loops of kube-controller-manager
//! (pkg/controller/volume/pvcprotection, pvprotection, vacprotection): the
//! StorageObjectInUseProtection admission plugin gives every new PersistentVolumeClaim,
//! PersistentVolume and VolumeAttributesClass its protection finalizer; these loops add it to
//! one that lacks it and take it off a deleted one nothing uses any more, so the delete
//! completes. Both writes are plain Updates, as upstream's are.

use super::queue::{key_of, Key, Reconciler, Watches};
use crate::apiserver::meta;
use crate::apiserver::store::StoreEvent;
use crate::internal::Internal;
use serde_json::Value;
use std::time::Duration;

pub use crate::apiserver::admission::storage_protection::{
    Protected, PVC_PROTECTION, PV_PROTECTION, VAC_PROTECTION,
};

pub struct ProtectionController {
    client: Internal,
    what: Protected,
}

impl ProtectionController {
    pub fn new(client: Internal, what: Protected) -> Self {
        ProtectionController { client, what }
    }

    /// `isBeingUsed` of each loop.
    fn in_use(&self, obj: &Value) -> bool {
        let name = meta::name(obj);
        match self.what {
            // A scheduled pod naming the claim in a volume (`podUsesPVC`).
            Protected::Claim => !self
                .client
                .list("", "pods", Some(meta::namespace(obj)), &|p| {
                    pod_uses_claim(p, name)
                })
                .is_empty(),
            // Bound, as the PV controller records it.
            Protected::Volume => meta::str_at(obj, "/status/phase") == Some("Bound"),
            // Named by a volume or a claim (`getPVReferencedVACNames`, `getPVCReferencedVACNames`).
            Protected::AttributesClass => {
                !self
                    .client
                    .list("", "persistentvolumes", None, &|pv| {
                        pv_attributes_classes(pv).contains(&name)
                    })
                    .is_empty()
                    || !self
                        .client
                        .list("", "persistentvolumeclaims", None, &|pvc| {
                            pvc_attributes_classes(pvc).contains(&name)
                        })
                        .is_empty()
            }
        }
    }
}

/// `podUsesPVC`: only a pod bound to a node holds its claims (its ephemeral volumes' claims are
/// named `<pod>-<volume>`).
fn pod_uses_claim(pod: &Value, claim: &str) -> bool {
    if meta::str_at(pod, "/spec/nodeName").unwrap_or("").is_empty() {
        return false;
    }
    let shut_down = matches!(
        meta::str_at(pod, "/status/phase"),
        Some("Succeeded" | "Failed")
    );
    pod.pointer("/spec/volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|v| {
            v.pointer("/persistentVolumeClaim/claimName")
                .and_then(Value::as_str)
                == Some(claim)
                || (!shut_down
                    && v.get("ephemeral").is_some()
                    && format!(
                        "{}-{}",
                        meta::name(pod),
                        v.get("name").and_then(Value::as_str).unwrap_or("")
                    ) == claim)
        })
}

fn pv_attributes_classes(pv: &Value) -> Vec<&str> {
    meta::str_at(pv, "/spec/volumeAttributesClassName")
        .filter(|s| !s.is_empty())
        .into_iter()
        .collect()
}

fn pvc_attributes_classes(pvc: &Value) -> Vec<&str> {
    [
        "/spec/volumeAttributesClassName",
        "/status/currentVolumeAttributesClassName",
        "/status/modifyVolumeStatus/targetVolumeAttributesClassName",
    ]
    .into_iter()
    .filter_map(|p| meta::str_at(pvc, p))
    .filter(|s| !s.is_empty())
    .collect()
}

impl Reconciler for ProtectionController {
    fn client(&self) -> &Internal {
        &self.client
    }

    fn watches(&self) -> Watches {
        let (group, plural, kind) = self.what.resource();
        Watches {
            group,
            plural,
            kind,
            children: &[],
            selects_pods: None,
        }
    }

    /// Its own objects, and what may stop using one: a pod's claims, a claim's or volume's
    /// attributes classes.
    fn keys_of(&self, ev: &StoreEvent, out: &mut Vec<Key>) {
        let (group, plural, _) = self.what.resource();
        let objs = [Some(&ev.object), ev.prev.as_ref()];
        let objs = objs.into_iter().flatten();
        if ev.key.group == group && ev.key.plural == plural {
            out.push(key_of(&ev.object));
            return;
        }
        let mut push = |ns: &str, name: &str| {
            let k = (ns.to_string(), name.to_string());
            if !out.contains(&k) {
                out.push(k);
            }
        };
        match (self.what, ev.key.group.as_str(), ev.key.plural.as_str()) {
            (Protected::Claim, "", "pods") => {
                for pod in objs {
                    for v in pod
                        .pointer("/spec/volumes")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                    {
                        if let Some(c) = v
                            .pointer("/persistentVolumeClaim/claimName")
                            .and_then(Value::as_str)
                        {
                            push(meta::namespace(pod), c);
                        } else if v.get("ephemeral").is_some() {
                            let vol = v.get("name").and_then(Value::as_str).unwrap_or("");
                            push(meta::namespace(pod), &format!("{}-{vol}", meta::name(pod)));
                        }
                    }
                }
            }
            (Protected::AttributesClass, "", "persistentvolumes") => {
                for pv in objs {
                    for c in pv_attributes_classes(pv) {
                        push("", c);
                    }
                }
            }
            (Protected::AttributesClass, "", "persistentvolumeclaims") => {
                for pvc in objs {
                    for c in pvc_attributes_classes(pvc) {
                        push("", c);
                    }
                }
            }
            _ => {}
        }
    }

    fn reconcile(&mut self, (ns, name): &Key) -> Option<Duration> {
        let (group, plural, _) = self.what.resource();
        let obj = self.client.get(group, plural, ns, name)?;
        let finalizer = self.what.finalizer();
        let mut fins = meta::finalizers(&obj);
        let has = fins.iter().any(|f| f == finalizer);
        let deleting = meta::is_deleting(&obj);
        if deleting && has && !self.in_use(&obj) {
            fins.retain(|f| f != finalizer);
        } else if !deleting && !has {
            fins.push(finalizer.to_string());
        } else {
            return None;
        }
        let mut next = (*obj).clone();
        meta::set_finalizers(&mut next, &fins);
        // A conflict means a newer version, whose event brings the key back.
        let _ = self.client.update(group, plural, ns, name, next);
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_scheduled_pods_hold_their_claims() {
        let pod = |node: &str| {
            json!({"metadata": {"name": "p", "namespace": "d"}, "spec": {"nodeName": node,
                "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "c"}},
                            {"name": "scratch", "ephemeral": {}}]}})
        };
        assert!(pod_uses_claim(&pod("n1"), "c"));
        assert!(pod_uses_claim(&pod("n1"), "p-scratch"));
        assert!(!pod_uses_claim(&pod("n1"), "other"));
        assert!(!pod_uses_claim(&pod(""), "c"));
    }

    #[test]
    fn claims_name_attributes_classes_in_spec_and_status() {
        let pvc = json!({"spec": {"volumeAttributesClassName": "gold"},
            "status": {"currentVolumeAttributesClassName": "silver",
                       "modifyVolumeStatus": {"targetVolumeAttributesClassName": ""}}});
        assert_eq!(pvc_attributes_classes(&pvc), ["gold", "silver"]);
        assert_eq!(
            Protected::of("storage.k8s.io", "volumeattributesclasses"),
            Some(Protected::AttributesClass)
        );
        assert_eq!(Protected::of("", "pods"), None);
    }
}
