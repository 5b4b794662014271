//! The malformed-scenario corpus: each case is a scenario file and the exact diagnostic
//! (`file:line:col: error: message`) faultline must report for it.

use faultline::loader::{load_all, load_scenario, load_suite};
use rstest::rstest;
use std::path::{Path, PathBuf};

const HEAD: &str = "apiVersion: faultline.dev/v1alpha1\nkind: Scenario\nmetadata: {name: corpus}\n";

fn suite_dir() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("faultline.yaml"), "apiVersion: faultline.dev/v1alpha1\nkind: Suite\ncontrollers:\n  ctl: {command: [sh, -c, 'sleep 1000']}\n").unwrap();
    std::fs::create_dir_all(d.path().join("manifests")).unwrap();
    std::fs::write(
        d.path().join("manifests/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
    )
    .unwrap();
    d
}

fn diagnose(dir: &Path, body: &str) -> (PathBuf, Vec<String>) {
    let file = dir.join("case.yaml");
    std::fs::write(&file, body).unwrap();
    let suite = load_suite(&dir.join("faultline.yaml")).expect("suite loads");
    let d = match load_scenario(&file, &suite) {
        Ok(_) => vec![],
        Err(d) => d.into_iter().map(|d| d.to_string()).collect(),
    };
    (file, d)
}

const STEP_FIELDS: &str = "`name`, `description`, `timeout`, `apply`, `create`, `patch`, `delete`, `fault`, `remediate`, `sleep`, `expect`, `script`, `try`, `catch`, `finally`";
const OPS: &str = "`staleDeviceMount`, `csiPluginDown`, `csiPluginRestart`, `csiDriverUnregistered`, `kubeletWorkersSaturated`, `kubeletStop`, `kubeletHang`, `kubeletRestart`, `proberManagerBroken`, `nodeReboot`, `nodePowerCycle`, `nodePowerOff`, `nodeNetworkPartition`, `hungNfs`, `ioErrors`, `apiErrors`, `apiLatency`, `cordon`, `uncordon`, `drain`, `outOfServiceTaint`, `deletePod`, `controllerCrash`";
const KINDS: &str = "`apply`, `create`, `patch`, `delete`, `fault`, `remediate`, `sleep`, `expect`, `script`, `try`";
const NODES: &str = "`control-plane`, `worker-01`, `worker-02`, `worker-03`";

#[rstest]
#[case::unknown_step_field(
    "spec:\n  steps:\n    - aply: manifests/cm.yaml\n",
    format!("6:7: error: spec.steps[0]: unknown field `aply`, expected one of {STEP_FIELDS}"))]
#[case::unknown_fault_operation(
    "spec:\n  steps:\n    - fault:\n        name: x\n        staleDeviceMont: {node: worker-01}\n",
    format!("8:9: error: spec.steps[0].fault: unknown field `staleDeviceMont`, expected one of `name`, `heal`, `description`, {OPS}"))]
#[case::unknown_remediation(
    "spec:\n  steps:\n    - remediate: {kubeletRestrt: {node: worker-01}}\n",
    format!("6:19: error: spec.steps[0].remediate: unknown variant `kubeletRestrt`, expected one of {OPS}"))]
#[case::two_fault_operations(
    "spec:\n  steps:\n    - fault: {name: y, kubeletStop: {node: worker-01}, cordon: {node: worker-01}}\n",
    "6:14: error: spec.steps[0].fault: two operations (`kubeletStop` and `cordon`): a fault step injects exactly one".to_string())]
#[case::fault_without_operation(
    "spec:\n  steps:\n    - fault: {name: y}\n",
    format!("6:14: error: spec.steps[0].fault: fault names no operation: expected one of {OPS}"))]
#[case::bad_duration_unit(
    "spec:\n  steps:\n    - sleep: 3x\n",
    "6:14: error: spec.steps[0].sleep: invalid duration `3x`: unknown unit `x`; expected a duration: a number followed by ms, s, m or h (e.g. 500ms, 30s, 2m, 1h30m)".to_string())]
