#!/usr/bin/env python3
"""Generate harness/sim/src/apiserver/protobuf/schema.json, the Kubernetes protobuf wire schema that
`faultline_sim::protobuf::decode` uses to turn `application/vnd.kubernetes.protobuf` request
bodies into the JSON a JSON client would have sent.

Inputs (read-only, from the local cargo registry; no network):
  * k8s-pb 0.9.0          -- prost-generated structs: message names, field tags, wire types
                             (`#[prost(int32, optional, tag = "3")]`, `btree_map = "string, bytes"`).
  * k8s-openapi 0.29.0    -- module v1_37: the serde field names (`"hostIP" => Field::Key_host_ip`),
                             doc comments and required-ness of each field.
The checked-in schema.json was generated from exactly those two versions.

Fetch them with a throwaway crate that depends on `k8s-pb = "0.9"` and
`k8s-openapi = { version = "0.29", features = ["latest"] }` and run `cargo fetch`, then:

    python3 harness/sim/tools/gen_proto_schema.py [--pb DIR] [--openapi DIR] [-o OUT]

DIRs default to the newest matching directories under ~/.cargo/registry/src/*/.

Schema format (compact on purpose):
  {
    "generator": "...", "sources": {...},
    "apiVersions": {"v1": "k8s.io.api.core.v1", "apps/v1": "k8s.io.api.apps.v1", ...},
    "messages": {
      "k8s.io.api.core.v1.Pod": {
        "special": "time",                    # optional; see SPECIAL below
        "fields": [[tag, jsonName, kind, flags], ...]
      }
    }
  }
  kind  = a scalar ("string","bool","int32","int64","uint32","uint64","double","float","bytes"),
          a message name (full, or bare when it lives in the same package), or
          "map<K,V>" with V a scalar or message name.
  flags = "" or a combination of
          "r"  repeated,
          "z"  keep the value even when it is zero/empty (Go pointer field where zero is meaningful,
               or a required field a JSON client always sends),
          "i"  inline: a Go struct embedded with `json:",inline"`; its fields go into the parent.

Field-name matching: k8s-pb names are snake_case; JSON names come from k8s-openapi by comparing both
normalised (lowercase, only [a-z0-9]).  Messages with no openapi definition of their own (VolumeSource,
ProbeHandler: inlined in Go) borrow names from a same-named definition elsewhere or from any definition
of the package; what is still unmatched falls back to lowerCamelCase (plus NAME_OVERRIDES).

"z" is derived mechanically (required in openapi and scalar; doc mentions a non-zero / true default;
IntOrString-typed; empty message fields of "only one of" union structs and LabelSelector fields)
plus the curated KEEP_ZERO / KEEP_EMPTY lists below, minus NOT_POINTER (non-pointer Go fields whose
docs mention a default: the apiserver defaults them when zero, so a zero must stay absent).
"""

import argparse
import glob
import json
import os
import re
import sys

PB_VERSION = "0.9.0"
OPENAPI_VERSION = "0.29.0"
OPENAPI_MODULE = "v1_37"

# Packages to include (k8s-pb module path relative to src/), plus everything they reference.
ROOT_PACKAGES = [
    "api/core/v1",
    "api/apps/v1",
    "api/batch/v1",
    "api/policy/v1",
    "api/storage/v1",
    "api/coordination/v1",
    "api/events/v1",
    "api/rbac/v1",
    "api/authentication/v1",
    "api/authorization/v1",
    "api/networking/v1",
    "api/autoscaling/v1",
    "api/autoscaling/v2",
    "api/discovery/v1",
    "api/scheduling/v1",
    "api/node/v1",
    "api/certificates/v1",
    "api/admissionregistration/v1",
    "api/flowcontrol/v1",
    "api/resource/v1",
    "kube_aggregator/pkg/apis/apiregistration/v1",
    "apiextensions_apiserver/pkg/apis/apiextensions/v1",
    "apimachinery/pkg/apis/meta/v1",
    "apimachinery/pkg/runtime",
    "apimachinery/pkg/util/intstr",
    "apimachinery/pkg/api/resource",
]

