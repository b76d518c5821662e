//! The account's usage snapshot. The backend keeps per agent the latest
//! CUMULATIVE totals (`POST /v1/workrooms/usage` is an upsert where a null
//! never overwrites) and a card's cost is its end snapshot minus its start
//! snapshot, so the sentinel reports the account's totals so far, never a
//! turn's own numbers.
//!
//! - **The account's, not the machine user's**: the totals are the
//!   account's ledger (`hoop_meter::ledger`, kept in the home) over
//!   [`account_sources`], counting only the records the one attribution
//!   rule gives the home (`hoop_meter::attribution`: its working directory
//!   — turns and patrols — and its workers' scratch directories).
//! - **Never down**: the ledger keeps what a transcript contributed after
//!   Claude Code deletes it, and what a finished worker contributed after
//!   its directory is removed ([`fold_finished`], after each turn's
//!   report).
//! - **Unknown is null**: until the account has a response, every number
//!   is null ([`snapshot`]), which the upsert leaves alone.
//! - **The finishing turn is on its card**: the card tools' `PreToolUse`
//!   hook (`hoop card-snapshot`) asks this daemon, over loopback, for a
//!   snapshot before the call ends or starts a card ([`serve_snapshots`]);
//!   the hook never blocks the call.
//!
//! Reading is blocking (file I/O under the ledger's flock): the async
//! callers run it on the blocking pool.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Instant;

use hoop_api::types::{CardId, UsageReport};
use hoop_core::home::Home;
use hoop_core::transcript::Usage;
use hoop_meter::ledger::{self, Ledger, SyncReport};
use hoop_meter::{MeterError, ProjectFilter, Source};
use serde::{Deserialize, Serialize};

use crate::agent::TurnResult;
use crate::constants::{
    CARD_SNAPSHOT_BODY_MAX, CARD_SNAPSHOT_CALL_WAIT, CARD_SNAPSHOT_ENDPOINT_FILE,
    CARD_SNAPSHOT_PATH, CARD_SNAPSHOT_POLL, CARD_SNAPSHOT_TAIL_BYTES, CARD_SNAPSHOT_TIMEOUT,
    USAGE_CACHE_FILE, USAGE_CATCH_UP_POLL, USAGE_CATCH_UP_WAIT, USAGE_LEDGER_LOCK_WAIT,
};
use crate::round::RoundCtx;
use crate::worker::{self, WorkerState};

/// The report for `totals` (`None`: unknown — no response yet, or the
/// reader failed). Full-price input is `tokens_in`; every cache read and
/// write is `tokens_cached_in`. A number beyond `i64` is not reported
/// (null) rather than wrapped.
pub fn snapshot(card_id: Option<CardId>, totals: Option<&Usage>) -> UsageReport {
    let num = |v: u64| i64::try_from(v).ok();
    UsageReport {
        card_id,
        tokens_in: totals.and_then(|u| num(u.input)),
        tokens_cached_in: totals.and_then(|u| num(u.cache_read.saturating_add(u.cache_write()))),
        tokens_out: totals.and_then(|u| num(u.output)),
    }
}

/// True when the transcripts hold the turn's own output: the CLI writes a
/// turn's last response to its transcript around the time it prints the
/// result line, so a snapshot read at once can miss it. `turn_out` is the
/// output the result line counted (`None`: unknown, nothing to wait for).
pub fn caught_up(before: &Usage, now: &Usage, turn_out: Option<i64>) -> bool {
    let want = turn_out.map_or(0, |t| u64::try_from(t).unwrap_or(0));
    now.output.saturating_sub(before.output) >= want
}

// ---------------------------------------------------------------- sources

/// The agent's Claude directories for its environment `env` (over the
/// daemon's own), through the one rule `hoop_meter::claude_dirs`.
pub fn agent_dirs(env: &[(String, String)]) -> Option<hoop_meter::ClaudeDirs> {
    hoop_meter::claude_dirs::claude_dirs_for(env, |k| std::env::var_os(k))
}

/// The home's workers' Claude directories (each scratch HOME, whose agent
/// runs without a config dir of its own: `worker::worker_env`).
fn worker_sources(home: &Home) -> Vec<Source> {
    let Ok(rd) = std::fs::read_dir(home.workers_dir()) else {
        return Vec::new();
    };
    let mut cards: Vec<CardId> = rd
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect();
    cards.sort_unstable();
    cards
        .into_iter()
        .flat_map(|card| {
            let scratch = worker::scratch_home(home, card);
            hoop_meter::claude_dirs(|k| (k == "HOME").then(|| scratch.clone().into_os_string()))
                .map(|d| d.all)
                .unwrap_or_default()
        })
        .filter(|d| d.is_dir())
        .map(|dir| Source {
            dir,
            projects: ProjectFilter::All,
        })
        .collect()
}

