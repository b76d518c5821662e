//! Hook commands that Claude Code and Cursor run around tool calls. They must
//! answer in about a millisecond, so nothing here starts an async runtime,
//! reads config beyond its own file, or touches the network.
//!
//! - [`act`]: act_guard, the verdict on a shell command (PreToolUse, Bash);
//! - [`memory`]: memory_guard, the size of `MEMORY.md` after an edit;
//! - [`phase`]: tool_phase, one whitelisted word per tool into `phase.json`;
//! - [`mcp`]: mcp_gate, a per-home allowlist of MCP tools;
//! - [`hook`]: the two hook contracts (payload in, answer out);
//! - [`install`]: merging our entries into Claude Code / Cursor settings.

pub mod act;
