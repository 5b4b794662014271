//! Durations of the simulated control plane and nodes, and the cluster's one clock. Defaults are
//! the real components' values; `scaled(f)` multiplies every duration, so a scenario that takes
//! minutes on a real cluster runs in seconds while keeping the same proportions (backoff
//! doublings, timeouts, grace periods).
//!
//! What components print is always nominal: durations are the real ones ("2m2s", never the
//! scaled 6.1s). Times are not: every timestamp the cluster writes or prints (object and Event
//! timestamps, Lease renewals, condition transitions, node log lines, container logs) comes from
//! one clock, `SimClock`, which starts at the wall clock's time when the cluster starts and runs
//! at the wall clock's rate, so the cluster's times agree with those of the controller under
//! test, its logs and the runner's timeline (docs/fidelity.md, "Time"). It stops while the
//! cluster is frozen (`SimClock::freeze`), and every loop of the cluster waits for it then.
//!
//! Also the one place times and durations are written and read: RFC 3339 for the API's
//! `metav1.Time` and `MicroTime`, Go's `time.Duration` text, and the duration parser of the
//! sim's annotations.

use chrono::{DateTime, SecondsFormat, Utc};
use parking_lot::Mutex;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{watch, OwnedRwLockReadGuard, OwnedRwLockWriteGuard, RwLock};
use tokio::time::Instant;

/// A reading of the cluster's clock for measuring spans and deadlines: the running time since
/// the clock started, frozen spans excluded (a `tokio::time::Instant` would go on through a
/// freeze and expire every backoff and grace period at once on thawing).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SimInstant(Duration);

impl SimInstant {
    /// The clock's start.
    pub const START: SimInstant = SimInstant(Duration::ZERO);

    /// The span from `earlier` to this instant, zero when `earlier` is later.
    pub fn saturating_duration_since(self, earlier: SimInstant) -> Duration {
        self.0.saturating_sub(earlier.0)
    }

    /// As `saturating_duration_since` (and `std::time::Instant::duration_since`).
    pub fn duration_since(self, earlier: SimInstant) -> Duration {
        self.saturating_duration_since(earlier)
    }
}

impl std::ops::Add<Duration> for SimInstant {
    type Output = SimInstant;
    fn add(self, d: Duration) -> SimInstant {
        SimInstant(self.0.saturating_add(d))
    }
}

impl std::ops::AddAssign<Duration> for SimInstant {
    fn add_assign(&mut self, d: Duration) {
        self.0 = self.0.saturating_add(d);
    }
}

impl std::ops::Sub<Duration> for SimInstant {
    type Output = SimInstant;
    fn sub(self, d: Duration) -> SimInstant {
        SimInstant(self.0.saturating_sub(d))
    }
}

impl std::ops::Sub<SimInstant> for SimInstant {
    type Output = Duration;
    /// Saturating, as `std::time::Instant`'s.
    fn sub(self, earlier: SimInstant) -> Duration {
        self.saturating_duration_since(earlier)
    }
}

/// The cluster's one clock, as upstream components take a `clock.Clock` (k8s.io/utils/clock)
/// instead of reading the system time, so that tests can hold it still. Cloning shares it.
///
/// It reads `epoch` plus the running time since `origin`; `freeze` stops it and closes the
/// gate every loop of the cluster passes before it acts (`pass`), `thaw` starts both again.
#[derive(Clone)]
pub struct SimClock(Arc<ClockInner>);

struct ClockInner {
    origin: Instant,
    epoch: DateTime<Utc>,
    frozen: Mutex<Frozen>,
    /// Loops hold a read guard for one pass; a freeze takes the write guard, so it begins once
    /// the passes under way have ended, and no pass begins until the thaw.
    gate: Arc<RwLock<()>>,
    held: Mutex<Option<OwnedRwLockWriteGuard<()>>>,
    /// True while frozen: sleepers on the clock wake when it changes.
    frozen_tx: watch::Sender<bool>,
}

#[derive(Default)]
struct Frozen {
    /// Wall time spent frozen, over the finished freezes.
    total: Duration,
    /// When the current freeze began.
    since: Option<Instant>,
}

/// One pass of a loop: the cluster is not frozen while it is held.
pub struct Pass(#[allow(dead_code)] OwnedRwLockReadGuard<()>);

impl std::fmt::Debug for SimClock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimClock")
            .field("epoch", &self.0.epoch)
            .field("now", &self.now())
            .field("frozen", &self.is_frozen())
            .finish()
    }
}

