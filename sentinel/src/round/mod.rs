//! One round (SPEC §2, "One round"), as a visible pipeline of stages, each
//! a function over data whose decisions are pure functions in
//! [`crate::plan`]:
//!
//! 1. **pull** ([`pull`]): the rooms that rang, each paged back to its
//!    cursor; a room that cannot be read, or still waits out its own
//!    backoff, is set aside — the others go on;
//! 2. **decide** ([`plan::decide`]): per room wake, advance or nothing; the
//!    non-waking advances are committed at once;
//! 3. **turn** ([`turn`]): under the turn lock, the preamble and the
//!    instructions ([`plan::compose`], capped), the say watermark moved to
//!    what the prompt prints once it reaches a running agent, the agent run;
//! 4. **settle** ([`settle`]): each woken room read again and judged
//!    ([`plan::settle`]): cursors committed only after a 0-exit turn and
//!    only past what is handled; a silent room offered again, a failed one
//!    backed off — each room on its own;
//! 5. **report** ([`report`]): every event of a message's life logged
//!    ([`plan::Event`]), usage reported, the failure note posted in the
//!    rooms whose second reply in a row failed, the obituary.

mod journal;
mod pull;
mod report;
mod settle;
mod turn;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Instant;

use hoop_api::error::Error as ApiError;
use hoop_api::rest::Client;
use hoop_api::say_seen::SaySeen;
use hoop_api::types::{ConversationId, MessageId, User};
use hoop_core::clock::now_unix;
use hoop_core::home::Home;
use hoop_core::mention::Me;

use crate::agent::Agent;
use crate::config::SentinelConfig;
use crate::constants::FAILURE_NOTICE;
use crate::journal::{How, Journal};
use crate::ledger::{PASSES_FILE, Passes};
use crate::lock;
use crate::plan::{
    self, CursorWhy, DecideInput, Decision, Event, Knowledge, RoomBook, Wake, is_multi_ai,
};
use crate::policy::{self, AfterTurn, Streak, TurnClass};
use crate::state::{Cursors, GaveUp, Rooms, StateError, commit_cursors};
use crate::tasks::lease::CurrentCard;

pub(crate) use report::{account_totals, report_usage, working_card};
pub(crate) use turn::preamble_for;

/// Which conversations a round looks at, and what rang for them (for the
/// journal's `seen`: the first cause is kept).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Targets {
    pub all: bool,
    pub conversations: BTreeSet<ConversationId>,
    /// What rang for each of `conversations`.
    pub how: BTreeMap<ConversationId, How>,
    /// What asked for every room (`all`).
    pub all_how: Option<How>,
}

impl Targets {
    pub fn is_empty(&self) -> bool {
        !self.all && self.conversations.is_empty()
    }
    pub fn merge(&mut self, other: Targets) {
        self.all |= other.all;
        self.conversations.extend(other.conversations);
        for (c, h) in other.how {
            self.how.entry(c).or_insert(h);
        }
        self.all_how = self.all_how.or(other.all_how);
    }
    /// Add one room, rung by `how`.
    pub fn ring(&mut self, c: ConversationId, how: How) {
        self.conversations.insert(c);
        self.how.entry(c).or_insert(how);
    }
    /// Ask for every room, by `how`.
    pub fn ring_all(&mut self, how: How) {
        self.all = true;
        self.all_how.get_or_insert(how);
    }
    /// What rang for `c` (a room of its own first, then the full pull).
    pub fn how_of(&self, c: ConversationId) -> How {
        self.how
            .get(&c)
            .copied()
            .or(self.all_how)
            .unwrap_or(How::Alarm)
    }
    fn wants(&self, c: ConversationId) -> bool {
        self.all || self.conversations.contains(&c)
    }
}

/// How a round ended, for the cycle.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum RoundOutcome {
    /// Nothing to answer (cursors may have advanced without waking).
    #[default]
    Quiet,
    /// The turn lock is held by someone else: retry later.
    Busy,
    /// A turn ran; the policy decided the rest.
    Turn { class: TurnClass, after: AfterTurn },
    /// The backend or the home's state could not be read: nothing changed.
    Error(String),
}

/// A round's outcome, and what waits for a time of its own.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RoundReport {
    pub outcome: RoundOutcome,
    /// Rooms to look at again at their own time: a pull that failed, a
    /// room still in its backoff, a failed or silent room.
    pub retry_at: BTreeMap<ConversationId, Instant>,
    /// Messages given up on in this round (for the status file).
    pub gave_up: Vec<GaveUp>,
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
    /// The home's journal (`hoop why`); [`Journal::off`] records nothing.
    pub journal: Journal,
}

