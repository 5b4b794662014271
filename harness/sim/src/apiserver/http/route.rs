//! URL paths of the Kubernetes API, parsed into what they address.

use percent_encoding::percent_decode_str;
use std::collections::HashMap;

#[derive(Debug, Clone, PartialEq)]
pub enum Route {
    Version,
    Health,
    /// `/api`
    CoreVersions,
    /// `/apis`
    Groups,
    /// `/apis/<group>`
    Group(String),
    /// `/api/v1`, `/apis/<group>/<version>`
    GroupVersion {
        group: String,
        version: String,
    },
    OpenApiV2,
    OpenApiV3Root,
    /// `/openapi/v3/api/v1`, `/openapi/v3/apis/<g>/<v>`: the group-version path.
    OpenApiV3(String),
    Resource(ResourcePath),
    /// `/faultline/v1/...`: the node control endpoint.
    Control(Vec<String>),
    NotFound,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct ResourcePath {
    pub group: String,
    pub version: String,
    pub plural: String,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub sub: Option<String>,
    /// The deprecated `/watch/` path prefix.
    pub watch_prefix: bool,
}

pub fn parse(path: &str) -> Route {
    let segs: Vec<String> = path
        .split('/')
        .filter(|s| !s.is_empty())
        .map(|s| percent_decode_str(s).decode_utf8_lossy().into_owned())
        .collect();
    let s: Vec<&str> = segs.iter().map(String::as_str).collect();
    match s.as_slice() {
        ["version"] => Route::Version,
        ["healthz" | "livez" | "readyz", ..] => Route::Health,
        ["api"] => Route::CoreVersions,
        ["api", v] => Route::GroupVersion {
            group: String::new(),
            version: v.to_string(),
        },
        ["api", v, rest @ ..] => resource("", v, rest),
        ["apis"] => Route::Groups,
        ["apis", g] => Route::Group(g.to_string()),
        ["apis", g, v] => Route::GroupVersion {
            group: g.to_string(),
            version: v.to_string(),
        },
        ["apis", g, v, rest @ ..] => resource(g, v, rest),
        ["openapi", "v2"] => Route::OpenApiV2,
        ["openapi", "v3"] => Route::OpenApiV3Root,
        ["openapi", "v3", rest @ ..] => Route::OpenApiV3(rest.join("/")),
        ["faultline", "v1", rest @ ..] => {
            Route::Control(rest.iter().map(|s| s.to_string()).collect())
        }
        _ => Route::NotFound,
    }
}

fn resource(group: &str, version: &str, rest: &[&str]) -> Route {
    let (watch_prefix, rest) = match rest.first() {
        Some(&"watch") => (true, &rest[1..]),
        _ => (false, rest),
    };
    let mut p = ResourcePath {
        group: group.into(),
        version: version.into(),
        watch_prefix,
        ..Default::default()
    };
    let opt = |i: usize| rest.get(i).map(|s| s.to_string());
    match rest {
        // namespaces/<name>/status and namespaces/<name>/finalize address the namespace itself.
        ["namespaces", name, sub @ ("status" | "finalize")] => {
            p.plural = "namespaces".into();
            p.name = Some(name.to_string());
            p.sub = Some(sub.to_string());
        }
        ["namespaces", ns, _plural, ..] if rest.len() <= 5 => {
            p.namespace = Some(ns.to_string());
            p.plural = rest[2].to_string();
            p.name = opt(3);
            p.sub = opt(4);
        }
        [plural, ..] if rest.len() <= 3 => {
            p.plural = plural.to_string();
            p.name = opt(1);
            p.sub = opt(2);
        }
        _ => return Route::NotFound,
    }
    Route::Resource(p)
}

pub fn query_map(query: Option<&str>) -> HashMap<String, String> {
    form_urlencoded::parse(query.unwrap_or("").as_bytes())
        .into_owned()
        .collect()
}

pub fn is_true(v: Option<&String>) -> bool {
    matches!(v.map(String::as_str), Some("true" | "1" | "True"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_namespaced_and_cluster_paths() {
        let Route::Resource(p) = parse("/api/v1/namespaces/default/pods/web-0/log") else {
            panic!()
        };
        assert_eq!(
            (
                p.plural.as_str(),
                p.namespace.as_deref(),
                p.name.as_deref(),
                p.sub.as_deref()
            ),
            ("pods", Some("default"), Some("web-0"), Some("log"))
        );
        let Route::Resource(p) = parse("/apis/storage.k8s.io/v1/volumeattachments") else {
            panic!()
        };
        assert_eq!(
            (p.group.as_str(), p.plural.as_str(), p.name),
            ("storage.k8s.io", "volumeattachments", None)
        );
        let Route::Resource(p) = parse("/api/v1/namespaces/kube-system") else {
            panic!()
        };
        assert_eq!(
            (p.plural.as_str(), p.name.as_deref(), p.namespace),
            ("namespaces", Some("kube-system"), None)
        );
        let Route::Resource(p) = parse("/api/v1/namespaces/ns1/finalize") else {
            panic!()
        };
        assert_eq!(
            (p.plural.as_str(), p.name.as_deref(), p.sub.as_deref()),
            ("namespaces", Some("ns1"), Some("finalize"))
        );
        let Route::Resource(p) = parse("/api/v1/watch/namespaces/a/pods") else {
            panic!()
        };
        assert!(p.watch_prefix && p.plural == "pods");
        assert_eq!(parse("/api/v1/namespaces/a/pods/b/c/d"), Route::NotFound);
        assert_eq!(parse("/apis/apps"), Route::Group("apps".into()));
        assert_eq!(
            parse("/openapi/v3/apis/apps/v1"),
            Route::OpenApiV3("apis/apps/v1".into())
        );
    }

    #[test]
    fn decodes_percent_escapes() {
        let Route::Resource(p) = parse("/api/v1/namespaces/default/configmaps/a%2Eb") else {
            panic!()
        };
        assert_eq!(p.name.as_deref(), Some("a.b"));
    }
}
