//! CEL conditions (the `cel` crate) over Kubernetes objects as JSON, and the checks validate
//! runs on them before any cluster exists: the `cel` crate parses but has no type checker, so
//! `check` walks the parsed expression: every variable is one of the expectation's context,
//! every function and method exists, operators get operands they accept, and the whole
//! expression can be a boolean.

use cel::common::ast::{CallExpr, EntryExpr, Expr, IdedExpr, LiteralValue};
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
            Ok(p) => Ok(Condition {
                source: source.to_string(),
                program: Arc::new(p),
            }),
            Err(e) => {
                let first = e.errors.first();
                Err(match first {
                    Some(pe) => format!(
                        "invalid CEL expression `{source}`: {} (at {}:{})",
                        pe.msg, pe.pos.0, pe.pos.1
                    ),
                    None => format!("invalid CEL expression `{source}`"),
                })
            }
        }
    }

    /// Compile and type-check against the variables of the expectation's context (`object`).
    pub fn compile_checked(source: &str, context: &[&str]) -> Result<Condition, String> {
        let c = Condition::compile(source)?;
        let mut checker = Checker {
            context,
            scope: vec![],
        };
        let t = checker
            .check(c.program.expression())
            .map_err(|e| format!("invalid CEL expression `{source}`: {e}"))?;
        if !t.boolish() {
            return Err(format!("invalid CEL expression `{source}`: it is {}, a condition must be a bool (e.g. `... == ...`)", t.a()));
        }
        Ok(c)
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
            Ok(other) => {
                Outcome::Error(format!("the condition evaluated to {other:?}, not a bool"))
            }
            Err(e) => Outcome::Error(e.to_string()),
        }
    }
}

/// CEL types as far as validation can tell them apart; `Dyn` is anything read from `object`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ty {
    Bool,
    Int,
    Uint,
    Double,
    String,
    Bytes,
    Null,
    List,
    Map,
    Type,
    Duration,
    Timestamp,
    Dyn,
}

impl Ty {
    fn name(self) -> &'static str {
        match self {
            Ty::Bool => "bool",
            Ty::Int => "int",
            Ty::Uint => "uint",
            Ty::Double => "double",
            Ty::String => "string",
            Ty::Bytes => "bytes",
            Ty::Null => "null",
            Ty::List => "list",
            Ty::Map => "map",
            Ty::Type => "type",
            Ty::Duration => "google.protobuf.Duration",
            Ty::Timestamp => "google.protobuf.Timestamp",
            Ty::Dyn => "dyn",
        }
    }
    /// With its article: `an int`, `a string`.
    fn a(self) -> String {
        let n = self.name();
        if n.starts_with(['a', 'e', 'i', 'o', 'u']) {
            format!("an {n}")
        } else {
            format!("a {n}")
        }
    }
    fn numeric(self) -> bool {
        matches!(self, Ty::Int | Ty::Uint | Ty::Double)
    }
    /// May be a boolean at run time.
    fn boolish(self) -> bool {
        matches!(self, Ty::Bool | Ty::Dyn)
    }
}

/// What a function returns, by name (CEL standard library); unknown names are `Dyn`.
const RETURNS: &[(&str, Ty)] = &[
    ("size", Ty::Int),
    ("int", Ty::Int),
    ("uint", Ty::Uint),
    ("double", Ty::Double),
    ("string", Ty::String),
    ("bytes", Ty::Bytes),
    ("bool", Ty::Bool),
    ("type", Ty::Type),
    ("duration", Ty::Duration),
    ("timestamp", Ty::Timestamp),
    ("contains", Ty::Bool),
    ("startsWith", Ty::Bool),
    ("endsWith", Ty::Bool),
    ("matches", Ty::Bool),
    ("getFullYear", Ty::Int),
    ("getMonth", Ty::Int),
    ("getDate", Ty::Int),
    ("getDayOfMonth", Ty::Int),
    ("getDayOfWeek", Ty::Int),
    ("getDayOfYear", Ty::Int),
    ("getHours", Ty::Int),
    ("getMinutes", Ty::Int),
    ("getSeconds", Ty::Int),
    ("getMilliseconds", Ty::Int),
];

