//! Server-side printing of `meta.k8s.io/v1` `Table` responses.
//!
//! `kubectl get` asks the API server for
//! `Accept: application/json;as=Table;v=v1;g=meta.k8s.io` and prints whatever
//! columns and cells the server sends back.  The real kube-apiserver renders
//! those rows with the printers registered for each built-in type, the
//! apiextensions-apiserver renders custom resources from a CRD version's
//! `additionalPrinterColumns`, and everything else falls back to the default
//! `Name` / `Created At` table.  This module reproduces that behaviour as pure
//! functions over `serde_json::Value` (no I/O, no global state).
//!
//! Behavioural notes (all mirror the real server unless said otherwise):
//!
//! * Cells are always generated "wide": the server always includes the
//!   priority-1 columns and lets the client hide them unless `-o wide`.
//! * Ages are rendered with [`human_duration`] relative to the caller's `now`;
//!   a missing/zero timestamp prints `<unknown>`.
//! * Objects are printed as stored.  Where the real apiserver would always have
//!   persisted a default (e.g. `Service.spec.type=ClusterIP`, port protocol
//!   `TCP`, `Secret.type=Opaque`, PVC/PV `volumeMode=Filesystem`, PV reclaim
//!   policy `Retain`, PV/PVC phase `Pending`, namespace phase `Active`,
//!   workload `replicas=1`, CSIDriver `volumeLifecycleModes=[Persistent]`),
//!   that default is assumed when the field is absent so the output matches
//!   what a real cluster shows for the same manifest.
//! * Nothing here panics on malformed input: wrong types and missing fields
//!   are treated like Go zero values.

use std::collections::BTreeSet;

use chrono::{DateTime, Duration, Utc};
use serde_json::{Map, Number, Value};

// ---------------------------------------------------------------------------
// Public types
// ---------------------------------------------------------------------------

/// One `columnDefinitions` entry of a Table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    pub name: String,
    /// "string" | "integer" | "date" | "number" | "boolean"
    pub type_: String,
    /// "name" for the Name column, else "" (custom columns may carry any OpenAPI format).
    pub format: String,
    pub description: String,
    /// 0 = always shown, 1 = only shown by kubectl with `-o wide`.
    pub priority: i32,
}

impl Column {
    fn new(name: &str, type_: &str, format: &str, description: &str, priority: i32) -> Column {
        Column {
            name: name.to_string(),
            type_: type_.to_string(),
            format: format.to_string(),
            description: description.to_string(),
            priority,
        }
    }

    /// The `TableColumnDefinition` JSON object for this column.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("name".into(), Value::String(self.name.clone()));
        m.insert("type".into(), Value::String(self.type_.clone()));
        m.insert("format".into(), Value::String(self.format.clone()));
        m.insert(
            "description".into(),
            Value::String(self.description.clone()),
        );
        m.insert("priority".into(), Value::from(self.priority));
        Value::Object(m)
    }
}

/// A printer for one resource type: the column definitions plus the logic
/// that turns an object into the cells of one row.
#[derive(Debug, Clone)]
pub struct Printer {
    pub columns: Vec<Column>,
    kind: PrinterKind,
}

#[derive(Debug, Clone)]
enum PrinterKind {
    /// `rest.NewDefaultTableConvertor`: Name + Created At.
    Default,
    Pod,
    Node,
    Namespace,
    PersistentVolumeClaim,
    PersistentVolume,
    StorageClass,
    VolumeAttachment,
    CsiDriver,
    CsiNode,
    /// core/v1 Event (`events_api == false`) or events.k8s.io/v1 Event.
    Event {
        events_api: bool,
    },
    ConfigMap,
    Secret,
    ServiceAccount,
    Service,
    Lease,
    Deployment,
    DaemonSet,
    ReplicaSet,
    StatefulSet,
    Job,
    /// Custom resource printed from `additionalPrinterColumns`.
    Custom(Vec<CustomColumn>),
}

#[derive(Debug, Clone)]
struct CustomColumn {
    type_: String,
    path: JsonPath,
}

impl Printer {
    /// Printer for a built-in type (group `""` — or `"core"` — for the core
    /// group).  Types without a server-side printer (including
    /// `apiextensions.k8s.io` CustomResourceDefinition, RBAC roles, unknown
    /// kinds) get the default `Name` / `Created At` table, exactly like the
    /// real server.
    pub fn builtin(group: &str, kind: &str) -> Printer {
        let group = if group == "core" { "" } else { group };
        let pk = match (group, kind) {
            ("", "Pod") => PrinterKind::Pod,
            ("", "Node") => PrinterKind::Node,
            ("", "Namespace") => PrinterKind::Namespace,
            ("", "PersistentVolumeClaim") => PrinterKind::PersistentVolumeClaim,
            ("", "PersistentVolume") => PrinterKind::PersistentVolume,
            ("", "Event") => PrinterKind::Event { events_api: false },
            ("events.k8s.io", "Event") => PrinterKind::Event { events_api: true },
            ("", "ConfigMap") => PrinterKind::ConfigMap,
            ("", "Secret") => PrinterKind::Secret,
            ("", "ServiceAccount") => PrinterKind::ServiceAccount,
            ("", "Service") => PrinterKind::Service,
            ("storage.k8s.io", "StorageClass") => PrinterKind::StorageClass,
            ("storage.k8s.io", "VolumeAttachment") => PrinterKind::VolumeAttachment,
            ("storage.k8s.io", "CSIDriver") => PrinterKind::CsiDriver,
            ("storage.k8s.io", "CSINode") => PrinterKind::CsiNode,
            ("coordination.k8s.io", "Lease") => PrinterKind::Lease,
            ("apps", "Deployment") => PrinterKind::Deployment,
            ("apps", "DaemonSet") => PrinterKind::DaemonSet,
            ("apps", "ReplicaSet") => PrinterKind::ReplicaSet,
            ("apps", "StatefulSet") => PrinterKind::StatefulSet,
            ("batch", "Job") => PrinterKind::Job,
            _ => PrinterKind::Default,
        };
        Printer {
            columns: builtin_columns(&pk),
            kind: pk,
        }
    }

    /// The default table convertor used for types without a printer:
    /// `Name` (string/name) and `Created At` (date, RFC3339 cell).
    pub fn default_printer() -> Printer {
        Printer {
            columns: builtin_columns(&PrinterKind::Default),
            kind: PrinterKind::Default,
        }
    }

    /// Printer for a custom resource from its CRD version's
    /// `additionalPrinterColumns` JSON array.  An empty / null / non-array
    /// value gives the apiextensions default (`Name` + `Age`, where `Age` is a
    /// `date` column over `.metadata.creationTimestamp`).
    ///
    /// Each entry's `jsonPath` (`JSONPath` is accepted too, as in v1beta1 CRDs)
    /// is evaluated with a JSONPath subset: dotted fields (with `\.` escapes),
    /// `['key']` / `["key"]`, `[n]`, `[-n]`, `[a:b]`, `[*]`, `.*`, `..field`
    /// and simple filters `[?(@.type=="Ready")]`.  Like the real convertor,
    /// a column whose path does not parse ends the column list (the columns
    /// before it are kept).
    pub fn custom(additional_printer_columns: &Value) -> Printer {
        let defs: Vec<&Value> = match additional_printer_columns.as_array() {
            Some(a) if !a.is_empty() => a.iter().collect(),
            _ => Vec::new(),
        };
        let mut columns = vec![name_column()];
        let mut custom = Vec::new();
        if defs.is_empty() {
            columns.push(Column::new("Age", "date", "", D_CREATION, 0));
            custom.push(CustomColumn {
                type_: "date".to_string(),
                path: JsonPath::parse(".metadata.creationTimestamp").unwrap_or_default(),
            });
        }
        for def in defs {
            let name = str_at(def, &["name"]);
            let type_ = str_at(def, &["type"]);
            let format = str_at(def, &["format"]);
            let json_path = match at(def, &["jsonPath"]).and_then(Value::as_str) {
                Some(p) => p,
                None => str_at(def, &["JSONPath"]),
            };
            let priority = clamp_i32(int_at(def, &["priority"]));
            let path = match JsonPath::parse(json_path) {
                Ok(p) => p,
                Err(_) => break,
            };
            let description = match str_at(def, &["description"]) {
                "" => format!(
                    "Custom resource definition column (in JSONPath format): {}",
                    json_path
                ),
                d => d.to_string(),
            };
            columns.push(Column::new(name, type_, format, &description, priority));
            custom.push(CustomColumn {
                type_: type_.to_string(),
                path,
            });
        }
        Printer {
            columns,
            kind: PrinterKind::Custom(custom),
        }
    }

    /// Convenience: printer for version `version` of a CRD object (v1
    /// `spec.versions[].additionalPrinterColumns`, falling back to the
    /// v1beta1-style top-level `spec.additionalPrinterColumns`).
    pub fn for_crd(crd: &Value, version: &str) -> Printer {
        for v in arr_at(crd, &["spec", "versions"]) {
            if str_at(v, &["name"]) == version {
                if let Some(cols) = at(v, &["additionalPrinterColumns"]) {
                    if cols.as_array().is_some_and(|a| !a.is_empty()) {
                        return Printer::custom(cols);
                    }
                }
            }
        }
        match at(crd, &["spec", "additionalPrinterColumns"]) {
            Some(cols) => Printer::custom(cols),
            None => Printer::custom(&Value::Null),
        }
    }

    /// One row's cells for `obj` (always including the wide columns), `now`
    /// being the reference time for ages.
    pub fn cells(&self, obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
        match &self.kind {
            PrinterKind::Default => default_cells(obj),
            PrinterKind::Pod => pod_cells(obj, now),
            PrinterKind::Node => node_cells(obj, now),
            PrinterKind::Namespace => namespace_cells(obj, now),
            PrinterKind::PersistentVolumeClaim => pvc_cells(obj, now),
            PrinterKind::PersistentVolume => pv_cells(obj, now),
            PrinterKind::StorageClass => storage_class_cells(obj, now),
            PrinterKind::VolumeAttachment => volume_attachment_cells(obj, now),
            PrinterKind::CsiDriver => csi_driver_cells(obj, now),
            PrinterKind::CsiNode => csi_node_cells(obj, now),
            PrinterKind::Event { events_api } => event_cells(obj, *events_api, now),
            PrinterKind::ConfigMap => config_map_cells(obj, now),
            PrinterKind::Secret => secret_cells(obj, now),
            PrinterKind::ServiceAccount => service_account_cells(obj, now),
            PrinterKind::Service => service_cells(obj, now),
            PrinterKind::Lease => lease_cells(obj, now),
            PrinterKind::Deployment => deployment_cells(obj, now),
            PrinterKind::DaemonSet => daemon_set_cells(obj, now),
            PrinterKind::ReplicaSet => replica_set_cells(obj, now),
            PrinterKind::StatefulSet => stateful_set_cells(obj, now),
            PrinterKind::Job => job_cells(obj, now),
            PrinterKind::Custom(cols) => custom_cells(cols, obj, now),
        }
    }

    /// Row-level `conditions` (only pods set them: a `Completed` condition for
    /// Succeeded / Failed pods, which kubectl uses to dim finished pods).
    pub fn row_conditions(&self, obj: &Value) -> Option<Value> {
        match self.kind {
            PrinterKind::Pod => pod_row_conditions(obj),
            _ => None,
        }
    }

    /// The `columnDefinitions` JSON array.
    pub fn column_definitions(&self) -> Value {
        Value::Array(self.columns.iter().map(Column::to_json).collect())
    }

    /// One `TableRow` JSON object (`cells`, optional `conditions`, `object`).
    pub fn row(&self, obj: &Value, include_object: &str, now: DateTime<Utc>) -> Value {
        let mut row = Map::new();
        row.insert("cells".into(), Value::Array(self.cells(obj, now)));
        if let Some(conds) = self.row_conditions(obj) {
            row.insert("conditions".into(), conds);
        }
        let object = match include_object {
            "None" => Value::Null,
            "Object" => obj.clone(),
            _ => partial_object_metadata(obj),
        };
        row.insert("object".into(), object);
        Value::Object(row)
    }
}

/// Whether `s` is a value the real server accepts for `includeObject`
/// (`""`, `None`, `Metadata`, `Object`); anything else is a 400 there.
/// [`to_table`] itself treats unknown values as `Metadata`.
pub fn is_valid_include_object(s: &str) -> bool {
    matches!(s, "" | "None" | "Metadata" | "Object")
}

/// `PartialObjectMetadata` for an object, as put into `rows[].object` with
/// `includeObject=Metadata` (the default).
pub fn partial_object_metadata(obj: &Value) -> Value {
    let metadata = match at(obj, &["metadata"]) {
        Some(m @ Value::Object(_)) => m.clone(),
        _ => Value::Object(Map::new()),
    };
    let mut m = Map::new();
    m.insert("kind".into(), Value::String("PartialObjectMetadata".into()));
    m.insert("apiVersion".into(), Value::String("meta.k8s.io/v1".into()));
    m.insert("metadata".into(), metadata);
    Value::Object(m)
}

/// Build the full Table object:
/// `{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":rv},
///   "columnDefinitions":[...],"rows":[{"cells":[...],"object":...}]}`.
///
/// * `include_headers == false` gives an empty `columnDefinitions` array
///   (what watch events after the first one carry).
/// * `include_object`: `"None"` (`object: null`), `"Metadata"` / `""` /
///   anything else (PartialObjectMetadata), `"Object"` (the full object).
/// * An empty `resource_version` is omitted from `metadata`, as Go's
///   `ListMeta` would.
pub fn to_table(
    printer: &Printer,
    objects: &[&Value],
    resource_version: &str,
    include_object: &str,
    include_headers: bool,
    now: DateTime<Utc>,
) -> Value {
    let mut meta = Map::new();
    if !resource_version.is_empty() {
        meta.insert(
            "resourceVersion".into(),
            Value::String(resource_version.to_string()),
        );
    }
    to_table_with_list_meta(printer, objects, meta, include_object, include_headers, now)
}

/// Like [`to_table`] but with a caller-supplied `metadata` (ListMeta) map, for
/// paginated lists (`continue`, `remainingItemCount`).
pub fn to_table_with_list_meta(
    printer: &Printer,
    objects: &[&Value],
    list_meta: Map<String, Value>,
    include_object: &str,
    include_headers: bool,
    now: DateTime<Utc>,
) -> Value {
    let mut table = Map::new();
    table.insert("kind".into(), Value::String("Table".into()));
    table.insert("apiVersion".into(), Value::String("meta.k8s.io/v1".into()));
    table.insert("metadata".into(), Value::Object(list_meta));
    let defs = if include_headers {
        printer.column_definitions()
    } else {
        Value::Array(Vec::new())
    };
    table.insert("columnDefinitions".into(), defs);
    let rows = objects
        .iter()
        .map(|o| printer.row(o, include_object, now))
        .collect();
    table.insert("rows".into(), Value::Array(rows));
    Value::Object(table)
}

/// kubectl-style human duration, identical to
/// `k8s.io/apimachinery/pkg/util/duration.HumanDuration`:
/// `<invalid>` below -1s, `0s` for -1s..0s, seconds below 2 minutes,
/// `XmYs` below 10 minutes, minutes below 3 hours, `XhYm` below 8 hours,
/// hours below 2 days, `XdYh` below 8 days, days below 2 years, `XyYd`
/// below 8 years, then years.
pub fn human_duration(d: Duration) -> String {
    // Go's time.Duration saturates at ~292 years; mirror that.
    const MAX_GO_DURATION_SECS: i64 = i64::MAX / 1_000_000_000;
    let seconds = d.num_seconds().min(MAX_GO_DURATION_SECS);
    if seconds < -1 {
        return "<invalid>".to_string();
    } else if seconds < 0 {
        return "0s".to_string();
    } else if seconds < 60 * 2 {
        return format!("{}s", seconds);
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        let s = seconds % 60;
        if s == 0 {
            return format!("{}m", minutes);
        }
        return format!("{}m{}s", minutes, s);
    } else if minutes < 60 * 3 {
        return format!("{}m", minutes);
    }
    let hours = seconds / 3600;
    if hours < 8 {
        let m = minutes % 60;
        if m == 0 {
            return format!("{}h", hours);
        }
        return format!("{}h{}m", hours, m);
    } else if hours < 48 {
        return format!("{}h", hours);
    } else if hours < 24 * 8 {
        let h = hours % 24;
        if h == 0 {
            return format!("{}d", hours / 24);
        }
        return format!("{}d{}h", hours / 24, h);
    } else if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    } else if hours < 24 * 365 * 8 {
        let dy = (hours / 24) % 365;
        if dy == 0 {
            return format!("{}y", hours / 24 / 365);
        }
        return format!("{}y{}d", hours / 24 / 365, dy);
    }
    format!("{}y", hours / 24 / 365)
}

/// Canonical string form of a Kubernetes resource quantity (what
/// `resource.Quantity.String()` prints after the server parsed it), e.g.
/// `"1024Mi"` -> `"1Gi"`, `"1.5Gi"` -> `"1536Mi"`, `"1000"` -> `"1k"`,
/// `"0.5"` -> `"500m"`.  Returns `None` when `s` is not a valid quantity.
pub fn canonical_quantity(s: &str) -> Option<String> {
    format_quantity(parse_quantity(s)?)
}

// ---------------------------------------------------------------------------
// Column descriptions (the OpenAPI / SwaggerDoc texts the real printers use)
// ---------------------------------------------------------------------------

const D_NAME: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
const D_CREATION: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";
const D_POD_IP: &str = "podIP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.";
const D_POD_NODE_NAME: &str = "NodeName indicates in which node this pod is scheduled. If empty, this pod is a candidate for scheduling by the scheduler defined in schedulerName. Once this field is set, the kubelet for this node becomes responsible for the lifecycle of this pod. This field should not be used to express a desire for the pod to be scheduled on a specific node. https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/#nodename";
const D_POD_NOMINATED_NODE: &str = "nominatedNodeName is set only when this pod preempts other pods on the node, but it cannot be scheduled right away as preemption victims receive their graceful termination periods. This field does not guarantee that the pod will be scheduled on this node. Scheduler may decide to place the pod elsewhere if other nodes become available sooner. Scheduler may also decide to give the resources on this node to a higher priority pod that is created after preemption. As a result, this field may be different than PodSpec.nodeName when the pod is scheduled.";
const D_POD_READINESS_GATES: &str = "If specified, all readiness gates will be evaluated for pod readiness. A pod is ready when all its containers are ready AND all conditions specified in the readiness gates have status equal to \"True\" More info: https://git.k8s.io/enhancements/keps/sig-network/580-pod-readiness-gates";
const D_NODE_KUBELET_VERSION: &str = "Kubelet Version reported by the node.";
const D_NODE_ADDRESSES: &str = "List of addresses reachable to the node. Queried from cloud provider, if available. More info: https://kubernetes.io/docs/reference/node/node-status/#addresses Note: This field is declared as mergeable, but the merge key is not sufficiently unique, which can cause data corruption when it is merged. Callers should instead use a full-replacement patch. See https://pr.k8s.io/79391 for an example. Consumers should assume that addresses can change during the lifetime of a Node. However, there are some exceptions where this may not be possible, such as Pods that inherit a Node's address in its own status or consumers of the downward API (status.hostIP).";
const D_NODE_OS_IMAGE: &str =
    "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).";
const D_NODE_KERNEL: &str =
    "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).";
const D_NODE_RUNTIME: &str = "ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2).";
const D_EV_LAST: &str = "The time at which the most recent occurrence of this event was recorded.";
const D_EV_TYPE: &str =
    "Type of this event (Normal, Warning), new types could be added in the future";
const D_EV_REASON: &str = "This should be a short, machine understandable string that gives the reason for the transition into the object's current status.";
const D_EV_OBJECT: &str = "The object that this event is about.";
const D_EV_SUBOBJECT: &str = "If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement, such as desiredState.manifest.containers[2]. For example, if the object reference is to a container within a pod, this would take on a value like: \"spec.containers{name}\" (where \"name\" refers to the name of the container that triggered the event) or if no container name is specified \"spec.containers[2]\" (container with index 2 in this pod). This syntax is chosen only to have some well-defined way of referencing a part of an object.";
const D_EV_SOURCE: &str =
    "The component reporting this event. Should be a short machine understandable string.";
const D_EV_MESSAGE: &str = "A human-readable description of the status of this operation.";
const D_EV_FIRST: &str =
    "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)";
