//! The scenario-loader fuzz target's corpus (seeds and minimized crashes in harness/fuzz) and
//! deterministic mutations of it, replayed through the invariants cargo-fuzz checks
//! (`faultline_scenario::fuzzing`, re-exported as `faultline::fuzzing`): no panic, diagnostics inside the source, YAML round trip.

use faultline::fuzzing::scenario_loader;
use faultline_sim::fuzzing::{fuzz_inputs, mutations};

#[test]
fn seed_corpus_and_regressions_hold_the_invariants() {
    let seeds = fuzz_inputs("corpus/scenario_loader");
    assert!(
        seeds.len() >= 15,
        "the seed corpus has {} inputs",
        seeds.len()
    );
    for (name, data) in seeds
        .iter()
        .chain(fuzz_inputs("regressions/scenario_loader").iter())
    {
        let r = std::panic::catch_unwind(|| scenario_loader(data));
        assert!(
            r.is_ok(),
            "input {name} broke an invariant (see the panic above)"
        );
    }
}

#[test]
fn mutated_scenarios_hold_the_invariants() {
    let seeds: Vec<Vec<u8>> = fuzz_inputs("corpus/scenario_loader")
        .into_iter()
        .map(|(_, d)| d)
        .collect();
    for (i, data) in mutations(&seeds, 3000, 20261203).iter().enumerate() {
        let r = std::panic::catch_unwind(|| scenario_loader(data));
        assert!(
            r.is_ok(),
            "mutation #{i} broke an invariant: {:?}",
            String::from_utf8_lossy(data)
        );
    }
}
