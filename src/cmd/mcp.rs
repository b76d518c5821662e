//! `hoop mcp add-line`: print the `claude mcp add …` line that installs a
//! reinforcement account's MCP key in Claude Code. The line is built by the
//! one formatter the backend uses too (`hoop_api::mcp::claude_add_line`);
//! with no backend known it carries a placeholder, never an invented
//! domain. Stdout is exactly that line.

use std::io::Write as _;
use std::process::ExitCode;

use anyhow::{Context, bail};
use hoop_core::home::Home;

#[derive(clap::Subcommand)]
pub enum Command {
    /// Print the `claude mcp add …` line for a reinforcement key.
    AddLine(AddLineArgs),
}

#[derive(clap::Args)]
pub struct AddLineArgs {
    /// Take the key (and the backend) from this home: what `hoop provision
    /// redeem` wrote for a reinforcement account.
    #[arg(long, conflicts_with = "key")]
    pub home: Option<String>,
    /// The key (`hoopmcp_…`); `-` reads it from stdin.
    #[arg(long, required_unless_present = "home")]
    pub key: Option<String>,
    /// Base URL of the backend (else the home's, else a placeholder).
    #[arg(long, alias = "backend", env = super::backend::URL_ENV)]
    pub url: Option<String>,
}

pub fn run(c: Command) -> anyhow::Result<ExitCode> {
    match c {
        Command::AddLine(a) => add_line(a),
    }
}

fn add_line(a: AddLineArgs) -> anyhow::Result<ExitCode> {
    let (key, home_base) = match (&a.home, &a.key) {
        (Some(name), _) => {
            let home = Home::open(name)?;
            let path = home.mcp_key_path();
            let key = std::fs::read_to_string(&path)
                .with_context(|| {
                    format!(
                        "reading {} (is {name} a reinforcement home?)",
                        path.display()
                    )
                })?
                .trim()
                .to_string();
            let base = hoop_provision::redeem::ReinforcementRecord::load(&home).map(|r| r.base_url);
            (key, base)
        }
        (None, Some(k)) => (super::provision::key_arg(k)?, None),
        (None, None) => bail!("give --home or --key"),
    };
    if !hoop_api::mcp::is_mcp_key(&key) {
        // Never echo what was given: it may be some other secret.
        bail!("not an MCP key (expected hoopmcp_ followed by letters, digits or '_')");
    }
    let base = a.url.or(home_base);
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{}",
        hoop_api::mcp::claude_add_line(base.as_deref(), &key)
    )?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
