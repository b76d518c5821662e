//! `hoop doctor [--manager …]`: every `hoop install --check` finding plus the
//! machine's health (`hoop_provision::doctor`). Each finding says how to fix
//! it; exits 1 when any finding is an error.

use std::process::ExitCode;
use std::time::SystemTime;

use hoop_provision::doctor::ClockError;
use hoop_provision::install::Level;

use crate::cmd::install::{EXIT_DRIFT, ManagerArg, Setup};

#[derive(clap::Args)]
pub struct Args {
    /// The service manager (default: detected).
    #[arg(long, value_enum)]
    manager: Option<ManagerArg>,
}

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    let setup = Setup::new(a.manager, None)?;
    eprintln!("{}", setup.resolved.line);
    let rt = crate::cmd::runtime()?;
    let http = reqwest::Client::builder()
        .timeout(hoop_core::limits::DOCTOR_CLOCK_TIMEOUT)
        .build()?;
    let clock = |base: &str| -> Result<SystemTime, ClockError> {
        rt.block_on(async {
            let resp = http
                .get(base.trim_end_matches('/'))
                .send()
                .await
                .map_err(|e| ClockError::Unreachable(error_chain(&e.without_url())))?;
            let date = resp
                .headers()
                .get(reqwest::header::DATE)
                .and_then(|d| d.to_str().ok())
                .ok_or(ClockError::Unreadable(
                    "the answer has no Date header".into(),
                ))?;
            hoop_provision::doctor::parse_http_date(date)
                .ok_or_else(|| ClockError::Unreadable(format!("unreadable Date header {date:?}")))
        })
    };
    let found = hoop_provision::doctor::doctor(&setup.ctx(), &clock, SystemTime::now());
    for f in &found {
        println!("{f}");
    }
    let errors = found.iter().filter(|f| f.level == Level::Error).count();
    println!(
        "{} error(s), {} warning(s)",
        errors,
        found.iter().filter(|f| f.level == Level::Warning).count()
    );
    Ok(if errors > 0 {
        ExitCode::from(EXIT_DRIFT)
    } else {
        ExitCode::SUCCESS
    })
}

/// An error with its causes, `a: b: c` (reqwest's own text is only the top).
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}
