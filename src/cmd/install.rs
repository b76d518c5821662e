//! `hoop install --plan | --apply | --check [--manager …] [--binary …]`:
//! the one install manifest (`hoop_provision::manifest`) for every home on
//! this machine. `--plan` prints add / change / remove / ok per item,
//! `--apply` makes it so (idempotent, atomic per file), `--check` names each
//! drifted item and how to fix it and exits 1 on any drift.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use hoop_provision::install::{self, Ctx, Env, Status};
use hoop_provision::manifest::Want;
use hoop_provision::record;
use hoop_provision::service::{DryRunner, Manager, Problem, Runner, SystemRunner};

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
    fn manager(self) -> Manager {
        match self {
            ManagerArg::Systemd => Manager::Systemd,
            ManagerArg::Launchd => Manager::Launchd,
            ManagerArg::None => Manager::None,
        }
    }

    /// The manager for this root: `--manager`, else the one chosen on
    /// purpose at install (the install record), else detected. Never
    /// silent: `line` says which and why.
    pub fn resolve(a: Option<ManagerArg>, root: &std::path::Path) -> Resolved {
        if let Some(a) = a {
            let m = a.manager();
            return Resolved {
                manager: m,
                line: format!("service manager: {} (--manager {})", m.word(), m.word()),
                problem: None,
                on_purpose: true,
            };
        }
        if let Ok(Some(r)) = record::load(root)
            && r.manager_on_purpose
        {
            return Resolved {
                manager: r.manager,
                line: format!(
                    "service manager: {} (chosen with --manager at install: {})",
                    r.manager.word(),
                    record::path(root).display()
                ),
                problem: None,
                on_purpose: true,
            };
        }
        let d = Manager::detect();
        let line = match &d.problem {
            None => format!(
                "service manager: {} (detected: {})",
                d.manager.word(),
                d.why
            ),
            Some(p) => format!(
                "service manager: none (detected): {}\n  fix: {}",
                p.cause, p.fix
            ),
        };
        Resolved {
            manager: d.manager,
            line,
            problem: d.problem,
            on_purpose: false,
        }
    }
}

/// The manager a command uses and the line that says why.
pub struct Resolved {
    pub manager: Manager,
    pub line: String,
    /// Detection found no usable manager (nothing will restart a sentinel).
    pub problem: Option<Problem>,
    pub on_purpose: bool,
}

#[derive(clap::Args)]
#[command(group(clap::ArgGroup::new("mode").required(true).args(["plan", "apply", "check"])))]
pub struct Args {
    /// Print what is missing or different, item by item, and the
    /// service-manager calls --apply would make; change nothing.
    #[arg(long)]
    plan: bool,
    /// Make every item so (idempotent; each file written atomically).
    #[arg(long)]
    apply: bool,
    /// Name every drifted item and how to fix it; exit 1 on any drift.
    #[arg(long)]
    check: bool,
    /// The service manager (default: the one recorded at install, else
    /// detected; `none` installs files only and lists the calls).
    #[arg(long, value_enum)]
    manager: Option<ManagerArg>,
    /// The binary the stable `hoop` link points at (default: this one).
    #[arg(long)]
    binary: Option<PathBuf>,
    /// Build the unit's PATH from this shell's PATH (where `claude` and
    /// `node` are found) instead of the one recorded at install.
    #[arg(long)]
    path_from_shell: bool,
}

/// The machine's facts, homes, manager and runner, shared with `hoop doctor`.
pub struct Setup {
    pub machine: hoop_provision::manifest::Machine,
    pub homes: Vec<hoop_provision::manifest::HomeEntry>,
    pub manager: Manager,
    pub resolved: Resolved,
    pub runner: Box<dyn Runner>,
    pub env: Env,
}

impl Setup {
    pub fn new(manager: Option<ManagerArg>, binary: Option<PathBuf>) -> anyhow::Result<Setup> {
        Setup::with(manager, binary, false)
    }

