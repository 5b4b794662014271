//! Operations (faults and remediations) come from the fault catalogue, crate
//! `faultline-faults`, which the providers share; this module re-exports it and adds the
//! scenario's fault step: `{name, description, heal, <operation>: {...}}`.

use super::duration::Dur;
pub use faultline_faults::ops::*;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::de::{self, MapAccess};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::borrow::Cow;
use std::fmt;
use std::sync::LazyLock;

static FAULT_FIELDS: LazyLock<Vec<&'static str>> = LazyLock::new(|| {
    ["name", "heal", "description"]
        .into_iter()
        .chain(OPERATION_KEYS.iter().copied())
        .collect()
});

/// When an injected fault is healed. Whatever is chosen, every fault still active when the
/// scenario ends (pass, fail, panic, SIGINT/SIGTERM) is healed then.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema, PartialEq, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub enum Heal {
    /// This long after injection.
    After(Dur),
    /// When the named step is reached (before it runs).
    AtStep(String),
    /// Not during the scenario: only by the final clean-up (the default).
    #[default]
    Never,
}

/// `heal:` as YAML spells it: `never`, `{after: 30s}`, `{atStep: name}` (serde_yaml reads
/// externally tagged enums only as `!tags` unless told to accept single-key maps).
struct HealField(Heal);
impl<'de> Deserialize<'de> for HealField {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        serde_yaml::with::singleton_map::deserialize(d).map(HealField)
    }
}

/// A fault step: `{name, heal, <operation>: {...}}`.
#[derive(Clone, Debug, PartialEq)]
pub struct Fault {
    pub name: Option<String>,
    pub description: Option<String>,
    pub heal: Heal,
    pub op: Operation,
}

/// `heal` as a single-key map (`{after: 30s}`) or `never`, as `HealField` reads it.
struct HealOut<'a>(&'a Heal);
impl Serialize for HealOut<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        serde_yaml::with::singleton_map::serialize(self.0, s)
    }
}

/// The shape the deserializer reads: `{name, description, heal, <operation>: {...}}`.
impl Serialize for Fault {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        if let Some(n) = &self.name {
            m.serialize_entry("name", n)?;
        }
        if let Some(d) = &self.description {
            m.serialize_entry("description", d)?;
        }
        if self.heal != Heal::Never {
            m.serialize_entry("heal", &HealOut(&self.heal))?;
        }
        self.op.serialize_entry(&mut m)?;
        m.end()
    }
}

impl<'de> Deserialize<'de> for Fault {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> de::Visitor<'de> for V {
            type Value = Fault;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a fault: a map with `name`, `heal` and one operation")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Fault, A::Error> {
                let (mut name, mut description, mut heal, mut op) =
                    (None, None, None, None::<Operation>);
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "name" => name = Some(map.next_value()?),
                        "description" => description = Some(map.next_value()?),
                        "heal" => heal = Some(map.next_value::<HealField>()?.0),
                        k => {
                            if let (Some(prev), true) = (&op, Operation::is_key(k)) {
                                return Err(de::Error::custom(format!(
                                    "two operations (`{}` and `{k}`): a fault step injects exactly one", prev.key()
                                )));
                            }
                            match Operation::from_key(k, &mut map)? {
                                Some(o) => op = Some(o),
                                None => return Err(de::Error::unknown_field(k, &FAULT_FIELDS)),
                            }
                        }
                    }
                }
                let op = op.ok_or_else(|| {
                    de::Error::custom(format!(
                        "fault names no operation: expected one of {}",
                        quoted_list(&OPERATION_KEYS)
                    ))
                })?;
                Ok(Fault {
                    name,
                    description,
                    heal: heal.unwrap_or_default(),
                    op,
                })
            }
        }
        d.deserialize_map(V)
    }
}

impl JsonSchema for Fault {
    fn schema_name() -> Cow<'static, str> {
        "Fault".into()
    }
    fn json_schema(gen: &mut SchemaGenerator) -> Schema {
        let mut props = serde_json::Map::new();
        props.insert("name".into(), serde_json::json!({"type": "string", "description": "Name, for anchors (`after: <name>`, `after: <name>.healed`) and reports"}));
        props.insert("description".into(), serde_json::json!({"type": "string"}));
        props.insert(
            "heal".into(),
            serde_json::to_value(gen.subschema_for::<Heal>()).unwrap(),
        );
        let mut one_of = vec![];
        for (k, s, doc) in Operation::schema_entries(gen) {
            let mut s = serde_json::to_value(s).unwrap();
            if let Some(o) = s.as_object_mut() {
                o.insert("description".into(), doc.into());
            }
            props.insert(k.into(), s);
            one_of.push(serde_json::json!({"required": [k]}));
        }
        schemars::json_schema!({"type": "object", "description": "Inject one fault", "properties": props,
                                "additionalProperties": false, "oneOf": one_of})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fault_serializes_in_the_shape_scenarios_use() {
        let src = "{name: csi-down, heal: {atStep: plugin-back}, csiPluginDown: {node: worker-02}}";
        let f: Fault = serde_yaml::from_str(src).unwrap();
        let yaml = serde_yaml::to_string(&f).unwrap();
        assert!(!yaml.contains('!'), "YAML tags in {yaml}");
        assert_eq!(serde_yaml::from_str::<Fault>(&yaml).unwrap(), f, "{yaml}");
        let json = serde_json::to_value(&f).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"name": "csi-down", "heal": {"atStep": "plugin-back"}, "csiPluginDown": {"node": "worker-02"}})
        );
        let after: Fault =
            serde_yaml::from_str("{heal: {after: 30s}, kubeletStop: {node: w}}").unwrap();
        assert_eq!(
            serde_yaml::from_str::<Fault>(&serde_yaml::to_string(&after).unwrap()).unwrap(),
            after
        );
    }
}
