//! The daemon's wiring: take the account lock (held for life), load and
//! check the home's state, log in, print the `🚀` line, then run the tasks
//! (ws, cycle, heartbeat, lease renewer, idle reaper, patrols, the
//! hook-status endpoint) until SIGTERM/SIGINT.
//!
//! Every task is essential and none ever ends by itself: one that ends or
//! panics ([`supervise`]) takes the daemon down with one clear line and a
//! non-zero exit, so launchd / systemd restart it — a heartbeat that keeps
//! the account "online" while nothing answers is the failure this rules
//! out.
//!
//! Cold start: before the first round the agent's session is compacted if
//! it is big ([`cold_start`]), holding the turn lock; the WebSocket is
//! already up, so messages that arrive meanwhile queue as kicks and the
//! first round answers them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use hoop_api::rest::Client;
use hoop_api::types::User;
use hoop_core::clock::now_unix;
use hoop_core::home::{Home, ROOT_ENV};
use thiserror::Error;

use crate::agent::Agent;
use crate::config::{ConfigError, SentinelConfig};
use crate::constants::{OBITUARIES_FILE, STATUS_FILE};
use crate::lock::{self, LockError};
use crate::policy::{login_notice_due, ws_backoff};
use crate::prompts::PromptSet;
use crate::round::RoundCtx;
use crate::state::{Cursors, Obituaries, StateError, Status, StatusBoard};
use crate::switches::Switches;
use crate::tasks;

/// The environment variable naming the home, for `hoop say` run by the agent.
pub const HOME_ENV: &str = "HOOP_HOME";

#[derive(Debug, Error)]
pub enum DaemonError {
    #[error("another sentinel already runs home {home:?}: {error}")]
    AlreadyRunning { home: String, error: LockError },
    #[error(transparent)]
    Lock(LockError),
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    State(#[from] StateError),
    #[error("{0}")]
    Home(String),
    #[error("backend client: {0}")]
    Api(#[from] hoop_api::error::Error),
    #[error(
        "the daemon's {task} task {how}; the daemon stops so that the service manager starts it again"
    )]
    TaskEnded { task: &'static str, how: String },
}

/// One of the daemon's tasks, boxed so that tasks of any type share a set.
pub type Task = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

/// Wait for a termination signal (`Ok` with its name) or for the first of
/// `tasks` to end (`Err`): each task runs for the daemon's life, so one
/// that returns or panics is a daemon that no longer works. `names` says
/// which task each id is.
pub async fn supervise(
    tasks: &mut tokio::task::JoinSet<()>,
    names: &BTreeMap<tokio::task::Id, &'static str>,
    signal: impl std::future::Future<Output = &'static str>,
) -> Result<&'static str, DaemonError> {
    let ended = async {
        match tasks.join_next_with_id().await {
            Some(Ok((id, ()))) => (id, "ended".to_string()),
            Some(Err(e)) if e.is_panic() => (e.id(), "panicked".to_string()),
            Some(Err(e)) => (e.id(), format!("stopped ({e})")),
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        s = signal => Ok(s),
        (id, how) = ended => Err(DaemonError::TaskEnded {
            task: names.get(&id).copied().unwrap_or("unnamed"),
            how,
        }),
    }
}

/// What the agent process needs to be built.
#[derive(Debug, Clone)]
pub struct AgentSetup {
    pub home: Home,
    pub claude_bin: PathBuf,
    /// The fixed working directory (`--resume` finds sessions per cwd).
    pub workdir: PathBuf,
    /// Full extra environment for the agent process.
    pub env: BTreeMap<String, String>,
    pub permission_mode: String,
    pub allowed_tools: Vec<String>,
    pub turn_timeout: Duration,
}

/// The agent's environment: the home's extra env, then what `hoop say`
/// needs (`HOOP_ROOT`, `HOOP_HOME`, this binary's directory first on PATH),
/// and `IS_SANDBOX=1` when bypassing permissions (the CLI refuses that mode
/// as root otherwise).
pub fn agent_env(home: &Home, cfg: &SentinelConfig, hoop_exe: &Path) -> BTreeMap<String, String> {
    let mut env = cfg.env.clone();
    env.insert(ROOT_ENV.into(), home.root.display().to_string());
    env.insert(HOME_ENV.into(), home.name.clone());
    let base_path = env
        .get("PATH")
        .cloned()
        .or_else(|| std::env::var("PATH").ok())
        .unwrap_or_default();
    if let Some(dir) = hoop_exe.parent() {
        let p = if base_path.is_empty() {
            dir.display().to_string()
        } else {
            format!("{}:{base_path}", dir.display())
        };
        env.insert("PATH".into(), p);
    }
    if cfg.permission_mode == "bypassPermissions" {
        env.entry("IS_SANDBOX".into()).or_insert_with(|| "1".into());
    }
    env
}

/// Log in, retrying with the reconnect backoff until the backend answers
/// (a sentinel started before its backend must not exit). A refused login
/// (401) is retried too, but an operator must see it: once per cause and
/// hour it goes to stderr and into the status file's `login_error`.
async fn login_until_ok(client: &Client, cfg: &SentinelConfig, status_path: &Path) -> User {
    let mut backoff = None;
    let mut told: BTreeMap<&'static str, i64> = BTreeMap::new();
    loop {
        match client.login().await {
            Ok(r) => return r.user,
            Err(e) => {
                let wait = ws_backoff(&cfg.timings, backoff);
                backoff = Some(wait);
                tracing::warn!(error = %e, secs = wait.as_secs_f64(), "login failed; retrying");
                if let Some(cause) = lasting_login_failure(&e) {
                    let now = now_unix();
                    if login_notice_due(told.get(cause).copied(), now) {
                        told.insert(cause, now);
                        let notice = format!("hoop sentinel: cannot log in, retrying: {e}");
                        eprintln!("{notice}");
                        let status = Status {
                            pid: std::process::id(),
                            started_at: now,
                            login_error: Some(notice),
                            ..Default::default()
                        };
                        if let Err(e) = status.save(status_path) {
                            tracing::warn!(error = %e, "could not write the status file");
                        }
                    }
                }
                tokio::time::sleep(wait).await;
            }
        }
    }
}

/// A login failure that retrying alone will not cure (a person must act),
/// by cause; `None` for a passing one (the backend is down, a timeout).
pub fn lasting_login_failure(e: &hoop_api::Error) -> Option<&'static str> {
    match e {
        hoop_api::Error::LoginRefused { .. } | hoop_api::Error::Unauthorized { .. } => {
            Some("login_refused")
        }
        hoop_api::Error::Unparseable { .. } => Some("unreadable_answer"),
        _ => None,
    }
}

