//! The REST operations of a served resource, in a form both document versions render: which paths
//! exist, their method, `x-kubernetes-action`, operation id, request body and response kinds.
//! Derived from the resource's verbs and subresources (status and scale); the other
//! subresources (log, exec, eviction, token, ...) are not described (docs/fidelity.md).

use super::definitions::{self, DELETE_OPTIONS, PATCH, STATUS};
use crate::apiserver::resources::ResourceType;
use serde_json::Value;

/// A query or path parameter: name, location, JSON type.
#[derive(Debug, Clone, Copy)]
pub struct Param {
    pub name: &'static str,
    pub location: &'static str,
    pub ty: &'static str,
}

const fn q(name: &'static str, ty: &'static str) -> Param {
    Param {
        name,
        location: "query",
        ty,
    }
}

const PRETTY: Param = q("pretty", "string");
const WRITE: &[Param] = &[
    q("dryRun", "string"),
    q("fieldManager", "string"),
    q("fieldValidation", "string"),
];
const PATCH_PARAMS: &[Param] = &[
    q("dryRun", "string"),
    q("fieldManager", "string"),
    q("fieldValidation", "string"),
    q("force", "boolean"),
];
const READ: &[Param] = &[];
const LIST: &[Param] = &[
    q("allowWatchBookmarks", "boolean"),
    q("continue", "string"),
    q("fieldSelector", "string"),
    q("labelSelector", "string"),
    q("limit", "integer"),
    q("resourceVersion", "string"),
    q("resourceVersionMatch", "string"),
    q("sendInitialEvents", "boolean"),
    q("timeoutSeconds", "integer"),
    q("watch", "boolean"),
];
const DELETE: &[Param] = &[
    q("dryRun", "string"),
    q("gracePeriodSeconds", "integer"),
    q("orphanDependents", "boolean"),
    q("propagationPolicy", "string"),
];

/// One operation on a path.
#[derive(Debug, Clone)]
pub struct Operation {
    pub method: &'static str,
    pub action: &'static str,
    pub id: String,
    pub params: &'static [Param],
    /// The definition the request body must match, if the operation takes one.
    pub body: Option<String>,
    /// Response codes and the definition each answers with.
    pub responses: Vec<(u16, String)>,
    pub consumes: &'static [&'static str],
    pub gvk: Value,
}

/// A path with its operations and the parameters every operation on it shares.
#[derive(Debug, Clone)]
pub struct PathItem {
    pub path: String,
    pub params: Vec<Param>,
    pub operations: Vec<Operation>,
}

const JSON_BODIES: &[&str] = &["*/*"];
const PATCH_BODIES: &[&str] = &[
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
];
const CUSTOM_PATCH_BODIES: &[&str] = &[
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/apply-patch+yaml",
];

/// Upstream's operation-id stem of a group-version: `CoreV1`, `AppsV1`, `RbacAuthorizationV1`.
fn id_stem(group: &str, version: &str) -> String {
    let g = if group.is_empty() {
        "core"
    } else {
        group.strip_suffix(".k8s.io").unwrap_or(group)
    };
    let mut out: String = g.split('.').map(capitalize).collect();
    out.push_str(&capitalize(version));
    out
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
        .unwrap_or_default()
}

pub fn base_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("/api/{version}")
    } else {
        format!("/apis/{group}/{version}")
    }
}

