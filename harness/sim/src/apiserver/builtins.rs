//! The built-in resources a Kubernetes 1.35 apiserver serves, derived from k8s-openapi.
//!
//! Group, version, kind, plural and scope come from each type's `k8s_openapi::Resource`
//! metadata; whether it can be listed comes from `ListableResource`; the body check is the type's
//! own serde decoding. What k8s-openapi does not describe (short names, categories,
//! subresources, verbs of the few non-CRUD resources) is the small table `EXTRAS`.
//!
//! The workspace builds k8s-openapi with its `latest` feature (1.37), so the type list below is the
//! GA set of 1.35 (k8s-openapi's `v1_35` module minus alpha and beta versions): the five kinds
//! that went GA after 1.35 (MutatingAdmissionPolicy(+Binding), ClusterTrustBundle,
//! PodCertificateRequest, DeviceTaintRule, StorageVersionMigration) are not served.

use k8s_openapi::schemars::{JsonSchema, Schema, SchemaGenerator};
use k8s_openapi::{
    ClusterResourceScope, ListableResource, NamespaceResourceScope, Resource, SubResourceScope,
};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use std::borrow::Cow;
use std::marker::PhantomData;

/// Decodes a body into the Go-equivalent type and re-encodes it: only known fields survive.
pub type RoundTrip = fn(&Value) -> Result<Value, String>;

/// One built-in type as k8s-openapi describes it.
#[derive(Debug, Clone, Copy)]
pub struct BuiltinType {
    pub group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
    /// URL path segment: the plural for resources, the subresource name for subresource kinds.
    pub plural: &'static str,
    pub scope: Scope,
    pub listable: bool,
    pub round_trip: RoundTrip,
    /// The OpenAPI definition name (`io.k8s.api.core.v1.Pod`), from the type's `JsonSchema`.
    pub schema_name: fn() -> Cow<'static, str>,
    /// Adds the type's schema (and every schema it references) to a generator's definitions.
    pub schema: fn(&mut SchemaGenerator) -> Schema,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Namespaced,
    Cluster,
    /// A kind only served as a subresource (Scale, Eviction, TokenRequest).
    Subresource,
}

/// Maps k8s-openapi's scope marker types onto `Scope`.
pub trait ScopeOf {
    const SCOPE: Scope;
}
impl ScopeOf for NamespaceResourceScope {
    const SCOPE: Scope = Scope::Namespaced;
}
impl ScopeOf for ClusterResourceScope {
    const SCOPE: Scope = Scope::Cluster;
}
impl ScopeOf for SubResourceScope {
    const SCOPE: Scope = Scope::Subresource;
}

fn round_trip<T: DeserializeOwned + Serialize>(obj: &Value) -> Result<Value, String> {
    // Decoding from a borrowed value: no copy of the whole object first.
    let typed = <T as serde::Deserialize>::deserialize(obj).map_err(|e| e.to_string())?;
    serde_json::to_value(&typed).map_err(|e| e.to_string())
}

impl BuiltinType {
    fn of<T>(listable: bool) -> Self
    where
        T: Resource + DeserializeOwned + Serialize + JsonSchema,
        T::Scope: ScopeOf,
    {
        BuiltinType {
            group: T::GROUP,
            version: T::VERSION,
            kind: T::KIND,
            plural: T::URL_PATH_SEGMENT,
            scope: <T::Scope as ScopeOf>::SCOPE,
            listable,
            round_trip: round_trip::<T>,
            schema_name: T::schema_name,
            schema: |generator| generator.subschema_for::<T>(),
        }
    }
}

/// Tells at compile time whether a concrete type implements `ListableResource` (method
/// resolution prefers the by-value impl, which exists only for listable types).
pub struct Probe<T>(PhantomData<T>);
pub trait IsListable {
    fn listable(&self) -> bool {
        true
    }
}
impl<T: ListableResource> IsListable for Probe<T> {}
pub trait NotListable {
    fn listable(&self) -> bool {
        false
    }
}
impl<T> NotListable for &Probe<T> {}

macro_rules! builtin_types {
    ($($t:ty),* $(,)?) => {
        vec![$({
            #[allow(unused_imports)]
            use $crate::apiserver::builtins::{IsListable as _, NotListable as _};
            BuiltinType::of::<$t>((&$crate::apiserver::builtins::Probe::<$t>(PhantomData)).listable())
        }),*]
    };
}

