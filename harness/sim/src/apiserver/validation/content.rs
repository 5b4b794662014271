//! String formats and ranges, with apimachinery's messages: `pkg/util/validation/validation.go`
//! (DNS names, ports, ranges, env and config keys; "characters" in its length messages) and
//! `pkg/api/validate/content` (label keys and values; "bytes" in its length messages).

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`
pub const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL_ERR: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_ERR: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const DNS1035_LABEL_ERR: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";
const LABEL_KEY_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_KEY_ERR: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_ERR: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

fn dns1123_subdomain_fmt() -> String {
    format!("{0}(\\.{0})*", DNS1123_LABEL_FMT)
}

/// `validation.MaxLenError` ("characters").
pub fn max_len_error(n: usize) -> String {
    format!("must be no more than {} characters", n)
}

/// `content.MaxLenError` ("bytes").
fn content_max_len_error(n: usize) -> String {
    format!("must be no more than {} bytes", n)
}

/// `RegexError(msg, fmt, examples...)`.
pub fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{} (regex used for validation is '{}')", msg, fmt);
    }
    let mut s = format!("{} (e.g. ", msg);
    for (i, e) in examples.iter().enumerate() {
        if i > 0 {
            s.push_str(" or ");
        }
        s.push_str(&format!("'{}', ", e));
    }
    s.push_str(&format!("regex used for validation is '{}')", fmt));
    s
}

/// `InclusiveRangeError(lo, hi)`.
pub fn inclusive_range_error(lo: i64, hi: i64) -> String {
    format!("must be between {} and {}, inclusive", lo, hi)
}

fn lower_alnum(c: u8) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit()
}

/// Matches `[a-z0-9]([-a-z0-9]*[a-z0-9])?`.
fn matches_dns1123_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && lower_alnum(b[0])
        && lower_alnum(b[b.len() - 1])
        && b.iter().all(|&c| lower_alnum(c) || c == b'-')
}

fn matches_dns1123_subdomain(s: &str) -> bool {
    s.split('.').all(matches_dns1123_label)
}

/// `IsDNS1123Label`.
pub fn is_dns1123_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 63 {
        errs.push(max_len_error(63));
    }
    if !matches_dns1123_label(value) {
        if matches_dns1123_subdomain(value) {
            errs.push("must not contain dots".into());
        } else {
            errs.push(regex_error(
                DNS1123_LABEL_ERR,
                DNS1123_LABEL_FMT,
                &["my-name", "123-abc"],
            ));
        }
    }
    errs
}

/// `IsDNS1123Subdomain` (util/validation: "characters").
pub fn is_dns1123_subdomain(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 253 {
        errs.push(max_len_error(253));
    }
    if !matches_dns1123_subdomain(value) {
        errs.push(regex_error(
            DNS1123_SUBDOMAIN_ERR,
            &dns1123_subdomain_fmt(),
            &["example.com"],
        ));
    }
    errs
}

/// `content.IsDNS1123Subdomain` ("bytes"), used for label key prefixes.
fn content_dns1123_subdomain(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 253 {
        errs.push(content_max_len_error(253));
    }
    if !matches_dns1123_subdomain(value) {
        errs.push(regex_error(
            DNS1123_SUBDOMAIN_ERR,
            &dns1123_subdomain_fmt(),
            &["example.com"],
        ));
    }
    errs
}

/// `IsDNS1035Label`.
pub fn is_dns1035_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 63 {
        errs.push(max_len_error(63));
    }
    let b = value.as_bytes();
    let ok = !b.is_empty()
        && b[0].is_ascii_lowercase()
        && lower_alnum(b[b.len() - 1])
        && b.iter().all(|&c| lower_alnum(c) || c == b'-');
    if !ok {
        errs.push(regex_error(
            DNS1035_LABEL_ERR,
            DNS1035_LABEL_FMT,
            &["my-name", "abc-123"],
        ));
    }
    errs
}

fn alnum(c: u8) -> bool {
    c.is_ascii_alphanumeric()
}

/// Matches `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`.
fn matches_label_key_name(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && alnum(b[0])
        && alnum(b[b.len() - 1])
        && b.iter()
            .all(|&c| alnum(c) || c == b'-' || c == b'_' || c == b'.')
}

/// `IsQualifiedName` / `content.IsLabelKey`.
pub fn is_qualified_name(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.len() {
        1 => parts[0],
        2 => {
            let prefix = parts[0];
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                for m in content_dns1123_subdomain(prefix) {
                    errs.push(format!("prefix part {}", m));
                }
            }
            parts[1]
        }
        _ => {
            errs.push(format!(
                "a valid label key {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(LABEL_KEY_ERR, LABEL_KEY_FMT, &["MyName", "my.name", "123-abc"])
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        errs.push(format!("name part {}", content_max_len_error(63)));
    }
    if !matches_label_key_name(name) {
        errs.push(format!(
            "name part {}",
            regex_error(
                LABEL_KEY_ERR,
                LABEL_KEY_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errs
}

/// `IsValidLabelValue` / `content.IsLabelValue`.
pub fn is_valid_label_value(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 63 {
        errs.push(content_max_len_error(63));
    }
    if !(value.is_empty() || matches_label_key_name(value)) {
        errs.push(regex_error(
            LABEL_VALUE_ERR,
            &format!("({})?", LABEL_KEY_FMT),
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

/// `IsValidPortNum`.
pub fn is_valid_port_num(port: i64) -> Vec<String> {
    if (1..=65535).contains(&port) {
        vec![]
    } else {
        vec![inclusive_range_error(1, 65535)]
    }
}

/// `IsValidPortName` (IANA_SVC_NAME).
pub fn is_valid_port_name(port: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if port.len() > 15 {
        errs.push(max_len_error(15));
    }
    if port.is_empty()
        || !port
            .bytes()
            .all(|c| c == b'-' || c.is_ascii_lowercase() || c.is_ascii_digit())
    {
        errs.push("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".into());
    }
    if !port.bytes().any(|c| c.is_ascii_lowercase()) {
        errs.push("must contain at least one letter (a-z)".into());
    }
    if port.contains("--") {
        errs.push("must not contain consecutive hyphens".into());
    }
    if port.starts_with('-') || port.ends_with('-') {
        errs.push("must not begin or end with a hyphen".into());
    }
    errs
}

/// `IsConfigMapKey`.
pub fn is_config_map_key(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 253 {
        errs.push(max_len_error(253));
    }
    if value.is_empty()
        || !value
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_' || c == b'.')
    {
        errs.push(regex_error(
            "a valid config key must consist of alphanumeric characters, '-', '_' or '.'",
            "[-._a-zA-Z0-9]+",
            &["key.name", "KEY_NAME", "key-name"],
        ));
    }
    errs.extend(has_chdir_prefix(value));
    errs
}

fn has_chdir_prefix(value: &str) -> Vec<String> {
    match value {
        "." => vec!["must not be '.'".into()],
        ".." => vec!["must not be '..'".into()],
        v if v.starts_with("..") => vec!["must not start with '..'".into()],
        _ => vec![],
    }
}

/// `IsCIdentifier`.
pub fn is_c_identifier(value: &str) -> Vec<String> {
    let b = value.as_bytes();
    let ok = !b.is_empty()
        && (b[0].is_ascii_alphabetic() || b[0] == b'_')
        && b.iter().all(|&c| c.is_ascii_alphanumeric() || c == b'_');
    if ok {
        vec![]
    } else {
        vec![regex_error(
            "a valid C identifier must start with alphabetic character or '_', followed by a string of alphanumeric characters or '_'",
            "[A-Za-z_][A-Za-z0-9_]*",
            &["my_name", "MY_NAME", "MyName"],
        )]
    }
}

/// `IsValidPercent`.
pub fn is_valid_percent(percent: &str) -> Vec<String> {
    let ok = percent.len() >= 2
        && percent.ends_with('%')
        && percent[..percent.len() - 1]
            .bytes()
            .all(|c| c.is_ascii_digit());
    if ok {
        vec![]
    } else {
        vec![regex_error(
            "a valid percent string must be a numeric string followed by an ending '%'",
            "[0-9]+%",
            &["1%", "93%"],
        )]
    }
}

/// `path.IsValidPathSegmentName` (names of objects without a stricter rule, e.g. RBAC).
pub fn is_valid_path_segment_name(name: &str) -> Vec<String> {
    let mut errs = Vec::new();
    for illegal in [".", ".."] {
        if name == illegal {
            errs.push(format!("may not be '{}'", illegal));
        }
    }
    for illegal in ["/", "%"] {
        if name.contains(illegal) {
            errs.push(format!("may not contain '{}'", illegal));
        }
    }
    errs
}

/// `path.IsValidPathSegmentPrefix` (generateName of such objects).
pub fn is_valid_path_segment_prefix(name: &str) -> Vec<String> {
    let mut errs = Vec::new();
    for illegal in ["/", "%"] {
        if name.contains(illegal) {
            errs.push(format!("may not contain '{}'", illegal));
        }
    }
    errs
}

/// `maskTrailingDash`: a generateName may end in '-'.
pub fn mask_trailing_dash(name: &str) -> String {
    if name.len() > 1 && name.ends_with('-') {
        format!("{}a", &name[..name.len() - 2])
    } else {
        name.to_string()
    }
}

/// The ValidateNameFuncs of apimachinery's `api/validation/generic.go` and `path`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameRule {
    /// `NameIsDNSSubdomain`.
    Subdomain,
    /// `NameIsDNSLabel`.
    Label,
    /// `NameIsDNS1035Label`.
    Dns1035,
    /// `path.ValidatePathSegmentName`.
    PathSegment,
}

impl NameRule {
    pub fn check(self, name: &str, prefix: bool) -> Vec<String> {
        match self {
            NameRule::Subdomain => is_dns1123_subdomain(&if prefix {
                mask_trailing_dash(name)
            } else {
                name.to_string()
            }),
            NameRule::Label => is_dns1123_label(&if prefix {
                mask_trailing_dash(name)
            } else {
                name.to_string()
            }),
            NameRule::Dns1035 => is_dns1035_label(&if prefix {
                mask_trailing_dash(name)
            } else {
                name.to_string()
            }),
            NameRule::PathSegment => {
                if prefix {
                    is_valid_path_segment_prefix(name)
                } else {
                    is_valid_path_segment_name(name)
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_and_messages() {
        assert!(is_dns1123_label("a-1").is_empty());
        assert_eq!(is_dns1123_label("a.b"), vec!["must not contain dots"]);
        assert_eq!(
            is_dns1123_label("Bad_Name")[0],
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
        );
        let long = format!("csi-{}", "a".repeat(64));
        assert!(is_dns1123_subdomain(&long).is_empty());
        assert_eq!(
            is_dns1123_label(&long)[0],
            "must be no more than 63 characters"
        );
        assert!(is_qualified_name("example.com/My_name.1").is_empty());
        assert_eq!(is_qualified_name("a/b/c").len(), 1);
        assert!(is_valid_label_value("").is_empty());
        assert_eq!(is_valid_label_value("-a").len(), 1);
        assert_eq!(mask_trailing_dash("web-"), "wea");
        assert!(NameRule::Subdomain.check("web-", true).is_empty());
        assert!(is_valid_port_name("http").is_empty());
        assert_eq!(is_valid_port_name("80").len(), 1);
    }
}
