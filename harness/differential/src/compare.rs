//! Differences between two canonical responses, as JSON pointers with both values, and the
//! API group and verb an exchange is counted under.

use serde::Serialize;
use serde_json::Value;

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Diff {
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub left: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub right: Option<Value>,
}

fn escape(k: &str) -> String {
    k.replace('~', "~0").replace('/', "~1")
}

/// Every place where `left` and `right` differ; an absent member is `None` on its side.
pub fn diff(left: &Value, right: &Value) -> Vec<Diff> {
    let mut out = Vec::new();
    walk("", left, right, &mut out);
    out
}

fn walk(path: &str, l: &Value, r: &Value, out: &mut Vec<Diff>) {
    match (l, r) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, av) in a {
                let p = format!("{path}/{}", escape(k));
                match b.get(k) {
                    Some(bv) => walk(&p, av, bv, out),
                    None => out.push(Diff {
                        path: p,
                        left: Some(av.clone()),
                        right: None,
                    }),
                }
            }
            for (k, bv) in b {
                if !a.contains_key(k) {
                    out.push(Diff {
                        path: format!("{path}/{}", escape(k)),
                        left: None,
                        right: Some(bv.clone()),
                    });
                }
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            for i in 0..a.len().max(b.len()) {
                let p = format!("{path}/{i}");
                match (a.get(i), b.get(i)) {
                    (Some(x), Some(y)) => walk(&p, x, y, out),
                    (x, y) => out.push(Diff {
                        path: p,
                        left: x.cloned(),
                        right: y.cloned(),
                    }),
                }
            }
        }
        _ if l == r => {}
        _ => out.push(Diff {
            path: path.to_string(),
            left: Some(l.clone()),
            right: Some(r.clone()),
        }),
    }
}

/// Drops differences at or under any of `ignore` (JSON pointers into the response body).
pub fn without(diffs: Vec<Diff>, ignore: &[String]) -> Vec<Diff> {
    diffs
        .into_iter()
        .filter(|d| {
            !ignore.iter().any(|i| {
                let full = format!("/body{i}");
                d.path == full || d.path.starts_with(&format!("{full}/"))
            })
        })
        .collect()
}

