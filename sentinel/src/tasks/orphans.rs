//! The orphan keeper. On Linux the daemon is a child subreaper
//! ([`crate::proctree::become_subreaper`]): a process the agent's tree or a
//! prescan orphans (a Bash tool's `cmd &`, a daemonized leftover) is
//! adopted by the daemon instead of init. This task collects what it
//! adopts: it reaps each adopted child that exited (on SIGCHLD), and while
//! no turn runs (the turn flock is free) it stops every live adopted
//! process and its tree — nothing a turn started outlives it — except the
//! home's worker supervisors, which outlive turns by design.

use std::path::PathBuf;
use std::time::Duration;

use crate::constants::{ORPHAN_STOP_GRACE, ORPHAN_TICK};
use crate::proctree;
use crate::worker;

/// One pass: reap, then stop the leftovers if no turn runs.
async fn pass(turn_lock: &std::path::Path) {
    proctree::reap_adopted();
    if crate::lock::is_free(turn_lock).unwrap_or(false) {
        let stopped = proctree::stop_adopted(worker::is_any_supervisor, ORPHAN_STOP_GRACE).await;
        if !stopped.is_empty() {
            tracing::info!(pids = ?stopped, "stopped processes a finished turn left behind");
        }
    }
}

/// Run until aborted. Does nothing where the daemon could not become a
/// subreaper (macOS: the tree is walked while its root lives instead).
pub async fn run(turn_lock: PathBuf, subreaper: bool) {
    if !subreaper {
        return std::future::pending().await;
    }
    let mut child = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::child()).ok();
    loop {
        let tick = tokio::time::sleep(ORPHAN_TICK);
        match &mut child {
            Some(c) => {
                tokio::select! {
                    _ = c.recv() => {}
                    _ = tick => {}
                }
            }
            None => tick.await,
        }
        pass(&turn_lock).await;
        // SIGCHLDs of a burst arrive together: one pass serves them all.
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
