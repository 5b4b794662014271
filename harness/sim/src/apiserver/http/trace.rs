//! The API trace of one client (the controller under test, by the user it authenticates as) and
//! the perturbations `faultline explore` applies to what that client observes. The HTTP layer
//! records each of its resource requests (verb, resource, name, resourceVersion, answer code,
//! time) and each watch event delivered to it; perturbations are plain data armed before the run:
//!
//! - `CrashAfterMutation { k }`: once the k-th mutating request of the client has been answered,
//!   the client's further requests are held at a gate and the runner is told to kill it; requests
//!   held when the gate is released belong to the dead process and are refused (they were sent
//!   after the crash point), so the restarted process starts from exactly the state after the
//!   k-th write.
//! - `WatchRelist { n }`: the n-th watch event meant for the client is withheld and its watch
//!   ends with a 410 Expired ERROR event, as when the apiserver's watch cache has compacted
//!   past the watcher (`cacher/watch_cache.go`'s "too old resource version"): the client
//!   relists and never observes that intermediate state.
//! - `StaleRead { n, window }`: the client's n-th GET or LIST is answered from the store's state
//!   just before the latest change to what it reads, when that change is younger than `window`
//!   and the watch cache answers that read (what a lagging watch cache of an HA apiserver could
//!   serve: the cacher of `staging/src/k8s.io/apiserver/pkg/storage/cacher/cacher.go` answers
//!   reads with resourceVersion=0 or a NotOlderThan resourceVersion from its own, possibly
//!   lagging, state; reads without one are consistent); otherwise the read is served fresh.
//!   When the n-th read is a consistent one, which no cache answers, the perturbation moves
//!   on to the next read (`stale_deferred`): read ordinals drift between runs with how many
//!   reconciles the client's watch events set off, and the point is the cache read near n.
//! - `MoveFault { step, k }`: the scenario's fault step `step` is run by the runner right after
//!   the k-th mutating request was answered instead of at its place in the steps; the client's
//!   further requests wait at the gate (and pass, unlike a crash's) until the runner has
//!   injected it, so the client observes exactly the state after its k-th write plus the fault.

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// A resource request's verb, as RBAC and audit logs name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verb {
    Get,
    List,
    Watch,
    Create,
    Update,
    Patch,
    Delete,
    DeleteCollection,
}

impl Verb {
    pub fn parse(v: &str) -> Option<Verb> {
        Some(match v {
            "get" => Verb::Get,
            "list" => Verb::List,
            "watch" => Verb::Watch,
            "create" => Verb::Create,
            "update" => Verb::Update,
            "patch" => Verb::Patch,
            "delete" => Verb::Delete,
            "deletecollection" => Verb::DeleteCollection,
            _ => return None,
        })
    }
    /// Writes: the points a crash can follow.
    pub fn is_mutating(self) -> bool {
        matches!(
            self,
            Verb::Create | Verb::Update | Verb::Patch | Verb::Delete | Verb::DeleteCollection
        )
    }
    /// Reads a stale view can answer.
    pub fn is_read(self) -> bool {
        matches!(self, Verb::Get | Verb::List)
    }
}

/// One perturbation of what the traced client observes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    rename_all = "camelCase",
    rename_all_fields = "camelCase",
    tag = "kind"
)]
pub enum Perturbation {
    /// Kill the client right after the sim answered its k-th (1-based) mutating request.
    CrashAfterMutation { k: u64 },
    /// Answer its n-th (1-based) GET/LIST from the state before the latest change to what it
    /// reads, if that change is younger than `window`.
    StaleRead {
        n: u64,
        #[serde(with = "millis")]
        window: Duration,
    },
    /// Withhold the n-th (1-based) watch event delivered to it and close that watch with
    /// 410 Expired instead, so that it relists and never sees that intermediate state.
    WatchRelist { n: u64 },
    /// Run the scenario's fault step `step` right after the k-th (1-based) mutating request
    /// was answered, instead of at its place in the steps (the runner injects it).
    MoveFault { step: String, k: u64 },
}

mod millis {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;
    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(d.as_millis() as u64)
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        Ok(Duration::from_millis(u64::deserialize(d)?))
    }
}

