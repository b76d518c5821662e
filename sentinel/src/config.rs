//! The sentinel's settings: the home's `config.json` (how to reach the
//! backend, shared with `hoop say`) plus an optional `sentinel.json` beside it
//! for what only the daemon needs. Every field is optional; an absent file
//! means every default. Unknown fields are refused so that a typo is an
//! error, not a silently ignored setting.
//!
//! ```json
//! {
//!   "claude_bin": "claude",
//!   "permission_mode": "bypassPermissions",
//!   "allowed_tools": ["Bash"],
//!   "turn_timeout_sec": 1200,
//!   "idle_reap_sec": 1800,
//!   "new_room_backlog_sec": 3600,
//!   "env": {"ANTHROPIC_BASE_URL": "…"},
//!   "timings": {"debounce_ms": 3000},
//!   "patrols": [{"name": "inbox", "interval_sec": 1200, "prescan": ["scan"],
//!                "quiet_exit": 3, "brief": "…"}]
//! }
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use hoop_core::limits;
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::constants::{
    HEARTBEAT_RETRY, HOOK_STATUS_KEEP, NEW_ROOM_BACKLOG, PATROL_SKIP_AFTER, REAPER_TICK,
    SENTINEL_CONFIG_FILE, WORKER_POLL,
};

#[derive(Debug, Error)]
pub enum ConfigError {
    #[error("reading {path}: {error}")]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("parsing {path}: {error}")]
    Parse {
        path: PathBuf,
        error: serde_json::Error,
    },
    #[error("{path}: {error}")]
    Invalid { path: PathBuf, error: String },
}

/// `sentinel.json`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct SentinelFile {
    /// The agent CLI (default: `claude` from PATH).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claude_bin: Option<PathBuf>,
    /// `--permission-mode` for the agent (default `bypassPermissions`, which
    /// the daemon runs with `IS_SANDBOX=1` so that it also works as root).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission_mode: Option<String>,
    /// `--allowedTools` entries (default: none beyond the mode).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_tools: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_timeout_sec: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_reap_sec: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_room_backlog_sec: Option<u64>,
    /// How long a worker run's hook-status projection is kept after its
    /// end signal (default [`HOOK_STATUS_KEEP`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hook_status_keep_sec: Option<u64>,
    /// Days the journal keeps (default [`crate::constants::JOURNAL_KEEP_DAYS`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub journal_keep_days: Option<u32>,
    /// The journal folder's bound in bytes (default
    /// [`crate::constants::JOURNAL_MAX_BYTES`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub journal_max_bytes: Option<u64>,
    /// Extra environment for the agent process.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Shorter clocks for tests and demos; production leaves this out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timings: Option<TimingsFile>,
    /// Timed patrols ([`crate::patrol`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub patrols: Vec<crate::patrol::PatrolFile>,
}

/// Overrides of the daemon's clocks, in milliseconds.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct TimingsFile {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub debounce_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alarm_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_lock_retry_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_backoff_ms: Option<[u64; 3]>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ws_backoff_start_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ws_backoff_max_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ws_stable_after_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reaper_tick_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heartbeat_retry_ms: Option<u64>,
    /// Replaces the backend's `next_beat_sec` (tests only: a minute is too
    /// long to watch a run of failures).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heartbeat_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker_poll_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patrol_skip_after_ms: Option<u64>,
}

/// The daemon's clocks, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Timings {
    pub debounce: Duration,
    pub alarm: Duration,
    pub turn_lock_retry: Duration,
    pub failure_backoff: [Duration; 3],
    pub ws_backoff_start: Duration,
    pub ws_backoff_max: Duration,
    /// A connection up this long resets the reconnect backoff.
    pub ws_stable_after: Duration,
    pub reaper_tick: Duration,
    pub heartbeat_retry: Duration,
    /// `None`: follow the backend's `next_beat_sec` (with the floor).
    pub heartbeat_every: Option<Duration>,
    /// How often the renewer looks at live workers' cards.
    pub worker_poll: Duration,
    /// A patrol span that keeps failing is skipped no sooner than this
    /// after its first failure.
    pub patrol_skip_after: Duration,
}

