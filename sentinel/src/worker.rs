//! Workers (SPEC §2): a one-shot agent (`claude` or `cursor-agent`) the
//! sentinel's agent hands heavy work to, on a sub-card of its own card.
//!
//! `hoop worker spawn` assigns the sub-card in the parent's room and claims
//! it (production's two steps: a refused claim names the queued orphan,
//! which is finished at once), prepares a session-private scratch HOME
//! seeded only with the credentials the agent CLI needs (never the home's
//! state files: no session, no cursors), its own working directory, and
//! starts `hoop worker run` detached in its own process group. That
//! supervisor runs the agent, then reports the account's cumulative usage
//! (so the card's end snapshot holds the worker's tokens, as production
//! records a card's cost) and finishes the card: `done` with the agent's
//! result, or `failed` carrying the error text.
//!
//! The sentinel's lease renewer keeps the worker's card: it renews its
//! lease like any working card, posts a progress line when the worker
//! starts, and when the card is no longer working (a renew answering 404,
//! or the card finished — the parent's finish cancels live sub-cards) it
//! stops the worker's process group and logs it.
//!
//! Pure decisions (which credentials seed a HOME, the agent's command line,
//! a run's outcome, which workers to stop) are plain functions with tables
//! of tests; the rest are thin shells over files and processes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use hoop_api::types::{Card, CardId, CardStatus, ConversationId, FinishTask};
use hoop_core::fsutil::{self, WriteOptions};
use hoop_core::home::Home;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use thiserror::Error;

use crate::constants::{
    WORKER_DETAIL_CAP, WORKER_LOG_TAIL_BYTES, WORKER_RECORD_FILE, WORKER_STOP_GRACE,
};

/// Which agent CLI a worker runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AgentKind {
    Claude,
    CursorAgent,
}

impl AgentKind {
    pub fn parse(word: &str) -> Option<AgentKind> {
        match word {
            "claude" => Some(AgentKind::Claude),
            "cursor-agent" => Some(AgentKind::CursorAgent),
            _ => None,
        }
    }
    pub fn word(self) -> &'static str {
        match self {
            AgentKind::Claude => "claude",
            AgentKind::CursorAgent => "cursor-agent",
        }
    }
}

/// Where a worker is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkerState {
    /// The supervisor runs (or is about to).
    Running,
    /// The agent ended; the card's finish (kept in the record) has not
    /// landed yet. Whoever finds it so — its supervisor, or the sentinel
    /// once the supervisor is gone — tries again.
    Finishing,
    /// The agent ended and the card was finished.
    Finished,
    /// The sentinel stopped it: its card was no longer working.
    Stopped,
}

/// `<home>/workers/<card>/worker.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkerRecord {
    pub card_id: CardId,
    pub parent_id: CardId,
    pub conversation_id: ConversationId,
    pub title: String,
    pub agent: AgentKind,
    pub state: WorkerState,
    /// The supervisor's pid, which is also its process group.
    #[serde(default)]
    pub pid: Option<u32>,
    pub started_at: i64,
    #[serde(default)]
    pub ended_at: Option<i64>,
    /// How it ended, in a few words (never a secret).
    #[serde(default)]
    pub detail: Option<String>,
    /// The sentinel posted its "worker running" line (kept here, so a
    /// restarted sentinel does not post it twice).
    #[serde(default)]
    pub announced: bool,
    /// The card's finish until it lands: the result or error text is kept
    /// on disk, never only in a process's memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish: Option<FinishTask>,
    /// The last lines of the worker's log, kept when the log is removed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_tail: Option<String>,
}

#[derive(Debug, Error)]
pub enum WorkerError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {source}")]
    Parse {
        path: PathBuf,
        source: serde_json::Error,
    },
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> WorkerError + '_ {
    move |source| WorkerError::Io {
        path: path.to_path_buf(),
        source,
    }
}

// ---------------------------------------------------------------- layout

/// One worker's directory: `<home>/workers/<card>/`.
pub fn worker_dir(home: &Home, card: CardId) -> PathBuf {
    home.workers_dir().join(card.to_string())
}
/// The worker's session-private scratch HOME.
pub fn scratch_home(home: &Home, card: CardId) -> PathBuf {
    worker_dir(home, card).join("home")
}
/// The worker's own working directory.
pub fn workdir(home: &Home, card: CardId) -> PathBuf {
    worker_dir(home, card).join("work")
}
/// The prompt the worker was given.
pub fn prompt_path(home: &Home, card: CardId) -> PathBuf {
    worker_dir(home, card).join("prompt.txt")
}
/// The supervisor's and the agent's output.
pub fn log_path(home: &Home, card: CardId) -> PathBuf {
    worker_dir(home, card).join("worker.log")
}
/// The worker's hook-status spec (endpoint, token, ids; 0600), the one
/// argument of its lifecycle hooks. Outside the scratch HOME.
pub fn lane_spec_path(home: &Home, card: CardId) -> PathBuf {
    worker_dir(home, card).join("hook-status.json")
}
pub fn record_path(home: &Home, card: CardId) -> PathBuf {
    worker_dir(home, card).join(WORKER_RECORD_FILE)
}

/// The transcript directories of every worker of the home (the claude CLI
/// writes under `<scratch HOME>/.claude`): the account's usage is the sum
/// of the home's own transcripts and these.
pub fn transcript_dirs(home: &Home) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(home.workers_dir()) else {
        return Vec::new();
    };
    let mut dirs: Vec<PathBuf> = rd
        .filter_map(Result::ok)
        .map(|e| e.path().join("home").join(".claude"))
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs
}

pub fn write_record(home: &Home, r: &WorkerRecord) -> Result<(), WorkerError> {
    let path = record_path(home, r.card_id);
    fsutil::write_json_atomic(&path, r, WriteOptions::default()).map_err(io_err(&path))
}

