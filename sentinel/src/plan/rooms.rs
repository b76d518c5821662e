//! Each room stands alone (SPEC §2: "Backoff and the failure note are per
//! room: one quiet or failing room never delays another"). [`RoomBook`]
//! remembers, per room and in memory, why it waits and until when: a pull
//! that failed (logged once per cause and [`ROOM_FAILURE_LOG_EVERY`]), a
//! reply that failed (its own backoff; the second in a row posts the
//! failure note in that room only), a message left unanswered (offered
//! again after a pause). Pure: the round passes `now` in.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use hoop_api::types::ConversationId;
use hoop_core::limits::FAILURE_NOTICE_AT;

use crate::constants::ROOM_FAILURE_LOG_EVERY;

#[derive(Debug, Clone, Default)]
pub struct RoomBook(BTreeMap<ConversationId, Room>);

#[derive(Debug, Clone, Default)]
struct Room {
    /// Pulls that failed in a row.
    read_failures: u32,
    /// Rounds in a row whose reply failed.
    reply_failures: u32,
    retry_at: Option<Instant>,
    /// When each cause of a failed pull was last logged.
    logged: BTreeMap<String, Instant>,
}

/// What to do after a room's reply failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplyFailure {
    /// Failed replies in a row, this one included.
    pub nth: u32,
    /// Wait this long before offering it again.
    pub wait: Duration,
    /// Post the failure note in this room (the second failure in a row).
    pub post_note: bool,
}

fn step(backoff: &[Duration], n: u32) -> Duration {
    let i = (n.max(1) as usize - 1).min(backoff.len().saturating_sub(1));
    backoff.get(i).copied().unwrap_or_default()
}

impl RoomBook {
    /// May this room be pulled now?
    pub fn ready(&self, room: ConversationId, now: Instant) -> bool {
        self.retry_at(room).is_none_or(|t| now >= t)
    }

    /// When the room may be pulled again, if it waits.
    pub fn retry_at(&self, room: ConversationId) -> Option<Instant> {
        self.0.get(&room).and_then(|r| r.retry_at)
    }

    /// The most failed rounds in a row of any room (for the status file).
    pub fn worst_failures(&self) -> u32 {
        self.0
            .values()
            .map(|r| r.reply_failures.max(r.read_failures))
            .max()
            .unwrap_or(0)
    }

    /// Record that `room` could not be read for `cause`; returns whether to
    /// log it (the first time this cause is seen, or an hour after it was
    /// last logged).
    pub fn read_failed(
        &mut self,
        room: ConversationId,
        cause: &str,
        backoff: &[Duration],
        now: Instant,
    ) -> bool {
        let r = self.0.entry(room).or_default();
        r.read_failures += 1;
        r.retry_at = Some(now + step(backoff, r.read_failures));
        let due = r
            .logged
            .get(cause)
            .is_none_or(|t| now.duration_since(*t) >= ROOM_FAILURE_LOG_EVERY);
        if due {
            r.logged.insert(cause.to_string(), now);
        }
        due
    }

    /// The room was read; returns how many failed pulls in a row it had.
    pub fn read_ok(&mut self, room: ConversationId) -> Option<u32> {
        let r = self.0.get_mut(&room)?;
        let n = std::mem::take(&mut r.read_failures);
        r.logged.clear();
        (n > 0).then_some(n)
    }

    /// The room's reply failed.
    pub fn reply_failed(
        &mut self,
        room: ConversationId,
        backoff: &[Duration],
        now: Instant,
    ) -> ReplyFailure {
        let r = self.0.entry(room).or_default();
        r.reply_failures += 1;
        let wait = step(backoff, r.reply_failures);
        r.retry_at = Some(now + wait);
        ReplyFailure {
            nth: r.reply_failures,
            wait,
            post_note: r.reply_failures == FAILURE_NOTICE_AT,
        }
    }

