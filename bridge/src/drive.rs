//! The loop around the watcher, shared by `hoop bridge watch`, `hoop bridge
//! channel` and the benchmark: polling every 5 s, or — when the backend
//! offers the event stream (`hoop_api::events`) — a round on each event,
//! with the window sync (30 s), the beat (60 s) and a full safety round
//! (10 min) on a timer, falling back to polling when the stream is not
//! offered or breaks. Detection is the same in both: a round with a plan.
//!
//! Pure core: [`PushSchedule::plan`].

use std::time::Duration;

use hoop_api::Error as ApiError;
use hoop_api::events::{EventStream, Item};
use hoop_api::types::WsEvent;

use crate::constants::{
    BEAT_EVERY_ROUNDS, BRIDGE_POLL, PUSH_COALESCE, PUSH_QUIET_LIMIT, PUSH_RETRY, PUSH_SAFETY_ROUND,
    TASKS_EVERY_ROUNDS,
};
use crate::detect::Event;
use crate::watch::{Plan, Stop, Watcher};

/// What woke the push loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// The stream (re)connected: catch up on everything.
    Connected,
    /// A `message.new`.
    Message,
    /// A `workroom.task.recheck`.
    Tasks,
    /// The 5 s timer.
    Tick,
}

/// When push rounds list, look at cards and beat.
#[derive(Debug, Clone, Default)]
pub struct PushSchedule {
    last_full: Option<Duration>,
    last_beat: Option<Duration>,
    last_tasks: Option<Duration>,
}

fn due(last: Option<Duration>, now: Duration, every: Duration) -> bool {
    last.is_none_or(|t| now.saturating_sub(t) >= every)
}

impl PushSchedule {
    /// The plan for `trigger` at `now` (the window sync is the round's own
    /// 30 s rule).
    pub fn plan(&mut self, now: Duration, trigger: Trigger) -> Plan {
        let beat_every = BRIDGE_POLL * BEAT_EVERY_ROUNDS as u32;
        // The stream announces a new card, not a card cancelled or put back
        // by someone: cards are still looked at every 30 s, as in polling.
        let tasks_every = BRIDGE_POLL * TASKS_EVERY_ROUNDS as u32;
        let full =
            matches!(trigger, Trigger::Connected) || due(self.last_full, now, PUSH_SAFETY_ROUND);
        let beat = due(self.last_beat, now, beat_every);
        let tasks = full || trigger == Trigger::Tasks || due(self.last_tasks, now, tasks_every);
        if full {
            self.last_full = Some(now);
        }
        if beat {
            self.last_beat = Some(now);
        }
        if tasks {
            self.last_tasks = Some(now);
        }
        Plan {
            list: full || trigger == Trigger::Message,
            tasks,
            beat,
        }
    }
}

/// Whether an answer means "this backend has no event stream".
fn not_offered(e: &ApiError) -> bool {
    matches!(e, ApiError::NotFound { .. })
        || matches!(
            e,
            ApiError::Refused {
                status: 404 | 405,
                ..
            }
        )
        || matches!(
            e,
            ApiError::Unparseable {
                status: 404 | 405,
                ..
            }
        )
}

/// How the loop runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DriveConfig {
    /// Try the event stream first.
    pub push: bool,
    pub poll: Duration,
}

impl Default for DriveConfig {
    fn default() -> Self {
        DriveConfig {
            push: true,
            poll: BRIDGE_POLL,
        }
    }
}

