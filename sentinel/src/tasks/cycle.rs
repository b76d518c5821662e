//! The cycle: collects kicks, debounces them (a burst becomes one round),
//! fires the alarm (a full pull even without an event, catching whatever the
//! WebSocket missed), and runs rounds one at a time. What comes after a
//! round is [`after_round`], a pure function: a busy turn lock retries in
//! 60 s; a usage limit or a dead login holds every room (the account cannot
//! answer anywhere); a room that failed, stayed silent, could not be read
//! or still waits out its backoff is looked at again at ITS own time — one
//! room never delays another; a round that could not reach the backend at
//! all waits for the next kick or alarm.
//!
//! Patrol fires ([`super::patrol`]) queue beside the kicks. Pending message
//! work always goes first ([`pick`]), and kicks that arrived during a turn
//! are collected before the next pick, so a message waits behind at most
//! the one patrol turn already running. A failed patrol turn holds only the
//! patrols (it has no room); a usage limit or a dead login in either kind
//! of round holds both.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use hoop_api::types::ConversationId;

use tokio::sync::mpsc::UnboundedReceiver;
use tokio::time::{Instant, sleep_until};

use super::Kick;
use super::patrol::{InFlight, PatrolFire};
use crate::agent::Agent;
use crate::config::Timings;
use crate::journal::How;
use crate::plan::RoomBook;
use crate::policy::{Streak, TurnClass};
use crate::round::{self, RoundCtx, RoundOutcome, RoundReport, Targets};
use crate::state::{RoundResult, StatusBoard};

fn add(t: &mut Targets, k: Kick) {
    match k {
        Kick::All => t.ring_all(How::Recheck),
        Kick::Conversation(c) => t.ring(c, How::Websocket),
    }
}

/// Patrol fires, when the home declares patrols.
pub struct PatrolInbox {
    pub rx: UnboundedReceiver<PatrolFire>,
    pub in_flight: InFlight,
}

/// What the cycle waits on: kicks, and patrol fires if any.
struct Inbox {
    kicks: UnboundedReceiver<Kick>,
    patrols: Option<UnboundedReceiver<PatrolFire>>,
}

enum Got {
    Kick(Kick),
    Patrol(PatrolFire),
    /// The kick sender is gone: the daemon is stopping.
    Closed,
}

async fn next_fire(rx: &mut Option<UnboundedReceiver<PatrolFire>>) -> Option<PatrolFire> {
    match rx {
        Some(r) => r.recv().await,
        None => std::future::pending().await,
    }
}

impl Inbox {
    async fn recv(&mut self) -> Got {
        loop {
            // Kicks first: when both are ready, message work is filed first.
            tokio::select! {
                biased;
                k = self.kicks.recv() => return k.map_or(Got::Closed, Got::Kick),
                f = next_fire(&mut self.patrols) => match f {
                    Some(f) => return Got::Patrol(f),
                    None => self.patrols = None,
                },
            }
        }
    }

    /// Take whatever already arrived, without waiting; false when closed.
    fn drain(&mut self, t: &mut Targets, q: &mut VecDeque<PatrolFire>) -> bool {
        use tokio::sync::mpsc::error::TryRecvError;
        loop {
            match self.kicks.try_recv() {
                Ok(k) => add(t, k),
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => return false,
            }
        }
        if let Some(rx) = &mut self.patrols {
            while let Ok(f) = rx.try_recv() {
                q.push_back(f);
            }
        }
        true
    }
}

/// File what arrived; false when closed.
fn take(got: Got, t: &mut Targets, q: &mut VecDeque<PatrolFire>) -> bool {
    match got {
        Got::Kick(k) => add(t, k),
        Got::Patrol(f) => q.push_back(f),
        Got::Closed => return false,
    }
    true
}

/// Collect kicks and fires until `until`; false when the sender is gone.
async fn collect_until(
    inbox: &mut Inbox,
    t: &mut Targets,
    q: &mut VecDeque<PatrolFire>,
    until: Instant,
) -> bool {
    loop {
        tokio::select! {
            g = inbox.recv() => if !take(g, t, q) { return false },
            _ = sleep_until(until) => return true,
        }
    }
}

