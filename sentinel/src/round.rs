//! One round (SPEC §2 steps 1–6): pull the conversations that rang, decide
//! per conversation through [`crate::plan`], commit the non-waking advances,
//! take the turn lock, assemble preamble and instructions, run the turn, and
//! carry out [`crate::policy::after_turn`]: after a 0-exit turn re-read the
//! woken rooms and commit each cursor only past what is handled
//! ([`crate::plan::settle`]) — work left unanswered makes the turn a failure
//! and the round is offered again — then, after the commit, report usage
//! and post the failure note or the obituary when due. Each room stands
//! alone: one that cannot be read is skipped, backed off and logged once
//! per cause and hour ([`crate::plan::RoomFailures`]).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Instant;

use hoop_api::error::Error as ApiError;
use hoop_api::rest::Client;
use hoop_api::say_seen::SaySeen;
use hoop_api::types::{Conversation, ConversationId, MessageId, SendMessage, UnixSecs, User};
use hoop_core::clock::now_unix;
use hoop_core::home::Home;
use hoop_core::limits::PULL_PAGE;
use hoop_core::mention::Me;

use crate::agent::{Agent, TurnResult};
use crate::config::SentinelConfig;
use crate::constants::{FAILURE_NOTICE, OBITUARIES_FILE, OBITUARY};
use crate::lock;
use crate::plan::{
    self, DecideInput, Decision, InstructionCtx, Page, PullStep, RoomFailures, Wake,
};
use crate::policy::{self, AfterTurn, Streak, TurnClass};
use crate::prompts::{PromptSet, parts_for};
use crate::state::{Cursors, Obituaries, StateError, commit_cursors};
use crate::tasks::lease::CurrentCard;

/// Which conversations a round looks at.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Targets {
    pub all: bool,
    pub conversations: BTreeSet<ConversationId>,
}

impl Targets {
    pub fn is_empty(&self) -> bool {
        !self.all && self.conversations.is_empty()
    }
    pub fn merge(&mut self, other: Targets) {
        self.all |= other.all;
        self.conversations.extend(other.conversations);
    }
    fn wants(&self, c: ConversationId) -> bool {
        self.all || self.conversations.contains(&c)
    }
}

/// How a round ended, for the cycle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RoundOutcome {
    /// Nothing to answer (cursors may have advanced without waking).
    Quiet,
    /// The turn lock is held by someone else: retry later.
    Busy,
    /// A turn ran; the policy decided the rest.
    Turn { class: TurnClass, after: AfterTurn },
    /// The backend or the home's state could not be read: nothing changed.
    Error(String),
}

/// A round's outcome and the rooms it could not read (retried with the
/// next kick or alarm once their own backoff has passed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoundReport {
    pub outcome: RoundOutcome,
    pub failed_rooms: Targets,
}

/// Everything a round reads.
pub struct RoundCtx {
    pub client: Arc<Client>,
    pub home: Home,
    pub me: User,
    pub cfg: SentinelConfig,
    pub current_card: CurrentCard,
    /// The prompt parts the live agent process was started with (see
    /// [`plan::preamble_parts`]); meaningful only while a process is live.
    pub warm_parts: std::sync::Mutex<Option<plan::PartsNeeded>>,
}

