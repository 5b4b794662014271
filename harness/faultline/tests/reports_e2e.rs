//! The reporters end to end, through the built binary on the sim provider: the console's one
//! line per pass and whole timeline per failure (`--quiet`, `--verbose`), the Markdown summary
//! (`--summary`, `$GITHUB_STEP_SUMMARY`), `--retries` with flaky results in console, JSON and
//! JUnit (`flakyFailure`, parsed), `faultline report merge` of shard reports, and API errors
//! shown as their Status message.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

mod common;
use common::{json, text, BIN, HEAD};

struct Fx {
    dir: tempfile::TempDir,
}

impl Fx {
    fn new() -> Fx {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("faultline.yaml"), "apiVersion: faultline.dev/v1alpha1\nkind: Suite\ndefaults: {expectWithin: 5s, stepTimeout: 10s}\n").unwrap();
        std::fs::create_dir_all(dir.path().join("manifests")).unwrap();
        std::fs::write(
            dir.path().join("manifests/cm.yaml"),
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {a: \"1\"}\n",
        )
        .unwrap();
        Fx { dir }
    }
    fn path(&self, p: &str) -> PathBuf {
        self.dir.path().join(p)
    }
    fn scenario(&self, name: &str, spec: &str) {
        std::fs::write(
            self.path(&format!("{name}.yaml")),
            format!("{HEAD}metadata: {{name: {name}}}\nspec:\n{spec}"),
        )
        .unwrap();
    }
    /// A passing scenario with one measured expectation.
    fn passing(&self, name: &str) {
        self.scenario(name, "  steps:\n    - apply: manifests/cm.yaml\n    - expect: {name: cm-there, within: 5s, resource: {apiVersion: v1, kind: ConfigMap, namespace: default, name: cm, condition: \"object != null\"}}\n");
    }
    fn failing(&self, name: &str) {
        self.scenario(name, "  steps:\n    - expect: {name: never-there, within: 300ms, resource: {apiVersion: v1, kind: ConfigMap, namespace: default, name: nope, condition: \"object != null\"}}\n");
    }
    fn run(&self, args: &[&str], env: &[(&str, &Path)]) -> Output {
        let mut c = Command::new(BIN);
        c.args(args)
            .current_dir(self.dir.path())
            .stdin(Stdio::null())
            .env_remove("GITHUB_STEP_SUMMARY");
        for (k, v) in env {
            c.env(k, v);
        }
        c.output().unwrap()
    }
}

#[test]
fn a_pass_is_one_line_a_failure_its_whole_timeline() {
    let fx = Fx::new();
    fx.passing("ok-scn");
    fx.failing("bad-scn");
    let step_summary = fx.path("gh-summary.md");
    std::fs::write(&step_summary, "earlier step\n").unwrap();
    let out = fx.run(
        &["run", ".", "--summary", "s.md", "--report-dir", "out"],
        &[("GITHUB_STEP_SUMMARY", &step_summary)],
    );
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    let ok_lines: Vec<&str> = t.lines().filter(|l| l.contains("ok-scn")).collect();
    assert_eq!(ok_lines.len(), 1, "a pass is one line: {t}");
    assert!(
        ok_lines[0].starts_with("PASS  ok-scn  ")
            && ok_lines[0].contains("cm-there ")
            && ok_lines[0].ends_with("/5s"),
        "{t}"
    );
    assert!(
        t.contains("### bad-scn - FAIL"),
        "a failure prints its timeline: {t}"
    );
    assert!(
        t.contains("why:           budget missed") || t.contains("why:"),
        "{t}"
    );
    assert!(
        t.contains("last observed:") && t.contains("collected objects, events and logs:"),
        "{t}"
    );
    assert!(
        t.contains("2 scenario(s) in ") && t.contains("1 passed, 1 failed"),
        "{t}"
    );
    // The Markdown summary, in the file and appended to $GITHUB_STEP_SUMMARY.
    let md = std::fs::read_to_string(fx.path("s.md")).unwrap();
    assert!(
        md.contains("| Scenario | Verdict | Duration | Measured / budget |"),
        "{md}"
    );
    assert!(
        md.lines()
            .any(|l| l.starts_with("| ok-scn | ✅ pass |") && l.contains("cm-there")),
        "{md}"
    );
    assert!(
        md.lines().any(|l| l.starts_with("| bad-scn | ❌ fail |")),
        "{md}"
    );
    assert!(
        md.contains("<details><summary><b>bad-scn</b> FAIL:"),
        "{md}"
    );
    let gh = std::fs::read_to_string(&step_summary).unwrap();
    assert!(
        gh.starts_with("earlier step\n") && gh.contains("| ok-scn | ✅ pass |"),
        "appended: {gh}"
    );
    assert!(fx.path("out/summary.md").is_file());

    let quiet = fx.run(&["run", ".", "--quiet"], &[]);
    let q = text(&quiet);
    assert!(
        !q.contains("PASS  ok-scn") && !q.contains("faultline: 2 scenario(s), provider"),
        "{q}"
    );
    assert!(
        q.contains("### bad-scn - FAIL") && q.contains("2 scenario(s) in "),
        "{q}"
    );

    let verbose = fx.run(&["run", ".", "--verbose"], &[]);
    let v = text(&verbose);
    assert!(
        v.contains("### ok-scn - PASS") && v.contains("### bad-scn - FAIL"),
        "{v}"
    );
}

