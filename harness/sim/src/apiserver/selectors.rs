//! Label and field selectors, parsed, validated and applied the way the
//! kube-apiserver does it.
//!
//! * [`LabelSelector::parse`] follows the apimachinery label-selector lexer
//!   and parser token by token (set-based `in`/`notin`, `!key`, `key`,
//!   `=`/`==`/`!=`, and the `>`/`<` integer comparisons), validates keys and
//!   values like the real parser does, and produces the same error strings
//!   (`unable to parse requirement: ...`, `found 'x', expected: ...`).
//! * [`LabelSelector::from_json`] is `metav1.LabelSelectorAsSelector`
//!   (`null` selects nothing, `{}` selects everything).
//! * [`FieldSelector::parse`] is `fields.ParseSelector` (comma separated
//!   terms, backslash escapes for `\`, `,` and `=` in values, terms sorted).
//! * [`FieldSelector::validate`] / [`FieldSelector::convert`] run the
//!   per-kind field label conversion functions the apiserver registers and
//!   report the same messages (`field label not supported: x`, or for kinds
//!   without a registered function
//!   `"x" is not a known field selector: only "metadata.name", "metadata.namespace"`).
//! * [`FieldSelector::matches`] evaluates against the object's selectable
//!   field set, built from the JSON object the way the registries build it
//!   (missing values are `""`, booleans render `true`/`false`, counts render
//!   as decimal integers).
//!
//! Only `serde_json` and `std` are used.

use serde_json::Value;
use std::fmt;

// ---------------------------------------------------------------------------
// Go-compatible formatting helpers
// ---------------------------------------------------------------------------

