//! The driver of the `claude` CLI: one turn at a time for one home.
//!
//! **Persistent mode** (default): one process per home,
//! `claude -p --input-format stream-json --output-format stream-json --verbose
//! --resume <session>`, stdin kept open. A turn writes one user line and
//! reads until the `result` line. The process boundary (not the cache TTL)
//! is what made prompt-cache hits rare, so the process is kept warm and only
//! restarted when something it was started with changes:
//! - the system preamble (`--append-system-prompt` is fixed for a process's
//!   life): the process restarts only when the preamble TEXT changed, not
//!   on every round, so the caller should keep it stable where it can;
//! - an environment-affecting switch (`autocompact`, `autocompact_auto_off`,
//!   `cache_ttl`) or the session id: restarted at the next turn boundary.
//!
//! **Per-turn mode** (switch file `persist` = off): one process per turn
//! (same arguments, the message as the only input line, then stdin closed).
//!
//! **Sessions.** The first start records a new UUID in `session.id` and
//! starts the CLI with `--session-id`; from then on (as soon as the CLI's
//! transcript exists) it is `--resume`. A session that no longer fits
//! (`Prompt is too long`) or that the CLI cannot find (`No conversation
//! found`) is retired as `session.id.blown-<unix time>`; a fresh one is
//! minted with one short call on a small model (`fresh_session_model`,
//! default `haiku`) and the turn is retried at once, once.
//!
//! **Model.** `--model` is always passed (default: the CLI's alias
//! `default`). Without it a resumed session runs on the model recorded in
//! its transcript — a session minted on the small model would stay there,
//! and a resumed default session comes back as `claude-opus-4-8` without
//! the `[1m]` context window (observed with 2.1.197).
//!
//! **Compaction** (see [`crate::compaction`]): [`Driver::cold_start`] sends
//! `/compact` at startup, in a process of its own and before the first
//! round, when the context meter reaches `cold_compact` (the daemon holds
//! the turn lock meanwhile), so the first person to write never waits for
//! it; never while hot; [`Driver::compact_and_stop`] before an idle exit;
//! the auto-off detector runs before and after every turn.
//!
//! **Outcome** (see [`classify`]): judged by `is_error`, never by `subtype`.
//! Turn timeout kills the process group (SIGTERM, then SIGKILL after a grace).
//! Garbage stdout lines are logged and skipped. EOF mid-turn is a failure
//! with the exit code.

pub mod classify;
pub mod process;
pub mod session;
pub mod stream;

use std::path::PathBuf;
use std::time::Duration;

use hoop_core::fsutil::write_atomic;
use hoop_core::home::Home;
use hoop_core::limits::TURN_TIMEOUT;
use hoop_core::transcript::Usage;
use serde_json::json;
use tokio::time::Instant;

pub use classify::{Evidence, ExitInfo, Outcome, classify};
use process::{AgentProcess, ReadEnd, SpawnSpec};
use stream::TurnLog;

use crate::compaction::{AutoOffEvidence, autocompact_kills, cold_compact_due, write_auto_off};
use crate::context;
use crate::switches::Switches;

/// The CLI's alias for its default model (`--model default`).
pub const DEFAULT_TURN_MODEL: &str = "default";
/// Default model for minting a fresh session: the cheapest that works.
pub const DEFAULT_FRESH_SESSION_MODEL: &str = "haiku";
/// Between SIGTERM and SIGKILL, and the wait for a process to exit by itself
/// after its stdin closed: the CLI exits within a second when idle.
pub const KILL_GRACE: Duration = Duration::from_secs(5);
/// The CLI's compaction command, sent as a user line.
pub const COMPACT_COMMAND: &str = "/compact";
/// The one line a minting call sends (never starts with `-`).
pub const MINT_MESSAGE: &str = "📬 new session: reply with the single word OK.";
/// The CLI refuses `bypassPermissions` as root unless this is set.
pub const ENV_IS_SANDBOX: &str = "IS_SANDBOX";
/// The permission mode that lets the agent run `hoop say …` (and anything
/// else) without a person to ask: a headless agent has nobody to ask.
pub const BYPASS_PERMISSIONS: &str = "bypassPermissions";

/// How the agent is allowed to use tools, stated explicitly per home.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Permissions {
    /// `--permission-mode` (`None` = the CLI's default, which refuses
    /// file-writing Bash commands in `-p`).
    pub mode: Option<String>,
    /// `--allowedTools` entries, e.g. `Bash(hoop say:*)`.
    pub allowed_tools: Vec<String>,
}