/// Run the daemon for `home` until a termination signal.
pub async fn run<A, F>(home: Home, hoop_exe: PathBuf, make_agent: F) -> Result<(), DaemonError>
where
    A: Agent,
    F: FnOnce(AgentSetup) -> A,
{
    std::fs::create_dir_all(home.dir())
        .map_err(|e| DaemonError::Home(format!("{}: {e}", home.dir().display())))?;
    // The account lock first: nothing else happens in a second instance.
    let account_lock = lock::account(&home.account_lock_path()).map_err(|e| {
        if e.is_busy() {
            DaemonError::AlreadyRunning {
                home: home.name.clone(),
                error: e,
            }
        } else {
            DaemonError::Lock(e)
        }
    })?;
    let cfg = SentinelConfig::load(&home.dir())?;
    // Orphans of the agent's tree come to us, not init: they stay findable
    // and are stopped with the turn that made them (tasks::orphans).
    let subreaper = crate::proctree::become_subreaper();
    // Refuse to start on state that cannot be read (never guess a cursor).
    let cursors = Cursors::load(&home.cursors_path())?;
    Obituaries::load(&home.dir().join(OBITUARIES_FILE))?;
    crate::state::Rooms::load(&home.dir().join(crate::constants::ROOMS_FILE))?;
    let backend_cfg = home
        .load_config()
        .map_err(|e| DaemonError::Home(e.to_string()))?;
    let client = Arc::new(Client::for_home(&home)?);
    let workdir = home.workdir();
    std::fs::create_dir_all(&workdir)
        .map_err(|e| DaemonError::Home(format!("{}: {e}", workdir.display())))?;
    let prompts = PromptSet::load(&home.prompts_dir(), &home.task_path());
    let switches = Switches::read(&home);
    tracing::info!(
        "🚀 {} pid={} backend={} email={} claude={} permission={} cursors={} prompts={} {} {}",
        home.name,
        std::process::id(),
        backend_cfg.base_url,
        backend_cfg.email,
        cfg.claude_bin.display(),
        cfg.permission_mode,
        cursors.0.len(),
        prompts.describe(),
        switches.describe(),
        crate::patrol::describe(&cfg.patrols)
    );
    // A process a crashed predecessor left running would answer on its own.
    crate::driver_agent::stop_leftover(&home.dir(), &workdir, &cfg.claude_bin).await;
    let me = login_until_ok(&client, &cfg, &home.dir().join(STATUS_FILE)).await;
    tracing::info!(user = me.id, username = %me.username, "logged in");

    let setup_env = agent_env(&home, &cfg, &hoop_exe);
    let setup = AgentSetup {
        home: home.clone(),
        claude_bin: cfg.claude_bin.clone(),
        workdir,
        env: setup_env.clone(),
        permission_mode: cfg.permission_mode.clone(),
        allowed_tools: cfg.allowed_tools.clone(),
        turn_timeout: cfg.turn_timeout,
    };
    let agent = Arc::new(tokio::sync::Mutex::new(make_agent(setup)));
    let current_card = Arc::new(std::sync::Mutex::new(None));
    let ctx = Arc::new(RoundCtx {
        client: client.clone(),
        home: home.clone(),
        me: me.clone(),
        cfg: cfg.clone(),
        current_card: current_card.clone(),
        warm_parts: std::sync::Mutex::new(None),
        journal: crate::journal::Journal::open(home.journal_dir(), cfg.journal_keep),
    });
    let (kick_tx, kick_rx) = tokio::sync::mpsc::unbounded_channel();
    let board = StatusBoard::new(
        home.dir().join(STATUS_FILE),
        Status {
            pid: std::process::id(),
            started_at: now_unix(),
            ..Default::default()
        },
    );

    let mut set = tokio::task::JoinSet::new();
    let mut names: BTreeMap<tokio::task::Id, &'static str> = BTreeMap::new();
    let mut spawn =
        |set: &mut tokio::task::JoinSet<()>,
         name: &'static str,
         task: std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>| {
            let h = set.spawn(task);
            names.insert(h.id(), name);
        };
    spawn(
        &mut set,
        "ws",
        Box::pin(tasks::ws::run(
            client.clone(),
            me.id,
            cfg.timings.clone(),
            kick_tx,
            board.clone(),
        )),
    );
    let patrols = if cfg.patrols.is_empty() {
        None
    } else {
        let (fire_tx, fire_rx) = tokio::sync::mpsc::unbounded_channel();
        let in_flight = tasks::patrol::InFlight::default();
        spawn(
            &mut set,
            "patrol ticker",
            Box::pin(tasks::patrol::run(
                home.dir(),
                setup_env.clone(),
                cfg.patrols.clone(),
                fire_tx,
                in_flight.clone(),
                cfg.timings.patrol_skip_after,
            )),
        );
        Some(tasks::cycle::PatrolInbox {
            rx: fire_rx,
            in_flight,
        })
    };
    {
        let (ctx, agent, board) = (ctx.clone(), agent.clone(), board.clone());
        let retry = cfg.timings.turn_lock_retry;
        spawn(
            &mut set,
            "cycle",
            Box::pin(async move {
                cold_start(&ctx.home.turn_lock_path(), &agent, retry).await;
                tasks::cycle::run(ctx, agent, kick_rx, patrols, board).await
            }),
        );
    }
    {
        // A turn holds the agent for its whole length: taken = working.
        let agent = agent.clone();
        spawn(
            &mut set,
            "heartbeat",
            Box::pin(tasks::heartbeat::run(
                client.clone(),
                cfg.timings.clone(),
                move || agent.try_lock().is_err(),
            )),
        );
    }
    // The hook-status lane of the home's workers (observability only).
    let runtime = hoop_guards::lane::runtime_dir(&home);
    if let Some((listener, addr)) = tasks::hook_status::bind(&runtime, &home.name).await {
        tracing::info!(%addr, "hook-status endpoint on loopback");
        spawn(
            &mut set,
            "hook-status endpoint",
            Box::pin(tasks::hook_status::run(
                listener,
                runtime,
                home.name.clone(),
                cfg.hook_status_keep,
            )),
        );
    }
    // The card tools' usage snapshots (`hoop card-snapshot`), on loopback.
    if let Some((listener, addr)) = crate::usage::bind_snapshots(&home).await {
        tracing::info!(%addr, "card snapshot endpoint on loopback");
        spawn(
            &mut set,
            "card snapshot endpoint",
            Box::pin(crate::usage::serve_snapshots(listener, ctx.clone())),
        );
    }
    spawn(
        &mut set,
        "lease renewer",
        Box::pin(tasks::lease::run(
            client.clone(),
            current_card,
            home.clone(),
            cfg.timings.worker_poll,
        )),
    );
    {
        let (agent, turn_lock) = (agent.clone(), home.turn_lock_path());
        let (limit, tick) = (cfg.idle_reap, cfg.timings.reaper_tick);
        spawn(
            &mut set,
            "idle reaper",
            Box::pin(async move { tasks::reaper::run(agent, &turn_lock, limit, tick).await }),
        );
    }

    spawn(
        &mut set,
        "orphan keeper",
        Box::pin(tasks::orphans::run(home.turn_lock_path(), subreaper)),
    );

    let outcome = supervise(&mut set, &names, wait_for_signal()).await;
    match &outcome {
        Ok(signal) => tracing::info!(signal, "stopping"),
        Err(e) => tracing::error!("❌ {e}"),
    }
    set.abort_all();
    // A turn in flight holds the agent; stop it either way.
    match tokio::time::timeout(Duration::from_secs(5), agent.lock()).await {
        Ok(mut a) => a.stop().await,
        Err(_) => tracing::warn!("a turn is still running; its process ends with ours"),
    }
    // What the journal's queue still holds is written before we go.
    ctx.journal.close();
    // No address is published for a lane nothing serves.
    hoop_guards::lane::unpublish_endpoint(&hoop_guards::lane::runtime_dir(&home), &home.name);
    // What the agent's tree left to us goes with us (workers stay).
    crate::proctree::stop_adopted(
        crate::worker::is_any_supervisor,
        crate::constants::ORPHAN_STOP_GRACE,
    )
    .await;
    drop(account_lock);
    outcome.map(|_| ())
}

