//! The PersistentVolume binder's first rule (pkg/controller/volume/persistentvolume/
//! pv_controller.go `syncVolume`): a volume no claim references is `Available`, written with
//! UpdateStatus (`updateVolumePhase`). Binding claims to volumes is not modelled here: the
//! simulated Longhorn provisions volumes already bound to their claims (`cluster::storage`).

use super::queue::{Key, Reconciler, Watches};
use crate::apiserver::meta;
use crate::internal::Internal;
use serde_json::{json, Value};
use std::time::Duration;

pub struct VolumeController {
    client: Internal,
}

impl VolumeController {
    pub fn new(client: Internal) -> Self {
        VolumeController { client }
    }
}

/// The phase `syncVolume` gives a volume, when this model decides it.
fn wanted_phase(pv: &Value) -> Option<&'static str> {
    let unused = pv.pointer("/spec/claimRef").is_none_or(Value::is_null);
    (unused && !meta::is_deleting(pv)).then_some("Available")
}

impl Reconciler for VolumeController {
    fn client(&self) -> &Internal {
        &self.client
    }

    fn watches(&self) -> Watches {
        Watches {
            group: "",
            plural: "persistentvolumes",
            kind: "PersistentVolume",
            children: &[],
            selects_pods: None,
        }
    }

    fn reconcile(&mut self, (_, name): &Key) -> Option<Duration> {
        let pv = self.client.get("", "persistentvolumes", "", name)?;
        let phase = wanted_phase(&pv)?;
        if meta::str_at(&pv, "/status/phase") == Some(phase) {
            return None;
        }
        let mut next = (*pv).clone();
        if !next.get("status").is_some_and(Value::is_object) {
            next["status"] = json!({});
        }
        next["status"]["phase"] = json!(phase);
        if let Some(s) = next["status"].as_object_mut() {
            s.shift_remove("message");
        }
        // A conflict brings the newer version's event, and the key, back.
        let _ = self
            .client
            .update_status("", "persistentvolumes", "", name, next);
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_unclaimed_live_volumes_become_available() {
        let pv = json!({"metadata": {"name": "v"}, "spec": {}, "status": {"phase": "Pending"}});
        assert_eq!(wanted_phase(&pv), Some("Available"));
        let claimed = json!({"metadata": {"name": "v"}, "spec": {"claimRef": {"name": "c"}}});
        assert_eq!(wanted_phase(&claimed), None);
        let deleting = json!({"metadata": {"name": "v", "deletionTimestamp": "2026-01-01T00:00:00Z"}, "spec": {}});
        assert_eq!(wanted_phase(&deleting), None);
    }
}