/// What one trace entry records.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(
    rename_all = "camelCase",
    rename_all_fields = "camelCase",
    tag = "type"
)]
pub enum TraceKind {
    Request {
        verb: Verb,
        /// `group/resource`, `resource` for the core group; `/sub` appended for a subresource.
        resource: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        namespace: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        /// For a create of an object (not a subresource): its kind, so that what the client
        /// made can be found in an end state (`name` is `<generateName>*` for a generated one).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        kind: Option<String>,
        /// The resourceVersion the client sent (query parameter, or the body's for writes).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        resource_version: Option<String>,
        /// The store's resourceVersion when the answer was made.
        store_rv: u64,
        code: u16,
        /// 1-based ordinal among the client's mutating requests.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mutation: Option<u64>,
        /// 1-based ordinal among the client's GETs and LISTs.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        read: Option<u64>,
        /// For a read: the resourceVersion a stale read (default window) would have served.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stale_from: Option<u64>,
        /// The perturbation applied to this request, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        perturbed: Option<String>,
    },
    WatchEvent {
        resource: String,
        event: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        namespace: Option<String>,
        name: String,
        resource_version: String,
        /// 1-based ordinal among the watch events meant for the client.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        ordinal: Option<u64>,
        /// Not delivered: the watch was closed with 410 instead (`WatchRelist`).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        withheld: bool,
    },
    /// A moved fault step was run here by the runner (`MoveFault`), while the client was held.
    MovedFault {
        step: String,
        /// Its injection failed (the runner's timeline has why).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        failed: bool,
    },
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TraceEntry {
    pub seq: u64,
    /// Milliseconds since tracing started.
    pub at_ms: u64,
    #[serde(flatten)]
    pub what: TraceKind,
}

/// The whole trace of a run, as written beside its report (`trace.json`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Trace {
    pub user: String,
    pub perturbations: Vec<Perturbation>,
    /// Which perturbations took effect (a stale read finds nothing younger than its window,
    /// a crash point beyond the run's writes never comes).
    pub fired: Vec<Perturbation>,
    pub entries: Vec<TraceEntry>,
}

impl Trace {
    pub fn requests(&self) -> impl Iterator<Item = &TraceEntry> {
        self.entries
            .iter()
            .filter(|e| matches!(e.what, TraceKind::Request { .. }))
    }
    pub fn mutations(&self) -> u64 {
        self.requests()
            .filter_map(|e| match e.what {
                TraceKind::Request { mutation, .. } => mutation,
                _ => None,
            })
            .max()
            .unwrap_or(0)
    }
    /// How many watch events were meant for the client.
    pub fn watch_events(&self) -> u64 {
        self.entries
            .iter()
            .filter_map(|e| match e.what {
                TraceKind::WatchEvent { ordinal, .. } => ordinal,
                _ => None,
            })
            .max()
            .unwrap_or(0)
    }
    /// The reads a stale view would have changed: (ordinal, resourceVersion it would serve).
    pub fn stale_candidates(&self) -> Vec<(u64, u64)> {
        self.requests()
            .filter_map(|e| match e.what {
                TraceKind::Request {
                    read: Some(n),
                    stale_from: Some(rv),
                    ..
                } => Some((n, rv)),
                _ => None,
            })
            .collect()
    }
    /// The most requests in any `window` (the hot-loop oracle's measure).
    pub fn peak_requests(&self, window: Duration) -> usize {
        let times: Vec<u64> = self.requests().map(|e| e.at_ms).collect();
        let w = window.as_millis() as u64;
        let mut best = 0;
        let mut lo = 0;
        for hi in 0..times.len() {
            while times[hi] - times[lo] >= w {
                lo += 1;
            }
            best = best.max(hi - lo + 1);
        }
        best
    }
    /// The entries around the one `pred` picks first: `before` earlier, `after` later.
    pub fn around(
        &self,
        pred: impl Fn(&TraceEntry) -> bool,
        before: usize,
        after: usize,
    ) -> &[TraceEntry] {
        match self.entries.iter().position(pred) {
            Some(i) => {
                &self.entries[i.saturating_sub(before)..(i + after + 1).min(self.entries.len())]
            }
            None => &[],
        }
    }
}

/// The default stale-read window: how far an HA apiserver's watch cache may lag.
pub const DEFAULT_STALE_WINDOW: Duration = Duration::from_secs(3);

