//! The examples in docs/scenarios.md are valid: the suite config and the scenario load without
//! diagnostics (the files they reference are stubbed).

use faultline::loader::{load_scenario, load_suite};
use std::path::Path;

fn yaml_blocks(md: &str) -> Vec<String> {
    md.split("```yaml\n")
        .skip(1)
        .map(|b| b.split("```").next().unwrap().to_string())
        .collect()
}

fn stub(base: &Path, rel: &str) {
    let p = base.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(
        p,
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: stub}\n",
    )
    .unwrap();
}

#[test]
fn documented_examples_validate() {
    let md = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/scenarios.md"),
    )
    .unwrap();
    let blocks = yaml_blocks(&md);
    let scenario = blocks
        .iter()
        .find(|b| b.contains("kind: Scenario"))
        .expect("a scenario example");
    let suite = blocks
        .iter()
        .find(|b| b.contains("kind: Suite"))
        .expect("a suite example");
    let dir = tempfile::tempdir().unwrap();
    let scen_dir = dir.path().join("scenarios");
    std::fs::create_dir_all(&scen_dir).unwrap();
    let v: serde_yaml::Value = serde_yaml::from_str(suite).unwrap();
    for c in v["crds"].as_sequence().unwrap() {
        stub(&scen_dir, c.as_str().unwrap());
    }
    // The files a controller definition references: kind manifests, RBAC manifests, and the
    // go.mod and go.sum of a Go module it is built from.
    for c in v["controllers"].as_mapping().unwrap().values() {
        for key in ["manifests", "rbac"] {
            for m in c[key].as_sequence().into_iter().flatten() {
                stub(&scen_dir, m.as_str().unwrap());
            }
        }
        if let Some(module) = c["build"]["go"]["module"].as_str() {
            stub(&scen_dir, &format!("{module}/go.mod"));
            stub(&scen_dir, &format!("{module}/go.sum"));
        }
    }
    std::fs::write(scen_dir.join("faultline.yaml"), suite).unwrap();
    let suite = load_suite(&scen_dir.join("faultline.yaml")).unwrap_or_else(|d| {
        panic!(
            "{}",
            d.iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join("\n")
        )
    });
    for line in scenario.lines() {
        if let Some(f) = line.trim().strip_prefix("- apply: ") {
            stub(&scen_dir, f.trim());
        }
    }
    let f = scen_dir.join("example.yaml");
    std::fs::write(&f, scenario).unwrap();
    let s = load_scenario(&f, &suite).unwrap_or_else(|d| {
        panic!(
            "{}",
            d.iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join("\n")
        )
    });
    assert_eq!(s.scenario.metadata.name, "stale-csi-mount");
    assert_eq!(s.scenario.spec.invariants.len(), 2);
}

/// docs/scenarios.md against `faultline schema` (and `--suite`): every field, enum value and
/// operation the schema has is documented, and every field the reference tables and the
/// expectation specs name exists in the schema.
mod against_the_schema {
    use std::collections::BTreeSet;
    use std::path::Path;

