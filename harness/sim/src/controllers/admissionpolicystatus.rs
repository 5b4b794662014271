//! kube-controller-manager's ValidatingAdmissionPolicy status controller
//! (pkg/controller/validatingadmissionpolicystatus/controller.go): a policy whose generation is
//! unobserved gets `status.observedGeneration` and the type checking result, server-side
//! applied (forced) by `validatingadmissionpolicy-status`. **Simplified**: the CEL expressions
//! are not type-checked, so `typeChecking` never carries expression warnings.

use super::queue::{Key, Reconciler, Watches};
use crate::apiserver::meta;
use crate::internal::Internal;
use serde_json::{json, Value};
use std::time::Duration;

const MANAGER: &str = "validatingadmissionpolicy-status";

pub struct PolicyStatusController {
    client: Internal,
}

impl PolicyStatusController {
    pub fn new(client: Internal) -> Self {
        PolicyStatusController { client }
    }
}

fn generation(v: &Value, at: &str) -> i64 {
    v.pointer(at).and_then(Value::as_i64).unwrap_or(0)
}

impl Reconciler for PolicyStatusController {
    fn client(&self) -> &Internal {
        &self.client
    }

    fn watches(&self) -> Watches {
        Watches {
            group: "admissionregistration.k8s.io",
            plural: "validatingadmissionpolicies",
            kind: "ValidatingAdmissionPolicy",
            children: &[],
            selects_pods: None,
        }
    }

    fn reconcile(&mut self, (_, name): &Key) -> Option<Duration> {
        let policy = self.client.get(
            "admissionregistration.k8s.io",
            "validatingadmissionpolicies",
            "",
            name,
        )?;
        let gen = generation(&policy, "/metadata/generation");
        if gen <= generation(&policy, "/status/observedGeneration") {
            return None;
        }
        let body = json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": meta::name(&policy)},
            "status": {"observedGeneration": gen, "typeChecking": {}},
        });
        let _ = self.client.apply_status(
            "admissionregistration.k8s.io",
            "validatingadmissionpolicies",
            "",
            name,
            &body,
            MANAGER,
        );
        None
    }
}
