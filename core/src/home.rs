//! Where a home's state lives. One account = one home, `<root>/<name>/`,
//! where the root is `~/.hoop` (or `$HOOP_ROOT`, which tests and operators use
//! to keep several roots apart). Every crate names a home's files through
//! these accessors, so the layout is written down once.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// Environment variable that replaces `~/.hoop`.
pub const ROOT_ENV: &str = "HOOP_ROOT";
/// The root-level file holding `HOOP_AGENT_SECRET=…` (production convention).
pub const AGENT_ENV_FILE: &str = "agent.env";
/// The daemon's stderr log under `<home>/logs/`, named once for the plist
/// template, `hoop restart` and the daemon's own size bound.
pub const SENTINEL_LOG_FILE: &str = "sentinel.err.log";
/// The variable inside `agent.env` sent as `X-Hoop-Agent-Secret` on login.
pub const AGENT_SECRET_VAR: &str = "HOOP_AGENT_SECRET";

#[derive(Debug, Error)]
pub enum HomeError {
    #[error("no home directory: set {ROOT_ENV} or HOME")]
    NoHomeDir,
    #[error(
        "invalid home name {0:?}: use letters, digits, '-', '_' and '.' (not starting with '.')"
    )]
    BadName(String),
    #[error("reading {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("parsing {path}: {source}")]
    Parse {
        path: PathBuf,
        source: serde_json::Error,
    },
}

/// The hoop root: `$HOOP_ROOT`, else `~/.hoop`.
pub fn root() -> Result<PathBuf, HomeError> {
    if let Some(r) = std::env::var_os(ROOT_ENV).filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(r));
    }
    directories::BaseDirs::new()
        .map(|b| b.home_dir().join(".hoop"))
        .ok_or(HomeError::NoHomeDir)
}

/// Read `HOOP_AGENT_SECRET` from `<root>/agent.env` (`KEY=value` lines,
/// `#` comments, optional `export ` and quotes). Absent file or key → `None`.
pub fn agent_secret(root: &Path) -> Option<String> {
    let text = std::fs::read_to_string(root.join(AGENT_ENV_FILE)).ok()?;
    text.lines()
        .find_map(|line| {
            let line = line.trim();
            let line = line.strip_prefix("export ").unwrap_or(line);
            let (k, v) = line.split_once('=')?;
            (k.trim() == AGENT_SECRET_VAR).then(|| {
                let v = v.trim();
                v.trim_matches(|c| c == '"' || c == '\'').to_string()
            })
        })
        .filter(|s| !s.is_empty())
}

/// One home: `<root>/<name>/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Home {
    pub root: PathBuf,
    pub name: String,
}

impl Home {
    /// A home under an explicit root (validates the name).
    pub fn new(root: impl Into<PathBuf>, name: &str) -> Result<Home, HomeError> {
        let ok = !name.is_empty()
            && !name.starts_with('.')
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if !ok {
            return Err(HomeError::BadName(name.to_string()));
        }
        Ok(Home {
            root: root.into(),
            name: name.to_string(),
        })
    }

    /// A home under the default root.
    pub fn open(name: &str) -> Result<Home, HomeError> {
        Home::new(root()?, name)
    }

