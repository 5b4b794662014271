//! The API fuzz target's corpus (seeds and minimized crashes in harness/fuzz) and deterministic
//! mutations of it, replayed through the same invariants cargo-fuzz checks
//! (`faultline_sim::fuzzing`): no panic, no 5xx, 401 and no change without the token.

use faultline_sim::fuzzing::{fuzz_inputs, mutations, ApiTarget};

#[test]
fn seed_corpus_and_regressions_hold_the_invariants() {
    let seeds = fuzz_inputs("corpus/api_request");
    assert!(
        seeds.len() >= 20,
        "the seed corpus has {} inputs",
        seeds.len()
    );
    let target = ApiTarget::new();
    for (name, data) in seeds
        .iter()
        .chain(fuzz_inputs("regressions/api_request").iter())
    {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| target.run(data)));
        assert!(
            r.is_ok(),
            "input {name} broke an invariant (see the panic above)"
        );
    }
}

#[test]
fn mutated_requests_hold_the_invariants() {
    let seeds: Vec<Vec<u8>> = fuzz_inputs("corpus/api_request")
        .into_iter()
        .map(|(_, d)| d)
        .collect();
    let target = ApiTarget::new();
    for (i, data) in mutations(&seeds, 3000, 20261203).iter().enumerate() {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| target.run(data)));
        assert!(
            r.is_ok(),
            "mutation #{i} broke an invariant: {:?}",
            String::from_utf8_lossy(data)
        );
    }
}
