//! Server-side printing of `meta.k8s.io/v1` `Table` responses.
//!
//! `kubectl get` asks the API server for
//! `Accept: application/json;as=Table;v=v1;g=meta.k8s.io` and prints whatever
//! columns and cells the server sends back.  The real kube-apiserver renders
//! those rows with the printers registered for each built-in type, the
//! apiextensions-apiserver renders custom resources from a CRD version's
//! `additionalPrinterColumns`, and everything else falls back to the default
//! `Name` / `Created At` table.  This module reproduces that behaviour as pure
//! functions over `serde_json::Value` (no I/O, no global state).
//!
//! Behavioural notes (all mirror the real server unless said otherwise):
//!
//! * Cells are always generated "wide": the server always includes the
//!   priority-1 columns and lets the client hide them unless `-o wide`.
//! * Ages are rendered with [`human_duration`] relative to the caller's `now`;
//!   a missing/zero timestamp prints `<unknown>`.
//! * Objects are printed as stored.  Where the real apiserver would always have
//!   persisted a default (e.g. `Service.spec.type=ClusterIP`, port protocol
//!   `TCP`, `Secret.type=Opaque`, PVC/PV `volumeMode=Filesystem`, PV reclaim
//!   policy `Retain`, PV/PVC phase `Pending`, namespace phase `Active`,
//!   workload `replicas=1`, CSIDriver `volumeLifecycleModes=[Persistent]`),
//!   that default is assumed when the field is absent so the output matches
//!   what a real cluster shows for the same manifest.
//! * Nothing here panics on malformed input: wrong types and missing fields
//!   are treated like Go zero values.

mod access;
mod cells;
mod descriptions;
mod gofmt;
mod jsonpath;
mod printers;
mod quantity;

use crate::timing;
use chrono::{DateTime, Duration, Utc};
use serde_json::{Map, Value};

use access::*;
use descriptions::{D_CREATION, D_NAME};
use gofmt::go_print_value;
use jsonpath::JsonPath;
use printers::{Cell, ColumnDef, PrinterDef};
use quantity::{format_quantity, parse_quantity};

// ---------------------------------------------------------------------------
// Public types
// ---------------------------------------------------------------------------

/// One `columnDefinitions` entry of a Table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    pub name: String,
    /// "string" | "integer" | "date" | "number" | "boolean"
    pub type_: String,
    /// "name" for the Name column, else "" (custom columns may carry any OpenAPI format).
    pub format: String,
    pub description: String,
    /// 0 = always shown, 1 = only shown by kubectl with `-o wide`.
    pub priority: i32,
}

impl Column {
    fn new(name: &str, type_: &str, format: &str, description: &str, priority: i32) -> Column {
        Column {
            name: name.to_string(),
            type_: type_.to_string(),
            format: format.to_string(),
            description: description.to_string(),
            priority,
        }
    }

    fn from_def(d: &ColumnDef) -> Column {
        Column::new(d.name, d.type_, d.format, d.description, d.priority)
    }

    /// The `TableColumnDefinition` JSON object for this column.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("name".into(), Value::String(self.name.clone()));
        m.insert("type".into(), Value::String(self.type_.clone()));
        m.insert("format".into(), Value::String(self.format.clone()));
        m.insert(
            "description".into(),
            Value::String(self.description.clone()),
        );
        m.insert("priority".into(), Value::from(self.priority));
        Value::Object(m)
    }
}

/// A printer for one resource type: the column definitions plus how an object becomes the
/// cells of one row.
#[derive(Debug, Clone)]
pub struct Printer {
    pub columns: Vec<Column>,
    kind: PrinterKind,
}

#[derive(Clone)]
enum PrinterKind {
    /// A built-in kind's definition (`printers::PRINTERS`), or the default table.
    Builtin(
        &'static [ColumnDef],
        Option<fn(&Value) -> Option<Value>>,
        Option<printers::CellFn>,
    ),
    /// Custom resource printed from `additionalPrinterColumns`.
    Custom(Vec<CustomColumn>),
}