/// Go's `strconv.Quote` (what `%q` prints for a string).
fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if c != ' ' && (c.is_control() || c.is_whitespace()) => {
                if (c as u32) < 0x10000 {
                    out.push_str(&format!("\\u{:04x}", c as u32));
                } else {
                    out.push_str(&format!("\\U{:08x}", c as u32));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Go's `%#v` of a `[]string` (`[]string(nil)`, `[]string{}`, `[]string{"a", "b"}`).
fn go_string_slice(vals: &[String], is_nil: bool) -> String {
    if is_nil {
        return "[]string(nil)".to_string();
    }
    let inner: Vec<String> = vals.iter().map(|v| go_quote(v)).collect();
    format!("[]string{{{}}}", inner.join(", "))
}

/// `field.Invalid(path, value, detail).Error()` for a string bad value.
fn invalid_str(path: &str, value: &str, detail: &str) -> String {
    let mut s = format!("{}: Invalid value: {}", path, go_quote(value));
    if !detail.is_empty() {
        s.push_str(": ");
        s.push_str(detail);
    }
    s
}

/// `field.Invalid(path, []string{...}, detail).Error()`.
fn invalid_slice(path: &str, vals: &[String], is_nil: bool, detail: &str) -> String {
    let mut s = format!("{}: Invalid value: {}", path, go_string_slice(vals, is_nil));
    if !detail.is_empty() {
        s.push_str(": ");
        s.push_str(detail);
    }
    s
}

/// `field.ErrorList.ToAggregate().Error()`: duplicates dropped, one error
/// printed bare, several as `[a, b]`.
fn aggregate(errs: Vec<String>) -> Option<String> {
    let mut uniq: Vec<String> = Vec::new();
    for e in errs {
        if !uniq.contains(&e) {
            uniq.push(e);
        }
    }
    match uniq.len() {
        0 => None,
        1 => uniq.pop(),
        _ => Some(format!("[{}]", uniq.join(", "))),
    }
}

// ---------------------------------------------------------------------------
// Content validation (label keys / values), as in apimachinery
// ---------------------------------------------------------------------------

const LABEL_KEY_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_KEY_ERR_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_KEY_MAX_LENGTH: usize = 63;
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_ERR_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_MAX_LENGTH: usize = 63;
const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_SUBDOMAIN_ERR_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_MAX_LENGTH: usize = 253;

fn max_len_error(n: usize) -> String {
    format!("must be no more than {} bytes", n)
}

fn regex_error(msg: &str, re: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{} (regex used for validation is '{}')", msg, re);
    }
    let mut m = String::from(msg);
    m.push_str(" (e.g. ");
    for (i, e) in examples.iter().enumerate() {
        if i > 0 {
            m.push_str(" or ");
        }
        m.push('\'');
        m.push_str(e);
        m.push_str("', ");
    }
    m.push_str("regex used for validation is '");
    m.push_str(re);
    m.push_str("')");
    m
}

/// `^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`
fn matches_label_key_regex(s: &str) -> bool {
    let b = s.as_bytes();
    if b.is_empty() {
        return false;
    }
    let alnum = |c: u8| c.is_ascii_alphanumeric();
    let ext = |c: u8| c.is_ascii_alphanumeric() || c == b'-' || c == b'_' || c == b'.';
    alnum(b[0]) && alnum(b[b.len() - 1]) && b.iter().all(|&c| ext(c))
}

/// `^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
fn matches_dns1123_subdomain_regex(s: &str) -> bool {
    if s.is_empty() {
        return false;
    }
    s.split('.').all(|label| {
        let b = label.as_bytes();
        let lower_alnum = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
        !b.is_empty()
            && lower_alnum(b[0])
            && lower_alnum(b[b.len() - 1])
            && b.iter().all(|&c| lower_alnum(c) || c == b'-')
    })
}

fn is_dns1123_subdomain(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    if !matches_dns1123_subdomain_regex(value) {
        let re = format!("{0}(\\.{0})*", DNS1123_LABEL_FMT);
        errs.push(regex_error(
            DNS1123_SUBDOMAIN_ERR_MSG,
            &re,
            &["example.com"],
        ));
    }
    errs
}

/// `content.IsLabelKey` (a.k.a. `IsQualifiedName`).
fn is_label_key(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.len() {
        1 => parts[0],
        2 => {
            let prefix = parts[0];
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                for m in is_dns1123_subdomain(prefix) {
                    errs.push(format!("prefix part {}", m));
                }
            }
            parts[1]
        }
        _ => {
            errs.push(format!(
                "a valid label key {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(LABEL_KEY_ERR_MSG, LABEL_KEY_FMT, &["MyName", "my.name", "123-abc"])
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > LABEL_KEY_MAX_LENGTH {
        errs.push(format!("name part {}", max_len_error(LABEL_KEY_MAX_LENGTH)));
    }
    if !matches_label_key_regex(name) {
        errs.push(format!(
            "name part {}",
            regex_error(
                LABEL_KEY_ERR_MSG,
                LABEL_KEY_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errs
}

/// `IsValidLabelValue`.
fn is_label_value(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > LABEL_VALUE_MAX_LENGTH {
        errs.push(max_len_error(LABEL_VALUE_MAX_LENGTH));
    }
    if !(value.is_empty() || matches_label_key_regex(value)) {
        errs.push(regex_error(
            LABEL_VALUE_ERR_MSG,
            LABEL_VALUE_FMT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

/// `labels.validateLabelKey(k, path)`.
fn validate_label_key(key: &str, path: &str) -> Option<String> {
    let errs = is_label_key(key);
    if errs.is_empty() {
        None
    } else {
        Some(invalid_str(path, key, &errs.join("; ")))
    }
}

/// `labels.validateLabelValue(k, v, path)`; the path gets `[k]` appended.
fn validate_label_value(key: &str, value: &str, path: &str) -> Option<String> {
    let errs = is_label_value(value);
    if errs.is_empty() {
        None
    } else {
        Some(invalid_str(
            &format!("{}[{}]", path, key),
            value,
            &errs.join("; "),
        ))
    }
}

/// Go `strconv.ParseInt(s, 10, 64)` succeeds.
fn parse_go_int(s: &str) -> Option<i64> {
    s.parse::<i64>().ok()
}

// ---------------------------------------------------------------------------
// Label selectors
// ---------------------------------------------------------------------------

/// A label selector operator (`selection.Operator`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LabelOp {
    /// `in`
    In,
    /// `notin`
    NotIn,
    /// `=`
    Equals,
    /// `==`
    DoubleEquals,
    /// `!=`
    NotEquals,
    /// bare `key`
    Exists,
    /// `!key`
    DoesNotExist,
    /// `>` (`gt`): integer comparison
    GreaterThan,
    /// `<` (`lt`): integer comparison
    LessThan,
}

impl LabelOp {
    /// The operator's `selection.Operator` string.
    pub fn as_str(self) -> &'static str {
        match self {
            LabelOp::In => "in",
            LabelOp::NotIn => "notin",
            LabelOp::Equals => "=",
            LabelOp::DoubleEquals => "==",
            LabelOp::NotEquals => "!=",
            LabelOp::Exists => "exists",
            LabelOp::DoesNotExist => "!",
            LabelOp::GreaterThan => "gt",
            LabelOp::LessThan => "lt",
        }
    }
}

const BINARY_OPERATORS: &str = "in, notin, =, ==, !=, gt, lt";

/// One requirement of a label selector (`labels.Requirement`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabelRequirement {
    pub key: String,
    pub op: LabelOp,
    /// Values as given (the parser hands them over sorted and de-duplicated).
    pub values: Vec<String>,
}

impl LabelRequirement {
    /// `labels.NewRequirement`: validates and builds a requirement.
    /// `values_nil` only affects how an empty value list is printed in an
    /// error (`[]string(nil)` vs `[]string{}`), as Go does.
    fn new_checked(
        key: &str,
        op: LabelOp,
        values: Vec<String>,
        values_nil: bool,
    ) -> Result<Self, String> {
        let mut errs = Vec::new();
        if let Some(e) = validate_label_key(key, "key") {
            errs.push(e);
        }
        match op {
            LabelOp::In | LabelOp::NotIn => {
                if values.is_empty() {
                    errs.push(invalid_slice(
                        "values",
                        &values,
                        values_nil,
                        "for 'in', 'notin' operators, values set can't be empty",
                    ));
                }
            }
            LabelOp::Equals | LabelOp::DoubleEquals | LabelOp::NotEquals => {
                if values.len() != 1 {
                    errs.push(invalid_slice(
                        "values",
                        &values,
                        values_nil,
                        "exact-match compatibility requires one single value",
                    ));
                }
            }
            LabelOp::Exists | LabelOp::DoesNotExist => {
                if !values.is_empty() {
                    errs.push(invalid_slice(
                        "values",
                        &values,
                        values_nil,
                        "values set must be empty for exists and does not exist",
                    ));
                }
            }
            LabelOp::GreaterThan | LabelOp::LessThan => {
                if values.len() != 1 {
                    errs.push(invalid_slice(
                        "values",
                        &values,
                        values_nil,
                        "for 'Gt', 'Lt' operators, exactly one value is required",
                    ));
                }
                for (i, v) in values.iter().enumerate() {
                    if parse_go_int(v).is_none() {
                        errs.push(invalid_str(
                            &format!("values[{}]", i),
                            v,
                            "for 'Gt', 'Lt' operators, the value must be an integer",
                        ));
                    }
                }
            }
        }
        for (i, v) in values.iter().enumerate() {
            if let Some(e) = validate_label_value(key, v, &format!("values[{}]", i)) {
                errs.push(e);
            }
        }
        match aggregate(errs) {
            Some(e) => Err(e),
            None => Ok(LabelRequirement {
                key: key.to_string(),
                op,
                values,
            }),
        }
    }

    fn has_value(&self, v: &str) -> bool {
        self.values.iter().any(|x| x == v)
    }

    /// `Requirement.Matches` against a label lookup.
    fn matches_lookup(&self, lookup: &dyn Fn(&str) -> Option<String>) -> bool {
        match self.op {
            LabelOp::In | LabelOp::Equals | LabelOp::DoubleEquals => match lookup(&self.key) {
                Some(v) => self.has_value(&v),
                None => false,
            },
            LabelOp::NotIn | LabelOp::NotEquals => match lookup(&self.key) {
                Some(v) => !self.has_value(&v),
                None => true,
            },
            LabelOp::Exists => lookup(&self.key).is_some(),
            LabelOp::DoesNotExist => lookup(&self.key).is_none(),
            LabelOp::GreaterThan | LabelOp::LessThan => {
                let v = match lookup(&self.key) {
                    Some(v) => v,
                    None => return false,
                };
                let lv = match parse_go_int(&v) {
                    Some(n) => n,
                    None => return false,
                };
                if self.values.len() != 1 {
                    return false;
                }
                let rv = match parse_go_int(&self.values[0]) {
                    Some(n) => n,
                    None => return false,
                };
                (self.op == LabelOp::GreaterThan && lv > rv)
                    || (self.op == LabelOp::LessThan && lv < rv)
            }
        }
    }
}

impl fmt::Display for LabelRequirement {
    /// `Requirement.String()`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.op == LabelOp::DoesNotExist {
            f.write_str("!")?;
        }
        f.write_str(&self.key)?;
        match self.op {
            LabelOp::Equals => f.write_str("=")?,
            LabelOp::DoubleEquals => f.write_str("==")?,
            LabelOp::NotEquals => f.write_str("!=")?,
            LabelOp::In => f.write_str(" in ")?,
            LabelOp::NotIn => f.write_str(" notin ")?,
            LabelOp::GreaterThan => f.write_str(">")?,
            LabelOp::LessThan => f.write_str("<")?,
            LabelOp::Exists | LabelOp::DoesNotExist => return Ok(()),
        }
        let set = matches!(self.op, LabelOp::In | LabelOp::NotIn);
        if set {
            f.write_str("(")?;
        }
        if self.values.len() == 1 {
            f.write_str(&self.values[0])?;
        } else {
            let mut v = self.values.clone();
            v.sort();
            f.write_str(&v.join(","))?;
        }
        if set {
            f.write_str(")")?;
        }
        Ok(())
    }
}

/// A parsed label selector: the AND of its requirements.
#[derive(Debug, Clone, PartialEq)]
pub struct LabelSelector {
    requirements: Vec<LabelRequirement>,
    /// `labels.Nothing()`: matches no object (a `null` metav1.LabelSelector).
    nothing: bool,
}

impl Default for LabelSelector {
    fn default() -> Self {
        LabelSelector::everything()
    }
}

// ----- lexer -----

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token {
    Error,
    EndOfString,
    ClosedPar,
    Comma,
    DoesNotExist,
    DoubleEquals,
    Equals,
    GreaterThan,
    Identifier,
    In,
    LessThan,
    NotEquals,
    NotIn,
    OpenPar,
}

fn string2token(s: &[u8]) -> Option<Token> {
    Some(match s {
        b")" => Token::ClosedPar,
        b"," => Token::Comma,
        b"!" => Token::DoesNotExist,
        b"==" => Token::DoubleEquals,
        b"=" => Token::Equals,
        b">" => Token::GreaterThan,
        b"in" => Token::In,
        b"<" => Token::LessThan,
        b"!=" => Token::NotEquals,
        b"notin" => Token::NotIn,
        b"(" => Token::OpenPar,
        _ => return None,
    })
}

fn is_whitespace(c: u8) -> bool {
    c == b' ' || c == b'\t' || c == b'\r' || c == b'\n'
}

fn is_special_symbol(c: u8) -> bool {
    matches!(c, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

struct Lexer<'a> {
    s: &'a [u8],
    pos: usize,
}

impl<'a> Lexer<'a> {
    /// Like Go: returns 0 at the end (and for a NUL byte, which Go's lexer
    /// also treats as the end of the input).
    fn read(&mut self) -> u8 {
        if self.pos < self.s.len() {
            let b = self.s[self.pos];
            self.pos += 1;
            b
        } else {
            0
        }
    }

    fn unread(&mut self) {
        self.pos = self.pos.saturating_sub(1);
    }

    fn scan_id_or_keyword(&mut self) -> (Token, String) {
        let mut buf: Vec<u8> = Vec::new();
        loop {
            let ch = self.read();
            if ch == 0 {
                break;
            } else if is_special_symbol(ch) || is_whitespace(ch) {
                self.unread();
                break;
            } else {
                buf.push(ch);
            }
        }
        let s = String::from_utf8_lossy(&buf).into_owned();
        match string2token(&buf) {
            Some(t) => (t, s),
            None => (Token::Identifier, s),
        }
    }

    fn scan_special_symbol(&mut self) -> (Token, String) {
        let mut last: Option<(Token, String)> = None;
        let mut buf: Vec<u8> = Vec::new();
        loop {
            let ch = self.read();
            if ch == 0 {
                break;
            } else if is_special_symbol(ch) {
                buf.push(ch);
                if let Some(t) = string2token(&buf) {
                    last = Some((t, String::from_utf8_lossy(&buf).into_owned()));
                } else if last.is_some() {
                    self.unread();
                    break;
                }
            } else {
                self.unread();
                break;
            }
        }
        match last {
            Some(l) => l,
            None => (
                Token::Error,
                format!(
                    "error expected: keyword found '{}'",
                    String::from_utf8_lossy(&buf)
                ),
            ),
        }
    }

    fn skip_white_spaces(&mut self, mut ch: u8) -> u8 {
        while is_whitespace(ch) {
            ch = self.read();
        }
        ch
    }

    fn lex(&mut self) -> (Token, String) {
        let first = self.read();
        let ch = self.skip_white_spaces(first);
        if ch == 0 {
            (Token::EndOfString, String::new())
        } else if is_special_symbol(ch) {
            self.unread();
            self.scan_special_symbol()
        } else {
            self.unread();
            self.scan_id_or_keyword()
        }
    }
}

// ----- parser -----

#[derive(Clone, Copy, PartialEq, Eq)]
enum LexContext {
    KeyAndOperator,
    Values,
}

struct Parser {
    items: Vec<(Token, String)>,
    position: usize,
}

impl Parser {
    fn item(&self, i: usize) -> (Token, String) {
        // The token list always ends with EndOfString; never index past it.
        match self.items.get(i).or_else(|| self.items.last()) {
            Some(x) => x.clone(),
            None => (Token::EndOfString, String::new()),
        }
    }

    fn adjust(tok: Token, ctx: LexContext) -> Token {
        if ctx == LexContext::Values && (tok == Token::In || tok == Token::NotIn) {
            Token::Identifier
        } else {
            tok
        }
    }

    fn lookahead(&self, ctx: LexContext) -> (Token, String) {
        let (t, l) = self.item(self.position);
        (Self::adjust(t, ctx), l)
    }

    fn consume(&mut self, ctx: LexContext) -> (Token, String) {
        let (t, l) = self.item(self.position);
        if self.position < self.items.len() {
            self.position += 1;
        }
        (Self::adjust(t, ctx), l)
    }

    fn parse(&mut self) -> Result<Vec<LabelRequirement>, String> {
        let mut reqs = Vec::new();
        loop {
            let (tok, lit) = self.lookahead(LexContext::Values);
            match tok {
                Token::Identifier | Token::DoesNotExist => {
                    let r = self
                        .parse_requirement()
                        .map_err(|e| format!("unable to parse requirement: {}", e))?;
                    reqs.push(r);
                    let (t, l) = self.consume(LexContext::Values);
                    match t {
                        Token::EndOfString => return Ok(reqs),
                        Token::Comma => {
                            let (t2, l2) = self.lookahead(LexContext::Values);
                            if t2 != Token::Identifier && t2 != Token::DoesNotExist {
                                return Err(format!(
                                    "found '{}', expected: identifier after ','",
                                    l2
                                ));
                            }
                        }
                        _ => {
                            return Err(format!("found '{}', expected: ',' or 'end of string'", l))
                        }
                    }
                }
                Token::EndOfString => return Ok(reqs),
                _ => {
                    return Err(format!(
                        "found '{}', expected: !, identifier, or 'end of string'",
                        lit
                    ))
                }
            }
        }
    }

    fn parse_requirement(&mut self) -> Result<LabelRequirement, String> {
        let (key, op) = self.parse_key_and_infer_operator()?;
        if let Some(op) = op {
            return LabelRequirement::new_checked(&key, op, Vec::new(), false);
        }
        let op = self.parse_operator()?;
        let values = match op {
            LabelOp::In | LabelOp::NotIn => self.parse_values()?,
            _ => self.parse_exact_value()?,
        };
        LabelRequirement::new_checked(&key, op, values, false)
    }

    /// Returns the key and, when no binary operator follows, `Exists` or
    /// `DoesNotExist`.
    fn parse_key_and_infer_operator(&mut self) -> Result<(String, Option<LabelOp>), String> {
        let mut op = None;
        let (mut tok, mut lit) = self.consume(LexContext::Values);
        if tok == Token::DoesNotExist {
            op = Some(LabelOp::DoesNotExist);
            let next = self.consume(LexContext::Values);
            tok = next.0;
            lit = next.1;
        }
        if tok != Token::Identifier {
            return Err(format!("found '{}', expected: identifier", lit));
        }
        // The real parser validates the key here with a nil field path.
        if let Some(e) = validate_label_key(&lit, "<nil>") {
            return Err(e);
        }
        let (t, _) = self.lookahead(LexContext::Values);
        if (t == Token::EndOfString || t == Token::Comma) && op.is_none() {
            op = Some(LabelOp::Exists);
        }
        Ok((lit, op))
    }

    fn parse_operator(&mut self) -> Result<LabelOp, String> {
        let (tok, lit) = self.consume(LexContext::KeyAndOperator);
        Ok(match tok {
            Token::In => LabelOp::In,
            Token::Equals => LabelOp::Equals,
            Token::DoubleEquals => LabelOp::DoubleEquals,
            Token::GreaterThan => LabelOp::GreaterThan,
            Token::LessThan => LabelOp::LessThan,
            Token::NotIn => LabelOp::NotIn,
            Token::NotEquals => LabelOp::NotEquals,
            _ => return Err(format!("found '{}', expected: {}", lit, BINARY_OPERATORS)),
        })
    }

    fn parse_values(&mut self) -> Result<Vec<String>, String> {
        let (tok, lit) = self.consume(LexContext::Values);
        if tok != Token::OpenPar {
            return Err(format!("found '{}' expected: '('", lit));
        }
        let (tok, lit) = self.lookahead(LexContext::Values);
        match tok {
            Token::Identifier | Token::Comma => {
                let s = self.parse_identifiers_list()?;
                let (t, _) = self.consume(LexContext::Values);
                if t != Token::ClosedPar {
                    // Go reports the literal seen after '(' here.
                    return Err(format!("found '{}', expected: ')'", lit));
                }
                Ok(s)
            }
            Token::ClosedPar => {
                self.consume(LexContext::Values);
                Ok(vec![String::new()])
            }
            _ => Err(format!("found '{}', expected: ',', ')' or identifier", lit)),
        }
    }

    fn parse_identifiers_list(&mut self) -> Result<Vec<String>, String> {
        // A sorted set, like sets.String.
        let mut s: Vec<String> = Vec::new();
        fn insert(s: &mut Vec<String>, v: String) {
            if let Err(i) = s.binary_search(&v) {
                s.insert(i, v);
            }
        }
        loop {
            let (tok, lit) = self.consume(LexContext::Values);
            match tok {
                Token::Identifier => {
                    insert(&mut s, lit);
                    let (t2, l2) = self.lookahead(LexContext::Values);
                    match t2 {
                        Token::Comma => continue,
                        Token::ClosedPar => return Ok(s),
                        _ => return Err(format!("found '{}', expected: ',' or ')'", l2)),
                    }
                }
                Token::Comma => {
                    if s.is_empty() {
                        insert(&mut s, String::new());
                    }
                    let (t2, _) = self.lookahead(LexContext::Values);
                    if t2 == Token::ClosedPar {
                        insert(&mut s, String::new());
                        return Ok(s);
                    }
                    if t2 == Token::Comma {
                        self.consume(LexContext::Values);
                        insert(&mut s, String::new());
                    }
                }
                _ => return Err(format!("found '{}', expected: ',', or identifier", lit)),
            }
        }
    }

    fn parse_exact_value(&mut self) -> Result<Vec<String>, String> {
        let (tok, _) = self.lookahead(LexContext::Values);
        if tok == Token::EndOfString || tok == Token::Comma {
            return Ok(vec![String::new()]);
        }
        let (tok, lit) = self.consume(LexContext::Values);
        if tok == Token::Identifier {
            Ok(vec![lit])
        } else {
            Err(format!("found '{}', expected: identifier", lit))
        }
    }
}

/// Reads a label value out of a JSON labels map (`null` counts as `""`,
/// which is what decoding into `map[string]string` yields).
fn json_label_value(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        other => other.to_string(),
    }
}

impl LabelSelector {
    /// Parse the `labelSelector` query value exactly as `labels.Parse` does.
    ///
    /// Supports `a=b`, `a==b`, `a!=b`, `a in (x,y)`, `a notin (x)`, `a`,
    /// `!a`, `a>1`, `a<1`, comma separated and whitespace tolerant.
    /// Requirements are sorted by key, as the real parser sorts them.
    pub fn parse(s: &str) -> Result<LabelSelector, String> {
        let mut lexer = Lexer {
            s: s.as_bytes(),
            pos: 0,
        };
        let mut items = Vec::new();
        loop {
            let (t, l) = lexer.lex();
            items.push((t, l));
            if t == Token::EndOfString {
                break;
            }
        }
        let mut parser = Parser { items, position: 0 };
        let mut reqs = parser.parse()?;
        reqs.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(LabelSelector {
            requirements: reqs,
            nothing: false,
        })
    }

    /// `labels.Everything()`: matches every object.
    pub fn everything() -> LabelSelector {
        LabelSelector {
            requirements: Vec::new(),
            nothing: false,
        }
    }

    /// `labels.Nothing()`: matches no object.
    pub fn nothing() -> LabelSelector {
        LabelSelector {
            requirements: Vec::new(),
            nothing: true,
        }
    }

    /// True when the selector does not restrict anything (`Selector.Empty()`;
    /// false for [`LabelSelector::nothing`]).
    pub fn is_empty(&self) -> bool {
        !self.nothing && self.requirements.is_empty()
    }

    /// True for the selector that matches nothing (a `null` metav1 selector).
    pub fn matches_nothing(&self) -> bool {
        self.nothing
    }

    /// The requirements, sorted by key.
    pub fn requirements(&self) -> &[LabelRequirement] {
        &self.requirements
    }

    /// If the selector pins `label` to one value (`=`, `==`, or `in` with one
    /// value), that value (`RequiresExactMatch`).
    pub fn requires_exact_match(&self, label: &str) -> Option<&str> {
        for r in &self.requirements {
            if r.key == label {
                return match r.op {
                    LabelOp::Equals | LabelOp::DoubleEquals | LabelOp::In
                        if r.values.len() == 1 =>
                    {
                        Some(r.values[0].as_str())
                    }
                    _ => None,
                };
            }
        }
        None
    }

    /// Match an object's `metadata.labels` (a JSON object, or absent / `null`
    /// for an object without labels).
    pub fn matches(&self, labels: Option<&Value>) -> bool {
        if self.nothing {
            return false;
        }
        let map = labels.and_then(|v| v.as_object());
        let lookup =
            |k: &str| -> Option<String> { map.and_then(|m| m.get(k)).map(json_label_value) };
        self.requirements.iter().all(|r| r.matches_lookup(&lookup))
    }

    /// Match a whole object by its `metadata.labels`.
    pub fn matches_object(&self, obj: &Value) -> bool {
        self.matches(obj.get("metadata").and_then(|m| m.get("labels")))
    }

    /// Match a plain label map given as pairs.
    pub fn matches_pairs<'a, I>(&self, labels: I) -> bool
    where
        I: IntoIterator<Item = (&'a str, &'a str)> + Clone,
    {
        if self.nothing {
            return false;
        }
        let lookup = |k: &str| -> Option<String> {
            labels
                .clone()
                .into_iter()
                .find(|(lk, _)| *lk == k)
                .map(|(_, v)| v.to_string())
        };
        self.requirements.iter().all(|r| r.matches_lookup(&lookup))
    }

    /// Build from a `metav1.LabelSelector` JSON value
    /// (`{matchLabels, matchExpressions: [{key, operator, values}]}`), as
    /// `metav1.LabelSelectorAsSelector` does: `null` selects nothing, an
    /// empty selector selects everything, requirements are validated.
    pub fn from_json(sel: &Value) -> Result<LabelSelector, String> {
        let m = match sel {
            Value::Null => return Ok(LabelSelector::nothing()),
            Value::Object(m) => m,
            other => {
                return Err(format!(
                    "json: cannot unmarshal {} into Go value of type v1.LabelSelector",
                    json_type_name(other)
                ))
            }
        };
        let mut reqs = Vec::new();
        match m.get("matchLabels") {
            None | Some(Value::Null) => {}
            Some(Value::Object(ml)) => {
                let mut keys: Vec<&String> = ml.keys().collect();
                keys.sort();
                for k in keys {
                    let v = match &ml[k.as_str()] {
                        Value::String(s) => s.clone(),
                        Value::Null => String::new(),
                        other => {
                            return Err(format!(
                                "json: cannot unmarshal {} into Go struct field LabelSelector.matchLabels of type string",
                                json_type_name(other)
                            ))
                        }
                    };
                    reqs.push(LabelRequirement::new_checked(k, LabelOp::Equals, vec![v], false)?);
                }
            }
            Some(other) => {
                return Err(format!(
                    "json: cannot unmarshal {} into Go struct field LabelSelector.matchLabels of type map[string]string",
                    json_type_name(other)
                ))
            }
        }
        match m.get("matchExpressions") {
            None | Some(Value::Null) => {}
            Some(Value::Array(exprs)) => {
                for e in exprs {
                    let eo = match e {
                        Value::Object(o) => o,
                        Value::Null => {
                            // A null element decodes to a zero requirement.
                            return Err(format!("{} is not a valid label selector operator", go_quote("")));
                        }
                        other => {
                            return Err(format!(
                                "json: cannot unmarshal {} into Go struct field LabelSelector.matchExpressions of type v1.LabelSelectorRequirement",
                                json_type_name(other)
                            ))
                        }
                    };
                    let key = match eo.get("key") {
                        Some(Value::String(s)) => s.clone(),
                        None | Some(Value::Null) => String::new(),
                        Some(other) => {
                            return Err(format!(
                                "json: cannot unmarshal {} into Go struct field LabelSelectorRequirement.matchExpressions.key of type string",
                                json_type_name(other)
                            ))
                        }
                    };
                    let op_str = match eo.get("operator") {
                        Some(Value::String(s)) => s.clone(),
                        None | Some(Value::Null) => String::new(),
                        Some(other) => {
                            return Err(format!(
                                "json: cannot unmarshal {} into Go struct field LabelSelectorRequirement.matchExpressions.operator of type v1.LabelSelectorOperator",
                                json_type_name(other)
                            ))
                        }
                    };
                    let mut values = Vec::new();
                    match eo.get("values") {
                        None | Some(Value::Null) => {}
                        Some(Value::Array(vs)) => {
                            for v in vs {
                                match v {
                                    Value::String(s) => values.push(s.clone()),
                                    Value::Null => values.push(String::new()),
                                    other => {
                                        return Err(format!(
                                            "json: cannot unmarshal {} into Go struct field LabelSelectorRequirement.matchExpressions.values of type string",
                                            json_type_name(other)
                                        ))
                                    }
                                }
                            }
                        }
                        Some(other) => {
                            return Err(format!(
                                "json: cannot unmarshal {} into Go struct field LabelSelectorRequirement.matchExpressions.values of type []string",
                                json_type_name(other)
                            ))
                        }
                    }
                    let op = match op_str.as_str() {
                        "In" => LabelOp::In,
                        "NotIn" => LabelOp::NotIn,
                        "Exists" => LabelOp::Exists,
                        "DoesNotExist" => LabelOp::DoesNotExist,
                        _ => return Err(format!("{} is not a valid label selector operator", go_quote(&op_str))),
                    };
                    // `append([]string(nil), expr.Values...)` is nil when empty.
                    let is_nil = values.is_empty();
                    reqs.push(LabelRequirement::new_checked(&key, op, values, is_nil)?);
                }
            }
            Some(other) => {
                return Err(format!(
                    "json: cannot unmarshal {} into Go struct field LabelSelector.matchExpressions of type []v1.LabelSelectorRequirement",
                    json_type_name(other)
                ))
            }
        }
        if reqs.is_empty() {
            return Ok(LabelSelector::everything());
        }
        reqs.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(LabelSelector {
            requirements: reqs,
            nothing: false,
        })
    }

    /// Build from a plain `map[string]string` selector (Service
    /// `spec.selector`, ReplicationController `spec.selector`) without
    /// validation, like `labels.SelectorFromSet`. `null`, absent or an empty
    /// map selects everything.
    pub fn from_set(set: Option<&Value>) -> LabelSelector {
        let mut reqs = Vec::new();
        if let Some(Value::Object(m)) = set {
            for (k, v) in m {
                reqs.push(LabelRequirement {
                    key: k.clone(),
                    op: LabelOp::Equals,
                    values: vec![json_label_value(v)],
                });
            }
        }
        reqs.sort_by(|a, b| a.key.cmp(&b.key));
        LabelSelector {
            requirements: reqs,
            nothing: false,
        }
    }
}

impl fmt::Display for LabelSelector {
    /// `Selector.String()`: requirements joined with `,` (empty for
    /// everything and for nothing).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{}", r)?;
        }
        Ok(())
    }
}

fn json_type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

// ---------------------------------------------------------------------------
// Field selectors
// ---------------------------------------------------------------------------

/// A field selector operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FieldOp {
    /// `=`
    Equals,
    /// `==`
    DoubleEquals,
    /// `!=`
    NotEquals,
}

/// One `field<op>value` term of a field selector. `value` is unescaped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldRequirement {
    pub field: String,
    pub op: FieldOp,
    pub value: String,
}

/// A parsed field selector: the AND of its terms (sorted as the real parser
/// sorts the raw terms).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FieldSelector {
    requirements: Vec<FieldRequirement>,
}

/// `fields.EscapeValue`.
pub fn escape_field_value(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            ',' => out.push_str("\\,"),
            '=' => out.push_str("\\="),
            c => out.push(c),
        }
    }
    out
}

