//! The syntax errors Go's `encoding/json` gives for a body that is not JSON: a port of its
//! scanner (`encoding/json/scanner.go`, the state machine `checkValid` runs before any decoding),
//! so the apiserver's messages (`invalid character 'n' looking for beginning of object key
//! string`, `unexpected end of JSON input`) come out as kube-apiserver writes them.

/// Go's nesting limit (`maxNestingDepth`).
const MAX_NESTING_DEPTH: usize = 10000;

#[derive(Clone, Copy, PartialEq)]
enum Parse {
    ObjectKey,
    ObjectValue,
    ArrayValue,
}

#[derive(Clone, Copy, PartialEq)]
enum Step {
    BeginValue,
    BeginValueOrEmpty,
    BeginStringOrEmpty,
    BeginString,
    EndValue,
    EndTop,
    InString,
    InStringEsc,
    InStringEscU(u8),
    Neg,
    One,
    Zero,
    Dot,
    Dot0,
    E,
    ESign,
    E0,
    /// The rest of a literal still expected (`rue`, `alse`, `ull`) and its name.
    Literal(&'static [u8], &'static str),
    Error,
}

struct Scanner {
    step: Step,
    parse: Vec<Parse>,
    end_top: bool,
    err: Option<String>,
}

fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\n')
}

/// Go's `quoteChar`: the byte as a single-quoted Go literal.
fn quote_char(c: u8) -> String {
    match c {
        b'\'' => "'\\''".into(),
        b'"' => "'\"'".into(),
        _ => {
            // strconv.Quote(string(rune(c))) without its double quotes.
            let ch = char::from(c);
            let inner = match ch {
                '\x07' => "\\a".to_string(),
                '\x08' => "\\b".to_string(),
                '\x0c' => "\\f".to_string(),
                '\n' => "\\n".to_string(),
                '\r' => "\\r".to_string(),
                '\t' => "\\t".to_string(),
                '\x0b' => "\\v".to_string(),
                '\\' => "\\\\".to_string(),
                c if (c as u32) < 0x20 || c as u32 == 0x7f => format!("\\x{:02x}", c as u32),
                // U+0080..U+009F are not printable; U+00A0 (no-break space) and U+00AD (soft
                // hyphen) are not graphic for strconv.IsPrint either.
                c if (0x80..0xa0).contains(&(c as u32)) || c as u32 == 0xad => {
                    format!("\\u{:04x}", c as u32)
                }
                c => c.to_string(),
            };
            format!("'{inner}'")
        }
    }
}

impl Scanner {
    fn new() -> Self {
        Scanner {
            step: Step::BeginValue,
            parse: Vec::new(),
            end_top: false,
            err: None,
        }
    }

    /// Records an error; `false` stands for Go's `scanError`.
    fn error(&mut self, c: u8, context: &str) -> bool {
        self.step = Step::Error;
        self.err = Some(format!("invalid character {} {}", quote_char(c), context));
        false
    }

    fn push(&mut self, c: u8, p: Parse) -> bool {
        self.parse.push(p);
        if self.parse.len() <= MAX_NESTING_DEPTH {
            true
        } else {
            self.error(c, "exceeded max depth")
        }
    }

    fn pop(&mut self) {
        self.parse.pop();
        if self.parse.is_empty() {
            self.step = Step::EndTop;
            self.end_top = true;
        } else {
            self.step = Step::EndValue;
        }
    }

    fn hex(c: u8) -> bool {
        c.is_ascii_hexdigit()
    }

