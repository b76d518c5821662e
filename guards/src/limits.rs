//! The guards' own constants, each with the reason for its value. (The
//! spec-wide numbers, such as the hook stdin cap, live in
//! `hoop_core::limits`.)

/// Default ceiling for `MEMORY.md` after an edit, in bytes. Claude Code
/// loads the memory file into every session's context and warns about
/// memory files above 40 000 characters; past that it costs every turn.
pub const MEMORY_MAX_BYTES: u64 = 40_000;

/// Environment variable that overrides [`MEMORY_MAX_BYTES`].
pub const MEMORY_MAX_ENV: &str = "HOOP_MEMORY_MAX_BYTES";

/// Root-level file that overrides [`MEMORY_MAX_BYTES`] (one number).
pub const MEMORY_MAX_FILE: &str = "memory_guard_max_bytes";

/// The file memory_guard watches.
pub const MEMORY_FILE_NAME: &str = "MEMORY.md";

/// The environment variable naming the home for tool_phase and mcp_gate.
pub const HOME_ENV: &str = "HOOP_HOME";

/// The environment variable naming who runs the agent (release owner check).
pub const AGENT_ENV: &str = "HOOP_AGENT";

// ---------------------------------------------------------------- hook-status lane

/// How long a run's registration accepts signals. A worker outliving a day is
/// long reaped; an unbounded window would let a leaked token rewrite a run's
/// status forever (seed 001: 24 h is generous for any real run).
pub const LANE_REGISTRATION_TTL_SECS: i64 = 24 * 60 * 60;

/// The endpoint's cap on one signal POST. The body is a token (32 hex), two
/// safe ids, a signal word and a detail of at most [`LANE_DETAIL_MAX_CHARS`]:
/// well under 1 KB; 4 KB leaves room for JSON escapes and nothing more.
pub const LANE_BODY_MAX_BYTES: usize = 4 * 1024;

/// A scrubbed detail is cut to this many characters: it is a tool name or a
/// word from a closed set, shown on one status line.
pub const LANE_DETAIL_MAX_CHARS: usize = 120;

/// A mission or run id is at most this long (card ids and home names are far
/// shorter; the bound keeps file names sane).
pub const LANE_ID_MAX_CHARS: usize = 128;

/// The spec file `hoop hook-status` reads is a few hundred bytes; a larger one
/// is not ours and is not read.
pub const LANE_SPEC_MAX_BYTES: u64 = 16 * 1024;

/// Connect, write and read of the relay's POST each give up after this: the
/// endpoint is on loopback and answers in microseconds, and a hook that hangs
/// holds the agent's session (the CLI waits up to the hook timeout).
pub const LANE_POST_TIMEOUT_MS: u64 = 1500;

/// The `timeout` written into each installed lifecycle hook, in seconds (the
/// shape both CLIs document; the relay itself gives up far sooner).
pub const LANE_HOOK_TIMEOUT_SECS: u64 = 10;

/// `latest_signals` reads at most this many runs of one mission (a home has
/// at most 8 live sub-cards per parent; finished runs stay until their TTL).
pub const LANE_READ_CAP: usize = 256;

/// A run's projection keeps its last this-many signals (a status line shows
/// the latest; the few before it say how the run got there) — bounded so a
/// chatty or hostile session cannot grow the file.
pub const LANE_RECENT_CAP: usize = 16;