    /// The agent left the room's work unanswered for the `offer`-th time:
    /// it waits the `offer`-th step of the backoff before it is offered
    /// again (never a failure: no note, the failure count stays).
    pub fn silent(
        &mut self,
        room: ConversationId,
        offer: u32,
        backoff: &[Duration],
        now: Instant,
    ) -> Duration {
        let r = self.0.entry(room).or_default();
        let wait = step(backoff, offer);
        r.retry_at = Some(now + wait);
        wait
    }

    /// The room's turn went through: its reply failures end, it waits no more.
    pub fn done(&mut self, room: ConversationId) {
        if let Some(r) = self.0.get_mut(&room) {
            r.reply_failures = 0;
            r.retry_at = None;
        }
    }

    /// The room's reply failures in a row.
    pub fn reply_failures(&self, room: ConversationId) -> u32 {
        self.0.get(&room).map_or(0, |r| r.reply_failures)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn steps() -> [Duration; 3] {
        [
            Duration::from_secs(60),
            Duration::from_secs(300),
            Duration::from_secs(1800),
        ]
    }

    #[test]
    fn a_failing_pull_backs_off_alone_and_logs_once_per_cause_and_hour() {
        let t0 = Instant::now();
        let mut f = RoomBook::default();
        // (seconds after t0, cause, want log, why)
        let cases: &[(u64, &str, bool, &str)] = &[
            (0, "http 500", true, "first failure: logged, 60 s backoff"),
            (
                61,
                "http 500",
                false,
                "same cause within the hour: silent, 300 s",
            ),
            (400, "transport", true, "a new cause is logged"),
            (
                2500,
                "http 500",
                false,
                "still within the hour of its first log",
            ),
            (3700, "http 500", true, "an hour later: logged again"),
        ];
        for (at, cause, log, why) in cases {
            let now = t0 + Duration::from_secs(*at);
            assert_eq!(f.read_failed(1, cause, &steps(), now), *log, "{why}");
            assert!(!f.ready(1, now + Duration::from_secs(1)), "{why}");
            assert!(f.ready(2, now), "another room is never held back: {why}");
        }
        assert!(
            f.ready(1, t0 + Duration::from_secs(3700 + 1800)),
            "the last step holds"
        );
        assert_eq!(f.read_ok(1), Some(5));
        assert_eq!(f.read_ok(1), None);
    }

    #[test]
    fn reply_failures_are_per_room_and_only_the_second_posts_the_note() {
        let t0 = Instant::now();
        let mut f = RoomBook::default();
        let first = f.reply_failed(1, &steps(), t0);
        assert_eq!(
            (first.nth, first.wait, first.post_note),
            (1, steps()[0], false)
        );
        assert!(f.ready(2, t0), "room 2 never waits on room 1");
        let other = f.reply_failed(2, &steps(), t0);
        assert!(!other.post_note, "room 2's first failure is its own first");
        let second = f.reply_failed(1, &steps(), t0);
        assert_eq!(
            (second.nth, second.wait, second.post_note),
            (2, steps()[1], true)
        );
        let third = f.reply_failed(1, &steps(), t0);
        assert!(!third.post_note, "the note is posted once per streak");
        assert_eq!(f.worst_failures(), 3);
        f.done(1);
        assert!(f.ready(1, t0));
        assert_eq!(f.reply_failures(1), 0);
        assert_eq!(f.reply_failed(1, &steps(), t0).nth, 1, "a new streak");
    }

    #[test]
    fn silence_waits_but_is_not_a_failure() {
        let t0 = Instant::now();
        let mut f = RoomBook::default();
        assert_eq!(f.silent(1, 1, &steps(), t0), steps()[0]);
        assert!(!f.ready(1, t0) && f.ready(1, t0 + steps()[0]));
        assert_eq!(f.silent(1, 2, &steps(), t0), steps()[1]);
        assert_eq!(f.reply_failures(1), 0);
        assert_eq!(f.worst_failures(), 0);
    }
}
