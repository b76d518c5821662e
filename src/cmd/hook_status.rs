//! `hoop hook-status --config <spec>`: the hook-status lane's relay, run by a
//! worker's agent CLI on each mapped lifecycle event. Reads the payload from
//! stdin (bounded), maps it to one signal and POSTs it to the sentinel's
//! loopback endpoint (see `hoop_guards::lane`). It ALWAYS exits 0 and prints
//! nothing on stdout (a `SessionStart` hook's stdout would reach the model):
//! the lane is observational and must never block or fail a session.
//! Dispatched by `main` before any runtime or log subscriber, like the guards.

use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// The run's spec file (endpoint, token, ids), written at spawn.
    #[arg(long)]
    config: PathBuf,
}

pub fn run(a: Args) -> ExitCode {
    std::panic::set_hook(Box::new(|_| {}));
    let _ = std::panic::catch_unwind(|| {
        let (payload, truncated) = super::guard::read_stdin();
        hoop_guards::lane::relay(&a.config, &payload, truncated)
    });
    ExitCode::SUCCESS
}