/// Run rounds until `sink` returns false (`Ok`) or the key is refused.
/// `sink` gets every round's events (possibly none).
pub async fn drive<F, Fut>(w: &mut Watcher, cfg: DriveConfig, mut sink: F) -> Result<(), Stop>
where
    F: FnMut(Vec<Event>) -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let mut push = cfg.push;
    let mut stream: Option<EventStream> = None;
    let mut next_try = w.now();
    let mut schedule = PushSchedule::default();
    let mut heard = tokio::time::Instant::now();
    let mut tick = tokio::time::interval(cfg.poll);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        if push && stream.is_none() && w.now() >= next_try {
            let ep = w.endpoint().clone();
            match EventStream::connect(&ep.base_url, &ep.key).await {
                Ok(s) => {
                    tracing::info!("event stream open: rounds run on events");
                    stream = Some(s);
                    heard = tokio::time::Instant::now();
                    let plan = schedule.plan(w.now(), Trigger::Connected);
                    if !sink(w.round_with(plan).await?).await {
                        return Ok(());
                    }
                    continue;
                }
                Err(e) if crate::watch::key_rejected(&e) => return Err(Stop::KeyRejected),
                Err(e) if not_offered(&e) => {
                    tracing::info!("no event stream on this backend: polling");
                    push = false;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "event stream unavailable; polling meanwhile");
                    next_try = w.now() + PUSH_RETRY;
                }
            }
        }
        let Some(s) = stream.as_mut() else {
            tick.tick().await;
            if !sink(w.round().await?).await {
                return Ok(());
            }
            continue;
        };
        let trigger = tokio::select! {
            item = s.next() => match item {
                Ok(Some(Item::Event(e))) => {
                    heard = tokio::time::Instant::now();
                    streamed(w, &e);
                    let mut t = trigger_of(&e);
                    // A burst is one round.
                    while let Ok(Ok(Some(Item::Event(more)))) =
                        tokio::time::timeout(PUSH_COALESCE, s.next()).await
                    {
                        streamed(w, &more);
                        t = merge(t, trigger_of(&more));
                    }
                    t
                }
                Ok(Some(Item::Alive)) => {
                    heard = tokio::time::Instant::now();
                    None
                }
                Ok(None) | Err(_) => {
                    tracing::warn!("event stream closed; reconnecting");
                    stream = None;
                    next_try = w.now();
                    continue;
                }
            },
            _ = tick.tick() => {
                if heard.elapsed() > PUSH_QUIET_LIMIT {
                    tracing::warn!("event stream went quiet; reconnecting");
                    stream = None;
                    next_try = w.now();
                    continue;
                }
                Some(Trigger::Tick)
            }
        };
        if let Some(t) = trigger {
            let plan = schedule.plan(w.now(), t);
            if !sink(w.round_with(plan).await?).await {
                return Ok(());
            }
        }
    }
}

/// A message the stream delivered arrived after the account joined its room
/// (the stream only carries rooms it is a member of): the watcher keeps it
/// for a room it has not seen yet.
fn streamed(w: &mut Watcher, e: &WsEvent) {
    if let WsEvent::MessageNew {
        conversation_id,
        message,
    } = e
    {
        w.heard(*conversation_id, message.id);
    }
}

fn trigger_of(e: &WsEvent) -> Option<Trigger> {
    match e {
        WsEvent::MessageNew { .. } => Some(Trigger::Message),
        WsEvent::TaskRecheck { .. } => Some(Trigger::Tasks),
        _ => None,
    }
}

fn merge(a: Option<Trigger>, b: Option<Trigger>) -> Option<Trigger> {
    match (a, b) {
        (Some(x), Some(y)) if x != y => Some(Trigger::Connected),
        (x, None) => x,
        (_, y) => y,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_schedule_table() {
        let s = Duration::from_secs;
        let mut p = PushSchedule::default();
        let plan = |list, tasks, beat| Plan { list, tasks, beat };
        // (now, trigger, want)
        let steps = [
            (0, Trigger::Connected, plan(true, true, true)),
            (5, Trigger::Tick, plan(false, false, false)),
            (7, Trigger::Message, plan(true, false, false)),
            (9, Trigger::Tasks, plan(false, true, false)),
            (35, Trigger::Tick, plan(false, false, false)),
            // cards every 30 s, whatever the stream says
            (39, Trigger::Tick, plan(false, true, false)),
            (60, Trigger::Tick, plan(false, false, true)),
            (65, Trigger::Tick, plan(false, false, false)),
            (69, Trigger::Message, plan(true, true, false)),
            (600, Trigger::Tick, plan(true, true, true)),
            (605, Trigger::Message, plan(true, false, false)),
            (606, Trigger::Connected, plan(true, true, false)),
        ];
        for (now, t, want) in steps {
            assert_eq!(p.plan(s(now), t), want, "at {now} {t:?}");
        }
    }

    #[test]
    fn merged_triggers() {
        use Trigger::*;
        // Every pair of (none, message, tasks): same kinds stay, two kinds
        // make a full round, nothing adds nothing.
        let cases = [
            (None, None, None),
            (None, Some(Message), Some(Message)),
            (None, Some(Tasks), Some(Tasks)),
            (Some(Message), None, Some(Message)),
            (Some(Tasks), None, Some(Tasks)),
            (Some(Message), Some(Message), Some(Message)),
            (Some(Tasks), Some(Tasks), Some(Tasks)),
            (Some(Message), Some(Tasks), Some(Connected)),
            (Some(Tasks), Some(Message), Some(Connected)),
            (Some(Connected), Some(Message), Some(Connected)),
            (Some(Message), Some(Connected), Some(Connected)),
            (Some(Connected), None, Some(Connected)),
        ];
        for (a, b, want) in cases {
            assert_eq!(merge(a, b), want, "{a:?} + {b:?}");
        }
    }
}
