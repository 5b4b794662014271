//! Content negotiation: which representation a client accepts, and decoding request bodies.

use crate::apiserver::status::{ApiError, ApiResult};
use serde_json::Value;

#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    Json,
    Yaml,
    /// `as=Table;g=meta.k8s.io;v=v1` (kubectl get), or `v1beta1`: the Table's version.
    Table(&'static str),
    /// `as=PartialObjectMetadata` (`list: false`) or `PartialObjectMetadataList` (`list: true`):
    /// metadata-only clients. Each fits only its own shape of answer (a 406 otherwise).
    PartialMetadata {
        list: bool,
    },
    /// `application/vnd.kubernetes.protobuf`: built-in objects in their protobuf form, anything
    /// without one (custom resources) as JSON.
    Protobuf,
    /// `as=APIGroupDiscoveryList;g=apidiscovery.k8s.io;v=v2` (v2beta1 went in 1.33).
    AggregatedDiscovery(String),
}

/// Parse an Accept header and pick the first representation we can produce.
/// `discovery` says whether the aggregated discovery form is meaningful for this path.
pub fn choose(accept: Option<&str>, discovery: bool) -> ApiResult<Output> {
    let Some(accept) = accept.filter(|a| !a.trim().is_empty()) else {
        return Ok(Output::Json);
    };
    for range in accept.split(',') {
        let mut parts = range.split(';').map(str::trim);
        let media = parts.next().unwrap_or("").to_ascii_lowercase();
        let mut as_ = None;
        let mut g = None;
        let mut v = None;
        for p in parts {
            if let Some((k, val)) = p.split_once('=') {
                match k.trim() {
                    "as" => as_ = Some(val.trim().to_string()),
                    "g" => g = Some(val.trim().to_string()),
                    "v" => v = Some(val.trim().to_string()),
                    _ => {}
                }
            }
        }
        let out = match (media.as_str(), as_.as_deref()) {
            ("application/json" | "application/*" | "*/*", None) => Some(Output::Json),
            ("application/yaml", None) => Some(Output::Yaml),
            ("application/vnd.kubernetes.protobuf", None) => Some(Output::Protobuf),
            ("application/json", Some("Table")) if g.as_deref() == Some("meta.k8s.io") => {
                match v.as_deref() {
                    Some("v1") => Some(Output::Table("v1")),
                    Some("v1beta1") => Some(Output::Table("v1beta1")),
                    _ => None,
                }
            }
            (
                "application/json",
                Some(kind @ ("PartialObjectMetadata" | "PartialObjectMetadataList")),
            ) if g.as_deref() == Some("meta.k8s.io") => Some(Output::PartialMetadata {
                list: kind == "PartialObjectMetadataList",
            }),
            ("application/json", Some("APIGroupDiscoveryList"))
                if discovery
                    && g.as_deref() == Some("apidiscovery.k8s.io")
                    && v.as_deref() == Some("v2") =>
            {
                Some(Output::AggregatedDiscovery(v.unwrap_or_default()))
            }
            _ => None,
        };
        if let Some(o) = out {
            return Ok(o);
        }
    }
    Err(ApiError::not_acceptable())
}

/// Decode a create/update body: JSON or YAML by Content-Type; anything else is 415.
pub fn decode_body(content_type: Option<&str>, body: &[u8]) -> ApiResult<Value> {
    let ct = content_type
        .unwrap_or("application/json")
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    match ct.as_str() {
        "application/json" | "" | "*/*" => decode_json(body),
        "application/yaml" | "application/x-yaml" | "text/yaml" => parse_yaml(body)
            .map_err(|e| ApiError::bad_request(format!("error decoding YAML request body: {e}"))),
        // client-go typed clients (kubectl create, drain, ...) send built-in objects as protobuf.
        "application/vnd.kubernetes.protobuf" => {
            crate::apiserver::protobuf::decode(body).map_err(|e| {
                ApiError::bad_request(format!("error decoding protobuf request body: {}", e))
            })
        }
        _ => Err(ApiError::unsupported_media_type()),
    }
}

