//! The console: live progress (indicatif spinners on a TTY, one line per scenario otherwise),
//! then per scenario a timeline table in the style of the incident runbook (T+offset | event),
//! and for failures: the expectation, its budget, the last observed value, where the collected
//! objects, events and logs are, and the controller's last log lines.

use super::{ms, RunReport, ScenarioReport};
use crate::runner::Progress;
use crate::timeline::Verdict;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::io::IsTerminal;
use std::time::Duration;

pub struct ConsoleProgress {
    multi: MultiProgress,
    bars: Mutex<HashMap<String, ProgressBar>>,
    tty: bool,
}

impl ConsoleProgress {
    pub fn new() -> ConsoleProgress {
        let tty = std::io::stderr().is_terminal();
        let target = if tty { ProgressDrawTarget::stderr() } else { ProgressDrawTarget::hidden() };
        ConsoleProgress { multi: MultiProgress::with_draw_target(target), bars: Mutex::new(HashMap::new()), tty }
    }
    fn line(&self, s: String) {
        if self.tty {
            let _ = self.multi.println(s);
        } else {
            println!("{s}");
        }
    }
}

impl Default for ConsoleProgress {
    fn default() -> Self {
        Self::new()
    }
}

impl Progress for ConsoleProgress {
    fn scenario_started(&self, name: &str) {
        if !self.tty {
            println!("RUN   {name}");
            return;
        }
        let pb = self.multi.add(ProgressBar::new_spinner());
        pb.set_style(ProgressStyle::with_template("{spinner} {prefix:.bold} {elapsed:>4} {msg}").unwrap());
        pb.set_prefix(name.to_string());
        pb.enable_steady_tick(Duration::from_millis(120));
        self.bars.lock().insert(name.to_string(), pb);
    }
    fn step_started(&self, scenario: &str, step: &str, kind: &str) {
        if let Some(pb) = self.bars.lock().get(scenario) {
            pb.set_message(format!("{kind} {step}"));
        }
    }
    fn scenario_finished(&self, r: &ScenarioReport) {
        if let Some(pb) = self.bars.lock().remove(&r.name) {
            pb.finish_and_clear();
            self.multi.remove(&pb);
        }
        self.line(format!("{:<5} {} ({})", r.verdict.word(), r.name, ms(r.duration_ms)));
    }
}

/// The runbook-style table of one scenario.
pub fn timeline_table(r: &ScenarioReport) -> String {
    let mut out = String::new();
    out += &format!("### {} - {} ({})\n\n", r.name, r.verdict.word(), ms(r.duration_ms));
    out += "| Time | Event |\n|------|-------|\n";
    for e in &r.timeline {
        let t = format!("T+{}", ms(e.at_ms));
        let text = e.text.replace('|', "\\|").replace('\n', " ");
        out += &format!("| {t} | {text} |\n");
    }
    out
}

/// Why a scenario failed: each failed expectation with its budget and last observation.
pub fn failure_details(r: &ScenarioReport) -> String {
    let mut out = String::new();
    if let Some(reason) = &r.reason {
        out += &format!("{} {}: {reason}\n", r.verdict.word(), r.name);
    }
    for e in r.expectations.iter().filter(|e| e.verdict == Verdict::Failed) {
        out += &format!("  expectation `{}` ({}): {}\n", e.name, e.kind, e.description);
        let mut budget = vec![];
        if let Some(w) = e.budget.within_ms {
            budget.push(format!("within {} after {} (T+{})", ms(w), e.anchor, ms(e.anchor_ms)));
        }
        if let Some(f) = e.budget.for_ms {
            budget.push(format!("for {}", ms(f)));
        }
        if !budget.is_empty() {
            out += &format!("    budget:        {}\n", budget.join(", "));
        }
        out += &format!("    why:           {}\n", e.message);
        if let Some(m) = e.measured_ms {
            out += &format!("    measured:      {} after {}\n", ms(m), e.anchor);
        }
        if let Some(l) = &e.last_observed {
            out += &format!("    last observed: {l}\n");
        }
    }
    for s in r.steps.iter().filter(|s| s.verdict == Verdict::Failed && s.kind != "expect" && s.kind != "try") {
        out += &format!("  step `{}` ({}): {}\n", s.name, s.kind, s.message);
    }
    for f in r.faults.iter().filter(|f| f.heal_error.is_some()) {
        out += &format!("  fault `{}` NOT HEALED: {}\n", f.name, f.heal_error.clone().unwrap_or_default());
    }
    if let Some(a) = &r.artifacts {
        out += &format!("  collected objects, events and logs: {a}\n");
    }
    if !r.controller_log_tail.is_empty() {
        out += "  controller log (last lines):\n";
        for l in &r.controller_log_tail {
            out += &format!("    | {l}\n");
        }
    }
    out
}

pub fn render(report: &RunReport) -> String {
    let mut out = String::new();
    for s in &report.scenarios {
        out += "\n";
        out += &timeline_table(s);
        if s.verdict != Verdict::Passed {
            out += "\n";
            out += &failure_details(s);
        }
    }
    if !report.regressions.is_empty() {
        out += "\nRegressions against the baseline:\n";
        for r in &report.regressions {
            out += &format!("  {}/{}: {} -> {} (x{:.2}, limit x{:.2})\n", r.scenario, r.expectation, ms(r.baseline_ms), ms(r.current_ms), r.ratio, r.limit);
        }
    }
    let s = &report.summary;
    out += &format!(
        "\n{} scenario(s): {} passed, {} failed, {} error(s), {} cancelled; {} expectation(s), {} failed (seed {}){}\n",
        s.scenarios, s.passed, s.failed, s.errors, s.cancelled, s.expectations, s.expectations_failed, report.seed,
        report.interrupted_by.as_ref().map(|i| format!("; interrupted by {i}")).unwrap_or_default()
    );
    out
}