    pub fn with(
        manager: Option<ManagerArg>,
        binary: Option<PathBuf>,
        path_from_shell: bool,
    ) -> anyhow::Result<Setup> {
        let binary = match binary {
            Some(b) => b,
            None => std::env::current_exe().context("locating the hoop binary; pass --binary")?,
        };
        // The link must point at the real file, never at itself.
        let binary = std::fs::canonicalize(&binary)
            .with_context(|| format!("{} does not exist", binary.display()))?;
        let root = hoop_core::home::root()?;
        let env = Env {
            path_from_shell,
            ..Env::from_process(binary)
        };
        let (machine, homes) = install::gather(&root, &env)?;
        let resolved = ManagerArg::resolve(manager, &root);
        let runner: Box<dyn Runner> = match resolved.manager {
            Manager::None => Box::new(DryRunner::default()),
            _ => Box::new(SystemRunner),
        };
        Ok(Setup {
            machine,
            homes,
            manager: resolved.manager,
            resolved,
            runner,
            env,
        })
    }

    pub fn ctx(&self) -> Ctx<'_> {
        Ctx {
            machine: self.machine.clone(),
            homes: self.homes.clone(),
            manager: self.manager,
            runner: self.runner.as_ref(),
            manager_problem: self.resolved.problem.clone(),
            waits: Default::default(),
        }
    }

    /// What `--apply` records: the manager and whether it was chosen, the
    /// tools' directories the unit's PATH was built from, the units this
    /// root owns.
    fn record(&self, rows: &[install::Row]) -> record::Record {
        let previous = record::load(&self.machine.root).ok().flatten();
        let tool_dirs = match &previous {
            Some(r) if !self.env.path_from_shell && !r.tool_dirs.is_empty() => r.tool_dirs.clone(),
            _ => install::tool_dirs_on(self.env.path.as_deref()),
        };
        let mut units: Vec<String> = previous.map(|r| r.units).unwrap_or_default();
        for row in rows {
            match &row.item.want {
                Want::Service { home, .. } if !units.contains(home) => units.push(home.clone()),
                Want::Retired { home, .. } => units.retain(|u| u != home),
                _ => {}
            }
        }
        units.sort();
        record::Record {
            manager: self.manager,
            manager_on_purpose: self.resolved.on_purpose,
            tool_dirs,
            units,
        }
    }
}

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    let setup = Setup::with(a.manager, a.binary, a.path_from_shell)?;
    // Which manager, and why, before anything else.
    eprintln!("{}", setup.resolved.line);
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
    let broken = count(Status::Broken);
    println!(
        "{} to add, {} to change, {} to remove, {} ok{}",
        count(Status::Add),
        count(Status::Change),
        count(Status::Remove),
        count(Status::Ok),
        if broken > 0 {
            format!(", {broken} broken home(s) left out (fix by hand)")
        } else {
            String::new()
        }
    );
    let (calls, _) = install::service_plan(&ctx, &rows);
    if a.plan {
        for c in &calls {
            println!("would run: {c}");
        }
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(p) = &setup.resolved.problem {
        eprintln!(
            "hoop install --apply: refused, nothing written: {}\n  fix: {}",
            p.cause, p.fix
        );
        return Ok(ExitCode::from(super::EXIT_FAILURE));
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
    let rec = setup.record(&rows);
    if record::load(&setup.machine.root).ok().flatten().as_ref() != Some(&rec) {
        record::save(&setup.machine.root, &rec).with_context(|| {
            format!(
                "writing the install record {}",
                record::path(&setup.machine.root).display()
            )
        })?;
    }
    println!("applied: {} item(s) changed", applied.done.len());
    for b in &setup.machine.broken {
        println!(
            "left out: home {} is broken ({}); {}",
            b.name,
            b.problem(),
            b.fix()
        );
    }
    Ok(ExitCode::SUCCESS)
}