/// `fields.UnescapeValue`.
fn unescape_field_value(s: &str) -> Result<String, String> {
    if !s.contains(['\\', ',', '=']) {
        return Ok(s.to_string());
    }
    let mut out = String::with_capacity(s.len());
    let mut in_slash = false;
    for c in s.chars() {
        if in_slash {
            match c {
                '\\' | ',' | '=' => out.push(c),
                _ => {
                    return Err(format!(
                        "invalid field selector: invalid escape sequence: \\{}",
                        c
                    ))
                }
            }
            in_slash = false;
            continue;
        }
        match c {
            '\\' => in_slash = true,
            // Go prints the rune with %v, i.e. as its code point number.
            ',' | '=' => {
                return Err(format!(
                    "invalid field selector: unescaped character in value: {}",
                    c as u32
                ))
            }
            c => out.push(c),
        }
    }
    if in_slash {
        return Err("invalid field selector: invalid escape sequence: \\".to_string());
    }
    Ok(out)
}

/// `fields.splitTerms`: split on commas not preceded by a backslash escape.
fn split_terms(s: &str) -> Vec<&str> {
    if s.is_empty() {
        return Vec::new();
    }
    let mut terms = Vec::new();
    let mut start = 0;
    let mut in_slash = false;
    for (i, c) in s.char_indices() {
        if in_slash {
            in_slash = false;
        } else if c == '\\' {
            in_slash = true;
        } else if c == ',' {
            terms.push(&s[start..i]);
            start = i + 1;
        }
    }
    terms.push(&s[start..]);
    terms
}

