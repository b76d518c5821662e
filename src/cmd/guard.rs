//! `hoop guard …`: hook commands. They never return an error to `main`: each
//! maps its own failures to the documented fail-open / fail-closed answer.

use std::process::ExitCode;

#[derive(clap::Subcommand)]
pub enum Command {}

pub fn run(c: Command) -> ExitCode {
    match c {}
}
