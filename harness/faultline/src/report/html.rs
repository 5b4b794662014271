//! A self-contained HTML page (no scripts, no external assets). It opens with a summary table
//! (scenario, verdict, duration, each measured duration against its budget, linked to the
//! scenario's section); then per scenario an inline SVG timeline (steps, fault windows,
//! expectation windows with their deadlines and the moment each condition held), the
//! expectations, and the runbook-style timeline table - folded (`<details>`) for a passing
//! scenario, open for one that did not pass, which also shows why.

use super::{ms, RunReport, ScenarioReport};
use crate::timeline::{EntryKind, Verdict};

pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The stylesheet every faultline HTML page shares (the run report, `faultline explore`'s).
pub const STYLE: &str = "
body{font-family:sans-serif;margin:2em;color:#222}table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top;font-size:13px}
.badge{color:#fff;padding:2px 8px;border-radius:4px;font-size:14px}small{color:#777;font-weight:normal}.reason{color:#c62828}
tr.fault td{background:#fff3e0}tr.heal td{background:#e8f5e9}tr.err td{background:#ffebee}section{border-top:1px solid #ccc;margin-top:1.5em}pre{background:#f6f6f6;padding:1em;overflow:auto}
table.summary td{font-size:14px}.over{color:#c62828;font-weight:bold}details.timeline>summary{cursor:pointer;font-weight:bold;margin:.8em 0}a{color:#1565c0}
";

/// A self-contained page's head (no scripts, no external assets), the body opened.
pub fn head(title: &str) -> String {
    format!(
        r#"<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>{}</title><link rel="icon" href="data:,"><style>{STYLE}</style></head><body>"#,
        esc(title)
    )
}

pub fn color(v: Verdict) -> &'static str {
    match v {
        Verdict::Passed => "#2e7d32",
        Verdict::Failed => "#c62828",
        Verdict::Error => "#6a1b9a",
        Verdict::Skipped | Verdict::Cancelled => "#757575",
    }
}

/// The SVG timeline of one scenario.
pub fn svg(s: &ScenarioReport) -> String {
    let width = 960.0;
    let left = 170.0;
    let plot = width - left - 50.0; // room for the verdict word after the last window
    let end_ms = s
        .expectations
        .iter()
        .map(|e| {
            e.finished_ms
                .max(e.anchor_ms + e.budget.within_ms.unwrap_or(0))
        })
        .chain(
            s.faults
                .iter()
                .map(|f| f.healed_ms.unwrap_or(f.injected_ms)),
        )
        .chain([s.duration_ms, 1])
        .max()
        .unwrap_or(1) as f64;
    let x = |t: u64| left + plot * (t as f64 / end_ms);
    let row_h = 22.0;
    let rows = 1 + s.faults.len() + s.expectations.len();
    let height = 40.0 + row_h * rows as f64 + 20.0;
    let mut o = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">"#
    );
    // Axis with ticks.
    let axis_y = height - 18.0;
    o += &format!(
        r##"<line x1="{left}" y1="{axis_y}" x2="{}" y2="{axis_y}" stroke="#999"/>"##,
        left + plot
    );
    for i in 0..=5 {
        let t = (end_ms * i as f64 / 5.0) as u64;
        let tx = x(t);
        o += &format!(
            r##"<line x1="{tx}" y1="{}" x2="{tx}" y2="{}" stroke="#ddd"/><text x="{tx}" y="{}" text-anchor="middle" fill="#555">T+{}</text>"##,
            20.0,
            axis_y,
            axis_y + 13.0,
            esc(&ms(t))
        );
    }
    // Steps row: ticks.
    let mut y = 20.0;
    o += &format!(r##"<text x="4" y="{}" fill="#333">steps</text>"##, y + 14.0);
    for st in &s.steps {
        let sx = x(st.started_ms);
        let w = (x(st.started_ms + st.duration_ms) - sx).max(2.0);
        o += &format!(
            r##"<rect x="{sx}" y="{}" width="{w}" height="14" fill="{}" opacity="0.35"><title>{} ({}) {} at T+{}</title></rect>"##,
            y + 3.0,
            color(st.verdict),
            esc(&st.name),
            esc(st.kind.as_str()),
            st.verdict.word(),
            esc(&ms(st.started_ms))
        );
    }
    y += row_h;
    for f in &s.faults {
        let fx = x(f.injected_ms);
        let healed = f.healed_ms.unwrap_or(f.injected_ms);
        let w = (x(healed) - fx).max(3.0);
        o += &format!(
            r##"<text x="4" y="{}" fill="#333">fault {}</text>"##,
            y + 14.0,
            esc(&f.name)
        );
        o += &format!(
            r##"<rect x="{fx}" y="{}" width="{w}" height="14" fill="#ef6c00"><title>{}: T+{} to T+{} ({})</title></rect>"##,
            y + 3.0,
            esc(&f.operation),
            esc(&ms(f.injected_ms)),
            esc(&ms(healed)),
            esc(f.healed_by.as_str())
        );
        y += row_h;
    }
    for e in &s.expectations {
        o += &format!(
            r##"<text x="4" y="{}" fill="#333">{}</text>"##,
            y + 14.0,
            esc(&e.name)
        );
        if e.verdict != Verdict::Skipped {
            let ax = x(e.anchor_ms);
            let fx = x(e.finished_ms).max(ax + 2.0);
            o += &format!(
                r##"<rect x="{ax}" y="{}" width="{}" height="14" fill="{}" opacity="0.25"><title>{}</title></rect>"##,
                y + 3.0,
                fx - ax,
                color(e.verdict),
                esc(&e.description)
            );
            if let Some(w) = e.budget.within_ms {
                let dx = x(e.anchor_ms + w);
                o += &format!(
                    r##"<line x1="{dx}" y1="{}" x2="{dx}" y2="{}" stroke="#000" stroke-dasharray="2,2"><title>deadline: within {} after {}</title></line>"##,
                    y + 1.0,
                    y + 19.0,
                    esc(&ms(w)),
                    esc(&e.anchor)
                );
            }
            if let Some(m) = e.measured_ms {
                let mx = x(e.anchor_ms + m);
                o += &format!(
                    r##"<circle cx="{mx}" cy="{}" r="5" fill="{}"><title>held after {}</title></circle>"##,
                    y + 10.0,
                    color(e.verdict),
                    esc(&ms(m))
                );
            }
            o += &format!(
                r##"<text x="{}" y="{}" fill="{}">{}</text>"##,
                fx + 4.0,
                y + 14.0,
                color(e.verdict),
                e.verdict.word()
            );
        } else {
            o += &format!(
                r##"<text x="{left}" y="{}" fill="#757575">skipped</text>"##,
                y + 14.0
            );
        }
        y += row_h;
    }
    o += "</svg>";
    o
}

/// The anchor of a scenario's section.
fn anchor(s: &ScenarioReport) -> String {
    format!("scenario-{}", s.name)
}

fn word(s: &ScenarioReport) -> &'static str {
    if s.flaky {
        "FLAKY"
    } else {
        s.verdict.word()
    }
}

/// Each measured duration against its budget, `fn3b-fires: 8.1s / 40s`, over budget in red.
fn budgets(s: &ScenarioReport) -> String {
    let mut cells = vec![];
    for e in &s.expectations {
        let (text, over) = match (e.measured_ms, e.budget.within_ms) {
            (Some(m), Some(w)) => (
                format!("{}: {} / {}", e.name, ms(m), ms(w)),
                m > w || e.verdict == Verdict::Failed,
            ),
            (Some(m), None) => (
                format!("{}: {}", e.name, ms(m)),
                e.verdict == Verdict::Failed,
            ),
            (None, Some(w)) if e.verdict == Verdict::Failed => {
                (format!("{}: not met / {}", e.name, ms(w)), true)
            }
            _ => continue,
        };
        let class = if over { r#" class="over""# } else { "" };
        cells.push(format!("<span{class}>{}</span>", esc(&text)));
    }
    cells.join("<br>")
}

fn summary_table(r: &RunReport) -> String {
    let mut o = String::from(
        r#"<table class="summary"><thead><tr><th>scenario</th><th>verdict</th><th>duration</th><th>measured / budget</th></tr></thead><tbody>"#,
    );
    for s in &r.scenarios {
        let badge = if s.flaky { "#ef6c00" } else { color(s.verdict) };
        o += &format!(
            r##"<tr><td><a href="#{}">{}</a></td><td><span class="badge" style="background:{badge}">{}</span></td><td>{}</td><td>{}</td></tr>"##,
            esc(&anchor(s)),
            esc(&s.name),
            word(s),
            esc(&ms(s.duration_ms)),
            budgets(s)
        );
    }
    o += "</tbody></table>";
    o
}

fn scenario(s: &ScenarioReport) -> String {
    let badge = if s.flaky { "#ef6c00" } else { color(s.verdict) };
    let mut o = format!(
        r#"<section id="{}"><h2><span class="badge" style="background:{badge}">{}</span> {} <small>{} - {}</small></h2>"#,
        esc(&anchor(s)),
        word(s),
        esc(&s.name),
        esc(&ms(s.duration_ms)),
        esc(&s.file)
    );
    if let Some(d) = &s.description {
        o += &format!("<p>{}</p>", esc(d));
    }
    if let Some(r) = &s.reason {
        o += &format!(r#"<p class="reason">{}</p>"#, esc(r));
    }
    o += &svg(s);
    o += "<h3>Expectations</h3><table><tr><th>name</th><th>expected</th><th>budget</th><th>measured</th><th>verdict</th><th>detail</th></tr>";
    for e in &s.expectations {
        let budget = [
            e.budget
                .within_ms
                .map(|w| format!("within {} after {}", ms(w), e.anchor)),
            e.budget.for_ms.map(|f| format!("for {}", ms(f))),
        ]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(", ");
        o += &format!(
            r#"<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td style="color:{}">{}</td><td>{}{}</td></tr>"#,
            esc(&e.name),
            esc(&e.description),
            esc(&budget),
            e.measured_ms.map(|m| esc(&ms(m))).unwrap_or_default(),
            color(e.verdict),
            e.verdict.word(),
            esc(&e.message),
            e.last_observed
                .as_ref()
                .map(|l| format!("<br><em>last observed:</em> {}", esc(l)))
                .unwrap_or_default()
        );
    }
    let open = if s.verdict == Verdict::Passed {
        ""
    } else {
        " open"
    };
    o += &format!(
        r#"</table><details class="timeline"{open}><summary>Timeline ({} events)</summary><table><tr><th>Time</th><th>Event</th></tr>"#,
        s.timeline.len()
    );
    for e in &s.timeline {
        let class = match e.kind {
            EntryKind::Fault => "fault",
            EntryKind::Heal => "heal",
            EntryKind::Error => "err",
            _ => "",
        };
        o += &format!(
            r#"<tr class="{class}"><td>T+{}</td><td>{}</td></tr>"#,
            esc(&ms(e.at_ms)),
            esc(&e.text)
        );
    }
    o += "</table></details>";
    if s.verdict != Verdict::Passed {
        o += &format!(
            "<h3>Details</h3><pre>{}</pre>",
            esc(&super::console::failure_details(s))
        );
    }
    if !s.failed_attempts.is_empty() {
        o += "<h3>Earlier attempts</h3><ul>";
        for a in &s.failed_attempts {
            o += &format!(
                "<li>attempt {} {} after {}: {}{}</li>",
                a.attempt,
                a.verdict.word(),
                esc(&ms(a.duration_ms)),
                esc(a.reason.as_deref().unwrap_or("")),
                a.artifacts
                    .as_ref()
                    .map(|d| format!(" (artifacts: {})", esc(d)))
                    .unwrap_or_default()
            );
        }
        o += "</ul>";
    }
    o += "</section>";
    o
}

pub fn render(r: &RunReport) -> String {
    let s = &r.summary;
    let mut o = head("faultline report");
    o += &format!("<h1>faultline report</h1><p id=\"totals\">{} scenario(s) in {}: {} passed{}, {} failed, {} error(s), {} cancelled - provider {}, seed {}, started {}{}</p>",
        s.scenarios, esc(&ms(r.duration_ms)), s.passed, if s.flaky > 0 { format!(" ({} flaky)", s.flaky) } else { String::new() },
        s.failed, s.errors, s.cancelled, esc(&r.provider), r.seed, esc(&r.started_at),
        if r.merged_from.is_empty() { String::new() } else { format!(", merged from {} shard report(s)", r.merged_from.len()) });
    o += &summary_table(r);
    if !r.regressions.is_empty() {
        o += "<h2>Regressions</h2><table><tr><th>scenario</th><th>expectation</th><th>baseline</th><th>now</th><th>ratio</th></tr>";
        for g in &r.regressions {
            o += &format!(
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>x{:.2}</td></tr>",
                esc(&g.scenario),
                esc(&g.expectation),
                ms(g.baseline_ms),
                ms(g.current_ms),
                g.ratio
            );
        }
        o += "</table>";
    }
    for sc in &r.scenarios {
        o += &scenario(sc);
    }
    o += "</body></html>\n";
    o
}