pub fn read_record(home: &Home, card: CardId) -> Result<WorkerRecord, WorkerError> {
    let path = record_path(home, card);
    let text = std::fs::read_to_string(&path).map_err(io_err(&path))?;
    serde_json::from_str(&text).map_err(|source| WorkerError::Parse { path, source })
}

/// Read, change and write a worker's record under an exclusive `flock` on
/// its directory: the supervisor and the sentinel both write it (the state,
/// the finish, the announcement), and neither may undo the other's change.
/// The lock is on the directory, so no lock file is left behind.
pub fn update_record(
    home: &Home,
    card: CardId,
    change: impl FnOnce(&mut WorkerRecord),
) -> Result<WorkerRecord, WorkerError> {
    let held = lock_dir(home, card)?;
    let mut r = read_record(home, card)?;
    change(&mut r);
    write_record(home, &r)?;
    drop(held);
    Ok(r)
}

/// The exclusive `flock` on a worker's directory (held until the file is
/// dropped). Every change of its record is made under it.
fn lock_dir(home: &Home, card: CardId) -> Result<std::fs::File, WorkerError> {
    let dir = worker_dir(home, card);
    let held = std::fs::File::open(&dir).map_err(io_err(&dir))?;
    held.lock().map_err(io_err(&dir))?;
    Ok(held)
}

/// What `hoop worker spawn` holds from before it writes a new worker's
/// first record (its supervisor's pid not known yet) until that pid is in
/// the record: the lock on the worker's directory (created here). Dropping
/// it, or the spawner's death, releases it.
pub struct StartHold {
    _lock: std::fs::File,
}

pub fn hold_for_start(home: &Home, card: CardId) -> Result<StartHold, WorkerError> {
    let dir = worker_dir(home, card);
    std::fs::create_dir_all(&dir).map_err(io_err(&dir))?;
    lock_dir(home, card).map(|_lock| StartHold { _lock })
}

/// A worker's supervisor, as the sentinel judges it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Supervisor {
    /// The recorded pid is this worker's supervisor.
    Alive,
    /// Its spawner is still starting it: the record is written, the pid
    /// not yet ([`StartHold`] is held).
    Starting,
    /// Neither: it ended or was killed, or its spawner died before it
    /// started one.
    Gone,
}

/// `r` and its supervisor (asked of the kernel). A running record without
/// a pid is judged under its directory's lock: held, the spawner is still
/// starting the worker; free, the record is read again under it (the
/// spawner may have recorded the pid since `r` was read), and a pid still
/// missing means the spawner is gone.
pub fn supervisor(home: &Home, mut r: WorkerRecord) -> (WorkerRecord, Supervisor) {
    if r.state == WorkerState::Running && r.pid.is_none() {
        let dir = worker_dir(home, r.card_id);
        if let Ok(f) = std::fs::File::open(&dir) {
            match f.try_lock() {
                Err(std::fs::TryLockError::WouldBlock) => return (r, Supervisor::Starting),
                Ok(()) => {
                    if let Ok(again) = read_record(home, r.card_id) {
                        r = again;
                    }
                }
                Err(std::fs::TryLockError::Error(e)) => {
                    tracing::debug!(card = r.card_id, error = %e, "worker directory not lockable");
                }
            }
        }
    }
    let alive = r
        .pid
        .is_some_and(|p| crate::proctree::is_live(p) && is_supervisor(p, r.card_id));
    let s = if alive {
        Supervisor::Alive
    } else {
        Supervisor::Gone
    };
    (r, s)
}

/// Every worker record of the home (unreadable ones are skipped and logged).
pub fn records(home: &Home) -> Vec<WorkerRecord> {
    let Ok(rd) = std::fs::read_dir(home.workers_dir()) else {
        return Vec::new();
    };
    let mut v: Vec<WorkerRecord> = rd
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<CardId>().ok())
        .filter_map(|card| match read_record(home, card) {
            Ok(r) => Some(r),
            Err(e) => {
                tracing::debug!(card, error = %e, "unreadable worker record");
                None
            }
        })
        .collect();
    v.sort_by_key(|r| r.card_id);
    v
}

/// A live worker as `hoop status` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LiveWorker {
    pub card_id: CardId,
    pub parent_id: CardId,
    pub conversation_id: ConversationId,
    pub title: String,
    pub agent: AgentKind,
    pub pid: u32,
    pub started_at: i64,
}

/// The home's workers whose supervisor is alive (asked of the kernel, never
/// judged from the record alone).
pub fn live_workers(home: &Home) -> Vec<LiveWorker> {
    records(home)
        .into_iter()
        .filter(|r| r.state == WorkerState::Running)
        .filter_map(|r| {
            let pid = r
                .pid
                .filter(|p| crate::proctree::is_live(*p) && is_supervisor(*p, r.card_id))?;
            Some(LiveWorker {
                card_id: r.card_id,
                parent_id: r.parent_id,
                conversation_id: r.conversation_id,
                title: r.title,
                agent: r.agent,
                pid,
                started_at: r.started_at,
            })
        })
        .collect()
}

// ---------------------------------------------------------------- pure core

/// The files of the account's HOME a worker's scratch HOME is seeded with:
/// the credentials the agent CLI needs to log in, nothing else (no
/// sessions, projects, transcripts or the home's state files).
pub fn credential_files(agent: AgentKind) -> &'static [&'static str] {
    match agent {
        // Linux keeps the OAuth credentials here (macOS in the keychain,
        // which a scratch HOME shares anyway).
        AgentKind::Claude => &[".claude/.credentials.json"],
        // cursor-agent keeps its login under the XDG config dir.
        AgentKind::CursorAgent => &[".config/cursor/auth.json", ".cursor/cli-config.json"],
    }
}

