//! Durations of the simulated control plane and nodes. Defaults are the real components' values;
//! `scaled(f)` multiplies every one of them, so a scenario that takes minutes on a real cluster
//! runs in seconds while keeping the same proportions (backoff doublings, timeouts, grace periods).
//!
//! What components print is always nominal: durations are the real ones ("2m2s", never the
//! scaled 6.1s), and the timestamps of node logs come from the nominal clock (`Timing::now`),
//! which runs `1/scale` times faster than the wall clock from the moment the timing was made, so
//! "No retries permitted until <t>" is exactly the line's own time plus its durationBeforeRetry.
//!
//! Also the one place times and durations are written and read: RFC 3339 for the API's
//! `metav1.Time` and `MicroTime`, Go's `time.Duration` text, and the duration parser of the
//! sim's annotations.

use chrono::{DateTime, SecondsFormat, Utc};
use std::time::Duration;
use tokio::time::Instant;

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
    /// The nominal clock's origin: this wall-clock instant is `epoch` on the nominal clock.
    pub origin: Instant,
    pub epoch: DateTime<Utc>,
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
            origin: Instant::now(),
            epoch: Utc::now(),
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

    /// Nominal time elapsed since the clock's origin (what `m=+<seconds>` prints).
    pub fn nominal_elapsed(&self) -> Duration {
        self.to_nominal(self.origin.elapsed())
    }

    /// A wall-clock span converted to the nominal span it stands for.
    pub fn to_nominal(&self, real: Duration) -> Duration {
        if self.scale > 0.0 {
            Duration::from_secs_f64(real.as_secs_f64() / self.scale)
        } else {
            real
        }
    }

    /// The nominal clock: the time a real cluster would show at this point of the run. The one
    /// source of simulated time: node logs, Go times in messages and the CronJob calendar.
    pub fn now(&self) -> DateTime<Utc> {
        self.epoch + chrono::Duration::from_std(self.nominal_elapsed()).unwrap_or_default()
    }

    /// A wall-clock timestamp (as the API stores them: creationTimestamp, lastScheduleTime
    /// written by hand) on the nominal clock: the nominal time it was when the wall clock read
    /// `wall`. Times before the clock's origin are left as they are.
    pub fn on_nominal_clock(&self, wall: DateTime<Utc>) -> DateTime<Utc> {
        match (wall - self.epoch).to_std() {
            Ok(real) => {
                self.epoch + chrono::Duration::from_std(self.to_nominal(real)).unwrap_or_default()
            }
            Err(_) => wall,
        }
    }

    /// Go's `time.Time.String()` of `now + d` with its monotonic reading, as
    /// nestedpendingoperations prints "No retries permitted until ...".
    pub fn go_time_after(&self, d: Duration) -> String {
        self.go_time_at(self.now(), d)
    }

    /// Like `go_time_after`, from a nominal instant already read (so that a line's header and
    /// its text use the same reading).
    pub fn go_time_at(&self, now: DateTime<Utc>, d: Duration) -> String {
        let at = now + chrono::Duration::from_std(d).unwrap_or_default();
        let mono = (now - self.epoch).to_std().unwrap_or_default() + d;
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

/// The wall clock now as a `metav1.Time`.
pub fn now_rfc3339() -> String {
    rfc3339(Utc::now())
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
        assert_eq!(now_rfc3339().len(), "2026-12-06T20:26:46Z".len());
    }

    #[test]
    fn the_nominal_clock_runs_faster_by_the_scale() {
        let t = Timing::scaled(0.01);
        std::thread::sleep(Duration::from_millis(50));
        let nominal = (t.now() - t.epoch).to_std().unwrap();
        // 50 ms of wall clock are at least 5 s nominal at 1/100.
        assert!(
            nominal >= Duration::from_secs(5) && nominal < Duration::from_secs(60),
            "{nominal:?}"
        );
        // "<date> +0000 UTC m=+<seconds>", the date being the nominal now plus the duration.
        let line = t.go_time_after(Duration::from_secs(122));
        let (date, mono) = line.split_once(" +0000 UTC m=+").expect("Go time format");
        let mono: f64 = mono.parse().unwrap();
        assert!((127.0..200.0).contains(&mono), "{line}");
        let at = chrono::NaiveDateTime::parse_from_str(date, "%Y-%m-%d %H:%M:%S%.9f")
            .unwrap()
            .and_utc();
        let ahead = (at - t.epoch).num_milliseconds() as f64 / 1000.0;
        assert!(
            (ahead - mono).abs() < 1.0,
            "{line}: date {ahead} s after the origin, monotonic {mono}"
        );
    }

    #[test]
    fn stored_timestamps_map_onto_the_one_nominal_clock() {
        let t = Timing::scaled(0.01);
        std::thread::sleep(Duration::from_millis(50));
        // The wall clock's "now" is the nominal clock's now: one source of simulated time.
        let (wall, nominal) = (Utc::now(), t.now());
        let mapped = t.on_nominal_clock(wall);
        assert!(
            (mapped - nominal).num_milliseconds().abs() < 500,
            "{mapped} vs {nominal}"
        );
        assert!(
            mapped - wall >= chrono::Duration::seconds(4),
            "50 ms real is 5 s nominal: {mapped} vs {wall}"
        );
        // Before the origin: unchanged. A nominal span takes `scale` of it in real time.
        let before = t.epoch - chrono::Duration::seconds(10);
        assert_eq!(t.on_nominal_clock(before), before);
        assert_eq!(t.s(Duration::from_secs(60)), Duration::from_millis(600));
    }

    #[test]
    fn scaling_keeps_proportions() {
        let t = Timing::scaled(0.01);
        assert_eq!(t.s(t.op_backoff_max), Duration::from_millis(1220));
        assert_eq!(t.s(t.op_backoff_initial), Duration::from_millis(5));
    }
}
