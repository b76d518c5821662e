//! Decide (SPEC §2 step 3): per conversation, from the pulled messages and
//! what is known about the room, whether the agent wakes, the cursor only
//! advances, or nothing happens. Pure: the round feeds it data.
//!
//! Decisions written down here:
//! - Only [`Role::Work`] wakes the agent; every other fresh message is
//!   context (listed in the instructions, with its kind).
//! - A fresh room with no work advances its cursor without a turn, for one
//!   of the reasons of [`AdvanceWhy`] (the only advances before a turn).
//! - A conversation with no cursor (never seen by this home): only messages
//!   at or after its `floor` are fresh — the floor is fixed when the room is
//!   FIRST seen (the round keeps it in `rooms.json` until the room has a
//!   cursor), so a first message that waits out a long pause (a usage
//!   limit of hours) is still answered; older history is not answered.

use std::collections::BTreeMap;

use hoop_api::types::{Conversation, ConversationId, Message, MessageId, UnixSecs};

use super::classify::{Knowledge, Role, classify};
use super::pull::Pulled;

/// Why a cursor moved without a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AdvanceWhy {
    /// Nothing from others since the account's own newest answer (or all
    /// of it was answered after being shown).
    OwnLast,
    /// A room with ≥ 2 AI members, and nothing fresh mentions the account.
    NotMentioned,
    /// Everything open was passed on by the agent (`hoop pass`).
    Passed,
    /// Only others' agents' notes or messages of unknown kinds.
    NotMine,
}

/// How often this room's work was offered before without an answer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Again {
    /// The most times any message to answer was offered and left with
    /// neither a reply nor a pass.
    pub offers: u32,
    /// The room's failed replies in a row (a `hoop say` that failed, a
    /// turn that failed).
    pub failures: u32,
}

impl Again {
    pub fn any(&self) -> bool {
        self.offers > 0 || self.failures > 0
    }
}

/// The plan for one conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// No fresh messages: leave the cursor.
    Nothing,
    /// First sight of the conversation and nothing at or after its floor:
    /// set the cursor to the newest message without answering the backlog.
    Baseline { to: MessageId },
    /// Move the cursor to `to` without waking; `seen` says what each fresh
    /// message was.
    Advance {
        to: MessageId,
        why: AdvanceWhy,
        seen: Vec<(MessageId, Role)>,
    },
    /// Wake the agent; after the turn the settle step decides the cursor.
    Wake(Wake),
}

/// A conversation the turn must handle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wake {
    pub conversation_id: ConversationId,
    pub title: String,
    /// The newest message pulled.
    pub to: MessageId,
    /// The cursor the round started from.
    pub cursor: Option<MessageId>,
    /// Fresh messages that are not work, with what they are; oldest first.
    pub context: Vec<(Message, Role)>,
    /// Messages the account must answer (or pass on), oldest first.
    pub to_answer: Vec<Message>,
    /// Paging stopped before the cursor was seen.
    pub missed: bool,
    /// First sight of this conversation.
    pub new_room: bool,
    /// For a first-seen room: messages older than this (Unix seconds) are
    /// history, not work.
    pub floor: Option<UnixSecs>,
    pub is_workroom: bool,
    /// The room has ≥ 2 AI members.
    pub multi_ai: bool,
    /// The room's work was offered before, or its reply failed.
    pub again: Again,
}

impl Wake {
    /// Every listed message (context and work), oldest first.
    pub fn messages(&self) -> Vec<&Message> {
        let mut all: Vec<&Message> = self
            .context
            .iter()
            .map(|(m, _)| m)
            .chain(&self.to_answer)
            .collect();
        all.sort_by_key(|m| m.id);
        all
    }
}

