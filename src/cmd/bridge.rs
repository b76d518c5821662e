//! `hoop bridge …`: the doorbell inside an interactive window. `watch` prints
//! one line per event that concerns this window (run by the window's
//! Monitor, one per window). Everything it decides lives in `hoop-bridge`;
//! this file reads the command line and the files and moves lines to stdout.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use hoop_api::types::{ConversationId, RegisterWindow, UserId};
use hoop_bridge::channel::{Channel, serve_stdio};
use hoop_bridge::clock::SystemClock;
use hoop_bridge::codex;
use hoop_bridge::config::{self, Allowlist, Endpoint};
use hoop_bridge::constants::{
    BRIDGE_POLL, EXIT_KEY_REJECTED, EXIT_NO_HANDOVER, HANDOVER_SUMMARY_TIMEOUT, SESSION_LOCK_RETRY,
    SESSION_LOCK_WAIT,
};
use hoop_bridge::detect::Event;
use hoop_bridge::drive::{DriveConfig, drive};
use hoop_bridge::watch::{KEY_REJECTED, Stop, WatchConfig, Watcher, pid_alive};
use hoop_core::fsutil::{WriteOptions, write_atomic, write_json_atomic};

#[derive(clap::Subcommand)]
pub enum Command {
    /// Print one line per event that concerns this window, until stopped.
    /// Exit 77 when the key is refused.
    Watch(WatchArgs),
    /// A stdio MCP server for Claude Code's channels: pushes the same events
    /// as `watch` into the running session (notifications/claude/channel)
    /// and offers a `reply` tool that sends through `hoop say`'s gates. Start
    /// the session with `--channels` (a custom server also needs
    /// `--dangerously-load-development-channels server:<name>`).
    Channel(WatchArgs),
    /// Acknowledge a Codex event as read: creates its receipt, once (a
    /// second ack of the same id is refused).
    Ack {
        /// The event id (from the delivered message).
        id: String,
        #[arg(long)]
        state_dir: Option<PathBuf>,
    },
    /// Switch Codex delivery to another thread, only after a handover
    /// summary was produced and queued there. Exit 78 when it cannot be:
    /// the old thread stays, no bare thread is started.
    Handover(HandoverArgs),
}

#[derive(clap::Args, Debug)]
pub struct HandoverArgs {
    /// The new thread (session UUID or exact session name).
    #[arg(long)]
    pub to: String,
    /// A file holding the handover summary.
    #[arg(long, conflicts_with = "summary_cmd")]
    pub summary_file: Option<PathBuf>,
    /// A command whose standard output is the handover summary (split on
    /// whitespace, no shell).
    #[arg(long)]
    pub summary_cmd: Option<String>,
    /// The codex command (`{thread}`, `{text}` replaced).
    #[arg(long, default_value = codex::DEFAULT_COMMAND)]
    pub codex_cmd: String,
    #[arg(long)]
    pub state_dir: Option<PathBuf>,
    /// The window whose thread switches (its watcher's session; for a Codex
    /// window, the thread it was started with). Default: the one window
    /// with a store in the directory.
    #[arg(long, env = "HOOP_WINDOW_SESSION")]
    pub session: Option<String>,
}