# apiVersion (as it appears in the envelope typeMeta) -> proto package.
API_VERSIONS = {
    "v1": "k8s.io.api.core.v1",
    "apps/v1": "k8s.io.api.apps.v1",
    "batch/v1": "k8s.io.api.batch.v1",
    "policy/v1": "k8s.io.api.policy.v1",
    "storage.k8s.io/v1": "k8s.io.api.storage.v1",
    "coordination.k8s.io/v1": "k8s.io.api.coordination.v1",
    "events.k8s.io/v1": "k8s.io.api.events.v1",
    "rbac.authorization.k8s.io/v1": "k8s.io.api.rbac.v1",
    "authentication.k8s.io/v1": "k8s.io.api.authentication.v1",
    "authorization.k8s.io/v1": "k8s.io.api.authorization.v1",
    "networking.k8s.io/v1": "k8s.io.api.networking.v1",
    "autoscaling/v1": "k8s.io.api.autoscaling.v1",
    "autoscaling/v2": "k8s.io.api.autoscaling.v2",
    "discovery.k8s.io/v1": "k8s.io.api.discovery.v1",
    "scheduling.k8s.io/v1": "k8s.io.api.scheduling.v1",
    "node.k8s.io/v1": "k8s.io.api.node.v1",
    "certificates.k8s.io/v1": "k8s.io.api.certificates.v1",
    "admissionregistration.k8s.io/v1": "k8s.io.api.admissionregistration.v1",
    "flowcontrol.apiserver.k8s.io/v1": "k8s.io.api.flowcontrol.v1",
    "resource.k8s.io/v1": "k8s.io.api.resource.v1",
    "apiregistration.k8s.io/v1": "k8s.io.kube_aggregator.pkg.apis.apiregistration.v1",
    "apiextensions.k8s.io/v1": "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1",
    "meta.k8s.io/v1": "k8s.io.apimachinery.pkg.apis.meta.v1",
}

META = "k8s.io.apimachinery.pkg.apis.meta.v1"
APIEXT = "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1"

# Messages with a custom JSON form.
SPECIAL = {
    META + ".Time": "time",
    META + ".MicroTime": "microtime",
    META + ".Duration": "duration",
    META + ".FieldsV1": "rawjson",
    META + ".Verbs": "verbs",
    # ExtraValue is `[]string` in Go: its JSON is the bare array, as Verbs'.
    "k8s.io.api.authentication.v1.ExtraValue": "verbs",
    "k8s.io.api.authorization.v1.ExtraValue": "verbs",
    "k8s.io.api.certificates.v1.ExtraValue": "verbs",
    "k8s.io.apimachinery.pkg.runtime.RawExtension": "rawjson",
    "k8s.io.apimachinery.pkg.api.resource.Quantity": "quantity",
    "k8s.io.apimachinery.pkg.api.resource.QuantityValue": "quantity",
    "k8s.io.apimachinery.pkg.util.intstr.IntOrString": "intorstring",
    APIEXT + ".JSON": "rawjson",
    APIEXT + ".JSONSchemaPropsOrArray": "schemaorarray",
    APIEXT + ".JSONSchemaPropsOrBool": "schemaorbool",
    APIEXT + ".JSONSchemaPropsOrStringArray": "schemaorstringarray",
}

# Short package aliases used by the curated lists.
ALIASES = {
    "core": "k8s.io.api.core.v1",
    "apps": "k8s.io.api.apps.v1",
    "batch": "k8s.io.api.batch.v1",
    "policy": "k8s.io.api.policy.v1",
    "storage": "k8s.io.api.storage.v1",
    "coordination": "k8s.io.api.coordination.v1",
    "events": "k8s.io.api.events.v1",
    "rbac": "k8s.io.api.rbac.v1",
    "networking": "k8s.io.api.networking.v1",
    "autoscalingv1": "k8s.io.api.autoscaling.v1",
    "autoscalingv2": "k8s.io.api.autoscaling.v2",
    "apiext": APIEXT,
    "meta": META,
}