/// `fields.splitTerm`: the first `!=`, `==` or `=` is the operator.
fn split_term(term: &str) -> Option<(&str, FieldOp, &str)> {
    for (i, _) in term.char_indices() {
        let rest = &term[i..];
        if rest.starts_with("!=") {
            return Some((&term[..i], FieldOp::NotEquals, &term[i + 2..]));
        }
        if rest.starts_with("==") {
            return Some((&term[..i], FieldOp::DoubleEquals, &term[i + 2..]));
        }
        if rest.starts_with('=') {
            return Some((&term[..i], FieldOp::Equals, &term[i + 1..]));
        }
    }
    None
}

/// API groups served by the kube-apiserver itself. Kinds in any other group
/// are treated as custom resources (CRD semantics) by
/// [`FieldSelector::validate`].
const BUILTIN_GROUPS: &[&str] = &[
    "",
    "admissionregistration.k8s.io",
    "apiextensions.k8s.io",
    "apiregistration.k8s.io",
    "apps",
    "authentication.k8s.io",
    "authorization.k8s.io",
    "autoscaling",
    "batch",
    "certificates.k8s.io",
    "coordination.k8s.io",
    "discovery.k8s.io",
    "events.k8s.io",
    "extensions",
    "flowcontrol.apiserver.k8s.io",
    "internal.apiserver.k8s.io",
    "networking.k8s.io",
    "node.k8s.io",
    "policy",
    "rbac.authorization.k8s.io",
    "resource.k8s.io",
    "scheduling.k8s.io",
    "storage.k8s.io",
    "storagemigration.k8s.io",
];

/// True if `group` is one of the groups the kube-apiserver serves natively
/// (so its kinds use the built-in field label conversion rules).
pub fn is_builtin_group(group: &str) -> bool {
    BUILTIN_GROUPS.contains(&group)
}

/// Outcome of a field label conversion function.
fn convert_field_label(
    group: &str,
    kind: &str,
    namespaced: bool,
    extra_fields: &[String],
    label: &str,
) -> Result<String, String> {
    let not_supported = || Err(format!("field label not supported: {}", label));
    let ok = || Ok(label.to_string());
    match (group, kind) {
        ("", "Pod") => match label {
            "metadata.name"
            | "metadata.namespace"
            | "spec.nodeName"
            | "spec.restartPolicy"
            | "spec.schedulerName"
            | "spec.serviceAccountName"
            | "spec.hostNetwork"
            | "status.phase"
            | "status.podIP"
            | "status.podIPs"
            | "status.nominatedNodeName" => ok(),
            // Backwards compatibility with old v1 clients.
            "spec.host" => Ok("spec.nodeName".to_string()),
            _ => not_supported(),
        },
        ("", "Node") => match label {
            "metadata.name" | "spec.unschedulable" => ok(),
            _ => not_supported(),
        },
        ("", "ReplicationController") => match label {
            "metadata.name" | "metadata.namespace" | "status.replicas" => ok(),
            _ => not_supported(),
        },
        ("", "Event") => match label {
            "involvedObject.kind"
            | "involvedObject.namespace"
            | "involvedObject.name"
            | "involvedObject.uid"
            | "involvedObject.apiVersion"
            | "involvedObject.resourceVersion"
            | "involvedObject.fieldPath"
            | "reason"
            | "reportingComponent"
            | "source"
            | "type"
            | "metadata.namespace"
            | "metadata.name" => ok(),
            _ => not_supported(),
        },
        ("", "Namespace") => match label {
            "status.phase" | "metadata.name" => ok(),
            _ => not_supported(),
        },
        ("", "Secret") => match label {
            "type" | "metadata.namespace" | "metadata.name" => ok(),
            _ => not_supported(),
        },
        ("", "Service") => match label {
            "metadata.namespace" | "metadata.name" | "spec.clusterIP" | "spec.type" => ok(),
            _ => not_supported(),
        },
        ("events.k8s.io", "Event") => {
            let mapped = match label {
                "reason" => "reason",
                "regarding.kind" => "involvedObject.kind",
                "regarding.namespace" => "involvedObject.namespace",
                "regarding.name" => "involvedObject.name",
                "regarding.uid" => "involvedObject.uid",
                "regarding.apiVersion" => "involvedObject.apiVersion",
                "regarding.resourceVersion" => "involvedObject.resourceVersion",
                "regarding.fieldPath" => "involvedObject.fieldPath",
                "reportingController" => "reportingComponent",
                "source" => "source",
                "type" => "type",
                "metadata.namespace" => "metadata.namespace",
                "metadata.name" => "metadata.name",
                _ => return not_supported(),
            };
            Ok(mapped.to_string())
        }
        ("batch", "Job") => match label {
            "metadata.name" | "metadata.namespace" | "status.successful" => ok(),
            _ => Err(format!(
                "field label {} not supported for Job",
                go_quote(label)
            )),
        },
        ("certificates.k8s.io", "CertificateSigningRequest")
        | ("certificates.k8s.io", "ClusterTrustBundle") => match label {
            "metadata.name" | "spec.signerName" => ok(),
            _ => not_supported(),
        },
        ("certificates.k8s.io", "PodCertificateRequest") => match label {
            "metadata.name" | "spec.signerName" | "spec.podName" | "spec.nodeName" => ok(),
            _ => not_supported(),
        },
        ("resource.k8s.io", "ResourceSlice") => match label {
            "metadata.name" | "spec.nodeName" | "spec.driver" => ok(),
            _ => Err(format!(
                "field label not supported for resource.k8s.io/v1, Kind=ResourceSlice: {}",
                label
            )),
        },
        _ if is_builtin_group(group) => match label {
            // runtime.DefaultMetaV1FieldSelectorConversion: namespace is
            // accepted even for cluster-scoped kinds (it then matches only "").
            "metadata.name" | "metadata.namespace" => ok(),
            _ => Err(format!(
                "{} is not a known field selector: only {}, {}",
                go_quote(label),
                go_quote("metadata.name"),
                go_quote("metadata.namespace")
            )),
        },
        _ => {
            // Custom resources (apiextensions crConverter).
            if label == "metadata.name" || (namespaced && label == "metadata.namespace") {
                return ok();
            }
            if extra_fields
                .iter()
                .any(|f| f.trim_start_matches('.') == label)
            {
                return ok();
            }
            not_supported()
        }
    }
}

/// Renaming-only version of the conversion (used while matching, where the
/// selector has already been validated).
fn canonical_field_label(group: &str, kind: &str, label: &str) -> String {
    match (group, kind, label) {
        ("", "Pod", "spec.host") => "spec.nodeName".to_string(),
        ("events.k8s.io", "Event", _) => match convert_field_label(group, kind, true, &[], label) {
            Ok(l) => l,
            Err(_) => label.to_string(),
        },
        _ => label.to_string(),
    }
}

fn at<'a>(obj: &'a Value, path: &[&str]) -> Option<&'a Value> {
    let mut cur = obj;
    for p in path {
        cur = cur.as_object()?.get(*p)?;
    }
    Some(cur)
}

fn str_at(obj: &Value, path: &[&str]) -> String {
    match at(obj, path) {
        Some(Value::String(s)) => s.clone(),
        _ => String::new(),
    }
}

fn bool_at(obj: &Value, path: &[&str]) -> String {
    match at(obj, path) {
        Some(Value::Bool(true)) => "true".to_string(),
        _ => "false".to_string(),
    }
}

fn int_at(obj: &Value, path: &[&str]) -> String {
    match at(obj, path).and_then(|v| v.as_i64()) {
        Some(n) => n.to_string(),
        None => "0".to_string(),
    }
}

/// Render a custom resource selectable field (string, boolean or integer;
/// an absent field is `""`).
fn json_path_value(obj: &Value, path: &str) -> String {
    let path = path.trim_start_matches('.');
    let parts: Vec<&str> = path.split('.').collect();
    match at(obj, &parts) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Bool(b)) => b.to_string(),
        Some(Value::Number(n)) => n.to_string(),
        _ => String::new(),
    }
}

/// The value of an Event's selectable field, read from either the core v1
/// or the events.k8s.io/v1 representation.
fn event_field(obj: &Value, label: &str) -> String {
    let first_nonempty = |paths: &[&[&str]]| -> String {
        for p in paths {
            let v = str_at(obj, p);
            if !v.is_empty() {
                return v;
            }
        }
        String::new()
    };
    if let Some(sub) = label.strip_prefix("involvedObject.") {
        return first_nonempty(&[&["involvedObject", sub], &["regarding", sub]]);
    }
    match label {
        "reason" => str_at(obj, &["reason"]),
        "type" => str_at(obj, &["type"]),
        "reportingComponent" => {
            first_nonempty(&[&["reportingComponent"], &["reportingController"]])
        }
        "source" => first_nonempty(&[
            &["source", "component"],
            &["deprecatedSource", "component"],
            &["reportingComponent"],
            &["reportingController"],
        ]),
        "metadata.name" => str_at(obj, &["metadata", "name"]),
        "metadata.namespace" => str_at(obj, &["metadata", "namespace"]),
        _ => String::new(),
    }
}

