//! The structured-merge-diff schema of the built-in kinds, as kube-apiserver 1.35 builds it from
//! its OpenAPI definitions (`GenericAPIServer.getOpenAPIModels`, kube-openapi's `schemaconv`), and
//! the empty object each kind's create starts from (`Creater.New(kind)`, encoded).
//!
//! The data is `builtins.json`, written by `upstream/smdschema` (`go run ./smdschema` in
//! `upstream/`) from the Go modules of Kubernetes v1.35.4; this module only reads it. A type
//! reference is a type name or an inline atom (`{"scalar"|"list"|"map": ..}`), with an optional
//! `er` overriding the element relationship (`schema.TypeRef.ElementRelationship`).

use serde_json::Value;
use std::collections::HashMap;
use std::sync::OnceLock;

/// `schema.ElementRelationship`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Relationship {
    Atomic,
    Separable,
    Associative,
    /// No relationship given: a map is granular, as `separable`.
    Unset,
}

impl Relationship {
    fn parse(s: Option<&str>) -> Relationship {
        match s {
            Some("atomic") => Relationship::Atomic,
            Some("separable") => Relationship::Separable,
            Some("associative") => Relationship::Associative,
            _ => Relationship::Unset,
        }
    }
}

/// `schema.Scalar`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Scalar {
    Numeric,
    String,
    Boolean,
    Untyped,
}

#[derive(Debug, Clone)]
pub(crate) enum TypeRef {
    Named(usize, Option<Relationship>),
    Inline(Box<Atom>, Option<Relationship>),
    /// The zero `TypeRef` (a struct's missing element type): resolves to nothing.
    None,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct Atom {
    pub scalar: Option<Scalar>,
    pub list: Option<ListDef>,
    pub map: Option<MapDef>,
}

#[derive(Debug, Clone)]
pub(crate) struct ListDef {
    pub element: TypeRef,
    pub er: Relationship,
    pub keys: Vec<String>,
}

#[derive(Debug, Clone)]
pub(crate) struct MapDef {
    /// Sorted by name.
    pub fields: Vec<FieldDef>,
    pub element: TypeRef,
    pub er: Relationship,
}

#[derive(Debug, Clone)]
pub(crate) struct FieldDef {
    pub name: String,
    pub ty: TypeRef,
    pub default: Option<Value>,
}

impl MapDef {
    pub(crate) fn field(&self, name: &str) -> Option<&FieldDef> {
        self.fields
            .binary_search_by(|f| f.name.as_str().cmp(name))
            .ok()
            .map(|i| &self.fields[i])
    }

    /// The type of member `name`: its struct field's, else the element type.
    pub(crate) fn member_type(&self, name: &str) -> &TypeRef {
        self.field(name).map(|f| &f.ty).unwrap_or(&self.element)
    }
}

/// An atom with the relationship override of the reference that led to it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Resolved<'a> {
    pub atom: &'a Atom,
    pub er: Option<Relationship>,
}

impl<'a> Resolved<'a> {
    pub(crate) fn map_er(&self) -> Relationship {
        self.er
            .or(self.atom.map.as_ref().map(|m| m.er))
            .unwrap_or(Relationship::Unset)
    }
    pub(crate) fn list_er(&self) -> Relationship {
        self.er
            .or(self.atom.list.as_ref().map(|l| l.er))
            .unwrap_or(Relationship::Unset)
    }
}

/// When encoding/json leaves a member out (`omitempty`, `omitzero` per the member's Go kind).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Omit {
    Never,
    /// A list or map without `omitempty`: never left out, but an empty one comes back from
    /// storage (protobuf) as nil, written as null.
    Nil,
    /// A nil pointer or interface.
    Null,
    /// A nil or empty slice or map.
    Empty,
    EmptyString,
    ZeroNumber,
    False,
    /// `omitzero`: the zero value.
    Zero,
}

/// One member of a Go struct: its JSON name, when it is left out, and its zero value as written.
#[derive(Clone, Debug)]
pub(crate) struct GoMember {
    pub name: String,
    pub omit: Omit,
    pub zero: Value,
}

#[derive(Clone, Debug)]
pub(crate) struct GoStruct {
    /// Sorted by name.
    pub members: Vec<GoMember>,
}

impl GoStruct {
    pub(crate) fn member(&self, name: &str) -> Option<&GoMember> {
        self.members
            .binary_search_by(|m| m.name.as_str().cmp(name))
            .ok()
            .map(|i| &self.members[i])
    }
}

/// What a kind's objects are: their type and the empty object a create compares against.
#[derive(Debug)]
pub(crate) struct KindInfo {
    pub ty: TypeRef,
    pub zero: Value,
}

