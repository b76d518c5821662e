//! One running agent process: spawn it in its own process group, write
//! stream-json lines to its stdin, read its stdout line by line until a
//! `result` (or EOF, or a deadline), keep the tail of its stderr, and end it
//! — closing stdin first, then its whole process tree (the CLI, the tool
//! commands it runs in groups of their own, what they started) through
//! [`crate::proctree`]: SIGTERM, SIGKILL after a grace period; and the
//! orphans it left to the daemon, a child subreaper (workers excepted).

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout};
use tokio::time::Instant;

use super::classify::ExitInfo;
use super::stream::{Line, TurnLog, parse_line};

/// Keep at most this much of a child's stderr (the tail): enough for any
/// error message, bounded for a chatty child.
pub const STDERR_KEEP_BYTES: usize = 64 * 1024;
/// Log at most this much of a garbage stdout line.
pub const GARBAGE_LOG_CHARS: usize = 200;

/// Everything needed to start the agent. `Debug` hides secret env values.
#[derive(Clone, PartialEq, Eq)]
pub struct SpawnSpec {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    /// Variables removed from what the child inherits (before `env` is set).
    pub unset: Vec<String>,
    pub cwd: PathBuf,
}

impl std::fmt::Debug for SpawnSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let env: Vec<(&str, &str)> = self
            .env
            .iter()
            .map(|(k, v)| {
                let shown = if super::is_secret_env(k) {
                    "<redacted>"
                } else {
                    v.as_str()
                };
                (k.as_str(), shown)
            })
            .collect();
        f.debug_struct("SpawnSpec")
            .field("program", &self.program)
            .field("args", &self.args)
            .field("env", &env)
            .field("unset", &self.unset)
            .field("cwd", &self.cwd)
            .finish()
    }
}

/// How reading one turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadEnd {
    /// The `result` line came.
    Result,
    /// stdout closed first.
    Eof,
    /// The deadline passed first.
    Deadline,
}

/// The kept tail of a child's stderr and how many bytes it wrote in all,
/// so a turn can take only what was written since it started.
#[derive(Debug, Default)]
struct StderrTail {
    /// The last [`STDERR_KEEP_BYTES`] at most.
    tail: Vec<u8>,
    /// Bytes written since the process started.
    total: u64,
}

impl StderrTail {
    fn push(&mut self, chunk: &[u8]) {
        self.tail.extend_from_slice(chunk);
        self.total += chunk.len() as u64;
        if self.tail.len() > STDERR_KEEP_BYTES {
            let cut = self.tail.len() - STDERR_KEEP_BYTES;
            self.tail.drain(..cut);
        }
    }
    /// What was written after the first `mark` bytes (as much as is kept).
    fn since(&self, mark: u64) -> &[u8] {
        let kept_from = self.total - self.tail.len() as u64;
        let skip = mark.saturating_sub(kept_from).min(self.tail.len() as u64) as usize;
        &self.tail[skip..]
    }
}

/// A child's stderr pipe and what was read from it. Reads happen only under
/// the tail's lock, so a caller that drains the pipe before taking a mark
/// sees every byte the child wrote before that moment: none can be in
/// flight between the pipe and the tail (a background reader that had read
/// bytes but not yet stored them let an earlier turn's notice be judged as
/// a later turn's).
struct StderrPipe {
    tail: Mutex<StderrTail>,
    pipe: Option<tokio::net::unix::pipe::Receiver>,
}

