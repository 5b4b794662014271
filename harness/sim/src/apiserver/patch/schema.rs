//! Field metadata for the built-in kinds: how each list field is merged.
//!
//! The real apiserver reads this from Go struct tags (`patchStrategy`,
//! `patchMergeKey`) for strategic merge patch, and from the OpenAPI list
//! extensions (`x-kubernetes-list-type`, `x-kubernetes-list-map-keys`) for
//! server-side apply. We only model the structs that contain a list with a
//! non-default strategy; every other field is "a map merges recursively,
//! a list is atomic/replaced".
//!
//! | path (relative to the type)                     | strategic merge      | server-side apply keys            |
//! |-------------------------------------------------|----------------------|-----------------------------------|
//! | ObjectMeta `finalizers`                         | merge (primitive)    | set                               |
//! | ObjectMeta `ownerReferences`                    | merge, key `uid`     | `uid`                             |
//! | PodSpec `containers`, `initContainers`, `ephemeralContainers` | merge, key `name` | `name`             |
//! | PodSpec `volumes` (merge,retainKeys)            | merge, key `name`    | `name`                            |
//! | PodSpec `imagePullSecrets`                      | merge, key `name`    | `name`                            |
//! | PodSpec `hostAliases`                           | merge, key `ip`      | `ip`                              |
//! | PodSpec `topologySpreadConstraints`             | merge, key `topologyKey` | `topologyKey`, `whenUnsatisfiable` |
//! | PodSpec `schedulingGates`                       | merge, key `name`    | `name`                            |
//! | PodSpec `resourceClaims` (merge,retainKeys)     | merge, key `name`    | `name`                            |
//! | PodSpec `tolerations`, `readinessGates`         | replace              | atomic                            |
//! | Container `env`                                 | merge, key `name`    | `name`                            |
//! | Container `ports`                               | merge, key `containerPort` | `containerPort`, `protocol` (default `TCP`) |
//! | Container `volumeMounts`                        | merge, key `mountPath` | `mountPath`                     |
//! | Container `volumeDevices`                       | merge, key `devicePath` | `devicePath`                   |
//! | Container `resources.claims`                    | replace              | `name`                            |
//! | PodStatus `conditions`                          | merge, key `type`    | `type`                            |
//! | PodStatus `podIPs`, `hostIPs`                   | merge, key `ip`      | `ip`                              |
//! | PodStatus `resourceClaimStatuses`               | merge, key `name`    | `name`                            |
//! | PodStatus `containerStatuses`, `initContainerStatuses`, `ephemeralContainerStatuses` | replace | atomic |
//! | NodeSpec `podCIDRs`                             | merge (primitive)    | set                               |
//! | NodeSpec `taints`                               | replace              | atomic                            |
//! | NodeStatus `conditions`, `addresses`            | merge, key `type`    | `type`                            |
//! | ServiceSpec `ports`                             | merge, key `port`    | `port`, `protocol` (default `TCP`) |
//! | ServiceAccount `secrets`                        | merge, key `name`    | `name`                            |
//! | any other kind's `status.conditions`            | merge, key `type`    | `type`                            |
//!
//! Pod templates are found at `spec.template` of Deployment, ReplicaSet,
//! StatefulSet, DaemonSet, Job and ReplicationController, at `template` of
//! PodTemplate and at `spec.jobTemplate.spec.template` of CronJob.
//! Everything not listed (tolerations, taints, args, command, envFrom, …) is
//! replaced as a whole.

/// The Go type a JSON value corresponds to, as far as list strategies care.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum GoType {
    /// No list field below has a special strategy.
    Unknown,
    Root(Shape),
    ObjectMeta,
    PodTemplateSpec,
    PodSpec,
    Container,
    ResourceRequirements,
    PodStatus,
    /// The `spec` of controllers that embed a pod template at `template`.
    WorkloadSpec,
    CronJobSpec,
    JobTemplateSpec,
    NodeSpec,
    NodeStatus,
    ServiceSpec,
    /// `status` of any kind without a more specific model: `conditions` keyed by `type`.
    GenericStatus,
}

/// Top-level object shapes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Shape {
    Pod,
    PodTemplate,
    Workload,
    CronJob,
    Node,
    Service,
    ServiceAccount,
    Other,
}

/// Strategic-merge-patch list strategy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PatchStrategy {
    /// No `patchStrategy`: the patch list replaces the original.
    Replace,
    /// `patchStrategy:"merge" patchMergeKey:"<key>"`.
    MergeKey(&'static str),
    /// `patchStrategy:"merge"` on a list of primitives: set union.
    MergeSet,
}