/// The keys of the account's `~/.claude.json` a worker gets: who is logged
/// in and that onboarding is done; never its projects, history or caches.
pub const CLAUDE_JSON_KEYS: [&str; 5] = [
    "oauthAccount",
    "userID",
    "hasCompletedOnboarding",
    "customApiKeyResponses",
    "primaryApiKey",
];

/// `~/.claude.json` reduced to [`CLAUDE_JSON_KEYS`].
pub fn seed_claude_json(account: &Value) -> Value {
    let mut out = serde_json::Map::new();
    if let Some(obj) = account.as_object() {
        for k in CLAUDE_JSON_KEYS {
            if let Some(v) = obj.get(k) {
                out.insert(k.to_string(), v.clone());
            }
        }
    }
    Value::Object(out)
}

/// The agent's program arguments (the prompt goes on stdin for `claude`,
/// as the last argument for `cursor-agent`, which takes it so).
pub fn agent_args(agent: AgentKind, permission_mode: &str) -> Vec<String> {
    match agent {
        AgentKind::Claude => vec![
            "-p".into(),
            "--output-format".into(),
            "json".into(),
            format!("--permission-mode={permission_mode}"),
        ],
        AgentKind::CursorAgent => vec![
            "-p".into(),
            "--output-format".into(),
            "json".into(),
            "--force".into(),
        ],
    }
}

/// How a worker's run ended, as the card's finish says it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Done { result: String },
    Failed { error: String },
}

/// A run's outcome from its exit code and its output: the JSON `result`
/// object both CLIs print with `--output-format json`, judged by
/// `is_error` (never by the subtype). Texts are bounded.
pub fn outcome(exit: Option<i32>, stdout: &str, stderr: &str) -> Outcome {
    let result = stdout
        .lines()
        .rev()
        .filter_map(|l| serde_json::from_str::<Value>(l.trim()).ok())
        .find(|v| v["type"] == "result")
        .or_else(|| serde_json::from_str::<Value>(stdout.trim()).ok());
    let text = |v: &Value| v["result"].as_str().unwrap_or_default().trim().to_string();
    match (exit, result) {
        (Some(0), Some(r)) if r["is_error"] != Value::Bool(true) => Outcome::Done {
            result: bounded(&text(&r)),
        },
        (_, Some(r)) if r["is_error"] == Value::Bool(true) => Outcome::Failed {
            error: bounded(&non_blank(text(&r), "the agent reported an error")),
        },
        (exit, _) => {
            let why = match exit {
                Some(c) => format!("the agent exited with status {c}"),
                None => "the agent was killed by a signal".to_string(),
            };
            let tail = stderr.trim();
            Outcome::Failed {
                error: bounded(&if tail.is_empty() {
                    why
                } else {
                    format!("{why}: {}", tail_chars(tail, WORKER_DETAIL_CAP / 2))
                }),
            }
        }
    }
}

fn non_blank(s: String, default: &str) -> String {
    if s.trim().is_empty() {
        default.to_string()
    } else {
        s
    }
}

/// At most [`WORKER_DETAIL_CAP`] characters (a card's result is a summary,
/// not a transcript).
pub fn bounded(s: &str) -> String {
    if s.chars().count() <= WORKER_DETAIL_CAP {
        return s.to_string();
    }
    let mut out: String = s.chars().take(WORKER_DETAIL_CAP - 1).collect();
    out.push('…');
    out
}

fn tail_chars(s: &str, n: usize) -> String {
    let count = s.chars().count();
    s.chars().skip(count.saturating_sub(n)).collect()
}

/// What the renewer does about one live worker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Watch {
    /// Its card works: keep it (the renewer renews the lease).
    Keep,
    /// Its card is not among the working cards: look the card up.
    LookUp,
    /// Its card is finished (or its lease renew answered 404): stop it.
    Stop { why: String },
}

/// The decision for a worker on `card`, given the account's working cards,
/// the cards that answered 404 to a renew, and the card as looked up (if it
/// was).
pub fn watch(
    card: CardId,
    working: &[CardId],
    renew_404: &[CardId],
    looked_up: Option<&Card>,
) -> Watch {
    if renew_404.contains(&card) {
        return Watch::Stop {
            why: "its lease renew answered 404 (the card is not working)".into(),
        };
    }
    if working.contains(&card) {
        return Watch::Keep;
    }
    match looked_up {
        None => Watch::LookUp,
        Some(c) if c.status == CardStatus::Working => Watch::Keep,
        Some(c) => Watch::Stop {
            why: format!("its card is {}", status_word(c.status)),
        },
    }
}

fn status_word(s: CardStatus) -> &'static str {
    match s {
        CardStatus::Queued => "queued",
        CardStatus::Working => "working",
        CardStatus::Done => "done",
        CardStatus::Failed => "failed",
        CardStatus::Cancelled => "cancelled (its parent finished, or someone cancelled it)",
    }
}

/// What the renewer does about one worker record, given whether its
/// supervisor is alive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tend {
    /// Its supervisor runs: watch its card ([`watch`]) and renew its lease.
    Watch,
    /// The supervisor is gone while the agent ran (killed, crashed): finish
    /// the card `failed` with what is known, then clean up.
    FinishOrphan(FinishTask),
    /// The supervisor is gone with its finish not landed: land it.
    LandFinish(FinishTask),
    /// Over (finished or stopped): nothing to do.
    Over,
    /// The supervisor is finishing its own card, or its spawner is still
    /// starting it: leave it be.
    Wait,
}