# Go pointer fields (or fields whose zero a client sends on purpose) whose explicit zero value
# must be kept: "alias.Message": [jsonName, ...].
KEEP_ZERO = {
    "meta.DeleteOptions": ["gracePeriodSeconds", "orphanDependents", "propagationPolicy",
                           "ignoreStoreReadErrorWithClusterBreakingPotential"],
    "meta.Preconditions": ["uid", "resourceVersion"],
    "meta.ObjectMeta": ["deletionGracePeriodSeconds"],
    "meta.OwnerReference": ["controller", "blockOwnerDeletion"],
    "apps.DeploymentSpec": ["replicas", "revisionHistoryLimit", "progressDeadlineSeconds"],
    "apps.ReplicaSetSpec": ["replicas"],
    "apps.StatefulSetSpec": ["replicas", "revisionHistoryLimit"],
    "apps.DaemonSetSpec": ["revisionHistoryLimit"],
    "apps.RollingUpdateStatefulSetStrategy": ["partition"],
    "core.ReplicationControllerSpec": ["replicas"],
    "batch.JobSpec": ["parallelism", "completions", "activeDeadlineSeconds", "backoffLimit",
                      "backoffLimitPerIndex", "maxFailedIndexes", "ttlSecondsAfterFinished",
                      "suspend", "manualSelector"],
    "batch.CronJobSpec": ["startingDeadlineSeconds", "suspend", "successfulJobsHistoryLimit",
                          "failedJobsHistoryLimit"],
    "batch.SuccessPolicyRule": ["succeededCount"],
    "core.PodSpec": ["terminationGracePeriodSeconds", "activeDeadlineSeconds",
                     "automountServiceAccountToken", "enableServiceLinks", "shareProcessNamespace",
                     "hostUsers", "priority", "setHostnameAsFQDN"],
    "core.ServiceAccount": ["automountServiceAccountToken"],
    "core.SecurityContext": ["runAsUser", "runAsGroup", "runAsNonRoot", "privileged",
                             "allowPrivilegeEscalation", "readOnlyRootFilesystem"],
    "core.PodSecurityContext": ["runAsUser", "runAsGroup", "runAsNonRoot", "fsGroup"],
    "core.Probe": ["terminationGracePeriodSeconds"],
    "core.Toleration": ["tolerationSeconds"],
    "core.ConfigMap": ["immutable"],
    "core.Secret": ["immutable"],
    "core.SecretVolumeSource": ["defaultMode", "optional"],
    "core.ConfigMapVolumeSource": ["defaultMode", "optional"],
    "core.ProjectedVolumeSource": ["defaultMode"],
    "core.DownwardAPIVolumeSource": ["defaultMode"],
    "core.KeyToPath": ["mode"],
    "core.DownwardAPIVolumeFile": ["mode"],
    "core.SecretProjection": ["optional"],
    "core.ConfigMapProjection": ["optional"],
    "core.ClusterTrustBundleProjection": ["optional"],
    "core.ServiceAccountTokenProjection": ["expirationSeconds"],
    "core.ConfigMapKeySelector": ["optional"],
    "core.SecretKeySelector": ["optional"],
    "core.ConfigMapEnvSource": ["optional"],
    "core.SecretEnvSource": ["optional"],
    "core.CSIVolumeSource": ["readOnly"],
    "core.AzureDiskVolumeSource": ["readOnly"],
    "core.ServiceSpec": ["allocateLoadBalancerNodePorts"],
    "core.ClientIPConfig": ["timeoutSeconds"],
    # "" means "no storage class" (disables dynamic provisioning), unlike an absent field.
    "core.PersistentVolumeClaimSpec": ["storageClassName"],
    "core.TopologySpreadConstraint": ["minDomains"],
    "storage.StorageClass": ["allowVolumeExpansion"],
    "storage.CSIDriverSpec": ["attachRequired", "podInfoOnMount", "storageCapacity",
                              "requiresRepublish", "seLinuxMount",
                              "nodeAllocatableUpdatePeriodSeconds", "serviceAccountTokenInSecrets"],
    "storage.VolumeNodeResources": ["count"],
    "coordination.LeaseSpec": ["leaseDurationSeconds", "leaseTransitions"],
    "networking.NetworkPolicyPort": ["endPort"],
    "autoscalingv1.HorizontalPodAutoscalerSpec": ["minReplicas", "targetCPUUtilizationPercentage"],
    # ScaleSpec.replicas is not a pointer, but a zero there is what `kubectl scale --replicas=0` means.
    "autoscalingv1.ScaleSpec": ["replicas"],
    "autoscalingv2.HorizontalPodAutoscalerSpec": ["minReplicas"],
    "autoscalingv2.HPAScalingRules": ["stabilizationWindowSeconds"],
    "autoscalingv2.MetricTarget": ["averageUtilization"],
    "policy.PodDisruptionBudgetSpec": ["minAvailable", "maxUnavailable"],
    "apiext.JSONSchemaProps": ["maximum", "minimum", "maxLength", "minLength", "maxItems",
                               "minItems", "multipleOf", "maxProperties", "minProperties",
                               "x-kubernetes-preserve-unknown-fields", "$ref",
                               "x-kubernetes-list-type", "x-kubernetes-map-type"],
    "apiext.ValidationRule": ["optionalOldSelf"],
    "apiext.CustomResourceDefinitionVersion": ["served", "storage"],
}