impl Default for Permissions {
    /// `bypassPermissions`: the agent must be able to run `hoop say` via Bash.
    fn default() -> Self {
        Permissions::bypass()
    }
}

impl Permissions {
    pub fn bypass() -> Permissions {
        Permissions {
            mode: Some(BYPASS_PERMISSIONS.into()),
            allowed_tools: Vec::new(),
        }
    }
    /// The CLI's default mode plus these allowed tools.
    pub fn allowing(tools: impl IntoIterator<Item = impl Into<String>>) -> Permissions {
        Permissions {
            mode: None,
            allowed_tools: tools.into_iter().map(Into::into).collect(),
        }
    }
    pub fn args(&self) -> Vec<String> {
        let mut a = Vec::new();
        if let Some(m) = &self.mode {
            a.push(format!("--permission-mode={m}"));
        }
        if !self.allowed_tools.is_empty() {
            a.push(format!("--allowedTools={}", self.allowed_tools.join(",")));
        }
        a
    }
    /// `IS_SANDBOX=1` with `bypassPermissions`, which the CLI otherwise
    /// refuses for root.
    pub fn env(&self) -> Vec<(String, String)> {
        if self.mode.as_deref() == Some(BYPASS_PERMISSIONS) {
            vec![(ENV_IS_SANDBOX.into(), "1".into())]
        } else {
            Vec::new()
        }
    }
}

/// Everything the driver needs, per home. Its `Debug` output hides the
/// values of secret-looking environment variables.
#[derive(Clone)]
pub struct DriverConfig {
    pub claude_bin: PathBuf,
    pub home: Home,
    /// Extra environment for the child (model API URL, `HOME`, `PATH` with
    /// `hoop`, …); switch-derived variables are added after it.
    pub env: Vec<(String, String)>,
    pub permissions: Permissions,
    pub turn_timeout: Duration,
    pub kill_grace: Duration,
    /// `--model` for turns. Always passed: a session minted on the small
    /// model would otherwise stay on it (`--resume` keeps a session's model).
    pub model: String,
    /// `--model` for minting a fresh session.
    pub fresh_session_model: String,
    /// Where to record each agent process's pid the moment it starts, so a
    /// daemon started after a crash can stop a process the dead one left
    /// running even when it died in the middle of a turn.
    pub pid_file: Option<PathBuf>,
}

/// Whether an environment variable's value must never be shown.
pub fn is_secret_env(name: &str) -> bool {
    let n = name.to_ascii_uppercase();
    ["KEY", "TOKEN", "SECRET", "PASSWORD", "AUTH"]
        .iter()
        .any(|m| n.contains(m))
}

impl std::fmt::Debug for DriverConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let env: Vec<(&str, &str)> = self
            .env
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str(),
                    if is_secret_env(k) {
                        "<redacted>"
                    } else {
                        v.as_str()
                    },
                )
            })
            .collect();
        f.debug_struct("DriverConfig")
            .field("claude_bin", &self.claude_bin)
            .field("home", &self.home)
            .field("env", &env)
            .field("permissions", &self.permissions)
            .field("turn_timeout", &self.turn_timeout)
            .field("kill_grace", &self.kill_grace)
            .field("model", &self.model)
            .field("fresh_session_model", &self.fresh_session_model)
            .field("pid_file", &self.pid_file)
            .finish()
    }
}

impl DriverConfig {
    /// Defaults: bypass permissions, the spec's turn timeout, haiku mints.
    pub fn new(claude_bin: impl Into<PathBuf>, home: Home) -> DriverConfig {
        DriverConfig {
            claude_bin: claude_bin.into(),
            home,
            env: Vec::new(),
            permissions: Permissions::default(),
            turn_timeout: TURN_TIMEOUT,
            kill_grace: KILL_GRACE,
            model: DEFAULT_TURN_MODEL.into(),
            fresh_session_model: DEFAULT_FRESH_SESSION_MODEL.into(),
            pid_file: None,
        }
    }
}

/// The three token numbers of a turn (`None` = unknown, never 0 for unknown).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TurnTokens {
    /// Full-price input.
    pub tokens_in: Option<u64>,
    /// Cache read + cache write.
    pub tokens_cached_in: Option<u64>,
    pub tokens_out: Option<u64>,
}

impl TurnTokens {
    pub fn from_usage(u: Option<&Usage>) -> TurnTokens {
        TurnTokens {
            tokens_in: u.map(|u| u.input),
            tokens_cached_in: u.map(|u| u.cache_read.saturating_add(u.cache_write())),
            tokens_out: u.map(|u| u.output),
        }
    }
}

