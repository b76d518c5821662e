//! `hoop why`'s reading of the journal: a message's lines in order
//! ([`find_message`], reading only the days it needs), a room's messages
//! over a window ([`room_lines`]), a message's present state ([`present`])
//! and the words for all of it ([`render_story`], [`render_state`],
//! [`render_room`], [`never_saw`]). Reading is plain file I/O; everything
//! after it is pure.
//!
//! Finding a message's first day: each day file starts with the highest
//! message id journaled before it (`day` line), which never goes down; a
//! message first journaled on day `s` makes every later day's `day` line at
//! least its id, so the last day whose `day` line is below the id is at or
//! before `s`. From there the reader goes forward, day by day, until the
//! room's cursor passed the message (its story is over) or the journal ends.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use hoop_api::types::{ConversationId, MessageId};
use memchr::memmem;

use super::writer::day_files;
use super::{AgainWhy, CursorRule, Ev, How, Line, ShownBy, Why, day_of, parse};

/// A message's lines as found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Found {
    /// The message's own lines, the cursor line that passed it and the
    /// ends of the turns that showed it, in journal order.
    pub lines: Vec<Line>,
    /// `answered` lines whose answer IS this message (it is the account's own).
    pub answer_to: Vec<Line>,
    /// Day files read.
    pub days_read: usize,
    /// The journal's first and last day (`None`: no journal).
    pub span: Option<(i64, i64)>,
}

impl Found {
    /// The room the message is in, from the first line that names one.
    pub fn room(&self) -> Option<ConversationId> {
        self.lines
            .iter()
            .chain(&self.answer_to)
            .find_map(|l| l.room)
    }
}

fn first_line(path: &Path) -> Option<Line> {
    use std::io::BufRead;
    let f = std::fs::File::open(path).ok()?;
    let mut r = std::io::BufReader::with_capacity(256, f);
    let mut buf = vec![];
    r.read_until(b'\n', &mut buf).ok()?;
    parse(buf.trim_ascii_end())
}

/// The lines of a day file, split (a torn last line is skipped by the parser).
fn lines_of(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    bytes.split(|b| *b == b'\n').filter(|l| !l.is_empty())
}

/// Every journal line about message `id`, reading only the days it needs.
pub fn find_message(dir: &Path, id: MessageId) -> Found {
    let files = day_files(dir);
    let mut found = Found {
        span: files.first().zip(files.last()).map(|(a, b)| (a.0, b.0)),
        ..Found::default()
    };
    // The last day whose `day` line is below `id` (a file without one is
    // read rather than skipped).
    let below = files.partition_point(|(_, p)| {
        matches!(first_line(p), Some(Line { ev: Ev::Day { max_msg }, .. }) if max_msg < id)
    });
    let start = below.saturating_sub(1);
    let msg_pat = format!("\"msg\":{id},");
    let by_pats = [format!("\"by\":{id},"), format!("\"by\":{id}}}")];
    let msg_f = memmem::Finder::new(msg_pat.as_bytes());
    let by_f: Vec<memmem::Finder> = by_pats
        .iter()
        .map(|p| memmem::Finder::new(p.as_bytes()))
        .collect();
    let cursor_f = memmem::Finder::new(b"\"ev\":\"cursor\"");
    let turn_end_f = memmem::Finder::new(b"\"ev\":\"turn-end\"");
    let mut room: Option<ConversationId> = None;
    let mut room_f: Option<memmem::Finder<'static>> = None;
    let mut turns: BTreeSet<u64> = BTreeSet::new();
    for (_, path) in &files[start..] {
        let Ok(bytes) = std::fs::read(path) else {
            continue;
        };
        found.days_read += 1;
        for raw in lines_of(&bytes) {
            let mine = msg_f.find(raw).is_some();
            let in_room_cursor = room_f.as_ref().is_some_and(|f| f.find(raw).is_some())
                && cursor_f.find(raw).is_some();
            let answer = by_f.iter().any(|f| f.find(raw).is_some());
            let turn_end = !turns.is_empty() && turn_end_f.find(raw).is_some();
            if !(mine || in_room_cursor || answer || turn_end) {
                continue;
            }
            let Some(l) = parse(raw) else { continue };
            match &l.ev {
                Ev::Answered { by, .. } if *by == id && l.msg != Some(id) => {
                    found.answer_to.push(l);
                }
                Ev::TurnEnd { turn, .. } if turns.contains(turn) => found.lines.push(l),
                Ev::TurnEnd { .. } => {}
                // Only a cursor of the message's own room, once it was seen,
                // and at or past it: the end of its story.
                Ev::Cursor { .. }
                    if room.is_some() && l.room == room && l.msg.is_some_and(|to| to >= id) =>
                {
                    found.lines.push(l);
                    return finish(found);
                }
                Ev::Cursor { .. } => {}
                _ if l.msg == Some(id) => {
                    if room.is_none() {
                        room = l.room;
                        room_f = room.map(|r| {
                            memmem::Finder::new(format!("\"room\":{r},").as_bytes()).into_owned()
                        });
                    }
                    if let Ev::Shown { turn, .. } = &l.ev {
                        turns.insert(*turn);
                    }
                    found.lines.push(l);
                }
                _ => {}
            }
        }
    }
    finish(found)
}