impl std::fmt::Debug for PrinterKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PrinterKind::Builtin(cols, ..) => write!(f, "Builtin({} columns)", cols.len()),
            PrinterKind::Custom(cols) => write!(f, "Custom({:?})", cols),
        }
    }
}

#[derive(Debug, Clone)]
struct CustomColumn {
    type_: String,
    path: JsonPath,
}

impl Printer {
    /// Printer for a built-in type (group `""` — or `"core"` — for the core group). Types
    /// without a server-side printer (CustomResourceDefinition, Roles, unknown kinds) get the
    /// default `Name` / `Created At` table, exactly like the real server.
    pub fn builtin(group: &str, kind: &str) -> Printer {
        let group = if group == "core" { "" } else { group };
        match printers::find(group, kind) {
            Some(def) => Printer::from_def(def),
            None => Printer::default_printer(),
        }
    }

    fn from_def(def: &'static PrinterDef) -> Printer {
        Printer {
            columns: def.columns.iter().map(Column::from_def).collect(),
            kind: PrinterKind::Builtin(def.columns, def.row_conditions, def.extra_cell),
        }
    }

    /// The default table convertor used for types without a printer:
    /// `Name` (string/name) and `Created At` (date, RFC3339 cell).
    pub fn default_printer() -> Printer {
        Printer {
            columns: printers::DEFAULT_COLUMNS
                .iter()
                .map(Column::from_def)
                .collect(),
            kind: PrinterKind::Builtin(printers::DEFAULT_COLUMNS, None, None),
        }
    }

    /// Printer for a custom resource from its CRD version's
    /// `additionalPrinterColumns` JSON array.  An empty / null / non-array
    /// value gives the apiextensions default (`Name` + `Age`, where `Age` is a
    /// `date` column over `.metadata.creationTimestamp`).
    ///
    /// Each entry's `jsonPath` (`JSONPath` is accepted too, as in v1beta1 CRDs)
    /// is evaluated with a JSONPath subset: dotted fields (with `\.` escapes),
    /// `['key']` / `["key"]`, `[n]`, `[-n]`, `[a:b]`, `[*]`, `.*`, `..field`
    /// and simple filters `[?(@.type=="Ready")]`.  Like the real convertor,
    /// a column whose path does not parse ends the column list (the columns
    /// before it are kept).
    pub fn custom(additional_printer_columns: &Value) -> Printer {
        let defs: Vec<&Value> = match additional_printer_columns.as_array() {
            Some(a) if !a.is_empty() => a.iter().collect(),
            _ => Vec::new(),
        };
        let mut columns = vec![Column::new("Name", "string", "name", D_NAME, 0)];
        let mut custom = Vec::new();
        if defs.is_empty() {
            columns.push(Column::new("Age", "date", "", D_CREATION, 0));
            custom.push(CustomColumn {
                type_: "date".to_string(),
                path: JsonPath::parse(".metadata.creationTimestamp").unwrap_or_default(),
            });
        }
        for def in defs {
            let name = str_at(def, &["name"]);
            let type_ = str_at(def, &["type"]);
            let format = str_at(def, &["format"]);
            let json_path = match at(def, &["jsonPath"]).and_then(Value::as_str) {
                Some(p) => p,
                None => str_at(def, &["JSONPath"]),
            };
            let priority = clamp_i32(int_at(def, &["priority"]));
            let path = match JsonPath::parse(json_path) {
                Ok(p) => p,
                Err(_) => break,
            };
            let description = match str_at(def, &["description"]) {
                "" => format!(
                    "Custom resource definition column (in JSONPath format): {}",
                    json_path
                ),
                d => d.to_string(),
            };
            columns.push(Column::new(name, type_, format, &description, priority));
            custom.push(CustomColumn {
                type_: type_.to_string(),
                path,
            });
        }
        Printer {
            columns,
            kind: PrinterKind::Custom(custom),
        }
    }

