//! The cycle: collects kicks, debounces them (a burst becomes one round),
//! fires the alarm (a full pull even without an event, catching whatever the
//! WebSocket missed), and runs rounds one at a time. A busy turn lock retries
//! in 60 s; a failed turn waits out its backoff; a round that could not reach
//! the backend, and a room that could not be read, wait for the next kick or
//! alarm ([`after_round`] decides, a pure function).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc::UnboundedReceiver;
use tokio::time::{Instant, sleep_until};

use super::Kick;
use crate::agent::Agent;
use crate::config::Timings;
use crate::plan::RoomFailures;
use crate::policy::Streak;
use crate::round::{self, RoundCtx, RoundOutcome, RoundReport, Targets};
use crate::state::{RoundResult, StatusBoard};

fn add(t: &mut Targets, k: Kick) {
    match k {
        Kick::All => t.all = true,
        Kick::Conversation(c) => {
            t.conversations.insert(c);
        }
    }
}

/// Collect kicks until `until`; false when the sender is gone.
async fn collect_until(rx: &mut UnboundedReceiver<Kick>, t: &mut Targets, until: Instant) -> bool {
    loop {
        tokio::select! {
            k = rx.recv() => match k {
                Some(k) => add(t, k),
                None => return false,
            },
            _ = sleep_until(until) => return true,
        }
    }
}

/// What the cycle does after a round with its targets.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Next {
    /// Run again with these (merged into the pending targets) ...
    pub retry: Targets,
    /// ... but not before this much time has passed.
    pub wait: Option<Duration>,
    /// Kept aside until the next kick or alarm.
    pub park: Targets,
}

/// The cycle's rule after a round: a busy turn lock retries every target
/// after `turn_lock_retry`; a turn with a backoff retries every target after
/// it; a round that could not be planned parks every target; rooms that
/// could not be read are parked in every case.
pub fn after_round(timings: &Timings, targets: Targets, report: &RoundReport) -> Next {
    let mut next = Next {
        park: report.failed_rooms.clone(),
        ..Next::default()
    };
    match &report.outcome {
        RoundOutcome::Quiet => {}
        RoundOutcome::Busy => {
            next.retry = targets;
            next.wait = Some(timings.turn_lock_retry);
        }
        RoundOutcome::Turn { after, .. } => {
            if let Some(b) = after.backoff {
                next.retry = targets;
                next.wait = Some(b);
            }
        }
        RoundOutcome::Error(_) => next.park.merge(targets),
    }
    next
}