/// The one decision over a worker record.
pub fn tend(r: &WorkerRecord, supervisor: Supervisor) -> Tend {
    use Supervisor::{Alive, Gone, Starting};
    match (r.state, supervisor) {
        (WorkerState::Finished | WorkerState::Stopped, _) => Tend::Over,
        // Its spawner is about to record the pid: not an orphan.
        (_, Starting) => Tend::Wait,
        (WorkerState::Running, Alive) => Tend::Watch,
        (WorkerState::Running, Gone) => {
            let pid = r.pid.map_or("?".to_string(), |p| p.to_string());
            let mut error =
                format!("the worker's supervisor (pid {pid}) is gone before it finished its card");
            if let Some(tail) = r.log_tail.as_deref().filter(|t| !t.trim().is_empty()) {
                error.push_str("; its log ends with:\n");
                error.push_str(tail.trim_end());
            }
            Tend::FinishOrphan(failed_finish(&error))
        }
        (WorkerState::Finishing, Alive) => Tend::Wait,
        (WorkerState::Finishing, Gone) => match &r.finish {
            Some(f) => Tend::LandFinish(f.clone()),
            None => Tend::FinishOrphan(failed_finish(
                "the worker's supervisor is gone and its finish was not recorded",
            )),
        },
    }
}

/// A `failed` finish carrying `error` (bounded).
pub fn failed_finish(error: &str) -> FinishTask {
    FinishTask {
        error: Some(bounded(error)),
        ..FinishTask::status(CardStatus::Failed)
    }
}

/// The finish a run's outcome asks for, and its few words for the record.
pub fn finish_for(outcome: &Outcome) -> (FinishTask, String) {
    match outcome {
        Outcome::Done { result } => (
            FinishTask {
                result: Some(result.clone()),
                ..FinishTask::status(CardStatus::Done)
            },
            "done".to_string(),
        ),
        Outcome::Failed { error } => (failed_finish(error), bounded(&format!("failed: {error}"))),
    }
}

/// Whether a refused finish is worth trying again (the backend or the
/// network failing), or final (the request itself is refused).
pub fn finish_retryable(e: &hoop_api::Error) -> bool {
    use hoop_api::Error as E;
    match e {
        E::Transport(_) | E::RateLimited { .. } | E::Unauthorized { .. } => true,
        E::Refused { status, .. } | E::Unparseable { status, .. } => *status >= 500,
        _ => false,
    }
}

/// The environment of a worker's agent: the sentinel's agent environment
/// with `HOME` moved to the scratch HOME and no inherited config dir, so the
/// worker never reads or writes the home's sessions.
pub fn worker_env(
    base: &BTreeMap<String, String>,
    scratch_home: &Path,
) -> (BTreeMap<String, String>, Vec<&'static str>) {
    let mut env = base.clone();
    env.insert("HOME".into(), scratch_home.display().to_string());
    env.remove("CLAUDE_CONFIG_DIR");
    (env, vec!["CLAUDE_CONFIG_DIR"])
}

// ---------------------------------------------------------------- shells

/// Seed `scratch` from the account's HOME `account_home` (absent files are
/// skipped: an API-key account needs none). Files are written 0600.
pub fn seed_scratch_home(
    account_home: &Path,
    scratch: &Path,
    agent: AgentKind,
) -> Result<Vec<String>, WorkerError> {
    std::fs::create_dir_all(scratch).map_err(io_err(scratch))?;
    let mut copied = Vec::new();
    for rel in credential_files(agent) {
        let from = account_home.join(rel);
        match std::fs::read(&from) {
            Ok(bytes) => {
                let to = scratch.join(rel);
                fsutil::write_atomic(&to, &bytes, WriteOptions::SECRET).map_err(io_err(&to))?;
                copied.push(rel.to_string());
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => return Err(WorkerError::Io { path: from, source }),
        }
    }
    if agent == AgentKind::Claude {
        let from = account_home.join(".claude.json");
        if let Ok(text) = std::fs::read_to_string(&from)
            && let Ok(v) = serde_json::from_str::<Value>(&text)
        {
            let to = scratch.join(".claude.json");
            fsutil::write_json_atomic(&to, &seed_claude_json(&v), WriteOptions::SECRET)
                .map_err(io_err(&to))?;
            copied.push(".claude.json (login keys only)".into());
        }
    }
    Ok(copied)
}

/// The systemd unit a worker's supervisor runs in (a transient scope).
pub fn scope_unit(home: &str, card: CardId) -> String {
    format!("hoop-worker-{home}-{card}")
}

/// Whether `hoop worker spawn` runs under systemd: every process of a
/// systemd unit carries `INVOCATION_ID`, and the sentinel's agent (which
/// runs `spawn`) inherits it.
pub fn under_systemd(invocation_id: Option<&str>) -> bool {
    invocation_id.is_some_and(|v| !v.trim().is_empty())
}

/// The supervisor's command line. THE RULE (issue 22): a worker is not
/// part of its sentinel's service, so a restart of the sentinel never
/// stops it. Under systemd the sentinel's unit is stopped by cgroup
/// (`KillMode=mixed` kills every process left in it), so the supervisor
/// runs in a transient scope of its own (`systemd-run --user --scope`,
/// which moves it out of the unit's cgroup and then runs it in place,
/// keeping its environment and output). launchd stops a job's process
/// group only, and the supervisor always leads a group of its own (the
/// spawner sets it), which keeps it out of the sentinel's job there.
pub fn supervisor_argv(exe: &Path, home: &str, card: CardId, in_scope: bool) -> Vec<String> {
    let mut argv = Vec::new();
    if in_scope {
        argv.extend(["systemd-run", "--user", "--scope", "--quiet", "--collect"].map(String::from));
        argv.push(format!("--unit={}", scope_unit(home, card)));
        argv.push("--".into());
    }
    argv.push(exe.display().to_string());
    argv.extend(["worker", "run", "--home", home, "--card"].map(String::from));
    argv.push(card.to_string());
    argv
}

/// Remove the prompt once the supervisor has read it.
pub fn remove_prompt(home: &Home, card: CardId) {
    remove_quietly(&prompt_path(home, card));
}

/// Remove the worker's copies of the account's login (its agent has
/// ended: nothing may log in with them again).
pub fn remove_credentials(home: &Home, card: CardId) {
    let scratch = scratch_home(home, card);
    let files = credential_files(AgentKind::Claude)
        .iter()
        .chain(credential_files(AgentKind::CursorAgent))
        // The CLI keeps copies of `.claude.json` (login keys included).
        .chain(&[".claude.json", ".claude/backups"]);
    for rel in files {
        remove_quietly(&scratch.join(rel));
    }
}

fn remove_quietly(path: &Path) {
    let r = match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(path),
        Ok(_) => std::fs::remove_file(path),
        Err(_) => return,
    };
    if let Err(e) = r {
        tracing::warn!(path = %path.display(), error = %e, "could not remove a worker's leftover");
    }
}