/// The paths of one served resource.
pub fn of(t: &ResourceType) -> Vec<PathItem> {
    let kind_def = definitions::name_of(t);
    let list_def = format!("{kind_def}List");
    let gvk = definitions::gvk(&t.group, &t.version, &t.kind);
    let stem = id_stem(&t.group, &t.version);
    let scope = if t.namespaced { "Namespaced" } else { "" };
    let has = |verb: &str| t.verbs.contains(&verb);
    let patch_bodies = if t.custom {
        CUSTOM_PATCH_BODIES
    } else {
        PATCH_BODIES
    };
    let op = |method,
              action,
              verb: &str,
              suffix: &str,
              params,
              body: Option<&String>,
              responses: Vec<(u16, &String)>,
              consumes| Operation {
        method,
        action,
        id: format!("{verb}{stem}{scope}{}{suffix}", t.kind),
        params,
        body: body.cloned(),
        responses: responses.into_iter().map(|(c, d)| (c, d.clone())).collect(),
        consumes,
        gvk: gvk.clone(),
    };
    let base = base_path(&t.group, &t.version);
    let collection = if t.namespaced {
        format!("{base}/namespaces/{{namespace}}/{}", t.plural)
    } else {
        format!("{base}/{}", t.plural)
    };
    let item = format!("{collection}/{{name}}");
    let namespace = Param {
        name: "namespace",
        location: "path",
        ty: "string",
    };
    let name = Param {
        name: "name",
        location: "path",
        ty: "string",
    };
    let status = STATUS.to_string();
    let delete_options = DELETE_OPTIONS.to_string();
    let patch = PATCH.to_string();

    let mut out = Vec::new();
    let mut coll_ops = Vec::new();
    if has("list") {
        coll_ops.push(op(
            "get",
            "list",
            "list",
            "",
            LIST,
            None,
            vec![(200, &list_def)],
            &[][..],
        ));
    }
    if has("create") {
        let codes = vec![(200, &kind_def), (201, &kind_def), (202, &kind_def)];
        coll_ops.push(op(
            "post",
            "post",
            "create",
            "",
            WRITE,
            Some(&kind_def),
            codes,
            JSON_BODIES,
        ));
    }
    if has("deletecollection") {
        coll_ops.push(op(
            "delete",
            "deletecollection",
            "deleteCollection",
            "",
            DELETE,
            Some(&delete_options),
            vec![(200, &status)],
            JSON_BODIES,
        ));
    }
    let mut coll_params = vec![PRETTY];
    if t.namespaced {
        coll_params.insert(0, namespace);
    }
    if !coll_ops.is_empty() {
        out.push(PathItem {
            path: collection,
            params: coll_params.clone(),
            operations: coll_ops,
        });
    }
    if t.namespaced && has("list") {
        let all = op(
            "get",
            "list",
            "list",
            "ForAllNamespaces",
            LIST,
            None,
            vec![(200, &list_def)],
            &[][..],
        );
        let all = Operation {
            id: format!("list{stem}{}ForAllNamespaces", t.kind),
            ..all
        };
        out.push(PathItem {
            path: format!("{base}/{}", t.plural),
            params: vec![PRETTY],
            operations: vec![all],
        });
    }
    let item_params: Vec<Param> = [name]
        .into_iter()
        .chain(coll_params.iter().copied())
        .collect();
    let mut item_ops = Vec::new();
    if has("get") {
        item_ops.push(op(
            "get",
            "get",
            "read",
            "",
            READ,
            None,
            vec![(200, &kind_def)],
            &[][..],
        ));
    }
    if has("update") {
        item_ops.push(op(
            "put",
            "put",
            "replace",
            "",
            WRITE,
            Some(&kind_def),
            vec![(200, &kind_def), (201, &kind_def)],
            JSON_BODIES,
        ));
    }
    if has("patch") {
        item_ops.push(op(
            "patch",
            "patch",
            "patch",
            "",
            PATCH_PARAMS,
            Some(&patch),
            vec![(200, &kind_def), (201, &kind_def)],
            patch_bodies,
        ));
    }
    if has("delete") {
        let deleted = if crate::apiserver::builtins::delete_returns_object(&t.group, &t.plural) {
            &kind_def
        } else {
            &status
        };
        item_ops.push(op(
            "delete",
            "delete",
            "delete",
            "",
            DELETE,
            Some(&delete_options),
            vec![(200, deleted), (202, deleted)],
            JSON_BODIES,
        ));
    }
    if !item_ops.is_empty() {
        out.push(PathItem {
            path: item.clone(),
            params: item_params.clone(),
            operations: item_ops,
        });
    }
    let scale_def = definitions::builtin_name("autoscaling", "v1", "Scale").unwrap_or_default();
    // A CertificateSigningRequest's approval is documented as its status is.
    for (sub, def) in [
        ("status", &kind_def),
        ("scale", &scale_def),
        ("approval", &kind_def),
    ] {
        if !t.has_subresource(sub) {
            continue;
        }
        let suffix = capitalize(sub);
        let sub_gvk = if sub == "scale" {
            definitions::gvk("autoscaling", "v1", "Scale")
        } else {
            gvk.clone()
        };
        let ops = vec![
            op(
                "get",
                "get",
                "read",
                &suffix,
                READ,
                None,
                vec![(200, def)],
                &[][..],
            ),
            op(
                "put",
                "put",
                "replace",
                &suffix,
                WRITE,
                Some(def),
                vec![(200, def), (201, def)],
                JSON_BODIES,
            ),
            op(
                "patch",
                "patch",
                "patch",
                &suffix,
                PATCH_PARAMS,
                Some(&patch),
                vec![(200, def), (201, def)],
                patch_bodies,
            ),
        ];
        let ops = ops
            .into_iter()
            .map(|o| Operation {
                gvk: sub_gvk.clone(),
                ..o
            })
            .collect();
        out.push(PathItem {
            path: format!("{item}/{sub}"),
            params: item_params.clone(),
            operations: ops,
        });
    }
    out.extend(watch_paths(t, &gvk));
    out.extend(core_subresources(t, &gvk));
    out
}