#[case::duration_without_unit(
    "spec:\n  steps:\n    - sleep: 30\n",
    "6:14: error: spec.steps[0].sleep: invalid duration `30`: a unit is required; expected a duration: a number followed by ms, s, m or h (e.g. 500ms, 30s, 2m, 1h30m)".to_string())]
#[case::unknown_log_source(
    "spec:\n  steps:\n    - expect: {log: {source: kubelt, pattern: x}}\n",
    "6:30: error: spec.steps[0].expect.log.source: unknown variant `kubelt`, expected one of `controller`, `kubelet`, `csiPlugin`".to_string())]
#[case::unknown_heal(
    "spec:\n  steps:\n    - fault: {name: y, heal: sometimes, kubeletStop: {node: worker-01}}\n",
    "6:30: error: spec.steps[0].fault.heal: unknown variant `sometimes`, expected one of `after`, `atStep`, `never`".to_string())]
#[case::missing_steps(
    "spec:\n  cluster: {}\n",
    "5:3: error: spec: missing field `steps`".to_string())]
#[case::yaml_syntax(
    "spec:\n  steps:\n    - sleep: 1s\n     oops: 1\n",
    "7:6: error: did not find expected '-' indicator, while parsing a block collection at line 6 column 5".to_string())]
#[case::wrong_api_version(
    "spec:\n  steps:\n    - sleep: 1s\n",
    "1:13: error: apiVersion: unsupported `faultline.dev/v2`, expected `faultline.dev/v1alpha1`".to_string())]
#[case::invalid_name(
    "spec:\n  steps:\n    - sleep: 1s\n",
    "3:18: error: metadata.name: invalid name `Corpus_1`: lowercase letters, digits and `-`, starting and ending with a letter or digit".to_string())]
#[case::two_step_kinds(
    "spec:\n  steps:\n    - apply: manifests/cm.yaml\n      sleep: 1s\n",
    format!("6:7: error: spec.steps[0]: a step needs exactly one of {KINDS}, found `apply`, `sleep`"))]
#[case::no_step_kind(
    "spec:\n  steps:\n    - name: lonely\n",
    format!("6:7: error: spec.steps[0]: a step needs exactly one of {KINDS}, found none"))]
#[case::catch_without_try(
    "spec:\n  steps:\n    - sleep: 1s\n      catch: [{sleep: 1s}]\n",
    "7:7: error: spec.steps[0].catch: `catch` goes with `try`".to_string())]
#[case::unknown_taint_effect(
    "spec:\n  steps:\n    - fault: {name: y, outOfServiceTaint: {node: worker-01, effect: PreferNoSchedule}}\n",
    "6:69: error: spec.steps[0].fault.outOfServiceTaint.effect: unknown variant `PreferNoSchedule`, expected `NoExecute` or `NoSchedule`".to_string())]
#[case::bad_taint_value(
    "spec:\n  steps:\n    - remediate: {outOfServiceTaint: {node: worker-01, value: \"node shutdown\"}}\n",
    "6:63: error: spec.steps[0].remediate.outOfServiceTaint.value: `node shutdown` is not a taint value: at most 63 letters, digits, '-', '_' and '.', starting and ending with a letter or digit".to_string())]
#[case::bad_csi_driver_name(
    "spec:\n  steps:\n    - fault: {name: y, csiDriverUnregistered: {node: worker-01, driver: Driver.Longhorn}}\n",
    "6:73: error: spec.steps[0].fault.csiDriverUnregistered.driver: `Driver.Longhorn` is not a CSI driver name: at most 63 lower-case letters, digits, '-' and '.', starting and ending with a letter or digit".to_string())]
#[case::unknown_node(
    "spec:\n  steps:\n    - fault: {name: y, kubeletStop: {node: worker-09}}\n",
    format!("6:44: error: spec.steps[0].fault.kubeletStop.node: unknown node `worker-09`, expected one of {NODES}"))]
