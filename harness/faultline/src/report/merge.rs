//! `faultline report merge`: the JSON reports of a sharded run (`--shard I/N` on several CI
//! jobs) joined into one report, from which the usual JUnit, JSON and HTML are written. Each
//! scenario is counted once (a shard job that was re-run supersedes its earlier report: the
//! later `startedAt` wins), the totals are recomputed, and every scenario keeps the seed it ran
//! with; `mergedFrom` lists the shards.

use super::{RunReport, ScenarioReport, ShardInfo, SCHEMA_VERSION};
use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub fn read(path: &Path) -> Result<RunReport> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let v: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{}: not JSON", path.display()))?;
    match v.get("schemaVersion").and_then(serde_json::Value::as_u64) {
        Some(n) if n == SCHEMA_VERSION as u64 => {}
        Some(n) => bail!(
            "{}: report schemaVersion {n}, this faultline reads {SCHEMA_VERSION}",
            path.display()
        ),
        None => bail!(
            "{}: not a faultline JSON report (no schemaVersion)",
            path.display()
        ),
    }
    serde_json::from_value(v)
        .with_context(|| format!("{}: not a faultline JSON report", path.display()))
}

fn parse_time(s: &str) -> Option<chrono::DateTime<chrono::FixedOffset>> {
    chrono::DateTime::parse_from_rfc3339(s).ok()
}

pub fn merge(shards: Vec<(PathBuf, RunReport)>) -> Result<RunReport> {
    if shards.is_empty() {
        bail!("no shard reports given");
    }
    let mut by_name: BTreeMap<String, ScenarioReport> = BTreeMap::new();
    let mut merged_from = vec![];
    let (mut first, mut last): (
        Option<chrono::DateTime<chrono::FixedOffset>>,
        Option<chrono::DateTime<chrono::FixedOffset>>,
    ) = (None, None);
    let mut providers: Vec<String> = vec![];
    let mut regressions = vec![];
    let mut interrupted_by = None;
    let mut flaky_fails = false;
    for (path, r) in &shards {
        merged_from.push(ShardInfo {
            file: path.display().to_string(),
            shard: r.shard.clone(),
            seed: r.seed,
            started_at: r.started_at.clone(),
            duration_ms: r.duration_ms,
            scenarios: r.scenarios.len(),
        });
        if let Some(t) = parse_time(&r.started_at) {
            first = Some(first.map_or(t, |f| f.min(t)));
            let end = t + chrono::Duration::milliseconds(r.duration_ms as i64);
            last = Some(last.map_or(end, |l| l.max(end)));
        }
        if !providers.contains(&r.provider) {
            providers.push(r.provider.clone());
        }
        regressions.extend(r.regressions.iter().cloned());
        interrupted_by = interrupted_by.or(r.interrupted_by.clone());
        flaky_fails |= r.flaky_fails;
        for s in &r.scenarios {
            let mut s = s.clone();
            if s.seed == 0 {
                s.seed = r.seed;
            }
            match by_name.get(&s.name) {
                Some(prev) if parse_time(&prev.started_at) >= parse_time(&s.started_at) => {}
                _ => {
                    by_name.insert(s.name.clone(), s);
                }
            }
        }
    }
    let base = &shards[0].1;
    let mut out = RunReport {
        schema_version: SCHEMA_VERSION,
        faultline_version: env!("CARGO_PKG_VERSION").into(),
        started_at: first
            .map(|f| f.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
            .unwrap_or_else(|| base.started_at.clone()),
        duration_ms: match (first, last) {
            (Some(f), Some(l)) => (l - f).num_milliseconds().max(0) as u64,
            _ => shards.iter().map(|(_, r)| r.duration_ms).max().unwrap_or(0),
        },
        provider: if providers.len() == 1 {
            providers.remove(0)
        } else {
            providers.join("+")
        },
        seed: base.seed,
        shard: None,
        flaky_fails,
        summary: Default::default(),
        scenarios: by_name.into_values().collect(),
        regressions,
        interrupted_by,
        merged_from,
    };
    out.summarize();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests_support::{empty_run, scenario};
    use crate::timeline::Verdict;

    #[test]
    fn counts_each_scenario_once_and_keeps_seeds() {
        let mut a = empty_run();
        a.seed = 11;
        a.shard = Some("1/2".into());
        a.started_at = "2026-01-01T10:00:00.000Z".into();
        a.duration_ms = 60_000;
        let mut s1 = scenario("one", &[("x", Some(5))]);
        s1.seed = 11;
        s1.started_at = "2026-01-01T10:00:01.000Z".into();
        a.scenarios.push(s1);
        let mut b = empty_run();
        b.seed = 22;
        b.started_at = "2026-01-01T10:00:30.000Z".into();
        b.duration_ms = 60_000;
        let mut s2 = scenario("two", &[("y", None)]);
        s2.seed = 0;
        s2.verdict = Verdict::Failed;
        b.scenarios.push(s2);
        // A re-run of shard 1 reports `one` again, later: it supersedes.
        let mut c = empty_run();
        c.seed = 33;
        c.started_at = "2026-01-01T10:05:00.000Z".into();
        let mut s1b = scenario("one", &[("x", Some(7))]);
        s1b.seed = 33;
        s1b.started_at = "2026-01-01T10:05:01.000Z".into();
        c.scenarios.push(s1b);
        let m = merge(vec![
            ("a.json".into(), a),
            ("b.json".into(), b),
            ("c.json".into(), c),
        ])
        .unwrap();
        assert_eq!(m.summary.scenarios, 2);
        assert_eq!((m.summary.passed, m.summary.failed), (1, 1));
        let one = m.scenarios.iter().find(|s| s.name == "one").unwrap();
        assert_eq!((one.seed, one.expectations[0].measured_ms), (33, Some(7)));
        assert_eq!(
            m.scenarios.iter().find(|s| s.name == "two").unwrap().seed,
            22,
            "a scenario without its own seed gets its shard's"
        );
        assert_eq!(m.merged_from.len(), 3);
        assert_eq!(m.started_at, "2026-01-01T10:00:00.000Z");
        assert_eq!(
            m.duration_ms,
            5 * 60_000 + 10,
            "from the first start to the last end"
        );
        assert_eq!(m.exit_code(), 1);
    }
}
