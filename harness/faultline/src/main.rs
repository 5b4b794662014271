//! The `faultline` command line.

mod cli;
mod node_cmd;

use std::process::ExitCode;

fn main() -> ExitCode {
    cli::main()
}