/// (API group, verb) of a request, as the apiserver's RequestInfo would name them, with the
/// subresource, the patch type, dry run and Table output spelt out so that the tally shows them.
pub fn classify(method: &str, uri: &str, headers: &[(String, String)]) -> (String, String) {
    let (path, query) = uri.split_once('?').unwrap_or((uri, ""));
    let q: Vec<(String, String)> = form_urlencoded::parse(query.as_bytes())
        .into_owned()
        .collect();
    let has = |k: &str| {
        q.iter()
            .any(|(a, b)| a == k && !b.is_empty() && b != "false" && b != "0")
    };
    let header = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
            .unwrap_or("")
    };
    let parts: Vec<&str> = path
        .trim_matches('/')
        .split('/')
        .filter(|s| !s.is_empty())
        .collect();
    let (group, rest): (String, &[&str]) = match parts.as_slice() {
        ["api"] | ["apis"] => return ("discovery".into(), "get".into()),
        ["apis", _g] => return ("discovery".into(), "get".into()),
        ["api", _v] => return ("discovery".into(), "get".into()),
        ["apis", _g, _v] => return ("discovery".into(), "get".into()),
        ["openapi", ..] => return ("openapi".into(), "get".into()),
        ["version"] => return ("version".into(), "get".into()),
        ["api", _v, rest @ ..] => ("core".into(), rest),
        // the corpus's own CRDs have a group per run: counted together
        ["apis", g, _v, rest @ ..] if g.ends_with(".diff.faultline.dev") => {
            ("custom resources".into(), rest)
        }
        ["apis", g, _v, rest @ ..] => ((*g).to_string(), rest),
        _ => return ("nonresource".into(), method.to_lowercase()),
    };
    // the deprecated /watch/ prefix: a watch of what follows
    let (rest, watch_prefix) = match rest {
        ["watch", tail @ ..] => (tail, true),
        other => (other, false),
    };
    // namespaces/{ns}/{resource}/... or namespaces/{name}[/status|finalize]
    let rest = match rest {
        ["namespaces", _ns, r, tail @ ..] if *r != "status" && *r != "finalize" => {
            let mut v = vec![*r];
            v.extend_from_slice(tail);
            v
        }
        other => other.to_vec(),
    };
    let named = rest.len() >= 2;
    let sub = rest.get(2).copied();
    let mut verb = match method {
        "GET" | "HEAD" if has("watch") || watch_prefix => "watch".to_string(),
        "GET" | "HEAD" if named => "get".to_string(),
        "GET" | "HEAD" => "list".to_string(),
        "POST" => "create".to_string(),
        "PUT" => "update".to_string(),
        "DELETE" if named => "delete".to_string(),
        "DELETE" => "deletecollection".to_string(),
        "PATCH" => {
            let ct = header("content-type");
            if ct.starts_with("application/apply-patch") {
                "apply".to_string()
            } else if ct.starts_with("application/strategic-merge-patch") {
                "patch:strategic".to_string()
            } else if ct.starts_with("application/json-patch") {
                "patch:json".to_string()
            } else if ct.starts_with("application/merge-patch") {
                "patch:merge".to_string()
            } else {
                "patch:other".to_string()
            }
        }
        m => m.to_lowercase(),
    };
    if let Some(s) = sub {
        verb = format!("{verb}/{s}");
    }
    if has("dryRun") {
        verb.push_str(" dryRun");
    }
    let accept = header("accept");
    if accept.contains("as=Table") {
        verb.push_str(" table");
    } else if accept.contains("protobuf") {
        verb.push_str(" protobuf");
    }
    (group, verb)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn classifies_like_request_info() {
        let c = |m: &str, u: &str| classify(m, u, &[]);
        assert_eq!(
            c("GET", "/api/v1/namespaces/x/pods"),
            ("core".into(), "list".into())
        );
        assert_eq!(
            c("GET", "/api/v1/namespaces/x"),
            ("core".into(), "get".into())
        );
        assert_eq!(
            c("GET", "/api/v1/namespaces"),
            ("core".into(), "list".into())
        );
        assert_eq!(
            c("PUT", "/api/v1/namespaces/x/finalize"),
            ("core".into(), "update/finalize".into())
        );
        assert_eq!(
            c("GET", "/apis/apps/v1/namespaces/x/deployments/d/scale"),
            ("apps".into(), "get/scale".into())
        );
        assert_eq!(
            c("GET", "/apis/apps/v1/deployments?watch=1"),
            ("apps".into(), "watch".into())
        );
        assert_eq!(
            c("DELETE", "/apis/apps/v1/namespaces/x/deployments"),
            ("apps".into(), "deletecollection".into())
        );
        assert_eq!(
            c("GET", "/apis/apps/v1"),
            ("discovery".into(), "get".into())
        );
        assert_eq!(
            classify(
                "PATCH",
                "/api/v1/namespaces/x/pods/p?dryRun=All",
                &[("Content-Type".into(), "application/apply-patch+yaml".into())]
            ),
            ("core".into(), "apply dryRun".into())
        );
    }

    #[test]
    fn diff_reports_changed_missing_and_extra_members() {
        let l = json!({"a": 1, "b": {"c": [1, 2]}, "d": "x"});
        let r = json!({"a": 2, "b": {"c": [1]}, "e": "y"});
        let d = diff(&l, &r);
        let paths: Vec<&str> = d.iter().map(|d| d.path.as_str()).collect();
        assert_eq!(paths, vec!["/a", "/b/c/1", "/d", "/e"]);
        assert_eq!(d[2].right, None);
        assert_eq!(d[3].left, None);
        assert!(without(d, &["/x".into()]).len() == 4);
    }
}