impl Default for Timings {
    fn default() -> Self {
        Timings {
            debounce: limits::CYCLE_DEBOUNCE,
            alarm: limits::CYCLE_ALARM,
            turn_lock_retry: limits::TURN_LOCK_RETRY,
            failure_backoff: limits::FAILURE_BACKOFF,
            ws_backoff_start: limits::WS_BACKOFF_START,
            ws_backoff_max: limits::WS_BACKOFF_MAX,
            ws_stable_after: limits::WS_STABLE_AFTER,
            reaper_tick: REAPER_TICK,
            heartbeat_retry: HEARTBEAT_RETRY,
            heartbeat_every: None,
            worker_poll: WORKER_POLL,
            patrol_skip_after: PATROL_SKIP_AFTER,
        }
    }
}

impl Timings {
    fn from_file(f: Option<&TimingsFile>) -> Timings {
        let d = Timings::default();
        let Some(f) = f else { return d };
        let ms = Duration::from_millis;
        Timings {
            debounce: f.debounce_ms.map_or(d.debounce, ms),
            alarm: f.alarm_ms.map_or(d.alarm, ms),
            turn_lock_retry: f.turn_lock_retry_ms.map_or(d.turn_lock_retry, ms),
            failure_backoff: f
                .failure_backoff_ms
                .map_or(d.failure_backoff, |a| a.map(ms)),
            ws_backoff_start: f.ws_backoff_start_ms.map_or(d.ws_backoff_start, ms),
            ws_backoff_max: f.ws_backoff_max_ms.map_or(d.ws_backoff_max, ms),
            ws_stable_after: f.ws_stable_after_ms.map_or(d.ws_stable_after, ms),
            reaper_tick: f.reaper_tick_ms.map_or(d.reaper_tick, ms),
            heartbeat_retry: f.heartbeat_retry_ms.map_or(d.heartbeat_retry, ms),
            heartbeat_every: f.heartbeat_ms.map(ms),
            worker_poll: f.worker_poll_ms.map_or(d.worker_poll, ms),
            patrol_skip_after: f.patrol_skip_after_ms.map_or(d.patrol_skip_after, ms),
        }
    }
}

/// Everything the daemon needs besides the backend config, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SentinelConfig {
    pub claude_bin: PathBuf,
    pub permission_mode: String,
    pub allowed_tools: Vec<String>,
    pub turn_timeout: Duration,
    pub idle_reap: Duration,
    pub new_room_backlog: Duration,
    pub hook_status_keep: Duration,
    /// What the journal keeps.
    pub journal_keep: crate::journal::retention::Keep,
    pub env: BTreeMap<String, String>,
    pub timings: Timings,
    /// Validated patrols (see [`SentinelConfig::load`]).
    pub patrols: Vec<crate::patrol::Patrol>,
}

/// The default agent CLI: found on PATH.
pub const DEFAULT_CLAUDE_BIN: &str = "claude";
/// The default permission mode: the agent must be able to run `hoop say`
/// and do work without a person to click "allow" (headless).
pub const DEFAULT_PERMISSION_MODE: &str = "bypassPermissions";

