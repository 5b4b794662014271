//! The examples in docs/scenarios.md are valid: the suite config and the scenario load without
//! diagnostics (the files they reference are stubbed).

use faultline::loader::{load_scenario, load_suite};
use std::path::Path;

fn yaml_blocks(md: &str) -> Vec<String> {
    md.split("```yaml\n").skip(1).map(|b| b.split("```").next().unwrap().to_string()).collect()
}

fn stub(base: &Path, rel: &str) {
    let p = base.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: stub}\n").unwrap();
}

#[test]
fn documented_examples_validate() {
    let md = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/scenarios.md")).unwrap();
    let blocks = yaml_blocks(&md);
    let scenario = blocks.iter().find(|b| b.contains("kind: Scenario")).expect("a scenario example");
    let suite = blocks.iter().find(|b| b.contains("kind: Suite")).expect("a suite example");
    let dir = tempfile::tempdir().unwrap();
    let scen_dir = dir.path().join("scenarios");
    std::fs::create_dir_all(&scen_dir).unwrap();
    let v: serde_yaml::Value = serde_yaml::from_str(suite).unwrap();
    for c in v["crds"].as_sequence().unwrap() {
        stub(&scen_dir, c.as_str().unwrap());
    }
    for c in v["controllers"].as_mapping().unwrap().values() {
        for m in c["rbac"].as_sequence().into_iter().flatten() {
            stub(&scen_dir, m.as_str().unwrap());
        }
    }
    std::fs::write(scen_dir.join("faultline.yaml"), suite).unwrap();
    let suite = load_suite(&scen_dir.join("faultline.yaml")).unwrap_or_else(|d| panic!("{}", d.iter().map(|d| d.to_string()).collect::<Vec<_>>().join("\n")));
    for line in scenario.lines() {
        if let Some(f) = line.trim().strip_prefix("- apply: ") {
            stub(&scen_dir, f.trim());
        }
    }
    let f = scen_dir.join("example.yaml");
    std::fs::write(&f, scenario).unwrap();
    let s = load_scenario(&f, &suite).unwrap_or_else(|d| panic!("{}", d.iter().map(|d| d.to_string()).collect::<Vec<_>>().join("\n")));
    assert_eq!(s.scenario.metadata.name, "stale-csi-mount");
    assert_eq!(s.scenario.spec.invariants.len(), 2);
}
