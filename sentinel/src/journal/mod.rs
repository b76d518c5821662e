//! The home's journal: what the sentinel did with each message, one JSON
//! line per event, one file a day (`<home>/journal/YYYY-MM-DD.jsonl`, UTC).
//! The log keeps its human lines; the journal is for machines and for
//! `hoop why` ([`story`]).
//!
//! - A closed set of events ([`Ev`]): `seen` (how it reached the
//!   sentinel), `work` / `context` (why, in the words of the one mention
//!   rule), `shown` (the prompt of turn N, or `hoop say` / `hoop read`
//!   during turn N), `answered`, `passed`, `offered-again`, `gave-up`,
//!   `cursor` (moved past it, with the rule), `turn-start`, `turn-end`,
//!   and each day file's first line `day` (the highest message id the
//!   journal held before the day began, which lets a reader find a
//!   message's first day by bisection).
//! - Ids, names, rules and figures only: never a message body, never a
//!   token. The one free text is the agent's own reason for a pass.
//! - Written by the daemon alone ([`writer`]), through a bounded queue: a
//!   full queue drops journal lines and counts them, never blocks a round.
//!   What `hoop say` / `hoop read` showed during a turn is learnt through
//!   the say watermark they move (read after the turn), so no other process
//!   writes here.
//! - Kept [`crate::constants::JOURNAL_KEEP_DAYS`] days and at most
//!   [`crate::constants::JOURNAL_MAX_BYTES`], oldest days dropped first
//!   ([`retention`]).

pub mod retention;
pub mod story;
pub mod writer;

use hoop_api::types::{ConversationId, MessageId};
use serde::{Deserialize, Serialize};

pub use writer::Journal;

/// How a message reached the sentinel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum How {
    /// A WebSocket `message.new` named its room.
    Websocket,
    /// The alarm: the full pull that catches what the WebSocket missed.
    Alarm,
    /// A recheck: the room's own timer (backoff, offered again), or every
    /// room after the WebSocket (re)connected or the backend asked.
    Recheck,
    /// Found by paging back toward the cursor (not on the newest page).
    PageBack,
    /// The first round after the daemon started.
    Startup,
}

/// Why a message is work or context, in the words of the one mention rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Why {
    /// A multi-AI room, and it mentions the account.
    Mentioned,
    /// A room where the account is the only AI: every message is its to answer.
    OneToOne,
    /// A multi-AI room, and it does not mention the account.
    NotMentioned,
    /// Another agent's failure note or obituary.
    AgentNote,
    /// Older than the new-room floor: history before the room was first seen.
    BeforeFloor,
    /// A message kind this version does not know.
    UnknownKind,
}

/// How the prompt's listing reached the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ShownBy {
    /// Listed in the turn's prompt.
    Prompt,
    /// Printed by `hoop say` (a refusal shows the unread) or `hoop read`
    /// during the turn (learnt from the say watermark they moved).
    SayOrRead,
}

/// Why a message is offered again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AgainWhy {
    /// Left with neither a reply nor a pass.
    Silent,
    /// The reply failed (a `hoop say` failed, or the turn did).
    ReplyFailed,
}

/// The rule that let the cursor move.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CursorRule {
    /// First sight of a room: nothing at or after the floor.
    Baseline,
    /// Nothing from others since the account's own answer.
    OwnLast,
    /// A multi-AI room and nothing fresh mentions the account.
    NotMentioned,
    /// Everything open was passed on by the agent.
    Passed,
    /// Only other agents' notes or unknown kinds.
    NotMine,
    /// After a turn that exited 0, past what is handled.
    Settled,
}

impl CursorRule {
    pub fn of(why: crate::plan::CursorWhy) -> CursorRule {
        use crate::plan::{AdvanceWhy, CursorWhy};
        match why {
            CursorWhy::Baseline => CursorRule::Baseline,
            CursorWhy::Settled => CursorRule::Settled,
            CursorWhy::Advance(AdvanceWhy::OwnLast) => CursorRule::OwnLast,
            CursorWhy::Advance(AdvanceWhy::NotMentioned) => CursorRule::NotMentioned,
            CursorWhy::Advance(AdvanceWhy::Passed) => CursorRule::Passed,
            CursorWhy::Advance(AdvanceWhy::NotMine) => CursorRule::NotMine,
        }
    }
}

