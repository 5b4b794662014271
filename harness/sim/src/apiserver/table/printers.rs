//! The printer definitions of the built-in kinds, one per (group, kind), with the columns the
//! real server's printers declare (pkg/printers/internalversion/printers.go, and
//! kube-aggregator's for APIService): name, type, format, priority, description, and how each
//! cell is computed. Kinds without an entry get the default table (Name, Created At).

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::cells::*;
use super::descriptions::*;

/// A cell computed from the whole object (and `now`, for ages).
pub(super) type CellFn = fn(&Value, DateTime<Utc>) -> Value;

/// How one cell is computed.
#[derive(Clone, Copy)]
pub(super) enum Cell {
    /// `metadata.name`.
    Name,
    /// `metadata.creationTimestamp` as a human duration.
    Age,
    /// `metadata.creationTimestamp` in RFC 3339 (the default table's `Created At`).
    CreatedAt,
    /// A string field; "" when absent.
    Str(&'static [&'static str]),
    /// A string field the server defaults: the default when absent or empty.
    StrDefault(&'static [&'static str], &'static str),
    /// A `*string` field: the placeholder when absent (an empty string prints as is).
    StrPtr(&'static [&'static str], &'static str),
    /// An integer field; 0 when absent.
    Int(&'static [&'static str]),
    /// A `*bool` field the server defaults.
    BoolDefault(&'static [&'static str], bool),
    /// The number of entries of a list field.
    Len(&'static [&'static str]),
    Fn(CellFn),
}

pub(super) struct ColumnDef {
    pub name: &'static str,
    pub type_: &'static str,
    pub format: &'static str,
    pub priority: i32,
    pub description: &'static str,
    pub cell: Cell,
}

pub(super) struct PrinterDef {
    pub group: &'static str,
    pub kind: &'static str,
    pub columns: &'static [ColumnDef],
    /// Row-level conditions (pods only).
    pub row_conditions: Option<fn(&Value) -> Option<Value>>,
    /// A cell after the last column's (IPAddress: its printer appends an age no column names).
    pub extra_cell: Option<CellFn>,
}

const fn col(
    name: &'static str,
    type_: &'static str,
    description: &'static str,
    cell: Cell,
) -> ColumnDef {
    ColumnDef {
        name,
        type_,
        format: "",
        priority: 0,
        description,
        cell,
    }
}

/// A priority-1 column: shown by kubectl with `-o wide`.
const fn wide(
    name: &'static str,
    type_: &'static str,
    description: &'static str,
    cell: Cell,
) -> ColumnDef {
    ColumnDef {
        name,
        type_,
        format: "",
        priority: 1,
        description,
        cell,
    }
}

const NAME: ColumnDef = ColumnDef {
    name: "Name",
    type_: "string",
    format: "name",
    priority: 0,
    description: D_NAME,
    cell: Cell::Name,
};
const AGE: ColumnDef = col("Age", "string", D_CREATION, Cell::Age);
const CONTAINERS: ColumnDef = wide(
    "Containers",
    "string",
    D_CONTAINERS,
    Cell::Fn(template_containers),
);
const IMAGES: ColumnDef = wide("Images", "string", D_IMAGES, Cell::Fn(template_images));

/// `rest.NewDefaultTableConvertor`: what kinds without a printer get.
pub(super) const DEFAULT_COLUMNS: &[ColumnDef] =
    &[NAME, col("Created At", "date", D_CREATION, Cell::CreatedAt)];

const fn printer(
    group: &'static str,
    kind: &'static str,
    columns: &'static [ColumnDef],
) -> PrinterDef {
    PrinterDef {
        group,
        kind,
        columns,
        row_conditions: None,
        extra_cell: None,
    }
}