fn finish(mut found: Found) -> Found {
    found.lines.sort_by_key(|l| l.t);
    found
}

/// Every line of `room` from `since_ms` on.
pub fn room_lines(dir: &Path, room: ConversationId, since_ms: i64) -> Vec<Line> {
    let from = day_of(since_ms);
    let pat = format!("\"room\":{room},");
    let f = memmem::Finder::new(pat.as_bytes());
    let mut out = vec![];
    for (day, path) in day_files(dir) {
        if day < from {
            continue;
        }
        let Ok(bytes) = std::fs::read(&path) else {
            continue;
        };
        out.extend(
            lines_of(&bytes)
                .filter(|l| f.find(l).is_some())
                .filter_map(parse)
                .filter(|l| l.t >= since_ms && l.room == Some(room)),
        );
    }
    out
}

/// A message's present state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    Answered {
        by: MessageId,
        turn: Option<u64>,
        /// From its creation to the settle that found the answer.
        after_ms: Option<i64>,
    },
    Passed {
        reason: String,
    },
    /// Not the account's to answer.
    NotMine {
        why: Why,
        me: Option<String>,
    },
    GaveUp {
        offers: u32,
    },
    /// Offered again; the room's next look at `next_at_ms`.
    Waiting {
        why: AgainWhy,
        next_at_ms: Option<i64>,
    },
    /// Shown to the agent in `turn`, which has not been settled.
    InTurn {
        turn: u64,
    },
    /// Seen as work, not shown yet.
    Open,
    /// The cursor moved past it with no event of its own (`rule`).
    Passed_ {
        rule: CursorRule,
    },
    /// The account's own answer to `to`.
    OwnAnswer {
        to: MessageId,
    },
    /// The journal never saw it.
    Unseen,
}

impl State {
    /// Answered, passed or ruled out: nothing is owed.
    pub fn is_settled(&self) -> bool {
        matches!(
            self,
            State::Answered { .. }
                | State::Passed { .. }
                | State::NotMine { .. }
                | State::Passed_ { .. }
                | State::OwnAnswer { .. }
        )
    }
}

