//! Codex delivery (`--client codex`): a Codex window has no Monitor to read
//! lines from, so each event is handed to the `codex` CLI
//! (`codex queue --thread <id> --message <text>` by default). Accepted is
//! not received:
//!
//! 1. the event is written to the pending store FIRST
//!    (`<dir>/codex/pending/<id>.json`, atomically), then handed to the
//!    command with a 15 s timeout; a failure leaves it pending and it is
//!    handed again next round;
//! 2. it stays pending until the receiver runs `hoop bridge ack <id>`, which
//!    creates `<dir>/codex/receipts/<id>` exclusively (a second ack of the
//!    same id is refused: a receipt is made once; it means "read", nothing
//!    more);
//! 3. handed over but without a receipt for 120 s → one alert line;
//! 4. `hoop bridge handover` switches the thread only after a handover
//!    summary exists and was queued to the new thread; otherwise exit 78
//!    and the old thread stays (never a bare thread).
//!
//! Each window has its own store (`<dir>/codex/windows/<session>/`: its
//! pending events, receipts and thread), so two Codex windows sharing a
//! bridge directory never hand each other's events over or follow each
//! other's handover. [`Store::new`] is the machine's view: it lists every
//! window's pending events (the status line's count) and `ack` finds the
//! window that holds the id.
//!
//! Pure cores: [`next_action`], [`event_id`], [`command_argv`]; the rest
//! moves files and runs the command.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::time::Duration;

use hoop_core::fsutil::{WriteOptions, write_atomic, write_json_atomic};
use serde::{Deserialize, Serialize};

use crate::constants::{CODEX_DELIVER_TIMEOUT, CODEX_RECEIPT_ALERT};
use crate::detect::{Event, Kind};

/// The default `codex` command; `{thread}` and `{text}` are replaced per
/// argument (no shell). Checked against `@openai/codex` 0.171.0's
/// `codex queue --help`: `--thread <THREAD> --message <TEXT>`.
pub const DEFAULT_COMMAND: &str = "codex queue --thread {thread} --message {text}";

#[derive(Debug, thiserror::Error)]
pub enum CodexError {
    #[error("{0:?} is not an event id")]
    BadId(String),
    #[error("no pending event {0}")]
    Unknown(String),
    #[error("event {0} was already acknowledged (a receipt is made once)")]
    Replayed(String),
    #[error("no thread: give --thread or run hoop bridge handover")]
    NoThread,
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> CodexError + '_ {
    move |source| CodexError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// One event on its way to a Codex thread.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pending {
    pub id: String,
    /// The line as the watcher prints it.
    pub line: String,
    pub created_at: i64,
    /// When the command accepted it (Unix seconds).
    #[serde(default)]
    pub delivered_at: Option<i64>,
    #[serde(default)]
    pub alerted: bool,
}

/// What to do with one pending event now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Read: forget it.
    Done,
    /// Not accepted yet: hand it to the command.
    Deliver,
    /// Accepted 120 s ago or more, no receipt: say so once.
    Alert,
    Wait,
}

pub fn next_action(p: &Pending, receipt: bool, now: i64) -> Action {
    if receipt {
        return Action::Done;
    }
    match p.delivered_at {
        None => Action::Deliver,
        Some(t) if !p.alerted && now - t >= CODEX_RECEIPT_ALERT.as_secs() as i64 => Action::Alert,
        Some(_) => Action::Wait,
    }
}

/// The id of an event worth delivering (messages and cards; notices are
/// the watcher's own and only printed).
pub fn event_id(e: &Event) -> Option<String> {
    match (e.kind, e.message_id) {
        (Kind::Notice, _) => None,
        (_, Some(m)) => Some(format!("m{m}")),
        (Kind::TaskAssigned, None) => Some(format!("t{}", card_of(e)?)),
        (Kind::TaskUpdated, None) => Some(format!("u{}-{}", card_of(e)?, slug(&e.summary))),
        _ => None,
    }
}

fn card_of(e: &Event) -> Option<String> {
    let rest = e.summary.strip_prefix("card #")?;
    Some(rest.chars().take_while(|c| c.is_ascii_digit()).collect())
}

fn slug(s: &str) -> String {
    s.rsplit(' ')
        .next()
        .unwrap_or("")
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect()
}

/// Ids are file names: letters, digits, `-` only.
pub fn valid_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 64 && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
}

/// The command's argv: the template split on whitespace, `{thread}` and
/// `{text}` replaced inside each argument.
pub fn command_argv(template: &str, thread: &str, text: &str) -> Vec<String> {
    template
        .split_whitespace()
        .map(|a| a.replace("{thread}", thread).replace("{text}", text))
        .collect()
}