# Pointer-to-struct fields whose *empty* message is meaningful (beyond the mechanical rules).
KEEP_EMPTY = {
    # status: {} switches the status subresource on.
    "apiext.CustomResourceSubresources": ["status", "scale"],
}

# Non-pointer Go fields whose docs mention a non-zero default: a zero on the wire just means
# "unset", and the apiserver defaults it, so it must not be kept.
NOT_POINTER = {
    "core.Probe": ["timeoutSeconds", "periodSeconds", "successThreshold", "failureThreshold"],
    # IntOrString values that are plain (non-pointer) structs: 0 means "unset".
    "core.HTTPGetAction": ["port"],
    "core.TCPSocketAction": ["port"],
    "core.ServicePort": ["targetPort"],
    "core.PodAttachOptions": ["stdout", "stderr"],
}

# JSON names the camelCase fallback gets wrong (messages with no openapi definition).
NAME_OVERRIDES = {
    "k8s.io.api.core.v1.PodLogOptions.insecureSkipTlsVerifyBackend": "insecureSkipTLSVerifyBackend",
    APIEXT + ".ConversionRequest.desiredApiVersion": "desiredAPIVersion",
    APIEXT + ".JSONSchemaPropsOrArray.jSonSchemas": "JSONSchemas",
}

SCALARS = {"string", "bool", "int32", "int64", "uint32", "uint64", "double", "float", "bytes",
           "sint32", "sint64", "fixed32", "fixed64", "sfixed32", "sfixed64"}


def norm(name):
    return re.sub(r"[^a-z0-9]", "", name.lower())


def lower_camel(snake):
    snake = snake.replace("r#", "")
    parts = snake.split("_")
    return parts[0] + "".join(p[:1].upper() + p[1:] for p in parts[1:])


def find_crate(name, version):
    pats = glob.glob(os.path.expanduser(f"~/.cargo/registry/src/*/{name}-{version}"))
    if not pats:
        sys.exit(f"cannot find {name}-{version} under ~/.cargo/registry/src/*/ (run cargo fetch)")
    return sorted(pats)[-1]


def pkg_of_module(mod_path):
    """k8s-pb module path (list of segments) -> proto package name."""
    return "k8s.io." + ".".join(mod_path)


def openapi_prefix_of_module(mod_path):
    segs = list(mod_path)
    if segs[0] == "apiextensions_apiserver":
        segs[0] = "apiextensions-apiserver"
    if segs[0] == "kube_aggregator":
        segs[0] = "kube-aggregator"
    return "io.k8s." + ".".join(segs)


# ---------------------------------------------------------------- k8s-pb parsing

ATTR_RE = re.compile(r"#\[prost\((.*)\)\]\s*$")
FIELD_RE = re.compile(r"^\s*pub\s+(r#)?([a-z0-9_]+)\s*:\s*(.*)$")


def parse_prost_attr(attr):
    """'int32, optional, tag = "3"' -> dict"""
    out = {"flags": set()}
    for part in re.findall(r'[a-z_0-9]+\s*=\s*"[^"]*"|[a-z_0-9]+', attr):
        if "=" in part:
            k, v = part.split("=", 1)
            out[k.strip()] = v.strip().strip('"')
        else:
            out["flags"].add(part)
    return out