impl Default for SimClock {
    fn default() -> Self {
        SimClock::new()
    }
}

impl SimClock {
    /// A clock reading the wall clock's time from now on.
    pub fn new() -> SimClock {
        SimClock::starting_at(Utc::now())
    }

    /// A clock reading `epoch` now (tests: a time just before a minute boundary, as upstream's
    /// tests set a fake clock).
    pub fn starting_at(epoch: DateTime<Utc>) -> SimClock {
        SimClock(Arc::new(ClockInner {
            origin: Instant::now(),
            epoch,
            frozen: Mutex::new(Frozen::default()),
            gate: Arc::new(RwLock::new(())),
            held: Mutex::new(None),
            frozen_tx: watch::channel(false).0,
        }))
    }

    /// The clock's time at its start.
    pub fn epoch(&self) -> DateTime<Utc> {
        self.0.epoch
    }

    /// Running time since the start, frozen spans excluded.
    pub fn elapsed(&self) -> Duration {
        let f = self.0.frozen.lock();
        let until = f.since.unwrap_or_else(Instant::now);
        until
            .saturating_duration_since(self.0.origin)
            .saturating_sub(f.total)
    }

    /// Now, for spans and deadlines.
    pub fn instant(&self) -> SimInstant {
        SimInstant(self.elapsed())
    }

    /// Running time since `t`.
    pub fn since(&self, t: SimInstant) -> Duration {
        self.instant() - t
    }

    /// The time: what every timestamp the cluster writes or prints reads.
    pub fn now(&self) -> DateTime<Utc> {
        self.at(self.instant())
    }

    /// The time at an instant of this clock.
    pub fn at(&self, t: SimInstant) -> DateTime<Utc> {
        self.0.epoch + chrono::Duration::from_std(t.0).unwrap_or_default()
    }

    /// Now as a `metav1.Time`.
    pub fn now_rfc3339(&self) -> String {
        rfc3339(self.now())
    }

    /// Now as a `metav1.MicroTime`.
    pub fn now_micro(&self) -> String {
        rfc3339_micro(self.now())
    }

    pub fn is_frozen(&self) -> bool {
        self.0.frozen.lock().since.is_some()
    }

    /// Stop the clock and every loop of the cluster: returns once the passes under way have
    /// ended. A no-op when already frozen.
    pub async fn freeze(&self) {
        {
            let mut f = self.0.frozen.lock();
            if f.since.is_some() {
                return;
            }
            f.since = Some(Instant::now());
        }
        self.0.frozen_tx.send_replace(true);
        let guard = self.0.gate.clone().write_owned().await;
        // A thaw that came while the passes were ending has already restarted the clock.
        if self.is_frozen() {
            *self.0.held.lock() = Some(guard);
        }
    }

    /// Start the clock and the loops again; the frozen span does not count on the clock.
    pub fn thaw(&self) {
        {
            let mut f = self.0.frozen.lock();
            let Some(since) = f.since.take() else {
                return;
            };
            f.total += since.elapsed();
        }
        self.0.held.lock().take();
        self.0.frozen_tx.send_replace(false);
    }

    /// Enter one pass of a loop: waits while the cluster is frozen. Hold the guard for the
    /// pass's synchronous work only (never across a wait for something else).
    pub async fn pass(&self) -> Pass {
        Pass(self.0.gate.clone().read_owned().await)
    }

    /// Sleep until this clock reads `t` (longer when a freeze comes in between).
    pub async fn sleep_until(&self, t: SimInstant) {
        let mut frozen = self.0.frozen_tx.subscribe();
        loop {
            let _ = frozen.wait_for(|f| !*f).await;
            let left = t - self.instant();
            if left.is_zero() {
                return;
            }
            tokio::select! {
                _ = tokio::time::sleep(left) => {}
                _ = frozen.wait_for(|f| *f) => {}
            }
        }
    }

    /// Sleep for `d` of this clock's running time.
    pub async fn sleep(&self, d: Duration) {
        self.sleep_until(self.instant() + d).await
    }
}