struct Armed {
    p: Perturbation,
    fired: bool,
    /// For a stale read: the read ordinal it is armed for now (its `n`, later ones after
    /// `stale_deferred`).
    at: u64,
}

#[derive(Default)]
struct State {
    user: Option<String>,
    start: Option<Instant>,
    entries: Vec<TraceEntry>,
    mutations: u64,
    reads: u64,
    events: u64,
    armed: Vec<Armed>,
    /// Moved fault steps due (their write was answered), not yet taken by the runner.
    due_faults: Vec<String>,
}

/// The gate's state: held requests pass once it opens, unless the epoch moved on (a crash
/// killed the process that sent them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct GateState {
    epoch: u64,
    /// A crash is due: the runner kills the client and `release`s.
    crash: bool,
    /// A moved fault is due: the runner injects it and `resume`s.
    fault: bool,
}

/// The tracer shared by the HTTP layer and the runner (cheap to clone).
#[derive(Clone)]
pub struct Tracer {
    state: Arc<Mutex<State>>,
    /// The gate the client's requests pass (closed while a crash or a moved fault is due).
    gate: Arc<watch::Sender<GateState>>,
}

impl Default for Tracer {
    fn default() -> Self {
        Tracer {
            state: Arc::default(),
            gate: Arc::new(watch::channel(GateState::default()).0),
        }
    }
}

/// What the HTTP layer is to do with a read of the traced client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadTicket {
    pub ordinal: u64,
    /// Serve it stale within this window (a `StaleRead` armed for it).
    pub stale_window: Option<Duration>,
}

/// A held request of the traced client: it passed the gate (`Pass`) or was held across a crash
/// and belongs to the dead process (`Dead`).
#[derive(Debug, PartialEq, Eq)]
pub enum Gate {
    Pass,
    Dead,
}

impl Tracer {
    /// Trace the requests of `user` from now on, with these perturbations armed.
    pub fn follow(&self, user: &str, perturbations: Vec<Perturbation>) {
        let mut s = self.state.lock();
        s.user = Some(user.to_string());
        s.start = Some(Instant::now());
        s.armed = perturbations
            .into_iter()
            .map(|p| Armed {
                at: match p {
                    Perturbation::StaleRead { n, .. } => n,
                    _ => 0,
                },
                p,
                fired: false,
            })
            .collect();
    }

    /// Whether a client is followed at all (the API proxy of a real cluster traces every
    /// request it forwards: only the controller's kubeconfig points at it).
    pub fn following(&self) -> bool {
        self.state.lock().user.is_some()
    }

    /// Whether requests of `user` are traced.
    pub fn traces(&self, user: &str) -> bool {
        self.state.lock().user.as_deref() == Some(user)
    }

    /// Wait while a crash or a moved fault is due. A request held across a crash belongs to
    /// the dead process; one held while a fault was injected passes.
    pub async fn pass(&self) -> Gate {
        let mut rx = self.gate.subscribe();
        let g = *rx.borrow_and_update();
        if !g.crash && !g.fault {
            return Gate::Pass;
        }
        let epoch = g.epoch;
        let same = match rx
            .wait_for(|g| g.epoch != epoch || (!g.crash && !g.fault))
            .await
        {
            Ok(g) => g.epoch == epoch,
            Err(_) => false,
        };
        match same {
            true => Gate::Pass,
            false => Gate::Dead,
        }
    }

    /// The next read's ordinal and whether a stale read is armed for it.
    pub fn next_read(&self) -> ReadTicket {
        let mut s = self.state.lock();
        s.reads += 1;
        let n = s.reads;
        let stale_window = s.armed.iter().find_map(|a| match a.p {
            Perturbation::StaleRead { window, .. } if a.at == n && !a.fired => Some(window),
            _ => None,
        });
        ReadTicket {
            ordinal: n,
            stale_window,
        }
    }

    /// Mark a stale read as served (it found a younger change to hide).
    pub fn stale_served(&self, ordinal: u64) {
        let mut s = self.state.lock();
        for a in s.armed.iter_mut() {
            if matches!(a.p, Perturbation::StaleRead { .. }) && a.at == ordinal {
                a.fired = true;
            }
        }
    }

