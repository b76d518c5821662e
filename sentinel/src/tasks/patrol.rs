//! The patrol ticker: one timer per declared patrol. A tick first looks at
//! the patrol's staged findings ([`crate::patrol::plan_tick`]): while some
//! wait, it offers the next span (or the same span again, saying so) and
//! runs no prescan. Otherwise it runs the prescan (no model call), and
//! [`crate::patrol::judge`] decides: a quiet exit ends the tick with one
//! debug line; findings are staged and their first span offered; a failure
//! is offered as it is. An offer is a [`PatrolFire`] for the cycle, which
//! runs it as a round under the same turn lock and failure policy as
//! message rounds. A patrol whose last fire is still queued or running
//! skips its tick (rounds never pile up).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use std::time::Duration;

use hoop_core::limits::PATROL_STDERR_KEEP_BYTES;

use crate::constants::{PATROL_DRAIN, PATROL_OUTPUT_CAP_BYTES};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::mpsc::UnboundedSender;
use tokio::time::{Instant, sleep_until};

use crate::patrol::{self, Patrol, PrescanRun, Verdict};

/// The environment variable naming the patrol, for its prescan.
pub const PATROL_ENV: &str = "HOOP_PATROL";
/// The committed cursor file the prescan reads (it may not exist yet).
pub const CURSOR_ENV: &str = "HOOP_PATROL_CURSOR";
/// Where the prescan writes the cursor its findings reach.
pub const CURSOR_NEXT_ENV: &str = "HOOP_PATROL_CURSOR_NEXT";

/// One patrol round for the cycle to run.
#[derive(Debug, Clone)]
pub struct PatrolFire {
    pub name: String,
    /// The turn's user message (header, patrol line, brief body).
    pub message: String,
    /// The round carries staged findings (its span is recorded in the
    /// patrol's state and settled after the turn); false for a failed
    /// prescan's round (a broken prescan's proposal is never trusted).
    pub commit_cursor: bool,
    /// The patrol's state directory.
    pub dir: PathBuf,
}

/// Patrols with a fire queued or running; the cycle removes a name when
/// its round is over.
pub type InFlight = Arc<Mutex<BTreeSet<String>>>;

fn in_flight_has(f: &InFlight, name: &str) -> bool {
    f.lock().unwrap_or_else(|e| e.into_inner()).contains(name)
}

/// Run every patrol's timer until the task is aborted.
pub async fn run(
    home_dir: PathBuf,
    env: BTreeMap<String, String>,
    patrols: Vec<Patrol>,
    tx: UnboundedSender<PatrolFire>,
    in_flight: InFlight,
    skip_after: Duration,
) {
    let loops = patrols.into_iter().map(|p| {
        let (home_dir, env, tx, in_flight) =
            (home_dir.clone(), env.clone(), tx.clone(), in_flight.clone());
        async move { tick_loop(&home_dir, &env, p, tx, in_flight, skip_after).await }
    });
    futures_util::future::join_all(loops).await;
}

async fn tick_loop(
    home_dir: &Path,
    env: &BTreeMap<String, String>,
    p: Patrol,
    tx: UnboundedSender<PatrolFire>,
    in_flight: InFlight,
    skip_after: Duration,
) {
    let dir = patrol::patrol_dir(home_dir, &p.name);
    let mut next = Instant::now() + p.interval;
    loop {
        sleep_until(next).await;
        next = (next + p.interval).max(Instant::now());
        if in_flight_has(&in_flight, &p.name) {
            tracing::debug!(patrol = %p.name, "🔭 patrol round still pending; tick skipped");
            continue;
        }
        if let Err(e) = std::fs::create_dir_all(&dir) {
            tracing::warn!(patrol = %p.name, error = %e, "patrol directory unusable");
        }
        let Some(fire) = tick(&p, &dir, env, skip_after).await else {
            continue;
        };
        in_flight
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(p.name.clone());
        if tx.send(fire).is_err() {
            return;
        }
    }
}