const D_EV_COUNT: &str = "The number of times this event has occurred.";
const D_SECRET_TYPE: &str = "Used to facilitate programmatic handling of secret data. More info: https://kubernetes.io/docs/concepts/configuration/secret/#secret-types";
const D_SECRET_DATA: &str = "Data contains the secret data. Each key must consist of alphanumeric characters, '-', '_' or '.'. The serialized form of the secret data is a base64 encoded string, representing the arbitrary (possibly non-string) data value here. Described in https://tools.ietf.org/html/rfc4648#section-4";
const D_SA_SECRETS: &str = "Secrets is a list of the secrets in the same namespace that pods running using this ServiceAccount are allowed to use. Pods are only limited to this list if this service account has a \"kubernetes.io/enforce-mountable-secrets\" annotation set to \"true\". The \"kubernetes.io/enforce-mountable-secrets\" annotation is deprecated since v1.32. Prefer separate namespaces to isolate access to mounted secrets. This field should not be used to find auto-generated service account token secrets for use outside of pods. Instead, tokens can be requested directly using the TokenRequest API, or service account token secrets can be manually created. More info: https://kubernetes.io/docs/concepts/configuration/secret";
const D_CM_DATA: &str = "Data contains the configuration data. Each key must consist of alphanumeric characters, '-', '_' or '.'. Values with non-UTF-8 byte sequences must use the BinaryData field. The keys stored in Data must not overlap with the keys in the BinaryData field, this is enforced during validation process.";
const D_PV_CAPACITY: &str = "capacity is the description of the persistent volume's resources and capacity. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#capacity";
const D_PV_ACCESS_MODES: &str = "accessModes contains all ways the volume can be mounted. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#access-modes";
const D_PV_RECLAIM: &str = "persistentVolumeReclaimPolicy defines what happens to a persistent volume when released from its claim. Valid options are Retain (default for manually created PersistentVolumes), Delete (default for dynamically provisioned PersistentVolumes), and Recycle (deprecated). Recycle must be supported by the volume plugin underlying this PersistentVolume. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#reclaiming";
const D_PV_PHASE: &str = "phase indicates if a volume is available, bound to a claim, or released by a claim. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#phase";
const D_PV_CLAIM: &str = "claimRef is part of a bi-directional binding between PersistentVolume and PersistentVolumeClaim. Expected to be non-nil when bound. claim.VolumeName is the authoritative bind between PV and PVC. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#binding";
const D_PV_REASON: &str = "reason is a brief CamelCase string that describes any failure and is meant for machine parsing and tidy display in the CLI.";
const D_PV_VOLUME_MODE: &str = "volumeMode defines if a volume is intended to be used with a formatted filesystem or to remain in raw block state. Value of Filesystem is implied when not included in spec.";
const D_PVC_PHASE: &str = "phase represents the current phase of PersistentVolumeClaim.";
const D_PVC_VOLUME: &str =
    "volumeName is the binding reference to the PersistentVolume backing this claim.";
const D_PVC_CAPACITY: &str = "capacity represents the actual resources of the underlying volume.";
const D_PVC_ACCESS_MODES: &str = "accessModes contains the actual access modes the volume backing the PVC has. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#access-modes-1";
const D_PVC_VOLUME_MODE: &str = "volumeMode defines what type of volume is required by the claim. Value of Filesystem is implied when not included in claim spec.";
const D_SC_PROVISIONER: &str = "provisioner indicates the type of the provisioner.";
const D_SC_RECLAIM: &str = "reclaimPolicy controls the reclaimPolicy for dynamically provisioned PersistentVolumes of this storage class. Defaults to Delete.";
const D_SC_BINDING: &str = "volumeBindingMode indicates how PersistentVolumeClaims should be provisioned and bound.  When unset, VolumeBindingImmediate is used. This field is only honored by servers that enable the VolumeScheduling feature.";
const D_SC_EXPANSION: &str =
    "allowVolumeExpansion shows whether the storage class allow volume expand.";
const D_VA_ATTACHER: &str = "attacher indicates the name of the volume driver that MUST handle this request. This is the name returned by GetPluginName().";
const D_VA_PV: &str =
    "persistentVolumeName represents the name of the persistent volume to attach.";
const D_VA_NODE: &str = "nodeName represents the node that the volume should be attached to.";
const D_VA_ATTACHED: &str = "attached indicates the volume is successfully attached. This field must only be set by the entity completing the attach operation, i.e. the external-attacher.";
const D_CSI_ATTACH_REQUIRED: &str = "attachRequired indicates this CSI volume driver requires an attach operation (because it implements the CSI ControllerPublishVolume() method), and that the Kubernetes attach detach controller should call the attach volume interface which checks the volumeattachment status and waits until the volume is attached before proceeding to mounting. The CSI external-attacher coordinates with CSI volume driver and updates the volumeattachment status when the attach operation is complete. If the value is specified to false, the attach operation will be skipped. Otherwise the attach operation will be called.\n\nThis field is immutable.";
const D_CSI_POD_INFO: &str = "podInfoOnMount indicates this CSI volume driver requires additional pod information (like podName, podUID, etc.) during mount operations, if set to true. If set to false, pod information will not be passed on mount. Default is false.\n\nThe CSI driver specifies podInfoOnMount as part of driver deployment. If true, Kubelet will pass pod information as VolumeContext in the CSI NodePublishVolume() calls. The CSI driver is responsible for parsing and validating the information passed in as VolumeContext.\n\nThe following VolumeContext will be passed if podInfoOnMount is set to true. This list might grow, but the prefix will be used. \"csi.storage.k8s.io/pod.name\": pod.Name \"csi.storage.k8s.io/pod.namespace\": pod.Namespace \"csi.storage.k8s.io/pod.uid\": string(pod.UID) \"csi.storage.k8s.io/ephemeral\": \"true\" if the volume is an ephemeral inline volume\n                                defined by a CSIVolumeSource, otherwise \"false\"\n\n\"csi.storage.k8s.io/ephemeral\" is a new feature in Kubernetes 1.16. It is only required for drivers which support both the \"Persistent\" and \"Ephemeral\" VolumeLifecycleMode. Other drivers can leave pod info disabled and/or ignore this field. As Kubernetes 1.15 doesn't support this field, drivers can only support one mode when deployed on such a cluster and the deployment determines which mode that is, for example via a command line parameter of the driver.\n\nThis field was immutable in Kubernetes < 1.29 and now is mutable.";
const D_CSI_STORAGE_CAPACITY: &str = "storageCapacity indicates that the CSI volume driver wants pod scheduling to consider the storage capacity that the driver deployment will report by creating CSIStorageCapacity objects with capacity information, if set to true.\n\nThe check can be enabled immediately when deploying a driver. In that case, provisioning new volumes with late binding will pause until the driver deployment has published some suitable CSIStorageCapacity object.\n\nAlternatively, the driver can be deployed with the field unset or false and it can be flipped later when storage capacity information has been published.\n\nThis field was immutable in Kubernetes <= 1.22 and now is mutable.";
const D_CSI_TOKEN_REQUESTS: &str = "tokenRequests indicates the CSI driver needs pods' service account tokens it is mounting volume for to do necessary authentication. Kubelet will pass the tokens in VolumeContext in the CSI NodePublishVolume calls. The CSI driver should parse and validate the following VolumeContext: \"csi.storage.k8s.io/serviceAccount.tokens\": {\n  \"<audience>\": {\n    \"token\": <token>,\n    \"expirationTimestamp\": <expiration timestamp in RFC3339>,\n  },\n  ...\n}\n\nNote: Audience in each TokenRequest should be different and at most one token is empty string. To receive a new token after expiry, RequiresRepublish can be used to trigger NodePublishVolume periodically.";
const D_CSI_REPUBLISH: &str = "requiresRepublish indicates the CSI driver wants `NodePublishVolume` being periodically called to reflect any possible change in the mounted volume. This field defaults to false.\n\nNote: After a successful initial NodePublishVolume call, subsequent calls to NodePublishVolume should only update the contents of the volume. New mount points will not be seen by a running container.";
const D_CSI_MODES: &str = "volumeLifecycleModes defines what kind of volumes this CSI volume driver supports. The default if the list is empty is \"Persistent\", which is the usage defined by the CSI specification and implemented in Kubernetes via the usual PV/PVC mechanism.\n\nThe other mode is \"Ephemeral\". In this mode, volumes are defined inline inside the pod spec with CSIVolumeSource and their lifecycle is tied to the lifecycle of that pod. A driver has to be aware of this because it is only going to get a NodePublishVolume call for such a volume.\n\nFor more information about implementing this mode, see https://kubernetes-csi.github.io/docs/ephemeral-local-volumes.html A driver can support one or more of these modes and more modes may be added in the future.\n\nThis field is beta. This field is immutable.";
const D_LEASE_HOLDER: &str = "holderIdentity contains the identity of the holder of a current lease. If Coordinated Leader Election is used, the holder identity must be equal to the elected LeaseCandidate.metadata.name field.";
const D_SVC_TYPE: &str = "type determines how the Service is exposed. Defaults to ClusterIP. Valid options are ExternalName, ClusterIP, NodePort, and LoadBalancer. \"ClusterIP\" allocates a cluster-internal IP address for load-balancing to endpoints. Endpoints are determined by the selector or if that is not specified, by manual construction of an Endpoints object or EndpointSlice objects. If clusterIP is \"None\", no virtual IP is allocated and the endpoints are published as a set of endpoints rather than a virtual IP. \"NodePort\" builds on ClusterIP and allocates a port on every node which routes to the same endpoints as the clusterIP. \"LoadBalancer\" builds on NodePort and creates an external load-balancer (if supported in the current cloud) which routes to the same endpoints as the clusterIP. \"ExternalName\" aliases this service to the specified externalName. Several other fields do not apply to ExternalName services. More info: https://kubernetes.io/docs/concepts/services-networking/service/#publishing-services-service-types";
const D_SVC_CLUSTER_IP: &str = "clusterIP is the IP address of the service and is usually assigned randomly. If an address is specified manually, is in-range (as per system configuration), and is not in use, it will be allocated to the service; otherwise creation of the service will fail. This field may not be changed through updates unless the type field is also being changed to ExternalName (which requires this field to be blank) or the type field is being changed from ExternalName (in which case this field may optionally be specified, as describe above).  Valid values are \"None\", empty string (\"\"), or a valid IP address. Setting this to \"None\" makes a \"headless service\" (no virtual IP), which is useful when direct endpoint connections are preferred and proxying is not required.  Only applies to types ClusterIP, NodePort, and LoadBalancer. If this field is specified when creating a Service of type ExternalName, creation will fail. This field will be wiped when updating a Service to type ExternalName. More info: https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-service-proxies";
const D_SVC_EXTERNAL_IPS: &str = "externalIPs is a list of IP addresses for which nodes in the cluster will also accept traffic for this service.  These IPs are not managed by Kubernetes.  The user is responsible for ensuring that traffic arrives at a node with this IP.  A common example is external load-balancers that are not part of the Kubernetes system.";
const D_SVC_PORTS: &str = "The list of ports that are exposed by this service. More info: https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-service-proxies";
const D_SVC_SELECTOR: &str = "Route service traffic to pods with label keys and values matching this selector. If empty or not present, the service is assumed to have an external process managing its endpoints, which Kubernetes will not modify. Only applies to types ClusterIP, NodePort, and LoadBalancer. Ignored if type is ExternalName. More info: https://kubernetes.io/docs/concepts/services-networking/service/";
const D_POD_NODE_SELECTOR: &str = "NodeSelector is a selector which must be true for the pod to fit on a node. Selector which must match a node's labels for the pod to be scheduled on that node. More info: https://kubernetes.io/docs/concepts/configuration/assign-pod-node/";
const D_JOB_SUCCEEDED: &str = "The number of pods which reached phase Succeeded. The value increases monotonically for a given spec. However, it may decrease in reaction to scale down of elastic indexed jobs.";
const D_JOB_SELECTOR: &str = "A label query over pods that should match the pod count. Normally, the system sets this field for you. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors";

// Descriptions that the real printers take from the deprecated
// extensions/v1beta1 types rather than apps/v1.
const D_DEPLOY_UPDATED: &str = "Total number of non-terminated pods targeted by this deployment that have the desired template spec.";
const D_DEPLOY_AVAILABLE: &str = "Total number of available pods (ready for at least minReadySeconds) targeted by this deployment.";
const D_DEPLOY_SELECTOR: &str = "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones affected by this deployment.";
const D_DS_DESIRED: &str = "The total number of nodes that should be running the daemon pod (including nodes correctly running the daemon pod). More info: https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/";
const D_DS_CURRENT: &str = "The number of nodes that are running at least 1 daemon pod and are supposed to run the daemon pod. More info: https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/";
const D_DS_READY: &str = "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and ready.";
const D_DS_UPDATED: &str = "The total number of nodes that are running updated daemon pod";
const D_DS_AVAILABLE: &str = "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and available (ready for at least spec.minReadySeconds)";
const D_DS_SELECTOR: &str = "A label query over pods that are managed by the daemon set. Must match in order to be controlled. If empty, defaulted to labels on Pod template. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors";
const D_RS_DESIRED: &str = "Replicas is the number of desired replicas. This is a pointer to distinguish between explicit zero and unspecified. Defaults to 1. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller/#what-is-a-replicationcontroller";
const D_RS_CURRENT: &str = "Replicas is the most recently oberved number of replicas. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller/#what-is-a-replicationcontroller";
const D_RS_READY: &str = "The number of ready replicas for this replica set.";
const D_RS_SELECTOR: &str = "Selector is a label query over pods that should match the replica count. If the selector is empty, it is defaulted to the labels present on the pod template. Label keys and values that must match in order to be controlled by this replica set. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors";
const D_CONTAINERS: &str = "Names of each container in the template.";
const D_IMAGES: &str = "Images referenced by each container in the template.";
const D_READY_PODS: &str = "Number of the pod with ready state";

fn name_column() -> Column {
    Column::new("Name", "string", "name", D_NAME, 0)
}

fn age_column() -> Column {
    Column::new("Age", "string", "", D_CREATION, 0)
}

/// A priority-0 column without a format.
fn col(name: &str, type_: &str, description: &str) -> Column {
    Column::new(name, type_, "", description, 0)
}

/// A priority-1 ("wide") column without a format.
fn wide(name: &str, type_: &str, description: &str) -> Column {
    Column::new(name, type_, "", description, 1)
}

fn builtin_columns(kind: &PrinterKind) -> Vec<Column> {
    match kind {
        PrinterKind::Default => vec![
            name_column(),
            Column::new("Created At", "date", "", D_CREATION, 0),
        ],
        PrinterKind::Pod => vec![
            name_column(),
            col("Ready", "string", "The aggregate readiness state of this pod for accepting traffic."),
            col("Status", "string", "The aggregate status of the containers in this pod."),
            col("Restarts", "string", "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted."),
            age_column(),
            wide("IP", "string", D_POD_IP),
            wide("Node", "string", D_POD_NODE_NAME),
            wide("Nominated Node", "string", D_POD_NOMINATED_NODE),
            wide("Readiness Gates", "string", D_POD_READINESS_GATES),
        ],
        PrinterKind::Node => vec![
            name_column(),
            col("Status", "string", "The status of the node"),
            col("Roles", "string", "The roles of the node"),
            age_column(),
            col("Version", "string", D_NODE_KUBELET_VERSION),
            wide("Internal-IP", "string", D_NODE_ADDRESSES),
            wide("External-IP", "string", D_NODE_ADDRESSES),
            wide("OS-Image", "string", D_NODE_OS_IMAGE),
            wide("Kernel-Version", "string", D_NODE_KERNEL),
            wide("Container-Runtime", "string", D_NODE_RUNTIME),
        ],
        PrinterKind::Namespace => vec![
            name_column(),
            col("Status", "string", "The status of the namespace"),
            age_column(),
        ],
        PrinterKind::PersistentVolumeClaim => vec![
            name_column(),
            col("Status", "string", D_PVC_PHASE),
            col("Volume", "string", D_PVC_VOLUME),
            col("Capacity", "string", D_PVC_CAPACITY),
            col("Access Modes", "string", D_PVC_ACCESS_MODES),
            col("StorageClass", "string", "StorageClass of the pvc"),
            col("VolumeAttributesClass", "string", "VolumeAttributesClass of the pvc"),
            age_column(),
            wide("VolumeMode", "string", D_PVC_VOLUME_MODE),
        ],
        PrinterKind::PersistentVolume => vec![
            name_column(),
            col("Capacity", "string", D_PV_CAPACITY),
            col("Access Modes", "string", D_PV_ACCESS_MODES),
            col("Reclaim Policy", "string", D_PV_RECLAIM),
            col("Status", "string", D_PV_PHASE),
            col("Claim", "string", D_PV_CLAIM),
            col("StorageClass", "string", "StorageClass of the pv"),
            col("VolumeAttributesClass", "string", "VolumeAttributesClass of the pv"),
            col("Reason", "string", D_PV_REASON),
            age_column(),
            wide("VolumeMode", "string", D_PV_VOLUME_MODE),
        ],
        PrinterKind::StorageClass => vec![
            name_column(),
            col("Provisioner", "string", D_SC_PROVISIONER),
            col("ReclaimPolicy", "string", D_SC_RECLAIM),
            col("VolumeBindingMode", "string", D_SC_BINDING),
            col("AllowVolumeExpansion", "string", D_SC_EXPANSION),
            age_column(),
        ],
        PrinterKind::VolumeAttachment => vec![
            name_column(),
            // The real printer really does mark Attacher with format "name".
            Column::new("Attacher", "string", "name", D_VA_ATTACHER, 0),
            col("PV", "string", D_VA_PV),
            col("Node", "string", D_VA_NODE),
            col("Attached", "boolean", D_VA_ATTACHED),
            age_column(),
        ],
        PrinterKind::CsiDriver => vec![
            name_column(),
            col("AttachRequired", "boolean", D_CSI_ATTACH_REQUIRED),
            col("PodInfoOnMount", "boolean", D_CSI_POD_INFO),
            col("StorageCapacity", "boolean", D_CSI_STORAGE_CAPACITY),
            col("TokenRequests", "string", D_CSI_TOKEN_REQUESTS),
            col("RequiresRepublish", "boolean", D_CSI_REPUBLISH),
            col("Modes", "string", D_CSI_MODES),
            age_column(),
        ],
        PrinterKind::CsiNode => vec![
            name_column(),
            col("Drivers", "integer", "Drivers indicates the number of CSI drivers registered on the node"),
            age_column(),
        ],
        PrinterKind::Event { .. } => vec![
            col("Last Seen", "string", D_EV_LAST),
            col("Type", "string", D_EV_TYPE),
            col("Reason", "string", D_EV_REASON),
            col("Object", "string", D_EV_OBJECT),
            wide("Subobject", "string", D_EV_SUBOBJECT),
            wide("Source", "string", D_EV_SOURCE),
            col("Message", "string", D_EV_MESSAGE),
            wide("First Seen", "string", D_EV_FIRST),
            wide("Count", "string", D_EV_COUNT),
            Column::new("Name", "string", "name", D_NAME, 1),
        ],
        PrinterKind::ConfigMap => vec![name_column(), col("Data", "string", D_CM_DATA), age_column()],
        PrinterKind::Secret => vec![
            name_column(),
            col("Type", "string", D_SECRET_TYPE),
            col("Data", "string", D_SECRET_DATA),
            age_column(),
        ],
        PrinterKind::ServiceAccount => vec![
            name_column(),
            col("Secrets", "string", D_SA_SECRETS),
            age_column(),
        ],
        PrinterKind::Service => vec![
            name_column(),
            col("Type", "string", D_SVC_TYPE),
            col("Cluster-IP", "string", D_SVC_CLUSTER_IP),
            col("External-IP", "string", D_SVC_EXTERNAL_IPS),
            col("Port(s)", "string", D_SVC_PORTS),
            age_column(),
            wide("Selector", "string", D_SVC_SELECTOR),
        ],
        PrinterKind::Lease => vec![name_column(), col("Holder", "string", D_LEASE_HOLDER), age_column()],
        PrinterKind::Deployment => vec![
            name_column(),
            col("Ready", "string", D_READY_PODS),
            col("Up-to-date", "string", D_DEPLOY_UPDATED),
            col("Available", "string", D_DEPLOY_AVAILABLE),
            age_column(),
            wide("Containers", "string", D_CONTAINERS),
            wide("Images", "string", D_IMAGES),
            wide("Selector", "string", D_DEPLOY_SELECTOR),
        ],
        PrinterKind::DaemonSet => vec![
            name_column(),
            col("Desired", "integer", D_DS_DESIRED),
            col("Current", "integer", D_DS_CURRENT),
            col("Ready", "integer", D_DS_READY),
            col("Up-to-date", "integer", D_DS_UPDATED),
            col("Available", "integer", D_DS_AVAILABLE),
            col("Node Selector", "string", D_POD_NODE_SELECTOR),
            age_column(),
            wide("Containers", "string", D_CONTAINERS),
            wide("Images", "string", D_IMAGES),
            wide("Selector", "string", D_DS_SELECTOR),
        ],
        PrinterKind::ReplicaSet => vec![
            name_column(),
            col("Desired", "integer", D_RS_DESIRED),
            col("Current", "integer", D_RS_CURRENT),
            col("Ready", "integer", D_RS_READY),
            age_column(),
            wide("Containers", "string", D_CONTAINERS),
            wide("Images", "string", D_IMAGES),
            wide("Selector", "string", D_RS_SELECTOR),
        ],
        PrinterKind::StatefulSet => vec![
            name_column(),
            col("Ready", "string", D_READY_PODS),
            age_column(),
            wide("Containers", "string", D_CONTAINERS),
            wide("Images", "string", D_IMAGES),
        ],
        PrinterKind::Job => vec![
            name_column(),
            col("Status", "string", "Status of the job."),
            col("Completions", "string", D_JOB_SUCCEEDED),
            col("Duration", "string", "Time required to complete the job."),
            age_column(),
            wide("Containers", "string", D_CONTAINERS),
            wide("Images", "string", D_IMAGES),
            wide("Selector", "string", D_JOB_SELECTOR),
        ],
        PrinterKind::Custom(_) => vec![name_column()],
    }
}

// ---------------------------------------------------------------------------
// Lenient accessors (Go zero-value semantics for missing / mistyped fields)
// ---------------------------------------------------------------------------

