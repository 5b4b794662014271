//! The protobuf encoding of the v2 document that client-go before 1.27 asks for
//! (`application/com.github.proto-openapi.spec.v2@v1.0+protobuf`): gnostic's `openapi.v2.Document`.
//!
//! Only the messages (and fields) a Kubernetes document uses are declared, with gnostic's field
//! numbers (openapiv2/OpenAPIv2.proto); vendor extensions and defaults travel, as in gnostic, as
//! YAML text (JSON is YAML). The document is converted from its JSON form, so both encodings
//! always say the same.

use prost::Message;
use serde_json::{Map, Value};

#[derive(Clone, PartialEq, Message)]
pub struct Document {
    #[prost(string, tag = "1")]
    pub swagger: String,
    #[prost(message, optional, tag = "2")]
    pub info: Option<Info>,
    #[prost(message, optional, tag = "8")]
    pub paths: Option<Paths>,
    #[prost(message, optional, tag = "9")]
    pub definitions: Option<Definitions>,
    #[prost(message, optional, tag = "10")]
    pub parameters: Option<ParameterDefinitions>,
    #[prost(message, repeated, tag = "12")]
    pub security: Vec<SecurityRequirement>,
    #[prost(message, optional, tag = "13")]
    pub security_definitions: Option<SecurityDefinitions>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Info {
    #[prost(string, tag = "1")]
    pub title: String,
    #[prost(string, tag = "2")]
    pub version: String,
}

/// gnostic's `Any`: only the YAML form (field 2) is written.
#[derive(Clone, PartialEq, Message)]
pub struct Any {
    #[prost(string, tag = "2")]
    pub yaml: String,
}

#[derive(Clone, PartialEq, Message)]
pub struct NamedAny {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, optional, tag = "2")]
    pub value: Option<Any>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Paths {
    #[prost(message, repeated, tag = "2")]
    pub path: Vec<NamedPathItem>,
}

#[derive(Clone, PartialEq, Message)]
pub struct NamedPathItem {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, optional, tag = "2")]
    pub value: Option<PathItem>,
}

#[derive(Clone, PartialEq, Message)]
pub struct PathItem {
    #[prost(message, optional, tag = "2")]
    pub get: Option<Operation>,
    #[prost(message, optional, tag = "3")]
    pub put: Option<Operation>,
    #[prost(message, optional, tag = "4")]
    pub post: Option<Operation>,
    #[prost(message, optional, tag = "5")]
    pub delete: Option<Operation>,
    #[prost(message, optional, tag = "8")]
    pub patch: Option<Operation>,
    #[prost(message, repeated, tag = "9")]
    pub parameters: Vec<ParametersItem>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Operation {
    #[prost(string, repeated, tag = "1")]
    pub tags: Vec<String>,
    #[prost(string, tag = "5")]
    pub operation_id: String,
    #[prost(string, repeated, tag = "6")]
    pub produces: Vec<String>,
    #[prost(string, repeated, tag = "7")]
    pub consumes: Vec<String>,
    #[prost(message, repeated, tag = "8")]
    pub parameters: Vec<ParametersItem>,
    #[prost(message, optional, tag = "9")]
    pub responses: Option<Responses>,
    #[prost(string, repeated, tag = "10")]
    pub schemes: Vec<String>,
    #[prost(message, repeated, tag = "13")]
    pub vendor_extension: Vec<NamedAny>,
}

/// `ParametersItem`: a oneof of `parameter` (field 1) -> `Parameter` (body or non-body) and
/// `json_reference` (field 2), a reference to one of the document's shared parameters.
#[derive(Clone, PartialEq, Message)]
pub struct ParametersItem {
    #[prost(message, optional, tag = "1")]
    pub parameter: Option<Parameter>,
    #[prost(message, optional, tag = "2")]
    pub json_reference: Option<JsonReference>,
}

#[derive(Clone, PartialEq, Message)]
pub struct JsonReference {
    #[prost(string, tag = "1")]
    pub r#ref: String,
}

/// The document's shared `parameters` (field 10).
#[derive(Clone, PartialEq, Message)]
pub struct ParameterDefinitions {
    #[prost(message, repeated, tag = "1")]
    pub additional_properties: Vec<NamedParameter>,
}

#[derive(Clone, PartialEq, Message)]
pub struct NamedParameter {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, optional, tag = "2")]
    pub value: Option<Parameter>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Parameter {
    #[prost(message, optional, tag = "1")]
    pub body_parameter: Option<BodyParameter>,
    #[prost(message, optional, tag = "2")]
    pub non_body_parameter: Option<NonBodyParameter>,
}