/// Every GA type of Kubernetes 1.35, resources and subresource kinds alike.
pub fn all() -> Vec<BuiltinType> {
    use k8s_openapi::api::*;
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiextensions;
    use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1 as apiregistration;
    builtin_types![
        core::v1::Binding,
        core::v1::ComponentStatus,
        core::v1::ConfigMap,
        core::v1::Endpoints,
        core::v1::Event,
        core::v1::LimitRange,
        core::v1::Namespace,
        core::v1::Node,
        core::v1::PersistentVolume,
        core::v1::PersistentVolumeClaim,
        core::v1::Pod,
        core::v1::PodTemplate,
        core::v1::ReplicationController,
        core::v1::ResourceQuota,
        core::v1::Secret,
        core::v1::Service,
        core::v1::ServiceAccount,
        admissionregistration::v1::MutatingWebhookConfiguration,
        admissionregistration::v1::ValidatingAdmissionPolicy,
        admissionregistration::v1::ValidatingAdmissionPolicyBinding,
        admissionregistration::v1::ValidatingWebhookConfiguration,
        apiextensions::CustomResourceDefinition,
        apiregistration::APIService,
        apps::v1::ControllerRevision,
        apps::v1::DaemonSet,
        apps::v1::Deployment,
        apps::v1::ReplicaSet,
        apps::v1::StatefulSet,
        authentication::v1::SelfSubjectReview,
        authentication::v1::TokenRequest,
        authentication::v1::TokenReview,
        authorization::v1::LocalSubjectAccessReview,
        authorization::v1::SelfSubjectAccessReview,
        authorization::v1::SelfSubjectRulesReview,
        authorization::v1::SubjectAccessReview,
        autoscaling::v1::HorizontalPodAutoscaler,
        autoscaling::v1::Scale,
        autoscaling::v2::HorizontalPodAutoscaler,
        batch::v1::CronJob,
        batch::v1::Job,
        certificates::v1::CertificateSigningRequest,
        coordination::v1::Lease,
        discovery::v1::EndpointSlice,
        events::v1::Event,
        flowcontrol::v1::FlowSchema,
        flowcontrol::v1::PriorityLevelConfiguration,
        networking::v1::IPAddress,
        networking::v1::Ingress,
        networking::v1::IngressClass,
        networking::v1::NetworkPolicy,
        networking::v1::ServiceCIDR,
        node::v1::RuntimeClass,
        policy::v1::Eviction,
        policy::v1::PodDisruptionBudget,
        rbac::v1::ClusterRole,
        rbac::v1::ClusterRoleBinding,
        rbac::v1::Role,
        rbac::v1::RoleBinding,
        resource::v1::DeviceClass,
        resource::v1::ResourceClaim,
        resource::v1::ResourceClaimTemplate,
        resource::v1::ResourceSlice,
        scheduling::v1::PriorityClass,
        storage::v1::CSIDriver,
        storage::v1::CSINode,
        storage::v1::CSIStorageCapacity,
        storage::v1::StorageClass,
        storage::v1::VolumeAttachment,
        storage::v1::VolumeAttributesClass,
    ]
}

/// What discovery says about a resource beyond k8s-openapi's metadata, keyed by (group, kind):
/// the values of the real 1.35 apiserver's discovery documents.
pub struct Extra {
    pub group: &'static str,
    pub kind: &'static str,
    pub short_names: &'static [&'static str],
    pub categories: &'static [&'static str],
    pub subresources: &'static [&'static str],
}

const ALL: &[&str] = &["all"];
const EXT: &[&str] = &["api-extensions"];
const STATUS: &[&str] = &["status"];
const STATUS_SCALE: &[&str] = &["status", "scale"];

macro_rules! extras {
    ($( $group:literal $kind:literal short $short:expr, cat $cat:expr, subs $subs:expr; )*) => {
        &[$( Extra { group: $group, kind: $kind, short_names: $short, categories: $cat, subresources: $subs } ),*]
    };
}

