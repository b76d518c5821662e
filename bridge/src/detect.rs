//! What is new and what concerns this window: pure functions over what the
//! backend answered. The watcher (polling) and the push path both feed them,
//! so both detect the same events.
//!
//! Filters, in order (SPEC §3): the window handles the room
//! ([`crate::window::handles`]) → the account's allowlist (`only:mention`)
//! → a room with ≥ 2 AI members, or whose members are unknown, requires a
//! mention → the one mention rule (`hoop_core::mention`). The account's own
//! messages never ring.

use std::collections::BTreeMap;

use hoop_api::types::{
    Card, CardId, CardStatus, Conversation, ConversationId, Member, Message, MessageId, UserId,
};
use hoop_core::mention::{Me, mentions_me};

use crate::constants::{MAX_LINES_PER_ROUND, MULTI_AI_MEMBERS, SUMMARY_MAX_CHARS};

/// The `type=` of a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Dm,
    Mention,
    Group,
    TaskAssigned,
    TaskUpdated,
    Notice,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Dm => "dm",
            Kind::Mention => "mention",
            Kind::Group => "group",
            Kind::TaskAssigned => "task_assigned",
            Kind::TaskUpdated => "task_updated",
            Kind::Notice => "notice",
        }
    }
}

/// One event that concerns the window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub kind: Kind,
    pub summary: String,
    pub conversation_id: Option<ConversationId>,
    pub message_id: Option<MessageId>,
    pub sender_id: Option<UserId>,
    /// `kind=<…>` of a notice (`down`, `recovered`, `overflow`, …).
    pub notice: Option<&'static str>,
}

impl Event {
    pub fn notice(kind: &'static str, summary: impl Into<String>) -> Event {
        Event {
            kind: Kind::Notice,
            summary: summary.into(),
            conversation_id: None,
            message_id: None,
            sender_id: None,
            notice: Some(kind),
        }
    }

    /// The one output line:
    /// `🔔 <summary> | type=<…> conversation_id=… message_id=… sender_id=…`
    /// (a notice: `🔔 <summary> | type=notice kind=<…>`). A field that does
    /// not apply is `-`.
    pub fn line(&self) -> String {
        let summary = one_line(&self.summary);
        if let Some(k) = self.notice {
            return format!("🔔 {summary} | type=notice kind={k}");
        }
        let f = |v: Option<i64>| v.map_or_else(|| "-".to_string(), |v| v.to_string());
        format!(
            "🔔 {summary} | type={} conversation_id={} message_id={} sender_id={}",
            self.kind.as_str(),
            f(self.conversation_id),
            f(self.message_id),
            f(self.sender_id)
        )
    }
}

/// A summary as one line: whitespace runs become one space, `|` (the field
/// separator) becomes `/`, cut at [`SUMMARY_MAX_CHARS`] with `…`.
pub fn one_line(s: &str) -> String {
    let flat: String = s
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace('|', "/");
    if flat.chars().count() <= SUMMARY_MAX_CHARS {
        return flat;
    }
    let mut cut: String = flat.chars().take(SUMMARY_MAX_CHARS - 1).collect();
    cut.push('…');
    cut
}

/// Rooms whose newest message is past the baseline (a room never seen
/// before has baseline 0: all of it is new, up to the read limit).
pub fn changed_rooms(
    list: &[Conversation],
    baselines: &BTreeMap<ConversationId, MessageId>,
) -> Vec<ConversationId> {
    list.iter()
        .filter(|c| {
            c.latest_message_id
                .is_some_and(|l| l > baselines.get(&c.id).copied().unwrap_or(0))
        })
        .map(|c| c.id)
        .collect()
}

/// The messages of a read (newest first) past the baseline and not yet
/// seen, oldest first.
pub fn fresh(
    newest_first: &[Message],
    baseline: MessageId,
    seen: impl Fn(MessageId) -> bool,
) -> Vec<&Message> {
    let mut v: Vec<&Message> = newest_first
        .iter()
        .filter(|m| m.id > baseline && !seen(m.id))
        .collect();
    v.sort_by_key(|m| m.id);
    v
}

