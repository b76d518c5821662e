//! One patrol round: a turn whose user message is a patrol's brief. It
//! takes the same turn lock as a message round, goes through the same
//! failure policy ([`crate::policy::after_turn`], one streak for both) and
//! reports usage the same way; the patrol cursor moves only when the turn
//! exited 0. A patrol has no room: the failure note and the obituary a
//! message round would post are logged instead.

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
    tracing::info!(patrol = %fire.name, parts = ?parts, "🧠 patrol turn started");
    let started = Instant::now();
    let result: TurnResult = agent.lock().await.run_turn(&preamble, &fire.message).await;
    let secs = started.elapsed().as_secs_f64();
    tracing::info!(patrol = %fire.name, class = ?result.class, secs, detail = %result.detail, "🧠 patrol turn finished");
    if fire.commit_cursor {
        if result.class == TurnClass::Ok {
            match patrol::commit_cursor(&fire.dir) {
                Ok(true) => tracing::info!(patrol = %fire.name, "📌 patrol cursor committed"),
                Ok(false) => {}
                Err(e) => {
                    tracing::warn!(patrol = %fire.name, error = %e, "patrol cursor not committed; the next tick offers the findings again")
                }
            }
        } else {
            tracing::info!(patrol = %fire.name, "patrol round did not land; its cursor stays and the next tick offers the findings again");
        }
    }
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