/// The last [`WORKER_LOG_TAIL_BYTES`] of the worker's log, from a line
/// start (`None` when there is no log).
pub fn read_log_tail(home: &Home, card: CardId) -> Option<String> {
    let bytes = std::fs::read(log_path(home, card)).ok()?;
    let from = bytes.len().saturating_sub(WORKER_LOG_TAIL_BYTES);
    let mut tail = String::from_utf8_lossy(&bytes[from..]).into_owned();
    if from > 0
        && let Some(nl) = tail.find('\n')
    {
        tail = tail[nl + 1..].to_string();
    }
    Some(tail)
}

/// What stays of an ended worker: its record (`hoop status`, the finish
/// text until it lands) and its agent's transcripts under
/// `home/.claude/projects/` (the account's usage totals are read over
/// them, `crate::usage::account_dirs`). Everything else goes: the
/// credentials, `.claude.json`, the hook settings, `prompt.txt`, the
/// lane spec (it holds the lane token), the log (its tail is kept in the
/// record first), the working directory and the CLI's other state.
pub fn clean_up(home: &Home, card: CardId) {
    remove_credentials(home, card);
    let dir = worker_dir(home, card);
    let Ok(rd) = std::fs::read_dir(&dir) else {
        return;
    };
    for e in rd.filter_map(Result::ok) {
        let name = e.file_name();
        match name.to_str() {
            Some(WORKER_RECORD_FILE) => {}
            Some("home") => clean_scratch(&e.path()),
            _ => remove_quietly(&e.path()),
        }
    }
}

/// A scratch HOME reduced to `.claude/projects/`.
fn clean_scratch(scratch: &Path) {
    let Ok(rd) = std::fs::read_dir(scratch) else {
        return;
    };
    for e in rd.filter_map(Result::ok) {
        if e.file_name() != ".claude" {
            remove_quietly(&e.path());
            continue;
        }
        let Ok(inner) = std::fs::read_dir(e.path()) else {
            continue;
        };
        for i in inner.filter_map(Result::ok) {
            if i.file_name() != "projects" {
                remove_quietly(&i.path());
            }
        }
    }
}

/// Close a worker: take its log's tail, remove the log and every other
/// leftover ([`clean_up`]), then apply `change` to its record and keep the
/// tail there (under the record's lock). The record is written last, so a
/// record that says the worker ended means nothing else is left; a stop in
/// between leaves the earlier record, and closing again is harmless.
pub fn close(
    home: &Home,
    card: CardId,
    change: impl FnOnce(&mut WorkerRecord),
) -> Result<WorkerRecord, WorkerError> {
    let tail = read_log_tail(home, card);
    clean_up(home, card);
    update_record(home, card, |r| {
        change(r);
        if tail.is_some() {
            r.log_tail = tail;
        }
    })
}

/// Whether `pid` still is the supervisor of the worker on `card` (a pid can
/// be reused after a crash: never signal a stranger). Read from
/// `/proc/<pid>/cmdline`; where there is no `/proc`, trusted.
pub fn is_supervisor(pid: u32, card: CardId) -> bool {
    match std::fs::read(format!("/proc/{pid}/cmdline")) {
        Ok(raw) => supervisor_cmdline(&raw, card),
        Err(_) => !Path::new("/proc/self").exists(),
    }
}

/// Whether `pid` is some worker's supervisor, by its command line (the
/// orphan rules never stop one: a worker outlives the turn that spawned
/// it). False where the command line cannot be read.
pub fn is_any_supervisor(pid: u32) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|raw| supervisor_card(&raw).is_some())
}

/// `hoop worker run … --card <card>` in a NUL-separated command line.
pub fn supervisor_cmdline(raw: &[u8], card: CardId) -> bool {
    supervisor_card(raw) == Some(card)
}

/// The card of a `hoop worker run … --card <card>` command line (also
/// behind a `systemd-run … --` wrapper, whose arguments name it too).
pub fn supervisor_card(raw: &[u8]) -> Option<CardId> {
    let args: Vec<&[u8]> = raw.split(|b| *b == 0).collect();
    if !args
        .windows(2)
        .any(|w| w == [b"worker".as_slice(), b"run".as_slice()])
    {
        return None;
    }
    args.windows(2)
        .find(|w| w[0] == b"--card".as_slice())
        .and_then(|w| std::str::from_utf8(w[1]).ok()?.parse().ok())
}