#[case::invalid_cel(
    "spec:\n  steps:\n    - expect: {resource: {apiVersion: v1, kind: ConfigMap, all: \"object.x ==\"}}\n",
    "6:65: error: spec.steps[0].expect.resource.all: invalid CEL expression `object.x ==`: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER} (at 1:12)".to_string())]
#[case::unknown_anchor(
    "spec:\n  steps:\n    - {name: boot, sleep: 1s}\n    - expect: {log: {source: controller, pattern: x}, after: boto}\n",
    "7:62: error: spec.steps[1].expect.after: unknown anchor `boto`, expected one of `start`, `previous`, `boot`, `boot.start`".to_string())]
#[case::anchor_after_expectation(
    "spec:\n  steps:\n    - expect: {log: {source: controller, pattern: x}, after: later}\n    - {name: later, sleep: 1s}\n",
    "6:62: error: spec.steps[0].expect.after: step `later` does not come before this expectation, expected one of `start`, `previous`".to_string())]
#[case::healed_anchor_of_non_fault(
    "spec:\n  steps:\n    - {name: nap, sleep: 1s}\n    - expect: {log: {source: controller, pattern: x}, after: nap.healed}\n",
    "7:62: error: spec.steps[1].expect.after: `nap` is not a fault, so it has no `.healed` anchor".to_string())]
#[case::heal_at_unknown_step(
    "spec:\n  steps:\n    - fault: {name: y, heal: {atStep: fix}, kubeletStop: {node: worker-01}}\n    - {name: repair, sleep: 1s}\n",
    "6:39: error: spec.steps[0].fault.heal.atStep: unknown step `fix`, expected one of `repair` (the steps after this fault)".to_string())]
#[case::heal_at_step_with_no_step_after(
    "spec:\n  steps:\n    - fault: {name: y, heal: {atStep: ghost}, kubeletStop: {node: worker-01}}\n",
    "6:39: error: spec.steps[0].fault.heal.atStep: unknown step `ghost`, and no step comes after this fault: heal it with `{after: <duration>}`, or leave it to the clean-up at the end (`never`)".to_string())]
#[case::duration_beyond_u64(
    "spec:\n  steps:\n    - sleep: 18446744073709551616ms\n",
    "6:14: error: spec.steps[0].sleep: invalid duration `18446744073709551616ms`: out of range, the longest is 2562047h47m16s (2562047h)".to_string())]
#[case::cel_unknown_function(
    "spec:\n  steps:\n    - expect: {resource: {apiVersion: v1, kind: ConfigMap, all: \"nosuch(object)\"}}\n",
    "6:65: error: spec.steps[0].expect.resource.all: invalid CEL expression `nosuch(object)`: unknown function `nosuch`".to_string())]
#[case::cel_not_a_bool(
    "spec:\n  steps:\n    - expect: {resource: {apiVersion: v1, kind: ConfigMap, all: \"object.data.count + 1\"}}\n",
    "6:65: error: spec.steps[0].expect.resource.all: invalid CEL expression `object.data.count + 1`: it is an int, a condition must be a bool (e.g. `... == ...`)".to_string())]
#[case::cel_unknown_variable(
    "spec:\n  steps:\n    - expect: {resource: {apiVersion: v1, kind: ConfigMap, count: {where: \"obj.x == 1\", atLeast: 1}}}\n",
    "6:75: error: spec.steps[0].expect.resource.count.where: invalid CEL expression `obj.x == 1`: unknown variable `obj`: the condition sees `object`".to_string())]
#[case::expect_and_step_named_differently(
    "spec:\n  steps:\n    - name: a\n      expect: {name: b, log: {source: controller, pattern: x}}\n",
    "7:22: error: spec.steps[0].expect.name: the expectation is named `b` but its step `a`; give one name".to_string())]
#[case::never_with_within(
    "spec:\n  steps:\n    - expect: {never: true, within: 5s, log: {source: controller, pattern: x}}\n",
    "6:29: error: spec.steps[0].expect.within: `never` and `within` exclude each other: bound a `never` window with `for`".to_string())]