#[derive(Debug, Clone)]
pub struct Timing {
    /// Kubelet volume manager reconciler loop (real: 100 ms).
    pub volume_reconcile: Duration,
    /// nestedpendingoperations: first backoff after a failed operation (real: 500 ms), doubling...
    pub op_backoff_initial: Duration,
    /// ...up to this cap (real: 2m2s).
    pub op_backoff_max: Duration,
    /// How long a pod worker waits for its volumes before its sync fails with "context
    /// deadline exceeded" (podAttachAndMountTimeout, real: 2m3s).
    pub pod_attach_mount_timeout: Duration,
    /// A pod worker whose sync failed is requeued after this (real: 10 s).
    pub pod_sync_requeue: Duration,
    /// A settled pod's periodic resync (the kubelet's --sync-frequency, real: 1 min).
    pub pod_resync: Duration,
    /// The kubelet's deadline for a CSI node call (csiTimeout, real: 2 min).
    pub csi_call_timeout: Duration,
    /// PLEG relist older than this makes the runtime unhealthy: node Ready=False (real: 3 min).
    pub pleg_relist_threshold: Duration,
    /// Kubelet Lease renewal (real: 10 s).
    pub lease_renew: Duration,
    /// Node lifecycle: a node whose Lease is older than this goes NotReady/Unknown (real: 50 s).
    pub node_monitor_grace: Duration,
    /// Image pull of an image not yet on the node.
    pub image_pull: Duration,
    /// Container creation to start.
    pub container_start: Duration,
    /// How long an init container runs before it completes, unless scripted.
    pub init_container_run: Duration,
    /// CrashLoopBackOff: first restart delay (real: 10 s, doubling to 5 min).
    pub crash_backoff_initial: Duration,
    pub crash_backoff_max: Duration,
    /// Scheduler retry of unschedulable pods when nothing changed (real: up to 5 min; 1 s backoff).
    pub scheduler_retry: Duration,
    /// Provisioning a Longhorn volume.
    pub provision: Duration,
    /// Attaching a volume to a node (csi-attacher + Longhorn engine start).
    pub attach: Duration,
    /// The attach/detach controller's maxWaitForUnmountDuration (real: 6 min): a volume still
    /// mounted on a node that is not Ready is force-detached this long after its detach was
    /// requested.
    pub max_wait_for_unmount: Duration,
    /// The pod garbage collector's period (gcCheckPeriod, real: 20 s).
    pub pod_gc_period: Duration,
    /// A node reboot from shutdown to kubelet up.
    pub reboot: Duration,
    /// Kubelet restart: down time before it serves again.
    pub kubelet_restart: Duration,
    /// Factor applied to all of the above (1.0 = real time).
    pub scale: f64,
    /// The cluster's one clock (`SimServer::start` gives each cluster its own).
    pub clock: SimClock,
}

impl Default for Timing {
    fn default() -> Self {
        Timing {
            volume_reconcile: Duration::from_millis(100),
            op_backoff_initial: Duration::from_millis(500),
            op_backoff_max: Duration::from_secs(122),
            pod_attach_mount_timeout: Duration::from_secs(123),
            pod_sync_requeue: Duration::from_secs(10),
            pod_resync: Duration::from_secs(60),
            csi_call_timeout: Duration::from_secs(120),
            pleg_relist_threshold: Duration::from_secs(180),
            lease_renew: Duration::from_secs(10),
            node_monitor_grace: Duration::from_secs(50),
            image_pull: Duration::from_millis(1500),
            container_start: Duration::from_millis(300),
            init_container_run: Duration::from_millis(500),
            crash_backoff_initial: Duration::from_secs(10),
            crash_backoff_max: Duration::from_secs(300),
            scheduler_retry: Duration::from_secs(5),
            provision: Duration::from_secs(2),
            attach: Duration::from_secs(3),
            max_wait_for_unmount: Duration::from_secs(360),
            pod_gc_period: Duration::from_secs(20),
            reboot: Duration::from_secs(60),
            kubelet_restart: Duration::from_secs(5),
            scale: 1.0,
            clock: SimClock::new(),
        }
    }
}

impl Timing {
    /// Real durations multiplied by `factor` (e.g. 0.01 runs a 2m2s backoff in 1.22 s).
    pub fn scaled(factor: f64) -> Timing {
        Timing {
            scale: factor,
            ..Timing::default()
        }
    }

    /// A nominal duration in simulated time, e.g. `t.s(t.op_backoff_max)`.
    pub fn s(&self, d: Duration) -> Duration {
        let scaled = d.as_secs_f64() * self.scale;
        // The reconciler must still tick: never below 1 ms.
        Duration::from_secs_f64(scaled.max(0.001))
    }