fn at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    let mut cur = v;
    for key in path {
        cur = cur.as_object()?.get(*key)?;
    }
    Some(cur)
}

/// A field that is present and not `null` (a non-nil Go pointer).
fn present<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    at(v, path).filter(|x| !x.is_null())
}

/// A field holding a JSON object (a non-nil Go pointer to a struct).
fn object_at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    at(v, path).filter(|x| x.is_object())
}

fn str_at<'a>(v: &'a Value, path: &[&str]) -> &'a str {
    at(v, path).and_then(Value::as_str).unwrap_or("")
}

fn opt_str_at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    at(v, path).and_then(Value::as_str)
}

fn value_as_int(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                Some(i)
            } else if n.as_u64().is_some() {
                Some(i64::MAX)
            } else {
                n.as_f64().map(|f| f as i64)
            }
        }
        _ => None,
    }
}

fn int_at(v: &Value, path: &[&str]) -> i64 {
    at(v, path).and_then(value_as_int).unwrap_or(0)
}

fn opt_int_at(v: &Value, path: &[&str]) -> Option<i64> {
    at(v, path).and_then(value_as_int)
}

fn bool_at(v: &Value, path: &[&str]) -> bool {
    at(v, path).and_then(Value::as_bool).unwrap_or(false)
}

fn opt_bool_at(v: &Value, path: &[&str]) -> Option<bool> {
    at(v, path).and_then(Value::as_bool)
}

fn arr_at<'a>(v: &'a Value, path: &[&str]) -> &'a [Value] {
    match at(v, path) {
        Some(Value::Array(a)) => a.as_slice(),
        _ => &[],
    }
}

fn map_at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Map<String, Value>> {
    at(v, path).and_then(Value::as_object)
}

fn map_len(v: &Value, path: &[&str]) -> usize {
    map_at(v, path).map_or(0, Map::len)
}

fn clamp_i32(i: i64) -> i32 {
    i.clamp(i32::MIN as i64, i32::MAX as i64) as i32
}

fn name_of(obj: &Value) -> &str {
    str_at(obj, &["metadata", "name"])
}

fn annotation<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    map_at(obj, &["metadata", "annotations"])
        .and_then(|m| m.get(key))
        .map(|v| v.as_str().unwrap_or(""))
}

fn is_deleting(obj: &Value) -> bool {
    present(obj, &["metadata", "deletionTimestamp"]).is_some()
}

fn s(x: &str) -> Value {
    Value::String(x.to_string())
}

fn int(i: i64) -> Value {
    Value::from(i)
}

fn float(f: f64) -> Value {
    Number::from_f64(f)
        .map(Value::Number)
        .unwrap_or(Value::Null)
}

// ---------------------------------------------------------------------------
// Time helpers
// ---------------------------------------------------------------------------

/// Parse an RFC3339 `metav1.Time` / `metav1.MicroTime`.  Missing, empty,
/// unparsable and Go-zero (`0001-01-01T00:00:00Z`) values are `None`.
fn parse_time_value(v: Option<&Value>) -> Option<DateTime<Utc>> {
    let text = v?.as_str()?;
    if text.is_empty() || text == "null" {
        return None;
    }
    let t = DateTime::parse_from_rfc3339(text).ok()?.with_timezone(&Utc);
    if is_go_zero_time(&t) {
        None
    } else {
        Some(t)
    }
}

fn is_go_zero_time(t: &DateTime<Utc>) -> bool {
    t.timestamp() == GO_ZERO_UNIX && t.timestamp_subsec_nanos() == 0
}

/// Unix seconds of Go's zero `time.Time` (0001-01-01T00:00:00Z).
const GO_ZERO_UNIX: i64 = -62_135_596_800;

fn time_at(v: &Value, path: &[&str]) -> Option<DateTime<Utc>> {
    parse_time_value(at(v, path))
}

/// `translateTimestampSince`: `<unknown>` for a zero time, else HumanDuration.
fn since(t: Option<DateTime<Utc>>, now: DateTime<Utc>) -> String {
    match t {
        None => "<unknown>".to_string(),
        Some(t) => human_duration(now.signed_duration_since(t)),
    }
}

fn age(obj: &Value, now: DateTime<Utc>) -> Value {
    Value::String(since(time_at(obj, &["metadata", "creationTimestamp"]), now))
}

// ---------------------------------------------------------------------------
// Shared formatting helpers
// ---------------------------------------------------------------------------

/// `labels.FormatLabels`: sorted `k=v` pairs, `<none>` when empty.
fn format_labels(m: Option<&Map<String, Value>>) -> String {
    let mut pairs: Vec<(String, String)> = match m {
        Some(m) => m
            .iter()
            .map(|(k, v)| (k.clone(), plain_string(v)))
            .collect(),
        None => Vec::new(),
    };
    if pairs.is_empty() {
        return "<none>".to_string();
    }
    pairs.sort();
    pairs
        .iter()
        .map(|(k, v)| format!("{}={}", k, v))
        .collect::<Vec<_>>()
        .join(",")
}

fn plain_string(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// `metav1.LabelSelectorAsSelector(sel).String()`.  `Err` means the selector
/// is invalid (unknown operator, wrong number of values, empty key).
fn label_selector_string(sel: Option<&Value>) -> Result<String, ()> {
    let sel = match sel {
        Some(v @ Value::Object(_)) => v,
        _ => return Ok(String::new()), // nil selector => labels.Nothing()
    };
    let mut reqs: Vec<(String, String)> = Vec::new();
    if let Some(labels) = map_at(sel, &["matchLabels"]) {
        for (k, v) in labels {
            if k.is_empty() {
                return Err(());
            }
            reqs.push((k.clone(), format!("{}={}", k, plain_string(v))));
        }
    }
    for expr in arr_at(sel, &["matchExpressions"]) {
        let key = str_at(expr, &["key"]);
        if key.is_empty() {
            return Err(());
        }
        let mut values: Vec<String> = arr_at(expr, &["values"]).iter().map(plain_string).collect();
        let text = match str_at(expr, &["operator"]) {
            op @ ("In" | "NotIn") => {
                if values.is_empty() {
                    return Err(());
                }
                values.sort();
                let word = if op == "In" { "in" } else { "notin" };
                format!("{} {} ({})", key, word, values.join(","))
            }
            "Exists" => {
                if !values.is_empty() {
                    return Err(());
                }
                key.to_string()
            }
            "DoesNotExist" => {
                if !values.is_empty() {
                    return Err(());
                }
                format!("!{}", key)
            }
            _ => return Err(()),
        };
        reqs.push((key.to_string(), text));
    }
    reqs.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(reqs
        .into_iter()
        .map(|(_, t)| t)
        .collect::<Vec<_>>()
        .join(","))
}

/// `metav1.FormatLabelSelector`: `<none>` when empty, `<error>` when invalid.
fn format_label_selector(sel: Option<&Value>) -> String {
    match label_selector_string(sel) {
        Ok(s) if s.is_empty() => "<none>".to_string(),
        Ok(s) => s,
        Err(()) => "<error>".to_string(),
    }
}

/// `layoutContainerCells`: comma-joined container names and images.
fn container_cells(containers: &[Value]) -> (String, String) {
    let names: Vec<&str> = containers.iter().map(|c| str_at(c, &["name"])).collect();
    let images: Vec<&str> = containers.iter().map(|c| str_at(c, &["image"])).collect();
    (names.join(","), images.join(","))
}

/// `helper.GetAccessModesAsString`.
fn access_modes(modes: &[Value]) -> String {
    let have: BTreeSet<&str> = modes.iter().filter_map(Value::as_str).collect();
    let mut out = Vec::new();
    for (mode, short) in [
        ("ReadWriteOnce", "RWO"),
        ("ReadOnlyMany", "ROX"),
        ("ReadWriteMany", "RWX"),
        ("ReadWriteOncePod", "RWOP"),
    ] {
        if have.contains(mode) {
            out.push(short);
        }
    }
    out.join(",")
}

/// A `resource.Quantity` field printed with `.String()`; a missing quantity is
/// the zero Quantity, which prints `0`.
fn quantity_string(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(text)) => canonical_quantity(text).unwrap_or_else(|| text.clone()),
        Some(Value::Number(n)) => {
            let text = n.to_string();
            canonical_quantity(&text).unwrap_or(text)
        }
        _ => "0".to_string(),
    }
}

// ---------------------------------------------------------------------------
// Printers
// ---------------------------------------------------------------------------

fn default_cells(obj: &Value) -> Vec<Value> {
    // `m.GetCreationTimestamp().Time.UTC().Format(time.RFC3339)`; the zero
    // time formats as 0001-01-01T00:00:00Z.
    let created = match time_at(obj, &["metadata", "creationTimestamp"]) {
        Some(t) => t.format("%Y-%m-%dT%H:%M:%SZ").to_string(),
        None => "0001-01-01T00:00:00Z".to_string(),
    };
    vec![s(name_of(obj)), Value::String(created)]
}

// ----- Pod -----------------------------------------------------------------

fn pod_row_conditions(pod: &Value) -> Option<Value> {
    let (reason, message) = match str_at(pod, &["status", "phase"]) {
        "Succeeded" => ("Succeeded", "The pod has completed successfully."),
        "Failed" => ("Failed", "The pod failed."),
        _ => return None,
    };
    let mut c = Map::new();
    c.insert("type".into(), s("Completed"));
    c.insert("status".into(), s("True"));
    c.insert("reason".into(), s(reason));
    c.insert("message".into(), s(message));
    Some(Value::Array(vec![Value::Object(c)]))
}

fn has_condition(conditions: &[Value], type_: &str, status: &str) -> bool {
    conditions
        .iter()
        .any(|c| str_at(c, &["type"]) == type_ && str_at(c, &["status"]) == status)
}

/// Keep the later of two "last restart" times (None = Go zero time).
fn later(cur: Option<DateTime<Utc>>, cand: Option<DateTime<Utc>>) -> Option<DateTime<Utc>> {
    match (cur, cand) {
        (Some(a), Some(b)) => Some(if b > a { b } else { a }),
        (None, b) => b,
        (a, None) => a,
    }
}

fn last_termination_finished(status: &Value) -> Option<DateTime<Utc>> {
    object_at(status, &["lastState", "terminated"]).and_then(|t| time_at(t, &["finishedAt"]))
}

fn pod_cells(pod: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let status = at(pod, &["status"]).unwrap_or(&Value::Null);
    let containers = arr_at(pod, &["spec", "containers"]);
    let init_specs = arr_at(pod, &["spec", "initContainers"]);
    let conditions = arr_at(status, &["conditions"]);

    let mut restarts: i64 = 0;
    let mut restartable_init_restarts: i64 = 0;
    let mut total_containers = containers.len() as i64;
    let mut ready_containers: i64 = 0;
    let mut last_restart: Option<DateTime<Utc>> = None;
    let mut last_restartable_init_restart: Option<DateTime<Utc>> = None;

    let phase = str_at(status, &["phase"]);
    let status_reason = str_at(status, &["reason"]);
    let mut reason = if status_reason.is_empty() {
        phase.to_string()
    } else {
        status_reason.to_string()
    };

    for c in conditions {
        if str_at(c, &["type"]) == "PodScheduled" && str_at(c, &["reason"]) == "SchedulingGated" {
            reason = "SchedulingGated".to_string();
        }
    }

    // Sidecars (init containers with restartPolicy Always) count as containers.
    let is_restartable_init = |name: &str| -> bool {
        init_specs
            .iter()
            .find(|c| str_at(c, &["name"]) == name)
            .is_some_and(|c| str_at(c, &["restartPolicy"]) == "Always")
    };
    for c in init_specs {
        if str_at(c, &["restartPolicy"]) == "Always" {
            total_containers += 1;
        }
    }

    let mut initializing = false;
    for (i, cs) in arr_at(status, &["initContainerStatuses"])
        .iter()
        .enumerate()
    {
        let restart_count = int_at(cs, &["restartCount"]);
        restarts = restarts.saturating_add(restart_count);
        let finished = last_termination_finished(cs);
        last_restart = later(last_restart, finished);
        let restartable = is_restartable_init(str_at(cs, &["name"]));
        if restartable {
            restartable_init_restarts = restartable_init_restarts.saturating_add(restart_count);
            last_restartable_init_restart = later(last_restartable_init_restart, finished);
        }
        let terminated = object_at(cs, &["state", "terminated"]);
        let waiting = object_at(cs, &["state", "waiting"]);
        if let Some(t) = terminated {
            if int_at(t, &["exitCode"]) == 0 {
                continue;
            }
        }
        if restartable && opt_bool_at(cs, &["started"]) == Some(true) {
            if bool_at(cs, &["ready"]) {
                ready_containers += 1;
            }
            continue;
        }
        if let Some(t) = terminated {
            // Initialization failed.
            let r = str_at(t, &["reason"]);
            reason = if !r.is_empty() {
                format!("Init:{}", r)
            } else if int_at(t, &["signal"]) != 0 {
                format!("Init:Signal:{}", int_at(t, &["signal"]))
            } else {
                format!("Init:ExitCode:{}", int_at(t, &["exitCode"]))
            };
        } else if let Some(w) = waiting.filter(|w| {
            let r = str_at(w, &["reason"]);
            !r.is_empty() && r != "PodInitializing"
        }) {
            reason = format!("Init:{}", str_at(w, &["reason"]));
        } else {
            reason = format!("Init:{}/{}", i, init_specs.len());
        }
        initializing = true;
        break;
    }

    if !initializing || has_condition(conditions, "Initialized", "True") {
        // Note: the real printer checks the *first* Initialized condition only;
        // pods never carry duplicates so `any` is equivalent.
        restarts = restartable_init_restarts;
        last_restart = last_restartable_init_restart;
        let mut has_running = false;
        for cs in arr_at(status, &["containerStatuses"]).iter().rev() {
            restarts = restarts.saturating_add(int_at(cs, &["restartCount"]));
            last_restart = later(last_restart, last_termination_finished(cs));
            let waiting_reason =
                object_at(cs, &["state", "waiting"]).map(|w| str_at(w, &["reason"]));
            let terminated = object_at(cs, &["state", "terminated"]);
            if let Some(r) = waiting_reason.filter(|r| !r.is_empty()) {
                reason = r.to_string();
            } else if let Some(t) = terminated {
                let r = str_at(t, &["reason"]);
                reason = if !r.is_empty() {
                    r.to_string()
                } else if int_at(t, &["signal"]) != 0 {
                    format!("Signal:{}", int_at(t, &["signal"]))
                } else {
                    format!("ExitCode:{}", int_at(t, &["exitCode"]))
                };
            } else if bool_at(cs, &["ready"]) && object_at(cs, &["state", "running"]).is_some() {
                has_running = true;
                ready_containers += 1;
            }
        }
        // A pod whose containers finished except for some still running ones
        // is shown as Running / NotReady rather than Completed.
        if reason == "Completed" && has_running {
            reason = if has_condition(conditions, "Ready", "True") {
                "Running".to_string()
            } else {
                "NotReady".to_string()
            };
        }
    }

    if is_deleting(pod) && status_reason == "NodeLost" {
        reason = "Unknown".to_string();
    } else if is_deleting(pod) && phase != "Succeeded" && phase != "Failed" {
        reason = "Terminating".to_string();
    }

    let restarts_text = match last_restart {
        Some(t) if restarts != 0 => format!("{} ({} ago)", restarts, since(Some(t), now)),
        _ => restarts.to_string(),
    };

    let mut pod_ip = arr_at(status, &["podIPs"])
        .first()
        .map(|ip| str_at(ip, &["ip"]))
        .unwrap_or("");
    if pod_ip.is_empty() {
        // podIPs is derived from podIP by the server; accept either.
        pod_ip = str_at(status, &["podIP"]);
    }
    let or_none = |x: &str| {
        if x.is_empty() {
            "<none>".to_string()
        } else {
            x.to_string()
        }
    };

    let gates = arr_at(pod, &["spec", "readinessGates"]);
    let readiness_gates = if gates.is_empty() {
        "<none>".to_string()
    } else {
        let true_count = gates
            .iter()
            .filter(|g| {
                let t = str_at(g, &["conditionType"]);
                conditions
                    .iter()
                    .find(|c| str_at(c, &["type"]) == t)
                    .is_some_and(|c| str_at(c, &["status"]) == "True")
            })
            .count();
        format!("{}/{}", true_count, gates.len())
    };

    vec![
        s(name_of(pod)),
        Value::String(format!("{}/{}", ready_containers, total_containers)),
        Value::String(reason),
        Value::String(restarts_text),
        age(pod, now),
        Value::String(or_none(pod_ip)),
        Value::String(or_none(str_at(pod, &["spec", "nodeName"]))),
        Value::String(or_none(str_at(status, &["nominatedNodeName"]))),
        Value::String(readiness_gates),
    ]
}

// ----- Node ----------------------------------------------------------------

fn node_cells(node: &Value, now: DateTime<Utc>) -> Vec<Value> {
    // The last Ready condition wins (the real printer builds a map by type).
    let ready = arr_at(node, &["status", "conditions"])
        .iter()
        .rev()
        .find(|c| str_at(c, &["type"]) == "Ready");
    let mut status: Vec<&str> = Vec::new();
    match ready {
        Some(c) if str_at(c, &["status"]) == "True" => status.push("Ready"),
        Some(_) => status.push("NotReady"),
        None => status.push("Unknown"),
    }
    if bool_at(node, &["spec", "unschedulable"]) {
        status.push("SchedulingDisabled");
    }

    let mut roles = BTreeSet::new();
    if let Some(labels) = map_at(node, &["metadata", "labels"]) {
        for (k, v) in labels {
            if let Some(role) = k.strip_prefix("node-role.kubernetes.io/") {
                if !role.is_empty() {
                    roles.insert(role.to_string());
                }
            } else if k == "kubernetes.io/role" {
                let v = plain_string(v);
                if !v.is_empty() {
                    roles.insert(v);
                }
            }
        }
    }
    let roles = if roles.is_empty() {
        "<none>".to_string()
    } else {
        roles.into_iter().collect::<Vec<_>>().join(",")
    };

    let address = |type_: &str| -> String {
        arr_at(node, &["status", "addresses"])
            .iter()
            .find(|a| str_at(a, &["type"]) == type_)
            .map(|a| str_at(a, &["address"]).to_string())
            .unwrap_or_else(|| "<none>".to_string())
    };
    let info = |field: &str| -> String {
        match str_at(node, &["status", "nodeInfo", field]) {
            "" => "<unknown>".to_string(),
            x => x.to_string(),
        }
    };

    vec![
        s(name_of(node)),
        Value::String(status.join(",")),
        Value::String(roles),
        age(node, now),
        s(str_at(node, &["status", "nodeInfo", "kubeletVersion"])),
        Value::String(address("InternalIP")),
        Value::String(address("ExternalIP")),
        Value::String(info("osImage")),
        Value::String(info("kernelVersion")),
        Value::String(info("containerRuntimeVersion")),
    ]
}

// ----- Namespace -----------------------------------------------------------

fn namespace_cells(ns: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let phase = match str_at(ns, &["status", "phase"]) {
        "" => "Active", // defaulted by the server
        p => p,
    };
    vec![s(name_of(ns)), s(phase), age(ns, now)]
}

// ----- PersistentVolumeClaim / PersistentVolume ------------------------------

const BETA_STORAGE_CLASS_ANNOTATION: &str = "volume.beta.kubernetes.io/storage-class";

fn pvc_cells(pvc: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let phase = if is_deleting(pvc) {
        "Terminating"
    } else {
        match str_at(pvc, &["status", "phase"]) {
            "" => "Pending",
            p => p,
        }
    };
    let volume_name = str_at(pvc, &["spec", "volumeName"]);
    let (capacity, modes) = if volume_name.is_empty() {
        (String::new(), String::new())
    } else {
        (
            quantity_string(at(pvc, &["status", "capacity", "storage"])),
            access_modes(arr_at(pvc, &["status", "accessModes"])),
        )
    };
    let storage_class = match annotation(pvc, BETA_STORAGE_CLASS_ANNOTATION) {
        Some(c) => c,
        None => str_at(pvc, &["spec", "storageClassName"]),
    };
    let vac = opt_str_at(pvc, &["spec", "volumeAttributesClassName"]).unwrap_or("<unset>");
    let volume_mode = opt_str_at(pvc, &["spec", "volumeMode"]).unwrap_or("Filesystem");
    vec![
        s(name_of(pvc)),
        s(phase),
        s(volume_name),
        Value::String(capacity),
        Value::String(modes),
        s(storage_class),
        s(vac),
        age(pvc, now),
        s(volume_mode),
    ]
}

fn pv_cells(pv: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let claim = match object_at(pv, &["spec", "claimRef"]) {
        Some(r) => format!("{}/{}", str_at(r, &["namespace"]), str_at(r, &["name"])),
        None => String::new(),
    };
    let reclaim = match str_at(pv, &["spec", "persistentVolumeReclaimPolicy"]) {
        "" => "Retain",
        p => p,
    };
    let phase = if is_deleting(pv) {
        "Terminating"
    } else {
        match str_at(pv, &["status", "phase"]) {
            "" => "Pending",
            p => p,
        }
    };
    let storage_class = match annotation(pv, BETA_STORAGE_CLASS_ANNOTATION) {
        Some(c) => c,
        None => str_at(pv, &["spec", "storageClassName"]),
    };
    let vac = opt_str_at(pv, &["spec", "volumeAttributesClassName"]).unwrap_or("<unset>");
    let volume_mode = opt_str_at(pv, &["spec", "volumeMode"]).unwrap_or("Filesystem");
    vec![
        s(name_of(pv)),
        Value::String(quantity_string(at(pv, &["spec", "capacity", "storage"]))),
        Value::String(access_modes(arr_at(pv, &["spec", "accessModes"]))),
        s(reclaim),
        s(phase),
        Value::String(claim),
        s(storage_class),
        s(vac),
        s(str_at(pv, &["status", "reason"])),
        age(pv, now),
        s(volume_mode),
    ]
}

