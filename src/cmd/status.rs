//! `hoop status [--json] [--manager …]`: every home on this machine in one
//! table (or the stable JSON shape of `docs/status-json.md`). The reading
//! and the decisions live in `hoop_provision::status`; the unit and drift
//! fields come from the install manifest's plan, built as `hoop install`
//! builds it; this only wires and prints.

use std::process::ExitCode;

use hoop_provision::install;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Only these homes (default: every home under the root), as `hoop
    /// restart` takes them.
    pub homes: Vec<String>,
    /// Print the machine-readable report (schema `hoop.status/1`).
    #[arg(long)]
    pub json: bool,
    /// The service manager asked about units (default: detected; `none`
    /// asks nothing and reports units as not known).
    #[arg(long, value_enum)]
    pub manager: Option<super::install::ManagerArg>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    use hoop_provision::status;
    let root = status::default_root()?;
    let mut report = status::gather(&root, hoop_core::clock::now_unix())?;
    if !args.homes.is_empty() {
        let known: Vec<String> = report.homes.iter().map(|h| h.home.clone()).collect();
        if let Some(missing) = args.homes.iter().find(|h| !known.contains(h)) {
            anyhow::bail!(
                "no home {missing:?} under {} (homes there: {}); fix: name one of them, or \
                 redeem it first (`hoop provision redeem --home {missing} …`)",
                root.display(),
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            );
        }
        report.homes.retain(|h| args.homes.contains(&h.home));
    }
    let resolved = super::install::ManagerArg::resolve(args.manager, &root);
    if resolved.problem.is_some() {
        eprintln!("{}", resolved.line);
    }
    let manager = resolved.manager;
    let uid = hoop_provision::restart::uid();
    match super::install::Setup::new(args.manager, None) {
        Ok(setup) => {
            let ctx = setup.ctx();
            let plan = install::plan(&ctx).map_err(|e| e.to_string());
            status::wire(
                &mut report,
                plan.as_deref().map_err(String::clone),
                manager,
                setup.runner.as_ref(),
                uid,
            );
        }
        Err(e) => status::wire(
            &mut report,
            Err(hoop_api::error::render_chain(e.as_ref())),
            manager,
            &hoop_provision::service::DryRunner::default(),
            uid,
        ),
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", status::table(&report));
    }
    Ok(ExitCode::SUCCESS)
}
