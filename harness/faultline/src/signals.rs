//! SIGINT/SIGTERM for `run` and `diff`: the first cancels the run (the runner heals, stops the
//! controller, tears down or keeps), the second exits at once; what the first prints is true
//! for where the run is.

use anyhow::Result;
use std::sync::Arc;

/// Where a run is when a signal comes: what the first SIGINT/SIGTERM will do then.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SignalPhase {
    /// Scenarios running: heal, stop the controller, then tear down (or keep, --keep-cluster).
    Running { keep_cluster: bool },
    /// After the run, holding the kept clusters that live in this process (sim).
    HoldingKept,
}

/// What the first signal prints: what will happen, and nothing more (a kept kind cluster is
/// not torn down by a signal, so the message must not say so).
pub fn signal_notice(name: &str, phase: SignalPhase) -> String {
    match phase {
        SignalPhase::Running { keep_cluster: false } => format!(
            "faultline: {name}: healing active faults, stopping the controller, tearing down (repeat to exit at once)"
        ),
        SignalPhase::Running { keep_cluster: true } => format!(
            "faultline: {name}: healing active faults, stopping the controller, keeping the cluster (--keep-cluster; repeat to exit at once)"
        ),
        SignalPhase::HoldingKept => {
            format!("faultline: {name}: stopping the kept in-process cluster(s)")
        }
    }
}

/// Wait for SIGINT/SIGTERM; the first cancels the run, the second exits at once. While a
/// scenario is paused, SIGINT continues it instead. `phase`: what the first signal does now.
pub fn install_signals(
    tx: tokio::sync::watch::Sender<Option<String>>,
    pauser: Option<Arc<faultline::pause::ConsolePauser>>,
    phase: Arc<parking_lot::Mutex<SignalPhase>>,
) -> Result<()> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut int = signal(SignalKind::interrupt())?;
    let mut term = signal(SignalKind::terminate())?;
    tokio::spawn(async move {
        let mut count = 0;
        loop {
            let name = tokio::select! {
                _ = int.recv() => "SIGINT",
                _ = term.recv() => "SIGTERM",
            };
            if name == "SIGINT" && pauser.as_ref().is_some_and(|p| p.resume_if_paused()) {
                continue;
            }
            count += 1;
            if count == 1 {
                eprintln!("{}", signal_notice(name, *phase.lock()));
                let _ = tx.send(Some(name.to_string()));
            } else {
                eprintln!("faultline: {name} again: exiting without finishing the clean-up; faults may be left active");
                std::process::exit(if name == "SIGINT" { 130 } else { 143 });
            }
        }
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_signal_notice_says_what_happens_to_the_clusters() {
        let run = signal_notice(
            "SIGTERM",
            SignalPhase::Running {
                keep_cluster: false,
            },
        );
        assert!(run.contains("tearing down"), "{run}");
        let keep = signal_notice("SIGTERM", SignalPhase::Running { keep_cluster: true });
        assert!(!keep.contains("tearing down"), "{keep}");
        assert!(keep.contains("keeping the cluster"), "{keep}");
        let held = signal_notice("SIGINT", SignalPhase::HoldingKept);
        assert!(
            !held.contains("healing") && !held.contains("tearing down"),
            "{held}"
        );
        assert!(
            held.starts_with("faultline: SIGINT: stopping the kept in-process"),
            "{held}"
        );
    }
}