/// Inputs of [`decide`] besides the pulled messages.
#[derive(Debug, Clone, Copy)]
pub struct DecideInput<'a> {
    pub knowledge: Knowledge<'a>,
    pub conversation: &'a Conversation,
    pub cursor: Option<MessageId>,
    /// For a room without a cursor: the first-sight floor (Unix seconds).
    pub floor: Option<UnixSecs>,
    /// How often each message was offered without an answer or a pass.
    pub offers: &'a BTreeMap<MessageId, u32>,
    /// The room's failed replies in a row.
    pub failures: u32,
}

/// Does this room count as a multi-AI room for the wake rule?
pub fn is_multi_ai(c: &Conversation) -> bool {
    c.ai_member_count >= 2
}

/// The fresh messages that count: for a room with a floor, those at or
/// after it.
pub fn in_range(floor: Option<UnixSecs>, fresh: &[Message]) -> Vec<Message> {
    fresh
        .iter()
        .filter(|m| floor.is_none_or(|f| m.created_at >= f))
        .cloned()
        .collect()
}

/// Step 3: classify the fresh messages and decide wake / advance / nothing.
pub fn decide(input: DecideInput<'_>, pulled: Pulled) -> Decision {
    let Some(newest) = pulled.newest else {
        return Decision::Nothing;
    };
    let new_room = input.cursor.is_none();
    let floor = if new_room { input.floor } else { None };
    let fresh = in_range(floor, &pulled.fresh);
    if fresh.is_empty() {
        return if new_room {
            Decision::Baseline { to: newest }
        } else {
            Decision::Nothing
        };
    }
    let roles = classify(&input.knowledge, &fresh);
    if !roles.iter().any(Role::is_open) {
        let has = |r: &dyn Fn(&Role) -> bool| roles.iter().any(r);
        let why = if has(&|r| *r == Role::NotMentioned) {
            AdvanceWhy::NotMentioned
        } else if has(&|r| *r == Role::Passed) {
            AdvanceWhy::Passed
        } else if has(&|r| matches!(r, Role::Mine | Role::Answered { .. })) {
            AdvanceWhy::OwnLast
        } else if has(&|r| matches!(r, Role::AgentNote | Role::UnknownKind)) {
            AdvanceWhy::NotMine
        } else {
            AdvanceWhy::OwnLast
        };
        let seen = fresh.iter().map(|m| m.id).zip(roles).collect();
        return Decision::Advance {
            to: newest,
            why,
            seen,
        };
    }
    let mut context = vec![];
    let mut to_answer = vec![];
    for (m, r) in fresh.into_iter().zip(roles) {
        if r.is_open() {
            to_answer.push(m);
        } else {
            context.push((m, r));
        }
    }
    let offers = to_answer
        .iter()
        .filter_map(|m| input.offers.get(&m.id).copied())
        .max()
        .unwrap_or(0);
    Decision::Wake(Wake {
        conversation_id: input.conversation.id,
        title: input.conversation.title.clone(),
        to: newest,
        cursor: input.cursor,
        context,
        to_answer,
        missed: pulled.missed,
        new_room,
        floor,
        is_workroom: input.conversation.is_workroom,
        multi_ai: input.knowledge.multi_ai,
        again: Again {
            offers,
            failures: input.failures,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::classify::RoomPasses;
    use crate::plan::testing::{ME, conv, kind, msg};
    use hoop_api::types::MessageKind;
    use std::collections::BTreeSet;

    /// Everything fresh was shown (the watermark at the newest).
    pub(crate) fn run(ai: u32, cursor: Option<i64>, fresh: Vec<Message>) -> Decision {
        let shown = fresh.iter().map(|m| m.id).max();
        run_with(ai, cursor, shown, &RoomPasses::default(), None, fresh)
    }

    fn run_with(
        ai: u32,
        cursor: Option<i64>,
        shown: Option<i64>,
        passes: &RoomPasses,
        floor: Option<i64>,
        fresh: Vec<Message>,
    ) -> Decision {
        let c = conv(ai);
        let newest = fresh.iter().map(|m| m.id).max();
        let agents: BTreeSet<i64> = [3].into();
        let offers = BTreeMap::from([(10, 1)]);
        decide(
            DecideInput {
                knowledge: Knowledge {
                    me: ME,
                    multi_ai: is_multi_ai(&c),
                    shown,
                    agents: &agents,
                    passes,
                },
                conversation: &c,
                cursor,
                floor,
                offers: &offers,
                failures: 0,
            },
            Pulled {
                fresh,
                newest,
                missed: false,
            },
        )
    }

    fn wake_ids(d: &Decision) -> (Vec<i64>, Vec<i64>) {
        match d {
            Decision::Wake(w) => (
                w.context.iter().map(|(m, _)| m.id).collect(),
                w.to_answer.iter().map(|m| m.id).collect(),
            ),
            other => panic!("expected a wake, got {other:?}"),
        }
    }

    fn advance_why(d: &Decision) -> Option<AdvanceWhy> {
        match d {
            Decision::Advance { why, .. } => Some(*why),
            _ => None,
        }
    }

    #[test]
    fn decide_table() {
        let me = ME.id;
        use AdvanceWhy::*;
        // (ai members, fresh, Some(advance why) or None for a wake, why)
        let cases: Vec<(u32, Vec<Message>, Option<AdvanceWhy>, &str)> = vec![
            (
                1,
                vec![msg(10, 1, "hi")],
                None,
                "one-AI room: any message wakes",
            ),
            (
                1,
                vec![msg(10, 1, "hi"), msg(11, me, "hello")],
                Some(OwnLast),
                "own reply newest: advance",
            ),
            (
                1,
                vec![
                    msg(10, 1, "hi"),
                    msg(11, me, crate::constants::FAILURE_NOTICE),
                ],
                None,
                "own failure note is not an answer",
            ),
            (
                1,
                vec![msg(10, 1, "hi"), msg(11, me, crate::constants::OBITUARY)],
                None,
                "own obituary is not an answer",
            ),
            (
                1,
                vec![msg(10, 1, "hi"), msg(11, me, "⚠️ the build is red")],
                Some(OwnLast),
                "an own reply starting with a mark is an answer",
            ),
            (
                1,
                vec![msg(10, 1, "⚠️ prod is down, @bolt please look now")],
                None,
                "a person's ⚠️ wakes",
            ),
            (
                1,
                vec![msg(10, 3, "⚠️ this round failed; I am still online")],
                Some(NotMine),
                "an agent's failure note does not",
            ),
            (
                1,
                vec![kind(msg(10, 1, "▁▃▅"), MessageKind::Voice)],
                None,
                "a voice message wakes",
            ),
            (
                1,
                vec![kind(
                    msg(10, 1, "🎉"),
                    MessageKind::Unknown("sticker".into()),
                )],
                Some(NotMine),
                "an unknown kind alone is context (logged with its kind)",
            ),
            (
                1,
                vec![msg(11, me, crate::constants::FAILURE_NOTICE)],
                Some(OwnLast),
                "only own failure note: nothing from others",
            ),
            (
                2,
                vec![msg(10, 1, "hi all")],
                Some(NotMentioned),
                "multi-AI room without mention",
            ),
            (
                2,
                vec![msg(10, 1, "@bolt hi")],
                None,
                "multi-AI room mentioned in text",
            ),
            (
                2,
                vec![msg(10, 1, "@everyone hi")],
                Some(NotMentioned),
                "literal everyone never counts",
            ),
            (
                2,
                vec![
                    msg(10, 1, "@bolt hi"),
                    msg(11, me, "done"),
                    msg(12, 1, "thanks"),
                ],
                Some(NotMentioned),
                "mention already answered; the new one does not mention",
            ),
        ];
        for (ai, fresh, want, why) in cases {
            let d = run(ai, Some(5), fresh);
            match want {
                Some(w) => assert_eq!(advance_why(&d), Some(w), "{why}: {d:?}"),
                None => assert!(matches!(d, Decision::Wake(_)), "{why}: {d:?}"),
            }
        }
    }

    #[test]
    fn advance_goes_to_the_newest_and_says_what_each_was() {
        let d = run(1, Some(5), vec![msg(10, 1, "hi"), msg(11, ME.id, "hello")]);
        assert_eq!(
            d,
            Decision::Advance {
                to: 11,
                why: AdvanceWhy::OwnLast,
                seen: vec![(10, Role::Answered { by: 11 }), (11, Role::Mine)],
            }
        );
    }

    #[test]
    fn everything_passed_advances_for_that_reason() {
        let passes = RoomPasses {
            ids: [10].into(),
            up_to: None,
        };
        let d = run_with(
            1,
            Some(5),
            Some(10),
            &passes,
            None,
            vec![msg(10, 1, "thanks, that's all")],
        );
        assert_eq!(advance_why(&d), Some(AdvanceWhy::Passed));
        let d = run_with(
            1,
            Some(5),
            Some(11),
            &passes,
            None,
            vec![msg(10, 1, "thanks, that's all"), msg(11, 1, "oh, one more")],
        );
        assert_eq!(
            wake_ids(&d),
            (vec![10], vec![11]),
            "a new question still wakes"
        );
    }

    #[test]
    fn messages_before_my_reply_are_context_and_offers_are_counted() {
        let d = run(
            1,
            Some(5),
            vec![msg(10, 1, "q1"), msg(11, ME.id, "a1"), msg(12, 1, "q2")],
        );
        assert_eq!(wake_ids(&d), (vec![10, 11], vec![12]));
        let Decision::Wake(w) = d else { unreachable!() };
        assert_eq!(w.to, 12);
        assert_eq!(w.again, Again::default(), "12 was never offered");
        let Decision::Wake(w) = run(1, Some(5), vec![msg(10, 1, "q1")]) else {
            unreachable!()
        };
        assert_eq!(w.again.offers, 1, "10 was offered once before");
    }

    #[test]
    fn in_a_room_with_several_ais_only_mentions_are_work() {
        let d = run(
            2,
            Some(5),
            vec![msg(10, 1, "@bolt can you look"), msg(11, 1, "@ai1 and you")],
        );
        assert_eq!(wake_ids(&d), (vec![11], vec![10]));
    }

    #[test]
    fn nothing_fresh_is_nothing() {
        assert_eq!(run(1, Some(5), vec![]), Decision::Nothing);
    }

    #[test]
    fn a_new_room_answers_what_is_at_or_after_its_fixed_floor() {
        // created_at = 1000 + id.
        let none = RoomPasses::default();
        let old = vec![msg(10, 1, "old"), msg(20, 1, "older")];
        assert_eq!(
            run_with(1, None, Some(20), &none, Some(1_500), old),
            Decision::Baseline { to: 20 }
        );
        let mixed = vec![msg(10, 1, "old"), msg(600, 1, "recent")];
        let d = run_with(1, None, Some(600), &none, Some(1_500), mixed.clone());
        assert_eq!(wake_ids(&d), (vec![], vec![600]));
        let Decision::Wake(w) = d else { unreachable!() };
        assert!(w.new_room);
        assert_eq!(w.floor, Some(1_500));
        // The floor fixed at first sight keeps a message that waited out a
        // long pause: with a floor recomputed now it would be history.
        let d = run_with(1, None, Some(600), &none, Some(1_000), mixed);
        assert_eq!(wake_ids(&d), (vec![], vec![10, 600]));
        // A room with a cursor ignores any floor.
        let d = run_with(
            1,
            Some(5),
            Some(10),
            &none,
            Some(1_500),
            vec![msg(10, 1, "q")],
        );
        assert_eq!(wake_ids(&d), (vec![], vec![10]));
    }
}
