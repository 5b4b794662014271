//! Watch reliability under load: W watchers (kube-rs `Api::watch`, real HTTP watches, resumed
//! from their last resourceVersion if a stream ends) follow a namespace while writers create,
//! update and delete ConfigMaps at a fixed total rate. Every watcher must see exactly the
//! committed writes: none lost, none duplicated, none out of order (resourceVersion strictly
//! increasing, and each object's events in the order they were written), with the
//! resourceVersion each write returned. A final marker object tells each watcher that
//! everything before it has been delivered.
//!
//! Each writer owns its objects and writes each one sequentially, so every object's history is
//! known exactly: ADDED(seq 0), MODIFIED(seq 1..k), DELETED(seq k), ADDED(seq 0) of a new
//! incarnation (new uid), ... Events are identified by (uid, type, seq).

use crate::report::Report;
use crate::util::{kube_client, percentile, rss_bytes, secs};
use anyhow::{anyhow, Context, Result};
use faultline_sim::{SimOptions, SimServer};
use futures::TryStreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, DeleteParams, ListParams, PostParams, WatchEvent, WatchParams};
use parking_lot_shim::Mutex;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod parking_lot_shim {
    /// std's Mutex without poisoning noise.
    pub struct Mutex<T>(std::sync::Mutex<T>);
    impl<T> Mutex<T> {
        pub fn new(v: T) -> Self {
            Mutex(std::sync::Mutex::new(v))
        }
        pub fn lock(&self) -> std::sync::MutexGuard<'_, T> {
            self.0.lock().unwrap_or_else(|e| e.into_inner())
        }
    }
}

#[derive(Debug, Clone)]
pub struct LoadConfig {
    pub watchers: usize,
    /// Total writes per second across all writers.
    pub rate: f64,
    pub duration: Duration,
    pub writers: usize,
    pub objects_per_writer: usize,
    /// Writes to one incarnation of an object before it is deleted (then recreated).
    pub delete_every: u64,
    /// How long watchers may take to deliver everything after the last write.
    pub drain_timeout: Duration,
    pub namespace: String,
}