#[case::condition_without_name(
    "spec:\n  steps:\n    - expect: {resource: {apiVersion: v1, kind: ConfigMap, condition: \"object != null\"}}\n",
    "6:60: error: spec.steps[0].expect.resource.condition: `condition` is about one object: give its `name` (or use one, any, all, none, count)".to_string())]
#[case::two_selection_modes(
    "spec:\n  steps:\n    - expect: {resource: {apiVersion: v1, kind: ConfigMap, any: \"true\", all: \"true\"}}\n",
    "6:26: error: spec.steps[0].expect.resource: a resource expectation needs exactly one of `condition`, `one`, `any`, `all`, `none`, `count`, found `any`, `all`".to_string())]
#[case::two_expectation_kinds(
    "spec:\n  steps:\n    - expect: {event: {reason: X}, log: {source: controller, pattern: x}}\n",
    "6:15: error: spec.steps[0].expect: an expectation needs exactly one of `resource`, `event`, `log`, found `event`, `log`".to_string())]
#[case::bad_regex(
    "spec:\n  steps:\n    - expect: {log: {source: controller, pattern: \"bumped(\"}}\n",
    "6:51: error: spec.steps[0].expect.log.pattern: invalid regular expression `bumped(`: error: unclosed group".to_string())]
#[case::node_on_controller_log(
    "spec:\n  steps:\n    - expect: {log: {source: controller, node: worker-01, pattern: x}}\n",
    "6:42: error: spec.steps[0].expect.log.node: the controller's log has no node; `node` goes with `kubelet` or `csiPlugin`".to_string())]
#[case::unknown_controller(
    "spec:\n  controller: {ref: clt}\n  steps:\n    - sleep: 1s\n",
    "5:21: error: spec.controller.ref: unknown controller `clt`, expected one of `ctl` (from SUITE)".to_string())]
#[case::missing_manifest(
    "spec:\n  steps:\n    - apply: manifests/nope.yaml\n",
    "6:14: error: spec.steps[0].apply: file `manifests/nope.yaml` not found (relative to DIR)".to_string())]
#[case::duplicate_step_name(
    "spec:\n  steps:\n    - {name: a, sleep: 1s}\n    - {name: a, sleep: 2s}\n",
    "7:14: error: spec.steps[1].name: duplicate step name `a` (also spec.steps[0])".to_string())]
#[case::log_rate_with_never(
    "spec:\n  steps:\n    - expect: {never: true, for: 1s, log: {source: controller, pattern: x, atMost: 3}}\n",
    "6:76: error: spec.steps[0].expect.log.atMost: a rate limit (`atMost`) is already an invariant: drop `never`/`for`".to_string())]
#[case::invariant_with_within(
    "spec:\n  steps:\n    - sleep: 1s\n  invariants:\n    - {within: 3s, never: true, log: {source: controller, pattern: x}}\n",
    "8:8: error: spec.invariants[0].within: invariants are checked for the whole run; `within` is not allowed".to_string())]
fn malformed_scenario_gets_its_precise_error(#[case] body: &str, #[case] expected: String) {
    let dir = suite_dir();
    let head = match expected.as_str() {
        e if e.contains("apiVersion: unsupported") => HEAD.replace("v1alpha1", "v2"),
        e if e.contains("invalid name") => HEAD.replace("corpus", "Corpus_1"),
        _ => HEAD.to_string(),
    };
    let (file, diags) = diagnose(dir.path(), &format!("{head}{body}"));
    let expected = expected
        .replace(
            "SUITE",
            &dir.path().join("faultline.yaml").display().to_string(),
        )
        .replace("DIR", &dir.path().display().to_string());
    let want = format!("{}:{expected}", file.display());
    assert_eq!(
        diags.first().map(String::as_str),
        Some(want.as_str()),
        "all diagnostics: {diags:#?}"
    );
}