/// A JSON body as `json.Unmarshal` reads it: a syntax error is Go's message (`invalid character
/// 'x' looking for beginning of value`, `unexpected end of JSON input`), as the patch handlers
/// pass it on.
pub fn decode_json(body: &[u8]) -> ApiResult<Value> {
    if let Some(e) = crate::apiserver::gojson::syntax_error(body) {
        return Err(ApiError::bad_request(e));
    }
    serde_json::from_slice(body).map_err(|e| {
        ApiError::bad_request(format!(
            "error decoding request body: json: {} (line {}, column {})",
            e,
            e.line(),
            e.column()
        ))
    })
}

/// A create or update body of `kind`: as `decode_body`, but a JSON body that does not parse is
/// reported as the handler's `transformDecodeError` does (the serializer could not find its
/// apiVersion and kind), with the start of the body (`summarizeData`).
pub fn decode_object(content_type: Option<&str>, body: &[u8], kind: &str) -> ApiResult<Value> {
    let ct = content_type
        .unwrap_or("application/json")
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let unrecognized = |e: String| {
        ApiError::bad_request(format!(
            "the object provided is unrecognized (must be of type {kind}): {e} ({})",
            summarize_data(body, 30)
        ))
    };
    match ct.as_str() {
        "application/json" | "" | "*/*" => {
            if let Some(e) = crate::apiserver::gojson::syntax_error(body) {
                return Err(unrecognized(format!(
                    "couldn't get version/kind; json parse error: {e}"
                )));
            }
            decode_body(content_type, body)
        }
        // An empty document decodes to nothing: the object is what the URL's kind makes it.
        "application/yaml" | "application/x-yaml" | "text/yaml" => match parse_yaml(body) {
            Ok(Value::Null) => Ok(Value::Object(Default::default())),
            Ok(v) => Ok(v),
            Err(e) => Err(unrecognized(e)),
        },
        _ => decode_body(content_type, body),
    }
}

/// `summarizeData`: a body starting with `{` as text, anything else in hex, cut at `max` bytes.
fn summarize_data(data: &[u8], max: usize) -> String {
    let cut = &data[..data.len().min(max)];
    let more = if data.len() > max { " ..." } else { "" };
    match data.first() {
        None => "<empty>".to_string(),
        Some(b'{') => format!("{}{more}", String::from_utf8_lossy(cut)),
        Some(_) => {
            let hex: String = cut.iter().map(|b| format!("{b:02x}")).collect();
            format!("{hex}{more}")
        }
    }
}

/// An apply body: YAML (or JSON) converted to JSON as `yaml.YAMLToJSON` does; an empty body is
/// `null`. A body that does not parse is the apply handler's 400.
pub fn decode_yaml(body: &[u8]) -> ApiResult<Value> {
    parse_yaml(body).map_err(|e| {
        ApiError::bad_request(format!(
            "error decoding YAML: error converting YAML to JSON: {e}"
        ))
    })
}

/// A YAML document as JSON, or the error go-yaml (v2, which sigs.k8s.io/yaml uses) gives.
fn parse_yaml(body: &[u8]) -> Result<Value, String> {
    let text =
        std::str::from_utf8(body).map_err(|_| "yaml: invalid leading UTF-8 octet".to_string())?;
    if text.trim().is_empty() {
        return Ok(Value::Null);
    }
    serde_yaml::from_str::<Value>(text).map_err(|e| go_yaml_error(&e))
}