    /// Convenience: printer for version `version` of a CRD object (v1
    /// `spec.versions[].additionalPrinterColumns`, falling back to the
    /// v1beta1-style top-level `spec.additionalPrinterColumns`).
    pub fn for_crd(crd: &Value, version: &str) -> Printer {
        for v in arr_at(crd, &["spec", "versions"]) {
            if str_at(v, &["name"]) == version {
                if let Some(cols) = at(v, &["additionalPrinterColumns"]) {
                    if cols.as_array().is_some_and(|a| !a.is_empty()) {
                        return Printer::custom(cols);
                    }
                }
            }
        }
        match at(crd, &["spec", "additionalPrinterColumns"]) {
            Some(cols) => Printer::custom(cols),
            None => Printer::custom(&Value::Null),
        }
    }

    /// One row's cells for `obj` (always including the wide columns), `now`
    /// being the reference time for ages.
    pub fn cells(&self, obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
        match &self.kind {
            PrinterKind::Builtin(cols, _, extra) => cols
                .iter()
                .map(|c| builtin_cell(c.cell, obj, now))
                .chain(extra.map(|f| f(obj, now)))
                .collect(),
            PrinterKind::Custom(cols) => custom_cells(cols, obj, now),
        }
    }

    /// Row-level `conditions` (only pods set them: a `Completed` condition for
    /// Succeeded / Failed pods, which kubectl uses to dim finished pods).
    pub fn row_conditions(&self, obj: &Value) -> Option<Value> {
        match self.kind {
            PrinterKind::Builtin(_, Some(f), _) => f(obj),
            _ => None,
        }
    }

    /// The `columnDefinitions` JSON array.
    pub fn column_definitions(&self) -> Value {
        Value::Array(self.columns.iter().map(Column::to_json).collect())
    }

    /// One `TableRow` JSON object (`cells`, optional `conditions`, `object`).
    pub fn row(&self, obj: &Value, include_object: &str, now: DateTime<Utc>) -> Value {
        let mut row = Map::new();
        row.insert("cells".into(), Value::Array(self.cells(obj, now)));
        if let Some(conds) = self.row_conditions(obj) {
            row.insert("conditions".into(), conds);
        }
        let object = match include_object {
            "None" => Value::Null,
            "Object" => obj.clone(),
            _ => partial_object_metadata(obj),
        };
        row.insert("object".into(), object);
        Value::Object(row)
    }
}

/// Whether `s` is a value the real server accepts for `includeObject`
/// (`""`, `None`, `Metadata`, `Object`); anything else is a 400 there.
/// [`to_table`] itself treats unknown values as `Metadata`.
pub fn is_valid_include_object(s: &str) -> bool {
    matches!(s, "" | "None" | "Metadata" | "Object")
}

/// `PartialObjectMetadata` for an object, as put into `rows[].object` with
/// `includeObject=Metadata` (the default).
pub fn partial_object_metadata(obj: &Value) -> Value {
    let mut metadata = match at(obj, &["metadata"]) {
        Some(m @ Value::Object(_)) => m.clone(),
        _ => Value::Object(Map::new()),
    };
    // The apiserver takes the metadata from the internal object, before conversion to the
    // request's version: a DaemonSet's template generation is `spec.templateGeneration` there,
    // its annotation only written by the conversion to apps/v1 (pkg/apis/apps/v1/conversion.go).
    if obj.get("kind").and_then(Value::as_str) == Some("DaemonSet") {
        if let Some(a) = metadata
            .get_mut("annotations")
            .and_then(Value::as_object_mut)
        {
            a.shift_remove("deprecated.daemonset.template.generation");
            if a.is_empty() {
                metadata
                    .as_object_mut()
                    .map(|m| m.shift_remove("annotations"));
            }
        }
    }
    let mut m = Map::new();
    m.insert("kind".into(), Value::String("PartialObjectMetadata".into()));
    m.insert("apiVersion".into(), Value::String("meta.k8s.io/v1".into()));
    m.insert("metadata".into(), metadata);
    Value::Object(m)
}

