//! The cycle: collects kicks, debounces them (a burst becomes one round),
//! fires the alarm (a full pull even without an event, catching whatever the
//! WebSocket missed), and runs rounds one at a time. A busy turn lock retries
//! in 60 s; a failed turn waits out its backoff; a round that could not reach
//! the backend waits for the next kick or alarm.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::mpsc::UnboundedReceiver;
use tokio::time::{Instant, sleep_until};

use super::Kick;
use crate::agent::Agent;
use crate::policy::Streak;
use crate::round::{self, RoundCtx, RoundOutcome, Targets};
use crate::state::{RoundResult, Status};

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

pub async fn run<A: Agent>(
    ctx: Arc<RoundCtx>,
    agent: Arc<tokio::sync::Mutex<A>>,
    mut rx: UnboundedReceiver<Kick>,
    ws_connected: Arc<AtomicBool>,
    mut status: Status,
) {
    let timings = ctx.cfg.timings.clone();
    let status_path = ctx.home.dir().join(crate::constants::STATUS_FILE);
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
        let outcome = round::run(&ctx, &agent, &targets, &mut streak).await;
        match &outcome {
            RoundOutcome::Quiet => {}
            RoundOutcome::Busy => {
                pending.merge(targets);
                not_before = Some(Instant::now() + timings.turn_lock_retry);
            }
            RoundOutcome::Turn { after, .. } => {
                if let Some(b) = after.backoff {
                    tracing::info!(
                        secs = b.as_secs_f64(),
                        "round will be retried after backoff"
                    );
                    pending.merge(targets);
                    not_before = Some(Instant::now() + b);
                }
            }
            RoundOutcome::Error(_) => parked.merge(targets),
        }
        status.ws_connected = ws_connected.load(Ordering::Relaxed);
        status.last_round_at = Some(hoop_core::clock::now_unix());
        status.last_round_result = Some(RoundResult::of(&outcome));
        status.consecutive_failures = streak.failures;
        if let Err(e) = status.save(&status_path) {
            tracing::debug!(error = %e, "status file not written");
        }
    }
}