/// Which round runs next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Job {
    Messages,
    Patrol,
    Nothing,
}

/// Take what already arrived (kicks that rang during the last turn), then
/// [`pick`]; `None` when the kick sender is gone.
/// `patrols_held`: the patrols wait out a backoff of their own.
fn next_job(
    inbox: &mut Inbox,
    pending: &mut Targets,
    queue: &mut VecDeque<PatrolFire>,
    patrols_held: bool,
) -> Option<Job> {
    if !inbox.drain(pending, queue) {
        return None;
    }
    Some(pick(
        !pending.is_empty(),
        !queue.is_empty() && !patrols_held,
    ))
}

/// Message work first, always; a patrol only when no message waits. With
/// the kicks collected before every pick, a message waits behind at most
/// the patrol turn already running.
pub fn pick(messages_pending: bool, patrols_queued: bool) -> Job {
    if messages_pending {
        Job::Messages
    } else if patrols_queued {
        Job::Patrol
    } else {
        Job::Nothing
    }
}

/// What the cycle does after a round with its targets.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Next {
    /// Run again with these (merged into the pending targets) ...
    pub retry: Targets,
    /// ... but not before this much time has passed (every room waits).
    pub wait: Option<Duration>,
    /// Kept aside until the next kick or alarm.
    pub park: Targets,
    /// Rooms looked at again at a time of their own.
    pub timers: BTreeMap<ConversationId, std::time::Instant>,
}

