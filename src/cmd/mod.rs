//! One module per subcommand. Each returns `anyhow::Result<ExitCode>`; `main`
//! maps an error to [`EXIT_FAILURE`] in one place.

pub mod backend;
pub mod bridge;
pub mod demo;
pub mod guard;
pub mod hooks;
pub mod read;
pub mod say;
pub mod sentinel;
pub mod usage;

/// Exit code for any error that reaches the top.
pub const EXIT_FAILURE: u8 = 1;

/// The only place a tracing subscriber is installed. Logs go to stderr so that
/// stdout stays machine-readable (addresses, JSON reports, hook answers).
pub fn init_tracing() {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_env("HOOP_LOG").unwrap_or_else(|_| EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

/// A multi-threaded runtime for the async subcommands; hooks never call this.
#[allow(dead_code)] // until the first async subcommand lands
pub fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?)
}