/// Server-side-apply list type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ListType {
    Atomic,
    Set,
    /// Associative list keyed by these fields (sorted by name).
    Map(&'static [&'static str]),
}

/// What is known about one field: the type of its value (or of its elements
/// when it is a list) and, for lists, how they merge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Field {
    pub ty: GoType,
    pub patch_strategy: PatchStrategy,
    pub list_type: ListType,
}

impl Field {
    const fn plain(ty: GoType) -> Field {
        Field {
            ty,
            patch_strategy: PatchStrategy::Replace,
            list_type: ListType::Atomic,
        }
    }
    const fn keyed(ty: GoType, key: &'static str, map_keys: &'static [&'static str]) -> Field {
        Field {
            ty,
            patch_strategy: PatchStrategy::MergeKey(key),
            list_type: ListType::Map(map_keys),
        }
    }
    const fn set() -> Field {
        Field {
            ty: GoType::Unknown,
            patch_strategy: PatchStrategy::MergeSet,
            list_type: ListType::Set,
        }
    }
}

const UNKNOWN: Field = Field::plain(GoType::Unknown);

impl GoType {
    /// The type of a top-level object of `kind`.
    pub(crate) fn root(kind: &str) -> GoType {
        GoType::Root(match kind {
            "Pod" => Shape::Pod,
            "PodTemplate" => Shape::PodTemplate,
            "Deployment"
            | "ReplicaSet"
            | "StatefulSet"
            | "DaemonSet"
            | "Job"
            | "ReplicationController" => Shape::Workload,
            "CronJob" => Shape::CronJob,
            "Node" => Shape::Node,
            "Service" => Shape::Service,
            "ServiceAccount" => Shape::ServiceAccount,
            _ => Shape::Other,
        })
    }

