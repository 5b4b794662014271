//! `DIR/explore.html`: the exploration as one self-contained page (no scripts, no external
//! assets), styled as the run report (`report::html::head`, its colours and escaping). It opens
//! with the totals and a table of the variants, failures first, each linked to its section;
//! then the unperturbed run's figures; then a section per variant, failures first and open:
//! its perturbations (and the set it was shrunk from), the oracles it failed, the end-state
//! difference, the leaked objects, the controller's trace around the perturbation with the
//! perturbed request marked, the repro scenario. A passing variant's section is folded.

use super::{describe_set, render_entry, ExploreReport, VariantResult, Violation};
use crate::endstate::Difference;
use crate::report::html::{color, esc, head};
use crate::report::ms;
use crate::timeline::Verdict;
use faultline_sim::http::trace::{TraceEntry, TraceKind};

const FOUND: &str = "#c62828";

fn anchor(v: &VariantResult) -> String {
    format!("variant-{:03}", v.index)
}

/// The variants in the order the page shows them: failures first, then by index.
fn ordered(r: &ExploreReport) -> Vec<&VariantResult> {
    let mut v: Vec<&VariantResult> = r.variants.iter().collect();
    v.sort_by_key(|v| (!v.failed(), v.index));
    v
}

fn badge(v: &VariantResult) -> String {
    let (bg, word) = if v.failed() {
        (FOUND, "FOUND")
    } else {
        (color(Verdict::Passed), "ok")
    };
    format!(r#"<span class="badge" style="background:{bg}">{word}</span>"#)
}

/// Which oracle a violation is, in a word.
fn oracle(x: &Violation) -> &'static str {
    match x {
        Violation::Expectations { .. } => "expectations",
        Violation::EndState { .. } => "end state",
        Violation::Leaked { .. } => "leaked",
        Violation::HotLoop { .. } => "hot loop",
    }
}

fn summary_table(r: &ExploreReport) -> String {
    let mut o = String::from(
        r#"<table class="summary"><thead><tr><th>#</th><th>perturbations</th><th>verdict</th><th>oracles failed</th><th>duration</th></tr></thead><tbody>"#,
    );
    for v in ordered(r) {
        let oracles: Vec<&str> = v.violations.iter().map(oracle).collect();
        let shrunk = v
            .shrunk_from
            .as_ref()
            .map(|f| format!("<br><small>shrunk from {}</small>", esc(&describe_set(f))))
            .unwrap_or_default();
        o += &format!(
            r##"<tr><td><a href="#{}">{:03}</a></td><td>{}{shrunk}</td><td>{}</td><td>{}</td><td>{}</td></tr>"##,
            anchor(v),
            v.index,
            esc(&v.description),
            badge(v),
            esc(&oracles.join(", ")),
            esc(&ms(v.duration_ms)),
        );
    }
    o += "</tbody></table>";
    o
}

fn baseline(r: &ExploreReport) -> String {
    let b = &r.baseline;
    let mut o = format!(
        r#"<section id="baseline"><h2><span class="badge" style="background:{}">{}</span> the unperturbed run <small>{}</small></h2><table>"#,
        color(b.verdict),
        b.verdict.word(),
        esc(&ms(b.duration_ms))
    );
    for (what, n) in [
        ("controller requests", b.requests),
        ("writes (crash points)", b.mutations as usize),
        ("watch events (relist points)", b.watch_events),
        ("stale-read candidates", b.stale_candidates),
        ("peak requests in the rate window", b.peak_requests),
        ("end-state objects", b.end_state_objects),
    ] {
        o += &format!("<tr><th>{what}</th><td>{n}</td></tr>");
    }
    o += "</table>";
    if !b.leaked.is_empty() {
        o +=
            "<p>Left behind by the unperturbed run itself (not held against the variants):</p><ul>";
        for l in &b.leaked {
            o += &format!("<li>{}</li>", esc(&l.to_string()));
        }
        o += "</ul>";
    }
    o += "</section>";
    o
}

fn differences(ds: &[Difference]) -> String {
    let mut o = String::from(
        "<h3>End state (unperturbed run &rarr; this run)</h3><table><tr><th>change</th><th>object</th><th>field</th><th>unperturbed</th><th>this run</th></tr>",
    );
    for d in ds {
        match d {
            Difference::Missing { key, count } => {
                o += &format!(
                    r#"<tr class="err"><td>- missing</td><td>{}</td><td></td><td>{count}</td><td></td></tr>"#,
                    esc(key)
                )
            }
            Difference::Extra { key, count } => {
                o += &format!(
                    r#"<tr class="err"><td>+ extra</td><td>{}</td><td></td><td></td><td>{count}</td></tr>"#,
                    esc(key)
                )
            }
            Difference::Changed { key, fields } => {
                for (path, a, b) in fields {
                    o += &format!(
                        r#"<tr class="fault"><td>~ changed</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>"#,
                        esc(key),
                        esc(path),
                        esc(&a.to_string()),
                        esc(&b.to_string())
                    );
                }
            }
        }
    }
    o += "</table>";
    o
}