    /// A wall-clock span converted to the nominal span it stands for (what a real cluster
    /// would have taken).
    pub fn to_nominal(&self, real: Duration) -> Duration {
        if self.scale > 0.0 {
            Duration::from_secs_f64(real.as_secs_f64() / self.scale)
        } else {
            real
        }
    }

    /// The cluster's clock now (`SimClock::now`).
    pub fn now(&self) -> DateTime<Utc> {
        self.clock.now()
    }

    /// Go's `time.Time.String()` of the time when a nominal duration `d` started at `now` (a
    /// time already read, so that a line's header and its text agree) will have passed, as
    /// nestedpendingoperations prints "No retries permitted until ...": the time of the clock
    /// when the retry is allowed. A `time.Now()` value carries a monotonic reading, which
    /// `String` prints as `m=+<seconds>` (Go's src/time/time.go `Time.String`; src/time/
    /// format.go), counted from the process's start (the runtime's `startNano`): `process_start`
    /// is when the printing process (the kubelet) started.
    pub fn go_time(&self, process_start: DateTime<Utc>, now: DateTime<Utc>, d: Duration) -> String {
        let d = self.s(d);
        let at = now + chrono::Duration::from_std(d).unwrap_or_default();
        let mono = (now - process_start).to_std().unwrap_or_default() + d;
        format!(
            "{} m=+{:.9}",
            at.format("%Y-%m-%d %H:%M:%S%.9f +0000 UTC"),
            mono.as_secs_f64()
        )
    }
}

/// Kubernetes `metav1.Time`: RFC 3339 with second precision, `Z` suffix (`2026-12-06T20:26:46Z`).
pub fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// `metav1.MicroTime`, used by Leases and events.k8s.io `eventTime`
/// (`2026-12-06T20:26:46.123456Z`).
pub fn rfc3339_micro(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Micros, true)
}

/// Go's `time.RFC3339Nano`: nanoseconds without trailing zeros (`2026-12-06T20:26:46.1234Z`),
/// as container log lines carry their time.
pub fn rfc3339_nano(t: DateTime<Utc>) -> String {
    let frac = format!("{:09}", t.timestamp_subsec_nanos());
    let frac = frac.trim_end_matches('0');
    let dot = if frac.is_empty() { "" } else { "." };
    format!("{}{dot}{frac}Z", t.format("%Y-%m-%dT%H:%M:%S"))
}