/// One tick: what the state or the prescan asks for, as a fire (`None`:
/// nothing to do this tick).
async fn tick(
    p: &Patrol,
    dir: &Path,
    env: &BTreeMap<String, String>,
    skip_after: Duration,
) -> Option<PatrolFire> {
    let mut st = match patrol::load_state(dir) {
        Ok(st) => st,
        Err(e) => {
            tracing::error!(patrol = %p.name, error = %e, "patrol state unreadable; this patrol waits until it is fixed or removed");
            return None;
        }
    };
    let now = hoop_core::clock::now_unix();
    let skip_secs = i64::try_from(skip_after.as_secs()).unwrap_or(i64::MAX);
    let (mut next, skipped) = patrol::plan_tick(&mut st, now, skip_secs);
    if let Some(k) = &skipped {
        tracing::warn!(patrol = %p.name, span = %k.describe(), "⏭️ patrol findings skipped: their rounds kept failing; named in every brief until a round lands");
    }
    if next == patrol::Next::Prescan {
        let run = prescan(p, dir, env).await;
        let verdict = patrol::judge(&run, p.quiet_exit);
        let cursor_next = patrol::take_cursor_next(dir);
        match verdict {
            Verdict::Quiet => {
                tracing::debug!(patrol = %p.name, "🔭 patrol quiet: no round, no model call");
                return None;
            }
            Verdict::Failed(why) => {
                // A broken prescan's cursor proposal is not trusted.
                tracing::warn!(patrol = %p.name, failure = %why, "🔭 patrol prescan failed; waking the agent with the failure");
                let body = patrol::brief_body(p, &Verdict::Failed(why), &st.skipped)?;
                return Some(PatrolFire {
                    name: p.name.clone(),
                    message: patrol::patrol_message(p, &body, false),
                    commit_cursor: false,
                    dir: dir.to_path_buf(),
                });
            }
            Verdict::Found(out) => {
                let findings = patrol::findings(&out);
                tracing::info!(patrol = %p.name, findings = findings.len(), "🔭 patrol found something; staged, waking the agent with a brief");
                st.staged = Some(patrol::Staged {
                    findings,
                    cursor_next,
                    delivered: 0,
                    staged_at: now,
                    attempt: None,
                });
                next = patrol::plan_tick(&mut st, now, skip_secs).0;
            }
        }
    }
    match next {
        patrol::Next::Commit => {
            // Every staged finding was delivered or skipped.
            if let Some(staged) = st.staged.take()
                && let Some(c) = staged.cursor_next
                && let Err(e) = patrol::write_cursor(dir, &c)
            {
                tracing::warn!(patrol = %p.name, error = %e, "patrol cursor not committed");
                return None;
            }
            tracing::info!(patrol = %p.name, "📌 patrol cursor committed");
            save(p, dir, &st);
            None
        }
        patrol::Next::Offer { from, to, again } => {
            let staged = st.staged.as_ref()?;
            let (body, to) = patrol::findings_brief(p, &staged.findings, from, to, &st.skipped);
            let of = staged.findings.len();
            // The span is recorded before the fire: a re-offer carries the
            // same findings even if the next daemon runs it.
            patrol::begin(&mut st, from, to, 0);
            if let Some(a) = st.staged.as_mut().and_then(|s| s.attempt.as_mut()) {
                a.running_pid = None;
            }
            if !save(p, dir, &st) {
                return None;
            }
            if again {
                tracing::info!(patrol = %p.name, from = from + 1, to, of, "🔭 patrol findings offered again (the last round did not land)");
            }
            Some(PatrolFire {
                name: p.name.clone(),
                message: patrol::patrol_message(p, &body, again),
                commit_cursor: true,
                dir: dir.to_path_buf(),
            })
        }
        patrol::Next::Prescan => None,
    }
}

/// Write the patrol's state; false (logged) when it could not be written.
fn save(p: &Patrol, dir: &Path, st: &patrol::PatrolState) -> bool {
    match patrol::save_state(dir, st) {
        Ok(()) => true,
        Err(e) => {
            tracing::warn!(patrol = %p.name, error = %e, "patrol state not written; nothing is offered this tick");
            false
        }
    }
}

/// Run the prescan: argv without a shell, in the patrol's directory, with
/// the agent's environment plus the patrol variables, in its own process
/// group. The run ends when the prescan EXITS (not when its stdout closes:
/// a child it left behind may hold it), bounded by its timeout; then its
/// group and tree are stopped and the pipes read at most [`PATROL_DRAIN`]
/// longer. Output past [`PATROL_OUTPUT_CAP_BYTES`] fails the run.
async fn prescan(p: &Patrol, dir: &Path, env: &BTreeMap<String, String>) -> PrescanRun {
    let mut cmd = tokio::process::Command::new(&p.prescan[0]);
    cmd.args(&p.prescan[1..])
        .current_dir(dir)
        .envs(env)
        .env(PATROL_ENV, &p.name)
        .env(CURSOR_ENV, dir.join(patrol::CURSOR_FILE))
        .env(CURSOR_NEXT_ENV, dir.join(patrol::CURSOR_NEXT_FILE))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => return PrescanRun::NotStarted(e.to_string()),
    };
    let pid = child.id();
    let _own = pid.map(crate::proctree::own);
    let (Some(out), Some(err)) = (child.stdout.take(), child.stderr.take()) else {
        return PrescanRun::NotStarted("no pipes".into());
    };
    let stdout = tokio::spawn(read_bounded(out, PATROL_OUTPUT_CAP_BYTES + 1, false));
    let stderr = tokio::spawn(read_bounded(err, PATROL_STDERR_KEEP_BYTES, true));
    let status = tokio::time::timeout(p.timeout, child.wait()).await;
    // Over either way: whatever it left running goes (its group, its tree).
    if let Some(pid) = pid {
        if let Ok(raw) = i32::try_from(pid) {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(raw),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        crate::proctree::stop_tree(pid, Duration::ZERO).await;
    }
    let _ = child.wait().await;
    let drained = |h: tokio::task::JoinHandle<Vec<u8>>| async move {
        match tokio::time::timeout(PATROL_DRAIN, h).await {
            Ok(Ok(b)) => b,
            _ => Vec::new(),
        }
    };
    let (stdout, stderr) = (drained(stdout).await, drained(stderr).await);
    match status {
        Err(_) => PrescanRun::TimedOut { after: p.timeout },
        Ok(_) if stdout.len() > PATROL_OUTPUT_CAP_BYTES => PrescanRun::Exited {
            code: Some(1),
            stdout: Vec::new(),
            stderr: format!(
                "the prescan printed more than {PATROL_OUTPUT_CAP_BYTES} bytes; print at most that much per run (the rest waits for the next run through the cursor)"
            )
            .into_bytes(),
        },
        Ok(s) => PrescanRun::Exited {
            code: s.ok().and_then(|s| s.code()),
            stdout,
            stderr,
        },
    }
}