    /// Metadata of the field `name` of a value of this type.
    pub(crate) fn field(self, name: &str) -> Field {
        use GoType::*;
        match (self, name) {
            (Root(_), "metadata") => Field::plain(ObjectMeta),
            (Root(r), _) => root_field(r, name),

            (ObjectMeta, "finalizers") => Field::set(),
            (ObjectMeta, "ownerReferences") => Field::keyed(Unknown, "uid", &["uid"]),

            (PodTemplateSpec, "metadata") => Field::plain(ObjectMeta),
            (PodTemplateSpec, "spec") => Field::plain(PodSpec),

            (PodSpec, "containers" | "initContainers" | "ephemeralContainers") => {
                Field::keyed(Container, "name", &["name"])
            }
            (PodSpec, "volumes" | "imagePullSecrets" | "schedulingGates" | "resourceClaims") => {
                Field::keyed(Unknown, "name", &["name"])
            }
            (PodSpec, "hostAliases") => Field::keyed(Unknown, "ip", &["ip"]),
            (PodSpec, "topologySpreadConstraints") => Field::keyed(
                Unknown,
                "topologyKey",
                &["topologyKey", "whenUnsatisfiable"],
            ),

            (Container, "env") => Field::keyed(Unknown, "name", &["name"]),
            (Container, "ports") => {
                Field::keyed(Unknown, "containerPort", &["containerPort", "protocol"])
            }
            (Container, "volumeMounts") => Field::keyed(Unknown, "mountPath", &["mountPath"]),
            (Container, "volumeDevices") => Field::keyed(Unknown, "devicePath", &["devicePath"]),
            (Container, "resources") => Field::plain(ResourceRequirements),
            // listType=map without a patch strategy.
            (ResourceRequirements, "claims") => Field {
                ty: Unknown,
                patch_strategy: PatchStrategy::Replace,
                list_type: ListType::Map(&["name"]),
            },

            (PodStatus | NodeStatus | GenericStatus, "conditions") => {
                Field::keyed(Unknown, "type", &["type"])
            }
            (PodStatus, "podIPs" | "hostIPs") => Field::keyed(Unknown, "ip", &["ip"]),
            (PodStatus, "resourceClaimStatuses") => Field::keyed(Unknown, "name", &["name"]),

            (WorkloadSpec, "template") => Field::plain(PodTemplateSpec),
            (CronJobSpec, "jobTemplate") => Field::plain(JobTemplateSpec),
            (JobTemplateSpec, "metadata") => Field::plain(ObjectMeta),
            (JobTemplateSpec, "spec") => Field::plain(WorkloadSpec),

            (NodeSpec, "podCIDRs") => Field::set(),
            (NodeStatus, "addresses") => Field::keyed(Unknown, "type", &["type"]),

            (ServiceSpec, "ports") => Field::keyed(Unknown, "port", &["port", "protocol"]),

            _ => UNKNOWN,
        }
    }
}

fn root_field(root: Shape, name: &str) -> Field {
    use GoType::*;
    match (root, name) {
        (Shape::Pod, "spec") => Field::plain(PodSpec),
        (Shape::Pod, "status") => Field::plain(PodStatus),
        (Shape::PodTemplate, "template") => Field::plain(PodTemplateSpec),
        (Shape::Workload, "spec") => Field::plain(WorkloadSpec),
        (Shape::CronJob, "spec") => Field::plain(CronJobSpec),
        (Shape::Node, "spec") => Field::plain(NodeSpec),
        (Shape::Node, "status") => Field::plain(NodeStatus),
        (Shape::Service, "spec") => Field::plain(ServiceSpec),
        (Shape::ServiceAccount, "secrets") => Field::keyed(Unknown, "name", &["name"]),
        (_, "status") => Field::plain(GenericStatus),
        _ => UNKNOWN,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(kind: &str, names: &[&str]) -> Field {
        let mut field = Field::plain(GoType::root(kind));
        for n in names {
            field = field.ty.field(n);
        }
        field
    }

    #[test]
    fn merge_keys_depend_on_path() {
        assert_eq!(
            path("Pod", &["spec", "containers"]).patch_strategy,
            PatchStrategy::MergeKey("name")
        );
        assert_eq!(
            path("Pod", &["spec", "containers", "ports"]).patch_strategy,
            PatchStrategy::MergeKey("containerPort")
        );
        assert_eq!(
            path("Service", &["spec", "ports"]).patch_strategy,
            PatchStrategy::MergeKey("port")
        );
        assert_eq!(
            path("Deployment", &["spec", "ports"]).patch_strategy,
            PatchStrategy::Replace
        );
        assert_eq!(
            path(
                "Deployment",
                &["spec", "template", "spec", "containers", "volumeMounts"]
            )
            .patch_strategy,
            PatchStrategy::MergeKey("mountPath")
        );
        assert_eq!(
            path(
                "CronJob",
                &["spec", "jobTemplate", "spec", "template", "spec", "volumes"]
            )
            .patch_strategy,
            PatchStrategy::MergeKey("name")
        );
        assert_eq!(
            path("PodTemplate", &["template", "spec", "initContainers"]).patch_strategy,
            PatchStrategy::MergeKey("name")
        );
        assert_eq!(
            path("Pod", &["spec", "tolerations"]).patch_strategy,
            PatchStrategy::Replace
        );
        assert_eq!(
            path("Node", &["spec", "taints"]).patch_strategy,
            PatchStrategy::Replace
        );
        assert_eq!(
            path("Node", &["spec", "podCIDRs"]).patch_strategy,
            PatchStrategy::MergeSet
        );
        assert_eq!(
            path("Pod", &["status", "containerStatuses"]).patch_strategy,
            PatchStrategy::Replace
        );
        assert_eq!(
            path("Pod", &["status", "podIPs"]).patch_strategy,
            PatchStrategy::MergeKey("ip")
        );
        assert_eq!(
            path("Node", &["status", "addresses"]).patch_strategy,
            PatchStrategy::MergeKey("type")
        );
        assert_eq!(
            path("PersistentVolumeClaim", &["status", "conditions"]).patch_strategy,
            PatchStrategy::MergeKey("type")
        );
        assert_eq!(
            path("Namespace", &["status", "conditions"]).patch_strategy,
            PatchStrategy::MergeKey("type")
        );
        assert_eq!(
            path("Widget", &["metadata", "finalizers"]).patch_strategy,
            PatchStrategy::MergeSet
        );
        assert_eq!(
            path("Pod", &["metadata", "ownerReferences"]).patch_strategy,
            PatchStrategy::MergeKey("uid")
        );
        assert_eq!(
            path("Pod", &["spec", "containers", "args"]).patch_strategy,
            PatchStrategy::Replace
        );
        assert_eq!(
            path("Pod", &["spec", "containers", "ports"]).list_type,
            ListType::Map(&["containerPort", "protocol"])
        );
        assert_eq!(
            path("Pod", &["spec", "containers", "resources", "claims"]).list_type,
            ListType::Map(&["name"])
        );
        assert_eq!(
            path("Pod", &["spec", "containers", "resources", "claims"]).patch_strategy,
            PatchStrategy::Replace
        );
    }
}