    fn schema(args: &[&str]) -> serde_json::Value {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_faultline"))
            .arg("schema")
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success());
        serde_json::from_slice(&out.stdout).unwrap()
    }

    /// Property names and string enum values, anywhere in a schema.
    fn collect(
        v: &serde_json::Value,
        fields: &mut BTreeSet<String>,
        values: &mut BTreeSet<String>,
    ) {
        match v {
            serde_json::Value::Object(m) => {
                if let Some(serde_json::Value::Object(props)) = m.get("properties") {
                    fields.extend(props.keys().cloned());
                }
                for key in ["enum", "const"] {
                    match m.get(key) {
                        Some(serde_json::Value::Array(a)) => {
                            values.extend(a.iter().filter_map(|x| x.as_str().map(String::from)))
                        }
                        Some(serde_json::Value::String(s)) => {
                            values.insert(s.clone());
                        }
                        _ => {}
                    }
                }
                for x in m.values() {
                    collect(x, fields, values);
                }
            }
            serde_json::Value::Array(a) => a.iter().for_each(|x| collect(x, fields, values)),
            _ => {}
        }
    }

    /// Inline code spans (`...`), possibly across lines.
    fn code_spans(md: &str) -> Vec<String> {
        let prose: String = md
            .split("```")
            .enumerate()
            .filter(|(i, _)| i % 2 == 0)
            .map(|(_, t)| t)
            .collect::<Vec<_>>()
            .join("\n");
        prose
            .split('`')
            .enumerate()
            .filter(|(i, _)| i % 2 == 1)
            .map(|(_, t)| t.to_string())
            .collect()
    }

    fn idents(s: &str) -> Vec<String> {
        s.split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|t| t.chars().next().is_some_and(|c| c.is_ascii_alphabetic()))
            .map(String::from)
            .collect()
    }

    /// The identifiers a span names as fields: at its start, or after `{`, `[`, `,`, `+`, `.`
    /// or an unescaped `|` (values follow `:`; `\|` separates values in table cells).
    fn field_positions(span: &str) -> Vec<String> {
        let chars: Vec<char> = span.chars().collect();
        let mut out = vec![];
        let mut i = 0;
        let mut prev = Some('{');
        while i < chars.len() {
            let c = chars[i];
            if c.is_ascii_alphabetic() {
                let start = i;
                while i < chars.len() && chars[i].is_ascii_alphanumeric() {
                    i += 1;
                }
                if matches!(prev, Some('{' | '[' | ',' | '+' | '.' | '|')) {
                    out.push(chars[start..i].iter().collect());
                }
                prev = Some('a');
                continue;
            }
            if !c.is_whitespace() {
                prev = if c == '|' && i > 0 && chars[i - 1] == '\\' {
                    Some('\\')
                } else {
                    Some(c)
                };
            }
            i += 1;
        }
        out
    }

    /// Table cells: (header of the column, cell text), for every table of `md`.
    fn table_cells(md: &str) -> Vec<(String, String)> {
        let mut out = vec![];
        let mut header: Vec<String> = vec![];
        for line in md.lines() {
            if !line.starts_with('|') {
                header.clear();
                continue;
            }
            let cells = split_row(line);
            if header.is_empty() {
                header = cells;
            } else if !cells
                .iter()
                .all(|c| c.chars().all(|x| x == '-' || x == ' '))
            {
                for (h, c) in header.iter().zip(cells) {
                    out.push((h.clone(), c));
                }
            }
        }
        out
    }

    fn split_row(line: &str) -> Vec<String> {
        let mut cells = vec![];
        let mut cur = String::new();
        let mut prev = ' ';
        for c in line.trim().trim_matches('|').chars() {
            if c == '|' && prev != '\\' {
                cells.push(cur.trim().to_string());
                cur.clear();
            } else {
                cur.push(c);
            }
            prev = c;
        }
        cells.push(cur.trim().to_string());
        cells
    }

    #[test]
    fn scenarios_md_and_the_schema_agree() {
        let md = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/scenarios.md"),
        )
        .unwrap();
        let (mut fields, mut values) = (BTreeSet::new(), BTreeSet::new());
        for s in [schema(&[]), schema(&["--suite"])] {
            collect(&s, &mut fields, &mut values);
        }
        assert!(
            fields.contains("staleDeviceMount")
                && fields.contains("heldBy")
                && fields.contains("reboot"),
            "the operations and aliases are in the schema"
        );

        // Everything in the schema is documented (in a code span or a YAML example).
        let mut documented: BTreeSet<String> =
            code_spans(&md).iter().flat_map(|s| idents(s)).collect();
        for block in md.split("```yaml\n").skip(1) {
            documented.extend(idents(block.split("```").next().unwrap()));
        }
        let missing: Vec<&String> = fields
            .iter()
            .chain(
                values
                    .iter()
                    .filter(|v| v.chars().all(|c| c.is_ascii_alphanumeric())),
            )
            .filter(|f| !documented.contains(*f))
            .collect();
        assert!(
            missing.is_empty(),
            "in the schema but not in docs/scenarios.md: {missing:?}"
        );

        // Nothing documented as a field that the schema lacks: the first column of every
        // table, the `fields` columns, and the expectation specs.
        let known = |t: &str| {
            fields.contains(t) || values.contains(t) || ["true", "false", "null"].contains(&t)
        };
        let mut named: Vec<(String, String)> = vec![];
        for (header, cell) in table_cells(&md) {
            let first = ["field", "kind", "operation", "fields"].contains(&header.as_str());
            if first {
                for span in code_spans(&cell) {
                    named.extend(
                        field_positions(&span)
                            .into_iter()
                            .map(|f| (f, cell.clone())),
                    );
                }
            }
        }
        let expectations = md
            .split("## Expectations")
            .nth(1)
            .unwrap()
            .split("\n## ")
            .next()
            .unwrap();
        for span in code_spans(expectations) {
            if ["resource: {", "event: {", "log: {", "count: {"]
                .iter()
                .any(|p| span.starts_with(p))
            {
                named.extend(
                    field_positions(&span)
                        .into_iter()
                        .map(|f| (f, span.clone())),
                );
            }
        }
        assert!(
            named.iter().any(|(f, _)| f == "stuckUntilPowerCycle")
                && named.iter().any(|(f, _)| f == "involvedName"),
            "the tables were read: {named:?}"
        );
        let unknown: Vec<&(String, String)> = named.iter().filter(|(f, _)| !known(f)).collect();
        assert!(
            unknown.is_empty(),
            "documented in docs/scenarios.md but not in the schema: {unknown:#?}"
        );
    }

    #[test]
    fn field_positions_skip_values() {
        assert_eq!(
            field_positions("{apiVersion, kind, type: merge\\|json, patch}"),
            ["apiVersion", "kind", "type", "patch"]
        );
        assert_eq!(
            field_positions(
                "log: {source: controller|kubelet, pattern (regex), atLeast | atMost + per}"
            ),
            ["log", "source", "kubelet", "pattern", "atLeast", "atMost", "per"]
        );
        assert_eq!(
            field_positions("spec.cluster.nodes"),
            ["spec", "cluster", "nodes"]
        );
    }
}