#[derive(clap::Args, Debug)]
pub struct WatchArgs {
    /// The account's user id (its own messages never ring; its mentions
    /// do). Default: the id recorded in the home `hoop provision redeem`
    /// wrote for this key (`<hoop root>/<name>/reinforcement.json` next to
    /// the same `.mcp_key`).
    #[arg(long, env = "HOOP_BRIDGE_ME")]
    pub me: Option<UserId>,
    /// A file holding the MCP key (`hoopmcp_…`); default: ~/.claude.json's
    /// mcpServers.hoop.headers.Authorization.
    #[arg(long)]
    pub key_file: Option<PathBuf>,
    /// The MCP url (`…/mcp`); default: ~/.claude.json's mcpServers.hoop.url.
    #[arg(long)]
    pub url: Option<String>,
    /// Where Claude Code keeps its user config.
    #[arg(long, env = "HOOP_CLAUDE_JSON")]
    pub claude_json: Option<PathBuf>,
    /// Rooms this window answers for while the backend has never assigned
    /// any (comma-separated ids).
    #[arg(long, value_delimiter = ',')]
    pub rooms: Vec<ConversationId>,
    /// Ask the backend to make this the fallback window.
    #[arg(long)]
    pub fallback: bool,
    /// The window's native session id (one watcher per window). Default:
    /// the session Claude Code exports to the commands it starts
    /// (`CLAUDE_CODE_SESSION_ID`), else Codex's `--thread`, else `default`.
    /// A second watcher of the same session in one directory is refused.
    #[arg(long, env = "HOOP_WINDOW_SESSION")]
    pub session: Option<String>,
    /// The window's client: `claude-code` (lines on stdout) or `codex`
    /// (each event also handed to the codex command, kept pending until
    /// acknowledged).
    #[arg(long, default_value = "claude-code")]
    pub client: String,
    /// Codex: the thread events go to until a handover sets another.
    #[arg(long)]
    pub thread: Option<String>,
    /// Codex: the command that queues a message (`{thread}`, `{text}`
    /// replaced per argument, no shell).
    #[arg(long, default_value = codex::DEFAULT_COMMAND)]
    pub codex_cmd: String,
    /// The bridge's directory (state, installation id, allow.json, claims.json);
    /// default: <hoop root>/bridge.
    #[arg(long)]
    pub state_dir: Option<PathBuf>,
    /// Poll every 5 s even when the backend offers the event stream.
    #[arg(long)]
    pub no_push: bool,
    /// Seconds between rounds.
    #[arg(long, default_value_t = BRIDGE_POLL.as_secs_f64(), hide = true)]
    pub poll_secs: f64,
    /// Stop after this many rounds (tests).
    #[arg(long, hide = true)]
    pub max_rounds: Option<u64>,
}

pub fn run(c: Command) -> anyhow::Result<ExitCode> {
    match c {
        Command::Watch(a) => watch(a),
        Command::Channel(a) => channel(a),
        Command::Ack { id, state_dir } => {
            let store = codex::Store::new(&state_dir_of(state_dir)?);
            store.ack(&id)?;
            println!("receipt written for {id}");
            Ok(ExitCode::SUCCESS)
        }
        Command::Handover(a) => handover(a),
    }
}

fn state_dir_of(given: Option<PathBuf>) -> anyhow::Result<PathBuf> {
    match given {
        Some(d) => Ok(d),
        None => Ok(hoop_core::home::root()?.join("bridge")),
    }
}

/// The key and endpoint: `--key-file` / `--url` win over ~/.claude.json.
fn endpoint(a: &WatchArgs) -> anyhow::Result<Endpoint> {
    let from_json = || -> anyhow::Result<Endpoint> {
        let path = match &a.claude_json {
            Some(p) => p.clone(),
            None => PathBuf::from(std::env::var_os("HOME").context("HOME is not set")?)
                .join(".claude.json"),
        };
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        Ok(config::from_claude_json(&text)?)
    };
    match (&a.key_file, &a.url) {
        (Some(k), Some(u)) => Ok(Endpoint {
            base_url: config::base_of(u)?,
            key: read_key(k)?,
        }),
        (Some(k), None) => Ok(Endpoint {
            key: read_key(k)?,
            ..from_json()?
        }),
        (None, Some(u)) => Ok(Endpoint {
            base_url: config::base_of(u)?,
            ..from_json()?
        }),
        (None, None) => from_json(),
    }
}

fn read_key(p: &Path) -> anyhow::Result<String> {
    let text = std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
    Ok(config::key_from_file(&text)?)
}