/// What one [`Driver::run_turn`] did.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnReport {
    pub outcome: Outcome,
    /// `result.usage` of the turn (the turn's own usage); `None` when there
    /// was no result or it carried no numbers (an error result's zeros are
    /// the CLI's placeholder, not a measurement).
    pub usage: Option<Usage>,
    pub tokens: TurnTokens,
    pub session_id: Option<String>,
    /// The result text (the assistant's last words, or the error message).
    pub text: Option<String>,
    /// Exit status when the process ended during the turn.
    pub exit: Option<ExitInfo>,
    /// Processes started by this turn (mints included).
    pub spawned: u32,
    /// The session was replaced: the retired id file.
    pub blown_session: Option<PathBuf>,
    /// Why the session was replaced (the first attempt's outcome).
    pub retried_after: Option<Outcome>,
    /// The auto-off detector wrote `autocompact_auto_off` during this turn.
    pub auto_off_written: bool,
    /// Non-JSON stdout lines skipped.
    pub garbage_lines: u32,
    pub elapsed: Duration,
}

impl TurnReport {
    fn new(outcome: Outcome) -> TurnReport {
        TurnReport {
            outcome,
            usage: None,
            tokens: TurnTokens::default(),
            session_id: None,
            text: None,
            exit: None,
            spawned: 0,
            blown_session: None,
            retried_after: None,
            auto_off_written: false,
            garbage_lines: 0,
            elapsed: Duration::ZERO,
        }
    }
}

impl From<&Outcome> for crate::policy::TurnClass {
    fn from(o: &Outcome) -> Self {
        use crate::policy::TurnClass;
        match o {
            Outcome::Ok => TurnClass::Ok,
            Outcome::Timeout => TurnClass::Timeout,
            Outcome::AuthDead { cause } => TurnClass::AuthDead {
                cause: cause.clone(),
            },
            Outcome::UsageLimit { .. } => TurnClass::Limit,
            Outcome::Failed { .. }
            | Outcome::PromptTooLong { .. }
            | Outcome::NoConversation { .. } => TurnClass::Failed,
        }
    }
}

/// What [`Driver::cold_start`] did.
#[derive(Debug, Clone, PartialEq)]
pub struct ColdStart {
    /// The context meter before, and the threshold it reached.
    pub context_before: u64,
    pub threshold: u64,
    /// The context meter after (`None` when the transcript does not say).
    pub context_after: Option<u64>,
    pub outcome: Outcome,
    pub elapsed: Duration,
}

/// What a process was started with; a change means a restart.
#[derive(Debug, Clone, PartialEq, Eq)]
struct SpawnKey {
    session: String,
    preamble: String,
    env: Vec<(String, String)>,
    model: String,
}

struct Live {
    proc: AgentProcess,
    key: SpawnKey,
}

/// One attempt's raw result.
struct Attempt {
    outcome: Outcome,
    log: TurnLog,
    exit: Option<ExitInfo>,
}

/// A finished attempt, classified from everything the process left behind.
fn judge(log: TurnLog, exit: Option<ExitInfo>, timed_out: bool, stderr: &str) -> Attempt {
    let outcome = classify(&Evidence {
        exit,
        result: log.result.as_ref(),
        assistant_error: log.assistant_error.as_deref(),
        rate_limit_rejected: log.rate_limit_rejected,
        stderr,
        timed_out,
    });
    Attempt { outcome, log, exit }
}

fn user_line(content: &str) -> String {
    json!({"type": "user", "message": {"role": "user", "content": content}}).to_string()
}

fn unix_now() -> i64 {
    hoop_core::clock::now_unix()
}

/// Drives the agent CLI for one home. Owns the persistent process, if any.
pub struct Driver {
    cfg: DriverConfig,
    live: Option<Live>,
    last_active: std::time::Instant,
    spawns: u64,
    /// Sessions a process of this driver has run: they exist even before
    /// the CLI has written their transcript, so they are resumed, never
    /// created again (`--session-id` on an existing id fails).
    known_sessions: Vec<String>,
    /// Sessions this driver minted (recorded a new id for): started with
    /// `--session-id` until a process has run them.
    minted_sessions: Vec<String>,
    /// (session, context size) after this driver's latest turn.
    last_context: Option<(String, u64)>,
}

impl Driver {
    pub fn new(cfg: DriverConfig) -> Driver {
        Driver {
            cfg,
            live: None,
            last_active: std::time::Instant::now(),
            spawns: 0,
            known_sessions: Vec::new(),
            minted_sessions: Vec::new(),
            last_context: None,
        }
    }

