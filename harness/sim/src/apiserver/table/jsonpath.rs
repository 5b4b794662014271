//! The JSONPath subset CRD printer columns use (k8s.io/client-go/util/jsonpath with
//! AllowMissingKeys(true), as the apiextensions table convertor evaluates it).

use serde_json::Value;

use super::access::float;

// ---------------------------------------------------------------------------
// JSONPath subset (k8s.io/client-go/util/jsonpath semantics with
// AllowMissingKeys(true), as used by the apiextensions table convertor)
// ---------------------------------------------------------------------------

#[derive(Debug, Clone, Default)]
pub(super) struct JsonPath {
    steps: Vec<Step>,
}

#[derive(Debug, Clone)]
enum Step {
    Field(String),
    Union(Vec<String>),
    Wildcard,
    Recursive,
    Index(Vec<SliceSpec>),
    Filter(Box<Filter>),
}

#[derive(Debug, Clone, Copy)]
struct SliceSpec {
    start: Option<i64>,
    end: Option<i64>,
    step: Option<i64>,
    single: bool,
}

#[derive(Debug, Clone)]
struct Filter {
    left: Vec<Step>,
    cmp: Option<(Comparison, Operand)>,
}

#[derive(Debug, Clone)]
enum Operand {
    Literal(Value),
    Path(Vec<Step>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Comparison {
    Eq,
    Ne,
    Lt,
    Gt,
    Le,
    Ge,
    /// An operator the real evaluator rejects at evaluation time (e.g. `=`).
    Invalid,
}

/// Evaluation failed (the real convertor then prints `<none>`).
struct EvalError;

impl JsonPath {
    pub(super) fn parse(text: &str) -> Result<JsonPath, String> {
        let mut t = text.trim();
        if let Some(inner) = t.strip_prefix('{').and_then(|x| x.strip_suffix('}')) {
            t = inner.trim();
        }
        let chars: Vec<char> = t.chars().collect();
        let mut pos = 0;
        if chars.first() == Some(&'$') {
            pos = 1;
        }
        let steps = parse_steps(&chars, &mut pos)?;
        if pos != chars.len() {
            return Err(format!("unexpected trailing input in {:?}", text));
        }
        Ok(JsonPath { steps })
    }

    /// First result of the path (what the table convertor uses), if any.
    pub(super) fn find_first<'a>(&self, root: &'a Value) -> Option<&'a Value> {
        eval_steps(&self.steps, root).ok()?.into_iter().next()
    }
}

fn is_field_terminator(ch: char) -> bool {
    ch.is_whitespace() || matches!(ch, '.' | ',' | '[' | ']' | '$' | '@' | '{' | '}')
}

fn parse_steps(c: &[char], pos: &mut usize) -> Result<Vec<Step>, String> {
    let mut steps = Vec::new();
    if *pos < c.len() && c[*pos] != '.' && c[*pos] != '[' {
        // A bare leading identifier, e.g. `status.phase`.
        let name = parse_field_name(c, pos);
        if name.is_empty() {
            return Err(format!("empty field name at {}", *pos));
        }
        steps.push(Step::Field(name));
    }
    while *pos < c.len() {
        match c[*pos] {
            '.' => {
                *pos += 1;
                if *pos < c.len() && c[*pos] == '.' {
                    *pos += 1;
                    steps.push(Step::Recursive);
                }
                if *pos >= c.len() {
                    break; // a trailing '.' selects the current object
                }
                match c[*pos] {
                    '*' => {
                        *pos += 1;
                        steps.push(Step::Wildcard);
                    }
                    '[' => {}
                    _ => {
                        let name = parse_field_name(c, pos);
                        if name.is_empty() {
                            return Err(format!("empty field name at {}", *pos));
                        }
                        steps.push(Step::Field(name));
                    }
                }
            }
            '[' => steps.push(parse_bracket(c, pos)?),
            ch => return Err(format!("unexpected character {:?}", ch)),
        }
    }
    Ok(steps)
}