    /// One byte; `false` on an error.
    fn feed(&mut self, c: u8) -> bool {
        match self.step {
            Step::Error => false,
            Step::BeginValueOrEmpty => {
                if is_space(c) {
                    true
                } else if c == b']' {
                    self.end_value(c)
                } else {
                    self.begin_value(c)
                }
            }
            Step::BeginValue => self.begin_value(c),
            Step::BeginStringOrEmpty => {
                if is_space(c) {
                    true
                } else if c == b'}' {
                    if let Some(last) = self.parse.last_mut() {
                        *last = Parse::ObjectValue;
                    }
                    self.end_value(c)
                } else {
                    self.begin_string(c)
                }
            }
            Step::BeginString => self.begin_string(c),
            Step::EndValue => self.end_value(c),
            Step::EndTop => self.end_top_byte(c),
            Step::InString => {
                if c == b'"' {
                    self.step = Step::EndValue;
                    true
                } else if c == b'\\' {
                    self.step = Step::InStringEsc;
                    true
                } else if c < 0x20 {
                    self.error(c, "in string literal")
                } else {
                    true
                }
            }
            Step::InStringEsc => match c {
                b'b' | b'f' | b'n' | b'r' | b't' | b'\\' | b'/' | b'"' => {
                    self.step = Step::InString;
                    true
                }
                b'u' => {
                    self.step = Step::InStringEscU(0);
                    true
                }
                _ => self.error(c, "in string escape code"),
            },
            Step::InStringEscU(n) => {
                if Self::hex(c) {
                    self.step = if n == 3 {
                        Step::InString
                    } else {
                        Step::InStringEscU(n + 1)
                    };
                    true
                } else {
                    self.error(c, "in \\u hexadecimal character escape")
                }
            }
            Step::Neg => {
                if c == b'0' {
                    self.step = Step::Zero;
                    true
                } else if (b'1'..=b'9').contains(&c) {
                    self.step = Step::One;
                    true
                } else {
                    self.error(c, "in numeric literal")
                }
            }
            Step::One => {
                if c.is_ascii_digit() {
                    true
                } else {
                    self.zero(c)
                }
            }
            Step::Zero => self.zero(c),
            Step::Dot => {
                if c.is_ascii_digit() {
                    self.step = Step::Dot0;
                    true
                } else {
                    self.error(c, "after decimal point in numeric literal")
                }
            }
            Step::Dot0 => {
                if c.is_ascii_digit() {
                    true
                } else if c == b'e' || c == b'E' {
                    self.step = Step::E;
                    true
                } else {
                    self.end_value(c)
                }
            }
            Step::E => {
                if c == b'+' || c == b'-' {
                    self.step = Step::ESign;
                    true
                } else {
                    self.e_sign(c)
                }
            }
            Step::ESign => self.e_sign(c),
            Step::E0 => {
                if c.is_ascii_digit() {
                    true
                } else {
                    self.end_value(c)
                }
            }
            Step::Literal(rest, name) => {
                if c == rest[0] {
                    self.step = if rest.len() == 1 {
                        Step::EndValue
                    } else {
                        Step::Literal(&rest[1..], name)
                    };
                    true
                } else {
                    let expecting = char::from(rest[0]);
                    self.error(c, &format!("in literal {name} (expecting '{expecting}')"))
                }
            }
        }
    }

    fn begin_value(&mut self, c: u8) -> bool {
        if is_space(c) {
            return true;
        }
        match c {
            b'{' => {
                self.step = Step::BeginStringOrEmpty;
                self.push(c, Parse::ObjectKey)
            }
            b'[' => {
                self.step = Step::BeginValueOrEmpty;
                self.push(c, Parse::ArrayValue)
            }
            b'"' => {
                self.step = Step::InString;
                true
            }
            b'-' => {
                self.step = Step::Neg;
                true
            }
            b'0' => {
                self.step = Step::Zero;
                true
            }
            b't' => {
                self.step = Step::Literal(b"rue", "true");
                true
            }
            b'f' => {
                self.step = Step::Literal(b"alse", "false");
                true
            }
            b'n' => {
                self.step = Step::Literal(b"ull", "null");
                true
            }
            b'1'..=b'9' => {
                self.step = Step::One;
                true
            }
            _ => self.error(c, "looking for beginning of value"),
        }
    }

    fn begin_string(&mut self, c: u8) -> bool {
        if is_space(c) {
            true
        } else if c == b'"' {
            self.step = Step::InString;
            true
        } else {
            self.error(c, "looking for beginning of object key string")
        }
    }

    fn zero(&mut self, c: u8) -> bool {
        if c == b'.' {
            self.step = Step::Dot;
            true
        } else if c == b'e' || c == b'E' {
            self.step = Step::E;
            true
        } else {
            self.end_value(c)
        }
    }