/// The account the key belongs to, when `--me` does not say: the home
/// `hoop provision redeem` wrote for a reinforcement account holds the key
/// (`.mcp_key`) and the account it was minted for (`reinforcement.json`,
/// `user_id` from the redeem answer; seed 002 L29: the key is minted for
/// that account and handed over with its `claude mcp add` line). The
/// backend's `window_register` answers only a window id, so the home is
/// the one place the window already has that names the account.
fn account_of(a: &WatchArgs, key: &str) -> anyhow::Result<UserId> {
    if let Some(me) = a.me {
        return Ok(me);
    }
    let root = hoop_core::home::root()?;
    let mut names: Vec<String> = std::fs::read_dir(&root)
        .map(|d| {
            d.filter_map(Result::ok)
                .filter_map(|e| e.file_name().into_string().ok())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    for name in names {
        let Ok(home) = hoop_core::home::Home::new(&root, &name) else {
            continue;
        };
        let Ok(k) = std::fs::read_to_string(home.mcp_key_path()) else {
            continue;
        };
        if k.trim() != key {
            continue;
        }
        if let Some(r) = hoop_provision::redeem::ReinforcementRecord::load(&home) {
            return Ok(r.user_id);
        }
    }
    bail!(
        "cannot tell which account this key belongs to: no home under {} holds it with its \
         {} (hoop provision redeem writes both); give --me <the account's user id>",
        root.display(),
        hoop_provision::redeem::REINFORCEMENT_FILE
    )
}

/// This installation's id: made once, kept in the bridge directory. Two
/// watchers starting together must end with the same id, so it is created
/// exclusively (a complete temp file hard-linked into place: the link fails
/// when the file exists) and then read back, never overwritten.
fn installation_id(dir: &Path) -> anyhow::Result<String> {
    let p = dir.join("installation_id");
    let read = || -> Option<String> {
        std::fs::read_to_string(&p)
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
    };
    if let Some(id) = read() {
        return Ok(id);
    }
    let tmp = dir.join(format!(".installation_id.{}", unique()));
    write_atomic(
        &tmp,
        format!("inst-{}", unique()).as_bytes(),
        WriteOptions::default(),
    )
    .with_context(|| format!("writing {}", tmp.display()))?;
    let linked = std::fs::hard_link(&tmp, &p);
    let _ = std::fs::remove_file(&tmp);
    match linked {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e).with_context(|| format!("creating {}", p.display())),
    }
    read().with_context(|| format!("{} is empty: remove it to make a new one", p.display()))
}

fn unique() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("{nanos:x}{:x}", std::process::id())
}

