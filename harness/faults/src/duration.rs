//! Durations as scenarios spell them: `500ms`, `30s`, `2m`, `1h30m`, `1m30s`.

use schemars::JsonSchema;
use serde::{de, Deserialize, Deserializer, Serialize, Serializer};
use std::borrow::Cow;
use std::fmt;
use std::time::Duration;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Dur(pub Duration);

impl Dur {
    pub fn secs(s: u64) -> Dur {
        Dur(Duration::from_secs(s))
    }
    pub fn get(self) -> Duration {
        self.0
    }
}

pub const DURATION_HELP: &str =
    "expected a duration: a number followed by ms, s, m or h (e.g. 500ms, 30s, 2m, 1h30m)";

/// The longest duration accepted: Go's `time.Duration` (int64 nanoseconds, about 292 years),
/// which is what Kubernetes and kubectl accept too. Beyond it deadlines stop meaning anything.
pub const MAX_DURATION: Duration = Duration::new(9_223_372_036, 854_775_807);

pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    if t.is_empty() {
        return Err(format!("invalid duration `{s}`: {DURATION_HELP}"));
    }
    let mut total = Duration::ZERO;
    let mut rest = t;
    while !rest.is_empty() {
        let num_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if num_end == 0 {
            return Err(format!("invalid duration `{s}`: {DURATION_HELP}"));
        }
        let value: f64 = rest[..num_end]
            .parse()
            .map_err(|_| format!("invalid duration `{s}`: {DURATION_HELP}"))?;
        rest = &rest[num_end..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit = &rest[..unit_end];
        rest = &rest[unit_end..];
        let factor = match unit {
            "ms" => 0.001,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => {
                return Err(format!(
                    "invalid duration `{s}`: unknown unit `{unit}`; {DURATION_HELP}"
                ))
            }
        };
        let out_of_range = || {
            format!(
                "invalid duration `{s}`: out of range, the longest is {} (2562047h)",
                format_duration(MAX_DURATION)
            )
        };
        let part = Duration::try_from_secs_f64(value * factor).map_err(|_| out_of_range())?;
        total = total
            .checked_add(part)
            .filter(|t| *t <= MAX_DURATION)
            .ok_or_else(out_of_range)?;
    }
    Ok(total)
}

/// `1m30s`, `2.5s`, `120ms` - the shortest faithful spelling.
pub fn format_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms == 0 {
        return "0s".into();
    }
    if ms < 1000 {
        return format!("{ms}ms");
    }
    if !ms.is_multiple_of(1000) && ms < 60_000 {
        return format!("{:.1}s", d.as_secs_f64());
    }
    let secs = d.as_secs();
    let (h, m, s) = (secs / 3600, (secs % 3600) / 60, secs % 60);
    let mut out = String::new();
    if h > 0 {
        out += &format!("{h}h");
    }
    if m > 0 {
        out += &format!("{m}m");
    }
    if s > 0 || out.is_empty() {
        out += &format!("{s}s");
    }
    out
}

impl fmt::Display for Dur {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_duration(self.0))
    }
}

impl Serialize for Dur {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format_duration(self.0))
    }
}

impl<'de> Deserialize<'de> for Dur {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> de::Visitor<'de> for V {
            type Value = Dur;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a duration such as 30s or 2m")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Dur, E> {
                parse_duration(v).map(Dur).map_err(E::custom)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Dur, E> {
                Err(E::custom(format!(
                    "invalid duration `{v}`: a unit is required; {DURATION_HELP}"
                )))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Dur, E> {
                Err(E::custom(format!(
                    "invalid duration `{v}`: a unit is required; {DURATION_HELP}"
                )))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Dur, E> {
                Err(E::custom(format!(
                    "invalid duration `{v}`: a unit is required; {DURATION_HELP}"
                )))
            }
        }
        d.deserialize_any(V)
    }
}

impl JsonSchema for Dur {
    fn schema_name() -> Cow<'static, str> {
        "Duration".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "pattern": "^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$",
            "description": "A duration: a number followed by ms, s, m or h, e.g. 500ms, 30s, 2m, 1h30m",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case("500ms", 500)]
    #[case("30s", 30_000)]
    #[case("2m", 120_000)]
    #[case("1h30m", 5_400_000)]
    #[case("1m30s", 90_000)]
    #[case("2.5s", 2_500)]
    fn parses(#[case] s: &str, #[case] ms: u128) {
        assert_eq!(parse_duration(s).unwrap().as_millis(), ms);
    }

    #[rstest]
    #[case("30")]
    #[case("s")]
    #[case("3x")]
    #[case("")]
    #[case("18446744073709551616ms")]
    #[case("99999999999999999999999999999h")]
    #[case("2562048h")]
    fn rejects(#[case] s: &str) {
        assert!(parse_duration(s).is_err(), "{s}");
    }

    #[rstest]
    #[case(90_000, "1m30s")]
    #[case(2_500, "2.5s")]
    #[case(120, "120ms")]
    #[case(3_600_000, "1h")]
    fn formats(#[case] ms: u64, #[case] s: &str) {
        assert_eq!(format_duration(Duration::from_millis(ms)), s);
    }
}