/// Where the account's transcripts are: the project folders of its
/// working directory in each of the agent's Claude directories, and every
/// folder of its workers'. `None` when the agent's directories cannot be
/// known (no `HOME`, no `CLAUDE_CONFIG_DIR`).
pub fn account_sources(home: &Home, env: &[(String, String)]) -> Option<Vec<Source>> {
    let dirs = agent_dirs(env)?;
    let slugs = hoop_meter::claude_dirs::project_slugs(&home.workdir());
    let mut v: Vec<Source> = dirs
        .all
        .into_iter()
        .map(|dir| Source {
            dir,
            projects: ProjectFilter::Slugs(slugs.clone()),
        })
        .collect();
    v.extend(worker_sources(home));
    Some(v)
}

/// Every home's account directories under `root` (for `hoop usage`),
/// whole: a report reads every project of them.
pub fn all_homes_sources(root: &Path) -> Vec<Source> {
    let Ok(rd) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let mut names: Vec<String> = rd
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .collect();
    names.sort();
    let mut out: Vec<Source> = Vec::new();
    for name in names {
        let Ok(home) = Home::new(root, &name) else {
            continue;
        };
        // A sentinel account's home has its backend config.
        if !home.config_path().is_file() {
            continue;
        }
        let Ok(cfg) = crate::config::SentinelConfig::load(&home.dir()) else {
            continue;
        };
        let env: Vec<(String, String)> = cfg.env.into_iter().collect();
        for src in account_sources(&home, &env).unwrap_or_default() {
            if !out.iter().any(|s| s.dir == src.dir) {
                out.push(Source {
                    dir: src.dir,
                    projects: ProjectFilter::All,
                });
            }
        }
    }
    out
}

/// The attribution predicate of `home` over a record's working directory.
pub fn belongs_to(home: &Home) -> impl Fn(&str) -> bool + use<> {
    let roots = hoop_meter::attribution::hoop_roots(&home.root);
    let name = home.name.clone();
    move |cwd| hoop_meter::attribution::home_of(cwd, &roots).as_deref() == Some(name.as_str())
}

// ---------------------------------------------------------------- reading

/// What a reading covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Every source.
    Account,
    /// Only the agent's own project folders (the transcript a turn is
    /// writing): the cheap re-read while the turn's last response lands.
    Agent,
}

/// One reading of the account.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reading {
    /// The account's totals; `None` until it has a response.
    pub totals: Option<Usage>,
    pub sync: SyncReport,
    /// Whether the ledger was written.
    pub saved: bool,
}

/// Why the account could not be read.
#[derive(Debug, thiserror::Error)]
pub enum UsageError {
    #[error(
        "the agent's Claude directory is unknown: its environment has neither \
         CLAUDE_CONFIG_DIR nor HOME"
    )]
    NoConfigDir,
    #[error(transparent)]
    Meter(#[from] MeterError),
}

/// The ledger of each home this process reads, kept between readings so a
/// reading costs what changed, not what the account ever did.
static LEDGERS: LazyLock<Mutex<HashMap<PathBuf, LedgerSlot>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// One home's ledger, once read.
type LedgerSlot = Arc<Mutex<Option<Ledger>>>;

fn ledger_slot(home: &Home) -> LedgerSlot {
    LEDGERS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .entry(home.dir())
        .or_default()
        .clone()
}

/// The home's finished workers whose agent can no longer write: not
/// running, and no live supervisor (asked of the kernel).
fn finished_workers(home: &Home) -> Vec<CardId> {
    worker::records(home)
        .into_iter()
        // Only a worker whose card's finish landed: a `Finishing` record
        // still holds the finish text the renewer must land.
        .filter(|r| matches!(r.state, WorkerState::Finished | WorkerState::Stopped))
        .filter(|r| r.finish.is_none())
        .filter(|r| {
            !r.pid
                .is_some_and(|p| crate::proctree::is_live(p) && worker::is_supervisor(p, r.card_id))
        })
        .map(|r| r.card_id)
        .collect()
}

/// The home's ledger, loaded (again, when another process saved since)
/// under its lock, handed to `f`.
fn with_ledger<T>(
    home: &Home,
    f: impl FnOnce(&mut Ledger) -> Result<T, UsageError>,
) -> Result<T, UsageError> {
    let slot = ledger_slot(home);
    let mut guard = slot.lock().unwrap_or_else(|e| e.into_inner());
    let dir = home.dir();
    let _held = ledger::lock(&dir, USAGE_LEDGER_LOCK_WAIT)?;
    if guard.as_ref().is_none_or(|l| !l.is_current()) {
        let fresh = !dir.join(ledger::LEDGER_FILE).exists();
        *guard = Some(Ledger::load(&dir)?);
        if fresh {
            // The ledger replaces the old incremental cache.
            let _ = std::fs::remove_file(dir.join(USAGE_CACHE_FILE));
        }
    }
    f(guard.as_mut().expect("loaded above"))
}

