//! End-to-end: the built `faultline` binary against the sim provider, with the recording fake
//! node operations (FAULTLINE_TEST_NODE_OPS) so "every fault is healed" is observable from
//! outside the process, after failures, panics and signals.

use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::{json, text, BIN, HEAD};

struct Fx {
    dir: tempfile::TempDir,
}

impl Fx {
    fn new() -> Fx {
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("controller.pid");
        let suite = format!(
            "apiVersion: faultline.dev/v1alpha1\nkind: Suite\ncontrollers:\n  noisy:\n    command: [sh, -c, 'echo $$ > {}; echo ready; while true; do echo \"RestartGeneration bumped in Creating phase\"; sleep 0.2; done']\n    readyPattern: ready\ndefaults: {{expectWithin: 5s, stepTimeout: 10s}}\n",
            pidfile.display()
        );
        std::fs::write(dir.path().join("faultline.yaml"), suite).unwrap();
        std::fs::create_dir_all(dir.path().join("manifests")).unwrap();
        std::fs::write(
            dir.path().join("manifests/cm.yaml"),
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: late}\ndata: {a: \"1\"}\n",
        )
        .unwrap();
        Fx { dir }
    }
    fn path(&self, p: &str) -> PathBuf {
        self.dir.path().join(p)
    }
    fn scenario(&self, file: &str, name: &str, spec: &str) -> PathBuf {
        let p = self.path(file);
        std::fs::write(
            &p,
            format!("{HEAD}metadata: {{name: {name}}}\nspec:\n{spec}"),
        )
        .unwrap();
        p
    }
    fn record(&self) -> PathBuf {
        self.path("node-ops.record")
    }
    fn record_lines(&self) -> Vec<String> {
        std::fs::read_to_string(self.record())
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }
    fn cmd(&self, args: &[&str], node_ops: &str) -> Command {
        let mut c = Command::new(BIN);
        c.args(args)
            .current_dir(self.dir.path())
            .env("FAULTLINE_TEST_NODE_OPS", node_ops)
            .stdin(Stdio::null());
        c
    }
    fn run(&self, args: &[&str]) -> Output {
        self.run_with(args, &self.record().display().to_string())
    }
    fn run_with(&self, args: &[&str], node_ops: &str) -> Output {
        let child = self
            .cmd(args, node_ops)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        wait_output(child, Duration::from_secs(90))
    }
}