def strip_generics(ty):
    """Innermost path(s) of a prost field type: returns list of type-path strings."""
    ty = ty.strip().rstrip(",").strip()
    ty = re.sub(r"\s+", "", ty).replace(",>", ">")
    # peel Option / Vec / Box
    changed = True
    while changed:
        changed = False
        for wrap in ("::core::option::Option<", "::prost::alloc::vec::Vec<",
                     "::prost::alloc::boxed::Box<", "Option<", "Vec<", "Box<"):
            if ty.startswith(wrap) and ty.endswith(">"):
                ty = ty[len(wrap):-1]
                changed = True
    if "BTreeMap<" in ty:
        inner = ty[ty.index("BTreeMap<") + len("BTreeMap<"):-1]
        depth = 0
        for i, c in enumerate(inner):
            if c == "<":
                depth += 1
            elif c == ">":
                depth -= 1
            elif c == "," and depth == 0:
                return [inner[:i], inner[i + 1:]]
    return [ty]


def resolve_type(path, mod_path):
    """Rust path relative to module mod_path -> full proto message name."""
    segs = path.split("::")
    cur = list(mod_path)
    if segs and segs[0] == "crate":
        cur = []
        segs = segs[1:]
    while segs and segs[0] == "super":
        cur = cur[:-1]
        segs = segs[1:]
    name = segs[-1]
    mod = cur + segs[:-1]
    return pkg_of_module(mod), name


def parse_pb_file(path, mod_path):
    """Returns {struct_name: {"doc": str, "fields": [..]}}."""
    messages = {}
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    i = 0
    doc = []
    cur = None
    fdoc = []
    attr = None
    while i < len(lines):
        line = lines[i]
        s = line.strip()
        if cur is None:
            if s.startswith("///"):
                doc.append(s[3:].strip())
            elif s.startswith("#["):
                pass
            else:
                m = re.match(r"^pub struct (\w+)\s*\{\s*(\})?", line)
                if m:
                    cur = {"doc": " ".join(doc), "fields": []}
                    messages[m.group(1)] = cur
                    if m.group(2):
                        cur = None
                doc = []
            i += 1
            continue
        if line.startswith("}"):
            cur = None
            doc = []
            i += 1
            continue
        if s.startswith("///"):
            fdoc.append(s[3:].strip())
        elif s.startswith("#[prost("):
            # attributes may span lines
            buf = s
            while not buf.endswith(")]"):
                i += 1
                buf += " " + lines[i].strip()
            attr = parse_prost_attr(ATTR_RE.match(buf).group(1))
        elif s.startswith("pub "):
            m = FIELD_RE.match(line)
            buf = m.group(3)
            while not (buf.rstrip().endswith(",") and buf.count("<") == buf.count(">")):
                i += 1
                buf += lines[i].strip()
            if attr is None:
                sys.exit(f"{path}: field without prost attribute: {line}")
            cur["fields"].append({"snake": m.group(2), "attr": attr, "rtype": buf,
                                  "doc": " ".join(fdoc)})
            attr = None
            fdoc = []
        i += 1
    return messages


def load_pb(pb_root):
    src = os.path.join(pb_root, "src")
    pkgs = {}
    for dirpath, _dirs, files in os.walk(src):
        if "mod.rs" not in files:
            continue
        rel = os.path.relpath(dirpath, src)
        if rel == ".":
            continue
        mod_path = rel.split(os.sep)
        msgs = parse_pb_file(os.path.join(dirpath, "mod.rs"), mod_path)
        if msgs:
            pkgs["/".join(mod_path)] = (mod_path, msgs)
    return pkgs


# ---------------------------------------------------------------- k8s-openapi parsing

def load_openapi(oa_root):
    """definition name (lower-cased) -> {"name": Definition, "fields": {norm(json): info}}"""
    src = os.path.join(oa_root, "src", OPENAPI_MODULE)
    defs = {}
    for dirpath, _dirs, files in os.walk(src):
        for fn in files:
            if not fn.endswith(".rs"):
                continue
            with open(os.path.join(dirpath, fn), encoding="utf-8") as f:
                text = f.read()
            m = re.search(r"^// Generated from definition (\S+)", text, re.M)
            if not m:
                continue
            defname = m.group(1)
            # struct fields with docs
            rust_fields = {}
            sm = re.search(r"^pub struct \w+ \{\n(.*?)^\}", text, re.M | re.S)
            if sm:
                doc = []
                for line in sm.group(1).split("\n"):
                    s = line.strip()
                    if s.startswith("///"):
                        doc.append(s[3:].strip())
                    elif s.startswith("pub "):
                        fm = re.match(r"pub (r#)?(\w+): (.*),$", s)
                        if fm:
                            ty = fm.group(3)
                            rust_fields[fm.group(2)] = {
                                "doc": " ".join(doc),
                                "required": not ty.startswith("Option<"),
                                "type": ty,
                            }
                        doc = []
            fields = {}
            for jm in re.finditer(r'^\s*"([^"]+)" => Field::Key_(\w+),', text, re.M):
                json_name, rust = jm.group(1), jm.group(2)
                info = rust_fields.get(rust)
                if info is None:
                    continue  # apiVersion / kind
                fields[norm(json_name)] = dict(info, json=json_name)
            defs[defname.lower()] = {"name": defname, "fields": fields}
    return defs