/// The cycle's rule after a round: a busy turn lock retries every target
/// after `turn_lock_retry`; an account-wide backoff (a usage limit, a dead
/// login) retries every target after it; a round that could not be planned
/// parks every target; every room the round set aside (a failed pull, a
/// failed or silent reply, a room in its backoff) gets a timer of its own.
pub fn after_round(timings: &Timings, targets: Targets, report: &RoundReport) -> Next {
    let mut next = Next {
        timers: report.retry_at.clone(),
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

/// After a patrol round: how long every round waits (a usage limit or a
/// dead login: the account cannot answer anywhere), and how long only the
/// patrols wait (a failed patrol turn: a patrol has no room, and no room
/// waits on it).
pub fn after_patrol(outcome: &RoundOutcome) -> (Option<Duration>, Option<Duration>) {
    match outcome {
        RoundOutcome::Turn { class, after } => match class {
            TurnClass::Limit | TurnClass::AuthDead { .. } => (after.backoff, None),
            _ => (None, after.backoff),
        },
        _ => (None, None),
    }
}

/// The earliest timer.
fn earliest(timers: &BTreeMap<ConversationId, std::time::Instant>) -> Option<Instant> {
    timers.values().min().map(|t| Instant::from_std(*t))
}

/// Move the rooms whose time has come from `timers` into `pending`.
fn due(timers: &mut BTreeMap<ConversationId, std::time::Instant>, pending: &mut Targets) {
    let now = std::time::Instant::now();
    let ready: Vec<ConversationId> = timers
        .iter()
        .filter(|(_, t)| **t <= now)
        .map(|(r, _)| *r)
        .collect();
    for r in ready {
        timers.remove(&r);
        pending.ring(r, How::Recheck);
    }
}

pub async fn run<A: Agent>(
    ctx: Arc<RoundCtx>,
    agent: Arc<tokio::sync::Mutex<A>>,
    rx: UnboundedReceiver<Kick>,
    patrols: Option<PatrolInbox>,
    board: StatusBoard,
) {
    let timings = ctx.cfg.timings.clone();
    let (patrol_rx, in_flight) = match patrols {
        Some(p) => (Some(p.rx), Some(p.in_flight)),
        None => (None, None),
    };
    let mut inbox = Inbox {
        kicks: rx,
        patrols: patrol_rx,
    };
    let mut queue: VecDeque<PatrolFire> = VecDeque::new();
    // The first round pulls everything.
    let mut pending = Targets::default();
    pending.ring_all(How::Startup);
    // Targets of a round that could not reach the backend: retried with the
    // next kick or alarm, not in a tight loop.
    let mut parked = Targets::default();
    // Every room waits until then (busy lock, usage limit, dead login).
    let mut not_before: Option<Instant> = None;
    // Only the patrols wait until then (a failed patrol turn).
    let mut patrols_not_before: Option<Instant> = None;
    // Rooms looked at again at their own time.
    let mut timers: BTreeMap<ConversationId, std::time::Instant> = BTreeMap::new();
    let mut next_alarm = Instant::now() + timings.alarm;
    let mut streak = Streak::default();
    let mut book = RoomBook::default();
    loop {
        // Whatever rang during the last turn is seen before the next pick.
        if !inbox.drain(&mut pending, &mut queue) {
            return;
        }
        due(&mut timers, &mut pending);
        let patrol_ready = |q: &VecDeque<PatrolFire>, nb: Option<Instant>| {
            !q.is_empty() && nb.is_none_or(|t| Instant::now() >= t)
        };
        if pending.is_empty() && !patrol_ready(&queue, patrols_not_before) {
            let timer = earliest(&timers);
            let patrol_at = patrols_not_before.filter(|_| !queue.is_empty());
            tokio::select! {
                g = inbox.recv() => if !take(g, &mut pending, &mut queue) { return },
                _ = sleep_until(next_alarm) => {
                    tracing::debug!("⏰ alarm: full pull");
                    pending.ring_all(How::Alarm);
                }
                _ = sleep_until(timer.unwrap_or(next_alarm)), if timer.is_some() => {
                    due(&mut timers, &mut pending);
                }
                _ = sleep_until(patrol_at.unwrap_or(next_alarm)), if patrol_at.is_some() => {}
            }
            if !pending.is_empty() {
                pending.merge(std::mem::take(&mut parked));
                // Debounce: whatever rings within the window joins this round.
                if !collect_until(
                    &mut inbox,
                    &mut pending,
                    &mut queue,
                    Instant::now() + timings.debounce,
                )
                .await
                {
                    return;
                }
            }
        }
        if let Some(nb) = not_before.take()
            && !collect_until(&mut inbox, &mut pending, &mut queue, nb).await
        {
            return;
        }
        let now = Instant::now();
        if now >= next_alarm && !pending.all {
            tracing::debug!("⏰ alarm: full pull");
            pending.ring_all(How::Alarm);
        }
        let held = patrols_not_before.is_some_and(|t| Instant::now() < t);
        let Some(job) = next_job(&mut inbox, &mut pending, &mut queue, held) else {
            return;
        };
        let (outcome, gave_up) = match job {
            Job::Nothing => continue,
            Job::Messages => {
                if pending.all {
                    next_alarm = now + timings.alarm;
                }
                let targets = std::mem::take(&mut pending);
                tracing::debug!(?targets, "round");
                let report = round::run(&ctx, &agent, &targets, &mut streak, &mut book).await;
                let next = after_round(&timings, targets, &report);
                if let Some(w) = next.wait {
                    if matches!(report.outcome, RoundOutcome::Turn { .. }) {
                        tracing::info!(
                            secs = w.as_secs_f64(),
                            "every room waits: the account cannot answer anywhere now"
                        );
                    }
                    not_before = Some(Instant::now() + w);
                }
                pending.merge(next.retry);
                parked.merge(next.park);
                timers.extend(next.timers);
                (report.outcome, report.gave_up)
            }
            Job::Patrol => {
                let Some(fire) = queue.pop_front() else {
                    continue;
                };
                let outcome = crate::patrol_round::run(&ctx, &agent, &fire, &mut streak).await;
                if let Some(f) = &in_flight {
                    f.lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .remove(&fire.name);
                }
                // A patrol round is never retried; its next tick offers it again.
                let (all, patrols) = after_patrol(&outcome);
                if let Some(b) = all {
                    tracing::info!(secs = b.as_secs_f64(), "every round waits out the backoff");
                    not_before = Some(Instant::now() + b);
                }
                if let Some(b) = patrols {
                    tracing::info!(
                        secs = b.as_secs_f64(),
                        "patrol rounds wait out the backoff; message rounds go on"
                    );
                    patrols_not_before = Some(Instant::now() + b);
                }
                (outcome, vec![])
            }
        };
        for g in &gave_up {
            tracing::warn!(
                conversation = g.conversation_id,
                message = g.message_id,
                "given up after {} offers without a reply or a pass",
                g.offers
            );
        }
        board.update(|s| {
            s.last_round_at = Some(hoop_core::clock::now_unix());
            s.last_round_result = Some(RoundResult::of(&outcome));
            s.consecutive_failures = book.worst_failures().max(streak.failures);
            s.add_gave_up(gave_up);
            s.journal_dropped = ctx.journal.dropped();
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
            ..Targets::default()
        }
    }

    /// What rang for a room, for the journal's `seen`: the room's own ring
    /// before the full pull's, and the first cause of each kept.
    #[test]
    fn what_rang_table() {
        let mut startup = Targets::default();
        startup.ring_all(How::Startup);
        let mut ws = Targets::default();
        add(&mut ws, Kick::Conversation(7));
        let mut recheck = Targets::default();
        add(&mut recheck, Kick::All);
        let none = Targets::default();
        // (first, then, room, want, why)
        let cases: Vec<(&Targets, &Targets, i64, How, &str)> = vec![
            (
                &startup,
                &recheck,
                9,
                How::Startup,
                "the first full pull's cause stays",
            ),
            (
                &startup,
                &ws,
                7,
                How::Websocket,
                "a room's own ring beats the full pull",
            ),
            (&startup, &ws, 9, How::Startup, "other rooms: the full pull"),
            (
                &recheck,
                &startup,
                9,
                How::Recheck,
                "first cause kept either way",
            ),
            (&ws, &none, 8, How::Alarm, "nothing said: the alarm"),
        ];
        for (first, then, room, want, why) in cases {
            let mut t = first.clone();
            t.merge(then.clone());
            assert_eq!(t.how_of(room), want, "{why}");
        }
        let mut t = ws.clone();
        t.ring(7, How::Recheck);
        assert_eq!(t.how_of(7), How::Websocket, "a room keeps its first ring");
    }

    #[test]
    fn after_round_table() {
        let timings = Timings::default();
        let turn = |class: TurnClass, backoff: Option<Duration>| RoundOutcome::Turn {
            class,
            after: AfterTurn {
                commit: backoff.is_none(),
                backoff,
                post_failure_notice: false,
                obituary_cause: None,
            },
        };
        let b = Duration::from_secs(300);
        let at = std::time::Instant::now() + Duration::from_secs(60);
        let timers = |rooms: &[i64]| -> BTreeMap<i64, std::time::Instant> {
            rooms.iter().map(|r| (*r, at)).collect()
        };
        // (outcome, rooms set aside, want retry, want wait, want park, want timers, why)
        type Case = (
            RoundOutcome,
            &'static [i64],
            Targets,
            Option<Duration>,
            Targets,
            &'static [i64],
            &'static str,
        );
        let cases: Vec<Case> = vec![
            (
                RoundOutcome::Quiet,
                &[],
                t(false, &[]),
                None,
                t(false, &[]),
                &[],
                "quiet: nothing more",
            ),
            (
                RoundOutcome::Busy,
                &[],
                t(false, &[1, 2]),
                Some(timings.turn_lock_retry),
                t(false, &[]),
                &[],
                "busy lock: every target again after the retry delay",
            ),
            (
                turn(TurnClass::Limit, Some(b)),
                &[],
                t(false, &[1, 2]),
                Some(b),
                t(false, &[]),
                &[],
                "a usage limit: every target again after the account's backoff",
            ),
            (
                turn(TurnClass::Failed, None),
                &[1],
                t(false, &[]),
                None,
                t(false, &[]),
                &[1],
                "a failed room waits on its own timer; room 2 waits for nothing",
            ),
            (
                turn(TurnClass::Ok, None),
                &[2],
                t(false, &[]),
                None,
                t(false, &[]),
                &[2],
                "a silent or unreadable room gets its own timer",
            ),
            (
                RoundOutcome::Error("down".into()),
                &[],
                t(false, &[]),
                None,
                t(false, &[1, 2]),
                &[],
                "not planned: parked until the next kick or alarm",
            ),
            (
                RoundOutcome::Busy,
                &[2],
                t(false, &[1, 2]),
                Some(timings.turn_lock_retry),
                t(false, &[]),
                &[2],
                "busy and a room set aside: both",
            ),
        ];
        for (outcome, aside, retry, wait, park, want_timers, why) in cases {
            let report = RoundReport {
                outcome,
                retry_at: timers(aside),
                gave_up: vec![],
            };
            let next = after_round(&timings, t(false, &[1, 2]), &report);
            assert_eq!(next.retry, retry, "{why}");
            assert_eq!(next.wait, wait, "{why}");
            assert_eq!(next.park, park, "{why}");
            assert_eq!(next.timers, timers(want_timers), "{why}");
        }
    }

    #[test]
    fn a_failed_patrol_holds_only_the_patrols() {
        let turn = |class: TurnClass| RoundOutcome::Turn {
            class,
            after: AfterTurn {
                commit: false,
                backoff: Some(Duration::from_secs(60)),
                post_failure_notice: false,
                obituary_cause: None,
            },
        };
        let m = Some(Duration::from_secs(60));
        assert_eq!(after_patrol(&turn(TurnClass::Failed)), (None, m));
        assert_eq!(after_patrol(&turn(TurnClass::Timeout)), (None, m));
        assert_eq!(after_patrol(&turn(TurnClass::Limit)), (m, None));
        assert_eq!(
            after_patrol(&turn(TurnClass::AuthDead { cause: "x".into() })),
            (m, None)
        );
        assert_eq!(after_patrol(&RoundOutcome::Busy), (None, None));
    }

    #[test]
    fn messages_go_before_patrols() {
        let table = [
            (true, true, Job::Messages),
            (true, false, Job::Messages),
            (false, true, Job::Patrol),
            (false, false, Job::Nothing),
        ];
        for (messages, patrols, want) in table {
            assert_eq!(pick(messages, patrols), want, "{messages} {patrols}");
        }
    }

    #[test]
    fn a_kick_that_rang_during_a_turn_goes_before_a_queued_patrol() {
        let (kick_tx, kicks) = tokio::sync::mpsc::unbounded_channel();
        let (fire_tx, fires) = tokio::sync::mpsc::unbounded_channel();
        let mut inbox = Inbox {
            kicks,
            patrols: Some(fires),
        };
        let fire = |name: &str| PatrolFire {
            name: name.into(),
            message: String::new(),
            commit_cursor: false,
            dir: std::path::PathBuf::new(),
        };
        let mut pending = Targets::default();
        // Patrol b was queued before the turn; patrol c and a message rang
        // during it.
        let mut queue = VecDeque::from([fire("b")]);
        fire_tx.send(fire("c")).unwrap();
        kick_tx.send(Kick::Conversation(7)).unwrap();
        assert_eq!(
            next_job(&mut inbox, &mut pending, &mut queue, false),
            Some(Job::Messages)
        );
        assert_eq!(pending.conversations, t(false, &[7]).conversations);
        assert_eq!(pending.how_of(7), How::Websocket, "the journal's how");
        assert_eq!(
            queue.iter().map(|f| f.name.as_str()).collect::<Vec<_>>(),
            vec!["b", "c"]
        );
        pending = Targets::default();
        assert_eq!(
            next_job(&mut inbox, &mut pending, &mut queue, false),
            Some(Job::Patrol)
        );
        drop(kick_tx);
        assert_eq!(next_job(&mut inbox, &mut pending, &mut queue, false), None);
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
