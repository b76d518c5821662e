//! The daemon's concurrent tasks (SPEC §2): `ws`, `cycle`, `heartbeat`,
//! `lease` (renewer) and `reaper`, plus the hook-status endpoint (`hook_status`). Each is a thin loop over the pure
//! decisions in [`crate::policy`] and [`crate::plan`].

pub mod cycle;
pub mod heartbeat;
pub mod hook_status;
pub mod lease;
pub mod orphans;
pub mod patrol;
pub mod reaper;
pub mod ws;

use hoop_api::types::ConversationId;

/// What rang: one conversation, or everything (alarm, recheck, reconnect).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kick {
    Conversation(ConversationId),
    All,
}