pub const EXTRAS: &[Extra] = extras![
    "" "ComponentStatus" short &["cs"], cat &[], subs &[];
    "" "ConfigMap" short &["cm"], cat &[], subs &[];
    "" "Endpoints" short &["ep"], cat &[], subs &[];
    "" "Event" short &["ev"], cat &[], subs &[];
    "" "LimitRange" short &["limits"], cat &[], subs &[];
    "" "Namespace" short &["ns"], cat &[], subs &["status", "finalize"];
    "" "Node" short &["no"], cat &[], subs &["status", "proxy"];
    "" "PersistentVolume" short &["pv"], cat &[], subs STATUS;
    "" "PersistentVolumeClaim" short &["pvc"], cat &[], subs STATUS;
    "" "Pod" short &["po"], cat ALL, subs &["status", "log", "eviction", "binding", "ephemeralcontainers", "exec", "attach", "portforward", "proxy", "resize"];
    "" "ReplicationController" short &["rc"], cat ALL, subs STATUS_SCALE;
    "" "ResourceQuota" short &["quota"], cat &[], subs STATUS;
    "" "Service" short &["svc"], cat ALL, subs &["status", "proxy"];
    "" "ServiceAccount" short &["sa"], cat &[], subs &["token"];
    "admissionregistration.k8s.io" "MutatingWebhookConfiguration" short &[], cat EXT, subs &[];
    "admissionregistration.k8s.io" "ValidatingAdmissionPolicy" short &[], cat EXT, subs STATUS;
    "admissionregistration.k8s.io" "ValidatingAdmissionPolicyBinding" short &[], cat EXT, subs &[];
    "admissionregistration.k8s.io" "ValidatingWebhookConfiguration" short &[], cat EXT, subs &[];
    "apiextensions.k8s.io" "CustomResourceDefinition" short &["crd", "crds"], cat EXT, subs STATUS;
    "apiregistration.k8s.io" "APIService" short &[], cat EXT, subs STATUS;
    "apps" "DaemonSet" short &["ds"], cat ALL, subs STATUS;
    "apps" "Deployment" short &["deploy"], cat ALL, subs STATUS_SCALE;
    "apps" "ReplicaSet" short &["rs"], cat ALL, subs STATUS_SCALE;
    "apps" "StatefulSet" short &["sts"], cat ALL, subs STATUS_SCALE;
    "autoscaling" "HorizontalPodAutoscaler" short &["hpa"], cat ALL, subs STATUS;
    "batch" "CronJob" short &["cj"], cat ALL, subs STATUS;
    "batch" "Job" short &[], cat ALL, subs STATUS;
    "certificates.k8s.io" "CertificateSigningRequest" short &["csr"], cat &[], subs &["status", "approval"];
    "events.k8s.io" "Event" short &["ev"], cat &[], subs &[];
    "flowcontrol.apiserver.k8s.io" "FlowSchema" short &[], cat &[], subs STATUS;
    "flowcontrol.apiserver.k8s.io" "PriorityLevelConfiguration" short &[], cat &[], subs STATUS;
    "networking.k8s.io" "IPAddress" short &["ip"], cat &[], subs &[];
    "networking.k8s.io" "Ingress" short &["ing"], cat &[], subs STATUS;
    "networking.k8s.io" "NetworkPolicy" short &["netpol"], cat &[], subs &[];
    "networking.k8s.io" "ServiceCIDR" short &[], cat &[], subs STATUS;
    "policy" "PodDisruptionBudget" short &["pdb"], cat &[], subs STATUS;
    "resource.k8s.io" "ResourceClaim" short &[], cat &[], subs STATUS;
    "scheduling.k8s.io" "PriorityClass" short &["pc"], cat &[], subs &[];
    "storage.k8s.io" "StorageClass" short &["sc"], cat &[], subs &[];
    "storage.k8s.io" "VolumeAttachment" short &[], cat &[], subs STATUS;
    "storage.k8s.io" "VolumeAttributesClass" short &["vac"], cat &[], subs &[];
];

pub fn extra(group: &str, kind: &str) -> Option<&'static Extra> {
    EXTRAS.iter().find(|e| e.group == group && e.kind == kind)
}

/// Verbs of the resources that are not plain CRUD, as 1.35 discovery lists them (`None`: the
/// plain CRUD verbs, `resources::CRUD_VERBS`).
pub fn verbs(group: &str, plural: &str, listable: bool) -> Option<&'static [&'static str]> {
    match (group, plural) {
        ("", "componentstatuses") => Some(&["get", "list"]),
        // Namespaces are removed one by one through their finalizer: no deletecollection.
        ("", "namespaces") => Some(&[
            "create", "delete", "get", "list", "patch", "update", "watch",
        ]),
        // Bindings and the review kinds are created and answered, never stored.
        _ if !listable => Some(&["create"]),
        _ => None,
    }
}

