//! Every constant of the specification in one named place, each with the
//! reason it has its value. Values marked "default" are configurable; the
//! configuration falls back to the constant here.

use std::time::Duration;

// ---------------------------------------------------------------- backend facts

/// Production's convention for agent accounts' fixed one-time code. Public,
/// not a secret: the agent secret header and the email are what identify.
pub const FIXED_LOGIN_CODE: &str = "123456";
/// Production issues 15-minute JWTs.
pub const JWT_LIFETIME: Duration = Duration::from_secs(15 * 60);
/// Re-login this long before the cached token expires, so a request never
/// races the expiry.
pub const JWT_REFRESH_MARGIN: Duration = Duration::from_secs(60);
/// A message body longer than this is an error, never truncated (production).
pub const MAX_BODY_CHARS: usize = 65_536;
/// Production rate limit on text messages per user per minute.
pub const SEND_RATE_PER_MIN: u32 = 60;
/// Production rate limit on MCP calls per key per minute.
pub const MCP_CALLS_PER_MIN: u32 = 300;
/// `Retry-After` production sends with an MCP 429.
pub const MCP_RETRY_AFTER_SECS: u64 = 60;
/// JSON-RPC error code production uses for an MCP 429.
pub const MCP_RATE_LIMIT_RPC_CODE: i64 = -32000;
/// An MCP 429 is retried at most this many times per call, whatever the
/// server's `Retry-After` says, so a server answering `Retry-After: 0` can
/// never make a client loop.
pub const MCP_RETRY_MAX_ATTEMPTS: u32 = 3;
/// The shortest wait before retrying an MCP 429 (a `Retry-After` below it,
/// e.g. 0, is raised to it).
pub const MCP_RETRY_MIN_WAIT: Duration = Duration::from_secs(1);
/// A failure report outwaits the message rate limit at most this long:
/// production counts text messages per calendar minute, so the next minute
/// always starts within 60 s (plus a second for clock skew).
pub const FAILURE_REPORT_MAX_WAIT: Duration = Duration::from_secs(61);
/// A rate-limited failure report is retried this often while it waits, in
/// case the window moves sooner than announced.
pub const FAILURE_REPORT_RETRY_POLL: Duration = Duration::from_secs(1);
/// Production's request body cap on `/mcp`.
pub const MCP_BODY_CAP_BYTES: usize = 160 * 1024 * 1024;
/// Body cap on every other REST route of the reference backend: a maximal
/// text message in JSON with escapes fits comfortably; images are base64.
pub const REST_BODY_CAP_BYTES: usize = 32 * 1024 * 1024;
/// `chat_read` limit bounds and default (production).
pub const CHAT_READ_MIN: u32 = 1;
pub const CHAT_READ_MAX: u32 = 50;
pub const CHAT_READ_DEFAULT: u32 = 20;
/// Heartbeat cadence production answers with `next_beat_sec`.
pub const NEXT_BEAT_SECS: u64 = 60;
/// No heartbeat (or window sync) for this long = gone (production).
pub const PRESENCE_TIMEOUT: Duration = Duration::from_secs(3 * 60);
/// A lease lasts 5 minutes from its last renew (production).
pub const LEASE_DURATION: Duration = Duration::from_secs(5 * 60);
/// Renew answers `renew_after_sec` = 60: five renew chances per lease.
pub const RENEW_AFTER_SECS: u64 = 60;
/// At most this many live sub-cards under one card (production).
pub const MAX_LIVE_SUBCARDS: usize = 8;

// ---------------------------------------------------------------- sentinel

/// WebSocket ping interval; with the pong deadline a dead link is noticed
/// within 25 s instead of at the next TCP timeout.
pub const WS_PING_INTERVAL: Duration = Duration::from_secs(15);
/// A pong later than this after a ping means the link is dead.
pub const WS_PONG_DEADLINE: Duration = Duration::from_secs(10);
/// Reconnect backoff starts here and doubles…
pub const WS_BACKOFF_START: Duration = Duration::from_secs(1);
/// …up to this ceiling: a minute is the most a message may wait for a
/// reconnect; the 300 s alarm covers anything the socket missed.
pub const WS_BACKOFF_MAX: Duration = Duration::from_secs(60);
/// A connection that stayed up this long resets the reconnect backoff;
/// a shorter one (accepted, then dropped) keeps it growing. Four ping
/// rounds: a link that survived them was really up.
pub const WS_STABLE_AFTER: Duration = Duration::from_secs(60);
/// Debounce after a kick: a burst of messages becomes one round.
pub const CYCLE_DEBOUNCE: Duration = Duration::from_secs(3);
/// The alarm pulls everything even without an event.
pub const CYCLE_ALARM: Duration = Duration::from_secs(300);
/// Never heartbeat faster than this, whatever the backend says.
pub const HEARTBEAT_FLOOR: Duration = Duration::from_secs(15);
/// The daemon's stderr log file (`<home>/logs/sentinel.err.log`, where
/// launchd sends it; nothing on macOS rotates it) is moved to `.1` once it
/// reaches this size, so a home keeps at most twice this much log. 16 MiB
/// holds weeks of a busy daemon's lines (a round logs a few hundred bytes).
pub const SENTINEL_LOG_MAX_BYTES: u64 = 16 * 1024 * 1024;
/// Heartbeat failures are logged only on these consecutive counts.
pub const HEARTBEAT_LOG_AT: [u64; 3] = [1, 10, 100];
/// Messages per page when pulling until the cursor is seen.
pub const PULL_PAGE: u32 = 15;
/// Extra pages (with `?before=`) after the first before giving up.
pub const PULL_EXTRA_PAGES: u32 = 3;
/// Turn lock busy → retry the round this much later.
pub const TURN_LOCK_RETRY: Duration = Duration::from_secs(60);
/// Default turn timeout.
pub const TURN_TIMEOUT: Duration = Duration::from_secs(20 * 60);
/// Exit codes that mean a timeout (timeout(1), SIGKILL, SIGTERM): not death.
pub const TIMEOUT_EXIT_CODES: [i32; 3] = [124, 137, 143];
/// Backoff after consecutive failed turns.
pub const FAILURE_BACKOFF: [Duration; 3] = [
    Duration::from_secs(60),
    Duration::from_secs(300),
    Duration::from_secs(1800),
];
/// Only this many consecutive failures post the "still online" note.
pub const FAILURE_NOTICE_AT: u32 = 2;
/// An obituary for one cause is repeated at most this often.
pub const OBITUARY_REPEAT: Duration = Duration::from_secs(3600);
/// Default idle time after which a persistent agent is compacted and stopped.
pub const IDLE_REAP: Duration = Duration::from_secs(1800);
/// Default context size at which a cold start compacts before the first turn.
pub const COLD_COMPACT_TOKENS: u64 = 400_000;
/// The CLI's autocompact window cap (`CLAUDE_CODE_AUTO_COMPACT_WINDOW` max).
pub const AUTOCOMPACT_CEILING: u64 = 1_000_000;
/// The context meter reads only this tail of the transcript.
pub const CONTEXT_METER_TAIL_BYTES: u64 = 2 * 1024 * 1024;