// ----- storage.k8s.io --------------------------------------------------------

fn storage_class_cells(sc: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let is_default = annotation(sc, "storageclass.kubernetes.io/is-default-class") == Some("true")
        || annotation(sc, "storageclass.beta.kubernetes.io/is-default-class") == Some("true");
    let mut name = name_of(sc).to_string();
    if is_default {
        name.push_str(" (default)");
    }
    let reclaim = opt_str_at(sc, &["reclaimPolicy"]).unwrap_or("Delete");
    let binding = opt_str_at(sc, &["volumeBindingMode"]).unwrap_or("Immediate");
    vec![
        Value::String(name),
        s(str_at(sc, &["provisioner"])),
        s(reclaim),
        s(binding),
        Value::Bool(bool_at(sc, &["allowVolumeExpansion"])),
        age(sc, now),
    ]
}

fn volume_attachment_cells(va: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![
        s(name_of(va)),
        s(str_at(va, &["spec", "attacher"])),
        s(str_at(va, &["spec", "source", "persistentVolumeName"])),
        s(str_at(va, &["spec", "nodeName"])),
        Value::Bool(bool_at(va, &["status", "attached"])),
        age(va, now),
    ]
}

fn csi_driver_cells(d: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let attach_required = opt_bool_at(d, &["spec", "attachRequired"]).unwrap_or(true);
    let pod_info = opt_bool_at(d, &["spec", "podInfoOnMount"]).unwrap_or(false);
    let storage_capacity = opt_bool_at(d, &["spec", "storageCapacity"]).unwrap_or(false);
    let token_requests = arr_at(d, &["spec", "tokenRequests"]);
    let token_requests = if token_requests.is_empty() {
        "<unset>".to_string()
    } else {
        token_requests
            .iter()
            .map(|t| str_at(t, &["audience"]))
            .collect::<Vec<_>>()
            .join(",")
    };
    let republish = opt_bool_at(d, &["spec", "requiresRepublish"]).unwrap_or(false);
    let modes: Vec<&str> = arr_at(d, &["spec", "volumeLifecycleModes"])
        .iter()
        .map(|m| m.as_str().unwrap_or(""))
        .collect();
    // An empty list is defaulted to [Persistent] by the server.
    let modes = if modes.is_empty() {
        "Persistent".to_string()
    } else {
        modes.join(",")
    };
    vec![
        s(name_of(d)),
        Value::Bool(attach_required),
        Value::Bool(pod_info),
        Value::Bool(storage_capacity),
        Value::String(token_requests),
        Value::Bool(republish),
        Value::String(modes),
        age(d, now),
    ]
}

fn csi_node_cells(n: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![
        s(name_of(n)),
        int(arr_at(n, &["spec", "drivers"]).len() as i64),
        age(n, now),
    ]
}

// ----- Event (core/v1 and events.k8s.io/v1) ------------------------------------

fn event_cells(ev: &Value, events_api: bool, now: DateTime<Utc>) -> Vec<Value> {
    // Field names differ between the two API versions of the same object.
    let (regarding, message, source, first_key, last_key, count_key, controller_key) = if events_api
    {
        (
            "regarding",
            "note",
            "deprecatedSource",
            "deprecatedFirstTimestamp",
            "deprecatedLastTimestamp",
            "deprecatedCount",
            "reportingController",
        )
    } else {
        (
            "involvedObject",
            "message",
            "source",
            "firstTimestamp",
            "lastTimestamp",
            "count",
            "reportingComponent",
        )
    };

    let first_ts = time_at(ev, &[first_key]);
    let first = match first_ts {
        Some(t) => since(Some(t), now),
        None => since(time_at(ev, &["eventTime"]), now),
    };
    let mut last = match time_at(ev, &[last_key]) {
        Some(t) => since(Some(t), now),
        None => first.clone(),
    };
    let mut count = int_at(ev, &[count_key]);
    if let Some(series) = object_at(ev, &["series"]) {
        last = since(time_at(series, &["lastObservedTime"]), now);
        count = int_at(series, &["count"]);
    } else if count == 0 {
        // Singleton events don't have a count set in the new API.
        count = 1;
    }

    let kind = str_at(ev, &[regarding, "kind"]).to_lowercase();
    let obj_name = str_at(ev, &[regarding, "name"]);
    let target = if obj_name.is_empty() {
        kind
    } else {
        format!("{}/{}", kind, obj_name)
    };

    let first_non_empty = |a: &str, b: &str| {
        if a.is_empty() {
            b.to_string()
        } else {
            a.to_string()
        }
    };
    let component = first_non_empty(
        str_at(ev, &[source, "component"]),
        str_at(ev, &[controller_key]),
    );
    let instance = first_non_empty(
        str_at(ev, &[source, "host"]),
        str_at(ev, &["reportingInstance"]),
    );
    let source_text = if instance.is_empty() {
        component
    } else {
        format!("{}, {}", component, instance)
    };

    vec![
        Value::String(last),
        s(str_at(ev, &["type"])),
        s(str_at(ev, &["reason"])),
        Value::String(target),
        s(str_at(ev, &[regarding, "fieldPath"])),
        Value::String(source_text),
        s(str_at(ev, &[message]).trim()),
        Value::String(first),
        int(count),
        s(name_of(ev)),
    ]
}

// ----- ConfigMap / Secret / ServiceAccount ----------------------------------------

fn config_map_cells(cm: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let n = map_len(cm, &["data"]) + map_len(cm, &["binaryData"]);
    vec![s(name_of(cm)), int(n as i64), age(cm, now)]
}

fn secret_cells(secret: &Value, now: DateTime<Utc>) -> Vec<Value> {
    // stringData is write-only and merged into data by the server.
    let mut keys: BTreeSet<&str> = BTreeSet::new();
    for field in ["data", "stringData"] {
        if let Some(m) = map_at(secret, &[field]) {
            keys.extend(m.keys().map(String::as_str));
        }
    }
    let type_ = match str_at(secret, &["type"]) {
        "" => "Opaque",
        t => t,
    };
    vec![
        s(name_of(secret)),
        s(type_),
        int(keys.len() as i64),
        age(secret, now),
    ]
}

fn service_account_cells(sa: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![
        s(name_of(sa)),
        int(arr_at(sa, &["secrets"]).len() as i64),
        age(sa, now),
    ]
}

// ----- Service -------------------------------------------------------------

fn service_cells(svc: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let svc_type = match str_at(svc, &["spec", "type"]) {
        "" => "ClusterIP",
        t => t,
    };
    let cluster_ip = match arr_at(svc, &["spec", "clusterIPs"]).first() {
        Some(ip) => ip.as_str().unwrap_or("").to_string(),
        None => match str_at(svc, &["spec", "clusterIP"]) {
            "" => "<none>".to_string(),
            ip => ip.to_string(),
        },
    };
    let external_ips: Vec<String> = arr_at(svc, &["spec", "externalIPs"])
        .iter()
        .map(plain_string)
        .collect();
    let external = match svc_type {
        "ClusterIP" | "NodePort" => {
            if external_ips.is_empty() {
                "<none>".to_string()
            } else {
                external_ips.join(",")
            }
        }
        "LoadBalancer" => {
            let mut lb: BTreeSet<String> = BTreeSet::new();
            for ing in arr_at(svc, &["status", "loadBalancer", "ingress"]) {
                let ip = str_at(ing, &["ip"]);
                let host = str_at(ing, &["hostname"]);
                if !ip.is_empty() {
                    lb.insert(ip.to_string());
                } else if !host.is_empty() {
                    lb.insert(host.to_string());
                }
            }
            let mut all: Vec<String> = lb.into_iter().collect();
            if !external_ips.is_empty() {
                all.extend(external_ips);
                all.join(",")
            } else if !all.is_empty() {
                all.join(",")
            } else {
                "<pending>".to_string()
            }
        }
        "ExternalName" => str_at(svc, &["spec", "externalName"]).to_string(),
        _ => "<unknown>".to_string(),
    };
    let ports: Vec<String> = arr_at(svc, &["spec", "ports"])
        .iter()
        .map(|p| {
            let protocol = match str_at(p, &["protocol"]) {
                "" => "TCP",
                x => x,
            };
            let port = int_at(p, &["port"]);
            let node_port = int_at(p, &["nodePort"]);
            if node_port > 0 {
                format!("{}:{}/{}", port, node_port, protocol)
            } else {
                format!("{}/{}", port, protocol)
            }
        })
        .collect();
    let ports = if ports.is_empty() {
        "<none>".to_string()
    } else {
        ports.join(",")
    };
    vec![
        s(name_of(svc)),
        s(svc_type),
        Value::String(cluster_ip),
        Value::String(external),
        Value::String(ports),
        age(svc, now),
        Value::String(format_labels(map_at(svc, &["spec", "selector"]))),
    ]
}

// ----- Lease ---------------------------------------------------------------

fn lease_cells(lease: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![
        s(name_of(lease)),
        s(str_at(lease, &["spec", "holderIdentity"])),
        age(lease, now),
    ]
}

// ----- apps / batch ------------------------------------------------------------

/// `spec.replicas`, defaulted to 1 by the server when unset.
fn desired_replicas(obj: &Value) -> i64 {
    opt_int_at(obj, &["spec", "replicas"]).unwrap_or(1)
}

fn template_containers(obj: &Value) -> &[Value] {
    arr_at(obj, &["spec", "template", "spec", "containers"])
}

fn deployment_cells(d: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let (names, images) = container_cells(template_containers(d));
    let selector = label_selector_string(at(d, &["spec", "selector"]))
        .unwrap_or_else(|_| "<invalid>".to_string());
    vec![
        s(name_of(d)),
        Value::String(format!(
            "{}/{}",
            int_at(d, &["status", "readyReplicas"]),
            desired_replicas(d)
        )),
        int(int_at(d, &["status", "updatedReplicas"])),
        int(int_at(d, &["status", "availableReplicas"])),
        age(d, now),
        Value::String(names),
        Value::String(images),
        Value::String(selector),
    ]
}

fn daemon_set_cells(ds: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let (names, images) = container_cells(template_containers(ds));
    vec![
        s(name_of(ds)),
        int(int_at(ds, &["status", "desiredNumberScheduled"])),
        int(int_at(ds, &["status", "currentNumberScheduled"])),
        int(int_at(ds, &["status", "numberReady"])),
        int(int_at(ds, &["status", "updatedNumberScheduled"])),
        int(int_at(ds, &["status", "numberAvailable"])),
        Value::String(format_labels(map_at(
            ds,
            &["spec", "template", "spec", "nodeSelector"],
        ))),
        age(ds, now),
        Value::String(names),
        Value::String(images),
        Value::String(format_label_selector(at(ds, &["spec", "selector"]))),
    ]
}

fn replica_set_cells(rs: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let (names, images) = container_cells(template_containers(rs));
    vec![
        s(name_of(rs)),
        int(desired_replicas(rs)),
        int(int_at(rs, &["status", "replicas"])),
        int(int_at(rs, &["status", "readyReplicas"])),
        age(rs, now),
        Value::String(names),
        Value::String(images),
        Value::String(format_label_selector(at(rs, &["spec", "selector"]))),
    ]
}

fn stateful_set_cells(sts: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let (names, images) = container_cells(template_containers(sts));
    vec![
        s(name_of(sts)),
        Value::String(format!(
            "{}/{}",
            int_at(sts, &["status", "readyReplicas"]),
            desired_replicas(sts)
        )),
        age(sts, now),
        Value::String(names),
        Value::String(images),
    ]
}

/// Status of the first condition of `type_` is True (`hasJobCondition`).
fn first_condition_true(conditions: &[Value], type_: &str) -> bool {
    conditions
        .iter()
        .find(|c| str_at(c, &["type"]) == type_)
        .is_some_and(|c| str_at(c, &["status"]) == "True")
}

fn job_cells(job: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let succeeded = int_at(job, &["status", "succeeded"]);
    let completions = match opt_int_at(job, &["spec", "completions"]) {
        Some(c) => format!("{}/{}", succeeded, c),
        None => {
            let parallelism = opt_int_at(job, &["spec", "parallelism"]).unwrap_or(0);
            if parallelism > 1 {
                format!("{}/1 of {}", succeeded, parallelism)
            } else {
                format!("{}/1", succeeded)
            }
        }
    };
    // Pointer semantics: a present-but-unparsable time is Go's zero time.
    let start = time_at(job, &["status", "startTime"]).unwrap_or_else(go_zero_time);
    let end = time_at(job, &["status", "completionTime"]).unwrap_or_else(go_zero_time);
    let duration = if present(job, &["status", "startTime"]).is_none() {
        String::new()
    } else if present(job, &["status", "completionTime"]).is_none() {
        human_duration(now.signed_duration_since(start))
    } else {
        human_duration(end.signed_duration_since(start))
    };
    let conditions = arr_at(job, &["status", "conditions"]);
    let status = if first_condition_true(conditions, "Complete") {
        "Complete"
    } else if first_condition_true(conditions, "Failed") {
        "Failed"
    } else if is_deleting(job) {
        "Terminating"
    } else if first_condition_true(conditions, "Suspended") {
        "Suspended"
    } else if first_condition_true(conditions, "FailureTarget") {
        "FailureTarget"
    } else {
        "Running"
    };
    let (names, images) = container_cells(template_containers(job));
    vec![
        s(name_of(job)),
        s(status),
        Value::String(completions),
        Value::String(duration),
        age(job, now),
        Value::String(names),
        Value::String(images),
        Value::String(format_label_selector(at(job, &["spec", "selector"]))),
    ]
}

fn go_zero_time() -> DateTime<Utc> {
    DateTime::from_timestamp(GO_ZERO_UNIX, 0).unwrap_or_default()
}

// ----- Custom resources ------------------------------------------------------------

fn custom_cells(cols: &[CustomColumn], obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let mut cells = Vec::with_capacity(cols.len() + 1);
    cells.push(s(name_of(obj)));
    for c in cols {
        let value = match c.path.find_first(obj) {
            Some(v) => v,
            None => {
                cells.push(Value::Null);
                continue;
            }
        };
        cells.push(custom_cell(&c.type_, value, now));
    }
    cells
}

/// `cellForJSONValue` of the apiextensions table convertor (plus its
/// "string" branch, which prints the value the way `kubectl -o jsonpath` would).
fn custom_cell(type_: &str, value: &Value, now: DateTime<Utc>) -> Value {
    match type_ {
        "string" => Value::String(go_print_value(value)),
        _ if value.is_null() => Value::Null,
        "integer" => match value {
            Value::Number(n) => match n.as_i64() {
                Some(i) => int(i),
                None => n.as_f64().map_or(Value::Null, |f| int(f as i64)),
            },
            _ => Value::Null,
        },
        "number" => match value {
            Value::Number(n) => n.as_f64().map_or(Value::Null, float),
            _ => Value::Null,
        },
        "boolean" => match value {
            Value::Bool(b) => Value::Bool(*b),
            _ => Value::Null,
        },
        "date" => match value {
            Value::String(text) => {
                if text.is_empty() || text == "null" {
                    s("<unknown>")
                } else {
                    match DateTime::parse_from_rfc3339(text) {
                        Ok(t) => {
                            let t = t.with_timezone(&Utc);
                            if is_go_zero_time(&t) {
                                s("<unknown>")
                            } else {
                                Value::String(since(Some(t), now))
                            }
                        }
                        Err(_) => s("<invalid>"),
                    }
                }
            }
            _ => Value::Null,
        },
        _ => Value::Null,
    }
}

// ---------------------------------------------------------------------------
// JSONPath subset (k8s.io/client-go/util/jsonpath semantics with
// AllowMissingKeys(true), as used by the apiextensions table convertor)
// ---------------------------------------------------------------------------

#[derive(Debug, Clone, Default)]
struct JsonPath {
    steps: Vec<Step>,
}

#[derive(Debug, Clone)]
enum Step {
    Field(String),
    Union(Vec<String>),
    Wildcard,
    Recursive,
    Index(Vec<SliceSpec>),
    Filter(Box<Filter>),
}

#[derive(Debug, Clone, Copy)]
struct SliceSpec {
    start: Option<i64>,
    end: Option<i64>,
    step: Option<i64>,
    single: bool,
}

#[derive(Debug, Clone)]
struct Filter {
    left: Vec<Step>,
    cmp: Option<(CmpOp, Operand)>,
}

#[derive(Debug, Clone)]
enum Operand {
    Literal(Value),
    Path(Vec<Step>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CmpOp {
    Eq,
    Ne,
    Lt,
    Gt,
    Le,
    Ge,
    /// An operator the real evaluator rejects at evaluation time (e.g. `=`).
    Invalid,
}

/// Evaluation failed (the real convertor then prints `<none>`).
struct EvalError;

impl JsonPath {
    fn parse(text: &str) -> Result<JsonPath, String> {
        let mut t = text.trim();
        if let Some(inner) = t.strip_prefix('{').and_then(|x| x.strip_suffix('}')) {
            t = inner.trim();
        }
        let chars: Vec<char> = t.chars().collect();
        let mut pos = 0;
        if chars.first() == Some(&'$') {
            pos = 1;
        }
        let steps = parse_steps(&chars, &mut pos)?;
        if pos != chars.len() {
            return Err(format!("unexpected trailing input in {:?}", text));
        }
        Ok(JsonPath { steps })
    }

    /// First result of the path (what the table convertor uses), if any.
    fn find_first<'a>(&self, root: &'a Value) -> Option<&'a Value> {
        eval_steps(&self.steps, root).ok()?.into_iter().next()
    }
}

fn is_field_terminator(ch: char) -> bool {
    ch.is_whitespace() || matches!(ch, '.' | ',' | '[' | ']' | '$' | '@' | '{' | '}')
}

fn parse_steps(c: &[char], pos: &mut usize) -> Result<Vec<Step>, String> {
    let mut steps = Vec::new();
    if *pos < c.len() && c[*pos] != '.' && c[*pos] != '[' {
        // A bare leading identifier, e.g. `status.phase`.
        let name = parse_field_name(c, pos);
        if name.is_empty() {
            return Err(format!("empty field name at {}", *pos));
        }
        steps.push(Step::Field(name));
    }
    while *pos < c.len() {
        match c[*pos] {
            '.' => {
                *pos += 1;
                if *pos < c.len() && c[*pos] == '.' {
                    *pos += 1;
                    steps.push(Step::Recursive);
                }
                if *pos >= c.len() {
                    break; // a trailing '.' selects the current object
                }
                match c[*pos] {
                    '*' => {
                        *pos += 1;
                        steps.push(Step::Wildcard);
                    }
                    '[' => {}
                    _ => {
                        let name = parse_field_name(c, pos);
                        if name.is_empty() {
                            return Err(format!("empty field name at {}", *pos));
                        }
                        steps.push(Step::Field(name));
                    }
                }
            }
            '[' => steps.push(parse_bracket(c, pos)?),
            ch => return Err(format!("unexpected character {:?}", ch)),
        }
    }
    Ok(steps)
}

/// A field name up to the next unescaped terminator; `\x` stands for `x`.
fn parse_field_name(c: &[char], pos: &mut usize) -> String {
    let mut name = String::new();
    while *pos < c.len() {
        let ch = c[*pos];
        if ch == '\\' {
            *pos += 1;
            if *pos < c.len() {
                name.push(c[*pos]);
                *pos += 1;
            }
            continue;
        }
        if is_field_terminator(ch) {
            break;
        }
        name.push(ch);
        *pos += 1;
    }
    name
}

/// Parse `[...]` starting at `c[*pos] == '['`.
fn parse_bracket(c: &[char], pos: &mut usize) -> Result<Step, String> {
    let start = *pos + 1;
    let mut i = start;
    let mut quote: Option<char> = None;
    let mut depth = 0i32;
    while i < c.len() {
        let ch = c[i];
        match quote {
            Some(q) => {
                if ch == '\\' {
                    i += 1;
                } else if ch == q {
                    quote = None;
                }
            }
            None => match ch {
                '\'' | '"' => quote = Some(ch),
                '(' => depth += 1,
                ')' => depth -= 1,
                ']' if depth <= 0 => break,
                _ => {}
            },
        }
        i += 1;
    }
    if i >= c.len() {
        return Err("unterminated [".to_string());
    }
    let inner: String = c[start..i].iter().collect();
    *pos = i + 1;
    let inner = inner.trim();
    if inner == "*" {
        return Ok(Step::Wildcard);
    }
    if let Some(rest) = inner.strip_prefix('?') {
        let rest = rest.trim();
        let body = rest
            .strip_prefix('(')
            .and_then(|r| r.strip_suffix(')'))
            .ok_or_else(|| "malformed filter".to_string())?;
        return Ok(Step::Filter(Box::new(parse_filter(body)?)));
    }
    let parts = split_top_level_commas(inner);
    if parts
        .iter()
        .all(|p| p.starts_with('\'') || p.starts_with('"'))
    {
        let mut names = Vec::new();
        for p in &parts {
            names.push(unquote(p).ok_or_else(|| format!("bad quoted key {:?}", p))?);
        }
        return Ok(if names.len() == 1 {
            Step::Field(names.remove(0))
        } else {
            Step::Union(names)
        });
    }
    let mut specs = Vec::new();
    for p in parts {
        specs.push(parse_slice(&p)?);
    }
    Ok(Step::Index(specs))
}