/// A field name up to the next unescaped terminator; `\x` stands for `x`.
fn parse_field_name(c: &[char], pos: &mut usize) -> String {
    let mut name = String::new();
    while *pos < c.len() {
        let ch = c[*pos];
        if ch == '\\' {
            *pos += 1;
            if *pos < c.len() {
                name.push(c[*pos]);
                *pos += 1;
            }
            continue;
        }
        if is_field_terminator(ch) {
            break;
        }
        name.push(ch);
        *pos += 1;
    }
    name
}

/// Parse `[...]` starting at `c[*pos] == '['`.
fn parse_bracket(c: &[char], pos: &mut usize) -> Result<Step, String> {
    let start = *pos + 1;
    let mut i = start;
    let mut quote: Option<char> = None;
    let mut depth = 0i32;
    while i < c.len() {
        let ch = c[i];
        match quote {
            Some(q) => {
                if ch == '\\' {
                    i += 1;
                } else if ch == q {
                    quote = None;
                }
            }
            None => match ch {
                '\'' | '"' => quote = Some(ch),
                '(' => depth += 1,
                ')' => depth -= 1,
                ']' if depth <= 0 => break,
                _ => {}
            },
        }
        i += 1;
    }
    if i >= c.len() {
        return Err("unterminated [".to_string());
    }
    let inner: String = c[start..i].iter().collect();
    *pos = i + 1;
    let inner = inner.trim();
    if inner == "*" {
        return Ok(Step::Wildcard);
    }
    if let Some(rest) = inner.strip_prefix('?') {
        let rest = rest.trim();
        let body = rest
            .strip_prefix('(')
            .and_then(|r| r.strip_suffix(')'))
            .ok_or_else(|| "malformed filter".to_string())?;
        return Ok(Step::Filter(Box::new(parse_filter(body)?)));
    }
    let parts = split_top_level_commas(inner);
    if parts
        .iter()
        .all(|p| p.starts_with('\'') || p.starts_with('"'))
    {
        let mut names = Vec::new();
        for p in &parts {
            names.push(unquote(p).ok_or_else(|| format!("bad quoted key {:?}", p))?);
        }
        return Ok(if names.len() == 1 {
            Step::Field(names.remove(0))
        } else {
            Step::Union(names)
        });
    }
    let mut specs = Vec::new();
    for p in parts {
        specs.push(parse_slice(&p)?);
    }
    Ok(Step::Index(specs))
}

fn split_top_level_commas(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for ch in s.chars() {
        if let Some(q) = quote {
            cur.push(ch);
            if escaped {
                escaped = false;
            } else if ch == '\\' {
                escaped = true;
            } else if ch == q {
                quote = None;
            }
            continue;
        }
        match ch {
            '\'' | '"' => {
                quote = Some(ch);
                cur.push(ch);
            }
            ',' => out.push(std::mem::take(&mut cur).trim().to_string()),
            _ => cur.push(ch),
        }
    }
    out.push(cur.trim().to_string());
    out
}

fn unquote(p: &str) -> Option<String> {
    let p = p.trim();
    let q = p.chars().next()?;
    if (q != '\'' && q != '"') || p.len() < 2 || !p.ends_with(q) {
        return None;
    }
    let body = &p[1..p.len() - 1];
    let mut out = String::new();
    let mut chars = body.chars();
    while let Some(ch) = chars.next() {
        if ch == '\\' {
            if let Some(n) = chars.next() {
                out.push(n);
            }
        } else {
            out.push(ch);
        }
    }
    Some(out)
}

fn parse_opt_int(s: &str) -> Result<Option<i64>, String> {
    let s = s.trim();
    if s.is_empty() {
        return Ok(None);
    }
    s.parse::<i64>()
        .map(Some)
        .map_err(|_| format!("bad array index {:?}", s))
}

fn parse_slice(p: &str) -> Result<SliceSpec, String> {
    let pieces: Vec<&str> = p.split(':').collect();
    match pieces.len() {
        1 => {
            let n = parse_opt_int(pieces[0])?.ok_or_else(|| "empty array index".to_string())?;
            Ok(SliceSpec {
                start: Some(n),
                end: None,
                step: None,
                single: true,
            })
        }
        2 | 3 => Ok(SliceSpec {
            start: parse_opt_int(pieces[0])?,
            end: parse_opt_int(pieces[1])?,
            step: if pieces.len() == 3 {
                parse_opt_int(pieces[2])?
            } else {
                None
            },
            single: false,
        }),
        _ => Err(format!("bad slice {:?}", p)),
    }
}