#[derive(Clone, PartialEq, Message)]
pub struct BodyParameter {
    #[prost(string, tag = "2")]
    pub name: String,
    #[prost(string, tag = "3")]
    pub r#in: String,
    #[prost(bool, tag = "4")]
    pub required: bool,
    #[prost(message, optional, tag = "5")]
    pub schema: Option<Schema>,
}

#[derive(Clone, PartialEq, Message)]
pub struct NonBodyParameter {
    #[prost(message, optional, tag = "3")]
    pub query_parameter_sub_schema: Option<QueryParameter>,
    #[prost(message, optional, tag = "4")]
    pub path_parameter_sub_schema: Option<PathParameter>,
}

/// `QueryParameterSubSchema`: required 1, in 2, name 4, type 6, uniqueItems 20.
#[derive(Clone, PartialEq, Message)]
pub struct QueryParameter {
    #[prost(bool, tag = "1")]
    pub required: bool,
    #[prost(string, tag = "2")]
    pub r#in: String,
    #[prost(string, tag = "4")]
    pub name: String,
    #[prost(string, tag = "6")]
    pub r#type: String,
    #[prost(bool, tag = "20")]
    pub unique_items: bool,
}

/// `PathParameterSubSchema`: required 1, in 2, name 4, type 5, uniqueItems 19.
#[derive(Clone, PartialEq, Message)]
pub struct PathParameter {
    #[prost(bool, tag = "1")]
    pub required: bool,
    #[prost(string, tag = "2")]
    pub r#in: String,
    #[prost(string, tag = "4")]
    pub name: String,
    #[prost(string, tag = "5")]
    pub r#type: String,
    #[prost(bool, tag = "19")]
    pub unique_items: bool,
}

#[derive(Clone, PartialEq, Message)]
pub struct Responses {
    #[prost(message, repeated, tag = "1")]
    pub response_code: Vec<NamedResponseValue>,
}

#[derive(Clone, PartialEq, Message)]
pub struct NamedResponseValue {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, optional, tag = "2")]
    pub value: Option<ResponseValue>,
}

/// `ResponseValue.response` (field 1).
#[derive(Clone, PartialEq, Message)]
pub struct ResponseValue {
    #[prost(message, optional, tag = "1")]
    pub response: Option<Response>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Response {
    #[prost(string, tag = "1")]
    pub description: String,
    #[prost(message, optional, tag = "2")]
    pub schema: Option<SchemaItem>,
}

/// `SchemaItem.schema` (field 1).
#[derive(Clone, PartialEq, Message)]
pub struct SchemaItem {
    #[prost(message, optional, tag = "1")]
    pub schema: Option<Schema>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Definitions {
    #[prost(message, repeated, tag = "1")]
    pub additional_properties: Vec<NamedSchema>,
}

#[derive(Clone, PartialEq, Message)]
pub struct NamedSchema {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, optional, tag = "2")]
    pub value: Option<Schema>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Schema {
    #[prost(string, tag = "1")]
    pub r#ref: String,
    #[prost(string, tag = "2")]
    pub format: String,
    #[prost(string, tag = "3")]
    pub title: String,
    #[prost(string, tag = "4")]
    pub description: String,
    #[prost(message, optional, tag = "5")]
    pub default: Option<Any>,
    #[prost(double, tag = "7")]
    pub maximum: f64,
    #[prost(double, tag = "9")]
    pub minimum: f64,
    #[prost(int64, tag = "11")]
    pub max_length: i64,
    #[prost(int64, tag = "12")]
    pub min_length: i64,
    #[prost(string, tag = "13")]
    pub pattern: String,
    #[prost(int64, tag = "14")]
    pub max_items: i64,
    #[prost(int64, tag = "15")]
    pub min_items: i64,
    #[prost(bool, tag = "16")]
    pub unique_items: bool,
    #[prost(string, repeated, tag = "19")]
    pub required: Vec<String>,
    #[prost(message, repeated, tag = "20")]
    pub r#enum: Vec<Any>,
    #[prost(message, optional, boxed, tag = "21")]
    pub additional_properties: Option<Box<AdditionalPropertiesItem>>,
    #[prost(message, optional, tag = "22")]
    pub r#type: Option<TypeItem>,
    #[prost(message, optional, tag = "23")]
    pub items: Option<ItemsItem>,
    #[prost(message, repeated, tag = "24")]
    pub all_of: Vec<Schema>,
    #[prost(message, optional, tag = "25")]
    pub properties: Option<Properties>,
    #[prost(message, repeated, tag = "31")]
    pub vendor_extension: Vec<NamedAny>,
}

/// gnostic's oneof `{Schema schema = 1; bool boolean = 2}`.
#[derive(Clone, PartialEq, Message)]
pub struct AdditionalPropertiesItem {
    #[prost(oneof = "additional::Value", tags = "1, 2")]
    pub oneof: Option<additional::Value>,
}

pub mod additional {
    // As gnostic's generated Go and prost's generated Rust have it: the schema inline.
    #[allow(clippy::large_enum_variant)]
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Value {
        #[prost(message, tag = "1")]
        Schema(super::Schema),
        #[prost(bool, tag = "2")]
        Boolean(bool),
    }
}

#[derive(Clone, PartialEq, Message)]
pub struct TypeItem {
    #[prost(string, repeated, tag = "1")]
    pub value: Vec<String>,
}

#[derive(Clone, PartialEq, Message)]
pub struct ItemsItem {
    #[prost(message, repeated, tag = "1")]
    pub schema: Vec<Schema>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Properties {
    #[prost(message, repeated, tag = "1")]
    pub additional_properties: Vec<NamedSchema>,
}

#[derive(Clone, PartialEq, Message)]
pub struct SecurityDefinitions {
    #[prost(message, repeated, tag = "1")]
    pub additional_properties: Vec<NamedSecurityDefinitionsItem>,
}

#[derive(Clone, PartialEq, Message)]
pub struct NamedSecurityDefinitionsItem {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, optional, tag = "2")]
    pub value: Option<SecurityDefinitionsItem>,
}

