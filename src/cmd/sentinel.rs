//! `hoop sentinel …`: run the per-account daemon.

use std::process::ExitCode;

use anyhow::Context;
use hoop_core::home::Home;
use hoop_sentinel::daemon::{self, DaemonError};
use hoop_sentinel::driver_agent::DriverAgent;

/// Exit code when another sentinel already holds the home's account lock
/// (the service units do not restart after it).
pub const EXIT_ALREADY_RUNNING: u8 = hoop_core::limits::SENTINEL_EXIT_LOCK_HELD;
/// Exit code for a fatal configuration error: a bad home name, a missing or
/// unreadable `config.json`, `sentinel.json` or state file. Restarting cannot
/// fix it, so the service units do not restart after it either.
pub const EXIT_CONFIG: u8 = hoop_core::limits::SENTINEL_EXIT_CONFIG;

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
    let home = match Home::open(name) {
        Ok(h) => h,
        Err(e) => {
            eprintln!("hoop: {e}");
            return Ok(ExitCode::from(EXIT_CONFIG));
        }
    };
    // Under launchd stderr is the home's log file and nothing else rotates
    // it; anywhere else (a terminal, journald, a file the operator chose)
    // this does nothing.
    super::logfile::bound(
        &home.sentinel_log_path(),
        super::logfile::SENTINEL_LOG_MAX_BYTES,
    );
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
        Err(
            e @ (DaemonError::Config(_)
            | DaemonError::State(_)
            | DaemonError::Home(_)
            | DaemonError::Api(_)),
        ) => {
            eprintln!("hoop: {e}");
            Ok(ExitCode::from(EXIT_CONFIG))
        }
        Err(e) => Err(e.into()),
    }
}