/// The value of `label` (already converted) in the object's selectable
/// field set; `""` when the set has no such field (as `fields.Set.Get`).
fn field_value(group: &str, kind: &str, obj: &Value, label: &str) -> String {
    match label {
        "metadata.name" => return str_at(obj, &["metadata", "name"]),
        "metadata.namespace" => return str_at(obj, &["metadata", "namespace"]),
        _ => {}
    }
    match (group, kind) {
        ("", "Pod") => match label {
            "spec.nodeName" => str_at(obj, &["spec", "nodeName"]),
            "spec.restartPolicy" => str_at(obj, &["spec", "restartPolicy"]),
            "spec.schedulerName" => str_at(obj, &["spec", "schedulerName"]),
            "spec.serviceAccountName" => str_at(obj, &["spec", "serviceAccountName"]),
            "spec.hostNetwork" => bool_at(obj, &["spec", "hostNetwork"]),
            "status.phase" => str_at(obj, &["status", "phase"]),
            "status.podIP" => {
                // v1 -> internal: a non-empty status.podIP is authoritative,
                // otherwise the first of status.podIPs.
                let ip = str_at(obj, &["status", "podIP"]);
                if !ip.is_empty() {
                    ip
                } else {
                    match at(obj, &["status", "podIPs"]).and_then(|v| v.as_array()) {
                        Some(a) if !a.is_empty() => str_at(&a[0], &["ip"]),
                        _ => String::new(),
                    }
                }
            }
            "status.nominatedNodeName" => str_at(obj, &["status", "nominatedNodeName"]),
            // status.podIPs is accepted by the conversion but not in the
            // pod's field set, so it always reads as "".
            _ => String::new(),
        },
        ("", "Node") => match label {
            "spec.unschedulable" => bool_at(obj, &["spec", "unschedulable"]),
            _ => String::new(),
        },
        ("", "ReplicationController") => match label {
            "status.replicas" => int_at(obj, &["status", "replicas"]),
            _ => String::new(),
        },
        ("", "Event") | ("events.k8s.io", "Event") => event_field(obj, label),
        ("", "Namespace") => match label {
            "status.phase" => str_at(obj, &["status", "phase"]),
            _ => String::new(),
        },
        ("", "Secret") => match label {
            "type" => str_at(obj, &["type"]),
            _ => String::new(),
        },
        ("", "Service") => match label {
            "spec.clusterIP" => str_at(obj, &["spec", "clusterIP"]),
            "spec.type" => str_at(obj, &["spec", "type"]),
            _ => String::new(),
        },
        ("batch", "Job") => match label {
            "status.successful" => int_at(obj, &["status", "succeeded"]),
            _ => String::new(),
        },
        ("certificates.k8s.io", "CertificateSigningRequest")
        | ("certificates.k8s.io", "ClusterTrustBundle") => match label {
            "spec.signerName" => str_at(obj, &["spec", "signerName"]),
            _ => String::new(),
        },
        ("certificates.k8s.io", "PodCertificateRequest") => match label {
            "spec.signerName" => str_at(obj, &["spec", "signerName"]),
            "spec.podName" => str_at(obj, &["spec", "podName"]),
            "spec.nodeName" => str_at(obj, &["spec", "nodeName"]),
            _ => String::new(),
        },
        ("resource.k8s.io", "ResourceSlice") => match label {
            "spec.nodeName" => str_at(obj, &["spec", "nodeName"]),
            "spec.driver" => str_at(obj, &["spec", "driver"]),
            _ => String::new(),
        },
        _ if is_builtin_group(group) => String::new(),
        // Custom resources: any other (validated) label is a selectable
        // field JSON path.
        _ => json_path_value(obj, label),
    }
}

impl FieldSelector {
    /// Parse the `fieldSelector` query value exactly as `fields.ParseSelector`
    /// does: comma separated `f=v`, `f==v`, `f!=v`; `\\`, `\,` and `\=`
    /// escapes in values; no whitespace trimming; empty terms skipped.
    pub fn parse(s: &str) -> Result<FieldSelector, String> {
        let mut parts = split_terms(s);
        parts.sort();
        let mut reqs = Vec::new();
        for part in parts {
            if part.is_empty() {
                continue;
            }
            let (lhs, op, rhs) = match split_term(part) {
                Some(x) => x,
                None => {
                    return Err(format!(
                        "invalid selector: '{}'; can't understand '{}'",
                        s, part
                    ))
                }
            };
            let value = unescape_field_value(rhs)?;
            reqs.push(FieldRequirement {
                field: lhs.to_string(),
                op,
                value,
            });
        }
        Ok(FieldSelector { requirements: reqs })
    }

    /// A selector that matches everything.
    pub fn everything() -> FieldSelector {
        FieldSelector {
            requirements: Vec::new(),
        }
    }

    /// True when the selector has no terms.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// The terms, in the order the apiserver evaluates them.
    pub fn requirements(&self) -> &[FieldRequirement] {
        &self.requirements
    }

    /// If the selector pins `field` with `=`/`==`, that value
    /// (`RequiresExactMatch`), e.g. `metadata.name` for a single-object list.
    pub fn requires_exact_match(&self, field: &str) -> Option<&str> {
        self.requirements
            .iter()
            .find(|r| r.field == field && r.op != FieldOp::NotEquals)
            .map(|r| r.value.as_str())
    }

    /// Run every term through the kind's field label conversion, returning
    /// the selector the storage layer would filter with (e.g. Pod
    /// `spec.host` becomes `spec.nodeName`, events.k8s.io `regarding.name`
    /// becomes `involvedObject.name`) or the first conversion error, with
    /// the real apiserver message.
    ///
    /// `group` is `""` for core. Kinds in groups not served by the
    /// kube-apiserver itself (see [`is_builtin_group`]) are custom
    /// resources: `metadata.name`, `metadata.namespace` (only when
    /// `namespaced`) and the CRD's `selectableFields` JSON paths passed in
    /// `extra_fields` (leading `.` optional).
    pub fn convert(
        &self,
        group: &str,
        kind: &str,
        namespaced: bool,
        extra_fields: &[String],
    ) -> Result<FieldSelector, String> {
        let mut out = Vec::with_capacity(self.requirements.len());
        for r in &self.requirements {
            let field = convert_field_label(group, kind, namespaced, extra_fields, &r.field)?;
            out.push(FieldRequirement {
                field,
                op: r.op,
                value: r.value.clone(),
            });
        }
        Ok(FieldSelector { requirements: out })
    }

    /// Check every field is supported for this kind; the error is the real
    /// apiserver's message, e.g. `field label not supported: spec.foo`.
    /// See [`FieldSelector::convert`] for the rules.
    pub fn validate(
        &self,
        group: &str,
        kind: &str,
        namespaced: bool,
        extra_fields: &[String],
    ) -> Result<(), String> {
        self.convert(group, kind, namespaced, extra_fields)
            .map(|_| ())
    }

    /// Evaluate against an object (JSON as served). Values come from the
    /// kind's selectable field set: missing strings are `""` (so
    /// `spec.nodeName=` selects unscheduled pods), pod `spec.hostNetwork` and
    /// node `spec.unschedulable` render `true`/`false`, counts render as
    /// integers (`0` when absent). Fields outside the set read as `""`.
    /// Events are read from either the core v1 or the events.k8s.io/v1
    /// shape. Call [`FieldSelector::validate`] first; this never fails.
    pub fn matches(&self, group: &str, kind: &str, obj: &Value) -> bool {
        self.requirements.iter().all(|r| {
            let label = canonical_field_label(group, kind, &r.field);
            let actual = field_value(group, kind, obj, &label);
            match r.op {
                FieldOp::Equals | FieldOp::DoubleEquals => actual == r.value,
                FieldOp::NotEquals => actual != r.value,
            }
        })
    }
}

