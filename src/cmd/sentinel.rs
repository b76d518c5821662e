//! `hoop sentinel …`: run the per-account daemon.

use std::process::ExitCode;

use anyhow::Context;
use hoop_core::home::Home;
use hoop_sentinel::daemon::{self, DaemonError};
use hoop_sentinel::driver_agent::DriverAgent;

/// Exit code when another sentinel already holds the home's account lock.
pub const EXIT_ALREADY_RUNNING: u8 = 3;

#[derive(clap::Subcommand)]
pub enum Command {
    /// Run the daemon for one home (`~/.hoop/<home>/`, or under $HOOP_ROOT)
    /// until SIGTERM / Ctrl-C. Exactly one runs per home.
    Run {
        /// The home (account) name.
        #[arg(long, env = "HOOP_HOME")]
        home: String,
    },
}

pub fn run(c: Command) -> anyhow::Result<ExitCode> {
    match c {
        Command::Run { home } => run_daemon(&home),
    }
}

fn run_daemon(name: &str) -> anyhow::Result<ExitCode> {
    let home = Home::open(name)?;
    let exe = std::env::current_exe().context("locating the hoop binary")?;
    // One thread: the daemon waits on sockets, timers and one child; a
    // single-threaded runtime halves its idle wakeups and its threads.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    match rt.block_on(daemon::run(home, exe, DriverAgent::new)) {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(e @ DaemonError::AlreadyRunning { .. }) => {
            eprintln!("hoop: {e}");
            Ok(ExitCode::from(EXIT_ALREADY_RUNNING))
        }
        Err(e) => Err(e.into()),
    }
}