/// Stop a worker: its supervisor and every process below it (the agent
/// and the tool commands it runs in groups of their own), through the one
/// tree stop ([`crate::proctree::stop_tree`]), SIGKILL after
/// [`WORKER_STOP_GRACE`]. Returns whether all are gone.
pub async fn stop(pid: u32) -> bool {
    crate::proctree::stop_tree(pid, WORKER_STOP_GRACE).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A worker's sub-card (of card 1).
    fn card(id: CardId, status: CardStatus) -> Card {
        Card {
            parent_id: Some(1),
            ..crate::test_support::card(id, status)
        }
    }

    #[test]
    fn watch_table() {
        let working = [5, 6];
        let cancelled = card(9, CardStatus::Cancelled);
        let still = card(9, CardStatus::Working);
        let done = card(9, CardStatus::Done);
        // (card, renew 404s, looked up, keep / look up / stop)
        let rows: Vec<(CardId, Vec<CardId>, Option<&Card>, &str)> = vec![
            (5, vec![], None, "keep"),
            (5, vec![5], None, "stop"),
            (9, vec![], None, "look up"),
            (9, vec![], Some(&still), "keep"),
            (9, vec![], Some(&cancelled), "stop"),
            (9, vec![], Some(&done), "stop"),
            (9, vec![9], Some(&still), "stop"),
        ];
        for (c, r404, looked, want) in rows {
            let got = match watch(c, &working, &r404, looked) {
                Watch::Keep => "keep",
                Watch::LookUp => "look up",
                Watch::Stop { .. } => "stop",
            };
            assert_eq!(got, want, "card {c} 404s {r404:?} looked {looked:?}");
        }
        match watch(9, &working, &[], Some(&cancelled)) {
            Watch::Stop { why } => assert!(why.contains("cancelled"), "{why}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn outcome_table() {
        let ok = r#"{"type":"result","subtype":"success","is_error":false,"result":"all green"}"#;
        let err =
            r#"{"type":"result","subtype":"success","is_error":true,"result":"API Error: 500"}"#;
        let blank_err = r#"{"type":"result","subtype":"error_during_execution","is_error":true}"#;
        let stream = format!("{{\"type\":\"system\"}}\n{ok}\n");
        let rows: Vec<(Option<i32>, &str, &str, Outcome)> = vec![
            (
                Some(0),
                ok,
                "",
                Outcome::Done {
                    result: "all green".into(),
                },
            ),
            // Judged by is_error, not by the exit code or the subtype.
            (
                Some(0),
                err,
                "",
                Outcome::Failed {
                    error: "API Error: 500".into(),
                },
            ),
            (
                Some(1),
                err,
                "",
                Outcome::Failed {
                    error: "API Error: 500".into(),
                },
            ),
            (
                Some(1),
                blank_err,
                "",
                Outcome::Failed {
                    error: "the agent reported an error".into(),
                },
            ),
            (
                Some(2),
                "not json",
                "boom\n",
                Outcome::Failed {
                    error: "the agent exited with status 2: boom".into(),
                },
            ),
            (
                None,
                "",
                "",
                Outcome::Failed {
                    error: "the agent was killed by a signal".into(),
                },
            ),
            // Exit 0 without a result line is not a success.
            (
                Some(0),
                "",
                "",
                Outcome::Failed {
                    error: "the agent exited with status 0".into(),
                },
            ),
            // stream-json style: the last result line counts.
            (
                Some(0),
                &stream,
                "",
                Outcome::Done {
                    result: "all green".into(),
                },
            ),
        ];
        for (exit, out, err, want) in rows {
            assert_eq!(outcome(exit, out, err), want, "{exit:?} {out:?}");
        }
    }

    #[test]
    fn results_are_bounded() {
        let long = "x".repeat(WORKER_DETAIL_CAP * 2);
        let b = bounded(&long);
        assert_eq!(b.chars().count(), WORKER_DETAIL_CAP);
        assert!(b.ends_with('…'));
        assert_eq!(bounded("short"), "short");
    }

    #[test]
    fn the_claude_json_keeps_only_login_keys() {
        let account = json!({
            "oauthAccount": {"emailAddress": "a@b"},
            "userID": "u1",
            "hasCompletedOnboarding": true,
            "projects": {"/home/x": {"history": ["secret plan"]}},
            "cachedStatsig": {},
        });
        assert_eq!(
            seed_claude_json(&account),
            json!({"oauthAccount": {"emailAddress": "a@b"}, "userID": "u1",
                   "hasCompletedOnboarding": true})
        );
        assert_eq!(seed_claude_json(&json!([1])), json!({}));
    }

    #[test]
    fn a_scratch_home_gets_credentials_and_nothing_of_the_home() {
        let account = tempfile::tempdir().unwrap();
        let scratch = tempfile::tempdir().unwrap();
        let a = account.path();
        std::fs::create_dir_all(a.join(".claude/projects/p")).unwrap();
        std::fs::write(a.join(".claude/.credentials.json"), "{\"t\":1}").unwrap();
        std::fs::write(a.join(".claude/projects/p/s.jsonl"), "{}").unwrap();
        std::fs::write(a.join(".claude/settings.json"), "{}").unwrap();
        std::fs::write(a.join(".claude.json"), r#"{"userID":"u","projects":{}}"#).unwrap();
        let s = scratch.path().join("home");
        seed_scratch_home(a, &s, AgentKind::Claude).unwrap();
        let mut files: Vec<String> = walk(&s)
            .into_iter()
            .map(|p| p.strip_prefix(&s).unwrap().display().to_string())
            .collect();
        files.sort();
        assert_eq!(files, [".claude.json", ".claude/.credentials.json"]);
        assert_eq!(
            std::fs::read_to_string(s.join(".claude.json"))
                .unwrap()
                .trim(),
            "{\n  \"userID\": \"u\"\n}"
        );
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(s.join(".claude/.credentials.json"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        // An account with nothing to copy (an API key) seeds nothing.
        let empty = tempfile::tempdir().unwrap();
        let s2 = scratch.path().join("h2");
        assert!(
            seed_scratch_home(empty.path(), &s2, AgentKind::CursorAgent)
                .unwrap()
                .is_empty()
        );
    }

    fn walk(d: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for e in std::fs::read_dir(d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(walk(&p));
            } else {
                out.push(p);
            }
        }
        out
    }

    #[test]
    fn the_worker_env_moves_home_and_drops_the_config_dir() {
        let mut base = BTreeMap::new();
        base.insert("HOME".to_string(), "/acct".to_string());
        base.insert("CLAUDE_CONFIG_DIR".to_string(), "/acct/.claude".to_string());
        base.insert("ANTHROPIC_BASE_URL".to_string(), "http://x".to_string());
        let (env, removed) = worker_env(&base, Path::new("/w/home"));
        assert_eq!(env.get("HOME").map(String::as_str), Some("/w/home"));
        assert_eq!(env.get("CLAUDE_CONFIG_DIR"), None);
        assert_eq!(
            env.get("ANTHROPIC_BASE_URL").map(String::as_str),
            Some("http://x")
        );
        assert_eq!(removed, ["CLAUDE_CONFIG_DIR"]);
    }

    #[test]
    fn only_a_workers_own_supervisor_is_recognised() {
        let line = |s: &str| s.replace(' ', "\0").into_bytes();
        let rows = [
            ("/x/hoop worker run --home bolt --card 12", 12, true),
            ("/x/hoop worker run --home bolt --card 12", 1, false),
            ("/x/hoop worker run --home bolt --card 123", 12, false),
            ("/x/hoop sentinel run --home bolt --card 12", 12, false),
            ("sleep 12", 12, false),
            ("", 12, false),
            (
                "systemd-run --user --scope --unit=hoop-worker-bolt-12 -- /x/hoop worker run --home bolt --card 12",
                12,
                true,
            ),
            ("/x/hoop worker run --home bolt --card x12", 12, false),
        ];
        for (cmd, card, want) in rows {
            assert_eq!(supervisor_cmdline(&line(cmd), card), want, "{cmd} / {card}");
        }
        assert_eq!(
            supervisor_card(&line("/x/hoop worker run --card 7")),
            Some(7)
        );
        assert_eq!(
            supervisor_card(&line("/x/hoop worker spawn --card 7")),
            None
        );
    }

    fn rec(state: WorkerState) -> WorkerRecord {
        crate::test_support::worker_record(9, state)
    }

    /// One decision per record: watched while its supervisor lives;
    /// finished `failed` with what is known when it died running; its kept
    /// finish landed when it died finishing; nothing once it is over.
    #[test]
    fn tend_table() {
        let done = FinishTask {
            result: Some("all green".into()),
            ..FinishTask::status(CardStatus::Done)
        };
        let with = |state, f: &dyn Fn(&mut WorkerRecord)| {
            let mut r = rec(state);
            f(&mut r);
            r
        };
        let died = with(WorkerState::Running, &|r| {
            r.log_tail = Some("step 1\npanicked: disk full\n".into())
        });
        use Supervisor::{Alive, Gone, Starting};
        let rows: Vec<(&str, WorkerRecord, Supervisor, Tend)> = vec![
            (
                "running, alive",
                rec(WorkerState::Running),
                Alive,
                Tend::Watch,
            ),
            (
                "running, its spawner still starting it (no pid yet): not an orphan",
                with(WorkerState::Running, &|r| r.pid = None),
                Starting,
                Tend::Wait,
            ),
            (
                "running, no pid, its spawner gone",
                with(WorkerState::Running, &|r| r.pid = None),
                Gone,
                Tend::FinishOrphan(failed_finish(
                    "the worker's supervisor (pid ?) is gone before it finished its card",
                )),
            ),
            (
                "running, supervisor gone: failed with its pid and log tail",
                died,
                Gone,
                Tend::FinishOrphan(failed_finish(
                    "the worker's supervisor (pid 4242) is gone before it finished its card; \
                     its log ends with:\nstep 1\npanicked: disk full",
                )),
            ),
            (
                "running, supervisor gone, no log",
                rec(WorkerState::Running),
                Gone,
                Tend::FinishOrphan(failed_finish(
                    "the worker's supervisor (pid 4242) is gone before it finished its card",
                )),
            ),
            (
                "finishing, alive: its own supervisor lands it",
                with(WorkerState::Finishing, &|r| r.finish = Some(done.clone())),
                Alive,
                Tend::Wait,
            ),
            (
                "finishing, gone: the kept finish lands, text and all",
                with(WorkerState::Finishing, &|r| r.finish = Some(done.clone())),
                Gone,
                Tend::LandFinish(done.clone()),
            ),
            (
                "finishing, gone, nothing kept",
                rec(WorkerState::Finishing),
                Gone,
                Tend::FinishOrphan(failed_finish(
                    "the worker's supervisor is gone and its finish was not recorded",
                )),
            ),
            ("finished", rec(WorkerState::Finished), Gone, Tend::Over),
            (
                "finished, pid reused",
                rec(WorkerState::Finished),
                Alive,
                Tend::Over,
            ),
            ("stopped", rec(WorkerState::Stopped), Gone, Tend::Over),
        ];
        for (why, r, sup, want) in rows {
            assert_eq!(tend(&r, sup), want, "{why}");
        }
    }

    /// A record written before its supervisor's pid is known is the
    /// spawner's while it holds the start lock, and an orphan once the
    /// spawner let go without recording a pid.
    #[test]
    fn a_worker_without_a_pid_is_starting_while_its_spawner_holds_it() {
        let root = tempfile::tempdir().unwrap();
        let home = Home::new(root.path(), "h").unwrap();
        let mut r = rec(WorkerState::Running);
        r.pid = None;
        let hold = hold_for_start(&home, r.card_id).unwrap();
        write_record(&home, &r).unwrap();
        assert_eq!(supervisor(&home, r.clone()).1, Supervisor::Starting);
        drop(hold);
        let (again, s) = supervisor(&home, r.clone());
        assert_eq!((again.pid, s), (None, Supervisor::Gone));
        // The pid recorded while the first read was in hand: the record is
        // read again under the lock, and judged by it.
        let hold = hold_for_start(&home, r.card_id).unwrap();
        let mut started = r.clone();
        started.pid = Some(std::process::id());
        write_record(&home, &started).unwrap();
        drop(hold);
        let (again, _) = supervisor(&home, r);
        assert_eq!(again.pid, Some(std::process::id()));
    }

    #[test]
    fn a_finish_is_retried_only_when_the_backend_or_the_network_failed() {
        use hoop_api::Error as E;
        let refused = |status| E::Refused {
            status,
            code: "c".into(),
            message: "m".into(),
        };
        let rows: Vec<(E, bool)> = vec![
            (E::Transport("reset".into()), true),
            (
                E::RateLimited {
                    retry_after: None,
                    message: String::new(),
                },
                true,
            ),
            (
                E::Unauthorized {
                    message: "expired".into(),
                },
                true,
            ),
            (refused(500), true),
            (refused(503), true),
            (
                E::Unparseable {
                    status: 502,
                    head: String::new(),
                },
                true,
            ),
            (refused(400), false),
            (refused(403), false),
            (refused(409), false),
            (
                E::Unparseable {
                    status: 400,
                    head: String::new(),
                },
                false,
            ),
            (
                E::NotFound {
                    code: "not_found".into(),
                    message: "m".into(),
                },
                false,
            ),
            (
                E::Decode {
                    what: "finish",
                    message: "m".into(),
                },
                false,
            ),
        ];
        for (e, want) in rows {
            assert_eq!(finish_retryable(&e), want, "{e:?}");
        }
    }

    #[test]
    fn the_supervisor_runs_in_a_scope_of_its_own_under_systemd_only() {
        let exe = Path::new("/opt/hoop/bin/hoop");
        assert_eq!(
            supervisor_argv(exe, "bolt", 12, true),
            [
                "systemd-run",
                "--user",
                "--scope",
                "--quiet",
                "--collect",
                "--unit=hoop-worker-bolt-12",
                "--",
                "/opt/hoop/bin/hoop",
                "worker",
                "run",
                "--home",
                "bolt",
                "--card",
                "12"
            ]
        );
        assert_eq!(
            supervisor_argv(exe, "bolt", 12, false),
            [
                "/opt/hoop/bin/hoop",
                "worker",
                "run",
                "--home",
                "bolt",
                "--card",
                "12"
            ]
        );
        let rows = [
            (Some("0f3a9c"), true),
            (Some(""), false),
            (Some("  "), false),
            (None, false),
        ];
        for (id, want) in rows {
            assert_eq!(under_systemd(id), want, "{id:?}");
        }
    }

    /// An ended worker keeps its record and its transcripts, nothing else.
    #[test]
    fn clean_up_keeps_the_record_and_the_transcripts_only() {
        let root = tempfile::tempdir().unwrap();
        let home = Home::new(root.path(), "bolt").unwrap();
        let d = worker_dir(&home, 9);
        let files = [
            "worker.json",
            "worker.log",
            "prompt.txt",
            "hook-status.json",
            "work/out.txt",
            "home/.claude.json",
            "home/.claude/.credentials.json",
            "home/.claude/settings.json",
            "home/.claude/todos/t.json",
            "home/.claude/projects/p/s.jsonl",
            "home/.cursor/hooks.json",
            "home/.config/cursor/auth.json",
        ];
        for f in files {
            let p = d.join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, "x").unwrap();
        }
        write_record(&home, &rec(WorkerState::Finished)).unwrap();
        std::fs::write(log_path(&home, 9), "a\nb\nlast words\n").unwrap();
        let r = close(&home, 9, |r| r.detail = Some("done".into())).unwrap();
        assert_eq!(r.log_tail.as_deref(), Some("a\nb\nlast words\n"));
        let mut left: Vec<String> = walk(&d)
            .into_iter()
            .map(|p| p.strip_prefix(&d).unwrap().display().to_string())
            .collect();
        left.sort();
        assert_eq!(left, ["home/.claude/projects/p/s.jsonl", "worker.json"]);
        assert_eq!(
            read_record(&home, 9).unwrap().detail.as_deref(),
            Some("done")
        );
        // Twice is the same.
        close(&home, 9, |_| {}).unwrap();
        assert_eq!(read_record(&home, 9).unwrap().log_tail, r.log_tail);
    }

    #[test]
    fn the_credentials_go_at_once() {
        let root = tempfile::tempdir().unwrap();
        let home = Home::new(root.path(), "bolt").unwrap();
        let s = scratch_home(&home, 9);
        for f in [
            ".claude.json",
            ".claude/.credentials.json",
            ".config/cursor/auth.json",
            ".cursor/cli-config.json",
            ".claude/projects/p/s.jsonl",
        ] {
            let p = s.join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, "x").unwrap();
        }
        remove_credentials(&home, 9);
        let left: Vec<String> = walk(&s)
            .into_iter()
            .map(|p| p.strip_prefix(&s).unwrap().display().to_string())
            .collect();
        assert_eq!(left, [".claude/projects/p/s.jsonl"]);
    }

    #[test]
    fn a_long_logs_tail_starts_at_a_line() {
        let root = tempfile::tempdir().unwrap();
        let home = Home::new(root.path(), "bolt").unwrap();
        std::fs::create_dir_all(worker_dir(&home, 9)).unwrap();
        assert_eq!(read_log_tail(&home, 9), None);
        let long = format!("{}\nthe end\n", "x".repeat(WORKER_LOG_TAIL_BYTES * 2));
        std::fs::write(log_path(&home, 9), &long).unwrap();
        assert_eq!(read_log_tail(&home, 9).as_deref(), Some("the end\n"));
    }

    #[test]
    fn agent_words_round_trip() {
        for a in [AgentKind::Claude, AgentKind::CursorAgent] {
            assert_eq!(AgentKind::parse(a.word()), Some(a));
        }
        assert_eq!(AgentKind::parse("codex"), None);
    }
}