/// Fields every Kubernetes object has, with their types, by path from `object`: the rest of
/// an object is schemaless here (`dyn`).
const OBJECT_FIELDS: &[(&str, Ty)] = &[
    ("apiVersion", Ty::String),
    ("kind", Ty::String),
    ("metadata", Ty::Map),
    ("metadata.name", Ty::String),
    ("metadata.namespace", Ty::String),
    ("metadata.uid", Ty::String),
    ("metadata.resourceVersion", Ty::String),
    ("metadata.generateName", Ty::String),
    ("metadata.creationTimestamp", Ty::String),
    ("metadata.deletionTimestamp", Ty::String),
    ("metadata.generation", Ty::Int),
    ("metadata.labels", Ty::Map),
    ("metadata.annotations", Ty::Map),
    ("metadata.finalizers", Ty::List),
    ("metadata.ownerReferences", Ty::List),
];

/// `object.a.b` as `a.b` (a field path from a context variable), if `e` is one.
fn object_path(e: &IdedExpr, context: &[&str]) -> Option<String> {
    match &e.expr {
        Expr::Select(s) if !s.test => match &s.operand.expr {
            Expr::Ident(root) if context.contains(&root.as_str()) => Some(s.field.clone()),
            _ => object_path(&s.operand, context).map(|p| format!("{p}.{}", s.field)),
        },
        _ => None,
    }
}

/// String methods: their receiver must be a string.
const STRING_METHODS: &[&str] = &["contains", "startsWith", "endsWith", "matches"];

/// Spelling of operators in messages.
const OPERATORS: &[(&str, &str)] = &[
    ("_&&_", "&&"),
    ("_||_", "||"),
    ("!_", "!"),
    ("_==_", "=="),
    ("_!=_", "!="),
    ("_<_", "<"),
    ("_<=_", "<="),
    ("_>_", ">"),
    ("_>=_", ">="),
    ("_+_", "+"),
    ("_-_", "-"),
    ("_*_", "*"),
    ("_/_", "/"),
    ("_%_", "%"),
    ("-_", "unary -"),
    ("@in", "in"),
];

fn op_name(f: &str) -> &str {
    OPERATORS
        .iter()
        .find(|(k, _)| *k == f)
        .map(|(_, v)| *v)
        .unwrap_or(f)
}

/// Whether the standard environment knows `name` as a function (`member`: as a method). The
/// `cel` crate has no type checker and no public declaration list, so this asks it: an unknown
/// function is the one whose call fails as an undeclared reference.
fn function_exists(name: &str, member: bool) -> bool {
    static KNOWN: std::sync::LazyLock<
        std::sync::Mutex<std::collections::HashMap<(String, bool), bool>>,
    > = std::sync::LazyLock::new(Default::default);
    if let Some(k) = KNOWN
        .lock()
        .ok()
        .and_then(|m| m.get(&(name.to_string(), member)).copied())
    {
        return k;
    }
    let probe = if member {
        format!("null.{name}()")
    } else {
        format!("{name}()")
    };
    let exists = std::panic::catch_unwind(|| {
        let Ok(p) = cel::Program::compile(&probe) else {
            return false;
        };
        !matches!(
            p.execute(&cel::Context::default()),
            Err(cel::ExecutionError::UndeclaredReference(_))
        )
    })
    .unwrap_or(true);
    if let Ok(mut m) = KNOWN.lock() {
        m.insert((name.to_string(), member), exists);
    }
    exists
}

/// Whether `name` is a type the standard environment can name (`int`, `string`, ...).
fn type_exists(name: &str) -> bool {
    cel::Program::compile(name).is_ok_and(|p| p.execute(&cel::Context::default()).is_ok())
}

struct Checker<'a> {
    /// Variables of the expectation's context (`object`).
    context: &'a [&'a str],
    /// Comprehension variables in scope, innermost last.
    scope: Vec<(String, Ty)>,
}

