//! The HTML report rendered by a real browser: Debian's headless Chromium loads a report of a
//! run with a passing and a failing scenario; the test fails on any console message of level
//! warning or error, and on a missing section in the DOM Chromium built (the summary table with
//! one row per scenario and its budgets, a folded timeline for the pass, an open one and the
//! details for the failure). It also writes a screenshot (`FAULTLINE_SCREENSHOT=path`) for a
//! person to look at. Skips only when chromium is absent and CI is not set.

use std::path::PathBuf;
use std::process::{Command, Stdio};

mod common;
use common::chromium::{chromium, chromium_cmd, console_messages, dump_dom};
use common::BIN;

fn report() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    std::fs::write(
        p.join("faultline.yaml"),
        "apiVersion: faultline.dev/v1alpha1\nkind: Suite\ndefaults: {expectWithin: 5s}\n",
    )
    .unwrap();
    std::fs::write(
        p.join("cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\n",
    )
    .unwrap();
    let head = "apiVersion: faultline.dev/v1alpha1\nkind: Scenario\n";
    std::fs::write(p.join("ok.yaml"), format!("{head}metadata: {{name: quick-pass}}\nspec:\n  steps:\n    - apply: cm.yaml\n    - expect: {{name: cm-there, within: 5s, resource: {{apiVersion: v1, kind: ConfigMap, namespace: default, name: cm, condition: \"object != null\"}}}}\n")).unwrap();
    std::fs::write(p.join("bad.yaml"), format!("{head}metadata: {{name: slow-fail}}\nspec:\n  steps:\n    - expect: {{name: never-there, within: 300ms, resource: {{apiVersion: v1, kind: ConfigMap, namespace: default, name: nope, condition: \"object != null\"}}}}\n")).unwrap();
    let out = Command::new(BIN)
        .args(["run", ".", "--html", "report.html"])
        .current_dir(p)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let html = p.join("report.html");
    (dir, html)
}

#[test]
fn chromium_renders_the_report_without_console_errors() {
    let Some(bin) = chromium() else {
        eprintln!("chromium not installed and CI not set: skipping");
        return;
    };
    let (dir, html) = report();
    let url = format!("file://{}", html.display());
    let dom = dump_dom(&bin, &html, dir.path());
    // Chromium serializes the DOM it built (HTML, not XML): the sections are found by markup.
    let summary_start = dom
        .find(r#"<table class="summary">"#)
        .expect("the summary table");
    let first_section = dom.find("<section").expect("scenario sections");
    assert!(
        summary_start < first_section,
        "the report opens with the summary table"
    );
    let summary =
        &dom[summary_start..dom[summary_start..].find("</table>").unwrap() + summary_start];
    assert_eq!(
        summary.matches("<tr>").count(),
        3,
        "a header and one row per scenario: {summary}"
    );
    assert!(
        summary.contains(r##"href="#scenario-quick-pass""##)
            && summary.contains(r##"href="#scenario-slow-fail""##),
        "{summary}"
    );
    assert!(
        summary.contains("cm-there: ") && summary.contains(" / 5s"),
        "measured against budget: {summary}"
    );
    let pass = section(&dom, "scenario-quick-pass");
    assert!(
        pass.contains(r#"<details class="timeline"><summary>Timeline"#),
        "a passing timeline is folded: {pass}"
    );
    let fail = section(&dom, "scenario-slow-fail");
    assert!(
        fail.contains(r#"<details class="timeline" open=""><summary>Timeline"#),
        "a failing timeline is open: {fail}"
    );
    assert!(
        fail.contains("<h3>Details</h3>") && fail.contains("<svg"),
        "{fail}"
    );

    // A screenshot, for a person (and for this test: the page renders to a non-empty image).
    let shot = std::env::var_os("FAULTLINE_SCREENSHOT")
        .map(PathBuf::from)
        .unwrap_or_else(|| dir.path().join("report.png"));
    let out = chromium_cmd(&bin, &dir.path().join("profile-shot"))
        .arg(format!("--screenshot={}", shot.display()))
        .arg("--window-size=1280,1600")
        .arg(&url)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(console_messages(&stderr), Vec::<String>::new(), "{stderr}");
    let png = std::fs::read(&shot).unwrap();
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 10_000,
        "a real screenshot ({} bytes)",
        png.len()
    );
}

fn section<'a>(dom: &'a str, id: &str) -> &'a str {
    let start = dom
        .find(&format!(r#"<section id="{id}">"#))
        .unwrap_or_else(|| panic!("section {id}"));
    let end = dom[start..].find("</section>").unwrap() + start;
    &dom[start..end]
}