/// A GET that answers `def` (or a plain string when `def` is empty) and is no resource
/// operation: discovery documents, version, the service account issuer's documents.
fn plain_get(path: String, id: String, def: &str) -> PathItem {
    PathItem {
        path,
        params: vec![],
        operations: vec![Operation {
            method: "get",
            action: "",
            id,
            params: READ,
            body: None,
            responses: vec![(200, def.to_string())],
            consumes: JSON_BODIES,
            gvk: Value::Null,
        }],
    }
}

/// The discovery document of a group-version (`/apis/apps/v1/`): an APIResourceList.
pub fn discovery(group: &str, version: &str) -> PathItem {
    plain_get(
        format!("{}/", base_path(group, version)),
        format!("get{}APIResources", id_stem(group, version)),
        "io.k8s.apimachinery.pkg.apis.meta.v1.APIResourceList",
    )
}

/// The paths outside any group-version the apiserver documents: `/api/`, `/apis/`, each
/// group's `/apis/<group>/`, `/version/` and the service account issuer's two documents.
pub fn non_resource(groups: &[String]) -> Vec<PathItem> {
    let meta = "io.k8s.apimachinery.pkg.apis.meta.v1.";
    let mut out = vec![
        plain_get(
            "/api/".into(),
            "getCoreAPIVersions".into(),
            &format!("{meta}APIVersions"),
        ),
        plain_get(
            "/apis/".into(),
            "getAPIVersions".into(),
            &format!("{meta}APIGroupList"),
        ),
        plain_get(
            "/version/".into(),
            "getCodeVersion".into(),
            "io.k8s.apimachinery.pkg.version.Info",
        ),
        plain_get(
            "/.well-known/openid-configuration/".into(),
            "getServiceAccountIssuerOpenIDConfiguration".into(),
            "",
        ),
        plain_get(
            "/openid/v1/jwks/".into(),
            "getServiceAccountIssuerOpenIDKeyset".into(),
            "",
        ),
    ];
    for g in groups.iter().filter(|g| !g.is_empty()) {
        let stem = id_stem(g, "");
        out.push(plain_get(
            format!("/apis/{g}/"),
            format!("get{stem}APIGroup"),
            &format!("{meta}APIGroup"),
        ));
    }
    out
}