/// Before the first round: take the turn lock (retrying while another
/// process holds it) and let the agent compact a big session, so the first
/// person to write does not wait for it. Kicks that arrive meanwhile queue.
async fn cold_start<A: Agent>(turn_lock: &Path, agent: &tokio::sync::Mutex<A>, retry: Duration) {
    let held = loop {
        match lock::turn(turn_lock) {
            Ok(l) => break l,
            Err(e) if e.is_busy() => {
                tracing::info!(error = %e, "turn lock busy; the cold start waits");
                tokio::time::sleep(retry).await;
            }
            Err(e) => {
                tracing::warn!(error = %e, "turn lock unusable; cold start skipped");
                return;
            }
        }
    };
    agent.lock().await.cold_start().await;
    drop(held);
}

async fn wait_for_signal() -> &'static str {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut term = match signal(SignalKind::terminate()) {
            Ok(s) => s,
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
                return "SIGINT";
            }
        };
        tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = tokio::signal::ctrl_c() => "SIGINT",
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
        "ctrl-c"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every wait is bounded: a watcher that misses an ended task fails
    /// here instead of hanging the suite.
    async fn bounded<F: std::future::Future>(f: F) -> F::Output {
        tokio::time::timeout(Duration::from_secs(10), f)
            .await
            .expect("supervise returned within its bound")
    }

    fn names_of(
        set: &mut tokio::task::JoinSet<()>,
        tasks: Vec<(&'static str, Task)>,
    ) -> BTreeMap<tokio::task::Id, &'static str> {
        tasks
            .into_iter()
            .map(|(name, t)| (set.spawn(t).id(), name))
            .collect()
    }

    /// A task that ends or panics stops the daemon, naming it; a signal
    /// stops it cleanly; while every task runs and no signal comes,
    /// nothing stops.
    #[tokio::test]
    async fn an_essential_task_that_ends_takes_the_daemon_down() {
        let forever = || -> Task { Box::pin(std::future::pending()) };
        let never = std::future::pending::<&'static str>;

        // (tasks, want, why)
        let mut set = tokio::task::JoinSet::new();
        let names = names_of(
            &mut set,
            vec![("ws", forever()), ("cycle", Box::pin(async {}))],
        );
        let got = bounded(supervise(&mut set, &names, never())).await;
        assert!(
            matches!(&got, Err(DaemonError::TaskEnded { task: "cycle", how }) if how == "ended"),
            "{got:?}"
        );
        let text = got.unwrap_err().to_string();
        assert_eq!(
            text,
            "the daemon's cycle task ended; the daemon stops so that the service manager starts it again"
        );

        let mut set = tokio::task::JoinSet::new();
        let names = names_of(
            &mut set,
            vec![
                ("heartbeat", Box::pin(async { panic!("boom") })),
                ("ws", forever()),
            ],
        );
        let got = bounded(supervise(&mut set, &names, never())).await;
        assert!(
            matches!(&got, Err(DaemonError::TaskEnded { task: "heartbeat", how }) if how == "panicked"),
            "{got:?}"
        );

        let mut set = tokio::task::JoinSet::new();
        let names = names_of(&mut set, vec![("ws", forever()), ("cycle", forever())]);
        let got = bounded(supervise(&mut set, &names, async { "SIGTERM" })).await;
        assert_eq!(got.ok(), Some("SIGTERM"));

        let mut set = tokio::task::JoinSet::new();
        let names = names_of(&mut set, vec![("ws", forever())]);
        let waited = tokio::time::timeout(
            Duration::from_millis(200),
            supervise(&mut set, &names, never()),
        )
        .await;
        assert!(
            waited.is_err(),
            "nothing ended, no signal: it keeps running"
        );
    }
}