    pub fn config(&self) -> &DriverConfig {
        &self.cfg
    }
    /// A persistent process is running.
    pub fn is_hot(&self) -> bool {
        self.live.is_some()
    }
    /// Time since the last turn (or since the driver was created).
    pub fn idle_for(&self) -> Duration {
        self.last_active.elapsed()
    }
    /// Agent processes started so far (turns, mints; for the benchmark).
    pub fn spawns(&self) -> u64 {
        self.spawns
    }
    /// The pid of the persistent process, if one runs.
    pub fn pid(&self) -> Option<u32> {
        self.live.as_ref().and_then(|l| l.proc.pid())
    }
    /// The home's recorded session id.
    pub fn session_id(&self) -> Option<String> {
        session::read(&self.cfg.home)
    }
    /// Where the CLI keeps `session`'s transcript (`None` when the child's
    /// config dir cannot be known).
    pub fn transcript_path(&self, session: &str) -> Option<PathBuf> {
        let dir = context::config_dir(&self.cfg.env, |k| std::env::var_os(k))?;
        Some(context::transcript_path(
            &dir,
            &self.cfg.home.workdir(),
            session,
        ))
    }
    /// The context meter for the home's current session.
    pub fn context_tokens(&self) -> Option<u64> {
        let s = self.session_id()?;
        context::context_tokens(&self.transcript_path(&s)?)
    }

    /// The context meter for `session`: this driver's own latest reading
    /// when it has one for that session, else the transcript's tail.
    fn meter(&self, session: &str) -> Option<u64> {
        match &self.last_context {
            Some((s, c)) if s == session => Some(*c),
            _ => self
                .transcript_path(session)
                .and_then(|p| context::context_tokens(&p)),
        }
    }

    fn note_session(&mut self, log: &TurnLog) {
        if let Some(s) = &log.session_id
            && !self.known_sessions.contains(s)
        {
            self.known_sessions.push(s.clone());
        }
        if let (Some(s), Some(c)) = (&log.session_id, log.context_after) {
            self.last_context = Some((s.clone(), c));
        }
    }