/// What the filters know about one room.
#[derive(Debug, Clone, Copy)]
pub struct RoomView<'a> {
    pub handled: bool,
    /// The room's members, when known (cached up to 10 minutes).
    pub members: Option<&'a [Member]>,
    pub title: &'a str,
}

/// Who the account is, and whether its allowlist entry says `only:mention`.
#[derive(Debug, Clone, Copy)]
pub struct Account {
    pub id: UserId,
    pub only_mention: bool,
}

/// The filters, in order; `Some(kind)` = ring.
pub fn classify(m: &Message, room: &RoomView<'_>, me: &Account) -> Option<Kind> {
    if m.sender_id == me.id || !room.handled {
        return None;
    }
    let my = room
        .members
        .and_then(|ms| ms.iter().find(|x| x.user_id == me.id));
    let who = Me {
        id: me.id,
        username: my.map_or("", |x| x.username.as_str()),
        nickname: my.and_then(|x| x.nickname.as_deref()),
    };
    let mentioned = mentions_me(&who, &m.body, &m.mentions);
    let multi_ai = room
        .members
        .is_none_or(|ms| ms.iter().filter(|x| x.is_agent).count() >= MULTI_AI_MEMBERS);
    if (me.only_mention || multi_ai) && !mentioned {
        return None;
    }
    let dm = room.members.is_some_and(|ms| ms.len() == 2);
    Some(if dm {
        Kind::Dm
    } else if mentioned {
        Kind::Mention
    } else {
        Kind::Group
    })
}

/// The event of a message that rings.
pub fn message_event(m: &Message, kind: Kind, room_title: &str) -> Event {
    let who = if m.sender_username.is_empty() {
        format!("user {}", m.sender_id)
    } else {
        format!("@{}", m.sender_username)
    };
    Event {
        kind,
        summary: format!("{who} in {room_title}: {}", m.body),
        conversation_id: Some(m.conversation_id),
        message_id: Some(m.id),
        sender_id: Some(m.sender_id),
        notice: None,
    }
}

/// What the watcher remembers of a card: enough to tell a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CardMark {
    pub status: CardStatus,
    pub updated_at: i64,
}