/// Whether DELETE answers with the deleted object rather than a success Status: the 1.35
/// registries that set `ReturnDeletedObject` (pkg/registry/*/*/storage/storage.go; custom
/// resources and all others answer a Status).
pub fn delete_returns_object(group: &str, plural: &str) -> bool {
    matches!(
        (group, plural),
        (
            "",
            "pods"
                | "podtemplates"
                | "services"
                | "serviceaccounts"
                | "namespaces"
                | "persistentvolumes"
                | "persistentvolumeclaims"
                | "resourcequotas"
        ) | (
            "storage.k8s.io",
            "storageclasses"
                | "csidrivers"
                | "csinodes"
                | "volumeattachments"
                | "volumeattributesclasses"
        ) | (
            "resource.k8s.io",
            "deviceclasses"
                | "resourceclaims"
                | "resourceclaimtemplates"
                | "resourceslices"
                | "devicetaintrules"
        )
    )
}

/// The kind a subresource answers with, as (group, version, kind), when it is not the parent's:
/// the subresource kinds k8s-openapi marks with `SubResourceScope`, `pods/binding`, and the
/// streaming and option kinds of core.
pub fn subresource_kind(sub: &str) -> Option<(&'static str, &'static str, &'static str)> {
    match sub {
        "binding" => Some(("", "v1", "Binding")),
        "exec" => Some(("", "v1", "PodExecOptions")),
        "attach" => Some(("", "v1", "PodAttachOptions")),
        "portforward" => Some(("", "v1", "PodPortForwardOptions")),
        _ => all()
            .into_iter()
            .find(|t| t.scope == Scope::Subresource && t.plural == sub)
            .map(|t| (t.group, t.version, t.kind)),
    }
}

/// Verbs of a subresource in discovery.
pub fn subresource_verbs(sub: &str) -> &'static [&'static str] {
    match sub {
        "log" => &["get"],
        "eviction" | "binding" | "token" => &["create"],
        "finalize" => &["update"],
        "exec" | "attach" | "portforward" => &["create", "get"],
        "proxy" => &["create", "delete", "get", "patch", "update"],
        _ => &["get", "patch", "update"],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_comes_from_k8s_openapi() {
        let types = all();
        let find = |g: &str, k: &str| {
            types
                .iter()
                .find(|t| t.group == g && t.kind == k)
                .copied()
                .unwrap()
        };
        let sts = find("apps", "StatefulSet");
        assert_eq!(
            (sts.version, sts.plural, sts.scope, sts.listable),
            ("v1", "statefulsets", Scope::Namespaced, true)
        );
        let crb = find("rbac.authorization.k8s.io", "ClusterRoleBinding");
        assert_eq!(
            (crb.plural, crb.scope),
            ("clusterrolebindings", Scope::Cluster)
        );
        let ssar = find("authorization.k8s.io", "SelfSubjectAccessReview");
        assert!(!ssar.listable);
        assert_eq!(
            verbs(ssar.group, ssar.plural, ssar.listable),
            Some(&["create"][..])
        );
        assert_eq!(find("autoscaling", "Scale").scope, Scope::Subresource);
        assert_eq!(
            subresource_kind("scale"),
            Some(("autoscaling", "v1", "Scale"))
        );
        assert_eq!(
            subresource_kind("token"),
            Some(("authentication.k8s.io", "v1", "TokenRequest"))
        );
        assert_eq!(subresource_kind("status"), None);
    }

    #[test]
    fn every_extra_names_a_served_kind() {
        let types = all();
        for e in EXTRAS {
            assert!(
                types.iter().any(|t| t.group == e.group && t.kind == e.kind),
                "{}/{} is not a built-in kind",
                e.group,
                e.kind
            );
        }
    }

    #[test]
    fn round_trip_rejects_bad_types_and_drops_unknown_fields() {
        let job = all().into_iter().find(|t| t.kind == "Job").unwrap();
        let ok =
            (job.round_trip)(&serde_json::json!({"spec": {"parallelism": 2, "bogus": 1}})).unwrap();
        assert_eq!(ok["spec"]["parallelism"], 2);
        assert!(ok["spec"].get("bogus").is_none());
        assert!((job.round_trip)(&serde_json::json!({"spec": {"parallelism": "two"}})).is_err());
    }
}