fn parse_filter(body: &str) -> Result<Filter, String> {
    // Split at the first run of comparison characters outside quotes.
    let chars: Vec<char> = body.chars().collect();
    let mut quote: Option<char> = None;
    let mut op_start = None;
    for (i, &ch) in chars.iter().enumerate() {
        if let Some(q) = quote {
            if ch == q {
                quote = None;
            }
            continue;
        }
        if ch == '\'' || ch == '"' {
            quote = Some(ch);
        } else if matches!(ch, '!' | '<' | '>' | '=') {
            op_start = Some(i);
            break;
        }
    }
    let relative_path = |text: &str| -> Result<Vec<Step>, String> {
        let text = text.trim();
        let rest = text
            .strip_prefix('@')
            .ok_or_else(|| format!("filter operand {:?} must start with @", text))?;
        let rc: Vec<char> = rest.chars().collect();
        let mut pos = 0;
        let steps = parse_steps(&rc, &mut pos)?;
        if pos != rc.len() {
            return Err(format!("bad filter path {:?}", text));
        }
        Ok(steps)
    };
    let Some(op_start) = op_start else {
        return Ok(Filter {
            left: relative_path(body)?,
            cmp: None,
        });
    };
    let mut op_end = op_start;
    while op_end < chars.len() && matches!(chars[op_end], '!' | '<' | '>' | '=') {
        op_end += 1;
    }
    let left: String = chars[..op_start].iter().collect();
    let op: String = chars[op_start..op_end].iter().collect();
    let right: String = chars[op_end..].iter().collect();
    let op = match op.as_str() {
        "==" => Comparison::Eq,
        "!=" => Comparison::Ne,
        "<" => Comparison::Lt,
        ">" => Comparison::Gt,
        "<=" => Comparison::Le,
        ">=" => Comparison::Ge,
        _ => Comparison::Invalid,
    };
    let right = right.trim();
    let operand = if right.starts_with('@') {
        Operand::Path(relative_path(right)?)
    } else if right.starts_with('\'') || right.starts_with('"') {
        Operand::Literal(Value::String(
            unquote(right).ok_or_else(|| format!("bad string literal {:?}", right))?,
        ))
    } else if right == "true" || right == "false" {
        Operand::Literal(Value::Bool(right == "true"))
    } else if let Ok(i) = right.parse::<i64>() {
        Operand::Literal(Value::from(i))
    } else if let Ok(f) = right.parse::<f64>() {
        Operand::Literal(float(f))
    } else {
        return Err(format!("bad filter operand {:?}", right));
    };
    Ok(Filter {
        left: relative_path(&left)?,
        cmp: Some((op, operand)),
    })
}

fn eval_steps<'a>(steps: &[Step], root: &'a Value) -> Result<Vec<&'a Value>, EvalError> {
    let mut cur = vec![root];
    for step in steps {
        cur = eval_step(step, cur)?;
    }
    Ok(cur)
}

fn eval_step<'a>(step: &Step, input: Vec<&'a Value>) -> Result<Vec<&'a Value>, EvalError> {
    let mut out = Vec::new();
    match step {
        Step::Field(name) => {
            for v in input {
                if let Some(x) = v.as_object().and_then(|m| m.get(name)) {
                    out.push(x);
                }
            }
        }
        Step::Union(names) => {
            for v in input {
                if let Some(m) = v.as_object() {
                    out.extend(names.iter().filter_map(|n| m.get(n)));
                }
            }
        }
        Step::Wildcard => {
            for v in input {
                match v {
                    Value::Object(m) => out.extend(m.values()),
                    Value::Array(a) => out.extend(a.iter()),
                    _ => {}
                }
            }
        }
        Step::Recursive => {
            for v in input {
                collect_containers(v, &mut out);
            }
        }
        Step::Index(specs) => {
            for v in input {
                match v {
                    Value::Null => continue,
                    Value::Array(a) => {
                        for spec in specs {
                            apply_slice(a, spec, &mut out)?;
                        }
                    }
                    _ => return Err(EvalError),
                }
            }
        }
        Step::Filter(f) => {
            for v in input {
                let items = v.as_array().ok_or(EvalError)?;
                for item in items {
                    if filter_matches(f, item)? {
                        out.push(item);
                    }
                }
            }
        }
    }
    Ok(out)
}