fn machine() -> String {
    ["/proc/sys/kernel/hostname", "/etc/hostname"]
        .iter()
        .find_map(|p| std::fs::read_to_string(p).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .or_else(|| {
            std::process::Command::new("hostname")
                .output()
                .ok()
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        })
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".into())
}

/// Codex: every event into the pending store first, then one pass of
/// hand-overs; the alert lines due come back. A store that cannot be
/// written is logged and the lines still printed.
async fn deliver(
    store: &codex::Store,
    lines: &[Event],
    codex_cmd: &str,
    thread: Option<&str>,
) -> Vec<Event> {
    let now = hoop_core::clock::now_unix();
    for e in lines {
        if let Err(err) = store.put(e, now) {
            tracing::error!(error = %err, "cannot write the codex pending store");
        }
    }
    match store
        .pump(codex_cmd, thread, now, codex::default_timeout())
        .await
    {
        Ok(alerts) => alerts,
        Err(err) => {
            tracing::error!(error = %err, "codex delivery");
            vec![]
        }
    }
}

/// File names under `safe`: a session id from the environment never makes
/// a path outside the bridge directory.
fn safe(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn print(lines: &[Event]) -> bool {
    let mut out = std::io::stdout().lock();
    for e in lines {
        if writeln!(out, "{}", e.line()).is_err() {
            return false;
        }
    }
    out.flush().is_ok()
}

/// The environment variable Claude Code sets to the session's id in the
/// commands it starts (observed in a hook's environment,
/// `shared/claude-cli/OBSERVED.md`).
const CLAUDE_SESSION_ENV: &str = "CLAUDE_CODE_SESSION_ID";

/// The window's native session: `--session`, else Claude Code's session
/// id, else a Codex window's thread, else `default`.
fn session_of(a: &WatchArgs) -> String {
    a.session
        .clone()
        .or_else(|| std::env::var(CLAUDE_SESSION_ENV).ok())
        .or_else(|| (a.client == "codex").then(|| a.thread.clone()).flatten())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "default".into())
}

/// One watcher per window session in one bridge directory: two sharing a
/// session would share its state and its window id (one assignment for
/// two windows, a message rung twice and another in neither). Held for the
/// process's life; the kernel frees it when the process dies.
fn lock_session(dir: &Path, session: &str) -> anyhow::Result<hoop_sentinel::lock::Held> {
    let path = dir.join(format!("window-{}.lock", safe(session)));
    // A quick restart: the previous watcher may still be dying. Taking the
    // lock before the claims file is written also means its claims are
    // dropped (dead) and this process's recorded, never the dying pid.
    let give_up = std::time::Instant::now() + SESSION_LOCK_WAIT;
    let mut taken = hoop_sentinel::lock::account(&path);
    let mut said = false;
    while std::time::Instant::now() < give_up {
        let Err(hoop_sentinel::lock::LockError::Busy { holder, .. }) = &taken else {
            break;
        };
        if !said {
            said = true;
            eprintln!(
                "hoop bridge: waiting up to {} s for the watcher of window session {session:?} \
                 ({holder}) to exit",
                SESSION_LOCK_WAIT.as_secs()
            );
        }
        std::thread::sleep(SESSION_LOCK_RETRY);
        taken = hoop_sentinel::lock::account(&path);
    }
    match taken {
        Ok(held) => Ok(held),
        Err(hoop_sentinel::lock::LockError::Busy { holder, .. }) => bail!(
            "another watcher already runs for window session {session:?} in {} ({holder} holds \
             {}): give this window its own --session (Claude Code exports \
             {CLAUDE_SESSION_ENV} to the commands it starts), or stop the other watcher",
            dir.display(),
            path.display()
        ),
        Err(e) => Err(e.into()),
    }
}

/// The watcher's configuration from the command line and the bridge's
/// directory (created), that directory, and the window's session lock.
fn watch_config(
    a: &WatchArgs,
) -> anyhow::Result<(WatchConfig, PathBuf, hoop_sentinel::lock::Held)> {
    let endpoint = endpoint(a)?;
    let dir = state_dir_of(a.state_dir.clone())?;
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let session = session_of(a);
    let held = lock_session(&dir, &session)?;
    let allow_path = dir.join("allow.json");
    let allowlist = match std::fs::read_to_string(&allow_path) {
        Ok(t) => Allowlist::parse(&t).with_context(|| allow_path.display().to_string())?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Allowlist::default(),
        Err(e) => bail!("reading {}: {e}", allow_path.display()),
    };
    let claims_path = dir.join("claims.json");
    if !a.rooms.is_empty() {
        let text = std::fs::read_to_string(&claims_path).unwrap_or_default();
        let merged = config::with_claims(&text, std::process::id(), &a.rooms, pid_alive);
        write_json_atomic(&claims_path, &merged, WriteOptions::default())
            .with_context(|| format!("writing {}", claims_path.display()))?;
    }
    let me = account_of(a, &endpoint.key)?;
    let cfg = WatchConfig {
        endpoint,
        me,
        register: RegisterWindow {
            installation_id: installation_id(&dir)?,
            machine: machine(),
            client: a.client.clone(),
            native_session_id: session.clone(),
            runtime_id: format!("rt-{}", unique()),
            rooms_hint: a.rooms.clone(),
            fallback_hint: a.fallback,
        },
        local_rooms: a.rooms.clone(),
        state_path: dir.join(format!("state-{}.json", safe(&session))),
        claims_path: Some(claims_path),
        allowlist,
    };
    Ok((cfg, dir, held))
}

fn channel(a: WatchArgs) -> anyhow::Result<ExitCode> {
    let (cfg, dir, _held) = watch_config(&a)?;
    let seen = dir.join(format!("say_seen-{}.json", safe(&session_of(&a))));
    let poll = Duration::from_secs_f64(a.poll_secs.max(0.01));
    let ch = Channel::new(cfg, Arc::new(SystemClock::default()), poll, seen)?;
    super::runtime()?.block_on(serve_stdio(ch))?;
    Ok(ExitCode::SUCCESS)
}

fn handover(a: HandoverArgs) -> anyhow::Result<ExitCode> {
    let dir = state_dir_of(a.state_dir.clone())?;
    let store = match a.session.as_deref().map(safe) {
        Some(s) => codex::Store::for_window(&dir, &s),
        None => match codex::Store::windows(&dir).as_slice() {
            [] => codex::Store::new(&dir),
            [one] => codex::Store::for_window(&dir, one),
            many => bail!(
                "{} windows have a store in {}: give --session with one of {}",
                many.len(),
                dir.display(),
                many.join(", ")
            ),
        },
    };
    let rt = super::runtime()?;
    let result = rt.block_on(async {
        let summary = match (&a.summary_file, &a.summary_cmd) {
            (Some(f), _) => std::fs::read_to_string(f).map_err(|e| format!("{}: {e}", f.display())),
            (None, Some(c)) => {
                let argv: Vec<String> = c.split_whitespace().map(str::to_string).collect();
                codex::summary_from_command(&argv, HANDOVER_SUMMARY_TIMEOUT).await
            }
            (None, None) => Err("give --summary-file or --summary-cmd".into()),
        };
        codex::handover(
            &store,
            &a.codex_cmd,
            &a.to,
            summary,
            codex::default_timeout(),
        )
        .await
    });
    match result {
        Ok(()) => {
            println!("codex events now go to thread {}", a.to);
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            eprintln!("hoop: {e}");
            Ok(ExitCode::from(EXIT_NO_HANDOVER))
        }
    }
}

fn watch(a: WatchArgs) -> anyhow::Result<ExitCode> {
    let (cfg, dir, _held) = watch_config(&a)?;
    let codex_store =
        (a.client == "codex").then(|| codex::Store::for_window(&dir, &safe(&session_of(&a))));
    let poll = Duration::from_secs_f64(a.poll_secs.max(0.01));
    let rt = super::runtime()?;
    rt.block_on(async move {
        let mut w = Watcher::new(cfg, Arc::new(SystemClock::default()))?;
        let drive_cfg = DriveConfig {
            push: !a.no_push,
            poll,
        };
        let rounds = std::cell::Cell::new(0u64);
        let (codex_cmd, thread, max_rounds) = (a.codex_cmd.clone(), a.thread.clone(), a.max_rounds);
        let sink = |mut lines: Vec<Event>| {
            let store = codex_store.clone();
            let (codex_cmd, thread) = (codex_cmd.clone(), thread.clone());
            rounds.set(rounds.get() + 1);
            let n = rounds.get();
            async move {
                if let Some(store) = &store {
                    lines.extend(deliver(store, &lines, &codex_cmd, thread.as_deref()).await);
                }
                // The window's monitor gone (stdout closed): nobody to ring.
                print(&lines) && max_rounds.is_none_or(|m| n < m)
            }
        };
        match drive(&mut w, drive_cfg, sink).await {
            Ok(()) => Ok(ExitCode::SUCCESS),
            Err(Stop::KeyRejected) => {
                print(&[Event::notice("key_rejected", KEY_REJECTED)]);
                Ok(ExitCode::from(EXIT_KEY_REJECTED))
            }
        }
    })
}
