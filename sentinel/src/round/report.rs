//! Report, the round's last stage: each event of a message's life goes to
//! the log, the account's usage to the backend, and the failure note (per
//! room) or the obituary into the rooms. Also the usage functions a patrol
//! round shares.

use hoop_api::types::{CardId, ConversationId, SendMessage};
use hoop_core::clock::now_unix;

use super::RoundCtx;
use crate::agent::TurnResult;
use crate::constants::{OBITUARIES_FILE, OBITUARY};
use crate::plan::{CursorWhy, Event};
use crate::policy;
use crate::state::Obituaries;

/// One event, one log line (ids, rules and figures; never a body).
pub(crate) fn log_event(e: &Event) {
    match e {
        Event::Seen { room, id, role } => {
            tracing::debug!(
                conversation = room,
                message = id,
                role = role.word(),
                "seen"
            )
        }
        Event::Shown { room, ids, mark } => {
            tracing::info!(conversation = room, messages = ?ids, mark = ?mark, "👀 shown to the agent")
        }
        Event::Answered { room, id, by } => {
            tracing::info!(conversation = room, message = id, by, "✅ answered")
        }
        Event::Passed { room, id } => {
            tracing::info!(
                conversation = room,
                message = id,
                "🤐 passed on by the agent"
            )
        }
        Event::OfferedAgain { room, id, offer } => tracing::warn!(
            conversation = room,
            message = id,
            offer,
            max = crate::constants::MAX_OFFERS,
            "left with neither a reply nor a pass; offered again after this room's pause"
        ),
        Event::ReplyFailed { room, ids } => tracing::warn!(
            conversation = room,
            messages = ?ids,
            "the reply failed; offered again after this room's backoff, the other rooms go on"
        ),
        Event::GaveUp { room, id, offers } => tracing::warn!(
            conversation = room,
            message = id,
            offers,
            "offered this many times with neither a reply nor a pass; the cursor moves past it (see hoop status)"
        ),
        Event::CursorMoved { room, to, why } => match why {
            CursorWhy::Baseline => tracing::info!(
                conversation = room,
                to,
                "first sight: cursor baselined, backlog not answered"
            ),
            CursorWhy::Advance(why) => tracing::info!(
                conversation = room,
                to,
                ?why,
                "cursor advanced without waking"
            ),
            CursorWhy::Settled => {
                tracing::info!(conversation = room, to, "📌 cursor committed")
            }
        },
    }
}

/// The account's working top-level card, if any (the lease renewer's last
/// knowledge when the backend cannot say).
pub(crate) async fn working_card(ctx: &RoundCtx) -> Option<CardId> {
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
    card_id: Option<CardId>,
    before: Option<hoop_core::transcript::Usage>,
    result: &TurnResult,
) {
    crate::usage::report_usage(ctx, card_id, before, result).await
}

/// Post a failure report (its body begins with a failure mark, so the
/// sentinel knows it for its own) to each of `rooms`. The REST route has
/// no content gate; a rate limit is outwaited (bounded) by
/// `send_failure_report`.
pub(crate) async fn post_to_rooms(ctx: &RoundCtx, rooms: &[ConversationId], body: &str) {
    for room in rooms {
        let msg = SendMessage {
            body: body.to_string(),
            ..Default::default()
        };
        match ctx.client.send_failure_report(*room, &msg).await {
            Ok(m) => tracing::info!(conversation = room, message_id = m.id, body, "posted"),
            Err(e) => tracing::warn!(conversation = room, error = %e, "could not post"),
        }
    }
}

/// The obituary: at most once per hour per cause, remembered in the home.
pub(crate) async fn obituary(ctx: &RoundCtx, rooms: &[ConversationId], cause: &str) {
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
    post_to_rooms(ctx, rooms, OBITUARY).await;
}
