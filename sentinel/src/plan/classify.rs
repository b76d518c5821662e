//! What each fresh message is to the account (SPEC §2 "What counts as
//! handled", §5): work to answer, or context — and why. One pure function,
//! [`classify`], used before the turn (what wakes the agent, what the
//! instructions list) and after it (what the cursor may pass).
//!
//! Decisions written down here:
//! - A person's message is never skipped for its first character: "⚠️ prod
//!   is down" is work. A failure report (a body that begins with a failure
//!   mark, `core::gates::is_failure_report`) is context only when its
//!   sender is an AGENT — production's `users.is_agent` column, which the
//!   room's member list carries (seed 002 L75: "is_agent(000185)一列 …
//!   展示(App 画三角)"; contract §3 `Member.is_agent`) — so agents do not
//!   answer each other's failure notes in a loop.
//! - The account's own messages are answers, whatever they start with; only
//!   the sentinel's own fixed notes (the "still online" note and the
//!   obituary, [`is_own_fixed_note`]) are not, so they never count as "I
//!   spoke last".
//! - Text, image and voice from others are work (a voice message's body is
//!   a waveform; the prompt says so and the instructions tag it `[voice]`).
//!   A message of a kind this version does not know is context, listed with
//!   its kind, never dropped silently.
//! - "My reply is newer, so it is handled" holds only for messages the
//!   agent was SHOWN (the say watermark covers them); a message the agent
//!   passed on (`hoop pass`) is handled too.

use std::collections::BTreeSet;

use hoop_api::types::{Message, MessageId, MessageKind, UserId};
use hoop_core::gates::is_failure_report;
use hoop_core::mention::{Me, mentions_me};

use crate::constants::{FAILURE_NOTICE, OBITUARY};

/// What a fresh message is to the account.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role {
    /// The account's to answer, not yet answered or passed.
    Work,
    /// Shown to the agent, and the account's reply `by` came after it.
    Answered { by: MessageId },
    /// The agent passed on it (`hoop pass`).
    Passed,
    /// The account's own answer.
    Mine,
    /// The sentinel's own fixed note (failure note, obituary): not an answer.
    OwnNote,
    /// A room with several AIs, and it does not mention the account.
    NotMentioned,
    /// Another agent's failure report or obituary.
    AgentNote,
    /// A kind this version does not know (listed as context with its kind).
    UnknownKind,
}

impl Role {
    /// Still waiting for the account.
    pub fn is_open(&self) -> bool {
        *self == Role::Work
    }

    /// A short word for logs and the journal.
    pub fn word(&self) -> &'static str {
        match self {
            Role::Work => "work",
            Role::Answered { .. } => "answered",
            Role::Passed => "passed",
            Role::Mine => "mine",
            Role::OwnNote => "own_note",
            Role::NotMentioned => "not_mentioned",
            Role::AgentNote => "agent_note",
            Role::UnknownKind => "unknown_kind",
        }
    }
}

/// The agent's passes in one room (`hoop pass`): single ids, and
/// "everything up to" a message.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RoomPasses {
    pub ids: BTreeSet<MessageId>,
    pub up_to: Option<MessageId>,
}

impl RoomPasses {
    pub fn covers(&self, id: MessageId) -> bool {
        self.ids.contains(&id) || self.up_to.is_some_and(|u| id <= u)
    }
}

/// Everything [`classify`] knows about a room besides its messages.
#[derive(Debug, Clone, Copy)]
pub struct Knowledge<'a> {
    pub me: Me<'a>,
    /// The room has ≥ 2 AI members (the mention rule applies).
    pub multi_ai: bool,
    /// The say watermark: every message up to it was shown to the agent.
    pub shown: Option<MessageId>,
    /// Members the backend marks `is_agent` (only consulted for failure
    /// reports from others).
    pub agents: &'a BTreeSet<UserId>,
    pub passes: &'a RoomPasses,
}

/// Is this the sentinel's own fixed note (the only own messages that are
/// not an answer)?
pub fn is_own_fixed_note(body: &str) -> bool {
    let b = body.trim();
    b == FAILURE_NOTICE || b == OBITUARY
}

