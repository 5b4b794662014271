//! The RBAC authorizer over the Roles, ClusterRoles and bindings in the store: which bindings
//! apply to a user, which rules they grant, and whether a rule covers a request, as
//! plugin/pkg/auth/authorizer/rbac does it (including `*/subresource`, resourceNames,
//! nonResourceURL prefixes and aggregated ClusterRoles).

use super::attributes::Attributes;
use super::UserInfo;
use crate::apiserver::resources::ResourceKey;
use crate::apiserver::selectors::LabelSelector;
use crate::apiserver::ApiServer;
use serde_json::Value;
use std::sync::Arc;

pub const GROUP: &str = "rbac.authorization.k8s.io";

/// An authorizer's answer: allowed or not, and why (`RBAC: allowed by ...` or the errors met).
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    pub allowed: bool,
    pub reason: String,
}

/// Authorize a request: members of `system:masters` always, everyone else through RBAC.
pub fn authorize(api: &ApiServer, a: &Attributes) -> Decision {
    if a.user.is_privileged() {
        return Decision {
            allowed: true,
            reason: String::new(),
        };
    }
    let mut reason = None;
    let mut errors = Vec::new();
    visit_rules(api, &a.user, &a.namespace, &mut |source, rule, err| {
        if let Some(e) = err {
            errors.push(e);
        }
        match rule {
            Some(r) if rule_allows(a, r) => {
                reason = Some(format!("RBAC: allowed by {}", source()));
                false
            }
            _ => true,
        }
    });
    match reason {
        Some(r) => Decision {
            allowed: true,
            reason: r,
        },
        None => Decision {
            allowed: false,
            reason: aggregate_errors(&errors),
        },
    }
}

fn aggregate_errors(errors: &[String]) -> String {
    match errors {
        [] => String::new(),
        [one] => format!("RBAC: {}", one),
        many => format!("RBAC: [{}]", many.join(", ")),
    }
}

/// Every rule that applies to `user` in `namespace` ("" for cluster scope only), with the
/// errors met (missing roles), for SelfSubjectRulesReview. Only RBAC's: the system:masters
/// authorizer allows without being a rule resolver (authorizerfactory/builtin.go has no
/// `RulesFor` for privileged groups), so a member gets what its bindings say (cluster-admin's,
/// through the `cluster-admin` ClusterRoleBinding, and the rest of system:authenticated's).
pub fn rules_for(api: &ApiServer, user: &UserInfo, namespace: &str) -> (Vec<Value>, Vec<String>) {
    let mut rules = Vec::new();
    let mut errors = Vec::new();
    visit_rules(api, user, namespace, &mut |_, rule, err| {
        if let Some(r) = rule {
            rules.push(r.clone());
        }
        if let Some(e) = err {
            errors.push(e);
        }
        true
    });
    (rules, errors)
}

fn key(plural: &str) -> ResourceKey {
    ResourceKey::new(GROUP, plural)
}

fn list(api: &ApiServer, plural: &str, ns: Option<&str>) -> Vec<Arc<Value>> {
    api.store
        .list(&key(plural), ns, None, None, &|_| true)
        .items
}

/// `visit(source, rule, error)` returns false to stop the walk.
type Visitor<'a> = dyn FnMut(&dyn Fn() -> String, Option<&Value>, Option<String>) -> bool + 'a;

/// The visitor of `VisitRulesFor`: ClusterRoleBindings first, then the RoleBindings of the
/// namespace, each binding's rules in order.
fn visit_rules(api: &ApiServer, user: &UserInfo, namespace: &str, visit: &mut Visitor<'_>) {
    let cluster = list(api, "clusterrolebindings", None)
        .into_iter()
        .map(|b| (b, ""));
    let namespaced = if namespace.is_empty() {
        vec![]
    } else {
        list(api, "rolebindings", Some(namespace))
    };
    for (b, ns) in cluster.chain(namespaced.into_iter().map(|b| (b, namespace))) {
        let Some(subject) = applies_to(&b, user, ns) else {
            continue;
        };
        let source = || {
            if ns.is_empty() {
                describe_binding("ClusterRoleBinding", &name(&b), &b, &subject, "")
            } else {
                describe_binding(
                    "RoleBinding",
                    &format!("{}/{}", name(&b), ns),
                    &b,
                    &subject,
                    ns,
                )
            }
        };
        let keep_going = match role_rules(api, &b, ns) {
            Err(e) => visit(&source, None, Some(e)),
            Ok(rules) => rules.iter().all(|r| visit(&source, Some(r), None)),
        };
        if !keep_going {
            return;
        }
    }
}

fn name(o: &Value) -> String {
    crate::apiserver::meta::name(o).to_string()
}