// ---------------------------------------------------------------- send gates, bridge

/// `hoop say` reads this many newest messages down to the watermark.
pub const SAY_GAP_WINDOW: u32 = 8;
/// Production's gap check reads this many newest messages (seed 002 §0.3,
/// "回环读 30 条查缝"; "缝查 30 别顺手改成 50").
pub const GAP_CHECK_READ: u32 = 30;
/// Bridge poll interval.
pub const BRIDGE_POLL: Duration = Duration::from_secs(5);
/// Window sync interval.
pub const WINDOW_SYNC_INTERVAL: Duration = Duration::from_secs(30);

// ---------------------------------------------------------------- hooks

/// Hook payloads are read up to this many bytes; a larger one is not parsed.
pub const HOOK_STDIN_CAP_BYTES: usize = 4 * 1024 * 1024;

// ---------------------------------------------------------------- patrols, event kinds

/// Body cap of an `alert` event (seed 000): truncating an alert loses detail
/// about one incident, and 4 KB holds what a person needs to act on one.
pub const ALERT_BODY_CAP_BYTES: usize = 4 * 1024;
/// Body cap of a `task` event (seed 000): the same size as an alert; a task
/// names one piece of work.
pub const TASK_BODY_CAP_BYTES: usize = 4 * 1024;
/// Body cap of a `brief` event (seed 000): larger because a brief is a
/// procedure, and truncating one deletes STEPS — the run then does most of
/// a job and reports success.
pub const BRIEF_BODY_CAP_BYTES: usize = 16 * 1024;
/// A patrol's prescan runs at most this long unless its declaration says
/// otherwise: a prescan is plain code over local state and an API or two.
pub const PATROL_PRESCAN_TIMEOUT: Duration = Duration::from_secs(60);
/// A prescan's stderr is kept up to this many bytes for the failure text
/// (the end of it, where the error usually is).
pub const PATROL_STDERR_KEEP_BYTES: usize = 2 * 1024;
// ---------------------------------------------------------------- service units

/// The sentinel's exit code when another instance already holds the home's
/// account lock. The service units list it in `RestartPreventExitStatus=`:
/// restarting cannot help while the other instance lives, and a restart
/// loop against a held lock only fills the log.
pub const SENTINEL_EXIT_LOCK_HELD: u8 = 3;
/// The sentinel's exit code for a fatal configuration error (a home, config
/// or state file it cannot use): `EX_CONFIG` from sysexits(3). Listed in
/// `RestartPreventExitStatus=` too: only a person editing a file fixes it.
pub const SENTINEL_EXIT_CONFIG: u8 = 78;
/// systemd `RestartSec=`: a crash comes back after this long, which keeps
/// an unforeseen crash loop at one start per 10 s.
pub const UNIT_RESTART_SEC: u64 = 10;
/// launchd `ThrottleInterval` (seconds). launchd has no per-exit-code
/// "do not restart", so a fatal config error or a held lock is retried once
/// a minute, never in a tight loop; a fixed config file is picked up within
/// a minute without anyone touching launchd.
pub const LAUNCHD_THROTTLE_SEC: u64 = 60;
/// How far the local clock may drift from the backend's before `hoop doctor`
/// calls it an error: JWTs live 15 minutes and are refreshed 60 s before
/// expiry, so a skew past the refresh margin makes logins expire early.
pub const CLOCK_SKEW_ERROR: Duration = Duration::from_secs(60);
/// Below the error threshold, a skew above this is reported as a warning.
pub const CLOCK_SKEW_WARN: Duration = Duration::from_secs(5);
/// How long `hoop doctor` waits for a backend's answer when reading its
/// clock: long enough for a slow link, short enough that a dead backend does
/// not stall the whole report.
pub const DOCTOR_CLOCK_TIMEOUT: Duration = Duration::from_secs(5);