#[derive(Debug)]
pub(crate) struct Schema {
    names: HashMap<String, usize>,
    /// The name of each type, by index.
    type_names: Vec<String>,
    types: Vec<Atom>,
    /// How encoding/json writes each struct type's members (by type index), when it is a Go
    /// struct.
    go: Vec<Option<GoStruct>>,
    /// The Go structs of the `go` section that are no SMD type, by definition name.
    go_only: HashMap<String, GoStruct>,
    kinds: HashMap<String, KindInfo>,
    /// `__untyped_deduced_`: what objects of an unknown kind are read as.
    deduced: usize,
    /// `resource.Quantity`, written in its canonical form.
    quantity: Option<usize>,
}

const DATA: &str = include_str!("builtins.json");

impl Schema {
    /// The schema of the built-in kinds (parsed once).
    pub(crate) fn builtins() -> &'static Schema {
        static SCHEMA: OnceLock<Schema> = OnceLock::new();
        SCHEMA.get_or_init(|| Schema::parse(DATA).expect("builtins.json is generated and valid"))
    }

    fn parse(text: &str) -> Result<Schema, String> {
        let doc: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
        let types = doc
            .get("types")
            .and_then(Value::as_object)
            .ok_or("no types")?;
        let names: HashMap<String, usize> = types
            .keys()
            .enumerate()
            .map(|(i, k)| (k.clone(), i))
            .collect();
        let atoms = types
            .values()
            .map(|v| atom(v, &names))
            .collect::<Result<Vec<_>, _>>()?;
        let mut kinds = HashMap::new();
        for (k, v) in doc
            .get("kinds")
            .and_then(Value::as_object)
            .ok_or("no kinds")?
        {
            let ty = type_ref(v.get("type").ok_or("kind without type")?, &names)?;
            let zero = v.get("zero").cloned().unwrap_or(Value::Null);
            kinds.insert(k.clone(), KindInfo { ty, zero });
        }
        let deduced = *names.get("__untyped_deduced_").ok_or("no deduced type")?;
        let quantity = names
            .get("io.k8s.apimachinery.pkg.api.resource.Quantity")
            .copied();
        let mut go: Vec<Option<GoStruct>> = vec![None; atoms.len()];
        let mut go_only: HashMap<String, GoStruct> = HashMap::new();
        for (name, fields) in doc
            .get("go")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            let mut members = Vec::new();
            for (field, rule) in fields.as_object().into_iter().flatten() {
                let omit = match rule.get(0).and_then(Value::as_str) {
                    Some("null") => Omit::Null,
                    Some("empty") => Omit::Empty,
                    Some("\"\"") => Omit::EmptyString,
                    Some("0") => Omit::ZeroNumber,
                    Some("false") => Omit::False,
                    Some("zero") => Omit::Zero,
                    Some("nil") => Omit::Nil,
                    _ => Omit::Never,
                };
                let zero = rule.get(1).cloned().unwrap_or(Value::Null);
                members.push(GoMember {
                    name: field.clone(),
                    omit,
                    zero,
                });
            }
            members.sort_by(|a, b| a.name.cmp(&b.name));
            match names.get(name) {
                Some(i) => go[*i] = Some(GoStruct { members }),
                // A Go struct no SMD type describes (Status): the protobuf encoder reads it.
                None => {
                    go_only.insert(name.clone(), GoStruct { members });
                }
            }
        }
        let mut type_names = vec![String::new(); atoms.len()];
        for (name, i) in &names {
            type_names[*i] = name.clone();
        }
        Ok(Schema {
            names,
            type_names,
            types: atoms,
            go,
            go_only,
            quantity,
            kinds,
            deduced,
        })
    }

    /// The kind `kind` of `apiVersion`, if built in.
    pub(crate) fn kind(&self, api_version: &str, kind: &str) -> Option<&KindInfo> {
        self.kinds.get(&format!("{api_version}/{kind}"))
    }

    /// The type objects of an unknown kind are read as (`DeducedTypeConverter`).
    pub(crate) fn deduced(&self) -> TypeRef {
        TypeRef::Named(self.deduced, None)
    }

    pub(crate) fn named(&self, name: &str) -> Option<TypeRef> {
        self.names.get(name).map(|i| TypeRef::Named(*i, None))
    }

    /// The name of a named type reference.
    pub(crate) fn name_of(&self, tr: &TypeRef) -> Option<&str> {
        match tr {
            TypeRef::Named(i, _) => Some(&self.type_names[*i]),
            _ => None,
        }
    }

    /// Whether `tr` is `resource.Quantity`.
    pub(crate) fn is_quantity(&self, tr: &TypeRef) -> bool {
        matches!(tr, TypeRef::Named(i, _) if Some(*i) == self.quantity)
    }

    /// The Go struct of the OpenAPI definition `name` (`io.k8s.api.core.v1.Pod`), if it is one.
    pub(crate) fn go_struct_named(&self, name: &str) -> Option<&GoStruct> {
        match self.names.get(name) {
            Some(i) => self.go[*i].as_ref(),
            None => self.go_only.get(name),
        }
    }

    /// The Go struct a named type is, if it is one.
    pub(crate) fn go_struct(&self, tr: &TypeRef) -> Option<&GoStruct> {
        match tr {
            TypeRef::Named(i, _) => self.go[*i].as_ref(),
            _ => None,
        }
    }

    pub(crate) fn resolve<'a>(&'a self, tr: &'a TypeRef) -> Option<Resolved<'a>> {
        match tr {
            TypeRef::Named(i, er) => Some(Resolved {
                atom: &self.types[*i],
                er: *er,
            }),
            TypeRef::Inline(a, er) => Some(Resolved { atom: a, er: *er }),
            TypeRef::None => None,
        }
    }
}

