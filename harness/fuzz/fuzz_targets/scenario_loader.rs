//! Scenario files and suite configs: no panic, diagnostics inside the source, round trip.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| faultline_scenario::fuzzing::scenario_loader(data));