#[derive(Debug, thiserror::Error)]
enum RoundError {
    #[error("backend: {0}")]
    Api(#[from] ApiError),
    #[error("{0}")]
    State(#[from] StateError),
}

impl RoundCtx {
    pub(crate) fn me(&self) -> Me<'_> {
        Me {
            id: self.me.id,
            username: &self.me.username,
            nickname: self.me.nickname.as_deref(),
        }
    }
}

/// What the decide stage leaves for the turn.
struct Decided {
    wakes: Vec<Wake>,
    agents: BTreeMap<ConversationId, BTreeSet<i64>>,
}

/// Run one round. `book` remembers each room's own backoff; `streak` the
/// account-wide one (a usage limit, a dead login).
pub async fn run<A: Agent>(
    ctx: &RoundCtx,
    agent: &tokio::sync::Mutex<A>,
    targets: &Targets,
    streak: &mut Streak,
    book: &mut RoomBook,
) -> RoundReport {
    let mut report = RoundReport::default();
    let rooms_path = ctx.home.dir().join(crate::constants::ROOMS_FILE);
    let mut memo = match Rooms::load(&rooms_path) {
        Ok(m) => m,
        Err(e) => {
            tracing::warn!(error = %e, "round could not be planned; nothing changed");
            report.outcome = RoundOutcome::Error(e.to_string());
            return report;
        }
    };
    // 1–2: pull and decide.
    let decided = match pull_and_decide(ctx, targets, book, &mut memo, &mut report).await {
        Ok(d) => d,
        Err(e) => {
            tracing::warn!(error = %e, "round could not be planned; nothing changed");
            report.outcome = RoundOutcome::Error(e.to_string());
            return report;
        }
    };
    save_memo(&memo, &rooms_path);
    if decided.wakes.is_empty() {
        return report;
    }
    // Step 4 of the spec: the turn lock, non-blocking.
    let turn_lock = match lock::turn(&ctx.home.turn_lock_path()) {
        Ok(l) => l,
        Err(e) if e.is_busy() => {
            tracing::info!(error = %e, "turn lock busy; round retried later");
            report.outcome = RoundOutcome::Busy;
            return report;
        }
        Err(e) => {
            report.outcome = RoundOutcome::Error(e.to_string());
            return report;
        }
    };
    // 3: the turn.
    let wakes = &decided.wakes;
    let done = turn::turn(ctx, agent, wakes, streak.is_rerun()).await;
    let mut events: Vec<Event> = vec![];
    let mut offered: BTreeMap<ConversationId, BTreeSet<MessageId>> = BTreeMap::new();
    let mut listed: BTreeMap<ConversationId, BTreeSet<MessageId>> = BTreeMap::new();
    if done.delivered {
        for r in &done.composed.rooms {
            listed.insert(r.room, r.listed.iter().copied().collect());
            events.push(Event::Shown {
                room: r.room,
                ids: r.listed.clone(),
                mark: r.mark,
            });
            let w = wakes.iter().find(|w| w.conversation_id == r.room);
            let work: BTreeSet<MessageId> = w
                .map(|w| w.to_answer.iter().map(|m| m.id).collect())
                .unwrap_or_default();
            offered.insert(
                r.room,
                r.listed
                    .iter()
                    .copied()
                    .filter(|id| work.contains(id))
                    .collect(),
            );
        }
    }
    // 4: settle — before anything slow, so a stop in between does not lose
    // the commit of a good turn.
    let mut class = done.result.class.clone();
    let mut notes = vec![];
    if matches!(
        class,
        TurnClass::Ok | TurnClass::Failed | TurnClass::Timeout
    ) {
        let facts = settle::TurnFacts {
            class: &class,
            sends_failed: &done.sends_failed,
            offered: &offered,
            agents: &decided.agents,
            turn: done.turn,
            listed: &listed,
            marks_at_prompt: &done.marks_at_prompt,
        };
        let s = settle::settle_rooms(ctx, wakes, facts, book, &mut memo).await;
        save_memo(&memo, &rooms_path);
        events.extend(s.events);
        notes = s.notes;
        report.gave_up = s.gave_up;
        report.retry_at.extend(s.retry_at);
        if s.any_failed && class == TurnClass::Ok {
            class = TurnClass::Failed;
        }
    }
    let after = policy::account_after_turn(&ctx.cfg.timings, streak, &done.result.class);
    let after = AfterTurn {
        post_failure_notice: !notes.is_empty(),
        ..after
    };
    // 5: report.
    for e in &events {
        report::log_event(e);
    }
    report::report_usage(ctx, done.card_id, done.before, &done.result).await;
    if !notes.is_empty() {
        report::post_to_rooms(ctx, &notes, FAILURE_NOTICE).await;
    }
    if let Some(cause) = &after.obituary_cause {
        let rooms: Vec<ConversationId> = wakes.iter().map(|w| w.conversation_id).collect();
        report::obituary(ctx, &rooms, cause).await;
    }
    drop(turn_lock);
    report.outcome = RoundOutcome::Turn { class, after };
    report
}

fn save_memo(memo: &Rooms, path: &std::path::Path) {
    if let Err(e) = memo.save(path) {
        tracing::warn!(error = %e, "could not write the rooms file");
    }
}

/// Stages 1–2: pull, decide, commit the non-waking advances.
async fn pull_and_decide(
    ctx: &RoundCtx,
    targets: &Targets,
    book: &mut RoomBook,
    memo: &mut Rooms,
    report: &mut RoundReport,
) -> Result<Decided, RoundError> {
    let cursors_path = ctx.home.cursors_path();
    let cursors = Cursors::load(&cursors_path)?;
    let pulled = pull::pull_rooms(ctx, targets, &cursors, memo, book, now_unix()).await?;
    report.retry_at.extend(pulled.waiting);
    let shown = SaySeen::load(&ctx.home.say_seen_path());
    let passes = Passes::load(&ctx.home.dir().join(PASSES_FILE));
    let mut wakes = vec![];
    let mut agents = BTreeMap::new();
    let mut advances: Vec<(ConversationId, MessageId)> = vec![];
    let mut events = vec![];
    // Journal lines: what was seen now, the cursor lines once committed.
    let t = crate::journal::now_ms();
    let mut lines = vec![];
    let mut cursor_lines = vec![];
    for r in pulled.rooms {
        let room = r.conv.id;
        let room_passes = passes.room(room);
        let offers = memo.offers(room);
        let multi_ai = is_multi_ai(&r.conv);
        let created: BTreeMap<MessageId, i64> = r
            .pulled
            .fresh
            .iter()
            .map(|m| (m.id, m.created_at))
            .collect();
        let sight = |id: MessageId| journal::Seen {
            room,
            id,
            created: created.get(&id).copied().unwrap_or(0),
            how: match r.paged_below {
                Some(below) if id < below => How::PageBack,
                _ => targets.how_of(room),
            },
            multi_ai,
            me: &ctx.me.username,
        };
        if r.cursor.is_none()
            && let Some(floor) = r.floor
        {
            for m in r.pulled.fresh.iter() {
                if m.created_at < floor && m.sender_id != ctx.me.id {
                    lines.extend(journal::before_floor(t, &sight(m.id)));
                }
            }
        }
        let seen_lines = |id: MessageId, role: &plan::Role| {
            journal::seen(t, &sight(id), role, passes.why(room, id))
        };
        let input = DecideInput {
            knowledge: Knowledge {
                me: ctx.me(),
                multi_ai,
                shown: shown.get(room),
                agents: &r.agents,
                passes: &room_passes,
            },
            conversation: &r.conv,
            cursor: r.cursor,
            floor: r.floor,
            offers: &offers,
            failures: book.reply_failures(room),
        };
        match plan::decide(input, r.pulled) {
            Decision::Nothing => {}
            Decision::Baseline { to } => {
                events.push(Event::CursorMoved {
                    room,
                    to,
                    why: CursorWhy::Baseline,
                });
                cursor_lines.push(journal::cursor(t, room, to, CursorWhy::Baseline));
                advances.push((room, to));
            }
            Decision::Advance { to, why, seen } => {
                for (id, role) in &seen {
                    lines.extend(seen_lines(*id, role));
                }
                events.extend(
                    seen.into_iter()
                        .map(|(id, role)| Event::Seen { room, id, role }),
                );
                events.push(Event::CursorMoved {
                    room,
                    to,
                    why: CursorWhy::Advance(why),
                });
                cursor_lines.push(journal::cursor(t, room, to, CursorWhy::Advance(why)));
                advances.push((room, to));
            }
            Decision::Wake(w) => {
                let mut both: Vec<(MessageId, plan::Role)> = w
                    .context
                    .iter()
                    .map(|(m, role)| (m.id, role.clone()))
                    .chain(w.to_answer.iter().map(|m| (m.id, plan::Role::Work)))
                    .collect();
                both.sort_by_key(|(id, _)| *id);
                for (id, role) in &both {
                    lines.extend(seen_lines(*id, role));
                }
                events.extend(w.context.iter().map(|(m, role)| Event::Seen {
                    room,
                    id: m.id,
                    role: role.clone(),
                }));
                events.extend(w.to_answer.iter().map(|m| Event::Seen {
                    room,
                    id: m.id,
                    role: plan::Role::Work,
                }));
                agents.insert(room, r.agents);
                wakes.push(w);
            }
        }
    }
    ctx.journal.record_all(lines);
    if !advances.is_empty() {
        let c = commit_cursors(&cursors_path, &advances)?;
        ctx.journal.record_all(cursor_lines);
        for (room, _) in &advances {
            if let Some(to) = c.get(*room) {
                memo.cursor_at(*room, to);
            }
        }
        if let Err(e) = Passes::prune(&ctx.home.dir().join(PASSES_FILE), &advances) {
            tracing::warn!(error = %e, "could not tidy the passes file");
        }
    }
    for e in &events {
        report::log_event(e);
    }
    Ok(Decided { wakes, agents })
}