/// The deprecated `watch` paths of a built-in watchable resource (upstream still documents
/// them): the collection across namespaces, in a namespace, and one object.
fn watch_paths(t: &ResourceType, kind_gvk: &Value) -> Vec<PathItem> {
    if t.custom || !t.verbs.contains(&"watch") {
        return vec![];
    }
    let base = base_path(&t.group, &t.version);
    let stem = id_stem(&t.group, &t.version);
    let event = WATCH_EVENT_DEF.to_string();
    let op = |action: &'static str, id: String| Operation {
        method: "get",
        action,
        id,
        params: LIST,
        body: None,
        responses: vec![(200, event.clone())],
        consumes: &[][..],
        gvk: kind_gvk.clone(),
    };
    let item = |path: String, o: Operation| PathItem {
        path,
        params: vec![PRETTY],
        operations: vec![o],
    };
    let mut out = Vec::new();
    if t.namespaced {
        out.push(item(
            format!("{base}/watch/{}", t.plural),
            op(
                "watchlist",
                format!("watch{stem}{}ListForAllNamespaces", t.kind),
            ),
        ));
        out.push(item(
            format!("{base}/watch/namespaces/{{namespace}}/{}", t.plural),
            op("watchlist", format!("watch{stem}Namespaced{}List", t.kind)),
        ));
        out.push(item(
            format!(
                "{base}/watch/namespaces/{{namespace}}/{}/{{name}}",
                t.plural
            ),
            op("watch", format!("watch{stem}Namespaced{}", t.kind)),
        ));
    } else {
        out.push(item(
            format!("{base}/watch/{}", t.plural),
            op("watchlist", format!("watch{stem}{}List", t.kind)),
        ));
        out.push(item(
            format!("{base}/watch/{}/{{name}}", t.plural),
            op("watch", format!("watch{stem}{}", t.kind)),
        ));
    }
    out
}

const WATCH_EVENT_DEF: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent";

/// The core subresources that are no status or scale: each path with its methods and what they
/// take and answer (empty: a plain string or stream), as kube-apiserver 1.35 documents them.
const CORE_SUBRESOURCES: &[(&str, &str, &[&str], &str)] = &[
    ("pods", "attach", &["get", "post"], ""),
    ("pods", "binding", &["post"], "io.k8s.api.core.v1.Binding"),
    (
        "pods",
        "ephemeralcontainers",
        &["get", "patch", "put"],
        "io.k8s.api.core.v1.Pod",
    ),
    (
        "pods",
        "eviction",
        &["post"],
        "io.k8s.api.policy.v1.Eviction",
    ),
    ("pods", "exec", &["get", "post"], ""),
    ("pods", "log", &["get"], ""),
    ("pods", "portforward", &["get", "post"], ""),
    ("pods", "proxy", PROXY_METHODS, ""),
    ("pods", "proxy/{path}", PROXY_METHODS, ""),
    (
        "pods",
        "resize",
        &["get", "patch", "put"],
        "io.k8s.api.core.v1.Pod",
    ),
    (
        "serviceaccounts",
        "token",
        &["post"],
        "io.k8s.api.authentication.v1.TokenRequest",
    ),
    ("services", "proxy", PROXY_METHODS, ""),
    ("services", "proxy/{path}", PROXY_METHODS, ""),
    ("nodes", "proxy", PROXY_METHODS, ""),
    ("nodes", "proxy/{path}", PROXY_METHODS, ""),
    (
        "namespaces",
        "finalize",
        &["put"],
        "io.k8s.api.core.v1.Namespace",
    ),
];

const PROXY_METHODS: &[&str] = &["delete", "get", "head", "options", "patch", "post", "put"];