# ---------------------------------------------------------------- doc heuristics

INT_DEFAULT_RE = re.compile(
    r"\b(?:defaults?|defaulted|default value is|default is|the default is)\s+(?:to\s+)?(\d+)",
    re.I)
BOOL_TRUE_RE = re.compile(
    r"\b(?:defaults?|defaulted)\s+(?:to\s+)?true\b|\bdefault(?: value)? is true\b|"
    r"\bdefault true\b|\+default=true\b", re.I)
UNION_DOC_RE = re.compile(
    r"only one of (?:its|the) members|one and only one of|exactly one of (?:its|these|the)|"
    r"at most one of (?:its|these|the)|\+union\b", re.I)


def doc_says_nonzero_default(kind, doc):
    if kind in ("int32", "int64", "uint32", "uint64"):
        for m in INT_DEFAULT_RE.finditer(doc):
            if int(m.group(1)) != 0:
                return True
        return False
    if kind == "bool":
        return bool(BOOL_TRUE_RE.search(doc))
    return False


def expand(curated):
    out = {}
    for key, names in curated.items():
        alias, msg = key.split(".", 1)
        out[ALIASES[alias] + "." + msg] = set(names)
    return out


# ---------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pb", default=None)
    ap.add_argument("--openapi", default=None)
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("-o", "--out", default=os.path.join(here, "..", "src", "apiserver", "protobuf",
                                                         "schema.json"))
    ap.add_argument("-v", "--verbose", action="store_true",
                    help="list the fields that got the keep-zero flag and why")
    args = ap.parse_args()
    pb_root = args.pb or find_crate("k8s-pb", PB_VERSION)
    oa_root = args.openapi or find_crate("k8s-openapi", OPENAPI_VERSION)

    pkgs = load_pb(pb_root)
    defs = load_openapi(oa_root)

    # full name -> (mod_path, struct_name, msg)
    all_msgs = {}
    for _key, (mod_path, msgs) in pkgs.items():
        for sname, msg in msgs.items():
            all_msgs[pkg_of_module(mod_path) + "." + sname] = (mod_path, sname, msg)

    # Canonical (Go) message names: take the openapi definition's casing when it matches.
    def canonical(full):
        mod_path, sname, _ = all_msgs[full]
        d = defs.get((openapi_prefix_of_module(mod_path) + "." + sname).lower())
        pkg = pkg_of_module(mod_path)
        if d:
            return pkg + "." + d["name"].rsplit(".", 1)[1]
        return full

    # Name lookup is by prost name; prost also lower-cases acronyms (JsonSchemaProps) -- the
    # canonical form restores them.
    lower_index = {k.lower(): k for k in all_msgs}

    by_short = {}
    pkg_fields = {}
    for lname, dd in sorted(defs.items()):
        by_short.setdefault(lname.rsplit(".", 1)[1], dd)
        pf = pkg_fields.setdefault(dd["name"].rsplit(".", 1)[0], {})
        for k, v in dd["fields"].items():
            pf.setdefault(k, v)

    keep_zero = expand(KEEP_ZERO)
    keep_empty = expand(KEEP_EMPTY)
    not_pointer = expand(NOT_POINTER)
    used_curated = set()

    todo = []
    for p in ROOT_PACKAGES:
        mod_path, msgs = pkgs[p]
        for sname in msgs:
            todo.append(pkg_of_module(mod_path) + "." + sname)
    seen = set()
    out_msgs = {}
    stats = {"fields": 0, "json_from_openapi": 0, "json_fallback": [], "z_required": 0,
             "z_doc": [], "z_curated": 0, "inline": [], "z_intstr": 0, "z_union": 0, "z_selector": 0}

    while todo:
        full = todo.pop()
        if full in seen:
            continue
        seen.add(full)
        mod_path, sname, msg = all_msgs[full]
        pkg = pkg_of_module(mod_path)
        cname = canonical(full)
        d = defs.get((openapi_prefix_of_module(mod_path) + "." + sname).lower())
        union = bool(UNION_DOC_RE.search(msg["doc"]))
        fields_out = []
        for f in msg["fields"]:
            a = f["attr"]
            tag = int(a["tag"])
            repeated = "repeated" in a["flags"]
            if "btree_map" in a or "map" in a or "hash_map" in a:
                kv = (a.get("btree_map") or a.get("map") or a.get("hash_map")).split(",")
                ktype, vtype = kv[0].strip(), kv[1].strip()
                types = strip_generics(f["rtype"])
                if vtype.startswith("message") or vtype.startswith("enumeration"):
                    vpkg, vname = resolve_type(types[1], mod_path)
                    vfull = lower_index[(vpkg + "." + vname).lower()]
                    todo.append(vfull)
                    vkind = ("@" + vfull)
                else:
                    vkind = vtype
                kind = ("map", ktype, vkind)
                repeated = False
            else:
                base = next(iter(x for x in a["flags"] if x in SCALARS or x == "message"), None)
                if base is None and "bytes" in a:
                    base = "bytes"
                if base is None:
                    sys.exit(f"{full}.{f['snake']}: unsupported prost attribute {a}")
                if base == "message":
                    types = strip_generics(f["rtype"])
                    mpkg, mname = resolve_type(types[0], mod_path)
                    mfull = lower_index[(mpkg + "." + mname).lower()]
                    todo.append(mfull)
                    kind = ("@" + mfull,)
                else:
                    kind = (base,)
            # JSON name: the message's own openapi definition; else one of the same name in
            # another package (autoscaling/v1's annotation-only messages); else any definition of
            # the package that has the field (VolumeSource is inlined into Volume, ProbeHandler
            # into Probe...); else camelCase.
            key = norm(f["snake"])
            oa = d["fields"].get(key) if d else None
            if oa is None and d is None:
                same = by_short.get(sname.lower())
                if same:
                    oa = same["fields"].get(key)
                if oa is None:
                    oa = pkg_fields.get(openapi_prefix_of_module(mod_path), {}).get(key)
                    if oa is not None:
                        oa = dict(oa, required=False)
            # Go embeds some structs inline (`json:",inline"`): Volume.VolumeSource,
            # Probe.ProbeHandler, XKeySelector.LocalObjectReference... The proto has a nested
            # message; JSON has its fields in the parent.  Detect: the parent's definition lacks the
            # field, but has every field of the nested message.
            inline = False
            if oa is None and d is not None and kind[0].startswith("@") and not repeated:
                sub = all_msgs[kind[0][1:]][2]
                sub_keys = [norm(sf["snake"]) for sf in sub["fields"]]
                if sub_keys and all(k in d["fields"] for k in sub_keys):
                    inline = True
                    stats["inline"].append(f"{cname}.{f['snake']}")
            stats["fields"] += 1
            if inline:
                jname = lower_camel(f["snake"])
            elif oa:
                jname = oa["json"]
                stats["json_from_openapi"] += 1
            else:
                jname = lower_camel(f["snake"])
                stats["json_fallback"].append(f"{cname}.{jname}")
            # keep-zero flag
            z = False
            why = None
            scalar = kind[0] in SCALARS and not repeated
            msg_kind = kind[0].startswith("@") and not repeated
            target = kind[0][1:] if msg_kind else None
            if scalar and oa and oa["required"]:
                z, why = True, "required"
                stats["z_required"] += 1
            if scalar and not z:
                doc = (oa["doc"] if oa else "") + " " + f["doc"]
                if doc_says_nonzero_default(kind[0], doc):
                    z, why = True, "doc"
                    stats["z_doc"].append(f"{cname}.{jname}")
            if msg_kind and target.endswith(".IntOrString"):
                z, why = True, "intorstring"
                stats["z_intstr"] += 1
            if msg_kind and union and not SPECIAL.get(target):
                z, why = True, "union"
                stats["z_union"] += 1
            if msg_kind and target == META + ".LabelSelector":
                z, why = True, "selector"
                stats["z_selector"] += 1
            if jname in keep_zero.get(cname, ()) or jname in keep_empty.get(cname, ()):
                z, why = True, "curated"
                stats["z_curated"] += 1
                used_curated.add((cname, jname))
            if jname in not_pointer.get(cname, ()):
                z, why = False, None
                used_curated.add((cname, jname))
            if args.verbose and z:
                print(f"z {why:12} {cname}.{jname}", file=sys.stderr)
            jname = NAME_OVERRIDES.get(f"{cname}.{jname}", jname)
            flags = ("r" if repeated else "") + ("z" if z else "") + ("i" if inline else "")
            fields_out.append((tag, jname, kind, flags))
        out_msgs[full] = {"cname": cname, "pkg": pkg, "fields": fields_out}

    # every curated entry must have matched something (catches typos / renamed fields)
    missing = []
    for table in (keep_zero, keep_empty, not_pointer):
        for m, names in table.items():
            for n in names:
                if (m, n) not in used_curated:
                    missing.append(f"{m}.{n}")
    if missing:
        sys.exit("curated entries that match no field: " + ", ".join(sorted(missing)))

    full_to_c = {k: v["cname"] for k, v in out_msgs.items()}

    def render_kind(kind, pkg):
        def ref(x):
            if x.startswith("@"):
                c = full_to_c[x[1:]]
                cp, cn = c.rsplit(".", 1)
                return cn if cp == pkg else c
            return x
        if kind[0] == "map":
            return f"map<{kind[1]},{ref(kind[2])}>"
        return ref(kind[0])

    messages = {}
    for full in sorted(out_msgs, key=lambda k: out_msgs[k]["cname"]):
        m = out_msgs[full]
        entry = {}
        sp = SPECIAL.get(m["cname"])
        if sp:
            entry["special"] = sp
        entry["fields"] = [[t, j, render_kind(k, m["pkg"]), fl] for (t, j, k, fl) in m["fields"]]
        messages[m["cname"]] = entry
    for name in SPECIAL:
        if name not in messages:
            sys.exit(f"special message {name} not in schema")
    for av, pkg in API_VERSIONS.items():
        if not any(n.rsplit(".", 1)[0] == pkg for n in messages):
            sys.exit(f"apiVersion {av}: package {pkg} has no messages")

    schema = {
        "generator": "harness/sim/tools/gen_proto_schema.py",
        "sources": {"k8s-pb": PB_VERSION, "k8s-openapi": f"{OPENAPI_VERSION} ({OPENAPI_MODULE})"},
        "apiVersions": API_VERSIONS,
        "messages": messages,
    }
    # one message per line keeps diffs reviewable
    def dump(x):
        return json.dumps(x, separators=(",", ":"), ensure_ascii=False)
    head = dump({k: v for k, v in schema.items() if k != "messages"})[:-1]
    body = ",\n".join(dump(k) + ":" + dump(v) for k, v in messages.items())
    text = head + ',"messages":{\n' + body + "\n}}"
    json.loads(text)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(text + "\n")
    print(f"wrote {args.out}: {len(messages)} messages, {stats['fields']} fields "
          f"({stats['json_from_openapi']} JSON names from k8s-openapi, "
          f"{len(stats['json_fallback'])} by camelCase fallback); keep-zero: "
          f"{stats['z_required']} required, {len(stats['z_doc'])} from docs, "
          f"{stats['z_intstr']} IntOrString, {stats['z_union']} union members, "
          f"{stats['z_selector']} selectors, {stats['z_curated']} curated; "
          f"{len(stats['inline'])} inline embeddings; "
          f"{len(text) + 1} bytes", file=sys.stderr)
    if args.verbose:
        for x in stats["z_doc"]:
            print("doc default:", x, file=sys.stderr)
        for x in stats["inline"]:
            print("inline:", x, file=sys.stderr)
        for x in stats["json_fallback"]:
            print("fallback name:", x, file=sys.stderr)


if __name__ == "__main__":
    main()
