//! `hoop provision …`: put an account on this machine. Only moves bytes:
//! the decisions and the home writing are `hoop_provision::redeem`.
//!
//! A sentinel redeem prints what it created and what to run next on
//! stdout. A reinforcement redeem prints exactly one stdout line, the
//! `claude mcp add …` line (the only secret it ever prints), and its notes
//! on stderr.

use std::io::{BufRead as _, Write as _};
use std::process::ExitCode;

use anyhow::{Context, bail};
use hoop_provision::redeem::{self, Options, Outcome};

#[derive(clap::Subcommand)]
pub enum Command {
    /// Redeem a provisioning key: creates a NEW agent account and writes its
    /// home (`config.json`; the token cache of a first login, or the MCP key).
    Redeem(RedeemArgs),
}

#[derive(clap::Args)]
pub struct RedeemArgs {
    /// The provisioning key (`hoopprov_…`); `-` reads it from stdin, which
    /// keeps it out of the process list and the shell history.
    #[arg(long, required_unless_present = "email")]
    pub key: Option<String>,
    /// The home name on this machine, also the new account's username.
    #[arg(long, alias = "name")]
    pub home: String,
    /// A room the account joins (else the one the key names, if any).
    #[arg(long)]
    pub room: Option<i64>,
    /// The machine user the home belongs to: refused when run as anyone else.
    #[arg(long)]
    pub target_host: Option<String>,
    /// Base URL of the backend.
    #[arg(long, alias = "backend", env = super::backend::URL_ENV)]
    pub url: String,
    /// This machine's name as recorded with the installation (default:
    /// `uname -n`).
    #[arg(long)]
    pub machine: Option<String>,
    /// Replace an existing home: with a NEW account from --key (the
    /// backend must not have an account of that name yet), or, with
    /// --email, with the EXISTING sentinel account of that email (no key
    /// is spent; a login with the fixed code proves it).
    #[arg(long)]
    pub force: bool,
    /// With --force: adopt the existing sentinel account with this email
    /// (a redeem whose home could not be written prints it).
    #[arg(long, requires = "force", conflicts_with = "key")]
    pub email: Option<String>,
}

pub fn run(c: Command) -> anyhow::Result<ExitCode> {
    match c {
        Command::Redeem(a) => run_redeem(a),
    }
}

/// `--key -`: the first line of stdin.
pub fn key_arg(key: &str) -> anyhow::Result<String> {
    if key != "-" {
        return Ok(key.trim().to_string());
    }
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .context("reading the key from stdin")?;
    let key = line.trim().to_string();
    if key.is_empty() {
        bail!("--key -: stdin had no key");
    }
    Ok(key)
}

fn run_redeem(a: RedeemArgs) -> anyhow::Result<ExitCode> {
    let opts = Options {
        key: a.key.as_deref().map(key_arg).transpose()?,
        email: a.email,
        name: a.home,
        room: a.room,
        target_host: a.target_host,
        backend: a.url,
        machine: a.machine.unwrap_or_else(redeem::machine_name),
        force: a.force,
        root: hoop_core::home::root()?,
    };
    let outcome = super::runtime()?.block_on(redeem::redeem(&opts))?;
    let mut out = std::io::stdout().lock();
    match outcome {
        Outcome::Sentinel { home, user } => {
            out.write_all(redeem::sentinel_next_steps(&home, &user).as_bytes())?;
        }
        Outcome::Adopted { home, user } => {
            out.write_all(redeem::adopted_next_steps(&home, &user).as_bytes())?;
        }
        Outcome::Reinforcement {
            home,
            user,
            add_line,
        } => {
            eprint!("{}", redeem::reinforcement_notes(&home, &user));
            writeln!(out, "{add_line}")?;
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