/// The present state of message `id` from its lines (journal order).
pub fn present(id: MessageId, lines: &[Line], answer_to: &[Line]) -> State {
    let own: Vec<&Line> = lines.iter().filter(|l| l.msg == Some(id)).collect();
    let created = own.iter().find_map(|l| match l.ev {
        Ev::Seen { created, .. } => Some(created),
        _ => None,
    });
    if let Some((t, by, turn)) = own.iter().find_map(|l| match l.ev {
        Ev::Answered { by, turn } => Some((l.t, by, turn)),
        _ => None,
    }) {
        return State::Answered {
            by,
            turn,
            after_ms: created.map(|c| t - c * 1000),
        };
    }
    if let Some(Ev::Passed { reason, .. }) = own
        .iter()
        .map(|l| &l.ev)
        .find(|e| matches!(e, Ev::Passed { .. }))
    {
        return State::Passed {
            reason: reason.clone(),
        };
    }
    if let Some(Ev::GaveUp { offers, .. }) = own
        .iter()
        .map(|l| &l.ev)
        .find(|e| matches!(e, Ev::GaveUp { .. }))
    {
        return State::GaveUp { offers: *offers };
    }
    if let Some(Ev::Context { why, me }) = own
        .iter()
        .map(|l| &l.ev)
        .find(|e| matches!(e, Ev::Context { .. }))
    {
        return State::NotMine {
            why: *why,
            me: me.clone(),
        };
    }
    let cursor = lines.iter().find_map(|l| match l.ev {
        Ev::Cursor { rule } if l.msg.is_some_and(|to| to >= id) => Some(rule),
        _ => None,
    });
    if let Some(rule) = cursor {
        return State::Passed_ { rule };
    }
    let last = own.iter().rev().find(|l| {
        matches!(
            l.ev,
            Ev::OfferedAgain { .. } | Ev::Shown { .. } | Ev::Work { .. } | Ev::Seen { .. }
        )
    });
    match last.map(|l| (l.t, &l.ev)) {
        Some((
            t,
            Ev::OfferedAgain {
                why, retry_in_ms, ..
            },
        )) => State::Waiting {
            why: *why,
            next_at_ms: retry_in_ms.map(|r| t + r as i64),
        },
        Some((_, Ev::Shown { turn, .. })) => State::InTurn { turn: *turn },
        Some(_) => State::Open,
        None => match answer_to.first().and_then(|l| l.msg) {
            Some(to) => State::OwnAnswer { to },
            None => State::Unseen,
        },
    }
}

/// `2026-12-05 06:21:04` (UTC) of a Unix-millisecond time.
pub fn clock(t_ms: i64) -> String {
    let (y, m, d) = hoop_meter::timefmt::civil_from_days(day_of(t_ms));
    let s = t_ms.rem_euclid(86_400_000) / 1000;
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
        s / 3600,
        s / 60 % 60,
        s % 60
    )
}

/// Seconds with one decimal ("4.1 s").
pub fn secs(ms: i64) -> String {
    if ms.abs() >= 100_000 {
        format!("{} s", ms / 1000)
    } else {
        format!("{:.1} s", ms as f64 / 1000.0)
    }
}

fn why_words(why: Why, me: Option<&str>) -> String {
    let me = me.map_or("this agent".to_string(), |m| format!("@{m}"));
    match why {
        Why::Mentioned => format!("a multi-AI room, and it mentions {me}"),
        Why::OneToOne => {
            "a 1:1 room (this agent is its only AI): every message is its to answer".into()
        }
        Why::NotMentioned => format!("a multi-AI room and no mention of {me}"),
        Why::AgentNote => "another agent's failure note (agents do not answer each other's)".into(),
        Why::BeforeFloor => {
            "older than the new-room floor: history from before the sentinel first saw the room"
                .into()
        }
        Why::UnknownKind => "a message kind this version does not know".into(),
    }
}

fn rule_words(rule: CursorRule) -> &'static str {
    match rule {
        CursorRule::Baseline => "first sight of the room, its backlog is history",
        CursorRule::OwnLast => "the account's own answer is the newest",
        CursorRule::NotMentioned => "a multi-AI room and nothing new mentions the account",
        CursorRule::Passed => "everything open was passed on by the agent",
        CursorRule::NotMine => "only other agents' notes or unknown kinds",
        CursorRule::Settled => "settled after a turn that exited 0",
    }
}