/// Read the account (blocking): take the ledger's lock, read what changed
/// in `scope`, save what is new.
pub fn read_account(
    home: &Home,
    env: &[(String, String)],
    scope: Scope,
) -> Result<Reading, UsageError> {
    let mut sources = account_sources(home, env).ok_or(UsageError::NoConfigDir)?;
    if scope == Scope::Agent {
        sources.retain(|s| matches!(s.projects, ProjectFilter::Slugs(_)));
    }
    let belongs = belongs_to(home);
    let (sync, saved, totals) = with_ledger(home, |ledger| {
        let sync = ledger.sync(&sources, &belongs);
        let saved = ledger.save()?;
        Ok((sync, saved, ledger.totals()))
    })?;
    for e in &sync.errors {
        tracing::warn!(error = %e, "a transcript could not be read; its part is read next time");
    }
    Ok(Reading {
        totals,
        sync,
        saved,
    })
}

/// Fold the home's finished workers into the account (blocking): read
/// their transcripts to the end into the ledger, save, then remove their
/// directories (what they contributed stays in the ledger). Returns the
/// folded cards.
pub fn fold_finished(home: &Home, env: &[(String, String)]) -> Result<Vec<CardId>, UsageError> {
    let finished = finished_workers(home);
    if finished.is_empty() {
        return Ok(Vec::new());
    }
    let sources = account_sources(home, env).ok_or(UsageError::NoConfigDir)?;
    let belongs = belongs_to(home);
    with_ledger(home, |ledger| {
        ledger.sync(&sources, &belongs);
        ledger.save()?;
        Ok(())
    })?;
    let mut folded = Vec::new();
    for card in finished {
        let d = worker::worker_dir(home, card);
        match std::fs::remove_dir_all(&d) {
            Ok(()) => folded.push(card),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                tracing::warn!(card, dir = %d.display(), error = %e, "a finished worker's directory could not be removed; tried again after the next turn")
            }
        }
    }
    Ok(folded)
}

fn agent_env(ctx: &RoundCtx) -> Vec<(String, String)> {
    ctx.cfg
        .env
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// [`read_account`] on the blocking pool, failures logged (`None`).
pub async fn read(ctx: &RoundCtx, scope: Scope) -> Option<Reading> {
    let (home, env) = (ctx.home.clone(), agent_env(ctx));
    match tokio::task::spawn_blocking(move || read_account(&home, &env, scope)).await {
        Ok(Ok(r)) => Some(r),
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "usage totals unreadable");
            None
        }
        Err(e) => {
            tracing::warn!(error = %e, "usage reader stopped");
            None
        }
    }
}

/// The account's totals before a turn, for the catch-up after it (an
/// account without a response yet is at zero here); `None` when they
/// cannot be read.
pub async fn account_totals(ctx: &RoundCtx) -> Option<Usage> {
    read(ctx, Scope::Account)
        .await
        .map(|r| r.totals.unwrap_or_default())
}

/// Report the account's cumulative totals after a turn, naming the card
/// decided before it. `before` is the reading before the turn: the report
/// waits (at most [`USAGE_CATCH_UP_WAIT`]) until the transcripts hold the
/// turn's output, re-reading only the agent's own transcripts meanwhile.
pub async fn report_usage(
    ctx: &RoundCtx,
    card_id: Option<CardId>,
    before: Option<Usage>,
    result: &TurnResult,
) {
    let turn_out = result.usage.and_then(|u| u.tokens_out);
    let deadline = Instant::now() + USAGE_CATCH_UP_WAIT;
    let mut scope = Scope::Account;
    let reading = loop {
        let Some(now) = read(ctx, scope).await else {
            return;
        };
        let Some(before) = &before else { break now };
        if caught_up(before, &now.totals.unwrap_or_default(), turn_out) {
            break now;
        }
        if Instant::now() >= deadline {
            tracing::warn!(
                "the turn's last response is not in the transcripts yet; reporting what is there"
            );
            break now;
        }
        scope = Scope::Agent;
        tokio::time::sleep(USAGE_CATCH_UP_POLL).await;
    };
    post(ctx, card_id, reading.totals.as_ref(), "usage reported").await;
    // After the report, off its path: the workers that finished.
    let (home, env) = (ctx.home.clone(), agent_env(ctx));
    match tokio::task::spawn_blocking(move || fold_finished(&home, &env)).await {
        Ok(Ok(cards)) if !cards.is_empty() => tracing::info!(
            ?cards,
            "finished workers' usage folded into the account; their directories removed"
        ),
        Ok(Ok(_)) => {}
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "finished workers not folded; tried again after the next turn")
        }
        Err(e) => tracing::warn!(error = %e, "folding stopped"),
    }
}

