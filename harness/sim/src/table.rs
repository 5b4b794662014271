// TEMPORARY STUB
use serde_json::{json, Value};
#[derive(Debug, Clone)]
pub struct Column { pub name: String, pub type_: String, pub format: String, pub description: String, pub priority: i32 }
pub struct Printer { pub columns: Vec<Column> }
impl Printer {
    pub fn builtin(_g: &str, _k: &str) -> Printer { Printer { columns: vec![] } }
    pub fn custom(_c: &Value) -> Printer { Printer { columns: vec![] } }
    pub fn cells(&self, _o: &Value, _n: chrono::DateTime<chrono::Utc>) -> Vec<Value> { vec![] }
    pub fn column_definitions(&self) -> Value { json!([]) }
}
pub fn to_table(_p: &Printer, objs: &[&Value], rv: &str, _io: &str, _h: bool, _n: chrono::DateTime<chrono::Utc>) -> Value {
    json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {"resourceVersion": rv}, "columnDefinitions": [], "rows": objs.iter().map(|o| json!({"cells": [o["metadata"]["name"]], "object": o})).collect::<Vec<_>>()})
}