/// One journal line in words.
pub fn line_words(l: &Line) -> String {
    match &l.ev {
        Ev::Day { .. } => "a new day file".into(),
        Ev::Seen { how, created } => {
            let how = match how {
                How::Websocket => "the WebSocket rang for its room",
                How::Alarm => {
                    "found by the alarm round (a full pull that catches what the WebSocket missed)"
                }
                How::Recheck => {
                    "found by a recheck (the room's own timer, or every room after the WebSocket connected)"
                }
                How::PageBack => {
                    "found by paging back toward the cursor (it was not on the newest page)"
                }
                How::Startup => "found by the first round after the sentinel started",
            };
            format!("seen: {how}; created {}", clock(created * 1000))
        }
        Ev::Work { why } => format!("work: {}", why_words(*why, None)),
        Ev::Context { why, me } => {
            format!("context, not to answer: {}", why_words(*why, me.as_deref()))
        }
        Ev::Shown { by, turn } => match by {
            ShownBy::Prompt => format!("shown to the agent in the prompt of turn {turn}"),
            ShownBy::SayOrRead => {
                format!("shown to the agent by hoop say or hoop read during turn {turn}")
            }
        },
        Ev::Answered { by, turn } => match turn {
            Some(t) => format!("answered by #{by} in turn {t}"),
            None => format!("found answered by #{by}"),
        },
        Ev::Passed { reason, .. } => format!("passed by the agent: '{reason}'"),
        Ev::OfferedAgain {
            why,
            turn,
            offer,
            retry_in_ms,
        } => {
            let after = retry_in_ms.map_or(String::new(), |r| format!(" in {}", secs(r as i64)));
            match why {
                AgainWhy::Silent => format!(
                    "turn {turn} left it with neither a reply nor a pass (offer {} of {}); offered again{after}",
                    offer.unwrap_or(1),
                    crate::constants::MAX_OFFERS
                ),
                AgainWhy::ReplyFailed => {
                    format!(
                        "the reply failed in turn {turn}; offered again after the room's backoff{after}"
                    )
                }
            }
        }
        Ev::GaveUp { offers, turn } => format!(
            "offered {offers} times with neither a reply nor a pass (the last in turn {turn}): given up, see hoop status"
        ),
        Ev::Cursor { rule } => format!(
            "the room's cursor moved past it, to #{}: {}",
            l.msg.unwrap_or(0),
            rule_words(*rule)
        ),
        Ev::TurnStart { turn, rooms } => format!("turn {turn} started for rooms {rooms:?}"),
        Ev::TurnEnd {
            turn,
            class,
            ms,
            tokens,
        } => {
            let mut s = format!("turn {turn} ended: {class} in {}", secs(*ms as i64));
            if let (Some(i), Some(o)) = (tokens.tokens_in, tokens.tokens_out) {
                s.push_str(&format!(
                    ", {} tokens in ({} cached), {o} out",
                    i + tokens.tokens_cached_in.unwrap_or(0),
                    tokens.tokens_cached_in.unwrap_or(0)
                ));
            }
            s
        }
    }
}

/// A present state in words.
pub fn render_state(s: &State, now_ms: i64) -> String {
    match s {
        State::Answered { by, turn, after_ms } => {
            let mut out = format!("answered by #{by}");
            if let Some(t) = turn {
                out.push_str(&format!(" in turn {t}"));
            }
            if let Some(ms) = after_ms {
                out.push_str(&format!(", {} after it arrived", secs(*ms)));
            }
            out
        }
        State::Passed { reason } => format!("passed by the agent: '{reason}'"),
        State::NotMine { why, me } => {
            format!("not this agent's: {}", why_words(*why, me.as_deref()))
        }
        State::GaveUp { offers } => format!(
            "given up: offered {offers} times with neither a reply nor a pass (listed in hoop status)"
        ),
        State::Waiting { why, next_at_ms } => {
            let why = match why {
                AgainWhy::Silent => {
                    "offered again: the agent left it with neither a reply nor a pass"
                }
                AgainWhy::ReplyFailed => "offered again after the room's backoff: the reply failed",
            };
            match next_at_ms {
                Some(at) if *at > now_ms => {
                    format!("waiting: {why}; next try in {}", secs(at - now_ms))
                }
                _ => format!("waiting: {why}; the next try is due (the room's next round)"),
            }
        }
        State::InTurn { turn } => {
            format!("in turn {turn}: shown to the agent, the turn has not been settled yet")
        }
        State::Open => {
            "open: seen as work, not shown to the agent yet (the next turn lists it)".into()
        }
        State::Passed_ { rule } => format!("behind the cursor: {}", rule_words(*rule)),
        State::OwnAnswer { to } => format!("this account's own answer to #{to}"),
        State::Unseen => "never seen by the sentinel".into(),
    }
}

