//! Runs the corpus against both targets and compares every exchange.

use crate::canonical::canonical;
use crate::compare::{classify, diff, without, Diff};
use crate::corpus::{Compare, Script};
use crate::normalise::Mapper;
use crate::runner::{self, Environment};
use crate::target::Target;
use anyhow::Result;
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::Write;
use std::time::Duration;

#[derive(Debug, Clone, Serialize)]
pub struct Exchange {
    pub script: String,
    pub source: String,
    pub step: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub method: String,
    /// The request path and query as sent to the left target.
    pub uri: String,
    pub group: String,
    pub verb: String,
    pub identical: bool,
    pub left_status: Option<u16>,
    pub right_status: Option<u16>,
    pub diffs: Vec<Diff>,
    /// The canonical responses, kept for `--report-diffs`.
    #[serde(skip)]
    pub left: Value,
    #[serde(skip)]
    pub right: Value,
}

#[derive(Debug, Default, Serialize)]
pub struct Report {
    pub left: String,
    pub right: String,
    pub identical: usize,
    pub total: usize,
    /// "group verb" -> [identical, total]
    pub by_group_verb: BTreeMap<String, [usize; 2]>,
    pub by_source: BTreeMap<String, [usize; 2]>,
    pub exchanges: Vec<Exchange>,
}

pub struct Options {
    /// Namespace prefix (unique per run).
    pub prefix: String,
    /// A resourceVersion far behind both targets' current ones.
    pub old_rv: String,
    /// Only scripts whose name contains this.
    pub filter: Option<String>,
}

/// Learns each target's environment, then runs every script on both (the two targets
/// concurrently, the scripts one after another: cluster-wide lists must not see another
/// script's objects).
pub async fn judge(
    left: &Target,
    right: &Target,
    scripts: &[Script],
    opts: &Options,
) -> Result<Report> {
    let probe = format!("{}-probe", opts.prefix);
    let (le, re) = tokio::join!(
        runner::probe_environment(left, &probe, Duration::from_secs(5)),
        runner::probe_environment(right, &probe, Duration::from_secs(5))
    );
    let (le, re): (Environment, Environment) = (le?, re?);
    eprintln!(
        "environment: {} controller manager: {}; {} controller manager: {}",
        left.name, le.has_controller_manager, right.name, re.has_controller_manager
    );
    let mut report = Report {
        left: left.name.clone(),
        right: right.name.clone(),
        ..Default::default()
    };
    for (i, script) in scripts.iter().enumerate() {
        if let Some(f) = &opts.filter {
            if !script.name.contains(f.as_str()) {
                continue;
            }
        }
        let ns = format!("{}-{i}", opts.prefix);
        let (lo, ro) = tokio::join!(
            runner::run(left, le, script, &ns, &opts.old_rv),
            runner::run(right, re, script, &ns, &opts.old_rv)
        );
        let (lo, ro) = match (lo, ro) {
            (Ok(l), Ok(r)) => (l, r),
            (l, r) => {
                eprintln!(
                    "script {}: could not run: left {:?} right {:?}",
                    script.name,
                    l.err().map(|e| format!("{e:#}")),
                    r.err().map(|e| format!("{e:#}"))
                );
                continue;
            }
        };
        let (mut lm, mut rm) = (Mapper::default(), Mapper::default());
        for (si, step) in script.steps.iter().enumerate() {
            let (l, r) = (&lo[si], &ro[si]);
            // both sides are normalised (so the mappers see every response in order)...
            let lc = canonical(&l.uri, l, &mut lm);
            let rc = canonical(&r.uri, r, &mut rm);
            // ...but only compared steps count.
            if step.compare == Compare::None {
                continue;
            }
            let mut diffs = if step.compare == Compare::Status {
                diff(&lc["status"], &rc["status"])
                    .into_iter()
                    .map(|mut d| {
                        d.path = format!("/status{}", d.path);
                        d
                    })
                    .collect()
            } else {
                diff(&lc, &rc)
            };
            diffs = without(diffs, &step.ignore);
            let headers: Vec<(String, String)> = step
                .headers
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            let (group, verb) = classify(&step.method.to_uppercase(), &l.uri, &headers);
            let identical = diffs.is_empty();
            let e = Exchange {
                script: script.name.clone(),
                source: script.source.clone(),
                step: si,
                name: step.name.clone(),
                method: step.method.to_uppercase(),
                uri: l.uri.clone(),
                group: group.clone(),
                verb: verb.clone(),
                identical,
                left_status: l.response.as_ref().ok().map(|r| r.status),
                right_status: r.response.as_ref().ok().map(|r| r.status),
                diffs,
                left: lc,
                right: rc,
            };
            report.total += 1;
            report.identical += usize::from(identical);
            let gv = report
                .by_group_verb
                .entry(format!("{group} {verb}"))
                .or_default();
            gv[0] += usize::from(identical);
            gv[1] += 1;
            let src = report
                .by_source
                .entry(source_bucket(&script.source))
                .or_default();
            src[0] += usize::from(identical);
            src[1] += 1;
            report.exchanges.push(e);
        }
    }
    Ok(report)
}

