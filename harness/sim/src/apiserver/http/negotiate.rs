//! Content negotiation: which representation a client accepts, and decoding request bodies.

use crate::apiserver::status::{ApiError, ApiResult};
use serde_json::Value;

#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    Json,
    Yaml,
    /// `as=Table;g=meta.k8s.io;v=v1` (kubectl get).
    Table,
    /// `as=PartialObjectMetadata` (`list: false`) or `PartialObjectMetadataList` (`list: true`):
    /// metadata-only clients. Each fits only its own shape of answer (a 406 otherwise).
    PartialMetadata {
        list: bool,
    },
    /// `as=APIGroupDiscoveryList;g=apidiscovery.k8s.io;v=v2|v2beta1`.
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
            ("application/json", Some("Table"))
                if g.as_deref() == Some("meta.k8s.io")
                    && matches!(v.as_deref(), Some("v1" | "v1beta1")) =>
            {
                Some(Output::Table)
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
                    && matches!(v.as_deref(), Some("v2" | "v2beta1")) =>
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
        "application/yaml" | "application/x-yaml" | "text/yaml" => decode_yaml(body),
        // client-go typed clients (kubectl create, drain, ...) send built-in objects as protobuf.
        "application/vnd.kubernetes.protobuf" => {
            crate::apiserver::protobuf::decode(body).map_err(|e| {
                ApiError::bad_request(format!("error decoding protobuf request body: {}", e))
            })
        }
        other => Err(ApiError::unsupported_media_type(other)),
    }
}

pub fn decode_json(body: &[u8]) -> ApiResult<Value> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::bad_request("the body of the request is empty"));
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

pub fn decode_yaml(body: &[u8]) -> ApiResult<Value> {
    let text = std::str::from_utf8(body)
        .map_err(|_| ApiError::bad_request("the body of the request is not valid UTF-8"))?;
    if text.trim().is_empty() {
        return Err(ApiError::bad_request("the body of the request is empty"));
    }
    serde_yaml::from_str::<Value>(text)
        .map_err(|e| ApiError::bad_request(format!("error decoding YAML request body: {}", e)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubectl_table_accept_picks_table() {
        let a = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
        assert_eq!(choose(Some(a), false).unwrap(), Output::Table);
    }

    #[test]
    fn protobuf_only_is_not_acceptable_but_falls_back_when_json_listed() {
        assert_eq!(
            choose(Some("application/vnd.kubernetes.protobuf"), false)
                .unwrap_err()
                .code,
            406
        );
        assert_eq!(
            choose(
                Some("application/vnd.kubernetes.protobuf, application/json"),
                false
            )
            .unwrap(),
            Output::Json
        );
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
                .code,
            400
        );
    }
}
