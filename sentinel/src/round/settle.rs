//! Settle, the round's fourth stage: after the turn, each woken room is
//! read again and judged by [`plan::settle`]; this shell carries the
//! verdicts out — cursors committed (only after a 0-exit turn), offer
//! counts kept in `rooms.json`, passes the cursor went past forgotten, and
//! each room's own backoff and failure note decided in [`RoomBook`].

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use hoop_api::say_seen::SaySeen;
use hoop_api::types::{ConversationId, MessageId};
use hoop_core::clock::now_unix;

use super::RoundCtx;
use super::pull::{pull, room_failed};
use crate::ledger::{PASSES_FILE, Passes};
use crate::plan::{self, Event, Knowledge, RoomBook, TurnEnd, Verdict, Wake};
use crate::policy::TurnClass;
use crate::state::{GaveUp, Rooms, commit_cursors};

/// What settling the woken rooms decided.
#[derive(Debug, Default)]
pub(super) struct SettleOut {
    pub events: Vec<Event>,
    /// Rooms whose second failed reply in a row calls for the failure note.
    pub notes: Vec<ConversationId>,
    pub gave_up: Vec<GaveUp>,
    /// Rooms offered again at a time of their own.
    pub retry_at: BTreeMap<ConversationId, Instant>,
    /// Some room's reply failed.
    pub any_failed: bool,
    /// Journal lines gathered while settling (recorded by settle itself).
    lines: Vec<crate::journal::Line>,
}

/// What the turn stage learnt that settling needs.
pub(super) struct TurnFacts<'a> {
    pub class: &'a TurnClass,
    /// Rooms into which a `hoop say` failed during the turn.
    pub sends_failed: &'a BTreeSet<ConversationId>,
    /// Per room, the work the prompt listed and delivered to the agent.
    pub offered: &'a BTreeMap<ConversationId, BTreeSet<MessageId>>,
    /// What the pull learnt of each room's agents.
    pub agents: &'a BTreeMap<ConversationId, BTreeSet<i64>>,
    /// The turn's number in the journal.
    pub turn: u64,
    /// Per room, every message the prompt listed (context and work).
    pub listed: &'a BTreeMap<ConversationId, BTreeSet<MessageId>>,
    /// Each room's say watermark once the prompt reached the agent.
    pub marks_at_prompt: &'a BTreeMap<ConversationId, MessageId>,
}

