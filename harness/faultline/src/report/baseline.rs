//! `--baseline old.json`: compare measured durations (time to detect, time to recover: every
//! expectation's `measuredMs`) with a previous run's JSON report. A duration regressed when it
//! exceeds the baseline by more than the ratio (and by at least `MIN_DELTA_MS`, so millisecond
//! noise on fast expectations is not a regression). An expectation that passed in the baseline
//! and has no measurement now is not compared (it failed, which fails the run anyway).

use super::{Regression, RunReport};
use serde_json::Value;

pub const MIN_DELTA_MS: u64 = 250;

pub fn load(path: &std::path::Path) -> anyhow::Result<Value> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| anyhow::anyhow!("reading baseline {}: {e}", path.display()))?;
    let v: Value = serde_json::from_str(&text)
        .map_err(|e| anyhow::anyhow!("{}: not a faultline JSON report: {e}", path.display()))?;
    if v.get("schemaVersion").and_then(Value::as_u64).is_none() {
        anyhow::bail!(
            "{}: not a faultline JSON report (no schemaVersion)",
            path.display()
        );
    }
    Ok(v)
}

pub fn compare(baseline: &Value, current: &RunReport, limit: f64) -> Vec<Regression> {
    let mut out = vec![];
    let empty = vec![];
    for s in &current.scenarios {
        let Some(bs) = baseline
            .get("scenarios")
            .and_then(Value::as_array)
            .unwrap_or(&empty)
            .iter()
            .find(|b| b.get("name").and_then(Value::as_str) == Some(&s.name))
        else {
            continue;
        };
        for e in &s.expectations {
            let Some(cur) = e.measured_ms else { continue };
            let old = bs
                .get("expectations")
                .and_then(Value::as_array)
                .unwrap_or(&empty)
                .iter()
                .find(|b| b.get("name").and_then(Value::as_str) == Some(&e.name))
                .and_then(|b| b.get("measuredMs"))
                .and_then(Value::as_u64);
            let Some(old) = old else { continue };
            let ratio = if old == 0 {
                f64::INFINITY
            } else {
                cur as f64 / old as f64
            };
            if ratio > limit && cur.saturating_sub(old) >= MIN_DELTA_MS {
                out.push(Regression {
                    scenario: s.name.clone(),
                    expectation: e.name.clone(),
                    baseline_ms: old,
                    current_ms: cur,
                    ratio,
                    limit,
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn current(measured: &[(&str, Option<u64>)]) -> RunReport {
        let mut r = crate::report::tests_support::empty_run();
        r.scenarios
            .push(crate::report::tests_support::scenario("s", measured));
        r
    }

    #[test]
    fn flags_only_regressions_beyond_ratio_and_noise() {
        let base = json!({"schemaVersion": 1, "scenarios": [{"name": "s", "expectations": [
            {"name": "slow", "measuredMs": 1000}, {"name": "ok", "measuredMs": 1000}, {"name": "tiny", "measuredMs": 10}]}]});
        let now = current(&[
            ("slow", Some(2000)),
            ("ok", Some(1400)),
            ("tiny", Some(100)),
            ("new", Some(5)),
        ]);
        let regs = compare(&base, &now, 1.5);
        assert_eq!(regs.len(), 1, "{regs:?}");
        assert_eq!(
            (
                regs[0].expectation.as_str(),
                regs[0].baseline_ms,
                regs[0].current_ms
            ),
            ("slow", 1000, 2000)
        );
        assert!((regs[0].ratio - 2.0).abs() < 1e-9);
    }
}
