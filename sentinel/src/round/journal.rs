//! The round's events as journal lines ([`crate::journal`]): pure
//! translations, called at the stage where each fact is known; the round
//! hands the lines to [`crate::journal::Journal::record`], which never waits.

use std::collections::BTreeMap;

use hoop_api::types::{ConversationId, MessageId};

use crate::journal::{AgainWhy, CursorRule, Ev, How, Line, Why};
use crate::plan::{CursorWhy, Event, Role};

/// The room's cursor moved to `to`.
pub(super) fn cursor(t: i64, room: ConversationId, to: MessageId, why: CursorWhy) -> Line {
    Line::msg(
        t,
        room,
        to,
        Ev::Cursor {
            rule: CursorRule::of(why),
        },
    )
}

/// What a round makes of one fresh message.
pub(super) struct Seen<'a> {
    pub room: ConversationId,
    pub id: MessageId,
    /// Its creation time (Unix seconds).
    pub created: i64,
    pub how: How,
    pub multi_ai: bool,
    /// The account's username.
    pub me: &'a str,
}

/// `seen`, then what the message is: work or context (and why), or found
/// already answered or passed. The account's own messages are not
/// journaled as messages (an answer appears as its question's `answered`).
pub(super) fn seen(t: i64, s: &Seen<'_>, role: &Role, pass_why: Option<&str>) -> Vec<Line> {
    let then = match role {
        Role::Mine | Role::OwnNote => return vec![],
        Role::Work => Ev::Work {
            why: if s.multi_ai {
                Why::Mentioned
            } else {
                Why::OneToOne
            },
        },
        Role::NotMentioned => context(Why::NotMentioned, s.me),
        Role::AgentNote => context(Why::AgentNote, s.me),
        Role::UnknownKind => context(Why::UnknownKind, s.me),
        Role::Answered { by } => Ev::Answered {
            by: *by,
            turn: None,
        },
        Role::Passed => Ev::Passed {
            reason: pass_why.unwrap_or("").to_string(),
            turn: None,
        },
    };
    first_sight(t, s, then)
}

/// A message older than the new-room floor: history, not work.
pub(super) fn before_floor(t: i64, s: &Seen<'_>) -> Vec<Line> {
    first_sight(t, s, context(Why::BeforeFloor, s.me))
}

fn context(why: Why, me: &str) -> Ev {
    Ev::Context {
        why,
        me: (why == Why::NotMentioned).then(|| me.to_string()),
    }
}

fn first_sight(t: i64, s: &Seen<'_>, then: Ev) -> Vec<Line> {
    vec![
        Line::msg(
            t,
            s.room,
            s.id,
            Ev::Seen {
                how: s.how,
                created: s.created,
            },
        ),
        Line::msg(t, s.room, s.id, then),
    ]
}

/// What settling a turn decided, per message.
pub(super) struct SettleFacts<'a> {
    pub turn: u64,
    /// Each room's next look, this long from now (ms).
    pub retry_in_ms: &'a BTreeMap<ConversationId, u64>,
    /// The agent's reason for each pass (read before the cursor prunes it).
    pub pass_why: &'a BTreeMap<(ConversationId, MessageId), String>,
}

/// The settle stage's events as lines.
pub(super) fn settled(t: i64, events: &[Event], f: &SettleFacts<'_>) -> Vec<Line> {
    let mut out = vec![];
    for e in events {
        match e {
            Event::Answered { room, id, by } => out.push(Line::msg(
                t,
                *room,
                *id,
                Ev::Answered {
                    by: *by,
                    turn: Some(f.turn),
                },
            )),
            Event::Passed { room, id } => out.push(Line::msg(
                t,
                *room,
                *id,
                Ev::Passed {
                    reason: f.pass_why.get(&(*room, *id)).cloned().unwrap_or_default(),
                    turn: Some(f.turn),
                },
            )),
            Event::OfferedAgain { room, id, offer } => out.push(Line::msg(
                t,
                *room,
                *id,
                Ev::OfferedAgain {
                    why: AgainWhy::Silent,
                    turn: f.turn,
                    offer: Some(*offer),
                    retry_in_ms: f.retry_in_ms.get(room).copied(),
                },
            )),
            Event::ReplyFailed { room, ids } => out.extend(ids.iter().map(|id| {
                Line::msg(
                    t,
                    *room,
                    *id,
                    Ev::OfferedAgain {
                        why: AgainWhy::ReplyFailed,
                        turn: f.turn,
                        offer: None,
                        retry_in_ms: f.retry_in_ms.get(room).copied(),
                    },
                )
            })),
            Event::GaveUp { room, id, offers } => out.push(Line::msg(
                t,
                *room,
                *id,
                Ev::GaveUp {
                    offers: *offers,
                    turn: f.turn,
                },
            )),
            Event::CursorMoved { room, to, why } => out.push(cursor(t, *room, *to, *why)),
            Event::Seen { .. } | Event::Shown { .. } => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_become_lines_table() {
        let s = |multi_ai| Seen {
            room: 3,
            id: 10,
            created: 1,
            how: How::Websocket,
            multi_ai,
            me: "bolt",
        };
        // (multi_ai, role, want second event, why)
        let cases: Vec<(bool, Role, Option<Ev>, &str)> = vec![
            (
                false,
                Role::Work,
                Some(Ev::Work { why: Why::OneToOne }),
                "1:1",
            ),
            (
                true,
                Role::Work,
                Some(Ev::Work {
                    why: Why::Mentioned,
                }),
                "mentioned",
            ),
            (
                true,
                Role::NotMentioned,
                Some(Ev::Context {
                    why: Why::NotMentioned,
                    me: Some("bolt".into()),
                }),
                "for another AI, naming who it was not for",
            ),
            (
                false,
                Role::AgentNote,
                Some(Ev::Context {
                    why: Why::AgentNote,
                    me: None,
                }),
                "an agent's note",
            ),
            (
                false,
                Role::Answered { by: 11 },
                Some(Ev::Answered { by: 11, turn: None }),
                "found answered",
            ),
            (
                false,
                Role::Mine,
                None,
                "own message: not a message's story",
            ),
            (false, Role::OwnNote, None, "own note: neither"),
        ];
        for (multi, role, want, why) in cases {
            let lines = seen(5, &s(multi), &role, None);
            match want {
                None => assert!(lines.is_empty(), "{why}"),
                Some(ev) => {
                    assert_eq!(lines.len(), 2, "{why}");
                    assert_eq!(lines[0].ev.name(), "seen", "{why}");
                    assert_eq!(lines[1].ev, ev, "{why}");
                    assert!(lines.iter().all(|l| l.msg == Some(10) && l.room == Some(3)));
                }
            }
        }
    }
}
