//! The scenario language's perturbations (`spec.perturb`, `model::Perturb`) as the sim carries
//! them out (`faultline_sim::http::trace::Perturbation`), and back: `faultline explore` derives
//! sim perturbations from a trace and writes the failing one into a scenario.

use crate::model::{Dur, MoveFault, Perturb, PerturbKind, StaleRead};
use faultline_sim::http::trace::Perturbation;

pub fn to_sim(p: PerturbKind) -> Perturbation {
    match p {
        PerturbKind::CrashAfterMutation(k) => Perturbation::CrashAfterMutation { k },
        PerturbKind::StaleRead(s) => Perturbation::StaleRead {
            n: s.read,
            window: s.window.get(),
        },
        PerturbKind::WatchRelist(n) => Perturbation::WatchRelist { n },
        PerturbKind::MoveFault(m) => Perturbation::MoveFault {
            step: m.step,
            k: m.after_mutation,
        },
    }
}

pub fn to_model(p: &Perturbation) -> Perturb {
    Perturb::from_kind(match p {
        Perturbation::CrashAfterMutation { k } => PerturbKind::CrashAfterMutation(*k),
        Perturbation::StaleRead { n, window } => PerturbKind::StaleRead(StaleRead {
            read: *n,
            window: Dur(*window),
        }),
        Perturbation::WatchRelist { n } => PerturbKind::WatchRelist(*n),
        Perturbation::MoveFault { step, k } => PerturbKind::MoveFault(MoveFault {
            step: step.clone(),
            after_mutation: *k,
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn perturbations_map_both_ways() {
        for p in [
            Perturbation::CrashAfterMutation { k: 4 },
            Perturbation::StaleRead {
                n: 9,
                window: Duration::from_secs(2),
            },
            Perturbation::WatchRelist { n: 5 },
            Perturbation::MoveFault {
                step: "csi-down".into(),
                k: 3,
            },
        ] {
            let m = to_model(&p);
            assert_eq!(to_sim(m.kind().expect("one kind")), p);
        }
    }
}