impl Default for LoadConfig {
    fn default() -> Self {
        LoadConfig {
            watchers: 100,
            rate: 1000.0,
            duration: Duration::from_secs(60),
            writers: 10,
            objects_per_writer: 20,
            delete_every: 10,
            drain_timeout: Duration::from_secs(30),
            namespace: "load".into(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Kind {
    Added,
    Modified,
    Deleted,
}

/// A write the server acknowledged. `rv` is known for creates and updates (the response's
/// resourceVersion); a delete of a ConfigMap answers a Status, so its rv is unknown.
#[derive(Debug, Clone)]
pub struct Committed {
    pub uid: String,
    pub name: String,
    pub kind: Kind,
    pub seq: u64,
    pub rv: Option<u64>,
}

/// A watch event as one watcher received it.
#[derive(Debug, Clone)]
pub struct Observed {
    pub uid: String,
    pub name: String,
    pub kind: Kind,
    pub seq: u64,
    pub rv: u64,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Violations {
    /// Committed writes this watcher never saw.
    pub lost: usize,
    /// Events delivered more than once.
    pub duplicated: usize,
    /// Events whose resourceVersion is not above the previous one, or that come before an
    /// earlier write of the same object.
    pub out_of_order: usize,
    /// Events that match no committed write.
    pub unexpected: usize,
    /// Events whose resourceVersion differs from what the write returned.
    pub wrong_rv: usize,
}

impl Violations {
    pub fn total(&self) -> usize {
        self.lost + self.duplicated + self.out_of_order + self.unexpected + self.wrong_rv
    }
    fn add(&mut self, o: &Violations) {
        self.lost += o.lost;
        self.duplicated += o.duplicated;
        self.out_of_order += o.out_of_order;
        self.unexpected += o.unexpected;
        self.wrong_rv += o.wrong_rv;
    }
}

type Id = (String, Kind, u64);

/// Compare what one watcher saw with what was committed. `committed` lists each object's
/// writes in the order they were made (objects may be interleaved arbitrarily).
pub fn verify(committed: &[Committed], observed: &[Observed]) -> Violations {
    // id -> (object name, position in that name's history, rv)
    let mut expected: HashMap<Id, (String, usize, Option<u64>)> = HashMap::new();
    let mut next_pos: HashMap<&str, usize> = HashMap::new();
    for c in committed {
        let pos = next_pos.entry(c.name.as_str()).or_default();
        expected.insert((c.uid.clone(), c.kind, c.seq), (c.name.clone(), *pos, c.rv));
        *pos += 1;
    }
    let mut v = Violations::default();
    let mut seen: HashSet<Id> = HashSet::new();
    let mut last_rv = 0u64;
    let mut last_pos: HashMap<String, usize> = HashMap::new();
    for o in observed {
        let id = (o.uid.clone(), o.kind, o.seq);
        if !seen.insert(id.clone()) {
            v.duplicated += 1;
            continue;
        }
        if o.rv <= last_rv {
            v.out_of_order += 1;
        } else {
            last_rv = o.rv;
        }
        match expected.get(&id) {
            None => v.unexpected += 1,
            Some((name, pos, rv)) => {
                if rv.is_some_and(|rv| rv != o.rv) {
                    v.wrong_rv += 1;
                }
                if let Some(prev) = last_pos.get(name) {
                    if pos <= prev {
                        v.out_of_order += 1;
                    }
                }
                last_pos.insert(name.clone(), *pos);
            }
        }
    }
    v.lost = expected.keys().filter(|id| !seen.contains(*id)).count();
    v
}

pub const MARKER: &str = "end-marker";
const LABEL: &str = "bench.faultline.dev/load";

#[derive(Default)]
struct WatcherLog {
    observed: Vec<Observed>,
    latencies_us: Vec<f64>,
    done: bool,
    expired: usize,
    errors: Vec<String>,
    reconnects: usize,
}

fn parse_event(cm: &ConfigMap, kind: Kind) -> Option<(Observed, Option<u64>)> {
    let md = &cm.metadata;
    let data = cm.data.as_ref();
    let seq = data
        .and_then(|d| d.get("seq"))
        .and_then(|s| s.parse().ok())?;
    let t = data.and_then(|d| d.get("t")).and_then(|s| s.parse().ok());
    Some((
        Observed {
            uid: md.uid.clone().unwrap_or_default(),
            name: md.name.clone().unwrap_or_default(),
            kind,
            seq,
            rv: md
                .resource_version
                .as_deref()
                .and_then(|r| r.parse().ok())
                .unwrap_or(0),
        },
        t,
    ))
}

async fn watcher(
    api: Api<ConfigMap>,
    start_rv: String,
    log: Arc<Mutex<WatcherLog>>,
    epoch: Instant,
    ready: tokio::sync::mpsc::Sender<()>,
) {
    let mut rv = start_rv;
    let mut first = true;
    loop {
        let wp = WatchParams::default()
            .labels(&format!("{}=true", LABEL))
            .timeout(290);
        let stream = match api.watch(&wp, &rv).await {
            Ok(s) => s,
            Err(e) => {
                log.lock().errors.push(format!("watch: {e}"));
                return;
            }
        };
        if first {
            first = false;
            let _ = ready.send(()).await;
        }
        let mut stream = Box::pin(stream);
        loop {
            match stream.try_next().await {
                Ok(Some(ev)) => {
                    let (cm, kind) = match ev {
                        WatchEvent::Added(cm) => (cm, Kind::Added),
                        WatchEvent::Modified(cm) => (cm, Kind::Modified),
                        WatchEvent::Deleted(cm) => (cm, Kind::Deleted),
                        WatchEvent::Bookmark(b) => {
                            rv = b.metadata.resource_version;
                            continue;
                        }
                        WatchEvent::Error(e) => {
                            let mut l = log.lock();
                            if e.code == 410 {
                                l.expired += 1;
                            }
                            l.errors
                                .push(format!("watch ERROR event: {} {}", e.code, e.message));
                            return;
                        }
                    };
                    let now_us = epoch.elapsed().as_secs_f64() * 1e6;
                    if let Some(r) = cm.metadata.resource_version.clone() {
                        rv = r;
                    }
                    if cm.metadata.name.as_deref() == Some(MARKER) {
                        log.lock().done = true;
                        return;
                    }
                    let mut l = log.lock();
                    match parse_event(&cm, kind) {
                        Some((o, t)) => {
                            if let Some(t) = t {
                                l.latencies_us.push(now_us - t as f64);
                            }
                            l.observed.push(o);
                        }
                        None => l
                            .errors
                            .push(format!("event without seq: {:?}", cm.metadata.name)),
                    }
                }
                // The server ended the stream (timeoutSeconds): resume from the last rv.
                Ok(None) => break,
                Err(e) => {
                    log.lock().errors.push(format!("stream: {e}"));
                    break;
                }
            }
        }
        log.lock().reconnects += 1;
    }
}

struct WriterOut {
    committed: Vec<Committed>,
    latencies_us: Vec<f64>,
    errors: Vec<String>,
}

fn cm_body(name: &str, seq: u64, t_us: u64) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.to_string());
    cm.metadata.labels = Some(BTreeMap::from([(LABEL.to_string(), "true".to_string())]));
    cm.data = Some(BTreeMap::from([
        ("seq".to_string(), seq.to_string()),
        ("t".to_string(), t_us.to_string()),
    ]));
    cm
}

struct Live {
    uid: String,
    seq: u64,
    rv: String,
}

async fn writer(
    api: Api<ConfigMap>,
    names: Vec<String>,
    period: Duration,
    deadline: Instant,
    epoch: Instant,
    delete_every: u64,
) -> WriterOut {
    let mut out = WriterOut {
        committed: vec![],
        latencies_us: vec![],
        errors: vec![],
    };
    let mut live: Vec<Option<Live>> = names.iter().map(|_| None).collect();
    let mut ticker = tokio::time::interval(period);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let mut i = 0usize;
    loop {
        ticker.tick().await;
        if Instant::now() >= deadline {
            break;
        }
        let j = i % names.len();
        i += 1;
        let name = &names[j];
        let sent = Instant::now();
        let t_us = epoch.elapsed().as_micros() as u64;
        let rv_of = |cm: &ConfigMap| {
            cm.metadata
                .resource_version
                .as_deref()
                .and_then(|r| r.parse::<u64>().ok())
        };
        let res: Result<()> = async {
            match live[j].take() {
                None => {
                    let cm = api
                        .create(&PostParams::default(), &cm_body(name, 0, t_us))
                        .await?;
                    let uid = cm.metadata.uid.clone().unwrap_or_default();
                    out.committed.push(Committed {
                        uid: uid.clone(),
                        name: name.clone(),
                        kind: Kind::Added,
                        seq: 0,
                        rv: rv_of(&cm),
                    });
                    live[j] = Some(Live {
                        uid,
                        seq: 0,
                        rv: cm.metadata.resource_version.clone().unwrap_or_default(),
                    });
                }
                Some(l) if l.seq + 1 >= delete_every => {
                    api.delete(name, &DeleteParams::default()).await?;
                    out.committed.push(Committed {
                        uid: l.uid,
                        name: name.clone(),
                        kind: Kind::Deleted,
                        seq: l.seq,
                        rv: None,
                    });
                }
                Some(l) => {
                    let mut body = cm_body(name, l.seq + 1, t_us);
                    // Optimistic concurrency on what we wrote last: a conflict would be a bug.
                    body.metadata.resource_version = Some(l.rv.clone());
                    let cm = api.replace(name, &PostParams::default(), &body).await?;
                    out.committed.push(Committed {
                        uid: l.uid.clone(),
                        name: name.clone(),
                        kind: Kind::Modified,
                        seq: l.seq + 1,
                        rv: rv_of(&cm),
                    });
                    live[j] = Some(Live {
                        uid: l.uid,
                        seq: l.seq + 1,
                        rv: cm.metadata.resource_version.clone().unwrap_or_default(),
                    });
                }
            }
            Ok(())
        }
        .await;
        match res {
            Ok(()) => out.latencies_us.push(sent.elapsed().as_secs_f64() * 1e6),
            Err(e) => {
                // The outcome of a failed write is unknown: stop this writer, report it.
                out.errors.push(format!("{name}: {e}"));
                break;
            }
        }
    }
    out
}

pub struct LoadOutcome {
    pub report: Report,
    pub violations: Violations,
    /// Violations plus watch errors, expiries, write errors and a missed rate: all failures.
    pub ok: bool,
    /// Every watcher saw every write once and in order, and no write failed: `ok` without the
    /// rate target, which a loaded machine can miss (the test suite judges this one).
    pub correct: bool,
}

pub async fn run(cfg: &LoadConfig) -> Result<LoadOutcome> {
    let server = SimServer::start(SimOptions::with_workers(1)).await?;
    let client = kube_client(&server).await?;
    let ns_api: Api<Namespace> = Api::all(client.clone());
    let mut ns = Namespace::default();
    ns.metadata.name = Some(cfg.namespace.clone());
    ns_api
        .create(&PostParams::default(), &ns)
        .await
        .context("creating the namespace")?;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), &cfg.namespace);
    let start_rv = api
        .list(&ListParams::default().labels(&format!("{}=true", LABEL)))
        .await?
        .metadata
        .resource_version
        .ok_or_else(|| anyhow!("list without resourceVersion"))?;
    let epoch = Instant::now();

    // Watchers, each on its own client (own connection pool), like separate controllers.
    let (ready_tx, mut ready_rx) = tokio::sync::mpsc::channel(cfg.watchers.max(1));
    let mut logs = Vec::new();
    let mut watcher_tasks = Vec::new();
    for _ in 0..cfg.watchers {
        let log = Arc::new(Mutex::new(WatcherLog::default()));
        logs.push(log.clone());
        let wapi: Api<ConfigMap> = Api::namespaced(kube_client(&server).await?, &cfg.namespace);
        watcher_tasks.push(tokio::spawn(watcher(
            wapi,
            start_rv.clone(),
            log,
            epoch,
            ready_tx.clone(),
        )));
    }
    drop(ready_tx);
    for _ in 0..cfg.watchers {
        if tokio::time::timeout(Duration::from_secs(30), ready_rx.recv())
            .await
            .ok()
            .flatten()
            .is_none()
        {
            break;
        }
    }

    // Writers.
    let period = Duration::from_secs_f64(cfg.writers as f64 / cfg.rate);
    let t_writes = Instant::now();
    let deadline = t_writes + cfg.duration;
    let mut writer_tasks = Vec::new();
    for w in 0..cfg.writers {
        let names: Vec<String> = (0..cfg.objects_per_writer)
            .map(|o| format!("w{:02}-o{:03}", w, o))
            .collect();
        writer_tasks.push(tokio::spawn(writer(
            api.clone(),
            names,
            period,
            deadline,
            epoch,
            cfg.delete_every,
        )));
    }
    let mut committed = Vec::new();
    let mut write_lat = Vec::new();
    let mut write_errors = Vec::new();
    for t in writer_tasks {
        let o = t.await?;
        committed.extend(o.committed);
        write_lat.extend(o.latencies_us);
        write_errors.extend(o.errors);
    }
    let write_secs = secs(t_writes.elapsed());
    let achieved = committed.len() as f64 / write_secs;

    // The marker: once a watcher sees it, it has seen everything committed before it.
    let mut marker = cm_body(MARKER, 0, 0);
    marker.metadata.labels = Some(BTreeMap::from([(LABEL.to_string(), "true".to_string())]));
    api.create(&PostParams::default(), &marker)
        .await
        .context("creating the end marker")?;
    let drain_deadline = Instant::now() + cfg.drain_timeout;
    while Instant::now() < drain_deadline
        && !logs
            .iter()
            .all(|l| l.lock().done || !l.lock().errors.is_empty())
    {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for t in &watcher_tasks {
        t.abort();
    }
    let (rss, hwm) = rss_bytes();

    let mut total = Violations::default();
    let mut watchers_failed = 0;
    let mut not_done = 0;
    let mut expired = 0;
    let mut reconnects = 0;
    let mut delivered = 0usize;
    let mut watch_errors: Vec<String> = Vec::new();
    let mut lat: Vec<f64> = Vec::new();
    for l in &logs {
        let l = l.lock();
        let v = verify(&committed, &l.observed);
        if v.total() > 0 || !l.done || !l.errors.is_empty() {
            watchers_failed += 1;
        }
        if !l.done {
            not_done += 1;
        }
        total.add(&v);
        expired += l.expired;
        reconnects += l.reconnects;
        delivered += l.observed.len();
        watch_errors.extend(l.errors.iter().take(3).cloned());
        lat.extend_from_slice(&l.latencies_us);
    }
    let rate_ok = achieved >= 0.95 * cfg.rate;
    let correct = total.total() == 0
        && watchers_failed == 0
        && write_errors.is_empty()
        && cfg.watchers == logs.len();
    let ok = correct && rate_ok;

    let mut r = Report::new("load");
    r.ctx("watchers", cfg.watchers as u64)
        .ctx("writers", cfg.writers as u64)
        .ctx("objects", (cfg.writers * cfg.objects_per_writer) as u64);
    r.ctx("target_rate", cfg.rate)
        .ctx("seconds", secs(cfg.duration))
        .ctx("delete_every", cfg.delete_every);
    r.row_target("writes committed", committed.len() as f64, "", "", None);
    r.row_target(
        "write rate achieved",
        achieved,
        "writes/s",
        &format!(">= {:.0}", 0.95 * cfg.rate),
        Some(achieved / cfg.rate),
    );
    r.row(
        "write latency p50",
        percentile(&write_lat, 50.0) / 1e3,
        "ms",
    );
    r.row(
        "write latency p99",
        percentile(&write_lat, 99.0) / 1e3,
        "ms",
    );
    r.row("events delivered (all watchers)", delivered as f64, "");
    r.row(
        "events expected (all watchers)",
        (committed.len() * cfg.watchers) as f64,
        "",
    );
    r.row_target("lost", total.lost as f64, "", "0", None);
    r.row_target("duplicated", total.duplicated as f64, "", "0", None);
    r.row_target("out of order", total.out_of_order as f64, "", "0", None);
    r.row_target("unexpected", total.unexpected as f64, "", "0", None);
    r.row_target(
        "wrong resourceVersion",
        total.wrong_rv as f64,
        "",
        "0",
        None,
    );
    r.row_target("watchers failed", watchers_failed as f64, "", "0", None);
    r.row_target("watchers not drained", not_done as f64, "", "0", None);
    r.row_target("410 Expired", expired as f64, "", "0", None);
    r.row("watch reconnects (resumed)", reconnects as f64, "");
    r.row(
        "write -> watcher latency p50",
        percentile(&lat, 50.0) / 1e3,
        "ms",
    );
    r.row(
        "write -> watcher latency p99",
        percentile(&lat, 99.0) / 1e3,
        "ms",
    );
    r.row(
        "write -> watcher latency max",
        lat.iter().cloned().fold(0.0, f64::max) / 1e3,
        "ms",
    );
    r.row("RSS", rss as f64 / 1048576.0, "MiB")
        .row("RSS peak", hwm as f64 / 1048576.0, "MiB");
    r.row_target("write errors", write_errors.len() as f64, "", "0", None);
    let mut problems = Vec::new();
    if total.total() > 0 {
        problems.push(format!("{} watch-event violations", total.total()));
    }
    if watchers_failed > 0 {
        problems.push(format!(
            "{} of {} watchers failed",
            watchers_failed, cfg.watchers
        ));
    }
    if !write_errors.is_empty() {
        problems.push(format!(
            "write errors: {}",
            write_errors
                .iter()
                .take(3)
                .cloned()
                .collect::<Vec<_>>()
                .join("; ")
        ));
    }
    if !watch_errors.is_empty() {
        problems.push(format!(
            "watch errors: {}",
            watch_errors
                .iter()
                .take(3)
                .cloned()
                .collect::<Vec<_>>()
                .join("; ")
        ));
    }
    if !rate_ok {
        problems.push(format!(
            "write rate {:.0}/s below 95% of {:.0}/s",
            achieved, cfg.rate
        ));
    }
    if ok {
        r.verdict(
            true,
            format!(
                "{} watchers each saw all {} writes ({:.0}/s for {:.0} s) exactly once and in order; watch latency p99 {:.1} ms",
                cfg.watchers,
                committed.len(),
                achieved,
                secs(cfg.duration),
                percentile(&lat, 99.0) / 1e3
            ),
        );
    } else {
        r.verdict(false, problems.join("; "));
    }
    server.stop().await;
    Ok(LoadOutcome {
        report: r,
        violations: total,
        ok,
        correct,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn com(uid: &str, name: &str, kind: Kind, seq: u64, rv: Option<u64>) -> Committed {
        Committed {
            uid: uid.into(),
            name: name.into(),
            kind,
            seq,
            rv,
        }
    }
    fn obs(uid: &str, name: &str, kind: Kind, seq: u64, rv: u64) -> Observed {
        Observed {
            uid: uid.into(),
            name: name.into(),
            kind,
            seq,
            rv,
        }
    }

    fn history() -> (Vec<Committed>, Vec<Observed>) {
        let committed = vec![
            com("u1", "a", Kind::Added, 0, Some(10)),
            com("u2", "b", Kind::Added, 0, Some(11)),
            com("u1", "a", Kind::Modified, 1, Some(12)),
            com("u1", "a", Kind::Deleted, 1, None),
            com("u3", "a", Kind::Added, 0, Some(14)),
        ];
        let observed = vec![
            obs("u1", "a", Kind::Added, 0, 10),
            obs("u2", "b", Kind::Added, 0, 11),
            obs("u1", "a", Kind::Modified, 1, 12),
            obs("u1", "a", Kind::Deleted, 1, 13),
            obs("u3", "a", Kind::Added, 0, 14),
        ];
        (committed, observed)
    }

    #[test]
    fn exact_delivery_has_no_violations() {
        let (c, o) = history();
        assert_eq!(verify(&c, &o), Violations::default());
    }

    #[test]
    fn detects_a_lost_event() {
        let (c, mut o) = history();
        o.remove(2);
        let v = verify(&c, &o);
        assert_eq!((v.lost, v.total()), (1, 1), "{v:?}");
    }

    #[test]
    fn detects_a_duplicate() {
        let (c, mut o) = history();
        o.insert(3, o[2].clone());
        let v = verify(&c, &o);
        assert_eq!((v.duplicated, v.total()), (1, 1), "{v:?}");
    }

    #[test]
    fn detects_reordering() {
        let (c, mut o) = history();
        o.swap(2, 3);
        let v = verify(&c, &o);
        assert!(
            v.out_of_order >= 1 && v.lost == 0 && v.duplicated == 0,
            "{v:?}"
        );
    }

    #[test]
    fn detects_wrong_rv_and_ghosts() {
        let (c, mut o) = history();
        o[1].rv = 99;
        o.push(obs("u9", "z", Kind::Added, 0, 100));
        let v = verify(&c, &o);
        assert_eq!(v.wrong_rv, 1, "{v:?}");
        assert_eq!(v.unexpected, 1, "{v:?}");
    }
}
