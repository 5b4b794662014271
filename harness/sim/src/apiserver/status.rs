//! API errors, rendered as `meta/v1 Status` objects with the reason and code the real apiserver uses.

use serde_json::{json, Value};

#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    pub code: u16,
    pub reason: &'static str,
    pub message: String,
    /// `details` of the Status: name, group, kind (the resource plural, as the apiserver sets it), causes.
    pub details: Option<Value>,
}

pub type ApiResult<T> = Result<T, ApiError>;

impl ApiError {
    pub fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            code,
            reason,
            message: message.into(),
            details: None,
        }
    }
    fn with_details(mut self, group: &str, resource: &str, name: &str) -> Self {
        self.details = Some(details(group, resource, name));
        self
    }
    pub fn not_found(group: &str, resource: &str, name: &str) -> Self {
        Self::new(
            404,
            "NotFound",
            format!("{} \"{}\" not found", qualified(group, resource), name),
        )
        .with_details(group, resource, name)
    }
    pub fn already_exists(group: &str, resource: &str, name: &str) -> Self {
        Self::new(
            409,
            "AlreadyExists",
            format!("{} \"{}\" already exists", qualified(group, resource), name),
        )
        .with_details(group, resource, name)
    }
    pub fn conflict(group: &str, resource: &str, name: &str, why: &str) -> Self {
        Self::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{}\": {}",
                qualified(group, resource),
                name,
                why
            ),
        )
        .with_details(group, resource, name)
    }
    pub fn stale_resource_version(group: &str, resource: &str, name: &str) -> Self {
        Self::conflict(
            group,
            resource,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }
    /// The 404 of a path no registered resource serves (`NewNotFound` of the API's not-found
    /// handler): empty details.
    pub fn not_found_path() -> Self {
        let mut e = Self::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        );
        e.details = Some(json!({}));
        e
    }
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }
    /// 422 with field causes, e.g. `Pod "x" is invalid: metadata.name: Required value: name or generateName is required`.
    pub fn invalid(
        group: &str,
        kind: &str,
        name: &str,
        causes: Vec<(String, String, &'static str)>,
    ) -> Self {
        let msgs: Vec<String> = causes
            .iter()
            .map(|(f, m, _)| format!("{}: {}", f, m))
            .collect();
        let summary = if msgs.len() == 1 {
            msgs[0].clone()
        } else {
            format!("[{}]", msgs.join(", "))
        };
        let qualified_kind = if group.is_empty() {
            kind.to_string()
        } else {
            format!("{}.{}", kind, group)
        };
        let mut e = Self::new(
            422,
            "Invalid",
            format!("{} \"{}\" is invalid: {}", qualified_kind, name, summary),
        );
        let mut d = details(group, kind, name);
        d["causes"] = causes
            .iter()
            .map(|(f, m, t)| json!({"reason": t, "message": m, "field": f}))
            .collect();
        e.details = Some(d);
        e
    }
    /// go-restful's 405 for a route without that method, as the apiserver's service error
    /// handler writes it (`NewGenericServerResponse`: its details present and empty).
    pub fn method_not_allowed(message: impl Into<String>) -> Self {
        let mut e = Self::new(405, "MethodNotAllowed", message);
        e.details = Some(json!({}));
        e
    }
    /// The serializer's 415 for a body no built-in decoder reads (`NewUnsupportedMediaTypeError`).
    pub fn unsupported_media_type() -> Self {
        Self::new(415, "UnsupportedMediaType", "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf")
    }
    pub fn not_acceptable() -> Self {
        Self::new(
            406,
            "NotAcceptable",
            "only the following media types are accepted: application/json, application/yaml, application/json;as=Table;v=v1;g=meta.k8s.io",
        )
    }
    /// 406 for a representation the answer cannot take (a list asked for as one object).
    pub fn not_acceptable_because(message: String) -> Self {
        Self::new(406, "NotAcceptable", &message)
    }
    pub fn unauthorized() -> Self {
        Self::new(401, "Unauthorized", "Unauthorized")
    }
    pub fn gone(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message)
    }
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(
            500,
            "InternalError",
            format!("Internal error occurred: {}", message.into()),
        )
    }
    pub fn service_unavailable(message: impl Into<String>) -> Self {
        Self::new(503, "ServiceUnavailable", message)
    }
    pub fn too_many_requests(message: impl Into<String>) -> Self {
        Self::new(429, "TooManyRequests", message)
    }
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(403, "Forbidden", message)
    }

    /// The Status body, fields in the apiserver's order (`details` before `code`).
    pub fn to_status(&self) -> Value {
        let mut s = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
        });
        // `reason` is omitempty: errors that are no API status (a 500 from storage) have none.
        if !self.reason.is_empty() {
            s["reason"] = json!(self.reason);
        }
        if let Some(d) = &self.details {
            s["details"] = d.clone();
        }
        s["code"] = json!(self.code);
        s
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}): {}", self.code, self.reason, self.message)
    }
}

impl std::error::Error for ApiError {}

/// `StatusDetails` in Go field order: name, group, kind (the resource), each omitted when empty.
pub fn details(group: &str, kind: &str, name: &str) -> Value {
    // Every StatusDetails member is omitempty.
    let mut d = json!({});
    if !name.is_empty() {
        d["name"] = json!(name);
    }
    if !group.is_empty() {
        d["group"] = json!(group);
    }
    if !kind.is_empty() {
        d["kind"] = json!(kind);
    }
    d
}

/// `pods` for core, `deployments.apps` for groups: how the apiserver names resources in messages.
pub fn qualified(group: &str, resource: &str) -> String {
    if group.is_empty() {
        resource.to_string()
    } else {
        format!("{}.{}", resource, group)
    }
}

/// A `Status` with `status: Success`, returned e.g. by deletecollection and eviction.
pub fn success_status(details: Option<Value>) -> Value {
    let mut s = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"});
    if let Some(d) = details {
        s["details"] = d;
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_found_matches_apiserver_shape() {
        let s = ApiError::not_found("apps", "deployments", "web").to_status();
        assert_eq!(s["message"], "deployments.apps \"web\" not found");
        assert_eq!(s["reason"], "NotFound");
        assert_eq!(s["code"], 404);
        assert_eq!(s["details"]["group"], "apps");
        assert_eq!(
            serde_json::to_string(&s).unwrap(),
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"deployments.apps \"web\" not found","reason":"NotFound","details":{"name":"web","group":"apps","kind":"deployments"},"code":404}"#
        );
    }

    #[test]
    fn invalid_lists_causes() {
        let e = ApiError::invalid(
            "",
            "Pod",
            "p",
            vec![(
                "metadata.name".into(),
                "Required value: name or generateName is required".into(),
                "FieldValueRequired",
            )],
        );
        assert_eq!(e.code, 422);
        assert_eq!(
            e.message,
            "Pod \"p\" is invalid: metadata.name: Required value: name or generateName is required"
        );
        assert_eq!(
            e.to_status()["details"]["causes"][0]["reason"],
            "FieldValueRequired"
        );
    }
}