/// Is this message the account's own answer?
pub fn is_own_reply(me_id: UserId, m: &Message) -> bool {
    m.sender_id == me_id && !is_own_fixed_note(&m.body)
}

/// Does deciding the room need its member list? Only when a message from
/// someone else starts with a failure mark (is its sender an agent?).
pub fn needs_members(me_id: UserId, fresh: &[Message]) -> bool {
    fresh
        .iter()
        .any(|m| m.sender_id != me_id && is_failure_report(&m.body))
}

/// The role of each message of `fresh` (oldest first), in the same order.
pub fn classify(k: &Knowledge<'_>, fresh: &[Message]) -> Vec<Role> {
    let replies: Vec<MessageId> = fresh
        .iter()
        .filter(|m| is_own_reply(k.me.id, m))
        .map(|m| m.id)
        .collect();
    fresh
        .iter()
        .map(|m| {
            if m.sender_id == k.me.id {
                return if is_own_fixed_note(&m.body) {
                    Role::OwnNote
                } else {
                    Role::Mine
                };
            }
            if matches!(m.kind, MessageKind::Unknown(_)) {
                return Role::UnknownKind;
            }
            if is_failure_report(&m.body) && k.agents.contains(&m.sender_id) {
                return Role::AgentNote;
            }
            if k.multi_ai && !mentions_me(&k.me, &m.body, &m.mentions) {
                return Role::NotMentioned;
            }
            let shown = k.shown.is_some_and(|s| m.id <= s);
            if shown && let Some(by) = replies.iter().copied().find(|r| *r > m.id) {
                return Role::Answered { by };
            }
            if k.passes.covers(m.id) {
                return Role::Passed;
            }
            Role::Work
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::testing::{ME, kind, msg};
    use hoop_api::types::Mention;

    const AGENT: UserId = 3;
    const PERSON: UserId = 1;

    fn roles(
        multi_ai: bool,
        shown: Option<i64>,
        passes: &RoomPasses,
        fresh: &[Message],
    ) -> Vec<Role> {
        let agents: BTreeSet<UserId> = [AGENT].into();
        classify(
            &Knowledge {
                me: ME,
                multi_ai,
                shown,
                agents: &agents,
                passes,
            },
            fresh,
        )
    }

    #[test]
    fn role_table() {
        let me = ME.id;
        let none = RoomPasses::default();
        let mention_me = |mut m: Message| {
            m.mentions = vec![Mention::User(me)];
            m
        };
        // (multi-AI room, message, want, why) — each message alone, shown.
        let cases: Vec<(bool, Message, Role, &str)> = vec![
            (false, msg(10, PERSON, "hi"), Role::Work, "a person's text"),
            (
                false,
                msg(10, PERSON, "⚠️ prod is down, @bolt please look now"),
                Role::Work,
                "a PERSON's warning is the most urgent work of the day",
            ),
            (
                false,
                msg(10, PERSON, "⚰️ the old server died"),
                Role::Work,
                "a person's obituary mark is work too",
            ),
            (
                false,
                msg(10, AGENT, "⚠️ this round failed; I am still online"),
                Role::AgentNote,
                "another AGENT's failure note is not mine",
            ),
            (
                false,
                msg(10, AGENT, "can you check the build"),
                Role::Work,
                "an agent's ordinary question is work",
            ),
            (
                false,
                kind(msg(10, PERSON, "▁▃▅▇▅▃▁"), MessageKind::Voice),
                Role::Work,
                "a voice message needs an answer",
            ),
            (
                false,
                kind(msg(10, PERSON, "a cat"), MessageKind::Image),
                Role::Work,
                "an image needs an answer",
            ),
            (
                false,
                kind(
                    msg(10, PERSON, "🎉"),
                    MessageKind::Unknown("sticker".into()),
                ),
                Role::UnknownKind,
                "an unknown kind is context, with its kind",
            ),
            (
                false,
                msg(10, me, FAILURE_NOTICE),
                Role::OwnNote,
                "the sentinel's own failure note",
            ),
            (false, msg(10, me, OBITUARY), Role::OwnNote, "own obituary"),
            (
                false,
                msg(10, me, "⚠️ careful: the deploy is half done"),
                Role::Mine,
                "an own reply that starts with a mark is an answer",
            ),
            (
                true,
                msg(10, PERSON, "hi all"),
                Role::NotMentioned,
                "several AIs, no mention",
            ),
            (
                true,
                msg(10, PERSON, "@everyone standup"),
                Role::NotMentioned,
                "literal @everyone never counts",
            ),
            (
                true,
                mention_me(msg(10, PERSON, "look")),
                Role::Work,
                "several AIs, structured mention",
            ),
            (
                true,
                msg(10, PERSON, "@bolt look"),
                Role::Work,
                "several AIs, mention in text",
            ),
            (
                true,
                msg(10, AGENT, "⚠️ this round failed; I am still online"),
                Role::AgentNote,
                "several AIs: an agent's note is not mine either",
            ),
        ];
        for (multi, m, want, why) in cases {
            let shown = Some(m.id);
            assert_eq!(roles(multi, shown, &none, &[m]), vec![want], "{why}");
        }
    }

    #[test]
    fn answered_needs_a_later_reply_and_the_message_shown() {
        let none = RoomPasses::default();
        let fresh = [
            msg(10, PERSON, "q1"),
            msg(11, PERSON, "q2"),
            msg(12, ME.id, "a"),
            msg(13, PERSON, "q3"),
        ];
        assert_eq!(
            roles(false, Some(13), &none, &fresh),
            vec![
                Role::Answered { by: 12 },
                Role::Answered { by: 12 },
                Role::Mine,
                Role::Work
            ],
            "a message after the reply is still work"
        );
        assert_eq!(
            roles(false, Some(10), &none, &fresh),
            vec![
                Role::Answered { by: 12 },
                Role::Work,
                Role::Mine,
                Role::Work
            ],
            "11 was never shown: my reply does not cover it"
        );
        assert_eq!(
            roles(false, None, &none, &fresh),
            vec![Role::Work, Role::Work, Role::Mine, Role::Work],
            "nothing known to be shown: all of it is work"
        );
        let noted = [msg(10, PERSON, "q1"), msg(11, ME.id, FAILURE_NOTICE)];
        assert_eq!(
            roles(false, Some(11), &none, &noted),
            vec![Role::Work, Role::OwnNote],
            "the fixed note is not an answer"
        );
        let marked = [msg(10, PERSON, "q1"), msg(11, ME.id, "⚠️ the build is red")];
        assert_eq!(
            roles(false, Some(11), &none, &marked),
            vec![Role::Answered { by: 11 }, Role::Mine],
            "a reply starting with ⚠️ is an answer (not offered twice)"
        );
    }

    #[test]
    fn passes_cover_ids_and_ranges() {
        let fresh = [
            msg(10, PERSON, "thanks, that's all"),
            msg(11, PERSON, "q"),
            msg(12, PERSON, "q"),
        ];
        let ids = RoomPasses {
            ids: [10].into(),
            up_to: None,
        };
        assert_eq!(
            roles(false, Some(12), &ids, &fresh),
            vec![Role::Passed, Role::Work, Role::Work]
        );
        let range = RoomPasses {
            ids: BTreeSet::new(),
            up_to: Some(11),
        };
        assert_eq!(
            roles(false, Some(12), &range, &fresh),
            vec![Role::Passed, Role::Passed, Role::Work]
        );
    }

    #[test]
    fn members_are_needed_only_for_others_failure_marks() {
        assert!(!needs_members(ME.id, &[msg(10, PERSON, "hi")]));
        assert!(!needs_members(ME.id, &[msg(10, ME.id, FAILURE_NOTICE)]));
        assert!(needs_members(ME.id, &[msg(10, PERSON, "⚠️ down")]));
    }
}
