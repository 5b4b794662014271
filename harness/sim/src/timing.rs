//! Durations of the simulated control plane and nodes. Defaults are the real components' values;
//! `scaled(f)` multiplies every one of them, so a scenario that takes minutes on a real cluster
//! runs in seconds while keeping the same proportions (backoff doublings, timeouts, grace periods).

use std::time::Duration;

#[derive(Debug, Clone)]
pub struct Timing {
    /// Kubelet volume manager reconciler loop (real: 100 ms).
    pub volume_reconcile: Duration,
    /// nestedpendingoperations: first backoff after a failed operation (real: 500 ms), doubling...
    pub op_backoff_initial: Duration,
    /// ...up to this cap (real: 2m2s).
    pub op_backoff_max: Duration,
    /// How long a pod worker waits for its volumes before a FailedMount event (real: 2m3s).
    pub pod_attach_mount_timeout: Duration,
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
}

impl Default for Timing {
    fn default() -> Self {
        Timing {
            volume_reconcile: Duration::from_millis(100),
            op_backoff_initial: Duration::from_millis(500),
            op_backoff_max: Duration::from_secs(122),
            pod_attach_mount_timeout: Duration::from_secs(123),
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
        }
    }
}

impl Timing {
    /// Real durations multiplied by `factor` (e.g. 0.01 runs a 2m2s backoff in 1.22 s).
    pub fn scaled(factor: f64) -> Timing {
        Timing { scale: factor, ..Timing::default() }
    }

    /// A nominal duration in simulated time, e.g. `t.s(t.op_backoff_max)`.
    pub fn s(&self, d: Duration) -> Duration {
        let scaled = d.as_secs_f64() * self.scale;
        // The reconciler must still tick: never below 1 ms.
        Duration::from_secs_f64(scaled.max(0.001))
    }
}

/// Wall-clock time as the simulated cluster lives it: from `origin` on, time passes
/// `1 / scale` times faster (a CronJob's "every minute" fires every 3 real seconds at scale
/// 0.05). Timestamps the API stores stay real; loops that schedule by the calendar map them
/// through `to_sim`.
#[derive(Debug, Clone)]
pub struct SimClock {
    origin_wall: chrono::DateTime<chrono::Utc>,
    origin: std::time::Instant,
    scale: f64,
}

impl SimClock {
    pub fn start(timing: &Timing) -> SimClock {
        SimClock { origin_wall: chrono::Utc::now(), origin: std::time::Instant::now(), scale: timing.scale.max(1e-6) }
    }

    pub fn now(&self) -> chrono::DateTime<chrono::Utc> {
        self.origin_wall + self.sim_duration(self.origin.elapsed())
    }

    /// A real (stored) timestamp on the simulated calendar.
    pub fn to_sim(&self, wall: chrono::DateTime<chrono::Utc>) -> chrono::DateTime<chrono::Utc> {
        let real = (wall - self.origin_wall).to_std().unwrap_or_default();
        if wall < self.origin_wall { wall } else { self.origin_wall + self.sim_duration(real) }
    }

    /// How long a simulated span takes in real time.
    pub fn real(&self, sim: Duration) -> Duration {
        Duration::from_secs_f64(sim.as_secs_f64() * self.scale)
    }

    fn sim_duration(&self, real: Duration) -> chrono::Duration {
        chrono::Duration::from_std(Duration::from_secs_f64(real.as_secs_f64() / self.scale)).unwrap_or_default()
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
    fn the_sim_clock_runs_faster_by_the_scale() {
        let clock = SimClock::start(&Timing::scaled(0.01));
        std::thread::sleep(Duration::from_millis(50));
        let ahead = clock.now() - chrono::Utc::now();
        assert!(ahead >= chrono::Duration::seconds(4), "50 ms real is 5 s simulated: {ahead}");
        assert_eq!(clock.real(Duration::from_secs(60)), Duration::from_millis(600));
    }

    #[test]
    fn scaling_keeps_proportions() {
        let t = Timing::scaled(0.01);
        assert_eq!(t.s(t.op_backoff_max), Duration::from_millis(1220));
        assert_eq!(t.s(t.op_backoff_initial), Duration::from_millis(5));
    }
}
