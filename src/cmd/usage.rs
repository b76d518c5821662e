//! `hoop usage [daily|session|project|home|blocks]`: token usage from Claude
//! Code's own transcripts (see the `hoop-meter` crate). Reads the machine
//! user's Claude directories (`hoop_meter::claude_dirs`) and every home's
//! account directories (`hoop_sentinel::usage::account_sources`: its agent's
//! and its workers'); attributes records to homes by the one rule
//! (`hoop_meter::attribution`); keeps its incremental state in
//! `<hoop root>/usage-cache.bin`; prices from the shipped table and
//! `<hoop root>/prices.json`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use hoop_meter::prices::{PRICES_FILE, PriceBook};
use hoop_meter::report::{self, Kind, ReportOptions};
use hoop_meter::timefmt::parse_day;
use hoop_meter::{CollectOptions, MeterError, STATE_FILE, collect};

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum Which {
    /// One row per UTC day.
    Daily,
    /// One row per Claude Code session.
    Session,
    /// One row per project (the transcript directory, i.e. the cwd).
    Project,
    /// One row per hoop home (its working directory and its workers').
    Home,
    /// 5-hour billing blocks.
    Blocks,
}

#[derive(clap::Args)]
pub struct Args {
    /// Which report.
    #[arg(value_enum, default_value = "daily")]
    report: Which,
    /// Print JSON (rows beside a `totals` object) instead of a table.
    #[arg(long)]
    json: bool,
    /// Under each row, one row per model (daily, session, project, home).
    #[arg(long)]
    breakdown: bool,
    /// First UTC day to include (YYYY-MM-DD or YYYYMMDD).
    #[arg(long, value_name = "DAY")]
    since: Option<String>,
    /// Last UTC day to include (YYYY-MM-DD or YYYYMMDD).
    #[arg(long, value_name = "DAY")]
    until: Option<String>,
    /// Read everything cold: neither read nor write the incremental state.
    /// With --since, files last modified before that day are not read.
    #[arg(long)]
    no_cache: bool,
    /// Incremental state file (default: <hoop root>/usage-cache.bin).
    #[arg(long, value_name = "PATH")]
    state: Option<PathBuf>,
    /// Scanning threads (default: the number of CPUs).
    #[arg(long, default_value_t = 0)]
    threads: usize,
}

fn day_arg(flag: &str, v: &Option<String>) -> anyhow::Result<Option<i64>> {
    v.as_deref()
        .map(|s| parse_day(s).with_context(|| format!("--{flag} {s:?}: expected YYYY-MM-DD")))
        .transpose()
}

/// The directories to read: the machine user's Claude directories, then
/// every home's account directories under `root` (its agent's, when its
/// `sentinel.json` gives the agent its own, and its workers'), each once.
pub fn usage_dirs(root: Option<&Path>) -> Result<Vec<PathBuf>, MeterError> {
    let mut dirs: Vec<PathBuf> = hoop_meter::claude_dirs::claude_dirs_here()
        .ok_or(MeterError::NoConfigDir)?
        .all;
    if let Some(root) = root {
        for src in hoop_sentinel::usage::all_homes_sources(root) {
            if !dirs.contains(&src.dir) {
                dirs.push(src.dir);
            }
        }
    }
    Ok(dirs)
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let since_day = day_arg("since", &args.since)?;
    let until_day = day_arg("until", &args.until)?;
    if let (Some(s), Some(u)) = (since_day, until_day)
        && s > u
    {
        bail!("--since is after --until");
    }
    let hoop_root = hoop_core::home::root().ok();
    let price_file = hoop_root.as_deref().map(|r| r.join(PRICES_FILE));
    // A price list that cannot be read is refused, never half-applied.
    let prices = match &price_file {
        Some(p) => PriceBook::load(p)?,
        None => PriceBook::builtin(),
    };
    let dirs = usage_dirs(hoop_root.as_deref())?;
    let state_path = if args.no_cache {
        None
    } else {
        match (&args.state, &hoop_root) {
            (Some(p), _) => Some(p.clone()),
            (None, Some(r)) => Some(r.join(STATE_FILE)),
            (None, None) => None,
        }
    };
    let opts = CollectOptions {
        state_path,
        skip_files_before_ms: since_day.map(|d| d * 86_400_000),
        threads: args.threads,
        ..CollectOptions::default()
    };
    let collected = collect(&dirs, &opts)?;
    let kind = match args.report {
        Which::Daily => Kind::Daily,
        Which::Session => Kind::Session,
        Which::Project => Kind::Project,
        Which::Home => Kind::Home,
        Which::Blocks => Kind::Blocks,
    };
    if args.breakdown && kind == Kind::Blocks {
        bail!("--breakdown is for daily, session, project and home reports, not blocks");
    }
    let ropts = ReportOptions {
        since_day,
        until_day,
        hoop_roots: hoop_root
            .as_deref()
            .map(report::hoop_roots)
            .unwrap_or_default(),
        now_ms: hoop_core::clock::now_unix() * 1000,
        prices,
        breakdown: args.breakdown,
        price_file,
    };
    let r = report::build(&collected, kind, &ropts);
    // Warnings go to stderr in both modes: an unknown price is never silent.
    for w in r.warning.iter().chain(&collected.warnings) {
        eprintln!("hoop usage: warning: {w}");
    }
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report::to_json(&r, &collected))?
        );
    } else {
        print!("{}", report::to_table(&r, &collected));
    }
    Ok(ExitCode::SUCCESS)
}