fn core_subresources(t: &ResourceType, kind_gvk: &Value) -> Vec<PathItem> {
    if !t.group.is_empty() || t.custom {
        return vec![];
    }
    let base = base_path(&t.group, &t.version);
    let stem = id_stem(&t.group, &t.version);
    let scope = if t.namespaced { "Namespaced" } else { "" };
    CORE_SUBRESOURCES
        .iter()
        .filter(|(plural, ..)| *plural == t.plural)
        .map(|(_, sub, methods, def)| {
            let path = if t.namespaced {
                format!(
                    "{base}/namespaces/{{namespace}}/{}/{{name}}/{sub}",
                    t.plural
                )
            } else {
                format!("{base}/{}/{{name}}/{sub}", t.plural)
            };
            let suffix: String = sub
                .split(['/', '{', '}'])
                .filter(|p| !p.is_empty())
                .map(capitalize)
                .collect();
            let operations = methods
                .iter()
                .map(|m| {
                    let (action, verb) = match *m {
                        "get" => ("get", "connectGet"),
                        "post" => ("post", "create"),
                        "put" => ("put", "replace"),
                        "patch" => ("patch", "patch"),
                        "delete" => ("delete", "connectDelete"),
                        "head" => ("head", "connectHead"),
                        _ => ("options", "connectOptions"),
                    };
                    let takes_body = !def.is_empty() && matches!(*m, "post" | "put" | "patch");
                    Operation {
                        method: m,
                        action,
                        id: format!("{verb}{stem}{scope}{}{suffix}", t.kind),
                        params: READ,
                        body: takes_body.then(|| {
                            if *m == "patch" {
                                PATCH.to_string()
                            } else {
                                def.to_string()
                            }
                        }),
                        responses: vec![(200, def.to_string())],
                        consumes: if *m == "patch" {
                            PATCH_BODIES
                        } else {
                            JSON_BODIES
                        },
                        gvk: kind_gvk.clone(),
                    }
                })
                .collect();
            PathItem {
                path,
                params: vec![],
                operations,
            }
        })
        .collect()
}

/// The description of a response code, as upstream's documents give it.
pub fn response_description(code: u16) -> &'static str {
    match code {
        201 => "Created",
        202 => "Accepted",
        _ => "OK",
    }
}

/// The definitions the operations of some paths name.
pub fn named_definitions(items: &[PathItem]) -> Vec<String> {
    let mut out = vec![];
    for o in items.iter().flat_map(|p| &p.operations) {
        out.extend(o.body.iter().cloned());
        out.extend(
            o.responses
                .iter()
                .filter(|(_, d)| !d.is_empty())
                .map(|(_, d)| d.clone()),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apiserver::resources::Registry;

    #[test]
    fn deployments_have_upstream_operation_ids_and_subresources() {
        let reg = Registry::with_builtins();
        let t = reg.get("apps", "v1", "deployments").unwrap();
        let items = of(&t);
        let find = |p: &str| {
            items
                .iter()
                .find(|i| i.path == p)
                .unwrap_or_else(|| panic!("no {p}"))
        };
        let coll = find("/apis/apps/v1/namespaces/{namespace}/deployments");
        let ids: Vec<&str> = coll.operations.iter().map(|o| o.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "listAppsV1NamespacedDeployment",
                "createAppsV1NamespacedDeployment",
                "deleteCollectionAppsV1NamespacedDeployment"
            ]
        );
        assert_eq!(
            find("/apis/apps/v1/deployments").operations[0].id,
            "listAppsV1DeploymentForAllNamespaces"
        );
        let scale = find("/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale");
        assert_eq!(
            scale.operations[0].responses[0].1,
            "io.k8s.api.autoscaling.v1.Scale"
        );
        assert_eq!(scale.operations[0].gvk["kind"], "Scale");
        let rbac = reg
            .get("rbac.authorization.k8s.io", "v1", "clusterroles")
            .unwrap();
        assert_eq!(
            of(&rbac)[0].operations[0].id,
            "listRbacAuthorizationV1ClusterRole"
        );
        // A create-only kind has only its POST.
        let review = reg
            .get("authorization.k8s.io", "v1", "selfsubjectaccessreviews")
            .unwrap();
        let review_paths = of(&review);
        assert_eq!(review_paths.len(), 1);
        assert_eq!(review_paths[0].operations.len(), 1);
        assert_eq!(review_paths[0].operations[0].action, "post");
    }
}
