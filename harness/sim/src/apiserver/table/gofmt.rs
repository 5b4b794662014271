//! Go-compatible printing of JSON values, as `jsonpath.PrintResults` writes them.

use serde_json::Value;

// ---------------------------------------------------------------------------
// Go-compatible value printing (what `jsonpath.PrintResults` writes)
// ---------------------------------------------------------------------------

/// `fmt.Fprint`-style text for scalars, compact `encoding/json` for
/// objects/arrays, `<no value>` for null.
pub(super) fn go_print_value(v: &Value) -> String {
    match v {
        Value::Null => "<no value>".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::String(s) => s.clone(),
        Value::Number(n) => match n.as_i64() {
            Some(i) => i.to_string(),
            None => go_format_float_v(n.as_f64().unwrap_or(0.0)),
        },
        Value::Array(_) | Value::Object(_) => {
            let mut out = String::new();
            write_go_json(v, &mut out);
            out
        }
    }
}

/// Shortest round-trip digits of |f|: (negative, digits, decimal point
/// position) with |f| = 0.d1d2d3... * 10^dp.
fn shortest_digits(f: f64) -> (bool, String, i32) {
    let text = format!("{:e}", f);
    let (neg, text) = match text.strip_prefix('-') {
        Some(t) => (true, t.to_string()),
        None => (false, text),
    };
    let (mant, exp) = text.split_once('e').unwrap_or((text.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mant.chars().filter(|c| c.is_ascii_digit()).collect();
    (neg, digits, exp + 1)
}

fn fmt_exponent(neg: bool, digits: &str, dp: i32) -> String {
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    out.push_str(&digits[..1]);
    if digits.len() > 1 {
        out.push('.');
        out.push_str(&digits[1..]);
    }
    let exp = if digits == "0" { 0 } else { dp - 1 };
    out.push('e');
    out.push(if exp < 0 { '-' } else { '+' });
    out.push_str(&format!("{:02}", exp.abs()));
    out
}

fn fmt_fixed(neg: bool, digits: &str, dp: i32) -> String {
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    let n = digits.len() as i32;
    if digits == "0" {
        out.push('0');
    } else if dp <= 0 {
        out.push_str("0.");
        out.push_str(&"0".repeat((-dp) as usize));
        out.push_str(digits);
    } else if dp >= n {
        out.push_str(digits);
        out.push_str(&"0".repeat((dp - n) as usize));
    } else {
        out.push_str(&digits[..dp as usize]);
        out.push('.');
        out.push_str(&digits[dp as usize..]);
    }
    out
}

/// Go's `%v` for float64: `%g` with the shortest representation, which
/// switches to exponent form when the decimal exponent is < -4 or >= 6
/// (`1e+06`, `123456`, `1e-05`, `0.0001`).
pub(super) fn go_format_float_v(f: f64) -> String {
    if f.is_nan() {
        return "NaN".to_string();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf" } else { "-Inf" }.to_string();
    }
    let (neg, digits, dp) = shortest_digits(f);
    let exp = dp - 1;
    if digits != "0" && !(-4..6).contains(&exp) {
        fmt_exponent(neg, &digits, dp)
    } else {
        fmt_fixed(neg, &digits, dp)
    }
}

/// encoding/json float formatting.
pub(super) fn go_json_float(f: f64) -> String {
    let abs = f.abs();
    let (neg, digits, dp) = shortest_digits(f);
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let mut text = fmt_exponent(neg, &digits, dp);
        // Go cleans up e-09 to e-9.
        let b = text.as_bytes();
        let n = b.len();
        if n >= 4 && b[n - 4] == b'e' && b[n - 3] == b'-' && b[n - 2] == b'0' {
            text.remove(n - 2);
        }
        text
    } else {
        fmt_fixed(neg, &digits, dp)
    }
}

/// Compact JSON the way Go's encoding/json writes a decoded
/// `interface{}` tree: sorted object keys, HTML-safe string escaping.
fn write_go_json(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match n.as_i64() {
            Some(i) => out.push_str(&i.to_string()),
            None => out.push_str(&go_json_float(n.as_f64().unwrap_or(0.0))),
        },
        Value::String(s) => write_go_json_string(s, out),
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_go_json(x, out);
            }
            out.push(']');
        }
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_go_json_string(k, out);
                out.push(':');
                write_go_json(&m[k.as_str()], out);
            }
            out.push('}');
        }
    }
}

fn write_go_json_string(s: &str, out: &mut String) {
    out.push('"');
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                out.push_str(&format!("\\u{:04x}", ch as u32));
            }
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}
