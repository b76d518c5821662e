//! Pure policy: what a turn's outcome means (commit, retry when, post what),
//! the obituary's repeat limit, the heartbeat's cadence and failure-log
//! cadence, and the WebSocket reconnect backoff. The daemon only carries out
//! what these functions decide.

use std::time::Duration;

use hoop_core::limits::{FAILURE_NOTICE_AT, HEARTBEAT_FLOOR, HEARTBEAT_LOG_AT, OBITUARY_REPEAT};

use crate::config::Timings;

/// A turn's result as the policy sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TurnClass {
    /// Exit 0 and no error result: commit the cursors.
    Ok,
    /// The turn failed (error result, crash, garbage output).
    Failed,
    /// The turn ran out of time (exit 124/137/143): a failure, not death.
    Timeout,
    /// The account's login is dead until a person logs in again.
    AuthDead { cause: String },
    /// A usage/session limit: neither death nor failure; nothing is posted.
    Limit,
}

/// Consecutive bad turns so far. "In a row" means with no turn of another
/// kind between: a dead-login or limited turn ends a failure streak, and a
/// failure ends a quiet streak, so "still online" is posted only for two
/// failed turns that follow each other.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Streak {
    /// Failed or timed-out turns in a row (drives the notice and backoff).
    pub failures: u32,
    /// Dead-login or limited turns in a row (drive the backoff only).
    pub quiet: u32,
}

impl Streak {
    /// The next round repeats one that did not finish.
    pub fn is_rerun(&self) -> bool {
        self.failures > 0 || self.quiet > 0
    }
}

/// What to do after a turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AfterTurn {
    /// Commit the round's cursors.
    pub commit: bool,
    /// Run no round before this much time has passed.
    pub backoff: Option<Duration>,
    /// Post the "still online" failure note (kind=failure).
    pub post_failure_notice: bool,
    /// Post the obituary for this cause, if its repeat limit allows.
    pub obituary_cause: Option<String>,
}

/// The backoff after the `n`-th consecutive bad turn (n ≥ 1): 60 / 300 /
/// 1800 s by default, staying at the last step.
pub fn failure_backoff(timings: &Timings, n: u32) -> Duration {
    let steps = &timings.failure_backoff;
    steps[(n.max(1) as usize - 1).min(steps.len() - 1)]
}

/// Apply a turn's outcome to the streak and decide.
pub fn after_turn(timings: &Timings, streak: &mut Streak, class: &TurnClass) -> AfterTurn {
    match class {
        TurnClass::Ok => {
            *streak = Streak::default();
            AfterTurn {
                commit: true,
                backoff: None,
                post_failure_notice: false,
                obituary_cause: None,
            }
        }
        TurnClass::Failed | TurnClass::Timeout => {
            streak.quiet = 0;
            streak.failures += 1;
            AfterTurn {
                commit: false,
                backoff: Some(failure_backoff(timings, streak.failures)),
                post_failure_notice: streak.failures == FAILURE_NOTICE_AT,
                obituary_cause: None,
            }
        }
        TurnClass::AuthDead { cause } => {
            streak.failures = 0;
            streak.quiet += 1;
            AfterTurn {
                commit: false,
                backoff: Some(failure_backoff(timings, streak.quiet)),
                post_failure_notice: false,
                obituary_cause: Some(cause.clone()),
            }
        }
        TurnClass::Limit => {
            streak.failures = 0;
            streak.quiet += 1;
            AfterTurn {
                commit: false,
                backoff: Some(failure_backoff(timings, streak.quiet)),
                post_failure_notice: false,
                obituary_cause: None,
            }
        }
    }
}

/// A message round's account-wide part. A usage limit or a dead login
/// stops every room (the account cannot answer anywhere): that is
/// [`after_turn`]'s account-wide backoff and obituary. A failed or
/// timed-out turn is judged per room (`plan::rooms`: each room its own
/// backoff and its own failure note), so here it only ends a streak of
/// limits and sets nothing for all rooms.
pub fn account_after_turn(timings: &Timings, streak: &mut Streak, class: &TurnClass) -> AfterTurn {
    match class {
        TurnClass::Ok | TurnClass::Failed | TurnClass::Timeout => {
            streak.quiet = 0;
            AfterTurn {
                commit: *class == TurnClass::Ok,
                backoff: None,
                post_failure_notice: false,
                obituary_cause: None,
            }
        }
        TurnClass::AuthDead { .. } | TurnClass::Limit => after_turn(timings, streak, class),
    }
}

/// May an obituary for a cause last posted at `last` (Unix seconds) be
/// posted again at `now`? At most once per [`OBITUARY_REPEAT`] per cause.
pub fn obituary_due(last: Option<i64>, now: i64) -> bool {
    last.is_none_or(|t| now.saturating_sub(t) >= OBITUARY_REPEAT.as_secs() as i64 || now < t)
}