/// A Table asked for as `meta.k8s.io/<version>` (v1beta1 has the same fields): its apiVersion
/// and that of the PartialObjectMetadata of its rows.
pub fn set_version(table: &mut Value, version: &str) {
    if version == "v1" {
        return;
    }
    let api_version = Value::String(format!("meta.k8s.io/{version}"));
    table["apiVersion"] = api_version.clone();
    for row in table
        .get_mut("rows")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        if let Some(o) = row
            .get_mut("object")
            .filter(|o| o["kind"] == "PartialObjectMetadata")
        {
            o["apiVersion"] = api_version.clone();
        }
    }
}

/// Build the full Table object:
/// `{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":rv},
///   "columnDefinitions":[...],"rows":[{"cells":[...],"object":...}]}`.
///
/// * `include_headers == false` leaves `columnDefinitions` nil, written as null
///   (what watch events after the first one carry).
/// * `include_object`: `"None"` (`object: null`), `"Metadata"` / `""` /
///   anything else (PartialObjectMetadata), `"Object"` (the full object).
/// * An empty `resource_version` is omitted from `metadata`, as Go's
///   `ListMeta` would.
pub fn to_table(
    printer: &Printer,
    objects: &[&Value],
    resource_version: &str,
    include_object: &str,
    include_headers: bool,
    now: DateTime<Utc>,
) -> Value {
    let mut meta = Map::new();
    if !resource_version.is_empty() {
        meta.insert(
            "resourceVersion".into(),
            Value::String(resource_version.to_string()),
        );
    }
    to_table_with_list_meta(printer, objects, meta, include_object, include_headers, now)
}

/// Like [`to_table`] but with a caller-supplied `metadata` (ListMeta) map, for
/// paginated lists (`continue`, `remainingItemCount`).
pub fn to_table_with_list_meta(
    printer: &Printer,
    objects: &[&Value],
    list_meta: Map<String, Value>,
    include_object: &str,
    include_headers: bool,
    now: DateTime<Utc>,
) -> Value {
    let mut table = Map::new();
    table.insert("kind".into(), Value::String("Table".into()));
    table.insert("apiVersion".into(), Value::String("meta.k8s.io/v1".into()));
    table.insert("metadata".into(), Value::Object(list_meta));
    let defs = if include_headers {
        printer.column_definitions()
    } else {
        Value::Null
    };
    table.insert("columnDefinitions".into(), defs);
    let rows = objects
        .iter()
        .map(|o| printer.row(o, include_object, now))
        .collect();
    table.insert("rows".into(), Value::Array(rows));
    Value::Object(table)
}

/// kubectl-style human duration, identical to
/// `k8s.io/apimachinery/pkg/util/duration.HumanDuration`:
/// `<invalid>` below -1s, `0s` for -1s..0s, seconds below 2 minutes,
/// `XmYs` below 10 minutes, minutes below 3 hours, `XhYm` below 8 hours,
/// hours below 2 days, `XdYh` below 8 days, days below 2 years, `XyYd`
/// below 8 years, then years.
pub fn human_duration(d: Duration) -> String {
    // Go's time.Duration saturates at ~292 years; mirror that.
    const MAX_GO_DURATION_SECS: i64 = i64::MAX / 1_000_000_000;
    let seconds = d.num_seconds().min(MAX_GO_DURATION_SECS);
    if seconds < -1 {
        return "<invalid>".to_string();
    } else if seconds < 0 {
        return "0s".to_string();
    } else if seconds < 60 * 2 {
        return format!("{}s", seconds);
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        let s = seconds % 60;
        if s == 0 {
            return format!("{}m", minutes);
        }
        return format!("{}m{}s", minutes, s);
    } else if minutes < 60 * 3 {
        return format!("{}m", minutes);
    }
    let hours = seconds / 3600;
    if hours < 8 {
        let m = minutes % 60;
        if m == 0 {
            return format!("{}h", hours);
        }
        return format!("{}h{}m", hours, m);
    } else if hours < 48 {
        return format!("{}h", hours);
    } else if hours < 24 * 8 {
        let h = hours % 24;
        if h == 0 {
            return format!("{}d", hours / 24);
        }
        return format!("{}d{}h", hours / 24, h);
    } else if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    } else if hours < 24 * 365 * 8 {
        let dy = (hours / 24) % 365;
        if dy == 0 {
            return format!("{}y", hours / 24 / 365);
        }
        return format!("{}y{}d", hours / 24 / 365, dy);
    }
    format!("{}y", hours / 24 / 365)
}