fn split_top_level_commas(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for ch in s.chars() {
        if let Some(q) = quote {
            cur.push(ch);
            if escaped {
                escaped = false;
            } else if ch == '\\' {
                escaped = true;
            } else if ch == q {
                quote = None;
            }
            continue;
        }
        match ch {
            '\'' | '"' => {
                quote = Some(ch);
                cur.push(ch);
            }
            ',' => out.push(std::mem::take(&mut cur).trim().to_string()),
            _ => cur.push(ch),
        }
    }
    out.push(cur.trim().to_string());
    out
}

fn unquote(p: &str) -> Option<String> {
    let p = p.trim();
    let q = p.chars().next()?;
    if (q != '\'' && q != '"') || p.len() < 2 || !p.ends_with(q) {
        return None;
    }
    let body = &p[1..p.len() - 1];
    let mut out = String::new();
    let mut chars = body.chars();
    while let Some(ch) = chars.next() {
        if ch == '\\' {
            if let Some(n) = chars.next() {
                out.push(n);
            }
        } else {
            out.push(ch);
        }
    }
    Some(out)
}

fn parse_opt_int(s: &str) -> Result<Option<i64>, String> {
    let s = s.trim();
    if s.is_empty() {
        return Ok(None);
    }
    s.parse::<i64>()
        .map(Some)
        .map_err(|_| format!("bad array index {:?}", s))
}

fn parse_slice(p: &str) -> Result<SliceSpec, String> {
    let pieces: Vec<&str> = p.split(':').collect();
    match pieces.len() {
        1 => {
            let n = parse_opt_int(pieces[0])?.ok_or_else(|| "empty array index".to_string())?;
            Ok(SliceSpec {
                start: Some(n),
                end: None,
                step: None,
                single: true,
            })
        }
        2 | 3 => Ok(SliceSpec {
            start: parse_opt_int(pieces[0])?,
            end: parse_opt_int(pieces[1])?,
            step: if pieces.len() == 3 {
                parse_opt_int(pieces[2])?
            } else {
                None
            },
            single: false,
        }),
        _ => Err(format!("bad slice {:?}", p)),
    }
}

fn parse_filter(body: &str) -> Result<Filter, String> {
    // Split at the first run of comparison characters outside quotes.
    let chars: Vec<char> = body.chars().collect();
    let mut quote: Option<char> = None;
    let mut op_start = None;
    for (i, &ch) in chars.iter().enumerate() {
        if let Some(q) = quote {
            if ch == q {
                quote = None;
            }
            continue;
        }
        if ch == '\'' || ch == '"' {
            quote = Some(ch);
        } else if matches!(ch, '!' | '<' | '>' | '=') {
            op_start = Some(i);
            break;
        }
    }
    let relative_path = |text: &str| -> Result<Vec<Step>, String> {
        let text = text.trim();
        let rest = text
            .strip_prefix('@')
            .ok_or_else(|| format!("filter operand {:?} must start with @", text))?;
        let rc: Vec<char> = rest.chars().collect();
        let mut pos = 0;
        let steps = parse_steps(&rc, &mut pos)?;
        if pos != rc.len() {
            return Err(format!("bad filter path {:?}", text));
        }
        Ok(steps)
    };
    let Some(op_start) = op_start else {
        return Ok(Filter {
            left: relative_path(body)?,
            cmp: None,
        });
    };
    let mut op_end = op_start;
    while op_end < chars.len() && matches!(chars[op_end], '!' | '<' | '>' | '=') {
        op_end += 1;
    }
    let left: String = chars[..op_start].iter().collect();
    let op: String = chars[op_start..op_end].iter().collect();
    let right: String = chars[op_end..].iter().collect();
    let op = match op.as_str() {
        "==" => CmpOp::Eq,
        "!=" => CmpOp::Ne,
        "<" => CmpOp::Lt,
        ">" => CmpOp::Gt,
        "<=" => CmpOp::Le,
        ">=" => CmpOp::Ge,
        _ => CmpOp::Invalid,
    };
    let right = right.trim();
    let operand = if right.starts_with('@') {
        Operand::Path(relative_path(right)?)
    } else if right.starts_with('\'') || right.starts_with('"') {
        Operand::Literal(Value::String(
            unquote(right).ok_or_else(|| format!("bad string literal {:?}", right))?,
        ))
    } else if right == "true" || right == "false" {
        Operand::Literal(Value::Bool(right == "true"))
    } else if let Ok(i) = right.parse::<i64>() {
        Operand::Literal(Value::from(i))
    } else if let Ok(f) = right.parse::<f64>() {
        Operand::Literal(float(f))
    } else {
        return Err(format!("bad filter operand {:?}", right));
    };
    Ok(Filter {
        left: relative_path(&left)?,
        cmp: Some((op, operand)),
    })
}

fn eval_steps<'a>(steps: &[Step], root: &'a Value) -> Result<Vec<&'a Value>, EvalError> {
    let mut cur = vec![root];
    for step in steps {
        cur = eval_step(step, cur)?;
    }
    Ok(cur)
}

fn eval_step<'a>(step: &Step, input: Vec<&'a Value>) -> Result<Vec<&'a Value>, EvalError> {
    let mut out = Vec::new();
    match step {
        Step::Field(name) => {
            for v in input {
                if let Some(x) = v.as_object().and_then(|m| m.get(name)) {
                    out.push(x);
                }
            }
        }
        Step::Union(names) => {
            for v in input {
                if let Some(m) = v.as_object() {
                    out.extend(names.iter().filter_map(|n| m.get(n)));
                }
            }
        }
        Step::Wildcard => {
            for v in input {
                match v {
                    Value::Object(m) => out.extend(m.values()),
                    Value::Array(a) => out.extend(a.iter()),
                    _ => {}
                }
            }
        }
        Step::Recursive => {
            for v in input {
                collect_containers(v, &mut out);
            }
        }
        Step::Index(specs) => {
            for v in input {
                match v {
                    Value::Null => continue,
                    Value::Array(a) => {
                        for spec in specs {
                            apply_slice(a, spec, &mut out)?;
                        }
                    }
                    _ => return Err(EvalError),
                }
            }
        }
        Step::Filter(f) => {
            for v in input {
                let items = v.as_array().ok_or(EvalError)?;
                for item in items {
                    if filter_matches(f, item)? {
                        out.push(item);
                    }
                }
            }
        }
    }
    Ok(out)
}

/// Recursive descent: every object/array with children, in pre-order.
fn collect_containers<'a>(v: &'a Value, out: &mut Vec<&'a Value>) {
    let children: Vec<&'a Value> = match v {
        Value::Object(m) => m.values().collect(),
        Value::Array(a) => a.iter().collect(),
        _ => return,
    };
    if children.is_empty() {
        return;
    }
    out.push(v);
    for c in children {
        collect_containers(c, out);
    }
}

fn apply_slice<'a>(
    a: &'a [Value],
    spec: &SliceSpec,
    out: &mut Vec<&'a Value>,
) -> Result<(), EvalError> {
    let len = a.len() as i64;
    let mut start = spec.start.unwrap_or(0);
    let (mut end, end_derived) = if spec.single {
        (start.saturating_add(1), true)
    } else {
        (spec.end.unwrap_or(len), false)
    };
    if start < 0 {
        start += len;
    }
    if end < 0 || (end == 0 && end_derived) {
        end += len;
    }
    if start == end {
        return Ok(());
    }
    if start < 0 || start >= len || end < 0 || end > len || start > end {
        return Err(EvalError);
    }
    let step = match spec.step {
        Some(s) if s <= 0 => return Err(EvalError),
        Some(s) => s as usize,
        None => 1,
    };
    out.extend(a[start as usize..end as usize].iter().step_by(step));
    Ok(())
}

fn filter_matches(f: &Filter, item: &Value) -> Result<bool, EvalError> {
    let lefts = eval_steps(&f.left, item);
    let (op, operand) = match &f.cmp {
        None => return Ok(lefts.is_ok_and(|l| !l.is_empty())),
        Some(c) => c,
    };
    let lefts = lefts?;
    let left = match lefts.len() {
        0 => return Ok(false),
        1 => lefts[0],
        _ => return Err(EvalError),
    };
    let right = match operand {
        Operand::Literal(v) => v,
        Operand::Path(p) => {
            let rights = eval_steps(p, item)?;
            match rights.len() {
                0 => return Ok(false),
                1 => rights[0],
                _ => return Err(EvalError),
            }
        }
    };
    compare(*op, left, right)
}

#[derive(PartialEq, PartialOrd)]
enum Basic<'a> {
    Bool(bool),
    Int(i128),
    Float(f64),
    Str(&'a str),
}

fn basic(v: &Value) -> Result<Basic<'_>, EvalError> {
    match v {
        Value::Bool(b) => Ok(Basic::Bool(*b)),
        Value::String(s) => Ok(Basic::Str(s)),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                Ok(Basic::Int(i as i128))
            } else if let Some(u) = n.as_u64() {
                Ok(Basic::Int(u as i128))
            } else {
                Ok(Basic::Float(n.as_f64().unwrap_or(0.0)))
            }
        }
        _ => Err(EvalError),
    }
}

/// Go text/template comparison semantics: operands must be of the same basic
/// kind (int vs float is an error), booleans only support (in)equality.
fn compare(op: CmpOp, l: &Value, r: &Value) -> Result<bool, EvalError> {
    let (a, b) = (basic(l)?, basic(r)?);
    if std::mem::discriminant(&a) != std::mem::discriminant(&b) {
        return Err(EvalError);
    }
    let is_bool = matches!(a, Basic::Bool(_));
    Ok(match op {
        CmpOp::Eq => a == b,
        CmpOp::Ne => a != b,
        _ if is_bool => return Err(EvalError),
        CmpOp::Lt => a < b,
        CmpOp::Gt => a > b,
        CmpOp::Le => a <= b,
        CmpOp::Ge => a >= b,
        CmpOp::Invalid => return Err(EvalError),
    })
}

// ---------------------------------------------------------------------------
// Go-compatible value printing (what `jsonpath.PrintResults` writes)
// ---------------------------------------------------------------------------

/// `fmt.Fprint`-style text for scalars, compact `encoding/json` for
/// objects/arrays, `<no value>` for null.
fn go_print_value(v: &Value) -> String {
    match v {
        Value::Null => "<no value>".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::String(s) => s.clone(),
        Value::Number(n) => match n.as_i64() {
            Some(i) => i.to_string(),
            None => go_format_float_v(n.as_f64().unwrap_or(0.0)),
        },
        Value::Array(_) | Value::Object(_) => {
            let mut out = String::new();
            write_go_json(v, &mut out);
            out
        }
    }
}

/// Shortest round-trip digits of |f|: (negative, digits, decimal point
/// position) with |f| = 0.d1d2d3... * 10^dp.
fn shortest_digits(f: f64) -> (bool, String, i32) {
    let text = format!("{:e}", f);
    let (neg, text) = match text.strip_prefix('-') {
        Some(t) => (true, t.to_string()),
        None => (false, text),
    };
    let (mant, exp) = text.split_once('e').unwrap_or((text.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mant.chars().filter(|c| c.is_ascii_digit()).collect();
    (neg, digits, exp + 1)
}

fn fmt_exponent(neg: bool, digits: &str, dp: i32) -> String {
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    out.push_str(&digits[..1]);
    if digits.len() > 1 {
        out.push('.');
        out.push_str(&digits[1..]);
    }
    let exp = if digits == "0" { 0 } else { dp - 1 };
    out.push('e');
    out.push(if exp < 0 { '-' } else { '+' });
    out.push_str(&format!("{:02}", exp.abs()));
    out
}

fn fmt_fixed(neg: bool, digits: &str, dp: i32) -> String {
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    let n = digits.len() as i32;
    if digits == "0" {
        out.push('0');
    } else if dp <= 0 {
        out.push_str("0.");
        out.push_str(&"0".repeat((-dp) as usize));
        out.push_str(digits);
    } else if dp >= n {
        out.push_str(digits);
        out.push_str(&"0".repeat((dp - n) as usize));
    } else {
        out.push_str(&digits[..dp as usize]);
        out.push('.');
        out.push_str(&digits[dp as usize..]);
    }
    out
}

/// Go's `%v` for float64: `%g` with the shortest representation, which
/// switches to exponent form when the decimal exponent is < -4 or >= 6
/// (`1e+06`, `123456`, `1e-05`, `0.0001`).
fn go_format_float_v(f: f64) -> String {
    if f.is_nan() {
        return "NaN".to_string();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf" } else { "-Inf" }.to_string();
    }
    let (neg, digits, dp) = shortest_digits(f);
    let exp = dp - 1;
    if digits != "0" && !(-4..6).contains(&exp) {
        fmt_exponent(neg, &digits, dp)
    } else {
        fmt_fixed(neg, &digits, dp)
    }
}

/// encoding/json float formatting.
fn go_json_float(f: f64) -> String {
    let abs = f.abs();
    let (neg, digits, dp) = shortest_digits(f);
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let mut text = fmt_exponent(neg, &digits, dp);
        // Go cleans up e-09 to e-9.
        let b = text.as_bytes();
        let n = b.len();
        if n >= 4 && b[n - 4] == b'e' && b[n - 3] == b'-' && b[n - 2] == b'0' {
            text.remove(n - 2);
        }
        text
    } else {
        fmt_fixed(neg, &digits, dp)
    }
}

/// Compact JSON the way Go's encoding/json writes a decoded
/// `interface{}` tree: sorted object keys, HTML-safe string escaping.
fn write_go_json(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match n.as_i64() {
            Some(i) => out.push_str(&i.to_string()),
            None => out.push_str(&go_json_float(n.as_f64().unwrap_or(0.0))),
        },
        Value::String(s) => write_go_json_string(s, out),
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_go_json(x, out);
            }
            out.push(']');
        }
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_go_json_string(k, out);
                out.push(':');
                write_go_json(&m[k.as_str()], out);
            }
            out.push('}');
        }
    }
}

fn write_go_json_string(s: &str, out: &mut String) {
    out.push('"');
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                out.push_str(&format!("\\u{:04x}", ch as u32));
            }
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

// ---------------------------------------------------------------------------
// resource.Quantity canonicalisation
// ---------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum QuantityFormat {
    DecimalSI,
    BinarySI,
    DecimalExponent,
}

/// value = mantissa * 10^exp10
#[derive(Debug, Clone, Copy)]
struct Quantity {
    mantissa: i128,
    exp10: i32,
    format: QuantityFormat,
}

fn pow10(n: u32) -> Option<i128> {
    10i128.checked_pow(n)
}

fn parse_quantity(text: &str) -> Option<Quantity> {
    let t = text.trim();
    let b = t.as_bytes();
    let mut i = 0;
    let mut negative = false;
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        negative = b[i] == b'-';
        i += 1;
    }
    let int_start = i;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    let int_part = &t[int_start..i];
    let mut frac_part = "";
    if i < b.len() && b[i] == b'.' {
        i += 1;
        let frac_start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        frac_part = &t[frac_start..i];
    }
    if int_part.is_empty() && frac_part.is_empty() {
        return None;
    }
    let suffix = &t[i..];
    let (format, bin_pow, dec_exp): (QuantityFormat, u32, i32) = match suffix {
        "" => (QuantityFormat::DecimalSI, 0, 0),
        "Ki" => (QuantityFormat::BinarySI, 10, 0),
        "Mi" => (QuantityFormat::BinarySI, 20, 0),
        "Gi" => (QuantityFormat::BinarySI, 30, 0),
        "Ti" => (QuantityFormat::BinarySI, 40, 0),
        "Pi" => (QuantityFormat::BinarySI, 50, 0),
        "Ei" => (QuantityFormat::BinarySI, 60, 0),
        "n" => (QuantityFormat::DecimalSI, 0, -9),
        "u" => (QuantityFormat::DecimalSI, 0, -6),
        "m" => (QuantityFormat::DecimalSI, 0, -3),
        "k" => (QuantityFormat::DecimalSI, 0, 3),
        "M" => (QuantityFormat::DecimalSI, 0, 6),
        "G" => (QuantityFormat::DecimalSI, 0, 9),
        "T" => (QuantityFormat::DecimalSI, 0, 12),
        "P" => (QuantityFormat::DecimalSI, 0, 15),
        "E" => (QuantityFormat::DecimalSI, 0, 18),
        s if s.len() > 1 && (s.starts_with('e') || s.starts_with('E')) => {
            let exp = &s[1..];
            let digits = exp.strip_prefix(['+', '-']).unwrap_or(exp);
            if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
                return None;
            }
            (QuantityFormat::DecimalExponent, 0, exp.parse::<i32>().ok()?)
        }
        _ => return None,
    };
    let digits = format!("{}{}", int_part, frac_part);
    let digits = digits.trim_start_matches('0');
    if digits.len() > 36 {
        return None;
    }
    let mut mantissa: i128 = if digits.is_empty() {
        0
    } else {
        digits.parse().ok()?
    };
    mantissa = mantissa.checked_mul(1i128.checked_shl(bin_pow)?)?;
    let mut exp10 = dec_exp.checked_sub(frac_part.len() as i32)?;
    if exp10 > 40 {
        return None;
    }
    // Round up (away from zero) to nano precision, as ParseQuantity does.
    if exp10 < -9 && mantissa != 0 {
        let shift = u32::try_from(-9i64 - i64::from(exp10)).unwrap_or(u32::MAX);
        mantissa = match pow10(shift) {
            Some(div) => {
                let (q, r) = (mantissa / div, mantissa % div);
                if r != 0 {
                    q + 1
                } else {
                    q
                }
            }
            None => 1,
        };
        exp10 = -9;
    }
    let mut format = format;
    if format == QuantityFormat::BinarySI && mantissa != 0 && exp10 < 0 {
        if let Some(p) = pow10((-exp10) as u32) {
            if mantissa < p {
                format = QuantityFormat::DecimalSI; // 0 < value < 1
            }
        }
    }
    if negative {
        mantissa = -mantissa;
    }
    Some(Quantity {
        mantissa,
        exp10,
        format,
    })
}

/// Canonical text of a parsed quantity (`None` only on arithmetic overflow).
fn format_quantity(q: Quantity) -> Option<String> {
    if q.mantissa == 0 {
        return Some("0".to_string());
    }
    let mut format = q.format;
    if format == QuantityFormat::BinarySI {
        // Integer value, if it is one.
        let whole: Option<i128> = if q.exp10 >= 0 {
            pow10(q.exp10 as u32).and_then(|p| q.mantissa.checked_mul(p))
        } else {
            pow10((-q.exp10) as u32).and_then(|p| {
                if q.mantissa % p == 0 {
                    Some(q.mantissa / p)
                } else {
                    None
                }
            })
        };
        match whole {
            Some(v) if v.abs() >= 1024 => {
                let mut v = v;
                let mut k = 0;
                while k < 6 && v % 1024 == 0 {
                    v /= 1024;
                    k += 1;
                }
                let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"][k];
                return Some(format!("{}{}", v, suffix));
            }
            _ => format = QuantityFormat::DecimalSI,
        }
    }
    let mut m = q.mantissa;
    let mut e = q.exp10;
    while m % 10 == 0 {
        m /= 10;
        e += 1;
    }
    while e.rem_euclid(3) != 0 {
        m = m.checked_mul(10)?;
        e -= 1;
    }
    if format == QuantityFormat::DecimalExponent {
        return Some(if e == 0 {
            m.to_string()
        } else {
            format!("{}e{}", m, e)
        });
    }
    if e > 18 {
        m = m.checked_mul(pow10((e - 18) as u32)?)?;
        e = 18;
    }
    let suffix = match e {
        -9 => "n",
        -6 => "u",
        -3 => "m",
        0 => "",
        3 => "k",
        6 => "M",
        9 => "G",
        12 => "T",
        15 => "P",
        18 => "E",
        _ => return None,
    };
    Some(format!("{}{}", m, suffix))
}

