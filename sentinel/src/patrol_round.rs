//! One patrol round: a turn whose user message is a patrol's brief. It
//! takes the same turn lock as a message round, goes through the same
//! failure policy ([`crate::policy::after_turn`], one streak for both) and
//! reports usage the same way. The round's span of staged findings is
//! recorded as running (with this daemon's pid) before the turn and
//! settled from the turn's outcome after it ([`patrol::settle`]): delivered
//! only when the turn exited 0, the cursor committed with the last span. A
//! daemon killed mid-turn leaves the record running; the next tick counts
//! that round as not landed and offers the span again, once. A patrol has
//! no room: the failure note and the obituary a message round would post
//! are logged instead.

use std::time::Instant;

use crate::agent::{Agent, TurnResult};
use crate::lock;
use crate::patrol;
use crate::plan;
use crate::policy::{self, Streak, TurnClass};
use crate::round::{self, RoundCtx, RoundOutcome};
use crate::tasks::patrol::PatrolFire;

pub async fn run<A: Agent>(
    ctx: &RoundCtx,
    agent: &tokio::sync::Mutex<A>,
    fire: &PatrolFire,
    streak: &mut Streak,
) -> RoundOutcome {
    let turn_lock = match lock::turn(&ctx.home.turn_lock_path()) {
        Ok(l) => l,
        Err(e) if e.is_busy() => {
            tracing::info!(patrol = %fire.name, error = %e, "turn lock busy; the next tick offers this patrol again");
            return RoundOutcome::Busy;
        }
        Err(e) => return RoundOutcome::Error(e.to_string()),
    };
    let needed = plan::parts_needed(&[], streak.is_rerun());
    let (preamble, parts) = round::preamble_for(ctx, agent, needed).await;
    let card_id = round::working_card(ctx).await;
    let before = round::account_totals(ctx).await;
    if fire.commit_cursor && !mark_running(fire) {
        drop(turn_lock);
        return RoundOutcome::Error("patrol state not writable".into());
    }
    tracing::info!(patrol = %fire.name, parts = ?parts, "🧠 patrol turn started");
    let started = Instant::now();
    let result: TurnResult = agent.lock().await.run_turn(&preamble, &fire.message).await;
    let secs = started.elapsed().as_secs_f64();
    tracing::info!(patrol = %fire.name, class = ?result.class, secs, detail = %result.detail, "🧠 patrol turn finished");
    settle(fire, result.class == TurnClass::Ok);
    let after = policy::after_turn(&ctx.cfg.timings, streak, &result.class);
    round::report_usage(ctx, card_id, before, &result).await;
    if after.post_failure_notice {
        tracing::warn!(patrol = %fire.name, "a second failed round in a row (a patrol has no room to post the note to)");
    }
    if let Some(cause) = &after.obituary_cause {
        tracing::error!(patrol = %fire.name, cause, "⚰️ login expired (a patrol has no room to post the obituary to)");
    }
    drop(turn_lock);
    RoundOutcome::Turn {
        class: result.class,
        after,
    }
}

/// Record the fire's span as running in this daemon (the run's record,
/// before its turn). False (logged) when the state cannot be written: a
/// round whose record is not on disk must not run.
fn mark_running(fire: &PatrolFire) -> bool {
    let written = patrol::load_state(&fire.dir).and_then(|mut st| {
        if let Some(a) = st.staged.as_mut().and_then(|s| s.attempt.as_mut()) {
            a.running_pid = Some(std::process::id());
        }
        patrol::save_state(&fire.dir, &st).map_err(|e| e.to_string())
    });
    if let Err(e) = &written {
        tracing::warn!(patrol = %fire.name, error = %e, "patrol state not written; the round does not run");
    }
    written.is_ok()
}

/// Settle the round from its turn: `landed` when the turn exited 0.
fn settle(fire: &PatrolFire, landed: bool) {
    let mut st = match patrol::load_state(&fire.dir) {
        Ok(st) => st,
        Err(e) => {
            tracing::warn!(patrol = %fire.name, error = %e, "patrol state unreadable; the round is not settled");
            return;
        }
    };
    let settled = patrol::settle(&mut st, landed, hoop_core::clock::now_unix());
    if let patrol::Settled::Delivered {
        commit: Some(Some(cursor)),
        ..
    } = &settled
        && let Err(e) = patrol::write_cursor(&fire.dir, cursor)
    {
        tracing::warn!(patrol = %fire.name, error = %e, "patrol cursor not committed; the findings are offered again");
        return;
    }
    if let Err(e) = patrol::save_state(&fire.dir, &st) {
        tracing::warn!(patrol = %fire.name, error = %e, "patrol state not written; the round is offered again");
        return;
    }
    match settled {
        patrol::Settled::Delivered {
            from,
            to,
            of,
            commit,
        } => {
            tracing::info!(patrol = %fire.name, from = from + 1, to, of, "📬 patrol findings delivered");
            if commit.is_some() {
                tracing::info!(patrol = %fire.name, "📌 patrol cursor committed");
            }
        }
        patrol::Settled::NotLanded { failed } => {
            tracing::info!(patrol = %fire.name, failed, "patrol round did not land; its findings stay staged and the next tick offers them again");
        }
        patrol::Settled::Unstaged => {}
    }
}
