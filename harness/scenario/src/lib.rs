//! The Faultline scenario language, on its own so that what reads user input can be built,
//! tested and fuzzed without the runner's dependencies (kube, testcontainers, ...).
//!
//! Layers: `model` (plain serde structs with JSON Schemas) -> `spans` (YAML positions) ->
//! `celx` (CEL conditions) -> `loader` (files, validation, `file:line:col` diagnostics);
//! `fuzzing` is the loader as a fuzz target (harness/fuzz).

pub mod celx;
pub mod fuzzing;
pub mod loader;
pub mod model;
pub mod spans;