    fn spec(&self, preamble: &str, sw: &Switches, session: &str, model: &str) -> SpawnSpec {
        let resume = session::resume_it(
            self.known_sessions.iter().any(|s| s == session),
            self.minted_sessions.iter().any(|s| s == session),
            self.transcript_path(session).map(|p| p.exists()),
        );
        let mut args: Vec<String> = [
            "-p",
            "--input-format",
            "stream-json",
            "--output-format",
            "stream-json",
            "--verbose",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        if resume {
            args.push(format!("--resume={session}"));
        } else {
            args.push(format!("--session-id={session}"));
        }
        args.push(format!("--model={model}"));
        args.extend(self.cfg.permissions.args());
        if !preamble.is_empty() {
            args.push(format!("--append-system-prompt={preamble}"));
        }
        let (env, unset) = self.child_env(sw);
        SpawnSpec {
            program: self.cfg.claude_bin.clone(),
            args,
            env,
            unset,
            cwd: self.cfg.home.workdir(),
        }
    }

    /// The child's extra environment and the variables it must not inherit.
    /// The switches' knobs are set (or removed) last and explicitly, so
    /// neither the daemon's own environment nor the configured `env` can
    /// override a switch.
    fn child_env(&self, sw: &Switches) -> (Vec<(String, String)>, Vec<String>) {
        let knobs = sw.child_env();
        let owned = |k: &str| knobs.iter().any(|(n, _)| *n == k);
        let mut env: Vec<(String, String)> = self
            .cfg
            .env
            .iter()
            .filter(|(k, _)| !owned(k))
            .cloned()
            .collect();
        env.extend(self.cfg.permissions.env());
        let mut unset = Vec::new();
        for (k, v) in knobs {
            match v {
                Some(v) => env.push((k.to_string(), v)),
                None => unset.push(k.to_string()),
            }
        }
        (env, unset)
    }

    fn key(&self, preamble: &str, sw: &Switches, session: &str) -> SpawnKey {
        SpawnKey {
            session: session.to_string(),
            preamble: preamble.to_string(),
            env: self.child_env(sw).0,
            model: self.cfg.model.clone(),
        }
    }

    fn spawn(
        &mut self,
        spec: &SpawnSpec,
        report: &mut TurnReport,
    ) -> Result<AgentProcess, Outcome> {
        match AgentProcess::spawn(spec) {
            Ok(p) => {
                self.spawns += 1;
                report.spawned += 1;
                if let (Some(path), Some(pid)) = (&self.cfg.pid_file, p.pid()) {
                    let text = format!("{pid}\n");
                    if let Err(e) = write_atomic(path, text.as_bytes(), Default::default()) {
                        tracing::warn!(error = %e, "cannot record the agent's pid");
                    }
                }
                Ok(p)
            }
            Err(e) => Err(Outcome::Failed {
                reason: format!("cannot start {}: {e}", spec.program.display()),
            }),
        }
    }

    /// The current session id, recording a new one when there is none.
    fn ensure_session(&mut self) -> Result<String, Outcome> {
        if let Some(id) = session::read(&self.cfg.home) {
            return Ok(id);
        }
        let id = session::new_id();
        session::write(&self.cfg.home, &id).map_err(|e| Outcome::Failed {
            reason: format!("cannot record the session id: {e}"),
        })?;
        self.minted_sessions.push(id.clone());
        tracing::info!(home = %self.cfg.home.name, "new agent session recorded");
        Ok(id)
    }

    /// Run one turn. `preamble` goes to `--append-system-prompt`;
    /// `user_message` is the turn's one user line (it must not start with
    /// `-`).
    pub async fn run_turn(&mut self, preamble: &str, user_message: &str) -> TurnReport {
        self.run_turn_showing(preamble, user_message, &|| {}).await
    }

    /// [`Driver::run_turn`], calling `shown` each time the user line is
    /// about to be written to a RUNNING agent process (remember, then
    /// print): never for a turn whose process could not start or had
    /// already ended. A turn retried on a fresh session calls it again.
    pub async fn run_turn_showing(
        &mut self,
        preamble: &str,
        user_message: &str,
        shown: &(dyn Fn() + Send + Sync),
    ) -> TurnReport {
        let started = std::time::Instant::now();
        let mut report = self.run_turn_inner(preamble, user_message, shown).await;
        report.elapsed = started.elapsed();
        self.last_active = std::time::Instant::now();
        report
    }

    async fn run_turn_inner(
        &mut self,
        preamble: &str,
        user_message: &str,
        shown: &(dyn Fn() + Send + Sync),
    ) -> TurnReport {
        if user_message.trim_start().starts_with('-') {
            return TurnReport::new(Outcome::Failed {
                reason: "the user message starts with '-', which the CLI would read as an option"
                    .into(),
            });
        }
        let mut report = TurnReport::new(Outcome::Ok);
        let mut sw = Switches::read(&self.cfg.home);
        let session = match self.ensure_session() {
            Ok(s) => s,
            Err(o) => {
                report.outcome = o;
                return report;
            }
        };
        let ctx_before = self.meter(&session);
        // Before the turn: a ceiling already below the context.
        let before = AutoOffEvidence {
            ceiling: sw.ceiling(),
            context_before: ctx_before,
            ..AutoOffEvidence::default()
        };
        self.detect_auto_off(&mut sw, &before, &mut report);

        let mut attempt = self
            .attempt(preamble, user_message, &sw, &session, &mut report, shown)
            .await;
        self.note_session(&attempt.log);
        if attempt.outcome.needs_fresh_session() {
            tracing::warn!(home = %self.cfg.home.name, outcome = ?attempt.outcome, "session retired; minting a fresh one and retrying the turn");
            self.stop_live().await;
            report.retried_after = Some(attempt.outcome.clone());
            match session::blow(&self.cfg.home, unix_now()) {
                Ok(b) => report.blown_session = b,
                Err(e) => tracing::warn!(error = %e, "cannot retire session.id"),
            }
            match self.mint(&sw, &mut report).await {
                Ok(fresh) => {
                    attempt = self
                        .attempt(preamble, user_message, &sw, &fresh, &mut report, shown)
                        .await;
                }
                Err(o) => attempt.outcome = o,
            }
        }

        // After the turn: a silent or timed-out turn near the ceiling, or a
        // turn that compacted again and again.
        let after = AutoOffEvidence {
            ceiling: sw.ceiling(),
            context_before: ctx_before,
            timed_out: attempt.outcome == Outcome::Timeout,
            empty: attempt.log.result.is_some() && attempt.log.is_empty_turn(),
            auto_compacts: attempt.log.auto_compacts,
            compact_failures: attempt.log.compact_failures,
        };
        self.detect_auto_off(&mut sw, &after, &mut report);

        self.note_session(&attempt.log);
        let result = attempt.log.result.as_ref();
        let usage = result
            .and_then(|r| Usage::from_json(&r["usage"]))
            .filter(|u| !(result.is_some_and(|r| r["is_error"] == true) && u.is_zero()));
        report.usage = usage;
        report.tokens = TurnTokens::from_usage(usage.as_ref());
        report.text = result
            .and_then(|r| r["result"].as_str())
            .map(str::to_string);
        report.session_id = attempt.log.session_id.clone().or_else(|| self.session_id());
        report.exit = attempt.exit;
        report.garbage_lines += attempt.log.garbage_lines;
        report.outcome = attempt.outcome;
        report
    }

    fn detect_auto_off(&self, sw: &mut Switches, ev: &AutoOffEvidence, report: &mut TurnReport) {
        if sw.autocompact_auto_off {
            return;
        }
        if let Some(reason) = autocompact_kills(ev) {
            tracing::warn!(home = %self.cfg.home.name, %reason, "autocompact ceiling below the real context; turning autocompact off for this home");
            match write_auto_off(&self.cfg.home, &reason, unix_now()) {
                Ok(()) => {
                    sw.autocompact_auto_off = true;
                    report.auto_off_written = true;
                }
                Err(e) => tracing::warn!(error = %e, "cannot write autocompact_auto_off"),
            }
        }
    }

    async fn attempt(
        &mut self,
        preamble: &str,
        message: &str,
        sw: &Switches,
        session: &str,
        report: &mut TurnReport,
        shown: &(dyn Fn() + Send + Sync),
    ) -> Attempt {
        let failed = |outcome| Attempt {
            outcome,
            log: TurnLog::default(),
            exit: None,
        };
        let spec = self.spec(preamble, sw, session, &self.cfg.model);
        let key = self.key(preamble, sw, session);
        if sw.persist {
            let stale = match self.live.as_mut() {
                Some(l) => l.key != key || l.proc.try_exit().is_some(),
                None => false,
            };
            if stale {
                tracing::info!(home = %self.cfg.home.name, "agent process restarts: its preamble, environment or session changed");
                self.stop_live().await;
            }
            if self.live.is_none() {
                let proc = match self.spawn(&spec, report) {
                    Ok(p) => p,
                    Err(o) => return failed(o),
                };
                self.live = Some(Live { proc, key });
            }
            let grace = self.cfg.kill_grace;
            let deadline = Instant::now() + self.cfg.turn_timeout;
            let Some(live) = self.live.as_mut() else {
                return failed(Outcome::Failed {
                    reason: "no agent process".into(),
                });
            };
            let mut log = TurnLog::default();
            let mark = live.proc.stderr_mark();
            if live.proc.try_exit().is_none() {
                shown();
            }
            let sent = live.proc.send(&user_line(message)).await;
            let end = match sent {
                Ok(()) => live.proc.read_turn(&mut log, deadline).await,
                Err(e) => {
                    tracing::warn!(error = %e, "agent stdin closed before the turn");
                    ReadEnd::Eof
                }
            };
            self.finish_live(end, log, grace, mark).await
        } else {
            self.stop_live().await;
            let proc = match self.spawn(&spec, report) {
                Ok(p) => p,
                Err(o) => return failed(o),
            };
            self.one_shot(proc, message, Some(shown)).await
        }
    }

    /// One process, one input line: send it, close stdin, read until the
    /// `result`, wait for the exit (killing the group at the deadline or
    /// when it does not end by itself), and judge. Per-turn mode, mints and
    /// the cold-start compaction all run this way.
    async fn one_shot(
        &mut self,
        mut proc: AgentProcess,
        line: &str,
        shown: Option<&(dyn Fn() + Send + Sync)>,
    ) -> Attempt {
        let deadline = Instant::now() + self.cfg.turn_timeout;
        let mut log = TurnLog::default();
        if let Some(shown) = shown
            && proc.try_exit().is_none()
        {
            shown();
        }
        let end = match proc.send(&user_line(line)).await {
            Ok(()) => {
                proc.close_stdin();
                proc.read_turn(&mut log, deadline).await
            }
            Err(_) => ReadEnd::Eof,
        };
        let grace = self.cfg.kill_grace;
        let (exit, timed_out) = match end {
            ReadEnd::Deadline => (Some(proc.kill(grace).await), true),
            ReadEnd::Result | ReadEnd::Eof => match proc.wait_exit(grace).await {
                Some(e) => (Some(e), false),
                None => (Some(proc.kill(grace).await), false),
            },
        };
        self.note_session(&log);
        judge(log, exit, timed_out, &proc.stderr_text())
    }

    /// After reading a turn from the live process: classify (by the stderr
    /// written since `stderr_mark`, this turn's own), and drop the process
    /// when it ended or ran out of time.
    async fn finish_live(
        &mut self,
        end: ReadEnd,
        log: TurnLog,
        grace: Duration,
        stderr_mark: u64,
    ) -> Attempt {
        let Some(live) = self.live.as_mut() else {
            return Attempt {
                outcome: Outcome::Failed {
                    reason: "no agent process".into(),
                },
                log,
                exit: None,
            };
        };
        let (exit, timed_out, gone) = match end {
            ReadEnd::Result => (None, false, false),
            ReadEnd::Eof => {
                let e = match live.proc.wait_exit(grace).await {
                    Some(e) => e,
                    None => live.proc.kill(grace).await,
                };
                (Some(e), false, true)
            }
            ReadEnd::Deadline => {
                tracing::warn!(home = %self.cfg.home.name, "turn timed out; killing the agent process");
                (Some(live.proc.kill(grace).await), true, true)
            }
        };
        let stderr = live.proc.stderr_since(stderr_mark);
        if gone {
            self.live = None;
        }
        judge(log, exit, timed_out, &stderr)
    }

    /// Send `/compact` to the live process and read its result. `Some` when
    /// the process ended or hung (the turn cannot go on); a compaction that
    /// merely failed is logged and the turn proceeds.
    async fn compact_live(&mut self) -> Option<Attempt> {
        let grace = self.cfg.kill_grace;
        let deadline = Instant::now() + self.cfg.turn_timeout;
        let live = self.live.as_mut()?;
        let mut log = TurnLog::default();
        let mark = live.proc.stderr_mark();
        let end = match live.proc.send(&user_line(COMPACT_COMMAND)).await {
            Ok(()) => live.proc.read_turn(&mut log, deadline).await,
            Err(_) => ReadEnd::Eof,
        };
        self.note_session(&log);
        if end == ReadEnd::Result {
            let ok = log.result.as_ref().and_then(|r| r["is_error"].as_bool()) == Some(false);
            tracing::info!(home = %self.cfg.home.name, ok, "cold start: compacted before the first turn");
            return None;
        }
        Some(self.finish_live(end, log, grace, mark).await)
    }

    /// Mint a fresh session with one short call on the small model and
    /// record it.
    async fn mint(&mut self, sw: &Switches, report: &mut TurnReport) -> Result<String, Outcome> {
        let id = session::new_id();
        self.minted_sessions.push(id.clone());
        let model = self.cfg.fresh_session_model.clone();
        let spec = self.spec("", sw, &id, &model);
        let proc = self.spawn(&spec, report)?;
        let a = self.one_shot(proc, MINT_MESSAGE, None).await;
        report.garbage_lines += a.log.garbage_lines;
        let outcome = a.outcome;
        if !outcome.is_ok() {
            tracing::warn!(outcome = ?outcome, "minting a fresh session failed");
            return Err(outcome);
        }
        session::write(&self.cfg.home, &id).map_err(|e| Outcome::Failed {
            reason: format!("cannot record the session id: {e}"),
        })?;
        tracing::info!(home = %self.cfg.home.name, model = %model, "fresh agent session minted");
        Ok(id)
    }

    /// Cold start: when the home's session has a context of at least the
    /// `cold_compact` threshold, send `/compact` in a process of its own and
    /// wait for it to end, so the first turn starts small and the first
    /// person to write does not wait minutes for it. `None` when nothing was
    /// due (no session yet, a small one, or the switch is off). Called by
    /// the daemon before its first round, holding the turn lock; a running
    /// persistent process is stopped first (its context is the session's).
    pub async fn cold_start(&mut self) -> Option<ColdStart> {
        let sw = Switches::read(&self.cfg.home);
        let session = self.session_id()?;
        let context = self.meter(&session)?;
        let threshold = sw.cold_compact?;
        if !cold_compact_due(Some(context), Some(threshold)) {
            return None;
        }
        tracing::info!(home = %self.cfg.home.name, context, threshold, "🗜️ cold start: compacting the session before the first round");
        let started = std::time::Instant::now();
        self.stop_live().await;
        let spec = self.spec("", &sw, &session, &self.cfg.model);
        let mut report = TurnReport::new(Outcome::Ok);
        let outcome = match self.spawn(&spec, &mut report) {
            Ok(proc) => {
                let a = self.one_shot(proc, COMPACT_COMMAND, None).await;
                if a.outcome.is_ok() && a.log.manual_compacts == 0 {
                    Outcome::Failed {
                        reason: "/compact ended without a compact boundary".into(),
                    }
                } else {
                    a.outcome
                }
            }
            Err(o) => o,
        };
        let after = self.meter(&session);
        let elapsed = started.elapsed();
        tracing::info!(home = %self.cfg.home.name, outcome = ?outcome, context_after = ?after, secs = elapsed.as_secs_f64(), "🗜️ cold start: compaction finished");
        Some(ColdStart {
            context_before: context,
            threshold,
            context_after: after,
            outcome,
            elapsed,
        })
    }

    /// Compact the live session, then stop the process (the idle reaper's
    /// exit). `None` when no process was running.
    pub async fn compact_and_stop(&mut self) -> Option<Outcome> {
        let alive = match self.live.as_mut() {
            Some(l) => l.proc.try_exit().is_none(),
            None => false,
        };
        if !alive {
            self.stop().await;
            return None;
        }
        let outcome = match self.compact_live().await {
            None => Outcome::Ok,
            Some(a) => a.outcome,
        };
        self.stop().await;
        Some(outcome)
    }

    /// Stop the persistent process (close stdin, then signals).
    pub async fn stop(&mut self) {
        self.stop_live().await;
    }

    async fn stop_live(&mut self) {
        if let Some(mut l) = self.live.take() {
            let e = l.proc.shut(self.cfg.kill_grace).await;
            tracing::debug!(exit = ?e, "agent process stopped");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_debug_hides_secrets() {
        let mut cfg = DriverConfig::new("claude", Home::new("/r", "h").unwrap());
        cfg.env = vec![
            ("ANTHROPIC_API_KEY".into(), "sk-live-123".into()),
            ("CLAUDE_CODE_OAUTH_TOKEN".into(), "oat-456".into()),
            ("ANTHROPIC_BASE_URL".into(), "http://127.0.0.1:1".into()),
        ];
        let shown = format!("{cfg:?}");
        assert!(
            !shown.contains("sk-live-123") && !shown.contains("oat-456"),
            "{shown}"
        );
        assert!(shown.contains("http://127.0.0.1:1"));
    }

    /// A session the driver minted starts with `--session-id` even when the
    /// CLI's config dir (so its transcript's place) cannot be known.
    #[test]
    fn a_minted_session_is_created_even_where_its_transcript_cannot_be_known() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::new(dir.path(), "h").unwrap();
        let mut cfg = DriverConfig::new("claude", home);
        // An empty HOME hides the daemon's own; no CLAUDE_CONFIG_DIR.
        cfg.env = vec![("HOME".into(), String::new())];
        let mut d = Driver::new(cfg);
        assert_eq!(d.transcript_path("x"), None);
        let sw = Switches::default();
        let id = d.ensure_session().unwrap();
        let args = d.spec("", &sw, &id, "m").args;
        assert!(args.contains(&format!("--session-id={id}")), "{args:?}");
        assert!(!args.iter().any(|a| a.starts_with("--resume")), "{args:?}");
        // Once a process ran it, it is resumed.
        d.known_sessions.push(id.clone());
        let args = d.spec("", &sw, &id, "m").args;
        assert!(args.contains(&format!("--resume={id}")), "{args:?}");
        // A session recorded by a predecessor, place unknown: resumed.
        let args = d.spec("", &sw, "other", "m").args;
        assert!(args.contains(&"--resume=other".to_string()), "{args:?}");
    }

    #[test]
    fn permission_flags() {
        assert_eq!(
            Permissions::bypass().args(),
            vec!["--permission-mode=bypassPermissions".to_string()]
        );
        assert_eq!(
            Permissions::bypass().env(),
            vec![(ENV_IS_SANDBOX.to_string(), "1".to_string())]
        );
        let p = Permissions::allowing(["Bash(hoop say:*)", "Read"]);
        assert_eq!(
            p.args(),
            vec!["--allowedTools=Bash(hoop say:*),Read".to_string()]
        );
        assert!(p.env().is_empty());
    }

    #[test]
    fn tokens_are_none_when_unknown_never_zero() {
        assert_eq!(TurnTokens::from_usage(None), TurnTokens::default());
        let u = Usage {
            input: 1,
            cache_write_5m: 2,
            cache_write_1h: 3,
            cache_write_unsplit: 4,
            cache_read: 5,
            output: 6,
        };
        assert_eq!(
            TurnTokens::from_usage(Some(&u)),
            TurnTokens {
                tokens_in: Some(1),
                tokens_cached_in: Some(14),
                tokens_out: Some(6)
            }
        );
    }
}