async fn post(ctx: &RoundCtx, card_id: Option<CardId>, totals: Option<&Usage>, what: &str) -> bool {
    let report = snapshot(card_id, totals);
    match ctx.client.usage(&report).await {
        Ok(_) => {
            tracing::info!(
                card = ?card_id,
                tokens_in = ?report.tokens_in,
                tokens_cached_in = ?report.tokens_cached_in,
                tokens_out = ?report.tokens_out,
                "{what}"
            );
            true
        }
        Err(e) => {
            tracing::warn!(error = %e, "usage report failed");
            false
        }
    }
}

// ---------------------------------------------------------------- card tools

// The hook gives up before Claude Code would stop it, and waits for the
// call's transcript line for less than it waits in all.
const _: () = assert!(
    CARD_SNAPSHOT_CALL_WAIT.as_millis() < CARD_SNAPSHOT_TIMEOUT.as_millis()
        && CARD_SNAPSHOT_TIMEOUT.as_secs() < hoop_guards::install::CARD_SNAPSHOT_HOOK_TIMEOUT_SECS
);

/// The card tools whose call ends or starts a card, by their MCP name's
/// last part (`mcp__<server>__<tool>`); `work_task_progress` counts only
/// when its input claims.
pub const CARD_TOOLS: [&str; 3] = ["work_task_finish", "work_task_start", "work_task_take"];
/// The progress tool, a boundary only with `"claim": true`.
pub const CARD_PROGRESS_TOOL: &str = "work_task_progress";

/// A card-boundary tool call, as the hook saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Boundary {
    /// The tool's MCP name.
    pub tool: String,
    /// The working directory of the session that makes the call.
    pub cwd: String,
    /// The call's id and its session's transcript: the snapshot waits until
    /// the response that makes the call is written there (Claude Code runs
    /// the hook before its transcript write of that response is on disk).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_use_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript_path: Option<PathBuf>,
}

/// The `PreToolUse` payload of a call that ends or starts a card; `None`
/// for every other payload (another tool, another event, a progress line
/// that does not claim, a malformed payload).
pub fn card_boundary(payload: &[u8]) -> Option<Boundary> {
    #[derive(Deserialize)]
    struct P {
        hook_event_name: Option<String>,
        tool_name: String,
        #[serde(default)]
        tool_input: serde_json::Value,
        #[serde(default)]
        cwd: String,
        #[serde(default)]
        tool_use_id: Option<String>,
        #[serde(default)]
        transcript_path: Option<PathBuf>,
    }
    let p: P = serde_json::from_slice(payload).ok()?;
    if p.hook_event_name
        .as_deref()
        .is_some_and(|e| e != "PreToolUse")
    {
        return None;
    }
    let rest = p.tool_name.strip_prefix("mcp__")?;
    let (server, tool) = rest.rsplit_once("__")?;
    if server.is_empty() {
        return None;
    }
    let boundary = CARD_TOOLS.contains(&tool)
        || (tool == CARD_PROGRESS_TOOL && p.tool_input["claim"] == serde_json::Value::Bool(true));
    boundary.then_some(Boundary {
        tool: p.tool_name,
        cwd: p.cwd,
        tool_use_id: p.tool_use_id,
        transcript_path: p.transcript_path,
    })
}

