//! The side-by-side fidelity report (`faultline diff`): one scenario run on kind (real
//! kubelets) and on the sim, what each showed reduced to observations, and how many agree.
//!
//! Parts: `normalise` (pure: messages and names without what a run made up), this module's
//! matcher (pure: observations of both sides paired by key, agreement judged, rendered side by
//! side), and `collect` (reads a run's artifacts - events.json, the kubelet logs, states.json -
//! into observations). The matcher never reads files; the collector never judges.

pub mod collect;
pub mod normalise;

use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// What an observation is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum Category {
    /// An Event: involved object kind, reason, normalised message.
    Event,
    /// A kubelet log line the runbook greps for, normalised.
    KubeletLog,
    /// A pod's phases and conditions over time.
    Pod,
    /// A node's VolumeAttachment states over time.
    VolumeAttachment,
}

impl Category {
    pub fn title(self) -> &'static str {
        match self {
            Category::Event => "Events (kind, reason, message)",
            Category::KubeletLog => "Kubelet log lines the runbook greps for",
            Category::Pod => "Pods: phase and conditions over time",
            Category::VolumeAttachment => "VolumeAttachments per node over time",
        }
    }
}

/// What one run showed: per category, a key and what was seen under it. Set-like categories
/// (events, log lines) see an empty value; sequences (pods, VolumeAttachments) their states.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Observations {
    pub items: BTreeMap<(Category, String), Vec<String>>,
}

impl Observations {
    pub fn insert(&mut self, category: Category, key: String, value: Vec<String>) {
        self.items.insert((category, key), value);
    }
}

/// One key, both sides.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    pub category: Category,
    pub key: String,
    pub kind: Option<Vec<String>>,
    pub sim: Option<Vec<String>>,
}

impl Row {
    /// Seen on both sides, alike.
    pub fn agrees(&self) -> bool {
        matches!((&self.kind, &self.sim), (Some(a), Some(b)) if a == b)
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Comparison {
    pub rows: Vec<Row>,
}

impl Comparison {
    pub fn agreeing(&self) -> usize {
        self.rows.iter().filter(|r| r.agrees()).count()
    }
    /// The figure: `N of M observations agree`.
    pub fn figure(&self) -> String {
        format!(
            "{} of {} observations agree",
            self.agreeing(),
            self.rows.len()
        )
    }
    pub fn differences(&self) -> impl Iterator<Item = &Row> {
        self.rows.iter().filter(|r| !r.agrees())
    }
}

/// Pair the two sides' observations by key (every key either side has is one observation).
pub fn compare(kind: &Observations, sim: &Observations) -> Comparison {
    let mut keys: Vec<&(Category, String)> = kind.items.keys().chain(sim.items.keys()).collect();
    keys.sort();
    keys.dedup();
    Comparison {
        rows: keys
            .into_iter()
            .map(|k| Row {
                category: k.0,
                key: k.1.clone(),
                kind: kind.items.get(k).cloned(),
                sim: sim.items.get(k).cloned(),
            })
            .collect(),
    }
}

/// The report: per category, every observation with the kind side left and the sim side right
/// (`=` agree, `≠` differ), then the figure.
pub fn render(c: &Comparison, width: usize) -> String {
    let mut out = String::new();
    let col = width.max(20);
    let cell = |v: &Option<Vec<String>>| -> Vec<String> {
        match v {
            None => vec!["(not seen)".into()],
            Some(v) if v.is_empty() => vec!["seen".into()],
            Some(v) => v.clone(),
        }
    };
    let mut category = None;
    for r in &c.rows {
        if category != Some(r.category) {
            category = Some(r.category);
            let _ = writeln!(out, "\n## {}", r.category.title());
            let _ = writeln!(out, "   {:<col$} | sim", "kind");
        }
        let mark = if r.agrees() { "=" } else { "≠" };
        let _ = writeln!(out, "{mark} {}", r.key);
        let (a, b) = (cell(&r.kind), cell(&r.sim));
        for i in 0..a.len().max(b.len()) {
            let left = a.get(i).map(String::as_str).unwrap_or("");
            let right = b.get(i).map(String::as_str).unwrap_or("");
            let _ = writeln!(out, "   {:<col$} | {right}", clip(left, col));
        }
    }
    let _ = writeln!(out, "\n{}", c.figure());
    out
}

fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obs(items: &[(Category, &str, &[&str])]) -> Observations {
        let mut o = Observations::default();
        for (c, k, v) in items {
            o.insert(*c, k.to_string(), v.iter().map(|s| s.to_string()).collect());
        }
        o
    }

    #[test]
    fn keys_pair_up_and_only_equal_values_on_both_sides_agree() {
        let kind = obs(&[
            (Category::Event, "Pod Scheduled x", &[]),
            (
                Category::Pod,
                "default/app-1",
                &["Pending", "Running", "deleted"],
            ),
            (Category::KubeletLog, "only on kind", &[]),
        ]);
        let sim = obs(&[
            (Category::Event, "Pod Scheduled x", &[]),
            (Category::Pod, "default/app-1", &["Pending", "deleted"]),
            (Category::VolumeAttachment, "worker-01", &["attached"]),
        ]);
        let c = compare(&kind, &sim);
        assert_eq!(c.rows.len(), 4);
        assert_eq!(c.agreeing(), 1);
        assert_eq!(c.figure(), "1 of 4 observations agree");
        let differing: Vec<&str> = c.differences().map(|r| r.key.as_str()).collect();
        assert_eq!(differing, ["only on kind", "default/app-1", "worker-01"]);
    }

    #[test]
    fn the_report_shows_both_sides_and_the_figure() {
        let kind = obs(&[(Category::Pod, "default/app-2", &["Pending", "Running"])]);
        let sim = obs(&[(Category::Pod, "default/app-2", &["Pending"])]);
        let text = render(&compare(&kind, &sim), 20);
        assert!(text.contains("≠ default/app-2"), "{text}");
        assert!(text.contains("   Running              | \n"), "{text}");
        assert!(text.contains("   Pending              | Pending"), "{text}");
        assert!(
            text.trim_end().ends_with("0 of 1 observations agree"),
            "{text}"
        );
        let same = render(&compare(&kind, &kind), 20);
        assert!(same.contains("= default/app-2") && same.contains("1 of 1 observations agree"));
    }

    #[test]
    fn an_observation_one_side_lacks_says_so() {
        let c = compare(
            &obs(&[(Category::Event, "e", &[])]),
            &Observations::default(),
        );
        let text = render(&c, 12);
        assert!(
            text.contains("   seen                 | (not seen)"),
            "{text}"
        );
    }
}