/// `SecurityDefinitionsItem.api_key_security` (field 2).
#[derive(Clone, PartialEq, Message)]
pub struct SecurityDefinitionsItem {
    #[prost(message, optional, tag = "2")]
    pub api_key_security: Option<ApiKeySecurity>,
}

#[derive(Clone, PartialEq, Message)]
pub struct ApiKeySecurity {
    #[prost(string, tag = "1")]
    pub r#type: String,
    #[prost(string, tag = "2")]
    pub name: String,
    #[prost(string, tag = "3")]
    pub r#in: String,
    #[prost(string, tag = "4")]
    pub description: String,
}

#[derive(Clone, PartialEq, Message)]
pub struct SecurityRequirement {
    #[prost(message, repeated, tag = "1")]
    pub additional_properties: Vec<NamedStringArray>,
}

#[derive(Clone, PartialEq, Message)]
pub struct NamedStringArray {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, optional, tag = "2")]
    pub value: Option<StringArray>,
}

#[derive(Clone, PartialEq, Message)]
pub struct StringArray {
    #[prost(string, repeated, tag = "1")]
    pub value: Vec<String>,
}

fn s(v: &Value, k: &str) -> String {
    v.get(k)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn strings(v: &Value, k: &str) -> Vec<String> {
    v.get(k)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

fn any(v: &Value) -> Any {
    Any {
        yaml: v.to_string(),
    }
}

fn extensions(v: &Value) -> Vec<NamedAny> {
    let Some(m) = v.as_object() else {
        return vec![];
    };
    m.iter()
        .filter(|(k, _)| k.starts_with("x-"))
        .map(|(k, x)| NamedAny {
            name: k.clone(),
            value: Some(any(x)),
        })
        .collect()
}

fn named_schemas(m: Option<&Map<String, Value>>) -> Vec<NamedSchema> {
    m.map(|m| {
        m.iter()
            .map(|(k, v)| NamedSchema {
                name: k.clone(),
                value: Some(schema(v)),
            })
            .collect()
    })
    .unwrap_or_default()
}

fn schema(v: &Value) -> Schema {
    let num = |k: &str| v.get(k).and_then(Value::as_f64).unwrap_or_default();
    let int = |k: &str| v.get(k).and_then(Value::as_i64).unwrap_or_default();
    let r#type = match v.get("type") {
        Some(Value::String(t)) => Some(TypeItem {
            value: vec![t.clone()],
        }),
        Some(Value::Array(a)) => Some(TypeItem {
            value: a
                .iter()
                .filter_map(|t| t.as_str().map(String::from))
                .collect(),
        }),
        _ => None,
    };
    let items = match v.get("items") {
        Some(Value::Array(a)) => Some(ItemsItem {
            schema: a.iter().map(schema).collect(),
        }),
        Some(i @ Value::Object(_)) => Some(ItemsItem {
            schema: vec![schema(i)],
        }),
        _ => None,
    };
    let additional_properties = match v.get("additionalProperties") {
        Some(Value::Bool(b)) => Some(Box::new(AdditionalPropertiesItem {
            oneof: Some(additional::Value::Boolean(*b)),
        })),
        Some(a @ Value::Object(_)) => Some(Box::new(AdditionalPropertiesItem {
            oneof: Some(additional::Value::Schema(schema(a))),
        })),
        _ => None,
    };
    Schema {
        r#ref: s(v, "$ref"),
        format: s(v, "format"),
        title: s(v, "title"),
        description: s(v, "description"),
        default: v.get("default").map(any),
        maximum: num("maximum"),
        minimum: num("minimum"),
        max_length: int("maxLength"),
        min_length: int("minLength"),
        pattern: s(v, "pattern"),
        max_items: int("maxItems"),
        min_items: int("minItems"),
        unique_items: v.get("uniqueItems") == Some(&Value::Bool(true)),
        required: strings(v, "required"),
        r#enum: v
            .get("enum")
            .and_then(Value::as_array)
            .map(|a| a.iter().map(any).collect())
            .unwrap_or_default(),
        additional_properties,
        r#type,
        items,
        all_of: v
            .get("allOf")
            .and_then(Value::as_array)
            .map(|a| a.iter().map(schema).collect())
            .unwrap_or_default(),
        properties: v
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| Properties {
                additional_properties: named_schemas(Some(p)),
            }),
        vendor_extension: extensions(v),
    }
}