impl StderrPipe {
    fn lock(&self) -> std::sync::MutexGuard<'_, StderrTail> {
        self.tail.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Move whatever the pipe holds right now into the tail and return the
    /// locked tail. `open` is false once the pipe reached EOF or failed.
    fn drain(&self) -> (std::sync::MutexGuard<'_, StderrTail>, bool) {
        let mut t = self.lock();
        let Some(rx) = &self.pipe else {
            return (t, false);
        };
        let mut chunk = [0u8; 4096];
        loop {
            match rx.try_read(&mut chunk) {
                Ok(0) => return (t, false),
                Ok(n) => t.push(&chunk[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return (t, true),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => return (t, false),
            }
        }
    }
}

pub struct AgentProcess {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    stderr: Arc<StderrPipe>,
    pid: Option<u32>,
    exit: Option<ExitInfo>,
    /// Registered as the daemon's own child while it lives, so the orphan
    /// reaper never collects its exit status.
    _own: Option<crate::proctree::OwnChild>,
}

fn exit_info(s: std::process::ExitStatus) -> ExitInfo {
    use std::os::unix::process::ExitStatusExt;
    match (s.code(), s.signal()) {
        (Some(c), _) => ExitInfo::Code(c),
        (None, Some(sig)) => ExitInfo::Signal(sig),
        (None, None) => ExitInfo::Code(-1),
    }
}

impl AgentProcess {
    pub fn spawn(spec: &SpawnSpec) -> std::io::Result<AgentProcess> {
        std::fs::create_dir_all(&spec.cwd)?;
        let mut cmd = tokio::process::Command::new(&spec.program);
        for k in &spec.unset {
            cmd.env_remove(k);
        }
        cmd.args(&spec.args)
            .envs(spec.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .current_dir(&spec.cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        let mut child = cmd.spawn()?;
        let pid = child.id();
        let own = pid.map(crate::proctree::own);
        let stdin = child.stdin.take();
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| std::io::Error::other("child has no stdout"))?;
        // The pipe is kept drained in the background (a chatty child must
        // never block on a full pipe) and drained again on demand.
        let pipe = match child.stderr.take() {
            Some(err) => Some(tokio::net::unix::pipe::Receiver::from_owned_fd(
                err.into_owned_fd()?,
            )?),
            None => None,
        };
        let stderr_buf = Arc::new(StderrPipe {
            tail: Mutex::new(StderrTail::default()),
            pipe,
        });
        if stderr_buf.pipe.is_some() {
            let buf = stderr_buf.clone();
            tokio::spawn(async move {
                while let Some(rx) = &buf.pipe {
                    if rx.readable().await.is_err() || !buf.drain().1 {
                        break;
                    }
                }
            });
        }
        tracing::debug!(pid, program = %spec.program.display(), "agent process started");
        Ok(AgentProcess {
            child,
            stdin,
            stdout: BufReader::new(stdout),
            stderr: stderr_buf,
            pid,
            exit: None,
            _own: own,
        })
    }

    pub fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// Write one line (a newline is added).
    pub async fn send(&mut self, line: &str) -> std::io::Result<()> {
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::BrokenPipe, "stdin closed"))?;
        stdin.write_all(line.as_bytes()).await?;
        stdin.write_all(b"\n").await?;
        stdin.flush().await
    }

    /// Close stdin: the CLI finishes what it has and exits.
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// The kept tail of stderr.
    pub fn stderr_text(&self) -> String {
        self.stderr_since(0)
    }

    /// A mark for [`AgentProcess::stderr_since`]: the stderr bytes written
    /// so far. A persistent process takes one as each turn starts, so a
    /// turn is judged by its own stderr only, never by a mark an earlier
    /// turn left.
    pub fn stderr_mark(&self) -> u64 {
        self.stderr.drain().0.total
    }

    /// The stderr written after `mark` (as much of it as is kept).
    pub fn stderr_since(&self, mark: u64) -> String {
        let (t, _) = self.stderr.drain();
        String::from_utf8_lossy(t.since(mark)).into_owned()
    }

    /// Read stdout lines into `log` until a `result`, EOF or `deadline`.
    pub async fn read_turn(&mut self, log: &mut TurnLog, deadline: Instant) -> ReadEnd {
        let mut buf = Vec::new();
        loop {
            buf.clear();
            let read = tokio::time::timeout_at(deadline, self.stdout.read_until(b'\n', &mut buf));
            match read.await {
                Err(_) => return ReadEnd::Deadline,
                Ok(Err(e)) => {
                    tracing::warn!(error = %e, "reading agent stdout failed");
                    return ReadEnd::Eof;
                }
                Ok(Ok(0)) => return ReadEnd::Eof,
                Ok(Ok(_)) => {
                    let text = String::from_utf8_lossy(&buf);
                    let text = text.trim_end_matches(['\n', '\r']);
                    let line = parse_line(text);
                    if line == Line::Garbage {
                        if !text.trim().is_empty() {
                            let shown: String = text.chars().take(GARBAGE_LOG_CHARS).collect();
                            tracing::warn!(line = %shown, "agent printed a line that is not JSON; skipped");
                        }
                        if text.trim().is_empty() {
                            continue;
                        }
                    }
                    if log.push(line) {
                        return ReadEnd::Result;
                    }
                }
            }
        }
    }

    /// The exit status if the process has ended (non-blocking).
    pub fn try_exit(&mut self) -> Option<ExitInfo> {
        if self.exit.is_none()
            && let Ok(Some(s)) = self.child.try_wait()
        {
            self.exit = Some(exit_info(s));
        }
        self.exit
    }

    /// Wait for the exit up to `within`; `None` if it is still running.
    pub async fn wait_exit(&mut self, within: Duration) -> Option<ExitInfo> {
        if let Some(e) = self.exit {
            return Some(e);
        }
        match tokio::time::timeout(within, self.child.wait()).await {
            Ok(Ok(s)) => {
                self.exit = Some(exit_info(s));
                self.exit
            }
            _ => None,
        }
    }

    fn signal_group(&self, sig: Signal) {
        if let Some(pid) = self.pid.and_then(|p| i32::try_from(p).ok()) {
            let _ = killpg(Pid::from_raw(pid), sig);
        }
    }

    /// Stop the whole tree — the CLI and every process below it, whatever
    /// its group — with SIGTERM, SIGKILL after `grace`; then what is left in
    /// its group and the orphans it left to the daemon (workers excepted:
    /// they outlive turns by design). Returns the CLI's exit.
    pub async fn kill(&mut self, grace: Duration) -> ExitInfo {
        let exit = match self.try_exit() {
            Some(e) => e,
            None => {
                match self.pid {
                    Some(pid) => {
                        crate::proctree::stop_tree(pid, grace).await;
                    }
                    None => {
                        let _ = self.child.start_kill();
                    }
                }
                match self.wait_exit(grace).await {
                    Some(e) => e,
                    None => {
                        let _ = self.child.start_kill();
                        self.wait_exit(grace)
                            .await
                            .unwrap_or(ExitInfo::Signal(Signal::SIGKILL as i32))
                    }
                }
            }
        };
        // Tool children the CLI left behind in its group go too, and so do
        // the orphans its tree left to the daemon.
        self.signal_group(Signal::SIGKILL);
        let stopped = crate::proctree::stop_adopted(crate::worker::is_any_supervisor, grace).await;
        if !stopped.is_empty() {
            tracing::info!(pids = ?stopped, "stopped processes the agent left behind");
        }
        exit
    }

    /// Close stdin and let the process exit by itself within `grace`, else
    /// kill it.
    pub async fn shut(&mut self, grace: Duration) -> ExitInfo {
        self.close_stdin();
        match self.wait_exit(grace).await {
            Some(e) => e,
            None => self.kill(grace).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stderr_since_a_mark_is_what_came_after_it() {
        let mut t = StderrTail::default();
        t.push(b"old: please run /login\n");
        let mark = t.total;
        assert_eq!(t.since(mark), b"");
        t.push(b"new crash\n");
        assert_eq!(t.since(mark), b"new crash\n");
        assert_eq!(t.since(0), b"old: please run /login\nnew crash\n");
        // Past the kept tail: only what is kept, never a panic.
        let big = vec![b'x'; STDERR_KEEP_BYTES + 10];
        t.push(&big);
        assert_eq!(t.tail.len(), STDERR_KEEP_BYTES);
        assert_eq!(t.since(0).len(), STDERR_KEEP_BYTES);
        assert_eq!(t.since(mark).len(), STDERR_KEEP_BYTES);
        assert_eq!(t.since(t.total), b"");
        assert_eq!(t.since(t.total + 5), b"");
    }

    /// A mark taken right after a child's stdout line counts every stderr
    /// byte the child wrote before that line, every time: a turn is never
    /// judged by an earlier turn's stderr.
    #[tokio::test]
    async fn a_mark_counts_all_stderr_written_before_the_last_stdout_line() {
        let dir = tempfile::tempdir().unwrap();
        let spec = SpawnSpec {
            program: "/bin/sh".into(),
            args: vec![
                "-c".into(),
                r#"while read line; do printf 'notice\n' >&2; echo '{"type":"result","is_error":false}'; done"#
                    .into(),
            ],
            env: vec![],
            unset: vec![],
            cwd: dir.path().to_path_buf(),
        };
        let mut p = AgentProcess::spawn(&spec).unwrap();
        for turn in 1..=200u64 {
            p.send("{}").await.unwrap();
            let mut log = TurnLog::default();
            let end = p
                .read_turn(&mut log, Instant::now() + Duration::from_secs(20))
                .await;
            assert_eq!(end, ReadEnd::Result, "turn {turn}");
            assert_eq!(p.stderr_mark(), turn * 7, "turn {turn}");
        }
        p.close_stdin();
        p.wait_exit(Duration::from_secs(20)).await;
    }

    /// The child does not inherit a variable the spec removes, even one the
    /// daemon's own environment has (`HOME` is always there).
    #[tokio::test]
    async fn unset_variables_are_not_inherited() {
        assert!(std::env::var_os("HOME").is_some());
        let dir = tempfile::tempdir().unwrap();
        let spec = SpawnSpec {
            program: "/bin/sh".into(),
            args: vec![
                "-c".into(),
                r#"echo "home=${HOME-unset} set=${HOOP_TEST_SET-unset}" >&2"#.into(),
            ],
            env: vec![("HOOP_TEST_SET".into(), "yes".into())],
            unset: vec!["HOME".into()],
            cwd: dir.path().to_path_buf(),
        };
        let mut p = AgentProcess::spawn(&spec).unwrap();
        let mut log = TurnLog::default();
        let end = p
            .read_turn(&mut log, Instant::now() + Duration::from_secs(20))
            .await;
        assert_eq!(end, ReadEnd::Eof);
        assert_eq!(
            p.wait_exit(Duration::from_secs(20)).await,
            Some(ExitInfo::Code(0))
        );
        // Read on demand: nothing the child wrote before it exited can lag.
        assert_eq!(p.stderr_text().trim(), "home=unset set=yes");
    }
}
