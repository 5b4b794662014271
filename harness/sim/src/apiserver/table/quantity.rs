//! `resource.Quantity` parsing and canonical formatting.

// ---------------------------------------------------------------------------
// resource.Quantity canonicalisation
// ---------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum QuantityFormat {
    DecimalSI,
    BinarySI,
    DecimalExponent,
}

/// value = mantissa * 10^exp10
#[derive(Debug, Clone, Copy)]
pub(super) struct Quantity {
    mantissa: i128,
    exp10: i32,
    format: QuantityFormat,
}

fn pow10(n: u32) -> Option<i128> {
    10i128.checked_pow(n)
}

pub(super) fn parse_quantity(text: &str) -> Option<Quantity> {
    let t = text.trim();
    let b = t.as_bytes();
    let mut i = 0;
    let mut negative = false;
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        negative = b[i] == b'-';
        i += 1;
    }
    let int_start = i;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    let int_part = &t[int_start..i];
    let mut frac_part = "";
    if i < b.len() && b[i] == b'.' {
        i += 1;
        let frac_start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        frac_part = &t[frac_start..i];
    }
    if int_part.is_empty() && frac_part.is_empty() {
        return None;
    }
    let suffix = &t[i..];
    let (format, bin_pow, dec_exp): (QuantityFormat, u32, i32) = match suffix {
        "" => (QuantityFormat::DecimalSI, 0, 0),
        "Ki" => (QuantityFormat::BinarySI, 10, 0),
        "Mi" => (QuantityFormat::BinarySI, 20, 0),
        "Gi" => (QuantityFormat::BinarySI, 30, 0),
        "Ti" => (QuantityFormat::BinarySI, 40, 0),
        "Pi" => (QuantityFormat::BinarySI, 50, 0),
        "Ei" => (QuantityFormat::BinarySI, 60, 0),
        "n" => (QuantityFormat::DecimalSI, 0, -9),
        "u" => (QuantityFormat::DecimalSI, 0, -6),
        "m" => (QuantityFormat::DecimalSI, 0, -3),
        "k" => (QuantityFormat::DecimalSI, 0, 3),
        "M" => (QuantityFormat::DecimalSI, 0, 6),
        "G" => (QuantityFormat::DecimalSI, 0, 9),
        "T" => (QuantityFormat::DecimalSI, 0, 12),
        "P" => (QuantityFormat::DecimalSI, 0, 15),
        "E" => (QuantityFormat::DecimalSI, 0, 18),
        s if s.len() > 1 && (s.starts_with('e') || s.starts_with('E')) => {
            let exp = &s[1..];
            let digits = exp.strip_prefix(['+', '-']).unwrap_or(exp);
            if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
                return None;
            }
            (QuantityFormat::DecimalExponent, 0, exp.parse::<i32>().ok()?)
        }
        _ => return None,
    };
    let digits = format!("{}{}", int_part, frac_part);
    let digits = digits.trim_start_matches('0');
    if digits.len() > 36 {
        return None;
    }
    let mut mantissa: i128 = if digits.is_empty() {
        0
    } else {
        digits.parse().ok()?
    };
    mantissa = mantissa.checked_mul(1i128.checked_shl(bin_pow)?)?;
    let mut exp10 = dec_exp.checked_sub(frac_part.len() as i32)?;
    if exp10 > 40 {
        return None;
    }
    // Round up (away from zero) to nano precision, as ParseQuantity does.
    if exp10 < -9 && mantissa != 0 {
        let shift = u32::try_from(-9i64 - i64::from(exp10)).unwrap_or(u32::MAX);
        mantissa = match pow10(shift) {
            Some(div) => {
                let (q, r) = (mantissa / div, mantissa % div);
                if r != 0 {
                    q + 1
                } else {
                    q
                }
            }
            None => 1,
        };
        exp10 = -9;
    }
    let mut format = format;
    if format == QuantityFormat::BinarySI && mantissa != 0 && exp10 < 0 {
        if let Some(p) = pow10((-exp10) as u32) {
            if mantissa < p {
                format = QuantityFormat::DecimalSI; // 0 < value < 1
            }
        }
    }
    if negative {
        mantissa = -mantissa;
    }
    Some(Quantity {
        mantissa,
        exp10,
        format,
    })
}

/// `Quantity.Add`: exact sum; a zero left operand takes the right one's format.
pub(super) fn add(a: Quantity, b: Quantity) -> Option<Quantity> {
    let exp10 = a.exp10.min(b.exp10);
    let scale = |q: Quantity| {
        pow10(u32::try_from(q.exp10 - exp10).ok()?).and_then(|p| q.mantissa.checked_mul(p))
    };
    Some(Quantity {
        mantissa: scale(a)?.checked_add(scale(b)?)?,
        exp10,
        format: if a.mantissa == 0 { b.format } else { a.format },
    })
}

/// `resource.Quantity{Format: resource.DecimalSI}`: the zero the quota evaluators start from.
pub(super) fn zero() -> Quantity {
    Quantity {
        mantissa: 0,
        exp10: 0,
        format: QuantityFormat::DecimalSI,
    }
}

/// Canonical text of a parsed quantity (`None` only on arithmetic overflow).
pub(super) fn format_quantity(q: Quantity) -> Option<String> {
    if q.mantissa == 0 {
        return Some("0".to_string());
    }
    let mut format = q.format;
    if format == QuantityFormat::BinarySI {
        // Integer value, if it is one.
        let whole: Option<i128> = if q.exp10 >= 0 {
            pow10(q.exp10 as u32).and_then(|p| q.mantissa.checked_mul(p))
        } else {
            pow10((-q.exp10) as u32).and_then(|p| {
                if q.mantissa % p == 0 {
                    Some(q.mantissa / p)
                } else {
                    None
                }
            })
        };
        match whole {
            Some(v) if v.abs() >= 1024 => {
                let mut v = v;
                let mut k = 0;
                while k < 6 && v % 1024 == 0 {
                    v /= 1024;
                    k += 1;
                }
                let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"][k];
                return Some(format!("{}{}", v, suffix));
            }
            _ => format = QuantityFormat::DecimalSI,
        }
    }
    let mut m = q.mantissa;
    let mut e = q.exp10;
    while m % 10 == 0 {
        m /= 10;
        e += 1;
    }
    while e.rem_euclid(3) != 0 {
        m = m.checked_mul(10)?;
        e -= 1;
    }
    if format == QuantityFormat::DecimalExponent {
        return Some(if e == 0 {
            m.to_string()
        } else {
            format!("{}e{}", m, e)
        });
    }
    if e > 18 {
        m = m.checked_mul(pow10((e - 18) as u32)?)?;
        e = 18;
    }
    let suffix = match e {
        -9 => "n",
        -6 => "u",
        -3 => "m",
        0 => "",
        3 => "k",
        6 => "M",
        9 => "G",
        12 => "T",
        15 => "P",
        18 => "E",
        _ => return None,
    };
    Some(format!("{}{}", m, suffix))
}
