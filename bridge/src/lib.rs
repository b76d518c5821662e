//! The bridge: a doorbell that runs inside an interactive Claude Code or Codex
//! window and prints one line per event that concerns that window (SPEC §3,
//! seed 002's `hoop-channel.js`).
//!
//! Pure cores with table tests: `config` (key and endpoint, allowlist,
//! claims), `window` (the one ownership rule `handles` and the sync
//! transitions), `detect` (what is new, the filters in order, the exact
//! line, the 20-line cap), `health` (down / recovered), `state` (baselines,
//! dedup memory, atomic save). The shell: `watch` (one round against the
//! MCP endpoint). Time is injected (`clock`).

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