    pub fn dir(&self) -> PathBuf {
        self.root.join(&self.name)
    }
    /// `config.json`: how this home reaches the backend ([`HomeConfig`]).
    pub fn config_path(&self) -> PathBuf {
        self.dir().join("config.json")
    }
    /// The cached JWT, mode 0600.
    pub fn token_path(&self) -> PathBuf {
        self.dir().join(".token.json")
    }
    /// A reinforcement account's MCP key (`hoopmcp_…`), mode 0600: what
    /// `hoop mcp add-line --home` reads. Such a home has no `config.json`:
    /// its account has no login and no sentinel runs for it.
    pub fn mcp_key_path(&self) -> PathBuf {
        self.dir().join(".mcp_key")
    }
    /// The agent CLI's session id for this home.
    pub fn session_id_path(&self) -> PathBuf {
        self.dir().join("session.id")
    }
    /// Per-conversation cursors (newest message id answered or skipped).
    pub fn cursors_path(&self) -> PathBuf {
        self.dir().join("cursors.json")
    }
    /// `hoop say`'s watermark per conversation.
    pub fn say_seen_path(&self) -> PathBuf {
        self.dir().join("say_seen.json")
    }
    /// The one whitelisted word tool_phase writes.
    pub fn phase_path(&self) -> PathBuf {
        self.dir().join("phase.json")
    }
    /// mcp_gate's allowlist: one MCP tool name (or `prefix*`) per line.
    pub fn mcp_allow_path(&self) -> PathBuf {
        self.dir().join("mcp_allow")
    }
    /// mcp_gate's ledger of refused calls (JSON lines, append-only).
    pub fn mcp_refusals_path(&self) -> PathBuf {
        self.dir().join("mcp_refusals.jsonl")
    }
    /// Prompt part overrides: `prompts/<part>.md`.
    pub fn prompts_dir(&self) -> PathBuf {
        self.dir().join("prompts")
    }
    /// The home's standing task, appended to the system preamble.
    pub fn task_path(&self) -> PathBuf {
        self.dir().join("task.md")
    }
    /// A per-home switch file (`persist`, `cold_compact`, `autocompact`,
    /// `autocompact_auto_off`, `cache_ttl`).
    pub fn switch_path(&self, switch: &str) -> PathBuf {
        self.dir().join(switch)
    }
    /// The account flock, held for the daemon's life. Never deleted.
    pub fn account_lock_path(&self) -> PathBuf {
        self.dir().join("account.lock")
    }
    /// The turn flock, held while a turn runs. Never deleted.
    pub fn turn_lock_path(&self) -> PathBuf {
        self.dir().join("turn.lock")
    }
    /// The fixed working directory the agent CLI runs in (`--resume` only
    /// finds sessions recorded under the same cwd).
    pub fn workdir(&self) -> PathBuf {
        self.dir().join("work")
    }
    pub fn logs_dir(&self) -> PathBuf {
        self.dir().join("logs")
    }
    /// The file the service manager sends the daemon's stderr to (launchd's
    /// `StandardErrorPath`; also where `hoop restart` looks for the daemon's
    /// lines when no journal has them). The daemon bounds its size.
    pub fn sentinel_log_path(&self) -> PathBuf {
        self.logs_dir().join(SENTINEL_LOG_FILE)
    }
    /// One directory per worker (`workers/<card>/`: its record, scratch
    /// HOME, working directory, prompt and log).
    pub fn workers_dir(&self) -> PathBuf {
        self.dir().join("workers")
    }

    /// Load `config.json`.
    pub fn load_config(&self) -> Result<HomeConfig, HomeError> {
        let path = self.config_path();
        let text = std::fs::read_to_string(&path).map_err(|source| HomeError::Io {
            path: path.clone(),
            source,
        })?;
        serde_json::from_str(&text).map_err(|source| HomeError::Parse { path, source })
    }
}

/// How a home reaches the backend. Written by provisioning (or by hand).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct HomeConfig {
    /// e.g. `http://127.0.0.1:8080` (no trailing slash needed).
    pub base_url: String,
    /// The account's login email.
    pub email: String,
    /// The fixed login code; absent means the public convention.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub login_code: Option<String>,
}

impl HomeConfig {
    pub fn login_code(&self) -> &str {
        self.login_code
            .as_deref()
            .unwrap_or(crate::limits::FIXED_LOGIN_CODE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_validated() {
        for bad in ["", ".x", "a/b", "..", "a b"] {
            assert!(Home::new("/r", bad).is_err(), "{bad:?}");
        }
        let h = Home::new("/r", "bolt-1").unwrap();
        assert_eq!(h.token_path(), PathBuf::from("/r/bolt-1/.token.json"));
    }

    #[test]
    fn agent_secret_parsing() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(agent_secret(dir.path()), None);
        std::fs::write(
            dir.path().join(AGENT_ENV_FILE),
            "# c\nOTHER=1\nexport HOOP_AGENT_SECRET=\"s3cr3t\"\n",
        )
        .unwrap();
        assert_eq!(agent_secret(dir.path()).as_deref(), Some("s3cr3t"));
        std::fs::write(dir.path().join(AGENT_ENV_FILE), "HOOP_AGENT_SECRET=\n").unwrap();
        assert_eq!(agent_secret(dir.path()), None);
    }
}