/// Whether the last [`CARD_SNAPSHOT_TAIL_BYTES`] of `transcript` hold the
/// response that makes tool call `tool_use_id` (its `tool_use` block:
/// `"id":"<id>"`; a tool result names it as `"tool_use_id"`, which does not
/// match).
pub fn holds_tool_use(transcript: &Path, tool_use_id: &str) -> bool {
    use std::io::{Seek, SeekFrom};
    let Ok(mut f) = std::fs::File::open(transcript) else {
        return false;
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let from = len.saturating_sub(CARD_SNAPSHOT_TAIL_BYTES);
    if f.seek(SeekFrom::Start(from)).is_err() {
        return false;
    }
    let mut tail = Vec::new();
    if f.take(CARD_SNAPSHOT_TAIL_BYTES)
        .read_to_end(&mut tail)
        .is_err()
    {
        return false;
    }
    let needle = format!("\"id\":\"{tool_use_id}\"");
    memchr::memmem::find(&tail, needle.as_bytes()).is_some()
}

/// Wait (blocking, until `deadline`) for the call's response to be in its
/// transcript; `false` when it never came. Only a transcript the account's
/// sources read is looked at.
pub fn wait_for_call(
    home: &Home,
    env: &[(String, String)],
    b: &Boundary,
    deadline: Instant,
) -> bool {
    let (Some(id), Some(path)) = (&b.tool_use_id, &b.transcript_path) else {
        return true;
    };
    let ours = account_sources(home, env).is_some_and(|srcs| srcs.iter().any(|s| s.covers(path)));
    if !ours {
        return true;
    }
    loop {
        if holds_tool_use(path, id) {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(CARD_SNAPSHOT_POLL);
    }
}

/// The home a card call belongs to, by the one attribution rule over its
/// session's working directory, under `root`.
pub fn boundary_home(b: &Boundary, root: &Path) -> Option<Home> {
    let roots = hoop_meter::attribution::hoop_roots(root);
    let name = hoop_meter::attribution::home_of(&b.cwd, &roots)?;
    Home::new(root, &name).ok()
}

/// The endpoint's answer to a snapshot request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotAnswer {
    /// The snapshot reached the backend.
    pub reported: bool,
    /// Why not, in a few words, when it did not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

/// Ask the home's sentinel for a snapshot before a card call (blocking,
/// every step bounded by [`CARD_SNAPSHOT_TIMEOUT`] overall; no async
/// runtime: this runs inside a hook). `Err` names why nothing was reported.
pub fn request_snapshot(home: &Home, b: &Boundary) -> Result<SnapshotAnswer, String> {
    let deadline = Instant::now() + CARD_SNAPSHOT_TIMEOUT;
    let file = home.dir().join(CARD_SNAPSHOT_ENDPOINT_FILE);
    let endpoint = std::fs::read_to_string(&file)
        .map_err(|e| format!("{}: {e} (is the home's sentinel running?)", file.display()))?;
    let addr = hoop_guards::lane::relay::loopback_addr(endpoint.trim())
        .ok_or_else(|| format!("{}: not a loopback endpoint", file.display()))?;
    let left = |what: &str| {
        deadline
            .checked_duration_since(Instant::now())
            .filter(|d| !d.is_zero())
            .ok_or_else(|| format!("no answer within {CARD_SNAPSHOT_TIMEOUT:?} ({what})"))
    };
    let body = serde_json::to_vec(b).map_err(|e| e.to_string())?;
    let mut s = TcpStream::connect_timeout(&addr, left("connect")?)
        .map_err(|e| format!("{addr}: {e} (is the home's sentinel running?)"))?;
    s.set_write_timeout(Some(left("send")?))
        .map_err(|e| e.to_string())?;
    let head = format!(
        "POST {CARD_SNAPSHOT_PATH} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes())
        .and_then(|()| s.write_all(&body))
        .map_err(|e| format!("{addr}: {e}"))?;
    let mut answer = Vec::new();
    loop {
        s.set_read_timeout(Some(left("answer")?))
            .map_err(|e| e.to_string())?;
        let mut buf = [0u8; 1024];
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) if answer.len() + n <= CARD_SNAPSHOT_BODY_MAX => {
                answer.extend_from_slice(&buf[..n])
            }
            Ok(_) => return Err("the answer is too long".into()),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            // A read that timed out: the deadline passed.
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return Err(format!(
                    "{addr}: no answer within {CARD_SNAPSHOT_TIMEOUT:?} (answer)"
                ));
            }
            Err(e) => return Err(format!("{addr}: {e}")),
        }
    }
    let text = String::from_utf8_lossy(&answer);
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b)
        .ok_or("the sentinel's answer is not HTTP")?;
    serde_json::from_str(body).map_err(|e| format!("the sentinel's answer: {e}"))
}

/// Bind the snapshot endpoint on `127.0.0.1:0` and publish its address in
/// the home; `None` (logged) when either fails: the card tools' hook then
/// finds no sentinel and lets the calls go on unreported.
pub async fn bind_snapshots(home: &Home) -> Option<(tokio::net::TcpListener, SocketAddr)> {
    let listener = match tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await {
        Ok(l) => l,
        Err(e) => {
            tracing::warn!(error = %e, "card snapshot endpoint not served");
            return None;
        }
    };
    let addr = listener.local_addr().ok()?;
    let path = home.dir().join(CARD_SNAPSHOT_ENDPOINT_FILE);
    if let Err(e) = hoop_core::fsutil::write_atomic(
        &path,
        format!("http://{addr}\n").as_bytes(),
        hoop_core::fsutil::WriteOptions::default(),
    ) {
        tracing::warn!(path = %path.display(), error = %e, "card snapshot endpoint not published");
        return None;
    }
    Some((listener, addr))
}

