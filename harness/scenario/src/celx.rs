//! CEL conditions (the `cel` crate) over Kubernetes objects as JSON.

use std::sync::Arc;

/// A compiled condition. `cel::Program` is immutable once compiled, so it is shared freely.
#[derive(Clone)]
pub struct Condition {
    pub source: String,
    program: Arc<cel::Program>,
}

impl std::fmt::Debug for Condition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Condition({})", self.source)
    }
}

/// The result of evaluating a condition against one object.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    True,
    False,
    /// Evaluation failed (e.g. a missing field): treated as false, the message kept for reports.
    Error(String),
}

impl Outcome {
    pub fn holds(&self) -> bool {
        matches!(self, Outcome::True)
    }
}

impl Condition {
    pub fn compile(source: &str) -> Result<Condition, String> {
        match cel::Program::compile(source) {
            Ok(p) => Ok(Condition { source: source.to_string(), program: Arc::new(p) }),
            Err(e) => {
                let first = e.errors.first();
                Err(match first {
                    Some(pe) => format!("invalid CEL expression `{source}`: {} (at {}:{})", pe.msg, pe.pos.0, pe.pos.1),
                    None => format!("invalid CEL expression `{source}`"),
                })
            }
        }
    }

    /// Evaluate with `object` bound to `obj` (JSON null for an absent object).
    pub fn eval(&self, obj: &serde_json::Value) -> Outcome {
        let mut ctx = cel::Context::default();
        let value = match cel::to_value(obj) {
            Ok(v) => v,
            Err(e) => return Outcome::Error(format!("cannot convert the object for CEL: {e}")),
        };
        ctx.add_variable_from_value("object", value);
        match self.program.execute(&ctx) {
            Ok(cel::Value::Bool(true)) => Outcome::True,
            Ok(cel::Value::Bool(false)) => Outcome::False,
            Ok(other) => Outcome::Error(format!("the condition evaluated to {other:?}, not a bool")),
            Err(e) => Outcome::Error(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn evaluates_over_objects() {
        let c = Condition::compile("object.status.phase == 'Active'").unwrap();
        assert_eq!(c.eval(&json!({"status": {"phase": "Active"}})), Outcome::True);
        assert_eq!(c.eval(&json!({"status": {"phase": "Creating"}})), Outcome::False);
        assert!(matches!(c.eval(&json!({"spec": {}})), Outcome::Error(_)));
        let absent = Condition::compile("object == null").unwrap();
        assert_eq!(absent.eval(&serde_json::Value::Null), Outcome::True);
        let has = Condition::compile("has(object.status) && object.status.restartCount >= 2").unwrap();
        assert_eq!(has.eval(&json!({"status": {"restartCount": 3}})), Outcome::True);
        assert_eq!(has.eval(&json!({"metadata": {}})), Outcome::False);
    }

    #[test]
    fn rejects_bad_syntax() {
        let e = Condition::compile("object.status.phase ==").unwrap_err();
        assert!(e.starts_with("invalid CEL expression"), "{e}");
    }
}
