//! `hoop card-snapshot`: the card tools' `PreToolUse` hook. Before a call
//! that ends or starts a card (`work_task_finish`, `work_task_start`,
//! `work_task_take`, a `work_task_progress` that claims), it asks the
//! home's sentinel over loopback to post the account's usage snapshot, so
//! the card's end (or start) snapshot holds the turn up to this call.
//!
//! It never blocks the call: whatever happens (no sentinel, a slow backend,
//! a malformed payload, a panic) it exits 0 with nothing on stdout, so
//! Claude Code goes on with the call; a snapshot that was not posted is
//! one line on stderr. It starts no async runtime (a blocking request over
//! a plain `TcpStream`, bounded by `CARD_SNAPSHOT_TIMEOUT`), and the home
//! is the one the session's working directory belongs to
//! (`hoop_meter::attribution`): in any other window it does nothing.

use std::io::Read;
use std::process::ExitCode;

use hoop_sentinel::constants::CARD_SNAPSHOT_PAYLOAD_MAX;
use hoop_sentinel::usage::{boundary_home, card_boundary, request_snapshot};

pub fn run() -> ExitCode {
    std::panic::set_hook(Box::new(|_| {}));
    if let Err(why) = std::panic::catch_unwind(snapshot).unwrap_or_else(|_| {
        Err("hoop card-snapshot: an internal error; no snapshot, the call goes on".into())
    }) {
        eprintln!("{why}");
    }
    ExitCode::SUCCESS
}

/// `Err` is the line to print.
fn snapshot() -> Result<(), String> {
    let mut payload = Vec::new();
    let _ = std::io::stdin()
        .take(CARD_SNAPSHOT_PAYLOAD_MAX as u64)
        .read_to_end(&mut payload);
    let Some(call) = card_boundary(&payload) else {
        return Ok(());
    };
    let Ok(root) = hoop_core::home::root() else {
        return Ok(());
    };
    let Some(home) = boundary_home(&call, &root) else {
        return Ok(());
    };
    let fail = |why: String| {
        format!(
            "hoop card-snapshot: no usage snapshot before {} for home {}: {why}; the call goes on",
            call.tool, home.name
        )
    };
    match request_snapshot(&home, &call) {
        Ok(a) if a.reported => Ok(()),
        Ok(a) => Err(fail(a.why.unwrap_or_else(|| "not reported".into()))),
        Err(e) => Err(fail(e)),
    }
}