// ---------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2024-06-01T12:00:00Z")
            .unwrap()
            .with_timezone(&Utc)
    }

    /// RFC3339 timestamp `secs` seconds before `now()`.
    fn ago(secs: i64) -> String {
        (now() - Duration::seconds(secs)).to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    }

    fn cells(group: &str, kind: &str, obj: &Value) -> Vec<Value> {
        Printer::builtin(group, kind).cells(obj, now())
    }

    fn names(p: &Printer) -> Vec<&str> {
        p.columns.iter().map(|c| c.name.as_str()).collect()
    }

    fn wide_names(p: &Printer) -> Vec<&str> {
        p.columns
            .iter()
            .filter(|c| c.priority == 1)
            .map(|c| c.name.as_str())
            .collect()
    }

    fn hd(secs: i64) -> String {
        human_duration(Duration::seconds(secs))
    }

    // ----- human_duration ------------------------------------------------------

    #[test]
    fn human_duration_boundaries() {
        assert_eq!(hd(-3), "<invalid>");
        assert_eq!(hd(-2), "<invalid>");
        assert_eq!(hd(-1), "0s");
        assert_eq!(human_duration(Duration::milliseconds(-1999)), "0s");
        assert_eq!(human_duration(Duration::milliseconds(-2000)), "<invalid>");
        assert_eq!(hd(0), "0s");
        assert_eq!(human_duration(Duration::milliseconds(999)), "0s");
        assert_eq!(hd(1), "1s");
        assert_eq!(hd(45), "45s");
        assert_eq!(hd(59), "59s");
        assert_eq!(hd(60), "60s");
        assert_eq!(hd(119), "119s");
        assert_eq!(hd(120), "2m");
        assert_eq!(hd(121), "2m1s");
        assert_eq!(hd(5 * 60 + 10), "5m10s");
        assert_eq!(hd(9 * 60 + 59), "9m59s");
        assert_eq!(hd(10 * 60), "10m");
        assert_eq!(hd(10 * 60 + 59), "10m");
        assert_eq!(hd(179 * 60 + 59), "179m");
        assert_eq!(hd(3 * 3600), "3h");
        assert_eq!(hd(3 * 3600 + 20 * 60), "3h20m");
        assert_eq!(hd(7 * 3600 + 59 * 60 + 59), "7h59m");
        assert_eq!(hd(8 * 3600), "8h");
        assert_eq!(hd(8 * 3600 + 30 * 60), "8h");
        assert_eq!(hd(47 * 3600 + 3599), "47h");
        assert_eq!(hd(48 * 3600), "2d");
        assert_eq!(hd(51 * 3600), "2d3h");
        assert_eq!(hd(7 * 86400 + 23 * 3600), "7d23h");
        assert_eq!(hd(8 * 86400), "8d");
        assert_eq!(hd(400 * 86400), "400d");
        assert_eq!(hd(729 * 86400 + 86399), "729d");
        assert_eq!(hd(730 * 86400), "2y");
        assert_eq!(hd((730 + 100) * 86400), "2y100d");
        assert_eq!(hd((8 * 365 - 1) * 86400), "7y364d");
        assert_eq!(hd(8 * 365 * 86400), "8y");
        assert_eq!(hd(10 * 365 * 86400 + 5 * 86400), "10y");
        // Go's time.Duration saturates at ~292 years.
        assert_eq!(hd(1000 * 365 * 86400), "292y");
    }

    // ----- Pod -------------------------------------------------------------------

    #[test]
    fn pod_columns() {
        let p = Printer::builtin("", "Pod");
        assert_eq!(
            names(&p),
            vec![
                "Name",
                "Ready",
                "Status",
                "Restarts",
                "Age",
                "IP",
                "Node",
                "Nominated Node",
                "Readiness Gates"
            ]
        );
        assert_eq!(
            wide_names(&p),
            vec!["IP", "Node", "Nominated Node", "Readiness Gates"]
        );
        assert_eq!(p.columns[0].format, "name");
        assert_eq!(p.columns[3].type_, "string");
        assert!(p.columns.iter().skip(1).all(|c| c.format.is_empty()));
        let defs = p.column_definitions();
        assert_eq!(
            defs[0],
            json!({"name":"Name","type":"string","format":"name","description":D_NAME,"priority":0})
        );
        assert_eq!(defs[5]["priority"], json!(1));
    }

    fn pod(status: Value) -> Value {
        json!({
            "metadata": {"name": "web-0", "namespace": "default", "creationTimestamp": ago(300)},
            "spec": {"containers": [{"name": "app", "image": "nginx"}]},
            "status": status
        })
    }

    fn pod_status(p: &Value) -> (String, String, String) {
        let c = cells("", "Pod", p);
        (
            c[1].as_str().unwrap().to_string(),
            c[2].as_str().unwrap().to_string(),
            c[3].as_str().unwrap().to_string(),
        )
    }

    #[test]
    fn pod_pending_without_statuses() {
        let p = pod(json!({"phase": "Pending"}));
        let c = cells("", "Pod", &p);
        assert_eq!(
            c,
            vec![
                json!("web-0"),
                json!("0/1"),
                json!("Pending"),
                json!("0"),
                json!("5m"),
                json!("<none>"),
                json!("<none>"),
                json!("<none>"),
                json!("<none>")
            ]
        );
    }

    #[test]
    fn pod_container_creating() {
        let p = pod(json!({
            "phase": "Pending",
            "containerStatuses": [{
                "name": "app", "ready": false, "restartCount": 0,
                "state": {"waiting": {"reason": "ContainerCreating"}}
            }]
        }));
        assert_eq!(
            pod_status(&p),
            ("0/1".into(), "ContainerCreating".into(), "0".into())
        );
    }

    #[test]
    fn pod_init_zero_of_two() {
        let mut p = pod(json!({
            "phase": "Pending",
            "initContainerStatuses": [
                {"name": "init-a", "ready": false, "restartCount": 0, "state": {"running": {"startedAt": ago(10)}}},
                {"name": "init-b", "ready": false, "restartCount": 0, "state": {"waiting": {"reason": "PodInitializing"}}}
            ],
            "containerStatuses": [
                {"name": "app", "ready": false, "restartCount": 0, "state": {"waiting": {"reason": "PodInitializing"}}}
            ]
        }));
        p["spec"]["initContainers"] = json!([{"name": "init-a"}, {"name": "init-b"}]);
        assert_eq!(
            pod_status(&p),
            ("0/1".into(), "Init:0/2".into(), "0".into())
        );

        // Second init container now running: Init:1/2.
        p["status"]["initContainerStatuses"][0]["state"] =
            json!({"terminated": {"exitCode": 0, "reason": "Completed"}});
        p["status"]["initContainerStatuses"][1]["state"] = json!({"running": {}});
        assert_eq!(pod_status(&p).1, "Init:1/2");
    }

    #[test]
    fn pod_init_failures() {
        let mut p = pod(json!({
            "phase": "Pending",
            "initContainerStatuses": [
                {"name": "init-a", "restartCount": 3,
                 "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                 "lastState": {"terminated": {"exitCode": 1, "finishedAt": ago(30)}}}
            ]
        }));
        p["spec"]["initContainers"] = json!([{"name": "init-a"}]);
        assert_eq!(
            pod_status(&p),
            (
                "0/1".into(),
                "Init:CrashLoopBackOff".into(),
                "3 (30s ago)".into()
            )
        );

        p["status"]["initContainerStatuses"][0]["state"] =
            json!({"terminated": {"exitCode": 2, "reason": "Error"}});
        assert_eq!(pod_status(&p).1, "Init:Error");
        p["status"]["initContainerStatuses"][0]["state"] = json!({"terminated": {"exitCode": 2}});
        assert_eq!(pod_status(&p).1, "Init:ExitCode:2");
        p["status"]["initContainerStatuses"][0]["state"] =
            json!({"terminated": {"exitCode": 137, "signal": 9}});
        assert_eq!(pod_status(&p).1, "Init:Signal:9");
    }

    #[test]
    fn pod_initializing() {
        let mut p = pod(json!({
            "phase": "Pending",
            "initContainerStatuses": [
                {"name": "init-a", "ready": true, "restartCount": 0, "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}
            ],
            "containerStatuses": [
                {"name": "app", "ready": false, "restartCount": 0, "state": {"waiting": {"reason": "PodInitializing"}}}
            ]
        }));
        p["spec"]["initContainers"] = json!([{"name": "init-a"}]);
        assert_eq!(
            pod_status(&p),
            ("0/1".into(), "PodInitializing".into(), "0".into())
        );
    }

    #[test]
    fn pod_running() {
        let mut p = pod(json!({
            "phase": "Running",
            "podIP": "10.0.0.7",
            "podIPs": [{"ip": "10.0.0.7"}],
            "conditions": [{"type": "Ready", "status": "True"}, {"type": "example.com/gate", "status": "True"}],
            "containerStatuses": [
                {"name": "app", "ready": true, "restartCount": 0, "state": {"running": {"startedAt": ago(200)}}}
            ]
        }));
        p["spec"]["nodeName"] = json!("node-1");
        p["spec"]["readinessGates"] =
            json!([{"conditionType": "example.com/gate"}, {"conditionType": "other"}]);
        let c = cells("", "Pod", &p);
        assert_eq!(
            c,
            vec![
                json!("web-0"),
                json!("1/1"),
                json!("Running"),
                json!("0"),
                json!("5m"),
                json!("10.0.0.7"),
                json!("node-1"),
                json!("<none>"),
                json!("1/2")
            ]
        );
    }

    #[test]
    fn pod_terminating() {
        let mut p = pod(json!({
            "phase": "Running",
            "containerStatuses": [
                {"name": "app", "ready": true, "restartCount": 0, "state": {"running": {}}}
            ]
        }));
        p["metadata"]["deletionTimestamp"] = json!(ago(5));
        assert_eq!(
            pod_status(&p),
            ("1/1".into(), "Terminating".into(), "0".into())
        );

        // A terminal pod being deleted keeps its status.
        p["status"]["phase"] = json!("Succeeded");
        p["status"]["containerStatuses"][0]["state"] =
            json!({"terminated": {"exitCode": 0, "reason": "Completed"}});
        p["status"]["containerStatuses"][0]["ready"] = json!(false);
        assert_eq!(pod_status(&p).1, "Completed");
    }

    #[test]
    fn pod_node_lost_and_unknown() {
        let mut p = pod(json!({"phase": "Running", "reason": "NodeLost"}));
        assert_eq!(pod_status(&p).1, "NodeLost");
        p["metadata"]["deletionTimestamp"] = json!(ago(5));
        assert_eq!(pod_status(&p).1, "Unknown");
        let evicted = pod(json!({"phase": "Failed", "reason": "Evicted"}));
        assert_eq!(pod_status(&evicted).1, "Evicted");
    }

    #[test]
    fn pod_crash_loop_backoff() {
        let p = pod(json!({
            "phase": "Running",
            "containerStatuses": [{
                "name": "app", "ready": false, "restartCount": 5,
                "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 5m0s"}},
                "lastState": {"terminated": {"exitCode": 1, "reason": "Error", "finishedAt": ago(150)}}
            }]
        }));
        assert_eq!(
            pod_status(&p),
            (
                "0/1".into(),
                "CrashLoopBackOff".into(),
                "5 (2m30s ago)".into()
            )
        );
    }

    #[test]
    fn pod_completed_and_error() {
        let mut p = pod(json!({
            "phase": "Succeeded",
            "containerStatuses": [{
                "name": "app", "ready": false, "restartCount": 0,
                "state": {"terminated": {"exitCode": 0, "reason": "Completed", "finishedAt": ago(60)}}
            }]
        }));
        assert_eq!(
            pod_status(&p),
            ("0/1".into(), "Completed".into(), "0".into())
        );
        let printer = Printer::builtin("", "Pod");
        assert_eq!(
            printer.row_conditions(&p),
            Some(
                json!([{"type":"Completed","status":"True","reason":"Succeeded","message":"The pod has completed successfully."}])
            )
        );

        p["status"]["phase"] = json!("Failed");
        p["status"]["containerStatuses"][0]["state"] =
            json!({"terminated": {"exitCode": 1, "reason": "Error"}});
        assert_eq!(pod_status(&p).1, "Error");
        assert_eq!(
            printer.row_conditions(&p).unwrap()[0]["reason"],
            json!("Failed")
        );
        p["status"]["containerStatuses"][0]["state"] = json!({"terminated": {"exitCode": 3}});
        assert_eq!(pod_status(&p).1, "ExitCode:3");
        p["status"]["containerStatuses"][0]["state"] =
            json!({"terminated": {"exitCode": 0, "signal": 15}});
        assert_eq!(pod_status(&p).1, "Signal:15");

        let running = pod(
            json!({"phase": "Running", "containerStatuses": [{"name": "app", "ready": true, "state": {"running": {}}}]}),
        );
        assert_eq!(printer.row_conditions(&running), None);
    }

    #[test]
    fn pod_completed_with_running_sidecar_container() {
        let mut p = pod(json!({
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "False"}],
            "containerStatuses": [
                {"name": "app", "ready": true, "state": {"running": {}}},
                {"name": "job", "ready": false, "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}
            ]
        }));
        p["spec"]["containers"] = json!([{"name": "app"}, {"name": "job"}]);
        // Statuses are walked in reverse: "app" running is seen last.
        assert_eq!(
            pod_status(&p),
            ("1/2".into(), "NotReady".into(), "0".into())
        );
        p["status"]["conditions"][0]["status"] = json!("True");
        assert_eq!(pod_status(&p).1, "Running");
    }

    #[test]
    fn pod_scheduling_gated_and_restartable_init() {
        let p = pod(json!({
            "phase": "Pending",
            "conditions": [{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}]
        }));
        assert_eq!(pod_status(&p).1, "SchedulingGated");

        // A started native sidecar counts toward READY and TOTAL.
        let mut p = pod(json!({
            "phase": "Running",
            "initContainerStatuses": [
                {"name": "sidecar", "ready": true, "started": true, "restartCount": 2,
                 "state": {"running": {}},
                 "lastState": {"terminated": {"exitCode": 1, "finishedAt": ago(600)}}}
            ],
            "containerStatuses": [
                {"name": "app", "ready": true, "restartCount": 1, "state": {"running": {}},
                 "lastState": {"terminated": {"exitCode": 1, "finishedAt": ago(900)}}}
            ]
        }));
        p["spec"]["initContainers"] = json!([{"name": "sidecar", "restartPolicy": "Always"}]);
        assert_eq!(
            pod_status(&p),
            ("2/2".into(), "Running".into(), "3 (10m ago)".into())
        );
    }

    #[test]
    fn pod_restarts_without_termination_time() {
        let p = pod(json!({
            "phase": "Running",
            "containerStatuses": [{"name": "app", "ready": true, "restartCount": 4, "state": {"running": {}}}]
        }));
        assert_eq!(pod_status(&p).2, "4");
    }

    // ----- Node ----------------------------------------------------------------

    #[test]
    fn node_printer() {
        let p = Printer::builtin("", "Node");
        assert_eq!(
            names(&p),
            vec![
                "Name",
                "Status",
                "Roles",
                "Age",
                "Version",
                "Internal-IP",
                "External-IP",
                "OS-Image",
                "Kernel-Version",
                "Container-Runtime"
            ]
        );
        assert_eq!(wide_names(&p).len(), 5);
        let mut node = json!({
            "metadata": {"name": "node-1", "creationTimestamp": ago(3 * 86400),
                         "labels": {"node-role.kubernetes.io/worker": "", "node-role.kubernetes.io/control-plane": "", "kubernetes.io/role": "storage", "node-role.kubernetes.io/": "x"}},
            "spec": {"unschedulable": true},
            "status": {
                "conditions": [{"type": "MemoryPressure", "status": "False"}, {"type": "Ready", "status": "True"}],
                "addresses": [{"type": "Hostname", "address": "node-1"}, {"type": "InternalIP", "address": "192.168.1.10"}],
                "nodeInfo": {"kubeletVersion": "v1.31.0", "osImage": "Ubuntu 22.04", "kernelVersion": "6.5.0", "containerRuntimeVersion": "containerd://1.7.0"}
            }
        });
        assert_eq!(
            p.cells(&node, now()),
            vec![
                json!("node-1"),
                json!("Ready,SchedulingDisabled"),
                json!("control-plane,storage,worker"),
                json!("3d"),
                json!("v1.31.0"),
                json!("192.168.1.10"),
                json!("<none>"),
                json!("Ubuntu 22.04"),
                json!("6.5.0"),
                json!("containerd://1.7.0")
            ]
        );
        node["spec"]["unschedulable"] = json!(false);
        node["status"]["conditions"][1]["status"] = json!("Unknown");
        assert_eq!(p.cells(&node, now())[1], json!("NotReady"));
        let bare = json!({"metadata": {"name": "n"}});
        assert_eq!(
            p.cells(&bare, now()),
            vec![
                json!("n"),
                json!("Unknown"),
                json!("<none>"),
                json!("<unknown>"),
                json!(""),
                json!("<none>"),
                json!("<none>"),
                json!("<unknown>"),
                json!("<unknown>"),
                json!("<unknown>")
            ]
        );
    }

    // ----- Namespace -------------------------------------------------------------

    #[test]
    fn namespace_printer() {
        let p = Printer::builtin("", "Namespace");
        assert_eq!(names(&p), vec!["Name", "Status", "Age"]);
        let ns = json!({"metadata": {"name": "kube-system", "creationTimestamp": ago(90)}, "status": {"phase": "Terminating"}});
        assert_eq!(
            p.cells(&ns, now()),
            vec![json!("kube-system"), json!("Terminating"), json!("90s")]
        );
        let ns = json!({"metadata": {"name": "fresh"}});
        assert_eq!(
            p.cells(&ns, now()),
            vec![json!("fresh"), json!("Active"), json!("<unknown>")]
        );
    }

    // ----- PVC / PV ---------------------------------------------------------------

    #[test]
    fn pvc_printer() {
        let p = Printer::builtin("", "PersistentVolumeClaim");
        assert_eq!(
            names(&p),
            vec![
                "Name",
                "Status",
                "Volume",
                "Capacity",
                "Access Modes",
                "StorageClass",
                "VolumeAttributesClass",
                "Age",
                "VolumeMode"
            ]
        );
        assert_eq!(wide_names(&p), vec!["VolumeMode"]);
        let bound = json!({
            "metadata": {"name": "data-ws-1", "creationTimestamp": ago(7200)},
            "spec": {"volumeName": "pvc-123", "storageClassName": "longhorn", "volumeMode": "Block",
                     "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "10Gi"}},
                     "volumeAttributesClassName": "gold"},
            "status": {"phase": "Bound", "accessModes": ["ReadWriteMany", "ReadWriteOnce", "ReadWriteOnce"], "capacity": {"storage": "10240Mi"}}
        });
        assert_eq!(
            p.cells(&bound, now()),
            vec![
                json!("data-ws-1"),
                json!("Bound"),
                json!("pvc-123"),
                json!("10Gi"),
                json!("RWO,RWX"),
                json!("longhorn"),
                json!("gold"),
                json!("120m"),
                json!("Block")
            ]
        );
        let pending = json!({
            "metadata": {"name": "claim", "creationTimestamp": ago(10),
                         "annotations": {"volume.beta.kubernetes.io/storage-class": "legacy"}},
            "spec": {"storageClassName": "ignored", "resources": {"requests": {"storage": "1Gi"}}},
            "status": {"phase": "Pending"}
        });
        assert_eq!(
            p.cells(&pending, now()),
            vec![
                json!("claim"),
                json!("Pending"),
                json!(""),
                json!(""),
                json!(""),
                json!("legacy"),
                json!("<unset>"),
                json!("10s"),
                json!("Filesystem")
            ]
        );
        let mut deleting = bound.clone();
        deleting["metadata"]["deletionTimestamp"] = json!(ago(1));
        assert_eq!(p.cells(&deleting, now())[1], json!("Terminating"));
        let mut no_cap = bound.clone();
        no_cap["status"] = json!({"phase": "Bound"});
        assert_eq!(p.cells(&no_cap, now())[3], json!("0"));
        assert_eq!(p.cells(&no_cap, now())[4], json!(""));
    }

    #[test]
    fn pv_printer() {
        let p = Printer::builtin("", "PersistentVolume");
        assert_eq!(
            names(&p),
            vec![
                "Name",
                "Capacity",
                "Access Modes",
                "Reclaim Policy",
                "Status",
                "Claim",
                "StorageClass",
                "VolumeAttributesClass",
                "Reason",
                "Age",
                "VolumeMode"
            ]
        );
        assert_eq!(wide_names(&p), vec!["VolumeMode"]);
        let pv = json!({
            "metadata": {"name": "pvc-123", "creationTimestamp": ago(86400)},
            "spec": {"capacity": {"storage": "5Gi"}, "accessModes": ["ReadWriteOncePod", "ReadOnlyMany"],
                     "persistentVolumeReclaimPolicy": "Delete", "storageClassName": "longhorn",
                     "claimRef": {"namespace": "default", "name": "data-ws-1"}, "volumeMode": "Filesystem"},
            "status": {"phase": "Released", "reason": "Reclaiming"}
        });
        assert_eq!(
            p.cells(&pv, now()),
            vec![
                json!("pvc-123"),
                json!("5Gi"),
                json!("ROX,RWOP"),
                json!("Delete"),
                json!("Released"),
                json!("default/data-ws-1"),
                json!("longhorn"),
                json!("<unset>"),
                json!("Reclaiming"),
                json!("24h"),
                json!("Filesystem")
            ]
        );
        let bare = json!({"metadata": {"name": "pv"}});
        assert_eq!(
            p.cells(&bare, now()),
            vec![
                json!("pv"),
                json!("0"),
                json!(""),
                json!("Retain"),
                json!("Pending"),
                json!(""),
                json!(""),
                json!("<unset>"),
                json!(""),
                json!("<unknown>"),
                json!("Filesystem")
            ]
        );
    }

    // ----- storage.k8s.io ------------------------------------------------------------

    #[test]
    fn storage_class_printer() {
        let p = Printer::builtin("storage.k8s.io", "StorageClass");
        assert_eq!(
            names(&p),
            vec![
                "Name",
                "Provisioner",
                "ReclaimPolicy",
                "VolumeBindingMode",
                "AllowVolumeExpansion",
                "Age"
            ]
        );
        let sc = json!({
            "metadata": {"name": "longhorn", "creationTimestamp": ago(600),
                         "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
            "provisioner": "driver.longhorn.io", "allowVolumeExpansion": true,
            "reclaimPolicy": "Retain", "volumeBindingMode": "WaitForFirstConsumer"
        });
        assert_eq!(
            p.cells(&sc, now()),
            vec![
                json!("longhorn (default)"),
                json!("driver.longhorn.io"),
                json!("Retain"),
                json!("WaitForFirstConsumer"),
                json!(true),
                json!("10m")
            ]
        );
        let plain = json!({"metadata": {"name": "slow", "annotations": {"storageclass.beta.kubernetes.io/is-default-class": "false"}}, "provisioner": "x"});
        assert_eq!(
            p.cells(&plain, now()),
            vec![
                json!("slow"),
                json!("x"),
                json!("Delete"),
                json!("Immediate"),
                json!(false),
                json!("<unknown>")
            ]
        );
        let beta = json!({"metadata": {"name": "b", "annotations": {"storageclass.beta.kubernetes.io/is-default-class": "true"}}});
        assert_eq!(p.cells(&beta, now())[0], json!("b (default)"));
    }

    #[test]
    fn volume_attachment_printer() {
        let p = Printer::builtin("storage.k8s.io", "VolumeAttachment");
        assert_eq!(
            names(&p),
            vec!["Name", "Attacher", "PV", "Node", "Attached", "Age"]
        );
        assert_eq!(p.columns[1].format, "name");
        assert_eq!(p.columns[4].type_, "boolean");
        let va = json!({
            "metadata": {"name": "csi-abc", "creationTimestamp": ago(30)},
            "spec": {"attacher": "driver.longhorn.io", "nodeName": "node-1", "source": {"persistentVolumeName": "pvc-123"}},
            "status": {"attached": true}
        });
        assert_eq!(
            p.cells(&va, now()),
            vec![
                json!("csi-abc"),
                json!("driver.longhorn.io"),
                json!("pvc-123"),
                json!("node-1"),
                json!(true),
                json!("30s")
            ]
        );
        let pending = json!({"metadata": {"name": "csi-x"}, "spec": {"attacher": "a", "nodeName": "n", "source": {}}});
        assert_eq!(p.cells(&pending, now())[2], json!(""));
        assert_eq!(p.cells(&pending, now())[4], json!(false));
    }

    #[test]
    fn csi_driver_printer() {
        let p = Printer::builtin("storage.k8s.io", "CSIDriver");
        assert_eq!(
            names(&p),
            vec![
                "Name",
                "AttachRequired",
                "PodInfoOnMount",
                "StorageCapacity",
                "TokenRequests",
                "RequiresRepublish",
                "Modes",
                "Age"
            ]
        );
        let defaults = json!({"metadata": {"name": "driver.longhorn.io", "creationTimestamp": ago(3600)}, "spec": {}});
        assert_eq!(
            p.cells(&defaults, now()),
            vec![
                json!("driver.longhorn.io"),
                json!(true),
                json!(false),
                json!(false),
                json!("<unset>"),
                json!(false),
                json!("Persistent"),
                json!("60m")
            ]
        );
        let explicit = json!({"metadata": {"name": "secrets-store"}, "spec": {
            "attachRequired": false, "podInfoOnMount": true, "storageCapacity": true, "requiresRepublish": true,
            "tokenRequests": [{"audience": "vault"}, {"audience": "aws"}],
            "volumeLifecycleModes": ["Persistent", "Ephemeral"]}});
        assert_eq!(
            p.cells(&explicit, now()),
            vec![
                json!("secrets-store"),
                json!(false),
                json!(true),
                json!(true),
                json!("vault,aws"),
                json!(true),
                json!("Persistent,Ephemeral"),
                json!("<unknown>")
            ]
        );
    }

    #[test]
    fn csi_node_printer() {
        let p = Printer::builtin("storage.k8s.io", "CSINode");
        assert_eq!(names(&p), vec!["Name", "Drivers", "Age"]);
        assert_eq!(p.columns[1].type_, "integer");
        let n = json!({"metadata": {"name": "node-1", "creationTimestamp": ago(100)}, "spec": {"drivers": [{"name": "a"}, {"name": "b"}]}});
        assert_eq!(
            p.cells(&n, now()),
            vec![json!("node-1"), json!(2), json!("100s")]
        );
        let empty = json!({"metadata": {"name": "node-2"}, "spec": {"drivers": null}});
        assert_eq!(p.cells(&empty, now())[1], json!(0));
    }

    // ----- Events --------------------------------------------------------------------

    #[test]
    fn core_event_printer() {
        let p = Printer::builtin("", "Event");
        assert_eq!(
            names(&p),
            vec![
                "Last Seen",
                "Type",
                "Reason",
                "Object",
                "Subobject",
                "Source",
                "Message",
                "First Seen",
                "Count",
                "Name"
            ]
        );
        assert_eq!(
            wide_names(&p),
            vec!["Subobject", "Source", "First Seen", "Count", "Name"]
        );
        assert_eq!(p.columns[9].format, "name");
        let ev = json!({
            "metadata": {"name": "web-0.17a", "creationTimestamp": ago(600)},
            "involvedObject": {"kind": "Pod", "name": "web-0", "fieldPath": "spec.containers{app}"},
            "reason": "BackOff", "message": "  Back-off restarting failed container\n", "type": "Warning",
            "source": {"component": "kubelet", "host": "node-1"},
            "firstTimestamp": ago(600), "lastTimestamp": ago(30), "count": 12
        });
        assert_eq!(
            p.cells(&ev, now()),
            vec![
                json!("30s"),
                json!("Warning"),
                json!("BackOff"),
                json!("pod/web-0"),
                json!("spec.containers{app}"),
                json!("kubelet, node-1"),
                json!("Back-off restarting failed container"),
                json!("10m"),
                json!(12),
                json!("web-0.17a")
            ]
        );
        // New-style event written through core/v1: eventTime + series, no count.
        let ev = json!({
            "metadata": {"name": "e2"},
            "involvedObject": {"kind": "Node"},
            "reason": "Started", "message": "ok", "type": "Normal",
            "eventTime": "2024-06-01T11:55:00.000000Z",
            "reportingComponent": "sim-controller", "reportingInstance": "sim-0"
        });
        let c = p.cells(&ev, now());
        assert_eq!(c[0], json!("5m"));
        assert_eq!(c[3], json!("node"));
        assert_eq!(c[5], json!("sim-controller, sim-0"));
        assert_eq!(c[7], json!("5m"));
        assert_eq!(c[8], json!(1));
        let mut series = ev.clone();
        series["series"] = json!({"count": 7, "lastObservedTime": "2024-06-01T11:59:00.000000Z"});
        let c = p.cells(&series, now());
        assert_eq!(c[0], json!("60s"));
        assert_eq!(c[8], json!(7));
        let nothing = json!({});
        let c = p.cells(&nothing, now());
        assert_eq!(c[0], json!("<unknown>"));
        assert_eq!(c[3], json!(""));
        assert_eq!(c[5], json!(""));
        assert_eq!(c[8], json!(1));
    }

    #[test]
    fn events_v1_printer() {
        let p = Printer::builtin("events.k8s.io", "Event");
        assert_eq!(names(&p), names(&Printer::builtin("", "Event")));
        let ev = json!({
            "apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": "ws-1.abc"},
            "eventTime": "2024-06-01T11:00:00.000000Z",
            "regarding": {"kind": "Workspace", "name": "ws-1", "fieldPath": "spec"},
            "reason": "Provisioned", "note": "volume ready ", "type": "Normal",
            "reportingController": "faultline.dev/operator", "reportingInstance": "op-0",
            "deprecatedCount": 3, "deprecatedFirstTimestamp": ago(7200), "deprecatedLastTimestamp": ago(60)
        });
        assert_eq!(
            p.cells(&ev, now()),
            vec![
                json!("60s"),
                json!("Normal"),
                json!("Provisioned"),
                json!("workspace/ws-1"),
                json!("spec"),
                json!("faultline.dev/operator, op-0"),
                json!("volume ready"),
                json!("120m"),
                json!(3),
                json!("ws-1.abc")
            ]
        );
        let minimal = json!({"metadata": {"name": "m"}, "eventTime": ago(45), "regarding": {"kind": "Pod", "name": "p"}, "reportingController": "c"});
        let c = p.cells(&minimal, now());
        assert_eq!(c[0], json!("45s"));
        assert_eq!(c[5], json!("c"));
        assert_eq!(c[7], json!("45s"));
        assert_eq!(c[8], json!(1));
    }

    // ----- ConfigMap / Secret / ServiceAccount / Lease ---------------------------------

    #[test]
    fn config_map_secret_service_account_lease() {
        let cm = json!({"metadata": {"name": "cfg", "creationTimestamp": ago(5)}, "data": {"a": "1", "b": "2"}, "binaryData": {"c": "AA=="}});
        assert_eq!(
            names(&Printer::builtin("", "ConfigMap")),
            vec!["Name", "Data", "Age"]
        );
        assert_eq!(
            cells("", "ConfigMap", &cm),
            vec![json!("cfg"), json!(3), json!("5s")]
        );

        assert_eq!(
            names(&Printer::builtin("", "Secret")),
            vec!["Name", "Type", "Data", "Age"]
        );
        let secret = json!({"metadata": {"name": "tls"}, "type": "kubernetes.io/tls", "data": {"tls.crt": "", "tls.key": ""}});
        assert_eq!(
            cells("", "Secret", &secret),
            vec![
                json!("tls"),
                json!("kubernetes.io/tls"),
                json!(2),
                json!("<unknown>")
            ]
        );
        let secret = json!({"metadata": {"name": "s"}, "data": {"a": "eA=="}, "stringData": {"a": "x", "b": "y"}});
        assert_eq!(
            cells("", "Secret", &secret),
            vec![json!("s"), json!("Opaque"), json!(2), json!("<unknown>")]
        );

        assert_eq!(
            names(&Printer::builtin("", "ServiceAccount")),
            vec!["Name", "Secrets", "Age"]
        );
        let sa = json!({"metadata": {"name": "default", "creationTimestamp": ago(86400 * 30)}, "secrets": [{"name": "x"}]});
        assert_eq!(
            cells("", "ServiceAccount", &sa),
            vec![json!("default"), json!(1), json!("30d")]
        );
        let sa = json!({"metadata": {"name": "builder"}});
        assert_eq!(cells("", "ServiceAccount", &sa)[1], json!(0));

        let lp = Printer::builtin("coordination.k8s.io", "Lease");
        assert_eq!(names(&lp), vec!["Name", "Holder", "Age"]);
        let lease = json!({"metadata": {"name": "kube-scheduler", "creationTimestamp": ago(100000)}, "spec": {"holderIdentity": "sched-0_abc"}});
        assert_eq!(
            lp.cells(&lease, now()),
            vec![json!("kube-scheduler"), json!("sched-0_abc"), json!("27h")]
        );
        let lease = json!({"metadata": {"name": "l"}, "spec": {}});
        assert_eq!(lp.cells(&lease, now())[1], json!(""));
    }

    // ----- Service --------------------------------------------------------------------

    #[test]
    fn service_printer() {
        let p = Printer::builtin("", "Service");
        assert_eq!(
            names(&p),
            vec![
                "Name",
                "Type",
                "Cluster-IP",
                "External-IP",
                "Port(s)",
                "Age",
                "Selector"
            ]
        );
        assert_eq!(wide_names(&p), vec!["Selector"]);
        let svc = json!({
            "metadata": {"name": "kube-dns", "creationTimestamp": ago(420)},
            "spec": {"type": "ClusterIP", "clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"],
                     "ports": [{"port": 53, "protocol": "UDP"}, {"port": 53, "protocol": "TCP"}, {"port": 9153}],
                     "selector": {"k8s-app": "kube-dns", "app": "dns"}}
        });
        assert_eq!(
            p.cells(&svc, now()),
            vec![
                json!("kube-dns"),
                json!("ClusterIP"),
                json!("10.96.0.10"),
                json!("<none>"),
                json!("53/UDP,53/TCP,9153/TCP"),
                json!("7m"),
                json!("app=dns,k8s-app=kube-dns")
            ]
        );
        let np = json!({"metadata": {"name": "np"}, "spec": {"type": "NodePort", "clusterIP": "10.0.0.5",
            "externalIPs": ["1.2.3.4"], "ports": [{"port": 80, "nodePort": 30080, "protocol": "TCP"}]}});
        let c = p.cells(&np, now());
        assert_eq!(
            c[1..5].to_vec(),
            vec![
                json!("NodePort"),
                json!("10.0.0.5"),
                json!("1.2.3.4"),
                json!("80:30080/TCP")
            ]
        );
        assert_eq!(c[6], json!("<none>"));
        let lb = json!({"metadata": {"name": "lb"}, "spec": {"type": "LoadBalancer", "clusterIPs": ["10.0.0.6"], "ports": []}});
        assert_eq!(p.cells(&lb, now())[3], json!("<pending>"));
        assert_eq!(p.cells(&lb, now())[4], json!("<none>"));
        let lb = json!({"metadata": {"name": "lb"}, "spec": {"type": "LoadBalancer", "externalIPs": ["9.9.9.9"]},
            "status": {"loadBalancer": {"ingress": [{"ip": "5.5.5.5"}, {"hostname": "lb.example.com"}, {"ip": "1.1.1.1"}]}}});
        assert_eq!(
            p.cells(&lb, now())[3],
            json!("1.1.1.1,5.5.5.5,lb.example.com,9.9.9.9")
        );
        let ext = json!({"metadata": {"name": "ext"}, "spec": {"type": "ExternalName", "externalName": "db.example.com"}});
        let c = p.cells(&ext, now());
        assert_eq!(c[2], json!("<none>"));
        assert_eq!(c[3], json!("db.example.com"));
        let headless = json!({"metadata": {"name": "h"}, "spec": {"clusterIP": "None", "clusterIPs": ["None"]}});
        let c = p.cells(&headless, now());
        assert_eq!(c[1], json!("ClusterIP"));
        assert_eq!(c[2], json!("None"));
    }

    // ----- apps / batch -----------------------------------------------------------------

    #[test]
    fn deployment_printer() {
        let p = Printer::builtin("apps", "Deployment");
        assert_eq!(
            names(&p),
            vec![
                "Name",
                "Ready",
                "Up-to-date",
                "Available",
                "Age",
                "Containers",
                "Images",
                "Selector"
            ]
        );
        assert_eq!(wide_names(&p), vec!["Containers", "Images", "Selector"]);
        let d = json!({
            "metadata": {"name": "coredns", "creationTimestamp": ago(4 * 86400 + 21 * 3600)},
            "spec": {"replicas": 2,
                     "selector": {"matchLabels": {"k8s-app": "kube-dns"},
                                  "matchExpressions": [{"key": "tier", "operator": "In", "values": ["web", "api"]},
                                                       {"key": "env", "operator": "NotIn", "values": ["dev"]},
                                                       {"key": "canary", "operator": "DoesNotExist"}]},
                     "template": {"spec": {"containers": [{"name": "coredns", "image": "coredns:1.11"}, {"name": "sidecar", "image": "busybox"}]}}},
            "status": {"readyReplicas": 1, "updatedReplicas": 2, "availableReplicas": 1}
        });
        assert_eq!(
            p.cells(&d, now()),
            vec![
                json!("coredns"),
                json!("1/2"),
                json!(2),
                json!(1),
                json!("4d21h"),
                json!("coredns,sidecar"),
                json!("coredns:1.11,busybox"),
                json!("!canary,env notin (dev),k8s-app=kube-dns,tier in (api,web)")
            ]
        );
        let bare = json!({"metadata": {"name": "d"}});
        assert_eq!(
            p.cells(&bare, now()),
            vec![
                json!("d"),
                json!("0/1"),
                json!(0),
                json!(0),
                json!("<unknown>"),
                json!(""),
                json!(""),
                json!("")
            ]
        );
        let bad = json!({"metadata": {"name": "d"}, "spec": {"selector": {"matchExpressions": [{"key": "a", "operator": "Bogus"}]}}});
        assert_eq!(p.cells(&bad, now())[7], json!("<invalid>"));
    }

    #[test]
    fn daemon_set_printer() {
        let p = Printer::builtin("apps", "DaemonSet");
        assert_eq!(
            names(&p),
            vec![
                "Name",
                "Desired",
                "Current",
                "Ready",
                "Up-to-date",
                "Available",
                "Node Selector",
                "Age",
                "Containers",
                "Images",
                "Selector"
            ]
        );
        assert_eq!(wide_names(&p), vec!["Containers", "Images", "Selector"]);
        assert!(p.columns[1..6].iter().all(|c| c.type_ == "integer"));
        let ds = json!({
            "metadata": {"name": "longhorn-manager", "creationTimestamp": ago(3600 * 5)},
            "spec": {"selector": {"matchLabels": {"app": "longhorn-manager"}},
                     "template": {"spec": {"nodeSelector": {"kubernetes.io/os": "linux"},
                                           "containers": [{"name": "manager", "image": "longhornio/longhorn-manager:v1.6.0"}]}}},
            "status": {"desiredNumberScheduled": 3, "currentNumberScheduled": 3, "numberReady": 2, "updatedNumberScheduled": 3, "numberAvailable": 2}
        });
        assert_eq!(
            p.cells(&ds, now()),
            vec![
                json!("longhorn-manager"),
                json!(3),
                json!(3),
                json!(2),
                json!(3),
                json!(2),
                json!("kubernetes.io/os=linux"),
                json!("5h"),
                json!("manager"),
                json!("longhornio/longhorn-manager:v1.6.0"),
                json!("app=longhorn-manager")
            ]
        );
        let bare = json!({"metadata": {"name": "ds"}});
        let c = p.cells(&bare, now());
        assert_eq!(c[6], json!("<none>"));
        assert_eq!(c[10], json!("<none>"));
        let bad = json!({"spec": {"selector": {"matchExpressions": [{"key": "a", "operator": "In", "values": []}]}}});
        assert_eq!(p.cells(&bad, now())[10], json!("<error>"));
    }

    #[test]
    fn replica_set_stateful_set_job_printers() {
        let rs = json!({"metadata": {"name": "web-7d9"}, "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
            "template": {"spec": {"containers": [{"name": "web", "image": "nginx"}]}}}, "status": {"replicas": 3, "readyReplicas": 2}});
        let p = Printer::builtin("apps", "ReplicaSet");
        assert_eq!(
            names(&p),
            vec![
                "Name",
                "Desired",
                "Current",
                "Ready",
                "Age",
                "Containers",
                "Images",
                "Selector"
            ]
        );
        assert_eq!(
            p.cells(&rs, now()),
            vec![
                json!("web-7d9"),
                json!(3),
                json!(3),
                json!(2),
                json!("<unknown>"),
                json!("web"),
                json!("nginx"),
                json!("app=web")
            ]
        );

        let p = Printer::builtin("apps", "StatefulSet");
        assert_eq!(
            names(&p),
            vec!["Name", "Ready", "Age", "Containers", "Images"]
        );
        let sts = json!({"metadata": {"name": "db", "creationTimestamp": ago(61)}, "spec": {"template": {"spec": {"containers": [{"name": "pg", "image": "postgres:16"}]}}}, "status": {"readyReplicas": 1}});
        assert_eq!(
            p.cells(&sts, now()),
            vec![
                json!("db"),
                json!("1/1"),
                json!("61s"),
                json!("pg"),
                json!("postgres:16")
            ]
        );

        let p = Printer::builtin("batch", "Job");
        assert_eq!(
            names(&p),
            vec![
                "Name",
                "Status",
                "Completions",
                "Duration",
                "Age",
                "Containers",
                "Images",
                "Selector"
            ]
        );
        let job = json!({"metadata": {"name": "backup", "creationTimestamp": ago(600)},
            "spec": {"completions": 1, "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "u1"}},
                     "template": {"spec": {"containers": [{"name": "b", "image": "busybox"}]}}},
            "status": {"succeeded": 1, "startTime": ago(600), "completionTime": ago(540),
                       "conditions": [{"type": "Complete", "status": "True"}]}});
        assert_eq!(
            p.cells(&job, now()),
            vec![
                json!("backup"),
                json!("Complete"),
                json!("1/1"),
                json!("60s"),
                json!("10m"),
                json!("b"),
                json!("busybox"),
                json!("batch.kubernetes.io/controller-uid=u1")
            ]
        );
        let running = json!({"metadata": {"name": "r"}, "spec": {"parallelism": 3}, "status": {"startTime": ago(30)}});
        let c = p.cells(&running, now());
        assert_eq!(
            c[1..4].to_vec(),
            vec![json!("Running"), json!("0/1 of 3"), json!("30s")]
        );
        let fresh = json!({"metadata": {"name": "f"}, "status": {"conditions": [{"type": "Suspended", "status": "True"}]}});
        let c = p.cells(&fresh, now());
        assert_eq!(
            c[1..4].to_vec(),
            vec![json!("Suspended"), json!("0/1"), json!("")]
        );
    }

    // ----- default / CRDs ---------------------------------------------------------------

    #[test]
    fn default_printer_for_types_without_printers() {
        for (g, k) in [
            ("apiextensions.k8s.io", "CustomResourceDefinition"),
            ("rbac.authorization.k8s.io", "ClusterRole"),
            ("example.com", "Widget"),
            ("", "Pods"),
        ] {
            let p = Printer::builtin(g, k);
            assert_eq!(names(&p), vec!["Name", "Created At"], "{}/{}", g, k);
            assert_eq!(p.columns[1].type_, "date");
            assert_eq!(p.columns[1].description, D_CREATION);
        }
        let crd = json!({"metadata": {"name": "workspaces.faultline.dev", "creationTimestamp": "2024-05-30T08:15:00Z"}});
        assert_eq!(
            Printer::builtin("apiextensions.k8s.io", "CustomResourceDefinition").cells(&crd, now()),
            vec![
                json!("workspaces.faultline.dev"),
                json!("2024-05-30T08:15:00Z")
            ]
        );
        let offset =
            json!({"metadata": {"name": "x", "creationTimestamp": "2024-05-30T10:15:00.5+02:00"}});
        assert_eq!(
            Printer::default_printer().cells(&offset, now())[1],
            json!("2024-05-30T08:15:00Z")
        );
        assert_eq!(
            Printer::default_printer().cells(&json!({}), now()),
            vec![json!(""), json!("0001-01-01T00:00:00Z")]
        );
    }

    fn workspace_columns() -> Value {
        json!([
            {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
            {"name": "Runtime", "type": "string", "jsonPath": ".spec.runtime", "description": "Container runtime"},
            {"name": "Storage", "type": "string", "jsonPath": ".spec.storage.size", "priority": 1},
            {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}
        ])
    }

    #[test]
    fn crd_workspace_printer() {
        let p = Printer::custom(&workspace_columns());
        assert_eq!(
            names(&p),
            vec!["Name", "Phase", "Runtime", "Storage", "Age"]
        );
        assert_eq!(
            p.column_definitions(),
            json!([
                {"name": "Name", "type": "string", "format": "name", "description": D_NAME, "priority": 0},
                {"name": "Phase", "type": "string", "format": "", "description": "Custom resource definition column (in JSONPath format): .status.phase", "priority": 0},
                {"name": "Runtime", "type": "string", "format": "", "description": "Container runtime", "priority": 0},
                {"name": "Storage", "type": "string", "format": "", "description": "Custom resource definition column (in JSONPath format): .spec.storage.size", "priority": 1},
                {"name": "Age", "type": "date", "format": "", "description": "Custom resource definition column (in JSONPath format): .metadata.creationTimestamp", "priority": 0}
            ])
        );
        let ws = json!({
            "apiVersion": "faultline.dev/v1alpha1", "kind": "Workspace",
            "metadata": {"name": "ws-1", "namespace": "dev", "creationTimestamp": ago(3 * 3600 + 20 * 60)},
            "spec": {"runtime": "gvisor", "storage": {"size": "20Gi"}},
            "status": {"phase": "Ready"}
        });
        assert_eq!(
            p.cells(&ws, now()),
            vec![
                json!("ws-1"),
                json!("Ready"),
                json!("gvisor"),
                json!("20Gi"),
                json!("3h20m")
            ]
        );
        // Missing fields are null cells (kubectl shows <none>).
        let new_ws = json!({"metadata": {"name": "ws-2"}, "spec": {"storage": null}});
        assert_eq!(
            p.cells(&new_ws, now()),
            vec![
                json!("ws-2"),
                Value::Null,
                Value::Null,
                Value::Null,
                Value::Null
            ]
        );
        let bad_date = json!({"metadata": {"name": "ws-3", "creationTimestamp": "yesterday"}});
        assert_eq!(p.cells(&bad_date, now())[4], json!("<invalid>"));
        let empty_date = json!({"metadata": {"name": "ws-3", "creationTimestamp": ""}});
        assert_eq!(p.cells(&empty_date, now())[4], json!("<unknown>"));

        let table = to_table(&p, &[&ws], "42", "Metadata", true, now());
        assert_eq!(
            table["rows"][0]["cells"],
            json!(["ws-1", "Ready", "gvisor", "20Gi", "3h20m"])
        );
        assert_eq!(
            table["rows"][0]["object"]["metadata"]["namespace"],
            json!("dev")
        );
    }

    #[test]
    fn crd_printer_defaults_and_types() {
        for empty in [Value::Null, json!([]), json!("garbage")] {
            let p = Printer::custom(&empty);
            assert_eq!(names(&p), vec!["Name", "Age"]);
            assert_eq!(p.columns[1].type_, "date");
            assert_eq!(p.columns[1].description, D_CREATION);
            let obj = json!({"metadata": {"name": "a", "creationTimestamp": ago(150)}});
            assert_eq!(p.cells(&obj, now()), vec![json!("a"), json!("2m30s")]);
        }
        let p = Printer::custom(&json!([
            {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
            {"name": "Ratio", "type": "number", "jsonPath": ".status.ratio"},
            {"name": "Paused", "type": "boolean", "jsonPath": ".spec.paused"},
            {"name": "Text", "type": "string", "jsonPath": ".spec.replicas"},
            {"name": "Float", "type": "string", "jsonPath": ".status.ratio"},
            {"name": "Map", "type": "string", "jsonPath": ".spec.labels"},
            {"name": "Null", "type": "string", "jsonPath": ".spec.nothing"},
            {"name": "Wrong", "type": "integer", "jsonPath": ".spec.paused"},
            {"name": "Big", "type": "string", "jsonPath": ".status.big"}
        ]));
        let obj = json!({"metadata": {"name": "o"},
            "spec": {"replicas": 3, "paused": true, "labels": {"z": "<1>", "a": [1, 2.5]}, "nothing": null},
            "status": {"ratio": 0.25, "big": 1234567.0}});
        assert_eq!(
            p.cells(&obj, now()),
            vec![
                json!("o"),
                json!(3),
                json!(0.25),
                json!(true),
                json!("3"),
                json!("0.25"),
                json!("{\"a\":[1,2.5],\"z\":\"\\u003c1\\u003e\"}"),
                json!("<no value>"),
                Value::Null,
                json!("1.234567e+06")
            ]
        );
        let obj =
            json!({"metadata": {"name": "o"}, "spec": {"replicas": 2.9}, "status": {"ratio": 2}});
        let c = p.cells(&obj, now());
        assert_eq!(c[1], json!(2));
        assert_eq!(c[2], json!(2.0));
    }

    #[test]
    fn crd_printer_bad_path_truncates_and_for_crd() {
        let p = Printer::custom(&json!([
            {"name": "Ok", "type": "string", "jsonPath": ".a"},
            {"name": "Bad", "type": "string", "jsonPath": ".a[?(@.x"},
            {"name": "After", "type": "string", "jsonPath": ".b"}
        ]));
        assert_eq!(names(&p), vec!["Name", "Ok"]);

        let crd = json!({"spec": {"versions": [
            {"name": "v1alpha1", "additionalPrinterColumns": [{"name": "Old", "type": "string", "jsonPath": ".x"}]},
            {"name": "v1", "additionalPrinterColumns": workspace_columns()},
            {"name": "v2"}
        ]}});
        assert_eq!(
            names(&Printer::for_crd(&crd, "v1")),
            vec!["Name", "Phase", "Runtime", "Storage", "Age"]
        );
        assert_eq!(names(&Printer::for_crd(&crd, "v2")), vec!["Name", "Age"]);
        let legacy = json!({"spec": {"additionalPrinterColumns": [{"name": "Size", "type": "integer", "JSONPath": ".spec.size"}]}});
        let p = Printer::for_crd(&legacy, "v1beta1");
        assert_eq!(names(&p), vec!["Name", "Size"]);
        assert_eq!(
            p.cells(&json!({"spec": {"size": 4}}), now()),
            vec![json!(""), json!(4)]
        );
    }

    // ----- JSONPath subset --------------------------------------------------------------

    fn jp(path: &str, obj: &Value) -> Option<Value> {
        JsonPath::parse(path).unwrap().find_first(obj).cloned()
    }

    #[test]
    fn jsonpath_subset() {
        let obj = json!({
            "metadata": {"labels": {"app.kubernetes.io/name": "ws", "tier": "web"}, "annotations": {"a.b/c": "d"}},
            "spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"}], "n": 0},
            "status": {"conditions": [
                {"type": "Scheduled", "status": "True", "count": 1},
                {"type": "Ready", "status": "False", "reason": "Pending", "count": 2}
            ]}
        });
        assert_eq!(jp(".spec.containers[0].name", &obj), Some(json!("a")));
        assert_eq!(jp(".spec.containers[1].image", &obj), Some(json!("y")));
        assert_eq!(jp(".spec.containers[-1].name", &obj), Some(json!("b")));
        assert_eq!(jp(".spec.containers[5].name", &obj), None);
        assert_eq!(jp(".spec.containers[*].name", &obj), Some(json!("a")));
        assert_eq!(jp(".spec.containers[1:].name", &obj), Some(json!("b")));
        assert_eq!(
            jp(".metadata.labels['app.kubernetes.io/name']", &obj),
            Some(json!("ws"))
        );
        assert_eq!(jp(".metadata.labels[\"tier\"]", &obj), Some(json!("web")));
        assert_eq!(
            jp(".metadata.labels.app\\.kubernetes\\.io/name", &obj),
            Some(json!("ws"))
        );
        assert_eq!(jp(".metadata.annotations.a\\.b/c", &obj), Some(json!("d")));
        assert_eq!(jp("{.spec.n}", &obj), Some(json!(0)));
        assert_eq!(jp("spec.n", &obj), Some(json!(0)));
        assert_eq!(jp("$.spec.n", &obj), Some(json!(0)));
        assert_eq!(
            jp(".status.conditions[?(@.type==\"Ready\")].status", &obj),
            Some(json!("False"))
        );
        assert_eq!(
            jp(".status.conditions[?(@.type == 'Ready')].reason", &obj),
            Some(json!("Pending"))
        );
        assert_eq!(
            jp(".status.conditions[?(@.type!=\"Scheduled\")].type", &obj),
            Some(json!("Ready"))
        );
        assert_eq!(
            jp(".status.conditions[?(@.count>1)].type", &obj),
            Some(json!("Ready"))
        );
        assert_eq!(
            jp(".status.conditions[?(@.reason)].type", &obj),
            Some(json!("Ready"))
        );
        assert_eq!(
            jp(".status.conditions[?(@.type==\"Missing\")].status", &obj),
            None
        );
        // int vs float comparison is an error in Go templates.
        assert_eq!(jp(".status.conditions[?(@.count>1.5)].type", &obj), None);
        assert_eq!(jp("..image", &obj), Some(json!("x")));
        assert_eq!(jp(".spec.*", &obj).map(|v| v.is_array()), Some(true));
        assert_eq!(jp(".spec.n.deeper", &obj), None);
        assert_eq!(jp(".spec.n[0]", &obj), None);
        assert_eq!(jp(".missing.field", &obj), None);
        assert!(JsonPath::parse(".a[").is_err());
        assert!(JsonPath::parse(".a[x]").is_err());
        assert!(JsonPath::parse(".a b").is_err());
    }

    // ----- quantities & Go number formatting -------------------------------------------------

    #[test]
    fn quantity_canonical_form() {
        let q = |s: &str| canonical_quantity(s);
        assert_eq!(q("10Gi").as_deref(), Some("10Gi"));
        assert_eq!(q("1024Mi").as_deref(), Some("1Gi"));
        assert_eq!(q("1536Mi").as_deref(), Some("1536Mi"));
        assert_eq!(q("1.5Gi").as_deref(), Some("1536Mi"));
        assert_eq!(q("0.5Gi").as_deref(), Some("512Mi"));
        assert_eq!(q("512").as_deref(), Some("512"));
        assert_eq!(q("1000").as_deref(), Some("1k"));
        assert_eq!(q("1500").as_deref(), Some("1500"));
        assert_eq!(q("1.5G").as_deref(), Some("1500M"));
        assert_eq!(q("0.5").as_deref(), Some("500m"));
        assert_eq!(q("100m").as_deref(), Some("100m"));
        assert_eq!(q("1e3").as_deref(), Some("1e3"));
        assert_eq!(q("5E").as_deref(), Some("5E"));
        assert_eq!(q("0.1Ki").as_deref(), Some("102400m"));
        assert_eq!(q("0.0000000001").as_deref(), Some("1n"));
        assert_eq!(q("1e-2147483648").as_deref(), Some("1e-9"));
        assert_eq!(q("1e2147483647"), None);
        assert_eq!(q("99999999999999999999999999999999999999999Ei"), None);
        assert_eq!(q("-2Gi").as_deref(), Some("-2Gi"));
        assert_eq!(q("0").as_deref(), Some("0"));
        assert_eq!(q(" 20Gi ").as_deref(), Some("20Gi"));
        assert_eq!(q("10GB"), None);
        assert_eq!(q("abc"), None);
        assert_eq!(q(""), None);
        assert_eq!(quantity_string(Some(&json!("lots"))), "lots");
        assert_eq!(quantity_string(Some(&json!(2048))), "2048");
        assert_eq!(quantity_string(None), "0");
    }

    #[test]
    fn go_float_formatting() {
        assert_eq!(go_format_float_v(0.25), "0.25");
        assert_eq!(go_format_float_v(3.0), "3");
        assert_eq!(go_format_float_v(123456.0), "123456");
        assert_eq!(go_format_float_v(1e6), "1e+06");
        assert_eq!(go_format_float_v(0.0001), "0.0001");
        assert_eq!(go_format_float_v(0.00001), "1e-05");
        assert_eq!(go_format_float_v(-1.5e-7), "-1.5e-07");
        assert_eq!(go_format_float_v(0.0), "0");
        assert_eq!(go_json_float(1e21), "1e+21");
        assert_eq!(go_json_float(1e20), "100000000000000000000");
        assert_eq!(go_json_float(1.5e-7), "1.5e-7");
        assert_eq!(go_json_float(0.000001), "0.000001");
    }

    // ----- Table assembly -----------------------------------------------------------------

    #[test]
    fn table_shapes() {
        let p = Printer::builtin("", "ConfigMap");
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "cfg", "namespace": "ns", "resourceVersion": "7", "creationTimestamp": ago(5)},
            "data": {"k": "v"}});
        let t = to_table(&p, &[&cm], "99", "Metadata", true, now());
        assert_eq!(
            t,
            json!({
                "kind": "Table",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": {"resourceVersion": "99"},
                "columnDefinitions": p.column_definitions(),
                "rows": [{
                    "cells": ["cfg", 1, "5s"],
                    "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                               "metadata": {"name": "cfg", "namespace": "ns", "resourceVersion": "7", "creationTimestamp": ago(5)}}
                }]
            })
        );
        let keys: Vec<&String> = t.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            vec![
                "kind",
                "apiVersion",
                "metadata",
                "columnDefinitions",
                "rows"
            ]
        );

        let t = to_table(&p, &[&cm], "", "None", false, now());
        assert_eq!(t["metadata"], json!({}));
        assert_eq!(t["columnDefinitions"], json!([]));
        assert_eq!(
            t["rows"][0],
            json!({"cells": ["cfg", 1, "5s"], "object": null})
        );

        let t = to_table(&p, &[&cm], "1", "Object", true, now());
        assert_eq!(t["rows"][0]["object"], cm);

        let t = to_table(&p, &[], "1", "", true, now());
        assert_eq!(t["rows"], json!([]));
        assert_eq!(t["columnDefinitions"].as_array().unwrap().len(), 3);

        let pod_printer = Printer::builtin("", "Pod");
        let done = pod(json!({"phase": "Succeeded"}));
        let t = to_table(&pod_printer, &[&done], "1", "None", true, now());
        let row_keys: Vec<&String> = t["rows"][0].as_object().unwrap().keys().collect();
        assert_eq!(row_keys, vec!["cells", "conditions", "object"]);

        let mut meta = Map::new();
        meta.insert("resourceVersion".into(), json!("5"));
        meta.insert("continue".into(), json!("tok"));
        let t = to_table_with_list_meta(&p, &[&cm], meta, "Metadata", true, now());
        assert_eq!(
            t["metadata"],
            json!({"resourceVersion": "5", "continue": "tok"})
        );

        assert_eq!(
            partial_object_metadata(&json!("not an object")),
            json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": {}})
        );
        assert!(
            is_valid_include_object("Metadata")
                && is_valid_include_object("")
                && !is_valid_include_object("all")
        );
    }

    // ----- robustness -----------------------------------------------------------------------

    fn all_printers() -> Vec<Printer> {
        let mut v: Vec<Printer> = [
            ("", "Pod"),
            ("", "Node"),
            ("", "Namespace"),
            ("", "PersistentVolumeClaim"),
            ("", "PersistentVolume"),
            ("storage.k8s.io", "StorageClass"),
            ("storage.k8s.io", "VolumeAttachment"),
            ("storage.k8s.io", "CSIDriver"),
            ("storage.k8s.io", "CSINode"),
            ("", "Event"),
            ("events.k8s.io", "Event"),
            ("", "ConfigMap"),
            ("", "Secret"),
            ("", "ServiceAccount"),
            ("", "Service"),
            ("coordination.k8s.io", "Lease"),
            ("apps", "Deployment"),
            ("apps", "DaemonSet"),
            ("apps", "ReplicaSet"),
            ("apps", "StatefulSet"),
            ("batch", "Job"),
            ("apiextensions.k8s.io", "CustomResourceDefinition"),
        ]
        .iter()
        .map(|(g, k)| Printer::builtin(g, k))
        .collect();
        v.push(Printer::custom(&workspace_columns()));
        v.push(Printer::custom(&json!([
            {"name": "F", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"},
            {"name": "R", "type": "integer", "jsonPath": "..count"},
            {"name": "S", "type": "number", "jsonPath": ".spec[0:2]"}
        ])));
        v
    }

    #[test]
    fn never_panics_and_cells_match_columns() {
        let weird: Vec<Value> = vec![
            Value::Null,
            json!(1),
            json!("pod"),
            json!([1, 2, 3]),
            json!({}),
            json!({"metadata": null, "spec": null, "status": null}),
            json!({"metadata": 5, "spec": "x", "status": [1]}),
            json!({"metadata": {"name": 7, "creationTimestamp": 12, "deletionTimestamp": "garbage", "labels": [], "annotations": "x"},
                   "spec": {"containers": {"a": 1}, "initContainers": [null, 3, {"name": null}], "replicas": "three",
                            "selector": {"matchLabels": [1], "matchExpressions": [null, {"key": 1}]}, "ports": [null, {"port": "80"}],
                            "type": 5, "clusterIPs": [null], "capacity": {"storage": {"x": 1}}, "claimRef": "c",
                            "drivers": "d", "tokenRequests": {}, "volumeLifecycleModes": [1, null]},
                   "status": {"phase": 3, "conditions": [null, "x", {"type": 1}], "containerStatuses": [null, 1, {"state": "x", "lastState": {"terminated": {"finishedAt": 5}}}],
                              "initContainerStatuses": [{"state": {"terminated": null, "waiting": 1}}, {}], "podIPs": [null],
                              "capacity": {"storage": "1Gi"}, "addresses": "x", "loadBalancer": {"ingress": [1]}, "series": 3,
                              "startTime": "nope", "completionTime": null},
                   "involvedObject": 1, "regarding": {"kind": 3}, "series": {"count": "x"}, "data": [1], "secrets": {"a": 1},
                   "count": 1e300, "firstTimestamp": "0001-01-01T00:00:00Z", "eventTime": 0}),
            json!({"metadata": {"name": "x", "creationTimestamp": "2999-01-01T00:00:00Z"}, "spec": {"type": "LoadBalancer"}}),
            json!({"metadata": {"name": "x", "creationTimestamp": "0001-01-01T00:00:00Z"}, "status": {"big": 18446744073709551615u64}}),
        ];
        for p in all_printers() {
            for w in &weird {
                let c = p.cells(w, now());
                assert_eq!(c.len(), p.columns.len(), "{:?} on {}", p.kind, w);
                let t = to_table(&p, &[w], "1", "Metadata", true, now());
                assert_eq!(
                    t["rows"][0]["cells"].as_array().unwrap().len(),
                    p.columns.len()
                );
                let _ = to_table(&p, &[w], "1", "Object", false, now());
                let _ = to_table(&p, &[w], "1", "None", true, now());
            }
        }
        let future =
            json!({"metadata": {"name": "x", "creationTimestamp": "2999-01-01T00:00:00Z"}});
        assert_eq!(cells("", "ConfigMap", &future)[2], json!("<invalid>"));
        let zero = json!({"metadata": {"name": "x", "creationTimestamp": "0001-01-01T00:00:00Z"}});
        assert_eq!(cells("", "ConfigMap", &zero)[2], json!("<unknown>"));
    }

    #[test]
    fn fuzz_jsonpath_and_quantity_never_panic() {
        let alphabet: Vec<char> = ".[]'\"\\?()@$*:,-=!<>01239aeEiKMGnm {}\u{e9}"
            .chars()
            .collect();
        let obj = json!({"a": [{"b": 1, "c": "x"}, {"b": 2.5}], "d": {"e.f": true}, "n": null});
        let mut state: u64 = 0x2545_f491_4f6c_dd1d;
        for _ in 0..20_000 {
            let mut text = String::new();
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let len = (state % 14) as usize;
            for _ in 0..len {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                text.push(alphabet[(state % alphabet.len() as u64) as usize]);
            }
            if let Ok(p) = JsonPath::parse(&text) {
                let _ = p.find_first(&obj);
            }
            let _ = canonical_quantity(&text);
            let cols = json!([{"name": "X", "type": "date", "jsonPath": text}]);
            let _ = Printer::custom(&cols).cells(&obj, now());
        }
    }

    #[test]
    fn core_group_alias() {
        assert_eq!(
            names(&Printer::builtin("core", "Pod")),
            names(&Printer::builtin("", "Pod"))
        );
    }
}
