//! The events of a message's life, as values: what the round pipeline saw
//! and did (seen and why, shown, answered, passed, offered again, failed,
//! given up, cursor moved). The round logs each one; they carry ids,
//! rules and figures, never bodies, so they can also be written to a
//! journal as they are.

use hoop_api::types::{ConversationId, MessageId};

use super::classify::Role;
use super::decide::AdvanceWhy;

/// Why a cursor moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CursorWhy {
    /// First sight, nothing at or after the floor.
    Baseline,
    /// No work: one of the advances without a turn.
    Advance(AdvanceWhy),
    /// After a turn that exited 0: past what is handled.
    Settled,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A fresh message was looked at and found to be `role`.
    Seen {
        room: ConversationId,
        id: MessageId,
        role: Role,
    },
    /// The round's prompt, listing `ids`, reached a running agent; the say
    /// watermark moved to `mark` (`None`: it could not move, something
    /// older was not listed).
    Shown {
        room: ConversationId,
        ids: Vec<MessageId>,
        mark: Option<MessageId>,
    },
    /// Answered by the account's message `by`, after it was shown.
    Answered {
        room: ConversationId,
        id: MessageId,
        by: MessageId,
    },
    /// The agent passed on it (`hoop pass`).
    Passed { room: ConversationId, id: MessageId },
    /// Left with neither a reply nor a pass; offered again (this was offer
    /// `offer` of [`crate::constants::MAX_OFFERS`]).
    OfferedAgain {
        room: ConversationId,
        id: MessageId,
        offer: u32,
    },
    /// The reply failed (a `hoop say` failed, or the turn did): offered
    /// again after the room's backoff.
    ReplyFailed {
        room: ConversationId,
        ids: Vec<MessageId>,
    },
    /// Offered [`crate::constants::MAX_OFFERS`] times without a reply or a
    /// pass: the cursor moves past it, with a warning.
    GaveUp {
        room: ConversationId,
        id: MessageId,
        offers: u32,
    },
    CursorMoved {
        room: ConversationId,
        to: MessageId,
        why: CursorWhy,
    },
}