fn describe_binding(
    kind: &str,
    binding_name: &str,
    b: &Value,
    subject: &Value,
    namespace: &str,
) -> String {
    let role_kind = b
        .pointer("/roleRef/kind")
        .and_then(Value::as_str)
        .unwrap_or("");
    let role_name = b
        .pointer("/roleRef/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    format!(
        "{} {:?} of {} {:?} to {}",
        kind,
        binding_name,
        role_kind,
        role_name,
        describe_subject(subject, namespace)
    )
}

fn describe_subject(s: &Value, binding_namespace: &str) -> String {
    let kind = s.get("kind").and_then(Value::as_str).unwrap_or("");
    let name = s.get("name").and_then(Value::as_str).unwrap_or("");
    if kind == "ServiceAccount" {
        let ns = s
            .get("namespace")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
            .unwrap_or(binding_namespace);
        format!("{} {:?}", kind, format!("{}/{}", name, ns))
    } else {
        format!("{} {:?}", kind, name)
    }
}

/// The first subject of a binding that names `user` (`appliesTo`).
fn applies_to(binding: &Value, user: &UserInfo, namespace: &str) -> Option<Value> {
    let subjects = binding.get("subjects")?.as_array()?;
    subjects
        .iter()
        .find(|s| subject_matches(s, user, namespace))
        .cloned()
}

fn subject_matches(s: &Value, user: &UserInfo, namespace: &str) -> bool {
    let name = s.get("name").and_then(Value::as_str).unwrap_or("");
    match s.get("kind").and_then(Value::as_str).unwrap_or("") {
        "User" => user.name == name,
        "Group" => user.groups.iter().any(|g| g == name),
        "ServiceAccount" => {
            let ns = s
                .get("namespace")
                .and_then(Value::as_str)
                .filter(|n| !n.is_empty())
                .unwrap_or(namespace);
            !ns.is_empty() && user.name == super::service_account_username(ns, name)
        }
        _ => false,
    }
}

/// The rules of the role a binding refers to, or the lister's NotFound text.
fn role_rules(api: &ApiServer, binding: &Value, namespace: &str) -> Result<Vec<Value>, String> {
    let kind = binding
        .pointer("/roleRef/kind")
        .and_then(Value::as_str)
        .unwrap_or("");
    let role = binding
        .pointer("/roleRef/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    match kind {
        "ClusterRole" => {
            let r = api
                .store
                .get(&key("clusterroles"), "", role)
                .ok_or_else(|| format!("clusterrole.{} {:?} not found", GROUP, role))?;
            Ok(cluster_role_rules(api, &r))
        }
        "Role" if !namespace.is_empty() => {
            let r = api
                .store
                .get(&key("roles"), namespace, role)
                .ok_or_else(|| format!("role.{} {:?} not found", GROUP, role))?;
            Ok(rules_of(&r))
        }
        _ => Err(format!("unsupported role reference kind: {:?}", kind)),
    }
}

fn rules_of(role: &Value) -> Vec<Value> {
    role.get("rules")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// A ClusterRole's rules; an aggregated one also gets the rules of every ClusterRole its
/// selectors match (transitively), as the clusterrole-aggregation controller writes them.
pub fn cluster_role_rules(api: &ApiServer, role: &Value) -> Vec<Value> {
    effective_rules(api, role, 0)
}

/// Aggregation chains (admin <- edit <- view) are short; the bound stops selector cycles.
const MAX_AGGREGATION_DEPTH: usize = 8;

fn effective_rules(api: &ApiServer, role: &Value, depth: usize) -> Vec<Value> {
    let mut rules = rules_of(role);
    let Some(selectors) = role
        .pointer("/aggregationRule/clusterRoleSelectors")
        .and_then(Value::as_array)
    else {
        return rules;
    };
    if depth >= MAX_AGGREGATION_DEPTH {
        return rules;
    }
    let selectors: Vec<LabelSelector> = selectors
        .iter()
        .filter_map(|s| LabelSelector::from_json(s).ok())
        .filter(|s| !s.is_empty())
        .collect();
    for other in list(api, "clusterroles", None) {
        if crate::apiserver::meta::name(&other) == crate::apiserver::meta::name(role)
            || !selectors
                .iter()
                .any(|s| s.matches(crate::apiserver::meta::labels(&other)))
        {
            continue;
        }
        for r in effective_rules(api, &other, depth + 1) {
            if !rules.contains(&r) {
                rules.push(r);
            }
        }
    }
    rules
}

fn strings<'a>(rule: &'a Value, field: &str) -> impl Iterator<Item = &'a str> {
    rule.get(field)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}

