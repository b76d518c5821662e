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
    pub manager: Option<super::install::ManagerArg>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let uid = restart::uid();
    let root = hoop_core::home::root()?;
    let resolved = super::install::ManagerArg::resolve(args.manager, &root);
    if resolved.problem.is_some() {
        eprintln!("{}", resolved.line);
    }
    let manager = resolved.manager;
    let opts = Options {
        now: args.now,
        canary: args.canary,
        ..Options::new(manager, uid)
    };
    if manager == Manager::None {
        // The calls this machine's manager would get (as `hoop install
        // --manager none` previews them).
        let native = match hoop_provision::manifest::Os::current() {
            hoop_provision::manifest::Os::Linux => Manager::Systemd,
            hoop_provision::manifest::Os::Macos => Manager::Launchd,
        };
        for home in restart::order(&args.homes) {
            for call in restart::restart_calls(native, &home, uid) {
                println!("{home}: would run: {call}");
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