/// A turn's tokens, as the CLI reported them (`None`: not known).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tokens {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_in: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_cached_in: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_out: Option<i64>,
}

/// The closed set of events. Field names are short and stable: this is a
/// file format (`hoop why --json` prints these lines as they are).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "ev", rename_all = "kebab-case")]
pub enum Ev {
    /// A day file's first line: the highest message id journaled before.
    Day {
        max_msg: MessageId,
    },
    /// A fresh message was looked at; `created` is its creation time (Unix
    /// seconds, the backend's clock).
    Seen {
        how: How,
        created: i64,
    },
    Work {
        why: Why,
    },
    Context {
        why: Why,
        /// The account's username, for "no mention of @bolt".
        #[serde(default, skip_serializing_if = "Option::is_none")]
        me: Option<String>,
    },
    Shown {
        by: ShownBy,
        turn: u64,
    },
    Answered {
        by: MessageId,
        /// The turn it was settled after (`None`: found answered when seen).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        turn: Option<u64>,
    },
    Passed {
        /// The agent's own reason (`hoop pass`), at most 500 characters.
        reason: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        turn: Option<u64>,
    },
    OfferedAgain {
        why: AgainWhy,
        turn: u64,
        /// Silence: this was offer `offer` of `MAX_OFFERS`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        offer: Option<u32>,
        /// The room's next look, this long after the line.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        retry_in_ms: Option<u64>,
    },
    GaveUp {
        offers: u32,
        turn: u64,
    },
    /// The room's cursor moved to the line's `msg`, past every message up to it.
    Cursor {
        rule: CursorRule,
    },
    TurnStart {
        turn: u64,
        rooms: Vec<ConversationId>,
    },
    TurnEnd {
        turn: u64,
        /// `ok`, `failed`, `timeout`, `auth_dead`, `limit`.
        class: String,
        ms: u64,
        #[serde(flatten)]
        tokens: Tokens,
    },
}

impl Ev {
    /// The event's name in the file.
    pub fn name(&self) -> &'static str {
        match self {
            Ev::Day { .. } => "day",
            Ev::Seen { .. } => "seen",
            Ev::Work { .. } => "work",
            Ev::Context { .. } => "context",
            Ev::Shown { .. } => "shown",
            Ev::Answered { .. } => "answered",
            Ev::Passed { .. } => "passed",
            Ev::OfferedAgain { .. } => "offered-again",
            Ev::GaveUp { .. } => "gave-up",
            Ev::Cursor { .. } => "cursor",
            Ev::TurnStart { .. } => "turn-start",
            Ev::TurnEnd { .. } => "turn-end",
        }
    }
}

/// One journal line. Fields are written in this order (`t`, `room`, `msg`,
/// then the event), which the reader's byte pre-filter relies on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Line {
    /// Unix milliseconds.
    pub t: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub room: Option<ConversationId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub msg: Option<MessageId>,
    #[serde(flatten)]
    pub ev: Ev,
}

impl Line {
    /// A message's event.
    pub fn msg(t: i64, room: ConversationId, msg: MessageId, ev: Ev) -> Line {
        Line {
            t,
            room: Some(room),
            msg: Some(msg),
            ev,
        }
    }

    /// The line as written: JSON and a newline.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut v = serde_json::to_vec(self).unwrap_or_default();
        v.push(b'\n');
        v
    }

    /// The highest message id this line names (its message, or the answer).
    pub fn max_id(&self) -> Option<MessageId> {
        let by = match &self.ev {
            Ev::Answered { by, .. } => Some(*by),
            Ev::Day { max_msg } => Some(*max_msg),
            _ => None,
        };
        self.msg.max(by)
    }
}

/// Parse one line (`None` for a line this version cannot read: skipped).
pub fn parse(line: &[u8]) -> Option<Line> {
    serde_json::from_slice(line).ok()
}

/// Unix milliseconds now.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

const MS_PER_DAY: i64 = 86_400_000;

/// The UTC day (days since 1970-01-01) of a Unix-millisecond time.
pub fn day_of(t_ms: i64) -> i64 {
    t_ms.div_euclid(MS_PER_DAY)
}

