//! `hoop restart <home>… [--canary] [--now] [--manager …]`: restart
//! sentinels one at a time through the service manager, waiting for a
//! running turn and for the new process's `🚀` and `🔌 WS connected`. The
//! steps and decisions live in `hoop_provision::restart`; this parses,
//! picks the runner and prints.
//!
//! Exit codes: 0 every home restarted (or, with `--manager none`, the calls
//! printed); 1 a home failed (the reason is printed; later homes untouched).

use std::process::ExitCode;

use hoop_provision::restart::{self, Options, Outcome};
use hoop_provision::service::{Manager, SystemRunner};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The homes, in order; with --canary the first is the canary.
    #[arg(required = true)]
    pub homes: Vec<String>,
    /// The first home must come up and finish a healthy round before the next.
    #[arg(long)]
    pub canary: bool,
    /// Do not wait for a running turn to end.
    #[arg(long)]
    pub now: bool,
    /// The service manager (default: detected; `none` prints the calls).
    #[arg(long, value_enum)]
    pub manager: Option<ManagerArg>,
}

#[derive(clap::ValueEnum, Debug, Clone, Copy)]
pub enum ManagerArg {
    Systemd,
    Launchd,
    None,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let manager = match args.manager {
        Some(ManagerArg::Systemd) => Manager::Systemd,
        Some(ManagerArg::Launchd) => Manager::Launchd,
        Some(ManagerArg::None) => Manager::None,
        None => Manager::detect(),
    };
    let uid = restart::uid();
    let root = hoop_core::home::root()?;
    let opts = Options {
        now: args.now,
        canary: args.canary,
        ..Options::new(manager, uid)
    };
    if manager == Manager::None {
        for home in restart::order(&args.homes) {
            for m in [Manager::Systemd, Manager::Launchd] {
                for call in restart::restart_calls(m, &home, uid) {
                    println!("{home}: would run: {call}");
                }
            }
        }
    }
    let results = restart::run(&root, &args.homes, &opts, &SystemRunner, &mut |line| {
        println!("{line}")
    });
    let failed = results
        .iter()
        .any(|(_, o)| matches!(o, Outcome::Failed { .. }));
    Ok(if failed {
        ExitCode::from(super::EXIT_FAILURE)
    } else {
        ExitCode::SUCCESS
    })
}
