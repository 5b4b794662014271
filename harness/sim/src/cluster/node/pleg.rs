//! The generic PLEG (pkg/kubelet/pleg/generic.go): it relists the runtime's pods every second on
//! a ticker of its own (`cluster::run_pleg`, a task apart from the sync loop, as upstream's
//! goroutine), and its health is how long ago a relist last completed (`Healthy`: unhealthy past
//! the 3-minute `relistThreshold`). A relist the runtime does not answer (a pod sandbox it
//! cannot tear down) hangs, and no relist completes until the runtime answers again; pod workers
//! wait for a pod cache newer than their last sync, which only a completed relist brings.
//!
//! Unhealthy needs a relist that hangs: a relist that merely comes late (its task scheduled
//! late, which the sim's time scale multiplies by `1/scale`) does not count, so a busy machine
//! does not turn nodes NotReady.
//!
//! Not modelled: the lifecycle events a relist sends the sync loop. The simulated runtime lives
//! inside the kubelet, so the pod workers see container changes directly.

use crate::timing::SimInstant;
use crate::timing::{go_duration, Timing};
use std::fmt;
use std::time::Duration;

/// `genericPlegRelistPeriod`.
pub const RELIST_PERIOD: Duration = Duration::from_secs(1);

#[derive(Debug)]
pub struct GenericPleg {
    timing: Timing,
    /// When the last relist completed (`relistTime`, the pod cache's timestamp).
    relist_time: SimInstant,
    /// The current relist waits on the runtime.
    hung: bool,
    /// The current relist ends at this instant: its inspections of a pod time out.
    slow_until: Option<SimInstant>,
}

/// How the runtime answers a relist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuntimeAnswer {
    /// Every pod's status.
    Answers,
    /// Not at all while the cause lasts (sandboxes it cannot tear down).
    Hangs,
    /// A pod's status inspection waits behind a hung StopContainer and ends at the runtime
    /// request timeout; the relist inspects the pod twice (kubernetes/kubernetes#94829), so it
    /// completes after twice that, past the 3-minute threshold: the node flaps between
    /// NotReady and Ready while the stop keeps hanging (#74135).
    TimesOut,
}

/// The kubelet's `--runtime-request-timeout` (default 2m0s): the CRI client's deadline.
pub const RUNTIME_REQUEST_TIMEOUT: Duration = Duration::from_secs(120);

/// `Healthy`'s error: the last completed relist is older than the threshold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlegUnhealthy {
    /// Nominal time since the last completed relist.
    pub since: Duration,
    pub threshold: Duration,
}

impl fmt::Display for PlegUnhealthy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "PLEG is not healthy: pleg was last seen active {} ago; threshold is {}",
            go_duration(self.since),
            go_duration(self.threshold)
        )
    }
}

impl GenericPleg {
    pub fn new(timing: Timing) -> Self {
        GenericPleg {
            relist_time: timing.clock.instant(),
            timing,
            hung: false,
            slow_until: None,
        }
    }

    /// One relist: it completes when the runtime answers for every pod.
    pub fn relist(&mut self, answer: RuntimeAnswer) {
        let now = self.timing.clock.instant();
        if let Some(until) = self.slow_until {
            if now < until {
                return;
            }
            // The slow relist completed; the next one starts at the next tick.
            self.slow_until = None;
            self.hung = false;
            self.relist_time = until;
            return;
        }
        match answer {
            RuntimeAnswer::Answers => {
                self.hung = false;
                self.relist_time = now;
            }
            RuntimeAnswer::Hangs => self.hung = true,
            RuntimeAnswer::TimesOut => {
                self.hung = true;
                self.slow_until = Some(now + self.timing.s(2 * RUNTIME_REQUEST_TIMEOUT));
            }
        }
    }

    /// Is a relist hanging in the runtime (so the pod cache is not refreshed)?
    pub fn relist_hung(&self) -> bool {
        self.hung
    }

    /// `Healthy`: unhealthy while a relist hangs and the last completed one is older than the
    /// threshold.
    pub fn healthy(&self) -> Result<(), PlegUnhealthy> {
        let since = self
            .timing
            .to_nominal(self.timing.clock.since(self.relist_time));
        let threshold = self.timing.pleg_relist_threshold;
        if self.hung && since > threshold {
            Err(PlegUnhealthy { since, threshold })
        } else {
            Ok(())
        }
    }

    /// A kubelet that starts again starts a new PLEG.
    pub fn restart(&mut self) {
        self.relist_time = self.timing.clock.instant();
        self.hung = false;
        self.slow_until = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hanging_relist_turns_pleg_unhealthy_after_the_threshold() {
        // At 1/1000, the 3-minute threshold is 180 ms.
        let mut pleg = GenericPleg::new(Timing::scaled(0.001));
        pleg.relist(RuntimeAnswer::Answers);
        assert!(pleg.healthy().is_ok() && !pleg.relist_hung());
        // A relist that only comes late is no hang.
        std::thread::sleep(Duration::from_millis(250));
        assert!(pleg.healthy().is_ok());
        pleg.relist(RuntimeAnswer::Answers);
        pleg.relist(RuntimeAnswer::Hangs);
        assert!(pleg.relist_hung());
        std::thread::sleep(Duration::from_millis(250));
        let err = pleg.healthy().unwrap_err();
        let text = err.to_string();
        assert!(
            text.starts_with("PLEG is not healthy: pleg was last seen active ")
                && text.ends_with(" ago; threshold is 3m0s"),
            "{text}"
        );
        assert!(err.since > err.threshold);
        pleg.relist(RuntimeAnswer::Answers);
        assert!(pleg.healthy().is_ok() && !pleg.relist_hung());
    }

    #[test]
    fn a_relist_whose_inspections_time_out_completes_after_four_minutes() {
        // At 1/1000: the threshold is 180 ms, the slow relist 240 ms.
        let mut pleg = GenericPleg::new(Timing::scaled(0.001));
        pleg.relist(RuntimeAnswer::TimesOut);
        assert!(pleg.relist_hung());
        std::thread::sleep(Duration::from_millis(200));
        // Asked again meanwhile, the runtime's answer changes nothing: one relist at a time.
        pleg.relist(RuntimeAnswer::Answers);
        assert!(pleg.healthy().is_err());
        std::thread::sleep(Duration::from_millis(60));
        pleg.relist(RuntimeAnswer::TimesOut);
        assert!(pleg.healthy().is_ok() && !pleg.relist_hung());
    }
}