impl SentinelConfig {
    /// Resolve defaults; patrols are validated by [`SentinelConfig::load`]
    /// (here, declarations that do not validate are dropped).
    pub fn resolve(f: SentinelFile) -> SentinelConfig {
        SentinelConfig {
            patrols: crate::patrol::validate(&f.patrols).unwrap_or_default(),
            claude_bin: f
                .claude_bin
                .unwrap_or_else(|| PathBuf::from(DEFAULT_CLAUDE_BIN)),
            permission_mode: f
                .permission_mode
                .unwrap_or_else(|| DEFAULT_PERMISSION_MODE.to_string()),
            allowed_tools: f.allowed_tools,
            turn_timeout: f
                .turn_timeout_sec
                .map_or(limits::TURN_TIMEOUT, Duration::from_secs),
            idle_reap: f
                .idle_reap_sec
                .map_or(limits::IDLE_REAP, Duration::from_secs),
            new_room_backlog: f
                .new_room_backlog_sec
                .map_or(NEW_ROOM_BACKLOG, Duration::from_secs),
            hook_status_keep: f
                .hook_status_keep_sec
                .map_or(HOOK_STATUS_KEEP, Duration::from_secs),
            journal_keep: {
                let d = crate::journal::retention::Keep::default();
                crate::journal::retention::Keep {
                    days: f.journal_keep_days.unwrap_or(d.days),
                    max_bytes: f.journal_max_bytes.unwrap_or(d.max_bytes),
                }
            },
            env: f.env,
            timings: Timings::from_file(f.timings.as_ref()),
        }
    }

    /// Load `<home dir>/sentinel.json`; absent → defaults.
    pub fn load(home_dir: &Path) -> Result<SentinelConfig, ConfigError> {
        let path = home_dir.join(SENTINEL_CONFIG_FILE);
        let file = match std::fs::read_to_string(&path) {
            Ok(text) => serde_json::from_str(&text).map_err(|source| ConfigError::Parse {
                path: path.clone(),
                error: source,
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => SentinelFile::default(),
            Err(source) => {
                return Err(ConfigError::Io {
                    path,
                    error: source,
                });
            }
        };
        if let Err(error) = crate::patrol::validate(&file.patrols) {
            return Err(ConfigError::Invalid { path, error });
        }
        Ok(SentinelConfig::resolve(file))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absent_file_is_every_default() {
        let dir = tempfile::tempdir().unwrap();
        let c = SentinelConfig::load(dir.path()).unwrap();
        assert_eq!(c.turn_timeout, Duration::from_secs(1200));
        assert_eq!(c.idle_reap, Duration::from_secs(1800));
        assert_eq!(c.timings.debounce, Duration::from_secs(3));
        assert_eq!(c.timings.alarm, Duration::from_secs(300));
        assert_eq!(c.claude_bin, PathBuf::from("claude"));
    }

    #[test]
    fn overrides_and_typos() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(SENTINEL_CONFIG_FILE);
        std::fs::write(
            &p,
            r#"{"idle_reap_sec": 5, "timings": {"debounce_ms": 200, "failure_backoff_ms": [1,2,3]}}"#,
        )
        .unwrap();
        let c = SentinelConfig::load(dir.path()).unwrap();
        assert_eq!(c.idle_reap, Duration::from_secs(5));
        assert_eq!(c.timings.debounce, Duration::from_millis(200));
        assert_eq!(c.timings.failure_backoff[2], Duration::from_millis(3));
        assert_eq!(c.timings.alarm, Duration::from_secs(300));
        std::fs::write(&p, r#"{"idle_reep_sec": 5}"#).unwrap();
        let e = SentinelConfig::load(dir.path()).unwrap_err();
        assert!(e.to_string().contains("idle_reep_sec"), "{e}");
    }

    #[test]
    fn patrols_are_read_and_a_bad_one_stops_the_load() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(SENTINEL_CONFIG_FILE);
        let patrol = |quiet: i32| {
            format!(
                r#"{{"patrols": [{{"name": "inbox", "interval_sec": 60, "prescan": ["scan"],
                    "quiet_exit": {quiet}, "brief": "summarise"}}]}}"#
            )
        };
        std::fs::write(&p, patrol(3)).unwrap();
        let c = SentinelConfig::load(dir.path()).unwrap();
        assert_eq!(c.patrols.len(), 1);
        assert_eq!(c.patrols[0].name, "inbox");
        std::fs::write(&p, patrol(0)).unwrap();
        let e = SentinelConfig::load(dir.path()).unwrap_err();
        assert!(e.to_string().contains("quiet_exit"), "{e}");
    }
}
