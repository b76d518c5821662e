//! The pure decisions of a round, one module per stage of its pipeline
//! (SPEC §2, "One round"): [`pull`] (how far to page back), [`classify`]
//! (what each fresh message is to the account), [`decide`] (wake, advance
//! or nothing), [`compose`] (the instructions, the prompt parts, the cap,
//! up to where the say watermark may move), [`settle`] (after the turn:
//! the cursor, and whether the room is done, silent or failed), [`rooms`]
//! (each room's own backoff) and [`events`] (a message's life as values).
//! No I/O: the round ([`crate::round`]) fetches, runs the turn and writes.

pub mod classify;
pub mod compose;
pub mod decide;
pub mod events;
pub mod pull;
pub mod rooms;
pub mod settle;

pub use classify::{Knowledge, Role, RoomPasses, classify, is_own_fixed_note, is_own_reply};
pub use compose::{
    CONTEXT_HEADER, Composed, INSTRUCTION_HEADER, InstructionCtx, MISSED_NOTE, PartsNeeded,
    TO_ANSWER_HEADER, compose, parts_needed, preamble_parts, read_command,
};
pub use decide::{AdvanceWhy, Again, DecideInput, Decision, Wake, decide, is_multi_ai};
pub use events::{CursorWhy, Event};
pub use pull::{Page, PullStep, Pulled, pull_step};
pub use rooms::RoomBook;
pub use settle::{Settled, TurnEnd, Verdict, settle};

#[cfg(test)]
pub(crate) mod testing {
    //! Messages and rooms for the plan's table tests.
    use hoop_api::types::{Conversation, Message, MessageKind};
    use hoop_core::mention::Me;

    use super::Page;

    pub const ME: Me<'static> = Me {
        id: 7,
        username: "bolt",
        nickname: None,
    };

    /// Message `id` in room 1 from `sender`, created at `1000 + id`.
    pub fn msg(id: i64, sender: i64, body: &str) -> Message {
        Message {
            id,
            conversation_id: 1,
            sender_id: sender,
            sender_username: format!("u{sender}"),
            body: body.into(),
            mentions: vec![],
            kind: MessageKind::Text,
            created_at: 1_000 + id,
        }
    }

    pub fn kind(mut m: Message, k: MessageKind) -> Message {
        m.kind = k;
        m
    }

    pub fn page(ids: std::ops::RangeInclusive<i64>, has_more: bool) -> Page {
        Page {
            messages: ids.rev().map(|i| msg(i, 1, "x")).collect(),
            has_more,
        }
    }

    /// Room 1 with `ai` AI members.
    pub fn conv(ai: u32) -> Conversation {
        Conversation {
            id: 1,
            title: "t".into(),
            is_workroom: false,
            latest_message_id: None,
            ai_member_count: ai,
        }
    }
}
