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
