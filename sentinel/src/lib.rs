//! The sentinel: one daemon per agent account. It keeps a WebSocket to the
//! backend, decides which messages concern its account, drives the `claude`
//! CLI through one turn at a time, and commits a conversation's cursor only
//! after a turn that exited 0 — so no message is lost and none answered twice.

pub mod agent;
pub mod compaction;
pub mod config;
pub mod constants;
pub mod context;
pub mod daemon;
pub mod driver;
pub mod driver_agent;
pub mod journal;
pub mod ledger;
pub mod lock;
pub mod patrol;
pub mod patrol_round;
pub mod plan;
pub mod policy;
pub mod proctree;
pub mod prompts;
pub mod round;
pub mod state;
pub mod switches;
pub mod tasks;
pub mod usage;
pub mod worker;

#[cfg(test)]
mod test_support;