/// The Event columns, over the cell functions of one Event version (core/v1 and
/// events.k8s.io/v1 name the same fields differently).
const fn event_columns(
    last: CellFn,
    object: CellFn,
    subobject: CellFn,
    source: CellFn,
    message: CellFn,
    first: CellFn,
    count: CellFn,
) -> [ColumnDef; 10] {
    [
        col("Last Seen", "string", D_EV_LAST, Cell::Fn(last)),
        col("Type", "string", D_EV_TYPE, Cell::Str(&["type"])),
        col("Reason", "string", D_EV_REASON, Cell::Str(&["reason"])),
        col("Object", "string", D_EV_OBJECT, Cell::Fn(object)),
        wide("Subobject", "string", D_EV_SUBOBJECT, Cell::Fn(subobject)),
        wide("Source", "string", D_EV_SOURCE, Cell::Fn(source)),
        col("Message", "string", D_EV_MESSAGE, Cell::Fn(message)),
        wide("First Seen", "string", D_EV_FIRST, Cell::Fn(first)),
        wide("Count", "string", D_EV_COUNT, Cell::Fn(count)),
        ColumnDef {
            priority: 1,
            ..NAME
        },
    ]
}

const CORE_EVENT_COLUMNS: [ColumnDef; 10] = event_columns(
    ev_last,
    ev_object,
    ev_subobject,
    ev_source,
    ev_message,
    ev_first,
    ev_count,
);
const EVENTS_API_EVENT_COLUMNS: [ColumnDef; 10] = event_columns(
    evapi_last,
    evapi_object,
    evapi_subobject,
    evapi_source,
    evapi_message,
    evapi_first,
    evapi_count,
);