/// Read a pipe to its end, keeping at most `keep` bytes (the first ones,
/// or the last ones with `tail`); the rest is read and dropped so the child
/// never blocks on a full pipe.
async fn read_bounded(mut r: impl AsyncRead + Unpin, keep: usize, tail: bool) -> Vec<u8> {
    let mut kept = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        let n = match r.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if tail {
            kept.extend_from_slice(&buf[..n]);
            let over = kept.len().saturating_sub(keep);
            kept.drain(..over);
        } else if kept.len() < keep {
            let take = n.min(keep - kept.len());
            kept.extend_from_slice(&buf[..take]);
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn patrol(script: &str, timeout: Duration) -> Patrol {
        Patrol {
            name: "p".into(),
            interval: Duration::from_secs(60),
            prescan: vec!["sh".into(), "-c".into(), script.into()],
            timeout,
            quiet_exit: 3,
            brief: "b".into(),
        }
    }

    #[tokio::test]
    async fn the_prescan_gets_its_cursor_paths_and_is_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let env = BTreeMap::new();
        let p = patrol(
            "echo \"$HOOP_PATROL $HOOP_PATROL_CURSOR\"; echo 7 > \"$HOOP_PATROL_CURSOR_NEXT\"",
            Duration::from_secs(30),
        );
        let run = prescan(&p, dir.path(), &env).await;
        let want = format!("p {}\n", dir.path().join("cursor").display());
        assert_eq!(
            run,
            PrescanRun::Exited {
                code: Some(0),
                stdout: want.into_bytes(),
                stderr: vec![]
            }
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("cursor.next")).unwrap(),
            "7\n"
        );
        // Output past the cap fails the run (never a silent cut).
        let p = patrol(
            &format!("head -c {} /dev/zero; exit 0", PATROL_OUTPUT_CAP_BYTES + 10),
            Duration::from_secs(30),
        );
        match prescan(&p, dir.path(), &env).await {
            PrescanRun::Exited {
                code: Some(1),
                stdout,
                stderr,
            } => {
                assert!(stdout.is_empty());
                assert!(String::from_utf8_lossy(&stderr).contains("printed more than"));
            }
            other => panic!("{other:?}"),
        }
        // Exactly the cap is fine.
        let p = patrol(
            &format!("head -c {PATROL_OUTPUT_CAP_BYTES} /dev/zero; exit 0"),
            Duration::from_secs(30),
        );
        match prescan(&p, dir.path(), &env).await {
            PrescanRun::Exited {
                code: Some(0),
                stdout,
                ..
            } => {
                assert_eq!(stdout.len(), PATROL_OUTPUT_CAP_BYTES)
            }
            other => panic!("{other:?}"),
        }
        // A prescan that exits 0 but leaves a child holding its stdout is
        // judged by its exit, with its findings; the child is stopped.
        let p = patrol(
            "echo 'ticket 9 is new'; sleep 602.5 & exit 0",
            Duration::from_secs(20),
        );
        assert_eq!(
            prescan(&p, dir.path(), &env).await,
            PrescanRun::Exited {
                code: Some(0),
                stdout: b"ticket 9 is new\n".to_vec(),
                stderr: vec![]
            }
        );
        // A timeout kills the whole group (the sleeping grandchild too).
        let p = patrol("sleep 30 & sleep 30; wait", Duration::from_millis(300));
        assert_eq!(
            prescan(&p, dir.path(), &env).await,
            PrescanRun::TimedOut {
                after: Duration::from_millis(300)
            }
        );
        let p = Patrol {
            prescan: vec!["/nonexistent/scan".into()],
            ..patrol("", Duration::from_secs(1))
        };
        assert!(matches!(
            prescan(&p, dir.path(), &env).await,
            PrescanRun::NotStarted(_)
        ));
    }

    #[tokio::test]
    async fn stderr_keeps_its_tail() {
        let data: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        let got = read_bounded(&data[..], 100, true).await;
        assert_eq!(got, data[data.len() - 100..]);
        let got = read_bounded(&data[..], 100, false).await;
        assert_eq!(got, data[..100]);
    }
}