/// A store under `<dir>/codex/` (the machine's view) or
/// `<dir>/codex/windows/<session>/` (one window's).
#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
    /// The bridge directory (named in the ack hint).
    bridge_dir: PathBuf,
    /// One window's store; the machine's view also reads every window's.
    window: bool,
}

/// The outcome of handing one event to the command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Handed {
    Accepted,
    Refused(String),
}

impl Store {
    /// The machine's view of the bridge directory's stores.
    pub fn new(bridge_dir: &Path) -> Store {
        Store {
            dir: bridge_dir.join("codex"),
            bridge_dir: bridge_dir.to_path_buf(),
            window: false,
        }
    }

    /// One window's store (`session` is already a safe file name).
    pub fn for_window(bridge_dir: &Path, session: &str) -> Store {
        Store {
            dir: bridge_dir.join("codex").join("windows").join(session),
            bridge_dir: bridge_dir.to_path_buf(),
            window: true,
        }
    }

    /// The windows that have a store, by session.
    pub fn windows(bridge_dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(bridge_dir.join("codex").join("windows"))
            .map(|d| {
                d.filter_map(Result::ok)
                    .filter_map(|e| e.file_name().into_string().ok())
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    }

    /// This store and, for the machine's view, every window's.
    fn all(&self) -> Vec<Store> {
        let mut v = vec![self.clone()];
        if !self.window {
            v.extend(
                Store::windows(&self.bridge_dir)
                    .iter()
                    .map(|w| Store::for_window(&self.bridge_dir, w)),
            );
        }
        v
    }

    fn pending_path(&self, id: &str) -> PathBuf {
        self.dir.join("pending").join(format!("{id}.json"))
    }

    fn receipt_path(&self, id: &str) -> PathBuf {
        self.dir.join("receipts").join(id)
    }

    pub fn thread_path(&self) -> PathBuf {
        self.dir.join("thread")
    }

    /// The thread events go to (set by handover), if any.
    pub fn thread(&self) -> Option<String> {
        std::fs::read_to_string(self.thread_path())
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
    }

    pub fn set_thread(&self, thread: &str) -> Result<(), CodexError> {
        let p = self.thread_path();
        write_atomic(&p, thread.as_bytes(), WriteOptions::default()).map_err(io(&p))
    }

    /// Write an event to the pending store (before anything else is done
    /// with it). An id already pending or already received is left alone.
    pub fn put(&self, e: &Event, now: i64) -> Result<Option<String>, CodexError> {
        let Some(id) = event_id(e).filter(|i| valid_id(i)) else {
            return Ok(None);
        };
        let p = self.pending_path(&id);
        if p.exists() || self.receipt_path(&id).exists() {
            return Ok(Some(id));
        }
        let pending = Pending {
            id: id.clone(),
            line: e.line(),
            created_at: now,
            delivered_at: None,
            alerted: false,
        };
        write_json_atomic(&p, &pending, WriteOptions::SECRET).map_err(io(&p))?;
        Ok(Some(id))
    }

    /// Every pending event, oldest first (the machine's view: every
    /// window's).
    pub fn pending(&self) -> Result<Vec<Pending>, CodexError> {
        let mut out = vec![];
        for s in self.all() {
            out.extend(s.own_pending()?);
        }
        out.sort_by(|a: &Pending, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        Ok(out)
    }

    fn own_pending(&self) -> Result<Vec<Pending>, CodexError> {
        let d = self.dir.join("pending");
        let rd = match std::fs::read_dir(&d) {
            Ok(rd) => rd,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(vec![]),
            Err(e) => return Err(io(&d)(e)),
        };
        let mut out: Vec<Pending> = rd
            .filter_map(Result::ok)
            .filter_map(|f| std::fs::read(f.path()).ok())
            .filter_map(|b| serde_json::from_slice(&b).ok())
            .collect();
        out.sort_by(|a: &Pending, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        Ok(out)
    }

    fn save(&self, p: &Pending) -> Result<(), CodexError> {
        let path = self.pending_path(&p.id);
        write_json_atomic(&path, p, WriteOptions::SECRET).map_err(io(&path))
    }

    /// `hoop bridge ack <id>`: create the receipt exclusively.
    pub fn ack(&self, id: &str) -> Result<(), CodexError> {
        if !valid_id(id) {
            return Err(CodexError::BadId(id.into()));
        }
        // The window that holds the id (the machine's view finds it).
        let holder = self
            .all()
            .into_iter()
            .find(|s| s.pending_path(id).exists() || s.receipt_path(id).exists())
            .unwrap_or_else(|| self.clone());
        holder.ack_here(id)
    }

    fn ack_here(&self, id: &str) -> Result<(), CodexError> {
        let r = self.receipt_path(id);
        if !self.pending_path(id).exists() && !r.exists() {
            return Err(CodexError::Unknown(id.into()));
        }
        if let Some(parent) = r.parent() {
            std::fs::create_dir_all(parent).map_err(io(parent))?;
        }
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&r)
        {
            Ok(f) => f.sync_all().map_err(io(&r)),
            Err(e) if e.kind() == ErrorKind::AlreadyExists => Err(CodexError::Replayed(id.into())),
            Err(e) => Err(io(&r)(e)),
        }
    }

    /// One pass over the pending store: forget what was read, hand over
    /// what was not accepted yet, and return the alert lines due.
    pub async fn pump(
        &self,
        template: &str,
        fallback_thread: Option<&str>,
        now: i64,
        timeout: Duration,
    ) -> Result<Vec<Event>, CodexError> {
        let mut alerts = vec![];
        for mut p in self.own_pending()? {
            match next_action(&p, self.receipt_path(&p.id).exists(), now) {
                Action::Done => {
                    let path = self.pending_path(&p.id);
                    std::fs::remove_file(&path).map_err(io(&path))?;
                }
                Action::Deliver => {
                    let thread = self
                        .thread()
                        .or_else(|| fallback_thread.map(str::to_string))
                        .ok_or(CodexError::NoThread)?;
                    let text = format!(
                        "{} (when read: hoop bridge ack {} --state-dir {})",
                        p.line,
                        p.id,
                        shell_word(&self.bridge_dir.display().to_string())
                    );
                    match hand(&command_argv(template, &thread, &text), timeout).await {
                        Handed::Accepted => {
                            p.delivered_at = Some(now);
                            self.save(&p)?;
                        }
                        Handed::Refused(why) => {
                            tracing::warn!(id = %p.id, %why, "codex did not take the event; it stays pending");
                            let waited = now - p.created_at;
                            if !p.alerted && waited >= CODEX_RECEIPT_ALERT.as_secs() as i64 {
                                // Refused round after round: say so once,
                                // in the log and on the window's output.
                                p.alerted = true;
                                self.save(&p)?;
                                let text = format!(
                                    "event {} could not be handed to codex for {waited} s (thread {thread}): {why}",
                                    p.id
                                );
                                tracing::error!("{text}");
                                alerts.push(Event::notice("undelivered", text));
                            }
                        }
                    }
                }
                Action::Alert => {
                    p.alerted = true;
                    self.save(&p)?;
                    let alert = Event::notice(
                        "unreceived",
                        format!(
                            "event {} was handed to codex {} s ago and has no receipt yet",
                            p.id,
                            now - p.delivered_at.unwrap_or(now)
                        ),
                    );
                    // Nobody reads a Codex window's stdout: the alert goes
                    // to the window's own thread the same way, and the log.
                    tracing::warn!(id = %p.id, "{}", alert.summary);
                    if let Some(thread) = self
                        .thread()
                        .or_else(|| fallback_thread.map(str::to_string))
                    {
                        let text = format!(
                            "{} (when read: hoop bridge ack {} --state-dir {})",
                            alert.line(),
                            p.id,
                            shell_word(&self.bridge_dir.display().to_string())
                        );
                        if let Handed::Refused(why) =
                            hand(&command_argv(template, &thread, &text), timeout).await
                        {
                            tracing::error!(id = %p.id, %why, "the alert did not reach the codex thread");
                        }
                    }
                    alerts.push(alert);
                }
                Action::Wait => {}
            }
        }
        Ok(alerts)
    }
}

/// A path as one shell word (quoted when it needs to be), so the hint can be
/// pasted as it is.
fn shell_word(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+:@%".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// Run the command with a timeout; exit 0 = accepted.
pub async fn hand(argv: &[String], timeout: Duration) -> Handed {
    let Some((prog, args)) = argv.split_first() else {
        return Handed::Refused("empty command".into());
    };
    // Its own process group: a command that times out is killed with every
    // child it started (a wrapper script's `codex` would outlive it).
    let child = tokio::process::Command::new(prog)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn();
    let child = match child {
        Ok(c) => c,
        Err(e) => return Handed::Refused(format!("cannot run {prog}: {e}")),
    };
    let group = child.id().and_then(|p| i32::try_from(p).ok());
    match tokio::time::timeout(timeout, child.wait_with_output()).await {
        Err(_) => {
            if let Some(g) = group {
                let _ = nix::sys::signal::killpg(
                    nix::unistd::Pid::from_raw(g),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
            Handed::Refused(format!(
                "{prog} did not answer within {} s",
                timeout.as_secs_f32()
            ))
        }
        Ok(Err(e)) => Handed::Refused(e.to_string()),
        Ok(Ok(o)) if o.status.success() => Handed::Accepted,
        Ok(Ok(o)) => Handed::Refused(format!(
            "{prog} exited {}: {}",
            o.status,
            String::from_utf8_lossy(&o.stderr)
                .chars()
                .take(300)
                .collect::<String>()
        )),
    }
}

/// The default timeout of one hand-over.
pub const fn default_timeout() -> Duration {
    CODEX_DELIVER_TIMEOUT
}

/// Why a thread switch did not happen (the old thread stays).
#[derive(Debug, thiserror::Error)]
pub enum HandoverError {
    #[error("no handover summary: {0}; the thread was not switched")]
    NoSummary(String),
    #[error("the new thread did not take the handover summary: {0}; the thread was not switched")]
    NotQueued(String),
    #[error(transparent)]
    Store(#[from] CodexError),
}

/// Switch events to thread `to`, but only once `summary` exists and the
/// new thread has accepted it as its first message: never a bare thread.
pub async fn handover(
    store: &Store,
    template: &str,
    to: &str,
    summary: Result<String, String>,
    timeout: Duration,
) -> Result<(), HandoverError> {
    let summary = summary.map_err(HandoverError::NoSummary)?;
    if summary.trim().is_empty() {
        return Err(HandoverError::NoSummary("the summary is empty".into()));
    }
    let text = format!(
        "Handover summary from the previous thread:\n{}",
        summary.trim()
    );
    match hand(&command_argv(template, to, &text), timeout).await {
        Handed::Accepted => Ok(store.set_thread(to)?),
        Handed::Refused(why) => Err(HandoverError::NotQueued(why)),
    }
}

/// A summary produced by a command (its standard output); a failure or an
/// empty output is no summary.
pub async fn summary_from_command(argv: &[String], timeout: Duration) -> Result<String, String> {
    let Some((prog, args)) = argv.split_first() else {
        return Err("empty summary command".into());
    };
    let child = tokio::process::Command::new(prog)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot run {prog}: {e}"))?;
    match tokio::time::timeout(timeout, child.wait_with_output()).await {
        Err(_) => Err(format!("{prog} did not finish in time")),
        Ok(Err(e)) => Err(e.to_string()),
        Ok(Ok(o)) if o.status.success() => Ok(String::from_utf8_lossy(&o.stdout).into_owned()),
        Ok(Ok(o)) => Err(format!("{prog} exited {}", o.status)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(delivered_at: Option<i64>, alerted: bool) -> Pending {
        Pending {
            id: "m1".into(),
            line: "l".into(),
            created_at: 0,
            delivered_at,
            alerted,
        }
    }

    #[test]
    fn next_action_table() {
        // (pending, receipt, now, want)
        let cases = [
            (p(None, false), false, 10, Action::Deliver),
            (p(None, false), true, 10, Action::Done),
            (p(Some(100), false), false, 219, Action::Wait),
            (p(Some(100), false), false, 220, Action::Alert),
            (p(Some(100), true), false, 500, Action::Wait),
            (p(Some(100), true), true, 500, Action::Done),
        ];
        for (pend, receipt, now, want) in cases {
            assert_eq!(
                next_action(&pend, receipt, now),
                want,
                "{pend:?} {receipt} {now}"
            );
        }
    }

    #[test]
    fn ids_and_argv() {
        let m = Event {
            kind: Kind::Dm,
            summary: "x".into(),
            conversation_id: Some(1),
            message_id: Some(42),
            sender_id: Some(2),
            notice: None,
        };
        assert_eq!(event_id(&m).as_deref(), Some("m42"));
        let t = Event {
            kind: Kind::TaskAssigned,
            summary: "card #7 \"x\" is queued".into(),
            conversation_id: Some(1),
            message_id: None,
            sender_id: None,
            notice: None,
        };
        assert_eq!(event_id(&t).as_deref(), Some("t7"));
        let u = Event {
            kind: Kind::TaskUpdated,
            summary: "card #7 \"x\" is done".into(),
            ..t.clone()
        };
        assert_eq!(event_id(&u).as_deref(), Some("u7-done"));
        assert_eq!(event_id(&Event::notice("down", "x")), None);
        for (id, ok) in [
            ("m42", true),
            ("u7-done", true),
            ("../x", false),
            ("", false),
            ("a b", false),
        ] {
            assert_eq!(valid_id(id), ok, "{id}");
        }
        assert_eq!(
            command_argv(DEFAULT_COMMAND, "T1", "hello world"),
            vec![
                "codex",
                "queue",
                "--thread",
                "T1",
                "--message",
                "hello world"
            ]
        );
    }
}