fn perturbed(e: &TraceEntry) -> bool {
    matches!(
        &e.what,
        TraceKind::Request {
            perturbed: Some(_),
            ..
        } | TraceKind::WatchEvent { withheld: true, .. }
            | TraceKind::MovedFault { .. }
    )
}

fn trace(entries: &[TraceEntry]) -> String {
    let mut o = String::from(
        r#"<h3>Controller trace around the perturbation</h3><table class="trace"><tr><th></th><th>entry</th></tr>"#,
    );
    for e in entries {
        let (class, mark) = if perturbed(e) {
            (r#" class="err""#, "&rArr; perturbed")
        } else {
            ("", "")
        };
        o += &format!(
            "<tr{class}><td>{mark}</td><td><code>{}</code></td></tr>",
            esc(&render_entry(e))
        );
    }
    o += "</table>";
    o
}

fn variant(v: &VariantResult) -> String {
    let open = if v.failed() { " open" } else { "" };
    let fired = if v.fired { "" } else { " (did not fire)" };
    let mut o = format!(
        r#"<section id="{}"><details class="timeline"{open}><summary>{} #{:03} {}{fired} <small>{}</small></summary>"#,
        anchor(v),
        badge(v),
        v.index,
        esc(&v.description),
        esc(&ms(v.duration_ms))
    );
    if let Some(from) = &v.shrunk_from {
        o += &format!(
            r#"<p class="shrunk">Shrunk from <b>{}</b> ({} run(s)): the smaller set fails alone.</p>"#,
            esc(&describe_set(from)),
            v.shrink_runs
        );
    } else if v.shrink_runs > 0 {
        o += &format!(
            "<p>Minimal: no smaller set failed ({} run(s)).</p>",
            v.shrink_runs
        );
    }
    if !v.violations.is_empty() {
        o += "<h3>Oracles failed</h3><ul>";
        for x in &v.violations {
            match x {
                Violation::Leaked { leaks } => {
                    o += "<li class=\"reason\">leaked: objects the controller created<ul>";
                    for l in leaks {
                        o += &format!("<li>{}</li>", esc(&l.to_string()));
                    }
                    o += "</ul></li>";
                }
                _ => o += &format!(r#"<li class="reason">{}</li>"#, esc(&x.to_string())),
            }
        }
        o += "</ul>";
    }
    if !v.differences.is_empty() {
        o += &differences(&v.differences);
    }
    if !v.trace_around.is_empty() {
        o += &trace(&v.trace_around);
    }
    if let Some(r) = &v.repro {
        o += &format!(
            "<p>Reproduce: <code>faultline explore {}</code></p>",
            esc(&r.display().to_string())
        );
    }
    o += &format!(
        "<p><small>artifacts: {}</small></p></details></section>",
        esc(&v.artifacts.display().to_string())
    );
    o
}

pub fn render(r: &ExploreReport) -> String {
    let mut o = head(&format!("faultline explore: {}", r.scenario));
    o += &format!(
        "<h1>faultline explore: {}</h1><p id=\"totals\">{} - seed {}, budget {}, {} job(s), {}: {} variant(s), {} of {} single perturbations and {} of {} pairs; <b>{} found</b> ({} distinct){}</p>",
        esc(&r.scenario),
        esc(&r.file),
        r.seed,
        esc(&ms(r.budget_ms)),
        r.jobs,
        esc(&ms(r.elapsed_ms)),
        r.variants.len(),
        r.singles_run,
        r.points,
        r.pairs_run,
        r.pair_points,
        r.found,
        r.distinct,
        if r.replay { " - a replay of the scenario's own perturbations" } else { "" }
    );
    o += &summary_table(r);
    o += &baseline(r);
    for v in ordered(r) {
        o += &variant(v);
    }
    o += "</body></html>\n";
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explore::leaks::{Leak, LeakReason};
    use crate::explore::BaselineSummary;
    use faultline_sim::http::trace::{Perturbation, Verb};

    fn entry(seq: u64, perturbed: Option<&str>) -> TraceEntry {
        TraceEntry {
            seq,
            at_ms: seq * 100,
            what: TraceKind::Request {
                verb: Verb::Create,
                resource: "pods".into(),
                namespace: Some("d".into()),
                name: Some("ws-<x>".into()),
                kind: Some("Pod".into()),
                resource_version: None,
                store_rv: 1,
                code: 201,
                mutation: Some(seq),
                read: None,
                stale_from: None,
                perturbed: perturbed.map(String::from),
            },
        }
    }

    fn variant(index: usize, ps: Vec<Perturbation>, violations: Vec<Violation>) -> VariantResult {
        VariantResult {
            index,
            description: describe_set(&ps),
            perturbations: ps,
            shrunk_from: None,
            shrink_runs: 0,
            fired: true,
            verdict: Verdict::Passed,
            violations,
            differences: vec![],
            trace_around: vec![entry(1, None), entry(2, None)],
            repro: None,
            duration_ms: 2500,
            artifacts: "/tmp/a".into(),
        }
    }

    fn report() -> ExploreReport {
        let crash = |k| Perturbation::CrashAfterMutation { k };
        let mut found = variant(
            7,
            vec![crash(4)],
            vec![
                Violation::EndState { differences: 1 },
                Violation::Leaked {
                    leaks: vec![Leak {
                        object: "Pod d/ws-abcde".into(),
                        key: "Pod d/ws-*".into(),
                        why: LeakReason::NotInBaseline {
                            here: 2,
                            baseline: 1,
                        },
                    }],
                },
            ],
        );
        found.shrunk_from = Some(vec![crash(4), Perturbation::WatchRelist { n: 3 }]);
        found.shrink_runs = 2;
        found.differences = vec![Difference::Extra {
            key: "Pod d/ws-*".into(),
            count: 1,
        }];
        found.trace_around = vec![
            entry(3, None),
            entry(4, Some("crash after mutating request 4")),
            entry(5, None),
        ];
        found.repro = Some("/tmp/repro/x.yaml".into());
        ExploreReport {
            scenario: "rbac <&>".into(),
            file: "s.yaml".into(),
            seed: 7,
            budget_ms: 60_000,
            elapsed_ms: 30_000,
            jobs: 2,
            replay: false,
            baseline: BaselineSummary {
                verdict: Verdict::Passed,
                duration_ms: 3000,
                requests: 40,
                mutations: 6,
                watch_events: 13,
                stale_candidates: 0,
                peak_requests: 12,
                end_state_objects: 3,
                leaked: vec![],
            },
            points: 19,
            points_by_kind: Default::default(),
            pair_points: 171,
            singles_run: 19,
            pairs_run: 1,
            found: 1,
            distinct: 1,
            variants: vec![variant(0, vec![crash(1)], vec![]), found],
        }
    }

    #[test]
    fn failures_come_first_open_with_their_diff_leaks_and_marked_trace() {
        let html = render(&report());
        assert!(html.contains("faultline explore: rbac &lt;&amp;&gt;") && !html.contains("<&>"));
        assert!(html.contains("<b>1 found</b> (1 distinct)"), "{html}");
        assert!(html.contains("19 of 19 single perturbations and 1 of 171 pairs"));
        // Failures first, in the table and in the sections.
        let first = |s: &str| html.find(s).unwrap();
        assert!(first(r##"href="#variant-007""##) < first(r##"href="#variant-000""##));
        assert!(first(r#"<section id="variant-007">"#) < first(r#"<section id="variant-000">"#));
        assert!(first(r#"<section id="baseline">"#) < first(r#"<section id="variant-007">"#));
        let section = |id: &str| {
            let s = first(&format!(r#"<section id="{id}">"#));
            &html[s..s + html[s..].find("</section>").unwrap()]
        };
        let found = section("variant-007");
        assert!(
            found.contains(r#"<details class="timeline" open>"#),
            "{found}"
        );
        assert!(
            found.contains("Shrunk from <b>crash after mutating request 4 + "),
            "{found}"
        );
        assert!(found.contains("+ extra</td><td>Pod d/ws-*</td>"), "{found}");
        assert!(found.contains("Pod d/ws-abcde: 2 `Pod d/ws-*` where the unperturbed run left 1"));
        // The perturbed request is marked, the others are not.
        assert_eq!(found.matches("&rArr; perturbed").count(), 1, "{found}");
        assert!(found.contains(
            "<tr class=\"err\"><td>&rArr; perturbed</td><td><code>  0.400s Create pods d/ws-&lt;x&gt; -&gt; 201 [write 4]  &lt;== crash after mutating request 4"
        ), "{found}");
        assert!(found.contains("faultline explore /tmp/repro/x.yaml"));
        let ok = section("variant-000");
        assert!(
            ok.contains(r#"<details class="timeline">"#),
            "a pass is folded: {ok}"
        );
        assert!(!ok.contains("Oracles failed"));
    }
}
