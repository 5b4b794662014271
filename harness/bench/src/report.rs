//! A benchmark's result: a table of figures, a one-line verdict against its target, and the
//! same as JSON (`--json`).

use serde_json::{json, Map, Value};

#[derive(Debug, Clone)]
pub struct Row {
    pub metric: String,
    pub value: f64,
    pub unit: String,
    /// The target in words, e.g. "< 0.5 s" (empty when the row is informational).
    pub target: String,
    /// Measured against the target or a baseline of the same run, e.g. 0.12 (x target).
    pub ratio: Option<f64>,
}

#[derive(Debug, Clone)]
pub struct Report {
    pub name: String,
    pub rows: Vec<Row>,
    pub pass: bool,
    pub verdict: String,
    /// Configuration and anything else worth keeping in the JSON output.
    pub context: Map<String, Value>,
}

impl Report {
    pub fn new(name: &str) -> Self {
        Report {
            name: name.into(),
            rows: vec![],
            pass: true,
            verdict: String::new(),
            context: Map::new(),
        }
    }

    pub fn row(&mut self, metric: &str, value: f64, unit: &str) -> &mut Self {
        self.rows.push(Row {
            metric: metric.into(),
            value,
            unit: unit.into(),
            target: String::new(),
            ratio: None,
        });
        self
    }

    pub fn row_target(
        &mut self,
        metric: &str,
        value: f64,
        unit: &str,
        target: &str,
        ratio: Option<f64>,
    ) -> &mut Self {
        self.rows.push(Row {
            metric: metric.into(),
            value,
            unit: unit.into(),
            target: target.into(),
            ratio,
        });
        self
    }

    pub fn ctx(&mut self, k: &str, v: impl Into<Value>) -> &mut Self {
        self.context.insert(k.into(), v.into());
        self
    }

    pub fn verdict(&mut self, pass: bool, text: impl Into<String>) {
        self.pass = pass;
        self.verdict = text.into();
    }

    pub fn to_json(&self) -> Value {
        json!({
            "benchmark": self.name,
            "pass": self.pass,
            "verdict": self.verdict,
            "context": self.context,
            "rows": self.rows.iter().map(|r| json!({
                "metric": r.metric, "value": r.value, "unit": r.unit,
                "target": if r.target.is_empty() { Value::Null } else { json!(r.target) },
                "ratio": r.ratio,
            })).collect::<Vec<_>>(),
        })
    }

    pub fn render_table(&self) -> String {
        let fmt_v = |v: f64| {
            if v != 0.0 && v.abs() < 0.1 {
                format!("{:.4}", v)
            } else if v.fract() == 0.0 && v.abs() < 1e15 {
                format!("{}", v as i64)
            } else if v.abs() >= 100.0 {
                format!("{:.0}", v)
            } else {
                format!("{:.3}", v)
            }
        };
        let cells: Vec<[String; 5]> = self
            .rows
            .iter()
            .map(|r| {
                [
                    r.metric.clone(),
                    fmt_v(r.value),
                    r.unit.clone(),
                    r.target.clone(),
                    r.ratio.map(|x| format!("{:.3}x", x)).unwrap_or_default(),
                ]
            })
            .collect();
        let head = ["metric", "value", "unit", "target", "ratio"];
        let mut w = head.map(str::len);
        for c in &cells {
            for i in 0..5 {
                w[i] = w[i].max(c[i].chars().count());
            }
        }
        let line = |c: &[String; 5]| {
            format!(
                "| {:<w0$} | {:>w1$} | {:<w2$} | {:<w3$} | {:>w4$} |",
                c[0],
                c[1],
                c[2],
                c[3],
                c[4],
                w0 = w[0],
                w1 = w[1],
                w2 = w[2],
                w3 = w[3],
                w4 = w[4]
            )
        };
        let mut out = format!("== {} ==\n", self.name);
        if !self.context.is_empty() {
            let ctx: Vec<String> = self
                .context
                .iter()
                .map(|(k, v)| format!("{}={}", k, v))
                .collect();
            out += &format!("   {}\n", ctx.join(" "));
        }
        out += &line(&head.map(String::from));
        out.push('\n');
        out += &format!(
            "|{}|\n",
            w.iter()
                .map(|n| "-".repeat(n + 2))
                .collect::<Vec<_>>()
                .join("|")
        );
        for c in &cells {
            out += &line(c);
            out.push('\n');
        }
        out += &format!(
            "{}: {}\n",
            if self.pass { "PASS" } else { "FAIL" },
            self.verdict
        );
        out
    }

    pub fn print(&self, json: bool) {
        if json {
            println!(
                "{}",
                serde_json::to_string_pretty(&self.to_json()).unwrap_or_default()
            );
        } else {
            print!("{}", self.render_table());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_and_json_carry_rows_and_verdict() {
        let mut r = Report::new("demo");
        r.row_target("latency p99", 0.0123, "s", "< 0.05 s", Some(0.246))
            .row("count", 3.0, "");
        r.verdict(false, "p99 over target");
        let t = r.render_table();
        assert!(
            t.contains("latency p99") && t.contains("0.0123") && t.contains("0.246x"),
            "{t}"
        );
        assert!(t.trim_end().ends_with("FAIL: p99 over target"), "{t}");
        let j = r.to_json();
        assert_eq!(j["pass"], false);
        assert_eq!(j["rows"][1]["metric"], "count");
        assert_eq!(j["rows"][0]["ratio"], 0.246);
    }
}