impl fmt::Display for FieldSelector {
    /// `Selector.String()`: `f=v` / `f!=v` terms joined with `,`, values
    /// escaped.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            let op = if r.op == FieldOp::NotEquals {
                "!="
            } else {
                "="
            };
            write!(f, "{}{}{}", r.field, op, escape_field_value(&r.value))?;
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ls(s: &str) -> LabelSelector {
        LabelSelector::parse(s).unwrap_or_else(|e| panic!("parse {:?}: {}", s, e))
    }

    fn lerr(s: &str) -> String {
        match LabelSelector::parse(s) {
            Ok(sel) => panic!("expected error for {:?}, got {:?}", s, sel),
            Err(e) => e,
        }
    }

    fn fs(s: &str) -> FieldSelector {
        FieldSelector::parse(s).unwrap_or_else(|e| panic!("parse {:?}: {}", s, e))
    }

    const VALUE_REGEX_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
    const KEY_NAME_MSG: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

    // ----- label selector parsing -----

    #[test]
    fn label_empty_and_whitespace_are_everything() {
        for s in ["", "   ", "\t\n"] {
            let sel = ls(s);
            assert!(sel.is_empty());
            assert!(sel.matches(None));
            assert!(sel.matches(Some(&json!({"a": "b"}))));
            assert_eq!(sel, LabelSelector::everything());
        }
    }

    #[test]
    fn label_each_operator_parses() {
        let cases: &[(&str, &str, LabelOp, &[&str])] = &[
            ("a=b", "a", LabelOp::Equals, &["b"]),
            ("a==b", "a", LabelOp::DoubleEquals, &["b"]),
            ("a!=b", "a", LabelOp::NotEquals, &["b"]),
            ("a in (x,y)", "a", LabelOp::In, &["x", "y"]),
            ("a notin (x)", "a", LabelOp::NotIn, &["x"]),
            ("a", "a", LabelOp::Exists, &[]),
            ("!a", "a", LabelOp::DoesNotExist, &[]),
            ("a>5", "a", LabelOp::GreaterThan, &["5"]),
            ("a<5", "a", LabelOp::LessThan, &["5"]),
            ("a=", "a", LabelOp::Equals, &[""]),
            ("a!=", "a", LabelOp::NotEquals, &[""]),
        ];
        for (s, key, op, vals) in cases {
            let sel = ls(s);
            assert_eq!(sel.requirements().len(), 1, "{}", s);
            let r = &sel.requirements()[0];
            assert_eq!(r.key, *key, "{}", s);
            assert_eq!(r.op, *op, "{}", s);
            let want: Vec<String> = vals.iter().map(|v| v.to_string()).collect();
            assert_eq!(r.values, want, "{}", s);
        }
    }

    #[test]
    fn label_whitespace_tolerance_and_sorting() {
        let sel = ls("  z = 1 ,  app.kubernetes.io/name in ( web , api ),!gone, tier ");
        let keys: Vec<&str> = sel.requirements().iter().map(|r| r.key.as_str()).collect();
        assert_eq!(keys, vec!["app.kubernetes.io/name", "gone", "tier", "z"]);
        assert_eq!(sel.requirements()[0].values, vec!["api", "web"]);
        assert_eq!(
            sel.to_string(),
            "app.kubernetes.io/name in (api,web),!gone,tier,z=1"
        );
    }

    #[test]
    fn label_keyword_values_and_empty_sets() {
        // 'in' / 'notin' are plain values inside a value context.
        let sel = ls("x in (in,notin)");
        assert_eq!(sel.requirements()[0].values, vec!["in", "notin"]);
        let sel = ls("x=in");
        assert_eq!(sel.requirements()[0].values, vec!["in"]);
        // "()" is the set containing only "".
        let sel = ls("x in ()");
        assert_eq!(sel.requirements()[0].values, vec![""]);
        // "(foo,,baz)" includes "".
        let sel = ls("x in (foo,,baz),y,z notin ()");
        assert_eq!(sel.requirements()[0].values, vec!["", "baz", "foo"]);
        assert_eq!(sel.requirements()[1].op, LabelOp::Exists);
        assert_eq!(sel.requirements()[2].values, vec![""]);
        let sel = ls("x in (,a)");
        assert_eq!(sel.requirements()[0].values, vec!["", "a"]);
        let sel = ls("x in (a,)");
        assert_eq!(sel.requirements()[0].values, vec!["", "a"]);
        // Duplicates collapse like a set.
        let sel = ls("x in (b,a,b)");
        assert_eq!(sel.requirements()[0].values, vec!["a", "b"]);
    }

    #[test]
    fn label_parse_errors_match_apiserver() {
        assert_eq!(
            lerr("a b"),
            "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"
        );
        assert_eq!(lerr("a=b c"), "found 'c', expected: ',' or 'end of string'");
        assert_eq!(lerr("a=b,"), "found '', expected: identifier after ','");
        assert_eq!(lerr("a=b,,c"), "found ',', expected: identifier after ','");
        assert_eq!(
            lerr(",a"),
            "found ',', expected: !, identifier, or 'end of string'"
        );
        assert_eq!(
            lerr("=a"),
            "found '=', expected: !, identifier, or 'end of string'"
        );
        assert_eq!(
            lerr("!"),
            "unable to parse requirement: found '', expected: identifier"
        );
        assert_eq!(
            lerr("!=a"),
            "found '!=', expected: !, identifier, or 'end of string'"
        );
        assert_eq!(
            lerr("a in"),
            "unable to parse requirement: found '' expected: '('"
        );
        assert_eq!(
            lerr("a in x"),
            "unable to parse requirement: found 'x' expected: '('"
        );
        assert_eq!(
            lerr("a in ("),
            "unable to parse requirement: found '', expected: ',', ')' or identifier"
        );
        assert_eq!(
            lerr("a in (x"),
            "unable to parse requirement: found '', expected: ',' or ')'"
        );
        assert_eq!(
            lerr("a in (x y)"),
            "unable to parse requirement: found 'y', expected: ',' or ')'"
        );
        assert_eq!(
            lerr("a in (x,="),
            "unable to parse requirement: found '=', expected: ',', or identifier"
        );
        assert_eq!(
            lerr("a==="),
            "unable to parse requirement: found '=', expected: identifier"
        );
        assert_eq!(
            lerr("a=(b)"),
            "unable to parse requirement: found '(', expected: identifier"
        );
        assert_eq!(
            lerr("a notin"),
            "unable to parse requirement: found '' expected: '('"
        );
        // `!key` takes no operator; the '=' is then an unexpected token.
        assert_eq!(lerr("!a=b"), "found '=', expected: ',' or 'end of string'");
        // 'in' is an identifier where a key is expected.
        let sel = ls("in in (in)");
        assert_eq!(sel.requirements()[0].key, "in");
        assert_eq!(sel.requirements()[0].op, LabelOp::In);
        assert_eq!(sel.requirements()[0].values, vec!["in"]);
        assert_eq!(ls("notin").requirements()[0].op, LabelOp::Exists);
    }

    #[test]
    fn label_key_and_value_validation_errors() {
        assert_eq!(
            lerr("a=b@c"),
            format!(
                "unable to parse requirement: values[0][a]: Invalid value: \"b@c\": {}",
                VALUE_REGEX_MSG
            )
        );
        assert_eq!(
            lerr("-bad=x"),
            format!(
                "unable to parse requirement: <nil>: Invalid value: \"-bad\": {}",
                KEY_NAME_MSG
            )
        );
        assert_eq!(
            lerr("a/b/c"),
            "unable to parse requirement: <nil>: Invalid value: \"a/b/c\": a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        );
        assert_eq!(
            lerr("/name"),
            "unable to parse requirement: <nil>: Invalid value: \"/name\": prefix part must be non-empty"
        );
        assert_eq!(
            lerr("Example.com/name"),
            "unable to parse requirement: <nil>: Invalid value: \"Example.com/name\": prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
        );
        let long = "a".repeat(64);
        assert_eq!(
            lerr(&long),
            format!("unable to parse requirement: <nil>: Invalid value: \"{}\": name part must be no more than 63 bytes", long)
        );
        assert_eq!(
            lerr(&format!("k={}", long)),
            format!("unable to parse requirement: values[0][k]: Invalid value: \"{}\": must be no more than 63 bytes", long)
        );
        assert_eq!(
            lerr("a in (x,-y)"),
            // values are sorted before validation, so "-y" is values[0]
            format!(
                "unable to parse requirement: values[0][a]: Invalid value: \"-y\": {}",
                VALUE_REGEX_MSG
            )
        );
        // Unicode and quotes are quoted like Go's %q.
        assert_eq!(
            lerr("a=\"q\""),
            format!(
                "unable to parse requirement: values[0][a]: Invalid value: \"\\\"q\\\"\": {}",
                VALUE_REGEX_MSG
            )
        );
        assert!(lerr("a=rā").contains("Invalid value: \"rā\""));
        // Prefixed keys are fine.
        assert!(
            LabelSelector::parse("app.kubernetes.io/name=web,k8s.io/x,example.com/My_Key.1=v")
                .is_ok()
        );
        assert!(LabelSelector::parse(&format!("{}/{}", "a".repeat(253), "b".repeat(63))).is_ok());
    }

    #[test]
    fn label_gt_lt() {
        assert_eq!(
            lerr("a>x"),
            "unable to parse requirement: values[0]: Invalid value: \"x\": for 'Gt', 'Lt' operators, the value must be an integer"
        );
        assert_eq!(
            lerr("a>"),
            "unable to parse requirement: values[0]: Invalid value: \"\": for 'Gt', 'Lt' operators, the value must be an integer"
        );
        let gt = ls("n>5");
        assert!(gt.matches(Some(&json!({"n": "6"}))));
        assert!(!gt.matches(Some(&json!({"n": "5"}))));
        assert!(!gt.matches(Some(&json!({"n": "x"}))));
        assert!(!gt.matches(Some(&json!({}))));
        let lt = ls("n<5");
        assert!(lt.matches(Some(&json!({"n": "4"}))));
        assert!(!lt.matches(Some(&json!({"n": "5"}))));
        assert_eq!(gt.to_string(), "n>5");
    }

    // ----- label matching -----

    #[test]
    fn label_matching_semantics() {
        let l = json!({"app": "web", "tier": "front", "empty": ""});
        let yes = [
            "app=web",
            "app==web",
            "app!=api",
            "missing!=x",
            "app in (web,api)",
            "missing notin (x)",
            "app notin (api)",
            "app",
            "!missing",
            "empty=",
            "empty",
            "app=web,tier=front",
            "empty in ()",
        ];
        let no = [
            "app=api",
            "app!=web",
            "missing=x",
            "app in (api)",
            "app notin (web)",
            "missing",
            "!app",
            "missing in (x)",
            "app=web,tier=back",
            "app=",
        ];
        for s in yes {
            assert!(ls(s).matches(Some(&l)), "expected {} to match", s);
        }
        for s in no {
            assert!(!ls(s).matches(Some(&l)), "expected {} not to match", s);
        }
        // Absent labels.
        assert!(ls("!app").matches(None));
        assert!(ls("app!=web").matches(None));
        assert!(ls("app notin (web)").matches(None));
        assert!(!ls("app").matches(None));
        assert!(!ls("app=").matches(None));
        assert!(ls("").matches(Some(&Value::Null)));
        // Whole-object helper.
        let obj = json!({"metadata": {"name": "p", "labels": {"app": "web"}}});
        assert!(ls("app=web").matches_object(&obj));
        assert!(!ls("app=api").matches_object(&obj));
        assert!(ls("app=web").matches_pairs(vec![("app", "web")]));
        assert!(!ls("app").matches_pairs(Vec::<(&str, &str)>::new()));
    }

    #[test]
    fn label_requires_exact_match() {
        let sel = ls("a=1,b in (2),c in (3,4),d!=5");
        assert_eq!(sel.requires_exact_match("a"), Some("1"));
        assert_eq!(sel.requires_exact_match("b"), Some("2"));
        assert_eq!(sel.requires_exact_match("c"), None);
        assert_eq!(sel.requires_exact_match("d"), None);
        assert_eq!(sel.requires_exact_match("e"), None);
    }

    #[test]
    fn label_nul_byte_ends_input_like_go() {
        // Go's lexer treats a NUL byte where a token starts as the end of
        // the input, and inside an identifier as a separator.
        let sel = ls("a \u{0}garbage in (");
        assert_eq!(sel.requirements().len(), 1);
        assert_eq!(sel.requirements()[0].op, LabelOp::Exists);
        assert_eq!(
            lerr("a\u{0}b"),
            "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"
        );
    }

    // ----- from_json -----

    #[test]
    fn label_from_json() {
        let sel = LabelSelector::from_json(&json!({
            "matchLabels": {"app": "web"},
            "matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["front", "edge"]},
                {"key": "env", "operator": "NotIn", "values": ["dev"]},
                {"key": "canary", "operator": "DoesNotExist"},
                {"key": "zone", "operator": "Exists"}
            ]
        }))
        .unwrap();
        let keys: Vec<&str> = sel.requirements().iter().map(|r| r.key.as_str()).collect();
        assert_eq!(keys, vec!["app", "canary", "env", "tier", "zone"]);
        assert!(sel.matches(Some(&json!({"app": "web", "tier": "edge", "zone": "a"}))));
        assert!(!sel.matches(Some(
            &json!({"app": "web", "tier": "edge", "zone": "a", "canary": "1"})
        )));
        assert!(!sel.matches(Some(
            &json!({"app": "web", "tier": "edge", "zone": "a", "env": "dev"})
        )));
        assert!(!sel.matches(Some(&json!({"app": "web", "tier": "back", "zone": "a"}))));

        let null = LabelSelector::from_json(&Value::Null).unwrap();
        assert!(null.matches_nothing());
        assert!(!null.is_empty());
        assert!(!null.matches(Some(&json!({"a": "b"}))));
        assert!(!null.matches(None));

        let empty = LabelSelector::from_json(&json!({})).unwrap();
        assert!(empty.is_empty());
        assert!(empty.matches(None));
        let empty2 =
            LabelSelector::from_json(&json!({"matchLabels": {}, "matchExpressions": []})).unwrap();
        assert!(empty2.is_empty());
    }

    #[test]
    fn label_from_json_errors() {
        assert_eq!(
            LabelSelector::from_json(
                &json!({"matchExpressions": [{"key": "a", "operator": "Foo"}]})
            )
            .unwrap_err(),
            "\"Foo\" is not a valid label selector operator"
        );
        assert_eq!(
            LabelSelector::from_json(&json!({"matchExpressions": [{"key": "a", "operator": "In", "values": []}]})).unwrap_err(),
            "values: Invalid value: []string(nil): for 'in', 'notin' operators, values set can't be empty"
        );
        assert_eq!(
            LabelSelector::from_json(&json!({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x", "y"]}]})).unwrap_err(),
            "values: Invalid value: []string{\"x\", \"y\"}: values set must be empty for exists and does not exist"
        );
        assert_eq!(
            LabelSelector::from_json(&json!({"matchLabels": {"bad key": "v"}})).unwrap_err(),
            format!("key: Invalid value: \"bad key\": {}", KEY_NAME_MSG)
        );
        assert_eq!(
            LabelSelector::from_json(&json!({"matchLabels": {"k": "bad value"}})).unwrap_err(),
            format!(
                "values[0][k]: Invalid value: \"bad value\": {}",
                VALUE_REGEX_MSG
            )
        );
        // Several errors aggregate as [a, b].
        let e = LabelSelector::from_json(
            &json!({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["b c"]}]}),
        )
        .unwrap_err();
        assert!(
            e.starts_with("[values: Invalid value: []string{\"b c\"}: values set must be empty"),
            "{}",
            e
        );
        assert!(
            e.contains(", values[0][a]: Invalid value: \"b c\""),
            "{}",
            e
        );
        assert!(e.ends_with(']'));
        assert!(LabelSelector::from_json(&json!("app=web")).is_err());
        assert!(LabelSelector::from_json(&json!({"matchLabels": {"a": 1}})).is_err());
        assert!(LabelSelector::from_json(&json!({"matchExpressions": {"a": 1}})).is_err());
    }

    #[test]
    fn label_from_set() {
        let sel = LabelSelector::from_set(Some(&json!({"b": "2", "a": "1"})));
        assert_eq!(sel.to_string(), "a=1,b=2");
        assert!(sel.matches(Some(&json!({"a": "1", "b": "2", "c": "3"}))));
        assert!(!sel.matches(Some(&json!({"a": "1"}))));
        assert!(LabelSelector::from_set(None).is_empty());
        assert!(LabelSelector::from_set(Some(&json!({}))).matches(None));
    }

    #[test]
    fn label_display_round_trips() {
        for s in [
            "a=b",
            "a==b",
            "a!=b",
            "a in (x,y)",
            "a notin (x)",
            "a",
            "!a",
            "a>1",
            "a<1",
        ] {
            let sel = ls(s);
            assert_eq!(sel.to_string(), s);
            assert_eq!(ls(&sel.to_string()), sel);
        }
    }

    // ----- field selector parsing -----

    #[test]
    fn field_parse_operators() {
        let sel = fs("metadata.name=a");
        assert_eq!(
            sel.requirements(),
            &[FieldRequirement {
                field: "metadata.name".into(),
                op: FieldOp::Equals,
                value: "a".into()
            }]
        );
        let sel = fs("metadata.name==a");
        assert_eq!(sel.requirements()[0].op, FieldOp::DoubleEquals);
        assert_eq!(sel.requirements()[0].value, "a");
        let sel = fs("metadata.name!=a");
        assert_eq!(sel.requirements()[0].op, FieldOp::NotEquals);
        let sel = fs("spec.nodeName=");
        assert_eq!(sel.requirements()[0].value, "");
        assert!(fs("").is_empty());
        assert!(fs(",,").is_empty());
        // Terms are sorted as raw strings.
        let sel = fs("status.phase!=Running,spec.nodeName=worker-04");
        assert_eq!(sel.requirements()[0].field, "spec.nodeName");
        assert_eq!(sel.requirements()[1].field, "status.phase");
        // No whitespace trimming, like the real parser.
        let sel = fs("a = b");
        assert_eq!(sel.requirements()[0].field, "a ");
        assert_eq!(sel.requirements()[0].value, " b");
    }

    #[test]
    fn field_parse_escapes() {
        let sel = fs(r"metadata.name=a\,b\=c\\d");
        assert_eq!(sel.requirements().len(), 1);
        assert_eq!(sel.requirements()[0].value, r"a,b=c\d");
        assert_eq!(sel.to_string(), r"metadata.name=a\,b\=c\\d");
        let sel = fs(r"a=x\,y,b=z");
        assert_eq!(sel.requirements().len(), 2);
        assert_eq!(sel.requirements()[0].value, "x,y");
        assert_eq!(escape_field_value("a,b=c\\"), r"a\,b\=c\\");
    }

    #[test]
    fn field_parse_errors() {
        assert_eq!(
            fs_err("foo"),
            "invalid selector: 'foo'; can't understand 'foo'"
        );
        assert_eq!(
            fs_err("a=b,foo"),
            "invalid selector: 'a=b,foo'; can't understand 'foo'"
        );
        assert_eq!(
            fs_err(r"a=b\x"),
            r"invalid field selector: invalid escape sequence: \x"
        );
        assert_eq!(
            fs_err(r"a=b\"),
            r"invalid field selector: invalid escape sequence: \"
        );
        assert_eq!(
            fs_err("a==b=c"),
            "invalid field selector: unescaped character in value: 61"
        );
        assert_eq!(
            fs_err("a=b=c"),
            "invalid field selector: unescaped character in value: 61"
        );
    }

    fn fs_err(s: &str) -> String {
        match FieldSelector::parse(s) {
            Ok(sel) => panic!("expected error for {:?}, got {:?}", s, sel),
            Err(e) => e,
        }
    }

    // ----- field validation -----

    #[test]
    fn field_validate_pods() {
        for f in [
            "metadata.name",
            "metadata.namespace",
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.podIPs",
            "status.nominatedNodeName",
            "spec.host",
        ] {
            assert!(
                fs(&format!("{}=x", f))
                    .validate("", "Pod", true, &[])
                    .is_ok(),
                "{}",
                f
            );
        }
        assert_eq!(
            fs("spec.foo=x").validate("", "Pod", true, &[]).unwrap_err(),
            "field label not supported: spec.foo"
        );
        // The first failing term (in sorted order) is reported.
        assert_eq!(
            fs("zz=1,spec.nodeName=a,aa=2")
                .validate("", "Pod", true, &[])
                .unwrap_err(),
            "field label not supported: aa"
        );
        let conv = fs("spec.host=n1").convert("", "Pod", true, &[]).unwrap();
        assert_eq!(conv.requirements()[0].field, "spec.nodeName");
    }

    #[test]
    fn field_validate_other_kinds() {
        let ok = |s: &str, g: &str, k: &str, ns: bool| {
            assert!(fs(s).validate(g, k, ns, &[]).is_ok(), "{} {}/{}", s, g, k)
        };
        let bad = |s: &str, g: &str, k: &str, ns: bool, msg: &str| {
            assert_eq!(
                fs(s).validate(g, k, ns, &[]).unwrap_err(),
                msg,
                "{} {}/{}",
                s,
                g,
                k
            )
        };
        ok("spec.unschedulable=true,metadata.name=n", "", "Node", false);
        bad(
            "metadata.namespace=x",
            "",
            "Node",
            false,
            "field label not supported: metadata.namespace",
        );
        ok(
            "status.phase=Active,metadata.name=x",
            "",
            "Namespace",
            false,
        );
        bad(
            "metadata.namespace=x",
            "",
            "Namespace",
            false,
            "field label not supported: metadata.namespace",
        );
        ok(
            "type=Opaque,metadata.name=a,metadata.namespace=b",
            "",
            "Secret",
            true,
        );
        bad(
            "data=x",
            "",
            "Secret",
            true,
            "field label not supported: data",
        );
        ok(
            "spec.clusterIP=None,spec.type=ClusterIP",
            "",
            "Service",
            true,
        );
        ok("status.replicas=1", "", "ReplicationController", true);
        ok("involvedObject.kind=Pod,involvedObject.namespace=a,involvedObject.name=b,involvedObject.uid=c,involvedObject.apiVersion=v1,involvedObject.resourceVersion=1,involvedObject.fieldPath=x,reason=r,reportingComponent=k,source=s,type=Normal", "", "Event", true);
        bad(
            "regarding.name=x",
            "",
            "Event",
            true,
            "field label not supported: regarding.name",
        );
        ok("regarding.kind=Pod,regarding.name=b,reason=r,reportingController=k,type=Normal,source=s,metadata.name=n", "events.k8s.io", "Event", true);
        bad(
            "involvedObject.name=x",
            "events.k8s.io",
            "Event",
            true,
            "field label not supported: involvedObject.name",
        );
        bad(
            "note=x",
            "events.k8s.io",
            "Event",
            true,
            "field label not supported: note",
        );
        ok("status.successful=1", "batch", "Job", true);
        bad(
            "status.active=1",
            "batch",
            "Job",
            true,
            "field label \"status.active\" not supported for Job",
        );
        ok(
            "spec.signerName=x",
            "certificates.k8s.io",
            "CertificateSigningRequest",
            false,
        );
        bad(
            "spec.username=x",
            "certificates.k8s.io",
            "CertificateSigningRequest",
            false,
            "field label not supported: spec.username",
        );
        ok(
            "spec.nodeName=n,spec.driver=d",
            "resource.k8s.io",
            "ResourceSlice",
            false,
        );
        bad(
            "spec.pool=x",
            "resource.k8s.io",
            "ResourceSlice",
            false,
            "field label not supported for resource.k8s.io/v1, Kind=ResourceSlice: spec.pool",
        );
        // Built-in kinds without a conversion function (apps/v1 ReplicaSet,
        // PVs, PVCs, ConfigMaps, ...) use the default conversion.
        ok(
            "metadata.name=a,metadata.namespace=b",
            "apps",
            "ReplicaSet",
            true,
        );
        bad("status.replicas=1", "apps", "ReplicaSet", true,
            "\"status.replicas\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\"");
        bad("spec.storageClassName=x", "", "PersistentVolumeClaim", true,
            "\"spec.storageClassName\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\"");
        ok("metadata.namespace=", "", "PersistentVolume", false);
        bad("spec.replicas=1", "apps", "Deployment", true,
            "\"spec.replicas\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\"");
    }

    #[test]
    fn field_validate_custom_resources() {
        let extra = vec![".spec.color".to_string(), "spec.size".to_string()];
        let sel = fs("spec.color=red,spec.size=M,metadata.name=a,metadata.namespace=b");
        assert!(sel
            .validate("stable.example.com", "Shirt", true, &extra)
            .is_ok());
        assert_eq!(
            fs("metadata.namespace=b")
                .validate("stable.example.com", "Shirt", false, &extra)
                .unwrap_err(),
            "field label not supported: metadata.namespace"
        );
        assert_eq!(
            fs("spec.weight=1")
                .validate("stable.example.com", "Shirt", true, &extra)
                .unwrap_err(),
            "field label not supported: spec.weight"
        );
        // Gateway API lives in a *.k8s.io group but is a CRD.
        assert!(!is_builtin_group("gateway.networking.k8s.io"));
        assert!(is_builtin_group("networking.k8s.io"));

        let shirt = json!({"metadata": {"name": "a", "namespace": "b"}, "spec": {"color": "red", "size": "M", "count": 3, "soft": true}});
        assert!(fs("spec.color=red").matches("stable.example.com", "Shirt", &shirt));
        assert!(!fs("spec.color=blue").matches("stable.example.com", "Shirt", &shirt));
        assert!(fs("spec.count=3,spec.soft=true").matches("stable.example.com", "Shirt", &shirt));
        assert!(fs("spec.missing=").matches("stable.example.com", "Shirt", &shirt));
    }

    // ----- field matching -----

    fn pod(name: &str, node: Option<&str>, phase: Option<&str>) -> Value {
        let mut p = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "i"}]},
            "status": {}
        });
        if let Some(n) = node {
            p["spec"]["nodeName"] = json!(n);
        }
        if let Some(ph) = phase {
            p["status"]["phase"] = json!(ph);
        }
        p
    }

    #[test]
    fn field_pod_node_and_phase_combined() {
        let sel = fs("spec.nodeName=worker-04,status.phase!=Running");
        sel.validate("", "Pod", true, &[]).unwrap();
        assert!(sel.matches("", "Pod", &pod("a", Some("worker-04"), Some("Pending"))));
        assert!(sel.matches("", "Pod", &pod("b", Some("worker-04"), Some("Failed"))));
        assert!(sel.matches("", "Pod", &pod("c", Some("worker-04"), None)));
        assert!(!sel.matches("", "Pod", &pod("d", Some("worker-04"), Some("Running"))));
        assert!(!sel.matches("", "Pod", &pod("e", Some("worker-05"), Some("Pending"))));
        assert!(!sel.matches("", "Pod", &pod("f", None, Some("Pending"))));
    }

    #[test]
    fn field_pod_unscheduled_and_other_fields() {
        let unscheduled = fs("spec.nodeName=");
        assert!(unscheduled.matches("", "Pod", &pod("a", None, None)));
        assert!(!unscheduled.matches("", "Pod", &pod("a", Some("n1"), None)));
        assert!(fs("spec.nodeName!=").matches("", "Pod", &pod("a", Some("n1"), None)));
        assert!(fs("status.phase=").matches("", "Pod", &pod("a", None, None)));
        // Legacy spec.host is spec.nodeName.
        assert!(fs("spec.host=n1").matches("", "Pod", &pod("a", Some("n1"), None)));

        let mut p = pod("web-1", Some("n1"), Some("Running"));
        assert!(fs("spec.hostNetwork=false").matches("", "Pod", &p));
        assert!(!fs("spec.hostNetwork=true").matches("", "Pod", &p));
        p["spec"]["hostNetwork"] = json!(true);
        p["spec"]["restartPolicy"] = json!("Always");
        p["spec"]["schedulerName"] = json!("default-scheduler");
        p["spec"]["serviceAccountName"] = json!("sa");
        p["status"]["podIPs"] = json!([{"ip": "10.0.0.7"}, {"ip": "fd00::7"}]);
        p["status"]["nominatedNodeName"] = json!("n2");
        assert!(fs("spec.hostNetwork=true,spec.restartPolicy=Always,spec.schedulerName=default-scheduler,spec.serviceAccountName=sa,status.podIP=10.0.0.7,status.nominatedNodeName=n2,metadata.name=web-1,metadata.namespace=default").matches("", "Pod", &p));
        p["status"]["podIP"] = json!("10.0.0.8");
        assert!(fs("status.podIP=10.0.0.8").matches("", "Pod", &p));
        // status.podIPs is accepted but not in the pod's field set.
        assert!(fs("status.podIPs=").matches("", "Pod", &p));
        assert!(!fs("status.podIPs=10.0.0.7").matches("", "Pod", &p));
        assert!(fs("metadata.name!=web-1").matches("", "Pod", &pod("other", None, None)));
    }

    #[test]
    fn field_event_involved_object() {
        let core = json!({
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": "web-1.17a", "namespace": "default"},
            "involvedObject": {"kind": "Pod", "namespace": "default", "name": "web-1", "uid": "u1", "apiVersion": "v1"},
            "reason": "BackOff", "type": "Warning",
            "source": {"component": "kubelet", "host": "n1"},
            "reportingComponent": "kubelet"
        });
        assert!(fs("involvedObject.name=web-1").matches("", "Event", &core));
        assert!(!fs("involvedObject.name=web-2").matches("", "Event", &core));
        assert!(fs("involvedObject.kind=Pod,involvedObject.uid=u1,reason=BackOff,type=Warning,source=kubelet,reportingComponent=kubelet").matches("", "Event", &core));
        assert!(fs("involvedObject.fieldPath=").matches("", "Event", &core));

        let ev = json!({
            "apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": "e", "namespace": "default"},
            "eventTime": "2024-01-01T00:00:00.000000Z",
            "reportingController": "example.com/ctl", "reportingInstance": "ctl-1",
            "action": "Sync", "reason": "Synced", "type": "Normal",
            "regarding": {"kind": "Deployment", "name": "web", "namespace": "default"}
        });
        assert!(fs(
            "regarding.name=web,regarding.kind=Deployment,reportingController=example.com/ctl"
        )
        .matches("events.k8s.io", "Event", &ev));
        // Source falls back to the reporting controller.
        assert!(fs("source=example.com/ctl").matches("", "Event", &ev));
        assert!(fs("involvedObject.name=web").matches("", "Event", &ev));
        assert!(fs("regarding.name=web-1").matches("events.k8s.io", "Event", &core));
    }

    #[test]
    fn field_other_kinds_match() {
        let node = json!({"metadata": {"name": "n1"}, "spec": {"unschedulable": true}});
        assert!(fs("spec.unschedulable=true").matches("", "Node", &node));
        assert!(fs("spec.unschedulable=false").matches(
            "",
            "Node",
            &json!({"metadata": {"name": "n2"}, "spec": {}})
        ));
        assert!(fs("metadata.name=n1").matches("", "Node", &node));
        assert!(fs("status.phase=Terminating").matches(
            "",
            "Namespace",
            &json!({"metadata": {"name": "x"}, "status": {"phase": "Terminating"}})
        ));
        assert!(fs("type=kubernetes.io/tls").matches(
            "",
            "Secret",
            &json!({"metadata": {"name": "s"}, "type": "kubernetes.io/tls"})
        ));
        assert!(fs("status.replicas=0").matches(
            "",
            "ReplicationController",
            &json!({"metadata": {"name": "rc"}})
        ));
        assert!(fs("status.replicas=3").matches(
            "",
            "ReplicationController",
            &json!({"metadata": {"name": "rc"}, "status": {"replicas": 3}})
        ));
        assert!(fs("status.successful=1").matches(
            "batch",
            "Job",
            &json!({"metadata": {"name": "j"}, "status": {"succeeded": 1}})
        ));
        assert!(fs("status.successful=0").matches(
            "batch",
            "Job",
            &json!({"metadata": {"name": "j"}})
        ));
        assert!(fs("spec.type=NodePort,spec.clusterIP=10.96.0.10").matches("", "Service", &json!({"metadata": {"name": "s"}, "spec": {"type": "NodePort", "clusterIP": "10.96.0.10"}})));
        assert!(fs("spec.signerName=kubernetes.io/kubelet-serving").matches("certificates.k8s.io", "CertificateSigningRequest", &json!({"metadata": {"name": "c"}, "spec": {"signerName": "kubernetes.io/kubelet-serving"}})));
        assert!(fs("spec.driver=gpu.example.com,spec.nodeName=n1").matches("resource.k8s.io", "ResourceSlice", &json!({"metadata": {"name": "r"}, "spec": {"driver": "gpu.example.com", "nodeName": "n1"}})));
        // Default kinds: name/namespace only; a cluster-scoped object has no namespace.
        let pv = json!({"metadata": {"name": "pv1"}});
        assert!(fs("metadata.namespace=").matches("", "PersistentVolume", &pv));
        assert!(!fs("metadata.namespace=default").matches("", "PersistentVolume", &pv));
        assert!(fs("metadata.name=pv1").matches("", "PersistentVolume", &pv));
        assert!(FieldSelector::everything().matches("", "Pod", &Value::Null));
    }

    #[test]
    fn field_requires_exact_match() {
        let sel = fs("metadata.name=a,metadata.namespace!=b");
        assert_eq!(sel.requires_exact_match("metadata.name"), Some("a"));
        assert_eq!(sel.requires_exact_match("metadata.namespace"), None);
        assert_eq!(
            fs("metadata.name!=a,metadata.name=b").requires_exact_match("metadata.name"),
            Some("b")
        );
    }

    // ----- robustness -----

    #[test]
    fn no_panics_on_odd_input() {
        let inputs = [
            "",
            " ",
            "!",
            "!!",
            "!=",
            "==",
            "=",
            "(",
            ")",
            ",",
            "a(",
            "a)",
            "a in ((",
            "a in (,,,)",
            "a in (,",
            "a notin ()",
            "a>>1",
            "a<>1",
            "a=<",
            "in in (in)",
            "notin notin (notin)",
            "a,!b,c in (d),e notin (f),g=h,i!=j",
            "\u{0}",
            "a\u{0}",
            "é=é",
            "🦀",
            "a=🦀",
            "a in (🦀)",
            "\\",
            "a=\\",
            "a b c d",
            "!a b",
            "a in (b) c",
            "a=b,",
            ",",
            ",,",
            "a=b,,",
            "a==",
            "a!==b",
            "a=!b",
            "a>(",
            "a in b)",
            "x in (a b)",
        ];
        let objs = [
            Value::Null,
            json!({}),
            json!({"metadata": 5}),
            json!({"metadata": {"labels": [1, 2]}}),
            json!([1]),
            json!("s"),
        ];
        for s in inputs {
            let _ = LabelSelector::parse(s).map(|sel| {
                for o in &objs {
                    let _ = sel.matches_object(o);
                    let _ = sel.matches(Some(o));
                }
                let _ = sel.to_string();
            });
            let _ = FieldSelector::parse(s).map(|sel| {
                for (g, k) in [
                    ("", "Pod"),
                    ("", "Event"),
                    ("events.k8s.io", "Event"),
                    ("x.io", "Y"),
                    ("apps", "Deployment"),
                    ("batch", "Job"),
                ] {
                    let _ = sel.validate(g, k, true, &[".spec.a".to_string(), "".to_string()]);
                    for o in &objs {
                        let _ = sel.matches(g, k, o);
                    }
                }
                let _ = sel.to_string();
            });
        }
        for v in [
            Value::Null,
            json!(1),
            json!([]),
            json!({"matchLabels": null, "matchExpressions": null}),
            json!({"matchExpressions": [null]}),
            json!({"matchExpressions": [1]}),
            json!({"matchExpressions": [{"key": 1}]}),
            json!({"matchExpressions": [{"key": "a", "operator": 2}]}),
            json!({"matchExpressions": [{"key": "a", "operator": "In", "values": "x"}]}),
            json!({"matchExpressions": [{"key": "a", "operator": "In", "values": [1]}]}),
        ] {
            let _ = LabelSelector::from_json(&v);
        }
    }

    #[test]
    fn no_panics_on_generated_input() {
        // Deterministic pseudo-random strings over the interesting alphabet.
        let alphabet: Vec<char> = "ab=!(),<> \t\\in notin é🦀\u{0}-_./".chars().collect();
        let mut seed: u64 = 0x9e3779b97f4a7c15;
        let obj = json!({"metadata": {"name": "a", "labels": {"a": "b", "in": ""}}, "spec": {"nodeName": "b"}});
        for _ in 0..20000 {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let len = (seed >> 59) as usize;
            let mut s = String::new();
            let mut x = seed;
            for _ in 0..len {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                s.push(alphabet[(x >> 33) as usize % alphabet.len()]);
            }
            if let Ok(sel) = LabelSelector::parse(&s) {
                let _ = sel.matches_object(&obj);
                let again = LabelSelector::parse(&sel.to_string());
                assert!(again.is_ok(), "{:?} -> {:?}", s, sel.to_string());
            }
            if let Ok(sel) = FieldSelector::parse(&s) {
                let _ = sel.validate("", "Pod", true, &[]);
                let _ = sel.matches("", "Pod", &obj);
                let _ = sel.matches("x.io", "Y", &obj);
            }
        }
    }

    #[test]
    fn go_quote_matches_strconv() {
        assert_eq!(go_quote("a"), "\"a\"");
        assert_eq!(go_quote("a\"b\\c"), "\"a\\\"b\\\\c\"");
        assert_eq!(go_quote("\n\t\u{1}"), "\"\\n\\t\\x01\"");
        assert_eq!(go_quote("é 🦀"), "\"é 🦀\"");
        assert_eq!(go_quote("\u{a0}"), "\"\\u00a0\"");
    }
}