fn type_ref(v: &Value, names: &HashMap<String, usize>) -> Result<TypeRef, String> {
    match v {
        Value::String(name) => names
            .get(name)
            .map(|i| TypeRef::Named(*i, None))
            .ok_or_else(|| format!("unknown type {name}")),
        Value::Object(m) => {
            let er = m
                .get("er")
                .and_then(Value::as_str)
                .map(|s| Relationship::parse(Some(s)));
            if let Some(name) = m.get("named").and_then(Value::as_str) {
                let i = names
                    .get(name)
                    .ok_or_else(|| format!("unknown type {name}"))?;
                return Ok(TypeRef::Named(*i, er));
            }
            Ok(TypeRef::Inline(Box::new(atom(v, names)?), er))
        }
        _ => Err(format!("bad type reference {v}")),
    }
}

fn atom(v: &Value, names: &HashMap<String, usize>) -> Result<Atom, String> {
    let scalar = match v.get("scalar").and_then(Value::as_str) {
        None => None,
        Some("numeric") => Some(Scalar::Numeric),
        Some("string") => Some(Scalar::String),
        Some("boolean") => Some(Scalar::Boolean),
        Some("untyped") => Some(Scalar::Untyped),
        Some(other) => return Err(format!("unknown scalar {other}")),
    };
    let list = match v.get("list") {
        None => None,
        Some(l) => Some(ListDef {
            element: type_ref(
                l.get("elementType").ok_or("list without elementType")?,
                names,
            )?,
            er: Relationship::parse(l.get("er").and_then(Value::as_str)),
            keys: l
                .get("keys")
                .and_then(Value::as_array)
                .map(|k| {
                    k.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default(),
        }),
    };
    let map = match v.get("map") {
        None => None,
        Some(m) => {
            let mut fields = Vec::new();
            for f in m
                .get("fields")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                fields.push(FieldDef {
                    name: f
                        .get("name")
                        .and_then(Value::as_str)
                        .ok_or("field without name")?
                        .to_owned(),
                    ty: type_ref(f.get("type").ok_or("field without type")?, names)?,
                    default: f.get("default").cloned(),
                });
            }
            fields.sort_by(|a, b| a.name.cmp(&b.name));
            Some(MapDef {
                fields,
                element: match m.get("elementType") {
                    Some(e) => type_ref(e, names)?,
                    None => TypeRef::None,
                },
                er: Relationship::parse(m.get("er").and_then(Value::as_str)),
            })
        }
    };
    Ok(Atom { scalar, list, map })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_parse_and_know_the_kinds_the_sim_serves() {
        let s = Schema::builtins();
        let deploy = s.kind("apps/v1", "Deployment").expect("Deployment");
        assert_eq!(
            deploy.zero,
            serde_json::json!({"metadata": {}, "spec": {"selector": null, "template": {"metadata": {}, "spec": {"containers": null}}, "strategy": {}}, "status": {}})
        );
        let r = s.resolve(&deploy.ty).unwrap();
        let spec = r.atom.map.as_ref().unwrap().field("spec").unwrap();
        let spec = s.resolve(&spec.ty).unwrap();
        let selector = spec.atom.map.as_ref().unwrap().field("selector").unwrap();
        // LabelSelector is `x-kubernetes-map-type: atomic`.
        assert_eq!(
            s.resolve(&selector.ty).unwrap().map_er(),
            Relationship::Atomic
        );
        let port = s.named("io.k8s.api.core.v1.ContainerPort").unwrap();
        let port = s.resolve(&port).unwrap();
        assert_eq!(
            port.atom
                .map
                .as_ref()
                .unwrap()
                .field("protocol")
                .unwrap()
                .default,
            Some(serde_json::json!("TCP"))
        );
        assert!(s.kind("v1", "Pod").is_some());
        assert!(s
            .kind("apiextensions.k8s.io/v1", "CustomResourceDefinition")
            .is_some());
        assert!(s.kind("apiregistration.k8s.io/v1", "APIService").is_some());
    }
}