fn source_bucket(s: &str) -> String {
    s.to_string()
}

impl Report {
    pub fn percent(&self) -> f64 {
        if self.total == 0 {
            0.0
        } else {
            100.0 * self.identical as f64 / self.total as f64
        }
    }

    /// The per group and verb table, the per source lines, the first `n` differences and the
    /// total line `ci/differential.sh` reads.
    pub fn print(&self, n: usize, out: &mut impl Write) -> std::io::Result<()> {
        writeln!(
            out,
            "differential: {} (left) vs {} (right)",
            self.left, self.right
        )?;
        writeln!(out, "{:<34} {:<34} {:>9}", "API group", "verb", "identical")?;
        for (k, [i, t]) in &self.by_group_verb {
            let (g, v) = k.split_once(' ').unwrap_or((k, ""));
            writeln!(out, "{g:<34} {v:<34} {:>9}", format!("{i}/{t}"))?;
        }
        let mut groups: BTreeMap<&str, [usize; 2]> = BTreeMap::new();
        for (k, [i, t]) in &self.by_group_verb {
            let g = groups.entry(k.split(' ').next().unwrap_or("")).or_default();
            g[0] += i;
            g[1] += t;
        }
        writeln!(out, "\nper API group:")?;
        for (g, [i, t]) in &groups {
            writeln!(out, "  {g:<40} {i}/{t}")?;
        }
        writeln!(out, "\nper source:")?;
        for (s, [i, t]) in &self.by_source {
            writeln!(out, "  {s:<40} {i}/{t}")?;
        }
        for e in self.exchanges.iter().filter(|e| !e.identical).take(n) {
            writeln!(
                out,
                "\nDIFF {} step {} ({}) {} {} [{} {}]: left {:?} right {:?}",
                e.script,
                e.step,
                e.name.as_deref().unwrap_or("-"),
                e.method,
                e.uri,
                e.group,
                e.verb,
                e.left_status,
                e.right_status
            )?;
            for d in e.diffs.iter().take(8) {
                writeln!(
                    out,
                    "  {}: {} | {}",
                    d.path,
                    short(d.left.as_ref()),
                    short(d.right.as_ref())
                )?;
            }
            if e.diffs.len() > 8 {
                writeln!(out, "  ... {} more", e.diffs.len() - 8)?;
            }
        }
        writeln!(
            out,
            "\nDifferential judge: {} of {} exchanges identical ({:.1} %)",
            self.identical,
            self.total,
            self.percent()
        )
    }

    /// One file per differing exchange: both canonical responses and the differences.
    pub fn write_diffs(&self, dir: &std::path::Path) -> Result<()> {
        std::fs::create_dir_all(dir)?;
        for e in self.exchanges.iter().filter(|e| !e.identical) {
            let name = format!("{}--{:03}.json", e.script.replace('/', "_"), e.step);
            let doc = serde_json::json!({"exchange": e, "left": e.left, "right": e.right});
            std::fs::write(dir.join(name), serde_json::to_vec_pretty(&doc)?)?;
        }
        Ok(())
    }
}

fn short(v: Option<&Value>) -> String {
    match v {
        None => "<absent>".into(),
        Some(v) => {
            let s = v.to_string();
            if s.chars().count() > 140 {
                format!("{}...", s.chars().take(140).collect::<String>())
            } else {
                s
            }
        }
    }
}
