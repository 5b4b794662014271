//! `faultline-bench`: the performance, scale and reliability benchmarks of `faultline-sim`.
//!
//! Every benchmark runs its own comparison in the same process and run, and reports ratios
//! (to a baseline measured alongside, or to the target in issue #7): the machines this runs on
//! are shared and noisy, so absolute figures from different runs are not comparable.
//! Figures and how to reproduce them: `docs/performance.md`.

pub mod detect;
pub mod http;
pub mod load;
pub mod pack;
pub mod real;
pub mod report;
pub mod scale;
pub mod start;
pub mod throughput;
pub mod util;