#[test]
fn a_pass_after_a_failure_is_flaky() {
    let fx = Fx::new();
    // Fails on its first attempt only (the marker survives the attempt, not the cluster).
    fx.scenario("flappy", "  steps:\n    - script: {run: 'if [ -f marker ]; then exit 0; fi; touch marker; exit 1'}\n    - apply: manifests/cm.yaml\n    - expect: {name: cm-there, within: 5s, resource: {apiVersion: v1, kind: ConfigMap, namespace: default, name: cm, condition: \"object != null\"}}\n");
    let out = fx.run(
        &[
            "run",
            "flappy.yaml",
            "--retries",
            "2",
            "--json",
            "r.json",
            "--junit",
            "j.xml",
            "--report-dir",
            "out",
        ],
        &[],
    );
    let t = text(&out);
    assert_eq!(out.status.code(), Some(0), "flaky passes by default: {t}");
    assert!(t.contains("RETRY flappy  attempt 1 of 3 FAIL"), "{t}");
    assert!(
        t.lines()
            .any(|l| l.starts_with("FLAKY flappy") && l.contains("passed on attempt 2")),
        "{t}"
    );
    assert!(t.contains("1 passed (1 flaky)"), "{t}");
    let r = json(&fx.path("r.json"));
    let s = &r["scenarios"][0];
    assert_eq!(
        (s["flaky"].as_bool(), s["attempts"].as_u64()),
        (Some(true), Some(2))
    );
    assert_eq!(s["failedAttempts"][0]["attempt"], 1);
    assert!(
        s["failedAttempts"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("script exited with 1"),
        "{s}"
    );
    assert!(
        s["failedAttempts"][0]["artifacts"]
            .as_str()
            .unwrap()
            .ends_with("out/flappy"),
        "{s}"
    );
    assert!(
        s["artifacts"]
            .as_str()
            .unwrap()
            .ends_with("out/flappy-attempt-2"),
        "{s}"
    );
    assert_eq!(r["summary"]["flaky"], 1);
    // JUnit: the passing test case carries the failed attempt as <flakyFailure>.
    let xml = std::fs::read_to_string(fx.path("j.xml")).unwrap();
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let case = doc
        .descendants()
        .find(|n| n.has_tag_name("testcase") && n.attribute("name") == Some("flappy/cm-there"))
        .unwrap();
    assert!(!case.children().any(|n| n.has_tag_name("failure")), "{xml}");
    let flaky: Vec<_> = case
        .children()
        .filter(|n| n.has_tag_name("flakyFailure"))
        .collect();
    assert_eq!(flaky.len(), 1, "{xml}");
    assert!(
        flaky[0]
            .attribute("message")
            .unwrap()
            .starts_with("attempt 1: "),
        "{xml}"
    );

    // --flaky-fails: the same flaky pass fails the run.
    std::fs::remove_file(fx.path("marker")).unwrap();
    let strict = fx.run(
        &["run", "flappy.yaml", "--retries", "1", "--flaky-fails"],
        &[],
    );
    assert_eq!(strict.status.code(), Some(1), "{}", text(&strict));
    // Without retries the first failure is final.
    std::fs::remove_file(fx.path("marker")).unwrap();
    let once = fx.run(&["run", "flappy.yaml"], &[]);
    assert_eq!(once.status.code(), Some(1), "{}", text(&once));
    assert!(!text(&once).contains("RETRY"));
}

#[test]
fn every_attempt_failed_is_a_failure_with_reruns() {
    let fx = Fx::new();
    fx.failing("always-bad");
    let out = fx.run(
        &[
            "run",
            ".",
            "--retries",
            "1",
            "--junit",
            "j.xml",
            "--json",
            "r.json",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).lines().any(
            |l| l.starts_with("FAIL  always-bad  ") && l.ends_with("(every one of 2 attempts)")
        ),
        "{}",
        text(&out)
    );
    let r = json(&fx.path("r.json"));
    assert_eq!(
        (
            r["scenarios"][0]["flaky"].as_bool(),
            r["scenarios"][0]["attempts"].as_u64()
        ),
        (Some(false), Some(2))
    );
    let xml = std::fs::read_to_string(fx.path("j.xml")).unwrap();
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let case = doc
        .descendants()
        .find(|n| n.has_tag_name("testcase"))
        .unwrap();
    assert_eq!(
        case.children()
            .filter(|n| n.has_tag_name("failure"))
            .count(),
        1,
        "{xml}"
    );
    assert_eq!(
        case.children()
            .filter(|n| n.has_tag_name("rerunFailure"))
            .count(),
        1,
        "{xml}"
    );
}

#[test]
fn shard_reports_merge_into_one() {
    let fx = Fx::new();
    for n in ["s-a", "s-b", "s-c"] {
        fx.passing(n);
    }
    fx.failing("s-d");
    let one = fx.run(
        &[
            "run",
            ".",
            "--shard",
            "1/2",
            "--seed",
            "11",
            "--json",
            "shard-1.json",
        ],
        &[],
    );
    let two = fx.run(
        &[
            "run",
            ".",
            "--shard",
            "2/2",
            "--seed",
            "22",
            "--json",
            "shard-2.json",
        ],
        &[],
    );
    assert_eq!(one.status.code(), Some(0), "{}", text(&one));
    assert_eq!(
        two.status.code(),
        Some(1),
        "s-d is in shard 2: {}",
        text(&two)
    );
    let m = fx.run(
        &["report", "merge", "merged", "shard-1.json", "shard-2.json"],
        &[],
    );
    let t = text(&m);
    assert_eq!(m.status.code(), Some(1), "the merged run failed: {t}");
    assert!(
        t.contains("4 scenario(s) in ") && t.contains("3 passed, 1 failed"),
        "{t}"
    );
    let r = json(&fx.path("merged/report.json"));
    assert_eq!(r["summary"]["scenarios"], 4);
    assert_eq!(
        (
            r["summary"]["passed"].as_u64(),
            r["summary"]["failed"].as_u64()
        ),
        (Some(3), Some(1))
    );
    let seeds: Vec<(String, u64)> = r["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap().to_string(),
                s["seed"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        seeds,
        vec![
            ("s-a".into(), 11),
            ("s-b".into(), 22),
            ("s-c".into(), 11),
            ("s-d".into(), 22)
        ]
    );
    assert_eq!(r["mergedFrom"].as_array().unwrap().len(), 2);
    assert_eq!(r["mergedFrom"][1]["shard"], "2/2");
    let xml = std::fs::read_to_string(fx.path("merged/junit.xml")).unwrap();
    let doc = roxmltree::Document::parse(&xml).unwrap();
    assert_eq!(
        doc.descendants()
            .filter(|n| n.has_tag_name("testsuite"))
            .count(),
        4,
        "{xml}"
    );
    assert_eq!(doc.root_element().attribute("failures"), Some("1"), "{xml}");
    let html = std::fs::read_to_string(fx.path("merged/report.html")).unwrap();
    assert!(
        html.contains("merged from 2 shard report(s)") && html.matches("<section").count() == 4
    );
    // A merged report merges again: counting once is idempotent.
    let again = fx.run(
        &[
            "report",
            "merge",
            "merged2",
            "merged/report.json",
            "shard-1.json",
        ],
        &[],
    );
    assert_eq!(
        json(&fx.path("merged2/report.json"))["summary"]["scenarios"],
        4,
        "{}",
        text(&again)
    );
    // Not a report: a clear error, exit 2.
    std::fs::write(fx.path("junk.json"), "{\"a\": 1}").unwrap();
    let bad = fx.run(&["report", "merge", "m3", "junk.json"], &[]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        text(&bad).contains("junk.json: not a faultline JSON report (no schemaVersion)"),
        "{}",
        text(&bad)
    );
}

#[test]
fn api_errors_show_the_status_message() {
    let fx = Fx::new();
    fx.scenario(
        "twice",
        "  steps:\n    - create: manifests/cm.yaml\n    - create: manifests/cm.yaml\n",
    );
    let out = fx.run(&["run", "twice.yaml"], &[]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(t.contains("step `create-2` (create) failed: creating ConfigMap cm: configmaps \"cm\" already exists (409 AlreadyExists)"), "{t}");
    assert!(
        !t.contains("Status {") && !t.contains("ErrorResponse"),
        "no Debug dump: {t}"
    );
}