#[test]
fn valid_scenario_has_no_diagnostics() {
    let dir = suite_dir();
    let body = "spec:\n  controller: {ref: ctl}\n  steps:\n    - apply: manifests/cm.yaml\n    - fault: {name: f, heal: {atStep: fix}, staleDeviceMount: {node: worker-01, volume: {deletedPV: pvc-1}}}\n    - expect: {name: e, after: f, within: 2s, resource: {apiVersion: v1, kind: ConfigMap, all: \"true\"}}\n    - {name: fix, remediate: {kubeletRestart: {node: worker-01}}}\n    - expect: {after: f.healed, log: {source: kubelet, node: worker-01, pattern: ok}}\n  invariants:\n    - {log: {source: controller, pattern: bumped, atMost: 3, per: 1m}}\n";
    let (_, diags) = diagnose(dir.path(), &format!("{HEAD}{body}"));
    assert!(diags.is_empty(), "{diags:#?}");
}

#[test]
fn every_file_of_a_directory_is_checked_and_names_are_unique() {
    let dir = suite_dir();
    let ok = format!("{HEAD}spec:\n  steps:\n    - sleep: 1s\n");
    std::fs::write(dir.path().join("a.yaml"), &ok).unwrap();
    std::fs::write(dir.path().join("b.yaml"), &ok).unwrap();
    std::fs::write(
        dir.path().join("c.yaml"),
        format!("{HEAD}spec:\n  steps:\n    - slep: 1s\n"),
    )
    .unwrap();
    let (_, loaded, diags) = load_all(&[dir.path().to_path_buf()], None);
    // The manifest directory is not scanned (not named), and manifests are not scenarios.
    assert_eq!(loaded.len(), 1);
    let text: Vec<String> = diags.iter().map(|d| d.to_string()).collect();
    assert_eq!(text.len(), 2, "{text:#?}");
    let want = format!(
        "b.yaml:3:18: error: metadata.name: `corpus` is already the name of {}",
        dir.path().join("a.yaml").display()
    );
    assert!(text[0].ends_with(&want), "{text:#?}");
    assert!(
        text[1].contains("c.yaml:6:7: error: spec.steps[0]: unknown field `slep`"),
        "{text:#?}"
    );
}

#[test]
fn a_byte_order_mark_is_accepted() {
    let dir = suite_dir();
    let (_, diags) = diagnose(
        dir.path(),
        &format!("\u{feff}{HEAD}spec:\n  steps:\n    - sleep: 1s\n"),
    );
    assert!(diags.is_empty(), "{diags:#?}");
}

#[test]
fn an_expectation_name_is_an_anchor() {
    let dir = suite_dir();
    let body = "spec:\n  steps:\n    - expect: {name: seen, after: start, log: {source: controller, pattern: x}}\n    - expect: {after: seen, within: 2s, log: {source: controller, pattern: y}}\n";
    let (_, diags) = diagnose(dir.path(), &format!("{HEAD}{body}"));
    assert!(diags.is_empty(), "{diags:#?}");
}

#[test]
fn referenced_manifests_are_parsed_and_each_object_checked() {
    let dir = suite_dir();
    std::fs::write(
        dir.path().join("manifests/notyaml.yaml"),
        "kind: [unclosed\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("manifests/nokind.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ok}\n---\napiVersion: v1\nmetadata: {name: x}\n").unwrap();
    let body = "spec:\n  steps:\n    - apply: manifests/notyaml.yaml\n    - delete: {file: manifests/nokind.yaml}\n";
    let (file, diags) = diagnose(dir.path(), &format!("{HEAD}{body}"));
    let m = dir.path().join("manifests");
    assert_eq!(diags.len(), 2, "{diags:#?}");
    assert!(
        diags[0].starts_with(&format!(
            "{}:2:1: error: referenced by {}:6:14 (spec.steps[0].apply): not valid YAML: ",
            m.join("notyaml.yaml").display(),
            file.display()
        )),
        "{diags:#?}"
    );
    assert_eq!(diags[1], format!("{}:5:1: error: referenced by {}:7:22 (spec.steps[1].delete.file): an object needs `apiVersion`, `kind`, `metadata.name`; missing `kind`",
        m.join("nokind.yaml").display(), file.display()));
}

