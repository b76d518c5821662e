//! One-shot runs of the real `claude` CLI against the model stand-in, shared
//! by the suites that install hooks into a HOME and watch what the CLI does
//! with them (`#[path]`-included: each suite is its own crate).

use std::path::{Path, PathBuf};
use std::time::Duration;

use hoop_standin::Standin;

/// Every wait on the CLI is bounded by this.
pub const CLI_TIMEOUT: Duration = Duration::from_secs(120);

/// The real CLI named by `HOOP_CLAUDE_BIN`; the suite fails loudly without it.
pub fn claude_bin() -> PathBuf {
    let p = std::env::var_os("HOOP_CLAUDE_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            panic!(
                "HOOP_CLAUDE_BIN must name the real claude CLI (tests/run sets it; locally \
             tests/node_modules/.bin/claude)"
            )
        });
    assert!(p.exists(), "HOOP_CLAUDE_BIN={} does not exist", p.display());
    p
}

/// `claude -p "do the task"` in `work` with `HOME=home`, bypassing
/// permissions, pointed at the stand-in; `env` adds variables. Returns the
/// exit success and the stream-json output.
pub async fn run_claude(
    standin: &Standin,
    home: &Path,
    work: &Path,
    env: &[(&str, &Path)],
) -> (bool, String) {
    let mut c = tokio::process::Command::new(claude_bin());
    c.args([
        "-p",
        "do the task",
        "--output-format",
        "stream-json",
        "--verbose",
        "--permission-mode",
        "bypassPermissions",
    ])
    .current_dir(work)
    .env("HOME", home)
    .env("IS_SANDBOX", "1")
    .env_remove("CLAUDE_CONFIG_DIR")
    .env_remove("HOOP_AGENT")
    .stdin(std::process::Stdio::null())
    .kill_on_drop(true);
    for (k, v) in env {
        c.env(k, v);
    }
    for (k, v) in standin.claude_env() {
        c.env(k, v);
    }
    let out = tokio::time::timeout(CLI_TIMEOUT, c.output())
        .await
        .expect("the claude CLI finishes in time")
        .expect("the claude CLI starts");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}