impl Checker<'_> {
    fn check(&mut self, e: &IdedExpr) -> Result<Ty, String> {
        Ok(match &e.expr {
            Expr::Unspecified | Expr::Struct(_) => Ty::Dyn,
            Expr::Literal(l) => match l {
                LiteralValue::Boolean(_) => Ty::Bool,
                LiteralValue::Bytes(_) => Ty::Bytes,
                LiteralValue::Double(_) => Ty::Double,
                LiteralValue::Int(_) => Ty::Int,
                LiteralValue::Null => Ty::Null,
                LiteralValue::String(_) => Ty::String,
                LiteralValue::UInt(_) => Ty::Uint,
            },
            Expr::Ident(name) => {
                if let Some((_, t)) = self.scope.iter().rev().find(|(n, _)| n == name) {
                    *t
                } else if self.context.contains(&name.as_str()) {
                    Ty::Dyn
                } else if type_exists(name) {
                    Ty::Type
                } else {
                    return Err(format!(
                        "unknown variable `{name}`: the condition sees {}",
                        self.context
                            .iter()
                            .map(|c| format!("`{c}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                }
            }
            Expr::List(l) => {
                for x in &l.elements {
                    self.check(x)?;
                }
                Ty::List
            }
            Expr::Map(m) => {
                for entry in &m.entries {
                    if let EntryExpr::MapEntry(me) = &entry.expr {
                        self.check(&me.key)?;
                        self.check(&me.value)?;
                    }
                }
                Ty::Map
            }
            Expr::Select(s) => {
                let t = self.check(&s.operand)?;
                if !matches!(t, Ty::Dyn | Ty::Map | Ty::Null) {
                    return Err(format!(
                        "`.{}` selects a field of {}, which has none",
                        s.field,
                        t.a()
                    ));
                }
                if s.test {
                    Ty::Bool
                } else {
                    // Unless a macro variable shadows `object`.
                    let shadowed = self
                        .scope
                        .iter()
                        .any(|(v, _)| self.context.contains(&v.as_str()));
                    let path = object_path(e, self.context).filter(|_| !shadowed);
                    path.and_then(|p| OBJECT_FIELDS.iter().find(|(f, _)| *f == p).map(|(_, t)| *t))
                        .unwrap_or(Ty::Dyn)
                }
            }
            Expr::Comprehension(c) => {
                self.check(&c.iter_range)?;
                let accu = self.check(&c.accu_init)?;
                let depth = self.scope.len();
                self.scope.push((c.iter_var.clone(), Ty::Dyn));
                if let Some(v2) = &c.iter_var2 {
                    self.scope.push((v2.clone(), Ty::Dyn));
                }
                self.scope.push((c.accu_var.clone(), accu));
                let r = (|| {
                    let cond = self.check(&c.loop_cond)?;
                    if !cond.boolish() {
                        return Err(format!("a macro's predicate is {}, not a bool", cond.a()));
                    }
                    self.check(&c.loop_step)?;
                    self.check(&c.result)
                })();
                self.scope.truncate(depth);
                r?
            }
            Expr::Call(call) => self.call(call)?,
        })
    }

    fn call(&mut self, call: &CallExpr) -> Result<Ty, String> {
        let target = call.target.as_deref().map(|t| self.check(t)).transpose()?;
        let args: Vec<Ty> = call
            .args
            .iter()
            .map(|a| self.check(a))
            .collect::<Result<_, _>>()?;
        let f = call.func_name.as_str();
        let op = op_name(f);
        // The parser gives operators their arity; anything else is not ours to judge.
        let arity = match f {
            "!_" | "-_" | "@not_strictly_false" => 1,
            "_?_:_" => 3,
            _ if f.starts_with('_') || f == "@in" => 2,
            _ => args.len(),
        };
        if args.len() != arity {
            return Ok(Ty::Dyn);
        }
        let both_known = |a: Ty, b: Ty| a != Ty::Dyn && b != Ty::Dyn;
        match f {
            "_&&_" | "_||_" | "!_" | "@not_strictly_false" => {
                if let Some(t) = args.iter().find(|t| !t.boolish()) {
                    return Err(format!("`{op}` needs booleans, got {}", t.a()));
                }
                Ok(Ty::Bool)
            }
            "_?_:_" => {
                if !args[0].boolish() {
                    return Err(format!(
                        "the condition of `? :` is {}, not a bool",
                        args[0].a()
                    ));
                }
                Ok(if args[1] == args[2] { args[1] } else { Ty::Dyn })
            }
            "_==_" | "_!=_" | "_<_" | "_<=_" | "_>_" | "_>=_" => {
                let (a, b) = (args[0], args[1]);
                let comparable =
                    a == b || (a.numeric() && b.numeric()) || a == Ty::Null || b == Ty::Null;
                if both_known(a, b) && !comparable {
                    return Err(format!("`{op}` compares {} with {}", a.a(), b.a()));
                }
                Ok(Ty::Bool)
            }
            "_+_" | "_-_" | "_*_" | "_/_" | "_%_" => {
                let (a, b) = (args[0], args[1]);
                if a == Ty::Dyn && b == Ty::Dyn {
                    return Ok(Ty::Dyn);
                }
                if !both_known(a, b) {
                    // `x + 1` is an int whatever `x` is: the overloads of `+` take equal types.
                    let known = if a == Ty::Dyn { b } else { a };
                    return Ok(known);
                }
                let ok = match f {
                    "_+_" => {
                        a == b
                            && matches!(
                                a,
                                Ty::Int | Ty::Uint | Ty::Double | Ty::String | Ty::Bytes | Ty::List
                            )
                    }
                    _ => a == b && a.numeric(),
                };
                if !ok {
                    return Err(format!("no `{op}` for {} and {}", a.a(), b.a()));
                }
                Ok(a)
            }
            "-_" => Ok(args[0]),
            "@in" => Ok(Ty::Bool),
            _ if f.starts_with('_') || f.starts_with('@') => Ok(Ty::Dyn),
            _ => {
                let member = target.is_some();
                if !function_exists(f, member) {
                    let how = if member { "method" } else { "function" };
                    return Err(format!("unknown {how} `{f}`"));
                }
                if let Some(t) = target {
                    if STRING_METHODS.contains(&f) && t != Ty::Dyn && t != Ty::String {
                        return Err(format!("`{f}` is a string method, called on {}", t.a()));
                    }
                }
                if f == "size" {
                    let of = target.or(args.first().copied()).unwrap_or(Ty::Dyn);
                    if !matches!(of, Ty::Dyn | Ty::String | Ty::Bytes | Ty::List | Ty::Map) {
                        return Err(format!("`size` of {}", of.a()));
                    }
                }
                Ok(RETURNS
                    .iter()
                    .find(|(n, _)| *n == f)
                    .map(|(_, t)| *t)
                    .unwrap_or(Ty::Dyn))
            }
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
        assert_eq!(
            c.eval(&json!({"status": {"phase": "Active"}})),
            Outcome::True
        );
        assert_eq!(
            c.eval(&json!({"status": {"phase": "Creating"}})),
            Outcome::False
        );
        assert!(matches!(c.eval(&json!({"spec": {}})), Outcome::Error(_)));
        let absent = Condition::compile("object == null").unwrap();
        assert_eq!(absent.eval(&serde_json::Value::Null), Outcome::True);
        let has =
            Condition::compile("has(object.status) && object.status.restartCount >= 2").unwrap();
        assert_eq!(
            has.eval(&json!({"status": {"restartCount": 3}})),
            Outcome::True
        );
        assert_eq!(has.eval(&json!({"metadata": {}})), Outcome::False);
    }

    #[test]
    fn type_checks_against_the_context() {
        let ok = [
            "object.status.phase == 'Active'",
            "has(object.status) && object.status.restartCount >= 2",
            "object == null",
            "object.spec.containers.all(c, c.image.startsWith('x'))",
            "size(object.metadata.labels) > 0",
            "object.metadata.name.contains('ws')",
            "object.items.exists_one(i, i == 1)",
            "int(object.status.count) + 1 > 2",
            "object.status.conditions.filter(c, c.type == 'Ready').size() == 1",
            "type(object) == map",
            "object.metadata.name.startsWith('ws-')",
            "object.metadata.labels['app'] == 'x'",
            "object.metadata.generation > 1",
        ];
        for src in ok {
            Condition::compile_checked(src, &["object"]).unwrap_or_else(|e| panic!("{src}: {e}"));
        }
        let bad = [
            ("nosuchfn(object)", "unknown function `nosuchfn`"),
            ("object.name.nosuch()", "unknown method `nosuch`"),
            ("object.status.phase", ""),
            ("1 + 2", "it is an int"),
            ("obj.status == 1", "unknown variable `obj`"),
            ("'a' == 1", "compares a string with an int"),
            ("1 && object.x", "`&&` needs booleans"),
            ("(1).contains('a')", "string method"),
            ("object.metadata.name", "it is a string"),
            (
                "object.metadata.generation.startsWith('1')",
                "string method",
            ),
            ("size(3) > 1", "`size` of an int"),
            ("'a' + 1 == 'b'", "no `+`"),
        ];
        for (src, want) in bad {
            match Condition::compile_checked(src, &["object"]) {
                Ok(_) if src == "object.status.phase" => {} // dyn: a bool at run time is possible
                Ok(_) => panic!("{src} passed"),
                Err(e) => assert!(e.contains(want), "{src}: {e}"),
            }
        }
    }

    #[test]
    fn rejects_bad_syntax() {
        let e = Condition::compile("object.status.phase ==").unwrap_err();
        assert!(e.starts_with("invalid CEL expression"), "{e}");
    }
}