/// An RFC 3339 time in UTC (`metav1.Time`, `MicroTime` or any offset).
pub fn parse_time(s: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// Go's `time.Duration.String()` formatting ("500ms", "1.5s", "2m2s", "1h0m0s"), which the real
/// components print in their logs and messages. Durations beyond Go's (about 292 years) print
/// as its largest.
pub fn go_duration(d: Duration) -> String {
    go_duration_nanos(i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// Go's `time.Duration.String()` of a signed count of nanoseconds (a `time.Duration` itself):
/// "1h2m3.5s", "1.5ms", "-2h0m3s", "0s".
pub fn go_duration_nanos(d: i64) -> String {
    let mut u = d.unsigned_abs();
    let mut out = String::new();
    if d < 0 {
        out.push('-');
    }
    if u < 1_000_000_000 {
        if u == 0 {
            return "0s".into();
        }
        let (prec, unit) = if u < 1_000 {
            (0, "ns")
        } else if u < 1_000_000 {
            (3, "µs")
        } else {
            (6, "ms")
        };
        let (frac, int) = fraction(u, prec);
        out.push_str(&format!("{int}{frac}{unit}"));
    } else {
        let (frac, secs) = fraction(u, 9);
        u = secs;
        let s = u % 60;
        u /= 60;
        if u > 0 {
            let m = u % 60;
            u /= 60;
            if u > 0 {
                out.push_str(&format!("{u}h"));
            }
            out.push_str(&format!("{m}m"));
        }
        out.push_str(&format!("{s}{frac}s"));
    }
    out
}

/// The fraction of v/10^prec as ".123" without trailing zeros ("" when zero), and v/10^prec.
fn fraction(v: u64, prec: u32) -> (String, u64) {
    let p = 10u64.pow(prec);
    let (int, frac) = (v / p, v % p);
    if frac == 0 {
        return (String::new(), int);
    }
    let digits = format!("{frac:0width$}", width = prec as usize);
    (format!(".{}", digits.trim_end_matches('0')), int)
}

/// A duration as the sim's annotations and Go's `time.ParseDuration` write it: "5s", "1m30s",
/// "250ms", "1.5h", "10us" (units ns, us/µs, ms, s, m, h), or plain seconds ("2"; negative plain
/// numbers are zero). `None` for anything else, signed and out-of-range durations included.
pub fn parse_duration(s: &str) -> Option<Duration> {
    let s = s.trim();
    if s.is_empty() {
        return Some(Duration::ZERO);
    }
    if let Ok(n) = s.parse::<f64>() {
        return Duration::try_from_secs_f64(n.max(0.0)).ok();
    }
    // The grammar itself has one owner: the fault catalogue's parser, which scenarios use too.
    faultline_faults::duration::parse_duration(s).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_duration_formats_like_go() {
        assert_eq!(go_duration(Duration::from_millis(500)), "500ms");
        assert_eq!(go_duration(Duration::from_secs(122)), "2m2s");
        assert_eq!(go_duration(Duration::from_millis(1500)), "1.5s");
        assert_eq!(go_duration(Duration::from_secs(3600)), "1h0m0s");
        assert_eq!(go_duration(Duration::from_millis(1220)), "1.22s");
        assert_eq!(go_duration(Duration::ZERO), "0s");
        assert_eq!(go_duration(Duration::MAX), "2562047h47m16.854775807s");
        let s = 1_000_000_000i64;
        assert_eq!(go_duration_nanos(0), "0s");
        assert_eq!(go_duration_nanos(90 * s), "1m30s");
        assert_eq!(go_duration_nanos(3600 * s), "1h0m0s");
        assert_eq!(go_duration_nanos(s + s / 2), "1.5s");
        assert_eq!(go_duration_nanos(1_500_000), "1.5ms");
        assert_eq!(go_duration_nanos(1_500), "1.5µs");
        assert_eq!(go_duration_nanos(7), "7ns");
        assert_eq!(go_duration_nanos(-(2 * 3600 + 3) * s), "-2h0m3s");
        assert_eq!(go_duration_nanos(-1_500_000), "-1.5ms");
        assert_eq!(go_duration_nanos(i64::MIN), "-2562047h47m16.854775808s");
        assert_eq!(go_duration_nanos(i64::MAX), "2562047h47m16.854775807s");
    }

    #[test]
    fn durations_parse() {
        assert_eq!(parse_duration("5s"), Some(Duration::from_secs(5)));
        assert_eq!(parse_duration("1m30s"), Some(Duration::from_secs(90)));
        assert_eq!(parse_duration("250ms"), Some(Duration::from_millis(250)));
        assert_eq!(parse_duration("1.5h"), Some(Duration::from_secs(5400)));
        assert_eq!(parse_duration("10us"), Some(Duration::from_micros(10)));
        assert_eq!(parse_duration("1.5µs"), Some(Duration::from_nanos(1500)));
        assert_eq!(parse_duration("2"), Some(Duration::from_secs(2)));
        assert_eq!(parse_duration(" 5 "), Some(Duration::from_secs(5)));
        assert_eq!(parse_duration("-1"), Some(Duration::ZERO));
        assert_eq!(parse_duration("abc"), None);
        assert_eq!(parse_duration("5d"), None);
        assert_eq!(parse_duration("1m30"), None);
        assert_eq!(parse_duration("-5s"), None);
        assert_eq!(parse_duration("1e30"), None);
        assert_eq!(parse_duration(""), Some(Duration::ZERO));
        // What `go_duration` writes reads back.
        for d in [
            Duration::from_millis(500),
            Duration::from_secs(122),
            Duration::from_millis(1220),
            Duration::from_secs(3600),
        ] {
            assert_eq!(parse_duration(&go_duration(d)), Some(d));
        }
    }

    #[test]
    fn times_format_as_metav1_time_and_micro_time() {
        let t = parse_time("2026-01-02T03:04:05.123456789Z").unwrap();
        assert_eq!(rfc3339(t), "2026-01-02T03:04:05Z");
        assert_eq!(rfc3339_micro(t), "2026-01-02T03:04:05.123456Z");
        let t = parse_time("2026-01-02T04:04:05+01:00").unwrap();
        assert_eq!(rfc3339(t), "2026-01-02T03:04:05Z");
        assert_eq!(rfc3339_micro(t), "2026-01-02T03:04:05.000000Z");
        assert_eq!(
            rfc3339(DateTime::from_timestamp(-62_135_596_800, 0).unwrap()),
            "0001-01-01T00:00:00Z"
        );
        assert!(parse_time("yesterday").is_none());
        let t = parse_time("2026-01-02T03:04:05.123400Z").unwrap();
        assert_eq!(rfc3339_nano(t), "2026-01-02T03:04:05.1234Z");
        let t = parse_time("2026-01-02T03:04:05Z").unwrap();
        assert_eq!(rfc3339_nano(t), "2026-01-02T03:04:05Z");
        assert_eq!(
            SimClock::new().now_rfc3339().len(),
            "2026-12-06T20:26:46Z".len()
        );
    }

    #[test]
    fn the_clock_runs_at_the_wall_clocks_rate_and_retries_print_when_they_are_allowed() {
        let t = Timing::scaled(0.01);
        std::thread::sleep(Duration::from_millis(50));
        let (wall, now) = (Utc::now(), t.now());
        assert!(
            (wall - now).num_milliseconds().abs() < 20,
            "the clock is the wall clock's from its start: {now} vs {wall}"
        );
        // "<date> +0000 UTC m=+<seconds>": the time the 2m2s backoff ends, 1.22 s from now at 1/100.
        let line = t.go_time(t.clock.epoch(), now, Duration::from_secs(122));
        let (date, mono) = line.split_once(" +0000 UTC m=+").expect("Go time format");
        let mono: f64 = mono.parse().unwrap();
        assert!((1.22..1.5).contains(&mono), "{line}");
        let at = chrono::NaiveDateTime::parse_from_str(date, "%Y-%m-%d %H:%M:%S%.9f")
            .unwrap()
            .and_utc();
        assert_eq!((at - now).num_milliseconds(), 1220, "{line}");
        let ahead = (at - t.clock.epoch()).num_milliseconds() as f64 / 1000.0;
        assert!(
            (ahead - mono).abs() < 0.001,
            "{line}: date {ahead} s after the start, monotonic {mono}"
        );
        // A process started 40 ms ago (a restarted kubelet) counts from its own start.
        let started = now - chrono::Duration::milliseconds(40);
        let line = t.go_time(started, now, Duration::from_secs(122));
        assert!(line.ends_with(" m=+1.260000000"), "{line}");
    }

    #[tokio::test]
    async fn a_frozen_clock_stands_still_and_its_loops_wait_for_the_thaw() {
        let clock = SimClock::new();
        tokio::time::sleep(Duration::from_millis(20)).await;
        let pass = clock.pass().await;
        // A freeze waits for the pass under way; the clock stops at once.
        let freezing = {
            let c = clock.clone();
            tokio::spawn(async move { c.freeze().await })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(clock.is_frozen() && !freezing.is_finished());
        let stopped = clock.now();
        drop(pass);
        freezing.await.unwrap();
        // No pass begins while frozen, and the clock reads the same.
        let waiting = {
            let c = clock.clone();
            tokio::spawn(async move {
                let _p = c.pass().await;
                c.now()
            })
        };
        let deadline = clock.instant() + Duration::from_millis(10);
        let sleeper = {
            let c = clock.clone();
            tokio::spawn(async move { c.sleep_until(deadline).await })
        };
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(!waiting.is_finished() && !sleeper.is_finished());
        assert_eq!(clock.now(), stopped);
        clock.thaw();
        let first = waiting.await.unwrap();
        // The frozen 100 ms did not count: the clock goes on from where it stopped.
        assert!(
            (first - stopped).num_milliseconds() < 50,
            "{first} vs {stopped}"
        );
        tokio::time::timeout(Duration::from_millis(500), sleeper)
            .await
            .expect("a sleeper on the clock wakes after the thaw")
            .unwrap();
        assert!(Utc::now() - clock.now() >= chrono::Duration::milliseconds(100));
    }

    #[test]
    fn scaling_keeps_proportions() {
        let t = Timing::scaled(0.01);
        assert_eq!(t.s(t.op_backoff_max), Duration::from_millis(1220));
        assert_eq!(t.s(t.op_backoff_initial), Duration::from_millis(5));
    }
}