fn parameter(p: &Value) -> ParametersItem {
    if let Some(r) = p.get("$ref").and_then(Value::as_str) {
        return ParametersItem {
            parameter: None,
            json_reference: Some(JsonReference { r#ref: r.into() }),
        };
    }
    ParametersItem {
        parameter: Some(parameter_value(p)),
        json_reference: None,
    }
}

fn parameter_value(p: &Value) -> Parameter {
    let required = p.get("required") == Some(&Value::Bool(true));
    let unique_items = p.get("uniqueItems") == Some(&Value::Bool(true));
    let parameter = match p.get("in").and_then(Value::as_str) {
        Some("body") => Parameter {
            body_parameter: Some(BodyParameter {
                name: s(p, "name"),
                r#in: "body".into(),
                required,
                schema: p.get("schema").map(schema),
            }),
            non_body_parameter: None,
        },
        Some("path") => Parameter {
            body_parameter: None,
            non_body_parameter: Some(NonBodyParameter {
                query_parameter_sub_schema: None,
                path_parameter_sub_schema: Some(PathParameter {
                    required,
                    r#in: "path".into(),
                    name: s(p, "name"),
                    r#type: s(p, "type"),
                    unique_items,
                }),
            }),
        },
        _ => Parameter {
            body_parameter: None,
            non_body_parameter: Some(NonBodyParameter {
                query_parameter_sub_schema: Some(QueryParameter {
                    required,
                    r#in: "query".into(),
                    name: s(p, "name"),
                    r#type: s(p, "type"),
                    unique_items,
                }),
                path_parameter_sub_schema: None,
            }),
        },
    };
    parameter
}

fn parameters(v: &Value) -> Vec<ParametersItem> {
    v.get("parameters")
        .and_then(Value::as_array)
        .map(|a| a.iter().map(parameter).collect())
        .unwrap_or_default()
}

fn operation(v: &Value) -> Operation {
    let response_code = v
        .get("responses")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(code, r)| NamedResponseValue {
                    name: code.clone(),
                    value: Some(ResponseValue {
                        response: Some(Response {
                            description: s(r, "description"),
                            schema: r.get("schema").map(|x| SchemaItem {
                                schema: Some(schema(x)),
                            }),
                        }),
                    }),
                })
                .collect()
        })
        .unwrap_or_default();
    Operation {
        tags: strings(v, "tags"),
        operation_id: s(v, "operationId"),
        produces: strings(v, "produces"),
        consumes: strings(v, "consumes"),
        parameters: parameters(v),
        responses: Some(Responses { response_code }),
        schemes: strings(v, "schemes"),
        vendor_extension: extensions(v),
    }
}