#[test]
fn a_broken_manifest_two_scenarios_apply_is_one_error() {
    let dir = suite_dir();
    std::fs::write(
        dir.path().join("manifests/half.yaml"),
        "apiVersion: v1\nkind: ConfigMap\n",
    )
    .unwrap();
    for n in ["a", "b"] {
        std::fs::write(
            dir.path().join(format!("{n}.yaml")),
            format!(
                "{}spec:\n  steps:\n    - apply: manifests/half.yaml\n",
                HEAD.replace("corpus", n)
            ),
        )
        .unwrap();
    }
    let (_, _, diags) = load_all(&[dir.path().to_path_buf()], None);
    let text: Vec<String> = diags.iter().map(|d| d.to_string()).collect();
    let (a, b) = (dir.path().join("a.yaml"), dir.path().join("b.yaml"));
    assert_eq!(text, vec![format!(
        "{}:1:1: error: referenced by {}:6:14 (spec.steps[0].apply), {}:6:14 (spec.steps[0].apply): an object needs `apiVersion`, `kind`, `metadata.name`; missing `metadata.name`",
        dir.path().join("manifests/half.yaml").display(), a.display(), b.display())]);
}

#[test]
fn a_suite_file_is_validated_alone_and_its_errors_reported_once() {
    let dir = suite_dir();
    let suite = dir.path().join("faultline.yaml");
    let (_, loaded, diags) = load_all(std::slice::from_ref(&suite), None);
    assert!(diags.is_empty() && loaded.is_empty(), "{diags:?}");
    // A broken suite: one error, not one more per scenario that names its controller.
    std::fs::write(
        &suite,
        "apiVersion: faultline.dev/v1alpha1\nkind: Suite\ncontrolers: {}\n",
    )
    .unwrap();
    for n in ["a", "b"] {
        std::fs::write(
            dir.path().join(format!("{n}.yaml")),
            format!(
                "{}spec:\n  controller: {{ref: ctl}}\n  steps:\n    - sleep: 1s\n",
                HEAD.replace("corpus", n)
            ),
        )
        .unwrap();
    }
    let (_, _, diags) = load_all(&[dir.path().to_path_buf()], None);
    let text: Vec<String> = diags.iter().map(|d| d.to_string()).collect();
    assert_eq!(text.len(), 1, "{text:#?}");
    assert!(
        text[0].starts_with(&format!(
            "{}:3:1: error: unknown field `controlers`",
            suite.display()
        )),
        "{text:#?}"
    );
    // Named on its own, the broken suite gives the same one error.
    let (_, _, diags) = load_all(std::slice::from_ref(&suite), None);
    assert_eq!(diags.len(), 1, "{diags:?}");
}

#[test]
fn suite_config_errors_are_located() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("faultline.yaml");
    std::fs::write(&f, "apiVersion: faultline.dev/v1alpha1\nkind: Suite\ncrds: [crds/missing.yaml]\ndefaults: {expectWithin: 10s, regressionRatio: 0.5}\n").unwrap();
    let d: Vec<String> = load_suite(&f)
        .unwrap_err()
        .into_iter()
        .map(|d| d.to_string())
        .collect();
    assert_eq!(
        d,
        vec![
            format!(
                "{}:3:8: error: crds[0]: file `crds/missing.yaml` not found",
                f.display()
            ),
            format!(
                "{}:4:48: error: defaults.regressionRatio: must be greater than 1",
                f.display()
            ),
        ]
    );
}