pub(super) static PRINTERS: &[PrinterDef] = &[
    // ----- core -----
    PrinterDef {
        group: "",
        kind: "Pod",
        columns: &[
            NAME,
            col("Ready", "string", "The aggregate readiness state of this pod for accepting traffic.", Cell::Fn(pod_ready)),
            col("Status", "string", "The aggregate status of the containers in this pod.", Cell::Fn(pod_status)),
            col("Restarts", "string", "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.", Cell::Fn(pod_restarts)),
            AGE,
            wide("IP", "string", D_POD_IP, Cell::Fn(pod_ip)),
            wide("Node", "string", D_POD_NODE_NAME, Cell::Fn(pod_node)),
            wide("Nominated Node", "string", D_POD_NOMINATED_NODE, Cell::Fn(pod_nominated_node)),
            wide("Readiness Gates", "string", D_POD_READINESS_GATES, Cell::Fn(pod_readiness_gates)),
        ],
        row_conditions: Some(pod_row_conditions),
        extra_cell: None,
    },
    printer("", "PodTemplate", &[
        NAME,
        col("Containers", "string", D_CONTAINERS, Cell::Fn(template_containers)),
        col("Images", "string", D_IMAGES, Cell::Fn(template_images)),
        col("Pod Labels", "string", "The labels for the pod template.", Cell::Fn(pod_template_labels)),
    ]),
    printer("", "Node", &[
        NAME,
        col("Status", "string", "The status of the node", Cell::Fn(node_status)),
        col("Roles", "string", "The roles of the node", Cell::Fn(node_roles)),
        AGE,
        col("Version", "string", D_NODE_KUBELET_VERSION, Cell::Str(&["status", "nodeInfo", "kubeletVersion"])),
        wide("Internal-IP", "string", D_NODE_ADDRESSES, Cell::Fn(node_internal_ip)),
        wide("External-IP", "string", D_NODE_ADDRESSES, Cell::Fn(node_external_ip)),
        wide("OS-Image", "string", D_NODE_OS_IMAGE, Cell::Fn(node_os_image)),
        wide("Kernel-Version", "string", D_NODE_KERNEL, Cell::Fn(node_kernel)),
        wide("Container-Runtime", "string", D_NODE_RUNTIME, Cell::Fn(node_runtime)),
    ]),
    printer("", "Namespace", &[NAME, col("Status", "string", "The status of the namespace", Cell::Fn(namespace_phase)), AGE]),
    printer("", "PersistentVolumeClaim", &[
        NAME,
        col("Status", "string", D_PVC_PHASE, Cell::Fn(volume_phase)),
        col("Volume", "string", D_PVC_VOLUME, Cell::Str(&["spec", "volumeName"])),
        col("Capacity", "string", D_PVC_CAPACITY, Cell::Fn(pvc_capacity)),
        col("Access Modes", "string", D_PVC_ACCESS_MODES, Cell::Fn(pvc_access_modes)),
        col("StorageClass", "string", "StorageClass of the pvc", Cell::Fn(volume_storage_class)),
        col("VolumeAttributesClass", "string", "VolumeAttributesClass of the pvc", Cell::StrPtr(&["spec", "volumeAttributesClassName"], "<unset>")),
        AGE,
        wide("VolumeMode", "string", D_PVC_VOLUME_MODE, Cell::StrPtr(&["spec", "volumeMode"], "Filesystem")),
    ]),
    printer("", "PersistentVolume", &[
        NAME,
        col("Capacity", "string", D_PV_CAPACITY, Cell::Fn(pv_capacity)),
        col("Access Modes", "string", D_PV_ACCESS_MODES, Cell::Fn(pv_access_modes)),
        col("Reclaim Policy", "string", D_PV_RECLAIM, Cell::StrDefault(&["spec", "persistentVolumeReclaimPolicy"], "Retain")),
        col("Status", "string", D_PV_PHASE, Cell::Fn(volume_phase)),
        col("Claim", "string", D_PV_CLAIM, Cell::Fn(pv_claim)),
        col("StorageClass", "string", "StorageClass of the pv", Cell::Fn(volume_storage_class)),
        col("VolumeAttributesClass", "string", "VolumeAttributesClass of the pv", Cell::StrPtr(&["spec", "volumeAttributesClassName"], "<unset>")),
        col("Reason", "string", D_PV_REASON, Cell::Str(&["status", "reason"])),
        AGE,
        wide("VolumeMode", "string", D_PV_VOLUME_MODE, Cell::StrPtr(&["spec", "volumeMode"], "Filesystem")),
    ]),
    printer("", "Event", &CORE_EVENT_COLUMNS),
    printer("events.k8s.io", "Event", &EVENTS_API_EVENT_COLUMNS),
    printer("", "ConfigMap", &[NAME, col("Data", "string", D_CM_DATA, Cell::Fn(config_map_data)), AGE]),
    printer("", "Secret", &[
        NAME,
        col("Type", "string", D_SECRET_TYPE, Cell::StrDefault(&["type"], "Opaque")),
        col("Data", "string", D_SECRET_DATA, Cell::Fn(secret_data)),
        AGE,
    ]),
    printer("", "ServiceAccount", &[NAME, AGE]),
    printer("", "ResourceQuota", &[
        NAME,
        col("Request", "string", D_RQ_REQUEST, Cell::Fn(quota_requests)),
        col("Limit", "string", D_RQ_LIMIT, Cell::Fn(quota_limits)),
        AGE,
    ]),
    printer("flowcontrol.apiserver.k8s.io", "FlowSchema", &[
        NAME,
        col("PriorityLevel", "string", D_FS_PRIORITY_LEVEL, Cell::Str(&["spec", "priorityLevelConfiguration", "name"])),
        col("MatchingPrecedence", "string", D_FS_PRECEDENCE, Cell::Int(&["spec", "matchingPrecedence"])),
        col("DistinguisherMethod", "string", D_FS_DISTINGUISHER, Cell::Fn(flow_schema_distinguisher)),
        AGE,
        col("MissingPL", "string", D_FS_MISSING_PL, Cell::Fn(flow_schema_missing_pl)),
    ]),
    printer("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration", &[
        NAME,
        col("Type", "string", D_PLC_TYPE, Cell::Str(&["spec", "type"])),
        col("NominalConcurrencyShares", "string", D_PLC_NCS, Cell::Fn(plc_shares)),
        col("Queues", "string", D_PLC_QUEUES, Cell::Fn(plc_queues)),
        col("HandSize", "string", D_PLC_HAND_SIZE, Cell::Fn(plc_hand_size)),
        col("QueueLengthLimit", "string", D_PLC_QUEUE_LENGTH, Cell::Fn(plc_queue_length)),
        AGE,
    ]),
    PrinterDef {
        group: "networking.k8s.io",
        kind: "IPAddress",
        columns: &[NAME, col("ParentRef", "string", D_IPADDRESS_PARENT, Cell::Fn(ip_address_parent))],
        row_conditions: None,
        extra_cell: Some(crate::apiserver::table::access::age),
    },
    printer("networking.k8s.io", "ServiceCIDR", &[NAME, col("CIDRs", "string", D_SERVICECIDR_CIDRS, Cell::Fn(service_cidrs)), AGE]),
    printer("resource.k8s.io", "ResourceClaim", &[NAME, col("State", "string", D_CLAIM_STATE, Cell::Fn(resource_claim_state)), AGE]),
    printer("resource.k8s.io", "ResourceSlice", &[
        NAME,
        col("Node", "string", D_SLICE_NODE, Cell::Str(&["spec", "nodeName"])),
        col("Driver", "string", D_SLICE_DRIVER, Cell::Str(&["spec", "driver"])),
        col("Pool", "string", D_SLICE_POOL, Cell::Str(&["spec", "pool", "name"])),
        AGE,
    ]),
    printer("", "Service", &[
        NAME,
        col("Type", "string", D_SVC_TYPE, Cell::Fn(svc_type)),
        col("Cluster-IP", "string", D_SVC_CLUSTER_IP, Cell::Fn(svc_cluster_ip)),
        col("External-IP", "string", D_SVC_EXTERNAL_IPS, Cell::Fn(svc_external_ip)),
        col("Port(s)", "string", D_SVC_PORTS, Cell::Fn(svc_ports)),
        AGE,
        wide("Selector", "string", D_SVC_SELECTOR, Cell::Fn(svc_selector)),
    ]),
    printer("", "Endpoints", &[NAME, col("Endpoints", "string", D_EP_SUBSETS, Cell::Fn(endpoints_list)), AGE]),
    printer("", "ReplicationController", &[
        NAME,
        col("Desired", "integer", D_RC_DESIRED, Cell::Fn(desired)),
        col("Current", "integer", D_RC_CURRENT, Cell::Int(&["status", "replicas"])),
        col("Ready", "integer", D_RC_READY, Cell::Int(&["status", "readyReplicas"])),
        AGE,
        CONTAINERS,
        IMAGES,
        wide("Selector", "string", D_RC_SELECTOR, Cell::Fn(map_selector)),
    ]),
    printer("", "ComponentStatus", &[
        NAME,
        col("Status", "string", "Status of the component conditions", Cell::Fn(component_status)),
        col("Message", "string", "Message of the component conditions", Cell::Fn(component_message)),
        col("Error", "string", "Error of the component conditions", Cell::Fn(component_error)),
    ]),
    // ----- apps, batch, autoscaling, policy -----
    printer("apps", "Deployment", &[
        NAME,
        col("Ready", "string", D_READY_PODS, Cell::Fn(ready_of_desired)),
        col("Up-to-date", "string", D_DEPLOY_UPDATED, Cell::Int(&["status", "updatedReplicas"])),
        col("Available", "string", D_DEPLOY_AVAILABLE, Cell::Int(&["status", "availableReplicas"])),
        AGE,
        CONTAINERS,
        IMAGES,
        wide("Selector", "string", D_DEPLOY_SELECTOR, Cell::Fn(deployment_selector)),
    ]),
    printer("apps", "DaemonSet", &[
        NAME,
        col("Desired", "integer", D_DS_DESIRED, Cell::Int(&["status", "desiredNumberScheduled"])),
        col("Current", "integer", D_DS_CURRENT, Cell::Int(&["status", "currentNumberScheduled"])),
        col("Ready", "integer", D_DS_READY, Cell::Int(&["status", "numberReady"])),
        col("Up-to-date", "integer", D_DS_UPDATED, Cell::Int(&["status", "updatedNumberScheduled"])),
        col("Available", "integer", D_DS_AVAILABLE, Cell::Int(&["status", "numberAvailable"])),
        col("Node Selector", "string", D_POD_NODE_SELECTOR, Cell::Fn(template_node_selector)),
        AGE,
        CONTAINERS,
        IMAGES,
        wide("Selector", "string", D_DS_SELECTOR, Cell::Fn(spec_selector)),
    ]),
    printer("apps", "ReplicaSet", &[
        NAME,
        col("Desired", "integer", D_RS_DESIRED, Cell::Fn(desired)),
        col("Current", "integer", D_RS_CURRENT, Cell::Int(&["status", "replicas"])),
        col("Ready", "integer", D_RS_READY, Cell::Int(&["status", "readyReplicas"])),
        AGE,
        CONTAINERS,
        IMAGES,
        wide("Selector", "string", D_RS_SELECTOR, Cell::Fn(spec_selector)),
    ]),
    printer("apps", "StatefulSet", &[NAME, col("Ready", "string", D_READY_PODS, Cell::Fn(ready_of_desired)), AGE, CONTAINERS, IMAGES]),
    printer("apps", "ControllerRevision", &[
        NAME,
        col("Controller", "string", "Controller of the object", Cell::Fn(controller_of)),
        col("Revision", "string", D_CR_REVISION, Cell::Int(&["revision"])),
        AGE,
    ]),
    printer("batch", "Job", &[
        NAME,
        col("Status", "string", "Status of the job.", Cell::Fn(job_status)),
        col("Completions", "string", D_JOB_SUCCEEDED, Cell::Fn(job_completions)),
        col("Duration", "string", "Time required to complete the job.", Cell::Fn(job_duration)),
        AGE,
        CONTAINERS,
        IMAGES,
        wide("Selector", "string", D_JOB_SELECTOR, Cell::Fn(spec_selector)),
    ]),
    printer("batch", "CronJob", &[
        NAME,
        col("Schedule", "string", D_CJ_SCHEDULE, Cell::Str(&["spec", "schedule"])),
        col("Timezone", "string", D_CJ_TIMEZONE, Cell::Fn(cronjob_timezone)),
        col("Suspend", "boolean", D_CJ_SUSPEND, Cell::Fn(cronjob_suspend)),
        col("Active", "integer", D_CJ_ACTIVE, Cell::Len(&["status", "active"])),
        col("Last Schedule", "string", D_CJ_LAST_SCHEDULE, Cell::Fn(cronjob_last_schedule)),
        AGE,
        CONTAINERS,
        IMAGES,
        wide("Selector", "string", D_JOB_SELECTOR, Cell::Fn(cronjob_job_selector)),
    ]),
    printer("autoscaling", "HorizontalPodAutoscaler", &[
        NAME,
        col("Reference", "string", D_HPA_REFERENCE, Cell::Fn(hpa_reference)),
        col("Targets", "string", D_HPA_METRICS, Cell::Fn(hpa_targets)),
        col("MinPods", "string", D_HPA_MIN, Cell::Fn(hpa_min_pods)),
        col("MaxPods", "string", D_HPA_MAX, Cell::Int(&["spec", "maxReplicas"])),
        col("Replicas", "string", D_HPA_CURRENT, Cell::Int(&["status", "currentReplicas"])),
        AGE,
    ]),
    printer("policy", "PodDisruptionBudget", &[
        NAME,
        col("Min Available", "string", "The minimum number of pods that must be available.", Cell::Fn(pdb_min_available)),
        col("Max Unavailable", "string", "The maximum number of pods that may be unavailable.", Cell::Fn(pdb_max_unavailable)),
        col("Allowed Disruptions", "integer", "Calculated number of pods that may be disrupted at this time.", Cell::Int(&["status", "disruptionsAllowed"])),
        AGE,
    ]),
    // ----- networking, discovery -----
    printer("networking.k8s.io", "Ingress", &[
        NAME,
        col("Class", "string", "The name of the IngressClass resource that should be used for additional configuration", Cell::Fn(ingress_class)),
        col("Hosts", "string", "Hosts that incoming requests are matched against before the ingress rule", Cell::Fn(ingress_hosts)),
        col("Address", "string", "Address is a list containing ingress points for the load-balancer", Cell::Fn(ingress_address)),
        col("Ports", "string", "Ports of TLS configurations that open", Cell::Fn(ingress_ports)),
        AGE,
    ]),
    printer("networking.k8s.io", "IngressClass", &[
        NAME,
        col("Controller", "string", "Controller that is responsible for handling this class", Cell::Str(&["spec", "controller"])),
        col("Parameters", "string", "A reference to a resource with additional parameters", Cell::Fn(ingress_class_parameters)),
        AGE,
    ]),
    printer("networking.k8s.io", "NetworkPolicy", &[NAME, col("Pod-Selector", "string", D_NP_POD_SELECTOR, Cell::Fn(network_policy_pod_selector)), AGE]),
    printer("discovery.k8s.io", "EndpointSlice", &[
        NAME,
        col("AddressType", "string", D_EPS_ADDRESS_TYPE, Cell::Str(&["addressType"])),
        col("Ports", "string", D_EPS_PORTS, Cell::Fn(endpoint_slice_ports)),
        col("Endpoints", "string", D_EPS_ENDPOINTS, Cell::Fn(endpoint_slice_endpoints)),
        AGE,
    ]),
    // ----- storage, coordination, scheduling, node -----
    printer("storage.k8s.io", "StorageClass", &[
        ColumnDef { cell: Cell::Fn(storage_class_name), ..NAME },
        col("Provisioner", "string", D_SC_PROVISIONER, Cell::Str(&["provisioner"])),
        col("ReclaimPolicy", "string", D_SC_RECLAIM, Cell::StrPtr(&["reclaimPolicy"], "Delete")),
        col("VolumeBindingMode", "string", D_SC_BINDING, Cell::StrPtr(&["volumeBindingMode"], "Immediate")),
        col("AllowVolumeExpansion", "string", D_SC_EXPANSION, Cell::BoolDefault(&["allowVolumeExpansion"], false)),
        AGE,
    ]),
    printer("storage.k8s.io", "VolumeAttachment", &[
        NAME,
        // The real printer really does mark Attacher with format "name".
        ColumnDef { format: "name", ..col("Attacher", "string", D_VA_ATTACHER, Cell::Str(&["spec", "attacher"])) },
        col("PV", "string", D_VA_PV, Cell::Str(&["spec", "source", "persistentVolumeName"])),
        col("Node", "string", D_VA_NODE, Cell::Str(&["spec", "nodeName"])),
        col("Attached", "boolean", D_VA_ATTACHED, Cell::BoolDefault(&["status", "attached"], false)),
        AGE,
    ]),
    printer("storage.k8s.io", "CSIDriver", &[
        NAME,
        col("AttachRequired", "boolean", D_CSI_ATTACH_REQUIRED, Cell::BoolDefault(&["spec", "attachRequired"], true)),
        col("PodInfoOnMount", "boolean", D_CSI_POD_INFO, Cell::BoolDefault(&["spec", "podInfoOnMount"], false)),
        col("StorageCapacity", "boolean", D_CSI_STORAGE_CAPACITY, Cell::BoolDefault(&["spec", "storageCapacity"], false)),
        col("TokenRequests", "string", D_CSI_TOKEN_REQUESTS, Cell::Fn(csi_token_requests)),
        col("RequiresRepublish", "boolean", D_CSI_REPUBLISH, Cell::BoolDefault(&["spec", "requiresRepublish"], false)),
        col("Modes", "string", D_CSI_MODES, Cell::Fn(csi_modes)),
        AGE,
    ]),
    printer("storage.k8s.io", "CSINode", &[NAME, col("Drivers", "integer", "Drivers indicates the number of CSI drivers registered on the node", Cell::Len(&["spec", "drivers"])), AGE]),
    printer("storage.k8s.io", "VolumeAttributesClass", &[NAME, col("DriverName", "string", D_VAC_DRIVER, Cell::Str(&["driverName"])), AGE]),
    printer("coordination.k8s.io", "Lease", &[NAME, col("Holder", "string", D_LEASE_HOLDER, Cell::Str(&["spec", "holderIdentity"])), AGE]),
    printer("scheduling.k8s.io", "PriorityClass", &[
        NAME,
        col("Value", "integer", D_PC_VALUE, Cell::Int(&["value"])),
        col("Global-Default", "boolean", D_PC_GLOBAL_DEFAULT, Cell::BoolDefault(&["globalDefault"], false)),
        AGE,
        col("PreemptionPolicy", "string", D_PC_PREEMPTION, Cell::Fn(priority_class_preemption)),
    ]),
    // The real printer asks ObjectMeta's docs for "handler", which has none: an empty description.
    printer("node.k8s.io", "RuntimeClass", &[NAME, col("Handler", "string", "", Cell::Str(&["handler"])), AGE]),
    // ----- rbac, certificates, admission, aggregation -----
    printer("rbac.authorization.k8s.io", "RoleBinding", &[
        NAME,
        col("Role", "string", D_RB_ROLE_REF, Cell::Fn(role_ref)),
        AGE,
        wide("Users", "string", "Users in the roleBinding", Cell::Fn(binding_users)),
        wide("Groups", "string", "Groups in the roleBinding", Cell::Fn(binding_groups)),
        wide("ServiceAccounts", "string", "ServiceAccounts in the roleBinding", Cell::Fn(binding_service_accounts)),
    ]),
    printer("rbac.authorization.k8s.io", "ClusterRoleBinding", &[
        NAME,
        col("Role", "string", D_CRB_ROLE_REF, Cell::Fn(role_ref)),
        AGE,
        wide("Users", "string", "Users in the clusterRoleBinding", Cell::Fn(binding_users)),
        wide("Groups", "string", "Groups in the clusterRoleBinding", Cell::Fn(binding_groups)),
        wide("ServiceAccounts", "string", "ServiceAccounts in the clusterRoleBinding", Cell::Fn(binding_service_accounts)),
    ]),
    printer("certificates.k8s.io", "CertificateSigningRequest", &[
        NAME,
        AGE,
        col("SignerName", "string", D_CSR_SIGNER, Cell::Fn(csr_signer)),
        col("Requestor", "string", D_CSR_REQUEST, Cell::Str(&["spec", "username"])),
        col("RequestedDuration", "string", D_CSR_EXPIRATION, Cell::Fn(csr_requested_duration)),
        col("Condition", "string", D_CSR_CONDITIONS, Cell::Fn(csr_condition)),
    ]),
    printer("admissionregistration.k8s.io", "MutatingWebhookConfiguration", &[NAME, col("Webhooks", "integer", D_WEBHOOKS, Cell::Len(&["webhooks"])), AGE]),
    printer("admissionregistration.k8s.io", "ValidatingWebhookConfiguration", &[NAME, col("Webhooks", "integer", D_WEBHOOKS, Cell::Len(&["webhooks"])), AGE]),
    printer("admissionregistration.k8s.io", "ValidatingAdmissionPolicy", &[
        NAME,
        col("Validations", "integer", "Validations indicates the number of validation rules defined in this configuration", Cell::Len(&["spec", "validations"])),
        col("ParamKind", "string", "ParamKind specifies the kind of resources used to parameterize this policy", Cell::Fn(admission_policy_param_kind)),
        AGE,
    ]),
    printer("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding", &[
        NAME,
        col("PolicyName", "string", "PolicyName indicates the policy definition which the policy binding binded to", Cell::Str(&["spec", "policyName"])),
        col("ParamRef", "string", "ParamRef indicates the param resource which sets the configuration param", Cell::Fn(admission_binding_param_ref)),
        AGE,
    ]),
    printer("resource.k8s.io", "DeviceClass", &[NAME, AGE]),
    printer("resource.k8s.io", "ResourceClaimTemplate", &[NAME, AGE]),
    printer("apiregistration.k8s.io", "APIService", &[
        NAME,
        col("Service", "string", "The reference to the service that hosts this API endpoint.", Cell::Fn(api_service_service)),
        col("Available", "string", "Whether this service is available.", Cell::Fn(api_service_available)),
        AGE,
    ]),
];

const D_WEBHOOKS: &str =
    "Webhooks indicates the number of webhooks registered in this configuration";

/// The definition for a built-in kind, if the real server has a printer for it.
pub(super) fn find(group: &str, kind: &str) -> Option<&'static PrinterDef> {
    PRINTERS.iter().find(|p| p.group == group && p.kind == kind)
}