#[derive(Debug, thiserror::Error)]
enum RoundError {
    #[error("backend: {0}")]
    Api(#[from] ApiError),
    #[error("{0}")]
    State(#[from] StateError),
}

impl RoundCtx {
    fn me(&self) -> Me<'_> {
        Me {
            id: self.me.id,
            username: &self.me.username,
            nickname: self.me.nickname.as_deref(),
        }
    }
}

/// Run one round. `rooms` remembers which rooms keep failing (each room
/// stands alone).
pub async fn run<A: Agent>(
    ctx: &RoundCtx,
    agent: &tokio::sync::Mutex<A>,
    targets: &Targets,
    streak: &mut Streak,
    rooms: &mut RoomFailures,
) -> RoundReport {
    let report = |outcome, failed_rooms| RoundReport {
        outcome,
        failed_rooms,
    };
    let (wakes, failed) = match plan_round(ctx, targets, rooms).await {
        Ok(w) => w,
        Err(e) => {
            tracing::warn!(error = %e, "round could not be planned; nothing changed");
            return report(RoundOutcome::Error(e.to_string()), Targets::default());
        }
    };
    if wakes.is_empty() {
        return report(RoundOutcome::Quiet, failed);
    }
    // Step 4: the turn lock, non-blocking.
    let turn_lock = match lock::turn(&ctx.home.turn_lock_path()) {
        Ok(l) => l,
        Err(e) if e.is_busy() => {
            tracing::info!(error = %e, "turn lock busy; round retried later");
            return report(RoundOutcome::Busy, failed);
        }
        Err(e) => return report(RoundOutcome::Error(e.to_string()), failed),
    };
    let (class, after) = turn(ctx, agent, &wakes, streak, rooms).await;
    drop(turn_lock);
    report(RoundOutcome::Turn { class, after }, failed)
}

/// A short, stable name for why a room could not be read (the key of "log
/// once per cause and hour"; the full error goes into the log line).
fn cause_of(e: &ApiError) -> String {
    match e {
        ApiError::Unparseable { status, .. } => format!("http {status}"),
        ApiError::Refused { status, code, .. } => format!("{status} {code}"),
        ApiError::NotFound { code, .. } => format!("404 {code}"),
        ApiError::Transport(_) => "transport".into(),
        ApiError::Decode { what, .. } => format!("decoding {what}"),
        ApiError::Unauthorized { .. } => "unauthorized".into(),
        ApiError::RateLimited { .. } => "rate limited".into(),
        other => other.code().unwrap_or("other").to_string(),
    }
}

/// Record that `room` could not be read; logged once per cause and hour.
fn room_failed(ctx: &RoundCtx, rooms: &mut RoomFailures, room: ConversationId, e: &ApiError) {
    let cause = cause_of(e);
    let steps = &ctx.cfg.timings.failure_backoff;
    if rooms.failed(room, &cause, steps, Instant::now()) {
        tracing::warn!(
            conversation = room,
            cause,
            error = %e,
            "room could not be read; it is retried after a backoff, the other rooms go on"
        );
    }
}

/// Steps 1–3: pull, decide, commit the non-waking advances; return the
/// wakes and the rooms that could not be read.
async fn plan_round(
    ctx: &RoundCtx,
    targets: &Targets,
    rooms: &mut RoomFailures,
) -> Result<(Vec<Wake>, Targets), RoundError> {
    let convs: Vec<Conversation> = ctx.client.conversations().await?;
    let cursors_path = ctx.home.cursors_path();
    let cursors = Cursors::load(&cursors_path)?;
    let shown = SaySeen::load(&ctx.home.say_seen_path());
    let now = now_unix();
    let floor = now.saturating_sub(ctx.cfg.new_room_backlog.as_secs() as i64);
    let mut wakes = vec![];
    let mut failed = Targets::default();
    let mut advances: Vec<(ConversationId, MessageId)> = vec![];
    for conv in convs.iter().filter(|c| targets.wants(c.id)) {
        if !rooms.ready(conv.id, Instant::now()) {
            failed.conversations.insert(conv.id);
            continue;
        }
        let cursor = cursors.get(conv.id);
        let pulled = match pull(&ctx.client, conv.id, cursor, floor).await {
            Ok(p) => p,
            Err(e) => {
                room_failed(ctx, rooms, conv.id, &e);
                failed.conversations.insert(conv.id);
                continue;
            }
        };
        if let Some(n) = rooms.recovered(conv.id) {
            tracing::info!(conversation = conv.id, failures = n, "room readable again");
        }
        if pulled.missed {
            tracing::warn!(
                conversation = conv.id,
                cursor,
                "{}: paging stopped before the cursor",
                plan::MISSED_NOTE
            );
        }
        let input = DecideInput {
            me: ctx.me(),
            conversation: conv,
            cursor,
            shown: shown.get(conv.id),
            now,
            new_room_backlog: ctx.cfg.new_room_backlog,
        };
        match plan::decide(input, pulled) {
            Decision::Nothing => {}
            Decision::Baseline { to } => {
                tracing::info!(
                    conversation = conv.id,
                    to,
                    "first sight: cursor baselined, backlog not answered"
                );
                advances.push((conv.id, to));
            }
            Decision::Advance { to, why } => {
                tracing::info!(
                    conversation = conv.id,
                    to,
                    ?why,
                    "cursor advanced without waking"
                );
                advances.push((conv.id, to));
            }
            Decision::Wake(w) => wakes.push(w),
        }
    }
    if !advances.is_empty() {
        commit_cursors(&cursors_path, &advances)?;
    }
    Ok((wakes, failed))
}

async fn pull(
    client: &Client,
    conversation: ConversationId,
    cursor: Option<MessageId>,
    floor: UnixSecs,
) -> Result<plan::Pulled, ApiError> {
    let mut pages: Vec<Page> = vec![];
    let mut before = None;
    loop {
        let p = client.messages(conversation, PULL_PAGE, before).await?;
        pages.push(Page {
            messages: p.messages,
            has_more: p.has_more,
        });
        match plan::pull_step(cursor, floor, &pages) {
            PullStep::Fetch { before: b } => before = Some(b),
            PullStep::Done(pulled) => return Ok(pulled),
        }
    }
}

/// After a 0-exit turn: re-read each woken room and commit its cursor only
/// past what is handled ([`plan::settle`]). Returns the rooms whose work is
/// still unanswered (or that could not be re-read).
async fn settle_rooms(
    ctx: &RoundCtx,
    wakes: &[Wake],
    rooms: &mut RoomFailures,
) -> Vec<ConversationId> {
    let shown = SaySeen::load(&ctx.home.say_seen_path());
    let me = ctx.me();
    let mut updates: Vec<(ConversationId, MessageId)> = vec![];
    let mut open = vec![];
    for w in wakes {
        let floor = w.floor.unwrap_or(0);
        let pulled = match pull(&ctx.client, w.conversation_id, w.cursor, floor).await {
            Ok(p) => p,
            Err(e) => {
                room_failed(ctx, rooms, w.conversation_id, &e);
                tracing::warn!(
                    conversation = w.conversation_id,
                    error = %e,
                    "room could not be re-read after the turn; its cursor stays and it is offered again"
                );
                open.push(w.conversation_id);
                continue;
            }
        };
        let s = plan::settle(&me, w, shown.get(w.conversation_id), &pulled);
        if let Some(to) = s.to {
            updates.push((w.conversation_id, to));
        }
        if !s.unanswered.is_empty() {
            tracing::warn!(
                conversation = w.conversation_id,
                unanswered = ?s.unanswered,
                "turn ended without an answer to these messages; the turn failed for this room and it is offered again"
            );
            open.push(w.conversation_id);
        }
    }
    if !updates.is_empty() {
        match commit_cursors(&ctx.home.cursors_path(), &updates) {
            Ok(_) => {
                for (c, to) in &updates {
                    tracing::info!(conversation = c, to, "📌 cursor committed");
                }
            }
            // The messages will be offered again: a second answer is avoided
            // by the "own reply newest" rule, never by losing them.
            Err(e) => tracing::error!(error = %e, "could not commit cursors"),
        }
    }
    open
}

/// Steps 5–6 and the policy.
async fn turn<A: Agent>(
    ctx: &RoundCtx,
    agent: &tokio::sync::Mutex<A>,
    wakes: &[Wake],
    streak: &mut Streak,
    rooms: &mut RoomFailures,
) -> (TurnClass, AfterTurn) {
    let rerun = streak.is_rerun();
    let (preamble, part_names) = preamble_for(ctx, agent, plan::parts_needed(wakes, rerun)).await;
    let ictx = InstructionCtx {
        home: &ctx.home.name,
        username: &ctx.me.username,
        me_id: ctx.me.id,
        rerun,
    };
    let message = plan::instructions(&ictx, wakes);
    for w in wakes {
        tracing::info!(
            conversation = w.conversation_id,
            messages = ?w.to_answer.iter().map(|m| m.id).collect::<Vec<_>>(),
            "👋 wake"
        );
    }
    // The instructions show the agent every fresh message: that is a read,
    // so `hoop say`'s gap watermark moves to what was shown (forward only;
    // same `{conversation: message}` file format as the cursors).
    let shown: Vec<(ConversationId, MessageId)> =
        wakes.iter().map(|w| (w.conversation_id, w.to)).collect();
    if let Err(e) = commit_cursors(&ctx.home.say_seen_path(), &shown) {
        tracing::warn!(error = %e, "could not move the say watermark; hoop say may ask to read first");
    }
    // The card the turn's usage belongs to is the one working when the turn
    // starts: a turn that finishes its card still reports to it.
    let card_id = working_card(ctx).await;
    // The usage snapshot before the turn: the one after must hold the turn.
    let before = account_totals(ctx).await;
    tracing::info!(parts = ?part_names, rerun, "🧠 turn started");
    let started = Instant::now();
    let result: TurnResult = agent.lock().await.run_turn(&preamble, &message).await;
    let secs = started.elapsed().as_secs_f64();
    tracing::info!(class = ?result.class, secs, detail = %result.detail, "🧠 turn finished");
    // Commit before anything slow: a stop in between must not lose the
    // commit of a good turn.
    let mut class = result.class.clone();
    if class == TurnClass::Ok {
        let open = settle_rooms(ctx, wakes, rooms).await;
        if !open.is_empty() {
            class = TurnClass::Failed;
        }
    }
    let after = policy::after_turn(&ctx.cfg.timings, streak, &class);
    report_usage(ctx, card_id, before, &result).await;
    if after.post_failure_notice {
        post_to_rooms(ctx, wakes, FAILURE_NOTICE).await;
    }
    if let Some(cause) = &after.obituary_cause {
        obituary(ctx, wakes, cause).await;
    }
    (class, after)
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

/// The account's working top-level card, if any (the lease renewer's last
/// knowledge when the backend cannot say).
pub(crate) async fn working_card(ctx: &RoundCtx) -> Option<hoop_api::types::CardId> {
    match ctx
        .client
        .cards(&hoop_api::rest::CardFilter {
            status: Some(hoop_api::types::CardStatus::Working),
            ..hoop_api::rest::CardFilter::mine()
        })
        .await
    {
        Ok(cards) => cards.iter().find(|c| c.parent_id.is_none()).map(|c| c.id),
        Err(_) => ctx.current_card.lock().ok().and_then(|c| *c),
    }
}

/// The account's cumulative totals before a turn (see
/// [`crate::usage::account_totals`]).
pub(crate) async fn account_totals(ctx: &RoundCtx) -> Option<hoop_core::transcript::Usage> {
    crate::usage::account_totals(ctx).await
}

/// Report the account's cumulative totals after a turn (see
/// [`crate::usage::report_usage`]).
pub(crate) async fn report_usage(
    ctx: &RoundCtx,
    card_id: Option<hoop_api::types::CardId>,
    before: Option<hoop_core::transcript::Usage>,
    result: &TurnResult,
) {
    crate::usage::report_usage(ctx, card_id, before, result).await
}

/// Post a failure report (its body begins with a failure mark, so the
/// sentinel knows it for its own) to every woken room. The REST route has
/// no content gate; a rate limit is outwaited (bounded) by
/// `send_failure_report`.
async fn post_to_rooms(ctx: &RoundCtx, wakes: &[Wake], body: &str) {
    for w in wakes {
        let msg = SendMessage {
            body: body.to_string(),
            ..Default::default()
        };
        match ctx
            .client
            .send_failure_report(w.conversation_id, &msg)
            .await
        {
            Ok(m) => tracing::info!(
                conversation = w.conversation_id,
                message_id = m.id,
                body,
                "posted"
            ),
            Err(e) => {
                tracing::warn!(conversation = w.conversation_id, error = %e, "could not post")
            }
        }
    }
}

/// The obituary: at most once per hour per cause, remembered in the home.
async fn obituary(ctx: &RoundCtx, wakes: &[Wake], cause: &str) {
    let path = ctx.home.dir().join(OBITUARIES_FILE);
    let last = match Obituaries::load(&path) {
        Ok(o) => o.last(cause),
        Err(e) => {
            tracing::warn!(error = %e, "obituary state unreadable; not posting");
            return;
        }
    };
    let now = now_unix();
    if !policy::obituary_due(last, now) {
        tracing::info!(cause, "login dead; obituary already posted within the hour");
        return;
    }
    // Record first: a crash between the two must not post twice.
    if let Err(e) = Obituaries::record(&path, cause, now) {
        tracing::warn!(error = %e, "could not record the obituary; not posting");
        return;
    }
    tracing::error!(cause, "⚰️ login expired: posting the obituary");
    post_to_rooms(ctx, wakes, OBITUARY).await;
}