/// Settle every woken room after the turn.
pub(super) async fn settle_rooms(
    ctx: &RoundCtx,
    wakes: &[Wake],
    facts: TurnFacts<'_>,
    book: &mut RoomBook,
    memo: &mut Rooms,
) -> SettleOut {
    let TurnFacts {
        class,
        sends_failed,
        offered,
        agents,
        turn,
        listed,
        marks_at_prompt,
    } = facts;
    let mut out = SettleOut::default();
    let t = crate::journal::now_ms();
    let mut pass_why: BTreeMap<(ConversationId, MessageId), String> = BTreeMap::new();
    let exit_ok = *class == TurnClass::Ok;
    let shown = SaySeen::load(&ctx.home.say_seen_path());
    let passes_path = ctx.home.dir().join(PASSES_FILE);
    let passes = Passes::load(&passes_path);
    let me = ctx.me();
    let steps = ctx.cfg.timings.failure_backoff;
    let mut updates: Vec<(ConversationId, MessageId)> = vec![];
    let no_agents = BTreeSet::new();
    for w in wakes {
        let room = w.conversation_id;
        let pulled = match pull(&ctx.client, room, w.cursor, w.floor.unwrap_or(0)).await {
            Ok(p) => p,
            Err(e) => {
                room_failed(ctx, book, room, &e);
                tracing::warn!(
                    conversation = room,
                    error = %e,
                    "room could not be re-read after the turn; its cursor stays and it is offered again"
                );
                if let Some(at) = book.retry_at(room) {
                    out.retry_at.insert(room, at);
                }
                continue;
            }
        };
        // What `hoop say` (a refusal shows the unread) or `hoop read` showed
        // during the turn: the watermark moved past the prompt's.
        let after = shown.get(room);
        let at_prompt = marks_at_prompt.get(&room).copied();
        for m in &pulled.fresh {
            let by_say_or_read = m.sender_id != me.id
                && at_prompt.is_none_or(|b| m.id > b)
                && after.is_some_and(|a| m.id <= a)
                && !listed.get(&room).is_some_and(|l| l.contains(&m.id));
            if by_say_or_read {
                out.lines.push(crate::journal::Line::msg(
                    t,
                    room,
                    m.id,
                    crate::journal::Ev::Shown {
                        by: crate::journal::ShownBy::SayOrRead,
                        turn,
                    },
                ));
            }
        }
        let room_passes = passes.room(room);
        let k = Knowledge {
            me,
            multi_ai: w.multi_ai,
            shown: shown.get(room),
            agents: agents.get(&room).unwrap_or(&no_agents),
            passes: &room_passes,
        };
        let end = TurnEnd {
            exit_ok,
            send_failed: sends_failed.contains(&room),
        };
        let none = BTreeSet::new();
        let offered = offered.get(&room).unwrap_or(&none);
        let s = plan::settle(&k, w, &pulled, &memo.offers(room), offered, end);
        // What arrived during the turn and was answered or passed there
        // (shown by `hoop say` / `hoop read`) is not the turn's work, but
        // its fate is known now: the cursor may pass it at once.
        let fresh = plan::decide::in_range(w.floor, &pulled.fresh);
        for (m, role) in fresh.iter().zip(plan::classify(&k, &fresh)) {
            let ev = match role {
                plan::Role::Answered { by } => crate::journal::Ev::Answered {
                    by,
                    turn: Some(turn),
                },
                plan::Role::Passed => crate::journal::Ev::Passed {
                    reason: passes.why(room, m.id).unwrap_or("").to_string(),
                    turn: Some(turn),
                },
                _ => continue,
            };
            if !w.to_answer.iter().any(|x| x.id == m.id) {
                out.lines.push(crate::journal::Line::msg(t, room, m.id, ev));
            }
        }
        for e in &s.events {
            if let Event::Passed { id, .. } = e {
                pass_why.insert((room, *id), passes.why(room, *id).unwrap_or("").to_string());
                tracing::info!(
                    conversation = room,
                    message = id,
                    why = passes.why(room, *id).unwrap_or(""),
                    "the agent's reason for passing"
                );
            }
        }
        out.events.extend(s.events);
        memo.set_offers(room, s.offers);
        let now = Instant::now();
        match &s.verdict {
            Verdict::Done => book.done(room),
            Verdict::Silent { .. } => {
                let offer = memo.offers(room).values().copied().max().unwrap_or(1);
                book.silent(room, offer, &steps, now);
                if let Some(at) = book.retry_at(room) {
                    out.retry_at.insert(room, at);
                }
            }
            Verdict::Failed { .. } => {
                out.any_failed = true;
                let f = book.reply_failed(room, &steps, now);
                tracing::info!(
                    conversation = room,
                    failures = f.nth,
                    secs = f.wait.as_secs_f64(),
                    "this room waits out its own backoff; the other rooms go on"
                );
                if f.post_note {
                    out.notes.push(room);
                }
                if let Some(at) = book.retry_at(room) {
                    out.retry_at.insert(room, at);
                }
            }
        }
        let at = now_unix();
        out.gave_up.extend(s.gave_up.iter().map(|id| GaveUp {
            conversation_id: room,
            message_id: *id,
            offers: crate::constants::MAX_OFFERS,
            at,
        }));
        if let Some(to) = s.to {
            updates.push((room, to));
        }
    }
    // The journal's lines go to its writer before the cursors are
    // committed: a daemon killed in between finds the messages again above
    // the cursor (and journals them, once, as found answered or passed).
    let now = Instant::now();
    let retry_in_ms: BTreeMap<ConversationId, u64> = out
        .retry_at
        .iter()
        .map(|(r, at)| (*r, at.saturating_duration_since(now).as_millis() as u64))
        .collect();
    let facts = super::journal::SettleFacts {
        turn,
        retry_in_ms: &retry_in_ms,
        pass_why: &pass_why,
    };
    let (cursor_lines, lines): (Vec<_>, Vec<_>) = super::journal::settled(t, &out.events, &facts)
        .into_iter()
        .partition(|l| matches!(l.ev, crate::journal::Ev::Cursor { .. }));
    ctx.journal.record_all(std::mem::take(&mut out.lines));
    ctx.journal.record_all(lines);
    if !updates.is_empty() {
        match commit_cursors(&ctx.home.cursors_path(), &updates) {
            Ok(c) => {
                ctx.journal.record_all(cursor_lines);
                for (room, _) in &updates {
                    if let Some(to) = c.get(*room) {
                        memo.cursor_at(*room, to);
                    }
                }
                if let Err(e) = Passes::prune(&passes_path, &updates) {
                    tracing::warn!(error = %e, "could not tidy the passes file");
                }
            }
            // The messages will be offered again: a second answer is avoided
            // by the "own reply newest" rule, never by losing them.
            Err(e) => {
                tracing::error!(error = %e, "could not commit cursors");
                out.events
                    .retain(|e| !matches!(e, Event::CursorMoved { .. }));
            }
        }
    }
    out
}
