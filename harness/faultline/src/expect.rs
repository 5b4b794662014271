//! Expectations: a source turns a watch stream (objects, events, log lines) into observations
//! "does the condition hold now, and what was seen"; a judge applies the timing (`within`, `for`,
//! `never`, invariants) to the observations as they arrive. No polling: sources wake on watch
//! events, judges on new observations or on their own deadlines.

use crate::celx::{Condition, Outcome};
use crate::events::EventStore;
use crate::k8s::Kube;
use crate::logs::LogStore;
use crate::model::duration::format_duration;
use crate::model::{ops::compact, EventExpect, Expect, LogExpect, LogSourceKind, ResourceExpect};
use crate::report::model::{Budget, ExpectationMode, ExpectationResult};
use crate::timeline::{EntryKind, Timeline, Verdict};
use futures::StreamExt;
use kube::runtime::watcher;
use parking_lot::Mutex;
use regex::Regex;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// What a source saw at one moment.
#[derive(Clone, Debug)]
pub struct Obs {
    pub at: Instant,
    pub holds: bool,
    /// For people: "2 of 3 Workspace satisfy ...; not: default/ws-c (status: {phase: Creating})".
    pub summary: String,
    /// The objects behind the observation (resource expectations), for the report directory.
    pub objects: Vec<Value>,
}

/// How a judge treats the observations.
#[derive(Clone, Copy, Debug)]
pub enum Mode {
    /// Holds at some point before the deadline.
    Eventually { deadline: Instant },
    /// Holds before the deadline, then continuously for `hold`.
    EventuallyFor { deadline: Instant, hold: Duration },
    /// Holds now and continuously for `hold`.
    For { hold: Duration },
    /// Never holds until `until` (None: the end of the scenario).
    Never { until: Option<Instant> },
    /// Always holds until the end of the scenario (invariants, log rate limits).
    Always,
}

#[derive(Clone)]
pub struct Ctx {
    pub kube: Kube,
    pub timeline: Timeline,
    pub events: EventStore,
    pub logs: LogStore,
    /// Becomes true when the scenario's steps are over.
    pub end: watch::Receiver<bool>,
    /// The scenario's resource expectations, watched since the steps began.
    pub recorders: Arc<Recorders>,
}

/// The transitions of one resource selection (when its condition started or stopped holding),
/// recorded from before its expectation is reached, so that a condition that already held when
/// it was checked is measured from when it first held, not from the check (events and log lines
/// keep their own arrival times).
struct Recorder {
    transitions: Arc<Mutex<Vec<Obs>>>,
    latest: watch::Receiver<Option<Obs>>,
    task: JoinHandle<()>,
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Recorder {
    /// What was seen from `anchor` on: the state at the anchor (when the recorder was already
    /// watching then), then every later transition.
    fn history_from(&self, anchor: Instant) -> Vec<Obs> {
        let transitions = self.transitions.lock();
        let after = transitions.partition_point(|o| o.at <= anchor);
        let at_anchor = after.checked_sub(1).map(|i| Obs {
            at: anchor,
            ..transitions[i].clone()
        });
        at_anchor
            .into_iter()
            .chain(transitions[after..].iter().cloned())
            .collect()
    }
}

/// One recorder per distinct resource selection of a scenario, started with its steps.
#[derive(Default)]
pub struct Recorders {
    by_selection: Mutex<HashMap<String, Arc<Recorder>>>,
}

impl Recorders {
    fn key(r: &ResourceExpect) -> String {
        serde_json::to_string(r).unwrap_or_default()
    }

    /// Start watching `r` (once per selection).
    pub fn start(&self, kube: &Kube, r: &ResourceExpect) {
        self.by_selection
            .lock()
            .entry(Self::key(r))
            .or_insert_with(|| {
                let transitions = Arc::new(Mutex::new(Vec::new()));
                let (tx, latest) = watch::channel(None);
                let task = tokio::spawn(resource_source(
                    kube.clone(),
                    r.clone(),
                    tx,
                    Some(transitions.clone()),
                ));
                Arc::new(Recorder {
                    transitions,
                    latest,
                    task,
                })
            });
    }

    /// The recorded history from `anchor` on and the live observations, when `r` is recorded.
    fn replay(
        &self,
        r: &ResourceExpect,
        anchor: Instant,
    ) -> Option<(Vec<Obs>, watch::Receiver<Option<Obs>>)> {
        let rec = self.by_selection.lock().get(&Self::key(r)).cloned()?;
        let mut live = rec.latest.clone();
        live.mark_changed();
        Some((rec.history_from(anchor), live))
    }

    /// Wait (at most `bound`) until `r`'s recorder shows what a fresh read of the API shows
    /// now. A judge that reads the record right after a step's write must not miss that write
    /// because its watch event is still on the way (a late success judged "never held").
    async fn catch_up(&self, kube: &Kube, r: &ResourceExpect, bound: Duration) {
        let Some(rec) = self.by_selection.lock().get(&Self::key(r)).cloned() else {
            return;
        };
        let Some(holds_now) = fresh_holds(kube, r).await else {
            return;
        };
        let mut latest = rec.latest.clone();
        let _ = tokio::time::timeout(bound, async {
            loop {
                if latest
                    .borrow_and_update()
                    .as_ref()
                    .is_some_and(|o| o.holds == holds_now)
                {
                    return;
                }
                if latest.changed().await.is_err() {
                    return;
                }
            }
        })
        .await;
    }

