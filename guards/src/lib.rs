//! Hook commands that Claude Code and Cursor run around tool calls. They must
//! answer in about a millisecond, so nothing here starts an async runtime,
//! reads config beyond its own file, or touches the network (except the
//! hook-status relay's one loopback POST).
//!
//! - [`act`]: act_guard, the verdict on a shell command (PreToolUse, Bash);
//! - [`memory`]: memory_guard, the size of `MEMORY.md` after an edit;
//! - [`phase`]: tool_phase, one whitelisted word per tool into `phase.json`;
//! - [`mcp`]: mcp_gate, a per-home allowlist of MCP tools;
//! - [`hook`]: the two hook contracts (payload in, answer out);
//! - [`run`]: the drivers that tie a payload to a guard and an answer;
//! - [`install`]: merging our entries into Claude Code / Cursor settings;
//! - [`lane`]: the hook-status lane (lifecycle hooks → non-authoritative
//!   signals for workers; the only guard that talks to the network, and only
//!   to loopback).

pub mod act;
pub mod cache_facts;
pub mod hook;
pub mod install;
pub mod lane;
pub mod limits;
pub mod mcp;
pub mod memory;
pub mod phase;
pub mod run;
