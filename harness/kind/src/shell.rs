//! Shell quoting for printing commands exactly as they would be typed.

/// Quote one word for a POSIX shell: bare when it is made of safe characters only, otherwise
/// in single quotes (a single quote inside becomes `'\''`).
pub fn quote(word: &str) -> String {
    let safe = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_./:=,@%+-".contains(c));
    if safe {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// A command line from an argv.
pub fn join(argv: &[String]) -> String {
    argv.iter().map(|a| quote(a)).collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case("kubelet", "kubelet")]
    #[case(
        "--kubeconfig=/etc/kubernetes/admin.conf",
        "--kubeconfig=/etc/kubernetes/admin.conf"
    )]
    #[case("", "''")]
    #[case("a b", "'a b'")]
    #[case("it's", r"'it'\''s'")]
    #[case("$HOME", "'$HOME'")]
    fn quotes_words(#[case] w: &str, #[case] want: &str) {
        assert_eq!(quote(w), want);
    }

    #[test]
    fn joins_an_argv() {
        let argv: Vec<String> = ["sh", "-c", "echo hi; exit 1"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(join(&argv), "sh -c 'echo hi; exit 1'");
    }
}
