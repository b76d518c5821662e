//! One module per subcommand. Each returns `anyhow::Result<ExitCode>`; `main`
//! maps an error to [`EXIT_FAILURE`] in one place.

pub mod backend;
pub mod bridge;
pub mod card_snapshot;
pub mod completions;
pub mod demo;
pub mod doctor;
pub mod guard;
pub mod hook_status;
pub mod hooks;
pub mod install;
pub mod logfile;
pub mod mcp;
pub mod pass;
pub mod provision;
pub mod read;
pub mod restart;
pub mod say;
pub mod sentinel;
pub mod status;
pub mod statusline;
pub mod usage;
pub mod worker;

/// Exit code for any error that reaches the top.
pub const EXIT_FAILURE: u8 = 1;

/// The only place a tracing subscriber is installed. Logs go to stderr so that
/// stdout stays machine-readable (addresses, JSON reports, hook answers).
/// Colour only on a terminal: under launchd and systemd stderr is a file or
/// the journal, where escape codes are noise an operator must read through.
pub fn init_tracing() {
    use std::io::IsTerminal;
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_env("HOOP_LOG").unwrap_or_else(|_| EnvFilter::new("info"));
    let ansi = use_colour(
        std::io::stderr().is_terminal(),
        std::env::var_os(NO_COLOR_ENV).as_deref(),
    );
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(|| logfile::Stderr)
        .with_ansi(ansi)
        .try_init();
}

/// The convention (no-color.org) every terminal program honours: present and
/// not empty means no colour.
pub const NO_COLOR_ENV: &str = "NO_COLOR";

/// Colour the log only when stderr is a terminal and `NO_COLOR` is unset
/// (or empty, as no-color.org reads it).
pub fn use_colour(stderr_is_terminal: bool, no_color: Option<&std::ffi::OsStr>) -> bool {
    stderr_is_terminal && no_color.is_none_or(|v| v.is_empty())
}

/// A multi-threaded runtime for the async subcommands; hooks never call this.
#[allow(dead_code)] // until the first async subcommand lands
pub fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?)
}

#[cfg(test)]
mod tests {
    use std::ffi::OsStr;

    /// Every combination of terminal and `NO_COLOR`, each with its answer.
    #[test]
    fn colour_only_on_a_terminal_without_no_color() {
        let cases: [(bool, Option<&OsStr>, bool); 6] = [
            (true, None, true),
            (true, Some(OsStr::new("")), true),
            (true, Some(OsStr::new("1")), false),
            (false, None, false),
            (false, Some(OsStr::new("")), false),
            (false, Some(OsStr::new("1")), false),
        ];
        for (tty, no_color, want) in cases {
            assert_eq!(super::use_colour(tty, no_color), want, "{tty} {no_color:?}");
        }
    }
}
