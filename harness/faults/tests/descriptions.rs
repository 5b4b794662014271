//! The catalogue's descriptions are what `faultline schema` shows (and so what editors show):
//! they must say what the providers do. docs/scenarios.md repeats each one in its table of
//! operations, and every text a description quotes from a component (`...` spans that are not
//! parameter names) must be one docs/fidelity.md documents, so a description cannot claim a
//! message or mechanism the fidelity doc does not have.

use faultline_faults::{NodeOperation, Operation, RunnerOperation};
use std::collections::BTreeMap;
use std::path::Path;

fn doc(name: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs")
        .join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Every key's description, in catalogue order.
fn descriptions() -> Vec<(&'static str, &'static str)> {
    Operation::examples("w")
        .iter()
        .map(|o| (o.key(), o.description()))
        .collect()
}

/// The rows of the table whose header is `| operation | what it does |`: key -> text.
fn what_it_does_table(md: &str) -> BTreeMap<String, Vec<String>> {
    let mut rows: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut inside = false;
    for line in md.lines() {
        if line.starts_with("| operation | what it does |") {
            inside = true;
            continue;
        }
        if !inside {
            continue;
        }
        if !line.starts_with('|') {
            break;
        }
        let cells: Vec<&str> = line.trim_matches('|').splitn(2, '|').collect();
        let [key, text] = cells[..] else {
            panic!("not a two-column row: {line}")
        };
        let key = key.trim().trim_matches('`');
        if key.starts_with("---") {
            continue;
        }
        rows.entry(key.to_string())
            .or_default()
            .push(text.trim().to_string());
    }
    rows
}

/// Inline code spans of a text.
fn code_spans(s: &str) -> Vec<&str> {
    s.split('`')
        .enumerate()
        .filter(|(i, _)| i % 2 == 1)
        .map(|(_, t)| t)
        .collect()
}

#[test]
fn every_description_is_there_and_in_the_scenarios_table_word_for_word() {
    let table = what_it_does_table(&doc("scenarios.md"));
    let mut problems = vec![];
    for (key, text) in descriptions() {
        assert!(text.len() > 20, "{key}: {text:?}");
        match table.get(key).map(Vec::as_slice) {
            Some([row]) if row == text => {}
            Some([row]) => problems.push(format!(
                "{key}: docs/scenarios.md says\n  {row}\nthe catalogue says\n  {text}"
            )),
            Some(rows) => problems.push(format!("{key}: {} rows", rows.len())),
            None => problems.push(format!("{key}: no row in docs/scenarios.md")),
        }
    }
    let keys: Vec<&str> = descriptions().iter().map(|(k, _)| *k).collect();
    for key in table.keys() {
        if !keys.contains(&key.as_str()) {
            problems.push(format!("{key}: a row, but no such operation"));
        }
    }
    assert!(
        problems.is_empty(),
        "the table of what each operation does (docs/scenarios.md) and the catalogue disagree:\n{}",
        problems.join("\n")
    );
}

/// What a description quotes is a component's text or a name, and docs/fidelity.md has it.
#[test]
fn what_a_description_quotes_is_in_the_fidelity_doc() {
    let fidelity = doc("fidelity.md")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let mut gen = schemars::SchemaGenerator::default();
    // Parameter names are quoted as names, not as texts of a component.
    let entries: Vec<_> = Operation::schema_entries(&mut gen)
        .into_iter()
        .map(|(_, s, _)| s)
        .collect();
    let params = serde_json::to_string(&(entries, gen.definitions())).unwrap();
    let mut quoted = 0;
    for (key, text) in descriptions() {
        for span in code_spans(text) {
            if params.contains(&format!("\"{span}\"")) {
                continue;
            }
            for part in span.split("...").map(str::trim).filter(|p| !p.is_empty()) {
                quoted += 1;
                assert!(
                    fidelity.contains(part),
                    "{key}'s description quotes `{part}`, which docs/fidelity.md does not have"
                );
            }
        }
    }
    assert!(quoted >= 5, "the descriptions quote texts: {quoted}");
}

/// Claims the descriptions made before issue #33 (item 12), each beside the fidelity doc's
/// sentence that contradicts it: the sentence must still be there, the claim must not come back.
#[test]
fn claims_the_fidelity_doc_contradicts_are_gone() {
    let fidelity = doc("fidelity.md")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let contradicted: &[(&str, &str, &str)] = &[
        (
            "csiPluginDown",
            "(driver unregistered)",
            "A crash-looping plugin container leaves the driver registered",
        ),
        (
            "staleDeviceMount",
            "serialized volume operation queue",
            "a pending operation blocks only its own volume",
        ),
        (
            "kubeletHang",
            "stops syncing pods and heartbeats",
            "(sync loop stuck) keeps its Lease and stays Ready",
        ),
        (
            "kubeletWorkersSaturated",
            "hold the kubelet's pod sync workers",
            "the PLEG relist hangs on them",
        ),
    ];
    let all = descriptions();
    for (key, claim, sentence) in contradicted {
        assert!(
            fidelity.contains(sentence),
            "docs/fidelity.md no longer says {sentence:?}: update this test"
        );
        let (_, text) = all.iter().find(|(k, _)| k == key).unwrap();
        assert!(
            !text.contains(claim),
            "{key}: {claim:?} contradicts docs/fidelity.md ({sentence:?})"
        );
    }
}

#[test]
fn the_new_operations_read_with_their_defaults() {
    use faultline_faults::{TaintEffect, LONGHORN_CSI_DRIVER};
    let node = |src: &str| serde_yaml::from_str::<NodeOperation>(src).unwrap();
    match node("csiDriverUnregistered: {node: w}") {
        NodeOperation::CsiDriverUnregistered(d) => assert_eq!(d.driver, LONGHORN_CSI_DRIVER),
        other => panic!("{other:?}"),
    }
    assert_eq!(node("nodePowerOff: {node: w}").node(), Some("w"));
    let runner = |src: &str| serde_yaml::from_str::<RunnerOperation>(src);
    match runner("outOfServiceTaint: {node: w}").unwrap() {
        RunnerOperation::OutOfServiceTaint(t) => {
            assert_eq!(
                (t.effect, t.value.as_str()),
                (TaintEffect::NoExecute, "nodeshutdown")
            )
        }
        other => panic!("{other:?}"),
    }
    match runner("outOfServiceTaint: {node: w, effect: NoSchedule, value: maintenance}").unwrap() {
        RunnerOperation::OutOfServiceTaint(t) => {
            assert_eq!(
                (t.effect.as_str(), t.value.as_str()),
                ("NoSchedule", "maintenance")
            )
        }
        other => panic!("{other:?}"),
    }
    let e = runner("outOfServiceTaint: {node: w, effect: PreferNoSchedule}")
        .unwrap_err()
        .to_string();
    assert!(e.contains("NoExecute") && e.contains("NoSchedule"), "{e}");
}