/// Serve the snapshot endpoint until the task is aborted. Each request:
/// read the account, post its totals, answer whether they were posted.
/// Anyone on the machine may ask; all it does is report the account's true
/// totals once more.
pub async fn serve_snapshots(listener: tokio::net::TcpListener, ctx: Arc<RoundCtx>) {
    use axum::routing::post;
    let app = axum::Router::new()
        .route(CARD_SNAPSHOT_PATH, post(on_snapshot))
        .layer(axum::extract::DefaultBodyLimit::max(CARD_SNAPSHOT_BODY_MAX))
        .with_state(ctx);
    if let Err(e) = axum::serve(listener, app).await {
        tracing::warn!(error = %e, "card snapshot endpoint stopped");
    }
}

async fn on_snapshot(
    axum::extract::State(ctx): axum::extract::State<Arc<RoundCtx>>,
    body: axum::body::Bytes,
) -> axum::Json<SnapshotAnswer> {
    let call = serde_json::from_slice::<Boundary>(&body).ok();
    let tool = call.as_ref().map(|b| b.tool.clone()).unwrap_or_default();
    let started = Instant::now();
    if let Some(b) = call {
        let (home, env) = (ctx.home.clone(), agent_env(&ctx));
        let deadline = started + CARD_SNAPSHOT_CALL_WAIT;
        let landed =
            tokio::task::spawn_blocking(move || wait_for_call(&home, &env, &b, deadline)).await;
        if !matches!(landed, Ok(true)) {
            tracing::warn!(
                tool,
                "the card call's response is not in its transcript yet; the snapshot is taken without it"
            );
        }
    }
    let answer = match read(&ctx, Scope::Account).await {
        None => SnapshotAnswer {
            reported: false,
            why: Some("the account's usage could not be read".into()),
        },
        Some(r) => {
            let card = ctx.current_card.lock().ok().and_then(|c| *c);
            let reported = post(&ctx, card, r.totals.as_ref(), "card snapshot reported").await;
            SnapshotAnswer {
                reported,
                why: (!reported).then(|| "the backend did not take the report".into()),
            }
        }
    };
    tracing::info!(
        tool,
        reported = answer.reported,
        ms = started.elapsed().as_millis() as u64,
        "card snapshot before a card call"
    );
    axum::Json(answer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caught_up_when_the_turns_output_is_in_the_transcripts() {
        let out = |o: u64| usage(0, 0, 0, 0, 0, o);
        // (before, now, turn's output, caught up)
        let table = [
            (out(10), out(10), None, true),
            (out(10), out(10), Some(0), true),
            (out(10), out(10), Some(-1), true),
            (out(10), out(13), Some(7), false),
            (out(10), out(17), Some(7), true),
            (out(10), out(30), Some(7), true),
            // A transcript rewritten shorter never waits forever on a wrap.
            (out(10), out(0), Some(7), false),
        ];
        for (before, now, turn, want) in table {
            assert_eq!(
                caught_up(&before, &now, turn),
                want,
                "{before:?} {now:?} {turn:?}"
            );
        }
    }

    fn usage(input: u64, w5: u64, w1: u64, wu: u64, read: u64, out: u64) -> Usage {
        Usage {
            input,
            cache_write_5m: w5,
            cache_write_1h: w1,
            cache_write_unsplit: wu,
            cache_read: read,
            output: out,
        }
    }

    #[test]
    fn what_is_reported() {
        // (totals, expected (in, cached_in, out))
        type Row = (Option<Usage>, (Option<i64>, Option<i64>, Option<i64>));
        let big = u64::MAX;
        let table: Vec<Row> = vec![
            // Unknown (no response yet, or the reader failed): nothing is
            // reported, the stored totals stay.
            (None, (None, None, None)),
            // An account whose responses all counted zero is at zero.
            (Some(usage(0, 0, 0, 0, 0, 0)), (Some(0), Some(0), Some(0))),
            // Cache reads and writes of every TTL are the cached input.
            (Some(usage(7, 1, 2, 3, 40, 9)), (Some(7), Some(46), Some(9))),
            // Beyond i64: that number is not reported, the others are.
            (Some(usage(big, 0, 0, 0, big, 5)), (None, None, Some(5))),
        ];
        for (totals, (i, c, o)) in table {
            let r = snapshot(Some(3), totals.as_ref());
            assert_eq!(r.card_id, Some(3), "{totals:?}");
            assert_eq!(r.tokens_in, i, "in {totals:?}");
            assert_eq!(r.tokens_cached_in, c, "cached {totals:?}");
            assert_eq!(r.tokens_out, o, "out {totals:?}");
        }
    }

    /// A transcript line of one API response, written from `cwd`.
    fn line(id: &str, cwd: &Path, input: u64, read: u64, out: u64) -> String {
        format!(
            r#"{{"type":"assistant","timestamp":"2026-12-03T10:00:00Z","sessionId":"s","cwd":"{}","requestId":"r-{id}","message":{{"id":"{id}","model":"claude-opus-4-8","usage":{{"input_tokens":{input},"cache_read_input_tokens":{read},"output_tokens":{out}}}}}}}"#,
            cwd.display()
        )
    }

    fn put(claude_dir: &Path, cwd: &Path, file: &str, lines: &[String]) -> PathBuf {
        let dir = claude_dir
            .join("projects")
            .join(hoop_meter::claude_dirs::project_slug(
                &cwd.to_string_lossy(),
            ));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(file);
        std::fs::write(&p, lines.join("\n") + "\n").unwrap();
        p
    }

    /// A worker's record on `card` in `state`.
    fn record(home: &Home, card: CardId, state: WorkerState, pid: Option<u32>) {
        worker::write_record(
            home,
            &worker::WorkerRecord {
                pid,
                ..crate::test_support::worker_record(card, state)
            },
        )
        .unwrap();
    }

    fn reported(r: &Reading) -> (Option<i64>, Option<i64>, Option<i64>) {
        let s = snapshot(None, r.totals.as_ref());
        (s.tokens_in, s.tokens_cached_in, s.tokens_out)
    }

    /// Issue 25 items 1-3 over real files: the snapshot counts only the
    /// account's records (its turns and its workers', not another home's or
    /// the operator's in the same config dir, nor a neighbour folder whose
    /// name merely extends the home's), keeps what a deleted transcript
    /// contributed, and is null until the account has a response.
    #[test]
    fn the_snapshot_is_the_accounts_own_never_goes_down_and_is_null_until_known() {
        let root = tempfile::tempdir().unwrap();
        let root = root.path().canonicalize().unwrap();
        let home = Home::new(&root, "bolt").unwrap();
        std::fs::create_dir_all(home.workdir()).unwrap();
        let agent_home = root.join("agent-home");
        let claude = agent_home.join(".claude");
        std::fs::create_dir_all(&claude).unwrap();
        let env = vec![("HOME".to_string(), agent_home.display().to_string())];

        // Nothing yet: unknown, every number null.
        let r = read_account(&home, &env, Scope::Account).unwrap();
        assert_eq!(r.totals, None);
        assert_eq!(reported(&r), (None, None, None));

        // Someone else's tokens in the same config dir.
        let nova = root.join("nova/work");
        put(
            &claude,
            &nova,
            "n.jsonl",
            &[line("nova-1", &nova, 900, 900, 900)],
        );
        put(
            &claude,
            Path::new("/home/ops/project"),
            "o.jsonl",
            &[line("ops-1", Path::new("/home/ops/project"), 800, 800, 800)],
        );
        let neighbour = root.join("bolt/work-x");
        put(
            &claude,
            &neighbour,
            "x.jsonl",
            &[line("x-1", &neighbour, 700, 700, 700)],
        );
        let r = read_account(&home, &env, Scope::Account).unwrap();
        assert_eq!(reported(&r), (None, None, None), "none of it is bolt's");

        // The account's own turn, in a subdirectory too, and a finished
        // worker's scratch transcripts.
        let work = home.workdir();
        let own = put(
            &claude,
            &work,
            "s1.jsonl",
            &[
                line("m1", &work, 10, 100, 1),
                line("m2", &work.join("sub"), 20, 200, 2),
            ],
        );
        let card = 7;
        let scratch = worker::scratch_home(&home, card);
        let wwork = worker::workdir(&home, card);
        std::fs::create_dir_all(&wwork).unwrap();
        put(
            &scratch.join(".claude"),
            &wwork,
            "w.jsonl",
            &[line("w1", &wwork, 3, 30, 3)],
        );
        record(&home, card, WorkerState::Finished, None);
        let r = read_account(&home, &env, Scope::Account).unwrap();
        assert_eq!(reported(&r), (Some(33), Some(330), Some(6)));
        // The finished worker is folded: its directory is gone, its tokens stay.
        assert_eq!(fold_finished(&home, &env).unwrap(), vec![card]);
        assert!(!worker::worker_dir(&home, card).exists());
        assert!(fold_finished(&home, &env).unwrap().is_empty());
        let r = read_account(&home, &env, Scope::Account).unwrap();
        assert_eq!(reported(&r), (Some(33), Some(330), Some(6)));
        assert!(!r.saved, "nothing changed: nothing written");

        // Claude Code deletes the transcript; a resumed session copies m1.
        std::fs::remove_file(&own).unwrap();
        put(&claude, &work, "s2.jsonl", &[line("m1", &work, 10, 100, 1)]);
        let r = read_account(&home, &env, Scope::Account).unwrap();
        assert_eq!(reported(&r), (Some(33), Some(330), Some(6)), "never down");

        // A new process (the ledger read back from disk) agrees, and counts
        // what comes next once.
        LEDGERS.lock().unwrap().clear();
        put(&claude, &work, "s3.jsonl", &[line("m3", &work, 1, 1, 1)]);
        let r = read_account(&home, &env, Scope::Account).unwrap();
        assert_eq!(reported(&r), (Some(34), Some(331), Some(7)));
    }

    #[test]
    fn a_running_worker_is_counted_and_kept() {
        let root = tempfile::tempdir().unwrap();
        let root = root.path().canonicalize().unwrap();
        let home = Home::new(&root, "bolt").unwrap();
        std::fs::create_dir_all(home.workdir()).unwrap();
        let env = vec![("HOME".to_string(), root.join("h").display().to_string())];
        let card = 9;
        let wwork = worker::workdir(&home, card);
        std::fs::create_dir_all(&wwork).unwrap();
        put(
            &worker::scratch_home(&home, card).join(".claude"),
            &wwork,
            "w.jsonl",
            &[line("w1", &wwork, 3, 30, 3)],
        );
        // Running, with a live supervisor (this test process stands in for
        // one only if it is one: it is not, so use the Running state).
        record(&home, card, WorkerState::Running, Some(std::process::id()));
        let r = read_account(&home, &env, Scope::Account).unwrap();
        assert_eq!(reported(&r), (Some(3), Some(30), Some(3)));
        assert!(fold_finished(&home, &env).unwrap().is_empty());
        assert!(worker::worker_dir(&home, card).exists());
    }

    #[test]
    fn the_call_is_waited_for_in_its_transcript() {
        let d = tempfile::tempdir().unwrap();
        let t = d.path().join("t.jsonl");
        std::fs::write(
            &t,
            r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"toolu_1"}]}}