/// The story of message `id`: one line per event, then its present state.
pub fn render_story(id: MessageId, found: &Found, now_ms: i64) -> String {
    let state = present(id, &found.lines, &found.answer_to);
    let mut out = match found.room() {
        Some(r) => format!("message #{id} in room {r}:\n"),
        None => format!("message #{id}:\n"),
    };
    for l in &found.lines {
        out.push_str(&format!("  {}  {}\n", clock(l.t), line_words(l)));
    }
    if let State::OwnAnswer { .. } = state {
        for l in &found.answer_to {
            out.push_str(&format!("  {}  {}\n", clock(l.t), line_words(l)));
        }
    }
    out.push_str(&format!("now: {}\n", render_state(&state, now_ms)));
    out
}

/// What `hoop why` says about a message the journal never saw.
pub fn never_saw(id: MessageId, home: &str, span: Option<(i64, i64)>, alarm_secs: u64) -> String {
    let kept = match span {
        Some((a, b)) => format!(
            "the journal covers {} to {}",
            &clock(super::day_start_ms(a))[..10],
            &clock(super::day_start_ms(b))[..10]
        ),
        None => "this home has no journal yet (the sentinel writes it as it runs)".into(),
    };
    format!(
        "message #{id}: the sentinel's journal never saw it ({kept}).\n\
         Where to look next:\n\
         - a message reaches the sentinel by its WebSocket, or at the latest by the alarm round every {alarm_secs} s:\n  \
           `hoop status --home {home}` shows whether the sentinel runs, whether its WebSocket is up and when its last round was;\n\
         - the sentinel sees only the rooms its account is a member of: check the room's members;\n\
         - a message older than the journal's first day, or from before the sentinel first saw its room, is not in it.\n"
    )
}

/// Each message of a room's lines with its present state, by id.
pub fn room_states(lines: &[Line], _now_ms: i64) -> Vec<(MessageId, State)> {
    let mut by_msg: BTreeMap<MessageId, Vec<Line>> = BTreeMap::new();
    let cursors: Vec<&Line> = lines
        .iter()
        .filter(|l| matches!(l.ev, Ev::Cursor { .. }))
        .collect();
    for l in lines {
        if let (Some(m), false) = (l.msg, matches!(l.ev, Ev::Cursor { .. })) {
            by_msg.entry(m).or_default().push(l.clone());
        }
    }
    by_msg
        .into_iter()
        .map(|(id, mut ls)| {
            let first = ls.first().map_or(0, |l| l.t);
            ls.extend(
                cursors
                    .iter()
                    .filter(|c| c.t >= first)
                    .map(|c| (*c).clone()),
            );
            ls.sort_by_key(|l| l.t);
            (id, present(id, &ls, &[]))
        })
        .collect()
}