/// Canonical string form of a Kubernetes resource quantity (what
/// `resource.Quantity.String()` prints after the server parsed it), e.g.
/// `"1024Mi"` -> `"1Gi"`, `"1.5Gi"` -> `"1536Mi"`, `"1000"` -> `"1k"`,
/// `"0.5"` -> `"500m"`.  Returns `None` when `s` is not a valid quantity.
pub fn canonical_quantity(s: &str) -> Option<String> {
    format_quantity(parse_quantity(s)?)
}

/// The canonical text of the sum of quantities, added in order as `quota.Add` and
/// `Quantity.Add` do from a DecimalSI zero; `None` when one is not a quantity.
pub fn sum_quantities<'a>(items: impl IntoIterator<Item = &'a str>) -> Option<String> {
    let mut total = quantity::zero();
    for q in items {
        total = quantity::add(total, parse_quantity(q)?)?;
    }
    format_quantity(total)
}

/// One cell of a built-in printer.
fn builtin_cell(cell: Cell, obj: &Value, now: DateTime<Utc>) -> Value {
    match cell {
        Cell::Name => s(name_of(obj)),
        Cell::Age => age(obj, now),
        // `m.GetCreationTimestamp().Time.UTC().Format(time.RFC3339)`; the zero time formats as
        // 0001-01-01T00:00:00Z.
        Cell::CreatedAt => Value::String(match time_at(obj, &["metadata", "creationTimestamp"]) {
            Some(t) => timing::rfc3339(t),
            None => "0001-01-01T00:00:00Z".to_string(),
        }),
        Cell::Str(path) => s(str_at(obj, path)),
        Cell::StrDefault(path, default) => s(match str_at(obj, path) {
            "" => default,
            v => v,
        }),
        Cell::StrPtr(path, default) => s(opt_str_at(obj, path).unwrap_or(default)),
        Cell::Int(path) => int(int_at(obj, path)),
        Cell::BoolDefault(path, default) => Value::Bool(opt_bool_at(obj, path).unwrap_or(default)),
        Cell::Len(path) => int(arr_at(obj, path).len() as i64),
        Cell::Fn(f) => f(obj, now),
    }
}

// ----- Custom resources ------------------------------------------------------------

fn custom_cells(cols: &[CustomColumn], obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let mut cells = Vec::with_capacity(cols.len() + 1);
    cells.push(s(name_of(obj)));
    for c in cols {
        let value = match c.path.find_first(obj) {
            Some(v) => v,
            None => {
                cells.push(Value::Null);
                continue;
            }
        };
        cells.push(custom_cell(&c.type_, value, now));
    }
    cells
}

/// `cellForJSONValue` of the apiextensions table convertor (plus its
/// "string" branch, which prints the value the way `kubectl -o jsonpath` would).
fn custom_cell(type_: &str, value: &Value, now: DateTime<Utc>) -> Value {
    match type_ {
        "string" => Value::String(go_print_value(value)),
        _ if value.is_null() => Value::Null,
        "integer" => match value {
            Value::Number(n) => match n.as_i64() {
                Some(i) => int(i),
                None => n.as_f64().map_or(Value::Null, |f| int(f as i64)),
            },
            _ => Value::Null,
        },
        "number" => match value {
            Value::Number(n) => n.as_f64().map_or(Value::Null, float),
            _ => Value::Null,
        },
        "boolean" => match value {
            Value::Bool(b) => Value::Bool(*b),
            _ => Value::Null,
        },
        "date" => match value {
            Value::String(text) => {
                if text.is_empty() || text == "null" {
                    s("<unknown>")
                } else {
                    match timing::parse_time(text) {
                        Some(t) if is_go_zero_time(&t) => s("<unknown>"),
                        Some(t) => Value::String(since(Some(t), now)),
                        None => s("<invalid>"),
                    }
                }
            }
            _ => Value::Null,
        },
        _ => Value::Null,
    }
}

#[cfg(test)]
mod tests;
