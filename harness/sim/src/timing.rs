//! Durations of the simulated control plane and nodes. Defaults are the real components' values;
//! `scaled(f)` multiplies every one of them, so a scenario that takes minutes on a real cluster
//! runs in seconds while keeping the same proportions (backoff doublings, timeouts, grace periods).
//!
//! What components print is always nominal: durations are the real ones ("2m2s", never the
//! scaled 6.1s), and the timestamps of node logs come from the nominal clock (`Timing::now`),
//! which runs `1/scale` times faster than the wall clock from the moment the timing was made, so
//! "No retries permitted until <t>" is exactly the line's own time plus its durationBeforeRetry.

use chrono::{DateTime, Utc};
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

/// Go's `time.Duration.String()` formatting ("500ms", "1.5s", "2m2s", "1h0m0s"), which the real
/// components print in their logs and messages.
pub fn go_duration(d: Duration) -> String {
    let nanos = d.as_nanos();
    if nanos == 0 {
        return "0s".into();
    }
    if nanos < 1_000 {
        return format!("{}ns", nanos);
    }
    if nanos < 1_000_000 {
        return format!("{}µs", trim(nanos as f64 / 1e3));
    }
    if nanos < 1_000_000_000 {
        return format!("{}ms", trim(nanos as f64 / 1e6));
    }
    let total = d.as_secs_f64();
    let hours = (total / 3600.0).floor() as u64;
    let minutes = ((total - hours as f64 * 3600.0) / 60.0).floor() as u64;
    let secs = total - hours as f64 * 3600.0 - minutes as f64 * 60.0;
    let s = format!("{}s", trim(secs));
    if hours > 0 {
        format!("{}h{}m{}", hours, minutes, s)
    } else if minutes > 0 {
        format!("{}m{}", minutes, s)
    } else {
        s
    }
}

fn trim(v: f64) -> String {
    let s = format!("{:.9}", v);
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
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
        assert!(mono >= 127.0 && mono < 200.0, "{line}");
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
