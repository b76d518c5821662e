//! `hoop hooks install --claude|--cursor [--home H] [--check]`: merge hoop's
//! hook entries into Claude Code's `settings.json` or Cursor's `hooks.json`
//! (see `hoop_guards::install` for the merge rules). `--check` writes
//! nothing and exits 1 when the file differs from what install would make.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use hoop_guards::install::{self, Target};

#[derive(clap::Subcommand)]
pub enum Command {
    /// Merge hoop's hook entries into Claude Code or Cursor settings
    /// (idempotent; never removes or reorders anyone else's hooks).
    Install(InstallArgs),
}

#[derive(clap::Args)]
#[command(group(clap::ArgGroup::new("target").required(true).args(["claude", "cursor"])))]
pub struct InstallArgs {
    /// Claude Code: `$CLAUDE_CONFIG_DIR/settings.json` or `~/.claude/settings.json`.
    #[arg(long)]
    claude: bool,
    /// Cursor: `~/.cursor/hooks.json`.
    #[arg(long)]
    cursor: bool,
    /// Also install the home-bound guards (mcp_gate, tool_phase) for this home.
    #[arg(long)]
    home: Option<String>,
    /// Report drift and exit 1 instead of writing.
    #[arg(long)]
    check: bool,
    /// The settings file to merge into (overrides the default location).
    #[arg(long)]
    settings: Option<PathBuf>,
    /// The hoop program written into the hooks (default: this binary).
    #[arg(long)]
    program: Option<String>,
}

pub fn run(c: Command) -> anyhow::Result<ExitCode> {
    match c {
        Command::Install(a) => install_cmd(a),
    }
}

fn default_path(target: Target) -> anyhow::Result<PathBuf> {
    let home = || {
        std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from)
            .context("HOME is not set; pass --settings")
    };
    Ok(match target {
        Target::Claude => match std::env::var_os("CLAUDE_CONFIG_DIR").filter(|d| !d.is_empty()) {
            Some(d) => PathBuf::from(d).join("settings.json"),
            None => home()?.join(".claude").join("settings.json"),
        },
        Target::Cursor => home()?.join(".cursor").join("hooks.json"),
    })
}

fn install_cmd(a: InstallArgs) -> anyhow::Result<ExitCode> {
    let target = if a.cursor {
        Target::Cursor
    } else {
        Target::Claude
    };
    let path = match a.settings {
        Some(p) => p,
        None => default_path(target)?,
    };
    let program = match a.program {
        Some(p) => p,
        None => std::env::current_exe()
            .context("locating the hoop binary; pass --program")?
            .to_string_lossy()
            .into_owned(),
    };
    let specs = install::specs(target, a.home.as_deref());
    let (changes, data) = install::merge_plan(target, &path, &program, &specs)?;
    for c in &changes {
        println!("{c}");
    }
    if a.check {
        if data.is_some() {
            eprintln!(
                "{}: hooks differ from what `hoop hooks install` makes; fix: run the same \
                 command without --check",
                path.display()
            );
            return Ok(ExitCode::from(1));
        }
        println!("{}: up to date", path.display());
        return Ok(ExitCode::SUCCESS);
    }
    if data.is_none() {
        println!("{}: up to date", path.display());
        return Ok(ExitCode::SUCCESS);
    }
    install::merge_file(target, &path, &program, &specs)?;
    println!("{}: written", path.display());
    Ok(ExitCode::SUCCESS)
}
