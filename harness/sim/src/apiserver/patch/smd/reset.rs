//! The fields each endpoint's strategy resets (`GetResetFields` of `pkg/registry/<group>/<resource>
//! /strategy.go`, apiextensions-apiserver's and kube-aggregator's strategies): the field manager
//! never records them for that endpoint's writers, and their changes take no ownership away.
//! A main resource with a status subresource resets `status`; its status endpoint resets the
//! rest (`spec`, for some `metadata` or parts of it too).

use super::fieldpath::{path, Set};

/// The reset fields of `subresource` (None: the main resource) of `group`'s `kind`, or None
/// when the strategy resets nothing.
pub(crate) fn reset_fields(
    group: &str,
    kind: &str,
    subresource: Option<&str>,
    custom_with_status: bool,
) -> Option<Set> {
    let paths: &[&[&str]] = match (group, kind, subresource) {
        // certificates/certificates/strategy.go: the spec is the requester's, set by the server.
        ("certificates.k8s.io", "CertificateSigningRequest", None) => &[&["spec"], &["status"]],
        ("certificates.k8s.io", "CertificateSigningRequest", Some("status")) => {
            &[&["spec"], &["status", "conditions"]]
        }
        ("certificates.k8s.io", "CertificateSigningRequest", Some("approval")) => {
            &[&["spec"], &["status", "certificate"]]
        }
        ("", "Pod", Some("status")) => &[
            &["spec"],
            &["metadata", "deletionTimestamp"],
            &["metadata", "ownerReferences"],
        ],
        ("apps", "Deployment", Some("status")) => &[&["spec"], &["metadata", "labels"]],
        (
            "resource.k8s.io"
            | "storage.k8s.io"
            | "flowcontrol.apiserver.k8s.io"
            | "admissionregistration.k8s.io"
            | "apiextensions.k8s.io"
            | "apiregistration.k8s.io"
            | "internal.apiserver.k8s.io"
            | "storagemigration.k8s.io",
            "ResourceClaim"
            | "DeviceTaintRule"
            | "VolumeAttachment"
            | "FlowSchema"
            | "PriorityLevelConfiguration"
            | "ValidatingAdmissionPolicy"
            | "MutatingAdmissionPolicy"
            | "CustomResourceDefinition"
            | "APIService"
            | "StorageVersion"
            | "StorageVersionMigration",
            Some("status"),
        ) => &[&["metadata"], &["spec"]],
        (_, k, None) if has_status(group, k) => &[&["status"]],
        (_, k, Some("status")) if has_status(group, k) => &[&["spec"]],
        (_, _, None) if custom_with_status => &[&["status"]],
        (_, _, Some("status")) if custom_with_status => &[&["spec"]],
        _ => return None,
    };
    Some(paths.iter().map(|p| path(p)).collect())
}

/// Kinds whose strategies reset fields (they have a status subresource).
fn has_status(group: &str, kind: &str) -> bool {
    matches!(
        (group, kind),
        (
            "",
            "Pod"
                | "Node"
                | "Service"
                | "Namespace"
                | "PersistentVolume"
                | "PersistentVolumeClaim"
                | "ReplicationController"
                | "ResourceQuota"
        ) | (
            "apps",
            "Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet"
        ) | ("batch", "Job" | "CronJob")
            | ("autoscaling", "HorizontalPodAutoscaler")
            | ("policy", "PodDisruptionBudget")
            | ("networking.k8s.io", "Ingress" | "ServiceCIDR")
            | ("storage.k8s.io", "VolumeAttachment")
            | ("resource.k8s.io", "ResourceClaim" | "DeviceTaintRule")
            | (
                "flowcontrol.apiserver.k8s.io",
                "FlowSchema" | "PriorityLevelConfiguration"
            )
            | (
                "admissionregistration.k8s.io",
                "ValidatingAdmissionPolicy" | "MutatingAdmissionPolicy"
            )
            | ("apiextensions.k8s.io", "CustomResourceDefinition")
            | ("apiregistration.k8s.io", "APIService")
            | ("internal.apiserver.k8s.io", "StorageVersion")
            | ("storagemigration.k8s.io", "StorageVersionMigration")
            | ("certificates.k8s.io", "PodCertificateRequest")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reset_fields_per_endpoint() {
        let main = reset_fields("apps", "Deployment", None, false).unwrap();
        assert!(main.has(&path(&["status"])));
        let status = reset_fields("apps", "Deployment", Some("status"), false).unwrap();
        assert!(status.has(&path(&["metadata", "labels"])) && status.has(&path(&["spec"])));
        assert!(reset_fields("", "ConfigMap", None, false).is_none());
        assert_eq!(
            reset_fields("example.com", "Widget", None, true),
            Some([path(&["status"])].into_iter().collect())
        );
        assert!(reset_fields("example.com", "Widget", None, false).is_none());
        let claim =
            reset_fields("resource.k8s.io", "ResourceClaim", Some("status"), false).unwrap();
        assert!(claim.has(&path(&["metadata"])));
    }
}
