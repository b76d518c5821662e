//! The bridge: a doorbell that runs inside an interactive Claude Code or Codex
//! window and prints one line per event that concerns that window (SPEC §3,
//! seed 002's `hoop-channel.js`).
//!
//! Pure cores with table tests: `config` (key and endpoint, allowlist,
//! claims), `window` (the one ownership rule `handles` and the sync
//! transitions), `detect` (what is new, the filters in order, the exact
//! line, the 20-line cap), `health` (down / recovered), `state` (baselines,
//! dedup memory, atomic save), `drive::PushSchedule` (what a push round
//! calls), `codex::next_action` (pending → handed → received → alert). The
//! shells: `watch` (one round against the MCP endpoint, with a plan),
//! `drive` (the one loop: polling, or rounds on the backend's event stream
//! when offered), `channel` (`hoop bridge channel`, a stdio MCP server for
//! Claude Code's channels with the `reply` tool over `hoop_api::send`),
//! `codex` (pending store, receipts, handover). Time is injected (`clock`).

pub mod channel;
pub mod clock;
pub mod codex;
pub mod config;
pub mod constants;
pub mod detect;
pub mod drive;
pub mod health;
pub mod state;
pub mod watch;
pub mod window;