/// Recursive descent: every object/array with children, in pre-order.
fn collect_containers<'a>(v: &'a Value, out: &mut Vec<&'a Value>) {
    let children: Vec<&'a Value> = match v {
        Value::Object(m) => m.values().collect(),
        Value::Array(a) => a.iter().collect(),
        _ => return,
    };
    if children.is_empty() {
        return;
    }
    out.push(v);
    for c in children {
        collect_containers(c, out);
    }
}

fn apply_slice<'a>(
    a: &'a [Value],
    spec: &SliceSpec,
    out: &mut Vec<&'a Value>,
) -> Result<(), EvalError> {
    let len = a.len() as i64;
    let mut start = spec.start.unwrap_or(0);
    let (mut end, end_derived) = if spec.single {
        (start.saturating_add(1), true)
    } else {
        (spec.end.unwrap_or(len), false)
    };
    if start < 0 {
        start += len;
    }
    if end < 0 || (end == 0 && end_derived) {
        end += len;
    }
    if start == end {
        return Ok(());
    }
    if start < 0 || start >= len || end < 0 || end > len || start > end {
        return Err(EvalError);
    }
    let step = match spec.step {
        Some(s) if s <= 0 => return Err(EvalError),
        Some(s) => s as usize,
        None => 1,
    };
    out.extend(a[start as usize..end as usize].iter().step_by(step));
    Ok(())
}

fn filter_matches(f: &Filter, item: &Value) -> Result<bool, EvalError> {
    let lefts = eval_steps(&f.left, item);
    let (op, operand) = match &f.cmp {
        None => return Ok(lefts.is_ok_and(|l| !l.is_empty())),
        Some(c) => c,
    };
    let lefts = lefts?;
    let left = match lefts.len() {
        0 => return Ok(false),
        1 => lefts[0],
        _ => return Err(EvalError),
    };
    let right = match operand {
        Operand::Literal(v) => v,
        Operand::Path(p) => {
            let rights = eval_steps(p, item)?;
            match rights.len() {
                0 => return Ok(false),
                1 => rights[0],
                _ => return Err(EvalError),
            }
        }
    };
    compare(*op, left, right)
}

#[derive(PartialEq, PartialOrd)]
enum Basic<'a> {
    Bool(bool),
    Int(i128),
    Float(f64),
    Str(&'a str),
}

fn basic(v: &Value) -> Result<Basic<'_>, EvalError> {
    match v {
        Value::Bool(b) => Ok(Basic::Bool(*b)),
        Value::String(s) => Ok(Basic::Str(s)),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                Ok(Basic::Int(i as i128))
            } else if let Some(u) = n.as_u64() {
                Ok(Basic::Int(u as i128))
            } else {
                Ok(Basic::Float(n.as_f64().unwrap_or(0.0)))
            }
        }
        _ => Err(EvalError),
    }
}

/// Go text/template comparison semantics: operands must be of the same basic
/// kind (int vs float is an error), booleans only support (in)equality.
fn compare(op: Comparison, l: &Value, r: &Value) -> Result<bool, EvalError> {
    let (a, b) = (basic(l)?, basic(r)?);
    if std::mem::discriminant(&a) != std::mem::discriminant(&b) {
        return Err(EvalError);
    }
    let is_bool = matches!(a, Basic::Bool(_));
    Ok(match op {
        Comparison::Eq => a == b,
        Comparison::Ne => a != b,
        _ if is_bool => return Err(EvalError),
        Comparison::Lt => a < b,
        Comparison::Gt => a > b,
        Comparison::Le => a <= b,
        Comparison::Ge => a >= b,
        Comparison::Invalid => return Err(EvalError),
    })
}