    /// Stop every watch (the steps are over).
    pub fn stop(&self) {
        self.by_selection.lock().clear();
    }
}

/// How an expectation is judged: a log rate limit is a `rate`; an invariant that is not a
/// `never` must hold `always`; otherwise `never`, or by `within` and `for`. The same for an
/// expectation that runs and for one reported as skipped.
pub fn mode_of(e: &Expect, invariant: bool) -> ExpectationMode {
    let rate = e.log.as_ref().is_some_and(|l| l.at_most.is_some());
    if rate {
        ExpectationMode::Rate
    } else if invariant && !e.never {
        ExpectationMode::Always
    } else if e.never {
        ExpectationMode::Never
    } else {
        match (e.within, e.hold_for) {
            (Some(_), Some(_)) => ExpectationMode::EventuallyFor,
            (None, Some(_)) => ExpectationMode::For,
            (_, None) => ExpectationMode::Eventually,
        }
    }
}

/// The budget an expectation is judged by: a deadline (`within`, else the suite's default) for
/// eventually-style modes, and the `for` window.
pub fn budget_of(e: &Expect, mode: ExpectationMode, default_within: Duration) -> Budget {
    Budget {
        within_ms: mode
            .has_deadline()
            .then(|| e.within.map_or(default_within, |d| d.get()).as_millis() as u64),
        for_ms: e.hold_for.map(|d| d.get().as_millis() as u64),
    }
}

/// Evaluate one expectation measured from `anchor`.
pub async fn evaluate(
    e: &Expect,
    anchor_name: &str,
    anchor: Instant,
    default_within: Duration,
    invariant: bool,
    ctx: &Ctx,
) -> ExpectationResult {
    let started = Instant::now();
    let within = e.within.map(|d| d.get());
    let hold = e.hold_for.map(|d| d.get());
    let reported_mode = mode_of(e, invariant);
    let mode = match reported_mode {
        ExpectationMode::Rate | ExpectationMode::Always => Mode::Always,
        ExpectationMode::Never => Mode::Never {
            until: if invariant {
                None
            } else {
                hold.map(|h| started + h)
            },
        },
        ExpectationMode::EventuallyFor => Mode::EventuallyFor {
            deadline: anchor + within.unwrap_or(default_within),
            hold: hold.unwrap_or_default(),
        },
        ExpectationMode::For => Mode::For {
            hold: hold.unwrap_or_default(),
        },
        ExpectationMode::Eventually => Mode::Eventually {
            deadline: anchor + within.unwrap_or(default_within),
        },
    };
    let name = e.name.clone().unwrap_or_else(|| "expect".into());
    let (kind, description) = describe(e);
    // Only the modes measured from the anchor judge a record; the others judge a window that
    // opens now, on a watch of their own (a recorder's latest observation may trail another
    // watch's by an event: `never` would see a state already gone).
    let from_anchor = matches!(mode, Mode::Eventually { .. } | Mode::EventuallyFor { .. });
    if let Some(r) = e.resource.as_ref().filter(|_| from_anchor) {
        ctx.recorders
            .catch_up(&ctx.kube, r, Duration::from_secs(2))
            .await;
    }
    let recorded = e
        .resource
        .as_ref()
        .filter(|_| from_anchor)
        .and_then(|r| ctx.recorders.replay(r, anchor));
    let (history, rx, source) = match recorded {
        Some((history, live)) => (history, live, None),
        None => {
            let (tx, rx) = watch::channel::<Option<Obs>>(None);
            let kube = ctx.kube.clone();
            let events = ctx.events.clone();
            let logs = ctx.logs.clone();
            let e = e.clone();
            let source = tokio::spawn(async move {
                if let Some(r) = &e.resource {
                    resource_source(kube, r.clone(), tx, None).await
                } else if let Some(ev) = &e.event {
                    event_source(events, ev.clone(), anchor, tx).await
                } else if let Some(l) = &e.log {
                    log_source(logs, l.clone(), anchor, tx).await
                }
            });
            (Vec::new(), rx, Some(source))
        }
    };
    let j = judge(mode, history, rx, anchor, ctx.end.clone()).await;
    if let Some(source) = source {
        source.abort();
    }
    let tl = &ctx.timeline;
    let budget = budget_of(e, reported_mode, default_within);
    let message = match (j.verdict, &mode) {
        (Verdict::Passed, _) => j.message.clone(),
        (_, Mode::Eventually { .. }) | (_, Mode::EventuallyFor { .. }) => {
            let hold_s = hold
                .map(|h| format!(" for {}", format_duration(h)))
                .unwrap_or_default();
            format!(
                "budget missed: within {} after {anchor_name}{hold_s}: {}",
                format_duration(within.unwrap_or(default_within)),
                j.message
            )
        }
        _ => j.message.clone(),
    };
    let result = ExpectationResult {
        name: name.clone(),
        kind: kind.into(),
        description: description.clone(),
        mode: reported_mode,
        anchor: anchor_name.to_string(),
        anchor_ms: tl.offset(anchor).as_millis() as u64,
        budget,
        verdict: j.verdict,
        started_ms: tl.offset(started).as_millis() as u64,
        finished_ms: tl.offset(Instant::now()).as_millis() as u64,
        measured_ms: j.measured.map(|d| d.as_millis() as u64),
        message,
        last_observed: j.last.as_ref().map(|o| o.summary.clone()),
        invariant,
        background: e.background,
        objects: j.last.map(|o| o.objects).unwrap_or_default(),
    };
    let measured = result
        .measured_ms
        .map(|m| format!(" in {}", format_duration(Duration::from_millis(m))))
        .unwrap_or_default();
    tl.verdict(
        EntryKind::Expect,
        format!("expect {name}: {}{measured}", result.verdict.word()),
        result.verdict,
    );
    result
}

/// How long a judge waits for the first observation when the deadline is already over.
pub const FIRST_OBSERVATION_GRACE: Duration = Duration::from_secs(5);

pub struct Judged {
    pub verdict: Verdict,
    pub measured: Option<Duration>,
    pub message: String,
    pub last: Option<Obs>,
}

fn at_str(o: &Obs, anchor: Instant) -> String {
    format_duration(o.at.saturating_duration_since(anchor))
}

fn failed(message: String, last: Option<Obs>, measured: Option<Duration>) -> Judged {
    Judged {
        verdict: Verdict::Failed,
        measured,
        message,
        last,
    }
}

fn passed(message: String, last: Option<Obs>, measured: Option<Duration>) -> Judged {
    Judged {
        verdict: Verdict::Passed,
        measured,
        message,
        last,
    }
}

/// What the judge remembers between observations.
#[derive(Default)]
struct Streak {
    /// When the condition started to hold in the current streak.
    since: Option<Instant>,
    /// When it first held at all.
    first_true: Option<Instant>,
    /// Whether a holding streak had started before the last observation.
    hold_started: bool,
}

impl Streak {
    /// One observation through the timing rules: a verdict when it decides one.
    fn observe(
        &mut self,
        mode: Mode,
        o: &Obs,
        anchor: Instant,
        window_start: Instant,
    ) -> Option<Judged> {
        let obs = || Some(o.clone());
        if o.holds {
            self.since.get_or_insert(o.at);
            self.first_true.get_or_insert(o.at);
        } else {
            self.since = None;
        }
        match mode {
            Mode::Eventually { deadline } if o.holds => {
                let m = o.at.saturating_duration_since(anchor);
                if o.at > deadline {
                    return Some(failed(
                        format!("held only after {}", format_duration(m)),
                        obs(),
                        Some(m),
                    ));
                }
                Some(passed(
                    format!("held after {}", format_duration(m)),
                    obs(),
                    Some(m),
                ))
            }
            Mode::EventuallyFor { deadline, hold } => {
                if !o.holds && self.hold_started && o.at >= deadline {
                    let first = self
                        .first_true
                        .map(|t| format_duration(t.saturating_duration_since(anchor)))
                        .unwrap_or_default();
                    return Some(failed(
                        format!(
                            "held at {first} but stopped holding before {} had passed",
                            format_duration(hold)
                        ),
                        obs(),
                        None,
                    ));
                }
                if o.holds && !self.hold_started && o.at > deadline {
                    let m = o.at.saturating_duration_since(anchor);
                    return Some(failed(
                        format!("held only after {}", format_duration(m)),
                        obs(),
                        Some(m),
                    ));
                }
                self.hold_started = self.since.is_some();
                None
            }
            Mode::For { hold } if !o.holds => {
                let when = format_duration(o.at.saturating_duration_since(window_start));
                Some(failed(
                    format!(
                        "did not hold continuously for {}: false {when} into the window",
                        format_duration(hold)
                    ),
                    obs(),
                    None,
                ))
            }
            Mode::Never { .. } if o.holds => Some(failed(
                format!(
                    "held at {} after the window opened (it must never hold)",
                    format_duration(o.at.saturating_duration_since(window_start)),
                ),
                obs(),
                Some(o.at.saturating_duration_since(anchor)),
            )),
            Mode::Always if !o.holds => Some(failed(
                format!("violated at {} after the start", at_str(o, anchor)),
                obs(),
                None,
            )),
            _ => None,
        }
    }
}

/// Apply the timing rules to the observations. `history`: what a recorder that was watching
/// before this expectation was reached saw from its anchor on (the state at the anchor first);
/// the modes measured from the anchor (eventually, eventually-for) judge it before the live
/// observations, so a condition that held before it was checked is measured from when it held.
pub async fn judge(
    mode: Mode,
    history: Vec<Obs>,
    mut rx: watch::Receiver<Option<Obs>>,
    anchor: Instant,
    mut end: watch::Receiver<bool>,
) -> Judged {
    let fail = failed;
    let pass = passed;
    let mut streak = Streak::default();
    let window_start = Instant::now();
    if matches!(mode, Mode::Eventually { .. } | Mode::EventuallyFor { .. }) {
        for o in &history {
            if let Some(j) = streak.observe(mode, o, anchor, window_start) {
                return j;
            }
        }
    }
    loop {
        let obs = rx.borrow_and_update().clone();
        if let Some(o) = &obs {
            if let Some(j) = streak.observe(mode, o, anchor, window_start) {
                return j;
            }
        }
        let (since, first_true) = (streak.since, streak.first_true);
        // What to wait for next.
        // Until the first observation arrives, a deadline already past is extended by a grace
        // period, so "too late" is reported with what was seen rather than "nothing seen".
        let grace = |d: Instant| {
            if obs.is_none() {
                d.max(window_start + FIRST_OBSERVATION_GRACE)
            } else {
                d
            }
        };
        let timer: Option<(Instant, &str)> = match mode {
            Mode::Eventually { deadline } => Some((grace(deadline), "deadline")),
            Mode::EventuallyFor { deadline, hold } => match since {
                Some(s) => Some((s + hold, "held")),
                None => Some((grace(deadline), "deadline")),
            },
            Mode::For { hold } => Some((window_start + hold, "held")),
            Mode::Never { until } => until.map(|u| (u, "held")),
            Mode::Always => None,
        };
        let ends_on_end = matches!(mode, Mode::Always | Mode::Never { until: None });
        let sleep = async {
            match timer {
                Some((t, _)) => tokio::time::sleep_until(t.into()).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            changed = rx.changed() => {
                if changed.is_err() {
                    // The source ended (cannot happen in normal operation): judge on what we have.
                    std::future::pending::<()>().await;
                }
            }
            _ = sleep => {
                let last = rx.borrow().clone();
                let (_, what) = timer.unwrap();
                return match (mode, what) {
                    (Mode::Eventually { .. }, _) => {
                        let why = match &last {
                            None => "no observation yet (the watch did not deliver)".to_string(),
                            Some(_) => "the condition never held".to_string(),
                        };
                        fail(why, last, None)
                    }
                    (Mode::EventuallyFor { .. }, "held") => {
                        let m = since.unwrap().saturating_duration_since(anchor);
                        pass(format!("held after {} and stayed", format_duration(m)), last, Some(m))
                    }
                    (Mode::EventuallyFor { hold, .. }, _) => match first_true {
                        Some(t) => fail(format!("held at {} but not for {} in a row", format_duration(t.saturating_duration_since(anchor)), format_duration(hold)), last, None),
                        None => fail("the condition never held".into(), last, None),
                    },
                    (Mode::For { hold }, _) => match &last {
                        None => fail("no observation (the watch did not deliver)".into(), None, None),
                        Some(_) => pass(format!("held for {}", format_duration(hold)), last, None),
                    },
                    _ => pass("never held".into(), last, None),
                };
            }
            _ = async { let _ = end.wait_for(|e| *e).await; }, if ends_on_end => {
                let last = rx.borrow().clone();
                if matches!(mode, Mode::Always) {
                    if let Some(o) = &last {
                        if !o.holds {
                            return fail("violated at the end".into(), last, None);
                        }
                    }
                    return pass("held throughout".into(), last, None);
                }
                return pass("never held".into(), last, None);
            }
        }
    }
}

/// (kind, description).
pub fn describe(e: &Expect) -> (&'static str, String) {
    if let Some(r) = &e.resource {
        let what = format!("{} ({})", r.kind, r.api_version);
        let scope = match (&r.namespace, &r.name, &r.label_selector) {
            (ns, Some(n), _) => format!(
                "{what} {}{n}",
                ns.as_ref().map(|n| format!("{n}/")).unwrap_or_default()
            ),
            (ns, None, sel) => format!(
                "{what}{}{}",
                ns.as_ref().map(|n| format!(" in {n}")).unwrap_or_default(),
                sel.as_ref()
                    .map(|s| format!(" with {s}"))
                    .unwrap_or_default()
            ),
        };
        let d = if let Some(c) = &r.condition {
            format!("{scope}: `{c}`")
        } else if let Some(c) = &r.one {
            format!("exactly one {scope} satisfies `{c}`")
        } else if let Some(c) = &r.any {
            format!("any {scope} satisfies `{c}`")
        } else if let Some(c) = &r.all {
            format!("all {scope} satisfy `{c}`")
        } else if let Some(c) = &r.none {
            format!("no {scope} satisfies `{c}`")
        } else if let Some(c) = &r.count {
            format!(
                "count of {scope}{} {}",
                c.filter
                    .as_ref()
                    .map(|f| format!(" where `{f}`"))
                    .unwrap_or_default(),
                count_bounds(c)
            )
        } else {
            scope
        };
        let d = if e.never { format!("never: {d}") } else { d };
        return ("resource", d);
    }
    if let Some(ev) = &e.event {
        let mut parts = vec![];
        if let Some(t) = ev.r#type {
            parts.push(format!("{t:?}"));
        }
        if let Some(r) = &ev.reason {
            parts.push(r.clone());
        }
        if let Some(k) = &ev.involved_kind {
            parts.push(format!("on {k}"));
        }
        if let Some(n) = &ev.involved_name {
            parts.push(n.clone());
        }
        if let Some(m) = &ev.message {
            parts.push(format!("message ~ /{m}/"));
        }
        let n = ev.at_least.unwrap_or(1);
        let d = format!(
            "event {}{}",
            parts.join(" "),
            if n > 1 {
                format!(" x{n}")
            } else {
                String::new()
            }
        );
        return ("event", if e.never { format!("never: {d}") } else { d });
    }
    if let Some(l) = &e.log {
        let src = match l.source {
            LogSourceKind::Controller => "controller",
            LogSourceKind::Kubelet => "kubelet",
            LogSourceKind::CsiPlugin => "csi-plugin",
        };
        let node = l
            .node
            .as_ref()
            .map(|n| format!(" on {n}"))
            .unwrap_or_default();
        let d = match (l.at_most, l.per) {
            (Some(n), Some(p)) => format!(
                "{src} log{node}: at most {n} lines matching /{}/ per {}",
                l.pattern,
                format_duration(p.get())
            ),
            (Some(n), None) => format!(
                "{src} log{node}: at most {n} lines matching /{}/",
                l.pattern
            ),
            _ => format!(
                "{src} log{node}: {} line(s) matching /{}/",
                l.at_least.unwrap_or(1),
                l.pattern
            ),
        };
        return ("log", if e.never { format!("never: {d}") } else { d });
    }
    ("expect", String::new())
}

fn count_bounds(c: &crate::model::CountSpec) -> String {
    let mut v = vec![];
    if let Some(n) = c.equals {
        v.push(format!("== {n}"))
    }
    if let Some(n) = c.at_least {
        v.push(format!(">= {n}"))
    }
    if let Some(n) = c.at_most {
        v.push(format!("<= {n}"))
    }
    v.join(" and ")
}

fn key_of(v: &Value) -> String {
    let ns = v.pointer("/metadata/namespace").and_then(Value::as_str);
    let name = v
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("?");
    match ns {
        Some(ns) => format!("{ns}/{name}"),
        None => name.to_string(),
    }
}

fn brief_status(v: &Value) -> String {
    let mut s = match v.get("status") {
        Some(st) => format!("status: {}", compact(st)),
        None => "no status".to_string(),
    };
    if s.len() > 200 {
        s.truncate(197);
        s.push_str("...");
    }
    s
}

/// Evaluate a resource expectation over the current set of objects.
pub fn observe_objects(r: &ResourceExpect, objects: &BTreeMap<String, Value>) -> (bool, String) {
    let all: Vec<&Value> = objects.values().collect();
    let n = all.len();
    let compile = |s: &str| Condition::compile(s);
    if let Some(c) = &r.condition {
        let Ok(cond) = compile(c) else {
            return (false, format!("invalid CEL `{c}`"));
        };
        let name = r.name.clone().unwrap_or_default();
        let obj = all
            .iter()
            .find(|o| o.pointer("/metadata/name").and_then(Value::as_str) == Some(&name))
            .copied();
        let v = obj.cloned().unwrap_or(Value::Null);
        let out = cond.eval(&v);
        let what = match obj {
            Some(o) => format!("{} ({})", key_of(o), brief_status(o)),
            None => format!("{name} does not exist"),
        };
        return match out {
            Outcome::True => (true, format!("`{c}` holds for {what}")),
            Outcome::False => (false, format!("`{c}` is false for {what}")),
            Outcome::Error(e) => (false, format!("`{c}` cannot be evaluated for {what}: {e}")),
        };
    }
    let (expr, mode) = if let Some(c) = &r.one {
        (Some(c), "one")
    } else if let Some(c) = &r.any {
        (Some(c), "any")
    } else if let Some(c) = &r.all {
        (Some(c), "all")
    } else if let Some(c) = &r.none {
        (Some(c), "none")
    } else {
        (r.count.as_ref().and_then(|c| c.filter.as_ref()), "count")
    };
    let cond = match expr.map(|e| compile(e)) {
        Some(Ok(c)) => Some(c),
        Some(Err(e)) => return (false, e),
        None => None,
    };
    let mut yes = vec![];
    let mut no = vec![];
    for o in &all {
        match cond.as_ref().map(|c| c.eval(o)).unwrap_or(Outcome::True) {
            Outcome::True => yes.push(*o),
            Outcome::False => no.push((*o, String::new())),
            Outcome::Error(e) => no.push((*o, e)),
        }
    }
    let expr_s = expr.cloned().unwrap_or_default();
    let offenders = |list: &[(&Value, String)]| -> String {
        let mut parts: Vec<String> = list
            .iter()
            .take(3)
            .map(|(o, err)| {
                if err.is_empty() {
                    format!("{} ({})", key_of(o), brief_status(o))
                } else {
                    format!("{} ({err})", key_of(o))
                }
            })
            .collect();
        if list.len() > 3 {
            parts.push(format!("and {} more", list.len() - 3));
        }
        parts.join("; ")
    };
    let kind = &r.kind;
    match mode {
        "one" => (
            yes.len() == 1,
            format!(
                "{} of {n} {kind} satisfy `{expr_s}` (exactly one required){}",
                yes.len(),
                if yes.len() > 1 {
                    format!(
                        ": {}",
                        yes.iter().map(|o| key_of(o)).collect::<Vec<_>>().join(", ")
                    )
                } else {
                    String::new()
                }
            ),
        ),
        "any" => (
            !yes.is_empty(),
            if yes.is_empty() {
                format!(
                    "none of {n} {kind} satisfy `{expr_s}`{}",
                    if n > 0 {
                        format!(": {}", offenders(&no))
                    } else {
                        String::new()
                    }
                )
            } else {
                format!("{} of {n} {kind} satisfy `{expr_s}`", yes.len())
            },
        ),
        "all" => (
            n > 0 && no.is_empty(),
            if n == 0 {
                format!("no {kind} selected (all requires at least one)")
            } else if no.is_empty() {
                format!("all {n} {kind} satisfy `{expr_s}`")
            } else {
                format!(
                    "{} of {n} {kind} satisfy `{expr_s}`; not: {}",
                    yes.len(),
                    offenders(&no)
                )
            },
        ),
        "none" => (
            yes.is_empty(),
            if yes.is_empty() {
                format!("none of {n} {kind} satisfy `{expr_s}`")
            } else {
                format!(
                    "{} of {n} {kind} satisfy `{expr_s}`: {}",
                    yes.len(),
                    yes.iter()
                        .take(3)
                        .map(|o| format!("{} ({})", key_of(o), brief_status(o)))
                        .collect::<Vec<_>>()
                        .join("; ")
                )
            },
        ),
        _ => {
            let c = r.count.clone().unwrap_or_default();
            let k = yes.len() as u64;
            let ok = c.equals.is_none_or(|e| k == e)
                && c.at_least.is_none_or(|e| k >= e)
                && c.at_most.is_none_or(|e| k <= e);
            (
                ok,
                format!("count = {k} (expected {}) of {n} {kind}", count_bounds(&c)),
            )
        }
    }
}

/// Observations of a resource selection; with `transitions`, each change of whether the
/// condition holds is also kept there (a `Recorder`).
/// Whether `r`'s condition holds on a fresh LIST of its selection (`None`: it cannot be read).
async fn fresh_holds(kube: &Kube, r: &ResourceExpect) -> Option<bool> {
    let (ar, caps) = kube.resolve(&r.api_version, &r.kind).await.ok()?;
    let api = kube.api(&ar, &caps, r.namespace.as_deref());
    let mut lp = kube::api::ListParams::default();
    if let Some(n) = &r.name {
        lp = lp.fields(&format!("metadata.name={n}"));
    }
    if let Some(s) = &r.label_selector {
        lp = lp.labels(s);
    }
    let list = api.list(&lp).await.ok()?;
    let store: BTreeMap<String, Value> = list
        .items
        .iter()
        .map(|o| {
            let v = serde_json::to_value(o).unwrap_or_default();
            (key_of(&v), v)
        })
        .collect();
    Some(observe_objects(r, &store).0)
}

async fn resource_source(
    kube: Kube,
    r: ResourceExpect,
    tx: watch::Sender<Option<Obs>>,
    transitions: Option<Arc<Mutex<Vec<Obs>>>>,
) {
    let (ar, caps) = loop {
        match kube.resolve(&r.api_version, &r.kind).await {
            Ok(x) => break x,
            Err(e) => {
                tx.send_replace(Some(Obs {
                    at: Instant::now(),
                    holds: false,
                    summary: crate::k8s::explain(&e),
                    objects: vec![],
                }));
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        }
    };
    let api = kube.api(&ar, &caps, r.namespace.as_deref());
    let mut cfg = watcher::Config::default();
    if let Some(n) = &r.name {
        cfg = cfg.fields(&format!("metadata.name={n}"));
    }
    if let Some(s) = &r.label_selector {
        cfg = cfg.labels(s);
    }
    let mut stream = watcher(api, cfg).boxed();
    let mut store: BTreeMap<String, Value> = BTreeMap::new();
    let mut buffer: Option<BTreeMap<String, Value>> = None;
    let mut ready = false;
    let publish = |store: &BTreeMap<String, Value>| {
        let (holds, summary) = observe_objects(&r, store);
        let obs = Obs {
            at: Instant::now(),
            holds,
            summary,
            objects: store.values().cloned().collect(),
        };
        if let Some(t) = &transitions {
            let mut t = t.lock();
            if t.last().is_none_or(|l| l.holds != holds) {
                t.push(obs.clone());
            }
        }
        tx.send_replace(Some(obs));
    };
    while let Some(ev) = stream.next().await {
        match ev {
            Ok(watcher::Event::Init) => buffer = Some(BTreeMap::new()),
            Ok(watcher::Event::InitApply(o)) => {
                let v = serde_json::to_value(&o).unwrap_or_default();
                buffer
                    .get_or_insert_with(BTreeMap::new)
                    .insert(key_of(&v), v);
            }
            Ok(watcher::Event::InitDone) => {
                store = buffer.take().unwrap_or_default();
                ready = true;
                publish(&store);
            }
            Ok(watcher::Event::Apply(o)) => {
                let v = serde_json::to_value(&o).unwrap_or_default();
                store.insert(key_of(&v), v);
                if ready {
                    publish(&store);
                }
            }
            Ok(watcher::Event::Delete(o)) => {
                let v = serde_json::to_value(&o).unwrap_or_default();
                store.remove(&key_of(&v));
                if ready {
                    publish(&store);
                }
            }
            Err(e) => {
                let last = tx.borrow().clone();
                let summary = format!("watch error: {e}");
                tx.send_replace(Some(Obs {
                    at: Instant::now(),
                    holds: last.as_ref().is_some_and(|l| l.holds),
                    summary,
                    objects: last.map(|l| l.objects).unwrap_or_default(),
                }));
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    }
}

pub fn event_matches(
    ev: &EventExpect,
    v: &Value,
    msg_re: Option<&Regex>,
    name_re: Option<&Regex>,
) -> bool {
    let s = |p: &str| v.pointer(p).and_then(Value::as_str).unwrap_or("");
    ev.reason.as_ref().is_none_or(|r| s("/reason") == r)
        && ev.r#type.is_none_or(|t| s("/type") == format!("{t:?}"))
        && ev
            .involved_kind
            .as_ref()
            .is_none_or(|k| s("/involvedObject/kind") == k)
        && ev
            .namespace
            .as_ref()
            .is_none_or(|n| s("/metadata/namespace") == n || s("/involvedObject/namespace") == n)
        && ev.involved_name.as_ref().is_none_or(|n| match name_re {
            Some(re) => re.is_match(s("/involvedObject/name")),
            None => s("/involvedObject/name") == n,
        })
        && msg_re.is_none_or(|re| re.is_match(s("/message")))
}

async fn event_source(
    events: EventStore,
    ev: EventExpect,
    anchor: Instant,
    tx: watch::Sender<Option<Obs>>,
) {
    let msg_re = ev.message.as_deref().and_then(|m| Regex::new(m).ok());
    let name_re = ev
        .involved_name
        .as_deref()
        .filter(|n| n.len() > 1 && n.starts_with('/') && n.ends_with('/'))
        .and_then(|n| Regex::new(&n[1..n.len() - 1]).ok());
    let need = ev.at_least.unwrap_or(1);
    let mut rx = events.subscribe();
    let mut seen = 0usize;
    let mut count = 0u64;
    let mut last_match: Option<Value> = None;
    let mut first_at: Option<Instant> = None;
    loop {
        let new = events.since(seen);
        seen += new.len();
        for o in new {
            if o.at >= anchor && event_matches(&ev, &o.event, msg_re.as_ref(), name_re.as_ref()) {
                count += 1;
                if count >= need && first_at.is_none() {
                    first_at = Some(o.at);
                }
                last_match = Some(o.event);
            }
        }
        let summary = match &last_match {
            Some(v) => format!(
                "{count} matching event(s) since the anchor; last: {}",
                crate::events::describe(v)
            ),
            None => "no matching event since the anchor".to_string(),
        };
        let at = first_at.unwrap_or_else(Instant::now);
        tx.send_replace(Some(Obs {
            at,
            holds: count >= need,
            summary,
            objects: last_match.iter().cloned().collect(),
        }));
        if rx.changed().await.is_err() {
            return;
        }
    }
}

async fn log_source(logs: LogStore, l: LogExpect, anchor: Instant, tx: watch::Sender<Option<Obs>>) {
    let Ok(re) = Regex::new(&l.pattern) else {
        return;
    };
    let mut rx = logs.subscribe();
    let mut seen = 0usize;
    let mut count = 0u64;
    let mut window: VecDeque<Instant> = VecDeque::new();
    let mut last_line: Option<String> = None;
    let mut first_at: Option<Instant> = None;
    let mut violated: Option<(Instant, usize)> = None;
    let need = l.at_least.unwrap_or(1);
    loop {
        let new = logs.since(seen);
        seen += new.len();
        for s in new {
            if s.at < anchor || s.line.source != l.source {
                continue;
            }
            if let Some(n) = &l.node {
                if s.line.node.as_deref() != Some(n) {
                    continue;
                }
            }
            if !re.is_match(&s.line.text) {
                continue;
            }
            count += 1;
            last_line = Some(s.line.text.clone());
            if count >= need && first_at.is_none() {
                first_at = Some(s.at);
            }
            if let Some(max) = l.at_most {
                window.push_back(s.at);
                if let Some(per) = l.per {
                    while window
                        .front()
                        .is_some_and(|t| s.at.saturating_duration_since(*t) > per.get())
                    {
                        window.pop_front();
                    }
                }
                if window.len() as u64 > max && violated.is_none() {
                    violated = Some((s.at, window.len()));
                }
            }
        }
        let obs = match l.at_most {
            Some(max) => match violated {
                Some((at, n)) => Obs {
                    at,
                    holds: false,
                    objects: vec![],
                    summary: format!(
                        "{n} matching lines within {} (at most {max} allowed); last: {}",
                        l.per
                            .map(|p| format_duration(p.get()))
                            .unwrap_or("the run".into()),
                        last_line.clone().unwrap_or_default()
                    ),
                },
                None => Obs {
                    at: Instant::now(),
                    holds: true,
                    objects: vec![],
                    summary: format!("{count} matching line(s) so far, within the limit"),
                },
            },
            None => Obs {
                at: first_at.unwrap_or_else(Instant::now),
                holds: count >= need,
                objects: vec![],
                summary: match &last_line {
                    Some(t) => format!("{count} matching line(s) since the anchor; last: {t}"),
                    None => "no matching line since the anchor".to_string(),
                },
            },
        };
        tx.send_replace(Some(obs));
        if rx.changed().await.is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obs(holds: bool) -> Option<Obs> {
        Some(Obs {
            at: Instant::now(),
            holds,
            summary: format!("holds={holds}"),
            objects: vec![],
        })
    }

    /// Feed observations at the given offsets (ms) and judge.
    async fn judged(
        mode_of: impl FnOnce(Instant) -> Mode,
        feed: Vec<(u64, bool)>,
        end_after: Option<u64>,
    ) -> Judged {
        let anchor = Instant::now();
        let (tx, rx) = watch::channel(None);
        let (etx, erx) = watch::channel(false);
        tokio::spawn(async move {
            for (at, h) in feed {
                tokio::time::sleep_until((anchor + Duration::from_millis(at)).into()).await;
                tx.send_replace(obs(h));
            }
            if let Some(e) = end_after {
                tokio::time::sleep_until((anchor + Duration::from_millis(e)).into()).await;
                let _ = etx.send(true);
            }
            std::future::pending::<()>().await;
        });
        judge(mode_of(anchor), vec![], rx, anchor, erx).await
    }

    #[tokio::test]
    async fn eventually_passes_with_the_measured_time_and_fails_at_the_deadline() {
        let j = judged(
            |a| Mode::Eventually {
                deadline: a + Duration::from_millis(500),
            },
            vec![(0, false), (100, true)],
            None,
        )
        .await;
        assert_eq!(j.verdict, Verdict::Passed);
        let m = j.measured.unwrap().as_millis();
        assert!((90..300).contains(&m), "{m}");
        let j = judged(
            |a| Mode::Eventually {
                deadline: a + Duration::from_millis(150),
            },
            vec![(0, false)],
            None,
        )
        .await;
        assert_eq!(j.verdict, Verdict::Failed);
        assert_eq!(j.message, "the condition never held");
        assert_eq!(j.last.unwrap().summary, "holds=false");
    }

    #[tokio::test]
    async fn eventually_for_restarts_the_hold_when_it_flips_before_the_deadline() {
        let mode = |a: Instant| Mode::EventuallyFor {
            deadline: a + Duration::from_millis(400),
            hold: Duration::from_millis(150),
        };
        let j = judged(mode, vec![(0, true), (50, false), (100, true)], None).await;
        assert_eq!(j.verdict, Verdict::Passed, "{}", j.message);
        assert!(
            j.measured.unwrap() >= Duration::from_millis(90),
            "measured from the streak that held"
        );
        let j = judged(mode, vec![(0, false), (350, true), (450, false)], None).await;
        assert_eq!(j.verdict, Verdict::Failed, "{}", j.message);
    }

    fn obs_at(at: Instant, holds: bool) -> Obs {
        Obs {
            at,
            holds,
            summary: format!("holds={holds}"),
            objects: vec![],
        }
    }

    /// Issue #33 item 13: a condition that held before it was checked is measured from when it
    /// held (the recorder's history), not from the check.
    #[tokio::test]
    async fn a_condition_that_already_held_is_measured_from_when_it_held() {
        let anchor = Instant::now() - Duration::from_secs(2);
        let held = anchor + Duration::from_millis(700);
        let (_tx, rx) = watch::channel(Some(obs_at(Instant::now(), true)));
        let (_etx, erx) = watch::channel(false);
        let deadline = anchor + Duration::from_secs(5);
        let history = vec![obs_at(anchor, false), obs_at(held, true)];
        let j = judge(
            Mode::Eventually { deadline },
            history.clone(),
            rx.clone(),
            anchor,
            erx.clone(),
        )
        .await;
        assert_eq!(j.verdict, Verdict::Passed, "{}", j.message);
        assert_eq!(j.measured, Some(Duration::from_millis(700)));
        // Without the history, the check's own time (2 s) is all there is.
        let j = judge(
            Mode::Eventually { deadline },
            vec![],
            rx.clone(),
            anchor,
            erx.clone(),
        )
        .await;
        assert!(
            j.measured.unwrap() >= Duration::from_secs(2),
            "{:?}",
            j.measured
        );
        // Held for 1 s by the time it is checked: eventually-for passes at once, from 700ms.
        let mode = Mode::EventuallyFor {
            deadline,
            hold: Duration::from_secs(1),
        };
        let j = judge(mode, history, rx.clone(), anchor, erx.clone()).await;
        assert_eq!(j.verdict, Verdict::Passed, "{}", j.message);
        assert_eq!(j.measured, Some(Duration::from_millis(700)));
        // A history that held only after the deadline fails with the time it held.
        let late = vec![
            obs_at(anchor, false),
            obs_at(anchor + Duration::from_millis(1500), true),
        ];
        let mode = Mode::Eventually {
            deadline: anchor + Duration::from_secs(1),
        };
        let j = judge(mode, late, rx, anchor, erx).await;
        assert_eq!(j.verdict, Verdict::Failed, "{}", j.message);
        assert_eq!(j.measured, Some(Duration::from_millis(1500)));
    }

    #[tokio::test]
    async fn a_recorders_history_starts_with_the_state_at_the_anchor() {
        let t0 = Instant::now();
        let ms = |n| t0 + Duration::from_millis(n);
        let rec = Recorder {
            transitions: Arc::new(Mutex::new(vec![
                obs_at(ms(0), false),
                obs_at(ms(100), true),
                obs_at(ms(300), false),
            ])),
            latest: watch::channel(None).1,
            task: tokio::spawn(async {}),
        };
        let h: Vec<(Instant, bool)> = rec
            .history_from(ms(200))
            .iter()
            .map(|o| (o.at, o.holds))
            .collect();
        assert_eq!(h, vec![(ms(200), true), (ms(300), false)]);
        let h: Vec<(Instant, bool)> = rec
            .history_from(ms(100))
            .iter()
            .map(|o| (o.at, o.holds))
            .collect();
        assert_eq!(h, vec![(ms(100), true), (ms(300), false)]);
        // An anchor before the first observation: everything, from when it was seen.
        let before = t0.checked_sub(Duration::from_millis(50)).unwrap();
        assert_eq!(rec.history_from(before).len(), 3);
        assert!(rec.history_from(ms(400)).iter().all(|o| !o.holds));
    }

    #[tokio::test]
    async fn for_fails_as_soon_as_it_stops_holding() {
        let j = judged(
            |_| Mode::For {
                hold: Duration::from_millis(300),
            },
            vec![(0, true), (100, false)],
            None,
        )
        .await;
        assert_eq!(j.verdict, Verdict::Failed);
        assert!(
            j.message.starts_with("did not hold continuously for 300ms"),
            "{}",
            j.message
        );
        let j = judged(
            |_| Mode::For {
                hold: Duration::from_millis(150),
            },
            vec![(0, true)],
            None,
        )
        .await;
        assert_eq!(j.verdict, Verdict::Passed);
    }

    #[tokio::test]
    async fn never_and_always_windows() {
        let j = judged(
            |_| Mode::Never { until: None },
            vec![(0, false), (50, true)],
            Some(300),
        )
        .await;
        assert_eq!(j.verdict, Verdict::Failed);
        let j = judged(|_| Mode::Never { until: None }, vec![(0, false)], Some(100)).await;
        assert_eq!(j.verdict, Verdict::Passed);
        let j = judged(
            |a| Mode::Never {
                until: Some(a + Duration::from_millis(100)),
            },
            vec![(0, false), (200, true)],
            None,
        )
        .await;
        assert_eq!(j.verdict, Verdict::Passed, "true only after the window");
        let j = judged(|_| Mode::Always, vec![(0, true), (60, false)], Some(300)).await;
        assert_eq!(j.verdict, Verdict::Failed);
        let j = judged(|_| Mode::Always, vec![(0, true)], Some(80)).await;
        assert_eq!(j.verdict, Verdict::Passed);
    }

    fn objects(list: &[serde_json::Value]) -> BTreeMap<String, Value> {
        list.iter().map(|o| (key_of(o), o.clone())).collect()
    }

    #[test]
    fn selections_over_objects() {
        let ws = |n: &str, phase: &str| json!({"metadata": {"name": n, "namespace": "ns"}, "status": {"phase": phase}});
        let set = objects(&[ws("a", "Active"), ws("b", "Active"), ws("c", "Creating")]);
        let r = |f: &dyn Fn(&mut ResourceExpect)| {
            let mut r = ResourceExpect {
                kind: "Workspace".into(),
                ..Default::default()
            };
            f(&mut r);
            r
        };
        let active = "object.status.phase == 'Active'".to_string();
        let (ok, s) = observe_objects(&r(&|r| r.all = Some(active.clone())), &set);
        assert!(!ok);
        assert_eq!(s, "2 of 3 Workspace satisfy `object.status.phase == 'Active'`; not: ns/c (status: {phase: Creating})");
        assert!(observe_objects(&r(&|r| r.any = Some(active.clone())), &set).0);
        assert!(!observe_objects(&r(&|r| r.one = Some(active.clone())), &set).0);
        assert!(
            observe_objects(
                &r(&|r| r.one = Some("object.status.phase == 'Creating'".into())),
                &set
            )
            .0
        );
        assert!(!observe_objects(&r(&|r| r.none = Some(active.clone())), &set).0);
        let count = |eq| {
            r(&|r| {
                r.count = Some(crate::model::CountSpec {
                    filter: Some(active.clone()),
                    equals: Some(eq),
                    ..Default::default()
                })
            })
        };
        assert!(observe_objects(&count(2), &set).0);
        assert_eq!(
            observe_objects(&count(3), &set).1,
            "count = 2 (expected == 3) of 3 Workspace"
        );
        let (ok, s) = observe_objects(&r(&|r| r.all = Some(active.clone())), &BTreeMap::new());
        assert!(!ok, "all over nothing does not hold");
        assert_eq!(s, "no Workspace selected (all requires at least one)");
        let named = r(&|r| {
            r.name = Some("zz".into());
            r.condition = Some("object == null".into())
        });
        assert!(observe_objects(&named, &set).0, "absent object is null");
    }
}