    fn e_sign(&mut self, c: u8) -> bool {
        if c.is_ascii_digit() {
            self.step = Step::E0;
            true
        } else {
            self.error(c, "in exponent of numeric literal")
        }
    }

    fn end_top_byte(&mut self, c: u8) -> bool {
        // Go records the error but answers scanEnd; checkValid reports it at the end.
        if !is_space(c) && self.err.is_none() {
            self.error(c, "after top-level value");
        }
        true
    }

    fn end_value(&mut self, c: u8) -> bool {
        let Some(&ps) = self.parse.last() else {
            self.step = Step::EndTop;
            self.end_top = true;
            return self.end_top_byte(c);
        };
        if is_space(c) {
            self.step = Step::EndValue;
            return true;
        }
        match ps {
            Parse::ObjectKey => {
                if c == b':' {
                    *self.parse.last_mut().expect("non-empty") = Parse::ObjectValue;
                    self.step = Step::BeginValue;
                    true
                } else {
                    self.error(c, "after object key")
                }
            }
            Parse::ObjectValue => {
                if c == b',' {
                    *self.parse.last_mut().expect("non-empty") = Parse::ObjectKey;
                    self.step = Step::BeginString;
                    true
                } else if c == b'}' {
                    self.pop();
                    true
                } else {
                    self.error(c, "after object key:value pair")
                }
            }
            Parse::ArrayValue => {
                if c == b',' {
                    self.step = Step::BeginValue;
                    true
                } else if c == b']' {
                    self.pop();
                    true
                } else {
                    self.error(c, "after array element")
                }
            }
        }
    }
}

/// The error `json.Unmarshal` gives for `data` before decoding anything (`checkValid`), or
/// `None` when `data` is one well-formed JSON value.
pub fn syntax_error(data: &[u8]) -> Option<String> {
    let mut s = Scanner::new();
    for &c in data {
        if !s.feed(c) {
            return s.err;
        }
    }
    if s.err.is_some() {
        return s.err;
    }
    if s.end_top {
        return None;
    }
    // eof(): a space ends a pending number or reports a literal cut short.
    s.feed(b' ');
    if s.end_top && s.err.is_none() {
        return None;
    }
    Some(
        s.err
            .unwrap_or_else(|| "unexpected end of JSON input".to_string()),
    )
}

#[cfg(test)]
mod tests {
    use super::syntax_error;

    #[test]
    fn messages_are_gos() {
        // What kube-apiserver 1.35 answered for these bodies.
        for (body, want) in [
            (
                "{not json",
                Some("invalid character 'n' looking for beginning of object key string"),
            ),
            ("{\"a\":1", Some("unexpected end of JSON input")),
            ("[1,2", Some("unexpected end of JSON input")),
            ("{\"a\" 1}", Some("invalid character '1' after object key")),
            (
                "nul",
                Some("invalid character ' ' in literal null (expecting 'l')"),
            ),
            (
                "{\"a\":1}x",
                Some("invalid character 'x' after top-level value"),
            ),
            ("", Some("unexpected end of JSON input")),
            (
                "{\"a\":1 \"b\"}",
                Some("invalid character '\"' after object key:value pair"),
            ),
            ("[1 2]", Some("invalid character '2' after array element")),
            (
                "{'a':1}",
                Some("invalid character '\\'' looking for beginning of object key string"),
            ),
            (
                "\n{\"a\":\"\t\"}",
                Some("invalid character '\\t' in string literal"),
            ),
            (
                "1.",
                Some("invalid character ' ' after decimal point in numeric literal"),
            ),
            ("-x", Some("invalid character 'x' in numeric literal")),
            (
                "tx",
                Some("invalid character 'x' in literal true (expecting 'r')"),
            ),
            ("{\"a\":1}", None),
            (" [1, {\"b\": [true, false, null, -0.5e+3]}] ", None),
            ("12", None),
            ("{}", None),
        ] {
            assert_eq!(syntax_error(body.as_bytes()).as_deref(), want, "{body:?}");
        }
    }
}