#[test]
fn a_blank_kind_node_image_is_located() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("faultline.yaml");
    std::fs::write(&f, "apiVersion: faultline.dev/v1alpha1\nkind: Suite\nkindProvider:\n  nodeImage: \"kindest/node v1\"\n").unwrap();
    let d: Vec<String> = load_suite(&f)
        .unwrap_err()
        .into_iter()
        .map(|d| d.to_string())
        .collect();
    assert_eq!(d, vec![format!(
        "{}:4:14: error: kindProvider.nodeImage: must be an image reference such as `kindest/node:v1.35.5` (no spaces)",
        f.display()
    )]);
    std::fs::write(&f, "apiVersion: faultline.dev/v1alpha1\nkind: Suite\nkindProvider:\n  nodeImage: faultline-node:abc\n").unwrap();
    let s = load_suite(&f).unwrap();
    assert_eq!(
        s.suite.kind_provider.node_image.as_deref(),
        Some("faultline-node:abc")
    );
}

/// `spec.perturb`: each error names the file, the line and the field.
#[rstest]
#[case::crash_from_zero(
    "  controller: {ref: sa}\n  perturb:\n    - crashAfterMutation: 0\n",
    "7:27: error: spec.perturb[0].crashAfterMutation: requests are counted from 1"
)]
#[case::stale_window_too_long(
    "  controller: {ref: sa}\n  perturb:\n    - staleRead: {read: 2, window: 5m}\n",
    "7:36: error: spec.perturb[0].staleRead.window: 5m out of range: 0 < window <= 1m"
)]
#[case::no_kind(
    "  controller: {ref: sa}\n  perturb:\n    - {}\n",
    "7:7: error: spec.perturb[0]: a perturbation needs exactly one of `crashAfterMutation`, `staleRead`, `watchRelist`, `moveFault`")]
#[case::unknown_field(
    "  controller: {ref: sa}\n  perturb:\n    - crashAfter: 3\n",
    "7:7: error: spec.perturb[0]: unknown field `crashAfter`, expected one of `crashAfterMutation`, `staleRead`, `watchRelist`, `moveFault`")]
#[case::controller_without_service_account(
    "  controller: {ref: ctl}\n  perturb:\n    - crashAfterMutation: 3\n",
    "7:5: error: spec.perturb: perturbations need a controller with a `serviceAccount` in the suite config (the sim tells its requests apart by that identity)")]
fn perturbations_get_their_precise_error(#[case] body: &str, #[case] expected: &str) {
    let dir = suite_dir();
    std::fs::write(dir.path().join("faultline.yaml"), "apiVersion: faultline.dev/v1alpha1\nkind: Suite\ncontrollers:\n  ctl: {command: [sh, -c, 'sleep 1000']}\n  sa: {command: [sh, -c, 'sleep 1000'], serviceAccount: ns/sa}\n").unwrap();
    let (file, diags) = diagnose(
        dir.path(),
        &format!("{HEAD}spec:\n{body}  steps:\n    - sleep: 1s\n"),
    );
    let want = format!("{}:{expected}", file.display());
    assert_eq!(
        diags.first().map(String::as_str),
        Some(want.as_str()),
        "all diagnostics: {diags:#?}"
    );
    // The same perturbation with a controller that has a ServiceAccount is valid.
    let ok = "spec:\n  controller: {ref: sa}\n  perturb:\n    - crashAfterMutation: 3\n    - staleRead: {read: 2}\n    - watchRelist: 4\n  steps:\n    - sleep: 1s\n";
    let (_, diags) = diagnose(dir.path(), &format!("{HEAD}{ok}"));
    assert!(diags.is_empty(), "{diags:#?}");
}

