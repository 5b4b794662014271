//! The scenario loader as a fuzz target, shared by the cargo-fuzz target (`harness/fuzz`) and
//! the replay test (`harness/faultline/tests/fuzz_replay.rs`). Bytes are a scenario file (or, after a first line
//! `#suite`, a suite config) loaded against the pack's own directory and suite, so references
//! to manifests and controllers can resolve and validation runs to its end.
//!
//! Invariants, each a panic (= a fuzzer crash):
//! - loading never panics, whatever the bytes;
//! - every diagnostic names the file it was given, a line inside the source (or one past its
//!   end, for "unexpected end"), a column from 1, and a non-empty message;
//! - a scenario that loads serializes back to YAML that loads again (the typed model and the
//!   validator agree on what is valid).

use crate::loader::{self, Diagnostic, LoadedSuite};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The pack's directory: manifests and the suite config the fuzzed scenarios may reference.
pub fn pack_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios")
}

fn pack_suite() -> &'static LoadedSuite {
    static SUITE: OnceLock<LoadedSuite> = OnceLock::new();
    SUITE.get_or_init(|| {
        let file = pack_dir().join(loader::SUITE_FILE);
        loader::load_suite(&file)
            .unwrap_or_else(|d| panic!("the pack's suite config does not load: {d:?}"))
    })
}

pub fn scenario_loader(data: &[u8]) {
    let Ok(src) = std::str::from_utf8(data) else {
        return;
    };
    if let Some(rest) = src.strip_prefix("#suite\n") {
        let file = pack_dir().join("fuzz-suite.yaml");
        if let Err(diags) = loader::load_suite_str(&file, rest) {
            check_diagnostics(&file, rest, &diags);
        }
        return;
    }
    let file = pack_dir().join("fuzz-input.yaml");
    match loader::load_scenario_str(&file, src, pack_suite()) {
        Ok(loaded) => {
            let again =
                serde_yaml::to_string(&loaded.scenario).expect("a loaded scenario serializes");
            if let Err(d) = loader::load_scenario_str(&file, &again, pack_suite()) {
                panic!("a scenario that loaded does not load after a YAML round trip: {d:?}\n--- input\n{src}\n--- serialized\n{again}");
            }
        }
        Err(diags) => check_diagnostics(&file, src, &diags),
    }
}

fn check_diagnostics(file: &Path, src: &str, diags: &[Diagnostic]) {
    assert!(!diags.is_empty(), "an error without diagnostics");
    let lines = yaml_line_count(src);
    for d in diags {
        assert_eq!(d.file, file, "diagnostic names another file: {d}");
        assert!(
            d.line >= 1 && d.line <= lines + 1,
            "diagnostic line {} outside the {lines}-line source: {d}",
            d.line
        );
        assert!(d.col >= 1, "diagnostic column {} : {d}", d.col);
        assert!(
            !d.message.trim().is_empty(),
            "diagnostic without a message at {}:{}",
            d.line,
            d.col
        );
    }
}

/// Lines as YAML (and editors) count them: `\n`, `\r\n` and a lone `\r` each end a line.
fn yaml_line_count(src: &str) -> usize {
    let b = src.as_bytes();
    let breaks = (0..b.len())
        .filter(|&i| b[i] == b'\n' || (b[i] == b'\r' && b.get(i + 1) != Some(&b'\n')))
        .count();
    breaks + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pack_scenario_loads_and_round_trips() {
        let mut n = 0;
        for e in std::fs::read_dir(pack_dir()).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "yaml")
                && p.file_name().unwrap() != loader::SUITE_FILE
            {
                let src = std::fs::read_to_string(&p).unwrap();
                loader::load_scenario_str(&p, &src, pack_suite())
                    .unwrap_or_else(|d| panic!("{}: {d:?}", p.display()));
                scenario_loader(src.as_bytes());
                n += 1;
            }
        }
        assert!(n >= 9, "only {n} scenarios in the pack");
    }

    #[test]
    fn lines_end_at_lf_crlf_and_a_lone_cr() {
        assert_eq!(yaml_line_count("a"), 1);
        assert_eq!(yaml_line_count("a\nb\r\nc\rd\r\r"), 6);
    }

    #[test]
    #[should_panic(expected = "outside the")]
    fn a_diagnostic_past_the_source_is_caught() {
        let file = pack_dir().join("fuzz-input.yaml");
        check_diagnostics(
            &file,
            "a: 1\n",
            &[Diagnostic {
                file: file.clone(),
                line: 9,
                col: 1,
                message: "x".into(),
            }],
        );
    }
}