pub async fn run<A: Agent>(
    ctx: Arc<RoundCtx>,
    agent: Arc<tokio::sync::Mutex<A>>,
    mut rx: UnboundedReceiver<Kick>,
    board: StatusBoard,
) {
    let timings = ctx.cfg.timings.clone();
    // The first round pulls everything.
    let mut pending = Targets {
        all: true,
        ..Default::default()
    };
    // Targets of a round that could not reach the backend: retried with the
    // next kick or alarm, not in a tight loop.
    let mut parked = Targets::default();
    let mut not_before: Option<Instant> = None;
    let mut next_alarm = Instant::now() + timings.alarm;
    let mut streak = Streak::default();
    let mut rooms = RoomFailures::default();
    loop {
        if pending.is_empty() {
            tokio::select! {
                k = rx.recv() => match k {
                    Some(k) => add(&mut pending, k),
                    None => return,
                },
                _ = sleep_until(next_alarm) => {
                    tracing::debug!("⏰ alarm: full pull");
                    pending.all = true;
                }
            }
            pending.merge(std::mem::take(&mut parked));
            // Debounce: whatever rings within the window joins this round.
            if !collect_until(&mut rx, &mut pending, Instant::now() + timings.debounce).await {
                return;
            }
        }
        if let Some(nb) = not_before.take()
            && !collect_until(&mut rx, &mut pending, nb).await
        {
            return;
        }
        let now = Instant::now();
        if now >= next_alarm {
            pending.all = true;
        }
        if pending.all {
            next_alarm = now + timings.alarm;
        }
        let targets = std::mem::take(&mut pending);
        tracing::debug!(?targets, "round");
        let report = round::run(&ctx, &agent, &targets, &mut streak, &mut rooms).await;
        let next = after_round(&timings, targets, &report);
        if let Some(w) = next.wait {
            if matches!(report.outcome, RoundOutcome::Turn { .. }) {
                tracing::info!(
                    secs = w.as_secs_f64(),
                    "round will be retried after backoff"
                );
            }
            not_before = Some(Instant::now() + w);
        }
        pending.merge(next.retry);
        parked.merge(next.park);
        board.update(|s| {
            s.last_round_at = Some(hoop_core::clock::now_unix());
            s.last_round_result = Some(RoundResult::of(&report.outcome));
            s.consecutive_failures = streak.failures;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{AfterTurn, TurnClass};

    fn t(all: bool, rooms: &[i64]) -> Targets {
        Targets {
            all,
            conversations: rooms.iter().copied().collect(),
        }
    }

    #[test]
    fn after_round_table() {
        let timings = Timings::default();
        let turn = |backoff: Option<Duration>| RoundOutcome::Turn {
            class: if backoff.is_some() {
                TurnClass::Failed
            } else {
                TurnClass::Ok
            },
            after: AfterTurn {
                commit: backoff.is_none(),
                backoff,
                post_failure_notice: false,
                obituary_cause: None,
            },
        };
        let b = Duration::from_secs(300);
        // (outcome, failed rooms, want retry, want wait, want park, why)
        type Case = (
            RoundOutcome,
            Targets,
            Targets,
            Option<Duration>,
            Targets,
            &'static str,
        );
        let cases: Vec<Case> = vec![
            (
                RoundOutcome::Quiet,
                t(false, &[]),
                t(false, &[]),
                None,
                t(false, &[]),
                "quiet: nothing more",
            ),
            (
                RoundOutcome::Busy,
                t(false, &[]),
                t(false, &[1, 2]),
                Some(timings.turn_lock_retry),
                t(false, &[]),
                "busy lock: every target again after the retry delay",
            ),
            (
                turn(Some(b)),
                t(false, &[]),
                t(false, &[1, 2]),
                Some(b),
                t(false, &[]),
                "failed turn: every target again after its backoff",
            ),
            (
                turn(None),
                t(false, &[]),
                t(false, &[]),
                None,
                t(false, &[]),
                "good turn: done",
            ),
            (
                RoundOutcome::Error("down".into()),
                t(false, &[]),
                t(false, &[]),
                None,
                t(false, &[1, 2]),
                "not planned: parked until the next kick or alarm",
            ),
            (
                turn(None),
                t(false, &[2]),
                t(false, &[]),
                None,
                t(false, &[2]),
                "a room that could not be read is parked, the others went on",
            ),
            (
                RoundOutcome::Busy,
                t(false, &[2]),
                t(false, &[1, 2]),
                Some(timings.turn_lock_retry),
                t(false, &[2]),
                "busy and a failed room: both",
            ),
        ];
        for (outcome, failed_rooms, retry, wait, park, why) in cases {
            let report = RoundReport {
                outcome,
                failed_rooms,
            };
            let next = after_round(&timings, t(false, &[1, 2]), &report);
            assert_eq!(next.retry, retry, "{why}");
            assert_eq!(next.wait, wait, "{why}");
            assert_eq!(next.park, park, "{why}");
        }
    }

    #[test]
    fn targets_merge_keeps_every_room_and_all() {
        let mut a = t(false, &[1]);
        a.merge(t(false, &[2]));
        assert_eq!(a, t(false, &[1, 2]));
        a.merge(t(true, &[]));
        assert_eq!(a, t(true, &[1, 2]));
        assert!(!a.is_empty());
        assert!(t(false, &[]).is_empty());
    }
}
