//! The Markdown summary for CI (`--summary FILE`, and `$GITHUB_STEP_SUMMARY` when set): a table
//! of every scenario with its verdict, duration and measured durations against budgets, then
//! each scenario that did not pass with why, folded (GitHub renders `<details>` in summaries).

use super::{console, ms, RunReport};
use crate::timeline::Verdict;

fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

fn mark(v: Verdict, flaky: bool) -> &'static str {
    match (v, flaky) {
        (Verdict::Passed, true) => "⚠️ flaky",
        (Verdict::Passed, false) => "✅ pass",
        (Verdict::Failed, _) => "❌ fail",
        (Verdict::Error, _) => "💥 error",
        (Verdict::Skipped | Verdict::Cancelled, _) => "⏹️ cancelled",
    }
}

pub fn render(r: &RunReport) -> String {
    let s = &r.summary;
    let mut o = format!(
        "## faultline: {} of {} scenario(s) passed\n\n",
        s.passed, s.scenarios
    );
    o += &format!(
        "{}\n\nProvider `{}`, seed `{}`{}.\n\n",
        console::total_line(r),
        r.provider,
        r.seed,
        r.shard
            .as_ref()
            .map(|x| format!(", shard {x}"))
            .unwrap_or_default()
    );
    o += "| Scenario | Verdict | Duration | Measured / budget |\n|---|---|---|---|\n";
    for sc in &r.scenarios {
        o += &format!(
            "| {} | {} | {} | {} |\n",
            cell(&sc.name),
            mark(sc.verdict, sc.flaky),
            ms(sc.duration_ms),
            cell(&sc.budget_summary().join(", "))
        );
    }
    for sc in r
        .scenarios
        .iter()
        .filter(|x| x.verdict != Verdict::Passed || x.flaky)
    {
        let why = sc
            .reason
            .clone()
            .or_else(|| sc.failed_attempts.first().and_then(|a| a.reason.clone()))
            .unwrap_or_default();
        o += &format!(
            "\n<details><summary><b>{}</b> {}: {}</summary>\n\n",
            html_text(&sc.name),
            sc.verdict.word(),
            html_text(&why)
        );
        o += &format!(
            "```text\n{}{}```\n\n</details>\n",
            console::failure_details(sc),
            sc.failed_attempts
                .iter()
                .map(|a| format!(
                    "attempt {} {}: {}\n",
                    a.attempt,
                    a.verdict.word(),
                    a.reason.clone().unwrap_or_default()
                ))
                .collect::<String>()
        );
    }
    if !r.regressions.is_empty() {
        o += "\n### Regressions against the baseline\n\n| Scenario | Expectation | Baseline | Now | Ratio |\n|---|---|---|---|---|\n";
        for g in &r.regressions {
            o += &format!(
                "| {} | {} | {} | {} | x{:.2} |\n",
                cell(&g.scenario),
                cell(&g.expectation),
                ms(g.baseline_ms),
                ms(g.current_ms),
                g.ratio
            );
        }
    }
    o
}

fn html_text(s: &str) -> String {
    super::html::esc(s).replace('\n', " ")
}

/// Write to `path`, appending when it is `$GITHUB_STEP_SUMMARY` (several steps share that file).
pub fn write(r: &RunReport, path: &std::path::Path, append: bool) -> anyhow::Result<()> {
    use std::io::Write;
    if let Some(p) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(p)?;
    }
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .append(append)
        .truncate(!append)
        .open(path)?;
    f.write_all(render(r).as_bytes())?;
    Ok(())
}
