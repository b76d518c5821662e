//! Turn, the round's third stage (SPEC §2 steps 5–6): compose the
//! preamble and the instructions, and run the agent. The say watermark of
//! each room moves to what the prompt prints ([`plan::compose`]) the moment
//! the prompt is about to reach a running agent — remember, then print —
//! and never for a turn that could not start.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::Instant;

use hoop_api::say_seen::SaySeen;
use hoop_api::types::{CardId, ConversationId, MessageId};

use super::RoundCtx;
use super::report::{account_totals, working_card};
use crate::agent::{Agent, TurnResult};
use crate::constants::ROUND_TEXT_CAP_CHARS;
use crate::journal::{Ev, Line, ShownBy, Tokens, now_ms};
use crate::ledger::{FAILED_SENDS_FILE, FailedSends};
use crate::plan::{self, Composed, InstructionCtx, Wake};
use crate::prompts::{PromptSet, parts_for};

/// What a turn left for settle and report.
pub(super) struct TurnDone {
    pub result: TurnResult,
    /// The prompt reached a running agent.
    pub delivered: bool,
    pub composed: Composed,
    /// Rooms into which a `hoop say` failed during the turn.
    pub sends_failed: BTreeSet<ConversationId>,
    pub card_id: Option<CardId>,
    pub before: Option<hoop_core::transcript::Usage>,
    /// The turn's number in the journal.
    pub turn: u64,
    /// Each room's say watermark once the prompt reached the agent (what
    /// moved it further was `hoop say` / `hoop read` during the turn).
    pub marks_at_prompt: BTreeMap<ConversationId, MessageId>,
}

/// The system preamble for a turn that needs `needed`: the parts the live
/// process was started with stay (see [`plan::preamble_parts`]), and the
/// home's overrides and `task.md` are read afresh. Message rounds and patrol
/// rounds both assemble it here. Returns the preamble and the part names.
pub(crate) async fn preamble_for<A: Agent>(
    ctx: &RoundCtx,
    agent: &tokio::sync::Mutex<A>,
    needed: plan::PartsNeeded,
) -> (String, Vec<&'static str>) {
    let live = agent.lock().await.idle_for().is_some();
    let warm = if live {
        *ctx.warm_parts.lock().unwrap_or_else(|e| e.into_inner())
    } else {
        None
    };
    let chosen = plan::preamble_parts(warm, needed);
    *ctx.warm_parts.lock().unwrap_or_else(|e| e.into_inner()) = Some(chosen);
    let parts = parts_for(chosen);
    let prompts = PromptSet::load(&ctx.home.prompts_dir(), &ctx.home.task_path());
    (
        prompts.preamble(&parts),
        parts.iter().map(|p| p.name()).collect(),
    )
}

/// Run the turn for `wakes`. `rerun`: the round repeats one that did not
/// finish account-wide (a usage limit, a dead login).
pub(super) async fn turn<A: Agent>(
    ctx: &RoundCtx,
    agent: &tokio::sync::Mutex<A>,
    wakes: &[Wake],
    rerun: bool,
) -> TurnDone {
    let (preamble, part_names) = preamble_for(ctx, agent, plan::parts_needed(wakes, rerun)).await;
    let seen_path = ctx.home.say_seen_path();
    let current = SaySeen::load(&seen_path);
    let marks_before: BTreeMap<ConversationId, MessageId> = wakes
        .iter()
        .filter_map(|w| {
            current
                .get(w.conversation_id)
                .map(|m| (w.conversation_id, m))
        })
        .collect();
    let ictx = InstructionCtx {
        home: &ctx.home.name,
        username: &ctx.me.username,
        me_id: ctx.me.id,
        rerun,
        cap_chars: ROUND_TEXT_CAP_CHARS,
    };
    let composed = plan::compose(&ictx, wakes, &marks_before);
    for w in wakes {
        tracing::info!(
            conversation = w.conversation_id,
            messages = ?w.to_answer.iter().map(|m| m.id).collect::<Vec<_>>(),
            again = ?w.again,
            "👋 wake"
        );
    }
    let marks: Vec<(ConversationId, MessageId)> = composed
        .rooms
        .iter()
        .filter_map(|r| r.mark.map(|m| (r.room, m)))
        .collect();
    let delivered = AtomicBool::new(false);
    let delivered_at = AtomicI64::new(0);
    let shown = || {
        delivered.store(true, Ordering::SeqCst);
        delivered_at.store(now_ms(), Ordering::SeqCst);
        if marks.is_empty() {
            return;
        }
        if let Err(e) = SaySeen::advance_all(&seen_path, &marks) {
            tracing::warn!(error = %e, "could not move the say watermark; hoop say may ask to read first");
        }
    };
    let failed_path = ctx.home.dir().join(FAILED_SENDS_FILE);
    let fails_before = FailedSends::load(&failed_path);
    // The card the turn's usage belongs to is the one working when the turn
    // starts: a turn that finishes its card still reports to it.
    let card_id = working_card(ctx).await;
    // The usage snapshot before the turn: the one after must hold the turn.
    let before = account_totals(ctx).await;
    let turn_no = ctx.journal.next_turn();
    ctx.journal.record(Line {
        t: now_ms(),
        room: None,
        msg: None,
        ev: Ev::TurnStart {
            turn: turn_no,
            rooms: wakes.iter().map(|w| w.conversation_id).collect(),
        },
    });
    tracing::info!(parts = ?part_names, rerun, turn = turn_no, "🧠 turn started");
    let started = Instant::now();
    let result: TurnResult = agent
        .lock()
        .await
        .run_turn_showing(&preamble, &composed.text, &shown)
        .await;
    let secs = started.elapsed().as_secs_f64();
    tracing::info!(class = ?result.class, secs, detail = %result.detail, "🧠 turn finished");
    let delivered = delivered.load(Ordering::SeqCst);
    let mut marks_at_prompt = marks_before.clone();
    if delivered {
        let t = delivered_at.load(Ordering::SeqCst);
        for r in &composed.rooms {
            if let Some(m) = r.mark {
                marks_at_prompt.insert(r.room, m);
            }
            ctx.journal.record_all(r.listed.iter().map(|id| {
                Line::msg(
                    t,
                    r.room,
                    *id,
                    Ev::Shown {
                        by: ShownBy::Prompt,
                        turn: turn_no,
                    },
                )
            }));
        }
    }
    let usage = result.usage.unwrap_or_default();
    ctx.journal.record(Line {
        t: now_ms(),
        room: None,
        msg: None,
        ev: Ev::TurnEnd {
            turn: turn_no,
            class: class_word(&result.class).to_string(),
            ms: (secs * 1000.0) as u64,
            tokens: Tokens {
                tokens_in: usage.tokens_in,
                tokens_cached_in: usage.tokens_cached_in,
                tokens_out: usage.tokens_out,
            },
        },
    });
    let fails_after = FailedSends::load(&failed_path);
    let sends_failed = wakes
        .iter()
        .map(|w| w.conversation_id)
        .filter(|r| fails_after.count(*r) > fails_before.count(*r))
        .collect();
    TurnDone {
        result,
        delivered,
        composed,
        sends_failed,
        card_id,
        before,
        turn: turn_no,
        marks_at_prompt,
    }
}

/// A turn's class as the journal writes it (the status file's words).
fn class_word(c: &crate::policy::TurnClass) -> &'static str {
    use crate::policy::TurnClass;
    match c {
        TurnClass::Ok => "ok",
        TurnClass::Failed => "failed",
        TurnClass::Timeout => "timeout",
        TurnClass::AuthDead { .. } => "auth_dead",
        TurnClass::Limit => "limit",
    }
}