/// Cards new since the last look (`task_assigned`, only while live) or
/// changed (`task_updated`), with the marks to keep (the cards listed now).
pub fn card_events<'a>(
    cards: &'a [Card],
    known: &BTreeMap<CardId, CardMark>,
) -> (Vec<(Kind, &'a Card)>, BTreeMap<CardId, CardMark>) {
    let mut out = vec![];
    let mut marks = BTreeMap::new();
    for c in cards {
        let mark = CardMark {
            status: c.status,
            updated_at: c.updated_at,
        };
        match known.get(&c.id) {
            None if c.status.is_live() => out.push((Kind::TaskAssigned, c)),
            Some(old) if *old != mark => out.push((Kind::TaskUpdated, c)),
            _ => {}
        }
        marks.insert(c.id, mark);
    }
    out.sort_by_key(|(_, c)| c.id);
    (out, marks)
}

/// The event of a card.
pub fn card_event(kind: Kind, c: &Card) -> Event {
    let status = serde_json::to_value(c.status)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    Event {
        kind,
        summary: format!("card #{} {:?} is {status}", c.id, c.title),
        conversation_id: Some(c.conversation_id),
        message_id: None,
        sender_id: None,
        notice: None,
    }
}

/// At most [`MAX_LINES_PER_ROUND`] events, then one overflow notice for the
/// rest (no queue replays them: the rooms hold them).
pub fn cap(mut events: Vec<Event>) -> Vec<Event> {
    if events.len() <= MAX_LINES_PER_ROUND {
        return events;
    }
    let rest = events.len() - MAX_LINES_PER_ROUND;
    events.truncate(MAX_LINES_PER_ROUND);
    events.push(Event::notice(
        "overflow",
        format!("{rest} more event(s) this round not shown: read the rooms"),
    ));
    events
}

#[cfg(test)]
mod tests {
    use super::*;
    use hoop_api::types::{Mention, MessageKind};

    const ME: UserId = 1;

    fn msg(id: i64, sender: UserId, body: &str, mentions: Vec<Mention>) -> Message {
        Message {
            id,
            conversation_id: 9,
            sender_id: sender,
            sender_username: "ann".into(),
            body: body.into(),
            mentions,
            kind: MessageKind::Text,
            created_at: 0,
        }
    }

    fn member(id: UserId, name: &str, agent: bool) -> Member {
        Member {
            user_id: id,
            username: name.into(),
            nickname: Some(format!("{name}-nick")),
            is_agent: agent,
        }
    }

    #[test]
    fn line_format_is_exact() {
        let e = message_event(
            &msg(42, 7, "hi |there\n  you", vec![]),
            Kind::Mention,
            "ops",
        );
        assert_eq!(
            e.line(),
            "🔔 @ann in ops: hi /there you | type=mention conversation_id=9 message_id=42 sender_id=7"
        );
        assert_eq!(
            Event::notice("down", "backend unreachable").line(),
            "🔔 backend unreachable | type=notice kind=down"
        );
        let long = one_line(&"x".repeat(500));
        assert_eq!(long.chars().count(), SUMMARY_MAX_CHARS);
        assert!(long.ends_with('…'));
    }

    #[test]
    fn classify_table() {
        let dm = [member(ME, "bolt", true), member(2, "ann", false)];
        let dm_ai = [member(ME, "bolt", true), member(2, "nova", true)];
        let group_one_ai = [
            member(ME, "bolt", true),
            member(2, "ann", false),
            member(3, "cy", false),
        ];
        let group_two_ai = [
            member(ME, "bolt", true),
            member(2, "ann", false),
            member(3, "nova", true),
        ];
        let plain = msg(5, 2, "hello all", vec![]);
        let at_name = msg(5, 2, "hey @bolt look", vec![]);
        let at_nick = msg(5, 2, "hey @bolt-nick look", vec![]);
        let structured = msg(5, 2, "look", vec![Mention::User(ME)]);
        let other = msg(5, 2, "@bolt look", vec![Mention::User(3)]);
        let everyone_text = msg(5, 2, "@everyone look", vec![]);
        let everyone = msg(5, 2, "look", vec![Mention::EVERYONE]);
        let bare_name = msg(5, 2, "bolt look", vec![]);
        let own = msg(5, ME, "@bolt note to self", vec![]);
        let me = Account {
            id: ME,
            only_mention: false,
        };
        let picky = Account {
            id: ME,
            only_mention: true,
        };
        let room = |members: Option<&'static [Member]>, handled| RoomView {
            handled,
            members,
            title: "r",
        };
        let leak = |m: &[Member]| -> &'static [Member] { Box::leak(m.to_vec().into_boxed_slice()) };
        let (dm, dm_ai, g1, g2) = (
            leak(&dm),
            leak(&dm_ai),
            leak(&group_one_ai),
            leak(&group_two_ai),
        );
        // (message, room, account, want)
        let cases: Vec<(&Message, RoomView, Account, Option<Kind>)> = vec![
            // 1. handles
            (&structured, room(Some(g1), false), me, None),
            // own messages never ring
            (&own, room(Some(g1), true), me, None),
            // DM with a person: everything rings
            (&plain, room(Some(dm), true), me, Some(Kind::Dm)),
            // 2. the allowlist narrows to mentions
            (&plain, room(Some(dm), true), picky, None),
            (&structured, room(Some(dm), true), picky, Some(Kind::Dm)),
            (&plain, room(Some(g1), true), picky, None),
            (&at_name, room(Some(g1), true), picky, Some(Kind::Mention)),
            // one AI in a group: plain talk rings as group
            (&plain, room(Some(g1), true), me, Some(Kind::Group)),
            (&at_name, room(Some(g1), true), me, Some(Kind::Mention)),
            // 3. two AIs (a DM between two agents too): mention required
            (&plain, room(Some(g2), true), me, None),
            (&plain, room(Some(dm_ai), true), me, None),
            (&at_nick, room(Some(g2), true), me, Some(Kind::Mention)),
            // members unknown: mention required
            (&plain, room(None, true), me, None),
            (&structured, room(None, true), me, Some(Kind::Mention)),
            // 4. the mention rule
            (&structured, room(Some(g2), true), me, Some(Kind::Mention)),
            (&other, room(Some(g2), true), me, None),
            (&everyone_text, room(Some(g2), true), me, None),
            (&everyone, room(Some(g2), true), me, Some(Kind::Mention)),
            (&bare_name, room(Some(g2), true), me, None),
        ];
        for (i, (m, r, a, want)) in cases.iter().enumerate() {
            assert_eq!(classify(m, r, a), *want, "case {i}: {:?}", m.body);
        }
    }

    #[test]
    fn changed_and_fresh() {
        let conv = |id, latest| Conversation {
            id,
            title: "t".into(),
            is_workroom: false,
            latest_message_id: latest,
            ai_member_count: 1,
        };
        let list = [
            conv(1, Some(10)),
            conv(2, Some(20)),
            conv(3, None),
            conv(4, Some(5)),
        ];
        let base = BTreeMap::from([(1, 10), (2, 15)]);
        assert_eq!(changed_rooms(&list, &base), vec![2, 4]);
        let read: Vec<Message> = (16..=20).rev().map(|i| msg(i, 2, "x", vec![])).collect();
        let got: Vec<i64> = fresh(&read, 17, |id| id == 19)
            .iter()
            .map(|m| m.id)
            .collect();
        assert_eq!(
            got,
            vec![18, 20],
            "oldest first, past the baseline, not seen"
        );
    }

    #[test]
    fn card_events_table() {
        let card = |id, status, updated_at| Card {
            id,
            title: format!("c{id}"),
            status,
            assignee_id: Some(ME),
            parent_id: None,
            conversation_id: 9,
            message_id: None,
            error: None,
            result: None,
            result_message_id: None,
            lease_expires_at: None,
            tokens_in: None,
            tokens_cached_in: None,
            tokens_out: None,
            created_at: 0,
            updated_at,
        };
        let mark = |status, updated_at| CardMark { status, updated_at };
        let known = BTreeMap::from([
            (1, mark(CardStatus::Queued, 5)),
            (2, mark(CardStatus::Working, 5)),
        ]);
        let cards = [
            card(1, CardStatus::Queued, 5),
            card(2, CardStatus::Done, 9),
            card(3, CardStatus::Queued, 1),
            card(4, CardStatus::Done, 1),
        ];
        let (ev, marks) = card_events(&cards, &known);
        let got: Vec<(Kind, i64)> = ev.iter().map(|(k, c)| (*k, c.id)).collect();
        assert_eq!(
            got,
            vec![(Kind::TaskUpdated, 2), (Kind::TaskAssigned, 3)],
            "unchanged 1 silent; a card first seen finished is not assigned"
        );
        assert_eq!(marks.len(), 4);
        assert_eq!(
            card_event(Kind::TaskAssigned, &cards[2]).line(),
            "🔔 card #3 \"c3\" is queued | type=task_assigned conversation_id=9 message_id=- sender_id=-"
        );
    }

    #[test]
    fn cap_keeps_twenty_and_one_overflow_line() {
        for (n, want_lines, overflow) in [
            (0, 0, false),
            (20, 20, false),
            (21, 21, true),
            (57, 21, true),
        ] {
            let evs: Vec<Event> = (0..n)
                .map(|i| message_event(&msg(i, 2, "x", vec![]), Kind::Group, "r"))
                .collect();
            let out = cap(evs);
            assert_eq!(out.len(), want_lines, "{n}");
            assert_eq!(
                out.last().is_some_and(|e| e.notice == Some("overflow")),
                overflow,
                "{n}"
            );
            if overflow {
                assert!(out[20].summary.starts_with(&format!("{} more", n - 20)));
            }
        }
    }
}