/// `moveFault`: the step must be a fault step of the scenario, moved once, after a write >= 1.
#[rstest]
#[case::unknown_step(
    "    - moveFault: {step: nope, afterMutation: 2}\n",
    "7:25: error: spec.perturb[0].moveFault.step: unknown step `nope`, expected one of `cordoned` (its fault steps)"
)]
#[case::not_a_fault(
    "    - moveFault: {step: settle, afterMutation: 2}\n",
    "7:25: error: spec.perturb[0].moveFault.step: step `settle` is not a `fault` step (only faults can be moved)"
)]
#[case::from_zero(
    "    - moveFault: {step: cordoned, afterMutation: 0}\n",
    "7:50: error: spec.perturb[0].moveFault.afterMutation: requests are counted from 1"
)]
#[case::twice(
    "    - moveFault: {step: cordoned, afterMutation: 1}\n    - moveFault: {step: cordoned, afterMutation: 3}\n",
    "8:25: error: spec.perturb[1].moveFault.step: fault step `cordoned` is moved twice"
)]
#[case::missing_field("    - moveFault: {step: cordoned}\n", "missing field `afterMutation`")]
fn a_moved_fault_gets_its_precise_error(#[case] perturb: &str, #[case] expected: &str) {
    let dir = suite_dir();
    std::fs::write(dir.path().join("faultline.yaml"), "apiVersion: faultline.dev/v1alpha1\nkind: Suite\ncontrollers:\n  sa: {command: [sh, -c, 'sleep 1000'], serviceAccount: ns/sa}\n").unwrap();
    let steps = "  steps:\n    - fault: {name: cordoned, cordon: {node: worker-01}}\n    - name: settle\n      sleep: 1s\n";
    let body = |perturb: &str| {
        format!("{HEAD}spec:\n  controller: {{ref: sa}}\n  perturb:\n{perturb}{steps}")
    };
    let (file, diags) = diagnose(dir.path(), &body(perturb));
    let first = diags.first().cloned().unwrap_or_default();
    if expected.starts_with(|c: char| c.is_ascii_digit()) {
        assert_eq!(
            first,
            format!("{}:{expected}", file.display()),
            "{diags:#?}"
        );
    } else {
        assert!(first.contains(expected), "{diags:#?}");
    }
    let (_, diags) = diagnose(
        dir.path(),
        &body("    - moveFault: {step: cordoned, afterMutation: 2}\n"),
    );
    assert!(diags.is_empty(), "{diags:#?}");
}

#[test]
fn a_controller_names_its_program_once() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("faultline.yaml");
    std::fs::create_dir_all(dir.path().join("op")).unwrap();
    std::fs::write(dir.path().join("op/go.mod"), "module op\n").unwrap();
    let cases = [
        ("  a: {readyPattern: x}\n", "4:3: error: controllers.a: no program: give `command` (a program and its arguments) or `build`"),
        ("  a: {command: []}\n", "4:16: error: controllers.a.command: the command is empty"),
        ("  a: {command: [x], build: {go: {module: op}}}\n", "4:16: error: controllers.a.command: `command` and `build` both name the program: keep one (with `build`, put the arguments in `args`)"),
        ("  a: {build: {go: {module: op}}}\n", "4:28: error: controllers.a.build.go.module: no go.sum in `op`"),
        ("  a: {build: {go: {module: nowhere, package: ../x}}}\n", "4:28: error: controllers.a.build.go.module: no go.mod in `nowhere`"),
        ("  a: {build: {rust: {crate: x}}}\n", "unknown field `rust`, expected `go`"),
    ];
    for (controller, wanted) in cases {
        std::fs::write(
            &f,
            format!("apiVersion: faultline.dev/v1alpha1\nkind: Suite\ncontrollers:\n{controller}"),
        )
        .unwrap();
        let d: Vec<String> = load_suite(&f)
            .unwrap_err()
            .into_iter()
            .map(|d| d.to_string())
            .collect();
        assert!(d[0].contains(wanted), "{controller}: {d:?}");
    }
    std::fs::write(dir.path().join("op/go.sum"), "").unwrap();
    std::fs::write(&f, "apiVersion: faultline.dev/v1alpha1\nkind: Suite\ncontrollers:\n  a: {build: {go: {module: op}}, args: [--x]}\n").unwrap();
    let s = load_suite(&f).unwrap();
    let a = &s.suite.controllers["a"];
    assert_eq!(a.args, ["--x"]);
    assert!(
        matches!(&a.build, Some(faultline::model::ControllerBuild { go: g }) if g.module == "op" && g.package == ".")
    );
}