/// One room's messages with their present state, one line each; `!` marks
/// those not answered, passed or ruled out.
pub fn render_room(room: ConversationId, lines: &[Line], since_ms: i64, now_ms: i64) -> String {
    let states = room_states(lines, now_ms);
    let mut out = format!("room {room} since {} (UTC):\n", clock(since_ms));
    if states.is_empty() {
        out.push_str("  no message of this room in the journal for this window\n");
    }
    for (id, s) in states {
        let mark = if s.is_settled() { ' ' } else { '!' };
        out.push_str(&format!("{mark} #{id}  {}\n", render_state(&s, now_ms)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::{Tokens, day_start_ms, file_name};
    use super::*;

    const T0: i64 = 1_796_428_800_000; // 2026-12-05 00:00:00 UTC

    fn l(t: i64, id: i64, ev: Ev) -> Line {
        Line::msg(T0 + t, 3, id, ev)
    }
    fn seen(t: i64, id: i64) -> Line {
        l(
            t,
            id,
            Ev::Seen {
                how: How::Websocket,
                created: (T0 + t) / 1000,
            },
        )
    }
    fn work(t: i64, id: i64) -> Line {
        l(t, id, Ev::Work { why: Why::OneToOne })
    }
    fn shown(t: i64, id: i64, turn: u64) -> Line {
        l(
            t,
            id,
            Ev::Shown {
                by: ShownBy::Prompt,
                turn,
            },
        )
    }
    fn cursor(t: i64, to: i64) -> Line {
        l(
            t,
            to,
            Ev::Cursor {
                rule: CursorRule::Settled,
            },
        )
    }

    #[test]
    fn present_state_table() {
        let now = T0 + 100_000;
        // (lines, want words, why)
        let cases: Vec<(Vec<Line>, &str, &str)> = vec![
            (
                vec![
                    seen(0, 57),
                    work(0, 57),
                    shown(10, 57, 12),
                    l(
                        4_100,
                        57,
                        Ev::Answered {
                            by: 58,
                            turn: Some(12),
                        },
                    ),
                    cursor(4_100, 58),
                ],
                "answered by #58 in turn 12, 4.1 s after it arrived",
                "answered",
            ),
            (
                vec![
                    seen(0, 57),
                    work(0, 57),
                    shown(10, 57, 12),
                    l(
                        900,
                        57,
                        Ev::Passed {
                            reason: "thanks needs no reply".into(),
                            turn: Some(12),
                        },
                    ),
                ],
                "passed by the agent: 'thanks needs no reply'",
                "passed",
            ),
            (
                vec![
                    seen(0, 57),
                    work(0, 57),
                    shown(10, 57, 12),
                    l(
                        60_000,
                        57,
                        Ev::OfferedAgain {
                            why: AgainWhy::ReplyFailed,
                            turn: 12,
                            offer: None,
                            retry_in_ms: Some(80_000),
                        },
                    ),
                ],
                "waiting: offered again after the room's backoff: the reply failed; next try in 40.0 s",
                "waiting out the backoff",
            ),
            (
                vec![
                    seen(0, 57),
                    l(
                        0,
                        57,
                        Ev::Context {
                            why: Why::NotMentioned,
                            me: Some("bolt".into()),
                        },
                    ),
                    cursor(10, 57),
                ],
                "not this agent's: a multi-AI room and no mention of @bolt",
                "for another AI",
            ),
            (
                vec![seen(0, 57), work(0, 57), shown(10, 57, 12)],
                "in turn 12: shown to the agent, the turn has not been settled yet",
                "in a turn",
            ),
            (
                vec![seen(0, 57), work(0, 57)],
                "open: seen as work, not shown to the agent yet (the next turn lists it)",
                "open",
            ),
            (
                vec![cursor(10, 60)],
                "behind the cursor: settled after a turn that exited 0",
                "only the cursor",
            ),
            (vec![], "never seen by the sentinel", "nothing"),
        ];
        for (lines, want, why) in cases {
            assert_eq!(render_state(&present(57, &lines, &[]), now), want, "{why}");
        }
        let own = [l(
            5,
            50,
            Ev::Answered {
                by: 57,
                turn: Some(3),
            },
        )];
        assert_eq!(
            render_state(&present(57, &[], &own), now),
            "this account's own answer to #50"
        );
    }

    #[test]
    fn story_lines_in_order() {
        let found = Found {
            lines: vec![
                seen(0, 57),
                work(0, 57),
                shown(3_000, 57, 12),
                Line {
                    t: T0 + 7_000,
                    room: None,
                    msg: None,
                    ev: Ev::TurnEnd {
                        turn: 12,
                        class: "ok".into(),
                        ms: 4_000,
                        tokens: Tokens {
                            tokens_in: Some(100),
                            tokens_cached_in: Some(900),
                            tokens_out: Some(20),
                        },
                    },
                },
                l(
                    7_100,
                    57,
                    Ev::Answered {
                        by: 58,
                        turn: Some(12),
                    },
                ),
                cursor(7_100, 58),
            ],
            ..Found::default()
        };
        let want = "message #57 in room 3:
  2026-12-05 00:00:00  seen: the WebSocket rang for its room; created 2026-12-05 00:00:00
  2026-12-05 00:00:00  work: a 1:1 room (this agent is its only AI): every message is its to answer
  2026-12-05 00:00:03  shown to the agent in the prompt of turn 12
  2026-12-05 00:00:07  turn 12 ended: ok in 4.0 s, 1000 tokens in (900 cached), 20 out
  2026-12-05 00:00:07  answered by #58 in turn 12
  2026-12-05 00:00:07  the room's cursor moved past it, to #58: settled after a turn that exited 0
now: answered by #58 in turn 12, 7.1 s after it arrived
";
        assert_eq!(render_story(57, &found, T0 + 10_000), want);
    }

    #[test]
    fn room_listing_marks_what_is_owed() {
        let lines = vec![
            seen(0, 57),
            work(0, 57),
            l(
                10,
                57,
                Ev::Answered {
                    by: 58,
                    turn: Some(1),
                },
            ),
            seen(20, 59),
            work(20, 59),
            seen(30, 60),
            l(
                30,
                60,
                Ev::Context {
                    why: Why::NotMentioned,
                    me: Some("bolt".into()),
                },
            ),
        ];
        let out = render_room(3, &lines, T0, T0 + 1000);
        assert_eq!(
            out,
            "room 3 since 2026-12-05 00:00:00 (UTC):
  #57  answered by #58 in turn 1, 0.0 s after it arrived
! #59  open: seen as work, not shown to the agent yet (the next turn lists it)
  #60  not this agent's: a multi-AI room and no mention of @bolt
"
        );
    }

    /// Days of a generated journal: `day_line` then `lines`.
    fn write_day(dir: &Path, day: i64, max_before: i64, lines: &[Line]) {
        let mut bytes = Line {
            t: day_start_ms(day),
            room: None,
            msg: None,
            ev: Ev::Day {
                max_msg: max_before,
            },
        }
        .to_bytes();
        for l in lines {
            bytes.extend(l.to_bytes());
        }
        std::fs::write(dir.join(file_name(day)), bytes).unwrap();
    }

    #[test]
    fn finds_a_message_reading_only_the_days_it_needs() {
        let dir = tempfile::tempdir().unwrap();
        let d0 = day_of(T0);
        let at = |day: i64, t: i64, room: i64, id: i64, ev: Ev| {
            Line::msg(day_start_ms(day) + t, room, id, ev)
        };
        let room_of = |id: i64| if id == 150 { 4 } else { 3 };
        let s = |day, id| {
            at(
                day,
                1,
                room_of(id),
                id,
                Ev::Seen {
                    how: How::Websocket,
                    created: 0,
                },
            )
        };
        // Ten days; message 100 + 10·k on day k, answered the same day,
        // except 150 (day 5, room 4) which waits to day 7, and 135, first seen by
        // paging back on day 6 after later messages.
        for k in 0..10 {
            let id = 100 + 10 * k;
            let mut lines = vec![s(d0 + k, id)];
            if k != 5 {
                lines.push(at(
                    d0 + k,
                    2,
                    3,
                    id,
                    Ev::Answered {
                        by: id + 1,
                        turn: Some(k as u64),
                    },
                ));
                lines.push(at(
                    d0 + k,
                    3,
                    3,
                    id + 1,
                    Ev::Cursor {
                        rule: CursorRule::Settled,
                    },
                ));
            }
            if k == 6 {
                lines.push(s(d0 + k, 135));
            }
            if k == 7 {
                lines.push(at(
                    d0 + k,
                    4,
                    4,
                    150,
                    Ev::Passed {
                        reason: "r".into(),
                        turn: None,
                    },
                ));
                lines.push(at(
                    d0 + k,
                    5,
                    4,
                    171,
                    Ev::Cursor {
                        rule: CursorRule::Settled,
                    },
                ));
            }
            write_day(
                dir.path(),
                d0 + k,
                if k == 0 { 0 } else { 100 + 10 * k - 9 },
                &lines,
            );
        }
        // (id, want events, want days read, why)
        let cases: Vec<(i64, Vec<&str>, usize, &str)> = vec![
            (
                120,
                vec!["seen", "answered", "cursor"],
                1,
                "answered the same day",
            ),
            (
                150,
                vec!["seen", "passed", "cursor"],
                3,
                "settled two days later",
            ),
            (
                135,
                vec!["seen", "cursor"],
                4,
                "seen out of order, days later",
            ),
            (191, vec![], 1, "an own answer: its question's day only"),
            (500, vec![], 1, "newer than everything: the last day only"),
        ];
        for (id, want, days, why) in cases {
            let f = find_message(dir.path(), id);
            let names: Vec<&str> = f.lines.iter().map(|l| l.ev.name()).collect();
            assert_eq!(names, want, "{why}");
            assert_eq!(f.days_read, days, "{why}");
        }
        assert_eq!(
            present(191, &[], &find_message(dir.path(), 191).answer_to),
            State::OwnAnswer { to: 190 }
        );
    }
}
