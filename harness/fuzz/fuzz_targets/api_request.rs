//! One HTTP request to the sim API router: no panic, no 5xx, 401 without the token.
#![no_main]
use std::sync::OnceLock;

static TARGET: OnceLock<faultline_sim::fuzzing::ApiTarget> = OnceLock::new();

libfuzzer_sys::fuzz_target!(|data: &[u8]| TARGET
    .get_or_init(faultline_sim::fuzzing::ApiTarget::new)
    .run(data));