/// `RuleAllows`: does one PolicyRule cover the request?
pub fn rule_allows(a: &Attributes, rule: &Value) -> bool {
    let verb_ok = strings(rule, "verbs").any(|v| v == "*" || v == a.verb);
    if !verb_ok {
        return false;
    }
    if !a.resource_request {
        return strings(rule, "nonResourceURLs").any(|u| {
            u == "*" || u == a.path || (u.ends_with('*') && a.path.starts_with(&u[..u.len() - 1]))
        });
    }
    let combined = if a.subresource.is_empty() {
        a.resource.clone()
    } else {
        format!("{}/{}", a.resource, a.subresource)
    };
    let group_ok = strings(rule, "apiGroups").any(|g| g == "*" || g == a.api_group);
    let resource_ok = strings(rule, "resources").any(|r| {
        r == "*"
            || r == combined
            || (!a.subresource.is_empty()
                && r.len() == a.subresource.len() + 2
                && r.starts_with("*/")
                && r.ends_with(a.subresource.as_str()))
    });
    let mut names = strings(rule, "resourceNames").peekable();
    let name_ok = names.peek().is_none() || names.any(|n| n == a.name);
    group_ok && resource_ok && name_ok
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn attrs(verb: &str, group: &str, resource: &str, sub: &str, name: &str) -> Attributes {
        Attributes {
            verb: verb.into(),
            resource_request: true,
            api_group: group.into(),
            resource: resource.into(),
            subresource: sub.into(),
            name: name.into(),
            ..Default::default()
        }
    }

    #[test]
    fn rules_match_like_upstream() {
        let r =
            json!({"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods", "pods/log"]});
        assert!(rule_allows(&attrs("list", "", "pods", "", ""), &r));
        assert!(rule_allows(&attrs("get", "", "pods", "log", "p"), &r));
        assert!(
            !rule_allows(&attrs("get", "", "pods", "status", "p"), &r),
            "a subresource needs its own grant"
        );
        assert!(!rule_allows(&attrs("watch", "", "pods", "", ""), &r));
        assert!(!rule_allows(&attrs("list", "apps", "pods", "", ""), &r));
        let scale = json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*/scale"]});
        assert!(rule_allows(
            &attrs("update", "apps", "deployments", "scale", "d"),
            &scale
        ));
        assert!(!rule_allows(
            &attrs("update", "apps", "deployments", "", "d"),
            &scale
        ));
        assert!(!rule_allows(
            &attrs("update", "apps", "deployments", "status", "d"),
            &scale
        ));
        let named = json!({"verbs": ["get"], "apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "resourceNames": ["mine"]});
        assert!(rule_allows(
            &attrs("get", "coordination.k8s.io", "leases", "", "mine"),
            &named
        ));
        assert!(!rule_allows(
            &attrs("get", "coordination.k8s.io", "leases", "", "other"),
            &named
        ));
        assert!(
            !rule_allows(
                &attrs("list", "coordination.k8s.io", "leases", "", ""),
                &named
            ),
            "resourceNames never cover a list"
        );
        let urls = json!({"verbs": ["get"], "nonResourceURLs": ["/healthz", "/apis/*"]});
        let path = |p: &str| Attributes {
            verb: "get".into(),
            path: p.into(),
            ..Default::default()
        };
        assert!(rule_allows(&path("/healthz"), &urls));
        assert!(rule_allows(&path("/apis/apps/v1"), &urls));
        assert!(!rule_allows(&path("/api"), &urls));
        assert!(
            !rule_allows(&attrs("get", "", "healthz", "", ""), &urls),
            "nonResourceURLs never cover resources"
        );
    }

    #[test]
    fn subjects_match_users_groups_and_service_accounts() {
        let sa = UserInfo::service_account("ns", "ctl", "u");
        assert!(subject_matches(
            &json!({"kind": "ServiceAccount", "name": "ctl", "namespace": "ns"}),
            &sa,
            ""
        ));
        assert!(
            subject_matches(&json!({"kind": "ServiceAccount", "name": "ctl"}), &sa, "ns"),
            "defaults to the binding's namespace"
        );
        assert!(!subject_matches(
            &json!({"kind": "ServiceAccount", "name": "ctl"}),
            &sa,
            ""
        ));
        assert!(subject_matches(
            &json!({"kind": "Group", "name": "system:serviceaccounts:ns"}),
            &sa,
            ""
        ));
        assert!(subject_matches(
            &json!({"kind": "User", "name": "system:serviceaccount:ns:ctl"}),
            &sa,
            ""
        ));
        assert!(!subject_matches(
            &json!({"kind": "User", "name": "ctl"}),
            &sa,
            ""
        ));
        assert_eq!(
            describe_subject(&json!({"kind": "ServiceAccount", "name": "ctl"}), "ns"),
            r#"ServiceAccount "ctl/ns""#
        );
    }
}