/// The first millisecond of `day`.
pub fn day_start_ms(day: i64) -> i64 {
    day * MS_PER_DAY
}

/// `YYYY-MM-DD.jsonl` for a day.
pub fn file_name(day: i64) -> String {
    let (y, m, d) = hoop_meter::timefmt::civil_from_days(day);
    format!("{y:04}-{m:02}-{d:02}.jsonl")
}

/// The day of a journal file name (`None`: not a day file).
pub fn day_of_name(name: &str) -> Option<i64> {
    let stem = name.strip_suffix(".jsonl")?;
    let b = stem.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let y: i64 = stem[0..4].parse().ok()?;
    let m: u32 = stem[5..7].parse().ok()?;
    let d: u32 = stem[8..10].parse().ok()?;
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return None;
    }
    let day = hoop_meter::timefmt::days_from_civil(y, m, d);
    (file_name(day) == name).then_some(day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_round_trip_in_field_order_and_name_no_body() {
        let cases: Vec<(Line, &str)> = vec![
            (
                Line::msg(
                    5,
                    3,
                    57,
                    Ev::Seen {
                        how: How::PageBack,
                        created: 9,
                    },
                ),
                r#"{"t":5,"room":3,"msg":57,"ev":"seen","how":"page-back","created":9}"#,
            ),
            (
                Line::msg(
                    5,
                    3,
                    57,
                    Ev::Context {
                        why: Why::NotMentioned,
                        me: Some("bolt".into()),
                    },
                ),
                r#"{"t":5,"room":3,"msg":57,"ev":"context","why":"not-mentioned","me":"bolt"}"#,
            ),
            (
                Line::msg(
                    5,
                    3,
                    57,
                    Ev::Answered {
                        by: 58,
                        turn: Some(12),
                    },
                ),
                r#"{"t":5,"room":3,"msg":57,"ev":"answered","by":58,"turn":12}"#,
            ),
            (
                Line::msg(
                    5,
                    3,
                    57,
                    Ev::OfferedAgain {
                        why: AgainWhy::Silent,
                        turn: 2,
                        offer: Some(1),
                        retry_in_ms: Some(40_000),
                    },
                ),
                r#"{"t":5,"room":3,"msg":57,"ev":"offered-again","why":"silent","turn":2,"offer":1,"retry_in_ms":40000}"#,
            ),
            (
                Line {
                    t: 5,
                    room: None,
                    msg: None,
                    ev: Ev::TurnEnd {
                        turn: 12,
                        class: "ok".into(),
                        ms: 4100,
                        tokens: Tokens {
                            tokens_in: Some(10),
                            tokens_cached_in: None,
                            tokens_out: Some(3),
                        },
                    },
                },
                r#"{"t":5,"ev":"turn-end","turn":12,"class":"ok","ms":4100,"tokens_in":10,"tokens_out":3}"#,
            ),
        ];
        for (line, want) in cases {
            let bytes = line.to_bytes();
            assert_eq!(std::str::from_utf8(&bytes).unwrap(), format!("{want}\n"));
            assert_eq!(parse(bytes.trim_ascii_end()), Some(line), "{want}");
        }
        assert_eq!(parse(br#"{"t":5,"ev":"no-such-event"}"#), None);
        assert_eq!(parse(b"{broken"), None);
    }

    #[test]
    fn day_files_are_named_by_the_utc_day() {
        let cases = [
            (0, "1970-01-01.jsonl"),
            (MS_PER_DAY - 1, "1970-01-01.jsonl"),
            (1_796_428_800_000, "2026-12-05.jsonl"),
            (-1, "1969-12-31.jsonl"),
        ];
        for (t, name) in cases {
            assert_eq!(file_name(day_of(t)), name, "{t}");
            assert_eq!(day_of_name(name), Some(day_of(t)), "{name}");
        }
        for bad in [
            "2026-12-05.json",
            "2026-13-05.jsonl",
            "2026-02-30.jsonl",
            "x.jsonl",
            "2026-1-05.jsonl",
        ] {
            assert_eq!(day_of_name(bad), None, "{bad}");
        }
    }
}
