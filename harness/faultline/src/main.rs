//! The `faultline` command line.

// mimalloc: the sim keeps hundreds of thousands of small JSON values; with glibc malloc a
// 10,000-pod full run held 1.7x the memory and took 3-4x the CPU (docs/performance.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod cli;
mod diff_cmd;
mod explore_cmd;
mod node_cmd;
mod signals;

use std::process::ExitCode;

fn main() -> ExitCode {
    cli::main()
}