"#,
        )
        .unwrap();
        assert!(!holds_tool_use(&t, "toolu_1"), "a result is not the call");
        std::fs::write(
            &t,
            r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"toolu_1","name":"x"}]}}
"#,
        )
        .unwrap();
        assert!(holds_tool_use(&t, "toolu_1"));
        assert!(!holds_tool_use(&t, "toolu_2"));
        assert!(!holds_tool_use(&d.path().join("none"), "toolu_1"));
    }

    #[test]
    fn card_boundaries_as_a_table() {
        let p = |event: &str, tool: &str, input: &str| {
            format!(
                r#"{{"hook_event_name":"{event}","tool_name":"{tool}","tool_input":{input},"cwd":"/r/bolt/work"}}"#
            )
        };
        // (payload, a boundary?)
        let cases: Vec<(String, bool)> = vec![
            (p("PreToolUse", "mcp__hoop__work_task_finish", "{}"), true),
            (p("PreToolUse", "mcp__hoop__work_task_start", "{}"), true),
            (p("PreToolUse", "mcp__hoop__work_task_take", "{}"), true),
            // Another server name serves the same tools.
            (p("PreToolUse", "mcp__work__work_task_finish", "{}"), true),
            // Progress: only a claim starts a card.
            (
                p(
                    "PreToolUse",
                    "mcp__hoop__work_task_progress",
                    r#"{"claim":true}"#,
                ),
                true,
            ),
            (
                p(
                    "PreToolUse",
                    "mcp__hoop__work_task_progress",
                    r#"{"line":"50%"}"#,
                ),
                false,
            ),
            (
                p(
                    "PreToolUse",
                    "mcp__hoop__work_task_progress",
                    r#"{"claim":"true"}"#,
                ),
                false,
            ),
            // Not a card boundary.
            (p("PreToolUse", "mcp__hoop__work_task_lease", "{}"), false),
            (p("PreToolUse", "mcp__hoop__chat_send_text", "{}"), false),
            (
                p("PreToolUse", "Bash", r#"{"command":"work_task_finish"}"#),
                false,
            ),
            (p("PreToolUse", "work_task_finish", "{}"), false),
            (p("PreToolUse", "mcp____work_task_finish", "{}"), false),
            (
                p("PreToolUse", "mcp__hoop__work_task_finished", "{}"),
                false,
            ),
            (p("PostToolUse", "mcp__hoop__work_task_finish", "{}"), false),
            ("not json".into(), false),
            (r#"{"tool_name":1}"#.into(), false),
        ];
        for (payload, want) in cases {
            let got = card_boundary(payload.as_bytes());
            assert_eq!(got.is_some(), want, "{payload}");
            if let Some(b) = got {
                assert_eq!(b.cwd, "/r/bolt/work");
            }
        }
        // The home is the cwd's, by the one attribution rule.
        let b =
            card_boundary(p("PreToolUse", "mcp__hoop__work_task_take", "{}").as_bytes()).unwrap();
        assert_eq!(
            boundary_home(&b, Path::new("/r")).map(|h| h.name),
            Some("bolt".to_string())
        );
        assert!(boundary_home(&b, Path::new("/elsewhere")).is_none());
    }
}
