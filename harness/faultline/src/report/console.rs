//! The console, modelled on cargo-nextest: the runner reports progress, this reporter decides
//! what to show. A passing scenario is one line (name, duration, its measured durations against
//! their budgets); a failing one prints its whole timeline, why, the last observed values and
//! where its artifacts are; `--verbose` prints every timeline, `--quiet` only failures and the
//! total. Live spinners on a TTY (stderr); plain lines otherwise.

use super::{ms, Progress, RunReport, ScenarioReport, StepKind};
use crate::timeline::Verdict;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::time::Duration;

/// How much the console prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verbosity {
    /// Failures and the total.
    Quiet,
    /// One line per passing scenario, everything about a failing one.
    Normal,
    /// Every timeline.
    Verbose,
}

pub struct ConsoleProgress {
    multi: MultiProgress,
    bars: Mutex<HashMap<String, ProgressBar>>,
    tty: bool,
    verbosity: Verbosity,
}

impl ConsoleProgress {
    pub fn new(verbosity: Verbosity) -> ConsoleProgress {
        let tty = std::io::stderr().is_terminal();
        let target = if tty {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        ConsoleProgress {
            multi: MultiProgress::with_draw_target(target),
            bars: Mutex::new(HashMap::new()),
            tty,
            verbosity,
        }
    }
    /// Print a block at once (scenarios finish concurrently with --jobs).
    fn print(&self, block: String) {
        if self.tty {
            let _ = self.multi.suspend(|| {
                let mut out = std::io::stdout().lock();
                out.write_all(block.as_bytes()).and_then(|_| out.flush())
            });
        } else {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(block.as_bytes()).and_then(|_| out.flush());
        }
    }
}

impl Default for ConsoleProgress {
    fn default() -> Self {
        Self::new(Verbosity::Normal)
    }
}

/// `PASS  name  12.3s  fn3b-fires 8.1s/40s, recovered 20.2s/2m`.
pub fn status_line(r: &ScenarioReport) -> String {
    let word = if r.flaky { "FLAKY" } else { r.verdict.word() };
    let budgets = r.budget_summary();
    let mut line = format!("{word:<5} {}  {}", r.name, ms(r.duration_ms));
    if !budgets.is_empty() {
        line += &format!("  {}", budgets.join(", "));
    }
    if r.flaky {
        line += &format!("  (passed on attempt {} of {})", r.attempts, r.attempts);
    } else if r.attempts > 1 {
        line += &format!("  (every one of {} attempts)", r.attempts);
    }
    line
}

/// Everything about a scenario that did not pass: status line, timeline, why.
pub fn failure_block(r: &ScenarioReport) -> String {
    format!(
        "{}\n\n{}\n{}\n",
        status_line(r),
        r.timeline_table(),
        failure_details(r)
    )
}

impl Progress for ConsoleProgress {
    fn scenario_started(&self, name: &str) {
        if !self.tty {
            if self.verbosity == Verbosity::Verbose {
                self.print(format!("RUN   {name}\n"));
            }
            return;
        }
        let pb = self.multi.add(ProgressBar::new_spinner());
        pb.set_style(
            ProgressStyle::with_template("{spinner} {prefix:.bold} {elapsed:>4} {msg}").unwrap(),
        );
        pb.set_prefix(name.to_string());
        pb.enable_steady_tick(Duration::from_millis(120));
        self.bars.lock().insert(name.to_string(), pb);
    }
    fn step_started(&self, scenario: &str, step: &str, kind: StepKind) {
        if let Some(pb) = self.bars.lock().get(scenario) {
            pb.set_message(format!("{kind} {step}"));
        }
    }
    fn scenario_retrying(&self, r: &ScenarioReport, attempt: u32, of: u32) {
        self.clear_bar(&r.name);
        if self.verbosity >= Verbosity::Normal {
            self.print(format!(
                "RETRY {}  attempt {attempt} of {of} {}: {}\n",
                r.name,
                r.verdict.word(),
                r.reason.clone().unwrap_or_default()
            ));
        }
    }
    fn scenario_finished(&self, r: &ScenarioReport) {
        self.clear_bar(&r.name);
        let block = if r.verdict != Verdict::Passed {
            format!("\n{}", failure_block(r))
        } else if self.verbosity == Verbosity::Verbose {
            format!("{}\n\n{}\n", status_line(r), r.timeline_table())
        } else if self.verbosity == Verbosity::Normal || r.flaky {
            format!("{}\n", status_line(r))
        } else {
            return;
        };
        self.print(block);
    }
}

impl ConsoleProgress {
    fn clear_bar(&self, name: &str) {
        if let Some(pb) = self.bars.lock().remove(name) {
            pb.finish_and_clear();
            self.multi.remove(&pb);
        }
    }
}

/// Why a scenario failed: each failed expectation with its budget and last observation.
pub fn failure_details(r: &ScenarioReport) -> String {
    let mut out = String::new();
    if let Some(reason) = &r.reason {
        out += &format!("{} {}: {reason}\n", r.verdict.word(), r.name);
    }
    for e in r
        .expectations
        .iter()
        .filter(|e| e.verdict == Verdict::Failed)
    {
        out += &format!(
            "  expectation `{}` ({}): {}\n",
            e.name, e.kind, e.description
        );
        let mut budget = vec![];
        if let Some(w) = e.budget.within_ms {
            budget.push(format!(
                "within {} after {} (T+{})",
                ms(w),
                e.anchor,
                ms(e.anchor_ms)
            ));
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
    for s in r
        .steps
        .iter()
        .filter(|s| s.verdict == Verdict::Failed && s.kind.reports_own_failure())
    {
        out += &format!("  step `{}` ({}): {}\n", s.name, s.kind, s.message);
    }
    for f in r.faults.iter().filter(|f| f.heal_error.is_some()) {
        out += &format!(
            "  fault `{}` NOT HEALED: {}\n",
            f.name,
            f.heal_error.clone().unwrap_or_default()
        );
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

/// The end of the run: regressions, flaky and failed scenarios by name, and the total.
pub fn render_summary(report: &RunReport) -> String {
    let mut out = String::new();
    let flaky: Vec<_> = report.scenarios.iter().filter(|s| s.flaky).collect();
    if !flaky.is_empty() {
        out += "\nFlaky (passed after failing; --flaky-fails makes this a failure):\n";
        for s in flaky {
            for a in &s.failed_attempts {
                out += &format!(
                    "  FLAKY {}: attempt {} {}: {}\n",
                    s.name,
                    a.attempt,
                    a.verdict.word(),
                    a.reason.clone().unwrap_or_default()
                );
            }
        }
    }
    let failed: Vec<_> = report
        .scenarios
        .iter()
        .filter(|s| s.verdict != Verdict::Passed)
        .collect();
    if !failed.is_empty() {
        out += "\nNot passed:\n";
        for s in failed {
            out += &format!(
                "  {:<5} {}: {}\n",
                s.verdict.word(),
                s.name,
                s.reason.clone().unwrap_or_default()
            );
        }
    }
    if !report.regressions.is_empty() {
        out += "\nRegressions against the baseline:\n";
        for r in &report.regressions {
            out += &format!(
                "  {}/{}: {} -> {} (x{:.2}, limit x{:.2})\n",
                r.scenario,
                r.expectation,
                ms(r.baseline_ms),
                ms(r.current_ms),
                r.ratio,
                r.limit
            );
        }
    }
    out += &format!("\n{}\n", total_line(report));
    out
}

/// `9 scenario(s) in 1m2s: 8 passed (1 flaky), 1 failed, ...`.
pub fn total_line(report: &RunReport) -> String {
    let s = &report.summary;
    format!(
        "{} scenario(s) in {}: {} passed{}, {} failed, {} error(s), {} cancelled; {} expectation(s), {} failed (seed {}){}",
        s.scenarios, ms(report.duration_ms), s.passed, if s.flaky > 0 { format!(" ({} flaky)", s.flaky) } else { String::new() },
        s.failed, s.errors, s.cancelled, s.expectations, s.expectations_failed, report.seed,
        report.interrupted_by.as_ref().map(|i| format!("; interrupted by {i}")).unwrap_or_default()
    )
}