fn wait_output(mut child: Child, max: Duration) -> Output {
    let deadline = Instant::now() + max;
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!(
                "faultline did not finish within {max:?}: {:?}",
                child.wait_with_output().unwrap()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks for existence.
    unsafe { libc::kill(pid, 0) == 0 }
}

#[test]
fn budget_missed_exits_1_and_names_the_budget() {
    let fx = Fx::new();
    fx.scenario("late.yaml", "late-configmap", "  steps:\n    - script: {run: 'sleep 1.5 && \"$FAULTLINE\" kube apply -f manifests/cm.yaml'}\n    - expect: {name: configmap-created, within: 1s, after: start, resource: {apiVersion: v1, kind: ConfigMap, namespace: default, name: late, condition: \"object.data.a == '1'\"}}\n");
    let out = fx.run(&[
        "run",
        "late.yaml",
        "--json",
        "r.json",
        "--junit",
        "j.xml",
        "--html",
        "r.html",
    ]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(t.contains("expectation `configmap-created` failed: budget missed: within 1s after start: held only after"), "{t}");
    assert!(t.contains("budget:        within 1s after start"), "{t}");
    let r = json(&fx.path("r.json"));
    let e = &r["scenarios"][0]["expectations"][0];
    assert_eq!(e["name"], "configmap-created");
    assert_eq!(e["verdict"], "failed");
    assert_eq!(e["budget"]["withinMs"], 1000);
    let measured = e["measuredMs"]
        .as_u64()
        .expect("the late success is measured");
    assert!((1400..10_000).contains(&measured), "measured {measured}");
    assert_eq!(r["summary"]["failed"], 1);
    // JUnit: parses, one test case, failed with the budget named.
    let xml = std::fs::read_to_string(fx.path("j.xml")).unwrap();
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let cases: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .collect();
    assert_eq!(cases.len(), 1);
    assert_eq!(
        cases[0].attribute("name"),
        Some("late-configmap/configmap-created")
    );
    let failure = cases[0]
        .children()
        .find(|n| n.has_tag_name("failure"))
        .expect("a failure element");
    assert!(failure
        .attribute("message")
        .unwrap()
        .contains("within 1s after start"));
    let html = std::fs::read_to_string(fx.path("r.html")).unwrap();
    assert!(
        html.contains("<svg")
            && html.contains("configmap-created")
            && html.contains("deadline: within 1s after start")
    );
}

/// Issue #33 item 13: an expectation reached after its condition came true is measured from
/// when it came true (the object was watched from the start of the steps), not from the check.
#[test]
fn a_condition_that_already_held_is_measured_from_when_it_held() {
    let fx = Fx::new();
    fx.scenario("early.yaml", "early-configmap", "  steps:\n    - name: created\n      apply: {file: manifests/cm.yaml}\n    - sleep: 2s\n    - expect: {name: configmap-there, within: 5s, after: created, resource: {apiVersion: v1, kind: ConfigMap, namespace: default, name: late, condition: \"object.data.a == '1'\"}}\n");
    let out = fx.run(&["run", "early.yaml", "--json", "r.json"]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(0), "{t}");
    let r = json(&fx.path("r.json"));
    let e = &r["scenarios"][0]["expectations"][0];
    assert_eq!(e["name"], "configmap-there");
    let measured = e["measuredMs"].as_u64().expect("measured");
    assert!(
        measured < 1000,
        "held since its anchor, yet measured {measured} ms: {t}"
    );
}

#[test]
fn fault_is_healed_after_a_failing_expectation() {
    let fx = Fx::new();
    fx.scenario("s.yaml", "fails", "  steps:\n    - fault: {name: stale, staleDeviceMount: {node: worker-02, volume: {deletedPV: pvc-81b676e6}}}\n    - expect: {name: never-there, within: 500ms, resource: {apiVersion: v1, kind: ConfigMap, namespace: default, name: nope, condition: \"object != null\"}}\n    - sleep: 30s\n");
    let out = fx.run(&["run", "s.yaml"]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    let rec = fx.record_lines();
    assert_eq!(rec.len(), 2, "{rec:?}");
    assert!(rec[0].starts_with("apply {\"staleDeviceMount\""), "{rec:?}");
    assert!(rec[1].starts_with("heal {\"staleDeviceMount\""), "{rec:?}");
    assert!(t.contains("fault stale healed (cleanup)"), "{t}");
    assert!(
        !t.contains("step sleep-3"),
        "the steps after the failure are skipped: {t}"
    );
}

#[test]
fn fault_is_healed_after_a_panic_in_a_step() {
    let fx = Fx::new();
    fx.scenario("s.yaml", "panics", "  steps:\n    - fault: {name: csi, csiPluginDown: {node: worker-01}}\n    - remediate: {kubeletRestart: {node: worker-01}}\n    - sleep: 30s\n");
    let node_ops = format!("{};panic=kubeletRestart", fx.record().display());
    let out = fx.run_with(&["run", "s.yaml", "--json", "r.json"], &node_ops);
    let t = text(&out);
    assert_eq!(
        out.status.code(),
        Some(2),
        "a panic is a harness error: {t}"
    );
    assert!(
        t.contains("step `remediate-2` panicked: fake-node-ops: told to panic on kubeletRestart"),
        "{t}"
    );
    assert_eq!(
        fx.record_lines(),
        vec![
            "apply {\"csiPluginDown\":{\"node\":\"worker-01\"}}".to_string(),
            "heal {\"csiPluginDown\":{\"node\":\"worker-01\"}}".to_string(),
        ]
    );
    let r = json(&fx.path("r.json"));
    assert_eq!(r["scenarios"][0]["verdict"], "error");
    assert_eq!(r["scenarios"][0]["faults"][0]["healedBy"], "cleanup");
}

fn interrupt(signal: i32, expected_code: i32) {
    let fx = Fx::new();
    fx.scenario("s.yaml", "interrupted", "  controller: {ref: noisy}\n  steps:\n    - fault: {name: hang, kubeletHang: {node: worker-01}}\n    - fault: {name: crash, controllerCrash: {}, heal: {after: 200ms}}\n    - sleep: 60s\n");
    let child = fx
        .cmd(
            &["run", "s.yaml", "--json", "r.json"],
            &fx.record().display().to_string(),
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as i32;
    // Wait until the fault is in and the controller is back from its crash.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !(fx.record_lines().len() == 1
        && std::fs::read_to_string(fx.path("controller.pid")).is_ok())
    {
        assert!(Instant::now() < deadline, "the fault was never injected");
        std::thread::sleep(Duration::from_millis(20));
    }
    let read_pid = || {
        std::fs::read_to_string(fx.path("controller.pid"))
            .ok()
            .and_then(|s| s.trim().parse::<i32>().ok())
    };
    let first = loop {
        if let Some(p) = read_pid() {
            break p;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    // controllerCrash heals after 200ms by starting the controller again: a new pid.
    let controller = loop {
        match read_pid() {
            Some(p) if p != first => break p,
            _ => {
                assert!(
                    Instant::now() < deadline,
                    "the controller was never restarted"
                );
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    };
    assert!(!alive(first), "the crashed controller is gone");
    assert!(alive(controller));
    // SAFETY: signalling the child we spawned.
    unsafe { libc::kill(pid, signal) };
    let out = wait_output(child, Duration::from_secs(30));
    let t = text(&out);
    assert_eq!(out.status.code(), Some(expected_code), "{t}");
    let rec = fx.record_lines();
    assert_eq!(
        rec,
        vec![
            "apply {\"kubeletHang\":{\"node\":\"worker-01\"}}".to_string(),
            "heal {\"kubeletHang\":{\"node\":\"worker-01\"}}".to_string(),
        ]
    );
    assert!(!alive(controller), "the controller was stopped");
    let r = json(&fx.path("r.json"));
    assert_eq!(r["scenarios"][0]["verdict"], "cancelled");
    assert_eq!(
        r["interruptedBy"],
        if signal == libc::SIGINT {
            "SIGINT"
        } else {
            "SIGTERM"
        }
    );
}

#[test]
fn fault_is_healed_and_controller_stopped_after_sigint() {
    interrupt(libc::SIGINT, 130);
}

#[test]
fn sigterm_heals_too_and_exits_143() {
    interrupt(libc::SIGTERM, 143);
}

#[test]
fn junit_has_one_testcase_per_expectation_and_the_json_report_has_durations() {
    let fx = Fx::new();
    fx.scenario("s.yaml", "passes", concat!(
        "  controller: {ref: noisy}\n  steps:\n",
        "    - apply: manifests/cm.yaml\n",
        "    - expect: {name: cm-created, resource: {apiVersion: v1, kind: ConfigMap, namespace: default, name: late, condition: \"object.data.a == '1'\"}, within: 3s}\n",
        "    - fault: {name: stop, kubeletStop: {node: worker-01}, heal: {after: 300ms}}\n",
        "    - expect: {name: kubelet-healed, after: stop, within: 3s, log: {source: kubelet, node: worker-01, pattern: heal kubeletStop}}\n",
        "    - fault: {name: crash, controllerCrash: {}, heal: {atStep: wait}}\n",
        "    - {name: wait, sleep: 200ms}\n",
        "    - expect: {name: controller-back, after: crash.healed, within: 3s, log: {source: controller, pattern: ready}}\n",
        "    - expect: {name: stays, for: 300ms, resource: {apiVersion: v1, kind: ConfigMap, namespace: default, all: \"object.metadata.name != ''\"}}\n",
        "  invariants:\n    - {name: no-foreign-configmaps, never: true, resource: {apiVersion: v1, kind: ConfigMap, namespace: default, any: \"object.metadata.name == 'intruder'\"}}\n"));
    let out = fx.run(&["run", ".", "--report-dir", "out"]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(0), "{t}");
    let xml = std::fs::read_to_string(fx.path("out/junit.xml")).unwrap();
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let names: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .map(|n| n.attribute("name").unwrap())
        .collect();
    assert_eq!(
        names,
        vec![
            "passes/cm-created",
            "passes/kubelet-healed",
            "passes/controller-back",
            "passes/stays",
            "passes/no-foreign-configmaps"
        ]
    );
    assert_eq!(doc.root_element().attribute("failures"), Some("0"));
    let r = json(&fx.path("out/report.json"));
    assert_eq!(r["schemaVersion"], 1);
    let exps = r["scenarios"][0]["expectations"].as_array().unwrap();
    let m = |n: &str| exps.iter().find(|e| e["name"] == n).unwrap()["measuredMs"].as_u64();
    assert!(
        m("kubelet-healed").unwrap() >= 250,
        "time to heal measured from the fault's injection"
    );
    assert!(m("controller-back").is_some());
    let faults = r["scenarios"][0]["faults"].as_array().unwrap();
    assert_eq!(faults[0]["healedBy"], "schedule");
    assert_eq!(faults[1]["healedBy"], "atStep");
    assert!(std::fs::read_to_string(fx.path("out/report.html"))
        .unwrap()
        .contains("<svg"));
    assert!(fx.path("out/passes/logs/controller.log").is_file());
    assert!(fx.path("out/passes/events.json").is_file());
    // A pass is one line on the console; its timeline is in the artifacts (and with --verbose).
    assert!(
        t.lines()
            .any(|l| l.starts_with("PASS  passes  ") && l.contains("kubelet-healed ")),
        "{t}"
    );
    assert!(!t.contains("| T+"), "{t}");
    let timeline = std::fs::read_to_string(fx.path("out/passes/timeline.txt")).unwrap();
    assert!(
        timeline.contains("| T+")
            && timeline.contains("fault stop injected: kubeletStop{node: worker-01}"),
        "{timeline}"
    );
}

#[test]
fn hot_loop_log_rate_invariant_fails_fast() {
    let fx = Fx::new();
    fx.scenario("s.yaml", "hot-loop", "  controller: {ref: noisy}\n  steps:\n    - sleep: 20s\n  invariants:\n    - {name: no-hot-loop, log: {source: controller, pattern: RestartGeneration bumped, atMost: 3, per: 10s}}\n");
    let started = Instant::now();
    let out = fx.run(&["run", "s.yaml"]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "fails fast, not after the 20s sleep"
    );
    assert!(
        t.contains("invariant `no-hot-loop` failed: violated at"),
        "{t}"
    );
    assert!(
        t.contains("4 matching lines within 10s (at most 3 allowed)"),
        "{t}"
    );
}

#[test]
fn try_catch_finally() {
    let fx = Fx::new();
    fx.scenario("s.yaml", "try-catch", concat!(
        "  steps:\n    - try:\n        - fault: {name: part, nodeNetworkPartition: {node: worker-03}}\n",
        "        - expect: {name: impossible, within: 300ms, resource: {apiVersion: v1, kind: ConfigMap, namespace: default, name: nope, condition: \"object != null\"}}\n",
        "        - script: {run: 'touch not-run'}\n",
        "      catch:\n        - script: {run: 'touch caught'}\n",
        "      finally:\n        - script: {run: 'touch finally'}\n"));
    let out = fx.run(&["run", "s.yaml"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        fx.path("caught").exists() && fx.path("finally").exists() && !fx.path("not-run").exists()
    );
    assert_eq!(fx.record_lines().len(), 2, "partition injected and healed");
}

#[test]
fn validate_reports_file_line_col_and_exits_2() {
    let fx = Fx::new();
    let bad = fx.scenario(
        "bad.yaml",
        "bad",
        "  steps:\n    - fault: {name: f, kubeletStop: {node: worker-9}}\n",
    );
    let out = fx.run(&["validate", "bad.yaml"]);
    assert_eq!(out.status.code(), Some(2));
    let want = format!("{}:6:44: error: spec.steps[0].fault.kubeletStop.node: unknown node `worker-9`, expected one of `control-plane`, `worker-01`, `worker-02`, `worker-03`", "bad.yaml");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(&want),
        "{}",
        text(&out)
    );
    let _ = bad;
    // `run` reports the same, with the same exit code, before starting anything.
    let out = fx.run(&["run", "bad.yaml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains(&want));
    fx.scenario("bad.yaml", "good", "  steps:\n    - sleep: 1ms\n");
    let out = fx.run(&["validate", "."]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("1 scenario(s) valid"));
}

#[test]
fn schema_is_json_schema_for_scenarios_and_suites() {
    let fx = Fx::new();
    let out = fx.run(&["schema"]);
    assert_eq!(out.status.code(), Some(0));
    let s: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(s["$schema"].as_str().unwrap().contains("json-schema.org"));
    assert_eq!(s["title"], "Scenario");
    let defs = s["$defs"].as_object().unwrap();
    assert!(defs.contains_key("Step") && defs.contains_key("Fault") && defs.contains_key("Expect"));
    assert!(defs["Fault"]["properties"]
        .get("staleDeviceMount")
        .is_some());
    let out = fx.run(&["schema", "--suite"]);
    let s: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(s["title"], "Suite");
}

#[test]
fn kind_without_docker_and_existing_outside_the_allow_list_are_harness_errors() {
    let fx = Fx::new();
    fx.scenario("s.yaml", "x", "  steps:\n    - sleep: 1ms\n");
    if std::path::Path::new("/var/run/docker.sock").exists() {
        eprintln!("a Docker engine is present: the no-engine error path is not exercised here");
    } else {
        let out = fx.run(&["run", "s.yaml", "--provider", "kind"]);
        assert_eq!(out.status.code(), Some(2));
        assert!(
            text(&out).contains("cluster failed to start: connecting to the Docker engine"),
            "{}",
            text(&out)
        );
    }
    let out = fx.run(&[
        "run",
        "s.yaml",
        "--provider",
        "existing",
        "--context",
        "prod",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out)
            .contains("context `prod` is not in the suite's existing.allowedContexts (empty)"),
        "{}",
        text(&out)
    );
}

#[test]
fn baseline_flags_regressed_recovery_times() {
    let fx = Fx::new();
    fx.scenario("s.yaml", "recovery", "  steps:\n    - fault: {name: stop, kubeletStop: {node: worker-01}, heal: {after: 600ms}}\n    - expect: {name: recovered, after: stop, within: 5s, log: {source: kubelet, pattern: heal kubeletStop}}\n");
    let out = fx.run(&["run", "s.yaml", "--json", "base.json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    // Pretend the last release recovered in 100ms.
    let mut base = json(&fx.path("base.json"));
    base["scenarios"][0]["expectations"][0]["measuredMs"] = 100.into();
    std::fs::write(fx.path("base.json"), base.to_string()).unwrap();
    let out = fx.run(&[
        "run",
        "s.yaml",
        "--baseline",
        "base.json",
        "--json",
        "now.json",
    ]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(
        t.contains("Regressions against the baseline:")
            && t.contains("recovery/recovered: 100ms -> "),
        "{t}"
    );
    let now = json(&fx.path("now.json"));
    assert_eq!(now["regressions"][0]["expectation"], "recovered");
    // Within the ratio: no regression.
    let out = fx.run(&[
        "run",
        "s.yaml",
        "--baseline",
        "now.json",
        "--regression-ratio",
        "3",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
}

#[test]
fn filter_and_shard_select_scenarios() {
    let fx = Fx::new();
    for n in ["alpha", "bravo", "charlie"] {
        fx.scenario(&format!("{n}.yaml"), n, "  steps:\n    - sleep: 1ms\n");
    }
    let names = |args: &[&str]| -> Vec<String> {
        let mut a = vec!["run", ".", "--json", "r.json"];
        a.extend_from_slice(args);
        let out = fx.run(&a);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        json(&fx.path("r.json"))["scenarios"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(names(&["--shard", "1/2"]), vec!["alpha", "charlie"]);
    assert_eq!(names(&["--shard", "2/2", "--jobs", "2"]), vec!["bravo"]);
    assert_eq!(
        names(&["--filter", "^(alpha|bravo)$", "--jobs", "3"]),
        vec!["alpha", "bravo"]
    );
    let out = fx.run(&["run", ".", "--shard", "3/2"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn sim_up_still_serves_until_interrupted() {
    let fx = Fx::new();
    let kc = fx.path("sim.kubeconfig");
    let child = Command::new(BIN)
        .args(["sim", "up", "--nodes", "2", "--kubeconfig"])
        .arg(&kc)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !kc.is_file() {
        assert!(Instant::now() < deadline, "no kubeconfig written");
        std::thread::sleep(Duration::from_millis(20));
    }
    // The kubeconfig works for faultline's own client.
    std::fs::write(
        fx.path("ns.yaml"),
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: probe}\n",
    )
    .unwrap();
    let out = Command::new(BIN)
        .args(["kube", "apply", "-f"])
        .arg(fx.path("ns.yaml"))
        .env("KUBECONFIG", &kc)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("Namespace probe applied"));
    // SAFETY: signalling the child we spawned.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = wait_output(child, Duration::from_secs(20));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("faultline sim: stopping"));
}