    /// The read armed stale at `ordinal` was a consistent one (no resourceVersion), which no
    /// watch cache answers: arm the client's next read instead. A cache read with nothing
    /// younger than the window to hide is not deferred (it did not fire).
    pub fn stale_deferred(&self, ordinal: u64) {
        let mut s = self.state.lock();
        // A read numbered meanwhile (requests in parallel) has passed: the next one not yet.
        let next = s.reads.max(ordinal) + 1;
        for a in s.armed.iter_mut() {
            if matches!(a.p, Perturbation::StaleRead { .. }) && a.at == ordinal && !a.fired {
                a.at = next;
            }
        }
    }

    /// Record an answered request; for a mutating one, its ordinal, and close the gate when a
    /// crash is armed after it. Returns the mutation ordinal.
    pub fn record_request(&self, mut what: TraceKind) -> Option<u64> {
        let mut s = self.state.lock();
        let mut ordinal = None;
        if let TraceKind::Request {
            verb,
            mutation,
            perturbed,
            ..
        } = &mut what
        {
            if verb.is_mutating() {
                s.mutations += 1;
                let k = s.mutations;
                *mutation = Some(k);
                ordinal = Some(k);
                let mut crash = false;
                let mut moved = vec![];
                for a in s.armed.iter_mut() {
                    match &a.p {
                        Perturbation::CrashAfterMutation { k: at } if *at == k => {
                            a.fired = true;
                            crash = true;
                        }
                        Perturbation::MoveFault { step, k: at } if *at == k => {
                            a.fired = true;
                            moved.push(step.clone());
                        }
                        _ => {}
                    }
                }
                let mut what_happened = vec![];
                if crash {
                    what_happened.push(format!("crash after mutating request {k}"));
                }
                for step in &moved {
                    what_happened.push(format!("fault `{step}` moved after mutating request {k}"));
                }
                if !what_happened.is_empty() {
                    *perturbed = Some(what_happened.join(" + "));
                }
                let fault = !moved.is_empty();
                s.due_faults.extend(moved);
                if crash || fault {
                    self.gate.send_modify(|g| {
                        g.crash |= crash;
                        g.fault |= fault;
                    });
                }
            }
        }
        Self::push(&mut s, what);
        ordinal
    }

    /// Record a watch event meant for the traced client. True: a relist is armed for it, so
    /// it is withheld and the watch is to end with 410 Expired.
    pub fn record_event(&self, mut what: TraceKind) -> bool {
        let mut s = self.state.lock();
        s.events += 1;
        let n = s.events;
        let mut relist = false;
        for a in s.armed.iter_mut() {
            if a.p == (Perturbation::WatchRelist { n }) {
                a.fired = true;
                relist = true;
            }
        }
        if let TraceKind::WatchEvent {
            ordinal, withheld, ..
        } = &mut what
        {
            *ordinal = Some(n);
            *withheld = relist;
        }
        Self::push(&mut s, what);
        relist
    }

    fn push(s: &mut State, what: TraceKind) {
        let at_ms = s.start.map(|t| t.elapsed().as_millis() as u64).unwrap_or(0);
        let seq = s.entries.len() as u64 + 1;
        s.entries.push(TraceEntry { seq, at_ms, what });
    }

    /// Wait until a crash is due (the gate closed for it).
    pub async fn crash_due(&self) {
        let mut rx = self.gate.subscribe();
        let _ = rx.wait_for(|g| g.crash).await;
    }

    /// The crashed client is dead: open the gate; requests held across the crash are refused.
    pub fn release(&self) {
        self.gate.send_modify(|g| {
            g.epoch += 1;
            g.crash = false;
        });
    }

    /// Wait until a moved fault step is due (its write was answered; the client is held):
    /// its name. The runner injects it, then calls `resume`.
    pub async fn fault_due(&self) -> String {
        let mut rx = self.gate.subscribe();
        loop {
            let taken = {
                let mut s = self.state.lock();
                (!s.due_faults.is_empty()).then(|| s.due_faults.remove(0))
            };
            if let Some(step) = taken {
                return step;
            }
            // The sender lives in `self`: these waits end only when the gate changes.
            let _ = rx.wait_for(|g| g.fault).await;
            if self.state.lock().due_faults.is_empty() {
                // Due, but taken and not resumed yet: wait for the gate to change.
                let _ = rx.changed().await;
            }
        }
    }

