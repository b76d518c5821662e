//! `hoop hooks install --claude|--cursor [--home H] [--statusline] [--check]`:
//! merge hoop's hook entries into Claude Code's `settings.json` or Cursor's
//! `hooks.json` (see `hoop_guards::install` for the merge rules), and with
//! `--statusline` make `hoop statusline` Claude Code's status line.
//! `--check` writes nothing and exits 1 when the file differs from what
//! install would make.

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
    /// Also make `hoop statusline` Claude Code's status line (replaces
    /// another status line command, and says which).
    #[arg(long, conflicts_with = "cursor")]
    statusline: bool,
}

pub fn run(c: Command) -> anyhow::Result<ExitCode> {
    match c {
        Command::Install(a) => install_cmd(a),
    }
}

fn default_path(target: Target) -> anyhow::Result<PathBuf> {
    Ok(match target {
        // Where Claude Code keeps its files: the one rule.
        Target::Claude => hoop_meter::claude_dirs::claude_dirs_here()
            .context("neither CLAUDE_CONFIG_DIR nor HOME is set; pass --settings")?
            .primary
            .join("settings.json"),
        Target::Cursor => std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from)
            .context("HOME is not set; pass --settings")?
            .join(".cursor")
            .join("hooks.json"),
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
    let mut specs = install::specs(target, a.home.as_deref());
    if target == Target::Claude {
        // The card tools' usage snapshot (not a guard: it never refuses).
        specs.push(install::card_snapshot_spec());
    }
    let (mut changes, data) = install::merge_plan(target, &path, &program, &specs)?;
    let mut drift = data.is_some();
    if a.statusline {
        let (c, d) = install::statusline_plan(&path, &program)?;
        drift |= d.is_some();
        changes.push(c);
    }
    for c in &changes {
        println!("{c}");
    }
    if a.check {
        if drift {
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
    if !drift {
        println!("{}: up to date", path.display());
        return Ok(ExitCode::SUCCESS);
    }
    install::merge_file(target, &path, &program, &specs)?;
    if a.statusline
        && let (_, Some(data)) = install::statusline_plan(&path, &program)?
    {
        install::write_settings(&path, &data)?;
    }
    println!("{}: written", path.display());
    Ok(ExitCode::SUCCESS)
}
