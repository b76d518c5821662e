//! `hoop status [--json]`: every home on this machine in one table (or the
//! stable JSON shape of `docs/status-json.md`). The reading and the
//! decisions live in `hoop_provision::status`; this only prints.

use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Print the machine-readable report (schema `hoop.status/1`).
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    use hoop_provision::status;
    let root = status::default_root()?;
    let report = status::gather(&root, hoop_core::clock::now_unix())?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", status::table(&report));
    }
    Ok(ExitCode::SUCCESS)
}