/// go-yaml's message for a libyaml error (`parser.fail`): `yaml: line N: <problem>`, where N is
/// the problem's 0-based line (plus one for a scanner error), or the context's when the
/// problem is on the first line, and no line at all when both are 0.
fn go_yaml_error(e: &serde_yaml::Error) -> String {
    let text = e.to_string();
    // libyaml's form: "<problem> at line L column C[, <context> at line L column C]".
    let (head, context) = match text.split_once(", while ") {
        Some((h, c)) => (h, Some(format!("while {c}"))),
        None => (text.as_str(), None),
    };
    let mark = |s: &str| -> Option<(String, usize)> {
        let (before, at) = s.rsplit_once(" at line ")?;
        let line: usize = at.split_whitespace().next()?.parse().ok()?;
        Some((before.to_string(), line))
    };
    let Some((problem, problem_line)) = mark(head) else {
        return format!("yaml: {head}");
    };
    let scanner = context
        .as_deref()
        .is_some_and(|c| c.starts_with("while scanning"));
    // serde_yaml prints 1-based lines; go-yaml works with libyaml's 0-based ones.
    let problem0 = problem_line.saturating_sub(1);
    let context0 = context
        .as_deref()
        .and_then(mark)
        .map(|(_, l)| l.saturating_sub(1))
        .unwrap_or(problem0);
    let line = if problem0 != 0 {
        problem0 + usize::from(scanner)
    } else {
        context0
    };
    if line == 0 {
        format!("yaml: {problem}")
    } else {
        format!("yaml: line {line}: {problem}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubectl_table_accept_picks_table() {
        let a = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
        assert_eq!(choose(Some(a), false).unwrap(), Output::Table("v1"));
    }

    #[test]
    fn protobuf_is_served_and_unknown_media_is_not_acceptable() {
        assert_eq!(
            choose(Some("application/vnd.kubernetes.protobuf"), false).unwrap(),
            Output::Protobuf
        );
        assert_eq!(
            choose(Some("application/cbor, application/json"), false).unwrap(),
            Output::Json
        );
        assert_eq!(choose(Some("text/html"), false).unwrap_err().code, 406);
        assert_eq!(choose(None, false).unwrap(), Output::Json);
    }

    #[test]
    fn aggregated_discovery_only_where_meaningful() {
        let a =
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";
        assert_eq!(
            choose(Some(a), true).unwrap(),
            Output::AggregatedDiscovery("v2".into())
        );
        assert_eq!(choose(Some(a), false).unwrap(), Output::Json);
    }

    #[test]
    fn bodies_decode_by_content_type() {
        assert!(decode_body(Some("application/json"), b"{\"a\":1}").is_ok());
        assert_eq!(
            decode_body(Some("application/yaml"), b"a: 1\n").unwrap()["a"],
            1
        );
        let e = decode_body(Some("application/json"), b"{\"a\":").unwrap_err();
        assert_eq!((e.code, e.reason), (400, "BadRequest"));
        assert_eq!(
            decode_body(Some("application/cbor"), b"x")
                .unwrap_err()
                .code,
            415
        );
        assert_eq!(
            decode_body(Some("application/vnd.kubernetes.protobuf"), b"x")
                .unwrap_err()
                .code,
            400
        );
        assert_eq!(
            decode_body(Some("application/json"), b"  ")
                .unwrap_err()
                .message,
            "unexpected end of JSON input"
        );
    }

    #[test]
    fn objects_that_do_not_parse_are_unrecognized() {
        // kube-apiserver 1.35's messages for these create bodies.
        let msg = |body: &[u8]| decode_object(None, body, "ConfigMap").unwrap_err().message;
        assert_eq!(msg(b"{\"a\":1"), "the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: unexpected end of JSON input ({\"a\":1)");
        assert_eq!(msg(b"[1,2"), "the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: unexpected end of JSON input (5b312c32)");
        let yaml = decode_object(Some("application/yaml"), b"a: [1", "ConfigMap").unwrap_err();
        assert_eq!(yaml.message, "the object provided is unrecognized (must be of type ConfigMap): yaml: line 1: did not find expected ',' or ']' (613a205b31)");
        assert_eq!(
            decode_yaml(b"data:\n  a: [1\nb: 2\n").unwrap_err().message,
            "error decoding YAML: error converting YAML to JSON: yaml: line 2: did not find expected ',' or ']'"
        );
        assert_eq!(msg(b""), "the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: unexpected end of JSON input (<empty>)");
        assert_eq!(msg(br#"{"apiVersion": "v1", "kind": "ConfigMap"#), "the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: unexpected end of JSON input ({\"apiVersion\": \"v1\", \"kind\": \" ...)");
    }
}
