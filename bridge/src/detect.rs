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
    Card, CardId, CardStatus, Conversation, ConversationId, Member, Message, MessageId,
    MessageKind, UserId,
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
        if let Some(k) = self.notice {
            // A notice is the toolkit's own words (an overflow line names
            // every room it counts): flattened, never cut.
            return format!("🔔 {} | type=notice kind={k}", flat(&self.summary));
        }
        let summary = one_line(&self.summary);
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
    let flat = flat(s);
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

/// Whitespace runs as one space, `|` as `/`.
fn flat(s: &str) -> String {
    s.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace('|', "/")
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
    // A voice message's body is its waveform: nothing a person can read.
    let body = match m.kind {
        MessageKind::Voice => "voice message",
        _ => m.body.as_str(),
    };
    Event {
        kind,
        summary: format!("{who} in {room_title}: {body}"),
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

/// Did someone other than the account put a card in this status? The
/// account itself claims (`working`, also `work_task_start`'s second half),
/// reports progress (still `working`) and finishes (`done` / `failed`);
/// a card reaches `queued` (assigned or put back) or `cancelled` (stopped,
/// or cut with its parent) by someone else's hand (seed 002 L19 items 5–7).
pub fn set_by_someone_else(status: CardStatus) -> bool {
    matches!(status, CardStatus::Queued | CardStatus::Cancelled)
}

/// Cards new since the last look (`task_assigned`) or changed
/// (`task_updated`), with the marks to keep (the cards listed now). Only
/// what someone else did rings ([`set_by_someone_else`]): the window's own
/// `work_task_start`, progress and finish never ring back into it.
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
        let theirs = set_by_someone_else(c.status);
        match known.get(&c.id) {
            None if theirs && c.status.is_live() => out.push((Kind::TaskAssigned, c)),
            Some(old) if theirs && *old != mark => out.push((Kind::TaskUpdated, c)),
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

/// Which lines ring first when a round has more than the cap: notices
/// (down, recovered), then cards (few, and each one is work handed to the
/// window: a burst of mentions must not push an assignment out), then
/// direct mentions (a DM, an @mention), then plain group talk.
fn priority(e: &Event) -> u8 {
    match e.kind {
        Kind::Notice => 0,
        Kind::TaskAssigned | Kind::TaskUpdated => 1,
        Kind::Dm | Kind::Mention => 2,
        Kind::Group => 3,
    }
}

/// The kinds in the order the overflow line counts them.
const COUNT_ORDER: [Kind; 5] = [
    Kind::TaskAssigned,
    Kind::TaskUpdated,
    Kind::Dm,
    Kind::Mention,
    Kind::Group,
];

/// `5 "ops", 7 "dev"`: each room by id and title.
fn name_rooms(
    rooms: &std::collections::BTreeSet<ConversationId>,
    titles: &BTreeMap<ConversationId, String>,
) -> String {
    rooms
        .iter()
        .map(|r| match titles.get(r) {
            Some(t) if !t.is_empty() => format!("{r} {t:?}"),
            _ => r.to_string(),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// At most [`MAX_LINES_PER_ROUND`] events, cards first, then direct mentions
/// ([`priority`], stable), then one overflow notice that counts the rest
/// per kind and names their rooms, and names the rooms whose backlog went
/// past the read bound (`unread`: older messages there were not read at
/// all). No queue replays them: the rooms hold them.
pub fn cap(
    mut events: Vec<Event>,
    titles: &BTreeMap<ConversationId, String>,
    unread: &std::collections::BTreeSet<ConversationId>,
) -> Vec<Event> {
    events.sort_by_key(priority);
    let rest = events.split_off(events.len().min(MAX_LINES_PER_ROUND));
    let mut parts = vec![];
    if !rest.is_empty() {
        let counts: Vec<String> = COUNT_ORDER
            .iter()
            .map(|k| (k, rest.iter().filter(|e| e.kind == *k).count()))
            .filter(|(_, n)| *n > 0)
            .map(|(k, n)| format!("{n} {}", k.as_str()))
            .collect();
        let rooms: std::collections::BTreeSet<_> =
            rest.iter().filter_map(|e| e.conversation_id).collect();
        parts.push(format!(
            "{} more event(s) this round not shown ({}) in room(s) {}",
            rest.len(),
            counts.join(", "),
            name_rooms(&rooms, titles)
        ));
    }
    if !unread.is_empty() {
        parts.push(format!(
            "more new messages than one round reads in room(s) {}",
            name_rooms(unread, titles)
        ));
    }
    if !parts.is_empty() {
        events.push(Event::notice(
            "overflow",
            format!("{}: read the rooms", parts.join("; ")),
        ));
    }
    events
}

#[cfg(test)]
mod tests {
    use super::*;
    use hoop_api::types::Mention;

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
        let mut voice = msg(43, 7, "▁▂▃▅▇▅▃", vec![]);
        voice.kind = MessageKind::Voice;
        assert_eq!(
            message_event(&voice, Kind::Dm, "ops").line(),
            "🔔 @ann in ops: voice message | type=dm conversation_id=9 message_id=43 sender_id=7"
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
        let longer = msg(5, 2, "@boltx look", vec![Mention::User(3)]);
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
            // the array names another AI, the body names me: a mention
            (&other, room(Some(g2), true), me, Some(Kind::Mention)),
            (&longer, room(Some(g2), true), me, None),
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

    /// A card of this window's account in room 9.
    fn card(id: i64, status: CardStatus, updated_at: i64) -> Card {
        Card {
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
        }
    }

    #[test]
    fn card_events_table() {
        let mark = |status, updated_at| CardMark { status, updated_at };
        let known = BTreeMap::from([
            (1, mark(CardStatus::Queued, 5)),
            (2, mark(CardStatus::Working, 5)),
            (5, mark(CardStatus::Working, 5)),
            (6, mark(CardStatus::Working, 5)),
            (7, mark(CardStatus::Working, 5)),
            (8, mark(CardStatus::Working, 5)),
        ]);
        let cards = [
            // unchanged: silent
            card(1, CardStatus::Queued, 5),
            // the account finished it itself: silent
            card(2, CardStatus::Done, 9),
            // assigned by someone, waiting: rings
            card(3, CardStatus::Queued, 1),
            // first seen finished: not an assignment
            card(4, CardStatus::Done, 1),
            // progress by the account (same status, newer mark): silent
            card(5, CardStatus::Working, 9),
            // cancelled by someone: rings
            card(6, CardStatus::Cancelled, 9),
            // put back in the queue by someone: rings
            card(7, CardStatus::Queued, 9),
            // failed by the account: silent
            card(8, CardStatus::Failed, 9),
            // the account's own work_task_start (assign + claim): silent
            card(9, CardStatus::Working, 1),
        ];
        let (ev, marks) = card_events(&cards, &known);
        let got: Vec<(Kind, i64)> = ev.iter().map(|(k, c)| (*k, c.id)).collect();
        assert_eq!(
            got,
            vec![
                (Kind::TaskAssigned, 3),
                (Kind::TaskUpdated, 6),
                (Kind::TaskUpdated, 7)
            ],
        );
        assert_eq!(marks.len(), 9, "every listed card is marked, rung or not");
        assert_eq!(
            card_event(Kind::TaskAssigned, &cards[2]).line(),
            "🔔 card #3 \"c3\" is queued | type=task_assigned conversation_id=9 message_id=- sender_id=-"
        );
    }

    #[test]
    fn cap_keeps_twenty_and_one_overflow_line() {
        let titles = BTreeMap::from([(9, "ops".to_string())]);
        let none = std::collections::BTreeSet::new();
        for (n, want_lines, overflow) in [
            (0, 0, false),
            (20, 20, false),
            (21, 21, true),
            (57, 21, true),
        ] {
            let evs: Vec<Event> = (0..n)
                .map(|i| message_event(&msg(i, 2, "x", vec![]), Kind::Group, "r"))
                .collect();
            let out = cap(evs, &titles, &none);
            assert_eq!(out.len(), want_lines, "{n}");
            let shown: Vec<_> = out.iter().filter_map(|e| e.message_id).collect();
            assert_eq!(shown, (0..n.min(20)).collect::<Vec<_>>(), "oldest first");
            assert_eq!(
                out.last().is_some_and(|e| e.notice == Some("overflow")),
                overflow,
                "{n}"
            );
            if overflow {
                assert_eq!(
                    out[20].line(),
                    format!(
                        "🔔 {} more event(s) this round not shown ({} group) in room(s) 9 \"ops\": read the rooms | type=notice kind=overflow",
                        n - 20,
                        n - 20
                    )
                );
            }
        }
    }

    #[test]
    fn cards_and_direct_mentions_ring_first_and_the_rest_is_counted_per_kind() {
        // 24 plain group lines, then 3 mentions, a DM and a card at the end.
        let mut evs: Vec<Event> = (0..24)
            .map(|i| message_event(&msg(i, 2, "x", vec![]), Kind::Group, "r"))
            .collect();
        for i in 24..27 {
            evs.push(message_event(
                &msg(i, 2, "@bolt", vec![]),
                Kind::Mention,
                "r",
            ));
        }
        let mut dm = msg(27, 2, "hi", vec![]);
        dm.conversation_id = 4;
        evs.push(message_event(&dm, Kind::Dm, "dm"));
        let card = Card {
            title: "URGENT hotfix".into(),
            conversation_id: 5,
            ..card(70, CardStatus::Queued, 0)
        };
        evs.push(card_event(Kind::TaskAssigned, &card));
        let unread = std::collections::BTreeSet::from([11]);
        let out = cap(evs, &BTreeMap::new(), &unread);
        assert_eq!(out.len(), 21);
        let head: Vec<(Kind, Option<i64>)> =
            out[..5].iter().map(|e| (e.kind, e.message_id)).collect();
        assert_eq!(
            head,
            vec![
                (Kind::TaskAssigned, None),
                (Kind::Mention, Some(24)),
                (Kind::Mention, Some(25)),
                (Kind::Mention, Some(26)),
                (Kind::Dm, Some(27)),
            ]
        );
        let groups: Vec<_> = out[5..20].iter().filter_map(|e| e.message_id).collect();
        assert_eq!(groups, (0..15).collect::<Vec<_>>());
        assert_eq!(
            out[20].line(),
            "🔔 9 more event(s) this round not shown (9 group) in room(s) 9; more new messages \
             than one round reads in room(s) 11: read the rooms | type=notice kind=overflow"
        );
        // Only the unread bound: still one line.
        let only = cap(vec![], &BTreeMap::new(), &unread);
        assert_eq!(
            only[0].line(),
            "🔔 more new messages than one round reads in room(s) 11: read the rooms | type=notice kind=overflow"
        );
    }

    #[test]
    fn a_card_after_more_mentions_than_the_cap_still_rings() {
        // 24 @mentions, then an urgent card: the card is not cut.
        let mut evs: Vec<Event> = (0..24)
            .map(|i| message_event(&msg(i, 2, "@bolt", vec![]), Kind::Mention, "r"))
            .collect();
        let card = Card {
            title: "URGENT hotfix".into(),
            ..card(70, CardStatus::Queued, 0)
        };
        evs.push(card_event(Kind::TaskAssigned, &card));
        let out = cap(evs, &BTreeMap::new(), &std::collections::BTreeSet::new());
        assert_eq!(out.len(), 21);
        assert_eq!(out[0].kind, Kind::TaskAssigned, "{:?}", out[0].summary);
        let mentions: Vec<_> = out[1..20].iter().filter_map(|e| e.message_id).collect();
        assert_eq!(
            mentions,
            (0..19).collect::<Vec<_>>(),
            "oldest mentions next"
        );
        assert_eq!(
            out[20].line(),
            "🔔 5 more event(s) this round not shown (5 mention) in room(s) 9: read the rooms | type=notice kind=overflow"
        );
    }
}
