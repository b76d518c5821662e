//! `hoop install --plan | --apply | --check [--manager …] [--binary …]`:
//! the one install manifest (`hoop_provision::manifest`) for every home on
//! this machine. `--plan` prints add / change / remove / ok per item,
//! `--apply` makes it so (idempotent, atomic per file), `--check` names each
//! drifted item and how to fix it and exits 1 on any drift.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use hoop_provision::install::{self, Ctx, Env, Status};
use hoop_provision::service::{DryRunner, Manager, Runner, SystemRunner};

/// Exit code of `--check` (and `hoop doctor`) when something needs fixing.
pub const EXIT_DRIFT: u8 = 1;

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum ManagerArg {
    Systemd,
    Launchd,
    /// No service manager: only files; service-manager calls are printed, never run.
    None,
}

impl ManagerArg {
    pub fn resolve(a: Option<ManagerArg>) -> Manager {
        match a {
            Some(ManagerArg::Systemd) => Manager::Systemd,
            Some(ManagerArg::Launchd) => Manager::Launchd,
            Some(ManagerArg::None) => Manager::None,
            None => Manager::detect(),
        }
    }
}

#[derive(clap::Args)]
#[command(group(clap::ArgGroup::new("mode").required(true).args(["plan", "apply", "check"])))]
pub struct Args {
    /// Print what is missing or different, item by item; change nothing.
    #[arg(long)]
    plan: bool,
    /// Make every item so (idempotent; each file written atomically).
    #[arg(long)]
    apply: bool,
    /// Name every drifted item and how to fix it; exit 1 on any drift.
    #[arg(long)]
    check: bool,
    /// The service manager (default: detected; `none` previews the calls).
    #[arg(long, value_enum)]
    manager: Option<ManagerArg>,
    /// The binary the stable `hoop` link points at (default: this one).
    #[arg(long)]
    binary: Option<PathBuf>,
}

/// The machine's facts, homes, manager and runner, shared with `hoop doctor`.
pub struct Setup {
    pub machine: hoop_provision::manifest::Machine,
    pub homes: Vec<hoop_provision::manifest::HomeEntry>,
    pub manager: Manager,
    pub runner: Box<dyn Runner>,
}

impl Setup {
    pub fn new(manager: Option<ManagerArg>, binary: Option<PathBuf>) -> anyhow::Result<Setup> {
        let binary = match binary {
            Some(b) => b,
            None => std::env::current_exe().context("locating the hoop binary; pass --binary")?,
        };
        // The link must point at the real file, never at itself.
        let binary = std::fs::canonicalize(&binary)
            .with_context(|| format!("{} does not exist", binary.display()))?;
        let root = hoop_core::home::root()?;
        let (machine, homes) = install::gather(&root, &Env::from_process(binary))?;
        let manager = ManagerArg::resolve(manager);
        let runner: Box<dyn Runner> = match manager {
            Manager::None => Box::new(DryRunner::default()),
            _ => Box::new(SystemRunner),
        };
        Ok(Setup {
            machine,
            homes,
            manager,
            runner,
        })
    }

    pub fn ctx(&self) -> Ctx<'_> {
        Ctx {
            machine: self.machine.clone(),
            homes: self.homes.clone(),
            manager: self.manager,
            runner: self.runner.as_ref(),
        }
    }
}

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    let setup = Setup::new(a.manager, a.binary)?;
    let ctx = setup.ctx();
    if a.check {
        let found = install::check(&ctx);
        for f in &found {
            println!("{f}");
        }
        if found.is_empty() {
            println!("no drift: every item of the install manifest is in place");
            return Ok(ExitCode::SUCCESS);
        }
        eprintln!("hoop install --check: {} item(s) drifted", found.len());
        return Ok(ExitCode::from(EXIT_DRIFT));
    }
    let rows = install::plan(&ctx)?;
    for r in &rows {
        println!("{r}");
    }
    let count = |s: Status| rows.iter().filter(|r| r.status == s).count();
    println!(
        "{} to add, {} to change, {} to remove, {} ok",
        count(Status::Add),
        count(Status::Change),
        count(Status::Remove),
        count(Status::Ok)
    );
    if a.plan {
        return Ok(ExitCode::SUCCESS);
    }
    let applied = install::apply(&ctx, &rows)?;
    for c in &applied.calls {
        match setup.manager {
            Manager::None => println!("would run: {c}"),
            _ => println!("ran: {c}"),
        }
    }
    for n in &applied.notes {
        println!("note: {n}");
    }
    println!("applied: {} item(s) changed", applied.done.len());
    Ok(ExitCode::SUCCESS)
}
