//! The patrol ticker: one timer per declared patrol. Each tick runs the
//! prescan (no model call), and [`crate::patrol::judge`] decides: a quiet
//! exit ends the tick with one debug line; findings or a failure become a
//! [`PatrolFire`] for the cycle, which runs it as a round under the same
//! turn lock and failure policy as message rounds. A patrol whose last fire
//! is still queued or running skips its tick (rounds never pile up).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use hoop_core::limits::{BRIEF_BODY_CAP_BYTES, PATROL_STDERR_KEEP_BYTES};
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
    /// Move the patrol cursor if the round lands (findings only: a broken
    /// prescan's proposal is never trusted).
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
) {
    let loops = patrols.into_iter().map(|p| {
        let (home_dir, env, tx, in_flight) =
            (home_dir.clone(), env.clone(), tx.clone(), in_flight.clone());
        async move { tick_loop(&home_dir, &env, p, tx, in_flight).await }
    });
    futures_util::future::join_all(loops).await;
}

async fn tick_loop(
    home_dir: &Path,
    env: &BTreeMap<String, String>,
    p: Patrol,
    tx: UnboundedSender<PatrolFire>,
    in_flight: InFlight,
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
        let leftover = patrol::take_leftover(&dir);
        let run = prescan(&p, &dir, env).await;
        let verdict = patrol::judge(&run, p.quiet_exit);
        let (commit_cursor, reoffered) = match &verdict {
            Verdict::Quiet => {
                patrol::take_leftover(&dir);
                tracing::debug!(patrol = %p.name, "🔭 patrol quiet: no round, no model call");
                continue;
            }
            Verdict::Found(_) => {
                tracing::info!(
                    patrol = %p.name,
                    reoffered = leftover,
                    "🔭 patrol found something; waking the agent with a brief{}",
                    if leftover {
                        " (offered again: the last round did not land)"
                    } else {
                        ""
                    }
                );
                (true, leftover)
            }
            Verdict::Failed(why) => {
                // A broken prescan's cursor proposal is not trusted.
                patrol::take_leftover(&dir);
                tracing::warn!(patrol = %p.name, failure = %why, "🔭 patrol prescan failed; waking the agent with the failure");
                (false, false)
            }
        };
        let Some(body) = patrol::brief_body(&p, &verdict) else {
            continue;
        };
        let fire = PatrolFire {
            name: p.name.clone(),
            message: patrol::patrol_message(&p, &body, reoffered),
            commit_cursor,
            dir: dir.clone(),
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

/// Run the prescan: argv without a shell, in the patrol's directory, with
/// the agent's environment plus the patrol variables, in its own process
/// group (a timeout kills the whole group), output read bounded.
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
    let work = async {
        let (stdout, stderr, status) = tokio::join!(
            read_bounded(out, BRIEF_BODY_CAP_BYTES + 1, false),
            read_bounded(err, PATROL_STDERR_KEEP_BYTES, true),
            child.wait()
        );
        PrescanRun::Exited {
            code: status.ok().and_then(|s| s.code()),
            stdout,
            stderr,
        }
    };
    match tokio::time::timeout(p.timeout, work).await {
        Ok(run) => run,
        Err(_) => {
            if let Some(pid) = pid.and_then(|p| i32::try_from(p).ok()) {
                let _ = nix::sys::signal::killpg(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
            let _ = child.wait().await;
            PrescanRun::TimedOut { after: p.timeout }
        }
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
        // Output past the cap is read and dropped.
        let p = patrol("head -c 100000 /dev/zero; exit 0", Duration::from_secs(30));
        match prescan(&p, dir.path(), &env).await {
            PrescanRun::Exited { stdout, .. } => assert_eq!(stdout.len(), BRIEF_BODY_CAP_BYTES + 1),
            other => panic!("{other:?}"),
        }
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