/// Encode a v2 document (as `v2::document` builds it) in gnostic's protobuf form.
pub fn encode(doc: &Value) -> Vec<u8> {
    let op = |item: &Value, m: &str| item.get(m).map(operation);
    let path = doc
        .get("paths")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(p, item)| NamedPathItem {
                    name: p.clone(),
                    value: Some(PathItem {
                        get: op(item, "get"),
                        put: op(item, "put"),
                        post: op(item, "post"),
                        delete: op(item, "delete"),
                        patch: op(item, "patch"),
                        parameters: parameters(item),
                    }),
                })
                .collect()
        })
        .unwrap_or_default();
    let security_definitions = doc
        .get("securityDefinitions")
        .and_then(Value::as_object)
        .map(|m| SecurityDefinitions {
            additional_properties: m
                .iter()
                .map(|(k, d)| NamedSecurityDefinitionsItem {
                    name: k.clone(),
                    value: Some(SecurityDefinitionsItem {
                        api_key_security: Some(ApiKeySecurity {
                            r#type: s(d, "type"),
                            name: s(d, "name"),
                            r#in: s(d, "in"),
                            description: s(d, "description"),
                        }),
                    }),
                })
                .collect(),
        });
    let security = doc
        .get("security")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_object)
                .map(|m| SecurityRequirement {
                    additional_properties: m
                        .keys()
                        .map(|k| NamedStringArray {
                            name: k.clone(),
                            value: Some(StringArray { value: vec![] }),
                        })
                        .collect(),
                })
                .collect()
        })
        .unwrap_or_default();
    Document {
        swagger: s(doc, "swagger"),
        info: doc.get("info").map(|i| Info {
            title: s(i, "title"),
            version: s(i, "version"),
        }),
        paths: Some(Paths { path }),
        definitions: Some(Definitions {
            additional_properties: named_schemas(doc.get("definitions").and_then(Value::as_object)),
        }),
        parameters: doc.get("parameters").and_then(Value::as_object).map(|m| {
            ParameterDefinitions {
                additional_properties: m
                    .iter()
                    .map(|(name, p)| NamedParameter {
                        name: name.clone(),
                        value: Some(parameter_value(p)),
                    })
                    .collect(),
            }
        }),
        security,
        security_definitions,
    }
    .encode_to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn schemas_and_extensions_survive_encoding() {
        let doc = json!({
            "swagger": "2.0",
            "info": {"title": "Kubernetes", "version": "v1.35.0"},
            "paths": {"/api/v1/pods": {"get": {"operationId": "listCoreV1PodForAllNamespaces", "x-kubernetes-action": "list",
                "parameters": [{"name": "limit", "in": "query", "type": "integer", "uniqueItems": true}],
                "responses": {"200": {"description": "OK", "schema": {"$ref": "#/definitions/io.k8s.api.core.v1.PodList"}}}}}},
            "definitions": {"io.k8s.api.core.v1.Pod": {"type": "object", "properties": {
                "spec": {"$ref": "#/definitions/io.k8s.api.core.v1.PodSpec", "description": "d"},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "args": {"type": "array", "items": {"type": "string"}}},
                "x-kubernetes-group-version-kind": [{"group": "", "kind": "Pod", "version": "v1"}]}},
        });
        let decoded = Document::decode(encode(&doc).as_slice()).unwrap();
        let pod = &decoded.definitions.unwrap().additional_properties[0];
        assert_eq!(pod.name, "io.k8s.api.core.v1.Pod");
        let pod = pod.value.as_ref().unwrap();
        assert_eq!(pod.r#type.as_ref().unwrap().value, ["object"]);
        let gvk: Value =
            serde_json::from_str(&pod.vendor_extension[0].value.as_ref().unwrap().yaml).unwrap();
        assert_eq!(gvk[0]["kind"], "Pod");
        let props = &pod.properties.as_ref().unwrap().additional_properties;
        let spec = props
            .iter()
            .find(|p| p.name == "spec")
            .unwrap()
            .value
            .as_ref()
            .unwrap();
        assert_eq!(spec.r#ref, "#/definitions/io.k8s.api.core.v1.PodSpec");
        let labels = props
            .iter()
            .find(|p| p.name == "labels")
            .unwrap()
            .value
            .as_ref()
            .unwrap();
        assert!(matches!(
            labels.additional_properties.as_deref(),
            Some(AdditionalPropertiesItem {
                oneof: Some(additional::Value::Schema(_))
            })
        ));
        let get = decoded.paths.unwrap().path[0]
            .value
            .as_ref()
            .unwrap()
            .get
            .clone()
            .unwrap();
        assert_eq!(get.operation_id, "listCoreV1PodForAllNamespaces");
        let q = get.parameters[0]
            .parameter
            .as_ref()
            .unwrap()
            .non_body_parameter
            .as_ref()
            .unwrap();
        assert_eq!(q.query_parameter_sub_schema.as_ref().unwrap().name, "limit");
    }
}