    /// The moved fault `step` has been run (`failed`: its injection failed); the held
    /// requests pass once no other moved fault is due.
    pub fn resume(&self, step: &str, failed: bool) {
        let mut s = self.state.lock();
        Self::push(
            &mut s,
            TraceKind::MovedFault {
                step: step.to_string(),
                failed,
            },
        );
        if s.due_faults.is_empty() {
            self.gate.send_modify(|g| g.fault = false);
        }
    }

    /// How long since the traced client's last request or watch event (since tracing began
    /// when there was none): whether it has settled.
    pub fn quiet_for(&self) -> Duration {
        let s = self.state.lock();
        let Some(start) = s.start else {
            return Duration::ZERO;
        };
        let last = s.entries.last().map(|e| e.at_ms).unwrap_or(0);
        start.elapsed().saturating_sub(Duration::from_millis(last))
    }

    pub fn snapshot(&self) -> Trace {
        let s = self.state.lock();
        Trace {
            user: s.user.clone().unwrap_or_default(),
            perturbations: s.armed.iter().map(|a| a.p.clone()).collect(),
            fired: s
                .armed
                .iter()
                .filter(|a| a.fired)
                .map(|a| a.p.clone())
                .collect(),
            entries: s.entries.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(verb: Verb, name: &str) -> TraceKind {
        TraceKind::Request {
            verb,
            resource: "pods".into(),
            namespace: Some("d".into()),
            name: Some(name.into()),
            kind: None,
            resource_version: None,
            store_rv: 1,
            code: 200,
            mutation: None,
            read: None,
            stale_from: None,
            perturbed: None,
        }
    }

    #[tokio::test]
    async fn crash_after_the_kth_write_closes_the_gate_and_refuses_held_requests() {
        let t = Tracer::default();
        t.follow("sa", vec![Perturbation::CrashAfterMutation { k: 2 }]);
        assert!(t.traces("sa") && !t.traces("admin"));
        assert_eq!(t.record_request(req(Verb::Get, "a")), None);
        assert_eq!(t.record_request(req(Verb::Create, "a")), Some(1));
        assert_eq!(t.pass().await, Gate::Pass);
        assert_eq!(t.record_request(req(Verb::Patch, "a")), Some(2));
        // The crash is due: a request now waits, and is refused once the gate opens again.
        tokio::time::timeout(Duration::from_secs(1), t.crash_due())
            .await
            .expect("crash due");
        let held = {
            let t = t.clone();
            tokio::spawn(async move { t.pass().await })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!held.is_finished(), "held at the gate");
        t.release();
        assert_eq!(held.await.unwrap(), Gate::Dead);
        assert_eq!(t.pass().await, Gate::Pass, "the restarted client passes");
        let trace = t.snapshot();
        assert_eq!(trace.mutations(), 2);
        assert_eq!(trace.fired, vec![Perturbation::CrashAfterMutation { k: 2 }]);
        assert!(matches!(
            &trace.entries[2].what,
            TraceKind::Request { perturbed: Some(p), .. } if p.contains("mutating request 2")
        ));
    }

    #[tokio::test]
    async fn a_moved_fault_holds_the_client_after_the_kth_write_until_resumed() {
        let t = Tracer::default();
        t.follow(
            "sa",
            vec![Perturbation::MoveFault {
                step: "kill-node".into(),
                k: 2,
            }],
        );
        assert_eq!(t.record_request(req(Verb::Create, "a")), Some(1));
        assert_eq!(t.pass().await, Gate::Pass, "not due before the 2nd write");
        assert_eq!(t.record_request(req(Verb::Update, "a")), Some(2));
        let step = tokio::time::timeout(Duration::from_secs(1), t.fault_due())
            .await
            .expect("fault due");
        assert_eq!(step, "kill-node");
        let held = {
            let t = t.clone();
            tokio::spawn(async move { t.pass().await })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!held.is_finished(), "held while the fault is injected");
        t.resume("kill-node", false);
        assert_eq!(held.await.unwrap(), Gate::Pass, "held, not killed");
        let trace = t.snapshot();
        assert_eq!(trace.fired.len(), 1);
        assert!(matches!(
            &trace.entries[1].what,
            TraceKind::Request { perturbed: Some(p), .. } if p == "fault `kill-node` moved after mutating request 2"
        ));
        assert!(matches!(
            &trace.entries[2].what,
            TraceKind::MovedFault { step, failed: false } if step == "kill-node"
        ));
        // Nothing more is due: the runner's next wait does not end.
        assert!(
            tokio::time::timeout(Duration::from_millis(50), t.fault_due())
                .await
                .is_err()
        );
    }

    #[test]
    fn reads_are_numbered_and_a_stale_read_is_armed_for_its_ordinal() {
        let t = Tracer::default();
        let w = Duration::from_secs(2);
        t.follow("sa", vec![Perturbation::StaleRead { n: 2, window: w }]);
        assert_eq!(t.next_read().stale_window, None);
        let second = t.next_read();
        assert_eq!(second.ordinal, 2);
        assert_eq!(second.stale_window, Some(w));
        assert!(t.snapshot().fired.is_empty(), "not served yet");
        t.stale_served(2);
        assert_eq!(t.snapshot().fired.len(), 1);
        assert!(t.quiet_for() < Duration::from_secs(5));
    }

    #[test]
    fn a_stale_read_armed_on_a_consistent_read_moves_to_the_next_read() {
        let t = Tracer::default();
        let w = Duration::from_secs(3);
        t.follow("sa", vec![Perturbation::StaleRead { n: 2, window: w }]);
        t.next_read();
        assert_eq!(t.next_read().stale_window, Some(w));
        t.stale_deferred(2);
        let third = t.next_read();
        assert_eq!((third.ordinal, third.stale_window), (3, Some(w)));
        t.stale_deferred(3);
        assert_eq!(t.next_read().stale_window, Some(w));
        t.stale_served(4);
        assert_eq!(t.snapshot().fired.len(), 1);
        // Served once: the reads after it are fresh, and a late deferral changes nothing.
        t.stale_deferred(4);
        assert_eq!(t.next_read().stale_window, None);
        assert_eq!(t.next_read().stale_window, None);
    }

    #[test]
    fn a_relist_withholds_the_nth_watch_event() {
        let t = Tracer::default();
        t.follow("sa", vec![Perturbation::WatchRelist { n: 2 }]);
        let ev = |name: &str| TraceKind::WatchEvent {
            resource: "pods".into(),
            event: "MODIFIED".into(),
            namespace: None,
            name: name.into(),
            resource_version: "1".into(),
            ordinal: None,
            withheld: false,
        };
        assert!(!t.record_event(ev("a")));
        assert!(t.record_event(ev("b")), "the second is withheld");
        assert!(!t.record_event(ev("c")));
        let trace = t.snapshot();
        assert_eq!(trace.fired, vec![Perturbation::WatchRelist { n: 2 }]);
        assert!(matches!(
            &trace.entries[1].what,
            TraceKind::WatchEvent {
                ordinal: Some(2),
                withheld: true,
                ..
            }
        ));
    }

    #[test]
    fn the_trace_round_trips_and_measures_peaks_and_candidates() {
        let t = Tracer::default();
        t.follow("sa", vec![]);
        for i in 0..5 {
            let mut r = req(Verb::Get, &format!("p{i}"));
            if let TraceKind::Request {
                read, stale_from, ..
            } = &mut r
            {
                *read = Some(i + 1);
                *stale_from = (i % 2 == 0).then_some(10 + i);
            }
            t.record_request(r);
        }
        assert!(!t.record_event(TraceKind::WatchEvent {
            resource: "pods".into(),
            event: "ADDED".into(),
            namespace: Some("d".into()),
            name: "p0".into(),
            resource_version: "3".into(),
            ordinal: None,
            withheld: false,
        }));
        let trace = t.snapshot();
        assert_eq!(trace.watch_events(), 1);
        let text = serde_json::to_string(&trace).unwrap();
        assert!(text.contains(r#""type":"watchEvent""#), "{text}");
        assert!(text.contains(r#""resourceVersion":"3""#), "{text}");
        let back: Trace = serde_json::from_str(&text).unwrap();
        assert_eq!(back, trace);
        assert_eq!(trace.stale_candidates(), vec![(1, 10), (3, 12), (5, 14)]);
        assert_eq!(trace.peak_requests(Duration::from_secs(5)), 5);
        let around = trace.around(|e| e.seq == 3, 1, 1);
        assert_eq!(
            around.iter().map(|e| e.seq).collect::<Vec<_>>(),
            vec![2, 3, 4]
        );
    }
}