/// The wait before the next heartbeat: what the backend asked for, never
/// faster than the floor.
pub fn heartbeat_delay(next_beat_sec: u64) -> Duration {
    Duration::from_secs(next_beat_sec).max(HEARTBEAT_FLOOR)
}

/// Log the `n`-th consecutive heartbeat failure? Only the 1st, 10th, 100th.
pub fn log_heartbeat_failure(n: u64) -> bool {
    HEARTBEAT_LOG_AT.contains(&n)
}

/// The backoff to carry after a connection that stayed up `stayed_up`:
/// only a connection that lived at least `stable` resets it (`None`), so a
/// server that accepts and drops at once does not get a login every
/// second for ever.
pub fn backoff_after_drop(
    prev: Option<Duration>,
    stayed_up: Duration,
    stable: Duration,
) -> Option<Duration> {
    if stayed_up >= stable { None } else { prev }
}

/// May a notice of a failed login with this `cause`, last told at `last`
/// (Unix seconds), be told again at `now`? Once per cause and hour (the
/// obituary's cadence).
pub fn login_notice_due(last: Option<i64>, now: i64) -> bool {
    obituary_due(last, now)
}

/// The WebSocket reconnect wait after `prev` (None: the first failure):
/// starts at the floor and doubles up to the ceiling.
pub fn ws_backoff(timings: &Timings, prev: Option<Duration>) -> Duration {
    match prev {
        None => timings.ws_backoff_start,
        Some(p) => (p * 2).min(timings.ws_backoff_max),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_stable_connection_resets_the_backoff() {
        let s = Duration::from_secs;
        // (prev, stayed up, want)
        let cases: &[(Option<u64>, u64, Option<u64>)] = &[
            (Some(8), 0, Some(8)),
            (Some(8), 59, Some(8)),
            (Some(8), 60, None),
            (Some(8), 3_600, None),
            (None, 0, None),
        ];
        for (prev, up, want) in cases {
            assert_eq!(
                backoff_after_drop(prev.map(s), s(*up), s(60)),
                want.map(s),
                "{prev:?} {up}"
            );
        }
        // Accept-then-drop for ever: the wait keeps growing to the ceiling.
        let t = Timings::default();
        let mut b = None;
        for _ in 0..10 {
            b = backoff_after_drop(b, Duration::ZERO, t.ws_stable_after);
            b = Some(ws_backoff(&t, b));
        }
        assert_eq!(b, Some(t.ws_backoff_max));
    }

    #[test]
    fn a_login_notice_is_told_once_per_cause_and_hour() {
        let cases: &[(Option<i64>, i64, bool)] = &[
            (None, 100, true),
            (Some(100), 101, false),
            (Some(100), 3_699, false),
            (Some(100), 3_700, true),
        ];
        for (last, now, want) in cases {
            assert_eq!(login_notice_due(*last, *now), *want, "{last:?} {now}");
        }
    }

    fn t() -> Timings {
        Timings::default()
    }

    #[test]
    fn failures_back_off_and_only_the_second_posts() {
        let mut s = Streak::default();
        let want = [(60, false), (300, true), (1800, false), (1800, false)];
        for (i, (secs, notice)) in want.into_iter().enumerate() {
            let a = after_turn(&t(), &mut s, &TurnClass::Failed);
            assert!(!a.commit, "failure {i}");
            assert_eq!(a.backoff, Some(Duration::from_secs(secs)), "failure {i}");
            assert_eq!(a.post_failure_notice, notice, "failure {i}");
        }
        let a = after_turn(&t(), &mut s, &TurnClass::Ok);
        assert!(a.commit);
        assert_eq!(s, Streak::default());
        // After a success the count starts again: the next second failure posts again.
        assert!(!after_turn(&t(), &mut s, &TurnClass::Timeout).post_failure_notice);
        assert!(after_turn(&t(), &mut s, &TurnClass::Timeout).post_failure_notice);
    }

    #[test]
    fn outcome_table() {
        // (class, commit, notice, obituary)
        let dead = TurnClass::AuthDead {
            cause: "oauth".into(),
        };
        let cases = [
            (TurnClass::Ok, true, false, None),
            (TurnClass::Failed, false, false, None),
            (TurnClass::Timeout, false, false, None),
            (dead, false, false, Some("oauth".to_string())),
            (TurnClass::Limit, false, false, None),
        ];
        for (class, commit, notice, obit) in cases {
            let mut s = Streak::default();
            let a = after_turn(&t(), &mut s, &class);
            assert_eq!(a.commit, commit, "{class:?}");
            assert_eq!(a.post_failure_notice, notice, "{class:?}");
            assert_eq!(a.obituary_cause, obit, "{class:?}");
            assert_eq!(a.backoff.is_some(), !commit, "{class:?}");
        }
    }

    /// Sequences of turns: after each, the streak and whether the note is
    /// posted. Only two failures with nothing between them post it.
    #[test]
    fn failures_in_a_row_means_nothing_between_them() {
        use TurnClass::*;
        let dead = || AuthDead {
            cause: "please run /login".into(),
        };
        // (turns, notice after each)
        let cases: Vec<(Vec<TurnClass>, Vec<bool>)> = vec![
            (vec![Failed, Failed], vec![false, true]),
            (vec![Failed, Limit, Failed], vec![false, false, false]),
            (vec![Failed, dead(), Failed], vec![false, false, false]),
            (
                vec![Timeout, Limit, Timeout, Timeout],
                vec![false, false, false, true],
            ),
            (vec![Failed, Ok, Failed], vec![false, false, false]),
            (vec![Limit, Failed, Failed], vec![false, false, true]),
        ];
        for (turns, notices) in cases {
            let mut s = Streak::default();
            let got: Vec<bool> = turns
                .iter()
                .map(|c| after_turn(&t(), &mut s, c).post_failure_notice)
                .collect();
            assert_eq!(got, notices, "{turns:?}");
        }
        // The backoff follows the streak of the turn's own kind.
        let mut s = Streak::default();
        after_turn(&t(), &mut s, &Failed);
        after_turn(&t(), &mut s, &Failed);
        let a = after_turn(&t(), &mut s, &Limit);
        assert_eq!(
            s,
            Streak {
                failures: 0,
                quiet: 1
            }
        );
        assert_eq!(a.backoff, Some(Duration::from_secs(60)));
        let a = after_turn(&t(), &mut s, &Failed);
        assert_eq!(
            s,
            Streak {
                failures: 1,
                quiet: 0
            }
        );
        assert_eq!(a.backoff, Some(Duration::from_secs(60)));
    }

    /// For message rounds only a limit or a dead login holds every room;
    /// a failed or timed-out turn holds none (its rooms wait on their own).
    #[test]
    fn only_limits_and_death_hold_every_room() {
        let dead = TurnClass::AuthDead {
            cause: "oauth".into(),
        };
        // (class, account-wide backoff, obituary)
        let cases = [
            (TurnClass::Ok, None, None),
            (TurnClass::Failed, None, None),
            (TurnClass::Timeout, None, None),
            (TurnClass::Limit, Some(60), None),
            (dead, Some(60), Some("oauth".to_string())),
        ];
        for (class, backoff, obit) in cases {
            let mut s = Streak::default();
            let a = account_after_turn(&t(), &mut s, &class);
            assert_eq!(a.backoff, backoff.map(Duration::from_secs), "{class:?}");
            assert_eq!(a.obituary_cause, obit, "{class:?}");
            assert!(!a.post_failure_notice, "{class:?}: the note is per room");
        }
        // A limit streak grows and a failure ends it.
        let mut s = Streak::default();
        account_after_turn(&t(), &mut s, &TurnClass::Limit);
        let a = account_after_turn(&t(), &mut s, &TurnClass::Limit);
        assert_eq!(a.backoff, Some(Duration::from_secs(300)));
        account_after_turn(&t(), &mut s, &TurnClass::Failed);
        assert!(!s.is_rerun());
    }

    #[test]
    fn limits_and_death_never_post_the_failure_note() {
        let mut s = Streak::default();
        for _ in 0..5 {
            assert!(!after_turn(&t(), &mut s, &TurnClass::Limit).post_failure_notice);
        }
        assert_eq!(s.failures, 0);
        assert!(s.is_rerun());
    }

    #[test]
    fn obituary_repeat_table() {
        let cases = [
            (None, 100, true),
            (Some(100), 100, false),
            (Some(100), 100 + 3599, false),
            (Some(100), 100 + 3600, true),
            (Some(10_000), 100, true), // the clock went backwards: do not stay silent forever
        ];
        for (last, now, want) in cases {
            assert_eq!(obituary_due(last, now), want, "{last:?} {now}");
        }
    }

    #[test]
    fn heartbeat_cadence() {
        assert_eq!(heartbeat_delay(60), Duration::from_secs(60));
        assert_eq!(heartbeat_delay(1), Duration::from_secs(15));
        assert_eq!(heartbeat_delay(0), Duration::from_secs(15));
        assert_eq!(heartbeat_delay(120), Duration::from_secs(120));
        let logged: Vec<u64> = (1..=200).filter(|n| log_heartbeat_failure(*n)).collect();
        assert_eq!(logged, vec![1, 10, 100]);
    }

    #[test]
    fn ws_backoff_doubles_to_the_ceiling() {
        let mut prev = None;
        let mut seen = vec![];
        for _ in 0..9 {
            let d = ws_backoff(&t(), prev);
            seen.push(d.as_secs());
            prev = Some(d);
        }
        assert_eq!(seen, vec![1, 2, 4, 8, 16, 32, 60, 60, 60]);
    }
}
